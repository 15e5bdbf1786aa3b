//! Client IP keys: [`PeerIp`] (the TCP peer) and [`ForwardedIp`] (the client behind trusted
//! proxies, read from the RIGHT of `X-Forwarded-For` or `Forwarded`), both grouping IPv6
//! addresses by prefix (default /56: one customer's allocation, not one of its 2^72
//! addresses).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use http::header::{HeaderName, FORWARDED};
use http::request::Parts;

use crate::key::KeyExtractor;
use hotlimit::ConfigError;

/// The IPv6 prefix every IP extractor groups by unless told otherwise.
pub const DEFAULT_IPV6_PREFIX: u8 = 56;

/// `X-Forwarded-For`.
static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// The address with IPv4-mapped IPv6 made IPv4 and IPv6 cut to `/prefix`.
fn group(ip: IpAddr, prefix: u8) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let mask = if prefix == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(prefix))
            };
            IpAddr::V6(Ipv6Addr::from(bits & mask))
        }
        v4 => v4,
    }
}

/// Checks an IPv6 prefix length.
fn check_prefix(prefix: u8) -> Result<u8, ConfigError> {
    if prefix == 0 || prefix > 128 {
        return Err(ConfigError::invalid(
            "ipv6_prefix",
            prefix,
            "must be between 1 and 128",
        ));
    }
    Ok(prefix)
}

/// The TCP peer's address: from the request's extensions, where the server put it. Found there:
/// a plain [`SocketAddr`] (insert it yourself in a hyper server), axum's `ConnectInfo` and
/// `MockConnectInfo` (feature `axum`: serve with `into_make_service_with_connect_info`), tonic's
/// `TcpConnectInfo` (feature `tonic`). Missing when none is there.
fn peer_addr(parts: &Parts) -> Option<IpAddr> {
    #[cfg(feature = "axum")]
    {
        use axum::extract::connect_info::{ConnectInfo, MockConnectInfo};
        if let Some(ConnectInfo(addr)) = parts.extensions.get::<ConnectInfo<SocketAddr>>() {
            return Some(addr.ip());
        }
        if let Some(MockConnectInfo(addr)) = parts.extensions.get::<MockConnectInfo<SocketAddr>>() {
            return Some(addr.ip());
        }
    }
    #[cfg(feature = "tonic")]
    if let Some(info) = parts
        .extensions
        .get::<tonic::transport::server::TcpConnectInfo>()
    {
        if let Some(addr) = info.remote_addr() {
            return Some(addr.ip());
        }
    }
    parts.extensions.get::<SocketAddr>().map(SocketAddr::ip)
}

/// The TCP peer's IP address, IPv6 grouped by prefix (default /56). Use it when clients
/// connect directly; behind a proxy or load balancer every request would share the proxy's
/// address: use [`ForwardedIp`] there.
///
/// The address comes from the request's extensions: axum's `ConnectInfo<SocketAddr>` (serve
/// with `into_make_service_with_connect_info::<SocketAddr>()`) or `MockConnectInfo` in tests
/// (feature `axum`), tonic's `TcpConnectInfo` (feature `tonic`), or a plain `SocketAddr` (a
/// hyper server can insert one). Missing when none is there.
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
#[derive(Clone, Copy, Debug)]
pub struct PeerIp {
    prefix: u8,
}

impl PeerIp {
    /// The peer address, IPv6 grouped by /56.
    ///
    /// # Examples
    ///
    /// ```
    /// let key = hotlimit_tower::PeerIp::new();
    /// # let _ = key;
    /// ```
    pub fn new() -> PeerIp {
        PeerIp {
            prefix: DEFAULT_IPV6_PREFIX,
        }
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
            prefix: check_prefix(prefix)?,
        })
    }
}

impl Default for PeerIp {
    fn default() -> Self {
        PeerIp::new()
    }
}

impl KeyExtractor for PeerIp {
    type Key = IpAddr;

    #[inline]
    fn extract(&self, parts: &Parts) -> Option<IpAddr> {
        peer_addr(parts).map(|ip| group(ip, self.prefix))
    }
}

/// A network in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`, or one address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Network {
    base: u128,
    mask: u128,
    v4: bool,
}

