//! [`IntKeyed`]: per-key GCRA for integer keys, every key's state inline in a 16-byte slot of
//! an open-addressed table.
//!
//! [`Keyed`](crate::Keyed) keeps each state behind a pointer in a lock-free map, so a lookup
//! costs the map's node plus the entry: about 1.5 cache misses per call with 100,000 keys. A
//! lock-free map cannot keep a generic key inline safely, but an integer key fits beside its
//! state in one 16-byte word, and then one 128-bit CAS updates key and state together. Here a
//! lookup touches one cache line (two for a key in its second bucket).
//!
//! # Files
//!
//! This file holds the table and its protocol (claim, resolve, grant, evict: one algorithm,
//! kept whole); `int_keyed/key.rs` where a key lives ([`IntKey`], the hash, the buckets
//! and the candidate slots); `int_keyed/builder.rs` the builder and the table's allocation,
//! `int_keyed/ip.rs` the IP address keys and their prefixes, `int_keyed/read.rs` the calls
//! with the clock read, the read-back, [`Decide`](crate::Decide) and `Debug`;
//! `int_keyed/planted.rs` the loom models' planted bugs.
//!
//! # Layout
//!
//! The table is buckets of four slots; a bucket is one 64-byte line. A slot is one
//! `AtomicU128`:
//!
//! ```text
//! { key: 64 bits, meta: { flags: 2 bits, value: 62 bits } }
//! flags 00 FREE       value 0, key 0 (a zeroed table is empty)
//! flags 01 PENDING    value = a tag unique to this claim (from a counter)
//! flags 1p COMMITTED  value = { grants: 2 bits, tat: 60 bits }: the key's GCRA TAT, in ns
//!                     after the limiter's base (its clock at build), at most 2^60 − 1
//!                     (36 years after the base); grants: how many grants found the key idle
//!                     since its state was created (0, 1, or 2 for two and more); p: which of
//!                     the two parameter sets it runs on (see `int_keyed/change.rs`)
//! ```
//!
//! A key hashes (two folded multiplies, seeded at random per limiter) to two buckets, b1 and
//! b2, in the table's *primary area*; a table whose *secondary area* is not empty gives it two
//! more there, b3 and b4. The slots of its buckets (eight, or sixteen) are its *candidates*,
//! ordered by their index in the table; an insert tries b1 first, then b2, then the secondary
//! buckets, so most keys sit in b1, where a hit looks first.
//!
//! Two layouts (`int_keyed/builder.rs`, `layout`): a table of at most 1 MiB is *sparse*, the
//! power of two ≥ 2·`capacity` slots and no secondary area (at most half full; the cache holds
//! it whatever its load, and at low load most keys sit at their home way). A larger one is
//! *dense*: a primary area of `capacity` / 0.85 slots (a multiply-shift maps the hash onto
//! it) and a secondary area of 0.12 slots per key of capacity, which takes the keys whose
//! primary buckets are full (about 6 % of them at capacity): 20.8 bytes per key of capacity
//! instead of 32 to 64, and fewer new keys refused below capacity than the sparse layout at
//! its fullest (the guide has the figures).
//!
//! # Protocol
//!
//! - **Hit**: find `{k, COMMITTED, tat}` among the candidates (b1 first), decide by GCRA, and
//!   CAS the whole slot to `{k, COMMITTED, tat'}`. The key is part of the CAS, so an eviction
//!   (or a reuse of the slot) between the load and the CAS makes it fail. A denial writes
//!   nothing.
//! - **Insert**: claim a slot as `{k, PENDING, tag}` by CAS (a FREE one if `len < capacity`,
//!   or an idle one of another key), then *resolve*: scan the candidates; a COMMITTED k wins
//!   (kill your own pending); otherwise the lowest PENDING k is committed, after every other
//!   PENDING k seen has been killed (CAS to FREE). Anyone may commit someone else's pending,
//!   but only after a second scan that still sees that very claim (same tag). A thread that
//!   sees a PENDING k helps instead of claiming a second slot.
//! - **Evict**: a key whose TAT ≤ now is idle (its state equals a fresh one). An inserter
//!   that needs room may CAS away a *one-shot* idle key (granted at most once since it was
//!   created: a flood's keys) from the instant its TAT is reached, as [`Keyed`](crate::Keyed)
//!   does, and a *returning* one (it came back after going idle: a client) only once it has been
//!   idle for longer than its tolerance τ (the time its burst takes to come back), so a client
//!   that keeps coming back within τ keeps its place whatever a flood of new keys does
//!   (`int_keyed/insert.rs`). The *floor* (the greatest `now` any eviction used) is raised
//!   first and every new state starts at the floor, so a clock that goes backwards never finds
//!   a key younger than the one evicted.
//!
//! - **Rate change** ([`set_rate`](IntKeyed::set_rate)): the new rate goes into the other
//!   parameter set, which becomes current; every slot of the old parity is then carried by
//!   one CAS (`int_keyed/change.rs`).
//!
//! # Lock-freedom and targets
//!
//! A slot is a 16-byte atomic: on x86-64 `cmpxchg16b` (every x86-64 CPU since about 2008) and
//! a `vmovdqa` load (CPUs with AVX), inline in the lookup once the CPU has been asked (once per
//! process: `src/sync/wide.rs`); portable-atomic's elsewhere, native on aarch64, POWER8+ and
//! s390x. There `IntKeyed` is lock-free like the rest of the crate. On a target or CPU without
//! a 16-byte CAS, portable-atomic falls back to a lock per operation: still correct, not
//! lock-free; use [`Keyed`](crate::Keyed) (64-bit atomics only) there.
//!
//! The proof that at most one COMMITTED slot per key exists at any time, and so that no grant
//! is lost or doubled, is in the [`guide`](crate::guide::int_keyed#intkeyed-integer-keys-inline).

