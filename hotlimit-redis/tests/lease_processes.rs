//! Leases across OS processes, audited: a real `redis-server`, 4 processes × 8 threads on one
//! key, over the limit most of the time; every grant is logged with the time its check read;
//! afterwards every window of the merged log is audited against b + ⌊d/I⌋.
//!
//! The clock is the system's real-time clock in every process (`RealTime`), the clock Redis's
//! `TIME` reads: one machine, one clock, so a grant's logged time is its time on the server's
//! clock and the audit needs no allowance (the mapping of server time to a process's clock,
//! wrong by up to a round trip, only ever narrows a permit's window: see `LeasedGcra`'s docs).
//!
//! Runs (about 15 s): 5 s as above; 2 s with Redis killed after 1 s (fail closed: the leased
//! permits are granted, then nothing); 2 s with one process killed after 1 s (its leases are
//! lost: under-use); and the planted twin (every leased permit granted before its slot, with
//! a queue 4 τ deep that a new key may fill at once), whose audit must fail.
//!
//! `harness = false`: this binary is both the test and, with `LEASE_WORKER` set, a worker.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hotlimit::{Clock, Rate};
use hotlimit_redis::{LeasedGcra, OnError};

use common::RedisServer;

/// 2,000 per second on the one key (I = 500 µs), burst 50 (τ = 25 ms).
const RATE: u64 = 2000;
const BURST: u64 = 50;
/// The burst of the run that kills Redis (τ = 500 ms): a leased permit may be granted within
/// τ − I of its slot, so the permits held at the kill stay grantable for about half a second,
/// not 24.5 ms, which a loaded machine's scheduler could let pass before any worker thread ran
/// again (issue 43's stress run: 8 of 200 debug runs at load 36-67 saw no grant after the kill).
const KILL_BURST: u64 = 1000;
const PROCESSES: usize = 4;
const THREADS: usize = 8;

/// Nanoseconds of the system's real-time clock: the clock of Redis's `TIME` on this machine.
#[derive(Clone, Copy, Debug, Default)]
struct RealTime;

impl Clock for RealTime {
    fn now(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("a clock after 1970")
            .as_nanos() as u64
    }
}

fn main() {
    if std::env::var_os("LEASE_WORKER").is_some() {
        worker();
        return;
    }
    let main = run(
        "5 s, 4 processes x 8 threads",
        5000,
        Fault::None,
        false,
        BURST,
    );
    assert_eq!(main.over, None, "the audit");
    // Over the limit most of the time: the grants come near the rate.
    assert!(
        main.utilisation() > 0.8,
        "utilisation {:.3}",
        main.utilisation()
    );

    let killed_redis = run(
        "Redis killed after 1 s",
        2000,
        Fault::KillRedis,
        false,
        KILL_BURST,
    );
    assert_eq!(killed_redis.over, None, "the audit with Redis killed");
    assert!(
        killed_redis.after_fault > 0,
        "leased permits stay valid after the kill"
    );
    // Fail closed: after the leases run out, nothing (at most what was leased when it died:
    // each process at most two leases, each at most max_lease, well under 1,024 here).
    assert!(killed_redis.after_fault <= (PROCESSES * 2 * 1024) as u64);

    let killed_process = run(
        "one process killed after 1 s",
        2000,
        Fault::KillProcess,
        false,
        BURST,
    );
    assert_eq!(killed_process.over, None, "the audit with a process killed");

    let planted = run(
        "planted: leased permits before their slots",
        1500,
        Fault::None,
        true,
        BURST,
    );
    assert!(
        planted.over.is_some(),
        "the planted twin must fail the audit"
    );
    println!("lease_processes: all four runs as expected");
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    None,
    KillRedis,
    KillProcess,
}

/// What one run found.
struct Audit {
    grants: u64,
    millis: u64,
    /// Grants after the fault's instant.
    after_fault: u64,
    /// The first window over the bound, if any.
    over: Option<String>,
    burst: u64,
}

impl Audit {
    /// Grants as a share of what the rate allowed over the run (b + d/I).
    fn utilisation(&self) -> f64 {
        self.grants as f64 / (self.burst + RATE * self.millis / 1000) as f64
    }
}

