//! [`Reservation`]: a place in line on a [`Gcra`], taken with one CAS on its TAT, and the
//! first-come-first-served waits built on it: blocking `acquire_blocking*` and the async
//! [`FairAcquire`] future of `acquire_async`.
//!
//! A reservation for n permits at `now` with maximum wait W is the GCRA decision with the
//! tolerance widened by W: with base = max(S, now) it is allowed iff base + n·I ≤ now + τ + W;
//! then S becomes S' = base + n·I, and the permits are the caller's from
//! `ready_at` = max(now, S' − τ), the first time at which S' fits the ordinary GCRA test.
//! Waiters are therefore served in the order their CASes landed, with no lock and no queue:
//! the queue *is* the TAT, pushed into the future.
//!
//! Cancelling gives the permits back by CASing S from S' back to S' − n·I = base, which
//! succeeds only while nobody has reserved or acquired since (S is still S'). Then the state
//! is exactly what it would have been had the reservation never been made (see the
//! [`guide`](crate::guide) for the proof that cancels keep the GCRA bound). If someone has
//! come after, the permits are **not** given back: the later waiters' slots were computed from
//! S', and moving S back under them would let new requests take the same time twice.

use core::future::Future;
use core::{fmt, time::Duration};

use crate::clock::Clock;
use crate::error::Denied;
use crate::gcra::Gcra;
use crate::wait::fair;
use crate::wait::{nanos, wait_until, Sleep};

mod fair_acquire;
mod queue;

pub use fair_acquire::FairAcquire;

/// Permits reserved on a [`Gcra`] for a time that may lie in the future: the caller's place in
/// line. Made by [`Gcra::reserve`] / [`Gcra::reserve_n_at`].
///
/// The permits belong to the caller from [`ready_at`](Reservation::ready_at). Either
/// [`wait_blocking`](Reservation::wait_blocking) for that time (or [`keep`](Reservation::keep) the reservation
/// and wait by other means, e.g. an async timer), or [`cancel`](Reservation::cancel) it.
/// **Dropping a reservation cancels it.**
///
/// A cancel gives the permits back exactly when no reservation or acquisition has landed on
/// the limiter since this one (it is the last in line); otherwise they are not given back and
/// that capacity stays unused. `cancel` returns which happened.
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, ManualClock, Rate};
///
/// // 10/s, burst 1: one permit every 100 ms.
/// let limiter = Gcra::builder(Rate::per_second(10)?).burst(1).clock(ManualClock::new()).build()?;
/// let wait = 1_000_000_000; // wait at most 1 s
/// let a = limiter.reserve_n_at(1, 0, wait)?;
/// let b = limiter.reserve_n_at(1, 0, wait)?;
/// assert_eq!((a.ready_at(), b.ready_at()), (0, 100_000_000)); // served in order
/// assert!(!a.cancel()); // b came after a: a's slot is not given back
/// assert!(b.cancel()); // b is last in line: given back
/// assert_eq!(limiter.reserve_n_at(1, 0, wait)?.ready_at(), 100_000_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "dropping a reservation cancels it; call `wait_blocking` or `keep`"]
pub struct Reservation<'a, C> {
    gcra: &'a Gcra<C>,
    /// S' = the TAT this reservation's CAS installed.
    tat: u64,
    /// n·I: the amount a cancel takes back off S'.
    cost: u64,
    ready_at: u64,
    /// S' − τ with the τ it was decided under (the pacer's slot; a rate change may have
    /// changed τ since).
    scheduled: u64,
    /// Set once the permits are the caller's (kept or waited for) or already cancelled: no
    /// give-back on drop.
    settled: bool,
}

