//! The limiters against a real `redis-server` each test starts on a temporary unix socket.

mod common;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hotlimit::{Decide, Rate};
use hotlimit_redis::{
    connection_manager, Durable, Error, OnError, RedisLimiter, RedisLimiterBuilder, SyncConnection,
    TestClock,
};
use redis::Commands;

use common::RedisServer;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// 64 tasks on 4 connections, weighted requests (1..=3) on one key, and a second OS process
/// (`redis-cli` running the same script, 40 requests of 2 permits) at the same time: exactly the
/// limit admitted.
fn race(limiter: RedisLimiter, server: &RedisServer, limit: u64, script: &str, args: &str) {
    let key = "race";
    let rt = rt();
    let full_key = String::from_utf8(limiter.redis_key(key)).unwrap();
    let path = server.dir.join("script.lua");
    std::fs::write(&path, script).unwrap();
    let cli = format!(
        "for i in $(seq 40); do redis-cli -s {sock} --eval {path} {full_key} , {args} 2; done",
        sock = server.socket().display(),
        path = path.display(),
    );
    let other = Command::new("sh").arg("-c").arg(&cli).output_async();
    let granted: u64 = rt.block_on(async {
        let mut cons = Vec::new();
        for _ in 0..4 {
            cons.push(
                connection_manager(server.client(), Duration::from_secs(5))
                    .await
                    .unwrap(),
            );
        }
        let mut tasks = Vec::new();
        for t in 0..64u32 {
            let limiter = limiter.clone();
            let mut con = cons[t as usize % 4].clone();
            tasks.push(tokio::spawn(async move {
                let mut granted = 0u64;
                for i in 0..20u32 {
                    let n = 1 + (t + i) % 3;
                    let d = limiter
                        .decide_or_error_async(&mut con, key, n)
                        .await
                        .unwrap();
                    if d.is_allowed() {
                        granted += u64::from(n);
                    }
                }
                granted
            }));
        }
        let mut sum = 0;
        for t in tasks {
            sum += t.await.unwrap();
        }
        sum
    });
    let out = other.wait().unwrap();
    assert!(
        out.status.success(),
        "redis-cli: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(lines.len(), 40 * 4, "redis-cli output: {lines:?}");
    let by_cli: u64 = lines.chunks(4).filter(|r| r[0] == "1").count() as u64 * 2;
    assert!(by_cli > 0 || granted > 0);
    assert_eq!(
        granted + by_cli,
        limit,
        "tasks {granted} + other process {by_cli}"
    );
    assert_eq!(limiter.stats().errors, 0);
}

/// `Command::output` on a thread, so that the other process runs while the tasks do.
trait OutputAsync {
    fn output_async(&mut self) -> std::thread::JoinHandle<std::io::Result<std::process::Output>>;
}

impl OutputAsync for Command {
    fn output_async(&mut self) -> std::thread::JoinHandle<std::io::Result<std::process::Output>> {
        let child = self
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn();
        std::thread::spawn(move || child?.wait_with_output())
    }
}

trait Wait {
    fn wait(self) -> std::io::Result<std::process::Output>;
}

impl Wait for std::thread::JoinHandle<std::io::Result<std::process::Output>> {
    fn wait(self) -> std::io::Result<std::process::Output> {
        self.join().expect("the redis-cli thread")
    }
}

/// Whether `limiter` grants `n` under `key` (a decision that must not fail).
fn allowed(limiter: &RedisLimiter, con: &mut SyncConnection, key: &str, n: u32) -> bool {
    limiter.decide_blocking(con, key, n).unwrap().is_allowed()
}

/// A script as the crate sends it: the clock prelude, the shared parts it uses (the log's
/// rule for the log), then the script's own body.
macro_rules! script {
    ($($part:literal),+) => {
        concat!(
            include_str!("../src/lua/now.lua"),
            $(include_str!(concat!("../src/lua/", $part, ".lua"))),+
        )
    };
}

/// [`race`] on a fresh server, with the limiter `builder` makes (no local cache, a 5 s deadline).
fn race_on_server(builder: RedisLimiterBuilder, limit: u64, script: &str, args: &str) {
    let server = RedisServer::start();
    let limiter = builder
        .local_cache(0)
        .deadline(Duration::from_secs(5))
        .build()
        .unwrap();
    race(limiter, &server, limit, script, args);
}

#[test]
fn race_gcra_admits_exactly_the_burst() {
    // 100 per hour: nothing drains during the test, so the burst (100) is all there is.
    let limiter = RedisLimiter::gcra(Rate::per_hour(100).unwrap(), OnError::FailClosed);
    // The other process's ARGV: I = 36 s, τ = 100·I.
    race_on_server(limiter, 100, script!("gcra"), "36000000 3600000000");
}

#[test]
fn race_sliding_log_admits_exactly_the_limit() {
    let limiter = RedisLimiter::sliding_log(Rate::per_hour(90).unwrap(), OnError::FailClosed);
    race_on_server(
        limiter,
        90,
        script!("log_window", "sliding_log"),
        "90 3600000000",
    );
}

/// The TAT written is the server's `TIME` plus the cost: the client's clock is never read, so a
/// client whose clock is off by hours decides the same.
#[test]
fn server_time_only() {
    let server = RedisServer::start();
    let limiter = RedisLimiter::gcra(Rate::per_second(1).unwrap(), OnError::FailClosed)
        .build()
        .unwrap();
    let mut con = SyncConnection::new(server.client());
    let mut raw = server.con();
    let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut raw).unwrap();
    let before = s * 1_000_000 + us;
    assert!(allowed(&limiter, &mut con, "t", 1));
    let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut raw).unwrap();
    let after = s * 1_000_000 + us;
    let tat: u64 = raw.get(limiter.redis_key("t")).unwrap();
    assert!(
        (before + 1_000_000..=after + 1_000_000).contains(&tat),
        "TAT {tat} is server time + 1 s"
    );
}

