//! [`RedisLimiter`]: a GCRA or an exact sliding log whose state lives in Redis: its local step
//! (bad input, the denial cache, a server known to be down), its single decisions, and what a
//! round trip's answer or failure becomes. The builder is in `limiter/builder.rs`, the batch in
//! `batch.rs`, the round trip itself in `transport.rs`, each algorithm in its own module.

use crate::sync::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hotlimit::{Decision, Denied, Quota};
use redis::aio::ConnectionLike;
use redis::{RedisResult, Value};

use crate::algorithm::Algorithm;
use crate::args::Args;
use crate::cache::{DenialCache, Entry};
use crate::connection::SyncConnection;
use crate::deadline::Deadline;
use crate::durable::Durable;
use crate::error::Error;
use crate::fence::Fence;
use crate::policy::OnError;
use crate::stats::{Counters, Stats};
use crate::transport::{is_connection_fault, Call, Lua, Replies};
use crate::waiting;

mod builder;

pub use builder::{RedisLimiterBuilder, TestClock};

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
/// - [`RedisLimiter::multi_window`]: the core's [`MultiWindow`](hotlimit::MultiWindow) (up to
///   eight hard windows, each a counted ring or an exact log, all or nothing), one key per
///   window in one hash slot, checked and recorded by one script. A rejected request stores
///   nothing.
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

/// What every clone of a limiter shares.
#[derive(Debug)]
pub(crate) struct Shared {
    algorithm: Algorithm,
    quota: Quota,
    prefix: Vec<u8>,
    max_key_len: usize,
    deadline: Duration,
    reprobe_after: Duration,
    on_error: OnError,
    cache: DenialCache,
    /// Local ns (the cache's clock) until which Redis is not asked; 0 when it is up.
    down_until: AtomicU64,
    counters: Counters,
    test_clock: Option<TestClock>,
    /// Fenced mode: the fence (see `fence.rs`), or none.
    fence: Option<Fence>,
    /// Durable grants: the replicas to wait for, or none.
    durable: Option<Durable>,
}

/// The first step of every decision: answered locally, or to be asked of Redis (the local
/// ns of the step).
pub(crate) enum Step {
    Done(Decision),
    Ask(u64),
}

/// How a decision ended: decided (locally or by Redis), or a failed round trip, already
/// counted, with the policy's decision and the error.
pub(crate) enum Sent {
    Decided(Decision),
    Failed(Decision, Error),
}

impl Sent {
    /// The decision: Redis's, or the policy's after a failure.
    pub(crate) fn decision(self) -> Decision {
        match self {
            Sent::Decided(d) | Sent::Failed(d, _) => d,
        }
    }

    /// Redis's decision, or the failure.
    pub(crate) fn into_result(self) -> Result<Decision, Error> {
        match self {
            Sent::Decided(d) => Ok(d),
            Sent::Failed(_, e) => Err(e),
        }
    }
}

/// A request that goes to Redis.
pub(crate) struct Ask {
    /// The user's key (for the cache and the policy).
    pub(crate) user: Box<str>,
    /// The Redis key: prefix and user's key.
    pub(crate) key: Vec<u8>,
    pub(crate) n: u32,
    /// Local ns when it was sent (the cache's clock).
    pub(crate) sent: u64,
    /// The fence's marker (fenced mode), or empty.
    pub(crate) marker: Vec<u8>,
    /// The waiting marker (GCRA: see `waiting.rs`), or empty (none: a log, or a key with no
    /// name in its slot for one).
    pub(crate) waiting: Vec<u8>,
}

impl Ask {
    /// The markers the script takes after the key: the fence's in fenced mode, then the
    /// waiting marker if any.
    fn markers(&self) -> ([&[u8]; 2], usize) {
        let mut markers: [&[u8]; 2] = [&[], &[]];
        let mut len = 0;
        for marker in [&self.marker, &self.waiting] {
            if !marker.is_empty() {
                markers[len] = marker.as_slice();
                len += 1;
            }
        }
        (markers, len)
    }
}

