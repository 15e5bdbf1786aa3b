//! Where a ring's decision word lives: its own [`AtomicU64`] (every ring but a
//! [`MultiWindow`](crate::MultiWindow)'s pair), or a [`View`] of a pair's shared word
//! (`time/pair.rs`), which holds two rings' words with one count.
//!
//! The roll, its helpers, the slow path and the read-backs reach the word only through
//! [`StateCell`]: a load and a CAS with `AtomicU64`'s meaning, on a word in the ring's format
//! `{ granted, epoch, FROZEN }` (`time.rs`), whose epoch field keeps
//! [`EPOCH_MASK`](StateCell::EPOCH_MASK) bits. A view's CAS succeeds iff the ring's part of the
//! shared word (the count, its epoch bits, its flag) holds `current` at that instant, whatever
//! the other ring's part holds, and leaves the other part as it is: on the ring's part it is
//! exactly an `AtomicU64`'s CAS, so every step of the ring's protocol (freeze, thaw, the
//! checks that the word is unchanged) means what it means on a ring of its own.

use super::{slot_epoch, slot_prefix, HeadCell, TimeRing, HIGH};
use crate::sync::{AtomicU64, Ordering};

/// A ring's decision word: a load and a CAS, with `AtomicU64`'s orderings.
pub(in crate::sliding_window) trait StateCell {
    /// The epoch bits the word keeps (the ring compares `epoch & EPOCH_MASK` with them).
    const EPOCH_MASK: u64;

    fn load(&self, order: Ordering) -> u64;

    fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64>;

    /// As [`compare_exchange`](StateCell::compare_exchange), but may fail spuriously.
    #[inline(always)]
    fn compare_exchange_weak(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        self.compare_exchange(current, new, success, failure)
    }

    /// Step (3½) of a roll to bucket b under the frozen word `s`, after its snapshots are
    /// written and before `epoch` moves: whatever the cell keeps besides the word (a view:
    /// its ring's cached snapshots). False if `s` is no longer current (the roll is over).
    #[inline(always)]
    fn rolled<H: HeadCell>(&self, _ring: &TimeRing<H>, _s: u64, _b: u64) -> bool {
        true
    }
}

impl StateCell for AtomicU64 {
    const EPOCH_MASK: u64 = super::EPOCH_MASK;

    #[inline(always)]
    fn load(&self, order: Ordering) -> u64 {
        // The caller's ordering, on the ring's own word.
        AtomicU64::load(self, order)
    }

    #[inline(always)]
    fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        // The caller's orderings, on the ring's own word.
        AtomicU64::compare_exchange(self, current, new, success, failure)
    }

    #[inline(always)]
    fn compare_exchange_weak(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        // The caller's orderings, on the ring's own word.
        AtomicU64::compare_exchange_weak(self, current, new, success, failure)
    }
}

/// Where a pair's word keeps the shared count G (both rings count every grant).
pub(super) const G_BITS: u64 = !0 << HIGH;
/// The epoch bits a pair's word keeps per ring.
pub(super) const PAIR_EPOCH_MASK: u64 = (1 << 15) - 1;
/// Where ring 1's epoch bits start in a pair's word (ring 0's start at bit 2, as in a ring's
/// own word).
pub(super) const EPOCH1_SHIFT: u32 = 17;

/// One ring's view of a pair's word `{ G, epoch₁, epoch₀, FROZEN₁, FROZEN₀ }`: its count,
/// epoch bits and flag, in its own word's format, and the two cached snapshots its rolls keep
/// for the pair's fast path.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    pub(super) word: &'a AtomicU64,
    /// `{ P[x − q − 1], x }` and `{ P[x − q − 2], x }` for the ring's current bucket x, in a
    /// slot's format (`time/pair.rs`).
    pub(super) cache: &'a [AtomicU64; 2],
    /// 0 or 1.
    pub(super) ring: u8,
}

