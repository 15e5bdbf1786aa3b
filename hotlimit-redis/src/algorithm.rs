//! [`Algorithm`]: which script a [`RedisLimiter`](crate::RedisLimiter) runs, GCRA
//! ([`crate::gcra`]) or the exact sliding log ([`crate::sliding_log`]), and the one place where
//! the limiter's calls are sent to the module that owns them. What both scripts share is here
//! elsewhere, below both: their arguments (`args.rs`) and the shape of their reply (`reply.rs`).
//!
//! Each algorithm's module owns its Lua (`include_str!` of its `.lua` file behind the shared
//! `now.lua` prelude), its parameters in microseconds, its [`Quota`], and its rule for the
//! local denial cache.

use hotlimit::{Decision, Quota};

use crate::args::Args;
use crate::cache::Entry;
use crate::gcra::GcraScript;
use crate::reply::Reply;
use crate::sliding_log::LogScript;
use crate::transport::Lua;

/// A limiter's algorithm with its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Algorithm {
    Gcra(GcraScript),
    Log(LogScript),
}

impl Algorithm {
    pub(crate) fn script(&self) -> &'static Lua {
        match self {
            Algorithm::Gcra(_) => GcraScript::script(),
            Algorithm::Log(_) => LogScript::script(),
        }
    }

    /// The script's arguments for `n` permits (and the test hook's `now`, and the fence in
    /// µs: 0 for none).
    pub(crate) fn args(&self, n: u32, now: Option<u64>, fence: u64) -> Args {
        match self {
            Algorithm::Gcra(a) => a.args(n, now, fence),
            Algorithm::Log(a) => a.args(n, now, fence),
        }
    }

    /// The most permits one request can ever get.
    pub(crate) fn capacity(&self) -> u64 {
        match self {
            Algorithm::Gcra(a) => a.burst(),
            Algorithm::Log(a) => a.limit(),
        }
    }

    /// The quota the limiter reports (see each algorithm's `quota`).
    pub(crate) fn quota(&self) -> Quota {
        match self {
            Algorithm::Gcra(a) => a.quota(),
            Algorithm::Log(a) => a.quota(),
        }
    }

    /// The cache's decision for `n` permits at local `now` (ns) from `entry`, or `None` when
    /// Redis must be asked.
    #[inline(always)]
    pub(crate) fn cached(&self, entry: &Entry, n: u32, now: u64, quota: Quota) -> Option<Decision> {
        match self {
            Algorithm::Gcra(a) => a.cached(entry, n, now, quota),
            Algorithm::Log(a) => a.cached(entry, n, now, quota),
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
        })
    }
}
