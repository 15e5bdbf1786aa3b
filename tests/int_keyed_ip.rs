//! IntKeyed with IP address keys: IPv6 limited per prefix (default /56, configurable 1–64),
//! IPv4 per address (or per prefix), IPv4-mapped IPv6 addresses keyed as the IPv4 address
//! they map, and the prefix settings' bad values.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use hotlimit::{IntKey, IntKeyed, IpKey, ManualClock, Rate};
use proptest::prelude::*;

/// One permit per key per hour, so that a second grant for a key means "another key".
fn limiter<K: IpKey>(v4: Option<u8>, v6: Option<u8>) -> IntKeyed<K, ManualClock> {
    let mut b = IntKeyed::builder(Rate::per_hour(1).unwrap())
        .capacity(1_000)
        .clock(ManualClock::new());
    if let Some(p) = v4 {
        b = b.ipv4_prefix(p);
    }
    if let Some(p) = v6 {
        b = b.ipv6_prefix(p);
    }
    b.build().unwrap()
}

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn ipv6_default_prefix_is_56() {
    let l = limiter::<Ipv6Addr>(None, None);
    assert_eq!(l.ipv6_prefix(), 56);
    assert!(l.try_acquire(v6("2001:db8:0:ab00::1")).is_ok());
    // Anywhere in the same /56: the same key.
    assert!(l
        .try_acquire(v6("2001:db8:0:abff:ffff:ffff:ffff:ffff"))
        .is_err());
    assert!(l.try_acquire(v6("2001:db8:0:ab12::7")).is_err());
    // The next /56: another key.
    assert!(l.try_acquire(v6("2001:db8:0:ac00::1")).is_ok());
    assert_eq!(l.len(), 2);
}

#[test]
fn ipv6_prefix_is_configurable_from_1_to_64() {
    for p in 1..=64u8 {
        let l = limiter::<Ipv6Addr>(None, Some(p));
        assert_eq!(l.ipv6_prefix(), p);
        // The base address and the last address of its /p: one key.
        let base = 0x2001_0db8_1234_5678u64 & (u64::MAX << (64 - p));
        let last = base | !(u64::MAX << (64 - p));
        let a = Ipv6Addr::from_bits(u128::from(base) << 64);
        let b = Ipv6Addr::from_bits((u128::from(last) << 64) | u128::from(u64::MAX));
        assert!(l.try_acquire(a).is_ok(), "/{p}");
        assert!(l.try_acquire(b).is_err(), "/{p}");
        // Flip the last bit of the prefix: another key.
        let other = Ipv6Addr::from_bits(u128::from(base ^ (1 << (64 - p))) << 64);
        assert!(l.try_acquire(other).is_ok(), "/{p}");
    }
}

#[test]
fn ipv4_is_per_address_by_default_and_per_prefix_when_set() {
    let l = limiter::<Ipv4Addr>(None, None);
    assert_eq!(l.ipv4_prefix(), 32);
    assert!(l.try_acquire(Ipv4Addr::new(192, 0, 2, 1)).is_ok());
    assert!(l.try_acquire(Ipv4Addr::new(192, 0, 2, 1)).is_err());
    assert!(l.try_acquire(Ipv4Addr::new(192, 0, 2, 2)).is_ok());

    let l = limiter::<Ipv4Addr>(Some(16), None);
    assert!(l.try_acquire(Ipv4Addr::new(198, 51, 0, 1)).is_ok());
    assert!(l.try_acquire(Ipv4Addr::new(198, 51, 255, 9)).is_err());
    assert!(l.try_acquire(Ipv4Addr::new(198, 52, 0, 1)).is_ok());
}

