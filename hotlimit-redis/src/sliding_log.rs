//! [`LogScript`]: the core's [`SlidingLog`](hotlimit::SlidingLog) with its state in Redis
//! (`lua/sliding_log.lua`): its parameters in microseconds, its arguments, its quota, and its
//! denial-cache rule.
//!
//! The cache rule: a denial of n permits is remembered as "n or more permits are refused until
//! `free_at`" (local ns: the time the request was sent plus the reply's `retry_after`). Other
//! clients only add stamps, which makes the n-th oldest newer, so a request for at least n is
//! refused at least that long: conservative (a request for fewer goes to Redis).
//!
//! The log is never leased: a leased permit would be granted after the time the log recorded
//! for it, and the window counted from the recorded time would let the next `limit` permits in
//! while it is still in use (see [`crate::lease`]).

use std::sync::LazyLock;
use std::time::Duration;

use hotlimit::{ConfigError, Decision, Denied, Quota, Rate};

use crate::args::{Args, MAX_MICROS};
use crate::cache::Entry;
use crate::reply::Reply;
use crate::transport::Lua;

/// The script: the shared prelude (`now`, `ttl_extra`), then the log's body.
static SCRIPT: LazyLock<Lua> = LazyLock::new(|| {
    Lua::new(concat!(
        include_str!("lua/now.lua"),
        include_str!("lua/log_window.lua"),
        include_str!("lua/sliding_log.lua")
    ))
});

/// The log's parameters: `limit` per `period` (µs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LogScript {
    limit: u64,
    period: u64,
}

impl LogScript {
    /// The exact log for `rate`: the period rounded **up** to whole µs (never over-admits). A
    /// log's burst is its limit: `burst` must be `None`.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `burst` when one is given, or `rate` when the period exceeds
    /// 2^52 µs.
    pub(crate) fn new(rate: Rate, burst: Option<u64>) -> Result<LogScript, ConfigError> {
        if let Some(burst) = burst {
            return Err(ConfigError::invalid(
                "burst",
                burst,
                "a sliding log's burst is its limit: set the rate instead",
            ));
        }
        let period = rate.period_nanos().div_ceil(1000);
        if period > MAX_MICROS {
            return Err(ConfigError::invalid(
                "rate",
                rate,
                "period exceeds 2^52 µs (142 years): Lua's doubles would lose precision",
            ));
        }
        Ok(LogScript {
            limit: rate.limit(),
            period,
        })
    }

    pub(crate) fn script() -> &'static Lua {
        &SCRIPT
    }

    /// ARGV: limit, period, n (and the test hook's `now`; the log is never fenced: 0).
    pub(crate) fn args(&self, n: u32, now: Option<u64>, fence: u64) -> Args {
        Args::new(self.limit, self.period, n, now, fence)
    }

    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    /// `limit` per `period`: the log's promise as it is.
    pub(crate) fn quota(&self) -> Quota {
        Quota::new(self.limit, Duration::from_micros(self.period))
    }

    /// The cache's decision: refused while the entry holds and n is at least the refused n.
    #[inline(always)]
    pub(crate) fn cached(&self, entry: &Entry, n: u32, now: u64, quota: Quota) -> Option<Decision> {
        cached(entry, n, now, quota)
    }

    /// A denial's entry for `n` permits sent at local `sent` (ns).
    pub(crate) fn entry(&self, reply: &Reply, n: u32, sent: u64) -> Entry {
        entry(reply, n, sent)
    }
}

/// The log's cache rule (shared with the several windows of `multi_window.rs`): refused while
/// the entry holds and n is at least the refused n, under `quota`.
#[inline(always)]
pub(crate) fn cached(entry: &Entry, n: u32, now: u64, quota: Quota) -> Option<Decision> {
    if n < entry.n_min || now >= entry.free_at {
        return None;
    }
    Some(Decision::denied(
        quota,
        Denied::new(Some(Duration::from_nanos(entry.free_at - now))),
        entry.remaining,
        Duration::from_nanos(entry.reset_at.saturating_sub(now)),
    ))
}

/// A denial's entry for `n` permits sent at local `sent` (ns): n or more refused until the
/// reply's retry-after has passed.
pub(crate) fn entry(reply: &Reply, n: u32, sent: u64) -> Entry {
    Entry {
        free_at: sent + reply.retry_after * 1000,
        n_min: n,
        remaining: reply.remaining,
        reset_at: sent + reply.reset * 1000,
        binding: reply.binding,
    }
}
