//! [`IntKeyedBuilder`]: the constructors of [`IntKeyed`], its settings, and the table's
//! allocation at build.

use super::ip::{v4_mask, v6_mask, DEFAULT_IPV4_PREFIX, DEFAULT_IPV6_PREFIX};
use super::*;

/// Builds an [`IntKeyed`]: see [`IntKeyed::builder`].
///
/// # Examples
///
/// ```
/// use hotlimit::{IntKeyed, ManualClock, Rate};
///
/// let limiter: IntKeyed<u32, _> = IntKeyed::builder(Rate::per_second(100)?)
///     .burst(10)
///     .capacity(1_000)
///     .clock(ManualClock::new())
///     .build()?;
/// assert_eq!(limiter.capacity(), 1_000);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct IntKeyedBuilder<K, C> {
    pub(super) rate: Rate,
    pub(super) burst: Option<u64>,
    pub(super) capacity: usize,
    pub(super) max_memory: usize,
    pub(super) clock: C,
    pub(super) ipv4_prefix: u8,
    pub(super) ipv6_prefix: u8,
    pub(super) _key: PhantomData<fn(K)>,
}

impl<K: IntKey> IntKeyed<K> {
    /// The default capacity: 100,000 keys.
    pub const DEFAULT_CAPACITY: usize = 100_000;
    /// The largest capacity: 2^31 keys (a table of 2^32 slots, 64 GiB).
    pub const MAX_CAPACITY: usize = 1 << 31;

    /// A builder for `rate` per key, with burst `rate.limit()`, capacity
    /// [`DEFAULT_CAPACITY`](IntKeyed::DEFAULT_CAPACITY) and the default clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    ///
    /// let limiter: IntKeyed<u64, _> = IntKeyed::builder(Rate::per_minute(60)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.burst(), 60);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn builder(rate: Rate) -> IntKeyedBuilder<K, DefaultClock> {
        IntKeyedBuilder {
            rate,
            burst: None,
            capacity: Self::DEFAULT_CAPACITY,
            max_memory: crate::memory::DEFAULT_MAX_MEMORY,
            clock: DefaultClock::default(),
            ipv4_prefix: DEFAULT_IPV4_PREFIX,
            ipv6_prefix: DEFAULT_IPV6_PREFIX,
            _key: PhantomData,
        }
    }

    /// A limiter with the defaults: burst `rate.limit()`, capacity 100,000, the default clock.
    ///
    /// # Errors
    ///
    /// As [`IntKeyedBuilder::build`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, Rate};
    ///
    /// let per_user: IntKeyed<u64> = IntKeyed::new(Rate::per_second(10)?)?;
    /// assert!(per_user.try_acquire(42).is_ok());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn new(rate: Rate) -> Result<IntKeyed<K>, ConfigError> {
        Self::builder(rate).build()
    }
}

