//! Planted bugs for the loom models (see the declaration in `sliding_log.rs`).

use super::*;

/// [`SlidingLog`] (single permits) whose slot claim is a plain store that trusts the look.
/// Everything else is the real single-permit path: look at the slot at the cursor, CAS the
/// cursor, and after a failed CAS retry at once from the cursor it returned. Without the
/// slot CAS, the cursor does not make the log safe: with one slot, a thread that looked
/// before the other's grant takes the next lap's index and grants again.
#[derive(Debug)]
pub struct RacySlidingLog<C>(pub SlidingLog<C>);

impl<C: Clock> RacySlidingLog<C> {
    /// The broken acquire.
    pub fn try_acquire(&self) -> Result<(), Denied> {
        let log = &self.0;
        let now = log.clock.now();
        let bar = log.bar(now);
        // Orderings as in the real code; the bug is the store, not an ordering.
        let mut c = log.head.cursor.load(Ordering::Relaxed);
        let seen = log.slot(c).load(Ordering::Acquire);
        if seen > bar {
            return Err(log.denied(seen, now));
        }
        loop {
            match log.reserve(c, 1, now, true) {
                Ok(stamp) => {
                    // The bug: a plain store where the real code claims by CAS.
                    log.slot(c).store(stamp, Ordering::Release);
                    return Ok(());
                }
                Err(current) => c = current,
            }
        }
    }
}

/// [`SlidingLog`] whose rollback of a partial weighted claim is a plain store of the value
/// it replaced, not a CAS: it can erase a grant another thread made on top of the partial
/// claim, and a third thread then takes the same slot again.
#[derive(Debug)]
pub struct BlindRollbackSlidingLog<C>(pub SlidingLog<C>);

impl<C> BlindRollbackSlidingLog<C> {
    /// The broken acquire: as [`SlidingLog::try_acquire_n_at`] but with a blind rollback.
    pub fn try_acquire_n_at(&self, n: u64, now: u64) -> Result<(), Denied> {
        let log = &self.0;
        let bar = log.bar(now);
        loop {
            let c = log.head.cursor.load(Ordering::Relaxed);
            let mut worst = 0;
            for i in 0..n {
                worst = worst.max(log.slot(c + i).load(Ordering::Acquire));
            }
            if worst > bar {
                if log.head.cursor.load(Ordering::Relaxed) == c {
                    return Err(log.denied(worst, now));
                }
                continue;
            }
            let newest = if c == 0 {
                0
            } else {
                log.slot(c - 1).load(Ordering::Relaxed)
            };
            let stamp = newest.max(now + 1);
            if log
                .head
                .cursor
                .compare_exchange(c, c + n, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            let mut replaced = alloc::vec::Vec::new();
            let mut ok = true;
            for i in 0..n {
                let slot = log.slot(c + i);
                let seen = slot.load(Ordering::Relaxed);
                if seen > bar
                    || slot
                        .compare_exchange(seen, stamp, Ordering::Release, Ordering::Relaxed)
                        .is_err()
                {
                    ok = false;
                    break;
                }
                replaced.push(seen);
            }
            if ok {
                return Ok(());
            }
            for (i, seen) in replaced.into_iter().enumerate() {
                // The bug: a blind store.
                log.slot(c + i as u64).store(seen, Ordering::Relaxed);
            }
        }
    }
}
