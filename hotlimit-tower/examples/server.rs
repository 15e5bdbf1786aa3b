//! An axum server limited per client IP to 5 requests per second, bursts of 5, with the
//! rate-limit headers on every response.
//!
//!     cargo run -p hotlimit-tower --example server -- 127.0.0.1:3000
//!
//! Prints one line once it listens and serves until killed. Try:
//!
//!     for i in $(seq 7); do curl -si http://127.0.0.1:3000/ | grep -iE '^(HTTP|ratelimit|retry)'; done

mod common;

use axum::routing::get;
use axum::Router;
use hotlimit::{IntKeyed, Rate};
use hotlimit_tower::{PeerIp, RateLimitLayer};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 5 per second per client IP, burst 5, at most 100,000 clients remembered at once, over
    // the IP keys' fastest table (IntKeyed<IpAddr>).
    let table = IntKeyed::builder(Rate::per_second(5)?)
        .burst(5)
        .capacity(100_000);
    let layer = RateLimitLayer::new(PeerIp::new().policy_with("per-ip", table)?)?;
    let app = Router::new()
        .route("/", get(|| async { "hello\n" }))
        .layer(layer);
    // Listens with each connection's peer address, which `PeerIp` needs: without it every
    // request is refused (500, logged).
    common::serve(app, "127.0.0.1:3000").await
}
