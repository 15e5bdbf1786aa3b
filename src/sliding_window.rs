//! [`SlidingWindow`]: a hard cap per window from a fixed ring of atomic bucket counters, each
//! stamped with its epoch.
//!
//! The period is split into buckets of width w = ⌈period / n⌉; bucket e holds the permits
//! granted at times in [e·w, (e+1)·w). Only the buckets a window can touch are kept, in a ring
//! of R slots reused round-robin, so memory is O(buckets), independent of `limit`: the
//! classic bucketed ("rolling") window counter, made lock-free, and strict by counting the
//! oldest partially-covered bucket whole.
//!
//! # The floor and the decision word
//!
//! A request at `now` counts every bucket from the *floor* f(now) on:
//!
//! - strict (default): f(now) = ⌊(now − (period − 1)) / w⌋, the bucket holding the oldest
//!   instant of the window (now − period, now], counted whole;
//! - approximate: f(now) = ⌊(now − (period − w)) / w⌋, the first bucket that starts after
//!   now − period (the partially-overlapping oldest bucket is dropped).
//!
//! Both are ⌊(now − lag) / w⌋ (saturating at 0), with lag = period − 1 or period − w. The
//! admission decision is one CAS on one word, `state` = `{ floor: s, count: c }`, where c is
//! every permit granted and not yet subtracted. A grant needs c + n ≤ limit with the floor it
//! read still current, so "sum, then increment" cannot race: the sum *is* the word the CAS
//! increments. A permit is subtracted from c only once its bucket is below the floor.
//!
//! # Packed words
//!
//! ```text
//! state:     { floor: s mod 2^32 (bits 63..32), count: c (bits 31..0) }
//! slot[e%R]: { epoch: e mod 2^32 (bits 63..32), count: k (bits 31..0) }, k = RETIRED (2^32 − 1)
//!            marks a slot whose count was subtracted from `state` ("retired")
//! high:      the highest floor ever proposed, full 64 bits
//! swept:     every slot with an epoch below it has been retired, full 64 bits
//! ```
//!
//! The full floor s is rebuilt from `high` and the 32 low bits kept in `state`:
//! s = high − ((high − s) mod 2^32), exact while high − s < 2^32 (`high` is raised before
//! `state`'s floor, so high ≥ s). Slot epochs are compared with s through their signed 32-bit
//! offset. Initially `state` = `{ floor: 0, count: 0 }` and every slot is
//! `{ epoch: 0, count: RETIRED }` (free), so no value needs reserving for "never used".
//!
//! Wrap-around: the 32-bit epochs repeat every 2^32 bucket widths (13.6 years at
//! w = 100 ms, 71 minutes at w = 1 µs). An idle limiter is safe for any length of time: full
//! floors live in `high` and `swept`, and after a gap of 2^31 buckets or more the sweep that
//! moves the floor retires every live slot (no bucket is opened before `swept` has reached
//! the floor, so every live slot it meets predates the gap). A wrapped value could only be
//! mistaken if a single call were suspended between two of its own atomic steps for about
//! 2^31 bucket widths.
//!
//! # Count-closed mode
//!
//! With `count_closed(k)` a bucket's open part also closes in the CAS that brings it to k
//! permits; the permits move to an entry of a FIFO ring of ⌊limit / k⌋ closed buckets, each
//! stamped with (an upper bound of) its newest grant time and counted until one period
//! after it. Then `state`'s count field only grows, give-backs go to a `released` counter,
//! and a call is judged at the high-water mark of the clock (see `Closed` below and the
//! [`guide`](crate::guide#count-closed-buckets)).
//!
//! The proofs are in the [`guide`](crate::guide#slidingwindow-the-strict-bound).

use core::{fmt, time::Duration};

use alloc::boxed::Box;
use alloc::vec::Vec;
use crossbeam_utils::CachePadded;

use crate::error::{ConfigError, Value};
use crate::sync::{AtomicU64, Backoff, Ordering};
use crate::{Clock, DefaultClock, Denied, Limiter, Rate};

/// Bits of a packed word that hold a count (the low half).
const COUNT_BITS: u32 = 32;
/// Mask of the count field.
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// A slot's count field when its permits have been subtracted from `state`.
const RETIRED: u64 = COUNT_MASK;
/// The largest `limit`: counts must stay below [`RETIRED`].
const MAX_LIMIT: u64 = RETIRED - 1;
/// The most buckets (memory: 8 bytes per slot, at most `MAX_BUCKETS + 1` slots).
const MAX_BUCKETS: usize = 1 << 16;
/// The bucket count `SlidingWindow::new` and the builder use unless told otherwise.
const DEFAULT_BUCKETS: usize = 10;

#[inline(always)]
fn pack(epoch: u64, count: u64) -> u64 {
    (epoch << COUNT_BITS) | count
}

#[inline(always)]
fn epoch32(word: u64) -> u32 {
    (word >> COUNT_BITS) as u32
}

