//! [`ForwardedIp`]: the client behind the server's own proxies, read from the right of
//! `X-Forwarded-For` or `Forwarded`.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};

use http::request::Parts;

use super::chain::{FromRight, Hop, Source};
use super::keying::{IpKeying, Nat64};
use super::network::Network;
use super::peer_addr;
use crate::key::{Extracted, KeyExtractor, Refusal};
use crate::policy::Policy;
use hotlimit::{Clock, ConfigError, IntKeyed, IntKeyedBuilder, Rate};

/// The most entries walked from the right: a chain of more trusted proxies counts under the
/// last one reached (no real deployment has this many; a client inside a trusted network
/// cannot make the server walk its forged chain without bound).
const MAX_HOPS: usize = 32;

/// Which proxies the forwarded chain is trusted through.
#[derive(Clone, Debug)]
enum Trust {
    /// Walk from the right past addresses in these networks.
    Networks(Vec<Network>),
    /// The client is this many entries from the right (1: the rightmost).
    Hops(usize),
}

/// The client's IP behind the server's own proxies, read from the **right** of
/// `X-Forwarded-For` (or the RFC 7239 `Forwarded` header's `for=`), keyed as
/// [`PeerIp`](crate::PeerIp) keys addresses (IPv4 clients by their IPv4 address, NAT64
/// included; IPv6 by /56).
///
/// Each proxy appends the address it received the request from, so only the entries your own
/// proxies appended can be believed, and they are the rightmost ones; the leftmost entry is
/// whatever the client sent and can be forged at will (a limiter keyed on it gives every
/// request a fresh limit). Two ways to say where your proxies end:
///
/// - [`trusted_proxies`](ForwardedIp::trusted_proxies): the networks your proxies live in.
///   If the TCP peer is *not* in them, the request did not come through a proxy and the peer
///   itself is the client (the header is ignored). Otherwise the chain is walked from the
///   right past trusted addresses; the first untrusted one is the client.
/// - [`hops`](ForwardedIp::hops): a fixed number of proxies: the client is the n-th entry from
///   the right (with one proxy in front, the rightmost). It trusts the configuration: with
///   no proxy in front (`hops(1)`), or one where two are configured (`hops(2)`), every client
///   forges its key. What a running server can see of that it logs once (`tracing`, `warn`):
///   a peer that is a public address (a proxy of your own connects from a private, loopback
///   or link-local one), a chain shorter than the hops. Prefer
///   [`trusted_proxies`](ForwardedIp::trusted_proxies), which needs no count.
///
/// **The peer address is required**, in both modes (axum: serve with
/// `into_make_service_with_connect_info::<SocketAddr>()`). Without it nobody knows who sent
/// the header, so no header may choose the key: the request is refused
/// ([`Refusal::NoPeerAddress`]: 500, counted, logged) whatever the policy's
/// [`MissingKey`](crate::MissingKey) says.
///
/// **How the chain is read.** As bytes, from the right, one entry at a time, stopping at the
/// client: nothing left of the client's entry is ever parsed, so no byte a client prepends
/// (forged addresses, invalid UTF-8, a huge chain) can change the key or cost the server more.
/// Entries may carry a port (`192.0.2.1:4711`, `"[2001:db8::1]:4711"`), every instance of the
/// header counts (the last one rightmost), empty list elements are skipped, and at most 32
/// entries are walked.
///
/// **An entry that is not an address** (`unknown`, an obfuscated `_name`, garbage) where the
/// walk needs one: the request counts under the nearest trusted proxy, the one that wrote that
/// entry (the address right of it, or the peer). A proxy that writes `unknown` for some
/// clients therefore gives them one shared limit instead of refusing them, and no client can
/// choose its key by sending garbage. A chain that ends before the client is found (all
/// trusted, or shorter than [`hops`](ForwardedIp::hops)) counts under its leftmost entry;
/// no header at all: under the peer.
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
    keying: IpKeying,
}

