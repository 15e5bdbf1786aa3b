//! Rate overrides and rate changes of [`Keyed`]: `set_rate`, `clear_rate`,
//! `set_default_rate`, and the sync that moves a key's live state onto its current rate.

use alloc::borrow::ToOwned;
use core::borrow::Borrow;
use core::hash::Hash;

use super::builder::table_bytes;
use super::map::{KeyTable, Keyed, Slot};
use super::table::{probe, Guard, Probe};
use super::word::{inline, TatWord};
use super::{KeyedState, Retire};
use crate::clock::Clock;
use crate::contention::Contention;
use crate::error::{ConfigError, Value};
use crate::rate::Rate;
use crate::sync::{Arc, Ordering};

impl<K: Hash + Eq + Clone + 'static, L: KeyedState, C> Keyed<K, L, C> {
    /// Refuses a rate whose states would not fit `capacity` times in the memory budget.
    fn within_budget(&self, cfg: &L::Config, rate: Rate) -> Result<(), ConfigError> {
        let need = table_bytes::<K, L>(self.capacity, cfg);
        crate::memory::within("limit", u128::from(rate.limit()), need, self.max_memory)
    }

    /// Gives `key` its own rate from now on (a premium user, a throttled abuser), replacing
    /// any earlier override; the other keys keep the default.
    ///
    /// What happens to the key's existing state: it is carried over. For GCRA as a live
    /// [`Gcra::set_rate_at`](crate::gcra::Gcra::set_rate_at) does: the permits free before the
    /// change stay free, at most the new burst (burst = the new rate's `limit`; see
    /// [`set_rate_and_burst`](Keyed::set_rate_and_burst) for another), and time owed is never
    /// forgiven (the TAT never moves earlier); every request from now on is judged with the
    /// new interval and burst. For a sliding log the newest
    /// `limit` (new limit) grant times move into the new ring and keep counting until they
    /// leave the new window. For a sliding window the permits still counted move into the
    /// new window bucket by bucket, each recorded at its old bucket's last instant (or at the
    /// newest call's time, if earlier), the newest new-`limit` of them. For both, older grants
    /// that may still count are kept beside the new state and carried by every later change:
    /// lowering a limit and raising it again (at one instant or not) frees no grant. The override outlives
    /// evictions of the key; at most [`capacity`](Keyed::capacity) keys have one at a time
    /// (remove one with [`clear_rate`](Keyed::clear_rate)).
    ///
    /// Concurrent requests on this key wait for the entry's replacement (one map store); other
    /// keys are unaffected.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] as the inner limiter's builder for `rate`, naming `overrides` when
    /// `capacity` other keys already have one, or naming `limit` when `capacity` states at
    /// `rate` would not fit in [`max_memory`](crate::KeyedBuilder::max_memory) (the key is left
    /// unchanged in every case).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
    ///
    /// let k: Keyed<&str, Gcra, ManualClock> =
    ///     Keyed::gcra(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// k.set_rate("premium", Rate::per_second(100)?)?;
    /// assert!(k.try_acquire_n_at(&"premium", 100, 0).is_ok());
    /// assert!(k.try_acquire_n_at(&"free", 2, 0).unwrap_err().is_never());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn set_rate(&self, key: K, rate: Rate) -> Result<(), ConfigError>
    where
        C: Clock,
    {
        self.set_override(key, L::rerate(&self.cfg, rate)?, rate)
    }

    /// `set_rate` with the configuration built: stores it as `key`'s override and moves the
    /// key's live state onto it.
    fn set_override(&self, key: K, cfg: L::Config, rate: Rate) -> Result<(), ConfigError>
    where
        C: Clock,
    {
        let cfg = Arc::new(cfg);
        self.within_budget(&cfg, rate)?;
        let now = self.clock.now();
        self.store_override(&key, cfg)?;
        // AcqRel: see `sync_override`.
        self.rates.fetch_add(1, Ordering::AcqRel);
        self.sync_override(&key, now);
        Ok(())
    }

    /// Returns `key` to the default rate, carrying its state over as
    /// [`set_rate`](Keyed::set_rate) does.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
    ///
    /// let k: Keyed<&str, Gcra, ManualClock> =
    ///     Keyed::gcra(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// k.set_rate("trial", Rate::per_second(10)?)?;
    /// k.clear_rate(&"trial");
    /// assert!(k.try_acquire_n_at(&"trial", 10, 0).unwrap_err().is_never());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clear_rate<Q>(&self, key: &Q)
    where
        C: Clock,
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let now = self.clock.now();
        if self.overrides.pin().remove(key).is_some() {
            // Relaxed: a counter (see `store_override`).
            self.n_overrides.fetch_sub(1, Ordering::Relaxed);
        }
        // AcqRel: see `sync_override`.
        self.rates.fetch_add(1, Ordering::AcqRel);
        self.sync_override(key, now);
    }

    /// Makes `key`'s live state (if any) run on the key's current override (or the default):
    /// freezes it (CAS to `MOVING`), then replaces the entry with a carried state.
    ///
    /// Why every state ends on its key's current rate, also against concurrent rate changes
    /// and new keys: a rate change stores its configuration, then RMWs `rates`, then syncs;
    /// a new key is inserted, then RMWs `rates`, then syncs. RMWs on one word are totally
    /// ordered, and the later one acquires the earlier: if the new key's RMW is later, its
    /// sync reads the stored configuration; if the rate change's is later, its sync finds
    /// the entry. A sync that read a stale configuration and moved a state installed by a
    /// fresher sync acquired that install (map entry, Acquire), hence the fresher
    /// configuration, and fixes the state on its next turn of this loop.
    pub(super) fn sync_override<Q>(&self, key: &Q, now: u64)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if let Some(table) = &self.table {
            return self.sync_inline(table, key, now);
        }
        let guard = self.map.guard();
        let mut contention = Contention::new();
        loop {
            let want = self.rate_of(key);
            let Some(slot) = self.map.get(key, &guard) else {
                return; // the next state created for the key reads the override
            };
            let same = match (&want, &slot.cfg) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            };
            if same {
                return;
            }
            let cfg = slot.cfg.as_deref().unwrap_or(&self.cfg);
            match L::retire(cfg, &slot.state, now, Retire::Move) {
                Some(carry) => {
                    // Relaxed: the moved state carries its own history; the floor only adds
                    // the evictions seen so far (never needed for the bound).
                    let floor = self.floor.load(Ordering::Relaxed);
                    let state = L::carried(want.as_deref().unwrap_or(&self.cfg), carry, floor);
                    // Nobody else replaces or removes a MOVING entry: this store is ours.
                    self.map
                        .insert(key.to_owned(), Slot { state, cfg: want }, &guard);
                }
                None if L::is_evicted(&slot.state) => self.remove_evicted(key, &guard),
                // Another rate change is moving it: look again after it.
                None => contention.snooze(),
            }
        }
    }
}

