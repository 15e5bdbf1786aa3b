//! [`RedisLimiter`]: a GCRA or an exact sliding log whose state lives in Redis, with its deadline,
//! failure policy, local denial cache and counters.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hotlimit::{Decision, Denied, Quota, Rate};
use redis::aio::ConnectionLike;
use redis::{ErrorKind, RedisError, RedisResult, ServerErrorKind, Value};

use crate::cache::DenialCache;
use crate::connection::SyncConnection;
use crate::error::Error;
use crate::policy::OnError;
use crate::script::{Algorithm, Reply};
use crate::stats::{Counters, Stats};
use hotlimit::ConfigError;

/// A rate limit shared by every process that builds the same limiter against the same Redis:
/// each decision is one Lua script, one round trip, atomic on the server, timed by the
/// server's clock.
///
/// - [`RedisLimiter::gcra`]: the core's [`Gcra`](hotlimit::Gcra) (smooth rate, burst), one
///   integer per key (its TAT in µs), written only on a grant, expiring when the key is full
///   again.
/// - [`RedisLimiter::sliding_log`]: the core's [`SlidingLog`](hotlimit::SlidingLog) (at most
///   `limit` in every window of `period`), a list of at most `limit` grant times per key,
///   expiring when its newest leaves the window. A rejected request stores nothing.
///
/// The limiter is cheap to clone (one `Arc`): clones share the cache and the counters. It holds
/// no connection: pass one to each call ([`decide_blocking`](Self::decide_blocking) with a
/// [`SyncConnection`], [`decide_async`](Self::decide_async) with a `ConnectionManager` or a
/// cluster connection), or bind one with [`with_connection`](Self::with_connection) for
/// [`hotlimit::Decide`].
///
/// # Examples
///
/// ```no_run
/// use hotlimit::Rate;
/// use hotlimit_redis::{OnError, RedisLimiter, SyncConnection};
///
/// let limiter = RedisLimiter::gcra(Rate::per_second(10)?, OnError::FailClosed).build()?;
/// let mut con = SyncConnection::new(redis::Client::open("redis://127.0.0.1/")?);
/// let decision = limiter.decide_blocking(&mut con, "user:42", 1)?;
/// if !decision.is_allowed() {
///     println!("retry after {:?}", decision.denial().unwrap().retry_after());
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct RedisLimiter {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    algorithm: Algorithm,
    quota: Quota,
    prefix: Vec<u8>,
    max_key_len: usize,
    deadline: Duration,
    reprobe_after: Duration,
    on_error: OnError,
    cache: DenialCache,
    /// Local µs (the cache's clock) until which Redis is not asked; 0 when it is up.
    down_until: AtomicU64,
    counters: Counters,
    test_clock: Option<TestClock>,
}

/// Builds a [`RedisLimiter`]: see [`RedisLimiter::gcra`] and [`RedisLimiter::sliding_log`].
///
/// # Examples
///
/// ```
/// use hotlimit::Rate;
/// use hotlimit_redis::{OnError, RedisLimiter};
/// use std::time::Duration;
///
/// let limiter = RedisLimiter::sliding_log(Rate::per_minute(100)?, OnError::FailOpen)
///     .prefix("api:")
///     .deadline(Duration::from_millis(20))
///     .build()?;
/// assert_eq!(limiter.quota().limit(), 100);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct RedisLimiterBuilder {
    kind: Kind,
    rate: Rate,
    burst: Option<u64>,
    on_error: OnError,
    prefix: Vec<u8>,
    max_key_len: usize,
    deadline: Duration,
    reprobe_after: Duration,
    cache_capacity: usize,
    test_clock: Option<TestClock>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Gcra,
    Log,
}

/// The test hook: a `now` in microseconds passed to the scripts instead of the server's `TIME`.
/// Not part of the API (tests compare the scripts with the core on a manual clock).
#[doc(hidden)]
#[derive(Clone, Debug, Default)]
pub struct TestClock(Arc<AtomicU64>);

