//! [`MultiScript`]: the core's [`MultiWindow`](hotlimit::MultiWindow) with its state in Redis
//! (`lua/multi_window.lua`): up to eight windows, each a counted ring (`SlidingWindow`'s strict
//! rule) or an exact log (`SlidingLog`'s), checked together and recorded in all or none by one
//! script in one round trip. Its parameters in microseconds, its arguments, its window keys
//! (one hash slot), its quota, its reply and its denial-cache rule.
//!
//! The cache rule is the log's (see [`crate::sliding_log`]): a denial of n is remembered as "n
//! or more are refused until `free_at`" (sent + the reply's `retry_after`, the latest wait of
//! the windows that refused). Other clients only add permits to a window, in a log a stamp and
//! in a ring a count in the newest bucket, so every window that refused n refuses n or more at
//! least that long: conservative.
//!
//! Atomicity needs no give-back here: Redis runs a script alone, so "check every window, then
//! record in all" is one step. Under a clock that goes back, a ring is judged from the newest
//! bucket a **grant** reached (a denial writes nothing), where the core's ring also moves on
//! the calls it refuses; both judge no earlier than that, so neither frees a permit (see
//! [`RedisLimiter::multi_window`](crate::RedisLimiter::multi_window)).

use std::sync::LazyLock;
use std::time::Duration;

use hotlimit::{ConfigError, Decision, Quota, Rate};
use redis::Value;

use crate::args::{Args, MAX_MICROS};
use crate::cache::Entry;
use crate::error::Error;
use crate::reply::{ints, Reply};
use crate::sliding_log;
use crate::transport::Lua;

/// The most windows one limiter holds (as the core's `MultiWindow::MAX_WINDOWS`).
pub(crate) const MAX_WINDOWS: usize = 8;
/// The most buckets of a ring (as the core's `SlidingWindow`).
const MAX_BUCKETS: usize = 1 << 16;
/// The largest limit of a ring (as the core's `SlidingWindow`: its count fits 32 bits).
const MAX_RING_LIMIT: u64 = (1 << 31) - 1;
/// The largest limit of a log (as the core's `SlidingLog`: 2^28 slots).
const MAX_LOG_LIMIT: u64 = 1 << 28;

/// The names a window's errors are reported under (as the core's builder).
const LIMIT_FIELDS: [&str; MAX_WINDOWS] = [
    "limits[0]",
    "limits[1]",
    "limits[2]",
    "limits[3]",
    "limits[4]",
    "limits[5]",
    "limits[6]",
    "limits[7]",
];
const BUCKET_FIELDS: [&str; MAX_WINDOWS] = [
    "buckets[0]",
    "buckets[1]",
    "buckets[2]",
    "buckets[3]",
    "buckets[4]",
    "buckets[5]",
    "buckets[6]",
    "buckets[7]",
];
const RATE_FIELDS: [&str; MAX_WINDOWS] = [
    "rates[0]", "rates[1]", "rates[2]", "rates[3]", "rates[4]", "rates[5]", "rates[6]", "rates[7]",
];

/// The script: the shared prelude (`now`, `ttl_extra`), then the windows' body.
static SCRIPT: LazyLock<Lua> = LazyLock::new(|| {
    Lua::new(concat!(
        include_str!("lua/now.lua"),
        include_str!("lua/log_window.lua"),
        include_str!("lua/multi_window.lua")
    ))
});

/// A window as the builder was told: its rate, and `Some(buckets)` for a counted ring or
/// `None` for an exact log.
pub(crate) type WindowSpec = (Rate, Option<usize>);

/// One window's parameters in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct WindowScript {
    limit: u64,
    period: u64,
    /// A ring's bucket width ⌈period / buckets⌉ (≥ 1); 0 for a log.
    width: u64,
}

impl WindowScript {
    /// What a client may spend from full and over how long: a ring's `limit` per `period` plus
    /// one bucket width (a grant counts until its bucket leaves the window), a log's `limit`
    /// per `period` (as the core's `MultiWindow`).
    fn quota(&self) -> Quota {
        Quota::new(self.limit, Duration::from_micros(self.period + self.width))
    }
}

/// The windows' parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MultiScript {
    windows: [WindowScript; MAX_WINDOWS],
    len: usize,
}

