//! [`Keyed`]: one limiter state per key (user, IP, token), with a hard capacity and automatic
//! eviction of idle keys.
//!
//! Two stores, both lock-free, chosen by the state. A state that fits one atomic word (`Gcra`:
//! 8 bytes, `GcraPair`: 16) sits **inline** in an open-addressed table beside its key
//! (`table.rs`): a lookup of an existing key reads one slot, one cache miss beyond the caches.
//! Sliding logs and windows (a ring per key) live in `papaya`'s lock-free hash map, one boxed
//! entry per key; so do the states of keys with a rate override where states sit inline (their
//! slot says INDIRECT). Either way a lookup writes nothing shared (an epoch guard marks a
//! per-thread slot), so the only shared write on the admission path of an existing key is the
//! limiter's own CAS on the key's state word, and a GCRA denial writes nothing at all.
//!
//! # The eviction protocol (the subtle race)
//!
//! A key may be evicted while another thread is admitting on it. If the evictor simply removed
//! the entry, an admitter holding a reference to the old state could grant on it after the
//! removal while a third thread, finding the key gone, created a fresh state and granted
//! again: over-admission. So eviction is decided **on the state word itself**:
//!
//! - the evictor CASes an idle state to a terminal tombstone `EVICTED`, and only then removes
//!   the entry (only if it still holds that tombstoned state);
//! - an admitter's CAS from the value it read fails if the word became `EVICTED`, and an
//!   admitter that reads `EVICTED` grants nothing on it: it removes the dead entry (helping)
//!   and looks the key up again;
//! - the tombstone CAS succeeds only from an idle value, and every grant moves the word away
//!   from the value the evictor read (a GCRA TAT strictly increases), so a grant and an
//!   eviction of the same state are ordered by the word's modification order: either the grant
//!   comes first and the state is no longer idle (the CAS fails), or the eviction comes first
//!   and the grant's CAS fails.
//!
//! An idle state carries no information: for GCRA, a TAT ≤ now behaves exactly as a fresh
//! state at every time ≥ now. For clocks that go backwards (and callers whose clock read lags
//! a concurrent sweep), a fresh state is committed with a *floor*: the greatest `now` any sweep
//! evicted at, read after the new state's insert won (see [`create`]), so that it is never more
//! permissive than the evicted one: a GCRA state starts at TAT = floor; a log or window denies
//! a request below the floor until the floor.
//!
//! A [`SlidingLog`] per key is idle only when all its slots are, which one CAS cannot decide;
//! its state sits behind a gate word that admitters count themselves in and out of, and the
//! evictor closes the gate, waits for the admitters inside, re-checks, and only then marks the
//! log evicted (see the [`guide`](crate::guide)). A [`SlidingWindow`] per key (idle when none
//! of its buckets holds a permit it still counts) sits behind the same gate.
//!
//! The protocol is model-checked in `loom-tests/tests/keyed.rs` (the map abstracted, the
//! state-word protocol the real code), with a planted evictor that removes without the
//! tombstone CAS, which the model catches. The inline table runs the same protocol on its
//! slots (the tombstone is the slot's DEAD; a slot is never reused until its segment is
//! rebuilt), model-checked on the real table in `loom-tests/tests/keyed_table.rs`.
//!
//! # Layout
//!
//! This file holds the contract between the map and a per-key state ([`KeyedState`], what an
//! admission saw ([`Admit`]), how to retire ([`Retire`])) and the creation protocol
//! ([`create`], [`raise_floor`], [`remove_retired`]), which the loom models run as they are.
//! Beside it:
//!
//! - `gcra.rs`, `gcra_pair.rs`, `log.rs`, `window.rs`: the per-key states (a GCRA word, a pair's
//!   16-byte word; a sliding log and a sliding window, each behind a gate), each implementing
//!   [`KeyedState`]; `word.rs`: the word trait the two GCRA states share, and the layout of a
//!   word inline in the table;
//! - `gate.rs`: the gate word in front of a log or a window (enter, leave, close, retire,
//!   commit, and the refusal below the floor);
//! - `table.rs` (+ `table/`): the inline table: segments, slots, the probe, the grant, the slow
//!   path over a host (`slow.rs`), rebuilds (`rebuild.rs`), the epoch-protected directory
//!   (`cell.rs`);
//! - `map.rs`: [`Keyed`] itself: the map, the dispatch of an admission to the table or the
//!   map, the map's admission paths, and [`WhenFull`]; `admit.rs`: `Keyed` as the table's host
//!   and the paths of keys whose state is inline; `room.rs`: places, refusals and sweeps;
//! - `builder.rs`: [`KeyedBuilder`] and the constructors, with the checks at build;
//! - `overrides.rs`: per-key rate overrides and default-rate changes, and the sync that moves
//!   a live state onto its key's current rate;
//! - `planted.rs` (loom builds only): the states as the models drive them, and planted bugs.

