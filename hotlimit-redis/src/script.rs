//! The two Lua scripts, their arguments, and their replies.

use std::sync::LazyLock;
use std::time::Duration;

use hotlimit::{Decision, Denied, Quota, Rate};
use redis::Script;

use crate::error::Error;
use hotlimit::ConfigError;

/// The largest microsecond value a script may see, with `now` added: 2^52, so that
/// now (~2^50.6 µs since the epoch) + tolerance stays below 2^53, where doubles stop being exact.
pub(crate) const MAX_MICROS: u64 = 1 << 52;

/// Each script is the shared prelude (`now`, `ttl_extra`) followed by its own body, joined at
/// compile time: one script text, loaded and invoked by one hash, as before.
static GCRA: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("lua/now.lua"),
        include_str!("lua/gcra.lua")
    ))
});
static SLIDING_LOG: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("lua/now.lua"),
        include_str!("lua/sliding_log.lua")
    ))
});

/// Which script, with its parameters in microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Algorithm {
    /// GCRA: emission interval I and tolerance τ = b·I (µs), burst b.
    Gcra {
        interval: u64,
        tolerance: u64,
        burst: u64,
    },
    /// Exact sliding log: `limit` per `period` (µs).
    Log { limit: u64, period: u64 },
}

impl Algorithm {
    /// GCRA for `rate` with `burst` (default `rate.limit()`): I = ⌈period / limit⌉ in whole µs.
    pub(crate) fn gcra(rate: Rate, burst: Option<u64>) -> Result<Algorithm, ConfigError> {
        let limit = u128::from(rate.limit());
        let period_ns = u128::from(rate.period_nanos());
        if period_ns < limit * 1000 {
            return Err(ConfigError::invalid(
                "rate",
                rate,
                "emission interval period/limit is under 1 µs (the scripts count microseconds)",
            ));
        }
        // ≤ period in µs ≤ u64::MAX / 1000.
        let interval = period_ns.div_ceil(limit * 1000) as u64;
        let burst = burst.unwrap_or(rate.limit());
        if burst == 0 {
            return Err(ConfigError::invalid("burst", burst, "must be at least 1"));
        }
        match burst.checked_mul(interval) {
            Some(tolerance) if tolerance <= MAX_MICROS => Ok(Algorithm::Gcra {
                interval,
                tolerance,
                burst,
            }),
            _ => Err(ConfigError::invalid(
                "burst",
                burst,
                "burst × emission interval exceeds 2^52 µs (142 years): Lua's doubles would lose precision",
            )),
        }
    }

    /// The exact log for `rate`: the period rounded **up** to whole µs (never over-admits).
    pub(crate) fn log(rate: Rate) -> Result<Algorithm, ConfigError> {
        let period = rate.period_nanos().div_ceil(1000);
        if period > MAX_MICROS {
            return Err(ConfigError::invalid(
                "rate",
                rate,
                "period exceeds 2^52 µs (142 years): Lua's doubles would lose precision",
            ));
        }
        Ok(Algorithm::Log {
            limit: rate.limit(),
            period,
        })
    }

    /// The most permits one request can ever get.
    pub(crate) fn capacity(&self) -> u64 {
        match *self {
            Algorithm::Gcra { burst, .. } => burst,
            Algorithm::Log { limit, .. } => limit,
        }
    }

    pub(crate) fn script(&self) -> &'static Script {
        match self {
            Algorithm::Gcra { .. } => &GCRA,
            Algorithm::Log { .. } => &SLIDING_LOG,
        }
    }

    /// The script's ARGV: its two parameters, n, and the test hook's `now` if any.
    pub(crate) fn args(&self, n: u32, now: Option<u64>) -> ([u64; 4], usize) {
        let (a, b) = match *self {
            Algorithm::Gcra {
                interval,
                tolerance,
                ..
            } => (interval, tolerance),
            Algorithm::Log { limit, period } => (limit, period),
        };
        match now {
            Some(now) => ([a, b, u64::from(n), now], 4),
            None => ([a, b, u64::from(n), 0], 3),
        }
    }
}

/// What a script answered: granted, remaining, retry-after (µs), reset (µs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reply {
    pub(crate) granted: bool,
    pub(crate) remaining: u64,
    pub(crate) retry_after: u64,
    pub(crate) reset: u64,
}

impl Reply {
    pub(crate) fn parse(value: &redis::Value) -> Result<Reply, Error> {
        let bad = || Error::BadReply(format!("{value:?}"));
        let redis::Value::Array(items) = value else {
            return Err(bad());
        };
        let mut ints = [0u64; 4];
        if items.len() != 4 {
            return Err(bad());
        }
        for (slot, item) in ints.iter_mut().zip(items) {
            match item {
                redis::Value::Int(i) if *i >= 0 => *slot = *i as u64,
                _ => return Err(bad()),
            }
        }
        Ok(Reply {
            granted: ints[0] == 1,
            remaining: ints[1],
            retry_after: ints[2],
            reset: ints[3],
        })
    }

    pub(crate) fn decision(&self, quota: Quota) -> Decision {
        let reset = Duration::from_micros(self.reset);
        if self.granted {
            Decision::allowed(quota, self.remaining, reset)
        } else {
            let retry = Denied::new(Some(Duration::from_micros(self.retry_after)));
            Decision::denied(quota, retry, self.remaining, reset)
        }
    }
}
