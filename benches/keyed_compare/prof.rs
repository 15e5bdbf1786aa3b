//! The `prof` mode (one peer or component on one thread, for callgrind, cachegrind or perf)
//! and the `maps` mode (the candidate concurrent maps side by side).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use hotlimit::{Gcra, GcraPair, IntKeyed, Keyed, Rate, ShortKey};

use crate::keys::{creation, list_from_env, lookups, string_key, u64_key, with_hot_key, Order};

/// This thread's time on a CPU so far, in ns (Linux: `/proc/thread-self/schedstat`), or
/// `None` where it cannot be read. Unlike wall time it leaves out the time the thread waited
/// for a core, so it stays comparable while other processes load the machine.
fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// One thread, every call of `f` over `seq` (`PROF_REPS` passes, default 1), then prints the
/// wall and on-CPU ns/call (the minimum of each).
fn hot_loop<F: Fn(u32)>(seq: &[u32], f: F) {
    let reps: usize = std::env::var("PROF_REPS").map_or(1, |s| s.parse().unwrap());
    let (mut wall, mut cpu) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..reps {
        let c0 = cpu_ns();
        let t0 = Instant::now();
        calls(seq, &f);
        let n = seq.len() as f64;
        wall = wall.min(t0.elapsed().as_nanos() as f64 / n);
        if let (Some(a), Some(b)) = (c0, cpu_ns()) {
            cpu = cpu.min((b - a) as f64 / n);
        }
    }
    eprintln!("{wall:.1} ns/call wall, {cpu:.1} on-CPU");
}

/// The calls themselves, in a function of their own so that callgrind counts only them:
/// `valgrind --tool=callgrind --toggle-collect='*calls*'`.
#[inline(never)]
fn calls<F: Fn(u32)>(seq: &[u32], f: &F) {
    for &k in seq {
        f(k);
    }
}

