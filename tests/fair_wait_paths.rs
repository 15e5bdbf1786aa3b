//! One fair wait on a `Gcra`, whatever path reaches it (issue 28): the inherent methods,
//! `LimiterExt`'s through `&`, `Arc`, `Box`, `Box<dyn Limiter>` and generic code, blocking
//! and async, with and without a timeout, and the `Pacer`. Each path runs the issue's
//! scenario (4 waiters on 20/s, burst 1, arriving 10 ms apart, each asking again as soon as it
//! is served) on simulated time and must serve in the order asked:
//! tasks `[0, 0, 1, 2, 3, 0, 1, 2, 3, ...]`, one grant every 50 ms. The limiters with no queue
//! (a user's own wrapper, `GcraPair`, `ShardedGcra`, `Keyed`, `IntKeyed`) retry, and the same
//! scenario shows them serving out of order, as their docs say. One test runs on real time.
#![allow(clippy::large_enum_variant)] // `Holder` is built once per scenario

mod sim;

use std::cell::RefCell;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hotlimit::{
    Clock, Denied, Gcra, GcraPair, IntKeyed, Keyed, Limiter, LimiterExt, ManualClock, Pacer, Rate,
    ShardedGcra, Sleep,
};
use sim::{Baton, SimTimer, Task, MS};

/// The scenario: 4 waiters, arriving 10 ms apart, 4 rounds each, on 20/s burst 1.
const TASKS: usize = 4;
const ROUNDS: usize = 4;
const GAP: u64 = 10 * MS;
const INTERVAL: u64 = 50 * MS;
/// Async timers wake up to this late (less than the interval, so slots cannot swap by it).
const LATE: u64 = 40 * MS;

/// The order a fair queue serves the scenario in: task 0 is served at once and asks again
/// before task 1 arrives, then the four rotate; task 0 finishes first.
const FAIR_ORDER: [usize; TASKS * ROUNDS] = [0, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 1, 2, 3];

fn rate() -> Rate {
    Rate::per_second(20).unwrap()
}

fn gcra(clock: &ManualClock) -> Gcra<ManualClock> {
    Gcra::builder(rate())
        .burst(1)
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// A user's own limiter that wraps a `Gcra` and forwards only the trait's two methods: it
/// has no queue to offer, so `LimiterExt` retries on it.
struct Wrapper(Gcra<ManualClock>);

impl Limiter for Wrapper {
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        self.0.try_acquire_n(permits)
    }
}

/// Every way to hold the limiter that a path below waits through.
enum Holder {
    Plain(Gcra<ManualClock>),
    Shared(Arc<Gcra<ManualClock>>),
    Boxed(Box<Gcra<ManualClock>>),
    Dyn(Box<dyn Limiter>),
    Pair(GcraPair<ManualClock>),
    Sharded(ShardedGcra<ManualClock>),
    Keyed(Keyed<u64, Gcra, ManualClock>),
    IntKeyed(IntKeyed<u64, ManualClock>),
    Pacer(Arc<Pacer<ManualClock>>),
}

/// The ways to wait. Method-call syntax is written out where it is the point: with
/// `LimiterExt` in scope, `arc.acquire_async(..)` resolves to the trait's method.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Path {
    /// `gcra.acquire_*` (inherent)
    Inherent,
    /// `gcra.acquire_*_timeout*` (inherent) with room to spare
    InherentTimeout,
    /// `LimiterExt::acquire_*(&gcra, ..)`
    Ext,
    /// `LimiterExt::acquire_*(&&gcra, ..)`: through the `&L` impl
    ExtOnRef,
    /// `arc.acquire_*(..)` on `Arc<Gcra>` with `LimiterExt` in scope (the path)
    Arc,
    /// `boxed.acquire_*(..)` on `Box<Gcra>`
    Boxed,
    /// `dyn_limiter.acquire_*(..)` on `Box<dyn Limiter>` holding a `Gcra`
    Dyn,
    /// generic code over `L: Limiter` (`l.acquire_*(..)`), given `&Arc<Gcra>`
    Generic,
    /// `LimiterExt::acquire_*_timeout*` with room to spare
    ExtTimeout,
    /// `Pacer::pace_*` through `Arc<Pacer>`
    Pacer,
    /// `LimiterExt` on a user's wrapper of a `Gcra` (no queue: retries)
    Wrapper,
    /// `LimiterExt` on a `GcraPair` (retries)
    Pair,
    /// `LimiterExt` on a `ShardedGcra` (retries)
    Sharded,
    /// `Keyed::acquire_*` on one key (retries)
    Keyed,
    /// `IntKeyed::acquire_*` on one key (retries)
    IntKeyed,
}

