//! The Redis limiters beside the designs people use today, in one run on one `redis-server`
//! this benchmark starts on a temporary unix socket (see hotlimit-redis/README.md).
//!
//! `cargo bench -p hotlimit-redis --bench redis_limiters` (about 30 s; `SECS=2` for longer
//! cells). Every cell is a closed loop: each connection sends its next decision when the last
//! one is answered, over 1,000 keys at a rate that grants (the grant path writes; it is the
//! costlier one).

#![allow(missing_docs)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use hotlimit::Rate;
use hotlimit_redis::{
    connection_manager, OnError, RedisLimiter, RedisLimiterBuilder, SyncConnection,
};
use redis::aio::ConnectionManager;
use redis::{Script, Value};

use common::RedisServer;

const KEYS: u64 = 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Design {
    Ping,
    OurGcra,
    OurLog,
    RedisRate,
    ZsetMulti,
}

impl Design {
    fn name(self) -> &'static str {
        match self {
            Design::Ping => "PING (round-trip floor)",
            Design::OurGcra => "hotlimit-redis GCRA",
            Design::OurLog => "hotlimit-redis sliding log",
            Design::RedisRate => "redis_rate-equivalent GCRA",
            Design::ZsetMulti => "MULTI/ZADD/ZREMRANGEBYSCORE/ZCARD log",
        }
    }
}

struct Ctx {
    gcra: RedisLimiter,
    log: RedisLimiter,
    redis_rate: Script,
}

/// A limiter as the benchmark measures it: keys under `prefix`, no local cache (every decision
/// is a round trip), a deadline no run reaches.
fn measured(builder: RedisLimiterBuilder, prefix: &str) -> RedisLimiter {
    builder
        .prefix(prefix)
        .local_cache(0)
        .deadline(Duration::from_secs(5))
        .build()
        .unwrap()
}

async fn one(ctx: &Ctx, design: Design, con: &mut ConnectionManager, i: u64) -> bool {
    let k = i % KEYS;
    match design {
        Design::Ping => {
            let _: String = redis::cmd("PING").query_async(con).await.unwrap();
            true
        }
        Design::OurGcra | Design::OurLog => {
            let limiter = if design == Design::OurGcra {
                &ctx.gcra
            } else {
                &ctx.log
            };
            limiter
                .decide_or_error_async(con, &format!("{k}"), 1)
                .await
                .unwrap()
                .is_allowed()
        }
        Design::RedisRate => {
            let v: Vec<Value> = ctx
                .redis_rate
                .key(format!("rr:{k}"))
                .arg(100_000)
                .arg(100_000)
                .arg(1)
                .arg(1)
                .invoke_async(con)
                .await
                .unwrap();
            v[0] != Value::Int(0)
        }
        Design::ZsetMulti => {
            // The classic: client time, every hit stored (rejected ones too), 4 commands in a
            // transaction, the decision made on the client from the count.
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_micros() as u64;
            let key = format!("zs:{k}");
            let (count,): (u64,) = redis::pipe()
                .atomic()
                .zrembyscore(&key, 0, now - 1_000_000)
                .ignore()
                .zadd(&key, format!("{now}-{i}"), now)
                .ignore()
                .zcard(&key)
                .pexpire(&key, 1000)
                .ignore()
                .query_async(con)
                .await
                .unwrap();
            count <= 100_000
        }
    }
}

struct Cell {
    per_sec: f64,
    p50: Duration,
    p99: Duration,
}

