//! Real servers: axum on 127.0.0.1:0 served with `into_make_service_with_connect_info`, and a
//! real HTTP client (hyper-util's). 50 concurrent requests from one IP against a burst of 5:
//! exactly 5 admitted; two client IPs (127.0.0.1 and 127.0.0.2) are limited independently; a
//! forged leftmost `X-Forwarded-For` does not buy a fresh limit; a flood of distinct client
//! IPs leaves the key table at its capacity, and does not push out the clients that keep
//! coming back. Each test stops its server and is bounded in time.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use hotlimit::{Gcra, Keyed, Rate};
use hotlimit_tower::{ForwardedIp, KeyExtractor, PeerIp, Policy, RateLimitLayer};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A running server and how to stop it.
struct Running {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Running {
    async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap();
    }
}

/// Serves `GET /` behind `layer` on a free loopback port.
async fn serve(layer: RateLimitLayer) -> Running {
    let app = Router::new()
        .route("/", get(|| async { "hello" }))
        .layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    Running { addr, stop, task }
}

/// Serves `GET /` behind `layer` the way a user who forgot `ConnectInfo` would: with
/// `into_make_service()`, so no request carries its peer address.
async fn serve_without_connect_info(layer: RateLimitLayer) -> Running {
    let app = Router::new()
        .route("/", get(|| async { "hello" }))
        .layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        axum::serve(listener, app.into_make_service())
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    Running { addr, stop, task }
}

/// A client whose connections come from `local` (any 127.x address is loopback on Linux).
fn client(local: [u8; 4]) -> Client<HttpConnector, Empty<Bytes>> {
    let mut connector = HttpConnector::new();
    connector.set_local_address(Some(IpAddr::from(local)));
    Client::builder(TokioExecutor::new()).build(connector)
}

/// GET / with extra headers: (status, RateLimit header, body).
async fn get_root(
    c: &Client<HttpConnector, Empty<Bytes>>,
    addr: SocketAddr,
    headers: &[(&str, String)],
) -> (u16, String) {
    let mut req = http::Request::get(format!("http://{addr}/"));
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let resp = c.request(req.body(Empty::new()).unwrap()).await.unwrap();
    let status = resp.status().as_u16();
    let rl = resp
        .headers()
        .get("ratelimit")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    resp.into_body().collect().await.unwrap();
    (status, rl)
}

/// Runs `f` with a 60 s bound.
async fn bounded<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("the test took over 60 s")
}