impl TestClock {
    /// Sets the time the scripts see, in microseconds.
    pub fn set_micros(&self, now: u64) {
        // Relaxed: a test value read by the next call on the same test's thread or task.
        self.0.store(now, Ordering::Relaxed);
    }

    fn micros(&self) -> u64 {
        // Relaxed: as above.
        self.0.load(Ordering::Relaxed)
    }
}

/// Default deadline for one decision's round trip.
const DEFAULT_DEADLINE: Duration = Duration::from_millis(100);
/// Default time for which a failure sends decisions to the policy without asking Redis.
const DEFAULT_REPROBE: Duration = Duration::from_millis(100);
/// Default longest key, prefix included.
const DEFAULT_MAX_KEY_LEN: usize = 4096;
/// Default number of keys whose denials are cached.
const DEFAULT_CACHE: usize = 10_000;

impl RedisLimiter {
    /// A GCRA limiter at `rate` (burst `rate.limit()` unless set), with `on_error` deciding
    /// when Redis cannot.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// let limiter = RedisLimiter::gcra(Rate::per_second(3)?, OnError::FailClosed).burst(1).build()?;
    /// assert_eq!(limiter.quota().limit(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn gcra(rate: Rate, on_error: OnError) -> RedisLimiterBuilder {
        RedisLimiterBuilder::new(Kind::Gcra, rate, on_error)
    }

    /// An exact sliding-log limiter: at most `rate.limit()` permits in every window of
    /// `rate.period()` (rounded up to whole microseconds), with `on_error` deciding when Redis
    /// cannot.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// let limiter = RedisLimiter::sliding_log(Rate::per_hour(50)?, OnError::FailOpen).build()?;
    /// assert_eq!(limiter.quota().limit(), 50);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sliding_log(rate: Rate, on_error: OnError) -> RedisLimiterBuilder {
        RedisLimiterBuilder::new(Kind::Log, rate, on_error)
    }
}

impl RedisLimiterBuilder {
    fn new(kind: Kind, rate: Rate, on_error: OnError) -> Self {
        RedisLimiterBuilder {
            kind,
            rate,
            burst: None,
            on_error,
            prefix: b"hotlimit:".to_vec(),
            max_key_len: DEFAULT_MAX_KEY_LEN,
            deadline: DEFAULT_DEADLINE,
            reprobe_after: DEFAULT_REPROBE,
            cache_capacity: DEFAULT_CACHE,
            test_clock: None,
        }
    }

