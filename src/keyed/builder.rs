//! [`KeyedBuilder`]: the constructors of [`Keyed`] for each state, the settings, and the
//! checks at build (capacity, the memory budget, the inner limiter's own validation).

use core::fmt;
use core::hash::Hash;

use crossbeam_utils::CachePadded;

use super::map::{KeyTable, Keyed, Map, WhenFull};
use super::word::TatWord;
use super::KeyedState;
use crate::clock::{Clock, DefaultClock, NoClock};
use crate::error::{ConfigError, Value};
use crate::gcra::Gcra;
use crate::gcra_pair::GcraPair;
use crate::multi_window::{MultiWindow, MultiWindowBuilder};
use crate::rate::Rate;
use crate::sliding_log::SlidingLog;
use crate::sliding_window::SlidingWindow;
use crate::sync::{Arc, AtomicU64};

/// Builds a [`Keyed`]: see [`Keyed::gcra`].
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
///
/// let per_ip: Keyed<std::net::IpAddr, Gcra, ManualClock> = Keyed::gcra(Rate::per_minute(60)?)
///     .burst(10)
///     .capacity(1_000_000)
///     .clock(ManualClock::new())
///     .build()?;
/// assert_eq!(per_ip.capacity(), 1_000_000);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[must_use = "a builder does nothing until `build()` is called"]
pub struct KeyedBuilder<K, L, C> {
    rate: Rate,
    burst: Option<u64>,
    /// A `GcraPair`'s second rate and burst (`None` for every other limiter).
    second: Option<(Rate, Option<u64>)>,
    /// A `MultiWindow`'s windows (`None` for every other limiter).
    windows: Option<MultiWindowBuilder<NoClock>>,
    capacity: usize,
    max_memory: usize,
    when_full: WhenFull,
    clock: C,
    _marker: core::marker::PhantomData<fn() -> (K, L)>,
}

impl<K, L, C: fmt::Debug> fmt::Debug for KeyedBuilder<K, L, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedBuilder")
            .field("rate", &self.rate)
            .field("burst", &self.burst)
            .field("second", &self.second)
            .field("capacity", &self.capacity)
            .field("when_full", &self.when_full)
            .field("clock", &self.clock)
            .finish()
    }
}

/// The bytes one key can take in the map under `cfg`: its state, the key, the override pointer
/// and the map's entry (papaya boxes each entry: measured 70 bytes per `u64` GCRA key in all,
/// when GCRA states lived in the map).
/// Where states sit inline, only keys with a rate override have an entry (and a slot).
pub(super) fn key_bytes<K, L: KeyedState>(cfg: &L::Config) -> u128 {
    const MAP_ENTRY: u128 = 56;
    L::bytes_per_state(cfg) + core::mem::size_of::<K>() as u128 + MAP_ENTRY
}

/// The bytes `capacity` keys can take: the inline table (allocated at build; none for logs and
/// windows) and the map, every key in it (as it is for logs and windows, and, where states sit
/// inline, if every key had a rate override).
pub(super) fn table_bytes<K, L: KeyedState>(capacity: u64, cfg: &L::Config) -> u128 {
    let inline = if <L::Word as TatWord>::free().is_some() {
        KeyTable::<K, L>::bytes(capacity)
    } else {
        0
    };
    inline + u128::from(capacity) * key_bytes::<K, L>(cfg)
}

impl<K, L> KeyedBuilder<K, L, DefaultClock> {
    /// The defaults every constructor starts from: burst = `limit`, capacity 100,000,
    /// 1 GiB of memory, [`WhenFull::DenyNewKeys`], the default clock.
    fn defaults(rate: Rate) -> Self {
        KeyedBuilder {
            rate,
            burst: None,
            second: None,
            windows: None,
            capacity: DEFAULT_CAPACITY,
            max_memory: crate::memory::DEFAULT_MAX_MEMORY,
            when_full: WhenFull::DenyNewKeys,
            clock: DefaultClock::default(),
            _marker: core::marker::PhantomData,
        }
    }
}

