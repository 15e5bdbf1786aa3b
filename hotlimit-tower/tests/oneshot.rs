//! The layer in process, driven with `oneshot` on a `ManualClock`: exact decisions, every
//! header value (parsed as structured fields by `sfv`), `Retry-After` never 0 and never
//! before the real wait, shared state across clones, several policies, dry-run, counters,
//! missing keys, bodies, custom handlers, gRPC, and configuration errors.

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hotlimit::{Decide, Decision, Gcra, Keyed, ManualClock, Quota, Rate};
use hotlimit_tower::{
    Global, HeaderKey, MissingKey, PeerIp, Policy, RateLimitDecision, RateLimitLayer,
    RejectionBody, RejectionKind,
};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use tower::{service_fn, Layer, Service, ServiceExt};

mod common;

use common::{items, params};

type Req = Request<String>;

/// The inner service: echoes whether the layer put a decision in the extensions.
fn inner() -> impl Service<Req, Response = Response<String>, Error = Infallible> + Clone {
    service_fn(|req: Req| async move {
        let text = match req.extensions().get::<RateLimitDecision>() {
            Some(d) => format!(
                "decided allowed={} dry_run={}",
                d.is_allowed(),
                d.is_dry_run()
            ),
            None => "hello".to_owned(),
        };
        Ok::<_, Infallible>(Response::new(text))
    })
}

fn from(ip: [u8; 4]) -> Req {
    let mut req = Request::get("/").body(String::new()).unwrap();
    req.extensions_mut().insert(SocketAddr::from((ip, 4000)));
    req
}

/// A `Gcra` of `rate` on `clock`.
fn gcra_on(clock: &ManualClock, rate: Rate) -> Gcra<ManualClock> {
    Gcra::builder(rate).clock(clock.clone()).build().unwrap()
}

