//! Strict and approximate mode's core: one decision word holding the **cumulative** count of
//! every permit ever granted, and a ring of snapshots of that count taken at bucket ends
//! ("prefix sums"). Nothing is ever subtracted: the permits a window counts are the count now
//! minus the snapshot at the end of the bucket just below the floor. A grant is one load of the
//! decision word, one load of a snapshot and one CAS, the same shape as [`Gcra`](crate::Gcra).
//!
//! # Words
//!
//! ```text
//! state:     { granted: G mod 2^32 (bits 63..32), epoch: x mod 2^30 (bits 31..2), FROZEN (bit 0) }
//! epoch:     x, the current bucket, full 64 bits (while frozen: the bucket being closed)
//! target:    the bucket the next roll moves to (= epoch when none is chosen), full 64 bits
//! slot[y%M]: { prefix: P[y] mod 2^32 (bits 63..32), epoch: y mod 2^32 (bits 31..0) }
//! ```
//!
//! P[y] is G at the end of bucket y: every permit granted in buckets ≤ y. Grants are only made
//! in the current bucket x, so a request whose floor is f counts `G − P[f − 1]`, mod 2^32
//! (exact: a window holds at most 2·limit < 2^32 permits). M is the ring size, a power of two
//! ≥ R = ⌈lag / w⌉ + 1, the buckets one window touches.
//!
//! **Invariant J**: while `state` is not frozen and its epoch is x, slot y mod M holds P[y]
//! for every y in [x − M, x) (initially every slot holds a negative epoch with P = 0).
//!
//! # Rolling to a new bucket
//!
//! A call whose bucket b is past x *rolls*: (1) it picks `target` = b with a CAS from x (the
//! first roller since x wins; later ones reuse its choice); (2) it *freezes* x with a CAS
//! `{ G, x, 0 } → { G, target, FROZEN }`: no grant can change G for bucket x any more, so the
//! frozen G is P[x], and P[y] = G too for every bucket y in (x, target) (nobody called
//! then); (3) every slot y in [max(x, target − M), target) that does not already hold
//! `{ y, G }` gets it, by CAS; (4) `epoch` moves to the target; (5) a CAS clears FROZEN (the
//! *thaw*). Any caller that finds the word frozen does (3)–(5) itself, so a roller preempted
//! anywhere stalls nobody. A helper writes a slot only after checking, between loading it and
//! its CAS, that `state` still holds the same frozen word: a slot value it loaded during the
//! roll can only be replaced while the roll lasts, and a slot changes again only in a later
//! roll, to a newer epoch, so a stale helper's CAS fails. This keeps invariant J.
//!
//! # Time
//!
//! A call at `now` in the current bucket is judged at `now`; a call whose `now` is behind the
//! current bucket's start is judged at that start (its *effective time* τ = max(now, x·w));
//! the floor f(τ) = ⌊(τ − lag) / w⌋ needs no division: with lag = q·w + r and
//! τ = x·w + off, f = x − q − [off < r] (saturating at 0).
//!
//! Wrap-around: `state` keeps 30 bits of the epoch and slots keep 32; the full epoch lives in
//! `epoch`, which is advanced before the thaw, so a reader of an unfrozen `state` sees it.
//! A gap of any length is one roll (it rewrites at most M slots). A value could only be
//! mistaken if a single call were suspended between two of its own steps for 2^30 bucket
//! widths.
//!
//! Files: this one holds the words, the ring, the admission and the roll (one algorithm, kept
//! whole); `time/cell.rs` where the decision word lives (the ring's own `state`, or a view of
//! a pair's shared word: the roll, the slow path and the read-backs go through it);
//! `time/pair.rs` two rings with one decision word (a `MultiWindow` of two rings);
//! `time/give_back.rs` the charge and give-back of a `MultiWindow` of other sets;
//! `time/read.rs` the read-back (the buckets a request counts, `(remaining, reset)`, the words
//! for `Debug`); `time/planted.rs` the loom models' planted bugs.

use alloc::boxed::Box;
use alloc::vec::Vec;
use crossbeam_utils::CachePadded;

