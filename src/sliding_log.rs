//! [`SlidingLog`]: the exact sliding window, a ring of `limit` atomic timestamps.
//!
//! The exact answer to "at most `limit` grants in any window of `period`" needs the times of
//! the last `limit` grants; that much memory is the minimum for exactness (see the
//! [`guide`](crate::guide)). The classic implementations keep a sorted set of timestamps behind
//! a lock (a `TreeSet` in a synchronized method, a Redis sorted set). Here the log is a ring of
//! `limit` `AtomicU64` slots, oldest grant first from a cursor:
//!
//! - slot word: `{ stamp: t + 1 }` for a grant recorded at time `t`, or `0` for "never used";
//! - cursor: the number of slots reserved so far; index `cursor` (its slot: see below) holds
//!   the oldest grant;
//! - newest: the stamp of the latest reservation, on the cursor's cache line.
//!
//! Index i lives in slot (i mod limit)·stride mod limit, with stride a small prime (≥ 17)
//! coprime to `limit` (1 for rings of at most 16 slots): a fixed permutation that puts
//! consecutive indices on different cache lines, so two threads granting in turn do not write
//! one line.
//!
//! A request for n permits at `now` is granted iff the n oldest slots hold grants that left the
//! window (now − period, now], i.e. stamps ≤ `bar` = now − period + 1 (or only never-used slots
//! when now < period). It reserves n indices by CAS on the cursor, then **claims each slot by a
//! CAS from its free value to the new stamp**. The slot CAS alone carries the guarantee; the
//! cursor only decides which slots to try, so a stale or raced cursor can cost a false denial,
//! never an over-admission.
//!
//! Contended, a grant's cost is the cache lines it takes from another core, and how long it
//! holds the cursor's line between reading it and its CAS. So the newest stamp shares the
//! cursor's line (read with the cursor, written right after the CAS while the line is still
//! exclusive: no read of the slot another core just wrote), and a single permit that loses the
//! cursor CAS retries at once from the value the CAS returned, without looking at a slot in
//! between (it has looked, so a denial stays write-free; the slot CAS checks the slot anyway).
//! The [`guide`](crate::guide) has the proof and the measurements behind both.
//!
//! Files: this one holds the ring, the slot claims and the admission (one algorithm, kept
//! whole); `sliding_log/builder.rs` the builder; `sliding_log/read.rs` the read-back (free run,
//! reset, settings) and `Decide`; `sliding_log/change.rs` live limit changes;
//! `sliding_log/planted.rs` the loom models' planted bugs.

use core::fmt;
use core::ops::Deref;
use core::time::Duration;

use crossbeam_utils::CachePadded;

use crate::clock::{Clock, DefaultClock};
use crate::contention::Contention;
use crate::error::Denied;
use crate::error::{ConfigError, Value};
use crate::limiter::Limiter;
use crate::rate::Rate;
use crate::sync::{AtomicU64, Ordering};

mod builder;
mod change;
mod give_back;
mod read;

pub use builder::SlidingLogBuilder;

/// The most slots one log may allocate: 2²⁸ (268,435,456 slots, 2 GiB of timestamps).
pub(crate) const MAX_SLOTS: u64 = 1 << 28;

