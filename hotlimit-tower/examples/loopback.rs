//! Requests per second through axum on loopback: no limiter, this layer (per peer IP with the
//! default table, `IntKeyed`, and with `Keyed`; headers on every response), and
//! `tower-governor` (per peer IP, without and with its headers), every request admitted, and
//! this layer with one global key. Headers cost on both sides here: the
//! client parses what the server sends. Server and
//! client share the process (a multi-thread tokio runtime) and the cores; the rows run
//! interleaved, round after round, so that a noisy neighbour hits them alike; the ratios are
//! the result.
//!
//!     cargo run --release -p hotlimit-tower --example loopback -- [SECONDS_PER_ROW] [ROUNDS] [CONNECTIONS]
//!
//! Defaults: 2 s per row, 3 rounds, 16 connections.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use hotlimit::{Gcra, Keyed, Rate};
use hotlimit_tower::{PeerIp, Policy, RateLimitLayer};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::GovernorLayer;

const ROWS: [&str; 6] = [
    "no limiter",
    "hotlimit-tower",
    "tower-governor",
    "tower-governor +headers",
    "hotlimit-tower global",
    "hotlimit-tower Keyed",
];

fn app(row: usize) -> Router {
    let app = Router::new().route("/", get(|| async { "hello" }));
    match row {
        0 => app,
        1 => {
            let per_ip = PeerIp::new()
                .policy("per-ip", Rate::per_second(1_000_000_000).unwrap())
                .unwrap();
            app.layer(RateLimitLayer::new(per_ip).unwrap())
        }
        5 => {
            let per_ip = Keyed::<IpAddr, Gcra>::gcra(Rate::per_second(1_000_000_000).unwrap())
                .build()
                .unwrap();
            app.layer(RateLimitLayer::new(Policy::new("per-ip", per_ip, PeerIp::new())).unwrap())
        }
        4 => {
            let g = hotlimit::Gcra::new(Rate::per_second(1_000_000_000).unwrap()).unwrap();
            app.layer(
                RateLimitLayer::new(Policy::new("global", g, hotlimit_tower::Global)).unwrap(),
            )
        }
        2 => {
            let config = GovernorConfigBuilder::default()
                .per_nanosecond(1)
                .burst_size(u32::MAX)
                .finish()
                .unwrap();
            app.layer(GovernorLayer {
                config: Arc::new(config),
            })
        }
        _ => {
            let config = GovernorConfigBuilder::default()
                .per_nanosecond(1)
                .burst_size(u32::MAX)
                .use_headers()
                .finish()
                .unwrap();
            app.layer(GovernorLayer {
                config: Arc::new(config),
            })
        }
    }
}

/// Serves row `row` and loads it for `secs` with `conns` keep-alive connections: requests/s.
async fn measure(row: usize, secs: f64, conns: usize) -> f64 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(
            listener,
            app(row).into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    let done = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(secs);
    let clients: Vec<_> = (0..conns)
        .map(|_| {
            let done = Arc::clone(&done);
            tokio::spawn(async move {
                let client = Client::builder(TokioExecutor::new())
                    .pool_max_idle_per_host(1)
                    .build_http::<Empty<Bytes>>();
                let uri: http::Uri = format!("http://{addr}/").parse().unwrap();
                while Instant::now() < end {
                    let resp = client.get(uri.clone()).await.unwrap();
                    assert_eq!(resp.status(), 200);
                    resp.into_body().collect().await.unwrap();
                    // Relaxed: a count read after the tasks are joined.
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for c in clients {
        c.await.unwrap();
    }
    let elapsed = start.elapsed().as_secs_f64();
    let _ = stop.send(());
    server.await.unwrap();
    // Relaxed: every client task has been joined.
    done.load(Ordering::Relaxed) as f64 / elapsed
}

#[tokio::main]
async fn main() {
    let arg = |i: usize, default: f64| {
        std::env::args()
            .nth(i)
            .map_or(default, |s| s.parse().expect("a number"))
    };
    let (secs, rounds, conns) = (arg(1, 2.0), arg(2, 3.0) as usize, arg(3, 16.0) as usize);
    let mut results = vec![Vec::new(); ROWS.len()];
    for round in 0..rounds {
        for (row, name) in ROWS.iter().enumerate() {
            let rps = measure(row, secs, conns).await;
            eprintln!("round {round}: {name}: {rps:.0} req/s");
            results[row].push(rps);
        }
    }
    let median = |v: &Vec<f64>| {
        let mut v = v.clone();
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let base = median(&results[0]);
    // Each round's rows ran back to back: the ratio to that round's no-limiter row cancels a
    // load that drifts between rounds.
    let paired = |row: usize| {
        let ratios: Vec<f64> = results[row]
            .iter()
            .zip(&results[0])
            .map(|(r, b)| r / b)
            .collect();
        median(&ratios)
    };
    println!(
        "| row | req/s (median of {rounds}) | vs no limiter | vs no limiter, same round (median) |"
    );
    println!("|---|---|---|---|");
    for (row, name) in ROWS.iter().enumerate() {
        let m = median(&results[row]);
        println!("| {name} | {m:.0} | {:.3} | {:.3} |", m / base, paired(row));
    }
}
