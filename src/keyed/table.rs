//! The table behind [`Keyed`](crate::Keyed) for the states that fit one atomic word (GCRA: 8
//! bytes, `GcraPair`: 16): open addressing with every key's state and the key itself inline in
//! its slot, so that a lookup of an existing key reads one slot (one cache miss, where a map of
//! boxed entries takes a chain of two or three), and a grant is one CAS on the slot's word.
//!
//! # Layout
//!
//! The table is a directory of segments (at most about [`SEGMENT`] slots each), every one
//! behind an epoch-protected pointer ([`cell`]). A key's hash picks its segment and its home
//! slot in it ([`place_of`]: one multiply-shift of its top 32 bits); from there it probes
//! linearly, wrapping in the segment. A slot is `{ word, key }`: the word is the state with
//! its kind in the first half ([`inline`]: FREE, CLAIMED, live, MOVING,
//! INDIRECT, DEAD, SEALED), the key a write-once cell, written by the one creator that
//! claimed the slot.
//!
//! # Slots are written once per segment
//!
//! A slot goes FREE → CLAIMED → (live ⇄ MOVING ⇄ INDIRECT)* → DEAD, and never back to FREE: its
//! key never changes while the segment is in the directory. That is what makes an inline key
//! possible (a reader comparing a key never races its one write, which the slot's word
//! publishes: [`KeyCell`]), and it gives the probe
//! its invariant: *a key has at most one slot that is not DEAD, and it lies before the first
//! FREE slot on the key's path*. A new key takes the first FREE slot on its path by CAS; a
//! creator that loses that CAS looks again from the start, and a racing creator of the same key
//! then finds the winner's slot (the one before every FREE slot) instead of claiming another.
//! Dead slots are reclaimed, and a segment grows, by rebuilding it ([`rebuild`]): its live
//! keys are frozen and copied into a fresh segment sized for them, which replaces the old one
//! in the directory. For keys with no drop glue (integers, addresses, arrays and tuples of
//! them) and for `String` keys, in a table whose slots at full length would pass
//! [`GROW_ABOVE`] (a core's L2), a segment starts with [`FIRST_LEN`] slots, so that the table's
//! memory follows its keys, not its capacity (which bounds a segment's length). Other keys that
//! own memory start at the full length, since each growth would clone every key of the segment
//! again and scatter their bytes; so do small tables, which the cache holds whatever their
//! length and whose lookups are faster at the lower load (the guide has the figures).
//!
//! A `String` key is kept as a [`StrKey`](str_key): its bytes in the slot when it has at most
//! 23 (a lookup then reads no heap bytes, and a growth copies them), else a `Box<str>` (cloned
//! by a growth). The rest of the table sees keys only through [`KeyCell`]'s `matches`,
//! `duplicate` and [`Stored`].
//!
//! The protocol (creation, grants, evictions, rate changes, rebuilds) and its proofs are in
//! the [`guide`](crate::guide::keyed_table#keyed-the-inline-table); the admission paths that use the table
//! are `keyed/admit.rs`.

use alloc::boxed::Box;
use core::borrow::Borrow;
use core::hash::{BuildHasher, Hash};

use super::word::{inline, TatWord};
use super::KeyedState;
use crate::contention::Contention;
use crate::error::Denied;
use crate::sync::{Arc, AtomicU64, Ordering};

mod cell;
mod rebuild;
mod slow;
mod str_key;

use cell::{ByKey, KeyQuery};
pub(crate) use cell::{Guard, KeyCell, Lines, SegRef, Stored};
pub(crate) use slow::Host;
use str_key::Captured;
#[cfg(hotlimit_loom)]
#[doc(hidden)]
#[allow(unreachable_pub)] // re-exported by `keyed::planted`
pub mod planted;
#[cfg(hotlimit_loom)]
#[allow(unreachable_pub)] // re-exported by `keyed::planted`
pub use slow::Plant;

/// The slots a segment aims at: a rebuild copies at most this many keys while they wait.
#[cfg_attr(not(feature = "std"), allow(dead_code))]
pub(crate) const SEGMENT: usize = 1024;

/// The slots a segment of keys with no drop glue starts with (or its full length, if that is
/// less): it grows by rebuilds as its keys arrive, so that the table follows the keys rather
/// than the capacity.
#[cfg_attr(not(feature = "std"), allow(dead_code))]
const FIRST_LEN: usize = 64;

