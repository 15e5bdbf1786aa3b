//! [`LeasedGcraBuilder`]: the settings of a [`LeasedGcra`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hotlimit::{Clock, ConfigError, QuantaClock, Rate};

use super::stats::LeaseCounters;
use super::word::MAX_PERMITS;
use super::{LeasedGcra, Shared};
use crate::args::MAX_MICROS;
use crate::durable::Durable;
use crate::fence::Fence;
use crate::gcra::GcraScript;
use crate::limiter::nanos;
use crate::policy::OnError;
use crate::sync::AtomicU64;

/// Builds a [`LeasedGcra`]: see [`LeasedGcra::builder`].
///
/// # Examples
///
/// ```
/// use hotlimit::Rate;
/// use hotlimit_redis::{LeasedGcra, OnError};
/// use std::time::Duration;
///
/// let limiter = LeasedGcra::builder(Rate::per_second(5_000)?, OnError::FailClosed)
///     .burst(100)
///     .max_lease(500)
///     .lease_time(Duration::from_millis(20))
///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
/// assert_eq!(limiter.quota().limit(), 100);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct LeasedGcraBuilder<C = QuantaClock> {
    rate: Rate,
    burst: Option<u64>,
    on_error: OnError,
    prefix: Vec<u8>,
    max_key_len: usize,
    deadline: Duration,
    reprobe_after: Duration,
    capacity: usize,
    max_lease: Option<u64>,
    lease_time: Duration,
    fenced: bool,
    durable: Option<Durable>,
    idle_after: Duration,
    clock: C,
    planted_early: bool,
}

