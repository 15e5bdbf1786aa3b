//! Two counted rings with one decision word: a [`MultiWindow`](crate::MultiWindow) of
//! exactly two rings grants by **one CAS that counts in both**, all or nothing, with no
//! give-back.
//!
//! # Words
//!
//! ```text
//! word:     { granted: G mod 2^32 (bits 63..32), epoch₁: x₁ mod 2^15 (bits 31..17),
//!             epoch₀: x₀ mod 2^15 (bits 16..2), FROZEN₁ (bit 1), FROZEN₀ (bit 0) }
//! cache[i]: [ { P_i[x_i − q_i − 1], x_i mod 2^32 }, { P_i[x_i − q_i − 2], x_i mod 2^32 } ]
//! ```
//!
//! Every grant of the pair counts in both rings, and nothing else changes a ring's count (a
//! roll keeps it, and there is no give-back), so the two rings' counts G are always equal:
//! the word keeps it once. Ring i's word, `{ G, x_i, FROZEN_i }` in its own format with 15
//! epoch bits, is its [`View`]; each ring keeps its own `epoch`, `target`, snapshots and
//! limit. `cache[i]` holds the two snapshots a request in ring i's current bucket counts from
//! (off ≥ r and off < r), tagged with that bucket, written by every roll of ring i after its
//! snapshots and before its `epoch` moves ([`View::rolled`](super::cell::View)). Initially
//! the word is 0 (G = 0, both rings at bucket 0, unfrozen) and each cached snapshot is
//! `{ 0, 0 }` (P = 0 below bucket 0).
//!
//! # The steps
//!
//! - **Grant** (fast path): one load of the word s, the two epochs x₀ and x₁, one compare
//!   (both rings unfrozen, both epochs' low bits as in s); for each ring, `now` in its current
//!   bucket (off = now − x_i·w_i < w_i), its cached snapshot for that offset tagged x_i, and
//!   G − P + n ≤ limit_i; then one CAS of the word from s to s + n·2^32. That is exactly each
//!   ring's own grant (`decide`: the cached snapshot is the slot it would read, copied by the
//!   roll that opened bucket x_i), both on the one word s: if the CAS succeeds, both rings
//!   were unfrozen at those buckets with those counts when it did, and the request counts in
//!   both; if it fails, in neither.
//! - **Everything else** (a roll, a stale view, a denial and its wait, a lost CAS): each
//!   ring's own code on its [`View`] (`time/cell.rs`), which reads and CASes only the ring's
//!   part of the word. A roll of ring 0 freezes and thaws ring 0's part only; a grant that
//!   read the word before the freeze fails its CAS (the word changed) and decides again.
//!
//! Seen from one ring, its view changes exactly as its own decision word would: by grants
//! (each validated on that view: unfrozen, at that ring's epoch, with its snapshot and
//! limit), by its freezes and by its thaws, and by nothing else (the other ring's steps
//! leave it as it is). So every invariant and bound of the strict ring holds for each ring,
//! with 15 epoch bits instead of 30 (the guide,
//! [`multi_window`](crate::guide::multi_window)), and both rings count the same grants.
//!
//! Ring 0 is the window added first.

use super::cell::{View, EPOCH1_SHIFT, PAIR_EPOCH_MASK};
use super::*;
use crate::sliding_window::KeyWindow;

/// The pair's word and cached snapshots.
pub(crate) struct PairWord {
    word: AtomicU64,
    cache: [[AtomicU64; 2]; 2],
}

impl PairWord {
    /// Both rings fresh: G = 0, both at bucket 0, unfrozen; P = 0 below bucket 0.
    pub(crate) fn new() -> PairWord {
        let fresh = || [AtomicU64::new(0), AtomicU64::new(0)];
        PairWord {
            word: AtomicU64::new(0),
            cache: [fresh(), fresh()],
        }
    }

