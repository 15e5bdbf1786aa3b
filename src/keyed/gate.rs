//! The gate word in front of a per-key log or window: admitters count themselves in and out,
//! an evictor or a rate change closes it, waits for the admitters inside, and marks it
//! terminal; a new key's state is pending behind it until its creator commits it.
//!
//! `{ closing: 1, evicted: 1, moving: 1, pending: 1, active: 60 }`

use super::{Admit, Retire};
use crate::contention::Contention;
use crate::error::Denied;
use crate::sync::{AtomicU64, Ordering};

/// Gate flag: an evictor or a rate change is deciding; admitters wait (look the key up again).
pub(super) const LOG_CLOSING: u64 = 1 << 63;
/// Gate flag, terminal: the log was evicted.
pub(super) const LOG_EVICTED: u64 = 1 << 62;
/// Gate flag, terminal: the log was frozen for a rate change.
pub(super) const LOG_MOVING: u64 = 1 << 61;
/// Gate flag: a new key's state whose creator has not reserved its place yet (cleared once,
/// by the creator; admitters look again, closers leave it alone).
pub(super) const LOG_PENDING: u64 = 1 << 60;
/// The gate's admitter count.
pub(super) const LOG_ACTIVE: u64 = LOG_PENDING - 1;

/// Closes the gate and waits for the admitters inside to leave. False if another closer or a
/// terminal flag got there first (the gate is left as it was).
pub(super) fn gate_close(gate: &AtomicU64) -> bool {
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
    let mut contention = Contention::new();
    // Acquire: see above.
    while gate.load(Ordering::Acquire) & LOG_ACTIVE != 0 {
        contention.snooze();
    }
    true
}

/// Enters a per-key gate (`LogState::gate`, `WindowState::gate`): `Ok` if the caller is now
/// counted inside (it must call [`gate_leave`]), else what to tell the admitter.
#[inline]
fn gate_enter(gate: &AtomicU64) -> Result<(), Admit> {
    // Relaxed: a look before announcing ourselves, so that admitters bouncing off a closed
    // gate do not keep its count above 0 while the closer waits for it to drain.
    let mut g = gate.load(Ordering::Relaxed);
    if g & !LOG_ACTIVE == 0 {
        // Acquire: announces us to a closer, which waits for the count to drop; the flags we
        // read decide whether we may enter, and reading the pending flag cleared (by the
        // creator's Release RMW, or a later RMW in its release sequence) makes the floor it
        // stored before visible to `below_floor`.
        g = gate.fetch_add(1, Ordering::Acquire);
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

/// Makes a pending gate live with `floor` (the creator's one write to each).
pub(super) fn gate_commit(gate: &AtomicU64, floor_of_state: &AtomicU64, floor: u64) {
    // Relaxed: published by the Release RMW below.
    floor_of_state.store(floor, Ordering::Relaxed);
    // Release: publishes the floor to every admitter that enters (its Acquire increment reads
    // this RMW or a later one). An RMW so that bounced admitters' counts are kept.
    gate.fetch_and(!LOG_PENDING, Ordering::Release);
}

/// The refusal of a request whose `now` is below a gated state's floor: a log or window
/// evicted at the floor may still have held permits at `now` (its grants left the window by
/// the floor, not by `now`), so a fresh state must not grant at `now` what it would have
/// denied. Denied until the floor; the caller is inside the gate (or the state is not shared).
#[inline]
fn below_floor(floor: &AtomicU64, now: u64) -> Option<Denied> {
    // Relaxed: written once before the state went live, made visible by `gate_enter`'s Acquire.
    let floor = floor.load(Ordering::Relaxed);
    (now < floor).then(|| Denied::after_nanos(floor - now))
}

/// Whether a gate was closed for good by an eviction.
pub(super) fn gate_is_evicted(gate: &AtomicU64) -> bool {
    // Relaxed: the flag is terminal; a stale read only delays the removal.
    gate.load(Ordering::Relaxed) & LOG_EVICTED != 0
}

/// Whether a gate is still pending.
pub(super) fn gate_is_pending(gate: &AtomicU64) -> bool {
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

/// Admits `permits` on a gated state (a per-key log or window) whose limit is `limit`: a
/// request above the limit is never granted; otherwise enters the gate, denies a `now` below
/// the state's floor, runs `decide` inside (the state's own admission at `now`), and leaves.
#[inline]
pub(super) fn gated_acquire(
    gate: &AtomicU64,
    floor: &AtomicU64,
    permits: u32,
    limit: u64,
    now: u64,
    decide: impl FnOnce() -> Result<(), Denied>,
) -> Admit {
    if u64::from(permits) > limit {
        return Admit::Denied(Denied::never());
    }
    if let Err(admit) = gate_enter(gate) {
        return admit;
    }
    if let Some(denied) = below_floor(floor, now) {
        gate_leave(gate);
        return Admit::Denied(denied);
    }
    let result = decide();
    gate_leave(gate);
    match result {
        Ok(()) => Admit::Granted,
        Err(denied) => Admit::Denied(denied),
    }
}

/// A gated state's `idle_at`: `u64::MAX` for a state out of the sweep's ranking (evicted,
/// frozen for a rate change, or pending), else `idle()`, the time its contents go idle.
pub(super) fn gated_idle_at(gate: &AtomicU64, idle: impl FnOnce() -> u64) -> u64 {
    // Relaxed: a snapshot to rank eviction candidates; `retire` decides under the gate.
    if gate.load(Ordering::Relaxed) & (LOG_EVICTED | LOG_MOVING | LOG_PENDING) != 0 {
        return u64::MAX;
    }
    idle()
}

/// Retires a gated state: if `idle` (checked again once the gate is closed and empty) or
/// `how` is not `IfIdle`, marks the gate terminal and returns `take()`, the state's contents.
pub(super) fn gate_retire<T>(
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

/// The [`KeyedState`](super::KeyedState) methods every gated state shares, for a state type
/// with `gate` and `floor` fields: whether it was evicted, its commit, whether it is pending.
macro_rules! gated_state_methods {
    ($state:ty) => {
        fn is_evicted(state: &$state) -> bool {
            $crate::keyed::gate::gate_is_evicted(&state.gate)
        }

        fn commit(state: &$state, floor: u64) {
            $crate::keyed::gate::gate_commit(&state.gate, &state.floor, floor);
        }

        fn is_pending(state: &$state) -> bool {
            $crate::keyed::gate::gate_is_pending(&state.gate)
        }
    };
}
pub(super) use gated_state_methods;
