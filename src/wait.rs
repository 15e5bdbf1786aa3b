//! Waiting for permits: [`Sleep`] (how a waiting thread lets time pass), [`Precise`] (sleep
//! until shortly before the deadline, then spin to it), and [`LimiterExt`]: blocking
//! `acquire_blocking` / `acquire_blocking_timeout` and an async `acquire_async` for every
//! [`Limiter`].
//!
//! **Blocking and async are different names.** Every method that blocks the calling thread
//! says so in its name (`acquire_blocking`, `Reservation::wait_blocking`,
//! `Pacer::pace_blocking`, `Keyed::acquire_blocking`, `KeyPool::get_next_key_blocking`):
//! never call one from async code. On an async runtime it stalls the worker thread and every
//! task on it (on a current-thread runtime, all of them: a 100 ms ticker first fired after
//! 1000 ms in the issue's test). Use the `*_async` form there, which takes the runtime's sleep
//! function and never blocks.
//!
//! The generic waiters here are built on [`Denied::retry_after`]: try, and on a denial wait
//! exactly as long as the limiter says, then try again. They hold nothing while they wait, so
//! a waiter that gives up (a timeout, a dropped future) cannot leak permits. They are not
//! fair: a waiter that wakes may find its permit taken by a caller that came later.
//! [`Gcra`](crate::Gcra) and [`Pacer`](crate::Pacer) wait first-come-first-served instead,
//! built on [reservations](crate::Reservation): their inherent `acquire_*` / `pace_*` methods
//! use them (an inherent method takes precedence over this trait's method of the same name,
//! so `gcra.acquire_async(..)` is the fair one; generic code over `L: LimiterExt` gets the
//! retrying one).

use core::future::Future;
use core::ops::ControlFlow;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::{fmt, time::Duration};

use alloc::boxed::Box;

use crate::clock::Clock;
use crate::clock::ManualClock;
use crate::error::Denied;
use crate::limiter::Limiter;

/// A clock that a thread can wait on: how a blocking waiter lets time pass.
///
/// [`Precise`] is the real one (sleep, then spin). [`ManualClock`] implements it by moving
/// itself forward to the deadline, so blocking code runs instantly and deterministically in
/// tests and simulations.
///
/// # Examples
///
/// ```
/// use hotlimit::{Clock, ManualClock, Sleep};
///
/// let clock = ManualClock::new();
/// clock.sleep_until(5_000); // simulated: the clock jumps to the deadline
/// assert_eq!(clock.now(), 5_000);
/// ```
pub trait Sleep: Clock {
    /// Block until [`now`](Clock::now) reads at least `deadline` (nanoseconds on this clock).
    /// Returns at once when the deadline has passed.
    fn sleep_until(&self, deadline: u64);

    /// Block for `dur`: [`sleep_until`](Sleep::sleep_until) `now() + dur`, saturating.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, ManualClock, Sleep};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// clock.sleep(Duration::from_micros(3));
    /// assert_eq!(clock.now(), 3_000);
    /// ```
    fn sleep(&self, dur: Duration) {
        self.sleep_until(self.now().saturating_add(nanos(dur)));
    }
}

impl<S: Sleep + ?Sized> Sleep for &S {
    #[inline]
    fn sleep_until(&self, deadline: u64) {
        (**self).sleep_until(deadline)
    }
}

/// Simulated waiting: the clock is moved forward to the deadline. With several threads
/// sleeping on one `ManualClock` each moves it, so time can run ahead of the latest deadline;
/// use one thread per clock for exact simulations.
impl Sleep for ManualClock {
    fn sleep_until(&self, deadline: u64) {
        let now = self.now();
        if now < deadline {
            self.advance(Duration::from_nanos(deadline - now));
        }
    }
}

