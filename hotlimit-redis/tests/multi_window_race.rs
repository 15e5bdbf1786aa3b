//! Several hard windows in Redis under racing connections and under faults, on the server's
//! real clock: 8 threads (each its own limiter and connection, as separate processes) on one
//! key, and 4 while the server is killed and restarted or paused. Every window is audited:
//! each grant is stamped before its request left and after its answer came (on the system's
//! real-time clock, the clock of Redis's `TIME` on this machine), and grants whose whole
//! calls lie within one period certainly share a window of that length, so they must number
//! at most its limit. Each audit has a planted twin (limit + 1 grants at one instant) that it
//! must catch. Windows that never fill hold, in Redis, exactly the permits granted: no refused
//! request was charged. Assertions are bounds and counts, never timings.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hotlimit::{Clock, Rate};
use hotlimit_redis::{OnError, RedisLimiter, SyncConnection};
use redis::Commands;

use common::chaos::{hammer, RealTime};
use common::RedisServer;

/// A grant's call: real-time ns before the request left and after the answer came.
type Call = (u64, u64);

/// The most grants that certainly share one window of `period_ns`: for each grant (sorted by
/// the start of its call), those that started no earlier and ended before its start + period.
fn busiest(calls: &[Call], period_ns: u64) -> usize {
    let mut sorted = calls.to_vec();
    sorted.sort_unstable();
    (0..sorted.len())
        .map(|i| {
            let (start, _) = sorted[i];
            sorted[i..]
                .iter()
                .filter(|&&(_, end)| end < start + period_ns)
                .count()
        })
        .max()
        .unwrap_or(0)
}

/// Audits every window `(limit, period)` of `calls`: at most `limit + allowed` share one
/// window, and the planted twin (limit + allowed + 1 more at one instant) is caught.
fn audit(name: &str, calls: &[Call], windows: &[(usize, Duration)], allowed: usize) {
    for &(limit, period) in windows {
        let period_ns = period.as_nanos() as u64;
        let worst = busiest(calls, period_ns);
        println!(
            "{name}: {} grants, busiest window of {period:?}: {worst} (limit {limit}, allowed {})",
            calls.len(),
            limit + allowed
        );
        assert!(
            worst <= limit + allowed,
            "{name}: {worst} grants in one window of {period:?}, limit {limit} + {allowed}"
        );
        let at = calls[calls.len() / 2];
        let mut twin = calls.to_vec();
        twin.extend(std::iter::repeat_n((at.0, at.0), limit + allowed + 1));
        assert!(
            busiest(&twin, period_ns) > limit + allowed,
            "{name}: the planted twin passed the audit of {period:?}"
        );
    }
}

/// The permits each window of `key` holds in Redis: a log's list length, a ring's bucket
/// counts (every field but `x`). `rings[i]`: window i is a ring.
fn held(server: &RedisServer, limiter: &RedisLimiter, rings: &[bool], key: &str) -> Vec<u64> {
    let mut con = server.con();
    limiter
        .window_keys(key)
        .iter()
        .zip(rings)
        .map(|(k, &ring)| {
            if ring {
                let h: Vec<(String, u64)> = con.hgetall(k).unwrap();
                h.iter().filter(|(f, _)| f != "x").map(|(_, c)| c).sum()
            } else {
                con.llen(k).unwrap()
            }
        })
        .collect()
}

/// The windows of the racing test: two that fill (a ring of 20 per 50 ms, a log of 50 per
/// 200 ms) and two that never do in a run (100,000 per hour, a ring and a log), whose Redis
/// keys then count every grant.
fn racing_limiter() -> RedisLimiter {
    RedisLimiter::multi_window(OnError::FailClosed)
        .window(Rate::new(20, Duration::from_millis(50)).unwrap())
        .exact(Rate::new(50, Duration::from_millis(200)).unwrap())
        .window(Rate::per_hour(100_000).unwrap())
        .exact(Rate::per_hour(100_000).unwrap())
        .deadline(Duration::from_secs(2))
        .build()
        .unwrap()
}

