//! The rows every benchmark runs side by side: hotlimit's limiters, the peers users would pick
//! instead, and floors (what a call cannot be cheaper than). Peers and floors are wrapped in
//! `hotlimit::Limiter`, so every row is an `Arc<dyn Limiter>` and every harness (criterion
//! groups, `benches/scaling.rs`) treats them alike: same dynamic call, same loop.
//!
//! Adding a limiter is ONE line in [`rows`]: `Row::ours("name", limiter)`, built from the
//! path's [`Setup`] (its `limit`, `period`, `burst`). For the denied path `rows` exhausts every
//! row after building it.
//!
//! The `Mutex` peers live here, in benches/, never in `src/`.

// Each harness uses a different subset of this module.
#![allow(dead_code)]

use std::cell::Cell;
use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use hotlimit::{
    Clock, CoarseClock, Denied, Gcra, GcraMulti, GcraPair, IntKeyed, Keyed, Limiter, MultiWindow,
    QuantaClock, Rate, ShardedGcra, SlidingLog, SlidingWindow,
};

/// Which path a run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    /// Every call is granted: 1,000,000 per ms (one permit per ns), burst 1,000,000. Far above
    /// what the machine can call, so the limiter stays under-used ("idle": its state trails
    /// the clock), which is the common allowed case in production.
    Allowed,
    /// Every call is granted while the state runs AHEAD of the clock: one permit per µs and a
    /// burst of 4,000,000,000 (over an hour of credit), so each grant pushes the TAT 1 µs
    /// further than time moves and every grant depends on the previous one, as when a limiter
    /// with a large burst is being drawn down under load. The sliding-log peer has no burst
    /// separate from its limit, so it sits this path out.
    Busy,
    /// Every call is denied: 1 per hour, burst 1, taken before the run.
    Denied,
}

impl Path {
    /// Every path, allowed first.
    pub(crate) const ALL: [Path; 3] = [Path::Allowed, Path::Busy, Path::Denied];

    /// The limit, period and burst every row of this path is built with.
    pub(crate) fn setup(self) -> Setup {
        match self {
            Path::Allowed => Setup {
                limit: 1_000_000,
                period: Duration::from_millis(1),
                burst: 1_000_000,
            },
            Path::Busy => Setup {
                limit: 1_000,
                period: Duration::from_millis(1),
                burst: 4_000_000_000,
            },
            Path::Denied => Setup {
                limit: 1,
                period: Duration::from_secs(3600),
                burst: 1,
            },
        }
    }

    /// Lower-case name for output.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Path::Allowed => "allowed",
            Path::Busy => "busy",
            Path::Denied => "denied",
        }
    }
}

/// `limit` per `period`, burst `burst`: what every row of one path is configured with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Setup {
    pub(crate) limit: u64,
    pub(crate) period: Duration,
    pub(crate) burst: u64,
}

impl Setup {
    pub(crate) fn rate(&self) -> Rate {
        Rate::new(self.limit, self.period).expect("valid bench rate")
    }

    /// The emission interval, for peers configured by "one per interval".
    pub(crate) fn interval(&self) -> Duration {
        self.period / u32::try_from(self.limit).expect("bench limit fits u32")
    }

    fn burst_u32(&self) -> NonZeroU32 {
        NonZeroU32::new(u32::try_from(self.burst).expect("bench burst fits u32")).unwrap()
    }
}

/// Whose row it is: ratios are printed against `governor` (direct).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Ours,
    Peer,
    Floor,
    /// A candidate design measured beside the real rows (`benches/limiters/variants.rs`):
    /// checked for wrong-path calls like ours, left out of the plot like the floors.
    Variant,
}

/// One benchmark row.
#[derive(Clone)]
pub(crate) struct Row {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    pub(crate) limiter: Arc<dyn Limiter>,
}

impl Row {
    pub(crate) fn ours(name: &'static str, l: impl Limiter + 'static) -> Row {
        Row {
            name,
            kind: Kind::Ours,
            limiter: Arc::new(l),
        }
    }
    pub(crate) fn peer(name: &'static str, l: impl Limiter + 'static) -> Row {
        Row {
            name,
            kind: Kind::Peer,
            limiter: Arc::new(l),
        }
    }
    pub(crate) fn floor(name: &'static str, l: impl Limiter + 'static) -> Row {
        Row {
            name,
            kind: Kind::Floor,
            limiter: Arc::new(l),
        }
    }
}

