//! The round trip: a [`Call`] is one prepared request (one script's `EVALSHA`s: one for a
//! decision, many for a batch or a lease return), sent over a blocking connection
//! ([`Call::send_blocking`]) or an async one ([`Call::send_async`]) within one [`Deadline`],
//! the way redis-rs pairs `Script` with `ScriptInvocation`: one prepared request, two ways to
//! send it, and `NOSCRIPT` handled here, once.
//!
//! `NOSCRIPT` (the server's script cache was flushed, or this server never saw the script): the
//! scripts that got it did not run, so they are sent again after the script, in one pipeline
//! (`SCRIPT LOAD`, then their `EVALSHA`s): a second round trip, within the same deadline. No
//! other error is retried: a script that timed out may have run and charged its permits.

use redis::aio::ConnectionLike;
use redis::{ErrorKind, Pipeline, RedisError, RedisResult, Script, ServerErrorKind, Value};

use crate::connection::SyncConnection;
use crate::deadline::Deadline;
use crate::durable::Durable;
use crate::error::Error;

/// A Lua script: its text (for `SCRIPT LOAD`) and its hash (for `EVALSHA`), computed once.
#[derive(Debug)]
pub(crate) struct Lua {
    code: &'static str,
    script: Script,
}

impl Lua {
    pub(crate) fn new(code: &'static str) -> Lua {
        Lua {
            code,
            script: Script::new(code),
        }
    }

    /// The script's SHA-1, as `EVALSHA` names it.
    pub(crate) fn hash(&self) -> &str {
        self.script.get_hash()
    }

    fn load(&self) -> redis::Cmd {
        let mut cmd = redis::cmd("SCRIPT");
        cmd.arg("LOAD").arg(self.code);
        cmd
    }
}

/// One prepared request: `EVALSHA`s of one script, each with its key and arguments, sent in one
/// pipeline (each reply on its own: one script's error does not fail the others).
#[derive(Debug)]
pub(crate) struct Call {
    script: &'static Lua,
    calls: Vec<redis::Cmd>,
    wait: Option<Durable>,
}

/// The replies of a [`Call`], one per script in the order they were pushed.
pub(crate) type Replies = Vec<RedisResult<Value>>;

impl Call {
    /// A request of no scripts yet.
    pub(crate) fn new(script: &'static Lua) -> Call {
        Call {
            script,
            calls: Vec::new(),
            wait: None,
        }
    }

    /// Adds the script on `key` and its `markers` (the fence's in fenced mode, then the
    /// waiting marker if any: the script knows which from its arguments) with `args`.
    pub(crate) fn push(&mut self, key: &[u8], markers: &[&[u8]], args: &[u64]) {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(self.script.hash()).arg(1 + markers.len()).arg(key);
        for marker in markers {
            cmd.arg(*marker);
        }
        cmd.arg(args);
        self.calls.push(cmd);
    }

    /// Adds the script on the keys `keys` (several windows' keys, in one slot) with `args`.
    pub(crate) fn push_keys(&mut self, keys: &[Vec<u8>], args: &[u64]) {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(self.script.hash()).arg(keys.len());
        for key in keys {
            cmd.arg(key.as_slice());
        }
        cmd.arg(args);
        self.calls.push(cmd);
    }

    /// Makes the request durable: `WAIT` for `durable`'s replicas after its scripts (in the
    /// same pipeline, one round trip); a script's reply counts only once they acknowledged
    /// it (see [`Durable`]).
    pub(crate) fn durable(mut self, durable: Option<Durable>) -> Call {
        self.wait = durable;
        self
    }

    /// Every script, in one pipeline.
    fn first(&self) -> Pipeline {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for cmd in &self.calls {
            pipe.add_command(cmd.clone());
        }
        if let Some(wait) = self.wait {
            pipe.add_command(wait.command());
        }
        pipe
    }

    /// The replies a pipeline of `scripts` scripts gets (one more for a `WAIT`).
    fn count(&self, scripts: usize) -> usize {
        scripts + usize::from(self.wait.is_some())
    }

