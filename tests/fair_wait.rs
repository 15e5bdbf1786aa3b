//! Async waiting on a simulated timer: `Gcra::acquire_async` and `Pacer::pace_async` serve
//! tasks in arrival order (and the same harness catches the retrying waiter overtaking), a
//! dropped waiter gives its place back exactly when it is last in line; and the per-key waits
//! of `Keyed`, `IntKeyed` and `KeyPool`, blocking and async. No real sleeping: every timer is a
//! deadline on a `ManualClock`, and the executor moves the clock to the next deadline when no
//! task can make progress.

mod sim;

use std::cell::RefCell;
use std::future::{pending, ready, Future};
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use hotlimit::{
    Clock, Denied, Gcra, IntKeyed, KeyPool, Keyed, Limiter, LimiterExt, ManualClock, Pacer, Rate,
};
use sim::{SimTimer, MS};

/// A limiter with no line of its own: a `Gcra` behind a wrapper that forwards only
/// `try_acquire_n`, so `LimiterExt` retries on it (the wait a `Gcra` got before issue 28
/// whenever `LimiterExt`'s method was the one called).
struct Retrying(Gcra<ManualClock>);

impl Limiter for Retrying {
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        self.0.try_acquire_n(permits)
    }
}

/// One acquire as the log records it: which task asked, in which order, when it was granted.
#[derive(Debug, Clone, Copy)]
struct Served {
    task: usize,
    asked: usize,
    granted_at: u64,
}

