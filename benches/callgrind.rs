//! The single-thread paths under callgrind: `callgrind ROW PATH ITERS` runs ITERS calls of
//! ROW's `try_acquire` inside `measured`, statically dispatched, so that
//! `valgrind --tool=callgrind --toggle-collect='*measured*'` counts exactly those calls.
//! `benches/callgrind.sh` runs every row and subtracts the `empty` row (the loop itself).

#[path = "cli.rs"]
mod cli;
#[path = "limiters/rows.rs"]
mod rows;

use std::hint::black_box;

use std::hash::Hash;
use std::net::Ipv4Addr;

use hotlimit::{
    Denied, Gcra, IntKey, IntKeyed, Keyed, Limiter, MultiWindow, QuantaClock, ShardedGcra,
    ShortKey, SlidingLog, SlidingWindow,
};
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

/// A per-key limiter's row: every call on one existing key (created outside the loop by the
/// first call), looked up by `&K`.
struct KeyedRow<K>(Keyed<K, Gcra>, K);

impl<K: Hash + Eq + Clone + Send + Sync + 'static> Limiter for KeyedRow<K> {
    #[inline]
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        self.0.try_acquire_n(&self.1, permits)
    }
}

/// As [`KeyedRow`] for a `Keyed<String, _>` looked up by `&str`.
struct KeyedStrRow(Keyed<String, Gcra>, &'static str);

impl Limiter for KeyedStrRow {
    #[inline]
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        self.0.try_acquire_n(self.1, permits)
    }
}

/// As [`KeyedRow`] for a `Keyed<ShortKey, _>`, the key converted from a `&str` on each call
/// (as a server converts the key it parsed).
struct KeyedShortRow(Keyed<ShortKey, Gcra>, &'static str);

impl Limiter for KeyedShortRow {
    #[inline]
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        let key = ShortKey::new(black_box(self.1)).expect("a short key");
        self.0.try_acquire_n(&key, permits)
    }
}

/// As [`KeyedRow`] for an `IntKeyed`.
struct IntKeyedRow<K>(IntKeyed<K>, K);

impl<K: IntKey> Limiter for IntKeyedRow<K> {
    #[inline]
    fn try_acquire_n(&self, permits: u32) -> Result<(), Denied> {
        self.0.try_acquire_n(self.1, permits)
    }
}

/// An `sdd` epoch guard entered and left, as `Keyed`'s table does once a call (issue 26).
struct SddGuard;

impl Limiter for SddGuard {
    #[inline]
    fn try_acquire_n(&self, _: u32) -> Result<(), Denied> {
        black_box(&sdd::Guard::new());
        Ok(())
    }
}

/// A `seize` guard (papaya's: its map's `guard()`) entered and left: the candidate that would
/// replace `sdd` (issue 26).
struct SeizeGuard(papaya::HashMap<u64, u64>);

