//! [`KeyPool`]: hands out API keys, each used at most `max_uses` times in any window of
//! `period`.
//!
//! K keys with X uses each are one [`SlidingLog`] of K·X slots in which slot i belongs to key
//! i mod K. The log hands out slots in cyclic order, so keys come out in cyclic order too, and
//! each key's X slots carry the log's guarantee: X grants per window for that key, exactly,
//! with no per-key state on the hot path. Cycling is optimal: the key used longest ago is
//! always the next to become free (the argument is in the [`guide`](crate::guide)).
//!
//! With [`buckets(n)`](KeyPoolBuilder::buckets) each key instead gets its own strict
//! [`SlidingWindow`] of n buckets (memory independent of `max_uses`), and a shared cursor
//! picks which key to try: the windows alone enforce every key's budget, the cursor only keeps
//! the rotation fair.

use core::fmt;

use alloc::boxed::Box;
use alloc::vec::Vec;
use crossbeam_utils::CachePadded;

use crate::clock::{Clock, DefaultClock};
use crate::error::Denied;
use crate::error::{ConfigError, Value};
use crate::rate::Rate;
use crate::sliding_log::{new_slots, SlidingLog};
use crate::sliding_window::KeyWindow;
use crate::sliding_window::SlidingWindow;
use crate::sync::{AtomicU64, Backoff, Ordering};

/// The inner windows' clock: never read (the pool calls their `*_at` methods with its own
/// `now`), zero-sized.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Unclocked;

impl Clock for Unclocked {
    #[inline]
    fn now(&self) -> u64 {
        0
    }
}

/// The most bytes the bounded-memory variant allocates (2 GiB, as the log).
const MAX_WINDOW_BYTES: u128 = 1 << 31;

/// How a pool counts uses.
enum Store<C> {
    /// K·max_uses slots; slot i belongs to key i mod K.
    Log(SlidingLog<C>),
    /// One strict window per key, plus the cursor of the rotation.
    Windows(Box<Windows<C>>),
}

struct Windows<C> {
    /// The next key to try is `cursor mod K`; advanced by one after each grant.
    cursor: CachePadded<AtomicU64>,
    windows: Box<[KeyWindow]>,
    rate: Rate,
    clock: C,
}

/// A pool of API keys, each usable at most `max_uses` times in any window of `period`:
/// [`get_next_key`](KeyPool::get_next_key) returns a key that may be used now, or how long to
/// wait.
///
/// # Guarantee
///
/// With `rate = Rate::new(max_uses, period)` and K keys:
///
/// - **No key is handed out more than `max_uses` times in any window (t − period, t]**,
///   counting each hand-out at the `now` of its call, under any concurrency. (This section is
///   the default pool, a log; for [`buckets(n)`](KeyPoolBuilder::buckets) see below.)
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
/// # Bounded memory: [`buckets(n)`](KeyPoolBuilder::buckets)
///
/// For huge pools (a million keys × 500 uses would need 4 GB of log) each key can instead get
/// its own strict [`SlidingWindow`] of n buckets of width w = ⌈period / n⌉, whatever
/// `max_uses` is: a 104-byte header on x86-64 (not cache-padded: one window per key is
/// rarely contended) plus a ring of M snapshots of 8 bytes, M the power of two ≥ n + 1 (16
/// for n = 10). Measured: 1,000,000 keys × 500 uses with n = 10 peak at 245 MB (about 245
/// bytes per key). The trade:
///
/// - **No key is handed out more than `max_uses` times in any window of `period`**, under any
///   concurrency: each hand-out is a grant of that key's own window and carries its strict
///   guarantee (each grant counted at τ = max(now, the start of the newest bucket the window
///   has reached), which is `now` while the calls bring a clock that does not run backwards). The rotation plays no
///   part in it.
/// - **For a sequential caller whose clock does not run backwards, a request is denied only if
///   every key has been handed out `max_uses` times within the last `period + w`** (instead of
///   `period`): a key's oldest bucket is counted whole. `retry_after` is exact (waiting it and
///   asking again succeeds) and is when the first key becomes usable again, at most
///   `period + w − 1` after that key's use. Keys come out in the order given, cyclically.
/// - Under concurrency a request may also be denied while some key is free (calls in flight
///   can spend the key at the cursor, or hand keys out of order); such a denial still means
///   the key tried has `max_uses` uses counted, so it lasts at most `period + w` after that
///   key's oldest counted use. With the clock frozen, exactly K·`max_uses` are handed out.
/// - Cost: a grant is two CASes (a shared cursor, then the key's window); a denial writes
///   the cursor twice (claims the turn, gives it back).
///
/// The proof is in the [`guide`](crate::guide#keypool-bounded-memory).
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
    store: Store<C>,
    /// Per key, the time from which it may be handed out again: 0 for a usable key, a later
    /// time while it cools down ([`KeyPool::report_refused`]), `u64::MAX` once retired.
    cool: Box<[AtomicU64]>,
}