const FAIR: [Path; 10] = [
    Path::Inherent,
    Path::InherentTimeout,
    Path::Ext,
    Path::ExtOnRef,
    Path::Arc,
    Path::Boxed,
    Path::Dyn,
    Path::Generic,
    Path::ExtTimeout,
    Path::Pacer,
];

const RETRYING: [Path; 5] = [
    Path::Wrapper,
    Path::Pair,
    Path::Sharded,
    Path::Keyed,
    Path::IntKeyed,
];

fn holder(path: Path, clock: &ManualClock) -> Holder {
    match path {
        Path::Inherent | Path::InherentTimeout | Path::Ext | Path::ExtOnRef | Path::ExtTimeout => {
            Holder::Plain(gcra(clock))
        }
        Path::Arc | Path::Generic => Holder::Shared(Arc::new(gcra(clock))),
        Path::Boxed => Holder::Boxed(Box::new(gcra(clock))),
        Path::Dyn => Holder::Dyn(Box::new(gcra(clock))),
        Path::Wrapper => Holder::Dyn(Box::new(Wrapper(gcra(clock)))),
        Path::Pair => Holder::Pair(
            GcraPair::builder(rate(), Rate::per_minute(1_000).unwrap())
                .first_burst(1)
                .clock(clock.clone())
                .build()
                .unwrap(),
        ),
        Path::Sharded => Holder::Sharded(
            ShardedGcra::builder(rate())
                .burst(1)
                .clock(clock.clone())
                .build()
                .unwrap(),
        ),
        Path::Keyed => Holder::Keyed(
            Keyed::gcra(rate())
                .burst(1)
                .clock(clock.clone())
                .build()
                .unwrap(),
        ),
        Path::IntKeyed => Holder::IntKeyed(
            IntKeyed::builder(rate())
                .burst(1)
                .clock(clock.clone())
                .build()
                .unwrap(),
        ),
        Path::Pacer => Holder::Pacer(Arc::new(
            Pacer::builder(rate())
                .catch_up(0)
                .clock(clock.clone())
                .build()
                .unwrap(),
        )),
    }
}

/// Generic code: only `L: Limiter` is known, so `acquire_async` is `LimiterExt`'s.
async fn generic_async<L, F, Fut>(l: &L, sleep: F) -> Result<(), Denied>
where
    L: Limiter + ?Sized,
    F: FnMut(Duration) -> Fut + Unpin,
    Fut: Future<Output = ()>,
{
    l.acquire_async(1, sleep).await
}

fn generic_blocking<L: Limiter + ?Sized, S: Sleep + ?Sized>(l: &L, s: &S) -> Result<(), Denied> {
    l.acquire_blocking_with(1, s)
}

/// One async wait for one permit along `path`.
async fn wait_async<F, Fut>(path: Path, h: &Holder, sleep: F) -> Result<(), Denied>
where
    F: FnMut(Duration) -> Fut + Unpin,
    Fut: Future<Output = ()>,
{
    let roomy = Duration::from_secs(10);
    match (path, h) {
        (Path::Inherent, Holder::Plain(g)) => g.acquire_async(1, sleep).await,
        (Path::InherentTimeout, Holder::Plain(g)) => g.acquire_async_timeout(1, roomy, sleep).await,
        (Path::Ext | Path::ExtTimeout, Holder::Plain(g)) => {
            LimiterExt::acquire_async(g, 1, sleep).await
        }
        (Path::ExtOnRef, Holder::Plain(g)) => LimiterExt::acquire_async(&g, 1, sleep).await,
        (Path::Arc, Holder::Shared(a)) => a.acquire_async(1, sleep).await,
        (Path::Generic, Holder::Shared(a)) => generic_async(a, sleep).await,
        (Path::Boxed, Holder::Boxed(b)) => b.acquire_async(1, sleep).await,
        (Path::Dyn | Path::Wrapper, Holder::Dyn(d)) => d.acquire_async(1, sleep).await,
        (Path::Pair, Holder::Pair(p)) => p.acquire_async(1, sleep).await,
        (Path::Sharded, Holder::Sharded(s)) => s.acquire_async(1, sleep).await,
        (Path::Keyed, Holder::Keyed(k)) => k.acquire_async(&7, 1, sleep).await,
        (Path::IntKeyed, Holder::IntKeyed(k)) => k.acquire_async(7, 1, sleep).await,
        (Path::Pacer, Holder::Pacer(p)) => {
            p.pace_async(sleep).await;
            Ok(())
        }
        (path, _) => unreachable!("{path:?}"),
    }
}