use crate::contention::Contention;
use crate::error::Denied;
use crate::sync::{AtomicU64, Backoff, Ordering};

mod cell;
/// Planted bugs for the loom models (see `super::planted`).
mod give_back;
pub(crate) mod pair;
#[cfg(hotlimit_loom)]
mod planted;
mod read;

use cell::StateCell;
pub(crate) use cell::View;

/// `state`'s flag: bucket `epoch` is closed and the roll to `target` is under way.
const FROZEN: u64 = 1;
/// Where `state` keeps the epoch's low bits.
const EPOCH_SHIFT: u32 = 2;
/// The epoch bits `state` keeps.
const EPOCH_MASK: u64 = (1 << 30) - 1;
/// Where `state` keeps G, and slots keep P.
const HIGH: u32 = 32;

#[inline(always)]
fn state_word(granted: u32, epoch: u64, frozen: bool) -> u64 {
    (u64::from(granted) << HIGH) | ((epoch & EPOCH_MASK) << EPOCH_SHIFT) | u64::from(frozen)
}

#[inline(always)]
fn granted(state: u64) -> u32 {
    (state >> HIGH) as u32
}

#[inline(always)]
fn state_epoch(state: u64) -> u64 {
    (state >> EPOCH_SHIFT) & EPOCH_MASK
}

#[inline(always)]
fn slot_word(epoch: u64, prefix: u32) -> u64 {
    (u64::from(prefix) << HIGH) | u64::from(epoch as u32)
}

#[inline(always)]
fn slot_prefix(slot: u64) -> u32 {
    (slot >> HIGH) as u32
}

#[inline(always)]
fn slot_epoch(slot: u64) -> u32 {
    slot as u32
}

/// Where a ring keeps its three head words (`state`, `epoch`, `target`), and how far its
/// snapshots keep from their neighbours.
pub(super) trait HeadCell {
    /// Words of padding before and after the snapshots: a shared window's snapshot line is
    /// read on every call, so a neighbouring heap allocation written by another thread would
    /// make every call miss. A compile-time offset, so indexing costs nothing extra.
    const PAD: usize;
    /// The head of a fresh ring: `state` = 0, `epoch` = `target` = 0.
    fn fresh() -> Self;
    fn state(&self) -> &AtomicU64;
    fn epoch(&self) -> &AtomicU64;
    fn target(&self) -> &AtomicU64;
}

/// A shared window's head: `state` (the word every grant CASes) and `target` (written by
/// rolls) on one cache line, `epoch` (written once per roll, read by every call) on its own,
/// so that the read of the epoch hits the local cache even while the other core holds
/// `state`'s line. (Measured with the three on one line: two threads at 23–68 Mops/s from run
/// to run; apart: 73–95.)
pub(super) struct Padded {
    hot: CachePadded<[AtomicU64; 2]>,
    epoch: CachePadded<AtomicU64>,
}

impl HeadCell for Padded {
    const PAD: usize = 16;

    fn fresh() -> Padded {
        Padded {
            hot: CachePadded::new([AtomicU64::new(0), AtomicU64::new(0)]),
            epoch: CachePadded::new(AtomicU64::new(0)),
        }
    }

    #[inline(always)]
    fn state(&self) -> &AtomicU64 {
        &self.hot[0]
    }

    #[inline(always)]
    fn epoch(&self) -> &AtomicU64 {
        &self.epoch
    }

    #[inline(always)]
    fn target(&self) -> &AtomicU64 {
        &self.hot[1]
    }
}

/// The head without padding: for per-key windows (`Keyed`, `KeyPool`), where one window per
/// key is rarely contended and padding would cost cache lines (and their alignment) per key.
pub(super) struct Plain {
    state: AtomicU64,
    epoch: AtomicU64,
    target: AtomicU64,
}

impl HeadCell for Plain {
    const PAD: usize = 0;

    fn fresh() -> Plain {
        Plain {
            state: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
            target: AtomicU64::new(0),
        }
    }

    #[inline(always)]
    fn state(&self) -> &AtomicU64 {
        &self.state
    }

    #[inline(always)]
    fn epoch(&self) -> &AtomicU64 {
        &self.epoch
    }

