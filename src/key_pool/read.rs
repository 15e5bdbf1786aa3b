//! [`KeyPool`] with the clock read: the next key, the read-back.

use super::*;

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
