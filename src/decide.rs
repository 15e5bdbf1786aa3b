//! [`Decide`]: the seam between a limiter and the code that reports its decisions.
//!
//! An HTTP layer (`hotlimit-tower`) needs more than "yes or no": the rate-limit headers want
//! the policy's quota and window, what is left, when the limiter is full again, and when a
//! denied request may retry. It also must not care whether the decision is made by an
//! in-process limiter (immediate, infallible) or by a server shared with other machines
//! (`hotlimit-redis`: asynchronous, fallible). [`Decide`] is that contract, defined here in the
//! core so that both sides implement it without depending on each other.
//!
//! The future is an associated type so that in-process limiters answer with
//! [`core::future::Ready`] (no allocation, no runtime) while a networked backend may box.

use core::{fmt, future::Future, time::Duration};

use crate::error::Denied;

/// A policy's quota: `limit` permits per `window`, as the `q` and `w` parameters of the
/// `RateLimit-Policy` header report it.
///
/// What the in-process limiters report is what a client may really spend from full: a
/// [`Gcra`](crate::Gcra) (and every GCRA-based limiter) its **burst**, per the time the burst
/// takes to refill (burst × period / limit: with the default burst, the period; the limiter's
/// emission interval is rounded up to the nanosecond, so a refill may take up to `burst` ns
/// longer); a
/// [`SlidingLog`](crate::SlidingLog) its `limit` per `period`; a
/// [`SlidingWindow`](crate::SlidingWindow) its `limit` per `period` plus one bucket width (a
/// grant is counted until its bucket leaves the window). `remaining` never exceeds `limit`.
///
/// # Examples
///
/// ```
/// use hotlimit::Quota;
/// use std::time::Duration;
///
/// let q = Quota::new(100, Duration::from_secs(60));
/// assert_eq!(q.limit(), 100);
/// assert_eq!(q.window(), Duration::from_secs(60));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Quota {
    limit: u64,
    window: Duration,
}

impl Quota {
    /// `limit` permits per `window`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Quota;
    /// use std::time::Duration;
    ///
    /// assert_eq!(Quota::new(5, Duration::from_secs(1)).limit(), 5);
    /// ```
    pub const fn new(limit: u64, window: Duration) -> Quota {
        Quota { limit, window }
    }

    /// The number of permits in one window.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Quota;
    /// use std::time::Duration;
    ///
    /// assert_eq!(Quota::new(5, Duration::from_secs(1)).limit(), 5);
    /// ```
    pub const fn limit(&self) -> u64 {
        self.limit
    }

    /// The window the quota is counted over.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Quota;
    /// use std::time::Duration;
    ///
    /// assert_eq!(Quota::new(5, Duration::from_secs(1)).window(), Duration::from_secs(1));
    /// ```
    pub const fn window(&self) -> Duration {
        self.window
    }
}

impl fmt::Display for Quota {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} per {:?}", self.limit, self.window)
    }
}

/// One admission decision and what a client should be told about it.
///
/// `remaining` and `reset` are read right after the decision; under concurrency they are a
/// snapshot, good for headers and dashboards, not a promise.
///
/// # Examples
///
/// ```
/// use hotlimit::{Decision, Denied, Quota};
/// use std::time::Duration;
///
/// let quota = Quota::new(10, Duration::from_secs(1));
/// let ok = Decision::allowed(quota, 9, Duration::from_millis(100));
/// assert!(ok.is_allowed());
/// assert_eq!(ok.remaining(), 9);
///
/// let no = Decision::denied(quota, Denied::new(Some(Duration::from_millis(100))), 0,
///                           Duration::from_secs(1));
/// assert_eq!(no.denial().unwrap().retry_after(), Some(Duration::from_millis(100)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    outcome: Result<(), Denied>,
    remaining: u64,
    reset: Duration,
    next: Duration,
    quota: Quota,
}

impl Decision {
    /// The request was admitted; `remaining` permits are left and the limiter is full again
    /// after `reset`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Decision, Quota};
    /// use std::time::Duration;
    ///
    /// let d = Decision::allowed(Quota::new(2, Duration::from_secs(1)), 1, Duration::from_millis(500));
    /// assert!(d.is_allowed());
    /// ```
    pub const fn allowed(quota: Quota, remaining: u64, reset: Duration) -> Decision {
        Decision {
            outcome: Ok(()),
            remaining,
            reset,
            next: reset,
            quota,
        }
    }

