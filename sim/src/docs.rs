//! `hotlimit-sim docs`: the table `docs/ACCURACY.md` and the committed pictures, from fixed
//! traces and the seed alone, so that the command reproduces them to the digit.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use hotlimit::Rate;

use crate::cli::Options;
use crate::error::SimError;
use crate::limiters::{lineup, Spec};
use crate::plot;
use crate::run::{Outcome, Run};
use crate::trace::{self, Trace};
use crate::units::{seconds, seconds_text, SECOND};

/// The slugs of the two on/off traces: silences longer than the window, and bursts that
/// come back every period.
const ONOFF: &str = "onoff-0_5s-1_5s";
const ONOFF_PERIODIC: &str = "onoff-0_25s-0_75s";
/// The rate of the table's generic traces.
const LIMIT: u64 = 100;
/// Their length: 600 periods.
const TABLE_SECONDS: u64 = 600;
/// Keys of the key pools on the generic traces (10 uses each).
const KEYS: u64 = 10;
/// The key-pool worst case: 500 keys once per 10 minutes, 451 at once.
const POOL_KEYS: u64 = 500;
const POOL_PERIOD: u64 = 600 * SECOND;
const POOL_BURST: u64 = 451;
/// The key-pool table runs two hours (12 bursts), its picture the first 45 minutes.
const POOL_TABLE: u64 = 7_200 * SECOND;
const POOL_PICTURE: u64 = 2_700 * SECOND;

/// The command written into the table, with the seed it was run with.
fn command(seed: u64) -> String {
    if seed == 1 {
        "cargo run --release -p hotlimit-sim -- docs".into()
    } else {
        format!("cargo run --release -p hotlimit-sim -- docs --seed {seed}")
    }
}

/// Writes `ACCURACY.md` and the pictures into `--out` (default: the workspace's `docs/`,
/// wherever the command is run from).
pub(crate) fn generate(o: &Options) -> Result<(), SimError> {
    let out = o.out.clone().unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .map_or_else(|| PathBuf::from("docs"), |root| root.join("docs"))
    });
    std::fs::create_dir_all(&out).map_err(|e| SimError::io(&out, e))?;
    let (table, runs) = accuracy(o.seed, TABLE_SECONDS * SECOND, POOL_TABLE, o.quiet)?;
    let path = out.join("ACCURACY.md");
    std::fs::write(&path, table).map_err(|e| SimError::io(&path, e))?;
    println!("wrote {}", path.display());
    for run in &runs {
        println!("## {}\n\n{}", run.trace_name, crate::summary_table(run));
    }
    for name in pictures(o.seed, &out, o.samples, o.quiet)? {
        println!("wrote {}", name.display());
    }
    Ok(())
}

/// The rate of the generic traces, 100 per second.
fn rate() -> Result<Rate, SimError> {
    Rate::per_second(LIMIT).map_err(|source| SimError::Config {
        limiter: "the table's rate".into(),
        source,
    })
}

/// The generic traces of the table, `length` nanoseconds each.
fn generic_traces(seed: u64, length: u64) -> Result<Vec<trace::Trace>, SimError> {
    let r = rate()?;
    let mut traces = vec![trace::steady(r, 1.0, length)];
    traces.extend([0.5, 1.0, 2.0, 4.0].map(|load| trace::poisson(r, load, length, seed)));
    // Bursts after a silence longer than the window, and bursts that come back each period.
    for (on, off) in [(SECOND / 2, 3 * SECOND / 2), (SECOND / 4, 3 * SECOND / 4)] {
        traces.push(trace::on_off(r, on, off, 4.0, length, seed));
    }
    traces.push(trace::edge(r, 10, length));
    Ok(traces)
}