/// An exact sliding-window limiter: at most `limit` permits in any window of length `period`,
/// kept as a ring of the last `limit` grant times (8 bytes per permit of `limit`).
///
/// # Guarantee
///
/// Windows are half-open: a grant made exactly `period` ago no longer counts.
///
/// - **Never over-admits, under any concurrency**: for every t, the permits granted to calls
///   whose `now` lies in (t − period, t] number at most `limit`. Each permit claims a distinct
///   slot by CAS, and a slot is claimed only when its previous grant is at least `period` older
///   than the claimant's `now` (the proof, including rolled-back weighted claims, is in the
///   [`guide`](crate::guide)).
/// - **Exact for a sequential caller**: if calls never overlap, every decision and every
///   `retry_after` is the exact log's: a request for n permits at `now` is granted iff at most
///   `limit − n` earlier grants are still in the window. Under concurrency a request may be
///   denied while a permit is free (a racing reservation, a slot another thread's rolled-back
///   claim left behind the cursor); it is never granted when one is not.
/// - `retry_after` is when the n-th oldest grant leaves the window; waiting exactly that long
///   and retrying the same request succeeds (if nobody else took the permits meanwhile).
/// - Weighted requests are all or nothing; `n > limit` is denied with `retry_after() == None`.
///
/// Time that goes backwards never frees permits: the window is judged at the `now` given (so a
/// smaller `now` frees nothing), and a grant at a `now` below the newest recorded grant is
/// recorded at that newest time ("no time has passed"). A request at `now == u64::MAX`, where
/// the clock's range is exhausted, is denied with `retry_after() == None`.
///
/// A denial writes nothing (for one permit it is three loads: the cursor, the oldest slot, the
/// cursor again), so under overload the lines stay shared. A grant reserves with one CAS on
/// the cursor (and a store of its stamp on the same line) and claims each of its n slots with
/// one CAS.
///
/// **Waiting**: [`LimiterExt`](crate::LimiterExt)'s waits retry here, **not first come first
/// served** (no line: no one word can queue a log's grants).
///
/// # Examples
///
/// ```
/// use hotlimit::{Limiter, ManualClock, Rate, SlidingLog};
/// use std::time::Duration;
///
/// // At most 3 per minute, in every window of one minute.
/// let clock = ManualClock::new();
/// let log = SlidingLog::builder(Rate::per_minute(3)?).clock(clock.clone()).build()?;
/// log.try_acquire()?; // t = 0 s
/// clock.set(Duration::from_secs(20));
/// log.try_acquire_n(2)?; // t = 20 s
/// clock.set(Duration::from_secs(30));
/// // The oldest grant (t = 0) leaves the window at t = 60 s.
/// assert_eq!(log.try_acquire().unwrap_err().retry_after(), Some(Duration::from_secs(30)));
/// clock.set(Duration::from_secs(60));
/// log.try_acquire()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SlidingLog<C = DefaultClock, W = CachePadded<Head>> {
    /// The cursor and the newest stamp, on one cache line of their own; `W` is their storage,
    /// cache-padded except in `Keyed`'s per-key logs (`Unpadded`: a per-key log is rarely
    /// contended, and padding would cost up to 120 bytes per key).
    head: W,
    /// `{ stamp: t + 1 }` of a grant recorded at time `t`; `0` = never used. The ring is the
    /// first `len`; after it, only after a lower limit, the stamps of older grants that the
    /// lower limit moved out of the ring and that may still count (ascending, none newer than
    /// the ring's). Under the lower limit they decide nothing (while one is in the window,
    /// the ring's stamps are too) and no request touches them, but the next change puts them
    /// back, so they keep counting until they leave the window (see
    /// [`set_limit`](SlidingLog::set_limit)).
    slots: alloc::vec::Vec<AtomicU64>,
    /// `slots.len()`, i.e. the rate's limit, as a u64 (1 ..= [`MAX_SLOTS`]).
    len: u64,
    /// The period in nanoseconds, at least 1.
    period: u64,
    /// Index i lives in slot (i mod len)·stride mod len: consecutive grants land on different
    /// cache lines (stride ≥ 9 words), so two threads granting in turn do not write one line.
    stride: u64,
    /// ⌊(2^64 − 1) / len⌋, for [`reduce`](Self::reduce).
    inv: u64,
    rate: Rate,
    clock: C,
}

/// The words every grant reads and writes, kept on one line: a grant takes it exclusive once.
#[derive(Debug)]
#[doc(hidden)]
// Public only because `SlidingLog`'s default type parameter names it; not part of the API
// (unreachable from outside the crate, fields private).
#[allow(unreachable_pub)]
pub struct Head {
    /// Indices reserved so far (a `u64` that no real clock can wrap: 584 years at one grant
    /// per ns). Index `cursor` holds the oldest grant, `cursor − 1` the newest (see `slot`).
    cursor: AtomicU64,
    /// The stamp of the latest reservation (0 before the first): the least stamp the next
    /// grant records, so that a clock set back records "no time has passed".
    newest: AtomicU64,
}

