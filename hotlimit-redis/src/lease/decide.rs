//! The async side of a [`LeasedGcra`]: [`LeasedGcra::decide_async`], whose refills go over
//! the caller's async connection, and [`LeasedDecide`], the limiter bound to one as a
//! [`Decide`] for the tower layer.

use std::time::Duration;

use hotlimit::{Clock, Decide, Decision, Denied, Quota};
use redis::aio::ConnectionLike;

use super::{next, LeasedGcra, Next};
use crate::decide::DecideFuture;
use crate::error::Error;

impl<C: Clock> LeasedGcra<C> {
    /// Decides `n` permits under `key` as [`try_acquire_n`](Self::try_acquire_n) does, with what
    /// headers need (`remaining`: permits of the key's current lease whose slots have come, at
    /// most the burst; `reset`: when the TAT this process last leased to is reached); a refill
    /// goes over `con` (a `ConnectionManager` or a cluster connection), within the deadline.
    ///
    /// # Errors
    ///
    /// [`Error::KeyTooLong`] only.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{LeasedGcra, OnError};
    ///
    /// # async fn run(mut con: redis::aio::ConnectionManager) -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = LeasedGcra::builder(Rate::per_second(1000)?, OnError::FailOpen)
    ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
    /// let d = limiter.decide_async(&mut con, "tenant-7", 1).await?;
    /// println!("{} left", d.remaining());
    /// # Ok(()) }
    /// ```
    pub async fn decide_async<Conn: ConnectionLike + Send>(
        &self,
        con: &mut Conn,
        key: &str,
        n: u32,
    ) -> Result<Decision, Error> {
        self.check_key(key)?;
        let s = &self.shared;
        if u64::from(n) > s.gcra.burst() {
            return Ok(Decision::denied(
                s.quota,
                Denied::new(None),
                0,
                Duration::ZERO,
            ));
        }
        let state = match self.state(key) {
            Ok(state) => state,
            Err(denied) => return Ok(Decision::denied(s.quota, denied, 0, Duration::ZERO)),
        };
        let outcome = if n == 0 {
            Ok(())
        } else {
            let now = s.clock.now();
            let taken = match next(state.lease.take(u64::from(n), now, s.interval), now) {
                Next::Done(outcome) => outcome,
                Next::Refill { granted } => {
                    let refilled = self.refill_async(con, &state, key, n, now).await;
                    self.after_refill(&state, key, n, granted, refilled)
                }
            };
            taken.map(drop)
        };
        Ok(self.decision(&state, outcome))
    }

    /// This limiter bound to an async connection: a [`Decide`] for the tower layer.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use hotlimit::{Decide, Rate};
    /// use hotlimit_redis::{LeasedGcra, OnError};
    ///
    /// # async fn run(con: redis::aio::ConnectionManager) -> Result<(), Box<dyn std::error::Error>> {
    /// let policy = LeasedGcra::builder(Rate::per_second(1000)?, OnError::FailOpen)
    ///     .build(redis::Client::open("redis://127.0.0.1/")?)?
    ///     .with_connection(con);
    /// let d = policy.decide("tenant-7", 1).await?;
    /// # let _ = d;
    /// # Ok(()) }
    /// ```
    pub fn with_connection<Conn>(self, con: Conn) -> LeasedDecide<C, Conn> {
        LeasedDecide { limiter: self, con }
    }
}

/// A [`LeasedGcra`] with an async connection for its refills, as a [`Decide`]: the tower
/// layer's policy over a leased limit. Built by [`LeasedGcra::with_connection`]. Its
/// [`quota`](Decide::quota) is the truthful GCRA quota, the burst b per b·I.
///
/// # Examples
///
/// ```no_run
/// use hotlimit::{Decide, Rate};
/// use hotlimit_redis::{LeasedGcra, OnError};
///
/// # async fn run(con: redis::aio::ConnectionManager) -> Result<(), Box<dyn std::error::Error>> {
/// let per_tenant = LeasedGcra::builder(Rate::per_second(10_000)?, OnError::FailClosed)
///     .burst(500)
///     .build(redis::Client::open("redis://127.0.0.1/")?)?
///     .with_connection(con);
/// assert_eq!(per_tenant.quota().limit(), 500);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct LeasedDecide<C: Clock, Conn> {
    limiter: LeasedGcra<C>,
    con: Conn,
}

impl<C: Clock, Conn> LeasedDecide<C, Conn> {
    /// The limiter (for its [`stats`](LeasedGcra::stats) and returns).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use hotlimit::Rate;
    /// # use hotlimit_redis::{LeasedGcra, OnError};
    /// # fn f(con: redis::aio::ConnectionManager) -> Result<(), Box<dyn std::error::Error>> {
    /// let d = LeasedGcra::builder(Rate::per_second(10)?, OnError::FailOpen)
    ///     .build(redis::Client::open("redis://127.0.0.1/")?)?
    ///     .with_connection(con);
    /// assert_eq!(d.limiter().stats().leases, 0);
    /// # Ok(()) }
    /// ```
    pub fn limiter(&self) -> &LeasedGcra<C> {
        &self.limiter
    }
}

impl<C, Conn> Decide for LeasedDecide<C, Conn>
where
    C: Clock + 'static,
    Conn: ConnectionLike + Clone + Send + Sync + 'static,
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
