use core::{fmt, time::Duration};
// The upkeep thread holds a `Weak` so it can tell when the last clock is gone; the facade has
// no `Weak`, and this clock is never built under loom (it spawns a real thread).
use std::sync::{Arc, Weak};

use crossbeam_utils::CachePadded;

use crate::clock::quanta::QuantaClock;
use crate::clock::Clock;
use crate::error::{ConfigError, Value};
use crate::sync::{AtomicU64, Ordering};

/// A clock for the hottest paths: `now()` is one relaxed load of a word that a background
/// upkeep thread refreshes from a [`QuantaClock`] every `resolution` (default 1 ms).
///
/// # Error bound
///
/// A reading is **never ahead** of the precise clock it copies, and lags it by at most
/// `resolution` plus the upkeep thread's wake-up delay. That delay is normally microseconds,
/// but it is not bounded: on an oversubscribed machine the scheduler may leave the upkeep
/// thread waiting for a time slice (milliseconds), and the clock stands still meanwhile.
///
/// What a lag of at most L does to a limiter: every decision is made at a `now` between the
/// true time minus L and the true time, so each limiter's guarantee holds exactly in this
/// clock's time, and in true time the window of any guarantee widens by L (for [`Gcra`]:
/// at most b + (d + L)/I permits in any true interval of length d). Capacity also frees in
/// steps of one tick instead of continuously: a limiter of 1,000,000/s with a 1 ms clock frees
/// 1,000 permits per tick. Use it when the clock read is a measurable part of the call (a
/// precise TSC read is ~9 ns, this is ~1 ns) and millisecond granularity is acceptable.
///
/// Clones share one upkeep thread; it exits within one `resolution` after the last clone is
/// dropped. If the thread cannot be spawned, the clock reads the precise clock on every call
/// instead (same values, no lag, the precise clock's cost).
///
/// Values are nanoseconds since the clock was created, like [`QuantaClock`]'s, and never
/// decrease.
///
/// [`Gcra`]: crate::Gcra
///
/// # Examples
///
/// ```
/// use hotlimit::{Clock, CoarseClock, Gcra, Limiter, Rate};
/// use std::time::Duration;
///
/// let clock = CoarseClock::with_resolution(Duration::from_micros(500))?;
/// let limiter = Gcra::builder(Rate::per_second(1_000)?).clock(clock.clone()).build()?;
/// assert!(limiter.try_acquire().is_ok());
/// let a = clock.now();
/// // The upkeep thread moves the clock every 500 µs (later on a busy machine: wait up to 5 s).
/// let start = std::time::Instant::now();
/// while clock.now() == a && start.elapsed() < Duration::from_secs(5) {
///     std::thread::sleep(Duration::from_millis(1));
/// }
/// assert!(clock.now() > a, "the upkeep thread moved the clock");
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct CoarseClock {
    shared: Arc<Shared>,
}

struct Shared {
    /// The last reading of `precise`, in ns; written only by the upkeep thread.
    nanos: CachePadded<AtomicU64>,
    /// The source of truth, and the fallback when there is no upkeep thread.
    precise: QuantaClock,
    /// Whether an upkeep thread refreshes `nanos`; `false` means "read `precise` every time".
    upkeep: bool,
    resolution: Duration,
}

impl CoarseClock {
    /// A coarse clock refreshed every millisecond.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, CoarseClock};
    /// let clock = CoarseClock::new();
    /// let _ns = clock.now();
    /// ```
    pub fn new() -> CoarseClock {
        CoarseClock::spawn(Duration::from_millis(1))
    }

    /// A coarse clock refreshed every `resolution`.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] (field `resolution`) when `resolution` is zero (the upkeep thread would
    /// spin on a core) or longer than one second (the clock would lag by more than that).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::CoarseClock;
    /// use std::time::Duration;
    ///
    /// let clock = CoarseClock::with_resolution(Duration::from_micros(100))?;
    /// assert_eq!(clock.resolution(), Duration::from_micros(100));
    /// assert_eq!(CoarseClock::with_resolution(Duration::ZERO).unwrap_err().field(), "resolution");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn with_resolution(resolution: Duration) -> Result<CoarseClock, ConfigError> {
        if resolution.is_zero() || resolution > Duration::from_secs(1) {
            return Err(ConfigError::new(
                "resolution",
                Value::Nanos(resolution.as_nanos()),
                "must be more than 0 and at most 1 s",
            ));
        }
        Ok(CoarseClock::spawn(resolution))
    }

    /// Starts the upkeep thread for a validated `resolution`.
    fn spawn(resolution: Duration) -> CoarseClock {
        let precise = QuantaClock::new();
        let start = precise.now();
        let mut shared = Arc::new(Shared {
            nanos: CachePadded::new(AtomicU64::new(start)),
            precise,
            upkeep: true,
            resolution,
        });
        let weak = Arc::downgrade(&shared);
        let spawned = std::thread::Builder::new()
            .name("hotlimit-coarse-clock".into())
            .spawn(move || upkeep(weak, resolution, start));
        if spawned.is_err() {
            // No thread holds a reference yet (its closure was dropped with the error), so
            // this is the only Arc: switch to reading the precise clock on every call.
            if let Some(s) = Arc::get_mut(&mut shared) {
                s.upkeep = false;
            }
        }
        CoarseClock { shared }
    }

    /// How often the upkeep thread refreshes the reading.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::CoarseClock;
    /// use std::time::Duration;
    /// assert_eq!(CoarseClock::new().resolution(), Duration::from_millis(1));
    /// ```
    pub fn resolution(&self) -> Duration {
        self.shared.resolution
    }
}

/// The upkeep loop: refresh the reading every `resolution` until every clock is dropped.
fn upkeep(shared: Weak<Shared>, resolution: Duration, mut last: u64) {
    while let Some(shared) = shared.upgrade() {
        // One writer and a monotonic source; the max keeps the value from ever decreasing
        // even if the precise clock stalls or steps back across cores.
        last = last.max(shared.precise.now());
        // Relaxed: the reading is a self-contained word; readers need nothing else published
        // with it, and a reader seeing the previous tick is within the documented lag.
        shared.nanos.store(last, Ordering::Relaxed);
        drop(shared);
        std::thread::sleep(resolution);
    }
}

impl Default for CoarseClock {
    fn default() -> Self {
        CoarseClock::new()
    }
}

impl Clock for CoarseClock {
    #[inline]
    fn now(&self) -> u64 {
        if self.shared.upkeep {
            // Relaxed: see the store in `upkeep`; a stale value is within the error bound.
            self.shared.nanos.load(Ordering::Relaxed)
        } else {
            self.shared.precise.now()
        }
    }
}

impl fmt::Debug for CoarseClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CoarseClock")
            .field("resolution", &self.shared.resolution)
            .field("upkeep", &self.shared.upkeep)
            .field("now_ns", &self.now())
            .finish()
    }
}
