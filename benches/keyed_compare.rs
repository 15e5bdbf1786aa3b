//! IntKeyed<u64> and Keyed<u64, Gcra> beside governor's and rate-net's keyed limiters, the
//! candidate concurrent maps, and bytes per key: the figures behind the `## Keyed` section of
//! BENCHMARKS.md and the choice of papaya.
//!
//! ```text
//! cargo bench --bench keyed_compare -- governor   # IntKeyed, Keyed vs governor check_key
//! cargo bench --bench keyed_compare -- paired     # the same, interleaved in chunks
//! COARSE=1 IK_CAP=2 cargo bench --bench keyed_compare -- paired  # coarse clocks
//! cargo bench --bench keyed_compare -- maps       # papaya / scc / dashmap lookups
//! cargo bench --bench keyed_compare -- mem-hotlimit   # one fresh process per peer:
//! cargo bench --bench keyed_compare -- mem-governor   # RSS growth over 1M keys
//! cargo bench --bench keyed_compare -- mem-ratenet
//! cargo bench --bench keyed_compare -- mem-log        # (Linux: reads /proc)
//! cargo bench --bench keyed_compare -- mem-window     # SlidingWindow, 10 buckets
//! cargo bench --bench keyed_compare -- algos   # Keyed over Gcra / SlidingLog / SlidingWindow
//! # one peer or component on one thread, e.g. under callgrind (WHAT: see `prof`):
//! PROF_REPS=5 cargo bench --bench keyed_compare -- prof hotlimit 100000   # Keyed
//! PROF_REPS=5 cargo bench --bench keyed_compare -- prof intkeyed 100000   # IntKeyed
//! valgrind --tool=callgrind --toggle-collect='*hot_loop*' \
//!     "$(cargo bench --bench keyed_compare --no-run 2>&1 | grep -o 'target/[^)]*')" prof governor 1000
//! ```
//!
//! IntKeyed gets capacity = 1.25 × the number of keys (see `int_keyed_capacity`; its table,
//! allocated at build, is the power of two ≥ 2 × capacity slots of 16 bytes); `IK_CAP=2`
//! gives it Keyed's 2 × keys, `IK_CAP=1` exactly the keys.
//!
//! Every key exists before timing starts and the rate is so high that nothing is denied, so
//! this measures the lookup plus the grant. In the `governor` mode each cell is the minimum
//! (the run least disturbed by other processes; set `REPS`, default 5) of runs of 2,000,000
//! calls per thread, as wall and on-CPU time; the machine's load changes the figures a lot,
//! so compare within a run. The `paired` mode interleaves the limiters in short chunks and
//! takes the ratio within each round, which holds steady where separate runs drift by 2×:
//! the figures BENCHMARKS.md judges the targets on.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Instant;

use hotlimit::{DefaultClock, Gcra, IntKeyed, Keyed, KeyedBuilder, Rate};

#[path = "cli.rs"]
mod cli;

const OPS: u64 = 2_000_000;

fn keys(n: u64) -> Vec<u64> {
    // A fixed pseudo-random walk over the key space.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..OPS)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        })
        .collect()
}

/// This thread's time on a CPU so far, in ns (Linux: `/proc/thread-self/schedstat`), or
/// `None` where it cannot be read. Unlike wall time it leaves out the time the thread waited
/// for a core, so it stays comparable while other processes load the machine (cache
/// pollution and, with 2 threads, reduced overlap still show). The kernel updates it at
/// scheduler ticks: about ±4 ms per reading, ±2 ns/call over 2,000,000 calls.
fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// One key sequence per thread: the same walk, rotated so threads do not run in step.
fn thread_keys(threads: usize, nkeys: u64) -> Vec<Vec<u64>> {
    (0..threads)
        .map(|t| {
            let mut k = keys(nkeys);
            k.rotate_left(t * 7919);
            k
        })
        .collect()
}

