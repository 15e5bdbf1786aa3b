//! [`IntKeyed`] with the clock read, its read-back (what headers and dashboards need), its
//! [`Decide`](crate::Decide) and `Debug`.

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
        let c = self.candidates(&self.place(self.hash(key)));
        let snap = self.scan(&c);
        let tat = (0..c.n)
            .find(|&k| holds(snap[k], key))
            .map_or(0, |k| meta_of(snap[k]) & TAT);
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

/// A per-key decision with what HTTP headers need: the quota is the burst per the time it
/// takes to refill (one rate for every key; see [`Quota`](crate::Quota)); `remaining`, `reset`
/// and `next` (exact) are the key's, read right after, from one scan.
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

    #[inline]
    fn decide(&self, key: &K, permits: u32) -> Self::Future {
        let now = self.clock.now();
        let outcome = self.try_acquire_n_at(*key, permits, now);
        let (remaining, reset, next) = self.read_key(*key, now);
        crate::decide::ready(self.rate_quota(), outcome, remaining, reset, next)
    }

    fn quota(&self) -> crate::decide::Quota {
        self.rate_quota()
    }

    /// A key that holds no slot while a new key would be refused for want of room reports
    /// nothing remaining until then, as the refusal would: a caller deciding several policies
    /// then sees the refusal before it charges any.
    fn peek(&self, key: &K) -> Option<crate::decide::Decision> {
        let now = self.clock.now();
        let bits = self.key_bits(*key);
        let meta = self.meta_of_key(bits);
        if meta.is_none() {
            let behind = self.base.saturating_sub(now);
            if let Some(wait) = self.no_room_for(bits, self.relative(now)) {
                let wait = Duration::from_nanos(wait.saturating_add(behind));
                return Some(crate::decide::state(self.rate_quota(), 0, wait, wait));
            }
        }
        let (remaining, reset, next) = self.read_meta(meta, now);
        Some(crate::decide::state(
            self.rate_quota(),
            remaining,
            reset,
            next,
        ))
    }
}

impl<K: IntKey, C> IntKeyed<K, C> {
    /// The quota every key shares: the burst per the time it takes to refill, under the
    /// parameter set new states commit on.
    fn rate_quota(&self) -> crate::decide::Quota {
        let params = self.current_params();
        crate::decide::gcra_quota(params.rate(), params.numbers().3)
    }

    /// The meta word of `key`'s committed slot, `None` when it has none: its candidates in the
    /// hit path's order (b1, b2, then the secondary buckets, each from the home way), stopping
    /// at the first that holds it. A key has at most one committed slot, so the order does not
    /// change the answer; it makes most read-backs one load where a scan of all eight
    /// candidates (two buckets) took 342
    /// instructions per decision in the HTTP layer's per-IP row (132 this way).
    #[inline]
    fn meta_of_key(&self, key: u64) -> Option<u64> {
        let h = self.hash(key);
        let home = Self::home(h);
        self.probe(self.b1(h), home, key)
            .or_else(|| self.probe(self.b2(h), home, key))
            .or_else(|| self.probe_secondary(h, key))
            .map(|(_, v)| meta_of(v))
    }

    /// `(remaining, reset, next)` of `key` at `now`, from one look at its slot: what
    /// [`remaining_at`](IntKeyed::remaining_at) and [`reset_at`](IntKeyed::reset_at) report,
    /// and the time until it holds one more permit.
    #[inline]
    fn read_key(&self, key: K, now: u64) -> (u64, Duration, Duration) {
        self.read_meta(self.meta_of_key(self.key_bits(key)), now)
    }

    /// [`read_key`](Self::read_key) of a key whose committed slot's meta word is `meta`.
    #[inline]
    fn read_meta(&self, meta: Option<u64>, now: u64) -> (u64, Duration, Duration) {
        // A committed key on its slot's parameter set; an absent one as a fresh state on the
        // current set.
        let (tat, (interval, tolerance, _, burst)) = match meta {
            Some(meta) => (meta & TAT, self.numbers_of(meta)),
            None => (0, self.current_params().numbers()),
        };
        let ahead = tat.saturating_sub(self.relative(now));
        let remaining = tolerance.saturating_sub(ahead) / interval;
        // Slot times are relative to the base; a `now` before it waits the difference too.
        let behind = self.base.saturating_sub(now);
        let wait = |d: u64| Duration::from_nanos(if d == 0 { 0 } else { d.saturating_add(behind) });
        let next = crate::decide::gcra_next_nanos(remaining, burst, ahead, interval);
        (remaining, wait(ahead), wait(next))
    }
}

