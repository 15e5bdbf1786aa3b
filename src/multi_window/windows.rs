//! The all-or-nothing step over a [`MultiWindow`](super::MultiWindow)'s windows: charge each
//! window in turn; on a refusal, give back every charge made and deny with the latest wait.
//! A set of exactly two counted rings instead keeps both rings' decision words in one word
//! and grants by one CAS of it ([`PairWord`]). Shared by the limiter and its per-key state.

use alloc::boxed::Box;
use core::fmt;

use super::window::{Token, Window};
use super::MAX_WINDOWS;
use crate::error::Denied;
use crate::sliding_window::{PairWord, View};
use crate::sync::{AtomicU64, Ordering};

/// The windows, and a hint of which to charge first.
pub(crate) struct Windows {
    /// The decision word of a set of exactly two counted rings (their shared count, each
    /// ring's epoch bits and flag) and their cached snapshots, in place of the rings' own
    /// words, which such a set never uses. Unused otherwise.
    pair: PairWord,
    windows: Box<[Window]>,
    /// The window that refused last (an index into `windows`): the first one charged, so that
    /// under overload the refusing window is usually met first and a denial writes nothing.
    /// Only a hint: any order gives the same decisions. Unused by a pair.
    first: AtomicU64,
}

impl Windows {
    /// `windows`: 1 ..= [`MAX_WINDOWS`] of them (the builder checks).
    pub(crate) fn new(windows: Box<[Window]>) -> Windows {
        debug_assert!((1..=MAX_WINDOWS).contains(&windows.len()));
        Windows {
            pair: PairWord::new(),
            windows,
            first: AtomicU64::new(0),
        }
    }

    /// The windows, in the order they were added.
    pub(crate) fn as_slice(&self) -> &[Window] {
        &self.windows
    }

    /// Whether the set is exactly two counted rings, whose decision words are in `pair`.
    #[inline(always)]
    fn paired(&self) -> bool {
        matches!(*self.windows, [Window::Ring { .. }, Window::Ring { .. }])
    }

    /// Where window `i`'s decision word is, if not in the window itself: its view of `pair`.
    /// Every step that reads or writes a ring's word goes through this.
    pub(crate) fn view(&self, i: usize) -> Option<View<'_>> {
        self.paired().then(|| self.pair.view(i))
    }

    /// Each window with [`view`](Windows::view) of it, in the order they were added.
    pub(crate) fn each(&self) -> impl Iterator<Item = (&Window, Option<View<'_>>)> {
        self.windows
            .iter()
            .enumerate()
            .map(|(i, w)| (w, self.view(i)))
    }

    /// Takes `n` ≥ 1 permits at `now` in every window, or in none.
    ///
    /// Two counted rings: one CAS of the pair's word counts in both ([`PairWord::acquire`]).
    /// Otherwise each window is charged by its own CAS, from the hinted one on, wrapping
    /// around. The first refusal gives back every charge made, in the same order (see
    /// `refused`). So a grant was checked against every window with every other grant's charge
    /// counted, and a refusal leaves nothing counted but what a give-back that raced a ring's
    /// roll strands.
    #[inline(always)]
    pub(crate) fn acquire(&self, n: u64, now: u64) -> Result<(), Denied> {
        self.acquire_with(n, now, Window::give_back)
    }

    /// [`acquire`](Windows::acquire) with the give-back step `give_back` (the real one, or a
    /// loom model's planted twin). One counted ring is charged as its own limiter, two by
    /// their pair's CAS (no give-back); otherwise one or two windows are charged inline, with
    /// no array of tokens, and a third and later ones in
    /// [`acquire_more`](Windows::acquire_more).
    #[inline(always)]
    pub(crate) fn acquire_with(
        &self,
        n: u64,
        now: u64,
        give_back: impl Fn(&Window, u64, Token, u64) -> bool,
    ) -> Result<(), Denied> {
        let windows = &*self.windows;
        // The common sets, one or two counted rings: one CAS, inline, no dispatch on the
        // window's kind and no index arithmetic.
        match windows {
            [Window::Ring { ring, .. }] => return ring.charge(n, now).map(drop),
            [Window::Ring { ring: a, .. }, Window::Ring { ring: b, .. }] => {
                return self.pair.acquire(a, b, n, now);
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
            // `None`: no pair gives back, so no window here has a view.
            if let Some(d) = self.windows[i].wait_for(None, n, now) {
                denied = denied.later(d);
            }
            i = next(i);
        }
        denied
    }

    /// The planted `ChargeAsYouGo` (loom models only): each window charged in turn, nothing
    /// given back; two rings each by its own grant on its view of the pair's word.
    #[cfg(hotlimit_loom)]
    pub(crate) fn charge_as_you_go(&self, n: u64, now: u64) -> Result<(), Denied> {
        if let [Window::Ring { ring: a, .. }, Window::Ring { ring: b, .. }] = &*self.windows {
            return self.pair.charge_one_ring_at_a_time(a, b, n, now);
        }
        for w in self.windows.iter() {
            w.charge(n, now)?;
        }
        Ok(())
    }

    /// The planted `StaleFreeze` (loom models only): two rings' step with a roll that stores
    /// the pair's word as read; any other set as [`acquire`](Windows::acquire).
    #[cfg(hotlimit_loom)]
    pub(crate) fn acquire_stale_freeze(&self, n: u64, now: u64) -> Result<(), Denied> {
        if let [Window::Ring { ring: a, .. }, Window::Ring { ring: b, .. }] = &*self.windows {
            return self.pair.acquire_stale_freeze(a, b, n, now);
        }
        self.acquire(n, now)
    }

    /// The time from which no window counts a permit (0: none counted now).
    #[cfg(feature = "std")]
    pub(crate) fn idle_at(&self) -> u64 {
        self.each().map(|(w, h)| w.idle_at(h)).max().unwrap_or(0)
    }

    /// The denial a request for `n` ≥ 1 at `now` would get from the windows (`None`: every
    /// window has room). Reads only.
    pub(crate) fn wait_for(&self, n: u64, now: u64) -> Option<Denied> {
        self.each()
            .filter_map(|(w, h)| w.wait_for(h, n, now))
            .reduce(Denied::later)
    }

    /// `(remaining, reset ns)` at `now`: the fewest permits any window has left (a request for
    /// n is granted iff n ≤ this, called sequentially), and the latest time any window counts
    /// a permit until (every window full again).
    pub(crate) fn read_at(&self, now: u64) -> (u64, u64) {
        self.each()
            .map(|(w, h)| w.read_at(h, now))
            .fold((u64::MAX, 0), |(r, t), (wr, wt)| (r.min(wr), t.max(wt)))
    }

    /// The index of the window with the fewest permits left at `now` (the first of equals),
    /// and its `(remaining, reset ns)`: the window that binds.
    pub(crate) fn binding_at(&self, now: u64) -> (usize, u64, u64) {
        let mut best = (0, u64::MAX, 0);
        for (i, (w, h)) in self.each().enumerate() {
            let (r, t) = w.read_at(h, now);
            if r < best.1 {
                best = (i, r, t);
            }
        }
        best
    }
}

impl fmt::Debug for Windows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        /// A window with its decision word's place.
        struct Shown<'a>(&'a Window, Option<View<'a>>);
        impl fmt::Debug for Shown<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt_in(self.1, f)
            }
        }
        f.debug_list()
            .entries(self.each().map(|(w, h)| Shown(w, h)))
            .finish()
    }
}
