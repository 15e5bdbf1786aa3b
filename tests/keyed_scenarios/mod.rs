//! Scenarios every key type of `Keyed`'s inline table must pass, shared by the key types'
//! test files (`keyed_short_key.rs`, `keyed_string_keys.rs`): each takes the table and how to
//! ask for client `i`'s key, so that a file checks its own key type and lookup form.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use hotlimit::{Clock, Gcra, Keyed, ManualClock, Rate};

/// A table on a `ManualClock`.
pub(crate) type Table<K> = Keyed<K, Gcra, ManualClock>;

/// `rate` per second, burst `burst`, at most `capacity` keys, on `clock`.
pub(crate) fn table<K>(rate: u64, burst: u64, capacity: usize, clock: ManualClock) -> Table<K>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    Keyed::gcra(Rate::per_second(rate).unwrap())
        .burst(burst)
        .capacity(capacity)
        .clock(clock)
        .build()
        .unwrap()
}

/// Four threads create the same `n` keys at once on a frozen clock, each walking them twice
/// from a different place, on `keyed` (burst 2): each key is granted exactly twice in all
/// (one state per key, whoever created it), and the table holds `n` keys.
pub(crate) fn racing_creators_share_one_state_per_key<K>(
    keyed: Table<K>,
    n: u32,
    acquire: fn(&Table<K>, u32) -> bool,
) where
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    let keyed = Arc::new(keyed);
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let keyed = Arc::clone(&keyed);
            thread::spawn(move || {
                let mut granted = vec![0u32; n as usize];
                for round in 0..2 {
                    for j in 0..n {
                        let i = (j + t * (n / 4) + round * 7) % n;
                        if acquire(&keyed, i) {
                            granted[i as usize] += 1;
                        }
                    }
                }
                granted
            })
        })
        .collect();
    let mut total = vec![0u32; n as usize];
    for h in handles {
        for (t, g) in total.iter_mut().zip(h.join().unwrap()) {
            *t += g;
        }
    }
    assert!(total.iter().all(|&g| g == 2), "{:?}", &total[..20]);
    assert_eq!(keyed.len(), n as usize);
}

/// At the capacity, idle keys make room for new ones, and a key evicted and created again
/// never gets more than its rate allows: 30 clients, each asking every 30 ms, share `keyed`
/// (capacity 20, 10 per second, burst 1, on `clock`), so no client's grants come closer than
/// 100 ms, and the table keeps admitting.
pub(crate) fn eviction_at_the_capacity_loses_no_admission<K>(
    keyed: Table<K>,
    clock: &ManualClock,
    acquire: fn(&Table<K>, u32) -> bool,
) where
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    let mut granted: HashMap<u32, Vec<u64>> = HashMap::new();
    for step in 0..3_000u32 {
        clock.advance(Duration::from_millis(1));
        let client = step % 30;
        if acquire(&keyed, client) {
            granted.entry(client).or_default().push(clock.now());
        }
        assert!(keyed.len() <= 20);
    }
    let total: usize = granted.values().map(Vec::len).sum();
    assert!(
        total > 100,
        "only {total} grants: the table stopped admitting"
    );
    for (client, times) in granted {
        for w in times.windows(2) {
            assert!(
                w[1] - w[0] >= 100_000_000,
                "client {client} granted at {} and {}",
                w[0],
                w[1]
            );
        }
    }
}
