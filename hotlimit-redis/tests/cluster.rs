//! A 3-primary Redis Cluster on loopback ports, created with `redis-cli --cluster create`:
//! keys in every slot work (a limiter's several windows in one slot), and a batch of
//! hash-tagged keys goes to one node.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use hotlimit::Rate;
use hotlimit_redis::{cluster_connection, OnError, RedisLimiter, RedisLimiterBuilder};

use common::RedisServer;

#[test]
fn three_primaries() {
    let nodes: Vec<RedisServer> = (0..3).map(|_| RedisServer::cluster_node()).collect();
    let addrs: Vec<String> = nodes
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port))
        .collect();
    let out = Command::new("redis-cli")
        .args(["--cluster", "create"])
        .args(&addrs)
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .output()
        .expect("redis-cli (installed with redis-server) is needed");
    assert!(
        out.status.success(),
        "cluster create: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Every node must see the whole cluster before clients use it.
    let start = Instant::now();
    loop {
        let ok = nodes.iter().all(|n| {
            let info: String = redis::cmd("CLUSTER")
                .arg("INFO")
                .query(&mut n.con())
                .unwrap_or_default();
            info.contains("cluster_state:ok")
        });
        if ok {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "cluster never became ok"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let urls: Vec<String> = addrs.iter().map(|a| format!("redis://{a}/")).collect();
        let mut con = cluster_connection(urls, Duration::from_secs(2))
            .await
            .unwrap();
        type Make = fn(Rate, OnError) -> RedisLimiterBuilder;
        let kinds: [(Make, &str); 2] = [
            (RedisLimiter::gcra, "g:"),
            (RedisLimiter::sliding_log, "l:"),
        ];
        for (make, prefix) in kinds {
            let limiter = make(Rate::per_hour(3).unwrap(), OnError::FailClosed)
                .local_cache(0)
                .prefix(prefix)
                .build()
                .unwrap();
            // 60 keys spread over the slots of all three nodes: 3 grants each, then refusals.
            for k in 0..60 {
                let key = format!("user-{k}");
                for i in 0..4 {
                    let d = limiter
                        .decide_or_error_async(&mut con, &key, 1)
                        .await
                        .unwrap();
                    assert_eq!(d.is_allowed(), i < 3, "{key} request {i}");
                }
            }
            // A batch on a cluster: one hash tag, one slot, one node.
            let batch: Vec<String> = (0..10).map(|i| format!("{{tenant-7}}:{i}")).collect();
            let requests: Vec<(&str, u32)> = batch.iter().map(|k| (k.as_str(), 2)).collect();
            let d = limiter
                .decide_batch_async(&mut con, &requests)
                .await
                .unwrap();
            assert!(d.iter().all(|d| d.is_allowed() && d.remaining() == 1));
            assert_eq!(limiter.stats().errors, 0);
        }

        // Several windows: one key per window, all with one hash tag, so a script never
        // crosses slots (a CROSSSLOT error would fail `decide_or_error_async`), whatever the
        // key: plain, tagged, empty, or with braces that are no tag.
        let multi = RedisLimiter::multi_window(OnError::FailClosed)
            .exact(Rate::per_hour(3).unwrap())
            .window(Rate::per_hour(5).unwrap())
            .local_cache(0)
            .prefix("m:")
            .build()
            .unwrap();
        let odd = ["", "{}x", "a{b", "}{", "{t9}:u"].map(String::from);
        for key in (0..60).map(|k| format!("user-{k}")).chain(odd) {
            for i in 0..4 {
                let d = multi
                    .decide_or_error_async(&mut con, &key, 1)
                    .await
                    .unwrap();
                assert_eq!(
                    d.is_allowed(),
                    i < 3,
                    "several windows: {key:?} request {i}"
                );
            }
        }
        assert_eq!(multi.stats().errors, 0);

        // One node stopped (SIGSTOP): a decision on its slots waits at most the limiter's deadline
        // (plus 50 ms for scheduling on a loaded machine), though the cluster connection's own
        // response timeout is 2 s; the other nodes' keys are decided as before.
        let deadline = Duration::from_millis(100);
        nodes[0].stop();
        let limiter = RedisLimiter::gcra(Rate::per_hour(3).unwrap(), OnError::FailClosed)
            .local_cache(0)
            .prefix("stopped:")
            .deadline(deadline)
            .reprobe_after(Duration::from_nanos(1))
            .build()
            .unwrap();
        let mut timeouts = 0;
        for k in 0..12 {
            let t = Instant::now();
            let d = limiter
                .decide_or_error_async(&mut con, &format!("user-{k}"), 1)
                .await;
            let took = t.elapsed();
            assert!(
                took <= deadline + Duration::from_millis(50),
                "key {k}: {took:?}"
            );
            match d {
                Ok(d) => assert!(d.is_allowed()),
                Err(hotlimit_redis::Error::Timeout(_)) => timeouts += 1,
                // Once the other nodes count the stopped one as failed, they answer
                // CLUSTERDOWN at once: not a wait.
                Err(e) => eprintln!("key {k}: {e}"),
            }
        }
        assert!(timeouts > 0, "no key of the stopped node's slots among 12");
        nodes[0].resume();
    });
    // The keys landed on every node.
    for n in &nodes {
        let size: u64 = redis::cmd("DBSIZE").query(&mut n.con()).unwrap();
        assert!(size > 0, "node {} holds no key", n.port);
    }
}
