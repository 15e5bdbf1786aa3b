//! Connections with deadlines: [`SyncConnection`] (blocking, reconnecting), and the async
//! connections built with the limiter's deadline ([`connection_manager`],
//! [`cluster_connection`]).

use std::fmt;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Client, Connection, ConnectionLike, RedisError, RedisResult, Value};

use crate::deadline::Deadline;

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
        // Without `CLIENT SETINFO` (informational only) the handshake of a client with no
        // password and no database sends nothing, so reconnecting to a server that does not
        // answer waits for nothing but the socket.
        let info = client.get_connection_info().clone();
        let settings = info.redis_settings().clone().set_skip_set_lib_name();
        let client = Client::open(info.set_redis_settings(settings)).unwrap_or(client);
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

    /// Sends `packed` (a pipeline of `count` commands) and reads its `count` replies, all
    /// within what is left of `deadline`.
    ///
    /// Socket timeouts bound one read, not a call, and the client's pipeline reader goes on
    /// reading every reply after one timed out (a stopped server would cost one timeout per
    /// command); so the replies are read here one by one, each with the time left, and the
    /// first read that fails ends the exchange: the replies not read get its error, and the
    /// connection is dropped (the next call connects afresh). The connect and its handshake
    /// (at most two commands, an `AUTH`/`HELLO` and a `SELECT`; `CLIENT SETINFO` is left out)
    /// get half the time left. Timeouts are set in whole milliseconds rounded down, so that a
    /// call reuses the previous call's setting (no `setsockopt`) and never waits past the
    /// deadline.
    ///
    /// # Errors
    ///
    /// The connect's error, the send's, or the first reply's (a timeout when the deadline
    /// passed): then nothing is known of any command.
    pub(crate) fn exchange(
        &mut self,
        deadline: &Deadline,
        packed: &[u8],
        count: usize,
    ) -> RedisResult<Vec<RedisResult<Value>>> {
        let result = self.try_exchange(deadline, packed, count);
        let broken = match &result {
            Ok(replies) => replies.iter().any(|r| r.as_ref().is_err_and(is_broken)),
            Err(_) => true,
        };
        if broken || !self.is_connected() {
            self.con = None;
            self.timeout = None;
        }
        result
    }

    fn try_exchange(
        &mut self,
        deadline: &Deadline,
        packed: &[u8],
        count: usize,
    ) -> RedisResult<Vec<RedisResult<Value>>> {
        if !self.is_connected() {
            self.con = None;
            self.timeout = None;
            let con = self
                .client
                .get_connection_with_timeout(deadline.left()? / 2)?;
            self.con = Some(con);
        }
        self.limit(deadline)?;
        self.connection().send_packed_command(packed)?;
        let mut replies = Vec::with_capacity(count);
        for _ in 0..count {
            let reply = self
                .limit(deadline)
                .and_then(|()| self.connection().recv_response())
                .and_then(Value::extract_error);
            if let Err(e) = &reply
                && is_broken(e)
            {
                if replies.is_empty() {
                    return Err(e.clone());
                }
                replies.resize(count, Err(e.clone()));
                break;
            }
            replies.push(reply);
        }
        Ok(replies)
    }

    /// Sets the socket's timeouts to what is left of `deadline` (see
    /// [`exchange`](SyncConnection::exchange)), if they are not already that.
    fn limit(&mut self, deadline: &Deadline) -> RedisResult<()> {
        let left = deadline.left()?;
        let timeout = if left >= Duration::from_millis(1) {
            Duration::from_millis(left.as_millis() as u64)
        } else {
            left
        };
        if self.timeout != Some(timeout) {
            let con = self.connection();
            con.set_read_timeout(Some(timeout))?;
            con.set_write_timeout(Some(timeout))?;
            self.timeout = Some(timeout);
        }
        Ok(())
    }

    fn connection(&mut self) -> &mut Connection {
        match self.con.as_mut() {
            Some(con) => con,
            None => unreachable!("`try_exchange` connects first"),
        }
    }
}

/// Whether the connection is unusable after `e` (out of step with the server, or gone), as
/// opposed to one command's error.
fn is_broken(e: &RedisError) -> bool {
    e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_unrecoverable_error()
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
