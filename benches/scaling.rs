//! Thread scaling: 1, 2, 4, 8, 16 threads (any count up to 64 and beyond) on ONE shared
//! limiter, total million calls per second, for the allowed path (every call granted), the
//! busy path (every call granted while the state runs ahead of the clock) and the denied path
//! (limiter exhausted), every row (hotlimit's limiters, peers, floors, and issue 24's
//! contention candidates from `limiters/variants.rs`) in the same process, interleaved run by
//! run so that background noise falls on all rows alike.
//!
//! ```text
//! cargo bench -p hotlimit-benches --bench scaling -- [--ms 200] [--reps 5] [--threads 1,2,4,8,16,64]
//!                                      [--path allowed|busy|denied] [--only NAME,NAME]
//!                                      [--svg target/scaling.svg] [--variants no]
//!                                      [--machine LABEL] [--data FILE]
//! cargo bench -p hotlimit-benches --bench scaling -- --render A.tsv,B.tsv --svg docs/scaling.svg
//! ```
//!
//! `--data` (default: the SVG's path with `.tsv`) keeps the plotted medians with the machine's
//! label (default "N cores"); `--render` draws the data files of several runs (a 2-core run
//! and a 16-core one from `benches/device.sh`) into one picture, one row of panels each,
//! without running anything.
//!
//! After each table: the audit of the allowed path's denials for the audited rows (how stale
//! the denied calls' `now` was), and the load average when the path started and ended.
//!
//! It also draws the medians of hotlimit's rows and the peers' (not the floors) as an SVG,
//! one panel per path (`--svg docs/scaling.svg` updates the one BENCHMARKS.md shows).
//!
//! Each cell is the median over `--reps` runs of `--ms` each, with the range, and the ratio of
//! the medians to `governor` at the same thread count. On a machine with fewer cores than
//! threads the runs are oversubscribed: threads are preempted while they hold a lock or sit in
//! the middle of a CAS loop, which is where lock-freedom shows.

#[path = "cli.rs"]
mod cli;
#[path = "limiters/rows.rs"]
mod rows;
#[path = "scaling/svg.rs"]
mod svg;
#[path = "limiters/threads.rs"]
mod threads;
#[path = "limiters/variants.rs"]
mod variants;

use std::time::Duration;

use rows::{rows, Path, Row, BASELINE};
use threads::{run_for, Sample};

struct Args {
    ms: u64,
    reps: usize,
    threads: Vec<usize>,
    paths: Vec<Path>,
    only: Vec<String>,
    svg: String,
    variants: bool,
    machine: Option<String>,
    data: Option<String>,
    render: Vec<String>,
}

fn usage(msg: &str) -> ! {
    eprintln!("scaling: {msg}\nusage: scaling [--ms N] [--reps N] [--threads 1,2,4] [--path allowed|busy|denied] [--only NAME,NAME] [--svg FILE] [--variants no] [--machine LABEL] [--data FILE] [--render A.tsv,B.tsv]");
    std::process::exit(2)
}

fn parse() -> Args {
    let mut a = Args {
        ms: 200,
        reps: 5,
        threads: vec![1, 2, 4, 8, 16],
        paths: Path::ALL.to_vec(),
        only: Vec::new(),
        svg: "target/scaling.svg".to_owned(),
        variants: true,
        machine: None,
        data: None,
        render: Vec::new(),
    };
    let mut it = cli::args().into_iter();
    while let Some(flag) = it.next() {
        let val = it
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        let num = |v: &str| {
            v.parse::<u64>()
                .unwrap_or_else(|_| usage(&format!("{v}: not a number")))
        };
        match flag.as_str() {
            "--ms" => a.ms = num(&val),
            "--reps" => a.reps = num(&val).max(1) as usize,
            "--threads" => a.threads = val.split(',').map(|t| num(t).max(1) as usize).collect(),
            "--path" => {
                a.paths = match val.as_str() {
                    "allowed" => vec![Path::Allowed],
                    "busy" => vec![Path::Busy],
                    "denied" => vec![Path::Denied],
                    _ => usage("--path is allowed, busy or denied"),
                }
            }
            "--only" => a.only = val.split(',').map(str::to_owned).collect(),
            "--svg" => a.svg = val,
            "--variants" => a.variants = val != "no",
            "--machine" => a.machine = Some(val),
            "--data" => a.data = Some(val),
            "--render" => a.render = val.split(',').map(str::to_owned).collect(),
            _ => usage(&format!("unknown flag {flag}")),
        }
    }
    a
}

fn median_min_max(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

/// The 1, 5 and 15 minute load averages, as `/proc/loadavg` gives them.
fn load() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `--render`: the panels of every data file, drawn into `--svg`.
fn render(args: &Args) {
    let mut panels = Vec::new();
    for file in &args.render {
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| usage(&format!("cannot read {file}: {e}")));
        panels.extend(svg::from_tsv(&text).unwrap_or_else(|e| usage(&format!("{file}: {e}"))));
    }
    let title = "One shared limiter: total Mops/s by threads (median of each run's reps)";
    match std::fs::write(&args.svg, svg::render(title, &panels)) {
        Ok(()) => println!("# plot: {}", args.svg),
        Err(e) => usage(&format!("cannot write {}: {e}", args.svg)),
    }
}