/// `Duration` to `u64` nanoseconds, saturating (584 years).
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Wait until `clock` reads at least `deadline`, letting time pass with `sleeper`. The two may
/// be different clocks (a limiter's clock and a [`Precise`] sleeper): only differences of
/// `clock`'s readings are handed to the sleeper, so their origins need not agree.
pub(crate) fn wait_until<C: Clock + ?Sized, S: Sleep + ?Sized>(
    clock: &C,
    deadline: u64,
    sleeper: &S,
) {
    until(clock, deadline, |_, left| {
        sleeper.sleep(Duration::from_nanos(left))
    });
}

/// Runs `step(now, left)` while `clock` reads `now` before `deadline` (`left` is what
/// remains), reading the clock again before each step: the loop of every waiter here.
fn until<C: Clock + ?Sized>(clock: &C, deadline: u64, mut step: impl FnMut(u64, u64)) {
    loop {
        let now = clock.now();
        if now >= deadline {
            return;
        }
        step(now, deadline - now);
    }
}

/// The sleep-then-retry core of the async waiters: the runtime's `sleep` function and the
/// timer being awaited, if any. It holds nothing else, so dropping it leaks nothing.
pub(crate) struct Timer<F, Fut> {
    sleep: F,
    timer: Option<Pin<Box<Fut>>>,
}

impl<F, Fut> Timer<F, Fut> {
    /// No timer started yet.
    pub(crate) fn new(sleep: F) -> Self {
        Timer { sleep, timer: None }
    }

    /// Whether a timer is being awaited.
    pub(crate) fn is_waiting(&self) -> bool {
        self.timer.is_some()
    }
}

impl<F, Fut> Timer<F, Fut>
where
    F: FnMut(Duration) -> Fut,
    Fut: Future<Output = ()>,
{
    /// Awaits the running timer (if any), then asks `next`: `Break(t)` resolves with `t`;
    /// `Continue(wait)` starts a timer of `wait` (one boxed timer future) and awaits it.
    pub(crate) fn poll_until<T>(
        &mut self,
        cx: &mut Context<'_>,
        mut next: impl FnMut() -> ControlFlow<T, Duration>,
    ) -> Poll<T> {
        loop {
            if let Some(t) = self.timer.as_mut() {
                if t.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.timer = None;
            }
            match next() {
                ControlFlow::Break(done) => return Poll::Ready(done),
                ControlFlow::Continue(wait) => self.timer = Some(Box::pin((self.sleep)(wait))),
            }
        }
    }
}

