//! The contention policies measured for issue 24: after the k-th lost CAS in a row of one
//! call, how many spin hints to wait (`pause` on x86-64: about 50–70 ns each on the machines
//! measured), and whether to decide again on the value the failed CAS returned or on a fresh
//! load of the word.
//!
//! Pure arithmetic: no atomics, no clock, no imports from the crate, so that the scaling
//! harness includes this very file (`benches/limiters/variants.rs`) and runs every candidate
//! side by side on the same GCRA loop, while the crate's loops use the one policy [`CHOSEN`]
//! names (through `Contention`). Changing the default is changing that one constant.

/// What a loop does after a lost CAS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Policy {
    /// Retry at once from the value the failed CAS returned: `governor`'s loop.
    Immediate,
    /// crossbeam's `Backoff::spin`, 2^min(k − 1, 6) hints, then the value the failed CAS
    /// returned (read before the pause).
    Exponential,
    /// [`Exponential`](Policy::Exponential) plus `seed mod 16` hints: hotlimit's loops before
    /// issue 24 (the jitter broke a lockstep of two threads on two cores, see the guide).
    ExponentialJitter,
    /// [`ExponentialJitter`](Policy::ExponentialJitter)'s pause, then a fresh load: the
    /// textbook backoff (look again after waiting).
    BackoffReload,
    /// [`BackoffReload`](Policy::BackoffReload) with the pause capped low: 2^min(k − 1, 3)
    /// hints plus `seed mod 8`, then a fresh load.
    ShortReload,
    /// The first loss retried at once from the value the failed CAS returned (that CAS left
    /// the line in this core's cache with the current value: the best moment to try again);
    /// from the second loss in a row on, a short pause, 2^min(k − 2, 3) hints plus
    /// `seed mod 4`, then a fresh load. Never a pause followed by a CAS of a value read
    /// before it (that CAS fails whenever the winner wrote during the pause): fair, but it
    /// hands the line over far more often than a policy that lets the winner run.
    Adaptive,
    /// Batch, then fight: the first `n` losses in a row pause as
    /// [`ExponentialJitter`](Policy::ExponentialJitter) does, 2^(k − 1) + `seed mod 16` hints,
    /// and CAS the value read before the pause (the winner runs a batch of calls with the line
    /// to itself meanwhile); from loss n + 1 on, a fresh load and no pause, so that no caller
    /// loses more than n pauses' worth in a row (n = 6: at most 63 + 90 hints, about 10 µs).
    BatchThenFight(u32),
}

/// The policy every single-word limiter of the crate uses: on 2 cores it keeps 95 % of the old
/// policy's throughput at 2 to 16 threads (where the winner's batches are what counts) while
/// no caller loses more than 7 CASes in a row (the old one: up to 642, long enough for its
/// `now` to fall a millisecond behind). On 16 cores it is ahead of `governor` at 2 threads
/// only: from 8 threads on the losers' stale CASes pull the line from the winner 15 at a time
/// (0.36–0.67× `governor`), where [`BackoffReload`](Policy::BackoffReload) keeps 0.74–1.05×
/// but loses a third of the 2-core throughput (`SlidingLog` falls under `governor` there). The
/// guide has the figures; `bash benches/device.sh build-ab` and `run-ab` measure the real
/// limiters built with each candidate.
///
/// `--cfg hotlimit_policy="…"` (`immediate`, `backoff_reload`, `short_reload`, `adaptive`,
/// `batch3`) builds the crate with another candidate instead, for those A/B runs only.
pub(crate) const CHOSEN: Policy = if cfg!(hotlimit_policy = "immediate") {
    Policy::Immediate
} else if cfg!(hotlimit_policy = "backoff_reload") {
    Policy::BackoffReload
} else if cfg!(hotlimit_policy = "short_reload") {
    Policy::ShortReload
} else if cfg!(hotlimit_policy = "adaptive") {
    Policy::Adaptive
} else if cfg!(hotlimit_policy = "batch3") {
    Policy::BatchThenFight(3)
} else {
    Policy::BatchThenFight(6)
};

/// What to do after one lost CAS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    /// Spin hints to wait first.
    pub(crate) hints: u32,
    /// Decide again on a fresh load of the word (else on the value the failed CAS returned).
    pub(crate) reload: bool,
}

impl Policy {
    /// Every candidate, in the harness's order.
    #[allow(dead_code)] // the harness's list; the crate uses `CHOSEN` only
    pub(crate) const ALL: [Policy; 8] = [
        Policy::Immediate,
        Policy::Exponential,
        Policy::ExponentialJitter,
        Policy::BackoffReload,
        Policy::ShortReload,
        Policy::Adaptive,
        Policy::BatchThenFight(3),
        Policy::BatchThenFight(6),
    ];

    /// The step after the `losses`-th lost CAS in a row of one call (`losses` ≥ 1); `seed`
    /// differs between threads (their clock reading), so that two threads that lose to each
    /// other do not wait in step.
    #[inline(always)]
    pub(crate) const fn step(self, losses: u32, seed: u64) -> Step {
        let k = if losses == 0 { 1 } else { losses };
        let exponential = 1 << min(k - 1, 6);
        let (hints, reload) = match self {
            Policy::Immediate => (0, false),
            Policy::Exponential => (exponential, false),
            Policy::ExponentialJitter => (exponential + (seed & 15) as u32, false),
            Policy::BackoffReload => (exponential + (seed & 15) as u32, true),
            Policy::ShortReload => ((1 << min(k - 1, 3)) + (seed & 7) as u32, true),
            Policy::Adaptive => {
                if k == 1 {
                    (0, false)
                } else {
                    ((1 << min(k - 2, 3)) + (seed & 3) as u32, true)
                }
            }
            Policy::BatchThenFight(n) => {
                if k <= n {
                    (exponential + (seed & 15) as u32, false)
                } else {
                    (0, true)
                }
            }
        };
        Step { hints, reload }
    }

    /// A short name for tables.
    #[allow(dead_code)] // the harness's labels
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Policy::Immediate => "immediate",
            Policy::Exponential => "Backoff",
            Policy::ExponentialJitter => "Backoff+jitter",
            Policy::BackoffReload => "Backoff+jitter, reload",
            Policy::ShortReload => "short backoff, reload",
            Policy::Adaptive => "adaptive",
            Policy::BatchThenFight(_) => "batch n, then fight",
        }
    }
}

/// `u32::min` in a `const fn`.
#[inline(always)]
const fn min(a: u32, b: u32) -> u32 {
    if a < b {
        a
    } else {
        b
    }
}
