//! Read-back of the count-closed core: `(remaining, reset)` at a given time.

use super::*;

// Count-closed read-back, for headers and dashboards.
impl CountClosed {
    /// `(remaining, reset)` at `now`, read-only: `limit` minus the permits a request at `now`
    /// would count once it had moved the floor and expired closed buckets (so, called
    /// sequentially, a request for n is granted iff n ≤ remaining), and the nanoseconds until
    /// none is counted. A snapshot under concurrency (permits in flight between the decision
    /// word and their bucket count until they are recorded).
    pub(in crate::sliding_window) fn read_at(&self, now: u64) -> (u64, u64) {
        let cl = &self.cl;
        let (g, s) = self.load_state();
        // Acquire: as in `acquire`.
        let r = cl.released.load(Ordering::Acquire);
        // Acquire: as in `acquire`.
        let t0 = now.max(cl.latest.load(Ordering::Acquire));
        let f = self.floor_at(t0);
        let mut counted = u64::from((count(g) as u32).wrapping_sub(r as u32));
        let mut newest: u128 = 0;
        let leaves = |y: u64| (u128::from(y) + 1) * u128::from(self.width) + u128::from(self.lag);
        for slot in self.slots.iter() {
            // Acquire: a snapshot of the bucket.
            let word = slot.load(Ordering::Acquire);
            if count(word) == RETIRED {
                continue;
            }
            // Live buckets lie within 2^31 of the floor: rebuild the full epoch from `s`.
            let offset = epoch32(word).wrapping_sub(s as u32) as i32;
            let y = if offset < 0 {
                s.saturating_sub(u64::from(offset.unsigned_abs()))
            } else {
                s.saturating_add(offset as u64)
            };
            if y < f {
                // Retired by the request's catch-up: no longer counted.
                counted = counted.saturating_sub(count(word));
            } else if count(word) > 0 {
                newest = newest.max(leaves(y));
            }
        }
        // Acquire (both): the closed buckets between tail and head.
        let head = cl.head.load(Ordering::Acquire);
        let mut j = cl.tail.load(Ordering::Acquire);
        while j < head {
            if let Some((k, time)) = cl.published(j) {
                let end = u128::from(time) + u128::from(cl.period);
                if end <= u128::from(t0) {
                    counted = counted.saturating_sub(k);
                } else {
                    newest = newest.max(end);
                }
            }
            j += 1;
        }
        if counted == 0 {
            return (self.limit, 0);
        }
        if newest == 0 {
            // Permits still being recorded: they leave by a period after the newest time.
            newest = u128::from(t0) + u128::from(cl.period);
        }
        let reset = u64::try_from(newest)
            .unwrap_or(u64::MAX)
            .saturating_sub(now);
        (self.limit.saturating_sub(counted), reset)
    }
}
