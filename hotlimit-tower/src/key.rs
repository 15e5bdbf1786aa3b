//! [`KeyExtractor`]: what a request is limited by, read from its [`Parts`], and the
//! extractors that need no network knowledge (a global key, a header, a bearer token, the
//! route, a pair of extractors, a closure). The IP extractors are in `ip.rs`.

use std::fmt;

use http::header::{HeaderName, AUTHORIZATION};
use http::request::Parts;
use http::Method;

use crate::digest::{bounded, bounded_bytes};
use hotlimit::ConfigError;

/// Reads the key a request is limited by from its head. `None` means the request has no key
/// (no such header, no peer address): the policy's [`MissingKey`](crate::MissingKey) choice
/// then applies.
///
/// Implement it for your own keys, or wrap a closure with [`key_fn`].
///
/// # Examples
///
/// ```
/// use hotlimit_tower::KeyExtractor;
/// use http::request::Parts;
///
/// /// The tenant from the first path segment: `/acme/orders` → `acme`.
/// struct Tenant;
///
/// impl KeyExtractor for Tenant {
///     type Key = String;
///     fn extract(&self, parts: &Parts) -> Option<String> {
///         let first = parts.uri.path().trim_start_matches('/').split('/').next()?;
///         (!first.is_empty()).then(|| first.to_owned())
///     }
/// }
///
/// let (parts, ()) = http::Request::get("/acme/orders").body(()).unwrap().into_parts();
/// assert_eq!(Tenant.extract(&parts).as_deref(), Some("acme"));
/// ```
pub trait KeyExtractor: Send + Sync + 'static {
    /// The key.
    type Key: Send + Sync + 'static;

    /// The request's key, or `None` when it has none.
    fn extract(&self, parts: &Parts) -> Option<Self::Key>;

    /// The request's key, none, or a refusal to choose one: what the layer calls. The default
    /// is [`extract`](KeyExtractor::extract)'s answer; an extractor that cannot pick a key
    /// safely in some requests ([`PeerIp`](crate::PeerIp) and
    /// [`ForwardedIp`](crate::ForwardedIp) without the peer address) overrides it to say so.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::{Extracted, KeyExtractor, PeerIp, Refusal};
    ///
    /// // No peer address in the request (a server without `ConnectInfo`): PeerIp refuses.
    /// let (parts, ()) = http::Request::get("/").body(()).unwrap().into_parts();
    /// assert_eq!(PeerIp::new().extract_key(&parts), Extracted::Refused(Refusal::NoPeerAddress));
    /// ```
    #[inline]
    fn extract_key(&self, parts: &Parts) -> Extracted<Self::Key> {
        match self.extract(parts) {
            Some(key) => Extracted::Key(key),
            None => Extracted::Missing,
        }
    }

    /// This extractor combined with `other`: the key is the pair of both keys (missing if
    /// either is missing), e.g. per user *and* route.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::{Bearer, KeyExtractor, Route};
    ///
    /// let key = Bearer.and(Route);
    /// let req = http::Request::post("/upload").header("authorization", "Bearer t0k").body(()).unwrap();
    /// let (parts, ()) = req.into_parts();
    /// assert_eq!(key.extract(&parts), Some(("t0k".to_owned(), "POST /upload".to_owned())));
    /// ```
    fn and<B: KeyExtractor>(self, other: B) -> Pair<Self, B>
    where
        Self: Sized,
    {
        Pair(self, other)
    }
}

/// What a [`KeyExtractor`] found in a request.
///
/// # Examples
///
/// ```
/// use hotlimit_tower::{Extracted, HeaderKey, KeyExtractor};
///
/// let key = HeaderKey::new("x-api-key")?;
/// let (parts, ()) = http::Request::get("/").body(()).unwrap().into_parts();
/// assert_eq!(key.extract_key(&parts), Extracted::Missing);
/// # Ok::<(), hotlimit_tower::ConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Extracted<K> {
    /// The request's key.
    Key(K),
    /// The request has no key (no such header): the policy's
    /// [`MissingKey`](crate::MissingKey) choice applies.
    Missing,
    /// The extractor will not choose a key for this request because it cannot do so safely:
    /// the server is misconfigured. The layer rejects the request with 500, counts it
    /// ([`PolicyCounts::refused`](crate::PolicyCounts::refused)) and logs why (`tracing`, at
    /// `error` the first time for each policy, then at `debug`). No
    /// [`MissingKey`](crate::MissingKey) choice applies: a keyless fallback would hide the
    /// mistake.
    Refused(Refusal),
}

impl<K> Extracted<K> {
    /// The key, if there is one.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::Extracted;
    ///
    /// assert_eq!(Extracted::Key(7).key(), Some(7));
    /// assert_eq!(Extracted::<u8>::Missing.key(), None);
    /// ```
    pub fn key(self) -> Option<K> {
        match self {
            Extracted::Key(k) => Some(k),
            _ => None,
        }
    }
}

