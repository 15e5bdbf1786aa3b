//! [`EmptyHint`]: one word that tells a single-permit denial "no shard can grant before t",
//! so that under overload a denial reads its home shard and this word instead of every shard.
//!
//! A full denial (every shard read and found empty) publishes the earliest time any shard
//! frees a permit, t = min_k (S_k − τ_k + I_k). Shard states only grow under grants, so t
//! stays a lower bound for as long as no state goes *down*: only a give-back (a split request
//! undoing its takes) or a rate change (new parameters) lowers one, and each of them
//! *announces* itself in the word before it lowers anything and *retires* after. The word:
//!
//! ```text
//! below 2^63:  t                                        a hint: no single permit before t
//! from 2^63:   { no_hint: 1, stamp: 39, active: 24 }    no hint; `active` lowerings under way
//! ```
//!
//! Every write of a no-hint value carries a fresh `stamp` (a counter of its own), so the word
//! never holds the same no-hint value twice (until 2^39 announcements and retirements wrap
//! the stamp while one publisher is held up between two of its steps). A publisher first turns
//! an expired hint into a fresh no-hint value, reads the word (Acquire), reads the shards, and
//! installs t by a CAS from the no-hint value it read, and only if that value showed no
//! lowering under way. So a published t was computed from shard states that no lowering
//! announced before it has lowered since: a lowering either retired before the publisher read
//! the word (the retirement's Release, continued by every later RMW on the word, makes the
//! lowered state visible to the shard reads that follow) or announced after it (the CAS then
//! fails, or the announcement overwrites t before anything is lowered). Hence:
//!
//! - **While the word holds t, every shard's state is at least the one t was computed from**:
//!   a single-permit request at `now` < t cannot be granted by any shard. Its wait is t − now
//!   exactly when some shard still frees its first permit at t (its state unchanged since):
//!   the denial checks that on its home shard, whose state it has just read, or on the shard
//!   the publisher found earliest (a guess kept beside the word: any shard that frees a permit
//!   at exactly t proves the minimum is t, so a stale guess only costs the full path). A
//!   grant made since at a later `now` (a caller whose clock went back, or out-of-order
//!   `now`s passed in) moves that shard on, and the denial takes the full path: `retry_after`
//!   stays exact. The denial reads two or three lines and writes nothing.
//! - **No hint outlives a lowering**: once a give-back or rate change has retired, the word
//!   holds no t computed from a state it lowered. The loom model `stale_hint_is_caught` runs
//!   the give-back without the announcement and finds a request denied by a hint while a shard
//!   holds a permit.
//!
//! Publishing writes a line apart from the shards, once per hint (a denial that found every
//! shard empty while no live hint said so); under steady overload the next denials read it.

use crate::sync::{AtomicU64, Ordering};

/// Values from here up are "no hint".
const NO_HINT: u64 = 1 << 63;
/// The bits of a no-hint value that count the lowerings under way.
const ACTIVE_BITS: u32 = 24;
const ACTIVE: u64 = (1 << ACTIVE_BITS) - 1;
/// The stamp's bits, below the no-hint bit and above the count.
const STAMP_MASK: u64 = (NO_HINT - 1) >> ACTIVE_BITS;

/// The hint word, the counter its no-hint values are stamped from, and the guess of a shard
/// that frees its first permit at the hint's time.
pub(super) struct EmptyHint {
    word: AtomicU64,
    stamps: AtomicU64,
    earliest: AtomicU64,
}

impl EmptyHint {
    /// No hint, nothing under way.
    pub(super) fn new() -> Self {
        EmptyHint {
            word: AtomicU64::new(NO_HINT),
            stamps: AtomicU64::new(0),
            earliest: AtomicU64::new(0),
        }
    }

    /// The time before which no shard can grant a single permit, if a live hint says it is
    /// after `now`.
    #[inline(always)]
    pub(super) fn empty_until(&self, now: u64) -> Option<u64> {
        // Relaxed: only the value is used; the module docs say why a value read here holds
        // (the word and every write to it are totally ordered, and a lowering writes it first).
        let t = self.word.load(Ordering::Relaxed);
        (t < NO_HINT && now < t).then_some(t)
    }

    /// The shard a publisher found to free the first permit: a guess (it may belong to another
    /// hint than the one just read), which the caller checks against the hint's time.
    #[inline(always)]
    pub(super) fn earliest(&self) -> usize {
        // Relaxed: a guess, checked by the caller against the shard's own state.
        self.earliest.load(Ordering::Relaxed) as usize
    }

    /// Before a denial reads the shards to publish a hint at `now`: the no-hint value to
    /// publish over, or `None` if no hint may be published (a lowering is under way, or a live
    /// hint is later than `now`).
    pub(super) fn open(&self, now: u64) -> Option<u64> {
        // Acquire: synchronizes with the last retirement (its Release, continued by the RMWs
        // after it), so the shard reads that follow see what it lowered.
        let mut h = self.word.load(Ordering::Acquire);
        loop {
            if h >= NO_HINT {
                return (h & ACTIVE == 0).then_some(h);
            }
            if h > now {
                return None;
            }
            // An expired hint: replace it by a fresh no-hint value first, so that the CAS that
            // publishes compares against a value the word never held before (two publishers
            // can compute the same t from different states). AcqRel: as the load above; the
            // release keeps the sequence going for later publishers.
            let fresh = NO_HINT | (self.stamp() << ACTIVE_BITS);
            match self
                .word
                .compare_exchange(h, fresh, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(fresh),
                Err(current) => h = current,
            }
        }
    }

    /// Installs the hint t over `opened` (from [`open`](EmptyHint::open)), if the word still
    /// holds it: no lowering announced since, no other hint installed. `shard` frees its first
    /// permit at t.
    pub(super) fn publish(&self, opened: u64, t: u64, shard: usize) {
        if t >= NO_HINT {
            return;
        }
        // Relaxed: a guess; whoever reads it checks it (see `earliest`).
        self.earliest.store(shard as u64, Ordering::Relaxed);
        // Relaxed (both): t is a value, not a publication of other memory; as an RMW it
        // continues the release sequence of the retirement `opened` came after.
        let _ = self
            .word
            .compare_exchange(opened, t, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Before a give-back or a rate change lowers a shard's state: no hint from now on.
    pub(super) fn announce(&self) {
        self.count(|active| active + 1);
    }

    /// After the lowering: still no hint, and a fresh value, so a publisher that read the
    /// word before it cannot install one computed from the states before the lowering.
    pub(super) fn retire(&self) {
        self.count(|active| active - 1);
    }

    /// Writes a fresh no-hint value with `active` changed by `step`.
    fn count(&self, step: impl Fn(u64) -> u64) {
        let stamp = self.stamp() << ACTIVE_BITS;
        // Relaxed: the CAS below checks it.
        let mut h = self.word.load(Ordering::Relaxed);
        loop {
            let active = if h >= NO_HINT { h & ACTIVE } else { 0 };
            let next = NO_HINT | stamp | step(active);
            // AcqRel: Release publishes a retirement's lowered state to the publishers that
            // read this value or a later one (Acquire); Acquire orders an announcement before
            // the lowering that follows it. Relaxed on failure: we only retry.
            match self
                .word
                .compare_exchange_weak(h, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(current) => h = current,
            }
        }
    }

    /// A stamp no write of the word has used.
    fn stamp(&self) -> u64 {
        // Relaxed: only its uniqueness matters (each RMW reads a distinct value).
        (self.stamps.fetch_add(1, Ordering::Relaxed) + 1) & STAMP_MASK
    }
}