/// One blocking wait for one permit along `path`, letting time pass with `s`.
fn wait_blocking<S: Sleep>(path: Path, h: &Holder, s: &S) -> Result<(), Denied> {
    let roomy = Duration::from_secs(10);
    match (path, h) {
        (Path::Inherent, Holder::Plain(g)) => g.acquire_blocking_with(1, s),
        (Path::InherentTimeout, Holder::Plain(g)) => g.acquire_blocking_timeout_with(1, roomy, s),
        (Path::Ext, Holder::Plain(g)) => LimiterExt::acquire_blocking_with(g, 1, s),
        (Path::ExtTimeout, Holder::Plain(g)) => {
            LimiterExt::acquire_blocking_timeout_with(g, 1, roomy, s)
        }
        (Path::ExtOnRef, Holder::Plain(g)) => LimiterExt::acquire_blocking_with(&g, 1, s),
        (Path::Arc, Holder::Shared(a)) => a.acquire_blocking_with(1, s),
        (Path::Generic, Holder::Shared(a)) => generic_blocking(a, s),
        (Path::Boxed, Holder::Boxed(b)) => b.acquire_blocking_with(1, s),
        (Path::Dyn | Path::Wrapper, Holder::Dyn(d)) => d.acquire_blocking_with(1, s),
        (Path::Pair, Holder::Pair(p)) => p.acquire_blocking_with(1, s),
        (Path::Sharded, Holder::Sharded(x)) => x.acquire_blocking_with(1, s),
        (Path::Keyed, Holder::Keyed(k)) => k.acquire_blocking_with(&7, 1, s),
        (Path::IntKeyed, Holder::IntKeyed(k)) => k.acquire_blocking_with(7, 1, s),
        (Path::Pacer, Holder::Pacer(p)) => {
            p.pace_blocking_with(s);
            Ok(())
        }
        (path, _) => unreachable!("{path:?}"),
    }
}

/// One grant as the log records it.
#[derive(Debug, Clone, Copy)]
struct Served {
    task: usize,
    /// The order in which the requests were made, across all tasks.
    asked: usize,
    granted_at: u64,
}

/// The grants in time order (ties by ask order: never needed by a fair queue).
fn in_grant_order(mut log: Vec<Served>) -> Vec<Served> {
    log.sort_by_key(|s| (s.granted_at, s.asked));
    log
}

/// The scenario with async tasks on a simulated timer (timers late by up to [`LATE`],
/// arrivals exact).
fn scenario_async(path: Path) -> Vec<Served> {
    let clock = ManualClock::new();
    let h = holder(path, &clock);
    let timer = SimTimer::new(&clock, LATE);
    let asked = RefCell::new(0usize);
    let log = RefCell::new(Vec::new());
    let (h, timer, asked, log) = (&h, &timer, &asked, &log);
    let tasks: Vec<Task<'_>> = (0..TASKS)
        .map(|task| {
            let fut: Task<'_> = Box::pin(async move {
                timer
                    .sleep_exact(Duration::from_nanos(task as u64 * GAP))
                    .await;
                for _ in 0..ROUNDS {
                    let order = asked.replace_with(|a| *a + 1);
                    wait_async(path, h, |d| timer.sleep(d)).await.unwrap();
                    let granted_at = timer.clock.now();
                    log.borrow_mut().push(Served {
                        task,
                        asked: order,
                        granted_at,
                    });
                }
            });
            fut
        })
        .collect();
    timer.run(tasks);
    in_grant_order(log.take())
}

/// The scenario with blocking threads on a [`Baton`] (exact sleeps, one thread at a time).
fn scenario_blocking(path: Path) -> Vec<Served> {
    let clock = ManualClock::new();
    let h = holder(path, &clock);
    let baton = Baton::new(&clock);
    let asked = AtomicUsize::new(0);
    let log = Mutex::new(Vec::new());
    baton.run(TASKS, |task, sleeper| {
        sleeper.sleep(Duration::from_nanos(task as u64 * GAP));
        for _ in 0..ROUNDS {
            // Relaxed: one thread runs at a time (the baton orders them).
            let order = asked.fetch_add(1, Ordering::Relaxed);
            wait_blocking(path, &h, sleeper).unwrap();
            let granted_at = sleeper.now();
            log.lock().unwrap().push(Served {
                task,
                asked: order,
                granted_at,
            });
        }
    });
    in_grant_order(log.into_inner().unwrap())
}

