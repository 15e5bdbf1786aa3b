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

use crate::erased::{BoxError, ErasedPolicy, Preview, Report, Step};
use crate::key::KeyExtractor;
use crate::keying::{Keying, MissingKey};

/// One named limit: a limiter, what requests are keyed by, what each costs (1 by default) and
/// what happens to requests without a key ([`MissingKey::Reject`] with 400 by default).
///
/// The name appears in the `RateLimit-Policy` and `RateLimit` headers, in bodies and in the
/// counters: printable ASCII, unique within a layer.
///
/// # Examples
///
/// ```
/// use hotlimit::{Keyed, Rate, SlidingLog};
/// use hotlimit_tower::{HeaderKey, Policy};
///
/// // Exactly 100 per minute per API key (a sliding log); uploads cost 10.
/// let per_key = Keyed::<String, SlidingLog>::sliding_log(Rate::per_minute(100)?)
///     .capacity(100_000)
///     .build()?;
/// let policy = Policy::new("per-key", per_key, HeaderKey::new("x-api-key")?)
///     .cost(|parts| if parts.uri.path().starts_with("/upload") { 10 } else { 1 });
/// assert_eq!(policy.name(), "per-key");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Policy<D: Decide, X: KeyExtractor> {
    name: String,
    limiter: D,
    keying: Keying<X>,
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
            keying: Keying::new(key),
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
        self.keying.cost = Some(Arc::new(f));
        self
    }

    /// What to do with a request that has no key (default: [`MissingKey::Reject`] with 400).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Keyed, Rate};
    /// use hotlimit_tower::{HeaderKey, MissingKey, Policy};
    ///
    /// let per_key = Keyed::<String, Gcra>::gcra(Rate::per_second(5)?).build()?;
    /// // Requests without an API key share one limit, under "anonymous".
    /// let p = Policy::new("per-key", per_key, HeaderKey::new("x-api-key")?)
    ///     .on_missing_key(MissingKey::Shared("anonymous".to_owned()));
    /// # let _ = p;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_missing_key(mut self, missing: MissingKey<X::Key>) -> Self {
        self.keying.missing = missing;
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
        self.keying.missing_status()
    }

    fn preview(&self, parts: &Parts, out: &mut [Report]) -> Preview {
        let mut owned = None;
        let key = match self.keying.key_of(parts, &mut owned) {
            Ok(key) => key,
            Err(keyless) => return keyless.preview(out),
        };
        let Some(state) = self.limiter.peek(key.borrow()) else {
            return Preview::Unknown;
        };
        out[0] = Report::Peeked(state);
        if u64::from(self.keying.permits(parts)) <= state.remaining() {
            Preview::Admits
        } else {
            Preview::Refuses
        }
    }

    #[inline]
    fn decide(&self, parts: &Parts, out: &mut [Report]) -> Step {
        let mut owned = None;
        let key = match self.keying.key_of(parts, &mut owned) {
            Ok(key) => key,
            Err(keyless) => return keyless.step(out),
        };
        let mut fut = self
            .limiter
            .decide(key.borrow(), self.keying.permits(parts));
        // In-process limiters answer with a ready future: take the answer now, without
        // boxing. A future polled once with a no-op waker registers the real waker on its
        // next poll, as every future must.
        match Pin::new(&mut fut).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(r) => Step::of(r.map_err(Into::into), &mut out[0]),
            Poll::Pending => Step::Pending(Box::pin(async move { fut.await.map_err(Into::into) })),
        }
    }
}
