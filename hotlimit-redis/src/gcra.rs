//! [`GcraScript`]: the core's [`Gcra`](hotlimit::Gcra) with its state in Redis (`lua/gcra.lua`):
//! its parameters in microseconds, its arguments, its quota, and its denial-cache rule, which
//! is the core's own decision ([`GcraRule`]) run on the TAT a denial reported.
//!
//! The cache rule: a denial's reply says how far the key's TAT lies ahead of the server's
//! `now` (`reset`). Remembered as a local TAT (the local time the request was sent plus
//! `reset`), it is never later than the server's (the server decided after the request left),
//! and only time lowers a TAT (other clients' grants raise it). So for every n the core's
//! decision on that TAT is the script's: a denial there is a denial in Redis, with the same
//! `retry_after`, `remaining` and `reset`; a grant there means Redis must be asked.

use std::sync::LazyLock;
use std::time::Duration;

use hotlimit::{ConfigError, Decision, GcraRule, Quota, Rate};

use crate::args::{Args, MAX_MICROS};
use crate::cache::Entry;
use crate::reply::Reply;
use crate::transport::Lua;

/// The script: the shared prelude (`now`, `ttl_extra`), then GCRA's body, joined at compile
/// time (one script text, loaded and invoked by one hash).
static SCRIPT: LazyLock<Lua> = LazyLock::new(|| {
    Lua::new(concat!(
        include_str!("lua/now.lua"),
        include_str!("lua/gcra.lua")
    ))
});

/// GCRA's parameters: emission interval I and tolerance τ = b·I in microseconds (as the
/// script counts), and the same rule in nanoseconds for the local cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GcraScript {
    interval: u64,
    tolerance: u64,
    /// I and b in nanoseconds (I µs × 1000; τ ≤ 2^52 µs, so τ ns < 2^62).
    rule: GcraRule,
}

