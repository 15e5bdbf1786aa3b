//! [`Algorithm`]: which script a [`RedisLimiter`](crate::RedisLimiter) runs, GCRA
//! ([`crate::gcra`]), the exact sliding log ([`crate::sliding_log`]) or several hard windows
//! at once ([`crate::multi_window`]), and the one place where
//! the limiter's calls are sent to the module that owns them. What both scripts share is here
//! elsewhere, below both: their arguments (`args.rs`) and the shape of their reply (`reply.rs`).
//!
//! Each algorithm's module owns its Lua (`include_str!` of its `.lua` file behind the shared
//! `now.lua` prelude), its parameters in microseconds, its [`Quota`], and its rule for the
//! local denial cache.

use hotlimit::{Decision, Quota};

use crate::args::Args;
use crate::cache::Entry;
use crate::error::Error;
use crate::gcra::GcraScript;
use crate::multi_window::MultiScript;
use crate::reply::Reply;
use crate::sliding_log::LogScript;
use crate::transport::Lua;

/// A limiter's algorithm with its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Algorithm {
    Gcra(GcraScript),
    Log(LogScript),
    Multi(MultiScript),
}

impl Algorithm {
    pub(crate) fn script(&self) -> &'static Lua {
        match self {
            Algorithm::Gcra(_) => GcraScript::script(),
            Algorithm::Log(_) => LogScript::script(),
            Algorithm::Multi(_) => MultiScript::script(),
        }
    }

    /// The script's arguments for `n` permits (and the test hook's `now`, and the fence in
    /// µs: 0 for none).
    pub(crate) fn args(&self, n: u32, now: Option<u64>, fence: u64) -> Args {
        match self {
            Algorithm::Gcra(a) => a.args(n, now, fence),
            Algorithm::Log(a) => a.args(n, now, fence),
            // Never fenced (the builder refuses it).
            Algorithm::Multi(a) => a.args(n, now),
        }
    }

    /// The most permits one request can ever get.
    pub(crate) fn capacity(&self) -> u64 {
        match self {
            Algorithm::Gcra(a) => a.burst(),
            Algorithm::Log(a) => a.limit(),
            Algorithm::Multi(a) => a.capacity(),
        }
    }

    /// The quota the limiter reports (see each algorithm's `quota`).
    pub(crate) fn quota(&self) -> Quota {
        match self {
            Algorithm::Gcra(a) => a.quota(),
            Algorithm::Log(a) => a.quota(),
            Algorithm::Multi(a) => a.quota(),
        }
    }

    /// The Redis keys of the limiter key `key`: `key` itself, or one per window.
    pub(crate) fn keys(&self, key: &[u8]) -> Vec<Vec<u8>> {
        match self {
            Algorithm::Gcra(_) | Algorithm::Log(_) => vec![key.to_vec()],
            Algorithm::Multi(a) => (0..a.len())
                .map(|i| MultiScript::window_key(key, i))
                .collect(),
        }
    }

    /// The script's reply.
    ///
    /// # Errors
    ///
    /// [`Error::BadReply`] for a reply of the wrong shape.
    pub(crate) fn parse(&self, value: &redis::Value) -> Result<Reply, Error> {
        match self {
            Algorithm::Gcra(_) | Algorithm::Log(_) => Reply::parse(value),
            Algorithm::Multi(a) => a.parse(value),
        }
    }

    /// The quota a reply's decision reports: the limiter's, or the binding window's.
    pub(crate) fn reply_quota(&self, reply: &Reply, quota: Quota) -> Quota {
        match self {
            Algorithm::Gcra(_) | Algorithm::Log(_) => quota,
            Algorithm::Multi(a) => a.window_quota(reply.binding),
        }
    }

    /// The cache's decision for `n` permits at local `now` (ns) from `entry`, or `None` when
    /// Redis must be asked.
    #[inline(always)]
    pub(crate) fn cached(&self, entry: &Entry, n: u32, now: u64, quota: Quota) -> Option<Decision> {
        match self {
            Algorithm::Gcra(a) => a.cached(entry, n, now, quota),
            Algorithm::Log(a) => a.cached(entry, n, now, quota),
            Algorithm::Multi(a) => a.cached(entry, n, now),
        }
    }

    /// What the cache remembers of `reply`, the answer to `n` permits sent at local `sent`
    /// (ns): `None` for a grant.
    pub(crate) fn entry(&self, reply: &Reply, n: u32, sent: u64) -> Option<Entry> {
        if reply.granted {
            return None;
        }
        Some(match self {
            Algorithm::Gcra(a) => a.entry(reply, sent),
            Algorithm::Log(a) => a.entry(reply, n, sent),
            Algorithm::Multi(a) => a.entry(reply, n, sent),
        })
    }
}
