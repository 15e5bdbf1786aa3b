//! [`Pacer`]: many threads share one target rate; each call returns when its caller may send.
//!
//! Built on [`Gcra`] reservations: each call reserves the next slot with one CAS on the
//! shared TAT and waits for it (sleep, then spin). Slots are handed out in the order the CASes
//! land, one emission interval apart, so N threads together send at the target rate with no
//! lock, no queue and no coordination beyond that word.

use core::{fmt, time::Duration};

use crate::clock::{Clock, DefaultClock};
use crate::error::Denied;
use crate::error::{ConfigError, Value};
use crate::gcra::Gcra;
use crate::rate::Rate;
use crate::wait::Sleep;

/// Paces one or many threads to a shared target rate: for load generators and benchmark
/// drivers that must send at a precise rate.
///
/// Each [`pace_blocking`](Pacer::pace_blocking) reserves the next slot (one CAS) and blocks until it; then the
/// caller sends. Slots are one emission interval I = `period / limit` apart (rounded up to
/// whole ns) in the order the calls reserved them, whichever threads made them.
///
/// **Falling behind.** If callers are late (the sender took longer than I, the OS
/// descheduled a thread), a slot whose time has passed is returned at once. With
/// `catch_up(k)` up to k missed slots are kept and handed out immediately, back to back, so
/// the long-run rate recovers after a stall of up to k·I; the GCRA bound still holds with
/// burst k + 1: at most k + 1 + ⌊d/I⌋ slots in any interval of length d. Slots missed beyond
/// that are dropped and the schedule restarts from now. The default is
/// [`DEFAULT_CATCH_UP`](Pacer::DEFAULT_CATCH_UP) (10 ms) worth of slots, because a load
/// generator's job is the rate: on a shared machine stalls of milliseconds are routine, and
/// without catch-up each one is rate lost for good (measured in `BENCHMARKS.md`: about half
/// the target on a loaded 2-core machine). `catch_up(0)` gives strict spacing instead: no two
/// slots are ever closer than I.
///
/// **Threads or tasks.** [`pace_blocking`](Pacer::pace_blocking) blocks the calling thread
/// (never call it from async code); [`pace_async`](Pacer::pace_async) is the same line for
/// async tasks on any runtime. The blocking wait sleeps with an adaptive
/// [`Precise`](crate::Precise) sleeper: at 50,000/s on 8 threads it keeps the rate at
/// 17-32 % of one core (the old fixed 100 µs spin: 78-135 %), late by tens of µs (p50)
/// instead of ~0.1 µs; measurements on [`Precise`](crate::Precise).
///
/// [`Tick::lateness`] says how late each call returned against its slot (the slot's
/// scheduled time, not the call's start), the figure a load generator reports to avoid
/// coordinated omission.
///
/// # Examples
///
/// ```
/// use hotlimit::{Clock, ManualClock, Pacer, Rate};
///
/// let clock = ManualClock::new();
/// let pacer = Pacer::builder(Rate::per_second(1_000)?).clock(clock.clone()).build()?;
/// assert_eq!(pacer.catch_up(), 10); // 10 ms worth of slots
/// // The ManualClock as the sleeper: simulated time, no real waiting.
/// let slots: Vec<u64> = (0..3).map(|_| pacer.pace_blocking_with(&clock).slot).collect();
/// assert_eq!(slots, [0, 1_000_000, 2_000_000]); // one every 1 ms
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
pub struct Pacer<C = DefaultClock> {
    gcra: Gcra<C>,
    /// The catch-up slots the builder was given, kept across rate changes; `None`: 10 ms worth
    /// at the current rate.
    catch_up: Option<u64>,
    #[cfg(feature = "std")]
    sleeper: crate::wait::Precise,
}

/// Builds a [`Pacer`]: see [`Pacer::builder`].
///
/// # Examples
///
/// ```
/// use hotlimit::{ManualClock, Pacer, Rate};
///
/// let pacer = Pacer::builder(Rate::per_second(100)?)
///     .catch_up(10)
///     .clock(ManualClock::new())
///     .build()?;
/// assert_eq!(pacer.catch_up(), 10);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct PacerBuilder<C> {
    rate: Rate,
    /// `None`: [`Pacer::DEFAULT_CATCH_UP`] worth of slots.
    catch_up: Option<u64>,
    clock: C,
}