impl Network {
    fn parse(s: &str) -> Result<Network, ConfigError> {
        let bad = |reason| ConfigError::invalid("trusted_proxies", s, reason);
        let (addr, len) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let ip: IpAddr = addr
            .trim()
            .parse()
            .map_err(|_| bad("not an IP address or CIDR network"))?;
        let (bits, width, v4) = match ip.to_canonical() {
            IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32u32, true),
            IpAddr::V6(v6) => (u128::from(v6), 128, false),
        };
        let len = match len {
            None => width,
            Some(l) => l
                .trim()
                .parse::<u32>()
                .map_err(|_| bad("the prefix length is not a number"))?,
        };
        if len > width {
            return Err(bad(if v4 {
                "the prefix length must be at most 32 for IPv4"
            } else {
                "the prefix length must be at most 128 for IPv6"
            }));
        }
        let mask = if len == 0 {
            0
        } else {
            (u128::MAX << (width - len)) & (u128::MAX >> (128 - width))
        };
        Ok(Network {
            base: bits & mask,
            mask,
            v4,
        })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        match ip.to_canonical() {
            IpAddr::V4(v4) => self.v4 && u128::from(u32::from(v4)) & self.mask == self.base,
            IpAddr::V6(v6) => !self.v4 && u128::from(v6) & self.mask == self.base,
        }
    }
}

/// Which proxies the forwarded chain is trusted through.
#[derive(Clone, Debug)]
enum Trust {
    /// Walk from the right past addresses in these networks.
    Networks(Vec<Network>),
    /// The client is this many entries from the right (1: the rightmost).
    Hops(usize),
}

/// The header the chain is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    XForwardedFor,
    Forwarded,
}

/// The client's IP behind proxies, read from the **right** of `X-Forwarded-For` (or the
/// RFC 7239 `Forwarded` header's `for=`), IPv6 grouped by prefix (default /56).
///
/// Each proxy appends the address it received the request from, so only the entries your own
/// proxies appended can be believed, and they are the rightmost ones; the leftmost entry is
/// whatever the client sent and can be forged at will (a limiter keyed on it gives every
/// request a fresh limit). Two ways to say where your proxies end:
///
/// - [`trusted_proxies`](ForwardedIp::trusted_proxies): the networks your proxies live in.
///   If the TCP peer (see [`PeerIp`]) is known and is *not* in them, the request did not come
///   through a proxy and the peer itself is the client (the header is ignored). Otherwise
///   the chain is walked from the right past trusted addresses; the first untrusted one is
///   the client (all trusted: the leftmost; no header: the peer).
/// - [`hops`](ForwardedIp::hops): a fixed number of proxies: the client is the n-th entry from
///   the right (with one proxy in front, the rightmost).
///
/// Missing when the entry where the client should be is absent or not an IP address
/// (`unknown`, an obfuscated `_name`): the policy's [`MissingKey`](crate::MissingKey) applies.
/// Entries may carry a port (`192.0.2.1:4711`, `"[2001:db8::1]:4711"`). Every instance of the
/// header counts, in order.
///
/// # Examples
///
/// ```
/// use hotlimit_tower::{ForwardedIp, KeyExtractor};
/// use std::net::{IpAddr, SocketAddr};
///
/// let key = ForwardedIp::trusted_proxies(["10.0.0.0/8"])?;
/// let mut req = http::Request::get("/")
///     // The client forged "1.2.3.4"; our proxy 10.0.0.5 appended the real client, 203.0.113.9.
///     .header("x-forwarded-for", "1.2.3.4, 203.0.113.9, 10.0.0.5")
///     .body(())
///     .unwrap();
/// req.extensions_mut().insert(SocketAddr::from(([10, 0, 0, 6], 55000)));
/// let (parts, ()) = req.into_parts();
/// assert_eq!(key.extract(&parts), Some(IpAddr::from([203, 0, 113, 9])));
/// # Ok::<(), hotlimit_tower::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
pub struct ForwardedIp {
    trust: Trust,
    source: Source,
    prefix: u8,
}