impl<K, C> IntKeyed<K, C> {
    /// How many permits `key` could take at `now` (a snapshot; an absent key has the burst).
    /// Reads only.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    ///
    /// let limiter: IntKeyed<u64, _> =
    ///     IntKeyed::builder(Rate::per_second(10)?).clock(ManualClock::new()).build()?;
    /// limiter.try_acquire_n_at(1, 4, 0).unwrap();
    /// assert_eq!(limiter.remaining_at(1, 0), 6);
    /// assert_eq!(limiter.remaining_at(2, 0), 10);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn remaining_at(&self, key: K, now: u64) -> u64
    where
        K: IntKey,
    {
        let key = self.key_bits(key);
        let now = self.relative(now);
        let c = self.candidates(&self.place(self.hash(key)));
        let snap = self.scan(&c);
        // A committed key on its slot's parameter set; an absent one as a fresh state on the
        // current set.
        let (tat, (interval, tolerance, _, _)) = match (0..c.n).find(|&k| holds(snap[k], key)) {
            Some(k) => (meta_of(snap[k]) & TAT, self.numbers_of(meta_of(snap[k]))),
            None => (0, self.current_params().numbers()),
        };
        tolerance.saturating_sub(tat.saturating_sub(now)) / interval
    }

    /// The number of keys held (and inserts in progress): at most
    /// [`capacity`](IntKeyed::capacity). Idle keys count until something evicts them.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    ///
    /// let limiter: IntKeyed<u16, _> =
    ///     IntKeyed::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// limiter.try_acquire_at(1, 0).unwrap();
    /// limiter.try_acquire_at(2, 0).unwrap();
    /// assert_eq!(limiter.len(), 2);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn len(&self) -> usize {
        // Relaxed: a snapshot.
        self.len.load(Ordering::Relaxed) as usize
    }

    /// True when no key is held.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    /// let limiter: IntKeyed<u64, _> =
    ///     IntKeyed::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert!(limiter.is_empty());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most keys held at once.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    /// let limiter: IntKeyed<u64, _> = IntKeyed::builder(Rate::per_second(1)?)
    ///     .capacity(50)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.capacity(), 50);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }

    /// The burst b: the most permits a key can take at once.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    /// let limiter: IntKeyed<u64, _> =
    ///     IntKeyed::builder(Rate::per_second(5)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.burst(), 5);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn burst(&self) -> u64 {
        self.current_params().numbers().3
    }

    /// The emission interval I: one permit per key drains every I.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    /// use std::time::Duration;
    /// let limiter: IntKeyed<u64, _> =
    ///     IntKeyed::builder(Rate::per_second(4)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.interval(), Duration::from_millis(250));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn interval(&self) -> Duration {
        Duration::from_nanos(self.current_params().numbers().0)
    }

    /// The rate every key gets.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    /// let rate = Rate::per_second(4)?;
    /// let limiter: IntKeyed<u64, _> = IntKeyed::builder(rate).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.rate(), rate);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn rate(&self) -> Rate {
        self.current_params().rate()
    }

    /// The limiter's clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, IntKeyed, ManualClock, Rate};
    /// let limiter: IntKeyed<u64, _> =
    ///     IntKeyed::builder(Rate::per_second(4)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.clock().now(), 0);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.clock
    }
}

impl<K: IntKey, C: Clock> IntKeyed<K, C> {
    /// Take one permit for `key` now.
    ///
    /// # Errors
    ///
    /// As [`try_acquire_n_at`](IntKeyed::try_acquire_n_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, Rate};
    ///
    /// let per_user: IntKeyed<u64> = IntKeyed::new(Rate::per_second(1)?)?;
    /// assert!(per_user.try_acquire(1).is_ok());
    /// assert!(per_user.try_acquire(1).is_err());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire(&self, key: K) -> Result<(), Denied> {
        self.acquire_now(self.key_bits(key), 1)
    }

    /// Take `permits` permits for `key` now, all or nothing.
    ///
    /// # Errors
    ///
    /// As [`try_acquire_n_at`](IntKeyed::try_acquire_n_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, Rate};
    ///
    /// let per_user: IntKeyed<u64> = IntKeyed::new(Rate::per_second(5)?)?;
    /// assert!(per_user.try_acquire_n(1, 5).is_ok());
    /// assert!(per_user.try_acquire_n(1, 6).unwrap_err().is_never());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire_n(&self, key: K, permits: u32) -> Result<(), Denied> {
        if permits == 0 {
            return Ok(());
        }
        self.acquire_now(self.key_bits(key), permits)
    }

    /// How many permits `key` could take now: [`remaining_at`](IntKeyed::remaining_at) with
    /// the clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, Rate};
    /// let per_user: IntKeyed<u64> = IntKeyed::new(Rate::per_minute(3)?)?;
    /// per_user.try_acquire(8)?;
    /// assert_eq!(per_user.remaining(8), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remaining(&self, key: K) -> u64 {
        self.remaining_at(key, self.clock.now())
    }
}

impl<K, C> fmt::Debug for IntKeyed<K, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntKeyed")
            .field("rate", &self.rate())
            .field("burst", &self.burst())
            .field("capacity", &self.capacity)
            .field("slots", &(self.table.len() * WAYS))
            // Relaxed: a snapshot for display.
            .field("len", &self.len.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}
