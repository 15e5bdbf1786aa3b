//! KeyPool: keys come out in cycles, no key exceeds its budget in any window (audited over
//! random traces), and the 500-keys-per-10-minutes scenario from the issue.

mod model;

use std::collections::HashSet;
use std::time::Duration;

use hotlimit::{Clock, KeyPool, ManualClock, Rate};
use model::log::LogModel;
use proptest::prelude::*;

fn pool<K>(keys: Vec<K>, rate: Rate) -> (KeyPool<K, ManualClock>, ManualClock) {
    let clock = ManualClock::new();
    let pool = KeyPool::builder(keys, rate)
        .clock(clock.clone())
        .build()
        .unwrap();
    (pool, clock)
}

/// Panics if some key was handed out more than `max_uses` times in a window (t − period, t].
/// `uses` are (time, key index) pairs in any order.
fn audit_per_key(uses: &[(u64, usize)], keys: usize, max_uses: u64, period: u64) {
    let mut per_key = vec![Vec::new(); keys];
    for &(t, k) in uses {
        per_key[k].push(t);
    }
    for (k, times) in per_key.iter_mut().enumerate() {
        times.sort_unstable();
        // Any max_uses + 1 uses of one key must span at least `period`.
        let x = max_uses as usize;
        for w in times.windows(x + 1) {
            assert!(
                w[x] - w[0] >= period,
                "key {k} used {} times within {} ns < period {period}: {w:?}",
                x + 1,
                w[x] - w[0]
            );
        }
    }
}

#[test]
fn five_hundred_keys_one_use_per_ten_minutes() {
    let keys: Vec<String> = (0..500).map(|i| format!("key-{i:03}")).collect();
    let ten_min = Duration::from_secs(600);
    let (pool, clock) = pool(keys, Rate::new(1, ten_min).unwrap());
    let mut seen = HashSet::new();
    for i in 0..500 {
        clock.set(Duration::from_millis(i)); // spread over half a second
        assert!(seen.insert(pool.try_next_key().unwrap().clone()));
    }
    assert_eq!(seen.len(), 500, "500 distinct keys");
    // All used: denied until the first key's use leaves the window, 10 minutes after t = 0.
    let d = pool.try_next_key().unwrap_err();
    assert_eq!(d.retry_after(), Some(ten_min - Duration::from_millis(499)));
    clock.set(ten_min - Duration::from_nanos(1));
    assert!(pool.try_next_key().is_err());
    clock.set(ten_min);
    assert_eq!(
        pool.try_next_key().unwrap(),
        "key-000",
        "serves again after 10 minutes"
    );
    assert!(pool.try_next_key().is_err(), "key-001 was used at 1 ms");
    clock.set(ten_min + Duration::from_millis(499));
    for i in 1..500 {
        assert_eq!(pool.try_next_key().unwrap(), &format!("key-{i:03}"));
    }
    assert!(pool.try_next_key().is_err());
}

#[test]
fn five_hundred_keys_all_at_once() {
    let ten_min = Duration::from_secs(600);
    let (pool, clock) = pool((0..500).collect(), Rate::new(1, ten_min).unwrap());
    let got: HashSet<i32> = (0..500).map(|_| *pool.try_next_key().unwrap()).collect();
    assert_eq!(got.len(), 500);
    assert_eq!(
        pool.try_next_key().unwrap_err().retry_after(),
        Some(ten_min)
    );
    clock.advance(ten_min);
    let again: HashSet<i32> = (0..500).map(|_| *pool.try_next_key().unwrap()).collect();
    assert_eq!(again, got);
}

#[test]
fn keys_cycle_in_order_with_several_uses_each() {
    let (pool, clock) = pool(
        vec!['a', 'b', 'c'],
        Rate::new(2, Duration::from_secs(60)).unwrap(),
    );
    let order: String = (0..6).map(|_| *pool.try_next_key().unwrap()).collect();
    assert_eq!(order, "abcabc");
    let d = pool.try_next_key().unwrap_err();
    assert_eq!(d.retry_after(), Some(Duration::from_secs(60)));
    clock.advance(Duration::from_secs(60));
    assert_eq!(pool.try_next_key(), Ok(&'a'));
}