/// The name of the row every ratio is taken against.
pub(crate) const BASELINE: &str = "governor";

/// Every row for `path`, limiters first, then peers, then floors. Denied-path rows are
/// exhausted before they are returned.
pub(crate) fn rows(path: Path) -> Vec<Row> {
    let s = path.setup();
    let mut rows = vec![
        // ---- hotlimit: one line per limiter ----
        Row::ours(
            "Gcra",
            Gcra::builder(s.rate()).burst(s.burst).build().unwrap(),
        ),
        Row::ours(
            "Gcra+CoarseClock",
            Gcra::builder(s.rate())
                .burst(s.burst)
                .clock(coarse())
                .build()
                .unwrap(),
        ),
        Row::ours(
            "ShardedGcra",
            ShardedGcra::builder(s.rate())
                .burst(s.burst)
                .build()
                .unwrap(),
        ),
        Row::ours("GcraPair", gcra_pair(&s)),
        Row::ours("GcraMulti (3 rates)", gcra_multi(&s, 3)),
        // One hot key of a keyed table (one client behind many connections, or an attacker):
        // beside `governor keyed (1 key)`.
        Row::ours("IntKeyed (1 key)", IntKeyedOneKey::new(&s)),
        Row::ours("Keyed<u64> (1 key)", KeyedOneKey::new(&s)),
        // ---- peers ----
        Row::peer(BASELINE, GovernorDirect::new(&s)),
        // Two rates on one caller, for GcraPair: both rates are the path's setup, so every
        // row does the full work of both (none can stop at a rate that never binds).
        Row::peer("Gcra then Gcra (burns quota)", GcraThenGcra::new(&s)),
        Row::peer("governor then governor", GovernorThenGovernor::new(&s)),
        Row::peer("throttle-net Hybrid of 2", ThrottleNetHybrid::new(&s)),
        Row::peer("governor keyed (1 key)", GovernorKeyed::new(&s)),
        Row::peer("ratelimit 2", RatelimitCrate::new(&s)),
        Row::peer(
            "rate-net 2",
            RateNetDirect::new(&s, clock_lib::SystemClock::new()),
        ),
        Row::peer(
            "rate-net 2+CoarseClock",
            RateNetDirect::new(&s, rate_net_coarse()),
        ),
        Row::peer("rate-net 2 keyed (1 key)", RateNetKeyed::new(&s)),
        Row::peer("Mutex token bucket", MutexBucket::new(&s)),
        // ---- floors ----
        Row::floor("floor: quanta now()", ClockRead(QuantaClock::new())),
        Row::floor("floor: quanta recent()", QuantaRecent::new()),
        Row::floor("floor: CoarseClock now()", ClockRead(coarse())),
        Row::floor("floor: Instant::now", InstantNow::new()),
        Row::floor("floor: shared load", SharedLoad::default()),
        Row::floor("floor: shared fetch_add", SharedFetchAdd::default()),
        Row::floor("floor: shared CAS loop", SharedCas::default()),
        Row::floor(
            "floor: shared CAS loop+Backoff",
            SharedCasBackoff::default(),
        ),
        Row::floor("floor: per-thread counters", PerThread::default()),
        Row::floor(
            "floor: quanta now() + fetch_add",
            ClockThen(QuantaClock::new(), SharedFetchAdd::default()),
        ),
        Row::floor(
            "floor: quanta now() + CAS+Backoff",
            ClockThen(QuantaClock::new(), SharedCasBackoff::default()),
        ),
        Row::floor(
            "floor: same, counter on the clock's line",
            SameLine::default(),
        ),
    ];
    if path != Path::Busy {
        // The windows and logs have no burst apart from their limit: no busy path.
        rows.insert(
            6,
            Row::peer(
                "Mutex<VecDeque> log+CoarseClock",
                MutexLog::with_clock(&s, coarse()),
            ),
        );
        rows.insert(6, Row::peer("Mutex<VecDeque> log", MutexLog::new(&s)));
        rows.insert(3, Row::ours("MultiWindow (2 rings)", multi_window2(&s)));
        rows.insert(
            3,
            Row::ours(
                "SlidingLog+CoarseClock",
                SlidingLog::builder(s.rate())
                    .clock(coarse())
                    .build()
                    .unwrap(),
            ),
        );
        rows.insert(
            3,
            Row::ours("SlidingLog", SlidingLog::new(s.rate()).unwrap()),
        );
        rows.insert(
            3,
            Row::ours("SlidingWindow", SlidingWindow::new(s.rate()).unwrap()),
        );
    }
    if path == Path::Denied {
        for row in &mut rows {
            if row.kind != Kind::Floor {
                exhaust(row.name, &*row.limiter, s.burst);
            }
        }
    }
    rows.insert(3, Row::ours("ShardedGcra, 16 shards", sharded16(path)));
    rows
}

