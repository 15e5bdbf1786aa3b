//! The all-or-nothing step over a [`MultiWindow`](super::MultiWindow)'s windows: charge each
//! window in turn; on a refusal, give back every charge made and deny with the latest wait.
//! Shared by the limiter and its per-key state.

use alloc::boxed::Box;
use core::fmt;

use super::window::{Token, Window};
use super::MAX_WINDOWS;
use crate::error::Denied;
use crate::sliding_window::KeyWindow;
use crate::sync::{AtomicU64, Ordering};

/// The windows, and a hint of which to charge first.
pub(crate) struct Windows {
    windows: Box<[Window]>,
    /// The window that refused last (an index into `windows`): the first one charged, so that
    /// under overload the refusing window is usually met first and a denial writes nothing.
    /// Only a hint: any order gives the same decisions.
    first: AtomicU64,
}

impl Windows {
    /// `windows`: 1 ..= [`MAX_WINDOWS`] of them (the builder checks).
    pub(crate) fn new(windows: Box<[Window]>) -> Windows {
        debug_assert!((1..=MAX_WINDOWS).contains(&windows.len()));
        Windows {
            windows,
            first: AtomicU64::new(0),
        }
    }

    /// The windows, in the order they were added.
    pub(crate) fn as_slice(&self) -> &[Window] {
        &self.windows
    }

    /// Takes `n` ≥ 1 permits at `now` in every window, or in none.
    ///
    /// Each window is charged by its own CAS, from the hinted one on, wrapping around. The
    /// first refusal gives back every charge made, in the same order (see `refused`). So a
    /// grant was checked against every window with every other grant's charge counted, and a
    /// refusal leaves nothing counted but what a give-back that raced a ring's roll strands.
    #[inline(always)]
    pub(crate) fn acquire(&self, n: u64, now: u64) -> Result<(), Denied> {
        self.acquire_with(n, now, Window::give_back)
    }

    /// [`acquire`](Windows::acquire) with the give-back step `give_back` (the real one, or a
    /// loom model's planted twin). One or two counted rings have a path of their own
    /// ([`acquire_two_rings`](Windows::acquire_two_rings)); otherwise one or two windows are
    /// charged inline, with no array of tokens, and a third and later ones in
    /// [`acquire_more`](Windows::acquire_more).
    #[inline(always)]
    pub(crate) fn acquire_with(
        &self,
        n: u64,
        now: u64,
        give_back: impl Fn(&Window, u64, Token, u64) -> bool,
    ) -> Result<(), Denied> {
        let windows = &*self.windows;
        // The common sets, one or two counted rings: each ring's own inline charge, no
        // dispatch on the window's kind per charge and no index arithmetic.
        match windows {
            [Window::Ring { ring, .. }] => return ring.charge(n, now).map(drop),
            [Window::Ring { ring: a, .. }, Window::Ring { ring: b, .. }] => {
                return self.acquire_two_rings(a, b, n, now, give_back)
            }
            _ => {}
        }
        let k = windows.len();
        // Relaxed: a hint (see `first`); only indices below k are ever stored.
        let first = self.first.load(Ordering::Relaxed) as usize;
        let Some(w0) = windows.get(first) else {
            // Not reached: `first` is always an index of a window.
            return self.acquire_more(n, now, 0, &[], give_back);
        };
        let t0 = match w0.charge(n, now) {
            Ok(t) => t,
            Err(d) => return Err(self.refused(n, now, first, &[], first, d, give_back)),
        };
        if k == 1 {
            return Ok(());
        }
        let second = if first + 1 == k { 0 } else { first + 1 };
        match windows[second].charge(n, now) {
            Ok(t1) if k == 2 => {
                let _ = t1;
                Ok(())
            }
            Ok(t1) => self.acquire_more(n, now, first, &[t0, t1], give_back),
            Err(d) => Err(self.refused(n, now, first, &[t0], second, d, give_back)),
        }
    }

