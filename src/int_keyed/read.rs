//! Read-back of [`IntKeyed`] (what headers and dashboards need) and its
//! [`Decide`](crate::Decide).

use super::*;

// Read-back for headers and dashboards (`reset`) and the `Decide` seam.
impl<K: IntKey, C> IntKeyed<K, C> {
    /// How long until `key` is full again (its whole burst available) if nothing more is
    /// granted to it: its TAT minus `now`, zero for an absent or rested key. Reads only.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let limiter: IntKeyed<u64, _> =
    ///     IntKeyed::builder(Rate::per_second(10)?).clock(ManualClock::new()).build()?;
    /// limiter.try_acquire_n_at(1, 4, 0).unwrap();
    /// assert_eq!(limiter.reset_at(1, 0), Duration::from_millis(400));
    /// assert_eq!(limiter.reset_at(2, 0), Duration::ZERO);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn reset_at(&self, key: K, now: u64) -> Duration {
        let key = self.key_bits(key);
        let (b1, b2, _) = self.buckets_of(key);
        let c = self.candidates(b1, b2);
        let snap = self.scan(&c);
        let tat = (0..c.n)
            .find(|&k| holds(snap[k], key))
            .map_or(0, |k| meta_of(snap[k]) & VALUE);
        // Slot times are relative to the base; a `now` before it waits the difference too.
        let behind = self.base.saturating_sub(now);
        let ahead = tat.saturating_sub(self.relative(now));
        Duration::from_nanos(if ahead == 0 {
            0
        } else {
            ahead.saturating_add(behind)
        })
    }
}

impl<K: IntKey, C: Clock> IntKeyed<K, C> {
    /// How long until `key` is full again: [`reset_at`](IntKeyed::reset_at) with the clock
    /// read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    /// use std::time::Duration;
    /// let per_user: IntKeyed<u64, _> =
    ///     IntKeyed::builder(Rate::per_second(2)?).clock(ManualClock::new()).build()?;
    /// per_user.try_acquire(8)?;
    /// assert_eq!(per_user.reset(8), Duration::from_millis(500));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset(&self, key: K) -> Duration {
        self.reset_at(key, self.clock.now())
    }
}

/// A per-key decision with what HTTP headers need: the quota is the rate's `limit` per
/// `period` (one rate for every key); `remaining` and `reset` are the key's, read right after.
/// A new key refused for want of room is denied with [`DenialReason::TableFull`](crate::DenialReason::TableFull).
///
/// # Examples
///
/// ```
/// use hotlimit::{Decide, IntKeyed, ManualClock, Rate};
/// use std::future::Future;
/// use std::task::{Context, Poll, Waker};
///
/// let limiter: IntKeyed<u32, _> =
///     IntKeyed::builder(Rate::per_second(5)?).clock(ManualClock::new()).build()?;
/// let mut fut = std::pin::pin!(limiter.decide(&7, 2));
/// let Poll::Ready(Ok(d)) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
///     unreachable!()
/// };
/// assert_eq!((d.is_allowed(), d.remaining()), (true, 3));
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
impl<K: IntKey, C: Clock> crate::decide::Decide for IntKeyed<K, C> {
    type Key = K;
    type Error = core::convert::Infallible;
    type Future = crate::decide::Ready;

    fn decide(&self, key: &K, permits: u32) -> Self::Future {
        let now = self.clock.now();
        let outcome = self.try_acquire_n_at(*key, permits, now);
        crate::decide::ready(
            self.rate_quota(),
            outcome,
            self.remaining_at(*key, now),
            self.reset_at(*key, now),
        )
    }

    fn quota(&self) -> crate::decide::Quota {
        self.rate_quota()
    }
}

impl<K, C> IntKeyed<K, C> {
    /// The quota every key shares: the rate's `limit` per `period`.
    fn rate_quota(&self) -> crate::decide::Quota {
        crate::decide::quota_of(self.rate)
    }
}
