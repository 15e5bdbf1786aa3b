//! The one-word per-key states of [`Keyed`](crate::Keyed): [`TatWord`], the atomic word a GCRA
//! state lives in (`Gcra`'s 8-byte TAT, `GcraPair`'s 16-byte pair of TATs), over which every
//! protocol step is written once, and the layout of that word when the key's state sits
//! inline in the table ([`inline`]).

use crate::sync::{AtomicU128, AtomicU64, Ordering};

pub(crate) use sealed::{NoWord, PairWord, TatWord, WordOf};

mod sealed {
    // `pub` in a private module: named in `KeyedState`'s (hidden) associated type, never
    // reachable from outside the crate.
    #![allow(unreachable_pub)]
    use super::*;

    /// A per-key GCRA state word: `Gcra`'s 8-byte TAT, or `GcraPair`'s 16-byte word of two. Its
    /// first half holds the markers (a map entry's pending / moving / evicted, or an inline
    /// slot's [`inline`] kinds); every protocol step (grant, retire, the markers' checks) is the
    /// same on both, written once over this trait. [`NoWord`] stands for the states that are never
    /// kept in one word (sliding logs and windows): it has no value, so nothing can be done
    /// with it, and `Keyed` builds no inline table for them.
    pub trait TatWord: Send + Sync + Sized {
        /// The word's value.
        type W: Copy + Eq;
        /// A new word holding `w`.
        fn new(w: Self::W) -> Self;
        /// An inline table's never-used word ([`inline::FREE`]), or `None` where states are not
        /// kept inline.
        fn free() -> Option<Self>;
        /// The first half of a value: the one the markers live in.
        fn first(w: Self::W) -> u64;
        /// The second half (0 for an 8-byte word).
        fn second(w: Self::W) -> u64;
        /// The value `{ second, first }` of the same word type as `w` (`second` ignored by an
        /// 8-byte word). Every value is made from one at hand, so that [`NoWord`] needs none.
        fn set(w: Self::W, first: u64, second: u64) -> Self::W;
        /// The value a retire installs: the marker in the first half (the rest zero).
        #[inline(always)]
        fn marker(w: Self::W, marker: u64) -> Self::W {
            Self::set(w, marker, 0)
        }
        /// The latest of a map entry's TATs: the key is idle from then.
        #[inline(always)]
        fn idle_at(w: Self::W) -> u64 {
            Self::first(w).max(Self::second(w))
        }
        /// The atomic load, with the caller's ordering.
        fn load(&self, order: Ordering) -> Self::W;
        /// The atomic weak CAS, with the caller's orderings.
        fn cas_weak(
            &self,
            current: Self::W,
            new: Self::W,
            success: Ordering,
            failure: Ordering,
        ) -> Result<Self::W, Self::W>;
        /// The atomic strong CAS, with the caller's orderings.
        fn cas(
            &self,
            current: Self::W,
            new: Self::W,
            success: Ordering,
            failure: Ordering,
        ) -> Result<Self::W, Self::W>;
    }

    // `inline(always)` on each method of the impls: the orderings are the callers' constants only
    // once inlined; an outlined `load`/`cas_weak` turns each atomic into a match over orderings
    // (Keyed-u64's grant measured 210 instructions instead of 159 under callgrind).
    impl TatWord for AtomicU64 {
        type W = u64;
        #[inline(always)]
        fn new(w: u64) -> Self {
            AtomicU64::new(w)
        }
        #[inline(always)]
        fn free() -> Option<Self> {
            Some(AtomicU64::new(inline::FREE))
        }
        #[inline(always)]
        fn first(w: u64) -> u64 {
            w
        }
        #[inline(always)]
        fn second(_: u64) -> u64 {
            0
        }
        #[inline(always)]
        fn set(_: u64, first: u64, _: u64) -> u64 {
            first
        }
        #[inline(always)]
        fn load(&self, order: Ordering) -> u64 {
            // The caller's ordering: each call site says why.
            AtomicU64::load(self, order)
        }
        #[inline(always)]
        fn cas_weak(&self, current: u64, new: u64, s: Ordering, f: Ordering) -> Result<u64, u64> {
            // The caller's orderings: each call site says why.
            self.compare_exchange_weak(current, new, s, f)
        }
        #[inline(always)]
        fn cas(&self, current: u64, new: u64, s: Ordering, f: Ordering) -> Result<u64, u64> {
            // The caller's orderings: each call site says why.
            self.compare_exchange(current, new, s, f)
        }
    }

