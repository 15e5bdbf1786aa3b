//! `LeasedGcra` against a real `redis-server` each test starts: leased grants keep the GCRA
//! bound (also beside per-decision grants on the same key), leased permits stay valid while
//! Redis is away and the policy decides once they are spent, idle leases go back, and the
//! `Decide` impl reports the truthful quota. Many processes at once: `tests/lease_processes.rs`.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hotlimit::{Decide, Rate};
use hotlimit_redis::{connection_manager, LeasedGcra, OnError, RedisLimiter, SyncConnection};

use common::RedisServer;

/// Grant times (ns on `clock`) of every thread, for the audit.
type Log = Arc<Mutex<Vec<u64>>>;

/// The first window holding more than b + ⌊d/I⌋ grants (times in ns), if any.
fn over(times: &mut [u64], interval_ns: u64, burst: u64) -> Option<String> {
    times.sort_unstable();
    // For each grant i, the furthest j with count j − i + 1 > b + ⌊(t_j − t_i)/I⌋ is found by
    // a scan; O(n × b) for grants that keep the bound.
    for i in 0..times.len() {
        for j in i..times.len() {
            let count = (j - i + 1) as u64;
            let bound = burst + (times[j] - times[i]) / interval_ns;
            if count > bound {
                return Some(format!(
                    "{count} grants in [{}, {}] ns, bound {bound}",
                    times[i], times[j]
                ));
            }
            if count + burst < (j - i) as u64 {
                break;
            }
        }
    }
    None
}

/// `threads` threads calling `acquire` for `run`; each grant is logged at the time its check
/// read (`try_acquire_n_timed`, on the limiter's clock, one origin for all threads).
fn hammer(
    threads: usize,
    run: Duration,
    acquire: impl Fn() -> Option<u64> + Send + Sync + 'static,
) -> Vec<u64> {
    let log: Log = Arc::default();
    let acquire = Arc::new(acquire);
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (log, acquire) = (log.clone(), acquire.clone());
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                while start.elapsed() < run {
                    mine.extend(acquire());
                }
                log.lock().unwrap().extend(mine);
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    Arc::try_unwrap(log).unwrap().into_inner().unwrap()
}

/// 4 threads on one key over its limit (2,000/s, burst 20) until they hold 300 grants, a
/// per-decision limiter on the same key at the same time: the leased grants keep b + ⌊d/I⌋ in
/// every window (each at the time its check read), all grants together stay within the run's
/// bound, and the per-decision caller gets its share.
#[test]
fn leased_and_per_decision_grants_keep_the_bound_together() {
    let server = RedisServer::start();
    let rate = Rate::per_second(2000).unwrap();
    let leased = LeasedGcra::builder(rate, OnError::FailClosed)
        .burst(20)
        .build(server.client())
        .unwrap();
    // A deadline of seconds, not the default 100 ms: this test is about the bound and the
    // share, and at load 30 (a stress run beside a build) a round trip once took longer, so
    // `decide_or_error_blocking` returned `Timeout` and the unwrap below panicked.
    let per_decision = RedisLimiter::gcra(rate, OnError::FailClosed)
        .burst(20)
        .local_cache(0)
        .deadline(Duration::from_secs(5))
        .build()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let other = {
        let (stop, client) = (stop.clone(), server.client());
        std::thread::spawn(move || {
            let mut con = SyncConnection::new(client);
            let mut granted = 0;
            while !stop.load(Ordering::Relaxed) {
                if per_decision
                    .decide_or_error_blocking(&mut con, "k", 1)
                    .unwrap()
                    .is_allowed()
                {
                    granted += 1;
                }
                std::thread::sleep(Duration::from_micros(300));
            }
            granted
        })
    };
    // Rounds of 200 ms until the leased threads hold 300 grants (a loaded machine gives them
    // fewer a round; at most 10 s): the checks below then always judge a real stream.
    let mut times = Vec::new();
    while times.len() < 300 && start.elapsed() < Duration::from_secs(10) {
        let l = leased.clone();
        times.extend(hammer(4, Duration::from_millis(200), move || {
            l.try_acquire_n_timed("k", 1).ok()
        }));
    }
    stop.store(true, Ordering::Relaxed);
    let by_script: u64 = other.join().unwrap();
    let elapsed = start.elapsed();
    let total = times.len() as u64 + by_script;
    // The whole run, d from before the other thread started to after it stopped: at most
    // b + ⌊d/I⌋ (+ 2: the server's clock reads whole µs).
    let bound = 20 + (elapsed.as_nanos() / 500_000) as u64 + 2;
    assert!(total <= bound, "{total} grants in {elapsed:?}");
    let mut leased_times = times;
    assert_eq!(over(&mut leased_times, 500_000, 20), None);
    println!(
        "lease: {} leased, {by_script} per decision in {elapsed:?}; {:?}",
        leased_times.len(),
        leased.stats()
    );
    // The per-decision caller, refused by the leases' queue, marks the key waiting and then
    // meets the leases at the bucket's edge: not starved (measured 239–362 of 720–777; before
    // the mark, it got what the leases left): at least 1/40, as in `fairness.rs`. Round trips
    // per grant are not a bound here: on a key shared with a per-decision caller faster than
    // the rate, leases get what it leaves, about one permit each (their efficiency is
    // `fairness.rs`'s 4 × 2 at 50,000/s).
    assert!(
        by_script * 40 >= total,
        "{by_script} of {total} per decision"
    );
    // The rounds stop at 300 (exactly 300 is a pass: a debug stress run once stopped there).
    assert!(
        leased_times.len() >= 300,
        "{} leased grants in 10 s",
        leased_times.len()
    );
}

