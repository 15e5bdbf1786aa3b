//! Read-back of [`Gcra`] with the clock read, and its [`Decide`](crate::decide::Decide).

use super::*;

impl<C: Clock> Gcra<C> {
    /// How many permits could be taken now: [`remaining_at`](Gcra::remaining_at) with the
    /// clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Limiter, ManualClock, Rate};
    /// let limiter = Gcra::builder(Rate::per_second(3)?).clock(ManualClock::new()).build()?;
    /// limiter.try_acquire()?;
    /// assert_eq!(limiter.remaining(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remaining(&self) -> u64 {
        self.remaining_at(self.clock.now())
    }

    /// How long until the limiter is full again: [`reset_at`](Gcra::reset_at) with the clock
    /// read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Limiter, ManualClock, Rate};
    /// use std::time::Duration;
    /// let limiter = Gcra::builder(Rate::per_second(4)?).clock(ManualClock::new()).build()?;
    /// limiter.try_acquire()?;
    /// assert_eq!(limiter.reset(), Duration::from_millis(250));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset(&self) -> Duration {
        self.reset_at(self.clock.now())
    }
}

crate::decide::decide_at_once! {
    /// A decision with what HTTP headers need: the quota is the burst per the time it takes to
    /// refill (`RateLimit-Policy: q=burst;w=burst×period/limit`; with the default burst,
    /// `limit` per `period`), `remaining`, `reset` and `next` (exact) are read right after it.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Decide, Gcra, ManualClock, Rate};
    /// use std::future::Future;
    /// use std::task::{Context, Poll, Waker};
    /// use std::time::Duration;
    ///
    /// let limiter = Gcra::builder(Rate::per_second(5)?).clock(ManualClock::new()).build()?;
    /// let mut fut = std::pin::pin!(limiter.decide(&(), 1));
    /// let Poll::Ready(Ok(d)) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
    ///     unreachable!("in-process decisions are ready at once")
    /// };
    /// assert!(d.is_allowed());
    /// assert_eq!((d.remaining(), d.reset()), (4, Duration::from_millis(200)));
    /// assert_eq!(d.next(), Duration::from_millis(200)); // one more permit in 200 ms
    /// assert_eq!((d.quota().limit(), d.quota().window()), (5, Duration::from_secs(1)));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    Gcra, |this, permits, now| {
        acquire: this.try_acquire_n_at(permits, now),
        read: {
            let (remaining, reset) = (this.remaining_at(now), this.reset_at(now));
            let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            let next = crate::decide::gcra_next(
                remaining,
                this.burst(),
                nanos(reset),
                nanos(this.emission_interval()),
            );
            (remaining, reset, next)
        },
        quota: crate::decide::gcra_quota(this.rate(), this.burst()),
    }
}
