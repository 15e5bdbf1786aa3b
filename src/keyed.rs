//! [`Keyed`]: one limiter state per key (user, IP, token) in a lock-free map, with a hard
//! capacity and automatic eviction of idle keys.
//!
//! The map is `papaya`'s lock-free hash map: a lookup of an existing key reads the table and
//! the entry and writes nothing shared (its epoch guard marks a per-thread slot), so the only
//! shared write on the admission path of an existing key is the limiter's own CAS on the key's
//! state word, and a GCRA denial writes nothing at all.
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
//! state at every time ≥ now. For clocks that go backwards, a fresh state is created with a
//! *floor*: the greatest `now` any sweep evicted at, so that it is never more permissive than
//! the evicted one ("no time has passed" below the floor).
//!
//! A [`SlidingLog`] per key is idle only when all its slots are, which one CAS cannot decide;
//! its state sits behind a gate word that admitters count themselves in and out of, and the
//! evictor closes the gate, waits for the admitters inside, re-checks, and only then marks the
//! log evicted (see the [`guide`](crate::guide)). A [`SlidingWindow`] per key (idle when none
//! of its buckets holds a permit it still counts) sits behind the same gate.
//!
//! The protocol is model-checked in `loom-tests/tests/keyed.rs` (the map abstracted, the
//! state-word protocol the real code), with a planted evictor that removes without the
//! tombstone CAS, which the model catches.

use alloc::vec::Vec;
use core::fmt;

use crate::error::ConfigError;
use crate::sync::{AtomicU64, Backoff, Ordering};
use crate::{Denied, Gcra, ManualClock, Rate, SlidingLog, SlidingWindow};

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
    type Carry;

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
    /// leaves it alone until [`commit`](KeyedState::commit), after which it is a fresh state
    /// that treats no time before `floor` as passed. A new key enters the map in this state
    /// while its creator reserves its place.
    #[doc(hidden)]
    fn pending(cfg: &Self::Config, floor: u64) -> Self::State;
    /// Makes a [`pending`](KeyedState::pending) state live (its creator alone calls this).
    #[doc(hidden)]
    fn commit(state: &Self::State, floor: u64);
    /// Whether the state is still pending (its creator removes it if it finds no place).
    #[doc(hidden)]
    fn is_pending(state: &Self::State) -> bool;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::Gcra {}
    impl Sealed for crate::SlidingLog {}
    impl Sealed for crate::SlidingWindow {}
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

/// GCRA's per-key state word: `{ tat: S }` for a live state (S ≤ [`GCRA_MAX_TAT`]), or one of
/// the two terminal tombstones.
const GCRA_EVICTED: u64 = u64::MAX;
/// The state word of a GCRA state frozen by a rate change.
const GCRA_MOVING: u64 = u64::MAX - 1;
/// The state word of a new key's GCRA state whose creator has not reserved its place yet.
const GCRA_PENDING: u64 = u64::MAX - 2;
/// The largest TAT a grant may store: the top three values are the markers, so the last 3 ns
/// of the clock's range are unusable (a grant that would reach them is denied as "never").
const GCRA_MAX_TAT: u64 = u64::MAX - 3;

mod state {
    #![allow(unreachable_pub)]
    use super::*;

    /// GCRA's shared configuration: what [`Gcra`] keeps beside its TAT.
    #[derive(Debug)]
    pub struct GcraConfig {
        pub(crate) interval: u64,
        pub(crate) tolerance: u64,
        pub(crate) burst: u64,
        /// Kept for `Debug`.
        #[allow(dead_code)]
        pub(crate) rate: Rate,
    }

    /// One key's GCRA state: the TAT word, 8 bytes.
    #[derive(Debug)]
    pub struct GcraState(pub(crate) AtomicU64);

    /// SlidingLog's shared configuration.
    #[derive(Debug)]
    pub struct LogConfig {
        pub(crate) rate: Rate,
        pub(crate) limit: u64,
        pub(crate) period: u64,
    }

    /// One key's sliding log, behind a gate word (see `LOG_CLOSING`).
    #[derive(Debug)]
    pub struct LogState {
        /// `{ closing: 1, evicted: 1, moving: 1, active: 61 }`: the flags, and the number of
        /// admitters inside the log.
        pub(crate) gate: AtomicU64,
        /// No time before this counts as passed (the `Keyed`'s floor at creation).
        pub(crate) floor: u64,
        pub(crate) log: SlidingLog<(), super::Unpadded>,
    }
}
use state::{GcraConfig, GcraState, LogConfig, LogState};

/// Gate flag: an evictor or a rate change is deciding; admitters wait (look the key up again).
const LOG_CLOSING: u64 = 1 << 63;
/// Gate flag, terminal: the log was evicted.
const LOG_EVICTED: u64 = 1 << 62;
/// Gate flag, terminal: the log was frozen for a rate change.
const LOG_MOVING: u64 = 1 << 61;
/// Gate flag: a new key's state whose creator has not reserved its place yet (cleared once,
/// by the creator; admitters look again, closers leave it alone).
const LOG_PENDING: u64 = 1 << 60;
/// The gate's admitter count.
const LOG_ACTIVE: u64 = LOG_PENDING - 1;

/// A per-key log whose ring holds the newest `limit` of `stamps` (ascending) after
/// never-used slots, in the order its cursor visits them (see [`SlidingLog::preload`]): index
/// 0, where the cursor starts, is the oldest. `gate`: the gate's first value (0: live).
fn new_log(cfg: &LogConfig, stamps: &[u64], floor: u64, gate: u64) -> LogState {
    let len = cfg.limit as usize;
    let keep = &stamps[stamps.len().saturating_sub(len)..];
    let slots = (0..len).map(|_| AtomicU64::new(0)).collect();
    let log = SlidingLog::from_parts(slots, cfg.rate, ());
    log.preload(keep);
    // A request below the newest carried grant records at it ("no time has passed").
    let newest = keep.last().map_or(0, |s| s.saturating_sub(1));
    LogState {
        gate: AtomicU64::new(gate),
        floor: floor.max(newest),
        log,
    }
}

/// The end of the window of a grant with this stamp: it counts at `t` iff `t < end`.
fn log_end(cfg: &LogConfig, stamp: u64) -> u64 {
    if stamp == 0 {
        0
    } else {
        (stamp - 1).saturating_add(cfg.period)
    }
}

/// Closes the gate and waits for the admitters inside to leave. False if another closer or a
/// terminal flag got there first (the gate is left as it was).
fn gate_close(gate: &AtomicU64) -> bool {
    // Acquire: with the admitters' Release decrements (a release sequence on this word), once
    // the count reads 0 every grant made inside is visible in the slots.
    let g = gate.fetch_or(LOG_CLOSING, Ordering::Acquire);
    if g & !LOG_ACTIVE != 0 {
        if g & LOG_CLOSING == 0 {
            // Relaxed: undo our flag on a terminal gate (nobody reads CLOSING there).
            gate.fetch_and(!LOG_CLOSING, Ordering::Relaxed);
        }
        return false;
    }
    let backoff = Backoff::new();
    // Acquire: see above.
    while gate.load(Ordering::Acquire) & LOG_ACTIVE != 0 {
        backoff.snooze_or_spin();
    }
    true
}

impl KeyedState for SlidingLog {
    type Config = LogConfig;
    type State = LogState;
    type Carry = Vec<u64>;

    fn config(rate: Rate, _: Option<u64>) -> Result<LogConfig, ConfigError> {
        let limit = rate.limit();
        if limit > crate::sliding_log::MAX_SLOTS {
            return Err(ConfigError::new(
                "limit",
                crate::error::Value::Count(u128::from(limit)),
                "must be at most 2^28 = 268435456 (8 bytes each)",
            ));
        }
        Ok(LogConfig {
            rate,
            limit,
            period: rate.period_nanos(),
        })
    }

    fn carried(cfg: &LogConfig, stamps: Vec<u64>, floor: u64) -> LogState {
        new_log(cfg, &stamps, floor, 0)
    }

    fn acquire(cfg: &LogConfig, state: &LogState, permits: u32, now: u64) -> Admit {
        if u64::from(permits) > cfg.limit {
            return Admit::Denied(Denied::never());
        }
        if let Err(admit) = gate_enter(&state.gate) {
            return admit;
        }
        let result = state.log.try_acquire_n_at(permits, now.max(state.floor));
        gate_leave(&state.gate);
        match result {
            Ok(()) => Admit::Granted,
            Err(denied) => Admit::Denied(denied),
        }
    }

    fn idle_at(cfg: &LogConfig, state: &LogState) -> u64 {
        // Relaxed: a snapshot to rank eviction candidates; `retire` decides under the gate.
        if state.gate.load(Ordering::Relaxed) & (LOG_EVICTED | LOG_MOVING | LOG_PENDING) != 0 {
            return u64::MAX;
        }
        state
            .log
            .stamps()
            .map(|s| log_end(cfg, s))
            .max()
            .unwrap_or(0)
    }

    fn retire(cfg: &LogConfig, state: &LogState, now: u64, how: Retire) -> Option<Vec<u64>> {
        gate_retire(
            &state.gate,
            how,
            || state.log.stamps().all(|s| log_end(cfg, s) <= now),
            || {
                let mut stamps: Vec<u64> = state.log.stamps().filter(|&s| s != 0).collect();
                stamps.sort_unstable();
                stamps
            },
        )
    }

    fn is_evicted(state: &LogState) -> bool {
        gate_is_evicted(&state.gate)
    }

    fn pending(cfg: &LogConfig, floor: u64) -> LogState {
        new_log(cfg, &[], floor, LOG_PENDING)
    }

