//! Shares and utilisation of `LeasedGcra` under equal demand, on the model of `leased.rs`:
//! `processes` processes of `threads` threads each ask for one permit at a time on one key
//! far over its rate, as `hotlimit-redis/benches/leases.rs`'s worker threads do (a granted
//! thread asks again at once; a denied one waits its retry-after, at most 2 ms), with no CPU
//! noise unless [`Setup::late`] says so. Deterministic: events in time order, ties by thread.
//!
//! `hotlimit-sim shares` prints the table ([`table`]).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use hotlimit::GcraRule;

use crate::leased::{Design, Late, Leased, ProcessStats};
use crate::rng::Rng;

/// A granted thread's next ask, ns after its grant (the bench's loop around `try_acquire`).
const ASK_AGAIN: u64 = 1_000;
/// The longest a denied thread waits before it asks again (the bench's sleep cap), ns.
const MAX_WAIT: u64 = 2_000_000;

/// One run's parameters.
#[derive(Clone, Debug)]
pub(crate) struct Setup {
    pub(crate) processes: usize,
    pub(crate) threads: usize,
    /// I (ns) and b.
    pub(crate) rule: GcraRule,
    pub(crate) rtt: u64,
    pub(crate) lease_time: u64,
    pub(crate) max_lease: u64,
    pub(crate) design: Design,
    /// Replies read late: (chance, mean ns), seeded.
    pub(crate) late: Option<(f64, f64)>,
    pub(crate) duration: u64,
}

impl Setup {
    /// The bench's key (50,000/s, burst 1,000), its 4 processes × 2 threads and the crate's
    /// default leases (50 ms of demand, at most 1,024 permits), round trips of `rtt`, for 2 s.
    pub(crate) fn bench(rtt: u64) -> Setup {
        Setup {
            processes: 4,
            threads: 2,
            rule: GcraRule::new(20_000, 1000).expect("a valid rule"),
            rtt,
            lease_time: 50_000_000,
            max_lease: 1024,
            design: Design::CRATE,
            late: None,
            duration: 2_000_000_000,
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug)]
pub(crate) struct Outcome {
    pub(crate) per_process: Vec<ProcessStats>,
}

impl Outcome {
    /// Grants over what GCRA allows in the run from an idle key, b + D/I.
    pub(crate) fn utilisation(&self, setup: &Setup) -> f64 {
        let allowed = setup.rule.burst() + setup.duration / setup.rule.interval();
        self.total(|s| s.granted) as f64 / allowed as f64
    }

    /// The fewest grants of a process over the most.
    pub(crate) fn min_max(&self) -> f64 {
        let g = self.per_process.iter().map(|s| s.granted);
        let (min, max) = (g.clone().min().unwrap_or(0), g.max().unwrap_or(0));
        min as f64 / max.max(1) as f64
    }

