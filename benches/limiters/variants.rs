//! Issue 24's candidates, side by side with the real rows in one run of `benches/scaling.rs`:
//! one GCRA loop (clock read, load, decide, CAS) that differs only in what it does after a
//! lost CAS, each contention policy of `src/contention/policy.rs` (this very file is included
//! below, so the harness measures the crate's own arithmetic), the chosen one with a clock
//! re-read after each loss, a `fetch_add` on the busy path, and three ways to reach the word
//! first (`prefetchw` after or before the clock read, an RMW read) under the immediate retry.
//! Plus an audit of the allowed path's denials: for every call denied where nothing should be,
//! how stale its `now` was.
//!
//! The loops are the crate's `Gcra` loop without its rate-change checks (the parameters are
//! constants here): same clock (quanta), same decision, same `compare_exchange_weak`, the
//! state word on its own cache line as in a `Gcra` (whose word shares a line only with its
//! read-mostly parameters).

#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam_utils::CachePadded;
use hotlimit::{Clock, Denied, Gcra, Limiter, QuantaClock};

#[path = "../../src/contention/policy.rs"]
mod policy;

pub(crate) use policy::{Policy, CHOSEN};

use crate::rows::{Kind, Path, Row, Setup};

/// What the allowed path's denials say about their `now`: how many, how many would have been
/// granted at a clock reading taken right after the denial (so the `now` the call decided on
/// was stale by more than its slack), the oldest `now`, and the lost CASes before the denial.
#[derive(Default)]
pub(crate) struct Audit {
    pub(crate) denials: AtomicU64,
    pub(crate) stale: AtomicU64,
    pub(crate) max_age_ns: AtomicU64,
    pub(crate) losses: AtomicU64,
    pub(crate) max_losses: AtomicU64,
    pub(crate) starved: AtomicU64,
}

/// A denial after this many lost CASes in a row counts as starved (its `now` aged in the
/// loop, not while the thread was preempted before its first CAS).
pub(crate) const STARVED: u64 = 8;

