//! Every constructor's error cases: a `ConfigError` naming the field and the value, never a
//! panic, never a silent clamp.

use std::time::Duration;

use hotlimit::{ConfigError, Gcra, ManualClock, Rate, ShardedGcra};

fn gcra(rate: Rate, burst: Option<u64>) -> Result<Gcra<ManualClock>, ConfigError> {
    let b = Gcra::builder(rate).clock(ManualClock::new());
    match burst {
        Some(burst) => b.burst(burst).build(),
        None => b.build(),
    }
}

#[test]
fn rate_errors_name_field_and_value() {
    let e = Rate::new(0, Duration::from_secs(1)).unwrap_err();
    assert_eq!(
        (e.field(), e.to_string().as_str()),
        ("limit", "invalid limit = 0: must be at least 1")
    );
    let e = Rate::new(1, Duration::ZERO).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid period = 0 ns: must be at least 1 ns"
    );
    let e = Rate::new(1, Duration::MAX).unwrap_err();
    assert_eq!(e.field(), "period");
    assert!(
        e.to_string().contains("18446744073709551615999999999 ns"),
        "{e}"
    );
    assert!(Rate::new(1, Duration::from_nanos(u64::MAX)).is_ok());
    assert!(Rate::new(1, Duration::from_nanos(u64::MAX) + Duration::from_nanos(1)).is_err());
    for f in [Rate::per_second, Rate::per_minute, Rate::per_hour] {
        assert_eq!(f(0).unwrap_err().field(), "limit");
        assert!(f(u64::MAX).is_ok());
    }
}

#[test]
fn gcra_errors_name_field_and_value() {
    // Emission interval under 1 ns.
    let e = gcra(Rate::new(11, Duration::from_nanos(10)).unwrap(), None).unwrap_err();
    assert_eq!(e.field(), "rate");
    assert_eq!(
        e.to_string(),
        "invalid rate = 11 per 10 ns: emission interval period/limit is under 1 ns"
    );
    assert!(gcra(Rate::new(10, Duration::from_nanos(10)).unwrap(), None).is_ok());
    // Burst 0.
    let e = gcra(Rate::per_second(1).unwrap(), Some(0)).unwrap_err();
    assert_eq!(e.to_string(), "invalid burst = 0: must be at least 1");
    // b·I overflows u64.
    let e = gcra(Rate::per_second(1).unwrap(), Some(u64::MAX)).unwrap_err();
    assert_eq!(e.field(), "burst");
    assert!(
        e.to_string().contains("18446744073709551615") && e.to_string().contains("overflows"),
        "{e}"
    );
    let max_burst = u64::MAX / 1_000_000_000;
    assert!(gcra(Rate::per_second(1).unwrap(), Some(max_burst)).is_ok());
    assert!(gcra(Rate::per_second(1).unwrap(), Some(max_burst + 1)).is_err());
    // A huge limit over a long period: default burst = limit must fit too.
    assert!(gcra(
        Rate::new(u64::MAX, Duration::from_nanos(u64::MAX)).unwrap(),
        None
    )
    .is_ok());
    let e = gcra(
        Rate::new(u64::MAX / 2, Duration::from_nanos(u64::MAX)).unwrap(),
        None,
    )
    .unwrap_err();
    assert_eq!(e.field(), "burst", "I = 3 ns, b·I overflows");
}

#[test]
fn errors_are_std_errors() {
    fn takes(_: &dyn std::error::Error) {}
    takes(&Rate::per_second(0).unwrap_err());
    takes(&hotlimit::Denied::new(None));
}

#[test]
fn sliding_log_errors_name_field_and_value() {
    let build = |limit: u64| {
        hotlimit::SlidingLog::builder(Rate::new(limit, Duration::from_secs(1)).unwrap())
            .clock(ManualClock::new())
            .build()
    };
    assert!(build(1).is_ok());
    assert_eq!(hotlimit::SlidingLog::MAX_LIMIT, 1 << 28);
    let e = build((1 << 28) + 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid limit = 268435457: must be at most 2^28 = 268435456 (8 bytes each)"
    );
    // Far too large to allocate: an error, never an abort or a panic.
    let e = build(u64::MAX).unwrap_err();
    assert_eq!(e.field(), "limit");
    assert!(e.to_string().contains("18446744073709551615"), "{e}");
    // Any period works, from 1 ns to u64::MAX ns.
    for period in [Duration::from_nanos(1), Duration::from_nanos(u64::MAX)] {
        assert!(hotlimit::SlidingLog::builder(Rate::new(3, period).unwrap())
            .clock(ManualClock::new())
            .build()
            .is_ok());
    }
}

