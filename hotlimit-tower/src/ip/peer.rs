//! [`PeerIp`]: the TCP peer's address as the key.

use std::net::IpAddr;

use http::request::Parts;

use super::keying::{IpKeying, Nat64};
use super::peer_addr;
use crate::key::{Extracted, KeyExtractor, Refusal};
use crate::policy::Policy;
use hotlimit::{Clock, ConfigError, IntKeyed, IntKeyedBuilder, Rate};

/// The TCP peer's IP address as the key: an IPv4 client by its IPv4 address (also when it
/// reaches an IPv6 socket IPv4-mapped, or through NAT64 `64:ff9b::/96`), an IPv6 client by its
/// /56. Use it when clients connect directly; behind a proxy or load balancer every request
/// would share the proxy's address: use [`ForwardedIp`](crate::ForwardedIp) there.
///
/// **The peer address is required.** It comes from the request's extensions: axum's
/// `ConnectInfo<SocketAddr>` (serve with `into_make_service_with_connect_info::<SocketAddr>()`)
/// or `MockConnectInfo` in tests (feature `axum`), tonic's `TcpConnectInfo` (feature `tonic`),
/// or a plain [`SocketAddr`](std::net::SocketAddr) (a hyper server can insert one). A request
/// without one is refused ([`Refusal::NoPeerAddress`]: 500, counted, logged), whatever the
/// policy's [`MissingKey`](crate::MissingKey): a server that forgot `ConnectInfo` fails loudly
/// instead of limiting no one.
///
/// # Examples
///
/// ```
/// use hotlimit_tower::{KeyExtractor, PeerIp};
/// use std::net::{IpAddr, SocketAddr};
///
/// let mut req = http::Request::get("/").body(()).unwrap();
/// req.extensions_mut().insert(SocketAddr::from(([192, 0, 2, 7], 40000)));
/// let (parts, ()) = req.into_parts();
/// assert_eq!(PeerIp::new().extract(&parts), Some(IpAddr::from([192, 0, 2, 7])));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct PeerIp {
    keying: IpKeying,
}

