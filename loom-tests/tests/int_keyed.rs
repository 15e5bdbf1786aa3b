//! IntKeyed's slot protocol under loom, on a one-bucket table (4 slots, capacity 2). Loom has
//! no 128-bit atomic: a slot is emulated by a loom `Mutex<u128>` (see `src/sync.rs`), so these
//! models check every interleaving of whole-slot loads and CASes (the protocol under
//! sequential consistency, which is what the code's SeqCst accesses give), with `len`, the
//! floor and the tag counter as real loom atomics.
//!
//! - Two threads insert the same new key at a frozen time with burst 1: exactly one grant.
//!   The planted `resolve` that does not kill the higher pending claims commits two slots for
//!   one key (two states, so a later grant can land on a stale fresh one) and must fail.
//! - A grant on an idle key races a new key that replaces it, also at the exact instant the
//!   key goes idle (issue 43): afterwards every key's state holds exactly its grants. The
//!   planted replacement by a store (no CAS from the idle value seen) loses a grant and must
//!   fail.
//! - A grant races a rate change (`set_rate`): exactly what one state allows is granted. The
//!   planted change that stores the carried value instead of a CAS loses the grant and must
//!   fail.
//! - The dense layout (tables over 1 MiB: a primary area and a secondary one, so a key has
//!   four buckets, 16 candidate slots): two threads insert one new key whose primary buckets
//!   are full of busy keys, so both claim in its secondary bucket: exactly one grant, one
//!   state. The planted `resolve` without kills must fail there too.
#![cfg(hotlimit_loom)]

use std::time::Duration;

use hotlimit::__planted_int_keyed::{buckets_of, build_dense, candidate_slots, plant, Plant};
use hotlimit::{IntKeyed, ManualClock, Rate};
use loom::sync::Arc;
use loom::thread;

/// One bucket, burst 1, one permit per 10 ns.
fn table(p: Plant) -> IntKeyed<u64, ManualClock> {
    let l = IntKeyed::builder(Rate::new(1, Duration::from_nanos(10)).unwrap())
        .burst(1)
        .capacity(2)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    plant(l, p)
}

/// A key whose home way is the last one (3): two racing inserters then claim ways 3 and 0,
/// the second claim landing below the first, the case the kill of higher claims is for.
fn key_with_home_3(l: &IntKeyed<u64, ManualClock>) -> u64 {
    (0..).find(|&k| buckets_of(l, k).2 == 3).unwrap()
}

/// `threads` threads (2 or 3) insert one new key at a frozen time.
fn same_new_key(p: Plant, threads: usize, preemptions: usize) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(preemptions);
    b.check(move || {
        let l = Arc::new(table(p));
        let key = key_with_home_3(&l);
        let others: Vec<_> = (1..threads)
            .map(|_| {
                let l = l.clone();
                thread::spawn(move || l.try_acquire_at(key, 0).is_ok())
            })
            .collect();
        let mut granted = u32::from(l.try_acquire_at(key, 0).is_ok());
        for t in others {
            granted += u32::from(t.join().unwrap());
        }
        assert_eq!(
            granted, 1,
            "one new key, burst 1, frozen time: exactly one grant"
        );
        assert_eq!(
            l.remaining_at(key, 0),
            0,
            "the key's state holds exactly one grant"
        );
        assert_eq!(
            l.len(),
            1,
            "one key, one slot: exactly one grant and one state"
        );
    });
}

#[test]
fn two_inserters_of_one_key_grant_once() {
    same_new_key(Plant::None, 2, 3);
}

#[test]
#[should_panic(expected = "exactly one grant")]
fn planted_resolve_without_kills_commits_twice() {
    same_new_key(Plant::NoKill, 2, 3);
}

/// Three inserters (some help the others' claims), three preemptions.
#[test]
fn three_inserters_of_one_key_grant_once() {
    same_new_key(Plant::None, 3, 3);
}

#[test]
#[should_panic(expected = "exactly one grant")]
fn planted_resolve_without_kills_fails_with_three() {
    same_new_key(Plant::NoKill, 3, 2);
}

