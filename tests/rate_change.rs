//! Live rate changes: `Gcra::set_rate_at` (and the Pacer's) against the reference model's rule,
//! the bound across a change (`b + (s − t)/I + (t + d − s)/I'`), "a change frees nothing", and
//! racing threads.

mod model;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hotlimit::{Gcra, ManualClock, Pacer, Rate};
use model::gcra::GcraModel;
use proptest::prelude::*;

fn rate(limit: u64, period_ns: u64) -> Rate {
    Rate::new(limit, Duration::from_nanos(period_ns)).unwrap()
}

fn gcra(limit: u64, period_ns: u64, burst: u64) -> Gcra<ManualClock> {
    Gcra::builder(rate(limit, period_ns))
        .burst(burst)
        .clock(ManualClock::new())
        .build()
        .unwrap()
}

/// Up to 119 steps `(gap, n, change)`: six in seven ask for 1..=`n_max` permits after a gap of
/// 0..=`gap_max` ns (`change` is `None`), one in seven sets the limit to 1..=`limit_max`
/// (`n` is 0).
fn limit_changes(
    gap_max: u64,
    n_max: u32,
    limit_max: u64,
) -> impl Strategy<Value = Vec<(u64, u32, Option<u64>)>> {
    prop::collection::vec(
        prop_oneof![
            6 => (0u64..=gap_max, 1u32..=n_max).prop_map(|(gap, n)| (gap, n, None)),
            1 => (0u64..=gap_max, 1u64..=limit_max).prop_map(|(gap, l)| (gap, 0, Some(l))),
        ],
        1..120,
    )
}

/// The bound over every interval [t, e] between grant times that contains at most one change
/// s (t ≤ s ≤ e): N·I·I' ≤ b·I·I' + (s − t)·I' + (e − s)·I, exactly in u128. `grants` are
/// (time, permits) in call order, `epochs` (time, I, b, grants before it) of every change, the
/// first at 0 with none before it. An interval is cut by call order, not by time: at one
/// instant, a grant made before a change belongs to the interval that ends at that change.
/// Returns the first interval over the bound as (N, t, e, s).
fn first_excess_across_a_change(
    epochs: &[(u64, u128, u64, usize)],
    grants: &[(u64, u64)],
) -> Option<(u128, u64, u64, u64)> {
    for k in 0..epochs.len() {
        let (s, i2, _, _) = epochs[k];
        let (i1, b1) = if k == 0 {
            (i2, epochs[0].2)
        } else {
            (epochs[k - 1].1, epochs[k - 1].2)
        };
        // The grants after the previous change and before the next one.
        let first = if k == 0 { 0 } else { epochs[k - 1].3 };
        let last = epochs.get(k + 1).map_or(grants.len(), |e| e.3);
        let between = &grants[first..last];
        for (a, &(t, _)) in between.iter().enumerate() {
            if t > s {
                break;
            }
            let mut n = 0u128;
            for &(e, m) in &between[a..] {
                n += u128::from(m);
                if e < s {
                    continue;
                }
                let bound =
                    u128::from(b1) * i1 * i2 + u128::from(s - t) * i2 + u128::from(e - s) * i1;
                if n * i1 * i2 > bound {
                    return Some((n, t, e, s));
                }
            }
        }
    }
    None
}

/// Four threads each call `acquire(limiter, thread, i)` for i in 0..2,000 (it returns the
/// permits granted) while this thread calls `change(limiter, k)` for k in 0..200; returns the
/// permits granted.
fn granted_while_changing<L: Send + Sync + 'static>(
    limiter: &Arc<L>,
    acquire: fn(&L, u32, u32) -> u64,
    change: impl Fn(&L, u64),
) -> u64 {
    let granted = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (l, granted) = (limiter.clone(), granted.clone());
            std::thread::spawn(move || {
                for i in 0..2_000u32 {
                    granted.fetch_add(acquire(&l, t, i), Ordering::Relaxed);
                }
            })
        })
        .collect();
    for k in 0..200u64 {
        change(limiter, k);
    }
    for t in threads {
        t.join().unwrap();
    }
    granted.load(Ordering::Relaxed)
}

