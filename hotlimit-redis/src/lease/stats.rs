//! [`LeaseStats`]: what a [`LeasedGcra`](super::LeasedGcra) has leased, returned and lost.

use crate::sync::{AtomicU64, Ordering};

/// A snapshot of a leased limiter's counters (shared by its clones), since it was built.
/// Round trips, lease grants and the policy's decisions are apart: a grant is one CAS and
/// nothing else (no counter on the hot path), so `granted` is derived, leased permits less
/// those returned, passed over and still held.
///
/// # Examples
///
/// ```
/// use hotlimit::Rate;
/// use hotlimit_redis::{LeasedGcra, OnError};
///
/// let limiter = LeasedGcra::builder(Rate::per_second(100)?, OnError::FailOpen)
///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
/// let s = limiter.stats();
/// assert_eq!((s.leases, s.leased, s.keys), (0, 0, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseStats {
    /// Leases taken from Redis.
    pub leases: u64,
    /// Permits in those leases.
    pub leased: u64,
    /// Permits granted from leases, in process with no round trip: `leased − returned −
    /// skipped − held` (a snapshot: a grant racing it may be missed or counted).
    pub granted: u64,
    /// Leased permits held now, not yet granted (the current and waiting leases of every key).
    pub held: u64,
    /// Round trips to Redis (refills, and returns: one pipeline per sweep).
    pub round_trips: u64,
    /// Permits given back by returns (the reservation-cancel rule held).
    pub returned: u64,
    /// Permits passed over: their deadline came before a request did, a request moved on
    /// to the next lease, or a return did not give them back. Under-use, never
    /// over-admission.
    pub skipped: u64,
    /// Refills and returns that Redis did not answer in time, or answered with an error.
    pub errors: u64,
    /// Decisions made by the [`OnError`](crate::OnError) policy (a key's leases spent while
    /// Redis could not lease more).
    pub fallbacks: u64,
    /// Keys held now.
    pub keys: usize,
}

#[derive(Debug, Default)]
pub(crate) struct LeaseCounters {
    leases: AtomicU64,
    leased: AtomicU64,
    round_trips: AtomicU64,
    returned: AtomicU64,
    /// Permits passed over by keys since dropped (held keys count their own).
    skipped: AtomicU64,
    errors: AtomicU64,
    fallbacks: AtomicU64,
}

// Relaxed (every counter below): independent statistics, as `Counters`' in `stats.rs`.
impl LeaseCounters {
    pub(crate) fn leased(&self, permits: u64) {
        self.leases.fetch_add(1, Ordering::Relaxed);
        self.leased.fetch_add(permits, Ordering::Relaxed);
    }
    pub(crate) fn round_trip(&self) {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn returned(&self, permits: u64) {
        self.returned.fetch_add(permits, Ordering::Relaxed);
    }
    pub(crate) fn skipped(&self, permits: u64) {
        self.skipped.fetch_add(permits, Ordering::Relaxed);
    }
    pub(crate) fn error(&self) {
        self.errors.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn fallback(&self) {
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn snapshot(&self, keys: usize, skipped: u64, held: u64) -> LeaseStats {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let (leased, returned) = (load(&self.leased), load(&self.returned));
        let skipped = skipped + load(&self.skipped);
        LeaseStats {
            leases: load(&self.leases),
            leased,
            granted: leased.saturating_sub(returned + skipped + held),
            held,
            round_trips: load(&self.round_trips),
            returned: load(&self.returned),
            skipped,
            errors: load(&self.errors),
            fallbacks: load(&self.fallbacks),
            keys,
        }
    }
}