impl<C> Gcra<C> {
    /// Reserve `permits` permits at time `now`, waiting at most `max_wait` nanoseconds for
    /// them: one CAS on the TAT. This is the algorithm; [`reserve`](Gcra::reserve) reads the
    /// clock.
    ///
    /// A reservation with `max_wait == 0` is granted exactly when
    /// [`try_acquire_n_at`](Gcra::try_acquire_n_at) would grant, with `ready_at() == now`.
    /// Zero permits give a reservation ready at `now` that holds nothing.
    ///
    /// # Errors
    ///
    /// [`Denied`] when the permits would come later than `now + max_wait`; its `retry_after`
    /// is when they come free, from `now` (as every denial's: see [`Denied`]), and
    /// [`retry_after_within`](Denied::retry_after_within)`(max_wait)` how long until a
    /// reservation with the same `max_wait` can succeed.
    /// `retry_after() == None` when `permits` exceeds the burst, or the clock's range is
    /// exhausted.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    ///
    /// let limiter = Gcra::builder(Rate::per_second(1)?).burst(1).clock(ManualClock::new()).build()?;
    /// let first = limiter.reserve_n_at(1, 0, 0)?; // available now
    /// assert_eq!(first.keep(), 0);
    /// // The next is 1 s away: refused with a 500 ms wait, accepted with a 2 s wait.
    /// let denied = limiter.reserve_n_at(1, 0, 500_000_000).unwrap_err();
    /// assert_eq!(denied.retry_after_nanos(), Some(1_000_000_000)); // when it comes free
    /// let half = std::time::Duration::from_millis(500);
    /// assert_eq!(denied.retry_after_within(half), Some(half)); // when this call would pass
    /// let second = limiter.reserve_n_at(1, 0, 2_000_000_000)?;
    /// assert_eq!(second.keep(), 1_000_000_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reserve_n_at(
        &self,
        permits: u32,
        now: u64,
        max_wait: u64,
    ) -> Result<Reservation<'_, C>, Denied> {
        if permits == 0 {
            return Ok(Reservation {
                gcra: self,
                tat: 0,
                cost: 0,
                ready_at: now,
                scheduled: now,
                settled: true,
            });
        }
        // A denial returns before any write; the grant is one CAS on the TAT (Gcra's loop),
        // priced with the parameters read after the TAT it replaces.
        let (next, (cost, tolerance)) = self
            .advance(now, |g| {
                let (interval, tolerance, burst) = g.live_params();
                match crate::gcra::price(u64::from(permits), burst, interval, tolerance) {
                    Some((cost, slack)) => {
                        Ok((cost, slack.saturating_add(max_wait), (cost, tolerance)))
                    }
                    None => Err(Denied::never()),
                }
            })
            // The GCRA's wait counts from the end of `max_wait`; a denial's counts from the call.
            .map_err(|d| d.later_by(max_wait))?;
        let scheduled = next.saturating_sub(tolerance);
        Ok(Reservation {
            gcra: self,
            tat: next,
            cost,
            ready_at: scheduled.max(now),
            scheduled,
            settled: false,
        })
    }
}

