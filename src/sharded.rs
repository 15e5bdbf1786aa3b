//! [`ShardedGcra`]: a GCRA split into S cache-padded shards that borrow from each other.
//!
//! The scaling recipe for one global limit spread over replicas is to give each replica
//! rate/S (as in distributed rate limiting: each node enforces its share). Alone that wastes
//! capacity when load is skewed: one busy thread would get only 1/S of the rate. Here each
//! shard is an independent GCRA state word holding its share of the rate and of the burst; a
//! thread takes from its home shard (one thread-local read picks it) and, on a local denial,
//! **borrows** from the other shards before it denies. Every grant is a grant of exactly one
//! shard's GCRA, so the global bound is the sum of the shards' bounds, and the shards' rates
//! are chosen so that sum never exceeds one [`Gcra`](crate::Gcra) with the same rate and
//! burst (the proof is in the [`guide`](crate::guide::sharded#sharded-gcra-the-sum-of-the-shards)).
//!
//! Files: this one holds the shards and the borrowing admission (one algorithm, kept whole);
//! `sharded/builder.rs` the builder and the split of rate and burst over the shards;
//! `sharded/read.rs` the read-back at a given time and with the clock read, `Decide` and
//! `Debug`; `sharded/change.rs` live rate changes; `sharded/denial.rs` a denial's exact wait;
//! `sharded/hint.rs` the hint that spares single-permit denials a pass over every shard;
//! `sharded/planted.rs` the loom models' planted bugs; `sharded/tests.rs` the unit tests;
//! `sharded/deprecated.rs` old names.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::{fmt, time::Duration};

use crossbeam_utils::CachePadded;

use crate::clock::{Clock, DefaultClock};
use crate::contention::Contention;
use crate::error::Denied;
use crate::error::{ConfigError, Value};
use crate::gcra::{Params, FROZEN};
use crate::limiter::Limiter;
use crate::rate::Rate;
use crate::sync::{AtomicU64, Ordering};

use hint::EmptyHint;

mod builder;
mod change;
mod denial;
mod deprecated;
mod hint;
mod read;

pub use builder::ShardedGcraBuilder;

