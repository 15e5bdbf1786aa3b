//! ShardedGcra against its definition: shares that sum exactly, borrowing before denying,
//! all-or-nothing splits, skewed load at the global rate, clocks that misbehave, and property
//! tests that compare every decision with the sequential model and audit every interval
//! against the global bound b + d/I.

mod model;

use std::time::Duration;

use hotlimit::{Clock, Gcra, Limiter, ManualClock, Rate, ShardedGcra};
use model::sharded::ShardedModel;
use proptest::prelude::*;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

fn sharded(
    rate: Rate,
    shards: usize,
    burst: Option<u64>,
) -> (ShardedGcra<ManualClock>, ManualClock) {
    let clock = ManualClock::new();
    let mut b = ShardedGcra::builder(rate)
        .shards(shards)
        .clock(clock.clone());
    if let Some(burst) = burst {
        b = b.burst(burst);
    }
    (b.build().unwrap(), clock)
}

/// The worst excess of grants `(now, n)` over b + d/I across every interval, in ns of credit
/// (≤ 0 means the bound holds), in O(k log k): see `audit_gcra` in tests/stress.rs.
fn worst_excess(mut grants: Vec<(u64, u64)>, interval: u64, burst: u64) -> i128 {
    grants.sort_unstable();
    let tau = i128::from(burst) * i128::from(interval);
    let (mut prefix, mut min_sub, mut worst) = (0i128, i128::MAX, i128::MIN);
    for &(t, n) in &grants {
        min_sub = min_sub.min(prefix * i128::from(interval) - i128::from(t));
        prefix += i128::from(n);
        worst = worst.max(prefix * i128::from(interval) - i128::from(t) - min_sub - tau);
    }
    worst
}

#[test]
fn worked_example_four_per_second_two_shards() {
    let (g, clock) = sharded(Rate::per_second(4).unwrap(), 2, None);
    assert_eq!(g.shards(), 2);
    assert_eq!((g.shard_burst(0), g.shard_burst(1)), (Some(2), Some(2)));
    assert_eq!(
        g.shard_emission_interval(0),
        Some(Duration::from_millis(500))
    );
    assert_eq!(g.emission_interval(), Duration::from_millis(250));
    // Home 0: its 2, then 2 borrowed from shard 1.
    for _ in 0..4 {
        g.try_acquire_n_on_at(0, 1, 0).unwrap();
    }
    assert_eq!(g.remaining_at(0), 0);
    let d = g.try_acquire_n_on_at(0, 1, 0).unwrap_err();
    assert_eq!(d.retry_after(), Some(Duration::from_millis(500)));
    // Home 1 sees the same pool.
    assert_eq!(g.try_acquire_n_on_at(1, 1, 0).unwrap_err(), d);
    clock.set(Duration::from_millis(499));
    assert!(g.try_acquire().is_err(), "one ms early");
    clock.set(Duration::from_millis(500));
    g.try_acquire_n(2).unwrap();
    assert!(g.try_acquire().is_err());
}

#[test]
fn shares_sum_exactly_and_never_outrun_the_global_interval() {
    for (limit, period, burst, s) in [
        (4u64, S, 4u64, 2usize),
        (3, 10, 3, 3), // I = 4 while period/l_k = 10: shards round up from I, not from period
        (1_003, S, 17, 8),
        (7, 3 * S, 100, 5),
        (u64::MAX, u64::MAX, 64, 64),
        (10, 10, 10, 3),
    ] {
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let (g, _) = sharded(rate, s, Some(burst));
        let i = u128::from(period.div_ceil(limit));
        assert_eq!(g.emission_interval().as_nanos(), i);
        let bursts: u64 = (0..s).map(|k| g.shard_burst(k).unwrap()).sum();
        assert_eq!(bursts, burst);
        let mut shares = 0;
        for k in 0..s {
            let l = limit / s as u64 + u64::from((k as u64) < limit % s as u64);
            shares += u128::from(l);
            let ik = g.shard_emission_interval(k).unwrap().as_nanos();
            // I_k · l_k ≥ I · limit for each k, hence Σ 1/I_k ≤ Σ l_k/(I·limit) = 1/I.
            assert!(
                ik * u128::from(l) >= i * u128::from(limit),
                "{limit}/{period} s={s}"
            );
            // And not more conservative than the rounding needs.
            assert!((ik - 1) * u128::from(l) < i * u128::from(limit));
        }
        assert_eq!(shares, u128::from(limit));
        assert!(g.shard_burst(s).is_none() && g.shard_emission_interval(s).is_none());
    }
}