/// The cooldown words for `k` keys, all usable; reserved first, so a failed allocation is an
/// error rather than an abort.
fn cool_words(k: usize) -> Result<Box<[AtomicU64]>, ConfigError> {
    let mut words = Vec::new();
    words.try_reserve_exact(k).map_err(|_| {
        ConfigError::new(
            "keys",
            Value::Count(k as u128),
            "cannot allocate a cooldown word per key",
        )
    })?;
    words.extend((0..k).map(|_| AtomicU64::new(0)));
    Ok(words.into_boxed_slice())
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
    /// assert_eq!(pool.get_next_key_at(0), Ok(&"a"));
    /// assert_eq!(pool.get_next_key_at(0), Ok(&"b"));
    /// // "a" was used in the bucket [0, 60 s); it is counted until that bucket leaves the
    /// // window, at 660 s − 1 ns.
    /// let d = pool.get_next_key_at(0).unwrap_err();
    /// assert_eq!(d.retry_after_nanos(), Some(660_000_000_000 - 1));
    /// assert_eq!(pool.get_next_key_at(660_000_000_000 - 1), Ok(&"a"));
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
        let w = match &self.store {
            Store::Log(log) => {
                // At most K turns: one of each key, then every key was cooling.
                for _ in 0..self.count {
                    let index = log.acquire_slots(1, now)?;
                    // Slot index % (K·X) belongs to key (index % (K·X)) % K = index % K, as K
                    // divides K·X. `index % K < K = keys.len()`, so it fits in usize and the
                    // lookup is in bounds.
                    let k = (index % self.count) as usize;
                    if self.usable(k, now) {
                        return Ok(&self.keys[k]);
                    }
                    // A cooling key's turn is spent: its slot counts as a use it never made.
                }
                return Err(self.all_cooling(now));
            }
            Store::Windows(w) => w,
        };
        // The cursor only chooses which key to try: every key's budget is enforced by its own
        // window, whatever cursor value a call reads, so every cursor operation is Relaxed.
        //
        // A call first claims the turn c → c + 1, then tries key c mod K: so each turn gives
        // its key at most one use, and a key is never used twice in a turn while the next key
        // waits (which, with the clock frozen, could leave the rotation stuck on a spent key).
        // A denied call gives the turn back (c + 1 → c) unless the cursor moved on meanwhile.
        let mut c = w.cursor.load(Ordering::Relaxed);
        let backoff = Backoff::new();
        let mut skipped = 0;
        loop {
            // Relaxed: fairness only (above). A failure means another call took or gave back a
            // turn: retry with the value it left.
            if let Err(actual) = w.cursor.compare_exchange_weak(
                c,
                c.wrapping_add(1),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                c = actual;
                backoff.spin();
                continue;
            }
            // `c % K < K = keys.len() = windows.len()`: fits in usize, in bounds.
            let k = (c % self.count) as usize;
            if !self.usable(k, now) {
                // A cooling key passes its turn (it is not given back): the next call tries
                // the next key. After K passes in a row every key was cooling.
                skipped += 1;
                if skipped >= self.count {
                    return Err(self.all_cooling(now));
                }
                c = c.wrapping_add(1);
                continue;
            }
            return match w.windows[k].try_acquire_at(now) {
                Ok(()) => Ok(&self.keys[k]),
                Err(denied) => {
                    // Relaxed: fairness only. Fails when another call took the next turn
                    // meanwhile: key k then loses this turn, which it could not use anyway.
                    let _ = w.cursor.compare_exchange(
                        c.wrapping_add(1),
                        c,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    );
                    Err(denied)
                }
            };
        }
    }

    /// How many keys could be handed out at `now` (counting a key once per use left): for the
    /// default pool the log's [`remaining_at`](SlidingLog::remaining_at) (exactly the uses left
    /// in the window, for a sequential caller), with [`buckets(n)`](KeyPoolBuilder::buckets)
    /// the sum of every key's window (O(keys)). Reads only. With buckets, keys cooling down or
    /// retired ([`report_refused`](KeyPool::report_refused)) count nothing; the log pool's
    /// shared slots cannot tell whose they are, so there they still count.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    ///
    /// let pool = KeyPool::builder(vec!["a", "b"], Rate::per_second(2)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(pool.remaining_at(0), 4);
    /// pool.get_next_key_at(0).unwrap();
    /// assert_eq!(pool.remaining_at(0), 3);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn remaining_at(&self, now: u64) -> u64 {
        match &self.store {
            Store::Log(log) => log.remaining_at(now),
            Store::Windows(w) => (w.windows.iter().enumerate())
                .filter(|&(k, _)| self.usable(k, now))
                .map(|(_, window)| window.read_at(now).0)
                .sum(),
        }
    }

    /// How long until every key has its whole budget again if nothing more is handed out
    /// (zero when all have). Reads only; O(keys) with [`buckets(n)`](KeyPoolBuilder::buckets).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let pool = KeyPool::builder(vec!["a", "b"], Rate::per_second(2)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// pool.get_next_key_at(100_000_000).unwrap();
    /// assert_eq!(pool.reset_at(500_000_000), Duration::from_millis(600));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn reset_at(&self, now: u64) -> core::time::Duration {
        match &self.store {
            Store::Log(log) => log.reset_at(now),
            Store::Windows(w) => core::time::Duration::from_nanos(
                w.windows
                    .iter()
                    .map(|k| k.read_at(now).1)
                    .max()
                    .unwrap_or(0),
            ),
        }
    }

    /// The number of buckets per key window with [`buckets(n)`](KeyPoolBuilder::buckets);
    /// `None` for the default (log) pool.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    /// let pool = KeyPool::builder(vec![7, 8], Rate::per_second(1)?)
    ///     .buckets(4)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(pool.buckets(), Some(4));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn buckets(&self) -> Option<usize> {
        match &self.store {
            Store::Log(_) => None,
            Store::Windows(w) => Some(w.windows[0].buckets()),
        }
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
        self.rate().limit()
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
        match &self.store {
            Store::Log(log) => log.rate(),
            Store::Windows(w) => w.rate,
        }
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
        match &self.store {
            Store::Log(log) => log.clock(),
            Store::Windows(w) => &w.clock,
        }
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
        self.get_next_key_at(self.clock().now())
    }

    /// How many uses are left now: [`remaining_at`](KeyPool::remaining_at) with the clock
    /// read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    /// let pool = KeyPool::builder(vec!["a"], Rate::per_second(3)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// pool.get_next_key()?;
    /// assert_eq!(pool.remaining(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remaining(&self) -> u64 {
        self.remaining_at(self.clock().now())
    }

    /// How long until every key has its whole budget again:
    /// [`reset_at`](KeyPool::reset_at) with the clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    /// use std::time::Duration;
    /// let pool = KeyPool::builder(vec!["a"], Rate::per_second(3)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// pool.get_next_key()?;
    /// assert_eq!(pool.reset(), Duration::from_secs(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset(&self) -> core::time::Duration {
        self.reset_at(self.clock().now())
    }
}

