//! tonic over a real loopback connection: a gRPC call over the limit gets
//! `RESOURCE_EXHAUSTED` with the rate-limit metadata, keyed by the peer address tonic reports.

#[path = "../examples/echo/mod.rs"]
mod echo;

use std::time::Duration;

use hotlimit::Rate;
use hotlimit_tower::{PeerIp, RateLimitLayer};
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Endpoint, Server};
use tonic::Code;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_limit_is_resource_exhausted() {
    let per_ip = PeerIp::new()
        .policy("per-ip", Rate::per_minute(3).unwrap())
        .unwrap();
    let layer = RateLimitLayer::new(per_ip).unwrap();
    let counters = layer.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(
        Server::builder()
            .layer(layer)
            .add_service(echo::EchoServer)
            .serve_with_incoming_shutdown(TcpIncoming::from(listener), async {
                let _ = stopped.await;
            }),
    );
    let run = async {
        let channel = Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        for i in 0..3 {
            let resp = echo::ping(channel.clone(), "hi").await.unwrap();
            assert_eq!(resp.get_ref().msg, "hi");
            let rl = resp.metadata().get("ratelimit").unwrap().to_str().unwrap();
            assert_eq!(
                rl.split(";r=").nth(1).unwrap().split(';').next().unwrap(),
                (2 - i).to_string()
            );
        }
        let status = echo::ping(channel.clone(), "hi").await.unwrap_err();
        assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
        assert!(status.message().contains("per-ip"), "{}", status.message());
        let md = status.metadata();
        let retry: u64 = md
            .get("retry-after")
            .unwrap()
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=20).contains(&retry), "{retry}");
        assert_eq!(md.get("ratelimit-policy").unwrap(), r#""per-ip";q=3;w=60"#);
    };
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the test took over 30 s");
    let _ = stop.send(());
    server.await.unwrap().unwrap();
    let c = &counters.counters()[0];
    assert_eq!((c.allowed, c.denied), (3, 1));
}
