//! Per-user and per-IP limits in a server: one limit per key, in one shared structure.
//!
//! ```text
//! cargo run --release --example per_key
//! ```
//!
//! - `Keyed<K, Gcra>` takes any hashable key (here user names). It keeps at most `capacity`
//!   keys and evicts idle ones to make room, so a flood of new keys cannot grow it.
//! - `IntKeyed<K>` is the faster table for integer keys and IPv4 addresses: one 16-byte slot
//!   per key, allocated at build.

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::thread;

use hotlimit::{Gcra, IntKeyed, Keyed, Rate};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Each user: 5 requests per second, in bursts of up to 5; at most 10,000 users tracked.
    let per_user: Keyed<String, Gcra> =
        Keyed::gcra(Rate::per_second(5)?).capacity(10_000).build()?;

    // alice sends 8 requests at once, bob 2: alice's last 3 are refused, bob is untouched.
    for (user, requests) in [("alice", 8), ("bob", 2)] {
        let key = user.to_owned();
        for i in 1..=requests {
            match per_user.try_acquire(&key) {
                Ok(()) => println!("{user} request {i}: 200"),
                // What a server sends back: 429 with Retry-After.
                Err(denied) => println!(
                    "{user} request {i}: 429, retry after {:?}",
                    denied.retry_after().unwrap_or_default()
                ),
            }
        }
    }

    // Per client IP, shared by 4 server threads: 100 requests per second per address.
    let per_ip: Arc<IntKeyed<Ipv4Addr>> = Arc::new(
        IntKeyed::builder(Rate::per_second(100)?)
            .capacity(100_000)
            .build()?,
    );
    let flooder = Ipv4Addr::new(203, 0, 113, 7);
    let handles: Vec<_> = (0..4u8)
        .map(|t| {
            let per_ip = Arc::clone(&per_ip);
            thread::spawn(move || {
                // Each thread serves 1,000 requests from the flooder and one request from
                // each of 250 other clients.
                let mut flood_ok = 0;
                for _ in 0..1_000 {
                    flood_ok += u32::from(per_ip.try_acquire(flooder).is_ok());
                }
                let others_ok = (0..250u8)
                    .filter(|&i| per_ip.try_acquire(Ipv4Addr::new(10, t, 0, i)).is_ok())
                    .count();
                (flood_ok, others_ok)
            })
        })
        .collect();
    let (mut flood_ok, mut others_ok) = (0, 0);
    for h in handles {
        let (f, o) = h.join().expect("a server thread panicked");
        flood_ok += f;
        others_ok += o;
    }
    println!("{flooder}: {flood_ok} of 4000 requests served (its burst of 100, plus what accrued)");
    println!("1,000 other clients: {others_ok} of 1000 served");
    Ok(())
}