/// ns per call (wall, on-CPU), `threads` threads each running OPS calls of `f` on their own
/// key sequence; on-CPU is NaN where it cannot be read.
fn run<F: Fn(u64) + Sync>(threads: usize, nkeys: u64, f: F) -> (f64, f64) {
    let seqs = thread_keys(threads, nkeys);
    let barrier = Barrier::new(threads);
    let total = AtomicU64::new(0);
    let cpu_total = AtomicU64::new(0);
    let cpu_ok = std::sync::atomic::AtomicBool::new(true);
    std::thread::scope(|s| {
        for seq in &seqs {
            let (f, barrier, total, cpu_total, cpu_ok) =
                (&f, &barrier, &total, &cpu_total, &cpu_ok);
            s.spawn(move || {
                barrier.wait();
                let c0 = cpu_ns();
                let t0 = Instant::now();
                for &k in seq {
                    f(k);
                }
                total.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
                match (c0, cpu_ns()) {
                    (Some(a), Some(b)) => {
                        cpu_total.fetch_add(b - a, Ordering::Relaxed);
                    }
                    _ => cpu_ok.store(false, Ordering::Relaxed),
                }
            });
        }
    });
    // per-call latency averaged over threads, then throughput = threads / latency
    let calls = (threads as u64 * OPS) as f64;
    let cpu = if cpu_ok.load(Ordering::Relaxed) {
        cpu_total.load(Ordering::Relaxed) as f64 / calls
    } else {
        f64::NAN
    };
    (total.load(Ordering::Relaxed) as f64 / calls, cpu)
}

