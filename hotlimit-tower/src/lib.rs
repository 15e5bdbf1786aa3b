//! Rate limiting for `tower` servers (axum, tonic, hyper) with
//! [hotlimit](https://docs.rs/hotlimit)'s lock-free limiters, and the rate-limit headers done
//! right.
//!
//! A [`RateLimitLayer`] holds one or more named [`Policy`]s: a limiter (any `hotlimit`
//! limiter, or anything that implements [`hotlimit::Decide`], such as a Redis backend), a
//! [`KeyExtractor`] (client IP, forwarded IP, header, bearer token, route, global, pairs, your
//! own closure) and a cost per request. Every response, admitted or not, carries the fields of
//! [draft-ietf-httpapi-ratelimit-headers-11](https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/11/)
//! (the `RateLimit-Policy` and `RateLimit` structured-field lists; the policy names as
//! sf-strings; no `pk` partition key, which would echo the client's own key back to it):
//!
//! ```text
//! RateLimit-Policy: "per-ip";q=20;w=2
//! RateLimit: "per-ip";r=19;t=1
//! ```
//!
//! **What the numbers mean**, so that a client that follows the draft is never misled:
//!
//! - `q` per `w` is what a client may spend from full: for a GCRA (10 per second, burst 20)
//!   the **burst** `q=20` per the time it takes to refill, `w=2`; for a sliding log `limit`
//!   per `period`; for a sliding window `limit` per `period` plus one bucket (a grant counts
//!   until its bucket leaves the window). `w` is whole seconds, rounded up, at least 1.
//! - `r` is the available quota now, never above `q` (it grows again as the limiter
//!   refills: no quota here is reset at fixed times).
//! - `t` is the effective window (draft-11; draft-10 said "until additional quota is made
//!   available", -09 "until the quota resets"): the seconds within which the client can use
//!   no more than `r`, which is the time until one more unit is available. Rounded up (the
//!   draft's seconds are whole: a client that keeps to `r` within `t` is never refused for
//!   it) and never above `w`: exact for the GCRA limiters, for windows and logs the time
//!   until full again (a bound), or the refused request's wait if sooner. At `r` = `q`
//!   (nothing spent), `t` is the time one unit takes to come back once spent, `w`/`q`
//!   rounded up. On a refusal `Retry-After` (whole seconds, rounded **up**, never 0) is never
//!   earlier than the end of the refusing policy's effective window, as the draft asks.
//! - **Every response names every policy that applies to it**, whatever ended the request:
//!   a policy that decided reports its decision; one that did not (another refused first, or
//!   the request was rejected for a missing key) reports its state for the request's key,
//!   uncharged; a keyless request a policy rejects reports `r=0` under it; a policy that lets
//!   keyless requests through ([`MissingKey::Allow`]) does not apply to them and is not in
//!   `RateLimit`; a networked limiter that was not asked, or that failed while the layer
//!   fails open, reports nothing (one that failed while it fails closed: `r=0`).
//!   `RateLimit-Policy` lists every policy of the layer on every response.
//!
//! A rejection is 429 (configurable) with `Retry-After`, a plain-text, JSON or
//! `application/problem+json` body, and for gRPC requests (HTTP/2 with a gRPC content type,
//! nothing else: no HTTP/1.1 client can turn a refusal into a `200`) `grpc-status: 8`
//! (`RESOURCE_EXHAUSTED`) with the same metadata.
//!
//! | what | how |
//! |---|---|
//! | shared state | one `Arc`: every clone of the layer and of its services is one limit |
//! | `poll_ready` | the inner service's; a rejection is a ready response, never a wait |
//! | several policies | admitted only if all admit; in-process limiters are previewed first, so a refusal charges no policy |
//! | dry-run | decide, count, send headers, admit; the decisions in the request's extensions |
//! | counters | per policy ([`RateLimitLayer::counters`]); `metrics` feature: `hotlimit_tower_decisions_total` |
//! | bad configuration | a [`ConfigError`] from `build()`, never a panic at request time |
//!
//! # Examples
//!
//! ```
//! use hotlimit::{Gcra, Keyed, ManualClock, Rate};
//! use hotlimit_tower::{Policy, RateLimitLayer, HeaderKey};
//! use tower::{service_fn, Layer, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let per_key: Keyed<String, Gcra, ManualClock> =
//!     Keyed::gcra(Rate::per_second(2)?).clock(ManualClock::new()).build()?;
//! let layer = RateLimitLayer::new(Policy::new("per-key", per_key, HeaderKey::new("x-api-key")?))?;
//! let svc = layer.layer(service_fn(|_: http::Request<String>| async {
//!     Ok::<_, std::convert::Infallible>(http::Response::new(String::from("ok")))
//! }));
//! let req = || http::Request::get("/").header("x-api-key", "k1").body(String::new()).unwrap();
//! for r in [1, 0] {
//!     let resp = svc.clone().oneshot(req()).await?;
//!     assert_eq!(resp.headers()["ratelimit-policy"], r#""per-key";q=2;w=1"#);
//!     // One more permit every 500 ms: t=1.
//!     assert_eq!(resp.headers()["ratelimit"], format!(r#""per-key";r={r};t=1"#).as_str());
//! }
//! let denied = svc.oneshot(req()).await?;
//! assert_eq!(denied.status(), 429);
//! assert_eq!(denied.headers()["retry-after"], "1");
//! # Ok(()) }
//! ```
//!
//! # Features
//!
//! - `axum` (default): [`PeerIp`] reads axum's `ConnectInfo` / `MockConnectInfo`, [`Route`] its
//!   `MatchedPath`.
//! - `tonic`: [`PeerIp`] reads tonic's `TcpConnectInfo`.
//! - `metrics`: the counters are also exported through the `metrics` facade (install the
//!   recorder before building the layer).

