//! The inline table for the loom models (`loom-tests/tests/keyed_table.rs`): the real table
//! and its real slow path, eviction and rebuild, on one tiny segment of `Gcra` states, with a
//! host that has no capacity limit and no overrides, and the planted bugs ([`Plant`]) each
//! model must catch. Compiled only under `--cfg hotlimit_loom`; not part of the API.

use core::hash::{BuildHasherDefault, Hasher};

use super::super::gcra::GcraConfig;
use super::super::word::{inline, TatWord};
use super::super::KeyedState;
use super::{Guard, Host, Plant, Table};
use crate::error::Denied;
use crate::gcra::Gcra;
use crate::rate::Rate;
use crate::sync::{Arc, AtomicU64, Ordering};

/// Every key's home is slot 0: keys collide, so probes walk past each other's slots.
#[derive(Debug, Default)]
pub(crate) struct FirstSlot;

impl Hasher for FirstSlot {
    fn finish(&self) -> u64 {
        0
    }
    fn write(&mut self, _: &[u8]) {}
}

/// A one-segment table of `Gcra` states on `K` keys (`u64`, or `String`, whose keys the table
/// keeps as `StrKey`s), its floor and its configuration.
pub struct ModelTable<K = u64> {
    table: Table<K, Gcra, BuildHasherDefault<FirstSlot>>,
    floor: AtomicU64,
    cfg: Arc<GcraConfig>,
}

impl<K> core::fmt::Debug for ModelTable<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ModelTable").finish_non_exhaustive()
    }
}

impl<K: core::hash::Hash + Eq + Clone + Send + Sync + 'static> ModelTable<K> {
    /// `slots` slots in one segment, every key at `rate` (burst = its limit), with `plant`.
    pub fn new(rate: Rate, slots: usize, plant: Plant) -> Self {
        Self::growing(rate, slots, slots, plant)
    }

    /// One segment that starts with `first` slots and grows (by the real rebuild, when a new
    /// key fills three quarters of it) to at most `most`.
    pub fn growing(rate: Rate, first: usize, most: usize, plant: Plant) -> Self {
        let mut table = Table::with_shape(1, first, most, BuildHasherDefault::default(), 0)
            .expect("GCRA states sit inline");
        table.plant = plant;
        ModelTable {
            table,
            floor: AtomicU64::new(0),
            cfg: Arc::new(<Gcra as KeyedState>::config(rate, None).expect("valid rate")),
        }
    }

    /// `Keyed::try_acquire_at` on the table: the hit path, else the slow path (which creates
    /// the key). `true` if granted.
    pub fn acquire_at(&self, key: K, now: u64) -> bool {
        match self.table.hit(&key, 1, now) {
            Some(decided) => decided.is_ok(),
            None => self.table.acquire_slow(self, &key, 1, now).is_ok(),
        }
    }

    /// `Keyed::try_acquire` on a table larger than a core's cache: the hit path that reads the
    /// clock (`clock`, a loom atomic) itself, after the segment's hint and before the guard
    /// and the segment's load, else the slow path at the time read. `true` if granted.
    pub fn acquire_clocked(&self, key: K, clock: &AtomicU64) -> bool {
        // Relaxed: as `ManualClock` reads its time (a self-contained word).
        match self
            .table
            .hit_clocked(&key, 1, || clock.load(Ordering::Relaxed))
        {
            Ok(decided) => decided.is_ok(),
            Err(now) => self.table.acquire_slow(self, &key, 1, now).is_ok(),
        }
    }

    /// A sweep at `now`: the floor raised, then every idle live slot evicted (the real
    /// eviction). How many went.
    pub fn evict_at(&self, now: u64) -> usize {
        super::super::raise_floor(&self.floor, now);
        let guard = Guard::new();
        let Some(seg) = self.table.segment(0, &guard) else {
            return 0;
        };
        let mut freed = 0;
        for slot in seg.slots.iter() {
            // Relaxed: a snapshot; the eviction's CAS decides (as in `Keyed`'s sweep).
            let w = slot.word.load(Ordering::Relaxed);
            if inline::is_live(w) && inline::tat(w) <= now && self.table.evict(&seg, slot, w) {
                freed += 1;
            }
        }
        freed
    }

    /// A compaction of the segment at `now` (the real rebuild).
    pub fn rebuild_at(&self, now: u64) {
        while !self.table.rebuild(0, None, now) {
            loom::thread::yield_now();
        }
    }

    /// The slots the segment has now (0 before its first key).
    pub fn slots(&self) -> usize {
        let guard = Guard::new();
        self.table
            .segment(0, &guard)
            .map_or(0, |seg| seg.slots.len())
    }

    /// The slots of `key` that are not DEAD (at most one, whatever the interleaving).
    pub fn live_slots(&self, key: K) -> usize {
        let guard = Guard::new();
        let Some(seg) = self.table.segment(0, &guard) else {
            return 0;
        };
        seg.slots
            .iter()
            .filter(|slot| {
                // Relaxed: read after the model's threads joined.
                let v = <AtomicU64 as TatWord>::first(slot.word.load(Ordering::Relaxed))
                    & inline::V_MASK;
                // SAFETY: every thread that wrote a key has been joined.
                #[allow(unsafe_code)]
                let holds = super::cell::written(v) && unsafe { slot.key.matches(&key) };
                holds && v != inline::MOVING
            })
            .count()
    }
}

impl<K: core::hash::Hash + Eq + Clone + Send + Sync + 'static> Host<K, Gcra> for ModelTable<K> {
    fn count(&self) -> u64 {
        0
    }
    fn refuse<Q: core::hash::Hash + ?Sized>(&self, _: &Q, _: u64, _: u64) -> Option<Denied> {
        None
    }
    fn reserve(&self, _: u64) -> Result<(), Denied> {
        Ok(())
    }
    fn make_room(&self, _: u64) {}
    fn floor(&self) -> &AtomicU64 {
        &self.floor
    }
    fn default_cfg(&self) -> Arc<GcraConfig> {
        self.cfg.clone()
    }
    fn commit<Q>(&self, _: &Q, claimed: u64, floor: u64, _: u64) -> u64
    where
        K: core::borrow::Borrow<Q>,
        Q: core::hash::Hash + Eq + alloc::borrow::ToOwned<Owned = K> + ?Sized,
    {
        <AtomicU64 as TatWord>::set(claimed, inline::live(floor, 0), 0)
    }
    fn indirect<Q>(&self, _: &Q, _: u32, _: u64) -> Option<Result<(), Denied>>
    where
        K: core::borrow::Borrow<Q>,
        Q: core::hash::Hash + Eq + ?Sized,
    {
        None
    }
    fn created<Q>(&self, _: &Q, _: usize, _: u64)
    where
        K: core::borrow::Borrow<Q>,
        Q: core::hash::Hash + Eq + alloc::borrow::ToOwned<Owned = K> + ?Sized,
    {
    }
}
