//! [`GcraPair`]: two GCRA rates on one caller ("10 per second AND 1,000 per hour"), all or
//! nothing, their whole state one 16-byte atomic word updated by one 128-bit CAS.
//!
//! Checking two [`Gcra`](crate::Gcra)s one after the other burns the first one's quota when the
//! second denies, and peeking at both before taking races with other threads. Here both
//! theoretical arrival times live side by side in one `AtomicU128`:
//!
//! ```text
//! { second: S₂ (bits 64..128), first: S₁ (bits 0..64) }     0 = never used
//! ```
//!
//! A request for n permits at `now` loads the word, applies the GCRA decision
//! ([`decide`](crate::gcra::decide)) to each half with that rate's price, and, only if both
//! admit, installs both new TATs with one CAS of the whole word. A denial returns before any
//! write, and its wait is the later of the two waits, each exact. Neither half ever wraps: a
//! TAT that would pass `u64::MAX` is a denial with `retry_after() == None` (as in `Gcra`).
//!
//! The 16-byte atomic is `cmpxchg16b` on x86-64, with a plain `vmovdqa` load on CPUs with AVX
//! (so a denial writes nothing there), both inline in the call (the CPU asked once per process;
//! `no_std` builds call portable-atomic's, chosen at run time through a function pointer).
//! Without AVX, portable-atomic loads with `cmpxchg16b`, which writes the value it read back to
//! the line: logically read-only, physically a write. `casp`/LL-SC on aarch64. On targets
//! without a 16-byte CAS portable-atomic falls back to a lock: correct, not lock-free.
//!
//! The proof that the pair keeps both bounds and that its decisions are exactly those of two
//! GCRAs applied together is in the [`guide`](crate::guide::gcra_pair#gcrapair-two-rates-in-one-word).

use core::{fmt, time::Duration};

use crate::clock::{Clock, DefaultClock};
use crate::contention::Contention;
use crate::error::{ConfigError, Denied};
use crate::gcra::{decide, price, Params};
use crate::rate::Rate;
use crate::sync::{AtomicU128, Ordering};

/// Bits 0..64 of the word: S₁, the first rate's TAT.
const FIRST_MASK: u128 = u64::MAX as u128;
/// S₂, the second rate's TAT, sits above S₁.
const SECOND_SHIFT: u32 = 64;

/// The word `{ second: s2, first: s1 }`.
#[inline(always)]
pub(crate) fn join(s1: u64, s2: u64) -> u128 {
    (u128::from(s2) << SECOND_SHIFT) | u128::from(s1)
}

/// `(S₁, S₂)` of a word.
#[inline(always)]
pub(crate) fn split(word: u128) -> (u64, u64) {
    // Truncations are the layout: the low half is S₁, the high half S₂.
    ((word & FIRST_MASK) as u64, (word >> SECOND_SHIFT) as u64)
}

/// One rate's price for a request: `(cost, slack)` as [`decide`] takes them.
pub(crate) type Price = (u64, u64);

/// The pair's decision, pure over `(word, now)`: the new word when both rates admit, else the
/// later of the two denials (a grant counts as a wait of 0, "never" as the longest wait).
///
/// The grant test is [`decide`]'s for each half (base − now ≤ slack, base + cost fits), here
/// evaluated for both halves with one branch; anything else goes to [`denial`], which asks
/// `decide` itself for each rate's wait.
#[inline(always)]
pub(crate) fn decide_pair(
    word: u128,
    now: u64,
    first: Price,
    second: Price,
) -> Result<u128, Denied> {
    let (s1, s2) = split(word);
    let (b1, b2) = (s1.max(now), s2.max(now));
    let (n1, o1) = b1.overflowing_add(first.0);
    let (n2, o2) = b2.overflowing_add(second.0);
    if (b1 - now <= first.1) & (b2 - now <= second.1) & !(o1 | o2) {
        return Ok(join(n1, n2));
    }
    Err(denial(s1, s2, now, first, second))
}

/// The denial of a request that [`decide_pair`] did not grant: the later of the two rates'
/// exact waits, each from [`decide`] (a rate that admits waits 0).
#[inline]
fn denial(s1: u64, s2: u64, now: u64, first: Price, second: Price) -> Denied {
    let wait = |r: Result<u64, Denied>| r.err().unwrap_or(Denied::after_nanos(0));
    wait(decide(s1, now, first.0, first.1)).later(wait(decide(s2, now, second.0, second.1)))
}