/// The size of a table's slots at full length (bytes) above which its segments grow with
/// their keys: 1 MiB, a core's L2 on common server parts. A smaller table is read from the
/// cache whatever its length, and its lookups are faster at the lower load of full-length
/// segments (`Keyed<u64>` at 1,000 keys, shuffled, 8 processes each: 18.1–20.3 ns a call
/// in 7 of 8 full-length against 18.5–27.0 growing, governor 28.5).
#[cfg_attr(not(feature = "std"), allow(dead_code))]
const GROW_ABOVE: usize = 1 << 20;

/// Slots per key of capacity, in tenths: 14, so the table is at most 71 % full of live keys
/// (linear probing: about 2.2 slots read per hit at full capacity) and 16 bytes per slot make
/// 22.4 bytes per `u64` key of capacity in full-length segments.
#[cfg_attr(not(feature = "std"), allow(dead_code))]
const SLOTS_PER_KEY_X10: usize = 14;

/// One slot: the key's state word and the key, written once by the creator that claimed it.
pub(crate) struct Slot<K, W> {
    pub(crate) word: W,
    pub(crate) key: KeyCell<K>,
}

// A `Gcra` slot on a `u64` key is the key and the word, nothing else: four to a cache line,
// none across two. (Not under loom, whose atomics and cells carry their own bookkeeping.)
#[cfg(not(hotlimit_loom))]
const _: () = assert!(core::mem::size_of::<Slot<u64, AtomicU64>>() == 16);

/// A segment: its slots, the configuration its live words run on (the default in force when it
/// was built), and its counters.
pub(crate) struct Segment<K, L: KeyedState> {
    pub(crate) cfg: Arc<L::Config>,
    pub(crate) slots: Lines<Slot<K, L::Word>>,
    /// Slots claimed since the segment was built (no longer FREE).
    pub(crate) used: AtomicU64,
    /// Slots that went DEAD since the segment was built.
    pub(crate) dead: AtomicU64,
    /// [`CURRENT`], [`REBUILDING`] (one thread holds it) or [`RETIRED`] (replaced).
    pub(crate) state: AtomicU64,
    /// Its keys are `String`s, kept as `StrKey`s ([`cell::is_string`]): for its drop, which
    /// cannot ask the key type.
    strs: bool,
}

impl<K, L: KeyedState> Drop for Segment<K, L> {
    fn drop(&mut self) {
        if !core::mem::needs_drop::<K>() {
            return;
        }
        for slot in self.slots.iter_mut() {
            // Relaxed: `&mut self`, no other thread left.
            let v = <L::Word as TatWord>::first(slot.word.load(Ordering::Relaxed)) & inline::V_MASK;
            if cell::holds_key(v) {
                // SAFETY: every slot claimed got its key right after its claim (`KeyCell`),
                // and a segment is dropped once.
                #[allow(unsafe_code)]
                unsafe {
                    slot.key.drop_key(self.strs);
                }
            }
        }
    }
}

/// A segment in the directory, not being rebuilt.
pub(crate) const CURRENT: u64 = 0;
/// A segment one thread is rebuilding.
pub(crate) const REBUILDING: u64 = 1;
/// A segment replaced by its rebuild: its slots are all frozen, sealed or dead.
pub(crate) const RETIRED: u64 = 2;

impl<K: 'static, L: KeyedState> Segment<K, L> {
    /// A segment of `len` FREE slots running on `cfg` (`None` for states kept in the map).
    pub(crate) fn new(cfg: Arc<L::Config>, len: usize) -> Option<Self> {
        let slots = Lines::try_new(len, || {
            Some(Slot {
                word: <L::Word as TatWord>::free()?,
                key: KeyCell::new(),
            })
        })?;
        Some(Segment {
            cfg,
            slots,
            used: AtomicU64::new(0),
            dead: AtomicU64::new(0),
            state: AtomicU64::new(CURRENT),
            strs: cell::is_string::<K>(),
        })
    }
}

/// What a probe for a key found on its path.
pub(crate) enum Probe<'s, K, A: TatWord> {
    /// The key's one slot that is not DEAD, and its word as read.
    Found(&'s Slot<K, A>, A::W),
    /// The key has no such slot; the first FREE slot on its path.
    Absent(usize),
    /// A slot on the path is claimed and its key not written yet, or sealed by a rebuild: look
    /// again shortly (from the directory).
    Busy,
    /// No FREE slot in the whole segment, and no slot for the key.
    Full,
}

