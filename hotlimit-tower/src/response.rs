//! What the layer answers with besides the headers (`headers.rs`): rejection bodies (text,
//! JSON, `application/problem+json`, gRPC `RESOURCE_EXHAUSTED`), the [`Rejection`] a custom
//! handler sees, and the decision a handler can read from the request's extensions.

use std::fmt::Write as _;

use bytes::Bytes;
use hotlimit::{Decision, DenialReason};
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use http::{Response, StatusCode};

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
            (RejectionKind::TableFull, None) => {
                format!("the \"{name}\" rate limiter has no room for new clients; retry later")
            }
            (RejectionKind::MissingKey, _) => {
                format!("the request has no key for the \"{name}\" rate limit")
            }
            (RejectionKind::LimiterError, _) => {
                format!("the \"{name}\" rate limiter could not decide")
            }
            // The reason is also logged (`tracing`), but a server without a subscriber logs
            // nowhere: the body names the fix, which tells a client nothing about anyone.
            (RejectionKind::Refused, _) => format!(
                "the server cannot identify the client for the \"{name}\" rate limit: it \
                 has no peer address (serve with \
                 into_make_service_with_connect_info::<SocketAddr>() in axum, or put the \
                 connection's SocketAddr in the request's extensions)"
            ),
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
    fn json_strings_escape() {
        assert_eq!(json_str(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(json_str("\n"), r#""\u000a""#);
    }

    #[test]
    fn grpc_messages_are_percent_encoded() {
        assert_eq!(percent_encode("50% é"), "50%25 %C3%A9");
    }
}
