//! A policy's memory is bounded whatever its keys are (issue 25: 17,400 distinct 64 KB
//! `x-api-key` values took a server from 7.6 MB to 1.1 GB). Floods of distinct 64 KiB header
//! and bearer keys through the layer leave the process's resident memory within a few MB of
//! where it started. Its own test binary, so no other test's memory counts.

use std::convert::Infallible;

use hotlimit::{Gcra, Keyed, Rate};
use hotlimit_tower::{Bearer, HeaderKey, Policy, RateLimitLayer};
use http::{Request, Response};
use tower::{service_fn, Layer, Service, ServiceExt};

/// The process's resident set, in bytes (`VmRSS` of `/proc/self/status`).
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// Sends `n` requests through `svc`, request `i` with header `name` set to a distinct 64 KiB
/// value built by `value(i)`.
async fn flood<S>(svc: S, n: u32, name: &'static str, value: impl Fn(&str) -> String)
where
    S: Service<Request<String>, Response = Response<hotlimit_tower::ResponseBody<String>>> + Clone,
    S::Error: std::fmt::Debug,
{
    let mut filler = "x".repeat(64 * 1024 - 16);
    for i in 0..n {
        filler.replace_range(..10, &format!("{i:010}"));
        let req = Request::get("/")
            .header(name, value(&filler))
            .body(String::new())
            .unwrap();
        let resp = svc.clone().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), 200);
    }
}

#[tokio::test(flavor = "current_thread")]
async fn long_keys_flood_without_growing_the_process() {
    const N: u32 = 2_000; // 128 MiB of distinct keys per flood
    let hello = service_fn(|_: Request<String>| async {
        Ok::<_, Infallible>(Response::new(String::from("ok")))
    });
    let per_key = Keyed::<String, Gcra>::gcra(Rate::per_second(1).unwrap())
        .build()
        .unwrap();
    let per_token = Keyed::<String, Gcra>::gcra(Rate::per_second(1).unwrap())
        .build()
        .unwrap();
    let by_key = RateLimitLayer::new(Policy::new(
        "per-key",
        per_key,
        HeaderKey::new("x-api-key").unwrap(),
    ))
    .unwrap()
    .layer(hello);
    let by_token = RateLimitLayer::new(Policy::new("per-token", per_token, Bearer))
        .unwrap()
        .layer(hello);
    // One round first, so that allocator arenas and the maps' first tables are counted in the
    // baseline.
    flood(by_key.clone(), 50, "x-api-key", |v| format!("warm{v}")).await;
    flood(by_token.clone(), 50, "authorization", |v| {
        format!("Bearer warm{v}")
    })
    .await;
    let before = rss();
    flood(by_key, N, "x-api-key", str::to_owned).await;
    flood(by_token, N, "authorization", |v| format!("Bearer {v}")).await;
    let grown = rss().saturating_sub(before);
    // Stored whole, the keys alone would be 256 MiB. Digested: 4,000 entries of about 100
    // bytes each, plus the maps' tables.
    assert!(
        grown < 16 << 20,
        "resident memory grew by {} MiB",
        grown >> 20
    );
}
