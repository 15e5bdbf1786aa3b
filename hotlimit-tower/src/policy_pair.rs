//! [`PolicyPair`]: two limits on one key ("per user 10 per second AND 1,000 per hour") decided
//! as one, all or nothing, by one [`GcraPair`] state per key.

use std::borrow::Borrow;
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use hotlimit::{Clock, GcraPair, Keyed, Quota};
use http::request::Parts;
use http::StatusCode;

use crate::erased::{ErasedPolicy, Preview, Report, Step};
use crate::key::KeyExtractor;
use crate::keying::{Keying, MissingKey};

/// Two named limits on one key, decided together: a request is admitted only if both have
/// room, and then both are charged, with **one** 16-byte atomic word per key
/// ([`Keyed::gcra_pair`](hotlimit::Keyed::gcra_pair)). A request that either refuses charges
/// neither, under any interleaving of concurrent requests (two separate [`Policy`]s on the
/// same key are previewed, then charged one after the other: between the two, another request
/// can take the second's last permit, and the first keeps a permit for a refused request).
///
/// Both names appear in the headers as two policies (`"per-second";q=10;w=1,
/// "per-hour";q=1000;w=3600`), each with its own remaining and time; a refusal names the rate
/// that refused, and reports the other uncharged.
///
/// [`Policy`]: crate::Policy
///
/// # Examples
///
/// ```
/// use hotlimit::{GcraPair, Keyed, Rate};
/// use hotlimit_tower::{Bearer, PolicyPair, RateLimitLayer};
///
/// // Per token: 10 per second AND 1,000 per hour, all or nothing.
/// let per_token = Keyed::<String, GcraPair>::gcra_pair(Rate::per_second(10)?, Rate::per_hour(1_000)?)
///     .build()?;
/// let layer = RateLimitLayer::builder()
///     .pair(PolicyPair::new("per-second", "per-hour", per_token, Bearer))
///     .build()?;
/// assert_eq!(layer.counters().len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PolicyPair<K, C, X: KeyExtractor> {
    names: [String; 2],
    limiter: Arc<Keyed<K, GcraPair, C>>,
    keying: Keying<X>,
}

/// The table a [`PolicyPair`] decides on: a two-rate [`Keyed`] (`Keyed<K, GcraPair, C>`, from
/// [`Keyed::gcra_pair`](hotlimit::Keyed::gcra_pair)), or an `Arc` of one that you keep (to
/// read it, or change its rates at run time). A one-rate table (`Keyed<K, Gcra, C>`) is not
/// one: give it to [`Policy::new`](crate::Policy::new) instead, and the compiler says so.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use hotlimit::{GcraPair, Keyed, Rate};
/// use hotlimit_tower::{Bearer, PolicyPair};
///
/// let table = Arc::new(Keyed::<String, GcraPair>::gcra_pair(Rate::per_second(10)?, Rate::per_hour(1_000)?).build()?);
/// let pair = PolicyPair::new("s", "h", table.clone(), Bearer);
/// # let _ = pair;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a PolicyPair needs a two-rate table, `Keyed<_, GcraPair, _>`, not `{Self}`",
    label = "not a `Keyed::gcra_pair(first, second)` table",
    note = "build the table with `Keyed::gcra_pair(first_rate, second_rate)`; for one rate, use `Policy::new(name, table, key)`"
)]
pub trait PairTable<K, C>: sealed::Sealed {
    /// The table, shared.
    #[doc(hidden)]
    fn into_arc(self) -> Arc<Keyed<K, GcraPair, C>>;
}

mod sealed {
    pub trait Sealed {}
}

impl<K, C> sealed::Sealed for Keyed<K, GcraPair, C> {}
impl<K, C> sealed::Sealed for Arc<Keyed<K, GcraPair, C>> {}

impl<K, C> PairTable<K, C> for Keyed<K, GcraPair, C> {
    fn into_arc(self) -> Arc<Keyed<K, GcraPair, C>> {
        Arc::new(self)
    }
}

impl<K, C> PairTable<K, C> for Arc<Keyed<K, GcraPair, C>> {
    fn into_arc(self) -> Arc<Keyed<K, GcraPair, C>> {
        self
    }
}

impl<K, C, X: KeyExtractor> fmt::Debug for PolicyPair<K, C, X> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyPair")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

