//! [`KeyPoolBuilder`]: the constructors of [`KeyPool`], its settings, and the build of either
//! mode (one log for all keys, or one window per key).

use super::*;

/// Builds a [`KeyPool`]: see [`KeyPool::builder`].
///
/// # Examples
///
/// ```
/// use hotlimit::{KeyPool, ManualClock, Rate};
///
/// let pool = KeyPool::builder(vec![1, 2, 3], Rate::per_second(10)?)
///     .clock(ManualClock::new())
///     .build()?;
/// assert_eq!(pool.keys(), &[1, 2, 3]);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct KeyPoolBuilder<K, C> {
    keys: alloc::vec::Vec<K>,
    rate: Rate,
    buckets: Option<usize>,
    clock: C,
}

impl<K> KeyPool<K> {
    /// A builder for `keys`, each usable `rate.limit()` times per `rate.period()`, with the
    /// default clock; change it before `build()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// // 500 uses per 10 minutes per key.
    /// let rate = Rate::new(500, Duration::from_secs(600))?;
    /// let pool = KeyPool::builder(vec!["a", "b"], rate).clock(ManualClock::new()).build()?;
    /// assert_eq!(pool.max_uses(), 500);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn builder(keys: alloc::vec::Vec<K>, rate: Rate) -> KeyPoolBuilder<K, DefaultClock> {
        KeyPoolBuilder {
            keys,
            rate,
            buckets: None,
            clock: DefaultClock::default(),
        }
    }

    /// A pool for `keys` at `rate` per key with the default clock.
    ///
    /// # Errors
    ///
    /// As [`KeyPoolBuilder::build`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, Rate};
    ///
    /// let pool = KeyPool::new(vec!["k1".to_string()], Rate::per_second(5)?)?;
    /// assert_eq!(pool.try_next_key().unwrap(), "k1");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn new(keys: alloc::vec::Vec<K>, rate: Rate) -> Result<KeyPool<K>, ConfigError> {
        KeyPool::builder(keys, rate).build()
    }
}

impl<K, C> KeyPoolBuilder<K, C> {
    /// The clock to read in `try_next_key`. Default: [`DefaultClock`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, KeyPool, ManualClock, Rate};
    ///
    /// let clock = ManualClock::new();
    /// let pool = KeyPool::builder(vec!['x'], Rate::per_second(1)?).clock(clock.clone()).build()?;
    /// assert_eq!(pool.clock().now(), 0);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock<C2: Clock>(self, clock: C2) -> KeyPoolBuilder<K, C2> {
        KeyPoolBuilder {
            keys: self.keys,
            rate: self.rate,
            buckets: self.buckets,
            clock,
        }
    }

    /// Bounded memory: one strict [`SlidingWindow`] of `buckets` buckets per key instead of
    /// K·`max_uses` log slots. Memory no longer grows with `max_uses`; a key may be refused
    /// for up to one bucket width w = ⌈period / buckets⌉ longer than exactly necessary, never
    /// handed out over its budget (see [`KeyPool`], "Bounded memory").
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// // 1 use per 10 minutes per key, buckets of 1 minute.
    /// let pool = KeyPool::builder(vec!["a", "b"], Rate::new(1, Duration::from_secs(600))?)
    ///     .buckets(10)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(pool.try_next_key_at(0), Ok(&"a"));
    /// assert_eq!(pool.try_next_key_at(0), Ok(&"b"));
    /// // "a" was used in the bucket [0, 60 s); it is counted until that bucket leaves the
    /// // window, at 660 s − 1 ns.
    /// let d = pool.try_next_key_at(0).unwrap_err();
    /// assert_eq!(d.retry_after_nanos(), Some(660_000_000_000 - 1));
    /// assert_eq!(pool.try_next_key_at(660_000_000_000 - 1), Ok(&"a"));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn buckets(mut self, buckets: usize) -> Self {
        self.buckets = Some(buckets);
        self
    }
}

