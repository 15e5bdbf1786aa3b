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
    let l2 = limiter.clone();
    let t = thread::spawn(move || l2.try_acquire_n(2).is_ok());
    let mine = limiter.try_acquire_n(2).is_ok();
    let theirs = t.join().unwrap();
    (mine, theirs)
}

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