/// A smooth-rate limiter (GCRA) split into S cache-padded shards, one per core by default, so
/// that threads on different cores do not share a hot cache line; a thread whose home shard
/// is empty borrows from the others before it denies.
///
/// # Guarantee
///
/// Let I = `period / limit` rounded up (the interval of a [`Gcra`](crate::Gcra) with the same
/// rate) and b the burst (default `limit`). Shard k holds l_k of the `limit` and b_k of the
/// burst (Σ l_k = `limit`, Σ b_k = b exactly; the remainders go to the first shards) and runs
/// GCRA with interval I_k = ⌈I · `limit` / l_k⌉ and burst b_k.
///
/// - **Never over the global guarantee: in any interval of length d at most b + ⌊d / I⌋
///   permits are granted**, the same bound as one `Gcra`, under any concurrency. The shard
///   intervals are rounded up *from I*, so Σ 1/I_k ≤ 1/I (see the
///   [`guide`](crate::guide::sharded#sharded-gcra-the-sum-of-the-shards)).
/// - **A denial only when the shards together cannot serve the request**: sequentially, a
///   request for n is granted iff Σ_k (permits shard k could grant now) ≥ n. It takes the
///   whole request from the home shard if it can, else from the first other shard that can
///   hold it whole, else splits it over the shards, all or nothing. A single permit is
///   denied only when every shard is empty.
/// - **Skewed load gets the global rate**: one thread alone is served at Σ 1/I_k, which is
///   1/I exactly when S divides `limit`, and otherwise below 1/I by a relative error under
///   l_max/(I·`limit`) (under 0.1 % for I ≥ 1 µs). This is the steady state: right after an
///   idle spell the shards the thread has not reached yet sit full and drop their refill, a
///   one-time deficit (see the guide).
/// - `retry_after` is exact in the sequential sense: the earliest time at which the shards
///   together hold the request.
/// - Under overload a single-permit denial reads the caller's home shard and one hint word
///   ("no shard frees a permit before t", left by an earlier denial that read every shard),
///   and writes nothing: the [`guide`](crate::guide::sharded#sharded-gcra-the-sum-of-the-shards) says
///   why the hint is never stale.
///
/// What sharding costs compared with one `Gcra`, precisely:
///
/// - *Fractions.* Each shard counts whole permits, so up to S − 1 permits' worth of partial
///   refill can sit spread over shards where one `Gcra` would have summed it into a permit.
/// - *Full shards.* A full shard drops its refill, as a full `Gcra` does; but one shard can be
///   full while another is not (when demand is below the rate and falls unevenly), so the
///   burst available after a quiet spell can be below b. Under sustained demand every shard is
///   drained and refills at its full rate.
/// - *Races between multi-permit requests.* A request that must be split over shards checks
///   the sum first (read only), then takes from each shard; if a concurrent request took
///   permits in between and the total falls short, it gives back what it took and is denied
///   (with `retry_after` possibly zero). Giving back succeeds when no other grant hit that
///   shard since; otherwise those permits (fewer than n) stay consumed until they drain
///   ("stranded"). This needs two concurrent requests, at least one of them split; sequential
///   use never strands a permit, and single-permit requests never split.
///
/// The home shard is a thread-local index assigned round-robin to threads as they first use
/// any `ShardedGcra`, modulo S; a thread keeps its home for life. Without the `std` feature
/// (no thread-locals) every caller's home is shard 0 (still correct, by borrowing, but not
/// scaling): pass a home yourself with [`try_acquire_n_on_at`](ShardedGcra::try_acquire_n_on_at),
/// e.g. the current CPU.
///
/// Time that goes backwards never frees permits, and a request whose state would pass
/// `u64::MAX` ns is denied with `retry_after() == None`, as for `Gcra`.
///
/// **Waiting**: [`LimiterExt`](crate::LimiterExt)'s waits retry here, **not first come first
/// served** (no line: it would have to span the shards).
///
/// # Examples
///
/// ```
/// use hotlimit::{Limiter, ManualClock, Rate, ShardedGcra};
/// use std::time::Duration;
///
/// // 4 per second over 2 shards: each shard holds 2 of the burst and refills one every 500 ms.
/// let clock = ManualClock::new();
/// let limiter = ShardedGcra::builder(Rate::per_second(4)?)
///     .shards(2)
///     .clock(clock.clone())
///     .build()?;
/// // One caller alone gets the whole global burst: its home shard, then borrowing.
/// for _ in 0..4 {
///     limiter.try_acquire()?;
/// }
/// let denied = limiter.try_acquire().unwrap_err();
/// assert_eq!(denied.retry_after(), Some(Duration::from_millis(500)));
/// clock.advance(Duration::from_millis(500));
/// // Both shards have refilled one permit each: the global rate, 4 per second.
/// limiter.try_acquire_n(2)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ShardedGcra<C = DefaultClock> {
    /// The shards, each on its own cache line(s). Never empty.
    shards: Box<[CachePadded<Shard>]>,
    /// The global burst b = Σ b_k.
    burst: AtomicU64,
    /// The global emission interval I = ⌈period / limit⌉.
    interval: AtomicU64,
    /// The rate's `limit` and period (ns), for [`ShardedGcra::rate`].
    limit: AtomicU64,
    period: AtomicU64,
    /// Twice the number of rate changes, plus 1 while one is under way: changes take turns on
    /// it, the getters read between two equal even values, and a denial that may have seen a
    /// frozen shard checks it and decides again (see [`ShardedGcra::set_rate_at`]).
    changes: AtomicU64,
    /// "No shard can grant a single permit before t": what a single-permit denial reads
    /// instead of every shard (see `sharded/hint.rs`).
    empty: EmptyHint,
    clock: C,
}

