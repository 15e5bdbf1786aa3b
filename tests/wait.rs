//! Waiting: Gcra reservations (order, cancellation give-back, timeouts) on a ManualClock and
//! against the sequential model; the generic `LimiterExt` waiters and their async form; and a
//! real-time check with loose bounds (waiting happens; no permit lost or duplicated).

mod model;

use std::future::{pending, ready, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use hotlimit::{Clock, Denied, Gcra, Limiter, LimiterExt, ManualClock, Rate, Sleep};
use model::reservation::{audit, ModelReservation, ReservationModel};
use proptest::prelude::*;

const MS: u64 = 1_000_000;

/// `per_second` permits per second, burst `burst`, on a fresh ManualClock.
fn manual(per_second: u64, burst: u64) -> (Gcra<ManualClock>, ManualClock) {
    let clock = ManualClock::new();
    let g = Gcra::builder(Rate::per_second(per_second).unwrap())
        .burst(burst)
        .clock(clock.clone())
        .build()
        .unwrap();
    (g, clock)
}

#[test]
fn reservations_are_served_in_order_one_interval_apart() {
    let (g, _clock) = manual(10, 1); // I = 100 ms
    let slots: Vec<u64> = (0..5)
        .map(|_| g.reserve_n_at(1, 0, u64::MAX).unwrap().keep())
        .collect();
    assert_eq!(slots, [0, 100 * MS, 200 * MS, 300 * MS, 400 * MS]);
}

#[test]
fn reservations_use_the_burst_first_then_queue() {
    let (g, _clock) = manual(10, 3);
    let slots: Vec<u64> = [2, 1, 2, 1]
        .into_iter()
        .map(|n| g.reserve_n_at(n, 0, u64::MAX).unwrap().keep())
        .collect();
    // The burst of 3 is free at 0; then 2 more need 200 ms; then 1 more 100 ms later.
    assert_eq!(slots, [0, 0, 200 * MS, 300 * MS]);
}

#[test]
fn max_wait_bounds_the_reservation_and_retry_after_is_exact() {
    let (g, _clock) = manual(10, 1);
    g.reserve_n_at(1, 0, 0).unwrap().keep();
    g.reserve_n_at(1, 0, u64::MAX).unwrap().keep(); // ready at 100 ms
                                                    // The next would be ready at 200 ms: refused with a 150 ms cap, 50 ms short.
    let denied = g.reserve_n_at(1, 0, 150 * MS).unwrap_err();
    assert_eq!(denied.retry_after_nanos(), Some(200 * MS)); // when the permit comes free
    assert_eq!(
        denied.retry_after_within(Duration::from_millis(150)),
        Some(Duration::from_millis(50))
    );
    // Retrying exactly then with the same cap succeeds, and changes nothing before it did.
    let r = g.reserve_n_at(1, 50 * MS, 150 * MS).unwrap();
    assert_eq!(r.ready_at(), 200 * MS);
    r.keep();
}

#[test]
fn zero_wait_reservation_matches_try_acquire() {
    let (a, _) = manual(10, 2);
    let (b, _) = manual(10, 2);
    for (n, now) in [
        (1, 0),
        (1, 0),
        (1, 0),
        (2, 150 * MS),
        (1, 160 * MS),
        (1, 300 * MS),
    ] {
        let reserved = a.reserve_n_at(n, now, 0).map(|r| {
            assert_eq!(r.ready_at(), now);
            r.keep();
        });
        assert_eq!(reserved, b.try_acquire_n_at(n, now), "n={n} now={now}");
    }
}

#[test]
fn over_burst_is_never_and_zero_permits_hold_nothing() {
    let (g, _) = manual(10, 3);
    assert!(g.reserve_n_at(4, 0, u64::MAX).unwrap_err().is_never());
    let r = g.reserve_n_at(0, 5, 0).unwrap();
    assert_eq!(r.ready_at(), 5);
    assert!(!r.cancel()); // nothing to give back
    assert_eq!(g.remaining_at(0), 3);
}

#[test]
fn cancel_gives_back_only_the_last_in_line() {
    let (g, _) = manual(10, 1);
    let a = g.reserve_n_at(1, 0, u64::MAX).unwrap();
    let b = g.reserve_n_at(1, 0, u64::MAX).unwrap();
    let c = g.reserve_n_at(1, 0, u64::MAX).unwrap();
    assert!(
        !b.cancel(),
        "c came after b: b's slot must not be given back"
    );
    assert!(c.cancel(), "c is last: given back");
    // a is the last *live* one, but S is b's 200 ms, not a's 100 ms: b's slot (100 ms) was
    // lost, so a's (0) cannot be given back either without moving S under b's lost slot.
    assert!(!a.cancel());
    assert_eq!(
        g.reserve_n_at(1, 0, u64::MAX).unwrap().keep(),
        200 * MS,
        "the next slot comes after the two lost ones"
    );
}

#[test]
fn cancels_in_reverse_order_restore_everything() {
    let (g, _) = manual(10, 2);
    let rs: Vec<_> = (0..4)
        .map(|_| g.reserve_n_at(1, 0, u64::MAX).unwrap())
        .collect();
    assert_eq!(g.remaining_at(0), 0);
    for r in rs.into_iter().rev() {
        assert!(r.cancel());
    }
    assert_eq!(g.remaining_at(0), 2);
    assert_eq!(g.reserve_n_at(2, 0, 0).unwrap().keep(), 0);
}

#[test]
fn dropping_a_reservation_cancels_it() {
    let (g, _) = manual(10, 1);
    {
        let _r = g.reserve_n_at(1, 0, 0).unwrap();
        assert_eq!(g.remaining_at(0), 0);
    }
    assert_eq!(g.remaining_at(0), 1);
    // A kept one is not given back.
    g.reserve_n_at(1, 0, 0).unwrap().keep();
    assert_eq!(g.remaining_at(0), 0);
}

#[test]
fn cancel_after_time_passed_restores_the_state_at_reservation_time() {
    let (g, _) = manual(10, 1);
    g.reserve_n_at(1, 0, 0).unwrap().keep(); // S = 100 ms
                                             // At 500 ms the limiter is idle; a reservation makes S = 600 ms, its cancel restores
                                             // max(S, now) = 500 ms: exactly "as if never reserved" for any request at ≥ 500 ms.
    let r = g.reserve_n_at(1, 500 * MS, 0).unwrap();
    assert!(r.cancel());
    assert_eq!(g.remaining_at(500 * MS), 1);
    assert!(g.try_acquire_at(500 * MS).is_ok());
}

#[test]
fn blocking_acquire_on_a_manual_clock_waits_in_order() {
    let (g, clock) = manual(10, 2);
    let mut at = Vec::new();
    for n in [2, 1, 1, 2] {
        g.acquire_blocking_with(n, &clock).unwrap();
        at.push(clock.now());
    }
    assert_eq!(at, [0, 100 * MS, 200 * MS, 400 * MS]);
    assert!(g.acquire_blocking_with(3, &clock).unwrap_err().is_never());
}

#[test]
fn acquire_timeout_succeeds_at_the_deadline_and_fails_without_waiting() {
    let (g, clock) = manual(10, 1);
    g.acquire_blocking_with(1, &clock).unwrap();
    // The next permit is exactly 100 ms away: a 100 ms timeout is enough.
    g.acquire_blocking_timeout_with(1, Duration::from_millis(100), &clock)
        .unwrap();
    assert_eq!(clock.now(), 100 * MS);
    // 99 ms is not: refused at once, clock untouched, nothing taken.
    let denied = g
        .acquire_blocking_timeout_with(1, Duration::from_millis(99), &clock)
        .unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_millis(100)));
    assert_eq!(
        denied.retry_after_within(Duration::from_millis(99)),
        Some(Duration::from_millis(1))
    );
    assert_eq!(clock.now(), 100 * MS);
    assert_eq!(
        g.reserve_n_at(1, 100 * MS, u64::MAX).unwrap().keep(),
        200 * MS
    );
}

