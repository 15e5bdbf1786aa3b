//! MultiWindow under loom: the all-or-nothing step on the real protocol (charge each window by
//! its own CAS, give back every charge on a refusal; two rings: one CAS of the pair's word).
//! Racing calls on a frozen clock grant exactly what the tightest window allows and leave
//! every other window charged with the grants only (a refused call charges nothing); a
//! refusal whose give-back races a ring's roll to a new bucket never lets a window
//! over-admit; a pair's grant racing a roll of either ring is counted once in both. The
//! planted `ChargeAsYouGo` (charge in turn, never give back), `GiveBackToAnyBucket` and
//! `StaleFreeze` (a roll that stores the pair's word as it read it) must fail their models.
#![cfg(hotlimit_loom)]

use std::time::Duration;

use hotlimit::__planted_multi_window::{ChargeAsYouGo, GiveBackToAnyBucket, StaleFreeze};
use hotlimit::{ManualClock, MultiWindow, Rate};
use loom::sync::Arc;
use loom::thread;

fn rate(limit: u64, period: u64) -> Rate {
    Rate::new(limit, Duration::from_nanos(period)).unwrap()
}

/// A ring of 2 per 4 ns (2 buckets) before a ring of 1 per 4 ns, on `clock`: a pair, granted
/// by one CAS of its shared word.
fn two_rings(clock: &ManualClock) -> MultiWindow<ManualClock> {
    MultiWindow::builder()
        .window_with_buckets(rate(2, 4), 2)
        .window_with_buckets(rate(1, 4), 2)
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// Two threads each take one permit on a frozen clock (through the planted twin if
/// `planted`, which grants each ring by its own CAS): exactly one is granted, and the first
/// window (room for 2) is charged with that grant only, whatever the interleaving.
fn frozen_two(planted: bool) {
    loom::model(move || {
        let clock = ManualClock::new();
        let limiter = Arc::new(ChargeAsYouGo(two_rings(&clock)));
        let acquire = move |l: &ChargeAsYouGo<ManualClock>| {
            if planted {
                l.try_acquire_at(0).is_ok()
            } else {
                l.0.try_acquire_at(0).is_ok()
            }
        };
        let l2 = limiter.clone();
        let t = thread::spawn(move || acquire(&l2));
        let mine = acquire(&limiter);
        let theirs = t.join().unwrap();
        let left = (
            limiter.0.window_at(0, 0).unwrap().0,
            limiter.0.window_at(1, 0).unwrap().0,
        );
        assert!(
            mine ^ theirs && left == (1, 0),
            "a refused call charged a window: grants {mine} {theirs}, left {left:?}"
        );
    });
}

#[test]
fn a_refused_call_charges_no_window() {
    frozen_two(false);
}

#[test]
#[should_panic(expected = "a refused call charged a window")]
fn planted_charge_as_you_go_leaves_charges_behind() {
    frozen_two(true);
}

/// Three threads race on a ring of 3 and a log of 2 (frozen clock; the ring is charged first
/// until the log refuses): exactly 2 are granted, the ring holds exactly those 2 (the refused
/// call's charge was given back), and when the grants leave both windows everything is free
/// again.
#[test]
fn three_threads_on_a_log_and_a_ring() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(|| {
        let clock = ManualClock::new();
        let limiter = Arc::new(
            MultiWindow::builder()
                .window_with_buckets(rate(3, 4), 2)
                .exact(rate(2, 4))
                .clock(clock)
                .build()
                .unwrap(),
        );
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let l = limiter.clone();
                thread::spawn(move || l.try_acquire_at(0).is_ok())
            })
            .collect();
        let mine = limiter.try_acquire_at(0).is_ok();
        let granted = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .chain([mine])
            .filter(|&ok| ok)
            .count();
        assert_eq!(granted, 2);
        assert_eq!(
            limiter.window_at(0, 0).unwrap().0,
            1,
            "the ring holds the grants only"
        );
        assert_eq!(limiter.window_at(1, 0).unwrap().0, 0);
        // Bucket 0 leaves the ring at t = 5; the log's grants leave at t = 4.
        assert_eq!(limiter.remaining_at(5), 2);
    });
}