/// Two smooth rates enforced together (GCRA on both, all or nothing): the whole state is one
/// 16-byte atomic word, a grant is one 128-bit CAS, a denial is one load and writes nothing.
///
/// Use it for "10 per second AND 1,000 per hour" on one caller: a burst limit and a longer
/// quota. A request is granted only if **both** rates admit it; a denied request is charged to
/// neither.
///
/// # Guarantee
///
/// For each rate i (emission interval Iᵢ = ⌈periodᵢ / limitᵢ⌉, burst bᵢ, default limitᵢ):
///
/// - **In any interval of length d, at most bᵢ + ⌊d / Iᵢ⌋ permits are granted**, for i = 1
///   and i = 2 at once, under any concurrency (each grant counted at the `now` its call used).
/// - The decisions are exactly those of two sequential [`Gcra`](crate::Gcra) models applied
///   together (a request is granted iff both would grant it, and only then are both advanced),
///   on the linearized sequence of calls. With the same `now`, 8 threads racing on a fresh
///   pair get exactly min(b₁, b₂) single permits.
/// - A denial's `retry_after` is exact: the later of the two rates' waits. Waiting exactly
///   that long and retrying the same request succeeds if nobody else took capacity meanwhile.
///   `None` when the request exceeds either burst, or the clock's range is exhausted.
///
/// As with `Gcra`, this is not "at most `limit` per window of `period`": see
/// [`Gcra`](crate::Gcra#guarantee). A `now` below the state counts as "no time has passed".
///
/// **Waiting**: [`LimiterExt`](crate::LimiterExt)'s waits retry here, **not first come first
/// served** (no line: a place on two rates at once is not proved safe).
///
/// # Examples
///
/// ```
/// use hotlimit::{GcraPair, Limiter, ManualClock, Rate};
/// use std::time::Duration;
///
/// // 2 per second AND 3 per minute.
/// let clock = ManualClock::new();
/// let limiter = GcraPair::builder(Rate::per_second(2)?, Rate::per_minute(3)?)
///     .clock(clock.clone())
///     .build()?;
/// limiter.try_acquire_n(2)?; // the per-second burst is spent
/// let denied = limiter.try_acquire().unwrap_err();
/// assert_eq!(denied.retry_after(), Some(Duration::from_millis(500)));
/// clock.advance(Duration::from_secs(1));
/// limiter.try_acquire()?; // the third of the minute's 3
/// clock.advance(Duration::from_secs(1));
/// // The per-second rate admits; the per-minute one is spent until 20 s after start.
/// let denied = limiter.try_acquire().unwrap_err();
/// assert_eq!(denied.retry_after(), Some(Duration::from_secs(18)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
// `--cfg hotlimit_layout="state_first"` (many-core A/B runs only, `benches/device.sh
// build-ab`): the fields in their written order, the state word first and the clock off its
// cache line (the guide's "Where the state word sits").
#[cfg_attr(hotlimit_layout = "state_first", repr(C))]
pub struct GcraPair<C = DefaultClock> {
    /// `{ second: S₂, first: S₁ }`, nanoseconds on `clock`; 0 = never used.
    tats: AtomicU128,
    first: Params,
    second: Params,
    /// τᵢ − Iᵢ for each rate: the slack of a one-permit request (bᵢ ≥ 1, no underflow).
    slack_one: (u64, u64),
    rates: (Rate, Rate),
    clock: C,
}

/// Builds a [`GcraPair`]: see [`GcraPair::builder`].
///
/// # Examples
///
/// ```
/// use hotlimit::{GcraPair, ManualClock, Rate};
///
/// let limiter = GcraPair::builder(Rate::per_second(10)?, Rate::per_hour(1_000)?)
///     .first_burst(5)
///     .second_burst(100)
///     .clock(ManualClock::new())
///     .build()?;
/// assert_eq!(limiter.bursts(), (5, 100));
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct GcraPairBuilder<C> {
    rates: (Rate, Rate),
    bursts: (Option<u64>, Option<u64>),
    clock: C,
}

