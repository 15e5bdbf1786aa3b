//! [`KeyPool`]: hands out API keys, each used at most `max_uses` times in any window of
//! `period`.
//!
//! K keys with X uses each are one [`SlidingLog`] of K·X slots in which slot i belongs to key
//! i mod K. The log hands out slots in cyclic order, so keys come out in cyclic order too, and
//! each key's X slots carry the log's guarantee: X grants per window for that key, exactly,
//! with no per-key state on the hot path. Cycling is optimal: the key used longest ago is
//! always the next to become free (the argument is in the [`guide`](crate::guide)).

use core::fmt;

use crate::error::{ConfigError, Value};
use crate::sliding_log::{new_slots, SlidingLog};
use crate::{Clock, DefaultClock, Denied, Rate};

/// A pool of API keys, each usable at most `max_uses` times in any window of `period`:
/// [`get_next_key`](KeyPool::get_next_key) returns a key that may be used now, or how long to
/// wait.
///
/// # Guarantee
///
/// With `rate = Rate::new(max_uses, period)` and K keys:
///
/// - **No key is handed out more than `max_uses` times in any window (t − period, t]**,
///   counting each hand-out at the `now` of its call, under any concurrency.
/// - **For a sequential caller a request is denied only when every key has used its whole
///   budget** in the window (K·`max_uses` hand-outs in the last `period`), and `retry_after` is
///   exactly when the first key becomes usable again; waiting that long and asking again
///   succeeds. Under concurrency a request may be denied while a key is free, never granted
///   when none is.
/// - Keys are handed out in the order given, cyclically.
///
/// Memory: 8 bytes per key per use (K·`max_uses` slots), at most 2²⁸ slots. Time that goes
/// backwards never frees a key (as [`SlidingLog`]).
///
/// # Examples
///
/// ```
/// use hotlimit::{KeyPool, ManualClock, Rate};
/// use std::time::Duration;
///
/// // Each key: at most 2 calls per minute.
/// let clock = ManualClock::new();
/// let pool = KeyPool::builder(vec!["key-a", "key-b"], Rate::per_minute(2)?)
///     .clock(clock.clone())
///     .build()?;
/// let used: Vec<&str> = (0..4).map(|_| *pool.get_next_key().unwrap()).collect();
/// assert_eq!(used, ["key-a", "key-b", "key-a", "key-b"]);
/// let denied = pool.get_next_key().unwrap_err();
/// assert_eq!(denied.retry_after(), Some(Duration::from_secs(60)));
/// clock.advance(Duration::from_secs(60));
/// assert_eq!(*pool.get_next_key()?, "key-a");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct KeyPool<K, C = DefaultClock> {
    keys: alloc::vec::Vec<K>,
    /// K as a u64 (≥ 1).
    count: u64,
    /// K·max_uses slots; slot i belongs to key i mod K.
    log: SlidingLog<C>,
}

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
    /// assert_eq!(pool.get_next_key().unwrap(), "k1");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn new(keys: alloc::vec::Vec<K>, rate: Rate) -> Result<KeyPool<K>, ConfigError> {
        KeyPool::builder(keys, rate).build()
    }
}

impl<K, C> KeyPoolBuilder<K, C> {
    /// The clock to read in `get_next_key`. Default: [`DefaultClock`].
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
            clock,
        }
    }
}

impl<K, C: Clock> KeyPoolBuilder<K, C> {
    /// Builds the pool, allocating K·`max_uses` slots of 8 bytes.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `keys` when the list is empty; `max_uses` when the rate's limit
    /// alone exceeds 2²⁸; `keys` when K·`max_uses` exceeds 2²⁸ slots (2 GiB) or the slots
    /// cannot be allocated (reported, never an abort).
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
            keys: self.keys,
            log: SlidingLog::from_parts(slots, self.rate, self.clock),
        })
    }
}

impl<K, C> KeyPool<K, C> {
    /// The key to use at time `now` (nanoseconds on this pool's clock), or how long to wait.
    /// This is the algorithm; [`get_next_key`](KeyPool::get_next_key) is this with the clock
    /// read.
    ///
    /// # Errors
    ///
    /// [`Denied`] when every key has used its budget in the window; `retry_after` is when the
    /// first key becomes usable. At `now == u64::MAX` (the clock's range exhausted) the denial
    /// has `retry_after() == None`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    ///
    /// let pool = KeyPool::builder(vec!["a", "b"], Rate::per_second(1)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(pool.get_next_key_at(0), Ok(&"a"));
    /// assert_eq!(pool.get_next_key_at(300_000_000), Ok(&"b"));
    /// let d = pool.get_next_key_at(500_000_000).unwrap_err();
    /// assert_eq!(d.retry_after_nanos(), Some(500_000_000)); // "a" is free again at 1 s
    /// assert_eq!(pool.get_next_key_at(1_000_000_000), Ok(&"a"));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn get_next_key_at(&self, now: u64) -> Result<&K, Denied> {
        let index = self.log.acquire_slots(1, now)?;
        // Slot index % (K·X) belongs to key (index % (K·X)) % K = index % K, as K divides K·X.
        // `index % K < K = keys.len()`, so it fits in usize and the lookup is in bounds.
        Ok(&self.keys[(index % self.count) as usize])
    }

    /// The keys, in the order they are handed out.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    /// let pool = KeyPool::builder(vec![7, 8], Rate::per_second(1)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(pool.keys(), &[7, 8]);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn keys(&self) -> &[K] {
        &self.keys
    }

    /// The most times one key is handed out in any window of `period`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    /// let pool = KeyPool::builder(vec![7, 8], Rate::per_hour(40)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(pool.max_uses(), 40);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn max_uses(&self) -> u64 {
        self.log.rate().limit()
    }

    /// The per-key rate: `max_uses` per `period`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    /// let rate = Rate::per_minute(3)?;
    /// let pool = KeyPool::builder(vec![7, 8], rate).clock(ManualClock::new()).build()?;
    /// assert_eq!(pool.rate(), rate);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn rate(&self) -> Rate {
        self.log.rate()
    }

    /// The pool's clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, KeyPool, ManualClock, Rate};
    /// let pool = KeyPool::builder(vec![7], Rate::per_minute(3)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(pool.clock().now(), 0);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        self.log.clock()
    }
}

impl<K, C: Clock> KeyPool<K, C> {
    /// The key to use now, or how long to wait:
    /// [`get_next_key_at`](KeyPool::get_next_key_at) with the clock read.
    ///
    /// # Errors
    ///
    /// [`Denied`] when every key has used its budget in the last `period`; `retry_after` is
    /// when the first key becomes usable again.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let pool = KeyPool::builder(vec!["a"], Rate::per_second(1)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(pool.get_next_key(), Ok(&"a"));
    /// assert_eq!(pool.get_next_key().unwrap_err().retry_after(), Some(Duration::from_secs(1)));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn get_next_key(&self) -> Result<&K, Denied> {
        self.get_next_key_at(self.log.clock().now())
    }
}

impl<K: fmt::Debug, C> fmt::Debug for KeyPool<K, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyPool")
            .field("keys", &self.keys)
            .field("log", &self.log)
            .finish()
    }
}
