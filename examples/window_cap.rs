//! A global hard cap per window: "at most 20 calls in any 1-second window", never more, for
//! an upstream API that counts calls in a sliding window and bans a client that goes over.
//!
//! ```text
//! cargo run --release --example window_cap
//! ```
//!
//! `SlidingWindow` never admits more than `limit` in any window of length `period` (a `Gcra`
//! with the same rate could admit up to 2 × `limit` - 1 in one window: its burst, then the
//! rate). Here 4 threads try to call as often as they can for 2.5 seconds; the program then
//! counts the most calls that fell in any 1-second window.

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use hotlimit::{Limiter, Rate, SlidingWindow};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cap = Arc::new(SlidingWindow::new(Rate::per_second(20)?)?);
    let granted = Arc::new(Mutex::new(Vec::new())); // when each call was made
    let start = Instant::now();
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (cap, granted) = (Arc::clone(&cap), Arc::clone(&granted));
            thread::spawn(move || {
                while start.elapsed() < Duration::from_millis(2_500) {
                    match cap.try_acquire() {
                        Ok(()) => granted.lock().expect("poisoned").push(start.elapsed()),
                        // Sleep until a permit frees up (capped, to stop on time).
                        Err(denied) => thread::sleep(
                            denied
                                .retry_after()
                                .unwrap_or_default()
                                .min(Duration::from_millis(50)),
                        ),
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("a caller panicked");
    }
    let mut times = granted.lock().expect("poisoned").clone();
    times.sort();
    // The busiest 1-second window: for each call, how many calls fell in the second from it.
    let busiest = (0..times.len())
        .map(|i| times[i..].partition_point(|&t| t < times[i] + Duration::from_secs(1)))
        .max()
        .unwrap_or(0);
    println!("{} calls in 2.5 s from 4 threads", times.len());
    println!("busiest 1-second window: {busiest} calls (the cap is 20)");
    Ok(())
}
