//! How a client address becomes a key: an IPv4 client is its IPv4 address however IPv6 carries
//! it (IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d`, IPv4-compatible
//! `::a.b.c.d`, or behind a NAT64 prefix, RFC 6052: `64:ff9b::a.b.c.d` by default), and an
//! IPv6 client is its network prefix (default /56: one customer's allocation, not one of its
//! 2^72 addresses). A tunnelled IPv4 host (6to4 `2002::/16`, Teredo `2001::/32`) is its IPv4
//! address; a link-local client (`fe80::/10`, whose /64 every client on the link shares) is
//! its interface identifier.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use hotlimit::{Clock, ConfigError, IntKeyed, IntKeyedBuilder};

use super::network::Network;

/// The IPv6 prefix every IP extractor groups by unless told otherwise.
///
/// # Examples
///
/// ```
/// assert_eq!(hotlimit_tower::DEFAULT_IPV6_PREFIX, 56);
/// ```
pub const DEFAULT_IPV6_PREFIX: u8 = 56;

/// The NAT64 prefix the IP keys read IPv4 clients from unless told otherwise: the well-known
/// prefix of RFC 6052, `64:ff9b::/96`.
///
/// # Examples
///
/// ```
/// use hotlimit_tower::{KeyExtractor, PeerIp, DEFAULT_NAT64_PREFIX};
/// use std::net::{IpAddr, SocketAddr};
///
/// assert_eq!(DEFAULT_NAT64_PREFIX, "64:ff9b::/96");
/// let mut req = http::Request::get("/").body(()).unwrap();
/// req.extensions_mut().insert("[64:ff9b::192.0.2.1]:443".parse::<SocketAddr>()?);
/// let (parts, ()) = req.into_parts();
/// assert_eq!(PeerIp::new().extract(&parts), Some(IpAddr::from([192, 0, 2, 1])));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const DEFAULT_NAT64_PREFIX: &str = "64:ff9b::/96";

/// A NAT64 prefix (RFC 6052 §2.2): the IPv6 addresses under it carry an IPv4 address in the
/// next 32 bits, skipping bits 64..72 (the `u` octet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Nat64 {
    base: u128,
    mask: u128,
    /// The prefix length in octets (4, 5, 6, 7, 8 or 12).
    octets: u8,
}

impl Nat64 {
    /// `s` as a NAT64 prefix: an IPv6 network of length 32, 40, 48, 56, 64 or 96.
    pub(crate) fn parse(s: &str) -> Result<Nat64, ConfigError> {
        let n = Network::parse("nat64_prefix", s)?;
        if n.is_v4() || ![32, 40, 48, 56, 64, 96].contains(&n.len()) {
            return Err(ConfigError::invalid(
                "nat64_prefix",
                s,
                "must be an IPv6 prefix of length 32, 40, 48, 56, 64 or 96 (RFC 6052)",
            ));
        }
        Ok(Nat64 {
            base: n.base(),
            mask: u128::MAX << (128 - u32::from(n.len())),
            octets: n.len() / 8,
        })
    }

    /// The IPv4 address `bits` carries under this prefix, if it lies under it.
    #[inline]
    fn embedded(&self, bits: u128) -> Option<Ipv4Addr> {
        if bits & self.mask != self.base {
            return None;
        }
        let bytes = bits.to_be_bytes();
        let mut v4 = [0u8; 4];
        let mut at = usize::from(self.octets);
        for b in &mut v4 {
            if at == 8 {
                at += 1; // the `u` octet
            }
            *b = bytes[at];
            at += 1;
        }
        Some(Ipv4Addr::from(v4))
    }
}

/// How an extractor turns a client address into its key: see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IpKeying {
    ipv6_prefix: u8,
    nat64: Option<Nat64>,
}

impl Default for IpKeying {
    fn default() -> Self {
        IpKeying {
            ipv6_prefix: DEFAULT_IPV6_PREFIX,
            nat64: Some(Nat64::parse(DEFAULT_NAT64_PREFIX).expect("the well-known prefix")),
        }
    }
}

impl IpKeying {
    /// With IPv6 clients grouped by `/prefix`.
    pub(crate) fn ipv6_prefix(mut self, prefix: u8) -> Result<IpKeying, ConfigError> {
        if prefix == 0 || prefix > 128 {
            return Err(ConfigError::invalid(
                "ipv6_prefix",
                prefix,
                "must be between 1 and 128",
            ));
        }
        self.ipv6_prefix = prefix;
        Ok(self)
    }

