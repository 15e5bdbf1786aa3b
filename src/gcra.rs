//! [`Gcra`]: the generic cell rate algorithm, its whole state one CAS-updated `AtomicU64`.
//!
//! GCRA comes from ATM networks (ITU-T I.371, the "virtual scheduling" form). The state is the
//! theoretical arrival time (TAT) S: the time at which the limiter would be empty again if no
//! more requests came. With emission interval I and burst b, the tolerance is τ = b·I. A
//! request for n permits at `now` computes S' = max(S, now) + n·I and is allowed iff
//! S' ≤ now + τ; then S becomes S'. A denial leaves S unchanged and can succeed after
//! S' − (now + τ).
//!
//! Files: this one holds the state, the parameters and the admission (one algorithm, kept
//! whole); `gcra/builder.rs` the builder; `gcra/read.rs` the read-back with the clock read and
//! `Decide`; `gcra/change.rs` live rate and burst changes.

use core::{fmt, time::Duration};

use crate::clock::{Clock, DefaultClock};
use crate::contention::Contention;
use crate::error::Denied;
use crate::error::{ConfigError, Value};
use crate::rate::Rate;
use crate::sync::{AtomicU64, Ordering};

mod builder;
mod change;
mod read;
mod rule;

pub use builder::GcraBuilder;
pub use rule::GcraRule;

/// A smooth-rate limiter (GCRA, "leaky score"): one `AtomicU64` of state, one CAS per grant,
/// a single load per denial.
///
/// # Guarantee
///
/// With emission interval I = `period / limit` (rounded **up** to whole nanoseconds, so the
/// limiter never runs faster than the configured rate) and burst b (default: `limit`):
///
/// - **In any interval of length d, at most b + ⌊d / I⌋ permits are granted**, counting each
///   grant at the `now` its call used. This holds under any concurrency: the proof uses only
///   that grants are linearized by the CAS on one word (see the [`guide`](crate::guide)).
/// - Under constant overload the long-run average is `limit / period`.
/// - A request is never denied when it fits: the decision is exactly the GCRA definition on
///   the linearized sequence of calls, and `retry_after` is exact. Waiting exactly
///   `retry_after` and retrying the same request succeeds (if nobody else took the capacity
///   meanwhile).
///
/// **This is not "at most `limit` in any window of `period`".** With burst b = `limit`, a
/// caller can take `limit` permits at once and then one more every I, which puts up to
/// 2·`limit` − 1 grants inside one window of length `period`. If you need a hard cap per
/// window, use `SlidingWindow` (never over-admits) or `SlidingLog` (exact); GCRA is for
/// smoothing.
///
/// Time that goes backwards never frees permits: a `now` below the state is treated as "no
/// time has passed". A `now` so close to `u64::MAX` that S' would not fit is denied with
/// `retry_after() == None` (the clock's range, 584 years, is exhausted).
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, Limiter, ManualClock, Rate};
/// use std::time::Duration;
///
/// // 3 per minute: one every 20 s, bursts of 3.
/// let clock = ManualClock::new();
/// let limiter = Gcra::builder(Rate::per_minute(3)?).clock(clock.clone()).build()?;
/// for _ in 0..3 {
///     limiter.try_acquire()?;
/// }
/// clock.advance(Duration::from_secs(1));
/// let denied = limiter.try_acquire().unwrap_err();
/// assert_eq!(denied.retry_after(), Some(Duration::from_secs(19)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
// `--cfg hotlimit_layout="state_first"` (many-core A/B runs only, `benches/device.sh
// build-ab`): the fields in their written order, the state word first and the clock off its
// cache line (the guide's "Where the state word sits").
#[cfg_attr(hotlimit_layout = "state_first", repr(C))]
pub struct Gcra<C = DefaultClock> {
    /// The theoretical arrival time S, in nanoseconds on `clock`. 0 means "never used";
    /// [`FROZEN`] while a rate change holds it (see [`Gcra::set_rate_at`]).
    tat: AtomicU64,
    /// The emission interval I in nanoseconds, at least 1.
    ///
    /// This and the next three are the parameters. A rate change rewrites them while the TAT
    /// is frozen; a request reads them after the TAT (Acquire), so the TAT value its CAS
    /// expects was installed under the parameters it read (the guide proves it). On x86-64 a
    /// Relaxed load is the plain `mov` a non-atomic field would be: the grant path is
    /// unchanged.
    interval: AtomicU64,
    /// The tolerance τ = b·I in nanoseconds; fits in u64 by construction.
    tolerance: AtomicU64,
    /// τ − I: the slack of a one-permit request, precomputed for the hottest call (b ≥ 1, so
    /// it does not underflow).
    slack_one: AtomicU64,
    /// The burst b.
    burst: AtomicU64,
    /// The rate's `limit` and period (ns), for [`Gcra::rate`] only.
    limit: AtomicU64,
    period: AtomicU64,
    /// Twice the number of rate changes made, plus 1 while one is under way: changes take
    /// turns on it (a CAS from even to odd), and the getters read the parameters between two
    /// equal even values of it (a sequence lock, off every admission path).
    changes: AtomicU64,
    /// The highest TAT value a give-back (a cancelled reservation) ever moved the state down
    /// from: with the current TAT, the highest value the state word ever held, which a rate
    /// change must exceed (see [`Gcra::set_rate_at`]).
    high: AtomicU64,
    clock: C,
}