impl Audit {
    /// Records one denial: `age` = a fresh clock reading minus the call's `now`, `fits` =
    /// whether the request fits at that fresh reading, `losses` = lost CASes in the call
    /// (0 where the row cannot see them).
    fn record(&self, age: u64, fits: bool, losses: u64) {
        // Relaxed (all): counters read after the threads are joined.
        self.denials.fetch_add(1, Ordering::Relaxed);
        if fits {
            self.stale.fetch_add(1, Ordering::Relaxed);
        }
        self.max_age_ns.fetch_max(age, Ordering::Relaxed);
        self.losses.fetch_add(losses, Ordering::Relaxed);
        self.max_losses.fetch_max(losses, Ordering::Relaxed);
        if losses >= STARVED {
            self.starved.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The counts so far, reset to zero (one run's worth when taken after each run).
    pub(crate) fn take(&self) -> AuditSum {
        // Relaxed (all): taken between runs, when no thread is calling.
        AuditSum {
            denials: self.denials.swap(0, Ordering::Relaxed),
            stale: self.stale.swap(0, Ordering::Relaxed),
            max_age_ns: self.max_age_ns.swap(0, Ordering::Relaxed),
            losses: self.losses.swap(0, Ordering::Relaxed),
            max_losses: self.max_losses.swap(0, Ordering::Relaxed),
            starved: self.starved.swap(0, Ordering::Relaxed),
        }
    }
}

/// [`Audit`]'s counts, summed over runs.
#[derive(Clone, Copy, Default)]
pub(crate) struct AuditSum {
    pub(crate) denials: u64,
    pub(crate) stale: u64,
    pub(crate) max_age_ns: u64,
    pub(crate) losses: u64,
    pub(crate) max_losses: u64,
    pub(crate) starved: u64,
}

impl AuditSum {
    pub(crate) fn add(&mut self, o: AuditSum) {
        self.denials += o.denials;
        self.stale += o.stale;
        self.max_age_ns = self.max_age_ns.max(o.max_age_ns);
        self.losses += o.losses;
        self.max_losses = self.max_losses.max(o.max_losses);
        self.starved += o.starved;
    }

    /// One cell for the report: `-` if nothing was denied, else the denials of `calls`, the
    /// share of them a fresh clock reading would have granted, the oldest `now`, the lost CASes
    /// before a denial (mean/max; only the loops see them) and how many came after
    /// [`STARVED`] or more.
    pub(crate) fn cell(&self, calls: u64) -> String {
        if self.denials == 0 {
            return "-".to_owned();
        }
        format!(
            "{} of {:.1}M ({:.4} %); stale {:.0} %; oldest {:.2} ms; losses {:.1}/{}; starved {}",
            self.denials,
            calls as f64 / 1e6,
            100.0 * self.denials as f64 / calls.max(1) as f64,
            100.0 * self.stale as f64 / self.denials as f64,
            self.max_age_ns as f64 / 1e6,
            self.losses as f64 / self.denials as f64,
            self.max_losses,
            self.starved,
        )
    }
}

/// What a [`GcraLoop`] does after a lost CAS, besides its policy's pause.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Decide again on the value the failed CAS returned, with the same `now` (the crate's
    /// loops, and governor's).
    SameNow,
    /// Read the clock again before deciding again (a fresh `now` after every loss).
    FreshNow,
    /// Busy path only: while the state is at least `margin` ahead of `now`, grant by one
    /// `fetch_add` of the cost (an overshoot is left in place: permits lost, never over-admitted,
    /// NOT exact; a measure of what a `fetch_add` could win, not a candidate as written).
    FetchAdd,
}

/// How a [`GcraLoop`] call first reaches the word.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum First {
    /// Read the clock, then load the word (the line arrives shared; the CAS then asks for it
    /// again, exclusive): the crate's loops and governor's.
    Load,
    /// Read the clock, then `prefetchw` the word and load it: the line arrives exclusive, so
    /// the CAS finds it in this core's cache unless another core took it meanwhile.
    PrefetchAfterClock,
    /// `prefetchw` the word, then read the clock (its ~25 ns overlap the line's transfer),
    /// then load.
    PrefetchBeforeClock,
    /// Read the clock, then read the word by an RMW (`fetch_add(0)`): exclusive, at the cost
    /// of a locked instruction.
    Rmw,
}

/// `prefetchw` of `word`'s line (x86-64; a no-op elsewhere): ask for the line exclusive, as
/// a write would, without waiting for it. Intel CPUs before Broadwell decode it as a NOP.
#[inline(always)]
#[allow(unsafe_code)] // a hint instruction, in the harness only
fn prefetch_write(word: &AtomicU64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch hint reads nothing, writes nothing and cannot fault.
    unsafe {
        std::arch::asm!(
            "prefetchw [{0}]",
            in(reg) word as *const AtomicU64,
            options(nostack, preserves_flags, readonly)
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = word;
}

/// One GCRA word updated by a CAS loop with `policy`: see the module docs.
pub(crate) struct GcraLoop {
    tat: CachePadded<AtomicU64>,
    clock: QuantaClock,
    interval: u64,
    slack: u64,
    policy: Policy,
    retry: Retry,
    first: First,
    /// `None` on the denied path: a clock read per denial would be all that is measured.
    audit: Option<Arc<Audit>>,
}

impl GcraLoop {
    pub(crate) fn new(
        s: &Setup,
        policy: Policy,
        retry: Retry,
        first: First,
        audit: Option<Arc<Audit>>,
    ) -> Self {
        let interval = (s.period.as_nanos() as u64).div_ceil(s.limit);
        GcraLoop {
            tat: CachePadded::new(AtomicU64::new(0)),
            clock: QuantaClock::new(),
            interval,
            slack: s.burst * interval - interval,
            policy,
            retry,
            first,
            audit,
        }
    }

    /// The policy's pause after the `losses`-th loss, which returned `current`; the word to
    /// decide on next.
    #[cold]
    #[inline(never)]
    fn lost(&self, losses: u32, current: u64, seed: u64) -> u64 {
        let step = self.policy.step(losses, seed);
        for _ in 0..step.hints {
            std::hint::spin_loop();
        }
        if step.reload {
            self.tat.load(Ordering::Relaxed)
        } else {
            current
        }
    }

    #[cold]
    #[inline(never)]
    fn denied(&self, tat: u64, now: u64, losses: u32) -> Denied {
        if let Some(audit) = &self.audit {
            let fresh = self.clock.now();
            let fits = tat.max(fresh) - fresh <= self.slack;
            audit.record(fresh.saturating_sub(now), fits, u64::from(losses));
        }
        Denied::new(None)
    }
}

impl Limiter for GcraLoop {
    #[inline]
    fn try_acquire_n(&self, _: u32) -> Result<(), Denied> {
        if self.first == First::PrefetchBeforeClock {
            prefetch_write(&self.tat);
        }
        let mut now = self.clock.now();
        // Relaxed (all): one self-contained word, as in the crate's `GcraPair`.
        let mut tat = match self.first {
            First::Load | First::PrefetchBeforeClock => self.tat.load(Ordering::Relaxed),
            First::PrefetchAfterClock => {
                prefetch_write(&self.tat);
                self.tat.load(Ordering::Relaxed)
            }
            First::Rmw => self.tat.fetch_add(0, Ordering::Relaxed),
        };
        if self.retry == Retry::FetchAdd && tat > now && tat - now <= self.slack / 2 {
            // Far from the limit: one unconditional add. `prev` ≥ the `tat` read above ≥ now
            // (the word only grows here), so `prev` is the base GCRA would use.
            let prev = self.tat.fetch_add(self.interval, Ordering::Relaxed);
            if prev - now <= self.slack {
                return Ok(());
            }
            return Err(self.denied(prev, now, 0));
        }
        let mut losses = 0u32;
        loop {
            let base = tat.max(now);
            if base - now > self.slack {
                return Err(self.denied(tat, now, losses));
            }
            match self.tat.compare_exchange_weak(
                tat,
                base + self.interval,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                Err(current) => {
                    losses += 1;
                    tat = self.lost(losses, current, now);
                    if self.retry == Retry::FreshNow {
                        now = self.clock.now();
                    }
                }
            }
        }
    }
}

/// The real [`Gcra`] (its chosen policy), called as `try_acquire()` calls it, with an audit of
/// its denials (`retry_after` ≤ the `now`'s age means it would fit at a fresh reading).
pub(crate) struct AuditedGcra(Gcra, Arc<Audit>);

impl Limiter for AuditedGcra {
    #[inline]
    fn try_acquire_n(&self, n: u32) -> Result<(), Denied> {
        let now = self.0.clock().now();
        self.0.try_acquire_n_at(n, now).inspect_err(|d| {
            let age = self.0.clock().now().saturating_sub(now);
            let fits = d.retry_after().is_some_and(|r| r.as_nanos() as u64 <= age);
            self.1.record(age, fits, 0);
        })
    }
}

/// The variant rows for `path`, each with its audit: every policy on the same loop, the
/// chosen one with a fresh `now` after a loss, the busy path's `fetch_add`, the first-access
/// variants, and the real `Gcra` audited. On the denied path nothing is audited (every call is
/// a denial there, and the audit's clock read would be the cost measured) and the audited
/// `Gcra` sits out.
pub(crate) fn rows(path: Path) -> Vec<(Row, Arc<Audit>)> {
    let s = path.setup();
    let mut out = Vec::new();
    let audited = path != Path::Denied;
    let mut add = |name: &'static str, l: Arc<dyn Limiter>, audit: Arc<Audit>| {
        out.push((
            Row {
                name,
                kind: Kind::Variant,
                limiter: l,
            },
            audit,
        ));
    };
    if audited {
        let audit = Arc::new(Audit::default());
        add(
            "Gcra, audited",
            Arc::new(AuditedGcra(
                Gcra::builder(s.rate()).burst(s.burst).build().unwrap(),
                audit.clone(),
            )),
            audit,
        );
    }
    let mut with = |policy: Policy, retry: Retry, first: First| {
        let audit = Arc::new(Audit::default());
        let l = GcraLoop::new(&s, policy, retry, first, audited.then(|| audit.clone()));
        add(label(policy, retry, first), Arc::new(l), audit);
    };
    for policy in Policy::ALL {
        with(policy, Retry::SameNow, First::Load);
    }
    with(CHOSEN, Retry::FreshNow, First::Load);
    if path == Path::Busy {
        with(CHOSEN, Retry::FetchAdd, First::Load);
    }
    for first in [
        First::PrefetchAfterClock,
        First::PrefetchBeforeClock,
        First::Rmw,
    ] {
        with(Policy::Immediate, Retry::SameNow, first);
    }
    if path == Path::Denied {
        for (row, _) in &out {
            // Take the one permit: every later call is denied.
            let _ = row.limiter.try_acquire();
        }
    }
    out
}

/// A row's name, with " (chosen)" on the loop of the policy the crate is built with
/// (`CHOSEN`, which `--cfg hotlimit_policy` changes). Leaked: the harness's tables and plot
/// take `&'static str`, and a run makes a few dozen rows.
fn label(policy: Policy, retry: Retry, first: First) -> &'static str {
    let name = loop_name(policy, retry, first);
    if retry == Retry::SameNow && first == First::Load && policy == CHOSEN {
        Box::leak(format!("{name} (chosen)").into_boxed_str())
    } else {
        name
    }
}

/// The row names.
fn loop_name(policy: Policy, retry: Retry, first: First) -> &'static str {
    match first {
        First::Load => {}
        First::PrefetchAfterClock => return "GCRA loop: immediate, prefetchw",
        First::PrefetchBeforeClock => return "GCRA loop: immediate, prefetchw before clock",
        First::Rmw => return "GCRA loop: immediate, RMW read",
    }
    match (retry, policy) {
        (Retry::SameNow, Policy::Immediate) => "GCRA loop: immediate retry (governor's)",
        (Retry::SameNow, Policy::Exponential) => "GCRA loop: crossbeam Backoff",
        (Retry::SameNow, Policy::ExponentialJitter) => "GCRA loop: Backoff+jitter (before)",
        (Retry::SameNow, Policy::BackoffReload) => "GCRA loop: Backoff+jitter, reload",
        (Retry::SameNow, Policy::ShortReload) => "GCRA loop: short backoff, reload",
        (Retry::SameNow, Policy::Adaptive) => "GCRA loop: adaptive",
        (Retry::SameNow, Policy::BatchThenFight(3)) => "GCRA loop: batch 3, then fight",
        (Retry::SameNow, Policy::BatchThenFight(_)) => "GCRA loop: batch 6, then fight",
        (Retry::FreshNow, _) => "GCRA loop: chosen + clock re-read",
        (Retry::FetchAdd, _) => "GCRA loop: chosen + fetch_add ahead",
    }
}
