//! Not a model: the keyed table the keyed property tests build, on a `ManualClock`.

use std::fmt::Debug;

use hotlimit::{DefaultClock, Keyed, KeyedBuilder, KeyedState, ManualClock, WhenFull};
use proptest::prelude::*;

use super::gcra::Decision;

/// `builder` with room for `capacity` keys and `when_full`, on a fresh `ManualClock`.
pub(crate) fn keyed_table<L: KeyedState>(
    builder: KeyedBuilder<u64, L, DefaultClock>,
    capacity: usize,
    when_full: WhenFull,
) -> Keyed<u64, L, ManualClock> {
    builder
        .capacity(capacity)
        .when_full(when_full)
        .clock(ManualClock::new())
        .build()
        .unwrap()
}

/// Drives `k` and one model per key (`models[key]`) through a trace: `ask(step)` is
/// `Some((gap, key, n))`, an ask for `n` permits `gap` after the previous step, or `None`, a
/// sweep (`evict_idle_at` now). Every ask's decision and `retry_after` must equal the key's
/// model's (`decide(model, n, now)`), and the table must never hold more than `max_len` keys.
pub(crate) fn each_key_matches<L: KeyedState, S: Debug, M>(
    k: &Keyed<u64, L, ManualClock>,
    steps: &[S],
    ask: impl Fn(&S) -> Option<(u64, u64, u32)>,
    models: &mut [M],
    mut decide: impl FnMut(&mut M, u32, u64) -> Decision,
    max_len: usize,
) -> Result<(), TestCaseError> {
    let mut now = 0u64;
    for (i, step) in steps.iter().enumerate() {
        match ask(step) {
            Some((gap, key, n)) => {
                now += gap;
                let real = k
                    .try_acquire_n_at(&key, n, now)
                    .map_err(|d| d.retry_after_nanos());
                let want = decide(&mut models[key as usize], n, now);
                prop_assert_eq!(real, want, "step {} ({:?}) at {}", i, step, now);
            }
            None => {
                k.evict_idle_at(now);
            }
        }
        prop_assert!(k.len() <= max_len);
    }
    Ok(())
}
