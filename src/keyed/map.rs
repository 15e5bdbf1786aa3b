//! [`Keyed`]: the struct, its map (papaya: every key of a sliding log or window per key, and
//! the keys with a rate override where states sit inline), the dispatch of an admission to
//! the inline table (`admit.rs`) or the map, and the map's admission paths (an existing key, a
//! new key's creation, a retired state). Capacity and sweeps: `room.rs`.

use alloc::borrow::ToOwned;
use core::borrow::Borrow;
use core::fmt;
use core::hash::Hash;

use crossbeam_utils::CachePadded;

use super::table::Table;
use super::{Admit, KeyedState};
use crate::clock::{Clock, DefaultClock};
use crate::contention::Contention;
use crate::error::Denied;
use crate::gcra::Gcra;
use crate::sync::{Arc, AtomicU64, Ordering};

/// The hash map under [`Keyed`] for sliding logs and windows (and for the keys with a rate
/// override where states sit inline): `papaya` with [`MapHasher`], seeded at random per map
/// (about twice as fast as SipHash here; a flood of chosen keys is bounded by the capacity).
///
/// The state words are CASed in place inside the map's values, which is sound only because
/// a value never moves or gets copied while a reader can reach it: papaya boxes every entry
/// and a resize moves the box's pointer to the new table, never the value (it does not
/// even require `V: Clone`), and the `&V` a lookup returns lives as long as the guard. A
/// map that clones values on resize (scc's `HashIndex`) would let a grant land in the old
/// copy after the new one was taken: over-admission. Such a map would need the state
/// behind an `Arc`.
pub(super) type Map<K, V> = papaya::HashMap<K, V, MapHasher>;

/// The hasher of [`Map`]: foldhash's quality variant, a second folded multiply after the fast
/// one, with a random seed per map and the process's random shared seed.
///
/// Not foldhash's fast variant: papaya places a key by the hash's low bits, and the fast
/// variant hashes a `u64` with one folded multiply whose low bits, for consecutive keys, follow
/// the shared seed's multiplier; about one process in 250 drew a multiplier that put keys
/// `0 .. 2,000` on a few slots (317 on one). papaya (with blocking resizes) then rebuilds a
/// table under half full into one of the same size, where the same keys collide again,
/// without end: a `set_rate` on such a key spun allocating tables until the process ran out
/// of memory (24 GB in `tests/stress.rs`). The quality variant spreads those keys as random
/// ones under every seed tried (`consecutive_keys_spread_under_every_shared_seed`).
pub(super) type MapHasher = foldhash::quality::SeedableRandomState;

/// The inline table of a `Keyed<K, L>` (for `Gcra` and `GcraPair`).
pub(super) type KeyTable<K, L> = Table<K, L, super::seed::TableHasher>;

/// What [`Keyed`] does when a new key arrives, the table holds `capacity` keys, and a sweep
/// finds too few idle keys to evict.
///
/// Idle keys (whose state carries no information) are evicted first; this policy only decides
/// what happens when there are not enough of them. Where states sit inline (`Gcra`,
/// `GcraPair`) a sweep ranks the idle keys, so that a flood of new keys does not push out the
/// clients that keep coming back: keys granted twice or more that went idle within their
/// horizon (GCRA: τ) are evicted only when no key granted at most once is busy, so until the
/// flood's keys go idle, new keys are refused rather than those clients evicted (see the
/// [`guide`](crate::guide::keyed#keyed-under-a-flood-of-new-keys)). A sweep runs on one thread at a
/// time; a new key arriving at a full table while another thread sweeps is denied with a
/// 10 µs `retry_after` under either policy.
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, Keyed, ManualClock, Rate, WhenFull};
///
/// let users: Keyed<u64, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(10)?)
///     .capacity(1_000)
///     .when_full(WhenFull::EvictSoonestIdle)
///     .clock(ManualClock::new())
///     .build()?;
/// assert_eq!(users.when_full(), WhenFull::EvictSoonestIdle);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WhenFull {
    /// Deny the new key's request (existing keys are unaffected). The [`Denied`] carries the
    /// earliest time at which the sweep expects enough keys to have gone idle, a lower bound:
    /// busy keys may stay busy longer. No key ever loses its state, so every key keeps the
    /// inner limiter's exact guarantee. The default.
    #[default]
    DenyNewKeys,
    /// Evict the busy keys that will be idle soonest (at least an eighth of the capacity per
    /// sweep) to admit new keys. An evicted busy key **forgets its state**: its next request
    /// starts fresh, so that key may get up to one extra burst. Use it when serving new keys
    /// matters more than the exact limit of keys that have been quiet longest.
    EvictSoonestIdle,
}