impl RedisLimiter {
    /// The policy's quota, for `RateLimit-Policy`: for the sliding log `limit` per `period`;
    /// for GCRA the burst b per the time it takes to refill it, b·I (what a client may spend
    /// from full, and how long until it may again), so that `remaining` is never above it.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    /// use std::time::Duration;
    ///
    /// let limiter = RedisLimiter::gcra(Rate::per_minute(30)?, OnError::FailOpen).build()?;
    /// assert_eq!(limiter.quota().limit(), 30);
    /// let bursty = RedisLimiter::gcra(Rate::per_minute(30)?, OnError::FailOpen).burst(5).build()?;
    /// assert_eq!((bursty.quota().limit(), bursty.quota().window()), (5, Duration::from_secs(10)));
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

    /// The Redis keys that hold `key`'s state: [`redis_key`](Self::redis_key) for GCRA and a
    /// log; one per window for [`multi_window`](Self::multi_window), all with one hash tag
    /// (one Redis Cluster slot): `redis_key` and `:i` when it has a hash tag, otherwise
    /// `{redis_key}:i` (or, for a key that is empty or holds a brace, `{h}redis_key:i` with h
    /// the key's 64-bit FNV-1a hash in hex).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// let limiter = RedisLimiter::multi_window(OnError::FailOpen)
    ///     .window(Rate::per_minute(100)?)
    ///     .exact(Rate::per_hour(2_000)?)
    ///     .build()?;
    /// assert_eq!(limiter.window_keys("bob"), vec![b"{hotlimit:bob}:0".to_vec(), b"{hotlimit:bob}:1".to_vec()]);
    /// assert_eq!(limiter.window_keys("{t1}:bob")[1], b"hotlimit:{t1}:bob:1");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn window_keys(&self, key: &str) -> Vec<Vec<u8>> {
        self.shared.algorithm.keys(&self.redis_key(key))
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
    /// server known to be down. Counts the decisions it makes. Inlined into each caller: the
    /// cached denial is the path that must cost almost nothing.
    #[inline(always)]
    pub(crate) fn step(&self, key: &str, n: u32) -> Result<Step, Error> {
        self.check_key(key)?;
        let s = &self.shared;
        if u64::from(n) > s.algorithm.capacity() {
            // More than the limiter can ever hold: no round trip, never.
            s.counters.refused();
            return Ok(Step::Done(Decision::denied(
                s.quota,
                Denied::new(None),
                0,
                Duration::ZERO,
            )));
        }
        let now = s.cache.now();
        if s.test_clock.is_none() {
            let rule = |e: &Entry| s.algorithm.cached(e, n, now, s.quota);
            if let Some(d) = s.cache.deny(key, rule) {
                s.counters.local_denial();
                return Ok(Step::Done(d));
            }
        }
        // Relaxed: a hint shared by all callers; a stale read costs one extra probe or one
        // extra policy decision, nothing more.
        if now < s.down_until.load(Ordering::Relaxed) {
            s.counters.skipped();
            return Ok(Step::Done(self.policy(key, n)));
        }
        Ok(Step::Ask(now))
    }

    /// The request for `n` under `key`, to send (counted), from a step at local `now`.
    pub(crate) fn ask(&self, key: &str, n: u32, now: u64) -> Ask {
        let s = &self.shared;
        s.counters.sent();
        let full = self.redis_key(key);
        let marker = match s.fence {
            Some(_) => Fence::marker(&s.prefix, &full),
            None => Vec::new(),
        };
        // A per-decision GCRA caller refused by leases' queue on its key marks it waiting.
        let waiting = match s.algorithm {
            Algorithm::Gcra(_) => waiting::marker(&full).unwrap_or_default(),
            _ => Vec::new(),
        };
        Ask {
            user: key.into(),
            key: full,
            n,
            sent: now,
            marker,
            waiting,
        }
    }

    /// The decision of the policy.
    fn policy(&self, key: &str, n: u32) -> Decision {
        let s = &self.shared;
        s.on_error.decide(s.quota, key, n, s.reprobe_after)
    }

