//! [`Evaluator`]: what every clone of the layer and of its services shares (behind one `Arc`):
//! the policies, their fields, the settings and the counters; and the evaluation of one
//! request under all of the policies.
//!
//! With one policy (or in dry-run mode) the policies decide in order. With several, every
//! policy is first previewed, charging nothing ([`ErasedPolicy::preview`]): a request one of
//! them rejects for want of a key is rejected with no policy charged; one that a policy would
//! refuse is decided by that policy alone (a refusal writes nothing); otherwise they decide in
//! order. The previews also give every field its report when the request ends before the
//! field's policy decides (every response names every field that applies to it).

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::request::Parts;
use http::{Response, StatusCode, Version};

use crate::counters::{Counted, PolicyCounts};
use crate::erased::{DecisionFuture, ErasedPolicy, Preview, Report, Step};
use crate::field::Field;
use crate::headers::{HeaderBlock, PolicyText};
use crate::response::{
    default_response, RateLimitDecision, Rejection, RejectionBody, RejectionKind,
};

/// A custom rejection handler.
pub(crate) type Handler = dyn Fn(&Rejection) -> Response<Bytes> + Send + Sync;

/// Everything the layer was configured with, and the counters.
pub(crate) struct Evaluator {
    pub(crate) policies: Vec<Entry>,
    /// Every policy's fields, in the layer's order.
    pub(crate) fields: Vec<Field>,
    /// `RateLimit-Policy` listing every field with the quota it was built with.
    pub(crate) policy: PolicyText,
    pub(crate) settings: Settings,
}

/// A policy as the layer keeps it: erased, with where its fields are.
pub(crate) struct Entry {
    pub(crate) policy: Box<dyn ErasedPolicy>,
    /// The index of its first field.
    pub(crate) first: usize,
    /// How many fields it has.
    pub(crate) width: usize,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("first", &self.first)
            .field("width", &self.width)
            .finish_non_exhaustive()
    }
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
            .field("fields", &self.fields)
            .field("status", &self.settings.status)
            .field("body", &self.settings.body)
            .field("legacy", &self.settings.legacy)
            .field("dry_run", &self.settings.dry_run)
            .finish_non_exhaustive()
    }
}

/// How a request's evaluation ended; `field` names the field that ended it.
#[derive(Debug)]
pub(crate) enum End {
    /// Every policy admitted it (or had nothing to say).
    Admit,
    /// The field refused it (its report holds the decision).
    Denied { field: usize },
    /// The request has no key under the field, whose policy rejects keyless requests.
    MissingKey { field: usize, status: StatusCode },
    /// The field's limiter failed.
    Failed { field: usize },
    /// The field's key extractor refused to choose a key.
    Refused { field: usize },
}

/// What every field reports on a request, and how its evaluation ended.
#[derive(Debug)]
pub(crate) struct Verdict {
    pub(crate) reports: Reports,
    pub(crate) end: End,
}

/// One report per field: inline for up to two fields (no allocation), else in a `Vec`.
#[derive(Debug)]
pub(crate) struct Reports {
    inline: [Report; 2],
    more: Vec<Report>,
    len: usize,
}

impl Reports {
    #[inline]
    fn new(len: usize) -> Reports {
        Reports {
            inline: [Report::Silent; 2],
            more: if len > 2 {
                vec![Report::Silent; len]
            } else {
                Vec::new()
            },
            len,
        }
    }

    pub(crate) fn as_slice(&self) -> &[Report] {
        if self.len > 2 {
            &self.more
        } else {
            &self.inline[..self.len]
        }
    }

    fn as_mut_slice(&mut self) -> &mut [Report] {
        if self.len > 2 {
            &mut self.more
        } else {
            &mut self.inline[..self.len]
        }
    }

    /// The reports of `entry`'s fields.
    fn of(&mut self, entry: &Entry) -> &mut [Report] {
        &mut self.as_mut_slice()[entry.first..entry.first + entry.width]
    }

    pub(crate) fn get(&self, field: usize) -> Option<&Report> {
        self.as_slice().get(field)
    }
}

/// An evaluation that must wait: policy `at` is still deciding. Once it has, go on from
/// policy `resume`, skipping `skip` (a policy decided already).
pub(crate) struct Pending {
    at: usize,
    fut: DecisionFuture,
    resume: usize,
    skip: Option<usize>,
}

impl Verdict {
    /// Whether every policy admitted the request (or had nothing to say).
    #[inline]
    pub(crate) fn admitted(&self) -> bool {
        matches!(self.end, End::Admit)
    }

