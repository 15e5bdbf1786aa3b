//! [`GcraMulti`]: up to eight GCRA rates on one caller, all or nothing, by swapping one word
//! that names an immutable snapshot of all the TATs.
//!
//! [`GcraPair`](crate::GcraPair) keeps two TATs in one 16-byte word. Three or more do not fit
//! any CAS a CPU offers, and checking limiters one after the other cannot give back exactly
//! (see the [`guide`](crate::guide::gcra_multi#gcramulti-k-rates-by-snapshot-swap)). Here the state is a
//! small pool of *snapshots*, each holding every rate's TAT under a sequence number, and one
//! word `current` naming the snapshot that is the state:
//!
//! ```text
//! current = { gen: 56 bits, slot: 8 bits }       the state is snapshot `slot`, generation `gen`
//! snapshot.seq = 2·g      holds generation g, complete (never changes until reclaimed)
//!              = 2·g + 1  being written by the thread that claimed it
//! ```
//!
//! - **Read** (every request): load `current` = {g, i}; read snapshot i as a seqlock reader
//!   does (its seq must be 2·g before and after the TAT loads, an Acquire fence between). A
//!   changed seq means the snapshot was reclaimed: start again.
//! - **Decide** every rate with [`decide`](crate::gcra::decide) on the snapshot; a denial
//!   returns here with the later of the waits and writes nothing.
//! - **Write**: claim a free snapshot j (seq even with generation < g, so it is not the
//!   current one and cannot become current again without being rewritten) by CAS to odd,
//!   store the new TATs, publish seq = 2·(g + 1), and CAS `current` from {g, i} to {g + 1, j}.
//!   If that CAS fails another request was granted first: start again (snapshot j holds an
//!   unpublished generation and becomes free once `current` passes it).
//!
//! Generations are 56 bits: at 100 million grants per second (more than one word can take)
//! they last 22 years before wrapping.
//!
//! A grant needs a spare snapshot (generation below the current one, not being written).
//! Beside the current snapshot, a thread holds at most one snapshot it is writing and one it
//! wrote and failed to publish (that one is spare again after the next grant), so with at
//! least 2 × threads + 2 snapshots a spare always exists; with fewer, a request may spin until
//! a grant in progress finishes.
//!
//! Files: this one holds the snapshots, the limiter, its admission and read-back (one
//! algorithm, kept whole); `gcra_multi/builder.rs` the builder; `gcra_multi/planted.rs` the
//! loom models' planted bug and their per-rate read-back.

use core::{fmt, time::Duration};

use crate::clock::{Clock, DefaultClock};
use crate::contention::Contention;
use crate::error::{ConfigError, Denied, Value};
use crate::gcra::{decide, price, Params};
use crate::rate::Rate;
use crate::sync::{fence, AtomicU64, Ordering};

mod builder;

pub use builder::GcraMultiBuilder;

/// The most rates one `GcraMulti` holds ([`GcraMulti::MAX_RATES`]).
const MAX_RATES: usize = 8;

/// The most snapshots (the slot index is 8 bits of `current`).
const MAX_SNAPSHOTS: usize = 256;

/// Bits of `current` holding the slot index.
const SLOT_BITS: u32 = 8;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;

/// Field names for the errors of rate i and burst i (a `ConfigError` names a static field).
const RATE_FIELDS: [&str; MAX_RATES] = [
    "rates[0]", "rates[1]", "rates[2]", "rates[3]", "rates[4]", "rates[5]", "rates[6]", "rates[7]",
];
const BURST_FIELDS: [&str; MAX_RATES] = [
    "bursts[0]",
    "bursts[1]",
    "bursts[2]",
    "bursts[3]",
    "bursts[4]",
    "bursts[5]",
    "bursts[6]",
    "bursts[7]",
];

/// One snapshot of every rate's TAT.
struct Snapshot {
    /// 2·generation when complete, odd while being written.
    seq: AtomicU64,
    tats: [AtomicU64; MAX_RATES],
}

