//! A load generator: threads share one `Pacer` and "send" at a target rate; every second it
//! prints a progress line with the rate achieved in that second and how late the sends were
//! against their scheduled slots (p50, p99, max), then a summary.
//!
//! ```text
//! cargo run --release --example load_generator -- [rate_per_second] [seconds] [threads]
//! ```
//!
//! Defaults: 50,000/s for 3 s on 8 threads. Lateness is `Tick::lateness`: the time the call
//! returned minus its slot's scheduled time, so a stalled sender shows up as lateness (and the
//! default catch-up of 10 ms makes up the missed slots) instead of silently lowering the rate.
//!
//! `SPIN_US=n` paces with a [`Precise`](hotlimit::Precise) sleeper of spin margin n µs instead
//! of the pacer's default sleeper (to compare CPU use and lateness, e.g. under
//! `/usr/bin/time -v`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use hotlimit::{Pacer, Rate};

fn arg(i: usize, default: u64) -> u64 {
    match std::env::args().nth(i) {
        None => default,
        Some(s) => s.parse().unwrap_or_else(|_| {
            eprintln!("usage: load_generator [rate_per_second] [seconds] [threads]; `{s}` is not a number");
            std::process::exit(2);
        }),
    }
}

/// p50, p99 and max of `v` (sorted in place), in ns.
fn percentiles(v: &mut [u64]) -> (u64, u64, u64) {
    if v.is_empty() {
        return (0, 0, 0);
    }
    v.sort_unstable();
    let at = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    (at(0.50), at(0.99), v[v.len() - 1])
}

fn fmt_ns(ns: u64) -> String {
    match ns {
        0..=9_999 => format!("{ns} ns"),
        10_000..=999_999 => format!("{:.1} µs", ns as f64 / 1e3),
        _ => format!("{:.1} ms", ns as f64 / 1e6),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rate = arg(1, 50_000).max(1);
    let seconds = arg(2, 3).max(1);
    let threads = arg(3, 8).clamp(1, 1024) as usize;
    let pacer = Pacer::new(Rate::per_second(rate)?)?;
    let spin = std::env::var("SPIN_US")
        .ok()
        .and_then(|v| v.parse::<u64>().ok());
    let sleeper = spin.map(|us| hotlimit::Precise::new().with_spin(Duration::from_micros(us)));
    println!(
        "{threads} threads share one Pacer: target {rate}/s for {seconds} s \
         (interval {:?}, catch-up {} slots; this machine has {} cores)",
        pacer.interval(),
        pacer.catch_up(),
        thread::available_parallelism().map_or(1, |n| n.get())
    );

    // Each worker records the lateness of its sends in its own buffer; the reporter swaps
    // the buffers out once a second. (A Mutex here is fine: each is uncontended but for that
    // swap, and this is an example, not the library's admission path.)
    let buffers: Vec<Mutex<Vec<u64>>> = (0..threads).map(|_| Mutex::new(Vec::new())).collect();
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let mut all: Vec<u64> = Vec::new();
    thread::scope(|s| {
        for buf in &buffers {
            let (pacer, stop, sleeper) = (&pacer, &stop, &sleeper);
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let tick = match sleeper {
                        Some(sleeper) => pacer.pace_blocking_with(sleeper),
                        None => pacer.pace_blocking(),
                    };
                    // A real generator would send its request here.
                    let late = tick.lateness().as_nanos() as u64;
                    buf.lock().unwrap().push(late);
                }
            });
        }
        let bar = 30usize;
        for sec in 1..=seconds {
            let until = started + Duration::from_secs(sec);
            thread::sleep(until.saturating_duration_since(Instant::now()));
            let mut window: Vec<u64> = Vec::new();
            for buf in &buffers {
                window.append(&mut buf.lock().unwrap());
            }
            let sent = window.len();
            let (p50, p99, max) = percentiles(&mut window);
            all.extend_from_slice(&window);
            let done = (bar as u64 * sec / seconds) as usize;
            println!(
                "[{}{}] {sec:>3}/{seconds} s  {sent:>9}/s ({:>5.1}% of target)  late p50 {:>9}  p99 {:>9}  max {:>9}",
                "#".repeat(done),
                " ".repeat(bar - done),
                100.0 * sent as f64 / rate as f64,
                fmt_ns(p50),
                fmt_ns(p99),
                fmt_ns(max)
            );
        }
        stop.store(true, Ordering::Relaxed);
    });
    let elapsed = started.elapsed().as_secs_f64();
    for buf in &buffers {
        all.append(&mut buf.lock().unwrap());
    }
    let total = all.len();
    let (p50, p99, max) = percentiles(&mut all);
    println!(
        "total {total} sends in {elapsed:.2} s = {:.0}/s ({:.1}% of target); late p50 {}, p99 {}, max {}",
        total as f64 / elapsed,
        100.0 * total as f64 / elapsed / rate as f64,
        fmt_ns(p50),
        fmt_ns(p99),
        fmt_ns(max)
    );
    Ok(())
}