/// One shard: a GCRA state word and its share of the rate and burst. The parameters sit on
/// the same line as the state they are used with; a rate change rewrites them while the TAT is
/// frozen, as for [`Gcra`](crate::Gcra) (requests read them after the TAT, with the plain loads
/// a Relaxed atomic load compiles to).
struct Shard {
    /// The shard's theoretical arrival time, ns on the limiter's clock. 0 means "never used";
    /// [`FROZEN`] while a rate change converts the shard.
    tat: AtomicU64,
    /// I_k = ⌈I · limit / l_k⌉, at least 1.
    interval: AtomicU64,
    /// τ_k = b_k · I_k; fits in u64 by construction.
    tolerance: AtomicU64,
    /// b_k, at least 1.
    burst: AtomicU64,
    /// The highest value a give-back moved the TAT down from (see `Gcra`'s `high`).
    high: AtomicU64,
}

/// A shard's parameters as one request reads them.
#[derive(Clone, Copy, Debug)]
struct ShardParams {
    interval: u64,
    tolerance: u64,
    burst: u64,
}

/// The shards' parameters for `rate` and `burst` over `shards` shards: (I, b, [(I_k, τ_k, b_k)]).
fn split(
    rate: Rate,
    burst: Option<u64>,
    shards: u64,
) -> Result<(u64, u64, Vec<ShardParams>), ConfigError> {
    let limit = rate.limit();
    let Params {
        interval, burst, ..
    } = Params::new(rate, burst)?;
    if u128::from(shards) > u128::from(limit.min(burst)) {
        return Err(ConfigError::new(
            "shards",
            Value::Count(u128::from(shards)),
            "more shards than the rate's limit or the burst: each shard needs at least one \
             permit of each",
        ));
    }
    // I · limit < period + limit ≤ 2^65: u128. Shard k's interval is rounded up from
    // I · limit / l_k, so 1/I_k ≤ l_k / (I · limit) and Σ 1/I_k ≤ 1/I.
    let scaled = u128::from(interval) * u128::from(limit);
    let mut split = Vec::with_capacity(shards as usize);
    for k in 0..shards {
        let share = limit / shards + u64::from(k < limit % shards);
        let burst_k = burst / shards + u64::from(k < burst % shards);
        let Ok(interval_k) = u64::try_from(scaled.div_ceil(u128::from(share))) else {
            return Err(ConfigError::new(
                "shards",
                Value::Count(u128::from(shards)),
                "a shard's emission interval (shards × period/limit) overflows u64 \
                 nanoseconds",
            ));
        };
        let Some(tolerance) = burst_k.checked_mul(interval_k) else {
            return Err(ConfigError::new(
                "burst",
                Value::Count(u128::from(burst)),
                "a shard's burst × emission interval overflows u64 nanoseconds",
            ));
        };
        split.push(ShardParams {
            interval: interval_k,
            tolerance,
            burst: burst_k,
        });
    }
    Ok((interval, burst, split))
}

impl Shard {
    fn new(p: ShardParams) -> Shard {
        Shard {
            tat: AtomicU64::new(0),
            interval: AtomicU64::new(p.interval),
            tolerance: AtomicU64::new(p.tolerance),
            burst: AtomicU64::new(p.burst),
            high: AtomicU64::new(0),
        }
    }

    /// The parameters, read after the TAT (as in `Gcra`: see the struct's docs).
    #[inline(always)]
    fn params(&self) -> ShardParams {
        // Relaxed (all): read after an Acquire load of the TAT, which a rate change's Release
        // store of the TAT publishes them with.
        self.params_with(Ordering::Relaxed)
    }

    /// The interval and tolerance only (the burst left unread): what the snapshots of the
    /// denial path need.
    #[inline(always)]
    fn rest_params(&self) -> ShardParams {
        // Relaxed (both): as in `params`.
        ShardParams {
            interval: self.interval.load(Ordering::Relaxed),
            tolerance: self.tolerance.load(Ordering::Relaxed),
            burst: 0,
        }
    }