    pub(crate) fn total(&self, f: fn(&ProcessStats) -> u64) -> u64 {
        self.per_process.iter().map(f).sum()
    }
}

/// Runs `setup`; also returns every grant's time (for the GCRA audit).
pub(crate) fn run(setup: &Setup) -> (Outcome, Vec<u64>) {
    let mut model = Leased::new(
        setup.rule,
        setup.processes,
        setup.rtt,
        setup.lease_time,
        setup.max_lease,
    )
    .design(setup.design);
    if let Some((chance, mean)) = setup.late {
        model = model.late(Late {
            chance,
            mean,
            rng: Rng::new(1, "shares"),
        });
    }
    let threads = setup.processes * setup.threads;
    // Each thread starts a little after the one before (a process's threads side by side).
    let mut queue: BinaryHeap<Reverse<(u64, usize)>> =
        (0..threads).map(|k| Reverse((k as u64, k))).collect();
    let mut grants = Vec::new();
    while let Some(Reverse((now, k))) = queue.pop() {
        if now >= setup.duration {
            continue;
        }
        let next = match model.try_acquire_from(k / setup.threads, now, 1) {
            Ok(()) => {
                grants.push(now);
                now + ASK_AGAIN
            }
            Err(wait) => now + wait.unwrap_or(MAX_WAIT).clamp(ASK_AGAIN, MAX_WAIT),
        };
        queue.push(Reverse((next, k)));
    }
    (
        Outcome {
            per_process: model.stats(),
        },
        grants,
    )
}

/// The table `hotlimit-sim shares` prints: the bench's setup at round trips of 0.1, 0.3 and
/// 1 ms, by the crate's rules, issue 27's first round and the horizon, without and with replies read late (one in
/// five, 25 ms on average: a thread that waits for a core longer than a permit's window).
pub(crate) fn table() -> String {
    let mut out = String::from(
        "LeasedGcra (model) under equal demand: 4 processes x 2 threads on one key, 50,000/s, \
         burst 1,000, leases of 50 ms at most 1,024 permits, 2 s:\n\n\
         | design | round trip | replies read late | utilisation | shares (min/max) | \
         per process: granted | leased | skipped |\n|---|---|---|---|---|---|---|---|\n",
    );
    let designs = [
        ("first round", Design::FIRST_ROUND),
        ("crate (offset filter)", Design::CRATE),
        (
            "first round + horizon",
            Design {
                filter: false,
                horizon: true,
            },
        ),
        ("crate + horizon", Design::BOTH),
    ];
    for late in [None, Some((0.2, 25_000_000.0))] {
        for rtt in [100_000, 300_000, 1_000_000] {
            for (name, design) in designs {
                let setup = Setup {
                    design,
                    late,
                    ..Setup::bench(rtt)
                };
                let (o, _) = run(&setup);
                let col = |f: fn(&ProcessStats) -> u64| {
                    o.per_process
                        .iter()
                        .map(|s| f(s).to_string())
                        .collect::<Vec<_>>()
                        .join(" / ")
                };
                out.push_str(&format!(
                    "| {name} | {} µs | {} | {:.1} % | {:.3} | {} | {} | {} |\n",
                    rtt / 1000,
                    if late.is_some() {
                        "1 in 5, 25 ms"
                    } else {
                        "no"
                    },
                    100.0 * o.utilisation(&setup),
                    o.min_max(),
                    col(|s| s.granted),
                    col(|s| s.leased),
                    col(|s| s.skipped),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With no CPU noise the crate's rules (as the first round's) use the whole rate and share it evenly but for a
    /// head start that does not grow: the first process to refill takes the key's burst, about
    /// two leases, at 2 s as at 8 s.
    #[test]
    fn equal_demand_fills_the_rate_with_a_fixed_head_start() {
        for (secs, least) in [(2, 0.92), (8, 0.975)] {
            let setup = Setup {
                duration: secs * 1_000_000_000,
                ..Setup::bench(300_000)
            };
            let (o, grants) = run(&setup);
            assert!(o.utilisation(&setup) > 0.998, "{secs} s: {o:?}");
            assert!(o.min_max() > least, "{secs} s: {o:?}");
            let g = o.per_process.iter().map(|s| s.granted);
            let gap = g.clone().max().unwrap() - g.min().unwrap();
            assert!(gap <= 2 * setup.max_lease + 100, "{secs} s: a gap of {gap}");
            assert_eq!(grants.len() as u64, o.total(|s| s.granted));
        }
    }

    /// Replies read late (one in five, 25 ms on average: longer than a permit's 20 ms window)
    /// cost the first round's rules whole leases, and the crate's offset filter most of them
    /// back.
    #[test]
    fn late_replies_cost_whole_leases_unless_the_offset_is_filtered() {
        let late = Some((0.2, 25_000_000.0));
        let first = Setup {
            late,
            design: Design::FIRST_ROUND,
            ..Setup::bench(300_000)
        };
        let (o, _) = run(&first);
        assert!(o.utilisation(&first) < 0.95, "{o:?}");
        assert!(o.total(|s| s.skipped) > 4 * 1024, "{o:?}");
        let filtered = Setup {
            design: Design::CRATE,
            ..first
        };
        let (o, _) = run(&filtered);
        assert!(o.utilisation(&filtered) > 0.98, "{o:?}");
        assert!(o.min_max() > 0.93, "{o:?}");
    }

    /// The table has a row per design, round trip and lateness.
    #[test]
    fn the_table_has_every_row() {
        let t = table();
        let rows = |name: &str| t.lines().filter(|l| l.starts_with(name)).count();
        assert_eq!(rows("| crate (offset filter) |"), 6);
        assert_eq!(t.lines().filter(|l| l.starts_with("| ")).count(), 25);
    }
}
