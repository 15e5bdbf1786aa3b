//! Chaos: real `redis-server` processes that fail under 4 processes on one key, over its limit,
//! and an audit of every window of every grant against b + ⌊d/I⌋ plus the fault's documented
//! exposure (the README's "When Redis fails" table). Each "process" is a thread with its own
//! limiter and its own connections (separate OS processes are in `lease_processes.rs`; here
//! the faults need the test to act between the grants, and a thread shares nothing with the
//! others but the server). Grants are stamped on the system's real-time clock, the clock of
//! Redis's `TIME` on this machine: a leased grant with the time its check read (exact), a
//! per-decision grant when its reply came back (the audit widens every window by the run's
//! longest round trip).
//!
//! Each audit has a planted twin (the same grants with b + exposure + 1 more at one instant)
//! that it must catch. Assertions are bounds, never timings.

mod common;

use std::time::{Duration, Instant};

use hotlimit::{Clock, Rate};
use hotlimit_redis::{
    check_eviction, Durable, Error, LeasedGcra, OnError, RedisLimiter, SyncConnection,
};

use common::chaos::{excess, hammer, hammer_for, planted, Proxy, RealTime, RECOVERY};
use common::RedisServer;

/// 2,000 per second (I = 500 µs), burst 100 (τ = 50 ms; the lease queue Q = τ/2 = 50 permits).
const RATE: u64 = 2000;
const BURST: u64 = 100;
const I_NS: u64 = 1_000_000_000 / RATE;
const PROCESSES: usize = 4;
/// Each run: 1.2 s, the fault at 0.5 s.
const MILLIS: u64 = 1200;
const FAULT_AT: u64 = 500;

type Process = Box<dyn FnMut() -> Result<u64, Duration> + Send>;

fn leased(client: redis::Client, fenced: bool, durable: Option<Durable>) -> Process {
    let mut b = LeasedGcra::builder(Rate::per_second(RATE).unwrap(), OnError::FailClosed)
        .burst(BURST)
        .deadline(Duration::from_millis(50))
        .reprobe_after(Duration::from_millis(10))
        // Long leases (400 permits: 4 b) ask for reservations far past the burst: the queue's
        // cap must keep a loss at b whatever the lease sizes (uncapped, the issue measured 13 b).
        .lease_time(Duration::from_millis(200))
        .fenced(fenced)
        .clock(RealTime);
    if let Some(d) = durable {
        b = b.durable(d);
    }
    let limiter = b.build(client).unwrap();
    Box::new(move || {
        limiter
            .try_acquire_n_timed("hot", 1)
            .map_err(|d| d.retry_after().unwrap_or(Duration::MAX))
    })
}

/// A per-decision process; its grants are stamped when the reply came (the longest round
/// trip is kept in `rtt`).
fn per_decision(
    client: redis::Client,
    fenced: bool,
    rtt: &'static std::sync::atomic::AtomicU64,
) -> Process {
    let limiter = RedisLimiter::gcra(Rate::per_second(RATE).unwrap(), OnError::FailClosed)
        .burst(BURST)
        .deadline(Duration::from_millis(50))
        .reprobe_after(Duration::from_millis(10))
        .fenced(fenced)
        .build()
        .unwrap();
    let mut con = SyncConnection::new(client);
    Box::new(move || {
        let before = RealTime.now();
        let d = limiter.decide_blocking(&mut con, "hot", 1).unwrap();
        let after = RealTime.now();
        if d.is_allowed() {
            rtt.fetch_max(after - before, std::sync::atomic::Ordering::Relaxed);
            Ok(after)
        } else {
            Err(d
                .denial()
                .and_then(|x| x.retry_after())
                .unwrap_or(Duration::from_millis(1)))
        }
    })
}

/// Audits a run: the worst excess is at most `allowed`, the planted twin is caught, and the
/// key served grants again after the fault. Returns the excess (for the table).
fn audit(name: &str, times: &[u64], after_fault: usize, slack: u64, allowed: u64) -> u64 {
    let over = excess(times, I_NS, BURST, slack);
    println!(
        "chaos: {name}: {} grants ({after_fault} after the fault), worst window {over} over b + d/I (allowed {allowed})",
        times.len()
    );
    assert!(
        over <= allowed,
        "{name}: {over} over the bound, allowed {allowed}"
    );
    let twin = planted(times, allowed, BURST, slack, I_NS);
    assert!(
        excess(&twin, I_NS, BURST, slack) > allowed,
        "{name}: the planted twin passed the audit"
    );
    // Service goes on after the fault (durable grants need a replica, and a promoted one
    // has none: that run is exempt).
    assert!(
        after_fault > 0 || name.contains("durable"),
        "{name}: no grant after the fault"
    );
    over
}