impl MultiScript {
    /// The windows `specs`, each period rounded **up** to whole µs (never over-admits). The
    /// burst of hard windows is their limits: `burst` must be `None`.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `burst` when one is given; `windows` for none or more than 8;
    /// `buckets[i]` for a ring of 0 buckets, more than 65,536, or more than the period's
    /// microseconds; `limits[i]` for a ring's limit over 2^31 − 1 or a log's over 2^28;
    /// `rates[i]` for a period over 2^52 µs.
    pub(crate) fn new(
        specs: &[WindowSpec],
        burst: Option<u64>,
    ) -> Result<MultiScript, ConfigError> {
        if let Some(burst) = burst {
            return Err(ConfigError::invalid(
                "burst",
                burst,
                "hard windows have no burst: each window's limit is its burst",
            ));
        }
        if specs.is_empty() || specs.len() > MAX_WINDOWS {
            return Err(ConfigError::invalid(
                "windows",
                specs.len(),
                "must be between 1 and 8 windows",
            ));
        }
        let mut windows = [WindowScript::default(); MAX_WINDOWS];
        for (i, (&(rate, buckets), slot)) in specs.iter().zip(&mut windows).enumerate() {
            let period = rate.period_nanos().div_ceil(1000);
            if period > MAX_MICROS {
                return Err(ConfigError::invalid(
                    RATE_FIELDS[i],
                    rate,
                    "period exceeds 2^52 µs (142 years): Lua's doubles would lose precision",
                ));
            }
            let limit = rate.limit();
            let width = match buckets {
                None => {
                    if limit > MAX_LOG_LIMIT {
                        return Err(ConfigError::invalid(
                            LIMIT_FIELDS[i],
                            limit,
                            "an exact log's limit must be at most 2^28 = 268435456 (one stamp per permit)",
                        ));
                    }
                    0
                }
                Some(buckets) => {
                    let reason = if buckets == 0 {
                        Some("must be at least 1")
                    } else if buckets > MAX_BUCKETS {
                        Some("must be at most 65536")
                    } else if buckets as u64 > period {
                        Some("more buckets than microseconds in the period")
                    } else {
                        None
                    };
                    if let Some(reason) = reason {
                        return Err(ConfigError::invalid(BUCKET_FIELDS[i], buckets, reason));
                    }
                    if limit > MAX_RING_LIMIT {
                        return Err(ConfigError::invalid(
                            LIMIT_FIELDS[i],
                            limit,
                            "a ring's limit must be at most 2147483647 (as the core's SlidingWindow)",
                        ));
                    }
                    period.div_ceil(buckets as u64)
                }
            };
            *slot = WindowScript {
                limit,
                period,
                width,
            };
        }
        Ok(MultiScript {
            windows,
            len: specs.len(),
        })
    }