use core::fmt;

use crate::error::{ConfigError, Denied};
use crate::gcra::Gcra;
use crate::rate::Rate;
use crate::sliding_log::SlidingLog;
use crate::sliding_window::SlidingWindow;
use crate::sync::{fence, AtomicU64, Ordering};
use word::{TatWord, WordOf};

/// A limiter algorithm that [`Keyed`] can keep per key: its per-key state, and the
/// configuration shared by all keys (or per key, for rate overrides).
///
/// Implemented for [`Gcra`] (8 bytes of state per key), [`SlidingLog`] (a ring of `limit`
/// timestamps per key: 8 bytes × `limit` plus about 100 bytes, O(limit) per key) and
/// [`SlidingWindow`] (a strict window per key: its ring of bucket-end snapshots, 16 slots for
/// 10 buckets, plus about 150 bytes of unpadded header, independent of `limit`). The trait is sealed; its methods are
/// the crate's internal protocol (see the [module docs](crate::Keyed) for the eviction
/// protocol every implementation follows).
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, Keyed, KeyedState};
///
/// fn per_user<L: KeyedState>(_: &Keyed<String, L>) {}
/// let users = Keyed::<String, Gcra>::gcra(hotlimit::Rate::per_second(5)?).build()?;
/// per_user(&users);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
pub trait KeyedState: sealed::Sealed + 'static {
    /// The configuration shared by every key on the same rate.
    #[doc(hidden)]
    type Config: Send + Sync + fmt::Debug;
    /// One key's state.
    #[doc(hidden)]
    type State: Send + Sync;
    /// What a state hands to its successor when its rate changes.
    #[doc(hidden)]
    type Carry: Clone;

    /// The configuration for `rate` (and the algorithm's one knob where it has one: GCRA's
    /// `burst`, SlidingWindow's `buckets`).
    #[doc(hidden)]
    fn config(rate: Rate, burst: Option<u64>) -> Result<Self::Config, ConfigError>;
    /// The configuration for `rate` in place of `base` (a rate override or a new default):
    /// GCRA's burst becomes the new `limit`; SlidingWindow keeps its `buckets`.
    #[doc(hidden)]
    fn rerate(base: &Self::Config, rate: Rate) -> Result<Self::Config, ConfigError> {
        let _ = base;
        Self::config(rate, None)
    }
    /// The configuration for `rate` and, for a limiter of two rates
    /// ([`GcraPair`](crate::GcraPair)), its `second` rate and burst; the others have no second
    /// rate and ignore it.
    #[doc(hidden)]
    fn config_with(
        rate: Rate,
        burst: Option<u64>,
        second: Option<(Rate, Option<u64>)>,
    ) -> Result<Self::Config, ConfigError> {
        let _ = second;
        Self::config(rate, burst)
    }
    /// The configuration for several windows ([`MultiWindow`](crate::MultiWindow)); the
    /// others take a rate and refuse windows.
    #[doc(hidden)]
    fn config_windows(
        windows: &crate::multi_window::MultiWindowBuilder<crate::clock::NoClock>,
    ) -> Result<Self::Config, ConfigError> {
        let _ = windows;
        Err(ConfigError::new(
            "windows",
            crate::error::Value::Count(0),
            "only a MultiWindow per key takes windows",
        ))
    }
    /// A state under `cfg` continuing from `carry` (taken from a retired state).
    #[doc(hidden)]
    fn carried(cfg: &Self::Config, carry: Self::Carry, floor: u64) -> Self::State;
    /// Take `permits` (≥ 1) permits at `now`, or say the state is retired.
    #[doc(hidden)]
    fn acquire(cfg: &Self::Config, state: &Self::State, permits: u32, now: u64) -> Admit;
    /// The earliest time at which the state is idle (carries no information); `u64::MAX` if it
    /// is retired.
    #[doc(hidden)]
    fn idle_at(cfg: &Self::Config, state: &Self::State) -> u64;
    /// Retires the state (makes every later `acquire` on it return `Evicted` or `Moving`) and
    /// returns what it held; `None` if it was already retired or, for `Retire::IfIdle`, not
    /// idle at `now`.
    #[doc(hidden)]
    fn retire(
        cfg: &Self::Config,
        state: &Self::State,
        now: u64,
        how: Retire,
    ) -> Option<Self::Carry>;
    /// Whether the state was retired by an eviction (its entry may be removed by anyone).
    #[doc(hidden)]
    fn is_evicted(state: &Self::State) -> bool;
    /// A new key's state, not live yet: every `acquire` on it returns `Moving` and `retire`
    /// leaves it alone until [`commit`](KeyedState::commit). A new key enters the map in this
    /// state while its creator reserves its place.
    #[doc(hidden)]
    fn pending(cfg: &Self::Config) -> Self::State;
    /// Makes a [`pending`](KeyedState::pending) state live, as a fresh state that is never more
    /// permissive than one evicted at `floor` (its creator alone calls this, with the floor read
    /// after its insert won: see [`create`]).
    #[doc(hidden)]
    fn commit(state: &Self::State, floor: u64);
    /// Whether the state is still pending (its creator removes it if it finds no place).
    #[doc(hidden)]
    fn is_pending(state: &Self::State) -> bool;
    /// The bytes one key's state takes under `cfg`, inline and on the heap (for the memory
    /// budget checked at build and at rate changes).
    #[doc(hidden)]
    fn bytes_per_state(cfg: &Self::Config) -> u128;

    /// How long after going idle a state still counts as a returning key's when a sweep picks
    /// what to evict (GCRA: its tolerance τ, the time its whole burst takes to come back; a
    /// client that returns within it keeps its place under a flood of new keys).
    #[doc(hidden)]
    fn horizon(cfg: &Self::Config) -> u64 {
        let _ = cfg;
        u64::MAX
    }
    /// The atomic word a key's state is kept in, inline in [`Keyed`]'s table (`Gcra`: 8 bytes,
    /// `GcraPair`: 16), or `NoWord` for the states kept in the map (sliding logs and windows,
    /// for which `Keyed` builds no table). Its layout: `word::inline`.
    #[doc(hidden)]
    type Word: TatWord;
    /// Takes `permits` at `now` (ns after the table's base) on the live inline value `w`: its
    /// successor (its grant count one more, saturating), or the denial, before any write.
    #[doc(hidden)]
    fn word_decide(
        cfg: &Self::Config,
        w: WordOf<Self>,
        permits: u32,
        now: u64,
    ) -> Result<WordOf<Self>, Denied>;
    /// The live inline value `w`, run on `from`, carried onto `to` at `now` (after the base) by
    /// the rule of a live rate change (`set_default_rate`).
    #[doc(hidden)]
    fn word_rerate(
        from: &Self::Config,
        to: &Self::Config,
        w: WordOf<Self>,
        now: u64,
    ) -> WordOf<Self>;
    /// What the live inline value `w`, run on `cfg`, hands to a state in the map at `now`
    /// (after the base; the carry's times are absolute: plus `base`).
    #[doc(hidden)]
    fn word_carry(cfg: &Self::Config, w: WordOf<Self>, now: u64, base: u64) -> Self::Carry;
    /// A live inline value under `cfg` continuing from `carry` (taken from a retired state in
    /// the map), never below `floor` (absolute; the value's times are after `base`); `like` is
    /// any value of the word (its type's witness).
    #[doc(hidden)]
    fn word_carried(
        cfg: &Self::Config,
        carry: Self::Carry,
        floor: u64,
        base: u64,
        like: WordOf<Self>,
    ) -> WordOf<Self>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Gcra {}
    impl Sealed for crate::gcra_pair::GcraPair {}
    impl Sealed for super::SlidingLog {}
    impl Sealed for super::SlidingWindow {}
    impl Sealed for crate::multi_window::MultiWindow {}
}