    fn commit(state: &LogState, _: u64) {
        gate_commit(&state.gate);
    }

    fn is_pending(state: &LogState) -> bool {
        gate_is_pending(&state.gate)
    }
}

impl KeyedState for Gcra {
    type Config = GcraConfig;
    type State = GcraState;
    type Carry = u64;

    fn config(rate: Rate, burst: Option<u64>) -> Result<GcraConfig, ConfigError> {
        // Gcra's own builder validates (same fields, same messages); only its numbers are kept.
        let builder = Gcra::builder(rate).clock(ManualClock::new());
        let g = match burst {
            Some(b) => builder.burst(b).build()?,
            None => builder.build()?,
        };
        let (interval, tolerance) = g.params();
        Ok(GcraConfig {
            interval,
            tolerance,
            burst: g.burst(),
            rate,
        })
    }

    fn carried(_: &GcraConfig, tat: u64, floor: u64) -> GcraState {
        GcraState(AtomicU64::new(tat.max(floor).min(GCRA_MAX_TAT)))
    }

    #[inline]
    fn acquire(cfg: &GcraConfig, state: &GcraState, permits: u32, now: u64) -> Admit {
        let Some((cost, slack)) =
            crate::gcra::price(u64::from(permits), cfg.burst, cfg.interval, cfg.tolerance)
        else {
            return Admit::Denied(Denied::never());
        };
        // Relaxed: the word is the key's whole state; the CAS below fails if this is stale.
        let mut tat = state.0.load(Ordering::Relaxed);
        let backoff = Backoff::new();
        loop {
            if tat >= GCRA_PENDING {
                return gcra_retired(state, tat);
            }
            // A denial returns here, before any write.
            let next = match crate::gcra::decide(tat, now, cost, slack) {
                Ok(next) if next <= GCRA_MAX_TAT => next,
                // The top of the range is reserved for the tombstones: never.
                Ok(_) => return Admit::Denied(Denied::never()),
                Err(denied) => return Admit::Denied(denied),
            };
            // Relaxed (both): grants are linearized by the CAS on this one word, as in `Gcra`;
            // a tombstone written meanwhile makes it fail, and the loop sees it above.
            match state
                .0
                .compare_exchange_weak(tat, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Admit::Granted,
                Err(current) => {
                    tat = current;
                    backoff.spin();
                }
            }
        }
    }

    fn idle_at(_: &GcraConfig, state: &GcraState) -> u64 {
        // Relaxed: a snapshot to rank eviction candidates; the retire CAS decides.
        match state.0.load(Ordering::Relaxed) {
            tat if tat >= GCRA_PENDING => u64::MAX,
            tat => tat,
        }
    }

    fn retire(_: &GcraConfig, state: &GcraState, now: u64, how: Retire) -> Option<u64> {
        let tombstone = if how == Retire::Move {
            GCRA_MOVING
        } else {
            GCRA_EVICTED
        };
        // Relaxed: the CAS below checks the value.
        let mut tat = state.0.load(Ordering::Relaxed);
        loop {
            if tat >= GCRA_PENDING || (how == Retire::IfIdle && tat > now) {
                return None;
            }
            // Release on success: publishes the raised floor (the sweep raised it before
            // retiring) to an admitter that Acquire-loads the tombstone and then creates the
            // key's fresh state from the floor. Relaxed on failure: we only re-check.
            match state.0.compare_exchange_weak(
                tat,
                tombstone,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(tat),
                Err(current) => tat = current,
            }
        }
    }

    fn is_evicted(state: &GcraState) -> bool {
        // Relaxed: the tombstone is terminal; a stale read only delays the removal.
        state.0.load(Ordering::Relaxed) == GCRA_EVICTED
    }

    fn pending(_: &GcraConfig, _: u64) -> GcraState {
        GcraState(AtomicU64::new(GCRA_PENDING))
    }

    fn commit(state: &GcraState, floor: u64) {
        // Relaxed: only the creator writes a pending word, once; the state has no other data
        // to publish (the entry itself was published by the map's insert).
        state.0.store(floor.min(GCRA_MAX_TAT), Ordering::Relaxed);
    }

    fn is_pending(state: &GcraState) -> bool {
        // Relaxed: only the creator asks, about its own entry.
        state.0.load(Ordering::Relaxed) == GCRA_PENDING
    }
}

/// The outcome for a GCRA word found retired or pending (`tat` is `GCRA_EVICTED`,
/// `GCRA_MOVING` or `GCRA_PENDING`).
#[cold]
fn gcra_retired(state: &GcraState, tat: u64) -> Admit {
    if tat == GCRA_EVICTED {
        // Acquire: reads the terminal tombstone from the evictor's Release CAS, so the floor
        // it raised before is visible when the caller creates the key's fresh state.
        let _ = state.0.load(Ordering::Acquire);
        Admit::Evicted
    } else {
        Admit::Moving
    }
}

/// A per-key log's head (cursor and newest stamp) without cache padding: a per-key limiter is
/// rarely contended, and padding would cost up to 120 bytes per key.
pub(crate) struct Unpadded(crate::sliding_log::Head);

impl core::ops::Deref for Unpadded {
    type Target = crate::sliding_log::Head;

    #[inline(always)]
    fn deref(&self) -> &crate::sliding_log::Head {
        &self.0
    }
}

impl From<crate::sliding_log::Head> for Unpadded {
    fn from(head: crate::sliding_log::Head) -> Self {
        Unpadded(head)
    }
}

impl fmt::Debug for Unpadded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Unpadded")
    }
}

mod window_state {
    #![allow(unreachable_pub)]
    use super::*;
    use crate::key_pool::Unclocked;
    use crate::SlidingWindowBuilder;

    /// SlidingWindow's shared configuration: the (validated) builder every key's window is
    /// built from.
    #[derive(Debug)]
    pub struct WindowConfig {
        pub(crate) builder: SlidingWindowBuilder<Unclocked>,
        pub(crate) rate: Rate,
        pub(crate) buckets: Option<usize>,
        pub(crate) period: u64,
    }

    /// One key's strict sliding window, behind a gate word with the same protocol as the
    /// per-key log's (`LOG_CLOSING`, `LOG_EVICTED`, `LOG_MOVING`, `LOG_ACTIVE`).
    #[derive(Debug)]
    pub struct WindowState {
        /// `{ closing: 1, evicted: 1, moving: 1, active: 61 }`.
        pub(crate) gate: AtomicU64,
        /// No time before this counts as passed (the `Keyed`'s floor at creation).
        pub(crate) floor: u64,
        /// The highest time any call brought in (≥ every grant's effective time): a rate change
        /// re-records carried permits no later than this.
        pub(crate) newest: AtomicU64,
        pub(crate) window: crate::sliding_window::KeyWindow,
    }
}
use window_state::{WindowConfig, WindowState};

/// Enters a per-key gate (`LogState::gate`, `WindowState::gate`): `Ok` if the caller is now
/// counted inside (it must call [`gate_leave`]), else what to tell the admitter.
#[inline]
fn gate_enter(gate: &AtomicU64) -> Result<(), Admit> {
    // Relaxed: a look before announcing ourselves, so that admitters bouncing off a closed
    // gate do not keep its count above 0 while the closer waits for it to drain.
    let mut g = gate.load(Ordering::Relaxed);
    if g & !LOG_ACTIVE == 0 {
        // Relaxed: announces us to a closer, which waits for the count to drop; the flags we
        // read decide whether we may enter.
        g = gate.fetch_add(1, Ordering::Relaxed);
        if g & !LOG_ACTIVE == 0 {
            return Ok(());
        }
        // Relaxed: leaving without touching the state.
        gate.fetch_sub(1, Ordering::Relaxed);
    }
    if g & LOG_EVICTED != 0 {
        // Acquire: as for GCRA's tombstone, makes the raised floor visible.
        let _ = gate.load(Ordering::Acquire);
        Err(Admit::Evicted)
    } else {
        Err(Admit::Moving)
    }
}

/// Makes a pending gate live (the creator's one write to the flag).
fn gate_commit(gate: &AtomicU64) {
    // Relaxed: an RMW so that bounced admitters' increments and decrements are kept; it
    // publishes nothing (the state was published by the map's insert).
    gate.fetch_and(!LOG_PENDING, Ordering::Relaxed);
}

/// Whether a gate was closed for good by an eviction.
fn gate_is_evicted(gate: &AtomicU64) -> bool {
    // Relaxed: the flag is terminal; a stale read only delays the removal.
    gate.load(Ordering::Relaxed) & LOG_EVICTED != 0
}

/// Whether a gate is still pending.
fn gate_is_pending(gate: &AtomicU64) -> bool {
    // Relaxed: only the creator asks, about its own entry.
    gate.load(Ordering::Relaxed) & LOG_PENDING != 0
}

/// Leaves a gate entered with [`gate_enter`].
#[inline]
fn gate_leave(gate: &AtomicU64) {
    // Release: publishes our writes inside (slot claims, bucket records) to a closer that sees
    // the count drop to 0.
    gate.fetch_sub(1, Ordering::Release);
}