/// One run of `millis` with `fault` halfway (or none), workers planted or not, on a key of
/// burst `burst`.
fn run(name: &str, millis: u64, fault: Fault, planted: bool, burst: u64) -> Audit {
    let mut server = RedisServer::start();
    let out = server.dir.join("grants");
    std::fs::create_dir_all(&out).unwrap();
    let start = RealTime.now() + 300_000_000; // the workers' common start
    let end = start + millis * 1_000_000;
    let mut workers: Vec<Child> = (0..PROCESSES)
        .map(|id| {
            Command::new(std::env::current_exe().unwrap())
                .env("LEASE_WORKER", id.to_string())
                .env("LEASE_URL", server.url())
                .env("LEASE_OUT", &out)
                .env("LEASE_START", start.to_string())
                .env("LEASE_END", end.to_string())
                .env("LEASE_PLANTED", if planted { "1" } else { "0" })
                .env("LEASE_BURST", burst.to_string())
                .spawn()
                .expect("spawn a worker")
        })
        .collect();
    let mut fault_at = u64::MAX;
    if fault != Fault::None {
        let at = start + millis * 500_000;
        std::thread::sleep(Duration::from_nanos(at.saturating_sub(RealTime.now())));
        fault_at = RealTime.now();
        match fault {
            Fault::KillRedis => server.kill(),
            Fault::KillProcess => workers[0].kill().unwrap(),
            Fault::None => {}
        }
    }
    let mut outputs = Vec::new();
    for (id, w) in workers.into_iter().enumerate() {
        let status = w.wait_with_output().unwrap().status;
        if !(fault == Fault::KillProcess && id == 0) {
            assert!(status.success(), "worker {id}: {status}");
        }
        outputs.push(status);
    }
    let mut times = read_grants(&out);
    let grants = times.len() as u64;
    let after_fault = times.iter().filter(|&&t| t > fault_at).count() as u64;
    let over = over(&mut times, 1_000_000_000 / RATE, burst);
    let audit = Audit {
        grants,
        millis,
        after_fault,
        over,
        burst,
    };
    println!(
        "lease_processes: {name}: {grants} grants in {millis} ms ({:.1} % of b + d/I), {after_fault} after the fault, audit: {}",
        audit.utilisation() * 100.0,
        audit.over.as_deref().unwrap_or("every window within b + d/I")
    );
    audit
}

/// Every grant time every worker thread wrote (8 bytes each, little-endian ns).
fn read_grants(dir: &Path) -> Vec<u64> {
    let mut times = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        times.extend(
            bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap())),
        );
    }
    times
}

/// The first window [t_i, t_j] holding more than b + ⌊(t_j − t_i)/I⌋ grants, if any (every
/// pair of grants is a window's ends: O(n²), a second for this test's 10,000 grants).
fn over(times: &mut [u64], interval_ns: u64, burst: u64) -> Option<String> {
    times.sort_unstable();
    for i in 0..times.len() {
        for j in i..times.len() {
            let count = (j - i + 1) as u64;
            let bound = burst + (times[j] - times[i]) / interval_ns;
            if count > bound {
                return Some(format!(
                    "{count} grants in [{}, {}] ns ({} µs), bound {bound}",
                    times[i],
                    times[j],
                    (times[j] - times[i]) / 1000
                ));
            }
        }
    }
    None
}

/// A worker process: 8 threads take from one leased key until `LEASE_END`, each grant's time
/// written to its own file as it is granted (a process killed mid-run loses at most a grant
/// in flight, which then was never used). A denied thread sleeps its retry-after (at most
/// 2 ms): a client that retries when told, with 32 of them far over the rate.
fn worker() {
    let var = |name: &str| std::env::var(name).unwrap();
    let id: usize = var("LEASE_WORKER").parse().unwrap();
    let out = PathBuf::from(var("LEASE_OUT"));
    let start: u64 = var("LEASE_START").parse().unwrap();
    let end: u64 = var("LEASE_END").parse().unwrap();
    let burst: u64 = var("LEASE_BURST").parse().unwrap();
    let client = redis::Client::open(var("LEASE_URL")).unwrap();
    // A deadline of a second: a refill a loaded machine delays past a short deadline fails
    // closed and marks Redis down for `reprobe_after` (100 ms) in the whole process; at 50 ms
    // and load 45 (issue 43's stress run beside a build) each worker missed it 6-7 times and
    // the run's utilisation fell to 0.795. The killed server's refills fail at once (refused).
    let mut builder = LeasedGcra::builder(Rate::per_second(RATE).unwrap(), OnError::FailClosed)
        .burst(burst)
        .deadline(Duration::from_secs(1))
        .clock(RealTime);
    if var("LEASE_PLANTED") == "1" {
        builder = builder.planted_grant_before_slot();
    }
    let limiter = builder.build(client).unwrap();
    std::thread::sleep(Duration::from_nanos(start.saturating_sub(RealTime.now())));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let limiter = limiter.clone();
            let path = out.join(format!("{id}-{t}"));
            std::thread::spawn(move || {
                let mut file = std::fs::File::create(path).unwrap();
                while RealTime.now() < end {
                    match limiter.try_acquire_n_timed("hot", 1) {
                        Ok(at) => file.write_all(&at.to_le_bytes()).unwrap(),
                        Err(denied) => std::thread::sleep(
                            denied
                                .retry_after()
                                .unwrap_or(Duration::MAX)
                                .min(Duration::from_millis(2)),
                        ),
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = limiter.stats();
    println!(
        "lease_processes: worker {id}: {} leases, {} permits leased, {} round trips, {} skipped, {} errors",
        s.leases, s.leased, s.round_trips, s.skipped, s.errors
    );
}