/// Leased permits stay valid while Redis is away; once they are spent, the policy decides
/// (fail closed: denied; fail open: admitted), counted as fallbacks.
#[test]
fn leased_permits_outlive_redis_then_the_policy_decides() {
    for (policy, admits) in [(OnError::FailClosed, false), (OnError::FailOpen, true)] {
        let mut server = RedisServer::start();
        // 10/s, burst 2,000; leases of up to 50 (the second and later, sized by demand). A
        // leased permit m may be granted from its slot, (m + 1)·I − τ after its lease's start
        // S (here long past), to its deadline S + m·I: the permits held at the kill (the
        // unspent half of the second lease, the third lease queued behind it) are valid for
        // 2.5 to 10 s more, so a thread that a loaded machine keeps off a core between the
        // kill and its next call still finds them. (At 1,000/s they were valid for 25 to 100
        // ms, and at load 50, issue 43's stress run beside a build, 4 runs in 200 found
        // none.) A deadline of seconds: the refills before the kill are not what is tested,
        // and a refused connect after it fails at once.
        let limiter = LeasedGcra::builder(Rate::per_second(10).unwrap(), policy)
            .burst(2000)
            .max_lease(50)
            .lease_time(Duration::from_secs(10))
            .deadline(Duration::from_secs(5))
            .build(server.client())
            .unwrap();
        let start = Instant::now();
        while limiter.stats().leases < 3 && start.elapsed() < Duration::from_secs(10) {
            let _ = limiter.try_acquire_n("k", 1);
        }
        let before = limiter.stats();
        assert_eq!((before.leases, before.errors), (3, 0), "{before:?}");
        let leased = before.leased;
        server.kill();
        // Until the leases are spent: grants from them, then the policy.
        let mut granted_after = 0u64;
        let start = Instant::now();
        while limiter.stats().fallbacks == 0 && start.elapsed() < Duration::from_secs(5) {
            granted_after += u64::from(limiter.try_acquire_n("k", 1).is_ok());
        }
        let s = limiter.stats();
        assert!(s.fallbacks > 0 && s.errors > 0, "{s:?}");
        assert!(
            granted_after > 0 && granted_after <= leased,
            "{granted_after} of {leased}, {s:?}"
        );
        let by_policy = (0..50)
            .filter(|_| limiter.try_acquire_n("k", 1).is_ok())
            .count();
        assert_eq!(by_policy, if admits { 50 } else { 0 }, "{s:?}");
    }
}

