//! Live rate and burst changes of [`Gcra`]: the parameters' sequence lock and the carried
//! TAT (see the guide, "Changing a rate while running").

use super::*;

impl<C> Gcra<C> {
    /// The parameters, read consistently: between two equal even readings of `changes` (a
    /// sequence lock; only getters and rate changes use it).
    pub(crate) fn snapshot(&self) -> Snapshot {
        let mut contention = Contention::new();
        loop {
            // Acquire: the parameters below are read after it.
            let before = self.changes.load(Ordering::Acquire);
            if before & 1 == 0 {
                // Acquire (all): if one of them reads a value a later change stored (Release),
                // it sees that change's odd mark, so the second reading below differs.
                let interval = self.interval.load(Ordering::Acquire);
                let tolerance = self.tolerance.load(Ordering::Acquire);
                let burst = self.burst.load(Ordering::Acquire);
                let limit = self.limit.load(Ordering::Acquire);
                let period = self.period.load(Ordering::Acquire);
                // Relaxed: ordered after the Acquire loads above.
                if self.changes.load(Ordering::Relaxed) == before {
                    let rate = match Rate::new(limit, Duration::from_nanos(period)) {
                        Ok(rate) => rate,
                        // Written only from a validated `Rate`.
                        Err(e) => unreachable!("a stored rate is valid: {e}"),
                    };
                    return Snapshot {
                        interval,
                        tolerance,
                        burst,
                        rate,
                    };
                }
            }
            contention.wait();
        }
    }