/// A limiter that is not a Gcra: denies until `open_at`, then grants everything, counting.
struct Gate {
    clock: ManualClock,
    open_at: u64,
    granted: AtomicU64,
}

impl Limiter for Gate {
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        if permits > 100 {
            return Err(Denied::new(None));
        }
        let now = self.clock.now();
        if now < self.open_at {
            return Err(Denied::new(Some(Duration::from_nanos(self.open_at - now))));
        }
        self.granted
            .fetch_add(u64::from(permits), Ordering::Relaxed);
        Ok(())
    }
}

fn gate(open_at: u64) -> Gate {
    Gate {
        clock: ManualClock::new(),
        open_at,
        granted: AtomicU64::new(0),
    }
}

#[test]
fn generic_acquire_waits_retry_after_then_retries() {
    let g = gate(70 * MS);
    g.acquire_blocking_with(3, &g.clock).unwrap();
    assert_eq!(g.clock.now(), 70 * MS);
    assert_eq!(g.granted.load(Ordering::Relaxed), 3);
    assert!(g
        .acquire_blocking_with(101, &g.clock)
        .unwrap_err()
        .is_never());
}

#[test]
fn generic_acquire_timeout() {
    let g = gate(70 * MS);
    let denied = g
        .acquire_blocking_timeout_with(1, Duration::from_millis(69), &g.clock)
        .unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_millis(70)));
    assert_eq!(g.clock.now(), 0, "failed without waiting");
    g.acquire_blocking_timeout_with(1, Duration::from_millis(70), &g.clock)
        .unwrap();
    assert_eq!(g.clock.now(), 70 * MS);
}