use core::{
    fmt,
    marker::PhantomData,
    net::{IpAddr, Ipv4Addr, Ipv6Addr},
    time::Duration,
};

use crossbeam_utils::CachePadded;

use crate::clock::{Clock, DefaultClock};
use crate::contention::Contention;
use crate::error::Denied;
use crate::error::{ConfigError, Value};
use crate::gcra::{decide, price, Params};
use crate::rate::Rate;
use crate::sync::{AtomicU128, AtomicU64, Ordering};

mod builder;
mod change;
mod insert;
mod ip;
mod key;
mod read;

pub use builder::IntKeyedBuilder;
use change::KeyParams;
use insert::later;
pub use ip::IpKey;
pub use key::IntKey;
use key::{fold_mul, sealed, Candidates, CANDIDATES};

/// The value bits of a slot's meta word: a pending claim's tag, or a committed state's grant
/// count and TAT.
const VALUE: u64 = (1 << 62) - 1;
/// The TAT bits of a committed slot's meta word (ns after the base).
const TAT: u64 = (1 << 60) - 1;
/// Where a committed slot's grant count starts in its meta word.
const GRANTS_SHIFT: u32 = 60;
/// The grant count bits of a committed slot's meta word: how many grants found the key idle
/// since its state was created, up to [`RETURNING`].
const GRANTS: u64 = 3 << GRANTS_SHIFT;
/// The grant count of a *returning* key: one that came back after going idle (see
/// `int_keyed/insert.rs`, which idle keys a new key may replace).
const RETURNING: u64 = 2;
/// The flag bits of a slot's meta word.
const FLAGS: u64 = 3 << 62;
const PENDING: u64 = 1 << 62;
/// The committed flag; the other flag bit is then the parity ([`PARITY`]).
const COMMITTED: u64 = 2 << 62;
/// Which parameter set a committed slot runs on.
const PARITY: u64 = 1 << 62;
/// Slots per bucket (one 64-byte line of 16-byte slots).
const WAYS: usize = 4;
/// The bytes of a bucket (one cache line).
const BUCKET_BYTES: u64 = 64;
/// The table size (bytes, in the sparse layout) above which a table is dense: 1 MiB, a core's
/// L2 on common server parts (see [`builder::layout`]).
const DENSE_ABOVE: u64 = 1 << 20;
/// Buckets an inserter sweeps for idle keys when the table holds `capacity` keys.
const SWEEP: usize = 8;

#[inline(always)]
fn pack(key: u64, meta: u64) -> u128 {
    (u128::from(key) << 64) | u128::from(meta)
}