impl PeerIp {
    /// A policy named `name` that allows each client `rate` (bursts of `rate.limit()`), keyed
    /// by this extractor, over an [`IntKeyed<IpAddr>`](IntKeyed) of the default capacity
    /// (100,000 clients): the usual per-IP limit in one line.
    ///
    /// **Which table.** An IP policy's limiter is best an [`IntKeyed<IpAddr>`](IntKeyed): each
    /// key lives inline in a 16-byte slot of a table allocated at build (21 bytes per key of
    /// capacity at the default 100,000), one cache line per lookup, 1.2 to 3.2 times governor's
    /// keyed limiter at 100,000 keys on 1 to 16 threads (see the workspace's BENCHMARKS.md). Take a `Keyed<IpAddr, _>` with
    /// [`Policy::new`] instead for a sliding window or log, per-key rate overrides, IPv6
    /// prefixes longer than 64 bits, a table that grows with its keys rather than one
    /// allocated whole, or a target without a 16-byte compare-and-swap (`IntKeyed` is
    /// lock-free on x86-64 and aarch64, and takes a lock per operation elsewhere).
    ///
    /// # Errors
    ///
    /// As [`policy_with`](PeerIp::policy_with).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_tower::{PeerIp, RateLimitLayer};
    ///
    /// let layer = RateLimitLayer::new(PeerIp::new().policy("per-ip", Rate::per_second(10)?)?)?;
    /// # let _ = layer;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn policy(
        self,
        name: impl Into<String>,
        rate: Rate,
    ) -> Result<Policy<IntKeyed<IpAddr>, PeerIp>, ConfigError> {
        self.policy_with(name, IntKeyed::builder(rate))
    }

    /// A policy named `name` over the [`IntKeyed<IpAddr>`](IntKeyed) that `table` builds (its
    /// burst, capacity, clock), keyed by this extractor; the table's IPv6 prefix is set to
    /// this extractor's, so that the two group clients alike.
    ///
    /// To change the rate at run time, build the table yourself, keep an `Arc` of it and
    /// give a clone to [`Policy::new`]: `set_rate` on the `Arc` you kept retunes the live
    /// layer (the README's "Changing a rate at run time").
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `ipv6_prefix` when this extractor groups IPv6 clients by more
    /// than 64 bits (use [`Policy::new`] with a `Keyed<IpAddr, _>`), or what the table's
    /// `build()` reports.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    /// use hotlimit_tower::PeerIp;
    ///
    /// // 10 per second, bursts of 20, room for a million clients, on a test clock.
    /// let table = IntKeyed::builder(Rate::per_second(10)?)
    ///     .burst(20)
    ///     .capacity(1_000_000)
    ///     .clock(ManualClock::new());
    /// let policy = PeerIp::new().ipv6_prefix(64)?.policy_with("per-ip", table)?;
    /// assert_eq!(policy.limiter().ipv6_prefix(), 64);
    /// assert!(PeerIp::new().ipv6_prefix(80)?.policy("per-ip", Rate::per_second(1)?).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn policy_with<C: Clock>(
        self,
        name: impl Into<String>,
        table: IntKeyedBuilder<IpAddr, C>,
    ) -> Result<Policy<IntKeyed<IpAddr, C>, PeerIp>, ConfigError> {
        Ok(Policy::new(name, self.keying.table(table)?, self))
    }

    /// The peer address, IPv6 grouped by /56, NAT64 read from `64:ff9b::/96`.
    ///
    /// # Examples
    ///
    /// ```
    /// let key = hotlimit_tower::PeerIp::new();
    /// # let _ = key;
    /// ```
    pub fn new() -> PeerIp {
        PeerIp::default()
    }

    /// Groups IPv6 peers by `/prefix` instead (128: every address its own key).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `ipv6_prefix` unless 1 ≤ `prefix` ≤ 128.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::{KeyExtractor, PeerIp};
    /// use std::net::{IpAddr, SocketAddr};
    ///
    /// let mut req = http::Request::get("/").body(()).unwrap();
    /// req.extensions_mut().insert("[2001:db8:1:2:3::9]:443".parse::<SocketAddr>().unwrap());
    /// let (parts, ()) = req.into_parts();
    /// let ip = PeerIp::new().ipv6_prefix(64)?.extract(&parts).unwrap();
    /// assert_eq!(ip, "2001:db8:1:2::".parse::<IpAddr>().unwrap());
    /// assert!(PeerIp::new().ipv6_prefix(0).is_err());
    /// # Ok::<(), hotlimit_tower::ConfigError>(())
    /// ```
    pub fn ipv6_prefix(self, prefix: u8) -> Result<PeerIp, ConfigError> {
        Ok(PeerIp {
            keying: self.keying.ipv6_prefix(prefix)?,
        })
    }

    /// Reads IPv4 clients from under the NAT64 prefix `prefix` (RFC 6052: an IPv6 prefix of
    /// length 32, 40, 48, 56, 64 or 96) instead of `64:ff9b::/96`.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `nat64_prefix` for anything else.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::{KeyExtractor, PeerIp};
    /// use std::net::{IpAddr, SocketAddr};
    ///
    /// let key = PeerIp::new().nat64_prefix("2001:db8:64::/96")?;
    /// let mut req = http::Request::get("/").body(()).unwrap();
    /// req.extensions_mut().insert("[2001:db8:64::192.0.2.33]:443".parse::<SocketAddr>().unwrap());
    /// let (parts, ()) = req.into_parts();
    /// assert_eq!(key.extract(&parts), Some(IpAddr::from([192, 0, 2, 33])));
    /// assert!(PeerIp::new().nat64_prefix("2001:db8::/33").is_err());
    /// # Ok::<(), hotlimit_tower::ConfigError>(())
    /// ```
    pub fn nat64_prefix(self, prefix: &str) -> Result<PeerIp, ConfigError> {
        Ok(PeerIp {
            keying: self.keying.nat64(Some(Nat64::parse(prefix)?)),
        })
    }

    /// Reads no NAT64 prefix: addresses under `64:ff9b::/96` are IPv6 networks like any other.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::{KeyExtractor, PeerIp};
    /// use std::net::{IpAddr, SocketAddr};
    ///
    /// let mut req = http::Request::get("/").body(()).unwrap();
    /// req.extensions_mut().insert("[64:ff9b::192.0.2.33]:443".parse::<SocketAddr>().unwrap());
    /// let (parts, ()) = req.into_parts();
    /// assert_eq!(PeerIp::new().without_nat64().extract(&parts), Some("64:ff9b::".parse::<IpAddr>()?));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn without_nat64(self) -> PeerIp {
        PeerIp {
            keying: self.keying.nat64(None),
        }
    }
}

impl KeyExtractor for PeerIp {
    type Key = IpAddr;

    #[inline]
    fn extract(&self, parts: &Parts) -> Option<IpAddr> {
        peer_addr(parts).map(|ip| self.keying.key(ip))
    }

    /// The peer's key, or [`Refusal::NoPeerAddress`] when the request has no peer address.
    #[inline]
    fn extract_key(&self, parts: &Parts) -> Extracted<IpAddr> {
        match peer_addr(parts) {
            Some(ip) => Extracted::Key(self.keying.key(ip)),
            None => Extracted::Refused(Refusal::NoPeerAddress),
        }
    }
}
