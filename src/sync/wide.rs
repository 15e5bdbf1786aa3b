//! The 16-byte atomic on x86-64 with `std`: `cmpxchg16b` and a `vmovdqa` load inline in the
//! caller, where portable-atomic calls them through a function pointer chosen at run time.
//!
//! # Why
//!
//! Without `-C target-feature=+cmpxchg16b` (a generic x86-64 build: what `cargo build` gives
//! everyone who does not set `RUSTFLAGS`), portable-atomic cannot know at compile time that the
//! CPU has `cmpxchg16b`, so every 16-byte load and CAS is an indirect call to an out-of-line
//! function: 34 of the 159 instructions of an `IntKeyed` hit at 100,000 keys (callgrind,
//! `keyed_compare -- prof intkeyed 100000 shuffled`; 144 with this file), 16 of `GcraPair`'s 89
//! (73). Here the CPU is asked once per process (std's `is_x86_feature_detected!`, cached in
//! [`KIND`]), and each operation is one well-predicted compare with that answer and the
//! instruction itself, inline.
//!
//! # The operations and their memory orderings
//!
//! - `load`: `vmovdqa`, used only where the CPU has AVX (and `cmpxchg16b`): a 16-byte aligned
//!   AVX load is atomic there (Intel's and AMD's manuals; what portable-atomic, LLVM and Boost
//!   rely on). On x86-64 every load is an acquire load, and every write to a 16-byte atomic
//!   here is a locked instruction (a full barrier: the type has no plain store), so a plain
//!   load is also a SeqCst load: what LLVM itself emits for a SeqCst 8-byte load. The
//!   ordering argument is therefore ignored: every load here is SeqCst.
//! - `compare_exchange` (strong and weak): `lock cmpxchg16b`, a full barrier: SeqCst whatever
//!   the orderings passed; it never fails spuriously.
//!
//! The `asm!` blocks leave out `nomem` and `readonly`, so the compiler treats each as reading
//! and writing any memory: it moves no other access across them, as for an atomic operation.
//!
//! Where the CPU lacks `cmpxchg16b` or AVX, every operation goes to portable-atomic (whose own
//! choice there is the `cmpxchg16b` load, or its lock-based fallback), never a mix on one
//! process: the answer in [`KIND`] never changes once set.

use core::arch::asm;
use core::sync::atomic::{AtomicU8, Ordering as HintOrdering};

use super::Ordering;

/// What the CPU offers, asked once per process: 0 not asked yet, [`INLINE`] or [`PORTABLE`].
static KIND: AtomicU8 = AtomicU8::new(0);
/// `cmpxchg16b` and AVX: the inline operations.
const INLINE: u8 = 1;
/// Either is missing: portable-atomic's operations.
const PORTABLE: u8 = 2;

/// Whether this process uses the inline operations, as far as it knows: `false` also before
/// the CPU was asked (the callers' cold paths ask it, [`inline_after_asking`]). One compare
/// with a constant in memory, on the hot paths.
#[inline(always)]
fn inline_known() -> bool {
    // Relaxed: the answer is the same whoever computes it and whenever; nothing is published
    // through it (a thread that sees 0 asks the CPU itself).
    KIND.load(HintOrdering::Relaxed) == INLINE
}

/// Whether this process uses the inline operations, asking the CPU if nobody has yet.
#[cold]
#[inline(never)]
fn inline_after_asking() -> bool {
    // Relaxed: as in `inline_known`.
    match KIND.load(HintOrdering::Relaxed) {
        INLINE => true,
        PORTABLE => false,
        _ => {
            let ok =
                std::is_x86_feature_detected!("cmpxchg16b") && std::is_x86_feature_detected!("avx");
            // Relaxed: as in `inline_known`.
            KIND.store(if ok { INLINE } else { PORTABLE }, HintOrdering::Relaxed);
            ok
        }
    }
}

