//! [`Precise`], the real sleeper of every `*_blocking` wait and of the pacer: sleep until
//! the learned oversleep before the deadline, then spin the rest.

use core::time::Duration;

use super::{nanos, until, Sleep};
use crate::clock::Clock;

/// The real waiter: sleeps with `std::thread::sleep` until a margin before the deadline, then
/// spins on the clock to it.
///
/// `thread::sleep` oversleeps by the OS timer slack and scheduling delay (about 52 µs on
/// Linux, whose default timer slack is 50 µs; milliseconds on a loaded machine).
///
/// **Adaptive (the default, [`Precise::new`]).** Every sleep measures how late
/// `thread::sleep` woke, and a process-wide running average of that error (samples capped at
/// [`Precise::MAX_LEARNED`], so a descheduling does not stick) is subtracted from the next
/// sleep: the waiter asks to be woken that much before its deadline, then spins at most
/// [`Precise::GUARD`] to it, and if woken earlier than that it sleeps again (never a long
/// spin, never a yield). It learns any OS's timer without configuration.
///
/// **Fixed ([`with_spin`](Precise::with_spin)).** Sleep until the margin before the
/// deadline, then spin to it, yielding to the OS while more than [`Precise::YIELD_ABOVE`]
/// remains. `with_spin(Precise::DEFAULT_SPIN)` (100 µs) was the default before: the most
/// precise on an idle machine, but it spins up to 100 µs per wait, and on a loaded machine
/// a spinning or yielding thread loses its core for whole time slices to the sleepers the
/// scheduler favours. `with_spin(Duration::ZERO)` never spins.
///
/// Measured with `examples/load_generator.rs`, 50,000/s on 8 threads sharing one
/// [`Pacer`](crate::Pacer), 3 s per run, `/usr/bin/time` for CPU (% of one core), on this
/// project's 2-core VM shared with other builds, runs interleaved; ranges over 3 runs:
///
/// | sleeper | load avg | CPU | achieved | lateness p50 | p99 |
/// |---|---:|---:|---:|---:|---:|
/// | adaptive (the default) | 14-16 | 17-32 % | 99.1-99.9 % | 23-41 µs | 5.1-8.0 ms |
/// | fixed 100 µs (the old default) | 14-16 | 78-94 % | 97.4-99.3 % | 79-114 ns | 7.6-8.8 ms |
/// | fixed 0 (never spin) | 14-16 | 14-27 % | 99.9-100 % | 53-54 µs | 0.1-6.8 ms |
/// | fixed 100 µs (the old default) | 5 | 134-135 % | 99.9-100 % | 81-146 ns | 0.04-2.0 ms |
/// | fixed 0 (never spin) | 5 | 25 % | 100 % | 51 µs | 125 µs |
///
/// So the default keeps the rate (the old one lost up to 2.6 % of it under load) at a fifth
/// to a third of a core instead of most of one, and halves never-spinning's lateness; the
/// sub-µs lateness of the old default costs a core and is kept as an option.
///
/// No jitter is added: every waiter wakes as close to its deadline as the machine allows. If a
/// load generator wants randomised arrivals, it should randomise the schedule itself.
///
/// # Examples
///
/// ```
/// use hotlimit::{Clock, Precise, Sleep};
/// use std::time::Duration;
///
/// let sleeper = Precise::new();
/// let t0 = sleeper.now();
/// sleeper.sleep(Duration::from_micros(200));
/// assert!(sleeper.now() - t0 >= 200_000);
/// ```
#[derive(Clone, Debug)]
pub struct Precise<C = crate::clock::DefaultClock> {
    clock: C,
    /// `None`: adaptive (wake the learned oversleep early, spin at most
    /// [`Precise::GUARD`]); `Some(m)`: fixed.
    spin_ns: Option<u64>,
}

/// The process-wide estimate of how late `thread::sleep` wakes, in ns (a running average): a
/// hint shared by every adaptive [`Precise`], outside any limiter's state. Starts at 60 µs
/// (Linux's default timer slack of 50 µs plus a wake-up).
static OVERSLEEP_NS: crate::sync::HintU64 = crate::sync::HintU64::new(60_000);

impl Precise {
    /// The fixed margin that was the default before the adaptive one: 100 µs. Pass it to
    /// [`with_spin`](Precise::with_spin) for the old behaviour.
    pub const DEFAULT_SPIN: Duration = Duration::from_micros(100);

    /// While more than this remains in the spin phase, the thread yields instead of spinning.
    pub const YIELD_ABOVE: Duration = Duration::from_micros(20);

    /// The most the adaptive waiter spins: woken closer than this to its deadline it spins
    /// the rest; woken earlier it sleeps again.
    pub const GUARD: Duration = Duration::from_micros(10);

    /// The largest oversleep sample the adaptive margin learns from (the old fixed margin): a
    /// longer one is a descheduling on a loaded machine (the thread did not run), not the
    /// timer's error.
    pub const MAX_LEARNED: Duration = Duration::from_micros(100);

