//! Reading state back (what HTTP headers and dashboards need): `remaining_at` and `reset_at`
//! on every limiter, `Denied`'s ceiling seconds, reason and `Debug`, and the `Decide` seam.
//!
//! The central property, for a sequential caller on a `ManualClock`: a request for n permits
//! is granted iff n ≤ `remaining_at(now)` read just before it, in every limiter and mode; and
//! `reset_at(now)` is the first instant at which the limiter is full again. For `SlidingLog`
//! both are also compared with the exact log of `tests/model/`.

mod model;

use std::future::Future;
use std::net::Ipv4Addr;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use hotlimit::{
    Decide, Decision, DenialReason, Denied, Gcra, IntKeyed, KeyPool, Keyed, ManualClock, Rate,
    ShardedGcra, SlidingLog, SlidingWindow,
};
use model::log::LogModel;
use proptest::prelude::*;

const S: u64 = 1_000_000_000;

/// The decision of an in-process `Decide`, which is ready at once.
fn decide_now<D: Decide<Error = std::convert::Infallible>>(
    d: &D,
    key: &D::Key,
    n: u32,
) -> Decision {
    let mut fut = pin!(d.decide(key, n));
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(Ok(decision)) => decision,
        Poll::Pending => panic!("an in-process decision must be ready at once"),
    }
}

/// One step of a trace: advance the clock by `dt` ns, then ask for `n` permits.
fn trace(period: u64, limit: u64) -> impl Strategy<Value = Vec<(u64, u32)>> {
    let n_max = u32::try_from(limit + 1).unwrap();
    prop::collection::vec((0..period * 2 / 3, 1..=n_max), 1..60)
}

/// What every limiter is checked with: `acquire(n, now)`, `remaining(now)`, `reset(now)`
/// and its full capacity.
struct Probe<'a> {
    acquire: Box<dyn Fn(u32, u64) -> Result<(), Denied> + 'a>,
    remaining: Box<dyn Fn(u64) -> u64 + 'a>,
    reset: Box<dyn Fn(u64) -> u64 + 'a>,
    full: u64,
}

/// Runs `steps` through `p`: every decision agrees with the remaining read just before it,
/// and after each step the limiter is full exactly at `now + reset` (not 1 ns earlier).
fn check(p: &Probe<'_>, steps: &[(u64, u32)]) -> Result<(), TestCaseError> {
    let mut now = 0u64;
    for &(dt, n) in steps {
        now += dt;
        let before = (p.remaining)(now);
        prop_assert!(
            before <= p.full,
            "remaining {} above {} at {}",
            before,
            p.full,
            now
        );
        let outcome = (p.acquire)(n, now);
        prop_assert_eq!(
            outcome.is_ok(),
            u64::from(n) <= before,
            "n = {} with remaining {} at {}: {:?}",
            n,
            before,
            now,
            outcome
        );
        if let Err(d) = outcome {
            prop_assert_eq!(d.is_never(), u64::from(n) > p.full);
        }
        let reset = (p.reset)(now);
        prop_assert_eq!((p.remaining)(now + reset), p.full, "full at now + reset");
        if reset > 0 {
            prop_assert!(
                (p.remaining)(now + reset - 1) < p.full,
                "full before now + reset"
            );
        }
    }
    Ok(())
}

fn probe_of<'a, L: 'a>(
    l: &'a L,
    full: u64,
    acquire: fn(&L, u32, u64) -> Result<(), Denied>,
    remaining: fn(&L, u64) -> u64,
    reset: fn(&L, u64) -> Duration,
) -> Probe<'a> {
    Probe {
        acquire: Box::new(move |n, now| acquire(l, n, now)),
        remaining: Box::new(move |now| remaining(l, now)),
        reset: Box::new(move |now| u64::try_from(reset(l, now).as_nanos()).unwrap()),
        full,
    }
}

