//! The rate-limit fields the layer writes on every response: `RateLimit-Policy` and
//! `RateLimit` as draft-ietf-httpapi-ratelimit-headers-11 defines them, `Retry-After` (whole
//! seconds, rounded up, at least 1) and the optional `X-RateLimit-*` trio. `field_text.rs`
//! holds each field's pre-encoded text, [`PolicyText`] the layer's pre-built `RateLimit-Policy`,
//! [`HeaderBlock`] one response's values.
//!
//! What each field says (the rules the crate docs state):
//!
//! - `RateLimit-Policy: "name";q=Q;w=W` for every field of the layer, on every response: Q
//!   the quota's limit (a GCRA's burst), W its window in whole seconds, rounded up, at least 1
//!   (a GCRA's refill time). The same value on every response unless a key's own rate (an
//!   override) differs.
//! - `RateLimit: "name";r=R;t=T` for every field that applies to the request: R the available
//!   quota (never above Q), T the effective window: the seconds within which the client can
//!   use no more than R, rounded up and never above W. Below Q that is the time until one
//!   more unit is available; at Q (nothing spent) the time one unit takes to come back once
//!   spent, W/Q. A field whose policy did not decide reports its state for the request's key,
//!   uncharged; a keyless request a field rejects reports `r=0` (no window: it has no quota
//!   under the field); a field that lets keyless requests through, or whose limiter was not
//!   asked (a networked one) or failed while the layer fails open, reports nothing (one that
//!   failed while it fails closed: `r=0`).
//!
//! The admitted path allocates nothing (`arena.rs` holds the per-response text) and, on an
//! empty header map, hashes nothing: the layer's stripe holds a pre-built map of its two
//! fields, cloned whole in place of two inserts.

use std::sync::Arc;

use hotlimit::Decision;
use http::header::{HeaderName, HeaderValue, RETRY_AFTER};
use http::HeaderMap;

use crate::arena;
use crate::buf::Buf;
use crate::counters::{stripe, STRIPES};
use crate::erased::Report;
use crate::field::Field;
use crate::field_text::{ceil_secs, policy_item, Numbers};

