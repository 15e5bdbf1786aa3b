//! Gcra under loom: concurrent grants never exceed the guarantee and no update is lost. The
//! planted `RacyGcra` (load, compute, store) must fail the same model.
#![cfg(hotlimit_loom)]

use std::time::Duration;

use hotlimit::__planted_gcra::RacyGcra;
use hotlimit::{Gcra, Limiter, ManualClock, Rate};
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;

/// I = 10 ns; burst as given.
fn limiter(burst: u64, clock: &ManualClock) -> Gcra<ManualClock> {
    Gcra::builder(Rate::new(1, Duration::from_nanos(10)).unwrap())
        .burst(burst)
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// Three threads race for a burst of 2 on a frozen clock: exactly 2 win, and the state
/// afterwards is exactly two grants' worth (no update lost).
#[test]
fn frozen_clock_three_threads_exactly_burst() {
    loom::model(|| {
        let clock = ManualClock::new();
        let g = Arc::new(limiter(2, &clock));
        let granted = Arc::new(AtomicU64::new(0));
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let (g, granted) = (g.clone(), granted.clone());
                thread::spawn(move || {
                    if g.try_acquire().is_ok() {
                        // Relaxed: read after join.
                        granted.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(granted.load(Ordering::Relaxed), 2);
        assert_eq!(g.remaining_at(0), 0);
        // TAT is exactly 2·I: the next permit frees at 10 ns, not earlier.
        assert!(g.try_acquire_at(9).is_err());
        assert!(g.try_acquire_at(10).is_ok());
    });
}

/// Weighted requests from two threads: all-or-nothing, never past the burst.
#[test]
fn frozen_clock_weighted_all_or_nothing() {
    loom::model(|| {
        let clock = ManualClock::new();
        let g = Arc::new(limiter(3, &clock));
        let g2 = g.clone();
        let t = thread::spawn(move || g2.try_acquire_n(2).is_ok());
        let mine = g.try_acquire_n(2).is_ok();
        let theirs = t.join().unwrap();
        // 2 + 2 > 3: exactly one of them wins, and 1 permit is left.
        assert!(mine ^ theirs, "mine={mine} theirs={theirs}");
        assert_eq!(g.remaining_at(0), 1);
    });
}

/// Two threads take permits while the main thread advances the clock by one interval. Each
/// worker reads the clock and records the `now` of every grant. Whatever the interleaving:
/// the grants stay within b + d/I, and no update is lost: the final state equals the GCRA
/// replay of the recorded grants (checked by whether one more request at t = 10 fits).
#[test]
fn advancing_clock_never_exceeds_bound_or_loses_updates() {
    loom::model(|| {
        let clock = ManualClock::new();
        let g = Arc::new(limiter(1, &clock));
        let workers: Vec<_> = [2, 1]
            .into_iter()
            .map(|tries| {
                let (g, clock) = (g.clone(), clock.clone());
                thread::spawn(move || {
                    let mut grants = Vec::new();
                    for _ in 0..tries {
                        let now = hotlimit::Clock::now(&clock);
                        if g.try_acquire_at(now).is_ok() {
                            grants.push(now);
                        }
                    }
                    grants
                })
            })
            .collect();
        clock.advance(Duration::from_nanos(10));
        let mut grants: Vec<u64> = workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        grants.sort_unstable();
        // All times lie in [0, 10]: at most b + 10/I = 2 grants; the first call always wins.
        assert!((1..=2).contains(&grants.len()), "grants {grants:?}");
        // Replay: S = max(S, now) + I. With burst 1 the grants that fit are the same in any
        // order, and so is the final S.
        let tat = grants.iter().fold(0u64, |s, &t| s.max(t) + 10);
        let expect_more = tat.max(10) + 10 <= 10 + 10;
        let more = g.try_acquire_at(10).is_ok();
        assert_eq!(more, expect_more, "grants {grants:?}, then more={more}");
    });
}

/// The planted bug: two threads both load TAT 0 and both store I, granting 2 with burst 1.
/// Loom must find that interleaving.
#[test]
#[should_panic(expected = "over-admitted")]
fn racy_gcra_is_caught() {
    loom::model(|| {
        let clock = ManualClock::new();
        let g = Arc::new(RacyGcra(limiter(1, &clock)));
        let g2 = g.clone();
        let t = thread::spawn(move || g2.try_acquire().is_ok());
        let mine = g.try_acquire().is_ok();
        let theirs = t.join().unwrap();
        assert!(
            !(mine && theirs),
            "over-admitted: both granted with burst 1"
        );
    });
}