impl GcraPair {
    /// A builder for the two rates `first` and `second`, with each burst its rate's `limit`
    /// and the default clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, ManualClock, Rate};
    ///
    /// let limiter = GcraPair::builder(Rate::per_second(10)?, Rate::per_hour(1_000)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.bursts(), (10, 1_000));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn builder(first: Rate, second: Rate) -> GcraPairBuilder<DefaultClock> {
        GcraPairBuilder {
            rates: (first, second),
            bursts: (None, None),
            clock: DefaultClock::default(),
        }
    }

    /// A pair of `first` and `second`, bursts their limits, the default clock.
    ///
    /// # Errors
    ///
    /// As [`GcraPairBuilder::build`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, Limiter, Rate};
    ///
    /// let limiter = GcraPair::new(Rate::per_second(10)?, Rate::per_hour(1_000)?)?;
    /// assert!(limiter.try_acquire().is_ok());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn new(first: Rate, second: Rate) -> Result<GcraPair, ConfigError> {
        GcraPair::builder(first, second).build()
    }
}

impl<C> GcraPairBuilder<C> {
    /// The first rate's burst b₁: the most permits it lets through at once. Default: its
    /// `limit`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, Limiter, ManualClock, Rate};
    ///
    /// let limiter = GcraPair::builder(Rate::per_second(10)?, Rate::per_hour(1_000)?)
    ///     .first_burst(1)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.try_acquire().is_ok());
    /// assert!(limiter.try_acquire().is_err()); // one per 100 ms, no burst
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn first_burst(mut self, burst: u64) -> Self {
        self.bursts.0 = Some(burst);
        self
    }

    /// The second rate's burst b₂. Default: its `limit`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, Limiter, ManualClock, Rate};
    ///
    /// let limiter = GcraPair::builder(Rate::per_second(10)?, Rate::per_hour(1_000)?)
    ///     .second_burst(3)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.try_acquire_n(3).is_ok());
    /// assert!(limiter.try_acquire().is_err()); // b₂ = 3 spent
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn second_burst(mut self, burst: u64) -> Self {
        self.bursts.1 = Some(burst);
        self
    }

    /// The clock to read in `try_acquire`. Default: [`DefaultClock`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, GcraPair, ManualClock, Rate};
    ///
    /// let limiter = GcraPair::builder(Rate::per_second(1)?, Rate::per_minute(10)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.clock().now(), 0);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock<C2: Clock>(self, clock: C2) -> GcraPairBuilder<C2> {
        GcraPairBuilder {
            rates: self.rates,
            bursts: self.bursts,
            clock,
        }
    }
}

impl<C: Clock> GcraPairBuilder<C> {
    /// Builds the limiter.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `first_rate` or `second_rate` when that rate's emission interval
    /// `period / limit` is under 1 ns, or `first_burst` or `second_burst` when that burst is 0
    /// or burst × interval overflows u64 nanoseconds.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let err = GcraPair::builder(Rate::per_second(1)?, Rate::per_hour(10)?)
    ///     .second_burst(0)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "second_burst");
    /// assert_eq!(err.to_string(), "invalid second_burst = 0: must be at least 1");
    /// let err = GcraPair::builder(Rate::new(10, Duration::from_nanos(5))?, Rate::per_hour(1)?)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "first_rate");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<GcraPair<C>, ConfigError> {
        let first = Params::new(self.rates.0, self.bursts.0)
            .map_err(|e| e.prefixed("first_rate", "first_burst"))?;
        let second = Params::new(self.rates.1, self.bursts.1)
            .map_err(|e| e.prefixed("second_rate", "second_burst"))?;
        Ok(GcraPair {
            tats: AtomicU128::new(0),
            first,
            second,
            slack_one: (
                first.tolerance - first.interval,
                second.tolerance - second.interval,
            ),
            rates: self.rates,
            clock: self.clock,
        })
    }
}

