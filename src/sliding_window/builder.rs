//! [`SlidingWindowBuilder`]: the constructors of [`SlidingWindow`], its settings and modes.

use super::*;

/// Builds a [`SlidingWindow`]: see [`SlidingWindow::builder`].
///
/// # Examples
///
/// ```
/// use hotlimit::{ManualClock, Rate, SlidingWindow};
///
/// let limiter = SlidingWindow::builder(Rate::per_minute(600)?)
///     .buckets(60)
///     .clock(ManualClock::new())
///     .build()?;
/// assert_eq!(limiter.buckets(), 60);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct SlidingWindowBuilder<C> {
    rate: Rate,
    pub(super) buckets: usize,
    approximate: bool,
    pub(super) count_closed: Option<u64>,
    clock: C,
}

impl SlidingWindow {
    /// A builder for `rate` with the default clock, 10 buckets and strict mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    /// use std::time::Duration;
    ///
    /// let limiter = SlidingWindow::builder(Rate::per_second(100)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.bucket_width(), Duration::from_millis(100));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn builder(rate: Rate) -> SlidingWindowBuilder<DefaultClock> {
        SlidingWindowBuilder {
            rate,
            buckets: DEFAULT_BUCKETS,
            approximate: false,
            count_closed: None,
            clock: DefaultClock::default(),
        }
    }

    /// A strict limiter for `rate` with 10 buckets and the default clock.
    ///
    /// # Errors
    ///
    /// As [`SlidingWindowBuilder::build`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Limiter, Rate, SlidingWindow};
    ///
    /// let limiter = SlidingWindow::new(Rate::per_second(1000)?)?;
    /// assert!(limiter.try_acquire().is_ok());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn new(rate: Rate) -> Result<SlidingWindow, ConfigError> {
        SlidingWindow::builder(rate).build()
    }
}

