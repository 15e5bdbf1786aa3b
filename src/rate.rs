//! [`Rate`]: `limit` permits per `period`.

use core::{fmt, num::NonZeroU64, str::FromStr, time::Duration};

use crate::error::{ConfigError, ParseRateError, ParseRateErrorKind, Value};

/// A rate: `limit` permits per `period`.
///
/// Valid rates have `limit >= 1` and `1 ns <= period <= u64::MAX ns` (584 years). Each limiter
/// may reject rates it cannot honour (e.g. [`Gcra`](crate::Gcra) needs at least 1 ns per
/// permit).
///
/// # Examples
///
/// ```
/// use hotlimit::Rate;
/// use std::time::Duration;
///
/// let rate = Rate::new(500, Duration::from_secs(600))?;
/// assert_eq!(rate.limit(), 500);
/// assert_eq!(rate.period(), Duration::from_secs(600));
/// assert_eq!(Rate::per_minute(60)?, Rate::new(60, Duration::from_secs(60))?);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
///
/// A rate is written (by `Display`, and read by `FromStr`, and so by `serde` with the `serde`
/// feature) as `5/s`, `100/min` or `3 per 20s`: see [`Rate::from_str`](#impl-FromStr-for-Rate).
/// The constructors are `const fn`, so a rate can be a constant, checked at compile time:
///
/// ```
/// use core::num::NonZeroU64;
/// use hotlimit::Rate;
///
/// const API: Rate = Rate::per_second_nz(NonZeroU64::new(5).unwrap());
/// const LOGIN: Rate = match Rate::per_minute(10) {
///     Ok(rate) => rate,
///     Err(_) => panic!("a zero rate"), // in a const: a compile error, never a run-time panic
/// };
/// assert_eq!(API.to_string(), "5/s");
/// assert_eq!("10/min".parse::<Rate>(), Ok(LOGIN));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rate {
    limit: u64,
    period_ns: u64,
}

impl Rate {
    /// `limit` permits per `period`.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `limit` when it is 0, or `period` when it is zero or longer than
    /// `u64::MAX` nanoseconds.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use std::time::Duration;
    ///
    /// assert!(Rate::new(3, Duration::from_secs(60)).is_ok());
    /// let err = Rate::new(3, Duration::MAX).unwrap_err();
    /// assert_eq!(err.field(), "period");
    /// ```
    pub const fn new(limit: u64, period: Duration) -> Result<Rate, ConfigError> {
        Rate::from_nanos(limit, period.as_nanos())
    }

    /// `limit` per `period_ns` nanoseconds, checked: the one place a rate is validated.
    pub(crate) const fn from_nanos(limit: u64, period_ns: u128) -> Result<Rate, ConfigError> {
        if limit == 0 {
            return Err(ConfigError::new(
                "limit",
                Value::Count(0),
                "must be at least 1",
            ));
        }
        if period_ns == 0 {
            return Err(ConfigError::new(
                "period",
                Value::Nanos(period_ns),
                "must be at least 1 ns",
            ));
        }
        if period_ns > u64::MAX as u128 {
            return Err(ConfigError::new(
                "period",
                Value::Nanos(period_ns),
                "must fit in u64 nanoseconds (at most about 584 years)",
            ));
        }
        Ok(Rate {
            limit,
            period_ns: period_ns as u64,
        })
    }

    /// `limit` permits per second.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when `limit` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let rate = hotlimit::Rate::per_second(100)?;
    /// assert_eq!(rate.limit(), 100);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    ///
    /// It is a `const fn`: in a constant, a zero limit is a compile error.
    ///
    /// ```compile_fail
    /// use hotlimit::Rate;
    ///
    /// const R: Rate = match Rate::per_second(0) {
    ///     Ok(rate) => rate,
    ///     Err(_) => panic!("a zero rate"),
    /// };
    /// # let _ = R;
    /// ```
    pub const fn per_second(limit: u64) -> Result<Rate, ConfigError> {
        Rate::new(limit, Duration::from_secs(1))
    }