#[inline(always)]
fn count(word: u64) -> u64 {
    word & COUNT_MASK
}

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
/// | count-closed ([`count_closed(k)`](SlidingWindowBuilder::count_closed)) | **never**, as strict (each grant counted at τ = max(now, the highest `now` any call has brought), which is `now` for a sequential caller whose clock does not run backwards) | both: more than `limit − n` permits were really granted within the last `period + w`, **and** fewer than n + k − 1 permits are truly free (`limit` minus the permits granted in the exact window (now − period, now]); for single permits, fewer than k. k = 1 is exact. Memory + 16 bytes × ⌊`limit` / k⌋, the exact number needed (see the [`guide`](crate::guide#count-closed-buckets)) |
/// | approximate ([`approximate()`](SlidingWindowBuilder::approximate)) | up to `limit` extra in one window (2 × the cap), reached by an adversarial trace; under random (Poisson) load at 1–4× the rate, measured +8 to +19 % of `limit` with 10 buckets (see the [`guide`](crate::guide#slidingwindow-the-strict-bound)) | the exact window (now − period, now] holds more than `limit − n` (called sequentially) |
///
/// Strict mode, precisely: each grant is counted at its *effective time* τ = max(now, the
/// start of the floor it was decided under), which is `now` itself whenever calls see a clock
/// that does not run backwards. In every window of length `period` the grants' τ hold at most
/// `limit` permits, under any concurrency: the decision is one CAS on one word (see the
/// [`guide`](crate::guide#slidingwindow-the-strict-bound)). A request for more than `limit`
/// permits is denied with `retry_after() == None`. Called sequentially, `retry_after` is exact:
/// waiting it and retrying succeeds, and one nanosecond less does not.
///
/// Time that goes backwards never frees permits: a `now` behind the limiter's floor is judged
/// at the floor's start, so a live bucket never looks expired.
///
/// A call suspended between its decision and its bucket update keeps its permits counted
/// (other calls may be denied for them) until it resumes, even if its bucket expires
/// meanwhile; it then takes them back out itself. Nothing is ever counted twice or leaked.
///
/// Cost: a grant is four loads and two CASes (the decision word, then the bucket); a denial
/// in a bucket that another call has already opened writes nothing. The first call in a new
/// bucket moves the floor and retires the expired slots (R loads).
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
    /// `{ floor: s, count: c }`: the decision word.
    state: CachePadded<AtomicU64>,
    /// The full 64-bit floors: `high` (≥ the floor in `state`), `swept` (≤ it).
    floors: CachePadded<Floors>,
    /// `{ epoch: e, count: k }` for bucket e in slot e mod R.
    slots: Box<[AtomicU64]>,
    /// Bucket width w in nanoseconds, at least 1.
    width: u64,
    /// f(now) = (now − lag) / w: `period − 1` (strict) or `period − w` (approximate).
    lag: u64,
    /// R = ⌈lag / w⌉ + 1 slots: the most buckets that one window can touch.
    ring: u64,
    limit: u64,
    buckets: usize,
    approximate: bool,
    /// Count-closed mode's extra state (`None`: plain time-closed buckets).
    closed: Option<Box<Closed>>,
    rate: Rate,
    clock: C,
}

struct Floors {
    high: AtomicU64,
    swept: AtomicU64,
}

/// A closed bucket's `tag` count field while the entry is free.
const FREE: u64 = COUNT_MASK;
/// The most closed-bucket entries, ⌊limit / k⌋ (16 bytes each: 16 MiB).
const MAX_CLOSED: u64 = 1 << 20;

/// Count-closed mode's extra state. The decision word keeps its layout but its count field
/// only grows: every give-back goes to `released` instead, so `state` never repeats a value
/// (no ABA between a call's loads and its CAS) and the permits counted are
/// `granted − released`, taken mod 2^32.
///
/// ```text
/// state:        { floor: s mod 2^32, granted: G mod 2^32 }
/// released:     permits given back so far (retired buckets, expired closed buckets)
/// latest:       the highest `now` any call has brought; a call is judged at
///               t0 = max(now, latest) read after `state` and `released`
/// head, tail:   closed buckets claimed / expired so far (full 64 bits, never wrap)
/// entry[j % M]: time = the newest grant time of closed bucket j (an upper bound of it);
///               tag  = { gen: j mod 2^32, count: permits } once published,
///                      { gen: j mod 2^32, count: FREE } while free for bucket j
/// ```
///
/// Initially entry i is `{ gen: i, count: FREE }`; expiring bucket j writes
/// `{ gen: j + M, count: FREE }`. Generations of one entry differ by M < 2^32, so a stale
/// tag is never mistaken for a current one.
struct Closed {
    /// A bucket closes when it holds at least `k` permits.
    k: u64,
    /// M = ⌊limit / k⌋ entries.
    m: u64,
    period: u64,
    latest: CachePadded<AtomicU64>,
    released: CachePadded<AtomicU64>,
    head: CachePadded<AtomicU64>,
    tail: CachePadded<AtomicU64>,
    entries: Box<[Entry]>,
}

struct Entry {
    time: AtomicU64,
    tag: AtomicU64,
}

impl Closed {
    fn new(k: u64, limit: u64, period: u64, approximate: bool) -> Result<Closed, ConfigError> {
        let value = Value::Count(u128::from(k));
        let fail = |reason| Err(ConfigError::new("count_closed", value, reason));
        if k == 0 {
            return fail("must be at least 1");
        }
        if k > limit {
            return fail("must be at most limit (a bucket never holds more than limit permits)");
        }
        if approximate {
            return fail("cannot be combined with approximate mode");
        }
        let m = limit / k;
        if m > MAX_CLOSED {
            return fail(
                "limit / count_closed must be at most 1048576 (16 bytes per closed bucket)",
            );
        }
        let entries: Vec<Entry> = (0..m)
            .map(|i| Entry {
                time: AtomicU64::new(0),
                tag: AtomicU64::new(pack(i, FREE)),
            })
            .collect();
        Ok(Closed {
            k,
            m,
            period,
            latest: CachePadded::new(AtomicU64::new(0)),
            released: CachePadded::new(AtomicU64::new(0)),
            head: CachePadded::new(AtomicU64::new(0)),
            tail: CachePadded::new(AtomicU64::new(0)),
            entries: entries.into_boxed_slice(),
        })
    }

