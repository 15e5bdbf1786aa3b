//! `prefetchw`: ask for a cache line in the state this core may write, before reading the word
//! on it that a CAS will replace.
//!
//! # Why
//!
//! A limiter's hit path loads its state word, decides, then CASes it. Where another core wrote
//! the line last (a key's slot served by another thread a moment ago, a shared limiter's word),
//! the load fetches the line shared, and the CAS then asks for it again, exclusive: two
//! transfers between cores where one would do. `prefetchw` makes the first request the
//! exclusive one, so the load and the CAS both find the line here. It is a hint: it never
//! faults, changes no value and orders nothing; a line it fetched for nothing is one the other
//! cores must ask back (a denial, which writes nothing, reads a line that could have stayed
//! shared).
//!
//! The CPU is asked once per process (`CPUID.80000001H:ECX.PRFCHW`: AMD since K8, Intel
//! since Broadwell), the answer cached in [`PRFCHW`]; elsewhere the hint is skipped.

use core::arch::asm;
use core::sync::atomic::{AtomicU8, Ordering};
#[cfg(hotlimit_rfo = "predicted")]
use std::cell::Cell;

#[cfg(hotlimit_rfo = "predicted")]
std::thread_local! {
    /// Whether this thread's last keyed hit was a grant (`"predicted"` only).
    static LAST_GRANTED: Cell<bool> = const { Cell::new(true) };
}

/// The hint before a keyed hit path loads the slot on `word`'s line: always (`"prefetchw"`),
/// or while this thread's last keyed hit was a grant (`"predicted"`: a denial writes
/// nothing, and a line fetched for writing is one the other cores reading a hot key must ask
/// back).
#[inline(always)]
pub(crate) fn own<T>(word: &T) {
    #[cfg(hotlimit_rfo = "predicted")]
    if !LAST_GRANTED.with(Cell::get) {
        return;
    }
    prefetchw((word as *const T).cast());
}

/// How this thread's keyed hit ended (`"predicted"` only; nothing otherwise).
#[inline(always)]
pub(crate) fn outcome(granted: bool) {
    #[cfg(hotlimit_rfo = "predicted")]
    LAST_GRANTED.with(|c| {
        if c.get() != granted {
            c.set(granted);
        }
    });
    #[cfg(not(hotlimit_rfo = "predicted"))]
    let _ = granted;
}

/// Whether the CPU has `prefetchw`: 0 not asked yet, [`YES`] or [`NO`].
static PRFCHW: AtomicU8 = AtomicU8::new(0);
const YES: u8 = 1;
const NO: u8 = 2;

/// The hint for the line holding `p`; nothing where the CPU lacks the instruction.
#[inline(always)]
fn prefetchw(p: *const u8) {
    // Relaxed: the answer is the same whoever computes it and whenever; nothing is published
    // through it (a thread that sees 0 asks the CPU itself).
    match PRFCHW.load(Ordering::Relaxed) {
        // SAFETY: a prefetch never faults and writes nothing, whatever the address; the CPU
        // has the instruction (`PRFCHW`).
        #[allow(unsafe_code)]
        YES => unsafe {
            asm!("prefetchw byte ptr [{p}]", p = in(reg) p, options(nostack, preserves_flags, readonly));
        },
        NO => {}
        _ => ask_then_prefetchw(p),
    }
}

/// [`prefetchw`] before the CPU was asked: ask it, then hint.
#[cold]
#[inline(never)]
fn ask_then_prefetchw(p: *const u8) {
    let yes = cpu_has_prefetchw();
    // Relaxed: as in `prefetchw`.
    PRFCHW.store(if yes { YES } else { NO }, Ordering::Relaxed);
    if yes {
        prefetchw(p);
    }
}

/// `CPUID.80000001H:ECX.PRFCHW` (bit 8), where the CPU has that leaf.
fn cpu_has_prefetchw() -> bool {
    use core::arch::x86_64::__cpuid;
    // SAFETY: `cpuid` exists on every x86-64 CPU; leaves above the maximum reported return
    // nothing useful, so the maximum is read first.
    #[allow(unsafe_code, unused_unsafe)]
    let (max, ecx) = unsafe {
        let max = __cpuid(0x8000_0000).eax;
        (
            max,
            if max >= 0x8000_0001 {
                __cpuid(0x8000_0001).ecx
            } else {
                0
            },
        )
    };
    max >= 0x8000_0001 && ecx & (1 << 8) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetchw_changes_nothing() {
        let words = [1u64, 2, 3];
        for w in &words {
            prefetchw((w as *const u64).cast());
            prefetchw((w as *const u64).cast());
        }
        assert_eq!(words, [1, 2, 3]);
        // Asked once; the answer stays.
        let seen = PRFCHW.load(Ordering::Relaxed);
        assert!(seen == YES || seen == NO);
        assert_eq!(seen == YES, cpu_has_prefetchw());
    }
}