/// One paced call: the slot it was given and when it returned.
///
/// # Examples
///
/// ```
/// use hotlimit::{ManualClock, Pacer, Rate};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let pacer = Pacer::builder(Rate::per_second(10)?).clock(clock.clone()).build()?;
/// let tick = pacer.pace_blocking_with(&clock);
/// assert_eq!((tick.slot, tick.now), (0, 0));
/// assert_eq!(tick.lateness(), Duration::ZERO);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tick {
    /// The slot's scheduled time, nanoseconds on the pacer's clock.
    pub slot: u64,
    /// When the call returned, nanoseconds on the pacer's clock.
    pub now: u64,
}

impl Tick {
    /// How late the call returned against its slot: `now − slot`, or zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Tick;
    /// use std::time::Duration;
    /// assert_eq!(Tick { slot: 10, now: 25 }.lateness(), Duration::from_nanos(15));
    /// ```
    pub fn lateness(&self) -> Duration {
        Duration::from_nanos(self.now.saturating_sub(self.slot))
    }
}

impl Pacer {
    /// How far behind schedule a pacer may fall and still make up the missed slots, unless
    /// [`catch_up`](PacerBuilder::catch_up) says otherwise: 10 ms, in whole slots.
    pub const DEFAULT_CATCH_UP: Duration = Duration::from_millis(10);

    /// A builder for `rate` with the default clock and catch-up.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Pacer, Rate};
    /// let pacer = Pacer::builder(Rate::per_second(50)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(pacer.catch_up(), 0); // 10 ms is less than one 20 ms slot
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn builder(rate: Rate) -> PacerBuilder<DefaultClock> {
        PacerBuilder {
            rate,
            catch_up: None,
            clock: DefaultClock::default(),
        }
    }

    /// A pacer for `rate` on the default clock and catch-up.
    ///
    /// # Errors
    ///
    /// As [`PacerBuilder::build`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Pacer, Rate};
    /// let pacer = Pacer::new(Rate::per_second(10_000)?)?;
    /// let first = pacer.pace_blocking();
    /// assert!(first.now >= first.slot);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn new(rate: Rate) -> Result<Pacer, ConfigError> {
        Pacer::builder(rate).build()
    }
}

impl<C> PacerBuilder<C> {
    /// How many missed slots may be made up after falling behind (default:
    /// [`Pacer::DEFAULT_CATCH_UP`] worth; 0 for strict spacing). See [`Pacer`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Pacer, Rate};
    /// let pacer = Pacer::builder(Rate::per_second(10)?).catch_up(5).clock(ManualClock::new()).build()?;
    /// assert_eq!(pacer.catch_up(), 5);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn catch_up(mut self, slots: u64) -> Self {
        self.catch_up = Some(slots);
        self
    }

    /// The clock the schedule runs on. Default: [`DefaultClock`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Pacer, Rate};
    /// let pacer = Pacer::builder(Rate::per_second(10)?).clock(ManualClock::new()).build()?;
    /// # let _ = pacer;
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock<C2: Clock>(self, clock: C2) -> PacerBuilder<C2> {
        PacerBuilder {
            rate: self.rate,
            catch_up: self.catch_up,
            clock,
        }
    }
}