/// The real waiter: sleeps with `std::thread::sleep` until a margin before the deadline, then
/// spins on the clock to it.
///
/// `thread::sleep` oversleeps by the OS timer slack and scheduling delay (about 52 µs on
/// Linux, whose default timer slack is 50 µs; milliseconds on a loaded machine).
///
/// **Adaptive (the default, [`Precise::new`]).** Every sleep measures how late
/// `thread::sleep` woke, and a process-wide running average of that error (samples capped at
/// [`Precise::MAX_LEARNED`], so a descheduling does not stick) is subtracted from the next
/// sleep: the waiter asks to be woken that much before its deadline, then spins at most
/// [`Precise::GUARD`] to it, and if woken earlier than that it sleeps again (never a long
/// spin, never a yield). It learns any OS's timer without configuration.
///
/// **Fixed ([`with_spin`](Precise::with_spin)).** Sleep until the margin before the
/// deadline, then spin to it, yielding to the OS while more than [`Precise::YIELD_ABOVE`]
/// remains. `with_spin(Precise::DEFAULT_SPIN)` (100 µs) was the default before: the most
/// precise on an idle machine, but it spins up to 100 µs per wait, and on a loaded machine
/// a spinning or yielding thread loses its core for whole time slices to the sleepers the
/// scheduler favours. `with_spin(Duration::ZERO)` never spins.
///
/// Measured with `examples/load_generator.rs`, 50,000/s on 8 threads sharing one
/// [`Pacer`](crate::Pacer), 3 s per run, `/usr/bin/time` for CPU (% of one core), on this
/// project's 2-core VM shared with other builds, runs interleaved; ranges over 3 runs:
///
/// | sleeper | load avg | CPU | achieved | lateness p50 | p99 |
/// |---|---:|---:|---:|---:|---:|
/// | adaptive (the default) | 14-16 | 17-32 % | 99.1-99.9 % | 23-41 µs | 5.1-8.0 ms |
/// | fixed 100 µs (the old default) | 14-16 | 78-94 % | 97.4-99.3 % | 79-114 ns | 7.6-8.8 ms |
/// | fixed 0 (never spin) | 14-16 | 14-27 % | 99.9-100 % | 53-54 µs | 0.1-6.8 ms |
/// | fixed 100 µs (the old default) | 5 | 134-135 % | 99.9-100 % | 81-146 ns | 0.04-2.0 ms |
/// | fixed 0 (never spin) | 5 | 25 % | 100 % | 51 µs | 125 µs |
///
/// So the default keeps the rate (the old one lost up to 2.6 % of it under load) at a fifth
/// to a third of a core instead of most of one, and halves never-spinning's lateness; the
/// sub-µs lateness of the old default costs a core and is kept as an option.
///
/// No jitter is added: every waiter wakes as close to its deadline as the machine allows. If a
/// load generator wants randomised arrivals, it should randomise the schedule itself.
///
/// # Examples
///
/// ```
/// use hotlimit::{Clock, Precise, Sleep};
/// use std::time::Duration;
///
/// let sleeper = Precise::new();
/// let t0 = sleeper.now();
/// sleeper.sleep(Duration::from_micros(200));
/// assert!(sleeper.now() - t0 >= 200_000);
/// ```
#[cfg(feature = "std")]
#[derive(Clone, Debug)]
pub struct Precise<C = crate::clock::DefaultClock> {
    clock: C,
    /// `None`: adaptive (wake the learned oversleep early, spin at most
    /// [`Precise::GUARD`]); `Some(m)`: fixed.
    spin_ns: Option<u64>,
}

/// The process-wide estimate of how late `thread::sleep` wakes, in ns (a running average): a
/// hint shared by every adaptive [`Precise`], outside any limiter's state. Starts at 60 µs
/// (Linux's default timer slack of 50 µs plus a wake-up).
#[cfg(feature = "std")]
static OVERSLEEP_NS: crate::sync::HintU64 = crate::sync::HintU64::new(60_000);

#[cfg(feature = "std")]
impl Precise {
    /// The fixed margin that was the default before the adaptive one: 100 µs. Pass it to
    /// [`with_spin`](Precise::with_spin) for the old behaviour.
    pub const DEFAULT_SPIN: Duration = Duration::from_micros(100);

    /// While more than this remains in the spin phase, the thread yields instead of spinning.
    pub const YIELD_ABOVE: Duration = Duration::from_micros(20);

    /// The most the adaptive waiter spins: woken closer than this to its deadline it spins
    /// the rest; woken earlier it sleeps again.
    pub const GUARD: Duration = Duration::from_micros(10);

    /// The largest oversleep sample the adaptive margin learns from (the old fixed margin): a
    /// longer one is a descheduling on a loaded machine (the thread did not run), not the
    /// timer's error.
    pub const MAX_LEARNED: Duration = Duration::from_micros(100);

    /// A precise sleeper on a new [`DefaultClock`](crate::clock::DefaultClock) with the adaptive
    /// margin.
    ///
    /// # Examples
    ///
    /// ```
    /// let sleeper = hotlimit::Precise::new();
    /// assert!(sleeper.is_adaptive());
    /// assert!(sleeper.spin() <= hotlimit::Precise::MAX_LEARNED);
    /// ```
    pub fn new() -> Precise {
        Precise::with_clock(crate::clock::DefaultClock::default())
    }
}

#[cfg(feature = "std")]
impl Default for Precise {
    fn default() -> Self {
        Precise::new()
    }
}