/// Why an extractor refused to choose a key ([`Extracted::Refused`]).
///
/// # Examples
///
/// ```
/// use hotlimit_tower::Refusal;
///
/// assert!(Refusal::NoPeerAddress.to_string().contains("peer address"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The request carries no peer address (axum: the server was not started with
    /// `into_make_service_with_connect_info::<SocketAddr>()`; hyper: no `SocketAddr` in the
    /// request's extensions). An IP key cannot be known, and a forwarded header cannot be
    /// trusted when it is unknown who sent it: any client could choose its own key.
    NoPeerAddress,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NoPeerAddress => f.write_str(
                "the request has no peer address: serve with \
                 into_make_service_with_connect_info::<SocketAddr>() (axum) or put the \
                 connection's SocketAddr in the request's extensions",
            ),
        }
    }
}

/// One key for every request: a global limit.
///
/// # Examples
///
/// ```
/// use hotlimit_tower::{Global, KeyExtractor};
///
/// let (parts, ()) = http::Request::get("/").body(()).unwrap().into_parts();
/// assert_eq!(Global.extract(&parts), Some(()));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Global;

impl KeyExtractor for Global {
    type Key = ();

    #[inline]
    fn extract(&self, _: &Parts) -> Option<()> {
        Some(())
    }
}

/// The value of a request header (e.g. an API key), as a `String`; missing when the header is
/// absent or empty (an empty `x-api-key:` is no key, not one key shared by everyone who sends
/// it). The first value counts if the header repeats. A value longer than
/// [`MAX_KEY_LEN`](crate::MAX_KEY_LEN) bytes, or one with bytes other than visible ASCII and
/// spaces (a tab, obs-text), is stored as its keyed 128-bit digest: a key the client sent is a
/// key, and the policy's memory is bounded whatever clients send.
///
/// # Examples
///
/// ```
/// use hotlimit_tower::{HeaderKey, KeyExtractor};
///
/// let key = HeaderKey::new("x-api-key")?;
/// let req = http::Request::get("/").header("x-api-key", "k-123").body(()).unwrap();
/// let (parts, ()) = req.into_parts();
/// assert_eq!(key.extract(&parts).as_deref(), Some("k-123"));
/// # Ok::<(), hotlimit_tower::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
pub struct HeaderKey {
    name: HeaderName,
}

impl HeaderKey {
    /// The header called `name` (case-insensitive).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `header` when `name` is not a valid header name.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::HeaderKey;
    ///
    /// assert!(HeaderKey::new("X-Api-Key").is_ok());
    /// assert_eq!(HeaderKey::new("bad header").unwrap_err().field(), "header");
    /// ```
    pub fn new(name: &str) -> Result<HeaderKey, ConfigError> {
        HeaderName::from_bytes(name.as_bytes())
            .map(|name| HeaderKey { name })
            .map_err(|_| ConfigError::invalid("header", name, "not a valid HTTP header name"))
    }
}

impl KeyExtractor for HeaderKey {
    type Key = String;

    fn extract(&self, parts: &Parts) -> Option<String> {
        let value = parts.headers.get(&self.name)?.as_bytes();
        (!value.is_empty()).then(|| bounded_bytes(value))
    }
}

/// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, spaces
/// or tabs after it); missing when there is none. A token longer than
/// [`MAX_KEY_LEN`](crate::MAX_KEY_LEN) bytes (a JWT, typically), or with bytes other than
/// visible ASCII, is stored as its keyed 128-bit digest, so the policy's memory is bounded
/// whatever clients send.
///
/// # Examples
///
/// ```
/// use hotlimit_tower::{Bearer, KeyExtractor};
///
/// let req = http::Request::get("/").header("authorization", "bearer abc.def").body(()).unwrap();
/// let (parts, ()) = req.into_parts();
/// assert_eq!(Bearer.extract(&parts).as_deref(), Some("abc.def"));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Bearer;

impl KeyExtractor for Bearer {
    type Key = String;

    fn extract(&self, parts: &Parts) -> Option<String> {
        let value = parts.headers.get(AUTHORIZATION)?.as_bytes();
        let blank = |b: &u8| *b == b' ' || *b == b'\t';
        let at = value.iter().position(blank)?;
        let (scheme, token) = value.split_at(at);
        let token = token.trim_ascii();
        (scheme.eq_ignore_ascii_case(b"bearer") && !token.is_empty()).then(|| bounded_bytes(token))
    }
}