/// One map entry: the key's state and, for a key with a rate override, its configuration.
pub(super) struct Slot<L: KeyedState> {
    pub(super) state: L::State,
    /// `None`: the `Keyed`'s default configuration.
    pub(super) cfg: Option<Arc<L::Config>>,
}

/// Per-key limits (per user, per IP, per token): one limiter state per key, created on the
/// key's first request, in a lock-free table with a hard capacity. Keys are owned (`K:
/// 'static`: `String`, `u64`, `IpAddr`, `&'static str`...), because a segment of the table
/// replaced by a rebuild is dropped later by whichever thread leaves it last.
///
/// # Guarantee
///
/// - **Each key gets the inner limiter's guarantee** (for [`Gcra`]: in any interval of length
///   d, at most b + ⌊d / I⌋ permits per key), under any concurrency, including while keys are
///   being evicted: a state is evicted only when it carries no information, by a CAS on the
///   state word that an admission on it cannot race past (see the module docs and the
///   [`guide`](crate::guide)). A key re-created while its old state is being evicted starts
///   no lower than the eviction's time (the floor is read after the new state's insert).
///   The one documented exception is [`WhenFull::EvictSoonestIdle`], which may make a busy
///   key forget its state when the table is full.
/// - **A clock behind the floor** (set back, or a caller whose clock read came before a
///   concurrent sweep's): a new GCRA state starts at TAT = floor, so it admits only what the
///   evicted state would have; a new log or window state denies a request whose `now` is
///   below its floor with `retry_after` = floor − now, since the evicted one may still have
///   counted permits at `now`.
/// - **Memory is checked at build**: `capacity` × the bytes of one key must fit in
///   [`max_memory`](crate::KeyedBuilder::max_memory) (default 1 GiB), so no request allocates a
///   state that was not accounted for.
/// - **Bounded memory**: never more than `capacity` keys. A new key arriving when the table is
///   full triggers a sweep that evicts idle keys (no background thread); if too few are idle,
///   [`WhenFull`] decides. A new key is refused only when `capacity` other keys hold their
///   places (or, where states sit inline, when the idle keys are clients that came back after
///   going idle and are not yet past their horizon: see the eviction order in `room.rs`):
///   threads racing to create one key count it
///   once (its state enters the table or the map pending, and only the creator whose claim won
///   takes a place; requests on it meanwhile wait for that one counter CAS). `len()` never
///   exceeds `capacity`.
/// - An existing key's admission is one probe of its slot (`Gcra`, `GcraPair`) or a map lookup
///   (logs, windows), no shared write, plus the limiter's own atomic: for GCRA one CAS per
///   grant and a single load per denial.
///
/// **Rate overrides**: [`set_rate`](Keyed::set_rate) gives one key its own rate (a premium
/// user), at runtime; [`clear_rate`](Keyed::clear_rate) returns it to the default;
/// [`set_default_rate`](Keyed::set_default_rate) changes the default at runtime. At most
/// `capacity` keys have an override at a time (kept apart from the key states, which they
/// outlive), so the memory of both tables is bounded by `capacity`.
///
/// Memory per key. `Gcra` and `GcraPair`: slots of the state word (8 or 16 bytes) beside the
/// key, which has no flag of its own (a `Gcra` slot is 16 bytes for a `u64` key, 32 for a
/// `String`, whose bytes sit in the slot when it has at most 23 of them and on the heap
/// otherwise), in segments of at most about 1,024 slots, at most 1.4 slots
/// per key of capacity (2.2 MB for `u64` keys at the default capacity of 100,000). For keys
/// with no drop glue (integers, addresses) and `String` keys, in a table whose slots at full length pass 1 MiB,
/// a segment is allocated with its first key at 64 slots and grows as its keys arrive (rebuilt at twice its keys once they fill three quarters
/// of it), so the table holds 1.3 to 2 slots per key it has (beyond a segment's first 64); in
/// smaller tables, and for other keys that own memory, it is allocated at its full length with its
/// first key (a growth would clone each of its keys again). A key with a rate override also has a map entry. Logs and
/// windows: the key, the state (for [`SlidingLog`](crate::SlidingLog) a ring of `limit`
/// timestamps and a gate word; for [`SlidingWindow`](crate::SlidingWindow) its ring of
/// snapshots, the power of two ≥ `buckets + 1` slots, an unpadded header and a gate word), an
/// 8-byte override pointer and the map's entry. Measured (`BENCHMARKS.md`, RSS growth over 1,000,000 keys): 28 bytes
/// per `u64` key for GCRA (governor: 36), 55 per 15-byte `String` key (governor: 101), 55 for a pair, 278 and 342 for a
/// log of limit 10 and a window of 10 buckets.
///
/// **String keys.** A `String` key of at most 23 bytes (user and session ids, tenant names,
/// addresses as text) sits in its slot: a lookup by `&str` reads one slot and no heap bytes,
/// and the table's segments grow with their keys. A longer key (a token) is kept on the heap:
/// its lookup reads the slot, then the key's bytes (two misses in a table larger than the
/// caches, as in governor's keyed limiter). [`ShortKey`](crate::ShortKey) is the same layout
/// as a `Copy` key type that refuses a longer id up front (BENCHMARKS.md has both side by
/// side).
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let per_user: Keyed<&str, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(2)?)
///     .capacity(10_000)
///     .clock(clock.clone())
///     .build()?;
/// per_user.try_acquire(&"alice")?;
/// per_user.try_acquire(&"alice")?;
/// let denied = per_user.try_acquire(&"alice").unwrap_err();
/// assert_eq!(denied.retry_after(), Some(Duration::from_millis(500)));
/// per_user.try_acquire(&"bob")?; // every key has its own limit
/// assert_eq!(per_user.len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Keyed<K, L: KeyedState = Gcra, C = DefaultClock> {
    /// The states of `Gcra` and `GcraPair` keys, inline (`None` for logs and windows).
    pub(super) table: Option<KeyTable<K, L>>,
    /// Logs and windows: every key's state. Inline states: the keys with a rate override
    /// (their slot in the table is INDIRECT).
    pub(super) map: Map<K, Slot<L>>,
    /// Per-key rate overrides, consulted only when a key's state is created.
    pub(super) overrides: Map<K, Arc<L::Config>>,
    /// The default configuration once [`set_default_rate`](Keyed::set_default_rate) ran,
    /// under the key `()` (absent: `cfg`).
    pub(super) default: Map<(), Arc<L::Config>>,
    /// Overrides held plus places reserved by `set_rate`: ≤ `capacity` at all times.
    pub(super) n_overrides: CachePadded<AtomicU64>,
    /// Bumped by every rate change once it is stored, touched by every new key once it is
    /// inserted (RMWs both): see [`sync_override`](Keyed::sync_override).
    pub(super) rates: CachePadded<AtomicU64>,
    /// The built default configuration.
    pub(super) cfg: Arc<L::Config>,
    pub(super) capacity: u64,
    /// The memory budget: `capacity` × [`key_bytes`] of every configuration fits in it.
    pub(super) max_memory: usize,
    /// Keys in the map plus places reserved by inserters: ≤ `capacity` at all times.
    pub(super) len: CachePadded<AtomicU64>,
    /// The greatest `now` any sweep ran at: fresh states treat no time before it as passed.
    pub(super) floor: CachePadded<AtomicU64>,
    /// The earliest time the next sweep may run, or [`SWEEPING`] while one runs.
    pub(super) sweep: CachePadded<AtomicU64>,
    pub(super) when_full: WhenFull,
    pub(super) clock: C,
}