impl ForwardedIp {
    /// Trusts the proxies in `networks` (CIDR, e.g. `"10.0.0.0/8"`, `"2001:db8::/32"`, or
    /// single addresses).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `trusted_proxies` for an entry that is not an address or
    /// network, or whose prefix length is too long; for no networks at all (use
    /// [`PeerIp`](crate::PeerIp)); and for a network that holds every address (`0.0.0.0/0`,
    /// `::/0`): every client would be a trusted proxy and choose its own key (with a fixed
    /// number of proxies in front, use [`hops`](ForwardedIp::hops)).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::ForwardedIp;
    ///
    /// assert!(ForwardedIp::trusted_proxies(["10.0.0.0/8", "fd00::/8", "192.0.2.1"]).is_ok());
    /// assert!(ForwardedIp::trusted_proxies(["ten"]).is_err());
    /// assert!(ForwardedIp::trusted_proxies(["0.0.0.0/0"]).is_err());
    /// assert!(ForwardedIp::trusted_proxies(Vec::<String>::new()).is_err());
    /// ```
    pub fn trusted_proxies<I, S>(networks: I) -> Result<ForwardedIp, ConfigError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut nets = Vec::new();
        for s in networks {
            let s = s.as_ref();
            let n = Network::parse("trusted_proxies", s)?;
            if n.len() == 0 {
                return Err(ConfigError::invalid(
                    "trusted_proxies",
                    s,
                    "trusts every address, so any client could choose its own key \
                     (with a fixed number of proxies in front, use ForwardedIp::hops)",
                ));
            }
            nets.push(n);
        }
        if nets.is_empty() {
            return Err(ConfigError::invalid(
                "trusted_proxies",
                0,
                "no trusted proxy given (without proxies, key by PeerIp)",
            ));
        }
        Ok(ForwardedIp {
            trust: Trust::Networks(nets),
            source: Source::XForwardedFor,
            keying: IpKeying::default(),
        })
    }

    /// Trusts exactly `n` proxies in front of the server: the client is the n-th entry from
    /// the right.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `hops` when `n` is 0 or more than 32.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::{ForwardedIp, KeyExtractor};
    /// use std::net::{IpAddr, SocketAddr};
    ///
    /// let key = ForwardedIp::hops(2)?;
    /// let mut req = http::Request::get("/")
    ///     .header("x-forwarded-for", "6.6.6.6, 198.51.100.2, 10.1.1.1")
    ///     .body(())
    ///     .unwrap();
    /// req.extensions_mut().insert(SocketAddr::from(([10, 1, 1, 2], 55000)));
    /// let (parts, ()) = req.into_parts();
    /// assert_eq!(key.extract(&parts), Some(IpAddr::from([198, 51, 100, 2])));
    /// assert!(ForwardedIp::hops(0).is_err());
    /// # Ok::<(), hotlimit_tower::ConfigError>(())
    /// ```
    pub fn hops(n: usize) -> Result<ForwardedIp, ConfigError> {
        if n == 0 || n > MAX_HOPS {
            return Err(ConfigError::invalid(
                "hops",
                n,
                "must be between 1 and 32 (with no proxy, use PeerIp)",
            ));
        }
        Ok(ForwardedIp {
            trust: Trust::Hops(n),
            source: Source::XForwardedFor,
            keying: IpKeying::default(),
        })
    }

    /// A policy named `name` that allows each client `rate` (bursts of `rate.limit()`), keyed
    /// by this extractor, over an [`IntKeyed<IpAddr>`](IntKeyed) of the default capacity (see
    /// [`PeerIp::policy`](crate::PeerIp::policy), which says when to take a `Keyed` instead).
    ///
    /// # Errors
    ///
    /// As [`policy_with`](ForwardedIp::policy_with).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_tower::{ForwardedIp, RateLimitLayer};
    ///
    /// let per_client = ForwardedIp::trusted_proxies(["10.0.0.0/8"])?.policy("per-client", Rate::per_second(10)?)?;
    /// let layer = RateLimitLayer::new(per_client)?;
    /// # let _ = layer;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn policy(
        self,
        name: impl Into<String>,
        rate: Rate,
    ) -> Result<Policy<IntKeyed<IpAddr>, ForwardedIp>, ConfigError> {
        self.policy_with(name, IntKeyed::builder(rate))
    }

    /// A policy named `name` over the [`IntKeyed<IpAddr>`](IntKeyed) that `table` builds, its
    /// IPv6 prefix set to this extractor's (see
    /// [`PeerIp::policy_with`](crate::PeerIp::policy_with)).
    ///
    /// To change the rate at run time, build the table yourself, keep an `Arc` of it and
    /// give a clone to [`Policy::new`]: `set_rate` on the `Arc` you kept retunes the live
    /// layer (the README's "Changing a rate at run time").
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `ipv6_prefix` when this extractor groups IPv6 clients by more
    /// than 64 bits, or what the table's `build()` reports.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, Rate};
    /// use hotlimit_tower::ForwardedIp;
    ///
    /// let table = IntKeyed::builder(Rate::per_minute(600)?).burst(50);
    /// let policy = ForwardedIp::hops(1)?.policy_with("per-client", table)?;
    /// assert_eq!(policy.limiter().burst(), 50);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn policy_with<C: Clock>(
        self,
        name: impl Into<String>,
        table: IntKeyedBuilder<IpAddr, C>,
    ) -> Result<Policy<IntKeyed<IpAddr, C>, ForwardedIp>, ConfigError> {
        let limiter = self.keying.table(table)?;
        Ok(Policy::new(name, limiter, self))
    }

    /// Reads the RFC 7239 `Forwarded` header's `for=` parameters instead of
    /// `X-Forwarded-For`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::{ForwardedIp, KeyExtractor};
    /// use std::net::{IpAddr, SocketAddr};
    ///
    /// let key = ForwardedIp::hops(1)?.forwarded_header();
    /// let mut req = http::Request::get("/")
    ///     .header("forwarded", r#"for=192.0.2.60;proto=http, for="[2001:db8:cafe::17]:4711""#)
    ///     .body(())
    ///     .unwrap();
    /// req.extensions_mut().insert(SocketAddr::from(([10, 1, 1, 2], 55000)));
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
        self.keying = self.keying.ipv6_prefix(prefix)?;
        Ok(self)
    }

    /// Reads IPv4 clients from under the NAT64 prefix `prefix` instead of `64:ff9b::/96` (see
    /// [`PeerIp::nat64_prefix`](crate::PeerIp::nat64_prefix)).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `nat64_prefix` unless `prefix` is an IPv6 prefix of length 32,
    /// 40, 48, 56, 64 or 96.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit_tower::ForwardedIp;
    ///
    /// assert!(ForwardedIp::hops(1)?.nat64_prefix("64:ff9b:1::/48").is_ok());
    /// assert!(ForwardedIp::hops(1)?.nat64_prefix("10.0.0.0/8").is_err());
    /// # Ok::<(), hotlimit_tower::ConfigError>(())
    /// ```
    pub fn nat64_prefix(mut self, prefix: &str) -> Result<ForwardedIp, ConfigError> {
        self.keying = self.keying.nat64(Some(Nat64::parse(prefix)?));
        Ok(self)
    }

    /// Reads no NAT64 prefix (see [`PeerIp::without_nat64`](crate::PeerIp::without_nat64)).
    ///
    /// # Examples
    ///
    /// ```
    /// let key = hotlimit_tower::ForwardedIp::hops(1)?.without_nat64();
    /// # let _ = key;
    /// # Ok::<(), hotlimit_tower::ConfigError>(())
    /// ```
    pub fn without_nat64(mut self) -> ForwardedIp {
        self.keying = self.keying.nat64(None);
        self
    }

    /// The client of a request from `peer`, before keying.
    fn client(&self, parts: &Parts, peer: IpAddr) -> IpAddr {
        let chain = FromRight::new(parts, self.source);
        // The nearest trusted proxy so far: who wrote the next entry.
        let mut nearest = peer;
        match &self.trust {
            Trust::Networks(nets) => {
                let trusted = |ip: IpAddr| nets.iter().any(|n| n.contains(ip));
                if !trusted(peer) {
                    // Not from one of our proxies: the peer is the client.
                    return peer;
                }
                for hop in chain.take(MAX_HOPS) {
                    match hop {
                        Hop::Malformed => return nearest,
                        Hop::Addr(ip) if trusted(ip) => nearest = ip,
                        Hop::Addr(ip) => return ip,
                    }
                }
            }
            Trust::Hops(n) => {
                if !behind_a_proxy(peer) {
                    misconfigured(&PUBLIC_PEER, peer, *n, "the peer is a public address");
                }
                let mut seen = 0;
                for (i, hop) in chain.take(*n).enumerate() {
                    seen = i + 1;
                    match hop {
                        Hop::Malformed => return nearest,
                        Hop::Addr(ip) if i + 1 == *n => return ip,
                        Hop::Addr(ip) => nearest = ip,
                    }
                }
                if seen > 0 && seen < *n {
                    misconfigured(&SHORT_CHAIN, peer, *n, "the chain is shorter than the hops");
                }
            }
        }
        nearest
    }
}

