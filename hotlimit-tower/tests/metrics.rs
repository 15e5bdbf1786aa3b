//! The `metrics` feature: every decision increments `hotlimit_tower_decisions_total` with the
//! policy and the outcome, in the recorder installed when the layer was built.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hotlimit::{Gcra, ManualClock, Rate};
use hotlimit_tower::{Global, Policy, RateLimitLayer, METRIC_NAME};
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use tower::{service_fn, Layer, ServiceExt};

/// Counters by `name{labels}`.
#[derive(Default)]
struct Counters(Mutex<HashMap<String, Arc<AtomicU64>>>);

impl Counters {
    fn get(&self, outcome: &str) -> u64 {
        let name = format!("{METRIC_NAME}{{policy=g,outcome={outcome}}}");
        self.0
            .lock()
            .unwrap()
            .get(&name)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }
}

impl Recorder for Counters {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        let name = format!("{}{{{}}}", key.name(), labels.join(","));
        let c = self.0.lock().unwrap().entry(name).or_default().clone();
        Counter::from_arc(c)
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

#[tokio::test]
async fn decisions_are_exported() {
    let recorder = Counters::default();
    let g = Gcra::builder(Rate::per_second(2).unwrap())
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let layer = metrics::with_local_recorder(&recorder, || {
        RateLimitLayer::new(Policy::new("g", g, Global)).unwrap()
    });
    let svc = layer.layer(service_fn(|_: http::Request<String>| async {
        Ok::<_, Infallible>(http::Response::new(String::new()))
    }));
    for _ in 0..5 {
        svc.clone()
            .oneshot(http::Request::new(String::new()))
            .await
            .unwrap();
    }
    assert_eq!((recorder.get("allowed"), recorder.get("denied")), (2, 3));
    assert_eq!(recorder.get("error"), 0);
    let c = &layer.counters()[0];
    assert_eq!((c.allowed, c.denied), (2, 3));
}