/// [`ShardedGcra`] with 16 shards, as the default gives on 16 cores, for `path`: its setup,
/// except on the denied path, whose burst of 1 leaves room for one shard only: there 16 per
/// hour, burst 16, taken before it is returned, so a denial has 16 shards to consider.
pub(crate) fn sharded16(path: Path) -> ShardedGcra {
    let s = path.setup();
    if path != Path::Denied {
        return ShardedGcra::builder(s.rate())
            .burst(s.burst)
            .shards(16)
            .build()
            .unwrap();
    }
    let sharded = ShardedGcra::builder(Rate::per_hour(16).unwrap())
        .burst(16)
        .shards(16)
        .build()
        .unwrap();
    exhaust("ShardedGcra, 16 shards", &sharded, 16);
    sharded
}

/// Takes permits until one is denied; panics if the row never denies (a mis-configured row
/// would silently measure the wrong path).
fn exhaust(name: &str, l: &dyn Limiter, burst: u64) {
    for _ in 0..=burst + 1 {
        if l.try_acquire().is_err() {
            return;
        }
    }
    panic!("{name}: never denied after {burst} + 2 calls");
}

/// One coarse clock per process, shared by every row that uses it.
pub(crate) fn coarse() -> CoarseClock {
    static CLOCK: OnceLock<CoarseClock> = OnceLock::new();
    CLOCK.get_or_init(CoarseClock::new).clone()
}

// ---------------------------------------------------------------------------------------------
// Peers

/// `governor`'s direct limiter (its default: quanta clock, no middleware).
pub(crate) struct GovernorDirect(governor::DefaultDirectRateLimiter);

impl GovernorDirect {
    pub(crate) fn new(s: &Setup) -> Self {
        let quota = governor::Quota::with_period(s.interval())
            .unwrap()
            .allow_burst(s.burst_u32());
        GovernorDirect(governor::RateLimiter::direct(quota))
    }
}

impl Limiter for GovernorDirect {
    #[inline]
    fn try_acquire(&self) -> Result<(), Denied> {
        self.0.check().map_err(|_| Denied::new(None))
    }
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        match NonZeroU32::new(permits) {
            None => Ok(()),
            Some(n) => match self.0.check_n(n) {
                Ok(Ok(())) => Ok(()),
                _ => Err(Denied::new(None)),
            },
        }
    }
}

/// [`MultiWindow`] of two counted rings shaped like "100 per minute and 2,000 per hour": the
/// path's rate, and 20 times its limit over 60 times its period (on the allowed path 1,000,000
/// per ms and 20,000,000 per 60 ms, both far above what the machine can call; on the denied
/// path 1 per hour, which refuses first, and 20 per 60 hours).
pub(crate) fn multi_window2(s: &Setup) -> MultiWindow {
    let long = Rate::new(20 * s.limit, 60 * s.period).unwrap();
    MultiWindow::builder()
        .window(s.rate())
        .window(long)
        .build()
        .unwrap()
}

/// [`GcraPair`] with both rates the path's setup.
pub(crate) fn gcra_pair(s: &Setup) -> GcraPair {
    GcraPair::builder(s.rate(), s.rate())
        .first_burst(s.burst)
        .second_burst(s.burst)
        .build()
        .unwrap()
}

/// [`GcraMulti`] with `k` rates, each the path's setup.
pub(crate) fn gcra_multi(s: &Setup, k: usize) -> GcraMulti {
    (0..k)
        .fold(GcraMulti::builder(), |b, _| {
            b.rate_with_burst(s.rate(), s.burst)
        })
        .build()
        .unwrap()
}

