//! What the axum examples share: listening on the address given on the command line, with each
//! connection's peer address in the requests (where [`PeerIp`](hotlimit_tower::PeerIp) reads it).

use std::net::SocketAddr;

use axum::Router;

/// Serves `app` on the first command-line argument (or `default_addr`) until killed, after
/// printing the address it listens on.
pub(crate) async fn serve(
    app: Router,
    default_addr: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| default_addr.to_owned())
        .parse()?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("listening on http://{}", listener.local_addr()?);
    // `ConnectInfo<SocketAddr>` in every request: without it `PeerIp` and `ForwardedIp`
    // refuse every request (500, logged), as no header may choose a key then.
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await?;
    Ok(())
}
