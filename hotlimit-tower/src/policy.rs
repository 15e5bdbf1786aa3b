//! [`Policy`]: one named limit on requests: a limiter (anything that implements
//! [`hotlimit::Decide`]), a key extractor, a cost per request and what to do when a request has
//! no key; and how it answers the evaluator ([`ErasedPolicy`]).

use std::borrow::Borrow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use hotlimit::{Decide, Quota};
use http::request::Parts;
use http::StatusCode;

use crate::erased::{ErasedPolicy, Preview, Report, Step};
use crate::key::{Extracted, KeyExtractor, Refusal};

/// A boxed error from a policy's limiter (a networked backend that failed).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What to do with a request whose key extractor finds no key (no peer address, no API-key
/// header, no bearer token).
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, Keyed, Rate};
/// use hotlimit_tower::{Bearer, MissingKey, Policy};
/// use http::StatusCode;
///
/// let per_token = Keyed::<String, Gcra>::gcra(Rate::per_second(10)?).build()?;
/// // No token: 401, without touching the limiter.
/// let policy = Policy::new("per-token", per_token, Bearer)
///     .on_missing_key(MissingKey::Reject(StatusCode::UNAUTHORIZED));
/// # let _ = policy;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MissingKey<K> {
    /// Answer with this status (no rate-limit headers for this policy, no limiter call).
    Reject(StatusCode),
    /// Let the request through unlimited by this policy.
    Allow,
    /// Count every keyless request under this one key: a shared limit for them all.
    Shared(K),
}

/// The cost of a request under a policy, from its head.
type CostFn = dyn Fn(&Parts) -> u32 + Send + Sync;

/// One named limit: a limiter, what requests are keyed by, what each costs (1 by default) and
/// what happens to requests without a key ([`MissingKey::Reject`] with 400 by default).
///
/// The name appears in the `RateLimit-Policy` and `RateLimit` headers, in bodies and in the
/// counters: printable ASCII, unique within a layer.
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, Keyed, Rate};
/// use hotlimit_tower::{PeerIp, Policy};
/// use std::net::IpAddr;
///
/// // 5 per second per client IP, burst 5; uploads cost 10.
/// let per_ip = Keyed::<IpAddr, Gcra>::gcra(Rate::per_second(5)?).capacity(100_000).build()?;
/// let policy = Policy::new("per-ip", per_ip, PeerIp::new())
///     .cost(|parts| if parts.uri.path().starts_with("/upload") { 10 } else { 1 });
/// assert_eq!(policy.name(), "per-ip");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Policy<D: Decide, X: KeyExtractor> {
    name: String,
    limiter: D,
    key: X,
    cost: Option<Arc<CostFn>>,
    missing: MissingKey<X::Key>,
}

impl<D: Decide, X: KeyExtractor> fmt::Debug for Policy<D, X> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("name", &self.name)
            .field("quota", &self.limiter.quota())
            .finish_non_exhaustive()
    }
}

impl<D: Decide, X: KeyExtractor> Policy<D, X>
where
    X::Key: Borrow<D::Key>,
{
    /// A policy over `limiter` (any `hotlimit` limiter: [`Gcra`](hotlimit::Gcra),
    /// [`Keyed`](hotlimit::Keyed), [`IntKeyed`](hotlimit::IntKeyed), ..., or any other
    /// [`Decide`], such as a networked one), keyed by `key`.
    ///
    /// With several policies on a layer, a limiter that can preview a request for free
    /// ([`Decide::peek`]: every in-process one) is asked first, so that a request another
    /// policy refuses is not charged here; a networked one cannot be previewed: if a later
    /// policy refuses, the permits it granted stay spent (see
    /// [`RateLimitLayerBuilder::policy`](crate::RateLimitLayerBuilder::policy)); put such
    /// policies last.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Rate};
    /// use hotlimit_tower::{Global, Policy};
    ///
    /// let global = Policy::new("global", Gcra::new(Rate::per_second(1_000)?)?, Global);
    /// # let _ = global;
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn new(name: impl Into<String>, limiter: D, key: X) -> Self {
        Policy {
            name: name.into(),
            limiter,
            key,
            cost: None,
            missing: MissingKey::Reject(StatusCode::BAD_REQUEST),
        }
    }

    /// Each request costs `f(parts)` permits instead of 1 (0 passes without charging; more
    /// than the limiter can ever grant is denied with no `Retry-After`).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Rate};
    /// use hotlimit_tower::{Global, Policy};
    ///
    /// let p = Policy::new("bytes", Gcra::new(Rate::per_second(1_000_000)?)?, Global).cost(|parts| {
    ///     parts.headers.get("content-length")
    ///         .and_then(|v| v.to_str().ok()?.parse::<u32>().ok())
    ///         .unwrap_or(1)
    /// });
    /// # let _ = p;
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn cost(mut self, f: impl Fn(&Parts) -> u32 + Send + Sync + 'static) -> Self {
        self.cost = Some(Arc::new(f));
        self
    }

    /// What to do with a request that has no key (default: [`MissingKey::Reject`] with 400).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, Rate};
    /// use hotlimit_tower::{MissingKey, PeerIp, Policy};
    /// use std::net::{IpAddr, Ipv4Addr};
    ///
    /// let per_ip = Keyed::<IpAddr, Gcra>::gcra(Rate::per_second(5)?).build()?;
    /// // Requests with no known peer share one limit, under 0.0.0.0.
    /// let p = Policy::new("per-ip", per_ip, PeerIp::new())
    ///     .on_missing_key(MissingKey::Shared(IpAddr::V4(Ipv4Addr::UNSPECIFIED)));
    /// # let _ = p;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_missing_key(mut self, missing: MissingKey<X::Key>) -> Self {
        self.missing = missing;
        self
    }

    /// The policy's name.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Rate};
    /// use hotlimit_tower::{Global, Policy};
    ///
    /// let p = Policy::new("global", Gcra::new(Rate::per_second(10)?)?, Global);
    /// assert_eq!(p.name(), "global");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The limiter.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Rate};
    /// use hotlimit_tower::{Global, Policy};
    ///
    /// let p = Policy::new("global", Gcra::new(Rate::per_second(10)?)?, Global);
    /// assert_eq!(p.limiter().burst(), 10);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn limiter(&self) -> &D {
        &self.limiter
    }
}

