//! Keyed against per-key reference models: the worked example, capacity and eviction,
//! rate overrides, a flood of unique keys, and random multi-key traces where every key must
//! behave exactly as its own GCRA definition, with evictions at random points.

mod model;

use std::time::Duration;

use hotlimit::{Gcra, Keyed, ManualClock, Rate, SlidingLog, WhenFull};
use model::gcra::GcraModel;
use model::log::LogModel;
use proptest::prelude::*;

const S: u64 = 1_000_000_000;

fn keyed(rate: Rate, capacity: usize, when_full: WhenFull) -> Keyed<u64, Gcra, ManualClock> {
    Keyed::gcra(rate)
        .capacity(capacity)
        .when_full(when_full)
        .clock(ManualClock::new())
        .build()
        .unwrap()
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
        let mut now = 0u64;
        for (i, step) in steps.iter().enumerate() {
            match *step {
                Step::Ask { gap, key, n } => {
                    now += gap;
                    let real = k.try_acquire_n_at(&key, n, now).map_err(|d| d.retry_after_nanos());
                    let want = models[key as usize].acquire(n, now);
                    prop_assert_eq!(real, want, "step {} ({:?}) at {}", i, step, now);
                }
                Step::Back { .. } => unreachable!(),
                Step::Evict => { k.evict_idle_at(now); }
            }
            prop_assert!(k.len() <= 6);
        }
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
        let mut now = 0u64;
        for (i, step) in steps.iter().enumerate() {
            match *step {
                Step::Ask { gap, key, n } => {
                    now += gap;
                    let real = k.try_acquire_n_at(&key, n, now).map_err(|d| d.retry_after_nanos());
                    let want = models[key as usize].acquire(n, now);
                    prop_assert_eq!(real, want, "step {} ({:?}) at {}", i, step, now);
                }
                Step::Back { .. } => unreachable!(),
                Step::Evict => { k.evict_idle_at(now); }
            }
            prop_assert!(k.len() <= 6);
        }
    }
}
