//! The lease protocol against the GCRA it leases from, without Redis: the real [`KeyLease`]
//! and the real mapping ([`offset::map`], the offset bound kept across round trips) on one
//! side; on the other a server that runs the lease script's arithmetic and the per-decision
//! script's (the core's [`GcraRule`]) on its own clock, offset from the local one and running
//! up to 1,000 ppm faster or slower, with round trips whose replies may be read late and during
//! which the server reads its clock at a random instant. Every grant, leased or per decision, is counted
//! at its time on the server's clock, and the audit checks the GCRA bound b + ⌊d/I⌋ on every
//! window. A planted mapping that lets permits go before their slots must fail the same audit.

use hotlimit::GcraRule;
use proptest::prelude::*;

use super::offset::{self, Offset};
use super::word::{Closed, KeyLease, Take};

/// A step of a trace.
#[derive(Clone, Debug)]
enum Op {
    /// Local time moves on, ns.
    Wait(u64),
    /// A refill of `k` permits; the server reads its clock after `at` of the round trip (0..=1),
    /// and the reply is read `late` ns after it arrives.
    Refill { k: u64, at: f64, late: u64 },
    /// A local take of `n`.
    Take(u64),
    /// A per-decision grant of `n` by the server (another process without leases).
    Direct(u32),
    /// The current lease closed and returned by the cancel rule.
    Return,
}

/// The local clock's reading when a replay starts, ns.
const ORIGIN: u64 = 1_000_000_000_000;

/// The server: its TAT (µs) and clock, `offset` ns ahead of the local one at [`ORIGIN`] and
/// `ppm` millionths faster (slower if negative).
struct Server {
    tat: u64,
    offset: u64,
    ppm: i64,
    rule: GcraRule,
}

impl Server {
    /// The server's clock at local `t`, ns.
    fn ns(&self, t: u64) -> u64 {
        let run = i128::from(t - ORIGIN) * i128::from(self.ppm) / 1_000_000;
        (i128::from(t + self.offset) + run) as u64
    }

    /// The server's `TIME` at local `t` (truncated µs).
    fn time(&self, t: u64) -> u64 {
        self.ns(t) / 1000
    }
}

/// Replays `ops` (I in µs, burst b, round trips of `rtt` ns, the server's clock `offset` ns
/// ahead and `ppm` millionths faster) and returns every grant as (time on the server's clock
/// in ns, permits). `planted`: permits may go before their slots.
fn replay(
    interval: u64,
    burst: u64,
    (rtt, offset, ppm): (u64, u64, i64),
    ops: &[Op],
    planted: bool,
) -> Vec<(u64, u64)> {
    let rule = GcraRule::new(interval, burst).unwrap();
    let tolerance = rule.tolerance();
    let mut server = Server {
        tat: 0,
        offset,
        ppm,
        rule,
    };
    let key = KeyLease::default();
    let mut kept: Option<Offset> = None;
    let local_interval = interval * 1000;
    let mut now: u64 = ORIGIN;
    let mut grants = Vec::new();
    for op in ops {
        match *op {
            Op::Wait(dt) => now += dt,
            Op::Refill { k, at, late } => {
                let Some(guard) = key.begin_refill() else {
                    continue;
                };
                let sent = now;
                let server_now = server.time(sent + (rtt as f64 * at) as u64);
                let start = server.tat.max(server_now);
                server.tat = start + k * interval;
                now += rtt + late;
                let mut lease = offset::map(
                    &mut kept, start, interval, tolerance, server_now, k, sent, now,
                );
                if planted {
                    lease.first_slot = i64::MIN / 2;
                }
                key.install(&guard, lease);
            }
            Op::Take(n) => {
                if let Take::Granted { .. } = key.take(n, now, local_interval) {
                    grants.push((server.ns(now), n));
                }
            }
            Op::Direct(n) => {
                let t = server.time(now);
                if let Ok(tat) = server.rule.decide(server.tat, t, n) {
                    server.tat = tat;
                    grants.push((t * 1000, u64::from(n)));
                }
            }
            Op::Return => {
                if let Closed::Done { current, waiting } = key.close(false) {
                    let returns = waiting.map(|w| (w, 0)).into_iter().chain(current);
                    for (lease, spent) in returns {
                        if server.tat == lease.start + lease.permits * interval {
                            server.tat = lease.start + spent * interval;
                        }
                    }
                }
            }
        }
    }
    grants
}