    /// The scripts' replies, with the `WAIT`'s (the last) taken off and applied: short of the
    /// replicas asked for, every script's answer is the not-durable error.
    fn waited(&self, mut replies: Replies) -> Replies {
        let Some(wait) = self.wait else {
            return replies;
        };
        let acks = replies.pop();
        if !wait.acknowledged(acks) {
            for reply in &mut replies {
                if reply.is_ok() {
                    *reply = Err(Durable::not_durable());
                }
            }
        }
        replies
    }

    /// After the first replies: the positions that got `NOSCRIPT`, and the pipeline that sends
    /// the script and then those again (its first reply is the load's); `None` when every
    /// script ran.
    fn again(&self, first: &Replies) -> Option<(Vec<usize>, Pipeline)> {
        let at: Vec<usize> = first
            .iter()
            .enumerate()
            .filter(|(_, r)| matches!(r, Err(e) if is_noscript(e)))
            .map(|(i, _)| i)
            .collect();
        if at.is_empty() {
            return None;
        }
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        pipe.add_command(self.script.load());
        for &i in &at {
            pipe.add_command(self.calls[i].clone());
        }
        if let Some(wait) = self.wait {
            pipe.add_command(wait.command());
        }
        Some((at, pipe))
    }

    /// Sends the request over a blocking connection within `deadline`.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] or [`Error::Redis`] when the first pipeline got no answer (then
    /// nothing is known of any script). Errors of single scripts are in their replies.
    pub(crate) fn send_blocking(
        &self,
        con: &mut SyncConnection,
        deadline: &Deadline,
    ) -> Result<Replies, Error> {
        let first = con
            .exchange(
                deadline,
                &self.first().get_packed_pipeline(),
                self.count(self.calls.len()),
            )
            .map_err(|e| deadline.error(e))?;
        let first = self.waited(first);
        let Some((at, again)) = self.again(&first) else {
            return Ok(first);
        };
        let second = con
            .exchange(
                deadline,
                &again.get_packed_pipeline(),
                self.count(at.len() + 1),
            )
            .map(|r| self.waited(r));
        Ok(merge(first, &at, second))
    }

    /// Sends the request over an async connection within `deadline` (a Tokio timer bounds the
    /// whole exchange, a reconnect of the connection included).
    ///
    /// # Errors
    ///
    /// As [`send_blocking`](Call::send_blocking).
    pub(crate) async fn send_async<C: ConnectionLike + Send>(
        &self,
        con: &mut C,
        deadline: &Deadline,
    ) -> Result<Replies, Error> {
        let left = deadline.left().map_err(|e| deadline.error(e))?;
        let exchange = async {
            let first: Replies = self.waited(self.first().query_async(con).await?);
            let Some((at, again)) = self.again(&first) else {
                return Ok(first);
            };
            let second = again
                .query_async::<Replies>(con)
                .await
                .map(|r| self.waited(r));
            Ok::<_, RedisError>(merge(first, &at, second))
        };
        match tokio::time::timeout(left, exchange).await {
            Ok(Ok(replies)) => Ok(replies),
            Ok(Err(e)) => Err(deadline.error(e)),
            Err(_) => Err(Error::Timeout(deadline.total())),
        }
    }
}

/// The first replies with those at `at` (which were `NOSCRIPT`) replaced by the second
/// pipeline's (whose first reply, the load's, is skipped), or by its error when it got no
/// answer (a script that may have run is not sent a third time).
fn merge(mut first: Replies, at: &[usize], second: RedisResult<Replies>) -> Replies {
    match second {
        Ok(second) => {
            for (&i, reply) in at.iter().zip(second.into_iter().skip(1)) {
                first[i] = reply;
            }
        }
        Err(e) => {
            for &i in at {
                first[i] = Err(e.clone());
            }
        }
    }
    first
}

fn is_noscript(e: &RedisError) -> bool {
    e.kind() == ErrorKind::Server(ServerErrorKind::NoScript)
}

/// Whether `error` says the server or the connection is unusable (then the server is left
/// alone for `reprobe_after`), as opposed to an error about one request.
pub(crate) fn is_connection_fault(error: &Error) -> bool {
    match error {
        Error::Timeout(_) => true,
        Error::Redis(e) => {
            e.is_io_error()
                || e.is_connection_dropped()
                || e.is_connection_refusal()
                || e.is_timeout()
                || e.is_unrecoverable_error()
        }
        Error::KeyTooLong { .. } | Error::BadReply(_) | Error::Evicting(_) => false,
    }
}
