//! The command line: `hotlimit-sim <scenario> [options]`, parsed by hand (a dozen options do
//! not need a parser crate).

use std::path::PathBuf;

use crate::error::SimError;
use crate::units::{parse_seconds, SECOND};

pub(crate) const HELP: &str = "\
hotlimit-sim: replays traffic through every hotlimit limiter beside the exact sliding log,
prints what each granted and wrongly denied, and draws it as SVG.

USAGE:
    cargo run --release -p hotlimit-sim -- <SCENARIO> [OPTIONS]

SCENARIOS:
    steady       requests evenly spaced at --load x the rate (default load 1)
    poisson      Poisson arrivals at --load x the rate (default: 0.5, 1, 2 and 4, one run each)
    onoff        on/off bursts: --on seconds at --load x the rate (default 0.5 period at 4x),
                 then --off seconds idle (default 1.5 periods)
    edge         adversarial: `limit` requests in the last nanosecond of a bucket, `limit` more
                 when an approximate window of --buckets buckets (default 10) drops that bucket
    keypool      the key-pool worst case: --keys keys (default 500), each once per --period
                 (default 600 s); --burst (default 451) at once every period, then 1-2 a minute
    file <PATH>  replays a trace file: one request per line, `<seconds> [<cost>]` (seconds since
                 the start, up to 9 decimals; cost a whole number >= 1, default 1); blank lines
                 and lines starting with # are skipped; times must not decrease
    all          steady, poisson (all four loads), onoff, edge and keypool
    shares       LeasedGcra's model under equal demand: 4 processes x 2 threads on one key far
                 over its rate; utilisation and each process's share, by the crate's rules,
                 issue 27's first round and a horizon, with and without replies read late (no
                 other option applies)
    docs         the committed pictures and the table docs/ACCURACY.md, into --out (default:
                 the workspace's docs/); its figures depend on --seed only

OPTIONS:
    --seed <N>          seed of the random traces [default: 1]
    --out <DIR>         folder for the SVG files (one subfolder per trace) [default: target/sim]
    --limit <N>         permits per period [default: 100; keypool: --keys]
    --period <SECS>     the period [default: 1; keypool: 600]
    --duration <SECS>   trace length [default: 60; keypool: 3600]
    --load <X>          demand as a multiple of the rate (steady, poisson, onoff)
    --on <SECS>         on/off: length of a burst
    --off <SECS>        on/off: silence between bursts
    --buckets <N>       edge: the bucket count the adversary targets [default: 10]
    --keys <N>          keys of the KeyPool limiters (must divide the limit) [default: 10;
                        keypool: 500]
    --burst <N>         keypool: requests at once each period [default: 451]
    --only <TEXT>       only the limiters whose name contains TEXT (e.g. approximate, k = 5)
    --samples <N>       points per plotted series [default: 600]
    --no-plots          print the table only
    --quiet             no progress bar
    -h, --help          this text

Each run prints, per limiter: permits granted, utilisation (% of the exact log's grants),
false denials (denied although the exact window over the limiter's own grants had room),
the fullest window (more than the limit = over-admission) and the longest false-denial
stretch.
";

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Scenario {
    Steady,
    Poisson,
    OnOff,
    Edge,
    KeyPool,
    File(PathBuf),
    All,
    Shares,
    Docs,
    Help,
}

/// The parsed command line; `None` means "the scenario's default".
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Options {
    pub(crate) scenario: Scenario,
    pub(crate) seed: u64,
    pub(crate) out: Option<PathBuf>,
    pub(crate) limit: Option<u64>,
    pub(crate) period: Option<u64>,
    pub(crate) duration: Option<u64>,
    pub(crate) load: Option<f64>,
    pub(crate) on: Option<u64>,
    pub(crate) off: Option<u64>,
    pub(crate) buckets: u64,
    pub(crate) keys: Option<u64>,
    pub(crate) burst: u64,
    pub(crate) only: Option<String>,
    pub(crate) samples: usize,
    pub(crate) plots: bool,
    pub(crate) quiet: bool,
}

impl Options {
    fn new(scenario: Scenario) -> Options {
        Options {
            scenario,
            seed: 1,
            out: None,
            limit: None,
            period: None,
            duration: None,
            load: None,
            on: None,
            off: None,
            buckets: 10,
            keys: None,
            burst: 451,
            only: None,
            samples: 600,
            plots: true,
            quiet: false,
        }
    }
}

fn usage(message: String) -> SimError {
    SimError::Usage(message)
}

fn whole(name: &str, v: &str, min: u64) -> Result<u64, SimError> {
    match v.parse::<u64>() {
        Ok(n) if n >= min => Ok(n),
        _ => Err(usage(format!(
            "{name} {v:?}: expected a whole number of at least {min}"
        ))),
    }
}

fn secs(name: &str, v: &str) -> Result<u64, SimError> {
    match parse_seconds(v) {
        Ok(0) => Err(usage(format!("{name} {v:?}: must be more than 0 seconds"))),
        Ok(ns) => Ok(ns),
        Err(e) => Err(usage(format!("{name}: {e}"))),
    }
}

/// Parses the arguments after the program's name.
pub(crate) fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Options, SimError> {
    let mut args = args.into_iter();
    let mut options: Option<Options> = None;
    let mut pending_file = false;
    let mut rest: Vec<(String, Option<String>)> = Vec::new();
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(Options::new(Scenario::Help));
        }
        if let Some(flag) = arg.strip_prefix("--") {
            let (name, inline) = match flag.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (flag.to_string(), None),
            };
            let value = match (name.as_str(), inline) {
                ("no-plots" | "quiet", None) => None,
                ("no-plots" | "quiet", Some(_)) => {
                    return Err(usage(format!("--{name} takes no value")))
                }
                (_, Some(v)) => Some(v),
                (_, None) => Some(
                    args.next()
                        .ok_or_else(|| usage(format!("--{name} needs a value")))?,
                ),
            };
            rest.push((name, value));
            continue;
        }
        if pending_file {
            options = Some(Options::new(Scenario::File(PathBuf::from(arg))));
            pending_file = false;
            continue;
        }
        if options.is_some() {
            return Err(usage(format!("unexpected argument {arg:?}")));
        }
        let scenario = match arg.as_str() {
            "steady" => Scenario::Steady,
            "poisson" => Scenario::Poisson,
            "onoff" => Scenario::OnOff,
            "edge" => Scenario::Edge,
            "keypool" => Scenario::KeyPool,
            "all" => Scenario::All,
            "shares" => Scenario::Shares,
            "docs" => Scenario::Docs,
            "file" => {
                pending_file = true;
                continue;
            }
            other => return Err(usage(format!("unknown scenario {other:?}"))),
        };
        options = Some(Options::new(scenario));
    }
    if pending_file {
        return Err(usage("file needs the path of a trace file".into()));
    }
    let mut o = options.ok_or_else(|| usage("no scenario given".into()))?;
    for (name, value) in rest {
        let v = value.unwrap_or_default();
        let flag = format!("--{name}");
        match name.as_str() {
            "seed" => o.seed = whole(&flag, &v, 0)?,
            "out" => o.out = Some(PathBuf::from(v)),
            "limit" => o.limit = Some(whole(&flag, &v, 1)?),
            "period" => o.period = Some(secs(&flag, &v)?),
            "duration" => o.duration = Some(secs(&flag, &v)?),
            "on" => o.on = Some(secs(&flag, &v)?),
            "off" => o.off = Some(secs(&flag, &v)?),
            "load" => match v.parse::<f64>() {
                Ok(x) if x.is_finite() && x > 0.0 && x <= 1e6 => o.load = Some(x),
                _ => {
                    return Err(usage(format!(
                        "--load {v:?}: expected a number above 0 (a multiple of the rate)"
                    )))
                }
            },
            "buckets" => o.buckets = whole(&flag, &v, 1)?,
            "keys" => o.keys = Some(whole(&flag, &v, 1)?),
            "burst" => o.burst = whole(&flag, &v, 0)?,
            "only" => o.only = Some(v),
            "samples" => o.samples = whole(&flag, &v, 2)?.min(100_000) as usize,
            "no-plots" => o.plots = false,
            "quiet" => o.quiet = true,
            _ => return Err(usage(format!("unknown option {flag}"))),
        }
    }
    Ok(o)
}

