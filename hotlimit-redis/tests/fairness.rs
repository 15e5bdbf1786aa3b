//! Fair shares with the defaults: processes asking as fast as they can on one leased key get
//! even shares in every second, lease sizes following the rate (one `lease_time` of it, 20 ms),
//! not a permit count. Each "process" is a set of threads with its own `LeasedGcra` and its own
//! connections (separate OS processes are in `lease_processes.rs`).
//!
//! Asserted (bounds on counts, no timing): in every whole second after the first, the key's
//! rate is used to at least 95 % and every process gets at least 3/4 of its fair share (25 %
//! of all grants with 3 processes, 18.75 % with 4), each of the time its callers were asking;
//! at 50,000/s a round trip serves at least 100 grants.
//!
//! "Asking" is measured, not assumed: a caller refused sleeps for what it asked (the
//! `retry_after`, at most 2 ms); time past that before its next call (the machine ran
//! something else: issue 43's stress run, two busy threads on two cores, once left 21 of a
//! last second's 300 permits unasked) is silence. A second's bar is scaled by the time in it
//! when not every caller was silent (for the key) or not every thread of the process (for a
//! share); time inside a call is never silence, so a limiter that blocks or wastes its rate
//! is still caught. A run with no silence is held to the plain bars.

mod common;

use std::time::Duration;

use hotlimit::{Clock, Rate};
use hotlimit_redis::{LeasedGcra, OnError, RedisLimiter, SyncConnection};

use common::chaos::RealTime;
use common::RedisServer;

const SECOND: u64 = 1_000_000_000;

/// What a run found: grants per process per whole second, each thread's silences, and round
/// trips.
struct Shares {
    per_second: Vec<Vec<u64>>,
    /// Per process, per thread: the spans `[from, to)` (ns, `RealTime`) it was not asking.
    silences: Vec<Vec<Vec<(u64, u64)>>>,
    start: u64,
    round_trips: u64,
    grants: u64,
}

/// What one caller thread saw: grants per second, and its silences.
struct Caller {
    seconds: Vec<u64>,
    silences: Vec<(u64, u64)>,
}

fn run(rate: u64, processes: usize, threads: usize, seconds: u64) -> Shares {
    let server = RedisServer::start();
    let start = RealTime.now() + 100_000_000;
    let end = start + seconds * SECOND;
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
                let mut c = Caller {
                    seconds: vec![0u64; seconds as usize],
                    silences: Vec::new(),
                };
                // When this thread should have been asking again: its last call's return, plus
                // the sleep it asked for after a refusal (at first, the run's start: a thread
                // that starts late was silent).
                let mut due = start;
                loop {
                    let now = RealTime.now();
                    // Past what it asked, by more than a timer's slack (0.5 ms): silence.
                    if now > due + 500_000 {
                        c.silences.push((due.max(start), now.min(end)));
                    }
                    if now >= end {
                        break;
                    }
                    let granted = l.try_acquire_n_timed("shared", 1);
                    let back = RealTime.now();
                    due = back;
                    match granted {
                        Ok(at) if at >= start && at < end => {
                            c.seconds[((at - start) / SECOND) as usize] += 1
                        }
                        Ok(_) => {}
                        Err(d) => {
                            let nap = d
                                .retry_after()
                                .unwrap_or(Duration::MAX)
                                .min(Duration::from_millis(2));
                            due = back + nap.as_nanos() as u64;
                            std::thread::sleep(nap);
                        }
                    }
                }
                c.silences.retain(|&(from, to)| from < to);
                c
            })
        })
        .collect();
    let callers: Vec<Caller> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let mut per_second = vec![vec![0u64; processes]; seconds as usize];
    let mut silences = vec![Vec::new(); processes];
    for (t, c) in callers.into_iter().enumerate() {
        for (s, n) in c.seconds.iter().enumerate() {
            per_second[s][t / threads] += n;
        }
        silences[t / threads].push(c.silences);
    }
    let round_trips = limiters.iter().map(|l| l.stats().round_trips).sum();
    let grants = per_second.iter().flatten().sum();
    Shares {
        per_second,
        silences,
        start,
        round_trips,
        grants,
    }
}

/// The time (ns) within `[from, to)` when every thread in `threads` was silent: a sweep over
/// their spans (each thread's are disjoint, so a point is everyone's silence where the count
/// of open spans reaches the thread count).
fn all_silent(threads: &[&Vec<(u64, u64)>], from: u64, to: u64) -> u64 {
    let mut edges: Vec<(u64, i64)> = Vec::new();
    for spans in threads {
        for &(a, b) in spans.iter() {
            let (a, b) = (a.max(from), b.min(to));
            if a < b {
                edges.push((a, 1));
                edges.push((b, -1));
            }
        }
    }
    // Ends before starts at one instant: touching spans do not overlap.
    edges.sort_unstable();
    let (mut open, mut since, mut silent) = (0i64, 0u64, 0u64);
    for (at, step) in edges {
        if open == threads.len() as i64 {
            silent += at - since;
        }
        open += step;
        since = at;
    }
    silent
}

/// `bar` scaled by the part of a second that was not silence.
fn scaled(bar: u64, silent: u64) -> u64 {
    (u128::from(bar) * u128::from(SECOND - silent.min(SECOND)) / u128::from(SECOND)) as u64
}

fn check(name: &str, s: &Shares, rate: u64, processes: usize) {
    let silent = |threads: Vec<&Vec<(u64, u64)>>, i: usize| {
        let from = s.start + i as u64 * SECOND;
        all_silent(&threads, from, from + SECOND)
    };
    let key_silence: Vec<u64> = (0..s.per_second.len())
        .map(|i| silent(s.silences.iter().flatten().collect(), i))
        .collect();
    println!(
        "fairness: {name}: per second per process {:?}, {} grants, {} round trips, every \
         caller silent {:?} ms",
        s.per_second,
        s.grants,
        s.round_trips,
        key_silence
            .iter()
            .map(|n| n / 1_000_000)
            .collect::<Vec<_>>()
    );
    for (i, second) in s.per_second.iter().enumerate().skip(1) {
        let total: u64 = second.iter().sum();
        // At least 95 % of the rate, of the time someone was asking.
        let bar = scaled(rate * 95, key_silence[i]);
        assert!(
            total * 100 >= bar,
            "{name}: second {i}: {total} grants, under 95 % of {rate} (every caller silent \
             {} µs of it)",
            key_silence[i] / 1_000
        );
        for (p, &c) in second.iter().enumerate() {
            // At least 3/4 of a fair share, c / total >= 3 / (4 × processes), of the time
            // this process was asking.
            let quiet = silent(s.silences[p].iter().collect(), i);
            assert!(
                c * 4 * processes as u64 >= scaled(total * 3, quiet),
                "{name}: second {i}: process {p} got {c} of {total} (silent {} µs of it)",
                quiet / 1_000
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