impl<K: Hash + Eq + Clone + 'static, L: KeyedState, C> Keyed<K, L, C> {
    /// Take `permits` permits for `key` at time `now` (nanoseconds on this limiter's clock),
    /// all or nothing; the key's state is created on its first request. This is the
    /// algorithm; [`try_acquire_n`](Keyed::try_acquire_n) is this with the clock read.
    ///
    /// # Errors
    ///
    /// [`Denied`] as the inner limiter denies (exact wait; `retry_after() == None` when
    /// `permits` exceeds what the key's limiter can ever hold), or, for a new key while the
    /// table is full and too few keys are idle ([`WhenFull::DenyNewKeys`]), with the earliest
    /// time a sweep expects room. `permits == 0` always succeeds and creates nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
    ///
    /// let k: Keyed<u32, Gcra, ManualClock> =
    ///     Keyed::gcra(Rate::per_second(2)?).clock(ManualClock::new()).build()?;
    /// assert!(k.try_acquire_n_at(&7, 2, 0).is_ok());
    /// assert_eq!(k.try_acquire_n_at(&7, 1, 0).unwrap_err().retry_after_nanos(), Some(500_000_000));
    /// assert!(k.try_acquire_n_at(&8, 2, 0).is_ok());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline(always)]
    pub fn try_acquire_n_at<Q>(&self, key: &Q, permits: u32, now: u64) -> Result<(), Denied>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if permits == 0 {
            return Ok(());
        }
        // States inline (`Gcra`, `GcraPair`): an existing key is one probe of its slot and one
        // CAS; everything else is the table's slow path.
        if let Some(table) = &self.table {
            if let Some(decided) = table.hit(key, permits, now) {
                return decided;
            }
            return table.acquire_slow(self, key, permits, now);
        }
        // The map (logs, windows), kept small so that it inlines without spilling registers:
        // an existing, live key is one lookup (under the map's epoch guard, no shared write)
        // and the limiter's own atomic. Everything else (a new key, a retired state) goes to
        // `acquire_slow`, which starts over with a lookup of its own.
        {
            let map = self.map.pin();
            if let Some(slot) = map.get(key) {
                let cfg = slot.cfg.as_deref().unwrap_or(&self.cfg);
                match L::acquire(cfg, &slot.state, permits, now) {
                    Admit::Granted => return Ok(()),
                    Admit::Denied(denied) => return Err(denied),
                    Admit::Evicted | Admit::Moving => {}
                }
            }
        }
        self.acquire_slow(key, permits, now)
    }

    /// [`try_acquire_n_at`](Keyed::try_acquire_n_at) for a key that is missing or whose
    /// state was retired: creates, helps remove, or waits out a rate change, and retries.
    #[cold]
    #[inline(never)]
    fn acquire_slow<Q>(&self, key: &Q, permits: u32, now: u64) -> Result<(), Denied>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let guard = self.map.guard();
        let mut contention = Contention::new();
        loop {
            // Acquire: the count before the lookup, for `insert_new`'s refusal at a full
            // table (pairs with the reservations' Release).
            let len = self.len.load(Ordering::Acquire);
            if let Some(slot) = self.map.get(key, &guard) {
                let cfg = slot.cfg.as_deref().unwrap_or(&self.cfg);
                match L::acquire(cfg, &slot.state, permits, now) {
                    Admit::Granted => return Ok(()),
                    Admit::Denied(denied) => return Err(denied),
                    Admit::Evicted => self.remove_evicted(key, &guard),
                    // A rate change is replacing the entry, or its creator is placing
                    // it; look again after it.
                    Admit::Moving => contention.snooze(),
                }
            } else {
                // Its only refusals are for want of room.
                self.insert_new(key, now, len, &guard)
                    .map_err(Denied::table_full)?;
            }
        }
    }

    /// Take one permit for `key` at `now`: [`try_acquire_n_at`](Keyed::try_acquire_n_at)
    /// with 1.
    ///
    /// # Errors
    ///
    /// As [`try_acquire_n_at`](Keyed::try_acquire_n_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
    ///
    /// let k: Keyed<u32, Gcra, ManualClock> =
    ///     Keyed::gcra(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert!(k.try_acquire_at(&1, 0).is_ok());
    /// assert!(k.try_acquire_at(&1, 1).is_err());
    /// assert!(k.try_acquire_at(&1, 1_000_000_000).is_ok());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire_at<Q>(&self, key: &Q, now: u64) -> Result<(), Denied>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.try_acquire_n_at(key, 1, now)
    }

    /// Removes `key`'s entry if it holds an evicted state (whoever succeeds counts it).
    #[cold]
    pub(super) fn remove_evicted<Q>(&self, key: &Q, guard: &impl papaya::Guard)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let removed = super::remove_retired(|| {
            matches!(
                self.map
                    .remove_if(key, |_, slot| L::is_evicted(&slot.state), guard),
                Ok(Some(_))
            )
        });
        if removed {
            // Relaxed: a counter; the map holds the entries themselves.
            self.len.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Creates `key`'s fresh state (or finds that another thread just did), making room first
    /// if the table is full.
    ///
    /// The entry goes into the map first, *pending* (admitters that find it look again), and
    /// only the thread whose insert won reserves a place for it, then commits it. So every
    /// place counted belongs to a distinct key, and a key that does not fit is refused only
    /// when `capacity` other keys hold their places: racing creators of one key no longer
    /// each reserve a place (which made the count read full for a moment, and refused other
    /// new keys, or this one while its creator was preempted). The cost: a request on a key
    /// being created waits for its creator's counter CAS, as one on a key being moved waits
    /// for the mover's map store; and the map may briefly hold, beyond `capacity`, one
    /// pending entry per thread creating a key (never admitted on; removed if refused).
    ///
    /// `len` is the count read (Acquire) before the lookup that found the key missing.
    #[cold]
    fn insert_new<Q>(
        &self,
        key: &Q,
        now: u64,
        len: u64,
        guard: &impl papaya::Guard,
    ) -> Result<(), Denied>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        // Refuse without touching the map (a flood of new keys at a full table costs a few
        // loads per request, not an insert and a removal each). The key's own creator cannot
        // hold one of the counted places: a creator inserts before it counts (Release), so a
        // place we counted (Acquire) before our lookup has its entry visible to that lookup.
        if let Some(denied) = self.deferred(len, now) {
            return Err(denied);
        }
        let cfg = self.rate_of(key);
        let created = super::create::<L, _>(
            &self.floor,
            || {
                let state = L::pending(cfg.as_deref().unwrap_or(&self.cfg));
                let slot = Slot { state, cfg };
                // Err: another thread created (or is creating) the key.
                // The one place a request allocates its owned key: a new key's entry.
                let ours = self.map.try_insert(key.to_owned(), slot, guard).ok()?;
                Some(&ours.state)
            },
            || self.reserve_place(now),
            || {
                let _ = self
                    .map
                    .remove_if(key, |_, slot| L::is_pending(&slot.state), guard);
            },
        );
        created?;
        // A `set_rate` may have raced with our read of the overrides: make sure the state
        // we just published runs on the key's current rate.
        // AcqRel: see `sync_override` (a rate change's RMW before ours is visible to the
        // re-read there; one after ours sees our entry in its own sync).
        self.rates.fetch_add(0, Ordering::AcqRel);
        self.sync_override(key, now);
        Ok(())
    }
}

