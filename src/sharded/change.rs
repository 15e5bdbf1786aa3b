//! Live rate and burst changes of [`ShardedGcra`]: every shard moved by `Gcra`'s rule
//! (see the guide, "Changing a rate while running").

use super::*;

/// Live rate and burst changes.
impl<C> ShardedGcra<C> {
    /// `f` read between two equal even values of the change counter (a sequence lock for the
    /// getters; `f` reads with Acquire, so a value a later change stored shows its odd mark).
    pub(super) fn stable<T>(&self, f: impl Fn() -> T) -> T {
        let mut contention = Contention::new();
        loop {
            // Acquire: `f` reads after it.
            let before = self.changes.load(Ordering::Acquire);
            if before & 1 == 0 {
                let value = f();
                // Relaxed: ordered after `f`'s Acquire loads.
                if self.changes.load(Ordering::Relaxed) == before {
                    return value;
                }
            }
            contention.wait();
        }
    }

    /// The rate, burst and interval, read consistently.
    pub(super) fn snapshot(&self) -> (Rate, u64, u64) {
        self.stable(|| {
            // Acquire (all): see `stable`.
            let limit = self.limit.load(Ordering::Acquire);
            let period = self.period.load(Ordering::Acquire);
            let rate = match Rate::new(limit, Duration::from_nanos(period)) {
                Ok(rate) => rate,
                // Written only from a validated `Rate`.
                Err(e) => unreachable!("a stored rate is valid: {e}"),
            };
            (
                rate,
                self.burst.load(Ordering::Acquire),
                self.interval.load(Ordering::Acquire),
            )
        })
    }

    /// Changes the global rate and burst at time `now` while other threads keep acquiring:
    /// each shard's share is recomputed as at build (same shard count) and each shard is moved
    /// onto it by [`Gcra::set_rate_at`](crate::Gcra::set_rate_at)'s rule: the permits free in
    /// a shard stay free, at most its new burst share, and time owed is never forgiven. Summed
    /// over the shards (Σ b_k = b, Σ 1/I_k ≤ 1/I), in any interval [t, t + d] with t ≤ `now`
    /// = s at most b + (s − t)/I + (t + d − s)/I' permits are granted, and in any interval
    /// after s at most b' + d/I' (the proof is `Gcra`'s, shard by shard: see the
    /// [`guide`](crate::guide::rate_changes#changing-a-rate-while-running)). `burst: None` means the new
    /// rate's `limit`.
    ///
    /// The shards are frozen and converted one at a time; a request that meets a frozen shard
    /// waits for the change before it denies, and grants made meanwhile are each one shard's
    /// CAS under that shard's parameters. A split request that gave back permits before the
    /// change cannot give them back after it (they stay counted, as stranded ones do).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] as [`ShardedGcraBuilder::build`] for `rate` and `burst`, and naming
    /// `shards` when the new `limit` or burst is below the shard count (each shard needs one
    /// permit of each); nothing is changed.
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
    /// limiter.try_acquire_n_at(4, 0).unwrap(); // 6 of 10 left
    /// limiter.set_rate_at(Rate::per_second(100)?, None, 0)?;
    /// assert_eq!(limiter.remaining_at(0), 6); // the change frees nothing
    /// assert_eq!((limiter.burst(), limiter.shard_burst(1)), (100, Some(50)));
    /// assert!(limiter.set_rate_at(Rate::per_second(1)?, None, 0).is_err()); // 1 < 2 shards
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn set_rate_at(&self, rate: Rate, burst: Option<u64>, now: u64) -> Result<(), ConfigError> {
        let (interval, burst, split) = split(rate, burst, self.shards.len() as u64)?;
        crate::sync::take_turn(&self.changes);
        // New parameters may free a shard's permits sooner: no denial hint lives across it.
        self.empty.announce();
        for (shard, new) in self.shards.iter().zip(split) {
            let old = shard.params();
            if (old.interval, old.tolerance) != (new.interval, new.tolerance) {
                // AcqRel: as `Gcra`'s freeze (grants' parameter reads precede our stores;
                // give-backs' raise of `high` is visible; requests that read FROZEN see our
                // odd mark).
                let tat = shard.tat.swap(FROZEN, Ordering::AcqRel);
                // Relaxed: made visible by the swap's Acquire.
                let high = shard.high.load(Ordering::Relaxed);
                let next = if tat == FROZEN {
                    FROZEN // the end of the clock's range: stays exhausted
                } else {
                    crate::gcra::rerate(
                        tat,
                        now,
                        (old.interval, old.tolerance),
                        (new.interval, new.tolerance),
                        high,
                    )
                };
                // Release (all): published with the TAT below.
                shard.interval.store(new.interval, Ordering::Release);
                shard.tolerance.store(new.tolerance, Ordering::Release);
                shard.burst.store(new.burst, Ordering::Release);
                // Release: publishes the parameters to every request that reads this TAT. An
                // RMW, as `Gcra`'s install: the word changes only by RMWs from the freeze on.
                shard.tat.swap(next, Ordering::Release);
            } else {
                // Release: b_k = τ_k / I_k is unchanged; for the getters.
                shard.burst.store(new.burst, Ordering::Release);
            }
        }
        // Release (all): for the getters' sequence lock.
        self.burst.store(burst, Ordering::Release);
        self.interval.store(interval, Ordering::Release);
        self.limit.store(rate.limit(), Ordering::Release);
        self.period.store(rate.period_nanos(), Ordering::Release);
        self.empty.retire();
        crate::sync::end_turn(&self.changes);
        Ok(())
    }
}

impl<C: Clock> ShardedGcra<C> {
    /// Changes the rate now; the burst becomes the new rate's `limit`:
    /// [`set_rate_at`](ShardedGcra::set_rate_at) with the clock read.
    ///
    /// # Errors
    ///
    /// As [`set_rate_at`](ShardedGcra::set_rate_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    ///
    /// let limiter = ShardedGcra::builder(Rate::per_second(100)?)
    ///     .shards(4)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// limiter.set_rate(Rate::per_second(1_000)?)?;
    /// assert_eq!(limiter.rate(), Rate::per_second(1_000)?);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn set_rate(&self, rate: Rate) -> Result<(), ConfigError> {
        self.set_rate_at(rate, None, self.clock.now())
    }

    /// Changes the rate and burst now: [`set_rate_at`](ShardedGcra::set_rate_at) with the
    /// clock read.
    ///
    /// # Errors
    ///
    /// As [`set_rate_at`](ShardedGcra::set_rate_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    ///
    /// let limiter = ShardedGcra::builder(Rate::per_second(100)?)
    ///     .shards(2)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// limiter.set_rate_and_burst(Rate::per_second(100)?, 10)?;
    /// assert_eq!((limiter.shard_burst(0), limiter.shard_burst(1)), (Some(5), Some(5)));
    /// assert_eq!(limiter.set_rate_and_burst(Rate::per_second(100)?, 1).unwrap_err().field(), "shards");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn set_rate_and_burst(&self, rate: Rate, burst: u64) -> Result<(), ConfigError> {
        self.set_rate_at(rate, Some(burst), self.clock.now())
    }
}