/// Where [`SlidingLog::acquire_one_from`] takes over from the inline first attempt.
enum Resume {
    /// The cursor moved from the one looked at: look again at this one.
    Look(u64),
    /// The reservation won, the claim lost: as a lost claim in the loop.
    ClaimLost,
    /// The reservation lost to this cursor: as a lost reservation in the loop.
    ReserveLost(u64),
}

/// Claims `slot` with `stamp` by CAS from a free value (≤ `bar`), starting from `seen`, a
/// recent value of the slot. False if the slot is not free.
#[inline(always)]
fn claim_slot(slot: &AtomicU64, mut seen: u64, bar: u64, stamp: u64) -> bool {
    while seen <= bar {
        // Release on success: publishes our cursor reservation (sequenced before) to any
        // thread that Acquire-loads this stamp (see `acquire_slots`). With Relaxed, the
        // loom models find a thread that sees the claim, reads the old cursor and denies
        // while a slot is free (their frozen-clock counts come up short). Relaxed on
        // failure: we only re-check the value. The CAS is what makes the claim safe: it
        // succeeds only from a value whose grant left the window at our `now`.
        match slot.compare_exchange_weak(seen, stamp, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(current) => seen = current,
        }
    }
    false
}

/// The slots of a log of `limit` permits, all never used; the error names `limit` (the
/// builder's and [`SlidingLog::set_limit`]'s check).
fn limit_slots(limit: u64) -> Result<alloc::vec::Vec<AtomicU64>, ConfigError> {
    new_slots(
        limit,
        "limit",
        Value::Count(u128::from(limit)),
        "must be at most 2^28 = 268435456 (8 bytes each)",
    )
}

/// Allocates `n` zeroed ("never used") slots, or reports `field = value`: more than
/// [`MAX_SLOTS`] (with `too_many` as the reason), or an allocation that fails.
pub(crate) fn new_slots(
    n: u64,
    field: &'static str,
    value: Value,
    too_many: &'static str,
) -> Result<alloc::vec::Vec<AtomicU64>, ConfigError> {
    if n > MAX_SLOTS {
        return Err(ConfigError::new(field, value, too_many));
    }
    let cannot = || ConfigError::new(field, value, "cannot allocate that many 8-byte slots");
    let len = usize::try_from(n).map_err(|_| cannot())?;
    let mut slots = alloc::vec::Vec::new();
    // Reserve first, so a failed allocation is an error rather than an abort.
    slots.try_reserve_exact(len).map_err(|_| cannot())?;
    slots.extend((0..len).map(|_| AtomicU64::new(0)));
    Ok(slots)
}

/// x mod len without a division, given inv = ⌊(2^64 − 1) / len⌋: the estimate
/// q = ⌊x·inv / 2^64⌋ satisfies x/len − 2 < q ≤ x/len, so r = x − q·len lies in [0, 2·len) and
/// one conditional subtraction finishes it.
#[inline(always)]
fn fastmod(x: u64, len: u64, inv: u64) -> u64 {
    let q = ((u128::from(x) * u128::from(inv)) >> 64) as u64;
    let r = x - q * len;
    if r >= len {
        r - len
    } else {
        r
    }
}

/// The stride that spreads consecutive indices over different cache lines: the smallest of a
/// few primes ≥ 17 that is coprime to `len` (so i ↦ i·stride mod len is a bijection), or 1
/// for rings of at most 16 slots (two cache lines: nothing to spread).
fn stride_for(len: u64) -> u64 {
    if len <= 16 {
        return 1;
    }
    // len ≤ 2^28 has at most 7 distinct prime factors, so one of these 8 primes is coprime.
    [17, 19, 23, 29, 31, 37, 41, 43]
        .into_iter()
        .find(|p| !len.is_multiple_of(*p))
        .unwrap_or(1)
}

impl<C, W: Deref<Target = Head>> SlidingLog<C, W> {
    /// A log over pre-allocated slots (1 ..= [`MAX_SLOTS`] of them); slot 0 is where the
    /// cursor starts.
    pub(crate) fn from_parts(slots: alloc::vec::Vec<AtomicU64>, rate: Rate, clock: C) -> Self
    where
        W: From<Head>,
    {
        debug_assert!(!slots.is_empty() && slots.len() as u64 <= MAX_SLOTS);
        SlidingLog {
            head: W::from(Head {
                cursor: AtomicU64::new(0),
                newest: AtomicU64::new(0),
            }),
            len: slots.len() as u64,
            stride: stride_for(slots.len() as u64),
            inv: u64::MAX / slots.len() as u64,
            slots,
            period: rate.period_nanos(),
            rate,
            clock,
        }
    }

