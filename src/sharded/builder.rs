//! [`ShardedGcraBuilder`]: the constructors of [`ShardedGcra`], its settings, and the
//! shards' split of the rate and burst at build.

use super::*;

/// Builds a [`ShardedGcra`]: see [`ShardedGcra::builder`].
///
/// # Examples
///
/// ```
/// use hotlimit::{ManualClock, Rate, ShardedGcra};
///
/// let limiter = ShardedGcra::builder(Rate::per_second(1_000)?)
///     .shards(4)
///     .burst(100)
///     .clock(ManualClock::new())
///     .build()?;
/// assert_eq!((limiter.shards(), limiter.burst()), (4, 100));
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct ShardedGcraBuilder<C> {
    rate: Rate,
    burst: Option<u64>,
    shards: Option<usize>,
    clock: C,
}

impl ShardedGcra {
    /// A builder for `rate` with the default clock, burst and shard count; change any of them
    /// before `build()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    ///
    /// let limiter = ShardedGcra::builder(Rate::per_minute(60)?)
    ///     .shards(3)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.burst(), 60);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn builder(rate: Rate) -> ShardedGcraBuilder<DefaultClock> {
        ShardedGcraBuilder {
            rate,
            burst: None,
            shards: None,
            clock: DefaultClock::default(),
        }
    }

    /// A limiter for `rate` with burst `rate.limit()`, one shard per available core (at most
    /// `min(limit, burst)`), and the default clock.
    ///
    /// # Errors
    ///
    /// As [`ShardedGcraBuilder::build`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Limiter, Rate, ShardedGcra};
    ///
    /// let limiter = ShardedGcra::new(Rate::per_second(1_000_000)?)?;
    /// assert!(limiter.try_acquire().is_ok());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn new(rate: Rate) -> Result<ShardedGcra, ConfigError> {
        ShardedGcra::builder(rate).build()
    }
}

impl<C> ShardedGcraBuilder<C> {
    /// The global burst b, split over the shards. Default: the rate's `limit`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    ///
    /// let limiter = ShardedGcra::builder(Rate::per_second(100)?)
    ///     .shards(2)
    ///     .burst(5)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!((limiter.shard_burst(0), limiter.shard_burst(1)), (Some(3), Some(2)));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn burst(mut self, burst: u64) -> Self {
        self.burst = Some(burst);
        self
    }

    /// The number of shards S. Default: `std::thread::available_parallelism()` with the `std`
    /// feature (1 without it, or if it is unknown), lowered to `min(limit, burst)` since each
    /// shard needs at least one permit of rate and of burst. An explicit S above that is an
    /// error, not a silent clamp.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    ///
    /// let limiter = ShardedGcra::builder(Rate::per_second(100)?)
    ///     .shards(8)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.shards(), 8);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// The clock to read in `try_acquire`. Default: [`DefaultClock`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, ManualClock, Rate, ShardedGcra};
    ///
    /// let clock = ManualClock::new();
    /// let limiter = ShardedGcra::builder(Rate::per_second(1)?).clock(clock.clone()).build()?;
    /// assert_eq!(limiter.clock().now(), 0);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock<C2: Clock>(self, clock: C2) -> ShardedGcraBuilder<C2> {
        ShardedGcraBuilder {
            rate: self.rate,
            burst: self.burst,
            shards: self.shards,
            clock,
        }
    }
}

/// The most shards a limiter takes: 4,096 cache lines (512 KiB on x86-64), more than any
/// machine's cores; more would only be memory (a request for 2^40 shards aborted the process on
/// its allocation before this bound).
const MAX_SHARDS: usize = 4096;

/// The default shard count before clamping: the available parallelism.
#[cfg(feature = "std")]
fn default_shards() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Without `std` there is no portable way to count cores: one shard unless told otherwise.
#[cfg(not(feature = "std"))]
fn default_shards() -> usize {
    1
}

impl<C: Clock> ShardedGcraBuilder<C> {
    /// Builds the limiter.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when the emission interval `period / limit` is under 1 ns (field
    /// `rate`); when the burst is 0 (field `burst`); when the shard count is 0, above 4,096, or
    /// above `min(limit, burst)` (field `shards`); when a shard's interval I_k (about S × I) does
    /// not fit in u64 nanoseconds (field `shards`); or when a shard's b_k × I_k does not
    /// (field `burst`).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    ///
    /// let err = ShardedGcra::builder(Rate::per_second(3)?)
    ///     .shards(4)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "shards");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<ShardedGcra<C>, ConfigError> {
        let rate = self.rate;
        let limit = rate.limit();
        let Params { burst, .. } = Params::new(rate, self.burst)?;
        let most = limit.min(burst);
        let shards =
            match self.shards {
                Some(0) => {
                    return Err(ConfigError::new(
                        "shards",
                        Value::Count(0),
                        "must be at least 1",
                    ))
                }
                Some(s) if s as u128 > u128::from(most) => return Err(ConfigError::new(
                    "shards",
                    Value::Count(s as u128),
                    "more shards than the rate's limit or the burst: each shard needs at least \
                     one permit of each",
                )),
                Some(s) if s > MAX_SHARDS => {
                    return Err(ConfigError::new(
                        "shards",
                        Value::Count(s as u128),
                        "must be at most 4096 (each shard is a cache line)",
                    ))
                }
                Some(s) => s as u64,
                None => (default_shards().clamp(1, MAX_SHARDS) as u64).min(most),
            };
        let (interval, burst, split) = split(rate, Some(burst), shards)?;
        let built: Vec<_> = split
            .into_iter()
            .map(|p| CachePadded::new(Shard::new(p)))
            .collect();
        Ok(ShardedGcra {
            shards: built.into_boxed_slice(),
            burst: AtomicU64::new(burst),
            interval: AtomicU64::new(interval),
            limit: AtomicU64::new(rate.limit()),
            period: AtomicU64::new(rate.period_nanos()),
            empty: EmptyHint::new(),
            changes: AtomicU64::new(0),
            clock: self.clock,
        })
    }
}
