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