/// The TAT value that marks a rate change under way. A state can reach `u64::MAX` by itself
/// only at the end of the clock's range, where every request is denied anyway; `changes` being
/// odd tells the two apart.
pub(crate) const FROZEN: u64 = u64::MAX;

/// A GCRA's validated parameters: emission interval I, burst b and tolerance τ = b·I, all
/// in nanoseconds. Shared by every limiter built on GCRA, so they reject the same input with
/// the same errors.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Params {
    pub(crate) interval: u64,
    pub(crate) burst: u64,
    pub(crate) tolerance: u64,
}

/// The longest emission interval a GCRA accepts: 2^62 − 1 ns (146 years). A clock reading
/// below 2^62 ns can then always be charged one permit (now + I < 2^63), so a limiter never
/// exists that can admit nothing on its clock (issue 14: `Rate::new(1, u64::MAX ns)` was
/// accepted and every call was denied as never grantable).
pub(crate) const MAX_INTERVAL: u64 = (1 << 62) - 1;

impl Params {
    /// I = ⌈period / limit⌉ and b = `burst` or `limit`; errors name `rate` (I under 1 ns) or
    /// `burst` (0, or b·I overflowing u64).
    pub(crate) fn new(rate: Rate, burst: Option<u64>) -> Result<Params, ConfigError> {
        let (limit, period) = (rate.limit(), rate.period_nanos());
        if period < limit {
            return Err(ConfigError::new(
                "rate",
                rate.as_value(),
                "emission interval period/limit is under 1 ns",
            ));
        }
        let interval = period.div_ceil(limit);
        if interval > MAX_INTERVAL {
            return Err(ConfigError::new(
                "rate",
                rate.as_value(),
                "emission interval period/limit must be at most 2^62 ns (146 years): on a clock \
                 past that one permit's cost would overflow and nothing could ever be granted",
            ));
        }
        let burst = burst.unwrap_or(limit);
        if burst == 0 {
            return Err(ConfigError::new(
                "burst",
                Value::Count(0),
                "must be at least 1",
            ));
        }
        let Some(tolerance) = burst.checked_mul(interval) else {
            return Err(ConfigError::new(
                "burst",
                Value::Count(u128::from(burst)),
                "burst × emission interval overflows u64 nanoseconds",
            ));
        };
        Ok(Params {
            interval,
            burst,
            tolerance,
        })
    }
}

