//! Keyed against per-key reference models: the worked example, capacity and eviction,
//! rate overrides, a flood of unique keys, and random multi-key traces where every key must
//! behave exactly as its own GCRA definition (or exact log, or bucketed window), with
//! evictions at random points; default-rate changes against per-key overrides, and no
//! over-admission across a rate change.

mod model;

use std::time::Duration;

use hotlimit::{Gcra, Keyed, ManualClock, Rate, SlidingLog, WhenFull};
use model::gcra::GcraModel;
use model::keyed_table::{each_key_matches, keyed_table};
use model::log::LogModel;
use proptest::prelude::*;

const S: u64 = 1_000_000_000;

fn keyed(rate: Rate, capacity: usize, when_full: WhenFull) -> Keyed<u64, Gcra, ManualClock> {
    keyed_table(Keyed::gcra(rate), capacity, when_full)
}

#[test]
fn worked_example_per_user() {
    let clock = ManualClock::new();
    let k: Keyed<&str, Gcra, ManualClock> = Keyed::gcra(Rate::per_minute(3).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    for _ in 0..3 {
        k.try_acquire(&"alice").unwrap();
    }
    clock.set(Duration::from_secs(1));
    let d = k.try_acquire(&"alice").unwrap_err();
    assert_eq!(d.retry_after(), Some(Duration::from_secs(19)));
    // Bob is unaffected by Alice.
    for _ in 0..3 {
        k.try_acquire(&"bob").unwrap();
    }
    clock.set(Duration::from_secs(20));
    k.try_acquire(&"alice").unwrap();
    assert_eq!(k.len(), 2);
}

#[test]
fn zero_permits_create_nothing_and_too_many_is_never() {
    let k = keyed(Rate::per_second(5).unwrap(), 10, WhenFull::DenyNewKeys);
    assert_eq!(k.try_acquire_n_at(&1, 0, 0), Ok(()));
    assert!(k.is_empty());
    assert!(k.try_acquire_n_at(&1, 6, 0).unwrap_err().is_never());
    // The state created for that denial is idle and goes at the next sweep.
    assert_eq!(k.evict_idle_at(0), 1);
    assert!(k.is_empty());
}

#[test]
fn full_table_denies_new_keys_until_one_goes_idle() {
    let k = keyed(Rate::per_second(1).unwrap(), 3, WhenFull::DenyNewKeys);
    for key in 0..3 {
        k.try_acquire_at(&key, key * 100).unwrap();
    }
    // Key 0 is idle from 1 s, key 1 from 1.1 s, key 2 from 1.2 s.
    let d = k.try_acquire_at(&9, 500_000_000).unwrap_err();
    assert_eq!(d.retry_after_nanos(), Some(500_000_000));
    // Existing keys are served while the table is full.
    assert!(k.try_acquire_at(&2, S + 200).is_ok());
    assert_eq!(k.len(), 3);
    // From 1 s on, key 0 is idle: the sweep evicts it and the new key gets its place.
    assert!(k.try_acquire_at(&9, S).is_ok());
    assert_eq!(k.len(), 3);
    // Key 0 starts fresh: its evicted state carried no information.
    assert!(k.try_acquire_at(&0, 2 * S + 300).is_ok());
}

#[test]
fn evict_soonest_idle_always_admits_new_keys() {
    let k = keyed(Rate::per_second(1).unwrap(), 16, WhenFull::EvictSoonestIdle);
    for key in 0..1_000 {
        assert!(k.try_acquire_at(&key, 0).is_ok(), "key {key}");
        assert!(k.len() <= 16);
    }
}

#[test]
fn eviction_never_frees_capacity_for_a_clock_set_back() {
    let k = keyed(Rate::per_second(1).unwrap(), 10, WhenFull::DenyNewKeys);
    k.try_acquire_at(&1, 10 * S).unwrap();
    // Idle from 11 s; evicted at 20 s.
    assert_eq!(k.evict_idle_at(20 * S), 1);
    // A request at a `now` before the eviction sees no time passed since 20 s (the floor):
    // the fresh state is no more permissive than the evicted one.
    assert_eq!(
        k.try_acquire_at(&1, 10 * S + 1)
            .unwrap_err()
            .retry_after_nanos(),
        Some(10 * S - 1)
    );
    assert!(k.try_acquire_at(&1, 20 * S).is_ok());
}

#[test]
fn rate_override_and_runtime_change() {
    let k = keyed(Rate::per_second(1).unwrap(), 10, WhenFull::DenyNewKeys);
    k.set_rate(7, Rate::per_second(10).unwrap()).unwrap();
    assert!(k.try_acquire_n_at(&7, 10, 0).is_ok());
    assert!(k.try_acquire_n_at(&8, 2, 0).unwrap_err().is_never());
    // Changing back to the default at runtime keeps the TAT (1 s: ten grants of 100 ms):
    // the next request under the default (I = 1 s, τ = 1 s) fits at 1 s... and not before.
    k.clear_rate(&7);
    assert_eq!(
        k.try_acquire_at(&7, 0).unwrap_err().retry_after_nanos(),
        Some(S)
    );
    assert!(k.try_acquire_at(&7, S).is_ok());
    // The override survives eviction.
    k.set_rate(9, Rate::per_second(100).unwrap()).unwrap();
    k.try_acquire_at(&9, 0).unwrap();
    k.evict_idle_at(10 * S);
    assert!(k.try_acquire_n_at(&9, 100, 10 * S).is_ok());
    assert!(k
        .set_rate(1, Rate::new(10, Duration::from_nanos(5)).unwrap())
        .is_err());
}

#[test]
fn extreme_times_never_panic() {
    let k = keyed(Rate::per_second(1).unwrap(), 4, WhenFull::DenyNewKeys);
    for now in [u64::MAX, u64::MAX - 1, u64::MAX - 2, u64::MAX - S, 0] {
        let _ = k.try_acquire_at(&1, now);
        let _ = k.try_acquire_n_at(&2, 1, now);
        let _ = k.evict_idle_at(now);
    }
    // The top of the range is exhausted: "never", not a panic or a wrap.
    assert!(k.try_acquire_at(&3, u64::MAX).unwrap_err().is_never());
}

#[test]
fn flood_of_unique_keys_stays_under_capacity() {
    // A million unique keys in release builds; a tenth of that unoptimised (CI runs debug).
    let keys: u64 = if cfg!(debug_assertions) {
        100_000
    } else {
        1_000_000
    };
    let capacity = 10_000;
    for when_full in [WhenFull::DenyNewKeys, WhenFull::EvictSoonestIdle] {
        let k = keyed(Rate::per_second(1_000).unwrap(), capacity, when_full);
        let mut granted = 0u64;
        for key in 0..keys {
            // One new key every microsecond; each is busy for 1 ms after its grant, so about
            // 1,000 are busy at a time and a sweep always finds idle ones.
            if k.try_acquire_at(&key, key * 1_000).is_ok() {
                granted += 1;
            }
            assert!(
                k.len() <= capacity,
                "{when_full:?} key {key}: len {}",
                k.len()
            );
        }
        assert_eq!(granted, keys, "{when_full:?}");
    }
}

#[test]
fn sliding_log_per_key_eviction_and_rate_change() {
    let k: Keyed<u64, SlidingLog, ManualClock> = Keyed::sliding_log(Rate::per_second(3).unwrap())
        .capacity(2)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    for t in 0..3 {
        k.try_acquire_at(&1, t * 100).unwrap();
    }
    assert_eq!(
        k.try_acquire_at(&1, 500).unwrap_err().retry_after_nanos(),
        Some(S - 500)
    );
    k.try_acquire_at(&2, 0).unwrap();
    // Full, both busy until 1 s + 200 ns and 1 s: the new key waits for the first to go idle.
    assert_eq!(
        k.try_acquire_at(&3, 10).unwrap_err().retry_after_nanos(),
        Some(S - 10)
    );
    assert!(
        k.try_acquire_at(&3, S).is_ok(),
        "key 2 is idle at 1 s and is evicted"
    );
    // A rate change keeps the key's grants: at 1 s + 50 ns the grants at 100 and 200 ns are
    // still in the window, so the new limit of 4 leaves room for two more.
    k.set_rate(1, Rate::per_second(4).unwrap()).unwrap();
    assert!(k.try_acquire_at(&1, S + 50).is_ok());
    assert!(k.try_acquire_at(&1, S + 50).is_ok());
    assert_eq!(
        k.try_acquire_at(&1, S + 50)
            .unwrap_err()
            .retry_after_nanos(),
        Some(50)
    );
    assert!(k.try_acquire_n_at(&1, 5, 0).unwrap_err().is_never());
    assert!(
        Keyed::<u64, SlidingLog>::sliding_log(Rate::per_second(1 << 29).unwrap())
            .build()
            .is_err()
    );
}

/// One step of a random multi-key trace.
#[derive(Debug, Clone)]
enum Step {
    /// Advance the clock, then ask for n permits for the key.
    Ask { gap: u64, key: u64, n: u32 },
    /// Set the clock back, then ask.
    Back { back: u64, key: u64, n: u32 },
    /// Sweep idle keys at the current time.
    Evict,
}

/// A step as [`each_key_matches`] takes it (a clock that never goes back): an ask, or a sweep.
fn ask_or_evict(step: &Step) -> Option<(u64, u64, u32)> {
    match *step {
        Step::Ask { gap, key, n } => Some((gap, key, n)),
        Step::Back { .. } => unreachable!(),
        Step::Evict => None,
    }
}

fn steps(burst: u64, period: u64, back: bool) -> impl Strategy<Value = Vec<Step>> {
    let n = 0..=(burst + 1) as u32;
    let key = 0u64..6;
    let back_weight = if back { 2 } else { 0 };
    let step = prop_oneof![
        10 => (0..=period / 2 + 1, key.clone(), n.clone()).prop_map(|(gap, key, n)| Step::Ask { gap, key, n }),
        2 => (0..=period * 2, key.clone(), n.clone()).prop_map(|(gap, key, n)| Step::Ask { gap, key, n }),
        back_weight => (0..=period, key, n).prop_map(|(back, key, n)| Step::Back { back, key, n }),
        2 => Just(Step::Evict),
    ];
    prop::collection::vec(step, 1..150)
}

fn config() -> impl Strategy<Value = (u64, u64, u64)> {
    (1u64..=50, 1u64..=10_000_000_000, 1u64..=60)
        .prop_filter("period ≥ limit", |(l, p, _)| p >= l)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    /// With room for every key and a clock that never goes back, every decision and every
    /// retry_after equals that key's own GCRA definition, whatever the evictions.
    #[test]
    fn each_key_matches_its_model(
        (limit, period, burst, steps) in config().prop_flat_map(|(l, p, b)| {
            (Just(l), Just(p), Just(b), steps(b, p, false))
        })
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let k: Keyed<u64, Gcra, ManualClock> =
            Keyed::gcra(rate).burst(burst).capacity(6).clock(ManualClock::new()).build().unwrap();
        let mut models: Vec<GcraModel> = (0..6).map(|_| GcraModel::new(limit, period, burst)).collect();
        each_key_matches(&k, &steps, ask_or_evict, &mut models, |m, n, now| m.acquire(n, now), 6)?;
    }

    /// With a table too small for the keys and a clock that jumps back, the keyed limiter may
    /// deny more (a full table, a fresh state's floor), but every grant it makes is one the
    /// key's GCRA definition allows given the grants before it: it never over-admits.
    #[test]
    fn never_over_admits_with_a_small_table_and_clock_jumps(
        (limit, period, burst, steps) in config().prop_flat_map(|(l, p, b)| {
            (Just(l), Just(p), Just(b), steps(b, p, true))
        }),
        capacity in 1usize..=4,
        evict_busy in any::<bool>(),
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let when_full = if evict_busy { WhenFull::EvictSoonestIdle } else { WhenFull::DenyNewKeys };
        let k: Keyed<u64, Gcra, ManualClock> = Keyed::gcra(rate)
            .burst(burst)
            .capacity(capacity)
            .when_full(when_full)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let mut models: Vec<GcraModel> = (0..6).map(|_| GcraModel::new(limit, period, burst)).collect();
        let mut now = 0u64;
        for (i, step) in steps.iter().enumerate() {
            let (key, n) = match *step {
                Step::Ask { gap, key, n } => { now += gap; (key, n) }
                Step::Back { back, key, n } => { now = now.saturating_sub(back); (key, n) }
                Step::Evict => { k.evict_idle_at(now); continue; }
            };
            if k.try_acquire_n_at(&key, n, now).is_ok() {
                if evict_busy {
                    // A busy key evicted to make room forgets its state (documented): it
                    // restarts, so only check that its model would have started afresh too.
                    continue;
                }
                let want = models[key as usize].acquire(n, now);
                prop_assert!(want.is_ok(), "step {} ({:?}) at {}: granted, model says {:?}", i, step, now, want);
            }
            prop_assert!(k.len() <= capacity);
        }
    }
}

proptest! {
    // Each case allocates rings per key; fewer cases keep the debug run to a few seconds.
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// The same for per-key sliding logs: each key is exactly its own exact log.
    #[test]
    fn each_key_matches_its_log_model(
        (limit, period, _b, steps) in config().prop_flat_map(|(l, p, b)| {
            (Just(l), Just(p), Just(b), steps(l, p, false))
        })
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let k: Keyed<u64, SlidingLog, ManualClock> =
            Keyed::sliding_log(rate).capacity(6).clock(ManualClock::new()).build().unwrap();
        let mut models: Vec<LogModel> = (0..6).map(|_| LogModel::new(limit, period)).collect();
        each_key_matches(&k, &steps, ask_or_evict, &mut models, |m, n, now| m.acquire(n, now), 6)?;
    }
}

// ---------------------------------------------------------------------------------------------
// SlidingWindow per key, changing the default rate, the bound on overrides.

use hotlimit::{Clock, KeyedState, SlidingWindow};
use model::window::{BucketModel, WindowLog};

fn window_keyed(
    rate: Rate,
    buckets: usize,
    capacity: usize,
) -> Keyed<u64, SlidingWindow, ManualClock> {
    Keyed::sliding_window(rate)
        .buckets(buckets)
        .capacity(capacity)
        .clock(ManualClock::new())
        .build()
        .unwrap()
}

#[test]
fn sliding_window_per_key_eviction_and_rate_change() {
    // 3 per second, 10 buckets of 100 ms.
    let k = window_keyed(Rate::per_second(3).unwrap(), 10, 2);
    for t in 0..3 {
        k.try_acquire_at(&1, t * 100).unwrap();
    }
    // Bucket [0, 100 ms) is counted whole until 1.1 s − 1 ns.
    assert_eq!(
        k.try_acquire_at(&1, 500).unwrap_err().retry_after_nanos(),
        Some(1_100_000_000 - 1 - 500)
    );
    k.try_acquire_at(&2, 0).unwrap();
    // Full, both busy until 1.1 s − 1 ns: the new key waits for the first to go idle.
    assert_eq!(
        k.try_acquire_at(&3, 10).unwrap_err().retry_after_nanos(),
        Some(1_100_000_000 - 1 - 10)
    );
    assert_eq!(k.evict_idle_at(1_099_999_998), 0, "still counted");
    assert!(
        k.try_acquire_at(&3, 1_099_999_999).is_ok(),
        "keys 1 and 2 went idle"
    );
    assert_eq!(k.len(), 1, "the sweep evicted both idle keys");
    // A rate change carries the counted permits: key 3's grant at 1.099999999 s moves into the
    // new window (limit 2, 1 s, 100 ms buckets) and still counts.
    k.set_rate(3, Rate::per_second(2).unwrap()).unwrap();
    assert!(k.try_acquire_at(&3, 1_099_999_999).is_ok());
    assert!(k.try_acquire_at(&3, 1_099_999_999).is_err());
    assert!(k.try_acquire_n_at(&3, 3, 0).unwrap_err().is_never());
}

/// A rate change re-records each carried bucket at its last instant, but never after the
/// newest call: re-recorded later than `now`, it would push the new window's floor ahead of
/// the clock, and an older bucket would then leave the new window early.
#[test]
fn window_rate_change_records_carried_permits_no_later_than_the_newest_call() {
    // 10 per 50 s: buckets of 5 s.
    let k: Keyed<u64, SlidingWindow, ManualClock> =
        Keyed::sliding_window(Rate::new(10, Duration::from_secs(50)).unwrap())
            .clock(ManualClock::new())
            .build()
            .unwrap();
    k.try_acquire_at(&1, 4_600_000_000).unwrap(); // bucket [0, 5 s)
    k.try_acquire_at(&1, 5_200_000_000).unwrap(); // bucket [5 s, 10 s)
    k.clock().set(Duration::from_millis(5_500));
    // 2 per second, buckets of 100 ms: both grants are in the window (4.5 s, 5.5 s].
    k.set_default_rate(Rate::per_second(2).unwrap()).unwrap();
    let d = k.try_acquire_at(&1, 5_500_000_000).unwrap_err();
    // The grant at 4.6 s, re-recorded at 4.999999999 s (its bucket's end), leaves the new
    // window when the floor passes bucket [4.9 s, 5 s): at 5 s + 1 s − 1 ns.
    assert_eq!(d.retry_after_nanos(), Some(5_999_999_999 - 5_500_000_000));
}

#[test]
fn sliding_window_override_keeps_the_bucket_count() {
    let k = window_keyed(Rate::per_second(1).unwrap(), 2, 10);
    k.set_rate(7, Rate::per_second(2).unwrap()).unwrap();
    k.try_acquire_n_at(&7, 2, 0).unwrap();
    // 2 buckets of 500 ms: bucket [0, 500 ms) counts until 1.5 s − 1 ns (with the default 10
    // buckets it would be 1.1 s − 1 ns).
    assert_eq!(
        k.try_acquire_at(&7, 0).unwrap_err().retry_after_nanos(),
        Some(1_499_999_999)
    );
}

#[test]
fn default_rate_change_reaches_every_key_without_an_override() {
    let k = keyed(Rate::per_second(1).unwrap(), 10, WhenFull::DenyNewKeys);
    k.set_rate(9, Rate::per_second(100).unwrap()).unwrap();
    k.try_acquire_at(&1, 0).unwrap();
    k.try_acquire_at(&9, 0).unwrap();
    k.set_default_rate(Rate::per_second(4).unwrap()).unwrap();
    // Key 1's TAT (1 s) carried: under I = 250 ms, τ = 1 s the next fits at 250 ms.
    assert_eq!(
        k.try_acquire_at(&1, 0).unwrap_err().retry_after_nanos(),
        Some(250_000_000)
    );
    // A new key gets the new default; key 9 keeps its override until cleared.
    assert!(k.try_acquire_n_at(&2, 4, 0).is_ok());
    assert!(k.try_acquire_n_at(&2, 1, 0).is_err());
    assert!(k.try_acquire_n_at(&9, 99, 0).is_ok());
    k.clear_rate(&9);
    assert!(k.try_acquire_n_at(&9, 5, 10 * S).unwrap_err().is_never());
    assert!(k.try_acquire_n_at(&9, 4, 10 * S).is_ok());
    // A key evicted and re-created also gets the new default.
    k.evict_idle_at(20 * S);
    assert!(k.is_empty());
    assert!(k.try_acquire_n_at(&1, 4, 20 * S).is_ok());
    assert!(k
        .set_default_rate(Rate::new(10, Duration::from_nanos(5)).unwrap())
        .is_err());
    assert!(
        k.try_acquire_n_at(&3, 4, 20 * S).is_ok(),
        "a rejected change changes nothing"
    );
}

#[test]
fn overrides_are_bounded_by_capacity() {
    let k = keyed(Rate::per_second(1).unwrap(), 3, WhenFull::DenyNewKeys);
    for key in 0..3 {
        k.set_rate(key, Rate::per_second(10).unwrap()).unwrap();
    }
    assert_eq!(k.overrides(), 3);
    let e = k.set_rate(3, Rate::per_second(10).unwrap()).unwrap_err();
    assert_eq!(e.field(), "overrides");
    // Replacing an existing override needs no new place.
    k.set_rate(2, Rate::per_second(20).unwrap()).unwrap();
    k.clear_rate(&0);
    k.clear_rate(&0); // clearing twice frees one place, once
    assert_eq!(k.overrides(), 2);
    k.set_rate(3, Rate::per_second(10).unwrap()).unwrap();
    assert!(k.set_rate(4, Rate::per_second(10).unwrap()).is_err());
    // The keys' states are still bounded separately, by the same capacity.
    for key in 0..3 {
        k.try_acquire_at(&key, 0).unwrap();
    }
    assert_eq!(k.len(), 3);
}

fn window_config() -> impl Strategy<Value = (u64, u64, u64)> {
    (1u64..=50, 1u64..=10_000_000_000, 1u64..=12)
        .prop_filter("period ≥ limit, buckets", |(l, p, b)| p >= l && p >= b)
}

/// Checks that every window of length `period` ending at a time in `at` holds at most `limit`
/// of the key's grants made after `since` (grants at or before it are forgotten).
fn check_no_window_over(
    grants: &WindowLog,
    at: &[u64],
    since: u64,
    period: u64,
    limit: u64,
) -> Result<(), TestCaseError> {
    for &t in at {
        let lo = (t.saturating_sub(period) + 1).max(since.saturating_add(1));
        let got = grants.granted_in(lo, t);
        prop_assert!(
            got <= u128::from(limit),
            "{} permits in the window ending at {} (limit {})",
            got,
            t,
            limit
        );
    }
    Ok(())
}

proptest! {
    // Each case builds a window per key; fewer cases keep the debug run to a few seconds.
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Each key is exactly its own strict window (the bucketed decision written out
    /// sequentially), whatever the evictions.
    #[test]
    fn each_key_matches_its_window_model(
        (limit, period, buckets, steps) in window_config().prop_flat_map(|(l, p, b)| {
            (Just(l), Just(p), Just(b), steps(l, p, false))
        })
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let k = window_keyed(rate, buckets as usize, 6);
        let mut models: Vec<BucketModel> =
            (0..6).map(|_| BucketModel::new(limit, period, buckets, false)).collect();
        each_key_matches(&k, &steps, ask_or_evict, &mut models, |m, n, now| m.acquire(u64::from(n), now), 6)?;
    }

    /// With a table too small for the keys (sweeps on insert, new keys denied when too few are
    /// idle), every grant is one the key's own window model allows given the grants before
    /// it: a sweep only ever evicts a window that counts nothing.
    #[test]
    fn windows_never_over_admit_with_a_small_table(
        (limit, period, buckets, steps) in window_config().prop_flat_map(|(l, p, b)| {
            (Just(l), Just(p), Just(b), steps(l, p, false))
        }),
        capacity in 1usize..=4,
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let k = window_keyed(rate, buckets as usize, capacity);
        let mut models: Vec<BucketModel> =
            (0..6).map(|_| BucketModel::new(limit, period, buckets, false)).collect();
        let mut now = 0u64;
        for (i, step) in steps.iter().enumerate() {
            let (key, n) = match *step {
                Step::Ask { gap, key, n } => { now += gap; (key, n) }
                Step::Back { .. } => unreachable!(),
                Step::Evict => { k.evict_idle_at(now); continue; }
            };
            if k.try_acquire_n_at(&key, n, now).is_ok() {
                let want = models[key as usize].acquire(u64::from(n), now);
                prop_assert!(want.is_ok(), "step {} ({:?}) at {}: granted, model says {:?}", i, step, now, want);
            }
            prop_assert!(k.len() <= capacity);
        }
    }

    /// With a clock that jumps back as well: each key is exactly its own window model, where
    /// an evicted key's model restarts, like its fresh state, denying every request below the
    /// `Keyed`'s floor (the greatest sweep time) until the floor.
    #[test]
    fn each_key_matches_its_window_model_with_clock_jumps(
        (limit, period, buckets, steps) in window_config().prop_flat_map(|(l, p, b)| {
            (Just(l), Just(p), Just(b), steps(l, p, true))
        })
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let k = window_keyed(rate, buckets as usize, 6);
        let fresh = || BucketModel::new(limit, period, buckets, false);
        // Per key: the model and the floor its state was created with (None: no state).
        let mut models: Vec<(BucketModel, Option<u64>)> = (0..6).map(|_| (fresh(), None)).collect();
        let (mut now, mut floor) = (0u64, 0u64);
        for (i, step) in steps.iter().enumerate() {
            let (key, n) = match *step {
                Step::Ask { gap, key, n } => { now += gap; (key, n) }
                Step::Back { back, key, n } => { now = now.saturating_sub(back); (key, n) }
                Step::Evict => {
                    floor = floor.max(now);
                    let mut idle = 0;
                    for (m, created) in models.iter_mut() {
                        // Idle: nothing counted at the model's effective time for `now`.
                        let start = m.bucket_seen * m.width;
                        if created.is_some() && m.counted(now.max(start)) == 0 {
                            (*m, *created) = (fresh(), None);
                            idle += 1;
                        }
                    }
                    prop_assert_eq!(k.evict_idle_at(now), idle, "step {} at {}", i, now);
                    continue;
                }
            };
            let real = k.try_acquire_n_at(&key, n, now).map_err(|d| d.retry_after_nanos());
            let (m, created) = &mut models[key as usize];
            if n > 0 && created.is_none() {
                *created = Some(floor);
            }
            let floor_of_key = created.unwrap_or(0);
            // A request below the floor its state was created with is denied until the floor
            // (an evicted window may still have counted permits then); never-grantable first.
            let want = if n > 0 && u64::from(n) <= limit && now < floor_of_key {
                Err(Some(floor_of_key - now))
            } else {
                m.acquire(u64::from(n), now.max(floor_of_key))
            };
            prop_assert_eq!(real, want, "step {} ({:?}) at {}", i, step, now);
        }
    }
}

/// A rate switch in a trace: the step at which it happens, and the new rate.
fn switch() -> impl Strategy<Value = (usize, u64, u64)> {
    (0usize..150, 1u64..=50, 1u64..=10_000_000_000)
        .prop_filter("period ≥ limit", |(_, l, p)| p >= l)
}

/// Per key, its grants and the times of those after the switch; and the switch's time.
type Switched = (Vec<WindowLog>, Vec<Vec<u64>>, u64);

/// Drives `a` (whose default rate changes at step `at`) and `b` (where every key gets an
/// override to the new rate instead) with the same trace: they must decide alike. Returns
/// the grants per key, as (time, permits), and the times of grants after the switch.
fn drive_switch<L: KeyedState>(
    a: &Keyed<u64, L, ManualClock>,
    b: &Keyed<u64, L, ManualClock>,
    steps: &[Step],
    at: usize,
    new_rate: Rate,
) -> Result<Switched, TestCaseError> {
    let mut logs: Vec<WindowLog> = (0..6).map(|_| WindowLog::new()).collect();
    let mut after: Vec<Vec<u64>> = vec![Vec::new(); 6];
    let (mut now, mut switched) = (0u64, u64::MAX);
    for (i, step) in steps.iter().enumerate() {
        if i == at {
            switched = now;
            a.clock().set(Duration::from_nanos(now));
            b.clock().set(Duration::from_nanos(now));
            prop_assert_eq!(a.clock().now(), now);
            a.set_default_rate(new_rate).unwrap();
            for key in 0..6 {
                b.set_rate(key, new_rate).unwrap();
            }
        }
        match *step {
            Step::Ask { gap, key, n } => {
                now += gap;
                let ra = a
                    .try_acquire_n_at(&key, n, now)
                    .map_err(|d| d.retry_after_nanos());
                let rb = b
                    .try_acquire_n_at(&key, n, now)
                    .map_err(|d| d.retry_after_nanos());
                prop_assert_eq!(ra, rb, "step {} ({:?}) at {}", i, step, now);
                if ra.is_ok() && n > 0 {
                    logs[key as usize].record(now, u64::from(n));
                    if i >= at {
                        after[key as usize].push(now);
                    }
                }
            }
            Step::Back { .. } => unreachable!(),
            Step::Evict => {
                prop_assert_eq!(a.evict_idle_at(now), b.evict_idle_at(now));
            }
        }
    }
    Ok((logs, after, switched))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Changing the default rate mid-trace is, for every key, the same as giving it an override
    /// to that rate; and for windows and logs no key over-admits across the switch: every
    /// window of the new period that ends at a grant after the switch holds at most the new
    /// limit, grants before the switch included (at their real times), except those made one
    /// old period or more before the switch, which the old state had forgotten.
    #[test]
    fn default_rate_change_is_an_override_on_every_key_and_never_over_admits(
        (limit, period, buckets, steps) in window_config().prop_flat_map(|(l, p, b)| {
            (Just(l), Just(p), Just(b), steps(l, p, false))
        }),
        (at, new_limit, new_period) in switch(),
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let new_rate = Rate::new(new_limit, Duration::from_nanos(new_period)).unwrap();
        let make_gcra = || Keyed::<u64, Gcra>::gcra(rate).capacity(6).clock(ManualClock::new()).build().unwrap();
        drive_switch(&make_gcra(), &make_gcra(), &steps, at, new_rate)?;
        let make_log = || Keyed::<u64, SlidingLog>::sliding_log(rate).capacity(6).clock(ManualClock::new()).build().unwrap();
        let (logs, after, switched) = drive_switch(&make_log(), &make_log(), &steps, at, new_rate)?;
        let since = switched.saturating_sub(period);
        for (log, after) in logs.iter().zip(&after) {
            check_no_window_over(log, after, since, new_period, new_limit)?;
        }
        if new_period >= buckets {
            let make_window = || window_keyed(rate, buckets as usize, 6);
            let (logs, after, _) = drive_switch(&make_window(), &make_window(), &steps, at, new_rate)?;
            for (log, after) in logs.iter().zip(&after) {
                check_no_window_over(log, after, since, new_period, new_limit)?;
            }
        }
    }
}

/// A per-key log moved by a rate change keeps the carried grants in the order its cursor
/// visits the ring. Rings above 16 slots visit their slots in a strided order; carried grants
/// once landed in ring positions the cursor reached early, so a key at a frozen clock was
/// denied long before its limit (the intermittent under-admission of the hot-keys stress
/// test). Sequentially, after the move, the key must grant exactly the rest of its limit.
#[test]
fn log_rate_change_keeps_the_remaining_limit_exact() {
    for limit in [1u64, 2, 16, 17, 20, 50, 1_000] {
        for before in [0, 1, limit / 3, limit - 1, limit] {
            let k: Keyed<u64, SlidingLog, ManualClock> =
                Keyed::sliding_log(Rate::per_second(limit).unwrap())
                    .clock(ManualClock::new())
                    .build()
                    .unwrap();
            let now = 7 * S;
            k.clock().set(Duration::from_nanos(now));
            for _ in 0..before {
                k.try_acquire_at(&1, now).unwrap();
            }
            k.set_default_rate(Rate::per_second(limit).unwrap())
                .unwrap();
            for i in before..limit {
                assert!(
                    k.try_acquire_at(&1, now).is_ok(),
                    "limit {limit}: grant {i} after {before} carried was denied"
                );
            }
            let d = k.try_acquire_at(&1, now).unwrap_err();
            assert_eq!(
                d.retry_after_nanos(),
                Some(S),
                "limit {limit}, {before} carried"
            );
            // Later grants follow the exact log: the carried ones leave at now + 1 s.
            if before > 0 {
                assert!(k.try_acquire_n_at(&1, before as u32, now + S).is_ok());
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// A per-key log across a default-rate change, sequentially, against the exact model: before
    /// the switch the key is the exact log of the old rate; after it, the exact log of the new
    /// rate that starts with the newest new-`limit` grants the old log held (as documented on
    /// `set_default_rate`). Limits up to 40 cover the strided rings (above 16 slots).
    #[test]
    fn log_across_a_rate_change_is_the_exact_log_with_the_carried_grants(
        (limit, period) in (1u64..=40, 1u64..=2_000),
        (new_limit, new_period) in (1u64..=40, 1u64..=2_000),
        steps in prop::collection::vec((0u64..=120, 0u32..=3), 1..120),
        at in 0usize..120,
    ) {
        let period = period.max(limit);
        let new_period = new_period.max(new_limit);
        let k: Keyed<u64, SlidingLog, ManualClock> =
            Keyed::sliding_log(Rate::new(limit, Duration::from_nanos(period)).unwrap())
                .clock(ManualClock::new())
                .build()
                .unwrap();
        let mut model = LogModel::new(limit, period);
        let mut now = 1_000u64;
        for (i, &(gap, n)) in steps.iter().enumerate() {
            if i == at {
                k.clock().set(Duration::from_nanos(now));
                k.set_default_rate(Rate::new(new_limit, Duration::from_nanos(new_period)).unwrap())
                    .unwrap();
                let carried = model.grants();
                let keep = &carried[carried.len().saturating_sub(new_limit as usize)..];
                model = LogModel::new(new_limit, new_period);
                for &t in keep {
                    prop_assert!(model.acquire(1, u64::try_from(t).unwrap()).is_ok());
                }
            }
            now += gap;
            let real = k.try_acquire_n_at(&7, n, now).map_err(|d| d.retry_after_nanos());
            let want = model.acquire(n, now);
            prop_assert_eq!(real, want, "step {} (n {}) at {}, switch at {}", i, n, now, at);
        }
    }
}

#[test]
fn debug_shows_the_default_rate_in_force() {
    let k = keyed(Rate::per_second(3).unwrap(), 10, WhenFull::DenyNewKeys);
    assert!(format!("{k:?}").contains("limit: 3"), "{k:?}");
    k.set_default_rate(Rate::per_second(100).unwrap()).unwrap();
    let shown = format!("{k:?}");
    assert!(
        shown.contains("limit: 100") && !shown.contains("limit: 3,"),
        "{shown}"
    );
}

// ---------------------------------------------------------------------------------------------
// The clock read inside the call: in a table past 1 MiB, `try_acquire_n` finds the key's slot
// and prefetches it before it reads the clock; its decisions must be `try_acquire_n_at`'s at
// the time read, for every inline state and key type, in small tables and large ones.

/// `steps` through `clocked.try_acquire_n` (its clock advanced by each step's gap; an
/// eviction sweeps both) and through `given.try_acquire_n_at`: the same decisions and waits.
fn clocked_matches_given<K, L>(
    clocked: &Keyed<K, L, ManualClock>,
    given: &Keyed<K, L, ManualClock>,
    steps: &[Step],
    key_of: impl Fn(u64) -> K,
) -> Result<(), TestCaseError>
where
    K: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
    L: KeyedState,
{
    let mut now = 0u64;
    for (i, step) in steps.iter().enumerate() {
        match ask_or_evict(step) {
            Some((gap, key, n)) => {
                now += gap;
                clocked.clock().advance(Duration::from_nanos(gap));
                let key = key_of(key);
                let real = clocked
                    .try_acquire_n(&key, n)
                    .map_err(|d| d.retry_after_nanos());
                let want = given
                    .try_acquire_n_at(&key, n, now)
                    .map_err(|d| d.retry_after_nanos());
                prop_assert_eq!(real, want, "step {} ({:?}) at {}", i, step, now);
            }
            None => {
                clocked.evict_idle_at(now);
                given.evict_idle_at(now);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// `Keyed<u64, Gcra>` and `Keyed<String, Gcra>` (a short and a long key), capacity 6 (the
    /// clock read first) and 200,000 (past 1 MiB: the slot prefetched, then the clock).
    #[test]
    fn the_clock_read_inside_decides_as_the_time_given(
        (limit, period, burst, steps) in config().prop_flat_map(|(l, p, b)| {
            (Just(l), Just(p), Just(b), steps(b, p, false))
        }),
        capacity in prop_oneof![Just(6usize), Just(200_000usize)],
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let u64s = || -> Keyed<u64, Gcra, ManualClock> {
            Keyed::gcra(rate).burst(burst).capacity(capacity).clock(ManualClock::new()).build().unwrap()
        };
        clocked_matches_given(&u64s(), &u64s(), &steps, |k| k)?;
        let strings = || -> Keyed<String, Gcra, ManualClock> {
            Keyed::gcra(rate).burst(burst).capacity(capacity).clock(ManualClock::new()).build().unwrap()
        };
        clocked_matches_given(&strings(), &strings(), &steps, |k| format!("user:{k}"))?;
        clocked_matches_given(&strings(), &strings(), &steps, |k| format!("a key longer than the slot holds inline: {k}"))?;
    }

    /// The same for `Keyed<u64, GcraPair>` (32-byte slots: past 1 MiB from 23,000 keys).
    #[test]
    fn the_clock_read_inside_decides_as_the_time_given_for_pairs(
        (limit, period, steps) in config().prop_flat_map(|(l, p, _)| {
            (Just(l), Just(p), steps(l, p, false))
        }),
        capacity in prop_oneof![Just(6usize), Just(100_000usize)],
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let slower = Rate::new(limit, Duration::from_nanos(period.saturating_mul(3))).unwrap();
        let pairs = || -> Keyed<u64, hotlimit::GcraPair, ManualClock> {
            Keyed::gcra_pair(rate, slower).capacity(capacity).clock(ManualClock::new()).build().unwrap()
        };
        clocked_matches_given(&pairs(), &pairs(), &steps, |k| k)?;
    }
}

/// A table past 1 MiB whose segments grow while its keys arrive (each growth moves a segment,
/// so the address the clocked hit path prefetches from goes stale until a lookup corrects it):
/// every key is still exactly its own GCRA through `try_acquire`, before and after the growth.
#[test]
fn the_clocked_path_stays_exact_while_segments_grow() {
    let clock = ManualClock::new();
    let k: Keyed<u64, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(1).unwrap())
        .capacity(200_000)
        .clock(clock.clone())
        .build()
        .unwrap();
    let keys: Vec<u64> = (0..30_000u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .collect();
    for round in 0..3 {
        for &key in &keys {
            assert!(
                k.try_acquire(&key).is_ok(),
                "round {round}: key {key} refused"
            );
            let denied = k.try_acquire(&key).unwrap_err();
            assert_eq!(
                denied.retry_after_nanos(),
                Some(1_000_000_000),
                "round {round}: key {key}"
            );
        }
        assert_eq!(k.len(), keys.len());
        clock.advance(Duration::from_secs(1));
    }
}
