//! The layer's own cost per request: `oneshot` on a trivial service (its future is ready at
//! once, polled without a runtime), with no limiter, with this layer (global key; per client IP;
//! per client IP with the legacy headers too) and with `tower-governor` (per client IP, without
//! and with its headers), every request admitted. The rows are in `rows.rs`, shared with the
//! instruction counts of `examples/layer_callgrind.rs`.
//!
//!     cargo bench -p hotlimit-tower --bench layer
#![allow(missing_docs)]

mod rows;

use std::convert::Infallible;

use axum::body::Body;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use http::{Request, Response};
use rows::{one, with_row, Row, ROWS};
use tower::Service;

struct Bench<'a>(&'a mut Criterion);

impl Row for Bench<'_> {
    fn row<S, B>(&mut self, name: &str, svc: S)
    where
        S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Clone,
    {
        let mut group = self.0.benchmark_group("layer");
        group.throughput(Throughput::Elements(1));
        let mut i = 0u32;
        group.bench_function(name, |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                black_box(one(&svc, i))
            })
        });
        group.finish();
    }
}

fn bench(c: &mut Criterion) {
    for name in ROWS {
        with_row(name, &mut Bench(c));
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