impl<C> GcraPair<C> {
    /// Take `permits` permits at time `now` (nanoseconds on this limiter's clock) from both
    /// rates, all or nothing. This is the algorithm; [`Limiter::try_acquire_n`] is this with
    /// the clock read.
    ///
    /// [`Limiter::try_acquire_n`]: crate::limiter::Limiter::try_acquire_n
    ///
    /// # Errors
    ///
    /// [`Denied`] with the later of the two rates' exact waits, or with
    /// `retry_after() == None` when `permits` exceeds either burst. `permits == 0` always
    /// succeeds and changes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, ManualClock, Rate};
    ///
    /// // 2/s with burst 2, and 4/min with burst 3.
    /// let limiter = GcraPair::builder(Rate::per_second(2)?, Rate::per_minute(4)?)
    ///     .second_burst(3)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.try_acquire_n_at(2, 0).is_ok());
    /// // The first rate waits 500 ms; the second admits (S₂ = 30 s ≤ 45 s − 15 s).
    /// assert_eq!(limiter.try_acquire_n_at(1, 0).unwrap_err().retry_after_nanos(), Some(500_000_000));
    /// assert!(limiter.try_acquire_n_at(1, 500_000_000).is_ok());
    /// // Now S₂ = 45 s: at 1 s the first rate admits, the second waits 14 s.
    /// assert_eq!(
    ///     limiter.try_acquire_n_at(1, 1_000_000_000).unwrap_err().retry_after_nanos(),
    ///     Some(14_000_000_000)
    /// );
    /// assert_eq!(limiter.try_acquire_n_at(4, 0).unwrap_err().retry_after(), None); // > b₂
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire_n_at(&self, permits: u32, now: u64) -> Result<(), Denied> {
        if permits == 0 {
            return Ok(());
        }
        let n = u64::from(permits);
        let (Some(first), Some(second)) = (
            price(
                n,
                self.first.burst,
                self.first.interval,
                self.first.tolerance,
            ),
            price(
                n,
                self.second.burst,
                self.second.interval,
                self.second.tolerance,
            ),
        ) else {
            return Err(Denied::never());
        };
        self.advance(now, first, second)
    }