/// 8 threads, each its own limiter and connection, on one key for 600 ms, and on until a
/// request was refused (up to 10 s: on a loaded machine 8 debug threads once asked slower
/// than the 400 a second the ring allows, 3 runs in 200 of issue 43's stress): every window
/// within its limit, and the never-full windows hold exactly the grants (all or nothing under
/// racing: no refused request charged them).
#[test]
fn eight_connections_on_one_key_keep_every_window() {
    let server = RedisServer::start();
    let calls = Arc::new(Mutex::new(Vec::<Call>::new()));
    let start = RealTime.now();
    let (end, hard_end) = (start + 600_000_000, start + 10_000_000_000);
    let any_refused = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (client, calls) = (server.client(), calls.clone());
            let any_refused = any_refused.clone();
            std::thread::spawn(move || {
                let limiter = racing_limiter();
                let mut con = SyncConnection::new(client);
                let (mut mine, mut refused) = (Vec::new(), 0u64);
                let go_on = |now: u64| {
                    // Relaxed: a flag that only ends the run; the counts go back by `join`.
                    now < end || (now < hard_end && !any_refused.load(Ordering::Relaxed))
                };
                while go_on(RealTime.now()) {
                    let before = RealTime.now();
                    let d = limiter.decide_blocking(&mut con, "hot", 1).unwrap();
                    if d.is_allowed() {
                        mine.push((before, RealTime.now()));
                    } else {
                        refused += 1;
                        // Relaxed: as above.
                        any_refused.store(true, Ordering::Relaxed);
                    }
                }
                assert_eq!(limiter.stats().errors, 0);
                calls.lock().unwrap().extend(mine);
                refused
            })
        })
        .collect();
    let refused: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let calls = calls.lock().unwrap().clone();
    assert!(refused > 0, "the windows were never full");
    audit(
        "8 connections",
        &calls,
        &[
            (20, Duration::from_millis(50)),
            (50, Duration::from_millis(200)),
        ],
        0,
    );
    let held = held(
        &server,
        &racing_limiter(),
        &[true, false, true, false],
        "hot",
    );
    let granted = calls.len() as u64;
    assert_eq!(
        &held[2..],
        &[granted, granted],
        "never-full windows: {held:?}"
    );
}

/// The windows of the fault runs: a ring of 30 per 100 ms and a log of 100 per second (full
/// before the fault at 0.5 s and for a second from its first grants: a server that lost it
/// lets up to 100 more in at once).
const FAULT_WINDOWS: [(usize, Duration); 2] = [
    (30, Duration::from_millis(100)),
    (100, Duration::from_secs(1)),
];

/// 4 "processes" for 1.6 s with the fault at 0.5 s; every grant's call. (The log is full
/// until its first stamps leave, a second after them: 1.6 s leaves room for a late start on a
/// loaded machine before the grants after the fault are checked for.)
fn fault_run(server: &mut RedisServer, fault: impl FnOnce(&mut RedisServer)) -> Vec<Call> {
    let calls = Arc::new(Mutex::new(Vec::<Call>::new()));
    type Process = Box<dyn FnMut() -> Result<u64, Duration> + Send>;
    let processes: Vec<Process> = (0..4)
        .map(|_| {
            let limiter = RedisLimiter::multi_window(OnError::FailClosed)
                .window(Rate::new(30, FAULT_WINDOWS[0].1).unwrap())
                .exact(Rate::new(100, FAULT_WINDOWS[1].1).unwrap())
                .deadline(Duration::from_millis(50))
                .reprobe_after(Duration::from_millis(10))
                .build()
                .unwrap();
            let mut con = SyncConnection::new(server.client());
            let calls = calls.clone();
            Box::new(move || {
                let before = RealTime.now();
                let d = limiter.decide_blocking(&mut con, "hot", 1).unwrap();
                let after = RealTime.now();
                if d.is_allowed() {
                    calls.lock().unwrap().push((before, after));
                    Ok(after)
                } else {
                    Err(d
                        .denial()
                        .and_then(|x| x.retry_after())
                        .unwrap_or(Duration::from_millis(1)))
                }
            }) as Process
        })
        .collect();
    let g = hammer(processes, 1600, 500, || fault(server));
    assert!(g.after_fault > 0, "no grant after the fault");
    std::mem::take(&mut *calls.lock().unwrap())
}

/// A server killed (SIGKILL) mid-traffic and restarted from its append-only file (fsync on
/// every write, so every grant it answered is on disk): no window over its limit across the
/// fault. Without persistence the lost windows restart empty: at most one limit more in a
/// window that spans the loss (a sliding log's documented cost), and no more.
#[test]
fn a_killed_and_restarted_server_keeps_every_window() {
    const AOF: [&str; 4] = ["--appendonly", "yes", "--appendfsync", "always"];
    let mut server = RedisServer::launch(0, &AOF);
    let calls = fault_run(&mut server, |s| s.restart_with(&AOF));
    audit("kill, restart from the AOF", &calls, &FAULT_WINDOWS, 0);

    let mut server = RedisServer::start();
    let calls = fault_run(&mut server, RedisServer::restart);
    for &(limit, period) in &FAULT_WINDOWS {
        audit("kill, restart empty", &calls, &[(limit, period)], limit);
    }
}

/// A server paused (SIGSTOP) for 300 ms mid-traffic, failing closed meanwhile: no state is
/// lost, no window over its limit.
#[test]
fn a_paused_server_keeps_every_window() {
    let mut server = RedisServer::start();
    let calls = fault_run(&mut server, |s| {
        s.stop();
        std::thread::sleep(Duration::from_millis(300));
        s.resume();
    });
    audit("paused 300 ms", &calls, &FAULT_WINDOWS, 0);
}