#[cfg(feature = "std")]
impl<C: Clock> Precise<C> {
    /// A precise sleeper on `clock` with the adaptive margin.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Precise, QuantaClock};
    /// let sleeper = Precise::with_clock(QuantaClock::new());
    /// # let _ = sleeper;
    /// ```
    pub fn with_clock(clock: C) -> Precise<C> {
        Precise {
            clock,
            spin_ns: None,
        }
    }

    /// Fixes the spin margin: sleep until `spin` before each deadline, then spin. Zero means
    /// never spin (pure `thread::sleep`, late by the OS's wake-up error); larger values trade
    /// CPU for precision on a loaded machine.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Precise;
    /// use std::time::Duration;
    ///
    /// let sleeper = Precise::new().with_spin(Duration::from_micros(50));
    /// assert_eq!(sleeper.spin(), Duration::from_micros(50));
    /// assert!(!sleeper.is_adaptive());
    /// ```
    #[must_use]
    pub fn with_spin(mut self, spin: Duration) -> Precise<C> {
        self.spin_ns = Some(nanos(spin));
        self
    }

    /// The margin now: the fixed one, or (adaptive) the learned oversleep, how long before a
    /// deadline the waiter asks to be woken.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(hotlimit::Precise::new().with_spin(Duration::ZERO).spin(), Duration::ZERO);
    /// ```
    pub fn spin(&self) -> Duration {
        Duration::from_nanos(self.margin())
    }

    /// Whether the margin is the adaptive one (not fixed by [`with_spin`](Precise::with_spin)).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(hotlimit::Precise::new().is_adaptive());
    /// ```
    pub fn is_adaptive(&self) -> bool {
        self.spin_ns.is_none()
    }

    fn margin(&self) -> u64 {
        match self.spin_ns {
            Some(fixed) => fixed,
            // Relaxed: a hint; any recent value is as good as the latest.
            None => OVERSLEEP_NS.load(crate::sync::Ordering::Relaxed),
        }
    }
}

/// Moves the learned oversleep towards `sample` by 1/16 of the gap: a running average, so
/// that one unusual wake-up moves it little.
#[cfg(feature = "std")]
fn learn_oversleep(sample: u64) {
    let sample = sample.min(nanos(Precise::MAX_LEARNED));
    // Relaxed (load and store): a hint outside every limiter's state; two threads racing
    // here lose one sample, which only slows the learning.
    let est = OVERSLEEP_NS.load(crate::sync::Ordering::Relaxed);
    let next = if sample > est {
        est + (sample - est) / 16
    } else {
        est - (est - sample) / 16
    };
    OVERSLEEP_NS.store(next, crate::sync::Ordering::Relaxed);
}

#[cfg(feature = "std")]
impl<C: Clock> Clock for Precise<C> {
    #[inline]
    fn now(&self) -> u64 {
        self.clock.now()
    }
}

#[cfg(feature = "std")]
impl<C: Clock> Sleep for Precise<C> {
    fn sleep_until(&self, deadline: u64) {
        if self.is_adaptive() {
            return self.sleep_until_adaptive(deadline);
        }
        let yield_above = nanos(Precise::YIELD_ABOVE);
        until(&self.clock, deadline, |_, left| {
            let margin = self.margin();
            if left > margin {
                std::thread::sleep(Duration::from_nanos(left - margin));
            } else if left > yield_above {
                std::thread::yield_now();
            } else {
                core::hint::spin_loop();
            }
        });
    }
}

#[cfg(feature = "std")]
impl<C: Clock> Precise<C> {
    /// The adaptive wait: sleep until the learned oversleep before the deadline; spin only
    /// the last [`GUARD`](Precise::GUARD) at most; when woken earlier than that (the estimate
    /// ran ahead of this wake-up), sleep again rather than spin or yield for long. A long spin
    /// or a yield on a loaded machine loses the core for a time slice (milliseconds) to the
    /// sleepers the scheduler favours: measured, up to a quarter of a pacer's rate.
    fn sleep_until_adaptive(&self, deadline: u64) {
        let guard = nanos(Precise::GUARD);
        until(&self.clock, deadline, |now, left| {
            if left <= guard {
                core::hint::spin_loop();
                return;
            }
            let est = self.margin();
            let asked = if left > est + guard { left - est } else { left };
            std::thread::sleep(Duration::from_nanos(asked));
            let slept = self.clock.now().saturating_sub(now);
            learn_oversleep(slept.saturating_sub(asked));
        });
    }
}