fn rate(limit: u64, period: u64) -> Rate {
    Rate::new(limit, Duration::from_nanos(period)).unwrap()
}

fn config() -> impl Strategy<Value = (u64, u64, Vec<(u64, u32)>)> {
    (1u64..12, prop::sample::select(vec![1_000u64, 997, S]))
        .prop_flat_map(|(limit, period)| (Just(limit), Just(period), trace(period, limit)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn gcra_remaining_decides((limit, period, steps) in config(), burst in 1u64..12) {
        let g = Gcra::builder(rate(limit, period)).burst(burst).clock(ManualClock::new()).build().unwrap();
        check(&probe_of(&g, burst, Gcra::try_acquire_n_at, Gcra::remaining_at, Gcra::reset_at), &steps)?;
    }

    #[test]
    fn sharded_remaining_decides((limit, period, steps) in config(), shards in 1usize..4) {
        prop_assume!(shards as u64 <= limit);
        let g = ShardedGcra::builder(rate(limit, period))
            .shards(shards)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        check(&probe_of(&g, limit, ShardedGcra::try_acquire_n_at, ShardedGcra::remaining_at,
            ShardedGcra::reset_at), &steps)?;
    }

    #[test]
    fn window_remaining_decides_in_every_mode(
        (limit, period, steps) in config(),
        buckets in 1usize..6,
        mode in 0u8..3,
        k in 1u64..4,
    ) {
        prop_assume!(buckets as u64 <= period);
        let b = SlidingWindow::builder(rate(limit, period)).buckets(buckets).clock(ManualClock::new());
        let w = match mode {
            0 => b.build().unwrap(),
            1 => b.approximate().build().unwrap(),
            _ => b.count_closed(k.min(limit)).build().unwrap(),
        };
        check(&probe_of(&w, limit, SlidingWindow::try_acquire_n_at, SlidingWindow::remaining_at,
            SlidingWindow::reset_at), &steps)?;
    }

    /// SlidingLog against the exact log: remaining = limit − grants in the window, reset =
    /// when the newest grant leaves it.
    #[test]
    fn log_matches_the_exact_log((limit, period, steps) in config()) {
        let log = SlidingLog::builder(rate(limit, period)).clock(ManualClock::new()).build().unwrap();
        let mut model = LogModel::new(limit, period);
        let mut now = 0u64;
        for &(dt, n) in &steps {
            now += dt;
            prop_assert_eq!(log.remaining_at(now), limit - model.used(now) as u64);
            prop_assert_eq!(log.try_acquire_n_at(n, now).is_ok(), model.acquire(n, now).is_ok());
            prop_assert_eq!(log.remaining_at(now), limit - model.used(now) as u64);
            let newest_end = model
                .grants()
                .last()
                .map_or(0, |&t| u64::try_from(t).unwrap() + period);
            prop_assert_eq!(log.reset_at(now), Duration::from_nanos(newest_end.saturating_sub(now)));
        }
        check(&probe_of(&log, limit, SlidingLog::try_acquire_n_at, SlidingLog::remaining_at,
            SlidingLog::reset_at), &steps)?;
    }

    #[test]
    fn key_pool_remaining_counts_uses((limit, period, steps) in config(), keys in 1usize..4,
                                      buckets in prop::option::of(1usize..4)) {
        prop_assume!(buckets.is_none_or(|b| b as u64 <= period));
        let b = KeyPool::builder((0..keys).collect::<Vec<_>>(), rate(limit, period))
            .clock(ManualClock::new());
        let pool = match buckets {
            Some(n) => b.buckets(n).build().unwrap(),
            None => b.build().unwrap(),
        };
        let full = limit * keys as u64;
        let mut now = 0;
        for &(dt, _) in &steps {
            now += dt;
            let before = pool.remaining_at(now);
            prop_assert!(before <= full);
            let got = pool.try_next_key_at(now);
            if buckets.is_none() {
                // The log: a key is handed out iff a use is left.
                prop_assert_eq!(got.is_ok(), before >= 1);
            } else if got.is_ok() {
                prop_assert!(before >= 1);
            }
            let reset = u64::try_from(pool.reset_at(now).as_nanos()).unwrap();
            prop_assert_eq!(pool.remaining_at(now + reset), full);
        }
    }

    #[test]
    fn keyed_remaining_decides_per_key((limit, period, steps) in config(), algo in 0u8..3) {
        let r = rate(limit, period);
        match algo {
            0 => {
                let k = Keyed::<u8, Gcra, _>::gcra(r).clock(ManualClock::new()).build().unwrap();
                check(&keyed_probe(&k, limit, Keyed::remaining_at, Keyed::reset_at), &steps)?;
            }
            1 => {
                let k = Keyed::<u8, SlidingLog, _>::sliding_log(r).clock(ManualClock::new()).build().unwrap();
                check(&keyed_probe(&k, limit, Keyed::remaining_at, Keyed::reset_at), &steps)?;
            }
            _ => {
                let k = Keyed::<u8, SlidingWindow, _>::sliding_window(r)
                    .buckets(1)
                    .clock(ManualClock::new())
                    .build()
                    .unwrap();
                check(&keyed_probe(&k, limit, Keyed::remaining_at, Keyed::reset_at), &steps)?;
            }
        }
    }

    #[test]
    fn int_keyed_remaining_decides((limit, period, steps) in config()) {
        let k: IntKeyed<u32, _> = IntKeyed::builder(rate(limit, period)).clock(ManualClock::new()).build().unwrap();
        let p = Probe {
            acquire: Box::new(|n, now| k.try_acquire_n_at(7, n, now)),
            remaining: Box::new(|now| k.remaining_at(7, now)),
            reset: Box::new(|now| u64::try_from(k.reset_at(7, now).as_nanos()).unwrap()),
            full: limit,
        };
        check(&p, &steps)?;
    }
}

type KeyedRead<L> = fn(&Keyed<u8, L, ManualClock>, &u8, u64) -> u64;
type KeyedReset<L> = fn(&Keyed<u8, L, ManualClock>, &u8, u64) -> Duration;

fn keyed_probe<'a, L: hotlimit::KeyedRead>(
    k: &'a Keyed<u8, L, ManualClock>,
    full: u64,
    remaining: KeyedRead<L>,
    reset: KeyedReset<L>,
) -> Probe<'a> {
    Probe {
        acquire: Box::new(move |n, now| k.try_acquire_n_at(&1, n, now)),
        remaining: Box::new(move |now| remaining(k, &1, now)),
        reset: Box::new(move |now| u64::try_from(reset(k, &1, now).as_nanos()).unwrap()),
        full,
    }
}