    #[inline(always)]
    fn entry(&self, j: u64) -> &Entry {
        &self.entries[(j % self.m) as usize]
    }

    /// Closed bucket j, if published: (permits, newest grant time).
    fn published(&self, j: u64) -> Option<(u64, u64)> {
        let e = self.entry(j);
        // Acquire: pairs with the Release store of the tag: the time written before it is
        // visible.
        let tag = e.tag.load(Ordering::Acquire);
        if epoch32(tag) != j as u32 || count(tag) == FREE {
            return None;
        }
        // Acquire: if this reads a later bucket's time (the entry was reused meanwhile), the
        // freeing of bucket j happens-before it, and a CAS on the tag expecting bucket j fails.
        Some((count(tag), e.time.load(Ordering::Acquire)))
    }
}

/// Builds a [`SlidingWindow`]: see [`SlidingWindow::builder`].
///
/// # Examples
///
/// ```
/// use hotlimit::{ManualClock, Rate, SlidingWindow};
///
/// let limiter = SlidingWindow::builder(Rate::per_minute(600)?)
///     .buckets(60)
///     .clock(ManualClock::new())
///     .build()?;
/// assert_eq!(limiter.buckets(), 60);
/// # Ok::<(), hotlimit::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct SlidingWindowBuilder<C> {
    rate: Rate,
    buckets: usize,
    approximate: bool,
    count_closed: Option<u64>,
    clock: C,
}

impl SlidingWindow {
    /// A builder for `rate` with the default clock, 10 buckets and strict mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    /// use std::time::Duration;
    ///
    /// let limiter = SlidingWindow::builder(Rate::per_second(100)?)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.bucket_width(), Duration::from_millis(100));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn builder(rate: Rate) -> SlidingWindowBuilder<DefaultClock> {
        SlidingWindowBuilder {
            rate,
            buckets: DEFAULT_BUCKETS,
            approximate: false,
            count_closed: None,
            clock: DefaultClock::default(),
        }
    }

    /// A strict limiter for `rate` with 10 buckets and the default clock.
    ///
    /// # Errors
    ///
    /// As [`SlidingWindowBuilder::build`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Limiter, Rate, SlidingWindow};
    ///
    /// let limiter = SlidingWindow::new(Rate::per_second(1000)?)?;
    /// assert!(limiter.try_acquire().is_ok());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn new(rate: Rate) -> Result<SlidingWindow, ConfigError> {
        SlidingWindow::builder(rate).build()
    }
}

impl<C> SlidingWindowBuilder<C> {
    /// Split the period into `buckets` buckets of width ⌈period / buckets⌉. Default: 10.
    ///
    /// More buckets: a smaller false-denial margin (one bucket width) and more memory (8 bytes
    /// a bucket) and work when the floor moves.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    /// use std::time::Duration;
    ///
    /// let limiter = SlidingWindow::builder(Rate::per_second(5)?)
    ///     .buckets(4)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.bucket_width(), Duration::from_millis(250));
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn buckets(mut self, buckets: usize) -> Self {
        self.buckets = buckets;
        self
    }

    /// **Approximate mode**: count only the buckets that start after now − period, dropping
    /// the partially-overlapping oldest one. Never the default: it may over-admit (up to
    /// `limit` extra in one window on an adversarial trace), in exchange for never denying
    /// a request whose window really has room.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    ///
    /// // 1 per second, 100 ms buckets: hits at 0.990 s and 1.930 s are both admitted.
    /// let limiter = SlidingWindow::builder(Rate::per_second(1)?)
    ///     .approximate()
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.try_acquire_at(990_000_000).is_ok());
    /// assert!(limiter.try_acquire_at(1_930_000_000).is_ok());
    /// assert!(limiter.is_approximate());
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn approximate(mut self) -> Self {
        self.approximate = true;
        self
    }

    /// **Count-closed buckets**: a bucket also closes once it holds `k` permits, and a closed
    /// bucket leaves the window exactly one period after its newest grant. A request for n
    /// permits is then wrongly denied only if fewer than n + k − 1 permits are truly free
    /// (for single permits: fewer than k), *and* `limit − n` were granted within the last
    /// `period + w`, as in strict mode. `k = 1` makes the window exact for a sequential caller.
    ///
    /// Memory: ⌊limit / k⌋ closed-bucket entries of 16 bytes on top of the time buckets (the
    /// exact number a window can need: see the
    /// [`guide`](crate::guide#count-closed-buckets)). Never over-admits, under any concurrency.
    /// A grant costs a few more atomic steps than strict mode (a shared high-water mark of the
    /// clock and a released-permits counter).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    ///
    /// // 4 per second, one bucket: strict mode would count all of [0, 1 s) until 2 s − 1 ns.
    /// let limiter = SlidingWindow::builder(Rate::per_second(4)?)
    ///     .buckets(1)
    ///     .count_closed(2)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// limiter.try_acquire_n_at(2, 0)?; // closes a bucket of 2 at t = 0
    /// limiter.try_acquire_n_at(2, 500_000_000)?;
    /// // The first two leave exactly one period after t = 0.
    /// assert!(limiter.try_acquire_at(999_999_999).is_err());
    /// assert!(limiter.try_acquire_n_at(2, 1_000_000_000).is_ok());
    /// assert_eq!(limiter.count_closed(), Some(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn count_closed(mut self, k: u64) -> Self {
        self.count_closed = Some(k);
        self
    }

    /// The clock to read in `try_acquire`. Default: [`DefaultClock`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{Limiter, ManualClock, Rate, SlidingWindow};
    ///
    /// let clock = ManualClock::new();
    /// let limiter = SlidingWindow::builder(Rate::per_second(1)?).clock(clock.clone()).build()?;
    /// assert!(limiter.try_acquire().is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn clock<C2: Clock>(self, clock: C2) -> SlidingWindowBuilder<C2> {
        SlidingWindowBuilder {
            rate: self.rate,
            buckets: self.buckets,
            approximate: self.approximate,
            count_closed: self.count_closed,
            clock,
        }
    }
}

