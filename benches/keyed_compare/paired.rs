//! The `paired` and `algos` modes: the limiters interleaved in short chunks on the same
//! threads and keys, the ratio taken within each round.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use hotlimit::{Clock, Gcra, GcraPair, IntKeyed, Keyed, Rate, ShortKey, SlidingLog, SlidingWindow};

use crate::keys::{
    creation, key_len, list_from_env, lookups, string_key, u64_key, with_hot_key, Order,
};

/// One limiter in a paired run: its column name and one call on key index `i`.
pub(crate) struct Row<'a> {
    pub(crate) name: &'static str,
    pub(crate) call: Box<dyn Fn(u32) + Sync + 'a>,
}

/// Interleaved, paired timing of `rows` on `threads` threads: `rounds` rounds; in each,
/// every row in turn (the order rotating each round) runs two chunks of `chunk` calls per
/// thread, all threads starting each chunk together. Thread t walks `seq` from
/// `t × len / threads`. Returns, per round and row, the ns per call (wall, averaged over
/// threads) of the first chunk (right after another row ran: its table partly out of the
/// caches, as in a server doing other work between checks) and of the second (warm). A
/// disturbance from outside falls on the rows of one round alike, so the ratio within a round
/// stays meaningful where separate runs drift by 2×.
fn paired(
    threads: usize,
    seq: &[u32],
    rounds: usize,
    chunk: usize,
    rows: &[Row<'_>],
) -> Vec<Vec<[f64; 2]>> {
    let barrier = Barrier::new(threads);
    let sums: Vec<Vec<[AtomicU64; 2]>> = (0..rounds)
        .map(|_| {
            rows.iter()
                .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
                .collect()
        })
        .collect();
    let chunk = chunk.min(seq.len());
    std::thread::scope(|s| {
        for t in 0..threads {
            let (barrier, sums) = (&barrier, &sums);
            s.spawn(move || {
                let mut at = t * seq.len() / threads;
                for (r, sum) in sums.iter().enumerate() {
                    for j in 0..rows.len() {
                        let which = (r + j) % rows.len();
                        for time in &sum[which] {
                            if at + chunk > seq.len() {
                                at = 0;
                            }
                            let part = &seq[at..at + chunk];
                            at += chunk;
                            let call = &rows[which].call;
                            barrier.wait();
                            let t0 = Instant::now();
                            for &k in part {
                                call(k);
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

/// The (25th, 50th, 75th) percentiles of `v`.
fn quartiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.25), at(0.5), at(0.75))
}

/// Runs `rows` paired at every thread count of `THREADS` and prints one table line per
/// thread count and chunk: the median ns/call per row, then each `(ours, peer)` pair's ratio
/// (peer ÷ ours per round: above 1, ours is faster), median [25th–75th percentile].
fn report(n: u64, order: Order, seq: &[u32], rows: &[Row<'_>], ratios: &[(usize, usize)]) {
    let rounds: usize = std::env::var("ROUNDS").map_or(15, |s| s.parse().unwrap());
    let chunk: usize = std::env::var("CHUNK").map_or(100_000, |s| s.parse().unwrap());
    for threads in list_from_env::<usize>("THREADS", "1,2,16") {
        let t = paired(threads, seq, rounds, chunk, rows);
        for (c, label) in [(0, "first"), (1, "warm")] {
            let col = |i: usize| quartiles(t.iter().map(|r| r[i][c]).collect()).1;
            let ratio = |ours: usize, peer: usize| {
                let (lo, mid, hi) = quartiles(t.iter().map(|r| r[peer][c] / r[ours][c]).collect());
                format!("{mid:.2}× [{lo:.2}–{hi:.2}]")
            };
            let cells: Vec<String> = (0..rows.len())
                .map(|i| format!("{:.1}", col(i)))
                .chain(ratios.iter().map(|&(o, p)| ratio(o, p)))
                .collect();
            println!(
                "| {n} | {threads} | {} | {label} | {} |",
                order.name(),
                cells.join(" | ")
            );
        }
    }
}

fn header(rows: &[Row<'_>], ratios: &[(usize, usize)]) {
    let names: Vec<String> = rows
        .iter()
        .map(|r| format!("{} ns/call", r.name))
        .chain(
            ratios
                .iter()
                .map(|&(o, p)| format!("{} vs {}", rows[o].name, rows[p].name)),
        )
        .collect();
    println!("| keys | threads | order | chunk | {} |", names.join(" | "));
    println!("|---|---|---|---|{}", "---|".repeat(names.len()));
}

/// The lookups every size walks: 2,000,000 per thread's start, at least one pass.
const LOOKUPS: usize = 2_000_000;

/// The `paired` mode: `IntKeyed<u64>`, `Keyed<u64, Gcra>`, governor's keyed limiter and
/// rate-net's on `u64` keys, and `Keyed<String, Gcra>` looked up by `&str` beside governor's
/// keyed limiter on `String` keys, each key twice: read from a vector of every key (two cache
/// misses a call in the harness, paid alike) and written into a reused buffer, as a server has
/// the key it parsed ([`with_hot_key`]; the `u64` keys are computed from the index the same
/// way), and `Keyed<ShortKey, Gcra>` (the hot key converted, against governor's hot `String`
/// key), interleaved by [`paired`], for every size of `KEYS`
/// (default 1,000, 100,000 and 1,000,000), thread count of `THREADS` (default 1, 2, 16) and
/// order of `ORDER` (default sequential and shuffled). Every key exists before timing and the
/// rate is so high that nothing is denied: the lookup plus the grant.
///
/// `IntKeyed` gets capacity `IK_CAP` × keys (default 1.25; its table is dense above a capacity
/// of 32,768: 1.3 slots per key of capacity), `Keyed` and rate-net 2 × keys (`K_CAP`).
pub(crate) fn paired_mode<C, G, R>(ours: C, theirs: G, rate_net_clock: R)
where
    C: Clock + Clone + Send + Sync,
    G: governor::clock::Clock + Clone + Send + Sync,
    R: clock_lib::Clock + Clone + Send + Sync,
{
    // A huge rate so that nothing is denied: the benchmark measures the grant path.
    let rate = Rate::per_second(1_000_000_000).unwrap();
    let quota = governor::Quota::per_second(std::num::NonZeroU32::new(1_000_000_000).unwrap());
    let ik_cap: f64 = std::env::var("IK_CAP").map_or(1.25, |s| s.parse().unwrap());
    let k_cap: f64 = std::env::var("K_CAP").map_or(2.0, |s| s.parse().unwrap());
    // `Keyed<ShortKey>` (row 8) only while the keys fit one (`KEY_LEN` at most 23).
    let short = key_len() <= ShortKey::MAX_LEN;
    let ratios: &[(usize, usize)] = if short {
        &[(0, 2), (1, 2), (4, 5), (6, 7), (8, 7), (0, 3), (1, 3)]
    } else {
        &[(0, 2), (1, 2), (4, 5), (6, 7), (0, 3), (1, 3)]
    };
    let mut printed = false;
    for order in Order::from_env() {
        for n in list_from_env::<u64>("KEYS", "1000,100000,1000000") {
            let made = creation(order, n);
            let strings: Vec<String> = (0..n as u32).map(string_key).collect();
            let il: IntKeyed<u64, C> = IntKeyed::builder(rate)
                .capacity((n as f64 * ik_cap) as usize)
                .clock(ours.clone())
                .build()
                .unwrap();
            let k: Keyed<u64, Gcra, C> = Keyed::gcra(rate)
                .capacity((n as f64 * k_cap) as usize)
                .clock(ours.clone())
                .build()
                .unwrap();
            let ks: Keyed<String, Gcra, C> = Keyed::gcra(rate)
                .capacity((n as f64 * k_cap) as usize)
                .clock(ours.clone())
                .build()
                .unwrap();
            let kshort: Keyed<ShortKey, Gcra, C> = Keyed::gcra(rate)
                .capacity((n as f64 * k_cap) as usize)
                .clock(ours.clone())
                .build()
                .unwrap();
            let gl = governor::RateLimiter::dashmap_with_clock(quota, theirs.clone());
            let gs = governor::RateLimiter::dashmap_with_clock(quota, theirs.clone());
            let rn = rate_net::RateLimiter::builder()
                .quota(u32::try_from(rate.limit()).unwrap(), rate.period())
                .eviction(rate_net::Eviction::capacity((n as f64 * k_cap) as usize))
                .clock(rate_net_clock.clone())
                .try_build()
                .unwrap();
            let mut refused = 0;
            for &i in &made {
                let key = u64_key(i);
                refused += usize::from(il.try_acquire(key).is_err());
                k.try_acquire(&key).unwrap();
                ks.try_acquire(strings[i as usize].as_str()).unwrap();
                if short {
                    kshort
                        .try_acquire(&ShortKey::new(&strings[i as usize]).unwrap())
                        .unwrap();
                }
                let _ = gl.check_key(&key);
                let _ = gs.check_key(&strings[i as usize]);
                let _ = rn.check(key);
            }
            if refused > 0 {
                println!(
                    "(IntKeyed refused {refused} of {n} keys at setup: they take the slow path)"
                );
            }
            for i in [0, 7, n as u32 / 2, n as u32 - 1] {
                assert_eq!(with_hot_key(i, String::clone), strings[i as usize]);
            }
            let seq = lookups(order, n, LOOKUPS);
            let mut rows = vec![
                Row {
                    name: "IntKeyed<u64>",
                    call: Box::new(|i| {
                        let _ = std::hint::black_box(il.try_acquire(u64_key(i)));
                    }),
                },
                Row {
                    name: "Keyed<u64>",
                    call: Box::new(|i| {
                        let _ = std::hint::black_box(k.try_acquire(&u64_key(i)));
                    }),
                },
                Row {
                    name: "governor<u64>",
                    call: Box::new(|i| {
                        let _ = std::hint::black_box(gl.check_key(&u64_key(i)));
                    }),
                },
                Row {
                    name: "rate-net<u64>",
                    call: Box::new(|i| {
                        let _ = std::hint::black_box(rn.check(u64_key(i)));
                    }),
                },
                Row {
                    name: "Keyed<String> by &str",
                    call: Box::new(|i| {
                        let _ = std::hint::black_box(ks.try_acquire(strings[i as usize].as_str()));
                    }),
                },
                Row {
                    name: "governor<String>",
                    call: Box::new(|i| {
                        let _ = std::hint::black_box(gs.check_key(&strings[i as usize]));
                    }),
                },
                Row {
                    name: "Keyed<String> by &str, key hot",
                    call: Box::new(|i| {
                        with_hot_key(i, |key| {
                            let _ = std::hint::black_box(ks.try_acquire(key.as_str()));
                        });
                    }),
                },
                Row {
                    name: "governor<String>, key hot",
                    call: Box::new(|i| {
                        with_hot_key(i, |key| {
                            let _ = std::hint::black_box(gs.check_key(key));
                        });
                    }),
                },
                Row {
                    name: "Keyed<ShortKey>, key hot",
                    call: Box::new(|i| {
                        with_hot_key(i, |key| {
                            let key = ShortKey::new(key).unwrap();
                            let _ = std::hint::black_box(kshort.try_acquire(&key));
                        });
                    }),
                },
            ];
            if !short {
                rows.pop();
            }
            if !std::mem::replace(&mut printed, true) {
                header(&rows, ratios);
            }
            report(n, order, &seq, &rows, ratios);
        }
    }
}

/// The `algos` mode: `Keyed<u64, _>` over each per-key state (GCRA, GcraPair, SlidingLog,
/// SlidingWindow of 10 buckets) beside governor's keyed limiter, paired as [`paired_mode`], at
/// 10 per 10 µs per key (GcraPair: and 1,000 per ms), a rate that denies (almost) nothing here
/// while a log's ring stays at 10 stamps.
pub(crate) fn algos_mode() {
    let rate = Rate::new(10, Duration::from_micros(10)).unwrap();
    let second = Rate::new(1_000, Duration::from_millis(1)).unwrap();
    let quota = governor::Quota::with_period(Duration::from_micros(1))
        .unwrap()
        .allow_burst(std::num::NonZeroU32::new(10).unwrap());
    let ratios = [(0, 4), (1, 4), (2, 4), (3, 4)];
    let mut printed = false;
    for order in Order::from_env() {
        for n in list_from_env::<u64>("KEYS", "1000,100000,1000000") {
            let cap = 2 * n as usize;
            let g: Keyed<u64, Gcra> = Keyed::gcra(rate).capacity(cap).build().unwrap();
            let p: Keyed<u64, GcraPair> = Keyed::gcra_pair(rate, second)
                .capacity(cap)
                .build()
                .unwrap();
            let l: Keyed<u64, SlidingLog> = Keyed::sliding_log(rate).capacity(cap).build().unwrap();
            let w: Keyed<u64, SlidingWindow> =
                Keyed::sliding_window(rate).capacity(cap).build().unwrap();
            let gl = governor::RateLimiter::keyed(quota);
            for &i in &creation(order, n) {
                let key = u64_key(i);
                g.try_acquire(&key).unwrap();
                p.try_acquire(&key).unwrap();
                l.try_acquire(&key).unwrap();
                w.try_acquire(&key).unwrap();
                let _ = gl.check_key(&key);
            }
            let seq = lookups(order, n, LOOKUPS);
            let rows = [
                Row {
                    name: "Keyed<u64, Gcra>",
                    call: Box::new(|i| {
                        let _ = std::hint::black_box(g.try_acquire(&u64_key(i)));
                    }),
                },
                Row {
                    name: "Keyed<u64, GcraPair>",
                    call: Box::new(|i| {
                        let _ = std::hint::black_box(p.try_acquire(&u64_key(i)));
                    }),
                },
                Row {
                    name: "Keyed<u64, SlidingLog>",
                    call: Box::new(|i| {
                        let _ = std::hint::black_box(l.try_acquire(&u64_key(i)));
                    }),
                },
                Row {
                    name: "Keyed<u64, SlidingWindow>",
                    call: Box::new(|i| {
                        let _ = std::hint::black_box(w.try_acquire(&u64_key(i)));
                    }),
                },
                Row {
                    name: "governor<u64>",
                    call: Box::new(|i| {
                        let _ = std::hint::black_box(gl.check_key(&u64_key(i)));
                    }),
                },
            ];
            if !std::mem::replace(&mut printed, true) {
                header(&rows, &ratios);
            }
            report(n, order, &seq, &rows, &ratios);
        }
    }
}