    /// The request was refused with `denied`; `remaining` permits are left (fewer than it asked
    /// for) and the limiter is full again after `reset`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Decision, Denied, Quota};
    /// use std::time::Duration;
    ///
    /// let d = Decision::denied(Quota::new(2, Duration::from_secs(1)), Denied::new(None), 2,
    ///                          Duration::ZERO);
    /// assert!(!d.is_allowed());
    /// ```
    pub const fn denied(quota: Quota, denied: Denied, remaining: u64, reset: Duration) -> Decision {
        Decision {
            outcome: Err(denied),
            remaining,
            reset,
            next: reset,
            quota,
        }
    }

    /// A decision from its outcome, as the [`Limiter`](crate::Limiter) methods return it:
    /// [`allowed`](Decision::allowed) or [`denied`](Decision::denied).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Decision, Quota};
    /// use std::time::Duration;
    ///
    /// let q = Quota::new(5, Duration::from_secs(1));
    /// let d = Decision::new(q, Ok(()), 4, Duration::from_millis(200));
    /// assert_eq!(d, Decision::allowed(q, 4, Duration::from_millis(200)));
    /// ```
    pub const fn new(
        quota: Quota,
        outcome: Result<(), Denied>,
        remaining: u64,
        reset: Duration,
    ) -> Decision {
        Decision {
            outcome,
            remaining,
            reset,
            next: reset,
            quota,
        }
    }

    /// True when the request was admitted.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Decision, Quota};
    /// use std::time::Duration;
    ///
    /// assert!(Decision::allowed(Quota::new(1, Duration::from_secs(1)), 0, Duration::ZERO).is_allowed());
    /// ```
    pub const fn is_allowed(&self) -> bool {
        self.outcome.is_ok()
    }

    /// The decision as the [`Limiter`](crate::Limiter) methods return it.
    ///
    /// # Errors
    ///
    /// The [`Denied`] of a refused request.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Decision, Quota};
    /// use std::time::Duration;
    ///
    /// let d = Decision::allowed(Quota::new(1, Duration::from_secs(1)), 0, Duration::ZERO);
    /// assert_eq!(d.outcome(), Ok(()));
    /// ```
    pub const fn outcome(&self) -> Result<(), Denied> {
        self.outcome
    }

    /// The [`Denied`] of a refused request (when to retry), `None` when it was admitted.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Decision, Quota};
    /// use std::time::Duration;
    ///
    /// let d = Decision::allowed(Quota::new(1, Duration::from_secs(1)), 0, Duration::ZERO);
    /// assert!(d.denial().is_none());
    /// ```
    pub const fn denial(&self) -> Option<Denied> {
        match self.outcome {
            Ok(()) => None,
            Err(d) => Some(d),
        }
    }

    /// Permits left right after the decision.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Decision, Quota};
    /// use std::time::Duration;
    ///
    /// let d = Decision::allowed(Quota::new(5, Duration::from_secs(1)), 4, Duration::ZERO);
    /// assert_eq!(d.remaining(), 4);
    /// ```
    pub const fn remaining(&self) -> u64 {
        self.remaining
    }

    /// Time until the limiter is full again (its whole quota available), from the decision.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Decision, Quota};
    /// use std::time::Duration;
    ///
    /// let d = Decision::allowed(Quota::new(5, Duration::from_secs(1)), 4, Duration::from_millis(200));
    /// assert_eq!(d.reset(), Duration::from_millis(200));
    /// ```
    pub const fn reset(&self) -> Duration {
        self.reset
    }

    /// Time until at least one more permit is available than [`remaining`](Decision::remaining),
    /// from the decision: the longest time within which no more than `remaining` can be
    /// granted (the "effective window" that draft-ietf-httpapi-ratelimit-headers-11's `t`
    /// parameter reports); zero when the limiter is full. A limiter that does not tell
    /// reports [`reset`](Decision::reset), which bounds it: every GCRA-based limiter of this
    /// crate tells it exactly, the sliding windows and logs report the bound.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Decision, Quota};
    /// use std::time::Duration;
    ///
    /// let q = Quota::new(10, Duration::from_secs(1));
    /// let d = Decision::allowed(q, 7, Duration::from_millis(300));
    /// assert_eq!(d.next(), Duration::from_millis(300));
    /// assert_eq!(d.with_next(Duration::from_millis(100)).next(), Duration::from_millis(100));
    /// ```
    pub const fn next(&self) -> Duration {
        self.next
    }

    /// The decision with [`next`](Decision::next) = `next` (at most the reset: the limiter is
    /// full by then).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Decision, Quota};
    /// use std::time::Duration;
    ///
    /// let q = Quota::new(10, Duration::from_secs(1));
    /// let d = Decision::allowed(q, 7, Duration::from_millis(300)).with_next(Duration::from_secs(9));
    /// assert_eq!(d.next(), Duration::from_millis(300));
    /// ```
    #[must_use]
    pub const fn with_next(mut self, next: Duration) -> Decision {
        self.next = if next.as_nanos() < self.reset.as_nanos() {
            next
        } else {
            self.reset
        };
        self
    }

