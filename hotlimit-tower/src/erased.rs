//! What the evaluator asks of a policy, with the policy's types erased so that one layer holds
//! policies over different limiters and keys: [`ErasedPolicy`], and what it answers.
//!
//! A policy reports one or more *fields*: the named quotas it decides (one for a
//! [`Policy`](crate::Policy), two for a [`PolicyPair`](crate::PolicyPair)). It writes what
//! each field reports on this response into the [`Report`] slots the evaluator hands it.

use std::future::Future;
use std::pin::Pin;

use hotlimit::{Decision, Quota};
use http::request::Parts;
use http::StatusCode;

use crate::key::Refusal;

/// A boxed error from a policy's limiter (a networked backend that failed).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A decision future from any limiter, boxed once it turned out not to be ready at once.
pub(crate) type DecisionFuture = Pin<Box<dyn Future<Output = Result<Decision, BoxError>> + Send>>;

/// What one field reports on one response.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) enum Report {
    /// Nothing: the policy does not apply (a keyless request it lets through), or its limiter
    /// could not tell (it failed, or it is networked and did not decide).
    #[default]
    Silent,
    /// Its decision on this request (charged if the request was admitted).
    Decided(Decision),
    /// Its state for this request's key, uncharged: it did not decide (another policy refused
    /// first).
    Peeked(Decision),
    /// The request has no key under it (and is rejected for that): nothing remaining.
    Keyless,
}

impl Report {
    /// The decision or state reported, if any.
    pub(crate) fn decision(&self) -> Option<&Decision> {
        match self {
            Report::Decided(d) | Report::Peeked(d) => Some(d),
            _ => None,
        }
    }
}

/// A policy's preview of a request: whether it would admit it, without charging.
#[derive(Debug)]
pub(crate) enum Preview {
    /// It would admit it (its fields hold `Peeked` states).
    Admits,
    /// It would refuse it (its fields hold `Peeked` states).
    Refuses,
    /// The request has no key and the policy lets such requests through.
    Skip,
    /// The request has no key and the policy rejects such requests with this status.
    Reject(StatusCode),
    /// The key extractor refused to choose a key.
    Refused(Refusal),
    /// It cannot preview (a networked limiter): it must decide.
    Unknown,
}

/// A policy's answer for one request.
pub(crate) enum Step {
    /// Every field admitted it (its fields hold `Decided` decisions).
    Admitted,
    /// Field `field` (counted from the policy's first) refused it; the other fields hold
    /// their decisions or uncharged states.
    Denied { field: usize },
    /// The request has no key: let it through (no decision).
    Skip,
    /// The request has no key: answer with this status.
    Reject(StatusCode),
    /// The key extractor refused to choose a key (a misconfigured server).
    Refused(Refusal),
    /// The limiter failed to decide.
    Failed,
    /// Still deciding (a networked limiter, one field): the decision comes from the future.
    Pending(DecisionFuture),
}

impl Step {
    /// The step of a one-field policy whose decision is `r`, written into `out`.
    #[inline]
    pub(crate) fn of(r: Result<Decision, BoxError>, out: &mut Report) -> Step {
        match r {
            Ok(d) => {
                *out = Report::Decided(d);
                if d.is_allowed() {
                    Step::Admitted
                } else {
                    Step::Denied { field: 0 }
                }
            }
            Err(_) => Step::Failed,
        }
    }
}

/// A policy with its types erased.
pub(crate) trait ErasedPolicy: Send + Sync + 'static {
    /// Each field's name and quota when the layer is built.
    fn fields(&self) -> Vec<(&str, Quota)>;
    /// The status keyless requests are rejected with, if they are.
    fn missing_status(&self) -> Option<StatusCode>;
    /// Whether the request would be admitted now, charging nothing; the fields' states go to
    /// `out` (one slot per field).
    fn preview(&self, parts: &Parts, out: &mut [Report]) -> Preview;
    /// Decides the request, charging it if it is admitted; the fields' reports go to `out`.
    fn decide(&self, parts: &Parts, out: &mut [Report]) -> Step;
}
