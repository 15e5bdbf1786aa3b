//! Counters of what each policy decided, readable by the user ([`PolicyCounts`]) and, with the
//! `metrics` feature, exported through the `metrics` facade.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Stripes per policy: requests on different threads count on different cache lines, so the
/// counters add no shared write that every request on every core contends for (the layer's
/// pre-built header values are striped alike, `headers.rs`).
pub(crate) const STRIPES: usize = 16;

/// One stripe: the six counts, on a cache line of their own.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Stripe([AtomicU64; 6]);

/// One policy's counters, in the layer's shared state.
#[derive(Debug)]
pub(crate) struct Counters {
    stripes: Box<[Stripe]>,
    #[cfg(feature = "metrics")]
    exported: Option<Exported>,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            stripes: (0..STRIPES).map(|_| Stripe::default()).collect(),
            #[cfg(feature = "metrics")]
            exported: None,
        }
    }
}

/// The calling thread's stripe (below [`STRIPES`]), assigned round-robin on its first use.
#[inline]
pub(crate) fn stripe() -> usize {
    /// The next stripe to hand out.
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    STRIPE.with(|s| {
        let mut i = s.get();
        if i == usize::MAX {
            // Relaxed: only the counter's own atomicity matters (threads spread round-robin).
            i = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES;
            s.set(i);
        }
        i
    })
}

/// What a policy's decision on one request was, for counting (the index of its count).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Counted {
    Allowed = 0,
    Denied = 1,
    DryRunDenied = 2,
    MissingKey = 3,
    Error = 4,
    Refused = 5,
}

#[cfg(feature = "metrics")]
#[derive(Debug)]
struct Exported {
    allowed: metrics::Counter,
    denied: metrics::Counter,
    dry_run_denied: metrics::Counter,
    missing_key: metrics::Counter,
    errors: metrics::Counter,
    refused: metrics::Counter,
}

/// The counter every decision increments, with the labels `policy` and `outcome`
/// (`allowed`, `denied`, `dry_run_denied`, `missing_key`, `error`, `refused`).
#[cfg(feature = "metrics")]
pub const METRIC_NAME: &str = "hotlimit_tower_decisions_total";

impl Counters {
    /// Counters for the policy `name`; with the `metrics` feature, registered with the
    /// recorder installed now.
    pub(crate) fn new(name: &str) -> Counters {
        #[cfg(not(feature = "metrics"))]
        let _ = name;
        Counters {
            #[cfg(feature = "metrics")]
            exported: {
                let c = |outcome: &'static str| metrics::counter!(METRIC_NAME, "policy" => name.to_owned(), "outcome" => outcome);
                Some(Exported {
                    allowed: c("allowed"),
                    denied: c("denied"),
                    dry_run_denied: c("dry_run_denied"),
                    missing_key: c("missing_key"),
                    errors: c("error"),
                    refused: c("refused"),
                })
            },
            ..Counters::default()
        }
    }

    #[inline]
    pub(crate) fn count(&self, what: Counted) {
        // Relaxed: a statistic; nothing is published with it.
        self.stripes[stripe()].0[what as usize].fetch_add(1, Ordering::Relaxed);
        #[cfg(feature = "metrics")]
        if let Some(e) = &self.exported {
            match what {
                Counted::Allowed => e.allowed.increment(1),
                Counted::Denied => e.denied.increment(1),
                Counted::DryRunDenied => e.dry_run_denied.increment(1),
                Counted::MissingKey => e.missing_key.increment(1),
                Counted::Error => e.errors.increment(1),
                Counted::Refused => e.refused.increment(1),
            }
        }
    }

    pub(crate) fn snapshot(&self, name: &str) -> PolicyCounts {
        let sum = |what: Counted| -> u64 {
            self.stripes
                .iter()
                // Relaxed: a snapshot of statistics.
                .map(|s| s.0[what as usize].load(Ordering::Relaxed))
                .sum()
        };
        PolicyCounts {
            policy: name.to_owned(),
            allowed: sum(Counted::Allowed),
            denied: sum(Counted::Denied),
            dry_run_denied: sum(Counted::DryRunDenied),
            missing_key: sum(Counted::MissingKey),
            errors: sum(Counted::Error),
            refused: sum(Counted::Refused),
        }
    }
}

/// What one policy has decided so far (a snapshot): see
/// [`RateLimitLayer::counters`](crate::RateLimitLayer::counters).
///
/// A request counts once per policy that decided it: `allowed` (admitted by this policy),
/// `denied` (refused by it), `dry_run_denied` (it would have refused, but the layer is in
/// dry-run mode), `missing_key` (no key: rejected, let through or counted under the shared
/// key, as [`MissingKey`](crate::MissingKey) says: the last case also counts its decision),
/// `errors` (the limiter failed to decide), `refused` (the key extractor refused to choose a
/// key: a misconfigured server, see [`Refusal`](crate::Refusal)). Policies after a denying one do not decide, so
/// they do not count that request.
///
/// # Examples
///
/// ```
/// use hotlimit_tower::PolicyCounts;
///
/// let c = PolicyCounts::default();
/// assert_eq!(c.allowed + c.denied, 0);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PolicyCounts {
    /// The policy's name.
    pub policy: String,
    /// Requests this policy admitted.
    pub allowed: u64,
    /// Requests this policy refused.
    pub denied: u64,
    /// Requests this policy would have refused, admitted by dry-run mode.
    pub dry_run_denied: u64,
    /// Requests with no key for this policy.
    pub missing_key: u64,
    /// Decisions that failed (a networked limiter's error).
    pub errors: u64,
    /// Requests refused because the key extractor would not choose a key (a misconfigured
    /// server: no peer address; see [`Refusal`](crate::Refusal)). Each is also logged.
    pub refused: u64,
}
