//! Unit tests of the shards: give-backs, the end of time, `wrap`.

use super::*;

fn shard(burst: u64, interval: u64) -> Shard {
    Shard::new(ShardParams {
        interval,
        tolerance: burst * interval,
        burst,
    })
}

/// The guide's lemma: give-backs succeed only in LIFO order, and a successful one restores
/// exactly the state before its take; a give-back that is not the latest write fails and
/// leaves its permits taken (stranded) rather than erasing a later grant.
#[test]
fn give_backs_are_lifo_and_exact() {
    let s = shard(5, 10);
    let (a0, a1, a) = s.take_up_to(2, 100).unwrap();
    let (b0, b1, b) = s.take_up_to(9, 100).unwrap();
    assert_eq!((a, b), (2, 3), "the second take gets what is left");
    assert_eq!((a0, a1, b0, b1), (0, 120, 120, 150));
    assert!(
        !s.give_back(a0, a1),
        "A is not the latest take: B's grant must survive"
    );
    assert_eq!(s.available(s.tat.load(Ordering::Relaxed), 100), 0);
    assert!(s.give_back(b0, b1));
    assert_eq!(s.available(s.tat.load(Ordering::Relaxed), 100), 3);
    assert!(s.give_back(a0, a1), "now A is the latest");
    assert_eq!(s.tat.load(Ordering::Relaxed), 0, "exactly as before A");
    // A permanent grant on top strands a pending give-back for good.
    let (c0, c1, _) = s.take_up_to(1, 100).unwrap();
    s.try_take(1, 100).unwrap();
    assert!(!s.give_back(c0, c1));
    assert_eq!(s.available(s.tat.load(Ordering::Relaxed), 100), 3);
}

#[test]
fn available_and_released_at_the_end_of_time() {
    let s = shard(4, 10);
    s.tat.store(u64::MAX - 15, Ordering::Relaxed);
    // Released: the whole burst once `now` passes the state; available: what still fits.
    assert_eq!(s.released(s.tat.load(Ordering::Relaxed), u64::MAX), 4);
    assert_eq!(s.available(s.tat.load(Ordering::Relaxed), u64::MAX - 15), 1);
    assert_eq!(s.available(s.tat.load(Ordering::Relaxed), u64::MAX), 0);
    assert!(s.try_take(1, u64::MAX - 5).is_err());
    assert!(s.try_take(1, u64::MAX - 15).is_ok());
}

#[test]
fn wrap_is_modulo_below_twice() {
    for s in 1..5 {
        for i in 0..2 * s {
            assert_eq!(wrap(i, s), i % s);
        }
    }
}