#[test]
fn key_pool_errors_name_field_and_value() {
    let build = |keys: usize, max_uses: u64| {
        hotlimit::KeyPool::builder(
            vec![0u8; keys],
            Rate::new(max_uses, Duration::from_secs(600)).unwrap(),
        )
        .clock(ManualClock::new())
        .build()
    };
    let e = build(0, 500).unwrap_err();
    assert_eq!(
        (e.field(), e.to_string().as_str()),
        ("keys", "invalid keys = 0: must hold at least one key")
    );
    assert!(build(1, 1).is_ok());
    assert!(build(500, 500).is_ok());
    // max_uses alone too large.
    let e = build(1, u64::MAX).unwrap_err();
    assert_eq!(e.field(), "max_uses");
    assert!(e.to_string().contains("18446744073709551615"), "{e}");
    // keys × max_uses over 2^28 slots (a million keys × 500 uses is 5·10^8).
    let e = build(1_000_000, 500).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid keys = 1000000: keys × max_uses must be at most 2^28 = 268435456 slots \
         (8 bytes each)"
    );
    let e = build(2, 1 << 28).unwrap_err();
    assert_eq!(e.field(), "keys");
    // With per-key windows, a window's count (up to twice max_uses) must fit 32 bits.
    let windows = |max_uses: u64| {
        hotlimit::KeyPool::builder(
            vec![0u8; 2],
            Rate::new(max_uses, Duration::from_secs(600)).unwrap(),
        )
        .buckets(10)
        .clock(ManualClock::new())
        .build()
    };
    let e = windows(1 << 31).unwrap_err();
    assert_eq!(e.field(), "max_uses");
    assert!(e
        .to_string()
        .starts_with("invalid max_uses = 2147483648: must be at most 2147483647"));
    assert!(windows((1 << 31) - 1).is_ok());
}

fn sharded(
    rate: Rate,
    burst: Option<u64>,
    shards: Option<usize>,
) -> Result<ShardedGcra<ManualClock>, ConfigError> {
    let mut b = ShardedGcra::builder(rate).clock(ManualClock::new());
    if let Some(burst) = burst {
        b = b.burst(burst);
    }
    if let Some(shards) = shards {
        b = b.shards(shards);
    }
    b.build()
}

#[test]
fn sharded_errors_name_field_and_value() {
    let per_sec = |n| Rate::per_second(n).unwrap();
    // As Gcra: interval under 1 ns, burst 0, b·I overflowing.
    let e = sharded(Rate::new(11, Duration::from_nanos(10)).unwrap(), None, None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid rate = 11 per 10 ns: emission interval period/limit is under 1 ns"
    );
    let e = sharded(per_sec(1), Some(0), None).unwrap_err();
    assert_eq!(e.to_string(), "invalid burst = 0: must be at least 1");
    let e = sharded(per_sec(1), Some(u64::MAX), Some(1)).unwrap_err();
    assert_eq!(e.field(), "burst");
    assert!(e.to_string().contains("overflows"), "{e}");
    // Zero shards; more shards than the limit or the burst (explicit: never a silent clamp).
    let e = sharded(per_sec(10), None, Some(0)).unwrap_err();
    assert_eq!(e.to_string(), "invalid shards = 0: must be at least 1");
    let e = sharded(per_sec(3), None, Some(4)).unwrap_err();
    assert_eq!(e.field(), "shards");
    assert!(
        e.to_string().starts_with("invalid shards = 4: more shards"),
        "{e}"
    );
    assert_eq!(
        sharded(per_sec(100), Some(3), Some(4)).unwrap_err().field(),
        "shards"
    );
    assert!(sharded(per_sec(4), Some(4), Some(4)).is_ok());
    let e = sharded(per_sec(4), Some(4), Some(usize::MAX)).unwrap_err();
    assert!(e.to_string().contains(&usize::MAX.to_string()), "{e}");
    // A shard's interval ⌈I·limit/l_k⌉ past u64: 999 shards, l_k = 1, I·1000 > u64::MAX.
    let huge = Rate::new(1000, Duration::from_nanos(u64::MAX)).unwrap();
    let e = sharded(huge, Some(999), Some(999)).unwrap_err();
    assert_eq!(e.field(), "shards");
    assert!(e.to_string().contains("interval"), "{e}");
    assert!(sharded(huge, Some(999), Some(1)).is_ok());
    // A shard's b_k·I_k past u64 while b·I fits: I = 2^61, b = 7 over 2 shards, b_0 = 4,
    // I_0 = 2·I = 2^62, so b_0·I_0 = 2^64.
    let rate = Rate::new(2, Duration::from_nanos(1 << 62)).unwrap();
    assert!(gcra(rate, Some(7)).is_ok());
    let e = sharded(rate, Some(7), Some(2)).unwrap_err();
    assert_eq!(e.field(), "burst");
    assert!(e.to_string().contains("a shard's burst"), "{e}");
    assert!(sharded(rate, Some(7), Some(1)).is_ok());
}

