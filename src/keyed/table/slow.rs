//! The table's slow path, written once for [`Keyed`](crate::Keyed) and for the loom models
//! (`loom-tests/tests/keyed_table.rs`): everything but a hit. Creating a key, waiting out a
//! claim, a freeze or a rebuild, reclaiming a segment's dead slots, and handing a key whose
//! slot is INDIRECT to its owner's map. What the table needs from its owner (places, the floor,
//! the default configuration, overrides) is a [`Host`].

use alloc::borrow::ToOwned;
use core::borrow::Borrow;
use core::hash::{BuildHasher, Hash};

use super::super::word::{inline, TatWord, WordOf};
use super::super::KeyedState;
use super::{count_dead, grant, probe_with, Guard, Hit, Probe, Segment, Stored, Table};
use crate::contention::Contention;
use crate::error::Denied;
use crate::sync::{Arc, AtomicU64, Ordering};

/// What a table's slow path needs from the limiter it belongs to.
pub(crate) trait Host<K, L: KeyedState> {
    /// The places counted now (Acquire: read before the probe that finds a key missing, so
    /// that a refusal counts no place of this key's own creator; see `Keyed`'s insert).
    fn count(&self) -> u64;
    /// The refusal of a new key before it claims anything, given the count read before the
    /// probe (a full table whose last sweep deferred the next), or `None`.
    fn refuse<Q: Hash + ?Sized>(&self, key: &Q, count: u64, now: u64) -> Option<Denied>;
    /// Reserves a place for a new key (sweeping a full table if needed).
    fn reserve(&self, now: u64) -> Result<(), Denied>;
    /// Makes room by evicting idle keys (a segment is full of keys that are not dead).
    fn make_room(&self, now: u64);
    /// The floor: the greatest `now` any eviction used, raised before each eviction.
    fn floor(&self) -> &AtomicU64;
    /// The configuration a new segment runs on: the default in force.
    fn default_cfg(&self) -> Arc<L::Config>;
    /// What a new key's claimed slot (`claimed`) becomes once its place is reserved: live at
    /// `floor` (after the base), or INDIRECT once the key's state (it has a rate override) is
    /// in the host's map.
    fn commit<Q>(&self, key: &Q, claimed: WordOf<L>, floor: u64, abs_floor: u64) -> WordOf<L>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized;
    /// An admission on a key whose slot is INDIRECT (its state in the host's map): the
    /// decision, or `None` to look again.
    fn indirect<Q>(&self, key: &Q, permits: u32, now: u64) -> Option<Result<(), Denied>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized;
    /// After a new key's slot was published in segment `s`.
    fn created<Q>(&self, key: &Q, s: usize, now: u64)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized;
}

/// Planted bugs, for the loom models only: each must make its model fail.
#[cfg(hotlimit_loom)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plant {
    /// The real protocol.
    None,
    /// A creator that meets a claimed slot whose key is not written yet passes it (as if it
    /// held another key) instead of waiting: a racing creator of the same key then claims a
    /// second slot for it.
    PassClaimed,
    /// A creator that reads the floor before it probes and claims: an eviction between the
    /// two raises a floor it never sees (issue 14's order).
    FloorFirst,
    /// An eviction that checks idleness with a load and stores DEAD, without the CAS from the
    /// value it read: a grant in between is lost with the state.
    EvictByStore,
    /// A rebuild that copies a live word with a load, without freezing it: a grant on the old
    /// slot after the copy is in neither segment.
    CopyWithoutFreeze,
    /// A hit that reads the keys on its path after a Relaxed load of their words: the key's
    /// write is not ordered before the read (loom's cell reports it).
    RelaxedKeyRead,
    /// A grant on the hit path that stores the value it decided on instead of CASing it from
    /// the value it read: two grants racing on one key both land.
    GrantByStore,
}

