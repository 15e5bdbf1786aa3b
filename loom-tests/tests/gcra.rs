//! Gcra under loom: concurrent grants never exceed the guarantee and no update is lost. The
//! planted `RacyGcra` (load, compute, store) must fail the same model.
#![cfg(hotlimit_loom)]

mod common;

use std::time::Duration;

use hotlimit::__planted_gcra::{RacyGcra, ReinstallingChange, StaleReload, TornChange, TornRead};
use hotlimit::{Gcra, Limiter, ManualClock, Rate};
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;

/// I = 10 ns; burst as given.
fn limiter(burst: u64, clock: &ManualClock) -> Gcra<ManualClock> {
    Gcra::builder(Rate::new(1, Duration::from_nanos(10)).unwrap())
        .burst(burst)
        .clock(clock.clone())
        .build()
        .unwrap()
}

/// Three threads race for a burst of 2 on a frozen clock: exactly 2 win, and the state
/// afterwards is exactly two grants' worth (no update lost). A thread can lose to each of the
/// others in turn, so the contention policy's reload (`src/contention.rs`: a fresh load of the
/// word after a loss, instead of the value the failed CAS returned; under loom after every
/// second loss) is explored too. `stale`: the planted `StaleReload`, which decides on the
/// value from before the reload.
fn three_race_for_two(stale: bool) {
    loom::model(move || {
        let clock = ManualClock::new();
        let g = Arc::new(limiter(2, &clock));
        let granted = Arc::new(AtomicU64::new(0));
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let (g, granted) = (g.clone(), granted.clone());
                thread::spawn(move || {
                    let ok = if stale {
                        StaleReload(&*g).try_acquire().is_ok()
                    } else {
                        g.try_acquire().is_ok()
                    };
                    if ok {
                        // Relaxed: read after join.
                        granted.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let granted = granted.load(Ordering::Relaxed);
        assert!(granted <= 2, "over-admitted: {granted} grants with burst 2");
        assert_eq!(granted, 2);
        assert_eq!(g.remaining_at(0), 0);
        // TAT is exactly 2·I: the next permit frees at 10 ns, not earlier.
        assert!(g.try_acquire_at(9).is_err());
        assert!(g.try_acquire_at(10).is_ok());
    });
}

#[test]
fn frozen_clock_three_threads_exactly_burst() {
    three_race_for_two(false);
}

#[test]
#[should_panic(expected = "over-admitted")]
fn stale_reload_is_caught() {
    three_race_for_two(true);
}

/// Weighted requests from two threads: all-or-nothing, never past the burst.
#[test]
fn frozen_clock_weighted_all_or_nothing() {
    loom::model(|| {
        let clock = ManualClock::new();
        let g = Arc::new(limiter(3, &clock));
        let (mine, theirs) = common::two_weighted_by_two(&g);
        // 2 + 2 > 3: exactly one of them wins, and 1 permit is left.
        assert!(mine ^ theirs, "mine={mine} theirs={theirs}");
        assert_eq!(g.remaining_at(0), 1);
    });
}

/// Two threads take permits while the main thread advances the clock by one interval. Each
/// worker reads the clock and records the `now` of every grant. Whatever the interleaving:
/// the grants stay within b + d/I, and no update is lost: the final state equals the GCRA
/// replay of the recorded grants (checked by whether one more request at t = 10 fits).
#[test]
fn advancing_clock_never_exceeds_bound_or_loses_updates() {
    loom::model(|| {
        let clock = ManualClock::new();
        let g = Arc::new(limiter(1, &clock));
        let grants = common::grants_while_the_clock_advances(&g, &clock, |g, now| {
            g.try_acquire_at(now).is_ok()
        });
        // All times lie in [0, 10]: at most b + 10/I = 2 grants; the first call always wins.
        assert!((1..=2).contains(&grants.len()), "grants {grants:?}");
        // Replay: S = max(S, now) + I. With burst 1 the grants that fit are the same in any
        // order, and so is the final S.
        let tat = grants.iter().fold(0u64, |s, &t| s.max(t) + 10);
        let expect_more = tat.max(10) + 10 <= 10 + 10;
        let more = g.try_acquire_at(10).is_ok();
        assert_eq!(more, expect_more, "grants {grants:?}, then more={more}");
    });
}

/// The planted bug: two threads both load TAT 0 and both store I, granting 2 with burst 1.
/// Loom must find that interleaving.
#[test]
#[should_panic(expected = "over-admitted")]
fn racy_gcra_is_caught() {
    loom::model(|| {
        let clock = ManualClock::new();
        let g = Arc::new(RacyGcra(limiter(1, &clock)));
        let g2 = g.clone();
        let t = thread::spawn(move || g2.try_acquire().is_ok());
        let mine = g.try_acquire().is_ok();
        let theirs = t.join().unwrap();
        assert!(
            !(mine && theirs),
            "over-admitted: both granted with burst 1"
        );
    });
}

/// The `fetch_add` reservation considered for the busy path in issue #5, and rejected: a
/// grant adds n·I to the TAT with one `fetch_add`, a failed grant takes it back with
/// `fetch_sub`, and a limiter whose TAT trails `now` is updated by CAS to now + n·I. It lives
/// here, not in the crate, only to show the model checker finding the interleaving described
/// in the guide (`hotlimit::guide`, "What a call costs, and why Gcra keeps its CAS"): the
/// take-back lands on a word another thread has meanwhile replaced, and the limiter over-admits.
struct FetchAddGcra {
    tat: AtomicU64,
    interval: u64,
    tolerance: u64,
}

impl FetchAddGcra {
    fn try_acquire_at(&self, now: u64) -> bool {
        let (cost, slack) = (self.interval, self.tolerance - self.interval);
        // Relaxed throughout: one word of state, as in Gcra.
        let mut tat = self.tat.load(Ordering::Relaxed);
        loop {
            if tat <= now {
                // Idle: the new TAT depends on `now`, so this needs a CAS.
                match self.tat.compare_exchange(
                    tat,
                    now + cost,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return true,
                    Err(current) => {
                        tat = current;
                        continue;
                    }
                }
            }
            if tat - now > slack {
                return false; // read-only denial
            }
            let old = self.tat.fetch_add(cost, Ordering::Relaxed);
            if old >= now && old - now <= slack {
                return true;
            }
            // The grant failed: take the reservation back.
            self.tat.fetch_sub(cost, Ordering::Relaxed);
            if old >= now {
                return false;
            }
            tat = self.tat.load(Ordering::Relaxed);
        }
    }
}

/// I = 10, burst 2, TAT 100. A and D ask at t = 95 (one fits), the main thread asks three
/// times at t = 300 (at most b = 2 may be granted at one instant). Loom finds: A loads 100, D
/// adds (granted), A adds and fails, a t = 300 request CASes the word to 310, A subtracts its
/// 10 from the new value, and two more t = 300 requests fit: three grants at t = 300.
#[test]
#[should_panic(expected = "over-admitted")]
fn fetch_add_reservation_with_fetch_sub_rollback_is_caught() {
    // The interleaving needs three preemptions (A after its load, A after its add, the main
    // thread after its first grant); the default bound in .ci/test is 2.
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let g = Arc::new(FetchAddGcra {
            tat: AtomicU64::new(100),
            interval: 10,
            tolerance: 20,
        });
        let early: Vec<_> = (0..2)
            .map(|_| {
                let g = g.clone();
                thread::spawn(move || g.try_acquire_at(95))
            })
            .collect();
        let late = (0..3).filter(|_| g.try_acquire_at(300)).count();
        for t in early {
            t.join().unwrap();
        }
        assert!(
            late <= 2,
            "over-admitted: {late} grants at t = 300 with burst 2"
        );
    });
}

/// The same scenario and bound on the real `Gcra`: its CAS never over-admits: exactly two
/// grants at t = 300 whatever the interleaving, and at most one of the two t = 95 requests.
#[test]
fn gcra_passes_the_fetch_add_counterexample() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let clock = ManualClock::new();
        let g = Arc::new(
            Gcra::builder(Rate::new(1, Duration::from_nanos(10)).unwrap())
                .burst(2)
                .clock(clock)
                .build()
                .unwrap(),
        );
        // TAT = max(0, 90) + 10 = 100, as in the counterexample.
        assert!(g.try_acquire_at(90).is_ok());
        let early: Vec<_> = (0..2)
            .map(|_| {
                let g = g.clone();
                thread::spawn(move || g.try_acquire_at(95).is_ok())
            })
            .collect();
        let late = (0..3).filter(|_| g.try_acquire_at(300).is_ok()).count();
        let early = early
            .into_iter()
            .map(|t| t.join().unwrap())
            .filter(|&ok| ok)
            .count();
        assert_eq!(late, 2, "exactly b = 2 grants at t = 300");
        // Both t = 95 requests fit only one permit, and none if the t = 300 ones came first.
        assert!(early <= 1, "{early} grants at t = 95 with one permit free");
    });
}

