//! Room in a [`Keyed`]: the places (at most `capacity` keys), the refusal of new keys while a
//! full table waits for keys to go idle, and the sweeps that evict idle keys, in the map and
//! in the inline table.
//!
//! **Which idle keys a sweep evicts.** An idle key carries no information, so evicting any of
//! them keeps every guarantee; the choice only decides who competes for a place next. In the
//! inline table a state counts the grants that found it idle (2 bits of its word, saturating
//! at 3); a key granted at most once since it was created is *one-shot*, one that came back
//! after going idle (at least an emission interval after its first grant) is *returning*. A
//! key that repeats itself at once (a flood sending each key twice, or five times, in a row)
//! stays one-shot: issue 42's probe refused a steady client 25 of 41 times with each flood
//! key sent twice while any second grant made a key returning. A sweep evicts up to an
//! eighth of the capacity, in this order:
//!
//! 1. keys idle for longer than their horizon (for GCRA its tolerance τ, the time its whole
//!    burst takes to come back): whatever they were, they did not come back;
//! 2. one-shot keys, those idle most recently first, leaving the sixteenth of the capacity
//!    idle longest: a flood of new keys, each seen once, churns through the places of its own
//!    kind, while a client between its first two requests (idle since before the flood's keys
//!    were granted) keeps its place.
//!
//! A returning key keeps its place until it is idle past its horizon (new keys are refused
//! until then, as [`WhenFull::DenyNewKeys`] says): a flood whose keys come back once they are
//! idle, as a client does, takes the places that go free, never a returning client's. (Before
//! issue 42 a sweep evicted returning keys too, idle longest first, once no one-shot key was
//! busy: such a flood then refused a steady client 40 of 41 times.)
//!
//! Without this, a client under its limit was idle between requests, was evicted, and then
//! competed with the flood as a new key: 25 of 39 requests refused in the probe of issue 26.
//! [`evict_idle_at`](Keyed::evict_idle_at) still evicts every idle key. Sliding logs and
//! windows (in the map) have no grant count: a sweep evicts every idle one.

use alloc::vec::Vec;
use core::hash::Hash;

use super::map::{KeyTable, Keyed, WhenFull};
use super::table::{Guard, SegRef, Segment, Slot};
use super::word::{inline, TatWord, WordOf};
use super::{KeyedState, Retire};
use crate::error::Denied;
use crate::sync::Ordering;

/// The part of the capacity (1/16) a sweep leaves to the idle one-shot keys idle longest.
const SPARED: u64 = 16;

/// How long a caller that finds the table full while another thread is sweeping it is told
/// to wait: the sweep is already freeing room.
pub(super) const SWEEP_BUSY_RETRY_NS: u64 = 10_000;

/// The `sweep` word's value while a sweep runs (no other `next sweep time` can be `u64::MAX`
/// that matters: a clock at `u64::MAX` is exhausted).
pub(super) const SWEEPING: u64 = u64::MAX;

/// An idle key of the table that a sweep may evict: when it went idle (after the base), its
/// segment (an index into the segments the sweep read, under one guard), its slot, and its word
/// as the sweep read it (the eviction is a CAS from that very value).
type Idle<W> = (u64, usize, usize, W);

/// What one sweep found: the keys it freed, when the busy ones go idle (absolute), and the
/// table's idle keys it has not evicted yet (gone, one-shot; returning keys count as busy
/// until they are gone).
struct Found<W> {
    freed: u64,
    busy: Vec<u64>,
    /// Idle for longer than their horizon: they did not come back.
    gone: Vec<Idle<W>>,
    one_shot: Vec<Idle<W>>,
}

impl<W> Default for Found<W> {
    fn default() -> Self {
        Found {
            freed: 0,
            busy: Vec::new(),
            gone: Vec::new(),
            one_shot: Vec::new(),
        }
    }
}

/// The segments of a table as one sweep reads them, under its one guard (so that every slot it
/// set aside is evicted in the very segment it was read in: after a rebuild, a CAS there
/// fails on the frozen word, where a fresh look by index would find another key).
type Segs<'g, K, L> = Vec<Option<SegRef<'g, Segment<K, L>>>>;