    /// The parameters read with `order`: Acquire for the getters' sequence lock.
    #[inline(always)]
    fn params_with(&self, order: Ordering) -> ShardParams {
        ShardParams {
            interval: self.interval.load(order),
            tolerance: self.tolerance.load(order),
            burst: self.burst.load(order),
        }
    }

    /// The TAT (Acquire: the parameters are read after it).
    #[inline(always)]
    fn load(&self) -> u64 {
        // Acquire: see `params`.
        self.tat.load(Ordering::Acquire)
    }

    /// Permits this shard could grant at `now` with state `tat`: ⌊(τ − (max(S, now) − now))/I⌋
    /// (0 if negative), and no more than keep max(S, now) + m·I within u64.
    #[inline]
    fn available(&self, tat: u64, now: u64) -> u64 {
        let p = self.rest_params();
        let base = if tat > now { tat } else { now };
        let ahead = base - now;
        if ahead > p.tolerance {
            return 0;
        }
        let by_burst = (p.tolerance - ahead) / p.interval;
        let by_range = (u64::MAX - base) / p.interval;
        by_burst.min(by_range)
    }

    /// Whether, with state `tat`, this shard frees its first single permit at exactly `t` and
    /// can grant it then (S − τ + I = t, and S' = max(S, t) + I fits u64): then no shard
    /// whose first permit comes at t or later frees one sooner (see `sharded/hint.rs`).
    #[inline]
    fn frees_first_at(&self, tat: u64, t: u64) -> bool {
        let p = self.rest_params();
        // τ ≥ I (b ≥ 1): S − (τ − I) = t, so S ≥ t and max(S, t) = S.
        // Wrapping: a mix of two parameter sets (a change racing a snapshot, which the
        // caller validates) may have I > τ; nothing may panic on it.
        tat.checked_sub(p.tolerance.wrapping_sub(p.interval)) == Some(t)
            && tat.checked_add(p.interval).is_some()
    }

    /// As [`available`](Shard::available) without the u64 range cap: the count of permits
    /// released by time `now`, nondecreasing in `now`, which the retry search needs.
    #[inline]
    fn released(&self, tat: u64, now: u64) -> u64 {
        let p = self.rest_params();
        let ahead = tat.saturating_sub(now);
        p.tolerance.saturating_sub(ahead) / p.interval
    }

    /// Takes exactly `n ≥ 1` permits at `now` if this shard holds them: the GCRA grant, as in
    /// `Gcra`. On a denial returns the state it saw, having written nothing ([`FROZEN`] if a
    /// rate change holds the shard: the caller checks).
    ///
    /// The first attempt inline, the retries after a lost CAS out of line (`take_contended`):
    /// `try_acquire_n_on_at` runs the home shard's first attempt itself and leaves every other
    /// step to calls in tail position, so the uncontended grant keeps no register across a
    /// call (with the loop inline and its pause out of line it cost 6 instructions more under
    /// callgrind than with crossbeam's `Backoff` inline).
    #[inline]
    fn try_take(&self, n: u64, now: u64) -> Result<(), u64> {
        match self.attempt(n, now, self.load()) {
            Ok(Ok(())) => Ok(()),
            // A denial stands only if decided on one parameter set (`settled`).
            Ok(Err(tat)) => match self.settled(tat) {
                Ok(_) => Err(tat),
                Err(current) => self.take_contended(n, now, current),
            },
            Err(current) => self.take_contended(n, now, current),
        }
    }

    /// [`try_take`](Shard::try_take) after a lost CAS that returned `current`: the loop, with
    /// the contention policy between attempts.
    #[cold]
    #[inline(never)]
    fn take_contended(&self, n: u64, now: u64, current: u64) -> Result<(), u64> {
        let mut contention = Contention::new();
        let mut current = current;
        loop {
            // Acquire (a reload after a pause): as the first load.
            let tat = contention.lost(current, now, || self.load());
            match self.attempt(n, now, tat) {
                Ok(Ok(())) => return Ok(()),
                // As in `try_take`.
                Ok(Err(tat)) => match self.settled(tat) {
                    Ok(_) => return Err(tat),
                    Err(again) => current = again,
                },
                Err(again) => current = again,
            }
        }
    }

