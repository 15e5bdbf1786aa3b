//! GcraMulti against k GCRA models applied together: worked examples, errors naming fields,
//! and property tests comparing every decision and retry_after with the sequential model.

mod model;

use std::time::Duration;

use hotlimit::{GcraMulti, GcraPair, Limiter, ManualClock, Rate};
use model::gcra_pair::AllGcraModel;
use model::trace::{no_difference, rate, trace};
use proptest::prelude::*;

const S: u64 = 1_000_000_000;

fn multi(rates: &[(u64, u64, u64)], snapshots: usize) -> GcraMulti<ManualClock> {
    let mut b = GcraMulti::builder()
        .snapshots(snapshots)
        .clock(ManualClock::new());
    for &(l, p, burst) in rates {
        b = b.rate_with_burst(Rate::new(l, Duration::from_nanos(p)).unwrap(), burst);
    }
    b.build().unwrap()
}

#[test]
fn three_rates_all_or_nothing() {
    // 5 per second (burst 5), 6 per minute (burst 6), 7 per hour (burst 3).
    let g = multi(&[(5, S, 5), (6, 60 * S, 6), (7, 3_600 * S, 3)], 4);
    assert!(g.try_acquire_n_at(3, 0).is_ok());
    // The hour's burst of 3 is spent: denied with its wait (I₃ = 3600/7 s, rounded up).
    let i3 = (3_600 * S).div_ceil(7);
    let d = g.try_acquire_at(0).unwrap_err();
    assert_eq!(d.retry_after_nanos(), Some(i3));
    // The denial charged nothing: at I₃ exactly one more fits (the other rates had room).
    assert!(g.try_acquire_at(i3 - 1).is_err());
    assert!(g.try_acquire_at(i3).is_ok());
    assert!(g.try_acquire_at(i3).is_err());
    assert_eq!(g.try_acquire_n_at(4, i3).unwrap_err().retry_after(), None); // > b₃
    assert_eq!(g.try_acquire_n_at(0, 0), Ok(()));
}

#[test]
fn two_rates_agree_with_gcra_pair() {
    let (r1, r2) = (Rate::per_second(3).unwrap(), Rate::per_minute(10).unwrap());
    let m = GcraMulti::builder()
        .rate(r1)
        .rate(r2)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let p = GcraPair::builder(r1, r2)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    for i in 0..200u64 {
        let (n, now) = ((i % 4) as u32, i * 150_000_000);
        assert_eq!(
            m.try_acquire_n_at(n, now),
            p.try_acquire_n_at(n, now),
            "i={i}"
        );
    }
}

#[test]
fn config_errors_name_the_field() {
    let ok = Rate::per_second(10).unwrap();
    let fast = Rate::new(10, Duration::from_nanos(5)).unwrap();
    let b = || GcraMulti::builder().clock(ManualClock::new());
    let field = |r: Result<GcraMulti<ManualClock>, hotlimit::ConfigError>| r.unwrap_err().field();
    assert_eq!(field(b().build()), "rates");
    assert_eq!(field(b().rate(ok).rate(ok).rate(fast).build()), "rates[2]");
    assert_eq!(
        field(b().rate(ok).rate_with_burst(ok, 0).build()),
        "bursts[1]"
    );
    assert_eq!(
        field(b().rate_with_burst(ok, u64::MAX).build()),
        "bursts[0]"
    );
    assert_eq!(field(b().rate(ok).snapshots(2).build()), "snapshots");
    assert_eq!(field(b().rate(ok).snapshots(257).build()), "snapshots");
    let mut nine = b();
    for _ in 0..9 {
        nine = nine.rate(ok);
    }
    assert_eq!(
        nine.build().unwrap_err().to_string(),
        "invalid rates = 9: must be between 1 and 8 rates"
    );
    assert!(b().rate(ok).snapshots(3).build().is_ok());
    assert!(b().rate(ok).snapshots(256).build().is_ok());
}

#[test]
fn accessors_debug_and_default_clock() {
    let g = multi(&[(4, S, 2), (100, 3_600 * S, 7), (1, S, 1)], 5);
    assert_eq!(g.bursts(), vec![2, 7, 1]);
    assert_eq!(g.emission_intervals()[0], Duration::from_millis(250));
    assert_eq!(g.rates().len(), 3);
    g.try_acquire_at(0).unwrap();
    let s = format!("{g:?}");
    assert!(s.contains("GcraMulti") && s.contains("snapshots: 5"), "{s}");
    assert!(
        s.contains("tat_ns: [250000000, 36000000000, 1000000000]"),
        "{s}"
    );
    let d = GcraMulti::builder()
        .rate(Rate::per_second(4).unwrap())
        .rate(Rate::per_hour(100).unwrap())
        .build()
        .unwrap();
    assert!(d.try_acquire().is_ok());
    assert_eq!(d.remaining(), 3);
}

#[test]
fn clocks_that_misbehave() {
    let g = multi(&[(1, S, 1), (2, S, 2), (3, S, 3)], 3);
    g.try_acquire_at(10 * S).unwrap();
    assert!(g.try_acquire_at(0).is_err());
    assert_eq!(g.try_acquire_at(u64::MAX).unwrap_err().retry_after(), None);
    assert!(g.try_acquire_at(u64::MAX - S).is_ok());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5_000))]

    /// 1 to 5 rates: every decision and retry_after equals that of the GCRA models applied
    /// together, on random weighted traces, with the fewest snapshots allowed (3) so that
    /// snapshots are reclaimed often.
    #[test]
    fn matches_k_gcra_models(
        (rates, steps) in prop::collection::vec(rate(), 1..=5).prop_flat_map(|rates| {
            let burst = rates.iter().map(|r| r.2).max().unwrap();
            let period = rates.iter().map(|r| r.1).max().unwrap();
            (Just(rates), trace(burst, period, 80))
        })
    ) {
        let g = multi(&rates, 3);
        let mut model = AllGcraModel::new(&rates);
        no_difference(
            &steps,
            |n, now| g.try_acquire_n_at(n, now).map_err(|d| d.retry_after_nanos()),
            |n, now| model.acquire(n, now),
        )?;
    }
}
