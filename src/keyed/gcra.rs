//! The per-key GCRA state of [`Keyed`](crate::Keyed): one TAT word, retired by a CAS to a
//! tombstone (see the parent module's eviction protocol).

use super::word::{inline, TatWord};
use super::{Admit, KeyedState, Retire};
use crate::clock::ManualClock;
use crate::contention::Contention;
use crate::error::{ConfigError, Denied};
use crate::gcra::Gcra;
use crate::rate::Rate;
use crate::sync::{AtomicU64, Ordering};

/// GCRA's per-key state word: `{ tat: S }` for a live state (S ≤ [`GCRA_MAX_TAT`]), or one of
/// the two terminal tombstones.
pub(super) const GCRA_EVICTED: u64 = u64::MAX;
/// The state word of a GCRA state frozen by a rate change.
pub(super) const GCRA_MOVING: u64 = u64::MAX - 1;
/// The state word of a new key's GCRA state whose creator has not reserved its place yet.
pub(super) const GCRA_PENDING: u64 = u64::MAX - 2;
/// The largest TAT a grant may store: the top three values are the markers, so the last 3 ns
/// of the clock's range are unusable (a grant that would reach them is denied as "never").
pub(super) const GCRA_MAX_TAT: u64 = u64::MAX - 3;

pub(super) use state::{GcraConfig, GcraState};

mod state {
    #![allow(unreachable_pub)]
    use super::*;

    /// GCRA's shared configuration: what [`Gcra`] keeps beside its TAT.
    #[derive(Debug)]
    pub struct GcraConfig {
        pub(crate) interval: u64,
        pub(crate) tolerance: u64,
        pub(crate) burst: u64,
        /// τ − I: the slack of a request for one permit, priced once.
        pub(crate) slack_one: u64,
        /// Kept for `Debug`.
        #[allow(dead_code)]
        pub(crate) rate: Rate,
    }

    /// One key's GCRA state: the TAT word, 8 bytes.
    #[derive(Debug)]
    pub struct GcraState(pub(crate) AtomicU64);
}

impl KeyedState for Gcra {
    type Config = GcraConfig;
    type State = GcraState;
    /// The TAT, the interval and tolerance it ran under, and the time of the move.
    type Carry = (u64, u64, u64, u64);

    fn config(rate: Rate, burst: Option<u64>) -> Result<GcraConfig, ConfigError> {
        // Gcra's own builder validates (same fields, same messages); only its numbers are kept.
        let builder = Gcra::builder(rate).clock(ManualClock::new());
        let g = match burst {
            Some(b) => builder.burst(b).build()?,
            None => builder.build()?,
        };
        let (interval, tolerance) = g.params();
        Ok(GcraConfig {
            interval,
            tolerance,
            slack_one: tolerance - interval,
            burst: g.burst(),
            rate,
        })
    }

    fn carried(cfg: &GcraConfig, carry: Self::Carry, floor: u64) -> GcraState {
        GcraState(AtomicU64::new(
            carried_tat(cfg, carry, floor).min(GCRA_MAX_TAT),
        ))
    }

    #[inline]
    fn acquire(cfg: &GcraConfig, state: &GcraState, permits: u32, now: u64) -> Admit {
        let Some((cost, slack)) =
            crate::gcra::price(u64::from(permits), cfg.burst, cfg.interval, cfg.tolerance)
        else {
            return Admit::Denied(Denied::never());
        };
        grant(&state.0, now, |tat| {
            crate::gcra::decide(tat, now, cost, slack)
        })
    }

    fn idle_at(_: &GcraConfig, state: &GcraState) -> u64 {
        word_idle_at(&state.0)
    }

    fn retire(cfg: &GcraConfig, state: &GcraState, now: u64, how: Retire) -> Option<Self::Carry> {
        let tat = retire_word(&state.0, now, how)?;
        Some((tat, cfg.interval, cfg.tolerance, now))
    }

    fn is_evicted(state: &GcraState) -> bool {
        word_is(&state.0, GCRA_EVICTED)
    }

    fn pending(_: &GcraConfig) -> GcraState {
        GcraState(AtomicU64::new(GCRA_PENDING))
    }

    fn commit(state: &GcraState, floor: u64) {
        // Relaxed: only the creator writes a pending word, once; the state has no other data
        // to publish (the entry itself was published by the map's insert).
        state.0.store(floor.min(GCRA_MAX_TAT), Ordering::Relaxed);
    }

    fn is_pending(state: &GcraState) -> bool {
        word_is(&state.0, GCRA_PENDING)
    }

    fn bytes_per_state(_: &GcraConfig) -> u128 {
        core::mem::size_of::<GcraState>() as u128
    }

    fn horizon(cfg: &GcraConfig) -> u64 {
        cfg.tolerance
    }

    type Word = AtomicU64;

    #[inline(always)]
    fn word_decide(cfg: &GcraConfig, w: u64, permits: u32, now: u64) -> Result<u64, Denied> {
        let (cost, slack) = if permits == 1 {
            // A burst is at least 1, so one permit is always priced (the common request).
            (cfg.interval, cfg.slack_one)
        } else {
            match crate::gcra::price(u64::from(permits), cfg.burst, cfg.interval, cfg.tolerance) {
                Some(price) => price,
                None => return Err(Denied::never()),
            }
        };
        match crate::gcra::decide(inline::tat(w), now, cost, slack)? {
            next if next <= inline::MAX_TAT => Ok(inline::live(next, inline::counted(w, now))),
            // Past the 146 years of the table's range: never.
            _ => Err(Denied::never()),
        }
    }

