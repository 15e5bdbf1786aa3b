//! [`DenialCache`]: denials remembered per key, so that a denied key is denied again locally,
//! with no round trip, until its retry-after has passed.
//!
//! The map is the algorithm-free part: it stores an [`Entry`] per key and drops stale ones.
//! What an entry means, and when it denies, is each algorithm's rule ([`crate::gcra`],
//! [`crate::sliding_log`]).
//!
//! Two levels: each thread's copies of recent denials (`cache/copies.rs`: no lock, no atomic
//! operation, for the key a thread keeps asking about), then the shared map (32 shards, a
//! `Mutex` each), which the copies are filled from.
//!
//! Times are nanoseconds on the process's monotonic clock, taken **before** the request was
//! sent. The server decided at some instant after that, so a remembered "free at" is never later
//! than the server's: the cache can only send a request to Redis that Redis then denies, never
//! deny one that Redis would have granted (both clocks running at the same rate).

use crate::sync::{AtomicU64, Ordering};
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::Mutex;

use hotlimit::{Clock, QuantaClock};

mod copies;

/// The ids of caches, for their threads' copies.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// What is remembered of one denial (local ns), as the algorithm that made it reads it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    /// GCRA: the key's TAT; log: when the refused request is free. Past it the entry denies
    /// nothing, and a sweep may drop it.
    pub(crate) free_at: u64,
    /// Log only: the least n the entry refuses.
    pub(crate) n_min: u32,
    /// Log only: permits left at the denial (a snapshot; time can only raise it).
    pub(crate) remaining: u64,
    /// Log only: when the key is full again.
    pub(crate) reset_at: u64,
    /// Several windows only: the window that bound at the denial (its quota is reported).
    pub(crate) binding: usize,
}

/// Shards of the map: a power of two, so a hash picks one with a mask.
const SHARDS: usize = 32;

/// A shard: the key's 64-bit hash → the key and its entry. The hash is computed once per call
/// (it picks the shard and is the map's key, hashed again by a no-op hasher); the stored key
/// is compared, so two keys with one hash only evict each other's entries (a miss, never a
/// wrong answer).
type Map = HashMap<u64, (Box<str>, Entry), BuildHasherDefault<PassHash>>;
type Shard = Mutex<Map>;

/// The identity hasher of [`Map`]: its keys are already foldhash hashes.
#[derive(Default)]
struct PassHash(u64);

impl Hasher for PassHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used (the key is a u64); fold anything else in anyway.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A bounded map from the user's key (the prefix is the limiter's, so it is left out: a lookup
/// needs no allocation) to its last denial: 32 shards, each a `HashMap` behind a `Mutex` held
/// for one lookup or insert (measured faster than papaya's lock-free map here: an uncontended
/// lock is one CAS, a papaya pin a fence; contention is spread over the shards).
pub(crate) struct DenialCache {
    /// This cache's tag in the threads' copies.
    id: u64,
    shards: Box<[Shard]>,
    /// The keys' hash: its top bits pick the shard, and the whole is the shard's map key.
    /// Seeded at random per cache: keys come from clients, and with a seed known in advance
    /// (foldhash's fixed one) keys whose hashes share their low bits, which pick the bucket,
    /// can be ground offline, turning a shard's lookups into a scan under its lock.
    hasher: foldhash::fast::RandomState,
    /// Entries in all shards.
    len: AtomicU64,
    capacity: usize,
    /// hotlimit's TSC clock (a few ns a read, where `Instant::now` is tens).
    clock: QuantaClock,
    /// The local ns of the last sweep of stale entries (at most one per millisecond).
    last_sweep: AtomicU64,
}