/// Two `Gcra`s checked one after the other at one clock reading: what a user writes without a
/// composite. A denial by the second leaves the first charged (the wrong way; here for scale).
pub(crate) struct GcraThenGcra(Gcra, Gcra);

impl GcraThenGcra {
    pub(crate) fn new(s: &Setup) -> Self {
        let g = || Gcra::builder(s.rate()).burst(s.burst).build().unwrap();
        GcraThenGcra(g(), g())
    }
}

impl Limiter for GcraThenGcra {
    #[inline]
    fn try_acquire(&self) -> Result<(), Denied> {
        let now = self.0.clock().now();
        self.0.try_acquire_at(now)?;
        self.1.try_acquire_at(now)
    }
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        let now = self.0.clock().now();
        self.0.try_acquire_n_at(permits, now)?;
        self.1.try_acquire_n_at(permits, now)
    }
}

/// Two `governor` direct limiters checked one after the other (governor has no composite:
/// its issues #156, #117 and #167 ask for one); burns the first's quota like `GcraThenGcra`.
pub(crate) struct GovernorThenGovernor(GovernorDirect, GovernorDirect);

impl GovernorThenGovernor {
    pub(crate) fn new(s: &Setup) -> Self {
        GovernorThenGovernor(GovernorDirect::new(s), GovernorDirect::new(s))
    }
}

impl Limiter for GovernorThenGovernor {
    #[inline]
    fn try_acquire(&self) -> Result<(), Denied> {
        self.0.try_acquire()?;
        self.1.try_acquire()
    }
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        self.0.try_acquire_n(permits)?;
        self.1.try_acquire_n(permits)
    }
}

/// throttle-net 2's `Hybrid` of two token buckets (`Throttle`): all or nothing across them by
/// peeking every one, then taking each and refunding on a lost race.
pub(crate) struct ThrottleNetHybrid(throttle_net::Hybrid);

impl ThrottleNetHybrid {
    pub(crate) fn new(s: &Setup) -> Self {
        let bucket = || {
            throttle_net::Throttle::builder()
                .rate(u32::try_from(s.limit).expect("limit fits u32"), s.period)
                .burst(u32::try_from(s.burst).expect("burst fits u32"))
                .build()
        };
        ThrottleNetHybrid(
            throttle_net::Hybrid::builder()
                .limiter(bucket())
                .limiter(bucket())
                .build(),
        )
    }
}

impl Limiter for ThrottleNetHybrid {
    #[inline]
    fn try_acquire(&self) -> Result<(), Denied> {
        if self.0.try_acquire() {
            Ok(())
        } else {
            Err(Denied::new(None))
        }
    }
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        if self.0.try_acquire_with_cost(permits) {
            Ok(())
        } else {
            Err(Denied::new(None))
        }
    }
}

/// `IntKeyed<u64>`, all calls on one key: the lookup plus the grant on one hot slot.
pub(crate) struct IntKeyedOneKey(IntKeyed<u64>);

impl IntKeyedOneKey {
    pub(crate) fn new(s: &Setup) -> Self {
        IntKeyedOneKey(IntKeyed::builder(s.rate()).burst(s.burst).build().unwrap())
    }
}

impl Limiter for IntKeyedOneKey {
    #[inline]
    fn try_acquire(&self) -> Result<(), Denied> {
        self.0.try_acquire(7)
    }
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        self.0.try_acquire_n(7, permits)
    }
}

/// `Keyed<u64, Gcra>`, all calls on one key: as [`IntKeyedOneKey`], through the hashed table.
pub(crate) struct KeyedOneKey(Keyed<u64, Gcra>);

impl KeyedOneKey {
    pub(crate) fn new(s: &Setup) -> Self {
        KeyedOneKey(Keyed::gcra(s.rate()).burst(s.burst).build().unwrap())
    }
}

impl Limiter for KeyedOneKey {
    #[inline]
    fn try_acquire(&self) -> Result<(), Denied> {
        self.0.try_acquire(&7)
    }
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        self.0.try_acquire_n(&7, permits)
    }
}

/// `governor`'s keyed limiter (dashmap), all calls on one key: the per-key lookup is the cost.
pub(crate) struct GovernorKeyed(governor::DefaultKeyedRateLimiter<u64>);