    /// GCRA only: the most permits taken at once (default: the rate's limit). A sliding
    /// log's burst is its limit; setting this on a log is a [`ConfigError`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// let limiter = RedisLimiter::gcra(Rate::per_second(100)?, OnError::FailOpen).burst(10).build()?;
    /// # let _ = limiter;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn burst(mut self, burst: u64) -> Self {
        self.burst = Some(burst);
        self
    }

    /// The bytes put before every key (default `hotlimit:`). Two limiters with different
    /// rates must not share a prefix: they would read each other's state.
    ///
    /// Every script touches exactly one key, so on Redis Cluster any key works; a key with a
    /// hash tag (`{tenant}:user`) places all of one tenant's keys in one slot, which a
    /// [batch](RedisLimiter::decide_batch_async) on a cluster needs.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// let limiter = RedisLimiter::gcra(Rate::per_second(1)?, OnError::FailOpen).prefix("rl:login:").build()?;
    /// assert_eq!(limiter.redis_key("alice"), b"rl:login:alice");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn prefix(mut self, prefix: impl AsRef<[u8]>) -> Self {
        self.prefix = prefix.as_ref().to_vec();
        self
    }

    /// The longest key accepted, prefix included (default 4,096 bytes); a longer one is
    /// [`Error::KeyTooLong`] with no round trip. It bounds what each cached denial holds.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// let limiter = RedisLimiter::gcra(Rate::per_second(1)?, OnError::FailOpen).max_key_len(64).build()?;
    /// assert!(limiter.check_key(&"x".repeat(100)).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_key_len(mut self, max: usize) -> Self {
        self.max_key_len = max;
        self
    }

    /// How long one decision may wait for Redis (default 100 ms), connecting included for a
    /// [`SyncConnection`]. Past it the policy decides, and the call is **not** retried (a
    /// script that ran but whose answer was late has charged its permits; a retry could
    /// charge them twice).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    /// use std::time::Duration;
    ///
    /// let limiter = RedisLimiter::gcra(Rate::per_second(1)?, OnError::FailOpen)
    ///     .deadline(Duration::from_millis(5))
    ///     .build()?;
    /// assert_eq!(limiter.deadline(), Duration::from_millis(5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// After a connection failure or a timeout, how long decisions go straight to the policy
    /// without asking Redis (default 100 ms). Requests are never queued for a server that is
    /// down: when it is back, the next call after this interval asks it again.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    /// use std::time::Duration;
    ///
    /// let limiter = RedisLimiter::gcra(Rate::per_second(1)?, OnError::FailClosed)
    ///     .reprobe_after(Duration::from_secs(1))
    ///     .build()?;
    /// # let _ = limiter;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reprobe_after(mut self, reprobe_after: Duration) -> Self {
        self.reprobe_after = reprobe_after;
        self
    }

    /// How many keys' denials are remembered locally (default 10,000; 0 turns the cache off).
    /// While a key's denial holds, calls for it are denied with no round trip.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// let limiter = RedisLimiter::gcra(Rate::per_second(1)?, OnError::FailOpen).local_cache(0).build()?;
    /// # let _ = limiter;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn local_cache(mut self, keys: usize) -> Self {
        self.cache_capacity = keys;
        self
    }

    /// Test hook: the scripts use this clock's microseconds instead of the server's `TIME`.
    #[doc(hidden)]
    pub fn test_clock(mut self, clock: TestClock) -> Self {
        self.test_clock = Some(clock);
        self
    }

    /// Builds the limiter.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the field: `rate` when a GCRA's emission interval is under
    /// 1 µs or a log's period exceeds 2^52 µs; `burst` when it is 0, when b × interval exceeds
    /// 2^52 µs, or when it is set on a sliding log; `deadline` when it is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// let err = RedisLimiter::sliding_log(Rate::per_second(5)?, OnError::FailOpen).burst(2).build();
    /// assert_eq!(err.unwrap_err().field(), "burst");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> Result<RedisLimiter, ConfigError> {
        let algorithm = match self.kind {
            Kind::Gcra => Algorithm::gcra(self.rate, self.burst)?,
            Kind::Log => {
                if let Some(burst) = self.burst {
                    return Err(ConfigError::invalid(
                        "burst",
                        burst,
                        "a sliding log's burst is its limit: set the rate instead",
                    ));
                }
                Algorithm::log(self.rate)?
            }
        };
        if self.deadline.is_zero() {
            return Err(ConfigError::invalid(
                "deadline",
                self.deadline,
                "must be more than zero",
            ));
        }
        Ok(RedisLimiter {
            shared: Arc::new(Shared {
                algorithm,
                quota: Quota::new(self.rate.limit(), self.rate.period()),
                prefix: self.prefix,
                max_key_len: self.max_key_len,
                deadline: self.deadline,
                reprobe_after: self.reprobe_after,
                on_error: self.on_error,
                cache: DenialCache::new(self.cache_capacity),
                down_until: AtomicU64::new(0),
                counters: Counters::default(),
                test_clock: self.test_clock,
            }),
        })
    }
}

/// The first step of every decision: answered locally, or to be asked of Redis.
pub(crate) enum Step {
    Done(Decision),
    Ask(Ask),
}

/// How an async decision ended: decided (locally or by Redis), or a failed round trip,
/// already counted by [`RedisLimiter::failed`], with the policy's decision and the error.
enum Sent {
    Decided(Decision),
    Failed(Decision, Error),
}