/// Retires a gated state: if `idle` (checked again once the gate is closed and empty) or
/// `how` is not `IfIdle`, marks the gate terminal and returns `take()`, the state's contents.
fn gate_retire<T>(
    gate: &AtomicU64,
    how: Retire,
    idle: impl Fn() -> bool,
    take: impl FnOnce() -> T,
) -> Option<T> {
    // A cheap look first: a busy state is never closed by a sweep.
    if how == Retire::IfIdle && !idle() {
        return None;
    }
    if !gate_close(gate) {
        return None;
    }
    // The gate is closed and empty: the state is final until we reopen it.
    if how == Retire::IfIdle && !idle() {
        // Relaxed: reopening publishes nothing (we changed nothing).
        gate.fetch_and(!LOG_CLOSING, Ordering::Relaxed);
        return None;
    }
    let carry = take();
    let terminal = if how == Retire::Move {
        LOG_MOVING
    } else {
        LOG_EVICTED
    };
    // Release: as GCRA's tombstone CAS (publishes the raised floor). An RMW, not a store:
    // bounced admitters' increments and decrements must not be lost.
    gate.fetch_xor(LOG_CLOSING | terminal, Ordering::Release);
    Some(carry)
}

/// The time from which a per-key window counts none of its permits (0: none counted now).
fn window_idle_at(cfg: &WindowConfig, window: &crate::sliding_window::KeyWindow) -> u64 {
    window
        .counted()
        .map(|(t, _)| t.saturating_add(cfg.period))
        .max()
        .unwrap_or(0)
}

/// A per-key window under `cfg` holding the newest `limit` of the `carried` permits
/// (`(t, k)`, ascending in t), each re-recorded at its t. `gate`: the gate's first value (0:
/// live).
fn new_window(cfg: &WindowConfig, carried: &[(u64, u64)], floor: u64, gate: u64) -> WindowState {
    let window = match crate::sliding_window::KeyWindow::new(&cfg.builder) {
        Ok(w) => w,
        // `config` built this very builder once, and a build depends on nothing else.
        Err(e) => unreachable!("validated per-key window: {e}"),
    };
    // The newest permits first, up to the limit; then replayed oldest first. Each replay is
    // granted: the window holds at most what was replayed before it, ≤ limit in all.
    let mut room = cfg.rate.limit();
    let mut keep = Vec::new();
    for &(t, k) in carried.iter().rev() {
        let k = k.min(room);
        if k == 0 {
            break;
        }
        room -= k;
        keep.push((t, k));
    }
    for &(t, k) in keep.iter().rev() {
        // k ≤ limit ≤ 2^31 − 1 (the window's own bound), so it fits a u32.
        let granted = window.try_acquire_n_at(k as u32, t);
        debug_assert!(granted.is_ok(), "a carried permit did not fit");
    }
    WindowState {
        gate: AtomicU64::new(gate),
        floor,
        // Replays were judged at their own times (ascending, so the window's floor never ran
        // ahead of them): the newest is the highest effective time so far.
        newest: AtomicU64::new(keep.first().map_or(0, |&(t, _)| t)),
        window,
    }
}

impl KeyedState for SlidingWindow {
    type Config = WindowConfig;
    type State = WindowState;
    type Carry = Vec<(u64, u64)>;

    fn config(rate: Rate, buckets: Option<u64>) -> Result<WindowConfig, ConfigError> {
        let buckets = buckets.map(|b| usize::try_from(b).unwrap_or(usize::MAX));
        let mut builder = SlidingWindow::builder(rate).clock(crate::key_pool::Unclocked);
        if let Some(b) = buckets {
            builder = builder.buckets(b);
        }
        // The window's own validation (same fields, same messages).
        crate::sliding_window::KeyWindow::new(&builder)?;
        Ok(WindowConfig {
            builder,
            rate,
            buckets,
            period: rate.period_nanos(),
        })
    }

    fn rerate(base: &WindowConfig, rate: Rate) -> Result<WindowConfig, ConfigError> {
        Self::config(rate, base.buckets.map(|b| b as u64))
    }

    fn carried(cfg: &WindowConfig, carry: Vec<(u64, u64)>, floor: u64) -> WindowState {
        new_window(cfg, &carry, floor, 0)
    }

    fn acquire(cfg: &WindowConfig, state: &WindowState, permits: u32, now: u64) -> Admit {
        if u64::from(permits) > cfg.rate.limit() {
            return Admit::Denied(Denied::never());
        }
        if let Err(admit) = gate_enter(&state.gate) {
            return admit;
        }
        let now = now.max(state.floor);
        // Relaxed (both): a high-water mark read only by a closer, to which our `gate_leave`
        // (Release) publishes it. A grant's effective time is at most the highest `now` any
        // call brought (the window's floor start comes from one), so every call raises it.
        if state.newest.load(Ordering::Relaxed) < now {
            state.newest.fetch_max(now, Ordering::Relaxed);
        }
        let result = state.window.try_acquire_n_at(permits, now);
        gate_leave(&state.gate);
        match result {
            Ok(()) => Admit::Granted,
            Err(denied) => Admit::Denied(denied),
        }
    }

    fn idle_at(cfg: &WindowConfig, state: &WindowState) -> u64 {
        // Relaxed: a snapshot to rank eviction candidates; `retire` decides under the gate.
        if state.gate.load(Ordering::Relaxed) & (LOG_EVICTED | LOG_MOVING | LOG_PENDING) != 0 {
            return u64::MAX;
        }
        window_idle_at(cfg, &state.window)
    }

    fn retire(
        cfg: &WindowConfig,
        state: &WindowState,
        now: u64,
        how: Retire,
    ) -> Option<Vec<(u64, u64)>> {
        gate_retire(
            &state.gate,
            how,
            || window_idle_at(cfg, &state.window) <= now,
            || {
                // Each bucket's permits at its last instant, but no later than the newest
                // call: for a clock that does not run backwards, no later than now.
                // Relaxed: the gate is closed and empty (its Acquire made this final).
                let newest = state.newest.load(Ordering::Relaxed);
                let mut carry: Vec<(u64, u64)> = (state.window.counted())
                    .map(|(t, k)| (t.min(newest), k))
                    .collect();
                carry.sort_unstable();
                carry
            },
        )
    }

    fn is_evicted(state: &WindowState) -> bool {
        gate_is_evicted(&state.gate)
    }

    fn pending(cfg: &WindowConfig, floor: u64) -> WindowState {
        new_window(cfg, &[], floor, LOG_PENDING)
    }

    fn commit(state: &WindowState, _: u64) {
        gate_commit(&state.gate);
    }

    fn is_pending(state: &WindowState) -> bool {
        gate_is_pending(&state.gate)
    }
}

#[cfg(feature = "std")]
pub use table::{Keyed, KeyedBuilder, WhenFull};

/// The map and everything around it: `papaya` needs `std`.
#[cfg(feature = "std")]
mod table {
    use alloc::vec::Vec;
    use core::fmt;
    use core::hash::Hash;

    use crossbeam_utils::CachePadded;

    use super::{Admit, KeyedState, Retire, SnoozeOrSpin};
    use crate::error::{ConfigError, Value};
    use crate::sync::{Arc, AtomicU64, Backoff, Ordering};
    use crate::{Clock, DefaultClock, Denied, Gcra, Rate, SlidingLog, SlidingWindow};

    /// The hash map under [`Keyed`]: `papaya` with `foldhash`, seeded at random per map (about
    /// twice as fast as SipHash here; a flood of chosen keys is bounded by the capacity).
    ///
    /// The state words are CASed in place inside the map's values, which is sound only because
    /// a value never moves or gets copied while a reader can reach it: papaya boxes every entry
    /// and a resize moves the box's pointer to the new table, never the value (it does not
    /// even require `V: Clone`), and the `&V` a lookup returns lives as long as the guard. A
    /// map that clones values on resize (scc's `HashIndex`) would let a grant land in the old
    /// copy after the new one was taken: over-admission. Such a map would need the state
    /// behind an `Arc`.
    type Map<K, V> = papaya::HashMap<K, V, foldhash::fast::RandomState>;

    /// How long a caller that finds the table full while another thread is sweeping it is told
    /// to wait: the sweep is already freeing room.
    const SWEEP_BUSY_RETRY_NS: u64 = 10_000;

    /// The `sweep` word's value while a sweep runs (no other `next sweep time` can be `u64::MAX`
    /// that matters: a clock at `u64::MAX` is exhausted).
    const SWEEPING: u64 = u64::MAX;

    /// What [`Keyed`] does when a new key arrives, the table holds `capacity` keys, and a sweep
    /// finds too few idle keys to evict.
    ///
    /// Idle keys (whose state carries no information) are always evicted first; this policy only
    /// decides what happens when there are not enough of them. A sweep runs on one thread at a
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
    struct Slot<L: KeyedState> {
        state: L::State,
        /// `None`: the `Keyed`'s default configuration.
        cfg: Option<Arc<L::Config>>,
    }

