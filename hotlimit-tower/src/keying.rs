//! [`Keying`]: how a policy keys a request: the key extractor, the cost per request and what
//! to do without a key ([`MissingKey`]); shared by [`Policy`](crate::Policy) and
//! [`PolicyPair`](crate::PolicyPair).

use std::fmt;
use std::sync::Arc;

use http::request::Parts;
use http::StatusCode;

use crate::erased::{Preview, Report, Step};
use crate::key::{Extracted, KeyExtractor, Refusal};

/// What to do with a request whose key extractor finds no key (no API-key header, an empty
/// one, no bearer token: [`Extracted::Missing`]).
///
/// A request without a peer address is not keyless: an IP extractor refuses it
/// ([`Extracted::Refused`]), and the layer answers 500 whatever this choice says (a keyless
/// fallback would hide the misconfigured server). A key the client sent is a key, whatever
/// its bytes (a tab, obs-text, a `Bearer<TAB>token`): [`HeaderKey`](crate::HeaderKey) and
/// [`Bearer`](crate::Bearer) digest such keys rather than call them missing.
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
    /// Answer with this status, without calling the limiter and charging no policy of the
    /// layer. The response carries the rate-limit fields: `RateLimit-Policy` lists every
    /// policy, and `RateLimit` reports this one with nothing remaining (`r=0`, no `t`: the
    /// request has no quota under it) beside the others' uncharged states.
    Reject(StatusCode),
    /// Let the request through unlimited by this policy.
    Allow,
    /// Count every keyless request under this one key: a shared limit for them all.
    Shared(K),
}

/// The cost of a request under a policy, from its head.
pub(crate) type CostFn = dyn Fn(&Parts) -> u32 + Send + Sync;

/// A policy's key extractor, cost per request and missing-key choice.
pub(crate) struct Keying<X: KeyExtractor> {
    key: X,
    pub(crate) cost: Option<Arc<CostFn>>,
    pub(crate) missing: MissingKey<X::Key>,
}

impl<X: KeyExtractor> fmt::Debug for Keying<X> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keying")
            .field("cost", &self.cost.is_some())
            .finish_non_exhaustive()
    }
}

impl<X: KeyExtractor> Keying<X> {
    /// Keyed by `key`, each request costing 1, keyless requests rejected with 400.
    pub(crate) fn new(key: X) -> Keying<X> {
        Keying {
            key,
            cost: None,
            missing: MissingKey::Reject(StatusCode::BAD_REQUEST),
        }
    }

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
