//! Traces: the requests a run replays, generated from a seed or read from a file.
//!
//! Every generator is a pure function of its parameters and the seed, so a run is
//! reproducible to the request.

use std::path::Path;

use hotlimit::Rate;

use crate::error::SimError;
use crate::rng::Rng;
use crate::units::{duration_text, parse_seconds, seconds, SECOND};

/// One request: at `at` nanoseconds from the trace's start, for `cost` permits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Request {
    pub(crate) at: u64,
    pub(crate) cost: u32,
}

/// A named, time-ordered list of requests, and the rate the limiters are given for it.
#[derive(Clone, Debug)]
pub(crate) struct Trace {
    /// For titles: "Poisson at 2× the rate".
    pub(crate) name: String,
    /// For file names: "poisson-2x".
    pub(crate) slug: String,
    /// For table columns: "Poisson 2×".
    pub(crate) short: String,
    /// The rate every limiter on this trace enforces.
    pub(crate) rate: Rate,
    /// The end of the trace in nanoseconds (after the last request).
    pub(crate) end: u64,
    /// Sorted by `at`.
    pub(crate) requests: Vec<Request>,
    /// The key count of the key pools this trace is made for (the key-pool worst case: one
    /// use per key per period); `None`: the command line's `--keys`.
    pub(crate) pool_keys: Option<u64>,
}

impl Trace {
    fn new(
        [name, slug, short]: [String; 3],
        rate: Rate,
        end: u64,
        mut requests: Vec<Request>,
    ) -> Self {
        // Stable: requests at the same instant keep the order they were generated in.
        requests.sort_by_key(|r| r.at);
        let end = end.max(requests.last().map_or(0, |r| r.at.saturating_add(1)));
        Trace {
            name,
            slug,
            short,
            rate,
            end,
            requests,
            pool_keys: None,
        }
    }

    /// True if some request asks for more than one permit (a key pool hands out one key per
    /// call, so it cannot serve such a trace).
    pub(crate) fn has_costs(&self) -> bool {
        self.requests.iter().any(|r| r.cost > 1)
    }
}

/// `load` × the rate as a label: "0.5×", "2×".
pub(crate) fn load_label(load: f64) -> String {
    format!("{load}×")
}

fn load_slug(load: f64) -> String {
    format!("{load}x").replace('.', "_")
}

/// The mean gap between requests, in nanoseconds, at `load` × `rate`.
fn mean_gap(rate: Rate, load: f64) -> f64 {
    rate.period_nanos() as f64 / (rate.limit() as f64 * load)
}

/// Requests evenly spaced at `load` × the rate, from t = 0 to `duration`.
pub(crate) fn steady(rate: Rate, load: f64, duration: u64) -> Trace {
    let gap = mean_gap(rate, load);
    let requests = (0u64..)
        .map(|i| (i as f64 * gap).round() as u64)
        .take_while(|&at| at < duration)
        .map(|at| Request { at, cost: 1 })
        .collect();
    Trace::new(
        [
            format!("steady at {} the rate", load_label(load)),
            format!("steady-{}", load_slug(load)),
            format!("steady {}", load_label(load)),
        ],
        rate,
        duration,
        requests,
    )
}

/// Poisson arrivals at `load` × the rate (exponential gaps), until `duration`.
pub(crate) fn poisson(rate: Rate, load: f64, duration: u64, seed: u64) -> Trace {
    let slug = format!("poisson-{}", load_slug(load));
    let mut rng = Rng::new(seed, &slug);
    let gap = mean_gap(rate, load);
    let mut requests = Vec::new();
    let mut t = rng.exponential(gap);
    while t < duration as f64 {
        requests.push(Request {
            at: t as u64,
            cost: 1,
        });
        t += rng.exponential(gap);
    }
    Trace::new(
        [
            format!("Poisson at {} the rate", load_label(load)),
            slug,
            format!("Poisson {}", load_label(load)),
        ],
        rate,
        duration,
        requests,
    )
}