/// Interleaved, paired timing of several limiters on the same threads: `rounds` rounds; in
/// each, every limiter in turn (the order rotating each round) runs two chunks of `chunk`
/// calls per thread, all threads starting each chunk together. Returns, per round and
/// limiter, the ns per call (wall, averaged over threads) of the first chunk (right after
/// another limiter ran: its table partly out of the caches, as in a server doing other work
/// between checks) and of the second (warm). A disturbance from outside (another virtual
/// machine on the host, seconds long here) falls on the limiters of one round alike, so the
/// ratio within a round stays meaningful where separate runs drift by 2x.
fn paired(
    threads: usize,
    nkeys: u64,
    rounds: usize,
    chunk: usize,
    fs: &[&(dyn Fn(u64) + Sync)],
) -> Vec<Vec<[f64; 2]>> {
    let seqs = thread_keys(threads, nkeys);
    let barrier = Barrier::new(threads);
    let sums: Vec<Vec<[AtomicU64; 2]>> = (0..rounds)
        .map(|_| {
            fs.iter()
                .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
                .collect()
        })
        .collect();
    std::thread::scope(|s| {
        for seq in &seqs {
            let (barrier, sums) = (&barrier, &sums);
            s.spawn(move || {
                let mut at = 0;
                for (r, sum) in sums.iter().enumerate() {
                    for j in 0..fs.len() {
                        let which = (r + j) % fs.len();
                        for time in &sum[which] {
                            if at + chunk > seq.len() {
                                at = 0;
                            }
                            let part = &seq[at..at + chunk];
                            at += chunk;
                            barrier.wait();
                            let t0 = Instant::now();
                            for &k in part {
                                fs[which](k);
                            }
                            time.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    let calls = (threads * chunk) as f64;
    let per_call = |t: &AtomicU64| t.load(Ordering::Relaxed) as f64 / calls;
    sums.iter()
        .map(|r| r.iter().map(|[a, b]| [per_call(a), per_call(b)]).collect())
        .collect()
}

/// The floor of IntKeyed's layout: one 16-byte `{key, state}` slot per key (direct-mapped,
/// collisions simply skipped) in a table of IntKeyed's size for `n` keys at capacity `n`;
/// a call loads its key's slot and CASes a new state in. No flags, no second bucket, no GCRA.
struct Slot128Floor {
    table: Vec<portable_atomic::AtomicU128>,
    mask: usize,
    hasher: foldhash::fast::FixedState,
}

impl Slot128Floor {
    fn new(n: u64) -> Self {
        let mask = (2 * n).next_power_of_two() as usize - 1;
        let floor = Slot128Floor {
            table: (0..=mask)
                .map(|_| portable_atomic::AtomicU128::new(0))
                .collect(),
            mask,
            hasher: foldhash::fast::FixedState::default(),
        };
        for k in 0..n {
            floor.table[floor.index(k)].store(u128::from(k) << 64, Ordering::Relaxed);
        }
        floor
    }

    fn index(&self, k: u64) -> usize {
        std::hash::BuildHasher::hash_one(&self.hasher, k) as usize & self.mask
    }

    #[inline]
    fn call(&self, k: u64, now: u64) {
        let s = &self.table[self.index(k)];
        let v = s.load(Ordering::SeqCst);
        if (v >> 64) as u64 == k {
            let next = (v as u64).max(now) + 1;
            let _ = s.compare_exchange(
                v,
                (v >> 64 << 64) | u128::from(next),
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
        }
    }
}

/// The `paired` mode: IntKeyed, Keyed, governor's keyed limiter, rate-net's keyed limiter and
/// the floor of IntKeyed's layout on clock `ours` (governor on `theirs`, rate-net on
/// `rate_net_clock`), interleaved by [`paired`]: ROUNDS rounds of 2 × CHUNK calls per thread
/// and limiter; ratio = peer / ours within a round (throughput ratio), printed as median
/// [25th–75th percentile].
///
/// rate-net gets the same rate (its `limit` per `period` is ours; its default token bucket,
/// burst = limit as ours) and Keyed's capacity (`Eviction::capacity`, 2 × keys).
fn paired_mode<C, G, R>(rate: Rate, quota: governor::Quota, ours: C, theirs: G, rate_net_clock: R)
where
    C: hotlimit::Clock + Clone + Send + Sync,
    G: governor::clock::Clock<Instant = governor::clock::QuantaInstant> + Clone + Send + Sync,
    R: clock_lib::Clock + Clone + Send + Sync,
{
    let rounds: usize = std::env::var("ROUNDS").map_or(30, |s| s.parse().unwrap());
    let chunk: usize = std::env::var("CHUNK").map_or(200_000, |s| s.parse().unwrap());
    println!("| keys | threads | chunk | IntKeyed ns/call | Keyed ns/call | governor ns/call | rate-net ns/call | IntKeyed vs governor | Keyed vs governor | IntKeyed vs rate-net | Keyed vs rate-net | floor ns/call (slot128) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &n in &[1_000u64, 100_000] {
        let il: IntKeyed<u64, C> = IntKeyed::builder(rate)
            .capacity(int_keyed_capacity(n))
            .clock(ours.clone())
            .build()
            .unwrap();
        let k: Keyed<u64, Gcra, C> = Keyed::gcra(rate)
            .capacity(n as usize * 2)
            .clock(ours.clone())
            .build()
            .unwrap();
        // With a coarse clock every key stays busy for the rest of its tick, so IntKeyed may
        // refuse a key whose 8 candidate slots are all busy (run COARSE=1 with IK_CAP=2).
        let refused = (0..n).filter(|&i| il.try_acquire(i).is_err()).count();
        if refused > 0 {
            println!("(IntKeyed refused {refused} of {n} keys at setup: they take the slow path)");
        }
        for i in 0..n {
            k.try_acquire(&i).unwrap();
        }
        let gl = governor::RateLimiter::dashmap_with_clock(quota, theirs.clone());
        for i in 0..n {
            let _ = gl.check_key(&i);
        }
        let rn = rate_net::RateLimiter::builder()
            .quota(u32::try_from(rate.limit()).unwrap(), rate.period())
            .eviction(rate_net::Eviction::capacity(n as usize * 2))
            .clock(rate_net_clock.clone())
            .try_build()
            .unwrap();
        for i in 0..n {
            let _ = rn.check(i);
        }
        let fi = |key| {
            let _ = std::hint::black_box(il.try_acquire(key));
        };
        let fk = |key| {
            let _ = std::hint::black_box(k.try_acquire(&key));
        };
        let fg = |key| {
            let _ = std::hint::black_box(gl.check_key(&key));
        };
        let fr = |key: u64| {
            let _ = std::hint::black_box(rn.check(key));
        };
        let floor = Slot128Floor::new(n);
        let ff = |k: u64| floor.call(k, ours.now());
        for &threads in &[1usize, 2] {
            let t = paired(threads, n, rounds, chunk, &[&fi, &fk, &fg, &fr, &ff]);
            for (c, label) in [(0, "first (after the others)"), (1, "second (warm)")] {
                let col = |i: usize| quartiles(t.iter().map(|r| r[i][c]).collect()).1;
                // peer / ours: how many times our throughput is the peer's
                let ratio = |peer: usize, i: usize| {
                    let (lo, mid, hi) = quartiles(t.iter().map(|r| r[peer][c] / r[i][c]).collect());
                    format!("{mid:.2}x [{lo:.2}–{hi:.2}]")
                };
                println!(
                    "| {n} | {threads} | {label} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} | {} | {} | {:.1} |",
                    col(0), col(1), col(2), col(3),
                    ratio(2, 0), ratio(2, 1), ratio(3, 0), ratio(3, 1), col(4)
                );
            }
        }
    }
}

/// The (25th, 50th, 75th) percentiles of `v`.
fn quartiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.25), at(0.5), at(0.75))
}

/// IntKeyed's capacity for `n` keys: `IK_CAP` × `n`, default 1.25 × `n` (25 % headroom; its
/// table, allocated at build, is the power of two ≥ 2 × capacity slots of 16 bytes: 4 MiB for
/// 100,000 keys, as with capacity = `n`). At capacity = `n` exactly the table is full: the few
/// keys whose eight candidate slots were taken at setup (0.5 % of 1,000 keys, 0.07 % of
/// 100,000) replace an idle key when they come back, that key does the same later, and so
/// on: a chain of re-inserts during the timing that no user sizing for `n` keys would see.
fn int_keyed_capacity(n: u64) -> usize {
    let factor: f64 = std::env::var("IK_CAP").map_or(1.25, |s| s.parse().unwrap());
    (n as f64 * factor) as usize
}

/// An IntKeyed for `n` keys (capacity from [`int_keyed_capacity`]) holding keys 0 .. n.
fn int_keyed_with(rate: Rate, n: u64) -> IntKeyed<u64> {
    let il: IntKeyed<u64> = IntKeyed::builder(rate)
        .capacity(int_keyed_capacity(n))
        .build()
        .unwrap();
    for i in 0..n {
        il.try_acquire(i).unwrap();
    }
    il
}

/// This process's resident set in bytes (Linux: `/proc/self/statm`, 4 KiB pages).
fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 4096
}

/// Prints the RSS growth per key of building a `Keyed` from `builder` with room for `n` keys
/// and creating keys 0 .. n.
fn mem_per_key<L: hotlimit::KeyedState>(
    label: &str,
    n: u64,
    builder: KeyedBuilder<u64, L, DefaultClock>,
) {
    let mut k = None;
    let per_key = rss_growth_per_key(n, || {
        let keyed = builder.capacity(n as usize).build().unwrap();
        for i in 0..n {
            keyed.try_acquire(&i).unwrap();
        }
        k = Some(keyed);
    });
    let len = k.map_or(0, |k| k.len());
    println!("hotlimit {label}: {len} keys, {per_key:.1} bytes/key (RSS growth)");
}

/// Keyed's entry step on a `(state, override)` slot: the step is the override if any, else 1;
/// one load and one CAS, as a grant on the state word.
fn slot_cas(a: &AtomicU64, cfg: &Option<std::sync::Arc<u64>>, now: u64) {
    let step = cfg.as_deref().copied().unwrap_or(1);
    // Relaxed (both): as Keyed's state word, self-contained.
    let v = a.load(Ordering::Relaxed);
    let _ = a.compare_exchange(v, v.max(now) + step, Ordering::Relaxed, Ordering::Relaxed);
}

/// A papaya map (foldhash, blocking resize) holding keys 0 .. n, each with `value()`.
fn papaya_filled<V>(
    n: u64,
    value: impl Fn() -> V,
) -> papaya::HashMap<u64, V, foldhash::fast::RandomState> {
    let pm = papaya::HashMap::builder()
        .hasher(Default::default())
        .resize_mode(papaya::ResizeMode::Blocking)
        .build();
    for i in 0..n {
        pm.pin().insert(i, value());
    }
    pm
}

/// An scc `HashIndex` (foldhash) holding keys 0 .. n, each with `value()` behind an `Arc`
/// (the index clones entries when it resizes).
fn scc_filled<V: 'static>(
    n: u64,
    value: impl Fn() -> V,
) -> scc::HashIndex<u64, std::sync::Arc<V>, foldhash::fast::RandomState> {
    let sm = scc::HashIndex::with_hasher(Default::default());
    for i in 0..n {
        let _ = sm.insert_sync(i, std::sync::Arc::new(value()));
    }
    sm
}

/// Runs per cell: `REPS` (default 5).
fn reps() -> usize {
    std::env::var("REPS").map_or(5, |s| s.parse().unwrap())
}

/// The cell's figure: the fastest run, the one least disturbed by other processes (on a
/// shared 2-core machine the median still moved by up to 2x between runs).
fn best(v: Vec<f64>) -> f64 {
    v.into_iter().fold(f64::INFINITY, f64::min)
}

fn map_lookup<M: Sync>(m: &M, get: impl Fn(&M, u64) + Sync, threads: usize, n: u64) -> f64 {
    run(threads, n, |k| get(m, k)).0
}

fn cas(a: &AtomicU64) {
    let v = a.load(Ordering::Relaxed);
    let _ = a.compare_exchange(v, v + 1, Ordering::Relaxed, Ordering::Relaxed);
}

/// One thread, `OPS` calls of `f` over `seq`, in a function of its own so that callgrind can
/// count only it: `valgrind --tool=callgrind --toggle-collect='*hot_loop*'`. Prints the
/// wall and on-CPU ns/call (`PROF_REPS` passes, default 1; the minimum of each, the least
/// disturbed by other processes).
#[inline(never)]
fn hot_loop<F: Fn(u64)>(seq: &[u64], f: F) {
    let reps: usize = std::env::var("PROF_REPS").map_or(1, |s| s.parse().unwrap());
    let (mut wall, mut cpu) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..reps {
        let c0 = cpu_ns();
        let t0 = Instant::now();
        for &k in seq {
            f(k);
        }
        let n = seq.len() as f64;
        wall = wall.min(t0.elapsed().as_nanos() as f64 / n);
        if let (Some(a), Some(b)) = (c0, cpu_ns()) {
            cpu = cpu.min((b - a) as f64 / n);
        }
    }
    eprintln!("{wall:.1} ns/call wall, {cpu:.1} on-CPU");
}

/// `prof WHAT NKEYS`: one thread, one peer, for callgrind / perf.
fn prof(what: &str, n: u64, rate: Rate, quota: governor::Quota) {
    let seq = keys(n);
    match what {
        "hotlimit" => {
            let k: Keyed<u64, Gcra> = Keyed::gcra(rate).capacity(n as usize * 2).build().unwrap();
            for i in 0..n {
                k.try_acquire(&i).unwrap();
            }
            hot_loop(&seq, |key| {
                let _ = std::hint::black_box(k.try_acquire(&key));
            });
        }
        "intkeyed" => {
            let il = int_keyed_with(rate, n);
            hot_loop(&seq, |key| {
                let _ = std::hint::black_box(il.try_acquire(key));
            });
        }
        "governor" => {
            let gl = governor::RateLimiter::keyed(quota);
            for i in 0..n {
                let _ = gl.check_key(&i);
            }
            hot_loop(&seq, |key| {
                let _ = std::hint::black_box(gl.check_key(&key));
            });
        }
        "clock" => {
            let c = hotlimit::DefaultClock::default();
            hot_loop(&seq, |_| {
                std::hint::black_box(hotlimit::Clock::now(&c));
            });
        }
        "papaya-guard" => {
            let pm: papaya::HashMap<u64, AtomicU64> = papaya::HashMap::new();
            hot_loop(&seq, |_| {
                std::hint::black_box(pm.guard());
            });
        }
        "siphash" => {
            let h = std::collections::hash_map::RandomState::new();
            hot_loop(&seq, |k| {
                std::hint::black_box(std::hash::BuildHasher::hash_one(&h, k));
            });
        }
        "foldhash" => {
            let h = foldhash::fast::RandomState::default();
            hot_loop(&seq, |k| {
                std::hint::black_box(std::hash::BuildHasher::hash_one(&h, k));
            });
        }
        "flat" => {
            // The miss floor: one 16-byte {key, state} entry per key at load 1/2, read + CAS.
            let slots: Vec<[AtomicU64; 2]> = (0..2 * n)
                .map(|i| [AtomicU64::new(i), AtomicU64::new(0)])
                .collect();
            let h = foldhash::fast::FixedState::default();
            let mask = (2 * n).next_power_of_two() as usize / 2 - 1;
            hot_loop(&seq, |k| {
                let i = std::hash::BuildHasher::hash_one(&h, k) as usize & mask;
                let s = &slots[i];
                if s[0].load(Ordering::Relaxed) != u64::MAX {
                    cas(&s[1]);
                }
            });
        }
        "slot128" | "slot64" => {
            // IntKeyed's floor: a {key, state} slot per key at load 1/2, the clock, a load and
            // a CAS: of the whole 16 bytes (slot128, portable-atomic's cmpxchg16b) or of the
            // state word only (slot64).
            let m = (2 * n).next_power_of_two() as usize - 1;
            let h = foldhash::fast::FixedState::default();
            let idx = |k: u64| std::hash::BuildHasher::hash_one(&h, k) as usize & m;
            let c = hotlimit::DefaultClock::default();
            if what == "slot128" {
                let floor = Slot128Floor::new(n);
                hot_loop(&seq, |k| floor.call(k, hotlimit::Clock::now(&c)));
            } else {
                let t: Vec<[AtomicU64; 2]> = (0..=m)
                    .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
                    .collect();
                for k in 0..n {
                    t[idx(k)][0].store(k, Ordering::Relaxed);
                }
                hot_loop(&seq, |k| {
                    let now = hotlimit::Clock::now(&c);
                    let s = &t[idx(k)];
                    if s[0].load(Ordering::SeqCst) == k {
                        let v = s[1].load(Ordering::SeqCst);
                        let _ = s[1].compare_exchange(
                            v,
                            v.max(now) + 1,
                            Ordering::SeqCst,
                            Ordering::SeqCst,
                        );
                    }
                });
            }
        }
        "papaya-slot" | "papaya-slot-clock" => {
            // Keyed's entry shape: the key, the state word and an optional override pointer
            // (24 bytes, so glibc's 32-byte chunks put half the entries across two lines).
            let pm = papaya_filled(n, || (AtomicU64::new(0), None::<std::sync::Arc<u64>>));
            let c = hotlimit::DefaultClock::default();
            let clock = what == "papaya-slot-clock";
            hot_loop(&seq, |k| {
                let now = if clock { hotlimit::Clock::now(&c) } else { 0 };
                let m = pm.pin();
                if let Some((a, cfg)) = m.get(&k) {
                    slot_cas(a, cfg, now);
                }
            });
        }
        "scc-slot-clock" => {
            // scc's HashIndex clones entries when it resizes: the state must sit behind an Arc.
            type Slot = (AtomicU64, Option<std::sync::Arc<u64>>);
            let sm: scc::HashIndex<u64, std::sync::Arc<Slot>, foldhash::fast::RandomState> =
                scc::HashIndex::with_hasher(Default::default());
            for i in 0..n {
                let _ = sm.insert_sync(i, std::sync::Arc::new((AtomicU64::new(0), None)));
            }
            let c = hotlimit::DefaultClock::default();
            hot_loop(&seq, |k| {
                let now = hotlimit::Clock::now(&c);
                let guard = scc::Guard::new();
                if let Some(slot) = sm.peek(&k, &guard) {
                    let (a, cfg) = &**slot;
                    slot_cas(a, cfg, now);
                }
            });
        }
        "papaya-get" | "papaya-get-pinned" => {
            let pm = papaya_filled(n, || AtomicU64::new(0));
            // An outer guard makes each call's guard a reentrant counter bump.
            let _outer = (what == "papaya-get-pinned").then(|| pm.guard());
            hot_loop(&seq, |k| {
                let g = pm.guard();
                if let Some(a) = pm.get(&k, &g) {
                    cas(a)
                }
            });
        }
        "scc-peek" => {
            let sm = scc_filled(n, || AtomicU64::new(0));
            hot_loop(&seq, |k| {
                sm.peek_with(&k, |_, a| cas(a));
            });
        }
        "dashmap-sip" => {
            let dm: dashmap::DashMap<u64, AtomicU64> = dashmap::DashMap::new();
            for i in 0..n {
                dm.insert(i, AtomicU64::new(0));
            }
            hot_loop(&seq, |k| {
                if let Some(a) = dm.get(&k) {
                    cas(&a)
                }
            });
        }
        _ => panic!("prof: unknown {what}"),
    }
}

fn main() {
    let args = cli::args();
    // No mode (as under a bare `cargo bench`): the paired mode, the one BENCHMARKS.md reports.
    let mode = args.first().map_or("paired", String::as_str);
    // A huge rate so that nothing is denied: the benchmark measures the grant path.
    let rate = Rate::per_second(1_000_000_000).unwrap();
    let quota = governor::Quota::per_second(NonZeroU32::new(1_000_000_000).unwrap());
    if mode == "prof" {
        let what = args.get(1).expect("prof WHAT NKEYS");
        let n = args.get(2).map_or(1000, |s| s.parse().unwrap());
        prof(what, n, rate, quota);
        return;
    }
    if mode == "all" || mode == "governor" {
        println!("| keys | threads | IntKeyed<u64> ns/call | Keyed<u64, Gcra> ns/call | governor check_key ns/call | IntKeyed vs governor (throughput) | Keyed vs governor | on-CPU ns/call IntKeyed / Keyed / governor | on-CPU IntKeyed vs governor |");
        println!("|---|---|---|---|---|---|---|---|---|");
        for &n in &[1_000u64, 100_000] {
            for &threads in &[1usize, 2] {
                let (mut h, mut g, mut hc, mut gc) =
                    (Vec::new(), Vec::new(), Vec::new(), Vec::new());
                let (mut ik, mut ikc) = (Vec::new(), Vec::new());
                for _ in 0..reps() {
                    let il = int_keyed_with(rate, n);
                    let (wall, cpu) = run(threads, n, |key| {
                        let _ = std::hint::black_box(il.try_acquire(key));
                    });
                    drop(il);
                    ik.push(wall);
                    ikc.push(cpu);
                    let k: Keyed<u64, Gcra> =
                        Keyed::gcra(rate).capacity(n as usize * 2).build().unwrap();
                    for i in 0..n {
                        k.try_acquire(&i).unwrap();
                    }
                    let (wall, cpu) = run(threads, n, |key| {
                        let _ = std::hint::black_box(k.try_acquire(&key));
                    });
                    drop(k);
                    h.push(wall);
                    hc.push(cpu);
                    let gl = governor::RateLimiter::keyed(quota);
                    for i in 0..n {
                        let _ = gl.check_key(&i);
                    }
                    let (wall, cpu) = run(threads, n, |key| {
                        let _ = std::hint::black_box(gl.check_key(&key));
                    });
                    g.push(wall);
                    gc.push(cpu);
                }
                let (h, g, hc, gc) = (best(h), best(g), best(hc), best(gc));
                let (ik, ikc) = (best(ik), best(ikc));
                println!(
                    "| {n} | {threads} | {ik:.1} | {h:.1} | {g:.1} | {:.2}x | {:.2}x | {ikc:.1} / {hc:.1} / {gc:.1} | {:.2}x |",
                    g / ik,
                    g / h,
                    gc / ikc
                );
            }
        }
    }
    if mode == "paired" {
        // COARSE=1: each crate's coarse clock (ours: CoarseClock, governor's:
        // QuantaUpkeepClock, rate-net's: CoarseClock), each updated every 1 ms by a thread.
        if std::env::var_os("COARSE").is_some() {
            let ms = std::time::Duration::from_millis(1);
            paired_mode(
                rate,
                quota,
                hotlimit::CoarseClock::with_resolution(ms).unwrap(),
                governor::clock::QuantaUpkeepClock::from_interval(ms).unwrap(),
                rate_net::CoarseClock::spawn(ms).unwrap(),
            );
        } else {
            paired_mode(
                rate,
                quota,
                hotlimit::DefaultClock::default(),
                governor::clock::QuantaClock::default(),
                clock_lib::SystemClock::new(),
            );
        }
    }
    if mode == "all" || mode == "maps" {
        println!("\n| keys | threads | papaya get + CAS | scc HashIndex peek + CAS | dashmap get + CAS | (all foldhash)");
        println!("|---|---|---|---|---|");
        for &n in &[1_000u64, 100_000] {
            for &threads in &[1usize, 2] {
                let (mut p, mut s, mut d) = (Vec::new(), Vec::new(), Vec::new());
                for _ in 0..reps() {
                    let pm = papaya_filled(n, || AtomicU64::new(0));
                    p.push(map_lookup(
                        &pm,
                        |m, k| {
                            let g = m.guard();
                            if let Some(a) = m.get(&k, &g) {
                                cas(a)
                            }
                        },
                        threads,
                        n,
                    ));
                    let sm = scc_filled(n, || AtomicU64::new(0));
                    s.push(map_lookup(
                        &sm,
                        |m, k| {
                            m.peek_with(&k, |_, a| cas(a));
                        },
                        threads,
                        n,
                    ));
                    let dm: dashmap::DashMap<u64, AtomicU64, foldhash::fast::RandomState> =
                        dashmap::DashMap::with_hasher(Default::default());
                    for i in 0..n {
                        dm.insert(i, AtomicU64::new(0));
                    }
                    d.push(map_lookup(
                        &dm,
                        |m, k| {
                            if let Some(a) = m.get(&k) {
                                cas(&a)
                            }
                        },
                        threads,
                        n,
                    ));
                }
                println!(
                    "| {n} | {threads} | {:.1} | {:.1} | {:.1} |",
                    best(p),
                    best(s),
                    best(d)
                );
            }
        }
    }
    let n = 1_000_000u64;
    if mode == "mem-hotlimit" {
        // Bytes per key: RSS growth while inserting the keys (a fresh process per peer).
        mem_per_key("Keyed<u64, Gcra>", n, Keyed::gcra(rate));
    }
    let ten = Rate::per_second(10).unwrap();
    if mode == "mem-log" {
        mem_per_key(
            "Keyed<u64, SlidingLog> limit 10",
            100_000,
            Keyed::sliding_log(ten),
        );
    }
    if mode == "mem-window" {
        let label = "Keyed<u64, SlidingWindow> 10 buckets";
        mem_per_key(label, 100_000, Keyed::sliding_window(ten));
    }
    if mode == "algos" {
        // 1,000 keys, 1 thread; 1,000 per ms per key, so that nothing is denied (about 40
        // calls per key per ms here) while a log's ring stays small (8 KB per key).
        let r = Rate::new(1_000, std::time::Duration::from_millis(1)).unwrap();
        let n = 1_000u64;
        fn time<L: hotlimit::KeyedState>(k: Keyed<u64, L>, n: u64) -> f64 {
            for i in 0..n {
                k.try_acquire(&i).unwrap();
            }
            run(1, n, |key| {
                let _ = std::hint::black_box(k.try_acquire(&key));
            })
            .0
        }
        let (mut g, mut l, mut w) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps() {
            g.push(time(Keyed::gcra(r).build().unwrap(), n));
            l.push(time(Keyed::sliding_log(r).build().unwrap(), n));
            w.push(time(Keyed::sliding_window(r).build().unwrap(), n));
        }
        println!(
            "Keyed, {n} keys, 1 thread, ns/call (fastest of REPS): Gcra {:.1}, SlidingLog {:.1}, SlidingWindow {:.1}",
            best(g),
            best(l),
            best(w)
        );
    }
    if mode == "mem-governor" {
        let gl = governor::RateLimiter::keyed(quota);
        let per_key = rss_growth_per_key(n, || {
            for i in 0..n {
                let _ = gl.check_key(&i);
            }
        });
        println!(
            "governor keyed (dashmap): {} keys, {per_key:.1} bytes/key (RSS growth)",
            gl.len()
        );
    }
    if mode == "mem-ratenet" {
        // rate-net's keyed limiter, default token bucket, capacity = the keys (as mem-hotlimit).
        let rn = rate_net::RateLimiter::builder()
            .quota(1_000_000_000, std::time::Duration::from_secs(1))
            .eviction(rate_net::Eviction::capacity(n as usize))
            .try_build()
            .unwrap();
        let per_key = rss_growth_per_key(n, || {
            for i in 0..n {
                let _ = rn.check(i);
            }
        });
        println!(
            "rate-net keyed (sharded store): {} keys, {per_key:.1} bytes/key (RSS growth)",
            rn.tracked_keys()
        );
    }
}

/// The RSS growth of running `fill` (which creates `n` keys), in bytes per key.
fn rss_growth_per_key(n: u64, fill: impl FnOnce()) -> f64 {
    let before = rss();
    fill();
    (rss() - before) as f64 / n as f64
}