impl Snapshot {
    fn new(seq: u64) -> Self {
        Snapshot {
            seq: AtomicU64::new(seq),
            tats: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// Several smooth rates enforced together (GCRA on each, all or nothing), for three or more
/// rates on one caller: "10 per second AND 300 per minute AND 5,000 per day". For two rates
/// use [`GcraPair`](crate::GcraPair) (one 16-byte CAS, cheaper).
///
/// # Guarantee
///
/// Exactly [`GcraPair`](crate::GcraPair)'s, for every rate i (up to
/// [`MAX_RATES`](GcraMulti::MAX_RATES)):
///
/// - **In any interval of length d, at most bᵢ + ⌊d / Iᵢ⌋ permits are granted**, for every
///   rate at once, under any concurrency.
/// - The decisions are those of k sequential GCRA models applied together: a request is
///   granted iff every rate admits it, and only then is any rate charged. A denial writes
///   nothing; its `retry_after` is the latest of the rates' exact waits (`None` when the
///   request exceeds a burst, or the clock's range is exhausted).
///
/// # Progress and cost
///
/// A denial is loads only (the current snapshot, validated). A grant writes one spare
/// snapshot (k stores between two writes of its sequence word) and then CASes `current`: two
/// CASes and k + 1 stores, against one CAS for a `GcraPair`. A grant needs a spare snapshot:
/// there are [`snapshots`](GcraMultiBuilder::snapshots) of them (default 2 × cores + 2), and
/// each thread holds at most two that are not spare (one it is writing, one it wrote and
/// failed to publish). With at least 2 × threads + 2 snapshots a spare always exists and the
/// limiter is lock-free (a request retries only because another was granted); with fewer, a
/// request may spin while a thread stopped in the middle of a grant holds the last spare.
/// Memory: 72 bytes × snapshots + a cache line.
///
/// Grants from several cores contend on three lines (the spare's sequence word, its TATs,
/// `current`): in BENCHMARKS.md, 27 million grants per second on one thread fall to 7 on two
/// (a `GcraPair` holds 36). Put it where three or more rates must hold exactly, not on a hot
/// path shared by many cores; for two rates use `GcraPair`.
///
/// **Waiting**: [`LimiterExt`](crate::LimiterExt)'s waits retry here, **not first come first
/// served** (no line: a place on several rates at once is not proved safe).
///
/// # Examples
///
/// ```
/// use hotlimit::{GcraMulti, Limiter, ManualClock, Rate};
/// use std::time::Duration;
///
/// // 2 per second AND 3 per minute AND 4 per hour.
/// let clock = ManualClock::new();
/// let limiter = GcraMulti::builder()
///     .rate(Rate::per_second(2)?)
///     .rate(Rate::per_minute(3)?)
///     .rate(Rate::per_hour(4)?)
///     .clock(clock.clone())
///     .build()?;
/// limiter.try_acquire_n(2)?;
/// assert_eq!(limiter.try_acquire().unwrap_err().retry_after(), Some(Duration::from_millis(500)));
/// clock.advance(Duration::from_secs(1));
/// limiter.try_acquire()?; // the minute's third
/// clock.advance(Duration::from_secs(59));
/// limiter.try_acquire()?; // the hour's fourth
/// // The hour is spent until 15 minutes after the start.
/// let wait = limiter.try_acquire().unwrap_err().retry_after().unwrap();
/// assert_eq!(wait, Duration::from_secs(15 * 60 - 60));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct GcraMulti<C = DefaultClock> {
    /// `{ gen, slot }`: the snapshot that is the state.
    current: crossbeam_utils::CachePadded<AtomicU64>,
    snapshots: alloc::boxed::Box<[Snapshot]>,
    params: alloc::vec::Vec<Params>,
    /// Each rate's price of one permit, (Iᵢ, τᵢ − Iᵢ); zeros past the k rates.
    one: [Price; MAX_RATES],
    rates: alloc::vec::Vec<Rate>,
    clock: C,
}

/// One rate's price for a request: `(cost, slack)` as [`decide`] takes them.
type Price = (u64, u64);

/// The later of a verdict so far and one rate's decision (a grant waits 0).
#[inline]
fn later(so_far: Option<Denied>, rate: Result<u64, Denied>) -> Option<Denied> {
    match (so_far, rate) {
        (d, Ok(_)) => d,
        (None, Err(d)) => Some(d),
        (Some(a), Err(b)) => Some(a.later(b)),
    }
}

impl<C> GcraMulti<C> {
    /// Take `permits` permits at time `now` from every rate, all or nothing. This is the
    /// algorithm; [`Limiter::try_acquire_n`] is this with the clock read.
    ///
    /// [`Limiter::try_acquire_n`]: crate::limiter::Limiter::try_acquire_n
    ///
    /// # Errors
    ///
    /// [`Denied`] with the latest of the rates' exact waits, or with `retry_after() == None`
    /// when `permits` exceeds any burst. `permits == 0` always succeeds and changes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraMulti, ManualClock, Rate};
    ///
    /// let limiter = GcraMulti::builder()
    ///     .rate(Rate::per_second(4)?)
    ///     .rate(Rate::per_second(2)?)
    ///     .rate(Rate::per_second(1)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.try_acquire_n_at(1, 0).is_ok());
    /// // 1 per second: the third rate waits 1 s, the others less.
    /// assert_eq!(limiter.try_acquire_n_at(1, 0).unwrap_err().retry_after_nanos(), Some(1_000_000_000));
    /// assert_eq!(limiter.try_acquire_n_at(2, 0).unwrap_err().retry_after(), None); // > b₃
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn try_acquire_n_at(&self, permits: u32, now: u64) -> Result<(), Denied> {
        if permits == 0 {
            return Ok(());
        }
        let n = u64::from(permits);
        let mut prices = [(0u64, 0u64); MAX_RATES];
        for (price_i, p) in prices.iter_mut().zip(&self.params) {
            let Some(pr) = price(n, p.burst, p.interval, p.tolerance) else {
                return Err(Denied::never());
            };
            *price_i = pr;
        }
        self.advance(now, &prices)
    }

    /// The request loop: one request priced `prices[i]` = (cost, slack) on rate i.
    #[inline]
    fn advance(&self, now: u64, prices: &[Price; MAX_RATES]) -> Result<(), Denied> {
        let k = self.params.len();
        let mut contention = Contention::new();
        loop {
            // Acquire: pairs with the Release of the `current` CAS that published it, so the
            // snapshot's seq store (sequenced before that CAS) is visible below.
            let cur = self.current.load(Ordering::Acquire);
            let (r#gen, slot) = (cur >> SLOT_BITS, (cur & SLOT_MASK) as usize);
            let snap = &self.snapshots[slot];
            let mut tats = [0u64; MAX_RATES];
            if !read(snap, r#gen, &mut tats[..k]) {
                // The snapshot was reclaimed since `current` named it: a grant completed.
                contention.wait();
                continue;
            }
            let mut next = [0u64; MAX_RATES];
            let mut denied = None;
            for i in 0..k {
                let (cost, slack) = prices[i];
                let d = decide(tats[i], now, cost, slack);
                if let Ok(s) = d {
                    next[i] = s;
                }
                denied = later(denied, d);
            }
            if let Some(d) = denied {
                // A denial returns before any write: no rate is charged.
                return Err(d);
            }
            let Some(j) = self.claim(slot, r#gen) else {
                // Every spare snapshot is held by a grant in progress: one of them will finish.
                contention.wait();
                continue;
            };
            let spare = &self.snapshots[j];
            for (t, &v) in spare.tats[..k].iter().zip(&next[..k]) {
                // Relaxed: ordered after the claim by its Release fence, and before the seq
                // store below by that store's Release.
                t.store(v, Ordering::Relaxed);
            }
            // Release: a reader that Acquire-loads this even seq sees the TATs stored above.
            spare.seq.store(2 * (r#gen + 1), Ordering::Release);
            // Release on success: publishes the new snapshot (its seq store above) to readers
            // that Acquire-load `current`. Relaxed on failure: we start again from a load.
            match self.current.compare_exchange(
                cur,
                ((r#gen + 1) << SLOT_BITS) | j as u64,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                // The loop starts again from a fresh load of `current`.
                Err(_) => contention.lost_then_reload(now),
            }
        }
    }

    /// Take one permit from every rate at time `now`:
    /// [`try_acquire_n_at`](GcraMulti::try_acquire_n_at) with 1.
    ///
    /// # Errors
    ///
    /// [`Denied`] with the latest of the rates' exact waits.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraMulti, ManualClock, Rate};
    ///
    /// let limiter = GcraMulti::builder()
    ///     .rate(Rate::per_second(1)?)
    ///     .rate(Rate::per_minute(30)?)
    ///     .rate(Rate::per_hour(100)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.try_acquire_at(0).is_ok());
    /// assert!(limiter.try_acquire_at(1).is_err());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire_at(&self, now: u64) -> Result<(), Denied> {
        // One permit fits every burst (bᵢ ≥ 1): prices precomputed at build.
        self.advance(now, &self.one)
    }

    /// Claims a spare snapshot for a grant on top of generation `gen` (in snapshot `slot`):
    /// one whose seq is even with a generation below `gen` (so it is not the current snapshot
    /// and cannot become current again unless rewritten), by CAS to odd. `None` if every other
    /// snapshot is in use.
    fn claim(&self, slot: usize, r#gen: u64) -> Option<usize> {
        let n = self.snapshots.len();
        for step in 1..n {
            let j = (slot + step) % n;
            let s = &self.snapshots[j];
            // Relaxed: the CAS below checks the value; a stale read only skips a slot or fails.
            let seq = s.seq.load(Ordering::Relaxed);
            if seq % 2 == 1 || seq / 2 >= r#gen {
                continue;
            }
            // Relaxed (both): the odd seq must be visible before the TAT stores that follow;
            // the Release fence after a successful claim orders them (a seqlock writer).
            if s.seq
                .compare_exchange(seq, seq + 1, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                // Release: a reader that sees any of our TAT stores then sees the odd seq (or
                // later) in its validating load, and discards what it read.
                fence(Ordering::Release);
                return Some(j);
            }
        }
        None
    }

    /// The rates' TATs as of now (a snapshot; for `remaining_at` and `Debug`), validated as a
    /// request reads them.
    fn tats(&self) -> [u64; MAX_RATES] {
        let k = self.params.len();
        let mut tats = [0u64; MAX_RATES];
        loop {
            // Acquire: as in `try_acquire_n_at`.
            let cur = self.current.load(Ordering::Acquire);
            let snap = &self.snapshots[(cur & SLOT_MASK) as usize];
            if read(snap, cur >> SLOT_BITS, &mut tats[..k]) {
                return tats;
            }
        }
    }

    /// How many permits a request at `now` could take: the least over the rates (a snapshot:
    /// other threads may take them first). Reads the state, never writes it.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraMulti, ManualClock, Rate};
    ///
    /// let limiter = GcraMulti::builder()
    ///     .rate(Rate::per_second(10)?)
    ///     .rate(Rate::per_minute(6)?)
    ///     .rate(Rate::per_hour(8)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.remaining_at(0), 6);
    /// limiter.try_acquire_n_at(4, 0).unwrap();
    /// assert_eq!(limiter.remaining_at(0), 2);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn remaining_at(&self, now: u64) -> u64 {
        self.remaining_each_at(now).min().unwrap_or(0)
    }

    /// Every rate's remaining permits at `now`, in rate order, from one read of the TATs.
    fn remaining_each_at(&self, now: u64) -> impl Iterator<Item = u64> + '_ {
        let tats = self.tats();
        self.params
            .iter()
            .zip(tats)
            .map(move |(p, s)| p.remaining(s, now))
    }

    /// How long until every rate is full again if nothing more is taken: the latest TAT, less
    /// `now` (zero when all have passed). A snapshot; reads the state, never writes it.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraMulti, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let limiter = GcraMulti::builder()
    ///     .rate(Rate::per_second(10)?)
    ///     .rate(Rate::per_minute(6)?)
    ///     .rate(Rate::per_hour(60)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// limiter.try_acquire_n_at(2, 0).unwrap(); // TATs 200 ms, 20 s, 120 s
    /// assert_eq!(limiter.reset_at(0), Duration::from_secs(120));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn reset_at(&self, now: u64) -> Duration {
        let latest = self.tats()[..self.params.len()].iter().copied().max();
        Duration::from_nanos(latest.unwrap_or(0).saturating_sub(now))
    }

    /// The bursts, in the order the rates were added.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraMulti, ManualClock, Rate};
    ///
    /// let limiter = GcraMulti::builder()
    ///     .rate(Rate::per_second(5)?)
    ///     .rate_with_burst(Rate::per_hour(100)?, 10)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.bursts(), vec![5, 10]);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn bursts(&self) -> alloc::vec::Vec<u64> {
        self.params.iter().map(|p| p.burst).collect()
    }

    /// The emission intervals, in the order the rates were added.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraMulti, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let limiter = GcraMulti::builder()
    ///     .rate(Rate::per_second(4)?)
    ///     .rate(Rate::per_minute(1)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(
    ///     limiter.emission_intervals(),
    ///     vec![Duration::from_millis(250), Duration::from_secs(60)]
    /// );
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn emission_intervals(&self) -> alloc::vec::Vec<Duration> {
        self.params
            .iter()
            .map(|p| Duration::from_nanos(p.interval))
            .collect()
    }

    /// The configured rates, in the order they were added.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraMulti, ManualClock, Rate};
    ///
    /// let r = Rate::per_second(4)?;
    /// let limiter = GcraMulti::builder().rate(r).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.rates(), &[r]);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn rates(&self) -> &[Rate] {
        &self.rates
    }