#[test]
fn generic_waiter_works_on_a_gcra_too() {
    let (g, clock) = manual(4, 1);
    for _ in 0..3 {
        LimiterExt::acquire_blocking_with(&g, 1, &clock).unwrap();
    }
    assert_eq!(clock.now(), 500 * MS);
}

#[test]
fn async_acquire_with_a_simulated_timer() {
    let (g, clock) = manual(4, 1);
    let mut cx = Context::from_waker(Waker::noop());
    let sleeps = AtomicU64::new(0);
    let sleep = |d: Duration| {
        sleeps.fetch_add(1, Ordering::Relaxed);
        clock.advance(d);
        ready(())
    };
    for _ in 0..3 {
        let mut fut = pin!(LimiterExt::acquire_async(&g, 1, sleep));
        assert_eq!(fut.as_mut().poll(&mut cx), Poll::Ready(Ok(())));
    }
    assert_eq!(clock.now(), 500 * MS);
    assert_eq!(sleeps.load(Ordering::Relaxed), 2);
    let mut never = pin!(LimiterExt::acquire_async(&g, 2, sleep));
    assert!(matches!(never.as_mut().poll(&mut cx), Poll::Ready(Err(d)) if d.is_never()));
}

#[test]
fn dropping_a_pending_async_acquire_leaks_nothing() {
    let g = gate(70 * MS);
    let mut cx = Context::from_waker(Waker::noop());
    let mut fut = Box::pin(g.acquire_async(5, |_| pending::<()>()));
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    drop(fut);
    assert_eq!(g.granted.load(Ordering::Relaxed), 0);
    // And on a Gcra: the capacity is all there after the drop.
    let (l, clock) = manual(10, 2);
    l.try_acquire_n(2).unwrap();
    let mut fut = Box::pin(LimiterExt::acquire_async(&l, 2, |_| pending::<()>()));
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    drop(fut);
    clock.advance(Duration::from_millis(200));
    assert_eq!(l.remaining(), 2);
}

#[test]
fn manual_clock_sleep_never_goes_backwards() {
    let clock = ManualClock::new();
    clock.advance(Duration::from_millis(5));
    clock.sleep_until(MS);
    assert_eq!(clock.now(), 5 * MS);
    clock.sleep(Duration::from_millis(1));
    assert_eq!(clock.now(), 6 * MS);
}

#[derive(Debug, Clone)]
enum Op {
    Reserve { n: u32, max_wait: u64 },
    TryAcquire { n: u32 },
    Cancel(usize),
    Keep(usize),
    Advance(u64),
}

