//! The layer's own cost per request: `oneshot` on a trivial service (its future is ready at
//! once, polled without a runtime), with no limiter, with this layer (global key; per client IP
//! with headers, and with the legacy headers too) and with `tower-governor` (per client IP,
//! without and with its headers), every request admitted.
//!
//!     cargo bench -p hotlimit-tower --bench layer
#![allow(missing_docs)]

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use axum::body::Body;
use axum::extract::ConnectInfo;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use hotlimit::{Gcra, Keyed, Rate};
use hotlimit_tower::{Global, PeerIp, Policy, RateLimitLayer};
use http::{Request, Response};
use tower::{service_fn, Layer, Service, ServiceExt};
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::GovernorLayer;

/// Polls a future that is ready at once (every service here answers synchronously).
fn now<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("the benchmarked services are synchronous"),
    }
}

fn request(i: u32) -> Request<Body> {
    let mut req = Request::get("/").body(Body::empty()).unwrap();
    // 256 clients.
    let ip = IpAddr::from([10, 0, 0, i as u8]);
    req.extensions_mut()
        .insert(ConnectInfo(SocketAddr::new(ip, 40_000)));
    req
}

fn trivial() -> impl Service<Request<Body>, Response = Response<Body>, Error = Infallible> + Clone {
    service_fn(|_req: Request<Body>| async { Ok::<_, Infallible>(Response::new(Body::empty())) })
}

fn run<S>(c: &mut Criterion, name: &str, svc: S)
where
    S: Service<Request<Body>, Error = Infallible> + Clone,
{
    let mut group = c.benchmark_group("layer");
    group.throughput(Throughput::Elements(1));
    let mut i = 0u32;
    group.bench_function(name, |b| {
        b.iter(|| {
            i = i.wrapping_add(1);
            let resp = now(svc.clone().oneshot(request(i)));
            black_box(resp.is_ok())
        })
    });
    group.finish();
}

fn bench(c: &mut Criterion) {
    // Every request admitted: a rate no benchmark reaches.
    let rate = || Rate::per_second(1_000_000_000).unwrap();
    run(c, "none", trivial());

    let global =
        RateLimitLayer::new(Policy::new("global", Gcra::new(rate()).unwrap(), Global)).unwrap();
    run(c, "hotlimit-tower global", global.layer(trivial()));

    let per_ip = Keyed::<IpAddr, Gcra>::gcra(rate()).build().unwrap();
    let layer = RateLimitLayer::new(Policy::new("per-ip", per_ip, PeerIp::new())).unwrap();
    run(c, "hotlimit-tower per-ip", layer.layer(trivial()));

    let per_ip = Keyed::<IpAddr, Gcra>::gcra(rate()).build().unwrap();
    let layer = RateLimitLayer::builder()
        .policy(Policy::new("per-ip", per_ip, PeerIp::new()))
        .legacy_headers(true)
        .build()
        .unwrap();
    run(c, "hotlimit-tower per-ip +legacy", layer.layer(trivial()));

    let config = GovernorConfigBuilder::default()
        .per_nanosecond(1)
        .burst_size(u32::MAX)
        .finish()
        .unwrap();
    let governor = GovernorLayer {
        config: std::sync::Arc::new(config),
    };
    run(c, "tower-governor per-ip", governor.layer(trivial()));

    let config = GovernorConfigBuilder::default()
        .per_nanosecond(1)
        .burst_size(u32::MAX)
        .use_headers()
        .finish()
        .unwrap();
    let governor = GovernorLayer {
        config: std::sync::Arc::new(config),
    };
    run(
        c,
        "tower-governor per-ip +headers",
        governor.layer(trivial()),
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
