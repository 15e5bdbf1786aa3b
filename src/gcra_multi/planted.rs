//! Planted bugs for the loom models (see the declaration in `gcra_multi.rs`).

use super::*;

/// `limiter` whose grants publish with a plain store of `current` instead of a CAS: two
/// requests that decided on the same snapshot both install their own, and one grant is
/// lost (over-admission).
#[derive(Debug)]
pub struct StoreNotCas<C>(pub GcraMulti<C>);

impl<C> StoreNotCas<C> {
    /// One permit at `now`, published by a store.
    pub fn try_acquire_at(&self, now: u64) -> Result<(), Denied> {
        let g = &self.0;
        let k = g.params.len();
        loop {
            // Acquire: as in the real code.
            let cur = g.current.load(Ordering::Acquire);
            let (r#gen, slot) = (cur >> SLOT_BITS, (cur & SLOT_MASK) as usize);
            let mut tats = [0u64; MAX_RATES];
            if !read(&g.snapshots[slot], r#gen, &mut tats[..k]) {
                continue;
            }
            let mut next = [0u64; MAX_RATES];
            for i in 0..k {
                let p = &g.params[i];
                next[i] = decide(tats[i], now, p.interval, p.tolerance - p.interval)?;
            }
            let Some(j) = g.claim(slot, r#gen) else {
                continue;
            };
            for (t, &v) in g.snapshots[j].tats[..k].iter().zip(&next[..k]) {
                // Relaxed: as in the real code.
                t.store(v, Ordering::Relaxed);
            }
            // Release: as in the real code.
            g.snapshots[j].seq.store(2 * (r#gen + 1), Ordering::Release);
            // Release: the bug is the store, not its ordering.
            g.current
                .store(((r#gen + 1) << SLOT_BITS) | j as u64, Ordering::Release);
            return Ok(());
        }
    }
}

/// Every rate's remaining permits at `now`, for the models' final checks.
pub fn remaining_each<C>(g: &GcraMulti<C>, now: u64) -> alloc::vec::Vec<u64> {
    g.remaining_each_at(now).collect()
}
