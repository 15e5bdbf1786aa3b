//! [`PolicyMulti`]: several hard windows on one key ("per user 100 per minute AND 2,000 per
//! hour, never more in any window") decided as one, all or nothing, by one
//! [`MultiWindow`] state per key.

use std::borrow::Borrow;
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use hotlimit::{Clock, Keyed, MultiWindow, Quota};
use http::request::Parts;
use http::StatusCode;

use crate::erased::{ErasedPolicy, Preview, Report, Step};
use crate::key::KeyExtractor;
use crate::keying::{Keying, MissingKey};

/// Named hard windows on one key, decided together: a request is admitted only if every
/// window has room, and then every window is charged, by one
/// [`Keyed::multi_window`](hotlimit::Keyed::multi_window) state per key. A request that any
/// window refuses charges none.
///
/// Each window appears in the headers as its own policy, with its own truthful quota (`q` its
/// limit, `w` its period, plus one bucket width for a counted ring), remaining and time; a
/// refusal names the window that refused, and reports the others uncharged.
///
/// # Examples
///
/// ```
/// use hotlimit::{Keyed, MultiWindow, Rate};
/// use hotlimit_tower::{Bearer, PolicyMulti, RateLimitLayer};
///
/// // Per token: 100 per minute AND 2,000 per hour, hard windows.
/// let windows = MultiWindow::builder().window(Rate::per_minute(100)?).window(Rate::per_hour(2_000)?);
/// let per_token = Keyed::<String, MultiWindow>::multi_window(windows).build()?;
/// let layer = RateLimitLayer::builder()
///     .multi(PolicyMulti::new(["per-minute", "per-hour"], per_token, Bearer))
///     .build()?;
/// assert_eq!(layer.counters().len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PolicyMulti<K, C, X: KeyExtractor> {
    names: Vec<String>,
    limiter: Arc<Keyed<K, MultiWindow, C>>,
    keying: Keying<X>,
}

impl<K, C, X: KeyExtractor> fmt::Debug for PolicyMulti<K, C, X> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyMulti")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

impl<K, C, X> PolicyMulti<K, C, X>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Clock + 'static,
    X: KeyExtractor,
    X::Key: Borrow<K>,
{
    /// One policy per window, named by `names` in the order the windows were added (a missing
    /// name is `window-i`, an extra one is ignored), over `limiter` (the `Keyed` itself, or an
    /// `Arc` of it that you keep to read it), keyed by `key`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Keyed, MultiWindow, Rate};
    /// use hotlimit_tower::{HeaderKey, PolicyMulti};
    ///
    /// let windows = MultiWindow::builder().exact(Rate::per_second(5)?).exact(Rate::per_minute(100)?);
    /// let per_key = Keyed::<String, MultiWindow>::multi_window(windows).build()?;
    /// let multi = PolicyMulti::new(["second"], per_key, HeaderKey::new("x-api-key")?);
    /// assert_eq!(multi.names(), ["second", "window-1"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new<S: Into<String>>(
        names: impl IntoIterator<Item = S>,
        limiter: impl Into<Arc<Keyed<K, MultiWindow, C>>>,
        key: X,
    ) -> Self {
        let limiter = limiter.into();
        let k = limiter.quotas().len();
        let mut names: Vec<String> = names.into_iter().map(Into::into).take(k).collect();
        for i in names.len()..k {
            names.push(format!("window-{i}"));
        }
        PolicyMulti {
            names,
            limiter,
            keying: Keying::new(key),
        }
    }

    /// Each request costs `f(parts)` permits in every window instead of 1 (see
    /// [`Policy::cost`](crate::Policy::cost)).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Keyed, MultiWindow, Rate};
    /// use hotlimit_tower::{Bearer, PolicyMulti};
    ///
    /// let windows = MultiWindow::builder().window(Rate::per_second(10)?);
    /// let per_token = Keyed::<String, MultiWindow>::multi_window(windows).build()?;
    /// let multi = PolicyMulti::new(["s"], per_token, Bearer)
    ///     .cost(|parts| if parts.method == http::Method::POST { 5 } else { 1 });
    /// # let _ = multi;
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
    /// use hotlimit::{Keyed, MultiWindow, Rate};
    /// use hotlimit_tower::{Bearer, MissingKey, PolicyMulti};
    /// use http::StatusCode;
    ///
    /// let windows = MultiWindow::builder().window(Rate::per_second(10)?);
    /// let per_token = Keyed::<String, MultiWindow>::multi_window(windows).build()?;
    /// let multi = PolicyMulti::new(["s"], per_token, Bearer)
    ///     .on_missing_key(MissingKey::Reject(StatusCode::UNAUTHORIZED));
    /// # let _ = multi;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_missing_key(mut self, missing: MissingKey<X::Key>) -> Self {
        self.keying.missing = missing;
        self
    }

    /// The policies' names, one per window.
    ///
    /// # Examples
    ///
    /// See [`PolicyMulti::new`].
    pub fn names(&self) -> Vec<&str> {
        self.names.iter().map(String::as_str).collect()
    }

    /// The limiter.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Keyed, MultiWindow, Rate};
    /// use hotlimit_tower::{Bearer, PolicyMulti};
    ///
    /// let windows = MultiWindow::builder().exact(Rate::per_second(10)?);
    /// let per_token = Keyed::<String, MultiWindow>::multi_window(windows).build()?;
    /// let multi = PolicyMulti::new(["s"], per_token, Bearer);
    /// assert_eq!(multi.limiter().quotas()[0].limit(), 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn limiter(&self) -> &Keyed<K, MultiWindow, C> {
        &self.limiter
    }
}

impl<K, C, X> ErasedPolicy for PolicyMulti<K, C, X>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    C: Clock + 'static,
    X: KeyExtractor,
    X::Key: Borrow<K>,
{
    fn fields(&self) -> Vec<(&str, Quota)> {
        (self.names.iter().map(String::as_str))
            .zip(self.limiter.quotas())
            .collect()
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
        let admits = states.iter().all(|s| n <= s.remaining());
        for (slot, s) in out.iter_mut().zip(states) {
            *slot = Report::Peeked(s);
        }
        if admits {
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
        // Admitted iff every window allowed it; refused, an allowed one is its uncharged state.
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