/// The price of `n` permits under interval I, burst b and tolerance τ = b·I: `(n·I, τ − n·I)`,
/// the `cost` and `slack` that [`decide`] takes, or `None` when n > b (never grantable). With
/// n ≤ b from one parameter set, n·I ≤ τ fits in u64 and the subtraction cannot underflow.
///
/// Wrapping arithmetic (the same instructions as the plain operators in release): a request
/// racing a rate change may read a mix of two parameter sets, for which n·I may exceed τ.
/// Nothing may panic on that; the result is garbage, and the caller's validation (the CAS on
/// the state word for a grant, [`Gcra::settled`] for a denial) throws it away: see the guide,
/// "What makes the read consistent".
#[inline(always)]
pub(crate) fn price(n: u64, burst: u64, interval: u64, tolerance: u64) -> Option<(u64, u64)> {
    if n > burst {
        return None;
    }
    let cost = n.wrapping_mul(interval);
    Some((cost, tolerance.wrapping_sub(cost)))
}

/// The GCRA decision, pure over `(tat, now)`: the new TAT on a grant, or the denial.
///
/// `cost` = n·I and `slack` = τ − n·I (both precomputed; n ≤ b so neither overflows). With
/// base = max(S, now), the grant condition base + n·I ≤ now + τ is rewritten as
/// base − now ≤ slack so that nothing overflows near `u64::MAX`.
#[inline(always)]
pub(crate) fn decide(tat: u64, now: u64, cost: u64, slack: u64) -> Result<u64, Denied> {
    let base = if tat > now { tat } else { now };
    let ahead = base - now;
    if ahead > slack {
        return Err(Denied::after_nanos(ahead - slack));
    }
    match base.checked_add(cost) {
        Some(next) => Ok(next),
        // The clock's range is exhausted: S' is not representable, so the request can never
        // be granted. Denying keeps the no-over-admission guarantee.
        None => Err(Denied::never()),
    }
}