/// I = 10 ns, burst 2 (τ = 20), changed to I' = 5 ns, burst 2 (τ' = 10): faster, same burst.
fn old_and_new() -> (Rate, Rate) {
    (
        Rate::new(1, Duration::from_nanos(10)).unwrap(),
        Rate::new(1, Duration::from_nanos(5)).unwrap(),
    )
}

/// A `Gcra` at the old rate of [`old_and_new`] with `burst`, on a `ManualClock`.
fn old_gcra(burst: u64) -> Gcra<ManualClock> {
    Gcra::builder(old_and_new().0)
        .burst(burst)
        .clock(ManualClock::new())
        .build()
        .unwrap()
}

/// A worker calls `take` twice while this thread calls `change` and then `take` once; returns
/// the grants in all.
fn grants_around_a_change<G: Send + Sync + 'static>(
    g: &Arc<G>,
    take: fn(&G) -> bool,
    change: fn(&G),
) -> usize {
    let g2 = g.clone();
    let worker = thread::spawn(move || (0..2).filter(|_| take(&g2)).count());
    change(g);
    let mine = usize::from(take(g));
    worker.join().unwrap() + mine
}

/// A rate change racing grants on a frozen clock (every call at 0): a worker takes twice
/// while the main thread changes the rate and then takes once. Whatever the interleaving, at
/// most b = 2 permits are granted in all (the bound b + (s − t)/I + (t + d − s)/I' with every
/// time 0): the change frees nothing and loses no grant.
#[test]
fn rate_change_racing_grants_frees_nothing() {
    loom::model(|| {
        let g = Arc::new(old_gcra(2));
        let granted = grants_around_a_change(
            &g,
            |g| g.try_acquire_at(0).is_ok(),
            |g| g.set_rate_at(old_and_new().1, Some(2), 0).unwrap(),
        );
        assert!(granted <= 2, "over-admitted: {granted} grants with burst 2");
        assert_eq!(
            (g.burst(), g.emission_interval()),
            (2, Duration::from_nanos(5))
        );
    });
}