impl<K, L: KeyedState, C> Keyed<K, L, C> {
    /// The number of keys held (including new keys whose creator has reserved a place and is
    /// about to commit it).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
    ///
    /// let k: Keyed<u32, Gcra, ManualClock> =
    ///     Keyed::gcra(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert!(k.is_empty());
    /// k.try_acquire_at(&1, 0).unwrap();
    /// assert_eq!(k.len(), 1);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn len(&self) -> usize {
        // Relaxed: a snapshot of the counter.
        self.len.load(Ordering::Relaxed) as usize
    }

    /// Whether no key is held.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
    ///
    /// let k: Keyed<u32, Gcra, ManualClock> =
    ///     Keyed::gcra(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert!(k.is_empty());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most keys held at once.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, Rate};
    /// let k = Keyed::<u32, Gcra>::gcra(Rate::per_second(1)?).capacity(64).build()?;
    /// assert_eq!(k.capacity(), 64);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }

    /// The policy when the table is full.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, Rate, WhenFull};
    /// let k = Keyed::<u32, Gcra>::gcra(Rate::per_second(1)?).build()?;
    /// assert_eq!(k.when_full(), WhenFull::DenyNewKeys);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn when_full(&self) -> WhenFull {
        self.when_full
    }

    /// The limiter's clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, Gcra, Keyed, ManualClock, Rate};
    /// let k: Keyed<u32, Gcra, ManualClock> =
    ///     Keyed::gcra(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(k.clock().now(), 0);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.clock
    }
}