impl ForwardedIp {
    /// Trusts the proxies in `networks` (CIDR, e.g. `"10.0.0.0/8"`, `"2001:db8::/32"`, or
    /// single addresses).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `trusted_proxies` for an entry that is not an address or
    /// network, or whose prefix length is too long.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::ForwardedIp;
    ///
    /// assert!(ForwardedIp::trusted_proxies(["10.0.0.0/8", "fd00::/8", "192.0.2.1"]).is_ok());
    /// assert!(ForwardedIp::trusted_proxies(["ten"]).is_err());
    /// ```
    pub fn trusted_proxies<I, S>(networks: I) -> Result<ForwardedIp, ConfigError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let nets = networks
            .into_iter()
            .map(|s| Network::parse(s.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ForwardedIp {
            trust: Trust::Networks(nets),
            source: Source::XForwardedFor,
            prefix: DEFAULT_IPV6_PREFIX,
        })
    }

    /// Trusts exactly `n` proxies in front of the server: the client is the n-th entry from
    /// the right.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `hops` when `n` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::{ForwardedIp, KeyExtractor};
    /// use std::net::IpAddr;
    ///
    /// let key = ForwardedIp::hops(2)?;
    /// let req = http::Request::get("/")
    ///     .header("x-forwarded-for", "6.6.6.6, 198.51.100.2, 10.1.1.1")
    ///     .body(())
    ///     .unwrap();
    /// let (parts, ()) = req.into_parts();
    /// assert_eq!(key.extract(&parts), Some(IpAddr::from([198, 51, 100, 2])));
    /// assert!(ForwardedIp::hops(0).is_err());
    /// # Ok::<(), hotlimit_tower::ConfigError>(())
    /// ```
    pub fn hops(n: usize) -> Result<ForwardedIp, ConfigError> {
        if n == 0 {
            return Err(ConfigError::invalid(
                "hops",
                n,
                "must be at least 1 (with no proxy, use PeerIp)",
            ));
        }
        Ok(ForwardedIp {
            trust: Trust::Hops(n),
            source: Source::XForwardedFor,
            prefix: DEFAULT_IPV6_PREFIX,
        })
    }

    /// Reads the RFC 7239 `Forwarded` header's `for=` parameters instead of
    /// `X-Forwarded-For`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::{ForwardedIp, KeyExtractor};
    /// use std::net::IpAddr;
    ///
    /// let key = ForwardedIp::hops(1)?.forwarded_header();
    /// let req = http::Request::get("/")
    ///     .header("forwarded", r#"for=192.0.2.60;proto=http, for="[2001:db8:cafe::17]:4711""#)
    ///     .body(())
    ///     .unwrap();
    /// let (parts, ()) = req.into_parts();
    /// assert_eq!(key.extract(&parts), Some("2001:db8:cafe::".parse::<IpAddr>().unwrap()));
    /// # Ok::<(), hotlimit_tower::ConfigError>(())
    /// ```
    pub fn forwarded_header(mut self) -> ForwardedIp {
        self.source = Source::Forwarded;
        self
    }

    /// Groups IPv6 clients by `/prefix` instead of /56.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `ipv6_prefix` unless 1 ≤ `prefix` ≤ 128.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::ForwardedIp;
    ///
    /// assert!(ForwardedIp::hops(1)?.ipv6_prefix(64).is_ok());
    /// assert!(ForwardedIp::hops(1)?.ipv6_prefix(129).is_err());
    /// # Ok::<(), hotlimit_tower::ConfigError>(())
    /// ```
    pub fn ipv6_prefix(mut self, prefix: u8) -> Result<ForwardedIp, ConfigError> {
        self.prefix = check_prefix(prefix)?;
        Ok(self)
    }

    /// The chain's entries, left to right, each an address or `None` (unparsable).
    fn chain(&self, parts: &Parts) -> Vec<Option<IpAddr>> {
        let mut out = Vec::new();
        let (name, element_ip): (&HeaderName, fn(&str) -> Option<IpAddr>) = match self.source {
            Source::XForwardedFor => (&X_FORWARDED_FOR, parse_node),
            Source::Forwarded => (&FORWARDED, forwarded_for),
        };
        for value in parts.headers.get_all(name) {
            let Ok(value) = value.to_str() else {
                // An unreadable header instance: one unparsable entry.
                out.push(None);
                continue;
            };
            out.extend(value.split(',').map(element_ip));
        }
        out
    }
}