impl GovernorKeyed {
    pub(crate) fn new(s: &Setup) -> Self {
        let quota = governor::Quota::with_period(s.interval())
            .unwrap()
            .allow_burst(s.burst_u32());
        GovernorKeyed(governor::RateLimiter::keyed(quota))
    }
}

impl Limiter for GovernorKeyed {
    #[inline]
    fn try_acquire(&self) -> Result<(), Denied> {
        self.0.check_key(&7).map_err(|_| Denied::new(None))
    }
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        match NonZeroU32::new(permits) {
            None => Ok(()),
            Some(n) => match self.0.check_key_n(&7, n) {
                Ok(Ok(())) => Ok(()),
                _ => Err(Denied::new(None)),
            },
        }
    }
}

/// The `ratelimit` crate's lock-free token bucket (std `Instant` clock, its default).
pub(crate) struct RatelimitCrate(ratelimit::Ratelimiter);

impl RatelimitCrate {
    pub(crate) fn new(s: &Setup) -> Self {
        let r = ratelimit::Ratelimiter::builder(s.limit)
            .period(s.period)
            .max_tokens(s.burst)
            .initial_available(s.burst)
            .build()
            .unwrap();
        RatelimitCrate(r)
    }
}

impl Limiter for RatelimitCrate {
    #[inline]
    fn try_acquire(&self) -> Result<(), Denied> {
        self.0.try_wait().map_err(|_| Denied::new(None))
    }
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        self.0
            .try_wait_n(u64::from(permits))
            .map_err(|_| Denied::new(None))
    }
}

/// The classic locked sliding log: a `Mutex<VecDeque>` of grant times; expire the old ones,
/// grant if fewer than `limit` remain. Same quanta clock as ours by default, or the coarse
/// clock beside `SlidingLog+CoarseClock` (the clock is read before the lock).
pub(crate) struct MutexLog<C = QuantaClock> {
    log: Mutex<VecDeque<u64>>,
    limit: usize,
    period: u64,
    clock: C,
}

impl MutexLog {
    pub(crate) fn new(s: &Setup) -> Self {
        MutexLog::with_clock(s, QuantaClock::new())
    }
}

impl<C: Clock> MutexLog<C> {
    pub(crate) fn with_clock(s: &Setup, clock: C) -> Self {
        MutexLog {
            log: Mutex::new(VecDeque::with_capacity(s.limit as usize)),
            limit: s.limit as usize,
            period: s.period.as_nanos() as u64,
            clock,
        }
    }
}

impl<C: Clock> Limiter for MutexLog<C> {
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        let now = self.clock.now();
        let mut log = self.log.lock().unwrap();
        while log
            .front()
            .is_some_and(|&t| t.saturating_add(self.period) <= now)
        {
            log.pop_front();
        }
        if log.len() + permits as usize > self.limit {
            return Err(Denied::new(None));
        }
        log.extend(std::iter::repeat_n(now, permits as usize));
        Ok(())
    }
}

/// A token bucket under a `Mutex`: credit in ns (capped at burst × interval), refilled by the
/// time elapsed, one interval per permit. Same quanta clock as ours.
pub(crate) struct MutexBucket {
    state: Mutex<(u64, u64)>, // (credit_ns, last_ns)
    interval: u64,
    cap: u64,
    clock: QuantaClock,
}

impl MutexBucket {
    pub(crate) fn new(s: &Setup) -> Self {
        let interval = s.interval().as_nanos() as u64;
        let cap = interval * s.burst;
        MutexBucket {
            state: Mutex::new((cap, 0)),
            interval,
            cap,
            clock: QuantaClock::new(),
        }
    }
}

impl Limiter for MutexBucket {
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        let now = self.clock.now();
        let cost = self.interval * u64::from(permits);
        let mut st = self.state.lock().unwrap();
        let (credit, last) = *st;
        let credit = credit
            .saturating_add(now.saturating_sub(last))
            .min(self.cap);
        if credit < cost {
            st.0 = credit;
            st.1 = st.1.max(now);
            return Err(Denied::new(None));
        }
        *st = (credit - cost, last.max(now));
        Ok(())
    }
}

