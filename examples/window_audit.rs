//! What `SlidingWindow`'s strict cap means when callers are preempted: N threads (default 16)
//! share one strict `SlidingWindow` and one monotone clock; every grant records the caller's
//! `now` (its clock read, passed to `try_acquire_at`) and the clock read after the call
//! returned. Two audits of the same grants, each the worst window of length `period`:
//!
//! - **by the caller's `now`**: the window (t − period, t] holds the grants whose `now` is in
//!   it. This is what a user who logs `now` beside each grant sees. It may exceed `limit`: a
//!   caller preempted between its clock read and its CAS is counted at the start of the newest
//!   bucket (its effective time τ = max(now, newest bucket's start)), later than its `now`.
//!   Each thread's grants with `now` in a window have their τ in it too, except its last one
//!   there, so this audit sees at most `limit` + THREADS.
//! - **by real time**: the window holds the grants whose whole call, from the clock read to
//!   the return, lies in it. Each grant's τ is inside its call, so this never exceeds `limit`.
//!
//! YIELD = 1 yields the core between the clock read and the call, so that callers are
//! preempted there far more often than the natural few-in-a-million (with YIELD = 0 the
//! excess is rare: 100 or 101 per 100 in the runs in the guide).
//!
//! ```sh
//! cargo run --release --example window_audit            # 16 threads, 2 s, 100 per 10 ms
//! cargo run --release --example window_audit -- THREADS SECONDS LIMIT PERIOD_US BUCKETS YIELD
//! ```

use std::sync::Barrier;
use std::time::{Duration, Instant};

use hotlimit::{Rate, SlidingWindow};

/// The worst window of length `period` by the caller's `now`: max over t of
/// #{ grants with now in (t − period, t] } (attained at a window ending at some `now`).
fn worst_by_now(grants: &[(u64, u64)], period: u64) -> usize {
    let mut nows: Vec<u64> = grants.iter().map(|g| g.0).collect();
    nows.sort_unstable();
    let mut lo = 0;
    let mut worst = 0;
    for hi in 0..nows.len() {
        while nows[lo] + period <= nows[hi] {
            lo += 1;
        }
        worst = worst.max(hi + 1 - lo);
    }
    worst
}

/// The worst window by real time: max over t of #{ grants whose call [now, after] lies in
/// (t − period, t] } (attained at a window ending at some `after`).
fn worst_by_call(grants: &[(u64, u64)], period: u64) -> usize {
    let mut by_after = grants.to_vec();
    by_after.sort_unstable_by_key(|g| g.1);
    let mut lo = 0;
    let mut worst = 0;
    for hi in 0..by_after.len() {
        let t = by_after[hi].1;
        // Calls ending in (t − period, t]: only they can lie inside the window.
        while by_after[lo].1 + period <= t {
            lo += 1;
        }
        let inside = by_after[lo..=hi]
            .iter()
            .filter(|g| g.0 + period > t)
            .count();
        worst = worst.max(inside);
    }
    worst
}

fn arg(i: usize, default: u64) -> u64 {
    std::env::args()
        .nth(i)
        .map_or(default, |s| s.parse().expect("a number"))
}

fn main() {
    let threads = arg(1, 16) as usize;
    let seconds = arg(2, 2);
    let limit = arg(3, 100);
    let period_us = arg(4, 10_000);
    let buckets = arg(5, 10) as usize;
    // 1: yield the core between the clock read and the call, as a preempted caller would.
    let yield_between = arg(6, 0) == 1;
    let period = period_us * 1_000;
    let rate = Rate::new(limit, Duration::from_micros(period_us)).expect("a valid rate");
    let window = SlidingWindow::builder(rate)
        .buckets(buckets)
        .build()
        .expect("a valid window");
    let start = Instant::now();
    // One monotone clock for every thread: nanoseconds since `start`.
    let clock = || start.elapsed().as_nanos() as u64;
    let end = seconds * 1_000_000_000;
    let barrier = Barrier::new(threads);
    let mut grants: Vec<(u64, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    barrier.wait();
                    loop {
                        let now = clock();
                        if now >= end {
                            break mine;
                        }
                        if yield_between {
                            std::thread::yield_now();
                        }
                        if window.try_acquire_at(now).is_ok() {
                            mine.push((now, clock()));
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("no panic"))
            .collect()
    });
    grants.sort_unstable();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let by_now = worst_by_now(&grants, period);
    let by_call = worst_by_call(&grants, period);
    println!(
        "{threads} threads on {cores} cores, {seconds} s, limit {limit} per {period_us} us, \
         {buckets} buckets: {} grants",
        grants.len()
    );
    println!(
        "worst window by the caller's now: {by_now} ({:.2} x limit)",
        by_now as f64 / limit as f64
    );
    println!(
        "worst window by real time (whole call inside): {by_call} ({:.2} x limit)",
        by_call as f64 / limit as f64
    );
    assert!(
        by_call as u64 <= limit,
        "over-admission in real time: {by_call} > {limit}"
    );
    assert!(
        by_now as u64 <= limit + threads as u64,
        "by now: {by_now} > limit + threads"
    );
}