    pub(crate) fn script() -> &'static Lua {
        &SCRIPT
    }

    fn windows(&self) -> &[WindowScript] {
        &self.windows[..self.len]
    }

    /// How many windows.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// ARGV: k, 0, n, the test hook's `now` (0: none), the fence (0: never fenced), then
    /// limit, period and width per window.
    pub(crate) fn args(&self, n: u32, now: Option<u64>) -> Args {
        let mut extra = [0u64; 3 * MAX_WINDOWS];
        for (chunk, w) in extra.chunks_exact_mut(3).zip(self.windows()) {
            chunk.copy_from_slice(&[w.limit, w.period, w.width]);
        }
        Args::with_windows(self.len as u64, n, now.unwrap_or(0), &extra[..3 * self.len])
    }

    /// The most permits one request can ever get: the smallest limit.
    pub(crate) fn capacity(&self) -> u64 {
        self.windows().iter().map(|w| w.limit).min().unwrap_or(0)
    }

    /// The first window's quota (what [`RedisLimiter::quota`](crate::RedisLimiter::quota)
    /// reports, as the core's `MultiWindow` does for `Decide::quota`); a decision reports its
    /// binding window's.
    pub(crate) fn quota(&self) -> Quota {
        self.window_quota(0)
    }

    /// Window `i`'s quota (the first window's past the last).
    pub(crate) fn window_quota(&self, i: usize) -> Quota {
        self.windows().get(i).unwrap_or(&self.windows[0]).quota()
    }

    /// The script's reply: five non-negative integers, the binding window among ours.
    ///
    /// # Errors
    ///
    /// [`Error::BadReply`] for anything else.
    pub(crate) fn parse(&self, value: &Value) -> Result<Reply, Error> {
        let ints = ints::<5>(value)?;
        if ints[4] >= self.len as u64 {
            return Err(Error::BadReply(format!("{value:?}")));
        }
        Ok(Reply {
            granted: ints[0] == 1,
            remaining: ints[1],
            retry_after: ints[2],
            reset: ints[3],
            binding: ints[4] as usize,
        })
    }

    /// The cache's decision: the log's rule, under the binding window's quota at the denial.
    #[inline(always)]
    pub(crate) fn cached(&self, entry: &Entry, n: u32, now: u64) -> Option<Decision> {
        sliding_log::cached(entry, n, now, self.window_quota(entry.binding))
    }

    /// A denial's entry for `n` permits sent at local `sent` (ns): the log's.
    pub(crate) fn entry(&self, reply: &Reply, n: u32, sent: u64) -> Entry {
        sliding_log::entry(reply, n, sent)
    }

    /// Window `i`'s Redis key for the limiter key `key`: `key` and `:i` when `key` has a hash
    /// tag (its tag places every window); otherwise `{key}:i` when `key` is not empty and holds
    /// no brace, and `{hex}key:i` (hex: the 64-bit FNV-1a hash of `key`) for any other key. So
    /// every window of a key lives in one Redis Cluster slot.
    pub(crate) fn window_key(key: &[u8], i: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(key.len() + 24);
        if crate::fence::hash_tag(key).is_some() {
            out.extend_from_slice(key);
        } else if !key.is_empty() && !key.iter().any(|&b| b == b'{' || b == b'}') {
            out.push(b'{');
            out.extend_from_slice(key);
            out.push(b'}');
        } else {
            let hash = key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
            out.extend_from_slice(format!("{{{hash:016x}}}").as_bytes());
            out.extend_from_slice(key);
        }
        out.extend_from_slice(format!(":{i}").as_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs(windows: &[(u64, u64, Option<usize>)]) -> Vec<WindowSpec> {
        windows
            .iter()
            .map(|&(l, s, b)| (Rate::new(l, Duration::from_secs(s)).unwrap(), b))
            .collect()
    }

    #[test]
    fn bad_windows_are_named() {
        let field = |w: &[(u64, u64, Option<usize>)], burst| {
            MultiScript::new(&specs(w), burst).unwrap_err().field()
        };
        assert_eq!(field(&[], None), "windows");
        assert_eq!(field(&[(1, 1, None); 9], None), "windows");
        assert_eq!(field(&[(1, 1, None)], Some(3)), "burst");
        assert_eq!(field(&[(1, 1, None), (1, 1, Some(0))], None), "buckets[1]");
        assert_eq!(field(&[(1, 1, Some(70_000))], None), "buckets[0]");
        assert_eq!(
            field(&[(1, 1, None), (1 << 31, 1, Some(10))], None),
            "limits[1]"
        );
        assert_eq!(field(&[(1 << 29, 1, None)], None), "limits[0]");
        let long = Rate::new(1, Duration::from_micros((1 << 52) + 1)).unwrap();
        assert_eq!(
            MultiScript::new(&[(long, None)], None).unwrap_err().field(),
            "rates[0]"
        );
        let tiny = Rate::new(1, Duration::from_micros(3)).unwrap();
        assert_eq!(
            MultiScript::new(&[(tiny, Some(4))], None)
                .unwrap_err()
                .field(),
            "buckets[0]"
        );
        let ok =
            MultiScript::new(&specs(&[(100, 60, Some(10)), (2000, 3600, None)]), None).unwrap();
        assert_eq!(ok.capacity(), 100);
        assert_eq!(ok.quota(), Quota::new(100, Duration::from_secs(66)));
        assert_eq!(
            ok.window_quota(1),
            Quota::new(2000, Duration::from_secs(3600))
        );
        assert_eq!(
            ok.args(2, Some(7)).as_slice(),
            &[
                2,
                0,
                2,
                7,
                0,
                100,
                60_000_000,
                6_000_000,
                2000,
                3_600_000_000,
                0
            ]
        );
    }

    #[test]
    fn every_window_key_has_the_same_hash_tag() {
        let tag = |k: &[u8]| crate::fence::hash_tag(k).map(<[u8]>::to_vec);
        for key in [
            &b"hotlimit:bob"[..],
            b"rl:{t1}bob",
            b"",
            b"{}x",
            b"}x{",
            b"a{b",
            b"{",
        ] {
            let keys: Vec<Vec<u8>> = (0..8).map(|i| MultiScript::window_key(key, i)).collect();
            let first = tag(&keys[0]);
            assert!(first.is_some(), "{:?}", String::from_utf8_lossy(&keys[0]));
            assert!(keys.iter().all(|k| tag(k) == first), "{key:?}");
            let mut unique = keys.clone();
            unique.dedup();
            assert_eq!(unique.len(), 8);
        }
        assert_eq!(
            MultiScript::window_key(b"hotlimit:bob", 1),
            b"{hotlimit:bob}:1"
        );
        assert_eq!(MultiScript::window_key(b"rl:{t1}bob", 0), b"rl:{t1}bob:0");
    }
}