/// Keys refused upstream, retired and added while the pool is in use.
impl<K, C> KeyPool<K, C> {
    /// Whether key `k` may be handed out at `now` (not cooling down, not retired).
    #[inline]
    fn usable(&self, k: usize, now: u64) -> bool {
        // Relaxed: the word is self-contained; a stale read hands a key out (or skips it) as
        // if the call had come just before (or after) the report.
        self.cool[k].load(Ordering::Relaxed) <= now
    }

    /// The denial when K turns in a row found their key cooling: the time until the first
    /// cooldown ends (a lower bound: that key's budget decides after it), or never when every
    /// key is retired.
    #[cold]
    #[inline(never)]
    fn all_cooling(&self, now: u64) -> Denied {
        // Relaxed: a snapshot, advisory as any retry time under concurrency.
        let first = self.cool.iter().map(|c| c.load(Ordering::Relaxed)).min();
        match first {
            Some(u64::MAX) | None => Denied::never(),
            Some(until) => Denied::after_nanos(until.saturating_sub(now).max(1)),
        }
    }

    /// The index of `key` in [`keys`](KeyPool::keys), found by address: `key` must be a
    /// reference into this pool (as [`get_next_key`](KeyPool::get_next_key) returns), not an
    /// equal copy. `None` for any other reference. (Zero-sized keys share one address: index 0.)
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    ///
    /// let pool = KeyPool::builder(vec!["a", "b"], Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// let key = pool.get_next_key_at(0)?;
    /// assert_eq!(pool.position(key), Some(0));
    /// assert_eq!(pool.position(&"a"), None); // an equal value elsewhere
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn position(&self, key: &K) -> Option<usize> {
        let size = core::mem::size_of::<K>();
        let base = self.keys.as_ptr() as usize;
        let offset = (key as *const K as usize).checked_sub(base)?;
        if size == 0 {
            return (offset == 0 && !self.keys.is_empty()).then_some(0);
        }
        let index = offset / size;
        (offset % size == 0 && index < self.keys.len()).then_some(index)
    }