#[test]
fn retry_after_secs_ceil_rounds_up_and_is_never_zero() {
    let secs = |ns| Denied::new(Some(Duration::from_nanos(ns))).retry_after_secs_ceil();
    assert_eq!(secs(1), Some(1));
    assert_eq!(secs(999_999_999), Some(1));
    assert_eq!(secs(S), Some(1));
    assert_eq!(secs(S + 1), Some(2));
    assert_eq!(secs(u64::MAX - 1), Some((u64::MAX - 1).div_ceil(S)));
    assert_eq!(Denied::new(None).retry_after_secs_ceil(), None);
    // From a real limiter: 1 ns short of the grant is still a whole second.
    let g = Gcra::builder(Rate::per_second(1).unwrap())
        .clock(ManualClock::new())
        .build()
        .unwrap();
    g.try_acquire_at(0).unwrap();
    let d = g.try_acquire_at(S - 1).unwrap_err();
    assert_eq!(
        (d.retry_after_nanos(), d.retry_after_secs_ceil()),
        (Some(1), Some(1))
    );
}

#[test]
fn denied_debug_prints_never() {
    assert_eq!(
        format!("{:?}", Denied::new(None)),
        "Denied { retry_after: never, reason: Never }"
    );
    assert_eq!(
        format!("{:?}", Denied::new(Some(Duration::from_millis(5)))),
        "Denied { retry_after: 5ms, reason: OverRate }"
    );
}

