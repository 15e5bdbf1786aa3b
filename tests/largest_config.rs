//! Issue 14: every limiter built with the largest values its builder takes answers with a
//! `ConfigError` (naming the field, and the bytes where memory is the reason) or a limiter
//! that works on its clock: never an abort, never a limiter that can admit nothing.

use std::time::Duration;

use hotlimit::{
    Gcra, IntKeyed, KeyPool, Keyed, Limiter, ManualClock, Pacer, Rate, ShardedGcra, SlidingLog,
    SlidingWindow,
};

/// One permit per ~584 years: the longest period a `Rate` takes.
fn longest_period() -> Rate {
    Rate::new(1, Duration::from_nanos(u64::MAX)).unwrap()
}

/// The most permits per the longest period.
fn largest_rate() -> Rate {
    Rate::new(u64::MAX, Duration::from_nanos(u64::MAX)).unwrap()
}

#[test]
fn gcra_family_refuses_an_interval_no_clock_can_charge() {
    for e in [
        Gcra::builder(longest_period())
            .build()
            .map(drop)
            .unwrap_err(),
        ShardedGcra::builder(longest_period())
            .build()
            .map(drop)
            .unwrap_err(),
        Pacer::builder(longest_period())
            .build()
            .map(drop)
            .unwrap_err(),
        IntKeyed::<u64>::builder(longest_period())
            .build()
            .map(drop)
            .unwrap_err(),
        Keyed::<u64, Gcra>::gcra(longest_period())
            .build()
            .map(drop)
            .unwrap_err(),
    ] {
        assert_eq!(e.field(), "rate", "{e}");
        assert!(e.to_string().contains("2^62"), "{e}");
    }
    // The largest rate and burst work, on the default clock.
    let g = Gcra::builder(largest_rate())
        .burst(u64::MAX)
        .build()
        .unwrap();
    assert!(g.try_acquire_n(u32::MAX).is_ok());
    let p = Pacer::builder(largest_rate()).build().unwrap();
    let _ = p;
}

#[test]
fn sharded_gcra_bounds_its_shards() {
    let e = ShardedGcra::builder(largest_rate())
        .shards(usize::MAX)
        .build()
        .unwrap_err();
    assert_eq!(e.field(), "shards");
    let e = ShardedGcra::builder(largest_rate())
        .shards(4097)
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid shards = 4097: must be at most 4096 (each shard is a cache line)"
    );
    let g = ShardedGcra::builder(Rate::per_second(1 << 20).unwrap())
        .shards(4096)
        .build()
        .unwrap();
    assert!(g.try_acquire().is_ok());
}

#[test]
fn sliding_log_checks_its_ring_against_the_budget() {
    // The hard bound (2^28 slots) is named as before.
    let e = SlidingLog::builder(Rate::per_second(u64::MAX).unwrap())
        .max_memory(usize::MAX)
        .build()
        .unwrap_err();
    assert_eq!(e.field(), "limit");
    // 2^28 slots are 2 GiB: over the default budget of 1 GiB, refused before allocating.
    let e = SlidingLog::builder(Rate::per_second(SlidingLog::MAX_LIMIT).unwrap())
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid limit = 268435456 (needs 2147483648 bytes, over max_memory = 1073741824 \
         bytes): lower it, or raise the builder's max_memory"
    );
    // The largest limit a budget takes is built, one more is refused.
    let with_budget = |limit: u64| {
        SlidingLog::builder(Rate::per_second(limit).unwrap())
            .max_memory(8 << 20)
            .clock(ManualClock::new())
            .build()
    };
    assert!(with_budget(1 << 20).is_ok());
    assert_eq!(with_budget((1 << 20) + 1).unwrap_err().field(), "limit");
    // The longest period works: the first permit is granted on the default clock.
    let log = SlidingLog::builder(longest_period()).build().unwrap();
    assert!(log.try_acquire().is_ok());
    assert!(log.try_acquire().is_err());
}

#[test]
fn sliding_window_largest_settings_build_and_work() {
    // Buckets and closed-bucket entries have hard bounds (65,536 and 2^20): about 17 MiB at
    // most, so no budget is needed.
    let w = SlidingWindow::builder(Rate::per_second(1 << 20).unwrap())
        .buckets(65_536)
        .count_closed(1)
        .build()
        .unwrap();
    assert!(w.try_acquire().is_ok());
    assert_eq!(
        SlidingWindow::builder(Rate::per_second(1).unwrap())
            .buckets(usize::MAX)
            .build()
            .unwrap_err()
            .field(),
        "buckets"
    );
    assert_eq!(
        SlidingWindow::builder(largest_rate())
            .build()
            .unwrap_err()
            .field(),
        "limit"
    );
    let w = SlidingWindow::builder(longest_period())
        .buckets(65_536)
        .build()
        .unwrap();
    assert!(w.try_acquire().is_ok());
    assert!(w.try_acquire().is_err());
}

