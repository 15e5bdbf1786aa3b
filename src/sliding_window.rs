//! [`SlidingWindow`]: a hard cap per window from a fixed ring of bucket counters, each
//! stamped with its epoch.
//!
//! The period is split into buckets of width w = ⌈period / n⌉; bucket e holds the permits
//! granted at times in [e·w, (e+1)·w). Only the buckets a window can touch are kept, in a ring
//! reused round-robin, so memory is O(buckets), independent of `limit`: the classic bucketed
//! ("rolling") window counter, made lock-free, and strict by counting the oldest
//! partially-covered bucket whole.
//!
//! # The floor
//!
//! A request at `now` counts every bucket from the *floor* f(now) on:
//!
//! - strict (default): f(now) = ⌊(now − (period − 1)) / w⌋, the bucket holding the oldest
//!   instant of the window (now − period, now], counted whole;
//! - approximate: f(now) = ⌊(now − (period − w)) / w⌋, the first bucket that starts after
//!   now − period (the partially-overlapping oldest bucket is dropped).
//!
//! Both are ⌊(now − lag) / w⌋ (saturating at 0), with lag = period − 1 or period − w.
//!
//! # Two cores
//!
//! Strict and approximate mode share one core (`time.rs`): a decision word holding the
//! cumulative count of permits ever granted, beside the current bucket, and a ring of
//! snapshots of that count taken at bucket ends. The permits a request counts are the count
//! now minus the snapshot at the end of the bucket just below the floor, so a grant is one
//! load of the word, one load of a snapshot and one CAS; moving to a new bucket ("a roll")
//! freezes the word for a moment and writes the snapshots, and any caller can finish it.
//!
//! Count-closed mode (`closed.rs`) keeps per-bucket counts, given back exactly once when a
//! bucket expires or closes, plus a FIFO ring of closed buckets.
//!
//! The proofs are in the [`guide`](crate::guide::sliding_window#slidingwindow-the-strict-bound).
//!
//! Files: this one holds the limiter, its admission over either core, the read-back at a
//! given time and `KeyWindow`; `sliding_window/builder.rs` the builder;
//! `sliding_window/read.rs` the read-back with the clock read and `Decide`;
//! `sliding_window/change.rs` live limit changes; `time.rs` and `closed.rs` the two cores.

use core::{fmt, time::Duration};

use alloc::boxed::Box;

use crate::clock::{Clock, DefaultClock};
use crate::error::Denied;
use crate::error::{ConfigError, Value};
use crate::limiter::Limiter;
use crate::rate::Rate;
use crate::sync::{AtomicU64, Ordering};

mod builder;
mod change;
mod closed;
mod read;
mod time;

pub use builder::SlidingWindowBuilder;

use closed::CountClosed;
pub(crate) use time::pair::PairWord;
use time::TimeRing;
pub(crate) use time::View;

/// The largest `limit`: a window's count (at most 2·limit while the oldest bucket is counted
/// whole) must fit the 32-bit count fields.
const MAX_LIMIT: u64 = (1 << 31) - 1;
/// The most buckets (memory: 8 bytes per slot, at most 2 × (`MAX_BUCKETS` + 1) slots).
const MAX_BUCKETS: usize = 1 << 16;
/// The bucket count `SlidingWindow::new` and the builder use unless told otherwise.
const DEFAULT_BUCKETS: usize = 10;

