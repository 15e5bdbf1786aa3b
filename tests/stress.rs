//! Real threads on one limiter; every grant records its time, and an audit afterwards checks
//! the worst interval against the guarantee.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use hotlimit::{
    Clock, Gcra, GcraMulti, GcraPair, Limiter, ManualClock, QuantaClock, Rate, ShardedGcra,
};

const THREADS: usize = 8;

/// Eight threads, released together, each make `calls` single-permit requests on `limiter`
/// (each alone could take everything, so they all race for it). Returns the permits granted.
fn race_single_permits(limiter: &(impl Limiter + ?Sized), calls: u64) -> u64 {
    let granted = AtomicU64::new(0);
    let barrier = Barrier::new(THREADS);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                barrier.wait();
                let mine = (0..calls).filter(|_| limiter.try_acquire().is_ok()).count() as u64;
                // Relaxed: a counter read after the scope joins.
                granted.fetch_add(mine, Ordering::Relaxed);
            });
        }
    });
    granted.into_inner()
}

/// Races `want + 10` single-permit calls per thread on `limiter` (frozen, holding `want`) and
/// asserts that exactly `want` were granted; `what` names the configuration.
fn race_grants_exactly(limiter: &(impl Limiter + ?Sized), want: u64, what: &str) {
    assert_eq!(race_single_permits(limiter, want + 10), want, "{what}");
}

/// [`race_weighted`] with sizes 1 to 4 on a frozen `limiter` holding `burst`: all-or-nothing
/// requests of 1..=4 can strand at most 3 permits at the end, and nothing is over-granted.
fn race_weighted_strands_at_most_3(limiter: &(impl Limiter + ?Sized), burst: u64) {
    let total = race_weighted(limiter, &[1, 2, 3, 4]);
    assert!((burst - 3..=burst).contains(&total), "{total}");
}

/// A frozen clock away from zero (42 s), for the exact-burst races.
fn clock_at_42s() -> ManualClock {
    let clock = ManualClock::new();
    clock.set(Duration::from_secs(42));
    clock
}

/// Eight threads each make 5,000 requests on `limiter`, thread t asking for
/// `sizes[t % sizes.len()]` permits at a time. Returns the permits granted.
fn race_weighted(limiter: &(impl Limiter + ?Sized), sizes: &[u32]) -> u64 {
    let granted = AtomicU64::new(0);
    thread::scope(|s| {
        for t in 0..THREADS {
            let (limiter, granted) = (&limiter, &granted);
            let n = sizes[t % sizes.len()];
            s.spawn(move || {
                for _ in 0..5_000 {
                    if limiter.try_acquire_n(n).is_ok() {
                        // Relaxed: read after join.
                        granted.fetch_add(u64::from(n), Ordering::Relaxed);
                    }
                }
            });
        }
    });
    granted.into_inner()
}

#[test]
fn frozen_clock_grants_exactly_the_burst() {
    for burst in [1u64, 7, 1_000, 25_000] {
        let g = Gcra::builder(Rate::per_second(10).unwrap())
            .burst(burst)
            .clock(clock_at_42s())
            .build()
            .unwrap();
        race_grants_exactly(&g, burst, &format!("burst {burst}"));
        assert_eq!(g.remaining(), 0);
    }
}

#[test]
fn frozen_clock_weighted_requests_never_exceed_the_burst() {
    let g = Gcra::builder(Rate::per_second(1).unwrap())
        .burst(10_000)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    race_weighted_strands_at_most_3(&g, 10_000);
}

/// Checks "at most b + d/I in any interval of length d" over grants `(now, n)`, in O(k log k).
///
/// Sorted by time, the bound for grants i..=j is (P_j − P_{i−1})·I ≤ τ + t_j − t_i, i.e.
/// (P_j·I − t_j) − (P_{i−1}·I − t_i) ≤ τ; keep the minimum of the subtrahend as j advances.
fn audit_gcra(mut grants: Vec<(u64, u64)>, interval: u64, burst: u64) -> u128 {
    grants.sort_unstable();
    let tau = i128::from(burst) * i128::from(interval);
    let mut prefix: i128 = 0;
    let mut min_sub = i128::MAX;
    let mut worst = i128::MIN;
    for &(t, n) in &grants {
        min_sub = min_sub.min(prefix * i128::from(interval) - i128::from(t));
        prefix += i128::from(n);
        let lhs = prefix * i128::from(interval) - i128::from(t);
        worst = worst.max(lhs - min_sub - tau);
    }
    assert!(
        worst <= 0,
        "an interval exceeded b + d/I by {worst} ns of credit"
    );
    prefix as u128
}