/// What a fair queue must do with the scenario: grant in the order asked, in the issue's
/// task order, one grant per slot of 50 ms (resolved no later than `late` after it).
fn assert_fair(path: Path, log: &[Served], late: u64) {
    let asked: Vec<usize> = log.iter().map(|s| s.asked).collect();
    let want: Vec<usize> = (0..TASKS * ROUNDS).collect();
    assert_eq!(
        asked, want,
        "{path:?}: not granted in the order asked: {log:?}"
    );
    let tasks: Vec<usize> = log.iter().map(|s| s.task).collect();
    assert_eq!(tasks, FAIR_ORDER, "{path:?}: {log:?}");
    for (k, s) in log.iter().enumerate() {
        let slot = k as u64 * INTERVAL;
        assert!(
            (slot..=slot + late).contains(&s.granted_at),
            "{path:?}: grant {k} at {} ns, its slot is {slot}: {log:?}",
            s.granted_at
        );
    }
}

/// What a retrying wait does with the scenario: every request is granted, never two within
/// one interval, but not in the order asked (a waiter whose wake-up comes later loses).
fn assert_retrying(path: Path, log: &[Served]) {
    assert_eq!(log.len(), TASKS * ROUNDS, "{path:?}");
    for w in log.windows(2) {
        assert!(
            w[1].granted_at >= w[0].granted_at + INTERVAL,
            "{path:?}: {w:?}"
        );
    }
    let asked: Vec<usize> = log.iter().map(|s| s.asked).collect();
    let want: Vec<usize> = (0..TASKS * ROUNDS).collect();
    assert_ne!(
        asked, want,
        "{path:?} is documented as retrying (not first come first served) but served in \
         order: if it queues now, say so in its docs and move it to FAIR: {log:?}"
    );
}

#[test]
fn every_async_path_to_a_gcra_serves_in_arrival_order() {
    for path in FAIR {
        assert_fair(path, &scenario_async(path), LATE);
    }
}

#[test]
fn every_blocking_path_to_a_gcra_serves_in_arrival_order() {
    for path in FAIR {
        assert_fair(path, &scenario_blocking(path), 0);
    }
}

#[test]
fn limiters_without_a_queue_retry_and_can_serve_out_of_order() {
    for path in RETRYING {
        assert_retrying(path, &scenario_async(path));
        assert_retrying(path, &scenario_blocking(path));
    }
}

#[test]
fn the_fair_paths_return_a_never_at_once() {
    // More than the burst can never be granted: every fair path says so without waiting.
    let clock = ManualClock::new();
    let g = Arc::new(gcra(&clock));
    assert!(g.acquire_blocking_with(2, &clock).unwrap_err().is_never());
    assert!(
        LimiterExt::acquire_blocking_timeout_with(&*g, 2, Duration::from_secs(1), &clock)
            .unwrap_err()
            .is_never()
    );
    let mut fut = std::pin::pin!(g.acquire_async(2, |_| std::future::pending::<()>()));
    let polled = fut
        .as_mut()
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()));
    assert!(matches!(polled, std::task::Poll::Ready(Err(d)) if d.is_never()));
    assert_eq!(clock.now(), 0);
}

#[test]
fn ext_timeout_on_a_gcra_refuses_up_front_and_takes_nothing() {
    // Fair: the timeout is the reservation's maximum wait, so a wait that would be too long
    // is refused at once, saying when the permit comes free (and, under its own name, the
    // time until this call would fit), and nothing is taken.
    let clock = ManualClock::new();
    let g: Box<dyn Limiter> = Box::new(gcra(&clock));
    g.acquire_blocking_with(1, &clock).unwrap(); // at 0; the next slot is 50 ms
    let short = Duration::from_millis(20);
    let denied = g
        .acquire_blocking_timeout_with(1, short, &clock)
        .unwrap_err();
    assert_eq!(denied.retry_after(), Some(Duration::from_millis(50)));
    assert_eq!(
        denied.retry_after_within(short),
        Some(Duration::from_millis(30))
    );
    assert_eq!(clock.now(), 0, "refused without waiting");
    g.acquire_blocking_timeout_with(1, Duration::from_millis(50), &clock)
        .unwrap();
    assert_eq!(clock.now(), 50 * MS, "the slot at 50 ms was still free");
}

