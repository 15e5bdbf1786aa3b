//! Random weighted request traces for the GCRA-family property tests: a valid rate, and steps
//! that move the clock forward, back, or near the end of its range before each request.

use proptest::prelude::*;

/// One step of a random trace.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    /// Advance the clock, then ask for n permits.
    Forward { gap: u64, n: u32 },
    /// Set the clock back by `back` (saturating at 0), then ask.
    Back { back: u64, n: u32 },
    /// Jump near the end of the clock's range, then ask.
    NearEnd { below_max: u64, n: u32 },
}

impl Step {
    /// Moves `now` as the step says and returns the permits to ask for.
    pub(crate) fn apply(&self, now: &mut u64) -> u32 {
        match *self {
            Step::Forward { gap, n } => {
                *now = now.saturating_add(gap);
                n
            }
            Step::Back { back, n } => {
                *now = now.saturating_sub(back);
                n
            }
            Step::NearEnd { below_max, n } => {
                *now = u64::MAX - below_max;
                n
            }
        }
    }
}

/// (limit, period_ns, burst), valid for GCRA: period ≥ limit and b·I fits.
pub(crate) fn rate() -> impl Strategy<Value = (u64, u64, u64)> {
    (1u64..=1_000, 1u64..=1_000_000_000_000, 1u64..=2_000).prop_filter_map(
        "valid rate",
        |(limit, period, burst)| {
            if period < limit {
                return None;
            }
            burst.checked_mul(period.div_ceil(limit))?;
            Some((limit, period, burst))
        },
    )
}

/// Up to `len` steps with sizes up to `burst` + 2 (and u32::MAX), gaps scaled to `period`.
pub(crate) fn trace(burst: u64, period: u64, len: usize) -> impl Strategy<Value = Vec<Step>> {
    trace_weighted(burst, period, len, 2)
}

/// [`trace`], with `ones` the weight of a request for exactly 1 permit (against 8 for any size
/// up to `burst` + 2 and 1 for u32::MAX).
pub(crate) fn trace_weighted(
    burst: u64,
    period: u64,
    len: usize,
    ones: u32,
) -> impl Strategy<Value = Vec<Step>> {
    let n_max = (burst + 2).min(u64::from(u32::MAX)) as u32;
    let n = prop_oneof![8 => 0..=n_max, 1 => Just(u32::MAX), ones => Just(1)];
    let step = prop_oneof![
        12 => (0..=period / 2 + 1, n.clone()).prop_map(|(gap, n)| Step::Forward { gap, n }),
        3 => (0..=period.saturating_mul(3), n.clone()).prop_map(|(gap, n)| Step::Forward { gap, n }),
        2 => (0..=period, n.clone()).prop_map(|(back, n)| Step::Back { back, n }),
        1 => (0..=period.saturating_mul(4), n).prop_map(|(below_max, n)| Step::NearEnd { below_max, n }),
    ];
    prop::collection::vec(step, 1..len)
}

/// Runs `steps`, asking `real` (the limiter) and `want` (the model) for each step's permits at
/// the step's time, and returns the first step where they decide differently, as
/// (index, step, now, real's decision, want's).
pub(crate) fn first_difference<D: PartialEq>(
    steps: &[Step],
    mut real: impl FnMut(u32, u64) -> D,
    mut want: impl FnMut(u32, u64) -> D,
) -> Option<(usize, &Step, u64, D, D)> {
    let mut now: u64 = 0;
    for (i, step) in steps.iter().enumerate() {
        let n = step.apply(&mut now);
        let (r, w) = (real(n, now), want(n, now));
        if r != w {
            return Some((i, step, now, r, w));
        }
    }
    None
}

/// [`first_difference`] as a property: fails with the first step where `real` and `want`
/// decide differently, naming the step's index, the step and its time.
pub(crate) fn no_difference<D: PartialEq + std::fmt::Debug>(
    steps: &[Step],
    real: impl FnMut(u32, u64) -> D,
    want: impl FnMut(u32, u64) -> D,
) -> Result<(), TestCaseError> {
    if let Some((i, step, now, real, want)) = first_difference(steps, real, want) {
        prop_assert_eq!(real, want, "step {} ({:?}) at now={}", i, step, now);
    }
    Ok(())
}
