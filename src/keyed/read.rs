//! Read-back of [`Keyed`](crate::Keyed): what a key has left and when it is full again, its rate and burst,
//! and `Keyed`'s [`Decide`](crate::Decide) (what HTTP rate-limit headers need). Reads only: a
//! read never creates a key or enters a gate.

use super::gate::{LOG_EVICTED, LOG_MOVING, LOG_PENDING};
use super::gcra::{GcraConfig, GcraState, GCRA_PENDING};
use super::log::{LogConfig, LogState};
use super::window::{WindowConfig, WindowState};
use super::word::{inline, WordOf};
use super::KeyedState;
use crate::gcra::Gcra;
use crate::rate::Rate;
use crate::sliding_log::SlidingLog;
use crate::sliding_window::SlidingWindow;
use crate::sync::Ordering;

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
    /// `(remaining, reset ns)` at `now` of the state a new key would get, committed with
    /// `floor` (a GCRA word at TAT = floor; a log or window that denies below the floor).
    #[doc(hidden)]
    fn read_fresh(cfg: &Self::Config, floor: u64, now: u64) -> (u64, u64) {
        if now < floor {
            (0, floor - now)
        } else {
            (Self::burst(cfg), 0)
        }
    }
    /// The quota a state under `cfg` reports (see [`Quota`](crate::Quota)): its burst per the
    /// time a full burst takes to come back.
    #[doc(hidden)]
    fn quota(cfg: &Self::Config) -> crate::decide::Quota {
        crate::decide::quota_of(Self::rate(cfg))
    }
    /// ns until a state under `cfg` with `remaining` permits, full again in `reset` ns, holds
    /// one more (`reset` bounds it; zero when full).
    #[doc(hidden)]
    fn next(cfg: &Self::Config, remaining: u64, reset: u64) -> u64 {
        let _ = (cfg, remaining);
        reset
    }
    /// `(remaining, reset ns)` at `now` (after the table's base) of a live inline value.
    #[doc(hidden)]
    fn read_word(cfg: &Self::Config, w: WordOf<Self>, now: u64) -> (u64, u64);
}

impl KeyedRead for Gcra {
    fn rate(cfg: &GcraConfig) -> Rate {
        cfg.rate
    }

    fn burst(cfg: &GcraConfig) -> u64 {
        cfg.burst
    }

    fn read_fresh(cfg: &GcraConfig, floor: u64, now: u64) -> (u64, u64) {
        let ahead = floor.saturating_sub(now);
        (cfg.tolerance.saturating_sub(ahead) / cfg.interval, ahead)
    }

    fn quota(cfg: &GcraConfig) -> crate::decide::Quota {
        crate::decide::gcra_quota(cfg.rate, cfg.burst)
    }

    fn next(cfg: &GcraConfig, remaining: u64, reset: u64) -> u64 {
        let next = crate::decide::gcra_next(remaining, cfg.burst, reset, cfg.interval);
        u64::try_from(next.as_nanos()).unwrap_or(u64::MAX)
    }

    fn read_word(cfg: &GcraConfig, w: u64, now: u64) -> (u64, u64) {
        let ahead = inline::tat(w).saturating_sub(now);
        (cfg.tolerance.saturating_sub(ahead) / cfg.interval, ahead)
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
    fn read_word(_: &LogConfig, w: WordOf<Self>, _: u64) -> (u64, u64) {
        match w {}
    }

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
        // Relaxed: written once before the state went live (a stale 0 only reads as less
        // conservative for the instant after a commit).
        let floor = state.floor.load(Ordering::Relaxed);
        // Below the floor every request is denied until the floor (see `below_floor`).
        let (now, wait) = if now < floor {
            (floor, floor - now)
        } else {
            (now, 0)
        };
        let reset = u64::try_from(state.log.reset_at(now).as_nanos()).unwrap_or(u64::MAX);
        let remaining = if wait > 0 {
            0
        } else {
            state.log.remaining_at(now.max(state.start))
        };
        Some((remaining, reset.saturating_add(wait)))
    }
}