/// Whether a peer may be a proxy of the server's own: loopback, private (RFC 1918, unique
/// local `fc00::/7`), link-local or shared (CGNAT `100.64.0.0/10`) addresses. A proxy in
/// front of a server almost always reaches it from one of these; a CDN's public ranges are
/// the exception (name them with [`ForwardedIp::trusted_proxies`]).
fn behind_a_proxy(peer: IpAddr) -> bool {
    match peer {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || (v4.octets()[0] == 100 && v4.octets()[1] & 0xc0 == 64)
        }
        IpAddr::V6(v6) => {
            let seg = v6.segments()[0];
            v6.is_loopback()
                || seg & 0xfe00 == 0xfc00
                || seg & 0xffc0 == 0xfe80
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| behind_a_proxy(IpAddr::V4(v4)))
        }
    }
}

/// Whether a public peer was reported for a [`ForwardedIp::hops`] key (once per process).
static PUBLIC_PEER: AtomicBool = AtomicBool::new(false);
/// Whether a chain shorter than the hops was reported (once per process).
static SHORT_CHAIN: AtomicBool = AtomicBool::new(false);

/// Logs once (`tracing`, at `warn`) a sign that a [`ForwardedIp::hops`] key does not match
/// the proxies in front of the server: then every client can forge its key. What the layer
/// cannot see it cannot refuse (a CDN in front is a public peer; a client behind fewer
/// proxies than configured sends a short chain): it warns, and keys the request as configured.
#[cold]
fn misconfigured(flag: &AtomicBool, peer: IpAddr, hops: usize, what: &str) {
    // Relaxed (both): only whether this warning was given; nothing is published.
    if flag.load(Ordering::Relaxed) || flag.swap(true, Ordering::Relaxed) {
        return;
    }
    tracing::warn!(
        %peer,
        hops,
        "hotlimit-tower: ForwardedIp::hops({hops}) but {what}: if fewer proxies than that \
         stand in front of this server, every client chooses its own key by what it sends; \
         name the proxies with ForwardedIp::trusted_proxies instead"
    );
}

impl KeyExtractor for ForwardedIp {
    type Key = IpAddr;

    fn extract(&self, parts: &Parts) -> Option<IpAddr> {
        self.extract_key(parts).key()
    }

    /// The client's key, or [`Refusal::NoPeerAddress`] when the request has no peer address.
    fn extract_key(&self, parts: &Parts) -> Extracted<IpAddr> {
        match peer_addr(parts) {
            Some(peer) => Extracted::Key(self.keying.key(self.client(parts, peer))),
            None => Extracted::Refused(Refusal::NoPeerAddress),
        }
    }
}
