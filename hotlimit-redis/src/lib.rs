//! hotlimit's limiters with their state in Redis: one limit shared by many processes and
//! machines.
//!
//! | limiter | guarantee (as the core's) | Redis state per key |
//! |---|---|---|
//! | [`RedisLimiter::gcra`] | smooth rate, burst b: at most b + d/I grants in any interval d | one integer (the TAT, µs), ~56 B |
//! | [`RedisLimiter::sliding_log`] | at most `limit` in every window of `period` (exact) | a list of ≤ `limit` grant times |
//! | [`RedisLimiter::multi_window`] | up to 8 windows at once, all or nothing: at most limitᵢ in every window of periodᵢ (a ring may refuse up to one bucket early; a log is exact) | per window: a list of ≤ limitᵢ grant times, or a hash of ≤ buckets + 1 counts; one hash tag |
//! | [`LeasedGcra`] | GCRA's b + d/I in any interval d, across all processes together; decided in process (a grant is one CAS) from leases of permits taken in one round trip | the same one integer as `RedisLimiter::gcra` (both may share a key) |
//!
//! Each `RedisLimiter` decision is **one Lua script, one round trip** (a `LeasedGcra` takes a
//! round trip per lease of many permits; its docs prove the bound and measure its cost), atomic on the server and timed by the
//! server's `TIME` (never a client's clock), in integer microseconds (exact in Lua's doubles).
//! Keys are written only on grants and always carry an expiry: an idle key disappears once it
//! is full again. Scripts are sent by hash (`EVALSHA`) and reloaded on `NOSCRIPT`.
//!
//! Redis failing is a policy you choose ([`OnError`]: fail open, fail closed, or fall back to
//! an in-process hotlimit limiter); every decision has a deadline; a call that timed out is
//! never retried (a script that ran but answered late has charged its permits); while the
//! server is down no request waits for it; one decision waits at most the deadline **in total**
//! (a reconnect and a `NOSCRIPT` reload included). Denials are remembered per key, so a denied key is
//! denied again locally until its retry-after (exact for GCRA). [`Stats`] counts it all.
//!
//! Redis losing state (a restart without persistence, `FLUSHALL`, a failover to a lagging
//! replica, eviction) costs at most the burst per key, leases included; `fenced(true)` makes a
//! whole-server loss cost nothing, [`Durable`] grants make a failover cost nothing, and
//! [`check_eviction`] refuses a `maxmemory-policy` that can evict limiter keys. The README's
//! "What each fault costs" table is measured by `tests/chaos.rs`.
//!
//! Blocking callers use a [`SyncConnection`]; async callers a
//! [`ConnectionManager`](redis::aio::ConnectionManager) ([`connection_manager`]) or a cluster
//! connection ([`cluster_connection`]); [`RedisLimiter::with_connection`] makes a
//! [`hotlimit::Decide`] for the tower layer.
//!
//! # Examples
//!
//! ```no_run
//! use hotlimit::Rate;
//! use hotlimit_redis::{OnError, RedisLimiter, SyncConnection};
//!
//! let limiter = RedisLimiter::gcra(Rate::per_second(5)?, OnError::FailClosed).build()?;
//! let mut con = SyncConnection::new(redis::Client::open("redis://127.0.0.1/")?);
//! let d = limiter.decide_blocking(&mut con, "user:1", 1)?;
//! assert!(d.is_allowed() || d.denial().is_some());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

mod algorithm;
mod args;
mod batch;
mod cache;
mod connection;
mod deadline;
mod decide;
mod durable;
mod error;
mod eviction;
mod fence;
mod gcra;
mod lease;
mod limiter;
mod multi_window;
mod policy;
mod reply;
mod sliding_log;
mod stats;
mod sync;
mod transport;
mod waiting;

pub use connection::{cluster_connection, connection_manager, SyncConnection};
pub use decide::{DecideFuture, RedisDecide};
pub use durable::Durable;
pub use error::Error;
pub use eviction::check_eviction;
/// A limiter that cannot be built: the core's [`hotlimit::ConfigError`] (the field and the
/// value that were refused, and why), so that one error type covers the rate and the limiter.
///
/// # Examples
///
/// ```
/// use hotlimit::Rate;
/// use hotlimit_redis::{OnError, RedisLimiter};
///
/// // 2,000,000 per second: an emission interval under one microsecond.
/// let err = RedisLimiter::gcra(Rate::per_second(2_000_000)?, OnError::FailClosed)
///     .build()
///     .unwrap_err();
/// assert_eq!(err.field(), "rate");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use hotlimit::ConfigError;
pub use lease::{LeaseStats, LeasedDecide, LeasedGcra, LeasedGcraBuilder, LeasedKey};
#[doc(hidden)]
pub use limiter::TestClock;
pub use limiter::{RedisLimiter, RedisLimiterBuilder};
pub use policy::{Fallback, OnError};
pub use stats::Stats;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
