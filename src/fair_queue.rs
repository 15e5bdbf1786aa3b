//! [`FairQueue`]: the seam through which every wait reaches a limiter's first-come-first-served
//! line, whatever holds the limiter (`&`, `Arc`, `Box`, `dyn Limiter`, generic code).
//!
//! A limiter that can queue waiters (today [`Gcra`](crate::Gcra), whose TAT pushed into the
//! future *is* the line: see [`Reservation`](crate::Reservation)) returns itself from the
//! hidden [`Limiter::__fair_queue`](crate::Limiter) hook; the pointer impls of [`Limiter`]
//! forward the hook; [`LimiterExt`](crate::LimiterExt)'s waits ask it first and retry only
//! when it says `None`. Not part of the API: the trait is sealed by [`Place`], which only this
//! crate can make.
//!
//! [`Limiter`]: crate::Limiter

use crate::clock::Clock;
use crate::error::Denied;

/// A limiter's first-come-first-served line, as the waits see it. Not part of the API
/// (hidden, sealed: only this crate can make a [`Place`]).
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, Limiter, ManualClock, Rate};
///
/// // A Gcra has a line; forwarding pointers keep it; a wrapper that forwards only the
/// // trait's two methods does not.
/// let gcra = Gcra::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
/// assert!(gcra.__fair_queue().is_some());
/// assert!(std::sync::Arc::new(gcra).__fair_queue().is_some());
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[doc(hidden)]
pub trait FairQueue: Send + Sync {
    /// The clock the line's times are on.
    fn queue_clock(&self) -> &dyn Clock;

    /// Take a place in line for `permits` at `now`, waiting at most `max_wait` ns: the
    /// limiter's reservation (for a [`Gcra`](crate::Gcra), one CAS on its TAT).
    ///
    /// # Errors
    ///
    /// As [`Gcra::reserve_n_at`](crate::Gcra::reserve_n_at).
    fn join(&self, permits: u32, now: u64, max_wait: u64) -> Result<Place, Denied>;

    /// Give `place` back if nothing has joined since (it is last in line); whether it was
    /// given back. As [`Reservation::cancel`](crate::Reservation::cancel).
    fn leave(&self, place: &Place) -> bool;
}

/// A place in a [`FairQueue`]: what its [`leave`](FairQueue::leave) needs, and when the
/// permits are the waiter's. Not part of the API; only this crate makes one.
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, Limiter, ManualClock, Rate};
///
/// let gcra = Gcra::builder(Rate::per_second(1)?).burst(1).clock(ManualClock::new()).build()?;
/// let line = gcra.__fair_queue().unwrap();
/// assert_eq!(line.join(1, 0, u64::MAX)?.ready_at(), 0);
/// let second = line.join(1, 0, u64::MAX)?;
/// assert_eq!(second.ready_at(), 1_000_000_000);
/// assert!(line.leave(&second)); // last in line: given back
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// The limiter's state this place installed (for a `Gcra`: S').
    pub(crate) tat: u64,
    /// What leaving takes back off `tat` (n·I); 0 for a place that holds nothing.
    pub(crate) cost: u64,
    /// When the permits are the waiter's, on the line's clock.
    pub(crate) ready_at: u64,
}

impl Place {
    /// When the permits are the waiter's, nanoseconds on the line's clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Limiter, ManualClock, Rate};
    ///
    /// let gcra = Gcra::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(gcra.__fair_queue().unwrap().join(1, 7, 0)?.ready_at(), 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ready_at(&self) -> u64 {
        self.ready_at
    }
}
