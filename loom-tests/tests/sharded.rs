//! ShardedGcra under loom: two threads with different home shards borrow from each other's
//! shard. No over-admission, a single permit is denied only when both shards are empty, and a
//! split request is all or nothing. The planted `RacyBorrow` (a borrow by load, compute,
//! store) must fail the same model. The denial hint (`src/sharded/hint.rs`): no hint outlives
//! a give-back; the planted `SilentGiveBack` (a give-back that does not announce itself) must
//! fail that model. A denial racing a live rate change is decided on one parameter set; the
//! planted `TornDenial` (the separate Relaxed reads with no check after them) must fail that
//! model.
#![cfg(hotlimit_loom)]

use std::time::Duration;

use hotlimit::__planted_sharded::{RacyBorrow, SilentGiveBack, TornDenial};
use hotlimit::{ManualClock, Rate, ShardedGcra};
use loom::sync::Arc;
use loom::thread;

/// 2 per 20 ns over 2 shards: each shard has burst 1 and refills one per 20 ns. The clock
/// stays at 0.
fn limiter(clock: &ManualClock) -> ShardedGcra<ManualClock> {
    ShardedGcra::builder(Rate::new(2, Duration::from_nanos(20)).unwrap())
        .shards(2)
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// Each thread asks twice for one permit from its own home; the second ask must borrow. Exactly
/// the global burst (2) is granted whatever the interleaving: never more (no lost update on a
/// borrowed shard), never less (a denial means both shards were found empty).
#[test]
fn borrowing_grants_exactly_the_burst() {
    loom::model(|| {
        let clock = ManualClock::new();
        let g = Arc::new(limiter(&clock));
        let g2 = g.clone();
        let t = thread::spawn(move || {
            (0..2)
                .filter(|_| g2.try_acquire_n_on_at(1, 1, 0).is_ok())
                .count()
        });
        let mine = (0..2)
            .filter(|_| g.try_acquire_n_on_at(0, 1, 0).is_ok())
            .count();
        let theirs = t.join().unwrap();
        assert_eq!(mine + theirs, 2, "mine={mine} theirs={theirs}");
        assert_eq!(g.remaining_at(0), 0);
        // The state is exactly two grants: each shard frees its permit at 20 ns, not before.
        assert!(g.try_acquire_n_on_at(0, 1, 19).is_err());
        assert!(g.try_acquire_n_on_at(0, 2, 20).is_ok());
    });
}

/// A request for 2 must split over both shards while the other thread takes 1 from its home:
/// exactly one of them wins, and a losing split gives back what it took (nothing stranded,
/// nothing over-admitted).
#[test]
fn split_request_is_all_or_nothing() {
    loom::model(|| {
        let clock = ManualClock::new();
        let g = Arc::new(limiter(&clock));
        let g2 = g.clone();
        let t = thread::spawn(move || g2.try_acquire_n_on_at(1, 1, 0).is_ok());
        let split = g.try_acquire_n_on_at(0, 2, 0).is_ok();
        let single = t.join().unwrap();
        assert!(split ^ single, "split={split} single={single}");
        let expect_left = if split { 0 } else { 1 };
        assert_eq!(g.remaining_at(0), expect_left);
    });
}

/// The planted bug: the borrower reads shard 1's permit as free and stores over it while shard
/// 1's owner takes the same permit with its (correct) CAS: 3 grants with a global burst of 2.
#[test]
#[should_panic(expected = "over-admitted")]
fn racy_borrow_is_caught() {
    loom::model(|| {
        let clock = ManualClock::new();
        let g = Arc::new(RacyBorrow(limiter(&clock)));
        let g2 = g.clone();
        let t = thread::spawn(move || usize::from(g2.try_acquire_on(1).is_ok()));
        let mine = (0..2).filter(|_| g.try_acquire_on(0).is_ok()).count();
        let theirs = t.join().unwrap();
        assert!(
            mine + theirs <= 2,
            "over-admitted: {} grants with a global burst of 2",
            mine + theirs
        );
    });
}

/// A split request for 2 (home 0) that must give back races a thread that takes shard 1's
/// permit and then asks for one more from home 0: when that ask finds shard 0 held by the
/// split's take and shard 1 empty, it publishes the denial hint "nothing before 20 ns". The
/// split then finds shard 1 empty and gives shard 0's permit back. Whatever the interleaving,
/// once both are joined a single request is granted exactly when a shard holds a permit: the
/// give-back's announcement keeps the hint from outliving it. `silent`: the planted split
/// that gives back without announcing.
fn give_back_against_the_hint(silent: bool) {
    loom::model(move || {
        let clock = ManualClock::new();
        let g = Arc::new(limiter(&clock));
        let g2 = g.clone();
        let t = thread::spawn(move || {
            let first = g2.try_acquire_n_on_at(1, 1, 0).is_ok();
            let second = g2.try_acquire_n_on_at(0, 1, 0).is_ok();
            (first, second)
        });
        let split = if silent {
            SilentGiveBack(&g).try_acquire_split(0)
        } else {
            g.try_acquire_n_on_at(0, 2, 0).is_ok()
        };
        let (first, second) = t.join().unwrap();
        let granted = usize::from(first) + usize::from(second) + 2 * usize::from(split);
        assert!(
            granted <= 2,
            "over-admitted: {granted} with a global burst of 2"
        );
        let left = g.remaining_at(0);
        assert_eq!(left as usize, 2 - granted, "permits lost");
        // From home 1: its own shard is empty after `first`, so the request goes past the hint.
        let last = g.try_acquire_n_on_at(1, 1, 0).is_ok();
        assert_eq!(
            last,
            left > 0,
            "stale hint: {left} permit(s) left, request denied"
        );
    });
}

#[test]
fn no_hint_outlives_a_give_back() {
    give_back_against_the_hint(false);
}

#[test]
#[should_panic(expected = "stale hint")]
fn stale_hint_is_caught() {
    give_back_against_the_hint(true);
}

/// A denial racing a rate change, on one shard (so the numbers are `Gcra`'s model's in
/// `gcra.rs`): I = 10 ns, b = 4 (τ = 40), changed to I' = 5 ns, b = 4 (τ' = 20). After 4
/// grants at 0 the TAT is 40 and a request for 1 at 0 is denied: under the old set it waits
/// 40 − 40 + 10 = 10 ns; the change carries the TAT to 41 (the carry rule gives 20, raised past
/// every value the word held), where the new set says 41 − 20 + 5 = 26 ns. A mix says 25 ns
/// (TAT 40 with the new set), 11 ns (TAT 41 with the old) or a wait from the frozen marker.
/// The real request checks the home shard's denial against the word (`Shard::settled`) and
/// decides the borrowing's denial again when the change counter moved. `torn`: the planted
/// `TornDenial` (neither check), which loom must catch.
fn sharded_denial_racing_a_change(torn: bool) {
    loom::model(move || {
        let g = Arc::new(
            ShardedGcra::builder(Rate::new(1, Duration::from_nanos(10)).unwrap())
                .shards(1)
                .burst(4)
                .clock(ManualClock::new())
                .build()
                .unwrap(),
        );
        g.try_acquire_n_on_at(0, 4, 0).unwrap();
        let g2 = g.clone();
        let request = thread::spawn(move || {
            let decided = if torn {
                TornDenial(&g2).try_acquire_n_on_at(0, 1, 0)
            } else {
                g2.try_acquire_n_on_at(0, 1, 0)
            };
            decided.map_err(|d| d.retry_after_nanos())
        });
        g.set_rate_at(Rate::new(1, Duration::from_nanos(5)).unwrap(), Some(4), 0)
            .unwrap();
        let decided = request.join().unwrap();
        assert!(
            matches!(decided, Err(Some(10 | 26))),
            "mixed parameters: {decided:?} (old set: 10 ns, new set: 26 ns)"
        );
        // No denial hint from a mixed snapshot outlives the race: on the new set the next
        // permit comes free at exactly 26 ns.
        let at_25 = g
            .try_acquire_n_on_at(0, 1, 25)
            .map_err(|d| d.retry_after_nanos());
        assert_eq!(at_25, Err(Some(1)), "mixed parameters: a denial at 25 ns");
        assert!(
            g.try_acquire_n_on_at(0, 1, 26).is_ok(),
            "mixed parameters: a stale hint denied the permit free at 26 ns"
        );
    });
}

#[test]
fn a_denial_racing_a_change_is_decided_on_one_parameter_set() {
    sharded_denial_racing_a_change(false);
}

#[test]
#[should_panic(expected = "mixed parameters")]
fn torn_sharded_denial_is_caught() {
    sharded_denial_racing_a_change(true);
}
