//! [`Evaluator`]: what every clone of the layer and of its services shares (behind one `Arc`):
//! the policies, the settings and the counters, and the evaluation of one request under all of
//! the policies.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use hotlimit::Decision;
use http::header::CONTENT_TYPE;
use http::request::Parts;
use http::{Response, StatusCode};

use crate::counters::{Counted, PolicyCounts};
use crate::headers::HeaderBlock;
use crate::policy::{BoxError, DecisionFuture, Entry, Step};
use crate::response::{
    default_response, RateLimitDecision, Rejection, RejectionBody, RejectionKind,
};

/// A custom rejection handler.
pub(crate) type Handler = dyn Fn(&Rejection) -> Response<Bytes> + Send + Sync;

/// Everything the layer was configured with, and the counters.
pub(crate) struct Evaluator {
    pub(crate) policies: Vec<Entry>,
    /// `RateLimit-Policy` when every policy decides on its own quota (the usual response).
    pub(crate) policy_field: http::HeaderValue,
    pub(crate) settings: Settings,
}

/// The layer's settings besides its policies: what the builder sets, kept as it set them.
pub(crate) struct Settings {
    pub(crate) status: StatusCode,
    pub(crate) table_full_status: StatusCode,
    pub(crate) error_status: StatusCode,
    pub(crate) body: RejectionBody,
    pub(crate) legacy: bool,
    pub(crate) dry_run: bool,
    pub(crate) extensions: bool,
    pub(crate) fail_open: bool,
    pub(crate) handler: Option<Arc<Handler>>,
}

impl Default for Settings {
    /// 429, 503 when a key table is full or a limiter fails (fail closed), plain-text bodies,
    /// no legacy headers, no dry-run, no decisions in the extensions, no handler.
    fn default() -> Self {
        Settings {
            status: StatusCode::TOO_MANY_REQUESTS,
            table_full_status: StatusCode::SERVICE_UNAVAILABLE,
            error_status: StatusCode::SERVICE_UNAVAILABLE,
            body: RejectionBody::Text,
            legacy: false,
            dry_run: false,
            extensions: false,
            fail_open: false,
            handler: None,
        }
    }
}

impl fmt::Debug for Evaluator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Evaluator")
            .field("policies", &self.policies)
            .field("status", &self.settings.status)
            .field("body", &self.settings.body)
            .field("legacy", &self.settings.legacy)
            .field("dry_run", &self.settings.dry_run)
            .finish_non_exhaustive()
    }
}

/// How a request's evaluation ended.
#[derive(Debug)]
pub(crate) enum End {
    /// Every policy admitted it (or had nothing to say).
    Admit,
    /// Policy `i` refused it with its decision at `decisions[j]`.
    Denied { policy: usize, at: usize },
    /// Policy `i` found no key and rejects keyless requests with this status.
    MissingKey { policy: usize, status: StatusCode },
    /// Policy `i`'s limiter failed.
    Failed { policy: usize },
    /// Policy `i`'s key extractor refused to choose a key.
    Refused { policy: usize },
}

/// The decisions made on one request, and how it ended.
#[derive(Debug)]
pub(crate) struct Verdict {
    /// `(policy index, decision)` in the order made.
    pub(crate) decisions: Decisions,
    pub(crate) end: End,
}

/// `(policy index, decision)` pairs: the first two inline (no allocation for one or two
/// policies), the rest in a `Vec`.
#[derive(Debug, Default)]
pub(crate) struct Decisions {
    inline: [Option<(usize, Decision)>; 2],
    more: Vec<(usize, Decision)>,
}

