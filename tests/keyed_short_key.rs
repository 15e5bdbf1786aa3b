//! `Keyed<ShortKey>`: string keys of at most 23 bytes inline in the table's slots. The same
//! table as every `Keyed<_, Gcra>` (its protocol's models and tests are the table's); checked
//! here with this key type: the per-key decisions against `Keyed<String>` on the same trace,
//! every key found again through its segments' growth (a `ShortKey` has no drop glue, so its
//! segments grow), racing creators of the same keys, and eviction at the capacity.

use std::time::Duration;

use hotlimit::{Clock, Gcra, Keyed, ManualClock, ShortKey};
use proptest::prelude::*;

mod keyed_scenarios;

use keyed_scenarios::table;

/// A key of the trace: a few distinct ids of different lengths, 0 to 23 bytes.
fn key_text(i: u8) -> String {
    match i % 4 {
        0 => format!("u{i}"),
        1 => format!("user:{i:010}"),
        2 => format!("tenant/{i}/eu-west"),
        _ => "x".repeat(usize::from(i % 24)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// On one trace of (key, permits, time step), `Keyed<ShortKey>` and `Keyed<String>` grant
    /// and deny alike, with the same `retry_after`: the key type changes where the bytes
    /// live, not a decision. (Capacity above the keys: no eviction, whose choice of victim
    /// follows each table's own hash seed.)
    #[test]
    fn decides_as_a_string_keyed_table(
        trace in proptest::collection::vec((0u8..40, 1u32..4, 0u64..400_000_000), 1..300),
    ) {
        let clock = ManualClock::new();
        let short: Keyed<ShortKey, Gcra, ManualClock> = table(5, 3, 64, clock.clone());
        let string: Keyed<String, Gcra, ManualClock> = table(5, 3, 64, clock.clone());
        for (k, permits, step) in trace {
            clock.advance(Duration::from_nanos(step));
            let text = key_text(k);
            let key = ShortKey::new(&text).unwrap();
            let a = short.try_acquire_n(&key, permits);
            let b = string.try_acquire_n(text.as_str(), permits);
            prop_assert_eq!(a.is_ok(), b.is_ok(), "key {:?} at {}", text, clock.now());
            if let (Err(a), Err(b)) = (a, b) {
                prop_assert_eq!(a.retry_after(), b.retry_after());
            }
        }
        prop_assert_eq!(short.len(), string.len());
    }

    /// `ShortKey::new` keeps every string of at most 23 bytes whole and refuses the others;
    /// equal keys are equal strings.
    #[test]
    fn a_short_key_is_its_string(a in "\\PC{0,30}", b in "\\PC{0,30}") {
        match ShortKey::new(&a) {
            Ok(k) => {
                prop_assert!(a.len() <= ShortKey::MAX_LEN);
                prop_assert_eq!(k.as_str(), a.as_str());
                if let Ok(kb) = ShortKey::new(&b) {
                    prop_assert_eq!(k == kb, a == b);
                    prop_assert_eq!(k.cmp(&kb), a.cmp(&b));
                }
            }
            Err(e) => {
                prop_assert!(a.len() > ShortKey::MAX_LEN);
                prop_assert_eq!(e.len(), a.len());
            }
        }
    }
}

/// 30,000 keys in a table for 60,000: past the size at which segments grow (32-byte slots),
/// so each segment is rebuilt several times while its keys arrive; every key's first request
/// is granted and its second denied, so the probe found each key's one slot again.
#[test]
fn every_key_is_found_again_through_growth() {
    let clock = ManualClock::new();
    let keys: Keyed<ShortKey, Gcra, ManualClock> = table(1, 1, 60_000, clock);
    let n = 30_000u32;
    for i in 0..n {
        let key = ShortKey::new(&format!("user:{i:010}")).unwrap();
        assert!(keys.try_acquire(&key).is_ok(), "first request of {key}");
    }
    assert_eq!(keys.len(), n as usize);
    for i in 0..n {
        let key = ShortKey::new(&format!("user:{i:010}")).unwrap();
        assert!(keys.try_acquire(&key).is_err(), "second request of {key}");
    }
}

/// Four threads create the same 2,000 keys at once on a frozen clock (burst 2): each key is
/// granted exactly twice in all, never more (one state per key, whoever created it).
#[test]
fn racing_creators_share_one_state_per_key() {
    keyed_scenarios::racing_creators_share_one_state_per_key(
        table(1, 2, 4_000, ManualClock::new()),
        2_000,
        |keys, i| {
            keys.try_acquire(&ShortKey::new(&format!("k{i}")).unwrap())
                .is_ok()
        },
    );
}

/// At the capacity, idle keys make room for new ones, and a key evicted and created again
/// never gets more than its rate allows (30 clients asking every 30 ms, a table of 20 at 10
/// per second, burst 1).
#[test]
fn eviction_at_the_capacity_loses_no_admission() {
    let clock = ManualClock::new();
    keyed_scenarios::eviction_at_the_capacity_loses_no_admission(
        table(10, 1, 20, clock.clone()),
        &clock,
        |keys, i| {
            keys.try_acquire(&ShortKey::new(&format!("client-{i}")).unwrap())
                .is_ok()
        },
    );
}
