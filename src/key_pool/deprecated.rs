//! The old names of [`KeyPool`]'s hand-out, kept as thin deprecated aliases so that code
//! written against them still compiles. In hotlimit a call that never waits and may be denied
//! is `try_<verb>`, its waiting twins `<verb>_blocking` / `<verb>_async` (CONTRIBUTING.md,
//! "Names"), and no name starts with `get_`: `get_next_key` became `try_next_key` (and stays,
//! not deprecated, as the name the API contract fixes),
//! `get_next_key_blocking` became `next_key_blocking`, and so on.

use core::future::Future;
use core::time::Duration;

use crate::clock::Clock;
use crate::error::Denied;
use crate::key_pool::KeyPool;
use crate::wait::Sleep;

impl<K, C> KeyPool<K, C> {
    /// The old name of [`try_next_key_at`](KeyPool::try_next_key_at).
    ///
    /// # Errors
    ///
    /// As [`try_next_key_at`](KeyPool::try_next_key_at).
    ///
    /// # Examples
    ///
    /// ```
    /// # #![allow(deprecated)]
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    ///
    /// let pool = KeyPool::builder(vec!["a"], Rate::per_second(1)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(pool.get_next_key_at(0), Ok(&"a"));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[deprecated(note = "renamed to `try_next_key_at`: `try_` never waits")]
    pub fn get_next_key_at(&self, now: u64) -> Result<&K, Denied> {
        self.try_next_key_at(now)
    }
}

impl<K, C: Clock> KeyPool<K, C> {
    /// [`try_next_key`](KeyPool::try_next_key) under the name the project's API contract
    /// fixes (`../shared/DESIGN.md`: code and tests outside this repository are written against
    /// it), so it is kept, not deprecated: the one exception to "no `get_`" (CONTRIBUTING.md,
    /// "Names"). It never waits.
    ///
    /// # Errors
    ///
    /// As [`try_next_key`](KeyPool::try_next_key).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    ///
    /// let pool = KeyPool::builder(vec!["a"], Rate::per_second(1)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(pool.get_next_key(), Ok(&"a"));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn get_next_key(&self) -> Result<&K, Denied> {
        self.try_next_key()
    }

    /// The old name of [`next_key_blocking`](KeyPool::next_key_blocking).
    ///
    /// # Errors
    ///
    /// As [`next_key_blocking`](KeyPool::next_key_blocking).
    ///
    /// # Examples
    ///
    /// ```
    /// # #![allow(deprecated)]
    /// use hotlimit::{KeyPool, Rate};
    ///
    /// let pool = KeyPool::new(vec!["a"], Rate::per_second(1_000)?)?;
    /// assert_eq!(pool.get_next_key_blocking()?, &"a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "std")]
    #[deprecated(note = "renamed to `next_key_blocking`")]
    pub fn get_next_key_blocking(&self) -> Result<&K, Denied> {
        self.next_key_blocking()
    }

    /// The old name of [`next_key_blocking_with`](KeyPool::next_key_blocking_with).
    ///
    /// # Errors
    ///
    /// As [`next_key_blocking_with`](KeyPool::next_key_blocking_with).
    ///
    /// # Examples
    ///
    /// ```
    /// # #![allow(deprecated)]
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    ///
    /// let clock = ManualClock::new();
    /// let pool = KeyPool::builder(vec!["a"], Rate::per_second(1)?)
    ///     .clock(clock.clone())
    ///     .build()?;
    /// assert_eq!(pool.get_next_key_blocking_with(&clock)?, &"a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(note = "renamed to `next_key_blocking_with`")]
    pub fn get_next_key_blocking_with<S: Sleep + ?Sized>(&self, sleeper: &S) -> Result<&K, Denied> {
        self.next_key_blocking_with(sleeper)
    }

    /// The old name of [`next_key_async`](KeyPool::next_key_async).
    ///
    /// # Errors
    ///
    /// As [`next_key_async`](KeyPool::next_key_async).
    ///
    /// # Examples
    ///
    /// ```
    /// # #![allow(deprecated)]
    /// use hotlimit::{KeyPool, ManualClock, Rate};
    /// use std::future::{ready, Future};
    /// use std::task::{Context, Poll, Waker};
    ///
    /// let clock = ManualClock::new();
    /// let pool = KeyPool::builder(vec!["a"], Rate::per_second(1)?)
    ///     .clock(clock.clone())
    ///     .build()?;
    /// let mut fut = std::pin::pin!(pool.get_next_key_async(|_| ready(())));
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Ready(Ok(&"a"))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(note = "renamed to `next_key_async`")]
    pub fn get_next_key_async<'a, F, Fut>(
        &'a self,
        sleep: F,
    ) -> impl Future<Output = Result<&'a K, Denied>> + 'a
    where
        F: FnMut(Duration) -> Fut + 'a,
        Fut: Future<Output = ()> + 'a,
    {
        self.next_key_async(sleep)
    }
}