#[test]
fn default_shards_are_cores_clamped_to_limit_and_burst() {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let g = ShardedGcra::new(Rate::per_second(1_000_000).unwrap()).unwrap();
    assert_eq!(g.shards(), cores);
    let g = ShardedGcra::builder(Rate::per_second(1_000).unwrap())
        .burst(1)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    assert_eq!(g.shards(), 1, "burst 1 leaves room for one shard");
    let g = ShardedGcra::builder(Rate::per_hour(1).unwrap())
        .clock(ManualClock::new())
        .build()
        .unwrap();
    assert_eq!(g.shards(), 1);
    assert!(g.try_acquire().is_ok() && g.try_acquire().is_err());
}

#[test]
fn a_single_permit_is_denied_only_when_every_shard_is_empty() {
    let (g, _) = sharded(Rate::per_second(8).unwrap(), 4, None);
    // Empty shards 0, 1, 3 from their own homes, leave one permit in shard 2.
    for k in [0, 1, 3] {
        g.try_acquire_n_on_at(k, 2, 0).unwrap();
    }
    g.try_acquire_n_on_at(2, 1, 0).unwrap();
    assert_eq!(g.shard_remaining_at(2, 0), Some(1));
    // Every home finds it.
    g.try_acquire_n_on_at(0, 1, 0).unwrap();
    for home in 0..4 {
        assert!(g.try_acquire_n_on_at(home, 1, 0).is_err());
    }
    // The earliest release: every shard refills one per 500 ms and the first was drained at 0.
    let d = g.try_acquire_n_on_at(3, 1, 0).unwrap_err();
    assert_eq!(d.retry_after_nanos(), Some(500 * MS));
    assert!(g.try_acquire_n_on_at(3, 1, 500 * MS - 1).is_err());
    assert!(g.try_acquire_n_on_at(3, 1, 500 * MS).is_ok());
}

#[test]
fn whole_requests_prefer_one_shard_then_split_all_or_nothing() {
    // 10 per second over 3 shards: bursts 4, 3, 3.
    let (g, _) = sharded(Rate::per_second(10).unwrap(), 3, None);
    // Shard 0 has 4 but not 5; 5 > any shard: split 4 + 1.
    g.try_acquire_n_on_at(0, 5, 0).unwrap();
    assert_eq!(
        (0..3)
            .map(|k| g.shard_remaining_at(k, 0).unwrap())
            .collect::<Vec<_>>(),
        [0, 2, 3]
    );
    // 3 fits shard 2 whole: preferred over splitting from the home (shard 1 has 2).
    g.try_acquire_n_on_at(1, 3, 0).unwrap();
    assert_eq!(g.shard_remaining_at(2, 0), Some(0));
    assert_eq!(g.shard_remaining_at(1, 0), Some(2));
    // 3 > the 2 left in total: denied, and nothing was taken.
    let d = g.try_acquire_n_on_at(2, 3, 0).unwrap_err();
    assert_eq!(g.remaining_at(0), 2);
    // The third permit is released when shard 0 (interval 250 ms... shard intervals are 1/3 s
    // rounded up from I·limit/l_k) first refills.
    let first = (0..3)
        .map(|k| g.shard_emission_interval(k).unwrap().as_nanos() as u64)
        .min()
        .unwrap();
    assert_eq!(d.retry_after_nanos(), Some(first));
    assert!(g.try_acquire_n_on_at(2, 3, first - 1).is_err());
    assert!(g.try_acquire_n_on_at(2, 3, first).is_ok());
}

#[test]
fn more_than_the_global_burst_is_never_and_zero_is_free() {
    let (g, _) = sharded(Rate::per_second(10).unwrap(), 4, Some(6));
    assert!(g.try_acquire_n(7).unwrap_err().is_never());
    assert!(g.try_acquire_n(u32::MAX).unwrap_err().is_never());
    assert_eq!(g.try_acquire_n(0), Ok(()));
    assert_eq!(g.remaining(), 6);
    // 6 is more than any shard (2, 2, 1, 1) but exactly the global burst: granted, split.
    assert_eq!(g.try_acquire_n(6), Ok(()));
    assert_eq!(g.remaining(), 0);
    assert_eq!(g.try_acquire_n(0), Ok(()));
}

#[test]
fn clock_set_back_never_frees_permits() {
    let (g, clock) = sharded(Rate::per_second(4).unwrap(), 2, None);
    clock.set(Duration::from_secs(100));
    g.try_acquire_n(4).unwrap();
    clock.set(Duration::from_secs(3));
    assert!(g.try_acquire().is_err());
    assert_eq!(g.remaining(), 0);
    clock.set(Duration::from_secs(100));
    assert!(g.try_acquire().is_err());
    clock.set(Duration::from_millis(100_500));
    g.try_acquire_n(2).unwrap();
    assert!(g.try_acquire().is_err());
}