fn leased_run(
    name: &str,
    server: &mut RedisServer,
    fenced: bool,
    allowed: u64,
    fault: impl FnOnce(&mut RedisServer),
) {
    let processes = (0..PROCESSES)
        .map(|_| leased(server.client(), fenced, None))
        .collect();
    let g = hammer(processes, MILLIS, FAULT_AT, || fault(server));
    println!(
        "chaos: {name}: {} grants in the 200 ms after the fault (the rate: 400)",
        g.within_after_fault(200)
    );
    audit(name, &g.times, g.after_fault, 0, allowed);
}

/// A restart without persistence: the key is lost with every lease's reservations. Leased, the
/// lost key restarts at now + Q: at most b over. Fenced: exact. Per decision: at most b
/// (fenced: exact).
#[test]
fn restart_without_persistence() {
    let mut server = RedisServer::start();
    leased_run("restart, leased", &mut server, false, BURST, |s| {
        s.restart()
    });
    let mut server = RedisServer::start();
    leased_run("restart, leased, fenced", &mut server, true, 0, |s| {
        s.restart()
    });
    for fenced in [false, true] {
        static RTT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let mut server = RedisServer::start();
        let processes = (0..PROCESSES)
            .map(|_| per_decision(server.client(), fenced, &RTT))
            .collect();
        RTT.store(0, std::sync::atomic::Ordering::Relaxed);
        let g = hammer(processes, MILLIS, FAULT_AT, || server.restart());
        let slack = RTT.load(std::sync::atomic::Ordering::Relaxed);
        println!(
            "chaos: per decision, fenced {fenced}: {} grants in the 200 ms after the fault (the rate: 400)",
            g.within_after_fault(200)
        );
        let name = if fenced {
            "restart, per decision, fenced"
        } else {
            "restart, per decision"
        };
        audit(
            name,
            &g.times,
            g.after_fault,
            slack,
            if fenced { 0 } else { BURST },
        );
    }
}

/// `FLUSHALL`: as a restart.
#[test]
fn flushall() {
    for (fenced, allowed) in [(false, BURST), (true, 0)] {
        let mut server = RedisServer::start();
        let name = if fenced {
            "FLUSHALL, leased, fenced"
        } else {
            "FLUSHALL, leased"
        };
        leased_run(name, &mut server, fenced, allowed, |s| {
            let _: () = redis::cmd("FLUSHALL").query(&mut s.con()).unwrap();
        });
    }
}

/// A paused server (SIGSTOP for 300 ms): no state is lost; leased permits stay valid, then
/// the policy (fail closed) decides: exact.
#[test]
fn paused_server() {
    let mut server = RedisServer::start();
    leased_run("paused 300 ms, leased", &mut server, false, 0, |s| {
        s.stop();
        std::thread::sleep(Duration::from_millis(300));
        s.resume();
    });
}

/// A network cut between the limiters and the server (a loopback proxy drops every connection
/// and refuses new ones for 300 ms): exact.
#[test]
fn network_cut() {
    let server = RedisServer::start();
    let proxy = Proxy::new(server.socket().to_path_buf());
    let processes = (0..PROCESSES)
        .map(|_| leased(proxy.client(), false, None))
        .collect();
    let g = hammer(processes, MILLIS, FAULT_AT, || {
        proxy.cut();
        std::thread::sleep(Duration::from_millis(300));
        proxy.heal();
    });
    audit("network cut 300 ms, leased", &g.times, g.after_fault, 0, 0);
}

/// Waits until `replica` follows its primary.
fn synced(replica: &RedisServer) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query(&mut replica.con())
            .unwrap();
        if info.contains("master_link_status:up") {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the replica did not sync within 10 s");
}

/// A primary killed and its replica promoted (`REPLICAOF NO ONE`), the replica stopped for the
/// last 100 ms before the kill (it lost the primary's last writes); the limiters reach the
/// server through a proxy that the failover points at the replica. Durable leases (`WAIT 1`):
/// a lease counts only once the replica has it: exact. Without: the replica's TAT is stale by
/// what it missed, at most b + Q/I (1.5 b) over.
#[test]
fn failover_to_a_lagging_replica() {
    for durable in [true, false] {
        let primary = RedisServer::launch_tcp(&[]);
        let port = primary.port.to_string();
        let replica = RedisServer::launch_tcp(&["--replicaof", "127.0.0.1", &port]);
        synced(&replica);
        let proxy = Proxy::new(primary.socket().to_path_buf());
        let wait = durable.then(|| Durable::new(1, Duration::from_millis(10)));
        let processes = (0..PROCESSES)
            .map(|_| leased(proxy.client(), false, wait))
            .collect();
        let mut primary = primary;
        // Durable grants cannot come back (the promoted replica has no replica): no wait.
        let recovery = if durable { Duration::ZERO } else { RECOVERY };
        let g = hammer_for(processes, MILLIS, FAULT_AT, recovery, || {
            replica.stop();
            std::thread::sleep(Duration::from_millis(100));
            primary.kill();
            replica.resume();
            let _: () = redis::cmd("REPLICAOF")
                .arg("NO")
                .arg("ONE")
                .query(&mut replica.con())
                .unwrap();
            proxy.retarget(replica.socket().to_path_buf());
        });
        let (name, allowed) = if durable {
            ("failover, leased, durable", 0)
        } else {
            ("failover, leased", BURST + BURST / 2)
        };
        audit(name, &g.times, g.after_fault, 0, allowed);
    }
}

