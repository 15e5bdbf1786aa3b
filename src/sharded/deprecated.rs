//! The old name of [`ShardedGcra::try_acquire_n_on_at`], kept as a thin deprecated alias so
//! that code written against it still compiles: a call that takes `now` ends in `_at`
//! (CONTRIBUTING.md, "Names").

use crate::error::Denied;
use crate::sharded::ShardedGcra;

impl<C> ShardedGcra<C> {
    /// The old name of [`try_acquire_n_on_at`](ShardedGcra::try_acquire_n_on_at).
    ///
    /// # Errors
    ///
    /// As [`try_acquire_n_on_at`](ShardedGcra::try_acquire_n_on_at).
    ///
    /// # Examples
    ///
    /// ```
    /// # #![allow(deprecated)]
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    ///
    /// let limiter = ShardedGcra::builder(Rate::per_second(4)?)
    ///     .shards(2)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.try_acquire_n_on(1, 2, 0).is_ok());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[deprecated(note = "renamed to `try_acquire_n_on_at`: a call that takes `now` ends in `_at`")]
    pub fn try_acquire_n_on(&self, home: usize, permits: u32, now: u64) -> Result<(), Denied> {
        self.try_acquire_n_on_at(home, permits, now)
    }
}