impl<C> Gcra<C> {
    /// Take `permits` permits at time `now` (nanoseconds on this limiter's clock), all or
    /// nothing. This is the algorithm; [`Limiter::try_acquire_n`] is this with the clock read.
    ///
    /// [`Limiter::try_acquire_n`]: crate::limiter::Limiter::try_acquire_n
    ///
    /// # Errors
    ///
    /// [`Denied`] with the exact wait, or with `retry_after() == None` when `permits` exceeds
    /// the burst. `permits == 0` always succeeds and changes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    ///
    /// let limiter = Gcra::builder(Rate::per_second(2)?).clock(ManualClock::new()).build()?;
    /// assert!(limiter.try_acquire_n_at(2, 0).is_ok());
    /// assert_eq!(limiter.try_acquire_n_at(1, 0).unwrap_err().retry_after_nanos(), Some(500_000_000));
    /// assert!(limiter.try_acquire_n_at(1, 500_000_000).is_ok());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire_n_at(&self, permits: u32, now: u64) -> Result<(), Denied> {
        if permits == 0 {
            return Ok(());
        }
        let n = u64::from(permits);
        self.advance(now, |g| {
            let (interval, tolerance, burst) = g.live_params();
            match price(n, burst, interval, tolerance) {
                Some((cost, slack)) => Ok((cost, slack, ())),
                None => Err(Denied::never()),
            }
        })
        .map(drop)
    }

    /// The CAS loop shared by every acquire and by reservations. `price` reads the parameters
    /// (after the TAT) and returns the request's `cost` = n·I and `slack` = τ − n·I (n ≤ b, so
    /// neither overflows), or a wider slack for a reservation that may wait, plus anything the
    /// caller wants read under the same parameters. Returns the TAT it installed and that.
    ///
    /// `price` runs again after every lost CAS: the TAT that won may have been installed by a
    /// rate change, under new parameters. (Peeling the first attempt off the loop, with the
    /// loop out of line, was measured: one to five instructions more per call, not fewer.)
    #[inline(always)]
    pub(crate) fn advance<X>(
        &self,
        now: u64,
        price: impl Fn(&Self) -> Result<(u64, u64, X), Denied>,
    ) -> Result<(u64, X), Denied> {
        // Acquire: a TAT installed by a rate change publishes the parameters that change wrote
        // before it (its Release store); `price` reads them after this load.
        let mut tat = self.tat.load(Ordering::Acquire);
        let mut contention = Contention::new();
        loop {
            let priced = price(self).and_then(|(cost, slack, extra)| {
                decide(tat, now, cost, slack).map(|next| (next, extra))
            });
            // A denial returns here, before any write: under overload the line stays shared.
            let (next, extra) = match priced {
                Ok(granted) => granted,
                // Only if the parameters it was decided on were one set (see `settled`).
                Err(denied) if tat != FROZEN => match self.settled(tat) {
                    None => return Err(denied),
                    Some(current) => {
                        tat = current;
                        continue;
                    }
                },
                // A rate change holds the word: wait for it, then decide on what it installed.
                Err(denied) => match self.thawed() {
                    Some(current) => {
                        tat = current;
                        continue;
                    }
                    None => return Err(denied),
                },
            };
            // Release on success: orders our parameter reads before the grant, so a rate
            // change that freezes the word after it (Acquire) cannot have written the values we
            // read. Acquire on failure: the winner may be a rate change's install, whose
            // parameters `price` reads next. Otherwise the CAS on the one state word linearizes
            // grants, reservations and cancels by itself.
            match self
                .tat
                .compare_exchange_weak(tat, next, Ordering::Release, Ordering::Acquire)
            {
                Ok(_) => return Ok((next, extra)),
                Err(current) => {
                    // Acquire (a reload after a pause): as the first load.
                    tat = contention.lost(current, now, || self.tat.load(Ordering::Acquire));
                }
            }
        }
    }

    /// Validates a denial decided on the state `tat` with parameters read after it: `None`
    /// when they were one set (the denial stands), or the state word's current value to
    /// decide again on.
    ///
    /// Why this suffices: a rate change freezes the word (an AcqRel swap) before it stores any
    /// parameter (Release), and installs a TAT above every value the word ever held, so the
    /// word never holds `tat` again after a change that began after our load of it. If any
    /// parameter we read was stored by such a change, the fence below makes its freeze happen
    /// before our reload, which then reads the freeze or a later value: not `tat`. So a reload
    /// equal to `tat` means every parameter read came from the set `tat` was installed under
    /// (or an earlier one no later than it). Off the allowed path: a grant's CAS validates in
    /// the same way (its Release orders our reads before it).
    #[cold]
    #[inline(never)]
    pub(crate) fn settled(&self, tat: u64) -> Option<u64> {
        // Acquire: a parameter load (Relaxed) that read a change's Release store synchronizes
        // with it here, so that change's freeze happens before the reload below.
        crate::sync::fence(Ordering::Acquire);
        // Acquire: as in `advance` (the caller decides again on what it reads).
        let current = self.tat.load(Ordering::Acquire);
        (current != tat).then_some(current)
    }

    /// After reading [`FROZEN`]: waits for the rate change under way and returns the TAT it
    /// installed, or `None` if no change is under way (the state really is at `u64::MAX`, the
    /// end of the clock's range).
    #[cold]
    #[inline(never)]
    fn thawed(&self) -> Option<u64> {
        let mut contention = Contention::new();
        loop {
            // Acquire: as in `advance`. An RMW (adding 0) rather than a load: it reads the
            // latest value, so the wait ends as soon as the change does (a load may keep
            // returning the frozen value it read before, and the model checker explores that).
            let tat = self.tat.fetch_add(0, Ordering::Acquire);
            if tat != FROZEN {
                return Some(tat);
            }
            // Acquire: a change marks itself (odd) before it freezes the word, and the Acquire
            // RMW above that read the freeze makes the mark visible; even means none is under
            // way, or it has finished: then reading its end of turn (Release) makes its install
            // of the TAT happen before the RMW below, which therefore reads it or later. (With
            // Relaxed here the RMW below could still read the freeze, ordered before the install
            // in the word's modification order, and a request was denied on the frozen marker:
            // issue 43's loom model found it.) An RMW for the same reason as above.
            if self.changes.fetch_add(0, Ordering::Acquire) & 1 == 0 {
                // Acquire: as in `advance`.
                let tat = self.tat.fetch_add(0, Ordering::Acquire);
                return (tat != FROZEN).then_some(tat);
            }
            contention.wait();
        }
    }

    /// Take one permit at time `now`: [`try_acquire_n_at`](Gcra::try_acquire_n_at) with 1.
    ///
    /// # Errors
    ///
    /// [`Denied`] with the exact wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    ///
    /// let limiter = Gcra::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert!(limiter.try_acquire_at(0).is_ok());
    /// assert!(limiter.try_acquire_at(1).is_err());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire_at(&self, now: u64) -> Result<(), Denied> {
        // One permit always fits the burst (b ≥ 1): cost I, slack precomputed.
        self.advance(now, |g| {
            // Relaxed (both): read after the TAT (Acquire) in `advance`; see the fields' docs.
            let interval = g.interval.load(Ordering::Relaxed);
            Ok((interval, g.slack_one.load(Ordering::Relaxed), ()))
        })
        .map(drop)
    }

    /// How many permits a request at `now` could take (a snapshot: other threads may take them
    /// first). Reads the state, never writes it.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    ///
    /// let limiter = Gcra::builder(Rate::per_second(10)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.remaining_at(0), 10);
    /// limiter.try_acquire_n_at(4, 0).unwrap();
    /// assert_eq!(limiter.remaining_at(0), 6);
    /// assert_eq!(limiter.remaining_at(100_000_000), 7); // one more drained after 100 ms
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn remaining_at(&self, now: u64) -> u64 {
        // Acquire: as in `advance` (the parameters are read after it).
        let mut tat = self.tat.load(Ordering::Acquire);
        loop {
            if tat == FROZEN {
                tat = self.thawed().unwrap_or(FROZEN);
            }
            let ahead = tat.saturating_sub(now);
            // Relaxed (both): read after the TAT, as in `advance`, and validated below.
            let tolerance = self.tolerance.load(Ordering::Relaxed);
            let interval = self.interval.load(Ordering::Relaxed);
            // One parameter set with `tat` (see `settled`), else read again. The interval is
            // at least 1 in every set, so even a mix divides.
            match self.settled(tat) {
                None => return tolerance.saturating_sub(ahead) / interval,
                Some(current) => tat = current,
            }
        }
    }

    /// How long until the limiter is full again (its whole burst available) if nothing more
    /// is granted: the TAT minus `now`, zero when it is already full. Reads the state, never
    /// writes it.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let limiter = Gcra::builder(Rate::per_second(10)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.reset_at(0), Duration::ZERO);
    /// limiter.try_acquire_n_at(3, 0).unwrap();
    /// assert_eq!(limiter.reset_at(0), Duration::from_millis(300));
    /// assert_eq!(limiter.reset_at(100_000_000), Duration::from_millis(200));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn reset_at(&self, now: u64) -> Duration {
        // Acquire: as in `advance`; a state frozen by a rate change is read once it is done.
        let mut tat = self.tat.load(Ordering::Acquire);
        if tat == FROZEN {
            tat = self.thawed().unwrap_or(FROZEN);
        }
        Duration::from_nanos(tat.saturating_sub(now))
    }

    /// The burst b: the most permits available at once.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    /// let limiter = Gcra::builder(Rate::per_second(5)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.burst(), 5);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn burst(&self) -> u64 {
        self.snapshot().burst
    }

    /// The emission interval I: one permit drains every I.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    /// use std::time::Duration;
    /// let limiter = Gcra::builder(Rate::per_second(4)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.emission_interval(), Duration::from_millis(250));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn emission_interval(&self) -> Duration {
        Duration::from_nanos(self.snapshot().interval)
    }

    /// The configured rate.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    /// let rate = Rate::per_second(4)?;
    /// let limiter = Gcra::builder(rate).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.rate(), rate);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn rate(&self) -> Rate {
        self.snapshot().rate
    }

    /// The limiter's clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, Gcra, ManualClock, Rate};
    /// let limiter = Gcra::builder(Rate::per_second(4)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.clock().now(), 0);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.clock
    }
}

