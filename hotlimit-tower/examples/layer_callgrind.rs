//! Instruction counts of one request through the layer, under callgrind (the noise-free figure
//! on a shared machine): `layer_callgrind ROW ITERS` sends ITERS requests through row ROW of
//! `benches/rows.rs` inside `measured`.
//!
//!     cargo build --release -p hotlimit-tower --example layer_callgrind
//!     for row in none "none +fields" "hotlimit-tower global" "hotlimit-tower global, r varies" \
//!         "hotlimit-tower per-ip" "hotlimit-tower per-ip Keyed" "hotlimit-tower per-ip +legacy" \
//!         "tower-governor per-ip" "tower-governor per-ip +headers"; do
//!       valgrind --tool=callgrind --toggle-collect='*measured*' --callgrind-out-file=/tmp/cg \
//!         target/release/examples/layer_callgrind "$row" 20000 2>/dev/null
//!       echo "$row: $(grep -E '^summary:' /tmp/cg | cut -d' ' -f2)"
//!     done
//!
//! Divide by ITERS (the 256 warm-up requests are counted too: 1.3 % over); the `none` row is
//! the trivial service alone, `none +fields` the same service inserting two fixed fields.
//! Per function: add `--dump-instr=no` and read `callgrind_annotate --inclusive=yes /tmp/cg`
//! (a build with `CARGO_PROFILE_RELEASE_DEBUG=line-tables-only` names the source lines; its
//! instructions are the same).

#[path = "../benches/rows.rs"]
mod rows;

use std::convert::Infallible;
use std::hint::black_box;

use axum::body::Body;
use http::{Request, Response};
use rows::{one, with_row, Row, ROWS};
use tower::Service;

/// The loop callgrind counts; never inlined so that `--toggle-collect` finds it.
#[inline(never)]
fn measured<S, B>(svc: &S, iters: u32) -> u32
where
    S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Clone,
{
    let mut ok = 0;
    for i in 0..iters {
        ok += u32::from(black_box(one(svc, i)));
    }
    ok
}

struct Count(u32);

impl Row for Count {
    fn row<S, B>(&mut self, name: &str, svc: S)
    where
        S: Service<Request<Body>, Response = Response<B>, Error = Infallible> + Clone,
    {
        // Warm: every client's key exists before the measured loop.
        measured(&svc, 256);
        let ok = measured(&svc, self.0);
        eprintln!("{name}: {ok} of {} admitted", self.0);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let row = args.get(1).map_or("none", String::as_str);
    if !ROWS.contains(&row) {
        eprintln!("usage: layer_callgrind ROW [ITERS]; ROW is one of {ROWS:?}");
        std::process::exit(2);
    }
    let iters = args
        .get(2)
        .map_or(20_000, |s| s.parse().expect("ITERS is a number"));
    with_row(row, &mut Count(iters));
}
