//! GcraMulti under loom: k rates in a pool of snapshots, the current one named by one word.
//! With the fewest snapshots allowed (3), spares run out and snapshots are reclaimed while
//! other threads read them: grants never exceed any rate's bound, a denial charges no rate,
//! and no grant is lost. The planted `StoreNotCas` (publishing with a store) must fail.
#![cfg(hotlimit_loom)]

mod common;

use std::time::Duration;

use hotlimit::__planted_gcra_multi::{remaining_each, StoreNotCas};
use hotlimit::{GcraMulti, ManualClock, Rate};

/// Three rates with I = 10, 20, 30 ns and the given bursts; 3 snapshots.
fn limiter(bursts: [u64; 3], clock: &ManualClock) -> GcraMulti<ManualClock> {
    let mut b = GcraMulti::builder().snapshots(3).clock(clock.clone());
    for (i, burst) in bursts.into_iter().enumerate() {
        let rate = Rate::new(1, Duration::from_nanos(10 * (i as u64 + 1))).unwrap();
        b = b.rate_with_burst(rate, burst);
    }
    b.build().unwrap()
}

/// Three threads race for single permits on a frozen clock with bursts 3, 2, 4: exactly 2 are
/// granted, and every rate holds exactly two grants' worth (the refused call charged none).
#[test]
fn frozen_clock_three_threads_exactly_the_smallest_burst() {
    common::model_on_a_clock(
        |clock| limiter([3, 2, 4], clock),
        |g, _| {
            assert_eq!(common::granted_of_three(g), 2);
            assert_eq!(remaining_each(g, 0), vec![1, 0, 2]);
        },
    );
}

/// Two threads ask for 2 each with bursts 3, 4, 5: exactly one wins, and the loser charged
/// nothing.
#[test]
fn frozen_clock_weighted_all_or_nothing() {
    common::model_on_a_clock(
        |clock| limiter([3, 4, 5], clock),
        |g, _| {
            let (mine, theirs) = common::two_weighted_by_two(g);
            assert!(mine ^ theirs, "mine={mine} theirs={theirs}");
            assert_eq!(remaining_each(g, 0), vec![1, 2, 3]);
        },
    );
}

/// Two workers take single permits (reading the clock before each call) while the main thread
/// advances it by 10 ns; bursts 1, 2, 2. The grants keep every bound, and the final state is
/// the replay of the grants in time order (no grant lost, no refused call charged).
#[test]
fn advancing_clock_keeps_every_bound_and_loses_nothing() {
    common::model_on_a_clock(
        |clock| limiter([1, 2, 2], clock),
        |g, clock| {
            let grants = common::grants_while_the_clock_advances(g, clock, |g, now| {
                g.try_acquire_at(now).is_ok()
            });
            // Times in [0, 10]: rate 1 allows 1 + 10/10 = 2.
            assert!((1..=2).contains(&grants.len()), "grants {grants:?}");
            let expect: Vec<u64> = [(10u64, 10u64), (20, 40), (30, 60)]
                .into_iter()
                .map(|(i, tol)| {
                    let s = grants.iter().fold(0u64, |s, &t| s.max(t) + i);
                    tol.saturating_sub(s.saturating_sub(10)) / i
                })
                .collect();
            assert_eq!(remaining_each(g, 10), expect, "grants {grants:?}");
        },
    );
}

/// The planted bug: publishing by a store instead of a CAS. Two threads decide on the same
/// snapshot with bursts 1, 1, 1, both store their own, and both are granted.
#[test]
#[should_panic(expected = "over-admitted")]
fn store_instead_of_cas_is_caught() {
    common::model_on_a_clock(
        |clock| StoreNotCas(limiter([1, 1, 1], clock)),
        |g, _| {
            let (mine, theirs) = common::two_racing(g, |g| g.try_acquire_at(0).is_ok());
            assert!(
                !(mine && theirs),
                "over-admitted: both granted with burst 1"
            );
        },
    );
}