#[test]
fn the_next_key_is_the_one_used_longest_ago() {
    // Uses spread over time: when all are exhausted, the first key to become free is the one
    // the cycle hands out next, so cycling never skips a free key.
    let (pool, clock) = pool(
        vec![0, 1, 2],
        Rate::new(1, Duration::from_secs(30)).unwrap(),
    );
    for (t, want) in [(0, 0), (10, 1), (20, 2)] {
        clock.set(Duration::from_secs(t));
        assert_eq!(pool.try_next_key(), Ok(&want));
    }
    clock.set(Duration::from_secs(25));
    assert_eq!(
        pool.try_next_key().unwrap_err().retry_after(),
        Some(Duration::from_secs(5))
    );
    clock.set(Duration::from_secs(30));
    assert_eq!(pool.try_next_key(), Ok(&0));
    clock.set(Duration::from_secs(40));
    assert_eq!(pool.try_next_key(), Ok(&1));
}

#[test]
fn clock_set_back_never_frees_a_key() {
    let (pool, clock) = pool(vec!["k"], Rate::new(1, Duration::from_secs(10)).unwrap());
    clock.set(Duration::from_secs(100));
    pool.try_next_key().unwrap();
    clock.set(Duration::from_secs(1));
    assert!(pool.try_next_key().is_err());
    clock.set(Duration::from_nanos(u64::MAX));
    assert_eq!(pool.try_next_key().unwrap_err().retry_after(), None);
}

#[test]
fn accessors_and_debug() {
    let rate = Rate::per_minute(4).unwrap();
    let (pool, _) = pool(vec!["x", "y"], rate);
    assert_eq!(pool.keys(), &["x", "y"]);
    assert_eq!(pool.max_uses(), 4);
    assert_eq!(pool.rate(), rate);
    assert_eq!(pool.clock().now(), 0);
    let s = format!("{pool:?}");
    assert!(s.contains("KeyPool") && s.contains("\"x\""), "{s}");
}

#[test]
fn default_clock_pool_works() {
    let pool = KeyPool::new(vec![1u8, 2], Rate::per_hour(1).unwrap()).unwrap();
    assert_eq!(pool.try_next_key(), Ok(&1));
    assert_eq!(pool.try_next_key(), Ok(&2));
    assert!(pool.try_next_key().is_err());
}

#[test]
fn audit_catches_a_key_over_budget() {
    let caught = std::panic::catch_unwind(|| audit_per_key(&[(0, 0), (5, 0)], 1, 1, 10));
    assert!(caught.is_err());
    audit_per_key(&[(0, 0), (10, 0), (5, 1)], 2, 1, 10);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Random traces (time steps forward and back): every decision is the exact log's over
    /// K·X slots, and afterwards no key was handed out more than X times in any window.
    #[test]
    fn random_traces_keep_every_key_within_budget(
        keys in 1usize..=6,
        max_uses in 1u64..=4,
        period in 1u64..=1_000,
        steps in prop::collection::vec((0u64..=400, any::<bool>()), 1..200),
    ) {
        let rate = Rate::new(max_uses, Duration::from_nanos(period)).unwrap();
        let (pool, _) = pool((0..keys).collect::<Vec<usize>>(), rate);
        let mut model = LogModel::new(keys as u64 * max_uses, period);
        let mut now = 0u64;
        let mut uses = Vec::new();
        for (gap, back) in steps {
            now = if back { now.saturating_sub(gap / 4) } else { now + gap };
            let got = pool.try_next_key_at(now);
            let want = model.acquire(1, now);
            prop_assert_eq!(got.map(|_| ()).map_err(|d| d.retry_after_nanos()), want);
            if let Ok(&k) = got {
                // Keys come out in cycles: the i-th grant gets key i mod K.
                prop_assert_eq!(k, uses.len() % keys);
                uses.push((now, k));
            }
        }
        audit_per_key(&uses, keys, max_uses, period);
    }
}

// ---- Bounded memory: one strict SlidingWindow per key (`.buckets(n)`). ----

