//! What the layer writes: the `RateLimit-Policy` / `RateLimit` fields of
//! draft-ietf-httpapi-ratelimit-headers on every response, `Retry-After` (whole seconds,
//! rounded up, at least 1) and the optional `X-RateLimit-*` trio, rejection bodies (text, JSON,
//! `application/problem+json`, gRPC `RESOURCE_EXHAUSTED`), and the decision a handler can read
//! from the request's extensions.

use std::fmt::Write as _;
use std::time::Duration;

use bytes::Bytes;
use hotlimit::{Decision, DenialReason};
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderMap, Response, StatusCode};

/// `RateLimit-Policy`.
pub(crate) static RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`.
pub(crate) static RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
static X_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
static X_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
static X_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");
static GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
static GRPC_MESSAGE: HeaderName = HeaderName::from_static("grpc-message");

/// The problem type the rate-limit headers draft registers for a quota that is exceeded.
pub const QUOTA_EXCEEDED_TYPE: &str =
    "https://iana.org/assignments/http-problem-types#quota-exceeded";

/// The body of a rejection (gRPC requests always get gRPC's empty body with `grpc-status`).
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, Rate};
/// use hotlimit_tower::{Global, Policy, RateLimitLayer, RejectionBody};
///
/// let layer = RateLimitLayer::builder()
///     .policy(Policy::new("global", Gcra::new(Rate::per_second(100)?)?, Global))
///     .body(RejectionBody::ProblemJson)
///     .build()?;
/// # let _ = layer;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RejectionBody {
    /// `text/plain; charset=utf-8`: one line saying which limit and when to retry.
    #[default]
    Text,
    /// `application/json`: `{"error": "rate_limited", "policy": "...", "retry_after": 1,
    /// "message": "..."}`.
    Json,
    /// `application/problem+json` (RFC 9457) with the `quota-exceeded` type of the rate-limit
    /// headers draft and its `violated-policies` member.
    ProblemJson,
}

/// Why a request was rejected.
///
/// # Examples
///
/// ```
/// use hotlimit_tower::RejectionKind;
///
/// assert_eq!(RejectionKind::OverLimit.code(), "rate_limited");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RejectionKind {
    /// The policy's limit is reached: retry after `retry_after`.
    OverLimit,
    /// The policy's keyed limiter has no room for a new key (its capacity): retry later.
    TableFull,
    /// The request costs more than the policy can ever grant at once: never retry as is.
    NeverGrantable,
    /// The request has no key for the policy ([`MissingKey::Reject`](crate::MissingKey::Reject)).
    MissingKey,
    /// The policy's limiter failed to decide (a networked backend): the layer fails closed.
    LimiterError,
    /// The policy's key extractor refused to choose a key because the server is
    /// misconfigured ([`Refusal`](crate::Refusal): no peer address): 500, logged.
    Refused,
}

impl RejectionKind {
    /// A short machine-readable name (`rate_limited`, `table_full`, `never_grantable`,
    /// `missing_key`, `limiter_error`, `refused`), as the JSON body's `error`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::RejectionKind;
    ///
    /// assert_eq!(RejectionKind::MissingKey.code(), "missing_key");
    /// ```
    pub fn code(self) -> &'static str {
        match self {
            RejectionKind::OverLimit => "rate_limited",
            RejectionKind::TableFull => "table_full",
            RejectionKind::NeverGrantable => "never_grantable",
            RejectionKind::MissingKey => "missing_key",
            RejectionKind::LimiterError => "limiter_error",
            RejectionKind::Refused => "refused",
        }
    }

    pub(crate) fn of(reason: DenialReason) -> RejectionKind {
        match reason {
            DenialReason::TableFull => RejectionKind::TableFull,
            DenialReason::Never => RejectionKind::NeverGrantable,
            _ => RejectionKind::OverLimit,
        }
    }
}

/// A rejection, as a custom handler ([`on_rejection`](crate::RateLimitLayerBuilder::on_rejection))
/// sees it. The layer adds its headers to whatever response the handler makes.
///
/// # Examples
///
/// ```
/// use hotlimit_tower::{Rejection, RejectionKind};
///
/// fn handler(r: &Rejection) -> http::Response<bytes::Bytes> {
///     let text = match (r.kind(), r.retry_after_secs()) {
///         (RejectionKind::OverLimit, Some(s)) => format!("slow down, {s} s"),
///         _ => "no".to_owned(),
///     };
///     http::Response::builder().status(r.status()).body(text.into()).unwrap()
/// }
/// # let _ = handler;
/// ```
#[derive(Clone, Debug)]
pub struct Rejection {
    pub(crate) status: StatusCode,
    pub(crate) policy: String,
    pub(crate) kind: RejectionKind,
    pub(crate) retry_after: Option<u64>,
    pub(crate) decision: Option<Decision>,
    pub(crate) grpc: bool,
}