#![forbid(unsafe_code)]

mod arena;
mod body;
mod buf;
mod counters;
mod digest;
mod erased;
mod evaluator;
mod field;
mod field_text;
mod headers;
mod ip;
mod key;
mod keying;
mod layer;
mod policy;
mod policy_multi;
mod policy_pair;
mod response;
mod service;

pub mod migrating {
    #![doc = include_str!("migrating.md")]
}

pub use body::ResponseBody;
pub use counters::PolicyCounts;
#[cfg(feature = "metrics")]
pub use counters::METRIC_NAME;
pub use digest::MAX_KEY_LEN;
pub use erased::BoxError;
/// A layer, policy or key extractor configured with a value that cannot work: the core's
/// [`hotlimit::ConfigError`], so that one error type covers the rates, the limiters and the
/// layer. Reported when the layer is built, never at request time.
///
/// # Examples
///
/// ```
/// use hotlimit_tower::ForwardedIp;
///
/// let err = ForwardedIp::trusted_proxies(["10.0.0.0/33"]).unwrap_err();
/// assert_eq!(err.field(), "trusted_proxies");
/// assert_eq!(
///     err.to_string(),
///     "invalid trusted_proxies = \"10.0.0.0/33\": the prefix length must be at most 32 for IPv4"
/// );
/// ```
pub use hotlimit::ConfigError;
pub use ip::{ForwardedIp, PeerIp, DEFAULT_IPV6_PREFIX, DEFAULT_NAT64_PREFIX};
pub use key::{
    key_fn, Bearer, Extracted, FnKey, Global, HeaderKey, KeyExtractor, Pair, Refusal, Route,
};
pub use keying::MissingKey;
pub use layer::{RateLimitLayer, RateLimitLayerBuilder};
pub use policy::Policy;
pub use policy_multi::PolicyMulti;
pub use policy_pair::{PairTable, PolicyPair};
pub use response::{
    RateLimitDecision, Rejection, RejectionBody, RejectionKind, QUOTA_EXCEEDED_TYPE,
};
pub use service::{RateLimit, ResponseFuture};

/// The README's examples, compiled (and, where they need no server, run) as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
