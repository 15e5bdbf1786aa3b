//! Read-back of [`ShardedGcra`]: at a given time and with the clock read; its
//! [`Decide`](crate::decide::Decide) and `Debug`.

use super::*;

impl<C> ShardedGcra<C> {
    /// How many permits a request at `now` could take, summed over the shards (a snapshot:
    /// other threads may take them first). Reads the state, never writes it.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    ///
    /// let limiter = ShardedGcra::builder(Rate::per_second(10)?)
    ///     .shards(2)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// limiter.try_acquire_n_at(7, 0).unwrap();
    /// assert_eq!(limiter.remaining_at(0), 3);
    /// assert_eq!(limiter.remaining_at(200_000_000), 5); // each shard refills one per 200 ms
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn remaining_at(&self, now: u64) -> u64 {
        self.between_changes(|| self.total_at(now, Shard::available))
    }

    /// How long until every shard is full again (the whole global burst available) if nothing
    /// more is granted: the latest shard TAT minus `now`, zero when all are full. Reads the
    /// state, never writes it.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    /// use std::time::Duration;
    ///
    /// let limiter = ShardedGcra::builder(Rate::per_second(10)?)
    ///     .shards(2)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.reset_at(0), Duration::ZERO);
    /// limiter.try_acquire_n_on_at(0, 2, 0).unwrap(); // shard 0 refills one per 200 ms
    /// assert_eq!(limiter.reset_at(0), Duration::from_millis(400));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn reset_at(&self, now: u64) -> Duration {
        let latest = self.between_changes(|| {
            self.shards
                .iter()
                .map(|shard| shard.load())
                .max()
                .unwrap_or(0)
        });
        Duration::from_nanos(latest.saturating_sub(now))
    }

    /// `f` (a read-only pass over the shards) taken between rate changes: a pass that met a
    /// change (a frozen shard, or parameters of two epochs) is taken again after it.
    fn between_changes<T>(&self, f: impl Fn() -> T) -> T {
        let mut contention = Contention::new();
        loop {
            self.wait_change(&mut contention);
            let turn = self.change_turn();
            let value = f();
            if turn & 1 == 0 && self.change_turn() == turn {
                return value;
            }
        }
    }

    /// How many permits shard `k` could grant at `now`, or `None` if there is no shard `k`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    ///
    /// let limiter = ShardedGcra::builder(Rate::per_second(10)?)
    ///     .shards(2)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// limiter.try_acquire_n_on_at(0, 1, 0).unwrap();
    /// assert_eq!(limiter.shard_remaining_at(0, 0), Some(4));
    /// assert_eq!(limiter.shard_remaining_at(2, 0), None);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn shard_remaining_at(&self, k: usize, now: u64) -> Option<u64> {
        let shard = self.shards.get(k)?;
        Some(shard.available(shard.load(), now))
    }

    /// The number of shards S.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    /// let limiter = ShardedGcra::builder(Rate::per_second(2)?).shards(2).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.shards(), 2);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// The global burst b = Σ b_k.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    /// let limiter = ShardedGcra::builder(Rate::per_second(5)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.burst(), 5);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn burst(&self) -> u64 {
        self.snapshot().1
    }

    /// Shard `k`'s burst b_k, or `None` if there is no shard `k`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    /// let limiter = ShardedGcra::builder(Rate::per_second(7)?).shards(3).clock(ManualClock::new()).build()?;
    /// let shares: Vec<_> = (0..3).map(|k| limiter.shard_burst(k).unwrap()).collect();
    /// assert_eq!(shares, [3, 2, 2]);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn shard_burst(&self, k: usize) -> Option<u64> {
        self.shards
            .get(k)
            .map(|shard| self.stable(|| shard.params_with(Ordering::Acquire).burst))
    }

    /// The global emission interval I = ⌈period / limit⌉: the bound's interval.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    /// use std::time::Duration;
    /// let limiter = ShardedGcra::builder(Rate::per_second(4)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.emission_interval(), Duration::from_millis(250));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn emission_interval(&self) -> Duration {
        Duration::from_nanos(self.snapshot().2)
    }

    /// Shard `k`'s emission interval I_k = ⌈I · limit / l_k⌉, or `None` if there is no
    /// shard `k`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    /// use std::time::Duration;
    /// let limiter = ShardedGcra::builder(Rate::per_second(4)?).shards(2).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.shard_emission_interval(1), Some(Duration::from_millis(500)));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn shard_emission_interval(&self, k: usize) -> Option<Duration> {
        self.shards.get(k).map(|shard| {
            Duration::from_nanos(self.stable(|| shard.params_with(Ordering::Acquire).interval))
        })
    }

    /// The configured (global) rate.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    /// let rate = Rate::per_second(4)?;
    /// let limiter = ShardedGcra::builder(rate).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.rate(), rate);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn rate(&self) -> Rate {
        self.snapshot().0
    }

    /// The shard that the calling thread's requests start from (`try_acquire_n_at` and the
    /// [`Limiter`] methods): its round-robin thread index modulo S; 0 without `std`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    /// let limiter = ShardedGcra::builder(Rate::per_second(4)?).shards(2).clock(ManualClock::new()).build()?;
    /// assert!(limiter.home_shard() < 2);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn home_shard(&self) -> usize {
        thread_index() % self.shards.len()
    }

    /// The limiter's clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, ManualClock, Rate, ShardedGcra};
    /// let limiter = ShardedGcra::builder(Rate::per_second(4)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.clock().now(), 0);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.clock
    }
}