impl<K, C> IntKeyedBuilder<K, C> {
    /// The most permits a key can take at once. Default: the rate's `limit`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    ///
    /// let limiter: IntKeyed<u64, _> = IntKeyed::builder(Rate::per_second(100)?)
    ///     .burst(1)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.try_acquire(7).is_ok());
    /// assert!(limiter.try_acquire(7).is_err());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn burst(mut self, burst: u64) -> Self {
        self.burst = Some(burst);
        self
    }

    /// The most keys held at once. Default: 100,000. The table (allocated at build) has the
    /// power of two ≥ 2·`capacity` slots of 16 bytes up to a capacity of 32,768 (at most
    /// 1 MiB), and about 1.3 slots per key of capacity above it (20.8 bytes a key; see
    /// [`IntKeyed`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    ///
    /// let limiter: IntKeyed<u64, _> = IntKeyed::builder(Rate::per_second(1)?)
    ///     .capacity(2)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.try_acquire(1).is_ok());
    /// assert!(limiter.try_acquire(2).is_ok());
    /// assert!(limiter.try_acquire(3).is_err()); // full of busy keys
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// The clock to read in `try_acquire`. Default: [`DefaultClock`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    ///
    /// let clock = ManualClock::new();
    /// let limiter: IntKeyed<u64, _> =
    ///     IntKeyed::builder(Rate::per_second(1)?).clock(clock.clone()).build()?;
    /// # let _ = limiter;
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock<C2: Clock>(self, clock: C2) -> IntKeyedBuilder<K, C2> {
        IntKeyedBuilder {
            rate: self.rate,
            burst: self.burst,
            capacity: self.capacity,
            max_memory: self.max_memory,
            clock,
            ipv4_prefix: self.ipv4_prefix,
            ipv6_prefix: self.ipv6_prefix,
            _key: PhantomData,
        }
    }

    /// The most memory the table may take, in bytes, allocated at `build()`: 64 bytes a bucket,
    /// the power of two ≥ 2 × `capacity` slots (four a bucket) up to a capacity of 32,768, and
    /// ⌈`capacity` / 3.4⌉ + ⌈`capacity` · 0.03⌉ buckets above it (20.8 bytes per key of
    /// capacity). Default: 1 GiB (a `capacity` of up to 51,762,733). `build()` reports a larger
    /// table as a
    /// [`ConfigError`] naming `capacity` and the bytes, and a table whose allocation fails
    /// likewise: never an abort.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    ///
    /// let err = IntKeyed::<u64>::builder(Rate::per_second(1)?)
    ///     .capacity(1 << 31)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "capacity");
    /// assert!(err.to_string().contains("needs 44546390272 bytes"), "{err}");
    /// let ok = IntKeyed::<u64>::builder(Rate::per_second(1)?)
    ///     .capacity(1 << 20)
    ///     .max_memory(32 << 20)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(ok.capacity(), 1 << 20);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn max_memory(mut self, bytes: usize) -> Self {
        self.max_memory = bytes;
        self
    }
}

impl<K: IntKey, C: Clock> IntKeyedBuilder<K, C> {
    /// Builds the limiter and allocates its table.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `rate` (emission interval under 1 ns), `burst` (0, or burst ×
    /// interval over 2^60 − 1 ns), `ipv4_prefix` (not 1–32), `ipv6_prefix` (not 1–64) or
    /// `capacity` (0, over
    /// [`MAX_CAPACITY`](IntKeyed::MAX_CAPACITY), a table over
    /// [`max_memory`](IntKeyedBuilder::max_memory), or a table that cannot be allocated).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    ///
    /// let err = IntKeyed::<u64>::builder(Rate::per_second(1)?)
    ///     .capacity(0)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "capacity");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<IntKeyed<K, C>, ConfigError> {
        self.build_with(None)
    }

    /// [`build`](IntKeyedBuilder::build) with the layout forced (`Some(true)`: dense, with a
    /// secondary area, whatever the size; for the loom models' small tables) or chosen by the
    /// size (`None`).
    pub(super) fn build_with(self, dense: Option<bool>) -> Result<IntKeyed<K, C>, ConfigError> {
        let params = super::change::checked_params(self.rate, self.burst)?;
        if self.capacity == 0 || self.capacity > IntKeyed::<K>::MAX_CAPACITY {
            return Err(ConfigError::new(
                "capacity",
                Value::Count(self.capacity as u128),
                "must be between 1 and 2^31",
            ));
        }
        if !(1..=32).contains(&self.ipv4_prefix) {
            return Err(ConfigError::new(
                "ipv4_prefix",
                Value::Count(u128::from(self.ipv4_prefix)),
                "must be between 1 and 32 bits",
            ));
        }
        if !(1..=64).contains(&self.ipv6_prefix) {
            return Err(ConfigError::new(
                "ipv6_prefix",
                Value::Count(u128::from(self.ipv6_prefix)),
                "must be between 1 and 64 bits (a key is 64 bits; /48, /56 and /64 are usual)",
            ));
        }
        let (primary, secondary) = layout(self.capacity, dense);
        let buckets = primary + secondary;
        let need = core::mem::size_of::<Bucket>() as u128 * buckets as u128;
        let capacity = self.capacity as u128;
        crate::memory::within("capacity", capacity, need, self.max_memory)?;
        let mut table = alloc::vec::Vec::new();
        // Reserve first, so that a failed allocation is an error rather than an abort.
        table
            .try_reserve_exact(buckets)
            .map_err(|_| crate::memory::cannot_allocate("capacity", capacity, need))?;
        table.extend((0..buckets).map(|_| Bucket(core::array::from_fn(|_| AtomicU128::new(0)))));
        let table = table.into_boxed_slice();
        Ok(IntKeyed {
            table,
            primary,
            secondary,
            seed: random_seed(),
            params: [
                KeyParams::new(params, self.rate),
                KeyParams::new(params, self.rate),
            ],
            current: AtomicU64::new(0),
            committers: [
                CachePadded::new(AtomicU64::new(0)),
                CachePadded::new(AtomicU64::new(0)),
            ],
            changes: AtomicU64::new(0),
            capacity: self.capacity as u64,
            base: self.clock.now(),
            len: CachePadded::new(AtomicU64::new(0)),
            tags: CachePadded::new(AtomicU64::new(0)),
            floor: CachePadded::new(AtomicU64::new(0)),
            clock: self.clock,
            #[cfg(hotlimit_loom)]
            plant: Plant::None,
            v4_mask: v4_mask(self.ipv4_prefix),
            v6_mask: v6_mask(self.ipv6_prefix),
            _key: PhantomData,
        })
    }
}