impl<C: Clock> Gcra<C> {
    /// Reserve `permits` permits now, waiting at most `max_wait` for them:
    /// [`reserve_n_at`](Gcra::reserve_n_at) with the clock read.
    ///
    /// # Errors
    ///
    /// As [`reserve_n_at`](Gcra::reserve_n_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let limiter = Gcra::builder(Rate::per_second(2)?).clock(ManualClock::new()).build()?;
    /// let r = limiter.reserve_n(2, Duration::ZERO)?;
    /// assert_eq!(r.ready_at(), 0);
    /// # r.keep();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reserve_n(
        &self,
        permits: u32,
        max_wait: Duration,
    ) -> Result<Reservation<'_, C>, Denied> {
        self.reserve_n_at(permits, self.clock().now(), nanos(max_wait))
    }

    /// Reserve one permit now, waiting at most `max_wait` for it.
    ///
    /// # Errors
    ///
    /// As [`reserve_n_at`](Gcra::reserve_n_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let limiter = Gcra::builder(Rate::per_second(1)?).burst(1).clock(clock.clone()).build()?;
    /// limiter.reserve(Duration::ZERO)?.keep();
    /// let r = limiter.reserve(Duration::from_secs(5))?;
    /// assert_eq!(r.delay(), Duration::from_secs(1));
    /// # r.keep();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reserve(&self, max_wait: Duration) -> Result<Reservation<'_, C>, Denied> {
        self.reserve_n(1, max_wait)
    }

    /// Block the calling thread until `permits` permits are granted, first come first served:
    /// one reservation, then a [`Precise`](crate::Precise) wait to its time. Never cancels, so
    /// it never wastes capacity. **Blocks: never call it from async code** (it stalls the
    /// runtime's worker thread and every task on it); use
    /// [`acquire_async`](Gcra::acquire_async) there. The wait is real time: on a [`ManualClock`](crate::ManualClock) it returns
    /// only once something advances the clock, so tests use
    /// [`acquire_blocking_with`](Gcra::acquire_blocking_with)`(n, &clock)` instead.
    ///
    /// [`LimiterExt::acquire_blocking`](crate::LimiterExt::acquire_blocking) on this limiter,
    /// however it is held (`Arc<Gcra>`, `&Gcra`, `Box<Gcra>`, `dyn Limiter`, generic code), is
    /// this same wait in the same line.
    ///
    /// # Errors
    ///
    /// Only a [`Denied`] with `retry_after() == None` (more than the burst).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Rate};
    ///
    /// let limiter = Gcra::new(Rate::per_second(1_000)?)?;
    /// limiter.acquire_blocking(1)?;
    /// assert!(limiter.acquire_blocking(1_001).unwrap_err().is_never());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn acquire_blocking(&self, permits: u32) -> Result<(), Denied> {
        fair::acquire_blocking(self, permits, u64::MAX)
    }

    /// Block the calling thread until `permits` permits are granted, or fail at once if they
    /// cannot be had within `timeout`: one reservation with `max_wait = timeout`, then a
    /// precise wait. A failure takes nothing and waits not at all. **Blocks: never call it
    /// from async code.**
    ///
    /// # Errors
    ///
    /// The reservation's [`Denied`]: its `retry_after` says when the permits come free, and
    /// [`retry_after_within`](Denied::retry_after_within)`(timeout)` when the same call would
    /// succeed.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Rate};
    /// use std::time::Duration;
    ///
    /// let limiter = Gcra::builder(Rate::per_second(1)?).burst(1).build()?;
    /// limiter.acquire_blocking_timeout(1, Duration::from_millis(10))?;
    /// // The next permit is 1 s away.
    /// assert!(limiter.acquire_blocking_timeout(1, Duration::from_millis(10)).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn acquire_blocking_timeout(&self, permits: u32, timeout: Duration) -> Result<(), Denied> {
        fair::acquire_blocking(self, permits, nanos(timeout))
    }

    /// [`acquire_blocking`](Gcra::acquire_blocking), letting time pass with `sleeper` (a
    /// [`ManualClock`] for simulated time). Blocks with a real sleeper.
    ///
    /// [`ManualClock`]: crate::ManualClock
    ///
    /// # Errors
    ///
    /// Only a [`Denied`] with `retry_after() == None`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, Gcra, ManualClock, Rate};
    ///
    /// let clock = ManualClock::new();
    /// let limiter = Gcra::builder(Rate::per_second(10)?).burst(1).clock(clock.clone()).build()?;
    /// for _ in 0..3 {
    ///     limiter.acquire_blocking_with(1, &clock)?;
    /// }
    /// assert_eq!(clock.now(), 200_000_000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire_blocking_with<S: Sleep + ?Sized>(
        &self,
        permits: u32,
        sleeper: &S,
    ) -> Result<(), Denied> {
        fair::acquire_blocking_with(self, permits, u64::MAX, sleeper)
    }

    /// [`acquire_blocking_timeout`](Gcra::acquire_blocking_timeout), letting time pass with
    /// `sleeper`. Blocks with a real sleeper.
    ///
    /// # Errors
    ///
    /// The reservation's [`Denied`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, Gcra, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let limiter = Gcra::builder(Rate::per_second(10)?).burst(1).clock(clock.clone()).build()?;
    /// let t = Duration::from_millis(150);
    /// limiter.acquire_blocking_timeout_with(1, t, &clock)?; // at 0
    /// limiter.acquire_blocking_timeout_with(1, t, &clock)?; // at 100 ms
    /// let late = limiter.reserve(Duration::from_secs(1))?; // someone takes 200 ms
    /// assert!(limiter.acquire_blocking_timeout_with(1, Duration::from_millis(50), &clock).is_err());
    /// assert_eq!(clock.now(), 100_000_000); // failed without waiting
    /// # late.keep();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn acquire_blocking_timeout_with<S: Sleep + ?Sized>(
        &self,
        permits: u32,
        timeout: Duration,
        sleeper: &S,
    ) -> Result<(), Denied> {
        fair::acquire_blocking_with(self, permits, nanos(timeout), sleeper)
    }

    /// A future that resolves when `permits` permits are granted, **first come first served**,
    /// for any async runtime: `sleep` makes the runtime's timer future for a duration, e.g.
    /// `tokio::time::sleep` or `|d| async_io::Timer::after(d)` (the crate depends on no
    /// runtime).
    ///
    /// At its first poll the future takes its place in line: one [reservation](Gcra::reserve_n)
    /// (one CAS on the TAT). It then awaits `sleep(delay)` until the reservation's time and
    /// resolves. Waiters are served in the order of their first polls, whatever their timers
    /// do: a waiter that wakes late still has its slot, and a newcomer cannot take it.
    /// [`LimiterExt::acquire_async`](crate::LimiterExt::acquire_async) on this limiter, however
    /// it is held (`Arc<Gcra>`, `&Gcra`, `Box<Gcra>`, `dyn Limiter`, generic code), is this
    /// same wait in the same line. Each wait boxes one timer future; the precision is the
    /// runtime timer's (tokio's: 1 ms).
    ///
    /// **Dropping it** (a runtime timeout, a `select!` that picks another branch) before it
    /// resolves cancels the reservation ([`Reservation::cancel`]): the permits are given back
    /// exactly, leaving the limiter as if this waiter had never come, **if and only if no
    /// reservation or grant has landed on this limiter since its first poll** (it is last in
    /// line, or every later one was itself given back). Otherwise they are not given back: its
    /// slot stays unused, `permits` × the emission interval of capacity lost, so the limiter
    /// admits less than its rate for that moment, never more. Giving back a slot in the middle
    /// of the line would need a hole in the queue, which one word cannot hold (see the
    /// [guide](crate::guide)). A future never polled holds nothing. To bound the wait without
    /// that loss, use [`acquire_async_timeout`](Gcra::acquire_async_timeout), which refuses
    /// up front instead.
    ///
    /// # Errors
    ///
    /// The future resolves to a [`Denied`] with `retry_after() == None` only: more permits
    /// than the burst.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, Gcra, ManualClock, Rate};
    /// use std::future::{ready, Future};
    /// use std::task::{Context, Poll, Waker};
    ///
    /// let clock = ManualClock::new();
    /// let limiter = Gcra::builder(Rate::per_second(4)?).burst(1).clock(clock.clone()).build()?;
    /// // A simulated timer: advancing the manual clock "is" the sleep. With tokio:
    /// // `limiter.acquire_async(1, tokio::time::sleep).await?`.
    /// let sleep = |d| { clock.advance(d); ready(()) };
    /// let mut cx = Context::from_waker(Waker::noop());
    /// for _ in 0..2 {
    ///     let mut fut = std::pin::pin!(limiter.acquire_async(1, sleep));
    ///     assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Ready(Ok(()))));
    /// }
    /// assert_eq!(clock.now(), 250_000_000);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn acquire_async<F, Fut>(&self, permits: u32, sleep: F) -> FairAcquire<'_, C, F, Fut>
    where
        F: FnMut(Duration) -> Fut + Unpin,
        Fut: Future<Output = ()>,
    {
        FairAcquire::new(self, permits, u64::MAX, sleep)
    }

    /// [`acquire_async`](Gcra::acquire_async) that waits at most `timeout`: its reservation
    /// (at the first poll) has `max_wait = timeout`, so when the permits would come later it
    /// resolves at once to the denial, having taken nothing and wasted no capacity (unlike a
    /// runtime timeout around `acquire_async`, whose drop may not be able to give back).
    ///
    /// # Errors
    ///
    /// The future resolves to the reservation's [`Denied`]: its `retry_after` says when the
    /// permits come free, and [`retry_after_within`](Denied::retry_after_within)`(timeout)`
    /// when the same call would succeed.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, Gcra, ManualClock, Rate};
    /// use std::future::{pending, Future};
    /// use std::task::{Context, Poll, Waker};
    /// use std::time::Duration;
    ///
    /// let limiter = Gcra::builder(Rate::per_second(1)?).burst(1).clock(ManualClock::new()).build()?;
    /// limiter.try_acquire_at(0).unwrap();
    /// let t = Duration::from_millis(10);
    /// let mut fut = std::pin::pin!(limiter.acquire_async_timeout(1, t, |_| pending::<()>()));
    /// let polled = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    /// assert!(matches!(polled, Poll::Ready(Err(d)) if d.retry_after() == Some(Duration::from_secs(1))));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn acquire_async_timeout<F, Fut>(
        &self,
        permits: u32,
        timeout: Duration,
        sleep: F,
    ) -> FairAcquire<'_, C, F, Fut>
    where
        F: FnMut(Duration) -> Fut + Unpin,
        Fut: Future<Output = ()>,
    {
        FairAcquire::new(self, permits, nanos(timeout), sleep)
    }
}