    /// Fills a log that no other thread can see yet with `stamps` (ascending, at most `len`) at
    /// the indices the cursor reaches last: `len − k .. len`. The cursor starts at index 0, so
    /// the never-used slots come first and the carried grants are reached in their own order,
    /// oldest first. By index, not by position in `slots`: index i lives in the slot
    /// [`slot`](SlidingLog::slot) maps it to.
    pub(crate) fn preload(&self, stamps: &[u64]) {
        let k = stamps.len() as u64;
        debug_assert!(k <= self.len);
        for (i, &stamp) in (self.len - k..self.len).zip(stamps) {
            // Relaxed: the log is not shared yet; whoever publishes it (a map insert) orders
            // these stores before any reader.
            self.slot(i).store(stamp, Ordering::Relaxed);
        }
    }

    /// x mod len, by [`fastmod`].
    #[inline(always)]
    fn reduce(&self, x: u64) -> u64 {
        fastmod(x, self.len, self.inv)
    }

    /// The slot for index `i` (any u64: indices are taken modulo the ring's length).
    #[inline(always)]
    fn slot(&self, i: u64) -> &AtomicU64 {
        // `i % len < len ≤ MAX_SLOTS` fits in usize wherever the slots were allocated.
        let r = self.reduce(i);
        &self.slots[self.reduce(r * self.stride) as usize]
    }

    /// The greatest stamp whose grant has left the window (now − period, now]: a slot is free
    /// iff its stamp ≤ this. Stamp t + 1 ≤ now − period + 1 ⟺ t ≤ now − period. Before one
    /// period has passed only never-used slots (stamp 0) are free.
    #[inline(always)]
    fn bar(&self, now: u64) -> u64 {
        if now >= self.period {
            // ≤ u64::MAX − period + 1 ≤ u64::MAX, as period ≥ 1.
            now - self.period + 1
        } else {
            0
        }
    }

    /// The denial for a request blocked by a slot holding `stamp` (> bar(now), so ≥ 1): retry
    /// when that grant leaves the window, at t + period. If that instant is `u64::MAX` or
    /// beyond, the clock's range ends first: never.
    #[inline]
    fn denied(&self, stamp: u64, now: u64) -> Denied {
        match (stamp - 1).checked_add(self.period) {
            // free_at > now because stamp > bar(now).
            Some(free_at) if free_at < u64::MAX => Denied::after_nanos(free_at - now),
            _ => Denied::never(),
        }
    }

    /// Reserves and claims `n` slots (1 ≤ n ≤ len) at `now`; returns the first reserved index
    /// (the slots are `first .. first + n`, modulo the length). All or nothing.
    #[inline]
    pub(crate) fn acquire_slots(&self, n: u64, now: u64) -> Result<u64, Denied> {
        debug_assert!(n >= 1 && n <= self.len);
        if now == u64::MAX {
            // The stamp now + 1 would not fit: the clock's range is exhausted.
            return Err(Denied::never());
        }
        if n == 1 {
            return self.acquire_one(now);
        }
        let bar = self.bar(now);
        let mut contention = Contention::new();
        // Relaxed: the cursor only chooses which slots to try; the slot CASes carry the
        // guarantee. A stale value costs a retry or a false denial, never a grant.
        let mut c = self.head.cursor.load(Ordering::Relaxed);
        loop {
            // Acquire (all slot loads here): a slot claimed by the reservation at `c` was
            // written with Release after that reservation's cursor RMW, so if we see the claim
            // we also see the cursor moved, and the re-check below retries instead of denying.
            let mut worst = self.slot(c.wrapping_add(n - 1)).load(Ordering::Acquire);
            // In a ring filled in order the n-th oldest slot is the newest of the n: if it is
            // free, so are the others. Concurrent grants can leave the ring out of order, so
            // check the others too (loads only) before reserving.
            let mut i = 0;
            while worst <= bar && i + 1 < n {
                worst = worst.max(self.slot(c.wrapping_add(i)).load(Ordering::Acquire));
                i += 1;
            }
            if worst > bar {
                // Relaxed: see the Acquire above. Unchanged: the slot we read really is the
                // n-th oldest, and the denial is returned with no write at all.
                let again = self.head.cursor.load(Ordering::Relaxed);
                if again == c {
                    return Err(self.denied(worst, now));
                }
                c = again; // another reservation made progress: look again
                continue;
            }
            let stamp = match self.reserve(c, n, now, true) {
                Ok(stamp) => stamp,
                Err(current) => {
                    // Another reservation got in first; `current` is the cursor it left.
                    // Relaxed (a reload after a pause): as the first load.
                    c = contention.lost(current, now, || self.head.cursor.load(Ordering::Relaxed));
                    continue;
                }
            };
            if self.claim(c, n, bar, stamp) {
                return Ok(c);
            }
            // A slot of ours was taken by a reservation from another lap of the ring (a thread
            // whose clock is a period ahead, or one that reserved a lap earlier and is only now
            // writing). Our claims are rolled back and our reservation is abandoned; retry.
            contention.lost_then_reload(now);
            // Relaxed: as above.
            c = self.head.cursor.load(Ordering::Relaxed);
        }
    }

