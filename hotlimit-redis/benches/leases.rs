//! Leases beside the per-decision script and the in-process limiters, in one run, on one
//! `redis-server` this benchmark starts on a temporary unix socket.
//!
//! `cargo bench -p hotlimit-redis --bench leases` (about 40 s; `SECS=5` for longer runs):
//!
//! 1. **Local decision cost**, one thread on one hot key, rounds interleaved: a leased key's
//!    handle (`LeasedKey::try_acquire_n`) against an in-process `Gcra`, and the keyed
//!    `LeasedGcra::try_acquire_n` against `Keyed<String, Gcra>`, all at 1,000,000/s, burst 1,000,
//!    called as fast as one thread can (mostly denials, a grant per µs).
//! 2. **Four processes on one key** (this binary, run as workers), 2 threads each (`THREADS`),
//!    far over a limit of 50,000/s (burst 1,000), for `SECS` s each: leased, then per decision
//!    (`RedisLimiter::gcra`, its denial cache on, as a user runs it). A denied thread yields
//!    and asks again (`RETRY=sleep`: it sleeps until its `retry_after` when that is over
//!    100 µs, at most 2 ms). Utilisation (grants over b + rate × time), each process's share,
//!    round trips per 100 grants, decisions per second; then per process: permits leased and
//!    skipped, how long the process had no thread running beyond a permit's window, and its
//!    threads' run-queue wait (`/proc/thread-self/schedstat`).
//!
//! `ONLY=local` or `ONLY=processes` runs one part; `MAX_LEASE=n` sets the workers' largest
//! lease (default 1,024).
//!
//! `CALLGRIND=lease` or `CALLGRIND=gcra` runs only 200,000 grants on a manual clock (one
//! interval apart, all granted) for `valgrind --tool=callgrind --toggle-collect=...`.

#![allow(missing_docs)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hotlimit::{Clock, Gcra, Keyed, Limiter, ManualClock, Rate};
use hotlimit_redis::{LeasedGcra, OnError, RedisLimiter, SyncConnection};

use common::RedisServer;

const RATE: u64 = 50_000;
const BURST: u64 = 1000;
const PROCESSES: usize = 4;
const THREADS: usize = 2;

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn secs() -> u64 {
    std::env::var("SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
}

/// Real-time ns: one clock for every worker process (and Redis's `TIME`).
#[derive(Clone, Copy, Debug, Default)]
struct RealTime;

impl Clock for RealTime {
    fn now(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    }
}

fn main() {
    if std::env::var_os("BENCH_WORKER").is_some() {
        worker();
        return;
    }
    if let Ok(which) = std::env::var("CALLGRIND") {
        callgrind(&which);
        return;
    }
    println!("load before: {}", load());
    let server = RedisServer::start();
    let only = std::env::var("ONLY").unwrap_or_default();
    if only != "processes" {
        local(&server);
    }
    if only != "local" {
        processes(&server);
    }
    println!("load after: {}", load());
}

/// ns per call of each of `calls` (closures), `rounds` rounds of `n` calls, interleaved; the
/// median round of each.
fn interleaved(
    rounds: usize,
    n: u64,
    calls: &mut [(&str, &mut dyn FnMut() -> bool)],
) -> Vec<(String, f64, u64)> {
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); calls.len()];
    let mut granted = vec![0u64; calls.len()];
    for _ in 0..rounds {
        for (c, (_, call)) in calls.iter_mut().enumerate() {
            let t = Instant::now();
            for _ in 0..n {
                granted[c] += u64::from(call());
            }
            times[c].push(t.elapsed().as_nanos() as f64 / n as f64);
        }
    }
    calls
        .iter()
        .zip(times)
        .zip(granted)
        .map(|(((name, _), mut t), g)| {
            t.sort_by(f64::total_cmp);
            (name.to_string(), t[t.len() / 2], g)
        })
        .collect()
}

