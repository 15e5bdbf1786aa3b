//! Waiting per key: blocking and async waits for [`Keyed`](crate::Keyed),
//! [`IntKeyed`](crate::IntKeyed) and [`KeyPool`] (wait for the next key).
//!
//! These limiters decide per key, so they are not a [`Limiter`](crate::Limiter) and get no
//! [`LimiterExt`](crate::LimiterExt); the methods here give them the same three waits:
//! `*_blocking` (a [`Precise`](crate::Precise) sleeper), `*_blocking_with` (any [`Sleep`],
//! e.g. a [`ManualClock`](crate::ManualClock) for simulated time) and `*_async` (the
//! runtime's sleep function, no runtime dependency).
//!
//! They retry: try, and on a denial wait its `retry_after`, then try again. They hold
//! nothing while they wait, so a dropped future or an abandoned thread leaks no permit, but
//! they are not first-come-first-served: a waiter that wakes can find the key's permit taken
//! by a caller that came later (only a [`Gcra`](crate::Gcra) and a [`Pacer`](crate::Pacer)
//! queue waiters, with reservations). A denial because the table is full of busy keys
//! carries the time a sweep expects room, so the waits cover that case too; a request that
//! can never be granted (more permits than the key's burst) returns its denial at once.
//!
//! The `*_blocking*` methods block the calling thread: never call them from async code.

use core::future::Future;
use core::time::Duration;

use crate::clock::Clock;
use crate::error::Denied;
use crate::key_pool::KeyPool;
use crate::wait::{retry_async, retry_blocking, Sleep};

#[cfg(feature = "std")]
mod keyed {
    use alloc::borrow::ToOwned;
    use core::borrow::Borrow;
    use core::future::Future;
    use core::hash::Hash;
    use core::time::Duration;

    use super::{retry_async, retry_blocking, Sleep};
    use crate::clock::Clock;
    use crate::error::Denied;
    use crate::keyed::{Keyed, KeyedState};

    /// Waiting for a key's permits: blocking, with any [`Sleep`], and async. They retry after
    /// each denial's `retry_after` (also a full table's wait for room), hold nothing while
    /// waiting, and are not first-come-first-served among waiters on one key. Like every
    /// `Keyed` method, they take the key in any borrowed form (`&str` for a `String` key).
    impl<K: Hash + Eq + Clone + 'static, L: KeyedState, C: Clock> Keyed<K, L, C> {
        /// Block the calling thread until `permits` permits for `key` are granted, sleeping
        /// with a [`Precise`](crate::Precise) sleeper. Retries after each denial's
        /// `retry_after`: not first-come-first-served among waiters on the same key.
        /// **Blocks: never call it from async code**; use
        /// [`acquire_async`](Keyed::acquire_async) there.
        ///
        /// # Errors
        ///
        /// Only a [`Denied`] with `retry_after() == None`: more permits than the key's burst.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Gcra, Keyed, Rate};
        ///
        /// let per_user = Keyed::<u64, Gcra>::gcra(Rate::per_second(1_000)?).burst(1).build()?;
        /// per_user.acquire_blocking(&7, 1)?;
        /// per_user.acquire_blocking(&7, 1)?; // about 1 ms later
        /// assert!(per_user.acquire_blocking(&7, 2).unwrap_err().is_never());
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn acquire_blocking<Q>(&self, key: &Q, permits: u32) -> Result<(), Denied>
        where
            K: Borrow<Q>,
            Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
        {
            match self.try_acquire_n(key, permits) {
                Err(denied) if !denied.is_never() => {
                    self.acquire_blocking_with(key, permits, &crate::wait::Precise::new())
                }
                decided => decided,
            }
        }

        /// [`acquire_blocking`](Keyed::acquire_blocking), letting time pass with `sleeper` (a
        /// [`ManualClock`](crate::ManualClock) for simulated time). Blocks with a real
        /// sleeper.
        ///
        /// # Errors
        ///
        /// Only a [`Denied`] with `retry_after() == None`.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Clock, Gcra, Keyed, ManualClock, Rate};
        ///
        /// let clock = ManualClock::new();
        /// let per_user: Keyed<&str, Gcra, ManualClock> =
        ///     Keyed::gcra(Rate::per_second(2)?).clock(clock.clone()).build()?;
        /// for _ in 0..3 {
        ///     per_user.acquire_blocking_with(&"alice", 1, &clock)?;
        /// }
        /// assert_eq!(clock.now(), 500_000_000); // the burst of 2, then one 500 ms later
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn acquire_blocking_with<Q, S: Sleep + ?Sized>(
            &self,
            key: &Q,
            permits: u32,
            sleeper: &S,
        ) -> Result<(), Denied>
        where
            K: Borrow<Q>,
            Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
        {
            retry_blocking(|| self.try_acquire_n(key, permits), sleeper)
        }

