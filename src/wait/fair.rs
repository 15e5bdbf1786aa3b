//! The fair wait, once for every path: take a place in a [`FairQueue`]'s line, then wait for
//! the place's time. [`Gcra`](crate::Gcra)'s inherent `acquire_*` methods, its
//! [`FairAcquire`](crate::FairAcquire) future, and [`LimiterExt`](crate::LimiterExt)'s waits
//! on any limiter that offers a line (a `Gcra` through `&`, `Arc`, `Box`, `dyn Limiter` or
//! generic code) all run the functions here, so they serve waiters in one order: the order in
//! which their places were taken.
//!
//! A blocking wait never leaves the line (it only joins within its timeout), so it never
//! wastes capacity. An async wait that is dropped before it resolves leaves the line: its
//! permits are given back exactly when it is last in line, and otherwise its slot stays
//! unused (see [`Reservation::cancel`](crate::Reservation::cancel)).

use core::future::Future;
use core::ops::ControlFlow;
use core::task::{Context, Poll};
use core::{fmt, time::Duration};

use super::{wait_until, Sleep, Timer};
use crate::error::Denied;
use crate::fair_queue::{FairQueue, Place};

/// Join `queue` for `permits` now, waiting at most `max_wait` ns, then block until the
/// place's time, letting time pass with `sleeper`.
pub(crate) fn acquire_blocking_with<Q, S>(
    queue: &Q,
    permits: u32,
    max_wait: u64,
    sleeper: &S,
) -> Result<(), Denied>
where
    Q: FairQueue + ?Sized,
    S: Sleep + ?Sized,
{
    let clock = queue.queue_clock();
    let place = queue.join(permits, clock.now(), max_wait)?;
    wait_until(clock, place.ready_at(), sleeper);
    Ok(())
}

/// [`acquire_blocking_with`] with a [`Precise`](super::Precise) sleeper, made only when the
/// place is not ready at once (the common case under light load needs none).
#[cfg(feature = "std")]
pub(crate) fn acquire_blocking<Q: FairQueue + ?Sized>(
    queue: &Q,
    permits: u32,
    max_wait: u64,
) -> Result<(), Denied> {
    let clock = queue.queue_clock();
    let now = clock.now();
    let place = queue.join(permits, now, max_wait)?;
    if place.ready_at() > now {
        wait_until(clock, place.ready_at(), &super::Precise::new());
    }
    Ok(())
}

/// A place held by an async waiter: left (given back if last in line) when dropped before it
/// is settled.
struct Held<'a> {
    queue: &'a dyn FairQueue,
    place: Place,
    settled: bool,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.queue.leave(&self.place);
        }
    }
}

enum State<'a> {
    /// Not polled yet: holds nothing.
    Start,
    /// In line: the place (left if dropped); the timer being awaited, if any, is the wait's
    /// `timer`.
    Waiting(Held<'a>),
    /// Resolved.
    Done,
}

/// The async fair wait: the place is taken at the first poll, then the runtime's timer is
/// awaited until the place's time. The state of [`FairAcquire`](crate::FairAcquire) and of
/// [`Acquire`](crate::Acquire) on a limiter with a line.
pub(crate) struct FairWait<'a, F, Fut> {
    queue: &'a dyn FairQueue,
    permits: u32,
    max_wait: u64,
    timer: Timer<F, Fut>,
    state: State<'a>,
}

impl<'a, F, Fut> FairWait<'a, F, Fut> {
    /// The wait before its first poll: nothing taken yet.
    pub(crate) fn new(queue: &'a dyn FairQueue, permits: u32, max_wait: u64, sleep: F) -> Self {
        FairWait {
            queue,
            permits,
            max_wait,
            timer: Timer::new(sleep),
            state: State::Start,
        }
    }
}

impl<F, Fut> FairWait<'_, F, Fut>
where
    F: FnMut(Duration) -> Fut,
    Fut: Future<Output = ()>,
{
    /// One poll: join at the first; resolve once the line's clock reaches the place's time.
    /// Once resolved, `Pending` forever, taking nothing.
    pub(crate) fn poll_wait(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Denied>> {
        let FairWait {
            queue,
            permits,
            max_wait,
            timer,
            state,
        } = self;
        let clock = queue.queue_clock();
        if let State::Start = state {
            match queue.join(*permits, clock.now(), *max_wait) {
                Ok(place) => {
                    *state = State::Waiting(Held {
                        queue: *queue,
                        place,
                        settled: false,
                    })
                }
                Err(denied) => {
                    *state = State::Done;
                    return Poll::Ready(Err(denied));
                }
            }
        }
        let State::Waiting(held) = state else {
            return Poll::Pending; // resolved
        };
        let ready_at = held.place.ready_at();
        // The timer may be on another clock than the line's (tokio's vs quanta) and wake a
        // little early by this one: sleep again for what is left.
        core::task::ready!(timer.poll_until(cx, || {
            let now = clock.now();
            if now < ready_at {
                ControlFlow::Continue(Duration::from_nanos(ready_at - now))
            } else {
                ControlFlow::Break(())
            }
        }));
        held.settled = true;
        *state = State::Done;
        Poll::Ready(Ok(()))
    }
}

impl<F, Fut> fmt::Debug for FairWait<'_, F, Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Start => "not polled",
            State::Waiting(_) => "in line",
            State::Done => "done",
        };
        let mut d = f.debug_struct("FairWait");
        d.field("permits", &self.permits).field("state", &state);
        if let State::Waiting(held) = &self.state {
            d.field("ready_at", &held.place.ready_at());
        }
        d.finish_non_exhaustive()
    }
}