    /// `GcraPair`'s per-key word: the crate's 16-byte atomic, in a newtype (under loom that
    /// atomic is a stand-in private to the crate).
    #[derive(Debug)]
    pub struct PairWord(pub(crate) AtomicU128);

    impl TatWord for PairWord {
        type W = u128;
        #[inline(always)]
        fn new(w: u128) -> Self {
            PairWord(AtomicU128::new(w))
        }
        #[inline(always)]
        fn free() -> Option<Self> {
            Some(PairWord(AtomicU128::new(crate::gcra_pair::join(
                inline::FREE,
                0,
            ))))
        }
        #[inline(always)]
        fn first(w: u128) -> u64 {
            crate::gcra_pair::split(w).0
        }
        #[inline(always)]
        fn second(w: u128) -> u64 {
            crate::gcra_pair::split(w).1
        }
        #[inline(always)]
        fn set(_: u128, first: u64, second: u64) -> u128 {
            crate::gcra_pair::join(first, second)
        }
        #[inline(always)]
        fn load(&self, order: Ordering) -> u128 {
            // The caller's ordering: each call site says why.
            self.0.load(order)
        }
        #[inline(always)]
        fn cas_weak(
            &self,
            current: u128,
            new: u128,
            s: Ordering,
            f: Ordering,
        ) -> Result<u128, u128> {
            // The caller's orderings: each call site says why.
            self.0.compare_exchange_weak(current, new, s, f)
        }
        #[inline(always)]
        fn cas(&self, current: u128, new: u128, s: Ordering, f: Ordering) -> Result<u128, u128> {
            // The caller's orderings: each call site says why.
            self.0.compare_exchange(current, new, s, f)
        }
    }

    /// The word of the states that are never kept in one word (sliding logs and windows): it has
    /// no values, so no code that takes one can run, and [`TatWord::free`] is `None`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum NoWord {}

    impl TatWord for NoWord {
        type W = NoWord;
        fn new(w: NoWord) -> Self {
            w
        }
        fn free() -> Option<Self> {
            None
        }
        fn first(w: NoWord) -> u64 {
            match w {}
        }
        fn second(w: NoWord) -> u64 {
            match w {}
        }
        fn set(w: NoWord, _: u64, _: u64) -> NoWord {
            match w {}
        }
        fn load(&self, _: Ordering) -> NoWord {
            match *self {}
        }
        fn cas_weak(
            &self,
            _: NoWord,
            _: NoWord,
            _: Ordering,
            _: Ordering,
        ) -> Result<NoWord, NoWord> {
            match *self {}
        }
        fn cas(&self, _: NoWord, _: NoWord, _: Ordering, _: Ordering) -> Result<NoWord, NoWord> {
            match *self {}
        }
    }

    /// The value type of `L`'s inline word.
    pub type WordOf<L> = <<L as crate::keyed::KeyedState>::Word as TatWord>::W;
}