#[test]
fn over_the_rate_and_never_have_their_reasons() {
    let g = Gcra::builder(Rate::per_second(2).unwrap())
        .clock(ManualClock::new())
        .build()
        .unwrap();
    assert_eq!(
        g.try_acquire_n_at(3, 0).unwrap_err().reason(),
        DenialReason::Never
    );
    g.try_acquire_n_at(2, 0).unwrap();
    assert_eq!(
        g.try_acquire_at(0).unwrap_err().reason(),
        DenialReason::OverRate
    );
}

#[test]
fn a_full_keyed_table_denies_new_keys_as_table_full() {
    let k = Keyed::<u32, Gcra, _>::gcra(Rate::per_second(1).unwrap())
        .capacity(2)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    k.try_acquire_at(&1, 0).unwrap();
    k.try_acquire_at(&2, 0).unwrap();
    let d = k.try_acquire_at(&3, 0).unwrap_err();
    assert_eq!(d.reason(), DenialReason::TableFull);
    assert!(d.to_string().contains("no room for a new key"), "{d}");
    // The busy keys themselves are over their rate, not refused for room.
    assert_eq!(
        k.try_acquire_at(&1, 0).unwrap_err().reason(),
        DenialReason::OverRate
    );
    // Room is checked before the key's state exists: a new key's request over its burst at a
    // full table is refused for room first (and as never once it has a place).
    assert_eq!(
        k.try_acquire_n_at(&4, 2, 0).unwrap_err().reason(),
        DenialReason::TableFull
    );
    assert_eq!(
        k.try_acquire_n_at(&1, 2, 0).unwrap_err().reason(),
        DenialReason::Never
    );
}

#[test]
fn a_full_int_keyed_table_denies_new_keys_as_table_full() {
    let k: IntKeyed<u64, _> = IntKeyed::builder(Rate::per_second(1).unwrap())
        .capacity(1)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    k.try_acquire_at(1, 0).unwrap();
    let mut full = 0;
    for key in 2..200 {
        match k.try_acquire_at(key, 0) {
            Err(d) if d.reason() == DenialReason::TableFull => full += 1,
            other => panic!("key {key}: {other:?}"),
        }
    }
    assert_eq!(full, 198);
    assert_eq!(
        k.try_acquire_at(1, 0).unwrap_err().reason(),
        DenialReason::OverRate
    );
}

#[test]
fn a_decision_refused_for_room_reports_nothing_remaining() {
    // Issue 25: a 503 for a full table said `r=5` (the absent key's full burst).
    let clock = ManualClock::new();
    let k = Keyed::<u32, Gcra, _>::gcra(Rate::per_second(5).unwrap())
        .capacity(1)
        .clock(clock.clone())
        .build()
        .unwrap();
    let i: IntKeyed<u64, _> = IntKeyed::builder(Rate::per_second(5).unwrap())
        .capacity(1)
        .clock(clock.clone())
        .build()
        .unwrap();
    assert!(decide_now(&k, &1, 1).is_allowed());
    assert!(decide_now(&i, &1, 1).is_allowed());
    for d in [decide_now(&k, &2, 1), decide_now(&i, &2, 1)] {
        let denial = d.denial().unwrap();
        assert_eq!(denial.reason(), DenialReason::TableFull);
        assert_eq!(d.remaining(), 0);
        assert_eq!(Some(d.reset()), denial.retry_after());
    }
}

