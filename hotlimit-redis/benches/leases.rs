//! Leases beside the per-decision script and the in-process limiters, in one run, on one
//! `redis-server` this benchmark starts on a temporary unix socket.
//!
//! `cargo bench -p hotlimit-redis --bench leases` (about 40 s; `SECS=5` for longer runs):
//!
//! 1. **Local decision cost**, one thread on one hot key, rounds interleaved: a leased key's
//!    handle (`LeasedKey::try_acquire`) against an in-process `Gcra`, and the keyed
//!    `LeasedGcra::try_acquire` against `Keyed<String, Gcra>`, all at 1,000,000/s, burst 1,000,
//!    called as fast as one thread can (mostly denials, a grant per µs).
//! 2. **Four processes on one key** (this binary, run as workers), 2 threads each, far over a
//!    limit of 50,000/s (burst 1,000), for `SECS` s each: leased, then per decision
//!    (`RedisLimiter::gcra`, its denial cache on, as a user runs it). A denied thread retries
//!    after its `retry_after` (exact in both designs; slept when over 100 µs, at most 2 ms,
//!    else a yield). Utilisation (grants over b + rate × time), each process's share, round
//!    trips per 100 grants, decisions per second.
//!
//! `CALLGRIND=lease` or `CALLGRIND=gcra` runs only 200,000 grants on a manual clock (one
//! interval apart, all granted) for `valgrind --tool=callgrind --toggle-collect=...`.

#![allow(missing_docs)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::process::Command;
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
    local(&server);
    processes(&server);
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
        let _ = handle.try_acquire(1);
        let _ = leased.try_acquire("hot-keyed", 1);
    }
    let before = leased.stats();
    let mut a = || handle.try_acquire(1).is_ok();
    let mut b = || gcra.try_acquire().is_ok();
    let mut c = || leased.try_acquire("hot-keyed", 1).is_ok();
    let mut d = || keyed.try_acquire(&key).is_ok();
    let rows = interleaved(
        15,
        2_000_000,
        &mut [
            ("LeasedKey::try_acquire (handle)", &mut a),
            ("Gcra::try_acquire (in process)", &mut b),
            ("LeasedGcra::try_acquire (keyed)", &mut c),
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

/// Runs the four worker processes for `design` and prints the row.
fn processes(server: &RedisServer) {
    let secs = secs();
    println!("\n4 processes x {THREADS} threads on one key, {RATE}/s, burst {BURST}, {secs} s each, far over the limit:\n");
    println!("| design | grants/s | utilisation | shares (min/max process) | round trips per 100 grants | decisions/s | leased permits skipped |");
    println!("|---|---|---|---|---|---|---|");
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
        // (grants, decisions, round trips, skipped) per process.
        let mut rows: Vec<(u64, u64, u64, u64)> = Vec::new();
        for w in workers {
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
            rows.push((n[0], n[1], n[2], n[3]));
        }
        let grants: u64 = rows.iter().map(|r| r.0).sum();
        let decisions: u64 = rows.iter().map(|r| r.1).sum();
        let trips: u64 = rows.iter().map(|r| r.2).sum();
        let (min, max) = (
            rows.iter().map(|r| r.0).min().unwrap(),
            rows.iter().map(|r| r.0).max().unwrap(),
        );
        let skipped: Vec<u64> = rows.iter().map(|r| r.3).collect();
        println!(
            "| {design} | {:.0} | {:.1} % | {:.3} ({min} / {max}) | {:.2} | {:.0} | {skipped:?} |",
            grants as f64 / secs as f64,
            100.0 * grants as f64 / (BURST + RATE * secs) as f64,
            min as f64 / max as f64,
            100.0 * trips as f64 / grants.max(1) as f64,
            decisions as f64 / secs as f64,
        );
    }
}

/// One worker process: `THREADS` threads on the key "hot" until `BENCH_END`; prints
/// `worker <grants> <decisions> <round trips>`.
fn worker() {
    let var = |name: &str| std::env::var(name).unwrap();
    let design = var("BENCH_WORKER");
    let start: u64 = var("BENCH_START").parse().unwrap();
    let end: u64 = var("BENCH_END").parse().unwrap();
    let client = redis::Client::open(var("BENCH_URL")).unwrap();
    let rate = Rate::per_second(RATE).unwrap();
    let leased = LeasedGcra::builder(rate, OnError::FailClosed)
        .burst(BURST)
        .clock(RealTime)
        .build(client.clone())
        .unwrap();
    let per_decision = RedisLimiter::gcra(rate, OnError::FailClosed)
        .burst(BURST)
        .build()
        .unwrap();
    std::thread::sleep(Duration::from_nanos(start.saturating_sub(RealTime.now())));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (leased, per_decision, client, design) = (
                leased.clone(),
                per_decision.clone(),
                client.clone(),
                design.clone(),
            );
            std::thread::spawn(move || {
                let mut con = SyncConnection::new(client);
                let (mut granted, mut decided) = (0u64, 0u64);
                while RealTime.now() < end {
                    decided += 1;
                    let ok = if design == "leased" {
                        leased.try_acquire("hot", 1).is_ok()
                    } else {
                        per_decision
                            .decide_blocking(&mut con, "hot", 1)
                            .unwrap()
                            .is_allowed()
                    };
                    granted += u64::from(ok);
                    if !ok {
                        // Hammer, but let the other threads (and the server) run.
                        std::thread::yield_now();
                    }
                }
                (granted, decided)
            })
        })
        .collect();
    let (mut granted, mut decided) = (0, 0);
    for t in threads {
        let (g, d) = t.join().unwrap();
        granted += g;
        decided += d;
    }
    let (trips, skipped) = if design == "leased" {
        let s = leased.stats();
        (s.round_trips, s.skipped)
    } else {
        (per_decision.stats().round_trips, 0)
    };
    println!("worker {granted} {decided} {trips} {skipped}");
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
    handle.try_acquire(1).is_ok()
}

#[inline(never)]
fn gcra_grant(gcra: &Gcra<ManualClock>) -> bool {
    gcra.try_acquire().is_ok()
}
