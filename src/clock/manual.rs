use core::{fmt, time::Duration};

use crate::clock::Clock;
use crate::sync::{Arc, AtomicU64, Ordering};

/// A clock that moves only when told to: for tests, simulations, loom models and replaying
/// traces.
///
/// Clones share one time (an `Arc` inside), so a test can keep a handle while the limiter owns
/// another. It starts at 0 ns. It is built on the crate's atomic facade, so under
/// `--cfg hotlimit_loom` the model checker sees its reads and writes.
///
/// # Examples
///
/// ```
/// use hotlimit::{Clock, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let handle = clock.clone();
/// handle.advance(Duration::from_secs(1));
/// assert_eq!(clock.now(), 1_000_000_000);
/// handle.set(Duration::from_nanos(5)); // may also go backwards
/// assert_eq!(clock.now(), 5);
/// ```
#[derive(Clone)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A new clock at 0 ns.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, ManualClock};
    /// assert_eq!(ManualClock::new().now(), 0);
    /// ```
    pub fn new() -> ManualClock {
        ManualClock {
            nanos: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Moves the clock forward by `by`, saturating at `u64::MAX` nanoseconds.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, ManualClock};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// clock.advance(Duration::from_micros(2));
    /// assert_eq!(clock.now(), 2_000);
    /// ```
    pub fn advance(&self, by: Duration) {
        let by = saturating_nanos(by);
        // Relaxed: the time is a self-contained word; readers need no other data published
        // with it, and per-location coherence keeps each reader's view monotonic.
        let _ = self
            .nanos
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(t.saturating_add(by))
            });
    }

    /// Sets the time since the origin to `since_origin` (saturating at `u64::MAX` ns). The time
    /// may go backwards: limiters must, and do, treat that as "no time has passed".
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, ManualClock};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// clock.set(Duration::from_secs(10));
    /// assert_eq!(clock.now(), 10_000_000_000);
    /// ```
    pub fn set(&self, since_origin: Duration) {
        // Relaxed: as in `advance`, a self-contained word.
        self.nanos
            .store(saturating_nanos(since_origin), Ordering::Relaxed);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl Clock for ManualClock {
    #[inline]
    fn now(&self) -> u64 {
        // Relaxed: as in `advance`, a self-contained word.
        self.nanos.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock")
            .field("now_ns", &self.now())
            .finish()
    }
}

fn saturating_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
