//! [`KeyLease`]: one key's leased permits in this process, and the protocol of its one atomic
//! word. Pure over `now` (local nanoseconds): no clock, no Redis, no allocation, so that the
//! loom model (`loom-tests/tests/lease_word.rs`) compiles this very file against loom's
//! atomics.
//!
//! # The word
//!
//! `word` = `{ lease: g (high 32 bits), next: i (low 32 bits) }`: permits `0..i` of lease `g`
//! are spent (granted, or passed over once their time was gone), `i..` are not. A grant is one
//! CAS from `{g, i}` to `{g, j + n}` (j ≥ i: expired permits are skipped). A request that does
//! not fit the lease moves the word to the next lease, `{g + 1, 0}`, once that lease is
//! installed. The lease number wraps at 2^32: a thread would have to sleep through 2^32 leases
//! between its load and its CAS for a stale CAS to succeed.
//!
//! # The leases
//!
//! Two records, lease `g` in `records[g % 2]`. A refill (one at a time per key: the `refill`
//! flag) writes the record of `g + 1`, which is that of `g − 1`, no longer current, and then
//! publishes it by storing `installed = g + 1` (Release); a grant that finds lease `g` spent
//! reads `installed` (Acquire) before it moves the word. So a key holds at most two leases:
//! the current one and one waiting.
//!
//! A grant reads the record of the generation its word names with Acquire loads. A slow thread
//! may read a record that a later refill is rewriting; it then acts only through a CAS on the
//! word, which fails: the refill loaded the word at `g` before it wrote (so anything that read
//! one of its writes, through the Acquire/Release pair on the record's fields, happens after
//! that load, and the word it sees has moved past `g − 1`).
//!
//! # When a permit may be granted
//!
//! Permit m (0-based) of a lease taken at server TAT S has, in server time, the window
//! [S + (m + 1)·I − τ, S + m·I]: from its slot (the earliest time a grant could pass the GCRA
//! test with the TAT at S + m·I) to its deadline (past it, a GCRA grant would start from `now`,
//! not from S + m·I). Granted inside its window, each permit is exactly a GCRA grant on the
//! server's sequence of TATs, so all processes together keep the bound b + d/I. The record
//! holds the window of permit 0 mapped to local time (slot mapped late, deadline early: see
//! `lease.rs`); permit m's is that plus m·I.

use crate::sync::{AtomicU64, Backoff, Ordering};

/// Bits of the word's `next` field.
const NEXT_BITS: u32 = 32;
const NEXT_MASK: u64 = (1 << NEXT_BITS) - 1;

/// The most permits one lease may hold (its `next` must fit the word).
pub(crate) const MAX_PERMITS: u64 = 1 << 30;

/// The bound on a lease's local times, ±2^62 ns (see [`Lease::mapped`]).
const LIMIT: i128 = 1 << 62;

/// The `refill` flag: free, held by one refill (or a close), or retired for good.
const FREE: u64 = 0;
const HELD: u64 = 1;
const RETIRED: u64 = 2;

fn pack(lease: u32, next: u64) -> u64 {
    (u64::from(lease) << NEXT_BITS) | next
}

fn lease_of(word: u64) -> u32 {
    (word >> NEXT_BITS) as u32
}

fn next_of(word: u64) -> u64 {
    word & NEXT_MASK
}

/// One lease as the grant path reads it: permit 0's window on the local clock (ns), the number
/// of permits, and where it starts in the server's queue (S, µs), for a return.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Lease {
    /// Local ns from which permit 0 may be granted (its slot, mapped late). Signed: a lease
    /// taken on an idle key has its first slots τ − I before `now`, which may lie before the
    /// local clock's origin.
    pub(crate) first_slot: i64,
    /// Local ns until which permit 0 may be granted (its deadline, mapped early).
    pub(crate) first_deadline: i64,
    /// Permits in the lease (at most [`MAX_PERMITS`]).
    pub(crate) permits: u64,
    /// S, the server's TAT the lease starts from (µs).
    pub(crate) start: u64,
}

