//! SlidingWindow under loom: concurrent admissions on a frozen clock, around a bucket boundary
//! and across a slot recycle never over-admit, and every permit is subtracted exactly once
//! (none leaks, none is forgotten early); rolls to a new bucket, raced by grants and finished
//! by whoever comes next, book every permit to the right bucket. The planted
//! `RacySlidingWindow` (read the count, then add) and `LateSnapshots` (a roll that moves the
//! epoch first and snapshots afterwards) must fail the same kind of model.
#![cfg(hotlimit_loom)]

mod common;

use std::time::Duration;

use hotlimit::__planted_sliding_window::{EarlyLimit, LateSnapshots, RacySlidingWindow};
use hotlimit::{Limiter, ManualClock, Rate, SlidingWindow};
use loom::sync::Arc;
use loom::thread;

/// `limit` per `period` ns in `buckets` buckets, on `clock`.
fn window(
    limit: u64,
    period: u64,
    buckets: usize,
    clock: &ManualClock,
) -> SlidingWindow<ManualClock> {
    SlidingWindow::builder(Rate::new(limit, Duration::from_nanos(period)).unwrap())
        .buckets(buckets)
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// A loom model with `bound` preemptions (the env default, 2, misses calls that run
/// entirely inside another's; these two-thread models stay fast at 4).
fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(bound);
    builder.check(f);
}

/// How many single permits can be taken at `t` (mutates: call only after the threads joined).
fn drain(w: &SlidingWindow<ManualClock>, t: u64) -> u64 {
    let mut k = 0;
    while w.try_acquire_at(t).is_ok() {
        k += 1;
    }
    k
}

/// Three threads race for a limit of 2 on a frozen clock: exactly 2 win, and the count is
/// exactly 2 afterwards: once the bucket expires, 2 are free again (nothing leaked, nothing
/// subtracted twice).
#[test]
fn frozen_clock_three_threads_exactly_limit() {
    loom::model(|| {
        let clock = ManualClock::new();
        // w = 2 ns, 3 slots; bucket 0 leaves the window at t = 5.
        let w = Arc::new(window(2, 4, 2, &clock));
        let granted = common::granted_of_three(&w);
        assert_eq!(granted, 2);
        assert_eq!(drain(&w, 4), 0, "bucket 0 still counts at t = 4");
        assert_eq!(drain(&w, 5), 2, "exactly the two permits leave at t = 5");
    });
}

/// Bucket boundary and slot recycle: with 1 per 2 ns (w = 1 ns, 2 slots), a grant at t = 0
/// (bucket 0, slot 0) races one at t = 2 (bucket 2: floor 1, slot 0 recycled). If the t = 2
/// call moves the floor first, the t = 0 call is judged at the floor's start (t = 2) and
/// competes for the same permit. Whatever the interleaving: at least one grant, a permit in
/// bucket 2 is never forgotten before t = 4, and afterwards the count is exact.
#[test]
fn boundary_and_recycle_never_over_admit_nor_lose_a_count() {
    model(4, || {
        let clock = ManualClock::new();
        let w = Arc::new(window(1, 2, 2, &clock));
        let w2 = w.clone();
        let t = thread::spawn(move || w2.try_acquire_at(2).is_ok());
        let early = w.try_acquire_at(0).is_ok();
        let late = t.join().unwrap();
        assert!(early || late, "neither granted");
        // The t = 2 call may be denied while the t = 0 grant is in flight (decided, not yet
        // recorded): a false denial within the bound, since t = 0 is within period + w.
        // A grant in bucket 2 counts at t = 2 and 3 and leaves at t = 4.
        let free_at_3 = drain(&w, 3);
        assert!(free_at_3 <= 1);
        if late {
            assert_eq!(free_at_3, 0, "a permit of bucket 2 was forgotten early");
        }
        // Permits drained at t = 3 land in bucket 3, which still counts at t = 4.
        let free_at_4 = drain(&w, 4);
        assert_eq!(
            free_at_3 + free_at_4,
            1,
            "a permit leaked or was subtracted twice"
        );
        assert_eq!(
            drain(&w, 6),
            1,
            "the count is exact once everything has left"
        );
    });
}

