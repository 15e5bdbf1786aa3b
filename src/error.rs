//! The two error types: [`ConfigError`] for bad configuration, [`Denied`] for a refused request.

use alloc::string::String;
use core::{fmt, time::Duration};

/// A limiter or rate was configured with a value that cannot work.
///
/// The message names the field and the value, e.g. `invalid limit = 0: must be at least 1`.
/// Every constructor in this crate reports bad input this way: never a panic, never a silent
/// clamp.
///
/// # Examples
///
/// ```
/// use hotlimit::Rate;
///
/// let err = Rate::per_second(0).unwrap_err();
/// assert_eq!(err.field(), "limit");
/// assert_eq!(err.to_string(), "invalid limit = 0: must be at least 1");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConfigError {
    field: &'static str,
    value: Value,
    reason: &'static str,
}

/// The offending value, kept as data so the error needs no allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Value {
    /// A count: a limit, a burst, a number of buckets.
    Count(u128),
    /// A duration in nanoseconds.
    Nanos(u128),
    /// A rate, `limit` per `period_ns`.
    Rate { limit: u64, period_ns: u128 },
    /// A setting whose memory does not fit: its value, the bytes it needs and the budget
    /// (`u128::MAX`: within the budget, but the allocation failed).
    Memory {
        value: u128,
        need: u128,
        budget: u128,
    },
    /// Any other value, as its `Debug` text: see [`ConfigError::invalid`].
    Text(Text),
}

/// Up to [`Text::CAP`] bytes of a value's `Debug` text, kept inline so that [`ConfigError`]
/// stays `Copy` and needs no allocation; a longer text is cut at a character boundary and
/// shown with a trailing `…`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Text {
    len: u8,
    cut: bool,
    bytes: [u8; Text::CAP],
}

impl Text {
    /// 46 bytes: with the length and the cut flag, no larger than [`Value::Memory`].
    const CAP: usize = 46;

    fn of(value: &dyn fmt::Debug) -> Text {
        let mut text = Text {
            len: 0,
            cut: false,
            bytes: [0; Text::CAP],
        };
        // The writer never fails: what does not fit is dropped and marked as cut.
        let _ = fmt::write(&mut text, format_args!("{value:?}"));
        text
    }

    fn as_str(&self) -> &str {
        // `write_str` only ever copies whole characters, so the prefix is UTF-8; the fallback
        // is unreachable but keeps this free of `unsafe` and of panics.
        core::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }
}

impl fmt::Write for Text {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.cut {
            return Ok(());
        }
        let len = usize::from(self.len);
        let room = Text::CAP - len;
        let mut take = s.len().min(room);
        while !s.is_char_boundary(take) {
            take -= 1;
        }
        self.bytes[len..len + take].copy_from_slice(&s.as_bytes()[..take]);
        // ≤ CAP = 46, so it fits in a u8.
        self.len = (len + take) as u8;
        self.cut = take < s.len();
        Ok(())
    }
}

impl ConfigError {
    pub(crate) const fn new(field: &'static str, value: Value, reason: &'static str) -> Self {
        ConfigError {
            field,
            value,
            reason,
        }
    }

    /// An error for a setting of yours: `field` is the setting's name, `value` what was given
    /// (shown with its `Debug` form, cut to 46 bytes), `reason` why it cannot work. For crates
    /// that build on hotlimit (`hotlimit-tower`, `hotlimit-redis` return this type too) and for
    /// your own wrappers, so that one error type covers all configuration.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::ConfigError;
    ///
    /// let err = ConfigError::invalid("header", "x forwarded", "not a valid HTTP header name");
    /// assert_eq!(err.field(), "header");
    /// assert_eq!(err.reason(), "not a valid HTTP header name");
    /// assert_eq!(
    ///     err.to_string(),
    ///     r#"invalid header = "x forwarded": not a valid HTTP header name"#
    /// );
    /// ```
    pub fn invalid(field: &'static str, value: impl fmt::Debug, reason: &'static str) -> Self {
        ConfigError::new(field, Value::Text(Text::of(&value)), reason)
    }

