//! [`Rate`]: `limit` permits per `period`.

use core::time::Duration;

use crate::error::{ConfigError, Value};

/// A rate: `limit` permits per `period`.
///
/// Valid rates have `limit >= 1` and `1 ns <= period <= u64::MAX ns` (584 years). Each limiter
/// may reject rates it cannot honour (e.g. [`Gcra`](crate::Gcra) needs at least 1 ns per
/// permit).
///
/// # Examples
///
/// ```
/// use hotlimit::Rate;
/// use std::time::Duration;
///
/// let rate = Rate::new(500, Duration::from_secs(600))?;
/// assert_eq!(rate.limit(), 500);
/// assert_eq!(rate.period(), Duration::from_secs(600));
/// assert_eq!(Rate::per_minute(60)?, Rate::new(60, Duration::from_secs(60))?);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rate {
    limit: u64,
    period_ns: u64,
}

impl Rate {
    /// `limit` permits per `period`.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `limit` when it is 0, or `period` when it is zero or longer than
    /// `u64::MAX` nanoseconds.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use std::time::Duration;
    ///
    /// assert!(Rate::new(3, Duration::from_secs(60)).is_ok());
    /// let err = Rate::new(3, Duration::MAX).unwrap_err();
    /// assert_eq!(err.field(), "period");
    /// ```
    pub fn new(limit: u64, period: Duration) -> Result<Rate, ConfigError> {
        if limit == 0 {
            return Err(ConfigError::new(
                "limit",
                Value::Count(0),
                "must be at least 1",
            ));
        }
        let ns = period.as_nanos();
        if ns == 0 {
            return Err(ConfigError::new(
                "period",
                Value::Nanos(ns),
                "must be at least 1 ns",
            ));
        }
        let Ok(period_ns) = u64::try_from(ns) else {
            return Err(ConfigError::new(
                "period",
                Value::Nanos(ns),
                "must fit in u64 nanoseconds (at most about 584 years)",
            ));
        };
        Ok(Rate { limit, period_ns })
    }

    /// `limit` permits per second.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when `limit` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let rate = hotlimit::Rate::per_second(100)?;
    /// assert_eq!(rate.limit(), 100);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn per_second(limit: u64) -> Result<Rate, ConfigError> {
        Rate::new(limit, Duration::from_secs(1))
    }

    /// `limit` permits per minute.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when `limit` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let rate = hotlimit::Rate::per_minute(30)?;
    /// assert_eq!(rate.period().as_secs(), 60);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn per_minute(limit: u64) -> Result<Rate, ConfigError> {
        Rate::new(limit, Duration::from_secs(60))
    }

    /// `limit` permits per hour.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when `limit` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let rate = hotlimit::Rate::per_hour(1000)?;
    /// assert_eq!(rate.period().as_secs(), 3600);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn per_hour(limit: u64) -> Result<Rate, ConfigError> {
        Rate::new(limit, Duration::from_secs(3600))
    }

    /// Permits per period.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(hotlimit::Rate::per_second(7)?.limit(), 7);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The period.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(hotlimit::Rate::per_second(7)?.period(), Duration::from_secs(1));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn period(&self) -> Duration {
        Duration::from_nanos(self.period_ns)
    }

    /// The period in nanoseconds.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(hotlimit::Rate::per_second(7)?.period_nanos(), 1_000_000_000);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn period_nanos(&self) -> u64 {
        self.period_ns
    }

    /// The value to report in errors about this rate as a whole.
    pub(crate) fn as_value(&self) -> Value {
        Value::Rate {
            limit: self.limit,
            period_ns: u128::from(self.period_ns),
        }
    }
}
