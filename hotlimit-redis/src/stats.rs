//! [`Stats`]: what a limiter has decided, and how.

use crate::sync::{AtomicU64, Ordering};

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
    /// Decisions sent to Redis (each request of a batch counts one): what reached the
    /// server. Cached denials, refusals and the policy's decisions are not in it.
    pub decisions: u64,
    /// Round trips to Redis (a batch is one, its NOSCRIPT reload aside).
    pub round_trips: u64,
    /// Decisions denied by the local cache, with no round trip (not in `decisions`).
    pub local_denials: u64,
    /// Requests for more than the limiter can ever hold: refused locally, never sent.
    pub refused: u64,
    /// Requests Redis did not decide: errors and missed deadlines.
    pub errors: u64,
    /// Decisions made by the [`OnError`](crate::OnError) policy (after an error, or while the
    /// server is marked down).
    pub fallbacks: u64,
    /// Keys in the local denial cache now.
    pub cached_keys: usize,
}

/// The counters behind [`Stats`]: one per way a decision ends, so that each decision counts
/// once (one atomic add; a cached denial is no slower for being counted twice), and the totals
/// are sums.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Requests sent to Redis (each request of a batch).
    sent: AtomicU64,
    /// Requests for more than the limiter can ever hold: refused with no round trip.
    refused: AtomicU64,
    local_denials: AtomicU64,
    /// Requests decided by the policy without asking, the server being marked down.
    skipped: AtomicU64,
    round_trips: AtomicU64,
    /// Requests sent that Redis did not decide (each decided by the policy).
    errors: AtomicU64,
}

// Relaxed (every counter below): independent statistics; nothing is published with them, and
// a snapshot need not be consistent across counters.
impl Counters {
    pub(crate) fn sent(&self) {
        self.sent.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn refused(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn local_denial(&self) {
        self.local_denials.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn skipped(&self) {
        self.skipped.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn round_trip(&self) {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn error(&self) {
        self.errors.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn snapshot(&self, cached_keys: usize) -> Stats {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let (local_denials, skipped, errors) = (
            load(&self.local_denials),
            load(&self.skipped),
            load(&self.errors),
        );
        Stats {
            decisions: load(&self.sent),
            refused: load(&self.refused),
            round_trips: load(&self.round_trips),
            local_denials,
            errors,
            fallbacks: skipped + errors,
            cached_keys,
        }
    }
}
