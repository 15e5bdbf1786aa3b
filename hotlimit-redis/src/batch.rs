//! The batch: many decisions of one [`RedisLimiter`] in one round trip (one pipeline of
//! scripts), blocking or async, each decided on its own.

use hotlimit::Decision;
use redis::aio::ConnectionLike;

use crate::connection::SyncConnection;
use crate::deadline::Deadline;
use crate::error::Error;
use crate::limiter::{Ask, RedisLimiter, Step};
use crate::transport::{Call, Replies};

impl RedisLimiter {
    /// Decide many requests in one round trip (a pipeline of scripts), for a caller that admits
    /// a batch of jobs. Each request is decided on its own (not all or nothing), in order; the
    /// answers are in the requests' order. Requests answered locally (cache, n above the burst)
    /// are not sent. On a cluster, the keys sent must hash to one slot (a common hash tag).
    ///
    /// # Errors
    ///
    /// [`Error::KeyTooLong`] for the first key that is too long; then nothing is decided.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// # async fn run(mut con: redis::aio::ConnectionManager) -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::gcra(Rate::per_second(100)?, OnError::FailClosed).build()?;
    /// let decisions = limiter.decide_batch_async(&mut con, &[("a", 1), ("b", 3), ("a", 2)]).await?;
    /// assert_eq!(decisions.len(), 3);
    /// # Ok(()) }
    /// ```
    pub async fn decide_batch_async<C: ConnectionLike + Send>(
        &self,
        con: &mut C,
        requests: &[(&str, u32)],
    ) -> Result<Vec<Decision>, Error> {
        let (mut out, asks) = self.batch_steps(requests)?;
        if !asks.is_empty() {
            let deadline = self.round_trip();
            let replies = self.batch_call(&asks).send_async(con, &deadline).await;
            self.batch_finish(&mut out, &asks, replies, &deadline);
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// [`decide_batch_async`](Self::decide_batch_async) over a blocking connection.
    ///
    /// # Errors
    ///
    /// [`Error::KeyTooLong`] for the first key that is too long; then nothing is decided.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter, SyncConnection};
    ///
    /// let limiter = RedisLimiter::gcra(Rate::per_second(100)?, OnError::FailClosed).build()?;
    /// let mut con = SyncConnection::new(redis::Client::open("redis://127.0.0.1/")?);
    /// let decisions = limiter.decide_batch_blocking(&mut con, &[("job:1", 1), ("job:2", 1)])?;
    /// assert_eq!(decisions.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn decide_batch_blocking(
        &self,
        con: &mut SyncConnection,
        requests: &[(&str, u32)],
    ) -> Result<Vec<Decision>, Error> {
        let (mut out, asks) = self.batch_steps(requests)?;
        if !asks.is_empty() {
            let deadline = self.round_trip();
            let replies = self.batch_call(&asks).send_blocking(con, &deadline);
            self.batch_finish(&mut out, &asks, replies, &deadline);
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// The local steps of a batch: the decisions made locally (by position), and the requests
    /// to send with their positions.
    #[allow(clippy::type_complexity)]
    fn batch_steps(
        &self,
        requests: &[(&str, u32)],
    ) -> Result<(Vec<Option<Decision>>, Vec<(usize, Ask)>), Error> {
        for (key, _) in requests {
            self.check_key(key)?;
        }
        let mut out = vec![None; requests.len()];
        let mut asks = Vec::new();
        for (i, (key, n)) in requests.iter().enumerate() {
            match self.step(key, *n)? {
                Step::Done(d) => out[i] = Some(d),
                Step::Ask(now) => asks.push((i, self.ask(key, *n, now))),
            }
        }
        Ok((out, asks))
    }

    /// The scripts of `asks`, in one request.
    fn batch_call(&self, asks: &[(usize, Ask)]) -> Call {
        let mut call = self.call();
        for (_, ask) in asks {
            self.push(&mut call, ask);
        }
        call
    }

    /// Fills `out` from the replies, or from the policy for what could not be decided.
    fn batch_finish(
        &self,
        out: &mut [Option<Decision>],
        asks: &[(usize, Ask)],
        replies: Result<Replies, Error>,
        deadline: &Deadline,
    ) {
        match replies {
            Ok(replies) => {
                let mut replies = replies.into_iter();
                for (i, ask) in asks {
                    let reply = replies.next().ok_or_else(|| {
                        Error::BadReply("fewer replies than scripts in the pipeline".into())
                    });
                    out[*i] = Some(self.settle(ask, reply, deadline).decision());
                }
            }
            Err(e) => {
                for (i, ask) in asks {
                    out[*i] = Some(self.failed(ask, &e));
                }
            }
        }
    }
}
