//! `Keyed<K, MultiWindow>`: each key held to several hard windows, all or nothing; idle keys
//! evicted without losing an admission; windows fixed at build.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;

use hotlimit::{Keyed, ManualClock, MultiWindow, Rate};

fn windows() -> hotlimit::MultiWindowBuilder<hotlimit::DefaultClock> {
    MultiWindow::builder()
        .window(Rate::per_second(2).unwrap())
        .exact(Rate::per_minute(3).unwrap())
}

#[test]
fn each_key_has_its_own_windows_and_a_refusal_charges_none() {
    let clock = ManualClock::new();
    let k: Keyed<u32, MultiWindow, ManualClock> = Keyed::multi_window(windows())
        .clock(clock.clone())
        .build()
        .unwrap();
    let s = 1_000_000_000;
    k.try_acquire_n_at(&1, 2, 0).unwrap();
    // Refused by the second's ring; the minute's log keeps its third permit.
    for _ in 0..5 {
        assert!(k.try_acquire_at(&1, s / 2).is_err());
    }
    k.try_acquire_at(&1, 2 * s).unwrap();
    // The minute is spent until the grants at 0 leave it, at 60 s.
    let d = k.try_acquire_at(&1, 3 * s).unwrap_err();
    assert_eq!(d.retry_after_nanos(), Some(57 * s));
    assert!(k.try_acquire_n_at(&2, 2, 3 * s).is_ok());
    assert!(k.try_acquire_n_at(&3, 3, 0).unwrap_err().is_never());

    // The log first: a request refused by the ring gives the log's permit back, so the
    // minute's third permit is still there at 2 s.
    let k: Keyed<u32, MultiWindow, ManualClock> = Keyed::multi_window(
        MultiWindow::builder()
            .exact(Rate::per_minute(3).unwrap())
            .window(Rate::per_second(2).unwrap()),
    )
    .clock(clock)
    .build()
    .unwrap();
    k.try_acquire_n_at(&1, 2, 0).unwrap();
    assert!(k.try_acquire_at(&1, s / 2).is_err());
    assert!(k.try_acquire_at(&1, 2 * s).is_ok());
    assert!(k.try_acquire_at(&1, 3 * s).is_err());
    // Read-back: the fewest permits left in any window (the minute's, spent), and a new key's.
    assert_eq!(k.remaining_at(&1, 3 * s), 0);
    assert_eq!(k.remaining_at(&1, 60 * s), 2);
    assert_eq!(k.remaining_at(&9, 0), 2);
}

#[test]
fn windows_cannot_be_changed_at_run_time() {
    let k: Keyed<u32, MultiWindow, ManualClock> = Keyed::multi_window(windows())
        .clock(ManualClock::new())
        .build()
        .unwrap();
    assert_eq!(
        k.set_default_rate(Rate::per_second(5).unwrap())
            .unwrap_err()
            .field(),
        "rate"
    );
    let err = Keyed::<u32, MultiWindow>::multi_window(MultiWindow::builder())
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "windows");
}

/// A table of 2 keys: a third key is let in once a key's windows are all idle (its grants have
/// left every window), and not before.
#[test]
fn an_idle_key_is_evicted_and_a_busy_one_is_not() {
    let clock = ManualClock::new();
    let k: Keyed<u32, MultiWindow, ManualClock> = Keyed::multi_window(windows())
        .capacity(2)
        .clock(clock.clone())
        .build()
        .unwrap();
    let s = 1_000_000_000;
    k.try_acquire_at(&1, 0).unwrap();
    k.try_acquire_at(&2, 0).unwrap();
    // At 30 s both keys still count a grant in their minute: no room for key 3.
    assert!(k.try_acquire_at(&3, 30 * s).is_err());
    // At 60 s key 1's and key 2's grants have left both windows: key 3 gets a place.
    assert!(k.try_acquire_at(&3, 60 * s).is_ok());
}

/// Sixteen threads on one key at one instant: exactly the smallest limit is granted.
#[test]
fn sixteen_threads_on_one_key_get_exactly_the_smallest_limit() {
    const THREADS: usize = 16;
    let k: Keyed<u32, MultiWindow, ManualClock> = Keyed::multi_window(
        MultiWindow::builder()
            .window(Rate::per_second(7).unwrap())
            .window(Rate::per_minute(11).unwrap()),
    )
    .clock(ManualClock::new())
    .build()
    .unwrap();
    let granted = AtomicU64::new(0);
    let barrier = Barrier::new(THREADS);
    thread::scope(|s| {
        for _ in 0..THREADS {
            let (k, granted, barrier) = (&k, &granted, &barrier);
            s.spawn(move || {
                barrier.wait();
                let mine = (0..20)
                    .filter(|_| k.try_acquire_at(&5, 1_000).is_ok())
                    .count();
                // Relaxed: read after the scope joins.
                granted.fetch_add(mine as u64, Ordering::Relaxed);
            });
        }
    });
    assert_eq!(granted.into_inner(), 7);
}

/// Per-key decisions report the first window's quota and the fewest permits left.
#[test]
fn decide_reports_the_fewest_permits_left() {
    use hotlimit::{Decide, Quota};
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    let k: Keyed<u32, MultiWindow, ManualClock> = Keyed::multi_window(windows())
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let mut fut = std::pin::pin!(k.decide(&4, 2));
    let Poll::Ready(Ok(d)) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
        panic!("an in-process decision is ready at once")
    };
    assert!(d.is_allowed());
    // 0 of 2 per second left (the minute has 1): r = 0, never above q.
    assert_eq!(d.remaining(), 0);
    assert_eq!(
        d.quota(),
        Quota::new(2, std::time::Duration::from_millis(1_100))
    );
}