    /// Per-key limits (per user, per IP, per token): one limiter state per key, created on the
    /// key's first request, in a lock-free map with a hard capacity.
    ///
    /// # Guarantee
    ///
    /// - **Each key gets the inner limiter's guarantee** (for [`Gcra`]: in any interval of length
    ///   d, at most b + ⌊d / I⌋ permits per key), under any concurrency, including while keys are
    ///   being evicted: a state is evicted only when it carries no information, by a CAS on the
    ///   state word that an admission on it cannot race past (see the module docs and the
    ///   [`guide`](crate::guide)). The one documented exception is [`WhenFull::EvictSoonestIdle`],
    ///   which may make a busy key forget its state when the table is full.
    /// - **Bounded memory**: never more than `capacity` keys. A new key arriving when the table is
    ///   full triggers a sweep that evicts every idle key (no background thread); if too few are
    ///   idle, [`WhenFull`] decides. A new key is refused only when `capacity` other keys hold
    ///   their places: threads racing to create one key count it once (its state enters the map
    ///   pending, and only the creator whose insert won takes a place; requests on it meanwhile
    ///   wait for that one counter CAS). Beyond `capacity`, the map may hold for a moment one
    ///   such pending entry per thread creating a key; `len()` never exceeds `capacity`.
    /// - An existing key's admission is a map lookup (no shared write) plus the limiter's own
    ///   atomic: for GCRA one CAS per grant and a single load per denial.
    ///
    /// **Rate overrides**: [`set_rate`](Keyed::set_rate) gives one key its own rate (a premium
    /// user), at runtime; [`clear_rate`](Keyed::clear_rate) returns it to the default;
    /// [`set_default_rate`](Keyed::set_default_rate) changes the default at runtime. At most
    /// `capacity` keys have an override at a time (kept apart from the key states, which they
    /// outlive), so the memory of both tables is bounded by `capacity`.
    ///
    /// Memory per key: the key, the state (8 bytes for GCRA; for [`SlidingLog`] a ring of `limit`
    /// timestamps and a gate word; for [`SlidingWindow`] its ring of snapshots (the power of two
    /// ≥ `buckets + 1` slots), an unpadded header and a gate word), an 8-byte override pointer,
    /// plus the map's entry overhead
    /// (measured in `BENCHMARKS.md`: 70, 249 and 330 bytes per `u64` key for GCRA, a log of limit
    /// 10 and a window of 10 buckets).
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
        map: Map<K, Slot<L>>,
        /// Per-key rate overrides, consulted only when a key's state is created.
        overrides: Map<K, Arc<L::Config>>,
        /// The default configuration once [`set_default_rate`](Keyed::set_default_rate) ran,
        /// under the key `()` (absent: `cfg`).
        default: Map<(), Arc<L::Config>>,
        /// Overrides held plus places reserved by `set_rate`: ≤ `capacity` at all times.
        n_overrides: CachePadded<AtomicU64>,
        /// Bumped by every rate change once it is stored, touched by every new key once it is
        /// inserted (RMWs both): see [`sync_override`](Keyed::sync_override).
        rates: CachePadded<AtomicU64>,
        cfg: L::Config,
        capacity: u64,
        /// Keys in the map plus places reserved by inserters: ≤ `capacity` at all times.
        len: CachePadded<AtomicU64>,
        /// The greatest `now` any sweep ran at: fresh states treat no time before it as passed.
        floor: CachePadded<AtomicU64>,
        /// The earliest time the next sweep may run, or [`SWEEPING`] while one runs.
        sweep: CachePadded<AtomicU64>,
        when_full: WhenFull,
        clock: C,
    }

    /// Builds a [`Keyed`]: see [`Keyed::gcra`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
    ///
    /// let per_ip: Keyed<std::net::IpAddr, Gcra, ManualClock> = Keyed::gcra(Rate::per_minute(60)?)
    ///     .burst(10)
    ///     .capacity(1_000_000)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(per_ip.capacity(), 1_000_000);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[must_use = "a builder does nothing until `build()` is called"]
    pub struct KeyedBuilder<K, L, C> {
        rate: Rate,
        burst: Option<u64>,
        capacity: usize,
        when_full: WhenFull,
        clock: C,
        _marker: core::marker::PhantomData<fn() -> (K, L)>,
    }

    impl<K, L, C: fmt::Debug> fmt::Debug for KeyedBuilder<K, L, C> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("KeyedBuilder")
                .field("rate", &self.rate)
                .field("burst", &self.burst)
                .field("capacity", &self.capacity)
                .field("when_full", &self.when_full)
                .field("clock", &self.clock)
                .finish()
        }
    }

    /// The default capacity: 100,000 keys.
    const DEFAULT_CAPACITY: usize = 100_000;

    impl<K> Keyed<K, Gcra> {
        /// A builder for per-key [`Gcra`] limits at `rate` (burst `rate.limit()`, capacity
        /// 100,000 keys, [`WhenFull::DenyNewKeys`], the default clock).
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Gcra, Keyed, Rate};
        ///
        /// let per_token = Keyed::<u64, Gcra>::gcra(Rate::per_second(100)?).build()?;
        /// assert!(per_token.try_acquire(&42).is_ok());
        /// # Ok::<(), hotlimit::ConfigError>(())
        /// ```
        pub fn gcra(rate: Rate) -> KeyedBuilder<K, Gcra, DefaultClock> {
            KeyedBuilder {
                rate,
                burst: None,
                capacity: DEFAULT_CAPACITY,
                when_full: WhenFull::DenyNewKeys,
                clock: DefaultClock::default(),
                _marker: core::marker::PhantomData,
            }
        }
    }

    impl<K> Keyed<K, SlidingLog> {
        /// A builder for per-key [`SlidingLog`] limits at `rate`: each key gets the exact
        /// sliding window (at most `limit` in every window of `period`), at a cost of a ring of
        /// `limit` timestamps per key (8 bytes × `limit` + about 150 bytes, measured; a sweep
        /// reads each key's ring, so it is O(capacity × limit)). Admissions also pass a per-key
        /// gate word (two RMWs) that lets an evictor wait out the admitters inside the log.
        /// Capacity 100,000 keys, [`WhenFull::DenyNewKeys`], the default clock.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Keyed, ManualClock, Rate, SlidingLog};
        ///
        /// let k: Keyed<u32, SlidingLog, ManualClock> = Keyed::sliding_log(Rate::per_second(2)?)
        ///     .clock(ManualClock::new())
        ///     .build()?;
        /// assert!(k.try_acquire_at(&1, 0).is_ok());
        /// assert!(k.try_acquire_at(&1, 400_000_000).is_ok());
        /// // The grant at 0 leaves the window at 1 s.
        /// let d = k.try_acquire_at(&1, 900_000_000).unwrap_err();
        /// assert_eq!(d.retry_after_nanos(), Some(100_000_000));
        /// # Ok::<(), hotlimit::ConfigError>(())
        /// ```
        pub fn sliding_log(rate: Rate) -> KeyedBuilder<K, SlidingLog, DefaultClock> {
            KeyedBuilder {
                rate,
                burst: None,
                capacity: DEFAULT_CAPACITY,
                when_full: WhenFull::DenyNewKeys,
                clock: DefaultClock::default(),
                _marker: core::marker::PhantomData,
            }
        }
    }

    impl<K, C> KeyedBuilder<K, Gcra, C> {
        /// Every key's burst (see [`GcraBuilder::burst`](crate::GcraBuilder::burst)). Default:
        /// the rate's `limit`. Keys with a [`set_rate`](Keyed::set_rate) override get burst =
        /// their rate's `limit`.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
        ///
        /// let k: Keyed<u8, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(100)?)
        ///     .burst(1)
        ///     .clock(ManualClock::new())
        ///     .build()?;
        /// assert!(k.try_acquire(&1).is_ok());
        /// assert!(k.try_acquire(&1).is_err());
        /// # Ok::<(), hotlimit::ConfigError>(())
        /// ```
        pub fn burst(mut self, burst: u64) -> Self {
            self.burst = Some(burst);
            self
        }
    }

    impl<K, L, C> KeyedBuilder<K, L, C> {
        /// The most keys held at once (≥ 1). Default: 100,000.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
        ///
        /// let k: Keyed<u32, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(1)?)
        ///     .capacity(2)
        ///     .clock(ManualClock::new())
        ///     .build()?;
        /// k.try_acquire(&1)?;
        /// k.try_acquire(&2)?;
        /// assert!(k.try_acquire(&3).is_err()); // full, and keys 1 and 2 are busy for 1 s
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn capacity(mut self, capacity: usize) -> Self {
            self.capacity = capacity;
            self
        }

        /// What to do when the table is full and too few keys are idle. Default:
        /// [`WhenFull::DenyNewKeys`].
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Gcra, Keyed, ManualClock, Rate, WhenFull};
        ///
        /// let k: Keyed<u32, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(1)?)
        ///     .capacity(8)
        ///     .when_full(WhenFull::EvictSoonestIdle)
        ///     .clock(ManualClock::new())
        ///     .build()?;
        /// for key in 0..100 {
        ///     k.try_acquire(&key)?; // busy keys are evicted to make room
        /// }
        /// assert!(k.len() <= 8);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn when_full(mut self, when_full: WhenFull) -> Self {
            self.when_full = when_full;
            self
        }

        /// The clock to read in `try_acquire`. Default: [`DefaultClock`].
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
        ///
        /// let clock = ManualClock::new();
        /// let k: Keyed<u32, Gcra, ManualClock> =
        ///     Keyed::gcra(Rate::per_second(1)?).clock(clock.clone()).build()?;
        /// # let _ = k;
        /// # Ok::<(), hotlimit::ConfigError>(())
        /// ```
        pub fn clock<C2: Clock>(self, clock: C2) -> KeyedBuilder<K, L, C2> {
            KeyedBuilder {
                rate: self.rate,
                burst: self.burst,
                capacity: self.capacity,
                when_full: self.when_full,
                clock,
                _marker: core::marker::PhantomData,
            }
        }
    }

    impl<K: Hash + Eq + Clone, L: KeyedState, C: Clock> KeyedBuilder<K, L, C> {
        /// Builds the keyed limiter.
        ///
        /// # Errors
        ///
        /// [`ConfigError`] when `capacity` is 0 (field `capacity`), or as the inner limiter's
        /// builder (for GCRA: fields `rate` and `burst`).
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
        ///
        /// let err = Keyed::<u32, Gcra>::gcra(Rate::per_second(1)?)
        ///     .capacity(0)
        ///     .clock(ManualClock::new())
        ///     .build()
        ///     .unwrap_err();
        /// assert_eq!(err.to_string(), "invalid capacity = 0: must be at least 1 key");
        /// # Ok::<(), hotlimit::ConfigError>(())
        /// ```
        pub fn build(self) -> Result<Keyed<K, L, C>, ConfigError> {
            if self.capacity == 0 {
                return Err(ConfigError::new(
                    "capacity",
                    Value::Count(0),
                    "must be at least 1 key",
                ));
            }
            let cfg = L::config(self.rate, self.burst)?;
            Ok(Keyed {
                // Blocking resizes: a lookup never has to consult a half-migrated old table
                // (measured: 1.4x faster lookups than the incremental default).
                map: papaya::HashMap::builder()
                    .hasher(Default::default())
                    .resize_mode(papaya::ResizeMode::Blocking)
                    .build(),
                overrides: Map::default(),
                default: Map::default(),
                n_overrides: CachePadded::new(AtomicU64::new(0)),
                rates: CachePadded::new(AtomicU64::new(0)),
                cfg,
                capacity: self.capacity as u64,
                len: CachePadded::new(AtomicU64::new(0)),
                floor: CachePadded::new(AtomicU64::new(0)),
                sweep: CachePadded::new(AtomicU64::new(0)),
                when_full: self.when_full,
                clock: self.clock,
            })
        }
    }

    impl<K: Hash + Eq + Clone, L: KeyedState, C> Keyed<K, L, C> {
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
        pub fn try_acquire_n_at(&self, key: &K, permits: u32, now: u64) -> Result<(), Denied> {
            if permits == 0 {
                return Ok(());
            }
            // The hot path, kept small so that it inlines without spilling registers: an
            // existing, live key is one lookup (under the map's epoch guard, no shared write)
            // and the limiter's own atomic. Everything else (a new key, a retired state) goes
            // to `acquire_slow`, which starts over with a lookup of its own.
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
        fn acquire_slow(&self, key: &K, permits: u32, now: u64) -> Result<(), Denied> {
            let guard = self.map.guard();
            let backoff = Backoff::new();
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
                        Admit::Moving => backoff.snooze_or_spin(),
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
        pub fn try_acquire_at(&self, key: &K, now: u64) -> Result<(), Denied> {
            self.try_acquire_n_at(key, 1, now)
        }

        /// Removes `key`'s entry if it holds an evicted state (whoever succeeds counts it).
        #[cold]
        fn remove_evicted(&self, key: &K, guard: &impl papaya::Guard) {
            if let Ok(Some(_)) =
                self.map
                    .remove_if(key, |_, slot| L::is_evicted(&slot.state), guard)
            {
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
        fn insert_new(
            &self,
            key: &K,
            now: u64,
            len: u64,
            guard: &impl papaya::Guard,
        ) -> Result<(), Denied> {
            // Refuse without touching the map (a flood of new keys at a full table costs a few
            // loads per request, not an insert and a removal each). The key's own creator cannot
            // hold one of the counted places: a creator inserts before it counts (Release), so a
            // place we counted (Acquire) before our lookup has its entry visible to that lookup.
            if let Some(denied) = self.deferred(len, now) {
                return Err(denied);
            }
            let cfg = self.rate_of(key);
            // Relaxed: ordered after the eviction that raised it by the map (an evictor raises the
            // floor, then removes the entry; our lookup that saw the key missing is ordered after
            // the removal by papaya's Release/Acquire on the entry pointer) or by the Acquire load
            // of the tombstone in `acquire`.
            let floor = self.floor.load(Ordering::Relaxed);
            let state = L::pending(cfg.as_deref().unwrap_or(&self.cfg), floor);
            let Ok(ours) = self.map.try_insert(key.clone(), Slot { state, cfg }, guard) else {
                // Another thread created (or is creating) the key: the caller looks again.
                return Ok(());
            };
            // Nobody else commits, retires or replaces a pending entry: it is ours until then.
            if let Err(denied) = self.reserve_place(now, guard) {
                let _ = self
                    .map
                    .remove_if(key, |_, slot| L::is_pending(&slot.state), guard);
                return Err(denied);
            }
            L::commit(&ours.state, floor);
            // A `set_rate` may have raced with our read of the overrides: make sure the state
            // we just published runs on the key's current rate.
            // AcqRel: see `sync_override` (a rate change's RMW before ours is visible to the
            // re-read there; one after ours sees our entry in its own sync).
            self.rates.fetch_add(0, Ordering::AcqRel);
            self.sync_override(key, now);
            Ok(())
        }

        /// Reserves a place for one new key: ≤ `capacity` keys and reservations at all times.
        fn reserve_place(&self, now: u64, guard: &impl papaya::Guard) -> Result<(), Denied> {
            // Relaxed: a counter; the CAS below keeps it ≤ capacity.
            let mut len = self.len.load(Ordering::Relaxed);
            loop {
                if len >= self.capacity {
                    self.make_room(now, guard)?;
                    // Relaxed: as above.
                    len = self.len.load(Ordering::Relaxed);
                    continue;
                }
                // Release on success: a creator that sees the count full (Acquire, in
                // `insert_new`) then finds our pending entry, inserted before this. Relaxed on
                // failure: we only retry.
                match self.len.compare_exchange_weak(
                    len,
                    len + 1,
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return Ok(()),
                    Err(current) => len = current,
                }
            }
        }

        /// The refusal for a new key while the table is full (`len` places counted) and the last
        /// sweep, having found too few idle keys, deferred the next one to a time after `now`.
        fn deferred(&self, len: u64, now: u64) -> Option<Denied> {
            if len < self.capacity {
                return None;
            }
            // Relaxed: a time hint, as in `make_room`.
            let next = self.sweep.load(Ordering::Relaxed);
            (next != SWEEPING && now < next).then(|| Denied::after_nanos(next - now))
        }

        /// The table is full: sweep it (one thread at a time), or deny.
        #[cold]
        fn make_room(&self, now: u64, guard: &impl papaya::Guard) -> Result<(), Denied> {
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
            let (freed, next) = self.sweep_at(now, guard);
            // Relaxed: see above.
            self.sweep.store(next, Ordering::Relaxed);
            // Relaxed: as in `reserve_place`: places given back during the sweep are room too.
            if freed > 0 || self.len.load(Ordering::Relaxed) < self.capacity {
                Ok(())
            } else {
                Err(Denied::after_nanos(next.saturating_sub(now).max(1)))
            }
        }

        /// One sweep: evicts every idle key, then applies the [`WhenFull`] policy if fewer than an
        /// eighth of the capacity went. Returns the keys freed and the earliest next sweep time.
        #[cold]
        fn sweep_at(&self, now: u64, guard: &impl papaya::Guard) -> (u64, u64) {
            let target = (self.capacity / 8).max(1);
            // Relaxed: the floor must be raised before any state is retired at `now`; the retire
            // CAS (Release) publishes it to whoever sees the tombstone.
            self.floor.fetch_max(now, Ordering::Relaxed);
            let mut freed = 0;
            let mut busy: Vec<u64> = Vec::new();
            for (key, slot) in self.map.iter(guard) {
                let cfg = slot.cfg.as_deref().unwrap_or(&self.cfg);
                if L::retire(cfg, &slot.state, now, Retire::IfIdle).is_some() {
                    self.remove_evicted(key, guard);
                    freed += 1;
                } else {
                    // Pending, moving and evicted states (u64::MAX) do not go idle by waiting.
                    match L::idle_at(cfg, &slot.state) {
                        u64::MAX => {}
                        at => busy.push(at),
                    }
                }
            }
            if freed >= target {
                return (freed, 0);
            }
            // Too few idle keys: the time by which `target − freed` more will be idle.
            let need = (target - freed) as usize;
            let when = if busy.len() >= need {
                *busy.select_nth_unstable(need - 1).1
            } else {
                busy.iter().copied().max().unwrap_or(now)
            };
            match self.when_full {
                WhenFull::DenyNewKeys => (freed, when.max(now)),
                WhenFull::EvictSoonestIdle => {
                    for (key, slot) in self.map.iter(guard) {
                        if freed >= target {
                            break;
                        }
                        let cfg = slot.cfg.as_deref().unwrap_or(&self.cfg);
                        if L::idle_at(cfg, &slot.state) <= when
                            && L::retire(cfg, &slot.state, now, Retire::Force).is_some()
                        {
                            self.remove_evicted(key, guard);
                            freed += 1;
                        }
                    }
                    (freed, 0)
                }
            }
        }

        /// Gives `key` its own rate from now on (a premium user, a throttled abuser), replacing
        /// any earlier override; the other keys keep the default.
        ///
        /// What happens to the key's existing state: it is carried over. For GCRA the TAT (the
        /// time at which the key is fully rested) is kept: grants already made are neither
        /// refunded nor charged again, and every request from now on is judged with the new
        /// interval and burst (burst = the new rate's `limit`). For a sliding log the newest
        /// `limit` (new limit) grant times move into the new ring and keep counting until they
        /// leave the new window. For a sliding window the permits still counted move into the
        /// new window bucket by bucket, each recorded at its old bucket's last instant (or at the
        /// newest call's time, if earlier), the newest new-`limit` of them. The override outlives
        /// evictions of the key; at most [`capacity`](Keyed::capacity) keys have one at a time
        /// (remove one with [`clear_rate`](Keyed::clear_rate)).
        ///
        /// Concurrent requests on this key wait for the entry's replacement (one map store); other
        /// keys are unaffected.
        ///
        /// # Errors
        ///
        /// [`ConfigError`] as the inner limiter's builder for `rate`, or naming `overrides` when
        /// `capacity` other keys already have one (the key is left unchanged either way).
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
            let cfg = Arc::new(L::rerate(&self.cfg, rate)?);
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
        pub fn clear_rate(&self, key: &K)
        where
            C: Clock,
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
        fn sync_override(&self, key: &K, now: u64) {
            let guard = self.map.guard();
            let backoff = Backoff::new();
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
                        // Relaxed: see `insert_new`.
                        let floor = self.floor.load(Ordering::Relaxed);
                        let state = L::carried(want.as_deref().unwrap_or(&self.cfg), carry, floor);
                        // Nobody else replaces or removes a MOVING entry: this store is ours.
                        self.map
                            .insert(key.clone(), Slot { state, cfg: want }, &guard);
                    }
                    None if L::is_evicted(&slot.state) => self.remove_evicted(key, &guard),
                    // Another rate change is moving it: look again after it.
                    None => backoff.snooze_or_spin(),
                }
            }
        }

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
            let guard = self.map.guard();
            // Relaxed: as in `sweep_at`.
            self.floor.fetch_max(now, Ordering::Relaxed);
            let mut freed = 0;
            for (key, slot) in self.map.iter(&guard) {
                let cfg = slot.cfg.as_deref().unwrap_or(&self.cfg);
                if L::retire(cfg, &slot.state, now, Retire::IfIdle).is_some() {
                    self.remove_evicted(key, &guard);
                    freed += 1;
                }
            }
            freed
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

    impl<K: Hash + Eq + Clone, L: KeyedState, C: Clock> Keyed<K, L, C> {
        /// Take one permit for `key` now.
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
        /// assert!(per_user.try_acquire(&"alice".to_string()).is_ok());
        /// # Ok::<(), hotlimit::ConfigError>(())
        /// ```
        #[inline]
        pub fn try_acquire(&self, key: &K) -> Result<(), Denied> {
            self.try_acquire_n_at(key, 1, self.clock.now())
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
        pub fn try_acquire_n(&self, key: &K, permits: u32) -> Result<(), Denied> {
            self.try_acquire_n_at(key, permits, self.clock.now())
        }
    }

    impl<K> Keyed<K, SlidingWindow> {
        /// A builder for per-key strict [`SlidingWindow`] limits at `rate`: each key gets the
        /// window's hard cap (at most `limit` in every window of `period`, a false denial only if
        /// `limit` were granted within `period` + one bucket width), in memory independent of
        /// `limit`: the window's ring of `buckets + 1` 8-byte counters plus its header (about
        /// 900 bytes per key with 10 buckets, measured: see `examples/keyed_compare.rs`).
        /// Admissions pass a per-key gate word (two RMWs), as with
        /// [`sliding_log`](Keyed::sliding_log). 10 buckets (see
        /// [`buckets`](KeyedBuilder::buckets)), capacity 100,000 keys,
        /// [`WhenFull::DenyNewKeys`], the default clock.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Keyed, ManualClock, Rate, SlidingWindow};
        ///
        /// let k: Keyed<u32, SlidingWindow, ManualClock> =
        ///     Keyed::sliding_window(Rate::per_second(2)?).clock(ManualClock::new()).build()?;
        /// assert!(k.try_acquire_n_at(&1, 2, 0).is_ok());
        /// // The bucket [0, 100 ms) is counted whole until the window stops touching it.
        /// let d = k.try_acquire_at(&1, 500_000_000).unwrap_err();
        /// assert_eq!(d.retry_after_nanos(), Some(599_999_999));
        /// assert!(k.try_acquire_at(&2, 0).is_ok()); // every key has its own window
        /// # Ok::<(), hotlimit::ConfigError>(())
        /// ```
        pub fn sliding_window(rate: Rate) -> KeyedBuilder<K, SlidingWindow, DefaultClock> {
            KeyedBuilder {
                rate,
                burst: None,
                capacity: DEFAULT_CAPACITY,
                when_full: WhenFull::DenyNewKeys,
                clock: DefaultClock::default(),
                _marker: core::marker::PhantomData,
            }
        }
    }

    impl<K, C> KeyedBuilder<K, SlidingWindow, C> {
        /// Every key's bucket count (see
        /// [`SlidingWindowBuilder::buckets`](crate::SlidingWindowBuilder::buckets)). Default: 10.
        /// Rate overrides and [`set_default_rate`](Keyed::set_default_rate) keep it.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Keyed, ManualClock, Rate, SlidingWindow};
        ///
        /// let k: Keyed<u8, SlidingWindow, ManualClock> =
        ///     Keyed::sliding_window(Rate::per_second(1)?)
        ///     .buckets(4)
        ///     .clock(ManualClock::new())
        ///     .build()?;
        /// assert!(k.try_acquire_at(&1, 0).is_ok());
        /// // 250 ms buckets: the grant at 0 is counted until 1.25 s − 1 ns.
        /// let d = k.try_acquire_at(&1, 0).unwrap_err();
        /// assert_eq!(d.retry_after_nanos(), Some(1_249_999_999));
        /// # Ok::<(), hotlimit::ConfigError>(())
        /// ```
        pub fn buckets(mut self, buckets: usize) -> Self {
            // The one per-algorithm knob (GCRA's burst) carries the bucket count here.
            self.burst = Some(buckets as u64);
            self
        }
    }

    impl<K: Hash + Eq + Clone, L: KeyedState, C> Keyed<K, L, C> {
        /// The configuration a state for `key` should run on: its override, else the default.
        fn rate_of(&self, key: &K) -> Option<Arc<L::Config>> {
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
        /// carries it: for GCRA the TAT is kept (grants already made are neither refunded nor
        /// charged again; burst becomes the new rate's `limit`); for a sliding log the newest
        /// `limit` (new limit) grant times move into the new ring; for a sliding window the
        /// permits still counted move into the new window, bucket by bucket, each counted as if
        /// granted at its old bucket's last instant (never earlier than it was granted), the
        /// newest new-`limit` of them. So no key over-admits at the switch: every request after
        /// it is judged by the new rate's guarantee with the grants made before it counted (see
        /// the [`guide`](crate::guide#rate-overrides-and-rate-changes)).
        ///
        /// Cost: O(`len()`) map operations, on the calling thread. A request on a key being moved
        /// waits for its move (one map store); keys are moved one at a time, so for a moment some
        /// keys run on the new rate and some on the old.
        ///
        /// # Errors
        ///
        /// [`ConfigError`] as the inner limiter's builder for `rate` (nothing is changed).
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
            let now = self.clock.now();
            self.default.pin().insert((), cfg);
            // AcqRel: see `sync_override`.
            self.rates.fetch_add(1, Ordering::AcqRel);
            let guard = self.map.guard();
            for (key, _) in self.map.iter(&guard) {
                self.sync_override(key, now);
            }
            Ok(())
        }
    }

    impl<K, L: KeyedState, C> fmt::Debug for Keyed<K, L, C> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("Keyed")
                .field("config", &self.cfg)
                .field("capacity", &self.capacity)
                // Relaxed: a snapshot for display.
                .field("len", &self.len.load(Ordering::Relaxed))
                .field("when_full", &self.when_full)
                .finish_non_exhaustive()
        }
    }

    // Read-back per key (headers, dashboards) and the `Decide` seam.
    impl<K: Hash + Eq + Clone, L: super::KeyedRead, C> Keyed<K, L, C> {
        /// `(remaining, reset ns, rate)` of `key` at `now`: its live state's, or a fresh
        /// state's under the configuration a new state would get.
        fn read_key(&self, key: &K, now: u64) -> (u64, u64, Rate) {
            let map = self.map.pin();
            if let Some(slot) = map.get(key) {
                let cfg = slot.cfg.as_deref().unwrap_or(&self.cfg);
                if let Some((remaining, reset)) = L::read(cfg, &slot.state, now) {
                    return (remaining, reset, L::rate(cfg));
                }
            }
            let cfg = self.rate_of(key);
            let cfg = cfg.as_deref().unwrap_or(&self.cfg);
            (L::burst(cfg), 0, L::rate(cfg))
        }

        /// How many permits `key` could take at `now` (a snapshot; an absent or idle key has
        /// its whole burst). Reads only: nothing is created.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
        ///
        /// let k: Keyed<&str, Gcra, ManualClock> =
        ///     Keyed::gcra(Rate::per_second(10)?).clock(ManualClock::new()).build()?;
        /// k.try_acquire_n_at(&"alice", 4, 0)?;
        /// assert_eq!(k.remaining_at(&"alice", 0), 6);
        /// assert_eq!(k.remaining_at(&"bob", 0), 10);
        /// assert_eq!(k.len(), 1);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn remaining_at(&self, key: &K, now: u64) -> u64 {
            self.read_key(key, now).0
        }

        /// How long until `key` is full again (its whole burst or limit available) if nothing
        /// more is granted to it; zero for an absent or idle key. Reads only.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Keyed, ManualClock, Rate, SlidingLog};
        /// use std::time::Duration;
        ///
        /// let k: Keyed<u32, SlidingLog, ManualClock> =
        ///     Keyed::sliding_log(Rate::per_second(2)?).clock(ManualClock::new()).build()?;
        /// k.try_acquire_at(&1, 200_000_000)?;
        /// assert_eq!(k.reset_at(&1, 500_000_000), Duration::from_millis(700));
        /// assert_eq!(k.reset_at(&2, 500_000_000), Duration::ZERO);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn reset_at(&self, key: &K, now: u64) -> core::time::Duration {
            core::time::Duration::from_nanos(self.read_key(key, now).1)
        }

        /// The rate `key` runs on: its [`set_rate`](Keyed::set_rate) override, else the
        /// default (after [`set_default_rate`](Keyed::set_default_rate), the new one).
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
        ///
        /// let k: Keyed<&str, Gcra, ManualClock> =
        ///     Keyed::gcra(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
        /// k.set_rate("premium", Rate::per_second(100)?)?;
        /// assert_eq!(k.key_rate(&"premium"), Rate::per_second(100)?);
        /// assert_eq!(k.key_rate(&"free"), Rate::per_second(1)?);
        /// # Ok::<(), hotlimit::ConfigError>(())
        /// ```
        pub fn key_rate(&self, key: &K) -> Rate {
            let cfg = self.rate_of(key);
            L::rate(cfg.as_deref().unwrap_or(&self.cfg))
        }

        /// The burst `key` runs on (for GCRA its burst, for a log or window its `limit`): the
        /// most permits it can take at once.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
        ///
        /// let k: Keyed<&str, Gcra, ManualClock> =
        ///     Keyed::gcra(Rate::per_second(10)?).burst(3).clock(ManualClock::new()).build()?;
        /// k.set_rate("premium", Rate::per_second(100)?)?;
        /// assert_eq!(k.key_burst(&"free"), 3);
        /// assert_eq!(k.key_burst(&"premium"), 100);
        /// # Ok::<(), hotlimit::ConfigError>(())
        /// ```
        pub fn key_burst(&self, key: &K) -> u64 {
            let cfg = self.rate_of(key);
            L::burst(cfg.as_deref().unwrap_or(&self.cfg))
        }

        /// The rate keys without an override run on (the latest
        /// [`set_default_rate`](Keyed::set_default_rate), else the built one).
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
        ///
        /// let k: Keyed<&str, Gcra, ManualClock> =
        ///     Keyed::gcra(Rate::per_second(3)?).clock(ManualClock::new()).build()?;
        /// k.set_default_rate(Rate::per_second(100)?)?;
        /// assert_eq!(k.default_rate(), Rate::per_second(100)?);
        /// # Ok::<(), hotlimit::ConfigError>(())
        /// ```
        pub fn default_rate(&self) -> Rate {
            let cfg = self.default.get(&(), &self.default.guard()).cloned();
            L::rate(cfg.as_deref().unwrap_or(&self.cfg))
        }

        /// The burst of keys without an override (see [`key_burst`](Keyed::key_burst)).
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
        ///
        /// let k: Keyed<&str, Gcra, ManualClock> =
        ///     Keyed::gcra(Rate::per_second(3)?).burst(2).clock(ManualClock::new()).build()?;
        /// assert_eq!(k.default_burst(), 2);
        /// # Ok::<(), hotlimit::ConfigError>(())
        /// ```
        pub fn default_burst(&self) -> u64 {
            let cfg = self.default.get(&(), &self.default.guard()).cloned();
            L::burst(cfg.as_deref().unwrap_or(&self.cfg))
        }
    }

    impl<K: Hash + Eq + Clone, L: super::KeyedRead, C: Clock> Keyed<K, L, C> {
        /// How many permits `key` could take now: [`remaining_at`](Keyed::remaining_at) with
        /// the clock read.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
        /// let k: Keyed<u64, Gcra, ManualClock> =
        ///     Keyed::gcra(Rate::per_second(3)?).clock(ManualClock::new()).build()?;
        /// k.try_acquire(&1)?;
        /// assert_eq!(k.remaining(&1), 2);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn remaining(&self, key: &K) -> u64 {
            self.remaining_at(key, self.clock.now())
        }

        /// How long until `key` is full again: [`reset_at`](Keyed::reset_at) with the clock
        /// read.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
        /// use std::time::Duration;
        /// let k: Keyed<u64, Gcra, ManualClock> =
        ///     Keyed::gcra(Rate::per_second(4)?).clock(ManualClock::new()).build()?;
        /// k.try_acquire(&1)?;
        /// assert_eq!(k.reset(&1), Duration::from_millis(250));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn reset(&self, key: &K) -> core::time::Duration {
            self.reset_at(key, self.clock.now())
        }
    }

    /// A per-key decision with what HTTP headers need: the quota is the key's rate (its
    /// override, else the default) as `limit` per `period`; `remaining` and `reset` are the
    /// key's, read right after. A new key refused for want of room is denied with
    /// [`DenialReason::TableFull`](crate::DenialReason::TableFull).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Decide, Gcra, Keyed, ManualClock, Rate};
    /// use std::future::Future;
    /// use std::task::{Context, Poll, Waker};
    ///
    /// let k: Keyed<String, Gcra, ManualClock> =
    ///     Keyed::gcra(Rate::per_second(5)?).clock(ManualClock::new()).build()?;
    /// let mut fut = std::pin::pin!(k.decide(&"alice".to_string(), 2));
    /// let Poll::Ready(Ok(d)) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
    ///     unreachable!()
    /// };
    /// assert_eq!((d.is_allowed(), d.remaining(), d.quota().limit()), (true, 3, 5));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    impl<K, L, C> crate::decide::Decide for Keyed<K, L, C>
    where
        K: Hash + Eq + Clone + Send + Sync,
        L: super::KeyedRead,
        C: Clock,
    {
        type Key = K;
        type Error = core::convert::Infallible;
        type Future = crate::decide::Ready;

        fn decide(&self, key: &K, permits: u32) -> Self::Future {
            let now = self.clock.now();
            // An existing, live key: decide and read back under one lookup (the common case
            // of an HTTP layer). Anything else takes the full path, then reads.
            if permits > 0 {
                let map = self.map.pin();
                if let Some(slot) = map.get(key) {
                    let cfg = slot.cfg.as_deref().unwrap_or(&self.cfg);
                    let outcome = match L::acquire(cfg, &slot.state, permits, now) {
                        Admit::Granted => Some(Ok(())),
                        Admit::Denied(denied) => Some(Err(denied)),
                        Admit::Evicted | Admit::Moving => None,
                    };
                    if let Some(outcome) = outcome {
                        if let Some((remaining, reset)) = L::read(cfg, &slot.state, now) {
                            return crate::decide::ready(
                                crate::decide::quota_of(L::rate(cfg)),
                                outcome,
                                remaining,
                                core::time::Duration::from_nanos(reset),
                            );
                        }
                        // Retired right after the decision: read it as the key reads now.
                        let (remaining, reset, rate) = self.read_key(key, now);
                        return crate::decide::ready(
                            crate::decide::quota_of(rate),
                            outcome,
                            remaining,
                            core::time::Duration::from_nanos(reset),
                        );
                    }
                }
            }
            let outcome = self.try_acquire_n_at(key, permits, now);
            let (remaining, reset, rate) = self.read_key(key, now);
            crate::decide::ready(
                crate::decide::quota_of(rate),
                outcome,
                remaining,
                core::time::Duration::from_nanos(reset),
            )
        }

        fn quota(&self) -> crate::decide::Quota {
            crate::decide::quota_of(self.default_rate())
        }
    }
}

