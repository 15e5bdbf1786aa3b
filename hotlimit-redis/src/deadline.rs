//! [`Deadline`]: one decision's time budget, shared by everything it waits for. Below both
//! the connection (`connection.rs`, which bounds its reads by it) and the round trip
//! (`transport.rs`, which sends over the connection).

use std::time::{Duration, Instant};

use redis::{RedisError, RedisResult};

use crate::error::Error;

/// One decision's deadline: everything it waits for (connecting, writing, reading, a
/// `NOSCRIPT` reload) shares it, so the decision waits at most `total` in all.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Deadline {
    start: Instant,
    total: Duration,
}

impl Deadline {
    /// A deadline `total` from now.
    pub(crate) fn new(total: Duration) -> Deadline {
        Deadline {
            start: Instant::now(),
            total,
        }
    }

    /// The time left.
    ///
    /// # Errors
    ///
    /// A timeout (an I/O `TimedOut`, which [`Deadline::error`] turns into
    /// [`Error::Timeout`]) when none is left.
    pub(crate) fn left(&self) -> RedisResult<Duration> {
        match self.total.checked_sub(self.start.elapsed()) {
            Some(left) if !left.is_zero() => Ok(left),
            _ => Err(RedisError::from(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the decision's deadline has passed",
            ))),
        }
    }

    /// The whole deadline.
    pub(crate) fn total(&self) -> Duration {
        self.total
    }

    /// A client error as ours: a timeout (a socket's, or the deadline's) is
    /// [`Error::Timeout`] with the whole deadline.
    pub(crate) fn error(&self, e: RedisError) -> Error {
        if e.is_timeout() {
            Error::Timeout(self.total)
        } else {
            Error::Redis(e)
        }
    }
}