#[test]
fn a_faster_rate_frees_nothing_at_once() {
    // 10/s, 4 taken at 0: 6 free. At 100/s (burst 100) still 6 free, then one per 10 ms.
    let g = gcra(10, 1_000_000_000, 10);
    g.try_acquire_n_at(4, 0).unwrap();
    g.set_rate_at(rate(100, 1_000_000_000), None, 0).unwrap();
    assert_eq!(g.remaining_at(0), 6);
    assert!(g.try_acquire_n_at(7, 0).is_err());
    assert_eq!(g.remaining_at(10_000_000), 7);
    assert_eq!(
        g.remaining_at(1_000_000_000),
        100,
        "full after one period of the new rate"
    );
}

#[test]
fn a_smaller_burst_caps_what_is_free() {
    let g = gcra(100, 1_000_000_000, 100);
    g.try_acquire_n_at(10, 0).unwrap(); // 90 free
    g.set_rate_at(rate(100, 1_000_000_000), Some(5), 0).unwrap();
    // Free is capped at 5, and the 10 owed (100 ms) stay owed: with τ' = 50 ms nothing is
    // free until 50 ms, then one per 10 ms. (The change adds 1 ns: the state's value must be
    // new, see `Gcra::set_rate_at`.)
    assert_eq!(g.remaining_at(0), 0);
    assert_eq!(g.remaining_at(60_000_000), 0);
    assert_eq!(g.remaining_at(60_000_001), 1);
    assert_eq!(g.remaining_at(100_000_001), 5);
}

#[test]
fn a_slower_rate_keeps_the_time_owed() {
    // 100/s, 50 taken: 500 ms owed, 50 free. At 10/s (burst 10): free = min(50, 10) = 10,
    // a whole new burst, so the carried state would owe nothing; but the TAT never moves
    // earlier: the 500 ms stay owed (plus the 1 ns that makes the state new), so 4 are free at
    // once and the 5th 1 ns later.
    let g = gcra(100, 1_000_000_000, 100);
    g.try_acquire_n_at(50, 0).unwrap();
    g.set_rate_at(rate(10, 1_000_000_000), None, 0).unwrap();
    assert_eq!(g.remaining_at(0), 4);
    assert_eq!(g.remaining_at(1), 5);
    let d = g.try_acquire_n_at(6, 1).unwrap_err();
    assert_eq!(d.retry_after_nanos(), Some(100_000_000));
}

#[test]
fn an_idle_limiter_keeps_its_burst_up_to_the_new_one() {
    let clock = ManualClock::new();
    let g = Gcra::builder(rate(10, 1_000_000_000))
        .clock(clock.clone())
        .build()
        .unwrap();
    clock.advance(Duration::from_secs(5));
    g.set_rate(rate(1_000, 1_000_000_000)).unwrap();
    // 10 free before, so 10 free after (not 1,000); the rest fills at 1,000/s.
    assert_eq!(g.remaining(), 10);
    clock.advance(Duration::from_secs(1));
    assert_eq!(g.remaining(), 1_000);
    g.set_rate(rate(3, 1_000_000_000)).unwrap();
    assert_eq!(g.remaining(), 3);
}

#[test]
fn getters_and_debug_show_the_new_parameters() {
    let g = gcra(10, 1_000_000_000, 10);
    g.set_rate_at(rate(4, 1_000_000_000), Some(2), 0).unwrap();
    assert_eq!(g.rate(), rate(4, 1_000_000_000));
    assert_eq!(g.burst(), 2);
    assert_eq!(g.emission_interval(), Duration::from_millis(250));
    let shown = format!("{g:?}");
    assert!(
        shown.contains("limit: 4") && shown.contains("burst: 2"),
        "{shown}"
    );
    g.set_burst(7).unwrap();
    assert_eq!((g.rate().limit(), g.burst()), (4, 7));
}

#[test]
fn bad_changes_are_errors_that_change_nothing() {
    let g = gcra(10, 1_000_000_000, 10);
    g.try_acquire_n_at(3, 0).unwrap();
    let err = g.set_rate_at(rate(10, 5), None, 0).unwrap_err();
    assert_eq!(err.field(), "rate");
    let err = g
        .set_rate_at(rate(1, 1_000), Some(u64::MAX), 0)
        .unwrap_err();
    assert_eq!(err.field(), "burst");
    assert_eq!(g.set_burst(0).unwrap_err().field(), "burst");
    assert_eq!((g.rate(), g.burst()), (rate(10, 1_000_000_000), 10));
    assert_eq!(g.remaining_at(0), 7);
}