    /// Nothing reported yet by any of `fields` fields, and no end.
    #[inline]
    pub(crate) fn new(fields: usize) -> Verdict {
        Verdict {
            reports: Reports::new(fields),
            end: End::Admit,
        }
    }
}

/// What follows a policy's step.
enum Flow {
    /// The next policy.
    Next,
    /// The evaluation ended.
    End,
    /// Wait for this decision.
    Wait(DecisionFuture),
}

impl Evaluator {
    /// What each field has decided so far, in the layer's order.
    pub(crate) fn counters(&self) -> Vec<PolicyCounts> {
        self.fields
            .iter()
            .map(|f| f.counters.snapshot(&f.name))
            .collect()
    }

    /// Decides `parts` under every policy into `v`, synchronously as far as the limiters
    /// allow: `Some` when a limiter must be waited for ([`finish`]). See the module docs.
    #[inline]
    pub(crate) fn evaluate(&self, parts: &Parts, v: &mut Verdict) -> Option<Pending> {
        if self.policies.len() == 1 || self.settings.dry_run {
            return self.run(parts, 0, None, v);
        }
        let mut refuses = None;
        for (i, e) in self.policies.iter().enumerate() {
            match e.policy.preview(parts, v.reports.of(e)) {
                Preview::Admits | Preview::Skip | Preview::Unknown => {}
                Preview::Refuses => {
                    refuses.get_or_insert(i);
                }
                Preview::Reject(status) => {
                    if matches!(v.end, End::Admit) {
                        self.fields[e.first].counters.count(Counted::MissingKey);
                        v.end = End::MissingKey {
                            field: e.first,
                            status,
                        };
                    }
                }
                Preview::Refused(why) => {
                    if matches!(v.end, End::Admit) {
                        self.fields[e.first].refused(why);
                        v.end = End::Refused { field: e.first };
                    }
                }
            }
        }
        if !matches!(v.end, End::Admit) {
            // Rejected for a missing key: no policy charged, every other field previewed.
            return None;
        }
        if let Some(i) = refuses {
            // Its refusal writes nothing: decided alone, it charges no policy.
            match self.step(parts, i, v) {
                Flow::Next => {}
                Flow::End => return None,
                Flow::Wait(fut) => {
                    return Some(Pending {
                        at: i,
                        fut,
                        resume: 0,
                        skip: Some(i),
                    })
                }
            }
        }
        self.run(parts, 0, refuses, v)
    }

    /// Decides in order from policy `from`, skipping `skip` (decided already).
    #[inline]
    fn run(
        &self,
        parts: &Parts,
        from: usize,
        skip: Option<usize>,
        v: &mut Verdict,
    ) -> Option<Pending> {
        for i in from..self.policies.len() {
            if Some(i) == skip {
                continue;
            }
            match self.step(parts, i, v) {
                Flow::Next => {}
                Flow::End => return None,
                Flow::Wait(fut) => {
                    return Some(Pending {
                        at: i,
                        fut,
                        resume: i + 1,
                        skip,
                    })
                }
            }
        }
        None
    }

    /// Policy `i` decides.
    #[inline]
    fn step(&self, parts: &Parts, i: usize, v: &mut Verdict) -> Flow {
        let e = &self.policies[i];
        let step = e.policy.decide(parts, v.reports.of(e));
        self.settle(i, step, v)
    }

    /// Counts policy `i`'s `step` and says what follows.
    #[inline]
    fn settle(&self, i: usize, step: Step, v: &mut Verdict) -> Flow {
        let e = &self.policies[i];
        let fields = &self.fields[e.first..e.first + e.width];
        match step {
            Step::Admitted => {
                for f in fields {
                    f.counters.count(Counted::Allowed);
                }
                Flow::Next
            }
            Step::Denied { field } => {
                let dry = self.settings.dry_run;
                for (f, report) in fields.iter().zip(v.reports.of(e).iter()) {
                    match report {
                        Report::Decided(d) if !d.is_allowed() => f.counters.count(if dry {
                            Counted::DryRunDenied
                        } else {
                            Counted::Denied
                        }),
                        Report::Decided(_) => f.counters.count(Counted::Allowed),
                        _ => {}
                    }
                }
                if dry {
                    return Flow::Next;
                }
                v.end = End::Denied {
                    field: e.first + field,
                };
                Flow::End
            }
            Step::Skip => {
                for f in fields {
                    f.counters.count(Counted::MissingKey);
                }
                Flow::Next
            }
            Step::Reject(status) => {
                for f in fields {
                    f.counters.count(Counted::MissingKey);
                }
                v.end = End::MissingKey {
                    field: e.first,
                    status,
                };
                Flow::End
            }
            Step::Refused(why) => {
                for f in fields {
                    f.refused(why);
                }
                v.end = End::Refused { field: e.first };
                Flow::End
            }
            Step::Failed => {
                for f in fields {
                    f.counters.count(Counted::Error);
                }
                if self.settings.fail_open {
                    return Flow::Next;
                }
                v.reports.of(e).fill(Report::Keyless);
                v.end = End::Failed { field: e.first };
                Flow::End
            }
            Step::Pending(fut) => Flow::Wait(fut),
        }
    }