/// The whole `ACCURACY.md` and the runs behind it: generic traces `length` long, the
/// key-pool worst case `pool_length` long.
pub(crate) fn accuracy(
    seed: u64,
    length: u64,
    pool_length: u64,
    quiet: bool,
) -> Result<(String, Vec<Run>), SimError> {
    let specs = lineup(LIMIT, KEYS);
    let mut runs = Vec::new();
    for t in generic_traces(seed, length)? {
        runs.push(crate::replay(&t, &specs, 2, quiet)?);
    }
    let pool = trace::key_pool(POOL_KEYS, POOL_PERIOD, POOL_BURST, pool_length, seed)?;
    let pool_run = crate::replay(&pool, &lineup(POOL_KEYS, POOL_KEYS), 2, quiet)?;
    let text = render(seed, length, &runs, &pool_run);
    runs.push(pool_run);
    Ok((text, runs))
}

/// One matrix: a row per limiter, a column per run, `cell` formatting each.
fn matrix(runs: &[Run], cell: impl Fn(&Run, &Outcome) -> String) -> String {
    let mut s = String::from("| limiter |");
    for r in runs {
        let _ = write!(s, " {} |", r.trace_short);
    }
    s += "\n|---|";
    s += &"---:|".repeat(runs.len());
    s += "\n";
    let rows = std::iter::once(None).chain(runs[0].limiters.iter().map(|o| o.spec));
    for spec in rows {
        let label = spec.map_or_else(|| runs[0].exact.label.clone(), |s| s.label());
        let _ = write!(s, "| {label} |");
        for r in runs {
            let o = match spec {
                None => Some(&r.exact),
                Some(spec) => r.get(spec),
            };
            let _ = write!(s, " {} |", o.map_or_else(|| "n/a".into(), |o| cell(r, o)));
        }
        s += "\n";
    }
    s
}

fn pct(x: f64) -> String {
    format!("{x:.1}")
}

/// A figure of `spec` on the run named `slug`, formatted by `f`.
fn stat(runs: &[Run], slug: &str, spec: Spec, f: impl Fn(&Run, &Outcome) -> String) -> String {
    runs.iter()
        .find(|r| r.trace_slug == slug)
        .and_then(|r| r.get(spec).map(|o| f(r, o)))
        .unwrap_or_else(|| "n/a".into())
}

/// The utilisation of `spec` on the run named `slug`, in percent.
fn util(runs: &[Run], slug: &str, spec: Spec) -> String {
    stat(runs, slug, spec, |r, o| pct(o.utilisation(&r.exact)))
}