impl Rejection {
    /// The status the layer would answer with (429, 503 or the missing-key status).
    ///
    /// # Examples
    ///
    /// See [`Rejection`].
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The name of the policy that rejected the request.
    ///
    /// # Examples
    ///
    /// See [`Rejection`].
    pub fn policy(&self) -> &str {
        &self.policy
    }

    /// Why.
    ///
    /// # Examples
    ///
    /// See [`Rejection`].
    pub fn kind(&self) -> RejectionKind {
        self.kind
    }

    /// The `Retry-After` value: whole seconds, rounded up, at least 1; `None` when retrying
    /// cannot help (or is not a matter of time).
    ///
    /// # Examples
    ///
    /// See [`Rejection`].
    pub fn retry_after_secs(&self) -> Option<u64> {
        self.retry_after
    }

    /// The policy's decision, when the limiter made one.
    ///
    /// # Examples
    ///
    /// See [`Rejection`].
    pub fn decision(&self) -> Option<&Decision> {
        self.decision.as_ref()
    }

    /// Whether the request is gRPC (`content-type: application/grpc...`).
    ///
    /// # Examples
    ///
    /// See [`Rejection`].
    pub fn is_grpc(&self) -> bool {
        self.grpc
    }

    /// One line for humans.
    pub(crate) fn message(&self) -> String {
        let name = &self.policy;
        match (self.kind, self.retry_after) {
            (RejectionKind::OverLimit, Some(s)) => {
                format!("the \"{name}\" rate limit is reached; retry after {s} s")
            }
            (RejectionKind::TableFull, Some(s)) => format!(
                "the \"{name}\" rate limiter has no room for new clients; retry after {s} s"
            ),
            (RejectionKind::MissingKey, _) => {
                format!("the request has no key for the \"{name}\" rate limit")
            }
            (RejectionKind::LimiterError, _) => {
                format!("the \"{name}\" rate limiter could not decide")
            }
            // The reason is logged for the operator; the client learns only that it is not its
            // fault.
            (RejectionKind::Refused, _) => {
                format!("the server cannot identify the client for the \"{name}\" rate limit")
            }
            _ => format!("the request costs more than the \"{name}\" rate limit can ever grant"),
        }
    }
}

/// The decisions the layer made on a request, in its extensions (always in dry-run mode, and
/// when [`decision_in_extensions`](crate::RateLimitLayerBuilder::decision_in_extensions) is
/// set), so a handler can read them.
///
/// # Examples
///
/// ```
/// use hotlimit_tower::RateLimitDecision;
///
/// fn handler(parts: &http::request::Parts) -> String {
///     match parts.extensions.get::<RateLimitDecision>() {
///         Some(d) if !d.is_allowed() => "would have been limited".to_owned(),
///         _ => "ok".to_owned(),
///     }
/// }
/// # let _ = handler;
/// ```
#[derive(Clone, Debug)]
pub struct RateLimitDecision {
    pub(crate) decisions: Vec<(String, Decision)>,
    pub(crate) dry_run: bool,
}

impl RateLimitDecision {
    /// True when every policy that decided admitted the request (false in dry-run mode for a
    /// request that was only admitted because of it).
    ///
    /// # Examples
    ///
    /// See [`RateLimitDecision`].
    pub fn is_allowed(&self) -> bool {
        self.decisions.iter().all(|(_, d)| d.is_allowed())
    }

    /// Each deciding policy's name and decision, in the layer's order.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::RateLimitDecision;
    ///
    /// fn remaining(d: &RateLimitDecision) -> Option<u64> {
    ///     d.decisions().map(|(_, d)| d.remaining()).min()
    /// }
    /// # let _ = remaining;
    /// ```
    pub fn decisions(&self) -> impl Iterator<Item = (&str, &Decision)> {
        self.decisions.iter().map(|(n, d)| (n.as_str(), d))
    }

    /// Whether the layer is in dry-run mode (the request was admitted whatever the decisions).
    ///
    /// # Examples
    ///
    /// See [`RateLimitDecision`].
    pub fn is_dry_run(&self) -> bool {
        self.dry_run
    }
}

/// Whole seconds, rounded up.
fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// The headers of one response, applied after the inner service or the rejection handler.
#[derive(Debug, Default)]
pub(crate) struct HeaderBlock {
    policy: Option<HeaderValue>,
    state: Option<HeaderValue>,
    retry_after: Option<u64>,
    legacy: Option<(u64, u64, u64)>,
}

/// Text for a header value, on the stack unless it is long.
struct Buf {
    bytes: [u8; 96],
    len: usize,
    spill: Vec<u8>,
}

