//! `Keyed<String>`'s table keeps a key of at most 23 bytes in the slot itself and a longer one
//! boxed (`StrKey`), and its segments grow with their keys in tables past 1 MiB. Checked here
//! from the outside, with keys on both sides of 23 bytes (and of many UTF-8 shapes): every
//! decision against one `Gcra` per key on the same trace, looked up by `&str` and by
//! `&String`; every key found again through growth; racing creators of the same keys; a
//! default-rate change (which rebuilds every segment); eviction at the capacity; and, with a
//! counting allocator, that short keys take no heap memory of their own and that every key's
//! memory is freed once (churn, growth, rate changes, drop).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use hotlimit::{Clock, Gcra, ManualClock, Rate};
use proptest::prelude::*;

mod keyed_scenarios;

use keyed_scenarios::{table, Table};

/// The heap of the threads that set `TRACKED`: bytes they allocated and did not free yet.
/// Per thread, so that the test harness and the other tests, running on their own threads,
/// do not count.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

std::thread_local! {
    /// Whether this thread's allocations count in `LIVE`.
    static TRACKED: Cell<bool> = const { Cell::new(false) };
}

fn tracked() -> bool {
    // `try_with`: an allocation while the thread's locals are torn down does not count.
    TRACKED.try_with(Cell::get).unwrap_or(false)
}

