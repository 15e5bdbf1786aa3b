//! [`RedisLimiterBuilder`]: the constructors of [`RedisLimiter`] and its settings, and the
//! test hook [`TestClock`].

use crate::sync::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hotlimit::{ConfigError, Rate};

use super::{RedisLimiter, Shared};
use crate::algorithm::Algorithm;
use crate::cache::DenialCache;
use crate::durable::Durable;
use crate::fence::Fence;
use crate::gcra::GcraScript;
use crate::multi_window::{MultiScript, WindowSpec};
use crate::policy::OnError;
use crate::sliding_log::LogScript;
use crate::stats::Counters;

/// Builds a [`RedisLimiter`]: see [`RedisLimiter::gcra`], [`RedisLimiter::sliding_log`] and
/// [`RedisLimiter::multi_window`].
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
    /// The algorithm's constructor (its module's `new`), from the rate (or the windows) and
    /// the burst.
    make: Make,
    burst: Option<u64>,
    /// The windows added by `window`, `window_with_buckets` and `exact`.
    windows: Vec<WindowSpec>,
    on_error: OnError,
    prefix: Vec<u8>,
    max_key_len: usize,
    deadline: Duration,
    reprobe_after: Duration,
    cache_capacity: usize,
    test_clock: Option<TestClock>,
    fenced: bool,
    durable: Option<Durable>,
}

/// An algorithm from the rate and the burst, or from the windows and the burst (each refuses
/// what it cannot take).
#[derive(Clone, Copy, Debug)]
enum Make {
    Rate(
        Rate,
        fn(Rate, Option<u64>) -> Result<Algorithm, ConfigError>,
    ),
    Windows,
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

    pub(crate) fn micros(&self) -> u64 {
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
    /// // A GCRA's quota is its burst per the time to refill it: 1 per 333,334 µs.
    /// assert_eq!(limiter.quota().limit(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn gcra(rate: Rate, on_error: OnError) -> RedisLimiterBuilder {
        RedisLimiterBuilder::new(
            Make::Rate(rate, |rate, burst| {
                GcraScript::new(rate, burst).map(Algorithm::Gcra)
            }),
            on_error,
        )
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
        RedisLimiterBuilder::new(
            Make::Rate(rate, |rate, burst| {
                LogScript::new(rate, burst).map(Algorithm::Log)
            }),
            on_error,
        )
    }

    /// Several hard windows at once, all or nothing (the core's
    /// [`MultiWindow`](hotlimit::MultiWindow)): add 1 to 8 windows with
    /// [`window`](RedisLimiterBuilder::window) (a counted ring of 10 buckets, `SlidingWindow`'s
    /// strict rule), [`window_with_buckets`](RedisLimiterBuilder::window_with_buckets) or
    /// [`exact`](RedisLimiterBuilder::exact) (an exact log, `SlidingLog`'s rule), each with its
    /// own limit and period (rounded up to whole microseconds), then build. `on_error` decides
    /// when Redis cannot.
    ///
    /// Each decision is one script in one round trip: it checks every window, and only if
    /// each has room records the request in all of them (Redis runs a script alone: nothing is
    /// charged and given back). So for every window i, **never more than limitᵢ permits in any
    /// window of periodᵢ** (a ring's grants counted at their bucket's time, judged on the
    /// server's clock, as the core's), and a request refused by one window is charged in none.
    /// A ring may refuse a little early (its oldest bucket is counted whole); a log is exact.
    /// The decision's `remaining` is the fewest any window has left, its quota that window's,
    /// its `retry_after` the latest wait of the windows that refuse, its `reset` the latest
    /// time until a window counts nothing. A request for more than the smallest limit is
    /// denied with `retry_after() == None`, with no round trip.
    ///
    /// Redis state per key: one key per window, all with one hash tag, so all in one Redis
    /// Cluster slot (see [`window_keys`](RedisLimiter::window_keys)): a log's list of at most
    /// `limit` grant times, a ring's hash of the buckets still counted (at most
    /// buckets + 1) and the newest bucket granted. A denial writes nothing; every key expires
    /// when its newest entry leaves its window. Not fenced (a lost list or ring restarts
    /// empty, as a sliding log's).
    ///
    /// The same rule as the core's, decision for decision and wait for wait (tested on random
    /// traces). Differences show only under a clock that goes back, and only as the core
    /// refusing where this grants: a ring here is judged from the newest bucket a grant
    /// reached, where the core's ring also moves on to the buckets of calls it refuses; and the
    /// core gives back a refused call's log charge as of that call's `now`, which an earlier
    /// `now` still counts (here a refusal charges nothing). Neither frees a permit.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter, SyncConnection};
    ///
    /// // "100 requests per minute and 2,000 per hour", never more in any window.
    /// let limiter = RedisLimiter::multi_window(OnError::FailClosed)
    ///     .window(Rate::per_minute(100)?)
    ///     .exact(Rate::per_hour(2_000)?)
    ///     .build()?;
    /// let mut con = SyncConnection::new(redis::Client::open("redis://127.0.0.1/")?);
    /// let d = limiter.decide_blocking(&mut con, "tenant-7", 1)?;
    /// if let Some(denied) = d.denial() {
    ///     println!("retry after {:?} (window of {:?})", denied.retry_after(), d.quota().window());
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn multi_window(on_error: OnError) -> RedisLimiterBuilder {
        RedisLimiterBuilder::new(Make::Windows, on_error)
    }
}

