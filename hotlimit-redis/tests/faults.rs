//! Faults: a stopped server, and a killed one.
//!
//! One decision waits at most its deadline **in total**, on every path, against a server
//! stopped with SIGSTOP (connections stay open and new connects are queued by the kernel, but
//! nothing is answered): blocking on an open connection, blocking with a reconnect (the
//! connect's handshake and the read share the deadline), `decide_or_error_blocking`, a blocking
//! batch, async, `decide_or_error_async`, an async batch. The cluster path is in `cluster.rs`.
//!
//! Bound asserted: elapsed ≤ deadline + [`MARGIN`] (50 ms: scheduling on a loaded 2-core
//! machine; the bug this replaces took 2 × the deadline, 207–211 ms for 100 ms) on every path,
//! in one of [`RUNS`] whole runs. A machine under heavy load stalls a process now and then far
//! past any margin (at load 17 here a plain 100 ms sleep once took 1.9 s, and this test failed
//! 4 runs in 5); a path that really waits twice fails every run.

mod common;

use std::time::{Duration, Instant};

use hotlimit::Rate;
use hotlimit_redis::{connection_manager, Error, OnError, RedisLimiter, SyncConnection};

use common::RedisServer;

const DEADLINE: Duration = Duration::from_millis(100);
const MARGIN: Duration = Duration::from_millis(50);
/// Whole runs of the stopped-server test, each on its own server: one must keep every bound.
const RUNS: usize = 3;

/// Runs `f`, notes in `late` when it took more than the deadline plus the margin, and returns
/// its result.
fn within<T>(late: &mut Vec<String>, what: &str, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let out = f();
    let took = t.elapsed();
    eprintln!("{what}: {took:?}");
    if took > DEADLINE + MARGIN {
        late.push(format!(
            "{what}: {took:?}, over the {DEADLINE:?} deadline + {MARGIN:?}"
        ));
    }
    out
}

#[test]
fn a_stopped_server_costs_one_deadline_on_every_path() {
    let mut runs = Vec::new();
    for _ in 0..RUNS {
        let late = stopped_server_run();
        if late.is_empty() {
            return;
        }
        runs.push(late);
    }
    panic!("a path over its deadline in each of {RUNS} runs: {runs:#?}");
}

/// One run against a server it starts and stops: every other check asserts; the paths that
/// took longer than the deadline plus the margin are returned.
fn stopped_server_run() -> Vec<String> {
    let mut late = Vec::new();
    let server = RedisServer::start();
    // Fail closed, no cache, and Redis asked again at once after a failure (no reprobe
    // interval), so that every call below waits on the stopped server.
    let limiter = RedisLimiter::gcra(Rate::per_hour(1000).unwrap(), OnError::FailClosed)
        .deadline(DEADLINE)
        .reprobe_after(Duration::from_nanos(1))
        .local_cache(0)
        .build()
        .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut open = SyncConnection::new(server.client());
    let mut acon = rt
        .block_on(connection_manager(server.client(), DEADLINE))
        .unwrap();
    assert!(limiter
        .decide_blocking(&mut open, "k", 1)
        .unwrap()
        .is_allowed());
    assert!(rt
        .block_on(limiter.decide_async(&mut acon, "k", 1))
        .unwrap()
        .is_allowed());

    server.stop();
    let d = within(&mut late, "blocking, open connection", || {
        limiter.decide_blocking(&mut open, "k", 1).unwrap()
    });
    assert!(!d.is_allowed(), "fail closed");
    // The failure dropped the connection: this one reconnects (queued by the kernel, then the
    // handshake waits) and must still end within one deadline.
    assert!(!open.is_connected());
    let d = within(&mut late, "blocking, reconnect", || {
        limiter.decide_blocking(&mut open, "k", 1).unwrap()
    });
    assert!(!d.is_allowed());
    let mut fresh = SyncConnection::new(server.client());
    let e = within(
        &mut late,
        "decide_or_error_blocking, new connection",
        || {
            limiter
                .decide_or_error_blocking(&mut fresh, "k", 1)
                .unwrap_err()
        },
    );
    assert!(matches!(e, Error::Timeout(d) if d == DEADLINE), "{e}");
    let batch = within(&mut late, "blocking batch", || {
        limiter
            .decide_batch_blocking(&mut open, &[("a", 1), ("b", 2)])
            .unwrap()
    });
    assert!(batch.iter().all(|d| !d.is_allowed()));

    let d = within(&mut late, "async", || {
        rt.block_on(limiter.decide_async(&mut acon, "k", 1))
            .unwrap()
    });
    assert!(!d.is_allowed());
    let e = within(&mut late, "decide_or_error_async", || {
        rt.block_on(limiter.decide_or_error_async(&mut acon, "k", 1))
            .unwrap_err()
    });
    assert!(matches!(e, Error::Timeout(_)), "{e}");
    let batch = within(&mut late, "async batch", || {
        rt.block_on(limiter.decide_batch_async(&mut acon, &[("a", 1), ("b", 2)]))
            .unwrap()
    });
    assert!(batch.iter().all(|d| !d.is_allowed()));
    let s = limiter.stats();
    assert_eq!(s.errors, 9, "{s:?}");
    assert_eq!(s.fallbacks, 9, "{s:?}");

    // Back: the same connections decide again (the blocking one reconnects).
    server.resume();
    let start = Instant::now();
    let mut back = (false, false);
    while start.elapsed() < Duration::from_secs(10) && !(back.0 && back.1) {
        back.0 |= limiter.decide_or_error_blocking(&mut open, "k", 1).is_ok();
        back.1 |= rt
            .block_on(limiter.decide_or_error_async(&mut acon, "k", 1))
            .is_ok();
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(back, (true, true), "blocking, async back");
    late
}

/// The local denial cache answers without Redis: with the server killed, a key whose denial is
/// cached is still denied locally (no error, no policy decision) until its retry-after; only
/// then does the outage show, and the policy decides.
#[test]
fn cached_denials_answer_while_redis_is_down() {
    let mut server = RedisServer::start();
    let limiter = RedisLimiter::gcra(Rate::per_second(5).unwrap(), OnError::FailOpen)
        .burst(1)
        .deadline(DEADLINE)
        .build()
        .unwrap();
    let mut con = SyncConnection::new(server.client());
    assert!(limiter
        .decide_blocking(&mut con, "k", 1)
        .unwrap()
        .is_allowed());
    let denied = limiter.decide_blocking(&mut con, "k", 1).unwrap();
    let retry = denied.denial().unwrap().retry_after().unwrap();
    let start = Instant::now();
    server.kill();
    while start.elapsed() + Duration::from_millis(20) < retry {
        // Fail open would admit: the cache, not the policy, answers.
        assert!(!limiter
            .decide_blocking(&mut con, "k", 1)
            .unwrap()
            .is_allowed());
    }
    let s = limiter.stats();
    assert_eq!((s.errors, s.fallbacks), (0, 0), "{s:?}");
    assert!(s.local_denials > 0);
    std::thread::sleep(retry.saturating_sub(start.elapsed()) + Duration::from_millis(5));
    // Expired: Redis is asked, fails, and the policy (fail open) admits.
    assert!(limiter
        .decide_blocking(&mut con, "k", 1)
        .unwrap()
        .is_allowed());
    assert_eq!(limiter.stats().errors, 1);
}
