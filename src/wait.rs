//! Waiting for permits: [`Sleep`] (how a waiting thread lets time pass), [`Precise`] (sleep
//! until shortly before the deadline, then spin to it), and [`LimiterExt`]: blocking
//! `acquire_blocking` / `acquire_blocking_timeout` and an async `acquire_async` for every
//! [`Limiter`].
//!
//! **Blocking and async are different names.** Every method that blocks the calling thread
//! says so in its name (`acquire_blocking`, `Reservation::wait_blocking`,
//! `Pacer::pace_blocking`, `Keyed::acquire_blocking`, `KeyPool::next_key_blocking`):
//! never call one from async code. On an async runtime it stalls the worker thread and every
//! task on it (on a current-thread runtime, all of them: a 100 ms ticker first fired after
//! 1000 ms in the issue's test). Use the `*_async` form there, which takes the runtime's sleep
//! function and never blocks.
//!
//! **One fair wait.** A limiter that can queue waiters first come first served (a
//! [`Gcra`](crate::Gcra), whose line is its [reservations](crate::Reservation)) is waited on
//! through that line by every path: its inherent `acquire_*` methods and `LimiterExt`'s, on
//! the limiter itself or through `&`, `Arc`, `Box`, `dyn Limiter` or generic code (the
//! pointers forward the limiter's hidden `__fair_queue` hook; `wait/fair.rs` is the one
//! implementation). On every other limiter `LimiterExt` retries: try, and on a denial wait
//! exactly the denial's [`Denied::retry_after`], then try again. A retrying waiter holds
//! nothing while it waits, so giving up (a timeout, a dropped future) cannot leak permits,
//! but it is not fair: a waiter that wakes may find its permit taken by a caller that came
//! later. [`Pacer`](crate::Pacer)'s `pace_*` are fair too (the same reservations).
//!
//! Files: this one holds [`Sleep`], [`LimiterExt`] and the retrying waits; `wait/fair.rs` the
//! fair wait; `wait/precise.rs` the [`Precise`] sleeper.

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

pub(crate) mod fair;
#[cfg(feature = "std")]
mod precise;

use fair::FairWait;

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
/// **Which order waiters are served in depends on the limiter, not on the path.**
///
/// | limiter | these waits |
/// |---|---|
/// | [`Gcra`](crate::Gcra), also as `&Gcra`, `Arc<Gcra>`, `Box<Gcra>`, `dyn Limiter`, in generic code | **first come first served**: the same line as `Gcra`'s inherent `acquire_*` methods (one [reservation](crate::Reservation) each) |
/// | [`GcraPair`](crate::GcraPair), [`GcraMulti`](crate::GcraMulti), [`ShardedGcra`](crate::ShardedGcra), [`SlidingWindow`](crate::SlidingWindow), [`SlidingLog`](crate::SlidingLog), your own limiters | **retrying, not fair**: they have no line (see each type's docs) |
///
/// A retrying wait loops on [`Limiter::try_acquire_n`]: on a denial it waits the denial's
/// [`retry_after`](Denied::retry_after) and tries again. It holds no permits while waiting,
/// so giving up never leaks any, but a waiter that wakes late can be overtaken by one that
/// came later. A type of yours that wraps a `Gcra` and implements [`Limiter`] by forwarding
/// `try_acquire_n` gets the retrying waits: to wait fairly, wait on the `Gcra` itself.
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
///         l.acquire_blocking_with(1, clock).unwrap(); // on a Gcra: in line, first come first served
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
    /// On a [`Gcra`](crate::Gcra) (however held): first come first served, exactly
    /// [`Gcra::acquire_blocking`](crate::Gcra::acquire_blocking). On other limiters: retrying,
    /// **not first come first served** (see [`LimiterExt`]).
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
        if let Some(queue) = self.__fair_queue() {
            return fair::acquire_blocking(queue, permits, u64::MAX);
        }
        match self.try_acquire_n(permits) {
            // Granted at once (the common case): no sleeper needed.
            Ok(()) => Ok(()),
            Err(denied) if denied.is_never() => Err(denied),
            Err(_) => self.acquire_blocking_with(permits, &Precise::new()),
        }
    }

    /// Block the calling thread until `permits` permits are granted, or fail at once if they
    /// cannot be granted within `timeout`, without sleeping. Sleeps with a [`Precise`]
    /// sleeper. **Blocks: never call it from async code.**
    ///
    /// On a [`Gcra`](crate::Gcra) (however held): first come first served, exactly
    /// [`Gcra::acquire_blocking_timeout`](crate::Gcra::acquire_blocking_timeout) (one
    /// reservation with `timeout` as its maximum wait). On other limiters: retrying, **not
    /// first come first served**; it fails when a denial's `retry_after` reaches past the
    /// deadline.
    ///
    /// # Errors
    ///
    /// The last [`Denied`] when the permits cannot be had within `timeout`: on every limiter
    /// its `retry_after` is when the permits come free, from the call (see [`Denied`]), not
    /// the time the timeout lacked ([`Denied::retry_after_within`] gives that).
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
        if let Some(queue) = self.__fair_queue() {
            return fair::acquire_blocking(queue, permits, nanos(timeout));
        }
        match self.try_acquire_n(permits) {
            Ok(()) => Ok(()),
            Err(denied) if denied.is_never() => Err(denied),
            Err(_) => self.acquire_blocking_timeout_with(permits, timeout, &Precise::new()),
        }
    }

    /// [`acquire_blocking`](LimiterExt::acquire_blocking), letting time pass with `sleeper`
    /// (a [`ManualClock`] for simulated time). Blocks with a real sleeper. First come first
    /// served on a [`Gcra`](crate::Gcra), retrying elsewhere (see [`LimiterExt`]).
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
        if let Some(queue) = self.__fair_queue() {
            return fair::acquire_blocking_with(queue, permits, u64::MAX, sleeper);
        }
        retry_blocking(|| self.try_acquire_n(permits), sleeper)
    }

    /// [`acquire_blocking_timeout`](LimiterExt::acquire_blocking_timeout), letting time pass
    /// with `sleeper`. Blocks with a real sleeper. On a [`Gcra`](crate::Gcra) the timeout is
    /// its reservation's maximum wait, on the limiter's clock (first come first served);
    /// elsewhere it is measured on `sleeper` (retrying, see [`LimiterExt`]).
    ///
    /// # Errors
    ///
    /// The last [`Denied`] when the permits cannot be had within `timeout`: on every limiter
    /// its `retry_after` is when the permits come free, from the call (see [`Denied`]), not
    /// the time the timeout lacked ([`Denied::retry_after_within`] gives that).
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
        if let Some(queue) = self.__fair_queue() {
            return fair::acquire_blocking_with(queue, permits, nanos(timeout), sleeper);
        }
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
    /// `|d| tokio::time::sleep(d)` or `|d| async_io::Timer::after(d)`. Each wait boxes one
    /// timer future. Wake-ups are as precise as the runtime's timer (tokio's: 1 ms). For a
    /// timeout, wrap it in the runtime's timeout.
    ///
    /// **On a [`Gcra`](crate::Gcra)** (however held: `Arc<Gcra>`, `&Gcra`, `Box<Gcra>`,
    /// `dyn Limiter`, generic code) it is [`Gcra::acquire_async`](crate::Gcra::acquire_async):
    /// first come first served, its place in line taken at the first poll. Dropping it before
    /// it resolves gives its permits back exactly when it is last in line; otherwise its slot
    /// stays unused (capacity lost, never over-admission). To bound the wait without that loss
    /// call `Gcra::acquire_async_timeout` on the `Gcra` (`arc.acquire_async_timeout(..)`
    /// reaches it through the `Arc`).
    ///
    /// **On other limiters** it retries after each denial's `retry_after`: **not first come
    /// first served** (a waiter whose timer fires late can be overtaken), and it holds no
    /// permits while it waits, so dropping it never leaks any.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, Gcra, LimiterExt, ManualClock, Rate};
    /// use std::future::{ready, Future};
    /// use std::sync::Arc;
    /// use std::task::{Context, Poll, Waker};
    ///
    /// let clock = ManualClock::new();
    /// let limiter = Arc::new(Gcra::builder(Rate::per_second(4)?).burst(1).clock(clock.clone()).build()?);
    /// // A simulated timer: advancing the manual clock "is" the sleep.
    /// let sleep = |d| { clock.advance(d); ready(()) };
    /// let mut cx = Context::from_waker(Waker::noop());
    /// for _ in 0..2 {
    ///     // LimiterExt's method on the Arc: the Gcra's own line.
    ///     let mut fut = std::pin::pin!(limiter.acquire_async(1, sleep));
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
        let how = match self.__fair_queue() {
            Some(queue) => How::InLine(FairWait::new(queue, permits, u64::MAX, sleep)),
            None => How::Retry(Timer::new(sleep)),
        };
        Acquire {
            limiter: self,
            permits,
            how,
        }
    }
}