fn exact_sequence(limiter: &RedisLimiter, con: &mut SyncConnection, key: &str, grants: u64) {
    for i in 0..grants {
        assert!(
            limiter.decide_blocking(con, key, 1).unwrap().is_allowed(),
            "grant {i}"
        );
    }
}

/// 3 per second: a burst of 3, then the fourth waits 333,334 µs (⌈1 s / 3⌉, as the core).
/// 1 per day: a full day. 1,000,000 per second: an interval of exactly 1 µs, TTLs of ≥ 1 ms.
#[test]
fn precision_and_expiry() {
    let server = RedisServer::start();
    let mut con = SyncConnection::new(server.client());
    let mut raw = server.con();

    let three = RedisLimiter::gcra(Rate::per_second(3).unwrap(), OnError::FailClosed)
        .local_cache(0)
        .build()
        .unwrap();
    exact_sequence(&three, &mut con, "3/s", 3);
    let d = three.decide_blocking(&mut con, "3/s", 1).unwrap();
    let retry = d.denial().unwrap().retry_after().unwrap();
    assert!(retry <= Duration::from_micros(333_334) && retry > Duration::from_millis(300));
    let pttl: i64 = raw.pttl(three.redis_key("3/s")).unwrap();
    assert!((1..=1000).contains(&pttl), "pttl {pttl}");
    // Idle keys are gone once full again (1 s + the rounding to a millisecond).
    std::thread::sleep(Duration::from_millis(1100));
    assert!(!raw.exists::<_, bool>(three.redis_key("3/s")).unwrap());

    let day = RedisLimiter::gcra(
        Rate::new(1, Duration::from_secs(86_400)).unwrap(),
        OnError::FailClosed,
    )
    .build()
    .unwrap();
    exact_sequence(&day, &mut con, "1/day", 1);
    let d = day.decide_blocking(&mut con, "1/day", 1).unwrap();
    let retry = d.denial().unwrap().retry_after().unwrap();
    assert!(retry > Duration::from_secs(86_399) && retry <= Duration::from_secs(86_400));
    let pttl: i64 = raw.pttl(day.redis_key("1/day")).unwrap();
    assert!(pttl > 86_399_000 && pttl <= 86_400_000, "pttl {pttl}");

    let million = RedisLimiter::gcra(Rate::per_second(1_000_000).unwrap(), OnError::FailClosed)
        .build()
        .unwrap();
    let d = million.decide_blocking(&mut con, "1M/s", 1).unwrap();
    assert!(d.is_allowed());
    assert_eq!(d.remaining(), 999_999);
    // The whole burst at once, then nothing for the next µs.
    let d = million
        .decide_blocking(&mut con, "1M/s-b", 1_000_000)
        .unwrap();
    assert!(d.is_allowed());
    assert_eq!(d.remaining(), 0);
    assert_eq!(d.reset(), Duration::from_secs(1));
    // A key never lives without an expiry, and never with one under 1 ms when written.
    let mut keys: Vec<Vec<u8>> = raw.keys("hotlimit:*").unwrap();
    keys.sort();
    for k in keys {
        let pttl: i64 = raw.pttl(&k).unwrap();
        assert!(
            pttl == -2 || pttl >= 0,
            "{:?} has no expiry",
            String::from_utf8_lossy(&k)
        );
    }

    let log = RedisLimiter::sliding_log(Rate::per_second(3).unwrap(), OnError::FailClosed)
        .local_cache(0)
        .prefix("log:")
        .build()
        .unwrap();
    exact_sequence(&log, &mut con, "3/s", 3);
    let d = log.decide_blocking(&mut con, "3/s", 1).unwrap();
    assert!(d.denial().unwrap().retry_after().unwrap() <= Duration::from_secs(1));
    let len: u64 = raw.llen(log.redis_key("3/s")).unwrap();
    assert_eq!(len, 3, "no rejected hit is stored");
    std::thread::sleep(Duration::from_millis(1100));
    assert!(!raw.exists::<_, bool>(log.redis_key("3/s")).unwrap());
}