fn per_ip(clock: &ManualClock, limit: u64) -> Keyed<IpAddr, Gcra, ManualClock> {
    Keyed::gcra(Rate::per_second(limit).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// The status `svc` (a clone of it) answers a request from `ip` with.
async fn status_of<S, B>(svc: &S, ip: [u8; 4]) -> StatusCode
where
    S: Service<Req, Response = Response<B>> + Clone,
    S::Error: std::fmt::Debug,
{
    svc.clone().oneshot(from(ip)).await.unwrap().status()
}

/// The tests' usual policy: "per-ip", `limit` per second per peer IP on `clock`.
fn per_ip_policy(
    clock: &ManualClock,
    limit: u64,
) -> Policy<Keyed<IpAddr, Gcra, ManualClock>, PeerIp> {
    Policy::new("per-ip", per_ip(clock, limit), PeerIp::new())
}

async fn body(resp: Response<hotlimit_tower::ResponseBody<String>>) -> String {
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[tokio::test]
async fn exact_decisions_and_headers_per_ip() {
    let clock = ManualClock::new();
    let layer = RateLimitLayer::new(per_ip_policy(&clock, 5)).unwrap();
    let svc = layer.layer(inner());
    for r in (0..5).rev() {
        let resp = svc.clone().oneshot(from([192, 0, 2, 1])).await.unwrap();
        assert_eq!(resp.status(), 200);
        let h = resp.headers();
        assert_eq!(h["ratelimit-policy"], r#""per-ip";q=5;w=1"#);
        assert_eq!(h["ratelimit"], format!(r#""per-ip";r={r};t=1"#).as_str());
        assert_eq!(items(&h["ratelimit-policy"])[0].0, "per-ip");
        assert_eq!(
            params(&h["ratelimit-policy"]),
            [("q".into(), 5), ("w".into(), 1)]
        );
        assert_eq!(params(&h["ratelimit"]), [("r".into(), r), ("t".into(), 1)]);
        assert!(h.get("retry-after").is_none());
        assert_eq!(body(resp).await, "hello");
    }
    let denied = svc.clone().oneshot(from([192, 0, 2, 1])).await.unwrap();
    assert_eq!(denied.status(), StatusCode::TOO_MANY_REQUESTS);
    let h = denied.headers();
    assert_eq!(h["retry-after"], "1"); // 200 ms rounded up
    assert_eq!(h["ratelimit"], r#""per-ip";r=0;t=1"#);
    assert_eq!(h["content-type"], "text/plain; charset=utf-8");
    assert_eq!(
        body(denied).await,
        "Too Many Requests: the \"per-ip\" rate limit is reached; retry after 1 s\n"
    );
    // Another client has its own limit.
    assert_eq!(status_of(&svc, [192, 0, 2, 2]).await, 200);
    clock.advance(Duration::from_millis(200));
    let ok = svc.clone().oneshot(from([192, 0, 2, 1])).await.unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(ok.headers()["ratelimit"], r#""per-ip";r=0;t=1"#);
    let c = &layer.counters()[0];
    assert_eq!((c.allowed, c.denied), (7, 1));
}

#[tokio::test]
async fn retry_after_is_never_zero_and_never_early() {
    // 3 per 10 s (one every 3.34 s) with a sliding window as well: waits of every size.
    let clock = ManualClock::new();
    let g = gcra_on(&clock, Rate::new(3, Duration::from_secs(10)).unwrap());
    let svc = RateLimitLayer::new(Policy::new("g", g, Global))
        .unwrap()
        .layer(inner());
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut denials = 0;
    for _ in 0..400 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        clock.advance(Duration::from_nanos(x % 1_500_000_000));
        let resp = svc
            .clone()
            .oneshot(Request::new(String::new()))
            .await
            .unwrap();
        if resp.status() == 200 {
            continue;
        }
        denials += 1;
        let secs: u64 = resp.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(secs >= 1);
        // One nanosecond before the advertised time is still at least the real wait: the
        // retry at `now + Retry-After` succeeds.
        clock.advance(Duration::from_secs(secs));
        let retry = svc
            .clone()
            .oneshot(Request::new(String::new()))
            .await
            .unwrap();
        assert_eq!(retry.status(), 200, "retry after {secs} s was too early");
    }
    assert!(denials > 50, "{denials}");
}

#[tokio::test]
async fn every_clone_shares_one_limit() {
    let clock = ManualClock::new();
    let layer = RateLimitLayer::new(per_ip_policy(&clock, 2)).unwrap();
    let layer2 = layer.clone();
    let a = layer.layer(inner());
    let b = layer2.layer(inner());
    assert_eq!(status_of(&a, [10, 0, 0, 1]).await, 200);
    assert_eq!(status_of(&b, [10, 0, 0, 1]).await, 200);
    assert_eq!(a.oneshot(from([10, 0, 0, 1])).await.unwrap().status(), 429);
    assert_eq!(b.oneshot(from([10, 0, 0, 1])).await.unwrap().status(), 429);
    assert_eq!(layer2.counters()[0].allowed, 2);
    assert_eq!(layer2.counters()[0].denied, 2);
}

/// An inner service that is ready only when told.
#[derive(Clone)]
struct Gate(Arc<AtomicBool>);

impl Service<Req> for Gate {
    type Response = Response<String>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Response<String>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        if self.0.load(Ordering::SeqCst) {
            Poll::Ready(Ok(()))
        } else {
            Poll::Pending
        }
    }

    fn call(&mut self, _: Req) -> Self::Future {
        std::future::ready(Ok(Response::new("in".into())))
    }
}

#[tokio::test]
async fn poll_ready_passes_through() {
    let open = Arc::new(AtomicBool::new(false));
    let g = gcra_on(&ManualClock::new(), Rate::per_second(1).unwrap());
    let mut svc = RateLimitLayer::new(Policy::new("g", g, Global))
        .unwrap()
        .layer(Gate(open.clone()));
    let waker = std::task::Waker::noop();
    let mut cx = Context::from_waker(waker);
    assert!(svc.poll_ready(&mut cx).is_pending());
    open.store(true, Ordering::SeqCst);
    assert!(matches!(svc.poll_ready(&mut cx), Poll::Ready(Ok(()))));
}

#[tokio::test]
async fn a_later_policys_denial_charges_no_earlier_policy() {
    let clock = ManualClock::new();
    let keyed = Arc::new(per_ip(&clock, 5));
    let global = gcra_on(&clock, Rate::per_second(4).unwrap());
    let layer = RateLimitLayer::builder()
        .policy(Policy::new("per-ip", keyed.clone(), PeerIp::new()))
        .policy(Policy::new("global", global, Global))
        .build()
        .unwrap();
    let svc = layer.layer(inner());
    for ip in 1..=4 {
        let resp = svc.clone().oneshot(from([10, 0, 0, ip])).await.unwrap();
        assert_eq!(resp.status(), 200);
        let all = items(&resp.headers()["ratelimit"]);
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].0.as_str(), all[1].0.as_str()), ("per-ip", "global"));
        assert_eq!(all[1].1[0], ("r".into(), 4 - i64::from(ip)));
    }
    let ip5: IpAddr = [10, 0, 0, 5].into();
    let denied = svc.clone().oneshot(from([10, 0, 0, 5])).await.unwrap();
    assert_eq!(denied.status(), 429);
    // Both policies are reported: the refusing one, and the per-ip one as it stands,
    // uncharged (full: a permit spent comes back within 200 ms, t=1).
    assert_eq!(
        denied.headers()["ratelimit"],
        r#""per-ip";r=5;t=1, "global";r=0;t=1"#
    );
    assert_eq!(keyed.remaining_at(&ip5, 0), 5);
    assert_eq!(keyed.len(), 4);
    let counts = layer.counters();
    assert_eq!((counts[0].allowed, counts[0].denied), (4, 0));
    assert_eq!((counts[1].allowed, counts[1].denied), (4, 1));
}

#[tokio::test]
async fn dry_run_admits_counts_and_tells_the_handler() {
    let clock = ManualClock::new();
    let layer = RateLimitLayer::builder()
        .policy(per_ip_policy(&clock, 1))
        .dry_run(true)
        .build()
        .unwrap();
    let svc = layer.layer(inner());
    let first = svc.clone().oneshot(from([10, 0, 0, 1])).await.unwrap();
    assert_eq!(body(first).await, "decided allowed=true dry_run=true");
    let second = svc.clone().oneshot(from([10, 0, 0, 1])).await.unwrap();
    assert_eq!(second.status(), 200);
    assert_eq!(second.headers()["ratelimit"], r#""per-ip";r=0;t=1"#);
    assert!(second.headers().get("retry-after").is_none());
    assert_eq!(body(second).await, "decided allowed=false dry_run=true");
    let c = &layer.counters()[0];
    assert_eq!((c.allowed, c.denied, c.dry_run_denied), (1, 0, 1));
}

#[tokio::test]
async fn decisions_in_extensions_on_request() {
    let layer = RateLimitLayer::builder()
        .policy(per_ip_policy(&ManualClock::new(), 1))
        .decision_in_extensions(true)
        .build()
        .unwrap();
    let resp = layer
        .layer(inner())
        .oneshot(from([10, 0, 0, 1]))
        .await
        .unwrap();
    assert_eq!(body(resp).await, "decided allowed=true dry_run=false");
}

#[tokio::test]
async fn missing_keys_follow_the_policy_choice() {
    let clock = ManualClock::new();
    let keyed = || {
        Keyed::<String, Gcra, _>::gcra(Rate::per_second(1).unwrap())
            .clock(clock.clone())
            .build()
            .unwrap()
    };
    let key = || HeaderKey::new("x-api-key").unwrap();
    let no_key = || Request::new(String::new());

    let default = RateLimitLayer::new(Policy::new("k", keyed(), key()))
        .unwrap()
        .layer(inner());
    let resp = default.oneshot(no_key()).await.unwrap();
    assert_eq!(resp.status(), 400);
    // The policy applies and the keyless request has nothing under it.
    assert_eq!(resp.headers()["ratelimit"], r#""k";r=0"#);
    assert_eq!(resp.headers()["ratelimit-policy"], r#""k";q=1;w=1"#);

    let reject = RateLimitLayer::new(
        Policy::new("k", keyed(), key())
            .on_missing_key(MissingKey::Reject(StatusCode::UNAUTHORIZED)),
    )
    .unwrap()
    .layer(inner());
    assert_eq!(reject.oneshot(no_key()).await.unwrap().status(), 401);

    let allow_layer =
        RateLimitLayer::new(Policy::new("k", keyed(), key()).on_missing_key(MissingKey::Allow))
            .unwrap();
    let allow = allow_layer.layer(inner());
    for _ in 0..3 {
        let resp = allow.clone().oneshot(no_key()).await.unwrap();
        assert_eq!(resp.status(), 200);
        // A keyless request the policy lets through is not under it: no RateLimit item.
        assert!(resp.headers().get("ratelimit").is_none());
        assert_eq!(resp.headers()["ratelimit-policy"], r#""k";q=1;w=1"#);
    }
    assert_eq!(allow_layer.counters()[0].missing_key, 3);

    let shared = RateLimitLayer::new(
        Policy::new("k", keyed(), key()).on_missing_key(MissingKey::Shared("anonymous".to_owned())),
    )
    .unwrap()
    .layer(inner());
    assert_eq!(
        shared.clone().oneshot(no_key()).await.unwrap().status(),
        200
    );
    assert_eq!(shared.oneshot(no_key()).await.unwrap().status(), 429);
}

#[tokio::test]
async fn bodies_json_and_problem_json() {
    let clock = ManualClock::new();
    for (format, ct) in [
        (RejectionBody::Json, "application/json"),
        (RejectionBody::ProblemJson, "application/problem+json"),
    ] {
        let svc = RateLimitLayer::builder()
            .policy(per_ip_policy(&clock, 1))
            .body(format)
            .build()
            .unwrap()
            .layer(inner());
        svc.clone().oneshot(from([10, 0, 0, 1])).await.unwrap();
        let resp = svc.oneshot(from([10, 0, 0, 1])).await.unwrap();
        assert_eq!(resp.headers()["content-type"], ct);
        let v: serde_json::Value = serde_json::from_str(&body(resp).await).unwrap();
        match format {
            RejectionBody::Json => {
                assert_eq!(v["error"], "rate_limited");
                assert_eq!(v["policy"], "per-ip");
                assert_eq!(v["retry_after"], 1);
            }
            _ => {
                assert_eq!(v["type"], hotlimit_tower::QUOTA_EXCEEDED_TYPE);
                assert_eq!(v["status"], 429);
                assert_eq!(v["violated-policies"][0], "per-ip");
                assert_eq!(v["retry_after"], 1);
            }
        }
    }
}

#[tokio::test]
async fn headers_are_added_after_a_custom_handler() {
    let svc = RateLimitLayer::builder()
        .policy(per_ip_policy(&ManualClock::new(), 1))
        .legacy_headers(true)
        .on_rejection(|r| {
            assert_eq!(r.kind(), RejectionKind::OverLimit);
            Response::builder()
                .status(StatusCode::IM_A_TEAPOT)
                .header("ratelimit", "forged")
                .header("retry-after", "0")
                .body(Bytes::from_static(b"teapot"))
                .unwrap()
        })
        .build()
        .unwrap()
        .layer(inner());
    let ok = svc.clone().oneshot(from([10, 0, 0, 1])).await.unwrap();
    assert_eq!(ok.headers()["x-ratelimit-limit"], "1");
    assert_eq!(ok.headers()["x-ratelimit-remaining"], "0");
    assert_eq!(ok.headers()["x-ratelimit-reset"], "1");
    let resp = svc.oneshot(from([10, 0, 0, 1])).await.unwrap();
    assert_eq!(resp.status(), StatusCode::IM_A_TEAPOT);
    assert_eq!(resp.headers()["ratelimit"], r#""per-ip";r=0;t=1"#);
    assert_eq!(resp.headers().get_all("ratelimit").iter().count(), 1);
    assert_eq!(resp.headers()["retry-after"], "1");
    assert_eq!(resp.headers()["x-ratelimit-remaining"], "0");
    assert_eq!(body(resp).await, "teapot");
}

#[tokio::test]
async fn grpc_requests_get_resource_exhausted() {
    let svc = RateLimitLayer::new(per_ip_policy(&ManualClock::new(), 1))
        .unwrap()
        .layer(inner());
    let grpc = || {
        let mut req = from([10, 0, 0, 1]);
        *req.version_mut() = http::Version::HTTP_2;
        req.headers_mut()
            .insert("content-type", "application/grpc+proto".parse().unwrap());
        req
    };
    svc.clone().oneshot(grpc()).await.unwrap();
    let resp = svc.oneshot(grpc()).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["grpc-status"], "8");
    assert_eq!(resp.headers()["content-type"], "application/grpc");
    assert_eq!(resp.headers()["retry-after"], "1");
    assert_eq!(resp.headers()["ratelimit"], r#""per-ip";r=0;t=1"#);
    assert!(resp.headers()["grpc-message"]
        .to_str()
        .unwrap()
        .contains("per-ip"));
    assert_eq!(body(resp).await, "");
}

#[tokio::test]
async fn cost_per_request_and_never_grantable() {
    let clock = ManualClock::new();
    let policy = per_ip_policy(&clock, 10).cost(|parts| {
        parts
            .headers
            .get("x-cost")
            .and_then(|v| v.to_str().ok()?.parse().ok())
            .unwrap_or(1)
    });
    let svc = RateLimitLayer::new(policy).unwrap().layer(inner());
    let with_cost = |c: &str| {
        let mut req = from([10, 0, 0, 1]);
        req.headers_mut().insert("x-cost", c.parse().unwrap());
        req
    };
    let resp = svc.clone().oneshot(with_cost("7")).await.unwrap();
    assert_eq!(resp.headers()["ratelimit"], r#""per-ip";r=3;t=1"#);
    let too_big = svc.clone().oneshot(with_cost("11")).await.unwrap();
    assert_eq!(too_big.status(), 429);
    assert!(too_big.headers().get("retry-after").is_none());
    assert!(body(too_big).await.contains("can ever grant"));
    let resp = svc.clone().oneshot(with_cost("4")).await.unwrap();
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "1"); // 100 ms
    assert_eq!(svc.oneshot(with_cost("0")).await.unwrap().status(), 200);
}

#[tokio::test]
async fn a_full_key_table_answers_503() {
    let clock = ManualClock::new();
    let keyed: Keyed<IpAddr, Gcra, ManualClock> = Keyed::gcra(Rate::per_minute(1).unwrap())
        .capacity(1)
        .clock(clock.clone())
        .build()
        .unwrap();
    let layer = RateLimitLayer::builder()
        .policy(Policy::new("per-ip", keyed, PeerIp::new()))
        .body(RejectionBody::Json)
        .build()
        .unwrap();
    let svc = layer.layer(inner());
    assert_eq!(status_of(&svc, [10, 0, 0, 1]).await, 200);
    let resp = svc.oneshot(from([10, 0, 0, 2])).await.unwrap();
    assert_eq!(resp.status(), 503);
    // Refused for room: nothing remaining, more when the table has room (issue 25 saw r=1).
    assert_eq!(params(&resp.headers()["ratelimit"])[0], ("r".into(), 0));
    let v: serde_json::Value = serde_json::from_str(&body(resp).await).unwrap();
    assert_eq!(v["error"], "table_full");
}

/// A limiter that answers asynchronously (like a networked one): its future is pending on its
/// first poll.
struct Slow(Gcra<ManualClock>);

struct SlowFuture {
    decision: Decision,
    polled: bool,
}

impl Future for SlowFuture {
    type Output = Result<Decision, std::io::Error>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if self.polled {
            return Poll::Ready(Ok(self.decision));
        }
        self.polled = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl Decide for Slow {
    type Key = ();
    type Error = std::io::Error;
    type Future = SlowFuture;

    fn decide(&self, _: &(), permits: u32) -> SlowFuture {
        let mut fut = std::pin::pin!(self.0.decide(&(), permits));
        let Poll::Ready(Ok(d)) = fut
            .as_mut()
            .poll(&mut Context::from_waker(std::task::Waker::noop()))
        else {
            unreachable!()
        };
        SlowFuture {
            decision: d,
            polled: false,
        }
    }

    fn quota(&self) -> Quota {
        self.0.quota()
    }
}

#[tokio::test]
async fn an_asynchronous_limiter_works_as_a_policy() {
    let clock = ManualClock::new();
    let g = gcra_on(&clock, Rate::per_second(2).unwrap());
    let layer = RateLimitLayer::builder()
        .policy(per_ip_policy(&clock, 5))
        .policy(Policy::new("remote", Slow(g), Global))
        .build()
        .unwrap();
    let svc = layer.layer(inner());
    for r in [1, 0] {
        let resp = svc.clone().oneshot(from([10, 0, 0, 1])).await.unwrap();
        assert_eq!(resp.status(), 200);
        let all = items(&resp.headers()["ratelimit"]);
        assert_eq!(all[1].1[0], ("r".into(), r));
    }
    let resp = svc.oneshot(from([10, 0, 0, 1])).await.unwrap();
    assert_eq!(resp.status(), 429);
    assert_eq!(
        resp.headers()["ratelimit"],
        r#""per-ip";r=2;t=1, "remote";r=0;t=1"#
    );
    // Not previewable: the per-ip policy decided first and kept its permit.
    assert_eq!(layer.counters()[0].allowed, 3);
}

/// A limiter that fails.
struct Broken;

impl Decide for Broken {
    type Key = ();
    type Error = std::io::Error;
    type Future = std::future::Ready<Result<Decision, std::io::Error>>;

    fn decide(&self, _: &(), _: u32) -> Self::Future {
        std::future::ready(Err(std::io::Error::other("backend down")))
    }

    fn quota(&self) -> Quota {
        Quota::new(1, Duration::from_secs(1))
    }
}

#[tokio::test]
async fn a_failing_limiter_fails_closed_or_open() {
    let closed = RateLimitLayer::new(Policy::new("remote", Broken, Global)).unwrap();
    let open = RateLimitLayer::builder()
        .policy(Policy::new("remote", Broken, Global))
        .fail_open(true)
        .build()
        .unwrap();
    for (layer, status) in [(&closed, 503), (&open, 200)] {
        let resp = layer
            .layer(inner())
            .oneshot(Request::new(String::new()))
            .await
            .unwrap();
        assert_eq!(resp.status(), status);
        assert_eq!(layer.counters()[0].errors, 1);
    }
}

#[test]
fn bad_configuration_is_an_error_at_build() {
    let g = || Gcra::new(Rate::per_second(1).unwrap()).unwrap();
    let err = |b: hotlimit_tower::RateLimitLayerBuilder| b.build().unwrap_err().to_string();
    assert_eq!(
        err(RateLimitLayer::builder()),
        "invalid policies = 0: at least one policy is needed"
    );
    assert_eq!(
        err(RateLimitLayer::builder().policy(Policy::new("", g(), Global))),
        "invalid name = \"\": a policy needs a name"
    );
    assert_eq!(
        err(RateLimitLayer::builder().policy(Policy::new("é", g(), Global))),
        "invalid name = \"é\": must be printable ASCII (it is sent in the RateLimit headers)"
    );
    assert_eq!(
        err(RateLimitLayer::builder()
            .policy(Policy::new("a", g(), Global))
            .policy(Policy::new("a", g(), Global))),
        "invalid name = \"a\": two policies of one layer have this name"
    );
    assert_eq!(
        err(RateLimitLayer::builder()
            .policy(Policy::new("a", g(), Global))
            .table_full_status(StatusCode::NO_CONTENT)),
        "invalid table_full_status = 204: must be a 4xx or 5xx status"
    );
    let keyed = Keyed::<String, Gcra>::gcra(Rate::per_second(1).unwrap())
        .build()
        .unwrap();
    assert_eq!(
        err(RateLimitLayer::builder().policy(
            Policy::new("a", keyed, HeaderKey::new("x-k").unwrap())
                .on_missing_key(MissingKey::Reject(StatusCode::OK))
        )),
        "invalid missing_key = 200: must be a 4xx or 5xx status"
    );
}

#[test]
fn counters_add_up_across_threads() {
    let g = gcra_on(&ManualClock::new(), Rate::per_second(1_000).unwrap());
    let layer = RateLimitLayer::new(Policy::new("g", g, Global)).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            let svc = layer.layer(inner());
            s.spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    for _ in 0..300 {
                        svc.clone()
                            .oneshot(Request::new(String::new()))
                            .await
                            .unwrap();
                    }
                });
            });
        }
    });
    let c = &layer.counters()[0];
    assert_eq!((c.allowed, c.denied), (1_000, 200));
}