/// A lease nobody else charged after goes back by the cancel rule: the key's capacity is
/// whole again for a per-decision limiter on it.
#[test]
fn idle_leases_go_back() {
    let server = RedisServer::start();
    let rate = Rate::per_hour(100).unwrap();
    // Deadlines of seconds (both limiters): a round trip that a loaded machine delays past
    // the default 100 ms would fail closed (a refused grant, a return not made, `remaining`
    // 0), and that is not what is tested (issue 43's stress run at load 50: once).
    let leased = LeasedGcra::builder(rate, OnError::FailClosed)
        .max_lease(40)
        .lease_time(Duration::from_secs(3600))
        .deadline(Duration::from_secs(5))
        .build(server.client())
        .unwrap();
    for _ in 0..3 {
        leased.try_acquire_n("k", 1).unwrap();
    }
    let s = leased.stats();
    assert!(s.leased > 3, "{s:?}");
    // The grants apart from the round trips and the permits leased: 3 granted, the rest held
    // or passed over.
    assert_eq!((s.granted, s.round_trips), (3, s.leases), "{s:?}");
    assert_eq!(s.leased, s.granted + s.held + s.skipped, "{s:?}");
    // The first sweep notes the word, the second finds it unchanged: idle.
    assert_eq!(leased.return_idle(), 0);
    let back = leased.return_idle();
    // All but the 3 granted and the first lease's permit whose deadline passed during its
    // round trip (skipped).
    assert_eq!(
        back,
        s.leased - 3 - s.skipped,
        "{s:?} then {:?}",
        leased.stats()
    );
    assert_eq!(
        leased.stats().keys,
        0,
        "an idle key with no handle is dropped"
    );
    let per_decision = RedisLimiter::gcra(rate, OnError::FailClosed)
        .local_cache(0)
        .deadline(Duration::from_secs(5))
        .build()
        .unwrap();
    let mut con = SyncConnection::new(server.client());
    let d = per_decision
        .decide_or_error_blocking(&mut con, "k", 0)
        .unwrap();
    // A key a lease finds missing starts at now + Q (Q = τ/2: 50 permits here), not now:
    // the price of a lost key costing at most b (see `lua/lease.lua`). So all but those 50,
    // the 3 granted and the skipped.
    assert_eq!(
        d.remaining(),
        100 - 50 - 3 - s.skipped,
        "all but the queue's 50, the 3 granted and the skipped"
    );
}

/// As a `Decide`: the quota is b per b·I, `remaining` never above it.
#[test]
fn decide_reports_the_truthful_quota() {
    let server = RedisServer::start();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Deadlines of seconds: a refill delayed past the default 100 ms fails closed, and at
        // load 44 every one of the 40 calls once did (0 granted).
        let con = connection_manager(server.client(), Duration::from_secs(5))
            .await
            .unwrap();
        let policy = LeasedGcra::builder(Rate::per_second(100).unwrap(), OnError::FailClosed)
            .burst(10)
            .deadline(Duration::from_secs(5))
            .build(server.client())
            .unwrap()
            .with_connection(con);
        assert_eq!(policy.quota().limit(), 10);
        assert_eq!(policy.quota().window(), Duration::from_millis(100));
        let mut allowed = 0;
        let start = Instant::now();
        for _ in 0..40 {
            let d = policy.decide("ip", 1).await.unwrap();
            assert!(d.remaining() <= 10);
            allowed += u64::from(d.is_allowed());
        }
        // The GCRA's bound over the loop: b + what the rate adds in its time, + 1 for the
        // instant the first grant's interval began before `start`. (A fixed 12 assumed the
        // 40 calls took under 30 ms; at load 50 they once took longer and 13 were granted.)
        let bound = 10 + start.elapsed().as_millis() as u64 / 10 + 1;
        assert!(
            allowed >= 1 && allowed <= bound,
            "{allowed} of at most {bound}"
        );
        let big = policy.decide("ip", 11).await.unwrap();
        assert!(big.denial().unwrap().is_never());
    });
}