    /// The name of the setting that was rejected (`"limit"`, `"period"`, `"burst"`, ...).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use std::time::Duration;
    ///
    /// let err = Rate::new(5, Duration::ZERO).unwrap_err();
    /// assert_eq!(err.field(), "period");
    /// ```
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// Why the value was rejected, e.g. `"must be at least 1"`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    ///
    /// let err = Rate::per_hour(0).unwrap_err();
    /// assert_eq!(err.reason(), "must be at least 1");
    /// ```
    pub fn reason(&self) -> &'static str {
        self.reason
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {} = ", self.field)?;
        match self.value {
            Value::Count(n) => write!(f, "{n}")?,
            Value::Nanos(ns) => write!(f, "{ns} ns")?,
            Value::Rate { limit, period_ns } => write!(f, "{limit} per {period_ns} ns")?,
            Value::Memory {
                value,
                need,
                budget: u128::MAX,
            } => write!(f, "{value} (needs {need} bytes)")?,
            Value::Memory {
                value,
                need,
                budget,
            } => write!(
                f,
                "{value} (needs {need} bytes, over max_memory = {budget} bytes)"
            )?,
            Value::Text(text) => {
                f.write_str(text.as_str())?;
                if text.cut {
                    f.write_str("…")?;
                }
            }
        }
        write!(f, ": {}", self.reason)
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ConfigError {}

/// A [`Rate`](crate::Rate) could not be read from text (`"5/s"`, `"100/min"`,
/// `"3 per 20s"`): the message quotes the input and says what is wrong with it.
///
/// # Examples
///
/// ```
/// use hotlimit::Rate;
///
/// let err = "five/s".parse::<Rate>().unwrap_err();
/// assert_eq!(err.input(), "five/s");
/// assert_eq!(
///     err.to_string(),
///     "invalid rate \"five/s\": the limit \"five\" is not a whole number of permits"
/// );
/// assert!(err.config_error().is_none());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseRateError {
    input: String,
    kind: ParseRateErrorKind,
}

/// What was wrong with a rate's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ParseRateErrorKind {
    /// Neither `/` nor `per`.
    NoSeparator,
    /// The limit is not a decimal `u64`.
    Limit(String),
    /// The period's count does not fit in a `u64`.
    Count(String),
    /// The unit is not one of those known.
    Unit(String),
    /// The syntax is right, the value is not (zero limit, zero or overlong period).
    Config(ConfigError),
}

impl ParseRateError {
    pub(crate) fn new(input: &str, kind: ParseRateErrorKind) -> Self {
        ParseRateError {
            input: input.into(),
            kind,
        }
    }

    /// The text that could not be read.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = "5 a second".parse::<hotlimit::Rate>().unwrap_err();
    /// assert_eq!(err.input(), "5 a second");
    /// ```
    pub fn input(&self) -> &str {
        &self.input
    }

