//! The per-key exact sliding log of [`Keyed`](crate::Keyed): a ring of `limit` stamps behind a
//! gate word (see [`gate`](super::gate)).

use alloc::vec::Vec;
use core::fmt;

use super::gate::{gate_retire, gated_acquire, gated_idle_at, gated_state_methods, LOG_PENDING};
use super::{Admit, KeyedState, Retire};
use crate::error::ConfigError;
use crate::rate::Rate;
use crate::sliding_log::SlidingLog;
use crate::sync::AtomicU64;

pub(super) use state::{LogConfig, LogState};

mod state {
    #![allow(unreachable_pub)]
    use super::*;

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
        /// `{ closing: 1, evicted: 1, moving: 1, pending: 1, active: 60 }`: the flags, and the
        /// number of admitters inside the log.
        pub(crate) gate: AtomicU64,
        /// The `Keyed`'s floor when the state went live: a request whose `now` is below it is
        /// denied until it (see `below_floor`). Written once, before the state is live.
        pub(crate) floor: AtomicU64,
        /// The newest carried grant (0 for a new key): a request below it records at it ("no
        /// time has passed"), as the unkeyed log does with its own newest stamp.
        pub(crate) start: u64,
        pub(crate) log: SlidingLog<(), super::Unpadded>,
    }
}

/// A per-key log whose ring holds the newest `limit` of `stamps` (ascending) after
/// never-used slots, in the order its cursor visits them (see [`SlidingLog::preload`]): index
/// 0, where the cursor starts, is the oldest; the older stamps that may still count are kept
/// beside the ring and carried by the next change (a lower limit and a raise back free
/// nothing: issue 43). `gate`: the gate's first value (0: live).
pub(super) fn new_log(cfg: &LogConfig, stamps: &[u64], floor: u64, gate: u64) -> LogState {
    let len = cfg.limit as usize;
    let slots = (0..len).map(|_| AtomicU64::new(0)).collect();
    let mut log = SlidingLog::from_parts(slots, cfg.rate, ());
    let newest = log.load_stamps(stamps);
    // A request below the newest carried grant records at it ("no time has passed").
    let newest = newest.saturating_sub(1);
    LogState {
        gate: AtomicU64::new(gate),
        floor: AtomicU64::new(floor),
        start: newest,
        log,
    }
}

/// The end of the window of a grant with this stamp: it counts at `t` iff `t < end`.
pub(super) fn log_end(cfg: &LogConfig, stamp: u64) -> u64 {
    if stamp == 0 {
        0
    } else {
        (stamp - 1).saturating_add(cfg.period)
    }
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
        gated_acquire(&state.gate, &state.floor, permits, cfg.limit, now, || {
            state.log.try_acquire_n_at(permits, now.max(state.start))
        })
    }

    fn idle_at(cfg: &LogConfig, state: &LogState) -> u64 {
        gated_idle_at(&state.gate, || {
            state
                .log
                .stamps()
                .map(|s| log_end(cfg, s))
                .max()
                .unwrap_or(0)
        })
    }

    fn retire(cfg: &LogConfig, state: &LogState, now: u64, how: Retire) -> Option<Vec<u64>> {
        gate_retire(
            &state.gate,
            how,
            || state.log.stamps().all(|s| log_end(cfg, s) <= now),
            || state.log.all_stamps(),
        )
    }

    fn pending(cfg: &LogConfig) -> LogState {
        new_log(cfg, &[], 0, LOG_PENDING)
    }

    gated_state_methods!(LogState);

    fn bytes_per_state(cfg: &LogConfig) -> u128 {
        core::mem::size_of::<LogState>() as u128 + 8 * u128::from(cfg.limit)
    }

    super::word::no_word!();
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