#[test]
fn ipaddr_keeps_families_apart_and_maps_ipv4_mapped_to_ipv4() {
    let l = limiter::<IpAddr>(None, Some(64));
    assert!(l.try_acquire(ip("192.0.2.1")).is_ok());
    // A dual-stack socket reports the same client as ::ffff:192.0.2.1.
    assert!(l.try_acquire(ip("::ffff:192.0.2.1")).is_err());
    // Another IPv4 client is not swallowed by the ::/64 that every mapped address is in.
    assert!(l.try_acquire(ip("::ffff:192.0.2.2")).is_ok());
    // A routable IPv6 client whose bits would spell 192.0.2.3 in another half: its own key.
    assert!(l.try_acquire(ip("192.0.2.3")).is_ok());
    assert!(l.try_acquire(ip("c000:203::1")).is_ok());
    assert!(l.try_acquire(ip("2001:db8::c000:203")).is_ok());

    // Ipv6Addr keys map IPv4-mapped addresses the same way.
    let l6 = limiter::<Ipv6Addr>(None, None);
    assert!(l6.try_acquire(v6("::ffff:10.0.0.1")).is_ok());
    assert!(l6.try_acquire(v6("::ffff:10.0.0.2")).is_ok());
    assert!(l6.try_acquire(v6("::ffff:10.0.0.1")).is_err());
}

#[test]
fn ipv4_prefix_applies_to_ipv4_mapped_addresses_too() {
    let l = limiter::<IpAddr>(Some(24), None);
    assert!(l.try_acquire(ip("203.0.113.5")).is_ok());
    assert!(l.try_acquire(ip("::ffff:203.0.113.77")).is_err());
}

#[test]
fn bad_prefixes_are_config_errors_naming_the_field() {
    let b = || IntKeyed::<IpAddr>::builder(Rate::per_second(1).unwrap()).clock(ManualClock::new());
    for p in [0u8, 65, 128, 255] {
        let e = b().ipv6_prefix(p).build().unwrap_err();
        assert_eq!(e.field(), "ipv6_prefix");
        assert_eq!(
            e.to_string(),
            format!("invalid ipv6_prefix = {p}: must be between 1 and 64 bits (a key is 64 bits; /48, /56 and /64 are usual)")
        );
    }
    for p in [0u8, 33, 255] {
        let e = b().ipv4_prefix(p).build().unwrap_err();
        assert_eq!(e.field(), "ipv4_prefix");
        assert_eq!(
            e.to_string(),
            format!("invalid ipv4_prefix = {p}: must be between 1 and 32 bits")
        );
    }
}

#[test]
fn to_u64_uses_the_default_prefixes() {
    assert_eq!(v6("2001:db8:aa:bbcc::1").to_u64(), 0x2001_0db8_00aa_bb00);
    assert_eq!(ip("10.1.2.3").to_u64(), 0x0A01_0203);
    assert_eq!(ip("::ffff:10.1.2.3").to_u64(), 0x0A01_0203);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Two IPv6 addresses share a limit exactly when they share the /p prefix (the limiter
    /// against the definition, for random prefixes and addresses, and pairs that agree on a
    /// random number of leading bits).
    #[test]
    fn same_key_iff_same_prefix(p in 1..=64u8, a in any::<u128>(), common in 0..=128u32, flip in any::<u128>()) {
        // b shares `common` leading bits with a, then differs at random.
        let low = if common == 128 { 0 } else { u128::MAX >> common };
        let b = (a & !low) | (flip & low);
        let (a6, b6) = (Ipv6Addr::from_bits(a), Ipv6Addr::from_bits(b));
        prop_assume!(a6.to_ipv4_mapped().is_none() && b6.to_ipv4_mapped().is_none());
        let l = limiter::<Ipv6Addr>(None, Some(p));
        prop_assert!(l.try_acquire(a6).is_ok());
        let same = (a >> (128 - u32::from(p))) == (b >> (128 - u32::from(p)));
        prop_assert_eq!(l.try_acquire(b6).is_err(), same);
    }
}

/// Every method that takes a key applies the limiter's prefix, not the default one: here /48,
/// where the two addresses share a key but would not under the default /56.
#[test]
fn every_key_method_uses_the_configured_prefix() {
    let l = limiter::<IpAddr>(None, Some(48));
    let a = ip("2001:db8:1:aa00::1");
    let b = ip("2001:db8:1:bb00::1");
    assert_ne!(a.to_u64(), b.to_u64()); // different /56s
    l.try_acquire_at(a, 0).unwrap();
    assert!(l.try_acquire_at(b, 0).is_err());
    assert!(l.try_acquire_n_at(b, 1, 0).is_err());
    assert_eq!(l.remaining_at(b, 0), 0);
    assert_eq!(l.reset_at(b, 0), std::time::Duration::from_secs(3_600));
}
