use core::fmt;

use crate::clock::Clock;

/// The default clock: [`quanta`](https://docs.rs/quanta)'s TSC-based clock where the CPU has
/// a stable TSC (calibrated once per process), `clock_gettime(CLOCK_MONOTONIC)` elsewhere.
///
/// `now()` is nanoseconds since this value was created; clones share the origin. One read
/// costs about as much as an `rdtsc` plus a multiply-shift where the TSC is used (about 8 ns
/// on the machine of `BENCHMARKS.md`), and a `clock_gettime` call elsewhere (25–40 ns, as in
/// many virtual machines, whose CPUs often report no invariant TSC). The keyed limiters
/// start fetching the key's table line before they read the clock, so that a table miss
/// overlaps the read.
///
/// # Examples
///
/// ```
/// use hotlimit::{Clock, QuantaClock};
///
/// let clock = QuantaClock::new();
/// let a = clock.now();
/// let b = clock.now();
/// assert!(b >= a);
/// ```
#[derive(Clone)]
pub struct QuantaClock {
    clock: ::quanta::Clock,
    origin: u64,
}

impl QuantaClock {
    /// A clock whose origin is now.
    ///
    /// # Examples
    ///
    /// ```
    /// let clock = hotlimit::QuantaClock::new();
    /// # let _ = clock;
    /// ```
    pub fn new() -> QuantaClock {
        // Under Miri (which cannot run the TSC calibration's inline assembly) a clock that
        // stands still: the Miri tests run on `ManualClock`s, but their builders make a
        // default clock first.
        #[cfg(miri)]
        let clock = ::quanta::Clock::mock().0;
        #[cfg(not(miri))]
        let clock = ::quanta::Clock::new();
        let origin = clock.raw();
        QuantaClock { clock, origin }
    }
}

impl Default for QuantaClock {
    fn default() -> Self {
        QuantaClock::new()
    }
}

impl Clock for QuantaClock {
    #[inline]
    fn now(&self) -> u64 {
        // `delta_as_nanos` returns 0 for a raw reading at or before the origin (a TSC that
        // differs slightly across cores), never a wrapped value.
        self.clock.delta_as_nanos(self.origin, self.clock.raw())
    }
}

impl fmt::Debug for QuantaClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QuantaClock")
            .field("now_ns", &self.now())
            .finish()
    }
}