fn render(seed: u64, length: u64, runs: &[Run], pool: &Run) -> String {
    let mut s = String::new();
    let cmd = command(seed);
    let _ = writeln!(
        s,
        "# Accuracy: how much of the exact sliding log's traffic each limiter admits\n\n\
         Generated by\n\n```sh\n{cmd}\n```\n\n\
         from seed {seed}; the command also draws the pictures in this folder. Every figure \
         below is reproduced to the digit by it (the traces come from the simulator's own \
         SplitMix64 generator, so they depend on the seed alone). Do not edit by hand: change \
         `sim/src/docs.rs` and run the command again.\n"
    );
    s += "## What is measured\n\n\
Each limiter replays the same requests on a `ManualClock` beside the **exact sliding log** \
(at most `limit` permits in every window (t − period, t]), which is the reference:\n\n\
- **utilisation**: permits the limiter granted, as a % of what the exact log granted on the \
  same requests (the exact log is 100 %; above 100 % means the limiter let more through than \
  a hard cap allows);\n\
- **false denials**: requests the limiter denied although the exact window over the \
  limiter's *own* grants had room for them (so a limiter is not blamed for the exact log's \
  different history), as a % of all requests;\n\
- **fullest window**: the most permits the limiter granted in any window of one period; \
  above the limit is an over-admission, which only `approximate()` (documented: up to 2 × \
  the limit) and the GCRAs (whose promise is b + d/I, a burst plus the rate, not a window \
  cap) may do;\n\
- **longest false-denial stretch**: from a false denial until the limiter grants again: \
  to the next request that is not a false denial, or sooner to the instant the last false \
  denial's `retry_after` named.\n\n";
    let _ = writeln!(
        s,
        "## Traffic at {LIMIT} per second\n\n\
         Each trace is {} seconds ({} periods) long: steady at exactly the rate; Poisson \
         arrivals at 0.5, 1, 2 and 4 × the rate; two kinds of on/off bursts, Poisson at 4 × \
         the rate while on: 0.5 s on and 1.5 s idle (the silence outlasts the window), and \
         0.25 s on and 0.75 s idle (the bursts come back every period); the edge burst ({LIMIT} requests in the last nanosecond of a bucket, \
         {LIMIT} more at the instant a 10-bucket approximate window stops counting that \
         bucket, every 2 s). Count thresholds k are 1, limit/20 = 5 and limit/5 = 20; \
         \"count-closed\" has one time bucket (the period), \"both\" has 10. The key pools have \
         {KEYS} keys of {} uses each.\n",
        seconds(length),
        length / SECOND,
        LIMIT / KEYS
    );
    s += "### Utilisation (% of the exact log's grants)\n\n";
    s += &matrix(runs, |r, o| pct(o.utilisation(&r.exact)));
    s += "\n### False denials (% of requests)\n\n";
    s += &matrix(runs, |_, o| format!("{:.2}", o.false_share()));
    s += "\n### Longest false-denial stretch (seconds)\n\n";
    s += &matrix(runs, |_, o| seconds_text(o.longest_false));
    s += "\n### Fullest window (permits in one period; the limit is 100)\n\n";
    s += &matrix(runs, |_, o| o.worst.to_string());
    let _ = writeln!(
        s,
        "\n## The key-pool worst case\n\n\
         {POOL_KEYS} keys, each usable once per 10 minutes (the window limiters get {POOL_KEYS} \
         per 10 minutes; the key pools {POOL_KEYS} keys × 1 use): {POOL_BURST} requests at \
         once at the start of every period, and one or two a minute at random instants in \
         between; {} minutes. Count thresholds k are 1, 25 and 100.\n",
        pool.end / (60 * SECOND)
    );
    s += &crate::summary_table(pool);
    s += &prose(runs, pool);
    s
}