#[test]
fn a_reservation_from_before_a_change_is_not_given_back_after_it() {
    let g = gcra(1, 1_000, 1);
    let r = g.reserve_n_at(1, 0, 10_000).unwrap();
    g.set_rate_at(rate(1, 2_000), None, 0).unwrap();
    assert!(
        !r.cancel(),
        "the word moved on: the cancel fails and the permit stays counted"
    );
    assert_eq!(g.remaining_at(0), 0);
    // One made after the change is given back as usual.
    let g = gcra(1, 1_000, 2);
    g.set_rate_at(rate(1, 2_000), Some(2), 0).unwrap();
    let r = g.reserve_n_at(1, 0, 0).unwrap();
    assert!(r.cancel());
}

#[test]
fn a_change_after_a_cancel_stays_above_the_cancelled_place() {
    // A reservation 50 µs out is cancelled; the next change keeps the word above where it
    // reached (a request that read it before the cancel must never see it again).
    let g = gcra(1, 1_000, 1);
    let r = g.reserve_n_at(1, 0, 50_000).unwrap();
    let far = g.reserve_n_at(1, 0, 50_000).unwrap();
    assert_eq!(far.ready_at(), 1_000);
    assert!(far.cancel());
    r.keep();
    g.set_rate_at(rate(1, 500), None, 0).unwrap();
    // The highest value the word held was 2,000 (the cancelled one): the new TAT is 2,001,
    // and with I' = τ' = 500 the next permit is due when it is reached.
    assert_eq!(
        g.try_acquire_at(0).unwrap_err().retry_after_nanos(),
        Some(2_001)
    );
}

#[test]
fn racing_threads_on_a_frozen_clock_never_pass_the_first_burst() {
    // Every call at t = 0: the bound across any number of changes is the burst in force at
    // the start, b = 50, however the changes and grants interleave.
    let g = Arc::new(gcra(50, 1_000_000, 50));
    g.try_acquire_at(0).unwrap();
    let granted = 1 + granted_while_changing(
        &g,
        |g, _, _| u64::from(g.try_acquire_at(0).is_ok()),
        |g, k| {
            let limit = 10 + (k * 37) % 200;
            g.set_rate_at(rate(limit, 1_000_000), Some(1 + (k * 13) % 100), 0)
                .unwrap();
        },
    );
    assert!(
        granted <= 50,
        "{granted} grants with burst 50 at one instant"
    );
}