impl GcraScript {
    /// GCRA for `rate` with `burst` (default `rate.limit()`): I = ⌈period / limit⌉ in whole µs.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `rate` (an interval under 1 µs) or `burst` (0, or b·I over
    /// 2^52 µs).
    pub(crate) fn new(rate: Rate, burst: Option<u64>) -> Result<GcraScript, ConfigError> {
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
            Some(tolerance) if tolerance <= MAX_MICROS => Ok(GcraScript {
                interval,
                tolerance,
                // I ≤ τ ≤ 2^52 µs: I·1000 and b·I·1000 fit in u64, and b, I ≥ 1.
                rule: GcraRule::new(interval * 1000, burst)?,
            }),
            _ => Err(ConfigError::invalid(
                "burst",
                burst,
                "burst × emission interval exceeds 2^52 µs (142 years): Lua's doubles would lose precision",
            )),
        }
    }

    pub(crate) fn script() -> &'static Lua {
        &SCRIPT
    }

    /// ARGV: I, τ, n (and the test hook's `now`, and the fence: 0 for none).
    pub(crate) fn args(&self, n: u32, now: Option<u64>, fence: u64) -> Args {
        Args::new(self.interval, self.tolerance, n, now, fence)
    }

    /// The emission interval I in µs.
    pub(crate) fn interval(&self) -> u64 {
        self.interval
    }

    /// The tolerance τ = b·I in µs.
    pub(crate) fn tolerance(&self) -> u64 {
        self.tolerance
    }

    pub(crate) fn burst(&self) -> u64 {
        self.rule.burst()
    }

    /// The truthful quota of a GCRA: the burst b per the time it takes to refill it from
    /// empty, b·I (not `limit` per `period`: with b = `limit` a client can spend `limit` at
    /// once and then one per I, so `limit` per `period` understates a full key and overstates
    /// an empty one). Its `remaining` is at most b.
    pub(crate) fn quota(&self) -> Quota {
        Quota::new(self.burst(), Duration::from_micros(self.tolerance))
    }

    /// The cache's decision: the core's [`GcraRule::decide`] on the remembered TAT (local ns).
    #[inline(always)]
    pub(crate) fn cached(&self, entry: &Entry, n: u32, now: u64, quota: Quota) -> Option<Decision> {
        let tat = entry.free_at;
        let denied = self.rule.decide(tat, now, n).err()?;
        Some(Decision::denied(
            quota,
            denied,
            self.rule.remaining(tat, now),
            Duration::from_nanos(tat.saturating_sub(now)),
        ))
    }

    /// A denial's entry: the key's TAT on the local clock (ns), `reset` after the request was
    /// sent.
    pub(crate) fn entry(&self, reply: &Reply, sent: u64) -> Entry {
        Entry {
            free_at: sent + reply.reset * 1000,
            n_min: 0,
            remaining: 0,
            reset_at: 0,
            binding: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    //! The denial cache against the core's decision, without Redis: a core `Gcra` on a manual
    //! clock plays the server (its denial's `reset` is what the script replies), and every
    //! later cached answer must be the core's own answer at that time.

    use super::*;
    use hotlimit::{Gcra, ManualClock};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Grants on the core until a denial at `sent` (a whole µs: the server counts µs); the
        /// cache remembers it. Then, at later times and for every n: while nobody else has been
        /// granted, the cache denies exactly when the core does, with the same wait, remaining
        /// and reset; once other clients have been granted (the TAT only rose), a cached denial
        /// is still a denial of the core's.
        #[test]
        fn cached_denials_are_the_cores(
            interval_us in 1u64..5_000,
            burst in 1u64..20,
            grants in proptest::collection::vec((0u64..3_000, 1u32..4), 1..30),
            later in proptest::collection::vec((0u64..20_000, 1u32..20, any::<bool>()), 1..30),
        ) {
            let rate = Rate::new(1, Duration::from_micros(interval_us)).unwrap();
            let script = GcraScript::new(rate, Some(burst)).unwrap();
            let core = Gcra::builder(rate).burst(burst).clock(ManualClock::new()).build().unwrap();
            let quota = script.quota();
            let mut now = 1_000_000u64; // µs
            let mut denial = None;
            for (dt, n) in grants {
                now += dt;
                if u64::from(n) <= burst && core.try_acquire_n_at(n, now * 1000).is_err() {
                    denial = Some((now * 1000, n));
                    break;
                }
            }
            let Some((sent, n)) = denial else { return Ok(()) };
            // The script's reply to that denial (the same integer arithmetic, in µs).
            let reply = Reply {
                granted: false,
                remaining: core.remaining_at(sent),
                retry_after: 0,
                reset: core.reset_at(sent).as_micros() as u64,
                binding: 0,
            };
            let entry = script.entry(&reply, sent);
            prop_assert!(script.cached(&entry, n, sent, quota).is_some(), "the denial is cached");
            let mut exact = true;
            let mut at = sent;
            for (dt, m, other) in later {
                at += dt * 1000;
                let m = m.min(burst as u32);
                if other && core.try_acquire_n_at(1, at).is_ok() {
                    exact = false; // another client's grant: the TAT rose behind the cache
                }
                let cached = script.cached(&entry, m, at, quota);
                let (remaining, reset) = (core.remaining_at(at), core.reset_at(at));
                let decided = core.try_acquire_n_at(m, at);
                match cached {
                    Some(d) => {
                        let Err(w) = decided else {
                            return Err(TestCaseError::fail(format!(
                                "the cache denied {m} at +{} µs, the core granted", (at - sent) / 1000)));
                        };
                        if exact {
                            prop_assert_eq!(d.denial().unwrap(), w);
                            prop_assert_eq!((d.remaining(), d.reset()), (remaining, reset));
                        } else {
                            prop_assert!(d.denial().unwrap().retry_after() <= w.retry_after());
                        }
                    }
                    None if exact => prop_assert!(decided.is_ok(), "the cache asked Redis for {m}, the core denied"),
                    None => {}
                }
                if decided.is_ok() {
                    exact = false;
                }
            }
        }
    }
}
