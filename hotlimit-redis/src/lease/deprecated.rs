//! The old names of [`LeasedGcra`]'s and [`LeasedKey`]'s calls, kept as thin deprecated
//! aliases so that code written against them still compiles. In hotlimit `_n` marks the call
//! that takes a permit count (CONTRIBUTING.md, "Names"): `try_acquire(key, n)` became
//! `try_acquire_n(key, n)`, as the core's `Keyed::try_acquire_n(key, n)`.

use hotlimit::{Clock, Denied};

use super::{LeasedGcra, LeasedKey};

impl<C: Clock> LeasedGcra<C> {
    /// The old name of [`try_acquire_n`](Self::try_acquire_n).
    ///
    /// # Errors
    ///
    /// As [`try_acquire_n`](Self::try_acquire_n).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{LeasedGcra, OnError};
    ///
    /// let limiter = LeasedGcra::builder(Rate::per_second(1000)?, OnError::FailClosed)
    ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
    /// let _ = limiter.try_acquire("k", 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(note = "renamed to `try_acquire_n`: `_n` marks a permit count")]
    pub fn try_acquire(&self, key: &str, n: u32) -> Result<(), Denied> {
        self.try_acquire_n(key, n)
    }

    /// The old name of `try_acquire_n_timed` (tests only, not part of the API).
    #[doc(hidden)]
    #[deprecated(note = "renamed to `try_acquire_n_timed`")]
    pub fn try_acquire_timed(&self, key: &str, n: u32) -> Result<u64, Denied> {
        self.try_acquire_n_timed(key, n)
    }
}

impl<C: Clock> LeasedKey<C> {
    /// The old name of [`try_acquire_n`](Self::try_acquire_n).
    ///
    /// # Errors
    ///
    /// As [`try_acquire_n`](Self::try_acquire_n).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{LeasedGcra, OnError};
    ///
    /// let limiter = LeasedGcra::builder(Rate::per_second(1000)?, OnError::FailClosed)
    ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
    /// let _ = limiter.key("hot")?.try_acquire(1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(note = "renamed to `try_acquire_n`: `_n` marks a permit count")]
    pub fn try_acquire(&self, n: u32) -> Result<(), Denied> {
        self.try_acquire_n(n)
    }
}