    #[inline(always)]
    fn target(&self) -> &AtomicU64 {
        &self.target
    }
}

/// Strict (lag = period − 1) or approximate (lag = period − w) sliding window. `H` holds the
/// head: cache-padded for a [`SlidingWindow`](super::SlidingWindow), [`Plain`] per key.
pub(super) struct TimeRing<H = Padded> {
    head: H,
    /// P[y] for the M buckets below the current one, at `PAD + (y mod M)`.
    slots: Box<[AtomicU64]>,
    /// M − 1.
    mask: u64,
    /// Bucket width w in nanoseconds, at least 1.
    width: u64,
    /// f(t) = ⌊(t − lag) / w⌋.
    lag: u64,
    /// q = ⌊lag / w⌋.
    lag_buckets: u64,
    /// r = lag mod w.
    lag_rest: u64,
    /// The limit in force. A live change stores it; requests read it after the state word
    /// (Acquire), with the plain load a Relaxed atomic load compiles to.
    limit: AtomicU64,
}

/// The fast path's verdict.
enum Fast {
    /// Grant by a CAS from the word read to this one.
    Grant(u64),
    /// Denied under epoch x, for a request judged at τ = x·w + off, with floor f = below + 1
    /// (wrapping; see `decide`), by this reading of the limit: the wait is computed by
    /// `quick_denial` or out of line.
    Deny {
        x: u64,
        off: u64,
        below: u64,
        limit: u64,
    },
    /// Anything else: the full loop decides.
    Slow,
}

/// What a grant attempt saw, when it cannot grant.
enum Miss {
    /// The view was stale, or the call helped a roll: look again.
    Retry,
    /// Denied, with this wait.
    Denied(Denied),
}

impl<H: HeadCell> TimeRing<H> {
    /// M, the ring's slots for buckets of `width` and this `lag`: the power of two at or above
    /// R = ⌈lag / w⌉ + 1, the buckets one window touches.
    pub(super) fn slots_for(width: u64, lag: u64) -> u64 {
        (lag.div_ceil(width) + 1).next_power_of_two()
    }

    /// The core for `limit` per window in buckets of `width` ns, counting from f(t) with `lag`.
    /// Needs width ≥ 1, lag < 2^64 − width, and lag / width ≤ 2^16 (the builder checks).
    pub(super) fn new(limit: u64, width: u64, lag: u64) -> TimeRing<H> {
        let slots = Self::slots_for(width, lag);
        // Slot i starts as the newest negative epoch ≡ i (mod M), i − M, with P = 0: no
        // permit was ever granted before time 0, so invariant J holds for x = 0.
        // Slot i of the ring is `slots[PAD + i]`; the padding words are never used.
        let pad = H::PAD as u64;
        let slots: Vec<AtomicU64> = (0..slots + 2 * pad)
            .map(|i| AtomicU64::new(slot_word(i.wrapping_sub(pad).wrapping_sub(slots), 0)))
            .collect();
        TimeRing {
            // `state_word(0, 0, false)` is 0: nothing granted, bucket 0, not frozen.
            head: H::fresh(),
            mask: (slots.len() - 2 * H::PAD) as u64 - 1,
            slots: slots.into_boxed_slice(),
            width,
            lag,
            lag_buckets: lag / width,
            lag_rest: lag % width,
            limit: AtomicU64::new(limit),
        }
    }
}

impl<H: HeadCell> TimeRing<H> {
    #[inline(always)]
    fn slot(&self, y: u64) -> &AtomicU64 {
        &self.slots[(y & self.mask) as usize + H::PAD]
    }

    /// T(s), the first time whose floor is s, for s ≥ 1 (`None` past u64::MAX).
    #[inline]
    fn floor_start(&self, s: u64) -> Option<u64> {
        s.checked_mul(self.width)?.checked_add(self.lag)
    }

    /// Takes `n` ≥ 1 permits at `now`, all or nothing (more than `limit`: denied, never).
    #[inline(always)]
    pub(super) fn acquire(&self, n: u64, now: u64) -> Result<(), Denied> {
        self.acquire_or(n, now, Err)
    }

