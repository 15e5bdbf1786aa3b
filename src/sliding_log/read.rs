//! Read-back of [`SlidingLog`]: the free run, the reset time and the settings, the same with
//! the clock read, and its [`Decide`](crate::decide::Decide).

use super::*;

/// Read-back.
impl<C, W: Deref<Target = Head>> SlidingLog<C, W> {
    /// How many permits a request at `now` could take: the run of free slots (grants that have
    /// left the window (now − period, now], or never used) from the oldest on, which is what
    /// a request for n permits needs. For a sequential caller this is exactly `limit` minus
    /// the grants in the window (the exact log's answer); under concurrency a snapshot. Reads
    /// only, O(log `limit`): the ring is in time order from its oldest slot (for a sequential
    /// caller always), so the run's end is found by bisection.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingLog};
    ///
    /// let log = SlidingLog::builder(Rate::per_second(3)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(log.remaining_at(0), 3);
    /// log.try_acquire_at(0).unwrap();
    /// log.try_acquire_at(400_000_000).unwrap();
    /// assert_eq!(log.remaining_at(500_000_000), 1);
    /// assert_eq!(log.remaining_at(1_000_000_000), 2); // the grant at 0 has left the window
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn remaining_at(&self, now: u64) -> u64 {
        if now == u64::MAX {
            return 0;
        }
        let bar = self.bar(now);
        // Relaxed: the cursor only says where the oldest grant is (a snapshot).
        let c = self.head.cursor.load(Ordering::Relaxed);
        // Acquire: as in `acquire_slots`.
        let free = |k: u64| self.slot(c.wrapping_add(k)).load(Ordering::Acquire) <= bar;
        // Invariant: the first `lo` slots are free; slot `hi` (if < len) is not.
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if free(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// How long until the log is empty again (every grant out of the window, the whole
    /// `limit` available) if nothing more is granted: when the newest grant leaves the
    /// window; zero when it already has. Reads only.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingLog};
    /// use std::time::Duration;
    ///
    /// let log = SlidingLog::builder(Rate::per_second(3)?).clock(ManualClock::new()).build()?;
    /// log.try_acquire_at(0).unwrap();
    /// log.try_acquire_at(400_000_000).unwrap();
    /// assert_eq!(log.reset_at(500_000_000), Duration::from_millis(900));
    /// assert_eq!(log.reset_at(1_400_000_000), Duration::ZERO);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn reset_at(&self, now: u64) -> core::time::Duration {
        // Relaxed: a snapshot, as in `remaining_at`.
        let c = self.head.cursor.load(Ordering::Relaxed);
        // Acquire: as in `acquire_slots`. Index c − 1 holds the newest reservation: for a
        // sequential caller the newest stamp (under concurrency, a snapshot).
        let newest = self.slot(c.wrapping_sub(1)).load(Ordering::Acquire);
        let end = if newest == 0 {
            0
        } else {
            (newest - 1).saturating_add(self.period)
        };
        core::time::Duration::from_nanos(end.saturating_sub(now))
    }

    /// The limit: the most permits in any window of `period`, and the number of slots.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingLog};
    /// let log = SlidingLog::builder(Rate::per_hour(50)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(log.limit(), 50);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn limit(&self) -> u64 {
        self.len
    }

    /// The configured rate.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingLog};
    /// let rate = Rate::per_minute(6)?;
    /// let log = SlidingLog::builder(rate).clock(ManualClock::new()).build()?;
    /// assert_eq!(log.rate(), rate);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// The limiter's clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, ManualClock, Rate, SlidingLog};
    /// let log = SlidingLog::builder(Rate::per_minute(6)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(log.clock().now(), 0);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.clock
    }
}

impl<C: Clock> SlidingLog<C> {
    /// How many permits a request could take now: [`remaining_at`](SlidingLog::remaining_at)
    /// with the clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Limiter, ManualClock, Rate, SlidingLog};
    /// let log = SlidingLog::builder(Rate::per_minute(3)?).clock(ManualClock::new()).build()?;
    /// log.try_acquire()?;
    /// assert_eq!(log.remaining(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remaining(&self) -> u64 {
        self.remaining_at(self.clock.now())
    }

    /// How long until the log is empty again: [`reset_at`](SlidingLog::reset_at) with the
    /// clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Limiter, ManualClock, Rate, SlidingLog};
    /// use std::time::Duration;
    /// let log = SlidingLog::builder(Rate::per_minute(3)?).clock(ManualClock::new()).build()?;
    /// log.try_acquire()?;
    /// assert_eq!(log.reset(), Duration::from_secs(60));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset(&self) -> core::time::Duration {
        self.reset_at(self.clock.now())
    }
}

crate::decide::decide_at_once! {
    /// A decision with what HTTP headers need: the quota is `limit` per `period` (the window),
    /// `remaining` and `reset` are read right after it (`next` is bounded by `reset`).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Decide, ManualClock, Rate, SlidingLog};
    /// use std::future::Future;
    /// use std::task::{Context, Poll, Waker};
    /// use std::time::Duration;
    ///
    /// let log = SlidingLog::builder(Rate::per_minute(2)?).clock(ManualClock::new()).build()?;
    /// let mut fut = std::pin::pin!(log.decide(&(), 1));
    /// let Poll::Ready(Ok(d)) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
    ///     unreachable!()
    /// };
    /// assert_eq!((d.remaining(), d.reset()), (1, Duration::from_secs(60)));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    SlidingLog, |this, permits, now| {
        acquire: this.try_acquire_n_at(permits, now),
        read: {
            let reset = this.reset_at(now);
            (this.remaining_at(now), reset, reset)
        },
        quota: crate::decide::quota_of(this.rate),
    }
}