#[test]
fn key_pool_largest_settings_are_errors_not_aborts() {
    let e = KeyPool::builder(vec![1u8, 2], Rate::per_second(u64::MAX).unwrap())
        .build()
        .unwrap_err();
    assert_eq!(e.field(), "max_uses");
    let e = KeyPool::builder(vec![1u8, 2], Rate::per_second(1 << 28).unwrap())
        .build()
        .unwrap_err();
    assert_eq!(e.field(), "keys");
    let e = KeyPool::builder(vec![1u8; 1 << 12], Rate::per_second(1 << 30).unwrap())
        .buckets(65_536)
        .build()
        .unwrap_err();
    assert_eq!(e.field(), "keys");
    let pool = KeyPool::builder(vec![1u8], longest_period())
        .build()
        .unwrap();
    assert!(pool.try_next_key().is_ok());
    assert!(pool.try_next_key().is_err());
}

#[test]
fn int_keyed_refuses_a_table_over_the_budget() {
    // Accepted (MAX_CAPACITY) and then `memory allocation of 68719476736 bytes failed`, an
    // abort, before the budget. (The dense layout has since made that table 44,546,390,272
    // bytes: 631,612,838 primary buckets and 64,424,510 secondary ones of 64 bytes.)
    let e = IntKeyed::<u64>::builder(Rate::per_second(1).unwrap())
        .capacity(IntKeyed::<u64>::MAX_CAPACITY)
        .build()
        .unwrap_err();
    assert_eq!(e.field(), "capacity");
    assert!(e.to_string().contains("needs 44546390272 bytes"), "{e}");
    let e = IntKeyed::<u64>::builder(Rate::per_second(1).unwrap())
        .capacity(usize::MAX)
        .build()
        .unwrap_err();
    assert_eq!(e.field(), "capacity");
    // The largest capacity the default budget takes (1 GiB: 15,224,334 primary and 1,552,882
    // secondary buckets of 64 bytes, 2^24 in all).
    let k = IntKeyed::<u64>::builder(Rate::per_second(1).unwrap())
        .capacity(51_762_733)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    assert!(k.try_acquire_at(7, 0).is_ok());
    drop(k);
    let e = IntKeyed::<u64>::builder(Rate::per_second(1).unwrap())
        .capacity(51_762_734)
        .build()
        .unwrap_err();
    assert_eq!(e.field(), "capacity");
}

#[test]
fn keyed_checks_capacity_times_a_key_against_the_budget() {
    // Accepted before, then ~77 MiB and 37 ms allocated on the request path per new key.
    let e = Keyed::<u64, SlidingLog>::sliding_log(Rate::per_second(10_000_000).unwrap())
        .build()
        .unwrap_err();
    assert_eq!(e.field(), "capacity");
    assert!(e.to_string().contains("over max_memory"), "{e}");
    let e = Keyed::<u64, Gcra>::gcra(Rate::per_second(1).unwrap())
        .capacity(usize::MAX)
        .build()
        .unwrap_err();
    assert_eq!(e.field(), "capacity");
    let e = Keyed::<u64, SlidingWindow>::sliding_window(Rate::per_second(1).unwrap())
        .buckets(65_536)
        .capacity(1 << 20)
        .build()
        .unwrap_err();
    assert_eq!(e.field(), "capacity");
    // A rate change that would not fit is refused the same way, and changes nothing.
    let k: Keyed<u64, SlidingLog, ManualClock> = Keyed::sliding_log(Rate::per_second(10).unwrap())
        .capacity(1_000)
        .max_memory(1 << 20)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let big = Rate::per_second(1_000_000).unwrap();
    assert_eq!(k.set_rate(1, big).unwrap_err().field(), "limit");
    assert_eq!(k.set_default_rate(big).unwrap_err().field(), "limit");
    assert_eq!(k.overrides(), 0);
    assert!(k.try_acquire_n_at(&1, 10, 0).is_ok());
    assert!(k.try_acquire_n_at(&1, 11, 0).unwrap_err().is_never());
    // The longest period works per key.
    let k = Keyed::<u64, SlidingLog>::sliding_log(longest_period())
        .build()
        .unwrap();
    assert!(k.try_acquire(&1).is_ok());
    assert!(k.try_acquire(&1).is_err());
    let k = Keyed::<u64, SlidingWindow>::sliding_window(longest_period())
        .build()
        .unwrap();
    assert!(k.try_acquire(&1).is_ok());
    assert!(k.try_acquire(&1).is_err());
}
