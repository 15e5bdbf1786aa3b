//! Gcra against its definition: the worked example, exact retries, clocks that misbehave,
//! and property tests comparing every decision with the sequential model.

mod model;

use std::time::Duration;

use hotlimit::{Clock, Gcra, Limiter, ManualClock, Rate};
use model::gcra::GcraModel;
use model::trace::{no_difference, rate, trace_weighted};
use proptest::prelude::*;

const S: u64 = 1_000_000_000;

fn manual(rate: Rate, burst: Option<u64>) -> (Gcra<ManualClock>, ManualClock) {
    let clock = ManualClock::new();
    let mut b = Gcra::builder(rate).clock(clock.clone());
    if let Some(burst) = burst {
        b = b.burst(burst);
    }
    (b.build().unwrap(), clock)
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn worked_example_three_per_minute() {
    let (g, clock) = manual(Rate::per_minute(3).unwrap(), None);
    for _ in 0..3 {
        assert_eq!(g.try_acquire(), Ok(()));
    }
    for (t, wait) in [(1, 19), (5, 15), (10, 10), (15, 5)] {
        clock.set(secs(t));
        let d = g.try_acquire().unwrap_err();
        assert_eq!(d.retry_after(), Some(secs(wait)), "at t={t}s");
    }
    clock.set(secs(21));
    assert_eq!(g.try_acquire(), Ok(()));
    clock.set(secs(22));
    assert_eq!(g.try_acquire().unwrap_err().retry_after(), Some(secs(18)));
}

#[test]
fn worked_example_exactly_at_twenty_seconds() {
    let (g, clock) = manual(Rate::per_minute(3).unwrap(), None);
    for _ in 0..3 {
        g.try_acquire().unwrap();
    }
    clock.set(secs(20));
    assert_eq!(g.try_acquire(), Ok(()));
    assert!(g.try_acquire().is_err());
}

#[test]
fn waiting_exactly_retry_after_succeeds() {
    let (g, clock) = manual(Rate::new(7, Duration::from_millis(900)).unwrap(), Some(3));
    g.try_acquire_n(3).unwrap();
    for n in [1, 2, 3, 1, 3] {
        let d = g.try_acquire_n(n).unwrap_err();
        let wait = d.retry_after().unwrap();
        assert!(wait > Duration::ZERO);
        clock.advance(wait - Duration::from_nanos(1));
        assert!(
            g.try_acquire_n(n).is_err(),
            "one ns early must still be denied"
        );
        clock.advance(Duration::from_nanos(1));
        assert_eq!(g.try_acquire_n(n), Ok(()), "exactly retry_after later");
    }
}

#[test]
fn more_than_burst_is_never_and_zero_is_free() {
    let (g, _clock) = manual(Rate::per_second(10).unwrap(), Some(4));
    let d = g.try_acquire_n(5).unwrap_err();
    assert_eq!(d.retry_after(), None);
    assert!(d.is_never());
    assert_eq!(g.try_acquire_n(u32::MAX).unwrap_err().retry_after(), None);
    assert_eq!(g.try_acquire_n(0), Ok(()));
    assert_eq!(g.remaining(), 4, "neither call took anything");
    g.try_acquire_n(4).unwrap();
    assert_eq!(g.try_acquire_n(0), Ok(()));
}

#[test]
fn clock_set_back_never_frees_permits() {
    let (g, clock) = manual(Rate::per_second(2).unwrap(), None);
    clock.set(secs(100));
    g.try_acquire_n(2).unwrap();
    assert!(g.try_acquire().is_err());
    clock.set(secs(3));
    assert!(g.try_acquire().is_err());
    assert_eq!(g.remaining(), 0);
    // Back at the original time, it is as if no time passed at all.
    clock.set(secs(100));
    assert!(g.try_acquire().is_err());
    clock.set(Duration::from_millis(100_500));
    assert_eq!(g.try_acquire(), Ok(()));
}

#[test]
fn extreme_times_never_panic_or_overflow() {
    let (g, clock) = manual(Rate::per_second(1000).unwrap(), None);
    clock.set(Duration::from_nanos(u64::MAX));
    // S' = now + I does not fit: denied for good rather than wrapped.
    assert_eq!(g.try_acquire().unwrap_err().retry_after(), None);
    clock.set(Duration::from_nanos(u64::MAX - 10 * S));
    assert!(g.try_acquire_n(1000).is_ok());
    assert!(g.try_acquire().is_err());
    // Back to 0 from the end of time: locked until the state drains, never over-admitting.
    clock.set(Duration::ZERO);
    let d = g.try_acquire().unwrap_err();
    assert!(d.retry_after().unwrap() > secs(365 * 24 * 3600));
    assert_eq!(g.remaining_at(u64::MAX), 1000);
    // Duration::MAX saturates the manual clock instead of panicking.
    clock.advance(Duration::MAX);
    assert_eq!(clock.now(), u64::MAX);
}

#[test]
fn extreme_rates_build_and_work() {
    // One permit per ~584 years could never be charged on a clock past 0 (now + I overflows):
    // refused at build (issue 14), naming the rate.
    let e = Gcra::builder(Rate::new(1, Duration::from_nanos(u64::MAX)).unwrap())
        .clock(ManualClock::new())
        .build()
        .unwrap_err();
    assert_eq!(e.field(), "rate");
    assert!(e.to_string().contains("2^62"), "{e}");
    // One permit per 146 years is the longest: it works on any clock reading below 2^62 ns,
    // the default clock's included.
    let longest = Rate::new(1, Duration::from_nanos((1 << 62) - 1)).unwrap();
    let g = Gcra::builder(longest).build().unwrap();
    assert!(hotlimit::Limiter::try_acquire(&g).is_ok());
    let g = Gcra::builder(longest)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    assert!(g.try_acquire_at((1 << 62) - 1).is_ok());
    assert_eq!(
        g.try_acquire_at((1 << 62) - 1)
            .unwrap_err()
            .retry_after_nanos(),
        Some((1 << 62) - 1)
    );
    // One permit per nanosecond, a burst of a billion.
    let g = Gcra::builder(Rate::new(S, Duration::from_secs(1)).unwrap())
        .clock(ManualClock::new())
        .build()
        .unwrap();
    assert!(g.try_acquire_n_at(u32::MAX, 0).is_err());
    assert!(g.try_acquire_n_at(1_000_000_000, 0).is_ok());
    assert_eq!(
        g.try_acquire_at(0).unwrap_err().retry_after_nanos(),
        Some(1)
    );
}

#[test]
fn emission_interval_rounds_up() {
    // 3/s: I = ceil(1e9 / 3) so the limiter never runs faster than 3 per second.
    let (g, _) = manual(Rate::per_second(3).unwrap(), None);
    assert_eq!(g.emission_interval(), Duration::from_nanos(333_333_334));
    g.try_acquire_n_at(3, 0).unwrap();
    assert!(
        g.try_acquire_at(333_333_333).is_err(),
        "one ns before I is denied"
    );
    assert_eq!(g.try_acquire_at(333_333_334), Ok(()));
}

#[test]
fn debug_and_accessors() {
    let (g, _) = manual(Rate::per_minute(3).unwrap(), Some(2));
    assert_eq!(g.burst(), 2);
    assert_eq!(g.rate(), Rate::per_minute(3).unwrap());
    assert_eq!(g.emission_interval(), secs(20));
    let s = format!("{g:?}");
    assert!(s.contains("Gcra") && s.contains("burst: 2"), "{s}");
}

#[test]
fn default_clock_limiter_works() {
    let g = Gcra::new(Rate::per_hour(5).unwrap()).unwrap();
    for _ in 0..5 {
        g.try_acquire().unwrap();
    }
    let d = g.try_acquire().unwrap_err();
    let wait = d.retry_after().unwrap();
    assert!(
        wait > Duration::from_secs(700) && wait <= Duration::from_secs(720),
        "{wait:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    /// Every decision and every retry_after equals the GCRA definition's.
    #[test]
    fn matches_reference_model(
        (limit, period, burst, steps) in rate().prop_flat_map(|(l, p, b)| {
            (Just(l), Just(p), Just(b), trace_weighted(b, p, 120, 1))
        })
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let g = Gcra::builder(rate).burst(burst).clock(ManualClock::new()).build().unwrap();
        let mut model = GcraModel::new(limit, period, burst);
        no_difference(
            &steps,
            |n, now| g.try_acquire_n_at(n, now).map_err(|d| d.retry_after_nanos()),
            |n, now| model.acquire(n, now),
        )?;
    }
}