/// Eight threads on the real clock for 300 ms; thread t asks for `sizes[t % sizes.len()]`
/// permits at a time through `acquire(n, now)` with `now` read just before. Returns every
/// grant as `(now, n)`, for an audit of every window.
fn record_grants(
    clock: &QuantaClock,
    sizes: &[u32],
    acquire: impl Fn(u32, u64) -> bool + Sync,
) -> Vec<(u64, u64)> {
    let run = Duration::from_millis(if cfg!(miri) { 5 } else { 300 });
    let barrier = Barrier::new(THREADS);
    thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (acquire, barrier) = (&acquire, &barrier);
                let n = sizes[t % sizes.len()];
                s.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    let mut mine = Vec::new();
                    while start.elapsed() < run {
                        let now = clock.now();
                        if acquire(n, now) {
                            mine.push((now, u64::from(n)));
                        }
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

#[test]
fn real_clock_audit_of_every_interval() {
    let clock = QuantaClock::new();
    let rate = Rate::per_second(200_000).unwrap();
    let g = Gcra::builder(rate)
        .burst(500)
        .clock(clock.clone())
        .build()
        .unwrap();
    let interval = g.emission_interval().as_nanos() as u64;
    let grants = record_grants(&clock, &[1, 3], |n, now| g.try_acquire_n_at(n, now).is_ok());
    let total = audit_gcra(grants, interval, 500);
    // Not a speed goal: only that the limiter really granted under contention.
    assert!(total >= 500, "granted only {total}");
}

#[test]
fn audit_catches_an_over_admission() {
    // The auditor itself must be able to fail: 3 grants at one instant with burst 2.
    let caught = std::panic::catch_unwind(|| audit_gcra(vec![(0, 1), (0, 1), (0, 1)], 10, 2));
    assert!(caught.is_err());
    assert_eq!(audit_gcra(vec![(0, 1), (0, 1), (10, 1)], 10, 2), 3);
}

#[test]
fn sliding_log_frozen_clock_grants_exactly_the_limit() {
    for limit in [1u64, 7, 1_000, 25_000] {
        let log = hotlimit::SlidingLog::builder(Rate::per_second(limit).unwrap())
            .clock(clock_at_42s())
            .build()
            .unwrap();
        race_grants_exactly(&log, limit, &format!("limit {limit}"));
        assert!(log.try_acquire().is_err());
    }
}

#[test]
fn sliding_log_frozen_clock_weighted_never_exceeds_the_limit() {
    let limit = 10_000;
    let log = hotlimit::SlidingLog::builder(Rate::per_second(limit).unwrap())
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let total = race_weighted(&log, &[1, 2, 3, 4]);
    // Never more than the limit. Fewer only by what all-or-nothing requests leave at the end,
    // plus slots a rolled-back weighted claim left behind the cursor (a false denial, rare).
    assert!(total <= limit, "over-admitted: {total} > {limit}");
    assert!(total >= limit * 9 / 10, "granted only {total}");
}

/// The most permits granted to calls whose `now` lies in one window (t − period, t]: asserts
/// it is at most `limit` and returns the total granted. `grants` are (now, permits).
fn audit_log_windows(mut grants: Vec<(u64, u64)>, period: u64, limit: u64) -> u64 {
    grants.sort_unstable();
    let (mut oldest, mut in_window, mut total) = (0, 0u64, 0u64);
    for &(t, n) in &grants {
        in_window += n;
        total += n;
        // Drop grants at or before t − period: they are out of (t − period, t].
        while grants[oldest].0 + period <= t {
            in_window -= grants[oldest].1;
            oldest += 1;
        }
        assert!(
            in_window <= limit,
            "{in_window} permits in the window ending at {t} ns (limit {limit})"
        );
    }
    total
}

#[test]
fn sliding_log_real_clock_audit_of_every_window() {
    let clock = QuantaClock::new();
    // 2,000 per 10 ms: the log fills and drains about 30 times during the run.
    let (limit, period) = (2_000, Duration::from_millis(10));
    let log = hotlimit::SlidingLog::builder(Rate::new(limit, period).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    let grants = record_grants(&clock, &[1, 3], |n, now| {
        log.try_acquire_n_at(n, now).is_ok()
    });
    let total = audit_log_windows(grants, period.as_nanos() as u64, limit);
    assert!(total >= limit, "granted only {total}");
}

#[test]
fn sliding_log_audit_catches_an_over_admission() {
    let caught =
        std::panic::catch_unwind(|| audit_log_windows(vec![(0, 1), (9, 1), (5, 1)], 10, 2));
    assert!(caught.is_err());
    // Half-open: a grant exactly one period earlier is out of the window.
    assert_eq!(audit_log_windows(vec![(0, 1), (10, 1), (5, 1)], 10, 2), 3);
}

/// Panics if a key was handed out more than `max_uses` times within less than `period`.
fn audit_keys(uses: &mut [(usize, u64)], max_uses: usize, period: u64) -> usize {
    uses.sort_unstable();
    for w in uses.windows(max_uses + 1) {
        if w[0].0 == w[max_uses].0 {
            assert!(
                w[max_uses].1 - w[0].1 >= period,
                "key {} used {} times in {} ns",
                w[0].0,
                max_uses + 1,
                w[max_uses].1 - w[0].1
            );
        }
    }
    uses.len()
}

#[test]
fn key_pool_eight_threads_no_key_over_budget() {
    // Frozen clock: exactly K·X keys handed out, each key exactly X times.
    let (keys, max_uses) = (7usize, 3u64);
    let pool = hotlimit::KeyPool::builder(
        (0..keys).collect(),
        Rate::new(max_uses, Duration::from_millis(2)).unwrap(),
    )
    .clock(ManualClock::new())
    .build()
    .unwrap();
    let mut uses: Vec<(usize, u64)> = thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                s.spawn(|| {
                    (0..50)
                        .filter_map(|_| pool.try_next_key().ok().map(|&k| (k, 0)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert_eq!(uses.len(), keys * max_uses as usize);
    uses.sort_unstable();
    for k in 0..keys {
        assert_eq!(uses.iter().filter(|u| u.0 == k).count(), max_uses as usize);
    }

    // Real clock: every key audited over every window.
    let clock = QuantaClock::new();
    let period = Duration::from_millis(2);
    let pool =
        hotlimit::KeyPool::builder((0..keys).collect(), Rate::new(max_uses, period).unwrap())
            .clock(clock.clone())
            .build()
            .unwrap();
    let run = Duration::from_millis(if cfg!(miri) { 5 } else { 300 });
    let mut uses: Vec<(usize, u64)> = thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let (pool, clock) = (&pool, &clock);
                s.spawn(move || {
                    let start = Instant::now();
                    let mut mine = Vec::new();
                    while start.elapsed() < run {
                        let now = clock.now();
                        if let Ok(&k) = pool.try_next_key_at(now) {
                            mine.push((k, now));
                        }
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let total = audit_keys(&mut uses, max_uses as usize, period.as_nanos() as u64);
    assert!(total >= keys * max_uses as usize, "granted only {total}");
}

#[test]
fn key_pool_windows_eight_threads_no_key_over_budget() {
    // Bounded-memory pool, frozen clock: exactly K·X keys handed out, each key exactly X
    // times (a call claims its turn before trying a key, so the rotation never sticks on a
    // spent key while another has uses left).
    let (keys, max_uses) = (7usize, 3u64);
    let period = Duration::from_millis(2);
    for _ in 0..20 {
        let pool =
            hotlimit::KeyPool::builder((0..keys).collect(), Rate::new(max_uses, period).unwrap())
                .buckets(4)
                .clock(ManualClock::new())
                .build()
                .unwrap();
        let barrier = Barrier::new(THREADS);
        let uses: Vec<usize> = thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|_| {
                    let (pool, barrier) = (&pool, &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        (0..50)
                            .filter_map(|_| pool.try_next_key().ok().copied())
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        assert_eq!(uses.len(), keys * max_uses as usize);
        for k in 0..keys {
            assert_eq!(uses.iter().filter(|&&u| u == k).count(), max_uses as usize);
        }
    }

    // Real clock: every key audited over every window. A window counts a grant at
    // τ = max(now, the start of its floor), and a thread preempted between reading the clock
    // and calling can bring a `now` behind a floor another thread moved: so τ is only known
    // to lie in [now, the clock read after the call], and the audit uses those bounds.
    let clock = QuantaClock::new();
    let pool =
        hotlimit::KeyPool::builder((0..keys).collect(), Rate::new(max_uses, period).unwrap())
            .buckets(4)
            .clock(clock.clone())
            .build()
            .unwrap();
    let run = Duration::from_millis(if cfg!(miri) { 5 } else { 300 });
    let uses: Vec<(usize, u64, u64)> = thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let (pool, clock) = (&pool, &clock);
                s.spawn(move || {
                    let start = Instant::now();
                    let mut mine = Vec::new();
                    while start.elapsed() < run {
                        let now = clock.now();
                        if let Ok(&k) = pool.try_next_key_at(now) {
                            mine.push((k, now, clock.now()));
                        }
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let total = audit_keys_bounds(&uses, max_uses as usize, period.as_nanos() as u64);
    assert!(total >= keys * max_uses as usize, "granted only {total}");
}

/// Panics if some max_uses + 1 uses of one key certainly fall within less than `period`: uses
/// are (key, earliest, latest) with the counted time somewhere in [earliest, latest].
fn audit_keys_bounds(uses: &[(usize, u64, u64)], max_uses: usize, period: u64) -> usize {
    let mut per_key: std::collections::BTreeMap<usize, Vec<(u64, u64)>> = Default::default();
    for &(k, lo, hi) in uses {
        per_key.entry(k).or_default().push((lo, hi));
    }
    for (k, mut v) in per_key {
        v.sort_unstable();
        for i in 0..v.len() {
            // The tightest set whose earliest lower bound is v[i].0: v[i] and the max_uses
            // later-starting uses with the smallest upper bounds.
            let mut his: Vec<u64> = v[i + 1..].iter().map(|u| u.1).collect();
            if his.len() < max_uses {
                break;
            }
            his.sort_unstable();
            let latest = his[max_uses - 1].max(v[i].1);
            assert!(
                latest - v[i].0 >= period,
                "key {k}: {} uses within {} ns",
                max_uses + 1,
                latest - v[i].0
            );
        }
    }
    uses.len()
}

#[test]
fn key_audit_catches_a_key_over_budget() {
    let bounds = |u: &[(usize, u64, u64)]| audit_keys_bounds(u, 1, 10);
    assert!(std::panic::catch_unwind(|| bounds(&[(0, 0, 1), (1, 1, 1), (0, 5, 9)])).is_err());
    assert_eq!(bounds(&[(0, 0, 1), (1, 1, 1), (0, 5, 10)]), 3);
    let caught = std::panic::catch_unwind(|| audit_keys(&mut [(0, 0), (1, 1), (0, 9)], 1, 10));
    assert!(caught.is_err());
    assert_eq!(audit_keys(&mut [(0, 0), (1, 1), (0, 10)], 1, 10), 3);
}

#[test]
fn sharded_frozen_clock_grants_exactly_the_burst() {
    for (shards, burst) in [(2usize, 2u64), (4, 7), (8, 1_000), (8, 25_000), (3, 25_000)] {
        let g = ShardedGcra::builder(Rate::per_second(100).unwrap())
            .shards(shards)
            .burst(burst)
            .clock(clock_at_42s())
            .build()
            .unwrap();
        // Homes are thread-local; every thread could take the whole burst by borrowing.
        // Single permits never split, so none is stranded: exactly the burst.
        race_grants_exactly(&g, burst, &format!("shards {shards}, burst {burst}"));
        assert_eq!(g.remaining(), 0);
    }
}

#[test]
fn sharded_frozen_clock_weighted_requests_never_exceed_the_burst() {
    let g = ShardedGcra::builder(Rate::per_second(1_000).unwrap())
        .shards(4)
        .burst(10_000)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    // Up to 4_000: more than a shard's 2_500, so some requests split.
    let total = race_weighted(&g, &[1, 3, 700, 4_000]);
    // Never over. Stranded permits (splits that lost a race and could not give back) and
    // all-or-nothing leftovers are under-admission only; most of the burst is still granted.
    assert!(total <= 10_000, "{total}");
    assert!(total + g.remaining() <= 10_000);
    assert!(total >= 5_000, "{total}");
}

/// Split requests (3 permits over shards of 2, so they borrow and, when they lose a race,
/// give back) race single-permit requests whose denials publish the denial hint
/// (`src/sharded/hint.rs`), round after round on a frozen clock. Once the threads are joined
/// no hint may outlive a give-back: a single permit is granted from every home exactly while
/// the shards hold one. (The window is narrow: with the announcement removed from `gather`
/// this passed five runs of 3,000 rounds on 2 cores; the loom model `stale_hint_is_caught`
/// is what shows the planted bug failing.)
#[test]
fn sharded_no_denial_hint_outlives_a_give_back() {
    for round in 0..1_000 {
        let g = ShardedGcra::builder(Rate::per_second(100).unwrap())
            .shards(4)
            .burst(8)
            .clock(clock_at_42s())
            .build()
            .unwrap();
        thread::scope(|s| {
            for t in 0..4 {
                let g = &g;
                s.spawn(move || {
                    for _ in 0..4 {
                        let _ = g.try_acquire_n(if t % 2 == 0 { 3 } else { 1 });
                    }
                });
            }
        });
        let now = g.clock().now();
        for home in (0..4).cycle().take(12) {
            let left = g.remaining();
            let granted = g.try_acquire_n_on_at(home, 1, now).is_ok();
            assert_eq!(granted, left > 0, "round {round}: {left} left, home {home}");
        }
    }
}

#[test]
fn sharded_real_clock_audit_of_every_interval() {
    let clock = QuantaClock::new();
    let rate = Rate::per_second(200_000).unwrap();
    let g = ShardedGcra::builder(rate)
        .shards(4)
        .burst(500)
        .clock(clock.clone())
        .build()
        .unwrap();
    let interval = g.emission_interval().as_nanos() as u64;
    // 1s, 3s, and 200s: more than one shard's 125, so those split.
    let grants = record_grants(&clock, &[1, 3, 1, 200], |n, now| {
        g.try_acquire_n_at(n, now).is_ok()
    });
    // The global bound b + d/I of one Gcra with the same rate and burst.
    let total = audit_gcra(grants, interval, 500);
    assert!(total >= 500, "granted only {total}");
}

#[test]
fn sliding_window_frozen_clock_grants_exactly_the_limit() {
    use hotlimit::SlidingWindow;
    for (limit, buckets) in [(1u64, 1usize), (7, 3), (1_000, 10), (25_000, 16)] {
        let clock = ManualClock::new();
        clock.set(Duration::from_millis(1_234));
        let w = SlidingWindow::builder(Rate::per_second(limit).unwrap())
            .buckets(buckets)
            .clock(clock)
            .build()
            .unwrap();
        let granted = AtomicU64::new(0);
        let barrier = Barrier::new(THREADS);
        thread::scope(|s| {
            for t in 0..THREADS {
                let (w, granted, barrier) = (&w, &granted, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let mut mine = 0;
                    // Each thread alone could take the whole limit: they all race for it.
                    // Odd threads ask for 1 or 2 at a time; the last permit may be stranded
                    // for a 2, so they finish with 1s.
                    for i in 0..limit + 10 {
                        let n = if t % 2 == 1 && i % 3 == 0 { 2 } else { 1 };
                        if w.try_acquire_n(n).is_ok() {
                            mine += u64::from(n);
                        }
                    }
                    while w.try_acquire().is_ok() {
                        mine += 1;
                    }
                    // Relaxed: a counter read after the scope joins.
                    granted.fetch_add(mine, Ordering::Relaxed);
                });
            }
        });
        assert_eq!(granted.into_inner(), limit, "limit {limit}");
        assert!(w.try_acquire().is_err());
    }
}

/// Grants of a sliding window whose effective times are only known to lie in `[lo, hi]`
/// (the clock before the call and after it): the most permits that certainly fall into one
/// window of length `period` (all of their intervals inside one interval of that length).
fn audit_window_intervals(mut grants: Vec<(u64, u64, u64)>, period: u64) -> u64 {
    grants.sort_unstable();
    let mut worst = 0;
    for i in 0..grants.len() {
        let end = grants[i].0 + period - 1;
        let certain: u64 = grants[i..]
            .iter()
            .take_while(|g| g.0 <= end)
            .filter(|g| g.1 <= end)
            .map(|g| g.2)
            .sum();
        worst = worst.max(certain);
    }
    worst
}

#[test]
fn window_interval_audit_catches_an_over_admission() {
    // Three grants known to lie in [10, 12], [11, 11], [15, 20]: all inside [10, 20], a window
    // of length 11.
    let grants = vec![(10, 12, 1), (11, 11, 1), (15, 20, 1)];
    assert_eq!(audit_window_intervals(grants.clone(), 11), 3);
    assert_eq!(audit_window_intervals(grants, 10), 2);
}

/// SlidingWindow across many bucket rolls: eight threads race on a window of 5 per 64 ns (4
/// buckets of 16 ns) while advancing one shared ManualClock by 1 ns every eighth call, so rolls
/// happen every 16 ns of its time, raced by grants and finished by whoever comes next. Each
/// grant's effective time lies between the clock read before the call and the clock read
/// after it (the window judges a call at its `now` or at the start of the newest bucket, which
/// some call's `now` reached). The audit counts the permits that certainly share one window:
/// never more than the limit. (Debug builds also check the snapshot invariant on every call.)
#[test]
fn sliding_window_rolls_raced_by_grants_never_over_admit() {
    use hotlimit::SlidingWindow;
    for approximate in [false, true] {
        let (limit, period) = (5u64, 64u64);
        let clock = ManualClock::new();
        let mut builder =
            SlidingWindow::builder(Rate::new(limit, Duration::from_nanos(period)).unwrap())
                .buckets(4)
                .clock(clock.clone());
        if approximate {
            builder = builder.approximate();
        }
        let w = builder.build().unwrap();
        let end = 20_000u64;
        let grants = std::sync::Mutex::new(Vec::new());
        let barrier = Barrier::new(THREADS);
        thread::scope(|s| {
            for t in 0..THREADS as u32 {
                let (w, clock, grants, barrier) = (&w, &clock, &grants, &barrier);
                s.spawn(move || {
                    let mut mine = Vec::new();
                    let n = 1 + t % 2;
                    barrier.wait();
                    for i in 0u64.. {
                        if i % 8 == u64::from(t) {
                            clock.advance(Duration::from_nanos(1));
                        }
                        let lo = clock.now();
                        if lo >= end {
                            break;
                        }
                        if w.try_acquire_n_at(n, lo).is_ok() {
                            mine.push((lo, clock.now(), u64::from(n)));
                        }
                    }
                    grants.lock().unwrap().extend(mine);
                });
            }
        });
        let grants = grants.into_inner().unwrap();
        let total: u64 = grants.iter().map(|g| g.2).sum();
        // About `limit` per period over 20,000 ns: most windows were filled.
        assert!(total > end / period * limit / 2, "granted only {total}");
        if !approximate {
            let worst = audit_window_intervals(grants, period);
            assert!(
                worst <= limit,
                "{worst} permits certainly in one window of {period} ns"
            );
        }
    }
}

/// Keyed: eight threads on a handful of hot keys at a frozen clock, with a ninth sweeping idle
/// keys all the while (and, in a second round, changing the default rate back and forth to
/// the same rate, which moves every key's state): every key grants exactly its burst (GCRA) or
/// limit (SlidingLog, SlidingWindow), no more (an eviction or a move racing an admission never
/// loses the grant) and no less.
///
/// This test was quarantined for a while: in a few runs in 100 one key granted fewer than its
/// burst. Two causes, both fixed: (1) a per-key log moved by a rate change wrote its carried
/// stamps by ring position instead of cursor order (the ring is strided above 16 slots), so
/// the cursor met live stamps early (`log_rate_change_keeps_the_remaining_limit_exact` in
/// tests/keyed.rs); (2) creators reserved a place before inserting, so while the one creator
/// of a key that won was preempted between its reservation and its insert, every other thread
/// found the key missing and the table full and was denied (seven of eight threads denied all
/// their requests on one key; now a new key enters the map pending and only its winning
/// creator reserves: `keyed_racing_creators_never_refuse_a_key_that_fits` below and the loom
/// model `racing_creators_of_one_key_are_both_admitted`).
#[test]
fn keyed_hot_keys_frozen_clock_exactly_burst_per_key() {
    keyed_hot_keys_matrix();
}

fn keyed_hot_keys_matrix() {
    use hotlimit::{Keyed, KeyedState, SlidingLog, SlidingWindow, WhenFull};
    const KEYS: u64 = 5;

    fn run_with<L: KeyedState>(
        k: Keyed<u64, L, ManualClock>,
        clock: &ManualClock,
        burst: u64,
        rate: Option<Rate>,
    ) {
        let granted: Vec<AtomicU64> = (0..KEYS).map(|_| AtomicU64::new(0)).collect();
        let done = std::sync::atomic::AtomicBool::new(false);
        let barrier = Barrier::new(THREADS + 1);
        thread::scope(|s| {
            s.spawn(|| {
                barrier.wait();
                // Relaxed: a stop flag.
                while !done.load(Ordering::Relaxed) {
                    k.evict_idle_at(clock.now());
                    if let Some(rate) = rate {
                        k.set_default_rate(rate).unwrap();
                    }
                }
            });
            let workers: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (k, granted, barrier) = (&k, &granted, &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        for i in 0..(burst * KEYS / 2) {
                            let key = (i + t as u64) % KEYS;
                            if k.try_acquire(&key).is_ok() {
                                // Relaxed: counters read after the scope joins.
                                granted[key as usize].fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    })
                })
                .collect();
            // Stop the sweeper before propagating a worker's panic: otherwise the scope would
            // wait for it forever and a failure would look like a hang.
            let results: Vec<_> = workers.into_iter().map(|w| w.join()).collect();
            done.store(true, Ordering::Relaxed);
            for r in results {
                if let Err(panic) = r {
                    std::panic::resume_unwind(panic);
                }
            }
        });
        for (key, g) in granted.iter().enumerate() {
            assert_eq!(g.load(Ordering::Relaxed), burst, "key {key}");
        }
        assert!(k.len() <= KEYS as usize);
    }

    let burst = 1_000u64;
    let clock = ManualClock::new();
    clock.set(Duration::from_secs(7));
    let gcra: Keyed<u64, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(10).unwrap())
        .burst(burst)
        .capacity(KEYS as usize)
        .when_full(WhenFull::DenyNewKeys)
        .clock(clock.clone())
        .build()
        .unwrap();
    run_with(gcra, &clock, burst, None);
    let log: Keyed<u64, SlidingLog, ManualClock> =
        Keyed::sliding_log(Rate::per_second(burst).unwrap())
            .capacity(KEYS as usize)
            .clock(clock.clone())
            .build()
            .unwrap();
    run_with(log, &clock, burst, None);
    let window = || -> Keyed<u64, SlidingWindow, ManualClock> {
        Keyed::sliding_window(Rate::per_second(burst).unwrap())
            .capacity(KEYS as usize)
            .clock(clock.clone())
            .build()
            .unwrap()
    };
    run_with(window(), &clock, burst, None);
    // Rate changes racing the admissions: the same rate, so the totals stay exact.
    let rate = Rate::per_second(burst).unwrap();
    run_with(window(), &clock, burst, Some(rate));
    let log: Keyed<u64, SlidingLog, ManualClock> = Keyed::sliding_log(rate)
        .capacity(KEYS as usize)
        .clock(clock.clone())
        .build()
        .unwrap();
    run_with(log, &clock, burst, Some(rate));
    let gcra: Keyed<u64, Gcra, ManualClock> = Keyed::gcra(rate)
        .capacity(KEYS as usize)
        .clock(clock.clone())
        .build()
        .unwrap();
    run_with(gcra, &clock, burst, Some(rate));
}

/// Keyed: rate changes racing the creation of the keys they concern. One thread creates keys
/// while another changes the default rate (or gives each key an override) at the same time;
/// once both are done, every key must run on its current rate: the `rates` word's RMWs close
/// the store-buffering race between "store the rate, then look for the key" and "insert the
/// key, then look for its rate".
#[test]
fn keyed_rate_changes_racing_new_keys_reach_every_key() {
    use hotlimit::Keyed;
    const KEYS: u64 = 2_000;
    let rounds = if cfg!(debug_assertions) { 5 } else { 20 };
    let s = 1_000_000_000u64;
    for round in 0..rounds {
        let override_each = round % 2 == 1;
        let k: Keyed<u64, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(1).unwrap())
            .capacity(2 * KEYS as usize)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let five = Rate::per_second(5).unwrap();
        let barrier = Barrier::new(2);
        thread::scope(|scope| {
            scope.spawn(|| {
                barrier.wait();
                for key in 0..KEYS {
                    let _ = k.try_acquire_at(&key, 0);
                }
            });
            scope.spawn(|| {
                barrier.wait();
                if override_each {
                    for key in 0..KEYS {
                        k.set_rate(key, five).unwrap();
                    }
                } else {
                    k.set_default_rate(five).unwrap();
                }
            });
        });
        // At 10 s every key is rested: 5 permits fit under 5 per second, never under 1.
        for key in 0..KEYS {
            assert!(
                k.try_acquire_n_at(&key, 5, 10 * s).is_ok(),
                "round {round}: key {key} is not on the new rate"
            );
        }
    }
}

/// Keyed: many threads creating the same few new keys at once, in a table whose capacity is
/// exactly the number of keys. Racing creators of one key each reserve a place until all but
/// one give theirs back, so for a moment the count reads full; a new key arriving then must not
/// be refused (the table never holds more keys than its capacity). Every key's burst covers
/// every request made, so any denial at all is a false one.
#[test]
fn keyed_racing_creators_never_refuse_a_key_that_fits() {
    use hotlimit::{Keyed, WhenFull};
    const KEYS: u64 = 4;
    let rounds = if cfg!(debug_assertions) { 200 } else { 2_000 };
    let clock = ManualClock::new();
    clock.set(Duration::from_secs(3));
    for round in 0..rounds {
        let k: Keyed<u64, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(1).unwrap())
            .burst(THREADS as u64)
            .capacity(KEYS as usize)
            .when_full(WhenFull::DenyNewKeys)
            .clock(clock.clone())
            .build()
            .unwrap();
        let barrier = Barrier::new(THREADS);
        let denied = AtomicU64::new(0);
        thread::scope(|s| {
            for t in 0..THREADS as u64 {
                let (k, barrier, denied) = (&k, &barrier, &denied);
                s.spawn(move || {
                    barrier.wait();
                    for i in 0..KEYS {
                        // Half the threads start on key 0, the others spread: every key is
                        // created while others are being created.
                        let key = (i + if t % 2 == 0 { 0 } else { t }) % KEYS;
                        if k.try_acquire(&key).is_err() {
                            // Relaxed: read after the scope joins.
                            denied.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        // Relaxed: the scope joined.
        assert_eq!(denied.load(Ordering::Relaxed), 0, "round {round}");
        assert_eq!(k.len(), KEYS as usize);
    }
}

#[test]
fn gcra_pair_frozen_clock_grants_exactly_the_smaller_burst() {
    for (b1, b2) in [(1u64, 5u64), (7, 3), (1_000, 25_000), (25_000, 1_000)] {
        let p = GcraPair::builder(Rate::per_second(10).unwrap(), Rate::per_hour(10).unwrap())
            .first_burst(b1)
            .second_burst(b2)
            .clock(clock_at_42s())
            .build()
            .unwrap();
        race_grants_exactly(&p, b1.min(b2), &format!("bursts {b1}, {b2}"));
        assert_eq!(p.remaining(), 0);
    }
}

#[test]
fn gcra_pair_frozen_clock_weighted_requests_never_exceed_either_burst() {
    let p = GcraPair::builder(Rate::per_second(1).unwrap(), Rate::per_hour(1).unwrap())
        .first_burst(10_000)
        .second_burst(6_000)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    // Of the smaller burst.
    race_weighted_strands_at_most_3(&p, 6_000);
}

/// Eight threads on the real clock; both rates bind during the run (the first with a small
/// burst and a high rate, the second with a larger burst and a lower rate): every interval of
/// the recorded grants holds both b + d/I bounds at once.
#[test]
fn gcra_pair_real_clock_audit_of_every_interval() {
    let clock = QuantaClock::new();
    let p = GcraPair::builder(
        Rate::per_second(400_000).unwrap(),
        Rate::per_second(100_000).unwrap(),
    )
    .first_burst(50)
    .second_burst(5_000)
    .clock(clock.clone())
    .build()
    .unwrap();
    let (i1, i2) = p.emission_intervals();
    let grants = record_grants(&clock, &[1, 3], |n, now| p.try_acquire_n_at(n, now).is_ok());
    let total = audit_gcra(grants.clone(), i1.as_nanos() as u64, 50);
    assert_eq!(audit_gcra(grants, i2.as_nanos() as u64, 5_000), total);
    // Not a speed goal: only that the limiter really granted under contention.
    assert!(total >= 5_000, "granted only {total}");
}

/// Three rates; the snapshot pool at its smallest (3) and at the default, so that spares run
/// out and snapshots are reclaimed under 8 racing threads.
fn gcra_multi_three(
    bursts: [u64; 3],
    snapshots: usize,
    clock: ManualClock,
) -> GcraMulti<ManualClock> {
    GcraMulti::builder()
        .rate_with_burst(Rate::per_second(10).unwrap(), bursts[0])
        .rate_with_burst(Rate::per_minute(10).unwrap(), bursts[1])
        .rate_with_burst(Rate::per_hour(10).unwrap(), bursts[2])
        .snapshots(snapshots)
        .clock(clock)
        .build()
        .unwrap()
}

#[test]
fn gcra_multi_frozen_clock_grants_exactly_the_smallest_burst() {
    for (bursts, snapshots) in [([5, 3, 9], 3), ([1_000, 2_500, 4_000], 3), ([7, 7, 7], 18)] {
        let g = gcra_multi_three(bursts, snapshots, clock_at_42s());
        let want = *bursts.iter().min().unwrap();
        race_grants_exactly(&g, want, &format!("bursts {bursts:?}"));
        assert_eq!(g.remaining(), 0);
    }
}

#[test]
fn gcra_multi_frozen_clock_weighted_requests_never_exceed_any_burst() {
    let g = gcra_multi_three([9_000, 6_000, 7_000], 4, ManualClock::new());
    race_weighted_strands_at_most_3(&g, 6_000);
}

/// Eight threads on the real clock, three rates that all bind during the run: every interval
/// of the recorded grants holds all three bounds.
#[test]
fn gcra_multi_real_clock_audit_of_every_interval() {
    let clock = QuantaClock::new();
    let g = GcraMulti::builder()
        .rate_with_burst(Rate::per_second(400_000).unwrap(), 50)
        .rate_with_burst(Rate::per_second(200_000).unwrap(), 500)
        .rate_with_burst(Rate::per_second(100_000).unwrap(), 5_000)
        .snapshots(4)
        .clock(clock.clone())
        .build()
        .unwrap();
    let intervals = g.emission_intervals();
    let grants = record_grants(&clock, &[1, 3], |n, now| g.try_acquire_n_at(n, now).is_ok());
    let totals: Vec<u128> = intervals
        .iter()
        .zip(g.bursts())
        .map(|(i, b)| audit_gcra(grants.clone(), i.as_nanos() as u64, b))
        .collect();
    assert!(totals.iter().all(|&t| t == totals[0]));
    // Not a speed goal: only that the limiter really granted under contention.
    assert!(totals[0] >= 5_000, "granted only {}", totals[0]);
}