/// The default capacity: 100,000 keys.
const DEFAULT_CAPACITY: usize = 100_000;

impl<K> Keyed<K, Gcra> {
    /// A builder for per-key [`Gcra`] limits at `rate` (burst `rate.limit()`, capacity
    /// 100,000 keys, [`WhenFull::DenyNewKeys`], the default clock).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, Rate};
    ///
    /// let per_token = Keyed::<u64, Gcra>::gcra(Rate::per_second(100)?).build()?;
    /// assert!(per_token.try_acquire(&42).is_ok());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn gcra(rate: Rate) -> KeyedBuilder<K, Gcra, DefaultClock> {
        KeyedBuilder::defaults(rate)
    }
}

impl<K> Keyed<K, SlidingLog> {
    /// A builder for per-key [`SlidingLog`] limits at `rate`: each key gets the exact
    /// sliding window (at most `limit` in every window of `period`), at a cost of a ring of
    /// `limit` timestamps per key (8 bytes × `limit` + about 150 bytes, measured; a sweep
    /// reads each key's ring, so it is O(capacity × limit)). Admissions also pass a per-key
    /// gate word (two RMWs) that lets an evictor wait out the admitters inside the log.
    /// Capacity 100,000 keys, [`WhenFull::DenyNewKeys`], the default clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Keyed, ManualClock, Rate, SlidingLog};
    ///
    /// let k: Keyed<u32, SlidingLog, ManualClock> = Keyed::sliding_log(Rate::per_second(2)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(k.try_acquire_at(&1, 0).is_ok());
    /// assert!(k.try_acquire_at(&1, 400_000_000).is_ok());
    /// // The grant at 0 leaves the window at 1 s.
    /// let d = k.try_acquire_at(&1, 900_000_000).unwrap_err();
    /// assert_eq!(d.retry_after_nanos(), Some(100_000_000));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn sliding_log(rate: Rate) -> KeyedBuilder<K, SlidingLog, DefaultClock> {
        KeyedBuilder::defaults(rate)
    }
}

impl<K, C> KeyedBuilder<K, Gcra, C> {
    /// Every key's burst (see [`GcraBuilder::burst`](crate::GcraBuilder::burst)). Default:
    /// the rate's `limit`. Keys with a [`set_rate`](Keyed::set_rate) override get burst =
    /// their rate's `limit`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
    ///
    /// let k: Keyed<u8, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(100)?)
    ///     .burst(1)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(k.try_acquire(&1).is_ok());
    /// assert!(k.try_acquire(&1).is_err());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn burst(mut self, burst: u64) -> Self {
        self.burst = Some(burst);
        self
    }
}

