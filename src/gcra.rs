//! [`Gcra`]: the generic cell rate algorithm, its whole state one CAS-updated `AtomicU64`.
//!
//! GCRA comes from ATM networks (ITU-T I.371, the "virtual scheduling" form). The state is the
//! theoretical arrival time (TAT) S: the time at which the limiter would be empty again if no
//! more requests came. With emission interval I and burst b, the tolerance is τ = b·I. A
//! request for n permits at `now` computes S' = max(S, now) + n·I and is allowed iff
//! S' ≤ now + τ; then S becomes S'. A denial leaves S unchanged and can succeed after
//! S' − (now + τ).

use core::{fmt, time::Duration};

use crate::error::{ConfigError, Value};
use crate::sync::{AtomicU64, Backoff, Ordering};
use crate::{Clock, DefaultClock, Denied, Limiter, Rate};

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
pub struct Gcra<C = DefaultClock> {
    /// The theoretical arrival time S, in nanoseconds on `clock`. 0 means "never used".
    tat: AtomicU64,
    /// The emission interval I in nanoseconds, at least 1.
    interval: u64,
    /// The tolerance τ = b·I in nanoseconds; fits in u64 by construction.
    tolerance: u64,
    /// τ − I: the slack of a one-permit request, precomputed for the hottest call (b ≥ 1, so
    /// it does not underflow).
    slack_one: u64,
    /// The burst b.
    burst: u64,
    rate: Rate,
    clock: C,
}

/// Builds a [`Gcra`]: see [`Gcra::builder`].
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, ManualClock, Rate};
///
/// let limiter = Gcra::builder(Rate::per_second(100)?)
///     .burst(10)
///     .clock(ManualClock::new())
///     .build()?;
/// assert_eq!(limiter.burst(), 10);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct GcraBuilder<C> {
    rate: Rate,
    burst: Option<u64>,
    clock: C,
}

impl Gcra {
    /// A builder for `rate` with the default clock and burst; change either before `build()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    ///
    /// let limiter = Gcra::builder(Rate::per_minute(3)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.burst(), 3);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn builder(rate: Rate) -> GcraBuilder<DefaultClock> {
        GcraBuilder {
            rate,
            burst: None,
            clock: DefaultClock::default(),
        }
    }

    /// A limiter for `rate` with burst `rate.limit()` and the default clock.
    ///
    /// # Errors
    ///
    /// As [`GcraBuilder::build`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Limiter, Rate};
    ///
    /// let limiter = Gcra::new(Rate::per_second(1000)?)?;
    /// assert!(limiter.try_acquire().is_ok());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn new(rate: Rate) -> Result<Gcra, ConfigError> {
        Gcra::builder(rate).build()
    }
}

impl<C> GcraBuilder<C> {
    /// The most permits that can be taken at once (and the most a request may ask for).
    /// Default: the rate's `limit`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Limiter, ManualClock, Rate};
    ///
    /// let limiter = Gcra::builder(Rate::per_second(100)?)
    ///     .burst(1)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.try_acquire().is_ok());
    /// assert!(limiter.try_acquire().is_err()); // no burst: one every 10 ms
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn burst(mut self, burst: u64) -> Self {
        self.burst = Some(burst);
        self
    }

    /// The clock to read in `try_acquire`. Default: [`DefaultClock`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    ///
    /// let clock = ManualClock::new();
    /// let limiter = Gcra::builder(Rate::per_second(1)?).clock(clock.clone()).build()?;
    /// # let _ = limiter;
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock<C2: Clock>(self, clock: C2) -> GcraBuilder<C2> {
        GcraBuilder {
            rate: self.rate,
            burst: self.burst,
            clock,
        }
    }
}

