//! What a limiter of several windows ([`MultiWindow`](crate::MultiWindow)) needs from one log:
//! a *charge* that returns the indices and the stamp it claimed, a *give-back* that undoes a
//! charge, and the read-only wait of a request.
//!
//! The charge is [`acquire_slots`](SlidingLog::acquire_slots)'s loop (look at the n oldest
//! slots, reserve by a CAS of the cursor, claim each slot by a CAS from a free value), kept
//! apart so that the log's own paths stay as they are. The give-back is the log's own
//! rollback: each of our slots goes by CAS from our stamp to `bar(now)`, a grant time of
//! now − period (out of the window at our `now`, and at least the value the claim replaced, so
//! nothing any other grant relies on is lowered; a slot another call has claimed on top of
//! ours is left alone). The guarantee rests on the slot CASes alone (see [`SlidingLog`]), so a
//! given-back slot is an ordinary free slot to every later claim. Then the cursor goes back
//! over our indices by one CAS, if no reservation followed ours: the freed slots are again the
//! oldest, which keeps a sequential caller exact. If another reservation came first, the
//! freed slots stay behind the cursor until its next lap: a false denial at most, as after
//! the log's own rollbacks.

use super::*;

impl<C, W: Deref<Target = Head>> SlidingLog<C, W> {
    /// Takes `n` permits (1 ≤ n) at `now`, all or nothing; returns the first index claimed and
    /// the stamp, the token for [`give_back`](SlidingLog::give_back).
    #[inline]
    pub(crate) fn charge(&self, n: u64, now: u64) -> Result<(u64, u64), Denied> {
        debug_assert!(n >= 1);
        if n > self.len || now == u64::MAX {
            // More than the log holds, or a stamp now + 1 that would not fit.
            return Err(Denied::never());
        }
        let bar = self.bar(now);
        let mut contention = Contention::new();
        // Relaxed: as in `acquire_slots`.
        let mut c = self.head.cursor.load(Ordering::Relaxed);
        loop {
            // Acquire (all slot loads): as in `acquire_slots`. The n-th oldest first.
            let mut worst = self.slot(c.wrapping_add(n - 1)).load(Ordering::Acquire);
            let mut i = 0;
            while worst <= bar && i + 1 < n {
                worst = worst.max(self.slot(c.wrapping_add(i)).load(Ordering::Acquire));
                i += 1;
            }
            if worst > bar {
                // Relaxed: as in `acquire_slots`; a denial writes nothing.
                let again = self.head.cursor.load(Ordering::Relaxed);
                if again == c {
                    return Err(self.denied(worst, now));
                }
                c = again;
                continue;
            }
            let stamp = match self.reserve(c, n, now, true) {
                Ok(stamp) => stamp,
                Err(current) => {
                    // Relaxed (a reload after a pause): as the first load.
                    c = contention.lost(current, now, || self.head.cursor.load(Ordering::Relaxed));
                    continue;
                }
            };
            if self.claim(c, n, bar, stamp) {
                return Ok((c, stamp));
            }
            // As in `acquire_slots`: a slot of ours went to another lap; rolled back, retry.
            contention.lost_then_reload(now);
            // Relaxed: as above.
            c = self.head.cursor.load(Ordering::Relaxed);
        }
    }

    /// Undoes the charge of `n` at `now` that returned `(first, stamp)` (see the module docs).
    pub(crate) fn give_back(&self, first: u64, n: u64, stamp: u64, now: u64) {
        self.roll_back(first, n, self.bar(now), stamp);
        // Relaxed: the cursor only chooses which slots to try (the slot CASes carry the
        // guarantee). Back over our indices only if no reservation followed ours.
        let _ = self.head.cursor.compare_exchange(
            first.wrapping_add(n),
            first,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// The denial a request for `n` ≥ 1 permits at `now` would get, or `None` if its look at
    /// the n oldest slots finds them free. Reads only.
    pub(crate) fn wait_for(&self, n: u64, now: u64) -> Option<Denied> {
        if n > self.len || now == u64::MAX {
            return Some(Denied::never());
        }
        let bar = self.bar(now);
        // Relaxed: as in `acquire_slots`.
        let c = self.head.cursor.load(Ordering::Relaxed);
        // Acquire: as in `acquire_slots`.
        let worst = (0..n)
            .map(|i| self.slot(c.wrapping_add(i)).load(Ordering::Acquire))
            .max()
            .unwrap_or(0);
        (worst > bar).then(|| self.denied(worst, now))
    }
}