/// A hard-cap limiter: **at most `limit` permits in every window of length `period`**, from a
/// ring of atomic bucket counters. Memory is O(buckets), independent of `limit`.
///
/// # Guarantees
///
/// With n buckets (default 10) of width w = ⌈period / n⌉:
///
/// | mode | over-admission | a request is wrongly denied only if |
/// |---|---|---|
/// | strict (default) | **never**: at most `limit` in every window of length `period` | `limit` permits were really granted within the last `period + w` (the oldest bucket is counted whole) |
/// | count-closed ([`count_closed(k)`](SlidingWindowBuilder::count_closed)) | **never**, as strict (each grant counted at τ = max(now, the highest `now` any call has brought), which is `now` for a sequential caller whose clock does not run backwards) | both: more than `limit − n` permits were really granted within the last `period + w`, **and** fewer than n + k − 1 permits are truly free (`limit` minus the permits granted in the exact window (now − period, now]); for single permits, fewer than k. k = 1 is exact. Memory + 16 bytes × ⌊`limit` / k⌋, the exact number needed (see the [`guide`](crate::guide::count_closed#count-closed-buckets)) |
/// | approximate ([`approximate()`](SlidingWindowBuilder::approximate)) | up to `limit` extra in one window (2 × the cap), reached by an adversarial trace; under random (Poisson) load at 1–4× the rate, measured +8 to +19 % of `limit` with 10 buckets (see the [`guide`](crate::guide::sliding_window#slidingwindow-the-strict-bound)) | the exact window (now − period, now] holds more than `limit − n` (called sequentially) |
///
/// Strict mode, precisely: each grant is counted at its *effective time* τ = max(now, the
/// start of the newest bucket any call has reached when its CAS succeeds). In every window of
/// length `period` the grants' τ hold at most `limit` permits, under any concurrency: the
/// decision is one CAS on one word that holds the count (see the
/// [`guide`](crate::guide::sliding_window#slidingwindow-the-strict-bound)). τ = `now` for a sequential caller
/// whose clock does not run backwards. Under concurrency it need not be: a caller preempted
/// between its clock read and its CAS, while others moved the window to a newer bucket, is
/// counted at that bucket's start, later than its `now`. τ always lies within the call (from
/// its clock read to its return), so:
///
/// - audited by real time (a grant counted in a window when its whole call lies inside it),
///   no window ever holds more than `limit`;
/// - audited by the `now` each caller read (what a log of `(now, granted)` shows), a window
///   can hold more than `limit`: at most `limit` + the number of threads calling, since only
///   each thread's last grant with its `now` in the window can be counted after it. Measured
///   with 16 threads on 2 cores and one monotone clock (`examples/window_audit.rs`, see the
///   [`guide`](crate::guide::sliding_window#what-time-a-grant-is-counted-at)): up to 1.12 × `limit` at
///   `limit` 100, 1.88 × at 8, 1.75 × at 4 when callers yield between the clock read and the
///   call; 1.01 × at 100 and none at 4 when they do not; by real time never over `limit`.
///
/// A
/// request for more than `limit` permits is denied with `retry_after() == None`. Called
/// sequentially, `retry_after` is exact: waiting it and retrying succeeds, and one nanosecond
/// less does not.
///
/// Time that goes backwards never frees permits: a `now` behind the newest bucket is judged at
/// that bucket's start, so a live bucket never looks expired.
///
/// Cost: a grant is three loads and one CAS, like [`Gcra`](crate::Gcra)'s; a denial writes
/// nothing and reads O(log buckets) more words for its `retry_after` (one when the newest
/// bucket alone is full). The first call in a new bucket also *rolls* the window: two CASes,
/// a snapshot written per bucket passed (at most the ring's size), two more CASes; any call
/// can finish a roll that another call started, so none ever waits for another. Memory: a
/// ring of 8-byte snapshots, the power of two at or above the buckets one window touches
/// (16 slots for the default 10 buckets), plus two cache lines for the head (the word every
/// grant CASes; the epoch, written once per bucket and read by every call) and 128 bytes of
/// padding on each side of the ring (every call reads a snapshot: a neighbouring allocation
/// written by another thread must not share its cache line). Count-closed mode keeps
/// per-bucket counters instead: see [`count_closed`](SlidingWindowBuilder::count_closed).
///
/// **Waiting**: [`LimiterExt`](crate::LimiterExt)'s waits retry here, **not first come first
/// served** (no line: no one word can queue a window's grants).
///
/// # Examples
///
/// ```
/// use hotlimit::{Limiter, ManualClock, Rate, SlidingWindow};
/// use std::time::Duration;
///
/// // 5 per second, 10 buckets of 100 ms.
/// let clock = ManualClock::new();
/// let limiter = SlidingWindow::builder(Rate::per_second(5)?).clock(clock.clone()).build()?;
/// for ms in [900, 950, 1013, 1810, 1850] {
///     clock.set(Duration::from_millis(ms));
///     limiter.try_acquire()?;
/// }
/// clock.set(Duration::from_millis(1890));
/// let denied = limiter.try_acquire().unwrap_err();
/// // The two hits in the bucket [900 ms, 1000 ms) leave the window when it no longer
/// // touches that bucket: at 2 s − 1 ns, when the window is (999.999999 ms, 1999.999999 ms].
/// assert_eq!(denied.retry_after(), Some(Duration::from_millis(110) - Duration::from_nanos(1)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SlidingWindow<C = DefaultClock> {
    core: Core,
    /// Bucket width w in nanoseconds, at least 1.
    width: u64,
    /// The limit last set (the rate's `limit` at build): the one in force, or the one a
    /// raise under way reaches at `raise_at` (see [`SlidingWindow::set_limit_at`]).
    limit: AtomicU64,
    /// When a pending raise takes effect (0: none pending).
    raise_at: AtomicU64,
    /// Twice the number of limit changes, plus 1 while one (or a due raise) is under way:
    /// they take turns on it.
    changes: AtomicU64,
    buckets: usize,
    approximate: bool,
    rate: Rate,
    clock: C,
}