    /// The policy the decision was made under.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Decision, Quota};
    /// use std::time::Duration;
    ///
    /// let q = Quota::new(5, Duration::from_secs(1));
    /// assert_eq!(Decision::allowed(q, 4, Duration::ZERO).quota(), q);
    /// ```
    pub const fn quota(&self) -> Quota {
        self.quota
    }
}

/// A keyed admission decision that reports what rate-limit headers need; possibly
/// asynchronous, possibly fallible.
///
/// In-process limiters implement it with `Future = core::future::Ready<Result<Decision,
/// Infallible>>`; a networked backend (Redis) with its own future and error. Unkeyed limiters
/// use `Key = ()`.
///
/// # Examples
///
/// A limiter of your own behind the same seam:
///
/// ```
/// use core::convert::Infallible;
/// use core::future::{ready, Ready};
/// use hotlimit::{Decide, Decision, Quota};
/// use std::time::Duration;
///
/// struct AlwaysOpen;
///
/// impl Decide for AlwaysOpen {
///     type Key = str;
///     type Error = Infallible;
///     type Future = Ready<Result<Decision, Infallible>>;
///
///     fn decide(&self, _key: &str, _permits: u32) -> Self::Future {
///         ready(Ok(Decision::allowed(self.quota(), u64::MAX, Duration::ZERO)))
///     }
///
///     fn quota(&self) -> Quota {
///         Quota::new(u64::MAX, Duration::from_secs(1))
///     }
/// }
///
/// # let fut = AlwaysOpen.decide("alice", 1);
/// ```
pub trait Decide: Send + Sync {
    /// What requests are limited by (`()` for a global limit).
    type Key: ?Sized;
    /// Why a decision could not be made (`Infallible` in process).
    type Error;
    /// The decision, when it is made.
    type Future: Future<Output = Result<Decision, Self::Error>> + Send;

    /// Decide a request for `permits` permits under `key`, charging them if it is admitted.
    fn decide(&self, key: &Self::Key, permits: u32) -> Self::Future;

    /// The policy's quota and window (for `RateLimit-Policy`).
    fn quota(&self) -> Quota;

    /// What `key` has now, without charging anything: a decision for zero permits (allowed;
    /// `remaining`, `reset` and `next` as a decision would report them), so that a caller
    /// deciding several policies can see whether one would refuse before charging any, and
    /// report the policies it did not charge. A request for n permits would be admitted now iff
    /// n ≤ `remaining` (a snapshot: another caller may take them first).
    ///
    /// `None` (the default) when a read is not free: a networked decider. Every in-process
    /// limiter of this crate answers.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Decide, Gcra, ManualClock, Rate};
    ///
    /// let limiter = Gcra::builder(Rate::per_second(5)?).clock(ManualClock::new()).build()?;
    /// let now = limiter.peek(&()).unwrap();
    /// assert_eq!((now.is_allowed(), now.remaining()), (true, 5));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    fn peek(&self, key: &Self::Key) -> Option<Decision> {
        let _ = key;
        None
    }
}

/// The future of every in-process [`Decide`]: ready at once, never an error.
pub(crate) type Ready = core::future::Ready<Result<Decision, core::convert::Infallible>>;

/// An in-process limiter's decision, ready: `outcome` with the state read back after it.
///
/// A refused request's wait bounds `next`. A key refused for want of room in a keyed
/// limiter's table
/// ([`DenialReason::TableFull`](crate::DenialReason::TableFull)) reports nothing remaining
/// until the table has room: the read-back of the absent key (its full burst) would tell the
/// client it has a full quota while it is refused.
#[inline]
pub(crate) fn ready(
    quota: Quota,
    outcome: Result<(), Denied>,
    remaining: u64,
    reset: Duration,
    next: Duration,
) -> Ready {
    let (remaining, reset, next) = match outcome {
        Err(d) if d.reason() == crate::error::DenialReason::TableFull => {
            let wait = d.retry_after().unwrap_or(reset);
            (0, wait, wait)
        }
        // The refused request asked for more than `remaining`, and can succeed after its
        // wait: one more permit is there by then at the latest (this tightens the bound a
        // window or log reports).
        Err(d) => (
            remaining,
            reset,
            d.retry_after().map_or(next, |w| next.min(w)),
        ),
        Ok(()) => (remaining, reset, next),
    };
    core::future::ready(Ok(
        Decision::new(quota, outcome, remaining, reset).with_next(next)
    ))
}