impl KeyedRead for SlidingWindow {
    fn read_word(_: &WindowConfig, w: WordOf<Self>, _: u64) -> (u64, u64) {
        match w {}
    }

    fn rate(cfg: &WindowConfig) -> Rate {
        cfg.rate
    }

    fn burst(cfg: &WindowConfig) -> u64 {
        cfg.rate.limit()
    }

    /// `limit` per `period` plus one bucket width, as [`SlidingWindow`]'s.
    fn quota(cfg: &WindowConfig) -> crate::decide::Quota {
        let width = core::time::Duration::from_nanos(cfg.builder.bucket_width_nanos());
        crate::decide::Quota::new(cfg.rate.limit(), cfg.rate.period() + width)
    }

    fn read(_: &WindowConfig, state: &WindowState, now: u64) -> Option<(u64, u64)> {
        // Relaxed: as for the log.
        if state.gate.load(Ordering::Relaxed) & (LOG_EVICTED | LOG_MOVING | LOG_PENDING) != 0 {
            return None;
        }
        // Relaxed: as for the log.
        let floor = state.floor.load(Ordering::Relaxed);
        let judged = now.max(floor);
        let (remaining, reset) = state.window.read_at(judged);
        // Below the floor every request is denied until the floor (see `below_floor`).
        let remaining = if now < floor { 0 } else { remaining };
        Some((remaining, reset.saturating_add(judged - now)))
    }
}

/// The read-back methods of [`Keyed`] itself (the map needs `std`).
#[cfg(feature = "std")]
pub(super) mod on_keyed {
    use core::borrow::Borrow;
    use core::hash::Hash;

    use super::super::map::Keyed;
    use super::KeyedRead;
    use crate::clock::Clock;
    use crate::keyed::Admit;
    use crate::rate::Rate;

    /// A key's read-back: what its decision reports.
    pub(in crate::keyed) struct KeyReading {
        pub(super) remaining: u64,
        pub(super) reset: u64,
        pub(super) next: u64,
        pub(super) quota: crate::decide::Quota,
    }

    impl KeyReading {
        /// The reading of a state under `cfg` with `(remaining, reset)`.
        #[inline]
        pub(in crate::keyed) fn of<L: KeyedRead>(
            cfg: &L::Config,
            remaining: u64,
            reset: u64,
        ) -> Self {
            KeyReading {
                remaining,
                reset,
                next: L::next(cfg, remaining, reset),
                quota: L::quota(cfg),
            }
        }

        /// As a decision with `outcome`.
        #[inline]
        pub(in crate::keyed) fn ready(
            self,
            outcome: Result<(), crate::error::Denied>,
        ) -> crate::decide::Ready {
            crate::decide::ready(
                self.quota,
                outcome,
                self.remaining,
                core::time::Duration::from_nanos(self.reset),
                core::time::Duration::from_nanos(self.next),
            )
        }
    }

