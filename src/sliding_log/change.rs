//! Live limit changes of [`SlidingLog`]: the ring replaced by one holding the newest grants.

use super::*;

/// Live limit changes.
impl<C> SlidingLog<C> {
    /// Changes the limit, keeping the period: the ring is replaced by one of `limit` slots
    /// (8 bytes each) holding the newest `limit` grant times, in order; older grants that may
    /// still be in the window are kept beside the ring (they decide nothing under the lower
    /// limit) and go back into it when a later change raises the limit. So every permit
    /// already granted keeps counting until it leaves the window, across any sequence of
    /// changes (lowering and raising again at one instant frees nothing), as if the log had
    /// always had the limit in force: a higher limit's extra room is free at once only as far as
    /// the grants in the window allow, and with a lower limit a window that still holds the
    /// dropped (older) grants holds all the kept ones too, so it admits nothing until it is
    /// under the new limit (the argument of `Keyed`'s log carry, in the
    /// [`guide`](crate::guide::keyed#rate-overrides-and-rate-changes)). Every window ending after the
    /// change holds at most the new limit, counting the grants from before it.
    ///
    /// Exactness needs one slot per permit of the limit, and the ring cannot grow or shrink
    /// under concurrent claims, so this takes `&mut self`: no request runs meanwhile. Share
    /// the log behind an `RwLock` (write-lock to change) if it must change while in use, or
    /// use a [`SlidingWindow`](crate::SlidingWindow), whose limit changes lock-free. The new
    /// ring is allocated (and checked against the default memory budget, 1 GiB) before anything
    /// changes.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `limit` when it is 0, above 2^28, over the memory budget or
    /// cannot be allocated; the log is left unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingLog};
    ///
    /// let mut log = SlidingLog::builder(Rate::per_second(3)?).clock(ManualClock::new()).build()?;
    /// for t in [0, 100, 200] {
    ///     log.try_acquire_at(t).unwrap();
    /// }
    /// log.set_limit(5)?; // the 3 grants carry over: 2 more fit now
    /// assert!(log.try_acquire_n_at(2, 300).is_ok());
    /// assert!(log.try_acquire_at(300).is_err());
    /// log.set_limit(2)?; // the newest 2 kept (at 300): nothing fits until they leave
    /// assert_eq!(log.try_acquire_at(400).unwrap_err().retry_after_nanos(), Some(999_999_900));
    /// log.set_limit(5)?; // all 5 grants still count: nothing fits until the first leaves
    /// assert_eq!(log.try_acquire_at(400).unwrap_err().retry_after_nanos(), Some(999_999_600));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn set_limit(&mut self, limit: u64) -> Result<(), ConfigError> {
        let rate = Rate::new(limit, Duration::from_nanos(self.period))?;
        if limit <= MAX_SLOTS {
            let need = 8 * u128::from(limit);
            crate::memory::within(
                "limit",
                u128::from(limit),
                need,
                crate::memory::DEFAULT_MAX_MEMORY,
            )?;
        }
        let slots = limit_slots(limit)?;
        // `&mut self`: no claim is under way, so every slot holds its final stamp. The ones a
        // lower limit moved out of the ring come back too (issue 43: 50 → 3 → 50 at one
        // instant let 97 into one window when they were dropped).
        let stamps = self.all_stamps();
        let mut fresh: SlidingLog<()> = SlidingLog::from_parts(slots, rate, ());
        fresh.load_stamps(&stamps);
        // The newest stamp reserved stays the newest (a grant at an older `now` is recorded at
        // it, as before the change).
        // Relaxed (both): `&mut self`.
        let newest = self.head.newest.load(Ordering::Relaxed);
        fresh.head.newest.store(newest, Ordering::Relaxed);
        self.head = fresh.head;
        self.slots = fresh.slots;
        self.len = fresh.len;
        self.stride = fresh.stride;
        self.inv = fresh.inv;
        self.rate = fresh.rate;
        Ok(())
    }
}