impl<D, X> Policy<D, X>
where
    D: Decide,
    X: KeyExtractor,
{
    /// The request's key (or the shared one), or what to do without one.
    #[inline]
    pub(crate) fn key_of<'a>(
        &'a self,
        parts: &Parts,
        owned: &'a mut Option<X::Key>,
    ) -> Result<&'a X::Key, Keyless> {
        match self.key.extract_key(parts) {
            Extracted::Key(k) => return Ok(owned.insert(k)),
            Extracted::Refused(r) => return Err(Keyless::Refused(r)),
            Extracted::Missing => {}
        }
        match &self.missing {
            MissingKey::Allow => Err(Keyless::Skip),
            MissingKey::Reject(status) => Err(Keyless::Reject(*status)),
            MissingKey::Shared(k) => Ok(k),
        }
    }

    /// The permits a request costs.
    #[inline]
    pub(crate) fn permits(&self, parts: &Parts) -> u32 {
        self.cost.as_ref().map_or(1, |f| f(parts))
    }

    /// The status keyless requests are rejected with, if they are.
    pub(crate) fn missing_status(&self) -> Option<StatusCode> {
        match self.missing {
            MissingKey::Reject(status) => Some(status),
            _ => None,
        }
    }
}

/// Why a request has no key under a policy, and what follows.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Keyless {
    /// Let it through.
    Skip,
    /// Reject it with this status.
    Reject(StatusCode),
    /// The extractor refused to choose a key.
    Refused(Refusal),
}

impl Keyless {
    /// As a preview (the field reports the missing key).
    pub(crate) fn preview(self, out: &mut [Report]) -> Preview {
        match self {
            Keyless::Skip => Preview::Skip,
            Keyless::Reject(s) => {
                out.fill(Report::Keyless);
                Preview::Reject(s)
            }
            Keyless::Refused(r) => {
                out.fill(Report::Keyless);
                Preview::Refused(r)
            }
        }
    }

    /// As a step (the field reports the missing key).
    pub(crate) fn step(self, out: &mut [Report]) -> Step {
        match self {
            Keyless::Skip => Step::Skip,
            Keyless::Reject(s) => {
                out.fill(Report::Keyless);
                Step::Reject(s)
            }
            Keyless::Refused(r) => {
                out.fill(Report::Keyless);
                Step::Refused(r)
            }
        }
    }
}

impl<D, X> ErasedPolicy for Policy<D, X>
where
    D: Decide + 'static,
    D::Future: Unpin + 'static,
    D::Error: Into<BoxError>,
    X: KeyExtractor,
    X::Key: Borrow<D::Key>,
{
    fn fields(&self) -> Vec<(&str, Quota)> {
        vec![(&self.name, self.limiter.quota())]
    }

    fn missing_status(&self) -> Option<StatusCode> {
        Policy::missing_status(self)
    }

    fn preview(&self, parts: &Parts, out: &mut [Report]) -> Preview {
        let mut owned = None;
        let key = match self.key_of(parts, &mut owned) {
            Ok(key) => key,
            Err(keyless) => return keyless.preview(out),
        };
        let Some(state) = self.limiter.peek(key.borrow()) else {
            return Preview::Unknown;
        };
        out[0] = Report::Peeked(state);
        if u64::from(self.permits(parts)) <= state.remaining() {
            Preview::Admits
        } else {
            Preview::Refuses
        }
    }

    #[inline]
    fn decide(&self, parts: &Parts, out: &mut [Report]) -> Step {
        let mut owned = None;
        let key = match self.key_of(parts, &mut owned) {
            Ok(key) => key,
            Err(keyless) => return keyless.step(out),
        };
        let mut fut = self.limiter.decide(key.borrow(), self.permits(parts));
        // In-process limiters answer with a ready future: take the answer now, without
        // boxing. A future polled once with a no-op waker registers the real waker on its
        // next poll, as every future must.
        match Pin::new(&mut fut).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(r) => Step::of(r.map_err(Into::into), &mut out[0]),
            Poll::Pending => Step::Pending(Box::pin(async move { fut.await.map_err(Into::into) })),
        }
    }
}