impl<K, L, C> KeyedBuilder<K, L, C> {
    /// The most keys held at once (≥ 1). Default: 100,000.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
    ///
    /// let k: Keyed<u32, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(1)?)
    ///     .capacity(2)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// k.try_acquire(&1)?;
    /// k.try_acquire(&2)?;
    /// assert!(k.try_acquire(&3).is_err()); // full, and keys 1 and 2 are busy for 1 s
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// What to do when the table is full and too few keys are idle. Default:
    /// [`WhenFull::DenyNewKeys`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, ManualClock, Rate, WhenFull};
    ///
    /// let k: Keyed<u32, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(1)?)
    ///     .capacity(8)
    ///     .when_full(WhenFull::EvictSoonestIdle)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// for key in 0..100 {
    ///     k.try_acquire(&key)?; // busy keys are evicted to make room
    /// }
    /// assert!(k.len() <= 8);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn when_full(mut self, when_full: WhenFull) -> Self {
        self.when_full = when_full;
        self
    }

    /// The most memory the keys' states may take, in bytes: `capacity` × the bytes of one
    /// key (the key, its state and about 56 bytes of map entry; a [`SlidingLog`] state holds
    /// 8 bytes × `limit`, a [`SlidingWindow`] its ring; keys that own heap memory, such as
    /// `String`, add theirs). Default: 1 GiB. `build()`, [`set_rate`](Keyed::set_rate) and
    /// [`set_default_rate`](Keyed::set_default_rate) refuse a configuration whose worst case
    /// exceeds it, so that no request ever allocates a state that was not accounted for.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Keyed, ManualClock, Rate, SlidingLog};
    ///
    /// // 100,000 keys × a log of 10,000,000 stamps would be 8 TB.
    /// let err = Keyed::<u64, SlidingLog>::sliding_log(Rate::per_second(10_000_000)?)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "capacity");
    /// let k: Keyed<u64, SlidingLog, ManualClock> = Keyed::sliding_log(Rate::per_second(1_000)?)
    ///     .capacity(1_000)
    ///     .max_memory(16 << 20)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(k.capacity(), 1_000);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn max_memory(mut self, bytes: usize) -> Self {
        self.max_memory = bytes;
        self
    }

    /// The clock to read in `try_acquire`. Default: [`DefaultClock`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
    ///
    /// let clock = ManualClock::new();
    /// let k: Keyed<u32, Gcra, ManualClock> =
    ///     Keyed::gcra(Rate::per_second(1)?).clock(clock.clone()).build()?;
    /// # let _ = k;
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock<C2: Clock>(self, clock: C2) -> KeyedBuilder<K, L, C2> {
        KeyedBuilder {
            rate: self.rate,
            burst: self.burst,
            second: self.second,
            windows: self.windows,
            capacity: self.capacity,
            max_memory: self.max_memory,
            when_full: self.when_full,
            clock,
            _marker: core::marker::PhantomData,
        }
    }
}

impl<K: Hash + Eq + Clone + 'static, L: KeyedState, C: Clock> KeyedBuilder<K, L, C> {
    /// Builds the keyed limiter.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when `capacity` is 0, or when `capacity` keys would not fit in
    /// [`max_memory`](KeyedBuilder::max_memory) (field `capacity`, with the bytes), or as
    /// the inner limiter's builder (for GCRA: fields `rate` and `burst`).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, ManualClock, Rate};
    ///
    /// let err = Keyed::<u32, Gcra>::gcra(Rate::per_second(1)?)
    ///     .capacity(0)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.to_string(), "invalid capacity = 0: must be at least 1 key");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<Keyed<K, L, C>, ConfigError> {
        if self.capacity == 0 {
            return Err(ConfigError::new(
                "capacity",
                Value::Count(0),
                "must be at least 1 key",
            ));
        }
        let cfg = Arc::new(match &self.windows {
            Some(windows) => L::config_windows(windows)?,
            None => L::config_with(self.rate, self.burst, self.second)?,
        });
        let capacity = self.capacity as u64;
        let need = table_bytes::<K, L>(capacity, &cfg);
        crate::memory::within("capacity", u128::from(capacity), need, self.max_memory)?;
        Ok(Keyed {
            // `Gcra` and `GcraPair` keep their states inline, their times after the clock's
            // reading now (each segment allocated with its first key); logs and windows have
            // no table.
            table: KeyTable::new(capacity, super::seed::table_hasher(), self.clock.now()),
            // Blocking resizes: a lookup never has to consult a half-migrated old table
            // (measured: 1.4x faster lookups than the incremental default).
            map: papaya::HashMap::builder()
                .hasher(Default::default())
                .resize_mode(papaya::ResizeMode::Blocking)
                .build(),
            overrides: Map::default(),
            default: Map::default(),
            n_overrides: CachePadded::new(AtomicU64::new(0)),
            rates: CachePadded::new(AtomicU64::new(0)),
            cfg,
            capacity: self.capacity as u64,
            max_memory: self.max_memory,
            len: CachePadded::new(AtomicU64::new(0)),
            floor: CachePadded::new(AtomicU64::new(0)),
            sweep: CachePadded::new(AtomicU64::new(0)),
            when_full: self.when_full,
            clock: self.clock,
        })
    }
}

