//! The `mem-*` modes: bytes per key as the RSS growth of creating 1,000,000 keys (`MEM_KEYS`),
//! one fresh process per row (`mem-all` starts them and prints the table).

use std::time::Duration;

use hotlimit::{Gcra, GcraPair, IntKeyed, Keyed, KeyedBuilder, KeyedState, Rate, ShortKey};

use crate::keys::{string_key, u64_key};

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

/// The RSS growth of running `fill` (which creates `n` keys), in bytes per key.
fn rss_growth_per_key(n: u64, fill: impl FnOnce()) -> f64 {
    let before = rss();
    fill();
    (rss() - before) as f64 / n as f64
}

/// Every row, in `mem-all`'s order: (mode, what it measures).
pub(crate) const ROWS: &[(&str, &str)] = &[
    ("mem-hotlimit", "Keyed<u64, Gcra>"),
    ("mem-intkeyed", "IntKeyed<u64>"),
    ("mem-governor", "governor keyed, u64"),
    ("mem-ratenet", "rate-net keyed, u64"),
    ("mem-string", "Keyed<String, Gcra>"),
    ("mem-short", "Keyed<ShortKey, Gcra>"),
    ("mem-governor-string", "governor keyed, String"),
    ("mem-pair", "Keyed<u64, GcraPair>"),
    ("mem-log", "Keyed<u64, SlidingLog> limit 10"),
    ("mem-window", "Keyed<u64, SlidingWindow> 10 buckets"),
    ("mem-multi", "Keyed<u64, MultiWindow> 2 rings, 10 buckets"),
];

/// The keys of every row: `MEM_KEYS`, default 1,000,000.
fn keys() -> u64 {
    std::env::var("MEM_KEYS").map_or(1_000_000, |s| s.replace('_', "").parse().unwrap())
}

/// `Keyed` from `builder` with capacity = the keys, filled by `insert`.
fn keyed<K, L: KeyedState>(
    n: u64,
    builder: KeyedBuilder<K, L, hotlimit::DefaultClock>,
    insert: impl Fn(&Keyed<K, L>, u32),
) -> (f64, usize)
where
    K: std::hash::Hash + Eq + Clone + 'static,
{
    let mut held = None;
    let per_key = rss_growth_per_key(n, || {
        let k = builder.capacity(n as usize).build().unwrap();
        for i in 0..n as u32 {
            insert(&k, i);
        }
        held = Some(k);
    });
    (per_key, held.map_or(0, |k| k.len()))
}

/// Runs one row in this process and prints `label: keys, bytes/key`.
pub(crate) fn mem_mode(mode: &str) {
    let n = keys();
    let big = Rate::per_second(1_000_000_000).unwrap();
    let ten = Rate::per_second(10).unwrap();
    let quota = governor::Quota::per_second(std::num::NonZeroU32::new(1_000_000_000).unwrap());
    let (per_key, len) = match mode {
        "mem-hotlimit" => keyed(n, Keyed::<u64, Gcra>::gcra(big), |k, i| {
            k.try_acquire(&u64_key(i)).unwrap()
        }),
        "mem-string" => {
            // The key strings are built inside the measurement, as each peer stores its own.
            keyed(n, Keyed::<String, Gcra>::gcra(big), |k, i| {
                k.try_acquire(string_key(i).as_str()).unwrap()
            })
        }
        "mem-short" => keyed(n, Keyed::<ShortKey, Gcra>::gcra(big), |k, i| {
            k.try_acquire(&ShortKey::new(&string_key(i)).unwrap())
                .unwrap()
        }),
        "mem-pair" => keyed(
            n,
            Keyed::<u64, GcraPair>::gcra_pair(big, Rate::new(1, Duration::from_secs(1)).unwrap()),
            |k, i| k.try_acquire(&u64_key(i)).unwrap(),
        ),
        "mem-log" => keyed(
            n,
            Keyed::<u64, hotlimit::SlidingLog>::sliding_log(ten),
            |k, i| k.try_acquire(&u64_key(i)).unwrap(),
        ),
        "mem-window" => keyed(
            n,
            Keyed::<u64, hotlimit::SlidingWindow>::sliding_window(ten),
            |k, i| k.try_acquire(&u64_key(i)).unwrap(),
        ),
        "mem-multi" => keyed(
            n,
            Keyed::<u64, hotlimit::MultiWindow>::multi_window(
                hotlimit::MultiWindow::builder()
                    .window(Rate::per_minute(100).unwrap())
                    .window(Rate::per_hour(2_000).unwrap()),
            ),
            |k, i| k.try_acquire(&u64_key(i)).unwrap(),
        ),
        "mem-intkeyed" => {
            let mut held = None;
            let per_key = rss_growth_per_key(n, || {
                let il: IntKeyed<u64> =
                    IntKeyed::builder(big).capacity(n as usize).build().unwrap();
                for i in 0..n {
                    let _ = il.try_acquire(i);
                }
                held = Some(il);
            });
            (per_key, held.map_or(0, |k| k.len()))
        }
        "mem-governor" => {
            let gl = governor::RateLimiter::keyed(quota);
            let per_key = rss_growth_per_key(n, || {
                for i in 0..n {
                    let _ = gl.check_key(&i);
                }
            });
            (per_key, gl.len())
        }
        "mem-governor-string" => {
            let gl = governor::RateLimiter::keyed(quota);
            let per_key = rss_growth_per_key(n, || {
                for i in 0..n as u32 {
                    let _ = gl.check_key(&string_key(i));
                }
            });
            (per_key, gl.len())
        }
        "mem-ratenet" => {
            // rate-net's keyed limiter, default token bucket, capacity = the keys.
            let rn = rate_net::RateLimiter::builder()
                .quota(1_000_000_000, Duration::from_secs(1))
                .eviction(rate_net::Eviction::capacity(n as usize))
                .try_build()
                .unwrap();
            let per_key = rss_growth_per_key(n, || {
                for i in 0..n {
                    let _ = rn.check(i);
                }
            });
            (per_key, rn.tracked_keys())
        }
        other => panic!("unknown mode {other}"),
    };
    let label = ROWS.iter().find(|r| r.0 == mode).map_or(mode, |r| r.1);
    println!("| {label} | {len} | {per_key:.1} |");
}

/// `mem-all`: every row in a fresh process of this binary, one table.
pub(crate) fn mem_all() {
    let exe = std::env::current_exe().unwrap();
    println!("| limiter | keys held | bytes/key (RSS growth) |");
    println!("|---|---:|---:|");
    for (mode, _) in ROWS {
        let out = std::process::Command::new(&exe).arg(mode).output().unwrap();
        assert!(
            out.status.success(),
            "{mode}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        print!("{}", String::from_utf8_lossy(&out.stdout));
    }
}