#[test]
fn extreme_times_never_panic_or_overflow() {
    let (g, clock) = sharded(Rate::per_second(1000).unwrap(), 4, None);
    clock.set(Duration::from_nanos(u64::MAX));
    assert_eq!(g.try_acquire().unwrap_err().retry_after(), None);
    assert_eq!(g.try_acquire_n(3).unwrap_err().retry_after(), None);
    clock.set(Duration::from_nanos(u64::MAX - 10 * S));
    g.try_acquire_n(1000).unwrap();
    assert!(g.try_acquire().is_err());
    clock.set(Duration::ZERO);
    let d = g.try_acquire_n(2).unwrap_err();
    assert!(d.retry_after().unwrap() > Duration::from_secs(365 * 24 * 3600));
    assert_eq!(
        g.remaining_at(u64::MAX - 10 * S + 4 * S),
        4 * 1000 / 4 * 4 / 4
    );
}

#[test]
fn extreme_rates_build_and_work() {
    // Two permits per ~146 years over 2 shards: each shard's interval is ~146 years.
    let g = ShardedGcra::builder(Rate::new(2, Duration::from_nanos(u64::MAX / 4)).unwrap())
        .shards(2)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let ik = g.shard_emission_interval(0).unwrap().as_nanos() as u64;
    assert!(ik >= u64::MAX / 4 - 1);
    assert!(g.try_acquire_n_at(2, 0).is_ok());
    assert_eq!(
        g.try_acquire_at(0).unwrap_err().retry_after_nanos(),
        Some(ik)
    );
    assert!(g.try_acquire_n_at(2, ik).is_ok());
    assert!(g.try_acquire_n_at(2, 2 * ik).is_ok());
    // A grant at 3·ik would move a shard's state to 4·ik > u64::MAX: the clock's range is
    // exhausted.
    assert!(g.try_acquire_at(3 * ik).unwrap_err().is_never());
    // One permit per nanosecond, a burst of a billion, 8 shards of interval 8 ns.
    let g = ShardedGcra::builder(Rate::new(S, Duration::from_secs(1)).unwrap())
        .shards(8)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    assert!(g.try_acquire_n_at(1_000_000_000, 0).is_ok());
    assert_eq!(
        g.try_acquire_at(0).unwrap_err().retry_after_nanos(),
        Some(8)
    );
}

/// One caller (home 0), all load, on 8 shards: the steady state must be the global rate, as
/// one `Gcra` would give it. Deterministic: a ManualClock, a call every 37 µs for 10 s.
#[test]
fn skewed_load_gets_the_global_rate() {
    for (limit, burst) in [(1_000u64, 1_000u64), (1_003, 50), (8_000, 16)] {
        let rate = Rate::per_second(limit).unwrap();
        let (g, _) = sharded(rate, 8, Some(burst));
        let one = Gcra::builder(rate)
            .burst(burst)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        // Counted after a 1 s warm-up: the steady state. (Right after an idle spell, shards
        // not yet borrowed from sit full and drop their refill: a one-time deficit, see the
        // guide.)
        let (mut sharded_grants, mut gcra_grants, mut grants) = (0u64, 0u64, Vec::new());
        let (mut sharded_all, mut gcra_all) = (0u64, 0u64);
        let mut now = 0;
        while now <= 10 * S {
            let steady = now >= S;
            if g.try_acquire_n_on_at(0, 1, now).is_ok() {
                sharded_grants += u64::from(steady);
                sharded_all += 1;
                grants.push((now, 1));
            }
            if one.try_acquire_at(now).is_ok() {
                gcra_grants += u64::from(steady);
                gcra_all += 1;
            }
            now += 37_000;
        }
        // Over the whole run too, burst and warm-up included.
        assert!(
            sharded_all * 100 >= gcra_all * 99,
            "limit {limit}: {sharded_all} < 99% of {gcra_all}"
        );
        let interval = g.emission_interval().as_nanos() as u64;
        assert!(worst_excess(grants, interval, burst) <= 0);
        assert!(
            sharded_grants <= gcra_grants + 8,
            "{sharded_grants} vs {gcra_grants}"
        );
        assert!(
            sharded_grants * 100 >= gcra_grants * 99,
            "limit {limit}: sharded {sharded_grants} < 99% of Gcra's {gcra_grants}"
        );
    }
}

/// The same through the Limiter API: whatever this thread's home is, it borrows the rest.
#[test]
fn limiter_api_borrows_from_any_home() {
    let (g, clock) = sharded(Rate::per_second(1_000).unwrap(), 8, None);
    assert!(g.home_shard() < 8);
    let mut granted = 0;
    // Twice the rate for 3 s; counted after a 1 s warm-up: 2 s at 1000 per second.
    for call in 0..6_000 {
        if g.try_acquire().is_ok() && call >= 2_000 {
            granted += 1;
        }
        clock.advance(Duration::from_micros(500));
    }
    assert!((1_980..=2_000).contains(&granted), "{granted}");
}

