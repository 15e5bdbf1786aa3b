//! The limiters a run compares, each on its own `ManualClock`.

use std::time::Duration;

use hotlimit::{
    Clock, ConfigError, Gcra, GcraRule, KeyPool, Limiter, ManualClock, Rate, ShardedGcra,
    SlidingLog, SlidingWindow,
};

use crate::error::SimError;
use crate::leased::Leased;

/// The leased row's round trip (a LAN's, with the server's own time), its leases' demand
/// window and largest lease: `LeasedGcra`'s defaults but the round trip.
const LEASE_RTT: u64 = 1_000_000;
const LEASE_TIME: u64 = 50_000_000;
const LEASE_MAX: u64 = 1024;

/// One limiter and its parameters: what a run builds for each trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Spec {
    /// `Gcra`, burst = limit.
    Gcra,
    /// `ShardedGcra`, burst = limit, requests handed to the shards in turn (as if they came
    /// from that many cores).
    ShardedGcra { shards: usize },
    /// hotlimit-redis's `LeasedGcra` (a model: `leased.rs`), burst = limit, requests handed to
    /// `processes` processes in turn, round trips of [`LEASE_RTT`].
    Leased { processes: usize },
    /// `SlidingLog`: exact.
    SlidingLog,
    /// Strict `SlidingWindow`: buckets close by time only.
    TimeClosed { buckets: usize },
    /// `SlidingWindow::count_closed(k)` over one time bucket (the whole period): buckets close
    /// by count, or when the period ends.
    CountClosed { k: u64 },
    /// `SlidingWindow::count_closed(k)` with `buckets` time buckets: whichever closes first.
    Both { buckets: usize, k: u64 },
    /// `SlidingWindow::approximate()`.
    Approximate { buckets: usize },
    /// `KeyPool` (a log): `keys` keys, limit / keys uses each.
    PoolLog { keys: u64 },
    /// `KeyPool::buckets(n)`: one strict window of `buckets` buckets per key.
    PoolBuckets { keys: u64, buckets: usize },
}

impl Spec {
    /// For titles and tables: "SlidingWindow time-closed, 10 buckets".
    pub(crate) fn label(&self) -> String {
        match *self {
            Spec::Gcra => "Gcra (burst = limit)".into(),
            Spec::ShardedGcra { shards } => format!("ShardedGcra, {shards} shards"),
            Spec::Leased { processes } => {
                format!("LeasedGcra (model), {processes} processes, 1 ms round trips")
            }
            Spec::SlidingLog => "SlidingLog".into(),
            Spec::TimeClosed { buckets } => {
                format!("SlidingWindow time-closed, {buckets} buckets")
            }
            Spec::CountClosed { k } => format!("SlidingWindow count-closed, k = {k}"),
            Spec::Both { buckets, k } => {
                format!("SlidingWindow both, {buckets} buckets, k = {k}")
            }
            Spec::Approximate { buckets } => {
                format!("SlidingWindow approximate, {buckets} buckets")
            }
            Spec::PoolLog { keys } => format!("KeyPool log, {keys} keys"),
            Spec::PoolBuckets { keys, buckets } => {
                format!("KeyPool bucketed, {keys} keys, {buckets} buckets")
            }
        }
    }

    /// For file names: "window-time-10".
    pub(crate) fn slug(&self) -> String {
        match *self {
            Spec::Gcra => "gcra".into(),
            Spec::ShardedGcra { shards } => format!("sharded-gcra-{shards}"),
            Spec::Leased { processes } => format!("leased-gcra-{processes}"),
            Spec::SlidingLog => "sliding-log".into(),
            Spec::TimeClosed { buckets } => format!("window-time-{buckets}"),
            Spec::CountClosed { k } => format!("window-count-k{k}"),
            Spec::Both { buckets, k } => format!("window-both-{buckets}-k{k}"),
            Spec::Approximate { buckets } => format!("window-approximate-{buckets}"),
            Spec::PoolLog { keys } => format!("keypool-log-{keys}"),
            Spec::PoolBuckets { keys, buckets } => format!("keypool-buckets-{keys}-{buckets}"),
        }
    }