    /// Changes the rate and burst at time `now` (nanoseconds on this limiter's clock), while
    /// other threads keep acquiring: the algorithm under [`set_rate`](Gcra::set_rate),
    /// [`set_burst`](Gcra::set_burst) and [`set_rate_and_burst`](Gcra::set_rate_and_burst).
    /// `burst: None` means the new rate's `limit`, as in the builder.
    ///
    /// # What happens to permits already granted
    ///
    /// They stay granted and keep counting; the change never frees a permit:
    ///
    /// - **The permits free right after the change are at most those free right before it,
    ///   and at most the new burst**: free capacity carries over as the same number of permits
    ///   (a fraction of a permit included), capped at the new burst b'. A larger burst is not
    ///   granted at once: it fills at the new rate, as after a burst of requests.
    /// - **Time owed is never forgiven**: the state (the TAT) never moves earlier. When the
    ///   rule above would move it earlier (a faster rate with the same burst, a smaller burst)
    ///   the time already owed stays owed; so does time queued by reservations.
    /// - Consequently, for a change at `now` = s from interval I and burst b to I' and b':
    ///   in any interval [t, t + d] with t ≤ s, at most **b + (s − t)/I + (t + d − s)/I'**
    ///   permits are granted (the old burst once, each rate over its own part), and in any
    ///   interval after s, at most **b' + d/I'** (the new guarantee). The proof is in the
    ///   [`guide`](crate::guide::rate_changes#changing-a-rate-while-running).
    ///
    /// Requests racing the change are judged wholly under the old parameters or wholly under
    /// the new ones, grants and denials (with their `retry_after`) alike: a request whose reads
    /// straddle the change fails its CAS, or its denial's check against the state word, and
    /// decides again (the guide, [what makes the read consistent]); for the instant of the
    /// change (a few atomic operations) they wait for it. No interleaving panics.
    ///
    /// [what makes the read consistent]: crate::guide#what-makes-the-read-consistent Cost: three
    /// RMWs and seven stores, off the admission path, which it does not slow: the parameters
    /// are read with the same plain loads as before (callgrind figures in `BENCHMARKS.md`).
    ///
    /// A reservation made before a change and cancelled after it is not given back (its
    /// permits stay counted). The state never moves below a value it has held: after a
    /// reservation far in the future was cancelled, the next change keeps the state past it.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] as [`GcraBuilder::build`] for `rate` and `burst`; nothing is changed.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    ///
    /// let limiter = Gcra::builder(Rate::per_second(10)?).clock(ManualClock::new()).build()?;
    /// limiter.try_acquire_n_at(4, 0).unwrap(); // 6 of 10 left
    /// limiter.set_rate_at(Rate::per_second(100)?, None, 0)?;
    /// // Still 6 free (not 100): the change frees nothing; the rest fills at 100/s.
    /// assert_eq!(limiter.remaining_at(0), 6);
    /// assert_eq!(limiter.remaining_at(10_000_000), 7);
    /// // Slower: 2/s (burst 2). The 930 ms still owed stay owed (not rescaled to 2/s), so
    /// // nothing is free until they drain below the new tolerance of 1 s.
    /// limiter.set_rate_at(Rate::per_second(2)?, None, 10_000_000)?;
    /// assert_eq!(limiter.remaining_at(10_000_000), 0);
    /// assert_eq!(limiter.remaining_at(500_000_000), 1);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn set_rate_at(&self, rate: Rate, burst: Option<u64>, now: u64) -> Result<(), ConfigError> {
        let new = Params::new(rate, burst)?;
        self.change(now, |_, _| Ok((new, rate)))
    }

    /// A rate change: takes the turn, freezes the TAT, installs the parameters `params` returns
    /// for the current ones and the carried TAT, and ends the turn (changing nothing if
    /// `params` fails).
    fn change(
        &self,
        now: u64,
        params: impl FnOnce(Params, Rate) -> Result<(Params, Rate), ConfigError>,
    ) -> Result<(), ConfigError> {
        crate::sync::take_turn(&self.changes);
        // Relaxed (all): only changes write the parameters, and we hold the turn.
        let old = Params {
            interval: self.interval.load(Ordering::Relaxed),
            burst: self.burst.load(Ordering::Relaxed),
            tolerance: self.tolerance.load(Ordering::Relaxed),
        };
        let current = match Rate::new(
            self.limit.load(Ordering::Relaxed),
            Duration::from_nanos(self.period.load(Ordering::Relaxed)),
        ) {
            Ok(rate) => rate,
            // Written only from a validated `Rate`.
            Err(e) => unreachable!("a stored rate is valid: {e}"),
        };
        let (new, rate) = match params(old, current) {
            Ok(changed) => changed,
            Err(e) => {
                crate::sync::end_turn(&self.changes); // nothing was written
                return Err(e);
            }
        };
        let same = (new.interval, new.tolerance) == (old.interval, old.tolerance);
        if !same {
            // AcqRel: Acquire reads every grant's CAS before it (Release), so their parameter
            // reads precede our stores below, and every cancel's raise of `high` (made before
            // its Release CAS); Release publishes our odd mark to a request that reads FROZEN.
            let tat = self.tat.swap(FROZEN, Ordering::AcqRel);
            // Relaxed: made visible by the swap's Acquire (see above).
            let high = self.high.load(Ordering::Relaxed);
            let next = if tat == FROZEN {
                FROZEN // the end of the clock's range: stays exhausted
            } else {
                rerate(
                    tat,
                    now,
                    (old.interval, old.tolerance),
                    (new.interval, new.tolerance),
                    high,
                )
            };
            // Release (all): a request that reads the TAT stored below (Acquire) reads these.
            self.interval.store(new.interval, Ordering::Release);
            self.tolerance.store(new.tolerance, Ordering::Release);
            self.slack_one
                .store(new.tolerance - new.interval, Ordering::Release);
            self.burst.store(new.burst, Ordering::Release);
            // Release: publishes the parameters above to every request that reads this TAT.
            // An RMW (its result is the frozen marker): the word then changes only by RMWs,
            // each reading the one before it, which the waiters' RMWs in `thawed` rely on
            // (loom, too, orders a plain store after the RMWs that read the freeze).
            self.tat.swap(next, Ordering::Release);
        }
        // Release (both): for the getters' sequence lock (see `snapshot`).
        self.limit.store(rate.limit(), Ordering::Release);
        self.period.store(rate.period_nanos(), Ordering::Release);
        if same {
            // Release: for the getters; b = τ / I is unchanged with I and τ, so this changes
            // nothing a request reads.
            self.burst.store(new.burst, Ordering::Release);
        }
        crate::sync::end_turn(&self.changes);
        Ok(())
    }

    /// Moves the TAT down from `from` to `to` if it still holds `from` (a cancel): the one way
    /// to lower the state word, because a rate change must know the highest value it held.
    /// Strong CAS: a spurious failure would lose the permits for no reason.
    pub(crate) fn lower_tat(&self, from: u64, to: u64) -> bool {
        // Relaxed: published to a later rate change by the Release CAS below, which that
        // change's swap (Acquire) reads or follows.
        self.high.fetch_max(from, Ordering::Relaxed);
        // Release: see above; Relaxed on failure: nothing is read. The CAS alone decides.
        self.tat
            .compare_exchange(from, to, Ordering::Release, Ordering::Relaxed)
            .is_ok()
    }
}

