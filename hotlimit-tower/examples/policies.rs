//! Several policies on one server: per client IP (10 per second), per API key two limits
//! decided as one (10 per second AND 100 per minute; keyless requests share one limit), and a
//! global cap (1,000 per second over a sliding window), with JSON rejection bodies and the
//! legacy `X-RateLimit-*` headers too. A request is admitted only if all admit it; a refusal
//! charges no policy.
//!
//!     cargo run -p hotlimit-tower --example policies -- 127.0.0.1:3001
//!
//! Prints one line once it listens, and the counters every 10 s; serves until killed.

mod common;

use std::time::Duration;

use axum::routing::get;
use axum::Router;
use hotlimit::{GcraPair, Keyed, Rate, SlidingWindow};
use hotlimit_tower::{
    Global, HeaderKey, MissingKey, PeerIp, Policy, PolicyPair, RateLimitLayer, RejectionBody,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let per_key =
        Keyed::<String, GcraPair>::gcra_pair(Rate::per_second(10)?, Rate::per_minute(100)?)
            .capacity(10_000)
            .build()?;
    let global = SlidingWindow::new(Rate::per_second(1_000)?)?;
    let layer = RateLimitLayer::builder()
        .policy(PeerIp::new().policy("per-ip", Rate::per_second(10)?)?)
        .pair(
            PolicyPair::new(
                "per-key",
                "per-key-minute",
                per_key,
                HeaderKey::new("x-api-key")?,
            )
            .on_missing_key(MissingKey::Shared("anonymous".to_owned())),
        )
        .policy(Policy::new("global", global, Global))
        .body(RejectionBody::Json)
        .legacy_headers(true)
        .build()?;
    let counters = layer.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(10)).await;
            for c in counters.counters() {
                eprintln!("{}: {} allowed, {} denied", c.policy, c.allowed, c.denied);
            }
        }
    });
    let app = Router::new()
        .route("/", get(|| async { "hello\n" }))
        .layer(layer);
    // Listens with each connection's peer address, which `PeerIp` keys on.
    common::serve(app, "127.0.0.1:3001").await
}