/// The first half of a key's word when its state sits inline in [`Keyed`](crate::Keyed)'s
/// table (`Gcra`, `GcraPair`): `{ ret: 2 bits, v: 62 bits }`, times in ns after the table's
/// base (its clock at build), so 2^62 ns (146 years) of range whatever the clock's origin.
///
/// ```text
/// v ≤ MAX_TAT            live: v is the (first) TAT; ret counts the grants since the state
///                        was committed that found it idle, saturating at 3 (2 and more: a
///                        returning key)
/// v = FREE               never claimed in this segment (ret 0, second half 0)
/// v = CLAIMED            claimed by a new key's creator, which is writing the key and
///                        reserving a place (then LIVE, INDIRECT or DEAD)
/// v = MOVING             frozen by a rate change or a rebuild of the segment
/// v = INDIRECT           the key's state is in the map (a key with a rate override)
/// v = DEAD               evicted (or given up by its creator): skipped, never live again
/// v = SEALED             a FREE slot closed by a rebuild of the segment
/// ```
///
/// For `GcraPair` the second half is S₂ when live, 0 with a marker.
pub(crate) mod inline {
    /// The value bits.
    pub(crate) const V_MASK: u64 = (1 << 62) - 1;
    /// Where the grant count sits.
    const RET_SHIFT: u32 = 62;
    /// The grant count that marks a returning key.
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) const RETURNING: u64 = 2;
    pub(crate) const SEALED: u64 = V_MASK;
    pub(crate) const DEAD: u64 = V_MASK - 1;
    pub(crate) const INDIRECT: u64 = V_MASK - 2;
    pub(crate) const MOVING: u64 = V_MASK - 3;
    pub(crate) const CLAIMED: u64 = V_MASK - 4;
    pub(crate) const FREE: u64 = V_MASK - 5;
    /// The largest TAT a live state can hold: a grant that would pass it is denied as never.
    pub(crate) const MAX_TAT: u64 = V_MASK - 6;

    /// Whether a first half is live (a TAT, not a marker).
    #[inline(always)]
    pub(crate) fn is_live(first: u64) -> bool {
        first & V_MASK <= MAX_TAT
    }

    /// The TAT of a live first half.
    #[inline(always)]
    pub(crate) fn tat(first: u64) -> u64 {
        first & V_MASK
    }

    /// The grant count of a live first half (0 to 3).
    #[inline(always)]
    pub(crate) fn grants(first: u64) -> u64 {
        first >> RET_SHIFT
    }

    /// The grant count after a grant at `now` on the live first half `first`: one more if
    /// the state was idle (full again: its TAT ≤ `now`), else as it was. A key counts as
    /// returning ([`RETURNING`]) only once it came back after going idle, at least one
    /// emission interval after its first grant: a flood key sent twice (or five times) in a
    /// row is still one-shot, while a client under its limit is idle between requests
    /// (issue 42: repeating each flood key twice refused a steady client 25 of 41 times).
    #[inline(always)]
    pub(crate) fn counted(first: u64, now: u64) -> u64 {
        grants(first) + u64::from(tat(first) <= now)
    }

    /// A live first half: `tat` (≤ [`MAX_TAT`]) after `grants` grants (saturating at 3).
    #[inline(always)]
    pub(crate) fn live(tat: u64, grants: u64) -> u64 {
        debug_assert!(tat <= MAX_TAT);
        (grants.min(3) << RET_SHIFT) | tat
    }
}

/// The inline-word items of a [`KeyedState`](super::KeyedState) whose states are kept in the
/// map (sliding logs and windows): the word is [`NoWord`], which has no value, so none of them
/// can be called (`Keyed` builds no table for these states).
macro_rules! no_word {
    () => {
        type Word = $crate::keyed::word::NoWord;
        fn word_decide(
            _: &Self::Config,
            w: $crate::keyed::word::NoWord,
            _: u32,
            _: u64,
        ) -> Result<$crate::keyed::word::NoWord, $crate::error::Denied> {
            match w {}
        }
        fn word_rerate(
            _: &Self::Config,
            _: &Self::Config,
            w: $crate::keyed::word::NoWord,
            _: u64,
        ) -> $crate::keyed::word::NoWord {
            match w {}
        }
        fn word_carry(
            _: &Self::Config,
            w: $crate::keyed::word::NoWord,
            _: u64,
            _: u64,
        ) -> Self::Carry {
            match w {}
        }
        fn word_carried(
            _: &Self::Config,
            _: Self::Carry,
            _: u64,
            _: u64,
            like: $crate::keyed::word::NoWord,
        ) -> $crate::keyed::word::NoWord {
            match like {}
        }
    };
}
pub(crate) use no_word;
