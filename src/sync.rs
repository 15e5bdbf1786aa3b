//! The one place the crate's atomics come from.
//!
//! Under `--cfg hotlimit_loom` everything here is loom's, so the model checker sees every
//! atomic access (the limiters' state and [`ManualClock`](crate::ManualClock)'s time alike).
//! Otherwise atomics come from `portable-atomic`, which is `core::sync::atomic` on targets with
//! native 64-bit atomics and a fallback implementation elsewhere, but for the 16-byte atomic
//! on x86-64 with `std` (`sync/wide.rs`: the instructions inline). No file outside this module
//! imports atomics.
//!
//! The cfg is crate-specific (not bare `loom`) because `RUSTFLAGS` reach every dependency and
//! some crates change behaviour under `cfg(loom)`.

#[cfg(hotlimit_loom)]
pub(crate) use loom::sync::{
    atomic::{fence, AtomicU64, Ordering},
    Arc,
};

#[cfg(not(hotlimit_loom))]
pub(crate) use alloc::sync::Arc;
/// Fences, for `Keyed`'s creation protocol and `GcraMulti`'s seqlock reads of its snapshots.
#[cfg(not(hotlimit_loom))]
pub(crate) use portable_atomic::fence;
#[cfg(not(hotlimit_loom))]
pub(crate) use portable_atomic::{AtomicU64, Ordering};

/// A 16-byte atomic (`IntKeyed`'s slots, `GcraPair`'s two TATs). On x86-64 with `std`: ours
/// (`sync/wide.rs`), `cmpxchg16b` and a `vmovdqa` load inline where the CPU has both (asked once
/// per process), portable-atomic's operations otherwise. Elsewhere portable-atomic's, native on
/// aarch64 (also powerpc64 from POWER8, s390x) and on x86-64 without `std` (`cmpxchg16b` chosen at
/// run time, through a function pointer). On a target or CPU without a 16-byte CAS portable-atomic
/// falls back to a lock (its `fallback` feature), so there `IntKeyed` is not lock-free: its docs
/// say so. Every other limiter uses 64-bit atomics only. Available without `std` too (`GcraPair`).
#[cfg(all(
    not(hotlimit_loom),
    not(all(
        target_arch = "x86_64",
        target_pointer_width = "64",
        feature = "std",
        not(miri)
    ))
))]
pub(crate) use portable_atomic::AtomicU128;
// Not on x32 (x86-64 with 32-bit pointers): the CAS addresses its operand through `rsi`.
#[cfg(all(
    not(hotlimit_loom),
    target_arch = "x86_64",
    target_pointer_width = "64",
    feature = "std",
    not(miri)
))]
mod wide;
#[cfg(all(
    not(hotlimit_loom),
    target_arch = "x86_64",
    target_pointer_width = "64",
    feature = "std",
    not(miri)
))]
pub(crate) use wide::AtomicU128;

/// A hint that the cache line holding `p` is about to be read (`prefetcht0` on x86-64, nothing
/// elsewhere, under loom or under Miri). The keyed tables issue it for the key's line before
/// they read the clock, so that the line's miss overlaps the clock read instead of following
/// it. A prefetch never faults and changes no memory semantics: the protocol's loads and
/// CASes come after it, exactly as without it.
#[cfg(any(feature = "std", hotlimit_loom))]
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(all(target_arch = "x86_64", not(hotlimit_loom), not(miri)))]
    // SAFETY: SSE, the one feature `prefetcht0` needs, is part of x86-64's baseline; the
    // instruction reads nothing architecturally and never faults, whatever the address.
    #[allow(unsafe_code)]
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(all(target_arch = "x86_64", not(hotlimit_loom), not(miri))))]
    let _ = p;
}

/// An atomic that loom never models: only for hints outside every limiter's state (the
/// adaptive sleeper's learned oversleep, a `static`; where `Keyed`'s segments were last seen),
/// which must work outside a loom model and whose races cannot affect a guarantee.
#[cfg(any(feature = "std", hotlimit_loom))]
pub(crate) use portable_atomic::AtomicU64 as HintU64;

/// Loom has no 128-bit atomic, so under `--cfg hotlimit_loom` a slot is a loom `Mutex<u128>`.
/// This exists only in the model checker's build (the cfg is never set for a real build), so
/// no admission path of the crate takes a lock; it stands in for one indivisible atomic.
///
/// What the emulation checks: every interleaving of whole 16-byte loads and CASes (loom
/// schedules at each lock), i.e. the slot protocol under sequential consistency. What it does
/// not check: the orderings passed in (every operation behaves as `SeqCst`, whatever it
/// names), and a torn 16-byte read (the real atomic never tears either). `IntKeyed` uses
/// `SeqCst` for every slot access, which is exactly what the emulation models; `GcraPair` uses
/// `Relaxed` on its one word, which is enough for a single location's coherence order (every
/// access to one atomic, whatever its ordering, is totally ordered), and publishes nothing; the words
/// around the slots (`len`, the floor, the clock) are real loom atomics with their orderings.
#[cfg(hotlimit_loom)]
#[derive(Debug)]
pub(crate) struct AtomicU128(loom::sync::Mutex<u128>);

#[cfg(hotlimit_loom)]
impl AtomicU128 {
    pub(crate) fn new(v: u128) -> Self {
        AtomicU128(loom::sync::Mutex::new(v))
    }

    pub(crate) fn load(&self, _: Ordering) -> u128 {
        *self.0.lock().unwrap()
    }

    pub(crate) fn compare_exchange(
        &self,
        current: u128,
        new: u128,
        _: Ordering,
        _: Ordering,
    ) -> Result<u128, u128> {
        let mut v = self.0.lock().unwrap();
        if *v == current {
            *v = new;
            Ok(current)
        } else {
            Err(*v)
        }
    }

    /// Never fails spuriously (loom's own weak CAS does not either).
    pub(crate) fn compare_exchange_weak(
        &self,
        current: u128,
        new: u128,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u128, u128> {
        self.compare_exchange(current, new, success, failure)
    }
}

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

/// Takes the turn on `turns`, a counter that is odd while someone holds it (rate changes take
/// turns this way, off every admission path): a CAS from even to odd, retried after the
/// holder's [`end_turn`].
pub(crate) fn take_turn(turns: &AtomicU64) {
    let backoff = Backoff::new();
    // Relaxed: a first look; the CAS below decides.
    let mut turn = turns.load(Ordering::Relaxed);
    loop {
        if turn & 1 == 0 {
            // Acquire: the previous holder's stores (made before its Release end of turn) are
            // ours to read.
            match turns.compare_exchange_weak(turn, turn + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(current) => turn = current,
            }
        } else {
            // Relaxed: waiting for the holder's end of turn.
            turn = turns.load(Ordering::Relaxed);
        }
        backoff.spin();
    }
}

/// Ends a turn taken with [`take_turn`] (the counter becomes even again).
pub(crate) fn end_turn(turns: &AtomicU64) {
    // Release: the next holder, and readers between two equal even values, read our stores
    // after it.
    turns.fetch_add(1, Ordering::Release);
}
