//! The rows compared by `benches/layer.rs` (criterion) and `examples/layer_callgrind.rs`
//! (instruction counts): a trivial axum-bodied service with no limiter, the same service
//! answering with two fixed rate-limit fields (what putting any two fields on its empty header
//! map costs: the floor of every row that sends fields), with this layer (global; global with
//! a remaining count that changes on every response, so no response repeats the one before;
//! per peer IP with the default table, `IntKeyed`, and with `Keyed`; per IP with the legacy
//! headers too), and with `tower-governor` (per IP, without and with its headers), every
//! request admitted.

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use axum::body::Body;
use axum::extract::ConnectInfo;
use hotlimit::{Gcra, Keyed, Rate};
use hotlimit_tower::{Global, PeerIp, Policy, RateLimitLayer};
use http::{HeaderName, HeaderValue, Request, Response};
use tower::{service_fn, Layer, Service, ServiceExt};
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::GovernorLayer;

/// Polls a future that is ready at once (every service here answers synchronously).
pub(crate) fn now<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("the benchmarked services are synchronous"),
    }
}

/// A request from one of 256 clients, with the peer address axum would attach.
pub(crate) fn request(i: u32) -> Request<Body> {
    let mut req = Request::get("/").body(Body::empty()).unwrap();
    let ip = IpAddr::from([10, 0, 0, i as u8]);
    req.extensions_mut()
        .insert(ConnectInfo(SocketAddr::new(ip, 40_000)));
    req
}

/// One request through `svc`: whether it was admitted.
#[inline(always)]
pub(crate) fn one<S, B>(svc: &S, i: u32) -> bool
where
    S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Clone,
{
    now(svc.clone().oneshot(request(i))).is_ok_and(|r| r.status() == 200)
}

fn trivial() -> impl Service<Request<Body>, Response = Response<Body>, Error = Infallible> + Clone {
    service_fn(|_req: Request<Body>| async { Ok::<_, Infallible>(Response::new(Body::empty())) })
}

/// The trivial service, its response carrying two fixed fields, inserted as a layer would.
fn trivial_with_fields(
) -> impl Service<Request<Body>, Response = Response<Body>, Error = Infallible> + Clone {
    service_fn(|_req: Request<Body>| async {
        let mut resp = Response::new(Body::empty());
        let h = resp.headers_mut();
        h.insert(
            HeaderName::from_static("ratelimit-policy"),
            HeaderValue::from_static(r#""per-ip";q=1000000000;w=1"#),
        );
        h.insert(
            HeaderName::from_static("ratelimit"),
            HeaderValue::from_static(r#""per-ip";r=999999999;t=1"#),
        );
        Ok::<_, Infallible>(resp)
    })
}

/// What to do with each row.
pub(crate) trait Row {
    fn row<S, B>(&mut self, name: &str, svc: S)
    where
        S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Clone;
}

/// The row names, in order.
pub(crate) const ROWS: [&str; 9] = [
    "none",
    "none +fields",
    "hotlimit-tower global",
    "hotlimit-tower global, r varies",
    "hotlimit-tower per-ip",
    "hotlimit-tower per-ip Keyed",
    "hotlimit-tower per-ip +legacy",
    "tower-governor per-ip",
    "tower-governor per-ip +headers",
];

/// Builds row `name` and hands it to `f`.
pub(crate) fn with_row(name: &str, f: &mut impl Row) {
    // Every request admitted: a rate no benchmark reaches.
    let rate = || Rate::per_second(1_000_000_000).unwrap();
    let per_ip = || Keyed::<IpAddr, Gcra>::gcra(rate()).build().unwrap();
    // A tower-governor row: the same per-IP config, `$extra` applied to its builder (it may
    // change the builder's type, hence a macro).
    macro_rules! governor_row {
        (|$b:ident| $extra:expr) => {{
            let mut builder = GovernorConfigBuilder::default();
            let $b = builder.per_nanosecond(1).burst_size(u32::MAX);
            let config = $extra.finish().unwrap();
            f.row(
                name,
                GovernorLayer {
                    config: Arc::new(config),
                }
                .layer(trivial()),
            )
        }};
    }
    match name {
        "none" => f.row(name, trivial()),
        "none +fields" => f.row(name, trivial_with_fields()),
        "hotlimit-tower global" => {
            let g = Gcra::new(rate()).unwrap();
            let layer = RateLimitLayer::new(Policy::new("global", g, Global)).unwrap();
            f.row(name, layer.layer(trivial()));
        }
        "hotlimit-tower global, r varies" => {
            // A burst no benchmark spends, refilled at 1 per second: r falls by one on every
            // response, so the response's RateLimit value is written anew each time.
            let g = Gcra::builder(Rate::per_second(1).unwrap())
                .burst(1_000_000_000)
                .build()
                .unwrap();
            let layer = RateLimitLayer::new(Policy::new("global", g, Global)).unwrap();
            f.row(name, layer.layer(trivial()));
        }
        "hotlimit-tower per-ip" => {
            // The per-IP default: PeerIp's policy, over an IntKeyed<IpAddr>.
            let layer =
                RateLimitLayer::new(PeerIp::new().policy("per-ip", rate()).unwrap()).unwrap();
            f.row(name, layer.layer(trivial()));
        }
        "hotlimit-tower per-ip Keyed" => {
            let layer =
                RateLimitLayer::new(Policy::new("per-ip", per_ip(), PeerIp::new())).unwrap();
            f.row(name, layer.layer(trivial()));
        }
        "hotlimit-tower per-ip +legacy" => {
            let layer = RateLimitLayer::builder()
                .policy(PeerIp::new().policy("per-ip", rate()).unwrap())
                .legacy_headers(true)
                .build()
                .unwrap();
            f.row(name, layer.layer(trivial()));
        }
        "tower-governor per-ip" => governor_row!(|b| b),
        "tower-governor per-ip +headers" => governor_row!(|b| b.use_headers()),
        other => panic!("no row {other}"),
    }
}
