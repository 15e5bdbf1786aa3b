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

#[cfg(feature = "std")]
mod precise;

#[cfg(feature = "std")]
pub use precise::Precise;

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
pub(super) fn until<C: Clock + ?Sized>(clock: &C, deadline: u64, mut step: impl FnMut(u64, u64)) {
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