/// A burst of 5 that refills one permit per 12 s: within a test, exactly 5.
fn five() -> Rate {
    Rate::per_minute(5).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_from_one_ip_admit_exactly_five() {
    let per_ip = Keyed::<IpAddr, Gcra>::gcra(five()).build().unwrap();
    let layer = RateLimitLayer::new(Policy::new("per-ip", per_ip, PeerIp::new())).unwrap();
    let counters = layer.clone();
    let server = serve(layer).await;
    let addr = server.addr;
    let statuses = bounded(async {
        let c = client([127, 0, 0, 1]);
        let calls: Vec<_> = (0..50)
            .map(|_| {
                let c = c.clone();
                tokio::spawn(async move { get_root(&c, addr, &[]).await.0 })
            })
            .collect();
        let mut out = Vec::new();
        for call in calls {
            out.push(call.await.unwrap());
        }
        out
    })
    .await;
    server.stop().await;
    assert_eq!(statuses.iter().filter(|&&s| s == 200).count(), 5);
    assert_eq!(statuses.iter().filter(|&&s| s == 429).count(), 45);
    let c = &counters.counters()[0];
    assert_eq!((c.allowed, c.denied), (5, 45));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_are_limited_independently() {
    let per_ip = Keyed::<IpAddr, Gcra>::gcra(five()).build().unwrap();
    let server =
        serve(RateLimitLayer::new(Policy::new("per-ip", per_ip, PeerIp::new())).unwrap()).await;
    let addr = server.addr;
    bounded(async {
        let (a, b) = (client([127, 0, 0, 1]), client([127, 0, 0, 2]));
        for r in (0..5).rev() {
            let (status, rl) = get_root(&a, addr, &[]).await;
            assert_eq!(status, 200);
            // t: one more permit comes within 12 s, rounded up (the clock is real).
            let want = format!(r#""per-ip";r={r};t=12"#);
            assert_eq!(rl, want);
        }
        assert_eq!(get_root(&a, addr, &[]).await.0, 429);
        for _ in 0..5 {
            assert_eq!(get_root(&b, addr, &[]).await.0, 200);
        }
        assert_eq!(get_root(&b, addr, &[]).await.0, 429);
    })
    .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_forwarded_for_gets_no_fresh_limit() {
    // The loopback peer plays our proxy; it appended the real client, 203.0.113.9.
    let key = ForwardedIp::trusted_proxies(["127.0.0.0/8"]).unwrap();
    let per_client = Keyed::<IpAddr, Gcra>::gcra(five()).build().unwrap();
    let server =
        serve(RateLimitLayer::new(Policy::new("per-client", per_client, key)).unwrap()).await;
    let addr = server.addr;
    bounded(async {
        let c = client([127, 0, 0, 1]);
        let mut admitted = 0;
        for i in 0..20 {
            let forged = format!("198.51.100.{i}, 203.0.113.9");
            if get_root(&c, addr, &[("x-forwarded-for", forged)]).await.0 == 200 {
                admitted += 1;
            }
        }
        assert_eq!(admitted, 5);
        // Another real client behind the proxy still has its own limit.
        let other = ("x-forwarded-for", "203.0.113.10".to_owned());
        assert_eq!(get_root(&c, addr, &[other]).await.0, 200);
    })
    .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_distinct_ips_keeps_the_table_at_its_capacity() {
    let key = ForwardedIp::trusted_proxies(["127.0.0.0/8"]).unwrap();
    let per_client = Arc::new(
        Keyed::<IpAddr, Gcra>::gcra(five())
            .capacity(64)
            .build()
            .unwrap(),
    );
    let layer = RateLimitLayer::new(Policy::new("per-client", per_client.clone(), key)).unwrap();
    let counters = layer.clone();
    let server = serve(layer).await;
    let addr = server.addr;
    let (ok, full) = bounded(async {
        let c = client([127, 0, 0, 1]);
        let (mut ok, mut full) = (0, 0);
        for i in 0..1_000u32 {
            let ip = IpAddr::from([10, (i >> 16) as u8, (i >> 8) as u8, i as u8]);
            match get_root(&c, addr, &[("x-forwarded-for", ip.to_string())])
                .await
                .0
            {
                200 => ok += 1,
                503 => full += 1,
                other => panic!("status {other}"),
            }
            assert!(per_client.len() <= 64);
        }
        (ok, full)
    })
    .await;
    server.stop().await;
    // Every key stays busy for 12 s after its request: the first 64 fit, the rest find the
    // table full (503: the server is full, the clients are not over their limit).
    assert_eq!((ok, full), (64, 936));
    assert_eq!(per_client.len(), 64);
    assert_eq!(counters.counters()[0].denied, 936);
    // The extractor agrees with the server on who the client is.
    let mut req = http::Request::get("/").body(()).unwrap();
    req.headers_mut()
        .insert("x-forwarded-for", "1.2.3.4, 10.0.0.1".parse().unwrap());
    req.extensions_mut()
        .insert(SocketAddr::from(([127, 0, 0, 1], 1)));
    let (parts, ()) = req.into_parts();
    let key = ForwardedIp::trusted_proxies(["127.0.0.0/8"]).unwrap();
    assert_eq!(key.extract(&parts), Some(IpAddr::from([10, 0, 0, 1])));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_connect_info_no_header_chooses_the_key() {
    // The issue's setup: trusted proxies, but the server was not given the peer addresses.
    // Every client used to get a fresh limit from its own X-Forwarded-For; now every request
    // is refused, loudly (500, counted), whatever MissingKey says.
    let key = ForwardedIp::trusted_proxies(["10.0.0.0/8", "127.0.0.1"]).unwrap();
    let per_client = Arc::new(Keyed::<IpAddr, Gcra>::gcra(five()).build().unwrap());
    let forwarded = RateLimitLayer::new(
        Policy::new("per-client", per_client.clone(), key)
            .on_missing_key(hotlimit_tower::MissingKey::Allow),
    )
    .unwrap();
    let peer = RateLimitLayer::new(Policy::new(
        "per-ip",
        Keyed::<IpAddr, Gcra>::gcra(five()).build().unwrap(),
        PeerIp::new(),
    ))
    .unwrap();
    for (layer, n) in [(forwarded, 20u8), (peer, 3)] {
        let counters = layer.clone();
        let server = serve_without_connect_info(layer).await;
        let addr = server.addr;
        bounded(async {
            let c = client([127, 0, 0, 1]);
            for i in 0..n {
                let forged = ("x-forwarded-for", format!("9.9.9.{i}"));
                let (status, _) = get_root(&c, addr, &[forged]).await;
                assert_eq!(status, 500);
            }
        })
        .await;
        server.stop().await;
        let c = &counters.counters()[0];
        assert_eq!((c.refused, c.allowed, c.denied), (u64::from(n), 0, 0));
    }
    // No key was ever created.
    assert_eq!(per_client.len(), 0);
}

/// Issue 26, through a real server: a flood of one-shot client IPs (each asks once, from its
/// own forwarded address) runs while three clients known before it ask once a second, at half
/// their rate. The flood fills the table (some of it is turned away with 503) and churns
/// through it, but every request of the steady clients is served: their keys are idle between
/// requests, and a sweep evicts the flood's idle keys, not theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_new_ips_does_not_push_out_clients_that_keep_coming_back() {
    let key = ForwardedIp::trusted_proxies(["127.0.0.0/8"]).unwrap();
    // 2 per second, burst 4: a flood key is busy for 500 ms; a steady client asking once a
    // second is idle half the time, and counts as coming back for 2 s after a request.
    let per_client = Arc::new(
        Keyed::<IpAddr, Gcra>::gcra(Rate::per_second(2).unwrap())
            .burst(4)
            .capacity(100)
            .build()
            .unwrap(),
    );
    let layer = RateLimitLayer::new(Policy::new("per-client", per_client.clone(), key)).unwrap();
    let server = serve(layer).await;
    let addr = server.addr;
    let steady: Vec<String> = (1..=3).map(|i| format!("192.0.2.{i}")).collect();
    let (served, flood) = bounded(async {
        let c = client([127, 0, 0, 1]);
        for ip in &steady {
            assert_eq!(
                get_root(&c, addr, &[("x-forwarded-for", ip.clone())])
                    .await
                    .0,
                200
            );
        }
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flooders: Vec<_> = (0..8u32)
            .map(|t| {
                let (c, done) = (c.clone(), done.clone());
                tokio::spawn(async move {
                    let (mut sent, mut full) = (0u32, 0u32);
                    while !done.load(std::sync::atomic::Ordering::Relaxed) {
                        let ip = IpAddr::from([10, t as u8, (sent >> 8) as u8, sent as u8]);
                        match get_root(&c, addr, &[("x-forwarded-for", ip.to_string())])
                            .await
                            .0
                        {
                            200 => {}
                            503 => full += 1,
                            other => panic!("flood status {other}"),
                        }
                        sent += 1;
                    }
                    (sent, full)
                })
            })
            .collect();
        let mut served = Vec::new();
        for round in 1..=4u32 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            for ip in &steady {
                let status = get_root(&c, addr, &[("x-forwarded-for", ip.clone())])
                    .await
                    .0;
                served.push((round, ip.clone(), status));
            }
            assert!(per_client.len() <= 100);
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let (mut sent, mut full) = (0, 0);
        for f in flooders {
            let (s, x) = f.await.unwrap();
            sent += s;
            full += x;
        }
        (served, (sent, full))
    })
    .await;
    server.stop().await;
    for (round, ip, status) in &served {
        assert_eq!(*status, 200, "steady client {ip} refused in round {round}");
    }
    let (sent, full) = flood;
    assert!(
        sent >= 2_000,
        "only {sent} flood requests (20 x the capacity wanted)"
    );
    assert!(
        full > 0,
        "the flood never filled the table ({sent} requests)"
    );
    assert!(per_client.len() <= 100);
}
