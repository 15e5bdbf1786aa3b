//! Read-back of the time core: the buckets a request counts, `(remaining, reset)` at a
//! given time, and the raw words for `Debug`.

use super::*;

impl<H: HeadCell> TimeRing<H> {
    /// `(y, k)` for every bucket y that a request at or after now may still count (y from the
    /// floor at the current bucket's start up to the current bucket) holding k ≥ 1 permits:
    /// k = P\[y\] − P\[y − 1\], with P\[x\] = G. Finishes a roll under way first. Exact when
    /// no call is in flight (a `Keyed` gate closed and drained); a snapshot otherwise.
    ///
    /// The snapshot is consistent: the slots are read after the word and the epoch, and if
    /// one of them no longer holds its bucket's snapshot (a roll started by a concurrent call
    /// reused it: the word has changed since), the reading starts over. Without the re-check a
    /// reused slot would be taken for the older bucket, and its larger count would wrap the
    /// difference into a bogus bucket of ~2^32 permits.
    #[cfg(any(feature = "std", hotlimit_loom))]
    pub(in crate::sliding_window) fn counted_buckets(
        &self,
    ) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counted_buckets_in(self.head.state())
    }

    /// [`counted_buckets`](Self::counted_buckets) with the decision word in `st`.
    #[cfg(any(feature = "std", hotlimit_loom))]
    pub(in crate::sliding_window) fn counted_buckets_in<S: StateCell>(
        &self,
        st: &S,
    ) -> alloc::vec::IntoIter<(u64, u64)> {
        let backoff = Backoff::new();
        'read: loop {
            let (s, x) = loop {
                // Acquire: as in `acquire`.
                let s = st.load(Ordering::Acquire);
                // Relaxed: checked against `s`.
                let x = self.head.epoch().load(Ordering::Relaxed);
                if s & FROZEN == 0 && x & S::EPOCH_MASK == state_epoch(s) {
                    break (s, x);
                }
                self.help(st, s);
            };
            // f(x·w) = x − q − [r > 0]: no request judged at or after x·w counts anything below.
            let lo = x.saturating_sub(self.lag_buckets + u64::from(self.lag_rest > 0));
            let mut out = Vec::new();
            // P[lo − 1] .. P[x] (invariant J for y < x while the word is `s`; P[x] = G).
            let mut below = None;
            for y in core::iter::once(lo.wrapping_sub(1)).chain(lo..=x) {
                let p = if y == x {
                    granted(s)
                } else {
                    // Acquire: as in `attempt`.
                    let v = self.slot(y).load(Ordering::Acquire);
                    if slot_epoch(v) != y as u32 {
                        // Acquire: as above. A roll froze the word before reusing the slot.
                        let now_s = st.load(Ordering::Acquire);
                        debug_assert_ne!(now_s, s, "a live snapshot is missing");
                        backoff.spin();
                        continue 'read;
                    }
                    slot_prefix(v)
                };
                if let Some(prev) = below {
                    let k = u64::from(p.wrapping_sub(prev));
                    if k > 0 {
                        out.push((y, k));
                    }
                }
                below = Some(p);
            }
            return out.into_iter();
        }
    }

    /// `(remaining, reset)` at `now`, read-only (beyond finishing a roll another call froze):
    /// `limit` minus the permits a request at `now` counts (so a request for n is granted iff
    /// n ≤ remaining, called sequentially), and the nanoseconds until it counts none (the
    /// newest bucket holding a permit leaves the window at T(y + 1)). A roll a request at
    /// `now` would make changes neither: snapshots at bucket ends past the current one equal
    /// the count.
    pub(in crate::sliding_window) fn read_at(&self, now: u64) -> (u64, u64) {
        self.read_at_in(self.head.state(), now)
    }

    /// [`read_at`](Self::read_at) with the decision word in `st`.
    pub(in crate::sliding_window) fn read_at_in<S: StateCell>(
        &self,
        st: &S,
        now: u64,
    ) -> (u64, u64) {
        let backoff = Backoff::new();
        'read: loop {
            // Acquire: as in `acquire`.
            let s = st.load(Ordering::Acquire);
            // Relaxed: checked against `s`.
            let x = self.head.epoch().load(Ordering::Relaxed);
            if s & FROZEN != 0 || x & S::EPOCH_MASK != state_epoch(s) {
                self.help(st, s);
                backoff.spin();
                continue;
            }
            let g = granted(s);
            // τ = max(now, x·w); x = ⌊t / w⌋ for a time t some call brought: no overflow.
            let tau = now.max(x * self.width);
            // f(τ) = ⌊(τ − lag) / w⌋, saturating at 0; f ≥ x − R + 1, inside the ring.
            let f = tau.saturating_sub(self.lag) / self.width;
            // P[y] for f − 1 ≤ y (P[−1] = 0; P[y] = G from the current bucket on).
            let prefix = |y: Option<u64>| -> Option<u32> {
                match y {
                    None => Some(0),
                    Some(y) if y >= x => Some(g),
                    Some(y) => {
                        // Acquire: as in `attempt`.
                        let v = self.slot(y).load(Ordering::Acquire);
                        (slot_epoch(v) == y as u32).then(|| slot_prefix(v))
                    }
                }
            };
            let below = f.checked_sub(1);
            let Some(p) = prefix(below) else {
                backoff.spin();
                continue 'read;
            };
            let counted = u64::from(g.wrapping_sub(p));
            let remaining = self.limit().saturating_sub(counted);
            let mut reset = 0;
            if counted > 0 {
                // The newest bucket y with a permit: the least y in [f, x] with P[y] = G
                // (P only grows; P[x] = G), found by bisection.
                let (mut lo, mut hi) = (f, x.max(f));
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    match prefix(Some(mid)) {
                        None => {
                            backoff.spin();
                            continue 'read;
                        }
                        Some(pm) if pm == g => hi = mid,
                        Some(_) => lo = mid + 1,
                    }
                }
                // Bucket lo leaves the window at T(lo + 1).
                reset = self
                    .floor_start(lo.saturating_add(1))
                    .map_or(u64::MAX, |t| t.saturating_sub(now));
            }
            // Acquire: the slots above were read while `state` was `s` if it still is.
            if st.load(Ordering::Acquire) != s {
                backoff.spin();
                continue;
            }
            return (remaining, reset);
        }
    }

    /// The raw decision word and epoch, for `Debug`.
    pub(in crate::sliding_window) fn debug_words(&self) -> (u64, u64) {
        self.debug_words_in(self.head.state())
    }

    /// [`debug_words`](Self::debug_words) with the decision word in `st`.
    pub(in crate::sliding_window) fn debug_words_in<S: StateCell>(&self, st: &S) -> (u64, u64) {
        // Relaxed (both): a snapshot for display.
        let s = st.load(Ordering::Relaxed);
        (
            u64::from(granted(s)),
            self.head.epoch().load(Ordering::Relaxed),
        )
    }
}
