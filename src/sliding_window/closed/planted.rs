//! The count-closed core's planted bug for the loom models (declared in `closed.rs`).

use super::*;

impl CountClosed {
    /// Expires the oldest closed bucket by "load the tag, then store FREE" (not one CAS).
    pub(in crate::sliding_window) fn racy_expire(&self, now: u64) {
        let cl = &self.cl;
        // Relaxed (all): deliberately broken; the bug is the gap between the load of the tag
        // and the store that frees it.
        let t = cl.tail.load(Ordering::Relaxed);
        if t < cl.head.load(Ordering::Relaxed) {
            if let Some((permits, time)) = cl.published(t) {
                if time + cl.period <= now {
                    let e = cl.entry(t);
                    e.tag.store(pack(t + cl.m, FREE), Ordering::Relaxed);
                    self.give_back(permits);
                    cl.tail.store(t + 1, Ordering::Relaxed);
                }
            }
        }
    }
}
