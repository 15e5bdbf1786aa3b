//! What the attack tests share: a real axum server on a free loopback port behind the layer
//! under attack, served with `ConnectInfo` (or without, where the shape needs it); a real
//! HTTP/1.1 client (hyper-util's, keep-alive) and a raw TCP one for request lines no client
//! library would send; the process's resident memory; and the steady client measured
//! through a flood, on a `ManualClock` that the test moves, so that no result depends on how
//! fast a loaded machine runs.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use hotlimit::ManualClock;
use hotlimit_tower::RateLimitLayer;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A running server and how to stop it.
pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Server {
    /// Serves `GET /a` (and whatever else the router answers: 404, 405) behind `layer` on a
    /// free loopback port, with the peer address in every request (`ConnectInfo`) unless
    /// `connect_info` is false.
    pub(crate) async fn start(layer: RateLimitLayer, connect_info: bool) -> Server {
        let app = Router::new()
            .route("/a", get(|| async { "hello" }))
            .layer(layer);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let stopped = async {
            let _ = stopped.await;
        };
        let task = tokio::spawn(async move {
            if connect_info {
                let svc = app.into_make_service_with_connect_info::<SocketAddr>();
                axum::serve(listener, svc)
                    .with_graceful_shutdown(stopped)
                    .await
                    .unwrap();
            } else {
                axum::serve(listener, app.into_make_service())
                    .with_graceful_shutdown(stopped)
                    .await
                    .unwrap();
            }
        });
        Server { addr, stop, task }
    }

    pub(crate) async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap();
    }
}

/// One response as the tests read it.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body: String,
}

impl Answer {
    /// A header's value as text ("" when absent).
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map_or("", |v| v.to_str().unwrap_or("?"))
    }
}

/// A keep-alive HTTP/1.1 client whose connections come from `local` (any 127.x address is
/// loopback on Linux).
#[derive(Clone)]
pub(crate) struct Http {
    client: Client<HttpConnector, Empty<Bytes>>,
    addr: SocketAddr,
}

impl Http {
    pub(crate) fn new(addr: SocketAddr, local: [u8; 4]) -> Http {
        let mut connector = HttpConnector::new();
        connector.set_local_address(Some(IpAddr::from(local)));
        Http {
            client: Client::builder(TokioExecutor::new()).build(connector),
            addr,
        }
    }

    /// `method path` with `headers`.
    pub(crate) async fn send(&self, method: &str, path: &str, headers: &[(&str, &[u8])]) -> Answer {
        let mut req = http::Request::builder()
            .method(method)
            .uri(format!("http://{}{path}", self.addr));
        for (k, v) in headers {
            req = req.header(*k, http::HeaderValue::from_bytes(v).unwrap());
        }
        let resp = self
            .client
            .request(req.body(Empty::new()).unwrap())
            .await
            .unwrap();
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.unwrap().to_bytes();
        Answer {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    /// `GET path` with one header.
    pub(crate) async fn get(&self, path: &str, header: (&str, &str)) -> Answer {
        self.send("GET", path, &[(header.0, header.1.as_bytes())])
            .await
    }
}

/// Sends `head` (a request line and headers, without the blank line) on a new connection and
/// returns the response's status: for request shapes a client library will not send.
pub(crate) async fn raw(addr: SocketAddr, head: &[u8]) -> u16 {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(head).await.unwrap();
    s.write_all(b"\r\nconnection: close\r\n\r\n").await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let line = String::from_utf8_lossy(&out[..out.len().min(32)]).into_owned();
    line.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {line:?}"))
}

/// Runs `f` with a 120 s bound.
pub(crate) async fn bounded<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(120), f)
        .await
        .expect("the attack took over 120 s")
}

/// The process's resident set, in bytes (`VmRSS` of `/proc/self/status`).
pub(crate) fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// A flood's shape: `new` new keys every 500 ms, each sent `times` times, the repeats `lag`
/// new keys later (0: back to back).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Flood {
    pub(crate) new: u32,
    pub(crate) times: u32,
    pub(crate) lag: u32,
}

/// How a flood and the steady client reach the server.
pub(crate) trait Target {
    /// Sends the steady client's request: whether it was served.
    async fn steady(&self, http: &Http) -> Answer;
    /// Sends flood key `n`'s request.
    async fn flood(&self, http: &Http, n: u32) -> Answer;
}

/// The steady client asks every 500 ms (2 per second, under its 5 per second): twice before
/// the flood starts (a client with a history), then 41 times through it; between two of its
/// requests the flood sends its keys, the clock moving evenly across them. Returns the steady
/// requests served (of 41) and the flood's requests refused for want of room (503).
pub(crate) async fn steady_through_flood(
    http: &Http,
    clock: &ManualClock,
    target: &impl Target,
    flood: Flood,
) -> (u32, u32) {
    let (mut served, mut full) = (0, 0);
    let tick = Duration::from_millis(500) / flood.new;
    let mut next = 0u32;
    for _ in 0..2 {
        assert_eq!(target.steady(http).await.status, 200, "before the flood");
        clock.advance(Duration::from_millis(500));
    }
    for _ in 0..41 {
        let a = target.steady(http).await;
        served += u32::from(a.status == 200);
        for _ in 0..flood.new {
            // Key `next` now, and its repeats: back to back, or the keys `lag`, `2 lag`, ...
            // new keys ago (sent again now, that much later).
            for r in 0..flood.times {
                let n = if flood.lag == 0 {
                    Some(next)
                } else {
                    next.checked_sub(r * flood.lag)
                };
                if let Some(n) = n {
                    full += u32::from(target.flood(http, n).await.status == 503);
                }
            }
            next += 1;
            clock.advance(tick);
        }
    }
    (served, full)
}
