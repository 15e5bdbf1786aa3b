//! Live changes of [`KeyPool`]: keys refused upstream (cooling down), retired, reinstated
//! and added while the pool is in use.

use super::*;

/// Keys refused upstream, retired and added while the pool is in use.
impl<K, C> KeyPool<K, C> {
    /// Whether key `k` may be handed out at `now` (not cooling down, not retired).
    #[inline]
    pub(super) fn usable(&self, k: usize, now: u64) -> bool {
        // Relaxed: the word is self-contained; a stale read hands a key out (or skips it) as
        // if the call had come just before (or after) the report.
        self.cool[k].load(Ordering::Relaxed) <= now
    }

    /// The denial when K turns in a row found their key cooling: the time until the first
    /// cooldown ends (a lower bound: that key's budget decides after it), or never when every
    /// key is retired.
    #[cold]
    #[inline(never)]
    pub(super) fn all_cooling(&self, now: u64) -> Denied {
        // Relaxed: a snapshot, advisory as any retry time under concurrency.
        let first = self.cool.iter().map(|c| c.load(Ordering::Relaxed)).min();
        match first {
            Some(u64::MAX) | None => Denied::never(),
            Some(until) => Denied::after_nanos(until.saturating_sub(now).max(1)),
        }
    }

    /// The index of `key` in [`keys`](KeyPool::keys), found by address: `key` must be a
    /// reference into this pool (as [`try_next_key`](KeyPool::try_next_key) returns), not an
    /// equal copy. `None` for any other reference. (Zero-sized keys share one address: index 0.)
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    ///
    /// let pool = KeyPool::builder(vec!["a", "b"], Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// let key = pool.try_next_key_at(0)?;
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
    /// let a = pool.try_next_key_at(0)?;
    /// assert!(pool.cool_down_until(a, 5_000));
    /// assert_eq!(pool.try_next_key_at(1)?, &"b");
    /// assert_eq!(pool.try_next_key_at(2)?, &"b"); // "a" is cooling: its turn passes
    /// assert_eq!(pool.try_next_key_at(5_000)?, &"a");
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
    /// assert_eq!(pool.try_next_key_at(0)?, &"b");
    /// assert_eq!(pool.try_next_key_at(1)?, &"b");
    /// assert!(pool.retire(&pool.keys()[1]));
    /// assert!(pool.try_next_key_at(2).unwrap_err().is_never());
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
    /// assert!(pool.try_next_key_at(0).is_err());
    /// assert!(pool.reinstate(&pool.keys()[0]));
    /// assert_eq!(pool.try_next_key_at(0)?, &"a");
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
    /// assert_eq!(pool.try_next_key_at(0)?, &"a");
    /// assert!(pool.try_next_key_at(0).is_err());
    /// pool.add_key("b")?;
    /// assert_eq!(pool.try_next_key_at(0)?, &"b");
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
    /// let key = pool.try_next_key()?;
    /// // ... the upstream answered 429 with `Retry-After: 30` ...
    /// assert!(pool.report_refused(key, Duration::from_secs(30)));
    /// assert_eq!(pool.try_next_key()?, &"k2");
    /// assert_eq!(pool.try_next_key()?, &"k2");
    /// clock.advance(Duration::from_secs(30));
    /// assert_eq!(pool.try_next_key()?, &"k1");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn report_refused(&self, key: &K, cooldown: core::time::Duration) -> bool {
        let now = self.clock().now();
        let until = now.saturating_add(u64::try_from(cooldown.as_nanos()).unwrap_or(u64::MAX));
        self.cool_down_until(key, until)
    }
}