    /// `table` keyed by IPv6 prefixes of this keying's length, built: the limiter an IP policy
    /// leads to ([`PeerIp::policy`](crate::PeerIp::policy)).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `ipv6_prefix` when this keying's prefix is over 64 bits (an
    /// `IntKeyed` key holds 64), else what `build()` reports.
    pub(crate) fn table<C: Clock>(
        &self,
        table: IntKeyedBuilder<IpAddr, C>,
    ) -> Result<IntKeyed<IpAddr, C>, ConfigError> {
        if self.ipv6_prefix > 64 {
            return Err(ConfigError::invalid(
                "ipv6_prefix",
                self.ipv6_prefix,
                "an IntKeyed table keys IPv6 clients by at most 64 bits: for a longer prefix \
                 use Policy::new with a Keyed<IpAddr, _>",
            ));
        }
        table.ipv6_prefix(self.ipv6_prefix).build()
    }

    /// With IPv4 clients read from under `nat64` (`None`: no NAT64 prefix).
    pub(crate) fn nat64(mut self, nat64: Option<Nat64>) -> IpKeying {
        self.nat64 = nat64;
        self
    }

    /// The key of client address `ip`.
    #[inline]
    pub(crate) fn key(&self, ip: IpAddr) -> IpAddr {
        let v6 = match ip {
            IpAddr::V4(_) => return ip,
            IpAddr::V6(v6) => v6,
        };
        let bits = u128::from(v6);
        if let Some(v4) = embedded_v4(bits) {
            return IpAddr::V4(v4);
        }
        if let Some(v4) = self.nat64.and_then(|n| n.embedded(bits)) {
            return IpAddr::V4(v4);
        }
        if let Some(v4) = tunnelled_v4(bits) {
            return IpAddr::V4(v4);
        }
        if bits >> 118 == LINK_LOCAL && self.ipv6_prefix <= 64 {
            // Every link-local client has the same /64 (fe80::/64): its interface identifier
            // is the client. Folded into the bits under fe80::/16 that the prefix keeps (40
            // for /56; an `IntKeyed` key holds 64), so that each client has its own key.
            let room = u32::from(self.ipv6_prefix).saturating_sub(16);
            // Truncation: the low 64 bits are the interface identifier.
            let folded = u128::from(fold(bits as u64, room));
            return IpAddr::V6(Ipv6Addr::from((0xfe80 << 112) | (folded << (112 - room))));
        }
        let mask = u128::MAX << (128 - u32::from(self.ipv6_prefix));
        IpAddr::V6(Ipv6Addr::from(bits & mask))
    }
}

/// `x` folded into `bits` bits (at most 48) by exclusive or of its `bits`-bit pieces.
fn fold(mut x: u64, bits: u32) -> u64 {
    if bits == 0 {
        return 0;
    }
    let mask = (1u64 << bits) - 1;
    let mut out = 0;
    while x != 0 {
        out ^= x & mask;
        x >>= bits;
    }
    out
}

/// `fe80::/10`, the link-local prefix, as the top 10 bits.
const LINK_LOCAL: u128 = 0xfe80 >> 6;

/// The IPv4 client of a tunnelled address: 6to4 (`2002:a.b.c.d::/48`, RFC 3056: the site's
/// IPv4 address in bits 16..48) or Teredo (`2001:0::/32`, RFC 4380: the client's public IPv4
/// address in the last 32 bits, every bit inverted). Each is the IPv4 host that sends the
/// packets, so it is keyed as that host, not as a /56 of its own.
#[inline]
fn tunnelled_v4(bits: u128) -> Option<Ipv4Addr> {
    match (bits >> 112, bits >> 96) {
        // Truncation: the 32 bits after the 16-bit prefix.
        (0x2002, _) => Some(Ipv4Addr::from((bits >> 80) as u32)),
        // Truncation: the low 32 bits, obfuscated by inversion.
        (_, 0x2001_0000) => Some(Ipv4Addr::from(!(bits as u32))),
        _ => None,
    }
}