/// On/off bursts: Poisson at `load` × the rate for `on` nanoseconds, then silence for `off`,
/// repeated until `duration`.
pub(crate) fn on_off(rate: Rate, on: u64, off: u64, load: f64, duration: u64, seed: u64) -> Trace {
    let mut rng = Rng::new(seed, "onoff");
    let gap = mean_gap(rate, load);
    let cycle = on.saturating_add(off);
    let mut requests = Vec::new();
    // Draw one Poisson process on "on-time" (the on phases laid end to end), then place
    // each instant in its cycle.
    let mut u = rng.exponential(gap);
    loop {
        let on_time = u as u64;
        let at = (on_time / on.max(1))
            .saturating_mul(cycle)
            .saturating_add(on_time % on.max(1));
        if at >= duration {
            break;
        }
        requests.push(Request { at, cost: 1 });
        u += rng.exponential(gap);
    }
    let (on_s, off_s) = (seconds(on), seconds(off));
    let slug = format!("onoff-{on_s}s-{off_s}s").replace('.', "_");
    Trace::new(
        [
            format!(
                "on/off bursts ({on_s} s at {} the rate, {off_s} s off)",
                load_label(load)
            ),
            slug,
            format!("on/off {on_s} s + {off_s} s"),
        ],
        rate,
        duration,
        requests,
    )
}

/// The adversarial edge burst: `limit` requests in the last nanosecond of a bucket, and
/// `limit` more at the instant an approximate window of `buckets` buckets stops counting that
/// bucket (period − w later, w the bucket width), while the exact window still holds the
/// first burst; repeated every two periods until `duration`.
pub(crate) fn edge(rate: Rate, buckets: u64, duration: u64) -> Trace {
    let (limit, period) = (rate.limit(), rate.period_nanos());
    let width = period.div_ceil(buckets.max(1));
    let mut requests = Vec::new();
    for start in (0..duration).step_by(period.saturating_mul(2).max(1) as usize) {
        // Saturating: a period near the clock's range must not overflow (`at < duration`
        // then leaves such a burst out).
        let first = start.saturating_add(period - 1);
        let second = start.saturating_add(period.saturating_mul(2) - width);
        for at in [first, second] {
            if at < duration {
                requests.extend((0..limit).map(|_| Request { at, cost: 1 }));
            }
        }
    }
    Trace::new(
        [
            format!("edge burst ({limit} before a bucket edge, {limit} when {buckets} approximate buckets drop it)"),
            format!("edge-{buckets}"),
            "edge".into(),
        ],
        rate,
        duration,
        requests,
    )
}

/// The key-pool worst case: `keys` keys, each usable once per `period` (the rate is `keys`
/// per `period`); `burst` requests at once at the start of every period, and one or two a
/// minute (at random instants) in between.
pub(crate) fn key_pool(
    keys: u64,
    period: u64,
    burst: u64,
    duration: u64,
    seed: u64,
) -> Result<Trace, SimError> {
    let rate = Rate::new(keys, std::time::Duration::from_nanos(period)).map_err(|source| {
        SimError::Config {
            limiter: "key-pool trace".into(),
            source,
        }
    })?;
    let slug = "keypool".to_string();
    let mut rng = Rng::new(seed, &slug);
    let minute = 60 * SECOND;
    let mut requests = Vec::new();
    for start in (0..duration).step_by(period.max(1) as usize) {
        requests.extend((0..burst).map(|_| Request { at: start, cost: 1 }));
    }
    for m in (0..duration).step_by(minute as usize) {
        for _ in 0..1 + rng.below(2) {
            let at = m + rng.below(minute);
            if at < duration {
                requests.push(Request { at, cost: 1 });
            }
        }
    }
    let mut trace = Trace::new(
        [
            format!(
                "key-pool worst case: {keys} keys, each once per {p}; {burst} at once every {p}, then 1-2 a minute",
                p = duration_text(period)
            ),
            slug,
            "key pool".into(),
        ],
        rate,
        duration,
        requests,
    );
    trace.pool_keys = Some(keys);
    Ok(trace)
}