impl<K: Hash + Eq + Clone + 'static, L: KeyedState, C> Keyed<K, L, C> {
    /// [`sync_override`](Keyed::sync_override) where states sit inline: a key with an override
    /// keeps its state in the map (its slot INDIRECT); without one, in its slot, on the
    /// segment's configuration (the default in force: `set_default_rate` rebuilds every
    /// segment onto it). A move out of the slot freezes it (CAS to MOVING), puts the carried
    /// state in the map, then marks the slot INDIRECT; a move back freezes the map's state,
    /// lands the carried state in the slot (CAS from INDIRECT), then removes the frozen entry.
    /// Requests on the key wait for the move's last step, as for the map's moves.
    fn sync_inline<Q>(&self, table: &KeyTable<K, L>, key: &Q, now: u64)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let (s, spot) = table.locate(key);
        let (rel, _) = table.relative(now);
        let mut contention = Contention::new();
        loop {
            let want = self.override_of(key);
            let guard = Guard::new();
            let Some(seg) = table.segment(s, &guard) else {
                // No key there yet: the next state created for the key reads the override.
                return;
            };
            let (slot, w) = match probe(&seg, spot, key) {
                Probe::Found(slot, w) => (slot, w),
                // The next state created for the key reads the override.
                Probe::Absent(_) | Probe::Full => return,
                Probe::Busy => {
                    contention.snooze();
                    continue;
                }
            };
            let first = <L::Word as TatWord>::first(w);
            if inline::is_live(first) {
                let Some(cfg) = want else {
                    // On the segment's configuration, the default in force.
                    return;
                };
                let frozen = <L::Word as TatWord>::marker(w, inline::MOVING);
                // Relaxed (both): the freeze is a CAS from the value the carry is made from: a
                // grant that lands first makes it fail (and we look again); one that comes
                // after fails on MOVING.
                if slot
                    .word
                    .cas(w, frozen, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
                {
                    continue;
                }
                // Relaxed: the moved state carries its own history; the floor only adds the
                // evictions seen so far (never needed for the bound).
                let floor = self.floor.load(Ordering::Relaxed);
                let state = L::carried(&cfg, L::word_carry(&seg.cfg, w, rel, table.base), floor);
                // A key's map entry is removed before its slot stops being INDIRECT, except a
                // frozen one a move back left behind: replacing it is right.
                self.map.pin().insert(
                    key.to_owned(),
                    Slot {
                        state,
                        cfg: Some(cfg),
                    },
                );
                // Release: the entry is in the map before an admitter reads INDIRECT. Relaxed
                // on failure: nobody else writes a MOVING word, so it cannot fail.
                let _ = slot.word.cas(
                    frozen,
                    <L::Word as TatWord>::marker(w, inline::INDIRECT),
                    Ordering::Release,
                    Ordering::Relaxed,
                );
                continue;
            }
            if first & inline::V_MASK != inline::INDIRECT {
                // CLAIMED or MOVING: a creator, another move or a rebuild between its steps.
                contention.snooze();
                continue;
            }
            let mguard = self.map.guard();
            let Some(entry) = self.map.get(key, &mguard) else {
                // Its eviction is finishing (the slot goes DEAD next).
                contention.snooze();
                continue;
            };
            if let (Some(a), Some(b)) = (&want, &entry.cfg) {
                if Arc::ptr_eq(a, b) {
                    return;
                }
            }
            let cfg = entry.cfg.as_deref().unwrap_or(&self.cfg);
            match L::retire(cfg, &entry.state, now, Retire::Move) {
                Some(carry) => {
                    // Relaxed: as above.
                    let floor = self.floor.load(Ordering::Relaxed);
                    match want {
                        Some(cfg) => {
                            let state = L::carried(&cfg, carry, floor);
                            // Nobody else replaces or removes a MOVING entry: ours.
                            self.map.insert(
                                key.to_owned(),
                                Slot {
                                    state,
                                    cfg: Some(cfg),
                                },
                                &mguard,
                            );
                        }
                        None => {
                            self.land_inline(table, key, carry, floor);
                            let _ =
                                self.map
                                    .remove_if(key, |_, e| core::ptr::eq(e, entry), &mguard);
                        }
                    }
                }
                None if L::is_evicted(&entry.state) => self.remove_indirect(table, key, &mguard),
                // Another rate change is moving it: look again after it.
                None => contention.snooze(),
            }
        }
    }

    /// Lands `carry` (from `key`'s frozen map state) in its INDIRECT slot, on the segment's
    /// configuration: waits out a rebuild that froze the slot, then lands it in the new segment.
    fn land_inline<Q>(&self, table: &KeyTable<K, L>, key: &Q, carry: L::Carry, floor: u64)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (s, spot) = table.locate(key);
        let mut contention = Contention::new();
        loop {
            let guard = Guard::new();
            let Some(seg) = table.segment(s, &guard) else {
                // An INDIRECT slot is never dropped: its segment stays.
                return;
            };
            if let Probe::Found(slot, w) = probe(&seg, spot, key) {
                if <L::Word as TatWord>::first(w) & inline::V_MASK == inline::INDIRECT {
                    let live = L::word_carried(&seg.cfg, carry.clone(), floor, table.base, w);
                    // Relaxed (both): the word is the key's whole state; a rebuild's freeze
                    // makes this fail, and we land it in the new segment.
                    if slot
                        .word
                        .cas(w, live, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                    {
                        return;
                    }
                    continue;
                }
            }
            // Frozen by a rebuild (MOVING, or sealed on the way): look again after it.
            contention.snooze();
        }
    }

    /// `key`'s rate override, if it has one.
    pub(super) fn override_of<Q>(&self, key: &Q) -> Option<Arc<L::Config>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.overrides.get(key, &self.overrides.guard()).cloned()
    }

    /// The default configuration in force.
    pub(super) fn current_default(&self) -> Arc<L::Config> {
        let default = self.default.pin();
        default
            .get(&())
            .cloned()
            .unwrap_or_else(|| self.cfg.clone())
    }
}