impl<K: Hash + Eq + Clone + 'static, L: KeyedState, C: Clock> Keyed<K, L, C> {
    /// Take one permit for `key` now.
    ///
    /// Every method that takes a key takes it borrowed, in any form the key can be borrowed
    /// as (`K: Borrow<Q>`, as `HashMap::get`): a `Keyed<String, _>` is looked up by `&str`,
    /// a `Keyed<Vec<u8>, _>` by `&[u8]`. The owned key is built (`Q::to_owned`) only when a
    /// new key's entry is inserted, so a request on an existing key allocates nothing.
    ///
    /// # Errors
    ///
    /// As [`try_acquire_n_at`](Keyed::try_acquire_n_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, Rate};
    ///
    /// let per_user = Keyed::<String, Gcra>::gcra(Rate::per_second(10)?).build()?;
    /// assert!(per_user.try_acquire("alice").is_ok()); // a &str
    /// assert!(per_user.try_acquire(&String::from("alice")).is_ok()); // or a &String
    /// assert_eq!(per_user.len(), 1);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire<Q>(&self, key: &Q) -> Result<(), Denied>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.acquire_now(key, 1)
    }

    /// Take `permits` permits for `key` now, all or nothing.
    ///
    /// # Errors
    ///
    /// As [`try_acquire_n_at`](Keyed::try_acquire_n_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, Rate};
    ///
    /// let per_user = Keyed::<u64, Gcra>::gcra(Rate::per_second(10)?).build()?;
    /// assert!(per_user.try_acquire_n(&1, 10).is_ok());
    /// assert!(per_user.try_acquire_n(&1, 11).unwrap_err().is_never());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire_n<Q>(&self, key: &Q, permits: u32) -> Result<(), Denied>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if permits == 0 {
            return Ok(());
        }
        self.acquire_now(key, permits)
    }

    /// [`try_acquire_n_at`](Keyed::try_acquire_n_at) at the clock's `now`; in an inline table
    /// larger than a core's cache, read between finding the key's slot and loading it
    /// ([`KeyTable::hit_clocked`]), so that the slot's miss overlaps the clock read.
    #[inline(always)]
    fn acquire_now<Q>(&self, key: &Q, permits: u32) -> Result<(), Denied>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        match &self.table {
            Some(table) if table.early => {
                match table.hit_clocked(key, permits, || self.clock.now()) {
                    Ok(decided) => decided,
                    Err(now) => table.acquire_slow(self, key, permits, now),
                }
            }
            _ => self.try_acquire_n_at(key, permits, self.clock.now()),
        }
    }
}