#[test]
fn sliding_window_errors_name_field_and_value() {
    use hotlimit::SlidingWindow;
    let build = |rate: Rate, buckets: usize| {
        SlidingWindow::builder(rate)
            .buckets(buckets)
            .clock(ManualClock::new())
            .build()
    };
    let e = build(Rate::per_second(1).unwrap(), 0).unwrap_err();
    assert_eq!(e.to_string(), "invalid buckets = 0: must be at least 1");
    // More buckets than nanoseconds in the period.
    let e = build(Rate::new(1, Duration::from_nanos(5)).unwrap(), 6).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid buckets = 6: more buckets than nanoseconds in the period"
    );
    assert!(build(Rate::new(1, Duration::from_nanos(5)).unwrap(), 5).is_ok());
    assert!(build(Rate::new(1, Duration::from_nanos(1)).unwrap(), 1).is_ok());
    // The ring is capped.
    let e = build(Rate::per_second(1).unwrap(), 65_537).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid buckets = 65537: must be at most 65536"
    );
    assert!(build(Rate::per_second(1).unwrap(), 65_536).is_ok());
    let e = build(Rate::per_second(1).unwrap(), usize::MAX).unwrap_err();
    assert_eq!(e.field(), "buckets");
    // A window's count (up to twice the limit) is packed into 32 bits.
    let e = build(Rate::per_second(1 << 31).unwrap(), 10).unwrap_err();
    assert_eq!(e.field(), "limit");
    assert!(e
        .to_string()
        .starts_with("invalid limit = 2147483648: must be at most 2147483647"));
    assert!(build(Rate::per_second((1 << 31) - 1).unwrap(), 10).is_ok());
    assert_eq!(
        build(Rate::per_second(u64::MAX).unwrap(), 10)
            .unwrap_err()
            .field(),
        "limit"
    );
    // The longest period and the approximate mode build too.
    let rate = Rate::new(3, Duration::from_nanos(u64::MAX)).unwrap();
    assert!(build(rate, 65_536).is_ok());
    let approx = SlidingWindow::builder(rate)
        .approximate()
        .clock(ManualClock::new())
        .build();
    assert!(approx.is_ok());
}

