//! A gRPC service written by hand (no `.proto`, no `protoc`): `test.Echo/Ping` answers with the
//! message it was sent. Shared by the tonic example and the tonic test.

use std::convert::Infallible;
use std::future::{ready, Future, Ready};
use std::pin::Pin;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::codec::ProstCodec;
use tonic::server::{Grpc, NamedService, UnaryService};

/// The one message type: a string.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Ping {
    /// The text.
    #[prost(string, tag = "1")]
    pub(crate) msg: String,
}

/// The path of the one method.
pub(crate) const PING: &str = "/test.Echo/Ping";

/// The `Ping` method.
struct Echo;

impl UnaryService<Ping> for Echo {
    type Response = Ping;
    type Future = Ready<Result<tonic::Response<Ping>, tonic::Status>>;

    fn call(&mut self, req: tonic::Request<Ping>) -> Self::Future {
        ready(Ok(tonic::Response::new(req.into_inner())))
    }
}

/// The `test.Echo` service, as tonic's generated code would write it.
#[derive(Clone, Debug, Default)]
pub(crate) struct EchoServer;

impl NamedService for EchoServer {
    const NAME: &'static str = "test.Echo";
}

impl tower::Service<http::Request<Body>> for EchoServer {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        Box::pin(async move {
            if req.uri().path() != PING {
                return Ok(tonic::Status::unimplemented("no such method").into_http());
            }
            let mut grpc = Grpc::new(ProstCodec::<Ping, Ping>::default());
            Ok(grpc.unary(Echo, req).await)
        })
    }
}

/// Calls `Ping` over `channel`.
#[allow(dead_code)]
pub(crate) async fn ping(
    channel: tonic::transport::Channel,
    msg: &str,
) -> Result<tonic::Response<Ping>, tonic::Status> {
    let mut client = tonic::client::Grpc::new(channel);
    client
        .ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    client
        .unary(
            tonic::Request::new(Ping {
                msg: msg.to_owned(),
            }),
            http::uri::PathAndQuery::from_static(PING),
            ProstCodec::<Ping, Ping>::default(),
        )
        .await
}
