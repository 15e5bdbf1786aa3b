//! [`Error`]: a decision that could not be made (a bad builder is the core's
//! [`ConfigError`](hotlimit::ConfigError)).

use std::fmt;
use std::time::Duration;

/// A decision that could not be made: the caller's input was refused (no round trip was made).
///
/// Redis being down, slow or refusing a script is **not** an `Error`: it is what the limiter's
/// [`OnError`](crate::OnError) policy decides, and it is counted in
/// [`Stats::errors`](crate::Stats::errors). [`Error::Redis`] and [`Error::Timeout`] are only
/// returned by the calls that say so
/// ([`RedisLimiter::decide_or_error_async`](crate::RedisLimiter::decide_or_error_async)).
///
/// # Examples
///
/// ```
/// use hotlimit::Rate;
/// use hotlimit_redis::{Error, OnError, RedisLimiter};
///
/// let limiter = RedisLimiter::gcra(Rate::per_second(1)?, OnError::FailClosed)
///     .prefix("")
///     .max_key_len(8)
///     .build()?;
/// let err = limiter.check_key("a-key-longer-than-eight").unwrap_err();
/// assert!(matches!(err, Error::KeyTooLong { len: 23, max: 8 }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The key (prefix included) is longer than the limiter's
    /// [`max_key_len`](crate::RedisLimiterBuilder::max_key_len).
    KeyTooLong {
        /// The key's length in bytes, prefix included.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Redis answered with an error, or the connection failed.
    Redis(redis::RedisError),
    /// No answer within the deadline.
    Timeout(Duration),
    /// The script answered something that is not the four integers it returns (another
    /// program wrote the key with a different type, or a foreign script has the same name).
    BadReply(String),
    /// The server's `maxmemory-policy` evicts keys that have an expiry (every limiter key has
    /// one): an evicted key resets its limit (see [`check_eviction`](crate::check_eviction)).
    Evicting(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::KeyTooLong { len, max } => {
                write!(f, "key of {len} bytes is longer than max_key_len = {max}")
            }
            Error::Redis(e) => write!(f, "redis: {e}"),
            Error::Timeout(d) => write!(f, "no answer from redis within {d:?}"),
            Error::BadReply(r) => write!(f, "unexpected reply from the limiter script: {r}"),
            Error::Evicting(p) => write!(
                f,
                "maxmemory-policy {p} evicts keys with an expiry: a limit resets when its key is evicted (use noeviction)"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Redis(e) => Some(e),
            _ => None,
        }
    }
}

impl From<redis::RedisError> for Error {
    fn from(e: redis::RedisError) -> Self {
        Error::Redis(e)
    }
}