/// A stale call must never retire a newer bucket: limit 2 per 2 ns; one call takes 1 permit
/// at t = 0, another takes 2 at t = 2 (bucket 2 reuses bucket 0's slot). If the t = 0 call,
/// still holding floor 0, took bucket 2's stamp for an expired bucket and retired it, the 2
/// permits would be forgotten while they still count. Reaching that needs the t = 2 call to
/// run entirely inside the t = 0 call, so this model allows 4 preemptions (2 threads only).
#[test]
fn stale_call_never_retires_a_newer_bucket() {
    model(4, || {
        let clock = ManualClock::new();
        let w = Arc::new(window(2, 2, 2, &clock));
        let w2 = w.clone();
        let t = thread::spawn(move || w2.try_acquire_n_at(2, 2).is_ok());
        let _early = w.try_acquire_at(0).is_ok();
        let late = t.join().unwrap();
        if late {
            // Bucket 2 holds 2 permits until t = 4; the t = 0 permit is either in bucket 0
            // (gone by t = 2) or was judged at t = 2 and denied.
            assert_eq!(
                drain(&w, 3),
                0,
                "over-admitted: bucket 2's permits were forgotten"
            );
        }
    });
}

/// A granter preempted between its decision and its bucket update while the bucket expires:
/// limit 2 per 2 ns (w = 1 ns, 2 slots); one call at t = 0, one at t = 3 (floor 2: slots 0 and
/// 1 are retired). If the t = 0 call's bucket is retired before it records, it takes its own
/// permit back out of the count. Afterwards: at most the t = 3 permit and possibly the stale
/// one (judged at t = 3) count until t = 5, and then nothing.
#[test]
fn granter_preempted_while_its_bucket_expires() {
    model(4, || {
        let clock = ManualClock::new();
        let w = Arc::new(window(2, 2, 2, &clock));
        let w2 = w.clone();
        let t = thread::spawn(move || w2.try_acquire_at(3).is_ok());
        let early = w.try_acquire_at(0).is_ok();
        let late = t.join().unwrap();
        assert!(early && late, "limit 2: both fit");
        // The t = 3 permit still counts at 3 and 4; the t = 0 one either left with bucket 0
        // (1 free at t = 3) or was judged at t = 3 (0 free).
        let free_at_3 = drain(&w, 3);
        assert!(
            free_at_3 <= 1,
            "a live permit was forgotten: {free_at_3} free at t = 3"
        );
        assert_eq!(drain(&w, 4), 0);
        assert_eq!(drain(&w, 5), 2, "a permit leaked or was subtracted twice");
    });
}

/// The planted bug: both threads sum 0 live permits, both increment: 2 grants with limit 1.
/// Loom must find that interleaving.
#[test]
#[should_panic(expected = "over-admitted")]
fn racy_sum_then_increment_is_caught() {
    common::model_on_a_clock(
        |clock| RacySlidingWindow(window(1, 4, 2, clock)),
        |w, _| {
            let (mine, theirs) = common::two_racing(w, |w| w.try_acquire().is_ok());
            assert!(
                !(mine && theirs),
                "over-admitted: both granted with limit 1"
            );
        },
    );
}

/// The same model passes for the real limiter: the planted bug, not the model, fails.
#[test]
fn real_limiter_passes_the_planted_model() {
    common::model_on_a_clock(
        |clock| window(1, 4, 2, clock),
        |w, _| {
            let (mine, theirs) = common::two_racing(w, |w| w.try_acquire().is_ok());
            assert!(mine ^ theirs, "mine={mine} theirs={theirs}");
        },
    );
}

// Rolls: 2 per 4 ns in buckets of w = 2 ns (lag 3: bucket y leaves the window at 2y + 5).

/// Two grants in bucket 1 (t = 2 and t = 3), one of them rolling from bucket 0, race: both are
/// granted, both are booked to bucket 1, so none is free again before t = 7.
#[test]
fn a_roll_racing_a_grant_books_both_to_the_new_bucket() {
    model(3, || {
        let clock = ManualClock::new();
        let w = Arc::new(window(2, 4, 2, &clock));
        let w2 = w.clone();
        let t = thread::spawn(move || w2.try_acquire_at(2).is_ok());
        let mine = w.try_acquire_at(3).is_ok();
        let theirs = t.join().unwrap();
        assert!(mine && theirs, "limit 2: both fit");
        assert_eq!(
            drain(&w, 5),
            0,
            "over-admitted: a permit of bucket 1 left at t = 5"
        );
        assert_eq!(drain(&w, 7), 2, "a permit leaked");
    });
}

