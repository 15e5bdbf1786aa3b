//! Thread scaling: 1, 2, 4, 8, 16 threads on ONE shared limiter, total million calls per
//! second, for the allowed path (every call granted), the busy path (every call granted while
//! the state runs ahead of the clock) and the denied path (limiter exhausted),
//! every row (hotlimit's limiters, peers, floors) in the same process, interleaved run by run
//! so that background noise falls on all rows alike.
//!
//! ```text
//! cargo bench --bench scaling -- [--ms 200] [--reps 5] [--threads 1,2,4,8,16]
//!                                      [--path allowed|busy|denied] [--only NAME,NAME]
//!                                      [--svg target/scaling.svg]
//! ```
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
}

fn usage(msg: &str) -> ! {
    eprintln!("scaling: {msg}\nusage: scaling [--ms N] [--reps N] [--threads 1,2,4] [--path allowed|busy|denied] [--only NAME,NAME] [--svg FILE]");
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
            _ => usage(&format!("unknown flag {flag}")),
        }
    }
    a
}

fn median_min_max(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn main() {
    let args = parse();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "# load average at start: {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "# scaling: {} ms x {} reps per cell, {cores} cores available; total Mops/s on ONE shared limiter",
        args.ms, args.reps
    );
    if let Some(&t) = args.threads.iter().find(|&&t| t > cores) {
        println!("# from {t} threads on, this machine is oversubscribed (threads > {cores} cores)");
    }
    let mut panels = Vec::new();
    for &path in &args.paths {
        let rows: Vec<Row> = rows(path)
            .into_iter()
            .filter(|r| {
                r.name == BASELINE
                    || args.only.is_empty()
                    || args.only.iter().any(|o| r.name.contains(o.as_str()))
            })
            .collect();
        // samples[row][thread column] = one Mops figure per rep
        let mut samples = vec![vec![Vec::new(); args.threads.len()]; rows.len()];
        let mut wrong_path = vec![false; rows.len()];
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
            path: path.name(),
            threads: args.threads.clone(),
            lines: rows
                .iter()
                .zip(&medians)
                .filter(|(r, _)| r.kind != rows::Kind::Floor)
                .map(|(r, m)| {
                    (
                        r.name,
                        r.kind == rows::Kind::Ours,
                        m.iter().map(|c| c.0).collect(),
                    )
                })
                .collect(),
        });
        if wrong_path.iter().any(|&w| w) {
            println!(
                "\n(see note): in some run this row denied more than 0.1% of calls on the allowed \
                 path (or granted on the denied path). Expected for a coarse clock whose upkeep \
                 thread is starved on an oversubscribed machine: its time stands still, so the \
                 limiter really is at its rate in that clock's time."
            );
        }
    }
    let title = format!(
        "One shared limiter: total Mops/s by threads ({cores} cores; median of {} runs of {} ms)",
        args.reps, args.ms
    );
    match std::fs::write(&args.svg, svg::render(&title, &panels)) {
        Ok(()) => println!("\n# plot: {}", args.svg),
        Err(e) => eprintln!("scaling: cannot write {}: {e}", args.svg),
    }
}
