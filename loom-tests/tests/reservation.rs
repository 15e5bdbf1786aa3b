//! Gcra reservations under loom: concurrent reserve / cancel / keep never produce kept slots
//! beyond the GCRA bound, a cancel gives back exactly when it is last in line, and no slot is
//! handed out twice. The planted `blind_cancel` (subtract the cost whoever came after) must
//! fail the same model.
#![cfg(hotlimit_loom)]

use std::time::Duration;

use hotlimit::__planted_reservation::blind_cancel;
use hotlimit::{Gcra, Limiter, ManualClock, Rate};
use loom::sync::Arc;
use loom::thread;

/// I = 10 ns; burst as given.
fn limiter(burst: u64) -> Gcra<ManualClock> {
    Gcra::builder(Rate::new(1, Duration::from_nanos(10)).unwrap())
        .burst(burst)
        .clock(ManualClock::new())
        .build()
        .unwrap()
}

/// The GCRA bound on kept slots `(ready_at, permits)`: at most b + ⌊d/I⌋ permits between
/// any two slot times d apart.
fn assert_bound(slots: &mut [(u64, u64)], burst: u64, context: &str) {
    slots.sort_unstable();
    for i in 0..slots.len() {
        let mut permits = 0;
        for j in i..slots.len() {
            permits += slots[j].1;
            let bound = burst + (slots[j].0 - slots[i].0) / 10;
            assert!(
                permits <= bound,
                "over-admitted: {permits} permits in [{}, {}] > {bound}; slots {slots:?} ({context})",
                slots[i].0,
                slots[j].0
            );
        }
    }
}

/// Two threads: one reserves and cancels, one reserves and keeps; then the main thread
/// reserves and keeps. Frozen clock, burst 1. Whatever the interleaving, the kept slots keep
/// the bound (distinct, 10 ns apart), and a cancel that reports success really freed its slot:
/// then the two kept slots are exactly 0 and 10.
fn reserve_cancel_race(cancel: fn(hotlimit::Reservation<'_, ManualClock>) -> Option<bool>) {
    loom::model(move || {
        let g = Arc::new(limiter(1));
        let g1 = g.clone();
        let canceller = thread::spawn(move || {
            let r = g1.reserve_n_at(1, 0, 100).unwrap();
            cancel(r)
        });
        let g2 = g.clone();
        let keeper = thread::spawn(move || g2.reserve_n_at(1, 0, 100).unwrap().keep());
        let given_back = canceller.join().unwrap();
        let kept = keeper.join().unwrap();
        let last = g.reserve_n_at(1, 0, 100).unwrap().keep();
        let mut slots = [(kept, 1), (last, 1)];
        assert_bound(&mut slots, 1, &format!("given back: {given_back:?}"));
        if given_back == Some(true) {
            assert_eq!(
                slots,
                [(0, 1), (10, 1)],
                "a successful cancel must free its slot"
            );
        }
    });
}

#[test]
fn reserve_cancel_race_keeps_the_bound_and_gives_back_exactly() {
    reserve_cancel_race(|r| Some(r.cancel()));
}

/// Dropping is cancelling: the same model with `drop`.
#[test]
fn dropped_reservation_race_keeps_the_bound() {
    reserve_cancel_race(|r| {
        drop(r);
        None
    });
}

/// The same race through the seam every wait uses (`Limiter::__fair_queue`: a place taken
/// with `join`, given back with `leave`, which rebuilds the reservation and cancels it): the
/// kept places keep the bound, and a leave that reports success really freed its slot.
#[test]
fn fair_queue_join_leave_race_keeps_the_bound_and_gives_back_exactly() {
    loom::model(|| {
        let g = Arc::new(limiter(1));
        let g1 = g.clone();
        let leaver = thread::spawn(move || {
            let line = Limiter::__fair_queue(&*g1).unwrap();
            let place = line.join(1, 0, 100).unwrap();
            line.leave(&place)
        });
        let g2 = g.clone();
        let keeper = thread::spawn(move || {
            let line = Limiter::__fair_queue(&*g2).unwrap();
            line.join(1, 0, 100).unwrap().ready_at()
        });
        let given_back = leaver.join().unwrap();
        let kept = keeper.join().unwrap();
        let last = g.reserve_n_at(1, 0, 100).unwrap().keep();
        let mut slots = [(kept, 1), (last, 1)];
        assert_bound(&mut slots, 1, &format!("given back: {given_back}"));
        if given_back {
            assert_eq!(
                slots,
                [(0, 1), (10, 1)],
                "a successful leave must free its slot"
            );
        }
    });
}

/// Two threads each reserve two permits' worth in turn (1 + 1) and cancel the second, on a
/// frozen clock with burst 2, while the main thread takes one with try_acquire. The permits
/// still held never exceed the burst at time 0 plus what the queue allows, and the final
/// state is consistent: exactly the kept permits are missing at time 0.
#[test]
fn interleaved_reserve_and_cancel_never_double_book() {
    loom::model(|| {
        let g = Arc::new(limiter(2));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let g = g.clone();
                thread::spawn(move || {
                    let a = g.reserve_n_at(1, 0, 20).ok().map(|r| r.keep());
                    let b = g.reserve_n_at(1, 0, 20).ok();
                    let b_given_back = b.map(|r| r.cancel());
                    (a, b_given_back)
                })
            })
            .collect();
        let direct = g.try_acquire_at(0).is_ok();
        let mut slots: Vec<(u64, u64)> = Vec::new();
        if direct {
            slots.push((0, 1));
        }
        for w in workers {
            let (a, _) = w.join().unwrap();
            if let Some(at) = a {
                slots.push((at, 1));
            }
        }
        assert_bound(&mut slots, 2, "after the race");
        // Fill the queue from here: every new slot also keeps the bound with the old ones.
        while let Ok(r) = g.reserve_n_at(1, 0, 40) {
            slots.push((r.keep(), 1));
        }
        assert_bound(&mut slots, 2, "after filling");
    });
}

/// The planted bug: a cancel that subtracts its cost even when someone reserved after it.
/// When the keeper reserves between the canceller's reserve and cancel, the TAT moves back
/// under the keeper's slot, and the main thread is handed the same slot again.
#[test]
#[should_panic(expected = "over-admitted")]
fn blind_cancel_is_caught() {
    reserve_cancel_race(|r| {
        blind_cancel(r);
        Some(false)
    });
}
