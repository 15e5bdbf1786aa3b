//! The per-key GCRA state of [`Keyed`](crate::Keyed): one TAT word, retired by a CAS to a
//! tombstone (see the parent module's eviction protocol).

use super::{Admit, KeyedState, Retire};
use crate::clock::ManualClock;
use crate::error::{ConfigError, Denied};
use crate::gcra::Gcra;
use crate::rate::Rate;
use crate::sync::{AtomicU64, Backoff, Ordering};

/// GCRA's per-key state word: `{ tat: S }` for a live state (S ≤ [`GCRA_MAX_TAT`]), or one of
/// the two terminal tombstones.
pub(super) const GCRA_EVICTED: u64 = u64::MAX;
/// The state word of a GCRA state frozen by a rate change.
pub(super) const GCRA_MOVING: u64 = u64::MAX - 1;
/// The state word of a new key's GCRA state whose creator has not reserved its place yet.
pub(super) const GCRA_PENDING: u64 = u64::MAX - 2;
/// The largest TAT a grant may store: the top three values are the markers, so the last 3 ns
/// of the clock's range are unusable (a grant that would reach them is denied as "never").
pub(super) const GCRA_MAX_TAT: u64 = u64::MAX - 3;

pub(super) use state::{GcraConfig, GcraState};

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

    fn pending(_: &GcraConfig) -> GcraState {
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

    fn bytes_per_state(_: &GcraConfig) -> u128 {
        core::mem::size_of::<GcraState>() as u128
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
