//! Pacer: the schedule on a ManualClock (spacing, falling behind with and without catch-up,
//! the start without a burst), and real threads with loose bounds (every call waits for its
//! own slot; no slot is handed out twice).

use std::time::Duration;

use hotlimit::{Clock, ManualClock, Pacer, Rate};

const MS: u64 = 1_000_000;

fn pacer(per_second: u64, catch_up: u64, clock: &ManualClock) -> Pacer<ManualClock> {
    Pacer::builder(Rate::per_second(per_second).unwrap())
        .catch_up(catch_up)
        .clock(clock.clone())
        .build()
        .unwrap()
}

#[test]
fn slots_are_one_interval_apart_from_the_start() {
    let clock = ManualClock::new();
    clock.advance(Duration::from_secs(3)); // the schedule starts at build time, not 0
    let p = pacer(100, 0, &clock);
    let ticks: Vec<_> = (0..4).map(|_| p.pace_blocking_with(&clock)).collect();
    let start = 3_000 * MS;
    for (k, t) in ticks.iter().enumerate() {
        assert_eq!(t.slot, start + k as u64 * 10 * MS);
        assert_eq!(t.now, t.slot, "a simulated sleeper wakes exactly on time");
        assert_eq!(t.lateness(), Duration::ZERO);
    }
}

#[test]
fn catch_up_does_not_open_with_a_burst() {
    let clock = ManualClock::new();
    let p = pacer(100, 5, &clock);
    let slots: Vec<u64> = (0..3).map(|_| p.next_slot_at(0).unwrap()).collect();
    assert_eq!(slots, [0, 10 * MS, 20 * MS]);
}

#[test]
fn falling_behind_without_catch_up_drops_missed_slots() {
    let clock = ManualClock::new();
    let p = pacer(100, 0, &clock);
    p.pace_blocking_with(&clock); // slot 0
    clock.advance(Duration::from_millis(55)); // slots at 10..50 ms were missed
    let t = p.pace_blocking_with(&clock);
    assert_eq!(t.slot, 55 * MS, "restarts from now");
    assert_eq!(p.pace_blocking_with(&clock).slot, 65 * MS);
}

#[test]
fn falling_behind_with_catch_up_hands_out_missed_slots_at_once() {
    let clock = ManualClock::new();
    let p = pacer(100, 3, &clock);
    p.pace_blocking_with(&clock); // slot 0
    clock.advance(Duration::from_millis(55));
    // Up to 3 missed slots are kept: the earliest kept is 55 − 30 = 25 ms, due at once.
    let late: Vec<_> = (0..4).map(|_| p.pace_blocking_with(&clock)).collect();
    let slots: Vec<u64> = late.iter().map(|t| t.slot).collect();
    assert_eq!(slots, [25 * MS, 35 * MS, 45 * MS, 55 * MS]);
    assert_eq!(late[0].lateness(), Duration::from_millis(30));
    assert!(
        late.iter().all(|t| t.now == 55 * MS),
        "no waiting while behind"
    );
    assert_eq!(p.pace_blocking_with(&clock).slot, 65 * MS);
}

#[test]
fn bad_config_names_the_field() {
    let clock = ManualClock::new();
    let err = Pacer::builder(Rate::new(10, Duration::from_nanos(5)).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "rate");
    let err = Pacer::builder(Rate::per_second(1).unwrap())
        .catch_up(u64::MAX / 2)
        .clock(clock)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "catch_up");
}

#[test]
fn end_of_the_clock_range_is_an_error_not_a_panic() {
    let clock = ManualClock::new();
    let p = pacer(1, 0, &clock);
    clock.set(Duration::from_nanos(u64::MAX - 10));
    assert!(p.next_slot_at(clock.now()).unwrap_err().is_never());
}

/// The waiting calls are infallible (a load generator's loop needs no `unwrap`): where the
/// algorithm says the clock's range is exhausted, `pace_blocking_with` and `pace_async` give the
/// last instant the clock can name, `u64::MAX`, after waiting for it, and never panic.
#[test]
fn end_of_the_clock_range_saturates_the_waiting_calls() {
    use std::future::{ready, Future};
    use std::task::{Context, Poll, Waker};

    let clock = ManualClock::new();
    let p = pacer(1, 0, &clock);
    clock.set(Duration::from_nanos(u64::MAX - 10));
    assert!(
        p.next_slot_at(clock.now()).is_err(),
        "the algorithm's answer"
    );
    let tick = p.pace_blocking_with(&clock);
    assert_eq!((tick.slot, tick.now), (u64::MAX, u64::MAX));
    assert_eq!(
        clock.now(),
        u64::MAX,
        "it waited (simulated) until the slot"
    );
    // Every later call: the same last instant, at once.
    assert_eq!(p.pace_blocking_with(&clock).slot, u64::MAX);

    let clock = ManualClock::new();
    let p = pacer(1, 0, &clock);
    clock.set(Duration::from_nanos(u64::MAX - 10));
    let sleep = |d| {
        clock.advance(d);
        ready(())
    };
    let mut cx = Context::from_waker(Waker::noop());
    let mut fut = std::pin::pin!(p.pace_async(sleep));
    let Poll::Ready(tick) = fut.as_mut().poll(&mut cx) else {
        panic!("a simulated timer resolves at once")
    };
    assert_eq!((tick.slot, tick.now), (u64::MAX, u64::MAX));
}

/// Real threads, real clock, loose bounds: 8 threads share 20,000/s. Each call returns at or
/// after its own slot; slots are distinct and at least one interval apart; the run spans at
/// least what the rate requires. Not a speed test.
#[test]
fn real_threads_share_one_schedule() {
    const THREADS: usize = 8;
    const EACH: usize = 40;
    let p = Pacer::new(Rate::per_second(20_000).unwrap()).unwrap();
    let interval = p.interval().as_nanos() as u64;
    let mut ticks: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..THREADS)
            .map(|_| s.spawn(|| (0..EACH).map(|_| p.pace_blocking()).collect::<Vec<_>>()))
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(ticks.len(), THREADS * EACH);
    assert!(
        ticks.iter().all(|t| t.now >= t.slot),
        "returned before its slot"
    );
    ticks.sort_unstable_by_key(|t| t.slot);
    for w in ticks.windows(2) {
        assert!(w[1].slot - w[0].slot >= interval, "slots too close: {w:?}");
    }
    let span = ticks.last().unwrap().now - ticks[0].slot;
    assert!(span >= (THREADS * EACH - 1) as u64 * interval);
}
