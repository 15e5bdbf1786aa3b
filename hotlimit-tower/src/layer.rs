//! [`RateLimitLayer`] and its builder: the configuration, checked once, shared by every service
//! the layer makes.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use bytes::Bytes;
use hotlimit::{Clock, Decide};
use http::{Response, StatusCode};
use tower_layer::Layer;

use crate::counters::PolicyCounts;
use crate::erased::{BoxError, ErasedPolicy};
use crate::evaluator::{Entry, Evaluator, Settings};
use crate::field::Field;
use crate::headers::PolicyText;
use crate::key::KeyExtractor;
use crate::policy::Policy;
use crate::policy_multi::PolicyMulti;
use crate::policy_pair::PolicyPair;
use crate::response::{Rejection, RejectionBody};
use crate::service::RateLimit;
use hotlimit::ConfigError;

/// The builder's setters that store their argument in one field of its `Settings`: each
/// `name(arg: Type) => field;` is `pub fn name(mut self, arg: Type) -> Self`, with its docs.
macro_rules! settings {
    ($($(#[$doc:meta])* $name:ident($arg:ident: $ty:ty) => $field:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(mut self, $arg: $ty) -> Self {
            self.settings.$field = $arg;
            self
        }
    )*};
}

/// A `tower` layer that rate-limits requests under one or more named [`Policy`]s and reports
/// them in the `RateLimit-Policy` / `RateLimit` headers of every response.
///
/// All state (limiters, counters) lives behind one `Arc`: every clone of the layer and every
/// service it makes share it, so a router that clones its services per connection still has
/// one limit (unlike tower's own `RateLimit`).
///
/// # Examples
///
/// ```
/// use hotlimit::Rate;
/// use hotlimit_tower::{PeerIp, RateLimitLayer};
///
/// // 5 requests per second per client IP, bursts of 5.
/// let layer = RateLimitLayer::new(PeerIp::new().policy("per-ip", Rate::per_second(5)?)?)?;
/// // axum: Router::new().route("/", get(handler)).layer(layer), served with
/// // into_make_service_with_connect_info::<SocketAddr>() (PeerIp needs the peer address).
/// # let _ = layer;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct RateLimitLayer {
    evaluator: Arc<Evaluator>,
}

impl fmt::Debug for RateLimitLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitLayer")
            .field("evaluator", &self.evaluator)
            .finish()
    }
}

impl RateLimitLayer {
    /// A layer with one policy and the defaults (429, plain-text bodies, no legacy headers).
    ///
    /// # Errors
    ///
    /// As [`RateLimitLayerBuilder::build`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Rate};
    /// use hotlimit_tower::{Global, Policy, RateLimitLayer};
    ///
    /// let layer = RateLimitLayer::new(Policy::new("global", Gcra::new(Rate::per_second(100)?)?, Global))?;
    /// # let _ = layer;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new<D, X>(policy: Policy<D, X>) -> Result<RateLimitLayer, ConfigError>
    where
        D: Decide + 'static,
        D::Future: Unpin + 'static,
        D::Error: Into<BoxError>,
        X: KeyExtractor,
        X::Key: Borrow<D::Key>,
    {
        RateLimitLayer::builder().policy(policy).build()
    }

    /// A builder: policies, statuses, bodies, headers, dry-run, a rejection handler.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Rate};
    /// use hotlimit_tower::{Global, Policy, RateLimitLayer, RejectionBody};
    /// use http::StatusCode;
    ///
    /// let layer = RateLimitLayer::builder()
    ///     .policy(Policy::new("global", Gcra::new(Rate::per_second(100)?)?, Global))
    ///     .status(StatusCode::SERVICE_UNAVAILABLE)
    ///     .body(RejectionBody::Json)
    ///     .legacy_headers(true)
    ///     .build()?;
    /// # let _ = layer;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder() -> RateLimitLayerBuilder {
        RateLimitLayerBuilder {
            policies: Vec::new(),
            settings: Settings::default(),
        }
    }

    /// What each policy has decided so far, in the layer's order (shared by every clone and
    /// every service the layer made).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Rate};
    /// use hotlimit_tower::{Global, Policy, RateLimitLayer};
    ///
    /// let layer = RateLimitLayer::new(Policy::new("global", Gcra::new(Rate::per_second(100)?)?, Global))?;
    /// let counts = layer.counters();
    /// assert_eq!((counts[0].policy.as_str(), counts[0].allowed), ("global", 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn counters(&self) -> Vec<PolicyCounts> {
        self.evaluator.counters()
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;

    fn layer(&self, inner: S) -> RateLimit<S> {
        RateLimit::new(inner, Arc::clone(&self.evaluator))
    }
}