/// A 10/s, burst-1 `Gcra` (I = 100 ms) on `clock`.
fn ten_per_second(clock: &ManualClock) -> Gcra<ManualClock> {
    Gcra::builder(Rate::per_second(10).unwrap())
        .burst(1)
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// A 100/s `Pacer` (one slot per 10 ms) on `clock`.
fn pacer_every_10_ms(clock: &ManualClock) -> Pacer<ManualClock> {
    Pacer::builder(Rate::per_second(100).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// A fresh `ManualClock` and [`ten_per_second`] on it with its one permit taken at 0.
fn one_taken_at_zero() -> (ManualClock, Gcra<ManualClock>) {
    let clock = ManualClock::new();
    let g = ten_per_second(&clock);
    g.try_acquire_at(0).unwrap();
    (clock, g)
}

/// `tasks` tasks arrive `gap` apart and each acquires one permit `rounds` times on a
/// 10/s, burst-1 `Gcra` (I = 100 ms), through `fair` (the inherent, reservation-based
/// `acquire_async`) or the retrying `LimiterExt::acquire_async` of a [`Retrying`] wrapper.
/// Returns the log in grant order.
fn simulate(fair: bool, tasks: usize, rounds: usize, gap: u64, max_late: u64) -> Vec<Served> {
    let clock = ManualClock::new();
    let limiter = ten_per_second(&clock);
    let retrying = Retrying(ten_per_second(&clock));
    let timer = SimTimer::new(&clock, max_late);
    let asked = RefCell::new(0usize);
    let log = RefCell::new(Vec::new());
    let (limiter, retrying, timer_ref) = (&limiter, &retrying, &timer);
    let (asked, log) = (&asked, &log);
    let futures: Vec<Pin<Box<dyn Future<Output = ()> + '_>>> = (0..tasks)
        .map(|task| {
            let fut: Pin<Box<dyn Future<Output = ()> + '_>> = Box::pin(async move {
                timer_ref
                    .sleep(Duration::from_nanos(task as u64 * gap))
                    .await;
                for _ in 0..rounds {
                    let order = {
                        let mut a = asked.borrow_mut();
                        *a += 1;
                        *a - 1
                    };
                    let sleep = |d| timer_ref.sleep(d);
                    if fair {
                        limiter.acquire_async(1, sleep).await.unwrap();
                    } else {
                        retrying.acquire_async(1, sleep).await.unwrap();
                    }
                    log.borrow_mut().push(Served {
                        task,
                        asked: order,
                        granted_at: timer_ref.clock.now(),
                    });
                }
            });
            fut
        })
        .collect();
    timer.run(futures);
    let mut log = log.take();
    log.sort_by_key(|s| (s.granted_at, s.asked));
    log
}

#[test]
fn gcra_async_acquire_serves_tasks_in_arrival_order() {
    // 4 tasks (the case) and 16, timers up to 40 ms late.
    for tasks in [4, 16] {
        let log = simulate(true, tasks, 5, 30 * MS, 40 * MS);
        assert_eq!(log.len(), tasks * 5);
        let asked: Vec<usize> = log.iter().map(|s| s.asked).collect();
        let want: Vec<usize> = (0..tasks * 5).collect();
        assert_eq!(asked, want, "granted in the order asked: {log:?}");
        // And never faster than the rate: one grant per 100 ms at most (burst 1).
        for w in log.windows(2) {
            assert!(
                w[1].granted_at >= w[0].granted_at + 100 * MS - 40 * MS,
                "{w:?}"
            );
        }
    }
}

#[test]
fn gcra_async_acquire_rotates_evenly_between_tasks_that_stay_in_line() {
    // All 4 tasks ask at 0 and re-ask as soon as they are served: a perfect rotation.
    // (The first to arrive is served at once and re-asks before the others have arrived, so
    // the rotation starts at the second grant; at the end, tasks drop out as they finish.)
    let (tasks, rounds) = (4, 6);
    let log = simulate(true, tasks, rounds, 0, 30 * MS);
    let order: Vec<usize> = log.iter().map(|s| s.task).collect();
    for k in 1..=order.len() - 2 * tasks {
        let mut window = order[k..k + tasks].to_vec();
        window.sort_unstable();
        window.dedup();
        assert_eq!(window.len(), tasks, "rotation broken at {k}: {order:?}");
    }
}

#[test]
fn the_harness_catches_the_retrying_waiter_overtaking() {
    // The same trace through the retrying waiter (a limiter with no line): late timers let
    // later askers overtake, so the arrival-order check above is not vacuous.
    let log = simulate(false, 4, 5, 30 * MS, 40 * MS);
    let asked: Vec<usize> = log.iter().map(|s| s.asked).collect();
    let want: Vec<usize> = (0..20).collect();
    assert_ne!(
        asked, want,
        "the retrying waiter happened to be fair: {log:?}"
    );
}

#[test]
fn dropping_an_async_acquire_gives_back_exactly_when_last_in_line() {
    let (clock, g) = one_taken_at_zero();
    let mut cx = Context::from_waker(Waker::noop());
    // Not polled: holds nothing.
    drop(g.acquire_async(1, |_| pending::<()>()));
    assert_eq!(g.remaining_at(100 * MS), 1);
    // Polled once: in line for 100 ms; dropped while last: given back exactly.
    let mut a = Box::pin(g.acquire_async(1, |_| pending::<()>()));
    assert!(a.as_mut().poll(&mut cx).is_pending());
    assert_eq!(g.remaining_at(100 * MS), 0);
    drop(a);
    assert_eq!(g.remaining_at(100 * MS), 1);
    // a (100 ms) then b (200 ms): dropping a, which is not last, cannot give back; its slot
    // stays unused, and b keeps its own place.
    let mut a = Box::pin(g.acquire_async(1, |_| pending::<()>()));
    let mut b = Box::pin(g.acquire_async(1, |_| pending::<()>()));
    assert!(a.as_mut().poll(&mut cx).is_pending());
    assert!(b.as_mut().poll(&mut cx).is_pending());
    drop(a);
    let next = g.reserve_n_at(1, 0, u64::MAX).unwrap();
    assert_eq!(
        next.ready_at(),
        300 * MS,
        "a's slot at 100 ms is not handed out again"
    );
    next.keep();
    // b's own time, 200 ms, is still b's: the timer below fires at once (the 200 ms have
    // passed), and b resolves.
    drop(b);
    let timer = SimTimer::new(&clock, 0);
    let mut c = Box::pin(g.acquire_async(1, |d| timer.sleep(d)));
    assert!(c.as_mut().poll(&mut cx).is_pending());
    clock.set(Duration::from_millis(400));
    assert_eq!(c.as_mut().poll(&mut cx), Poll::Ready(Ok(())));
    // Resolved: polling again takes nothing and stays pending.
    assert!(c.as_mut().poll(&mut cx).is_pending());
    assert_eq!(
        g.remaining_at(400 * MS),
        0,
        "c was kept at 400 ms, not given back"
    );
}

#[test]
fn async_timeout_refuses_up_front_and_takes_nothing() {
    let (clock, g) = one_taken_at_zero();
    let mut cx = Context::from_waker(Waker::noop());
    let mut short = pin!(g.acquire_async_timeout(1, Duration::from_millis(50), |_| pending()));
    match short.as_mut().poll(&mut cx) {
        Poll::Ready(Err(d)) => {
            // When the permit comes free (100 ms); the call lacked 50 ms.
            assert_eq!(d.retry_after_nanos(), Some(100 * MS));
            assert_eq!(
                d.retry_after_within(Duration::from_millis(50)),
                Some(Duration::from_millis(50))
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(g.remaining_at(100 * MS), 1);
    let sleep = |d| {
        clock.advance(d);
        ready(())
    };
    let mut fits = pin!(g.acquire_async_timeout(1, Duration::from_millis(100), sleep));
    assert_eq!(fits.as_mut().poll(&mut cx), Poll::Ready(Ok(())));
    assert_eq!(clock.now(), 100 * MS);
    let mut never = pin!(g.acquire_async(2, |_| pending()));
    assert!(matches!(never.as_mut().poll(&mut cx), Poll::Ready(Err(d)) if d.is_never()));
}

#[test]
fn a_timer_that_wakes_early_is_slept_again() {
    // The runtime's clock and the limiter's may disagree: a timer that fires before the
    // limiter's clock reaches the slot must not resolve early.
    let (clock, g) = one_taken_at_zero();
    let sleeps = RefCell::new(0);
    let sleep = |d: Duration| {
        *sleeps.borrow_mut() += 1;
        clock.advance(d / 2 + Duration::from_nanos(1)); // wakes half-way
        ready(())
    };
    let mut fut = pin!(g.acquire_async(1, sleep));
    let polled = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    assert_eq!(polled, Poll::Ready(Ok(())));
    assert!(clock.now() >= 100 * MS);
    assert!(*sleeps.borrow() > 1);
}

#[test]
fn pacer_async_hands_out_slots_in_arrival_order() {
    let clock = ManualClock::new();
    let pacer = pacer_every_10_ms(&clock);
    let timer = SimTimer::new(&clock, 3 * MS);
    let slots = RefCell::new(Vec::new());
    let (pacer, timer_ref, slots_ref) = (&pacer, &timer, &slots);
    let tasks: Vec<Pin<Box<dyn Future<Output = ()> + '_>>> = (0..4)
        .map(|task| {
            let fut: Pin<Box<dyn Future<Output = ()> + '_>> = Box::pin(async move {
                for _ in 0..5 {
                    let tick = pacer.pace_async(|d| timer_ref.sleep(d)).await;
                    assert!(tick.now >= tick.slot);
                    slots_ref.borrow_mut().push((tick.slot, task));
                }
            });
            fut
        })
        .collect();
    timer.run(tasks);
    let mut slots = slots.take();
    slots.sort_unstable();
    let times: Vec<u64> = slots.iter().map(|&(s, _)| s).collect();
    let want: Vec<u64> = (0..20).map(|k| k * 10 * MS).collect();
    assert_eq!(
        times, want,
        "one slot every 10 ms, none twice, none skipped"
    );
}

#[test]
fn pacer_async_dropped_while_last_gives_its_slot_back() {
    let clock = ManualClock::new();
    let pacer = pacer_every_10_ms(&clock);
    let mut cx = Context::from_waker(Waker::noop());
    assert_eq!(pacer.next_slot_at(0).unwrap(), 0);
    let mut fut = Box::pin(pacer.pace_async(|_| pending::<()>()));
    assert!(fut.as_mut().poll(&mut cx).is_pending()); // holds the 10 ms slot
    drop(fut);
    assert_eq!(pacer.next_slot_at(0).unwrap(), 10 * MS, "given back");
}

#[test]
fn keyed_waits_per_key_blocking_and_async() {
    let clock = ManualClock::new();
    let per_user: Keyed<&str, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(10).unwrap())
        .burst(1)
        .clock(clock.clone())
        .build()
        .unwrap();
    per_user.acquire_blocking_with(&"a", 1, &clock).unwrap();
    per_user.acquire_blocking_with(&"b", 1, &clock).unwrap(); // another key: no wait
    assert_eq!(clock.now(), 0);
    per_user.acquire_blocking_with(&"a", 1, &clock).unwrap();
    assert_eq!(clock.now(), 100 * MS);
    assert!(per_user
        .acquire_blocking_with(&"a", 2, &clock)
        .unwrap_err()
        .is_never());
    let timer = SimTimer::new(&clock, 0);
    let granted = RefCell::new(Vec::new());
    let (per_user, timer_ref, granted_ref) = (&per_user, &timer, &granted);
    let tasks: Vec<Pin<Box<dyn Future<Output = ()> + '_>>> = ["a", "b"]
        .into_iter()
        .map(|key| {
            let fut: Pin<Box<dyn Future<Output = ()> + '_>> = Box::pin(async move {
                for _ in 0..3 {
                    per_user
                        .acquire_async(&key, 1, |d| timer_ref.sleep(d))
                        .await
                        .unwrap();
                    granted_ref.borrow_mut().push((key, timer_ref.clock.now()));
                }
            });
            fut
        })
        .collect();
    timer.run(tasks);
    let mut granted = granted.take();
    granted.sort_unstable();
    let at = |ms: [u64; 3]| ms.map(|m| m * MS);
    let a: Vec<u64> = granted.iter().filter(|g| g.0 == "a").map(|g| g.1).collect();
    let b: Vec<u64> = granted.iter().filter(|g| g.0 == "b").map(|g| g.1).collect();
    // Each key at its own rate, independently: a's next at 200 ms, b's at 100 ms.
    assert_eq!(a, at([200, 300, 400]));
    assert_eq!(b, at([100, 200, 300]));
}