    /// `limit` permits per minute.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when `limit` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let rate = hotlimit::Rate::per_minute(30)?;
    /// assert_eq!(rate.period().as_secs(), 60);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub const fn per_minute(limit: u64) -> Result<Rate, ConfigError> {
        Rate::new(limit, Duration::from_secs(60))
    }

    /// `limit` permits per hour.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when `limit` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// let rate = hotlimit::Rate::per_hour(1000)?;
    /// assert_eq!(rate.period().as_secs(), 3600);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub const fn per_hour(limit: u64) -> Result<Rate, ConfigError> {
        Rate::new(limit, Duration::from_secs(3600))
    }

    /// `limit` permits per `period_ns` nanoseconds; infallible, for constants (every nonzero
    /// limit and every nonzero `u64` of nanoseconds is a valid rate).
    ///
    /// # Examples
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use hotlimit::Rate;
    ///
    /// const R: Rate = Rate::new_nz(
    ///     NonZeroU64::new(3).unwrap(),
    ///     NonZeroU64::new(20_000_000_000).unwrap(),
    /// );
    /// assert_eq!(R.to_string(), "3 per 20s");
    /// ```
    pub const fn new_nz(limit: NonZeroU64, period_ns: NonZeroU64) -> Rate {
        Rate {
            limit: limit.get(),
            period_ns: period_ns.get(),
        }
    }

    /// `limit` permits per second; infallible, for constants.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use hotlimit::Rate;
    ///
    /// const R: Rate = Rate::per_second_nz(NonZeroU64::new(100).unwrap());
    /// assert_eq!(Ok(R), Rate::per_second(100));
    /// ```
    pub const fn per_second_nz(limit: NonZeroU64) -> Rate {
        Rate::new_nz(limit, NonZeroU64::new(NANOS_PER_SEC).unwrap())
    }

    /// `limit` permits per minute; infallible, for constants.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use hotlimit::Rate;
    ///
    /// const R: Rate = Rate::per_minute_nz(NonZeroU64::new(30).unwrap());
    /// assert_eq!(R.to_string(), "30/min");
    /// ```
    pub const fn per_minute_nz(limit: NonZeroU64) -> Rate {
        Rate::new_nz(limit, NonZeroU64::new(60 * NANOS_PER_SEC).unwrap())
    }

    /// `limit` permits per hour; infallible, for constants.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::num::NonZeroU64;
    /// use hotlimit::Rate;
    ///
    /// const R: Rate = Rate::per_hour_nz(NonZeroU64::new(1_000).unwrap());
    /// assert_eq!(R.to_string(), "1000/h");
    /// ```
    pub const fn per_hour_nz(limit: NonZeroU64) -> Rate {
        Rate::new_nz(limit, NonZeroU64::new(3_600 * NANOS_PER_SEC).unwrap())
    }

    /// Permits per period.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(hotlimit::Rate::per_second(7)?.limit(), 7);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub const fn limit(&self) -> u64 {
        self.limit
    }

    /// The period.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(hotlimit::Rate::per_second(7)?.period(), Duration::from_secs(1));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub const fn period(&self) -> Duration {
        Duration::from_nanos(self.period_ns)
    }

    /// The period in nanoseconds.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(hotlimit::Rate::per_second(7)?.period_nanos(), 1_000_000_000);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub const fn period_nanos(&self) -> u64 {
        self.period_ns
    }

    /// The value to report in errors about this rate as a whole.
    pub(crate) fn as_value(&self) -> Value {
        Value::Rate {
            limit: self.limit,
            period_ns: u128::from(self.period_ns),
        }
    }
}

const NANOS_PER_SEC: u64 = 1_000_000_000;

