//! [`GcraMultiBuilder`]: the constructor of [`GcraMulti`], its `MAX_RATES` and its settings.

use super::*;

/// Builds a [`GcraMulti`]: see [`GcraMulti::builder`].
///
/// # Examples
///
/// ```
/// use hotlimit::{GcraMulti, ManualClock, Rate};
///
/// let limiter = GcraMulti::builder()
///     .rate_with_burst(Rate::per_second(10)?, 5)
///     .rate(Rate::per_hour(1_000)?)
///     .rate(Rate::per_hour(24 * 10_000)?)
///     .clock(ManualClock::new())
///     .build()?;
/// assert_eq!(limiter.bursts(), vec![5, 1_000, 240_000]);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct GcraMultiBuilder<C> {
    rates: alloc::vec::Vec<(Rate, Option<u64>)>,
    snapshots: Option<usize>,
    clock: C,
}

impl GcraMulti {
    /// The most rates one `GcraMulti` holds: 8.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraMulti, ManualClock, Rate};
    ///
    /// let mut b = GcraMulti::builder().clock(ManualClock::new());
    /// for _ in 0..=GcraMulti::MAX_RATES {
    ///     b = b.rate(Rate::per_second(1)?);
    /// }
    /// assert_eq!(b.build().unwrap_err().field(), "rates");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub const MAX_RATES: usize = MAX_RATES;

    /// A builder with no rates yet (add them with [`rate`](GcraMultiBuilder::rate)), the
    /// default clock and the default number of snapshots.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraMulti, Limiter, Rate};
    ///
    /// let limiter = GcraMulti::builder()
    ///     .rate(Rate::per_second(10)?)
    ///     .rate(Rate::per_minute(100)?)
    ///     .rate(Rate::per_hour(1_000)?)
    ///     .build()?;
    /// assert!(limiter.try_acquire().is_ok());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn builder() -> GcraMultiBuilder<DefaultClock> {
        GcraMultiBuilder {
            rates: alloc::vec::Vec::new(),
            snapshots: None,
            clock: DefaultClock::default(),
        }
    }
}

impl<C> GcraMultiBuilder<C> {
    /// Adds a rate with burst = its `limit`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraMulti, ManualClock, Rate};
    ///
    /// let limiter = GcraMulti::builder()
    ///     .rate(Rate::per_second(3)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.bursts(), vec![3]);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn rate(mut self, rate: Rate) -> Self {
        self.rates.push((rate, None));
        self
    }

    /// Adds a rate with its own burst.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraMulti, ManualClock, Rate};
    ///
    /// let limiter = GcraMulti::builder()
    ///     .rate_with_burst(Rate::per_second(3)?, 1)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.bursts(), vec![1]);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn rate_with_burst(mut self, rate: Rate, burst: u64) -> Self {
        self.rates.push((rate, Some(burst)));
        self
    }

    /// How many snapshots to keep (3 to 256): a grant needs a spare one, and a thread stopped
    /// in the middle of a grant holds one. Default: 2 × the available parallelism + 2
    /// (without `std`: 8).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraMulti, ManualClock, Rate};
    ///
    /// let err = GcraMulti::builder()
    ///     .rate(Rate::per_second(3)?)
    ///     .snapshots(2)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "snapshots");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn snapshots(mut self, snapshots: usize) -> Self {
        self.snapshots = Some(snapshots);
        self
    }

    /// The clock to read in `try_acquire`. Default: [`DefaultClock`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, GcraMulti, ManualClock, Rate};
    ///
    /// let limiter = GcraMulti::builder()
    ///     .rate(Rate::per_second(3)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.clock().now(), 0);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock<C2: Clock>(self, clock: C2) -> GcraMultiBuilder<C2> {
        GcraMultiBuilder {
            rates: self.rates,
            snapshots: self.snapshots,
            clock,
        }
    }
}

/// The default snapshot count: twice the cores, plus two.
#[cfg(feature = "std")]
fn default_snapshots() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    cores.saturating_mul(2).saturating_add(2).min(MAX_SNAPSHOTS)
}

/// Without `std` there is no portable way to count cores.
#[cfg(not(feature = "std"))]
fn default_snapshots() -> usize {
    8
}

impl<C: Clock> GcraMultiBuilder<C> {
    /// Builds the limiter.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `rates` when there are none or more than
    /// [`GcraMulti::MAX_RATES`];
    /// `rates[i]` when rate i's emission interval is under 1 ns; `bursts[i]` when burst i is 0
    /// or burst × interval overflows u64 nanoseconds; `snapshots` when it is not 3 to 256.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraMulti, ManualClock, Rate};
    ///
    /// let err = GcraMulti::builder().clock(ManualClock::new()).build().unwrap_err();
    /// assert_eq!(err.to_string(), "invalid rates = 0: must be between 1 and 8 rates");
    /// let err = GcraMulti::builder()
    ///     .rate(Rate::per_second(1)?)
    ///     .rate_with_burst(Rate::per_hour(5)?, 0)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "bursts[1]");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<GcraMulti<C>, ConfigError> {
        let k = self.rates.len();
        if k == 0 || k > MAX_RATES {
            return Err(ConfigError::new(
                "rates",
                Value::Count(k as u128),
                "must be between 1 and 8 rates",
            ));
        }
        let mut params = alloc::vec::Vec::with_capacity(k);
        for (i, &(rate, burst)) in self.rates.iter().enumerate() {
            params.push(
                Params::new(rate, burst)
                    .map_err(|e| e.prefixed(RATE_FIELDS[i], BURST_FIELDS[i]))?,
            );
        }
        let n = self.snapshots.unwrap_or_else(default_snapshots);
        if !(3..=MAX_SNAPSHOTS).contains(&n) {
            return Err(ConfigError::new(
                "snapshots",
                Value::Count(n as u128),
                "must be between 3 and 256",
            ));
        }
        // Snapshot 0 is generation 1, the state; the others hold generation 0 (< 1: free).
        let snapshots = (0..n)
            .map(|i| Snapshot::new(if i == 0 { 2 } else { 0 }))
            .collect();
        let mut one = [(0, 0); MAX_RATES];
        for (o, p) in one.iter_mut().zip(&params) {
            *o = (p.interval, p.tolerance - p.interval);
        }
        Ok(GcraMulti {
            current: crossbeam_utils::CachePadded::new(AtomicU64::new(1 << SLOT_BITS)),
            snapshots,
            one,
            params,
            rates: self.rates.iter().map(|&(r, _)| r).collect(),
            clock: self.clock,
        })
    }
}