impl<C: Clock> PacerBuilder<C> {
    /// Builds the pacer. Its first slot is the time of `build()`: a pacer built and used at
    /// once starts without a burst.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when the emission interval `period / limit` is under 1 ns (field
    /// `rate`), or (`catch_up` + 1) × interval overflows u64 nanoseconds (field `catch_up`).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Pacer, Rate};
    /// let err = Pacer::builder(Rate::per_second(1)?)
    ///     .catch_up(u64::MAX)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "catch_up");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<Pacer<C>, ConfigError> {
        let burst = burst_for(self.rate, self.catch_up)?;
        let gcra = Gcra::builder(self.rate)
            .burst(burst)
            .clock(self.clock)
            .build()
            .map_err(|e| catch_up_error(e, burst))?;
        // Start the schedule now: S = now + τ − I makes the first reservation ready at `now`
        // (not `now − catch_up·I`, which would open with a burst of catch_up + 1). The pacer
        // is not shared yet.
        let (interval, tolerance) = gcra.params();
        let start = gcra.clock().now().saturating_add(tolerance - interval);
        // Relaxed: the pacer is not shared yet; handing it to other threads publishes it.
        gcra.tat_word().store(start, crate::sync::Ordering::Relaxed);
        Ok(Pacer {
            gcra,
            catch_up: self.catch_up,
            #[cfg(feature = "std")]
            sleeper: crate::wait::Precise::new(),
        })
    }
}

impl<C> Pacer<C> {
    /// Take the next slot at time `now` without waiting: returns its scheduled time (which is
    /// `now` or earlier if the schedule is behind and catch-up allows, later if ahead). This is
    /// the algorithm; [`pace_blocking`](Pacer::pace_blocking) reads the clock and waits.
    ///
    /// # Errors
    ///
    /// [`Denied`] with `retry_after() == None` only when the clock's range (584 years) is
    /// exhausted.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Pacer, Rate};
    /// let pacer = Pacer::builder(Rate::per_second(100)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(pacer.next_slot_at(0)?, 0);
    /// assert_eq!(pacer.next_slot_at(0)?, 10_000_000);
    /// assert_eq!(pacer.next_slot_at(0)?, 20_000_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_slot_at(&self, now: u64) -> Result<u64, Denied> {
        let r = self.gcra.reserve_n_at(1, now, u64::MAX)?;
        // The slot is S' − τ; `ready_at` clamps it to `now`, which would hide lateness.
        let slot = r.scheduled();
        r.keep();
        Ok(slot)
    }

    /// The emission interval: slots are this far apart.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Pacer, Rate};
    /// use std::time::Duration;
    /// let pacer = Pacer::builder(Rate::per_second(1_000)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(pacer.interval(), Duration::from_millis(1));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn interval(&self) -> Duration {
        self.gcra.emission_interval()
    }

    /// How many missed slots are made up after falling behind.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Pacer, Rate};
    /// let pacer = Pacer::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(pacer.catch_up(), 0); // 10 ms is less than one 1 s slot
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn catch_up(&self) -> u64 {
        self.gcra.burst() - 1
    }

    /// The pacer's clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, ManualClock, Pacer, Rate};
    /// let pacer = Pacer::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(pacer.clock().now(), 0);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        self.gcra.clock()
    }
}

impl<C: Clock> Pacer<C> {
    /// Block the calling thread until the caller may send its next request: reserve the next
    /// slot, sleep until shortly before it, spin to it. Safe to call from many threads at
    /// once. **Blocks: never call it from async code**; use [`pace_async`](Pacer::pace_async)
    /// there. The wait is real
    /// time; on a [`ManualClock`](crate::ManualClock) use [`pace_blocking_with`](Pacer::pace_blocking_with)
    /// with the clock.
    ///
    /// Infallible, so a loop needs no `unwrap`. The one case with no next slot is the end of
    /// the clock's range (within one interval of 584 years of nanoseconds from the clock's
    /// zero): there the slot saturates at `u64::MAX`, the last instant the clock can name; the
    /// call waits until the clock reads it and returns `Tick { slot: u64::MAX, .. }`. For a
    /// real clock that wait outlasts the process; the algorithm,
    /// [`next_slot_at`](Pacer::next_slot_at), reports the case as [`Denied`] instead.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Pacer, Rate};
    ///
    /// let pacer = Pacer::new(Rate::per_second(20_000)?)?; // one every 50 µs
    /// std::thread::scope(|s| {
    ///     for _ in 0..2 {
    ///         s.spawn(|| {
    ///             for _ in 0..10 {
    ///                 let tick = pacer.pace_blocking();
    ///                 assert!(tick.now >= tick.slot);
    ///                 // send a request here
    ///             }
    ///         });
    ///     }
    /// });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn pace_blocking(&self) -> Tick {
        self.pace_blocking_with(&self.sleeper)
    }

    /// [`pace_blocking`](Pacer::pace_blocking), letting time pass with `sleeper` (a
    /// [`ManualClock`](crate::ManualClock) for simulated time). Infallible, as
    /// [`pace_blocking`](Pacer::pace_blocking): at the end of the clock's range the slot
    /// saturates at `u64::MAX`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, ManualClock, Pacer, Rate};
    /// let clock = ManualClock::new();
    /// let pacer = Pacer::builder(Rate::per_second(4)?).clock(clock.clone()).build()?;
    /// pacer.pace_blocking_with(&clock);
    /// let tick = pacer.pace_blocking_with(&clock);
    /// assert_eq!((tick.slot, clock.now()), (250_000_000, 250_000_000));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pace_blocking_with<S: Sleep + ?Sized>(&self, sleeper: &S) -> Tick {
        // Denied only past the clock's range: the slot saturates there (see `pace_blocking`).
        let slot = self
            .next_slot_at(self.gcra.clock().now())
            .unwrap_or(u64::MAX);
        crate::wait::wait_until(self.gcra.clock(), slot, sleeper);
        Tick {
            slot,
            now: self.gcra.clock().now(),
        }
    }
}

