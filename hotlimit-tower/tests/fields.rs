//! The rate-limit fields tell the truth (issue 25, points 2, 3 and 8), parsed as structured
//! fields: a burst is the quota (`q` = burst, `w` = its refill time), `r` is never above `q`,
//! `t` is the effective window of draft-ietf-httpapi-ratelimit-headers-11 (the seconds within
//! which no more than `r` can be used: until one more unit comes, rounded up) and never above
//! `w`, `Retry-After` is never earlier than the refusing policy's `t`, a client that follows
//! the fields is never refused, and every response names every policy that applies to it,
//! whatever ended the request.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hotlimit::{Clock, Gcra, Keyed, ManualClock, Rate, SlidingLog, SlidingWindow};
use hotlimit_tower::{Global, HeaderKey, MissingKey, PeerIp, Policy, RateLimitLayer};
use http::{Request, Response, StatusCode};
use tower::{service_fn, Layer, Service, ServiceExt};

mod common;

use common::{items, policies, state};

type Req = Request<String>;

fn inner() -> impl Service<Req, Response = Response<String>, Error = Infallible> + Clone {
    service_fn(|_: Req| async { Ok::<_, Infallible>(Response::new(String::from("hello"))) })
}

/// A request from `ip`, with `x-api-key: key` if given.
fn request(ip: [u8; 4], key: Option<&str>) -> Req {
    let mut req = Request::get("/").body(String::new()).unwrap();
    req.extensions_mut().insert(SocketAddr::from((ip, 4000)));
    if let Some(k) = key {
        req.headers_mut().insert("x-api-key", k.parse().unwrap());
    }
    req
}

