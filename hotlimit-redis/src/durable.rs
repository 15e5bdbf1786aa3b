//! [`Durable`]: grants that count only once replicas hold them (Redis `WAIT`).

use std::time::Duration;

use redis::{ErrorKind, RedisError, RedisResult, Value};

/// Durable grants: after its script, a request waits (`WAIT`, in the same pipeline: no extra
/// round trip) until `replicas` replicas have acknowledged every write before it, at most
/// `timeout`. A grant (or a lease) that fewer replicas acknowledged does not count: the
/// limiter's [`OnError`](crate::OnError) policy decides it, as a failed round trip. A failover
/// to a replica that acknowledged then loses nothing a grant was decided on. The server's
/// own permits are still charged (the write happened on the primary): under-use, never
/// over-admission.
///
/// With leases the wait is paid once per lease, not per grant.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use hotlimit_redis::Durable;
///
/// let d = Durable::new(1, Duration::from_millis(20));
/// assert_eq!(d.replicas(), 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Durable {
    replicas: u32,
    /// Whole milliseconds, at least 1 (`WAIT`'s 0 would wait for ever).
    timeout_ms: u64,
}

impl Durable {
    /// Wait for `replicas` replicas, at most `timeout` (whole milliseconds, at least 1: it
    /// shares the decision's deadline, so keep it well under it).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let d = hotlimit_redis::Durable::new(2, Duration::from_millis(10));
    /// assert_eq!(d.timeout(), Duration::from_millis(10));
    /// ```
    pub fn new(replicas: u32, timeout: Duration) -> Durable {
        Durable {
            replicas,
            timeout_ms: u64::try_from(timeout.as_millis())
                .unwrap_or(u64::MAX)
                .max(1),
        }
    }

    /// The replicas that must acknowledge a grant.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// assert_eq!(hotlimit_redis::Durable::new(1, Duration::from_millis(5)).replicas(), 1);
    /// ```
    pub fn replicas(&self) -> u32 {
        self.replicas
    }

    /// The longest wait for them.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::time::Duration;
    /// let d = hotlimit_redis::Durable::new(1, Duration::from_micros(10));
    /// assert_eq!(d.timeout(), Duration::from_millis(1));
    /// ```
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    pub(crate) fn command(&self) -> redis::Cmd {
        let mut cmd = redis::cmd("WAIT");
        cmd.arg(self.replicas).arg(self.timeout_ms);
        cmd
    }

    /// Whether `WAIT`'s reply says enough replicas acknowledged.
    pub(crate) fn acknowledged(&self, reply: Option<RedisResult<Value>>) -> bool {
        matches!(reply, Some(Ok(Value::Int(n))) if n >= i64::from(self.replicas))
    }

    /// The error a script's reply becomes when its write is not durable.
    pub(crate) fn not_durable() -> RedisError {
        RedisError::from((
            ErrorKind::Client,
            "not durable",
            "fewer replicas than asked for acknowledged the write (WAIT)".to_string(),
        ))
    }
}