    /// [`acquire_slots`](SlidingLog::acquire_slots) for one permit: one slot to look at and
    /// claim, no loops over n. The first attempt inline (a look, then a reservation and a
    /// claim, or the usual denial: the oldest slot still in the window, the cursor unmoved),
    /// with no contention state; whatever follows a moved cursor or a lost CAS in
    /// [`acquire_one_from`](Self::acquire_one_from), the same steps in a loop.
    #[inline(always)]
    fn acquire_one(&self, now: u64) -> Result<u64, Denied> {
        let bar = self.bar(now);
        // Relaxed: as in `acquire_slots`.
        let c = self.head.cursor.load(Ordering::Relaxed);
        let slot = self.slot(c);
        // Acquire: as in `acquire_slots`.
        let seen = slot.load(Ordering::Acquire);
        if seen > bar {
            // Relaxed: as in `acquire_slots`; a denial writes nothing.
            let again = self.head.cursor.load(Ordering::Relaxed);
            if again == c {
                return Err(self.denied(seen, now));
            }
            return self.acquire_one_from(now, bar, Resume::Look(again));
        }
        // Reserve, then claim from the value we looked at (see `acquire_one_from`).
        match self.reserve(c, 1, now, true) {
            Ok(stamp) if claim_slot(slot, seen, bar, stamp) => Ok(c),
            Ok(_) => self.acquire_one_from(now, bar, Resume::ClaimLost),
            Err(current) => self.acquire_one_from(now, bar, Resume::ReserveLost(current)),
        }
    }