// SAFETY: every call is forwarded to `System` unchanged; the counter is a side record.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if tracked() {
            // Relaxed: a statistic, read on the one thread that counts.
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if tracked() {
            // Relaxed: as above.
            LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static HEAP: Counting = Counting;

/// Key `i` of a trace: lengths from 0 to 40 bytes, ASCII and multi-byte, some one byte
/// either side of 23.
fn key_text(i: u8) -> String {
    match i % 6 {
        0 => format!("u{i}"),
        1 => format!("user:{i:010}"),
        2 => "x".repeat(usize::from(i % 41)),
        3 => format!("{}{}", "é".repeat(11), i % 3), // 23 bytes
        4 => format!("{}-{i:03}", "y".repeat(20)),   // 24 bytes
        _ => format!("tenant/{i}/a-rather-long-route-name"),
    }
}

/// Key `i` of the larger tests: short ids and 40-byte tokens, alternately.
fn big_key(i: u32) -> String {
    if i.is_multiple_of(2) {
        format!("user:{i:010}")
    } else {
        format!("token-{i:034}")
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// On one trace of (key, permits, time step), the table decides as one `Gcra` per key,
    /// with the same `retry_after`, whether the key is passed as `&str` or `&String`.
    #[test]
    fn decides_as_one_gcra_per_key(
        trace in proptest::collection::vec((0u8..60, 1u32..4, 0u64..400_000_000, any::<bool>()), 1..300),
    ) {
            let clock = ManualClock::new();
        let keyed: Table<String> = table(5, 3, 128, clock.clone());
        let mut model: HashMap<String, Gcra<ManualClock>> = HashMap::new();
        for (k, permits, step, by_string) in trace {
            clock.advance(Duration::from_nanos(step));
            let text = key_text(k);
            let reference = model.entry(text.clone()).or_insert_with(|| {
                Gcra::builder(Rate::per_second(5).unwrap())
                    .burst(3)
                    .clock(clock.clone())
                    .build()
                    .unwrap()
            });
            let want = reference.try_acquire_n_at(permits, clock.now());
            let got = if by_string {
                keyed.try_acquire_n(&text, permits)
            } else {
                keyed.try_acquire_n(text.as_str(), permits)
            };
            prop_assert_eq!(got.is_ok(), want.is_ok(), "key {:?} at {}", text, clock.now());
            if let (Err(a), Err(b)) = (got, want) {
                prop_assert_eq!(a.retry_after(), b.retry_after());
            }
        }
        prop_assert_eq!(keyed.len(), model.len());
    }
}

/// 30,000 keys, half short and half 40-byte tokens, in a table for 60,000: past the size at
/// which segments grow, so each segment is rebuilt several times as its keys arrive (short
/// keys copied, long ones cloned); every key's first request is granted and its second
/// denied, and `remaining` reads each key's own state.
#[test]
fn every_key_is_found_again_through_growth() {
    let keyed: Table<String> = table(1, 1, 60_000, ManualClock::new());
    let n = 30_000u32;
    for i in 0..n {
        assert!(
            keyed.try_acquire(big_key(i).as_str()).is_ok(),
            "first request of {}",
            big_key(i)
        );
    }
    assert_eq!(keyed.len(), n as usize);
    for i in 0..n {
        let key = big_key(i);
        assert!(keyed.try_acquire(&key).is_err(), "second request of {key}");
        assert_eq!(keyed.remaining(key.as_str()), 0);
    }
    assert_eq!(keyed.remaining("user:never-seen"), 1);
}

/// Four threads create the same 3,000 keys (short and long) at once on a frozen clock, burst
/// 2, in a growing table: each key is granted exactly twice in all (one state per key).
#[test]
fn racing_creators_share_one_state_per_key() {
    keyed_scenarios::racing_creators_share_one_state_per_key(
        table(1, 2, 60_000, ManualClock::new()),
        3_000,
        |keyed, i| keyed.try_acquire(big_key(i).as_str()).is_ok(),
    );
}

/// A default-rate change rebuilds every segment (each key copied or cloned onto the new
/// rate): every key is still found, with its state carried.
#[test]
fn a_rate_change_carries_short_and_long_keys() {
    let keyed: Table<String> = table(1, 1, 40_000, ManualClock::new());
    let n = 4_000u32;
    for i in 0..n {
        assert!(keyed.try_acquire(big_key(i).as_str()).is_ok());
    }
    keyed
        .set_default_rate(Rate::per_second(2).unwrap())
        .unwrap();
    for i in 0..n {
        // Granted at 0 at one a second; two a second now: in debt until 0.5 s.
        assert!(keyed.try_acquire(big_key(i).as_str()).is_err());
    }
    keyed.clock().advance(Duration::from_millis(500));
    for i in 0..n {
        assert!(keyed.try_acquire(big_key(i).as_str()).is_ok());
    }
}

/// At the capacity, idle keys make room for new ones, and no client is granted closer than
/// its interval, whether its key sits in the slot or on the heap: 30 clients asking every 30
/// ms share a table of 20 at 10 per second (burst 1).
#[test]
fn eviction_at_the_capacity_loses_no_admission() {
    let clock = ManualClock::new();
    keyed_scenarios::eviction_at_the_capacity_loses_no_admission(
        table(10, 1, 20, clock.clone()),
        &clock,
        |keyed, i| keyed.try_acquire(big_key(i).as_str()).is_ok(),
    );
}

/// Short keys live in their slots: 2,000 of them add no heap memory beyond the table's
/// segments (which a table of `u64` keys of the same capacity also allocates: its slots are
/// half the size), while 2,000 long keys add at least their bytes. And every key is freed
/// once: after churn through evictions, growth and a rate change, dropping the tables gives
/// back all the memory they took.
#[test]
fn short_keys_take_no_heap_and_every_key_is_freed() {
    // Only this thread counts from here (the test ends on this thread, with the tables).
    TRACKED.with(|t| t.set(true));
    // Relaxed (all loads of `LIVE`): only this thread writes it.
    let before = LIVE.load(Ordering::Relaxed);
    let clock = ManualClock::new();
    {
        let short: Table<String> = table(1, 1, 2_000, clock.clone());
        let empty = LIVE.load(Ordering::Relaxed);
        for i in 0..2_000u32 {
            assert!(short.try_acquire(format!("user:{i:010}").as_str()).is_ok());
        }
        let with_keys = LIVE.load(Ordering::Relaxed);
        // Segments of 32-byte slots, 1.4 per key of capacity: 2,000 keys, ~90 KB.
        let slots = (2_000.0 * 1.4 * 32.0) as isize;
        assert!(
            with_keys - empty <= slots + slots / 4,
            "2,000 short keys took {} bytes (slots: {slots})",
            with_keys - empty
        );

        let long: Table<String> = table(1, 1, 2_000, clock.clone());
        let empty = LIVE.load(Ordering::Relaxed);
        for i in 0..2_000u32 {
            assert!(long.try_acquire(format!("token-{i:034}").as_str()).is_ok());
        }
        let grew = LIVE.load(Ordering::Relaxed) - empty;
        assert!(
            grew >= slots + 2_000 * 40,
            "2,000 long keys took only {grew} bytes"
        );

        // Churn: both tables full, keys idle, then new keys evict them; a growing table
        // rebuilt by a rate change.
        for round in 0..5u32 {
            clock.advance(Duration::from_secs(10));
            for i in 0..2_000u32 {
                let _ = short.try_acquire(format!("r{round}-{i}").as_str());
                let _ = long.try_acquire(format!("round-{round}-token-{i:026}").as_str());
            }
        }
        let growing: Table<String> = table(1, 1, 60_000, clock.clone());
        for i in 0..20_000u32 {
            assert!(growing.try_acquire(big_key(i).as_str()).is_ok());
        }
        growing
            .set_default_rate(Rate::per_second(3).unwrap())
            .unwrap();
        assert!(growing.try_acquire(big_key(1).as_str()).is_err());
    }
    drop(clock);
    // Segments replaced by rebuilds are freed by the epoch collector once no guard can see
    // them, a few epochs later: lookups on a small table (each takes a guard) move it on.
    let mut after = LIVE.load(Ordering::Relaxed);
    for _ in 0..100 {
        if after <= before + 16 * 1024 {
            break;
        }
        let nudge: Table<String> = table(1, 1, 10, ManualClock::new());
        for _ in 0..10_000 {
            let _ = nudge.try_acquire("nudge");
        }
        drop(nudge);
        after = LIVE.load(Ordering::Relaxed);
    }
    assert!(
        after <= before + 16 * 1024,
        "{} bytes still allocated after every table was dropped",
        after - before
    );
}
