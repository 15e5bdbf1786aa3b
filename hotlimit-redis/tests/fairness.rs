//! Fair shares with the defaults: processes asking as fast as they can on one leased key get
//! even shares in every second, lease sizes following the rate (one `lease_time` of it, 20 ms),
//! not a permit count. Each "process" is a set of threads with its own `LeasedGcra` and its own
//! connections (separate OS processes are in `lease_processes.rs`).
//!
//! Asserted (bounds on counts, no timing): every process gets at least 3/4 of its fair share
//! in every whole second after the first (25 % of all grants with 3 processes, 18.75 % with
//! 4), the key's rate is used to at least 95 % after the first second, and at 50,000/s a round
//! trip serves at least 100 grants.

mod common;

use std::time::Duration;

use hotlimit::{Clock, Rate};
use hotlimit_redis::{LeasedGcra, OnError, RedisLimiter, SyncConnection};

use common::chaos::RealTime;
use common::RedisServer;

/// What a run found: grants per process per whole second, and round trips.
struct Shares {
    per_second: Vec<Vec<u64>>,
    round_trips: u64,
    grants: u64,
}

fn run(rate: u64, processes: usize, threads: usize, seconds: u64) -> Shares {
    let server = RedisServer::start();
    let start = RealTime.now() + 100_000_000;
    let end = start + seconds * 1_000_000_000;
    let limiters: Vec<_> = (0..processes)
        .map(|_| {
            LeasedGcra::builder(Rate::per_second(rate).unwrap(), OnError::FailClosed)
                .clock(RealTime)
                .build(server.client())
                .unwrap()
        })
        .collect();
    let handles: Vec<_> = limiters
        .iter()
        .flat_map(|l| (0..threads).map(move |_| l.clone()))
        .map(|l| {
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_nanos(start.saturating_sub(RealTime.now())));
                let mut seconds_seen = vec![0u64; seconds as usize];
                loop {
                    let now = RealTime.now();
                    if now >= end {
                        break;
                    }
                    match l.try_acquire_n_timed("shared", 1) {
                        Ok(at) if at >= start && at < end => {
                            seconds_seen[((at - start) / 1_000_000_000) as usize] += 1
                        }
                        Ok(_) => {}
                        Err(d) => std::thread::sleep(
                            d.retry_after()
                                .unwrap_or(Duration::MAX)
                                .min(Duration::from_millis(2)),
                        ),
                    }
                }
                seconds_seen
            })
        })
        .collect();
    let per_thread: Vec<Vec<u64>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let mut per_second = vec![vec![0u64; processes]; seconds as usize];
    for (t, counts) in per_thread.iter().enumerate() {
        for (s, c) in counts.iter().enumerate() {
            per_second[s][t / threads] += c;
        }
    }
    let round_trips = limiters.iter().map(|l| l.stats().round_trips).sum();
    let grants = per_second.iter().flatten().sum();
    Shares {
        per_second,
        round_trips,
        grants,
    }
}

fn check(name: &str, s: &Shares, rate: u64, processes: usize) {
    println!(
        "fairness: {name}: per second per process {:?}, {} grants, {} round trips",
        s.per_second, s.grants, s.round_trips
    );
    for (i, second) in s.per_second.iter().enumerate().skip(1) {
        let total: u64 = second.iter().sum();
        assert!(
            total * 100 >= rate * 95,
            "{name}: second {i}: {total} grants, under 95 % of {rate}"
        );
        for (p, &c) in second.iter().enumerate() {
            // At least 3/4 of a fair share: c / total >= 3 / (4 × processes).
            assert!(
                c * 4 * processes as u64 >= total * 3,
                "{name}: second {i}: process {p} got {c} of {total}"
            );
        }
    }
}

#[test]
fn three_processes_at_300_per_second_share_every_second() {
    let s = run(300, 3, 1, 5);
    check("3 x 1 at 300/s", &s, 300, 3);
}

#[test]
fn four_processes_of_two_threads_at_50000_per_second_share_every_second() {
    let s = run(50_000, 4, 2, 3);
    check("4 x 2 at 50,000/s", &s, 50_000, 4);
    assert!(
        s.round_trips * 100 <= s.grants,
        "{} round trips for {} grants",
        s.round_trips,
        s.grants
    );
}

/// Leased and per-decision callers on one over-limit key (2 processes of each, 2,000/s, 3 s):
/// a per-decision caller refused by the leases' queue marks the key waiting, and while the
/// mark lives leases stop at the bucket (τ), so both kinds meet at its edge (`waiting.rs`).
/// Measured: 1,590–2,106 per leased process, 2,055–2,350 per decision (before the mark: 3–232
/// per decision against 3,400–4,600 leased; under issue 43's stress load, down to 750 of
/// 7,964 for one per-decision process: its every attempt is a round trip, a leased one's a
/// CAS). Asserted: the key's bound holds for all together, and every process, of either kind,
/// gets at least 1/40 of the grants (a fair share is 1/4; before the mark, under load, a
/// per-decision process got under 1/300).
#[test]
fn leased_and_per_decision_callers_share_as_documented() {
    let server = RedisServer::start();
    let rate = 2000;
    let end = RealTime.now() + 3_000_000_000;
    let handles: Vec<_> = (0..4)
        .map(|p| {
            let client = server.client();
            std::thread::spawn(move || {
                let mut n = 0u64;
                // Denials by kind, for a failure's message: (no retry-after, with one).
                let mut denied = (0u64, 0u64);
                let wait = |denied: &mut (u64, u64), d: Option<Duration>| {
                    if d.is_some() {
                        denied.1 += 1;
                    } else {
                        denied.0 += 1;
                    }
                    std::thread::sleep(d.unwrap_or(Duration::MAX).min(Duration::from_millis(2)))
                };
                if p < 2 {
                    let l =
                        LeasedGcra::builder(Rate::per_second(rate).unwrap(), OnError::FailClosed)
                            .build(client)
                            .unwrap();
                    while RealTime.now() < end {
                        match l.try_acquire_n("mixed", 1) {
                            Ok(()) => n += 1,
                            Err(d) => wait(&mut denied, d.retry_after()),
                        }
                    }
                    (n, format!("denials {denied:?}, {:?}", l.stats()))
                } else {
                    let l =
                        RedisLimiter::gcra(Rate::per_second(rate).unwrap(), OnError::FailClosed)
                            .build()
                            .unwrap();
                    let mut con = SyncConnection::new(client);
                    while RealTime.now() < end {
                        let d = l.decide_blocking(&mut con, "mixed", 1).unwrap();
                        match d.denial() {
                            None => n += 1,
                            Some(d) => wait(&mut denied, d.retry_after()),
                        }
                    }
                    (n, format!("denials {denied:?}, {:?}", l.stats()))
                }
            })
        })
        .collect();
    let (counts, stats): (Vec<u64>, Vec<String>) =
        handles.into_iter().map(|h| h.join().unwrap()).unzip();
    let total: u64 = counts.iter().sum();
    println!(
        "fairness: mixed key: leased {:?}, per decision {:?}",
        &counts[..2],
        &counts[2..]
    );
    // Each process's denials (without and with a retry-after) and counters, for a failure.
    let stats = stats.join("\n  ");
    // b + 3 s of the rate (+ the run's end, read by 4 threads at slightly different times).
    assert!(total <= rate + 3 * rate + 8, "{total} grants\n  {stats}");
    // Neither kind starved: at least 1/40 of the grants each.
    assert!(
        counts.iter().all(|&c| c * 40 >= total),
        "{counts:?}\n  {stats}"
    );
}