fn op(interval: u64) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1..=4u32, 0..4 * interval).prop_map(|(n, max_wait)| Op::Reserve { n, max_wait }),
        1 => (1..=4u32).prop_map(|n| Op::TryAcquire { n }),
        3 => any::<usize>().prop_map(Op::Cancel),
        2 => any::<usize>().prop_map(Op::Keep),
        2 => (0..2 * interval).prop_map(Op::Advance),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3_000))]

    /// Every decision, ready time, retry time and give-back agrees with the sequential model,
    /// and the permits actually kept (counted at their ready time) never break the GCRA bound.
    #[test]
    fn reservations_match_the_model_and_keep_the_bound(
        burst in 1..=3u64,
        ops in prop::collection::vec(op(100), 1..60),
    ) {
        let clock = ManualClock::new();
        let g = Gcra::builder(Rate::new(1, Duration::from_nanos(100)).unwrap())
            .burst(burst)
            .clock(clock.clone())
            .build()
            .unwrap();
        let mut m = ReservationModel::new(1, 100, burst);
        let mut live: Vec<(hotlimit::Reservation<'_, ManualClock>, ModelReservation, u64)> =
            Vec::new();
        let mut grants: Vec<(u64, u64)> = Vec::new();
        for op in ops {
            let now = clock.now();
            match op {
                Op::Reserve { n, max_wait } => {
                    let real = g.reserve_n_at(n, now, max_wait);
                    let model = m.reserve(n, now, max_wait);
                    match (real, model) {
                        (Ok(r), Ok(mr)) => {
                            prop_assert_eq!(r.ready_at(), mr.ready_at);
                            prop_assert!(r.ready_at() <= now + max_wait);
                            live.push((r, mr, u64::from(n)));
                        }
                        (Err(d), Err(w)) => {
                            // The model's wait is this call's (from the end of `max_wait`);
                            // the denial says when the permits come free.
                            let within = d.retry_after_within(Duration::from_nanos(max_wait));
                            prop_assert_eq!(within.map(|d| d.as_nanos() as u64), w);
                            prop_assert_eq!(d.retry_after_nanos(), w.map(|w| w + max_wait));
                        }
                        (real, model) => prop_assert!(
                            false,
                            "real {:?} model {:?}", real.map(|r| r.ready_at()), model
                        ),
                    }
                }
                Op::TryAcquire { n } => {
                    let real = g.try_acquire_n_at(n, now);
                    let model = m.reserve(n, now, 0).map(|_| ());
                    prop_assert_eq!(real.map_err(|d| d.retry_after_nanos()), model);
                    if real.is_ok() {
                        grants.push((now, u64::from(n)));
                    }
                }
                Op::Cancel(i) if !live.is_empty() => {
                    let (r, mr, _) = live.remove(i % live.len());
                    prop_assert_eq!(r.cancel(), m.cancel(&mr));
                }
                Op::Keep(i) if !live.is_empty() => {
                    let (r, _, n) = live.remove(i % live.len());
                    grants.push((r.keep(), n));
                }
                Op::Cancel(_) | Op::Keep(_) => {}
                Op::Advance(d) => clock.advance(Duration::from_nanos(d)),
            }
        }
        for (r, _, n) in live.drain(..) {
            grants.push((r.keep(), n));
        }
        prop_assert_eq!(audit(&grants, burst, 100), Ok(()));
    }
}