/// The planted twin: the change reads the TAT, then stores the parameters and the carried TAT
/// separately. Two grants between its read and its store are overwritten, and the main
/// thread's grant after it lands on the state it stored: 3 with burst 2. Loom must find it.
#[test]
#[should_panic(expected = "over-admitted")]
fn torn_rate_change_is_caught() {
    loom::model(|| {
        let g = Arc::new(TornChange(old_gcra(2)));
        let granted = grants_around_a_change(
            &g,
            |g| g.0.try_acquire_at(0).is_ok(),
            |g| g.set_rate_at(old_and_new().1, Some(2), 0),
        );
        assert!(granted <= 2, "over-admitted: {granted} grants with burst 2");
    });
}

/// A rate change racing a reservation's cancel, burst 1, every call at 0: a worker reserves
/// (ready at 0 if it is first) and cancels; the main thread changes the rate, then takes one.
/// The permits in use (granted, or reserved for 0 and not given back) never exceed 1: a cancel
/// that lands after the change fails (its permit stays counted), one before it gives the
/// permit back.
#[test]
fn rate_change_racing_cancel_and_grant() {
    loom::model(|| {
        let new = old_and_new().1;
        let g = Arc::new(old_gcra(1));
        let g2 = g.clone();
        let reserver = thread::spawn(move || match g2.reserve_n_at(1, 0, 100) {
            Ok(r) => r.ready_at() == 0 && !r.cancel(),
            Err(_) => false,
        });
        g.set_rate_at(new, Some(1), 0).unwrap();
        let granted = g.try_acquire_at(0).is_ok();
        let reserved = reserver.join().unwrap();
        assert!(
            usize::from(reserved) + usize::from(granted) <= 1,
            "over-admitted: reserved={reserved} granted={granted} with burst 1"
        );
    });
}