impl<L: Limiter + ?Sized> LimiterExt for L {}

/// The future of [`LimiterExt::acquire_async`]. On a [`Gcra`](crate::Gcra) it waits in the
/// limiter's line (dropping it leaves the line: see [`Gcra::acquire_async`]); on other
/// limiters it retries and dropping it never leaks permits.
///
/// [`Gcra::acquire_async`]: crate::Gcra::acquire_async
///
/// # Examples
///
/// ```
/// use hotlimit::{Denied, Limiter, LimiterExt};
/// use std::future::{pending, Future};
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::task::{Context, Waker};
/// use std::time::Duration;
///
/// // A limiter with no line: the future retries, and holds nothing while it waits.
/// struct Closed(AtomicU32);
/// impl Limiter for Closed {
///     fn try_acquire_n(&self, _: u32) -> Result<(), Denied> {
///         self.0.fetch_add(1, Ordering::Relaxed);
///         Err(Denied::new(Some(Duration::from_secs(1))))
///     }
/// }
/// let limiter = Closed(AtomicU32::new(0));
/// // A timer that never fires: the future stays pending, then is dropped.
/// let mut fut = Box::pin(limiter.acquire_async(1, |_| pending::<()>()));
/// assert!(fut.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
/// drop(fut);
/// assert_eq!(limiter.0.load(Ordering::Relaxed), 1); // one try, nothing taken
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct Acquire<'a, L: ?Sized, F, Fut> {
    limiter: &'a L,
    permits: u32,
    how: How<'a, F, Fut>,
}

/// How an [`Acquire`] waits: in the limiter's line, or by retrying.
enum How<'a, F, Fut> {
    InLine(FairWait<'a, F, Fut>),
    Retry(Timer<F, Fut>),
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
            how,
        } = self.get_mut();
        match how {
            How::InLine(wait) => wait.poll_wait(cx),
            How::Retry(timer) => {
                timer.poll_until(cx, || retry_step(limiter.try_acquire_n(*permits)))
            }
        }
    }
}

impl<L: ?Sized, F, Fut> fmt::Debug for Acquire<'_, L, F, Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Acquire");
        d.field("permits", &self.permits);
        match &self.how {
            How::InLine(wait) => d.field("in_line", wait),
            How::Retry(timer) => d.field("retrying", &timer.is_waiting()),
        };
        d.finish_non_exhaustive()
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
