//! [`OnError`]: what a limiter decides when Redis cannot.

use std::fmt;
use std::time::Duration;

use hotlimit::{ConfigError, Decision, Denied, Gcra, Keyed, Quota, Rate};

/// What a limiter decides when Redis does not answer in time, answers with an error, or is
/// known to be down (within [`reprobe_after`](crate::RedisLimiterBuilder::reprobe_after) of the
/// last failure). There is no default: every builder takes one.
///
/// # Examples
///
/// ```
/// use hotlimit::Rate;
/// use hotlimit_redis::OnError;
///
/// // Keep serving, at most 10 per second per key in this process, while Redis is away.
/// let policy = OnError::fallback(Rate::per_second(10)?)?;
/// assert!(matches!(policy, OnError::Fallback(_)));
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[derive(Debug)]
pub enum OnError {
    /// Admit every request (availability over the limit). The decision reports the quota's
    /// full limit as remaining and a zero reset.
    FailOpen,
    /// Refuse every request (the limit over availability), with a retry-after of
    /// [`reprobe_after`](crate::RedisLimiterBuilder::reprobe_after): when Redis is tried again.
    FailClosed,
    /// Decide in this process with a per-key hotlimit [`Gcra`] at the fallback's own rate (a
    /// share of the global one, typically: each process admits at most that).
    Fallback(Box<Fallback>),
}

impl OnError {
    /// A fallback to an in-process per-key GCRA at `rate` (burst `rate.limit()`, at most
    /// 100,000 keys; new keys beyond that are refused until idle ones are evicted).
    ///
    /// # Errors
    ///
    /// [`hotlimit::ConfigError`] when `rate` cannot build a [`Gcra`] (an interval under 1 ns).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::OnError;
    ///
    /// let policy = OnError::fallback(Rate::per_minute(60)?)?;
    /// # let _ = policy;
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn fallback(rate: Rate) -> Result<OnError, ConfigError> {
        Ok(OnError::Fallback(Box::new(Fallback {
            limiter: Keyed::<String, Gcra>::gcra(rate).build()?,
            quota: Quota::new(rate.limit(), rate.period()),
        })))
    }

    /// The decision this policy makes for `n` permits under `key`.
    pub(crate) fn decide(&self, quota: Quota, key: &str, n: u32, reprobe: Duration) -> Decision {
        match self {
            OnError::FailOpen => Decision::allowed(quota, quota.limit(), Duration::ZERO),
            OnError::FailClosed => {
                Decision::denied(quota, Denied::new(Some(reprobe)), 0, Duration::ZERO)
            }
            OnError::Fallback(f) => f.decide(key, n),
        }
    }
}

/// The in-process limiter of [`OnError::Fallback`].
///
/// # Examples
///
/// ```
/// use hotlimit::Rate;
/// use hotlimit_redis::OnError;
///
/// let OnError::Fallback(fallback) = OnError::fallback(Rate::per_second(5)?)? else { unreachable!() };
/// assert_eq!(fallback.quota().limit(), 5);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
pub struct Fallback {
    limiter: Keyed<String, Gcra>,
    quota: Quota,
}

impl Fallback {
    /// The fallback's own quota (what its decisions report).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::OnError;
    ///
    /// let OnError::Fallback(f) = OnError::fallback(Rate::per_second(7)?)? else { unreachable!() };
    /// assert_eq!(f.quota().limit(), 7);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn quota(&self) -> Quota {
        self.quota
    }

    /// In process, `remaining` and `reset` are not tracked per key: a grant reports 0 remaining
    /// and a zero reset, a denial its exact retry-after.
    fn decide(&self, key: &str, n: u32) -> Decision {
        match self.limiter.try_acquire_n(&key.to_owned(), n) {
            Ok(()) => Decision::allowed(self.quota, 0, Duration::ZERO),
            Err(denied) => Decision::denied(self.quota, denied, 0, Duration::ZERO),
        }
    }
}

impl fmt::Debug for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fallback")
            .field("quota", &self.quota)
            .field("keys", &self.limiter.len())
            .finish()
    }
}