    /// One attempt to take `n` at `now` on the state `tat`: `Ok` with the outcome, or `Err`
    /// with the value a lost CAS returned.
    #[inline(always)]
    fn attempt(&self, n: u64, now: u64, tat: u64) -> Result<Result<(), u64>, u64> {
        let p = self.params();
        // A denial is returned unchecked (the allowed path stays as it was): every caller
        // checks it with `settled` before it stands.
        let Some((cost, slack)) = crate::gcra::price(n, p.burst, p.interval, p.tolerance) else {
            return Ok(Err(tat));
        };
        let base = if tat > now { tat } else { now };
        if base - now > slack {
            return Ok(Err(tat));
        }
        let Some(next) = base.checked_add(cost) else {
            return Ok(Err(tat));
        };
        // Release on success, Acquire on failure: as in `Gcra` (our parameter reads precede
        // the grant; a winner installed by a rate change publishes its parameters). Otherwise
        // a CAS on the shard's one state word linearizes its grants by itself.
        match self
            .tat
            .compare_exchange_weak(tat, next, Ordering::Release, Ordering::Acquire)
        {
            Ok(_) => Ok(Ok(())),
            Err(current) => Err(current),
        }
    }

    /// Validates a denial decided on the state `tat` with parameters read after it, as
    /// `Gcra::settled` (the guide, "What makes the read consistent"): `Ok(Err(tat))` (the
    /// denial stands) when the word still holds `tat`, else `Err(current)` to decide again.
    /// [`FROZEN`] stands: the caller waits for the change. Every caller of
    /// [`attempt`](Shard::attempt) checks its denials with this.
    #[cold]
    #[inline(never)]
    fn settled(&self, tat: u64) -> Result<Result<(), u64>, u64> {
        if tat == FROZEN {
            return Ok(Err(tat));
        }
        // Acquire: a parameter load (Relaxed) that read a change's Release store synchronizes
        // with it here, so that change's freeze (made before its stores) happens before the
        // reload, which then cannot return `tat`: a change installs a TAT above every value
        // the word held, and the word never goes back.
        crate::sync::fence(Ordering::Acquire);
        // Acquire: as `load`.
        let current = self.load();
        if current == tat {
            Ok(Err(tat))
        } else {
            Err(current)
        }
    }

    /// Takes as many as it can of `need ≥ 1` permits at `now`, at least one: `(before, after,
    /// taken)` for a later [`give_back`](Shard::give_back), or `None` if the shard is empty
    /// (or frozen by a rate change).
    fn take_up_to(&self, need: u64, now: u64) -> Option<(u64, u64, u64)> {
        let mut tat = self.load();
        let mut contention = Contention::new();
        loop {
            let m = self.available(tat, now).min(need);
            if m == 0 {
                return None;
            }
            let base = if tat > now { tat } else { now };
            // m ≤ available: base + m·I_k ≤ u64::MAX and m·I_k ≤ τ_k.
            // Wrapping: with a mix of parameter sets (a racing change) the CAS below fails,
            // since the change moved the word; nothing may panic meanwhile.
            let next = base.wrapping_add(m.wrapping_mul(self.params().interval));
            // Release / Acquire: as in `try_take`.
            match self
                .tat
                .compare_exchange_weak(tat, next, Ordering::Release, Ordering::Acquire)
            {
                Ok(_) => return Some((tat, next, m)),
                Err(current) => {
                    // Acquire (a reload after a pause): as the first load.
                    tat = contention.lost(current, now, || self.load());
                }
            }
        }
    }

