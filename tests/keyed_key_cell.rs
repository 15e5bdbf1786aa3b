//! The inline table's key cell, the crate's one `unsafe`: keys written once by a slot's
//! creator, read by probes after a load of the slot's word, copied by rebuilds (compaction,
//! growth, a default-rate change) and dropped with their segment. Every path that touches a
//! key, with `String` keys (kept as `StrKey`s: a short key in the slot, a long one boxed) and
//! `u64` keys, in tables whose segments grow and tables whose segments do not, checked for
//! exact decisions here and, under Miri, for undefined behaviour and leaks:
//!
//! ```text
//! cargo +nightly miri test --test keyed_key_cell
//! ```
//!
//! (Miri needs a nightly toolchain with its component, which CI does not have: CI runs these
//! tests natively; CONTRIBUTING.md says when to run them under Miri.)

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use hotlimit::{Clock, Gcra, Keyed, ManualClock, Rate};

/// Fewer keys under Miri, which interprets every instruction.
const KEYS: u32 = if cfg!(miri) { 120 } else { 2_000 };

/// One per second, burst 1, on a `ManualClock`, for at most `capacity` keys.
fn table<K: std::hash::Hash + Eq + Clone + 'static>(
    capacity: usize,
) -> Keyed<K, Gcra, ManualClock> {
    Keyed::gcra(Rate::per_second(1).unwrap())
        .burst(1)
        .capacity(capacity)
        .clock(ManualClock::new())
        .build()
        .unwrap()
}

/// Every key's first request is granted and its second, at the same time, denied: the probe
/// found each key's one slot again, through its segment's growth (`u64` and `String` keys in
/// tables of 60,000, past the size at which segments grow: each segment grown from 64 slots
/// once it holds 48 keys) and without it (both in a small table).
#[test]
fn every_key_is_found_again_with_and_without_growth() {
    let growing_keys: u32 = if cfg!(miri) { 4_000 } else { 30_000 };
    let strings: Keyed<String, Gcra, ManualClock> = table(KEYS as usize);
    let small: Keyed<u64, Gcra, ManualClock> = table(KEYS as usize);
    let growing: Keyed<u64, Gcra, ManualClock> = table(60_000);
    // `String` segments grow too (short keys copied; a segment that holds a long key goes to
    // its full length at once).
    let growing_strings: Keyed<String, Gcra, ManualClock> = table(60_000);
    let string_key = |i: u32| {
        if i.is_multiple_of(3) {
            format!("a-token-longer-than-23-bytes-{i}")
        } else {
            format!("user:{i}")
        }
    };
    for i in 0..KEYS {
        assert!(strings.try_acquire(format!("client-{i}").as_str()).is_ok());
        assert!(small.try_acquire(&u64::from(i)).is_ok());
    }
    for i in 0..growing_keys {
        assert!(growing.try_acquire(&u64::from(i)).is_ok());
        assert!(growing_strings.try_acquire(string_key(i).as_str()).is_ok());
    }
    assert_eq!(strings.len(), KEYS as usize);
    assert_eq!(small.len(), KEYS as usize);
    assert_eq!(growing.len(), growing_keys as usize);
    for i in 0..KEYS {
        assert!(strings.try_acquire(format!("client-{i}").as_str()).is_err());
        assert!(small.try_acquire(&u64::from(i)).is_err());
    }
    for i in 0..growing_keys {
        assert!(growing.try_acquire(&u64::from(i)).is_err());
        assert!(growing_strings.try_acquire(&string_key(i)).is_err());
    }
    assert_eq!(growing_strings.len(), growing_keys as usize);
}

/// A full table of `String` keys, short and long, churned for several capacities' worth of new
/// keys: sweeps evict idle keys (DEAD slots), rebuilds compact the segments and copy the live
/// keys, and the table's drop frees every key once (Miri reports a leak or a double free).
#[test]
fn churned_string_keys_are_cloned_and_dropped_once() {
    let capacity = 32;
    let keyed: Keyed<String, Gcra, ManualClock> = table(capacity);
    let rounds = if cfg!(miri) { 4 } else { 40 };
    for round in 0..rounds {
        for i in 0..capacity {
            // Short keys sit in their slots, long ones (past 23 bytes) on the heap.
            let key = if i.is_multiple_of(2) {
                format!("round-{round}-key-{i}")
            } else {
                format!("round-{round}-a-key-too-long-for-its-slot-{i}")
            };
            assert!(keyed.try_acquire(key.as_str()).is_ok(), "{key}");
            assert!(keyed.try_acquire(key.as_str()).is_err(), "{key}");
        }
        // Everything idle past its horizon (a burst's worth of time after its last TAT): the
        // next round's keys evict this round's.
        keyed.clock().advance(Duration::from_secs(10));
    }
    assert!(keyed.len() <= capacity);
}

/// A default-rate change rebuilds every segment onto the new rate, cloning each key: the
/// keys are still found, and their states carried.
#[test]
fn a_rate_change_carries_every_key() {
    let keyed: Keyed<String, Gcra, ManualClock> = table(KEYS as usize);
    for i in 0..KEYS {
        assert!(keyed.try_acquire(format!("k{i}").as_str()).is_ok());
    }
    keyed
        .set_default_rate(Rate::per_second(2).unwrap())
        .unwrap();
    for i in 0..KEYS {
        // Granted at 0, one permit a second before, two now: still in debt until 0.5 s.
        assert!(keyed.try_acquire(format!("k{i}").as_str()).is_err());
    }
    keyed.clock().advance(Duration::from_millis(500));
    for i in 0..KEYS {
        assert!(keyed.try_acquire(format!("k{i}").as_str()).is_ok());
    }
}

/// Two threads create the same keys at once, while their segments grow: each key is granted
/// exactly once at a given time (one slot a key), and every key written on one thread is read
/// on the other.
#[test]
fn racing_creators_share_each_key() {
    let keys = if cfg!(miri) { 40 } else { 8_000 };
    // Past the size at which segments grow (60,000 keys of capacity): the creators race the
    // growths their keys start, once a segment holds 48 keys (about 3,400 keys in all; not
    // reached under Miri).
    let ints: Arc<Keyed<u64, Gcra, ManualClock>> = Arc::new(table(60_000));
    let strings: Arc<Keyed<String, Gcra, ManualClock>> = Arc::new(table(keys as usize));
    let run = {
        let (ints, strings) = (ints.clone(), strings.clone());
        move || {
            let mut granted = 0;
            for i in 0..keys {
                granted += u32::from(ints.try_acquire(&u64::from(i)).is_ok());
                granted += u32::from(strings.try_acquire(format!("s{i}").as_str()).is_ok());
            }
            granted
        }
    };
    let other = thread::spawn(run.clone());
    let granted = run() + other.join().unwrap();
    assert_eq!(granted, 2 * keys, "each key granted once in all");
    assert_eq!(ints.len(), keys as usize);
    assert_eq!(strings.len(), keys as usize);
    assert_eq!(ints.clock().now(), 0);
}