/// A refusal whose give-back races a roll: a ring of 2 per 2 ns (buckets of 1 ns) charged
/// first, then a log of 1 per 8 ns. A call at t = 0 and one at t = 1 (which rolls the ring to
/// bucket 1) race; the log grants exactly one of them. If the call at t = 0 is refused after
/// the roll, its give-back finds the ring frozen or moved on and its permit stays counted in
/// bucket 0 (stranded, until bucket 0 leaves at t = 2); a give-back in bucket 1 is always made
/// (no roll follows it). So at t = 2 the ring counts at most the one grant (the t = 1 call's,
/// or the t = 0 call's if it was judged at bucket 1's start after the roll), never a refused
/// call's charge as well.
fn give_back_racing_a_roll(planted: bool) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(move || {
        let clock = ManualClock::new();
        let limiter = Arc::new(GiveBackToAnyBucket(
            MultiWindow::builder()
                .window_with_buckets(rate(2, 2), 2)
                .exact(rate(1, 8))
                .clock(clock)
                .build()
                .unwrap(),
        ));
        let acquire = move |l: &GiveBackToAnyBucket<ManualClock>, now: u64| {
            if planted {
                l.try_acquire_at(now).is_ok()
            } else {
                l.0.try_acquire_at(now).is_ok()
            }
        };
        let l2 = limiter.clone();
        let t = thread::spawn(move || acquire(&l2, 1));
        let early = acquire(&limiter, 0);
        let late = t.join().unwrap();
        let limiter = &limiter.0;
        assert!(early ^ late, "the log grants exactly one: {early} {late}");
        let ring_at_2 = limiter.window_at(0, 2).unwrap().0;
        assert!(
            ring_at_2 >= 1,
            "bucket 1 holds a refused charge besides the grant"
        );
        if late {
            assert_eq!(ring_at_2, 1, "the t = 1 grant counts in bucket 1");
        }
        assert!(limiter.try_acquire_at(2).is_err(), "the log is full");
        // By t = 9 the log's grant has left; the ring's buckets left by t = 3.
        assert_eq!(limiter.remaining_at(9), 1);
        assert!(limiter.try_acquire_at(9).is_ok());
    });
}

#[test]
fn a_give_back_racing_a_roll_never_over_admits() {
    give_back_racing_a_roll(false);
}

#[test]
#[should_panic(expected = "the t = 1 grant counts in bucket 1")]
fn planted_give_back_to_any_bucket_undercounts_the_new_bucket() {
    give_back_racing_a_roll(true);
}

/// A pair's grant racing a roll: a fast ring of 2 per 2 ns (buckets of 1 ns) and a slow ring
/// of 1 per 8 ns (buckets of 4 ns), granted by one CAS of their shared word; the fast ring is
/// the pair's first unless `swapped`. A call at t = 0 races one at t = `later` (1: it rolls
/// the fast ring; 4: it rolls both), through the planted `StaleFreeze` if `planted`. The
/// slow ring grants exactly one of them, holds it at `later` and refuses a third call then;
/// at t = 1 the fast ring counts that one grant (whichever bucket it landed in); by t = 20
/// both rings are free again.
fn grant_racing_a_roll(later: u64, swapped: bool, planted: bool) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(move || {
        let (fast, slow) = if swapped { (1, 0) } else { (0, 1) };
        let mut rings = [(rate(2, 2), 2), (rate(1, 8), 2)];
        if swapped {
            rings.swap(0, 1);
        }
        let limiter = Arc::new(StaleFreeze(
            MultiWindow::builder()
                .window_with_buckets(rings[0].0, rings[0].1)
                .window_with_buckets(rings[1].0, rings[1].1)
                .clock(ManualClock::new())
                .build()
                .unwrap(),
        ));
        let acquire = move |l: &StaleFreeze<ManualClock>, now: u64| {
            if planted {
                l.try_acquire_at(now).is_ok()
            } else {
                l.0.try_acquire_at(now).is_ok()
            }
        };
        let l2 = limiter.clone();
        let t = thread::spawn(move || acquire(&l2, later));
        let early = acquire(&limiter, 0);
        let late = t.join().unwrap();
        let limiter = &limiter.0;
        assert!(early ^ late, "exactly one grant: {early} {late}");
        assert_eq!(
            limiter.window_at(slow, later).unwrap().0,
            0,
            "the grant counts once"
        );
        if later == 1 {
            assert_eq!(
                limiter.window_at(fast, 1).unwrap().0,
                1,
                "the grant counts once"
            );
        }
        assert!(
            limiter.try_acquire_at(later).is_err(),
            "the slow ring is full"
        );
        assert_eq!(limiter.remaining_at(20), 1);
        assert!(limiter.try_acquire_at(20).is_ok());
    });
}

#[test]
fn a_pair_grant_racing_a_roll_of_the_first_ring_counts_once() {
    grant_racing_a_roll(1, false, false);
}

#[test]
fn a_pair_grant_racing_a_roll_of_the_second_ring_counts_once() {
    grant_racing_a_roll(1, true, false);
}

#[test]
fn a_pair_grant_racing_a_roll_of_both_rings_counts_once() {
    grant_racing_a_roll(4, false, false);
}

#[test]
#[should_panic(expected = "exactly one grant")]
fn planted_stale_freeze_loses_a_grant() {
    grant_racing_a_roll(1, false, true);
}

#[test]
#[should_panic(expected = "exactly one grant")]
fn planted_stale_freeze_of_the_second_ring_loses_a_grant() {
    grant_racing_a_roll(1, true, true);
}
