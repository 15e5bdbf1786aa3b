//! [`MultiWindow`] per key: each key's windows (rings and logs, as the unkeyed limiter's),
//! behind the same gate word as the per-key log and window (see [`gate`](super::gate)), so an
//! eviction waits for every call inside, give-backs included.
//!
//! The windows are fixed at build: per-key overrides and default-rate changes take one rate,
//! so they return an error (field `rate`), as for a `GcraPair`. No state is ever moved, so
//! nothing is carried but, for safety, the time the state goes idle: a state made from it
//! denies until then.

use core::borrow::Borrow;
use core::hash::Hash;
use core::time::Duration;

use super::gate::{gate_retire, gated_acquire, gated_idle_at, gated_state_methods};
use super::gate::{LOG_EVICTED, LOG_MOVING, LOG_PENDING};
use super::map::Keyed;
use super::read::KeyedRead;
use super::word::WordOf;
use super::{Admit, KeyedState, Retire};
use crate::clock::Clock;
use crate::clock::NoClock;
use crate::decide::{state, Decision, Quota};
use crate::error::ConfigError;
use crate::error::{DenialReason, Denied};
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

/// One window of a key, read at a time: `(remaining, reset ns, the denial a request would get)`.
type WindowRead = (u64, u64, Option<Denied>);

/// Each window of a key, for the HTTP layer's one field per window.
impl<K: Hash + Eq + Clone + 'static, C> Keyed<K, MultiWindow, C> {
    /// Each window's quota, in the order the windows were added (see
    /// [`Quota`](crate::Quota): a ring's `limit` per `period` plus one bucket width, a log's
    /// `limit` per `period`).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Keyed, ManualClock, MultiWindow, Quota, Rate};
    /// use std::time::Duration;
    ///
    /// // Two logs of 2,100 stamps a key: 100,000 keys (the default) would pass the default
    /// // 1 GiB memory budget, so this table holds 1,000.
    /// let k: Keyed<u32, MultiWindow, ManualClock> = Keyed::multi_window(
    ///     MultiWindow::builder().exact(Rate::per_minute(100)?).exact(Rate::per_hour(2_000)?),
    /// )
    /// .capacity(1_000)
    /// .clock(ManualClock::new())
    /// .build()?;
    /// assert_eq!(k.quotas()[1], Quota::new(2_000, Duration::from_secs(3_600)));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn quotas(&self) -> Vec<Quota> {
        self.cfg.builder.quotas()
    }

    /// Each window of `key` at `now`, and the denial a request for `n` (≥ 1; 0: none) would
    /// get from it alone: its live state, or a fresh one (the windows are never changed per
    /// key).
    fn read_each<Q>(&self, key: &Q, n: u64, now: u64) -> Vec<WindowRead>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let map = self.map.pin();
        if let Some(slot) = map.get(key) {
            let state = &slot.state;
            // Relaxed: a snapshot, as every read-back.
            let gate = state.gate.load(Ordering::Relaxed);
            if gate & (LOG_EVICTED | LOG_MOVING | LOG_PENDING) == 0 {
                // Relaxed: written once before the state went live.
                let floor = state.floor.load(Ordering::Relaxed);
                let judged = now.max(floor);
                let behind = judged - now;
                return state
                    .windows
                    .each()
                    .map(|(w, h)| {
                        let (r, t) = w.read_at(h, judged);
                        let r = if now < floor { 0 } else { r };
                        let wait = (n > 0)
                            .then(|| w.wait_for(h, n, judged))
                            .flatten()
                            .map(|d| later_by(d, behind))
                            .or_else(|| (behind > 0).then(|| Denied::after_nanos(behind)));
                        (r, t.saturating_add(behind), wait)
                    })
                    .collect();
            }
        }
        // A fresh key: full, but nothing granted below the `Keyed`'s floor.
        // Relaxed: a snapshot, as every read-back.
        let floor = self.floor.load(Ordering::Relaxed);
        self.cfg
            .builder
            .quotas()
            .iter()
            .map(|q| {
                let limit = q.limit();
                if n > limit {
                    (limit, 0, Some(Denied::never()))
                } else if now < floor {
                    (0, floor - now, Some(Denied::after_nanos(floor - now)))
                } else {
                    (limit, 0, None)
                }
            })
            .collect()
    }

    /// What `key` has in each window at `now`, charging nothing: one zero-permit decision per
    /// window (see [`Decide::peek`](crate::Decide::peek)).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Keyed, ManualClock, MultiWindow, Rate};
    ///
    /// let k: Keyed<u32, MultiWindow, ManualClock> = Keyed::multi_window(
    ///     MultiWindow::builder().exact(Rate::per_second(10)?).exact(Rate::per_hour(1_000)?),
    /// )
    /// .clock(ManualClock::new())
    /// .build()?;
    /// k.try_acquire_n_at(&7, 4, 0)?;
    /// let each = k.peek_each_at(&7, 0);
    /// assert_eq!((each[0].remaining(), each[1].remaining()), (6, 996));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek_each_at<Q>(&self, key: &Q, now: u64) -> Vec<Decision>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let quotas = self.quotas();
        self.read_each(key, 0, now)
            .into_iter()
            .zip(quotas)
            .map(|((r, t, _), q)| state(q, r, Duration::from_nanos(t), Duration::from_nanos(t)))
            .collect()
    }

    /// Decides `permits` under `key` at `now` in every window at once (all or nothing, as
    /// [`try_acquire_n_at`](Keyed::try_acquire_n_at)), and reports each window. The request
    /// was admitted iff every decision is allowed; refused, a window that alone would refuse
    /// reports a denial with its own wait, the others an allowed decision for zero permits
    /// (their state, uncharged: the refusal charged none). A key refused for want of room
    /// reports every window refused, nothing remaining.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Keyed, ManualClock, MultiWindow, Rate};
    /// use std::time::Duration;
    ///
    /// let k: Keyed<u32, MultiWindow, ManualClock> = Keyed::multi_window(
    ///     MultiWindow::builder().exact(Rate::per_second(2)?).exact(Rate::per_minute(3)?),
    /// )
    /// .clock(ManualClock::new())
    /// .build()?;
    /// let each = k.decide_each_at(&1, 2, 0);
    /// assert_eq!((each[0].remaining(), each[1].remaining()), (0, 1));
    /// let each = k.decide_each_at(&1, 2, 1_000_000_000);
    /// assert!(each[0].is_allowed()); // this window alone would admit: its state, uncharged
    /// assert_eq!(each[0].remaining(), 2);
    /// assert_eq!(each[1].denial().unwrap().retry_after(), Some(Duration::from_secs(59)));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn decide_each_at(&self, key: &K, permits: u32, now: u64) -> Vec<Decision> {
        let outcome = self.try_acquire_n_at(key, permits, now);
        let n = u64::from(permits);
        let quotas = self.quotas();
        let reads = self.read_each(key, if outcome.is_ok() { 0 } else { n }, now);
        let mut each: Vec<Decision> = reads
            .into_iter()
            .zip(quotas.iter().copied())
            .map(|((r, t, wait), q)| {
                let (reset, next) = (Duration::from_nanos(t), Duration::from_nanos(t));
                match outcome {
                    Ok(()) => state(q, r, reset, next),
                    Err(d) if d.reason() == DenialReason::TableFull => {
                        let wait = d.retry_after().unwrap_or(reset);
                        Decision::denied(q, d, 0, wait)
                    }
                    Err(_) => match wait {
                        Some(w) => {
                            let next = w.retry_after().map_or(next, |x| next.min(x));
                            Decision::denied(q, w, r, reset).with_next(next)
                        }
                        None => state(q, r, reset, next),
                    },
                }
            })
            .collect();
        // A refused request always has a refusing window (the read-back, at the same `now`,
        // can only show more taken); should it not, the limiter's own denial stands for the
        // first window.
        if let (Err(d), true, Some(first)) = (
            outcome,
            each.iter().all(Decision::is_allowed),
            each.first().copied(),
        ) {
            each[0] = Decision::denied(quotas[0], d, first.remaining(), first.reset())
                .with_next(first.next());
        }
        each
    }
}