#[test]
fn a_pacer_ramp_is_one_call_per_step() {
    // 1,000/s, then 10k, 20k, ... 100k per second: eleven steps of one second, one
    // `set_rate` at the start of each. One thread, the ManualClock as the sleeper; each slot
    // is counted in the second its time falls in.
    let clock = ManualClock::new();
    let pacer = Pacer::builder(Rate::per_second(1_000).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    let targets: Vec<u64> = std::iter::once(1_000)
        .chain((1..=10).map(|k| k * 10_000))
        .collect();
    let mut per_step = vec![0u64; targets.len()];
    let mut step = 0;
    loop {
        let slot = pacer.pace_blocking_with(&clock).slot;
        let second = (slot / 1_000_000_000) as usize;
        if second >= targets.len() {
            break;
        }
        per_step[second] += 1;
        if second > step {
            step = second;
            pacer
                .set_rate(Rate::per_second(targets[step]).unwrap())
                .unwrap();
            let interval = 1_000_000_000u64.div_ceil(targets[step]);
            assert_eq!(pacer.interval(), Duration::from_nanos(interval));
        }
    }
    for (k, (&target, &slots)) in targets.iter().zip(&per_step).enumerate() {
        // Each second sends its rate, less at most the slots of one old interval (the first
        // slot after a faster change waits out the old one) and the few slots the rounding of
        // the interval up to whole nanoseconds costs over a second.
        let old = if k == 0 { target } else { targets[k - 1] };
        let low = target - target.div_ceil(old) - target / 10_000 - 1;
        assert!(
            (low..=target).contains(&slots),
            "second {k}: {slots} slots at {target}/s: {per_step:?}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3_000))]

    /// Requests and changes at random: every decision and retry equals the model's (which
    /// writes the rule out plainly), a change never frees a permit nor exceeds the new burst,
    /// and every interval that contains one change holds at most b + (s − t)/I + (t + d − s)/I'.
    #[test]
    fn changes_match_the_model_and_the_bound(
        first in (1u64..=50, 1u64..=1_000_000, 1u64..=60),
        steps in prop::collection::vec(
            prop_oneof![
                6 => (0u64..=200_000, 1u32..=8).prop_map(|(gap, n)| (gap, n, None)),
                1 => (0u64..=200_000, (1u64..=50, 1u64..=1_000_000, 1u64..=60))
                    .prop_map(|(gap, c)| (gap, 0, Some(c))),
            ],
            1..80,
        ),
    ) {
        let valid = |(l, p, b): (u64, u64, u64)| (l, p.max(l), b);
        let (l, p, b) = valid(first);
        let g = gcra(l, p, b);
        let mut model = GcraModel::new(l, p, b);
        let mut now = 0u64;
        // (time, permits) of every grant; (time, I, b, grants before it) of every change, the
        // first at 0.
        let mut grants: Vec<(u64, u64)> = Vec::new();
        let mut epochs: Vec<(u64, u128, u64, usize)> = vec![(0, model.params().0, b, 0)];
        for (i, &(gap, n, change)) in steps.iter().enumerate() {
            now += gap;
            match change {
                None => {
                    let real = g.try_acquire_n_at(n, now).map_err(|d| d.retry_after_nanos());
                    let want = model.acquire(n, now);
                    prop_assert_eq!(real, want, "step {} at {}", i, now);
                    if real.is_ok() {
                        grants.push((now, u64::from(n)));
                    }
                }
                Some(c) => {
                    let (l, p, b) = valid(c);
                    let before = g.remaining_at(now);
                    g.set_rate_at(rate(l, p), Some(b), now).unwrap();
                    model.rerate(l, p, b, now);
                    let after = g.remaining_at(now);
                    prop_assert!(after <= before.min(b), "freed: {} -> {} (b' {})", before, after, b);
                    prop_assert_eq!(u128::from(after), model.remaining(now));
                    epochs.push((now, model.params().0, b, grants.len()));
                }
            }
        }
        if let Some((n, t, e, s)) = first_excess_across_a_change(&epochs, &grants) {
            prop_assert!(false, "{} grants in [{}, {}] across the change at {}", n, t, e, s);
        }
    }
}

#[test]
fn keyed_changes_carry_like_a_live_gcra_and_take_a_burst() {
    use hotlimit::Keyed;
    let k: Keyed<&str, Gcra, ManualClock> = Keyed::gcra(rate(10, 1_000_000_000))
        .clock(ManualClock::new())
        .build()
        .unwrap();
    k.try_acquire_n_at(&"alice", 4, 0).unwrap(); // 6 of 10 free
    k.set_rate("alice", rate(100, 1_000_000_000)).unwrap();
    // Still 6 free, not 96: the change frees nothing (as `Gcra::set_rate_at`).
    assert!(k.try_acquire_n_at(&"alice", 7, 0).is_err());
    assert!(k.try_acquire_n_at(&"alice", 6, 0).is_ok());
    // A per-key burst: 100/s with bursts of 300 for bob, 10 for everyone else.
    k.set_rate_and_burst("bob", rate(100, 1_000_000_000), 300)
        .unwrap();
    assert!(k.try_acquire_n_at(&"bob", 300, 0).is_ok());
    assert!(k.try_acquire_n_at(&"carol", 11, 0).unwrap_err().is_never());
    assert_eq!(
        k.set_rate_and_burst("bob", rate(100, 1_000_000_000), 0)
            .unwrap_err()
            .field(),
        "burst"
    );
    // A default change carries live keys the same way.
    k.try_acquire_n_at(&"dave", 10, 0).unwrap();
    k.set_default_rate(rate(1_000, 1_000_000_000)).unwrap();
    assert!(
        k.try_acquire_at(&"dave", 0).is_err(),
        "dave had nothing free"
    );
    assert!(
        k.try_acquire_at(&"dave", 1_000_000).is_ok(),
        "one per ms at the new rate"
    );
}

mod sharded {
    use super::*;
    use hotlimit::ShardedGcra;

    fn sharded(limit: u64, period_ns: u64, burst: u64, shards: usize) -> ShardedGcra<ManualClock> {
        ShardedGcra::builder(rate(limit, period_ns))
            .burst(burst)
            .shards(shards)
            .clock(ManualClock::new())
            .build()
            .unwrap()
    }

    #[test]
    fn a_change_frees_nothing_and_splits_the_new_rate() {
        let g = sharded(12, 1_200_000, 12, 3);
        g.try_acquire_n_on_at(0, 5, 0).unwrap(); // shard 0 (4) and 1 from shard 1
        let before = g.remaining_at(0);
        g.set_rate_at(rate(120, 1_200_000), None, 0).unwrap();
        assert_eq!(g.remaining_at(0), before);
        assert_eq!(g.burst(), 120);
        assert_eq!(
            g.shard_emission_interval(2),
            Some(Duration::from_nanos(30_000))
        );
        assert_eq!(g.emission_interval(), Duration::from_nanos(10_000));
        // Slower and a smaller burst: capped, owed time kept.
        g.set_rate_at(rate(3, 1_200_000), Some(3), 0).unwrap();
        assert!(g.remaining_at(0) <= 3.min(before));
        assert_eq!(
            g.set_rate_at(rate(2, 1_200_000), None, 0)
                .unwrap_err()
                .field(),
            "shards"
        );
        assert_eq!(g.rate(), rate(3, 1_200_000));
    }

    #[test]
    fn racing_threads_on_a_frozen_clock_never_pass_the_first_burst() {
        let g = Arc::new(sharded(64, 1_000_000, 64, 4));
        let granted = granted_while_changing(
            &g,
            |g, t, i| {
                let n = 1 + (i + t) % 3;
                if g.try_acquire_n_on_at(t as usize, n, 0).is_ok() {
                    u64::from(n)
                } else {
                    0
                }
            },
            |g, k| {
                let limit = 8 + (k * 37) % 200;
                g.set_rate_at(rate(limit, 1_000_000), Some(4 + (k * 13) % 100), 0)
                    .unwrap();
            },
        );
        assert!(
            granted <= 64,
            "{granted} permits with burst 64 at one instant"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1_000))]

        /// Sequential requests from random homes and random changes: a change never frees a
        /// permit nor exceeds the new burst, and every interval containing one change holds at
        /// most b + (s − t)/I + (t + d − s)/I' (global I, b), exactly in u128.
        #[test]
        fn changes_keep_the_bound(
            shards in 1usize..=4,
            first in (4u64..=40, 1u64..=1_000_000, 4u64..=60),
            steps in prop::collection::vec(
                prop_oneof![
                    6 => (0u64..=200_000, 1u32..=8, 0usize..4).prop_map(|(gap, n, h)| (gap, n, h, None)),
                    1 => (0u64..=200_000, (4u64..=40, 1u64..=1_000_000, 4u64..=60))
                        .prop_map(|(gap, c)| (gap, 0, 0, Some(c))),
                ],
                1..60,
            ),
        ) {
            let valid = |(l, p, b): (u64, u64, u64)| (l, p.max(l), b);
            let (l, p, b) = valid(first);
            let g = sharded(l, p, b, shards);
            let interval = |l: u64, p: u64| u128::from(p.div_ceil(l));
            let mut now = 0u64;
            let mut grants: Vec<(u64, u64)> = Vec::new();
            let mut epochs: Vec<(u64, u128, u64, usize)> = vec![(0, interval(l, p), b, 0)];
            for &(gap, n, home, change) in &steps {
                now += gap;
                match change {
                    None => {
                        if g.try_acquire_n_on_at(home, n, now).is_ok() {
                            grants.push((now, u64::from(n)));
                        }
                    }
                    Some(c) => {
                        let (l, p, b) = valid(c);
                        let before = g.remaining_at(now);
                        g.set_rate_at(rate(l, p), Some(b), now).unwrap();
                        let after = g.remaining_at(now);
                        prop_assert!(after <= before.min(b), "freed: {} -> {} (b' {})", before, after, b);
                        epochs.push((now, interval(l, p), b, grants.len()));
                    }
                }
            }
            if let Some((n, t, e, s)) = first_excess_across_a_change(&epochs, &grants) {
                prop_assert!(false, "{} permits in [{}, {}] across the change at {}", n, t, e, s);
            }
        }
    }
}

mod sliding_window {
    use super::*;
    use hotlimit::SlidingWindow;

    #[test]
    fn count_closed_windows_refuse_live_changes() {
        let w = SlidingWindow::builder(rate(10, 1_000_000))
            .count_closed(2)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        assert_eq!(w.set_limit_at(5, 0).unwrap_err().field(), "count_closed");
        assert_eq!(w.rate().limit(), 10);
    }

    #[test]
    fn racing_threads_on_a_frozen_clock_never_pass_the_first_limit() {
        let w = Arc::new(
            SlidingWindow::builder(rate(40, 1_000_000))
                .clock(ManualClock::new())
                .build()
                .unwrap(),
        );
        let granted = granted_while_changing(
            &w,
            |w, t, i| {
                let n = 1 + (i + t) % 3;
                if w.try_acquire_n_at(n, 0).is_ok() {
                    u64::from(n)
                } else {
                    0
                }
            },
            |w, k| w.set_limit_at(1 + (k * 37) % 100, 0).unwrap(),
        );
        assert!(
            granted <= 40,
            "{granted} permits with limit 40 at one instant"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1_000))]

        /// Sequential requests and limit changes on a clock that moves forward: every window
        /// (e − p, e] ending at a grant holds at most the limit in force at e in the model
        /// (a lower limit at once, a higher one `period` after its change): so a window that
        /// contains a change holds at most the smaller limit, and a later one the new limit.
        #[test]
        fn every_window_holds_the_limit_in_force(
            buckets in 1usize..=12,
            first in 1u64..=30,
            steps in limit_changes(300, 5, 30),
        ) {
            let period = 1_000u64;
            let w = SlidingWindow::builder(rate(first, period))
                .buckets(buckets)
                .clock(ManualClock::new())
                .build()
                .unwrap();
            let (mut in_force, mut pending) = (first, None::<(u64, u64)>);
            let mut grants: Vec<(u64, u64)> = Vec::new();
            let mut now = 0u64;
            for &(gap, n, change) in &steps {
                now += gap;
                if let Some((to, at)) = pending {
                    if now >= at {
                        in_force = to;
                        pending = None;
                    }
                }
                match change {
                    Some(l) => {
                        w.set_limit_at(l, now).unwrap();
                        if l <= in_force {
                            in_force = l;
                            pending = None;
                        } else {
                            pending = Some((l, now + period));
                        }
                    }
                    None => {
                        if w.try_acquire_n_at(n, now).is_ok() {
                            grants.push((now, u64::from(n)));
                            let held: u64 = grants
                                .iter()
                                .filter(|&&(t, _)| t + period > now)
                                .map(|&(_, m)| m)
                                .sum();
                            prop_assert!(held <= in_force, "{} in the window ending at {} with {} in force", held, now, in_force);
                        }
                    }
                }
            }
        }
    }
}