impl Lease {
    /// The lease a reply carries: `permits` permits from the server's TAT `start`, with
    /// emission interval `interval` and tolerance `tolerance` (all µs), mapped to the local
    /// clock with [`lo`, `hi`], a bound on the server's clock minus the local one (ns) that
    /// holds at every instant one of its permits may be granted (see `lease/offset.rs`). Permit
    /// 0's slot S + I − τ is mapped late (less `lo`), its deadline S early (less `hi`): at a
    /// local time between them the server's clock is within the window. The window only ever
    /// shrinks, by hi − lo.
    pub(crate) fn mapped(
        start: u64,
        interval: u64,
        tolerance: u64,
        permits: u64,
        lo: i128,
        hi: i128,
    ) -> Lease {
        // Server ns less the offset, within ±2^62 ns (146 years): then a permit's slot or
        // deadline, this plus at most 2^62 (permits × I, which the builder bounds), never
        // overflows i64 in `take`.
        let at = |server: i128, offset: i128| -> i64 {
            (server * 1000 - offset).clamp(-LIMIT, LIMIT) as i64
        };
        let (s, i, t) = (
            i128::from(start),
            i128::from(interval),
            i128::from(tolerance),
        );
        Lease {
            first_slot: at(s + i - t, lo),
            first_deadline: at(s, hi),
            permits,
            start,
        }
    }
}

/// A [`Lease`] in atomics: written by the one refill that holds the flag, read by grants.
#[derive(Debug, Default)]
struct Record {
    first_slot: AtomicU64,
    first_deadline: AtomicU64,
    permits: AtomicU64,
    start: AtomicU64,
}

impl Record {
    /// What a take needs: permit 0's window and the number of permits.
    #[inline]
    fn window(&self) -> (i64, i64, u64) {
        // Acquire (all three): as in `read`.
        (
            self.first_slot.load(Ordering::Acquire) as i64,
            self.first_deadline.load(Ordering::Acquire) as i64,
            self.permits.load(Ordering::Acquire),
        )
    }

    fn read(&self) -> Lease {
        // Acquire (all four): pairs with `write`'s Release stores, see the module docs (a
        // record read while a refill rewrites it is only acted on through a CAS that fails).
        Lease {
            first_slot: self.first_slot.load(Ordering::Acquire) as i64,
            first_deadline: self.first_deadline.load(Ordering::Acquire) as i64,
            permits: self.permits.load(Ordering::Acquire),
            start: self.start.load(Ordering::Acquire),
        }
    }

    fn write(&self, lease: Lease) {
        // Release (all four): see `read`.
        self.first_slot
            .store(lease.first_slot as u64, Ordering::Release);
        self.first_deadline
            .store(lease.first_deadline as u64, Ordering::Release);
        self.permits.store(lease.permits, Ordering::Release);
        self.start.store(lease.start, Ordering::Release);
    }
}

/// What a request got from the key's leases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Take {
    /// Granted. `low`: the current lease is half spent or more and none is waiting, so it is
    /// time to refill.
    Granted { low: bool },
    /// The request's last permit has its slot `ns` from now: denied until then (no write).
    Wait(u64),
    /// No lease holds the request: a refill is needed (or under way).
    Dry,
}

/// What [`KeyLease::close`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Closed {
    /// Nothing: a refill (or another close) holds the key.
    Busy,
    /// Closed (and retired if asked): the current lease with its spent permits if it had any
    /// left, and the lease that was waiting, unused, if one was. To return the waiting one
    /// first (it is later in the server's queue).
    Done {
        current: Option<(Lease, u64)>,
        waiting: Option<Lease>,
    },
}

/// One key's leased permits in this process: the word, the two lease records, the refill flag,
/// and a count of permits passed over.
#[derive(Debug, Default)]
pub(crate) struct KeyLease {
    word: AtomicU64,
    /// The newest installed lease (the word's lease, or the next one, waiting).
    installed: AtomicU64,
    records: [Record; 2],
    refill: AtomicU64,
    /// Permits passed over: their deadline came before a request did, or the request moved on
    /// to the next lease (under-use, counted for the stats).
    skipped: AtomicU64,
}

/// The right to install the next lease of a key (or to close its current one), held by one
/// thread at a time; dropping it lets the next refill in.
#[derive(Debug)]
pub(crate) struct RefillGuard<'a> {
    key: &'a KeyLease,
    retire: bool,
}

impl Drop for RefillGuard<'_> {
    fn drop(&mut self) {
        let state = if self.retire { RETIRED } else { FREE };
        // Release: the next holder (Acquire) sees this one's install.
        self.key.refill.store(state, Ordering::Release);
    }
}