impl<K> Keyed<K, SlidingWindow> {
    /// A builder for per-key strict [`SlidingWindow`] limits at `rate`: each key gets the
    /// window's hard cap (at most `limit` in every window of `period`, a false denial only if
    /// `limit` were granted within `period` + one bucket width), in memory independent of
    /// `limit`: the window's ring of snapshots (the power of two ≥ `buckets + 1`, 8 bytes
    /// each) plus about 150 bytes of header and gate: 330 bytes per `u64` key with 10
    /// buckets, map entry included (RSS growth over 100,000 keys, measured with
    /// `cargo bench -p hotlimit-benches --bench keyed_compare -- mem-window`; see BENCHMARKS.md).
    /// Admissions pass a per-key gate word (two RMWs), as with
    /// [`sliding_log`](Keyed::sliding_log). 10 buckets (see
    /// [`buckets`](KeyedBuilder::buckets)), capacity 100,000 keys,
    /// [`WhenFull::DenyNewKeys`], the default clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Keyed, ManualClock, Rate, SlidingWindow};
    ///
    /// let k: Keyed<u32, SlidingWindow, ManualClock> =
    ///     Keyed::sliding_window(Rate::per_second(2)?).clock(ManualClock::new()).build()?;
    /// assert!(k.try_acquire_n_at(&1, 2, 0).is_ok());
    /// // The bucket [0, 100 ms) is counted whole until the window stops touching it.
    /// let d = k.try_acquire_at(&1, 500_000_000).unwrap_err();
    /// assert_eq!(d.retry_after_nanos(), Some(599_999_999));
    /// assert!(k.try_acquire_at(&2, 0).is_ok()); // every key has its own window
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn sliding_window(rate: Rate) -> KeyedBuilder<K, SlidingWindow, DefaultClock> {
        KeyedBuilder::defaults(rate)
    }
}

impl<K, C> KeyedBuilder<K, SlidingWindow, C> {
    /// Every key's bucket count (see
    /// [`SlidingWindowBuilder::buckets`](crate::SlidingWindowBuilder::buckets)). Default: 10.
    /// Rate overrides and [`set_default_rate`](Keyed::set_default_rate) keep it.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Keyed, ManualClock, Rate, SlidingWindow};
    ///
    /// let k: Keyed<u8, SlidingWindow, ManualClock> =
    ///     Keyed::sliding_window(Rate::per_second(1)?)
    ///     .buckets(4)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(k.try_acquire_at(&1, 0).is_ok());
    /// // 250 ms buckets: the grant at 0 is counted until 1.25 s − 1 ns.
    /// let d = k.try_acquire_at(&1, 0).unwrap_err();
    /// assert_eq!(d.retry_after_nanos(), Some(1_249_999_999));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn buckets(mut self, buckets: usize) -> Self {
        // The one per-algorithm knob (GCRA's burst) carries the bucket count here.
        self.burst = Some(buckets as u64);
        self
    }
}

impl<K> Keyed<K, GcraPair> {
    /// A builder for per-key [`GcraPair`] limits: every key held to `first` AND `second`, all
    /// or nothing, its state one 16-byte word updated by one 128-bit CAS (bursts the rates'
    /// limits, capacity 100,000 keys, [`WhenFull::DenyNewKeys`], the default clock).
    /// [`set_rate`](Keyed::set_rate) and [`set_default_rate`](Keyed::set_default_rate) take
    /// one rate, so on a pair they return an error (field `rate`): a pair's rates are fixed at
    /// build.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, Keyed, ManualClock, Rate};
    ///
    /// // Per user: 2 per second AND 3 per minute.
    /// let k: Keyed<u32, GcraPair, ManualClock> =
    ///     Keyed::gcra_pair(Rate::per_second(2)?, Rate::per_minute(3)?)
    ///         .clock(ManualClock::new())
    ///         .build()?;
    /// assert!(k.try_acquire_n_at(&7, 2, 0).is_ok());
    /// assert!(k.try_acquire_at(&7, 1_000_000_000).is_ok()); // the minute's third
    /// let d = k.try_acquire_at(&7, 2_000_000_000).unwrap_err(); // the minute is spent
    /// assert_eq!(d.retry_after_nanos(), Some(18_000_000_000));
    /// assert!(k.try_acquire_at(&8, 2_000_000_000).is_ok()); // another user
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn gcra_pair(first: Rate, second: Rate) -> KeyedBuilder<K, GcraPair, DefaultClock> {
        let mut b = KeyedBuilder::defaults(first);
        b.second = Some((second, None));
        b
    }
}