#[tokio::test]
async fn a_burst_is_the_quota_and_its_refill_time_the_window() {
    // The issue's per-IP policy: 10 per second, bursts of 20. It used to say
    // `"per-ip";q=10;w=1` beside `r=19`.
    let clock = ManualClock::new();
    let per_ip: Keyed<IpAddr, Gcra, _> = Keyed::gcra(Rate::per_second(10).unwrap())
        .burst(20)
        .clock(clock.clone())
        .build()
        .unwrap();
    let svc = RateLimitLayer::new(Policy::new("per-ip", per_ip, PeerIp::new()))
        .unwrap()
        .layer(inner());
    for r in (0..20).rev() {
        let resp = svc
            .clone()
            .oneshot(request([192, 0, 2, 1], None))
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["ratelimit-policy"], r#""per-ip";q=20;w=2"#);
        // One more permit every 100 ms: t = 1 however empty the bucket is.
        assert_eq!(
            resp.headers()["ratelimit"],
            format!(r#""per-ip";r={r};t=1"#).as_str()
        );
    }
    let denied = svc
        .clone()
        .oneshot(request([192, 0, 2, 1], None))
        .await
        .unwrap();
    assert_eq!(denied.status(), 429);
    assert_eq!(denied.headers()["ratelimit"], r#""per-ip";r=0;t=1"#);
    assert_eq!(denied.headers()["retry-after"], "1");
    // Two seconds later the bucket is full again: this request takes one, the 20th comes back
    // within 100 ms.
    clock.advance(Duration::from_secs(2));
    let full = svc
        .clone()
        .oneshot(request([192, 0, 2, 1], None))
        .await
        .unwrap();
    assert_eq!(full.headers()["ratelimit"], r#""per-ip";r=19;t=1"#);
}

#[tokio::test]
async fn a_window_reports_its_window() {
    let clock = ManualClock::new();
    let w = SlidingWindow::builder(Rate::per_minute(100).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    let svc = RateLimitLayer::new(Policy::new("minute", w, Global))
        .unwrap()
        .layer(inner());
    let resp = svc.oneshot(Request::new(String::new())).await.unwrap();
    // A grant is counted until its 6 s bucket leaves the minute: the window is 66 s, and t
    // (66 s − 1 ns, rounded up) stays within it.
    assert_eq!(resp.headers()["ratelimit-policy"], r#""minute";q=100;w=66"#);
    assert_eq!(resp.headers()["ratelimit"], r#""minute";r=99;t=66"#);
}

#[tokio::test]
async fn quoted_names_round_trip_through_sfv() {
    let g = Gcra::builder(Rate::per_second(1).unwrap())
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let svc = RateLimitLayer::new(Policy::new(r#"a "quoted" \ name"#, g, Global))
        .unwrap()
        .layer(inner());
    let resp = svc.oneshot(Request::new(String::new())).await.unwrap();
    assert_eq!(
        items(&resp.headers()["ratelimit"])[0].0,
        r#"a "quoted" \ name"#
    );
}

/// A layer of three policies on `clock`: per IP (2 per second), per API key (3 per second;
/// keyless requests `missing`), global (4 per second).
fn three(clock: &ManualClock, missing: MissingKey<String>) -> RateLimitLayer {
    let per_ip: Keyed<IpAddr, Gcra, _> = Keyed::gcra(Rate::per_second(2).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    let per_key: Keyed<String, Gcra, _> = Keyed::gcra(Rate::per_second(3).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    let global = Gcra::builder(Rate::per_second(4).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    RateLimitLayer::builder()
        .policy(Policy::new("per-ip", per_ip, PeerIp::new()))
        .policy(
            Policy::new("per-key", per_key, HeaderKey::new("x-api-key").unwrap())
                .on_missing_key(missing),
        )
        .policy(Policy::new("global", global, Global))
        .build()
        .unwrap()
}

/// `(status, RateLimit items)` of one request.
async fn send<S>(
    svc: &S,
    ip: [u8; 4],
    key: Option<&str>,
) -> (StatusCode, Vec<(String, i64, Option<i64>)>)
where
    S: Service<Req, Response = Response<hotlimit_tower::ResponseBody<String>>> + Clone,
    S::Error: std::fmt::Debug,
{
    let resp = svc.clone().oneshot(request(ip, key)).await.unwrap();
    let listed: Vec<String> = policies(&resp.headers()["ratelimit-policy"])
        .into_iter()
        .map(|(n, _, _)| n)
        .collect();
    assert_eq!(listed, ["per-ip", "per-key", "global"]);
    (resp.status(), state(&resp.headers()["ratelimit"]))
}

fn item(name: &str, r: i64, t: Option<i64>) -> (String, i64, Option<i64>) {
    (name.to_owned(), r, t)
}

#[tokio::test]
async fn every_response_names_every_policy_that_applies() {
    // Issue 25: a 200 listed both policies, a 429 only the one that refused, the 400 none.
    let clock = ManualClock::new();
    let layer = three(&clock, MissingKey::Reject(StatusCode::UNAUTHORIZED));
    let svc = layer.layer(inner());
    let a = [10, 0, 0, 1];
    assert_eq!(
        send(&svc, a, Some("k1")).await,
        (
            StatusCode::OK,
            vec![
                item("per-ip", 1, Some(1)),
                item("per-key", 2, Some(1)),
                item("global", 3, Some(1))
            ]
        )
    );
    // No key: 401, nothing charged; the keyless policy says r=0, the others how they stand.
    assert_eq!(
        send(&svc, a, None).await,
        (
            StatusCode::UNAUTHORIZED,
            vec![
                item("per-ip", 1, Some(1)),
                item("per-key", 0, None),
                item("global", 3, Some(1))
            ]
        )
    );
    assert_eq!(send(&svc, a, Some("k1")).await.0, StatusCode::OK);
    // Per IP refuses: the others are reported uncharged.
    assert_eq!(
        send(&svc, a, Some("k1")).await,
        (
            StatusCode::TOO_MANY_REQUESTS,
            vec![
                item("per-ip", 0, Some(1)),
                item("per-key", 1, Some(1)),
                item("global", 2, Some(1))
            ]
        )
    );
    // Global refuses a fresh IP and key: per-ip and per-key are reported full, each with the
    // time one permit takes to come back once spent (500 and 333 ms: t=1).
    assert_eq!(
        send(&svc, [10, 0, 0, 2], Some("k2")).await.0,
        StatusCode::OK
    );
    assert_eq!(
        send(&svc, [10, 0, 0, 3], Some("k3")).await.0,
        StatusCode::OK
    );
    assert_eq!(
        send(&svc, [10, 0, 0, 4], Some("k4")).await,
        (
            StatusCode::TOO_MANY_REQUESTS,
            vec![
                item("per-ip", 2, Some(1)),
                item("per-key", 3, Some(1)),
                item("global", 0, Some(1))
            ]
        )
    );
    let c = layer.counters();
    assert_eq!(
        c.iter()
            .map(|c| (c.allowed, c.denied, c.missing_key))
            .collect::<Vec<_>>(),
        [(4, 1, 0), (4, 0, 1), (4, 1, 0)]
    );

    // A policy that lets keyless requests through does not apply to them: not in RateLimit.
    let svc = three(&ManualClock::new(), MissingKey::Allow).layer(inner());
    assert_eq!(
        send(&svc, a, None).await,
        (
            StatusCode::OK,
            vec![item("per-ip", 1, Some(1)), item("global", 3, Some(1))]
        )
    );
}

#[tokio::test]
async fn random_traffic_never_gets_an_untruthful_field() {
    // Three kinds of limiter, sub-second and multi-second windows, bursts above and below the
    // limit, costs of 1 to 4, on random gaps: every response is checked.
    let clock = ManualClock::new();
    let burst: Keyed<IpAddr, Gcra, _> =
        Keyed::gcra(Rate::new(3, Duration::from_millis(700)).unwrap())
            .burst(7)
            .clock(clock.clone())
            .build()
            .unwrap();
    let log = SlidingLog::builder(Rate::new(5, Duration::from_millis(1500)).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    let window = SlidingWindow::builder(Rate::new(6, Duration::from_secs(3)).unwrap())
        .buckets(4)
        .clock(clock.clone())
        .build()
        .unwrap();
    let layer = RateLimitLayer::builder()
        .policy(Policy::new("burst", burst, PeerIp::new()).cost(|p| {
            p.headers
                .get("x-cost")
                .map_or(1, |v| v.to_str().unwrap().parse().unwrap())
        }))
        .policy(Policy::new("log", log, Global))
        .policy(Policy::new("window", window, Global))
        .build()
        .unwrap();
    let svc = layer.layer(inner());
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut admitted, mut refused) = (0, 0);
    for _ in 0..2_000 {
        clock.advance(Duration::from_nanos(next() % 400_000_000));
        let mut req = request([10, 0, 0, (next() % 3) as u8], None);
        req.headers_mut()
            .insert("x-cost", (1 + next() % 4).to_string().parse().unwrap());
        let resp = svc.clone().oneshot(req).await.unwrap();
        let h = resp.headers();
        let quotas = policies(&h["ratelimit-policy"]);
        for (name, r, t) in state(&h["ratelimit"]) {
            let &(_, q, w) = quotas.iter().find(|(n, _, _)| *n == name).unwrap();
            assert!(r <= q, "{name}: r={r} > q={q}");
            // Every policy that decided or was read has an effective window (only a keyless
            // request has none, and this layer has no keyless policy).
            let t = t.unwrap_or_else(|| panic!("{name}: no t"));
            assert!((1..=w).contains(&t), "{name}: r={r} t={t} w={w}");
        }
        if resp.status() == StatusCode::OK {
            admitted += 1;
            continue;
        }
        refused += 1;
        // Retry-After is never earlier than the refusing policy's t (the one with r below the
        // request's cost: r = 0 for cost 1, the smallest t otherwise).
        let retry: i64 = h["retry-after"].to_str().unwrap().parse().unwrap();
        let least_t = state(&h["ratelimit"])
            .into_iter()
            .filter_map(|(_, _, t)| t)
            .min()
            .unwrap();
        assert!(retry >= least_t, "Retry-After {retry} before t={least_t}");
    }
    assert!(admitted > 200 && refused > 200, "{admitted} / {refused}");
}

#[tokio::test]
async fn a_client_that_follows_the_fields_is_never_refused() {
    // Draft-11's client rule: no more than `r` within `t`. A client that sends while r > 0 and
    // waits t once r = 0 is never refused (t is never short of the time until one more unit),
    // and still gets most of the rate (t is not long either).
    let clock = ManualClock::new();
    let gcra: Keyed<IpAddr, Gcra, _> = Keyed::gcra(Rate::per_second(10).unwrap())
        .burst(20)
        .clock(clock.clone())
        .build()
        .unwrap();
    let slow = Gcra::builder(Rate::new(3, Duration::from_secs(7)).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    let log = SlidingLog::builder(Rate::new(5, Duration::from_millis(1500)).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    let window = SlidingWindow::builder(Rate::new(6, Duration::from_secs(3)).unwrap())
        .buckets(4)
        .clock(clock.clone())
        .build()
        .unwrap();
    // (layer, the limiter's rate per second)
    let layers = [
        (
            RateLimitLayer::new(Policy::new("p", gcra, PeerIp::new())).unwrap(),
            10.0,
        ),
        (
            RateLimitLayer::new(Policy::new("p", slow, Global)).unwrap(),
            3.0 / 7.0,
        ),
        (
            RateLimitLayer::new(Policy::new("p", log, Global)).unwrap(),
            5.0 / 1.5,
        ),
        (
            RateLimitLayer::new(Policy::new("p", window, Global)).unwrap(),
            2.0,
        ),
    ];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for (layer, rate) in layers {
        let svc = layer.layer(inner());
        let start = clock.now();
        let mut sent = 0u32;
        while clock.now() - start < 60_000_000_000 {
            let resp = svc
                .clone()
                .oneshot(request([192, 0, 2, 9], None))
                .await
                .unwrap();
            assert_eq!(resp.status(), StatusCode::OK, "refused after {sent}");
            sent += 1;
            let [(_, r, Some(t))] = state(&resp.headers()["ratelimit"])[..] else {
                panic!("one item with a t")
            };
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Sometimes idle a little whatever the fields say.
            let idle = Duration::from_millis(if x.is_multiple_of(4) { x % 700 } else { 0 });
            let wait = if r > 0 {
                Duration::ZERO
            } else {
                Duration::from_secs(t as u64)
            };
            clock.advance(wait + idle);
        }
        let got = f64::from(sent) / 60.0;
        assert!(got >= rate / 2.0, "{got:.2}/s of {rate:.2}/s");
    }
}
