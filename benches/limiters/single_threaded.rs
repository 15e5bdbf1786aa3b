//! One thread, one limiter: the cost of a call on each path, every row in the same group.

use std::hint::black_box;

use criterion::{Criterion, Throughput};

use crate::rows::{rows, Path};

pub(crate) fn bench(c: &mut Criterion) {
    for path in Path::ALL {
        let mut group = c.benchmark_group(format!("single_threaded/{}", path.name()));
        group.throughput(Throughput::Elements(1));
        for row in rows(path) {
            let l = row.limiter;
            group.bench_function(row.name, |b| b.iter(|| black_box(l.try_acquire().is_ok())));
        }
        group.finish();
    }
}
