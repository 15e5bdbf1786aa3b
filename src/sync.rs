//! The one place the crate's atomics come from.
//!
//! Under `--cfg hotlimit_loom` everything here is loom's, so the model checker sees every
//! atomic access (the limiters' state and [`ManualClock`](crate::ManualClock)'s time alike).
//! Otherwise atomics come from `portable-atomic`, which is `core::sync::atomic` on targets with
//! native 64-bit atomics and a fallback implementation elsewhere. No other file imports atomics.
//!
//! The cfg is crate-specific (not bare `loom`) because `RUSTFLAGS` reach every dependency and
//! some crates change behaviour under `cfg(loom)`.

#[cfg(hotlimit_loom)]
pub(crate) use loom::sync::{
    atomic::{AtomicU64, Ordering},
    Arc,
};

#[cfg(not(hotlimit_loom))]
pub(crate) use alloc::sync::Arc;
#[cfg(not(hotlimit_loom))]
pub(crate) use portable_atomic::{AtomicU64, Ordering};

/// Exponential backoff for failed CAS loops: crossbeam's normally.
#[cfg(not(hotlimit_loom))]
pub(crate) use crossbeam_utils::Backoff;

/// Under loom a failed CAS yields to the scheduler instead of spinning, so models that retry
/// stay finite and the scheduler explores the other thread's progress.
#[cfg(hotlimit_loom)]
#[derive(Debug)]
pub(crate) struct Backoff;

#[cfg(hotlimit_loom)]
impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff
    }

    pub(crate) fn spin(&self) {
        loom::hint::spin_loop();
    }
}

/// After a lost CAS: the exponential [`Backoff`] step, then `seed mod 16` more spin hints. Two
/// threads that lose to each other and back off by the same exponential steps can stay in
/// lockstep and keep colliding; on this project's 2-core test machine that mode held a whole
/// run in some builds and not others (Gcra at 2 threads: 28–35 Mops/s against 72–83 with this
/// jitter, in the same three builds). A per-call seed (the caller's clock reading, which
/// differs between threads) breaks the tie. Out of line, so that the uncontended path's code
/// is not touched. Under loom only the backoff step (loom's scheduler explores the orders).
#[cold]
#[inline(never)]
pub(crate) fn lost_cas(backoff: &Backoff, seed: u64) {
    backoff.spin();
    #[cfg(not(hotlimit_loom))]
    for _ in 0..(seed & 15) {
        core::hint::spin_loop();
    }
    #[cfg(hotlimit_loom)]
    let _ = seed;
}