/// The algorithm behind a [`SlidingWindow`], chosen by its mode.
// The strict core stays inline, so the hot path reaches its cache line without a pointer
// chase; the rarer count-closed core is boxed.
#[allow(clippy::large_enum_variant)]
enum Core {
    /// Strict or approximate: cumulative counts and snapshots.
    Time(TimeRing),
    /// Count-closed buckets.
    Closed(Box<CountClosed>),
}

impl<C> SlidingWindow<C> {
    /// Take `permits` permits at time `now` (nanoseconds on this limiter's clock), all or
    /// nothing. This is the algorithm; [`Limiter::try_acquire_n`] is this with the clock read.
    ///
    /// # Errors
    ///
    /// [`Denied`] with the wait (exact when called sequentially), or with
    /// `retry_after() == None` when `permits` exceeds `limit`. `permits == 0` always succeeds
    /// and changes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    ///
    /// let limiter = SlidingWindow::builder(Rate::per_second(3)?).clock(ManualClock::new()).build()?;
    /// assert!(limiter.try_acquire_n_at(2, 0).is_ok());
    /// let denied = limiter.try_acquire_n_at(2, 0).unwrap_err();
    /// // Bucket [0, 100 ms) is counted whole until the window stops touching it.
    /// assert_eq!(denied.retry_after_nanos(), Some(1_099_999_999));
    /// assert!(limiter.try_acquire_n_at(1, 0).is_ok());
    /// assert!(limiter.try_acquire_n_at(4, 0).unwrap_err().is_never());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline(always)]
    pub fn try_acquire_n_at(&self, permits: u32, now: u64) -> Result<(), Denied> {
        if permits == 0 {
            return Ok(());
        }
        let n = u64::from(permits);
        match &self.core {
            // Checks n > limit off its fast path (such a request is never granted there).
            Core::Time(ring) => ring.acquire_or(n, now, |denied| {
                // Relaxed: a hint (0: no raise pending, the usual case); `raise_if_due`
                // decides under the turn.
                if self.raise_at.load(Ordering::Relaxed) == 0 {
                    Err(denied)
                } else {
                    self.raise_if_due(ring, n, now, denied)
                }
            }),
            // Relaxed: the count-closed core's limit never changes.
            Core::Closed(_) if n > self.limit.load(Ordering::Relaxed) => Err(Denied::never()),
            Core::Closed(closed) => closed.acquire(n, now),
        }
    }

