//! What a `Decide` reports for HTTP rate-limit fields tells the truth (issue 25): the quota is
//! what a client may spend from full (a GCRA's burst per its refill time, a log's limit per
//! period, a window's limit per period plus a bucket), `remaining` never exceeds it, the
//! limiter is full again within the quota's window, and `next` is when one more permit is
//! available: exactly for the GCRA limiters (one nanosecond earlier it is not), a bound for
//! the others. `peek` reads without charging and agrees with the next decision.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use hotlimit::{
    Decide, Decision, Gcra, GcraPair, IntKeyed, Keyed, ManualClock, Rate, ShardedGcra, SlidingLog,
    SlidingWindow,
};
use proptest::prelude::*;

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

/// How exact a limiter's report is.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// A GCRA telling `next` exactly.
    Gcra,
    /// A GCRA whose `next` is a bound (the sharded one).
    GcraBound,
    /// A window or log: `next` is a bound.
    Window,
}

/// Checks every decision of `steps` (advance, then ask for n) on `d`, whose clock is `clock`.
fn check<D: Decide<Error = std::convert::Infallible>>(
    name: &str,
    d: &D,
    key: &D::Key,
    clock: &ManualClock,
    steps: &[(u64, u32)],
    kind: Kind,
) -> Result<(), TestCaseError> {
    let mut now = Duration::ZERO;
    for &(dt, n) in steps {
        now += Duration::from_nanos(dt);
        clock.set(now);
        let before = d.peek(key).expect("in-process limiters peek");
        let dec = decide_now(d, key, n);
        // The preview agrees with the decision, and charged nothing.
        prop_assert_eq!(dec.is_allowed(), u64::from(n) <= before.remaining());
        let q = dec.quota();
        prop_assert!(
            dec.remaining() <= q.limit(),
            "r {} > q {}",
            dec.remaining(),
            q.limit()
        );
        // A GCRA's interval is rounded up to the nanosecond: its burst may take up to `burst`
        // ns longer than the nominal burst × period / limit to come back.
        let slack = Duration::from_nanos(if kind == Kind::Window { 0 } else { q.limit() });
        prop_assert!(
            dec.reset() <= q.window() + slack,
            "{}: full again after {:?} > w {:?}",
            name,
            dec.reset(),
            q.window()
        );
        prop_assert!(dec.next() <= dec.reset());
        let r = dec.remaining();
        if r >= q.limit() {
            prop_assert_eq!(dec.next(), Duration::ZERO);
            continue;
        }
        // After `next`, at least one more permit; for GCRA, not one nanosecond before.
        clock.set(now + dec.next());
        prop_assert!(d.peek(key).unwrap().remaining() > r);
        if kind == Kind::Gcra && dec.next() > Duration::ZERO {
            clock.set(now + dec.next() - Duration::from_nanos(1));
            prop_assert_eq!(d.peek(key).unwrap().remaining(), r);
        }
        clock.set(now);
    }
    Ok(())
}