#[inline(always)]
fn key_of(slot: u128) -> u64 {
    (slot >> 64) as u64
}

#[inline(always)]
fn meta_of(slot: u128) -> u64 {
    slot as u64
}

/// Is `slot` the committed state of `key`?
#[inline(always)]
fn holds(slot: u128, key: u64) -> bool {
    key_of(slot) == key && meta_of(slot) & COMMITTED != 0
}

/// The grant count of a committed meta word.
#[inline(always)]
fn grants(meta: u64) -> u64 {
    (meta & GRANTS) >> GRANTS_SHIFT
}

/// The flag and grant count bits after a grant at `now` on the committed meta word `meta` (TAT
/// `tat`): the count one more if the key was idle (full again: TAT ≤ `now`), at most
/// [`RETURNING`]. A key counts as returning only once it came back after going idle, at least
/// an emission interval after its first grant: a flood key sent twice (or five times) in a row
/// stays one-shot, while a client under its limit is idle between requests (as
/// [`Keyed`](crate::Keyed) counts).
#[inline(always)]
fn counted(meta: u64, tat: u64, now: u64) -> u64 {
    let high = meta & !TAT;
    // The count is 0, 1 or 2: below `RETURNING` exactly when its high bit is clear.
    if tat <= now && high & (RETURNING << GRANTS_SHIFT) == 0 {
        high + (1 << GRANTS_SHIFT)
    } else {
        high
    }
}

fn is_pending_of(slot: u128, key: u64) -> bool {
    key_of(slot) == key && meta_of(slot) & FLAGS == PENDING
}

/// One bucket: four slots on one 64-byte line.
#[repr(align(64))]
struct Bucket([AtomicU128; WAYS]);

/// What one pass of a slow-path insert got.
enum Claim {
    /// Our pending claim: its slot index and exact value.
    Mine(usize, u128),
    /// A CAS lost to another thread: look again.
    Lost,
    /// No room: the wait until a slot looked at goes idle, and whether a FREE candidate was
    /// there (then the table holds `capacity` keys, and a sweep may make room).
    Full { wait: u64, free_seen: bool },
}

/// Planted bugs for the loom models; only under `--cfg hotlimit_loom`.
#[cfg(hotlimit_loom)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plant {
    /// The real protocol.
    None,
    /// `resolve` commits the lowest pending without killing the higher ones.
    NoKill,
    /// A rate change that carries a key's state by a store of the value it carried from,
    /// without the CAS: a grant in between is overwritten.
    CarryByStore,
    /// A denial returned as decided, without the check that the parameters it read were the
    /// set its slot value names (`settled`): the request as it was before issue 43.
    UncheckedDenial,
    /// A new key that replaces an idle one stores its claim over the slot instead of a CAS
    /// from the idle value it saw: a grant that landed in between is lost with the key.
    ReplaceByStore,
}

