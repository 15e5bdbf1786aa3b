//! Issue 43: exact under live rate changes. Every limiter with live changes, against the
//! documented change rule: lowering a limit and raising it again frees nothing (deterministic
//! and against the sequential models in `tests/model/`), and threads granting while another
//! alternates rates 1,000× apart (bursts 1–100, frozen and advancing `ManualClock`) never pass
//! the bound and never panic (a torn parameter read used to underflow in debug builds).

mod model;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hotlimit::{
    Gcra, IntKeyed, Keyed, ManualClock, Pacer, Rate, ShardedGcra, SlidingLog, SlidingWindow,
};
use model::log::LogModel;
use proptest::prelude::*;

fn rate(limit: u64, period_ns: u64) -> Rate {
    Rate::new(limit, Duration::from_nanos(period_ns)).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Lower, then raise again, at one instant: the grants in between keep counting.

#[test]
fn sliding_log_lowered_and_raised_at_one_instant_frees_nothing() {
    let mut log = SlidingLog::builder(rate(50, 1_000_000))
        .clock(ManualClock::new())
        .build()
        .unwrap();
    log.try_acquire_n_at(50, 0).unwrap();
    log.set_limit(3).unwrap();
    log.set_limit(50).unwrap();
    let denied = log.try_acquire_at(0).unwrap_err();
    assert_eq!(
        denied.retry_after_nanos(),
        Some(1_000_000),
        "all 50 still count"
    );
    // They leave together: then the whole limit is free again.
    assert!(log.try_acquire_n_at(50, 1_000_000).is_ok());
}

#[test]
fn keyed_log_lowered_and_raised_at_one_instant_frees_nothing() {
    let k: Keyed<u64, SlidingLog, ManualClock> = Keyed::sliding_log(rate(50, 1_000_000))
        .clock(ManualClock::new())
        .build()
        .unwrap();
    k.try_acquire_n_at(&7, 50, 0).unwrap();
    // A per-key override down and back, then the default down and back.
    k.set_rate(7, rate(3, 1_000_000)).unwrap();
    k.clear_rate(&7);
    assert!(
        k.try_acquire_at(&7, 0).is_err(),
        "per-key change freed a permit"
    );
    k.set_default_rate(rate(3, 1_000_000)).unwrap();
    k.set_default_rate(rate(50, 1_000_000)).unwrap();
    assert_eq!(
        k.try_acquire_at(&7, 0).unwrap_err().retry_after_nanos(),
        Some(1_000_000),
        "default change freed a permit"
    );
    assert!(k.try_acquire_n_at(&7, 50, 1_000_000).is_ok());
}

#[test]
fn keyed_window_lowered_and_raised_at_one_instant_frees_nothing() {
    let k: Keyed<u64, SlidingWindow, ManualClock> = Keyed::sliding_window(rate(50, 1_000_000))
        .clock(ManualClock::new())
        .build()
        .unwrap();
    k.try_acquire_n_at(&7, 50, 0).unwrap();
    k.set_rate(7, rate(3, 1_000_000)).unwrap();
    k.clear_rate(&7);
    assert!(
        k.try_acquire_at(&7, 0).is_err(),
        "per-key change freed a permit"
    );
    k.set_default_rate(rate(3, 1_000_000)).unwrap();
    k.set_default_rate(rate(50, 1_000_000)).unwrap();
    assert!(
        k.try_acquire_at(&7, 0).is_err(),
        "default change freed a permit"
    );
    // The window frees them once they leave it (a bucket's width after the period at most).
    assert!(k.try_acquire_n_at(&7, 50, 2_000_000).is_ok());
}

#[test]
fn core_sliding_window_lowered_and_raised_at_one_instant_frees_nothing() {
    let w = SlidingWindow::builder(rate(50, 1_000_000))
        .clock(ManualClock::new())
        .build()
        .unwrap();
    w.try_acquire_n_at(50, 0).unwrap();
    w.set_limit_at(3, 0).unwrap();
    w.set_limit_at(50, 0).unwrap();
    assert!(w.try_acquire_at(0).is_err());
}

// ---------------------------------------------------------------------------------------------
// Property tests against the sequential models, with lower-then-raise pairs at one instant.

/// A step: `Grant(gap, key, n)` or `Change(gap, key-or-default, limit, then)` where `then`
/// is a second limit set at the same instant (a lower-then-raise when it is larger).
#[derive(Clone, Debug)]
enum Step {
    Grant(u64, u64, u32),
    Change(u64, Option<u64>, u64, Option<u64>),
}

fn steps(limit_max: u64) -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![
            5 => (0u64..=300, 0u64..2, 1u32..=6).prop_map(|(g, k, n)| Step::Grant(g, k, n)),
            2 => (
                0u64..=300,
                prop::option::of(0u64..2),
                1u64..=limit_max,
                prop::option::of(1u64..=limit_max),
            )
                .prop_map(|(g, k, l, t)| Step::Change(g, k, l, t)),
        ],
        1..100,
    )
}