mod sliding_log {
    use super::*;
    use hotlimit::SlidingLog;
    use model::log::LogModel;

    #[test]
    fn bad_limits_leave_the_log_unchanged() {
        let mut log = SlidingLog::builder(rate(3, 1_000))
            .clock(ManualClock::new())
            .build()
            .unwrap();
        log.try_acquire_n_at(2, 0).unwrap();
        assert_eq!(log.set_limit(0).unwrap_err().field(), "limit");
        assert_eq!(log.set_limit(1 << 29).unwrap_err().field(), "limit");
        assert_eq!(log.limit(), 3);
        assert!(log.try_acquire_at(1).is_ok());
        assert!(log.try_acquire_at(2).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// Requests and limit changes at random, on a clock that moves forward: every decision
        /// and every retry equals the exact log's with every grant counted across the changes.
        #[test]
        fn changes_match_the_exact_log(
            first in 1u64..=20,
            steps in limit_changes(400, 6, 20),
        ) {
            let period = 1_000u64;
            let mut log = SlidingLog::builder(rate(first, period)).clock(ManualClock::new()).build().unwrap();
            let mut model = LogModel::new(first, period);
            let mut now = 0u64;
            for (i, &(gap, n, change)) in steps.iter().enumerate() {
                now += gap;
                match change {
                    Some(l) => {
                        log.set_limit(l).unwrap();
                        model.set_limit(l);
                        prop_assert_eq!(log.limit(), l);
                    }
                    None => {
                        let real = log.try_acquire_n_at(n, now).map_err(|d| d.retry_after_nanos());
                        let want = model.acquire(n, now);
                        prop_assert_eq!(real, want, "step {} at {}", i, now);
                    }
                }
            }
        }
    }
}