impl<K, C: Clock> KeyPoolBuilder<K, C> {
    /// Builds the pool, allocating K·`max_uses` slots of 8 bytes (or, with
    /// [`buckets(n)`](KeyPoolBuilder::buckets), K windows).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `keys` when the list is empty; `max_uses` when the rate's limit
    /// alone exceeds 2²⁸; `keys` when K·`max_uses` exceeds 2²⁸ slots (2 GiB) or the slots
    /// cannot be allocated (reported, never an abort).
    ///
    /// With [`buckets(n)`](KeyPoolBuilder::buckets): `buckets` as
    /// [`SlidingWindowBuilder::build`](crate::SlidingWindowBuilder::build) (0, above 65,536,
    /// or more than the period has nanoseconds); `max_uses` above 2,147,483,647; `keys` when
    /// the windows would take more than 2 GiB or cannot be allocated.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    ///
    /// let err = KeyPool::<&str, _>::builder(vec![], Rate::per_second(1)?)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.to_string(), "invalid keys = 0: must hold at least one key");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<KeyPool<K, C>, ConfigError> {
        let k = self.keys.len() as u64;
        if k == 0 {
            return Err(ConfigError::new(
                "keys",
                Value::Count(0),
                "must hold at least one key",
            ));
        }
        let max_uses = self.rate.limit();
        if let Some(buckets) = self.buckets {
            return build_windows(self.keys, self.rate, buckets, self.clock);
        }
        if max_uses > crate::sliding_log::MAX_SLOTS {
            return Err(ConfigError::new(
                "max_uses",
                Value::Count(u128::from(max_uses)),
                "must be at most 2^28 = 268435456 (8 bytes per use per key)",
            ));
        }
        // K·X ≤ 2^64 · 2^28 fits in u128. Too many slots is reported against the number of
        // keys (the rate's limit alone was checked above).
        let too_many = "keys × max_uses must be at most 2^28 = 268435456 slots (8 bytes each)";
        let total = u64::try_from(u128::from(k) * u128::from(max_uses)).unwrap_or(u64::MAX);
        let slots = new_slots(total, "keys", Value::Count(u128::from(k)), too_many)?;
        Ok(KeyPool {
            count: k,
            cool: cool_words(self.keys.len())?,
            keys: self.keys,
            store: Store::Log(SlidingLog::from_parts(slots, self.rate, self.clock)),
        })
    }
}

/// The bounded-memory pool: one window per key (`keys` is not empty).
fn build_windows<K, C>(
    keys: Vec<K>,
    rate: Rate,
    buckets: usize,
    clock: C,
) -> Result<KeyPool<K, C>, ConfigError> {
    let max_uses = rate.limit();
    if max_uses > (1 << 31) - 1 {
        return Err(ConfigError::new(
            "max_uses",
            Value::Count(u128::from(max_uses)),
            "must be at most 2147483647 with buckets (a window packs counts into 32 bits)",
        ));
    }
    // One builder, cloned per key: `SlidingWindow::builder` starts from the default clock,
    // which can be costly to create (a `QuantaClock`), and is replaced by `Unclocked` here.
    let builder = SlidingWindow::builder(rate)
        .buckets(buckets)
        .clock(Unclocked);
    let window = || KeyWindow::new(&builder);
    // The first window checks `buckets` (its errors name that field) before anything large
    // is allocated.
    let first = window()?;
    let k = keys.len();
    let value = Value::Count(k as u128);
    let per_key = KeyWindow::size_for(&builder)?;
    if per_key * k as u128 > MAX_WINDOW_BYTES {
        return Err(ConfigError::new(
            "keys",
            value,
            "keys × window size must be at most 2^31 bytes (2 GiB) with buckets",
        ));
    }
    let mut windows = Vec::new();
    // Reserve first, so a failed allocation is an error rather than an abort.
    windows
        .try_reserve_exact(k)
        .map_err(|_| ConfigError::new("keys", value, "cannot allocate that many windows"))?;
    windows.push(first);
    for _ in 1..k {
        windows.push(window()?);
    }
    Ok(KeyPool {
        count: k as u64,
        cool: cool_words(k)?,
        keys,
        store: Store::Windows(Box::new(Windows {
            cursor: CachePadded::new(AtomicU64::new(0)),
            windows: windows.into_boxed_slice(),
            rate,
            clock,
        })),
    })
}
