//! GcraPair under loom: the two TATs in one 16-byte word, one CAS per grant. Concurrent grants
//! never exceed either rate's bound, a denial charges neither rate, and no update is lost. The
//! planted `SplitGcraPair` (the same decision with the halves in two words, each advanced by
//! its own CAS) must fail: it charges the first rate for requests the second denied.
//!
//! The 16-byte word is the crate's loom stand-in for `AtomicU128` (see `src/sync.rs`): every
//! load and CAS of the whole word is a scheduling point, so loom explores every interleaving
//! of whole-word operations.
#![cfg(hotlimit_loom)]

mod common;

use std::time::Duration;

use hotlimit::__planted_gcra_pair::{remaining_each, SplitGcraPair};
use hotlimit::{GcraPair, ManualClock, Rate};

/// I₁ = 10 ns, I₂ = 20 ns; bursts as given.
fn limiter(b1: u64, b2: u64, clock: &ManualClock) -> GcraPair<ManualClock> {
    GcraPair::builder(
        Rate::new(1, Duration::from_nanos(10)).unwrap(),
        Rate::new(1, Duration::from_nanos(20)).unwrap(),
    )
    .first_burst(b1)
    .second_burst(b2)
    .clock(clock.clone())
    .build()
    .unwrap()
}

/// Three threads race for single permits on a frozen clock with bursts 3 and 2: exactly
/// min(3, 2) = 2 win, and each half holds exactly two grants' worth: the denied third call
/// charged neither rate (the first rate has 1 left, not 0).
#[test]
fn frozen_clock_three_threads_exactly_the_smaller_burst() {
    common::model_on_a_clock(
        |clock| limiter(3, 2, clock),
        |p, _| {
            assert_eq!(common::granted_of_three(p), 2);
            assert_eq!(remaining_each(p, 0), (1, 0));
        },
    );
}

/// Weighted requests from two threads (2 each, bursts 3 and 4): exactly one wins, and the
/// loser charged nothing: 1 and 2 permits are left.
#[test]
fn frozen_clock_weighted_all_or_nothing() {
    common::model_on_a_clock(
        |clock| limiter(3, 4, clock),
        |p, _| {
            let (mine, theirs) = common::two_weighted_by_two(p);
            assert!(mine ^ theirs, "mine={mine} theirs={theirs}");
            assert_eq!(remaining_each(p, 0), (1, 2));
        },
    );
}

/// Two workers take permits (reading the clock before each call) while the main thread
/// advances it by 10 ns. Bursts 1 and 2, I₁ = 10, I₂ = 20: whatever the interleaving, the
/// recorded grants keep both bounds, and the final state is the sequential replay of the
/// grants in time order (no update lost, no denied call charged).
#[test]
fn advancing_clock_keeps_both_bounds_and_loses_nothing() {
    common::model_on_a_clock(
        |clock| limiter(1, 2, clock),
        |p, clock| {
            let grants = common::grants_while_the_clock_advances(p, clock, |p, now| {
                p.try_acquire_at(now).is_ok()
            });
            // Times lie in [0, 10]: rate 1 allows b₁ + 10/I₁ = 2, rate 2 allows b₂ + 10/20 = 2.
            assert!((1..=2).contains(&grants.len()), "grants {grants:?}");
            // With one permit per call and these bursts, every order of the same grants gives the
            // same final TATs: S = max(S, t) + I for each.
            let s1 = grants.iter().fold(0u64, |s, &t| s.max(t) + 10);
            let s2 = grants.iter().fold(0u64, |s, &t| s.max(t) + 20);
            let left = |s: u64, tol: u64, i: u64| tol.saturating_sub(s.saturating_sub(10)) / i;
            assert_eq!(
                remaining_each(p, 10),
                (left(s1, 10, 10), left(s2, 40, 20)),
                "grants {grants:?}"
            );
        },
    );
}

/// The planted twin: two threads, one permit each, bursts 2 and 1. One is granted; the other
/// passes the first rate's CAS and is denied by the second, which leaves the first rate
/// charged for a refused request. The check that the refused call charged nothing must fail.
#[test]
#[should_panic(expected = "charged for a denied request")]
fn split_twin_burns_quota_and_is_caught() {
    common::model_on_a_clock(
        |clock| SplitGcraPair::of(&limiter(2, 1, clock)),
        |p, _| {
            let (mine, theirs) = common::two_racing(p, |p| p.try_acquire_at(0).is_ok());
            assert!(!(mine && theirs), "over-admitted: both granted with b₂ = 1");
            assert_eq!(
                p.remaining_at(0),
                (1, 0),
                "the first rate was charged for a denied request"
            );
        },
    );
}