/// A 16-byte atomic integer: portable-atomic's (its storage, alignment and fallback) with the
/// inline fast path above. The operations the crate uses, with `core`'s signatures.
#[repr(transparent)]
pub(crate) struct AtomicU128(portable_atomic::AtomicU128);

impl AtomicU128 {
    pub(crate) const fn new(v: u128) -> Self {
        AtomicU128(portable_atomic::AtomicU128::new(v))
    }

    /// The value (SeqCst whatever `order` names; see the module docs).
    #[inline(always)]
    pub(crate) fn load(&self, order: Ordering) -> u128 {
        if inline_known() {
            // SAFETY: the pointer is the atomic's own (valid, 16-byte aligned: portable-atomic's
            // type is `align(16)`), every access to it is atomic, and the CPU has AVX and
            // `cmpxchg16b` (`inline_known`), so this load is atomic.
            #[allow(unsafe_code)]
            unsafe {
                vmovdqa(self.0.as_ptr())
            }
        } else {
            self.load_slow(order)
        }
    }

    /// [`load`](AtomicU128::load) before the CPU was asked, or on a CPU without the inline
    /// operations. One such function per operation, each out of line: folding the asking into
    /// the hot test (`inline_known() || ask()`), or the portable calls into one cold generic
    /// helper, cost `GcraPair` 81 instructions a grant instead of 73 (`callgrind.sh`).
    #[cold]
    #[inline(never)]
    fn load_slow(&self, order: Ordering) -> u128 {
        if inline_after_asking() {
            self.load(order)
        } else {
            self.0.load(order)
        }
    }

