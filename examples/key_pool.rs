//! An outbound API client that rotates API keys with a `KeyPool`.
//!
//! The (simulated) upstream API allows each key at most 2 calls per 500 ms. The client has
//! three keys and 15 calls to make: it asks the pool for a key before each call, prints which
//! key it used, and when every key is spent it sleeps for exactly the `retry_after` the pool
//! reports. No network: the "API" checks each key's budget itself (on the same clock readings)
//! and would reject a call over budget, so the run also shows that the pool never exceeds it.
//!
//! ```text
//! cargo run --example key_pool
//! ```

use std::collections::HashMap;
use std::thread;
use std::time::Duration;

use hotlimit::{Clock, KeyPool, QuantaClock, Rate};

const USES_PER_KEY: usize = 2;
const PERIOD: Duration = Duration::from_millis(500);

/// Stands in for the remote service: it enforces the per-key quota itself, counting each call
/// at the time (ns) it is made.
struct FakeApi {
    started: u64,
    calls: HashMap<&'static str, Vec<u64>>,
}

impl FakeApi {
    fn call(&mut self, key: &'static str, request: u32, now: u64) -> Result<String, String> {
        let period = PERIOD.as_nanos() as u64;
        let recent = self.calls.entry(key).or_default();
        recent.retain(|&t| now.saturating_sub(t) < period);
        if recent.len() >= USES_PER_KEY {
            return Err(format!("429 Too Many Requests for {key}"));
        }
        recent.push(now);
        thread::sleep(Duration::from_millis(3)); // the round trip
        Ok(format!(
            "200 OK: result #{request} at {:>4} ms",
            (now - self.started) / 1_000_000
        ))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let keys = vec!["key-alpha", "key-bravo", "key-charlie"];
    let pool = KeyPool::builder(keys, Rate::new(USES_PER_KEY as u64, PERIOD)?)
        .clock(QuantaClock::new())
        .build()?;
    let clock = pool.clock();
    let mut api = FakeApi {
        started: clock.now(),
        calls: HashMap::new(),
    };
    println!(
        "3 keys, each allowed {USES_PER_KEY} calls per {} ms; 15 calls to make",
        PERIOD.as_millis()
    );
    let mut request = 1;
    while request <= 15 {
        // One clock reading for both the pool's decision and the call it allows.
        let now = clock.now();
        match pool.try_next_key_at(now) {
            Ok(&key) => {
                let reply = api.call(key, request, now)?;
                println!("call {request:>2} with {key:<11} -> {reply}");
                request += 1;
            }
            Err(denied) => {
                // Every key has used its budget: wait until the first one is free again.
                let wait = denied
                    .retry_after()
                    .ok_or("the pool can never serve a call")?;
                println!("   all keys spent; waiting {wait:?}");
                thread::sleep(wait);
            }
        }
    }
    println!(
        "done in {} ms, no call rejected by the API",
        (clock.now() - api.started) / 1_000_000
    );
    Ok(())
}