    pub(crate) fn script(&self) -> &'static Lua {
        self.shared.algorithm.script()
    }

    /// The script's arguments for `ask` (with the waiting marker's lifetime when it has one).
    pub(crate) fn args(&self, ask: &Ask) -> Args {
        let s = &self.shared;
        let fence = s.fence.map_or(0, |f| f.horizon);
        let args = s
            .algorithm
            .args(ask.n, s.test_clock.as_ref().map(TestClock::micros), fence);
        match s.algorithm {
            Algorithm::Gcra(g) if !ask.waiting.is_empty() => {
                args.with_waiting(waiting::ttl_ms(g.tolerance()))
            }
            _ => args,
        }
    }

    /// Adds `ask`'s script to `call`: on its key (and the fence's marker), or on its windows'
    /// keys.
    pub(crate) fn push(&self, call: &mut Call, ask: &Ask) {
        let args = self.args(ask);
        match self.shared.algorithm {
            Algorithm::Multi(_) => {
                call.push_keys(&self.shared.algorithm.keys(&ask.key), args.as_slice());
            }
            Algorithm::Gcra(_) | Algorithm::Log(_) => {
                let (markers, len) = ask.markers();
                call.push(&ask.key, &markers[..len], args.as_slice());
            }
        }
    }

    /// A call of the limiter's script, durable if the limiter is.
    pub(crate) fn call(&self) -> Call {
        Call::new(self.script()).durable(self.shared.durable)
    }

    /// A new deadline for one decision (or one batch), counting the round trip it bounds.
    pub(crate) fn round_trip(&self) -> Deadline {
        self.shared.counters.round_trip();
        Deadline::new(self.shared.deadline)
    }

    /// How a round trip for `ask` ended: the script's answer as a decision (remembering a
    /// denial), or the failure (counted, Redis marked down if the connection is at fault) with
    /// the policy's decision.
    pub(crate) fn settle(
        &self,
        ask: &Ask,
        reply: Result<RedisResult<Value>, Error>,
        deadline: &Deadline,
    ) -> Sent {
        let decided = reply
            .and_then(|r| r.map_err(|e| deadline.error(e)))
            .and_then(|v| self.finish(ask, &v));
        match decided {
            Ok(d) => Sent::Decided(d),
            Err(e) => Sent::Failed(self.failed(ask, &e), e),
        }
    }

    /// The script's answer turned into a decision (remembering a denial).
    fn finish(&self, ask: &Ask, value: &Value) -> Result<Decision, Error> {
        let s = &self.shared;
        let reply = s.algorithm.parse(value)?;
        if let Some(entry) = s.algorithm.entry(&reply, ask.n, ask.sent) {
            s.cache.insert(&ask.user, entry, ask.sent);
        }
        Ok(reply.decision(s.algorithm.reply_quota(&reply, s.quota)))
    }

    /// A failed round trip: counted, Redis marked down if the connection is at fault, and the
    /// policy's decision.
    pub(crate) fn failed(&self, ask: &Ask, error: &Error) -> Decision {
        let s = &self.shared;
        s.counters.error();
        if is_connection_fault(error) {
            let until = s.cache.now().saturating_add(nanos(s.reprobe_after));
            // Relaxed: see `step`.
            s.down_until
                .store(until.max(ask.sent + 1), Ordering::Relaxed);
        }
        self.policy(&ask.user, ask.n)
    }

    /// One decision over a blocking connection, after a step that could not decide it.
    #[inline(never)]
    fn blocking(&self, con: &mut SyncConnection, key: &str, n: u32, now: u64) -> Sent {
        let ask = self.ask(key, n, now);
        let deadline = self.round_trip();
        let mut call = self.call();
        self.push(&mut call, &ask);
        let reply = call.send_blocking(con, &deadline).map(only);
        self.settle(&ask, reply, &deadline)
    }

    /// One decision over an async connection, after a step that could not decide it.
    async fn asynchronous<C: ConnectionLike + Send>(
        &self,
        con: &mut C,
        key: &str,
        n: u32,
        now: u64,
    ) -> Sent {
        let ask = self.ask(key, n, now);
        let deadline = self.round_trip();
        let mut call = self.call();
        self.push(&mut call, &ask);
        let reply = call.send_async(con, &deadline).await.map(only);
        self.settle(&ask, reply, &deadline)
    }

    /// Decide `n` permits under `key` over a blocking connection, charging them if granted.
    ///
    /// `n = 0` grants nothing and charges nothing: it reads `remaining` and `reset`. `n` above
    /// the burst (GCRA) or the limit (log) is denied with `retry_after() == None` with no round
    /// trip. A failure or a missed deadline is decided by the limiter's [`OnError`]. The call
    /// waits at most the [`deadline`](Self::deadline) in total: a reconnect, the round trip
    /// and a `NOSCRIPT` reload share it.
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
        match self.step(key, n)? {
            Step::Done(d) => Ok(d),
            Step::Ask(now) => Ok(self.blocking(con, key, n, now).decision()),
        }
    }

    /// As [`decide_blocking`](Self::decide_blocking), but a failed round trip is returned as
    /// the error instead of being decided by the policy (it is still counted, and still marks
    /// the server down). Named for what it does, not `try_`: in hotlimit `try_` means "never
    /// waits for a permit" (CONTRIBUTING.md, "Names").
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
    /// use hotlimit_redis::{OnError, RedisLimiter, SyncConnection};
    ///
    /// let limiter = RedisLimiter::gcra(Rate::per_second(100)?, OnError::FailClosed).build()?;
    /// let mut con = SyncConnection::new(redis::Client::open("redis://127.0.0.1/")?);
    /// match limiter.decide_or_error_blocking(&mut con, "k", 1) {
    ///     Ok(d) => println!("{}", d.is_allowed()),
    ///     Err(e) => eprintln!("redis could not decide: {e}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn decide_or_error_blocking(
        &self,
        con: &mut SyncConnection,
        key: &str,
        n: u32,
    ) -> Result<Decision, Error> {
        match self.step(key, n)? {
            Step::Done(d) => Ok(d),
            Step::Ask(now) => self.blocking(con, key, n, now).into_result(),
        }
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
        match self.step(key, n)? {
            Step::Done(d) => Ok(d),
            Step::Ask(now) => Ok(self.asynchronous(con, key, n, now).await.decision()),
        }
    }

    /// As [`decide_async`](Self::decide_async), but a failed round trip is returned as the
    /// error instead of being decided by the policy (it is still counted, and still marks the
    /// server down).
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
    /// match limiter.decide_or_error_async(&mut con, "k", 1).await {
    ///     Ok(d) => println!("{}", d.is_allowed()),
    ///     Err(e) => eprintln!("redis could not decide: {e}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn decide_or_error_async<C: ConnectionLike + Send>(
        &self,
        con: &mut C,
        key: &str,
        n: u32,
    ) -> Result<Decision, Error> {
        match self.step(key, n)? {
            Step::Done(d) => Ok(d),
            Step::Ask(now) => self.asynchronous(con, key, n, now).await.into_result(),
        }
    }

    /// The old name of [`decide_or_error_blocking`](Self::decide_or_error_blocking).
    ///
    /// # Errors
    ///
    /// As [`decide_or_error_blocking`](Self::decide_or_error_blocking).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter, SyncConnection};
    ///
    /// let limiter = RedisLimiter::gcra(Rate::per_second(100)?, OnError::FailClosed).build()?;
    /// let mut con = SyncConnection::new(redis::Client::open("redis://127.0.0.1/")?);
    /// let _ = limiter.try_decide_blocking(&mut con, "k", 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[deprecated(note = "renamed to `decide_or_error_blocking`: `try_` means \"never waits\"")]
    pub fn try_decide_blocking(
        &self,
        con: &mut SyncConnection,
        key: &str,
        n: u32,
    ) -> Result<Decision, Error> {
        self.decide_or_error_blocking(con, key, n)
    }

    /// The old name of [`decide_or_error_async`](Self::decide_or_error_async).
    ///
    /// # Errors
    ///
    /// As [`decide_or_error_async`](Self::decide_or_error_async).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #![allow(deprecated)]
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// # async fn run(mut con: redis::aio::ConnectionManager) -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RedisLimiter::gcra(Rate::per_second(100)?, OnError::FailClosed).build()?;
    /// let _ = limiter.try_decide_async(&mut con, "k", 1).await;
    /// # Ok(()) }
    /// ```
    #[deprecated(note = "renamed to `decide_or_error_async`: `try_` means \"never waits\"")]
    pub async fn try_decide_async<C: ConnectionLike + Send>(
        &self,
        con: &mut C,
        key: &str,
        n: u32,
    ) -> Result<Decision, Error> {
        self.decide_or_error_async(con, key, n).await
    }
}

/// The one reply of a one-script call.
pub(crate) fn only(replies: Replies) -> RedisResult<Value> {
    replies.into_iter().next().unwrap_or_else(|| {
        Err(redis::RedisError::from((
            redis::ErrorKind::Client,
            "no reply to the script",
        )))
    })
}

/// `d` in nanoseconds, saturating.
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