#[test]
fn debug_and_accessors() {
    let (g, _) = sharded(Rate::per_minute(6).unwrap(), 3, Some(5));
    assert_eq!(g.burst(), 5);
    assert_eq!(g.rate(), Rate::per_minute(6).unwrap());
    assert_eq!(g.clock().now(), 0);
    let s = format!("{g:?}");
    assert!(
        s.contains("ShardedGcra") && s.contains("burst: 5") && s.contains("Shard {"),
        "{s}"
    );
}

#[test]
fn default_clock_limiter_works() {
    let g = ShardedGcra::new(Rate::per_hour(5).unwrap()).unwrap();
    for _ in 0..5 {
        g.try_acquire().unwrap();
    }
    let wait = g.try_acquire().unwrap_err().retry_after().unwrap();
    // The first shard to refill: at most 5 shards, interval I·limit/l_k ≤ 3600 s.
    assert!(
        wait > Duration::from_secs(700) && wait <= Duration::from_secs(3600),
        "{wait:?}"
    );
}

/// One step of a random trace: a clock move, then a request from some home.
#[derive(Debug, Clone)]
enum Step {
    Forward { gap: u64, home: usize, n: u32 },
    Back { back: u64, home: usize, n: u32 },
    NearEnd { below_max: u64, home: usize, n: u32 },
}

fn config() -> impl Strategy<Value = (u64, u64, u64, u64)> {
    // (limit, period_ns, burst, shards), valid.
    (1u64..=200, 1u64..=1_000_000_000_000, 1u64..=200, 1u64..=8).prop_filter_map(
        "valid config",
        |(limit, period, burst, s)| {
            if period < limit || s > limit.min(burst) {
                return None;
            }
            let i = u128::from(period.div_ceil(limit));
            let l_min = u128::from(limit / s);
            let ik = u64::try_from((i * u128::from(limit)).div_ceil(l_min)).ok()?;
            (burst / s + 1).checked_mul(ik)?;
            Some((limit, period, burst, s))
        },
    )
}

fn trace(burst: u64, period: u64) -> impl Strategy<Value = Vec<Step>> {
    let n = prop_oneof![6 => 0..=(burst + 2) as u32, 3 => Just(1u32), 1 => Just(u32::MAX)];
    let home = 0usize..10;
    let step = prop_oneof![
        12 => (0..=period / 4 + 1, home.clone(), n.clone())
            .prop_map(|(gap, home, n)| Step::Forward { gap, home, n }),
        3 => (0..=period.saturating_mul(2), home.clone(), n.clone())
            .prop_map(|(gap, home, n)| Step::Forward { gap, home, n }),
        2 => (0..=period, home.clone(), n.clone())
            .prop_map(|(back, home, n)| Step::Back { back, home, n }),
        1 => (0..=period.saturating_mul(4), home, n)
            .prop_map(|(below_max, home, n)| Step::NearEnd { below_max, home, n }),
    ];
    prop::collection::vec(step, 1..100)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Every decision and retry equals the sequential model's, `remaining` agrees, and the
    /// grants never exceed the global b + d/I in any interval.
    #[test]
    fn matches_model_and_never_exceeds_the_global_bound(
        (limit, period, burst, s, steps) in config().prop_flat_map(|(l, p, b, s)| {
            (Just(l), Just(p), Just(b), Just(s), trace(b, p))
        })
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let g = ShardedGcra::builder(rate)
            .burst(burst)
            .shards(s as usize)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let mut model = ShardedModel::new(limit, period, burst, s);
        for (k, &ik) in model.shard_intervals().iter().enumerate() {
            prop_assert_eq!(g.shard_emission_interval(k).unwrap().as_nanos(), ik);
        }
        let mut now: u64 = 0;
        let mut grants = Vec::new();
        let mut monotone = true;
        for (i, step) in steps.iter().enumerate() {
            let (home, n) = match *step {
                Step::Forward { gap, home, n } => { now = now.saturating_add(gap); (home, n) }
                Step::Back { back, home, n } => {
                    monotone = false;
                    now = now.saturating_sub(back);
                    (home, n)
                }
                Step::NearEnd { below_max, home, n } => { now = u64::MAX - below_max; (home, n) }
            };
            let real = g.try_acquire_n_on_at(home, n, now).map_err(|d| d.retry_after_nanos());
            let want = model.acquire_on(home, n, now);
            prop_assert_eq!(real, want, "step {} ({:?}) at now={}", i, step, now);
            prop_assert_eq!(g.remaining_at(now), model.remaining(now));
            if real.is_ok() && n > 0 {
                grants.push((now, u64::from(n)));
            }
        }
        // With the clock going back, grants are counted at the `now` they used, which the bound
        // also covers: the audit applies to every trace.
        let _ = monotone;
        let i = period.div_ceil(limit);
        prop_assert!(worst_excess(grants, i, burst) <= 0);
    }
}