    /// How far above `limit` a window of one period may go under this limiter's own
    /// guarantee: 0 for every hard cap; `limit` for approximate mode (documented: up to 2 ×
    /// the cap); the burst b = limit for GCRA, whose promise is b + d/I in any interval d
    /// (d = period: b + limit).
    pub(crate) fn allowed_over(&self, limit: u64) -> u64 {
        match self {
            Spec::Gcra
            | Spec::ShardedGcra { .. }
            | Spec::Leased { .. }
            | Spec::Approximate { .. } => limit,
            _ => 0,
        }
    }

    /// True for key pools, which hand out one key per call (no trace with costs above 1).
    pub(crate) fn is_pool(&self) -> bool {
        matches!(self, Spec::PoolLog { .. } | Spec::PoolBuckets { .. })
    }
}

/// The limiters compared on a trace of rate `limit` per period: one of each kind, several
/// bucket counts, and count thresholds k of 1, limit/20 and limit/5; key pools of `keys` keys
/// when `keys` divides `limit` (each key gets limit / keys uses).
pub(crate) fn lineup(limit: u64, keys: u64) -> Vec<Spec> {
    let mut ks = vec![1, (limit / 20).max(1), (limit / 5).max(1)];
    ks.dedup();
    let mut specs = vec![
        Spec::SlidingLog,
        Spec::Gcra,
        Spec::ShardedGcra { shards: 4 },
        Spec::Leased { processes: 4 },
    ];
    specs.extend([4, 10, 60].map(|buckets| Spec::TimeClosed { buckets }));
    specs.extend(ks.iter().map(|&k| Spec::CountClosed { k }));
    specs.extend(ks.iter().map(|&k| Spec::Both { buckets: 10, k }));
    specs.extend([4, 10, 60].map(|buckets| Spec::Approximate { buckets }));
    if keys > 0 && limit.is_multiple_of(keys) {
        specs.push(Spec::PoolLog { keys });
        specs.push(Spec::PoolBuckets { keys, buckets: 10 });
    }
    specs
}

enum Inner {
    Gcra(Gcra<ManualClock>),
    Sharded(ShardedGcra<ManualClock>),
    Log(SlidingLog<ManualClock>),
    Window(SlidingWindow<ManualClock>),
    Pool(KeyPool<u32, ManualClock>),
    Leased(Leased),
}

/// A built limiter with the clock it reads: `try_acquire` sets the clock, then asks the
/// limiter through its public API, as a caller would.
pub(crate) struct SimLimiter {
    spec: Spec,
    clock: ManualClock,
    inner: Inner,
    /// Calls so far: `ShardedGcra` takes request i on shard i mod S.
    calls: u64,
}

impl std::fmt::Debug for SimLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimLimiter")
            .field("spec", &self.spec)
            .field("now", &self.clock.now())
            .finish_non_exhaustive()
    }
}

impl SimLimiter {
    /// Builds `spec` for `rate` on a fresh `ManualClock`.
    pub(crate) fn new(spec: Spec, rate: Rate) -> Result<SimLimiter, SimError> {
        let clock = ManualClock::new();
        let c = clock.clone();
        let limit = rate.limit();
        let window = || SlidingWindow::builder(rate).clock(c.clone());
        let built: Result<Inner, ConfigError> = match spec {
            Spec::Gcra => Gcra::builder(rate)
                .burst(limit)
                .clock(c.clone())
                .build()
                .map(Inner::Gcra),
            Spec::ShardedGcra { shards } => ShardedGcra::builder(rate)
                .burst(limit)
                .shards(shards)
                .clock(c.clone())
                .build()
                .map(Inner::Sharded),
            Spec::SlidingLog => SlidingLog::builder(rate)
                .clock(c.clone())
                .build()
                .map(Inner::Log),
            Spec::TimeClosed { buckets } => window().buckets(buckets).build().map(Inner::Window),
            Spec::CountClosed { k } => window()
                .buckets(1)
                .count_closed(k)
                .build()
                .map(Inner::Window),
            Spec::Both { buckets, k } => window()
                .buckets(buckets)
                .count_closed(k)
                .build()
                .map(Inner::Window),
            Spec::Approximate { buckets } => window()
                .buckets(buckets)
                .approximate()
                .build()
                .map(Inner::Window),
            Spec::PoolLog { keys } | Spec::PoolBuckets { keys, .. } => {
                pool(spec, rate, keys, c.clone()).map(Inner::Pool)
            }
            Spec::Leased { processes } => {
                // The core's interval, ⌈period / limit⌉ ns, and b = limit.
                GcraRule::new(rate.period_nanos().div_ceil(limit), limit).map(|rule| {
                    Inner::Leased(Leased::new(
                        rule, processes, LEASE_RTT, LEASE_TIME, LEASE_MAX,
                    ))
                })
            }
        };
        let inner = built.map_err(|source| SimError::Config {
            limiter: spec.label(),
            source,
        })?;
        Ok(SimLimiter {
            spec,
            clock,
            inner,
            calls: 0,
        })
    }

