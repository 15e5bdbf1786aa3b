//! [`MultiWindow`] per key: each key's windows (rings and logs, as the unkeyed limiter's),
//! behind the same gate word as the per-key log and window (see [`gate`](super::gate)), so an
//! eviction waits for every call inside, give-backs included.
//!
//! The windows are fixed at build: per-key overrides and default-rate changes take one rate,
//! so they return an error (field `rate`), as for a `GcraPair`. No state is ever moved, so
//! nothing is carried but, for safety, the time the state goes idle: a state made from it
//! denies until then.

use super::gate::{gate_retire, gated_acquire, gated_idle_at, gated_state_methods};
use super::gate::{LOG_EVICTED, LOG_MOVING, LOG_PENDING};
use super::read::KeyedRead;
use super::word::WordOf;
use super::{Admit, KeyedState, Retire};
use crate::clock::NoClock;
use crate::error::ConfigError;
use crate::multi_window::windows::Windows;
use crate::multi_window::{MultiWindow, MultiWindowBuilder};
use crate::rate::Rate;
use crate::sync::{AtomicU64, Ordering};

pub(super) use state::{MultiConfig, MultiState};

mod state {
    #![allow(unreachable_pub)]
    use super::*;

    /// The windows every key gets (validated), and their smallest limit.
    #[derive(Debug)]
    pub struct MultiConfig {
        pub(crate) builder: MultiWindowBuilder<NoClock>,
        pub(crate) min_limit: u64,
    }

    /// One key's windows, behind a gate word with the per-key log's protocol.
    #[derive(Debug)]
    pub struct MultiState {
        /// `{ closing: 1, evicted: 1, moving: 1, pending: 1, active: 60 }`.
        pub(crate) gate: AtomicU64,
        /// The `Keyed`'s floor when the state went live (see `below_floor`); written once,
        /// before the state is live.
        pub(crate) floor: AtomicU64,
        pub(crate) windows: Windows,
    }
}

/// A state for `cfg` with the gate's first value `gate` (0: live) and `floor`.
fn new_state(cfg: &MultiConfig, floor: u64, gate: u64) -> MultiState {
    let windows = match cfg.builder.make_windows() {
        Ok(w) => w,
        // `config` built these very windows once, and a build depends on nothing else.
        Err(e) => unreachable!("validated per-key windows: {e}"),
    };
    MultiState {
        gate: AtomicU64::new(gate),
        floor: AtomicU64::new(floor),
        windows,
    }
}

impl KeyedState for MultiWindow {
    type Config = MultiConfig;
    type State = MultiState;
    /// The time the retired state went idle.
    type Carry = u64;

    /// Several windows need [`config_windows`](KeyedState::config_windows)
    /// (`Keyed::multi_window` passes them).
    fn config(rate: Rate, _: Option<u64>) -> Result<MultiConfig, ConfigError> {
        Err(ConfigError::new(
            "windows",
            rate.as_value(),
            "a MultiWindow per key needs its windows: build it with Keyed::multi_window",
        ))
    }

    fn config_windows(windows: &MultiWindowBuilder<NoClock>) -> Result<MultiConfig, ConfigError> {
        // The windows' own validation (same fields, same messages).
        windows.make_windows()?;
        Ok(MultiConfig {
            builder: windows.clone(),
            min_limit: windows.min_limit(),
        })
    }

    fn rerate(_: &MultiConfig, rate: Rate) -> Result<MultiConfig, ConfigError> {
        Err(ConfigError::new(
            "rate",
            rate.as_value(),
            "a MultiWindow key's windows cannot be changed at run time",
        ))
    }

    fn carried(cfg: &MultiConfig, idle_at: u64, floor: u64) -> MultiState {
        // Not reached (no rate change is accepted): a state that denies until the old one
        // would have gone idle can never over-admit.
        new_state(cfg, floor.max(idle_at), 0)
    }

    fn acquire(cfg: &MultiConfig, state: &MultiState, permits: u32, now: u64) -> Admit {
        gated_acquire(
            &state.gate,
            &state.floor,
            permits,
            cfg.min_limit,
            now,
            || state.windows.acquire(u64::from(permits), now),
        )
    }

    fn idle_at(_: &MultiConfig, state: &MultiState) -> u64 {
        gated_idle_at(&state.gate, || state.windows.idle_at())
    }

    fn retire(_: &MultiConfig, state: &MultiState, now: u64, how: Retire) -> Option<u64> {
        gate_retire(
            &state.gate,
            how,
            || state.windows.idle_at() <= now,
            || state.windows.idle_at(),
        )
    }

    fn pending(cfg: &MultiConfig) -> MultiState {
        new_state(cfg, 0, LOG_PENDING)
    }

    gated_state_methods!(MultiState);

    fn bytes_per_state(cfg: &MultiConfig) -> u128 {
        // The windows were validated when the configuration was made.
        let windows = cfg.builder.bytes().unwrap_or(0);
        (core::mem::size_of::<MultiState>() - core::mem::size_of::<Windows>()) as u128 + windows
    }

    super::word::no_word!();
}

/// Read-back per key: the fewest permits any window has left, and when every window is full
/// again; the quota of the first window (as the unkeyed [`MultiWindow`]'s `Decide::quota`).
impl KeyedRead for MultiWindow {
    fn read_word(_: &MultiConfig, w: WordOf<Self>, _: u64) -> (u64, u64) {
        match w {}
    }

    fn rate(cfg: &MultiConfig) -> Rate {
        cfg.builder.first_rate()
    }

    fn burst(cfg: &MultiConfig) -> u64 {
        cfg.min_limit
    }

    fn quota(cfg: &MultiConfig) -> crate::decide::Quota {
        cfg.builder.first_quota()
    }

    fn read(_: &MultiConfig, state: &MultiState, now: u64) -> Option<(u64, u64)> {
        // Relaxed: a snapshot for headers, as for the per-key log and window.
        if state.gate.load(Ordering::Relaxed) & (LOG_EVICTED | LOG_MOVING | LOG_PENDING) != 0 {
            return None;
        }
        // Relaxed: written once before the state went live.
        let floor = state.floor.load(Ordering::Relaxed);
        let judged = now.max(floor);
        let (remaining, reset) = state.windows.read_at(judged);
        // Below the floor every request is denied until the floor (see `below_floor`).
        let remaining = if now < floor { 0 } else { remaining };
        Some((remaining, reset.saturating_add(judged - now)))
    }
}