/// The default trace length: a minute, or an hour for the key pool.
pub(crate) fn default_duration(scenario: &Scenario) -> u64 {
    match scenario {
        Scenario::KeyPool => 3_600 * SECOND,
        _ => 60 * SECOND,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Options, SimError> {
        parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn scenarios_and_options_parse() {
        let o = p(&[
            "poisson",
            "--load",
            "2",
            "--seed=7",
            "--no-plots",
            "--period",
            "0.5",
        ])
        .unwrap();
        assert_eq!(o.scenario, Scenario::Poisson);
        assert_eq!((o.load, o.seed, o.plots), (Some(2.0), 7, false));
        assert_eq!(o.period, Some(500_000_000));
        let o = p(&["file", "trace.txt", "--limit", "5"]).unwrap();
        assert_eq!(o.scenario, Scenario::File("trace.txt".into()));
        assert_eq!(o.limit, Some(5));
        assert_eq!(p(&["--help"]).unwrap().scenario, Scenario::Help);
    }

    #[test]
    fn bad_command_lines_say_what_is_wrong() {
        let msg = |args: &[&str]| p(args).unwrap_err().to_string();
        assert!(msg(&[]).contains("no scenario"));
        assert!(msg(&["nope"]).contains("unknown scenario \"nope\""));
        assert!(msg(&["file"]).contains("path of a trace file"));
        assert!(msg(&["steady", "--seed"]).contains("--seed needs a value"));
        assert!(msg(&["steady", "--seed", "x"]).contains("--seed \"x\""));
        assert!(msg(&["steady", "--limit", "0"]).contains("at least 1"));
        assert!(msg(&["steady", "--load", "-1"]).contains("--load \"-1\""));
        assert!(msg(&["steady", "--period", "0"]).contains("more than 0"));
        assert!(msg(&["steady", "--frobnicate", "1"]).contains("unknown option --frobnicate"));
        assert!(msg(&["steady", "edge"]).contains("unexpected argument"));
        assert!(msg(&["steady", "--quiet=yes"]).contains("takes no value"));
    }
}
