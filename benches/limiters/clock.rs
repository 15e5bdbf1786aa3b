//! Clock reads, called directly (no `dyn`): what a limiter's `try_acquire` pays before it
//! touches its state.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use hotlimit::{Clock, CoarseClock, QuantaClock};

pub(crate) fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("clock");
    group.throughput(Throughput::Elements(1));
    let quanta = quanta::Clock::new();
    group.bench_function("quanta::Clock::now", |b| b.iter(|| black_box(quanta.now())));
    let _upkeep = quanta::Upkeep::new(Duration::from_millis(1)).start();
    group.bench_function("quanta::Clock::recent", |b| {
        b.iter(|| black_box(quanta.recent()))
    });
    let ours = QuantaClock::new();
    group.bench_function("QuantaClock::now", |b| b.iter(|| black_box(ours.now())));
    let coarse = CoarseClock::new();
    group.bench_function("CoarseClock::now", |b| b.iter(|| black_box(coarse.now())));
    group.bench_function("Instant::now", |b| b.iter(|| black_box(Instant::now())));
    group.finish();
}
