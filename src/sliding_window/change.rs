//! Live limit changes of [`SlidingWindow`].

use super::*;

/// Live limit changes.
impl<C> SlidingWindow<C> {
    /// Changes the limit at time `now` (nanoseconds on this limiter's clock), keeping the
    /// period and the buckets, while other threads keep acquiring.
    ///
    /// # What happens to permits already granted
    ///
    /// They keep counting: the window is the same ring of counts, so every window still
    /// counts every permit granted in it, before or after the change.
    ///
    /// - **A lower limit applies at once**: from the change on, a request is granted only if
    ///   its window, old grants included, stays within the new limit. A window can still hold
    ///   up to the old limit from grants made before the change; it admits nothing more until
    ///   it is back under the new one.
    /// - **A higher limit applies one `period` after the change**: until then the limit in
    ///   force stays the old one (it is raised by the first request denied after that time,
    ///   on its slow path). So every window that contains the change holds at most the
    ///   smaller of the two limits, counting its grants from both sides, and every window after
    ///   it at most the new limit: never more permissive than either limit's guarantee. (An
    ///   immediate raise would let a window containing the change hold the new limit although
    ///   the old one was in force for part of it.)
    /// - A further change while a raise is pending starts from the limit in force.
    ///
    /// Racing requests are judged wholly by the old limit or wholly by the new: a request
    /// reads the limit after the state word and its CAS on that word validates both (see the
    /// [`guide`](crate::guide::rate_changes#changing-a-rate-while-running)). The grant path is unchanged
    /// (the limit is read with the same plain load); a denial checks for a raise that is due.
    ///
    /// The memory of a window is O(buckets), independent of the limit, so any limit up to
    /// 2^31 − 1 fits without a new ring. A different period would change the bucket width and
    /// the ring: build a new limiter for that.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `limit` when it is 0 or above 2^31 − 1, or naming
    /// `count_closed` for a window built with
    /// [`count_closed`](SlidingWindowBuilder::count_closed) (its closed-bucket table is sized
    /// for its limit); nothing is changed.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    ///
    /// let limiter = SlidingWindow::builder(Rate::per_second(5)?).clock(ManualClock::new()).build()?;
    /// limiter.try_acquire_n_at(3, 0).unwrap();
    /// limiter.set_limit_at(2, 0)?; // lower: at once, the 3 granted still count
    /// assert!(limiter.try_acquire_at(500_000_000).is_err());
    /// limiter.set_limit_at(10, 500_000_000)?; // higher: from 1.5 s on
    /// assert_eq!(limiter.rate().limit(), 10);
    /// assert!(limiter.try_acquire_n_at(3, 1_200_000_000).unwrap_err().retry_after().is_some());
    /// assert!(limiter.try_acquire_n_at(10, 1_500_000_000).is_ok());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn set_limit_at(&self, limit: u64, now: u64) -> Result<(), ConfigError> {
        if limit == 0 || limit > MAX_LIMIT {
            return Err(ConfigError::new(
                "limit",
                Value::Count(u128::from(limit)),
                "must be between 1 and 2147483647 (a window packs counts into 32 bits)",
            ));
        }
        let Core::Time(ring) = &self.core else {
            return Err(ConfigError::new(
                "count_closed",
                // The count-closed core exists only with k set.
                Value::Count(u128::from(self.count_closed().unwrap_or(0))),
                "live limit changes need a window without count-closed buckets (its \
                 closed-bucket table is sized for its limit): build a new limiter",
            ));
        };
        crate::sync::take_turn(&self.changes);
        let in_force = ring.limit();
        if limit <= in_force {
            ring.set_limit(limit);
            // Relaxed (both): read under the turn (see `raise_if_due`).
            self.raise_at.store(0, Ordering::Relaxed);
        } else {
            // Relaxed: as above; `max(1)`: 0 means "none pending".
            self.raise_at.store(
                now.saturating_add(self.rate.period_nanos()).max(1),
                Ordering::Relaxed,
            );
        }
        // Relaxed: the getters' snapshot of the limit last set.
        self.limit.store(limit, Ordering::Relaxed);
        crate::sync::end_turn(&self.changes);
        Ok(())
    }

    /// After a denial: if a raise is due, makes it the limit in force and decides again.
    #[cold]
    #[inline(never)]
    pub(super) fn raise_if_due(
        &self,
        ring: &TimeRing,
        n: u64,
        now: u64,
        denied: Denied,
    ) -> Result<(), Denied> {
        // Relaxed: a hint; the turn below decides.
        let at = self.raise_at.load(Ordering::Relaxed);
        if at == 0 {
            return Err(denied);
        }
        if now < at {
            // More than the limit in force but within the pending one: possible from the
            // raise on (a lower bound: the window decides then).
            // Relaxed: the limit last set, a snapshot.
            if denied.is_never() && n <= self.limit.load(Ordering::Relaxed) {
                return Err(Denied::after_nanos(at - now));
            }
            return Err(denied);
        }
        crate::sync::take_turn(&self.changes);
        // Relaxed (both): under the turn.
        let at = self.raise_at.load(Ordering::Relaxed);
        let due = at != 0 && now >= at;
        if due {
            ring.set_limit(self.limit.load(Ordering::Relaxed));
            self.raise_at.store(0, Ordering::Relaxed);
        }
        crate::sync::end_turn(&self.changes);
        if due {
            ring.acquire(n, now)
        } else {
            Err(denied)
        }
    }
}

impl<C: Clock> SlidingWindow<C> {
    /// Changes the limit now: [`set_limit_at`](SlidingWindow::set_limit_at) with the clock
    /// read.
    ///
    /// # Errors
    ///
    /// As [`set_limit_at`](SlidingWindow::set_limit_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Limiter, ManualClock, Rate, SlidingWindow};
    ///
    /// let limiter = SlidingWindow::builder(Rate::per_minute(100)?).clock(ManualClock::new()).build()?;
    /// limiter.set_limit(50)?;
    /// assert_eq!(limiter.rate(), Rate::per_minute(50)?);
    /// assert_eq!(limiter.set_limit(0).unwrap_err().field(), "limit");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn set_limit(&self, limit: u64) -> Result<(), ConfigError> {
        self.set_limit_at(limit, self.clock.now())
    }
}
