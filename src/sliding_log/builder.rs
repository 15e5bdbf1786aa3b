//! [`SlidingLogBuilder`]: the constructors of [`SlidingLog`] and its settings.

use super::*;

/// Builds a [`SlidingLog`]: see [`SlidingLog::builder`].
///
/// # Examples
///
/// ```
/// use hotlimit::{ManualClock, Rate, SlidingLog};
///
/// let log = SlidingLog::builder(Rate::per_second(100)?).clock(ManualClock::new()).build()?;
/// assert_eq!(log.limit(), 100);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct SlidingLogBuilder<C> {
    rate: Rate,
    max_memory: usize,
    clock: C,
}

impl SlidingLog {
    /// The largest `limit` a log accepts: 2²⁸ = 268,435,456 permits per period, which is 2 GiB
    /// of timestamps. Exactness costs 8 bytes per permit; above this, use a bucketed window.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(hotlimit::SlidingLog::MAX_LIMIT, 1 << 28);
    /// ```
    pub const MAX_LIMIT: u64 = MAX_SLOTS;

    /// A builder for `rate` with the default clock; change it before `build()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingLog};
    ///
    /// let log = SlidingLog::builder(Rate::per_minute(3)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(log.limit(), 3);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn builder(rate: Rate) -> SlidingLogBuilder<DefaultClock> {
        SlidingLogBuilder {
            rate,
            max_memory: crate::memory::DEFAULT_MAX_MEMORY,
            clock: DefaultClock::default(),
        }
    }

    /// An exact log for `rate` with the default clock.
    ///
    /// # Errors
    ///
    /// As [`SlidingLogBuilder::build`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Limiter, Rate, SlidingLog};
    ///
    /// let log = SlidingLog::new(Rate::per_second(1000)?)?;
    /// assert!(log.try_acquire().is_ok());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn new(rate: Rate) -> Result<SlidingLog, ConfigError> {
        SlidingLog::builder(rate).build()
    }
}

impl<C> SlidingLogBuilder<C> {
    /// The clock to read in `try_acquire`. Default: [`DefaultClock`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, ManualClock, Rate, SlidingLog};
    ///
    /// let clock = ManualClock::new();
    /// let log = SlidingLog::builder(Rate::per_second(1)?).clock(clock.clone()).build()?;
    /// assert_eq!(log.clock().now(), 0);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock<C2: Clock>(self, clock: C2) -> SlidingLogBuilder<C2> {
        SlidingLogBuilder {
            rate: self.rate,
            max_memory: self.max_memory,
            clock,
        }
    }

    /// The most memory the log may take, in bytes: its ring is 8 bytes × `limit`, allocated
    /// at `build()`. Default: 1 GiB (a `limit` of up to 134,217,728). `build()` reports a
    /// larger ring as a [`ConfigError`] naming `limit` and the bytes, instead of allocating it.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingLog};
    ///
    /// let err = SlidingLog::builder(Rate::per_second(1_000_000)?)
    ///     .max_memory(1 << 20)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "limit");
    /// assert_eq!(
    ///     err.to_string(),
    ///     "invalid limit = 1000000 (needs 8000000 bytes, over max_memory = 1048576 bytes): \
    ///      lower it, or raise the builder's max_memory"
    /// );
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn max_memory(mut self, bytes: usize) -> Self {
        self.max_memory = bytes;
        self
    }
}

impl<C: Clock> SlidingLogBuilder<C> {
    /// Builds the log, allocating `limit` slots.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `limit` when it exceeds [`SlidingLog::MAX_LIMIT`] (2²⁸), when
    /// its ring (8 bytes × `limit`) is over [`max_memory`](SlidingLogBuilder::max_memory), or
    /// when the memory for the slots cannot be allocated (reported, never an abort).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingLog};
    ///
    /// let err = SlidingLog::builder(Rate::per_second(1 << 40)?)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "limit");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<SlidingLog<C>, ConfigError> {
        let limit = self.rate.limit();
        if limit <= MAX_SLOTS {
            // Above MAX_SLOTS `new_slots` names the hard bound instead.
            let need = 8 * u128::from(limit);
            crate::memory::within("limit", u128::from(limit), need, self.max_memory)?;
        }
        let slots = limit_slots(limit)?;
        Ok(SlidingLog::from_parts(slots, self.rate, self.clock))
    }
}