crate::limiter::limiter_at!(Gcra, fair_queue);

impl<C> fmt::Debug for Gcra<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.snapshot();
        f.debug_struct("Gcra")
            .field("rate", &p.rate)
            .field("burst", &p.burst)
            .field("interval_ns", &p.interval)
            // Relaxed: a snapshot for display.
            .field("tat_ns", &self.tat.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// A consistent reading of a [`Gcra`]'s parameters (see [`Gcra::snapshot`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Snapshot {
    pub(crate) interval: u64,
    pub(crate) tolerance: u64,
    pub(crate) burst: u64,
    pub(crate) rate: Rate,
}

/// The TAT that carries a GCRA state across a rate change at `now`, from interval I and
/// tolerance τ (`old`) to I' and τ' (`new`), before any floor: the rule
/// [`Gcra::set_rate_at`] documents and the [`guide`](crate::guide::rate_changes#changing-a-rate-while-running)
/// proves, shared with `Keyed`'s per-key changes.
///
/// With D = max(S, now) − now the time owed, the free time F = τ − min(D, τ) is carried as the
/// same number of permits (F·I'/I, rounded down) but at most τ'; time queued beyond τ
/// (reservations waiting) is kept as time. Callers then raise the result to at least the old
/// TAT (time owed is never forgiven), and `Gcra` to one past the highest value its word held.
pub(crate) fn carry_tat(tat: u64, now: u64, old: (u64, u64), new: (u64, u64)) -> u64 {
    let ((interval, tolerance), (interval2, tolerance2)) = (old, new);
    let owed = tat.max(now) - now;
    let free = tolerance.saturating_sub(owed);
    let queued = owed.saturating_sub(tolerance);
    let carried = u128::from(free) * u128::from(interval2) / u128::from(interval);
    // ≤ τ', so it fits u64.
    let free2 = carried.min(u128::from(tolerance2)) as u64;
    let owed2 = (tolerance2 - free2).saturating_add(queued);
    now.saturating_add(owed2)
}