/// The limit in force for `key`: its override, else the default.
fn in_force(default: u64, overrides: &[Option<u64>; 2], key: u64) -> u64 {
    overrides[key as usize].unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Core `SlidingLog`: every decision and retry equals the exact log's, every grant counted
    /// across any sequence of limit changes, lower-then-raise at one instant included.
    #[test]
    fn sliding_log_matches_the_exact_log_across_changes(first in 1u64..=20, trace in steps(20)) {
        let period = 1_000u64;
        let mut log = SlidingLog::builder(rate(first, period)).clock(ManualClock::new()).build().unwrap();
        let mut model = LogModel::new(first, period);
        let mut now = 0u64;
        for (i, step) in trace.iter().enumerate() {
            match *step {
                Step::Change(gap, _, l, then) => {
                    now += gap;
                    for l in std::iter::once(l).chain(then) {
                        log.set_limit(l).unwrap();
                        model.set_limit(l);
                    }
                }
                Step::Grant(gap, _, n) => {
                    now += gap;
                    let real = log.try_acquire_n_at(n, now).map_err(|d| d.retry_after_nanos());
                    prop_assert_eq!(real, model.acquire(n, now), "step {} at {}", i, now);
                }
            }
        }
    }

    /// `Keyed<_, SlidingLog>`, two keys, per-key overrides and default changes (each maybe
    /// followed by a second at the same instant): every decision and retry equals an exact
    /// log per key under the limit in force for it, every grant counted across the changes.
    #[test]
    fn keyed_log_matches_the_exact_log_across_changes(first in 1u64..=20, trace in steps(20)) {
        let period = 1_000u64;
        let k: Keyed<u64, SlidingLog, ManualClock> = Keyed::sliding_log(rate(first, period))
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let mut models = [LogModel::new(first, period), LogModel::new(first, period)];
        let (mut default, mut overrides) = (first, [None, None]);
        let mut now = 0u64;
        for (i, step) in trace.iter().enumerate() {
            match *step {
                Step::Change(gap, key, l, then) => {
                    now += gap;
                    k.clock().set(Duration::from_nanos(now));
                    for l in std::iter::once(l).chain(then) {
                        match key {
                            Some(key) => {
                                k.set_rate(key, rate(l, period)).unwrap();
                                overrides[key as usize] = Some(l);
                            }
                            None => {
                                k.set_default_rate(rate(l, period)).unwrap();
                                default = l;
                            }
                        }
                        for key in 0..2 {
                            models[key as usize].set_limit(in_force(default, &overrides, key));
                        }
                    }
                }
                Step::Grant(gap, key, n) => {
                    now += gap;
                    let real = k.try_acquire_n_at(&key, n, now).map_err(|d| d.retry_after_nanos());
                    let want = models[key as usize].acquire(n, now);
                    prop_assert_eq!(real, want, "step {} key {} at {}", i, key, now);
                }
            }
        }
    }

    /// `Keyed<_, SlidingWindow>` (strict, bucketed: its decisions may deny early, never admit
    /// more): across the same changes, every grant leaves every window of `period` ending at
    /// it within the limit in force at that time, counting every earlier grant of the key.
    #[test]
    fn keyed_window_never_passes_the_limit_in_force(first in 1u64..=20, trace in steps(20)) {
        let period = 1_000u64;
        let k: Keyed<u64, SlidingWindow, ManualClock> = Keyed::sliding_window(rate(first, period))
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let mut grants: [Vec<(u64, u64)>; 2] = [Vec::new(), Vec::new()];
        let (mut default, mut overrides) = (first, [None, None]);
        let mut now = 0u64;
        for (i, step) in trace.iter().enumerate() {
            match *step {
                Step::Change(gap, key, l, then) => {
                    now += gap;
                    k.clock().set(Duration::from_nanos(now));
                    for l in std::iter::once(l).chain(then) {
                        match key {
                            Some(key) => {
                                k.set_rate(key, rate(l, period)).unwrap();
                                overrides[key as usize] = Some(l);
                            }
                            None => {
                                k.set_default_rate(rate(l, period)).unwrap();
                                default = l;
                            }
                        }
                    }
                }
                Step::Grant(gap, key, n) => {
                    now += gap;
                    if k.try_acquire_n_at(&key, n, now).is_ok() {
                        let g = &mut grants[key as usize];
                        g.push((now, u64::from(n)));
                        let counted: u64 =
                            g.iter().filter(|&&(t, _)| t + period > now).map(|&(_, m)| m).sum();
                        let limit = in_force(default, &overrides, key);
                        prop_assert!(
                            counted <= limit,
                            "step {}: key {} holds {} in a window, limit {}", i, key, counted, limit
                        );
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Racing: four threads granting while this one alternates rates 1,000× apart.

const THREADS: u32 = 4;
const CALLS: u32 = 4_000;
const CHANGES: u64 = 1_000;

/// `THREADS` threads call `acquire(limiter, now, thread, i)` (returning the permits granted)
/// with `now` read from `clock`, while this thread calls `change(limiter, k)` for k = 0, 1, ...
/// until it made `CHANGES` changes and every thread made `CALLS` calls (so the two overlap
/// however the threads are scheduled); when `advance` is set it also moves the clock 1 µs
/// after every change. Returns the permits granted, by the `now` they were granted at.
fn race<L: Send + Sync + 'static>(
    limiter: &Arc<L>,
    clock: &ManualClock,
    advance: bool,
    acquire: fn(&L, u64, u32, u32) -> u64,
    change: impl Fn(&L, u64),
) -> Vec<(u64, u64)> {
    let grants = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU32::new(0));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (l, grants, clock) = (limiter.clone(), grants.clone(), clock.clone());
            let (stop, done) = (stop.clone(), done.clone());
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                let mut i = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    let now = hotlimit::Clock::now(&clock);
                    let n = acquire(&l, now, t, i);
                    if n > 0 {
                        mine.push((now, n));
                    }
                    i = i.wrapping_add(1);
                    if i == CALLS {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
                grants.lock().unwrap().extend(mine);
            })
        })
        .collect();
    let mut k = 0u64;
    while k < CHANGES || done.load(Ordering::Relaxed) < THREADS {
        change(limiter, k);
        if advance {
            clock.advance(Duration::from_micros(1));
        }
        k += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join()
            .expect("a thread panicked (a torn parameter read?)");
    }
    let mut all = Arc::try_unwrap(grants).unwrap().into_inner().unwrap();
    all.sort_unstable();
    all
}

/// Rates alternate between 1,000/s and 1,000,000/s (1,000× apart), bursts cycle 1..=100.
fn alternating(k: u64) -> (Rate, u64) {
    let limit = if k.is_multiple_of(2) {
        1_000_000
    } else {
        1_000
    };
    (Rate::per_second(limit).unwrap(), 1 + (k * 37) % 100)
}

fn total(grants: &[(u64, u64)]) -> u64 {
    grants.iter().map(|&(_, n)| n).sum()
}

/// GCRA's bound over an advancing clock, loosely: at most the largest burst in force plus one
/// permit per fastest interval (1 µs) over the whole run, since a change frees nothing.
fn gcra_run_bound(grants: &[(u64, u64)], first_burst: u64) -> u64 {
    let span = grants.last().map_or(0, |&(t, _)| t);
    first_burst.max(100) + span / 1_000 + 1
}

fn n_of(t: u32, i: u32) -> u32 {
    1 + (t * 7 + i) % 3
}

#[test]
fn gcra_racing_changes_on_a_frozen_clock_never_pass_the_first_burst() {
    let clock = ManualClock::new();
    let g = Arc::new(
        Gcra::builder(Rate::per_second(1_000).unwrap())
            .burst(60)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let grants = race(
        &g,
        &clock,
        false,
        |g, now, t, i| {
            let n = n_of(t, i);
            // Denials read back too: `remaining_at` decides on one parameter set as well.
            let _ = g.remaining_at(now);
            g.try_acquire_n_at(n, now).map_or(0, |()| u64::from(n))
        },
        |g, k| {
            let (r, b) = alternating(k);
            g.set_rate_at(r, Some(b), 0).unwrap();
        },
    );
    assert!(
        total(&grants) <= 60,
        "{} permits with burst 60 at one instant",
        total(&grants)
    );
}

#[test]
fn gcra_racing_changes_on_an_advancing_clock_keep_the_bound() {
    let clock = ManualClock::new();
    let g = Arc::new(
        Gcra::builder(Rate::per_second(1_000).unwrap())
            .burst(60)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let c = clock.clone();
    let grants = race(
        &g,
        &clock,
        true,
        |g, now, t, i| {
            let n = n_of(t, i);
            g.try_acquire_n_at(n, now).map_or(0, |()| u64::from(n))
        },
        move |g, k| {
            let (r, b) = alternating(k);
            g.set_rate_at(r, Some(b), hotlimit::Clock::now(&c)).unwrap();
        },
    );
    assert!(total(&grants) <= gcra_run_bound(&grants, 60));
}

#[test]
fn sharded_racing_changes_on_a_frozen_clock_never_pass_the_first_burst() {
    let clock = ManualClock::new();
    let g = Arc::new(
        ShardedGcra::builder(Rate::per_second(1_000).unwrap())
            .burst(64)
            .shards(2)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let grants = race(
        &g,
        &clock,
        false,
        |g, now, t, i| {
            let n = n_of(t, i);
            g.try_acquire_n_on_at(t as usize, n, now)
                .map_or(0, |()| u64::from(n))
        },
        |g, k| {
            let (r, b) = alternating(k);
            // Each of the 2 shards needs a permit of the burst.
            g.set_rate_at(r, Some(b.max(2)), 0).unwrap();
        },
    );
    assert!(
        total(&grants) <= 64,
        "{} permits with burst 64 at one instant",
        total(&grants)
    );
}

#[test]
fn sharded_racing_changes_on_an_advancing_clock_keep_the_bound() {
    let clock = ManualClock::new();
    let g = Arc::new(
        ShardedGcra::builder(Rate::per_second(1_000).unwrap())
            .burst(64)
            .shards(2)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let c = clock.clone();
    let grants = race(
        &g,
        &clock,
        true,
        |g, now, t, i| {
            let n = n_of(t, i);
            g.try_acquire_n_on_at(t as usize, n, now)
                .map_or(0, |()| u64::from(n))
        },
        move |g, k| {
            let (r, b) = alternating(k);
            g.set_rate_at(r, Some(b.max(2)), hotlimit::Clock::now(&c))
                .unwrap();
        },
    );
    assert!(total(&grants) <= gcra_run_bound(&grants, 64));
}

#[test]
fn int_keyed_racing_changes_on_a_frozen_clock_never_pass_the_first_burst() {
    let clock = ManualClock::new();
    let k: Arc<IntKeyed<u64, ManualClock>> = Arc::new(
        IntKeyed::builder(Rate::per_second(1_000).unwrap())
            .burst(60)
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    // The key exists before the race: its free permits at t = 0 are 59 from then on.
    k.try_acquire_at(7, 0).unwrap();
    let grants = race(
        &k,
        &clock,
        false,
        |k, now, t, i| {
            let n = n_of(t, i);
            k.try_acquire_n_at(7, n, now).map_or(0, |()| u64::from(n))
        },
        |k, j| {
            let (r, b) = alternating(j);
            k.set_rate_at(r, Some(b), 0).unwrap();
        },
    );
    assert!(
        total(&grants) <= 59,
        "{} permits with 59 free at one instant",
        total(&grants)
    );
}

#[test]
fn pacer_racing_changes_on_a_frozen_clock_hand_out_one_slot_now() {
    let clock = ManualClock::new();
    let p = Arc::new(
        Pacer::builder(Rate::per_second(1_000).unwrap())
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    let slots = Arc::new(Mutex::new(Vec::new()));
    let s = slots.clone();
    let grants = race(
        &p,
        &clock,
        false,
        |p, now, _, _| match p.next_slot_at(now) {
            // A slot due now counts as a grant at this instant; later ones are scheduled.
            Ok(slot) => u64::from(slot <= now),
            Err(_) => 0,
        },
        move |p, k| {
            let (r, _) = alternating(k);
            p.set_rate_at(r, 0).unwrap();
            s.lock().unwrap().push(k);
        },
    );
    assert!(slots.lock().unwrap().len() as u64 >= CHANGES);
    // At t = 0 the pacer had one slot due; a change frees none.
    assert!(
        total(&grants) <= 1,
        "{} slots due at one instant",
        total(&grants)
    );
}

/// A `Keyed` race on key 7: the changer alternates the key's override and the default
/// between limits 50 and 3 (and 50 again). Every grant at one instant counts in one window:
/// at most 50 in all.
fn keyed_race<L>(k: Keyed<u64, L, ManualClock>) -> u64
where
    L: hotlimit::KeyedState + 'static,
    Keyed<u64, L, ManualClock>: Send + Sync,
{
    let clock = k.clock().clone();
    let k = Arc::new(k);
    let grants = race(
        &k,
        &clock,
        false,
        |k, now, t, i| {
            let n = n_of(t, i);
            k.try_acquire_n_at(&7, n, now).map_or(0, |()| u64::from(n))
        },
        |k, j| {
            let limit = if j.is_multiple_of(2) { 3 } else { 50 };
            if j % 4 < 2 {
                k.set_rate(7, rate(limit, 1_000_000)).unwrap();
            } else {
                k.clear_rate(&7);
                k.set_default_rate(rate(limit, 1_000_000)).unwrap();
            }
        },
    );
    total(&grants)
}

#[test]
fn keyed_log_racing_changes_at_one_instant_never_pass_the_limit() {
    let k = Keyed::sliding_log(rate(50, 1_000_000))
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let granted = keyed_race::<SlidingLog>(k);
    assert!(
        granted <= 50,
        "{granted} permits at one instant, limit at most 50"
    );
}

#[test]
fn keyed_window_racing_changes_at_one_instant_never_pass_the_limit() {
    let k = Keyed::sliding_window(rate(50, 1_000_000))
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let granted = keyed_race::<SlidingWindow>(k);
    assert!(
        granted <= 50,
        "{granted} permits at one instant, limit at most 50"
    );
}

#[test]
fn keyed_gcra_racing_changes_at_one_instant_never_pass_the_first_burst() {
    let k = Keyed::gcra(rate(50, 1_000_000))
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let granted = keyed_race::<Gcra>(k);
    assert!(
        granted <= 50,
        "{granted} permits at one instant, burst at most 50"
    );
}
