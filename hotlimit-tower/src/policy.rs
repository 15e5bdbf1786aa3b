//! [`Policy`]: one named limit on requests: a limiter (anything that implements
//! [`hotlimit::Decide`]), a key extractor, a cost per request and what to do when a request has
//! no key. [`Peek`] is what lets several policies on one request charge nothing when a later
//! one denies.

use std::borrow::Borrow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use hotlimit::{
    Clock, Decide, Decision, Gcra, IntKey, IntKeyed, Keyed, KeyedRead, ShardedGcra, SlidingLog,
    SlidingWindow,
};
use http::request::Parts;
use http::StatusCode;

use crate::counters::Counters;
use crate::key::KeyExtractor;
use hotlimit::ConfigError;

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

/// A limiter whose decision can be previewed without charging: used so that a request denied
/// by a later policy costs the earlier ones nothing (see [`RateLimitLayerBuilder::policy`]).
///
/// Implemented for every in-process limiter of `hotlimit` (a read of `remaining`, which writes
/// nothing). A networked limiter (Redis) has no free preview: wrap it with
/// [`Policy::from_decide`] instead.
///
/// [`RateLimitLayerBuilder::policy`]: crate::RateLimitLayerBuilder::policy
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, ManualClock, Rate};
/// use hotlimit_tower::Peek;
///
/// let limiter = Gcra::builder(Rate::per_second(2)?).clock(ManualClock::new()).build()?;
/// assert!(limiter.would_admit(&(), 2));
/// assert!(!limiter.would_admit(&(), 3));
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
pub trait Peek: Decide {
    /// Whether a request for `permits` under `key` would be admitted now (a snapshot: another
    /// request may take the permits first). Writes nothing.
    fn would_admit(&self, key: &Self::Key, permits: u32) -> bool;
}

macro_rules! peek_unkeyed {
    ($($t:ident),*) => {$(
        impl<C: Clock> Peek for $t<C> {
            #[inline]
            fn would_admit(&self, _: &(), permits: u32) -> bool {
                u64::from(permits) <= self.remaining()
            }
        }
    )*};
}

peek_unkeyed!(Gcra, ShardedGcra, SlidingLog, SlidingWindow);

impl<K, L, C> Peek for Keyed<K, L, C>
where
    K: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
    L: KeyedRead,
    C: Clock,
{
    #[inline]
    fn would_admit(&self, key: &K, permits: u32) -> bool {
        u64::from(permits) <= self.remaining(key)
    }
}

impl<K: IntKey, C: Clock> Peek for IntKeyed<K, C> {
    #[inline]
    fn would_admit(&self, key: &K, permits: u32) -> bool {
        u64::from(permits) <= self.remaining(*key)
    }
}

impl<P: Peek + ?Sized> Peek for Arc<P> {
    fn would_admit(&self, key: &Self::Key, permits: u32) -> bool {
        (**self).would_admit(key, permits)
    }
}

/// A limiter's preview: [`Peek::would_admit`].
type PeekFn<D> = fn(&D, &<D as Decide>::Key, u32) -> bool;

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
    peek: Option<PeekFn<D>>,
}

impl<D: Decide, X: KeyExtractor> fmt::Debug for Policy<D, X> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("name", &self.name)
            .field("quota", &self.limiter.quota())
            .field("peek", &self.peek.is_some())
            .finish_non_exhaustive()
    }
}

impl<D: Peek, X: KeyExtractor> Policy<D, X>
where
    X::Key: Borrow<D::Key>,
{
    /// A policy over an in-process limiter (any `hotlimit` limiter: [`Gcra`], [`Keyed`],
    /// [`IntKeyed`], ...), keyed by `key`. Its decisions can be previewed ([`Peek`]), so a
    /// request that a later policy denies is not charged here.
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
        let mut p = Policy::from_decide(name, limiter, key);
        p.peek = Some(<D as Peek>::would_admit);
        p
    }
}