/// Waiting for permits, for every [`Limiter`]: blocking
/// [`acquire_blocking`](LimiterExt::acquire_blocking),
/// [`acquire_blocking_timeout`](LimiterExt::acquire_blocking_timeout), their `_with` forms
/// that take a [`Sleep`], and [`acquire_async`](LimiterExt::acquire_async).
///
/// All of them loop on [`Limiter::try_acquire_n`]: on a denial they wait the denial's
/// [`retry_after`](Denied::retry_after) and try again. They hold no permits while waiting, so
/// giving up never leaks any, but they are not first-come-first-served. `Gcra` and `Pacer`
/// have inherent methods built on [reservations](crate::Reservation), which are.
///
/// The `*_blocking*` methods block the calling thread: never call them from async code (use
/// [`acquire_async`](LimiterExt::acquire_async) there).
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, LimiterExt, ManualClock, Rate};
///
/// let clock = ManualClock::new();
/// let limiter = Gcra::builder(Rate::per_second(10)?).burst(1).clock(clock.clone()).build()?;
/// // Generic code: any limiter, and a ManualClock as the sleeper (simulated time).
/// fn take_three(l: &impl LimiterExt, clock: &ManualClock) {
///     for _ in 0..3 {
///         l.acquire_blocking_with(1, clock).unwrap();
///     }
/// }
/// take_three(&limiter, &clock);
/// assert_eq!(hotlimit::Clock::now(&clock), 200_000_000); // granted at 0, 100 and 200 ms
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
pub trait LimiterExt: Limiter {
    /// Block the calling thread until `permits` permits are granted, sleeping with a
    /// [`Precise`] sleeper. **Blocks: never call it from async code** (it stalls the runtime's
    /// worker thread); use [`acquire_async`](LimiterExt::acquire_async) there.
    ///
    /// # Errors
    ///
    /// Only a [`Denied`] with `retry_after() == None`: the request can never be granted.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Denied, Limiter, LimiterExt};
    ///
    /// struct Open; // any Limiter gets `acquire_blocking`
    /// impl Limiter for Open {
    ///     fn try_acquire_n(&self, _: u32) -> Result<(), Denied> {
    ///         Ok(())
    ///     }
    /// }
    /// Open.acquire_blocking(1)?;
    /// # Ok::<(), Denied>(())
    /// ```
    #[cfg(feature = "std")]
    fn acquire_blocking(&self, permits: u32) -> Result<(), Denied> {
        match self.try_acquire_n(permits) {
            // Granted at once (the common case): no sleeper needed.
            Ok(()) => Ok(()),
            Err(denied) if denied.is_never() => Err(denied),
            Err(_) => self.acquire_blocking_with(permits, &Precise::new()),
        }
    }

    /// Block the calling thread until `permits` permits are granted, or fail at once if they
    /// cannot be granted within `timeout` (when a denial's `retry_after` reaches past the
    /// deadline, this returns that denial without sleeping). Sleeps with a [`Precise`]
    /// sleeper. **Blocks: never call it from async code.**
    ///
    /// # Errors
    ///
    /// The last [`Denied`] when the permits cannot be had within `timeout`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Limiter, LimiterExt, Denied};
    /// use std::time::Duration;
    ///
    /// struct Closed;
    /// impl Limiter for Closed {
    ///     fn try_acquire_n(&self, _: u32) -> Result<(), Denied> {
    ///         Err(Denied::new(Some(Duration::from_secs(60))))
    ///     }
    /// }
    /// // A minute away: fails at once rather than sleeping 10 ms for nothing.
    /// assert!(Closed.acquire_blocking_timeout(1, Duration::from_millis(10)).is_err());
    /// ```
    #[cfg(feature = "std")]
    fn acquire_blocking_timeout(&self, permits: u32, timeout: Duration) -> Result<(), Denied> {
        match self.try_acquire_n(permits) {
            Ok(()) => Ok(()),
            Err(denied) if denied.is_never() => Err(denied),
            Err(_) => self.acquire_blocking_timeout_with(permits, timeout, &Precise::new()),
        }
    }