/// I = 10 ns, burst 4 (τ = 40) at first; the change makes it I' = 5 ns, burst 4 (τ' = 20).
/// After 4 grants at 0 the TAT is 40 and a request for 1 at 0 is denied: under the old set
/// it waits 40 − (40 − 10) = 10 ns; the change carries the TAT to 41 (the carry rule gives 20,
/// raised past the old TAT), where the new set says 41 − (20 − 5) = 26 ns. A mix of the two
/// sets says 30 ns (I, τ') or 5 ns (I', τ): a decision on parameters that never existed
/// together. `torn`: the planted `TornRead` (today's separate Relaxed reads, with no check
/// after them), which loom must catch.
fn denial_racing_a_change(torn: bool) {
    loom::model(move || {
        let g = Arc::new(
            Gcra::builder(Rate::new(1, Duration::from_nanos(10)).unwrap())
                .burst(4)
                .clock(ManualClock::new())
                .build()
                .unwrap(),
        );
        g.try_acquire_n_at(4, 0).unwrap();
        let g2 = g.clone();
        let request = thread::spawn(move || {
            let decided = if torn {
                TornRead(&*g2).try_acquire_n_at(1, 0)
            } else {
                g2.try_acquire_n_at(1, 0)
            };
            decided.map_err(|d| d.retry_after_nanos())
        });
        g.set_rate_at(Rate::new(1, Duration::from_nanos(5)).unwrap(), Some(4), 0)
            .unwrap();
        let decided = request.join().unwrap();
        assert!(
            matches!(decided, Err(Some(10 | 26))),
            "mixed parameters: {decided:?} (old set: 10 ns, new set: 26 ns)"
        );
    });
}

#[test]
fn a_denial_racing_a_change_is_decided_on_one_parameter_set() {
    denial_racing_a_change(false);
}

#[test]
#[should_panic(expected = "mixed parameters")]
fn torn_parameter_read_is_caught() {
    denial_racing_a_change(true);
}

/// The ABA case: a change whose carry rule alone gives back the very TAT a racing request
/// loaded. I = 10 ns, b = 4 (τ = 40) with one grant at 0 (TAT 10), changed to I' = 5 ns, b' = 5
/// (τ' = 25): the 30 ns free carry as 15 ns, so the rule alone puts the TAT back at 10. A
/// request for 2 at 0 races it. Sequentially it is granted either before the change (TAT 30,
/// carried to 31 by the real rule, which raises the TAT past every value the word held) or
/// after it (TAT 11, then 21): the outcome is (granted, TAT) ∈ {(yes, 31), (yes, 21)}.
/// `twin`: today's separate Relaxed reads with no check after them (`TornRead`) and a change
/// that reinstalls the TAT (`ReinstallingChange`, the rule raised only to the old TAT, so its
/// own sequential outcomes are (yes, 30) and (yes, 20)). Reading I from before the change and
/// τ' from after it decides a denial (wait 5 ns) that no parameter set gives, and the
/// reinstalled TAT lets it stand: loom must catch it.
fn request_racing_a_reinstalling_change(twin: bool) {
    loom::model(move || {
        let g = Arc::new(
            Gcra::builder(Rate::new(1, Duration::from_nanos(10)).unwrap())
                .burst(4)
                .clock(ManualClock::new())
                .build()
                .unwrap(),
        );
        g.try_acquire_at(0).unwrap();
        let g2 = g.clone();
        let worker = thread::spawn(move || {
            if twin {
                TornRead(&*g2).try_acquire_n_at(2, 0).is_ok()
            } else {
                g2.try_acquire_n_at(2, 0).is_ok()
            }
        });
        let new = Rate::new(1, Duration::from_nanos(5)).unwrap();
        if twin {
            ReinstallingChange(&*g).set_rate_at(new, Some(5), 0);
        } else {
            g.set_rate_at(new, Some(5), 0).unwrap();
        }
        let granted = worker.join().unwrap();
        let tat = g.reset_at(0).as_nanos();
        let sequential: [(bool, u128); 2] = if twin {
            [(true, 30), (true, 20)]
        } else {
            [(true, 31), (true, 21)]
        };
        assert!(
            sequential.contains(&(granted, tat)),
            "mixed parameters: granted {granted}, TAT {tat}; sequential: {sequential:?}"
        );
    });
}

#[test]
fn a_request_racing_a_change_that_would_reinstall_its_tat_is_one_set() {
    request_racing_a_reinstalling_change(false);
}

#[test]
#[should_panic(expected = "mixed parameters")]
fn reinstalled_tat_with_torn_reads_is_caught() {
    request_racing_a_reinstalling_change(true);
}