impl Buf {
    fn new() -> Buf {
        Buf {
            bytes: [0; 96],
            len: 0,
            spill: Vec::new(),
        }
    }

    fn value(&self) -> Option<HeaderValue> {
        let text = if self.spill.is_empty() {
            &self.bytes[..self.len]
        } else {
            &self.spill[..]
        };
        // One allocation, of the exact size. The layer writes visible ASCII only.
        (!text.is_empty())
            .then(|| HeaderValue::from_bytes(text).ok())
            .flatten()
    }
}

impl Buf {
    /// Appends `s` (short: a byte loop beats a call to `memcpy` here).
    #[inline]
    fn push(&mut self, s: &[u8]) {
        if self.spill.is_empty() && self.len + s.len() <= self.bytes.len() {
            for (d, b) in self.bytes[self.len..].iter_mut().zip(s) {
                *d = *b;
            }
            self.len += s.len();
        } else {
            if self.spill.is_empty() {
                self.spill.extend_from_slice(&self.bytes[..self.len]);
            }
            self.spill.extend_from_slice(s);
        }
    }

    /// Appends `n` in decimal.
    #[inline]
    fn push_u64(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }

    /// Appends `, ` unless this is the first item.
    #[inline]
    fn separate(&mut self, first: bool) {
        if !first {
            self.push(b", ");
        }
    }
}

/// `"name";q=…;w=…` for every `(quoted name, quota)`, comma-separated.
fn write_policies<'a>(buf: &mut Buf, items: impl Iterator<Item = (&'a str, hotlimit::Quota)>) {
    for (i, (quoted, q)) in items.enumerate() {
        buf.separate(i == 0);
        buf.push(quoted.as_bytes());
        buf.push(b";q=");
        buf.push_u64(q.limit());
        buf.push(b";w=");
        buf.push_u64(ceil_secs(q.window()).max(1));
    }
}

/// The `RateLimit-Policy` value of a layer's policies, built once: a value from static text,
/// so that every response clones it for free (no allocation, no shared counter). The text is
/// allocated once per layer built and never freed (tens of bytes per policy).
pub(crate) fn policy_field<'a>(
    items: impl Iterator<Item = (&'a str, hotlimit::Quota)>,
) -> HeaderValue {
    let mut buf = Buf::new();
    write_policies(&mut buf, items);
    let text = if buf.spill.is_empty() {
        buf.bytes[..buf.len].to_vec()
    } else {
        buf.spill
    };
    let text: &'static str =
        Box::leak(String::from_utf8(text).unwrap_or_default().into_boxed_str());
    // Policy names are checked printable ASCII; numbers are digits.
    HeaderValue::from_static(text)
}

impl HeaderBlock {
    /// The fields for `decisions` (each with its policy's quoted name); `policy` is the
    /// precomputed `RateLimit-Policy` when it applies; `denied` is the decision that refused,
    /// if any; `legacy` adds `X-RateLimit-*` for the most restrictive policy.
    pub(crate) fn new<'a>(
        decisions: impl Iterator<Item = (&'a str, &'a Decision)> + Clone,
        policy: Option<HeaderValue>,
        denied: Option<&Decision>,
        legacy: bool,
    ) -> HeaderBlock {
        let policy = policy.or_else(|| {
            let mut buf = Buf::new();
            write_policies(&mut buf, decisions.clone().map(|(q, d)| (q, d.quota())));
            buf.value()
        });
        let mut state = Buf::new();
        let mut tightest: Option<(u64, u64, u64)> = None;
        for (i, (quoted, d)) in decisions.enumerate() {
            let mut t = ceil_secs(d.reset());
            if let Some(s) = d.denial().and_then(|x| x.retry_after_secs_ceil()) {
                t = t.max(s);
            }
            state.separate(i == 0);
            state.push(quoted.as_bytes());
            state.push(b";r=");
            state.push_u64(d.remaining());
            state.push(b";t=");
            state.push_u64(t);
            if legacy && tightest.is_none_or(|(_, r, _)| d.remaining() < r) {
                tightest = Some((d.quota().limit(), d.remaining(), t));
            }
        }
        HeaderBlock {
            policy,
            state: state.value(),
            retry_after: denied
                .and_then(Decision::denial)
                .and_then(|d| d.retry_after_secs_ceil()),
            legacy: tightest,
        }
    }

    /// The `Retry-After` seconds, if a denial set one.
    pub(crate) fn retry_after(&self) -> Option<u64> {
        self.retry_after
    }

    /// Adds the fields to `headers`: appended on an admitted response (an inner layer's own
    /// fields stay: these are lists), inserted over anything a rejection handler set.
    pub(crate) fn apply(self, headers: &mut HeaderMap, overwrite: bool) {
        let mut put = |name: &HeaderName, v: HeaderValue| {
            if overwrite {
                headers.insert(name.clone(), v);
            } else {
                headers.append(name.clone(), v);
            }
        };
        if let Some(v) = self.policy {
            put(&RATELIMIT_POLICY, v);
        }
        if let Some(v) = self.state {
            put(&RATELIMIT, v);
        }
        if let Some(s) = self.retry_after {
            headers.insert(RETRY_AFTER, HeaderValue::from(s));
        }
        if let Some((limit, remaining, reset)) = self.legacy {
            headers.insert(X_LIMIT.clone(), HeaderValue::from(limit));
            headers.insert(X_REMAINING.clone(), HeaderValue::from(remaining));
            headers.insert(X_RESET.clone(), HeaderValue::from(reset));
        }
    }
}