impl<C: Clock> GcraBuilder<C> {
    /// Builds the limiter.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when the emission interval `period / limit` is under 1 ns or over 2^62
    /// ns, 146 years (field `rate`), when the burst is 0, or when burst × interval overflows u64
    /// nanoseconds (field `burst`).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let err = Gcra::builder(Rate::per_second(1)?).burst(0).clock(ManualClock::new()).build();
    /// assert_eq!(err.unwrap_err().field(), "burst");
    /// let err = Gcra::builder(Rate::new(10, Duration::from_nanos(5))?)
    ///     .clock(ManualClock::new())
    ///     .build();
    /// assert_eq!(err.unwrap_err().field(), "rate");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<Gcra<C>, ConfigError> {
        let Params {
            interval,
            burst,
            tolerance,
        } = Params::new(self.rate, self.burst)?;
        let rate = self.rate;
        Ok(Gcra {
            tat: AtomicU64::new(0),
            interval,
            tolerance,
            slack_one: tolerance - interval,
            burst,
            rate,
            clock: self.clock,
        })
    }
}

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
/// n ≤ b, n·I ≤ τ fits in u64 and the subtraction cannot underflow.
#[inline(always)]
pub(crate) fn price(n: u64, burst: u64, interval: u64, tolerance: u64) -> Option<(u64, u64)> {
    if n > burst {
        return None;
    }
    let cost = n * interval;
    Some((cost, tolerance - cost))
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
        let Some((cost, slack)) = price(
            u64::from(permits),
            self.burst,
            self.interval,
            self.tolerance,
        ) else {
            return Err(Denied::never());
        };
        self.advance(now, cost, slack).map(drop)
    }

    /// The CAS loop shared by every acquire and by reservations: one request of `cost` = n·I
    /// with `slack` = τ − n·I (n ≤ b, so neither overflows), or a wider slack for a
    /// reservation that may wait. Returns the TAT it installed.
    #[inline(always)]
    pub(crate) fn advance(&self, now: u64, cost: u64, slack: u64) -> Result<u64, Denied> {
        // Relaxed: the TAT is the limiter's whole state; the decision needs no other memory,
        // and the CAS below fails if this value is stale.
        let mut tat = self.tat.load(Ordering::Relaxed);
        let backoff = Backoff::new();
        loop {
            // A denial returns here, before any write: under overload the line stays shared.
            let next = decide(tat, now, cost, slack)?;
            // Relaxed (both): a CAS on the one state word linearizes grants, reservations and
            // cancels by itself; nothing else is published or consumed with the TAT.
            match self
                .tat
                .compare_exchange_weak(tat, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Ok(next),
                Err(current) => {
                    tat = current;
                    crate::sync::lost_cas(&backoff, now);
                }
            }
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
        self.advance(now, self.interval, self.slack_one).map(drop)
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
        // Relaxed: a snapshot of the one state word.
        let tat = self.tat.load(Ordering::Relaxed);
        let ahead = tat.saturating_sub(now);
        self.tolerance.saturating_sub(ahead) / self.interval
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
        // Relaxed: a snapshot of the one state word.
        Duration::from_nanos(self.tat.load(Ordering::Relaxed).saturating_sub(now))
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
        self.burst
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
        Duration::from_nanos(self.interval)
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
        self.rate
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

impl<C: Clock> Gcra<C> {
    /// How many permits could be taken now: [`remaining_at`](Gcra::remaining_at) with the
    /// clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Limiter, ManualClock, Rate};
    /// let limiter = Gcra::builder(Rate::per_second(3)?).clock(ManualClock::new()).build()?;
    /// limiter.try_acquire()?;
    /// assert_eq!(limiter.remaining(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remaining(&self) -> u64 {
        self.remaining_at(self.clock.now())
    }

    /// How long until the limiter is full again: [`reset_at`](Gcra::reset_at) with the clock
    /// read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Limiter, ManualClock, Rate};
    /// use std::time::Duration;
    /// let limiter = Gcra::builder(Rate::per_second(4)?).clock(ManualClock::new()).build()?;
    /// limiter.try_acquire()?;
    /// assert_eq!(limiter.reset(), Duration::from_millis(250));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset(&self) -> Duration {
        self.reset_at(self.clock.now())
    }
}

/// A decision with what HTTP headers need: the quota is the rate's `limit` per `period`
/// (`RateLimit-Policy: q=limit;w=period`), `remaining` and `reset` are read right after it.
///
/// # Examples
///
/// ```
/// use hotlimit::{Decide, Gcra, ManualClock, Rate};
/// use std::future::Future;
/// use std::task::{Context, Poll, Waker};
/// use std::time::Duration;
///
/// let limiter = Gcra::builder(Rate::per_second(5)?).clock(ManualClock::new()).build()?;
/// let mut fut = std::pin::pin!(limiter.decide(&(), 1));
/// let Poll::Ready(Ok(d)) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
///     unreachable!("in-process decisions are ready at once")
/// };
/// assert!(d.is_allowed());
/// assert_eq!((d.remaining(), d.reset()), (4, Duration::from_millis(200)));
/// assert_eq!(d.quota().limit(), 5);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
impl<C: Clock> crate::decide::Decide for Gcra<C> {
    type Key = ();
    type Error = core::convert::Infallible;
    type Future = crate::decide::Ready;

    fn decide(&self, _key: &(), permits: u32) -> Self::Future {
        let now = self.clock.now();
        let outcome = self.try_acquire_n_at(permits, now);
        crate::decide::ready(
            self.quota(),
            outcome,
            self.remaining_at(now),
            self.reset_at(now),
        )
    }

    fn quota(&self) -> crate::decide::Quota {
        crate::decide::quota_of(self.rate)
    }
}

impl<C: Clock> Limiter for Gcra<C> {
    #[inline]
    fn try_acquire(&self) -> Result<(), Denied> {
        self.try_acquire_at(self.clock.now())
    }

    #[inline]
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        self.try_acquire_n_at(permits, self.clock.now())
    }
}

impl<C> fmt::Debug for Gcra<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gcra")
            .field("rate", &self.rate)
            .field("burst", &self.burst)
            .field("interval_ns", &self.interval)
            // Relaxed: a snapshot for display.
            .field("tat_ns", &self.tat.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
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
            let next = decide(tat, now, g.interval, g.tolerance - g.interval)?;
            g.tat.store(next, Ordering::Relaxed);
            Ok(())
        }
    }
}

/// Crate-internal access for the reservation and pacer code (`src/reservation.rs`,
/// `src/pacer.rs`), which build on the same TAT word and parameters.
impl<C> Gcra<C> {
    pub(crate) fn tat_word(&self) -> &AtomicU64 {
        &self.tat
    }

    pub(crate) fn params(&self) -> (u64, u64) {
        (self.interval, self.tolerance)
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