/// Extension of the facade's backoff: under loom, yield (the thread we wait for must run).
trait SnoozeOrSpin {
    fn snooze_or_spin(&self);
}

impl SnoozeOrSpin for Backoff {
    #[inline]
    fn snooze_or_spin(&self) {
        #[cfg(not(hotlimit_loom))]
        self.snooze();
        #[cfg(hotlimit_loom)]
        self.spin();
    }
}

/// The per-key state protocol for the loom models, with the map abstracted away: the real
/// GCRA state word and its real `acquire` / `retire`, and a planted evictor that must fail its
/// model. Compiled only under `--cfg hotlimit_loom`; not part of the API.
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub mod planted {
    use super::*;

    /// One key's GCRA state and its configuration, as a `Keyed` entry holds them.
    #[derive(Debug)]
    pub struct GcraKey {
        cfg: GcraConfig,
        state: GcraState,
    }

    /// What an admission saw.
    pub use super::Admit;

    impl GcraKey {
        /// A new key's state as its creator inserts it: pending until [`commit`](GcraKey::commit).
        pub fn pending(rate: Rate, floor: u64) -> Self {
            let cfg = <Gcra as KeyedState>::config(rate, None).expect("valid rate");
            let state = <Gcra as KeyedState>::pending(&cfg, floor);
            GcraKey { cfg, state }
        }

        /// The creator's commit once its place is reserved.
        pub fn commit(&self, floor: u64) {
            <Gcra as KeyedState>::commit(&self.state, floor);
        }

        /// Whether the state is still pending.
        pub fn is_pending(&self) -> bool {
            <Gcra as KeyedState>::is_pending(&self.state)
        }

        /// A fresh state for `rate` (burst = limit) with floor `floor`, made as `Keyed` makes
        /// one: pending, then committed.
        pub fn new(rate: Rate, floor: u64) -> Self {
            let cfg = <Gcra as KeyedState>::config(rate, None).expect("valid rate");
            let state = <Gcra as KeyedState>::pending(&cfg, floor);
            <Gcra as KeyedState>::commit(&state, floor);
            GcraKey { cfg, state }
        }

        /// The real admission on the state word.
        pub fn acquire_at(&self, now: u64) -> Admit {
            <Gcra as KeyedState>::acquire(&self.cfg, &self.state, 1, now)
        }

        /// The real eviction: CAS an idle state to the tombstone; true if the caller may now
        /// remove the entry.
        pub fn evict_at(&self, now: u64) -> bool {
            <Gcra as KeyedState>::retire(&self.cfg, &self.state, now, Retire::IfIdle).is_some()
        }

        /// The planted bug: checks idleness with a load and lets the caller remove the entry
        /// without retiring the state word, so an admitter holding the old state can still
        /// grant on it after a fresh state replaced it.
        pub fn evict_racy_at(&self, now: u64) -> bool {
            // Relaxed: deliberately broken; the missing tombstone CAS is the bug.
            self.state.0.load(Ordering::Relaxed) <= now
        }
    }

    /// One key's sliding log behind its gate, as a `Keyed<_, SlidingLog>` entry holds it.
    #[derive(Debug)]
    pub struct LogKey {
        cfg: LogConfig,
        state: LogState,
    }

    impl LogKey {
        /// A new key's state as its creator inserts it: pending until [`commit`](LogKey::commit).
        pub fn pending(rate: Rate, floor: u64) -> Self {
            let cfg = <SlidingLog as KeyedState>::config(rate, None).expect("valid rate");
            let state = <SlidingLog as KeyedState>::pending(&cfg, floor);
            LogKey { cfg, state }
        }

        /// The creator's commit once its place is reserved.
        pub fn commit(&self, floor: u64) {
            <SlidingLog as KeyedState>::commit(&self.state, floor);
        }

        /// Whether the state is still pending.
        pub fn is_pending(&self) -> bool {
            <SlidingLog as KeyedState>::is_pending(&self.state)
        }

        /// A fresh log for `rate` with floor `floor` (pending, then committed, as in `Keyed`).
        pub fn new(rate: Rate, floor: u64) -> Self {
            let cfg = <SlidingLog as KeyedState>::config(rate, None).expect("valid rate");
            let state = <SlidingLog as KeyedState>::pending(&cfg, floor);
            <SlidingLog as KeyedState>::commit(&state, floor);
            LogKey { cfg, state }
        }

        /// The real admission through the gate.
        pub fn acquire_at(&self, now: u64) -> Admit {
            <SlidingLog as KeyedState>::acquire(&self.cfg, &self.state, 1, now)
        }

        /// The real eviction: close the gate, wait out the admitters, check idleness, retire.
        pub fn evict_at(&self, now: u64) -> bool {
            <SlidingLog as KeyedState>::retire(&self.cfg, &self.state, now, Retire::IfIdle)
                .is_some()
        }

        /// The planted bug: checks idleness with loads only, without closing the gate.
        pub fn evict_racy_at(&self, now: u64) -> bool {
            self.state
                .log
                .stamps()
                .all(|s| log_end(&self.cfg, s) <= now)
        }
    }

    /// One key's strict sliding window behind its gate, as a `Keyed<_, SlidingWindow>` entry
    /// holds it (one bucket: the smallest ring).
    #[derive(Debug)]
    pub struct WindowKey {
        cfg: WindowConfig,
        state: WindowState,
    }

    impl WindowKey {
        /// A new key's state as its creator inserts it: pending until [`commit`](WindowKey::commit).
        pub fn pending(rate: Rate, floor: u64) -> Self {
            let cfg = <SlidingWindow as KeyedState>::config(rate, Some(1)).expect("valid rate");
            let state = <SlidingWindow as KeyedState>::pending(&cfg, floor);
            WindowKey { cfg, state }
        }

        /// The creator's commit once its place is reserved.
        pub fn commit(&self, floor: u64) {
            <SlidingWindow as KeyedState>::commit(&self.state, floor);
        }

        /// Whether the state is still pending.
        pub fn is_pending(&self) -> bool {
            <SlidingWindow as KeyedState>::is_pending(&self.state)
        }

        /// A fresh one-bucket window for `rate` with floor `floor` (pending, then committed).
        pub fn new(rate: Rate, floor: u64) -> Self {
            let cfg = <SlidingWindow as KeyedState>::config(rate, Some(1)).expect("valid rate");
            let state = <SlidingWindow as KeyedState>::pending(&cfg, floor);
            <SlidingWindow as KeyedState>::commit(&state, floor);
            WindowKey { cfg, state }
        }

        /// The real admission through the gate.
        pub fn acquire_at(&self, now: u64) -> Admit {
            <SlidingWindow as KeyedState>::acquire(&self.cfg, &self.state, 1, now)
        }

        /// The real eviction: close the gate, wait out the admitters, check idleness, retire.
        pub fn evict_at(&self, now: u64) -> bool {
            <SlidingWindow as KeyedState>::retire(&self.cfg, &self.state, now, Retire::IfIdle)
                .is_some()
        }

        /// The planted bug: checks idleness from the buckets with loads only, without closing
        /// the gate, so a grant decided but not yet recorded in its bucket (or not yet made) is
        /// missed and lands on a state the caller then removes.
        pub fn evict_racy_at(&self, now: u64) -> bool {
            window_idle_at(&self.cfg, &self.state.window) <= now
        }

        /// The real rate change (to the same rate): freeze the state behind its gate and build
        /// its successor from what it counted. `None` if another move or an eviction got there
        /// first.
        pub fn move_at(&self, now: u64) -> Option<WindowKey> {
            let carry =
                <SlidingWindow as KeyedState>::retire(&self.cfg, &self.state, now, Retire::Move)?;
            Some(self.successor(carry))
        }

        /// The planted bug: a rate change that reads the counted buckets without closing the
        /// gate and without freezing the state, so a grant made on the old state after the
        /// read is in neither state's count.
        pub fn move_racy_at(&self, _now: u64) -> Option<WindowKey> {
            let carry = self.state.window.counted().collect();
            Some(self.successor(carry))
        }

        fn successor(&self, carry: Vec<(u64, u64)>) -> WindowKey {
            let cfg =
                <SlidingWindow as KeyedState>::config(self.cfg.rate, Some(1)).expect("valid rate");
            let state = <SlidingWindow as KeyedState>::carried(&cfg, carry, self.state.floor);
            WindowKey { cfg, state }
        }
    }
}