/// `rate-net`'s quota for `s`, on its default algorithm (the token bucket). Units map one to
/// one: rate-net's `limit` per `period` is our `limit` per `period` (one permit per
/// `period / limit`), and its `burst` (the bucket's capacity, full at start) is our `burst`
/// (the GCRA tolerance is `burst` emission intervals, credit full at start); both are u32 in
/// rate-net, which every path's setup fits (the busy path's burst is 4,000,000,000).
fn rate_net_builder<C: clock_lib::Clock + Clone>(s: &Setup, clock: C) -> rate_net::Builder<C> {
    let u32_of = |v: u64| u32::try_from(v).expect("bench setup fits rate-net's u32");
    rate_net::RateLimiter::builder()
        .quota(u32_of(s.limit), s.period)
        .burst(u32_of(s.burst))
        .clock(clock)
}

/// rate-net's own coarse clock, ticked every 1 ms by its thread (as `CoarseClock` here), one
/// per process.
pub(crate) fn rate_net_coarse() -> rate_net::CoarseClock {
    static CLOCK: OnceLock<rate_net::CoarseClock> = OnceLock::new();
    CLOCK
        .get_or_init(|| rate_net::CoarseClock::spawn(Duration::from_millis(1)).unwrap())
        .clone()
}

/// `rate-net`'s `DirectLimiter` (no key, no map: one CAS on the token bucket's word), on the
/// OS monotonic clock (its default) or its `CoarseClock`.
pub(crate) struct RateNetDirect<C: clock_lib::Clock + Clone>(rate_net::DirectLimiter<C>);

impl<C: clock_lib::Clock + Clone> RateNetDirect<C> {
    pub(crate) fn new(s: &Setup, clock: C) -> Self {
        RateNetDirect(rate_net_builder(s, clock).try_build_direct().unwrap())
    }
}

impl<C: clock_lib::Clock + Clone + Send + Sync> Limiter for RateNetDirect<C> {
    #[inline]
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        match self.0.check_n(permits) {
            rate_net::Decision::Allow => Ok(()),
            _ => Err(Denied::new(None)),
        }
    }
}

/// `rate-net`'s keyed `RateLimiter` (sharded store, its default capacity), all calls on one
/// `u64` key: the per-key lookup is the cost.
pub(crate) struct RateNetKeyed(rate_net::RateLimiter);

impl RateNetKeyed {
    pub(crate) fn new(s: &Setup) -> Self {
        RateNetKeyed(
            rate_net_builder(s, clock_lib::SystemClock::new())
                .try_build()
                .unwrap(),
        )
    }
}

