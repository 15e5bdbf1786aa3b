//! [`MultiWindowBuilder`]: the constructor of [`MultiWindow`] and its windows.

use alloc::vec::Vec;

use super::window::{Kind, Window};
use super::windows::Windows;
use super::{MultiWindow, MAX_WINDOWS};
use crate::clock::{Clock, DefaultClock};
use crate::error::{ConfigError, Value};
use crate::rate::Rate;

/// The bucket count a ring window gets unless told otherwise (as `SlidingWindow`'s).
const DEFAULT_BUCKETS: usize = 10;

/// The names a window's `limit` error is reported under.
const LIMIT_FIELDS: [&str; MAX_WINDOWS] = [
    "limits[0]",
    "limits[1]",
    "limits[2]",
    "limits[3]",
    "limits[4]",
    "limits[5]",
    "limits[6]",
    "limits[7]",
];
/// The names a window's `buckets` error is reported under.
const BUCKET_FIELDS: [&str; MAX_WINDOWS] = [
    "buckets[0]",
    "buckets[1]",
    "buckets[2]",
    "buckets[3]",
    "buckets[4]",
    "buckets[5]",
    "buckets[6]",
    "buckets[7]",
];

/// Builds a [`MultiWindow`]: see [`MultiWindow::builder`].
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
/// assert_eq!(limiter.buckets(), vec![Some(10), None]);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct MultiWindowBuilder<C> {
    windows: Vec<(Rate, Kind)>,
    clock: C,
}

impl MultiWindow {
    /// The most windows one `MultiWindow` holds: 8.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, MultiWindow, Rate};
    ///
    /// let mut b = MultiWindow::builder().clock(ManualClock::new());
    /// for _ in 0..=MultiWindow::MAX_WINDOWS {
    ///     b = b.window(Rate::per_second(10)?);
    /// }
    /// assert_eq!(b.build().unwrap_err().field(), "windows");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub const MAX_WINDOWS: usize = MAX_WINDOWS;

    /// A builder with no windows yet (add them with [`window`](MultiWindowBuilder::window) or
    /// [`exact`](MultiWindowBuilder::exact)) and the default clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Limiter, MultiWindow, Rate};
    ///
    /// let limiter = MultiWindow::builder()
    ///     .window(Rate::per_minute(100)?)
    ///     .window(Rate::per_hour(2_000)?)
    ///     .build()?;
    /// assert!(limiter.try_acquire().is_ok());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn builder() -> MultiWindowBuilder<DefaultClock> {
        MultiWindowBuilder {
            windows: Vec::new(),
            clock: DefaultClock::default(),
        }
    }
}

impl<C> MultiWindowBuilder<C> {
    /// Adds a counted-ring window of 10 buckets: at most `limit` in every window of `period`,
    /// its oldest bucket counted whole (as a strict [`SlidingWindow`](crate::SlidingWindow));
    /// memory independent of the limit.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, MultiWindow, Rate};
    ///
    /// let limiter = MultiWindow::builder()
    ///     .window(Rate::per_second(3)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.buckets(), vec![Some(10)]);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn window(self, rate: Rate) -> Self {
        self.window_with_buckets(rate, DEFAULT_BUCKETS)
    }

    /// Adds a counted-ring window of `buckets` buckets (see
    /// [`SlidingWindowBuilder::buckets`](crate::SlidingWindowBuilder::buckets)).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, MultiWindow, Rate};
    ///
    /// let limiter = MultiWindow::builder()
    ///     .window_with_buckets(Rate::per_hour(2_000)?, 60)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.buckets(), vec![Some(60)]);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn window_with_buckets(mut self, rate: Rate, buckets: usize) -> Self {
        self.windows.push((rate, Kind::Ring(buckets)));
        self
    }

    /// Adds an exact-log window: at most `limit` in every window of `period`, exact for a
    /// sequential caller (as a [`SlidingLog`](crate::SlidingLog)); 8 bytes per permit of the
    /// limit.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, MultiWindow, Rate};
    ///
    /// let limiter = MultiWindow::builder()
    ///     .exact(Rate::per_second(3)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.buckets(), vec![None]);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn exact(mut self, rate: Rate) -> Self {
        self.windows.push((rate, Kind::Log));
        self
    }

    /// The clock to read in `try_acquire`. Default: [`DefaultClock`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, ManualClock, MultiWindow, Rate};
    ///
    /// let limiter = MultiWindow::builder()
    ///     .exact(Rate::per_second(3)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.clock().now(), 0);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock<C2: Clock>(self, clock: C2) -> MultiWindowBuilder<C2> {
        MultiWindowBuilder {
            windows: self.windows,
            clock,
        }
    }
}

