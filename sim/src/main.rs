//! hotlimit-sim: replays traffic through every hotlimit limiter on a `ManualClock`, beside the
//! exact sliding log as the reference, and reports what each granted, wrongly denied and
//! over-admitted, as a table and as SVG pictures.
//!
//! `cargo run --release -p hotlimit-sim -- --help` lists the scenarios and options;
//! `cargo run --release -p hotlimit-sim -- docs` regenerates `docs/ACCURACY.md` and the
//! committed pictures.

mod cli;
mod docs;
mod error;
mod leased;
mod limiters;
mod plot;
mod rng;
mod run;
mod shares;
mod trace;
mod units;
mod window;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use hotlimit::Rate;
use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::{Options, Scenario};
use crate::error::SimError;
use crate::limiters::{lineup, Spec};
use crate::run::Run;
use crate::trace::Trace;
use crate::units::{duration_text, seconds, SECOND};

fn main() -> ExitCode {
    match cli::parse(std::env::args().skip(1)).and_then(|o| execute(&o)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            if matches!(e, SimError::Usage(_)) {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// Runs what the command line asked for.
fn execute(o: &Options) -> Result<(), SimError> {
    match &o.scenario {
        Scenario::Help => {
            print!("{}", cli::HELP);
            Ok(())
        }
        Scenario::Docs => docs::generate(o),
        Scenario::Shares => {
            print!("{}", shares::table());
            Ok(())
        }
        _ => {
            let out = o.out.clone().unwrap_or_else(|| PathBuf::from("target/sim"));
            for trace in traces(o)? {
                let keys = pool_keys(&trace, o);
                if trace.has_costs() {
                    eprintln!("note: {}: key pools left out (requests cost more than one permit; a pool hands out one key per call)", trace.slug);
                } else if !trace.rate.limit().is_multiple_of(keys) {
                    eprintln!(
                        "note: {}: key pools left out (--keys {keys} does not divide the limit {})",
                        trace.slug,
                        trace.rate.limit()
                    );
                }
                let run = replay(&trace, &specs_for(&trace, o), o.samples, o.quiet)?;
                println!(
                    "## {}: limit {} per {}\n",
                    run.trace_name,
                    run.limit,
                    duration_text(run.period)
                );
                println!("{}", summary_table(&run));
                if o.plots {
                    let n = draw_all(&run, &out)?;
                    println!("{n} pictures in {}\n", out.join(&run.trace_slug).display());
                }
            }
            Ok(())
        }
    }
}

/// The rate of the generated traces: `--limit` per `--period` (default 100 per second).
fn rate(o: &Options) -> Result<Rate, SimError> {
    let limit = o.limit.unwrap_or(100);
    let period = o.period.unwrap_or(SECOND);
    Rate::new(limit, Duration::from_nanos(period)).map_err(|source| SimError::Config {
        limiter: "--limit / --period".into(),
        source,
    })
}

/// The most requests a generated trace may hold (16 bytes each, plus the audit's window).
const MAX_REQUESTS: f64 = 10_000_000.0;

/// Refuses a trace of about `estimate` requests if that is above [`MAX_REQUESTS`], before
/// any memory is spent on it.
fn check_size(estimate: f64, scenario: &str) -> Result<(), SimError> {
    if estimate > MAX_REQUESTS {
        return Err(SimError::Usage(format!(
            "{scenario}: these options make about {estimate:.0} requests, at most {MAX_REQUESTS:.0} \
             are simulated (shorten --duration, or lower --load, --limit or --burst)"
        )));
    }
    Ok(())
}

/// The traces of the scenario on the command line.
fn traces(o: &Options) -> Result<Vec<Trace>, SimError> {
    let duration = o
        .duration
        .unwrap_or_else(|| cli::default_duration(&o.scenario));
    let r = rate(o)?;
    let period = r.period_nanos();
    let periods = duration as f64 / period as f64;
    let per_period = r.limit() as f64;
    let load = o.load.unwrap_or(4.0);
    let (on, off) = (o.on.unwrap_or(period / 2), o.off.unwrap_or(period / 2 * 3));
    let pool_period = o.period.unwrap_or(600 * SECOND);
    let pool_duration = match o.scenario {
        Scenario::All => o.duration.unwrap_or(3_600 * SECOND),
        _ => duration,
    };
    // The busiest trace of each kind: Poisson and steady at the load (4 × unless given), the
    // edge's two bursts per two periods, the key pool's bursts and two a minute.
    let (loaded, edgy, pooled) = match o.scenario {
        Scenario::Steady | Scenario::Poisson | Scenario::OnOff => (true, false, false),
        Scenario::Edge => (false, true, false),
        Scenario::KeyPool => (false, false, true),
        Scenario::All => (true, true, true),
        Scenario::File(_) | Scenario::Help | Scenario::Docs | Scenario::Shares => {
            (false, false, false)
        }
    };
    if loaded {
        check_size(per_period * load * periods * 1.1 + 10.0, "the load")?;
    }
    if edgy {
        check_size(per_period * (periods + 2.0), "edge")?;
    }
    if pooled {
        let bursts = pool_duration as f64 / pool_period as f64 + 1.0;
        let minutes = pool_duration as f64 / 60e9 + 1.0;
        check_size(o.burst as f64 * bursts + 2.0 * minutes, "keypool")?;
    }
    let on_off = || trace::on_off(r, on, off, load, duration, o.seed);
    let key_pool = || {
        trace::key_pool(
            o.keys.unwrap_or(500),
            pool_period,
            o.burst,
            pool_duration,
            o.seed,
        )
    };
    let poisson = || -> Vec<Trace> {
        let loads = o.load.map_or_else(|| vec![0.5, 1.0, 2.0, 4.0], |l| vec![l]);
        loads
            .into_iter()
            .map(|load| trace::poisson(r, load, duration, o.seed))
            .collect()
    };
    Ok(match &o.scenario {
        Scenario::Steady => vec![trace::steady(r, o.load.unwrap_or(1.0), duration)],
        Scenario::Poisson => poisson(),
        Scenario::OnOff => vec![on_off()],
        Scenario::Edge => vec![trace::edge(r, o.buckets, duration)],
        Scenario::KeyPool => vec![key_pool()?],
        Scenario::File(path) => vec![trace::from_file(path, r)?],
        Scenario::All => {
            let mut all = vec![trace::steady(r, o.load.unwrap_or(1.0), duration)];
            all.extend(poisson());
            all.push(on_off());
            all.push(trace::edge(r, o.buckets, duration));
            all.push(key_pool()?);
            all
        }
        Scenario::Help | Scenario::Docs | Scenario::Shares => Vec::new(),
    })
}

/// The key count of the key pools on `trace`: the trace's own (the key-pool worst case), else
/// `--keys`, else 10.
fn pool_keys(trace: &Trace, o: &Options) -> u64 {
    trace.pool_keys.or(o.keys).unwrap_or(10)
}

/// The lineup for `trace`, narrowed by `--only`.
fn specs_for(trace: &Trace, o: &Options) -> Vec<Spec> {
    let keys = pool_keys(trace, o);
    let only = o.only.as_deref().map(str::to_lowercase);
    lineup(trace.rate.limit(), keys)
        .into_iter()
        .filter(|s| {
            only.as_deref()
                .is_none_or(|w| s.label().to_lowercase().contains(w) || s.slug().contains(w))
        })
        .collect()
}

/// Replays `trace` with a progress bar on stderr (drawn only on a terminal).
pub(crate) fn replay(
    trace: &Trace,
    specs: &[Spec],
    samples: usize,
    quiet: bool,
) -> Result<Run, SimError> {
    let work = trace.requests.len() as u64 * (specs.len() as u64 + 1);
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(work)
    };
    if let Ok(style) = ProgressStyle::with_template("{msg:30} [{bar:40}] {percent:>3}% {eta}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(trace.slug.clone());
    let run = run::run(trace, specs, samples, &|done| bar.inc(done));
    bar.finish_and_clear();
    run
}

/// The per-limiter table of a run, in Markdown.
pub(crate) fn summary_table(run: &Run) -> String {
    let mut s = String::from(
        "| limiter | granted | utilisation | false denials | fullest window | longest false-denial stretch |\n\
         |---|---:|---:|---:|---:|---:|\n",
    );
    for o in std::iter::once(&run.exact).chain(&run.limiters) {
        let allowed = o.spec.map_or(0, |spec| spec.allowed_over(run.limit));
        let broken = if o.over(run.limit) > allowed {
            " (above its guarantee!)"
        } else {
            ""
        };
        s += &format!(
            "| {} | {} | {:.1} % | {} ({:.2} %) | {} / {}{broken} | {:.2} s |\n",
            o.label,
            o.granted,
            o.utilisation(&run.exact),
            o.false_denials,
            o.false_share(),
            o.worst,
            run.limit,
            seconds(o.longest_false),
        );
    }
    s
}

/// Draws every limiter of `run` (and the exact log) into `out/<trace>/`; returns how many.
fn draw_all(run: &Run, out: &Path) -> Result<usize, SimError> {
    let dir = out.join(&run.trace_slug);
    std::fs::create_dir_all(&dir).map_err(|e| SimError::io(&dir, e))?;
    let mut n = 0;
    for o in std::iter::once(&run.exact).chain(&run.limiters) {
        let path = dir.join(format!("{}.svg", o.slug));
        plot::write(&path, plot::limiter_svg(run, o))?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(args: &[&str]) -> Options {
        cli::parse(args.iter().map(|s| s.to_string())).unwrap()
    }

    /// A fresh folder under the target directory's temp space, removed first if left over.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("hotlimit-sim-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// Every text node of an SVG file, which must parse as XML.
    fn svg_texts(path: &Path) -> Vec<String> {
        let text = std::fs::read_to_string(path).unwrap();
        let doc = roxmltree::Document::parse(&text)
            .unwrap_or_else(|e| panic!("{} is not XML: {e}", path.display()));
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        doc.descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text().map(|t| t.trim().to_string()))
            .collect()
    }

    #[test]
    fn every_scenario_runs_briefly_and_draws_valid_svg_with_its_series() {
        let out = scratch("smoke");
        let file = out.join("trace.txt");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(&file, "0 1\n0.1 3\n0.2\n0.95 2\n1.5 1\n").unwrap();
        let o = out.to_str().unwrap();
        let f = file.to_str().unwrap();
        let runs: [&[&str]; 2] = [
            &[
                "all",
                "--duration",
                "3",
                "--samples",
                "50",
                "--quiet",
                "--out",
                o,
            ],
            &[
                "file",
                f,
                "--limit",
                "4",
                "--samples",
                "20",
                "--quiet",
                "--out",
                o,
            ],
        ];
        for args in runs {
            let opts = options(args);
            execute(&opts).unwrap();
        }
        let slugs = [
            "steady-1x",
            "poisson-0_5x",
            "poisson-1x",
            "poisson-2x",
            "poisson-4x",
            "onoff-0_5s-1_5s",
            "edge-10",
            "keypool",
            "file-trace",
        ];
        for slug in slugs {
            let dir = out.join(slug);
            let svgs: Vec<PathBuf> = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .map(|e| e.unwrap().path())
                .collect();
            // The exact log and the whole lineup. The file trace's limit of 4 leaves one
            // count threshold (k = 1) and no key pool (its requests cost up to 3 permits).
            let expected = if slug == "file-trace" { 13 } else { 19 };
            assert_eq!(svgs.len(), expected, "{slug}");
            for path in svgs {
                let texts = svg_texts(&path);
                let series = [
                    plot::USED,
                    plot::FREED,
                    plot::EXACT_USED,
                    plot::EXACT_FREE,
                    plot::REPORTED,
                ];
                for series in series {
                    assert!(
                        texts.iter().any(|t| t == series),
                        "{}: no {series:?}",
                        path.display()
                    );
                }
            }
        }
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn no_hard_cap_over_admits_on_any_scenario() {
        let o = options(&["all", "--duration", "5", "--quiet", "--no-plots"]);
        for trace in traces(&o).unwrap() {
            let run = replay(&trace, &specs_for(&trace, &o), 2, true).unwrap();
            assert_eq!(run.exact.over(run.limit), 0);
            for l in &run.limiters {
                let spec = l.spec.unwrap();
                assert!(
                    l.over(run.limit) <= spec.allowed_over(run.limit),
                    "{} on {}: window of {}",
                    l.label,
                    run.trace_name,
                    l.worst
                );
                if matches!(spec, Spec::SlidingLog | Spec::PoolLog { .. }) {
                    assert_eq!(l.false_denials, 0, "{} on {}", l.label, run.trace_name);
                    assert_eq!(l.granted, run.exact.granted);
                }
            }
        }
    }

    #[test]
    fn a_trace_too_large_to_simulate_is_refused_before_it_is_made() {
        let o = options(&["poisson", "--duration", "1000000000", "--quiet"]);
        let err = traces(&o).unwrap_err().to_string();
        assert!(err.contains("at most 10000000"), "{err}");
        let o = options(&["keypool", "--burst", "1000000000", "--quiet"]);
        assert!(traces(&o).unwrap_err().to_string().starts_with("keypool"));
        // A day of the key pool is small, whatever the load of the other scenarios would be.
        let o = options(&["keypool", "--duration", "86400", "--quiet"]);
        assert_eq!(traces(&o).unwrap().len(), 1);
    }

    #[test]
    fn a_bad_trace_file_is_an_error_naming_the_line() {
        let out = scratch("bad");
        std::fs::create_dir_all(&out).unwrap();
        let file = out.join("bad.txt");
        std::fs::write(&file, "0\n1 x\n").unwrap();
        let o = options(&["file", file.to_str().unwrap(), "--quiet", "--no-plots"]);
        let err = execute(&o).unwrap_err().to_string();
        assert!(
            err.ends_with("bad.txt:2: cost \"x\" is not a whole number from 1 to 4294967295"),
            "{err}"
        );
        let missing = options(&["file", out.join("none.txt").to_str().unwrap()]);
        assert!(execute(&missing)
            .unwrap_err()
            .to_string()
            .contains("none.txt"));
        std::fs::remove_dir_all(&out).unwrap();
    }
}
