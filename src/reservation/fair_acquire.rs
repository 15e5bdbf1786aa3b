//! [`FairAcquire`], the future of [`Gcra::acquire_async`]: a [`Reservation`] taken at the
//! first poll, then the runtime's timer until its `ready_at`.

use core::future::Future;
use core::ops::ControlFlow;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::{fmt, time::Duration};

use super::Reservation;
use crate::clock::Clock;
use crate::error::Denied;
use crate::gcra::Gcra;
use crate::wait::Timer;

/// The future of [`Gcra::acquire_async`]: a first-come-first-served wait for permits. Its
/// place in line is taken at the first poll; dropping it before it resolves cancels that
/// reservation, which gives the permits back exactly when nothing has reserved or acquired
/// on the limiter since (see [`Gcra::acquire_async`]).
///
/// Once it has resolved, polling it again returns `Poll::Pending` and takes nothing.
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, ManualClock, Rate};
/// use std::future::{pending, Future};
/// use std::task::{Context, Waker};
///
/// let limiter = Gcra::builder(Rate::per_second(1)?).burst(1).clock(ManualClock::new()).build()?;
/// limiter.try_acquire_at(0).unwrap();
/// // A timer that never fires: the future holds its place (1 s away), then is dropped.
/// let mut fut = Box::pin(limiter.acquire_async(1, |_| pending::<()>()));
/// assert!(fut.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
/// assert_eq!(limiter.remaining_at(1_000_000_000), 0); // the place is held
/// drop(fut); // last in line: given back exactly
/// assert_eq!(limiter.remaining_at(1_000_000_000), 1);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct FairAcquire<'a, C, F, Fut> {
    gcra: &'a Gcra<C>,
    permits: u32,
    max_wait: u64,
    timer: Timer<F, Fut>,
    state: State<'a, C>,
}

impl<'a, C, F, Fut> FairAcquire<'a, C, F, Fut> {
    /// The future before its first poll: nothing reserved yet.
    pub(super) fn new(gcra: &'a Gcra<C>, permits: u32, max_wait: u64, sleep: F) -> Self {
        FairAcquire {
            gcra,
            permits,
            max_wait,
            timer: Timer::new(sleep),
            state: State::Start,
        }
    }
}

enum State<'a, C> {
    /// Not polled yet: holds nothing.
    Start,
    /// In line: the reservation (cancelled if dropped); the timer being awaited, if any, is
    /// the future's `timer`.
    Waiting(Reservation<'a, C>),
    /// Resolved.
    Done,
}

impl<C, F, Fut> Future for FairAcquire<'_, C, F, Fut>
where
    C: Clock,
    F: FnMut(Duration) -> Fut + Unpin,
    Fut: Future<Output = ()>,
{
    type Output = Result<(), Denied>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let FairAcquire {
            gcra,
            permits,
            max_wait,
            timer,
            state,
        } = self.get_mut();
        if let State::Start = state {
            let now = gcra.clock().now();
            match gcra.reserve_n_at(*permits, now, *max_wait) {
                Ok(reservation) => *state = State::Waiting(reservation),
                Err(denied) => {
                    *state = State::Done;
                    return Poll::Ready(Err(denied));
                }
            }
        }
        let State::Waiting(reservation) = state else {
            return Poll::Pending; // resolved
        };
        // The timer may be on another clock than the limiter's (tokio's vs quanta) and wake
        // a little early by this one: sleep again for what is left.
        core::task::ready!(timer.poll_until(cx, || {
            let now = gcra.clock().now();
            if now < reservation.ready_at() {
                ControlFlow::Continue(reservation.delay_at(now))
            } else {
                ControlFlow::Break(())
            }
        }));
        if let State::Waiting(reservation) = core::mem::replace(state, State::Done) {
            reservation.keep();
        }
        Poll::Ready(Ok(()))
    }
}

impl<C, F, Fut> fmt::Debug for FairAcquire<'_, C, F, Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Start => "not polled",
            State::Waiting(_) => "in line",
            State::Done => "done",
        };
        let mut d = f.debug_struct("FairAcquire");
        d.field("permits", &self.permits).field("state", &state);
        if let State::Waiting(reservation) = &self.state {
            d.field("ready_at", &reservation.ready_at());
        }
        d.finish_non_exhaustive()
    }
}