/// An `X-Forwarded-For` entry or a `Forwarded` node: an address, maybe with a port, maybe
/// quoted, IPv6 maybe in brackets.
fn parse_node(s: &str) -> Option<IpAddr> {
    let s = s.trim().trim_matches('"');
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Some(rest) = s.strip_prefix('[') {
        return rest
            .split_once(']')?
            .0
            .parse::<Ipv6Addr>()
            .ok()
            .map(IpAddr::V6);
    }
    let (host, port) = s.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse::<Ipv4Addr>().ok().map(IpAddr::V4)
}

/// The `for=` node of one `Forwarded` element (`for=1.2.3.4;proto=https`).
fn forwarded_for(element: &str) -> Option<IpAddr> {
    element.split(';').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("for")
            .then(|| parse_node(v))?
    })
}

impl KeyExtractor for ForwardedIp {
    type Key = IpAddr;

    fn extract(&self, parts: &Parts) -> Option<IpAddr> {
        let client = match &self.trust {
            Trust::Hops(n) => {
                let chain = self.chain(parts);
                let i = chain.len().checked_sub(*n)?;
                chain[i]?
            }
            Trust::Networks(nets) => {
                let trusted = |ip: IpAddr| nets.iter().any(|n| n.contains(ip));
                let peer = peer_addr(parts);
                match peer {
                    // Not from one of our proxies: the peer is the client.
                    Some(peer) if !trusted(peer) => peer,
                    _ => {
                        let chain = self.chain(parts);
                        let mut found = peer;
                        for entry in chain.iter().rev() {
                            let ip = (*entry)?;
                            found = Some(ip);
                            if !trusted(ip) {
                                break;
                            }
                        }
                        found?
                    }
                }
            }
        };
        Some(group(client, self.prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_parse_and_match() {
        let n = Network::parse("10.0.0.0/8").unwrap();
        assert!(n.contains("10.255.1.2".parse().unwrap()));
        assert!(n.contains("::ffff:10.0.0.1".parse().unwrap()));
        assert!(!n.contains("11.0.0.1".parse().unwrap()));
        assert!(!n.contains("::a00:1".parse().unwrap()));
        let v6 = Network::parse("2001:db8::/32").unwrap();
        assert!(v6.contains("2001:db8:ffff::1".parse().unwrap()));
        assert!(!v6.contains("2001:db9::1".parse().unwrap()));
        let all = Network::parse("0.0.0.0/0").unwrap();
        assert!(all.contains("8.8.8.8".parse().unwrap()));
        let one = Network::parse("192.0.2.1").unwrap();
        assert!(one.contains("192.0.2.1".parse().unwrap()));
        assert!(!one.contains("192.0.2.2".parse().unwrap()));
        for bad in ["10.0.0.0/33", "::/129", "x", "10.0.0.0/a", ""] {
            assert!(Network::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn nodes_parse_with_ports_and_quotes() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(parse_node(" 192.0.2.1 "), Some(ip("192.0.2.1")));
        assert_eq!(parse_node("192.0.2.1:8080"), Some(ip("192.0.2.1")));
        assert_eq!(parse_node("\"[2001:db8::1]:80\""), Some(ip("2001:db8::1")));
        assert_eq!(parse_node("2001:db8::1"), Some(ip("2001:db8::1")));
        assert_eq!(parse_node("unknown"), None);
        assert_eq!(parse_node("_hidden"), None);
        assert_eq!(
            forwarded_for("proto=https;For=\"192.0.2.9\""),
            Some(ip("192.0.2.9"))
        );
        assert_eq!(forwarded_for("by=192.0.2.9"), None);
    }

    #[test]
    fn ipv6_is_grouped_and_mapped_v4_is_v4() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(
            group(ip("2001:db8:aa:bbcc::1"), 56),
            ip("2001:db8:aa:bb00::")
        );
        assert_eq!(
            group(ip("2001:db8:aa:bbcc::1"), 128),
            ip("2001:db8:aa:bbcc::1")
        );
        assert_eq!(group(ip("::ffff:192.0.2.3"), 56), ip("192.0.2.3"));
    }
}
