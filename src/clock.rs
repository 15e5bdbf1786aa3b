//! Time sources. Every limiter works on `u64` nanoseconds since its clock's origin.

#[cfg(all(feature = "std", not(hotlimit_loom)))]
mod coarse;
mod manual;
#[cfg(feature = "std")]
mod quanta;

#[cfg(all(feature = "std", not(hotlimit_loom)))]
pub use coarse::CoarseClock;
pub use manual::ManualClock;
#[cfg(feature = "std")]
pub use quanta::QuantaClock;

/// A monotonic source of nanoseconds.
///
/// Limiters read their clock only in the convenience methods (`try_acquire`,
/// `try_acquire_n`); the algorithms themselves take `now` as an argument (`*_at` methods), so
/// any time source can drive them. `u64` nanoseconds cover 584 years from the clock's origin.
///
/// A clock that goes backwards is tolerated by every limiter: a `now` below the limiter's
/// state is treated as "no time has passed", never as freed capacity.
///
/// # Examples
///
/// ```
/// use hotlimit::{Clock, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// clock.advance(Duration::from_millis(3));
/// assert_eq!(clock.now(), 3_000_000);
/// ```
pub trait Clock: Send + Sync {
    /// Nanoseconds since this clock's origin. Must not decrease between calls on one thread
    /// (if it does, limiters stay safe: see the trait docs).
    fn now(&self) -> u64;
}

impl<C: Clock + ?Sized> Clock for &C {
    #[inline]
    fn now(&self) -> u64 {
        (**self).now()
    }
}

impl<C: Clock + ?Sized> Clock for alloc::sync::Arc<C> {
    #[inline]
    fn now(&self) -> u64 {
        (**self).now()
    }
}

/// The clock a limiter uses when none is given: [`QuantaClock`] with the `std` feature.
#[cfg(feature = "std")]
pub type DefaultClock = QuantaClock;

/// The clock a limiter uses when none is given. Without the `std` feature there is no
/// portable time source, so this marker does not implement [`Clock`]: a builder must be given
/// one with `.clock(c)` before `build()` compiles.
#[cfg(not(feature = "std"))]
pub type DefaultClock = NoClock;

/// Placeholder for "no clock chosen yet" without the `std` feature. It does not implement
/// [`Clock`], so `build()` without `.clock(c)` is a compile error rather than a silent
/// frozen clock.
///
/// # Examples
///
/// ```
/// let _marker = hotlimit::NoClock;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoClock;
