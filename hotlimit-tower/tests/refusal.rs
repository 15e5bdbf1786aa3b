//! A request the key extractor refuses (no peer address: a server that forgot `ConnectInfo`) is
//! answered 500, counted, and logged through `tracing`: at `error` the first time for each
//! policy, at `debug` after that, so the mistake is loud without flooding the log.

use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use hotlimit::{Gcra, Keyed, ManualClock, Rate};
use hotlimit_tower::{MissingKey, PeerIp, Policy, RateLimitLayer, RejectionBody};
use http::{Request, Response};
use http_body_util::BodyExt;
use tower::{service_fn, Layer, ServiceExt};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Counts events at `error` and at `debug`.
#[derive(Default)]
struct Count {
    error: AtomicUsize,
    debug: AtomicUsize,
}

struct Counting(Arc<Count>);

impl Subscriber for Counting {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let level = *event.metadata().level();
        // Relaxed: counts read after the requests, on this thread.
        if level == Level::ERROR {
            self.0.error.fetch_add(1, Ordering::Relaxed);
        } else if level == Level::DEBUG {
            self.0.debug.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn a_refusal_is_answered_500_counted_and_logged_once_at_error() {
    let count = Arc::new(Count::default());
    let per_ip: Keyed<IpAddr, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(5).unwrap())
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let layer = RateLimitLayer::builder()
        // Even a policy that lets keyless requests through refuses here.
        .policy(Policy::new("per-ip", per_ip, PeerIp::new()).on_missing_key(MissingKey::Allow))
        .body(RejectionBody::Json)
        .build()
        .unwrap();
    let svc = layer.layer(service_fn(|_: Request<String>| async {
        Ok::<_, Infallible>(Response::new(String::from("hello")))
    }));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    tracing::subscriber::with_default(Counting(count.clone()), || {
        rt.block_on(async {
            for _ in 0..3 {
                // No peer address in the request.
                let resp = svc
                    .clone()
                    .oneshot(Request::new(String::new()))
                    .await
                    .unwrap();
                assert_eq!(resp.status(), 500);
                let body = resp.into_body().collect().await.unwrap().to_bytes();
                let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(v["error"], "refused");
                // The client is told it is not its fault, not how the server is set up.
                assert!(!v["message"].as_str().unwrap().contains("ConnectInfo"));
            }
        });
    });
    assert_eq!(count.error.load(Ordering::Relaxed), 1);
    assert_eq!(count.debug.load(Ordering::Relaxed), 2);
    let c = &layer.counters()[0];
    assert_eq!((c.refused, c.missing_key, c.allowed), (3, 0, 0));
}
