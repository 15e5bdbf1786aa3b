//! One meaning for a timed wait's refusal (issue 43): on every limiter behind `LimiterExt`,
//! held as `Box<dyn Limiter>`, `acquire_blocking_timeout_with(2, w − 1 ns)` refuses at once
//! with `retry_after == w`, when the two permits come free counted from the call (what a
//! `Retry-After` built from it must say), the same figure a plain `try_acquire_n(2)` gives;
//! `retry_after_within(timeout)` is the 1 ns the call lacked. A client that waits exactly
//! `retry_after` then gets its permits. Driven by a `ManualClock`: the clock must not move.

use std::time::Duration;

use hotlimit::{
    Clock, Gcra, GcraMulti, GcraPair, Limiter, LimiterExt, ManualClock, Rate, ShardedGcra,
    SlidingLog, SlidingWindow,
};

/// 2 per second: two permits taken at 0 come free again some time after.
fn rate() -> Rate {
    Rate::per_second(2).unwrap()
}

/// Every limiter behind `LimiterExt`, as a `dyn Limiter`, on `clock`, with room for 2.
fn limiters(clock: &ManualClock) -> Vec<(&'static str, Box<dyn Limiter>)> {
    let c = || clock.clone();
    vec![
        (
            "Gcra",
            Box::new(Gcra::builder(rate()).burst(2).clock(c()).build().unwrap()),
        ),
        (
            "GcraPair",
            Box::new(
                GcraPair::builder(rate(), Rate::per_minute(60).unwrap())
                    .first_burst(2)
                    .second_burst(60)
                    .clock(c())
                    .build()
                    .unwrap(),
            ),
        ),
        (
            "GcraMulti",
            Box::new(
                GcraMulti::builder()
                    .rate_with_burst(rate(), 2)
                    .rate_with_burst(Rate::per_minute(60).unwrap(), 60)
                    .clock(c())
                    .build()
                    .unwrap(),
            ),
        ),
        (
            "ShardedGcra",
            Box::new(
                ShardedGcra::builder(rate())
                    .shards(1)
                    .burst(2)
                    .clock(c())
                    .build()
                    .unwrap(),
            ),
        ),
        (
            "SlidingLog",
            Box::new(SlidingLog::builder(rate()).clock(c()).build().unwrap()),
        ),
        (
            "SlidingWindow",
            Box::new(SlidingWindow::builder(rate()).clock(c()).build().unwrap()),
        ),
    ]
}

/// `w`: when 2 permits come free on `limiter` at the clock's time, from its own plain try.
fn when_free(limiter: &dyn Limiter) -> Duration {
    let denied = limiter.try_acquire_n(2).unwrap_err();
    denied.retry_after().expect("2 permits fit the limit")
}

#[test]
fn a_timed_wait_refused_says_when_the_permits_come_free_on_every_limiter() {
    for (name, _) in limiters(&ManualClock::new()) {
        let clock = ManualClock::new();
        clock.advance(Duration::from_secs(5));
        let limiter = limiters(&clock)
            .into_iter()
            .find(|(n, _)| *n == name)
            .unwrap()
            .1;
        limiter.try_acquire_n(2).unwrap();
        let w = when_free(&*limiter);
        assert!(w > Duration::ZERO, "{name}");
        let start = clock.now();
        let timeout = w - Duration::from_nanos(1);
        let denied = limiter
            .acquire_blocking_timeout_with(2, timeout, &clock)
            .unwrap_err();
        assert_eq!(clock.now(), start, "{name}: refused without waiting");
        assert_eq!(denied.retry_after(), Some(w), "{name}: retry_after is w");
        assert_eq!(
            denied.retry_after_within(timeout),
            Some(Duration::from_nanos(1)),
            "{name}: what the call lacked"
        );
        assert_eq!(
            denied.retry_after_secs_ceil(),
            Some(w.as_secs_f64().ceil() as u64)
        );
        // A client that obeys retry_after gets its permits then, not before.
        clock.advance(w - Duration::from_nanos(1));
        assert!(limiter.try_acquire_n(2).is_err(), "{name}: not before w");
        clock.advance(Duration::from_nanos(1));
        assert!(limiter.try_acquire_n(2).is_ok(), "{name}: at w");
    }
}

#[test]
fn a_timed_wait_that_reaches_w_is_granted_at_w_on_every_limiter() {
    for (name, _) in limiters(&ManualClock::new()) {
        let clock = ManualClock::new();
        let limiter = limiters(&clock)
            .into_iter()
            .find(|(n, _)| *n == name)
            .unwrap()
            .1;
        limiter.try_acquire_n(2).unwrap();
        let w = when_free(&*limiter);
        let start = clock.now();
        limiter
            .acquire_blocking_timeout_with(2, w, &clock)
            .unwrap_or_else(|d| panic!("{name}: {d:?}"));
        assert_eq!(
            Duration::from_nanos(clock.now() - start),
            w,
            "{name}: granted when the permits came free"
        );
    }
}

/// The `Gcra`'s own timed waits (inherent, async, reservation) give the same figure as its
/// `dyn Limiter` path: the refusal's meaning does not depend on the path.
#[test]
fn every_timed_path_of_a_gcra_says_the_same() {
    use std::future::{pending, Future};
    use std::task::{Context, Poll, Waker};

    let clock = ManualClock::new();
    let gcra = Gcra::builder(rate())
        .burst(2)
        .clock(clock.clone())
        .build()
        .unwrap();
    gcra.try_acquire_n(2).unwrap();
    let w = Duration::from_secs(1); // 2 permits at 2/s
    let timeout = w - Duration::from_nanos(1);
    let inherent = gcra
        .acquire_blocking_timeout_with(2, timeout, &clock)
        .unwrap_err();
    let reserved = gcra.reserve_n(2, timeout).map(|r| r.keep()).unwrap_err();
    let mut fut = std::pin::pin!(gcra.acquire_async_timeout(2, timeout, |_| pending::<()>()));
    let Poll::Ready(Err(in_async)) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()))
    else {
        panic!("the async timed wait must refuse at once");
    };
    let through_dyn = (&gcra as &dyn Limiter)
        .acquire_blocking_timeout_with(2, timeout, &clock)
        .unwrap_err();
    for d in [inherent, reserved, in_async, through_dyn] {
        assert_eq!(d.retry_after(), Some(w));
        assert_eq!(d.retry_after_within(timeout), Some(Duration::from_nanos(1)));
    }
    assert_eq!(clock.now(), 0);
}