/// Per-key GCRA for integer keys (`u64`, `u32`, `u16`, `i64`, `usize`) and IP addresses
/// ([`Ipv4Addr`], [`Ipv6Addr`] and [`IpAddr`], per network prefix: see [`IpKey`]), every
/// key's state inline in a 16-byte slot of a fixed table: one cache line per lookup, one
/// 128-bit CAS per grant, a denial reads only.
///
/// # Guarantee
///
/// - **Per key, exactly [`Gcra`](crate::Gcra)**: each key has the GCRA of the limiter's rate
///   and burst (one rate for all keys), with the same bound (at most b + ⌊d / I⌋ permits in
///   any interval of length d) and exact `retry_after`, under any concurrency, also while keys
///   are evicted and re-created: at most one state per key exists at any time, and a grant is
///   a CAS of the whole slot, key included (proof in the
///   [`guide`](crate::guide::int_keyed#intkeyed-integer-keys-inline)).
/// - **Bounded memory**: never more than `capacity` keys, in a table allocated at build,
///   however many keys arrive: up to a capacity of 32,768, the power of two ≥ 2·`capacity`
///   slots of 16 bytes (at most 1 MiB; 32 to 64 bytes per key of capacity); above it, 1.3
///   slots per key of capacity (20.8 bytes: a primary area for `capacity` / 0.85 keys and a
///   secondary area for the keys whose primary buckets are full).
/// - **Idle keys are evicted automatically**: a key whose TAT ≤ now (its state equals a fresh
///   one) may be replaced by a new key that needs room, at once if it was granted at most once
///   (a one-shot key), after τ more if it came back after going idle (a returning key). No
///   background thread, no sweep call.
/// - **One rate, changed live**: [`set_rate`](IntKeyed::set_rate) retunes every key while
///   requests run, each key's state carried by `Gcra`'s rule (the permits free stay free, at
///   most the new burst; time owed is never forgiven).
///
/// # When there is no room
///
/// A new key needs a place among its candidate slots (two buckets of four, and two more in
/// the secondary area of a table over 1 MiB) and, unless
/// it replaces an idle key, `len() < capacity`. It takes a FREE candidate, else replaces a
/// candidate idle for longer than its tolerance τ (the time its burst takes to come back),
/// else the one-shot candidate (a key granted at most once) idle most recently, else (when
/// the table holds `capacity` keys) evicts such keys of a few other buckets and tries once
/// more. If that fails it is **denied**, with `retry_after` the time until the earliest of
/// the slots it looked at can go (a one-shot key at its TAT, a returning key 1 ns after its
/// TAT plus τ). Keys already in the table are never affected, and a key that comes back
/// within τ of going idle keeps its place: a flood of new keys (issue 42: 21,100 new addresses
/// a second at capacity 1,000) cannot push out a client under its limit. The instant a key
/// may go is the one [`Keyed`](crate::Keyed) uses: in the same state both tables admit or
/// refuse a new key alike. Denying a new key, rather than evicting a busy one, keeps the
/// per-key guarantee: evicting a busy key would hand it a fresh burst.
///
/// A new key can be denied below capacity when all its buckets are full of busy keys. That is
/// rare: filling a table to capacity with busy keys (random and consecutive keys,
/// `tests/int_keyed.rs`), 0.012–0.031 % of new keys were refused in tables over 1 MiB
/// (capacity 32,769 to 1,000,000, none below half the capacity), 0.010–0.015 % at capacity
/// 20,000, and 0.2–0.4 % in a sparse table that capacity makes exactly half full (1,000 or
/// 32,768; 0 to 2 below half the capacity). Keys are placed by a seeded hash, so a flood of
/// chosen keys cannot target one bucket.
///
/// Time that goes backwards never frees permits (as for `Gcra`; a re-created key starts at
/// the floor, the latest time any eviction used). Times before the limiter's build are treated
/// as its build time; the limiter works for 36 years (2^60 ns) after its build, after which
/// grants are denied with `retry_after() == None`.
///
/// # Examples
///
/// ```
/// use hotlimit::{IntKeyed, ManualClock, Rate};
/// use std::net::Ipv4Addr;
/// use std::time::Duration;
///
/// // 2 per second for each client IP, at most 10,000 IPs tracked.
/// let clock = ManualClock::new();
/// let per_ip: IntKeyed<Ipv4Addr, _> = IntKeyed::builder(Rate::per_second(2)?)
///     .capacity(10_000)
///     .clock(clock.clone())
///     .build()?;
/// let ip = Ipv4Addr::new(192, 0, 2, 7);
/// per_ip.try_acquire(ip)?;
/// per_ip.try_acquire(ip)?;
/// let denied = per_ip.try_acquire(ip).unwrap_err();
/// assert_eq!(denied.retry_after(), Some(Duration::from_millis(500)));
/// assert!(per_ip.try_acquire(Ipv4Addr::new(192, 0, 2, 8)).is_ok()); // another key
/// assert_eq!(per_ip.len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct IntKeyed<K = u64, C = DefaultClock> {
    /// The primary area's buckets, then the secondary area's.
    table: alloc::boxed::Box<[Bucket]>,
    /// Buckets in the primary area (b1 and b2 of every key): a power of two in the sparse
    /// layout (no secondary area).
    primary: usize,
    /// Buckets in the secondary area (b3 and b4), after the primary's; 0 for none.
    secondary: usize,
    /// Hash seeds.
    seed: [u64; 2],
    /// The two parameter sets (interval I, τ = b·I ≤ 2^60 − 1, τ − I, burst b, rate): a
    /// committed slot's parity says which its TAT runs on (see `int_keyed/change.rs`).
    params: [KeyParams; 2],
    /// Which set new states commit on (0 or 1).
    current: AtomicU64,
    /// Commits under way on each set (a rate change waits for the old set's to end).
    committers: [CachePadded<AtomicU64>; 2],
    /// Rate changes take turns on it (odd while one runs).
    changes: AtomicU64,
    capacity: u64,
    /// The clock reading at build: slot times are stored relative to it.
    base: u64,
    /// Non-FREE slots plus places reserved by inserters: ≤ `capacity` at all times.
    len: CachePadded<AtomicU64>,
    /// The source of pending tags: each claim takes the next value.
    tags: CachePadded<AtomicU64>,
    /// The greatest (relative) `now` any eviction used; new states start here.
    floor: CachePadded<AtomicU64>,
    clock: C,
    #[cfg(hotlimit_loom)]
    plant: Plant,
    /// The masks of the IPv4 and IPv6 prefixes ([`IpKey`]s only; other keys ignore them).
    v4_mask: u32,
    v6_mask: u64,
    _key: PhantomData<fn(K)>,
}

