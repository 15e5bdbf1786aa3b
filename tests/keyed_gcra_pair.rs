//! Keyed GcraPair: every key behaves exactly as its own GcraPair (random multi-key traces,
//! compared with the sequential model of two GCRAs applied together, with evictions at random
//! points), capacity and eviction, the floor after an eviction, errors naming fields, and 8
//! threads on one key.

mod model;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::Duration;

use hotlimit::{GcraPair, Keyed, ManualClock, Rate, WhenFull};
use model::gcra_pair::AllGcraModel;
use model::keyed_table::{each_key_matches, keyed_table};
use proptest::prelude::*;

const S: u64 = 1_000_000_000;

/// 2 per second (burst 2) AND 3 per minute (burst 3).
fn keyed(capacity: usize, when_full: WhenFull) -> Keyed<u64, GcraPair, ManualClock> {
    keyed_table(
        Keyed::gcra_pair(Rate::per_second(2).unwrap(), Rate::per_minute(3).unwrap()),
        capacity,
        when_full,
    )
}

#[test]
fn each_key_holds_both_rates_and_a_denial_charges_neither() {
    let k = keyed(10, WhenFull::DenyNewKeys);
    assert!(k.try_acquire_n_at(&1, 2, 0).is_ok());
    // The second's burst is spent: 500 ms; the minute has 1 left and is not charged.
    assert_eq!(
        k.try_acquire_at(&1, 0).unwrap_err().retry_after_nanos(),
        Some(S / 2)
    );
    assert!(k.try_acquire_at(&1, S).is_ok()); // the minute's third
    assert_eq!(
        k.try_acquire_at(&1, 2 * S).unwrap_err().retry_after_nanos(),
        Some(18 * S)
    );
    // Other keys are untouched; more than either burst is never.
    assert!(k.try_acquire_n_at(&2, 2, 2 * S).is_ok());
    assert!(k.try_acquire_n_at(&3, 4, 0).unwrap_err().is_never());
    assert_eq!(k.try_acquire_n_at(&4, 0, 0), Ok(()));
}

#[test]
fn full_table_waits_for_both_rates_to_go_idle() {
    let k = keyed(1, WhenFull::DenyNewKeys);
    k.try_acquire_at(&1, 0).unwrap();
    // Key 1 is idle when both TATs have passed: S₁ = 500 ms, S₂ = 20 s.
    let d = k.try_acquire_at(&2, S).unwrap_err();
    assert_eq!(d.retry_after_nanos(), Some(19 * S));
    assert!(k.try_acquire_at(&2, 20 * S).is_ok(), "key 1 idle at 20 s");
    assert_eq!(k.len(), 1);
}

#[test]
fn eviction_floor_never_frees_capacity_for_a_clock_set_back() {
    let k = keyed(10, WhenFull::DenyNewKeys);
    k.try_acquire_n_at(&1, 2, 10 * S).unwrap();
    assert_eq!(k.evict_idle_at(100 * S), 1);
    // A request before the floor sees no time passed since 100 s: the fresh state is no more
    // permissive than the evicted one (one permit fits at 99.5 s, as on a state at 100 s).
    assert_eq!(
        k.try_acquire_at(&1, 50 * S)
            .unwrap_err()
            .retry_after_nanos(),
        Some(49 * S + S / 2)
    );
    assert!(k.try_acquire_n_at(&1, 2, 100 * S).is_ok());
    assert!(k.try_acquire_at(&1, 100 * S).is_err());
}

#[test]
fn errors_name_the_field_and_rates_are_fixed() {
    let err =
        Keyed::<u8, GcraPair>::gcra_pair(Rate::per_second(1).unwrap(), Rate::per_hour(10).unwrap())
            .second_burst(0)
            .clock(ManualClock::new())
            .build()
            .unwrap_err();
    assert_eq!(err.field(), "second_burst");
    let err = Keyed::<u8, GcraPair>::gcra_pair(
        Rate::new(10, Duration::from_nanos(5)).unwrap(),
        Rate::per_hour(10).unwrap(),
    )
    .clock(ManualClock::new())
    .build()
    .unwrap_err();
    assert_eq!(err.field(), "first_rate");
    let k = keyed(10, WhenFull::DenyNewKeys);
    assert_eq!(
        k.set_rate(1, Rate::per_second(5).unwrap())
            .unwrap_err()
            .field(),
        "rate"
    );
    assert_eq!(
        k.set_default_rate(Rate::per_second(5).unwrap())
            .unwrap_err()
            .field(),
        "rate"
    );
}

#[test]
fn eight_threads_on_one_key_get_exactly_the_smaller_burst() {
    let k: Keyed<u64, GcraPair, ManualClock> =
        Keyed::gcra_pair(Rate::per_second(10).unwrap(), Rate::per_hour(10).unwrap())
            .first_burst(1_000)
            .second_burst(700)
            .clock(ManualClock::new())
            .build()
            .unwrap();
    let granted = AtomicU64::new(0);
    let barrier = Barrier::new(8);
    thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                barrier.wait();
                let mine = (0..800).filter(|_| k.try_acquire_at(&7, 0).is_ok()).count();
                // Relaxed: a counter read after the scope joins.
                granted.fetch_add(mine as u64, Ordering::Relaxed);
            });
        }
    });
    assert_eq!(granted.into_inner(), 700);
}

/// One step of a multi-key trace.
#[derive(Debug, Clone)]
enum Step {
    /// Advance the clock, then ask for n permits for key `key`.
    Ask { gap: u64, key: u64, n: u32 },
    /// Evict every idle key at the current time.
    Sweep,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Every key's decisions and waits equal its own model of two GCRAs applied together,
    /// whatever evictions happen in between (an evicted key is idle: its fresh state from the
    /// floor decides the same as the old one).
    #[test]
    fn every_key_matches_its_own_model(
        (l1, p1, b1, l2, p2, b2) in (1u64..=20, 1u64..=5, 1u64..=20, 1u64..=20, 5u64..=60, 1u64..=20),
        steps in prop::collection::vec(prop_oneof![
            10 => (0u64..3_000_000_000, 0u64..4, 0u32..6).prop_map(|(gap, key, n)| Step::Ask { gap, key, n }),
            1 => Just(Step::Sweep),
        ], 1..150)
    ) {
        let (r1, r2) = (
            Rate::new(l1, Duration::from_secs(p1)).unwrap(),
            Rate::new(l2, Duration::from_secs(p2)).unwrap(),
        );
        let k: Keyed<u64, GcraPair, ManualClock> = Keyed::gcra_pair(r1, r2)
            .first_burst(b1)
            .second_burst(b2)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let mut models: Vec<AllGcraModel> = (0..4)
            .map(|_| AllGcraModel::new(&[(l1, p1 * S, b1), (l2, p2 * S, b2)]))
            .collect();
        let ask = |step: &Step| match *step {
            Step::Ask { gap, key, n } => Some((gap, key, n)),
            Step::Sweep => None,
        };
        each_key_matches(&k, &steps, ask, &mut models, |m, n, now| m.acquire(n, now), 4)?;
    }
}
