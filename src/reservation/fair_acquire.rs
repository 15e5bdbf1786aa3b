//! [`FairAcquire`], the future of [`Gcra::acquire_async`]: a place in the Gcra's line (a
//! [`Reservation`](crate::Reservation)) taken at the first poll, then the runtime's timer
//! until its time. The wait itself is `wait/fair.rs`'s, which `LimiterExt::acquire_async`
//! runs too on a `Gcra` however it is held.

use core::future::Future;
use core::marker::PhantomData;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::{fmt, time::Duration};

use crate::clock::Clock;
use crate::error::Denied;
use crate::gcra::Gcra;
use crate::wait::fair::FairWait;

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
    /// The wait in the Gcra's line (the one fair wait, shared with `LimiterExt`).
    wait: FairWait<'a, F, Fut>,
    gcra: PhantomData<&'a Gcra<C>>,
}

impl<'a, C: Clock, F, Fut> FairAcquire<'a, C, F, Fut> {
    /// The future before its first poll: nothing reserved yet.
    pub(super) fn new(gcra: &'a Gcra<C>, permits: u32, max_wait: u64, sleep: F) -> Self {
        FairAcquire {
            wait: FairWait::new(gcra, permits, max_wait, sleep),
            gcra: PhantomData,
        }
    }
}

impl<C, F, Fut> Future for FairAcquire<'_, C, F, Fut>
where
    F: FnMut(Duration) -> Fut + Unpin,
    Fut: Future<Output = ()>,
{
    type Output = Result<(), Denied>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().wait.poll_wait(cx)
    }
}

impl<C, F, Fut> fmt::Debug for FairAcquire<'_, C, F, Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FairAcquire").field(&self.wait).finish()
    }
}