    /// The [`ConfigError`] when the text was well formed but names a rate that
    /// [`Rate::new`](crate::Rate::new) refuses (a zero limit, a zero period, a period over
    /// `u64::MAX` ns); `None` for a syntax error.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = "1 per 0s".parse::<hotlimit::Rate>().unwrap_err();
    /// assert_eq!(err.config_error().map(|e| e.field()), Some("period"));
    /// ```
    pub fn config_error(&self) -> Option<&ConfigError> {
        match &self.kind {
            ParseRateErrorKind::Config(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for ParseRateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid rate {:?}: ", self.input)?;
        match &self.kind {
            ParseRateErrorKind::NoSeparator => f.write_str(
                "expected LIMIT/PERIOD or LIMIT per PERIOD, e.g. 5/s, 100/min or 3 per 20s",
            ),
            ParseRateErrorKind::Limit(s) => {
                write!(f, "the limit {s:?} is not a whole number of permits")
            }
            ParseRateErrorKind::Count(s) => {
                write!(f, "the period's count {s:?} does not fit in 64 bits")
            }
            ParseRateErrorKind::Unit(s) => write!(
                f,
                "unknown unit {s:?} (expected ns, us, ms, s, min, h or d)"
            ),
            ParseRateErrorKind::Config(e) => write!(f, "{e}"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ParseRateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.config_error().map(|e| e as _)
    }
}

/// A request was refused. [`retry_after`](Denied::retry_after) says when the same request can
/// succeed, or that it never can.
///
/// **One meaning on every limiter and every path:** `retry_after` is when the permits come
/// free, counted from the call, what an HTTP `Retry-After` built from it should say. That
/// holds for a timed wait too (`acquire_blocking_timeout`, `acquire_blocking_timeout_with`,
/// `acquire_async_timeout`, [`Gcra::reserve_n_at`](crate::Gcra::reserve_n_at) with a
/// `max_wait`), on a [`Gcra`](crate::Gcra) (which waits in line) as on the retrying limiters,
/// however the limiter is held (`dyn Limiter` included): a call refused because the permits
/// come free 1 s from now with a 999 ms timeout says 1 s, not the 1 ms it lacked. How long
/// until the same timed call would succeed is
/// [`retry_after_within`](Denied::retry_after_within)`(timeout)`.
///
/// # Examples
///
/// ```
/// use hotlimit::{Gcra, Limiter, ManualClock, Rate};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let limiter = Gcra::builder(Rate::per_second(1)?).clock(clock.clone()).build()?;
/// limiter.try_acquire()?;
/// let denied = limiter.try_acquire().unwrap_err();
/// assert_eq!(denied.retry_after(), Some(Duration::from_secs(1)));
/// clock.advance(denied.retry_after().unwrap());
/// assert!(limiter.try_acquire().is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Denied {
    /// Nanoseconds until the request can succeed; `NEVER` when it cannot.
    retry_after_ns: u64,
    /// A new key refused for want of room ([`DenialReason::TableFull`]); the other reasons
    /// follow from the wait. A byte beside the wait: `Result<(), Denied>` keeps its size (16
    /// bytes, returned in two registers) by using the bool's spare values as its `Ok`, and
    /// every other denial writes the same constant `false`.
    table_full: bool,
}

/// Why a request was refused: see [`Denied::reason`].
///
/// # Examples
///
/// ```
/// use hotlimit::{DenialReason, Gcra, Limiter, ManualClock, Rate};
///
/// let limiter = Gcra::builder(Rate::per_second(2)?).clock(ManualClock::new()).build()?;
/// limiter.try_acquire_n(2)?;
/// assert_eq!(limiter.try_acquire().unwrap_err().reason(), DenialReason::OverRate);
/// assert_eq!(limiter.try_acquire_n(3).unwrap_err().reason(), DenialReason::Never);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DenialReason {
    /// The limit is reached: the request can succeed after
    /// [`retry_after`](Denied::retry_after).
    OverRate,
    /// A keyed limiter ([`Keyed`](crate::Keyed), [`IntKeyed`](crate::IntKeyed)) holds as many
    /// keys as its capacity allows and too few are idle to make room for a new one; the wait
    /// is the earliest time it expects room. The key itself was not over its rate (an HTTP
    /// server may answer 503 rather than 429).
    TableFull,
    /// The request asks for more than the limiter can ever grant at once (or the clock's range
    /// is exhausted): [`retry_after`](Denied::retry_after) is `None`.
    Never,
}

impl Denied {
    const NEVER: u64 = u64::MAX;

    /// A denial whose request can succeed after `retry_after`, or never (`None`). For code that
    /// implements [`Limiter`](crate::Limiter) for its own types. A wait of `u64::MAX` ns or
    /// more is clamped to `u64::MAX - 1` ns (584 years).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Denied;
    /// use std::time::Duration;
    ///
    /// let d = Denied::new(Some(Duration::from_millis(5)));
    /// assert_eq!(d.retry_after(), Some(Duration::from_millis(5)));
    /// assert_eq!(Denied::new(None).retry_after(), None);
    /// ```
    pub fn new(retry_after: Option<Duration>) -> Denied {
        match retry_after {
            Some(d) => Denied::after_nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            None => Denied::never(),
        }
    }

    /// Denied for `ns` nanoseconds (clamped below the "never" sentinel).
    #[inline]
    pub(crate) const fn after_nanos(ns: u64) -> Denied {
        Denied {
            retry_after_ns: if ns == Self::NEVER {
                Self::NEVER - 1
            } else {
                ns
            },
            table_full: false,
        }
    }

    /// A new key refused for want of room: as [`after_nanos`](Denied::after_nanos), with
    /// [`DenialReason::TableFull`].
    #[cfg(any(feature = "std", hotlimit_loom))]
    #[inline]
    pub(crate) const fn table_full(self) -> Denied {
        Denied {
            retry_after_ns: self.retry_after_ns,
            table_full: self.retry_after_ns != Self::NEVER,
        }
    }

    /// Denied for good: more permits than the limiter can ever grant at once.
    #[inline]
    pub(crate) const fn never() -> Denied {
        Denied {
            retry_after_ns: Self::NEVER,
            table_full: false,
        }
    }

    /// `Some(d)`: the same request can succeed after `d`, counted from the time of the call.
    /// `None`: it can never succeed (it asks for more permits than the limiter can ever hold at
    /// once).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, Limiter, ManualClock, Rate};
    ///
    /// let limiter = Gcra::builder(Rate::per_second(10)?).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.try_acquire_n(11).unwrap_err().retry_after(), None);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after_nanos().map(Duration::from_nanos)
    }

    /// [`retry_after`](Denied::retry_after) in nanoseconds.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Denied;
    /// use std::time::Duration;
    ///
    /// assert_eq!(Denied::new(Some(Duration::from_micros(1))).retry_after_nanos(), Some(1_000));
    /// ```
    #[inline]
    pub fn retry_after_nanos(&self) -> Option<u64> {
        if self.retry_after_ns == Self::NEVER {
            None
        } else {
            Some(self.retry_after_ns)
        }
    }

    /// How long until the same call with `timeout` as its longest wait can succeed:
    /// [`retry_after`](Denied::retry_after) less `timeout`, never below zero (a timed wait
    /// joins when the permits come within its timeout). `None` when the request can never
    /// succeed.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Gcra, LimiterExt, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let limiter = Gcra::builder(Rate::per_second(1)?).burst(1).clock(clock.clone()).build()?;
    /// limiter.try_acquire_at(0)?;
    /// let timeout = Duration::from_millis(300);
    /// let denied = limiter.acquire_blocking_timeout_with(1, timeout, &clock).unwrap_err();
    /// assert_eq!(denied.retry_after(), Some(Duration::from_secs(1))); // the permit comes free
    /// assert_eq!(denied.retry_after_within(timeout), Some(Duration::from_millis(700)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn retry_after_within(&self, timeout: Duration) -> Option<Duration> {
        self.retry_after().map(|d| d.saturating_sub(timeout))
    }