impl<C> MultiWindowBuilder<C> {
    /// This builder without its clock (a per-key state reads none).
    #[cfg(feature = "std")]
    pub(crate) fn unclocked(self) -> MultiWindowBuilder<crate::clock::NoClock> {
        MultiWindowBuilder {
            windows: self.windows,
            clock: crate::clock::NoClock,
        }
    }

    /// The first window's rate (1 per second with none: `build` then reports `windows`).
    #[cfg(feature = "std")]
    pub(crate) fn first_rate(&self) -> Rate {
        match self.windows.first() {
            Some(&(rate, _)) => rate,
            None => match Rate::per_second(1) {
                Ok(rate) => rate,
                Err(e) => unreachable!("1 per second is a rate: {e}"),
            },
        }
    }

    /// The first window's quota (as [`MultiWindow`]'s `Decide::quota`).
    #[cfg(feature = "std")]
    pub(crate) fn first_quota(&self) -> crate::decide::Quota {
        match self.windows.first() {
            Some(&(rate, kind)) => Window::quota_for(rate, kind),
            None => crate::decide::quota_of(self.first_rate()),
        }
    }

    /// Each window's quota, in the order added.
    #[cfg(feature = "std")]
    pub(crate) fn quotas(&self) -> Vec<crate::decide::Quota> {
        self.windows
            .iter()
            .map(|&(rate, kind)| Window::quota_for(rate, kind))
            .collect()
    }

    /// The smallest limit of the windows (0 with none).
    #[cfg(feature = "std")]
    pub(crate) fn min_limit(&self) -> u64 {
        self.windows
            .iter()
            .map(|(r, _)| r.limit())
            .min()
            .unwrap_or(0)
    }

    /// The bytes the windows take, headers and rings or logs (for `Keyed`'s memory budget).
    ///
    /// # Errors
    ///
    /// As [`build`](MultiWindowBuilder::build).
    #[cfg(feature = "std")]
    pub(crate) fn bytes(&self) -> Result<u128, ConfigError> {
        let mut total = core::mem::size_of::<Windows>() as u128;
        for &(rate, kind) in &self.windows {
            total += Window::size_for(rate, kind)?;
        }
        Ok(total)
    }

    /// The windows, checked and allocated (shared with the per-key state).
    ///
    /// # Errors
    ///
    /// As [`build`](MultiWindowBuilder::build).
    pub(crate) fn make_windows(&self) -> Result<Windows, ConfigError> {
        let k = self.windows.len();
        if k == 0 || k > MAX_WINDOWS {
            return Err(ConfigError::new(
                "windows",
                Value::Count(k as u128),
                "must be between 1 and 8 windows",
            ));
        }
        let mut windows = Vec::with_capacity(k);
        for (i, &(rate, kind)) in self.windows.iter().enumerate() {
            windows.push(
                Window::new(rate, kind)
                    .map_err(|e| e.renamed("limit", LIMIT_FIELDS[i]))
                    .map_err(|e| e.renamed("buckets", BUCKET_FIELDS[i]))?,
            );
        }
        Ok(Windows::new(windows.into_boxed_slice()))
    }
}

impl<C: Clock> MultiWindowBuilder<C> {
    /// Builds the limiter.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `windows` when there are none or more than
    /// [`MultiWindow::MAX_WINDOWS`]; `buckets[i]` when window i's bucket count is 0, above
    /// 65,536 or above its period in nanoseconds; `limits[i]` when window i's limit is above
    /// 2^31 − 1 (a ring) or 2^28 (a log: 8 bytes per permit), or its log cannot be allocated.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, MultiWindow, Rate};
    ///
    /// let err = MultiWindow::builder().clock(ManualClock::new()).build().unwrap_err();
    /// assert_eq!(err.to_string(), "invalid windows = 0: must be between 1 and 8 windows");
    /// let err = MultiWindow::builder()
    ///     .window(Rate::per_second(1)?)
    ///     .window_with_buckets(Rate::per_hour(5)?, 0)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "buckets[1]");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<MultiWindow<C>, ConfigError> {
        Ok(MultiWindow {
            windows: self.make_windows()?,
            clock: self.clock,
        })
    }
}