/// The planted roll (move the epoch, then snapshot a fresh count): a grant made in bucket 1
/// between the two steps is booked to bucket 0 and leaves at t = 5. Loom must find it.
#[test]
#[should_panic(expected = "over-admitted")]
fn late_snapshots_are_caught() {
    model(3, || {
        let clock = ManualClock::new();
        let w = Arc::new(LateSnapshots(window(2, 4, 2, &clock)));
        let w2 = w.clone();
        let t = thread::spawn(move || w2.try_acquire_n_at(1, 2).is_ok());
        let mine = w.try_acquire_n_at(1, 3).is_ok();
        let theirs = t.join().unwrap();
        assert!(mine && theirs, "limit 2: both fit");
        assert_eq!(
            drain(&w.0, 5),
            0,
            "over-admitted: a permit of bucket 1 left at t = 5"
        );
    });
}

/// Three calls, two of them rolling from bucket 0 to bucket 1 and one stale (t = 1, bucket 0),
/// on a limit of 2: exactly 2 granted whatever the interleaving (a roll preempted anywhere is
/// finished by the others), and the permits leave exactly when their buckets do.
#[test]
fn three_calls_across_a_roll_exactly_limit() {
    loom::model(|| {
        let clock = ManualClock::new();
        let w = Arc::new(window(2, 4, 2, &clock));
        let handles: Vec<_> = [2u64, 3]
            .into_iter()
            .map(|t| {
                let w = w.clone();
                thread::spawn(move || w.try_acquire_at(t).is_ok())
            })
            .collect();
        let stale = w.try_acquire_at(1).is_ok();
        let late = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|&ok| ok)
            .count();
        assert_eq!(usize::from(stale) + late, 2, "exactly limit");
        // A stale grant made before the roll is in bucket 0 and leaves at t = 5; every other
        // grant is in bucket 1 and leaves at t = 7.
        let free_at_5 = drain(&w, 5);
        assert!(
            free_at_5 <= usize::from(stale) as u64,
            "over-admitted at t = 5"
        );
        assert_eq!(free_at_5 + drain(&w, 7), 2, "a permit leaked");
    });
}

// Count-closed buckets.

use hotlimit::__planted_sliding_window::RacyExpiry;

/// `limit` per `period` ns in `buckets` buckets, closing at `k` permits.
fn closed(limit: u64, period: u64, buckets: usize, k: u64) -> SlidingWindow<ManualClock> {
    SlidingWindow::builder(Rate::new(limit, Duration::from_nanos(period)).unwrap())
        .buckets(buckets)
        .count_closed(k)
        .clock(ManualClock::new())
        .build()
        .unwrap()
}

/// Two admissions close a bucket by count: limit 3 per 4 ns, w = 2 ns, k = 2; one call at
/// t = 0 and one at t = 1, both in bucket 0. Whichever records second closes the bucket with
/// both permits, stamped with the newer time (1) even if the closer's own time is 0: the
/// closed bucket must count until t = 5, not leave at t = 4. Afterwards the count is exact.
#[test]
fn count_closed_two_admissions_close_a_bucket() {
    model(4, || {
        let w = Arc::new(closed(3, 4, 2, 2));
        let w2 = w.clone();
        let t = thread::spawn(move || w2.try_acquire_at(1).is_ok());
        let early = w.try_acquire_at(0).is_ok();
        let late = t.join().unwrap();
        assert!(early && late, "limit 3: both fit");
        assert_eq!(drain(&w, 1), 1, "exactly one permit left");
        assert_eq!(
            drain(&w, 4),
            0,
            "over-admitted: the closed bucket left before one period after t = 1"
        );
        // t = 5: the closed bucket (newest grant 1) and bucket 0's open part both leave.
        assert_eq!(drain(&w, 5), 3, "a permit leaked or was given back twice");
    });
}

/// Two threads race for limit 1 with k = 1 on a frozen clock: the grant closes its own
/// bucket; exactly 1 wins, and exactly 1 is free one period later. (Three threads: the
/// same model takes minutes.)
#[test]
fn count_closed_frozen_clock_exactly_limit() {
    loom::model(|| {
        let w = Arc::new(closed(1, 4, 2, 1));
        let w2 = w.clone();
        let t = thread::spawn(move || w2.try_acquire_at(0).is_ok());
        let mine = w.try_acquire_at(0).is_ok();
        let theirs = t.join().unwrap();
        assert!(mine ^ theirs, "mine={mine} theirs={theirs}");
        assert_eq!(drain(&w, 3), 0, "the closed bucket counts until t = 4");
        assert_eq!(drain(&w, 4), 1, "exactly the one permit leaves at t = 4");
    });
}