    /// Take one permit at time `now`: [`try_acquire_n_at`](SlidingWindow::try_acquire_n_at)
    /// with 1.
    ///
    /// # Errors
    ///
    /// [`Denied`] with the wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    ///
    /// let limiter = SlidingWindow::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert!(limiter.try_acquire_at(0).is_ok());
    /// assert!(limiter.try_acquire_at(1_099_999_998).is_err());
    /// assert!(limiter.try_acquire_at(1_099_999_999).is_ok());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn try_acquire_at(&self, now: u64) -> Result<(), Denied> {
        self.try_acquire_n_at(1, now)
    }

    /// The number of buckets the period is split into.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    /// let limiter = SlidingWindow::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.buckets(), 10);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn buckets(&self) -> usize {
        self.buckets
    }

    /// How many permits a request at `now` could take: `limit` minus the permits such a
    /// request counts (in every mode: strict, approximate, count-closed), so that, called
    /// sequentially, a request for n permits is granted iff n ≤ this. Under concurrency a
    /// snapshot. Reads only (it may finish a roll to a new bucket that another call started;
    /// it never starts one): strict and approximate modes read O(log buckets) words,
    /// count-closed mode every bucket and closed bucket.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    ///
    /// let limiter = SlidingWindow::builder(Rate::per_second(3)?).clock(ManualClock::new()).build()?;
    /// limiter.try_acquire_n_at(2, 0).unwrap();
    /// assert_eq!(limiter.remaining_at(0), 1);
    /// // The bucket [0, 100 ms) is counted whole until 1.1 s − 1 ns.
    /// assert_eq!(limiter.remaining_at(1_099_999_998), 1);
    /// assert_eq!(limiter.remaining_at(1_099_999_999), 3);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn remaining_at(&self, now: u64) -> u64 {
        self.read_at(now).0
    }

    /// How long until the window counts no permit (the whole `limit` available again) if
    /// nothing more is granted: when the newest bucket holding a permit (in count-closed mode,
    /// also the newest closed bucket) leaves the window. Zero when nothing is counted. Reads
    /// only, as [`remaining_at`](SlidingWindow::remaining_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    /// use std::time::Duration;
    ///
    /// let limiter = SlidingWindow::builder(Rate::per_second(3)?).clock(ManualClock::new()).build()?;
    /// limiter.try_acquire_at(0).unwrap();
    /// assert_eq!(limiter.reset_at(0), Duration::from_nanos(1_099_999_999));
    /// assert_eq!(limiter.reset_at(2_000_000_000), Duration::ZERO);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn reset_at(&self, now: u64) -> Duration {
        Duration::from_nanos(self.read_at(now).1)
    }

    /// `(remaining, reset ns)` at `now`, from the mode's core.
    fn read_at(&self, now: u64) -> (u64, u64) {
        match &self.core {
            Core::Time(ring) => ring.read_at(now),
            Core::Closed(closed) => closed.read_at(now),
        }
    }

    /// The bucket width w = ⌈period / buckets⌉: the strict mode's false-denial margin.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    /// use std::time::Duration;
    /// let limiter = SlidingWindow::builder(Rate::new(1, Duration::from_nanos(10))?)
    ///     .buckets(3)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.bucket_width(), Duration::from_nanos(4));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn bucket_width(&self) -> Duration {
        Duration::from_nanos(self.width)
    }

    /// True in approximate mode ([`SlidingWindowBuilder::approximate`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    /// let limiter = SlidingWindow::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert!(!limiter.is_approximate());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn is_approximate(&self) -> bool {
        self.approximate
    }

    /// `Some(k)` when buckets also close at k permits
    /// ([`SlidingWindowBuilder::count_closed`]), `None` otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    /// let limiter = SlidingWindow::builder(Rate::per_second(10)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.count_closed(), None);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn count_closed(&self) -> Option<u64> {
        match &self.core {
            Core::Time(_) => None,
            Core::Closed(closed) => Some(closed.k()),
        }
    }

    /// The configured rate.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    /// let rate = Rate::per_minute(30)?;
    /// let limiter = SlidingWindow::builder(rate).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.rate(), rate);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn rate(&self) -> Rate {
        // Relaxed: one word; a change racing this returns either limit.
        match Rate::new(self.limit.load(Ordering::Relaxed), self.rate.period()) {
            Ok(rate) => rate,
            // Written only from a validated limit.
            Err(e) => unreachable!("a stored limit is valid: {e}"),
        }
    }

    /// The limiter's clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, ManualClock, Rate, SlidingWindow};
    /// let limiter = SlidingWindow::builder(Rate::per_second(1)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.clock().now(), 0);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.clock
    }
}