/// The read-back half of [`KeyedState`]: what a key's state reports (permits left, time until
/// full) and what its configuration says (rate, burst). Implemented for the same three
/// algorithms ([`Gcra`], [`SlidingLog`], [`SlidingWindow`]); its methods are the crate's
/// internal protocol. It is what [`Keyed::remaining_at`](crate::Keyed::remaining_at),
/// [`Keyed::reset_at`](crate::Keyed::reset_at), the per-key rate getters and `Keyed`'s
/// [`Decide`](crate::Decide) need.
///
/// # Examples
///
/// ```
/// use hotlimit::{Keyed, KeyedRead};
///
/// fn left<L: KeyedRead>(k: &Keyed<u64, L>, user: u64) -> u64 {
///     k.remaining(&user)
/// }
/// let users = Keyed::<u64, hotlimit::Gcra>::gcra(hotlimit::Rate::per_second(5)?).build()?;
/// assert_eq!(left(&users, 1), 5);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
pub trait KeyedRead: KeyedState {
    /// The rate of a configuration.
    #[doc(hidden)]
    fn rate(cfg: &Self::Config) -> Rate;
    /// The most permits a state under `cfg` grants at once.
    #[doc(hidden)]
    fn burst(cfg: &Self::Config) -> u64;
    /// `(remaining, reset ns)` of a live state at `now`; `None` if it is retired or pending
    /// (the key then reads as absent). Reads only.
    #[doc(hidden)]
    fn read(cfg: &Self::Config, state: &Self::State, now: u64) -> Option<(u64, u64)>;
}