impl RedisLimiterBuilder {
    fn new(make: Make, on_error: OnError) -> Self {
        RedisLimiterBuilder {
            make,
            burst: None,
            windows: Vec::new(),
            on_error,
            prefix: b"hotlimit:".to_vec(),
            max_key_len: DEFAULT_MAX_KEY_LEN,
            deadline: DEFAULT_DEADLINE,
            reprobe_after: DEFAULT_REPROBE,
            cache_capacity: DEFAULT_CACHE,
            test_clock: None,
            fenced: false,
            durable: None,
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

    /// [`multi_window`](RedisLimiter::multi_window) only: adds a counted-ring window of 10
    /// buckets, at most `rate.limit()` in every window of `rate.period()` (the core's
    /// `SlidingWindow`, strict: may refuse up to one bucket width early). On another algorithm
    /// this is a [`ConfigError`] naming `windows`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    /// use std::time::Duration;
    ///
    /// let limiter = RedisLimiter::multi_window(OnError::FailOpen).window(Rate::per_minute(100)?).build()?;
    /// // A ring's grant counts until its bucket leaves the window: 100 per 66 s.
    /// assert_eq!(limiter.quota().window(), Duration::from_secs(66));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn window(self, rate: Rate) -> Self {
        self.window_with_buckets(rate, 10)
    }

    /// [`multi_window`](RedisLimiter::multi_window) only: adds a counted-ring window of
    /// `buckets` buckets of width ⌈period / buckets⌉ µs (1 to 65,536, and at most the
    /// period's microseconds). More buckets: a smaller early-refusal margin, a larger hash.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// let err = RedisLimiter::multi_window(OnError::FailOpen)
    ///     .exact(Rate::per_minute(100)?)
    ///     .window_with_buckets(Rate::per_hour(2_000)?, 0)
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "buckets[1]");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn window_with_buckets(mut self, rate: Rate, buckets: usize) -> Self {
        self.windows.push((rate, Some(buckets)));
        self
    }

