//! hotlimit's limiters next to the peers users would pick instead, and floors, in one process.
//!
//! ```text
//! cargo bench -p hotlimit-benches --bench limiters                       # everything (~3 min)
//! cargo bench -p hotlimit-benches --bench limiters -- single_threaded    # one module
//! cargo bench -p hotlimit-benches --bench scaling                        # 1..16 threads on one limiter
//! bash benches/callgrind.sh                          # instructions per call
//! ```
//!
//! The rows (limiters, peers, floors) are in `limiters/rows.rs`: adding a limiter is one line.
//! Results and the machine they were measured on: BENCHMARKS.md.

#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};

#[path = "limiters/clock.rs"]
mod clock;
#[path = "limiters/contended.rs"]
mod contended;
#[path = "limiters/rows.rs"]
mod rows;
#[path = "limiters/single_threaded.rs"]
mod single_threaded;
#[path = "limiters/threads.rs"]
mod threads;

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20)
}

criterion_group! {
    name = benches;
    config = config();
    targets = single_threaded::bench, contended::bench, clock::bench
}
criterion_main!(benches);