/// `RateLimit-Policy`.
pub(crate) static RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`.
pub(crate) static RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
static X_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
static X_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
static X_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// One stripe's copy of a layer's `RateLimit-Policy` value, and a header map holding it and a
/// placeholder `RateLimit`, in that order: responses on threads of different stripes clone
/// different copies, so no reference count is shared by every core.
#[derive(Debug)]
pub(crate) struct Stripe {
    policy: HeaderValue,
    template: HeaderMap,
}

/// A layer's `RateLimit-Policy` value listing every field, built once and owned by the layer,
/// in one copy per stripe, and the id its memoized `RateLimit` values are kept under (see
/// `arena.rs`).
#[derive(Debug)]
pub(crate) struct PolicyText {
    id: u64,
    stripes: Box<[Arc<Stripe>]>,
}

impl PolicyText {
    /// The value for `fields`.
    pub(crate) fn new(fields: &[Field]) -> PolicyText {
        let mut buf = Buf::new();
        for (i, f) in fields.iter().enumerate() {
            buf.separate(i == 0);
            buf.push(&f.text.policy_item);
        }
        let stripes = (0..STRIPES)
            .map(|_| {
                // Names are checked printable ASCII; numbers are digits.
                let policy = HeaderValue::from_bytes(buf.as_bytes())
                    .unwrap_or_else(|_| HeaderValue::from_static(""));
                let mut template = HeaderMap::with_capacity(2);
                template.insert(RATELIMIT_POLICY.clone(), policy.clone());
                template.insert(RATELIMIT.clone(), HeaderValue::from_static(""));
                Arc::new(Stripe { policy, template })
            })
            .collect();
        PolicyText {
            id: next_id(),
            stripes,
        }
    }
}

/// A process-unique id for a layer's text (never 0).
fn next_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    // Relaxed: only uniqueness matters (the counter's own atomicity).
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The layer's own `RateLimit-Policy`, or another for this response.
#[derive(Debug)]
enum PolicyValue {
    /// The layer's pre-built value, in the stripe of the thread that decided.
    Own(Arc<Stripe>),
    /// A value listing a per-key quota (an override).
    Other(HeaderValue),
}

/// The headers of one response, applied after the inner service or the rejection handler.
#[derive(Debug)]
pub(crate) struct HeaderBlock {
    policy: PolicyValue,
    state: Option<HeaderValue>,
    retry_after: Option<u64>,
    legacy: Option<(u64, u64, u64)>,
}

impl HeaderBlock {
    /// The fields of a response: `reports[i]` is what `fields[i]` reports, `policy` the
    /// layer's pre-built `RateLimit-Policy` (used unless a report carries another quota),
    /// `denied` the decision that refused the request, if any; `legacy` adds `X-RateLimit-*`
    /// for the field with the least remaining.
    #[inline]
    pub(crate) fn new(
        fields: &[Field],
        reports: &[Report],
        policy: &PolicyText,
        denied: Option<&Decision>,
        legacy: bool,
    ) -> HeaderBlock {
        let own = Arc::clone(&policy.stripes[stripe()]);
        let retry_after = denied
            .and_then(Decision::denial)
            .and_then(|d| d.retry_after_secs_ceil());
        if let ([f], [Report::Decided(d) | Report::Peeked(d)], false) = (fields, reports, legacy) {
            if d.quota() == f.quota {
                // One field with its own quota: the value is a function of (layer, r, t), and
                // most likely the thread's last one.
                let (r, t) = f.text.own.item(d);
                let state =
                    arena::memoized([policy.id, r, t], |buf| f.text.state_item(buf, r, Some(t)));
                return HeaderBlock {
                    policy: PolicyValue::Own(own),
                    state: Some(state),
                    retry_after,
                    legacy: None,
                };
            }
        }
        Self::general(fields, reports, own, retry_after, legacy)
    }

    /// Any number of fields, overrides, legacy headers.
    #[inline(never)]
    fn general(
        fields: &[Field],
        reports: &[Report],
        own: Arc<Stripe>,
        retry_after: Option<u64>,
        legacy: bool,
    ) -> HeaderBlock {
        let mut state = Buf::new();
        let mut first = true;
        let mut own_quotas = true;
        let mut tightest: Option<(u64, u64, u64)> = None;
        for (f, report) in fields.iter().zip(reports) {
            let d = match report {
                Report::Silent => continue,
                Report::Keyless => {
                    state.separate(first);
                    first = false;
                    f.text.state_item(&mut state, 0, None);
                    // The legacy trio agrees with `RateLimit`: nothing remaining under it.
                    if legacy && tightest.is_none_or(|(_, least, _)| least > 0) {
                        tightest = Some((f.text.own.q, 0, f.text.own.w));
                    }
                    continue;
                }
                Report::Decided(d) | Report::Peeked(d) => d,
            };
            let n = if d.quota() == f.quota {
                f.text.own
            } else {
                own_quotas = false;
                Numbers::of(d.quota())
            };
            let (r, t) = n.item(d);
            state.separate(first);
            first = false;
            f.text.state_item(&mut state, r, Some(t));
            if legacy && tightest.is_none_or(|(_, least, _)| r < least) {
                tightest = Some((n.q, r, ceil_secs(d.reset())));
            }
        }
        HeaderBlock {
            policy: if own_quotas {
                PolicyValue::Own(own)
            } else {
                PolicyValue::Other(arena::value(policy_list(fields, reports).as_bytes()))
            },
            state: (!first).then(|| arena::value(state.as_bytes())),
            retry_after,
            legacy: tightest,
        }
    }

    /// The `Retry-After` seconds, if a denial set one.
    pub(crate) fn retry_after(&self) -> Option<u64> {
        self.retry_after
    }

    /// Adds the fields to `headers`: appended on an admitted response (an inner layer's own
    /// fields stay: these are lists), inserted over anything a rejection handler set.
    #[inline]
    pub(crate) fn apply(self, headers: &mut HeaderMap, overwrite: bool) {
        let HeaderBlock {
            policy,
            state,
            retry_after,
            legacy,
        } = self;
        let only_two = retry_after.is_none() && legacy.is_none();
        match (policy, state) {
            (PolicyValue::Own(stripe), Some(state)) if only_two && headers.is_empty() => {
                // The whole map at once: a clone of the stripe's, no name hashed (its entries
                // are exactly two: more fields would grow it again).
                let mut map = stripe.template.clone();
                if let Some(v) = map.values_mut().nth(1) {
                    *v = state;
                }
                *headers = map;
            }
            (policy, state) => {
                let policy = match policy {
                    PolicyValue::Own(stripe) => stripe.policy.clone(),
                    PolicyValue::Other(v) => v,
                };
                put(headers, &RATELIMIT_POLICY, policy, overwrite);
                if let Some(v) = state {
                    put(headers, &RATELIMIT, v, overwrite);
                }
            }
        }
        if let Some(s) = retry_after {
            headers.insert(RETRY_AFTER, number(s));
        }
        if let Some((limit, remaining, reset)) = legacy {
            headers.insert(X_LIMIT.clone(), number(limit));
            headers.insert(X_REMAINING.clone(), number(remaining));
            headers.insert(X_RESET.clone(), number(reset));
        }
    }
}

/// Appends (or, with `overwrite`, inserts) `name: v`.
#[inline]
fn put(headers: &mut HeaderMap, name: &HeaderName, v: HeaderValue, overwrite: bool) {
    if overwrite {
        headers.insert(name.clone(), v);
    } else {
        headers.append(name.clone(), v);
    }
}

/// `n` in decimal as a header value, without an allocation.
fn number(n: u64) -> HeaderValue {
    let mut buf = Buf::new();
    buf.push_u64(n);
    arena::value(buf.as_bytes())
}

/// `RateLimit-Policy` for a response where some report carries a quota of its own (a key's
/// override): each field's pre-encoded item, or its item for that quota.
#[cold]
fn policy_list(fields: &[Field], reports: &[Report]) -> Buf {
    let mut buf = Buf::new();
    for (i, (f, report)) in fields.iter().zip(reports).enumerate() {
        buf.separate(i == 0);
        match report.decision() {
            Some(d) if d.quota() != f.quota => {
                policy_item(&mut buf, f.text.quoted(), Numbers::of(d.quota()))
            }
            _ => buf.push(&f.text.policy_item),
        }
    }
    buf
}