    /// [`multi_window`](RedisLimiter::multi_window) only: adds an exact-log window, at most
    /// `rate.limit()` in every window of `rate.period()` (the core's `SlidingLog`; Redis holds
    /// up to `limit` grant times for it).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// let limiter = RedisLimiter::multi_window(OnError::FailOpen)
    ///     .exact(Rate::per_second(10)?)
    ///     .exact(Rate::per_minute(300)?)
    ///     .build()?;
    /// assert_eq!(limiter.quota().limit(), 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn exact(mut self, rate: Rate) -> Self {
        self.windows.push((rate, None));
        self
    }

    /// The bytes put before every key (default `hotlimit:`). Two limiters with different
    /// rates must not share a prefix: they would read each other's state.
    ///
    /// GCRA's and the log's scripts touch exactly one key, so on Redis Cluster any key works
    /// (several windows' keys get one hash tag of their own: see
    /// [`window_keys`](RedisLimiter::window_keys)); a key with a hash tag (`{tenant}:user`) places all of one tenant's keys in one slot, which a
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
    /// [`Error::KeyTooLong`](crate::Error::KeyTooLong) with no round trip. It bounds what each cached denial holds.
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
    /// [`SyncConnection`](crate::SyncConnection). Past it the policy decides, and the call is **not** retried (a
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

    /// Fenced mode (GCRA only): a key the server lost (a restart without persistence,
    /// `FLUSHALL`, a failover to an empty replica) restarts **full** instead of empty, so
    /// that the limit stays exact across the loss (no window over b + ⌊d/I⌋).
    ///
    /// How: the scripts keep a marker key with no expiry (`<prefix>fence`, with the key's hash
    /// tag if it has one) holding the time it was made. A server that lost its data lost the
    /// marker too; the first decision after the loss remakes it, and for τ = b·I after that
    /// (the fence: the furthest a grant's TAT can have reached) a missing key restarts with
    /// its TAT at the marker's time + τ. The cost: after a loss (and on the very first use of
    /// a key space) a key that is not in Redis has no burst: it grants at the rate, from
    /// empty, until its bucket refills (τ).
    /// One `GET` more per decision.
    ///
    /// Not detected: a failover to a replica that has the marker but lags (use
    /// [`durable`](Self::durable)), and eviction of single keys (see
    /// [`check_eviction`](crate::check_eviction)). A per-decision fenced limiter that shares
    /// keys with a fenced [`LeasedGcra`](crate::LeasedGcra) gets the leases' longer fence only
    /// from the leases' own calls: a lost key may then see up to b/2 more (the lease queue).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{OnError, RedisLimiter};
    ///
    /// let limiter = RedisLimiter::gcra(Rate::per_second(10)?, OnError::FailClosed).fenced(true).build()?;
    /// # let _ = limiter;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fenced(mut self, fenced: bool) -> Self {
        self.fenced = fenced;
        self
    }

    /// Durable grants: a grant counts only once `durable`'s replicas acknowledged it
    /// (`WAIT` in the same round trip); short of that, the [`OnError`] policy decides. See
    /// [`Durable`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{Durable, OnError, RedisLimiter};
    ///
    /// let limiter = RedisLimiter::gcra(Rate::per_second(10)?, OnError::FailClosed)
    ///     .durable(Durable::new(1, Duration::from_millis(20)))
    ///     .build()?;
    /// # let _ = limiter;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn durable(mut self, durable: Durable) -> Self {
        self.durable = Some(durable);
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
    /// 2^52 µs, or when it is set on a sliding log or on several windows; `deadline` when it is
    /// zero; `fenced` when it is set on anything but GCRA. Several windows: `windows` for
    /// none, more than 8, or windows added to GCRA or a log; `buckets[i]`, `limits[i]`
    /// (a ring's over 2^31 − 1, a log's over 2^28) and `rates[i]` (a period over 2^52 µs) for
    /// window i.
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
        let algorithm =
            match self.make {
                Make::Rate(_, _) if !self.windows.is_empty() => return Err(ConfigError::invalid(
                    "windows",
                    self.windows.len(),
                    "windows are for `RedisLimiter::multi_window` (GCRA and a log take one rate)",
                )),
                Make::Rate(rate, make) => make(rate, self.burst)?,
                Make::Windows => Algorithm::Multi(MultiScript::new(&self.windows, self.burst)?),
            };
        if self.deadline.is_zero() {
            return Err(ConfigError::invalid(
                "deadline",
                self.deadline,
                "must be more than zero",
            ));
        }
        let fence = match (self.fenced, algorithm) {
            (false, _) => None,
            (true, Algorithm::Gcra(g)) => Some(Fence {
                horizon: g.tolerance(),
            }),
            (true, Algorithm::Log(_) | Algorithm::Multi(_)) => return Err(ConfigError::invalid(
                "fenced",
                true,
                "fenced mode is for GCRA (a sliding log's or a window's lost counts cannot be restarted full)",
            )),
        };
        Ok(RedisLimiter {
            shared: Arc::new(Shared {
                algorithm,
                quota: algorithm.quota(),
                prefix: self.prefix,
                max_key_len: self.max_key_len,
                deadline: self.deadline,
                reprobe_after: self.reprobe_after,
                on_error: self.on_error,
                cache: DenialCache::new(self.cache_capacity),
                down_until: AtomicU64::new(0),
                counters: Counters::default(),
                test_clock: self.test_clock,
                fence,
                durable: self.durable,
            }),
        })
    }
}