impl KeyedRead for Gcra {
    fn rate(cfg: &GcraConfig) -> Rate {
        cfg.rate
    }

    fn burst(cfg: &GcraConfig) -> u64 {
        cfg.burst
    }

    fn read(cfg: &GcraConfig, state: &GcraState, now: u64) -> Option<(u64, u64)> {
        // Relaxed: a snapshot of the key's one state word.
        let tat = state.0.load(Ordering::Relaxed);
        if tat >= GCRA_PENDING {
            return None;
        }
        let ahead = tat.saturating_sub(now);
        Some((cfg.tolerance.saturating_sub(ahead) / cfg.interval, ahead))
    }
}

impl KeyedRead for SlidingLog {
    fn rate(cfg: &LogConfig) -> Rate {
        cfg.rate
    }

    fn burst(cfg: &LogConfig) -> u64 {
        cfg.limit
    }

    fn read(_: &LogConfig, state: &LogState, now: u64) -> Option<(u64, u64)> {
        // Relaxed: a snapshot; the slots are read without entering the gate (a reader changes
        // nothing, so it need not hold off an evictor).
        if state.gate.load(Ordering::Relaxed) & (LOG_EVICTED | LOG_MOVING | LOG_PENDING) != 0 {
            return None;
        }
        let judged = now.max(state.floor);
        let reset = state.log.reset_at(now).as_nanos();
        Some((
            state.log.remaining_at(judged),
            u64::try_from(reset).unwrap_or(u64::MAX),
        ))
    }
}

impl KeyedRead for SlidingWindow {
    fn rate(cfg: &WindowConfig) -> Rate {
        cfg.rate
    }

    fn burst(cfg: &WindowConfig) -> u64 {
        cfg.rate.limit()
    }

    fn read(_: &WindowConfig, state: &WindowState, now: u64) -> Option<(u64, u64)> {
        // Relaxed: as for the log.
        if state.gate.load(Ordering::Relaxed) & (LOG_EVICTED | LOG_MOVING | LOG_PENDING) != 0 {
            return None;
        }
        let judged = now.max(state.floor);
        let (remaining, reset) = state.window.read_at(judged);
        Some((remaining, reset.saturating_add(judged - now)))
    }
}