    /// The same denial for a call that would have waited up to `ns` more: its wait, which
    /// counted from the end of that longer wait, counted from the call (a "never" stays one).
    #[inline]
    pub(crate) const fn later_by(self, ns: u64) -> Denied {
        if self.retry_after_ns == Self::NEVER {
            return self;
        }
        Denied {
            retry_after_ns: Denied::after_nanos(self.retry_after_ns.saturating_add(ns))
                .retry_after_ns,
            table_full: self.table_full,
        }
    }

    /// True when the request can never succeed (`retry_after()` is `None`).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(hotlimit::Denied::new(None).is_never());
    /// ```
    #[inline]
    pub fn is_never(&self) -> bool {
        self.retry_after_ns == Self::NEVER
    }

    /// [`retry_after`](Denied::retry_after) in whole seconds rounded **up**, as an HTTP
    /// `Retry-After` header needs: never 0 for a wait (1 ns gives 1), so a client that obeys
    /// it never retries too early. `None` when the request can never succeed.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Denied;
    /// use std::time::Duration;
    ///
    /// assert_eq!(Denied::new(Some(Duration::from_nanos(1))).retry_after_secs_ceil(), Some(1));
    /// assert_eq!(Denied::new(Some(Duration::from_secs(2))).retry_after_secs_ceil(), Some(2));
    /// assert_eq!(Denied::new(Some(Duration::from_millis(2001))).retry_after_secs_ceil(), Some(3));
    /// assert_eq!(Denied::new(Some(Duration::ZERO)).retry_after_secs_ceil(), Some(1));
    /// assert_eq!(Denied::new(None).retry_after_secs_ceil(), None);
    /// ```
    #[inline]
    pub fn retry_after_secs_ceil(&self) -> Option<u64> {
        self.retry_after_nanos()
            .map(|ns| ns.div_ceil(1_000_000_000).max(1))
    }