fn window_pool<K>(
    keys: Vec<K>,
    rate: Rate,
    buckets: usize,
) -> (KeyPool<K, ManualClock>, ManualClock) {
    let clock = ManualClock::new();
    let pool = KeyPool::builder(keys, rate)
        .buckets(buckets)
        .clock(clock.clone())
        .build()
        .unwrap();
    (pool, clock)
}

#[test]
fn windows_five_hundred_keys_one_use_per_ten_minutes() {
    let keys: Vec<String> = (0..500).map(|i| format!("key-{i:03}")).collect();
    let ten_min = Duration::from_secs(600);
    // 10 buckets of w = 1 minute.
    let (pool, clock) = window_pool(keys, Rate::new(1, ten_min).unwrap(), 10);
    assert_eq!(pool.buckets(), Some(10));
    let mut seen = HashSet::new();
    for i in 0..500 {
        clock.set(Duration::from_millis(i)); // spread over half a second
        assert!(seen.insert(pool.try_next_key().unwrap().clone()));
    }
    assert_eq!(seen.len(), 500, "500 distinct keys");
    // Every key was used in the bucket [0, 1 min), counted whole until the window no longer
    // touches it: key-000 is free at 11 min − 1 ns, i.e. ≤ 10 minutes + one bucket width after
    // its use.
    let free_at = Duration::from_secs(660) - Duration::from_nanos(1);
    let d = pool.try_next_key().unwrap_err();
    assert_eq!(d.retry_after(), Some(free_at - Duration::from_millis(499)));
    assert!(d.retry_after().unwrap() <= ten_min + Duration::from_secs(60));
    clock.set(free_at - Duration::from_nanos(1));
    assert!(pool.try_next_key().is_err());
    clock.set(free_at);
    // Serves again, in the same order.
    for i in 0..500 {
        assert_eq!(pool.try_next_key().unwrap(), &format!("key-{i:03}"));
    }
    assert!(pool.try_next_key().is_err());
}

#[test]
fn windows_frozen_denial_keeps_the_rotation() {
    let (pool, clock) = window_pool(
        vec!['a', 'b', 'c'],
        Rate::new(2, Duration::from_secs(60)).unwrap(),
        6,
    );
    let order: String = (0..6).map(|_| *pool.try_next_key().unwrap()).collect();
    assert_eq!(order, "abcabc");
    for _ in 0..3 {
        // Denials do not move the cursor: 'a' is still next.
        assert_eq!(
            pool.try_next_key().unwrap_err().retry_after(),
            Some(Duration::from_secs(70) - Duration::from_nanos(1))
        );
    }
    clock.advance(Duration::from_secs(70) - Duration::from_nanos(1));
    assert_eq!(pool.try_next_key(), Ok(&'a'));
}

#[test]
fn windows_a_million_keys_times_five_hundred_uses_builds() {
    // The log would need 5·10^8 slots (4 GB) and refuses; windows take about 245 bytes per
    // key (measured: 245 MB peak RSS for this test).
    let rate = Rate::new(500, Duration::from_secs(600)).unwrap();
    let keys = vec![0u8; 1_000_000];
    let log = KeyPool::builder(keys.clone(), rate)
        .clock(ManualClock::new())
        .build();
    assert_eq!(log.unwrap_err().field(), "keys");
    let (pool, _) = window_pool(keys, rate, 10);
    assert_eq!(pool.keys().len(), 1_000_000);
    assert_eq!(pool.max_uses(), 500);
    assert!(pool.try_next_key().is_ok());
}

#[test]
fn windows_bad_input_names_the_field() {
    let rate = Rate::new(3, Duration::from_nanos(5)).unwrap();
    let build = |keys: Vec<u8>, rate: Rate, buckets: usize| {
        KeyPool::builder(keys, rate)
            .buckets(buckets)
            .clock(ManualClock::new())
            .build()
            .unwrap_err()
    };
    let e = build(vec![1], rate, 0);
    assert_eq!(e.to_string(), "invalid buckets = 0: must be at least 1");
    assert_eq!(build(vec![1], rate, 6).field(), "buckets"); // more than 5 ns
    assert_eq!(build(vec![1], rate, 65_537).field(), "buckets");
    assert_eq!(build(vec![], rate, 1).field(), "keys");
    let huge = Rate::new(u64::from(u32::MAX), Duration::from_secs(1)).unwrap();
    assert_eq!(build(vec![1], huge, 1).field(), "max_uses");
    // Over 2 GiB of windows: reported, never allocated.
    let e = KeyPool::builder(vec![(); 10_000_000], Rate::per_second(1).unwrap())
        .buckets(10)
        .clock(ManualClock::new())
        .build()
        .unwrap_err();
    assert_eq!(e.field(), "keys");
    assert!(e.to_string().contains("2 GiB"), "{e}");
}