/// The first (and only) slot of `key` that is not DEAD, on its path in `seg` from its home,
/// the slot its `spot` (see [`Table::locate`]) names in a segment of this length. Loads the
/// words with Acquire: a word that says its key is written publishes the key ([`KeyCell`]),
/// and a creator must see every eviction of the key's earlier states (their DEAD words)
/// before it reads the floor. (A plain load on x86; on the hit path the Relaxed load it
/// replaced bought nothing, the key cell's own Acquire flag came after it.) The hit path
/// probes with [`probe_by`], the same loop, and the same Acquire.
#[cfg_attr(not(feature = "std"), allow(dead_code))]
#[inline(always)]
pub(crate) fn probe<'s, K, L, Q>(
    seg: &'s Segment<K, L>,
    spot: u64,
    key: &Q,
) -> Probe<'s, K, L::Word>
where
    L: KeyedState,
    K: Borrow<Q> + 'static,
    Q: Hash + Eq + ?Sized,
{
    probe_with(seg, spot, key, Ordering::Acquire, false)
}

/// The segment and the spot of a key whose hash is `h`, in a table of `nseg` segments: one
/// multiply-shift of the hash's top 32 bits by `nseg`, whose high half is the segment and whose
/// low half (the fraction left) the spot, so that the top bits place the key as if the
/// segments were one array. Keys whose top bits spread evenly (consecutive integers under
/// the table's hasher, `seed.rs`) then spread evenly over every segment's slots; taking the
/// segment and the home from two different parts of the hash spread them, for some seeds,
/// worse than random keys (the guide's "Keyed: the inline table", *How consecutive keys
/// spread*).
#[inline(always)]
pub(crate) fn place_of(h: u64, nseg: usize) -> (usize, u64) {
    let t = (h >> 32) * nseg as u64;
    ((t >> 32) as usize, t & 0xFFFF_FFFF)
}

/// The home slot of a key whose spot is `spot` in a segment of `len` slots (multiply-shift).
#[inline(always)]
pub(crate) fn home(spot: u64, len: usize) -> usize {
    ((spot * len as u64) >> 32) as usize
}

/// [`probe`] with the loom models' planted bugs: with `pass_claimed`, a slot claimed whose key
/// is not written yet is passed as if it held another key; with `order` Relaxed, keys are read
/// after a load that does not publish them. The real protocol: Acquire, `false`.
#[inline(always)]
pub(crate) fn probe_with<'s, K, L, Q>(
    seg: &'s Segment<K, L>,
    spot: u64,
    key: &Q,
    order: Ordering,
    pass_claimed: bool,
) -> Probe<'s, K, L::Word>
where
    L: KeyedState,
    K: Borrow<Q> + 'static,
    Q: Hash + Eq + ?Sized,
{
    probe_by(seg, spot, &ByKey(key), order, pass_claimed)
}

/// [`probe_with`] for a key as a [`KeyQuery`] compares it: borrowed, or (the hit path of a
/// `String` table) its bytes [`Captured`].
#[inline(always)]
fn probe_by<'s, K, L, M>(
    seg: &'s Segment<K, L>,
    spot: u64,
    key: &M,
    order: Ordering,
    pass_claimed: bool,
) -> Probe<'s, K, L::Word>
where
    L: KeyedState,
    K: 'static,
    M: KeyQuery<K>,
{
    let n = seg.slots.len();
    let mut i = home(spot, n);
    for _ in 0..n {
        let slot = &seg.slots[i];
        // The caller's ordering: Acquire (see `probe`), but in a planted bug.
        let w = slot.word.load(order);
        let v = <L::Word as TatWord>::first(w) & inline::V_MASK;
        if v == inline::FREE {
            return Probe::Absent(i);
        }
        if cell::written(v) {
            // SAFETY: the word, loaded with Acquire, is live, MOVING or INDIRECT: the key was
            // written and its write happens before this read (`KeyCell`).
            #[allow(unsafe_code)]
            if unsafe { key.is_in(&slot.key) } {
                return Probe::Found(slot, w);
            }
        } else if v != inline::DEAD && (!pass_claimed || v != inline::CLAIMED) {
            // Claimed, its key being written (its creator cloned the key before claiming, so
            // it is one move away), or sealed: either way not ours to pass.
            return Probe::Busy;
        }
        i += 1;
        if i == n {
            i = 0;
        }
    }
    Probe::Full
}