    /// Take one permit from both rates at time `now`:
    /// [`try_acquire_n_at`](GcraPair::try_acquire_n_at) with 1.
    ///
    /// # Errors
    ///
    /// [`Denied`] with the later of the two exact waits.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, ManualClock, Rate};
    ///
    /// let limiter = GcraPair::builder(Rate::per_second(1)?, Rate::per_minute(30)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.try_acquire_at(0).is_ok());
    /// assert!(limiter.try_acquire_at(1).is_err());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire_at(&self, now: u64) -> Result<(), Denied> {
        // One permit fits both bursts (bᵢ ≥ 1): costs Iᵢ, slacks precomputed.
        self.advance(
            now,
            (self.first.interval, self.slack_one.0),
            (self.second.interval, self.slack_one.1),
        )
    }

    /// One request priced `first` and `second` (cost, slack) on the two halves: the first
    /// attempt inline, the CAS loop after a lost CAS out of line (`retry`), so that a denial
    /// or an uncontended grant sets up no contention state.
    #[inline(always)]
    fn advance(&self, now: u64, first: Price, second: Price) -> Result<(), Denied> {
        // Relaxed: the word is the limiter's whole state; the decision needs no other memory,
        // and the CAS below fails if this value is stale.
        let word = self.tats.load(Ordering::Relaxed);
        // A denial returns here, before any write: neither rate is charged.
        let next = decide_pair(word, now, first, second)?;
        // Relaxed (both): one CAS on the one state word linearizes every grant on both rates
        // at once; nothing else is published or consumed with it.
        match self
            .tats
            .compare_exchange_weak(word, next, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => Ok(()),
            Err(current) => self.retry(current, now, first, second),
        }
    }

    /// The CAS loop of [`advance`](Self::advance) after its first CAS lost to `current`.
    #[inline(never)]
    fn retry(&self, current: u128, now: u64, first: Price, second: Price) -> Result<(), Denied> {
        let mut contention = Contention::new();
        // Relaxed (a reload after a pause): as the first load in `advance`.
        let mut word = contention.lost(current, now, || self.tats.load(Ordering::Relaxed));
        loop {
            // A denial returns here, before any write: neither rate is charged.
            let next = decide_pair(word, now, first, second)?;
            // Relaxed (both): as in `advance`.
            match self
                .tats
                .compare_exchange_weak(word, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Ok(()),
                Err(current) => {
                    // Relaxed (a reload after a pause): as the first load in `advance`.
                    word = contention.lost(current, now, || self.tats.load(Ordering::Relaxed));
                }
            }
        }
    }

    /// How many permits a request at `now` could take: the smaller of the two rates' remaining
    /// (a snapshot: other threads may take them first). Reads the state, never writes it.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, ManualClock, Rate};
    ///
    /// let limiter = GcraPair::builder(Rate::per_second(10)?, Rate::per_minute(6)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.remaining_at(0), 6);
    /// limiter.try_acquire_n_at(4, 0).unwrap();
    /// assert_eq!(limiter.remaining_at(0), 2); // min(6, 2)
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn remaining_at(&self, now: u64) -> u64 {
        let (first, second) = self.remaining_each_at(now);
        first.min(second)
    }

    /// How many permits each rate alone would let a request at `now` take, `(first, second)`:
    /// what a response reports per policy (the pair grants the smaller,
    /// [`remaining_at`](GcraPair::remaining_at)). A snapshot of one word, so the two are
    /// consistent with each other; reads the state, never writes it.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, ManualClock, Rate};
    ///
    /// let limiter = GcraPair::builder(Rate::per_second(10)?, Rate::per_minute(6)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// limiter.try_acquire_n_at(4, 0).unwrap();
    /// assert_eq!(limiter.remaining_each_at(0), (6, 2));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn remaining_each_at(&self, now: u64) -> (u64, u64) {
        // Relaxed: a snapshot of the one state word.
        let (s1, s2) = split(self.tats.load(Ordering::Relaxed));
        (
            self.first.remaining(s1, now),
            self.second.remaining(s2, now),
        )
    }

    /// How long until both rates are full again (their whole bursts available) if nothing
    /// more is taken: the later of the two TATs, less `now` (zero when both have passed). A
    /// snapshot; reads the state, never writes it.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let limiter = GcraPair::builder(Rate::per_second(10)?, Rate::per_minute(6)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.reset_at(0), Duration::ZERO);
    /// limiter.try_acquire_n_at(2, 0).unwrap(); // S₁ = 200 ms, S₂ = 20 s
    /// assert_eq!(limiter.reset_at(0), Duration::from_secs(20));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn reset_at(&self, now: u64) -> Duration {
        // Relaxed: a snapshot of the one state word.
        let (s1, s2) = split(self.tats.load(Ordering::Relaxed));
        Duration::from_nanos(s1.max(s2).saturating_sub(now))
    }

    /// The two bursts (b₁, b₂). A request for more than the smaller one is never granted.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, ManualClock, Rate};
    ///
    /// let limiter = GcraPair::builder(Rate::per_second(5)?, Rate::per_hour(100)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.bursts(), (5, 100));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn bursts(&self) -> (u64, u64) {
        (self.first.burst, self.second.burst)
    }

    /// The two emission intervals (I₁, I₂): one permit of rate i drains every Iᵢ.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let limiter = GcraPair::builder(Rate::per_second(4)?, Rate::per_minute(1)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(
    ///     limiter.emission_intervals(),
    ///     (Duration::from_millis(250), Duration::from_secs(60))
    /// );
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn emission_intervals(&self) -> (Duration, Duration) {
        (
            Duration::from_nanos(self.first.interval),
            Duration::from_nanos(self.second.interval),
        )
    }

    /// The two configured rates, `(first, second)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, ManualClock, Rate};
    ///
    /// let (a, b) = (Rate::per_second(4)?, Rate::per_hour(100)?);
    /// let limiter = GcraPair::builder(a, b).clock(ManualClock::new()).build()?;
    /// assert_eq!(limiter.rates(), (a, b));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn rates(&self) -> (Rate, Rate) {
        self.rates
    }

    /// The limiter's clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Clock, GcraPair, ManualClock, Rate};
    ///
    /// let limiter = GcraPair::builder(Rate::per_second(4)?, Rate::per_hour(100)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.clock().now(), 0);
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &C {
        &self.clock
    }
}

