//! SlidingWindow against its definition: the worked examples from the issue, exact retries,
//! clocks that misbehave, and property tests against the exact log and the bucketed model on
//! random traces (bucket counts 1..=16).

mod model;

use std::time::Duration;

use hotlimit::{Limiter, ManualClock, Rate, SlidingWindow};
use model::window::{BucketModel, WindowLog};
use proptest::prelude::*;

const MS: u64 = 1_000_000;

fn window(rate: Rate, buckets: usize, approximate: bool) -> SlidingWindow<ManualClock> {
    let b = SlidingWindow::builder(rate)
        .buckets(buckets)
        .clock(ManualClock::new());
    if approximate {
        b.approximate().build().unwrap()
    } else {
        b.build().unwrap()
    }
}

#[test]
fn worked_example_five_per_second() {
    // 5 per second, 10 buckets of 100 ms (the default), times in ms.
    let w = window(Rate::per_second(5).unwrap(), 10, false);
    for t in [900, 950, 1013, 1810, 1850] {
        assert_eq!(w.try_acquire_at(t * MS), Ok(()), "at {t} ms");
    }
    let d = w.try_acquire_at(1890 * MS).unwrap_err();
    // The two hits of bucket [900, 1000) ms count until the window stops touching it.
    assert_eq!(d.retry_after_nanos(), Some(2_000 * MS - 1 - 1890 * MS));
    assert!(w.try_acquire_at(2_000 * MS - 2).is_err());
    assert_eq!(w.try_acquire_at(2_000 * MS - 1), Ok(()));
}

#[test]
fn worked_example_one_per_second_strict_denies_approximate_admits() {
    let strict = window(Rate::per_second(1).unwrap(), 10, false);
    assert_eq!(strict.try_acquire_at(990 * MS), Ok(()));
    assert!(strict.try_acquire_at(1_930 * MS).is_err());

    let approx = window(Rate::per_second(1).unwrap(), 10, true);
    assert_eq!(approx.try_acquire_at(990 * MS), Ok(()));
    // 0.990 s lies in the bucket [0.9 s, 1.0 s), which starts before 1.930 − 1 = 0.930 s:
    // approximate mode drops it and admits a second permit within one period.
    assert_eq!(approx.try_acquire_at(1_930 * MS), Ok(()));
}

#[test]
fn default_is_ten_strict_buckets() {
    let w = SlidingWindow::builder(Rate::per_second(1).unwrap())
        .clock(ManualClock::new())
        .build()
        .unwrap();
    assert_eq!(w.buckets(), 10);
    assert_eq!(w.bucket_width(), Duration::from_millis(100));
    assert!(!w.is_approximate());
}

#[test]
fn waiting_exactly_retry_after_succeeds() {
    let clock = ManualClock::new();
    let w = SlidingWindow::builder(Rate::new(7, Duration::from_millis(900)).unwrap())
        .buckets(9)
        .clock(clock.clone())
        .build()
        .unwrap();
    w.try_acquire_n(4).unwrap();
    clock.advance(Duration::from_millis(250));
    w.try_acquire_n(3).unwrap();
    for n in [1, 4, 2, 7, 3] {
        // Fill the window, so that the request is denied.
        while w.try_acquire_n(1).is_ok() {}
        let d = w.try_acquire_n(n).unwrap_err();
        let wait = d.retry_after().unwrap();
        assert!(wait > Duration::ZERO);
        clock.advance(wait - Duration::from_nanos(1));
        assert!(w.try_acquire_n(n).is_err(), "one ns early must be denied");
        clock.advance(Duration::from_nanos(1));
        assert_eq!(w.try_acquire_n(n), Ok(()), "exactly retry_after later");
        clock.advance(Duration::from_millis(30));
    }
}