    /// `current` replaced by `new` if the value is `current`; the value seen either way (SeqCst
    /// whatever the orderings name; see the module docs). Never fails spuriously.
    #[inline(always)]
    pub(crate) fn compare_exchange(
        &self,
        current: u128,
        new: u128,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u128, u128> {
        if inline_known() {
            // SAFETY: as in `load`; the CPU has `cmpxchg16b` (`inline_known`).
            #[allow(unsafe_code)]
            let (seen, ok) = unsafe { cmpxchg16b(self.0.as_ptr(), current, new) };
            if ok {
                Ok(seen)
            } else {
                Err(seen)
            }
        } else {
            self.compare_exchange_slow(current, new, success, failure)
        }
    }

    /// [`compare_exchange`](AtomicU128::compare_exchange) before the CPU was asked, or on a
    /// CPU without the inline operations.
    #[cold]
    #[inline(never)]
    fn compare_exchange_slow(
        &self,
        current: u128,
        new: u128,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u128, u128> {
        if inline_after_asking() {
            self.compare_exchange(current, new, success, failure)
        } else {
            self.0.compare_exchange(current, new, success, failure)
        }
    }

    /// As [`compare_exchange`](AtomicU128::compare_exchange) (whose CAS is the strong one:
    /// `cmpxchg16b`, or portable-atomic's, which on x86-64 never fails spuriously either).
    #[inline(always)]
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

impl core::fmt::Debug for AtomicU128 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(&self.load(Ordering::SeqCst), f)
    }
}

/// The 16 bytes at `src`, in one `vmovdqa`.
///
/// # Safety
///
/// `src` is valid for reads and 16-byte aligned, no non-atomic write races with the load, and
/// the CPU has AVX.
#[allow(unsafe_code)]
#[inline(always)]
unsafe fn vmovdqa(src: *const u128) -> u128 {
    let out: core::arch::x86_64::__m128i;
    // SAFETY: the caller's contract; `vmovdqa` faults only on an unaligned or invalid address.
    unsafe {
        asm!(
            "vmovdqa {out}, xmmword ptr [{src}]",
            src = in(reg) src,
            out = out(xmm_reg) out,
            options(nostack, preserves_flags),
        );
        core::mem::transmute::<core::arch::x86_64::__m128i, u128>(out)
    }
}

/// `lock cmpxchg16b` at `dst`: `(the value seen, whether it was `current` and so is now
/// `new`)`.
///
/// # Safety
///
/// `dst` is valid for reads and writes and 16-byte aligned, no non-atomic access races with
/// the CAS, and the CPU has `cmpxchg16b`.
#[allow(unsafe_code)]
#[inline(always)]
unsafe fn cmpxchg16b(dst: *mut u128, current: u128, new: u128) -> (u128, bool) {
    let (seen_lo, seen_hi): (u64, u64);
    let ok: u8;
    // SAFETY: the caller's contract. `rbx` cannot be an operand (LLVM may use it), so the new
    // value's low half goes in `r8` and is swapped into `rbx` around the instruction, `rbx`
    // restored after, as portable-atomic does. Every operand names its register: one the
    // allocator chose could be `rbx` itself, which the swap overwrites.
    unsafe {
        asm!(
            "xchg r8, rbx",
            "lock cmpxchg16b xmmword ptr [rsi]",
            "sete cl",
            "mov rbx, r8",
            in("rsi") dst,
            inout("r8") (new as u64) => _,
            in("rcx") (new >> 64) as u64,
            lateout("cl") ok,
            inout("rax") current as u64 => seen_lo,
            inout("rdx") (current >> 64) as u64 => seen_hi,
            options(nostack),
        );
    }
    (u128::from(seen_lo) | (u128::from(seen_hi) << 64), ok != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inline operations agree with their definitions (on a CPU that has them; elsewhere
    /// the portable ones run, and agree too).
    #[test]
    fn load_and_cas_do_what_they_say() {
        let has =
            std::is_x86_feature_detected!("cmpxchg16b") && std::is_x86_feature_detected!("avx");
        assert_eq!(inline_after_asking(), has);
        assert_eq!(inline_known(), has);
        let a = AtomicU128::new(u128::MAX - 5);
        assert_eq!(a.load(Ordering::SeqCst), u128::MAX - 5);
        let lo_hi = (7u128 << 64) | 9;
        assert_eq!(
            a.compare_exchange(1, lo_hi, Ordering::SeqCst, Ordering::SeqCst),
            Err(u128::MAX - 5)
        );
        assert_eq!(
            a.compare_exchange(u128::MAX - 5, lo_hi, Ordering::SeqCst, Ordering::SeqCst),
            Ok(u128::MAX - 5)
        );
        assert_eq!(a.load(Ordering::SeqCst), lo_hi);
        // Only the high half differs: the CAS compares all 16 bytes.
        assert_eq!(
            a.compare_exchange_weak(9, 0, Ordering::SeqCst, Ordering::SeqCst),
            Err(lo_hi)
        );
        assert_eq!(
            a.compare_exchange_weak(lo_hi, 0, Ordering::SeqCst, Ordering::SeqCst),
            Ok(lo_hi)
        );
        assert_eq!(a.load(Ordering::SeqCst), 0);
        assert_eq!(format!("{a:?}"), "0");
    }

    /// Concurrent increments by CAS lose none, and no load sees a torn value (both halves
    /// always hold the same count).
    #[test]
    fn concurrent_cas_loses_nothing_and_loads_never_tear() {
        const THREADS: u64 = 4;
        const EACH: u64 = 20_000;
        let a = AtomicU128::new(0);
        let both = |n: u64| (u128::from(n) << 64) | u128::from(n);
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for _ in 0..EACH {
                        let mut v = a.load(Ordering::SeqCst);
                        loop {
                            assert_eq!((v >> 64) as u64, v as u64, "torn read {v:#x}");
                            match a.compare_exchange_weak(
                                v,
                                both(v as u64 + 1),
                                Ordering::SeqCst,
                                Ordering::SeqCst,
                            ) {
                                Ok(_) => break,
                                Err(seen) => v = seen,
                            }
                        }
                    }
                });
            }
        });
        assert_eq!(a.load(Ordering::SeqCst), both(THREADS * EACH));
    }
}