impl<K, C> IntKeyed<K, C> {
    #[inline(always)]
    fn slot(&self, i: usize) -> &AtomicU128 {
        &self.table[i / WAYS].0[i % WAYS]
    }

    /// `now` relative to the base (a `now` before the base counts as the base).
    #[inline(always)]
    fn relative(&self, now: u64) -> u64 {
        now.saturating_sub(self.base)
    }

    #[cfg(hotlimit_loom)]
    fn plant(&self) -> Plant {
        self.plant
    }

    /// Whether denials skip their check (the planted `UncheckedDenial`; never outside loom).
    #[inline(always)]
    fn unchecked_denials(&self) -> bool {
        #[cfg(hotlimit_loom)]
        return self.plant == Plant::UncheckedDenial;
        #[cfg(not(hotlimit_loom))]
        false
    }

    /// Take `permits` permits for `key` at time `now` (ns on this limiter's clock), all or
    /// nothing. This is the algorithm; [`try_acquire_n`](IntKeyed::try_acquire_n) is this with
    /// the clock read.
    ///
    /// # Errors
    ///
    /// [`Denied`] with the exact wait when the key's GCRA refuses; with `retry_after() ==
    /// None` when `permits` exceeds the burst; for a new key when there is no room (see
    /// [`IntKeyed`]), with the wait until a slot it looked at goes idle. `permits == 0`
    /// always succeeds and changes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    ///
    /// let limiter: IntKeyed<u64, _> =
    ///     IntKeyed::builder(Rate::per_second(2)?).clock(ManualClock::new()).build()?;
    /// assert!(limiter.try_acquire_n_at(9, 2, 0).is_ok());
    /// let denied = limiter.try_acquire_n_at(9, 1, 0).unwrap_err();
    /// assert_eq!(denied.retry_after_nanos(), Some(500_000_000));
    /// assert!(limiter.try_acquire_n_at(9, 1, 500_000_000).is_ok());
    /// assert!(limiter.try_acquire_n_at(9, 3, 0).unwrap_err().is_never()); // over the burst
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire_n_at(&self, key: K, permits: u32, now: u64) -> Result<(), Denied>
    where
        K: IntKey,
    {
        if permits == 0 {
            return Ok(());
        }
        self.acquire(self.key_bits(key), permits, now)
    }

    /// Take one permit for `key` at time `now`.
    ///
    /// # Errors
    ///
    /// As [`try_acquire_n_at`](IntKeyed::try_acquire_n_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    ///
    /// let limiter: IntKeyed<u32, _> =
    ///     IntKeyed::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert!(limiter.try_acquire_at(5, 0).is_ok());
    /// assert!(limiter.try_acquire_at(5, 1).is_err());
    /// assert!(limiter.try_acquire_at(6, 1).is_ok());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire_at(&self, key: K, now: u64) -> Result<(), Denied>
    where
        K: IntKey,
    {
        self.acquire(self.key_bits(key), 1, now)
    }

    /// The hit path: the key's committed slot in b1, then b2 (then the secondary buckets, out
    /// of line); the slow path otherwise.
    #[inline(always)]
    fn acquire(&self, key: u64, permits: u32, now: u64) -> Result<(), Denied> {
        let h = self.hash(key);
        self.acquire_hashed(key, h, self.b1(h), permits, now)
    }

