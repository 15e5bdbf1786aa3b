//! `Gcra::try_acquire_at` (the one-permit fast path with its precomputed slack) decides
//! exactly as `try_acquire_n_at(1, ..)`, which the model tests in tests/gcra.rs check.

use std::time::Duration;

use hotlimit::{Gcra, ManualClock, Rate};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn one_permit_path_matches_n_equals_one(
        limit in 1u64..=1_000,
        period in 1_000u64..=10_000_000_000,
        burst in 1u64..=50,
        // (gap forward, gap back): time mostly moves forward, sometimes jumps back.
        steps in prop::collection::vec((0u64..=20_000_000, 0u64..=5_000_000), 1..200),
        near_end in any::<bool>(),
    ) {
        prop_assume!(period >= limit);
        let rate = Rate::new(limit, Duration::from_nanos(period)).unwrap();
        let build = || Gcra::builder(rate).burst(burst).clock(ManualClock::new()).build().unwrap();
        let (fast, general) = (build(), build());
        let mut now: u64 = if near_end { u64::MAX - 30_000_000 } else { 0 };
        for (i, &(fwd, back)) in steps.iter().enumerate() {
            now = now.saturating_add(fwd);
            if i % 7 == 3 {
                now = now.saturating_sub(back);
            }
            let a = fast.try_acquire_at(now).map_err(|d| d.retry_after_nanos());
            let b = general.try_acquire_n_at(1, now).map_err(|d| d.retry_after_nanos());
            prop_assert_eq!(a, b, "step {} at now={}", i, now);
        }
    }
}
