//! The scripts against the core: the same trace, with `now` passed into the script (the test
//! hook), gives the same decisions and retry-after as `Gcra` and `SlidingLog` on a manual clock.
//!
//! Units: the scripts count microseconds, the core nanoseconds. The core is built with the
//! period's microseconds as nanoseconds and fed the trace's microseconds as nanoseconds, so both
//! do the same integer arithmetic (I = ⌈period / limit⌉ in either unit) and must agree exactly.

mod common;

use std::cell::RefCell;
use std::time::Duration;

use hotlimit::{Denied, Gcra, Rate, SlidingLog};
use hotlimit_redis::{OnError, RedisLimiter, RedisLimiterBuilder, SyncConnection, TestClock};
use proptest::prelude::*;

use common::RedisServer;

/// Microseconds since the epoch in late 2023: the order of what the server's `TIME` gives,
/// with trailing zeros (numbers Lua must hand to `SET` as exact integers).
const T0: u64 = 1_700_000_000_000_000;

#[derive(Clone, Debug)]
struct Trace {
    limit: u64,
    period_us: u64,
    burst: u64,
    /// (µs to move the clock by, possibly back; permits asked for)
    steps: Vec<(i64, u32)>,
}

fn trace() -> impl Strategy<Value = Trace> {
    (1u64..12, 0u64..4).prop_flat_map(|(limit, scale)| {
        let period_us = [limit, 1_000, 1_000_000, 86_400_000_000][scale as usize].max(limit);
        (1..=limit * 2, Just(limit), Just(period_us)).prop_flat_map(
            move |(burst, limit, period_us)| {
                let span = (period_us as i64).max(4);
                let step = (
                    prop_oneof![8 => 0..span / 2, 1 => -span / 4..0, 1 => Just(0i64)],
                    0u32..=(burst.max(limit) as u32 + 1),
                );
                proptest::collection::vec(step, 1..24).prop_map(move |steps| Trace {
                    limit,
                    period_us,
                    burst,
                    steps,
                })
            },
        )
    })
}

fn times(steps: &[(i64, u32)]) -> impl Iterator<Item = (u64, u32)> + '_ {
    let mut now = T0;
    steps.iter().map(move |&(dt, n)| {
        now = now.saturating_add_signed(dt).max(T0);
        (now, n)
    })
}

/// Runs `check` on 1000 traces against one server, with a blocking connection to it.
fn each_trace(check: impl Fn(&mut SyncConnection, &Trace) -> Result<(), TestCaseError>) {
    let server = RedisServer::start();
    let con = RefCell::new(SyncConnection::new(server.client()));
    let config = ProptestConfig {
        cases: 1000,
        ..ProptestConfig::default()
    };
    proptest!(config, |(t in trace())| {
        check(&mut con.borrow_mut(), &t)?;
    });
}

/// Replays `t` on the limiter `builder` makes (no local cache, keys under `prefix`, `now` from
/// the trace) and on `model(n, now)` (the core's `try_acquire_n_at`, then on a grant the
/// `remaining` to expect, if it is checked): the same admissions, on a grant the same
/// `remaining`, and on a denial the same retry-after.
fn replay(
    con: &mut SyncConnection,
    t: &Trace,
    builder: RedisLimiterBuilder,
    prefix: &str,
    mut model: impl FnMut(u32, u64) -> Result<Option<u64>, Denied>,
) -> Result<(), TestCaseError> {
    let clock = TestClock::default();
    let redis = builder
        .local_cache(0)
        .prefix(common::unique_key(prefix))
        .test_clock(clock.clone())
        .build()
        .unwrap();
    for (now, n) in times(&t.steps) {
        clock.set_micros(now);
        let d = redis.decide_blocking(con, "k", n).unwrap();
        let want = model(n, now);
        prop_assert_eq!(d.is_allowed(), want.is_ok(), "n={} now={}", n, now - T0);
        match want {
            Ok(None) => {}
            Ok(Some(remaining)) => prop_assert_eq!(d.remaining(), remaining, "remaining"),
            Err(denied) => {
                let got = d
                    .denial()
                    .unwrap()
                    .retry_after()
                    .map(|r| r.as_micros() as u64);
                prop_assert_eq!(got, denied.retry_after_nanos(), "retry n={}", n);
            }
        }
    }
    prop_assert_eq!(redis.stats().errors, 0);
    Ok(())
}

/// The scripts' rate: the trace's limit per period, in microseconds.
fn rate_us(t: &Trace) -> Rate {
    Rate::new(t.limit, Duration::from_micros(t.period_us)).unwrap()
}

/// The core's rate: the same numbers read as nanoseconds (see the module's units).
fn rate_ns(t: &Trace) -> Rate {
    Rate::new(t.limit, Duration::from_nanos(t.period_us)).unwrap()
}

#[test]
fn gcra_script_decides_as_the_core() {
    each_trace(|con, t| {
        let redis = RedisLimiter::gcra(rate_us(t), OnError::FailClosed).burst(t.burst);
        let core = Gcra::builder(rate_ns(t))
            .burst(t.burst)
            .clock(hotlimit::ManualClock::new())
            .build()
            .unwrap();
        replay(con, t, redis, "model-gcra", |n, now| {
            core.try_acquire_n_at(n, now)?;
            Ok((n > 0).then(|| core.remaining_at(now)))
        })
    });
}

#[test]
fn sliding_log_script_decides_as_the_core() {
    each_trace(|con, t| {
        let redis = RedisLimiter::sliding_log(rate_us(t), OnError::FailClosed);
        let core = SlidingLog::builder(rate_ns(t))
            .clock(hotlimit::ManualClock::new())
            .build()
            .unwrap();
        // The exact log as a model of `remaining`: grant times still in the window.
        let mut log: Vec<u64> = Vec::new();
        replay(con, t, redis, "model-log", |n, now| {
            core.try_acquire_n_at(n, now)?;
            let stamp = log.last().copied().unwrap_or(0).max(now);
            log.extend(std::iter::repeat_n(stamp, n as usize));
            let used = log.iter().filter(|&&g| g + t.period_us > now).count() as u64;
            Ok(Some(t.limit.saturating_sub(used)))
        })
    });
}
