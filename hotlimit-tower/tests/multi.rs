//! Hard windows on one key as one [`PolicyMulti`] (issue 45): every window named in the
//! headers with its own quota, a refusal names the window that refused and charges none.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hotlimit::{Keyed, ManualClock, MultiWindow, Rate};
use hotlimit_tower::{HeaderKey, PolicyMulti, RateLimitLayer};
use http::{Request, Response, StatusCode};
use tower::{service_fn, Layer, Service, ServiceExt};

mod common;

use common::{policies, state};

type Req = Request<String>;

fn inner() -> impl Service<Req, Response = Response<String>, Error = Infallible> + Clone {
    service_fn(|_: Req| async { Ok::<_, Infallible>(Response::new(String::from("hello"))) })
}

fn with_key(key: &str) -> Req {
    Request::get("/")
        .header("x-api-key", key)
        .body(String::new())
        .unwrap()
}

#[tokio::test]
async fn every_window_is_named_and_a_refusal_charges_none() {
    let clock = ManualClock::new();
    // 2 per second AND 3 per minute, exact, per API key.
    let windows = MultiWindow::builder()
        .exact(Rate::per_second(2).unwrap())
        .exact(Rate::per_minute(3).unwrap());
    let per_key: Keyed<String, MultiWindow, _> = Keyed::multi_window(windows)
        .capacity(1_000)
        .clock(clock.clone())
        .build()
        .unwrap();
    let per_key = Arc::new(per_key);
    let layer = RateLimitLayer::builder()
        .multi(PolicyMulti::new(
            ["per-second", "per-minute"],
            Arc::clone(&per_key),
            HeaderKey::new("x-api-key").unwrap(),
        ))
        .build()
        .unwrap();
    let svc = layer.layer(inner());
    let send = |key: &'static str| {
        let svc = svc.clone();
        async move {
            let resp = svc.oneshot(with_key(key)).await.unwrap();
            let h = resp.headers();
            assert_eq!(
                policies(&h["ratelimit-policy"]),
                [("per-second".into(), 2, 1), ("per-minute".into(), 3, 60)]
            );
            let retry = h.get("retry-after").map(|v| v.to_str().unwrap().to_owned());
            let remaining: Vec<(String, i64)> = state(&h["ratelimit"])
                .into_iter()
                .map(|(name, r, _)| (name, r))
                .collect();
            (resp.status(), remaining, retry)
        }
    };
    let item = |n: &str, r: i64| (n.to_owned(), r);
    assert_eq!(
        send("a").await,
        (
            StatusCode::OK,
            vec![item("per-second", 1), item("per-minute", 2)],
            None
        )
    );
    assert_eq!(send("a").await.0, StatusCode::OK);
    // The per-second window refuses; the minute's last permit is not taken.
    assert_eq!(
        send("a").await,
        (
            StatusCode::TOO_MANY_REQUESTS,
            vec![item("per-second", 0), item("per-minute", 1)],
            Some("1".to_owned())
        )
    );
    assert_eq!(per_key.peek_each(&"a".to_owned())[1].remaining(), 1);
    clock.advance(Duration::from_secs(1));
    assert_eq!(send("a").await.0, StatusCode::OK);
    clock.advance(Duration::from_secs(1));
    // Now the minute refuses: its first two grants leave it at 60 s, 58 s from now.
    assert_eq!(
        send("a").await,
        (
            StatusCode::TOO_MANY_REQUESTS,
            vec![item("per-second", 2), item("per-minute", 0)],
            Some("58".to_owned())
        )
    );
    // Another key has its own windows.
    assert_eq!(send("b").await.0, StatusCode::OK);
    let c = layer.counters();
    assert_eq!(
        c.iter().map(|c| (c.allowed, c.denied)).collect::<Vec<_>>(),
        [(4, 1), (4, 1)]
    );
}