impl<K, C, X> PolicyPair<K, C, X>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Clock + 'static,
    X: KeyExtractor,
    X::Key: Borrow<K>,
{
    /// The pair of policies `first` (the limiter's first rate) and `second` (its second), over
    /// `limiter` (the `Keyed` itself, or an `Arc` of it that you keep to read it), keyed by
    /// `key`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, Keyed, Rate};
    /// use hotlimit_tower::{HeaderKey, PolicyPair};
    ///
    /// let per_key = Keyed::<String, GcraPair>::gcra_pair(Rate::per_second(5)?, Rate::per_minute(100)?)
    ///     .first_burst(10)
    ///     .build()?;
    /// let pair = PolicyPair::new("burst", "minute", per_key, HeaderKey::new("x-api-key")?);
    /// assert_eq!(pair.names(), ["burst", "minute"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(
        first: impl Into<String>,
        second: impl Into<String>,
        limiter: impl PairTable<K, C>,
        key: X,
    ) -> Self {
        PolicyPair {
            names: [first.into(), second.into()],
            limiter: limiter.into_arc(),
            keying: Keying::new(key),
        }
    }

    /// Each request costs `f(parts)` permits on both rates instead of 1 (see
    /// [`Policy::cost`](crate::Policy::cost)).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, Keyed, Rate};
    /// use hotlimit_tower::{Bearer, PolicyPair};
    ///
    /// let per_token = Keyed::<String, GcraPair>::gcra_pair(Rate::per_second(10)?, Rate::per_hour(1_000)?)
    ///     .build()?;
    /// let pair = PolicyPair::new("s", "h", per_token, Bearer)
    ///     .cost(|parts| if parts.method == http::Method::POST { 5 } else { 1 });
    /// # let _ = pair;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
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
    /// use hotlimit::{GcraPair, Keyed, Rate};
    /// use hotlimit_tower::{Bearer, MissingKey, PolicyPair};
    /// use http::StatusCode;
    ///
    /// let per_token = Keyed::<String, GcraPair>::gcra_pair(Rate::per_second(10)?, Rate::per_hour(1_000)?)
    ///     .build()?;
    /// let pair = PolicyPair::new("s", "h", per_token, Bearer)
    ///     .on_missing_key(MissingKey::Reject(StatusCode::UNAUTHORIZED));
    /// # let _ = pair;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_missing_key(mut self, missing: MissingKey<X::Key>) -> Self {
        self.keying.missing = missing;
        self
    }

    /// The two policies' names: the first rate's, then the second's.
    ///
    /// # Examples
    ///
    /// See [`PolicyPair::new`].
    pub fn names(&self) -> [&str; 2] {
        [&self.names[0], &self.names[1]]
    }

    /// The limiter.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, Keyed, Rate};
    /// use hotlimit_tower::{Bearer, PolicyPair};
    ///
    /// let per_token = Keyed::<String, GcraPair>::gcra_pair(Rate::per_second(10)?, Rate::per_hour(1_000)?)
    ///     .build()?;
    /// let pair = PolicyPair::new("s", "h", per_token, Bearer);
    /// assert_eq!(pair.limiter().quotas()[0].limit(), 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn limiter(&self) -> &Keyed<K, GcraPair, C> {
        &self.limiter
    }
}

impl<K, C, X> ErasedPolicy for PolicyPair<K, C, X>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Clock + 'static,
    X: KeyExtractor,
    X::Key: Borrow<K>,
{
    fn fields(&self) -> Vec<(&str, Quota)> {
        let [a, b] = self.limiter.quotas();
        vec![(&self.names[0], a), (&self.names[1], b)]
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
        let n = u64::from(self.keying.permits(parts));
        let states = self.limiter.peek_each(key.borrow());
        for (slot, s) in out.iter_mut().zip(states) {
            *slot = Report::Peeked(s);
        }
        if states.iter().all(|s| n <= s.remaining()) {
            Preview::Admits
        } else {
            Preview::Refuses
        }
    }

    fn decide(&self, parts: &Parts, out: &mut [Report]) -> Step {
        let mut owned = None;
        let key = match self.keying.key_of(parts, &mut owned) {
            Ok(key) => key,
            Err(keyless) => return keyless.step(out),
        };
        let each = self
            .limiter
            .decide_each(key.borrow(), self.keying.permits(parts));
        // Admitted iff both are allowed; refused, an allowed one is its uncharged state.
        let admitted = each.iter().all(|d| d.is_allowed());
        let mut refused = None;
        for (i, (slot, d)) in out.iter_mut().zip(each).enumerate() {
            if !d.is_allowed() {
                refused.get_or_insert(i);
            }
            *slot = if admitted || !d.is_allowed() {
                Report::Decided(d)
            } else {
                Report::Peeked(d)
            };
        }
        match refused {
            None => Step::Admitted,
            Some(field) => Step::Denied { field },
        }
    }
}