/// Real threads and the real clock, loose bounds: every acquire returns, the permits granted
/// are exactly those asked for, and the waiting really happened (the run took at least as long
/// as the rate requires). Not a speed test.
#[test]
fn real_time_blocking_acquire_neither_loses_nor_duplicates() {
    const THREADS: u64 = 4;
    const EACH: u64 = 50;
    let rate_per_s = 20_000; // I = 50 µs
    let g = Gcra::builder(Rate::per_second(rate_per_s).unwrap())
        .burst(1)
        .build()
        .unwrap();
    let stamps: Vec<u64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                s.spawn(|| {
                    (0..EACH)
                        .map(|_| {
                            let r = g.reserve(Duration::from_secs(10)).unwrap();
                            let at = r.ready_at();
                            r.wait_blocking();
                            // Waiting happened: the clock has reached the slot.
                            assert!(g.clock().now() >= at);
                            at
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let mut slots = stamps;
    slots.sort_unstable();
    assert_eq!(slots.len() as u64, THREADS * EACH);
    // Burst 1: slots are distinct and at least I apart (no permit handed out twice).
    let interval = 1_000_000_000 / rate_per_s;
    for w in slots.windows(2) {
        assert!(
            w[1] - w[0] >= interval,
            "slots {} and {} too close",
            w[0],
            w[1]
        );
    }

    // The generic waiter on the same limiter: everyone is served, and the span of the run is
    // at least what the rate allows.
    let started = Instant::now();
    let done = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..EACH {
                    LimiterExt::acquire_blocking(&g, 1).unwrap();
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    assert_eq!(done.load(Ordering::Relaxed), THREADS * EACH);
    // Less 50 µs: the limiter's clock (quanta) and Instant may disagree by a few ppm.
    let least = Duration::from_nanos((THREADS * EACH - 1) * interval - 50_000);
    assert!(
        started.elapsed() >= least,
        "{:?} < {least:?}",
        started.elapsed()
    );
}

/// Eight real threads race reserve / cancel / keep on a frozen clock: the slots kept keep
/// the GCRA bound (audited over every interval), and the state afterwards covers every kept
/// permit.
#[test]
fn real_threads_racing_reserve_and_cancel_keep_the_bound() {
    const THREADS: u64 = 8;
    const EACH: u64 = if cfg!(miri) { 10 } else { 2_000 };
    let (g, _clock) = manual(1_000, 2); // I = 1 ms, burst 2: a double-booked slot shows
    let kept: Vec<(u64, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let g = &g;
                s.spawn(move || {
                    // Each thread holds up to three reservations and settles the oldest
                    // first, so its cancels are out of order and race with the others'.
                    let mut held = std::collections::VecDeque::new();
                    let mut kept = Vec::new();
                    for i in 0..EACH {
                        let n = 1 + ((t + i) % 2) as u32;
                        held.push_back((g.reserve_n_at(n, 0, u64::MAX).unwrap(), n));
                        if held.len() < 3 && i + 1 < EACH {
                            continue;
                        }
                        while held.len() > usize::from(i + 1 < EACH) * 2 {
                            let (r, n) = held.pop_front().unwrap();
                            if (t * 7 + i) % 3 == 0 {
                                let _ = r.cancel();
                            } else {
                                kept.push((r.keep(), u64::from(n)));
                            }
                        }
                    }
                    kept
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(!kept.is_empty());
    // The full audit in one pass. On a frozen clock at 0 every slot is a multiple of I, so
    // ⌊(g_j − g_i)/I⌋ = g_j/I − g_i/I and the bound P_j − P_(i−1) ≤ b + g_j/I − g_i/I over
    // all i ≤ j (P = prefix sums of permits) separates: keep the minimum of P_(i−1) − g_i/I.
    let mut sorted = kept.clone();
    sorted.sort_unstable();
    let interval = 1_000_000u64;
    let (mut prefix, mut least) = (0i128, i128::MAX);
    for &(at, n) in &sorted {
        assert_eq!(at % interval, 0, "slot {at} off the grid");
        let slot = i128::from(at / interval);
        least = least.min(prefix - slot);
        prefix += i128::from(n);
        assert!(prefix - slot - least <= 2, "over the bound at slot {at}");
    }
    // Every kept permit is accounted for: the next slot is no earlier than all kept permits'
    // worth of intervals (minus the burst) past 0.
    let total: u64 = kept.iter().map(|k| k.1).sum();
    let next = g.reserve_n_at(1, 0, u64::MAX).unwrap().keep();
    assert!(next >= (total - 2) * 1_000_000, "next {next} total {total}");
}

/// The adaptive sleeper (the default) never wakes early either, and its margin stays at most
/// the cap (the old fixed margin), whatever the machine's wake-up error.
#[test]
fn adaptive_precise_never_wakes_early_and_keeps_its_margin_bounded() {
    use hotlimit::Precise;
    let sleeper = Precise::new();
    assert!(sleeper.is_adaptive());
    for wait in [0u64, 1_000, 50_000, 300_000, 2_000_000, 300_000, 300_000] {
        let t0 = sleeper.now();
        sleeper.sleep(Duration::from_nanos(wait));
        assert!(sleeper.now() - t0 >= wait, "wait {wait} ns");
        let margin = sleeper.spin();
        assert!(margin <= Precise::MAX_LEARNED, "{margin:?}");
    }
}

/// The real sleeper never wakes early, with or without a spin phase (how late it wakes is a
/// matter of machine load and is not asserted).
#[test]
fn precise_never_wakes_early() {
    for spin in [
        Duration::ZERO,
        Duration::from_micros(100),
        Duration::from_secs(1),
    ] {
        let sleeper = hotlimit::Precise::new().with_spin(spin);
        for wait in [0u64, 1_000, 50_000, 300_000] {
            let t0 = sleeper.now();
            sleeper.sleep(Duration::from_nanos(wait));
            assert!(sleeper.now() - t0 >= wait, "spin {spin:?}, wait {wait} ns");
        }
        let deadline = sleeper.now() + 200_000;
        sleeper.sleep_until(deadline);
        assert!(sleeper.now() >= deadline);
    }
}

/// Real clock: Gcra's blocking acquire waits for its slot; a timeout too short fails at once.
#[test]
fn real_time_gcra_acquire_and_timeout() {
    let g = Gcra::builder(Rate::per_second(500).unwrap()) // I = 2 ms
        .burst(1)
        .build()
        .unwrap();
    // The limiter's clock (quanta) and Instant may disagree by a few ppm: allow 50 µs.
    let at_least = |ms: u64| Duration::from_millis(ms) - Duration::from_micros(50);
    let t0 = Instant::now();
    g.acquire_blocking(1).unwrap();
    g.acquire_blocking(1).unwrap();
    assert!(t0.elapsed() >= at_least(2), "the second waited an interval");
    let denied = g.acquire_blocking_timeout(1, Duration::from_micros(100));
    // Denied unless this thread was descheduled for most of an interval just now.
    if let Err(denied) = denied {
        assert!(denied.retry_after().unwrap() > Duration::ZERO);
    }
    assert!(g.acquire_blocking(2).unwrap_err().is_never());
    g.acquire_blocking_timeout(1, Duration::from_secs(10))
        .unwrap();
    let slots = if denied.is_ok() { 4 } else { 3 };
    assert!(
        t0.elapsed() >= at_least(2 * (slots - 1)),
        "waited for every slot"
    );
}

/// A timer future for the test: a thread sleeps, then wakes the task.
struct ThreadTimer {
    state: std::sync::Arc<std::sync::Mutex<(bool, Option<Waker>)>>,
}

fn thread_timer(d: Duration) -> ThreadTimer {
    let state = std::sync::Arc::new(std::sync::Mutex::new((false, None::<Waker>)));
    let s2 = state.clone();
    std::thread::spawn(move || {
        std::thread::sleep(d);
        let mut st = s2.lock().unwrap();
        st.0 = true;
        if let Some(w) = st.1.take() {
            w.wake();
        }
    });
    ThreadTimer { state }
}

impl Future for ThreadTimer {
    type Output = ();
    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut st = self.state.lock().unwrap();
        if st.0 {
            Poll::Ready(())
        } else {
            st.1 = Some(cx.waker().clone());
            Poll::Pending
        }
    }
}

/// Runs a future on this thread, parking between polls.
fn block_on<F: Future>(fut: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

/// Real time, a real (thread-based) timer: async acquire waits for the permit and is woken by
/// the timer, not by polling.
#[test]
fn real_time_async_acquire_with_a_thread_timer() {
    let g = Gcra::builder(Rate::per_second(500).unwrap()) // I = 2 ms
        .burst(1)
        .build()
        .unwrap();
    let polls = AtomicU64::new(0);
    let t0 = Instant::now();
    block_on(async {
        for _ in 0..3 {
            LimiterExt::acquire_async(&g, 1, |d| {
                polls.fetch_add(1, Ordering::Relaxed);
                thread_timer(d)
            })
            .await
            .unwrap();
        }
    });
    // Three permits with burst 1 span at least two intervals.
    assert!(t0.elapsed() >= Duration::from_millis(4) - Duration::from_micros(50));
    // The second permit's slot is 2 ms away: its wait made a timer. (On a Gcra this is the
    // fair wait, whose slots follow the schedule, not the wake-ups: when the second's timer
    // wakes 2 ms late or more, as on a loaded machine, the third's slot has already come and
    // it needs none.)
    assert!(polls.load(Ordering::Relaxed) >= 1);
}