    /// Ring `i`'s view (0: the first window, else the second).
    #[inline(always)]
    pub(crate) fn view(&self, i: usize) -> View<'_> {
        let ring = u8::from(i != 0);
        View {
            word: &self.word,
            cache: &self.cache[usize::from(ring)],
            ring,
        }
    }

    /// Takes `n` ≥ 1 permits at `now` in ring `a` (ring 0) and ring `b` (ring 1), or in
    /// neither. Denied with the later of the two rings' waits (each exact, called
    /// sequentially), or never if `n` exceeds either limit.
    #[inline(always)]
    pub(crate) fn acquire(
        &self,
        a: &KeyWindow,
        b: &KeyWindow,
        n: u64,
        now: u64,
    ) -> Result<(), Denied> {
        let (a, b) = (&a.ring, &b.ring);
        // Acquire: pairs with the thaw (AcqRel) that opened each ring's bucket, or a grant
        // (Release) after it: each ring's epoch and cached snapshots written before its thaw
        // are visible (as a ring's own load of its word).
        let s = self.word.load(Ordering::Acquire);
        // Relaxed (both): ordered after the Acquire load of `s`, and checked against it.
        let x0 = a.head.epoch().load(Ordering::Relaxed);
        let x1 = b.head.epoch().load(Ordering::Relaxed);
        // Both unfrozen, and both epochs' low bits as in `s`: one compare of the low half.
        let expected =
            ((x0 & PAIR_EPOCH_MASK) << EPOCH_SHIFT) | ((x1 & PAIR_EPOCH_MASK) << EPOCH1_SHIFT);
        let seen = 'slow: {
            if s as u32 != expected as u32
                || !a.cached_room(&self.cache[0], s, x0, n, now)
                || !b.cached_room(&self.cache[1], s, x1, n, now)
            {
                break 'slow None;
            }
            // Release: whoever acquires the new word sees the epochs and snapshots both
            // decisions saw (as a ring's grant). Acquire on failure: the word returned is the
            // next view. The grant, in both rings.
            match self.word.compare_exchange_weak(
                s,
                s.wrapping_add(n << HIGH),
                Ordering::Release,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(()),
                Err(current) => Some(current),
            }
        };
        self.acquire_slow(a, b, n, now, seen)
    }

    /// [`acquire`](PairWord::acquire) after its fast path failed (a roll, a stale view, a
    /// denial, a lost CAS): each ring's full decision on its view, then the word's CAS.
    #[cold]
    #[inline(never)]
    fn acquire_slow(
        &self,
        a: &TimeRing<Plain>,
        b: &TimeRing<Plain>,
        n: u64,
        now: u64,
        seen: Option<u64>,
    ) -> Result<(), Denied> {
        if n > a.limit() || n > b.limit() {
            // Never, and without moving either window.
            return Err(Denied::never());
        }
        let (v0, v1) = (self.view(0), self.view(1));
        let mut contention = Contention::new();
        // Acquire (the load, and a reload after a pause): as in `acquire`. A word returned by
        // a failed CAS is used as it is, as a ring's own loop does.
        let mut p = match seen {
            Some(current) => contention.lost(current, now, || self.word.load(Ordering::Acquire)),
            None => self.word.load(Ordering::Acquire),
        };
        loop {
            // Each ring's own step on its view: a grant (its word plus n), a denial (its wait
            // decided on that view, re-checked unchanged), or a retry after a roll it began or
            // helped, or a stale view.
            let r0 = a.attempt(&v0, v0.of(p), n, now);
            let r1 = match r0 {
                Err(Miss::Retry) => Err(Miss::Retry),
                _ => b.attempt(&v1, v1.of(p), n, now),
            };
            match (r0, r1) {
                (Ok(_), Ok(_)) => {}
                (Err(Miss::Retry), _) | (_, Err(Miss::Retry)) => {
                    contention.wait();
                    // Acquire: as in `acquire`.
                    p = self.word.load(Ordering::Acquire);
                    continue;
                }
                (Err(Miss::Denied(d)), Ok(_)) | (Ok(_), Err(Miss::Denied(d))) => return Err(d),
                (Err(Miss::Denied(d0)), Err(Miss::Denied(d1))) => return Err(d0.later(d1)),
            }
            // Release / Acquire on failure: as in `acquire`. Both rings grant on `p`: G + n in
            // both.
            match self.word.compare_exchange_weak(
                p,
                p.wrapping_add(n << HIGH),
                Ordering::Release,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(()),
                // Acquire (a reload after a pause): as in `acquire`.
                Err(current) => {
                    p = contention.lost(current, now, || self.word.load(Ordering::Acquire));
                }
            }
        }
    }

    /// The planted twin of [`acquire`](PairWord::acquire) (loom models only): each ring
    /// charged by its own grant on its view, one after the other, and nothing given back. A
    /// call that ring 1 refuses stays counted (the count is shared: in both rings).
    #[cfg(hotlimit_loom)]
    pub(crate) fn charge_one_ring_at_a_time(
        &self,
        a: &KeyWindow,
        b: &KeyWindow,
        n: u64,
        now: u64,
    ) -> Result<(), Denied> {
        a.ring.acquire_slow(&self.view(0), n, now, None)?;
        b.ring.acquire_slow(&self.view(1), n, now, None)?;
        Ok(())
    }

    /// The planted twin of [`acquire`](PairWord::acquire) (loom models only) whose roll
    /// freezes a ring by writing the word as it read it (that ring's part frozen, the
    /// count and the other ring's part as read) instead of a CAS: a grant made in between is
    /// lost from both rings.
    #[cfg(hotlimit_loom)]
    pub(crate) fn acquire_stale_freeze(
        &self,
        a: &KeyWindow,
        b: &KeyWindow,
        n: u64,
        now: u64,
    ) -> Result<(), Denied> {
        // Acquire: as in `acquire`.
        let p = self.word.load(Ordering::Acquire);
        for (i, ring) in [&a.ring, &b.ring].into_iter().enumerate() {
            let v = self.view(i);
            let s = v.of(p);
            // Relaxed: as in `attempt`.
            let x = ring.head.epoch().load(Ordering::Relaxed);
            let bucket = now / ring.width;
            if s & FROZEN != 0 || x & PAIR_EPOCH_MASK != state_epoch(s) || bucket <= x {
                continue;
            }
            // AcqRel / Acquire: as in `roll` (the target as the real roll picks it).
            let t = match ring.head.target().compare_exchange(
                x,
                bucket,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => bucket,
                Err(current) => current,
            };
            if t <= x {
                continue;
            }
            let frozen = state_word(granted(s), t & PAIR_EPOCH_MASK, true);
            // Deliberately broken: the word as read is written over whatever it holds now (a
            // CAS from the current value, so a store).
            let stale = v.with(p, frozen);
            // Acquire (the load and the CAS's failure) / AcqRel: the real freeze's.
            let mut current = self.word.load(Ordering::Acquire);
            while let Err(seen) =
                self.word
                    .compare_exchange(current, stale, Ordering::AcqRel, Ordering::Acquire)
            {
                current = seen;
            }
            ring.help(&v, frozen);
        }
        self.acquire_slow(&a.ring, &b.ring, n, now, None)
    }
}

