//! The time core's planted bugs for the loom models (declared in `time.rs`).

use super::*;

impl<H: HeadCell> TimeRing<H> {
    /// The grant decided by "sum, then add": the count is read, then a separate `fetch_add`
    /// adds, so two threads can both see `limit − 1` and both add. Frozen clock only.
    pub(in crate::sliding_window) fn racy_sum_then_add(&self, now: u64) -> Result<(), Denied> {
        loop {
            // Acquire: as in `acquire`.
            let s = self.head.state().load(Ordering::Acquire);
            match self.attempt(self.head.state(), s, 1, now) {
                Ok(_) => {
                    // Relaxed: deliberately broken: the add does not check `s` is current.
                    self.head.state().fetch_add(1 << HIGH, Ordering::Relaxed);
                    return Ok(());
                }
                Err(Miss::Retry) => crate::sync::Backoff::new().spin(),
                Err(Miss::Denied(d)) => return Err(d),
            }
        }
    }

    /// A roll that thaws first and writes the snapshots afterwards, from a fresh load of G:
    /// grants made in the new bucket meanwhile are taken into P of the old one, so they leave
    /// the window one bucket early.
    pub(in crate::sliding_window) fn racy_late_snapshots(
        &self,
        n: u64,
        now: u64,
    ) -> Result<(), Denied> {
        loop {
            // Acquire: as in `acquire`.
            let s = self.head.state().load(Ordering::Acquire);
            // Relaxed: as in `attempt`.
            let x = self.head.epoch().load(Ordering::Relaxed);
            let b = now / self.width;
            if s & FROZEN == 0 && x & EPOCH_MASK == state_epoch(s) && b > x {
                // Deliberately broken: move to bucket b without freezing x, publish the epoch,
                // and only then snapshot.
                if self
                    .head
                    .state()
                    .compare_exchange(
                        s,
                        state_word(granted(s), b, false),
                        Ordering::AcqRel,
                        Ordering::Relaxed,
                    )
                    .is_err()
                {
                    continue;
                }
                // Release (both): as the real roll's epoch and target.
                self.head.target().store(b, Ordering::Release);
                self.head.epoch().store(b, Ordering::Release);
                // Acquire: the late, fresh G.
                let g = granted(self.head.state().load(Ordering::Acquire));
                for y in x.max(b.saturating_sub(self.mask + 1))..b {
                    self.slot(y).store(slot_word(y, g), Ordering::Release);
                }
                continue;
            }
            match self.attempt(self.head.state(), s, n, now) {
                Ok(next) => {
                    // Relaxed: as in `acquire`.
                    if self
                        .head
                        .state()
                        .compare_exchange(s, next, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                    {
                        return Ok(());
                    }
                }
                Err(Miss::Retry) => crate::sync::Backoff::new().spin(),
                Err(Miss::Denied(d)) => return Err(d),
            }
        }
    }
}

impl<H: HeadCell> TimeRing<H> {
    /// The grant with the limit read *before* the state word (the real one reads it after,
    /// so that the CAS on the word validates the reading: see `limit`). A live change and a
    /// grant after it can land between the two reads, and the request is then decided on the
    /// old limit with a window that holds the new limit's grant. Frozen clock in the first
    /// bucket only (nothing has expired, so the window holds G).
    pub(in crate::sliding_window) fn early_limit(&self, n: u64, now: u64) -> Result<(), Denied> {
        // The bug: the limit first.
        let limit = self.limit();
        loop {
            // Acquire: as in `acquire`.
            let s = self.head.state().load(Ordering::Acquire);
            if u64::from(granted(s)) + n > limit {
                return Err(Denied::after_nanos(self.width - now % self.width));
            }
            // Release / Relaxed: as in `acquire`; the CAS validates the count, not the limit.
            if self
                .head
                .state()
                .compare_exchange(s, s + (n << HIGH), Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                return Ok(());
            }
        }
    }
}