impl<C: Clock> Gcra<C> {
    /// Changes the rate now; the burst becomes the new rate's `limit` (as the builder's
    /// default). [`set_rate_at`](Gcra::set_rate_at) with the clock read: what happens to
    /// permits already granted is described there.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] as [`GcraBuilder::build`] (field `rate`); nothing is changed.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Limiter, Rate};
    /// use std::sync::Arc;
    ///
    /// let limiter = Arc::new(Gcra::new(Rate::per_second(1_000)?)?);
    /// let worker = Arc::clone(&limiter);
    /// std::thread::spawn(move || while worker.try_acquire().is_ok() {}).join().unwrap();
    /// limiter.set_rate(Rate::per_second(5_000)?)?; // while others may be acquiring
    /// assert_eq!(limiter.rate(), Rate::per_second(5_000)?);
    /// assert_eq!(limiter.burst(), 5_000);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn set_rate(&self, rate: Rate) -> Result<(), ConfigError> {
        self.set_rate_at(rate, None, self.clock.now())
    }

    /// Changes the rate and the burst now: [`set_rate_at`](Gcra::set_rate_at) with the clock
    /// read.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] as [`GcraBuilder::build`] (fields `rate`, `burst`); nothing is changed.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    ///
    /// let limiter = Gcra::builder(Rate::per_second(10)?).clock(ManualClock::new()).build()?;
    /// limiter.set_rate_and_burst(Rate::per_second(100)?, 1)?;
    /// assert_eq!((limiter.rate().limit(), limiter.burst()), (100, 1));
    /// assert!(limiter.set_rate_and_burst(Rate::per_second(100)?, 0).is_err());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn set_rate_and_burst(&self, rate: Rate, burst: u64) -> Result<(), ConfigError> {
        self.set_rate_at(rate, Some(burst), self.clock.now())
    }

    /// Changes the burst now, keeping the rate: [`set_rate_at`](Gcra::set_rate_at) with the
    /// current rate and the clock read.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `burst` when it is 0 or burst × interval overflows u64
    /// nanoseconds; nothing is changed.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let limiter = Gcra::builder(Rate::per_second(10)?).clock(clock.clone()).build()?;
    /// clock.advance(Duration::from_secs(1));
    /// limiter.set_burst(2)?;
    /// assert_eq!(limiter.remaining(), 2);
    /// assert_eq!(limiter.set_burst(0).unwrap_err().field(), "burst");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_burst(&self, burst: u64) -> Result<(), ConfigError> {
        // The rate is read inside the change's turn, so a concurrent `set_rate` is not undone.
        self.change(self.clock.now(), |_, rate| {
            Ok((Params::new(rate, Some(burst))?, rate))
        })
    }
}
