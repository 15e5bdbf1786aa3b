//! Memory per policy at the default capacity (100,000 keys), whatever clients send: for each
//! keying, 1.2 times the capacity in distinct worst-case keys (header and token keys of 64 bytes,
//! the longest kept whole, and of 1 KiB, digested; routes with invented 1 KiB methods and
//! unmatched paths of 1 KiB; a new client address per request), then the growth of the process's
//! resident memory while the layer is kept. Each keying's growth is bounded by its table at
//! capacity, and printed (the README's table: `cargo test -p hotlimit-tower --test
//! attack_memory -- --nocapture`). Its own test binary, so no other test's memory counts.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};

use hotlimit::{Gcra, Keyed, Rate};
use hotlimit_tower::{Bearer, ForwardedIp, HeaderKey, PeerIp, Policy, RateLimitLayer, Route};
use http::{Request, Response};
use tower::{service_fn, Layer, Service, ServiceExt};

/// The process's resident set, in bytes (`VmRSS` of `/proc/self/status`).
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

const CAPACITY: u32 = 100_000;

/// Builds a layer with `layer` and sends it `1.2 × CAPACITY` requests made by `req(i)` (the
/// layer is kept afterwards); returns the resident memory the process grew by, the table's
/// allocation at build included.
async fn grown_by(
    layer: impl FnOnce() -> RateLimitLayer,
    kept: &mut Vec<Box<dyn std::any::Any>>,
    req: impl Fn(u32) -> Request<String>,
) -> u64 {
    let before = rss();
    let svc = layer().layer(service_fn(|_: Request<String>| async {
        Ok::<_, Infallible>(Response::new(String::new()))
    }));
    for i in 0..CAPACITY + CAPACITY / 5 {
        let mut svc = svc.clone();
        let resp = svc.ready().await.unwrap().call(req(i)).await.unwrap();
        assert!(resp.status() != 500);
    }
    let grown = rss().saturating_sub(before);
    kept.push(Box::new(svc));
    grown
}

fn from(peer: [u8; 4], req: http::request::Builder) -> Request<String> {
    let mut req = req.body(String::new()).unwrap();
    req.extensions_mut()
        .insert(SocketAddr::from((peer, 40_000)));
    req
}

/// A key of `len` bytes, distinct for each `i`.
fn key(i: u32, len: usize) -> String {
    let mut k = format!("{i:010}");
    k.extend(std::iter::repeat_n('k', len - 10));
    k
}

fn table() -> Keyed<String, Gcra> {
    Keyed::gcra(Rate::per_second(5).unwrap()).build().unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn every_keying_is_bounded_at_the_default_capacity() {
    let mut kept = Vec::new();
    let mut rows = Vec::new();
    // The tables allocated at build first, before the requests' own allocations have grown
    // the heap that a later table could be carved from.
    rows.push((
        "PeerIp (IntKeyed), a new peer per request",
        grown_by(
            || {
                RateLimitLayer::new(
                    PeerIp::new()
                        .policy("ip", Rate::per_second(5).unwrap())
                        .unwrap(),
                )
                .unwrap()
            },
            &mut kept,
            |i| from((i | 1 << 30).to_be_bytes(), Request::get("/")),
        )
        .await,
    ));
    rows.push((
        "ForwardedIp (IntKeyed), a new address per request",
        grown_by(
            || {
                RateLimitLayer::new(
                    ForwardedIp::trusted_proxies(["10.0.0.0/8"])
                        .unwrap()
                        .policy("ip", Rate::per_second(5).unwrap())
                        .unwrap(),
                )
                .unwrap()
            },
            &mut kept,
            |i| {
                let ip = IpAddr::from((i | 3 << 30).to_be_bytes());
                from(
                    [10, 0, 0, 1],
                    Request::get("/").header("x-forwarded-for", ip.to_string()),
                )
            },
        )
        .await,
    ));
    let header = || HeaderKey::new("x-api-key").unwrap();
    let policy = |name, x| RateLimitLayer::new(Policy::new(name, table(), x)).unwrap();
    rows.push((
        "HeaderKey, 64-byte keys (kept whole)",
        grown_by(
            || policy("k", header()),
            &mut kept,
            |i| {
                from(
                    [10, 0, 0, 1],
                    Request::get("/").header("x-api-key", key(i, 64)),
                )
            },
        )
        .await,
    ));
    let long = "k".repeat(1024);
    rows.push((
        "HeaderKey, 1 KiB keys (digested)",
        grown_by(
            || policy("k", header()),
            &mut kept,
            |i| {
                let v = format!("{i:010}{long}");
                from([10, 0, 0, 1], Request::get("/").header("x-api-key", v))
            },
        )
        .await,
    ));
    rows.push((
        "Bearer, 64-byte tokens",
        grown_by(
            || RateLimitLayer::new(Policy::new("t", table(), Bearer)).unwrap(),
            &mut kept,
            |i| {
                let v = format!("Bearer {}", key(i, 64));
                from([10, 0, 0, 1], Request::get("/").header("authorization", v))
            },
        )
        .await,
    ));
    let method = "M".repeat(1024);
    rows.push((
        "Route, 1 KiB invented methods",
        grown_by(
            || RateLimitLayer::new(Policy::new("r", table(), Route)).unwrap(),
            &mut kept,
            |i| {
                let m = format!("{i:010}{method}");
                from(
                    [10, 0, 0, 1],
                    Request::builder().method(m.as_str()).uri("/a"),
                )
            },
        )
        .await,
    ));
    let path = "p".repeat(1024);
    rows.push((
        "Route, 1 KiB unmatched paths (digested)",
        grown_by(
            || RateLimitLayer::new(Policy::new("r", table(), Route)).unwrap(),
            &mut kept,
            |i| from([10, 0, 0, 1], Request::get(format!("/{i:010}{path}"))),
        )
        .await,
    ));
    for (what, grown) in &rows {
        eprintln!("{what}: {:.1} MiB", *grown as f64 / f64::from(1 << 20));
    }
    for (what, grown) in rows {
        // A Keyed<String> at 100,000 keys of at most 64 bytes: its slots, the keys' heap
        // bytes, the allocator's rounding. Stored whole, 120,000 keys of 1 KiB would be 117 MiB.
        assert!(grown < 64 << 20, "{what}: grew by {} MiB", grown >> 20);
    }
}