/// The units of a written period, largest first: (name written, its aliases read, ns).
const UNITS: [(&str, &[&str], u64); 7] = [
    ("d", &["d", "day", "days"], 86_400 * NANOS_PER_SEC),
    (
        "h",
        &["h", "hr", "hrs", "hour", "hours"],
        3_600 * NANOS_PER_SEC,
    ),
    (
        "min",
        &["m", "min", "mins", "minute", "minutes"],
        60 * NANOS_PER_SEC,
    ),
    (
        "s",
        &["s", "sec", "secs", "second", "seconds"],
        NANOS_PER_SEC,
    ),
    (
        "ms",
        &["ms", "msec", "millisecond", "milliseconds"],
        1_000_000,
    ),
    (
        "us",
        &[
            "us",
            "\u{b5}s",
            "\u{3bc}s",
            "usec",
            "microsecond",
            "microseconds",
        ],
        1_000,
    ),
    ("ns", &["ns", "nsec", "nanosecond", "nanoseconds"], 1),
];

/// Writes the rate as `{limit}/{unit}` when the period is exactly one unit (`5/s`, `100/min`,
/// `1000/h`, `2/d`, `50/ms`), otherwise as `{limit} per {n}{unit}` with the largest unit that
/// divides the period exactly (`3 per 20s`, `7 per 90s`, `1 per 1500ms`, `9 per 7ns`). Units:
/// `d`, `h`, `min`, `s`, `ms`, `us`, `ns`. The text is exact: [`FromStr`] reads it back to the
/// same rate.
///
/// # Examples
///
/// ```
/// use hotlimit::Rate;
/// use std::time::Duration;
///
/// assert_eq!(Rate::per_second(5)?.to_string(), "5/s");
/// assert_eq!(Rate::per_minute(100)?.to_string(), "100/min");
/// assert_eq!(Rate::new(3, Duration::from_secs(20))?.to_string(), "3 per 20s");
/// assert_eq!(Rate::new(1, Duration::from_millis(1_500))?.to_string(), "1 per 1500ms");
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `ns` divides every period, so the search always ends.
        let (name, unit) = UNITS
            .iter()
            .find(|(_, _, ns)| self.period_ns.is_multiple_of(*ns))
            .map_or(("ns", 1), |(name, _, ns)| (*name, *ns));
        let n = self.period_ns / unit;
        if n == 1 {
            write!(f, "{}/{name}", self.limit)
        } else {
            write!(f, "{} per {n}{name}", self.limit)
        }
    }
}

/// Reads a rate written `LIMIT/PERIOD` or `LIMIT per PERIOD`, where `LIMIT` is a decimal
/// integer ≥ 1 and `PERIOD` is a unit alone (`s`) or a decimal integer and a unit (`20s`,
/// `20 s`). Units, case-insensitive: `ns` (`nsec`, `nanosecond[s]`), `us` (`µs`, `usec`,
/// `microsecond[s]`), `ms` (`msec`, `millisecond[s]`), `s` (`sec[s]`, `second[s]`), `min` (`m`,
/// `min[s]`, `minute[s]`), `h` (`hr[s]`, `hour[s]`), `d` (`day[s]`). Spaces around the parts
/// are allowed; nothing else is (no fractions, signs or digit separators). Everything that
/// [`Display`](#impl-Display-for-Rate) writes reads back to the same rate.
///
/// # Errors
///
/// [`ParseRateError`], whose message quotes the input and says what is wrong: a missing `/`
/// or `per`, a limit or count that is not a number, an unknown unit, or a valid syntax whose
/// value [`Rate::new`] refuses (zero limit, zero period, a period over `u64::MAX` ns; then
/// [`ParseRateError::config_error`] has the [`ConfigError`]).
///
/// # Examples
///
/// ```
/// use hotlimit::Rate;
/// use std::time::Duration;
///
/// assert_eq!("5/s".parse::<Rate>()?, Rate::per_second(5)?);
/// assert_eq!("100 / min".parse::<Rate>()?, Rate::per_minute(100)?);
/// assert_eq!("3 per 20s".parse::<Rate>()?, Rate::new(3, Duration::from_secs(20))?);
/// assert_eq!("10 per 2 hours".parse::<Rate>()?, Rate::new(10, Duration::from_secs(7_200))?);
///
/// let err = "5/fortnight".parse::<Rate>().unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "invalid rate \"5/fortnight\": unknown unit \"fortnight\" \
///      (expected ns, us, ms, s, min, h or d)"
/// );
/// let err = "0/s".parse::<Rate>().unwrap_err();
/// assert_eq!(err.config_error().map(|e| e.field()), Some("limit"));
/// assert_eq!(err.to_string(), "invalid rate \"0/s\": invalid limit = 0: must be at least 1");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl FromStr for Rate {
    type Err = ParseRateError;

    fn from_str(input: &str) -> Result<Rate, ParseRateError> {
        parse(input).map_err(|kind| ParseRateError::new(input, kind))
    }
}

