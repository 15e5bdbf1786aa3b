//! Pacing precision, side by side: hotlimit's `Pacer`, a naive `sleep(1/rate)` loop and
//! governor's `until_ready`, at the same target rate across 1, 2 and 8 threads.
//!
//! ```text
//! cargo bench -p hotlimit-benches --bench pacer_compare -- [seconds_per_run] [rates...]
//! ```
//!
//! Each run sends `rate × seconds` requests in total, split evenly over the threads; every
//! send records its time on one shared clock, from the run's origin (taken just before the
//! limiters are built and the threads spawned). Afterwards the sends are merged and sorted,
//! and the k-th is compared with the ideal schedule `origin + k·I` (I = 1/rate):
//! **lateness** = actual − ideal. It captures both wake-up error and drift (a method that runs
//! slow falls further behind with every send); negative values mean ahead of schedule.
//! **Achieved rate** = (sends − 1) / (last send − origin).
//!
//! `SPIN_US=n` fixes the `Precise` sleeper's spin margin for the `Pacer` rows (default: the
//! adaptive margin; `SPIN_US=100` is the old default).
//!
//! - `Pacer`: `pacer.pace_blocking()` with the default catch-up: up to 10 ms of missed slots
//!   are made up, sent at once.
//! - `PacerStrict`: `catch_up(0)`: a late slot restarts the schedule, so every stall is rate
//!   lost for good, but no two sends are ever closer than 1/rate.
//! - naive: each thread sleeps `threads / rate` between its sends (`std::thread::sleep`).
//! - governor: a direct `RateLimiter` with `Quota::per_second(rate).allow_burst(1)` (the
//!   default burst would let a whole second through at once), `until_ready().await` on a
//!   minimal thread-parking executor; governor's timer is `futures-timer`.

use std::future::Future;
use std::num::NonZeroU32;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use hotlimit::{Pacer, Rate};

#[path = "cli.rs"]
mod cli;

/// Runs a future to completion on this thread, parking between polls.
fn block_on<F: Future>(fut: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        thread::park();
    }
}

#[derive(Clone, Copy, Debug)]
enum Method {
    Pacer,
    PacerStrict,
    Naive,
    Governor,
}

/// Send times (ns since `origin`) of `total` sends over `threads` threads at `rate`.
fn run(method: Method, rate: u64, threads: usize, total: usize, origin: Instant) -> Vec<u64> {
    let each = total / threads;
    let stamp = move || origin.elapsed().as_nanos() as u64;
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    let mut pacer = Pacer::builder(Rate::per_second(rate).unwrap());
    if let Method::PacerStrict = method {
        pacer = pacer.catch_up(0);
    }
    let pacer = pacer.build().unwrap();
    let sleeper = match env("SPIN_US") {
        Some(us) => hotlimit::Precise::new().with_spin(Duration::from_micros(us)),
        None => hotlimit::Precise::new(),
    };
    let quota = governor::Quota::per_second(NonZeroU32::new(rate as u32).unwrap())
        .allow_burst(NonZeroU32::new(1).unwrap());
    let gov = governor::RateLimiter::direct(quota);
    let per_thread_interval = Duration::from_nanos(1_000_000_000 * threads as u64 / rate);
    thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (pacer, gov, sleeper) = (&pacer, &gov, &sleeper);
                s.spawn(move || {
                    let mut sends = Vec::with_capacity(each);
                    match method {
                        Method::Pacer | Method::PacerStrict => {
                            for _ in 0..each {
                                pacer.pace_blocking_with(sleeper);
                                sends.push(stamp());
                            }
                        }
                        Method::Naive => {
                            for _ in 0..each {
                                sends.push(stamp());
                                thread::sleep(per_thread_interval);
                            }
                        }
                        Method::Governor => block_on(async {
                            for _ in 0..each {
                                gov.until_ready().await;
                                sends.push(stamp());
                            }
                        }),
                    }
                    sends
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

struct Report {
    achieved: f64,
    p50: i64,
    p99: i64,
    max: i64,
}

/// `sends` in ns since the run's origin, which is also the ideal schedule's start.
fn report(mut sends: Vec<u64>, rate: u64) -> Report {
    sends.sort_unstable();
    let first = 0;
    let span = sends[sends.len() - 1] - first;
    let interval = 1e9 / rate as f64;
    let mut late: Vec<i64> = sends
        .iter()
        .enumerate()
        .map(|(k, &s)| (s - first) as i64 - (k as f64 * interval) as i64)
        .collect();
    late.sort_unstable();
    let pct = |p: f64| late[((late.len() - 1) as f64 * p).round() as usize];
    Report {
        achieved: (sends.len() - 1) as f64 * 1e9 / span as f64,
        p50: pct(0.50),
        p99: pct(0.99),
        max: late[late.len() - 1],
    }
}

fn fmt_ns(ns: i64) -> String {
    let a = ns.unsigned_abs() as f64;
    let sign = if ns < 0 { "-" } else { "" };
    if a >= 1e6 {
        format!("{sign}{:.1} ms", a / 1e6)
    } else if a >= 1e3 {
        format!("{sign}{:.1} µs", a / 1e3)
    } else {
        format!("{sign}{a:.0} ns")
    }
}

fn main() {
    let mut args = cli::args().into_iter();
    let seconds: f64 = args.next().map_or(0.5, |s| s.parse().expect("seconds"));
    let rates: Vec<u64> = args.map(|s| s.parse().expect("rate")).collect();
    let rates = if rates.is_empty() {
        vec![10_000, 200_000]
    } else {
        rates
    };
    println!(
        "{} cores; {seconds} s per run; lateness = send time − ideal schedule (origin + k/rate)",
        thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!("| rate/s | threads | method | achieved/s | of target | lateness p50 | p99 | max |");
    println!("|---:|---:|---|---:|---:|---:|---:|---:|");
    for &rate in &rates {
        for threads in [1, 2, 8] {
            for method in [
                Method::Pacer,
                Method::PacerStrict,
                Method::Naive,
                Method::Governor,
            ] {
                let total = ((rate as f64 * seconds) as usize).max(threads * 2) / threads * threads;
                let origin = Instant::now();
                let r = report(run(method, rate, threads, total, origin), rate);
                println!(
                    "| {rate} | {threads} | {method:?} | {:.0} | {:.1}% | {} | {} | {} |",
                    r.achieved,
                    100.0 * r.achieved / rate as f64,
                    fmt_ns(r.p50),
                    fmt_ns(r.p99),
                    fmt_ns(r.max)
                );
            }
        }
    }
}
