//! [`MultiWindow`]: up to eight hard windows at once ("100 per minute **and** 2,000 per
//! hour"), each a counted ring or an exact log with its own limit and period, all or nothing.
//!
//! # The protocol: charge in turn, give back on a refusal
//!
//! Each window keeps the state of its kind alone: a ring is `SlidingWindow`'s strict core (a
//! decision word `{ granted, epoch, frozen }` and a ring of snapshots), a log is
//! `SlidingLog`'s ring of stamps with its cursor. No CAS spans several windows, so a request
//! is decided by **charging** the windows one after the other, each by its own CAS exactly as
//! its own limiter grants; if one refuses, every charge already made is **given back** and the
//! request is denied. A grant is therefore checked by every window with every other grant's
//! charge in it, which is all each window's bound needs; the give-backs are what make a
//! refusal charge nothing.
//!
//! A give-back is exact in a log (each slot goes by CAS from our stamp back to a free value,
//! the log's own rollback) and in a ring while the charged bucket is still the current one (a
//! CAS that lowers the count only at the same epoch, unfrozen); see
//! `sliding_window/time/give_back.rs` and `sliding_log/give_back.rs`. Called sequentially
//! every give-back succeeds, and decisions and waits are exactly the sequential model's.
//!
//! What a charge and its give-back can do to other callers, under concurrency (never a grant):
//!
//! - between a charge and its give-back (within one refused call) the charged window looks
//!   fuller by that call's permits: another caller may be refused meanwhile. At most the
//!   permits of the calls in flight, for as long as they last;
//! - a ring's give-back that meets a roll to a new bucket (begun after the charge) is not
//!   made: the permits stay counted in the charged bucket and leave the window with it, within
//!   `period + w` of the charge;
//! - a log's give-back frees its slots at once, but if another reservation moved the cursor
//!   meanwhile, they are reached again only on the cursor's next lap (the log's own rollbacks
//!   behave so).
//!
//! # Two rings: one word
//!
//! A set of exactly two counted rings needs none of this: every grant counts in both and
//! nothing else changes a ring's count, so one word holds both rings' decision words (the
//! count once, each ring's epoch bits and flag), and a grant is one CAS of it, all or
//! nothing, with no give-back (`sliding_window/time/pair.rs`). Each ring rolls, helps and
//! reads back by its own protocol on its view of the word.
//!
//! The proof of each window's bound is in the [`guide`](crate::guide::multi_window).
//!
//! Files: this one holds the limiter and its admission; `multi_window/window.rs` one window
//! (ring or log) and its steps; `multi_window/windows.rs` the all-or-nothing step over the
//! windows; `multi_window/builder.rs` the builder; `multi_window/read.rs` the read-back with the
//! clock read and `Decide`; `multi_window/planted.rs` the loom models' planted twin.

use alloc::vec::Vec;
use core::{fmt, time::Duration};

use crate::clock::{Clock, DefaultClock};
use crate::error::Denied;
use crate::limiter::Limiter;
use crate::rate::Rate;

mod builder;
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub mod planted;
mod read;
pub(crate) mod window;
pub(crate) mod windows;

pub use builder::MultiWindowBuilder;

use windows::Windows;

/// The most windows one `MultiWindow` holds ([`MultiWindow::MAX_WINDOWS`]).
pub(crate) const MAX_WINDOWS: usize = 8;