/// A grant on a slot: what became of it.
pub(crate) enum Hit {
    Granted,
    Denied(Denied),
    /// The word is not live (frozen, indirect, dead, claimed): nothing was granted.
    NotLive,
}

/// Takes `permits` at `now` (after the base) on the slot word last read as `w`, running on
/// `cfg`: GCRA by one CAS of the whole word (its grant count one more); a denial returns before
/// any write. A lost CAS goes to [`grant_contended`], out of line, so that the uncontended
/// path holds no contention state.
#[inline(always)]
pub(crate) fn grant<L: KeyedState>(
    cfg: &L::Config,
    word: &L::Word,
    w: <L::Word as TatWord>::W,
    permits: u32,
    now: u64,
) -> Hit {
    if !inline::is_live(<L::Word as TatWord>::first(w)) {
        return Hit::NotLive;
    }
    let next = match L::word_decide(cfg, w, permits, now) {
        Ok(next) => next,
        Err(denied) => return Hit::Denied(denied),
    };
    // Relaxed (both): grants on a key are linearized by the CASes on its one word, as in
    // `Gcra`; a freeze or an eviction written meanwhile makes it fail.
    match word.cas_weak(w, next, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => Hit::Granted,
        Err(current) => grant_contended::<L>(cfg, word, current, permits, now),
    }
}

/// [`grant`] after its CAS lost to `current`: the crate's [`Contention`] policy, then decide
/// again, until the grant, a denial, or a word that is not live.
#[cold]
#[inline(never)]
fn grant_contended<L: KeyedState>(
    cfg: &L::Config,
    word: &L::Word,
    current: <L::Word as TatWord>::W,
    permits: u32,
    now: u64,
) -> Hit {
    let mut contention = Contention::new();
    // Relaxed (a reload after a pause): the grant needs the word only (its CAS checks it) and
    // reads no key after it; the loop checks the value again before it decides.
    let mut w = contention.lost(current, now, || word.load(Ordering::Relaxed));
    loop {
        if !inline::is_live(<L::Word as TatWord>::first(w)) {
            return Hit::NotLive;
        }
        let next = match L::word_decide(cfg, w, permits, now) {
            Ok(next) => next,
            Err(denied) => return Hit::Denied(denied),
        };
        // Relaxed (both): as in `grant`.
        match word.cas_weak(w, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return Hit::Granted,
            // Relaxed (a reload after a pause): as above.
            Err(current) => w = contention.lost(current, now, || word.load(Ordering::Relaxed)),
        }
    }
}

/// The inline table: a directory of segments, the hasher, and the base of its times.
pub(crate) struct Table<K, L: KeyedState, S> {
    segs: Box<[cell::Cell<Segment<K, L>>]>,
    /// Per segment, where its slots were last seen (address, length), for
    /// [`hit_clocked`](Table::hit_clocked), which prefetches the key's home slot from it
    /// before the epoch guard, the segment's load and the clock read. Outside the protocol
    /// (never modelled by loom): a stale value only fetches a line for nothing.
    hints: Box<[[crate::sync::HintU64; 2]]>,
    /// The slots a segment starts with ([`FIRST_LEN`], or `max_len` if less).
    first_len: usize,
    /// The most slots a segment may have (it grows by rebuilds up to this).
    max_len: usize,
    hasher: S,
    /// The clock reading at build: words hold times relative to it.
    pub(crate) base: u64,
    /// Whether the hit path prefetches the key's slot before it reads the clock
    /// ([`hit_clocked`](Table::hit_clocked)): in tables whose slots at full length pass
    /// [`GROW_ABOVE`], where a lookup's line is likely a miss.
    pub(crate) early: bool,
    /// The loom models' planted bug (`Plant::None` in the real protocol).
    #[cfg(hotlimit_loom)]
    pub(crate) plant: Plant,
}