impl<K: Hash + Eq + Clone + 'static, L: KeyedState, C> Keyed<K, L, C> {
    /// Reserves a place for one new key: ≤ `capacity` keys and reservations at all times.
    pub(super) fn reserve_place(&self, now: u64) -> Result<(), Denied> {
        // Relaxed: a counter; the CAS below keeps it ≤ capacity.
        let mut len = self.len.load(Ordering::Relaxed);
        loop {
            if len >= self.capacity {
                self.make_room(now)?;
                // Relaxed: as above.
                len = self.len.load(Ordering::Relaxed);
                continue;
            }
            // Release on success: a creator that sees the count full (Acquire, in
            // `insert_new`) then finds our pending entry, inserted before this. Relaxed on
            // failure: we only retry.
            match self
                .len
                .compare_exchange_weak(len, len + 1, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return Ok(()),
                Err(current) => len = current,
            }
        }
    }

    /// The refusal for a new key while the table is full (`len` places counted) and the last
    /// sweep, having found too few idle keys, deferred the next one to a time after `now`.
    pub(super) fn deferred(&self, len: u64, now: u64) -> Option<Denied> {
        if len < self.capacity {
            return None;
        }
        // Relaxed: a time hint, as in `make_room`.
        let next = self.sweep.load(Ordering::Relaxed);
        (next != SWEEPING && now < next).then(|| Denied::after_nanos(next - now))
    }

    /// For a preview ([`Decide::peek`](crate::Decide::peek)) of a key that holds no place:
    /// `None` when a new key would find room now, else the wait a refusal for want of room
    /// reports. A full table is swept first, as a new key's request would sweep it: a sweep
    /// evicts idle keys only, which changes no key's limit.
    pub(super) fn no_room(&self, now: u64) -> Option<u64> {
        // Relaxed: a snapshot, as in `reserve_place`.
        if self.len.load(Ordering::Relaxed) < self.capacity {
            return None;
        }
        self.make_room(now)
            .err()
            .map(|d| d.retry_after_nanos().unwrap_or(u64::MAX))
    }

    /// The table is full: sweep it (one thread at a time), or deny.
    #[cold]
    pub(super) fn make_room(&self, now: u64) -> Result<(), Denied> {
        // Relaxed: the sweep word is a try-lock on the (rare) sweep and a time hint; it guards
        // no data (the sweep's effects are in the state words and the map).
        let next = self.sweep.load(Ordering::Relaxed);
        if next == SWEEPING {
            return Err(Denied::after_nanos(SWEEP_BUSY_RETRY_NS));
        }
        if now < next {
            // Unless places were given back since (a refused creator's), still full.
            // Relaxed: as in `reserve_place`.
            return self
                .deferred(self.len.load(Ordering::Relaxed), now)
                .map_or(Ok(()), Err);
        }
        // Relaxed (both): see above.
        if self
            .sweep
            .compare_exchange(next, SWEEPING, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return Err(Denied::after_nanos(SWEEP_BUSY_RETRY_NS));
        }
        let (freed, next) = self.sweep_at(now);
        // Relaxed: see above.
        self.sweep.store(next, Ordering::Relaxed);
        // Relaxed: as in `reserve_place`: places given back during the sweep are room too.
        if freed > 0 || self.len.load(Ordering::Relaxed) < self.capacity {
            Ok(())
        } else {
            Err(Denied::after_nanos(next.saturating_sub(now).max(1)))
        }
    }

    /// One sweep: evicts idle keys (one-shot ones first in the table: see the module docs),
    /// then applies the [`WhenFull`] policy if fewer than an eighth of the capacity went.
    /// Returns the keys freed and the earliest next sweep time.
    #[cold]
    fn sweep_at(&self, now: u64) -> (u64, u64) {
        let target = (self.capacity / 8).max(1);
        // The floor must be raised before any state is retired at `now` (see `create`).
        super::raise_floor(&self.floor, now);
        let mut found = Found::default();
        self.sweep_map(now, &mut found);
        let guard = Guard::new();
        let segs = self.segments(&guard);
        if let Some(table) = &self.table {
            self.sweep_table(table, &segs, now, &mut found, false);
            self.evict_idle(&segs, target, &mut found);
        }
        if found.freed >= target {
            return (found.freed, 0);
        }
        // Too few idle keys: the time by which `target − freed` more will be idle.
        let need = (target - found.freed) as usize;
        let busy = &mut found.busy;
        let when = if busy.len() >= need {
            *busy.select_nth_unstable(need - 1).1
        } else {
            busy.iter().copied().max().unwrap_or(now)
        };
        match self.when_full {
            WhenFull::DenyNewKeys => (found.freed, when.max(now)),
            WhenFull::EvictSoonestIdle => {
                self.force_evict(&segs, now, when, target, &mut found);
                (found.freed, 0)
            }
        }
    }

    /// The map's part of a sweep: every idle state in it (all keys of a log or window per key;
    /// the keys with an override where states sit inline) is evicted.
    fn sweep_map(&self, now: u64, found: &mut Found<WordOf<L>>) {
        let guard = self.map.guard();
        for (key, slot) in self.map.iter(&guard) {
            let cfg = slot.cfg.as_deref().unwrap_or(&self.cfg);
            if L::retire(cfg, &slot.state, now, Retire::IfIdle).is_some() {
                self.remove_dead(key, &guard);
                found.freed += 1;
            } else {
                // Pending, moving and evicted states (u64::MAX) do not go idle by waiting.
                match L::idle_at(cfg, &slot.state) {
                    u64::MAX => {}
                    at => found.busy.push(at),
                }
            }
        }
    }

    /// Removes an entry of the map whose state this thread retired (evicted): for a key of the
    /// inline table, its slot goes DEAD too.
    fn remove_dead(&self, key: &K, guard: &impl papaya::Guard) {
        match &self.table {
            Some(table) => self.remove_indirect(table, key, guard),
            None => self.remove_evicted(key, guard),
        }
    }

    /// The table's segments, read under `guard` for one sweep (empty: no table).
    fn segments<'g>(&self, guard: &'g Guard) -> Segs<'g, K, L> {
        let Some(table) = &self.table else {
            return Vec::new();
        };
        (0..table.segments())
            .map(|s| table.segment(s, guard))
            .collect()
    }

    /// The table's part of a sweep: evicts its idle keys at `now` if `all`, else sets them
    /// aside in `found` (gone and one-shot) for [`evict_idle`](Keyed::evict_idle).
    fn sweep_table(
        &self,
        table: &KeyTable<K, L>,
        segs: &Segs<'_, K, L>,
        now: u64,
        found: &mut Found<WordOf<L>>,
        all: bool,
    ) {
        let (rel, _) = table.relative(now);
        for (s, seg) in segs.iter().enumerate() {
            let Some(seg) = seg else {
                continue;
            };
            let horizon = L::horizon(&seg.cfg);
            for (i, slot) in seg.slots.iter().enumerate() {
                // Relaxed: a snapshot; the eviction's CAS from this value decides.
                let w = slot.word.load(Ordering::Relaxed);
                let Some(idle) = idle_at::<L>(w) else {
                    continue;
                };
                let returning = inline::grants(<L::Word as TatWord>::first(w)) >= inline::RETURNING;
                if idle > rel {
                    found.busy.push(idle.saturating_add(table.base));
                } else if all {
                    if self.evict_slot(seg, slot, w) {
                        found.freed += 1;
                    }
                } else if rel - idle > horizon {
                    found.gone.push((idle, s, i, w));
                } else if returning {
                    // Its place is free once it is gone: as a busy key's, when it goes idle.
                    let gone = idle.saturating_add(horizon).saturating_add(1);
                    found.busy.push(gone.saturating_add(table.base));
                } else {
                    found.one_shot.push((idle, s, i, w));
                }
            }
        }
    }

    /// Evicts the idle keys a sweep set aside until `target` keys went (see the module docs):
    /// those idle past their horizon; then one-shot keys, those idle *most recently* first,
    /// but not the [`SPARED`] part of the capacity idle longest (a client between its first
    /// two requests). Returning keys stay until they are gone (past their horizon).
    fn evict_idle(&self, segs: &Segs<'_, K, L>, target: u64, found: &mut Found<WordOf<L>>) {
        let mut freed = found.freed;
        self.evict_listed(segs, target, &mut found.gone, false, &mut freed);
        let spared = (self.capacity / SPARED) as usize;
        let one_shot = found.one_shot.len().saturating_sub(spared);
        if one_shot > 0 {
            // The `spared` idle longest go to the end, out of reach.
            let list = &mut found.one_shot;
            list.select_nth_unstable_by(one_shot - 1, |a, b| b.0.cmp(&a.0));
            self.evict_listed(segs, target, &mut list[..one_shot], true, &mut freed);
        }
        found.freed = freed;
    }

    /// Evicts keys of `list`, newest or oldest idle first, until `freed` reaches `target`.
    fn evict_listed(
        &self,
        segs: &Segs<'_, K, L>,
        target: u64,
        list: &mut [Idle<WordOf<L>>],
        newest_first: bool,
        freed: &mut u64,
    ) {
        let need = (target.saturating_sub(*freed) as usize).min(list.len());
        if need == 0 {
            return;
        }
        if newest_first {
            list.select_nth_unstable_by(need - 1, |a, b| b.0.cmp(&a.0));
        } else {
            list.select_nth_unstable_by(need - 1, |a, b| a.0.cmp(&b.0));
        }
        for &(_, s, i, w) in &list[..need] {
            if let Some(seg) = &segs[s] {
                // From the value the scan read: a key granted since (busy again), frozen by a
                // rebuild or moved stays.
                if self.evict_slot(seg, &seg.slots[i], w) {
                    *freed += 1;
                }
            }
        }
    }

    /// [`WhenFull::EvictSoonestIdle`]: evicts busy keys idle by `when` (forgetting their
    /// state) until `target` keys went.
    fn force_evict(
        &self,
        segs: &Segs<'_, K, L>,
        now: u64,
        when: u64,
        target: u64,
        found: &mut Found<WordOf<L>>,
    ) {
        let guard = self.map.guard();
        for (key, slot) in self.map.iter(&guard) {
            if found.freed >= target {
                return;
            }
            let cfg = slot.cfg.as_deref().unwrap_or(&self.cfg);
            if L::idle_at(cfg, &slot.state) <= when
                && L::retire(cfg, &slot.state, now, Retire::Force).is_some()
            {
                self.remove_dead(key, &guard);
                found.freed += 1;
            }
        }
        let Some(table) = &self.table else {
            return;
        };
        let (when, _) = table.relative(when);
        for seg in segs.iter().flatten() {
            for slot in seg.slots.iter() {
                if found.freed >= target {
                    return;
                }
                // Relaxed: as in `sweep_table`.
                let w = slot.word.load(Ordering::Relaxed);
                if idle_at::<L>(w).is_some_and(|idle| idle <= when) && self.evict_slot(seg, slot, w)
                {
                    found.freed += 1;
                }
            }
        }
    }

    /// Evicts the live slot last read as `w` (the table's eviction: one CAS to DEAD, which
    /// fails if a grant, a freeze or another eviction came first) and gives its place back.
    /// The floor was raised before.
    fn evict_slot(&self, seg: &Segment<K, L>, slot: &Slot<K, L::Word>, w: WordOf<L>) -> bool {
        let Some(table) = &self.table else {
            return false;
        };
        if !table.evict(seg, slot, w) {
            return false;
        }
        // Relaxed: a counter; the slot itself is dead to every reader.
        self.len.fetch_sub(1, Ordering::Relaxed);
        true
    }

    /// Evicts every idle key now (a sweep at `now`), returning how many went. Never needed for
    /// bounded memory (new keys sweep a full table themselves); useful to shrink `len()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
    ///
    /// let k: Keyed<u32, Gcra, ManualClock> =
    ///     Keyed::gcra(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// k.try_acquire_at(&1, 0).unwrap();
    /// assert_eq!(k.evict_idle_at(500_000_000), 0); // key 1 is busy until 1 s
    /// assert_eq!(k.evict_idle_at(1_000_000_000), 1);
    /// assert!(k.is_empty());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn evict_idle_at(&self, now: u64) -> usize {
        // As in `sweep_at`.
        super::raise_floor(&self.floor, now);
        let mut found = Found::default();
        self.sweep_map(now, &mut found);
        let guard = Guard::new();
        let segs = self.segments(&guard);
        if let Some(table) = &self.table {
            self.sweep_table(table, &segs, now, &mut found, true);
        }
        found.freed as usize
    }
}

/// When a live inline value goes idle (the latest of its TATs, after the base); `None` for a
/// value that is not live.
fn idle_at<L: KeyedState>(w: WordOf<L>) -> Option<u64> {
    let first = <L::Word as TatWord>::first(w);
    inline::is_live(first).then(|| inline::tat(first).max(<L::Word as TatWord>::second(w)))
}