    /// [`acquire`](IntKeyed::acquire) with the clock read between the hash and the lookup:
    /// the key's first bucket is prefetched before the read, so that its miss (a table larger
    /// than the cache) overlaps the clock instead of following it.
    #[inline(always)]
    fn acquire_now(&self, key: u64, permits: u32) -> Result<(), Denied>
    where
        C: Clock,
    {
        let h = self.hash(key);
        let b1 = self.b1(h);
        // No bounds check: b1 is in the table, and a prefetch never faults anyway.
        crate::sync::prefetch(self.table.as_ptr().wrapping_add(b1));
        let now = self.clock.now();
        self.acquire_hashed(key, h, b1, permits, now)
    }

    /// [`acquire`](IntKeyed::acquire) for a key already hashed, `b1` its first bucket.
    #[inline(always)]
    fn acquire_hashed(
        &self,
        key: u64,
        h: u64,
        b1: usize,
        permits: u32,
        now: u64,
    ) -> Result<(), Denied> {
        let home = Self::home(h);
        let mut b = b1;
        for _ in 0..2 {
            if let Some((slot, v)) = self.probe(b, home, key) {
                return self.grant_or_insert(slot, v, key, h, permits, now);
            }
            b = self.b2(h);
        }
        self.acquire_secondary(key, h, permits, now)
    }

    /// The hit path's end, out of line: the key's committed slot in its secondary buckets
    /// (few keys live there: those whose primary buckets were full when they came), else the
    /// slow path.
    #[cold]
    #[inline(never)]
    fn acquire_secondary(&self, key: u64, h: u64, permits: u32, now: u64) -> Result<(), Denied> {
        match self.probe_secondary(h, key) {
            Some((slot, v)) => self.grant_or_insert(slot, v, key, h, permits, now),
            None => self.acquire_slow(key, h, permits, now),
        }
    }

    /// A grant on the committed `slot` the hit path found as `v`; the slow path if the key left
    /// it between the load and the CAS.
    #[inline(always)]
    fn grant_or_insert(
        &self,
        slot: &AtomicU128,
        v: u128,
        key: u64,
        h: u64,
        permits: u32,
        now: u64,
    ) -> Result<(), Denied> {
        match self.grant(slot, v, key, permits, self.relative(now)) {
            Some(r) => r.map_err(|d| later(d, self.base.saturating_sub(now))),
            None => self.acquire_slow(key, h, permits, now),
        }
    }

    /// `key`'s committed slot in bucket `b` and the value loaded, looking from the home way.
    #[inline(always)]
    fn probe(&self, b: usize, home: usize, key: u64) -> Option<(&AtomicU128, u128)> {
        let bucket = &self.table[b];
        for w in 0..WAYS {
            let slot = &bucket.0[(home + w) % WAYS];
            // SeqCst: every slot access is SeqCst, so that the insert protocol's proof can
            // reason about one total order (on x86-64 this load is the same instruction).
            let v = slot.load(Ordering::SeqCst);
            if holds(v, key) {
                return Some((slot, v));
            }
        }
        None
    }

    /// [`probe`](IntKeyed::probe) in the secondary buckets.
    #[inline]
    fn probe_secondary(&self, h: u64, key: u64) -> Option<(&AtomicU128, u128)> {
        let [b3, b4] = self.secondary_of(h)?;
        let home = Self::home(h);
        self.probe(b3, home, key)
            .or_else(|| self.probe(b4, home, key))
    }

