//! The forwarded-chain extractor against arbitrary input: whatever bytes a client puts left of
//! what the server's own proxies wrote, nothing panics and the key is the client the nearest
//! trusted proxy reported (property tests); an entry a proxy could not fill in (`unknown`)
//! counts under that proxy; IPv4 clients carried in IPv6 are keyed by their IPv4 address; no
//! peer address means no key at all.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use hotlimit_tower::{Extracted, ForwardedIp, KeyExtractor, PeerIp, Refusal};
use http::request::Parts;
use http::HeaderValue;
use proptest::prelude::*;

/// A request from `peer` (none: no peer address) with `name: value` for each header given.
fn request(peer: Option<IpAddr>, headers: &[(&'static str, Vec<u8>)]) -> Parts {
    let mut req = http::Request::get("/").body(()).unwrap();
    for (name, value) in headers {
        req.headers_mut()
            .append(*name, HeaderValue::from_bytes(value).unwrap());
    }
    if let Some(ip) = peer {
        req.extensions_mut().insert(SocketAddr::new(ip, 40_000));
    }
    req.into_parts().0
}

fn v4(a: [u8; 4]) -> IpAddr {
    IpAddr::from(a)
}

/// Bytes a header value may hold (visible ASCII, space, tab, obs-text), any of them, with the
/// chain's delimiters often: the bytes a header cannot hold become `,` `"` `;` `=` `[` `]` `:`.
fn header_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    const DELIMITERS: &[u8] = b",\";=[]: ";
    proptest::collection::vec(any::<u8>(), 0..max).prop_map(|v| {
        v.into_iter()
            .map(|b| match b {
                b'\t' | 0x20..=0x7e | 0x80..=0xff => b,
                other => DELIMITERS[usize::from(other) % DELIMITERS.len()],
            })
            .collect()
    })
}

/// A client address outside 10.0.0.0/8 (the proxies' network in these tests).
fn outside() -> impl Strategy<Value = IpAddr> {
    (11u8..=223, any::<[u8; 3]>()).prop_map(|(a, [b, c, d])| v4([a, b, c, d]))
}

/// A proxy address inside 10.0.0.0/8.
fn proxy() -> impl Strategy<Value = IpAddr> {
    any::<[u8; 3]>().prop_map(|[b, c, d]| v4([10, b, c, d]))
}

fn trusted() -> ForwardedIp {
    ForwardedIp::trusted_proxies(["10.0.0.0/8"]).unwrap()
}

/// `prefix` (what the client sent), then `, entry` for each entry the proxies appended.
fn chain(prefix: &[u8], appended: &[String]) -> Vec<u8> {
    let mut v = prefix.to_vec();
    for e in appended {
        if !v.is_empty() {
            v.extend_from_slice(b", ");
        }
        v.extend_from_slice(e.as_bytes());
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    /// Any bytes in either header, any peer: no panic, and always a key with a peer.
    #[test]
    fn arbitrary_bytes_never_panic(
        xff in header_bytes(300),
        fwd in header_bytes(300),
        peer in prop_oneof![outside(), proxy()],
        hops in 1usize..5,
    ) {
        let p = request(Some(peer), &[("x-forwarded-for", xff), ("forwarded", fwd)]);
        for key in [
            trusted(),
            trusted().forwarded_header(),
            ForwardedIp::hops(hops).unwrap(),
            ForwardedIp::hops(hops).unwrap().forwarded_header(),
        ] {
            prop_assert!(matches!(key.extract_key(&p), Extracted::Key(_)));
        }
    }

    /// Whatever the client prepends, the key is the client our proxies reported, for both
    /// trust modes and both headers, one header instance or several.
    #[test]
    fn bytes_left_of_the_proxies_entries_never_choose_the_key(
        forged in header_bytes(200),
        client in outside(),
        proxies in proptest::collection::vec(proxy(), 0..3),
        peer in proxy(),
        split in any::<bool>(),
    ) {
        let mut xff = vec![client.to_string()];
        xff.extend(proxies.iter().map(IpAddr::to_string));
        let mut fwd = vec![format!("for={client};proto=https")];
        fwd.extend(proxies.iter().map(|p| format!("for=\"{p}:8080\"")));
        let hops = ForwardedIp::hops(proxies.len() + 1).unwrap();
        for (name, key, entries) in [
            ("x-forwarded-for", trusted(), &xff),
            ("x-forwarded-for", hops.clone(), &xff),
            ("forwarded", trusted().forwarded_header(), &fwd),
            ("forwarded", hops.clone().forwarded_header(), &fwd),
        ] {
            // One header: the forged bytes, then the proxies' entries. Or the client's own
            // header instance, then the proxies' in a second one.
            let headers = if split {
                vec![(name, forged.clone()), (name, chain(b"", entries))]
            } else {
                vec![(name, chain(&forged, entries))]
            };
            let headers: Vec<_> = headers.into_iter().filter(|(_, v)| !v.is_empty()).collect();
            let p = request(Some(peer), &headers);
            prop_assert_eq!(key.extract(&p), Some(client), "{} {:?}", name, headers);
        }
    }

    /// An entry the nearest proxy could not fill in (`unknown`, garbage) counts under that
    /// proxy, never under anything the client wrote.
    #[test]
    fn an_unknown_client_counts_under_its_proxy(
        forged in header_bytes(100),
        junk in prop_oneof![Just("unknown".to_owned()), Just("_hidden".to_owned()), "[a-z]{1,8}"],
        writer in proxy(),
        peer in proxy(),
    ) {
        let p = request(Some(peer), &[("x-forwarded-for", chain(&forged, &[junk.clone(), writer.to_string()]))]);
        prop_assert_eq!(trusted().extract(&p), Some(writer));
        prop_assert_eq!(ForwardedIp::hops(2).unwrap().extract(&p), Some(writer));
        let p = request(Some(peer), &[("x-forwarded-for", chain(&forged, &[junk]))]);
        prop_assert_eq!(trusted().extract(&p), Some(peer));
        prop_assert_eq!(ForwardedIp::hops(1).unwrap().extract(&p), Some(peer));
    }
}

#[test]
fn a_peer_outside_the_proxies_is_the_client_whatever_it_sends() {
    let p = request(
        Some(v4([198, 51, 100, 7])),
        &[("x-forwarded-for", b"10.0.0.1, 10.0.0.2".to_vec())],
    );
    assert_eq!(trusted().extract(&p), Some(v4([198, 51, 100, 7])));
}

#[test]
fn one_non_ascii_byte_does_not_void_the_proxys_entry() {
    // The probe: the proxy appended a valid client after the client's bad bytes.
    let p = request(
        Some(v4([10, 0, 0, 9])),
        &[(
            "x-forwarded-for",
            b"\xff\xfe1.2.3.4, 198.51.100.22".to_vec(),
        )],
    );
    assert_eq!(trusted().extract(&p), Some(v4([198, 51, 100, 22])));
    assert_eq!(
        ForwardedIp::hops(1).unwrap().extract(&p),
        Some(v4([198, 51, 100, 22]))
    );
}

#[test]
fn no_peer_address_means_no_header_chooses_the_key() {
    let p = request(None, &[("x-forwarded-for", b"9.9.9.1".to_vec())]);
    for key in [trusted(), ForwardedIp::hops(1).unwrap()] {
        assert_eq!(
            key.extract_key(&p),
            Extracted::Refused(Refusal::NoPeerAddress)
        );
        assert_eq!(key.extract(&p), None);
    }
    assert_eq!(
        PeerIp::new().extract_key(&p),
        Extracted::Refused(Refusal::NoPeerAddress)
    );
}

#[test]
fn ipv4_clients_in_ipv6_are_keyed_by_their_ipv4_address() {
    let mapped = |s: &str| IpAddr::V6(s.parse::<Ipv6Addr>().unwrap());
    for (client, want) in [
        ("64:ff9b::192.0.2.1", [192, 0, 2, 1]),
        ("64:ff9b::198.51.100.200", [198, 51, 100, 200]),
        ("::ffff:0:203.0.113.5", [203, 0, 113, 5]),
        ("::203.0.113.6", [203, 0, 113, 6]),
        ("::ffff:203.0.113.7", [203, 0, 113, 7]),
    ] {
        let want = IpAddr::V4(Ipv4Addr::from(want));
        let p = request(Some(mapped(client)), &[]);
        assert_eq!(PeerIp::new().extract(&p), Some(want), "{client}");
        let p = request(
            Some(v4([10, 0, 0, 1])),
            &[("x-forwarded-for", client.as_bytes().to_vec())],
        );
        assert_eq!(trusted().extract(&p), Some(want), "{client}");
    }
}

#[test]
fn a_chain_of_trusted_entries_ends_at_its_leftmost_and_at_32_hops() {
    let p = request(
        Some(v4([10, 0, 0, 1])),
        &[("x-forwarded-for", b"10.0.0.3, 10.0.0.2".to_vec())],
    );
    assert_eq!(trusted().extract(&p), Some(v4([10, 0, 0, 3])));
    let long: Vec<String> = (0..100).map(|i| format!("10.0.1.{i}")).collect();
    let p = request(
        Some(v4([10, 0, 0, 1])),
        &[("x-forwarded-for", long.join(", ").into_bytes())],
    );
    // Walked from the right: 10.0.1.99 down to 10.0.1.68, the 32nd.
    assert_eq!(trusted().extract(&p), Some(v4([10, 0, 1, 68])));
}