    /// Keeps `key` from being handed out before time `until` (nanoseconds on the pool's
    /// clock): [`report_refused`](KeyPool::report_refused) with the deadline given. A later
    /// deadline already set is kept. Returns false if `key` is not a reference into this pool
    /// (see [`position`](KeyPool::position)).
    ///
    /// While a key cools down its turns pass to the next key. With the default log store a
    /// passed turn still spends one of that key's uses (the slot is taken, then skipped), so
    /// the key comes back with fewer uses in the window; with [`buckets`](KeyPoolBuilder::buckets)
    /// the key's window is untouched. No key is ever handed out more than `max_uses` times
    /// per window either way. When every key is cooling, the denial's `retry_after` is the
    /// time until the first cooldown ends.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    ///
    /// let pool = KeyPool::builder(vec!["a", "b"], Rate::per_second(10)?)
    ///     .buckets(10)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// let a = pool.get_next_key_at(0)?;
    /// assert!(pool.cool_down_until(a, 5_000));
    /// assert_eq!(pool.get_next_key_at(1)?, &"b");
    /// assert_eq!(pool.get_next_key_at(2)?, &"b"); // "a" is cooling: its turn passes
    /// assert_eq!(pool.get_next_key_at(5_000)?, &"a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cool_down_until(&self, key: &K, until: u64) -> bool {
        let Some(k) = self.position(key) else {
            return false;
        };
        // Relaxed: the word is self-contained (see `usable`); max keeps the later deadline.
        self.cool[k].fetch_max(until, Ordering::Relaxed);
        true
    }

    /// Retires `key`: it is never handed out again, until [`reinstate`](KeyPool::reinstate).
    /// Returns false if `key` is not a reference into this pool. When every key is retired,
    /// requests are denied with `retry_after() == None`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    ///
    /// let pool = KeyPool::builder(vec!["a", "b"], Rate::per_second(10)?).clock(ManualClock::new()).build()?;
    /// assert!(pool.retire(&pool.keys()[0]));
    /// assert_eq!(pool.get_next_key_at(0)?, &"b");
    /// assert_eq!(pool.get_next_key_at(1)?, &"b");
    /// assert!(pool.retire(&pool.keys()[1]));
    /// assert!(pool.get_next_key_at(2).unwrap_err().is_never());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn retire(&self, key: &K) -> bool {
        self.cool_down_until(key, u64::MAX)
    }

    /// Makes `key` usable again at once, ending a cooldown or a retirement. Its budget is its
    /// own as before (uses in the window still count). Returns false if `key` is not a
    /// reference into this pool.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    ///
    /// let pool = KeyPool::builder(vec!["a"], Rate::per_second(10)?).clock(ManualClock::new()).build()?;
    /// pool.retire(&pool.keys()[0]);
    /// assert!(pool.get_next_key_at(0).is_err());
    /// assert!(pool.reinstate(&pool.keys()[0]));
    /// assert_eq!(pool.get_next_key_at(0)?, &"a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reinstate(&self, key: &K) -> bool {
        let Some(k) = self.position(key) else {
            return false;
        };
        // Relaxed: as in `cool_down_until`.
        self.cool[k].store(0, Ordering::Relaxed);
        true
    }

    /// Whether `key` may be handed out at `now` as far as cooldowns and retirement go (its
    /// budget aside); `None` if `key` is not a reference into this pool.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    ///
    /// let pool = KeyPool::builder(vec!["a"], Rate::per_second(10)?).clock(ManualClock::new()).build()?;
    /// let a = &pool.keys()[0];
    /// pool.cool_down_until(a, 100);
    /// assert_eq!(pool.is_usable_at(a, 99), Some(false));
    /// assert_eq!(pool.is_usable_at(a, 100), Some(true));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn is_usable_at(&self, key: &K, now: u64) -> Option<bool> {
        self.position(key).map(|k| self.usable(k, now))
    }

    /// Adds a key to a pool built with [`buckets`](KeyPoolBuilder::buckets): it gets its own
    /// fresh window (`max_uses` per `period`) and joins the rotation. Needs `&mut self` (no
    /// request can run meanwhile), because requests hand out `&K` borrowed from the pool; share
    /// the pool behind an `RwLock` to add keys while others use it, or build a new pool and
    /// swap it in. The other keys' windows and cooldowns are kept; the rotation goes on from
    /// the new key, then in order. The pool's "denies only when every key is spent" rests on
    /// keys being used in rotation from the start, so right after an addition a request may
    /// be denied on the next (spent) key while the new one still has uses: that lasts until
    /// the spent keys' windows move on (at most `period` plus a bucket width).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `buckets` for the default log store (its slots are laid out for
    /// a fixed number of keys: build a new pool), or `keys` when the windows' memory would pass
    /// 2 GiB or cannot be allocated.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    ///
    /// let mut pool = KeyPool::builder(vec!["a"], Rate::per_second(1)?)
    ///     .buckets(10)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(pool.get_next_key_at(0)?, &"a");
    /// assert!(pool.get_next_key_at(0).is_err());
    /// pool.add_key("b")?;
    /// assert_eq!(pool.get_next_key_at(0)?, &"b");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_key(&mut self, key: K) -> Result<(), ConfigError> {
        let Store::Windows(w) = &mut self.store else {
            return Err(ConfigError::new(
                "buckets",
                Value::Count(0),
                "adding keys needs a pool built with buckets(n)",
            ));
        };
        let builder = SlidingWindow::builder(w.rate)
            .buckets(w.windows[0].buckets())
            .clock(Unclocked);
        let k = self.keys.len() + 1;
        let value = Value::Count(k as u128);
        if KeyWindow::size_for(&builder)? * k as u128 > MAX_WINDOW_BYTES {
            return Err(ConfigError::new(
                "keys",
                value,
                "keys × window size must be at most 2^31 bytes (2 GiB) with buckets",
            ));
        }
        let mut windows = core::mem::take(&mut w.windows).into_vec();
        let grown = windows
            .try_reserve_exact(1)
            .and(self.keys.try_reserve_exact(1));
        let mut cool = core::mem::take(&mut self.cool).into_vec();
        let grown = grown.and(cool.try_reserve_exact(1));
        if grown.is_err() {
            w.windows = windows.into_boxed_slice();
            self.cool = cool.into_boxed_slice();
            return Err(ConfigError::new(
                "keys",
                value,
                "cannot allocate another key",
            ));
        }
        windows.push(KeyWindow::new(&builder)?);
        cool.push(AtomicU64::new(0));
        w.windows = windows.into_boxed_slice();
        self.cool = cool.into_boxed_slice();
        self.keys.push(key);
        self.count += 1;
        // The rotation goes on from the new key: the next turn is the first one ≥ the cursor
        // that falls on it (a turn is c mod K, and K just grew). Relaxed: `&mut self`.
        let c = w.cursor.load(Ordering::Relaxed);
        let new = self.count - 1;
        let next = c.wrapping_add((new + self.count - c % self.count) % self.count);
        w.cursor.store(next, Ordering::Relaxed);
        Ok(())
    }
}