    /// The limiter's clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, GcraMulti, ManualClock, Rate};
    ///
    /// let limiter = GcraMulti::builder()
    ///     .rate(Rate::per_second(4)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.clock().now(), 0);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.clock
    }
}

/// Reads snapshot `snap` of generation `gen` into `out` as a seqlock reader: false if the
/// snapshot does not hold that generation (it was reclaimed, or is being rewritten).
#[inline]
fn read(snap: &Snapshot, r#gen: u64, out: &mut [u64]) -> bool {
    // Acquire: pairs with the Release seq store of the grant that wrote this snapshot, so the
    // TAT loads below see its stores.
    if snap.seq.load(Ordering::Acquire) != 2 * r#gen {
        return false;
    }
    for (o, t) in out.iter_mut().zip(&snap.tats) {
        // Relaxed: validated by the seq re-load below.
        *o = t.load(Ordering::Relaxed);
    }
    // Acquire: orders the TAT loads above before the re-load; if any of them saw a store of a
    // grant that reclaimed the snapshot, the re-load sees that grant's odd seq (or later),
    // through the claim's Release fence.
    fence(Ordering::Acquire);
    // Relaxed: ordered by the fence above.
    snap.seq.load(Ordering::Relaxed) == 2 * r#gen
}

impl<C: Clock> GcraMulti<C> {
    /// How many permits could be taken now: [`remaining_at`](GcraMulti::remaining_at) with
    /// the clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraMulti, Limiter, ManualClock, Rate};
    ///
    /// let limiter = GcraMulti::builder()
    ///     .rate(Rate::per_second(3)?)
    ///     .rate(Rate::per_hour(100)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// limiter.try_acquire()?;
    /// assert_eq!(limiter.remaining(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remaining(&self) -> u64 {
        self.remaining_at(self.clock.now())
    }

    /// How long until every rate is full again: [`reset_at`](GcraMulti::reset_at) with the
    /// clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraMulti, Limiter, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let limiter = GcraMulti::builder()
    ///     .rate(Rate::per_second(4)?)
    ///     .rate(Rate::per_hour(100)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// limiter.try_acquire()?;
    /// assert_eq!(limiter.reset(), Duration::from_secs(36));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset(&self) -> Duration {
        self.reset_at(self.clock.now())
    }
}

crate::limiter::limiter_at!(GcraMulti);

impl<C> fmt::Debug for GcraMulti<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = self.params.len();
        f.debug_struct("GcraMulti")
            .field("rates", &self.rates)
            .field("bursts", &self.bursts())
            .field("tat_ns", &&self.tats()[..k])
            .field("snapshots", &self.snapshots.len())
            .finish_non_exhaustive()
    }
}

/// Planted bugs for the loom models: each must make its model fail. Compiled only under
/// `--cfg hotlimit_loom`; not part of the API.
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub mod planted;