    /// [`acquire_with`](Windows::acquire_with) for a set of two counted rings `a` (window 0)
    /// and `b` (window 1): the hinted one charged first, then the other; the same steps as the
    /// general path, with each ring's charge inline.
    #[inline(always)]
    fn acquire_two_rings(
        &self,
        a: &KeyWindow,
        b: &KeyWindow,
        n: u64,
        now: u64,
        give_back: impl Fn(&Window, u64, Token, u64) -> bool,
    ) -> Result<(), Denied> {
        // Relaxed: a hint (see `first`); only 0 and 1 are ever stored for two windows.
        let first = usize::from(self.first.load(Ordering::Relaxed) != 0);
        let (r0, r1) = if first == 0 { (a, b) } else { (b, a) };
        let charged = match r0.charge(n, now) {
            Ok(word) => word,
            Err(d) => return Err(self.refused(n, now, first, &[], first, d, give_back)),
        };
        match r1.charge(n, now) {
            Ok(_) => Ok(()),
            Err(d) => {
                let taken = [Token::ring(charged)];
                Err(self.refused(n, now, first, &taken, 1 - first, d, give_back))
            }
        }
    }

    /// The rest of [`acquire_with`](Windows::acquire_with): the windows after those from
    /// `first` on that took `taken` (wrapping around).
    #[inline(never)]
    fn acquire_more(
        &self,
        n: u64,
        now: u64,
        first: usize,
        taken: &[Token],
        give_back: impl Fn(&Window, u64, Token, u64) -> bool,
    ) -> Result<(), Denied> {
        let k = self.windows.len();
        let mut tokens = [Token::default(); MAX_WINDOWS];
        tokens[..taken.len()].copy_from_slice(taken);
        let mut step = taken.len();
        let mut i = (first + step) % k;
        while step < k {
            match self.windows[i].charge(n, now) {
                Ok(t) => tokens[step] = t,
                Err(d) => {
                    let given = &tokens[..step];
                    return Err(self.refused(n, now, first, given, i, d, give_back));
                }
            }
            step += 1;
            i += 1;
            if i == k {
                i = 0;
            }
        }
        Ok(())
    }

    /// Window `at` refused with `denied` after the windows from `first` on took `tokens`:
    /// gives those back, points the hint at `at`, and returns the latest wait of every window
    /// the request has not met (those given back had room at `now`: called sequentially,
    /// waiting the result and retrying succeeds, and one nanosecond less does not).
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn refused(
        &self,
        n: u64,
        now: u64,
        first: usize,
        tokens: &[Token],
        at: usize,
        denied: Denied,
        give_back: impl Fn(&Window, u64, Token, u64) -> bool,
    ) -> Denied {
        let k = self.windows.len();
        let next = |i: usize| if i + 1 == k { 0 } else { i + 1 };
        let mut i = first;
        for &token in tokens {
            give_back(&self.windows[i], n, token, now);
            i = next(i);
        }
        if at != first {
            // Relaxed: a hint, published with nothing.
            self.first.store(at as u64, Ordering::Relaxed);
        }
        let mut denied = denied;
        let mut i = next(at);
        while i != first {
            if let Some(d) = self.windows[i].wait_for(n, now) {
                denied = denied.later(d);
            }
            i = next(i);
        }
        denied
    }

    /// The time from which no window counts a permit (0: none counted now).
    #[cfg(feature = "std")]
    pub(crate) fn idle_at(&self) -> u64 {
        self.windows.iter().map(Window::idle_at).max().unwrap_or(0)
    }

    /// The denial a request for `n` ≥ 1 at `now` would get from the windows (`None`: every
    /// window has room). Reads only.
    pub(crate) fn wait_for(&self, n: u64, now: u64) -> Option<Denied> {
        self.windows
            .iter()
            .filter_map(|w| w.wait_for(n, now))
            .reduce(Denied::later)
    }

    /// `(remaining, reset ns)` at `now`: the fewest permits any window has left (a request for
    /// n is granted iff n ≤ this, called sequentially), and the latest time any window counts
    /// a permit until (every window full again).
    pub(crate) fn read_at(&self, now: u64) -> (u64, u64) {
        self.windows
            .iter()
            .map(|w| w.read_at(now))
            .fold((u64::MAX, 0), |(r, t), (wr, wt)| (r.min(wr), t.max(wt)))
    }

    /// The index of the window with the fewest permits left at `now` (the first of equals),
    /// and its `(remaining, reset ns)`: the window that binds.
    pub(crate) fn binding_at(&self, now: u64) -> (usize, u64, u64) {
        let mut best = (0, u64::MAX, 0);
        for (i, w) in self.windows.iter().enumerate() {
            let (r, t) = w.read_at(now);
            if r < best.1 {
                best = (i, r, t);
            }
        }
        best
    }
}

impl fmt::Debug for Windows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.windows.iter()).finish()
    }
}