impl<C> Reservation<'_, C> {
    /// When the permits are the caller's, in nanoseconds on the limiter's clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    /// let limiter = Gcra::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.reserve_n_at(1, 7, 0)?.ready_at(), 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ready_at(&self) -> u64 {
        self.ready_at
    }

    /// How long from `now` until [`ready_at`](Reservation::ready_at); zero once it has passed.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    /// use std::time::Duration;
    /// let limiter = Gcra::builder(Rate::per_second(1)?).burst(1).clock(ManualClock::new()).build()?;
    /// limiter.reserve_n_at(1, 0, 0)?.keep();
    /// let r = limiter.reserve_n_at(1, 0, u64::MAX)?;
    /// assert_eq!(r.delay_at(400_000_000), Duration::from_millis(600));
    /// # r.keep();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delay_at(&self, now: u64) -> Duration {
        Duration::from_nanos(self.ready_at.saturating_sub(now))
    }

    /// Keep the permits without waiting here (the caller waits until
    /// [`ready_at`](Reservation::ready_at) by other means, e.g. an async timer). Returns
    /// `ready_at`. The reservation can no longer be cancelled.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    /// let limiter = Gcra::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// let at = limiter.reserve_n_at(1, 0, 0)?.keep();
    /// assert_eq!(at, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn keep(mut self) -> u64 {
        self.settled = true;
        self.ready_at
    }

    /// Give the permits back if this is still the last reservation or grant on the limiter;
    /// returns whether they were given back. When it returns `false`, someone reserved or
    /// acquired after this reservation, and the capacity is lost rather than double-booked.
    ///
    /// Dropping an unsettled reservation does the same.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    /// let limiter = Gcra::builder(Rate::per_second(1)?).burst(1).clock(ManualClock::new()).build()?;
    /// let r = limiter.reserve_n_at(1, 0, 0)?;
    /// assert_eq!(limiter.remaining_at(0), 0);
    /// assert!(r.cancel());
    /// assert_eq!(limiter.remaining_at(0), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel(mut self) -> bool {
        self.give_back()
    }

    /// S' − τ without the clamp to the reservation's `now`: earlier than `ready_at` when the
    /// limiter had unused burst (for the pacer, a slot that is already late).
    pub(crate) fn scheduled(&self) -> u64 {
        self.scheduled
    }

    fn give_back(&mut self) -> bool {
        if self.settled {
            return false;
        }
        self.settled = true;
        // It succeeds only if no reservation, grant, other cancel or rate change has changed S
        // since ours: then S' − cost = max(S_before, now), the state as if we had never
        // reserved (at this `now`). Through `lower_tat`, which a rate change relies on.
        self.gcra.lower_tat(self.tat, self.tat - self.cost)
    }
}