impl<K> Keyed<K, MultiWindow> {
    /// A builder for per-key [`MultiWindow`] limits: every key held to all of `windows` (hard
    /// windows, each a ring or a log), all or nothing (capacity 100,000 keys,
    /// [`WhenFull::DenyNewKeys`], the default clock; the clock `windows` was given is not
    /// used). The windows are fixed at build: [`set_rate`](Keyed::set_rate) and
    /// [`set_default_rate`](Keyed::set_default_rate) return an error (field `rate`). Memory
    /// per key: the map's entry and key, 16 bytes of gate, and the windows (see
    /// [`MultiWindow`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Keyed, ManualClock, MultiWindow, Rate};
    ///
    /// // Per user: 2 per second AND 3 per minute, hard windows.
    /// let windows = MultiWindow::builder()
    ///     .exact(Rate::per_second(2)?)
    ///     .window(Rate::per_minute(3)?);
    /// let k: Keyed<u32, MultiWindow, ManualClock> =
    ///     Keyed::multi_window(windows).clock(ManualClock::new()).build()?;
    /// assert!(k.try_acquire_n_at(&7, 2, 0).is_ok());
    /// assert!(k.try_acquire_at(&7, 1_000_000_000).is_ok()); // the minute's third
    /// assert!(k.try_acquire_at(&7, 2_000_000_000).is_err()); // the minute is spent
    /// assert!(k.try_acquire_at(&8, 2_000_000_000).is_ok()); // another user
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn multi_window<C0>(
        windows: MultiWindowBuilder<C0>,
    ) -> KeyedBuilder<K, MultiWindow, DefaultClock> {
        // The rate is never used: `build` takes the windows.
        let first = windows.first_rate();
        let mut b = KeyedBuilder::defaults(first);
        b.windows = Some(windows.unclocked());
        b
    }
}

impl<K, C> KeyedBuilder<K, GcraPair, C> {
    /// Every key's first burst (see
    /// [`GcraPairBuilder::first_burst`](crate::GcraPairBuilder::first_burst)). Default: the
    /// first rate's `limit`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, Keyed, ManualClock, Rate};
    ///
    /// let k: Keyed<u8, GcraPair, ManualClock> =
    ///     Keyed::gcra_pair(Rate::per_second(100)?, Rate::per_hour(1_000)?)
    ///         .first_burst(1)
    ///         .clock(ManualClock::new())
    ///         .build()?;
    /// assert!(k.try_acquire(&1).is_ok());
    /// assert!(k.try_acquire(&1).is_err());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn first_burst(mut self, burst: u64) -> Self {
        self.burst = Some(burst);
        self
    }

    /// Every key's second burst (see
    /// [`GcraPairBuilder::second_burst`](crate::GcraPairBuilder::second_burst)). Default: the
    /// second rate's `limit`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, Keyed, ManualClock, Rate};
    ///
    /// let k: Keyed<u8, GcraPair, ManualClock> =
    ///     Keyed::gcra_pair(Rate::per_second(100)?, Rate::per_hour(1_000)?)
    ///         .second_burst(2)
    ///         .clock(ManualClock::new())
    ///         .build()?;
    /// assert!(k.try_acquire_n(&1, 2).is_ok());
    /// assert!(k.try_acquire(&1).is_err());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn second_burst(mut self, burst: u64) -> Self {
        if let Some((_, b)) = &mut self.second {
            *b = Some(burst);
        }
        self
    }
}
