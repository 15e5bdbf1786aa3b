//! GcraPair against two GCRA models applied together: worked examples, denials that charge
//! neither rate, configuration errors naming each field, clocks that misbehave, and property
//! tests comparing every decision and retry_after with the sequential model.

mod model;

use std::time::Duration;

use hotlimit::{Gcra, GcraPair, Limiter, ManualClock, Rate};
use model::gcra_pair::AllGcraModel;
use model::trace::{no_difference, rate, trace};
use proptest::prelude::*;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

fn pair(first: Rate, b1: u64, second: Rate, b2: u64) -> GcraPair<ManualClock> {
    GcraPair::builder(first, second)
        .first_burst(b1)
        .second_burst(b2)
        .clock(ManualClock::new())
        .build()
        .unwrap()
}

/// "10 per second AND 1,000 per hour", bursts 10 and 1,000: one request every 100 ms passes
/// the per-second rate every time; the hour's burst runs out after 1,028 (the 1,000 plus what
/// drained meanwhile: g grants by t = g·100 ms while (g + 1)·3.6 s ≤ t + 3,600 s).
#[test]
fn ten_per_second_and_a_thousand_per_hour() {
    let p = pair(
        Rate::per_second(10).unwrap(),
        10,
        Rate::per_hour(1_000).unwrap(),
        1_000,
    );
    let mut granted = 0u64;
    let mut now = 0;
    while granted < 2_000 && p.try_acquire_at(now).is_ok() {
        granted += 1;
        now += 100 * MS;
    }
    assert_eq!(granted, 1_028, "now={now}");
    // Denied by the hour rate, with its wait (the second's is 0): S₂ + I₂ − (now + τ₂).
    let d = p.try_acquire_at(now).unwrap_err();
    let i2 = 3_600 * MS;
    assert_eq!(d.retry_after_nanos(), Some(1_029 * i2 - 1_000 * i2 - now));
    let later = now + d.retry_after_nanos().unwrap();
    assert!(p.try_acquire_at(later - 1).is_err());
    assert_eq!(p.try_acquire_at(later), Ok(()));
}

/// Two sequential `Gcra`s (the wrong way) burn the first rate's quota on every request the
/// second denies; the pair charges neither.
#[test]
fn a_denial_charges_neither_rate() {
    // 5 per hour (I₁ = 720 s) and 3 per minute (I₂ = 20 s).
    let (r1, r2) = (Rate::per_hour(5).unwrap(), Rate::per_minute(3).unwrap());
    let g1 = Gcra::builder(r1).clock(ManualClock::new()).build().unwrap();
    let g2 = Gcra::builder(r2).clock(ManualClock::new()).build().unwrap();
    let p = pair(r1, 5, r2, 3);
    let wrong = |n, now| {
        g1.try_acquire_n_at(n, now)
            .and_then(|()| g2.try_acquire_n_at(n, now))
            .is_ok()
    };
    // At 0: 3 pass both; then two single requests that the minute rate denies.
    assert!(wrong(3, 0) && p.try_acquire_n_at(3, 0).is_ok());
    for _ in 0..2 {
        assert!(!wrong(1, 0) && p.try_acquire_at(0).is_err());
    }
    // At 60 s the minute rate is full again. The sequence spent the hour's 5 (3 granted, 2
    // burned): nothing until 720 s. The pair still has the hour's 2.
    assert!(!wrong(1, 60 * S));
    assert_eq!(g1.remaining_at(60 * S), 0);
    assert_eq!(p.remaining_at(60 * S), 2);
    assert!(p.try_acquire_at(60 * S).is_ok() && p.try_acquire_at(60 * S).is_ok());
    assert!(p.try_acquire_at(60 * S).is_err());
}

#[test]
fn retry_after_is_the_later_wait_and_exact() {
    // I₁ = 100 ms, b₁ = 2; I₂ = 1 s, b₂ = 3.
    let p = pair(
        Rate::per_second(10).unwrap(),
        2,
        Rate::per_second(1).unwrap(),
        3,
    );
    p.try_acquire_n_at(2, 0).unwrap();
    // First waits 100 ms, second admits: 100 ms.
    assert_eq!(
        p.try_acquire_at(0).unwrap_err().retry_after_nanos(),
        Some(100 * MS)
    );
    p.try_acquire_at(100 * MS).unwrap(); // S₂ = 3 s = τ₂
                                         // At 200 ms both deny n = 2: the first waits 500 − 400 = 100 ms, the second 5 − 3.2 s.
    let d = p.try_acquire_n_at(2, 200 * MS).unwrap_err();
    assert_eq!(d.retry_after_nanos(), Some(1_800 * MS));
    assert!(p.try_acquire_n_at(2, 2 * S - 1).is_err());
    assert_eq!(p.try_acquire_n_at(2, 2 * S), Ok(()));
    // More than either burst: never.
    assert_eq!(
        p.try_acquire_n_at(3, 10 * S).unwrap_err().retry_after(),
        None
    );
    assert_eq!(p.try_acquire_n_at(0, 0), Ok(()));
}