fn parse(input: &str) -> Result<Rate, ParseRateErrorKind> {
    let (limit, period) = match input.split_once('/') {
        Some(parts) => parts,
        None => split_per(input).ok_or(ParseRateErrorKind::NoSeparator)?,
    };
    let limit = limit.trim();
    let limit = number(limit).ok_or_else(|| ParseRateErrorKind::Limit(limit.into()))?;
    let period = period.trim();
    let digits = period
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(period.len());
    let (count, unit) = period.split_at(digits);
    let count = if count.is_empty() {
        1
    } else {
        number(count).ok_or_else(|| ParseRateErrorKind::Count(count.into()))?
    };
    let unit = unit.trim();
    let unit_ns = UNITS
        .iter()
        .find(|(_, aliases, _)| aliases.iter().any(|a| a.eq_ignore_ascii_case(unit)))
        .map(|(_, _, ns)| *ns)
        .ok_or_else(|| ParseRateErrorKind::Unit(unit.into()))?;
    // At most (2^64 − 1) × 86,400 × 10^9 < 2^111: no overflow in u128.
    let period_ns = u128::from(count) * u128::from(unit_ns);
    Rate::from_nanos(limit, period_ns).map_err(ParseRateErrorKind::Config)
}

/// Splits `"3 per 20s"` at the word `per` (case-insensitive, with spaces or digits around it).
fn split_per(input: &str) -> Option<(&str, &str)> {
    let lower = input.as_bytes();
    (0..lower.len().saturating_sub(2))
        .find(|&i| lower[i..i + 3].eq_ignore_ascii_case(b"per"))
        .map(|i| (&input[..i], &input[i + 3..]))
}

/// A decimal `u64` of ASCII digits only (no sign, no separators).
fn number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Serialized as its text form ([`Display`](#impl-Display-for-Rate)), e.g. `"5/s"`.
///
/// # Examples
///
/// ```
/// # #[cfg(feature = "serde")] {
/// let rate = hotlimit::Rate::per_minute(100)?;
/// assert_eq!(serde_json::to_string(&rate)?, "\"100/min\"");
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "serde")]
impl serde::Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Deserialized from the text forms that [`FromStr`](#impl-FromStr-for-Rate) reads, e.g.
/// `"3 per 20s"`; an error names the input and what is wrong with it.
///
/// # Examples
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use hotlimit::Rate;
/// use std::time::Duration;
///
/// let rate: Rate = serde_json::from_str("\"3 per 20s\"")?;
/// assert_eq!(rate, Rate::new(3, Duration::from_secs(20))?);
/// let err = serde_json::from_str::<Rate>("\"0/s\"").unwrap_err();
/// assert!(err.to_string().contains("invalid limit = 0"), "{err}");
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Rate {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Rate, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = Rate;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a rate such as \"5/s\", \"100/min\" or \"3 per 20s\"")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Rate, E> {
                s.parse().map_err(E::custom)
            }
        }
        deserializer.deserialize_str(Text)
    }
}