impl Limiter for RateNetKeyed {
    #[inline]
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        match self.0.check_n(7u64, permits) {
            rate_net::Decision::Allow => Ok(()),
            _ => Err(Denied::new(None)),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Floors: each "grants" after doing only the named operation.

/// One clock read.
pub(crate) struct ClockRead<C>(pub(crate) C);

impl<C: Clock> Limiter for ClockRead<C> {
    #[inline]
    fn try_acquire_n(&self, _: u32) -> Result<(), Denied> {
        std::hint::black_box(self.0.now());
        Ok(())
    }
}

/// A clock read, then another floor: what a limiter that reads the precise clock and then
/// does one RMW on a shared word cannot beat (the RMW no longer runs back to back, so the
/// line moves between cores on every call).
pub(crate) struct ClockThen<C, L>(pub(crate) C, pub(crate) L);

impl<C: Clock, L: Limiter> Limiter for ClockThen<C, L> {
    #[inline]
    fn try_acquire_n(&self, n: u32) -> Result<(), Denied> {
        std::hint::black_box(self.0.now());
        self.1.try_acquire_n(n)
    }
}

/// `ClockThen(QuantaClock, SharedCasBackoff)` with the counter NOT padded: it shares a cache
/// line with the clock's fields, as an unpadded limiter's state shares one with its clock and
/// configuration. The difference to the padded row is the cost of that false sharing.
#[derive(Default)]
pub(crate) struct SameLine {
    counter: AtomicU64,
    clock: QuantaClock,
}

impl Limiter for SameLine {
    #[inline]
    fn try_acquire_n(&self, _: u32) -> Result<(), Denied> {
        std::hint::black_box(self.clock.now());
        let backoff = crossbeam_utils::Backoff::new();
        let mut v = self.counter.load(Ordering::Relaxed);
        while let Err(cur) =
            self.counter
                .compare_exchange_weak(v, v + 1, Ordering::Relaxed, Ordering::Relaxed)
        {
            v = cur;
            backoff.spin();
        }
        Ok(())
    }
}

/// `quanta::Clock::recent()` with quanta's global upkeep thread (1 ms), started once.
pub(crate) struct QuantaRecent(quanta::Clock);

impl QuantaRecent {
    pub(crate) fn new() -> Self {
        static UPKEEP: OnceLock<Option<quanta::Handle>> = OnceLock::new();
        UPKEEP.get_or_init(|| quanta::Upkeep::new(Duration::from_millis(1)).start().ok());
        QuantaRecent(quanta::Clock::new())
    }
}

impl Limiter for QuantaRecent {
    #[inline]
    fn try_acquire_n(&self, _: u32) -> Result<(), Denied> {
        std::hint::black_box(self.0.recent());
        Ok(())
    }
}

/// `std::time::Instant::now()` (a vDSO `clock_gettime`).
pub(crate) struct InstantNow(Instant);

impl InstantNow {
    pub(crate) fn new() -> Self {
        InstantNow(Instant::now())
    }
}

impl Limiter for InstantNow {
    #[inline]
    fn try_acquire_n(&self, _: u32) -> Result<(), Denied> {
        std::hint::black_box(self.0.elapsed());
        Ok(())
    }
}

/// One relaxed load of a shared word: the floor of a read-only denial.
#[derive(Default)]
pub(crate) struct SharedLoad(CachePadded<AtomicU64>);

impl Limiter for SharedLoad {
    #[inline]
    fn try_acquire_n(&self, _: u32) -> Result<(), Denied> {
        std::hint::black_box(self.0.load(Ordering::Relaxed));
        Ok(())
    }
}

/// One `fetch_add` on a shared word: the floor of any write to one shared word.
#[derive(Default)]
pub(crate) struct SharedFetchAdd(CachePadded<AtomicU64>);

impl Limiter for SharedFetchAdd {
    #[inline]
    fn try_acquire_n(&self, _: u32) -> Result<(), Denied> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// load, then `compare_exchange_weak(v, v + 1)` until it succeeds, no backoff: the floor of a
/// CAS-updated state.
#[derive(Default)]
pub(crate) struct SharedCas(CachePadded<AtomicU64>);

impl Limiter for SharedCas {
    #[inline]
    fn try_acquire_n(&self, _: u32) -> Result<(), Denied> {
        let mut v = self.0.load(Ordering::Relaxed);
        while let Err(cur) =
            self.0
                .compare_exchange_weak(v, v + 1, Ordering::Relaxed, Ordering::Relaxed)
        {
            v = cur;
        }
        Ok(())
    }
}

/// [`SharedCas`] with crossbeam's `Backoff::spin()` after a failed CAS, as hotlimit's loops do.
#[derive(Default)]
pub(crate) struct SharedCasBackoff(CachePadded<AtomicU64>);

impl Limiter for SharedCasBackoff {
    #[inline]
    fn try_acquire_n(&self, _: u32) -> Result<(), Denied> {
        let backoff = crossbeam_utils::Backoff::new();
        let mut v = self.0.load(Ordering::Relaxed);
        while let Err(cur) =
            self.0
                .compare_exchange_weak(v, v + 1, Ordering::Relaxed, Ordering::Relaxed)
        {
            v = cur;
            backoff.spin();
        }
        Ok(())
    }
}

/// A `fetch_add` on a per-thread, cache-line-padded counter: no sharing at all, the ceiling
/// of perfect scaling (a thread-local slot lookup plus one uncontended RMW).
pub(crate) struct PerThread(Box<[CachePadded<AtomicU64>]>);

const SLOTS: usize = 64;

impl Default for PerThread {
    fn default() -> Self {
        PerThread(
            (0..SLOTS)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
        )
    }
}

impl Limiter for PerThread {
    #[inline]
    fn try_acquire_n(&self, _: u32) -> Result<(), Denied> {
        self.0[thread_slot()].fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// A small per-thread index, assigned on first use.
fn thread_slot() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    SLOT.with(|s| {
        if s.get() == usize::MAX {
            s.set(NEXT.fetch_add(1, Ordering::Relaxed) % SLOTS);
        }
        s.get()
    })
}