impl<K: Hash + Eq + Clone + 'static, C: Clock> Keyed<K, MultiWindow, C> {
    /// [`decide_each_at`](Keyed::decide_each_at) with the clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Keyed, ManualClock, MultiWindow, Rate};
    ///
    /// let k: Keyed<u32, MultiWindow, ManualClock> =
    ///     Keyed::multi_window(MultiWindow::builder().exact(Rate::per_second(2)?))
    ///         .clock(ManualClock::new())
    ///         .build()?;
    /// assert!(k.decide_each(&1, 1)[0].is_allowed());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn decide_each(&self, key: &K, permits: u32) -> Vec<Decision> {
        self.decide_each_at(key, permits, self.clock.now())
    }

    /// [`peek_each_at`](Keyed::peek_each_at) with the clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Keyed, ManualClock, MultiWindow, Rate};
    ///
    /// let k: Keyed<u32, MultiWindow, ManualClock> =
    ///     Keyed::multi_window(MultiWindow::builder().exact(Rate::per_second(2)?))
    ///         .clock(ManualClock::new())
    ///         .build()?;
    /// assert_eq!(k.peek_each(&1)[0].remaining(), 2);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn peek_each<Q>(&self, key: &Q) -> Vec<Decision>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.peek_each_at(key, self.clock.now())
    }
}

/// `d` pushed back by `by` ns (a request judged at a floor `by` ns after its `now`).
fn later_by(d: Denied, by: u64) -> Denied {
    match d.retry_after_nanos() {
        Some(w) => Denied::after_nanos(w.saturating_add(by)),
        None => Denied::never(),
    }
}