#[test]
fn clocks_that_misbehave() {
    let p = pair(
        Rate::per_second(1).unwrap(),
        1,
        Rate::per_second(2).unwrap(),
        2,
    );
    p.try_acquire_at(10 * S).unwrap();
    // Going back frees nothing.
    assert!(p.try_acquire_at(0).is_err());
    assert!(p.try_acquire_at(10 * S).is_err());
    // Near the end of the clock's range: nothing panics; a TAT that would not fit is "never".
    let d = p.try_acquire_at(u64::MAX).unwrap_err();
    assert_eq!(d.retry_after(), None);
    assert!(p.try_acquire_at(u64::MAX - S).is_ok());
    assert!(p.try_acquire_at(u64::MAX).is_err());
}

#[test]
fn config_errors_name_the_field() {
    let ok = Rate::per_second(10).unwrap();
    let fast = Rate::new(10, Duration::from_nanos(5)).unwrap();
    let build = |r1, b1, r2, b2| {
        GcraPair::builder(r1, r2)
            .first_burst(b1)
            .second_burst(b2)
            .clock(ManualClock::new())
            .build()
            .map(drop)
            .map_err(|e| (e.field(), e.to_string()))
    };
    assert_eq!(build(fast, 1, ok, 1).unwrap_err().0, "first_rate");
    assert_eq!(build(ok, 1, fast, 1).unwrap_err().0, "second_rate");
    assert_eq!(
        build(ok, 0, ok, 1).unwrap_err(),
        (
            "first_burst",
            "invalid first_burst = 0: must be at least 1".into()
        )
    );
    assert_eq!(build(ok, 1, ok, 0).unwrap_err().0, "second_burst");
    let (field, msg) = build(ok, 1, ok, u64::MAX).unwrap_err();
    assert_eq!(field, "second_burst");
    assert!(msg.contains("overflows"), "{msg}");
    assert!(build(ok, 1, ok, 1).is_ok());
}

#[test]
fn accessors_and_debug() {
    let p = pair(
        Rate::per_second(4).unwrap(),
        2,
        Rate::per_hour(100).unwrap(),
        7,
    );
    assert_eq!(p.bursts(), (2, 7));
    assert_eq!(
        p.emission_intervals(),
        (Duration::from_millis(250), Duration::from_secs(36))
    );
    assert_eq!(
        p.rates(),
        (Rate::per_second(4).unwrap(), Rate::per_hour(100).unwrap())
    );
    let s = format!("{p:?}");
    assert!(
        s.contains("GcraPair") && s.contains("bursts: (2, 7)"),
        "{s}"
    );
    let d = GcraPair::new(Rate::per_second(4).unwrap(), Rate::per_hour(100).unwrap()).unwrap();
    assert!(d.try_acquire().is_ok());
    assert_eq!(d.remaining(), 3);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6_000))]

    /// Every decision and every retry_after equals that of two GCRA models applied together,
    /// on random weighted traces (clock forward, back, and near the end of its range).
    #[test]
    fn matches_two_gcra_models(
        (r1, r2, steps) in (rate(), rate()).prop_flat_map(|(r1, r2)| {
            // Sizes and gaps scaled to the larger burst and the longer period, so that both
            // rates are exercised, each sometimes the one that denies.
            (Just(r1), Just(r2), trace(r1.2.max(r2.2), r1.1.max(r2.1), 120))
        })
    ) {
        let rate = |(l, p, _): (u64, u64, u64)| Rate::new(l, Duration::from_nanos(p)).unwrap();
        let p = pair(rate(r1), r1.2, rate(r2), r2.2);
        let mut model = AllGcraModel::new(&[r1, r2]);
        no_difference(
            &steps,
            |n, now| p.try_acquire_n_at(n, now).map_err(|d| d.retry_after_nanos()),
            |n, now| model.acquire(n, now),
        )?;
    }
}
