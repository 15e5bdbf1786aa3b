//! [`GcraRule`]: the GCRA decision as a public pure function, for code that keeps a TAT
//! somewhere the core does not (a server, a cache, a lease) and must decide exactly as
//! [`Gcra`] does.

use super::*;

/// The GCRA decision rule with no state and no clock: emission interval I, burst b and
/// tolerance τ = b·I, and the pure function [`decide`](GcraRule::decide) of a TAT and a `now`
/// that [`Gcra`] itself runs inside its CAS loop.
///
/// The numbers have no unit of their own: nanoseconds for a TAT kept next to a core limiter,
/// microseconds for one kept in Redis. A [`Denied`]'s wait is in the same unit
/// ([`Denied::retry_after_nanos`] reads it as nanoseconds, which it is only when the arguments
/// are).
///
/// # Examples
///
/// ```
/// use hotlimit::GcraRule;
///
/// // One permit every 100 units, bursts of 3: τ = 300.
/// let rule = GcraRule::new(100, 3)?;
/// let mut tat = 0;
/// for _ in 0..3 {
///     tat = rule.decide(tat, 0, 1)?; // 100, 200, 300
/// }
/// assert_eq!(rule.remaining(tat, 0), 0);
/// // The fourth waits one interval; the state is unchanged by the denial.
/// assert_eq!(rule.decide(tat, 0, 1).unwrap_err().retry_after_nanos(), Some(100));
/// assert_eq!(rule.decide(tat, 100, 1), Ok(400));
/// // More than the burst: never.
/// assert!(rule.decide(0, 0, 4).unwrap_err().is_never());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcraRule {
    interval: u64,
    burst: u64,
    tolerance: u64,
}

impl GcraRule {
    /// The rule for emission interval `interval` and burst `burst` (τ = burst × interval).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `interval` when it is 0, `burst` when it is 0 or when
    /// burst × interval overflows u64.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::GcraRule;
    ///
    /// assert_eq!(GcraRule::new(250, 4)?.tolerance(), 1000);
    /// assert_eq!(GcraRule::new(0, 4).unwrap_err().field(), "interval");
    /// assert_eq!(GcraRule::new(u64::MAX, 2).unwrap_err().field(), "burst");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn new(interval: u64, burst: u64) -> Result<GcraRule, ConfigError> {
        if interval == 0 {
            return Err(ConfigError::new(
                "interval",
                Value::Count(0),
                "must be at least 1",
            ));
        }
        if burst == 0 {
            return Err(ConfigError::new(
                "burst",
                Value::Count(0),
                "must be at least 1",
            ));
        }
        let Some(tolerance) = burst.checked_mul(interval) else {
            return Err(ConfigError::new(
                "burst",
                Value::Count(u128::from(burst)),
                "burst × emission interval overflows u64",
            ));
        };
        Ok(GcraRule {
            interval,
            burst,
            tolerance,
        })
    }

    /// The decision for `permits` permits at `now` on a state whose TAT is `tat`: the new TAT
    /// on a grant (max(tat, now) + permits × I), or the denial with its exact wait. A TAT
    /// below `now` is a full limiter; a `now` below the TAT is "no time has passed".
    /// `permits == 0` is granted and leaves the TAT as it is.
    ///
    /// # Errors
    ///
    /// [`Denied`] with the wait until the request fits, or never when `permits` exceeds the
    /// burst (or the new TAT would not fit in u64).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::GcraRule;
    ///
    /// let rule = GcraRule::new(10, 2)?;
    /// assert_eq!(rule.decide(0, 1_000, 2), Ok(1_020));
    /// assert_eq!(rule.decide(1_020, 1_000, 1).unwrap_err().retry_after_nanos(), Some(10));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn decide(&self, tat: u64, now: u64, permits: u32) -> Result<u64, Denied> {
        if permits == 0 {
            return Ok(tat);
        }
        match price(
            u64::from(permits),
            self.burst,
            self.interval,
            self.tolerance,
        ) {
            Some((cost, slack)) => decide(tat, now, cost, slack),
            None => Err(Denied::never()),
        }
    }

    /// The permits a request at `now` could take from a state whose TAT is `tat`:
    /// (τ − max(tat − now, 0)) / I.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::GcraRule;
    ///
    /// let rule = GcraRule::new(10, 5)?;
    /// assert_eq!(rule.remaining(0, 100), 5);
    /// assert_eq!(rule.remaining(130, 100), 2);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn remaining(&self, tat: u64, now: u64) -> u64 {
        self.tolerance.saturating_sub(tat.saturating_sub(now)) / self.interval
    }

    /// The emission interval I.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(hotlimit::GcraRule::new(7, 3)?.interval(), 7);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub const fn interval(&self) -> u64 {
        self.interval
    }

    /// The burst b.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(hotlimit::GcraRule::new(7, 3)?.burst(), 3);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub const fn burst(&self) -> u64 {
        self.burst
    }

    /// The tolerance τ = b·I.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(hotlimit::GcraRule::new(7, 3)?.tolerance(), 21);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub const fn tolerance(&self) -> u64 {
        self.tolerance
    }
}
