//! IP address keys for [`IntKeyed`]: [`IpKey`], the prefixes a limit applies per, and
//! how an address becomes a 64-bit key.

use super::*;

/// An IP address key for [`IntKeyed`] ([`Ipv4Addr`], [`Ipv6Addr`], [`IpAddr`]): the limit
/// applies per network prefix, set with [`IntKeyedBuilder::ipv6_prefix`] (default /56: one
/// site, the usual unit an ISP hands a customer, so one client cannot dodge its limit by
/// hopping across its 2^72 addresses) and [`IntKeyedBuilder::ipv4_prefix`] (default /32: the
/// whole address).
///
/// The key is 64 bits: an IPv6 prefix of at most 64 bits (its upper half masked), an IPv4
/// address (masked to its prefix) as `0:0:a.b:c.d::/64`. An IPv4-mapped IPv6 address
/// (`::ffff:a.b.c.d`, how a dual-stack socket reports an IPv4 client) is keyed as the IPv4
/// address it maps, so IPv4 clients keep one limit each instead of sharing the `::/56`
/// prefix. The IPv4 keys lie inside `::/32`, in the IETF-reserved `::/8` block that no
/// internet host sends from: an IPv4 client never shares a limit with a routable IPv6 one.
///
/// The prefix applies on top of whatever grouping the caller did: addresses already cut to a
/// /64 by a key extractor are merged into /56s under the default, so set `ipv6_prefix` to the
/// extractor's prefix (a prefix longer than 64 bits cannot be kept apart in a 64-bit key: use
/// [`Keyed`](crate::Keyed) with `IpAddr` keys for that).
///
/// # Examples
///
/// ```
/// use hotlimit::{IntKeyed, ManualClock, Rate};
/// use std::net::IpAddr;
///
/// let per_client: IntKeyed<IpAddr, _> = IntKeyed::builder(Rate::per_second(1)?)
///     .ipv6_prefix(64)
///     .clock(ManualClock::new())
///     .build()?;
/// let a: IpAddr = "2001:db8:1:2::a".parse()?;
/// let b: IpAddr = "2001:db8:1:2::b".parse()?; // same /64
/// let c: IpAddr = "2001:db8:1:3::a".parse()?; // another /64
/// assert!(per_client.try_acquire(a).is_ok());
/// assert!(per_client.try_acquire(b).is_err());
/// assert!(per_client.try_acquire(c).is_ok());
/// let v4: IpAddr = "192.0.2.1".parse()?;
/// let mapped: IpAddr = "::ffff:192.0.2.1".parse()?; // the same client, seen dual-stack
/// assert!(per_client.try_acquire(v4).is_ok());
/// assert!(per_client.try_acquire(mapped).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait IpKey: IntKey {}

/// The default IPv6 prefix of [`IpKey`]s: /56.
pub(super) const DEFAULT_IPV6_PREFIX: u8 = 56;
/// The default IPv4 prefix of [`IpKey`]s: /32, the whole address.
pub(super) const DEFAULT_IPV4_PREFIX: u8 = 32;

/// The mask of the upper `bits` of a `u32` (`bits` in 1..=32).
pub(super) const fn v4_mask(bits: u8) -> u32 {
    u32::MAX << (32 - bits as u32)
}

/// The mask of the upper `bits` of a `u64` (`bits` in 1..=64).
pub(super) const fn v6_mask(bits: u8) -> u64 {
    u64::MAX << (64 - bits as u32)
}

#[inline(always)]
pub(super) fn v4_bits(ip: Ipv4Addr, v4: u32) -> u64 {
    u64::from(ip.to_bits() & v4)
}

#[inline(always)]
pub(super) fn v6_bits(ip: Ipv6Addr, v4: u32, v6: u64) -> u64 {
    match ip.to_ipv4_mapped() {
        Some(ip) => v4_bits(ip, v4),
        None => (ip.to_bits() >> 64) as u64 & v6,
    }
}

impl sealed::Sealed for Ipv4Addr {
    #[inline(always)]
    fn bits(self, v4: u32, _: u64) -> u64 {
        v4_bits(self, v4)
    }
}