/// Several hard windows at once, all or nothing: a request is granted only if **every**
/// window has room, and then it counts in every window; a request refused by one window
/// charges none. Each window is a counted ring ([`window`](MultiWindowBuilder::window),
/// [`SlidingWindow`](crate::SlidingWindow)'s strict bound) or an exact log
/// ([`exact`](MultiWindowBuilder::exact), [`SlidingLog`](crate::SlidingLog)'s bound), with its
/// own limit and period; up to [`MAX_WINDOWS`](MultiWindow::MAX_WINDOWS).
///
/// For terms such as "100 per minute and 2,000 per hour": [`GcraPair`](crate::GcraPair) and
/// [`GcraMulti`](crate::GcraMulti) keep smooth *rates*, and each GCRA allows its burst plus
/// its rate in any window, so a greedy client on `100/min and 2000/h` gets 3,999 in its first
/// hour and 198 in its busiest minute. Here no window of either length ever holds more than
/// its limit.
///
/// # Guarantees
///
/// For every window i (limit lᵢ, period Tᵢ):
///
/// - **never more than lᵢ permits in any window of length Tᵢ**, under any concurrency: a
///   ring's grants counted at their effective times (within the call, as `SlidingWindow`'s),
///   a log's at their `now`s (as `SlidingLog`'s). A ring may refuse a little early (its
///   oldest bucket is counted whole, as `SlidingWindow`'s strict mode); a log is exact.
/// - **all or nothing**: a granted request counts in every window; a refused one is given
///   back in every window it was charged in. Called sequentially the decisions and
///   `retry_after` are exactly those of the windows checked together (every window has room
///   ⟺ granted; the wait is the latest window's, and waiting it succeeds). Two rings are
///   charged by one CAS, so nothing more. Other sets, under concurrency: a refused call may
///   refuse others while its charges are in flight, and a ring's give-back that races a roll
///   to a new bucket leaves its permits counted until that bucket leaves the window: false
///   denials, bounded in the [`guide`](crate::guide::multi_window), never a grant.
/// - A request for more than some window's limit is denied with `retry_after() == None`.
///
/// Time that goes backwards never frees permits (each window judges as its own limiter).
///
/// Cost: two rings grant by one load, one CAS and a cached snapshot per ring (about 1.4× one
/// `SlidingWindow`'s instructions), one ring as its own limiter; other sets by each window's
/// grant (a ring: three loads and a CAS; a log: a look, a CAS of the cursor and one of each
/// slot) plus a loop over the windows. A denial writes nothing, except in a set other than
/// one or two rings when a window after the first one tried refuses: it gives back the
/// charges before it. Memory: 64 bytes for the set; per ring window 120 bytes (x86-64) plus
/// 8 bytes per ring slot (the power of two above `buckets` + 1: 128 bytes for the default 10
/// buckets); per log window 120 bytes plus 8 bytes per permit of its limit.
///
/// # Examples
///
/// ```
/// use hotlimit::{Limiter, ManualClock, MultiWindow, Rate};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let limiter = MultiWindow::builder()
///     .exact(Rate::per_minute(100)?)
///     .exact(Rate::per_hour(2_000)?)
///     .clock(clock.clone())
///     .build()?;
/// // A greedy client: as many as it can get, every second, for an hour.
/// let mut granted = 0;
/// for s in 0..3_600 {
///     clock.set(Duration::from_secs(s));
///     while limiter.try_acquire().is_ok() {
///         granted += 1;
///     }
/// }
/// assert_eq!(granted, 2_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct MultiWindow<C = DefaultClock> {
    windows: Windows,
    clock: C,
}