    fn word_rerate(from: &GcraConfig, to: &GcraConfig, w: u64, now: u64) -> u64 {
        // Gcra's rule for a live change, as `carried` applies it.
        let tat = inline::tat(w);
        let carried = crate::gcra::carry_tat(
            tat,
            now,
            (from.interval, from.tolerance),
            (to.interval, to.tolerance),
        )
        .max(tat);
        inline::live(carried.min(inline::MAX_TAT), inline::grants(w))
    }

    fn word_carry(cfg: &GcraConfig, w: u64, now: u64, base: u64) -> Self::Carry {
        (
            inline::tat(w).saturating_add(base),
            cfg.interval,
            cfg.tolerance,
            now.saturating_add(base),
        )
    }

    fn word_carried(cfg: &GcraConfig, carry: Self::Carry, floor: u64, base: u64, _: u64) -> u64 {
        // The map state's rule (`carried`), then into the table's times.
        let tat = carried_tat(cfg, carry, floor).saturating_sub(base);
        inline::live(tat.min(inline::MAX_TAT), 0)
    }
}

/// Gcra's rule for a live change, for a state that ran on `(interval, tolerance)` until `now`
/// (all in `carry`) and runs on `cfg` from then: free permits carried, at most the new burst;
/// time owed never forgiven (the TAT never moves earlier); never below `floor`.
fn carried_tat(cfg: &GcraConfig, carry: <Gcra as KeyedState>::Carry, floor: u64) -> u64 {
    let (tat, interval, tolerance, now) = carry;
    crate::gcra::carry_tat(
        tat,
        now,
        (interval, tolerance),
        (cfg.interval, cfg.tolerance),
    )
    .max(tat)
    .max(floor)
}

/// Admits on a live word: `decide` (a denial returns before any write) gives the word's next
/// value, installed by one CAS; a marker makes the caller look the key up again. A lost CAS
/// goes through the crate's [`Contention`] policy (`seed`: the caller's `now`).
#[inline]
pub(super) fn grant<A: TatWord>(
    word: &A,
    seed: u64,
    decide: impl Fn(A::W) -> Result<A::W, Denied>,
) -> Admit {
    // Relaxed: the word is the key's whole state; the CAS below fails if this is stale.
    let mut w = word.load(Ordering::Relaxed);
    let mut contention = Contention::new();
    loop {
        let first = A::first(w);
        if first >= GCRA_PENDING {
            return retired(word, first);
        }
        // A denial returns here, before any write (for a pair: neither rate is charged).
        let next = match decide(w) {
            Ok(next) if A::first(next) <= GCRA_MAX_TAT => next,
            // The top of the first TAT's range is reserved for the markers: never.
            Ok(_) => return Admit::Denied(Denied::never()),
            Err(denied) => return Admit::Denied(denied),
        };
        // Relaxed (both): grants are linearized by the CAS on this one word, as in `Gcra` and
        // `GcraPair`; a marker written meanwhile makes it fail, and the loop sees it above.
        match word.cas_weak(w, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return Admit::Granted,
            Err(current) => {
                // Relaxed (a reload after a pause): as the first load.
                w = contention.lost(current, seed, || word.load(Ordering::Relaxed));
            }
        }
    }
}

/// Retires a live word (if `how` is `IfIdle`, only an idle one) by one CAS to the marker of
/// `how`: the retired value, or `None` if the word is a marker already or busy.
#[inline]
pub(super) fn retire_word<A: TatWord>(word: &A, now: u64, how: Retire) -> Option<A::W> {
    let marker = if how == Retire::Move {
        GCRA_MOVING
    } else {
        GCRA_EVICTED
    };
    // Relaxed: the CAS below checks the value.
    let mut w = word.load(Ordering::Relaxed);
    loop {
        if A::first(w) >= GCRA_PENDING || (how == Retire::IfIdle && A::idle_at(w) > now) {
            return None;
        }
        // Release on success: publishes the raised floor (the sweep raised it before
        // retiring) to an admitter that Acquire-loads the marker and then creates the
        // key's fresh state from the floor. Relaxed on failure: we only re-check.
        match word.cas_weak(
            w,
            A::marker(w, marker),
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            Ok(_) => return Some(w),
            Err(current) => w = current,
        }
    }
}

/// A word's `idle_at`: `u64::MAX` for a marker (out of the sweep's ranking), else the latest
/// of its TATs.
#[inline]
pub(super) fn word_idle_at<A: TatWord>(word: &A) -> u64 {
    // Relaxed: a snapshot to rank eviction candidates; the retire CAS decides.
    match word.load(Ordering::Relaxed) {
        w if A::first(w) >= GCRA_PENDING => u64::MAX,
        w => A::idle_at(w),
    }
}

/// Whether a word holds `marker` (`GCRA_EVICTED`: terminal; `GCRA_PENDING`: only its
/// creator asks, about its own entry).
#[inline]
pub(super) fn word_is<A: TatWord>(word: &A, marker: u64) -> bool {
    // Relaxed: the evicted marker is terminal, so a stale read only delays the removal; the
    // pending one is asked about only by the creator, which wrote it.
    A::first(word.load(Ordering::Relaxed)) == marker
}

/// The outcome for a GCRA word found retired or pending (its first TAT, `first`, is
/// `GCRA_EVICTED`, `GCRA_MOVING` or `GCRA_PENDING`).
#[cold]
fn retired<A: TatWord>(word: &A, first: u64) -> Admit {
    if first == GCRA_EVICTED {
        // Acquire: reads the terminal marker from the evictor's Release CAS, so the floor it
        // raised before is visible when the caller creates the key's fresh state.
        let _ = word.load(Ordering::Acquire);
        Admit::Evicted
    } else {
        Admit::Moving
    }
}