/// The GCRA burst for `rate`: catch-up slots + 1, the slots `fixed` or 10 ms worth.
fn burst_for(rate: Rate, fixed: Option<u64>) -> Result<u64, ConfigError> {
    let interval = rate.period_nanos().div_ceil(rate.limit()).max(1);
    let catch_up = fixed.unwrap_or(crate::wait::nanos(Pacer::DEFAULT_CATCH_UP) / interval);
    catch_up.checked_add(1).ok_or_else(|| overflow(catch_up))
}

/// The error for catch-up slots whose (catch_up + 1) × I does not fit.
fn overflow(catch_up: u64) -> ConfigError {
    ConfigError::new(
        "catch_up",
        Value::Count(u128::from(catch_up)),
        "(catch_up + 1) × emission interval overflows u64 nanoseconds",
    )
}

/// A GCRA error about the burst, told as the catch-up slots it came from.
fn catch_up_error(e: ConfigError, burst: u64) -> ConfigError {
    if e.field() == "burst" {
        overflow(burst - 1)
    } else {
        e
    }
}

/// Planted bugs for the loom models; compiled only under `--cfg hotlimit_loom`.
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub mod planted;

impl<C> Pacer<C> {
    /// Changes the target rate at time `now` (nanoseconds on the pacer's clock) while threads
    /// keep pacing: one call per step of a load ramp. The catch-up stays what the builder set:
    /// the same number of slots if one was given, else 10 ms worth at the new rate.
    ///
    /// Slots already handed out keep their times. The next slot follows the last one handed
    /// out by one new interval, or, when the new rate is faster and the catch-up time shrinks,
    /// by up to one old interval (the pacer's [`Gcra`] never moves its state earlier: see
    /// [`Gcra::set_rate_at`]); missed slots held for catch-up carry over, as many as the new
    /// catch-up holds. So a ramp from 1k/s to 100k/s in ten steps over 10 s sends, step by
    /// step, each step's rate (`tests/pacer.rs` checks it on a simulated clock).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] as [`PacerBuilder::build`] for `rate` (nothing is changed).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Pacer, Rate};
    ///
    /// let clock = ManualClock::new();
    /// let pacer = Pacer::builder(Rate::per_second(1_000)?).clock(clock.clone()).build()?;
    /// assert_eq!(pacer.pace_blocking_with(&clock).slot, 0);
    /// assert_eq!(pacer.pace_blocking_with(&clock).slot, 1_000_000);
    /// pacer.set_rate_at(Rate::per_second(500)?, 1_000_000)?;
    /// assert_eq!(pacer.pace_blocking_with(&clock).slot, 3_000_000); // 2 ms after the last
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_rate_at(&self, rate: Rate, now: u64) -> Result<(), ConfigError> {
        let burst = burst_for(rate, self.catch_up)?;
        self.gcra
            .set_rate_at(rate, Some(burst), now)
            .map_err(|e| catch_up_error(e, burst))
    }
}