#[test]
fn keyed_errors_name_field_and_value() {
    use hotlimit::{Keyed, ManualClock};
    let e = Keyed::<u64, Gcra>::gcra(Rate::per_second(1).unwrap())
        .capacity(0)
        .clock(ManualClock::new())
        .build()
        .unwrap_err();
    assert_eq!(
        (e.field(), e.to_string().as_str()),
        ("capacity", "invalid capacity = 0: must be at least 1 key")
    );
    let e = Keyed::<u64, Gcra>::gcra(Rate::per_second(1).unwrap())
        .burst(0)
        .clock(ManualClock::new())
        .build()
        .unwrap_err();
    assert_eq!(e.field(), "burst");
    let e = Keyed::<u64, Gcra>::gcra(Rate::new(10, Duration::from_nanos(5)).unwrap())
        .clock(ManualClock::new())
        .build()
        .unwrap_err();
    assert_eq!(e.field(), "rate");
    let k: Keyed<u64, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(1).unwrap())
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let e = k
        .set_rate(1, Rate::new(10, Duration::from_nanos(5)).unwrap())
        .unwrap_err();
    assert_eq!(e.field(), "rate");
    assert!(k.is_empty(), "a rejected override leaves the key unchanged");
    let e = Keyed::<u64, hotlimit::SlidingLog>::sliding_log(Rate::per_second(1 << 29).unwrap())
        .clock(ManualClock::new())
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid limit = 536870912: must be at most 2^28 = 268435456 (8 bytes each)"
    );
}

#[test]
fn sliding_window_count_closed_errors_name_field_and_value() {
    use hotlimit::SlidingWindow;
    let build = |limit: u64, k: u64| {
        SlidingWindow::builder(Rate::per_second(limit).unwrap())
            .count_closed(k)
            .clock(ManualClock::new())
            .build()
    };
    let e = build(10, 0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid count_closed = 0: must be at least 1"
    );
    let e = build(10, 11).unwrap_err();
    assert_eq!(e.field(), "count_closed");
    assert!(e
        .to_string()
        .starts_with("invalid count_closed = 11: must be at most limit"));
    assert!(build(10, 10).is_ok());
    assert!(build(10, 1).is_ok());
    let e = SlidingWindow::builder(Rate::per_second(10).unwrap())
        .approximate()
        .count_closed(2)
        .clock(ManualClock::new())
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid count_closed = 2: cannot be combined with approximate mode"
    );
    // ⌊limit / k⌋ entries of 16 bytes, capped at 2^20.
    let e = build(1 << 21, 1).unwrap_err();
    assert_eq!(e.field(), "count_closed");
    assert!(e.to_string().contains("1048576"), "{e}");
    assert!(build(1 << 21, 2).is_ok());
    // The time-bucket checks still come first.
    let e = SlidingWindow::builder(Rate::per_second(10).unwrap())
        .buckets(0)
        .count_closed(0)
        .clock(ManualClock::new())
        .build()
        .unwrap_err();
    assert_eq!(e.field(), "buckets");
    // Times near u64::MAX: a closed bucket that would leave after the clock's range never
    // does, and nothing overflows or panics.
    let w = SlidingWindow::builder(Rate::new(3, Duration::from_nanos(1_000)).unwrap())
        .buckets(3)
        .count_closed(1)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    for t in [u64::MAX - 5_000, u64::MAX - 1, u64::MAX] {
        while w.try_acquire_at(t).is_ok() {}
        let _ = w.try_acquire_n_at(3, t);
    }
    let d = w.try_acquire_at(u64::MAX).unwrap_err();
    assert!(d.is_never(), "{d:?}");
}

#[test]
fn keyed_sliding_window_rate_changes_and_overrides_errors_name_field_and_value() {
    use hotlimit::{Keyed, ManualClock, SlidingWindow};
    let build = |rate: Rate, buckets: usize| {
        Keyed::<u64, SlidingWindow>::sliding_window(rate)
            .buckets(buckets)
            .clock(ManualClock::new())
            .build()
    };
    let e = build(Rate::per_second(1).unwrap(), 0).unwrap_err();
    assert_eq!(e.to_string(), "invalid buckets = 0: must be at least 1");
    let e = build(Rate::new(1, Duration::from_nanos(5)).unwrap(), 6).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid buckets = 6: more buckets than nanoseconds in the period"
    );
    let e = build(Rate::per_second(1).unwrap(), 70_000).unwrap_err();
    assert_eq!(e.field(), "buckets");
    let e = build(Rate::per_second(1 << 33).unwrap(), 10).unwrap_err();
    assert_eq!(e.field(), "limit");
    // A rate override or a new default the key's window cannot take: an error, and nothing
    // changes (10 buckets need a period of at least 10 ns).
    let k = build(Rate::per_second(1).unwrap(), 10).unwrap();
    k.try_acquire_at(&1, 0).unwrap();
    let tiny = Rate::new(1, Duration::from_nanos(9)).unwrap();
    assert_eq!(k.set_rate(1, tiny).unwrap_err().field(), "buckets");
    assert_eq!(k.set_default_rate(tiny).unwrap_err().field(), "buckets");
    assert_eq!(k.overrides(), 0);
    assert!(
        k.try_acquire_at(&1, 1).is_err(),
        "key 1 still on 1 per second"
    );
    // Extreme times never panic.
    for now in [u64::MAX, u64::MAX - 1, 0, u64::MAX / 2] {
        let _ = k.try_acquire_at(&2, now);
        let _ = k.evict_idle_at(now);
    }
    let k = build(Rate::new(3, Duration::from_nanos(10)).unwrap(), 10).unwrap();
    for now in [u64::MAX - 5, u64::MAX, 7] {
        let _ = k.try_acquire_n_at(&3, 3, now);
        k.set_default_rate(Rate::new(2, Duration::from_nanos(10)).unwrap())
            .unwrap();
        let _ = k.try_acquire_n_at(&3, 2, now);
        let _ = k.evict_idle_at(now);
    }
}