impl<C> SlidingWindowBuilder<C> {
    /// Split the period into `buckets` buckets of width ⌈period / buckets⌉. Default: 10.
    ///
    /// More buckets: a smaller false-denial margin (one bucket width) and more memory (8 to 16
    /// bytes a bucket: the ring is rounded up to a power of two) and work when the window
    /// rolls over a gap.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    /// use std::time::Duration;
    ///
    /// let limiter = SlidingWindow::builder(Rate::per_second(5)?)
    ///     .buckets(4)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.bucket_width(), Duration::from_millis(250));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn buckets(mut self, buckets: usize) -> Self {
        self.buckets = buckets;
        self
    }

    /// **Approximate mode**: count only the buckets that start after now − period, dropping
    /// the partially-overlapping oldest one. Never the default: it may over-admit (up to
    /// `limit` extra in one window on an adversarial trace), in exchange for never denying
    /// a request whose window really has room.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    ///
    /// // 1 per second, 100 ms buckets: hits at 0.990 s and 1.930 s are both admitted.
    /// let limiter = SlidingWindow::builder(Rate::per_second(1)?)
    ///     .approximate()
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.try_acquire_at(990_000_000).is_ok());
    /// assert!(limiter.try_acquire_at(1_930_000_000).is_ok());
    /// assert!(limiter.is_approximate());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn approximate(mut self) -> Self {
        self.approximate = true;
        self
    }

    /// **Count-closed buckets**: a bucket also closes once it holds `k` permits, and a closed
    /// bucket leaves the window exactly one period after its newest grant. A request for n
    /// permits is then wrongly denied only if fewer than n + k − 1 permits are truly free
    /// (for single permits: fewer than k), *and* `limit − n` were granted within the last
    /// `period + w`, as in strict mode. `k = 1` makes the window exact for a sequential caller.
    ///
    /// Memory: ⌊limit / k⌋ closed-bucket entries of 16 bytes on top of the time buckets (the
    /// exact number a window can need: see the
    /// [`guide`](crate::guide::count_closed#count-closed-buckets)). Never over-admits, under any concurrency.
    /// A grant costs a few more atomic steps than strict mode (a shared high-water mark of the
    /// clock and a released-permits counter).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    ///
    /// // 4 per second, one bucket: strict mode would count all of [0, 1 s) until 2 s − 1 ns.
    /// let limiter = SlidingWindow::builder(Rate::per_second(4)?)
    ///     .buckets(1)
    ///     .count_closed(2)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// limiter.try_acquire_n_at(2, 0)?; // closes a bucket of 2 at t = 0
    /// limiter.try_acquire_n_at(2, 500_000_000)?;
    /// // The first two leave exactly one period after t = 0.
    /// assert!(limiter.try_acquire_at(999_999_999).is_err());
    /// assert!(limiter.try_acquire_n_at(2, 1_000_000_000).is_ok());
    /// assert_eq!(limiter.count_closed(), Some(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn count_closed(mut self, k: u64) -> Self {
        self.count_closed = Some(k);
        self
    }

    /// The clock to read in `try_acquire`. Default: [`DefaultClock`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Limiter, ManualClock, Rate, SlidingWindow};
    ///
    /// let clock = ManualClock::new();
    /// let limiter = SlidingWindow::builder(Rate::per_second(1)?).clock(clock.clone()).build()?;
    /// assert!(limiter.try_acquire().is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clock<C2: Clock>(self, clock: C2) -> SlidingWindowBuilder<C2> {
        SlidingWindowBuilder {
            rate: self.rate,
            buckets: self.buckets,
            approximate: self.approximate,
            count_closed: self.count_closed,
            clock,
        }
    }
}
impl<C> SlidingWindowBuilder<C> {
    /// The bucket width ⌈period / buckets⌉ in ns (what a built limiter's
    /// [`bucket_width`](SlidingWindow::bucket_width) is), for a per-key window's quota (per-key
    /// windows need `std`).
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) fn bucket_width_nanos(&self) -> u64 {
        self.rate
            .period_nanos()
            .div_ceil(self.buckets.max(1) as u64)
    }

    /// Validates the configuration: `(limit, width, lag)`, or the error `build` returns.
    pub(super) fn checked(&self) -> Result<(u64, u64, u64), ConfigError> {
        let rate = self.rate;
        let (limit, period) = (rate.limit(), rate.period_nanos());
        let buckets = self.buckets;
        let as_count = |n: usize| Value::Count(n as u128);
        if buckets == 0 {
            return Err(ConfigError::new(
                "buckets",
                as_count(0),
                "must be at least 1",
            ));
        }
        if buckets > MAX_BUCKETS {
            return Err(ConfigError::new(
                "buckets",
                as_count(buckets),
                "must be at most 65536",
            ));
        }
        if buckets as u64 > period {
            return Err(ConfigError::new(
                "buckets",
                as_count(buckets),
                "more buckets than nanoseconds in the period",
            ));
        }
        if limit > MAX_LIMIT {
            return Err(ConfigError::new(
                "limit",
                Value::Count(u128::from(limit)),
                "must be at most 2147483647 (a window's count, up to twice the limit, is packed into 32 bits)",
            ));
        }
        let width = period.div_ceil(buckets as u64);
        // width ≤ period, so neither subtraction underflows.
        let lag = if self.approximate {
            period - width
        } else {
            period - 1
        };
        Ok((limit, width, lag))
    }
}

impl<C: Clock> SlidingWindowBuilder<C> {
    /// Builds the limiter.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming
    /// - `buckets` when it is 0, more than 65,536, or more than the period has nanoseconds;
    /// - `limit` when it is above 2,147,483,647 (a window's count, up to twice the limit while
    ///   the oldest bucket is counted whole, is packed into 32 bits);
    /// - `count_closed` when it is 0, above `limit` (no bucket could ever close by count),
    ///   combined with [`approximate()`](SlidingWindowBuilder::approximate), or when
    ///   ⌊limit / k⌋ (the closed-bucket entries) is above 1,048,576.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    /// use std::time::Duration;
    ///
    /// let err = SlidingWindow::builder(Rate::per_second(1)?)
    ///     .buckets(0)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.to_string(), "invalid buckets = 0: must be at least 1");
    /// let err = SlidingWindow::builder(Rate::new(1, Duration::from_nanos(5))?)
    ///     .buckets(6)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "buckets");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<SlidingWindow<C>, ConfigError> {
        let (limit, width, lag) = self.checked()?;
        let (rate, buckets) = (self.rate, self.buckets);
        let period = rate.period_nanos();
        let core = match self.count_closed {
            None => Core::Time(TimeRing::new(limit, width, lag)),
            Some(k) => Core::Closed(Box::new(CountClosed::new(
                k,
                limit,
                period,
                width,
                self.approximate,
            )?)),
        };
        Ok(SlidingWindow {
            core,
            width,
            limit: AtomicU64::new(limit),
            raise_at: AtomicU64::new(0),
            changes: AtomicU64::new(0),
            buckets,
            approximate: self.approximate,
            rate,
            clock: self.clock,
        })
    }
}