/// A denial writes nothing: neither the state nor its expiry.
#[test]
fn denial_does_not_extend_the_expiry() {
    let server = RedisServer::start();
    let mut con = SyncConnection::new(server.client());
    let mut raw = server.con();
    for limiter in [
        RedisLimiter::gcra(Rate::per_second(2).unwrap(), OnError::FailClosed),
        RedisLimiter::sliding_log(Rate::per_second(2).unwrap(), OnError::FailClosed).prefix("log:"),
    ] {
        let limiter = limiter.local_cache(0).build().unwrap();
        exact_sequence(&limiter, &mut con, "k", 2);
        let key = limiter.redis_key("k");
        let before: Vec<u8> = redis::cmd("DUMP").arg(&key).query(&mut raw).unwrap();
        let pttl_before: i64 = raw.pttl(&key).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(!allowed(&limiter, &mut con, "k", 1));
        let after: Vec<u8> = redis::cmd("DUMP").arg(&key).query(&mut raw).unwrap();
        let pttl_after: i64 = raw.pttl(&key).unwrap();
        assert_eq!(before, after);
        assert!(
            pttl_after <= pttl_before - 40,
            "{pttl_before} -> {pttl_after}"
        );
    }
}

/// `SCRIPT FLUSH` in the middle of a run: the next calls reload the script (NOSCRIPT), with no
/// error and no double charge, for single decisions and batches, sync and async.
#[test]
fn script_flush_mid_run() {
    let server = RedisServer::start();
    let limiter = RedisLimiter::gcra(Rate::per_hour(10).unwrap(), OnError::FailClosed)
        .local_cache(0)
        .build()
        .unwrap();
    let mut con = SyncConnection::new(server.client());
    let mut raw = server.con();
    exact_sequence(&limiter, &mut con, "f", 2);
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut raw).unwrap();
    exact_sequence(&limiter, &mut con, "f", 2);
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut raw).unwrap();
    let batch = limiter
        .decide_batch_blocking(&mut con, &[("f", 1), ("f", 2)])
        .unwrap();
    assert!(batch.iter().all(|d| d.is_allowed()));
    rt().block_on(async {
        let mut acon = connection_manager(server.client(), Duration::from_secs(1))
            .await
            .unwrap();
        let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut raw).unwrap();
        assert!(limiter
            .decide_async(&mut acon, "f", 1)
            .await
            .unwrap()
            .is_allowed());
        let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut raw).unwrap();
        let b = limiter
            .decide_batch_async(&mut acon, &[("f", 2), ("f", 1)])
            .await
            .unwrap();
        assert!(b[0].is_allowed());
        // 2 + 2 + 3 + 1 + 2 = 10: the eleventh permit is refused (nothing was charged twice).
        assert!(!b[1].is_allowed());
    });
    assert_eq!(limiter.stats().errors, 0);
}