/// The outcome of one admission attempt on one key's state.
#[doc(hidden)]
#[derive(Debug)]
pub enum Admit {
    /// The permits were granted.
    Granted,
    /// The request was denied; the state is live.
    Denied(Denied),
    /// The state was evicted: nothing was granted; remove the entry and look the key up again.
    Evicted,
    /// The state is being replaced by a rate change, or is a new key's state whose creator is
    /// still reserving its place: nothing was granted; look the key up again (the replacement
    /// or the commit is one map store or one counter CAS away).
    Moving,
}

/// How to retire a state.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retire {
    /// Evict only if idle at `now` (no information is lost).
    IfIdle,
    /// Evict whatever the state holds (the key forgets it).
    Force,
    /// Freeze for a rate change: the caller replaces the entry with a carried state.
    Move,
}

#[cfg(feature = "std")]
mod admit;
#[cfg(feature = "std")]
mod builder;
mod gate;
mod gcra;
mod gcra_pair;
mod log;
#[cfg(feature = "std")]
mod map;
#[cfg(feature = "std")]
mod multi_window;
#[cfg(feature = "std")]
mod overrides;
#[cfg(feature = "std")]
mod pair_read;
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub mod planted;
mod read;
#[cfg(feature = "std")]
mod room;
#[cfg(feature = "std")]
mod seed;
#[cfg(any(feature = "std", hotlimit_loom))]
mod table;
mod window;
mod word;