#[test]
fn decide_reports_what_the_direct_calls_report() {
    let clock = ManualClock::new();
    let g = Gcra::builder(Rate::per_second(5).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    for i in 0..6u64 {
        let d = decide_now(&g, &(), 1);
        assert_eq!(d.is_allowed(), i < 5);
        assert_eq!(d.remaining(), g.remaining_at(0));
        assert_eq!(d.reset(), g.reset_at(0));
        assert_eq!(
            (d.quota().limit(), d.quota().window()),
            (5, Duration::from_secs(1))
        );
    }
    let d = decide_now(&g, &(), 1);
    assert_eq!(
        d.denial().unwrap().retry_after(),
        Some(Duration::from_millis(200))
    );
    assert_eq!(d.reset(), Duration::from_secs(1));

    let log = SlidingLog::builder(Rate::per_minute(2).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    assert_eq!(decide_now(&log, &(), 2).remaining(), 0);
    assert_eq!(
        decide_now(&log, &(), 1).denial().unwrap().retry_after(),
        Some(Duration::from_secs(60))
    );

    let w = SlidingWindow::builder(Rate::per_second(3).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    let d = decide_now(&w, &(), 3);
    assert_eq!((d.is_allowed(), d.remaining()), (true, 0));

    let sh = ShardedGcra::builder(Rate::per_second(4).unwrap())
        .shards(2)
        .clock(clock.clone())
        .build()
        .unwrap();
    assert_eq!(decide_now(&sh, &(), 4).remaining(), 0);
    assert!(!decide_now(&sh, &(), 1).is_allowed());

    let ik: IntKeyed<Ipv4Addr, _> = IntKeyed::builder(Rate::per_second(2).unwrap())
        .clock(clock.clone())
        .build()
        .unwrap();
    let ip = Ipv4Addr::new(192, 0, 2, 1);
    assert_eq!(decide_now(&ik, &ip, 1).remaining(), 1);
    assert_eq!(decide_now(&ik, &ip, 1).reset(), Duration::from_secs(1));
}

#[test]
fn keyed_decide_reports_the_keys_own_rate() {
    let k: Keyed<String, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(2).unwrap())
        .clock(ManualClock::new())
        .build()
        .unwrap();
    k.set_rate("premium".to_string(), Rate::per_minute(100).unwrap())
        .unwrap();
    let d = decide_now(&k, &"premium".to_string(), 10);
    assert_eq!(
        (d.quota().limit(), d.quota().window()),
        (100, Duration::from_secs(60))
    );
    assert_eq!(d.remaining(), 90);
    let d = decide_now(&k, &"free".to_string(), 1);
    assert_eq!((d.quota().limit(), d.remaining()), (2, 1));
    assert_eq!(k.quota().limit(), 2);
    k.set_default_rate(Rate::per_second(100).unwrap()).unwrap();
    assert_eq!(k.default_rate(), Rate::per_second(100).unwrap());
    assert_eq!(
        k.key_rate(&"free".to_string()),
        Rate::per_second(100).unwrap()
    );
    assert_eq!(k.quota().limit(), 100);
}

#[test]
fn decide_through_a_reference_or_an_arc_reaches_the_same_limiter() {
    let clock = ManualClock::new();
    let limiter = std::sync::Arc::new(
        Gcra::builder(Rate::per_second(3).unwrap())
            .clock(clock.clone())
            .build()
            .unwrap(),
    );
    // One permit through each pointer, all from the one limiter.
    assert_eq!(decide_now(&&*limiter, &(), 1).remaining(), 2);
    assert_eq!(decide_now(&limiter, &(), 1).remaining(), 1);
    assert_eq!(decide_now(&*limiter, &(), 1).remaining(), 0);
    assert!(!decide_now(&limiter, &(), 1).is_allowed());
    let by_ref: &Gcra<ManualClock> = &limiter;
    assert_eq!(Decide::quota(&by_ref), Decide::quota(&limiter));
    assert_eq!(Decide::quota(&limiter).limit(), 3);
}
