//! Races shared by the loom test files: each spawns the same threads and makes the same calls
//! in the same order as the tests that used to write them out, so loom explores the same
//! interleavings; the tests keep their own assertions on what comes back.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use std::time::Duration;

use hotlimit::{Clock, Limiter, ManualClock};
use loom::sync::Arc;
use loom::thread;

/// Three threads each call `try_acquire` once; returns how many were granted.
pub fn granted_of_three<L: Limiter + Send + Sync + 'static>(limiter: &Arc<L>) -> usize {
    let handles: Vec<_> = (0..3)
        .map(|_| {
            let l = limiter.clone();
            thread::spawn(move || l.try_acquire().is_ok())
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|&ok| ok)
        .count()
}

/// A spawned thread and this one each call `try_acquire_n(2)`; returns (mine, theirs).
pub fn two_weighted_by_two<L: Limiter + Send + Sync + 'static>(limiter: &Arc<L>) -> (bool, bool) {
    two_racing(limiter, |l| l.try_acquire_n(2).is_ok())
}

/// A spawned thread and this one each make `call` once; returns (mine, theirs).
pub fn two_racing<L: Send + Sync + 'static>(
    limiter: &Arc<L>,
    call: fn(&L) -> bool,
) -> (bool, bool) {
    let l2 = limiter.clone();
    let t = thread::spawn(move || call(&l2));
    let mine = call(limiter);
    let theirs = t.join().unwrap();
    (mine, theirs)
}

/// `loom::model` over a fresh `ManualClock` at 0 and the limiter `build` makes on it, shared
/// in an `Arc`: `check` runs the race and asserts on what comes back.
pub fn model_on_a_clock<L: 'static>(
    build: impl Fn(&ManualClock) -> L + Send + Sync + 'static,
    check: impl Fn(&Arc<L>, &ManualClock) + Send + Sync + 'static,
) {
    loom::model(move || {
        let clock = ManualClock::new();
        let limiter = Arc::new(build(&clock));
        check(&limiter, &clock);
    });
}

/// Tests in pairs: `model(false)` on the real protocol must pass, `model(true)` on the planted
/// twin must panic with `expected`. Each row: `real_name, planted_name => model;`.
#[allow(unused_macros)] // Only the files with planted twins use it.
macro_rules! real_and_planted {
    ($expected:literal; $($(#[$doc:meta])* $real:ident, $planted:ident => $model:expr;)*) => {$(
        $(#[$doc])*
        #[test]
        fn $real() {
            ($model)(false);
        }

        #[test]
        #[should_panic(expected = $expected)]
        fn $planted() {
            ($model)(true);
        }
    )*};
}
#[allow(unused_imports)]
pub(crate) use real_and_planted;

/// Two workers make 2 and 1 calls of `try_at(limiter, now)`, reading the clock before each,
/// while this thread advances the clock by 10 ns; returns the `now` of every grant, sorted.
pub fn grants_while_the_clock_advances<L: Send + Sync + 'static>(
    limiter: &Arc<L>,
    clock: &ManualClock,
    try_at: fn(&L, u64) -> bool,
) -> Vec<u64> {
    let workers: Vec<_> = [2, 1]
        .into_iter()
        .map(|tries| {
            let (l, clock) = (limiter.clone(), clock.clone());
            thread::spawn(move || {
                let mut grants = Vec::new();
                for _ in 0..tries {
                    let now = clock.now();
                    if try_at(&l, now) {
                        grants.push(now);
                    }
                }
                grants
            })
        })
        .collect();
    clock.advance(Duration::from_nanos(10));
    let mut grants: Vec<u64> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    grants.sort_unstable();
    grants
}