/// What the tables show. The figures quoted are read from the runs, so they stay true.
fn prose(runs: &[Run], pool: &Run) -> String {
    let p = |spec| {
        pool.get(spec)
            .map_or_else(|| "n/a".into(), |o| pct(o.utilisation(&pool.exact)))
    };
    let stretch = |spec| {
        pool.get(spec)
            .map_or_else(|| "n/a".into(), |o| seconds_text(o.longest_false))
    };
    let leased = Spec::Leased { processes: 4 };
    let t4 = Spec::TimeClosed { buckets: 4 };
    let t10 = Spec::TimeClosed { buckets: 10 };
    let t60 = Spec::TimeClosed { buckets: 60 };
    let c25 = Spec::CountClosed { k: 25 };
    let c100 = Spec::CountClosed { k: 100 };
    let b25 = Spec::Both { buckets: 10, k: 25 };
    let b100 = Spec::Both {
        buckets: 10,
        k: 100,
    };
    let pool_b = Spec::PoolBuckets {
        keys: POOL_KEYS,
        buckets: 10,
    };
    format!(
        "\n## What it shows: which threshold for which traffic\n\n\
- **Below the rate** (Poisson 0.5 ×) every limiter grants every request: 100 %.\n\
- **At or above the rate** (steady 1 ×, Poisson 1-4 ×) the window is kept full, and what a \
  bucketed limiter wrongly holds back is lost for good. Time-closed buckets count the \
  oldest bucket whole, so they keep about n/(n + 1) of the exact log: {steady4} %, \
  {steady10} % and {steady60} % with 4, 10 and 60 buckets on steady traffic ({p4_4} %, \
  {p4_10} %, {p4_60} % at 4 × the rate). Count-closed buckets over one time bucket hold back \
  at most k − 1 permits: k = 5 keeps {s_c5} % ({p4_c5} % at 4 ×), k = 20 keeps {s_c20} %; \
  k = 1 is exact. \"Both\" (10 time buckets and k) does at least as well as its time \
  buckets: {s_b5} % with k = 5. **Pick**: for sustained load near the cap, 60 or more \
  buckets, or a count threshold of at most limit/20 (here 5). The false-denial shares look \
  large under overload ({fd4_60} % of requests at 4 × with 60 time buckets) while \
  utilisation stays at {p4_60} %: nearly every request finds the window full, and a hold-back \
  of a permit or two refuses many requests for a moment. Utilisation is the figure that \
  counts there.\n\
- **Bursts**: after silences that outlast the window (on/off 0.5 s + 1.5 s) every hard \
  cap keeps 100 %. Bursts that come back every period are the hard case: each starts as \
  the previous one leaves the exact window, while a time-closed bucket still counts the \
  previous one's oldest bucket whole. On/off 0.25 s + 0.75 s: time-closed buckets keep \
  {o4} %, {o10} % and {o60} % (4, 10, 60 buckets); count-closed with k = 5 keeps {oc5} %, \
  both (10 buckets, k = 5) {ob5} %, and time buckets cut the longest false-denial stretch \
  from {oc5s} s (count-closed alone: its one time bucket is the period) to {ob5s} s. The \
  key-pool worst case is the extreme: all of each burst arrives at one instant. There 10 time-closed \
  buckets keep {pt10} % of the exact log's grants and deny falsely for {st10} s at a \
  stretch, 60 buckets keep {pt60} % ({st60} s), and the bucketed `KeyPool` (a strict 10-bucket window \
  per key) keeps {ppool} %. More buckets shorten the stretch but not the loss: the burst \
  arrives at one instant, and a bucket late by any margin refuses all of it. Closing buckets by count avoids the loss: a bucket that closes when it holds k grants \
  leaves exactly one period after its newest grant, so count-closed with k = 25 (limit/20) \
  keeps {pc25} %, and both (10 time buckets, k = 25) {pb25} %. With k = 100 (limit/5) the \
  burst leaves a part-filled bucket that only time closes: count-closed keeps {pc100} % \
  (false denials for {sc100} s at a stretch: its one time bucket is the whole period), \
  both {pb100} %. **Pick**: for a key pool or any quota spent in bursts, count-closed \
  buckets with k at most limit/20, together with time buckets (\"both\"), which bound \
  how long a part-filled bucket can linger; k = 1 when every permit counts (memory: 16 \
  bytes per permit of the limit, twice a log's 8).\n\
- **GCRA is a different promise**: it smooths to the rate with a burst of b = limit, so \
  after a silence it grants the burst *and* the rate: its fullest window is above the \
  limit by design (b + d/I in any interval d), {gonoff_w} permits in one period on on/off \
  bursts (0.5 s + 1.5 s), where it grants {gonoff} % of the exact log. That is what a smoother is for, and \
  what a quota (an API key's uses per window) must not do. `ShardedGcra` (4 shards, \
  requests handed to the shards in turn) stays within the same bound ({sonoff} % on on/off).\n\
- **Leases cost little under sustained traffic and much on cold bursts**: `LeasedGcra` \
  (hotlimit-redis, modelled: 4 processes taking the requests in turn, 1 ms round trips) \
  grants {ls} % of the exact log on steady traffic, {lp1}-{lp4} % under Poisson load at \
  1-4 × the rate (`Gcra`: {gp1}-{gp4} %) and {lonoff} % on on/off bursts (`Gcra`: \
  {gonoff} %): what a process leased and could not use inside its permits' windows is the \
  under-use. Traffic that comes as simultaneous bursts after a silence loses most of it: \
  {ledge} % on the edge bursts (`Gcra`: {gedge} %), {lpool} % in the key-pool case \
  (`Gcra`: {gpool} %). A cold key's first lease is sized for the request that asks for it, \
  and the burst's other requests, arriving during that round trip, are denied for about a \
  round trip (the simulator does not retry them). Leases are for hot keys under sustained \
  load; a key that bursts after silence is better served by the per-decision script.\n\
- **`approximate()` over-admits exactly where an adversary aims**: on the edge burst, tuned \
  to 10 buckets, it lets through twice the limit in one window (utilisation {aedge10} % \
  with 10 buckets, {aedge4} % with 4), while 60 buckets, whose dropped bucket is narrower \
  than the attack assumed, stay at {aedge60} %. Under Poisson load at 1-4 × the rate its \
  fullest window is {ap1w}-{ap4w} permits with 10 buckets (a limit of 100). Use it only \
  where a bounded overshoot is acceptable; every other mode stays at or under the limit in \
  every window (the fullest-window table).\n\
- **Exact when it matters**: `SlidingLog` and the log `KeyPool` match the exact log on \
  every trace (100.0 %, no false denial), at 8 bytes per permit of the limit; the bucketed \
  designs buy O(buckets) memory with the losses above.\n\n\
## The pictures\n\n\
Drawn by the same command. In each panel the black line is what the exact window would \
have free after the limiter's own grants; red shading marks false denials (its height is \
the room the exact log had), purple shading a window above the limit; an orange line is \
what the limiter itself reports as free (`remaining_at`).\n\n\
- `keypool-time-count-both.svg`: the key-pool worst case, 45 minutes: the exact log, \
  time-closed (10 buckets), count-closed (k = 25) and both. At each burst after the first \
  the time-closed window still counts the previous burst's bucket and denies the burst: \
  its own report (orange) reads 0 for a minute while the exact window (black) has some 450 \
  free. Count-closed and both free it on time.\n\
- `keypool-time-closed-10.svg`: the same time-closed window in detail: permits used and \
  freed over time beside the exact log's grants (above), what is free (below).\n\
- `edge-approximate.svg`: the edge burst: approximate mode with 10 and 60 buckets, and \
  strict mode with 10: the 10-bucket approximate window grants the second burst (a window \
  holding 200 of a limit of 100).\n\
- `onoff-periodic-time-count-both.svg`: bursts that come back every period (on/off \
  0.25 s + 0.75 s), 4 seconds: time-closed (10 buckets) refuses the first tenth of a \
  second of each burst while the previous burst's oldest bucket is still counted; \
  count-closed (k = 5) and both (10 buckets, k = 5) hold back a few permits at most.\n\
- `onoff-gcra-vs-window.svg`: on/off bursts (0.5 s + 1.5 s): `Gcra`, a 10-bucket time-closed window and \
  the exact `SlidingLog`; `Gcra`'s own report (orange) refills steadily after each burst, \
  while the window frees what it granted one period later.\n\n\
![key-pool worst case](keypool-time-count-both.svg)\n\n\
![approximate mode on the edge burst](edge-approximate.svg)\n\n\
![bursts every period](onoff-periodic-time-count-both.svg)\n\n\
![GCRA vs sliding window on on/off bursts](onoff-gcra-vs-window.svg)\n",
        steady4 = util(runs, "steady-1x", t4),
        steady10 = util(runs, "steady-1x", t10),
        steady60 = util(runs, "steady-1x", t60),
        p4_4 = util(runs, "poisson-4x", t4),
        p4_10 = util(runs, "poisson-4x", t10),
        p4_60 = util(runs, "poisson-4x", t60),
        s_c5 = util(runs, "steady-1x", Spec::CountClosed { k: 5 }),
        p4_c5 = util(runs, "poisson-4x", Spec::CountClosed { k: 5 }),
        s_c20 = util(runs, "steady-1x", Spec::CountClosed { k: 20 }),
        s_b5 = util(runs, "steady-1x", Spec::Both { buckets: 10, k: 5 }),
        fd4_60 = stat(runs, "poisson-4x", t60, |_, o| format!("{:.1}", o.false_share())),
        o4 = util(runs, ONOFF_PERIODIC, t4),
        o10 = util(runs, ONOFF_PERIODIC, t10),
        o60 = util(runs, ONOFF_PERIODIC, t60),
        oc5 = util(runs, ONOFF_PERIODIC, Spec::CountClosed { k: 5 }),
        ob5 = util(runs, ONOFF_PERIODIC, Spec::Both { buckets: 10, k: 5 }),
        oc5s = stat(runs, ONOFF_PERIODIC, Spec::CountClosed { k: 5 }, |_, o| seconds_text(o.longest_false)),
        ob5s = stat(runs, ONOFF_PERIODIC, Spec::Both { buckets: 10, k: 5 }, |_, o| seconds_text(o.longest_false)),
        pt10 = p(t10),
        pt60 = p(t60),
        st10 = stretch(t10),
        st60 = stretch(t60),
        ppool = p(pool_b),
        pc25 = p(c25),
        pb25 = p(b25),
        pc100 = p(c100),
        sc100 = stretch(c100),
        pb100 = p(b100),
        gonoff = util(runs, ONOFF, Spec::Gcra),
        gonoff_w = stat(runs, ONOFF, Spec::Gcra, |_, o| o.worst.to_string()),
        sonoff = util(runs, ONOFF, Spec::ShardedGcra { shards: 4 }),
        ls = util(runs, "steady-1x", leased),
        lp1 = util(runs, "poisson-1x", leased),
        lp4 = util(runs, "poisson-4x", leased),
        gp1 = util(runs, "poisson-1x", Spec::Gcra),
        gp4 = util(runs, "poisson-4x", Spec::Gcra),
        lonoff = util(runs, ONOFF, leased),
        ledge = util(runs, "edge-10", leased),
        gedge = util(runs, "edge-10", Spec::Gcra),
        lpool = p(leased),
        gpool = p(Spec::Gcra),
        ap1w = stat(runs, "poisson-1x", Spec::Approximate { buckets: 10 }, |_, o| o.worst.to_string()),
        ap4w = stat(runs, "poisson-4x", Spec::Approximate { buckets: 10 }, |_, o| o.worst.to_string()),
        aedge10 = util(runs, "edge-10", Spec::Approximate { buckets: 10 }),
        aedge4 = util(runs, "edge-10", Spec::Approximate { buckets: 4 }),
        aedge60 = util(runs, "edge-10", Spec::Approximate { buckets: 60 }),
    )
}

