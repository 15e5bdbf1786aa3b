//! One window of a [`MultiWindow`](super::MultiWindow): a counted ring (a per-key
//! [`KeyWindow`], `SlidingWindow`'s strict core) or an exact log (a [`SlidingLog`] without a
//! clock), and the four steps the all-or-nothing admission needs from either: charge, give
//! back, the read-only wait, and the read-back.

use core::fmt;
use core::ops::Deref;

use crate::decide::Quota;
use crate::error::{ConfigError, Denied, Value};
use crate::key_pool::Unclocked;
use crate::rate::Rate;
use crate::sliding_log::{new_slots, Head, SlidingLog};
use crate::sliding_window::{KeyWindow, SlidingWindow, View};

/// A log's cursor and newest stamp, unpadded: the windows of one limiter are written by the
/// same grants, so their heads may share cache lines.
pub(crate) struct LogHead(Head);

impl Deref for LogHead {
    type Target = Head;

    fn deref(&self) -> &Head {
        &self.0
    }
}

impl From<Head> for LogHead {
    fn from(head: Head) -> LogHead {
        LogHead(head)
    }
}

/// How a window counts, as the builder was told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A counted ring of this many buckets (strict: `SlidingWindow`'s bound).
    Ring(usize),
    /// An exact log of `limit` stamps (`SlidingLog`'s bound).
    Log,
}

/// What a charge took, for its give-back: the decision word a ring's CAS installed, or the
/// first index and the stamp a log claimed.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Token(u64, u64);

impl Token {
    /// A ring's token: the decision word its charge installed.
    #[inline]
    pub(crate) fn ring(word: u64) -> Token {
        Token(word, 0)
    }
}

/// One window.
pub(crate) enum Window {
    /// A counted ring.
    Ring { ring: KeyWindow, rate: Rate },
    /// An exact log.
    Log(SlidingLog<(), LogHead>),
}

impl Window {
    /// The window for `rate` counted as `kind`.
    ///
    /// # Errors
    ///
    /// As [`SlidingWindowBuilder::build`](crate::SlidingWindowBuilder::build) (`buckets`,
    /// `limit`) for a ring; `limit` for a log of more than 2^28 slots or one that cannot be
    /// allocated.
    pub(crate) fn new(rate: Rate, kind: Kind) -> Result<Window, ConfigError> {
        match kind {
            Kind::Ring(buckets) => {
                let builder = SlidingWindow::builder(rate)
                    .buckets(buckets)
                    .clock(Unclocked);
                Ok(Window::Ring {
                    ring: KeyWindow::new(&builder)?,
                    rate,
                })
            }
            Kind::Log => {
                let slots = new_slots(
                    rate.limit(),
                    "limit",
                    Value::Count(u128::from(rate.limit())),
                    "must be at most 2^28 = 268435456 (8 bytes each)",
                )?;
                Ok(Window::Log(SlidingLog::from_parts(slots, rate, ())))
            }
        }
    }

    /// The bytes a window for `rate` counted as `kind` takes, header and ring or log.
    ///
    /// # Errors
    ///
    /// As [`new`](Window::new), for a ring.
    #[cfg(feature = "std")]
    pub(crate) fn size_for(rate: Rate, kind: Kind) -> Result<u128, ConfigError> {
        let header = core::mem::size_of::<Window>() as u128;
        Ok(match kind {
            Kind::Ring(buckets) => {
                let builder = SlidingWindow::builder(rate)
                    .buckets(buckets)
                    .clock(Unclocked);
                header - core::mem::size_of::<KeyWindow>() as u128 + KeyWindow::size_for(&builder)?
            }
            Kind::Log => header + 8 * u128::from(rate.limit()),
        })
    }

    /// The time from which the window counts none of its permits (0: none counted now). Exact
    /// when no call is in flight (a `Keyed` gate closed and drained). `view`: where a ring's
    /// decision word is, if not in the ring (a pair's, [`Windows`](super::windows::Windows)).
    #[cfg(feature = "std")]
    pub(crate) fn idle_at(&self, view: Option<View<'_>>) -> u64 {
        let idle = |(t, _): (u64, u64)| t;
        match self {
            Window::Ring { ring, rate } => match view {
                Some(h) => ring.counted_in(h).map(idle).max(),
                None => ring.counted().map(idle).max(),
            }
            .map_or(0, |t| t.saturating_add(rate.period_nanos())),
            Window::Log(log) => {
                let period = log.rate().period_nanos();
                log.stamps()
                    .filter(|&s| s != 0)
                    .map(|s| (s - 1).saturating_add(period))
                    .max()
                    .unwrap_or(0)
            }
        }
    }