/// A server killed and started again: decisions follow the policy within the deadline while it
/// is down, and come back from Redis without a new client.
#[test]
fn server_killed_and_restarted() {
    let mut server = RedisServer::start();
    let deadline = Duration::from_millis(100);
    let reprobe = Duration::from_millis(50);
    let closed = RedisLimiter::gcra(Rate::per_hour(1000).unwrap(), OnError::FailClosed)
        .deadline(deadline)
        .reprobe_after(reprobe)
        .build()
        .unwrap();
    let open = RedisLimiter::gcra(Rate::per_hour(1000).unwrap(), OnError::FailOpen)
        .deadline(deadline)
        .reprobe_after(reprobe)
        .build()
        .unwrap();
    let fallback = RedisLimiter::gcra(
        Rate::per_hour(1000).unwrap(),
        OnError::fallback(Rate::per_hour(2).unwrap()).unwrap(),
    )
    .deadline(deadline)
    .reprobe_after(reprobe)
    .build()
    .unwrap();
    let mut sync = SyncConnection::new(server.client());
    let rt = rt();
    let mut acon = rt
        .block_on(connection_manager(server.client(), deadline))
        .unwrap();
    for l in [&closed, &open, &fallback] {
        assert!(allowed(l, &mut sync, "k", 1));
        assert!(rt
            .block_on(l.decide_async(&mut acon, "k", 1))
            .unwrap()
            .is_allowed());
    }

    server.kill();
    // Each call answers within the deadline (a margin for a loaded machine), by the policy.
    let bound = deadline * 3;
    for round in 0..5 {
        let t = Instant::now();
        let d = closed.decide_blocking(&mut sync, "k", 1).unwrap();
        assert!(!d.is_allowed(), "fail closed, round {round}");
        let d = rt.block_on(closed.decide_async(&mut acon, "k", 1)).unwrap();
        assert!(!d.is_allowed());
        assert!(allowed(&open, &mut sync, "k", 1));
        assert!(rt
            .block_on(open.decide_async(&mut acon, "k", 1))
            .unwrap()
            .is_allowed());
        let f = rt
            .block_on(fallback.decide_async(&mut acon, "k", 1))
            .unwrap();
        assert_eq!(
            f.is_allowed(),
            round < 2,
            "the fallback's own 2 per hour, round {round}"
        );
        assert!(
            t.elapsed() < bound * 5,
            "round {round} took {:?}",
            t.elapsed()
        );
        std::thread::sleep(reprobe);
    }
    for l in [&closed, &open, &fallback] {
        let s = l.stats();
        assert!(s.errors >= 1 && s.fallbacks >= 5, "{s:?}");
    }

    server.restart();
    // Back within a few reprobe intervals, on the same SyncConnection and ConnectionManager.
    let start = Instant::now();
    let mut sync_back = false;
    let mut async_back = false;
    while start.elapsed() < Duration::from_secs(10) && !(sync_back && async_back) {
        let before = closed.stats().fallbacks;
        let d = closed.decide_blocking(&mut sync, "k2", 1).unwrap();
        sync_back |= d.is_allowed() && closed.stats().fallbacks == before;
        let before = closed.stats().fallbacks;
        let d = rt
            .block_on(closed.decide_async(&mut acon, "k3", 1))
            .unwrap();
        async_back |= d.is_allowed() && closed.stats().fallbacks == before;
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        sync_back && async_back,
        "sync {sync_back}, async {async_back}"
    );
}