#[test]
fn windows_accessors_and_debug() {
    let rate = Rate::per_minute(4).unwrap();
    let (windows, _) = window_pool(vec!["x", "y"], rate, 3);
    assert_eq!(windows.keys(), &["x", "y"]);
    assert_eq!(
        (windows.max_uses(), windows.rate(), windows.buckets()),
        (4, rate, Some(3))
    );
    assert_eq!(windows.clock().now(), 0);
    let s = format!("{windows:?}");
    assert!(s.contains("buckets: 3") && s.contains("cursor: 0"), "{s}");
    let (log, _) = pool(vec!["x"], rate);
    assert_eq!(log.buckets(), None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Random forward traces, bounded-memory pool: no key is ever handed out more than X times
    /// in a window of `period`; keys come out in cycles; and a denial happens only when every
    /// key has X uses within (now − period − w, now], with `retry_after` ≤ period + w − 1
    /// after the use of the key handed out next, and exact (one ns earlier is still denied).
    #[test]
    fn windows_random_traces_keep_every_key_within_budget(
        keys in 1usize..=6,
        max_uses in 1u64..=4,
        buckets in 1usize..=4,
        period in 4u64..=1_000,
        steps in prop::collection::vec(0u64..=400, 1..200),
    ) {
        let rate = Rate::new(max_uses, Duration::from_nanos(period)).unwrap();
        let (pool, _) = window_pool((0..keys).collect::<Vec<usize>>(), rate, buckets);
        let w = period.div_ceil(buckets as u64);
        let mut now = 0u64;
        let mut uses: Vec<(u64, usize)> = Vec::new();
        for gap in steps {
            now += gap;
            match pool.try_next_key_at(now) {
                Ok(&k) => {
                    prop_assert_eq!(k, uses.len() % keys);
                    uses.push((now, k));
                }
                Err(d) => {
                    let lo = i128::from(now) - i128::from(period + w);
                    for key in 0..keys {
                        let recent = uses
                            .iter()
                            .filter(|&&(t, k)| k == key && i128::from(t) > lo)
                            .count();
                        prop_assert!(recent >= max_uses as usize, "key {} had {}", key, recent);
                    }
                    let ra = d.retry_after_nanos().unwrap();
                    let next = uses.len() - keys * max_uses as usize;
                    prop_assert!(now + ra < uses[next].0 + period + w);
                    if ra > 0 {
                        // The clock moves on to there (it never runs backwards here).
                        now += ra - 1;
                        prop_assert!(pool.try_next_key_at(now).is_err());
                    }
                }
            }
        }
        audit_per_key(&uses, keys, max_uses, period);
    }
}

/// Cooldowns and retirement, on both stores: a cooling key's turns pass to the others, no key
/// is ever handed out past its budget, and when all keys cool the denial says how long.
mod refused_keys {
    use std::collections::HashMap;
    use std::sync::Arc;
    use std::time::Duration;

    use hotlimit::{KeyPool, ManualClock, Rate};

    fn pools() -> Vec<KeyPool<&'static str, ManualClock>> {
        let rate = Rate::new(3, Duration::from_secs(10)).unwrap();
        vec![
            KeyPool::builder(vec!["a", "b", "c"], rate)
                .clock(ManualClock::new())
                .build()
                .unwrap(),
            KeyPool::builder(vec!["a", "b", "c"], rate)
                .buckets(10)
                .clock(ManualClock::new())
                .build()
                .unwrap(),
        ]
    }

    #[test]
    fn a_cooling_key_is_skipped_until_its_time() {
        for pool in pools() {
            let a = pool.try_next_key_at(0).unwrap();
            assert!(pool.cool_down_until(a, 1_000));
            let got: Vec<_> = (0..4).map(|t| *pool.try_next_key_at(t).unwrap()).collect();
            assert!(!got.contains(&"a"), "{got:?}");
            assert_eq!(pool.is_usable_at(&pool.keys()[0], 999), Some(false));
            assert_eq!(*pool.try_next_key_at(1_000).unwrap(), "a");
        }
    }

    #[test]
    fn all_cooling_denies_until_the_first_cooldown_ends() {
        for pool in pools() {
            for (i, until) in [(0, 700), (1, 500), (2, 900)] {
                pool.cool_down_until(&pool.keys()[i], until);
            }
            let d = pool.try_next_key_at(100).unwrap_err();
            assert_eq!(d.retry_after_nanos(), Some(400));
            assert_eq!(*pool.try_next_key_at(500).unwrap(), "b");
            for i in 0..3 {
                pool.retire(&pool.keys()[i]);
            }
            assert!(pool.try_next_key_at(1_000).unwrap_err().is_never());
            assert!(pool.reinstate(&pool.keys()[2]));
            assert_eq!(*pool.try_next_key_at(1_000).unwrap(), "c");
        }
    }

    #[test]
    fn cooling_keys_count_nothing_in_remaining_with_buckets() {
        let pool = pools().pop().unwrap();
        assert_eq!(pool.remaining_at(0), 9);
        pool.cool_down_until(&pool.keys()[1], 100);
        assert_eq!(pool.remaining_at(0), 6);
        assert_eq!(pool.remaining_at(100), 9);
    }

    #[test]
    fn references_from_elsewhere_are_refused() {
        let pool = &pools()[0];
        let outside = "a";
        assert_eq!(pool.position(&outside), None);
        assert!(!pool.cool_down_until(&outside, 10));
        assert!(!pool.retire(&outside));
        assert_eq!(pool.is_usable_at(&outside, 0), None);
        assert_eq!(pool.position(&pool.keys()[2]), Some(2));
    }

    #[test]
    fn adding_keys_needs_buckets_and_joins_the_rotation() {
        let mut pools = pools();
        let mut windows = pools.pop().unwrap();
        let mut log = pools.pop().unwrap();
        assert_eq!(log.add_key("d").unwrap_err().field(), "buckets");
        for t in 0..9 {
            windows.try_next_key_at(t).unwrap();
        }
        assert!(windows.try_next_key_at(9).is_err(), "3 keys × 3 uses spent");
        windows.add_key("d").unwrap();
        assert_eq!(windows.keys().len(), 4);
        // The rotation goes on from the new key, then in order: "a" is next, and spent, so
        // the pool denies until "a" frees, although "d" has 2 uses left (the documented cost).
        assert_eq!(*windows.try_next_key_at(10).unwrap(), "d");
        assert!(windows.try_next_key_at(11).is_err());
    }

    /// Threads take keys on a frozen clock while another reports refusals and reinstates keys:
    /// no key is handed out more than its 3 uses (every call is in one window).
    #[test]
    fn racing_refusals_never_pass_a_budget() {
        for pool in pools() {
            let pool = Arc::new(pool);
            let takers: Vec<_> = (0..4)
                .map(|_| {
                    let pool = pool.clone();
                    std::thread::spawn(move || {
                        let mut used = HashMap::new();
                        for _ in 0..50 {
                            if let Ok(k) = pool.try_next_key_at(5) {
                                *used.entry(*k).or_insert(0u32) += 1;
                            }
                        }
                        used
                    })
                })
                .collect();
            for round in 0..200 {
                let key = &pool.keys()[round % 3];
                if round % 2 == 0 {
                    pool.cool_down_until(key, 6);
                } else {
                    pool.reinstate(key);
                }
            }
            let mut total: HashMap<&str, u32> = HashMap::new();
            for t in takers {
                for (k, n) in t.join().unwrap() {
                    *total.entry(k).or_insert(0) += n;
                }
            }
            assert!(total.values().all(|&n| n <= 3), "over budget: {total:?}");
        }
    }
}