/// Both at the idle instant (issue 43): `idle` (one-shot) is replaceable from its TAT on, so
/// at exactly its TAT the new key and the grant race for it. The planted replacement by a
/// store instead of a CAS from the idle value seen loses a grant that landed in between (the
/// key then comes back fresh: over-admission) and must fail. (The older twin, a grant CAS
/// that compared the meta half only, cannot fail: a slot's meta word never returns to a value
/// it held, whichever keys hold it: see the guide.)
fn grant_races_replacement(p: Plant, at: u64) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(move || {
        let l = Arc::new(table(p));
        let (idle, busy, new) = (1u64, 2u64, 3u64);
        // `idle`: TAT 10, one-shot (granted once), so replaceable from 10 on.
        // `busy`: TAT 20 (replaceable from 20). The table is at capacity (2).
        assert!(l.try_acquire_at(idle, 0).is_ok());
        assert!(l.try_acquire_at(busy, 10).is_ok());
        let l2 = l.clone();
        let t = thread::spawn(move || l2.try_acquire_at(idle, at).is_ok());
        // A new key at capacity: replaces `idle` if it is still idle.
        let new_granted = l.try_acquire_at(new, at).is_ok();
        let idle_granted = t.join().unwrap();
        for (key, granted) in [(idle, idle_granted), (new, new_granted)] {
            assert_eq!(
                1 - l.remaining_at(key, at),
                u64::from(granted),
                "key {key}: its state does not hold exactly its grant"
            );
        }
        assert!(l.len() <= 2);
    });
}

#[test]
fn a_grant_racing_a_replacement_is_never_lost() {
    grant_races_replacement(Plant::None, 15);
}

#[test]
fn a_grant_racing_a_replacement_at_the_idle_instant_is_never_lost() {
    grant_races_replacement(Plant::None, 10);
}

#[test]
#[should_panic(expected = "does not hold exactly its grant")]
fn planted_replacement_by_store_loses_a_grant() {
    grant_races_replacement(Plant::ReplaceByStore, 10);
}

/// A grant racing a rate change on one key (`set_rate`, issue 26): key 1 (burst 1, one per
/// 10 ns) was granted at 0, so at 10 it has one free permit; at 10 another thread asks while
/// this one changes every key to 2 per 10 ns, burst 2 (the carried state keeps at most the one
/// free permit), then asks too. Exactly one is granted, whatever the order: a grant before the
/// carry is carried (its TAT is what the change reads), one after it is judged by the new
/// rate, and one that decided before the carry and installs after it fails its CAS and decides
/// again. The planted change that stores the carried value over a racing grant loses that
/// grant from the state, and the second request is granted too.
fn grant_races_rate_change(p: Plant) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(move || {
        let l = Arc::new(table(p));
        assert!(l.try_acquire_at(1, 0).is_ok());
        let l2 = l.clone();
        let t = thread::spawn(move || l2.try_acquire_at(1, 10).is_ok());
        l.set_rate_at(Rate::new(2, Duration::from_nanos(10)).unwrap(), Some(2), 10)
            .unwrap();
        let theirs = t.join().unwrap();
        let mine = l.try_acquire_at(1, 10).is_ok();
        assert_eq!(
            u32::from(theirs) + u32::from(mine),
            1,
            "over-admission across a rate change"
        );
    });
}

#[test]
fn a_grant_racing_a_rate_change_is_carried() {
    grant_races_rate_change(Plant::None);
}

#[test]
#[should_panic(expected = "over-admission across a rate change")]
fn planted_carry_by_store_loses_a_grant() {
    grant_races_rate_change(Plant::CarryByStore);
}

/// A table in the dense layout (built so whatever its size): capacity 20, so 6 primary
/// buckets and 1 secondary bucket; burst 1, one permit per 10 ns.
fn dense_table(p: Plant) -> IntKeyed<u64, ManualClock> {
    let b = IntKeyed::builder(Rate::new(1, Duration::from_nanos(10)).unwrap())
        .burst(1)
        .capacity(20)
        .clock(ManualClock::new());
    plant(build_dense(b).unwrap(), p)
}