/// Bad input: typed errors or documented behaviour, never a panic, and no round trip.
#[test]
fn bad_input() {
    assert_eq!(
        Rate::new(0, Duration::from_secs(1)).unwrap_err().field(),
        "limit"
    );
    assert!(Rate::new(1, Duration::ZERO).is_err());
    let err = RedisLimiter::gcra(Rate::per_second(1).unwrap(), OnError::FailOpen)
        .deadline(Duration::ZERO)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "deadline");
    let err = RedisLimiter::gcra(Rate::per_second(2_000_000).unwrap(), OnError::FailOpen)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "rate");
    let err = RedisLimiter::gcra(
        Rate::new(1, Duration::from_secs(200 * 365 * 86_400)).unwrap(),
        OnError::FailOpen,
    )
    .build()
    .unwrap_err();
    assert_eq!(err.field(), "burst");

    let server = RedisServer::start();
    let mut con = SyncConnection::new(server.client());
    for limiter in [
        RedisLimiter::gcra(Rate::per_second(5).unwrap(), OnError::FailClosed),
        RedisLimiter::sliding_log(Rate::per_second(5).unwrap(), OnError::FailClosed).prefix("log:"),
    ] {
        let limiter = limiter.build().unwrap();
        // n above the burst / limit: never, with no round trip.
        let d = limiter.decide_blocking(&mut con, "k", 6).unwrap();
        assert!(d.denial().unwrap().is_never());
        assert_eq!(limiter.stats().round_trips, 0);
        // n = 0: granted, charges nothing, reports what is left.
        let d = limiter.decide_blocking(&mut con, "k", 0).unwrap();
        assert!(d.is_allowed());
        assert_eq!(d.remaining(), 5);
        // The empty key is a key (the prefix alone).
        assert!(allowed(&limiter, &mut con, "", 5));
        assert!(!allowed(&limiter, &mut con, "", 1));
        // 1 MiB: refused before any round trip.
        let trips = limiter.stats().round_trips;
        let huge = "k".repeat(1 << 20);
        assert!(matches!(
            limiter.decide_blocking(&mut con, &huge, 1),
            Err(Error::KeyTooLong { len, max: 4096 }) if len > 1 << 20
        ));
        assert_eq!(limiter.stats().round_trips, trips);
    }
    // A key of another type (written by someone else): the policy decides, nothing panics.
    let mut raw = server.con();
    let _: () = raw.hset("hotlimit:wrong", "f", "v").unwrap();
    let limiter = RedisLimiter::sliding_log(Rate::per_second(5).unwrap(), OnError::FailClosed)
        .build()
        .unwrap();
    assert!(!allowed(&limiter, &mut con, "wrong", 1));
    assert_eq!(limiter.stats().errors, 1);
}

