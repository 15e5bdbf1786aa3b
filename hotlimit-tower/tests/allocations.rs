//! The admitted path allocates nothing (issue 25, point 6): a counting global allocator (this
//! test binary's own, `stats_alloc`) counts the heap allocations of requests through the layer and of the
//! same requests through the inner service alone, after a warm-up (each client's key, each
//! thread's header arena); the difference is zero. The inner service answers the way an
//! axum handler does, with a `Content-Type`, so its header map has room for the layer's two
//! fields. On an empty map, `http`'s first insert allocates the map itself (its index and its
//! entries), whoever inserts: there the layer allocates those two and nothing else.

use std::alloc::System;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use hotlimit::{Gcra, GcraPair, Keyed, Rate};
use hotlimit_tower::{Global, HeaderKey, PeerIp, Policy, PolicyPair, RateLimitLayer};
use http::header::CONTENT_TYPE;
use http::{HeaderName, HeaderValue, Request, Response};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};
use tower::{service_fn, Layer, Service, ServiceExt};

/// The system allocator, counting (this binary runs one test: every count is its own).
#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The allocations `f` makes.
fn allocations(f: impl FnOnce()) -> u64 {
    let region = Region::new(ALLOCATOR);
    f();
    let change = region.change();
    (change.allocations + change.reallocations) as u64
}

/// Polls a future that is ready at once (every service here answers synchronously).
fn now<F: Future>(f: F) -> F::Output {
    match pin!(f)
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("the services here are synchronous"),
    }
}

/// The answer of an axum handler: a body and a `Content-Type`.
fn handler() -> impl Service<Request<()>, Response = Response<()>, Error = Infallible> + Clone {
    service_fn(|_: Request<()>| async {
        let mut resp = Response::new(());
        resp.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        Ok::<_, Infallible>(resp)
    })
}

/// `n` requests from 16 clients, each with an API key, built before anything is counted.
fn requests(n: usize) -> Vec<Request<()>> {
    (0..n)
        .map(|i| {
            let mut req = Request::get("/")
                .header("x-api-key", format!("key-{}", i % 16))
                .body(())
                .unwrap();
            req.extensions_mut().insert(SocketAddr::new(
                IpAddr::from([10, 0, 0, (i % 16) as u8]),
                4000,
            ));
            req
        })
        .collect()
}

/// The allocations of `n` admitted requests through `svc`, after `n` to warm it.
fn admitted<S>(svc: &S, n: usize) -> u64
where
    S: Service<Request<()>, Error = Infallible> + Clone,
    S::Response: std::fmt::Debug,
{
    for req in requests(n) {
        now(svc.clone().oneshot(req)).unwrap();
    }
    let reqs = requests(n);
    allocations(|| {
        for req in reqs {
            // Dropped inside: the response is sent and gone, as a server's would be.
            now(svc.clone().oneshot(req)).unwrap();
        }
    })
}

#[test]
fn the_admitted_path_allocates_nothing() {
    const N: usize = 2_000;
    let rate = || Rate::per_second(1_000_000_000).unwrap();
    let bare = admitted(&handler(), N);
    let layers = [
        // The per-IP default (IntKeyed), a Keyed per-IP table, a global limit.
        RateLimitLayer::new(PeerIp::new().policy("per-ip", rate()).unwrap()).unwrap(),
        RateLimitLayer::new(Policy::new(
            "per-ip",
            Keyed::<IpAddr, Gcra>::gcra(rate()).build().unwrap(),
            PeerIp::new(),
        ))
        .unwrap(),
        RateLimitLayer::new(Policy::new("global", Gcra::new(rate()).unwrap(), Global)).unwrap(),
        // Two policies (previewed, then decided), and a pair on one key.
        RateLimitLayer::builder()
            .policy(PeerIp::new().policy("per-ip", rate()).unwrap())
            .policy(Policy::new("global", Gcra::new(rate()).unwrap(), Global))
            .build()
            .unwrap(),
        RateLimitLayer::builder()
            .pair(PolicyPair::new(
                "s",
                "h",
                Keyed::<String, GcraPair>::gcra_pair(rate(), rate())
                    .build()
                    .unwrap(),
                HeaderKey::new("x-api-key").unwrap(),
            ))
            .build()
            .unwrap(),
    ];
    for (i, layer) in layers.iter().enumerate() {
        let with = admitted(&layer.layer(handler()), N);
        // The header key is a String: one allocation per request is the key itself.
        let keys = if i == 4 { N as u64 } else { 0 };
        assert_eq!(
            with,
            bare + keys,
            "layer {i}: {with} allocations against {bare} without it"
        );
        assert_eq!(layer.counters()[0].allowed, 2 * N as u64);
    }
    // In this one test: the allocator counts every thread of the binary.
    on_an_empty_header_map_only_the_map_itself_is_allocated();
}

/// On a response with no header, the layer allocates the map's own two allocations (as any
/// first insert does) and nothing else.
fn on_an_empty_header_map_only_the_map_itself_is_allocated() {
    const N: usize = 2_000;
    let rate = || Rate::per_second(1_000_000_000).unwrap();
    // A handler that sets no header, and the same handler inserting two fields itself.
    let empty = || service_fn(|_: Request<()>| async { Ok::<_, Infallible>(Response::new(())) });
    let two_fields = service_fn(|_: Request<()>| async {
        // Names built once (a `&str` name is copied into the map on insert).
        static POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
        static STATE: HeaderName = HeaderName::from_static("ratelimit");
        let mut resp = Response::new(());
        let h = resp.headers_mut();
        h.insert(POLICY.clone(), HeaderValue::from_static("\"p\";q=1;w=1"));
        h.insert(STATE.clone(), HeaderValue::from_static("\"p\";r=1;t=1"));
        Ok::<_, Infallible>(resp)
    });
    let floor = admitted(&two_fields, N);
    assert_eq!(floor, admitted(&empty(), N) + 2 * N as u64, "two per map");
    let layer = RateLimitLayer::new(PeerIp::new().policy("per-ip", rate()).unwrap()).unwrap();
    assert_eq!(admitted(&layer.layer(empty()), N), floor);
}
