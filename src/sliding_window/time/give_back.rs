//! What a limiter of several windows ([`MultiWindow`](crate::MultiWindow)) needs from one time
//! ring: a *charge* that returns the decision word its CAS installed, a *give-back* that undoes
//! a charge while its bucket is still the current one, and the read-only wait of a request.
//!
//! # The give-back
//!
//! A charge of n permits installed `{ G, x, 0 }` (bucket x). Giving it back is a CAS of the
//! decision word from `{ G', x, 0 }` to `{ G' − n, x, 0 }`, for the current G', **only while
//! the word is still unfrozen at epoch x**. Then no roll has closed bucket x since the charge
//! (a roll freezes the word first), so no snapshot holds the n permits: every P[y] for y < x
//! is unchanged, G' − n ≥ P[x − 1] (the n were added after bucket x began), and the state is
//! the one the charge never happened would have left, with the other calls' grants in it. If
//! a roll has begun (the word is frozen, or at another epoch), the permits stay counted: they
//! are in P[x] already, and taking them out of G would undercount every bucket after x. Such
//! *stranded* permits are counted in bucket x like a grant's and leave the window with it (by
//! T(x + 1), within `period + w` of the charge): a false denial, never an over-admission.
//!
//! A give-back only lowers G within the current bucket, so P stays non-decreasing in y (the
//! bisections of `denial` and `read_at` rely on it) and invariant J is untouched (it writes no
//! slot). The epoch bits are 30: a charge mistaken for one of another bucket would need a
//! single call suspended for 2^30 bucket widths between its charge and its give-back.

use super::*;
use crate::sliding_window::KeyWindow;

impl<H: HeadCell> TimeRing<H> {
    /// Takes `n` ≥ 1 permits at `now` as [`acquire`](Self::acquire) does, and returns the word
    /// its CAS installed: the token [`give_back`](Self::give_back) needs.
    #[inline(always)]
    pub(in crate::sliding_window) fn charge(&self, n: u64, now: u64) -> Result<u64, Denied> {
        // Acquire: as in `acquire`.
        let s = self.head.state().load(Ordering::Acquire);
        let seen = match self.fast(s, n, now) {
            Fast::Grant(next) => {
                // Release and Acquire: as in `acquire`.
                match self.head.state().compare_exchange_weak(
                    s,
                    next,
                    Ordering::Release,
                    Ordering::Acquire,
                ) {
                    Ok(_) => return Ok(next),
                    Err(current) => Some(current),
                }
            }
            Fast::Deny {
                x,
                off,
                below,
                limit,
            } => {
                if let Some(d) = self.quick_denial(s, x, off, n, limit, now) {
                    return Err(d);
                }
                let f = Self::floor_of(x, below);
                if let Miss::Denied(d) = self.denial(self.head.state(), s, x, f, n, now) {
                    return Err(d);
                }
                None
            }
            Fast::Slow => None,
        };
        self.acquire_slow(self.head.state(), n, now, seen)
    }

    /// Gives back the `n` permits of the charge that installed `charged`, if its bucket is
    /// still the current one and no roll has begun (see the module docs); true if it did.
    pub(in crate::sliding_window) fn give_back(&self, n: u64, charged: u64) -> bool {
        let backoff = Backoff::new();
        // Relaxed: only a guess for the CAS, which checks it.
        let mut s = self.head.state().load(Ordering::Relaxed);
        loop {
            // Same epoch bits as the charge's word, and not frozen (the charge's word was not).
            if (s ^ charged) & ((EPOCH_MASK << EPOCH_SHIFT) | FROZEN) != 0 {
                return false;
            }
            // AcqRel: acquires the word (and with it the thaw that opened bucket x) and
            // releases it onward, as a grant's CAS does, so a call that acquires the lowered
            // word sees the epoch and snapshots without relying on release sequences. Relaxed
            // on failure: the returned word is only checked again.
            match self.head.state().compare_exchange_weak(
                s,
                s.wrapping_sub(n << HIGH),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(current) => {
                    s = current;
                    backoff.spin();
                }
            }
        }
    }