impl std::fmt::Debug for DenialCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DenialCache")
            .field("len", &self.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl DenialCache {
    pub(crate) fn new(capacity: usize) -> Self {
        let hasher = foldhash::fast::RandomState::default();
        DenialCache {
            // Relaxed: a unique number, nothing is published with it.
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            shards: (0..SHARDS).map(|_| Mutex::new(Map::default())).collect(),
            hasher,
            len: AtomicU64::new(0),
            capacity,
            clock: QuantaClock::new(),
            last_sweep: AtomicU64::new(0),
        }
    }

    pub(crate) fn is_enabled(&self) -> bool {
        self.capacity > 0
    }

    pub(crate) fn len(&self) -> usize {
        // Relaxed: a count for the capacity check and the stats; it need not be exact.
        self.len.load(Ordering::Relaxed) as usize
    }

    /// The key's hash and its shard, locked.
    fn shard(&self, key: &str) -> (u64, std::sync::MutexGuard<'_, Map>) {
        let h = self.hasher.hash_one(key);
        (h, self.lock(h))
    }

    /// The shard of hash `h`, locked.
    fn lock(&self, h: u64) -> std::sync::MutexGuard<'_, Map> {
        // A poisoned shard only means a thread panicked while holding it; the map is intact
        // (inserts and removals are single calls).
        self.shards[(h >> 59) as usize % SHARDS]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Local nanoseconds since the cache was made.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.clock.now()
    }

    /// What `rule` makes of the entry remembered for `key`: this thread's copy first, then
    /// (when the copy is missing or denies nothing) the shared map's, copied here when it
    /// denies. `None`: no entry denies, Redis must be asked.
    ///
    /// `rule` has one call site (a loop over the two entries), so that it is inlined into the
    /// caller: called from two places, it was compiled out of line and its [`Decision`]
    /// (hotlimit's) returned through memory.
    #[inline(always)]
    pub(crate) fn deny<R>(&self, key: &str, rule: impl Fn(&Entry) -> Option<R>) -> Option<R> {
        if !self.is_enabled() {
            return None;
        }
        let hash = self.hasher.hash_one(key);
        let mut entry = copies::get(self.id, hash, key);
        let mut shared = false;
        loop {
            if let Some(denied) = entry.as_ref().and_then(&rule) {
                if shared {
                    copies::put(self.id, hash, key, entry?);
                }
                return Some(denied);
            }
            if shared {
                return None;
            }
            shared = true;
            entry = self.shared_entry(hash, key);
        }
    }

    /// The shared map's entry for `key` (out of line: the hot path is a copy).
    #[inline(never)]
    fn shared_entry(&self, hash: u64, key: &str) -> Option<Entry> {
        let map = self.lock(hash);
        match map.get(&hash) {
            Some((k, e)) if **k == *key => Some(*e),
            _ => None,
        }
    }

    /// Remembers `entry` for `key` at local `now`, unless the cache is full of live entries.
    pub(crate) fn insert(&self, key: &str, entry: Entry, now: u64) {
        if !self.is_enabled() {
            return;
        }
        if self.len() >= self.capacity
            && !self.shard(key).1.contains_key(&self.hasher.hash_one(key))
        {
            self.sweep(now);
            if self.len() >= self.capacity {
                // Full of live denials: this one is not cached (the next request asks Redis).
                return;
            }
        }
        let (h, mut map) = self.shard(key);
        if map.insert(h, (key.into(), entry)).is_none() {
            // Relaxed: as in `len`.
            self.len.fetch_add(1, Ordering::Relaxed);
        }
        drop(map);
        copies::put(self.id, h, key, entry);
    }

    /// Drops the entries that no longer deny anything (at most once per millisecond).
    fn sweep(&self, now: u64) {
        // Relaxed: `last_sweep` only spaces the sweeps out; two threads sweeping at once
        // is harmless (both remove only stale entries).
        let last = self.last_sweep.load(Ordering::Relaxed);
        if now < last + 1_000_000 {
            return;
        }
        // Relaxed: as above.
        self.last_sweep.store(now, Ordering::Relaxed);
        for shard in self.shards.iter() {
            let mut map = shard.lock().unwrap_or_else(|e| e.into_inner());
            let before = map.len();
            map.retain(|_, (_, e)| e.free_at > now);
            // Relaxed: as in `len`.
            self.len
                .fetch_sub((before - map.len()) as u64, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys ground so that their hashes under `fixed` agree in the low `bits` bits (what an
    /// attacker who knows the seed does offline).
    fn ground(fixed: &impl BuildHasher, count: usize, bits: u32) -> Vec<String> {
        let mask = (1u64 << bits) - 1;
        let target = fixed.hash_one("key-0") & mask;
        (0u64..)
            .map(|i| format!("key-{i}"))
            .filter(|k| fixed.hash_one(k.as_str()) & mask == target)
            .take(count)
            .collect()
    }

    /// The low bits of `keys`' hashes under `hasher`: how many differ.
    fn distinct_low_bits(hasher: &impl BuildHasher, keys: &[String], bits: u32) -> usize {
        let mask = (1u64 << bits) - 1;
        let mut low: Vec<u64> = keys
            .iter()
            .map(|k| hasher.hash_one(k.as_str()) & mask)
            .collect();
        low.sort_unstable();
        low.dedup();
        low.len()
    }

    /// 64 keys ground against foldhash's fixed seed to one bucket of 4,096 spread under each
    /// cache's own seed (64 random values in 4,096 bucket numbers: about 63.5 distinct; a
    /// value under 48 has a chance far below 1e-12). The planted twin, the fixed seed, puts
    /// all 64 on one value.
    #[test]
    fn keys_ground_against_a_known_seed_spread_in_every_cache() {
        let fixed = foldhash::fast::FixedState::default();
        let keys = ground(&fixed, 64, 12);
        assert_eq!(distinct_low_bits(&fixed, &keys, 12), 1, "the planted twin");
        for _ in 0..20 {
            let cache = DenialCache::new(16);
            let spread = distinct_low_bits(&cache.hasher, &keys, 12);
            assert!(spread >= 48, "{spread} distinct bucket numbers of 64 keys");
        }
    }
}