impl<K: Hash + Eq + Clone + 'static, L: KeyedState, C> Keyed<K, L, C> {
    /// The configuration a state for `key` should run on: its override, else the default.
    pub(super) fn rate_of<Q>(&self, key: &Q) -> Option<Arc<L::Config>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let key_rate = self.overrides.get(key, &self.overrides.guard()).cloned();
        key_rate.or_else(|| self.default.get(&(), &self.default.guard()).cloned())
    }

    /// Stores `key`'s override, reserving a place for a new one: at most `capacity`
    /// overrides at any time.
    fn store_override(&self, key: &K, cfg: Arc<L::Config>) -> Result<(), ConfigError> {
        let overrides = self.overrides.pin();
        // An existing override is replaced in place (no new place).
        if overrides.update(key.clone(), |_| cfg.clone()).is_some() {
            return Ok(());
        }
        // Relaxed (all): a counter; the CAS keeps it ≤ capacity, and every override is
        // reserved before its insert and released after its removal.
        let mut n = self.n_overrides.load(Ordering::Relaxed);
        loop {
            if n >= self.capacity {
                return Err(ConfigError::new(
                    "overrides",
                    Value::Count(u128::from(n)),
                    "at most `capacity` keys may have a rate override (clear_rate one first)",
                ));
            }
            match self.n_overrides.compare_exchange_weak(
                n,
                n + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(current) => n = current,
            }
        }
        if overrides.insert(key.clone(), cfg).is_some() {
            // Another `set_rate` stored one meanwhile: ours replaced it; one place is enough.
            // Relaxed: as above.
            self.n_overrides.fetch_sub(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The number of keys with a rate override ([`set_rate`](Keyed::set_rate)), at most
    /// [`capacity`](Keyed::capacity).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
    ///
    /// let k: Keyed<&str, Gcra, ManualClock> =
    ///     Keyed::gcra(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// k.set_rate("premium", Rate::per_second(100)?)?;
    /// k.set_rate("premium", Rate::per_second(200)?)?; // replaced, not added
    /// assert_eq!(k.overrides(), 1);
    /// k.clear_rate(&"premium");
    /// assert_eq!(k.overrides(), 0);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn overrides(&self) -> usize {
        self.overrides.len()
    }

    /// Changes the default rate at runtime: every key without an override runs on `rate` from
    /// now on (keys with an override keep it; [`clear_rate`](Keyed::clear_rate) returns a
    /// key to the new default).
    ///
    /// Each live key's state is carried over exactly as [`set_rate`](Keyed::set_rate)
    /// carries it: for GCRA as a live [`Gcra::set_rate_at`](crate::gcra::Gcra::set_rate_at) does
    /// (free permits stay free up to the new burst, the new rate's `limit`; time owed is never
    /// forgiven); for a sliding log the newest
    /// `limit` (new limit) grant times move into the new ring; for a sliding window the
    /// permits still counted move into the new window, bucket by bucket, each counted as if
    /// granted at its old bucket's last instant (never earlier than it was granted), the
    /// newest new-`limit` of them. So no key over-admits at the switch: every request after
    /// it is judged by the new rate's guarantee with the grants made before it counted (see
    /// the [`guide`](crate::guide::keyed#rate-overrides-and-rate-changes)).
    ///
    /// Cost: O(`len()`) map operations, on the calling thread. A request on a key being moved
    /// waits for its move (one map store); keys are moved one at a time, so for a moment some
    /// keys run on the new rate and some on the old.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] as the inner limiter's builder for `rate`, or naming `limit` when
    /// `capacity` states at `rate` would not fit in
    /// [`max_memory`](crate::KeyedBuilder::max_memory) (nothing is changed).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
    ///
    /// let k: Keyed<&str, Gcra, ManualClock> =
    ///     Keyed::gcra(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// k.try_acquire_at(&"alice", 0)?;
    /// k.set_default_rate(Rate::per_second(10)?)?;
    /// // Alice's TAT (1 s) is kept: under 10 per second (interval 100 ms, tolerance 1 s) the
    /// // time her grant took is the whole burst, and her next permit is due at 100 ms.
    /// let d = k.try_acquire_at(&"alice", 0).unwrap_err();
    /// assert_eq!(d.retry_after_nanos(), Some(100_000_000));
    /// assert!(k.try_acquire_n_at(&"bob", 10, 0).is_ok()); // new keys too
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_default_rate(&self, rate: Rate) -> Result<(), ConfigError>
    where
        C: Clock,
    {
        let cfg = Arc::new(L::rerate(&self.cfg, rate)?);
        self.within_budget(&cfg, rate)?;
        let now = self.clock.now();
        self.default.pin().insert((), cfg);
        // AcqRel: see `sync_override`.
        self.rates.fetch_add(1, Ordering::AcqRel);
        if let Some(table) = &self.table {
            // Every segment rebuilt onto the default in force (a concurrent change may have
            // stored a newer one: each segment ends on whichever is current).
            for s in 0..table.segments() {
                self.sync_segment(table, s, now);
            }
        }
        let guard = self.map.guard();
        for (key, _) in self.map.iter(&guard) {
            self.sync_override(key, now);
        }
        Ok(())
    }
}

impl<K: Hash + Eq + Clone + 'static, C> Keyed<K, crate::gcra::Gcra, C> {
    /// Gives `key` its own rate and burst from now on: [`set_rate`](Keyed::set_rate) with a
    /// burst other than the rate's `limit` (a premium user allowed bursts of 500 at 100/s).
    /// The key's state is carried over as `set_rate` says.
    ///
    /// # Errors
    ///
    /// As [`set_rate`](Keyed::set_rate), plus [`ConfigError`] naming `burst` when it is 0 or
    /// burst × emission interval overflows u64 nanoseconds (the key is left unchanged).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
    ///
    /// let k: Keyed<&str, Gcra, ManualClock> =
    ///     Keyed::gcra(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// k.set_rate_and_burst("premium", Rate::per_second(100)?, 500)?;
    /// assert!(k.try_acquire_n_at(&"premium", 500, 0).is_ok());
    /// assert!(k.set_rate_and_burst("premium", Rate::per_second(100)?, 0).is_err());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn set_rate_and_burst(&self, key: K, rate: Rate, burst: u64) -> Result<(), ConfigError>
    where
        C: Clock,
    {
        let cfg = <crate::gcra::Gcra as KeyedState>::config(rate, Some(burst))?;
        self.set_override(key, cfg, rate)
    }
}
