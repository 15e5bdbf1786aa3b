//! SlidingLog against the exact log: worked examples, exact retries, weighted requests, clocks
//! that misbehave, and property tests comparing every decision and every retry time with the
//! sequential model.

mod model;

use std::time::Duration;

use hotlimit::{Clock, Limiter, ManualClock, Rate, SlidingLog};
use model::log::LogModel;
use proptest::prelude::*;

const S: u64 = 1_000_000_000;

fn manual(rate: Rate) -> (SlidingLog<ManualClock>, ManualClock) {
    let clock = ManualClock::new();
    let log = SlidingLog::builder(rate)
        .clock(clock.clone())
        .build()
        .unwrap();
    (log, clock)
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn worked_example_three_per_minute() {
    let (log, clock) = manual(Rate::per_minute(3).unwrap());
    for t in [0, 10, 20] {
        clock.set(secs(t));
        assert_eq!(log.try_acquire(), Ok(()), "at t={t}s");
    }
    // The oldest grant (t = 0) leaves the window (t − 60, t] at t = 60.
    for (t, wait) in [(21, 39), (45, 15), (59, 1)] {
        clock.set(secs(t));
        assert_eq!(
            log.try_acquire().unwrap_err().retry_after(),
            Some(secs(wait)),
            "at t={t}s"
        );
    }
    clock.set(secs(60));
    assert_eq!(
        log.try_acquire(),
        Ok(()),
        "half-open: a grant exactly 60 s ago is out"
    );
    // Now the oldest in the window is t = 10.
    assert_eq!(log.try_acquire().unwrap_err().retry_after(), Some(secs(10)));
    // Unlike Gcra (burst then one per I), no window ever holds more than 3.
    clock.set(secs(70));
    log.try_acquire().unwrap();
    assert!(log.try_acquire().is_err());
}

#[test]
fn a_burst_then_nothing_for_a_whole_period() {
    let (log, clock) = manual(Rate::per_second(100).unwrap());
    log.try_acquire_n(100).unwrap();
    for ms in [1, 500, 999] {
        clock.set(Duration::from_millis(ms));
        let d = log.try_acquire().unwrap_err();
        assert_eq!(d.retry_after(), Some(Duration::from_millis(1000 - ms)));
    }
    clock.set(secs(1));
    // All 100 left the window together.
    assert_eq!(log.try_acquire_n(100), Ok(()));
}

#[test]
fn weighted_retry_after_is_the_nth_oldest() {
    let (log, clock) = manual(Rate::new(4, secs(100)).unwrap());
    for t in [0, 10, 20, 30] {
        clock.set(secs(t));
        log.try_acquire().unwrap();
    }
    clock.set(secs(40));
    for (n, wait) in [(1, 60), (2, 70), (3, 80), (4, 90)] {
        assert_eq!(
            log.try_acquire_n(n).unwrap_err().retry_after(),
            Some(secs(wait)),
            "n={n}"
        );
    }
    clock.set(secs(110));
    assert_eq!(
        log.try_acquire_n(3),
        Err(hotlimit::Denied::new(Some(secs(10))))
    );
    assert_eq!(log.try_acquire_n(2), Ok(()));
    assert!(log.try_acquire().is_err(), "grants at 20, 30, 110, 110");
}

#[test]
fn waiting_exactly_retry_after_succeeds() {
    let (log, clock) = manual(Rate::new(5, Duration::from_millis(900)).unwrap());
    let mut t = 0;
    for n in [2, 1, 2] {
        clock.set(Duration::from_millis(t));
        log.try_acquire_n(n).unwrap();
        t += 100;
    }
    for n in [1, 3, 5, 2, 4, 1, 5] {
        // Take n at a time until denied, then wait exactly as told.
        while log.try_acquire_n(n).is_ok() {}
        let d = log.try_acquire_n(n).unwrap_err();
        let wait = d.retry_after().unwrap();
        assert!(wait > Duration::ZERO);
        clock.advance(wait - Duration::from_nanos(1));
        assert!(
            log.try_acquire_n(n).is_err(),
            "one ns early must still be denied (n={n})"
        );
        clock.advance(Duration::from_nanos(1));
        assert_eq!(
            log.try_acquire_n(n),
            Ok(()),
            "exactly retry_after later (n={n})"
        );
    }
}

#[test]
fn more_than_limit_is_never_and_zero_is_free() {
    let (log, _clock) = manual(Rate::per_second(4).unwrap());
    let d = log.try_acquire_n(5).unwrap_err();
    assert_eq!(d.retry_after(), None);
    assert!(d.is_never());
    assert_eq!(log.try_acquire_n(u32::MAX).unwrap_err().retry_after(), None);
    assert_eq!(log.try_acquire_n(0), Ok(()));
    assert_eq!(log.try_acquire_n(4), Ok(()), "neither call took anything");
    assert_eq!(log.try_acquire_n(0), Ok(()));
    assert!(log.try_acquire().is_err());
}

#[test]
fn never_used_slots_are_free_before_one_period_has_passed() {
    // now < period: nothing may underflow, and unused slots count as free.
    let (log, clock) = manual(Rate::new(3, Duration::from_nanos(u64::MAX)).unwrap());
    log.try_acquire_at(0).unwrap();
    clock.set(Duration::from_nanos(7));
    log.try_acquire_n(2).unwrap();
    // The grant at 0 frees at u64::MAX, where nothing can be granted: never.
    assert_eq!(log.try_acquire().unwrap_err().retry_after(), None);
}

#[test]
fn clock_set_back_never_frees_permits() {
    let (log, clock) = manual(Rate::per_second(2).unwrap());
    clock.set(secs(100));
    log.try_acquire_n(2).unwrap();
    assert!(log.try_acquire().is_err());
    clock.set(secs(3));
    let d = log.try_acquire().unwrap_err();
    assert_eq!(
        d.retry_after(),
        Some(secs(98)),
        "the grants at 100 s still count"
    );
    clock.set(secs(100));
    assert!(log.try_acquire().is_err());
    clock.set(secs(101));
    assert_eq!(log.try_acquire(), Ok(()));
}

#[test]
fn a_grant_at_a_clock_set_back_is_recorded_at_the_newest_time() {
    let (log, clock) = manual(Rate::new(2, secs(10)).unwrap());
    clock.set(secs(100));
    log.try_acquire().unwrap();
    // Back to 50 s: one slot is still free, but "no time has passed" since 100 s.
    clock.set(secs(50));
    log.try_acquire().unwrap();
    clock.set(secs(105));
    assert!(log.try_acquire().is_err());
    clock.set(secs(110));
    // Both grants count as made at 100 s, so both leave at 110 s.
    assert_eq!(log.try_acquire_n(2), Ok(()));
}

#[test]
fn extreme_times_never_panic_or_overflow() {
    let (log, clock) = manual(Rate::per_second(1000).unwrap());
    clock.set(Duration::from_nanos(u64::MAX));
    assert_eq!(log.try_acquire().unwrap_err().retry_after(), None);
    clock.set(Duration::from_nanos(u64::MAX - 10 * S));
    assert!(log.try_acquire_n(1000).is_ok());
    let d = log.try_acquire().unwrap_err();
    assert_eq!(d.retry_after(), Some(secs(1)));
    clock.set(Duration::from_nanos(u64::MAX - 1));
    assert!(
        log.try_acquire_n(1000).is_ok(),
        "the last representable instant"
    );
    assert_eq!(log.try_acquire().unwrap_err().retry_after(), None);
    // Back to 0 from the end of time: the grants at u64::MAX − 1 leave the window only past
    // the end of the clock's range, so this is locked for good, never over-admitting.
    clock.set(Duration::ZERO);
    assert_eq!(log.try_acquire().unwrap_err().retry_after(), None);
    clock.advance(Duration::MAX);
    assert_eq!(clock.now(), u64::MAX);
    assert!(log.try_acquire().is_err());
}

#[test]
fn one_slot_and_one_nanosecond() {
    let log = SlidingLog::builder(Rate::new(1, Duration::from_nanos(1)).unwrap())
        .clock(ManualClock::new())
        .build()
        .unwrap();
    for t in 0..100 {
        assert!(log.try_acquire_at(t).is_ok(), "t={t}");
        assert_eq!(
            log.try_acquire_at(t).unwrap_err().retry_after_nanos(),
            Some(1)
        );
    }
}

#[test]
fn debug_and_accessors() {
    let (log, _) = manual(Rate::per_minute(3).unwrap());
    assert_eq!(log.limit(), 3);
    assert_eq!(log.rate(), Rate::per_minute(3).unwrap());
    assert_eq!(log.clock().now(), 0);
    log.try_acquire_n(2).unwrap();
    let s = format!("{log:?}");
    assert!(s.contains("SlidingLog") && s.contains("reserved: 2"), "{s}");
}

#[test]
fn default_clock_limiter_works() {
    let log = SlidingLog::new(Rate::per_hour(5).unwrap()).unwrap();
    for _ in 0..5 {
        log.try_acquire().unwrap();
    }
    let wait = log.try_acquire().unwrap_err().retry_after().unwrap();
    assert!(
        wait > Duration::from_secs(3590) && wait <= Duration::from_secs(3600),
        "{wait:?}"
    );
}

#[test]
fn model_agrees_on_a_hand_written_trace() {
    // The reference model itself, checked against a trace worked out by hand.
    let mut m = LogModel::new(2, 10);
    assert_eq!(m.acquire(1, 0), Ok(()));
    assert_eq!(m.acquire(1, 3), Ok(()));
    assert_eq!(m.acquire(1, 5), Err(Some(5)));
    assert_eq!(m.acquire(2, 5), Err(Some(8)));
    assert_eq!(m.acquire(3, 5), Err(None));
    assert_eq!(m.used(9), 2);
    assert_eq!(m.acquire(1, 10), Ok(()));
    assert_eq!(
        m.acquire(1, 1),
        Err(Some(12)),
        "set back: grants at 3 and 10 count"
    );
}

/// One step of a random trace.
#[derive(Debug, Clone)]
enum Step {
    /// Advance the clock, then ask for n permits.
    Forward { gap: u64, n: u32 },
    /// Set the clock back by `back` (saturating at 0), then ask.
    Back { back: u64, n: u32 },
    /// Jump near the end of the clock's range, then ask.
    NearEnd { below_max: u64, n: u32 },
    /// Ask again at the wait the last denial gave (if any), which must then succeed.
    Retry,
}

fn trace(limit: u64, period: u64) -> impl Strategy<Value = Vec<Step>> {
    let n_max = (limit + 2) as u32;
    let n = prop_oneof![6 => 1..=2u32, 6 => 0..=n_max, 1 => Just(u32::MAX)];
    let step = prop_oneof![
        14 => (0..=period / 3 + 1, n.clone()).prop_map(|(gap, n)| Step::Forward { gap, n }),
        3 => (0..=period.saturating_mul(2), n.clone()).prop_map(|(gap, n)| Step::Forward { gap, n }),
        3 => (0..=period, n.clone()).prop_map(|(back, n)| Step::Back { back, n }),
        1 => (0..=period.saturating_mul(3), n).prop_map(|(below_max, n)| Step::NearEnd { below_max, n }),
        3 => Just(Step::Retry),
    ];
    prop::collection::vec(step, 1..100)
}

fn config() -> impl Strategy<Value = (u64, u64)> {
    // (limit, period_ns): small limits so windows fill up; periods from 1 ns to ~3 hours,
    // and some near the end of u64.
    (
        prop_oneof![4 => 1u64..=6, 2 => 1u64..=40],
        prop_oneof![
            4 => 1u64..=10_000_000_000_000,
            1 => 1u64..=20,
            1 => u64::MAX - 1_000..=u64::MAX
        ],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5_000))]

    /// A sequential caller gets the exact log's decision and retry_after on every request,
    /// including weighted requests, clocks set back and times at the end of the range.
    #[test]
    fn matches_the_exact_log(
        (limit, period, steps) in config().prop_flat_map(|(l, p)| (Just(l), Just(p), trace(l, p)))
    ) {
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let log = SlidingLog::builder(rate).clock(ManualClock::new()).build().unwrap();
        let mut model = LogModel::new(limit, period);
        let mut now: u64 = 0;
        let mut last: Option<(u32, u64)> = None; // (n, wait) of the last denial
        for (i, step) in steps.iter().enumerate() {
            let n = match *step {
                Step::Forward { gap, n } => { now = now.saturating_add(gap); n }
                Step::Back { back, n } => { now = now.saturating_sub(back); n }
                Step::NearEnd { below_max, n } => { now = u64::MAX - below_max; n }
                Step::Retry => match last {
                    Some((n, wait)) => { now += wait; n }
                    None => continue,
                },
            };
            let real = log.try_acquire_n_at(n, now).map_err(|d| d.retry_after_nanos());
            let want = model.acquire(n, now);
            prop_assert_eq!(real, want, "step {} ({:?}) at now={}", i, step, now);
            if matches!(step, Step::Retry) {
                prop_assert_eq!(real, Ok(()), "waiting retry_after must succeed");
            }
            last = match real {
                Err(Some(wait)) => Some((n, wait)),
                _ => None,
            };
        }
    }
}