#[test]
fn keyed_overrides_beyond_capacity_are_an_error() {
    use hotlimit::{Keyed, ManualClock};
    let k: Keyed<u64, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(1).unwrap())
        .capacity(2)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let r = Rate::per_second(5).unwrap();
    k.set_rate(1, r).unwrap();
    k.set_rate(2, r).unwrap();
    let e = k.set_rate(3, r).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid overrides = 2: at most `capacity` keys may have a rate override (clear_rate one first)"
    );
    assert_eq!(k.overrides(), 2);
    // A bad default is reported like a bad override (GCRA: the rate's interval).
    let e = k
        .set_default_rate(Rate::new(10, Duration::from_nanos(5)).unwrap())
        .unwrap_err();
    assert_eq!(e.field(), "rate");
}

#[test]
fn invalid_shows_the_value_debug_text_and_cuts_long_ones_at_a_character() {
    let e = ConfigError::invalid("hops", 0_usize, "must be at least 1");
    assert_eq!(e.to_string(), "invalid hops = 0: must be at least 1");
    let e = ConfigError::invalid("deadline", Duration::ZERO, "must be more than zero");
    assert_eq!(
        e.to_string(),
        "invalid deadline = 0ns: must be more than zero"
    );
    // 46 bytes of Debug text fit whole: the quotes and 44 characters.
    let fits = "a".repeat(44);
    let e = ConfigError::invalid("name", fits.as_str(), "r");
    assert_eq!(e.to_string(), format!("invalid name = \"{fits}\": r"));
    // One more is cut, and marked.
    let long = "a".repeat(45);
    let e = ConfigError::invalid("name", long.as_str(), "r");
    assert_eq!(
        e.to_string(),
        format!("invalid name = \"{}…: r", "a".repeat(45))
    );
    // A cut never splits a character: 'é' is two bytes, the quote takes one, so the 46th byte
    // would be the first half of the 23rd 'é'.
    let e = ConfigError::invalid("name", "é".repeat(30).as_str(), "r");
    assert_eq!(
        e.to_string(),
        format!("invalid name = \"{}…: r", "é".repeat(22))
    );
    // Copy, comparable, and equal when made of equal parts.
    let copy = e;
    assert_eq!(copy, e);
    assert_ne!(e, ConfigError::invalid("name", "é", "r"));
}

proptest::proptest! {
    #[test]
    fn invalid_never_panics_and_keeps_a_prefix_of_the_debug_text(s in ".{0,80}") {
        let e = ConfigError::invalid("field", s.as_str(), "reason");
        let shown = e.to_string();
        let debug = format!("{s:?}");
        let value = shown
            .strip_prefix("invalid field = ")
            .and_then(|v| v.strip_suffix(": reason"))
            .unwrap();
        match value.strip_suffix('…') {
            Some(cut) if debug.len() > 46 => {
                proptest::prop_assert!(debug.starts_with(cut));
                proptest::prop_assert!(cut.len() <= 46 && cut.len() > 42, "{}", cut.len());
            }
            _ => proptest::prop_assert_eq!(value, debug),
        }
    }
}