#[test]
fn weighted_more_than_limit_is_never_and_zero_is_free() {
    let w = window(Rate::per_second(10).unwrap(), 4, false);
    let d = w.try_acquire_n_at(11, 0).unwrap_err();
    assert_eq!(d.retry_after(), None);
    assert_eq!(
        w.try_acquire_n_at(u32::MAX, 0).unwrap_err().retry_after(),
        None
    );
    assert_eq!(w.try_acquire_n_at(0, 0), Ok(()));
    assert_eq!(w.try_acquire_n_at(10, 0), Ok(()));
    assert_eq!(w.try_acquire_n_at(0, 0), Ok(()));
    assert!(w
        .try_acquire_n_at(1, 0)
        .unwrap_err()
        .retry_after()
        .is_some());
}

#[test]
fn clock_going_backwards_never_frees_permits() {
    let w = window(Rate::per_second(2).unwrap(), 10, false);
    w.try_acquire_at(5_000 * MS).unwrap();
    w.try_acquire_at(5_000 * MS).unwrap();
    // Earlier times see the same (or a wider) window: still full.
    for t in [4_999 * MS, 4_000 * MS, 0] {
        assert!(w.try_acquire_at(t).is_err(), "at {t}");
    }
    // A later time moves the floor; going back behind it must not reopen expired capacity
    // nor forget the live bucket.
    assert!(
        w.try_acquire_at(6_100 * MS - 2).is_err(),
        "bucket 50 counts whole"
    );
    w.try_acquire_at(6_100 * MS).unwrap();
    w.try_acquire_at(6_150 * MS).unwrap();
    for t in [6_149 * MS, 6_099 * MS, 5_000 * MS, 0, 6_150 * MS] {
        assert!(w.try_acquire_at(t).is_err(), "at {t}");
    }
    assert!(w.try_acquire_at(7_200 * MS - 2).is_err());
    assert_eq!(w.try_acquire_at(7_200 * MS - 1), Ok(()));
}

#[test]
fn times_near_u64_max_never_overflow() {
    for buckets in [1, 3, 10] {
        let w = window(
            Rate::new(3, Duration::from_nanos(1_000)).unwrap(),
            buckets,
            false,
        );
        for t in [u64::MAX - 5_000, u64::MAX - 1, u64::MAX] {
            while w.try_acquire_at(t).is_ok() {}
            let _ = w.try_acquire_n_at(3, t);
        }
        assert!(w.try_acquire_at(u64::MAX).is_err());
        let w = window(
            Rate::new(3, Duration::from_nanos(u64::MAX)).unwrap(),
            buckets,
            true,
        );
        for t in [0, u64::MAX / 2, u64::MAX] {
            let _ = w.try_acquire_n_at(2, t);
            let _ = w.try_acquire_n_at(2, t);
        }
    }
}

#[test]
fn an_idle_gap_of_more_than_two_to_the_32_buckets_forgets_nothing_live() {
    // w = 1 ns: the 32-bit epoch fields wrap every 4.3 s of clock time. Permits granted before
    // an idle gap of exactly 2^32 buckets must not be mistaken for the current ones, and the
    // window after the gap must be the real one.
    let w = window(Rate::new(2, Duration::from_nanos(4)).unwrap(), 4, false);
    w.try_acquire_n_at(2, 10).unwrap();
    let later = 10 + (1u64 << 32);
    assert_eq!(w.try_acquire_n_at(2, later), Ok(()), "old permits are gone");
    assert!(w.try_acquire_at(later).is_err(), "the new ones count");
    assert_eq!(w.try_acquire_n_at(2, later + 4), Ok(()));
}

#[test]
fn idle_gaps_that_alias_the_stored_epoch_bits_forget_nothing_live() {
    // The decision word keeps 30 bits of the bucket number and the snapshots 32: gaps of
    // 2^30, 3·2^30 and 2^32 buckets land on the same low bits. With w = 1 ns each gap is
    // one roll; the permits before it must be gone, the ones after it must count.
    for gap in [1u64 << 30, 3 << 30, 1 << 32, (1 << 32) + 1] {
        let w = window(Rate::new(3, Duration::from_nanos(4)).unwrap(), 4, false);
        w.try_acquire_n_at(3, 10).unwrap();
        assert!(w.try_acquire_at(12).is_err());
        let later = 10 + gap;
        assert_eq!(
            w.try_acquire_n_at(2, later),
            Ok(()),
            "gap {gap}: old permits are gone"
        );
        assert_eq!(w.try_acquire_at(later + 1), Ok(()));
        let d = w.try_acquire_at(later + 2).unwrap_err();
        // The permits at `later` leave when the floor passes their bucket: at later + 4.
        assert_eq!(d.retry_after_nanos(), Some(2), "gap {gap}");
        assert_eq!(w.try_acquire_n_at(2, later + 4), Ok(()), "gap {gap}");
    }
}