impl<D: Decide, X: KeyExtractor> Policy<D, X>
where
    X::Key: Borrow<D::Key>,
{
    /// A policy over any [`Decide`] (a networked limiter such as `hotlimit-redis`'s, or your
    /// own). It cannot be previewed: if a later policy on the same request denies, the
    /// permits this one granted stay spent (see
    /// [`RateLimitLayerBuilder::policy`](crate::RateLimitLayerBuilder::policy)); put such
    /// policies last.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Rate};
    /// use hotlimit_tower::{Global, Policy};
    ///
    /// let p = Policy::from_decide("global", Gcra::new(Rate::per_second(10)?)?, Global);
    /// # let _ = p;
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn from_decide(name: impl Into<String>, limiter: D, key: X) -> Self {
        Policy {
            name: name.into(),
            limiter,
            key,
            cost: None,
            missing: MissingKey::Reject(StatusCode::BAD_REQUEST),
            peek: None,
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

/// A decision future from any limiter, boxed once it turned out not to be ready at once.
pub(crate) type DecisionFuture = Pin<Box<dyn Future<Output = Result<Decision, BoxError>> + Send>>;

/// One policy's answer for one request.
pub(crate) enum Step {
    /// The request has no key: let it through (no decision).
    Skip,
    /// The request has no key: answer with this status.
    Reject(StatusCode),
    /// Decided at once (every in-process limiter).
    Ready(Result<Decision, BoxError>),
    /// Still deciding (a networked limiter).
    Pending(DecisionFuture),
}

/// A policy with its types erased, so that one layer holds policies over different limiters.
pub(crate) trait ErasedPolicy: Send + Sync + 'static {
    fn name(&self) -> &str;
    /// `Some(false)` when the request would be denied now; `None` when this policy cannot
    /// preview (or the request has no key).
    fn peek(&self, parts: &Parts) -> Option<bool>;
    fn decide(&self, parts: &Parts) -> Step;
    /// The status keyless requests are rejected with, if they are.
    fn missing_status(&self) -> Option<StatusCode>;
    /// The limiter's quota.
    fn quota(&self) -> hotlimit::Quota;
}

impl<D, X> Policy<D, X>
where
    D: Decide,
    X: KeyExtractor,
{
    /// The request's key (or the shared one), or what to do without one.
    #[inline]
    fn key_of<'a>(
        &'a self,
        parts: &Parts,
        owned: &'a mut Option<X::Key>,
    ) -> Result<&'a X::Key, Step> {
        if let Some(k) = self.key.extract(parts) {
            return Ok(owned.insert(k));
        }
        match &self.missing {
            MissingKey::Allow => Err(Step::Skip),
            MissingKey::Reject(status) => Err(Step::Reject(*status)),
            MissingKey::Shared(k) => Ok(k),
        }
    }

    #[inline]
    fn permits(&self, parts: &Parts) -> u32 {
        self.cost.as_ref().map_or(1, |f| f(parts))
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
    fn name(&self) -> &str {
        &self.name
    }

    fn quota(&self) -> hotlimit::Quota {
        self.limiter.quota()
    }

    fn missing_status(&self) -> Option<StatusCode> {
        match self.missing {
            MissingKey::Reject(status) => Some(status),
            _ => None,
        }
    }

    fn peek(&self, parts: &Parts) -> Option<bool> {
        let peek = self.peek?;
        let mut owned = None;
        let key = self.key_of(parts, &mut owned).ok()?;
        Some(peek(&self.limiter, key.borrow(), self.permits(parts)))
    }

    #[inline]
    fn decide(&self, parts: &Parts) -> Step {
        let mut owned = None;
        let key = match self.key_of(parts, &mut owned) {
            Ok(key) => key,
            Err(step) => return step,
        };
        let mut fut = self.limiter.decide(key.borrow(), self.permits(parts));
        // In-process limiters answer with a ready future: take the answer now, without
        // boxing. A future polled once with a no-op waker registers the real waker on its
        // next poll, as every future must.
        match Pin::new(&mut fut).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(r) => Step::Ready(r.map_err(Into::into)),
            Poll::Pending => Step::Pending(Box::pin(async move { fut.await.map_err(Into::into) })),
        }
    }
}

/// A policy as the layer keeps it: erased, with its header name and counters.
pub(crate) struct Entry {
    pub(crate) policy: Box<dyn ErasedPolicy>,
    /// The name as a structured-field string, quotes included.
    pub(crate) quoted: String,
    /// The limiter's quota when the layer was built.
    pub(crate) quota: hotlimit::Quota,
    pub(crate) counters: Counters,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.policy.name())
            .finish_non_exhaustive()
    }
}

/// Checks a policy name and quotes it as a structured-field string.
pub(crate) fn quote_name(name: &str) -> Result<String, ConfigError> {
    if name.is_empty() {
        return Err(ConfigError::invalid("name", name, "a policy needs a name"));
    }
    if !name.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
        return Err(ConfigError::invalid(
            "name",
            name,
            "must be printable ASCII (it is sent in the RateLimit headers)",
        ));
    }
    let mut q = String::with_capacity(name.len() + 2);
    q.push('"');
    for c in name.chars() {
        if c == '"' || c == '\\' {
            q.push('\\');
        }
        q.push(c);
    }
    q.push('"');
    Ok(q)
}