    /// Undoes a take from `take_up_to` if it is still the shard's latest write: exactly as if
    /// it never happened. Otherwise the taken permits stay consumed (stranded) and this
    /// returns false. Strong CAS: a spurious failure would strand permits for nothing.
    fn give_back(&self, before: u64, after: u64) -> bool {
        // Relaxed: published to a later rate change by the Release CAS below (which that
        // change's swap acquires); a change must know the highest value the word held.
        self.high.fetch_max(after, Ordering::Relaxed);
        // Release: see above. The state word alone decides; succeeding only when the value is
        // still `after` is what makes the undo exact (the guide proves takes then undo in
        // LIFO order, so `after` cannot be another take's value).
        self.tat
            .compare_exchange(after, before, Ordering::Release, Ordering::Relaxed)
            .is_ok()
    }
}

/// The calling thread's index, assigned round-robin on its first call: one thread-local read.
#[cfg(all(feature = "std", not(hotlimit_loom)))]
#[inline]
fn thread_index() -> usize {
    use core::cell::Cell;
    /// The next index to hand out.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    std::thread_local! {
        static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    INDEX.with(|cell| {
        let index = cell.get();
        if index != usize::MAX {
            return index;
        }
        // Relaxed: only the counter's own atomicity matters (distinct threads get distinct
        // indices, round-robin); nothing is published with it.
        let next = NEXT.fetch_add(1, Ordering::Relaxed);
        // Any value but the "unassigned" sentinel; on 32-bit targets this wraps round-robin.
        let index = (next % (usize::MAX as u64)) as usize;
        cell.set(index);
        index
    })
}

/// Without `std` (and under loom, whose threads share one OS thread) there are no
/// thread-locals to rely on: every caller's home is shard 0.
#[cfg(not(all(feature = "std", not(hotlimit_loom))))]
#[inline]
fn thread_index() -> usize {
    0
}

