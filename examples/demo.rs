//! Several threads share one `Gcra` and hammer it; about every second the demo prints how
//! many permits were granted in that window against the target rate, and what the guarantee
//! allows for the window.
//!
//! ```text
//! cargo run --release --example demo -- [threads] [rate_per_second] [seconds]
//! ```
//!
//! Defaults: one thread per core (more threads than cores only adds preemption: a thread
//! that holds no core makes no calls), 1,000,000 permits/s, 5 s.
//!
//! **What the per-window figure can show, and what it cannot.** Each worker publishes its
//! running count of grants after every call (its own cache line); the reporter wakes about
//! once a second, reads the time and the counts, and prints the difference from the last
//! reading. So:
//!
//! - A window is not exactly one second: the reporter's sleep wakes late by a varying amount.
//!   The demo prints each window's measured length d and judges it against d, not 1 s.
//! - The GCRA's guarantee is "at most b + d/I in ANY interval of length d" (b the burst,
//!   here 1 ms worth of permits), not "at most `rate` per calendar second". A window can
//!   therefore exceed rate × d by up to b by design (100.1 % with this burst): that is not a
//!   violation. The column `allowed` is b + rate × d; only a count above it would be one
//!   (and the reads of the counters are not one atomic snapshot: a grant made while the
//!   reporter reads can land on either side, a handful out of a million).
//! - Below 100 % means the threads did not ask often enough while capacity accrued: when
//!   every thread is off its core (descheduled on a shared machine) for longer than the burst
//!   covers (1 ms here), the capacity of that time is lost for good. It measures the machine,
//!   not a limiter withholding permits. Sampling cannot show when within a window grants
//!   happened: the bound over arbitrary intervals is checked by the test suite (the stress
//!   tests audit every interval of recorded grant times), not by this demo.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use hotlimit::{Gcra, Limiter, Rate};

fn arg(i: usize, default: u64) -> u64 {
    match std::env::args().nth(i) {
        None => default,
        Some(s) => s.parse().unwrap_or_else(|_| {
            eprintln!(
                "usage: demo [threads (default: one per core)] [rate_per_second] [seconds]; \
                 `{s}` is not a number"
            );
            std::process::exit(2);
        }),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cores = thread::available_parallelism().map_or(1, |n| n.get());
    let threads = arg(1, cores as u64).clamp(1, 256) as usize;
    let target = arg(2, 1_000_000);
    let seconds = arg(3, 5);
    // A burst of 1 ms worth of permits keeps each window's count close to the target.
    let burst = (target / 1_000).max(1);
    let created = Instant::now();
    let limiter = Gcra::builder(Rate::per_second(target)?)
        .burst(burst)
        .build()?;
    println!(
        "What this shows: {threads} threads share one Gcra and call try_acquire() as fast as \
         they can, for {seconds} s (target {target} permits/s, burst {burst}; this machine \
         has {cores} cores). About once a second a row gives the permits granted since the \
         last row."
    );
    println!(
        "How to read it: `window` is the row's measured length d; `of r x d` is granted / \
         (rate x d); `allowed` is burst + rate x d, the most a GCRA may grant in any interval \
         of length d. Above 100 % but within `allowed` is by design; below 100 % means every \
         thread was off its core longer than the burst covers (the machine, not the \
         limiter); only a count above `allowed` would break the guarantee. The last lines \
         check the whole run."
    );
    println!();
    println!(
        "{:>4}  {:>9}  {:>12}  {:>9}  {:>12}  {:>14}",
        "sec", "window", "granted", "of r x d", "allowed", "calls/s"
    );

    // Each worker's running totals (grants, calls) on its own cache line.
    let counts: Vec<CachePadded<[AtomicU64; 2]>> = (0..threads)
        .map(|_| CachePadded::new([AtomicU64::new(0), AtomicU64::new(0)]))
        .collect();
    let sum = |k: usize| -> u64 {
        counts
            .iter()
            // Relaxed: statistics; each counter is written by its worker only.
            .map(|c| c[k].load(Ordering::Relaxed))
            .sum()
    };
    let stop = AtomicBool::new(false);
    let mut worst = f64::NEG_INFINITY;
    thread::scope(|s| {
        for mine in &counts {
            let (limiter, stop) = (&limiter, &stop);
            s.spawn(move || {
                let (mut ok, mut n) = (0u64, 0u64);
                // Relaxed: a stop flag; no data is published with it.
                while !stop.load(Ordering::Relaxed) {
                    ok += u64::from(limiter.try_acquire().is_ok());
                    n += 1;
                    // Relaxed: statistics, on this worker's own line (no contention).
                    mine[0].store(ok, Ordering::Relaxed);
                    mine[1].store(n, Ordering::Relaxed);
                }
            });
        }
        let start = Instant::now();
        let (mut last_at, mut last_granted, mut last_calls) = (start, sum(0), sum(1));
        for sec in 1..=seconds {
            thread::sleep(
                (start + Duration::from_secs(sec)).saturating_duration_since(Instant::now()),
            );
            let (g, c) = (sum(0), sum(1));
            let at = Instant::now();
            let d = (at - last_at).as_secs_f64();
            let (dg, dc) = (g - last_granted, c - last_calls);
            (last_at, last_granted, last_calls) = (at, g, c);
            let allowed = burst as f64 + target as f64 * d;
            worst = worst.max(dg as f64 - allowed);
            println!(
                "{sec:>4}  {:>7.1}ms  {dg:>12}  {:>8.2}%  {allowed:>12.0}  {:>14.0}",
                d * 1e3,
                100.0 * dg as f64 / (target as f64 * d),
                dc as f64 / d
            );
        }
        stop.store(true, Ordering::Relaxed);
    });
    // Every grant happened between the limiter's creation and now.
    let elapsed = created.elapsed();
    let total = sum(0);
    let bound = burst as f64 + target as f64 * elapsed.as_secs_f64();
    println!(
        "total granted {total} in {:.3} s; the guarantee allows at most burst + rate x time = \
         {bound:.0}: {}",
        elapsed.as_secs_f64(),
        if (total as f64) <= bound {
            "held"
        } else {
            "VIOLATED"
        }
    );
    println!(
        "largest window count minus its allowance: {worst:.0} (<= 0: every window within \
         the guarantee; the per-window reads of the counters are not one atomic snapshot, so \
         a handful out of a million can land in the next row)"
    );
    Ok(())
}