impl<C: Clock> Reservation<'_, C> {
    /// How long until the permits are the caller's, on the limiter's clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, ManualClock, Rate};
    /// use std::time::Duration;
    /// let limiter = Gcra::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// let r = limiter.reserve(Duration::ZERO)?;
    /// assert_eq!(r.delay(), Duration::ZERO);
    /// # r.keep();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delay(&self) -> Duration {
        self.delay_at(self.gcra.clock().now())
    }

    /// Block the calling thread until the permits are the caller's, sleeping with a
    /// [`Precise`](crate::Precise) sleeper (sleep until shortly before, then spin). Returns
    /// `ready_at`. **Blocks: never call it from async code**; there, [`keep`](Reservation::keep)
    /// the reservation and await the runtime's timer for [`delay`](Reservation::delay), or
    /// use [`Gcra::acquire_async`], which does that and cancels on drop.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Rate};
    /// use std::time::Duration;
    ///
    /// let limiter = Gcra::builder(Rate::per_second(1_000)?).burst(1).build()?;
    /// limiter.reserve(Duration::ZERO)?.wait_blocking();
    /// let r = limiter.reserve(Duration::from_secs(1))?;
    /// let at = r.wait_blocking(); // about 1 ms later
    /// assert!(at > 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn wait_blocking(self) -> u64 {
        if self.gcra.clock().now() >= self.ready_at {
            // Ready already (the common case under light load): no sleeper needed.
            return self.keep();
        }
        self.wait_blocking_with(&crate::wait::Precise::new())
    }

    /// Block until the permits are the caller's, letting time pass with `sleeper` (a
    /// [`ManualClock`](crate::ManualClock) for simulated time). Returns `ready_at`. Blocks
    /// with a real sleeper.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, Gcra, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let limiter = Gcra::builder(Rate::per_second(4)?).burst(1).clock(clock.clone()).build()?;
    /// limiter.reserve(Duration::ZERO)?.keep();
    /// let at = limiter.reserve(Duration::from_secs(1))?.wait_blocking_with(&clock);
    /// assert_eq!((at, clock.now()), (250_000_000, 250_000_000));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_blocking_with<S: Sleep + ?Sized>(mut self, sleeper: &S) -> u64 {
        // Settled first: if the sleeper panics, unwinding must not give back permits whose
        // later neighbours may already be booked from them (the CAS would refuse anyway).
        self.settled = true;
        wait_until(self.gcra.clock(), self.ready_at, sleeper);
        self.ready_at
    }
}

impl<C> Drop for Reservation<'_, C> {
    fn drop(&mut self) {
        self.give_back();
    }
}

impl<C> fmt::Debug for Reservation<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reservation")
            .field("ready_at", &self.ready_at)
            .field("tat", &self.tat)
            .field("cost", &self.cost)
            .field("settled", &self.settled)
            .finish_non_exhaustive()
    }
}

/// Planted bugs for the loom models: each must make its model fail, which shows the models
/// can fail. Compiled only under `--cfg hotlimit_loom`; not part of the API.
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub mod planted {
    use super::*;

    /// Cancel `r` by blindly subtracting its cost from the TAT, whoever came after it: a
    /// later waiter's slot is then handed out a second time.
    pub fn blind_cancel<C>(mut r: Reservation<'_, C>) {
        r.settled = true;
        // Relaxed: deliberately broken; the ordering is not the bug, the blind subtract is.
        r.gcra
            .tat_word()
            .fetch_sub(r.cost, crate::sync::Ordering::Relaxed);
    }
}