impl Decisions {
    pub(crate) fn push(&mut self, d: (usize, Decision)) {
        match self.inline.iter_mut().find(|x| x.is_none()) {
            Some(slot) => *slot = Some(d),
            None => self.more.push(d),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.inline.iter().flatten().count() + self.more.len()
    }

    pub(crate) fn get(&self, at: usize) -> Option<&(usize, Decision)> {
        self.iter().nth(at)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &(usize, Decision)> + Clone {
        self.inline.iter().flatten().chain(self.more.iter())
    }
}

/// Where a synchronous evaluation stopped.
pub(crate) enum Progress {
    Done(Verdict),
    /// Policy `at` is still deciding; `verdict` holds what came before. Once it has, go on
    /// from policy `resume`, skipping `skip` (a policy the preview already decided).
    Pending {
        at: usize,
        fut: DecisionFuture,
        resume: usize,
        skip: Option<usize>,
        verdict: Verdict,
    },
}

impl Evaluator {
    /// What each policy has decided so far, in the layer's order.
    pub(crate) fn counters(&self) -> Vec<PolicyCounts> {
        self.policies
            .iter()
            .map(|e| e.counters.snapshot(e.policy.name()))
            .collect()
    }

    /// Decides `parts` under every policy, synchronously as far as the limiters allow.
    ///
    /// With several policies, first a preview: the first policy whose limiter can preview
    /// ([`Peek`](crate::Peek)) and says no is decided alone; its denial writes nothing, so no
    /// policy is charged for a request that one of them refuses. Otherwise the policies decide
    /// in order and the first refusal stops the rest (they are not charged, those before are).
    pub(crate) fn evaluate(&self, parts: &Parts) -> Progress {
        let mut verdict = Verdict {
            decisions: Decisions::default(),
            end: End::Admit,
        };
        let mut first = None;
        if self.policies.len() > 1 && !self.settings.dry_run {
            first = self
                .policies
                .iter()
                .position(|e| e.policy.peek(parts) == Some(false));
        }
        if let Some(i) = first {
            match self.step(i, self.policies[i].policy.decide(parts), &mut verdict) {
                Some(Err(fut)) => {
                    return Progress::Pending {
                        at: i,
                        fut,
                        resume: 0,
                        skip: Some(i),
                        verdict,
                    }
                }
                Some(Ok(())) => return Progress::Done(verdict),
                None => {}
            }
        }
        self.run(parts, 0, first, verdict)
    }

    /// Continues from policy `from`, skipping `skip` (decided by the preview).
    pub(crate) fn run(
        &self,
        parts: &Parts,
        from: usize,
        skip: Option<usize>,
        mut verdict: Verdict,
    ) -> Progress {
        for i in from..self.policies.len() {
            if Some(i) == skip {
                continue;
            }
            match self.step(i, self.policies[i].policy.decide(parts), &mut verdict) {
                Some(Err(fut)) => {
                    return Progress::Pending {
                        at: i,
                        fut,
                        resume: i + 1,
                        skip,
                        verdict,
                    }
                }
                Some(Ok(())) => return Progress::Done(verdict),
                None => {}
            }
        }
        Progress::Done(verdict)
    }

    /// Records policy `i`'s step: `None` to go on, `Some(Ok)` when the evaluation ended,
    /// `Some(Err(fut))` when it must wait.
    fn step(
        &self,
        i: usize,
        step: Step,
        verdict: &mut Verdict,
    ) -> Option<Result<(), DecisionFuture>> {
        match step {
            Step::Pending(fut) => Some(Err(fut)),
            Step::Ready(r) => self.absorb(i, r, verdict).then_some(Ok(())),
            Step::Skip => {
                self.policies[i].counters.count(Counted::MissingKey);
                None
            }
            Step::Reject(status) => {
                self.policies[i].counters.count(Counted::MissingKey);
                verdict.end = End::MissingKey { policy: i, status };
                Some(Ok(()))
            }
            Step::Refused(why) => {
                self.policies[i].refused(why);
                verdict.end = End::Refused { policy: i };
                Some(Ok(()))
            }
        }
    }

    /// Records policy `i`'s decision; true when it ends the evaluation.
    pub(crate) fn absorb(
        &self,
        i: usize,
        r: Result<Decision, BoxError>,
        verdict: &mut Verdict,
    ) -> bool {
        let counters = &self.policies[i].counters;
        match r {
            Ok(d) if d.is_allowed() => {
                counters.count(Counted::Allowed);
                verdict.decisions.push((i, d));
                false
            }
            Ok(d) if self.settings.dry_run => {
                counters.count(Counted::DryRunDenied);
                verdict.decisions.push((i, d));
                false
            }
            Ok(d) => {
                counters.count(Counted::Denied);
                verdict.decisions.push((i, d));
                verdict.end = End::Denied {
                    policy: i,
                    at: verdict.decisions.len() - 1,
                };
                true
            }
            Err(_) if self.settings.fail_open => {
                counters.count(Counted::Error);
                false
            }
            Err(_) => {
                counters.count(Counted::Error);
                verdict.end = End::Failed { policy: i };
                true
            }
        }
    }

    /// The rate-limit headers of `verdict`.
    pub(crate) fn headers(&self, verdict: &Verdict) -> HeaderBlock {
        let denied = match verdict.end {
            End::Denied { at, .. } => verdict.decisions.get(at).map(|(_, d)| d),
            _ => None,
        };
        // Every policy decided, in order, on its own quota: the precomputed field.
        let all = verdict.decisions.len() == self.policies.len()
            && verdict
                .decisions
                .iter()
                .enumerate()
                .all(|(k, (i, d))| k == *i && d.quota() == self.policies[k].quota);
        HeaderBlock::new(
            verdict
                .decisions
                .iter()
                .map(|(i, d)| (self.policies[*i].quoted.as_str(), d)),
            all.then(|| self.policy_field.clone()),
            denied,
            self.settings.legacy,
        )
    }

    /// The decisions for the request's extensions, if the layer puts them there.
    pub(crate) fn extension(&self, verdict: &Verdict) -> Option<RateLimitDecision> {
        (self.settings.dry_run || self.settings.extensions).then(|| RateLimitDecision {
            decisions: verdict
                .decisions
                .iter()
                .map(|(i, d)| (self.policies[*i].policy.name().to_owned(), *d))
                .collect(),
            dry_run: self.settings.dry_run,
        })
    }

    /// The response for a rejected request, with the headers taken from `headers`; `None`
    /// (headers left in place) when it is admitted.
    pub(crate) fn rejection(
        &self,
        verdict: &Verdict,
        grpc: bool,
        headers: &mut Option<HeaderBlock>,
    ) -> Option<Response<Bytes>> {
        let (policy, kind, status, decision) = match verdict.end {
            End::Admit => return None,
            End::Denied { policy, at } => {
                let &(_, d) = verdict.decisions.get(at)?;
                let kind = d
                    .denial()
                    .map_or(RejectionKind::OverLimit, |x| RejectionKind::of(x.reason()));
                let status = if kind == RejectionKind::TableFull {
                    self.settings.table_full_status
                } else {
                    self.settings.status
                };
                (policy, kind, status, Some(d))
            }
            End::MissingKey { policy, status } => (policy, RejectionKind::MissingKey, status, None),
            End::Failed { policy } => (
                policy,
                RejectionKind::LimiterError,
                self.settings.error_status,
                None,
            ),
            End::Refused { policy } => (
                policy,
                RejectionKind::Refused,
                StatusCode::INTERNAL_SERVER_ERROR,
                None,
            ),
        };
        let rejection = Rejection {
            status,
            policy: self.policies[policy].policy.name().to_owned(),
            kind,
            retry_after: headers.as_ref().and_then(HeaderBlock::retry_after),
            decision,
            grpc,
        };
        let mut resp = match &self.settings.handler {
            Some(h) => h(&rejection),
            None => default_response(&rejection, self.settings.body),
        };
        // After the handler: it cannot drop or change them.
        if let Some(h) = headers.take() {
            h.apply(resp.headers_mut(), true);
        }
        Some(resp)
    }
}

/// Finishes an evaluation that had to wait for policy `at`: `(parts, verdict)` once every
/// policy has decided or one ended it.
pub(crate) async fn finish(
    evaluator: Arc<Evaluator>,
    parts: Parts,
    mut progress: Progress,
) -> (Parts, Verdict) {
    loop {
        match progress {
            Progress::Done(verdict) => return (parts, verdict),
            Progress::Pending {
                at,
                fut,
                resume,
                skip,
                mut verdict,
            } => {
                let r = fut.await;
                if evaluator.absorb(at, r, &mut verdict) {
                    return (parts, verdict);
                }
                progress = evaluator.run(&parts, resume, skip, verdict);
            }
        }
    }
}

/// Whether a request is gRPC.
pub(crate) fn is_grpc(parts: &Parts) -> bool {
    parts
        .headers
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"))
}