    /// [`acquire_one`](Self::acquire_one) after its first attempt, from where it stopped.
    #[inline(never)]
    fn acquire_one_from(&self, now: u64, bar: u64, resume: Resume) -> Result<u64, Denied> {
        let mut contention = Contention::new();
        // `Some(looked)`: reserve next, from the slot and free value `looked` holds (None:
        // without looking); `None`: look at the slot of `c` first.
        let mut reserve_next: Option<Option<(&AtomicU64, u64)>> = None;
        let mut c = match resume {
            Resume::Look(c) => c,
            Resume::ClaimLost => {
                // As a lost claim in the loop below. Relaxed: as in `acquire_slots`.
                contention.lost_then_reload(now);
                self.head.cursor.load(Ordering::Relaxed)
            }
            Resume::ReserveLost(current) => {
                // As a lost reservation in the loop below: reserve again without looking.
                reserve_next = Some(None);
                // Relaxed (a reload after a pause): as the first load.
                contention.lost(current, now, || self.head.cursor.load(Ordering::Relaxed))
            }
        };
        loop {
            let mut looked = match reserve_next.take() {
                Some(looked) => looked,
                None => {
                    // Computed once: after the atomics below the compiler could not reuse it.
                    let slot = self.slot(c);
                    // Acquire: as in `acquire_slots`.
                    let seen = slot.load(Ordering::Acquire);
                    if seen > bar {
                        // Relaxed: as in `acquire_slots`; a denial writes nothing.
                        let again = self.head.cursor.load(Ordering::Relaxed);
                        if again == c {
                            return Err(self.denied(seen, now));
                        }
                        c = again;
                        continue;
                    }
                    Some((slot, seen))
                }
            };
            // Reserve. After a failed CAS, retry at once from the cursor it returned, without
            // looking at that slot first: the look is what keeps a denial write-free, and we
            // have looked (the ring had a free slot a moment ago). Reading the slot another
            // thread is about to claim would only pull its line away; the claim's CAS checks
            // the slot anyway, and a slot that turns out taken costs this index, nothing more.
            loop {
                match self.reserve(c, 1, now, looked.is_some()) {
                    Ok(stamp) => {
                        let (slot, seen) = match looked {
                            // The CAS starts from the value we looked at: usually still there.
                            Some(looked) => looked,
                            None => {
                                let slot = self.slot(c);
                                // Relaxed: the CAS checks the value; a stale read just fails it.
                                (slot, slot.load(Ordering::Relaxed))
                            }
                        };
                        if claim_slot(slot, seen, bar, stamp) {
                            return Ok(c);
                        }
                        // Taken by another lap (or, unlooked, by a grant still in the window):
                        // look again from the current cursor. Relaxed: as above.
                        contention.lost_then_reload(now);
                        c = self.head.cursor.load(Ordering::Relaxed);
                        break;
                    }
                    Err(current) => {
                        // Relaxed (a reload after a pause): as the first load.
                        c = contention
                            .lost(current, now, || self.head.cursor.load(Ordering::Relaxed));
                        looked = None;
                    }
                }
            }
        }
    }

    /// Reserves indices `c .. c + n` by a CAS of the cursor from `c`, and picks the stamp for
    /// them: max(now + 1, the newest stamp reserved), so that a sequential caller's ring stays
    /// in time order; records it as the newest if `record`. On failure, returns the cursor
    /// found instead.
    #[inline(always)]
    fn reserve(&self, c: u64, n: u64, now: u64, record: bool) -> Result<u64, u64> {
        // Relaxed: `newest` only keeps stamps in order; a stale value costs exactness under
        // concurrency, never safety (every stamp is ≥ now + 1, which is all the proof needs).
        // It shares the cursor's line, which the cursor load above brought in.
        let stamp = self.head.newest.load(Ordering::Relaxed).max(now + 1);
        // Relaxed (both): reserving indices c .. c + n only picks slots; it publishes nothing
        // (the slot CASes that follow are Release on their own). A failure hands back the
        // cursor, so a retry needs no second load. A weak CAS: a spurious failure is a retry.
        self.head.cursor.compare_exchange_weak(
            c,
            c.wrapping_add(n),
            Ordering::Relaxed,
            Ordering::Relaxed,
        )?;
        // Relaxed: a store to the line the CAS just took exclusive. Set before the claim: if
        // the claim fails, a too-new `newest` only records later grants a little later
        // (conservative); a sequential caller's claims never fail. Only a reservation that
        // won on its first CAS records (`record`): after a lost CAS the other core is on this
        // line, and storing would pull it back for a second write per grant (measured: two
        // threads then fell into a mode of 11–18 Mops/s in a third of the runs, against a
        // steady ~62 this way). A sequential caller's first CAS always wins, so its ring stays
        // sorted; under contention `newest` may lag, which costs exactness only.
        if record {
            self.head.newest.store(stamp, Ordering::Relaxed);
        }
        Ok(stamp)
    }

    /// Claims slots `c .. c + n` with `stamp`, each by CAS from a free value (≤ `bar`). On a
    /// slot that is no longer free, rolls back the ones claimed and returns false.
    #[inline]
    fn claim(&self, c: u64, n: u64, bar: u64, stamp: u64) -> bool {
        for i in 0..n {
            let slot = self.slot(c.wrapping_add(i));
            // Relaxed: the CAS checks the value; a stale read just fails it.
            if !claim_slot(slot, slot.load(Ordering::Relaxed), bar, stamp) {
                self.roll_back(c, i, bar, stamp);
                return false;
            }
        }
        true
    }