impl KeyLease {
    /// Takes `n` (≥ 1) permits at local `now`, permits `interval` ns apart. Inlined into the
    /// callers: the grant path is the one that must cost about what an in-process GCRA does.
    #[inline(always)]
    pub(crate) fn take(&self, n: u64, now: u64, interval: u64) -> Take {
        // Acquire: a word moved to a new lease publishes that lease's record (the move read
        // `installed` with Acquire, and its CAS releases).
        let mut word = self.word.load(Ordering::Acquire);
        let backoff = Backoff::new();
        // Signed local times (see `Lease::first_slot`); I ≤ 2^62 ns.
        let (now_s, step) = (i64::try_from(now).unwrap_or(i64::MAX), interval as i64);
        loop {
            let (g, i) = (lease_of(word), next_of(word));
            let (first_slot, first_deadline, permits) = self.records[(g & 1) as usize].window();
            // Permits whose deadline has passed are skipped: the first with a deadline at or
            // after `now`.
            // No overflow: |first_deadline| ≤ 2^62 and i·I ≤ permits·I ≤ 2^62 (`Lease::mapped`,
            // the builder).
            let deadline = first_deadline + i as i64 * step;
            let j = if now_s > deadline {
                i.saturating_add((now_s.abs_diff(deadline)).div_ceil(interval))
            } else {
                i
            };
            if j.saturating_add(n) > permits {
                // Acquire: pairs with `install`'s Release: the next lease's record is written.
                if self.installed.load(Ordering::Acquire) as u32 == g {
                    return Take::Dry;
                }
                // AcqRel on success: Acquire as the load above; Release passes the record's
                // publication on to whoever reads the new word. Acquire on failure: as the load.
                match self.word.compare_exchange_weak(
                    word,
                    pack(g.wrapping_add(1), 0),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => {
                        // Relaxed: a statistic.
                        self.skipped
                            .fetch_add(permits.saturating_sub(i), Ordering::Relaxed);
                        word = pack(g.wrapping_add(1), 0);
                    }
                    Err(current) => {
                        word = current;
                        backoff.spin();
                    }
                }
                continue;
            }
            // As above: j + n ≤ permits here.
            let slot = first_slot + (j + n - 1) as i64 * step;
            if now_s < slot {
                // Denied before any write: the line stays shared under overload.
                return Take::Wait(slot.abs_diff(now_s));
            }
            // Relaxed on success: a grant publishes nothing (the CAS on the one word orders
            // grants by itself). Acquire on failure: the new word may name a new lease.
            match self.word.compare_exchange_weak(
                word,
                pack(g, j + n),
                Ordering::Relaxed,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    if j > i {
                        // Relaxed: a statistic.
                        self.skipped.fetch_add(j - i, Ordering::Relaxed);
                    }
                    let left = permits - (j + n);
                    // Relaxed: a hint; a stale value costs one refill attempt that finds a
                    // lease already waiting, or one made a grant later.
                    let low =
                        left * 2 <= permits && self.installed.load(Ordering::Relaxed) as u32 == g;
                    return Take::Granted { low };
                }
                Err(current) => {
                    word = current;
                    backoff.spin();
                }
            }
        }
    }

    /// The right to install the next lease: `None` while another refill (or a close) holds
    /// it, once the key is retired, or while a lease is already waiting.
    pub(crate) fn begin_refill(&self) -> Option<RefillGuard<'_>> {
        // Acquire: this holder reads `installed` as the previous holder left it.
        self.refill
            .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        let guard = RefillGuard {
            key: self,
            retire: false,
        };
        // Acquire: as in `take`.
        let word = self.word.load(Ordering::Acquire);
        // Relaxed: only the holder writes `installed`, and it holds the flag (Acquire above).
        if self.installed.load(Ordering::Relaxed) as u32 != lease_of(word) {
            return None; // a lease is waiting already
        }
        Some(guard)
    }

    /// Installs `lease` as the next one (the word moves to it once the current is spent).
    pub(crate) fn install(&self, guard: &RefillGuard<'_>, lease: Lease) {
        debug_assert!(std::ptr::eq(guard.key, self));
        debug_assert!(lease.permits <= MAX_PERMITS);
        // Relaxed: only the holder writes `installed`.
        let installed = self.installed.load(Ordering::Relaxed);
        // Acquire: the load that orders the record's rewrite after the word left the lease
        // that record held (see the module docs). No lease is waiting (the guard checked), so
        // the word is at `installed`: the record of `installed + 1` is that of an old lease.
        let word = self.word.load(Ordering::Acquire);
        debug_assert_eq!(lease_of(word), installed as u32);
        let next = (installed as u32).wrapping_add(1);
        self.records[(next & 1) as usize].write(lease);
        // Release: publishes the record to the grant that moves the word (Acquire).
        self.installed.store(u64::from(next), Ordering::Release);
    }

    /// Closes the key's leases (no permit of them is granted after this), for a return: the
    /// current one, and the one waiting if any. `retire`: the key takes no lease again (it is
    /// being dropped).
    pub(crate) fn close(&self, retire: bool) -> Closed {
        // Acquire: as in `begin_refill`; no refill installs while this holds the flag.
        if self
            .refill
            .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Closed::Busy;
        }
        let _guard = RefillGuard { key: self, retire };
        // Relaxed: only the holder writes `installed`, and this thread holds the flag.
        let installed = self.installed.load(Ordering::Relaxed) as u32;
        // Acquire: as in `take`.
        let mut word = self.word.load(Ordering::Acquire);
        let backoff = Backoff::new();
        loop {
            let (g, i) = (lease_of(word), next_of(word));
            let current = self.records[(g & 1) as usize].read();
            // A lease waiting (`installed` is g + 1): the word jumps past its last permit,
            // closing both at once; else past the current lease's.
            let waiting = (installed != g).then(|| self.records[(installed & 1) as usize].read());
            let closed = match waiting {
                Some(w) => pack(installed, w.permits),
                None if i >= current.permits => {
                    return Closed::Done {
                        current: None,
                        waiting: None,
                    }
                }
                None => pack(g, current.permits),
            };
            // AcqRel on success: a jump to the waiting lease publishes its record as a move in
            // `take` does; the CAS decides the spent count against every grant. Acquire on
            // failure: as in `take`.
            match self
                .word
                .compare_exchange_weak(word, closed, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    return Closed::Done {
                        current: (i < current.permits).then_some((current, i)),
                        waiting,
                    }
                }
                Err(changed) => {
                    word = changed;
                    backoff.spin();
                }
            }
        }
    }

    /// Whether the key was retired (evicted): it takes no lease again.
    pub(crate) fn is_retired(&self) -> bool {
        // Relaxed: a hint; a retired key is only ever dry, whatever the reader sees.
        self.refill.load(Ordering::Relaxed) == RETIRED
    }

    /// Permits passed over so far.
    pub(crate) fn skipped(&self) -> u64 {
        // Relaxed: a statistic.
        self.skipped.load(Ordering::Relaxed)
    }

    /// The word as it is (an idle sweep compares two readings).
    pub(crate) fn word(&self) -> u64 {
        // Relaxed: compared with an earlier reading only.
        self.word.load(Ordering::Relaxed)
    }

    /// Permits held and not spent: the rest of the current lease and the waiting one (a
    /// snapshot, for the stats).
    pub(crate) fn held(&self) -> u64 {
        // Acquire: as in `take`.
        let word = self.word.load(Ordering::Acquire);
        // Acquire: as in `take` (the waiting lease's record is published by it).
        let installed = self.installed.load(Ordering::Acquire) as u32;
        let g = lease_of(word);
        let current = self.records[(g & 1) as usize].read();
        let mut held = current.permits.saturating_sub(next_of(word));
        if installed != g {
            held += self.records[(installed & 1) as usize].read().permits;
        }
        held
    }

    /// The current lease and its spent permits (a snapshot, for `remaining` and `reset`).
    pub(crate) fn current(&self) -> (Lease, u64) {
        // Acquire: as in `take`.
        let word = self.word.load(Ordering::Acquire);
        (
            self.records[(lease_of(word) & 1) as usize].read(),
            next_of(word),
        )
    }
}

/// Planted bugs for the loom model (compiled only under `--cfg hotlimit_loom`).
#[cfg(hotlimit_loom)]
pub(crate) mod planted {
    use super::*;

    /// [`KeyLease::take`] with the CAS replaced by a load, a check and a plain store: two
    /// threads that read the same `next` both grant the same permit.
    pub(crate) fn racy_take(key: &KeyLease, n: u64, now: u64, interval: u64) -> Take {
        // Acquire: deliberately broken; the orderings are not the bug, the lost update is.
        let word = key.word.load(Ordering::Acquire);
        let (g, i) = (lease_of(word), next_of(word));
        let lease = key.records[(g & 1) as usize].read();
        if i + n > lease.permits {
            return Take::Dry;
        }
        let slot = lease.first_slot + ((i + n - 1) * interval) as i64;
        if (now as i64) < slot {
            return Take::Wait(slot.abs_diff(now as i64));
        }
        key.word.store(pack(g, i + n), Ordering::Release);
        Take::Granted { low: false }
    }
}
