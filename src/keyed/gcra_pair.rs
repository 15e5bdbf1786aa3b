//! [`GcraPair`] per key: the key's state is the pair's 16-byte word, with the per-key
//! markers (pending, moving, evicted) in its first half, as [`Gcra`](crate::Gcra)'s per-key
//! word holds them in its one TAT.
//!
//! ```text
//! live:    { second: S₂, first: S₁ }      S₁ ≤ GCRA_MAX_TAT
//! marker:  { second: 0,  first: GCRA_PENDING | GCRA_MOVING | GCRA_EVICTED }
//! ```
//!
//! Every protocol step is `Gcra`'s on one word (see the [`guide`](crate::guide)): a grant is
//! one CAS of the whole word, so a marker written meanwhile makes it fail; a retire is one CAS
//! to a marker. The only difference is that the word is 16 bytes and carries two TATs.
#![allow(unreachable_pub)]

use super::gcra::{
    grant, retire_word, word_idle_at, word_is, GCRA_EVICTED, GCRA_MAX_TAT, GCRA_PENDING,
};
use super::word::{inline, PairWord};
use super::{Admit, KeyedState, Retire};
use crate::error::ConfigError;
use crate::error::Denied;
use crate::gcra::{price, Params};
use crate::gcra_pair::GcraPair;
use crate::gcra_pair::{decide_pair, join, split};
use crate::rate::Rate;
use crate::sync::{AtomicU128, Ordering};

/// A pair's shared configuration: both rates' parameters, and the rates (what the pair's
/// read-back reports as their quotas, `keyed/pair_read.rs`).
#[derive(Debug)]
pub struct PairConfig {
    pub(super) first: Params,
    pub(super) second: Params,
    /// Read only by the `std` read-back (`Keyed` needs `std`).
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(super) rates: (Rate, Rate),
}

/// One key's pair state: the 16-byte word.
#[derive(Debug)]
pub struct PairState(pub(super) PairWord);

impl KeyedState for GcraPair {
    type Config = PairConfig;
    type State = PairState;
    type Carry = (u64, u64);

    /// A pair needs two rates: only [`config_with`](KeyedState::config_with) with a second
    /// rate makes one (`Keyed::gcra_pair` passes it).
    fn config(rate: Rate, _: Option<u64>) -> Result<PairConfig, ConfigError> {
        Err(ConfigError::new(
            "second_rate",
            rate.as_value(),
            "a GcraPair per key needs two rates: build it with Keyed::gcra_pair",
        ))
    }

    fn config_with(
        rate: Rate,
        burst: Option<u64>,
        second: Option<(Rate, Option<u64>)>,
    ) -> Result<PairConfig, ConfigError> {
        let Some((second_rate, second_burst)) = second else {
            return Self::config(rate, burst);
        };
        Ok(PairConfig {
            first: Params::new(rate, burst).map_err(|e| e.prefixed("first_rate", "first_burst"))?,
            second: Params::new(second_rate, second_burst)
                .map_err(|e| e.prefixed("second_rate", "second_burst"))?,
            rates: (rate, second_rate),
        })
    }

    /// Per-key overrides and default-rate changes take one rate; a pair's two are not
    /// changed at run time yet.
    fn rerate(_: &PairConfig, rate: Rate) -> Result<PairConfig, ConfigError> {
        Err(ConfigError::new(
            "rate",
            rate.as_value(),
            "a GcraPair key's rates cannot be changed at run time",
        ))
    }

    fn carried(_: &PairConfig, (s1, s2): (u64, u64), floor: u64) -> PairState {
        PairState(PairWord(AtomicU128::new(join(
            s1.max(floor).min(GCRA_MAX_TAT),
            s2.max(floor),
        ))))
    }

    #[inline]
    fn acquire(cfg: &PairConfig, state: &PairState, permits: u32, now: u64) -> Admit {
        let n = u64::from(permits);
        let (f, s) = (&cfg.first, &cfg.second);
        let (Some(first), Some(second)) = (
            price(n, f.burst, f.interval, f.tolerance),
            price(n, s.burst, s.interval, s.tolerance),
        ) else {
            return Admit::Denied(Denied::never());
        };
        grant(&state.0, now, |word| decide_pair(word, now, first, second))
    }