    /// [`acquire_blocking`](LimiterExt::acquire_blocking), letting time pass with `sleeper`
    /// (a [`ManualClock`] for simulated time). Blocks with a real sleeper.
    ///
    /// # Errors
    ///
    /// Only a [`Denied`] with `retry_after() == None`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, Gcra, LimiterExt, ManualClock, Rate};
    ///
    /// let clock = ManualClock::new();
    /// let limiter = Gcra::builder(Rate::per_second(2)?).burst(1).clock(clock.clone()).build()?;
    /// LimiterExt::acquire_blocking_with(&limiter, 1, &clock).unwrap();
    /// LimiterExt::acquire_blocking_with(&limiter, 1, &clock).unwrap();
    /// assert_eq!(clock.now(), 500_000_000);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    fn acquire_blocking_with<S: Sleep + ?Sized>(
        &self,
        permits: u32,
        sleeper: &S,
    ) -> Result<(), Denied> {
        retry_blocking(|| self.try_acquire_n(permits), sleeper)
    }

    /// [`acquire_blocking_timeout`](LimiterExt::acquire_blocking_timeout), measuring the
    /// timeout on and letting time pass with `sleeper`. Blocks with a real sleeper.
    ///
    /// # Errors
    ///
    /// The last [`Denied`] when the permits cannot be had within `timeout`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, Gcra, LimiterExt, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let limiter = Gcra::builder(Rate::per_second(1)?).clock(clock.clone()).build()?;
    /// let t = Duration::from_millis(10);
    /// assert!(LimiterExt::acquire_blocking_timeout_with(&limiter, 1, t, &clock).is_ok());
    /// assert!(LimiterExt::acquire_blocking_timeout_with(&limiter, 1, t, &clock).is_err());
    /// assert_eq!(clock.now(), 0); // the denial came without waiting
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    fn acquire_blocking_timeout_with<S: Sleep + ?Sized>(
        &self,
        permits: u32,
        timeout: Duration,
        sleeper: &S,
    ) -> Result<(), Denied> {
        let deadline = sleeper.now().saturating_add(nanos(timeout));
        loop {
            let denied = match self.try_acquire_n(permits) {
                Ok(()) => return Ok(()),
                Err(denied) => denied,
            };
            let Some(wait) = denied.retry_after_nanos() else {
                return Err(denied);
            };
            let at = sleeper.now().saturating_add(wait);
            if at > deadline {
                return Err(denied);
            }
            sleeper.sleep_until(at);
        }
    }

    /// A future that resolves when `permits` permits are granted, for any async runtime:
    /// `sleep` makes the runtime's timer future for a duration, e.g.
    /// `|d| tokio::time::sleep(d)` or `|d| async_io::Timer::after(d)`.
    ///
    /// The future holds no permits while it waits (it retries after each denial's
    /// `retry_after`), so dropping it — a timeout, a `select!` that picks another branch —
    /// never leaks permits. For a timeout, wrap it in the runtime's timeout. Each wait boxes
    /// one timer future. Wake-ups are as precise as the runtime's timer (tokio's: 1 ms).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, Gcra, LimiterExt, ManualClock, Rate};
    /// use std::future::{ready, Future};
    /// use std::task::{Context, Poll, Waker};
    ///
    /// let clock = ManualClock::new();
    /// let limiter = Gcra::builder(Rate::per_second(4)?).burst(1).clock(clock.clone()).build()?;
    /// // A simulated timer: advancing the manual clock "is" the sleep.
    /// let sleep = |d| { clock.advance(d); ready(()) };
    /// let mut cx = Context::from_waker(Waker::noop());
    /// for _ in 0..2 {
    ///     let mut fut = std::pin::pin!(LimiterExt::acquire_async(&limiter, 1, sleep));
    ///     assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Ready(Ok(()))));
    /// }
    /// assert_eq!(clock.now(), 250_000_000);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    fn acquire_async<F, Fut>(&self, permits: u32, sleep: F) -> Acquire<'_, Self, F, Fut>
    where
        F: FnMut(Duration) -> Fut + Unpin,
        Fut: Future<Output = ()>,
    {
        Acquire {
            limiter: self,
            permits,
            timer: Timer::new(sleep),
        }
    }
}

