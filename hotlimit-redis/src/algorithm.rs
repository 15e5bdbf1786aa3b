//! [`Algorithm`]: which script a [`RedisLimiter`](crate::RedisLimiter) runs, GCRA
//! ([`crate::gcra`]) or the exact sliding log ([`crate::sliding_log`]), and the one place where
//! the limiter's calls are sent to the module that owns them. What both scripts share is here
//! too: their arguments ([`Args`]) and the shape of their reply ([`Reply`]).
//!
//! Each algorithm's module owns its Lua (`include_str!` of its `.lua` file behind the shared
//! `now.lua` prelude), its parameters in microseconds, its [`Quota`], and its rule for the
//! local denial cache.

use std::time::Duration;

use hotlimit::{Decision, Denied, Quota};
use redis::Value;

use crate::cache::Entry;
use crate::error::Error;
use crate::gcra::GcraScript;
use crate::sliding_log::LogScript;
use crate::transport::Lua;

/// The largest microsecond value a script may see, with `now` added: 2^52, so that
/// now (~2^50.6 µs since the epoch) + tolerance stays below 2^53, where doubles stop being exact.
pub(crate) const MAX_MICROS: u64 = 1 << 52;

/// A limiter's algorithm with its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Algorithm {
    Gcra(GcraScript),
    Log(LogScript),
}

/// A script's ARGV: its two parameters, n, and the test hook's `now` if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Args {
    values: [u64; 4],
    len: usize,
}

impl Args {
    /// The two parameters `a` and `b`, the permits `n`, and the test hook's `now`.
    pub(crate) fn new(a: u64, b: u64, n: u32, now: Option<u64>) -> Args {
        match now {
            Some(now) => Args {
                values: [a, b, u64::from(n), now],
                len: 4,
            },
            None => Args {
                values: [a, b, u64::from(n), 0],
                len: 3,
            },
        }
    }

    pub(crate) fn as_slice(&self) -> &[u64] {
        &self.values[..self.len]
    }
}

impl Algorithm {
    pub(crate) fn script(&self) -> &'static Lua {
        match self {
            Algorithm::Gcra(_) => GcraScript::script(),
            Algorithm::Log(_) => LogScript::script(),
        }
    }

    /// The script's arguments for `n` permits (and the test hook's `now`).
    pub(crate) fn args(&self, n: u32, now: Option<u64>) -> Args {
        match self {
            Algorithm::Gcra(a) => a.args(n, now),
            Algorithm::Log(a) => a.args(n, now),
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

/// What both scripts answer: granted, remaining, retry-after (µs), reset (µs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reply {
    pub(crate) granted: bool,
    pub(crate) remaining: u64,
    pub(crate) retry_after: u64,
    pub(crate) reset: u64,
}

impl Reply {
    /// The reply of a script: four non-negative integers.
    ///
    /// # Errors
    ///
    /// [`Error::BadReply`] for anything else.
    pub(crate) fn parse(value: &Value) -> Result<Reply, Error> {
        let ints = ints::<4>(value)?;
        Ok(Reply {
            granted: ints[0] == 1,
            remaining: ints[1],
            retry_after: ints[2],
            reset: ints[3],
        })
    }

    /// The decision the reply says, under `quota`; `remaining` at most the quota's limit.
    pub(crate) fn decision(&self, quota: Quota) -> Decision {
        let reset = Duration::from_micros(self.reset);
        let remaining = self.remaining.min(quota.limit());
        if self.granted {
            Decision::allowed(quota, remaining, reset)
        } else {
            let retry = Denied::new(Some(Duration::from_micros(self.retry_after)));
            Decision::denied(quota, retry, remaining, reset)
        }
    }
}

/// A script's reply of exactly `N` non-negative integers.
///
/// # Errors
///
/// [`Error::BadReply`] for anything else.
pub(crate) fn ints<const N: usize>(value: &Value) -> Result<[u64; N], Error> {
    let bad = || Error::BadReply(format!("{value:?}"));
    let Value::Array(items) = value else {
        return Err(bad());
    };
    if items.len() != N {
        return Err(bad());
    }
    let mut ints = [0u64; N];
    for (slot, item) in ints.iter_mut().zip(items) {
        match item {
            Value::Int(i) if *i >= 0 => *slot = *i as u64,
            _ => return Err(bad()),
        }
    }
    Ok(ints)
}