impl<C: Clock> Pacer<C> {
    /// Changes the target rate now: [`set_rate_at`](Pacer::set_rate_at) with the clock read.
    ///
    /// # Errors
    ///
    /// As [`set_rate_at`](Pacer::set_rate_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Pacer, Rate};
    /// use std::time::Duration;
    ///
    /// // A ramp from 1,000/s to 100,000/s over 10 s: one call per step.
    /// let clock = ManualClock::new();
    /// let pacer = Pacer::builder(Rate::per_second(1_000)?).clock(clock.clone()).build()?;
    /// for step in 1..=10u64 {
    ///     pacer.set_rate(Rate::per_second(step * 10_000)?)?;
    ///     # break;
    /// }
    /// assert_eq!(pacer.interval(), Duration::from_micros(100));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn set_rate(&self, rate: Rate) -> Result<(), ConfigError> {
        self.set_rate_at(rate, self.gcra.clock().now())
    }
}

impl<C: Clock> Pacer<C> {
    /// A future that resolves at the caller's next slot, for async load generators on any
    /// runtime: `sleep` makes the runtime's timer future (`tokio::time::sleep`). At its first
    /// poll it reserves the next slot (one CAS, the same line as
    /// [`pace_blocking`](Pacer::pace_blocking): slots are handed out in the order of first
    /// polls and blocking calls), then awaits the timer until the slot. Precision is the
    /// runtime timer's (tokio's: 1 ms, so at rates above ~1k/s per task, expect slots to
    /// come in batches; the rate holds through catch-up).
    ///
    /// Dropping it before its slot cancels the reservation: the slot is given back exactly if
    /// no later slot has been taken since (it is the last in line); otherwise it stays unused
    /// (one interval of sending lost, never a burst).
    ///
    /// Infallible, as [`pace_blocking`](Pacer::pace_blocking): at the end of the clock's range
    /// the slot saturates at `u64::MAX`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, ManualClock, Pacer, Rate};
    /// use std::future::{ready, Future};
    /// use std::task::{Context, Poll, Waker};
    ///
    /// let clock = ManualClock::new();
    /// let pacer = Pacer::builder(Rate::per_second(4)?).clock(clock.clone()).build()?;
    /// let sleep = |d| { clock.advance(d); ready(()) }; // a simulated timer
    /// let mut cx = Context::from_waker(Waker::noop());
    /// let mut slots = Vec::new();
    /// for _ in 0..3 {
    ///     let mut fut = std::pin::pin!(pacer.pace_async(sleep));
    ///     let Poll::Ready(tick) = fut.as_mut().poll(&mut cx) else { unreachable!() };
    ///     slots.push(tick.slot);
    /// }
    /// assert_eq!(slots, [0, 250_000_000, 500_000_000]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn pace_async<F, Fut>(&self, mut sleep: F) -> Tick
    where
        F: FnMut(Duration) -> Fut,
        Fut: core::future::Future<Output = ()>,
    {
        let clock = self.gcra.clock();
        // Denied only past the clock's range: the slot saturates there (see `pace_blocking`).
        let reservation = self.gcra.reserve_n_at(1, clock.now(), u64::MAX).ok();
        // The slot is S' − τ, not clamped to `now`, so lateness stays visible.
        let slot = reservation.as_ref().map_or(u64::MAX, |r| r.scheduled());
        loop {
            let now = clock.now();
            if now >= slot {
                if let Some(reservation) = reservation {
                    reservation.keep();
                }
                return Tick { slot, now };
            }
            // Dropped during this await: `reservation` is dropped, which cancels it.
            sleep(Duration::from_nanos(slot - now)).await;
        }
    }
}

impl<C> fmt::Debug for Pacer<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pacer")
            .field("gcra", &self.gcra)
            .field("catch_up", &self.catch_up())
            .finish_non_exhaustive()
    }
}