impl<C: Clock> GcraPair<C> {
    /// How many permits could be taken now: [`remaining_at`](GcraPair::remaining_at) with the
    /// clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, Limiter, ManualClock, Rate};
    ///
    /// let limiter = GcraPair::builder(Rate::per_second(3)?, Rate::per_hour(100)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// limiter.try_acquire()?;
    /// assert_eq!(limiter.remaining(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remaining(&self) -> u64 {
        self.remaining_at(self.clock.now())
    }

    /// How long until both rates are full again: [`reset_at`](GcraPair::reset_at) with the
    /// clock read.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{GcraPair, Limiter, ManualClock, Rate};
    /// use std::time::Duration;
    ///
    /// let limiter = GcraPair::builder(Rate::per_second(4)?, Rate::per_hour(100)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// limiter.try_acquire()?;
    /// assert_eq!(limiter.reset(), Duration::from_secs(36));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reset(&self) -> Duration {
        self.reset_at(self.clock.now())
    }
}

// Not `limiter_at!`: its `#[inline]` left `try_acquire` out of line here (the pair's body is
// larger than `Gcra`'s), a call frame of 17 instructions on every call (`benches/callgrind.sh`).
impl<C: Clock> crate::limiter::Limiter for GcraPair<C> {
    #[inline(always)]
    fn try_acquire(&self) -> Result<(), Denied> {
        self.try_acquire_at(self.clock.now())
    }

    #[inline]
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        self.try_acquire_n_at(permits, self.clock.now())
    }
}

impl<C> fmt::Debug for GcraPair<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Relaxed: a snapshot for display.
        let (s1, s2) = split(self.tats.load(Ordering::Relaxed));
        f.debug_struct("GcraPair")
            .field("rates", &self.rates)
            .field("bursts", &self.bursts())
            .field("interval_ns", &(self.first.interval, self.second.interval))
            .field("tat_ns", &(s1, s2))
            .finish_non_exhaustive()
    }
}

/// Planted bugs for the loom models: each must make its model fail, which shows the models
/// can fail. Compiled only under `--cfg hotlimit_loom`; not part of the API.
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub mod planted {
    use super::*;
    use crate::sync::AtomicU64;

    /// The "two separate CASes" twin: the same decision, but S₁ and S₂ are two `AtomicU64`s,
    /// each advanced by its own CAS loop, first S₁ then S₂. When S₂ then denies, S₁ has
    /// already been charged for a request that was refused (burned quota), and a request that
    /// passed S₁ may find S₂ changed under it.
    #[derive(Debug)]
    pub struct SplitGcraPair {
        s1: AtomicU64,
        s2: AtomicU64,
        first: Params,
        second: Params,
    }

    impl SplitGcraPair {
        /// The twin of `pair` (its rates and bursts, a fresh state).
        pub fn of<C>(pair: &GcraPair<C>) -> SplitGcraPair {
            SplitGcraPair {
                s1: AtomicU64::new(0),
                s2: AtomicU64::new(0),
                first: pair.first,
                second: pair.second,
            }
        }

        /// One permit at `now` from both rates: two CAS loops, one per half.
        pub fn try_acquire_at(&self, now: u64) -> Result<(), Denied> {
            let take = |word: &AtomicU64, p: &Params| -> Result<(), Denied> {
                // Relaxed: deliberately broken; the orderings are not the bug, the split is.
                let mut s = word.load(Ordering::Relaxed);
                loop {
                    let next = decide(s, now, p.interval, p.tolerance - p.interval)?;
                    // Relaxed: as above.
                    match word.compare_exchange(s, next, Ordering::Relaxed, Ordering::Relaxed) {
                        Ok(_) => return Ok(()),
                        Err(cur) => s = cur,
                    }
                }
            };
            take(&self.s1, &self.first)?;
            take(&self.s2, &self.second)
        }

        /// How many permits a request at `now` could take from each rate, `(first, second)`.
        pub fn remaining_at(&self, now: u64) -> (u64, u64) {
            // Relaxed (both): snapshots, read after the model's threads are joined.
            (
                self.first.remaining(self.s1.load(Ordering::Relaxed), now),
                self.second.remaining(self.s2.load(Ordering::Relaxed), now),
            )
        }
    }

    /// The pair's two remaining counts, `(first, second)`, for the models' final checks.
    pub fn remaining_each<C>(pair: &GcraPair<C>, now: u64) -> (u64, u64) {
        pair.remaining_each_at(now)
    }
}