impl<C: Clock> ShardedGcra<C> {
    /// How many permits could be taken now over all shards:
    /// [`remaining_at`](ShardedGcra::remaining_at) with the clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Limiter, ManualClock, Rate, ShardedGcra};
    /// let limiter = ShardedGcra::builder(Rate::per_second(3)?).clock(ManualClock::new()).build()?;
    /// limiter.try_acquire()?;
    /// assert_eq!(limiter.remaining(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remaining(&self) -> u64 {
        self.remaining_at(self.clock.now())
    }

    /// How long until every shard is full again: [`reset_at`](ShardedGcra::reset_at) with the
    /// clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    /// use std::time::Duration;
    /// let limiter = ShardedGcra::builder(Rate::per_second(3)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.reset(), Duration::ZERO);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn reset(&self) -> Duration {
        self.reset_at(self.clock.now())
    }
}

crate::decide::decide_at_once! {
    /// A decision with what HTTP headers need (quota: the global burst per the time it takes
    /// to refill; `next` bounded by the time until every shard is full), from the calling
    /// thread's home shard as [`Limiter::try_acquire_n`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Decide, ManualClock, Rate, ShardedGcra};
    /// use std::future::Future;
    /// use std::task::{Context, Poll, Waker};
    ///
    /// let limiter = ShardedGcra::builder(Rate::per_second(4)?).shards(2).clock(ManualClock::new()).build()?;
    /// let mut fut = std::pin::pin!(limiter.decide(&(), 3));
    /// let Poll::Ready(Ok(d)) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
    ///     unreachable!()
    /// };
    /// assert_eq!((d.is_allowed(), d.remaining()), (true, 1));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    ShardedGcra, |this, permits, now| {
        acquire: this.try_acquire_n_on_at(thread_index(), permits, now),
        read: {
            let reset = this.reset_at(now);
            (this.remaining_at(now), reset, reset)
        },
        quota: crate::decide::gcra_quota(this.rate(), this.burst()),
    }
}

impl fmt::Debug for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.params();
        f.debug_struct("Shard")
            .field("burst", &p.burst)
            .field("interval_ns", &p.interval)
            // Relaxed: a snapshot for display.
            .field("tat_ns", &self.tat.load(Ordering::Relaxed))
            .finish()
    }
}

impl<C> fmt::Debug for ShardedGcra<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (rate, burst, interval) = self.snapshot();
        f.debug_struct("ShardedGcra")
            .field("rate", &rate)
            .field("burst", &burst)
            .field("interval_ns", &interval)
            .field("shards", &self.shards)
            .finish_non_exhaustive()
    }
}