/// A request that goes to Redis.
pub(crate) struct Ask {
    /// The user's key (for the cache).
    pub(crate) user: Box<str>,
    /// The Redis key: prefix and user's key.
    pub(crate) key: Vec<u8>,
    pub(crate) n: u32,
    /// Local µs when it was sent (the cache's clock).
    pub(crate) sent: u64,
}

impl RedisLimiter {
    /// The policy's quota (limit per period), for `RateLimit-Policy`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// let limiter = RedisLimiter::gcra(Rate::per_minute(30)?, OnError::FailOpen).build()?;
    /// assert_eq!(limiter.quota().limit(), 30);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn quota(&self) -> Quota {
        self.shared.quota
    }

    /// The deadline of one decision.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    /// use std::time::Duration;
    ///
    /// let limiter = RedisLimiter::gcra(Rate::per_minute(30)?, OnError::FailOpen).build()?;
    /// assert_eq!(limiter.deadline(), Duration::from_millis(100));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn deadline(&self) -> Duration {
        self.shared.deadline
    }

    /// What has been decided so far, and how (a snapshot of the counters).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// let limiter = RedisLimiter::gcra(Rate::per_minute(30)?, OnError::FailOpen).build()?;
    /// assert_eq!(limiter.stats().decisions, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> Stats {
        self.shared.counters.snapshot(self.shared.cache.len())
    }

    /// The Redis key that holds `key`'s state: the prefix, then `key`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// let limiter = RedisLimiter::gcra(Rate::per_minute(30)?, OnError::FailOpen).build()?;
    /// assert_eq!(limiter.redis_key("bob"), b"hotlimit:bob");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn redis_key(&self, key: &str) -> Vec<u8> {
        let mut full = Vec::with_capacity(self.shared.prefix.len() + key.len());
        full.extend_from_slice(&self.shared.prefix);
        full.extend_from_slice(key.as_bytes());
        full
    }

    /// Checks that `key` is accepted (its length with the prefix is at most `max_key_len`).
    /// An empty key is accepted: its state is the prefix's own key.
    ///
    /// # Errors
    ///
    /// [`Error::KeyTooLong`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// let limiter = RedisLimiter::gcra(Rate::per_minute(30)?, OnError::FailOpen).build()?;
    /// assert!(limiter.check_key("").is_ok());
    /// assert!(limiter.check_key(&"k".repeat(1 << 20)).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_key(&self, key: &str) -> Result<(), Error> {
        let len = self.shared.prefix.len() + key.len();
        if len > self.shared.max_key_len {
            return Err(Error::KeyTooLong {
                len,
                max: self.shared.max_key_len,
            });
        }
        Ok(())
    }

    /// Local steps before a round trip: bad input, n above the burst, a cached denial, a
    /// server known to be down. Counts the decision.
    pub(crate) fn step(&self, key: &str, n: u32) -> Result<Step, Error> {
        self.check_key(key)?;
        let s = &self.shared;
        s.counters.decision();
        if u64::from(n) > s.algorithm.capacity() {
            // More than the limiter can ever hold: no round trip, never.
            return Ok(Step::Done(Decision::denied(
                s.quota,
                Denied::new(None),
                0,
                Duration::ZERO,
            )));
        }
        let now = s.cache.now();
        if s.test_clock.is_none() {
            if let Some(d) = s.cache.check(&s.algorithm, s.quota, key, n, now) {
                s.counters.local_denial();
                return Ok(Step::Done(d));
            }
        }
        // Relaxed: a hint shared by all callers; a stale read costs one extra probe or one
        // extra policy decision, nothing more.
        if now < s.down_until.load(Ordering::Relaxed) {
            return Ok(Step::Done(self.policy(key, n)));
        }
        Ok(Step::Ask(Ask {
            user: key.into(),
            key: self.redis_key(key),
            n,
            sent: now,
        }))
    }

    /// The decision of the policy, counted.
    fn policy(&self, key: &str, n: u32) -> Decision {
        let s = &self.shared;
        s.counters.fallback();
        s.on_error.decide(s.quota, key, n, s.reprobe_after)
    }

    /// The script invocation for `ask`.
    pub(crate) fn invocation(&self, ask: &Ask) -> redis::ScriptInvocation<'static> {
        let s = &self.shared;
        let (args, len) = s
            .algorithm
            .args(ask.n, s.test_clock.as_ref().map(TestClock::micros));
        let mut inv = s.algorithm.script().prepare_invoke();
        inv.key(&ask.key[..]);
        for a in &args[..len] {
            inv.arg(*a);
        }
        inv
    }

    /// An `EVALSHA` for `ask`, for pipelines (NOSCRIPT is handled by the caller).
    pub(crate) fn evalsha(&self, ask: &Ask) -> redis::Cmd {
        let s = &self.shared;
        let (args, len) = s
            .algorithm
            .args(ask.n, s.test_clock.as_ref().map(TestClock::micros));
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(s.algorithm.script().get_hash())
            .arg(1)
            .arg(&ask.key[..])
            .arg(&args[..len]);
        cmd
    }

    /// The script's answer turned into a decision (remembering a denial).
    pub(crate) fn finish(&self, ask: &Ask, value: &Value) -> Result<Decision, Error> {
        let s = &self.shared;
        let reply = Reply::parse(value)?;
        s.cache
            .remember(&s.algorithm, &ask.user, ask.n, &reply, ask.sent);
        Ok(reply.decision(s.quota))
    }

    /// A failed round trip: counted, Redis marked down if the connection is at fault, and the
    /// policy's decision.
    pub(crate) fn failed(&self, key: &str, ask: &Ask, error: &Error) -> Decision {
        let s = &self.shared;
        s.counters.error();
        if is_connection_fault(error) {
            let until = s.cache.now() + s.reprobe_after.as_micros() as u64;
            // Relaxed: see `step`.
            s.down_until
                .store(until.max(ask.sent + 1), Ordering::Relaxed);
        }
        self.policy(key, ask.n)
    }

    pub(crate) fn round_trip(&self) {
        self.shared.counters.round_trip();
    }

    /// Decide `n` permits under `key` over a blocking connection, charging them if granted.
    ///
    /// `n = 0` grants nothing and charges nothing: it reads `remaining` and `reset`. `n` above
    /// the burst (GCRA) or the limit (log) is denied with `retry_after() == None` with no round
    /// trip. A failure or a missed deadline is decided by the limiter's [`OnError`].
    ///
    /// # Errors
    ///
    /// [`Error::KeyTooLong`] only.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter, SyncConnection};
    ///
    /// let limiter = RedisLimiter::sliding_log(Rate::per_minute(5)?, OnError::FailClosed).build()?;
    /// let mut con = SyncConnection::new(redis::Client::open("redis+unix:///run/redis.sock")?);
    /// let d = limiter.decide_blocking(&mut con, "alice", 2)?;
    /// println!("allowed: {}, {} left", d.is_allowed(), d.remaining());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn decide_blocking(
        &self,
        con: &mut SyncConnection,
        key: &str,
        n: u32,
    ) -> Result<Decision, Error> {
        let ask = match self.step(key, n)? {
            Step::Done(d) => return Ok(d),
            Step::Ask(ask) => ask,
        };
        self.round_trip();
        let result = con
            .with(self.shared.deadline, |c| {
                self.invocation(&ask).invoke::<Value>(c)
            })
            .map_err(|e| into_error(e, self.shared.deadline))
            .and_then(|v| self.finish(&ask, &v));
        Ok(result.unwrap_or_else(|e| self.failed(key, &ask, &e)))
    }

    /// Decide `n` permits under `key` over an async connection (a
    /// [`ConnectionManager`](redis::aio::ConnectionManager), a cluster connection, or any
    /// [`ConnectionLike`]), within the deadline. As [`decide_blocking`](Self::decide_blocking)
    /// otherwise. Needs a Tokio runtime with its timer.
    ///
    /// # Errors
    ///
    /// [`Error::KeyTooLong`] only.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::gcra(Rate::per_second(100)?, OnError::FailOpen).build()?;
    /// let mut con = hotlimit_redis::connection_manager(
    ///     redis::Client::open("redis://127.0.0.1/")?, limiter.deadline()).await?;
    /// let d = limiter.decide_async(&mut con, "10.0.0.7", 1).await?;
    /// # let _ = d;
    /// # Ok(()) }
    /// ```
    pub async fn decide_async<C: ConnectionLike + Send>(
        &self,
        con: &mut C,
        key: &str,
        n: u32,
    ) -> Result<Decision, Error> {
        Ok(match self.send_async(con, key, n).await? {
            Sent::Decided(d) | Sent::Failed(d, _) => d,
        })
    }

    /// As [`decide_async`](Self::decide_async), but a failure is returned instead of being
    /// decided by the policy (it is still counted, and still marks the server down).
    ///
    /// # Errors
    ///
    /// [`Error::KeyTooLong`]; [`Error::Redis`], [`Error::Timeout`] or [`Error::BadReply`] when
    /// Redis did not decide. While the server is marked down, the policy's decision is returned
    /// (no round trip is made).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// # async fn run(mut con: redis::aio::ConnectionManager) -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::gcra(Rate::per_second(100)?, OnError::FailClosed).build()?;
    /// match limiter.try_decide_async(&mut con, "k", 1).await {
    ///     Ok(d) => println!("{}", d.is_allowed()),
    ///     Err(e) => eprintln!("redis could not decide: {e}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_decide_async<C: ConnectionLike + Send>(
        &self,
        con: &mut C,
        key: &str,
        n: u32,
    ) -> Result<Decision, Error> {
        match self.send_async(con, key, n).await? {
            Sent::Decided(d) => Ok(d),
            Sent::Failed(_, e) => Err(e),
        }
    }

    /// The body of [`decide_async`](Self::decide_async) and
    /// [`try_decide_async`](Self::try_decide_async), which differ only in what they return
    /// for a failed round trip: the policy's decision or the error.
    async fn send_async<C: ConnectionLike + Send>(
        &self,
        con: &mut C,
        key: &str,
        n: u32,
    ) -> Result<Sent, Error> {
        let ask = match self.step(key, n)? {
            Step::Done(d) => return Ok(Sent::Decided(d)),
            Step::Ask(ask) => ask,
        };
        Ok(match self.ask_async(con, &ask).await {
            Ok(d) => Sent::Decided(d),
            Err(e) => Sent::Failed(self.failed(key, &ask, &e), e),
        })
    }

    async fn ask_async<C: ConnectionLike + Send>(
        &self,
        con: &mut C,
        ask: &Ask,
    ) -> Result<Decision, Error> {
        self.round_trip();
        let inv = self.invocation(ask);
        let deadline = self.shared.deadline;
        match tokio::time::timeout(deadline, inv.invoke_async::<Value>(con)).await {
            Ok(Ok(value)) => self.finish(ask, &value),
            Ok(Err(e)) => Err(into_error(e, deadline)),
            Err(_) => Err(Error::Timeout(deadline)),
        }
    }

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
            self.round_trip();
            let deadline = self.shared.deadline;
            let sent = tokio::time::timeout(deadline, async {
                let first: Vec<RedisResult<Value>> =
                    self.pipeline(&asks, None).query_async(con).await?;
                let Some(again) = self.resend(&asks, &first) else {
                    return Ok((first, Vec::new()));
                };
                self.shared.algorithm.script().load_async(con).await?;
                Ok::<_, RedisError>((first, again.query_async(con).await?))
            })
            .await;
            let replies = match sent {
                Ok(Ok(replies)) => Ok(replies),
                Ok(Err(e)) => Err(into_error(e, deadline)),
                Err(_) => Err(Error::Timeout(deadline)),
            };
            self.batch_finish(requests, &mut out, &asks, replies);
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
            self.round_trip();
            let replies = con
                .with(self.shared.deadline, |c| {
                    let first: Vec<RedisResult<Value>> = self.pipeline(&asks, None).query(c)?;
                    let Some(again) = self.resend(&asks, &first) else {
                        return Ok((first, Vec::new()));
                    };
                    self.shared.algorithm.script().load(c)?;
                    Ok((first, again.query(c)?))
                })
                .map_err(|e| into_error(e, self.shared.deadline));
            self.batch_finish(requests, &mut out, &asks, replies);
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
                Step::Ask(ask) => asks.push((i, ask)),
            }
        }
        Ok((out, asks))
    }

    /// A pipeline of the scripts of `asks` (all of them, or those at the positions `only`),
    /// each reply returned on its own (one script's error does not fail the others).
    fn pipeline(&self, asks: &[(usize, Ask)], only: Option<&[usize]>) -> redis::Pipeline {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        match only {
            None => asks.iter().for_each(|(_, a)| {
                pipe.add_command(self.evalsha(a));
            }),
            Some(only) => only.iter().for_each(|&j| {
                pipe.add_command(self.evalsha(&asks[j].1));
            }),
        }
        pipe
    }

    /// The pipeline that sends again the scripts whose reply in `first` was NOSCRIPT (to send
    /// once the script is loaded), or `None` when every script ran.
    fn resend(
        &self,
        asks: &[(usize, Ask)],
        first: &[RedisResult<Value>],
    ) -> Option<redis::Pipeline> {
        let retry = noscript(first);
        (!retry.is_empty()).then(|| self.pipeline(asks, Some(&retry)))
    }

    /// Fills `out` from the pipeline's replies (a NOSCRIPT in the first one is replaced by the
    /// second's reply), or from the policy for what could not be decided.
    #[allow(clippy::type_complexity)]
    fn batch_finish(
        &self,
        requests: &[(&str, u32)],
        out: &mut [Option<Decision>],
        asks: &[(usize, Ask)],
        replies: Result<(Vec<RedisResult<Value>>, Vec<RedisResult<Value>>), Error>,
    ) {
        match replies {
            Ok((first, second)) => {
                let mut second = second.into_iter();
                for ((i, ask), reply) in asks.iter().zip(first) {
                    let reply = match reply {
                        Err(e) if is_noscript(&e) => second.next().unwrap_or(Err(e)),
                        other => other,
                    };
                    let decided = reply
                        .map_err(|e| into_error(e, self.shared.deadline))
                        .and_then(|v| self.finish(ask, &v));
                    out[*i] =
                        Some(decided.unwrap_or_else(|e| self.failed(requests[*i].0, ask, &e)));
                }
            }
            Err(e) => {
                for (i, ask) in asks {
                    out[*i] = Some(self.failed(requests[*i].0, ask, &e));
                }
            }
        }
    }

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
    pub fn with_connection<C>(self, con: C) -> crate::decide::RedisDecide<C> {
        crate::decide::RedisDecide::new(self, con)
    }
}

/// A client error as ours: a socket timeout (the blocking connection's deadline) is
/// [`Error::Timeout`] with the limiter's deadline.
fn into_error(e: RedisError, deadline: Duration) -> Error {
    if e.is_timeout() {
        Error::Timeout(deadline)
    } else {
        Error::Redis(e)
    }
}

fn is_noscript(e: &RedisError) -> bool {
    e.kind() == ErrorKind::Server(ServerErrorKind::NoScript)
}

/// Positions of the replies that were NOSCRIPT.
fn noscript(replies: &[RedisResult<Value>]) -> Vec<usize> {
    replies
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r, Err(e) if is_noscript(e)))
        .map(|(i, _)| i)
        .collect()
}

/// Whether `error` says the server or the connection is unusable (then the server is left
/// alone for `reprobe_after`), as opposed to an error about one request.
fn is_connection_fault(error: &Error) -> bool {
    match error {
        Error::Timeout(_) => true,
        Error::Redis(e) => {
            e.is_io_error()
                || e.is_connection_dropped()
                || e.is_connection_refusal()
                || e.is_timeout()
                || e.is_unrecoverable_error()
        }
        Error::KeyTooLong { .. } | Error::BadReply(_) => false,
    }
}
