//! The [`Limiter`] trait every limiter implements.

use crate::error::Denied;
use crate::fair_queue::FairQueue;

/// A rate limiter: take permits now, or be told when to retry.
///
/// Implementations read their own clock; each also has `*_at(.., now)` methods that take the
/// time as an argument.
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, Limiter, Rate};
///
/// fn admit(limiter: &impl Limiter) -> bool {
///     limiter.try_acquire().is_ok()
/// }
///
/// let limiter = Gcra::new(Rate::per_second(100)?)?;
/// assert!(admit(&limiter));
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
pub trait Limiter: Send + Sync {
    /// Take one permit now.
    ///
    /// # Errors
    ///
    /// [`Denied`] when the permit is not available; it says when to retry.
    fn try_acquire(&self) -> Result<(), Denied> {
        self.try_acquire_n(1)
    }

    /// Take `permits` permits now, all or nothing. Zero permits always succeed.
    ///
    /// # Errors
    ///
    /// [`Denied`] when the permits are not all available; `retry_after() == None` when they
    /// never can be (more than the limiter can ever hold at once).
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied>;

    /// Not part of the API: the limiter's first-come-first-served line, if it has one, for
    /// the waits of [`LimiterExt`](crate::LimiterExt) (which retry when this is `None`, the
    /// default). [`Gcra`](crate::Gcra) returns itself; `&L`, `Arc<L>` and `Box<L>` forward
    /// it, so a wait through any of them, or through `dyn Limiter` or generic code, joins the
    /// same line as the inherent `Gcra::acquire_*` methods. A type of yours that wraps a
    /// limiter and forwards only the two methods above gets the retrying waits.
    #[doc(hidden)]
    #[inline]
    fn __fair_queue(&self) -> Option<&dyn FairQueue> {
        None
    }
}

impl<L: Limiter + ?Sized> Limiter for &L {
    #[inline]
    fn try_acquire(&self) -> Result<(), Denied> {
        (**self).try_acquire()
    }

    #[inline]
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        (**self).try_acquire_n(permits)
    }

    #[inline]
    fn __fair_queue(&self) -> Option<&dyn FairQueue> {
        (**self).__fair_queue()
    }
}

impl<L: Limiter + ?Sized> Limiter for alloc::sync::Arc<L> {
    #[inline]
    fn try_acquire(&self) -> Result<(), Denied> {
        (**self).try_acquire()
    }

    #[inline]
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        (**self).try_acquire_n(permits)
    }

    #[inline]
    fn __fair_queue(&self) -> Option<&dyn FairQueue> {
        (**self).__fair_queue()
    }
}

impl<L: Limiter + ?Sized> Limiter for alloc::boxed::Box<L> {
    #[inline]
    fn try_acquire(&self) -> Result<(), Denied> {
        (**self).try_acquire()
    }

    #[inline]
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        (**self).try_acquire_n(permits)
    }

    #[inline]
    fn __fair_queue(&self) -> Option<&dyn FairQueue> {
        (**self).__fair_queue()
    }
}

/// `Limiter` for a limiter whose `try_acquire_at(now)` and `try_acquire_n_at(permits, now)`
/// are the whole decision: each method reads the clock once and calls the `_at` form.
/// `limiter_at!(Ty, fair_queue)` also offers the limiter itself as its
/// [`FairQueue`] (it must implement it), so that every wait joins its line.
macro_rules! limiter_at {
    ($ty:ident) => {
        $crate::limiter::limiter_at!($ty, {});
    };
    ($ty:ident, fair_queue) => {
        $crate::limiter::limiter_at!($ty, {
            #[inline]
            fn __fair_queue(&self) -> Option<&dyn $crate::fair_queue::FairQueue> {
                Some(self)
            }
        });
    };
    ($ty:ident, { $($hook:tt)* }) => {
        impl<C: $crate::clock::Clock> $crate::limiter::Limiter for $ty<C> {
            #[inline]
            fn try_acquire(&self) -> Result<(), $crate::error::Denied> {
                self.try_acquire_at($crate::clock::Clock::now(&self.clock))
            }

            #[inline]
            fn try_acquire_n(&self, permits: u32) -> Result<(), $crate::error::Denied> {
                self.try_acquire_n_at(permits, $crate::clock::Clock::now(&self.clock))
            }

            $($hook)*
        }
    };
}
pub(crate) use limiter_at;