/// Draws the committed pictures into `out`; returns their paths.
fn pictures(seed: u64, out: &Path, samples: usize, quiet: bool) -> Result<Vec<PathBuf>, SimError> {
    let mut written = Vec::new();
    let mut draw = |name: &str, svg| -> Result<(), SimError> {
        let path = out.join(name);
        plot::write(&path, svg)?;
        written.push(path);
        Ok(())
    };
    // Replays `trace` through `specs` and draws their panels side by side under `heading`.
    let compare = |trace: &Trace, specs: &[Spec], heading: &str| {
        crate::replay(trace, specs, samples, quiet).map(|run| {
            let panels: Vec<&Outcome> = run.limiters.iter().collect();
            let svg = plot::compare_svg(&run, &panels, heading);
            (run, svg)
        })
    };
    let t10 = Spec::TimeClosed { buckets: 10 };
    let pool = trace::key_pool(POOL_KEYS, POOL_PERIOD, POOL_BURST, POOL_PICTURE, seed)?;
    let specs = [
        Spec::SlidingLog,
        t10,
        Spec::CountClosed { k: 25 },
        Spec::Both { buckets: 10, k: 25 },
    ];
    let (run, svg) = compare(&pool, &specs, "time-closed vs count-closed vs both")?;
    draw("keypool-time-count-both.svg", svg)?;
    if let Some(o) = run.get(t10) {
        draw("keypool-time-closed-10.svg", plot::limiter_svg(&run, o))?;
    }
    let edge = trace::edge(rate()?, 10, 6 * SECOND);
    let specs = [
        Spec::Approximate { buckets: 10 },
        Spec::Approximate { buckets: 60 },
        t10,
    ];
    let (_, svg) = compare(&edge, &specs, "approximate mode's over-admission")?;
    draw("edge-approximate.svg", svg)?;
    let periodic = trace::on_off(rate()?, SECOND / 4, 3 * SECOND / 4, 4.0, 4 * SECOND, seed);
    let specs = [
        t10,
        Spec::CountClosed { k: 5 },
        Spec::Both { buckets: 10, k: 5 },
    ];
    let heading = "bursts every period: time-closed vs count-closed vs both";
    let (_, svg) = compare(&periodic, &specs, heading)?;
    draw("onoff-periodic-time-count-both.svg", svg)?;
    let onoff = trace::on_off(rate()?, SECOND / 2, 3 * SECOND / 2, 4.0, 8 * SECOND, seed);
    let specs = [Spec::Gcra, t10, Spec::SlidingLog];
    let (_, svg) = compare(&onoff, &specs, "GCRA vs sliding window")?;
    draw("onoff-gcra-vs-window.svg", svg)?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed table is what the command prints today: a change to a limiter that
    /// moves a figure must come with the regenerated table.
    #[test]
    fn the_committed_table_is_up_to_date() {
        let committed = include_str!("../../docs/ACCURACY.md");
        let now = accuracy(1, TABLE_SECONDS * SECOND, POOL_TABLE, true)
            .unwrap()
            .0;
        assert!(
            committed == now,
            "docs/ACCURACY.md is stale: run `{}` from the workspace root",
            command(1)
        );
    }

    #[test]
    fn the_committed_pictures_are_drawn_with_their_panels() {
        let out = std::env::temp_dir().join(format!("hotlimit-sim-{}-docs", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        let written = pictures(1, &out, 100, true).unwrap();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "keypool-time-count-both.svg",
                "keypool-time-closed-10.svg",
                "edge-approximate.svg",
                "onoff-periodic-time-count-both.svg",
                "onoff-gcra-vs-window.svg"
            ]
        );
        let panels = [
            &[
                "SlidingLog:",
                "time-closed, 10 buckets:",
                "count-closed, k = 25:",
                "both, 10 buckets, k = 25:",
            ][..],
            &[
                "permits used and freed over time",
                "time-closed, 10 buckets:",
            ],
            &[
                "approximate, 10 buckets:",
                "approximate, 60 buckets:",
                "time-closed, 10 buckets:",
            ],
            &[
                "time-closed, 10 buckets:",
                "count-closed, k = 5:",
                "both, 10 buckets, k = 5:",
            ],
            &[
                "Gcra (burst = limit):",
                "time-closed, 10 buckets:",
                "SlidingLog:",
            ],
        ];
        assert_eq!(written.len(), panels.len());
        for (path, panels) in written.iter().zip(panels) {
            let text = std::fs::read_to_string(path).unwrap();
            let doc = roxmltree::Document::parse(&text).unwrap();
            let texts: Vec<&str> = doc
                .descendants()
                .filter(|n| n.has_tag_name("text"))
                .filter_map(|n| n.text().map(str::trim))
                .collect();
            for panel in panels {
                assert!(
                    texts.iter().any(|t| t.contains(panel)),
                    "{}: no panel {panel:?}",
                    path.display()
                );
            }
        }
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn the_table_is_the_same_for_the_same_seed() {
        let a = accuracy(3, 4 * SECOND, 1_200 * SECOND, true).unwrap().0;
        let b = accuracy(3, 4 * SECOND, 1_200 * SECOND, true).unwrap().0;
        assert_eq!(a, b);
        assert!(a.contains("cargo run --release -p hotlimit-sim -- docs --seed 3"));
        assert!(a.contains("| SlidingLog | 100.0 |"));
        assert!(!a.contains("n/a %"));
    }
}