fn cas(a: &AtomicU64) {
    let v = a.load(Ordering::Relaxed);
    let _ = a.compare_exchange(v, v + 1, Ordering::Relaxed, Ordering::Relaxed);
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

/// `prof WHAT NKEYS [ORDER]`: one thread, one peer, 2,000,000 calls (`PROF_CALLS`) in
/// `hot_loop`, keys created and looked up in `ORDER` (`seq` or `shuffled`, default shuffled).
/// `WHAT`: `hotlimit` (`Keyed<u64>`), `hotlimit-pair` (`Keyed<u64, GcraPair>`), `hotlimit-string` and `governor-string` (the key read
/// from a vector), `hotlimit-string-hot` and `governor-string-hot` (the key written into a
/// reused buffer, `with_hot_key`), `hotlimit-short-hot` (`Keyed<ShortKey>`, the hot key
/// converted), `intkeyed`, `governor`, and the components below.
pub(crate) fn prof(what: &str, n: u64, order: Order) {
    let rate = Rate::per_second(1_000_000_000).unwrap();
    let quota = governor::Quota::per_second(std::num::NonZeroU32::new(1_000_000_000).unwrap());
    let calls: usize = std::env::var("PROF_CALLS").map_or(2_000_000, |s| s.parse().unwrap());
    let made = creation(order, n);
    let seq = lookups(order, n, calls);
    let seq = &seq[..calls];
    match what {
        "hotlimit" => {
            let k: Keyed<u64, Gcra> = Keyed::gcra(rate).capacity(n as usize * 2).build().unwrap();
            for &i in &made {
                k.try_acquire(&u64_key(i)).unwrap();
            }
            hot_loop(seq, |i| {
                let _ = std::hint::black_box(k.try_acquire(&u64_key(i)));
            });
        }
        "hotlimit-string" => {
            let strings: Vec<String> = (0..n as u32).map(string_key).collect();
            let k: Keyed<String, Gcra> =
                Keyed::gcra(rate).capacity(n as usize * 2).build().unwrap();
            for &i in &made {
                k.try_acquire(strings[i as usize].as_str()).unwrap();
            }
            hot_loop(seq, |i| {
                let _ = std::hint::black_box(k.try_acquire(strings[i as usize].as_str()));
            });
        }
        "hotlimit-string-hot" => {
            let k: Keyed<String, Gcra> =
                Keyed::gcra(rate).capacity(n as usize * 2).build().unwrap();
            for &i in &made {
                k.try_acquire(string_key(i).as_str()).unwrap();
            }
            hot_loop(seq, |i| {
                with_hot_key(i, |key| {
                    let _ = std::hint::black_box(k.try_acquire(key.as_str()));
                });
            });
        }
        "hotlimit-short-hot" => {
            let k: Keyed<ShortKey, Gcra> =
                Keyed::gcra(rate).capacity(n as usize * 2).build().unwrap();
            for &i in &made {
                k.try_acquire(&ShortKey::new(&string_key(i)).unwrap())
                    .unwrap();
            }
            hot_loop(seq, |i| {
                with_hot_key(i, |key| {
                    let key = ShortKey::new(key).unwrap();
                    let _ = std::hint::black_box(k.try_acquire(&key));
                });
            });
        }
        "governor-string-hot" => {
            let gl = governor::RateLimiter::keyed(quota);
            for &i in &made {
                let _ = gl.check_key(&string_key(i));
            }
            hot_loop(seq, |i| {
                with_hot_key(i, |key| {
                    let _ = std::hint::black_box(gl.check_key(key));
                });
            });
        }
        "hotlimit-pair" => {
            let second = Rate::per_second(100_000_000).unwrap();
            let k: Keyed<u64, GcraPair> = Keyed::gcra_pair(rate, second)
                .capacity(n as usize * 2)
                .build()
                .unwrap();
            for &i in &made {
                k.try_acquire(&u64_key(i)).unwrap();
            }
            hot_loop(seq, |i| {
                let _ = std::hint::black_box(k.try_acquire(&u64_key(i)));
            });
        }
        "intkeyed" => {
            let il: IntKeyed<u64> = IntKeyed::builder(rate)
                .capacity((n as f64 * 1.25) as usize)
                .build()
                .unwrap();
            for &i in &made {
                let _ = il.try_acquire(u64_key(i));
            }
            hot_loop(seq, |i| {
                let _ = std::hint::black_box(il.try_acquire(u64_key(i)));
            });
        }
        "governor" => {
            let gl = governor::RateLimiter::keyed(quota);
            for &i in &made {
                let _ = gl.check_key(&u64_key(i));
            }
            hot_loop(seq, |i| {
                let _ = std::hint::black_box(gl.check_key(&u64_key(i)));
            });
        }
        "governor-string" => {
            let strings: Vec<String> = (0..n as u32).map(string_key).collect();
            let gl = governor::RateLimiter::keyed(quota);
            for &i in &made {
                let _ = gl.check_key(&strings[i as usize]);
            }
            hot_loop(seq, |i| {
                let _ = std::hint::black_box(gl.check_key(&strings[i as usize]));
            });
        }
        "clock" => {
            let c = hotlimit::DefaultClock::default();
            hot_loop(seq, |_| {
                std::hint::black_box(hotlimit::Clock::now(&c));
            });
        }
        "flat" => {
            // The miss floor: one 16-byte {key, state} entry per key at load 1/2, read + CAS.
            let slots: Vec<[AtomicU64; 2]> = (0..2 * n)
                .map(|i| [AtomicU64::new(i), AtomicU64::new(0)])
                .collect();
            let h = foldhash::fast::FixedState::default();
            let mask = (2 * n).next_power_of_two() as usize / 2 - 1;
            hot_loop(seq, |k| {
                let i = std::hash::BuildHasher::hash_one(&h, u64::from(k)) as usize & mask;
                let s = &slots[i];
                if s[0].load(Ordering::Relaxed) != u64::MAX {
                    cas(&s[1]);
                }
            });
        }
        "papaya-get" => {
            let pm = papaya_filled(n, || AtomicU64::new(0));
            hot_loop(seq, |k| {
                let g = pm.guard();
                if let Some(a) = pm.get(&u64::from(k), &g) {
                    cas(a)
                }
            });
        }
        "dashmap" => {
            let dm: dashmap::DashMap<u64, AtomicU64> = dashmap::DashMap::new();
            for &i in &made {
                dm.insert(u64_key(i), AtomicU64::new(0));
            }
            hot_loop(seq, |k| {
                if let Some(a) = dm.get(&u64::from(k)) {
                    cas(&a)
                }
            });
        }
        _ => panic!("prof: unknown {what}"),
    }
}

/// The `maps` mode: lookup + one CAS in papaya, scc's `HashIndex` (values behind an `Arc`: it
/// clones entries when it resizes) and dashmap, all with foldhash, on 1 thread, shuffled keys.
pub(crate) fn maps_mode() {
    println!("| keys | papaya get + CAS | scc HashIndex peek + CAS | dashmap get + CAS | (ns/call, 1 thread, all foldhash)");
    println!("|---|---|---|---|");
    for n in list_from_env::<u64>("KEYS", "1000,100000,1000000") {
        let seq = lookups(Order::Shuffled, n, 2_000_000);
        let time = |f: &dyn Fn(u64)| {
            let t0 = Instant::now();
            for &k in &seq {
                f(u64::from(k));
            }
            t0.elapsed().as_nanos() as f64 / seq.len() as f64
        };
        let pm = papaya_filled(n, || AtomicU64::new(0));
        let p = time(&|k| {
            let g = pm.guard();
            if let Some(a) = pm.get(&k, &g) {
                cas(a)
            }
        });
        drop(pm);
        let sm: scc::HashIndex<u64, std::sync::Arc<AtomicU64>, foldhash::fast::RandomState> =
            scc::HashIndex::with_hasher(Default::default());
        for i in 0..n {
            let _ = sm.insert_sync(i, std::sync::Arc::new(AtomicU64::new(0)));
        }
        let s = time(&|k| {
            sm.peek_with(&k, |_, a| cas(a));
        });
        drop(sm);
        let dm: dashmap::DashMap<u64, AtomicU64, foldhash::fast::RandomState> =
            dashmap::DashMap::with_hasher(Default::default());
        for i in 0..n {
            dm.insert(i, AtomicU64::new(0));
        }
        let d = time(&|k| {
            if let Some(a) = dm.get(&k) {
                cas(&a)
            }
        });
        println!("| {n} | {p:.1} | {s:.1} | {d:.1} |");
    }
}