/// Builds a [`RateLimitLayer`]: see [`RateLimitLayer::builder`]. Every setting is checked in
/// [`build`](RateLimitLayerBuilder::build).
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, Rate};
/// use hotlimit_tower::{Global, Policy, RateLimitLayer};
///
/// let b = RateLimitLayer::builder().policy(Policy::new("g", Gcra::new(Rate::per_second(1)?)?, Global));
/// assert!(b.build().is_ok());
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[must_use = "a builder does nothing until `build()` is called"]
pub struct RateLimitLayerBuilder {
    policies: Vec<Box<dyn ErasedPolicy>>,
    settings: Settings,
}

impl fmt::Debug for RateLimitLayerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitLayerBuilder")
            .field("policies", &self.policies.len())
            .field("status", &self.settings.status)
            .field("body", &self.settings.body)
            .finish_non_exhaustive()
    }
}

impl RateLimitLayerBuilder {
    /// Adds a policy. A request is admitted only if every policy admits it.
    ///
    /// **What a denial by one policy costs the others.** With several policies, each is first
    /// previewed, charging nothing ([`Decide::peek`]): a request that one of them would
    /// refuse is decided by that policy alone (its refusal writes nothing) and **no policy
    /// is charged**; a request rejected for want of a key charges none either. Otherwise they
    /// decide in order, and the first that refuses stops the evaluation: later policies are
    /// not charged, earlier ones keep the permits they granted. That happens only when a
    /// preview was overtaken (another request took the last permits between the preview and
    /// the charge: at most one request's cost per earlier policy, per such race), or behind a
    /// policy that cannot be previewed (a networked limiter, e.g. Redis): put those last.
    /// Two limits on the **same key** (per user 10/s and 1,000/h) are all or nothing under any
    /// interleaving as one [`PolicyPair`] ([`pair`](RateLimitLayerBuilder::pair)). In dry-run
    /// mode there is no preview: every policy decides and is charged.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Rate};
    /// use hotlimit_tower::{Global, PeerIp, Policy, RateLimitLayer};
    ///
    /// let layer = RateLimitLayer::builder()
    ///     .policy(PeerIp::new().policy("per-ip", Rate::per_second(5)?)?)
    ///     .policy(Policy::new("global", Gcra::new(Rate::per_second(1_000)?)?, Global))
    ///     .build()?;
    /// assert_eq!(layer.counters().len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn policy<D, X>(mut self, policy: Policy<D, X>) -> Self
    where
        D: Decide + 'static,
        D::Future: Unpin + 'static,
        D::Error: Into<BoxError>,
        X: KeyExtractor,
        X::Key: Borrow<D::Key>,
    {
        self.policies.push(Box::new(policy));
        self
    }

    /// Adds two limits on one key decided as one, all or nothing (see [`PolicyPair`]): a
    /// request either of them refuses charges neither, under any interleaving.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, Keyed, Rate};
    /// use hotlimit_tower::{HeaderKey, PolicyPair, RateLimitLayer};
    ///
    /// let per_key = Keyed::<String, GcraPair>::gcra_pair(Rate::per_second(10)?, Rate::per_hour(1_000)?)
    ///     .build()?;
    /// let layer = RateLimitLayer::builder()
    ///     .pair(PolicyPair::new("per-second", "per-hour", per_key, HeaderKey::new("x-api-key")?))
    ///     .build()?;
    /// assert_eq!(layer.counters()[1].policy, "per-hour");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pair<K, C, X>(mut self, pair: PolicyPair<K, C, X>) -> Self
    where
        K: Hash + Eq + Clone + Send + Sync + 'static,
        C: Clock + 'static,
        X: KeyExtractor,
        X::Key: Borrow<K>,
    {
        self.policies.push(Box::new(pair));
        self
    }

