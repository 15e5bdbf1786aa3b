//! The admission paths of a [`Keyed`] whose states sit inline in its table (`Gcra`,
//! `GcraPair`): the hit (one probe and one CAS), what the table's slow path needs from a
//! `Keyed` (its [`Host`] impl: places, the floor, overrides), a key with a rate override (its
//! state in the map, its slot INDIRECT) and the end of such a key's eviction, and the
//! read-back of inline keys.
//!
//! The table's protocol is in `table.rs` and `table/slow.rs`; how a creation, an eviction and
//! a rebuild order against each other (and why a new state starts at or above every floor it
//! must see) is in the [`guide`](crate::guide::keyed_table#keyed-the-inline-table).

use alloc::borrow::ToOwned;
use core::borrow::Borrow;
use core::hash::Hash;

use super::map::{KeyTable, Keyed, Slot as MapSlot};
use super::read::on_keyed::KeyReading;
use super::table::{self, grant, probe, Guard, Hit, Host, Probe};
use super::word::{inline, TatWord, WordOf};
use super::{Admit, KeyedRead, KeyedState};
use crate::contention::Contention;
use crate::error::Denied;
use crate::sync::{Arc, AtomicU64, Ordering};

impl<K: Hash + Eq + Clone + 'static, L: KeyedState, C> Keyed<K, L, C> {
    /// Rebuilds segment `s` onto the default in force unless it runs on it (see
    /// `set_default_rate`).
    pub(super) fn sync_segment(&self, table: &KeyTable<K, L>, s: usize, now: u64) {
        let (rel, _) = table.relative(now);
        let mut contention = Contention::new();
        loop {
            let current = self.current_default();
            let guard = Guard::new();
            match table.segment(s, &guard) {
                Some(seg) if !crate::sync::Arc::ptr_eq(&seg.cfg, &current) => {
                    if !table.rebuild(s, Some(&current), rel) {
                        contention.snooze();
                    }
                }
                _ => return,
            }
        }
    }

    /// An admission on a key whose state is in the map (it has a rate override). `None`: look
    /// again (the state is being moved, or its eviction is finishing).
    fn indirect_acquire<Q>(
        &self,
        table: &KeyTable<K, L>,
        key: &Q,
        permits: u32,
        now: u64,
    ) -> Option<Result<(), Denied>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let guard = self.map.guard();
        let entry = self.map.get(key, &guard)?;
        let cfg = entry.cfg.as_deref().unwrap_or(&self.cfg);
        match L::acquire(cfg, &entry.state, permits, now) {
            Admit::Granted => Some(Ok(())),
            Admit::Denied(denied) => Some(Err(denied)),
            Admit::Evicted => {
                self.remove_indirect(table, key, &guard);
                None
            }
            Admit::Moving => None,
        }
    }

    /// Removes `key`'s evicted map entry; whoever removes it ends the key's life in the table
    /// (its INDIRECT slot goes DEAD and its place is given back). Until then, admitters that
    /// find the slot INDIRECT and no entry wait for it.
    pub(super) fn remove_indirect<Q>(
        &self,
        table: &KeyTable<K, L>,
        key: &Q,
        guard: &impl papaya::Guard,
    ) where
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
            self.kill_indirect(table, key);
        }
    }

    /// Ends the life of `key`'s INDIRECT slot after its map entry was removed by this thread.
    fn kill_indirect<Q>(&self, table: &KeyTable<K, L>, key: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (s, spot) = table.locate(key);
        let mut contention = Contention::new();
        loop {
            let guard = Guard::new();
            let Some(seg) = table.segment(s, &guard) else {
                return;
            };
            let (slot, w) = match probe(&seg, spot, key) {
                Probe::Found(slot, w) => (slot, w),
                // A sealed slot on the way (a rebuild): look again after it.
                Probe::Busy => {
                    contention.snooze();
                    continue;
                }
                // Only we end an INDIRECT slot whose entry we removed, and a rebuild copies it
                // as it is: it cannot be gone. Nothing to do if it were.
                Probe::Absent(_) | Probe::Full => return,
            };
            if <L::Word as TatWord>::first(w) & inline::V_MASK != inline::INDIRECT {
                // Frozen by a rebuild: look again in the new segment.
                contention.snooze();
                continue;
            }
            // Release: a creator of the key that reads this DEAD word (Acquire) sees the floor
            // the eviction raised (we acquired its marker, or retired the state ourselves after
            // raising it). Relaxed on failure: look again.
            if slot
                .word
                .cas(
                    w,
                    <L::Word as TatWord>::marker(w, inline::DEAD),
                    Ordering::Release,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                table::count_dead(&seg);
                // Relaxed: a counter.
                self.len.fetch_sub(1, Ordering::Relaxed);
                return;
            }
        }
    }
}

impl<K: Hash + Eq + Clone + 'static, L: KeyedState, C> Keyed<K, L, C> {
    /// A snapshot of `key`'s live inline word, with `now` relative to the table's base and how
    /// far `now` is behind that base: `None` when the key has no live inline state (absent, a
    /// marker, its state in the map, or no table).
    pub(super) fn inline_word<Q>(&self, key: &Q, now: u64) -> Option<(WordOf<L>, u64, u64)>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let table = self.table.as_ref()?;
        let (s, spot) = table.locate(key);
        let guard = Guard::new();
        let seg = table.segment(s, &guard)?;
        let Probe::Found(_, w) = probe(&seg, spot, key) else {
            return None;
        };
        if !inline::is_live(<L::Word as TatWord>::first(w)) {
            return None;
        }
        let (rel, behind) = table.relative(now);
        Some((w, rel, behind))
    }
}