    impl<K: Hash + Eq + Clone + 'static, L: KeyedRead, C> Keyed<K, L, C> {
        /// What `key` has at `now`: its live state's read-back, or a fresh state's under the
        /// configuration a new state would get.
        pub(in crate::keyed) fn read_key<Q>(&self, key: &Q, now: u64) -> KeyReading
        where
            K: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
            self.read_held(key, now)
                .unwrap_or_else(|| self.read_absent(key, now))
        }

        /// What `key` has at `now` if it holds a live state, else `None`.
        #[inline]
        fn read_held<Q>(&self, key: &Q, now: u64) -> Option<KeyReading>
        where
            K: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
            if let Some(read) = self.read_inline(key, now) {
                return Some(read);
            }
            let map = self.map.pin();
            let slot = map.get(key)?;
            let cfg = slot.cfg.as_deref().unwrap_or(&self.cfg);
            let (remaining, reset) = L::read(cfg, &slot.state, now)?;
            Some(KeyReading::of::<L>(cfg, remaining, reset))
        }

        /// What a fresh state for `key` would have.
        fn read_absent<Q>(&self, key: &Q, now: u64) -> KeyReading
        where
            K: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
            let cfg = self.rate_of(key);
            let cfg = cfg.as_deref().unwrap_or(&self.cfg);
            // Relaxed: a snapshot, as the read itself.
            let floor = self.floor.load(crate::sync::Ordering::Relaxed);
            let (remaining, reset) = L::read_fresh(cfg, floor, now);
            KeyReading::of::<L>(cfg, remaining, reset)
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
        pub fn remaining_at<Q>(&self, key: &Q, now: u64) -> u64
        where
            K: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
            self.read_key(key, now).remaining
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
        pub fn reset_at<Q>(&self, key: &Q, now: u64) -> core::time::Duration
        where
            K: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
            core::time::Duration::from_nanos(self.read_key(key, now).reset)
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
        pub fn key_rate<Q>(&self, key: &Q) -> Rate
        where
            K: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
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
        pub fn key_burst<Q>(&self, key: &Q) -> u64
        where
            K: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
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

    impl<K: Hash + Eq + Clone + 'static, L: super::KeyedRead, C: Clock> Keyed<K, L, C> {
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
        pub fn remaining<Q>(&self, key: &Q) -> u64
        where
            K: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
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
        pub fn reset<Q>(&self, key: &Q) -> core::time::Duration
        where
            K: Borrow<Q>,
            Q: Hash + Eq + ?Sized,
        {
            self.reset_at(key, self.clock.now())
        }
    }

    /// A per-key decision with what HTTP headers need: the quota is the key's (its override,
    /// else the default; see [`Quota`](crate::Quota): for GCRA the burst per its refill time);
    /// `remaining`, `reset` and `next` are the key's, read right after. A new key refused for
    /// want of room is denied with [`DenialReason::TableFull`](crate::DenialReason::TableFull),
    /// nothing remaining.
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
        K: Hash + Eq + Clone + Send + Sync + 'static,
        L: KeyedRead,
        C: Clock,
    {
        type Key = K;
        type Error = core::convert::Infallible;
        type Future = crate::decide::Ready;

        fn decide(&self, key: &K, permits: u32) -> Self::Future {
            let now = self.clock.now();
            // An existing, live key: decide and read back under one lookup (the common case
            // of an HTTP layer). Anything else takes the full path, then reads.
            if let Some((outcome, reading)) = self.table_decide(key, permits, now) {
                return reading.ready(outcome);
            }
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
                        let reading = match L::read(cfg, &slot.state, now) {
                            Some((remaining, reset)) => KeyReading::of::<L>(cfg, remaining, reset),
                            // Retired right after the decision: read it as the key reads now.
                            None => self.read_key(key, now),
                        };
                        return reading.ready(outcome);
                    }
                }
            }
            let outcome = self.try_acquire_n_at(key, permits, now);
            self.read_key(key, now).ready(outcome)
        }

        fn quota(&self) -> crate::decide::Quota {
            let cfg = self.default.get(&(), &self.default.guard()).cloned();
            L::quota(cfg.as_deref().unwrap_or(&self.cfg))
        }

        /// A key that holds no place while a new key would be refused for want of room
        /// reports nothing remaining until then, as the refusal would: a caller deciding
        /// several policies then sees the refusal before it charges any.
        fn peek(&self, key: &K) -> Option<crate::decide::Decision> {
            let now = self.clock.now();
            let r = match self.read_held(key, now) {
                Some(r) => r,
                None => {
                    let r = self.read_absent(key, now);
                    if let Some(wait) = self.no_room(now) {
                        let wait = core::time::Duration::from_nanos(wait);
                        return Some(crate::decide::state(r.quota, 0, wait, wait));
                    }
                    r
                }
            };
            Some(crate::decide::state(
                r.quota,
                r.remaining,
                core::time::Duration::from_nanos(r.reset),
                core::time::Duration::from_nanos(r.next),
            ))
        }
    }
}