    /// Asks for `permits` at `now` (nanoseconds; calls come in time order): `Ok` if granted,
    /// else the limiter's `retry_after` in nanoseconds (`None`: never).
    pub(crate) fn try_acquire(&mut self, now: u64, permits: u32) -> Result<(), Option<u64>> {
        self.clock.set(Duration::from_nanos(now));
        let call = self.calls;
        self.calls += 1;
        let result = match &mut self.inner {
            Inner::Leased(l) => return l.try_acquire(now, permits),
            Inner::Gcra(l) => l.try_acquire_n(permits),
            Inner::Sharded(l) => {
                let home = (call % l.shards() as u64) as usize;
                l.try_acquire_n_on_at(home, permits, self.clock.now())
            }
            Inner::Log(l) => l.try_acquire_n(permits),
            Inner::Window(l) => l.try_acquire_n(permits),
            // A pool hands out one key per call: `run` leaves pools out of traces with costs
            // above 1, and such a request is refused here rather than half served.
            Inner::Pool(_) if permits != 1 => return Err(None),
            Inner::Pool(p) => p.try_next_key().map(|_| ()),
        };
        result.map_err(|denied| denied.retry_after_nanos())
    }

    /// What the limiter itself reports as free at `now`, through its public read-back
    /// (`remaining_at`: reads only, so sampling it never changes a decision).
    pub(crate) fn reported_free(&self, now: u64) -> u64 {
        match &self.inner {
            Inner::Gcra(l) => l.remaining_at(now),
            Inner::Sharded(l) => l.remaining_at(now),
            Inner::Log(l) => l.remaining_at(now),
            Inner::Window(l) => l.remaining_at(now),
            // Every key's uses left, summed (O(keys) for a bucketed pool).
            Inner::Pool(p) => p.remaining_at(now),
            Inner::Leased(l) => l.remaining_at(now),
        }
    }
}

/// A key pool of `keys` keys sharing `rate`: limit / keys uses each per period.
fn pool(
    spec: Spec,
    rate: Rate,
    keys: u64,
    clock: ManualClock,
) -> Result<KeyPool<u32, ManualClock>, ConfigError> {
    let per_key = Rate::new(rate.limit() / keys.max(1), rate.period())?;
    let names: Vec<u32> = (0..keys.min(u64::from(u32::MAX)) as u32).collect();
    let builder = KeyPool::builder(names, per_key).clock(clock);
    match spec {
        Spec::PoolBuckets { buckets, .. } => builder.buckets(buckets).build(),
        _ => builder.build(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_limiter_of_the_lineup_builds() {
        for (limit, keys) in [(100, 10), (500, 500), (7, 10)] {
            let rate = Rate::per_second(limit).unwrap();
            let specs = lineup(limit, keys);
            assert_eq!(specs.iter().any(Spec::is_pool), limit.is_multiple_of(keys));
            for spec in specs {
                let mut l = SimLimiter::new(spec, rate).unwrap();
                // (A leased limiter's first request waits one round trip for its lease.)
                assert_eq!(l.try_acquire(0, 1), Ok(()), "{}", spec.label());
            }
        }
    }

    #[test]
    fn labels_and_slugs_are_distinct() {
        let specs = lineup(100, 10);
        let mut slugs: Vec<String> = specs.iter().map(Spec::slug).collect();
        slugs.sort();
        slugs.dedup();
        assert_eq!(slugs.len(), specs.len());
    }
}