impl<K: Hash + Eq + Clone + 'static, L: KeyedRead, C> Keyed<K, L, C> {
    /// The reading of `key` at `now` if its state is inline (live, or in the map for a key
    /// with an override); `None`: read it as absent (or there is no table).
    pub(super) fn read_inline<Q>(&self, key: &Q, now: u64) -> Option<KeyReading>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let table = self.table.as_ref()?;
        let (s, spot) = table.locate(key);
        let guard = Guard::new();
        let seg = table.segment(s, &guard)?;
        let Probe::Found(_, w) = probe(&seg, spot, key) else {
            return None;
        };
        let first = <L::Word as TatWord>::first(w);
        if inline::is_live(first) {
            let (rel, behind) = table.relative(now);
            let (remaining, reset) = L::read_word(&seg.cfg, w, rel);
            return Some(KeyReading::of::<L>(
                &seg.cfg,
                remaining,
                reset.saturating_add(behind),
            ));
        }
        if first & inline::V_MASK == inline::INDIRECT {
            let guard = self.map.guard();
            let entry = self.map.get(key, &guard)?;
            let cfg = entry.cfg.as_deref().unwrap_or(&self.cfg);
            let (remaining, reset) = L::read(cfg, &entry.state, now)?;
            return Some(KeyReading::of::<L>(cfg, remaining, reset));
        }
        None
    }

    /// `Keyed`'s [`Decide`](crate::Decide) on an existing key with a live inline state:
    /// decided and read back on the one slot, `(outcome, reading)`. `None`:
    /// anything else (the caller takes the full path, then reads).
    pub(super) fn table_decide<Q>(
        &self,
        key: &Q,
        permits: u32,
        now: u64,
    ) -> Option<(Result<(), Denied>, KeyReading)>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let table = self.table.as_ref()?;
        if permits == 0 {
            return None;
        }
        let (s, spot) = table.locate(key);
        let guard = Guard::new();
        let seg = table.segment(s, &guard)?;
        let Probe::Found(slot, w) = probe(&seg, spot, key) else {
            return None;
        };
        let (rel, behind) = table.relative(now);
        if behind > 0 {
            return None;
        }
        let outcome = match grant::<L>(&seg.cfg, &slot.word, w, permits, rel) {
            Hit::Granted => Ok(()),
            Hit::Denied(denied) => Err(denied),
            Hit::NotLive => return None,
        };
        // Relaxed: a snapshot right after the decision.
        let w = slot.word.load(Ordering::Relaxed);
        if !inline::is_live(<L::Word as TatWord>::first(w)) {
            // Frozen or evicted right after the decision: read it as the key reads now.
            return Some((outcome, self.read_key(key, now)));
        }
        let (remaining, reset) = L::read_word(&seg.cfg, w, rel);
        Some((outcome, KeyReading::of::<L>(&seg.cfg, remaining, reset)))
    }
}

/// What the table's slow path needs from a `Keyed`: its places, its floor, the default in
/// force, its overrides (a key with one keeps its state in the map, its slot INDIRECT).
impl<K: Hash + Eq + Clone + 'static, L: KeyedState, C> Host<K, L> for Keyed<K, L, C> {
    fn count(&self) -> u64 {
        // Acquire: the count before the lookup, for the refusal at a full table (pairs with
        // the reservations' Release; see `insert_new`).
        self.len.load(Ordering::Acquire)
    }

    fn refuse<Q: Hash + ?Sized>(&self, _: &Q, count: u64, now: u64) -> Option<Denied> {
        self.deferred(count, now)
    }

    fn reserve(&self, now: u64) -> Result<(), Denied> {
        self.reserve_place(now)
    }

    fn make_room(&self, now: u64) {
        let _ = Keyed::make_room(self, now);
    }

    fn floor(&self) -> &AtomicU64 {
        &self.floor
    }

    fn default_cfg(&self) -> Arc<L::Config> {
        self.current_default()
    }

    fn commit<Q>(&self, key: &Q, claimed: WordOf<L>, floor: u64, abs_floor: u64) -> WordOf<L>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let Some(cfg) = self.override_of(key) else {
            let first = inline::live(floor.min(inline::MAX_TAT), 0);
            return <L::Word as TatWord>::set(claimed, first, floor);
        };
        let state = L::pending(&cfg);
        L::commit(&state, abs_floor);
        let entry = MapSlot {
            state,
            cfg: Some(cfg),
        };
        // A key's map entry is removed before its slot dies (so none is there for a key
        // being created), except a frozen one a move back left behind: replacing it is right.
        self.map.pin().insert(key.to_owned(), entry);
        <L::Word as TatWord>::marker(claimed, inline::INDIRECT)
    }

    fn indirect<Q>(&self, key: &Q, permits: u32, now: u64) -> Option<Result<(), Denied>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.indirect_acquire(self.table.as_ref()?, key, permits, now)
    }

    fn created<Q>(&self, key: &Q, s: usize, now: u64)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        // A rate change may have raced with our reads of the overrides and of the segment's
        // configuration: make sure the state we just published runs on the key's current
        // rate (see `sync_override`; a segment on a stale default is rebuilt onto the one in
        // force, as `set_default_rate` does).
        // AcqRel: see `sync_override`.
        self.rates.fetch_add(0, Ordering::AcqRel);
        if let Some(table) = &self.table {
            self.sync_segment(table, s, now);
        }
        self.sync_override(key, now);
    }
}