/// Limit 3 per 10 ns, one bucket, k = 1: grants at 0, 5, 5 (three closed buckets). At
/// t = 10 the first has left; two callers expire it and take a permit each: only one of them
/// may win (the other two still count).
fn expiry_race(racy: bool) {
    let w = closed(3, 10, 1, 1);
    w.try_acquire_at(0).unwrap();
    w.try_acquire_n_at(2, 5).unwrap();
    let w = Arc::new(RacyExpiry(w));
    let w2 = w.clone();
    let go = move |w: &RacyExpiry<ManualClock>| {
        if racy {
            w.try_acquire_at(10).is_ok()
        } else {
            w.0.try_acquire_at(10).is_ok()
        }
    };
    let go2 = go;
    let t = thread::spawn(move || go2(&w2));
    let mine = go(&w);
    let theirs = t.join().unwrap();
    assert!(
        !(mine && theirs),
        "over-admitted: 4 grants in the window (0, 10]"
    );
    assert!(mine || theirs, "one permit was free");
}

/// The planted bug: both callers see the expired bucket published and both give it back.
#[test]
#[should_panic(expected = "over-admitted")]
fn count_closed_racy_expiry_is_caught() {
    loom::model(|| expiry_race(true));
}

/// The same model passes for the real limiter.
#[test]
fn count_closed_real_expiry_passes_the_planted_model() {
    loom::model(|| expiry_race(false));
}

/// Expiry racing a push into the same entry: limit 1 per 4 ns, k = 1, so the ring has one
/// entry. A call at t = 0 closes a bucket into entry 0; a call at t = 4 may expire it and
/// close its own into the same entry (the next generation). Never both within one window,
/// a permit is never forgotten early, and afterwards the count is exact.
#[test]
fn count_closed_expiry_races_a_push_into_the_same_entry() {
    model(4, || {
        let w = Arc::new(closed(1, 4, 2, 1));
        let w2 = w.clone();
        let t = thread::spawn(move || w2.try_acquire_at(4).is_ok());
        let early = w.try_acquire_at(0).is_ok();
        let late = t.join().unwrap();
        assert!(early || late, "neither granted");
        // A grant at t = 4 counts until t = 8; one at t = 0 (or judged at 4) by then too.
        let free_at_7 = drain(&w, 7);
        if late {
            assert_eq!(
                free_at_7, 0,
                "over-admitted: the t = 4 permit was forgotten"
            );
        }
        // A permit drained at t = 7 counts until t = 11.
        assert_eq!(
            free_at_7 + drain(&w, 8),
            1,
            "a permit leaked or was given back twice"
        );
        assert_eq!(
            drain(&w, 12),
            1,
            "the count is exact once everything has left"
        );
    });
}

/// A grant racing a live change of the limit, on a frozen clock (every call at 0): limit 3 with
/// 1 granted; a worker asks for 1 while the main thread lowers the limit to 2 (at once) and
/// then asks for 1. The limit is one word, so no request can read a mix of two parameter
/// sets; what must hold is that the reading and the window it is applied to are one moment:
/// the real request reads the limit after the state word, and its CAS on the word validates
/// both (a grant after the change moves the word and publishes the new limit). So the outcome
/// is a sequential one: the worker before the change (granted, the main thread denied) or
/// after it (one of the two granted): 2 in the window, never 3. The change never touches the
/// state word, so there is no TAT to reinstall (the ABA case has no counterpart here).
/// `early`: the planted `EarlyLimit` (the limit read before the word), which loom must catch.
fn grant_racing_a_limit_change(early: bool) {
    model(2, move || {
        let clock = ManualClock::new();
        let w = Arc::new(window(3, 40, 4, &clock));
        w.try_acquire_at(0).unwrap();
        let w2 = w.clone();
        let worker = thread::spawn(move || {
            if early {
                EarlyLimit(&w2).try_acquire_n_at(1, 0).is_ok()
            } else {
                w2.try_acquire_at(0).is_ok()
            }
        });
        w.set_limit_at(2, 0).unwrap();
        let mine = w.try_acquire_at(0).is_ok();
        let theirs = worker.join().unwrap();
        let granted = 1 + usize::from(mine) + usize::from(theirs);
        assert!(
            granted <= 2,
            "over-admitted: {granted} in a window whose limit went 3 -> 2 (mine {mine}, theirs {theirs})"
        );
        assert_eq!(granted, 2, "a permit lost");
        assert!(w.try_acquire_at(0).is_err());
    });
}

#[test]
fn a_grant_racing_a_limit_change_is_decided_on_one_limit() {
    grant_racing_a_limit_change(false);
}

#[test]
#[should_panic(expected = "over-admitted")]
fn a_limit_read_before_the_state_word_is_caught() {
    grant_racing_a_limit_change(true);
}
