//! [`RedisDecide`]: a [`RedisLimiter`] bound to an async connection, as a [`Decide`].

use std::future::Future;
use std::pin::Pin;

use hotlimit::{Decide, Decision, Quota};
use redis::aio::ConnectionLike;

use crate::error::Error;
use crate::limiter::RedisLimiter;

/// A [`RedisLimiter`] with its connection (a [`ConnectionManager`](redis::aio::ConnectionManager)
/// or a cluster connection: both are cheap clones of one multiplexed connection), implementing
/// [`hotlimit::Decide`] so that an HTTP layer can use a Redis limit as its policy. Built by
/// [`RedisLimiter::with_connection`]. Failures are decided by the limiter's
/// [`OnError`](crate::OnError); the only error is [`Error::KeyTooLong`].
///
/// # Examples
///
/// ```no_run
/// use hotlimit::{Decide, Rate};
/// use hotlimit_redis::{OnError, RedisLimiter};
///
/// # async fn run(con: redis::aio::ConnectionManager) -> Result<(), Box<dyn std::error::Error>> {
/// let per_ip = RedisLimiter::gcra(Rate::per_minute(100)?, OnError::FailOpen)
///     .prefix("ip:")
///     .build()?
///     .with_connection(con);
/// let d = per_ip.decide("198.51.100.4", 1).await?;
/// println!("{} left, full in {:?}", d.remaining(), d.reset());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct RedisDecide<C> {
    limiter: RedisLimiter,
    con: C,
}

impl<C> RedisDecide<C> {
    pub(crate) fn new(limiter: RedisLimiter, con: C) -> Self {
        RedisDecide { limiter, con }
    }

    /// The limiter (for its [`stats`](RedisLimiter::stats)).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use hotlimit::Rate;
    /// # use hotlimit_redis::{OnError, RedisLimiter};
    /// # fn f(con: redis::aio::ConnectionManager) -> Result<(), Box<dyn std::error::Error>> {
    /// let d = RedisLimiter::gcra(Rate::per_second(1)?, OnError::FailOpen).build()?.with_connection(con);
    /// assert_eq!(d.limiter().stats().decisions, 0);
    /// # Ok(()) }
    /// ```
    pub fn limiter(&self) -> &RedisLimiter {
        &self.limiter
    }
}

impl RedisLimiter {
    /// This limiter bound to an async connection: a [`hotlimit::Decide`] for the tower layer.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use hotlimit::{Decide, Rate};
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// # async fn run(con: redis::aio::ConnectionManager) -> Result<(), Box<dyn std::error::Error>> {
    /// let policy = RedisLimiter::gcra(Rate::per_second(10)?, OnError::FailOpen).build()?.with_connection(con);
    /// let d = policy.decide("203.0.113.9", 1).await?;
    /// # let _ = d;
    /// # Ok(()) }
    /// ```
    pub fn with_connection<C>(self, con: C) -> RedisDecide<C> {
        RedisDecide::new(self, con)
    }
}

/// The future of [`RedisDecide::decide`].
pub type DecideFuture = Pin<Box<dyn Future<Output = Result<Decision, Error>> + Send>>;

impl<C> Decide for RedisDecide<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    type Key = str;
    type Error = Error;
    type Future = DecideFuture;

    fn decide(&self, key: &str, permits: u32) -> DecideFuture {
        let limiter = self.limiter.clone();
        let mut con = self.con.clone();
        let key = key.to_owned();
        Box::pin(async move { limiter.decide_async(&mut con, &key, permits).await })
    }

    fn quota(&self) -> Quota {
        self.limiter.quota()
    }
}