impl<C> ShardedGcra<C> {
    /// Take `permits` permits at time `now` (nanoseconds on this limiter's clock), all or
    /// nothing, starting from the calling thread's home shard. This is the algorithm;
    /// [`Limiter::try_acquire_n`] is this with the clock read.
    ///
    /// # Errors
    ///
    /// [`Denied`] with the wait until the shards together hold the request, or with
    /// `retry_after() == None` when `permits` exceeds the global burst. `permits == 0` always
    /// succeeds and changes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    ///
    /// let limiter = ShardedGcra::builder(Rate::per_second(4)?)
    ///     .shards(2)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// // 3 is more than either shard holds (2 each): split over both, all or nothing.
    /// assert!(limiter.try_acquire_n_at(3, 0).is_ok());
    /// assert!(limiter.try_acquire_n_at(2, 0).is_err());
    /// assert!(limiter.try_acquire_n_at(5, 0).unwrap_err().is_never());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire_n_at(&self, permits: u32, now: u64) -> Result<(), Denied> {
        self.try_acquire_n_on_at(thread_index(), permits, now)
    }

    /// Take one permit at time `now`: [`try_acquire_n_at`](ShardedGcra::try_acquire_n_at)
    /// with 1.
    ///
    /// # Errors
    ///
    /// [`Denied`] with the wait until some shard holds a permit.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    ///
    /// let limiter = ShardedGcra::builder(Rate::per_second(2)?)
    ///     .shards(2)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.try_acquire_at(0).is_ok());
    /// assert!(limiter.try_acquire_at(0).is_ok()); // borrowed from the other shard
    /// assert_eq!(limiter.try_acquire_at(0).unwrap_err().retry_after_nanos(), Some(1_000_000_000));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire_at(&self, now: u64) -> Result<(), Denied> {
        self.try_acquire_n_on_at(thread_index(), 1, now)
    }

    /// Take `permits` permits at time `now` with shard `home % S` as the home shard: tried
    /// first, then the others in order `home + 1, home + 2, ...`. For callers that pick their
    /// own home (the current CPU, a worker id), and for deterministic tests.
    ///
    /// # Errors
    ///
    /// As [`try_acquire_n_at`](ShardedGcra::try_acquire_n_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, ShardedGcra};
    ///
    /// let limiter = ShardedGcra::builder(Rate::per_second(4)?)
    ///     .shards(2)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// limiter.try_acquire_n_on_at(1, 2, 0).unwrap(); // shard 1's whole share
    /// assert_eq!(limiter.shard_remaining_at(1, 0), Some(0));
    /// assert_eq!(limiter.shard_remaining_at(0, 0), Some(2));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire_n_on_at(&self, home: usize, permits: u32, now: u64) -> Result<(), Denied> {
        if permits == 0 {
            return Ok(());
        }
        let n = u64::from(permits);
        let s = self.shards.len();
        // No division when the thread index is already below S (threads ≤ shards).
        let home = if home < s { home } else { home % s };
        let shard = &self.shards[home];
        // The first attempt inline; everything after it is a call in tail position, so the
        // grant keeps no register across a call (see `Shard::try_take`).
        match shard.attempt(n, now, shard.load()) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(tat)) => self.hinted_or_borrow(home, n, now, tat),
            Err(current) => self.home_contended(home, n, now, current),
        }
    }

    /// The home shard's take after a lost CAS that returned `current`, then, if it denies, as
    /// after a first denial.
    #[cold]
    #[inline(never)]
    fn home_contended(&self, home: usize, n: u64, now: u64, current: u64) -> Result<(), Denied> {
        match self.shards[home].take_contended(n, now, current) {
            Ok(()) => Ok(()),
            Err(tat) => self.hinted_or_borrow(home, n, now, tat),
        }
    }

    /// After a local denial: under overload, the denial by the hint, which reads one word and
    /// one or two shards instead of every shard (see `sharded/hint.rs`); else the borrowing.
    /// A small function of its own, so a hinted denial does not pay `borrow`'s frame.
    #[cold]
    #[inline(never)]
    fn hinted_or_borrow(&self, home: usize, n: u64, now: u64, home_tat: u64) -> Result<(), Denied> {
        // The home shard's denial from the inline first attempt, checked here (off the
        // allowed path): decided on one parameter set, or decided again.
        if let Err(current) = self.shards[home].settled(home_tat) {
            return self.home_contended(home, n, now, current);
        }
        if n == 1 {
            if let Some(t) = self.empty.empty_until(now) {
                let first_at_t = |k: usize, tat: u64| self.shards[k].frees_first_at(tat, t);
                let k = self.empty.earliest();
                if first_at_t(home, home_tat)
                    || (k < self.shards.len() && first_at_t(k, self.shards[k].load()))
                {
                    return Err(Denied::after_nanos(t - now));
                }
            }
        }
        self.borrow(home, n, now, home_tat)
    }

    /// The slow path after a local denial: the other shards whole, then a split, then the
    /// denial. `home_tat` is the home shard's state as the failed take saw it.
    #[cold]
    #[inline(never)]
    fn borrow(&self, home: usize, n: u64, now: u64, home_tat: u64) -> Result<(), Denied> {
        let mut contention = Contention::new();
        let mut home_tat = home_tat;
        loop {
            if home_tat == FROZEN {
                // A rate change holds the home shard (or its state is at the end of the
                // clock's range, and the retry below sees no change under way).
                self.wait_change(&mut contention);
                match self.shards[home].try_take(n, now) {
                    Ok(()) => return Ok(()),
                    Err(tat) if tat == FROZEN && self.change_turn() & 1 == 0 => {}
                    Err(tat) => {
                        home_tat = tat;
                        continue;
                    }
                }
            }
            let turn = self.change_turn();
            let result = self.borrow_once(home, n, now, home_tat);
            // A denial that may have seen a frozen shard or two epochs' parameters is decided
            // again once the change is over; grants stand (each is one shard's CAS).
            if result.is_ok() {
                return result;
            }
            // Acquire: the snapshot's parameter loads are Relaxed; one that read a change's
            // Release store synchronizes here, so that change's odd mark (made before its
            // stores) is visible to the re-check below. Without it the re-check may read the
            // counter from before the change and let a mixed snapshot stand (the loom model
            // `a_denial_racing_a_change_is_decided_on_one_parameter_set` found it: 30 ns, the
            // old I with the new τ). Denials only.
            crate::sync::fence(Ordering::Acquire);
            if turn & 1 == 0 && self.change_turn() == turn {
                return result;
            }
            self.wait_change(&mut contention);
            match self.shards[home].try_take(n, now) {
                Ok(()) => return Ok(()),
                Err(tat) => home_tat = tat,
            }
        }
    }

    /// The rate-change counter (odd while one is under way), read without a write: a denial
    /// stays read-only.
    fn change_turn(&self) -> u64 {
        // Acquire: a finished change's stores are visible after this. A shard state read
        // (Acquire) from a change's freeze or install makes that change's odd mark visible
        // here, so a borrow that met a change reads a different value after it.
        self.changes.load(Ordering::Acquire)
    }

    /// Waits while a rate change is under way.
    #[cold]
    fn wait_change(&self, contention: &mut Contention) {
        // Acquire, and an RMW (adding 0) so that it reads the latest value: the loop must see
        // the change end (a load may keep returning the odd value it read before, and the
        // model checker explores that). Only while a change is under way.
        while self.changes.fetch_add(0, Ordering::Acquire) & 1 == 1 {
            contention.wait();
        }
    }

    /// One pass of [`borrow`](ShardedGcra::borrow), inlined there (one call frame for the
    /// slow path, as before live changes).
    #[inline(always)]
    fn borrow_once(&self, home: usize, n: u64, now: u64, home_tat: u64) -> Result<(), Denied> {
        // Checked here, off the fast path: a request the home shard granted is within b.
        // Relaxed: a snapshot; a change racing it makes `borrow` decide again.
        if n > self.burst.load(Ordering::Relaxed) {
            return Err(Denied::never());
        }
        let s = self.shards.len();
        let mut total = self.shards[home].available(home_tat, now);
        for step in 1..s {
            let k = wrap(home + step, s);
            match self.shards[k].try_take(n, now) {
                Ok(()) => return Ok(()),
                // Saturating: as `total_at`.
                Err(tat) => total = total.saturating_add(self.shards[k].available(tat, now)),
            }
        }
        // Read only so far. Only when the shards together hold n do we write.
        if total >= n && self.gather(home, 0, n, now) {
            return Ok(());
        }
        Err(self.denial(n, now))
    }

    /// Takes `need` permits from shards `home + step, home + step + 1, ...`, as many as each
    /// holds; on a shortfall gives back, in reverse order, what it took. Recursion depth ≤ S.
    fn gather(&self, home: usize, step: usize, need: u64, now: u64) -> bool {
        if need == 0 {
            return true;
        }
        let s = self.shards.len();
        if step == s {
            return false;
        }
        let shard = &self.shards[wrap(home + step, s)];
        match shard.take_up_to(need, now) {
            None => self.gather(home, step + 1, need, now),
            Some((before, after, taken)) => {
                if self.gather(home, step + 1, need - taken, now) {
                    return true;
                }
                // Stranded if another grant hit this shard since: see the type's docs. The
                // give-back may lower the state: no denial hint lives across it.
                self.empty.announce();
                let _ = shard.give_back(before, after);
                self.empty.retire();
                false
            }
        }
    }
}

/// `i % s` for `i < 2s`: the shard `step` places after the home.
#[inline]
fn wrap(i: usize, s: usize) -> usize {
    if i >= s {
        i - s
    } else {
        i
    }
}

impl<C: Clock> Limiter for ShardedGcra<C> {
    #[inline]
    fn try_acquire(&self) -> Result<(), Denied> {
        self.try_acquire_n_on_at(thread_index(), 1, self.clock.now())
    }

    #[inline]
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        self.try_acquire_n_on_at(thread_index(), permits, self.clock.now())
    }
}

/// Planted bugs for the loom models: each must make its model fail, which shows the models
/// can fail. Compiled only under `--cfg hotlimit_loom`; not part of the API.
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub mod planted;

#[cfg(all(test, not(hotlimit_loom)))]
mod tests;