impl<K: Hash + Eq + Clone + 'static, L: KeyedState, S: BuildHasher> Table<K, L, S> {
    /// Everything but a hit on `key` (ns `now` on the host's clock): creates the key, waits
    /// out a claim, a freeze or a rebuild, admits through the host's map for a key whose slot
    /// is INDIRECT, and retries until a decision.
    pub(crate) fn acquire_slow<H, Q>(
        &self,
        host: &H,
        key: &Q,
        permits: u32,
        now: u64,
    ) -> Result<(), Denied>
    where
        H: Host<K, L>,
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let (rel, behind) = self.relative(now);
        let (s, spot) = self.locate(key);
        let mut contention = Contention::new();
        loop {
            let count = host.count();
            // The planted bug's floor, read too early (before the probe); `None` for real.
            #[cfg(hotlimit_loom)]
            // Relaxed: deliberately read too early; the order is the bug.
            let early =
                (self.plant == Plant::FloorFirst).then(|| host.floor().load(Ordering::Relaxed));
            #[cfg(not(hotlimit_loom))]
            let early = None;
            let guard = Guard::new();
            let Some(seg) = self.segment(s, &guard) else {
                // The segment's first key: allocate it, on the default in force.
                if let Some(denied) = host.refuse(key, count, now) {
                    return Err(denied.table_full());
                }
                self.ensure(s, &host.default_cfg());
                continue;
            };
            #[cfg(not(hotlimit_loom))]
            let pass_claimed = false;
            #[cfg(hotlimit_loom)]
            let pass_claimed = self.plant == Plant::PassClaimed;
            // Acquire: a creator must see every eviction of the key's earlier states (their
            // DEAD words) before it reads the floor; and see `probe`.
            match probe_with(&seg, spot, key, Ordering::Acquire, pass_claimed) {
                Probe::Found(slot, w) => {
                    let first = <L::Word as TatWord>::first(w);
                    if inline::is_live(first) {
                        match grant::<L>(&seg.cfg, &slot.word, w, permits, rel) {
                            Hit::Granted => return Ok(()),
                            Hit::Denied(denied) => return Err(later(denied, behind)),
                            Hit::NotLive => continue,
                        }
                    }
                    if first & inline::V_MASK == inline::INDIRECT {
                        if let Some(decided) = host.indirect(key, permits, now) {
                            return decided;
                        }
                    }
                    // CLAIMED or MOVING (a creator, a rate change or a rebuild between its
                    // steps), or an override's eviction finishing: look again after it.
                    contention.snooze();
                }
                Probe::Busy => contention.snooze(),
                Probe::Full => {
                    // No FREE slot left in the segment: grow it, reclaim its dead ones, or
                    // refuse.
                    if !self.reclaim(host, s, &seg, now) {
                        return Err(Denied::after_nanos(SEGMENT_FULL_RETRY_NS).table_full());
                    }
                }
                Probe::Absent(at) => {
                    if let Some(denied) = host.refuse(key, count, now) {
                        return Err(denied.table_full());
                    }
                    // Its only refusals are for want of room.
                    self.create(host, &seg, (s, at), key, now, early)
                        .map_err(Denied::table_full)?;
                }
            }
        }
    }

    /// Creates `key` in the FREE slot `at` of segment `s` (or finds that another thread took
    /// that slot: the caller looks again).
    ///
    /// The owned key is made first, so that a `Clone` that blocks holds no slot. The claim is a
    /// CAS FREE → CLAIMED on the first FREE slot of the key's path; only its winner writes the
    /// key, reserves a place, reads the floor and commits. A place not found: the slot goes
    /// DEAD and the key is refused. (`early`: the loom models' planted floor; `None`.)
    fn create<H, Q>(
        &self,
        host: &H,
        seg: &Segment<K, L>,
        (s, at): (usize, usize),
        key: &Q,
        now: u64,
        early: Option<u64>,
    ) -> Result<(), Denied>
    where
        H: Host<K, L>,
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let owned = Stored::new(key.to_owned());
        let slot = &seg.slots[at];
        // Relaxed: the CAS below checks the value.
        let free = slot.word.load(Ordering::Relaxed);
        if <L::Word as TatWord>::first(free) != inline::FREE {
            return Ok(());
        }
        let claimed = <L::Word as TatWord>::marker(free, inline::CLAIMED);
        // Relaxed (both): the claim publishes nothing (the commit's Release publishes the
        // key); a FREE slot never becomes FREE again, so the winner is the one creator of
        // this slot.
        if slot
            .word
            .cas(free, claimed, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return Ok(());
        }
        // SAFETY: we won the claim, and store nothing in the word before this write.
        #[allow(unsafe_code)]
        unsafe {
            slot.key.write(owned);
        }
        // Relaxed: a hint for when to rebuild.
        seg.used.fetch_add(1, Ordering::Relaxed);
        if let Err(denied) = host.reserve(now) {
            // Relaxed: nothing to publish; the slot is dead to every reader.
            let _ = slot.word.cas(
                claimed,
                <L::Word as TatWord>::marker(claimed, inline::DEAD),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            count_dead(seg);
            return Err(denied);
        }
        // Relaxed: our probe read every DEAD word of the key's earlier states with Acquire
        // (each written by an eviction's Release after it raised the floor), and states
        // dropped by a rebuild were read so by the rebuilder before it published this
        // segment, which we loaded with Acquire: every such raise happens before this load.
        let floor = early.unwrap_or_else(|| host.floor().load(Ordering::Relaxed));
        let committed = host.commit(key, claimed, self.relative(floor).0, floor);
        // Release: publishes the key written above to every reader that loads the word with
        // Acquire (`KeyCell`), and an INDIRECT key's map state, put in before (an admitter
        // that reads INDIRECT finds it).
        // Relaxed on failure: nobody else writes a CLAIMED word, so it cannot fail.
        let _ = slot
            .word
            .cas(claimed, committed, Ordering::Release, Ordering::Relaxed);
        if self.worth_rebuilding(seg) {
            self.rebuild(s, None, self.relative(now).0);
        }
        host.created(key, s, now);
        Ok(())
    }

    /// Segment `s` has no FREE slot: rebuild it if it may still grow (creators raced past
    /// the rebuild that `create` starts at three quarters), or if it has dead slots (after
    /// the host made room, if none were dead). `false`: no room in it for a new key.
    fn reclaim<H: Host<K, L>>(&self, host: &H, s: usize, seg: &Segment<K, L>, now: u64) -> bool {
        // Relaxed: a hint.
        if !self.can_grow(seg) && seg.dead.load(Ordering::Relaxed) == 0 {
            // Every slot holds a key that is not dead: only evictions make room.
            host.make_room(now);
            // Relaxed: as above.
            if seg.dead.load(Ordering::Relaxed) == 0 {
                return false;
            }
        }
        if !self.rebuild(s, None, self.relative(now).0) {
            // Someone else is rebuilding it (the caller looks again).
            Contention::new().snooze();
        }
        true
    }

    /// Evicts the live slot last read as `w` at `now` (after the base): one CAS to DEAD, which
    /// fails if a grant, a freeze or another eviction came first. The caller raised the floor
    /// to `now` before, and gives the key's place back on success.
    pub(crate) fn evict(
        &self,
        seg: &Segment<K, L>,
        slot: &super::Slot<K, L::Word>,
        w: WordOf<L>,
    ) -> bool {
        let dead = <L::Word as TatWord>::marker(w, inline::DEAD);
        #[cfg(hotlimit_loom)]
        if self.plant == Plant::EvictByStore {
            // Planted: the value was idle when read; overwrite whatever is there now.
            loop {
                // Relaxed: deliberately broken.
                let now_there = slot.word.load(Ordering::Relaxed);
                if slot
                    .word
                    .cas(now_there, dead, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
                {
                    count_dead(seg);
                    return true;
                }
            }
        }
        // Release on success: a creator of the key that reads this DEAD word (Acquire) then
        // sees the floor raised before it. Relaxed on failure: the key stays.
        if slot
            .word
            .cas(w, dead, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        count_dead(seg);
        true
    }
}

/// How long a new key whose segment is full of keys that are not dead is told to wait (rare:
/// a segment holds its share of keys with 40 % to spare).
const SEGMENT_FULL_RETRY_NS: u64 = 10_000;

/// A wait measured from the table's base, for a `now` that was `behind` ns before it.
#[inline]
fn later(d: Denied, behind: u64) -> Denied {
    match d.retry_after_nanos() {
        Some(w) if behind > 0 => Denied::after_nanos(w.saturating_add(behind)),
        _ => d,
    }
}
