//! [`GcraBuilder`]: the constructors of [`Gcra`] and its settings.

use super::*;

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
            interval: AtomicU64::new(interval),
            tolerance: AtomicU64::new(tolerance),
            slack_one: AtomicU64::new(tolerance - interval),
            burst: AtomicU64::new(burst),
            limit: AtomicU64::new(rate.limit()),
            period: AtomicU64::new(rate.period_nanos()),
            changes: AtomicU64::new(0),
            high: AtomicU64::new(0),
            clock: self.clock,
        })
    }
}
