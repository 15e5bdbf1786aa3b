//! The single-thread paths under callgrind: `callgrind ROW PATH ITERS` runs ITERS calls of
//! ROW's `try_acquire` inside `measured`, statically dispatched, so that
//! `valgrind --tool=callgrind --toggle-collect='*measured*'` counts exactly those calls.
//! `benches/callgrind.sh` runs every row and subtracts the `empty` row (the loop itself).

#[path = "../benches/limiters/rows.rs"]
mod rows;

use std::hint::black_box;

use hotlimit::{Denied, Gcra, Limiter, QuantaClock, ShardedGcra, SlidingLog, SlidingWindow};
use rows::*;

/// The loop every row runs; `#[inline(never)]` so callgrind can toggle collection on it.
#[inline(never)]
fn measured<L: Limiter>(l: &L, iters: u64) -> u64 {
    let mut granted = 0;
    for _ in 0..iters {
        granted += u64::from(black_box(l.try_acquire().is_ok()));
    }
    granted
}

/// The loop with nothing inside: the baseline subtracted from every row.
struct Empty;

impl Limiter for Empty {
    #[inline]
    fn try_acquire_n(&self, _: u32) -> Result<(), Denied> {
        Ok(())
    }
}

fn run<L: Limiter>(l: L, path: Path, iters: u64) {
    if path == Path::Denied {
        // Exhaust outside the measured loop (floors and `empty` never deny: stop at 2).
        for _ in 0..2 {
            if l.try_acquire().is_err() {
                break;
            }
        }
    }
    let granted = measured(&l, iters);
    eprintln!("granted {granted} of {iters}");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(row), Some(path), Some(iters)) = (args.get(1), args.get(2), args.get(3)) else {
        eprintln!("usage: callgrind ROW allowed|busy|denied ITERS");
        std::process::exit(2);
    };
    let path = match path.as_str() {
        "denied" => Path::Denied,
        "busy" => Path::Busy,
        _ => Path::Allowed,
    };
    let iters: u64 = iters.parse().expect("ITERS is a number");
    let s = path.setup();
    match row.as_str() {
        "empty" => run(Empty, path, iters),
        "Gcra" => run(
            Gcra::builder(s.rate()).burst(s.burst).build().unwrap(),
            path,
            iters,
        ),
        "Gcra+CoarseClock" => run(
            Gcra::builder(s.rate())
                .burst(s.burst)
                .clock(coarse())
                .build()
                .unwrap(),
            path,
            iters,
        ),
        "ShardedGcra" => run(
            ShardedGcra::builder(s.rate())
                .burst(s.burst)
                .build()
                .unwrap(),
            path,
            iters,
        ),
        "SlidingWindow" if path != Path::Busy => {
            run(SlidingWindow::new(s.rate()).unwrap(), path, iters)
        }
        "SlidingLog" if path != Path::Busy => run(SlidingLog::new(s.rate()).unwrap(), path, iters),
        "GcraPair" => run(gcra_pair(&s), path, iters),
        "GcraMulti2" => run(gcra_multi(&s, 2), path, iters),
        "GcraMulti3" => run(gcra_multi(&s, 3), path, iters),
        "Gcra-then-Gcra" => run(GcraThenGcra::new(&s), path, iters),
        "governor-then-governor" => run(GovernorThenGovernor::new(&s), path, iters),
        "throttle-net-hybrid2" => run(ThrottleNetHybrid::new(&s), path, iters),
        "governor" => run(GovernorDirect::new(&s), path, iters),
        "governor-keyed" => run(GovernorKeyed::new(&s), path, iters),
        "ratelimit" => run(RatelimitCrate::new(&s), path, iters),
        "mutex-log" if path != Path::Busy => run(MutexLog::new(&s), path, iters),
        "mutex-bucket" => run(MutexBucket::new(&s), path, iters),
        "quanta-now" => run(ClockRead(QuantaClock::new()), path, iters),
        "coarse-now" => run(ClockRead(coarse()), path, iters),
        "instant-now" => run(InstantNow::new(), path, iters),
        "fetch-add" => run(SharedFetchAdd::default(), path, iters),
        "cas-loop" => run(SharedCas::default(), path, iters),
        other => {
            eprintln!("unknown row {other}");
            std::process::exit(2);
        }
    }
}
