//! hotlimit-redis's lease word under loom: the real protocol, compiled from its own file
//! (`hotlimit-redis/src/lease/word.rs`, which imports its atomics from `crate::sync` only:
//! here that is loom's). Grants racing grants, a refill installing the next lease while grants
//! move to it, and a close (for a return) racing grants: no permit is granted twice, none is
//! both granted and returned, a waiting lease is used only once installed. The planted
//! `racy_take` (a load, a check and a store instead of the CAS) must fail the same models.
#![cfg(hotlimit_loom)]

mod common;

use common::real_and_planted;
use loom::sync::Arc;
use loom::thread;

/// What `word.rs` imports: loom's atomics, and a backoff that yields to loom's scheduler.
mod sync {
    pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};

    #[derive(Debug, Default)]
    pub(crate) struct Backoff;

    impl Backoff {
        pub(crate) fn new() -> Self {
            Backoff
        }

        pub(crate) fn spin(&self) {
            loom::thread::yield_now();
        }
    }
}

#[path = "../../hotlimit-redis/src/lease/word.rs"]
#[allow(dead_code, unreachable_pub)]
mod word;

use word::{Closed, KeyLease, Lease, Take};

/// Permits 10 ns apart; every test takes at `NOW`, when every slot has come and no deadline
/// has passed.
const INTERVAL: u64 = 10;
const NOW: u64 = 100;

/// A lease of `permits` permits, all usable at `NOW`.
fn lease(permits: u64, start: u64) -> Lease {
    Lease {
        first_slot: 0,
        first_deadline: 1_000_000,
        permits,
        start,
    }
}

/// A key with `permits` leased (installed and moved to by one take-free switch: the first take
/// moves the word to it).
fn key_with(permits: u64) -> KeyLease {
    let key = KeyLease::default();
    {
        let guard = key
            .begin_refill()
            .expect("a new key has no refill under way");
        key.install(&guard, lease(permits, 0));
    }
    key
}

/// One take of 1: the real CAS, or the planted load-then-store.
fn take(key: &KeyLease, planted: bool) -> bool {
    let taken = if planted {
        word::planted::racy_take(key, 1, NOW, INTERVAL)
    } else {
        key.take(1, NOW, INTERVAL)
    };
    matches!(taken, Take::Granted { .. })
}

/// A key whose word is on a lease of `permits` + 1 permits, one of them taken: `permits` left
/// (the move onto an installed lease is the real protocol in both the real and planted models).
fn key_left(permits: u64) -> KeyLease {
    let key = key_with(permits + 1);
    assert!(matches!(key.take(1, NOW, INTERVAL), Take::Granted { .. }));
    key
}

real_and_planted! { "over-granted";
    /// Two threads and this one each take 1 of 2 permits left: at most 2 granted.
    three_takers_share_two_permits, planted_takers_share_two_permits => |planted: bool| {
        loom::model(move || {
            let key = Arc::new(key_left(2));
            let handles: Vec<_> = (0..2)
                .map(|_| {
                    let key = key.clone();
                    thread::spawn(move || take(&key, planted))
                })
                .collect();
            let mine = take(&key, planted);
            let granted = handles.into_iter().map(|h| h.join().unwrap()).filter(|&g| g).count()
                + usize::from(mine);
            assert!(granted <= 2, "over-granted: {granted} grants of 2 permits");
            assert!(granted == 2 || planted, "a permit was lost: {granted} of 2");
        });
    };

    /// A close (for a return) races two takes on 2 permits left: every permit is either
    /// granted or counted unused by the close, never both.
    close_races_takes, planted_close_races_takes => |planted: bool| {
        loom::model(move || {
            let key = Arc::new(key_left(2));
            let taker = {
                let key = key.clone();
                thread::spawn(move || u64::from(take(&key, planted)) + u64::from(take(&key, planted)))
            };
            let closed = key.close(false);
            let granted = 1 + taker.join().unwrap();
            let spent = match closed {
                Closed::Done { current: Some((_, spent)), waiting: None } => spent,
                Closed::Done { current: None, waiting: None } => 3,
                other => panic!("unexpected close: {other:?}"),
            };
            assert!(granted <= spent, "over-granted: {granted} granted, the close counted {spent} spent");
            assert!(granted == spent || planted, "a permit was lost: {granted} granted, {spent} spent");
        });
    };
}

/// A refill installs the next lease while two takes run on 1 permit left: the takes move to
/// the new lease only once it is installed, and each of the 2 permits is granted at most once;
/// whatever is left is still there for a take afterwards.
#[test]
fn refill_installs_while_takes_move_on() {
    loom::model(|| {
        let key = Arc::new(key_left(1));
        let taker = {
            let key = key.clone();
            thread::spawn(move || {
                [key.take(1, NOW, INTERVAL), key.take(1, NOW, INTERVAL)]
                    .iter()
                    .filter(|t| matches!(t, Take::Granted { .. }))
                    .count()
            })
        };
        // The refill: no lease waits yet (the first was installed and not replaced).
        let installed = match key.begin_refill() {
            Some(guard) => {
                key.install(&guard, lease(1, 10));
                true
            }
            None => false,
        };
        let granted = taker.join().unwrap();
        let rest = [key.take(1, NOW, INTERVAL), key.take(1, NOW, INTERVAL)]
            .iter()
            .filter(|t| matches!(t, Take::Granted { .. }))
            .count();
        let permits = 1 + usize::from(installed);
        assert_eq!(
            granted + rest,
            permits,
            "taker {granted}, after {rest}, of {permits}"
        );
    });
}