        /// A future that resolves when `permits` permits for `key` are granted, for any async
        /// runtime: `sleep` makes the runtime's timer future (`tokio::time::sleep`). Retries
        /// after each denial's `retry_after` (not first-come-first-served); holds nothing
        /// while it waits, so dropping it leaks nothing. For a timeout, wrap it in the
        /// runtime's timeout.
        ///
        /// # Errors
        ///
        /// The future resolves to a [`Denied`] with `retry_after() == None` only.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Clock, Gcra, Keyed, ManualClock, Rate};
        /// use std::future::{ready, Future};
        /// use std::task::{Context, Poll, Waker};
        ///
        /// let clock = ManualClock::new();
        /// let per_user: Keyed<&str, Gcra, ManualClock> =
        ///     Keyed::gcra(Rate::per_second(4)?).burst(1).clock(clock.clone()).build()?;
        /// // A simulated timer; with tokio: `per_user.acquire_async(&user, 1, tokio::time::sleep).await?`.
        /// let sleep = |d| { clock.advance(d); ready(()) };
        /// let mut cx = Context::from_waker(Waker::noop());
        /// for _ in 0..2 {
        ///     let mut fut = std::pin::pin!(per_user.acquire_async(&"alice", 1, sleep));
        ///     assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Ready(Ok(()))));
        /// }
        /// assert_eq!(clock.now(), 250_000_000);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn acquire_async<'a, Q, F, Fut>(
            &'a self,
            key: &'a Q,
            permits: u32,
            sleep: F,
        ) -> impl Future<Output = Result<(), Denied>> + 'a
        where
            K: Borrow<Q>,
            Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
            F: FnMut(Duration) -> Fut + 'a,
            Fut: Future<Output = ()> + 'a,
        {
            retry_async(move || self.try_acquire_n(key, permits), sleep)
        }
    }
}

#[cfg(any(feature = "std", hotlimit_loom))]
mod int_keyed {
    use core::future::Future;
    use core::time::Duration;

    use super::{retry_async, retry_blocking, Sleep};
    use crate::clock::Clock;
    use crate::error::Denied;
    use crate::int_keyed::{IntKey, IntKeyed};

    /// Waiting for a key's permits: blocking, with any [`Sleep`], and async. They retry after
    /// each denial's `retry_after` (also a full table's wait for room), hold nothing while
    /// waiting, and are not first-come-first-served among waiters on one key.
    impl<K: IntKey, C: Clock> IntKeyed<K, C> {
        /// Block the calling thread until `permits` permits for `key` are granted, sleeping
        /// with a [`Precise`](crate::Precise) sleeper. Retries after each denial's
        /// `retry_after` (also a new key's wait for a slot to go idle): not
        /// first-come-first-served. **Blocks: never call it from async code**; use
        /// [`acquire_async`](IntKeyed::acquire_async) there.
        ///
        /// # Errors
        ///
        /// Only a [`Denied`] with `retry_after() == None`: more permits than the burst.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{IntKeyed, Rate};
        ///
        /// let per_user: IntKeyed<u64> = IntKeyed::builder(Rate::per_second(1_000)?).burst(1).build()?;
        /// per_user.acquire_blocking(7, 1)?;
        /// per_user.acquire_blocking(7, 1)?; // about 1 ms later
        /// assert!(per_user.acquire_blocking(7, 2).unwrap_err().is_never());
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        #[cfg(feature = "std")]
        pub fn acquire_blocking(&self, key: K, permits: u32) -> Result<(), Denied> {
            match self.try_acquire_n(key, permits) {
                Err(denied) if !denied.is_never() => {
                    self.acquire_blocking_with(key, permits, &crate::wait::Precise::new())
                }
                decided => decided,
            }
        }

        /// [`acquire_blocking`](IntKeyed::acquire_blocking), letting time pass with `sleeper`
        /// (a [`ManualClock`](crate::ManualClock) for simulated time). Blocks with a real
        /// sleeper.
        ///
        /// # Errors
        ///
        /// Only a [`Denied`] with `retry_after() == None`.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Clock, IntKeyed, ManualClock, Rate};
        ///
        /// let clock = ManualClock::new();
        /// let per_user = IntKeyed::<u32>::builder(Rate::per_second(2)?).clock(clock.clone()).build()?;
        /// for _ in 0..3 {
        ///     per_user.acquire_blocking_with(1, 1, &clock)?;
        /// }
        /// assert_eq!(clock.now(), 500_000_000);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn acquire_blocking_with<S: Sleep + ?Sized>(
            &self,
            key: K,
            permits: u32,
            sleeper: &S,
        ) -> Result<(), Denied> {
            retry_blocking(|| self.try_acquire_n(key, permits), sleeper)
        }