impl TimeRing<Plain> {
    /// Whether ring `self`, at the pair's word `s` and its epoch `x` (checked against `s` by
    /// the caller), has room for `n` at `now` by its cached snapshot: `decide`'s test with the
    /// snapshot copied into `cache` by the roll that opened bucket x. False for anything else
    /// (`now` outside bucket x, a snapshot not tagged x, no room): the slow path decides.
    #[inline(always)]
    fn cached_room(&self, cache: &[AtomicU64; 2], s: u64, x: u64, n: u64, now: u64) -> bool {
        // x = ⌊t / w⌋ for a time t some call brought: no overflow. A `now` behind the bucket
        // wraps to a huge offset.
        let off = now.wrapping_sub(x * self.width);
        if off >= self.width {
            return false;
        }
        // Relaxed: ordered after the Acquire load of `s`, and checked by its tag: a value
        // tagged x was written by the roll that opened bucket x (whose thaw `s` follows) or
        // by its helpers, with the same value. The first cached snapshot, or the second:
        // f − 1 = x − q − 1 − [off < r].
        let c = cache[usize::from(off < self.lag_rest)].load(Ordering::Relaxed);
        slot_epoch(c) == x as u32
            && u64::from(granted(s).wrapping_sub(slot_prefix(c))) + n <= self.limit()
    }
}

/// The steps of a [`MultiWindow`](crate::MultiWindow)'s read-back on a ring whose decision
/// word is a [`View`] of a [`PairWord`].
impl KeyWindow {
    /// As [`read_at`](KeyWindow::read_at), the decision word in `view`.
    pub(crate) fn read_at_in(&self, view: View<'_>, now: u64) -> (u64, u64) {
        self.ring.read_at_in(&view, now)
    }

    /// As [`wait_for`](KeyWindow::wait_for), the decision word in `view`.
    pub(crate) fn wait_for_in(&self, view: View<'_>, n: u64, now: u64) -> Option<Denied> {
        self.ring.wait_for_in(&view, n, now)
    }

    /// As [`counted`](KeyWindow::counted), the decision word in `view`.
    #[cfg(feature = "std")]
    pub(crate) fn counted_in<'a>(
        &'a self,
        view: View<'a>,
    ) -> impl Iterator<Item = (u64, u64)> + 'a {
        let width = self.width;
        // (As `counted`.)
        self.ring
            .counted_buckets_in(&view)
            .map(move |(y, k)| (y.saturating_add(1).saturating_mul(width) - 1, k))
    }

    /// The granted count (mod 2^32) and the current bucket, for `Debug`, the decision word in
    /// `view`.
    pub(crate) fn debug_words_in(&self, view: View<'_>) -> (u64, u64) {
        self.ring.debug_words_in(&view)
    }
}