    /// Adds one policy per hard window of a [`PolicyMulti`]: every window's limit on one key,
    /// all or nothing, one `RateLimit-Policy` item per window.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Keyed, MultiWindow, Rate};
    /// use hotlimit_tower::{HeaderKey, PolicyMulti, RateLimitLayer};
    ///
    /// let windows = MultiWindow::builder().window(Rate::per_minute(100)?).exact(Rate::per_hour(2_000)?);
    /// let per_key = Keyed::<String, MultiWindow>::multi_window(windows).capacity(10_000).build()?;
    /// let layer = RateLimitLayer::builder()
    ///     .multi(PolicyMulti::new(["per-minute", "per-hour"], per_key, HeaderKey::new("x-api-key")?))
    ///     .build()?;
    /// assert_eq!(layer.counters()[1].policy, "per-hour");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn multi<K, C, X>(mut self, multi: PolicyMulti<K, C, X>) -> Self
    where
        K: Hash + Eq + Clone + Send + Sync + 'static,
        C: Clock + 'static,
        X: KeyExtractor,
        X::Key: Borrow<K>,
    {
        self.policies.push(Box::new(multi));
        self
    }

    settings! {
        /// The status of a rejection for being over a limit (default 429 Too Many Requests; 503
        /// Service Unavailable is the other common choice).
        ///
        /// # Examples
        ///
        /// ```
        /// use std::convert::Infallible;
        ///
        /// use hotlimit::{Gcra, Rate};
        /// use hotlimit_tower::{Global, Policy, RateLimitLayer};
        /// use http::{header, Request, Response, StatusCode};
        /// use tower::{service_fn, Layer, ServiceExt};
        ///
        /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
        /// let hello = service_fn(|_: Request<()>| async { Ok::<_, Infallible>(Response::new(String::new())) });
        /// let svc = RateLimitLayer::builder()
        ///     .policy(Policy::new("g", Gcra::new(Rate::per_second(1)?)?, Global))
        ///     .status(StatusCode::SERVICE_UNAVAILABLE)
        ///     .build()?
        ///     .layer(hello);
        /// svc.clone().oneshot(Request::new(())).await?;
        /// // Over the limit: 503 instead of 429.
        /// let rejected = svc.oneshot(Request::new(())).await?;
        /// assert_eq!(rejected.status(), StatusCode::SERVICE_UNAVAILABLE);
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// # })?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        status(status: StatusCode) => status;

        /// The status when a keyed limiter has no room for a new key (its capacity is reached
        /// and too few keys are idle): the client is not over its limit, the server is full
        /// (default 503 Service Unavailable).
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{IntKeyed, Rate};
        /// use hotlimit_tower::{PeerIp, RateLimitLayer};
        /// use http::StatusCode;
        ///
        /// // Room for 10,000 client IPs; when it is full, a new client gets 429 too.
        /// let table = IntKeyed::builder(Rate::per_second(5)?).capacity(10_000);
        /// let policy = PeerIp::new().policy_with("per-ip", table)?;
        /// let layer = RateLimitLayer::builder().policy(policy).table_full_status(StatusCode::TOO_MANY_REQUESTS);
        /// # let _ = layer.build()?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        table_full_status(status: StatusCode) => table_full_status;

        /// The body of a rejection (default: plain text). gRPC requests always get gRPC's
        /// `RESOURCE_EXHAUSTED`.
        ///
        /// # Examples
        ///
        /// ```
        /// use std::convert::Infallible;
        ///
        /// use hotlimit::{Gcra, Rate};
        /// use hotlimit_tower::{Global, Policy, RateLimitLayer, RejectionBody};
        /// use http::{header, Request, Response, StatusCode};
        /// use tower::{service_fn, Layer, ServiceExt};
        ///
        /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
        /// let hello = service_fn(|_: Request<()>| async { Ok::<_, Infallible>(Response::new(String::new())) });
        /// let svc = RateLimitLayer::builder()
        ///     .policy(Policy::new("g", Gcra::new(Rate::per_second(1)?)?, Global))
        ///     .body(RejectionBody::Json)
        ///     .build()?
        ///     .layer(hello);
        /// svc.clone().oneshot(Request::new(())).await?;
        /// let rejected = svc.oneshot(Request::new(())).await?;
        /// assert_eq!(rejected.headers()[header::CONTENT_TYPE], "application/json");
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// # })?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        body(body: RejectionBody) => body;

        /// Also send `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`
        /// (seconds until full again) for the policy with the least remaining (default: off).
        ///
        /// # Examples
        ///
        /// ```
        /// use std::convert::Infallible;
        ///
        /// use hotlimit::{Gcra, Rate};
        /// use hotlimit_tower::{Global, Policy, RateLimitLayer};
        /// use http::{header, Request, Response, StatusCode};
        /// use tower::{service_fn, Layer, ServiceExt};
        ///
        /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
        /// let hello = service_fn(|_: Request<()>| async { Ok::<_, Infallible>(Response::new(String::new())) });
        /// let svc = RateLimitLayer::builder()
        ///     .policy(Policy::new("g", Gcra::new(Rate::per_second(10)?)?, Global))
        ///     .legacy_headers(true)
        ///     .build()?
        ///     .layer(hello);
        /// let ok = svc.oneshot(Request::new(())).await?;
        /// assert_eq!(ok.headers()["x-ratelimit-limit"], "10");
        /// assert_eq!(ok.headers()["x-ratelimit-remaining"], "9");
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// # })?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        legacy_headers(on: bool) => legacy;

        /// Dry-run: decide and count as usual, send the headers, but admit every request; the
        /// decisions are in the request's extensions ([`RateLimitDecision`](crate::RateLimitDecision))
        /// so a handler can log what would have happened (default: off).
        ///
        /// # Examples
        ///
        /// ```
        /// use std::convert::Infallible;
        ///
        /// use hotlimit::{Gcra, Rate};
        /// use hotlimit_tower::{Global, Policy, RateLimitLayer};
        /// use http::{Request, Response, StatusCode};
        /// use tower::{service_fn, Layer, ServiceExt};
        ///
        /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
        /// // One request per second: the second is over the limit, but dry-run lets it through.
        /// let layer = RateLimitLayer::builder()
        ///     .policy(Policy::new("g", Gcra::new(Rate::per_second(1)?)?, Global))
        ///     .dry_run(true)
        ///     .build()?;
        /// let hello = service_fn(|_: Request<()>| async { Ok::<_, Infallible>(Response::new(String::new())) });
        /// let svc = layer.layer(hello);
        /// for _ in 0..2 {
        ///     assert_eq!(svc.clone().oneshot(Request::new(())).await?.status(), StatusCode::OK);
        /// }
        /// let counts = &layer.counters()[0];
        /// assert_eq!((counts.allowed, counts.dry_run_denied), (1, 1));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// # })?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        dry_run(on: bool) => dry_run;

        /// Put the decisions ([`RateLimitDecision`](crate::RateLimitDecision)) in every admitted
        /// request's extensions, outside dry-run mode too (default: off; it costs an allocation
        /// per request).
        ///
        /// # Examples
        ///
        /// ```
        /// use std::convert::Infallible;
        ///
        /// use hotlimit::{Gcra, Rate};
        /// use hotlimit_tower::{Global, Policy, RateLimitDecision, RateLimitLayer};
        /// use http::{Request, Response};
        /// use tower::{service_fn, Layer, ServiceExt};
        ///
        /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
        /// let layer = RateLimitLayer::builder()
        ///     .policy(Policy::new("g", Gcra::new(Rate::per_second(1)?)?, Global))
        ///     .decision_in_extensions(true)
        ///     .build()?;
        /// // The handler sees what the layer decided.
        /// let handler = service_fn(|req: Request<()>| async move {
        ///     let decision = req.extensions().get::<RateLimitDecision>();
        ///     assert!(decision.is_some_and(|d| d.is_allowed() && !d.is_dry_run()));
        ///     Ok::<_, Infallible>(Response::new(String::new()))
        /// });
        /// layer.layer(handler).oneshot(Request::new(())).await?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// # })?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        decision_in_extensions(on: bool) => extensions;

        /// When a limiter fails to decide (a networked backend's error): admit the request
        /// (`true`, fail open) or reject it with 503 (`false`, fail closed: the default).
        ///
        /// # Examples
        ///
        /// ```
        /// use hotlimit::{Gcra, Rate};
        /// use hotlimit_tower::{Global, Policy, RateLimitLayer};
        ///
        /// // A networked limiter is a policy like any other (an in-process one stands in here);
        /// // while its backend is down, admit everyone rather than no one.
        /// let remote = Policy::new("global", Gcra::new(Rate::per_second(1_000)?)?, Global);
        /// let layer = RateLimitLayer::builder().policy(remote).fail_open(true).build()?;
        /// # let _ = layer;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        fail_open(on: bool) => fail_open;
    }