/// A setter per plain setting: its doc, its example's call, and what it sets.
macro_rules! settings {
    ($($(#[$doc:meta])* $name:ident: $ty:ty;)*) => {$(
        $(#[$doc])*
        pub fn $name(mut self, $name: $ty) -> Self {
            self.$name = $name;
            self
        }
    )*};
}

impl LeasedGcraBuilder {
    pub(super) fn new(rate: Rate, on_error: OnError) -> Self {
        LeasedGcraBuilder {
            rate,
            burst: None,
            on_error,
            prefix: b"hotlimit:".to_vec(),
            max_key_len: 4096,
            deadline: Duration::from_millis(100),
            reprobe_after: Duration::from_millis(100),
            capacity: 10_000,
            max_lease: None,
            lease_time: Duration::from_millis(20),
            fenced: false,
            durable: None,
            idle_after: Duration::from_secs(1),
            clock: QuantaClock::new(),
            planted_early: false,
        }
    }
}

impl<C> LeasedGcraBuilder<C> {
    /// The most permits taken at once, b (default: the rate's limit; at least 2: a leased
    /// permit's window lasts (b − 1)·I).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{LeasedGcra, OnError};
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// let err = LeasedGcra::builder(Rate::per_second(100)?, OnError::FailOpen).burst(1).build(client);
    /// assert_eq!(err.unwrap_err().field(), "burst");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn burst(mut self, burst: u64) -> Self {
        self.burst = Some(burst);
        self
    }

    /// The bytes put before every key (default `hotlimit:`), as
    /// [`RedisLimiterBuilder::prefix`](crate::RedisLimiterBuilder::prefix): a
    /// [`RedisLimiter::gcra`](crate::RedisLimiter::gcra) of the same rate and prefix decides
    /// on the same keys, per decision, beside the leases.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{LeasedGcra, OnError};
    ///
    /// let limiter = LeasedGcra::builder(Rate::per_second(100)?, OnError::FailOpen)
    ///     .prefix("api:")
    ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
    /// assert_eq!(limiter.redis_key("k"), b"api:k");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn prefix(mut self, prefix: impl AsRef<[u8]>) -> Self {
        self.prefix = prefix.as_ref().to_vec();
        self
    }

    settings! {
        /// The longest key accepted, prefix included (default 4,096 bytes).
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::Rate;
        /// use hotlimit_redis::{LeasedGcra, OnError};
        ///
        /// let limiter = LeasedGcra::builder(Rate::per_second(100)?, OnError::FailOpen)
        ///     .max_key_len(16)
        ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
        /// assert!(limiter.try_acquire_n("a key far longer than sixteen bytes", 1).unwrap_err().is_never());
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        max_key_len: usize;
        /// How long one refill or return may wait for Redis, in total (default 100 ms).
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::Rate;
        /// use hotlimit_redis::{LeasedGcra, OnError};
        /// use std::time::Duration;
        ///
        /// let limiter = LeasedGcra::builder(Rate::per_second(100)?, OnError::FailOpen)
        ///     .deadline(Duration::from_millis(20))
        ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
        /// # let _ = limiter;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        deadline: Duration;
        /// After a failed refill, how long no refill is tried (default 100 ms): keys whose
        /// leases are spent go to the policy meanwhile.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::Rate;
        /// use hotlimit_redis::{LeasedGcra, OnError};
        /// use std::time::Duration;
        ///
        /// let limiter = LeasedGcra::builder(Rate::per_second(100)?, OnError::FailOpen)
        ///     .reprobe_after(Duration::from_secs(1))
        ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
        /// # let _ = limiter;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        reprobe_after: Duration;
        /// The most keys held at once (default 10,000). When full, idle keys are swept; a new
        /// key with no room is denied for `idle_after`.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::Rate;
        /// use hotlimit_redis::{LeasedGcra, OnError};
        ///
        /// let limiter = LeasedGcra::builder(Rate::per_second(100)?, OnError::FailOpen)
        ///     .capacity(100)
        ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
        /// # let _ = limiter;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        capacity: usize;
        /// How much of a key's recent demand a lease covers (default 20 ms): a refill takes
        /// the permits the key spent per unit of time times this, within the bounds.
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::Rate;
        /// use hotlimit_redis::{LeasedGcra, OnError};
        /// use std::time::Duration;
        ///
        /// let limiter = LeasedGcra::builder(Rate::per_second(100)?, OnError::FailOpen)
        ///     .lease_time(Duration::from_millis(200))
        ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
        /// # let _ = limiter;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        lease_time: Duration;
        /// How long a key goes without a grant before its lease is returned and the key is
        /// dropped (default 1 s).
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::Rate;
        /// use hotlimit_redis::{LeasedGcra, OnError};
        /// use std::time::Duration;
        ///
        /// let limiter = LeasedGcra::builder(Rate::per_second(100)?, OnError::FailOpen)
        ///     .idle_after(Duration::from_secs(10))
        ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
        /// # let _ = limiter;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        idle_after: Duration;
    }

    /// The local clock leases are mapped to (default [`QuantaClock`]); it must run at the
    /// server clock's rate within 1,000 ppm (each within NTP's 500 ppm of true time; the bound
    /// on their offset, kept across round trips, widens by that much as it ages).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{QuantaClock, Rate};
    /// use hotlimit_redis::{LeasedGcra, OnError};
    ///
    /// let limiter = LeasedGcra::builder(Rate::per_second(100)?, OnError::FailOpen)
    ///     .clock(QuantaClock::new())
    ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
    /// # let _ = limiter;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clock<C2: Clock>(self, clock: C2) -> LeasedGcraBuilder<C2> {
        LeasedGcraBuilder {
            rate: self.rate,
            burst: self.burst,
            on_error: self.on_error,
            prefix: self.prefix,
            max_key_len: self.max_key_len,
            deadline: self.deadline,
            reprobe_after: self.reprobe_after,
            capacity: self.capacity,
            max_lease: self.max_lease,
            lease_time: self.lease_time,
            fenced: self.fenced,
            durable: self.durable,
            idle_after: self.idle_after,
            clock,
            planted_early: self.planted_early,
        }
    }

    /// Planted bug, for the tests' audit only: every leased permit may be granted at once,
    /// before its slot. The audit of grants across processes must catch it.
    /// The most permits in one lease (default: one [`lease_time`](Self::lease_time) of the
    /// whole rate, at least 2, so that lease sizes follow the rate; a request for more gets
    /// a lease of its own size). Bounds what one lost lease costs.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{LeasedGcra, OnError};
    ///
    /// let limiter = LeasedGcra::builder(Rate::per_second(100)?, OnError::FailOpen)
    ///     .max_lease(64)
    ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
    /// # let _ = limiter;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_lease(mut self, max_lease: u64) -> Self {
        self.max_lease = Some(max_lease);
        self
    }

    /// Fenced mode: a key the server lost (a restart without persistence, `FLUSHALL`, a
    /// failover to an empty replica) restarts **full** instead of empty, so that the limit
    /// stays exact across the loss, for every process together. The fence is τ + Q (Q = τ/2,
    /// the lease queue: the furthest a lease can have pushed a key's TAT): after a loss, a key
    /// not in Redis is refused for Q and then grants at the rate, with no burst, until its
    /// bucket refills. As
    /// [`RedisLimiterBuilder::fenced`](crate::RedisLimiterBuilder::fenced) otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{LeasedGcra, OnError};
    ///
    /// let limiter = LeasedGcra::builder(Rate::per_second(100)?, OnError::FailClosed)
    ///     .fenced(true)
    ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
    /// # let _ = limiter;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn fenced(mut self, fenced: bool) -> Self {
        self.fenced = fenced;
        self
    }

    /// Durable leases: a lease counts only once `durable`'s replicas acknowledged it (`WAIT`
    /// in the lease's round trip: paid once per lease, not per grant); short of that it is
    /// not installed, and the [`OnError`] policy decides once the key's leases are spent. See
    /// [`Durable`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{Durable, LeasedGcra, OnError};
    ///
    /// let limiter = LeasedGcra::builder(Rate::per_second(100)?, OnError::FailClosed)
    ///     .durable(Durable::new(1, Duration::from_millis(20)))
    ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
    /// # let _ = limiter;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn durable(mut self, durable: Durable) -> Self {
        self.durable = Some(durable);
        self
    }

    #[doc(hidden)]
    pub fn planted_grant_before_slot(mut self) -> Self {
        self.planted_early = true;
        self
    }

    /// Builds the limiter; `client` makes its blocking connections (refills of
    /// [`try_acquire_n`](LeasedGcra::try_acquire_n), returns).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the field: `rate` (an interval under 1 µs), `burst` (under 2, or
    /// b·I over 2^52 µs), `deadline`, `lease_time`, `idle_after` or `capacity` (zero),
    /// `max_lease` (zero, over 2^30, or its permits' span over 2^52 µs).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{LeasedGcra, OnError};
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// let err = LeasedGcra::builder(Rate::per_second(100)?, OnError::FailOpen).max_lease(0).build(client);
    /// assert_eq!(err.unwrap_err().field(), "max_lease");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self, client: redis::Client) -> Result<LeasedGcra<C>, ConfigError>
    where
        C: Clock,
    {
        let gcra = GcraScript::new(self.rate, self.burst)?;
        if gcra.burst() < 2 {
            return Err(ConfigError::invalid(
                "burst",
                gcra.burst(),
                "a lease needs a burst of at least 2: a leased permit may be granted only within \
                 (b − 1) emission intervals of its slot",
            ));
        }
        for (field, zero) in [
            ("deadline", self.deadline.is_zero()),
            ("lease_time", self.lease_time.is_zero()),
            ("idle_after", self.idle_after.is_zero()),
            ("capacity", self.capacity == 0),
        ] {
            if zero {
                return Err(ConfigError::invalid(field, 0, "must be more than zero"));
            }
        }
        // By default one lease_time of the whole rate (at least 2): lease sizes follow the rate.
        let max_lease = self.max_lease.unwrap_or_else(|| {
            let i = u128::from(gcra.interval()) * 1000;
            (self
                .lease_time
                .as_nanos()
                .div_ceil(i)
                .min(u128::from(MAX_PERMITS)) as u64)
                .max(2)
        });
        let span = max_lease.checked_mul(gcra.interval());
        if max_lease == 0 || max_lease > MAX_PERMITS || span.is_none_or(|s| s > MAX_MICROS) {
            return Err(ConfigError::invalid(
                "max_lease",
                max_lease,
                "must be 1 to 2^30 permits, whose emission intervals span at most 2^52 µs",
            ));
        }
        Ok(LeasedGcra {
            shared: Arc::new(Shared {
                interval: gcra.interval() * 1000,
                quota: gcra.quota(),
                gcra,
                prefix: self.prefix,
                max_key_len: self.max_key_len,
                deadline: self.deadline,
                reprobe_after: self.reprobe_after,
                on_error: self.on_error,
                // Seeded at random, as the denial cache (`cache.rs`): keys come from clients.
                keys: papaya::HashMap::builder()
                    .hasher(foldhash::fast::RandomState::default())
                    .build(),
                capacity: self.capacity,
                max_lease,
                lease_time: nanos(self.lease_time),
                // The planted twin's leases queue 4 τ deep (its early grants then overrun the
                // bound by far more than the capped queue's b/2 could show).
                queue: if self.planted_early {
                    gcra.tolerance() * 4
                } else {
                    gcra.tolerance() / 2
                },
                fence: self.fenced.then(|| Fence {
                    horizon: gcra.tolerance() + gcra.tolerance() / 2,
                }),
                durable: self.durable,
                idle_after: nanos(self.idle_after),
                clock: self.clock,
                down_until: AtomicU64::new(0),
                last_sweep: AtomicU64::new(0),
                rtt: AtomicU64::new(0),
                offset: Mutex::new(None),
                counters: LeaseCounters::default(),
                client,
                pool: Mutex::new(Vec::new()),
                planted_early: self.planted_early,
            }),
        })
    }
}