/// A read-back as a decision for zero permits: what [`Decide::peek`] returns.
#[inline]
pub(crate) fn state(quota: Quota, remaining: u64, reset: Duration, next: Duration) -> Decision {
    Decision::allowed(quota, remaining, reset).with_next(next)
}

/// The quota of a limiter whose rate is its policy: `limit` per `period` (a sliding log).
#[inline]
pub(crate) fn quota_of(rate: crate::rate::Rate) -> Quota {
    Quota::new(rate.limit(), rate.period())
}

/// The quota of a GCRA with `rate` and `burst`: the burst, per the time it takes to refill
/// (burst × period / limit, rounded up to the nanosecond; the period with the default burst).
#[inline]
pub(crate) fn gcra_quota(rate: crate::rate::Rate, burst: u64) -> Quota {
    let (period, limit) = (rate.period_nanos(), rate.limit());
    // In u64 when it fits (every decision reports its quota: a u128 division is a call).
    let refill = match burst.checked_mul(period) {
        Some(p) => p.div_ceil(limit),
        None => {
            let r = (u128::from(burst) * u128::from(period)).div_ceil(u128::from(limit));
            u64::try_from(r).unwrap_or(u64::MAX)
        }
    };
    Quota::new(burst, Duration::from_nanos(refill))
}

/// Time until a GCRA state with `remaining` of `burst` permits, full again in `reset` ns, holds
/// one more permit (emission interval `interval` ns): zero when full. With tolerance τ = b·I and
/// `remaining` r = ⌊(τ − reset) / I⌋, the (r+1)-th permit is free once `reset` has dropped by
/// reset − (b − r − 1)·I, which is in (0, I].
#[inline]
pub(crate) fn gcra_next(remaining: u64, burst: u64, reset: u64, interval: u64) -> Duration {
    Duration::from_nanos(gcra_next_nanos(remaining, burst, reset, interval))
}

/// [`gcra_next`] in nanoseconds.
#[inline]
pub(crate) fn gcra_next_nanos(remaining: u64, burst: u64, reset: u64, interval: u64) -> u64 {
    if remaining >= burst {
        return 0;
    }
    let later = (burst - remaining - 1).saturating_mul(interval);
    reset.saturating_sub(later)
}

/// `Decide` for an in-process limiter keyed by `()`: read the clock once, take `permits` with
/// `acquire`, read `(remaining, reset, next)` back with `read` at the same instant; the quota is
/// `quota`. `this`, `permits` and `now` name the limiter, the permits and the instant in those
/// expressions. [`Decide::peek`] is `read` without the `acquire`. The attributes (the type's
/// doc and its example) go on the impl.
macro_rules! decide_at_once {
    (
        $(#[$attr:meta])*
        $ty:ident, |$this:ident, $permits:ident, $now:ident| {
            acquire: $acquire:expr,
            read: $read:expr,
            quota: $quota:expr $(,)?
        }
    ) => {
        $(#[$attr])*
        impl<C: $crate::clock::Clock> $crate::decide::Decide for $ty<C> {
            type Key = ();
            type Error = core::convert::Infallible;
            type Future = $crate::decide::Ready;

            fn decide(&self, _key: &(), $permits: u32) -> Self::Future {
                let $this = self;
                let $now = $crate::clock::Clock::now(&$this.clock);
                let outcome = $acquire;
                let (remaining, reset, next) = $read;
                $crate::decide::ready(
                    $crate::decide::Decide::quota(self),
                    outcome,
                    remaining,
                    reset,
                    next,
                )
            }

            fn quota(&self) -> $crate::decide::Quota {
                let $this = self;
                $quota
            }

            fn peek(&self, _key: &()) -> Option<$crate::decide::Decision> {
                let $this = self;
                let $now = $crate::clock::Clock::now(&$this.clock);
                let (remaining, reset, next) = $read;
                Some($crate::decide::state(
                    $crate::decide::Decide::quota(self),
                    remaining,
                    reset,
                    next,
                ))
            }
        }
    };
}
pub(crate) use decide_at_once;

/// `Decide` for a pointer to a decider: every call goes to the one it points to.
macro_rules! decide_through {
    ($($ptr:ty),*) => {$(
        impl<D: Decide + ?Sized> Decide for $ptr {
            type Key = D::Key;
            type Error = D::Error;
            type Future = D::Future;

            fn decide(&self, key: &Self::Key, permits: u32) -> Self::Future {
                (**self).decide(key, permits)
            }

            fn quota(&self) -> Quota {
                (**self).quota()
            }

            fn peek(&self, key: &Self::Key) -> Option<Decision> {
                (**self).peek(key)
            }
        }
    )*};
}
decide_through!(&D, alloc::sync::Arc<D>);