impl<C: Clock> SlidingWindowBuilder<C> {
    /// Builds the limiter.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming
    /// - `buckets` when it is 0, more than 65,536, or more than the period has nanoseconds;
    /// - `limit` when it is above 4,294,967,294 (counts are packed into 32 bits beside a
    ///   32-bit epoch);
    /// - `count_closed` when it is 0, above `limit` (no bucket could ever close by count),
    ///   combined with [`approximate()`](SlidingWindowBuilder::approximate), or when
    ///   ⌊limit / k⌋ (the closed-bucket entries) is above 1,048,576.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{ManualClock, Rate, SlidingWindow};
    /// use std::time::Duration;
    ///
    /// let err = SlidingWindow::builder(Rate::per_second(1)?)
    ///     .buckets(0)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.to_string(), "invalid buckets = 0: must be at least 1");
    /// let err = SlidingWindow::builder(Rate::new(1, Duration::from_nanos(5))?)
    ///     .buckets(6)
    ///     .clock(ManualClock::new())
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "buckets");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<SlidingWindow<C>, ConfigError> {
        let rate = self.rate;
        let (limit, period) = (rate.limit(), rate.period_nanos());
        let buckets = self.buckets;
        let as_count = |n: usize| Value::Count(n as u128);
        if buckets == 0 {
            return Err(ConfigError::new(
                "buckets",
                as_count(0),
                "must be at least 1",
            ));
        }
        if buckets > MAX_BUCKETS {
            return Err(ConfigError::new(
                "buckets",
                as_count(buckets),
                "must be at most 65536",
            ));
        }
        if buckets as u64 > period {
            return Err(ConfigError::new(
                "buckets",
                as_count(buckets),
                "more buckets than nanoseconds in the period",
            ));
        }
        if limit > MAX_LIMIT {
            return Err(ConfigError::new(
                "limit",
                Value::Count(u128::from(limit)),
                "must be at most 4294967294 (counts are packed into 32 bits beside a 32-bit epoch)",
            ));
        }
        let width = period.div_ceil(buckets as u64);
        // width ≤ period, so neither subtraction underflows.
        let lag = if self.approximate {
            period - width
        } else {
            period - 1
        };
        let ring = lag.div_ceil(width) + 1;
        let closed = match self.count_closed {
            None => None,
            Some(k) => Some(Box::new(Closed::new(k, limit, period, self.approximate)?)),
        };
        let slots: Vec<AtomicU64> = (0..ring).map(|_| AtomicU64::new(RETIRED)).collect();
        Ok(SlidingWindow {
            state: CachePadded::new(AtomicU64::new(0)),
            floors: CachePadded::new(Floors {
                high: AtomicU64::new(0),
                swept: AtomicU64::new(0),
            }),
            slots: slots.into_boxed_slice(),
            width,
            lag,
            ring,
            limit,
            buckets,
            approximate: self.approximate,
            closed,
            rate,
            clock: self.clock,
        })
    }
}

impl<C> SlidingWindow<C> {
    /// The floor f(now): the oldest bucket a request at `now` counts.
    #[inline(always)]
    fn floor_at(&self, now: u64) -> u64 {
        now.saturating_sub(self.lag) / self.width
    }

    /// T(s): the first time whose floor is s (0 for s = 0). Saturates; callers pass floors that
    /// came from real times, for which it is exact.
    #[inline(always)]
    fn floor_start(&self, s: u64) -> u64 {
        if s == 0 {
            0
        } else {
            s.saturating_mul(self.width).saturating_add(self.lag)
        }
    }

    #[inline(always)]
    fn slot(&self, epoch: u64) -> &AtomicU64 {
        &self.slots[(epoch % self.ring) as usize]
    }

    /// True when `state`'s floor field still reads `floor32`.
    #[inline]
    fn floor_unchanged(&self, floor32: u32) -> bool {
        // Acquire: pairs with the AcqRel CAS that moved the floor, so a slot retired or
        // stamped under a newer floor (which we observed with Acquire) implies we see that
        // floor here: read-read coherence along happens-before.
        epoch32(self.state.load(Ordering::Acquire)) == floor32
    }