    /// A precise sleeper on a new [`DefaultClock`](crate::clock::DefaultClock) with the adaptive
    /// margin.
    ///
    /// # Examples
    ///
    /// ```
    /// let sleeper = hotlimit::Precise::new();
    /// assert!(sleeper.is_adaptive());
    /// assert!(sleeper.spin() <= hotlimit::Precise::MAX_LEARNED);
    /// ```
    pub fn new() -> Precise {
        Precise::with_clock(crate::clock::DefaultClock::default())
    }
}

impl Default for Precise {
    fn default() -> Self {
        Precise::new()
    }
}

impl<C: Clock> Precise<C> {
    /// A precise sleeper on `clock` with the adaptive margin.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Precise, QuantaClock};
    /// let sleeper = Precise::with_clock(QuantaClock::new());
    /// # let _ = sleeper;
    /// ```
    pub fn with_clock(clock: C) -> Precise<C> {
        Precise {
            clock,
            spin_ns: None,
        }
    }

    /// Fixes the spin margin: sleep until `spin` before each deadline, then spin. Zero means
    /// never spin (pure `thread::sleep`, late by the OS's wake-up error); larger values trade
    /// CPU for precision on a loaded machine.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Precise;
    /// use std::time::Duration;
    ///
    /// let sleeper = Precise::new().with_spin(Duration::from_micros(50));
    /// assert_eq!(sleeper.spin(), Duration::from_micros(50));
    /// assert!(!sleeper.is_adaptive());
    /// ```
    #[must_use]
    pub fn with_spin(mut self, spin: Duration) -> Precise<C> {
        self.spin_ns = Some(nanos(spin));
        self
    }

    /// The margin now: the fixed one, or (adaptive) the learned oversleep, how long before a
    /// deadline the waiter asks to be woken.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(hotlimit::Precise::new().with_spin(Duration::ZERO).spin(), Duration::ZERO);
    /// ```
    pub fn spin(&self) -> Duration {
        Duration::from_nanos(self.margin())
    }

    /// Whether the margin is the adaptive one (not fixed by [`with_spin`](Precise::with_spin)).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(hotlimit::Precise::new().is_adaptive());
    /// ```
    pub fn is_adaptive(&self) -> bool {
        self.spin_ns.is_none()
    }

    fn margin(&self) -> u64 {
        match self.spin_ns {
            Some(fixed) => fixed,
            // Relaxed: a hint; any recent value is as good as the latest.
            None => OVERSLEEP_NS.load(crate::sync::Ordering::Relaxed),
        }
    }
}

/// Moves the learned oversleep towards `sample` by 1/16 of the gap: a running average, so
/// that one unusual wake-up moves it little.
fn learn_oversleep(sample: u64) {
    let sample = sample.min(nanos(Precise::MAX_LEARNED));
    // Relaxed (load and store): a hint outside every limiter's state; two threads racing
    // here lose one sample, which only slows the learning.
    let est = OVERSLEEP_NS.load(crate::sync::Ordering::Relaxed);
    let next = if sample > est {
        est + (sample - est) / 16
    } else {
        est - (est - sample) / 16
    };
    OVERSLEEP_NS.store(next, crate::sync::Ordering::Relaxed);
}

impl<C: Clock> Clock for Precise<C> {
    #[inline]
    fn now(&self) -> u64 {
        self.clock.now()
    }
}

impl<C: Clock> Sleep for Precise<C> {
    fn sleep_until(&self, deadline: u64) {
        if self.is_adaptive() {
            return self.sleep_until_adaptive(deadline);
        }
        let yield_above = nanos(Precise::YIELD_ABOVE);
        until(&self.clock, deadline, |_, left| {
            let margin = self.margin();
            if left > margin {
                std::thread::sleep(Duration::from_nanos(left - margin));
            } else if left > yield_above {
                std::thread::yield_now();
            } else {
                core::hint::spin_loop();
            }
        });
    }
}

impl<C: Clock> Precise<C> {
    /// The adaptive wait: sleep until the learned oversleep before the deadline; spin only
    /// the last [`GUARD`](Precise::GUARD) at most; when woken earlier than that (the estimate
    /// ran ahead of this wake-up), sleep again rather than spin or yield for long. A long spin
    /// or a yield on a loaded machine loses the core for a time slice (milliseconds) to the
    /// sleepers the scheduler favours: measured, up to a quarter of a pacer's rate.
    fn sleep_until_adaptive(&self, deadline: u64) {
        let guard = nanos(Precise::GUARD);
        until(&self.clock, deadline, |now, left| {
            if left <= guard {
                core::hint::spin_loop();
                return;
            }
            let est = self.margin();
            let asked = if left > est + guard { left - est } else { left };
            std::thread::sleep(Duration::from_nanos(asked));
            let slept = self.clock.now().saturating_sub(now);
            learn_oversleep(slept.saturating_sub(asked));
        });
    }
}
