//! Many cores hammering one limit: `ShardedGcra` splits one rate over per-core GCRA words, so
//! threads rarely touch the same cache line, while the total never goes over one `Gcra`'s.
//!
//! ```text
//! cargo run --release --example many_cores -- [threads]   # default: the number of cores
//! ```
//!
//! Every thread calls `try_acquire` in a loop for one second, first on a `Gcra`, then on a
//! `ShardedGcra`, at two limits: one far above what the threads can call (every call is
//! granted: the cost of a grant under contention, where `Gcra`'s one word moves between cores
//! on every grant and the shards' words do not), and 1,000,000 per second (the limit binds:
//! both grant at most the rate plus the burst; a sharded denial looks at every shard before
//! it refuses, so it costs more than `Gcra`'s one load). The gain grows with the cores: on two
//! there is little to win.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use hotlimit::{Gcra, Limiter, Rate, ShardedGcra};

/// `threads` threads call `limiter` for one second: (calls, granted).
fn hammer(limiter: &dyn Limiter, threads: usize) -> (u64, u64) {
    let stop = AtomicBool::new(false);
    let (calls, granted) = (AtomicU64::new(0), AtomicU64::new(0));
    thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let (mut c, mut g) = (0, 0);
                // Relaxed: a stop flag; a few calls after it are harmless.
                while !stop.load(Ordering::Relaxed) {
                    c += 1;
                    g += u64::from(limiter.try_acquire().is_ok());
                }
                // Relaxed: the totals are read after the scope joins the threads.
                calls.fetch_add(c, Ordering::Relaxed);
                granted.fetch_add(g, Ordering::Relaxed);
            });
        }
        thread::sleep(Duration::from_secs(1));
        // Relaxed: see the load above.
        stop.store(true, Ordering::Relaxed);
    });
    (calls.into_inner(), granted.into_inner())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cores = thread::available_parallelism().map_or(1, |n| n.get());
    let threads = match std::env::args().nth(1) {
        Some(t) => t.parse()?,
        None => cores,
    };
    println!("{threads} threads on {cores} cores, 1 s per run:");
    // A limit no thread reaches, then 1,000,000 per second with bursts of up to 10,000 (10 ms).
    for (limit, burst) in [(1_000_000_000, 1_000_000_000), (1_000_000, 10_000)] {
        let rate = Rate::per_second(limit)?;
        let single = Gcra::builder(rate).burst(burst).build()?;
        let sharded = ShardedGcra::builder(rate).burst(burst).build()?;
        for (name, limiter) in [
            ("Gcra", &single as &dyn Limiter),
            ("ShardedGcra", &sharded as &dyn Limiter),
        ] {
            let (calls, granted) = hammer(limiter, threads);
            println!(
                "limit {limit:>13}/s {name:>12}: {:>6.1} M calls, {granted:>10} granted",
                calls as f64 / 1e6
            );
        }
    }
    Ok(())
}
