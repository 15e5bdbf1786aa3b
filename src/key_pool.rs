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
//!
//! Files: this one holds the pool and the hand-out at a given time; `key_pool/builder.rs` the
//! builder and the build of either mode; `key_pool/read.rs` the hand-out and read-back with
//! the clock read; `key_pool/change.rs` live changes (refused, retired, reinstated and added
//! keys); `key_pool/deprecated.rs` the hand-out's old names (`get_next_key*`).

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

mod builder;
mod change;
mod deprecated;
mod read;

pub use builder::KeyPoolBuilder;

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
/// [`try_next_key`](KeyPool::try_next_key) returns a key that may be used now, or how long to
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
/// The proof is in the [`guide`](crate::guide::key_pool#keypool-bounded-memory).
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
/// let used: Vec<&str> = (0..4).map(|_| *pool.try_next_key().unwrap()).collect();
/// assert_eq!(used, ["key-a", "key-b", "key-a", "key-b"]);
/// let denied = pool.try_next_key().unwrap_err();
/// assert_eq!(denied.retry_after(), Some(Duration::from_secs(60)));
/// clock.advance(Duration::from_secs(60));
/// assert_eq!(*pool.try_next_key()?, "key-a");
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

impl<K, C> KeyPool<K, C> {
    /// The key to use at time `now` (nanoseconds on this pool's clock), or how long to wait.
    /// This is the algorithm; [`try_next_key`](KeyPool::try_next_key) is this with the clock
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
    /// assert_eq!(pool.try_next_key_at(0), Ok(&"a"));
    /// assert_eq!(pool.try_next_key_at(300_000_000), Ok(&"b"));
    /// let d = pool.try_next_key_at(500_000_000).unwrap_err();
    /// assert_eq!(d.retry_after_nanos(), Some(500_000_000)); // "a" is free again at 1 s
    /// assert_eq!(pool.try_next_key_at(1_000_000_000), Ok(&"a"));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_next_key_at(&self, now: u64) -> Result<&K, Denied> {
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
    /// pool.try_next_key_at(0).unwrap();
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
    /// pool.try_next_key_at(100_000_000).unwrap();
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
