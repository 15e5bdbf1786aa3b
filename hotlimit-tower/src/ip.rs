//! Client IP keys: [`PeerIp`] (the TCP peer) and [`ForwardedIp`] (the client behind trusted
//! proxies, read from the RIGHT of `X-Forwarded-For` or `Forwarded`). Both need the peer
//! address in the request (axum: serve with `into_make_service_with_connect_info`); without
//! it they refuse to choose a key ([`Refusal::NoPeerAddress`](crate::Refusal)). Both key an
//! IPv4 client by its IPv4 address however IPv6 carries it (NAT64 included) and group IPv6
//! clients by prefix (default /56).
//!
//! `peer.rs` holds [`PeerIp`], `forwarded.rs` [`ForwardedIp`], `chain.rs` the byte-wise
//! right-to-left reading of the forwarded headers, `keying.rs` how an address becomes a key,
//! `network.rs` CIDR networks.

use std::net::{IpAddr, SocketAddr};

use http::request::Parts;

mod chain;
mod forwarded;
mod keying;
mod network;
mod peer;

pub use forwarded::ForwardedIp;
pub use keying::{DEFAULT_IPV6_PREFIX, DEFAULT_NAT64_PREFIX};
pub use peer::PeerIp;

/// The TCP peer's address: from the request's extensions, where the server put it. Found
/// there: axum's `ConnectInfo` and `MockConnectInfo` (feature `axum`: serve with
/// `into_make_service_with_connect_info`), tonic's `TcpConnectInfo` (feature `tonic`), a plain
/// [`SocketAddr`] (insert it yourself in a hyper server). `None` when none is there.
#[inline]
pub(crate) fn peer_addr(parts: &Parts) -> Option<IpAddr> {
    #[cfg(feature = "axum")]
    {
        use axum::extract::connect_info::{ConnectInfo, MockConnectInfo};
        if let Some(ConnectInfo(addr)) = parts.extensions.get::<ConnectInfo<SocketAddr>>() {
            return Some(addr.ip());
        }
        if let Some(MockConnectInfo(addr)) = parts.extensions.get::<MockConnectInfo<SocketAddr>>() {
            return Some(addr.ip());
        }
    }
    #[cfg(feature = "tonic")]
    if let Some(info) = parts
        .extensions
        .get::<tonic::transport::server::TcpConnectInfo>()
    {
        if let Some(addr) = info.remote_addr() {
            return Some(addr.ip());
        }
    }
    parts.extensions.get::<SocketAddr>().map(SocketAddr::ip)
}
