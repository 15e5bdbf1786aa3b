//! `Keyed` and `IntKeyed` beside governor's and rate-net's keyed limiters: the figures behind
//! the `## Keyed` section of BENCHMARKS.md.
//!
//! ```text
//! cargo bench -p hotlimit-benches --bench keyed_compare -- paired   # u64 and String keys, interleaved rounds
//! COARSE=1 cargo bench -p hotlimit-benches --bench keyed_compare -- paired   # each crate's coarse clock
//! OSCLOCK=1 cargo bench -p hotlimit-benches --bench keyed_compare -- paired  # each on clock_gettime (no TSC)
//! cargo bench -p hotlimit-benches --bench keyed_compare -- algos    # Keyed over Gcra / GcraPair / log / window
//! cargo bench -p hotlimit-benches --bench keyed_compare -- mem-all  # bytes per key, one fresh process per row
//! cargo bench -p hotlimit-benches --bench keyed_compare -- flood    # steady clients under a flood (ManualClock)
//! cargo bench -p hotlimit-benches --bench keyed_compare -- maps     # papaya / scc / dashmap lookups
//! # one peer or component on one thread, e.g. under callgrind (WHAT: see `prof`):
//! PROF_REPS=5 cargo bench -p hotlimit-benches --bench keyed_compare -- prof hotlimit 100000 shuffled
//! valgrind --tool=callgrind --toggle-collect='*calls*' \
//!     "$(cargo bench -p hotlimit-benches --bench keyed_compare --no-run 2>&1 | grep -o 'target/[^)]*')" prof governor 1000
//! ```
//!
//! `paired` and `algos` take `KEYS` (default `1000,100000,1000000`), `THREADS` (default
//! `1,2,16`: on a machine with fewer cores, the higher counts are oversubscribed), `ORDER`
//! (default `seq,shuffled`: keys created and looked up in order, or both shuffled), `KEYVALS`
//! (default `seq`: the `u64` keys are the indices 0 .. n; `random`: a fixed bijection of them,
//! keys with no structure, see `keys::u64_key`; `prof` and `mem` take it too), `ROUNDS`
//! (15) and `CHUNK` (100,000 calls per thread and chunk). Every key exists before timing and
//! nothing is denied, so the rows measure the lookup plus the grant. Each row's ns/call is the
//! median over rounds of the wall time per call and thread; each ratio is the peer's time ÷
//! ours within a round (above 1: ours faster), median [25th–75th percentile]: the rows of a
//! round share whatever else the machine was doing, which separate runs do not.

#[path = "cli.rs"]
mod cli;
#[path = "keyed_compare/flood.rs"]
mod flood;
#[path = "keyed_compare/keys.rs"]
mod keys;
#[path = "keyed_compare/mem.rs"]
mod mem;
#[path = "keyed_compare/paired.rs"]
mod paired;
#[path = "keyed_compare/prof.rs"]
mod prof;

use keys::Order;

/// `std::time::Instant` as a hotlimit clock: `clock_gettime(CLOCK_MONOTONIC)`, what
/// `QuantaClock` reads where the CPU reports no invariant TSC.
#[derive(Clone)]
struct OsClock(std::time::Instant);

impl Default for OsClock {
    fn default() -> Self {
        OsClock(std::time::Instant::now())
    }
}

impl hotlimit::Clock for OsClock {
    #[inline]
    fn now(&self) -> u64 {
        u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

fn main() {
    let args = cli::args();
    // No mode (as under a bare `cargo bench`): the paired mode, the one BENCHMARKS.md reports.
    let mode = args.first().map_or("paired", String::as_str);
    match mode {
        "paired" if std::env::var_os("COARSE").is_some() => {
            // Each crate's coarse clock (ours: CoarseClock, governor's: QuantaUpkeepClock,
            // rate-net's: CoarseClock), each updated every 1 ms by a thread.
            let ms = std::time::Duration::from_millis(1);
            paired::paired_mode(
                hotlimit::CoarseClock::with_resolution(ms).unwrap(),
                governor::clock::QuantaUpkeepClock::from_interval(ms).unwrap(),
                rate_net::CoarseClock::spawn(ms).unwrap(),
            );
        }
        "paired" if std::env::var_os("OSCLOCK").is_some() => {
            // Each crate on the operating system's monotonic clock (`clock_gettime` through
            // the vDSO), the clock quanta falls back to where the CPU does not report an
            // invariant TSC (as in many virtual machines).
            paired::paired_mode(
                OsClock::default(),
                governor::clock::MonotonicClock,
                clock_lib::SystemClock::new(),
            );
        }
        "paired" => paired::paired_mode(
            hotlimit::DefaultClock::default(),
            governor::clock::QuantaClock::default(),
            clock_lib::SystemClock::new(),
        ),
        "algos" => paired::algos_mode(),
        "flood" => flood::flood_mode(),
        "maps" => prof::maps_mode(),
        "mem-all" => mem::mem_all(),
        m if m.starts_with("mem-") => mem::mem_mode(m),
        "prof" => {
            let what = args.get(1).expect("prof WHAT NKEYS [seq|shuffled]");
            let n = args.get(2).map_or(1000, |s| s.parse().unwrap());
            let order = match args.get(3).map(String::as_str) {
                Some("seq") => Order::Seq,
                _ => Order::Shuffled,
            };
            prof::prof(what, n, order);
        }
        other => {
            eprintln!("unknown mode {other}: paired, algos, flood, mem-all, mem-ROW, maps, prof");
            std::process::exit(2);
        }
    }
}
