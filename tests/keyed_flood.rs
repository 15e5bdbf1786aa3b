//! Issue 26: a flood of one-shot keys must not push out the clients that keep coming back.
//! Twenty times the capacity in new keys, each asking once, arrive while a few steady clients
//! ask at half their limit: every steady request is granted, the table never holds more than
//! its capacity, and no key is granted more than its GCRA allows. On a `ManualClock` (the
//! sweeps and rebuilds of one thread, every step deterministic but the hash seed), then on
//! real threads with a real clock (a flooding thread beside steady ones).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use hotlimit::{Gcra, Keyed, ManualClock, Rate};

const MS: u64 = 1_000_000;

/// Steady keys are far from the flood's.
const STEADY: u64 = 1 << 40;

#[test]
fn steady_clients_keep_their_places_while_a_flood_churns() {
    let capacity = 1_000;
    // 10 per second (burst 10): a flood key stays busy for 100 ms after its one request.
    let k: Keyed<u64, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(10).unwrap())
        .capacity(capacity)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    // Five clients, known before the flood, each asking every 200 ms (5 per second).
    let steady: Vec<u64> = (0..5).map(|i| STEADY + i).collect();
    for &s in &steady {
        k.try_acquire_at(&s, 0).unwrap();
    }
    // 13,000 new keys per second (as the probe): 1,300 would be busy at once, more
    // than the capacity, so the table is full and new keys churn through it.
    let flood = 20 * capacity as u64;
    let step = 1_000 * MS / 13_000;
    let (mut asked, mut flood_granted) = (0, 0);
    let mut next = 200 * MS;
    for f in 0..flood {
        let now = f * step;
        if now >= next {
            for &s in &steady {
                asked += 1;
                let granted = k.try_acquire_at(&s, now);
                assert!(
                    granted.is_ok(),
                    "steady client {s} refused at {} ms: {granted:?}",
                    now / MS
                );
            }
            next += 200 * MS;
        }
        flood_granted += u64::from(k.try_acquire_at(&f, now).is_ok());
        assert!(k.len() <= capacity);
    }
    assert!(asked >= 5 * 7, "{asked} steady requests");
    // The flood churned through the table rather than being shut out.
    assert!(flood_granted > flood / 2, "{flood_granted} of {flood}");
}

#[test]
fn steady_clients_keep_their_places_while_threads_flood() {
    let capacity = 500;
    // 10 per second, burst 20: a flood key is busy for 100 ms; a client idle for up to 2 s
    // (its horizon, τ) still counts as coming back, which leaves a loaded machine room to
    // delay a client's thread.
    let k = Arc::new(
        Keyed::<u64, Gcra>::gcra(Rate::per_second(10).unwrap())
            .burst(20)
            .capacity(capacity)
            .build()
            .unwrap(),
    );
    // Three clients, known before the flood.
    for i in 0..3 {
        k.try_acquire(&(STEADY + i)).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    // The flood: new keys as fast as one thread makes them, until the steady clients are done.
    let flooder = {
        let (k, stop, sent) = (k.clone(), stop.clone(), sent.clone());
        thread::spawn(move || {
            let mut key = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let _ = k.try_acquire(&key);
                key += 1;
                assert!(k.len() <= capacity);
            }
            sent.store(key, Ordering::Relaxed);
        })
    };
    // Each asks every 300 ms for 3 s (idle 200 ms of every 300, at a third of its rate): every
    // request is granted. Each records when it was granted, for the audit below.
    let clients: Vec<_> = (0..3)
        .map(|i| {
            let k = k.clone();
            thread::spawn(move || {
                let key = STEADY + i;
                let start = Instant::now();
                let mut grants = Vec::new();
                for n in 0..10u32 {
                    // From 300 ms after its first request: a request right after it would be
                    // a repeat, not a return (issue 42: only a grant that finds the key idle
                    // makes it a returning key).
                    let due = start + Duration::from_millis(300) * (n + 1);
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        thread::sleep(wait);
                    }
                    let granted = k.try_acquire(&key);
                    assert!(
                        granted.is_ok(),
                        "client {i} refused at request {n}: {granted:?}"
                    );
                    grants.push(Instant::now());
                }
                grants
            })
        })
        .collect();
    let grants: Vec<Vec<Instant>> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    stop.store(true, Ordering::Relaxed);
    flooder.join().unwrap();
    let flood = sent.load(Ordering::Relaxed);
    assert!(
        flood >= 20 * capacity as u64,
        "only {flood} flood keys in 3 s"
    );
    // The audit: no client was granted more than its GCRA allows (burst 20, one per 100 ms)
    // in any stretch of its grants.
    for g in &grants {
        for (i, first) in g.iter().enumerate() {
            for (j, last) in g.iter().enumerate().skip(i) {
                let allowed = 20 + last.duration_since(*first).as_millis() / 100;
                assert!((j - i + 1) as u128 <= allowed);
            }
        }
    }
}