fn main() {
    let args = parse();
    if !args.render.is_empty() {
        return render(&args);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let machine = args
        .machine
        .clone()
        .unwrap_or_else(|| format!("{cores} cores"));
    println!("# load average at start: {}", load());
    println!(
        "# scaling: {} ms x {} reps per cell, {cores} cores available; total Mops/s on ONE shared limiter",
        args.ms, args.reps
    );
    if let Some(&t) = args.threads.iter().find(|&&t| t > cores) {
        println!("# from {t} threads on, this machine is oversubscribed (threads > {cores} cores)");
    }
    let mut panels = Vec::new();
    for &path in &args.paths {
        let load_before = load();
        let wanted = |r: &Row| {
            r.name == BASELINE
                || args.only.is_empty()
                || args.only.iter().any(|o| r.name.contains(o.as_str()))
        };
        let mut rows: Vec<Row> = rows(path).into_iter().filter(wanted).collect();
        let mut audits = Vec::new();
        if args.variants {
            for (row, audit) in variants::rows(path).into_iter() {
                if wanted(&row) {
                    audits.push((row.name, audit));
                    rows.push(row);
                }
            }
        }
        // samples[row][thread column] = one Mops figure per rep
        let mut samples = vec![vec![Vec::new(); args.threads.len()]; rows.len()];
        let mut wrong_path = vec![false; rows.len()];
        // audited[i][thread column] = that audited row's denials over its runs, and its calls
        let mut audited =
            vec![vec![(variants::AuditSum::default(), 0u64); args.threads.len()]; audits.len()];
        for _ in 0..args.reps {
            for (ti, &t) in args.threads.iter().enumerate() {
                for (ri, row) in rows.iter().enumerate() {
                    let s: Sample = run_for(&*row.limiter, t, Duration::from_millis(args.ms));
                    // A thread preempted between its clock read and its update comes back
                    // with a stale `now` and may be denied on the allowed path: a handful per
                    // run on an oversubscribed machine is expected, more is a wrong setup.
                    let wrong = match path {
                        Path::Allowed | Path::Busy => (s.calls - s.granted) * 1000 > s.calls,
                        Path::Denied => s.granted != 0,
                    };
                    if wrong && !matches!(row.kind, rows::Kind::Floor) {
                        wrong_path[ri] = true;
                    }
                    samples[ri][ti].push(s.mops());
                    if let Some(ai) = audits.iter().position(|(name, _)| *name == row.name) {
                        audited[ai][ti].0.add(audits[ai].1.take());
                        audited[ai][ti].1 += s.calls;
                    }
                }
            }
        }
        let base = rows.iter().position(|r| r.name == BASELINE).unwrap();
        let medians: Vec<Vec<(f64, f64, f64)>> = samples
            .iter_mut()
            .map(|cols| cols.iter_mut().map(|v| median_min_max(v)).collect())
            .collect();
        println!("\n## {} path ({:?})\n", path.name(), path.setup());
        print!("| row |");
        for t in &args.threads {
            print!(" {t} thr{} |", if *t > cores { " (over)" } else { "" });
        }
        println!();
        print!("|---|");
        for _ in &args.threads {
            print!("---|");
        }
        println!();
        for (ri, row) in rows.iter().enumerate() {
            print!(
                "| {}{} |",
                row.name,
                if wrong_path[ri] { " (see note)" } else { "" }
            );
            for (&(med, lo, hi), &(base_med, _, _)) in medians[ri].iter().zip(&medians[base]) {
                let ratio = med / base_med;
                print!(" {med:.1} [{lo:.1}–{hi:.1}] ×{ratio:.2} |");
            }
            println!();
        }
        panels.push(svg::Panel {
            machine: machine.clone(),
            path: path.name().to_owned(),
            threads: args.threads.clone(),
            lines: rows
                .iter()
                .zip(&medians)
                .filter(|(r, _)| !matches!(r.kind, rows::Kind::Floor | rows::Kind::Variant))
                .map(|(r, m)| {
                    (
                        r.name.to_owned(),
                        r.kind == rows::Kind::Ours,
                        m.iter().map(|c| c.0).collect(),
                    )
                })
                .collect(),
        });
        if wrong_path.iter().any(|&w| w) {
            println!(
                "\n(see note): in some run this row denied more than 0.1% of calls on the allowed \
                 or busy path (or granted on the denied path). Expected for a coarse clock whose \
                 upkeep thread is starved on an oversubscribed machine: its time stands still, so \
                 the limiter really is at its rate in that clock's time. For the precise clock, \
                 the audit below says how stale the denied calls' `now` was."
            );
        }
        if path != Path::Denied {
            println!(
                "\nAudit of this path's denials, all runs of a cell together: denied of calls (share); \
                 stale = share of them a clock reading taken right after would have granted; the \
                 oldest `now`; lost CASes before a denial, mean/max, and the denials after 8 or more \
                 (starved in the loop rather than preempted before it; loops only):\n"
            );
            for (ai, (name, _)) in audits.iter().enumerate() {
                print!("- {name}:");
                for (ti, t) in args.threads.iter().enumerate() {
                    let (sum, calls) = audited[ai][ti];
                    print!(" {t} thr: {};", sum.cell(calls));
                }
                println!();
            }
        }
        println!(
            "\n# load average: {load_before} when this path started, {} when it ended",
            load()
        );
    }
    let title = format!(
        "One shared limiter: total Mops/s by threads ({machine}; median of {} runs of {} ms)",
        args.reps, args.ms
    );
    match std::fs::write(&args.svg, svg::render(&title, &panels)) {
        Ok(()) => println!("\n# plot: {}", args.svg),
        Err(e) => eprintln!("scaling: cannot write {}: {e}", args.svg),
    }
    let data = args.data.clone().unwrap_or_else(|| {
        std::path::Path::new(&args.svg)
            .with_extension("tsv")
            .to_string_lossy()
            .into_owned()
    });
    match std::fs::write(&data, svg::to_tsv(&panels)) {
        Ok(()) => println!("# data: {data}"),
        Err(e) => eprintln!("scaling: cannot write {data}: {e}"),
    }
}
