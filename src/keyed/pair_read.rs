//! What a [`Keyed`] of [`GcraPair`]s reports for each of its two rates: each rate's quota, and
//! for a request decided on both at once (all or nothing), each rate's decision: what the
//! HTTP layer needs to name both limits in its headers while deciding them as one.

use core::borrow::Borrow;
use core::hash::Hash;
use core::time::Duration;

use super::gcra::GCRA_PENDING;
use super::map::Keyed;
use super::word::{inline, TatWord};
use crate::clock::Clock;
use crate::decide::{gcra_next, gcra_quota, state, Decision, Quota};
use crate::error::{DenialReason, Denied};
use crate::gcra::Params;
use crate::gcra_pair::{split, GcraPair};
use crate::sync::Ordering;

/// One rate's read-back of a key at some `now`: how far its TAT is ahead.
#[derive(Clone, Copy)]
struct Rate1 {
    params: Params,
    ahead: u64,
}

impl Rate1 {
    fn remaining(&self) -> u64 {
        self.params.tolerance.saturating_sub(self.ahead) / self.params.interval
    }

    /// The state as a zero-permit decision under `quota`.
    fn state(&self, quota: Quota) -> Decision {
        let r = self.remaining();
        let next = gcra_next(r, self.params.burst, self.ahead, self.params.interval);
        state(quota, r, Duration::from_nanos(self.ahead), next)
    }

    /// Whether this rate alone would refuse `n` permits, and then its exact wait.
    fn refusal(&self, n: u64) -> Option<Denied> {
        if n > self.params.burst {
            return Some(Denied::never());
        }
        let cost = n * self.params.interval;
        let wait = (self.ahead + cost).saturating_sub(self.params.tolerance);
        (wait > 0).then(|| Denied::after_nanos(wait))
    }
}