async fn run(ctx: &'static Ctx, server: &RedisServer, design: Design, conns: usize) -> Cell {
    let secs: f64 = std::env::var("SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let mut tasks = Vec::new();
    let start = Instant::now() + Duration::from_millis(100);
    let end = start + Duration::from_secs_f64(secs);
    for c in 0..conns {
        let mut con = connection_manager(server.client(), Duration::from_secs(5))
            .await
            .unwrap();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(200_000);
            let mut i = c as u64 * 7919;
            // Warm-up until the common start (scripts loaded, connections up).
            while Instant::now() < start {
                one(ctx, design, &mut con, i).await;
                i += 1;
            }
            loop {
                let t = Instant::now();
                if t >= end {
                    break;
                }
                one(ctx, design, &mut con, i).await;
                lat.push(t.elapsed());
                i += 1;
            }
            lat
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.unwrap());
    }
    lat.sort();
    Cell {
        per_sec: lat.len() as f64 / secs,
        p50: lat[lat.len() / 2],
        p99: lat[lat.len() * 99 / 100],
    }
}

fn commandstats(con: &mut redis::Connection) -> Vec<(String, u64, f64)> {
    let info: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    info.lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let field = |f: &str| {
                rest.split(',')
                    .find_map(|kv| kv.strip_prefix(f)?.strip_prefix('='))
                    .and_then(|v| v.parse::<f64>().ok())
            };
            Some((name.to_owned(), field("calls")? as u64, field("usec")?))
        })
        .collect()
}

fn main() {
    let server = RedisServer::start();
    let ctx: &'static Ctx = Box::leak(Box::new(Ctx {
        gcra: measured(
            RedisLimiter::gcra(Rate::per_second(100_000).unwrap(), OnError::FailClosed),
            "g:",
        ),
        log: measured(
            RedisLimiter::sliding_log(Rate::per_second(100).unwrap(), OnError::FailClosed),
            "l:",
        ),
        redis_rate: Script::new(include_str!("redis_rate_equivalent.lua")),
    }));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut raw = server.con();
    // ONLY=cached: just the cached-denial loop (for `perf stat` / callgrind on that path).
    let only_cached = std::env::var("ONLY").is_ok_and(|v| v == "cached");
    if !only_cached {
        table(ctx, &server, &rt, &mut raw);
    }
    cached_and_memory(ctx, &server, &mut raw, only_cached);
}