        /// A future that resolves when `permits` permits for `key` are granted, for any async
        /// runtime: `sleep` makes the runtime's timer future. Retries after each denial (not
        /// first-come-first-served); holds nothing while it waits, so dropping it leaks
        /// nothing.
        ///
        /// # Errors
        ///
        /// The future resolves to a [`Denied`] with `retry_after() == None` only.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Clock, IntKeyed, ManualClock, Rate};
        /// use std::future::{ready, Future};
        /// use std::task::{Context, Poll, Waker};
        ///
        /// let clock = ManualClock::new();
        /// let per_ip = IntKeyed::<u32>::builder(Rate::per_second(4)?)
        ///     .burst(1)
        ///     .clock(clock.clone())
        ///     .build()?;
        /// let sleep = |d| { clock.advance(d); ready(()) };
        /// let mut cx = Context::from_waker(Waker::noop());
        /// for _ in 0..2 {
        ///     let mut fut = std::pin::pin!(per_ip.acquire_async(9, 1, sleep));
        ///     assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Ready(Ok(()))));
        /// }
        /// assert_eq!(clock.now(), 250_000_000);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn acquire_async<'a, F, Fut>(
            &'a self,
            key: K,
            permits: u32,
            sleep: F,
        ) -> impl Future<Output = Result<(), Denied>> + 'a
        where
            F: FnMut(Duration) -> Fut + 'a,
            Fut: Future<Output = ()> + 'a,
        {
            retry_async(move || self.try_acquire_n(key, permits), sleep)
        }
    }
}

/// Waiting for the next key: blocking, with any [`Sleep`], and async. They retry after each
/// denial's `retry_after`, hold nothing while waiting (a dropped future uses no key), and are
/// not first-come-first-served among waiters.
impl<K, C: Clock> KeyPool<K, C> {
    /// Block the calling thread until a key may be used, and return it: the pool's
    /// [`try_next_key`](KeyPool::try_next_key), waiting each denial's `retry_after` (when the
    /// first key becomes usable again) with a [`Precise`](crate::Precise) sleeper. Not
    /// first-come-first-served among waiting threads. **Blocks: never call it from async
    /// code**; use [`next_key_async`](KeyPool::next_key_async) there.
    ///
    /// # Errors
    ///
    /// Only a [`Denied`] with `retry_after() == None` (the clock's range is exhausted).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{KeyPool, Rate};
    ///
    /// let pool = KeyPool::new(vec!["key-a", "key-b"], Rate::per_second(1_000)?)?;
    /// let key = pool.next_key_blocking()?;
    /// assert!(["key-a", "key-b"].contains(key));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn next_key_blocking(&self) -> Result<&K, Denied> {
        match self.try_next_key() {
            Err(denied) if !denied.is_never() => {
                self.next_key_blocking_with(&crate::wait::Precise::new())
            }
            decided => decided,
        }
    }

    /// [`next_key_blocking`](KeyPool::next_key_blocking), letting time pass with
    /// `sleeper` (a [`ManualClock`](crate::ManualClock) for simulated time). Blocks with a
    /// real sleeper.
    ///
    /// # Errors
    ///
    /// Only a [`Denied`] with `retry_after() == None`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, KeyPool, ManualClock, Rate};
    ///
    /// let clock = ManualClock::new();
    /// let pool = KeyPool::builder(vec!["a", "b"], Rate::per_minute(1)?)
    ///     .clock(clock.clone())
    ///     .build()?;
    /// let keys: Vec<&str> = (0..3).map(|_| *pool.next_key_blocking_with(&clock).unwrap()).collect();
    /// assert_eq!(keys, ["a", "b", "a"]); // the third waited for "a" to be usable again
    /// assert_eq!(clock.now(), 60_000_000_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_key_blocking_with<S: Sleep + ?Sized>(&self, sleeper: &S) -> Result<&K, Denied> {
        retry_blocking(|| self.try_next_key(), sleeper)
    }

    /// A future that resolves to the next key that may be used, for any async runtime:
    /// `sleep` makes the runtime's timer future. Retries after each denial (not
    /// first-come-first-served); holds nothing while it waits, so dropping it uses no key.
    ///
    /// # Errors
    ///
    /// The future resolves to a [`Denied`] with `retry_after() == None` only.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, KeyPool, ManualClock, Rate};
    /// use std::future::{ready, Future};
    /// use std::task::{Context, Poll, Waker};
    ///
    /// let clock = ManualClock::new();
    /// let pool = KeyPool::builder(vec!["only"], Rate::per_second(1)?)
    ///     .clock(clock.clone())
    ///     .build()?;
    /// // A simulated timer; with tokio: `pool.next_key_async(tokio::time::sleep).await?`.
    /// let sleep = |d| { clock.advance(d); ready(()) };
    /// let mut cx = Context::from_waker(Waker::noop());
    /// for _ in 0..2 {
    ///     let mut fut = std::pin::pin!(pool.next_key_async(sleep));
    ///     assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Ready(Ok(&"only"))));
    /// }
    /// assert_eq!(clock.now(), 1_000_000_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_key_async<'a, F, Fut>(
        &'a self,
        sleep: F,
    ) -> impl Future<Output = Result<&'a K, Denied>> + 'a
    where
        F: FnMut(Duration) -> Fut + 'a,
        Fut: Future<Output = ()> + 'a,
    {
        retry_async(move || self.try_next_key(), sleep)
    }
}