/// A JSON string literal.
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The default rejection response (before the layer's headers are added).
pub(crate) fn default_response(r: &Rejection, body: RejectionBody) -> Response<Bytes> {
    if r.grpc {
        let mut resp = Response::new(Bytes::new());
        let h = resp.headers_mut();
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        // 8: RESOURCE_EXHAUSTED; 3: INVALID_ARGUMENT (no key); 14: UNAVAILABLE; 13: INTERNAL.
        let code: u16 = match r.kind {
            RejectionKind::MissingKey => 3,
            RejectionKind::LimiterError => 14,
            RejectionKind::Refused => 13,
            _ => 8,
        };
        h.insert(GRPC_STATUS.clone(), HeaderValue::from(code));
        if let Ok(v) = HeaderValue::from_str(&percent_encode(&r.message())) {
            h.insert(GRPC_MESSAGE.clone(), v);
        }
        return resp;
    }
    let retry = r
        .retry_after
        .map_or_else(|| "null".to_owned(), |s| s.to_string());
    let (content_type, text) = match body {
        RejectionBody::Text => (
            "text/plain; charset=utf-8",
            format!(
                "{}: {}\n",
                r.status.canonical_reason().unwrap_or("Error"),
                r.message()
            ),
        ),
        RejectionBody::Json => (
            "application/json",
            format!(
                "{{\"error\":\"{}\",\"policy\":{},\"retry_after\":{retry},\"message\":{}}}",
                r.kind.code(),
                json_str(&r.policy),
                json_str(&r.message())
            ),
        ),
        RejectionBody::ProblemJson => {
            let quota = matches!(
                r.kind,
                RejectionKind::OverLimit | RejectionKind::NeverGrantable
            );
            let (ty, title) = if quota {
                (
                    QUOTA_EXCEEDED_TYPE,
                    "Request cannot be satisfied as assigned quota has been exceeded",
                )
            } else {
                (
                    "about:blank",
                    r.status.canonical_reason().unwrap_or("Error"),
                )
            };
            (
                "application/problem+json",
                format!(
                    "{{\"type\":{},\"title\":{},\"status\":{},\"detail\":{},\
                     \"violated-policies\":[{}],\"retry_after\":{retry}}}",
                    json_str(ty),
                    json_str(title),
                    r.status.as_u16(),
                    json_str(&r.message()),
                    json_str(&r.policy)
                ),
            )
        }
    };
    let mut resp = Response::new(Bytes::from(text));
    *resp.status_mut() = r.status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// gRPC's percent-encoding of `grpc-message`: bytes outside printable ASCII, and `%`.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_round_up() {
        assert_eq!(ceil_secs(Duration::ZERO), 0);
        assert_eq!(ceil_secs(Duration::from_nanos(1)), 1);
        assert_eq!(ceil_secs(Duration::from_secs(2)), 2);
        assert_eq!(ceil_secs(Duration::from_millis(2001)), 3);
    }

    #[test]
    fn numbers_and_spills_are_written_exactly() {
        let mut b = Buf::new();
        for n in [0, 7, 10, 1_000_000_007, u64::MAX] {
            b.separate(n == 0);
            b.push_u64(n);
        }
        assert_eq!(
            b.value().unwrap(),
            "0, 7, 10, 1000000007, 18446744073709551615"
        );
        let mut long = Buf::new();
        for i in 0..40u64 {
            long.separate(i == 0);
            long.push(b"\"p\";r=");
            long.push_u64(i);
        }
        let v = long.value().unwrap();
        assert!(v.to_str().unwrap().ends_with(r#""p";r=39"#));
        assert_eq!(v.len(), 40 * 7 + 30 + 39 * 2);
    }

    #[test]
    fn json_strings_escape() {
        assert_eq!(json_str(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(json_str("\n"), r#""\u000a""#);
    }

    #[test]
    fn grpc_messages_are_percent_encoded() {
        assert_eq!(percent_encode("50% é"), "50%25 %C3%A9");
    }
}
