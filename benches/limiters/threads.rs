//! Running one shared limiter on many threads: a timed run (for `benches/scaling.rs`) and a
//! fixed-count run (for criterion's `iter_custom`).

#![allow(dead_code)]

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use hotlimit::Limiter;

/// Calls between two looks at the stop flag.
const BATCH: u64 = 256;

/// What one timed run did, summed over its threads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample {
    pub(crate) calls: u64,
    pub(crate) granted: u64,
    pub(crate) secs: f64,
}

impl Sample {
    /// Total calls per second over all threads, in millions.
    pub(crate) fn mops(&self) -> f64 {
        self.calls as f64 / self.secs / 1e6
    }
}

/// `threads` threads call `l.try_acquire()` for about `dur`; the time counted runs from the
/// first thread's first call to the last thread's last batch (each thread notes both), so
/// every counted call lies inside it, however late the threads or the timer are scheduled.
///
/// (The main thread's own clock is not used: on an oversubscribed machine it may be
/// descheduled right after releasing the threads, and a start taken then would miss their
/// first calls: 64 threads on 2 cores gave cells of thousands of Mops/s that way.)
pub(crate) fn run_for(l: &dyn Limiter, threads: usize, dur: Duration) -> Sample {
    let stop = AtomicBool::new(false);
    let barrier = Barrier::new(threads + 1);
    thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    let start = Instant::now();
                    let (mut calls, mut granted) = (0u64, 0u64);
                    // Relaxed: a stop signal; a few more batches after it are harmless.
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..BATCH {
                            granted += u64::from(black_box(l.try_acquire().is_ok()));
                        }
                        calls += BATCH;
                    }
                    (calls, granted, start, Instant::now())
                })
            })
            .collect();
        barrier.wait();
        thread::sleep(dur);
        stop.store(true, Ordering::Relaxed);
        let (mut calls, mut granted) = (0, 0);
        let (mut first, mut last): (Option<Instant>, Option<Instant>) = (None, None);
        for h in handles {
            let (c, g, start, end) = h.join().unwrap();
            calls += c;
            granted += g;
            first = Some(first.map_or(start, |f| f.min(start)));
            last = Some(last.map_or(end, |l| l.max(end)));
        }
        Sample {
            calls,
            granted,
            secs: last.unwrap().duration_since(first.unwrap()).as_secs_f64(),
        }
    })
}

/// `threads` threads share `iters` calls; the wall time from release to the last join.
pub(crate) fn run_iters(l: &dyn Limiter, threads: usize, iters: u64) -> Duration {
    let barrier = Barrier::new(threads + 1);
    let per = iters / threads as u64 + 1;
    thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    for _ in 0..per {
                        black_box(l.try_acquire().is_ok());
                    }
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        for h in handles {
            h.join().unwrap();
        }
        start.elapsed()
    })
}