/// A denied key is denied again locally until its retry-after, with no round trip.
#[test]
fn local_denial_cache() {
    let server = RedisServer::start();
    let mut con = SyncConnection::new(server.client());
    let limiter = RedisLimiter::gcra(Rate::per_second(4).unwrap(), OnError::FailClosed)
        .build()
        .unwrap();
    exact_sequence(&limiter, &mut con, "c", 4);
    let first = limiter.decide_blocking(&mut con, "c", 1).unwrap();
    assert!(!first.is_allowed());
    let trips = limiter.stats().round_trips;
    for _ in 0..1000 {
        let d = limiter.decide_blocking(&mut con, "c", 1).unwrap();
        assert!(!d.is_allowed());
        assert!(d.denial().unwrap().retry_after() <= first.denial().unwrap().retry_after());
    }
    let s = limiter.stats();
    assert_eq!(s.round_trips, trips);
    assert_eq!(s.local_denials, 1000);
    assert_eq!(s.cached_keys, 1);
    // `decisions` counts what reached Redis (the 4 grants and the first denial), not the
    // cached denials (the 3.7–4.8 M "decisions"/s behind 390 round trips/s).
    assert_eq!(s.decisions, 5, "{s:?}");
    // A request for more than the burst: refused locally, apart.
    let _ = limiter.decide_blocking(&mut con, "c", 5).unwrap();
    assert_eq!((limiter.stats().refused, limiter.stats().decisions), (1, 5));
    // After the retry-after, Redis is asked again and grants.
    std::thread::sleep(first.denial().unwrap().retry_after().unwrap());
    assert!(allowed(&limiter, &mut con, "c", 1));
    assert_eq!(limiter.stats().round_trips, trips + 1);
}

/// A batch is one round trip and decides as the same requests one by one.
#[test]
fn batch_matches_one_by_one() {
    let server = RedisServer::start();
    let mut con = SyncConnection::new(server.client());
    let requests: Vec<(String, u32)> = (0..200u32)
        .map(|i| (format!("b{}", i % 7), 1 + i % 4))
        .collect();
    let requests: Vec<(&str, u32)> = requests.iter().map(|(k, n)| (k.as_str(), *n)).collect();
    for make in [RedisLimiter::gcra, RedisLimiter::sliding_log] {
        let batch = make(Rate::per_hour(30).unwrap(), OnError::FailClosed)
            .prefix("batch:")
            .local_cache(0)
            .build()
            .unwrap();
        let single = make(Rate::per_hour(30).unwrap(), OnError::FailClosed)
            .prefix("single:")
            .local_cache(0)
            .build()
            .unwrap();
        let got = batch.decide_batch_blocking(&mut con, &requests).unwrap();
        assert_eq!(batch.stats().round_trips, 1);
        for (d, (k, n)) in got.iter().zip(&requests) {
            let want = single.decide_blocking(&mut con, k, *n).unwrap();
            assert_eq!(d.is_allowed(), want.is_allowed(), "{k} {n}");
            assert_eq!(d.remaining(), want.remaining());
        }
    }
}

/// The async limiter as a `hotlimit::Decide`, shared by tasks behind an `Arc`.
#[test]
fn decide_trait() {
    let server = RedisServer::start();
    let rt = rt();
    rt.block_on(async {
        let con = connection_manager(server.client(), Duration::from_secs(1))
            .await
            .unwrap();
        let policy = Arc::new(
            RedisLimiter::sliding_log(Rate::per_minute(3).unwrap(), OnError::FailClosed)
                .build()
                .unwrap()
                .with_connection(con),
        );
        assert_eq!(policy.quota().limit(), 3);
        let d = policy.decide("ip", 2).await.unwrap();
        assert!(d.is_allowed());
        assert_eq!(d.remaining(), 1);
        assert!(d.reset() > Duration::from_secs(59));
        let d = policy.decide("ip", 2).await.unwrap();
        assert!(!d.is_allowed());
        assert!(d.denial().unwrap().retry_after().unwrap() > Duration::from_secs(59));
    });
}