fn steps() -> impl Strategy<Value = Vec<(u64, u32)>> {
    prop::collection::vec((0u64..700_000_000, 0u32..6), 1..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn gcra_limiters_report_their_burst_and_an_exact_next(
        steps in steps(),
        limit in 1u64..9,
        burst in 1u64..12,
    ) {
        let clock = ManualClock::new();
        let rate = Rate::per_second(limit).unwrap();
        // All built at 0, the time every check starts from.
        let g = Gcra::builder(rate).burst(burst).clock(clock.clone()).build().unwrap();
        let k: Keyed<u32, Gcra, _> =
            Keyed::gcra(rate).burst(burst).clock(clock.clone()).build().unwrap();
        let i: IntKeyed<u32, _> =
            IntKeyed::builder(rate).burst(burst).clock(clock.clone()).build().unwrap();
        let s = ShardedGcra::builder(rate).shards(1).clock(clock.clone()).build().unwrap();
        check("gcra", &g, &(), &clock, &steps, Kind::Gcra)?;
        check("keyed", &k, &7, &clock, &steps, Kind::Gcra)?;
        check("int_keyed", &i, &7, &clock, &steps, Kind::Gcra)?;
        check("sharded", &s, &(), &clock, &steps, Kind::GcraBound)?;
    }

    #[test]
    fn windows_and_logs_report_their_limit_and_a_bounding_next(
        steps in steps(),
        limit in 1u64..9,
        buckets in 1usize..6,
    ) {
        let clock = ManualClock::new();
        let rate = Rate::per_second(limit).unwrap();
        let log = SlidingLog::builder(rate).clock(clock.clone()).build().unwrap();
        let w = SlidingWindow::builder(rate).buckets(buckets).clock(clock.clone()).build().unwrap();
        let kl: Keyed<u32, SlidingLog, _> =
            Keyed::sliding_log(rate).clock(clock.clone()).build().unwrap();
        let kw: Keyed<u32, SlidingWindow, _> =
            Keyed::sliding_window(rate).buckets(buckets).clock(clock.clone()).build().unwrap();
        check("log", &log, &(), &clock, &steps, Kind::Window)?;
        check("window", &w, &(), &clock, &steps, Kind::Window)?;
        check("keyed log", &kl, &1, &clock, &steps, Kind::Window)?;
        check("keyed window", &kw, &1, &clock, &steps, Kind::Window)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// A per-key pair reports each rate as two `Gcra`s decided together would: the request is
    /// admitted iff both have room, then both are charged; refused, a rate without room reports
    /// its own exact wait and the other its uncharged state.
    #[test]
    fn a_keyed_pair_reports_each_rate_as_two_gcras_decided_together(
        steps in steps(),
        (l1, b1) in (1u64..9, 1u64..12),
        (l2, b2) in (1u64..5, 1u64..20),
    ) {
        let clock = ManualClock::new();
        let (r1, r2) = (Rate::per_second(l1).unwrap(), Rate::new(l2, Duration::from_secs(4)).unwrap());
        let pair: Keyed<u8, GcraPair, _> = Keyed::gcra_pair(r1, r2)
            .first_burst(b1)
            .second_burst(b2)
            .clock(clock.clone())
            .build()
            .unwrap();
        let g1 = Gcra::builder(r1).burst(b1).clock(clock.clone()).build().unwrap();
        let g2 = Gcra::builder(r2).burst(b2).clock(clock.clone()).build().unwrap();
        let [q1, q2] = pair.quotas();
        prop_assert_eq!((q1, q2), (g1.quota(), g2.quota()));
        let mut now = Duration::ZERO;
        for &(dt, n) in &steps {
            now += Duration::from_nanos(dt);
            clock.set(now);
            let [p1, p2] = pair.peek_each(&1);
            let (m1, m2) = (g1.peek(&()).unwrap(), g2.peek(&()).unwrap());
            prop_assert_eq!((p1.remaining(), p2.remaining()), (m1.remaining(), m2.remaining()));
            let both = u64::from(n) <= m1.remaining() && u64::from(n) <= m2.remaining();
            let [d1, d2] = pair.decide_each(&1, n);
            if both {
                let (e1, e2) = (decide_now(&g1, &(), n), decide_now(&g2, &(), n));
                prop_assert!(e1.is_allowed() && e2.is_allowed());
                prop_assert_eq!((d1, d2), (e1, e2));
            } else {
                for (d, m, g) in [(d1, m1, &g1), (d2, m2, &g2)] {
                    prop_assert_eq!(d.remaining(), m.remaining());
                    if u64::from(n) <= m.remaining() {
                        prop_assert!(d.is_allowed()); // uncharged state
                    } else {
                        // The model refuses too, with the same wait, and writes nothing.
                        let e = decide_now(g, &(), n);
                        prop_assert_eq!(d.denial(), e.denial());
                    }
                }
            }
        }
    }
}

#[test]
fn a_gcra_quota_is_its_burst_per_its_refill_time() {
    // The per-IP policy: 10 per second, burst 20. It used to say q=10;w=1 while r=19.
    let clock = ManualClock::new();
    let g = Gcra::builder(Rate::per_second(10).unwrap())
        .burst(20)
        .clock(clock.clone())
        .build()
        .unwrap();
    let d = decide_now(&g, &(), 1);
    assert_eq!(
        (d.quota().limit(), d.quota().window(), d.remaining()),
        (20, Duration::from_secs(2), 19)
    );
    // Full again in 100 ms, and that is also when the next permit comes.
    assert_eq!(
        (d.reset(), d.next()),
        (Duration::from_millis(100), Duration::from_millis(100))
    );
    for _ in 0..19 {
        decide_now(&g, &(), 1);
    }
    let d = decide_now(&g, &(), 1);
    assert!(!d.is_allowed());
    // Empty: full in 2 s, one more permit in 100 ms.
    assert_eq!(
        (d.reset(), d.next()),
        (Duration::from_secs(2), Duration::from_millis(100))
    );
    // The default burst keeps the rate's own numbers: 3 per second, not 3 per 1.000000002 s.
    let three = Gcra::builder(Rate::per_second(3).unwrap())
        .clock(clock)
        .build()
        .unwrap();
    assert_eq!(three.quota().window(), Duration::from_secs(1));
}

#[test]
fn a_window_quota_counts_its_last_bucket() {
    let w = SlidingWindow::builder(Rate::per_minute(100).unwrap())
        .clock(ManualClock::new())
        .build()
        .unwrap();
    // Ten 6 s buckets: a grant counts for up to 66 s.
    assert_eq!(w.quota().window(), Duration::from_secs(66));
    let d = decide_now(&w, &(), 1);
    assert!(d.reset() <= d.quota().window());
}
