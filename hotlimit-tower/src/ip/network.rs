//! A network in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`, one address): the trusted
//! proxies of [`ForwardedIp`](crate::ForwardedIp) and the NAT64 prefix of the IP keys.

use std::net::IpAddr;

use hotlimit::ConfigError;

/// A network: the address bits under its mask.
///
/// ```text
/// IPv4: { base: the 32 address bits (high bits of u128 zero), mask: the prefix's 32-bit mask, v4: true }
/// IPv6: { base: the 128 address bits,                        mask: the prefix's mask,        v4: false }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Network {
    base: u128,
    mask: u128,
    v4: bool,
    len: u8,
}

impl Network {
    /// Parses `s` for the setting `field` (`10.0.0.0/8`, `2001:db8::/32`, or one address); an
    /// IPv4-mapped IPv6 network is its IPv4 network.
    pub(crate) fn parse(field: &'static str, s: &str) -> Result<Network, ConfigError> {
        let bad = |reason| ConfigError::invalid(field, s, reason);
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
            // At most 128: fits.
            len: len as u8,
        })
    }

    /// Whether `ip` lies in the network (an IPv4-mapped IPv6 address as its IPv4 address).
    #[inline]
    pub(crate) fn contains(&self, ip: IpAddr) -> bool {
        match ip.to_canonical() {
            IpAddr::V4(v4) => self.v4 && u128::from(u32::from(v4)) & self.mask == self.base,
            IpAddr::V6(v6) => !self.v4 && u128::from(v6) & self.mask == self.base,
        }
    }

    /// The prefix length.
    pub(crate) fn len(&self) -> u8 {
        self.len
    }

    /// Whether it is an IPv4 network.
    pub(crate) fn is_v4(&self) -> bool {
        self.v4
    }

    /// The network's bits (an IPv6 network's 128 address bits under the mask).
    pub(crate) fn base(&self) -> u128 {
        self.base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_parse_and_match() {
        let p = |s| Network::parse("trusted_proxies", s);
        let n = p("10.0.0.0/8").unwrap();
        assert!(n.contains("10.255.1.2".parse().unwrap()));
        assert!(n.contains("::ffff:10.0.0.1".parse().unwrap()));
        assert!(!n.contains("11.0.0.1".parse().unwrap()));
        assert!(!n.contains("::a00:1".parse().unwrap()));
        let v6 = p("2001:db8::/32").unwrap();
        assert!(v6.contains("2001:db8:ffff::1".parse().unwrap()));
        assert!(!v6.contains("2001:db9::1".parse().unwrap()));
        let all = p("0.0.0.0/0").unwrap();
        assert!(all.contains("8.8.8.8".parse().unwrap()));
        assert_eq!(all.len(), 0);
        let one = p("192.0.2.1").unwrap();
        assert!(one.contains("192.0.2.1".parse().unwrap()));
        assert!(!one.contains("192.0.2.2".parse().unwrap()));
        assert_eq!(one.len(), 32);
        for bad in ["10.0.0.0/33", "::/129", "x", "10.0.0.0/a", ""] {
            assert!(p(bad).is_err(), "{bad}");
        }
    }
}
