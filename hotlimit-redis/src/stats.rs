//! [`Stats`]: what a limiter has decided, and how.

use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of a limiter's counters (shared by its clones), each counted since it was built.
///
/// # Examples
///
/// ```
/// use hotlimit::Rate;
/// use hotlimit_redis::{OnError, RedisLimiter};
///
/// let limiter = RedisLimiter::gcra(Rate::per_second(1)?, OnError::FailOpen).build()?;
/// let stats = limiter.stats();
/// assert_eq!(stats.round_trips, 0);
/// assert_eq!(stats.cached_keys, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Decisions asked for (every call of a decide method, each request of a batch).
    pub decisions: u64,
    /// Round trips to Redis (a batch is one, its NOSCRIPT reload aside).
    pub round_trips: u64,
    /// Decisions denied by the local cache, with no round trip.
    pub local_denials: u64,
    /// Requests Redis did not decide: errors and missed deadlines.
    pub errors: u64,
    /// Decisions made by the [`OnError`](crate::OnError) policy (after an error, or while the
    /// server is marked down).
    pub fallbacks: u64,
    /// Keys in the local denial cache now.
    pub cached_keys: usize,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    decisions: AtomicU64,
    round_trips: AtomicU64,
    local_denials: AtomicU64,
    errors: AtomicU64,
    fallbacks: AtomicU64,
}

// Relaxed (every counter below): independent statistics; nothing is published with them, and
// a snapshot need not be consistent across counters.
impl Counters {
    pub(crate) fn decision(&self) {
        self.decisions.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn round_trip(&self) {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn local_denial(&self) {
        self.local_denials.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn error(&self) {
        self.errors.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn fallback(&self) {
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn snapshot(&self, cached_keys: usize) -> Stats {
        Stats {
            decisions: self.decisions.load(Ordering::Relaxed),
            round_trips: self.round_trips.load(Ordering::Relaxed),
            local_denials: self.local_denials.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            fallbacks: self.fallbacks.load(Ordering::Relaxed),
            cached_keys,
        }
    }
}