impl<K, L: KeyedState, S> Table<K, L, S> {
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    /// A table for `capacity` keys, its times after `base`, every segment empty until its
    /// first key; `None` for states kept in the map (logs, windows).
    pub(crate) fn new(capacity: u64, hasher: S, base: u64) -> Option<Self>
    where
        K: 'static,
    {
        let (nseg, seg_len) = shape(capacity);
        // Keys that own memory (but `String`s, kept as `StrKey`s), and tables that fit a
        // core's cache at full length, start at the full length: see the module docs.
        let full = nseg
            .saturating_mul(seg_len)
            .saturating_mul(core::mem::size_of::<Slot<K, L::Word>>());
        let first =
            if (core::mem::needs_drop::<K>() && !cell::is_string::<K>()) || full <= GROW_ABOVE {
                seg_len
            } else {
                FIRST_LEN.min(seg_len)
            };
        let mut table = Self::with_shape(nseg, first, seg_len, hasher, base)?;
        table.early = full > GROW_ABOVE;
        Some(table)
    }

    /// A table of `nseg` segments that start with `first_len` slots and grow to at most
    /// `max_len` (the loom models' tiny tables).
    pub(crate) fn with_shape(
        nseg: usize,
        first_len: usize,
        max_len: usize,
        hasher: S,
        base: u64,
    ) -> Option<Self> {
        <L::Word as TatWord>::free()?;
        Some(Table {
            segs: (0..nseg).map(|_| cell::Cell::empty()).collect(),
            hints: (0..nseg).map(|_| Default::default()).collect(),
            first_len: first_len.clamp(1, max_len.max(1)),
            max_len,
            hasher,
            base,
            early: false,
            #[cfg(hotlimit_loom)]
            plant: Plant::None,
        })
    }

    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    /// The number of segments.
    pub(crate) fn segments(&self) -> usize {
        self.segs.len()
    }

    /// Segment `s` as it is in the directory now (`None` before its first key).
    #[inline(always)]
    pub(crate) fn segment<'g>(
        &self,
        s: usize,
        guard: &'g Guard,
    ) -> Option<SegRef<'g, Segment<K, L>>> {
        self.segs[s].load(guard)
    }

    /// Allocates segment `s` (FREE slots running on `cfg`) if it has none yet.
    pub(crate) fn ensure(&self, s: usize, cfg: &Arc<L::Config>)
    where
        K: 'static,
    {
        let guard = Guard::new();
        if self.segment(s, &guard).is_none() {
            if let Some(seg) = Segment::new(cfg.clone(), self.first_len) {
                // Another thread may have been first: then ours is dropped.
                let _ = self.segs[s].init(seg, &guard);
            }
        }
    }

    /// `now` after the base: `(relative now, how far before the base it was)`.
    #[inline(always)]
    pub(crate) fn relative(&self, now: u64) -> (u64, u64) {
        match now.checked_sub(self.base) {
            Some(rel) => (rel, 0),
            None => (0, self.base - now),
        }
    }

    /// The length of a segment rebuilt to hold `live` keys: twice the keys and two (half
    /// full, so that it grows again only after as many new keys again: a segment that fills
    /// from [`FIRST_LEN`] slots is rebuilt about six times on its way to a thousand keys), at
    /// least the first length, at most the most, and more slots than keys while that allows (a
    /// rebuild for want of a FREE slot below the most always makes one). `boxed`: one of the
    /// keys is a `String` too long for its slot; then the most at once, since each growth
    /// would clone that key's bytes again, scattering them (and leaving the old copies to the
    /// allocator).
    pub(crate) fn rebuilt_len(&self, live: usize, boxed: bool) -> usize {
        if boxed {
            return self.max_len.max(live);
        }
        live.saturating_mul(2)
            .saturating_add(2)
            .max(self.first_len)
            .min(self.max_len)
            .max(live)
    }

    /// Whether `seg` is worth rebuilding after a new key claimed a slot in it: below the most
    /// slots, once three quarters of its slots are used (it grows, or is compacted if many
    /// are dead); at the most, once seven eighths are used and an eighth are dead.
    pub(crate) fn worth_rebuilding(&self, seg: &Segment<K, L>) -> bool {
        let n = seg.slots.len() as u64;
        // Relaxed (both): hints.
        let used = seg.used.load(Ordering::Relaxed);
        if n < self.max_len as u64 {
            return used * 4 >= n * 3;
        }
        let dead = seg.dead.load(Ordering::Relaxed);
        used * 8 >= n * 7 && dead * 8 >= n
    }

    /// Whether `seg` may still grow (it has fewer than the most slots).
    pub(crate) fn can_grow(&self, seg: &Segment<K, L>) -> bool {
        seg.slots.len() < self.max_len
    }

    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    /// The bytes of the slots, segment headers, directory cells and hints once every segment
    /// has grown to its most slots (the table at its capacity), for the memory budget.
    pub(crate) fn bytes(capacity: u64) -> u128 {
        let (nseg, seg_len) = shape(capacity);
        let slot = core::mem::size_of::<Slot<K, L::Word>>() as u128;
        let per_segment = core::mem::size_of::<Segment<K, L>>()
            + core::mem::size_of::<cell::Cell<Segment<K, L>>>()
            + core::mem::size_of::<[crate::sync::HintU64; 2]>();
        nseg as u128 * (seg_len as u128 * slot + per_segment as u128)
    }
}