    /// Makes rejection responses with `handler` instead of the default bodies. The layer then
    /// adds its headers (`RateLimit-Policy`, `RateLimit`, `Retry-After`, legacy), replacing
    /// any of the same name, so a handler cannot drop them.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Rate};
    /// use hotlimit_tower::{Global, Policy, RateLimitLayer};
    ///
    /// let layer = RateLimitLayer::builder()
    ///     .policy(Policy::new("g", Gcra::new(Rate::per_second(1)?)?, Global))
    ///     .on_rejection(|r| {
    ///         http::Response::builder()
    ///             .status(r.status())
    ///             .body(format!("<h1>Slow down</h1> ({})", r.policy()).into())
    ///             .unwrap()
    ///     })
    ///     .build()?;
    /// # let _ = layer;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_rejection(
        mut self,
        handler: impl Fn(&Rejection) -> Response<Bytes> + Send + Sync + 'static,
    ) -> Self {
        self.settings.handler = Some(Arc::new(handler));
        self
    }

    /// Checks the configuration and builds the layer.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `policies` (none given), `name` (empty, not printable ASCII, or
    /// used twice), `status` / `table_full_status` / `missing_key` (not a 4xx or 5xx status).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Rate};
    /// use hotlimit_tower::{Global, Policy, RateLimitLayer};
    /// use http::StatusCode;
    ///
    /// let err = RateLimitLayer::builder()
    ///     .policy(Policy::new("g", Gcra::new(Rate::per_second(1)?)?, Global))
    ///     .status(StatusCode::OK)
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.to_string(), "invalid status = 200: must be a 4xx or 5xx status");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<RateLimitLayer, ConfigError> {
        if self.policies.is_empty() {
            return Err(ConfigError::invalid(
                "policies",
                0,
                "at least one policy is needed",
            ));
        }
        let check = |field, s: StatusCode| {
            if s.is_client_error() || s.is_server_error() {
                Ok(())
            } else {
                Err(ConfigError::invalid(
                    field,
                    s.as_u16(),
                    "must be a 4xx or 5xx status",
                ))
            }
        };
        check("status", self.settings.status)?;
        check("table_full_status", self.settings.table_full_status)?;
        let mut seen = HashSet::new();
        let mut fields = Vec::new();
        let mut policies = Vec::with_capacity(self.policies.len());
        for policy in self.policies {
            if let Some(s) = policy.missing_status() {
                check("missing_key", s)?;
            }
            let first = fields.len();
            for (name, quota) in policy.fields() {
                let field = Field::new(name, quota)?;
                if !seen.insert(name.to_owned()) {
                    return Err(ConfigError::invalid(
                        "name",
                        name,
                        "two policies of one layer have this name",
                    ));
                }
                fields.push(field);
            }
            let width = fields.len() - first;
            policies.push(Entry {
                policy,
                first,
                width,
            });
        }
        let policy = PolicyText::new(&fields);
        Ok(RateLimitLayer {
            evaluator: Arc::new(Evaluator {
                policies,
                fields,
                policy,
                settings: self.settings,
            }),
        })
    }
}
