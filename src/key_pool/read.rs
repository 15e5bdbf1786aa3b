//! [`KeyPool`] with the clock read: the next key, the read-back.

use super::*;

impl<K, C: Clock> KeyPool<K, C> {
    /// The key to use now, or how long to wait:
    /// [`try_next_key_at`](KeyPool::try_next_key_at) with the clock read. Never waits (hence
    /// `try_`); [`next_key_blocking`](KeyPool::next_key_blocking) and
    /// [`next_key_async`](KeyPool::next_key_async) wait.
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
    /// assert_eq!(pool.try_next_key(), Ok(&"a"));
    /// assert_eq!(pool.try_next_key().unwrap_err().retry_after(), Some(Duration::from_secs(1)));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_next_key(&self) -> Result<&K, Denied> {
        self.try_next_key_at(self.clock().now())
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
    /// pool.try_next_key()?;
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
    /// pool.try_next_key()?;
    /// assert_eq!(pool.reset(), Duration::from_secs(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset(&self) -> core::time::Duration {
        self.reset_at(self.clock().now())
    }
}
