//! Connections with deadlines: [`SyncConnection`] (blocking, reconnecting), and the async
//! connections built with the limiter's deadline ([`connection_manager`],
//! [`cluster_connection`]).

use std::fmt;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Client, Connection, ConnectionLike, RedisResult};

use crate::transport::Deadline;

/// A blocking connection that reconnects by itself: after an I/O error or a timeout it is
/// dropped, and the next call connects again. Connecting, writing and reading share one
/// deadline per decision: a reconnect and the read that follows wait at most the limiter's
/// deadline **in total**.
///
/// # Examples
///
/// ```
/// use hotlimit_redis::SyncConnection;
///
/// // Connects lazily, on the first decision.
/// let con = SyncConnection::new(redis::Client::open("redis://127.0.0.1/")?);
/// assert!(!con.is_connected());
/// # Ok::<(), redis::RedisError>(())
/// ```
pub struct SyncConnection {
    client: Client,
    con: Option<Connection>,
    timeout: Option<Duration>,
}

impl fmt::Debug for SyncConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncConnection")
            .field("connected", &self.con.is_some())
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl SyncConnection {
    /// A connection to `client`'s server, opened on first use.
    ///
    /// # Examples
    ///
    /// ```
    /// let con = hotlimit_redis::SyncConnection::new(redis::Client::open("redis://127.0.0.1/")?);
    /// # let _ = con;
    /// # Ok::<(), redis::RedisError>(())
    /// ```
    pub fn new(client: Client) -> Self {
        SyncConnection {
            client,
            con: None,
            timeout: None,
        }
    }

    /// True while a connection is open (none before the first call, none after a failure).
    ///
    /// # Examples
    ///
    /// ```
    /// let con = hotlimit_redis::SyncConnection::new(redis::Client::open("redis://127.0.0.1/")?);
    /// assert!(!con.is_connected());
    /// # Ok::<(), redis::RedisError>(())
    /// ```
    pub fn is_connected(&self) -> bool {
        self.con.as_ref().is_some_and(Connection::is_open)
    }

    /// Runs `f` on the connection within what is left of `deadline`: connects first if no
    /// connection is open (the connect and its handshake bounded by the time left), then sets
    /// the read and write timeouts to the time left (rounded down to whole milliseconds, so a
    /// call reuses the previous call's setting instead of two `setsockopt`s, and never waits
    /// past the deadline). Drops the connection after an I/O error or a timeout, so that the
    /// next call starts afresh.
    ///
    /// # Errors
    ///
    /// A timeout when the deadline has passed (before or during the call; see
    /// [`Deadline::error`]), or the client's error.
    pub(crate) fn run<T>(
        &mut self,
        deadline: &Deadline,
        f: impl FnOnce(&mut Connection) -> RedisResult<T>,
    ) -> RedisResult<T> {
        let result = self.try_run(deadline, f);
        if let Err(e) = &result {
            if e.is_io_error()
                || e.is_timeout()
                || e.is_connection_dropped()
                || !self.con.as_ref().is_some_and(Connection::is_open)
            {
                self.con = None;
                self.timeout = None;
            }
        }
        result
    }

    fn try_run<T>(
        &mut self,
        deadline: &Deadline,
        f: impl FnOnce(&mut Connection) -> RedisResult<T>,
    ) -> RedisResult<T> {
        if !self.is_connected() {
            self.con = None;
            self.timeout = None;
            let con = self.client.get_connection_with_timeout(deadline.left()?)?;
            self.con = Some(con);
        }
        let timeout = socket_timeout(deadline.left()?);
        let Some(con) = self.con.as_mut() else {
            unreachable!("connected just above")
        };
        if self.timeout != Some(timeout) {
            con.set_read_timeout(Some(timeout))?;
            con.set_write_timeout(Some(timeout))?;
            self.timeout = Some(timeout);
        }
        f(con)
    }
}

/// The socket timeout for `left`: whole milliseconds rounded down (at least 1 µs): never
/// past the deadline, and the same value from one call to the next.
fn socket_timeout(left: Duration) -> Duration {
    if left >= Duration::from_millis(1) {
        Duration::from_millis(left.as_millis() as u64)
    } else {
        left.max(Duration::from_micros(1))
    }
}

/// A [`ConnectionManager`] (async, multiplexed, reconnecting in the background) whose connect
/// and response timeouts are `deadline`, and that tries to reconnect a few times with short
/// waits (it never re-sends a command: a failed command is the limiter's to decide).
///
/// # Errors
///
/// The first connection's error (the manager needs one to start).
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
///
/// # async fn run() -> redis::RedisResult<()> {
/// let client = redis::Client::open("redis://127.0.0.1/")?;
/// let con = hotlimit_redis::connection_manager(client, Duration::from_millis(50)).await?;
/// # let _ = con;
/// # Ok(()) }
/// ```
pub async fn connection_manager(
    client: Client,
    deadline: Duration,
) -> RedisResult<ConnectionManager> {
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(deadline))
        .set_response_timeout(Some(deadline))
        .set_number_of_retries(2)
        .set_min_delay(Duration::from_millis(10))
        .set_max_delay(deadline);
    ConnectionManager::new_with_config(client, config).await
}

/// A Redis Cluster connection (async) with `deadline` as its connect and response timeouts and
/// **no retries**: the cluster client's retries would re-send a script that may have run (and
/// charged its permits) before its answer was lost.
///
/// # Errors
///
/// A bad node address, or no node reachable.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
///
/// # async fn run() -> redis::RedisResult<()> {
/// let nodes = ["redis://127.0.0.1:7000/", "redis://127.0.0.1:7001/"];
/// let con = hotlimit_redis::cluster_connection(nodes, Duration::from_millis(50)).await?;
/// # let _ = con;
/// # Ok(()) }
/// ```
pub async fn cluster_connection<T: redis::IntoConnectionInfo>(
    nodes: impl IntoIterator<Item = T>,
    deadline: Duration,
) -> RedisResult<ClusterConnection> {
    ClusterClient::builder(nodes)
        .connection_timeout(deadline)
        .response_timeout(deadline)
        .retries(0)
        .build()?
        .get_async_connection()
        .await
}