impl<C> MultiWindow<C> {
    /// Take `permits` permits at time `now` (nanoseconds on this limiter's clock) in every
    /// window, or in none. This is the algorithm; [`Limiter::try_acquire_n`] is this with the
    /// clock read.
    ///
    /// # Errors
    ///
    /// [`Denied`] with the latest wait of the windows that refuse (exact when called
    /// sequentially), or with `retry_after() == None` when `permits` exceeds some window's
    /// limit. `permits == 0` always succeeds and changes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, MultiWindow, Rate};
    ///
    /// let limiter = MultiWindow::builder()
    ///     .exact(Rate::per_second(2)?)
    ///     .exact(Rate::per_minute(3)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.try_acquire_n_at(2, 0).is_ok());
    /// // The second refuses; the minute window, which had room, is charged nothing.
    /// assert_eq!(limiter.try_acquire_n_at(1, 0).unwrap_err().retry_after_nanos(), Some(1_000_000_000));
    /// assert!(limiter.try_acquire_n_at(1, 1_000_000_000).is_ok());
    /// // Now the minute window is full until the first grants leave it, at 60 s.
    /// let d = limiter.try_acquire_n_at(1, 2_000_000_000).unwrap_err();
    /// assert_eq!(d.retry_after_nanos(), Some(58_000_000_000));
    /// assert!(limiter.try_acquire_n_at(3, 0).unwrap_err().is_never());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire_n_at(&self, permits: u32, now: u64) -> Result<(), Denied> {
        if permits == 0 {
            return Ok(());
        }
        self.windows.acquire(u64::from(permits), now)
    }

    /// Take one permit at time `now`:
    /// [`try_acquire_n_at`](MultiWindow::try_acquire_n_at) with 1.
    ///
    /// # Errors
    ///
    /// [`Denied`] with the wait.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, MultiWindow, Rate};
    ///
    /// let limiter = MultiWindow::builder()
    ///     .exact(Rate::per_second(1)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.try_acquire_at(0).is_ok());
    /// assert!(limiter.try_acquire_at(999_999_999).is_err());
    /// assert!(limiter.try_acquire_at(1_000_000_000).is_ok());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline(always)]
    pub fn try_acquire_at(&self, now: u64) -> Result<(), Denied> {
        self.windows.acquire(1, now)
    }

    /// How many permits a request at `now` could take: the fewest any window has left (for a
    /// ring as [`SlidingWindow::remaining_at`](crate::SlidingWindow::remaining_at), for a log
    /// as [`SlidingLog::remaining_at`](crate::SlidingLog::remaining_at)). Called sequentially,
    /// a request for n is granted iff n ≤ this. Reads only.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, MultiWindow, Rate};
    ///
    /// let limiter = MultiWindow::builder()
    ///     .exact(Rate::per_second(5)?)
    ///     .exact(Rate::per_minute(7)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// limiter.try_acquire_n_at(4, 0).unwrap();
    /// assert_eq!(limiter.remaining_at(0), 1);
    /// assert_eq!(limiter.remaining_at(1_000_000_000), 3);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn remaining_at(&self, now: u64) -> u64 {
        self.windows.read_at(now).0
    }

    /// How long until no window counts a permit (every window full again) if nothing more is
    /// granted: the latest of the windows' resets. Reads only.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, MultiWindow, Rate};
    /// use std::time::Duration;
    ///
    /// let limiter = MultiWindow::builder()
    ///     .exact(Rate::per_second(5)?)
    ///     .exact(Rate::per_minute(7)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// limiter.try_acquire_at(0).unwrap();
    /// assert_eq!(limiter.reset_at(0), Duration::from_secs(60));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn reset_at(&self, now: u64) -> Duration {
        Duration::from_nanos(self.windows.read_at(now).1)
    }

    /// Window `i`'s permits left at `now` and the time until it counts none, in the order the
    /// windows were added; `None` past the last window. Reads only.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, MultiWindow, Rate};
    /// use std::time::Duration;
    ///
    /// let limiter = MultiWindow::builder()
    ///     .exact(Rate::per_second(5)?)
    ///     .exact(Rate::per_minute(7)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// limiter.try_acquire_n_at(2, 0).unwrap();
    /// assert_eq!(limiter.window_at(1, 0), Some((5, Duration::from_secs(60))));
    /// assert_eq!(limiter.window_at(2, 0), None);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn window_at(&self, i: usize, now: u64) -> Option<(u64, Duration)> {
        let (w, view) = self.windows.each().nth(i)?;
        let (remaining, reset) = w.read_at(view, now);
        Some((remaining, Duration::from_nanos(reset)))
    }

    /// The windows' rates, in the order they were added.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, MultiWindow, Rate};
    ///
    /// let limiter = MultiWindow::builder()
    ///     .window(Rate::per_minute(100)?)
    ///     .exact(Rate::per_hour(2_000)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.rates(), vec![Rate::per_minute(100)?, Rate::per_hour(2_000)?]);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn rates(&self) -> Vec<Rate> {
        self.windows.as_slice().iter().map(|w| w.rate()).collect()
    }

    /// For each window in the order added: `Some(buckets)` for a counted ring, `None` for an
    /// exact log.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, MultiWindow, Rate};
    /// use std::time::Duration;
    ///
    /// let limiter = MultiWindow::builder()
    ///     .window(Rate::per_minute(100)?)
    ///     .window_with_buckets(Rate::per_hour(2_000)?, 60)
    ///     .exact(Rate::new(10_000, Duration::from_secs(86_400))?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.buckets(), vec![Some(10), Some(60), None]);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn buckets(&self) -> Vec<Option<usize>> {
        self.windows
            .as_slice()
            .iter()
            .map(|w| match w.kind() {
                window::Kind::Ring(b) => Some(b),
                window::Kind::Log => None,
            })
            .collect()
    }

    /// The limiter's clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, ManualClock, MultiWindow, Rate};
    ///
    /// let limiter = MultiWindow::builder()
    ///     .window(Rate::per_second(4)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.clock().now(), 0);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.clock
    }
}

impl<C: Clock> Limiter for MultiWindow<C> {
    #[inline(always)]
    fn try_acquire(&self) -> Result<(), Denied> {
        self.try_acquire_at(self.clock.now())
    }

    #[inline]
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        self.try_acquire_n_at(permits, self.clock.now())
    }
}

impl<C> fmt::Debug for MultiWindow<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiWindow")
            .field("windows", &self.windows)
            .finish_non_exhaustive()
    }
}