impl<K: Hash + Eq + 'static, L: KeyedState, S: BuildHasher> Table<K, L, S> {
    /// The segment of `key` and its spot, which names its home slot in a segment of any
    /// length ([`home`]: a segment's length changes when it grows): [`place_of`] its hash.
    #[inline(always)]
    pub(crate) fn locate<Q: Hash + ?Sized>(&self, key: &Q) -> (usize, u64) {
        place_of(self.hasher.hash_one(key), self.segs.len())
    }

    /// The hit path: `key`'s live slot, one CAS. `None`: anything else (a new key, a word that
    /// is not live, a `now` before the base): the slow path decides.
    #[inline(always)]
    pub(crate) fn hit<Q>(&self, key: &Q, permits: u32, now: u64) -> Option<Result<(), Denied>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let h = self.hasher.hash_one(key);
        if cell::is_string::<K>() {
            let mut c = Captured::new();
            c.capture(key);
            if c.is_str() {
                return self.hit_by(&c, h, permits, now);
            }
        }
        self.hit_by(&ByKey(key), h, permits, now)
    }

    /// [`hit`](Table::hit) for a key hashed to `h`, compared as `key`.
    #[inline(always)]
    fn hit_by<M: KeyQuery<K>>(
        &self,
        key: &M,
        h: u64,
        permits: u32,
        now: u64,
    ) -> Option<Result<(), Denied>> {
        let (s, spot) = place_of(h, self.segs.len());
        let guard = Guard::new();
        let seg = self.segment(s, &guard)?;
        self.hit_in(&seg, spot, key, permits, now)
    }

    /// [`hit`](Table::hit) reading the clock itself: the key's home slot, found from the
    /// segment's hint, is prefetched first, so that its miss (a table larger than the cache)
    /// overlaps the clock read, the epoch guard and the segment's load instead of following
    /// them. Then the real lookup, as `hit`'s, at the `now` read: `Err(now)` when the slow
    /// path decides. A stale hint (a segment rebuilt since) is corrected by the caller that
    /// finds it so.
    #[inline(always)]
    pub(crate) fn hit_clocked<Q>(
        &self,
        key: &Q,
        permits: u32,
        clock: impl FnOnce() -> u64,
    ) -> Result<Result<(), Denied>, u64>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let h = self.hasher.hash_one(key);
        if cell::is_string::<K>() {
            let mut c = Captured::new();
            c.capture(key);
            if c.is_str() {
                return self.hit_clocked_by(&c, h, permits, clock);
            }
        }
        self.hit_clocked_by(&ByKey(key), h, permits, clock)
    }

    /// [`hit_clocked`](Table::hit_clocked) for a key hashed to `h`, compared as `key`.
    #[inline(always)]
    fn hit_clocked_by<M: KeyQuery<K>>(
        &self,
        key: &M,
        h: u64,
        permits: u32,
        clock: impl FnOnce() -> u64,
    ) -> Result<Result<(), Denied>, u64> {
        let (s, spot) = place_of(h, self.segs.len());
        let hint = &self.hints[s];
        // Relaxed (both): a hint, outside the protocol; a stale or torn pair only prefetches
        // a line for nothing (a prefetch never faults, whatever the address).
        let base = hint[0].load(Ordering::Relaxed);
        let len = hint[1].load(Ordering::Relaxed);
        crate::sync::prefetch((base as usize).wrapping_add(
            home(spot, len as usize).wrapping_mul(core::mem::size_of::<Slot<K, L::Word>>()),
        ) as *const u8);
        let now = clock();
        let guard = Guard::new();
        let Some(seg) = self.segment(s, &guard) else {
            return Err(now);
        };
        let at = seg.slots.as_ptr() as u64;
        if at != base {
            // Relaxed (both): as above; the reader that finds the hint stale (a new or
            // rebuilt segment) sets it.
            hint[1].store(seg.slots.len() as u64, Ordering::Relaxed);
            hint[0].store(at, Ordering::Relaxed);
        }
        self.hit_in(&seg, spot, key, permits, now).ok_or(now)
    }

    /// [`hit`](Table::hit) in the key's segment, found.
    #[inline(always)]
    fn hit_in<M: KeyQuery<K>>(
        &self,
        seg: &Segment<K, L>,
        spot: u64,
        key: &M,
        permits: u32,
        now: u64,
    ) -> Option<Result<(), Denied>> {
        // Acquire: as in `probe`.
        #[cfg(not(hotlimit_loom))]
        let found = probe_by(seg, spot, key, Ordering::Acquire, false);
        #[cfg(hotlimit_loom)]
        let found = if self.plant == Plant::RelaxedKeyRead {
            // Planted: the keys read after a Relaxed load of their words.
            probe_by(seg, spot, key, Ordering::Relaxed, false)
        } else {
            // Acquire: as in `probe`.
            probe_by(seg, spot, key, Ordering::Acquire, false)
        };
        let Probe::Found(slot, w) = found else {
            return None;
        };
        let (now, behind) = self.relative(now);
        if behind > 0 {
            return None;
        }
        #[cfg(hotlimit_loom)]
        if self.plant == Plant::GrantByStore && inline::is_live(<L::Word as TatWord>::first(w)) {
            // Planted: decide on the value read, then store over whatever came since.
            return Some(L::word_decide(&seg.cfg, w, permits, now).map(|next| {
                let _ = slot.word.cas(
                    // Relaxed: deliberately broken (a store of the decided value).
                    slot.word.load(Ordering::Relaxed),
                    next,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }));
        }
        match grant::<L>(&seg.cfg, &slot.word, w, permits, now) {
            Hit::Granted => Some(Ok(())),
            Hit::Denied(denied) => Some(Err(denied)),
            Hit::NotLive => None,
        }
    }

    /// Puts `key` with word value `w` into a segment being built (no other thread sees it yet):
    /// the first FREE slot on its path.
    fn place(&self, seg: &Segment<K, L>, key: Stored<K>, w: <L::Word as TatWord>::W) {
        let (_, spot) = place_of(key.hash_with(&self.hasher), self.segs.len());
        let n = seg.slots.len();
        let mut i = home(spot, n);
        loop {
            let slot = &seg.slots[i];
            // Relaxed: the segment is not published yet; its publication (Release) orders
            // these writes before every reader's load of it.
            let free = slot.word.load(Ordering::Relaxed);
            if <L::Word as TatWord>::first(free) == inline::FREE {
                // Relaxed: as above (nobody else can write the slot, so this cannot fail).
                let _ = slot.word.cas(free, w, Ordering::Relaxed, Ordering::Relaxed);
                // SAFETY: the segment is ours alone until its publication, which orders this
                // write before every reader's.
                #[allow(unsafe_code)]
                unsafe {
                    slot.key.write(key);
                }
                // Relaxed: a counter of this (unpublished) segment.
                seg.used.fetch_add(1, Ordering::Relaxed);
                return;
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
    }
}

#[cfg_attr(not(feature = "std"), allow(dead_code))]
/// `(segments, slots per segment)` for `capacity` keys: at least 1.4 slots per key (and 4
/// more, so a tiny table has room for a dead slot or two before it is rebuilt), in segments
/// of about [`SEGMENT`] slots.
pub(crate) fn shape(capacity: u64) -> (usize, usize) {
    let slots = (capacity as usize)
        .saturating_mul(SLOTS_PER_KEY_X10)
        .div_ceil(10)
        .saturating_add(4);
    let nseg = slots.div_ceil(SEGMENT).max(1);
    (nseg, slots.div_ceil(nseg))
}

/// The counters of `seg` after a slot went DEAD there.
pub(crate) fn count_dead<K, L: KeyedState>(seg: &Segment<K, L>) {
    // Relaxed: a hint for when to rebuild.
    seg.dead.fetch_add(1, Ordering::Relaxed);
}