    /// Takes `n` ≥ 1 permits at `now`, all or nothing; the token for
    /// [`give_back`](Window::give_back).
    #[inline(always)]
    pub(crate) fn charge(&self, n: u64, now: u64) -> Result<Token, Denied> {
        match self {
            Window::Ring { ring, .. } => ring.charge(n, now).map(Token::ring),
            Window::Log(log) => log.charge(n, now).map(|(first, stamp)| Token(first, stamp)),
        }
    }

    /// Undoes the charge of `n` at `now` that returned `token`. A ring gives back only while
    /// the charged bucket is current (false otherwise: the permits stay counted until the
    /// bucket leaves the window); a log always frees its slots.
    #[inline]
    pub(crate) fn give_back(&self, n: u64, token: Token, now: u64) -> bool {
        match self {
            Window::Ring { ring, .. } => ring.give_back(n, token.0),
            Window::Log(log) => {
                log.give_back(token.0, n, token.1, now);
                true
            }
        }
    }

    /// The planted twin of [`give_back`](Window::give_back) for the loom models: a ring's
    /// give-back that does not check the charged bucket is still the current one.
    #[cfg(hotlimit_loom)]
    pub(crate) fn give_back_to_any_bucket(&self, n: u64, token: Token, now: u64) -> bool {
        match self {
            Window::Ring { ring, .. } => ring.give_back_to_any_bucket(n),
            Window::Log(_) => self.give_back(n, token, now),
        }
    }

    /// The denial a request for `n` ≥ 1 at `now` would get (`None`: granted). Reads only.
    /// `view`: as in [`idle_at`](Window::idle_at).
    pub(crate) fn wait_for(&self, view: Option<View<'_>>, n: u64, now: u64) -> Option<Denied> {
        match self {
            Window::Ring { ring, .. } => match view {
                Some(h) => ring.wait_for_in(h, n, now),
                None => ring.wait_for(n, now),
            },
            Window::Log(log) => log.wait_for(n, now),
        }
    }

    /// `(remaining, reset ns)` at `now`: as `SlidingWindow`'s and `SlidingLog`'s read-backs.
    /// `view`: as in [`idle_at`](Window::idle_at).
    pub(crate) fn read_at(&self, view: Option<View<'_>>, now: u64) -> (u64, u64) {
        match self {
            Window::Ring { ring, .. } => match view {
                Some(h) => ring.read_at_in(h, now),
                None => ring.read_at(now),
            },
            Window::Log(log) => {
                let reset = log.reset_at(now).as_nanos();
                (
                    log.remaining_at(now),
                    u64::try_from(reset).unwrap_or(u64::MAX),
                )
            }
        }
    }

    /// The window's rate.
    pub(crate) fn rate(&self) -> Rate {
        match self {
            Window::Ring { rate, .. } => *rate,
            Window::Log(log) => log.rate(),
        }
    }

    /// How the window counts.
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Window::Ring { ring, .. } => Kind::Ring(ring.buckets()),
            Window::Log(_) => Kind::Log,
        }
    }

    /// [`quota`](Window::quota) of a window for `rate` counted as `kind`, without building it.
    #[cfg(feature = "std")]
    pub(crate) fn quota_for(rate: Rate, kind: Kind) -> Quota {
        match kind {
            Kind::Ring(buckets) => {
                let width = rate.period_nanos().div_ceil(buckets.max(1) as u64);
                Quota::new(
                    rate.limit(),
                    rate.period() + core::time::Duration::from_nanos(width),
                )
            }
            Kind::Log => crate::decide::quota_of(rate),
        }
    }

    /// What a client may spend from full, and over how long: a ring's `limit` per `period`
    /// plus one bucket width (a grant counts until its bucket leaves the window), a log's
    /// `limit` per `period` (as [`SlidingWindow`]'s and [`SlidingLog`]'s `Decide`).
    pub(crate) fn quota(&self) -> Quota {
        match self {
            Window::Ring { ring, rate } => Quota::new(
                rate.limit(),
                rate.period() + core::time::Duration::from_nanos(ring.width()),
            ),
            Window::Log(log) => crate::decide::quota_of(log.rate()),
        }
    }
}

impl fmt::Debug for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_in(None, f)
    }
}

impl Window {
    /// `Debug`, `view`: as in [`idle_at`](Window::idle_at).
    pub(crate) fn fmt_in(&self, view: Option<View<'_>>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        /// A ring's `Debug` with its words read from `view`.
        struct Words<'a>(&'a KeyWindow, Option<View<'a>>);
        impl fmt::Debug for Words<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.1 {
                    Some(h) => self.0.fmt_words(self.0.debug_words_in(h), f),
                    None => fmt::Debug::fmt(self.0, f),
                }
            }
        }
        match self {
            Window::Ring { ring, rate } => f
                .debug_struct("Ring")
                .field("rate", rate)
                .field("window", &Words(ring, view))
                .finish(),
            Window::Log(log) => f.debug_tuple("Log").field(log).finish(),
        }
    }
}