fn local(server: &RedisServer) {
    let rate = Rate::per_second(1_000_000).unwrap();
    let leased = LeasedGcra::builder(rate, OnError::FailClosed)
        .burst(1000)
        .max_lease(100_000)
        .prefix("local:")
        .build(server.client())
        .unwrap();
    let handle = leased.key("hot").unwrap();
    let gcra = Gcra::builder(rate).burst(1000).build().unwrap();
    let keyed = Keyed::<String, Gcra>::gcra(rate)
        .burst(1000)
        .build()
        .unwrap();
    let key = "hot".to_string();
    // Warm up: the first leases, sized from demand.
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(300) {
        let _ = handle.try_acquire_n(1);
        let _ = leased.try_acquire_n("hot-keyed", 1);
    }
    let before = leased.stats();
    let mut a = || handle.try_acquire_n(1).is_ok();
    let mut b = || gcra.try_acquire().is_ok();
    let mut c = || leased.try_acquire_n("hot-keyed", 1).is_ok();
    let mut d = || keyed.try_acquire(&key).is_ok();
    let rows = interleaved(
        15,
        2_000_000,
        &mut [
            ("LeasedKey::try_acquire_n (handle)", &mut a),
            ("Gcra::try_acquire (in process)", &mut b),
            ("LeasedGcra::try_acquire_n (keyed)", &mut c),
            ("Keyed<String, Gcra>::try_acquire", &mut d),
        ],
    );
    let after = leased.stats();
    println!("\n1,000,000/s, burst 1,000, one thread, 15 interleaved rounds of 2,000,000 calls (median round):\n");
    println!("| decision | ns per call | granted | vs its in-process peer |");
    println!("|---|---|---|---|");
    for (i, (name, ns, granted)) in rows.iter().enumerate() {
        let peer = rows[i - i % 2 + 1].1;
        println!("| {name} | {ns:.1} | {granted} | {:.2}x |", ns / peer);
    }
    println!(
        "\n(leases during the rounds: {} round trips, {} permits leased)",
        after.round_trips - before.round_trips,
        after.leased - before.leased
    );
}

/// One worker's figures: grants, decisions, round trips, leased permits skipped, permits
/// leased, ns of absence past a permit's window, ns of run-queue delay (all its threads).
struct Row {
    granted: u64,
    decided: u64,
    trips: u64,
    skipped: u64,
    leased: u64,
    absent: u64,
    run_delay: u64,
}