impl View<'_> {
    /// The ring's word in the pair's value `p`.
    #[inline(always)]
    pub(super) fn of(self, p: u64) -> u64 {
        if self.ring == 0 {
            p & (G_BITS | (PAIR_EPOCH_MASK << 2) | 1)
        } else {
            (p & G_BITS) | (((p >> EPOCH1_SHIFT) & PAIR_EPOCH_MASK) << 2) | ((p >> 1) & 1)
        }
    }

    /// `p` with the ring's part replaced by the ring word `w`, the other ring's as it is.
    #[inline(always)]
    pub(super) fn with(self, p: u64, w: u64) -> u64 {
        if self.ring == 0 {
            let own = G_BITS | (PAIR_EPOCH_MASK << 2) | 1;
            (p & !own) | (w & own)
        } else {
            let own = G_BITS | (PAIR_EPOCH_MASK << EPOCH1_SHIFT) | 2;
            (p & !own)
                | (w & G_BITS)
                | (((w >> 2) & PAIR_EPOCH_MASK) << EPOCH1_SHIFT)
                | ((w & 1) << 1)
        }
    }
}

impl StateCell for View<'_> {
    const EPOCH_MASK: u64 = PAIR_EPOCH_MASK;

    #[inline(always)]
    fn load(&self, order: Ordering) -> u64 {
        // The caller's ordering: a load of the view is a load of the pair's word.
        self.of(self.word.load(order))
    }

    /// Replaces the ring's part by `new` iff it holds `current`; the other ring's part is kept
    /// as the word holds it at the CAS. If the word's CAS fails only because the other ring's
    /// part moved (a roll of that ring), it is tried again on the value returned: a retry
    /// follows another call's progress, so the loop is lock-free. Never fails spuriously.
    fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        // The failure ordering: if the ring's part is not `current`, this load is the CAS's
        // failed read; otherwise the word's CAS below reads again (with `success` when it
        // succeeds).
        let mut p = self.word.load(failure);
        loop {
            let seen = self.of(p);
            if seen != current {
                return Err(seen);
            }
            // `success` / `failure`: the caller's, for the CAS it asked for: the whole word is
            // written, but the other ring's part is the value just read, unchanged.
            match self
                .word
                .compare_exchange(p, self.with(p, new), success, failure)
            {
                Ok(_) => return Ok(current),
                Err(q) => p = q,
            }
        }
    }

    /// Caches `{ P[b − q − 1], b }` and `{ P[b − q − 2], b }` (the snapshots a request in
    /// bucket b counts from, for off ≥ r and off < r), each by the discipline of
    /// `write_snapshots`: a CAS from the value loaded, made only while the word still holds
    /// the frozen `s`, so a stale helper's CAS fails (a later roll changed the value). Both
    /// snapshots are final here: every slot below b holds its P (invariant J for the slots
    /// below the old epoch, this roll's writes for the rest). A snapshot whose slot does not
    /// hold its bucket (the second one when r = 0: it is never used, and may lie below the
    /// ring) is left as it is: its old tag sends the fast path to the slow one.
    fn rolled<H: HeadCell>(&self, ring: &TimeRing<H>, s: u64, b: u64) -> bool {
        for (k, cached) in self.cache.iter().enumerate() {
            let y = b.wrapping_sub(ring.lag_buckets + 1 + k as u64);
            // Acquire: as in `decide` (the slot was written by this roll or an earlier one).
            let v = ring.slot(y).load(Ordering::Acquire);
            if slot_epoch(v) != y as u32 {
                continue;
            }
            let want = (u64::from(slot_prefix(v)) << HIGH) | u64::from(b as u32);
            loop {
                // Acquire: see the latest cached value before replacing it.
                let c = cached.load(Ordering::Acquire);
                if c == want {
                    break;
                }
                // Acquire: as in `write_snapshots`.
                if self.load(Ordering::Acquire) != s {
                    return false;
                }
                // AcqRel: publishes the cached snapshot to the fast path, which reads it after
                // acquiring the thawed word (and orders it before the thaw); fails if another
                // helper wrote it first.
                if cached
                    .compare_exchange(c, want, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    break;
                }
            }
        }
        true
    }
}