    /// The rate-limit headers of `verdict`.
    pub(crate) fn headers(&self, verdict: &Verdict) -> HeaderBlock {
        let denied = match verdict.end {
            End::Denied { field } => verdict.reports.get(field).and_then(Report::decision),
            _ => None,
        };
        HeaderBlock::new(
            &self.fields,
            verdict.reports.as_slice(),
            &self.policy,
            denied,
            self.settings.legacy,
        )
    }

    /// Whether the layer puts the decisions in the request's extensions.
    #[inline]
    pub(crate) fn extends(&self) -> bool {
        self.settings.dry_run || self.settings.extensions
    }

    /// The decisions for the request's extensions, if the layer puts them there.
    #[cold]
    pub(crate) fn extension(&self, verdict: &Verdict) -> Option<RateLimitDecision> {
        (self.settings.dry_run || self.settings.extensions).then(|| RateLimitDecision {
            decisions: self
                .fields
                .iter()
                .zip(verdict.reports.as_slice())
                .filter_map(|(f, r)| match r {
                    Report::Decided(d) => Some((f.name.clone(), *d)),
                    _ => None,
                })
                .collect(),
            dry_run: self.settings.dry_run,
        })
    }

    /// The response for a rejected request, with the headers taken from `headers`; `None`
    /// (headers left in place) when it is admitted.
    #[cold]
    pub(crate) fn rejection(
        &self,
        verdict: &Verdict,
        grpc: bool,
        headers: &mut Option<HeaderBlock>,
    ) -> Option<Response<Bytes>> {
        let (field, kind, status, decision) = match verdict.end {
            End::Admit => return None,
            End::Denied { field } => {
                let d = *verdict.reports.get(field)?.decision()?;
                let kind = d
                    .denial()
                    .map_or(RejectionKind::OverLimit, |x| RejectionKind::of(x.reason()));
                let status = if kind == RejectionKind::TableFull {
                    self.settings.table_full_status
                } else {
                    self.settings.status
                };
                (field, kind, status, Some(d))
            }
            End::MissingKey { field, status } => (field, RejectionKind::MissingKey, status, None),
            End::Failed { field } => (
                field,
                RejectionKind::LimiterError,
                self.settings.error_status,
                None,
            ),
            End::Refused { field } => (
                field,
                RejectionKind::Refused,
                StatusCode::INTERNAL_SERVER_ERROR,
                None,
            ),
        };
        let rejection = Rejection {
            status,
            policy: self.fields[field].name.clone(),
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

/// Finishes an evaluation that had to wait: `(parts, verdict)` once every policy has decided
/// or one ended it.
pub(crate) async fn finish(
    evaluator: Arc<Evaluator>,
    parts: Parts,
    mut v: Verdict,
    mut pending: Pending,
) -> (Parts, Verdict) {
    loop {
        let r = pending.fut.await;
        let e = &evaluator.policies[pending.at];
        let step = Step::of(r, &mut v.reports.of(e)[0]);
        match evaluator.settle(pending.at, step, &mut v) {
            Flow::Next => match evaluator.run(&parts, pending.resume, pending.skip, &mut v) {
                Some(next) => pending = next,
                None => return (parts, v),
            },
            // `Step::of` never waits.
            Flow::End | Flow::Wait(_) => return (parts, v),
        }
    }
}

/// Whether a request is gRPC, so that a rejection is framed as gRPC (`200 OK`, `grpc-status`):
/// HTTP/2 (gRPC's transport) and the content type `application/grpc`, alone or followed by
/// `+format` or `;parameters` (the gRPC over HTTP/2 spec). Anything else (HTTP/1.1 whatever its
/// content type, `application/grpc-web`, `application/grpcx`) is answered with the rejection's
/// HTTP status: no client can turn a refusal into a `200` that logs, alerts and shared caches
/// take for a success.
pub(crate) fn is_grpc(parts: &Parts) -> bool {
    if parts.version != Version::HTTP_2 {
        return false;
    }
    parts.headers.get(CONTENT_TYPE).is_some_and(|v| {
        let v = v.as_bytes();
        v.len() >= 16
            && v[..16].eq_ignore_ascii_case(b"application/grpc")
            && matches!(v.get(16), None | Some(b'+' | b';'))
    })
}