/// [`carry_tat`] raised to `floor` + 1, where `floor` is the highest value the state word has
/// held (the current TAT or a value a cancel moved it down from): the change never forgives
/// time owed, and the word never again holds a value a request decided under the old
/// parameters may expect.
pub(crate) fn rerate(tat: u64, now: u64, old: (u64, u64), new: (u64, u64), floor: u64) -> u64 {
    carry_tat(tat, now, old, new).max(tat.max(floor).saturating_add(1))
}

/// Planted bugs for the loom models: each must make its model fail, which shows the models
/// can fail. Compiled only under `--cfg hotlimit_loom`; not part of the API.
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub mod planted {
    use super::*;

    /// [`Gcra`] with its CAS replaced by load, compute, then a plain store: two threads that
    /// load the same TAT both grant, and one update is lost.
    #[derive(Debug)]
    pub struct RacyGcra<C>(pub Gcra<C>);

    impl<C: Clock> RacyGcra<C> {
        /// The broken acquire.
        pub fn try_acquire(&self) -> Result<(), Denied> {
            let g = &self.0;
            let now = g.clock.now();
            // Relaxed: deliberately broken; the ordering is not the bug, the lost update is.
            let tat = g.tat.load(Ordering::Relaxed);
            let (interval, tolerance) = g.params();
            let next = decide(tat, now, interval, tolerance - interval)?;
            g.tat.store(next, Ordering::Relaxed);
            Ok(())
        }
    }

    /// [`Gcra`] whose requests mishandle the contention policy's reload: when the loop loads
    /// the word again after a loss (here after the second in a row, as the loom build of
    /// `Contention` does), it decides on the value it had before and CASes from the fresh
    /// one. A grant made in between is overwritten by a TAT computed without it.
    #[derive(Debug)]
    pub struct StaleReload<'a, C>(pub &'a Gcra<C>);

    impl<C: Clock> StaleReload<'_, C> {
        /// The broken acquire of one permit.
        pub fn try_acquire(&self) -> Result<(), Denied> {
            let g = self.0;
            let now = g.clock.now();
            let (interval, tolerance) = g.params();
            // Relaxed (all): deliberately broken; the orderings are not the bug.
            let mut tat = g.tat.load(Ordering::Relaxed);
            let mut expect = tat;
            let mut losses = 0;
            loop {
                let next = decide(tat, now, interval, tolerance - interval)?;
                match g
                    .tat
                    .compare_exchange(expect, next, Ordering::Relaxed, Ordering::Relaxed)
                {
                    Ok(_) => return Ok(()),
                    Err(current) => {
                        losses += 1;
                        if losses == 1 {
                            (tat, expect) = (current, current);
                        } else {
                            // The bug: the CAS expects the fresh value, the decision keeps `tat`.
                            expect = g.tat.load(Ordering::Relaxed);
                        }
                    }
                }
            }
        }
    }

    /// [`Gcra`] whose rate change stores the new parameters and the carried TAT
    /// non-atomically (no freeze): see `TornChange::set_rate_at`. Its requests are the real
    /// ones.
    #[derive(Debug)]
    pub struct TornChange<C>(pub Gcra<C>);

    /// [`Gcra`]'s request as it was before issue 43: the TAT (Acquire), then the parameters as
    /// separate Relaxed loads, and a denial returned as decided, with no check that the
    /// parameters were one set (`Gcra::settled`). Only a grant's CAS validates.
    #[derive(Debug)]
    pub struct TornRead<'a, C>(pub &'a Gcra<C>);

    impl<C> TornRead<'_, C> {
        /// The unchecked request for `permits` at `now`.
        pub fn try_acquire_n_at(&self, permits: u32, now: u64) -> Result<(), Denied> {
            let g = self.0;
            let n = u64::from(permits);
            // Acquire: as the real `advance`.
            let mut tat = g.tat.load(Ordering::Acquire);
            loop {
                let (interval, tolerance, burst) = g.live_params();
                let Some((cost, slack)) = price(n, burst, interval, tolerance) else {
                    return Err(Denied::never());
                };
                let next = match decide(tat, now, cost, slack) {
                    Ok(next) => next,
                    // The bug: no check that the parameters were one set with `tat`.
                    Err(denied) if tat != FROZEN => return Err(denied),
                    Err(denied) => match g.thawed() {
                        Some(current) => {
                            tat = current;
                            continue;
                        }
                        None => return Err(denied),
                    },
                };
                // Release / Acquire: as the real `advance`.
                match g
                    .tat
                    .compare_exchange(tat, next, Ordering::Release, Ordering::Acquire)
                {
                    Ok(_) => return Ok(()),
                    Err(current) => tat = current,
                }
            }
        }
    }

    /// [`Gcra`] whose rate change raises the carried TAT only to the old TAT, not past every
    /// value the word held: where the carry rule gives the old TAT back, the change reinstalls
    /// the value a racing request loaded (ABA). See `ReinstallingChange::set_rate_at`.
    #[derive(Debug)]
    pub struct ReinstallingChange<'a, C>(pub &'a Gcra<C>);

    impl<C> ReinstallingChange<'_, C> {
        /// The change with the freeze and the parameter stores of the real one, the TAT raised
        /// only to the old one.
        pub fn set_rate_at(&self, rate: Rate, burst: Option<u64>, now: u64) {
            let g = self.0;
            let Ok(new) = Params::new(rate, burst) else {
                return;
            };
            crate::sync::take_turn(&g.changes);
            // Relaxed (all): we hold the turn, as the real change.
            let old = (
                g.interval.load(Ordering::Relaxed),
                g.tolerance.load(Ordering::Relaxed),
            );
            // AcqRel: as the real change's freeze.
            let tat = g.tat.swap(FROZEN, Ordering::AcqRel);
            // The bug: `max(tat)`, where the real rule takes one past the highest value held.
            let next = carry_tat(tat, now, old, (new.interval, new.tolerance)).max(tat);
            // Release (all): as the real change.
            g.interval.store(new.interval, Ordering::Release);
            g.tolerance.store(new.tolerance, Ordering::Release);
            g.slack_one
                .store(new.tolerance - new.interval, Ordering::Release);
            g.burst.store(new.burst, Ordering::Release);
            g.limit.store(rate.limit(), Ordering::Release);
            g.period.store(rate.period_nanos(), Ordering::Release);
            g.tat.swap(next, Ordering::Release);
            crate::sync::end_turn(&g.changes);
        }
    }
}