    /// The planted twin of [`give_back`](Self::give_back) (loom models only): lowers G in
    /// whatever bucket is current, unless frozen. Given back after a roll, the permits leave
    /// bucket x's snapshot counted and are taken from the new bucket's count instead: that
    /// bucket then undercounts by n.
    #[cfg(hotlimit_loom)]
    pub(in crate::sliding_window) fn give_back_to_any_bucket(&self, n: u64) -> bool {
        // Relaxed: the twin's guess for the CAS.
        let mut s = self.head.state().load(Ordering::Relaxed);
        loop {
            if s & FROZEN != 0 {
                return false;
            }
            // AcqRel: as in `give_back`.
            match self.head.state().compare_exchange_weak(
                s,
                s.wrapping_sub(n << HIGH),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(current) => s = current,
            }
        }
    }

    /// The denial a request for `n` ≥ 1 permits at `now` would get, or `None` if it would be
    /// granted. Reads only (beyond finishing a roll another call froze), as
    /// [`read_at`](Self::read_at).
    pub(in crate::sliding_window) fn wait_for(&self, n: u64, now: u64) -> Option<Denied> {
        self.wait_for_in(self.head.state(), n, now)
    }

    /// [`wait_for`](Self::wait_for) with the decision word in `st`.
    pub(in crate::sliding_window) fn wait_for_in<S: StateCell>(
        &self,
        st: &S,
        n: u64,
        now: u64,
    ) -> Option<Denied> {
        let backoff = Backoff::new();
        loop {
            if n > self.limit() {
                return Some(Denied::never());
            }
            // Acquire: as in `acquire`.
            let s = st.load(Ordering::Acquire);
            // Relaxed: checked against `s`.
            let x = self.head.epoch().load(Ordering::Relaxed);
            if s & FROZEN != 0 || x & S::EPOCH_MASK != state_epoch(s) {
                self.help(st, s);
                backoff.spin();
                continue;
            }
            // τ = max(now, x·w); x = ⌊t / w⌋ for a time t some call brought: no overflow. A
            // `now` past the current bucket counts nothing from bucket x on that it would not
            // count after a roll: snapshots past the current bucket equal G.
            let tau = now.max(x * self.width);
            let f = tau.saturating_sub(self.lag) / self.width;
            if f > x {
                return None;
            }
            let p = match f.checked_sub(1) {
                None => 0,
                Some(y) => {
                    // Acquire: as in `decide`.
                    let v = self.slot(y).load(Ordering::Acquire);
                    if slot_epoch(v) != y as u32 {
                        backoff.spin();
                        continue;
                    }
                    slot_prefix(v)
                }
            };
            if u64::from(granted(s).wrapping_sub(p)) + n <= self.limit() {
                // Acquire: the slot above was read while `state` was `s` if it still is.
                if st.load(Ordering::Acquire) != s {
                    backoff.spin();
                    continue;
                }
                return None;
            }
            match self.denial(st, s, x, f, n, now) {
                Miss::Denied(d) => return Some(d),
                Miss::Retry => backoff.spin(),
            }
        }
    }
}

/// The per-window steps of a [`MultiWindow`](crate::MultiWindow) over a per-key window (a
/// [`KeyWindow`]: an unpadded head, so the windows of one limiter share cache lines).
impl KeyWindow {
    /// Takes `n` ≥ 1 permits at `now`; the token for [`give_back`](KeyWindow::give_back).
    #[inline(always)]
    pub(crate) fn charge(&self, n: u64, now: u64) -> Result<u64, Denied> {
        self.ring.charge(n, now)
    }

    /// Undoes the charge of `n` that returned `charged`, if a roll has not begun since; true
    /// if it did.
    #[inline]
    pub(crate) fn give_back(&self, n: u64, charged: u64) -> bool {
        self.ring.give_back(n, charged)
    }

    /// The planted twin of [`give_back`](KeyWindow::give_back) (loom models only).
    #[cfg(hotlimit_loom)]
    pub(crate) fn give_back_to_any_bucket(&self, n: u64) -> bool {
        self.ring.give_back_to_any_bucket(n)
    }

    /// The denial a request for `n` ≥ 1 at `now` would get (`None`: granted). Reads only.
    pub(crate) fn wait_for(&self, n: u64, now: u64) -> Option<Denied> {
        self.ring.wait_for(n, now)
    }

    /// The bucket width in nanoseconds.
    pub(crate) fn width(&self) -> u64 {
        self.width
    }
}