/// The first window [t_i, t_j] holding more than b + ⌊(t_j − t_i)/I⌋ permits, if any.
fn over(grants: &mut [(u64, u64)], interval_ns: u64, burst: u64) -> Option<String> {
    grants.sort_unstable();
    for i in 0..grants.len() {
        let mut permits = 0;
        for j in i..grants.len() {
            permits += grants[j].1;
            let bound = burst + (grants[j].0 - grants[i].0) / interval_ns;
            if permits > bound {
                return Some(format!(
                    "{permits} permits in [{}, {}] ns, bound {bound}",
                    grants[i].0, grants[j].0
                ));
            }
        }
    }
    None
}

fn ops(interval: u64) -> impl Strategy<Value = Vec<Op>> {
    let i = interval * 1000;
    let op = prop_oneof![
        3 => (0..3 * i).prop_map(Op::Wait),
        // Long enough for the clocks' rates to part by many I (the offset bound's aging).
        1 => (0..20_000 * i).prop_map(Op::Wait),
        2 => (1u64..12, 0.0f64..=1.0, prop_oneof![2 => Just(0), 1 => 0..5 * i])
            .prop_map(|(k, at, late)| Op::Refill { k, at, late }),
        6 => (1u64..4).prop_map(Op::Take),
        1 => (1u32..3).prop_map(Op::Direct),
        1 => Just(Op::Return),
    ];
    proptest::collection::vec(op, 1..80)
}

/// Traces with I µs, b, the clocks (round trip ns, offset ns, ppm) and the ops.
fn traces() -> impl Strategy<Value = (u64, u64, (u64, u64, i64), Vec<Op>)> {
    (1u64..500, 2u64..12).prop_flat_map(|(i, b)| {
        let clocks = (0..2 * i * 1000, 0u64..1_000_000_000, -1000i64..=1000);
        (Just(i), Just(b), clocks, ops(i))
    })
}

/// The property of [`leased_grants_keep_the_gcra_bound`], for a runner.
fn audited(
    (interval, burst, clocks, ops): (u64, u64, (u64, u64, i64), Vec<Op>),
) -> Result<(), TestCaseError> {
    let mut grants = replay(interval, burst, clocks, &ops, false);
    match over(&mut grants, interval * 1000, burst) {
        Some(over) => Err(TestCaseError::fail(over)),
        None => Ok(()),
    }
}

/// The planted mapping that takes the clocks to run at the same rate (no widening of the offset
/// bound by its age or a lease's reach) over-admits: the same property finds a trace.
#[test]
fn a_mapping_blind_to_the_clocks_rates_fails_the_audit() {
    offset::PLANTED_SAME_RATE.set(true);
    let mut runner = proptest::test_runner::TestRunner::new_with_rng(
        ProptestConfig {
            cases: 3000,
            failure_persistence: None,
            ..ProptestConfig::default()
        },
        proptest::test_runner::TestRng::deterministic_rng(
            proptest::test_runner::RngAlgorithm::ChaCha,
        ),
    );
    let outcome = runner.run(&traces(), audited);
    offset::PLANTED_SAME_RATE.set(false);
    assert!(outcome.is_err(), "no trace over-admitted");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// Whatever the round trip, replies read late, the clocks' offset and rates (within
    /// 1,000 ppm), the sizes and the interleaving with per-decision grants and returns: no
    /// window holds more than b + ⌊d/I⌋.
    #[test]
    fn leased_grants_keep_the_gcra_bound(trace in traces()) {
        audited(trace)?;
    }
}

/// The planted mapping (a leased permit's slot ignored) over-admits: a lease of 10 permits on a
/// busy key (b = 2), all granted at once.
#[test]
fn permits_before_their_slots_fail_the_audit() {
    let refill = |k| Op::Refill {
        k,
        at: 0.5,
        late: 0,
    };
    let mut ops = vec![refill(2), Op::Take(1), Op::Take(1)];
    ops.extend([refill(10)]);
    ops.extend(std::iter::repeat_n(Op::Take(1), 10));
    for planted in [false, true] {
        let mut grants = replay(100, 2, (20_000, 0, 0), &ops, planted);
        let audit = over(&mut grants, 100_000, 2);
        assert_eq!(
            audit.is_some(),
            planted,
            "planted {planted}: {audit:?} {grants:?}"
        );
    }
}

/// A lease returned right away goes back whole (the TAT is still its end), and the server's
/// state is then what it would have been without it.
#[test]
fn a_lease_nobody_used_goes_back() {
    let ops = [
        Op::Refill {
            k: 5,
            at: 0.0,
            late: 0,
        },
        Op::Return,
        Op::Direct(2),
        Op::Direct(1),
    ];
    let grants = replay(1000, 2, (0, 0, 0), &ops, false);
    // Burst 2: the two per-decision grants fit only because the lease went back.
    assert_eq!(grants.iter().map(|g| g.1).sum::<u64>(), 2);
}