#[test]
fn one_nanosecond_buckets_at_the_end_of_the_clock() {
    // w = 1 ns: the bucket of u64::MAX is u64::MAX itself, so "the next bucket" does not
    // exist. Grants there work, and a denial is "never" (the window would clear past the
    // clock's range), not a panic.
    for approx in [false, true] {
        let w = window(Rate::new(2, Duration::from_nanos(2)).unwrap(), 2, approx);
        assert_eq!(w.try_acquire_n_at(2, u64::MAX), Ok(()));
        let d = w.try_acquire_at(u64::MAX).unwrap_err();
        assert!(d.is_never(), "{d:?}");
        assert!(w.try_acquire_at(u64::MAX - 1).unwrap_err().is_never());
        assert!(w.try_acquire_at(0).is_err());
    }
}

#[test]
fn the_limit_is_exact_at_one_instant() {
    for limit in [1u64, 2, 17, 1000] {
        let w = window(Rate::per_second(limit).unwrap(), 10, false);
        let mut granted = 0;
        for _ in 0..limit + 5 {
            if w.try_acquire_at(42).is_ok() {
                granted += 1;
            }
        }
        assert_eq!(granted, limit);
    }
}

/// Measures approximate mode's over-admission (the most permits in any window of length
/// `period`, minus `limit`): on the adversarial trace (a full burst at the end of a bucket,
/// then another just after the window stops counting that bucket) and under steady
/// overload (a request every `step` ns, far above the rate). Run with `--nocapture` to see
/// the figures; the guide quotes them.
#[test]
fn approximate_over_admission_measured() {
    let (limit, period) = (100u64, 1_000_000_000u64);
    for buckets in [4u64, 10, 16] {
        let w = window(
            Rate::new(limit, Duration::from_nanos(period)).unwrap(),
            buckets as usize,
            true,
        );
        let width = period / buckets;
        let mut log = WindowLog::new();
        // Adversarial: `limit` at the last instant of bucket 3, then `limit` at the first
        // instant whose approximate window skips bucket 3.
        let t1 = 4 * width - 1;
        let t2 = 4 * width + period - width;
        for t in [t1, t2] {
            for _ in 0..limit {
                if w.try_acquire_at(t).is_ok() {
                    log.record(t, 1);
                }
            }
        }
        let adversarial = log.worst_window(period) - u128::from(limit);
        assert_eq!(
            adversarial,
            u128::from(limit),
            "both bursts fit in (t2 − period, t2]"
        );

        // Random (Poisson) arrivals at `load` × the rate, 300 periods, a seeded xorshift.
        for load in [1.0f64, 2.0, 4.0] {
            let w = window(
                Rate::new(limit, Duration::from_nanos(period)).unwrap(),
                buckets as usize,
                true,
            );
            let mut log = WindowLog::new();
            let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ buckets;
            let mean_gap = period as f64 / (limit as f64 * load);
            let mut t = 0u64;
            while t < 300 * period {
                if w.try_acquire_at(t).is_ok() {
                    log.record(t, 1);
                }
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let u = ((rng >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
                t += (-u.ln() * mean_gap) as u64 + 1;
            }
            let over = log.worst_window(period).saturating_sub(u128::from(limit));
            eprintln!(
                "approximate, {buckets} buckets, limit {limit}: adversarial +{adversarial}; \
                 Poisson arrivals at {load}x the rate: worst window +{over} \
                 (a bucket's share is {})",
                limit / buckets
            );
            // Dropping the oldest bucket forgets at most the permits of one bucket's width.
            assert!(over <= u128::from(limit), "{over}");
        }
    }
}

/// One step of a random trace: wait `dt`, then ask for `n` permits.
#[derive(Clone, Debug)]
struct Step {
    dt: u64,
    n: u32,
}

fn trace(period: u64, limit: u64) -> impl Strategy<Value = Vec<Step>> {
    let step = (
        prop_oneof![
            3 => Just(0u64),
            4 => 0..=period / 4 + 1,
            2 => 0..=2 * period,
        ],
        prop_oneof![8 => 1..=limit as u32, 1 => Just(limit as u32 + 1), 1 => Just(0u32)],
    )
        .prop_map(|(dt, n)| Step { dt, n });
    proptest::collection::vec(step, 1..80)
}

fn config() -> impl Strategy<Value = (u64, u64, u64, bool)> {
    (1u64..=12, 1u64..=400, 1u64..=16, any::<bool>()).prop_filter_map(
        "at most one bucket per ns",
        |(limit, period, buckets, approx)| {
            (buckets <= period).then_some((limit, period, buckets, approx))
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3_000))]

    /// Every decision and every retry time equals the bucketed model's, and the guarantees
    /// hold against the exact log: (a) no window of length `period` holds more than `limit`
    /// (strict); (b) a denial only when the last `period + w` (strict) or `period`
    /// (approximate) held more than `limit − n`; (c) waiting `retry_after` succeeds, and one
    /// nanosecond less does not.
    #[test]
    fn matches_model_and_log(
        (limit, period, buckets, approx) in config(),
        steps in (1u64..=12, 1u64..=400).prop_flat_map(|(l, p)| trace(p, l)),
        retry_every in 1usize..4,
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let w = window(rate, buckets as usize, approx);
        let mut model = BucketModel::new(limit, period, buckets, approx);
        let width = model.width;
        let mut now = 0u64;
        for (i, step) in steps.iter().enumerate() {
            now += step.dt;
            let n = step.n.min(limit as u32 + 1);
            let got = w.try_acquire_n_at(n, now);
            let want = model.acquire(u64::from(n), now);
            prop_assert_eq!(got.map_err(|d| d.retry_after_nanos()), want, "step {} at {}", i, now);
            match got {
                Ok(()) => {
                    if !approx {
                        // (a): the worst window ends at a grant.
                        prop_assert!(model.log.in_window(now, period) <= u128::from(limit));
                    }
                }
                Err(d) => {
                    let Some(r) = d.retry_after_nanos() else {
                        prop_assert!(u64::from(n) > limit);
                        continue;
                    };
                    // (b)
                    let span = if approx { period } else { period + width - 1 };
                    let lo = (now + 1).saturating_sub(span);
                    prop_assert!(
                        model.log.granted_in(lo, now) + u128::from(n) > u128::from(limit),
                        "false denial at {} beyond the bound", now
                    );
                    // (c)
                    if i % retry_every == 0 {
                        prop_assert!(r >= 1);
                        if r > 1 {
                            prop_assert!(w.try_acquire_n_at(n, now + r - 1).is_err());
                            prop_assert!(model.acquire(u64::from(n), now + r - 1).is_err());
                        }
                        now += r;
                        prop_assert_eq!(w.try_acquire_n_at(n, now), Ok(()), "retry at {}", now);
                        prop_assert_eq!(model.acquire(u64::from(n), now), Ok(()));
                    }
                }
            }
        }
        if !approx {
            prop_assert!(model.log.worst_window(period) <= u128::from(limit));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Clocks that jump backwards: every decision and retry time equals the model's, which
    /// judges a request at its effective time τ = max(now, start of the newest bucket seen);
    /// by τ no window ever holds more than `limit` (strict), and the log never holds more
    /// than the real window could give back: going back never frees a permit.
    #[test]
    fn backwards_clock_matches_effective_time_model(
        (limit, period, buckets, approx) in config(),
        steps in proptest::collection::vec((-400i64..=400, 1u32..=13), 1..80),
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let w = window(rate, buckets as usize, approx);
        let mut model = BucketModel::new(limit, period, buckets, approx);
        let mut now = 2_000u64;
        for (i, &(dt, n)) in steps.iter().enumerate() {
            now = now.saturating_add_signed(dt);
            let n = n.min(limit as u32 + 1);
            let got = w.try_acquire_n_at(n, now).map_err(|d| d.retry_after_nanos());
            let want = model.acquire(u64::from(n), now);
            prop_assert_eq!(got, want, "step {} at {}", i, now);
            if got.is_ok() && !approx {
                // Idempotent after `acquire` (which saw the same floor).
                let tau = model.effective(now);
                prop_assert!(model.log.in_window(tau, period) <= u128::from(limit));
            }
        }
        if !approx {
            prop_assert!(model.log.worst_window(period) <= u128::from(limit));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Count-closed buckets.

use model::window::ClosedModel;

fn closed(rate: Rate, buckets: usize, k: u64) -> SlidingWindow<ManualClock> {
    SlidingWindow::builder(rate)
        .buckets(buckets)
        .count_closed(k)
        .clock(ManualClock::new())
        .build()
        .unwrap()
}

#[test]
fn count_closed_frees_a_full_bucket_one_period_after_its_newest_grant() {
    // 5 per second, 10 buckets of 100 ms, k = 2. Strict mode denies at 1890 ms (the worked
    // example); here the bucket [900, 1000) closed at 950 ms with 2 permits and leaves at
    // 1950 ms, not at 2000 ms − 1 ns.
    let w = closed(Rate::per_second(5).unwrap(), 10, 2);
    for t in [900, 950, 1013, 1810, 1850] {
        assert_eq!(w.try_acquire_at(t * MS), Ok(()), "at {t} ms");
    }
    let d = w.try_acquire_at(1890 * MS).unwrap_err();
    assert_eq!(d.retry_after_nanos(), Some(60 * MS));
    assert!(w.try_acquire_at(1950 * MS - 1).is_err());
    assert_eq!(w.try_acquire_at(1950 * MS), Ok(()));
    assert_eq!(w.count_closed(), Some(2));
}

#[test]
fn count_closed_with_k_one_is_exact() {
    // k = 1: every grant is its own closed bucket, so the window is the exact log's.
    let w = closed(Rate::per_second(3).unwrap(), 1, 1);
    for t in [0, 400, 999] {
        w.try_acquire_at(t * MS).unwrap();
    }
    assert_eq!(
        w.try_acquire_at(999 * MS).unwrap_err().retry_after_nanos(),
        Some(MS)
    );
    assert_eq!(w.try_acquire_at(1000 * MS), Ok(()));
    assert!(w.try_acquire_at(1399 * MS).is_err());
    assert_eq!(w.try_acquire_at(1400 * MS), Ok(()));
}

/// The exact ring size, slot by slot: a burst that closes ⌊L/k⌋ − R + 1 buckets at the last
/// instant of bucket 0, then k permits (one closed bucket) in each of the next R − 1 buckets.
/// At the last step R time buckets and ⌊L/k⌋ closed buckets count at once, so both rings
/// are full: one slot fewer in either and a live bucket would have had to be overwritten.
#[test]
fn count_closed_adversarial_trace_needs_every_slot() {
    for (limit, buckets, k) in [(30u64, 10u64, 2u64), (40, 10, 2), (100, 4, 7), (12, 3, 1)] {
        let period = 1_000 * MS;
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let w = closed(rate, buckets as usize, k);
        let mut model = ClosedModel::new(limit, period, buckets, k);
        let (width, ring, m) = (model.width, model.ring(), limit / k);
        assert!(m >= ring, "the trace needs a closed bucket per time bucket");
        let mut steps: Vec<(u64, u64)> = Vec::new();
        // The fast burst: (m − ring + 1)·k permits, one at a time, at the end of bucket 0.
        for _ in 0..(m - ring + 1) * k {
            steps.push((width - 1, 1));
        }
        // Then k permits in each later bucket while bucket 0 still counts.
        for y in 1..ring {
            for _ in 0..k {
                steps.push((y * width, 1));
            }
        }
        for &(t, n) in &steps {
            assert_eq!(w.try_acquire_n_at(n as u32, t), Ok(()), "at {t}");
            assert_eq!(model.acquire(n, t), Ok(()));
        }
        assert_eq!(
            model.max_live_buckets as u64, ring,
            "every time bucket slot"
        );
        assert_eq!(model.max_live_closed as u64, m, "every closed-bucket entry");
        // Full, and the retry is exact: the burst leaves one period after its newest grant.
        let t = steps.last().unwrap().0;
        let leave = limit - m * k; // permits still free
        for _ in 0..leave {
            assert_eq!(w.try_acquire_at(t), Ok(()));
        }
        let d = w.try_acquire_at(t).unwrap_err();
        assert_eq!(d.retry_after_nanos(), Some(width - 1 + period - t));
        assert_eq!(w.try_acquire_at(width - 1 + period), Ok(()));
    }
}

#[test]
fn count_closed_eight_threads_frozen_clock_exactly_limit() {
    for (limit, k) in [(1_000u64, 1u64), (1_000, 7), (997, 100), (64, 64)] {
        let w = std::sync::Arc::new(closed(Rate::per_second(limit).unwrap(), 10, k));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let w = w.clone();
                std::thread::spawn(move || {
                    let mut got = 0u64;
                    for i in 0..limit {
                        let n = 1 + (i % 3) as u32;
                        if w.try_acquire_n_at(n, 5 * MS).is_ok() {
                            got += u64::from(n);
                        }
                    }
                    got
                })
            })
            .collect();
        let total: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
        // Top up with single permits: the count must be exactly `limit`.
        let mut top = 0;
        while w.try_acquire_at(5 * MS).is_ok() {
            top += 1;
        }
        assert_eq!(total + top, limit, "k = {k}");
        // Everything leaves one period after 5 ms (closed buckets) or with bucket 0
        // (its open part): by 1.1 s − 1 ns all of `limit` is free again.
        let mut again = 0;
        while w.try_acquire_at(1_100 * MS - 1).is_ok() {
            again += 1;
        }
        assert_eq!(again, limit, "nothing leaked, k = {k}");
    }
}

fn closed_config() -> impl Strategy<Value = (u64, u64, u64, u64)> {
    (1u64..=12, 1u64..=400, 1u64..=16)
        .prop_filter("at most one bucket per ns", |&(_, period, buckets)| {
            buckets <= period
        })
        .prop_flat_map(|(limit, period, buckets)| {
            (Just(limit), Just(period), Just(buckets), 1..=limit)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3_000))]

    /// Count-closed: every decision and retry time equals the model's, and against the exact
    /// log: (a) no window of length `period` holds more than `limit`; (b) a denial of n only
    /// when more than `limit − n` were granted within the last `period + w` AND fewer than
    /// n + k − 1 permits are truly free (truly free = `limit` − permits granted in the exact
    /// window (now − period, now]); (c) waiting `retry_after` succeeds, one ns less does not.
    #[test]
    fn count_closed_matches_model_and_log(
        (limit, period, buckets, k) in closed_config(),
        steps in (1u64..=12, 1u64..=400).prop_flat_map(|(l, p)| trace(p, l)),
        retry_every in 1usize..4,
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let w = closed(rate, buckets as usize, k);
        let mut model = ClosedModel::new(limit, period, buckets, k);
        let width = model.width;
        let mut now = 0u64;
        for (i, step) in steps.iter().enumerate() {
            now += step.dt;
            let n = step.n.min(limit as u32 + 1);
            let got = w.try_acquire_n_at(n, now);
            let want = model.acquire(u64::from(n), now);
            prop_assert_eq!(got.map_err(|d| d.retry_after_nanos()), want, "step {} at {}", i, now);
            match got {
                Ok(()) => prop_assert!(model.log.in_window(now, period) <= u128::from(limit)),
                Err(d) => {
                    let Some(r) = d.retry_after_nanos() else {
                        prop_assert!(u64::from(n) > limit);
                        continue;
                    };
                    let n128 = u128::from(n);
                    // (b), time bound
                    let lo = (now + 1).saturating_sub(period + width - 1);
                    prop_assert!(model.log.granted_in(lo, now) + n128 > u128::from(limit));
                    // (b), count bound
                    let free = u128::from(limit) - model.log.in_window(now, period);
                    prop_assert!(free < n128 + u128::from(k) - 1, "free {} n {} k {}", free, n, k);
                    // (c)
                    if i % retry_every == 0 {
                        prop_assert!(r >= 1);
                        if r > 1 {
                            prop_assert!(w.try_acquire_n_at(n, now + r - 1).is_err());
                            prop_assert!(model.acquire(u64::from(n), now + r - 1).is_err());
                        }
                        now += r;
                        prop_assert_eq!(w.try_acquire_n_at(n, now), Ok(()), "retry at {}", now);
                        prop_assert_eq!(model.acquire(u64::from(n), now), Ok(()));
                    }
                }
            }
            prop_assert!(model.max_live_buckets as u64 <= model.ring());
            prop_assert!(model.max_live_closed as u64 <= limit / k);
        }
        prop_assert!(model.log.worst_window(period) <= u128::from(limit));
    }

    /// Count-closed with clocks that jump backwards: the model judges every call at the
    /// highest time seen; decisions and retry times agree, and by those times no window ever
    /// holds more than `limit`.
    #[test]
    fn count_closed_backwards_clock_matches_model(
        (limit, period, buckets, k) in closed_config(),
        steps in proptest::collection::vec((-400i64..=400, 1u32..=13), 1..80),
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let w = closed(rate, buckets as usize, k);
        let mut model = ClosedModel::new(limit, period, buckets, k);
        let mut now = 2_000u64;
        for (i, &(dt, n)) in steps.iter().enumerate() {
            now = now.saturating_add_signed(dt);
            let n = n.min(limit as u32 + 1);
            let got = w.try_acquire_n_at(n, now).map_err(|d| d.retry_after_nanos());
            let want = model.acquire(u64::from(n), now);
            prop_assert_eq!(got, want, "step {} at {}", i, now);
        }
        prop_assert!(model.log.worst_window(period) <= u128::from(limit));
    }
}

/// A caller preempted between its clock read and its CAS is counted at the newest bucket's
/// start, not at its `now`: the window by the callers' `now`s can then hold more than
/// `limit` (one extra per such caller), while the window by effective times never does (the
/// guide, "What time a grant is counted at"; measured with real threads by
/// `examples/window_audit.rs`).
#[test]
fn a_stale_now_is_counted_at_the_newest_bucket() {
    const S: u64 = 1_000_000_000;
    // 2 per 10 s, 10 buckets of 1 s.
    let w = window(Rate::new(2, Duration::from_secs(10)).unwrap(), 10, false);
    w.try_acquire_at(9 * S).unwrap();
    w.try_acquire_at(9 * S).unwrap();
    assert!(w.try_acquire_at(9 * S + S / 2).is_err()); // the window (−0.5 s, 9.5 s] is full
                                                       // Another caller at 20 s: the window (10 s, 20 s] is empty; the newest bucket is [20, 21).
    w.try_acquire_at(20 * S).unwrap();
    // The caller that read 9.5 s and was preempted until now: judged at τ = 20 s (one permit
    // in (10 s, 20 s]), so it is granted.
    w.try_acquire_at(9 * S + S / 2).unwrap();
    // By effective time, (10 s, 20 s] holds 2 = limit: the next is denied, at any stale now.
    assert!(w.try_acquire_at(20 * S).is_err());
    assert!(w.try_acquire_at(0).is_err());
    // By the callers' own nows, (−0.5 s, 9.5 s] holds 3 grants (9, 9, 9.5): one over limit.
}
