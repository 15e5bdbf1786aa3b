//! Several threads share one `Gcra` and hammer it; every second the demo prints how many
//! permits were granted against the target rate.
//!
//! ```text
//! cargo run --release --example demo -- [threads] [rate_per_second] [seconds]
//! ```

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use hotlimit::{Gcra, Limiter, Rate};

fn arg(i: usize, default: u64) -> u64 {
    match std::env::args().nth(i) {
        None => default,
        Some(s) => s.parse().unwrap_or_else(|_| {
            eprintln!("usage: demo [threads] [rate_per_second] [seconds]; `{s}` is not a number");
            std::process::exit(2);
        }),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let threads = arg(1, 4).clamp(1, 256) as usize;
    let target = arg(2, 1_000_000);
    let seconds = arg(3, 5);
    // A burst of 1 ms worth of permits keeps each second's count close to the target.
    let burst = (target / 1_000).max(1);
    let created = Instant::now();
    let limiter = Gcra::builder(Rate::per_second(target)?)
        .burst(burst)
        .build()?;
    println!(
        "{threads} threads share one Gcra: target {target} permits/s, burst {burst}, \
         {seconds} s (this machine has {} cores)",
        thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "{:>4}  {:>12}  {:>8}  {:>14}",
        "sec", "granted", "of target", "calls/s"
    );

    let granted = AtomicU64::new(0);
    let calls = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let (mut ok, mut n) = (0u64, 0u64);
                // Relaxed: a stop flag; no data is published with it.
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..256 {
                        ok += u64::from(limiter.try_acquire().is_ok());
                    }
                    n += 256;
                    // Relaxed: statistics counters, summed by the reporter.
                    granted.fetch_add(ok, Ordering::Relaxed);
                    calls.fetch_add(n, Ordering::Relaxed);
                    (ok, n) = (0, 0);
                }
            });
        }
        let start = Instant::now();
        let (mut last_granted, mut last_calls) = (0, 0);
        for sec in 1..=seconds {
            thread::sleep(
                (start + Duration::from_secs(sec)).saturating_duration_since(Instant::now()),
            );
            // Relaxed: statistics.
            let (g, c) = (
                granted.load(Ordering::Relaxed),
                calls.load(Ordering::Relaxed),
            );
            let (dg, dc) = (g - last_granted, c - last_calls);
            (last_granted, last_calls) = (g, c);
            println!(
                "{sec:>4}  {dg:>12}  {:>7.2}%  {dc:>14}",
                100.0 * dg as f64 / target as f64
            );
        }
        stop.store(true, Ordering::Relaxed);
    });
    // Every grant happened between the limiter's creation and now.
    let elapsed = created.elapsed();
    let total = granted.load(Ordering::Relaxed);
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
    Ok(())
}
