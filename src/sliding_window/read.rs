//! Read-back of [`SlidingWindow`] with the clock read, and its
//! [`Decide`](crate::decide::Decide).

use super::*;

impl<C: Clock> SlidingWindow<C> {
    /// How many permits a request could take now:
    /// [`remaining_at`](SlidingWindow::remaining_at) with the clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Limiter, ManualClock, Rate, SlidingWindow};
    /// let limiter = SlidingWindow::builder(Rate::per_minute(3)?).clock(ManualClock::new()).build()?;
    /// limiter.try_acquire()?;
    /// assert_eq!(limiter.remaining(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remaining(&self) -> u64 {
        self.remaining_at(self.clock.now())
    }

    /// How long until the window counts no permit:
    /// [`reset_at`](SlidingWindow::reset_at) with the clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Limiter, ManualClock, Rate, SlidingWindow};
    /// use std::time::Duration;
    /// let limiter = SlidingWindow::builder(Rate::per_second(3)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.reset(), Duration::ZERO);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset(&self) -> Duration {
        self.reset_at(self.clock.now())
    }
}

crate::decide::decide_at_once! {
    /// A decision with what HTTP headers need: the quota is `limit` per `period` plus one
    /// bucket width (a grant counts until its bucket leaves the window, so that is how long
    /// the limiter takes to be full again), `remaining` and `reset` are read right after it
    /// (`next` is bounded by `reset`).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Decide, ManualClock, Rate, SlidingWindow};
    /// use std::future::Future;
    /// use std::task::{Context, Poll, Waker};
    ///
    /// let limiter = SlidingWindow::builder(Rate::per_second(3)?).clock(ManualClock::new()).build()?;
    /// let mut fut = std::pin::pin!(limiter.decide(&(), 2));
    /// let Poll::Ready(Ok(d)) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
    ///     unreachable!()
    /// };
    /// assert_eq!((d.is_allowed(), d.remaining()), (true, 1));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    SlidingWindow, |this, permits, now| {
        acquire: this.try_acquire_n_at(permits, now),
        read: {
            let (remaining, reset) = this.read_at(now);
            (remaining, Duration::from_nanos(reset), Duration::from_nanos(reset))
        },
        quota: {
            let rate = this.rate();
            crate::decide::Quota::new(rate.limit(), rate.period() + this.bucket_width())
        },
    }
}