/// Two threads insert key `x` (home way 3, so the second claim can land below the first) at a
/// frozen time, after eight busy keys filled x's two primary buckets: both claims go to x's
/// secondary bucket, and the protocol must still leave one state and one grant.
fn new_key_in_the_secondary(p: Plant, preemptions: usize) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(preemptions);
    b.check(move || {
        let l = Arc::new(dense_table(p));
        let x = (0..).find(|&k| buckets_of(&l, k).2 == 3).unwrap();
        assert_eq!(
            candidate_slots(&l, x).len(),
            12,
            "two primary buckets, one secondary"
        );
        let (xb1, xb2, _) = buckets_of(&l, x);
        // Keys whose first bucket is one of x's land there while it has a free way.
        let mut filled = [0; 2];
        for k in x + 1.. {
            if filled == [4, 4] {
                break;
            }
            let b1 = buckets_of(&l, k).0;
            for (i, xb) in [xb1, xb2].into_iter().enumerate() {
                if b1 == xb && filled[i] < 4 {
                    assert!(l.try_acquire_at(k, 0).is_ok());
                    filled[i] += 1;
                }
            }
        }
        let l2 = l.clone();
        let t = thread::spawn(move || l2.try_acquire_at(x, 0).is_ok());
        let granted = u32::from(l.try_acquire_at(x, 0).is_ok()) + u32::from(t.join().unwrap());
        assert_eq!(
            granted, 1,
            "one new key in the secondary: exactly one grant"
        );
        assert_eq!(l.remaining_at(x, 0), 0, "its state holds exactly one grant");
        assert_eq!(
            l.len(),
            9,
            "eight busy keys and the new key: exactly one grant and one state"
        );
    });
}

#[test]
fn two_inserters_of_one_key_in_the_secondary_grant_once() {
    new_key_in_the_secondary(Plant::None, 3);
}

#[test]
#[should_panic(expected = "exactly one grant")]
fn planted_resolve_without_kills_commits_twice_in_the_secondary() {
    new_key_in_the_secondary(Plant::NoKill, 3);
}

/// A denial racing two rate changes (issue 43): key 1 holds 4 grants at 0 under I = 10 ns,
/// b = 4 (τ = 40, TAT 40); a thread asks for 2 at 0 while this one changes the rate to
/// I = 5, b = 4 (τ = 20; the slot moves to the other parameter set, TAT 41) and then to
/// I = 20, b = 4 (τ = 80; this rewrites the first set, then moves the slot back to it, TAT
/// 101). Under each set the request waits 20, 31 or 61 ns. A request that loaded the slot
/// before the first change and reads the first set while the second change rewrites it can
/// mix I = 20 with τ = 40: a wait of 40 ns that no set gives. `settled` makes it decide again;
/// the planted `UncheckedDenial` returns it, and must be caught.
fn denial_races_two_rate_changes(p: Plant) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b.check(move || {
        let l = Arc::new(plant(
            IntKeyed::<u64>::builder(Rate::new(1, Duration::from_nanos(10)).unwrap())
                .burst(4)
                .capacity(2)
                .clock(ManualClock::new())
                .build()
                .unwrap(),
            p,
        ));
        assert!(l.try_acquire_n_at(1, 4, 0).is_ok());
        let l2 = l.clone();
        let t = thread::spawn(move || {
            l2.try_acquire_n_at(1, 2, 0)
                .map_err(|d| d.retry_after_nanos())
        });
        l.set_rate_at(Rate::new(1, Duration::from_nanos(5)).unwrap(), Some(4), 0)
            .unwrap();
        l.set_rate_at(Rate::new(1, Duration::from_nanos(20)).unwrap(), Some(4), 0)
            .unwrap();
        let decided = t.join().unwrap();
        assert!(
            matches!(decided, Err(Some(20 | 31 | 61))),
            "mixed parameters: {decided:?} (one set gives 20, 31 or 61 ns)"
        );
    });
}

#[test]
fn a_denial_racing_rate_changes_is_decided_on_one_set() {
    denial_races_two_rate_changes(Plant::None);
}

#[test]
#[should_panic(expected = "mixed parameters")]
fn planted_unchecked_denial_is_caught() {
    denial_races_two_rate_changes(Plant::UncheckedDenial);
}