impl<L: Limiter + ?Sized> LimiterExt for L {}

/// The future of [`LimiterExt::acquire_async`]. Dropping it never leaks permits.
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, LimiterExt, ManualClock, Rate};
/// use std::future::{pending, Future};
/// use std::task::{Context, Poll, Waker};
///
/// let limiter = Gcra::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
/// limiter.try_acquire_at(0).unwrap();
/// // A timer that never fires: the future stays pending, then is dropped.
/// let mut fut = Box::pin(LimiterExt::acquire_async(&limiter, 1, |_| pending::<()>()));
/// assert!(fut.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
/// drop(fut);
/// assert_eq!(limiter.remaining_at(1_000_000_000), 1); // nothing was taken
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct Acquire<'a, L: ?Sized, F, Fut> {
    limiter: &'a L,
    permits: u32,
    timer: Timer<F, Fut>,
}

impl<L, F, Fut> Future for Acquire<'_, L, F, Fut>
where
    L: Limiter + ?Sized,
    F: FnMut(Duration) -> Fut + Unpin,
    Fut: Future<Output = ()>,
{
    type Output = Result<(), Denied>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Acquire {
            limiter,
            permits,
            timer,
        } = self.get_mut();
        timer.poll_until(cx, || retry_step(limiter.try_acquire_n(*permits)))
    }
}

impl<L: ?Sized, F, Fut> fmt::Debug for Acquire<'_, L, F, Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire")
            .field("permits", &self.permits)
            .field("waiting", &self.timer.is_waiting())
            .finish_non_exhaustive()
    }
}

/// The retrying wait shared by every waiter that cannot reserve: call `attempt`; on a denial,
/// sleep its `retry_after` with `sleeper` and call again; stop at a grant or a "never".
pub(crate) fn retry_blocking<T, S: Sleep + ?Sized>(
    mut attempt: impl FnMut() -> Result<T, Denied>,
    sleeper: &S,
) -> Result<T, Denied> {
    loop {
        match retry_step(attempt()) {
            ControlFlow::Break(done) => return done,
            ControlFlow::Continue(wait) => sleeper.sleep(wait),
        }
    }
}

/// [`retry_blocking`] as a future: between attempts it awaits `sleep(retry_after)`, the
/// runtime's timer. It holds nothing between attempts, so dropping it leaks nothing.
pub(crate) async fn retry_async<T, F, Fut>(
    mut attempt: impl FnMut() -> Result<T, Denied>,
    mut sleep: F,
) -> Result<T, Denied>
where
    F: FnMut(Duration) -> Fut,
    Fut: Future<Output = ()>,
{
    loop {
        match retry_step(attempt()) {
            ControlFlow::Break(done) => return done,
            ControlFlow::Continue(wait) => sleep(wait).await,
        }
    }
}

/// What a retrying waiter does with an attempt's result: stop at a grant or a "never"
/// (`Break`), else wait the denial's `retry_after` and try again (`Continue`).
fn retry_step<T>(attempt: Result<T, Denied>) -> ControlFlow<Result<T, Denied>, Duration> {
    match attempt {
        Ok(granted) => ControlFlow::Break(Ok(granted)),
        Err(denied) => match denied.retry_after() {
            None => ControlFlow::Break(Err(denied)),
            Some(wait) => ControlFlow::Continue(wait),
        },
    }
}