/// Eviction under `maxmemory` (`volatile-ttl`: the limiter's key, with the shortest expiry, goes
/// first): `check_eviction` refuses the policy; each eviction of the key costs at most b. The
/// fault fills memory until the server reports the key evicted; on a loaded machine the leases
/// can re-create the key and the junk evict it again, so the evictions are counted from the
/// server's own `evicted` events (keyspace notifications) and the audit allows b for each
/// (issue 43's stress run saw 134 and 138 over one b: two evictions).
#[test]
fn eviction_under_maxmemory() {
    let server = RedisServer::start();
    let mut con = server.con();
    let used: String = redis::cmd("INFO").arg("memory").query(&mut con).unwrap();
    let used: u64 = used
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(used + 2_000_000)
        .query(&mut con)
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-policy")
        .arg("volatile-ttl")
        .query(&mut con)
        .unwrap();
    assert!(matches!(check_eviction(&mut con), Err(Error::Evicting(p)) if p == "volatile-ttl"));
    // The server reports every eviction: count the limiter's key's.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("notify-keyspace-events")
        .arg("Ee")
        .query(&mut con)
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // The key's evictions reported so far, for the fault to stop at the first: a key found
    // missing may only have expired (no lease refreshed it while a loaded machine kept every
    // thread off a core), which is no eviction (issue 43's stress run: 1 of 200).
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (subscribed_tx, subscribed) = std::sync::mpsc::channel();
    let counter = {
        let (stop, seen, mut sub) = (stop.clone(), seen.clone(), server.con());
        std::thread::spawn(move || {
            let mut sub = sub.as_pubsub();
            sub.subscribe("__keyevent@0__:evicted").unwrap();
            sub.set_read_timeout(Some(Duration::from_millis(50)))
                .unwrap();
            subscribed_tx.send(()).unwrap();
            let mut evictions = 0u64;
            // Relaxed: a stop flag; the join below orders the count.
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(msg) = sub.get_message() {
                    let key: String = msg.get_payload().unwrap_or_default();
                    evictions += u64::from(key == "hotlimit:hot");
                    // Relaxed: a count the fault polls; nothing else is published with it.
                    seen.store(evictions, std::sync::atomic::Ordering::Relaxed);
                }
            }
            // Events sent before the stop but not yet read.
            while let Ok(msg) = sub.get_message() {
                let key: String = msg.get_payload().unwrap_or_default();
                evictions += u64::from(key == "hotlimit:hot");
            }
            evictions
        })
    };
    subscribed.recv().unwrap();
    let processes = (0..PROCESSES)
        .map(|_| leased(server.client(), false, None))
        .collect();
    let g = hammer(processes, MILLIS, FAULT_AT, || {
        let mut con = server.con();
        let junk = vec![b'x'; 4096];
        // Junk until the server reports the key evicted: once memory is full every SET
        // evicts the key with the shortest expiry, the limiter's whenever a lease has made it
        // (a loaded machine may keep the leases off a core for a while: up to 20 s). The junk
        // keys' names cycle, so memory stays at the limit.
        let mut evicted = false;
        let filling = Instant::now();
        let mut i = 0u64;
        while !evicted && filling.elapsed() < Duration::from_secs(20) {
            let _: redis::RedisResult<()> = redis::cmd("SET")
                .arg(format!("junk:{}", i % 4000))
                .arg(&junk)
                .arg("EX")
                .arg(600)
                .query(&mut con);
            i += 1;
            // Relaxed: as above.
            evicted = seen.load(std::sync::atomic::Ordering::Relaxed) > 0;
        }
        assert!(evicted, "the limiter's key was not evicted in 20 s");
        // Room again: the junk goes, so that the key is not evicted any more.
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory")
            .arg(0)
            .query(&mut con)
            .unwrap();
    });
    // Relaxed: as above.
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let evictions = counter.join().unwrap();
    assert!(evictions >= 1, "the server reported no eviction of the key");
    println!(
        "chaos: eviction, leased: {evictions} eviction(s) of the key; {} grants in the 200 ms after the fault (the rate: 400)",
        g.within_after_fault(200)
    );
    audit(
        "eviction, leased",
        &g.times,
        g.after_fault,
        0,
        BURST * evictions,
    );
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-policy")
        .arg("noeviction")
        .query(&mut con)
        .unwrap();
    assert_eq!(
        check_eviction(&mut con).unwrap().as_deref(),
        Some("noeviction")
    );
}