impl sealed::Sealed for Ipv6Addr {
    #[inline(always)]
    fn bits(self, v4: u32, v6: u64) -> u64 {
        v6_bits(self, v4, v6)
    }
}

impl sealed::Sealed for IpAddr {
    #[inline(always)]
    fn bits(self, v4: u32, v6: u64) -> u64 {
        match self {
            IpAddr::V4(ip) => v4_bits(ip, v4),
            IpAddr::V6(ip) => v6_bits(ip, v4, v6),
        }
    }
}

macro_rules! ip_key {
    ($($t:ty),*) => {$(
        impl IntKey for $t {
            #[inline(always)]
            fn to_u64(self) -> u64 {
                sealed::Sealed::bits(
                    self,
                    v4_mask(DEFAULT_IPV4_PREFIX),
                    v6_mask(DEFAULT_IPV6_PREFIX),
                )
            }
        }
        impl IpKey for $t {}
    )*};
}

ip_key!(Ipv4Addr, Ipv6Addr, IpAddr);

impl<K: IpKey, C> IntKeyedBuilder<K, C> {
    /// The IPv6 prefix a limit applies to, in bits: 1 to 64. Default: 56 (a site: what an
    /// ISP usually hands one customer). Use 64 for one subnet per client, 48 for a whole
    /// organisation. An IPv4-mapped address (`::ffff:a.b.c.d`) is keyed as IPv4 instead.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    /// use std::net::Ipv6Addr;
    ///
    /// let per_subnet: IntKeyed<Ipv6Addr, _> = IntKeyed::builder(Rate::per_second(1)?)
    ///     .ipv6_prefix(64)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(per_subnet.ipv6_prefix(), 64);
    /// assert!(per_subnet.try_acquire("2001:db8::1".parse()?).is_ok());
    /// assert!(per_subnet.try_acquire("2001:db8::2".parse()?).is_err()); // same /64
    /// assert!(per_subnet.try_acquire("2001:db8:0:1::1".parse()?).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ipv6_prefix(mut self, bits: u8) -> Self {
        self.ipv6_prefix = bits;
        self
    }

    /// The IPv4 prefix a limit applies to, in bits: 1 to 32. Default: 32 (each address).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    /// use std::net::Ipv4Addr;
    ///
    /// let per_24: IntKeyed<Ipv4Addr, _> = IntKeyed::builder(Rate::per_second(1)?)
    ///     .ipv4_prefix(24)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(per_24.try_acquire(Ipv4Addr::new(192, 0, 2, 1)).is_ok());
    /// assert!(per_24.try_acquire(Ipv4Addr::new(192, 0, 2, 200)).is_err()); // same /24
    /// let err = IntKeyed::<Ipv4Addr>::builder(Rate::per_second(1)?)
    ///     .ipv4_prefix(33)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.to_string(), "invalid ipv4_prefix = 33: must be between 1 and 32 bits");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn ipv4_prefix(mut self, bits: u8) -> Self {
        self.ipv4_prefix = bits;
        self
    }
}

impl<K: IpKey, C> IntKeyed<K, C> {
    /// The IPv6 prefix length a limit applies to (see [`IntKeyedBuilder::ipv6_prefix`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    /// use std::net::IpAddr;
    ///
    /// let limiter: IntKeyed<IpAddr, _> =
    ///     IntKeyed::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert_eq!((limiter.ipv4_prefix(), limiter.ipv6_prefix()), (32, 56));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn ipv6_prefix(&self) -> u8 {
        self.v6_mask.leading_ones() as u8
    }

    /// The IPv4 prefix length a limit applies to (see [`IntKeyedBuilder::ipv4_prefix`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    /// use std::net::Ipv4Addr;
    ///
    /// let limiter: IntKeyed<Ipv4Addr, _> = IntKeyed::builder(Rate::per_second(1)?)
    ///     .ipv4_prefix(24)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.ipv4_prefix(), 24);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn ipv4_prefix(&self) -> u8 {
        self.v4_mask.leading_ones() as u8
    }
}