/// The route: the method and the matched path (`"GET /users/{id}"`, from axum's
/// `MatchedPath` with the `axum` feature), so every user shares one limit per endpoint. Without
/// a matched path (no `axum` feature, or a service that is not an axum route) it is the
/// request's path, which a client controls: then bound the keys with the limiter's capacity
/// (a key longer than [`MAX_KEY_LEN`](crate::MAX_KEY_LEN) bytes is stored as its keyed
/// digest, so each costs little).
///
/// The method is one a client chooses too (a server accepts any token, hundreds of kilobytes
/// long): the nine methods of RFC 9110 and `PATCH` are keyed by their name, `HEAD` as `GET`
/// (a router answers it with the `GET` handler, so it is the same endpoint and the same
/// limit), and every other method of a path shares one key, `(other)` (a name no method can
/// spell): a client cannot grow the table, nor fill it, by inventing methods.
///
/// # Examples
///
/// ```
/// use hotlimit_tower::{KeyExtractor, Route};
///
/// let key = |req: http::Request<()>| Route.extract(&req.into_parts().0);
/// assert_eq!(key(http::Request::delete("/items/7").body(()).unwrap()).as_deref(), Some("DELETE /items/7"));
/// assert_eq!(key(http::Request::head("/a").body(()).unwrap()).as_deref(), Some("GET /a"));
/// let odd = http::Request::builder().method("PROPFIND").uri("/a").body(()).unwrap();
/// assert_eq!(key(odd).as_deref(), Some("(other) /a"));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Route;

impl KeyExtractor for Route {
    type Key = String;

    fn extract(&self, parts: &Parts) -> Option<String> {
        let method = method_key(&parts.method);
        #[cfg(feature = "axum")]
        if let Some(path) = parts.extensions.get::<axum::extract::MatchedPath>() {
            return Some(format!("{method} {}", path.as_str()));
        }
        Some(bounded(&format!("{method} {}", parts.uri.path())))
    }
}

/// The method part of a [`Route`] key: a standard method's name (`HEAD` as `GET`), else
/// `(other)`.
fn method_key(method: &Method) -> &'static str {
    match *method {
        Method::GET | Method::HEAD => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "(other)",
    }
}

/// Two extractors combined: the key is both keys (see [`KeyExtractor::and`]).
///
/// # Examples
///
/// ```
/// use hotlimit_tower::{Global, HeaderKey, KeyExtractor, Pair};
///
/// let pair = Pair(HeaderKey::new("x-tenant")?, Global);
/// let (parts, ()) = http::Request::get("/").header("x-tenant", "a").body(()).unwrap().into_parts();
/// assert_eq!(pair.extract(&parts), Some(("a".to_owned(), ())));
/// # Ok::<(), hotlimit_tower::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Pair<A, B>(pub A, pub B);

impl<A: KeyExtractor, B: KeyExtractor> KeyExtractor for Pair<A, B> {
    type Key = (A::Key, B::Key);

    fn extract(&self, parts: &Parts) -> Option<Self::Key> {
        self.extract_key(parts).key()
    }

    /// Both keys; a refusal by either is a refusal, else a missing key by either is missing.
    fn extract_key(&self, parts: &Parts) -> Extracted<Self::Key> {
        match (self.0.extract_key(parts), self.1.extract_key(parts)) {
            (Extracted::Refused(r), _) | (_, Extracted::Refused(r)) => Extracted::Refused(r),
            (Extracted::Key(a), Extracted::Key(b)) => Extracted::Key((a, b)),
            _ => Extracted::Missing,
        }
    }
}

/// A key extractor from a closure over the request's head: see [`key_fn`]. Its keys are
/// stored as the closure returns them: bound their size yourself if a client chooses them.
///
/// # Examples
///
/// ```
/// use hotlimit_tower::{key_fn, KeyExtractor};
///
/// let by_host = key_fn(|parts: &http::request::Parts| parts.uri.host().map(str::to_owned));
/// let (parts, ()) = http::Request::get("http://example.com/").body(()).unwrap().into_parts();
/// assert_eq!(by_host.extract(&parts).as_deref(), Some("example.com"));
/// ```
#[derive(Clone, Copy)]
pub struct FnKey<F>(F);

impl<F> fmt::Debug for FnKey<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnKey")
    }
}

/// Wraps `f` as a [`KeyExtractor`]: your own key from `&http::request::Parts`.
///
/// # Examples
///
/// ```
/// use hotlimit_tower::{key_fn, KeyExtractor};
///
/// // The `tenant` query parameter.
/// let tenant = key_fn(|parts: &http::request::Parts| {
///     parts.uri.query()?.split('&').find_map(|kv| kv.strip_prefix("tenant=")).map(str::to_owned)
/// });
/// let (parts, ()) = http::Request::get("/x?tenant=acme").body(()).unwrap().into_parts();
/// assert_eq!(tenant.extract(&parts).as_deref(), Some("acme"));
/// ```
pub fn key_fn<F, K>(f: F) -> FnKey<F>
where
    F: Fn(&Parts) -> Option<K> + Send + Sync + 'static,
    K: Send + Sync + 'static,
{
    FnKey(f)
}

impl<F, K> KeyExtractor for FnKey<F>
where
    F: Fn(&Parts) -> Option<K> + Send + Sync + 'static,
    K: Send + Sync + 'static,
{
    type Key = K;

    fn extract(&self, parts: &Parts) -> Option<K> {
        (self.0)(parts)
    }
}