impl<K: Hash + Eq + Clone + 'static, C> Keyed<K, GcraPair, C> {
    /// Each rate's quota: its burst per the time it takes to refill (see
    /// [`Quota`](crate::Quota)).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, Keyed, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let k: Keyed<u32, GcraPair, ManualClock> =
    ///     Keyed::gcra_pair(Rate::per_second(10)?, Rate::per_hour(1_000)?)
    ///         .clock(ManualClock::new())
    ///         .build()?;
    /// let [second, hour] = k.quotas();
    /// assert_eq!((second.limit(), second.window()), (10, Duration::from_secs(1)));
    /// assert_eq!((hour.limit(), hour.window()), (1_000, Duration::from_secs(3_600)));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn quotas(&self) -> [Quota; 2] {
        let (a, b) = self.cfg.rates;
        [
            gcra_quota(a, self.cfg.first.burst),
            gcra_quota(b, self.cfg.second.burst),
        ]
    }

    /// Both rates of `key` at `now`: its live state, or a fresh one (a pair's rates are never
    /// changed per key, so the configuration is the `Keyed`'s).
    fn read_each<Q>(&self, key: &Q, now: u64) -> [Rate1; 2]
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (p1, p2) = (self.cfg.first, self.cfg.second);
        let each = |a1: u64, a2: u64| {
            [
                Rate1 {
                    params: p1,
                    ahead: a1,
                },
                Rate1 {
                    params: p2,
                    ahead: a2,
                },
            ]
        };
        // The common case: the key's state inline in the table, its times after the table's
        // base (a `now` before the base waits the difference too).
        if let Some((w, rel, behind)) = self.inline_word(key, now) {
            let (first, s2) = split(w);
            let ahead = |tat: u64| match tat.saturating_sub(rel) {
                0 => 0,
                a => a.saturating_add(behind),
            };
            return each(ahead(inline::tat(first)), ahead(s2));
        }
        // Relaxed: a snapshot, as every read-back.
        let floor = self.floor.load(Ordering::Relaxed);
        let map = self.map.pin();
        let (s1, s2) = match map.get(key) {
            // Relaxed: a snapshot of the key's one state word.
            Some(slot) => match split(TatWord::load(&slot.state.0, Ordering::Relaxed)) {
                // A marker (pending, moving, evicted): the key reads as a fresh one.
                (s1, _) if s1 >= GCRA_PENDING => (floor, floor),
                live => live,
            },
            None => (floor, floor),
        };
        each(s1.saturating_sub(now), s2.saturating_sub(now))
    }

    /// What `key` has on each rate at `now`, charging nothing: two zero-permit decisions (see
    /// [`Decide::peek`](crate::Decide::peek)).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, Keyed, ManualClock, Rate};
    ///
    /// let k: Keyed<u32, GcraPair, ManualClock> =
    ///     Keyed::gcra_pair(Rate::per_second(10)?, Rate::per_hour(1_000)?)
    ///         .clock(ManualClock::new())
    ///         .build()?;
    /// k.try_acquire_n_at(&7, 4, 0)?;
    /// let [second, hour] = k.peek_each_at(&7, 0);
    /// assert_eq!((second.remaining(), hour.remaining()), (6, 996));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek_each_at<Q>(&self, key: &Q, now: u64) -> [Decision; 2]
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let [a, b] = self.read_each(key, now);
        let [qa, qb] = self.quotas();
        [a.state(qa), b.state(qb)]
    }

    /// Decides `permits` under `key` at `now` on both rates at once (all or nothing, as
    /// [`try_acquire_n_at`](Keyed::try_acquire_n_at)), and reports each rate. The request was
    /// admitted iff both decisions are allowed (then both rates were charged); refused, a rate
    /// that alone would refuse reports a denial with its own exact wait, the other an allowed
    /// decision for zero permits (its state, uncharged). A key refused for want of room
    /// reports both refused, nothing remaining.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, Keyed, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// // 2 per second and 3 per minute.
    /// let k: Keyed<u32, GcraPair, ManualClock> =
    ///     Keyed::gcra_pair(Rate::per_second(2)?, Rate::per_minute(3)?)
    ///         .clock(ManualClock::new())
    ///         .build()?;
    /// let [s, m] = k.decide_each_at(&1, 2, 0);
    /// assert!(s.is_allowed() && m.is_allowed());
    /// assert_eq!((s.remaining(), m.remaining()), (0, 1));
    /// // One second later the per-second rate has room again; the minute has 1 left.
    /// let [s, m] = k.decide_each_at(&1, 2, 1_000_000_000);
    /// assert!(s.is_allowed()); // this rate alone would admit: its state, uncharged
    /// assert_eq!(m.denial().unwrap().retry_after(), Some(Duration::from_secs(19)));
    /// assert_eq!(k.peek_each_at(&1, 1_000_000_000)[0].remaining(), 2);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn decide_each_at(&self, key: &K, permits: u32, now: u64) -> [Decision; 2] {
        let outcome = self.try_acquire_n_at(key, permits, now);
        let rates = self.read_each(key, now);
        let [qa, qb] = self.quotas();
        let each = |r: &Rate1, q: Quota| -> Decision {
            let s = r.state(q);
            match outcome {
                Ok(()) => s,
                Err(d) if d.reason() == DenialReason::TableFull => {
                    let wait = d.retry_after().unwrap_or(s.reset());
                    Decision::denied(q, d, 0, wait)
                }
                Err(_) => match r.refusal(u64::from(permits)) {
                    Some(d) => {
                        let next = d.retry_after().map_or(s.next(), |w| s.next().min(w));
                        Decision::denied(q, d, s.remaining(), s.reset()).with_next(next)
                    }
                    None => s,
                },
            }
        };
        let mut both = [each(&rates[0], qa), each(&rates[1], qb)];
        // A refused request always has a refusing rate (the read-back, at the same `now`, can
        // only show more taken); should it not, the pair's own denial stands for the first.
        if let (Err(d), true) = (outcome, both.iter().all(Decision::is_allowed)) {
            let s = both[0];
            both[0] = Decision::denied(qa, d, s.remaining(), s.reset()).with_next(s.next());
        }
        both
    }
}

impl<K: Hash + Eq + Clone + 'static, C: Clock> Keyed<K, GcraPair, C> {
    /// [`decide_each_at`](Keyed::decide_each_at) with the clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, Keyed, ManualClock, Rate};
    ///
    /// let k: Keyed<&str, GcraPair, ManualClock> =
    ///     Keyed::gcra_pair(Rate::per_second(10)?, Rate::per_hour(1_000)?)
    ///         .clock(ManualClock::new())
    ///         .build()?;
    /// let [second, hour] = k.decide_each(&"alice", 1);
    /// assert_eq!((second.remaining(), hour.remaining()), (9, 999));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn decide_each(&self, key: &K, permits: u32) -> [Decision; 2] {
        self.decide_each_at(key, permits, self.clock.now())
    }

    /// [`peek_each_at`](Keyed::peek_each_at) with the clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, Keyed, ManualClock, Rate};
    ///
    /// let k: Keyed<&str, GcraPair, ManualClock> =
    ///     Keyed::gcra_pair(Rate::per_second(10)?, Rate::per_hour(1_000)?)
    ///         .clock(ManualClock::new())
    ///         .build()?;
    /// assert_eq!(k.peek_each(&"alice")[1].remaining(), 1_000);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn peek_each<Q>(&self, key: &Q) -> [Decision; 2]
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.peek_each_at(key, self.clock.now())
    }
}
