//! A tonic gRPC server limited per client IP (3 calls per minute), then a client on the same
//! loopback calling it until it gets `RESOURCE_EXHAUSTED`. The service is written by hand
//! (`echo/mod.rs`) so that no `protoc` is needed.
//!
//!     cargo run -p hotlimit-tower --features tonic --example tonic

mod echo;

use hotlimit::Rate;
use hotlimit_tower::{PeerIp, RateLimitLayer};
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Endpoint, Server};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let layer = RateLimitLayer::new(PeerIp::new().policy("per-ip", Rate::per_minute(3)?)?)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(
        Server::builder()
            .layer(layer)
            .add_service(echo::EchoServer)
            .serve_with_incoming(TcpIncoming::from(listener)),
    );
    println!("gRPC server on {addr}");
    let channel = Endpoint::from_shared(format!("http://{addr}"))?
        .connect()
        .await?;
    for i in 1..=4 {
        match echo::ping(channel.clone(), "hello").await {
            Ok(resp) => println!(
                "call {i}: ok, ratelimit: {:?}",
                resp.metadata().get("ratelimit")
            ),
            Err(status) => println!(
                "call {i}: {:?} ({}), retry-after: {:?}",
                status.code(),
                status.message(),
                status.metadata().get("retry-after")
            ),
        }
    }
    // The demo is over: stop the server (its connections go with it).
    server.abort();
    Ok(())
}