    /// GCRA on the committed `slot` last seen as `v`, with the parameter set its parity names:
    /// `None` when the slot stops holding `key` (evicted, or reused), before anything was
    /// granted. One decision and one CAS inline; a lost CAS goes to [`grant_contended`]
    /// (out of line, so that the uncontended path holds no contention state).
    ///
    /// [`grant_contended`]: IntKeyed::grant_contended
    #[inline(always)]
    fn grant(
        &self,
        slot: &AtomicU128,
        v: u128,
        key: u64,
        permits: u32,
        now: u64,
    ) -> Option<Result<(), Denied>> {
        // A denial returns here, before any write, if it was decided on one parameter set.
        let new = match self.next_value(v, key, permits, now) {
            Ok(new) => new,
            Err(denied) if self.unchecked_denials() => return Some(Err(denied)),
            Err(denied) => match settled(slot, v) {
                None => return Some(Err(denied)),
                Some(current) => return self.grant_contended(slot, current, key, permits, now),
            },
        };
        // SeqCst (both): the whole slot, key included, so a slot evicted or reused since
        // the load fails the CAS; see `acquire` for why SeqCst.
        match slot.compare_exchange_weak(v, new, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => Some(Ok(())),
            Err(current) => self.grant_contended(slot, current, key, permits, now),
        }
    }

    /// [`grant`](IntKeyed::grant) after its CAS lost to `current`: the crate's [`Contention`]
    /// policy, then decide again, until the grant, a denial, or the slot stops holding `key`.
    #[cold]
    #[inline(never)]
    fn grant_contended(
        &self,
        slot: &AtomicU128,
        current: u128,
        key: u64,
        permits: u32,
        now: u64,
    ) -> Option<Result<(), Denied>> {
        let mut contention = Contention::new();
        // SeqCst (a reload after a pause): as every slot access.
        let mut v = contention.lost(current, now, || slot.load(Ordering::SeqCst));
        loop {
            if !holds(v, key) {
                return None;
            }
            let new = match self.next_value(v, key, permits, now) {
                Ok(new) => new,
                Err(denied) if self.unchecked_denials() => return Some(Err(denied)),
                Err(denied) => match settled(slot, v) {
                    None => return Some(Err(denied)),
                    Some(current) => {
                        v = current;
                        continue;
                    }
                },
            };
            // SeqCst (both): as in `grant`.
            match slot.compare_exchange_weak(v, new, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return Some(Ok(())),
                // SeqCst (a reload after a pause): as every slot access.
                Err(current) => v = contention.lost(current, now, || slot.load(Ordering::SeqCst)),
            }
        }
    }

    /// The slot value after granting `permits` at `now` on the committed value `v` of `key`,
    /// by GCRA with the parameter set its parity names, or the denial (nothing written).
    #[inline(always)]
    fn next_value(&self, v: u128, key: u64, permits: u32, now: u64) -> Result<u128, Denied> {
        let meta = meta_of(v);
        let (interval, tolerance, slack_one, burst) = self.numbers_of(meta);
        let (cost, slack) = if permits == 1 {
            // A burst is at least 1: one permit is always priced.
            (interval, slack_one)
        } else {
            // n ≤ b, so n·I ≤ τ < 2^60.
            match price(u64::from(permits), burst, interval, tolerance) {
                Some(price) => price,
                None => return Err(Denied::never()),
            }
        };
        let tat = meta & TAT;
        match decide(tat, now, cost, slack) {
            // The flags (committed, and the parity the decision used) stay as they are; the
            // grant count goes up by one if the key was idle (up to `RETURNING`).
            Ok(next) if next <= TAT => Ok(pack(key, counted(meta, tat, now) | next)),
            Ok(_) => Err(Denied::never()),
            Err(denied) => Err(denied),
        }
    }
}

/// Validates a denial decided on the slot value `v` with the parameters its parity names:
/// `None` when they were the set `v` was committed under (the denial stands), or the slot's
/// current value to decide again on. A change rewrites a parameter set only after it moved
/// every slot off it (each move raises the value and flips the parity), so if a parameter
/// read came from such a rewrite, the fence makes the move of our slot happen before the
/// reload, which then differs from `v`. Off the allowed path (a grant's CAS validates).
#[cold]
#[inline(never)]
fn settled(slot: &AtomicU128, v: u128) -> Option<u128> {
    // Acquire: a parameter load (Relaxed) that read a change's store synchronizes with it
    // here (that store is ordered after the change's moves by its SeqCst accesses).
    crate::sync::fence(Ordering::Acquire);
    // SeqCst: as every slot access.
    let current = slot.load(Ordering::SeqCst);
    (current != v).then_some(current)
}

/// Planted bugs for the loom models: each must make its model fail. Compiled only under
/// `--cfg hotlimit_loom`; not part of the API.
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub mod planted;