impl<C: Clock> Limiter for SlidingWindow<C> {
    #[inline(always)]
    fn try_acquire(&self) -> Result<(), Denied> {
        self.try_acquire_n_at(1, self.clock.now())
    }

    #[inline]
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        self.try_acquire_n_at(permits, self.clock.now())
    }
}

impl<C> fmt::Debug for SlidingWindow<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("SlidingWindow");
        d.field("rate", &self.rate())
            .field("buckets", &self.buckets)
            .field("approximate", &self.approximate)
            .field("count_closed", &self.count_closed())
            .field("width_ns", &self.width);
        match &self.core {
            Core::Time(ring) => {
                let (granted, epoch) = ring.debug_words();
                d.field("granted_mod_2_32", &granted)
                    .field("bucket", &epoch);
            }
            Core::Closed(closed) => {
                d.field("counted", &closed.counted());
            }
        }
        d.finish_non_exhaustive()
    }
}

/// Planted bugs for the loom models: each must make its model fail, which shows the models
/// can fail. Compiled only under `--cfg hotlimit_loom`; not part of the API.
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub mod planted {
    use super::*;

    /// [`SlidingWindow`] deciding by "read the count, then add": each step is atomic, the
    /// pair is not, so two threads can both see `limit − 1` and both add.
    #[derive(Debug)]
    pub struct RacySlidingWindow<C>(pub SlidingWindow<C>);

    impl<C: Clock> RacySlidingWindow<C> {
        /// The broken acquire (one permit, strict or approximate mode).
        pub fn try_acquire(&self) -> Result<(), Denied> {
            match &self.0.core {
                Core::Time(ring) => ring.racy_sum_then_add(self.0.clock.now()),
                Core::Closed(_) => panic!("RacySlidingWindow needs strict or approximate mode"),
            }
        }
    }

    /// [`SlidingWindow`] whose roll to a new bucket skips the freeze: it moves the epoch
    /// first and writes the snapshots afterwards from a fresh count, so permits granted in
    /// the new bucket meanwhile are booked to the old one and leave the window early.
    #[derive(Debug)]
    pub struct LateSnapshots<C>(pub SlidingWindow<C>);

    impl<C> LateSnapshots<C> {
        /// The broken acquire of `permits` at `now` (strict or approximate mode).
        pub fn try_acquire_n_at(&self, permits: u32, now: u64) -> Result<(), Denied> {
            match &self.0.core {
                Core::Time(ring) => ring.racy_late_snapshots(u64::from(permits), now),
                Core::Closed(_) => panic!("LateSnapshots needs strict or approximate mode"),
            }
        }
    }

    /// [`SlidingWindow`] whose request reads the limit before the state word: a live change
    /// of the limit (and a grant after it) between the two reads leaves the request decided
    /// on the old limit with a window that already holds the new limit's grant.
    #[derive(Debug)]
    pub struct EarlyLimit<'a, C>(pub &'a SlidingWindow<C>);

    impl<C> EarlyLimit<'_, C> {
        /// The broken acquire of `permits` at `now` (strict or approximate mode; frozen
        /// clock in the first bucket).
        pub fn try_acquire_n_at(&self, permits: u32, now: u64) -> Result<(), Denied> {
            match &self.0.core {
                Core::Time(ring) => ring.early_limit(u64::from(permits), now),
                Core::Closed(_) => panic!("EarlyLimit needs strict or approximate mode"),
            }
        }
    }

    /// A count-closed [`SlidingWindow`] whose expiry frees a closed bucket by "load the tag,
    /// then store FREE" instead of one CAS: two callers can both see the bucket published and
    /// both give its permits back, so the count drops by twice its permits.
    #[derive(Debug)]
    pub struct RacyExpiry<C>(pub SlidingWindow<C>);

    impl<C> RacyExpiry<C> {
        /// The broken expiry at `now` (of the oldest closed bucket only), then a correct
        /// acquire of one permit.
        pub fn try_acquire_at(&self, now: u64) -> Result<(), Denied> {
            if let Core::Closed(closed) = &self.0.core {
                closed.racy_expire(now);
            }
            self.0.try_acquire_n_at(1, now)
        }
    }
}

