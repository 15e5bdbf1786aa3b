mod common;
use std::time::Duration;
use hotlimit::{Clock, Rate};
use hotlimit_redis::{LeasedGcra, OnError, RedisLimiter, SyncConnection};
use common::chaos::RealTime;
use common::RedisServer;
#[test]
fn share() {
    let server = RedisServer::start();
    let end = RealTime.now() + 3_000_000_000;
    let mut hs = Vec::new();
    for p in 0..4 {
        let client = server.client();
        hs.push(std::thread::spawn(move || {
            let mut n = 0u64;
            if p < 2 {
                let l = LeasedGcra::builder(Rate::per_second(2000).unwrap(), OnError::FailClosed).build(client).unwrap();
                while RealTime.now() < end {
                    match l.try_acquire("k", 1) { Ok(()) => n += 1, Err(d) => std::thread::sleep(d.retry_after().unwrap().min(Duration::from_millis(2))) }
                }
            } else {
                let l = RedisLimiter::gcra(Rate::per_second(2000).unwrap(), OnError::FailClosed).build().unwrap();
                let mut con = SyncConnection::new(client);
                while RealTime.now() < end {
                    let d = l.decide_blocking(&mut con, "k", 1).unwrap();
                    if d.is_allowed() { n += 1 } else { std::thread::sleep(d.denial().unwrap().retry_after().unwrap().min(Duration::from_millis(2))) }
                }
            }
            n
        }));
    }
    let r: Vec<u64> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    println!("share: leased {:?} per-decision {:?}", &r[..2], &r[2..]);
}