/// The table's buckets for `capacity` keys, `(primary, secondary)`. A table whose sparse
/// layout (the power of two ≥ 2·`capacity` slots, no secondary area: at most half full, so a
/// new key rarely finds both its buckets full) fits in [`DENSE_ABOVE`] keeps it: the cache
/// holds it whatever its load, and lookups are faster where most keys sit at their home way.
/// A larger one is dense: primary slots for `capacity` / 0.85 keys and a secondary area of
/// 0.12 slots per key of capacity for the keys whose two primary buckets are full (about 6 %
/// of them at capacity), 20.8 bytes per key of capacity instead of 32 to 64. The secondary
/// area keeps refusals below capacity rarer than the sparse layout's (guide).
/// `capacity` ≤ [`IntKeyed::MAX_CAPACITY`] (2^31), so every product fits in a `u64`.
pub(super) fn layout(capacity: usize, dense: Option<bool>) -> (usize, usize) {
    let cap = capacity as u64;
    let sparse = (2 * cap).next_power_of_two().max(WAYS as u64) / WAYS as u64;
    if !dense.unwrap_or(sparse * BUCKET_BYTES > DENSE_ABOVE) {
        return (sparse as usize, 0);
    }
    // ⌈cap / (0.85 · WAYS)⌉ and ⌈cap · 0.12 / WAYS⌉ buckets.
    let primary = (cap * 20).div_ceil(17 * WAYS as u64);
    let secondary = (cap * 12).div_ceil(100 * WAYS as u64);
    (primary as usize, secondary as usize)
}

/// Two random 64-bit hash seeds (from std's per-process random keys), so that nobody can
/// choose keys that share buckets. Under loom without `std`: fixed (the models need
/// determinism, and choose their keys knowing the table).
pub(super) fn random_seed() -> [u64; 2] {
    #[cfg(feature = "std")]
    {
        use std::hash::{BuildHasher, RandomState};
        let s = RandomState::new();
        [s.hash_one(0x5EED_u64), s.hash_one(0xF00D_u64) | 1]
    }
    #[cfg(not(feature = "std"))]
    {
        [0x243F_6A88_85A3_08D3, 0x1319_8A2E_0370_7345]
    }
}