/// A per-key window for `Keyed` (`src/keyed.rs`) and `KeyPool`'s bounded mode
/// (`src/key_pool.rs`): a [`SlidingWindow`]'s strict or approximate core with an unpadded head
/// (one window per key is rarely contended, and a cache-padded head would cost a cache line
/// and its 128-byte alignment per key), plus what `Keyed` needs to tell whether a window still
/// counts any permit and to carry its permits on a rate change.
pub(crate) struct KeyWindow {
    ring: TimeRing<time::Plain>,
    width: u64,
    buckets: usize,
}

impl KeyWindow {
    /// The window `builder` describes (its clock is not used; count-closed mode is not
    /// supported and ignored).
    ///
    /// # Errors
    ///
    /// As [`SlidingWindowBuilder::build`].
    pub(crate) fn new<C>(builder: &SlidingWindowBuilder<C>) -> Result<KeyWindow, ConfigError> {
        debug_assert!(
            builder.count_closed.is_none(),
            "per-key windows are time-closed"
        );
        let (limit, width, lag) = builder.checked()?;
        Ok(KeyWindow {
            ring: TimeRing::new(limit, width, lag),
            width,
            buckets: builder.buckets,
        })
    }

    /// The bytes a window for `builder` takes, header and ring (for capacity checks).
    pub(crate) fn size_for<C>(builder: &SlidingWindowBuilder<C>) -> Result<u128, ConfigError> {
        let (_, width, lag) = builder.checked()?;
        let slots = u128::from(TimeRing::<time::Plain>::slots_for(width, lag));
        Ok(core::mem::size_of::<KeyWindow>() as u128 + 8 * slots)
    }

    /// As [`SlidingWindow::try_acquire_n_at`].
    #[cfg(any(feature = "std", hotlimit_loom))]
    #[inline]
    pub(crate) fn try_acquire_n_at(&self, permits: u32, now: u64) -> Result<(), Denied> {
        if permits == 0 {
            return Ok(());
        }
        self.ring.acquire(u64::from(permits), now)
    }

    /// As [`SlidingWindow::try_acquire_at`].
    #[inline]
    pub(crate) fn try_acquire_at(&self, now: u64) -> Result<(), Denied> {
        self.ring.acquire(1, now)
    }

    /// `(remaining, reset ns)` at `now`, as [`SlidingWindow::remaining_at`] and
    /// [`SlidingWindow::reset_at`].
    pub(crate) fn read_at(&self, now: u64) -> (u64, u64) {
        self.ring.read_at(now)
    }

    /// As [`SlidingWindow::buckets`].
    pub(crate) fn buckets(&self) -> usize {
        self.buckets
    }

    /// The permits a request may still count, bucket by bucket: `(t, k)` for k ≥ 1 permits that
    /// a request at any `now` counts iff `now < t + period`. Strict mode: t is the bucket's last
    /// instant, ≥ the effective time of every grant in it. Exact when no call is in flight (a
    /// snapshot otherwise).
    #[cfg(any(feature = "std", hotlimit_loom))]
    pub(crate) fn counted(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let width = self.width;
        self.ring.counted_buckets().map(move |(y, k)| {
            // Bucket y's last instant, (y + 1)·w − 1; y ≤ the current bucket, which holds a
            // time some call brought, so only the + 1 can overflow.
            (y.saturating_add(1).saturating_mul(width) - 1, k)
        })
    }
}

impl fmt::Debug for KeyWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_words(self.ring.debug_words(), f)
    }
}

impl KeyWindow {
    /// `Debug` with the decision word's count and bucket given (a paired ring's are in its
    /// pair's word).
    pub(crate) fn fmt_words(
        &self,
        (granted, epoch): (u64, u64),
        f: &mut fmt::Formatter<'_>,
    ) -> fmt::Result {
        f.debug_struct("KeyWindow")
            .field("buckets", &self.buckets)
            .field("width_ns", &self.width)
            .field("granted_mod_2_32", &granted)
            .field("bucket", &epoch)
            .finish()
    }
}