#[test]
fn int_keyed_waits_per_key_blocking_and_async() {
    let clock = ManualClock::new();
    let per_ip = IntKeyed::<u32>::builder(Rate::per_second(10).unwrap())
        .burst(1)
        .clock(clock.clone())
        .build()
        .unwrap();
    per_ip.acquire_blocking_with(1, 1, &clock).unwrap();
    per_ip.acquire_blocking_with(2, 1, &clock).unwrap();
    per_ip.acquire_blocking_with(1, 1, &clock).unwrap();
    assert_eq!(clock.now(), 100 * MS);
    assert!(per_ip
        .acquire_blocking_with(1, 2, &clock)
        .unwrap_err()
        .is_never());
    let sleep = |d| {
        clock.advance(d);
        ready(())
    };
    let mut fut = pin!(per_ip.acquire_async(1, 1, sleep));
    assert_eq!(
        fut.as_mut().poll(&mut Context::from_waker(Waker::noop())),
        Poll::Ready(Ok(()))
    );
    assert_eq!(clock.now(), 200 * MS);
    // Dropping a waiting future takes nothing.
    let mut waiting = Box::pin(per_ip.acquire_async(1, 1, |_| pending::<()>()));
    assert!(waiting
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
        .is_pending());
    drop(waiting);
    clock.advance(Duration::from_millis(100));
    assert!(per_ip.try_acquire(1).is_ok());
}

#[test]
fn key_pool_waits_for_the_next_key() {
    let clock = ManualClock::new();
    let pool = KeyPool::builder(vec!["k1", "k2"], Rate::per_second(1).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    let keys: Vec<&str> = (0..5)
        .map(|_| *pool.next_key_blocking_with(&clock).unwrap())
        .collect();
    assert_eq!(keys.len(), 5);
    // Two keys, once per second each: the 3rd and 4th wait for 1 s, the 5th for 2 s.
    assert_eq!(clock.now(), 2_000 * MS);
    let sleep = |d| {
        clock.advance(d);
        ready(())
    };
    let mut cx = Context::from_waker(Waker::noop());
    let mut fut = pin!(pool.next_key_async(sleep));
    assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Ready(Ok(_))));
    assert_eq!(
        clock.now(),
        2_000 * MS,
        "the second key still had its use at 2 s"
    );
    let mut fut = pin!(pool.next_key_async(sleep));
    assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Ready(Ok(_))));
    assert_eq!(clock.now(), 3_000 * MS);
}
