//! `Keyed` looked up by a borrowed form of its key (`&str` for `String`, `&[u8]` for
//! `Vec<u8>`): the same decisions as with the owned key, for every method that takes a key,
//! and on every per-key algorithm. (The owned key is built only where a new key's entry is
//! inserted: `insert_new` and a rate change's move, the two `to_owned` calls in `keyed/`.)

use std::time::Duration;

use hotlimit::{Clock, Gcra, Keyed, ManualClock, Rate, SlidingLog, SlidingWindow};

/// A GCRA per `String` key, `per_second` a second each, on `clock`.
fn per_string_gcra(per_second: u64, clock: &ManualClock) -> Keyed<String, Gcra, ManualClock> {
    Keyed::gcra(Rate::per_second(per_second).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap()
}

#[test]
fn borrowed_lookups_decide_as_owned_ones() {
    let clock = ManualClock::new();
    let by_str = per_string_gcra(3, &clock);
    let by_string = per_string_gcra(3, &clock);
    // Every method that takes a key, with &str and with &String, on two twin limiters.
    by_str
        .set_rate("vip".to_string(), Rate::per_second(10).unwrap())
        .unwrap();
    by_string
        .set_rate("vip".to_string(), Rate::per_second(10).unwrap())
        .unwrap();
    for step in 0..40u64 {
        let key = ["alice", "bob", "vip"][(step % 3) as usize];
        let owned = key.to_string();
        let n = (step % 4) as u32;
        assert_eq!(
            by_str.try_acquire_n(key, n),
            by_string.try_acquire_n(&owned, n)
        );
        assert_eq!(by_str.try_acquire(key), by_string.try_acquire(&owned));
        let now = clock.now();
        assert_eq!(
            by_str.try_acquire_at(key, now),
            by_string.try_acquire_at(&owned, now)
        );
        assert_eq!(
            by_str.try_acquire_n_at(key, 2, now),
            by_string.try_acquire_n_at(&owned, 2, now)
        );
        assert_eq!(by_str.remaining(key), by_string.remaining(&owned));
        assert_eq!(
            by_str.remaining_at(key, now),
            by_string.remaining_at(&owned, now)
        );
        assert_eq!(by_str.reset(key), by_string.reset(&owned));
        assert_eq!(by_str.reset_at(key, now), by_string.reset_at(&owned, now));
        assert_eq!(by_str.key_rate(key), by_string.key_rate(&owned));
        assert_eq!(by_str.key_burst(key), by_string.key_burst(&owned));
        if step == 20 {
            by_str.clear_rate("vip");
            by_string.clear_rate(&"vip".to_string());
        }
        clock.advance(Duration::from_millis(150));
    }
    assert_eq!(by_str.key_rate("vip"), Rate::per_second(3).unwrap());
    assert_eq!(by_str.len(), by_string.len());

    // The log and window per key, by &str and by &String, on one limiter each.
    let log: Keyed<String, SlidingLog, ManualClock> =
        Keyed::sliding_log(Rate::per_second(6).unwrap())
            .clock(clock.clone())
            .build()
            .unwrap();
    let window: Keyed<String, SlidingWindow, ManualClock> =
        Keyed::sliding_window(Rate::per_second(6).unwrap())
            .clock(clock.clone())
            .build()
            .unwrap();
    for _ in 0..3 {
        log.try_acquire("carol").unwrap();
        window.try_acquire("carol").unwrap();
        log.try_acquire(&"carol".to_string()).unwrap();
        window.try_acquire(&"carol".to_string()).unwrap();
    }
    assert_eq!((log.len(), window.len()), (1, 1));
    assert!(log.try_acquire("carol").is_err());
    assert!(window.try_acquire("carol").is_err());
    assert_eq!(log.remaining("carol"), 0);
    assert_eq!(window.remaining(&"carol".to_string()), 0);

    // Other borrowed forms: Vec<u8> by &[u8].
    let bytes: Keyed<Vec<u8>, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(1).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    assert!(bytes.try_acquire(&b"token"[..]).is_ok());
    assert!(bytes.try_acquire(&b"token".to_vec()).is_err());
    assert!(bytes.try_acquire(&b"other"[..]).is_ok());
}

/// The per-key waits take the borrowed form too.
#[test]
fn waits_take_a_borrowed_key() {
    let clock = ManualClock::new();
    let per_user = per_string_gcra(2, &clock);
    for _ in 0..3 {
        // The ManualClock as the sleeper: simulated time.
        per_user.acquire_blocking_with("alice", 1, &clock).unwrap();
    }
    // The burst of 2, then one 500 ms later.
    assert_eq!(clock.now(), 500_000_000);
    assert!(per_user
        .acquire_blocking_with("alice", 3, &clock)
        .unwrap_err()
        .is_never());
}