/// A trace read from `path`: one request per line, `<seconds> [<cost>]` (seconds since the
/// start, a decimal with at most 9 places; cost a whole number ≥ 1, default 1), separated by
/// spaces, tabs or a comma. Blank lines and lines starting with `#` are skipped; times must
/// not decrease.
pub(crate) fn from_file(path: &Path, rate: Rate) -> Result<Trace, SimError> {
    let text = std::fs::read_to_string(path).map_err(|e| SimError::io(path, e))?;
    let requests = parse(&text).map_err(|(line, message)| SimError::TraceLine {
        path: path.to_path_buf(),
        line,
        message,
    })?;
    let stem = path
        .file_stem()
        .map_or_else(|| "file".into(), |s| s.to_string_lossy().into_owned());
    let slug: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    Ok(Trace::new(
        [
            format!("trace file {}", path.display()),
            format!("file-{slug}"),
            stem,
        ],
        rate,
        0,
        requests,
    ))
}

/// Parses a trace file's text; an error is (line number, message).
pub(crate) fn parse(text: &str) -> Result<Vec<Request>, (usize, String)> {
    let mut requests = Vec::new();
    let mut last = 0u64;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|f| !f.is_empty());
        let Some(time) = fields.next() else {
            continue;
        };
        let at = parse_seconds(time).map_err(|m| (n, m))?;
        let cost = match fields.next() {
            None => 1,
            Some(c) => match c.parse::<u32>() {
                Ok(0) => return Err((n, "cost 0: a request takes at least 1 permit".into())),
                Ok(c) => c,
                Err(_) => {
                    return Err((
                        n,
                        format!("cost {c:?} is not a whole number from 1 to {}", u32::MAX),
                    ))
                }
            },
        };
        if let Some(extra) = fields.next() {
            return Err((
                n,
                format!("unexpected {extra:?}: a line is `<seconds> [<cost>]`"),
            ));
        }
        if at < last {
            return Err((
                n,
                format!(
                    "time {time} s is before the previous request's {} s: sort the file by time",
                    seconds(last)
                ),
            ));
        }
        last = at;
        requests.push(Request { at, cost });
    }
    if requests.is_empty() {
        return Err((0, "no requests in the file".into()));
    }
    Ok(requests)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate() -> Rate {
        Rate::per_second(100).unwrap()
    }

    #[test]
    fn steady_is_evenly_spaced_at_the_load() {
        let t = steady(rate(), 2.0, 10 * SECOND);
        assert_eq!(t.requests.len(), 2_000);
        assert!(t
            .requests
            .windows(2)
            .all(|w| w[1].at - w[0].at == 5_000_000));
    }

    #[test]
    fn poisson_rates_are_within_tolerance() {
        // 100/s × load over 100 s: n ~ Poisson(10,000 × load), sd = √n ≤ 1 %; allow 4 %.
        for load in [0.5, 1.0, 2.0, 4.0] {
            let t = poisson(rate(), load, 100 * SECOND, 7);
            let expected = 10_000.0 * load;
            let n = t.requests.len() as f64;
            assert!(
                (n - expected).abs() < 0.04 * expected,
                "load {load}: {n} requests, expected about {expected}"
            );
            assert!(t.requests.windows(2).all(|w| w[0].at <= w[1].at));
            assert!(t.requests.iter().all(|r| r.at < 100 * SECOND));
        }
    }

    #[test]
    fn poisson_gaps_look_exponential() {
        // An exponential's coefficient of variation is 1 (evenly spaced requests: 0).
        let t = poisson(rate(), 1.0, 100 * SECOND, 3);
        let gaps: Vec<f64> = t
            .requests
            .windows(2)
            .map(|w| (w[1].at - w[0].at) as f64)
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        let cv = var.sqrt() / mean;
        assert!((cv - 1.0).abs() < 0.05, "coefficient of variation {cv}");
    }

    #[test]
    fn traces_are_determined_by_the_seed() {
        let a = poisson(rate(), 2.0, 10 * SECOND, 42);
        let b = poisson(rate(), 2.0, 10 * SECOND, 42);
        let c = poisson(rate(), 2.0, 10 * SECOND, 43);
        assert_eq!(a.requests, b.requests);
        assert_ne!(a.requests, c.requests);
        let a = on_off(rate(), SECOND / 2, SECOND, 4.0, 10 * SECOND, 1);
        let b = on_off(rate(), SECOND / 2, SECOND, 4.0, 10 * SECOND, 1);
        assert_eq!(a.requests, b.requests);
        let a = key_pool(500, 600 * SECOND, 451, 3_600 * SECOND, 9).unwrap();
        let b = key_pool(500, 600 * SECOND, 451, 3_600 * SECOND, 9).unwrap();
        let c = key_pool(500, 600 * SECOND, 451, 3_600 * SECOND, 10).unwrap();
        assert_eq!(a.requests, b.requests);
        assert_ne!(a.requests, c.requests);
    }

    #[test]
    fn on_off_is_silent_off_and_at_the_load_on() {
        // 0.5 s on at 4 × 100/s, 1.5 s off, 200 s: 100 on phases of ~200 requests.
        let t = on_off(rate(), SECOND / 2, 3 * SECOND / 2, 4.0, 200 * SECOND, 5);
        assert!(t.requests.iter().all(|r| r.at % (2 * SECOND) < SECOND / 2));
        let n = t.requests.len() as f64;
        assert!((n - 20_000.0).abs() < 800.0, "{n} requests");
    }

    #[test]
    fn edge_bursts_straddle_the_approximate_drop() {
        let t = edge(rate(), 10, 4 * SECOND);
        let at: Vec<u64> = t.requests.iter().map(|r| r.at).collect();
        assert_eq!(at.len(), 400);
        assert!(at[..100].iter().all(|&a| a == SECOND - 1));
        assert!(at[100..200].iter().all(|&a| a == 2 * SECOND - SECOND / 10));
        assert!(at[200..300].iter().all(|&a| a == 3 * SECOND - 1));
    }

    #[test]
    fn key_pool_has_its_bursts_and_one_or_two_a_minute() {
        let t = key_pool(500, 600 * SECOND, 451, 3_600 * SECOND, 1).unwrap();
        assert_eq!(t.rate.limit(), 500);
        for start in (0..3_600).step_by(600) {
            let at = start * SECOND;
            assert!(t.requests.iter().filter(|r| r.at == at).count() >= 451);
        }
        let background = t.requests.len() - 6 * 451;
        assert!((60..=120).contains(&background), "{background}");
        for m in 0..60 {
            let in_minute = t
                .requests
                .iter()
                .filter(|r| r.at / (60 * SECOND) == m && r.at % (600 * SECOND) != 0)
                .count();
            assert!((1..=2).contains(&in_minute), "minute {m}: {in_minute}");
        }
    }

    #[test]
    fn trace_files_parse_and_bad_lines_are_named() {
        let ok = parse("# time cost\n0 1\n0.5\n\n1.25,3\n 2.000000001 2 \n").unwrap();
        assert_eq!(
            ok,
            [
                Request { at: 0, cost: 1 },
                Request {
                    at: 500_000_000,
                    cost: 1
                },
                Request {
                    at: 1_250_000_000,
                    cost: 3
                },
                Request {
                    at: 2_000_000_001,
                    cost: 2
                },
            ]
        );
        let err = |text: &str| parse(text).unwrap_err();
        assert_eq!(err("1\nabc\n").0, 2);
        assert!(err("1\nabc\n").1.contains("\"abc\""));
        assert_eq!(err("1 0\n").1, "cost 0: a request takes at least 1 permit");
        assert!(err("1 -2\n").1.contains("\"-2\""));
        assert!(err("1 2 3\n").1.contains("unexpected \"3\""));
        assert!(err("2\n1\n").1.contains("sort the file"));
        assert!(err("0.0000000001\n").1.contains("more than 9 decimals"));
        assert!(err("99999999999999999999\n").1.contains("584 years"));
        assert!(err("-1\n").1.contains("not a number"));
        assert!(err(".\n").1.contains("not a number"));
        assert_eq!(err("# nothing\n"), (0, "no requests in the file".into()));
    }
}