#[cfg(feature = "std")]
pub use builder::KeyedBuilder;
#[cfg(feature = "std")]
pub use map::{Keyed, WhenFull};
pub use read::KeyedRead;

/// The creation protocol of a new key's state, shared by [`Keyed`]'s insert and the loom
/// model (`loom-tests/tests/keyed.rs`), which runs it over a lock-free one-key map.
///
/// `insert` puts a [`pending`](KeyedState::pending) state into the map if the key is absent and
/// returns it (`None`: another thread's entry is there; the caller looks again). The creator
/// whose insert won then `reserve`s a place (on failure `give_up` removes its pending entry),
/// and only then reads the floor and commits the state with it.
///
/// Why the floor is read after the insert: an earlier state of the key can be evicted at any
/// moment before the insert wins, and its evictor raises the floor before retiring it (see
/// [`raise_floor`]). Read before the insert, the floor may predate that eviction, and the new
/// state would start below the evicted one's last grant: a request at a time the evicted state
/// denied would be granted (a key of 1 per second, burst 1, granted twice within 1 µs: issue 14).
/// Read after it, the floor includes every eviction whose removal made the insert possible:
/// the remover's Release fence (in [`remove_retired`]) comes after the floor's raise, our
/// insert read the map slot the removal wrote (or a later value), and our Acquire fence below
/// comes after that read, so the raise happens before our load. While the entry is pending, no
/// other state of the key can be created, granted on, or evicted.
#[inline]
pub(crate) fn create<L: KeyedState, R: core::ops::Deref<Target = L::State>>(
    floor: &AtomicU64,
    insert: impl FnOnce() -> Option<R>,
    reserve: impl FnOnce() -> Result<(), Denied>,
    give_up: impl FnOnce(),
) -> Result<(), Denied> {
    let Some(ours) = insert() else {
        return Ok(());
    };
    // Nobody else commits, retires or replaces a pending entry: it is ours until then.
    if let Err(denied) = reserve() {
        give_up();
        return Err(denied);
    }
    // Acquire: pairs with the remover's Release fence through the map slot our insert read.
    fence(Ordering::Acquire);
    // Relaxed: ordered after every eviction our insert depends on by the fences (see above).
    let floor = floor.load(Ordering::Relaxed);
    L::commit(&ours, floor);
    Ok(())
}

/// Raises the floor to `now`; every eviction at `now` calls this before its retire.
#[inline]
pub(crate) fn raise_floor(floor: &AtomicU64, now: u64) {
    // Relaxed: published to later creators through the retire (Release) and the remover's
    // Release fence (see `create`); a read first, as the floor is usually high enough.
    if floor.load(Ordering::Relaxed) < now {
        floor.fetch_max(now, Ordering::Relaxed);
    }
}

/// Removes a retired (evicted) entry with `remove` (true if this call removed it), after a
/// Release fence: a creator whose insert reads the emptied slot then sees the floor raised
/// before the retire (see [`create`]). The caller retired the state itself, or read its
/// tombstone with Acquire.
#[inline]
pub(crate) fn remove_retired(remove: impl FnOnce() -> bool) -> bool {
    // Release: see above.
    fence(Ordering::Release);
    remove()
}