#[test]
fn a_dropped_ext_waiter_on_an_arc_gives_its_place_back_when_last_in_line() {
    // Through LimiterExt the wait is the Gcra's own: a dropped waiter holds a place, given
    // back exactly when it is last in line, lost (never double-booked) when it is not.
    let clock = ManualClock::new();
    let g = Arc::new(gcra(&clock));
    g.try_acquire().unwrap();
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut a = Box::pin(g.acquire_async(1, |_| std::future::pending::<()>()));
    assert!(a.as_mut().poll(&mut cx).is_pending());
    assert_eq!(g.remaining_at(INTERVAL), 0, "a holds the 50 ms slot");
    drop(a);
    assert_eq!(g.remaining_at(INTERVAL), 1, "last in line: given back");
    let mut a = Box::pin(g.acquire_async(1, |_| std::future::pending::<()>()));
    let mut b = Box::pin(g.acquire_async(1, |_| std::future::pending::<()>()));
    assert!(a.as_mut().poll(&mut cx).is_pending());
    assert!(b.as_mut().poll(&mut cx).is_pending());
    drop(a); // not last: its slot stays unused
    let next = g.reserve_n_at(1, 0, u64::MAX).unwrap();
    assert_eq!(
        next.ready_at(),
        3 * INTERVAL,
        "a's slot is not handed out again"
    );
    next.keep();
    drop(b);
}

#[test]
fn ext_futures_on_shared_limiters_can_be_sent_to_other_threads() {
    fn is_send<T: Send>(_: &T) {}
    let g = Arc::new(gcra(&ManualClock::new()));
    let fut = g.acquire_async(1, |_| std::future::ready(()));
    is_send(&fut);
    let d: Box<dyn Limiter> = Box::new(gcra(&ManualClock::new()));
    is_send(&d.acquire_async(1, |_| std::future::ready(())));
}

/// Real threads on the real clock, the scenario through `Arc<Gcra>` with
/// `LimiterExt` in scope (`acquire_blocking` and `acquire_blocking_timeout`, the waits that
/// sleep with `Precise`): nobody is served before its turn. Each ask takes a ticket and reads
/// the limiter's clock under one lock; a fair line then gives ticket j the slot
/// `slot_j = max(asked_j, slot_{j-1} + I)` (burst 1), and the call must not return before it.
/// Late wake-ups (a loaded machine) only make returns later, so they cannot fail the test;
/// an overtaking waiter returns before its turn and does. (Only a thread descheduled for
/// 10 ms between its ticket and its reservation, a window of a few instructions, could
/// swap two asks.)
#[test]
fn real_time_arc_gcra_blocking_waiters_are_served_in_turn() {
    let g = Arc::new(Gcra::builder(rate()).burst(1).build().unwrap());
    let asks = Mutex::new(Vec::new());
    let served = Mutex::new(Vec::new());
    let start = std::time::Instant::now();
    std::thread::scope(|s| {
        for task in 0..TASKS {
            let (g, asks, served) = (&g, &asks, &served);
            s.spawn(move || {
                let arrive = start + Duration::from_millis(10 * task as u64);
                std::thread::sleep(arrive.saturating_duration_since(std::time::Instant::now()));
                for _ in 0..3 {
                    let ticket = {
                        let mut asks = asks.lock().unwrap();
                        asks.push(g.clock().now());
                        asks.len() - 1
                    };
                    if task % 2 == 0 {
                        g.acquire_blocking(1).unwrap();
                    } else {
                        g.acquire_blocking_timeout(1, Duration::from_secs(10))
                            .unwrap();
                    }
                    served.lock().unwrap().push((ticket, g.clock().now()));
                }
            });
        }
    });
    let asks = asks.into_inner().unwrap();
    let mut served = served.into_inner().unwrap();
    served.sort_unstable();
    assert_eq!(served.len(), TASKS * 3);
    let mut turn = 0;
    for (j, &(ticket, returned)) in served.iter().enumerate() {
        assert_eq!(ticket, j);
        turn = if j == 0 {
            asks[0]
        } else {
            asks[j].max(turn + INTERVAL)
        };
        assert!(
            returned >= turn,
            "ticket {j} returned {} ms before its turn: asks {asks:?}, served {served:?}",
            (turn - returned) / MS
        );
    }
    // And no faster than the rate: 12 permits at 20/s, burst 1, take at least 11 intervals.
    assert!(start.elapsed() >= Duration::from_millis(11 * 50));
}