/// The planted twin of [`Gcra::set_rate_at`] (compiled only under `--cfg hotlimit_loom`).
#[cfg(hotlimit_loom)]
impl<C> planted::TornChange<C> {
    /// The broken change: reads the TAT, computes the carried TAT by the same rule, then
    /// stores the parameters and the TAT one after the other, with no freeze: a grant between
    /// the read and the store is overwritten, and a grant can read new parameters with the old
    /// TAT.
    pub fn set_rate_at(&self, rate: Rate, burst: Option<u64>, now: u64) {
        let g = &self.0;
        let Ok(new) = Params::new(rate, burst) else {
            return;
        };
        // Acquire / Relaxed: deliberately broken; the orderings are not the bug, the
        // separate load and stores are.
        let tat = g.tat.load(Ordering::Acquire);
        let old = (
            g.interval.load(Ordering::Relaxed),
            g.tolerance.load(Ordering::Relaxed),
        );
        let next = rerate(tat, now, old, (new.interval, new.tolerance), 0);
        g.interval.store(new.interval, Ordering::Release);
        g.tolerance.store(new.tolerance, Ordering::Release);
        g.slack_one
            .store(new.tolerance - new.interval, Ordering::Release);
        g.burst.store(new.burst, Ordering::Release);
        g.tat.store(next, Ordering::Release);
    }
}