/// Runs the four worker processes for each design and prints the rows.
fn processes(server: &RedisServer) {
    let secs = secs();
    let retry = match retry_mode() {
        Retry::Sleep => "sleep until retry_after (over 100 µs; at most 2 ms), else yield",
        Retry::Yield => "yield",
    };
    println!(
        "\n{PROCESSES} processes x {} threads on one key, {RATE}/s, burst {BURST}, {secs} s each, far over the limit; a denied thread: {retry}:\n",
        threads()
    );
    println!("| design | grants/s | utilisation | shares (min/max process) | round trips per 100 grants | decisions/s | leased permits skipped |");
    println!("|---|---|---|---|---|---|---|");
    let mut details = Vec::new();
    for design in ["leased", "per-decision"] {
        let _: () = redis::cmd("FLUSHALL").query(&mut server.con()).unwrap();
        let start = RealTime.now() + 300_000_000;
        let end = start + secs * 1_000_000_000;
        let workers: Vec<_> = (0..PROCESSES)
            .map(|id| {
                Command::new(std::env::current_exe().unwrap())
                    .env("BENCH_WORKER", design)
                    .env("BENCH_ID", id.to_string())
                    .env("BENCH_URL", server.url())
                    .env("BENCH_START", start.to_string())
                    .env("BENCH_END", end.to_string())
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let rows: Vec<Row> = workers
            .into_iter()
            .map(|w| {
                let out = w.wait_with_output().unwrap();
                let text = String::from_utf8_lossy(&out.stdout);
                let line = text
                    .lines()
                    .find(|l| l.starts_with("worker "))
                    .unwrap_or_else(|| {
                        panic!(
                            "worker said: {text} {}",
                            String::from_utf8_lossy(&out.stderr)
                        )
                    });
                let n: Vec<u64> = line
                    .split_whitespace()
                    .skip(1)
                    .map(|v| v.parse().unwrap())
                    .collect();
                Row {
                    granted: n[0],
                    decided: n[1],
                    trips: n[2],
                    skipped: n[3],
                    leased: n[4],
                    absent: n[5],
                    run_delay: n[6],
                }
            })
            .collect();
        let grants: u64 = rows.iter().map(|r| r.granted).sum();
        let decisions: u64 = rows.iter().map(|r| r.decided).sum();
        let trips: u64 = rows.iter().map(|r| r.trips).sum();
        let (min, max) = (
            rows.iter().map(|r| r.granted).min().unwrap(),
            rows.iter().map(|r| r.granted).max().unwrap(),
        );
        let skipped: Vec<u64> = rows.iter().map(|r| r.skipped).collect();
        println!(
            "| {design} | {:.0} | {:.1} % | {:.3} ({min} / {max}) | {:.2} | {:.0} | {skipped:?} |",
            grants as f64 / secs as f64,
            100.0 * grants as f64 / (BURST + RATE * secs) as f64,
            min as f64 / max as f64,
            100.0 * trips as f64 / grants.max(1) as f64,
            decisions as f64 / secs as f64,
        );
        details.push((design, rows));
    }
    // Where the permits went, process by process: a leased permit is lost when its process
    // has no thread on a core for its whole window, (b − 1)·I.
    println!("\nper process: grants, round trips, permits leased, skipped, ms with no thread running beyond a permit's window ({} ms), ms waiting for a core (all threads):\n", WINDOW as f64 / 1e6);
    println!("| design | process | grants | round trips | leased | skipped | absent past the window, ms | run-queue wait, ms |");
    println!("|---|---|---|---|---|---|---|---|");
    for (design, rows) in details {
        for (id, r) in rows.iter().enumerate() {
            println!(
                "| {design} | {id} | {} | {} | {} | {} | {:.1} | {:.0} |",
                r.granted,
                r.trips,
                r.leased,
                r.skipped,
                r.absent as f64 / 1e6,
                r.run_delay as f64 / 1e6
            );
        }
    }
}

/// One worker process: `THREADS` threads on the key "hot" until `BENCH_END`; prints
/// `worker` and its figures (see [`Row`]).
fn worker() {
    let var = |name: &str| std::env::var(name).unwrap();
    let design = var("BENCH_WORKER");
    let start: u64 = var("BENCH_START").parse().unwrap();
    let end: u64 = var("BENCH_END").parse().unwrap();
    let client = redis::Client::open(var("BENCH_URL")).unwrap();
    let rate = Rate::per_second(RATE).unwrap();
    // `MAX_LEASE`: the largest lease (the builder's default, 1,024, unless set).
    let max_lease = std::env::var("MAX_LEASE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1024);
    let leased = LeasedGcra::builder(rate, OnError::FailClosed)
        .burst(BURST)
        .max_lease(max_lease)
        .clock(RealTime)
        .build(client.clone())
        .unwrap();
    let per_decision = RedisLimiter::gcra(rate, OnError::FailClosed)
        .burst(BURST)
        .build()
        .unwrap();
    let retry = retry_mode();
    // The last time any thread of this process ran its loop (real-time ns): a stretch longer
    // than a permit's window, (b − 1)·I, with no thread running is one in which this
    // process's permits could come due and expire unseen.
    let last = Arc::new(AtomicU64::new(start));
    std::thread::sleep(Duration::from_nanos(start.saturating_sub(RealTime.now())));
    let threads: Vec<_> = (0..threads())
        .map(|_| {
            let (leased, per_decision, client, design, last) = (
                leased.clone(),
                per_decision.clone(),
                client.clone(),
                design.clone(),
                last.clone(),
            );
            std::thread::spawn(move || {
                let mut con = SyncConnection::new(client);
                let mut t = Thread::default();
                let delay_before = run_delay();
                while RealTime.now() < end {
                    t.decided += 1;
                    let outcome = if design == "leased" {
                        leased.try_acquire_n("hot", 1)
                    } else {
                        per_decision
                            .decide_blocking(&mut con, "hot", 1)
                            .unwrap()
                            .outcome()
                    };
                    let now = RealTime.now();
                    let before = last.swap(now, Ordering::Relaxed);
                    if now > before + WINDOW {
                        t.absent += now - before - WINDOW;
                    }
                    match outcome {
                        Ok(()) => t.granted += 1,
                        Err(denied) => retry.after(denied.retry_after()),
                    }
                }
                t.run_delay = run_delay().saturating_sub(delay_before);
                t
            })
        })
        .collect();
    let mut total = Thread::default();
    for t in threads {
        let t = t.join().unwrap();
        total.granted += t.granted;
        total.decided += t.decided;
        total.absent += t.absent;
        total.run_delay += t.run_delay;
    }
    let (trips, skipped, leased_permits) = if design == "leased" {
        let s = leased.stats();
        (s.round_trips, s.skipped, s.leased)
    } else {
        (per_decision.stats().round_trips, 0, 0)
    };
    println!(
        "worker {} {} {trips} {skipped} {leased_permits} {} {}",
        total.granted, total.decided, total.absent, total.run_delay
    );
}

/// What one worker thread counted.
#[derive(Default)]
struct Thread {
    granted: u64,
    decided: u64,
    /// ns by which stretches with no thread of the process running exceeded [`WINDOW`].
    absent: u64,
    /// ns this thread spent runnable but waiting for a core (`/proc/thread-self/schedstat`).
    run_delay: u64,
}

/// A permit's window at the bench's rate and burst, (b − 1)·I, ns.
const WINDOW: u64 = (BURST - 1) * 1_000_000_000 / RATE;

/// The calling thread's time spent waiting on a run queue so far, ns (0 where the kernel does
/// not say).
fn run_delay() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// Threads per worker process: `THREADS`, default 2.
fn threads() -> usize {
    std::env::var("THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(THREADS)
}

/// What a denied thread does: `RETRY=yield` (the default, as issue 27's first round measured)
/// always yields (a hammer that keeps every thread runnable); `RETRY=sleep` sleeps until its
/// `retry_after` when that is over 100 µs (at most 2 ms, then it asks again) and yields
/// otherwise.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Retry {
    Sleep,
    Yield,
}

fn retry_mode() -> Retry {
    match std::env::var("RETRY").as_deref() {
        Ok("sleep") => Retry::Sleep,
        _ => Retry::Yield,
    }
}

impl Retry {
    fn after(self, wait: Option<Duration>) {
        match (self, wait) {
            (Retry::Sleep, Some(w)) if w > Duration::from_micros(100) => {
                std::thread::sleep(w.min(Duration::from_millis(2)));
            }
            _ => std::thread::yield_now(),
        }
    }
}

/// 200,000 grants 1 µs apart on a manual clock, for callgrind: the lease handle's or an
/// in-process `Gcra`'s, both at 1,000/s with a burst of 1,000,000 (every call a grant, no
/// permit's window closed: the steady grant path; the lease's refills, one per 100,000
/// permits, included).
fn callgrind(which: &str) {
    let rate = Rate::per_second(1000).unwrap();
    let clock = ManualClock::new();
    let n = 200_000u64;
    let mut granted = 0u64;
    if which == "lease" {
        let server = RedisServer::start();
        let leased = LeasedGcra::builder(rate, OnError::FailClosed)
            .burst(1_000_000)
            .max_lease(100_000)
            .lease_time(Duration::from_secs(1000))
            .clock(clock.clone())
            .build(server.client())
            .unwrap();
        let handle = leased.key("hot").unwrap();
        for _ in 0..n {
            clock.advance(Duration::from_micros(1));
            granted += u64::from(lease_grant(&handle));
        }
        println!("lease: {granted} of {n} granted, {:?}", leased.stats());
    } else {
        let gcra = Gcra::builder(rate)
            .burst(1_000_000)
            .clock(clock.clone())
            .build()
            .unwrap();
        for _ in 0..n {
            clock.advance(Duration::from_micros(1));
            granted += u64::from(gcra_grant(&gcra));
        }
        println!("gcra: {granted} of {n} granted");
    }
}

#[inline(never)]
fn lease_grant(handle: &hotlimit_redis::LeasedKey<ManualClock>) -> bool {
    handle.try_acquire_n(1).is_ok()
}

#[inline(never)]
fn gcra_grant(gcra: &Gcra<ManualClock>) -> bool {
    gcra.try_acquire().is_ok()
}