/// The denial cache holds at most its capacity: denials beyond it are not cached (those keys
/// ask Redis again), and stale entries make room.
#[test]
fn local_denial_cache_is_bounded() {
    let server = RedisServer::start();
    let mut con = SyncConnection::new(server.client());
    let limiter = RedisLimiter::gcra(Rate::per_second(5).unwrap(), OnError::FailClosed)
        .burst(1)
        .local_cache(3)
        .build()
        .unwrap();
    for k in 0..10 {
        let key = format!("k{k}");
        assert!(allowed(&limiter, &mut con, &key, 1));
        assert!(!allowed(&limiter, &mut con, &key, 1));
        assert!(limiter.stats().cached_keys <= 3);
    }
    assert_eq!(limiter.stats().cached_keys, 3);
    // The first three keys' denials are cached, the others ask Redis.
    let trips = limiter.stats().round_trips;
    assert!(!allowed(&limiter, &mut con, "k0", 1));
    assert_eq!(limiter.stats().round_trips, trips);
    assert!(!allowed(&limiter, &mut con, "k9", 1));
    assert_eq!(limiter.stats().round_trips, trips + 1);
    // Once they are stale (200 ms at 5/s), a new denial replaces them.
    std::thread::sleep(Duration::from_millis(250));
    assert!(allowed(&limiter, &mut con, "new", 1));
    assert!(!allowed(&limiter, &mut con, "new", 1));
    assert_eq!(limiter.stats().cached_keys, 1);
}

/// Fenced mode, on the test hook's clock (exact): a key lost with the server's data
/// (`FLUSHALL`) restarts full, with no permit free, and refills at the rate; unfenced (the
/// twin) it restarts empty and grants its whole burst again.
#[test]
fn fenced_key_restarts_full_after_a_loss() {
    let server = RedisServer::start();
    let mut con = SyncConnection::new(server.client());
    for fenced in [true, false] {
        let clock = TestClock::default();
        let limiter = RedisLimiter::gcra(Rate::per_second(5).unwrap(), OnError::FailClosed)
            .local_cache(0)
            .fenced(fenced)
            .prefix(common::unique_key("fence"))
            .test_clock(clock.clone())
            .build()
            .unwrap();
        let t0 = 1_000_000_000_000u64; // µs
        clock.set_micros(t0);
        // The first use of the key space: the marker is made, and a missing key is fenced too.
        let first = allowed(&limiter, &mut con, "k", 1);
        assert_eq!(first, !fenced, "fenced {fenced}: first use");
        // Past the fence (τ = 1 s): the whole burst.
        clock.set_micros(t0 + 1_000_000);
        let burst = (0..6)
            .filter(|_| allowed(&limiter, &mut con, "k", 1))
            .count();
        assert_eq!(burst, 5, "fenced {fenced}");
        let _: () = redis::cmd("FLUSHALL").query(&mut server.con()).unwrap();
        // Lost: fenced, no permit free now, one per I (200 ms) after; unfenced, 5 again.
        let again = (0..6)
            .filter(|_| allowed(&limiter, &mut con, "k", 1))
            .count();
        clock.set_micros(t0 + 1_200_000);
        let later = (0..6)
            .filter(|_| allowed(&limiter, &mut con, "k", 1))
            .count();
        if fenced {
            assert_eq!((again, later), (0, 1), "fenced: restarts full");
        } else {
            assert_eq!(again, 5, "the unfenced twin restarts empty");
        }
    }
}

/// Durable grants: with no replica to acknowledge them, no grant counts (fail closed), and
/// the failure is counted; with one that follows, grants count.
#[test]
fn durable_grants_wait_for_a_replica() {
    let primary = RedisServer::launch_tcp(&[]);
    let limiter = RedisLimiter::gcra(Rate::per_second(100).unwrap(), OnError::FailClosed)
        .durable(Durable::new(1, Duration::from_millis(10)))
        .build()
        .unwrap();
    let mut con = SyncConnection::new(primary.client());
    assert!(
        !allowed(&limiter, &mut con, "d", 1),
        "no replica: not durable"
    );
    assert_eq!(limiter.stats().errors, 1);
    let port = primary.port.to_string();
    let replica = RedisServer::launch_tcp(&["--replicaof", "127.0.0.1", &port]);
    let start = std::time::Instant::now();
    let mut granted = false;
    while !granted && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(150));
        granted = allowed(&limiter, &mut con, "d", 1);
    }
    assert!(granted, "a replica follows: durable grants count");
    drop(replica);
}