fn table(
    ctx: &'static Ctx,
    server: &RedisServer,
    rt: &tokio::runtime::Runtime,
    raw: &mut redis::Connection,
) {
    println!(
        "load before: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    println!("| design | conns | decisions/s | p50 µs | p99 µs | server µs/call |");
    println!("|---|---|---|---|---|---|");
    let designs = [
        Design::Ping,
        Design::OurGcra,
        Design::RedisRate,
        Design::OurLog,
        Design::ZsetMulti,
    ];
    for conns in [1, 16] {
        for design in designs {
            let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(raw).unwrap();
            let cell = rt.block_on(run(ctx, server, design, conns));
            let stats = commandstats(raw);
            let server_us = match design {
                Design::Ping => stats
                    .iter()
                    .find(|s| s.0 == "ping")
                    .map(|s| s.2 / s.1 as f64),
                Design::OurGcra | Design::OurLog | Design::RedisRate => stats
                    .iter()
                    .find(|s| s.0 == "evalsha")
                    .map(|s| s.2 / s.1 as f64),
                Design::ZsetMulti => {
                    // The transaction's whole server time per decision (EXEC counts its
                    // commands' time; MULTI and the queued commands' own entries are tiny).
                    let exec = stats.iter().find(|s| s.0 == "exec");
                    exec.map(|s| s.2 / s.1 as f64)
                }
            };
            println!(
                "| {} | {conns} | {:.0} | {:.1} | {:.1} | {} |",
                design.name(),
                cell.per_sec,
                cell.p50.as_secs_f64() * 1e6,
                cell.p99.as_secs_f64() * 1e6,
                server_us.map_or("-".into(), |u| format!("{u:.2}")),
            );
        }
    }

    // The batch: 100 decisions per pipelined call, one connection.
    let batch_rate = rt.block_on(async {
        let mut con = connection_manager(server.client(), Duration::from_secs(5))
            .await
            .unwrap();
        let keys: Vec<String> = (0..KEYS).map(|k| k.to_string()).collect();
        let mut i = 0usize;
        let mut decided = 0u64;
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(1) {
            let reqs: Vec<(&str, u32)> = (0..100)
                .map(|j| (keys[(i + j) % keys.len()].as_str(), 1))
                .collect();
            decided += ctx
                .gcra
                .decide_batch_async(&mut con, &reqs)
                .await
                .unwrap()
                .len() as u64;
            i += 100;
        }
        decided as f64 / start.elapsed().as_secs_f64()
    });
    println!("\nbatch (GCRA, 100 per pipeline, 1 connection): {batch_rate:.0} decisions/s");
}

fn cached_and_memory(
    ctx: &Ctx,
    server: &RedisServer,
    raw: &mut redis::Connection,
    only_cached: bool,
) {
    // The cached denial: a denied key asked again, no round trip.
    let cached = RedisLimiter::gcra(Rate::per_hour(1).unwrap(), OnError::FailClosed)
        .prefix("cached:")
        .build()
        .unwrap();
    let mut sync = SyncConnection::new(server.client());
    assert!(cached
        .decide_blocking(&mut sync, "k", 1)
        .unwrap()
        .is_allowed());
    assert!(!cached
        .decide_blocking(&mut sync, "k", 1)
        .unwrap()
        .is_allowed());
    let trips = cached.stats().round_trips;
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < Duration::from_millis(500) {
        for _ in 0..1000 {
            assert!(!cached
                .decide_blocking(&mut sync, "k", 1)
                .unwrap()
                .is_allowed());
        }
        n += 1000;
    }
    let cached_rate = n as f64 / start.elapsed().as_secs_f64();
    assert_eq!(cached.stats().round_trips, trips);
    // The sync round trip it avoids (same connection type).
    let start = Instant::now();
    let mut m = 0u64;
    let mut raw2 = server.con();
    while start.elapsed() < Duration::from_millis(500) {
        let _: String = redis::cmd("PING").query(&mut raw2).unwrap();
        m += 1;
    }
    let ping_rate = m as f64 / start.elapsed().as_secs_f64();
    println!(
        "cached denial: {cached_rate:.0} decisions/s ({n} calls); sync PING round trips: {ping_rate:.0}/s; ratio {:.0}x",
        cached_rate / ping_rate
    );
    if only_cached {
        return;
    }

    // Memory per key (MEMORY USAGE, bytes, jemalloc's allocation sizes included).
    let usage = |raw: &mut redis::Connection, key: &str| -> i64 {
        redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(key)
            .arg("SAMPLES")
            .arg(0)
            .query(raw)
            .unwrap_or(-1)
    };
    let full_log = RedisLimiter::sliding_log(Rate::per_hour(10).unwrap(), OnError::FailClosed)
        .prefix("mem-log:")
        .build()
        .unwrap();
    assert!(full_log
        .decide_blocking(&mut sync, "k", 10)
        .unwrap()
        .is_allowed());
    let mut zs = server.con();
    for j in 0..10u64 {
        let _: () = redis::cmd("ZADD")
            .arg("mem-zs:k")
            .arg(1_700_000_000_000_000u64 + j)
            .arg(format!("1700000000000000{j}-{j}"))
            .query(&mut zs)
            .unwrap();
    }
    let _: Vec<Value> = ctx
        .redis_rate
        .key("mem-rr:k")
        .arg(10)
        .arg(10)
        .arg(3600)
        .arg(1)
        .invoke(raw)
        .unwrap();
    println!(
        "memory per key (bytes): GCRA {}, redis_rate-equivalent {}, log of 10 {}, sorted-set log of 10 {}",
        usage(raw, "cached:k"),
        usage(raw, "mem-rr:k"),
        usage(raw, "mem-log:k"),
        usage(raw, "mem-zs:k"),
    );
    println!(
        "load after: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
}