/// Crate-internal access for the reservation and pacer code (`src/reservation.rs`,
/// `src/pacer.rs`), which build on the same TAT word and parameters.
impl<C> Gcra<C> {
    pub(crate) fn tat_word(&self) -> &AtomicU64 {
        &self.tat
    }

    /// The interval, tolerance and burst as a request reads them: after the TAT (Acquire), in
    /// [`advance`](Gcra::advance)'s `price`.
    #[inline(always)]
    pub(crate) fn live_params(&self) -> (u64, u64, u64) {
        // Relaxed (all): read after the TAT, see the fields' docs.
        (
            self.interval.load(Ordering::Relaxed),
            self.tolerance.load(Ordering::Relaxed),
            self.burst.load(Ordering::Relaxed),
        )
    }

    /// The interval and tolerance (a consistent snapshot; off the admission paths).
    pub(crate) fn params(&self) -> (u64, u64) {
        let p = self.snapshot();
        (p.interval, p.tolerance)
    }
}

/// What a state says about capacity, for the limiters built of several GCRA rates.
impl Params {
    /// The permits a rate with TAT `tat` lets through at `now`: (τ − max(S − now, 0)) / I.
    #[inline]
    pub(crate) fn remaining(&self, tat: u64, now: u64) -> u64 {
        self.tolerance.saturating_sub(tat.saturating_sub(now)) / self.interval
    }
}