    /// Undoes our claims of slots `c .. c + claimed`: each slot goes from our `stamp` to `bar`
    /// (a grant time of now − period: already out of the window at our `now`, and at least the
    /// value we replaced, so nothing any other grant relies on is lowered).
    ///
    /// A CAS, never a store: if our stamp is no longer there, another thread claimed the slot
    /// on top of ours (legitimately: its `now` is a period past our stamp), and a blind store
    /// would erase *its* grant and let a third thread take the slot again: over-admission.
    /// Leaving the slot as it is can only cost a false denial.
    #[cold]
    fn roll_back(&self, c: u64, claimed: u64, bar: u64, stamp: u64) {
        for i in 0..claimed {
            // Relaxed: the rollback publishes nothing; on failure the slot is left alone.
            let _ = self.slot(c.wrapping_add(i)).compare_exchange(
                stamp,
                bar,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }

    /// Take `permits` permits at time `now` (nanoseconds on this limiter's clock), all or
    /// nothing. This is the algorithm; [`Limiter::try_acquire_n`] is this with the clock read.
    ///
    /// # Errors
    ///
    /// [`Denied`] with the wait until the n-th oldest grant leaves the window, or with
    /// `retry_after() == None` when `permits` exceeds the limit (or `now == u64::MAX`).
    /// `permits == 0` always succeeds and changes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingLog};
    ///
    /// let log = SlidingLog::builder(Rate::per_second(2)?).clock(ManualClock::new()).build()?;
    /// assert!(log.try_acquire_n_at(1, 0).is_ok());
    /// assert!(log.try_acquire_n_at(1, 400_000_000).is_ok());
    /// // Two permits need both grants gone: the one at 0.4 s leaves at 1.4 s.
    /// let d = log.try_acquire_n_at(2, 1_000_000_000).unwrap_err();
    /// assert_eq!(d.retry_after_nanos(), Some(400_000_000));
    /// assert!(log.try_acquire_n_at(2, 1_400_000_000).is_ok());
    /// assert!(log.try_acquire_n_at(3, 9_000_000_000).unwrap_err().is_never());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire_n_at(&self, permits: u32, now: u64) -> Result<(), Denied> {
        if permits == 0 {
            return Ok(());
        }
        let n = u64::from(permits);
        if n > self.len {
            return Err(Denied::never());
        }
        self.acquire_slots(n, now).map(|_| ())
    }

    /// Take one permit at time `now`: [`try_acquire_n_at`](SlidingLog::try_acquire_n_at) with 1.
    ///
    /// # Errors
    ///
    /// [`Denied`] with the wait until the oldest grant in the window leaves it.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingLog};
    ///
    /// let log = SlidingLog::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert!(log.try_acquire_at(5).is_ok());
    /// assert_eq!(log.try_acquire_at(6).unwrap_err().retry_after_nanos(), Some(999_999_999));
    /// assert!(log.try_acquire_at(1_000_000_005).is_ok()); // exactly one period later
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline(always)]
    pub fn try_acquire_at(&self, now: u64) -> Result<(), Denied> {
        // `try_acquire_n_at(1, now)` without its checks that one permit never needs (1 ≤ len)
        // and without the loop over n, so that its first look is inlined.
        if now == u64::MAX {
            // As in `acquire_slots`.
            return Err(Denied::never());
        }
        self.acquire_one(now).map(|_| ())
    }
}

impl<C: Clock> Limiter for SlidingLog<C> {
    #[inline(always)]
    fn try_acquire(&self) -> Result<(), Denied> {
        self.try_acquire_at(self.clock.now())
    }

    #[inline]
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        self.try_acquire_n_at(permits, self.clock.now())
    }
}