/// The IPv4 address of an IPv4-mapped (`::ffff:a.b.c.d`), IPv4-translated
/// (`::ffff:0:a.b.c.d`, RFC 2765) or IPv4-compatible (`::a.b.c.d`, RFC 4291; not `::` or
/// `::1`) IPv6 address.
#[inline]
fn embedded_v4(bits: u128) -> Option<Ipv4Addr> {
    let high = bits >> 32;
    // Truncation: the low 32 bits are the IPv4 address.
    let low = Ipv4Addr::from(bits as u32);
    match high {
        0xffff | 0xffff_0000 => Some(low),
        0 if bits > 1 => Some(low),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ipv6_is_grouped_and_ipv4_is_itself() {
        let k = IpKeying::default();
        assert_eq!(k.key(ip("2001:db8:aa:bbcc::1")), ip("2001:db8:aa:bb00::"));
        let all = k.ipv6_prefix(128).unwrap();
        assert_eq!(
            all.key(ip("2001:db8:aa:bbcc::1")),
            ip("2001:db8:aa:bbcc::1")
        );
        assert_eq!(k.key(ip("192.0.2.3")), ip("192.0.2.3"));
        assert!(k.ipv6_prefix(0).is_err());
        assert!(k.ipv6_prefix(129).is_err());
    }

    #[test]
    fn every_ipv4_embedding_is_its_ipv4_client() {
        let k = IpKeying::default();
        for s in [
            "::ffff:192.0.2.1",
            "::ffff:0:192.0.2.1",
            "::192.0.2.1",
            "64:ff9b::192.0.2.1",
        ] {
            assert_eq!(k.key(ip(s)), ip("192.0.2.1"), "{s}");
        }
        // Two NAT64 clients no longer share the prefix's /56.
        assert_eq!(k.key(ip("64:ff9b::198.51.100.200")), ip("198.51.100.200"));
        // `::` and `::1` are not IPv4 clients.
        assert_eq!(k.key(ip("::1")), ip("::"));
        // Without the NAT64 prefix, a NAT64 address is an IPv6 network again.
        let plain = k.nat64(None);
        assert_eq!(plain.key(ip("64:ff9b::192.0.2.1")), ip("64:ff9b::"));
    }

    #[test]
    fn tunnels_are_their_ipv4_client_and_link_local_clients_are_apart() {
        let k = IpKeying::default();
        assert_eq!(k.key(ip("2002:c000:221::1")), ip("192.0.2.33"));
        assert_eq!(k.key(ip("2002:c000:221:ff::7")), ip("192.0.2.33"));
        // RFC 4380's example: server 65.54.227.120, client 192.0.2.45 behind a NAT.
        assert_eq!(
            k.key(ip("2001:0:4136:e378:8000:63bf:3fff:fdd2")),
            ip("192.0.2.45")
        );
        // Not Teredo: 2001:db8::/32.
        assert_eq!(k.key(ip("2001:db8::1")), ip("2001:db8::"));
        let (a, b) = (k.key(ip("fe80::1")), k.key(ip("fe80::2")));
        assert_ne!(a, b);
        assert_eq!(a, k.key(ip("fe80::1")));
        let IpAddr::V6(a) = a else { panic!() };
        assert_eq!(u128::from(a) & (u128::MAX >> 56), 0, "in the top 56 bits");
        assert_eq!(fold(u64::MAX, 40), ((1 << 40) - 1) ^ ((1 << 24) - 1));
    }

    #[test]
    fn nat64_prefixes_of_every_rfc_6052_length() {
        // RFC 6052 §2.4's table: 192.0.2.33 under 2001:db8::/n.
        for (prefix, addr) in [
            ("2001:db8::/32", "2001:db8:c000:221::"),
            ("2001:db8:100::/40", "2001:db8:1c0:2:21::"),
            ("2001:db8:122::/48", "2001:db8:122:c000:2:2100::"),
            ("2001:db8:122:300::/56", "2001:db8:122:3c0:0:221::"),
            ("2001:db8:122:344::/64", "2001:db8:122:344:c0:2:2100:0"),
            ("2001:db8:122:344::/96", "2001:db8:122:344::192.0.2.33"),
        ] {
            let k = IpKeying::default().nat64(Some(Nat64::parse(prefix).unwrap()));
            assert_eq!(k.key(ip(addr)), ip("192.0.2.33"), "{prefix}");
        }
        for bad in ["64:ff9b::/95", "10.0.0.0/8", "nope"] {
            assert_eq!(Nat64::parse(bad).unwrap_err().field(), "nat64_prefix");
        }
    }
}