    fn idle_at(_: &PairConfig, state: &PairState) -> u64 {
        word_idle_at(&state.0)
    }

    fn retire(_: &PairConfig, state: &PairState, now: u64, how: Retire) -> Option<(u64, u64)> {
        retire_word(&state.0, now, how).map(split)
    }

    fn is_evicted(state: &PairState) -> bool {
        word_is(&state.0, GCRA_EVICTED)
    }

    fn pending(_: &PairConfig) -> PairState {
        PairState(PairWord(AtomicU128::new(join(GCRA_PENDING, 0))))
    }

    fn commit(state: &PairState, floor: u64) {
        // Relaxed: only the creator writes a pending word, once; the state has no other data
        // to publish (the entry itself was published by the map's insert). A CAS, as the
        // 16-byte atomic has no plain store in every build (loom's stand-in).
        let committed = state.0 .0.compare_exchange(
            join(GCRA_PENDING, 0),
            join(floor.min(GCRA_MAX_TAT), floor),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        debug_assert!(
            committed.is_ok(),
            "a pending state is changed only by its commit"
        );
    }

    fn is_pending(state: &PairState) -> bool {
        word_is(&state.0, GCRA_PENDING)
    }

    fn bytes_per_state(_: &PairConfig) -> u128 {
        core::mem::size_of::<PairState>() as u128
    }

    fn horizon(cfg: &PairConfig) -> u64 {
        cfg.first.tolerance.max(cfg.second.tolerance)
    }

    type Word = PairWord;

    #[inline(always)]
    fn word_decide(cfg: &PairConfig, w: u128, permits: u32, now: u64) -> Result<u128, Denied> {
        let n = u64::from(permits);
        let (f, s) = (&cfg.first, &cfg.second);
        let (Some(first), Some(second)) = (
            price(n, f.burst, f.interval, f.tolerance),
            price(n, s.burst, s.interval, s.tolerance),
        ) else {
            return Err(Denied::never());
        };
        let (head, s2) = split(w);
        let (n1, n2) = split(decide_pair(
            join(inline::tat(head), s2),
            now,
            first,
            second,
        )?);
        if n1 > inline::MAX_TAT {
            // Past the 146 years of the table's range: never.
            return Err(Denied::never());
        }
        Ok(join(inline::live(n1, inline::counted(head, now)), n2))
    }

    /// A pair's rates are not changed at run time (`rerate` refuses), so a rebuild never
    /// carries one: the value stays as it is.
    fn word_rerate(_: &PairConfig, _: &PairConfig, w: u128, _: u64) -> u128 {
        w
    }

    fn word_carry(_: &PairConfig, w: u128, _: u64, base: u64) -> (u64, u64) {
        let (head, s2) = split(w);
        (
            inline::tat(head).saturating_add(base),
            s2.saturating_add(base),
        )
    }

    fn word_carried(_: &PairConfig, (s1, s2): (u64, u64), floor: u64, base: u64, _: u128) -> u128 {
        let s1 = s1.max(floor).saturating_sub(base).min(inline::MAX_TAT);
        join(inline::live(s1, 0), s2.max(floor).saturating_sub(base))
    }
}

/// The pair's per-key state for the loom models of `Keyed`'s eviction and creation protocols
/// (`loom-tests/tests/keyed.rs`). Compiled only under `--cfg hotlimit_loom`.
#[cfg(hotlimit_loom)]
pub mod planted {
    use super::*;

    crate::keyed::planted::model_key!(
        /// One key's pair state and its configuration, as a `Keyed` entry holds them: the
        /// first rate is the model's, the second has the same limit over twice the period.
        PairKey: GcraPair,
        |rate| {
            let slower = Rate::new(rate.limit(), rate.period() * 2).expect("valid rate");
            <GcraPair as KeyedState>::config_with(rate, None, Some((slower, None)))
                .expect("valid rates")
        }
    );

    impl PairKey {
        /// The planted bug: idleness checked with a load, the entry removed without the marker
        /// CAS, so an admitter holding the old state can still grant on it.
        pub fn evict_racy_at(&self, now: u64) -> bool {
            // Relaxed: deliberately broken; the missing marker CAS is the bug.
            let (s1, s2) = split(self.state.0 .0.load(Ordering::Relaxed));
            s1.max(s2) <= now
        }
    }
}