impl<C, W: Deref<Target = Head>> fmt::Debug for SlidingLog<C, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlidingLog")
            .field("rate", &self.rate)
            // Relaxed: a snapshot for display.
            .field("reserved", &self.head.cursor.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Planted bugs for the loom models: each must make its model fail, which shows the models
/// can fail. Compiled only under `--cfg hotlimit_loom`; not part of the API.
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub mod planted;

/// Crate-internal access for `Keyed` (`src/keyed.rs`), which keeps one log per key and must
/// tell whether a log still holds any grant in the window, and for live limit changes
/// ([`set_limit`](SlidingLog::set_limit), `Keyed`'s carries).
impl<C, W: Deref<Target = Head>> SlidingLog<C, W> {
    /// The slot words, read-only (`{ stamp: t + 1 }` or 0), in ring order from slot 0.
    pub(crate) fn stamps(&self) -> impl Iterator<Item = u64> + '_ {
        // Acquire: a stamp's claim published the claimant's cursor reservation (see `claim`);
        // `Keyed` reads these only after every admitter on the log has finished.
        self.slots.iter().map(|s| s.load(Ordering::Acquire))
    }

    /// Every grant stamp that may still count, ascending, 0s left out: the ring's and the
    /// older ones kept after it (see `slots`). For a carry: no admitter may be inside.
    pub(crate) fn all_stamps(&self) -> alloc::vec::Vec<u64> {
        let mut stamps: alloc::vec::Vec<u64> = self.stamps().filter(|&s| s != 0).collect();
        stamps.sort_unstable();
        stamps
    }

    /// A log not shared yet, filled from `stamps` (ascending, no 0s): the newest `len` go
    /// into the ring ([`preload`](SlidingLog::preload)), the older ones that may still count
    /// after it (see `slots`). Returns the newest stamp kept (0 if none).
    pub(crate) fn load_stamps(&mut self, stamps: &[u64]) -> u64 {
        let (earlier, ring) = split_stamps(stamps, self.len, self.period);
        self.preload(ring);
        self.slots
            .extend(earlier.iter().map(|&s| AtomicU64::new(s)));
        ring.last().copied().unwrap_or(0)
    }
}

/// Splits `stamps` (ascending, no 0s) for a ring of `len` slots into (older ones that may
/// still count, the newest `len`). Left out: stamps whose window ended by the newest stamp's
/// time, which count in no later window, since every later grant is recorded no earlier than
/// the newest (stamp s = t + 1 counts at x iff x < t + period; with x ≥ newest − 1 that is
/// never when s + period ≤ newest).
pub(crate) fn split_stamps(stamps: &[u64], len: u64, period: u64) -> (&[u64], &[u64]) {
    let newest = stamps.last().copied().unwrap_or(0);
    let live = stamps.partition_point(|&s| s.saturating_add(period) <= newest);
    let stamps = &stamps[live..];
    // len ≤ MAX_SLOTS fits in usize wherever the ring was allocated.
    stamps.split_at(stamps.len().saturating_sub(len as usize))
}

#[cfg(test)]
mod tests {
    use super::{fastmod, stride_for};

    #[test]
    fn fastmod_is_the_remainder() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in (1..=70).chain([255, 256, 257, 1_000_000, (1 << 28) - 1, 1 << 28]) {
            let inv = u64::MAX / len;
            for v in [
                0,
                1,
                len - 1,
                len,
                len + 1,
                u64::MAX,
                u64::MAX - 1,
                u64::MAX / 2,
            ] {
                assert_eq!(fastmod(v, len, inv), v % len, "{v} mod {len}");
            }
            for _ in 0..1000 {
                // xorshift
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                assert_eq!(fastmod(x, len, inv), x % len, "{x} mod {len}");
            }
        }
    }

    /// i ↦ i·stride mod len is a bijection (the stride is coprime to len), and spreads
    /// neighbours at least 17 slots apart once the ring is longer than two cache lines.
    #[test]
    fn the_stride_permutes_the_ring() {
        let product: u64 = [17, 19, 23, 29, 31, 37].iter().product();
        for len in (1..=300).chain([product, product * 2, 1 << 28]) {
            let stride = stride_for(len);
            assert!(len <= 16 || stride >= 17, "len {len}");
            if len <= 4096 {
                let mut seen = vec![false; len as usize];
                for i in 0..len {
                    let s = (i * stride % len) as usize;
                    assert!(!seen[s], "len {len}: slot {s} twice");
                    seen[s] = true;
                }
            } else {
                let coprime =
                    (2..=stride).all(|d| !(len.is_multiple_of(d) && stride.is_multiple_of(d)));
                assert!(coprime, "len {len}, stride {stride}");
            }
        }
        assert_eq!(stride_for(product), 41);
    }
}
