//! The per-key strict sliding window of [`Keyed`](crate::Keyed), behind the same gate as the
//! per-key log.

use alloc::vec::Vec;

use super::gate::{gate_retire, gated_acquire, gated_idle_at, gated_state_methods, LOG_PENDING};
use super::{Admit, KeyedState, Retire};
use crate::error::ConfigError;
use crate::rate::Rate;
use crate::sliding_window::SlidingWindow;
use crate::sync::{AtomicU64, Ordering};

pub(super) use window_state::{WindowConfig, WindowState};

mod window_state {
    #![allow(unreachable_pub)]
    use super::*;
    use crate::key_pool::Unclocked;
    use crate::sliding_window::SlidingWindowBuilder;

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
        /// `{ closing: 1, evicted: 1, moving: 1, pending: 1, active: 60 }`.
        pub(crate) gate: AtomicU64,
        /// The `Keyed`'s floor when the state went live: a request whose `now` is below it is
        /// denied until it (see `below_floor`). Written once, before the state is live.
        pub(crate) floor: AtomicU64,
        /// The highest time any call brought in (≥ every grant's effective time): a rate change
        /// re-records carried permits no later than this.
        pub(crate) newest: AtomicU64,
        /// Permits `(t, k)` a lower limit left out of the window that may still count
        /// (ascending in t, none newer than the window's): under the lower limit they change
        /// no decision (the window is full while they count), but the next change carries
        /// them again, so a raise back frees none of them (issue 43). Written once.
        pub(crate) earlier: alloc::boxed::Box<[(u64, u64)]>,
        pub(crate) window: crate::sliding_window::KeyWindow,
    }
}

/// The time from which a per-key window counts none of its permits (0: none counted now).
pub(super) fn window_idle_at(cfg: &WindowConfig, window: &crate::sliding_window::KeyWindow) -> u64 {
    window
        .counted()
        .map(|(t, _)| t.saturating_add(cfg.period))
        .max()
        .unwrap_or(0)
}

/// A per-key window under `cfg` holding the newest `limit` of the `carried` permits
/// (`(t, k)`, ascending in t), each re-recorded at its t. `gate`: the gate's first value (0:
/// live).
pub(super) fn new_window(
    cfg: &WindowConfig,
    carried: &[(u64, u64)],
    floor: u64,
    gate: u64,
) -> WindowState {
    let window = match crate::sliding_window::KeyWindow::new(&cfg.builder) {
        Ok(w) => w,
        // `config` built this very builder once, and a build depends on nothing else.
        Err(e) => unreachable!("validated per-key window: {e}"),
    };
    // The newest permits first, up to the limit; then replayed oldest first. Each replay is
    // granted: the window holds at most what was replayed before it, ≤ limit in all. The
    // rest, while it may still count (its window ends after the newest carried time, at or
    // before which no later call is counted), is kept beside the window.
    let mut room = cfg.rate.limit();
    let mut keep = Vec::new();
    let mut earlier = Vec::new();
    let newest = carried.last().map_or(0, |&(t, _)| t);
    for &(t, k) in carried.iter().rev() {
        let kept = k.min(room);
        room -= kept;
        if kept > 0 {
            keep.push((t, kept));
        }
        if k > kept && t.saturating_add(cfg.period) > newest {
            earlier.push((t, k - kept));
        }
    }
    earlier.reverse();
    for &(t, k) in keep.iter().rev() {
        // k ≤ limit ≤ 2^31 − 1 (the window's own bound), so it fits a u32.
        let granted = window.try_acquire_n_at(k as u32, t);
        debug_assert!(granted.is_ok(), "a carried permit did not fit");
    }
    WindowState {
        gate: AtomicU64::new(gate),
        floor: AtomicU64::new(floor),
        // Replays were judged at their own times (ascending, so the window's floor never ran
        // ahead of them): the newest is the highest effective time so far.
        newest: AtomicU64::new(keep.first().map_or(0, |&(t, _)| t)),
        earlier: earlier.into(),
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
        gated_acquire(
            &state.gate,
            &state.floor,
            permits,
            cfg.rate.limit(),
            now,
            || {
                // Relaxed (both): a high-water mark read only by a closer, to which our
                // `gate_leave` (Release) publishes it. A grant's effective time is at most the
                // highest `now` any call brought (the window's floor start comes from one), so
                // every call raises it.
                if state.newest.load(Ordering::Relaxed) < now {
                    state.newest.fetch_max(now, Ordering::Relaxed);
                }
                state.window.try_acquire_n_at(permits, now)
            },
        )
    }

    fn idle_at(cfg: &WindowConfig, state: &WindowState) -> u64 {
        gated_idle_at(&state.gate, || window_idle_at(cfg, &state.window))
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
                    .chain(state.earlier.iter().copied())
                    .collect();
                carry.sort_unstable();
                carry
            },
        )
    }

    fn pending(cfg: &WindowConfig) -> WindowState {
        new_window(cfg, &[], 0, LOG_PENDING)
    }

    gated_state_methods!(WindowState);

    fn bytes_per_state(cfg: &WindowConfig) -> u128 {
        // The builder was validated when the configuration was made.
        let window = crate::sliding_window::KeyWindow::size_for(&cfg.builder).unwrap_or(0);
        (core::mem::size_of::<WindowState>()
            - core::mem::size_of::<crate::sliding_window::KeyWindow>()) as u128
            + window
    }

    super::word::no_word!();
}