/// One call of `script` on `keys` with `args` (integers), its reply.
fn eval(con: &mut redis::Connection, script: &str, keys: &[&[u8]], args: &[u64]) -> Vec<i64> {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(script).arg(keys.len());
    for key in keys {
        cmd.arg(*key);
    }
    cmd.arg(args).query(con).unwrap()
}

/// The waiting mark, step by step on the scripts themselves with the test hook's `now` (I =
/// 1 ms, τ = 100 ms, Q = 50 ms): leases queue up to τ + Q; a per-decision refusal that finds
/// the queue (TAT past now + τ) marks the key; while the mark lives a lease stops at now + τ,
/// and the per-decision caller gets the next permit at the bucket's edge; without the mark the
/// leases queue again. A refusal by the bucket alone (no queue) marks nothing.
#[test]
fn a_refusal_by_the_queue_stops_the_leases_at_the_bucket() {
    let server = RedisServer::start();
    let mut raw = server.con();
    let lease = concat!(
        include_str!("../src/lua/now.lua"),
        include_str!("../src/lua/lease.lua")
    );
    let gcra = concat!(
        include_str!("../src/lua/now.lua"),
        include_str!("../src/lua/gcra.lua")
    );
    let (key, marker): (&[u8], &[u8]) = (b"hotlimit:k", b"{hotlimit:k}\xffwaiting");
    let t0 = 1_000_000_000_000u64;
    let (i, tau, q) = (1_000u64, 100_000u64, 50_000u64);
    let ms = |m: u64| t0 + m * 1_000;
    // ARGV: I, τ, k, now, no fence, Q, fewest 1, a missing key starts at now + Q, marker given.
    let lease_at = |raw: &mut redis::Connection, k: u64, now: u64| {
        eval(raw, lease, &[key, marker], &[i, tau, k, now, 0, q, 1, q, 1])
    };
    // ARGV: I, τ, n = 1, now, no fence, the mark's lifetime 200 ms.
    let decide_at = |raw: &mut redis::Connection, key: &[u8], marker: &[u8], now: u64| {
        eval(raw, gcra, &[key, marker], &[i, tau, 1, now, 0, 200])[0] == 1
    };
    let exists = |raw: &mut redis::Connection, k: &[u8]| -> bool {
        redis::cmd("EXISTS").arg(k).query::<i64>(raw).unwrap() == 1
    };
    let tat =
        |raw: &mut redis::Connection| -> u64 { redis::cmd("GET").arg(key).query(raw).unwrap() };

    // From idle (a missing key starts at now + Q): the queue's whole room, 100 permits, to
    // TAT = now + τ + Q; the reply's cap is τ + Q.
    let r = lease_at(&mut raw, 200, t0);
    assert_eq!((r[4], r[5]), (100, (tau + q) as i64));
    assert_eq!(tat(&mut raw), t0 + tau + q);

    // 10 ms on, the TAT is 140 ms ahead, past the bucket: refused by the queue, and marked.
    assert!(!exists(&mut raw, marker));
    assert!(!decide_at(&mut raw, key, marker, ms(10)));
    assert!(exists(&mut raw, marker));
    let pttl: i64 = redis::cmd("PTTL").arg(marker).query(&mut raw).unwrap();
    assert!(0 < pttl && pttl <= 200, "{pttl}");

    // While marked, a lease at 60 ms stops at now + τ: 10 permits, not the 60 the queue had.
    let r = lease_at(&mut raw, 200, ms(60));
    assert_eq!((r[4], r[5]), (10, tau as i64));
    assert_eq!(tat(&mut raw), ms(60) + tau);
    // No room for a lease of one more until I has passed; then the per-decision caller, at the
    // bucket's edge (TAT = now + τ − I), is granted.
    let r = lease_at(&mut raw, 200, ms(60));
    assert_eq!((r[4], r[5]), (0, tau as i64));
    assert!(!decide_at(&mut raw, key, marker, ms(60)));
    assert!(decide_at(&mut raw, key, marker, ms(61)));

    // Unmarked, leases queue past the bucket again: 51 permits at 62 ms, to now + τ + Q.
    redis::cmd("DEL").arg(marker).query::<()>(&mut raw).unwrap();
    let r = lease_at(&mut raw, 200, ms(62));
    assert_eq!((r[4], r[5]), (51, (tau + q) as i64));
    assert_eq!(tat(&mut raw), ms(62) + tau + q);

    // Per decision alone: a full bucket (TAT = now + τ) refuses without a mark.
    let (other, other_marker): (&[u8], &[u8]) = (b"hotlimit:p", b"{hotlimit:p}\xffwaiting");
    for _ in 0..100 {
        assert!(decide_at(&mut raw, other, other_marker, t0));
    }
    assert!(!decide_at(&mut raw, other, other_marker, t0));
    assert!(!exists(&mut raw, other_marker));
}

