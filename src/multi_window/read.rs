//! Read-back of [`MultiWindow`] with the clock read, and its [`Decide`].

use core::time::Duration;

use super::MultiWindow;
use crate::clock::Clock;
use crate::decide::{Decide, Decision, Quota, Ready};

impl<C: Clock> MultiWindow<C> {
    /// How many permits a request could take now:
    /// [`remaining_at`](MultiWindow::remaining_at) with the clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Limiter, ManualClock, MultiWindow, Rate};
    ///
    /// let limiter = MultiWindow::builder()
    ///     .window(Rate::per_second(3)?)
    ///     .exact(Rate::per_minute(10)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// limiter.try_acquire()?;
    /// assert_eq!(limiter.remaining(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remaining(&self) -> u64 {
        self.remaining_at(self.clock.now())
    }

    /// How long until no window counts a permit: [`reset_at`](MultiWindow::reset_at) with the
    /// clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, MultiWindow, Rate};
    /// use std::time::Duration;
    ///
    /// let limiter = MultiWindow::builder()
    ///     .exact(Rate::per_second(3)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.reset(), Duration::ZERO);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn reset(&self) -> Duration {
        self.reset_at(self.clock.now())
    }

    /// `(quota, remaining, reset, next)` at `now`, from the binding window (the fewest
    /// permits left): its quota, its remaining, the latest reset of all windows, and the time
    /// until a permit is free in every window (`next`; the binding window's reset while it
    /// has room).
    fn report_at(&self, now: u64) -> (Quota, u64, Duration, Duration) {
        let (i, remaining, _) = self.windows.binding_at(now);
        let (_, reset) = self.windows.read_at(now);
        let next = if remaining == 0 {
            self.windows
                .wait_for(1, now)
                .and_then(|d| d.retry_after_nanos())
                .unwrap_or(reset)
        } else {
            reset
        };
        (
            self.windows.as_slice()[i].quota(),
            remaining,
            Duration::from_nanos(reset),
            Duration::from_nanos(next.min(reset)),
        )
    }
}

/// A decision with what HTTP headers need, from the **binding window** (the one with the fewest
/// permits left after the decision): its quota (a ring's `limit` per `period` plus one bucket
/// width, a log's `limit` per `period`) and its `remaining`; `reset` is when every window is
/// full again. [`quota`](Decide::quota) without a decision is the first window's.
///
/// # Examples
///
/// ```
/// use hotlimit::{Decide, ManualClock, MultiWindow, Quota, Rate};
/// use std::future::Future;
/// use std::task::{Context, Poll, Waker};
/// use std::time::Duration;
///
/// let limiter = MultiWindow::builder()
///     .exact(Rate::per_second(5)?)
///     .exact(Rate::per_minute(7)?)
///     .clock(ManualClock::new())
///     .build()?;
/// let mut fut = std::pin::pin!(limiter.decide(&(), 4));
/// let Poll::Ready(Ok(d)) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
///     unreachable!()
/// };
/// // 1 left of 5 per second binds, not 3 of 7 per minute.
/// assert_eq!((d.is_allowed(), d.remaining()), (true, 1));
/// assert_eq!(d.quota(), Quota::new(5, Duration::from_secs(1)));
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
impl<C: Clock> Decide for MultiWindow<C> {
    type Key = ();
    type Error = core::convert::Infallible;
    type Future = Ready;

    fn decide(&self, _key: &(), permits: u32) -> Ready {
        let now = self.clock.now();
        let outcome = self.try_acquire_n_at(permits, now);
        let (quota, remaining, reset, next) = self.report_at(now);
        crate::decide::ready(quota, outcome, remaining, reset, next)
    }

    fn quota(&self) -> Quota {
        self.windows.as_slice()[0].quota()
    }

    fn peek(&self, _key: &()) -> Option<Decision> {
        let (quota, remaining, reset, next) = self.report_at(self.clock.now());
        Some(crate::decide::state(quota, remaining, reset, next))
    }
}