impl Limiter for SeizeGuard {
    #[inline]
    fn try_acquire_n(&self, _: u32) -> Result<(), Denied> {
        black_box(&self.0.guard());
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
    let args = cli::args();
    if args.is_empty() {
        // `cargo bench` with no filter runs every bench target: this one only counts under
        // valgrind, so it says how and succeeds.
        println!("callgrind: run `bash benches/callgrind.sh` (needs valgrind)");
        return;
    }
    let (Some(row), Some(path), Some(iters)) = (args.first(), args.get(1), args.get(2)) else {
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
        // Exhausted by `sharded16` on the denied path (`run`'s two calls stop at the first
        // denial either way).
        "ShardedGcra16" => run(sharded16(path), path, iters),
        "SlidingWindow" if path != Path::Busy => {
            run(SlidingWindow::new(s.rate()).unwrap(), path, iters)
        }
        "SlidingLog" if path != Path::Busy => run(SlidingLog::new(s.rate()).unwrap(), path, iters),
        // Two windows of the path's rate: counted rings, or exact logs (issue 45).
        "MultiWindow2" if path != Path::Busy => run(
            MultiWindow::builder()
                .window(s.rate())
                .window(s.rate())
                .build()
                .unwrap(),
            path,
            iters,
        ),
        "MultiWindow2-log" if path != Path::Busy => run(
            MultiWindow::builder()
                .exact(s.rate())
                .exact(s.rate())
                .build()
                .unwrap(),
            path,
            iters,
        ),
        "GcraPair" => run(gcra_pair(&s), path, iters),
        "GcraMulti2" => run(gcra_multi(&s, 2), path, iters),
        "GcraMulti3" => run(gcra_multi(&s, 3), path, iters),
        "Gcra-then-Gcra" => run(GcraThenGcra::new(&s), path, iters),
        "governor-then-governor" => run(GovernorThenGovernor::new(&s), path, iters),
        "throttle-net-hybrid2" => run(ThrottleNetHybrid::new(&s), path, iters),
        "governor" => run(GovernorDirect::new(&s), path, iters),
        "governor-keyed" => run(GovernorKeyed::new(&s), path, iters),
        "ratelimit" => run(RatelimitCrate::new(&s), path, iters),
        "rate-net" => run(
            RateNetDirect::new(&s, clock_lib::SystemClock::new()),
            path,
            iters,
        ),
        "rate-net+CoarseClock" => run(RateNetDirect::new(&s, rate_net_coarse()), path, iters),
        "rate-net-keyed" => run(RateNetKeyed::new(&s), path, iters),
        "mutex-log" if path != Path::Busy => run(MutexLog::new(&s), path, iters),
        "mutex-bucket" => run(MutexBucket::new(&s), path, iters),
        "quanta-now" => run(ClockRead(QuantaClock::new()), path, iters),
        "coarse-now" => run(ClockRead(coarse()), path, iters),
        "instant-now" => run(InstantNow::new(), path, iters),
        "fetch-add" => run(SharedFetchAdd::default(), path, iters),
        "cas-loop" => run(SharedCas::default(), path, iters),
        "sdd-guard" => run(SddGuard, path, iters),
        "seize-guard" => run(SeizeGuard(papaya::HashMap::new()), path, iters),
        "Keyed-u64" => run(
            KeyedRow(Keyed::gcra(s.rate()).burst(s.burst).build().unwrap(), 42u64),
            path,
            iters,
        ),
        "Keyed-String" => run(
            KeyedRow(
                Keyed::gcra(s.rate()).burst(s.burst).build().unwrap(),
                String::from("user-42"),
            ),
            path,
            iters,
        ),
        "Keyed-str" => run(
            KeyedStrRow(
                Keyed::gcra(s.rate()).burst(s.burst).build().unwrap(),
                "user-42",
            ),
            path,
            iters,
        ),
        "Keyed-short" => run(
            KeyedShortRow(
                Keyed::gcra(s.rate()).burst(s.burst).build().unwrap(),
                "user-42",
            ),
            path,
            iters,
        ),
        "IntKeyed-u64" => run(
            IntKeyedRow(
                IntKeyed::builder(s.rate()).burst(s.burst).build().unwrap(),
                42u64,
            ),
            path,
            iters,
        ),
        "IntKeyed-Ipv4Addr" => run(
            IntKeyedRow(
                IntKeyed::builder(s.rate()).burst(s.burst).build().unwrap(),
                Ipv4Addr::new(192, 0, 2, 42),
            ),
            path,
            iters,
        ),
        "IntKeyed-IpAddr-v6" => run(
            IntKeyedRow(
                IntKeyed::builder(s.rate()).burst(s.burst).build().unwrap(),
                std::net::IpAddr::from([0x2001, 0xdb8, 0, 0x42, 0, 0, 0, 1]),
            ),
            path,
            iters,
        ),
        other => {
            eprintln!("unknown row {other}");
            std::process::exit(2);
        }
    }
}