/// The crate passes the mark on both sides: a `RedisLimiter` refused by a queue past the bucket
/// marks the key (named `{key}` + 0xFF + `waiting`, in the key's cluster slot), and a
/// `LeasedGcra` that finds the mark takes no lease past the bucket; a second one, after the
/// mark is gone, leases from the queue. (6 a minute, burst 10: I = 10 s, τ = 100 s, Q = 50
/// s: a second's stall between a step and the script it sets up changes nothing. At 10 a
/// second a stall of 100 ms, at load 44, let the second lease take 2 permits, not 1.)
#[test]
fn both_limiters_pass_the_waiting_mark() {
    let server = RedisServer::start();
    let mut raw = server.con();
    let rate = Rate::per_minute(6).unwrap();
    let (key, marker): (&[u8], &[u8]) = (b"hotlimit:m", b"{hotlimit:m}\xffwaiting");
    let server_now = |raw: &mut redis::Connection| -> u64 {
        let t: (u64, u64) = redis::cmd("TIME").query(raw).unwrap();
        t.0 * 1_000_000 + t.1
    };

    // Per decision, on the test hook's clock: a TAT 140 s ahead (the queue) is refused and marked.
    let clock = hotlimit_redis::TestClock::default();
    let per_decision = RedisLimiter::gcra(rate, OnError::FailClosed)
        .burst(10)
        .local_cache(0)
        .deadline(Duration::from_secs(5))
        .test_clock(clock.clone())
        .build()
        .unwrap();
    let t0 = 1_000_000_000_000u64;
    clock.set_micros(t0);
    redis::cmd("SET")
        .arg(key)
        .arg(t0 + 140_000_000)
        .query::<()>(&mut raw)
        .unwrap();
    let mut con = SyncConnection::new(server.client());
    assert!(!per_decision
        .decide_or_error_blocking(&mut con, "m", 1)
        .unwrap()
        .is_allowed());
    assert_eq!(
        redis::cmd("EXISTS")
            .arg(marker)
            .query::<i64>(&mut raw)
            .unwrap(),
        1
    );

    // Leased, on the server's clock: a TAT 140 s ahead leaves the queue 10 s, one permit,
    // but the mark stops leases at τ: refused (for 50 s more, far above a round trip).
    let leased = |client| {
        LeasedGcra::builder(rate, OnError::FailClosed)
            .burst(10)
            .deadline(Duration::from_secs(5))
            .build(client)
            .unwrap()
    };
    let now = server_now(&mut raw);
    redis::cmd("SET")
        .arg(key)
        .arg(now + 140_000_000)
        .query::<()>(&mut raw)
        .unwrap();
    redis::cmd("SET")
        .arg(marker)
        .arg(1)
        .arg("PX")
        .arg(60_000)
        .query::<()>(&mut raw)
        .unwrap();
    let first = leased(server.client());
    let denied = first.try_acquire_n("m", 1).unwrap_err();
    assert!(denied.retry_after().is_some());
    assert_eq!(first.stats().leases, 0);
    // Without the mark the same state leases its one queued permit (held until its slot,
    // about 50 s on).
    redis::cmd("DEL").arg(marker).query::<()>(&mut raw).unwrap();
    let second = leased(server.client());
    let _ = second.try_acquire_n("m", 1);
    let s = second.stats();
    assert_eq!((s.leases, s.leased), (1, 1), "{s:?}");
}
