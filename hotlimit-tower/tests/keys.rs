//! Keys through the layer: axum's `MockConnectInfo` and `MatchedPath`, and the per-IP policy
//! built from a rate (an `IntKeyed<IpAddr>` grouped as the extractor groups).

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};

use hotlimit::{Gcra, Keyed, ManualClock, Rate};
use hotlimit_tower::{PeerIp, Policy, RateLimitLayer};
use http::{Request, Response};
use tower::{service_fn, Layer, Service, ServiceExt};

type Req = Request<String>;

fn inner() -> impl Service<Req, Response = Response<String>, Error = Infallible> + Clone {
    service_fn(|_: Req| async { Ok::<_, Infallible>(Response::new(String::from("hello"))) })
}

/// The tests' usual policy: "per-ip", `limit` per second per peer IP on `clock`.
fn per_ip_policy(
    clock: &ManualClock,
    limit: u64,
) -> Policy<Keyed<IpAddr, Gcra, ManualClock>, PeerIp> {
    let per_ip = Keyed::gcra(Rate::per_second(limit).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    Policy::new("per-ip", per_ip, PeerIp::new())
}

#[tokio::test]
async fn axum_mock_connect_info_and_matched_path_are_keys() {
    use axum::extract::connect_info::MockConnectInfo;
    use axum::routing::get;
    use hotlimit_tower::{KeyExtractor, Route};

    let clock = ManualClock::new();
    let per_ip = RateLimitLayer::new(per_ip_policy(&clock, 1)).unwrap();
    let app = axum::Router::new()
        .route("/", get(|| async { "hi" }))
        .layer(per_ip)
        .layer(MockConnectInfo(SocketAddr::from(([192, 0, 2, 9], 1))));
    let get_root = || Request::get("/").body(axum::body::Body::empty()).unwrap();
    assert_eq!(app.clone().oneshot(get_root()).await.unwrap().status(), 200);
    assert_eq!(app.oneshot(get_root()).await.unwrap().status(), 429);

    // The route key is the matched path, so /users/1 and /users/2 share one limit.
    let per_route = Keyed::<String, Gcra, _>::gcra(Rate::per_second(1).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    let app = axum::Router::new()
        .route("/users/{id}", get(|| async { "user" }))
        .route_layer(RateLimitLayer::new(Policy::new("per-route", per_route, Route)).unwrap());
    let user = |id: u32| {
        Request::get(format!("/users/{id}"))
            .body(axum::body::Body::empty())
            .unwrap()
    };
    assert_eq!(app.clone().oneshot(user(1)).await.unwrap().status(), 200);
    assert_eq!(app.oneshot(user(2)).await.unwrap().status(), 429);
    let (parts, ()) = Request::get("/users/3").body(()).unwrap().into_parts();
    assert_eq!(Route.extract(&parts).as_deref(), Some("GET /users/3"));
}

#[tokio::test]
async fn an_ip_policy_from_a_rate_is_an_int_keyed_table() {
    // Issue 25, point 7: the one-line per-IP policy leads to IntKeyed<IpAddr>, grouped as the
    // extractor groups (IPv6 by its prefix).
    let table = hotlimit::IntKeyed::builder(Rate::per_second(2).unwrap()).clock(ManualClock::new());
    let policy = PeerIp::new()
        .ipv6_prefix(48)
        .unwrap()
        .policy_with("per-ip", table)
        .unwrap();
    assert_eq!(policy.limiter().ipv6_prefix(), 48);
    let svc = RateLimitLayer::new(policy).unwrap().layer(inner());
    let v6 = |s: &str| {
        let mut req = Request::get("/").body(String::new()).unwrap();
        req.extensions_mut()
            .insert(SocketAddr::new(s.parse().unwrap(), 1));
        req
    };
    for _ in 0..2 {
        let ok = svc.clone().oneshot(v6("2001:db8:1:2::1")).await.unwrap();
        assert_eq!(ok.status(), 200);
    }
    // Same /48: the same limit. Another /48: its own.
    assert_eq!(
        svc.clone()
            .oneshot(v6("2001:db8:1:ffff::9"))
            .await
            .unwrap()
            .status(),
        429
    );
    assert_eq!(
        svc.clone()
            .oneshot(v6("2001:db8:2::1"))
            .await
            .unwrap()
            .status(),
        200
    );
    // An IntKeyed key holds 64 bits of an IPv6 address.
    let too_long = PeerIp::new()
        .ipv6_prefix(96)
        .unwrap()
        .policy("p", Rate::per_second(1).unwrap());
    assert_eq!(too_long.unwrap_err().field(), "ipv6_prefix");
    let fwd = hotlimit_tower::ForwardedIp::hops(1)
        .unwrap()
        .policy("per-client", Rate::per_second(1).unwrap())
        .unwrap();
    assert_eq!(fwd.limiter().ipv6_prefix(), 56);
}