    /// [`acquire`](Self::acquire) that hands a denial to `denied`, which may decide again (a
    /// live raise of the limit that is due). Called in one place, so that it is inlined.
    #[inline(always)]
    pub(super) fn acquire_or(
        &self,
        n: u64,
        now: u64,
        denied: impl FnOnce(Denied) -> Result<(), Denied>,
    ) -> Result<(), Denied> {
        // The common cases inline: `now` in the current bucket, no contention, and either
        // room in the window or a denial whose wait is one snapshot away (`quick_denial`).
        // Everything else (rolls, stale views, other denials, retries) is out of line.
        // Acquire: pairs with the thaw (or the grant CASes after it): the slots and the
        // epoch written before the thaw are visible.
        let s = self.head.state().load(Ordering::Acquire);
        let d = 'denied: {
            let seen = match self.fast(s, n, now) {
                Fast::Grant(next) => {
                    // Release: as in `acquire_slow`. Acquire on failure: the word it returns
                    // is the next view (as the load above).
                    match self.head.state().compare_exchange_weak(
                        s,
                        next,
                        Ordering::Release,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => return Ok(()),
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
                        break 'denied d;
                    }
                    let f = Self::floor_of(x, below);
                    if let Miss::Denied(d) = self.denial(self.head.state(), s, x, f, n, now) {
                        break 'denied d;
                    }
                    None
                }
                Fast::Slow => None,
            };
            match self.acquire_slow(self.head.state(), n, now, seen) {
                Ok(_) => return Ok(()),
                Err(d) => d,
            }
        };
        denied(d)
    }

    /// The wait of a request denied by `fast` under the unfrozen word `s` (epoch x, `now` =
    /// x·w + off with off < w, `limit` the reading it was denied with) in the usual case
    /// under overload: the current bucket alone is too full, G − P[x − 1] + n > limit, so the
    /// first floor at which it fits is x + 1 (P[x] = G: it fits there when n ≤ limit) and the
    /// wait is T(x + 1) − now = (w − off) + lag, exactly what `denial` finds with its first
    /// snapshot. `None` for everything else (more than `limit`, an earlier floor that fits, a
    /// stale snapshot, a T(x + 1) past the clock's range): `denial` decides. Reads one
    /// snapshot and writes nothing. No re-read of `state` is needed: a slot that holds epoch
    /// x − 1 holds P[x − 1], written (by the roll that closed bucket x − 1, before `state`
    /// reached epoch x) with its final value, so the denial and its wait are those of `s` at
    /// its load.
    #[inline(always)]
    fn quick_denial(
        &self,
        s: u64,
        x: u64,
        off: u64,
        n: u64,
        limit: u64,
        now: u64,
    ) -> Option<Denied> {
        if n > limit {
            return None;
        }
        // x − 1, wrapping below 0 to a negative epoch whose slot holds P = 0 (invariant J).
        let y = x.wrapping_sub(1);
        // Acquire: as in `decide`.
        let v = self.slot(y).load(Ordering::Acquire);
        if slot_epoch(v) != y as u32
            || u64::from(granted(s).wrapping_sub(slot_prefix(v))) + n <= limit
        {
            return None;
        }
        // No division or multiplication: off < w, so the wait is at least 1; both sums are
        // checked, so a T(x + 1) past u64::MAX is left to `denial` (its "never").
        let wait = (self.width - off).checked_add(self.lag)?;
        now.checked_add(wait)?;
        Some(Denied::after_nanos(wait))
    }

    /// The decision for a call whose `now` lies in the current bucket of the unfrozen word
    /// `s`; anything else is `Slow` (decided by `attempt`).
    #[inline(always)]
    fn fast(&self, s: u64, n: u64, now: u64) -> Fast {
        // Relaxed: ordered after the Acquire load of `s`, and checked against it.
        let x = self.head.epoch().load(Ordering::Relaxed);
        // Not frozen, and `epoch` matches the word's epoch bits: one test for both.
        if (s ^ (x << EPOCH_SHIFT)) & ((EPOCH_MASK << EPOCH_SHIFT) | FROZEN) != 0 {
            return Fast::Slow;
        }
        // x = ⌊t / w⌋ for a time t some call brought: no overflow. A `now` behind the bucket
        // wraps to a huge offset and takes the slow path too.
        let off = now.wrapping_sub(x * self.width);
        if off >= self.width {
            return Fast::Slow;
        }
        self.decide(s, x, off, n)
    }

    /// The decision under the unfrozen word `s` at epoch x, for a request judged at
    /// τ = x·w + off (off < w): `Slow` if the snapshot it needs is not there (a stale view).
    #[inline(always)]
    fn decide(&self, s: u64, x: u64, off: u64, n: u64) -> Fast {
        // f − 1 = x − q − 1 − [off < r], wrapping: below 0 it names a negative epoch, whose
        // slot (invariant J) holds P = 0, exactly the P[−1] of a floor saturated at 0.
        let below = x.wrapping_sub(self.lag_buckets + 1 + u64::from(off < self.lag_rest));
        // Acquire: pairs with the slot CAS of the roll that wrote it, so a value from a later
        // roll also shows that roll's freeze (see `stale`).
        let v = self.slot(below).load(Ordering::Acquire);
        if slot_epoch(v) != below as u32 {
            return Fast::Slow;
        }
        let limit = self.limit();
        if u64::from(granted(s).wrapping_sub(slot_prefix(v))) + n > limit {
            return Fast::Deny {
                x,
                off,
                below,
                limit,
            };
        }
        Fast::Grant(s.wrapping_add(n << HIGH))
    }

    /// The limit in force.
    #[inline(always)]
    pub(super) fn limit(&self) -> u64 {
        // Relaxed: read after the Acquire load of the state word. A grant decided with it is
        // validated by its CAS on that word, so it is linearized at this load (the word was
        // unchanged from its load to its CAS), and a grant that read a later grant's word
        // (Acquire, from that grant's Release CAS) reads that grant's limit or a newer one.
        self.limit.load(Ordering::Relaxed)
    }

    /// Sets the limit in force (a live change; the caller holds the change turn).
    pub(super) fn set_limit(&self, limit: u64) {
        // Release: see `limit`; nothing else is published with it.
        self.limit.store(limit, Ordering::Release);
    }

    /// The floor f from `decide`'s `below` = f − 1 (wrapped when the floor saturates at 0).
    #[inline(always)]
    fn floor_of(x: u64, below: u64) -> u64 {
        if below < x {
            below + 1
        } else {
            0
        }
    }

    /// [`acquire`](Self::acquire) after its fast path failed: the full loop. A grant returns
    /// the word its CAS installed (the charge's token for a give-back, `give_back.rs`).
    #[cold]
    #[inline(never)]
    fn acquire_slow<S: StateCell>(
        &self,
        st: &S,
        n: u64,
        now: u64,
        seen: Option<u64>,
    ) -> Result<u64, Denied> {
        if n > self.limit() {
            // Never, and without moving the window.
            return Err(Denied::never());
        }
        let mut contention = Contention::new();
        // Acquire: as in `acquire`. A word returned by a failed CAS is used as it is, like
        // Gcra's loop: under contention a fresh load would only miss the cache line again.
        let mut s = match seen {
            // Acquire (a reload after a pause): as the load below.
            Some(current) => contention.lost(current, now, || st.load(Ordering::Acquire)),
            None => st.load(Ordering::Acquire),
        };
        loop {
            let next = match self.attempt(st, s, n, now) {
                Ok(next) => next,
                Err(Miss::Retry) => {
                    // Another call moved `state` (or we helped it): a pause, then look again.
                    contention.wait();
                    // Acquire: as in `acquire`.
                    s = st.load(Ordering::Acquire);
                    continue;
                }
                Err(Miss::Denied(d)) => return Err(d),
            };
            // The CAS succeeds only if `state` is still `s`, under which the snapshot read by
            // `attempt` is P[f − 1] (slots below the epoch change only after a freeze, which
            // changes `state`). Release: whoever acquires the new word also sees the epoch and
            // snapshots this call saw, without relying on release sequences through RMWs.
            // Acquire on failure: the word it returns is our next view.
            match st.compare_exchange_weak(s, next, Ordering::Release, Ordering::Acquire) {
                Ok(_) => return Ok(next),
                Err(current) => {
                    // Acquire (a reload after a pause): as in `acquire`.
                    s = contention.lost(current, now, || st.load(Ordering::Acquire));
                }
            }
        }
    }

    /// Decides a request for `n` at `now` under the word `s`: `Ok` means "grant by CAS on
    /// `s`". Writes nothing unless it rolls or helps a roll.
    #[inline(always)]
    fn attempt<S: StateCell>(&self, st: &S, s: u64, n: u64, now: u64) -> Result<u64, Miss> {
        // Relaxed: ordered after the Acquire load of `s`, and checked against it.
        let x = self.head.epoch().load(Ordering::Relaxed);
        if s & FROZEN != 0 || x & S::EPOCH_MASK != state_epoch(s) {
            self.help(st, s);
            return Err(Miss::Retry);
        }
        // x = ⌊t / w⌋ for a time t some call brought: no overflow.
        let off = now.saturating_sub(x * self.width);
        if off >= self.width {
            self.roll(st, s, x, now / self.width);
            return Err(Miss::Retry);
        }
        // τ = x·w + off, with off = 0 when `now` is behind the bucket.
        match self.decide(s, x, off, n) {
            Fast::Grant(next) => Ok(next),
            Fast::Deny {
                x,
                off,
                below,
                limit,
            } => {
                // The usual denial first (one snapshot), when `now` is in the bucket (`quick_denial`
                // reckons the wait from x·w + off).
                if now >= x * self.width {
                    if let Some(d) = self.quick_denial(s, x, off, n, limit, now) {
                        return Err(Miss::Denied(d));
                    }
                }
                Err(self.denial(st, s, x, Self::floor_of(x, below), n, now))
            }
            Fast::Slow => Err(self.stale(st, s)),
        }
    }

    /// A snapshot slot did not hold its bucket: `state` has moved on since `s` (retry), or
    /// invariant J is broken (a bug: deny for one bucket width rather than spin or panic).
    #[cold]
    fn stale<S: StateCell>(&self, st: &S, s: u64) -> Miss {
        // Acquire: as in `acquire`.
        if st.load(Ordering::Acquire) != s {
            return Miss::Retry;
        }
        debug_assert!(false, "sliding window: a live snapshot is missing");
        Miss::Denied(Denied::after_nanos(self.width))
    }

    /// The wait for a denied request under `s` (epoch x, floor f): the first floor f' > f
    /// at which the request fits, G − P[f' − 1] + n ≤ limit (with P[x] = G, f' = x + 1 always
    /// fits), and the wait until T(f'). P only grows with the bucket, so the first such f' is
    /// found by bisection: O(log R) snapshot loads, and one when the current bucket alone is
    /// too full (the usual case under overload). `Retry` if `s` changed meanwhile, so a
    /// denial is always decided on one snapshot.
    #[cold]
    #[inline(never)]
    fn denial<S: StateCell>(&self, st: &S, s: u64, x: u64, f: u64, n: u64, now: u64) -> Miss {
        // One reading for the whole search (the search is over one snapshot too).
        let limit = self.limit();
        if n > limit {
            return Miss::Denied(Denied::never());
        }
        let g = granted(s);
        // fits(f') for f ≤ f' − 1 < x, or None if the snapshot is not there.
        let fits = |fp: u64| -> Option<bool> {
            let y = fp - 1;
            // Acquire: as in `attempt`.
            let v = self.slot(y).load(Ordering::Acquire);
            (slot_epoch(v) == y as u32)
                .then(|| u64::from(g.wrapping_sub(slot_prefix(v))) + n <= limit)
        };
        // Invariant: !fits(lo) (lo = f was denied), fits(hi). At x = u64::MAX (1 ns buckets at
        // the end of the clock) hi saturates; T(hi) is then past the clock's range either way.
        let (mut lo, mut hi) = (f, x.saturating_add(1));
        if hi - lo > 1 {
            // The newest snapshot first: if the current bucket alone is too full, f' = x + 1.
            match fits(x) {
                None => return self.stale(st, s),
                Some(true) => hi = x,
                Some(false) => lo = x,
            }
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            match fits(mid) {
                None => return self.stale(st, s),
                Some(true) => hi = mid,
                Some(false) => lo = mid,
            }
        }
        // Acquire: the slots above were read while `state` was `s` if it still is.
        if st.load(Ordering::Acquire) != s {
            return Miss::Retry;
        }
        Miss::Denied(match self.floor_start(hi) {
            // T(f') > τ ≥ now.
            Some(t) => Denied::after_nanos(t.saturating_sub(now).max(1)),
            None => Denied::never(),
        })
    }

    /// Moves the window from bucket x (under the unfrozen word `s`) towards bucket b > x:
    /// picks or reuses the target, freezes x, then finishes the roll (`help`).
    #[cold]
    fn roll<S: StateCell>(&self, st: &S, s: u64, x: u64, b: u64) {
        // Acquire: a target chosen by another roller (nothing else is read through it).
        let mut t = self.head.target().load(Ordering::Acquire);
        if t == x {
            // AcqRel: the first roller since the epoch became x picks the target; released
            // to the helpers, which read it after the freeze below.
            t = match self
                .head
                .target()
                .compare_exchange(x, b, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => b,
                Err(current) => current,
            };
        }
        if t <= x {
            // Our view of the epoch is stale.
            return;
        }
        let frozen = state_word(granted(s), t & S::EPOCH_MASK, true);
        // AcqRel: closes bucket x at G (no grant can follow on `s`) and releases the target
        // to the helpers that acquire the frozen word.
        if st
            .compare_exchange(s, frozen, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            self.help(st, frozen);
        }
    }

    /// Finishes the roll that the frozen word `s` announces: writes the snapshots, advances
    /// `epoch`, thaws. Does nothing if `s` is not frozen or that roll is already over.
    #[cold]
    fn help<S: StateCell>(&self, st: &S, s: u64) {
        if s & FROZEN == 0 {
            // An unfrozen word whose epoch did not match: a roll moved on between the loads.
            return;
        }
        // Acquire (both): the freeze released them. `epoch` is the bucket being closed until
        // the snapshots are written, then the target.
        let x = self.head.epoch().load(Ordering::Acquire);
        let b = self.head.target().load(Ordering::Acquire);
        if b & S::EPOCH_MASK != state_epoch(s) || x > b {
            // A newer roll has chosen its target: the one we saw is over.
            return;
        }
        if x != b {
            if !self.write_snapshots(st, s, x, b) || !st.rolled(self, s, b) {
                return;
            }
            // AcqRel: after the snapshots (program order), before the thaw; a helper that
            // lost this CAS finds `epoch` = b already.
            let _ = self
                .head
                .epoch()
                .compare_exchange(x, b, Ordering::AcqRel, Ordering::Relaxed);
        }
        // AcqRel: the thaw: releases the snapshots and the epoch to every call that acquires
        // the unfrozen word. Fails harmlessly if another helper thawed first.
        let _ = st.compare_exchange(s, s & !FROZEN, Ordering::AcqRel, Ordering::Relaxed);
    }

    /// Step (3) of a roll from x to b under the frozen word `s`: slot y gets `{ y, G }` for
    /// y in [max(x, b − M), b). False if `s` is no longer current (the roll is over).
    fn write_snapshots<S: StateCell>(&self, st: &S, s: u64, x: u64, b: u64) -> bool {
        let g = granted(s);
        let lo = x.max(b.saturating_sub(self.mask + 1));
        for y in lo..b {
            let slot = self.slot(y);
            let want = slot_word(y, g);
            loop {
                // Acquire: see the latest snapshot before replacing it.
                let v = slot.load(Ordering::Acquire);
                if v == want {
                    break;
                }
                // Acquire: `v` was loaded while the roll lasts only if `state` is still the
                // frozen `s` now; then our CAS can only replace a value of this roll's time.
                if st.load(Ordering::Acquire) != s {
                    return false;
                }
                // AcqRel: publishes the snapshot to readers that acquire the slot (and orders
                // it before the thaw); fails if another helper wrote it first.
                if slot
                    .compare_exchange(v, want, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    break;
                }
            }
        }
        true
    }
}
