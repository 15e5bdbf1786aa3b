//! Two threads on ONE shared limiter (this machine has 2 cores): total calls per second.
//! `benches/scaling.rs` goes on to 16 threads.

use criterion::{Criterion, Throughput};

use crate::rows::{rows, Path};
use crate::threads::run_iters;

const THREADS: usize = 2;

pub(crate) fn bench(c: &mut Criterion) {
    for path in Path::ALL {
        let mut group = c.benchmark_group(format!("contended_{THREADS}_threads/{}", path.name()));
        // One element per call, summed over the threads: criterion reports total throughput.
        group.throughput(Throughput::Elements(1));
        for row in rows(path) {
            let l = row.limiter;
            group.bench_function(row.name, |b| {
                b.iter_custom(|iters| run_iters(&*l, THREADS, iters))
            });
        }
        group.finish();
    }
}