impl<K, L: KeyedState, C> fmt::Debug for Keyed<K, L, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The default in force: after `set_default_rate`, the new one (issue 17: `Debug` kept
        // printing the configuration the limiter was built with).
        let default = self.default.pin();
        let config: &dyn fmt::Debug = match default.get(&()) {
            Some(cfg) => cfg,
            None => &self.cfg,
        };
        f.debug_struct("Keyed")
            .field("config", config)
            .field("capacity", &self.capacity)
            // Relaxed: a snapshot for display.
            .field("len", &self.len.load(Ordering::Relaxed))
            .field("when_full", &self.when_full)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(hotlimit_loom)))]
mod tests {
    use core::hash::BuildHasher;

    use foldhash::SharedSeed;

    use super::MapHasher;

    /// The most keys `0 .. n` that share one slot of a table of `slots` (a power of two), placed
    /// as papaya places them: by the hash's low bits.
    fn fullest_slot(hasher: &impl BuildHasher, n: u64, slots: u64) -> u32 {
        let mut count = std::vec![0u32; slots as usize];
        for key in 0..n {
            count[(hasher.hash_one(key) & (slots - 1)) as usize] += 1;
        }
        count.into_iter().max().unwrap_or(0)
    }

    /// Keys `0 .. 2,000` in 4,096 slots, under 5,000 random shared seeds: with the map's hasher
    /// no slot holds more than 12 (random keys: about 6); with foldhash's fast variant, the
    /// hasher this map had, some seeds put hundreds on one slot (about one seed in 250; papaya
    /// then resized without end). The twin shows the check would catch that hasher.
    #[test]
    fn consecutive_keys_spread_under_every_shared_seed() {
        let random = std::hash::RandomState::new();
        let (mut worst, mut worst_fast) = (0, 0);
        for i in 0..5_000u64 {
            let shared: &'static SharedSeed = std::boxed::Box::leak(std::boxed::Box::new(
                SharedSeed::from_u64(random.hash_one(i)),
            ));
            let per_map = random.hash_one(!i);
            worst = worst.max(fullest_slot(
                &MapHasher::with_seed(per_map, shared),
                2_000,
                4_096,
            ));
            worst_fast = worst_fast.max(fullest_slot(
                &foldhash::fast::SeedableRandomState::with_seed(per_map, shared),
                2_000,
                4_096,
            ));
        }
        assert!(worst <= 12, "{worst} consecutive keys on one slot");
        assert!(
            worst_fast > 12,
            "the fast variant spread every seed ({worst_fast}): the check cannot tell"
        );
    }
}