impl<K, C: Clock> KeyPool<K, C> {
    /// Reports that the upstream API refused `key` (it answered 429, or "quota exceeded"):
    /// the key is not handed out again for `cooldown` from now. Use the upstream's own
    /// `Retry-After` when it sends one. Returns false if `key` is not a reference into this
    /// pool (see [`position`](KeyPool::position)); [`cool_down_until`](KeyPool::cool_down_until)
    /// says what a cooling key's turns do.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let pool = KeyPool::builder(vec!["k1", "k2"], Rate::per_minute(100)?)
    ///     .clock(clock.clone())
    ///     .build()?;
    /// let key = pool.get_next_key()?;
    /// // ... the upstream answered 429 with `Retry-After: 30` ...
    /// assert!(pool.report_refused(key, Duration::from_secs(30)));
    /// assert_eq!(pool.get_next_key()?, &"k2");
    /// assert_eq!(pool.get_next_key()?, &"k2");
    /// clock.advance(Duration::from_secs(30));
    /// assert_eq!(pool.get_next_key()?, &"k1");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn report_refused(&self, key: &K, cooldown: core::time::Duration) -> bool {
        let now = self.clock().now();
        let until = now.saturating_add(u64::try_from(cooldown.as_nanos()).unwrap_or(u64::MAX));
        self.cool_down_until(key, until)
    }
}

impl<K: fmt::Debug, C> fmt::Debug for KeyPool<K, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("KeyPool");
        d.field("keys", &self.keys);
        match &self.store {
            Store::Log(log) => d.field("log", log),
            Store::Windows(w) => d
                .field("rate", &w.rate)
                .field("buckets", &w.windows[0].buckets())
                .field("cursor", &w.cursor.load(Ordering::Relaxed)),
        };
        d.finish()
    }
}