    /// Retires a live slot that held `word`: marks it RETIRED and subtracts its count from
    /// `state`, exactly once (only the CAS winner subtracts). False if the slot changed.
    fn retire(&self, slot: &AtomicU64, word: u64) -> bool {
        let retired = (word & !COUNT_MASK) | RETIRED;
        // AcqRel: acquire what the granters that recorded into this slot published (their
        // permits are in `state`); release so that a granter who later finds the slot retired
        // also sees the floor move that caused it.
        if slot
            .compare_exchange(word, retired, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        let k = count(word);
        if k > 0 {
            self.give_back(k);
        }
        true
    }

    /// Takes `k` permits out of the count: from `state` (time-closed) or, count-closed, into
    /// `released` (whose `state` count field only grows, see [`Closed`]).
    #[inline]
    fn give_back(&self, k: u64) {
        match &self.closed {
            // AcqRel: an RMW on the decision word; no borrow out of the count field, since
            // `state`'s count includes these k permits until this subtraction.
            None => self.state.fetch_sub(k, Ordering::AcqRel),
            // AcqRel: published to the granters that read `released` (see `Closed`).
            Some(cl) => cl.released.fetch_add(k, Ordering::AcqRel),
        };
    }

    /// Retires every live slot whose bucket is below floor `s`, then records that in `swept`.
    fn sweep(&self, s: u64) {
        // Acquire: pairs with the fetch_max below (another sweep's retirements are visible).
        let done = self.floors.swept.load(Ordering::Acquire);
        if done >= s {
            return;
        }
        // After an idle gap of 2^31 buckets or more, 32-bit offsets from `s` say nothing, but
        // every bucket opened since the last complete sweep is older than `s`: buckets are
        // only opened once `swept` has caught up with the floor (see `try_acquire_n_at`).
        let jump = s - done >= 1 << 31;
        let backoff = Backoff::new();
        for slot in self.slots.iter() {
            loop {
                // Acquire: see the stamp's floor (see `floor_unchanged`) and, for a bucket
                // opened after a sweep, that sweep's `swept`.
                let word = slot.load(Ordering::Acquire);
                if count(word) == RETIRED {
                    break;
                }
                let stale = if jump {
                    // Acquire: if another sweep finished, buckets may be open at the new
                    // floor: leave the slots to the caller's retry.
                    if self.floors.swept.load(Ordering::Acquire) != done {
                        return;
                    }
                    true
                } else {
                    let offset = epoch32(word).wrapping_sub(s as u32) as i32;
                    // offset < 0: below the floor. offset ≥ R: above every live bucket, so
                    // either a newer floor exists (not ours to retire) or it is stale.
                    offset < 0 || (offset as u64 >= self.ring && self.floor_unchanged(s as u32))
                };
                if !stale || self.retire(slot, word) {
                    break;
                }
                backoff.spin();
            }
        }
        // AcqRel: publishes the retirements above to a caller that skips the sweep because of
        // this value.
        self.floors.swept.fetch_max(s, Ordering::AcqRel);
    }

    /// Makes `slot` ready for bucket `x` (from `word`, which is not live for x): stamps a
    /// retired slot, or retires a stale live one. Returns without change when our floor is
    /// stale; the caller reloads and retries either way.
    fn open_bucket(&self, slot: &AtomicU64, word: u64, x: u64, s: u64) {
        let (ep, k) = (epoch32(word), count(word));
        if k == RETIRED {
            // A retired slot stamped x: either bucket x itself was retired (the floor moved
            // past it, and then we see the new floor) or it is x's 2^32-bucket alias.
            if ep == x as u32 && !self.floor_unchanged(s as u32) {
                return;
            }
            // AcqRel: the stamp publishes nothing but must not be reordered with our floor
            // reads (see `floor_unchanged`).
            let _ = slot.compare_exchange(word, pack(x, 0), Ordering::AcqRel, Ordering::Acquire);
            return;
        }
        // Live for another epoch y ≡ x (mod R). No live bucket of our floor but x maps here,
        // so y is below the floor (retire it), newer (we are stale) or a wrapped alias.
        let offset = ep.wrapping_sub(s as u32) as i32;
        let newer = offset >= 0 && offset as u64 >= self.ring;
        if !newer || self.floor_unchanged(s as u32) {
            self.retire(slot, word);
        }
    }

    /// Adds our `n` permits (already counted in `state`) to bucket x, or, if x has been
    /// retired meanwhile, takes them back out of `state` ourselves: either way they are
    /// subtracted exactly once.
    fn record(&self, slot: &AtomicU64, x: u64, n: u64) {
        let backoff = Backoff::new();
        // Acquire: see the slot's latest stamp.
        let mut word = slot.load(Ordering::Acquire);
        loop {
            if count(word) == RETIRED || epoch32(word) != x as u32 {
                // The floor passed x after our grant: x's permits no longer count, ours
                // included. The retirer did not see ours, so we give them back.
                self.give_back(n);
                return;
            }
            // AcqRel: serialises with `retire` on this slot: either we add first (the retirer
            // subtracts our permits) or it retires first (we see RETIRED and subtract).
            match slot.compare_exchange_weak(word, word + n, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return,
                Err(current) => {
                    word = current;
                    backoff.spin();
                }
            }
        }
    }

    /// The wait for a denied request, computed from the live slots: the first bucket expiry
    /// at which enough permits have left the window.
    fn denial(&self, s: u64, c: u64, n: u64, now: u64) -> Denied {
        let need = c + n - self.limit;
        let mut freed = 0;
        let mut last = s.saturating_add(self.ring - 1);
        for y in s..=last {
            // Acquire: a snapshot of the bucket.
            let word = self.slot(y).load(Ordering::Acquire);
            if count(word) != RETIRED && epoch32(word) == y as u32 {
                freed += count(word);
                if freed >= need {
                    last = y;
                    break;
                }
            }
        }
        // Bucket y leaves the window when the floor reaches y + 1. If the slots hold less than
        // `need` (grants still being recorded), every live bucket has left by `last`'s expiry.
        let expiry = last
            .checked_add(1)
            .and_then(|y| y.checked_mul(self.width))
            .and_then(|t| t.checked_add(self.lag));
        match expiry {
            Some(t) => Denied::after_nanos(t.saturating_sub(now).max(1)),
            None => Denied::never(),
        }
    }

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
    pub fn try_acquire_n_at(&self, permits: u32, now: u64) -> Result<(), Denied> {
        if permits == 0 {
            return Ok(());
        }
        let n = u64::from(permits);
        if n > self.limit {
            return Err(Denied::never());
        }
        if let Some(cl) = &self.closed {
            return self.acquire_closed(cl, n, now);
        }
        let f = self.floor_at(now);
        let backoff = Backoff::new();
        loop {
            let (g, s) = self.load_state();
            if self.catch_up(g, s, f) {
                continue;
            }
            let c = count(g);
            if c + n > self.limit {
                // A denial in an open bucket returns here, before any write.
                return Err(self.denial(s, c, n, now));
            }
            // Effective time: `now`, or the floor's start if our clock is behind it.
            let x = now.max(self.floor_start(s)) / self.width;
            let slot = self.slot(x);
            // Acquire: see the stamp's floor (see `floor_unchanged`).
            let word = slot.load(Ordering::Acquire);
            if count(word) == RETIRED || epoch32(word) != x as u32 {
                self.open_bucket(slot, word, x, s);
                continue;
            }
            // The decision: c + n ≤ limit under floor s, in one CAS on the word that holds both.
            // AcqRel: orders the grant with the slot reads above and the record below.
            if self
                .state
                .compare_exchange_weak(g, g + n, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                backoff.spin();
                continue;
            }
            self.record(slot, x, n);
            return Ok(());
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
        self.closed.as_ref().map(|cl| cl.k)
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
        self.rate
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

// The two steps every admission loop starts with, in both modes.
impl<C> SlidingWindow<C> {
    /// Loads the decision word and rebuilds its full 64-bit floor: `(word, floor)`.
    #[inline(always)]
    fn load_state(&self) -> (u64, u64) {
        // Acquire: pairs with the AcqRel RMWs on `state`; together with the Acquire load of
        // `high` below it guarantees high ≥ the floor read here, and that the retirements
        // made before the word was written are visible.
        let g = self.state.load(Ordering::Acquire);
        // Acquire: `high` is raised before `state`'s floor (see `catch_up`).
        let high = self.floors.high.load(Ordering::Acquire);
        // high ≥ s always (see above), so this never saturates; saturating rather than
        // panicking if that were ever broken.
        let s = high.saturating_sub(u64::from((high as u32).wrapping_sub(epoch32(g))));
        (g, s)
    }

    /// Brings the window up to the caller's floor `f`, given the word `g` and its floor `s`
    /// from [`load_state`](Self::load_state): moves the floor if `f > s`, else retires the
    /// slots below `s` if a sweep is pending. True if it did either: the caller then retries
    /// with a fresh word.
    #[inline(always)]
    fn catch_up(&self, g: u64, s: u64, f: u64) -> bool {
        if f > s {
            // Our time is past the floor: move it. `high` first, so that every reader of the
            // new floor can rebuild its full value.
            // AcqRel: released to the readers of `state` through the CAS below.
            self.floors.high.fetch_max(f, Ordering::AcqRel);
            // AcqRel: publishes the `high` update; failure means `state` moved: retry.
            let _ = self.state.compare_exchange(
                g,
                pack(f, count(g)),
                Ordering::AcqRel,
                Ordering::Acquire,
            );
            return true;
        }
        // Acquire: pairs with `sweep`'s fetch_max: the retirements it covers are visible.
        if self.floors.swept.load(Ordering::Acquire) < s {
            self.sweep(s);
            return true;
        }
        false
    }
}

// Count-closed mode (see `Closed` and the
// guide, "Count-closed buckets").
impl<C> SlidingWindow<C> {
    /// [`try_acquire_n_at`](SlidingWindow::try_acquire_n_at) in count-closed mode, for
    /// 1 ≤ n ≤ limit. Never inlined, so that strict mode's code stays as it was.
    #[inline(never)]
    fn acquire_closed(&self, cl: &Closed, n: u64, now: u64) -> Result<(), Denied> {
        // Acquire: see the latest high-water mark before deciding to raise it.
        if cl.latest.load(Ordering::Acquire) < now {
            // AcqRel: sequenced before every give-back this call makes, so whoever reads
            // `released` after them also reads `latest` ≥ now (see the guide's Lemma 2).
            cl.latest.fetch_max(now, Ordering::AcqRel);
        }
        let backoff = Backoff::new();
        loop {
            let (g, s) = self.load_state();
            // Acquire, after `state`: if our CAS on `g` succeeds, every give-back counted in
            // `r` was made while `state` was still `g` or before.
            let r = cl.released.load(Ordering::Acquire);
            // Acquire, after `released`: every closed bucket expired in `r` was expired at a
            // time t ≤ latest, so our t0 ≥ t.
            let t0 = now.max(cl.latest.load(Ordering::Acquire));
            let f = self.floor_at(t0);
            if self.catch_up(g, s, f) {
                continue;
            }
            if self.expire(cl, t0) {
                continue;
            }
            // Permits counted: granted − released, mod 2^32. More than `limit` only when `r`
            // includes give-backs of grants made after `g` was read: look again.
            let c = u64::from((count(g) as u32).wrapping_sub(r as u32));
            if c > self.limit {
                backoff.spin();
                continue;
            }
            if c + n > self.limit {
                // A denial with nothing to expire or retire returns here, before any write.
                return Err(self.denial_closed(cl, s, c, n, now));
            }
            let tau = t0.max(self.floor_start(s));
            let x = tau / self.width;
            let slot = self.slot(x);
            // Acquire: see the stamp's floor (see `floor_unchanged`).
            let word = slot.load(Ordering::Acquire);
            if count(word) == RETIRED || epoch32(word) != x as u32 {
                self.open_bucket(slot, word, x, s);
                continue;
            }
            // The count field only grows, wrapping inside its 32 bits.
            let next = (g & !COUNT_MASK) | (g.wrapping_add(n) & COUNT_MASK);
            // The decision: c + n ≤ limit under floor s and `g` unchanged since `released`
            // was read. AcqRel: as in strict mode.
            if self
                .state
                .compare_exchange_weak(g, next, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                backoff.spin();
                continue;
            }
            self.record_closed(cl, slot, x, n, tau);
            return Ok(());
        }
    }

    /// Adds our `n` permits to bucket x, closing it if it then holds at least k: its permits
    /// move, in the same CAS, out of the bucket into a closed-bucket entry. If x has been
    /// retired meanwhile we give our permits back ourselves (as strict mode's `record`).
    fn record_closed(&self, cl: &Closed, slot: &AtomicU64, x: u64, n: u64, tau: u64) {
        let backoff = Backoff::new();
        // Acquire: see the slot's latest stamp.
        let mut word = slot.load(Ordering::Acquire);
        let total = loop {
            if count(word) == RETIRED || epoch32(word) != x as u32 {
                self.give_back(n);
                return;
            }
            let total = count(word) + n;
            let next = if total >= cl.k {
                word & !COUNT_MASK
            } else {
                word + n
            };
            // AcqRel: serialises with `retire` (as in strict mode) and acquires the records
            // of every grant already in the bucket, hence their raises of `latest`.
            match slot.compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) if total >= cl.k => break total,
                Ok(_) => return,
                Err(current) => {
                    word = current;
                    backoff.spin();
                }
            }
        };
        // Every grant in the closed bucket was judged at a time ≤ `latest` as of its record,
        // which our CAS acquired. Acquire: that raise is visible.
        let newest = tau.max(cl.latest.load(Ordering::Acquire));
        if !self.push_closed(cl, total, newest) {
            // Unreachable: a full ring would mean more than `limit` permits counted (guide).
            // Keep the permits in the bucket, as strict mode would: never over-admits.
            debug_assert!(false, "closed-bucket ring full");
            self.record(slot, x, total);
        }
    }

    /// Publishes a closed bucket of `permits` whose newest grant is at `time`, at the head.
    /// False only if the ring is full, which the guide proves cannot happen.
    fn push_closed(&self, cl: &Closed, permits: u64, time: u64) -> bool {
        let backoff = Backoff::new();
        loop {
            // Acquire: see the entries freed up to this head.
            let h = cl.head.load(Ordering::Acquire);
            let e = cl.entry(h);
            // Acquire: pairs with the freeing CAS, so our writes below come after it.
            if e.tag.load(Ordering::Acquire) != pack(h, FREE) {
                // Acquire: a moved head means our look was stale.
                if cl.head.load(Ordering::Acquire) == h {
                    return false;
                }
                continue;
            }
            // AcqRel: claims index h; the entry is ours alone until we publish it.
            if cl
                .head
                .compare_exchange_weak(h, h + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                backoff.spin();
                continue;
            }
            // Release: a reader that sees this time also sees the freeing before it.
            e.time.store(time, Ordering::Release);
            // Release: publishes the time with the count.
            e.tag.store(pack(h, permits), Ordering::Release);
            return true;
        }
    }

    /// Expires closed buckets in order from the tail while the oldest one's newest grant is
    /// at least one period before `t0`; true if it gave any permits back.
    fn expire(&self, cl: &Closed, t0: u64) -> bool {
        let mut gave = false;
        loop {
            // Acquire (both): entries below the tail were freed; entries below the head
            // were claimed.
            let t = cl.tail.load(Ordering::Acquire);
            if t == cl.head.load(Ordering::Acquire) {
                return gave;
            }
            let e = cl.entry(t);
            // Acquire: a published tag carries its time.
            let tag = e.tag.load(Ordering::Acquire);
            if epoch32(tag) == t.wrapping_add(cl.m) as u32 {
                // Bucket t was freed (and its entry maybe reused): help move the tail.
                // AcqRel: publishes the freeing to the next reader of `tail`.
                let _ = cl
                    .tail
                    .compare_exchange(t, t + 1, Ordering::AcqRel, Ordering::Acquire);
                continue;
            }
            let Some((permits, time)) = cl.published(t) else {
                // Claimed but not yet published (or `t` is stale): nothing more now.
                // Acquire: a moved tail means our look was stale.
                if cl.tail.load(Ordering::Acquire) != t {
                    continue;
                }
                return gave;
            };
            let expired = time.checked_add(cl.period).is_some_and(|end| end <= t0);
            if !expired {
                return gave;
            }
            // AcqRel: exactly one caller frees bucket t (a CAS on its published tag) and
            // gives its permits back.
            if e.tag
                .compare_exchange(
                    pack(t, permits),
                    pack(t.wrapping_add(cl.m), FREE),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
            {
                self.give_back(permits);
                gave = true;
            }
            // AcqRel: as above.
            let _ = cl
                .tail
                .compare_exchange(t, t + 1, Ordering::AcqRel, Ordering::Acquire);
        }
    }

    /// The wait for a denied request: the first instant at which enough permits have left,
    /// merging the time buckets (bucket y leaves at T(y + 1)) with the closed buckets (in
    /// order; bucket j leaves one period after its newest grant).
    fn denial_closed(&self, cl: &Closed, s: u64, c: u64, n: u64, now: u64) -> Denied {
        let need = c + n - self.limit;
        let leaves = |y: u64| (u128::from(y) + 1) * u128::from(self.width) + u128::from(self.lag);
        let bucket = |y: u64| {
            // Acquire: a snapshot of the bucket.
            let word = self.slot(y).load(Ordering::Acquire);
            let k = if count(word) != RETIRED && epoch32(word) == y as u32 {
                count(word)
            } else {
                0
            };
            (k, leaves(y))
        };
        let y_end = s.saturating_add(self.ring);
        // Acquire (both): the closed buckets between tail and head.
        let head = cl.head.load(Ordering::Acquire);
        let mut j = cl.tail.load(Ordering::Acquire);
        let mut gone = 0u128;
        let mut chunk = |j: u64| {
            if j >= head {
                return None;
            }
            let (k, time) = cl.published(j)?;
            gone = gone.max(u128::from(time) + u128::from(cl.period));
            Some((k, gone))
        };
        let mut y = s;
        let mut nb = (y < y_end).then(|| bucket(y));
        let mut nc = chunk(j);
        let mut freed = 0;
        let at = loop {
            let (k, t) = match (nb, nc) {
                (Some(b), Some(c)) if b.1 <= c.1 => {
                    y += 1;
                    nb = (y < y_end).then(|| bucket(y));
                    b
                }
                (Some(b), None) => {
                    y += 1;
                    nb = (y < y_end).then(|| bucket(y));
                    b
                }
                (_, Some(c)) => {
                    j += 1;
                    nc = chunk(j);
                    c
                }
                (None, None) => {
                    // Some permits are still being recorded or published: they leave by the
                    // last time bucket's expiry, or a period after the newest time seen.
                    // Acquire: the high-water mark.
                    let latest = cl.latest.load(Ordering::Acquire);
                    break leaves(y_end.saturating_sub(1))
                        .max(u128::from(latest) + u128::from(cl.period));
                }
            };
            freed += k;
            if freed >= need {
                break t;
            }
        };
        match u64::try_from(at) {
            Ok(t) => Denied::after_nanos(t.saturating_sub(now).max(1)),
            Err(_) => Denied::never(),
        }
    }
}

impl<C: Clock> Limiter for SlidingWindow<C> {
    #[inline]
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
        // Relaxed: a snapshot for display.
        let state = self.state.load(Ordering::Relaxed);
        f.debug_struct("SlidingWindow")
            .field("rate", &self.rate)
            .field("buckets", &self.buckets)
            .field("approximate", &self.approximate)
            .field("count_closed", &self.count_closed())
            .field("width_ns", &self.width)
            .field("count", &count(state))
            .finish_non_exhaustive()
    }
}

/// Planted bugs for the loom models: each must make its model fail, which shows the models
/// can fail. Compiled only under `--cfg hotlimit_loom`; not part of the API.
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub mod planted {
    use super::*;

    /// [`SlidingWindow`] deciding by "sum the live buckets, then increment the current one":
    /// each step is atomic, the pair is not, so two threads can both see `limit − 1` and both
    /// add.
    #[derive(Debug)]
    pub struct RacySlidingWindow<C>(pub SlidingWindow<C>);

    impl<C: Clock> RacySlidingWindow<C> {
        /// The broken acquire (one permit; no floor, no retirement: enough for a frozen clock).
        pub fn try_acquire(&self) -> Result<(), Denied> {
            let w = &self.0;
            let now = w.clock.now();
            let (f, x) = (w.floor_at(now), now / w.width);
            let mut sum = 0;
            for y in f..=x {
                // Relaxed: deliberately broken; the bug is the gap between sum and add.
                let word = w.slot(y).load(Ordering::Relaxed);
                if count(word) != RETIRED && epoch32(word) == y as u32 {
                    sum += count(word);
                }
            }
            if sum + 1 > w.limit {
                return Err(Denied::after_nanos(1));
            }
            let slot = w.slot(x);
            // Relaxed: as above.
            let mut word = slot.load(Ordering::Relaxed);
            loop {
                let next = if count(word) == RETIRED || epoch32(word) != x as u32 {
                    pack(x, 1)
                } else {
                    word + 1
                };
                // Relaxed: as above; the increment itself is atomic.
                match slot.compare_exchange(word, next, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => return Ok(()),
                    Err(current) => word = current,
                }
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
            let w = &self.0;
            if let Some(cl) = &w.closed {
                // Relaxed (all): deliberately broken; the bug is the gap between the load
                // of the tag and the store that frees it.
                let t = cl.tail.load(Ordering::Relaxed);
                if t < cl.head.load(Ordering::Relaxed) {
                    if let Some((permits, time)) = cl.published(t) {
                        if time + cl.period <= now {
                            let e = cl.entry(t);
                            e.tag.store(pack(t + cl.m, FREE), Ordering::Relaxed);
                            w.give_back(permits);
                            cl.tail.store(t + 1, Ordering::Relaxed);
                        }
                    }
                }
            }
            w.try_acquire_n_at(1, now)
        }
    }
}

// Crate-internal access for `Keyed` (`src/keyed.rs`), which keeps one strict window per key
// and must tell whether a window still counts any permit, and carry its permits on a rate
// change.
#[cfg(any(feature = "std", hotlimit_loom))]
impl<C> SlidingWindow<C> {
    /// The permits a request may still count, bucket by bucket: `(t, k)` for k ≥ 1 permits that
    /// a request at any `now` counts iff `now < t + period`. Strict mode: t is the bucket's last
    /// instant, ≥ the effective time of every grant in it. Time-closed modes only; exact when
    /// no call is in flight (a snapshot otherwise).
    pub(crate) fn counted(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        debug_assert!(self.closed.is_none());
        let (_, s) = self.load_state();
        self.slots.iter().filter_map(move |slot| {
            // Acquire: see the grants recorded into the bucket (as in `denial`).
            let word = slot.load(Ordering::Acquire);
            // Buckets below the floor, or not of it, are never counted again.
            let y = u64::from(epoch32(word).wrapping_sub(s as u32));
            let live = count(word) != RETIRED && count(word) > 0 && y < self.ring;
            let t = self
                .floor_start(s.saturating_add(y + 1))
                .saturating_sub(self.rate.period_nanos());
            live.then_some((t, count(word)))
        })
    }
}