    /// Why the request was refused: over the rate, a full key table, or never grantable.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{DenialReason, Denied};
    /// use std::time::Duration;
    ///
    /// assert_eq!(Denied::new(None).reason(), DenialReason::Never);
    /// assert_eq!(Denied::new(Some(Duration::from_secs(1))).reason(), DenialReason::OverRate);
    /// ```
    #[inline]
    pub fn reason(&self) -> DenialReason {
        if self.retry_after_ns == Self::NEVER {
            DenialReason::Never
        } else if self.table_full {
            DenialReason::TableFull
        } else {
            DenialReason::OverRate
        }
    }
}

impl fmt::Debug for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Never;
        impl fmt::Debug for Never {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("never")
            }
        }
        let mut d = f.debug_struct("Denied");
        match self.retry_after() {
            Some(wait) => d.field("retry_after", &wait),
            None => d.field("retry_after", &Never),
        };
        d.field("reason", &self.reason()).finish()
    }
}

impl fmt::Display for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.retry_after() {
            Some(d) if self.table_full => {
                write!(f, "no room for a new key: retry after {d:?}")
            }
            Some(d) => write!(f, "rate limited: retry after {d:?}"),
            None => f.write_str("rate limited: request exceeds what the limiter can ever grant"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Denied {}

/// For limiters built of several rates, which report each rate's settings under its own name.
impl ConfigError {
    /// This error with its field renamed for one rate of several: `rate` becomes `rate_field`
    /// and `burst` becomes `burst_field`; any other field is kept.
    pub(crate) fn prefixed(self, rate_field: &'static str, burst_field: &'static str) -> Self {
        let field = match self.field {
            "rate" => rate_field,
            "burst" => burst_field,
            _ => self.field,
        };
        ConfigError { field, ..self }
    }
}

/// For limiters built of several windows, which report each window's settings under its own
/// name.
impl ConfigError {
    /// This error with its field renamed to `to` if it is `from`; any other field is kept.
    pub(crate) fn renamed(self, from: &str, to: &'static str) -> Self {
        if self.field == from {
            ConfigError { field: to, ..self }
        } else {
            self
        }
    }
}

/// For limiters built of several rates, which deny with the longest of their waits.
impl Denied {
    /// The later of two denials: the one with the longer wait, "never" beating any wait. Both
    /// waits counted from the same call, so waiting the result satisfies both.
    #[inline(always)]
    pub(crate) const fn later(self, other: Denied) -> Denied {
        // NEVER is u64::MAX, so the larger raw value is also the later denial.
        if self.retry_after_ns >= other.retry_after_ns {
            self
        } else {
            other
        }
    }
}
