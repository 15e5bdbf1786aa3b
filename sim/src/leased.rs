//! [`Leased`]: a model of hotlimit-redis's `LeasedGcra` on the simulator's clock: one GCRA
//! state on a server, leased to `processes` processes, with round trips of `rtt`. Each process
//! grants locally from its leases by the crate's rules, so the row shows what leases cost
//! against the exact log and against `Gcra` itself: permits a process held and could not use
//! in time. The trace's requests go to the processes in turn ([`Leased::try_acquire`], as if
//! they came to that many machines behind a load balancer), or each to a process the caller
//! names ([`Leased::try_acquire_from`], for `leases.rs`'s experiments on shares).
//!
//! The rules, as `LeasedGcra`'s docs state and prove them (its code needs Redis; this model
//! runs them on the core's [`GcraRule`] arithmetic):
//! - a lease of k permits moves the server's TAT from S = max(TAT, now) to S + k·I; permit m
//!   (0-based) may be granted within [S + (m + 1)·I − τ, S + m·I] (server time);
//! - server time is mapped to the process's clock through the offset a round trip bounds: the
//!   server read its clock between the send and the moment the reply was read (which a thread
//!   waiting for a core reads late), so the slot is mapped late and the deadline early by
//!   that span. The crate keeps the tightest bound over its round trips, widened by the
//!   clocks' largest rate difference as it ages, less that rate difference over the lease's
//!   reach ([`Design::filter`]; issue 27's first round used each reply's own span);
//! - a permit whose deadline has passed is skipped; a request that does not fit the lease moves
//!   to the next one (a process holds its current lease and at most one waiting);
//! - a refill starts when a grant leaves the lease half spent and arrives a round trip later;
//!   a request that finds none waits for the refill it starts, and another request of the
//!   same process meanwhile is denied (busy) for about a round trip; a lease's size is the
//!   process's demand × `lease_time`, the whole rate when the process spends its permits as
//!   their slots come, at least the request plus the round trip's worth, at most `max_lease`;
//!   [`Design::horizon`] models a proposal: the server cuts the lease so that it reaches at
//!   most `lease_time` past its clock (never below that least size).

use hotlimit::GcraRule;

use crate::rng::Rng;

/// The clocks' largest rate difference the crate assumes, as a fraction: 1,000 ppm (two clocks,
/// each within 500 ppm of true time), applied as ρ/(1 − ρ) = 1/999 (see `LeasedGcra`'s docs).
const DRIFT_DIVISOR: u64 = 999;

/// Which of the crate's rules the model runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Design {
    /// The offset bound kept across round trips (aged by the rate difference), and the rate
    /// difference taken off over each lease's reach, as the crate does; otherwise each lease
    /// is mapped with its own round trip's span, as issue 27's first round did.
    pub(crate) filter: bool,
    /// A proposal: the server cuts each lease to reach at most `lease_time` past its clock;
    /// otherwise a lease is sized by its process alone, as the crate does.
    pub(crate) horizon: bool,
}

impl Design {
    /// Issue 27's first round.
    pub(crate) const FIRST_ROUND: Design = Design {
        filter: false,
        horizon: false,
    };
    /// The crate's rules.
    pub(crate) const CRATE: Design = Design {
        filter: true,
        horizon: false,
    };
    /// The crate's rules and the horizon (measured, not adopted).
    pub(crate) const BOTH: Design = Design {
        filter: true,
        horizon: true,
    };
}

/// Replies read late: with probability `chance`, a round trip's reply waits an exponential
/// time of mean `mean` ns before its thread reads it (a thread waiting for a core).
#[derive(Clone, Debug)]
pub(crate) struct Late {
    pub(crate) chance: f64,
    pub(crate) mean: f64,
    pub(crate) rng: Rng,
}

/// One lease, in the simulator's nanoseconds.
#[derive(Clone, Copy, Debug)]
struct Lease {
    /// Permit 0's slot and deadline (mapped).
    first_slot: i128,
    first_deadline: i128,
    permits: u64,
    /// When it reaches the process.
    arrives: u64,
}

/// What bounds the server's clock minus the process's: [lo, hi] at local time `at` (ns).
#[derive(Clone, Copy, Debug)]
struct Offset {
    lo: i128,
    hi: i128,
    at: u64,
}

/// What one process did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ProcessStats {
    pub(crate) granted: u64,
    /// Leased permits passed over (their deadline went by, or the process moved past them).
    pub(crate) skipped: u64,
    pub(crate) leases: u64,
    pub(crate) leased: u64,
}

#[derive(Debug, Default)]
struct Process {
    current: Option<Lease>,
    /// Permits of `current` spent (granted or skipped).
    next: u64,
    waiting: Option<Lease>,
    /// When `current` arrived (for the demand estimate).
    arrived: u64,
    offset: Option<Offset>,
    stats: ProcessStats,
}

/// The model: a server's TAT and the processes' leases.
#[derive(Debug)]
pub(crate) struct Leased {
    rule: GcraRule,
    tat: u64,
    processes: Vec<Process>,
    rtt: u64,
    lease_time: u64,
    max_lease: u64,
    design: Design,
    late: Option<Late>,
    calls: u64,
}

impl Leased {
    /// `processes` processes on a GCRA of interval I and burst b (ns), round trips of `rtt`,
    /// leases sized for `lease_time` of demand, at most `max_lease` permits, by the crate's
    /// rules ([`Design::CRATE`]).
    pub(crate) fn new(
        rule: GcraRule,
        processes: usize,
        rtt: u64,
        lease_time: u64,
        max_lease: u64,
    ) -> Leased {
        Leased {
            rule,
            tat: 0,
            processes: (0..processes.max(1)).map(|_| Process::default()).collect(),
            rtt,
            lease_time,
            max_lease,
            design: Design::CRATE,
            late: None,
            calls: 0,
        }
    }

    /// The same model running `design`'s rules.
    pub(crate) fn design(mut self, design: Design) -> Leased {
        self.design = design;
        self
    }

    /// The same model with replies read late now and then.
    pub(crate) fn late(mut self, late: Late) -> Leased {
        self.late = Some(late);
        self
    }

    /// What each process did so far.
    pub(crate) fn stats(&self) -> Vec<ProcessStats> {
        self.processes.iter().map(|p| p.stats).collect()
    }

    /// `permits` at `now` from the next process in turn: `Ok`, or when to retry (ns).
    pub(crate) fn try_acquire(&mut self, now: u64, permits: u32) -> Result<(), Option<u64>> {
        let p = (self.calls % self.processes.len() as u64) as usize;
        self.calls += 1;
        self.try_acquire_from(p, now, permits)
    }

    /// `permits` at `now` from process `p`: `Ok`, or when to retry (ns).
    pub(crate) fn try_acquire_from(
        &mut self,
        p: usize,
        now: u64,
        permits: u32,
    ) -> Result<(), Option<u64>> {
        let n = u64::from(permits);
        if n > self.rule.burst() {
            return Err(None);
        }
        let outcome = self.take(p, now, n);
        if outcome.is_ok() {
            self.processes[p].stats.granted += n;
        }
        outcome
    }

    fn take(&mut self, p: usize, now: u64, n: u64) -> Result<(), Option<u64>> {
        let interval = i128::from(self.rule.interval());
        let t = i128::from(now);
        loop {
            let process = &mut self.processes[p];
            let Some(lease) = process.current else {
                // No lease yet (a waiting one becomes current once it has arrived).
                if process.waiting.is_some_and(|w| w.arrives <= now) {
                    process.current = process.waiting.take();
                    process.next = 0;
                    process.arrived = now;
                    continue;
                }
                if process.waiting.is_some() {
                    // Another request of this process is refilling: busy.
                    return Err(Some(self.rtt.max(1)));
                }
                return self.refill_and_take(p, now, n);
            };
            let i = process.next;
            let deadline = lease.first_deadline + i128::from(i) * interval;
            let j = if t > deadline {
                i + ((t - deadline) as u128).div_ceil(interval as u128) as u64
            } else {
                i
            };
            if j + n > lease.permits {
                if process.waiting.is_some_and(|w| w.arrives <= now) {
                    process.stats.skipped += lease.permits.saturating_sub(i);
                    process.current = process.waiting.take();
                    process.next = 0;
                    process.arrived = now;
                    continue;
                }
                if process.waiting.is_some() {
                    return Err(Some(self.rtt.max(1)));
                }
                process.stats.skipped += lease.permits.saturating_sub(i);
                return self.refill_and_take(p, now, n);
            }
            let slot = lease.first_slot + i128::from(j + n - 1) * interval;
            if t < slot {
                return Err(Some((slot - t) as u64));
            }
            process.stats.skipped += j - i;
            process.next = j + n;
            if (lease.permits - process.next) * 2 <= lease.permits && process.waiting.is_none() {
                self.refill(p, now, n);
            }
            return Ok(());
        }
    }

    /// A request that found its process dry, as `LeasedGcra::try_acquire_n` serves it: it waits
    /// for the refill it starts, then takes from the new lease when the reply is read (its
    /// grant, if any, is counted at its own `now`: one round trip early in the audit).
    fn refill_and_take(&mut self, p: usize, now: u64, n: u64) -> Result<(), Option<u64>> {
        self.refill(p, now, n);
        let process = &mut self.processes[p];
        let lease = process.waiting.take().expect("just refilled");
        let later = lease.arrives;
        process.current = Some(lease);
        process.next = 0;
        process.arrived = later;
        let interval = i128::from(self.rule.interval());
        let t = i128::from(later);
        let deadline = lease.first_deadline;
        let j = if t > deadline {
            ((t - deadline) as u128).div_ceil(interval as u128) as u64
        } else {
            0
        };
        if j + n > lease.permits {
            process.stats.skipped += lease.permits;
            process.next = lease.permits;
            return Err(Some(self.rtt.max(1)));
        }
        let slot = lease.first_slot + i128::from(j + n - 1) * interval;
        process.stats.skipped += j;
        if t < slot {
            process.next = j;
            return Err(Some((slot - i128::from(now)) as u64));
        }
        process.next = j + n;
        Ok(())
    }

    /// Process `p` asks for a lease at `now` (for a request of `n`): the server answers half
    /// a round trip later, the reply is read another half later (or late), and the lease
    /// waits as the process's next.
    fn refill(&mut self, p: usize, now: u64, n: u64) {
        let (interval, tolerance) = (self.rule.interval(), self.rule.tolerance());
        let asked = self.size(p, now, n);
        let least = self.least(n);
        let late = self.late.as_mut().map_or(0, |l| {
            if l.rng.next_f64() < l.chance {
                l.rng.exponential(l.mean) as u64
            } else {
                0
            }
        });
        let server_now = now + self.rtt / 2;
        let read = now + self.rtt + late;
        let start = self.tat.max(server_now);
        let permits = if self.design.horizon {
            // The lease script's cut: reach at most `lease_time` past the server's clock.
            let room = (server_now + self.lease_time).saturating_sub(start) / interval;
            asked.min(room.max(least))
        } else {
            asked
        };
        self.tat = start + permits * interval;
        let process = &mut self.processes[p];
        // This round trip's bound on (server − local): the server read its clock between the
        // send and the read.
        let trip = Offset {
            lo: i128::from(server_now) - i128::from(read),
            hi: i128::from(server_now) - i128::from(now),
            at: read,
        };
        let offset = match process.offset {
            Some(old) if self.design.filter => narrowed(old, trip),
            _ => trip,
        };
        process.offset = Some(offset);
        let (s, i, t) = (
            i128::from(start),
            i128::from(interval),
            i128::from(tolerance),
        );
        // The rate difference over the lease's reach, taken off both ends (the crate's rule).
        let margin = if self.design.filter {
            drift((s + i128::from(permits) * i - offset.lo - i128::from(read)).max(0))
        } else {
            0
        };
        process.waiting = Some(Lease {
            first_slot: s + i - t - offset.lo + margin,
            first_deadline: s - offset.hi - margin,
            permits,
            arrives: read,
        });
        process.stats.leases += 1;
        process.stats.leased += permits;
    }

    /// The least lease for a request of `n`: `n` plus what a round trip costs a lease taken on
    /// an idle key.
    fn least(&self, n: u64) -> u64 {
        n + self.rtt.div_ceil(self.rule.interval()) + 1
    }

    /// The size process `p` asks for (the crate's rule).
    fn size(&self, p: usize, now: u64, n: u64) -> u64 {
        let interval = self.rule.interval();
        let process = &self.processes[p];
        let demand = match process.current {
            None => 0,
            Some(lease) => {
                let since = i128::from(now) - lease.first_slot;
                let reached = if since < 0 {
                    0
                } else {
                    ((since / i128::from(interval)) as u64 + 1).min(lease.permits)
                };
                let spent = process.next;
                if spent > 0 && reached.saturating_sub(spent) <= (lease.permits / 8).max(4) {
                    self.lease_time / interval
                } else {
                    let began = lease.first_slot.max(i128::from(process.arrived)).max(0) as u64;
                    let span = now.saturating_sub(began).max(interval);
                    (u128::from(spent) * u128::from(self.lease_time) / u128::from(span)) as u64
                }
            }
        };
        demand.max(self.least(n)).min(self.max_lease.max(n))
    }

    /// What the processes hold now: permits of their current leases whose slots have come and
    /// whose deadlines have not passed.
    pub(crate) fn remaining_at(&self, now: u64) -> u64 {
        let interval = i128::from(self.rule.interval());
        let t = i128::from(now);
        self.processes
            .iter()
            .filter_map(|p| p.current.filter(|c| c.arrives <= now).map(|c| (c, p.next)))
            .map(|(c, next)| {
                let reached = if t < c.first_slot {
                    0
                } else {
                    (((t - c.first_slot) / interval) as u64 + 1).min(c.permits)
                };
                let live_from = if t > c.first_deadline {
                    (((t - c.first_deadline) as u128).div_ceil(interval as u128) as u64).max(next)
                } else {
                    next
                };
                reached.saturating_sub(live_from)
            })
            .sum::<u64>()
            .min(self.rule.burst())
    }
}

/// The rate difference over `span` ns, rounded up.
fn drift(span: i128) -> i128 {
    (span + i128::from(DRIFT_DIVISOR) - 1) / i128::from(DRIFT_DIVISOR)
}

/// `old`, widened by the rate difference over its age, intersected with `trip`; `trip` alone
/// when they do not meet (a clock stepped, or another server).
fn narrowed(old: Offset, trip: Offset) -> Offset {
    let age = drift(i128::from(trip.at.saturating_sub(old.at)));
    let (lo, hi) = (old.lo - age, old.hi + age);
    let both = Offset {
        lo: lo.max(trip.lo),
        hi: hi.min(trip.hi),
        at: trip.at,
    };
    if both.lo > both.hi {
        trip
    } else {
        both
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every window [t_i, t_j] of `grants` holds at most b + ⌊(t_j − t_i)/I⌋.
    fn audit(grants: &[u64], burst: u64, interval: u64) {
        for i in 0..grants.len() {
            for j in i..grants.len() {
                let bound = burst + (grants[j] - grants[i]) / interval;
                assert!(
                    (j - i + 1) as u64 <= bound,
                    "{} grants in [{}, {}]",
                    j - i + 1,
                    grants[i],
                    grants[j]
                );
            }
        }
    }

    /// The GCRA bound holds for the model's grants (every grant at its own time), on a trace
    /// far over the rate spread over 4 processes, by both designs, with and without replies
    /// read late.
    #[test]
    fn grants_keep_the_gcra_bound() {
        // I = 1 ms, b = 20; round trips of 0.3 ms.
        let rule = GcraRule::new(1_000_000, 20).unwrap();
        for design in [Design::FIRST_ROUND, Design::CRATE, Design::BOTH] {
            for late in [false, true] {
                let mut model = Leased::new(rule, 4, 300_000, 50_000_000, 1024).design(design);
                if late {
                    model = model.late(Late {
                        chance: 0.2,
                        mean: 5_000_000.0,
                        rng: Rng::new(1, "late"),
                    });
                }
                let mut grants = Vec::new();
                for k in 0..200_000u64 {
                    let now = k * 50_000; // a request every 50 µs: 20 × the rate
                    if model.try_acquire(now, 1).is_ok() {
                        grants.push(now);
                    }
                }
                audit(&grants, 20, 1_000_000);
                // 10 s at 1,000/s: most of it is granted.
                assert!(grants.len() > 9_000, "{design:?} {late}: {}", grants.len());
            }
        }
    }

    /// Replies read later than a permit's window lasts lose their whole lease when each is
    /// mapped with its own round trip, and little when the key's round trips bound the offset
    /// together: 4 processes far over the rate, I = 20 µs, b = 1,000 (a window of 19.98 ms),
    /// round trips of 100 µs whose replies are read an exponential 25 ms late.
    #[test]
    fn late_replies_lose_their_leases_only_without_the_filter() {
        let rule = GcraRule::new(20_000, 1000).unwrap();
        let skipped = |filter| {
            let design = Design {
                filter,
                horizon: false,
            };
            let mut model = Leased::new(rule, 4, 100_000, 50_000_000, 1024)
                .design(design)
                .late(Late {
                    chance: 1.0,
                    mean: 25_000_000.0,
                    rng: Rng::new(1, "late"),
                });
            for k in 0..2_000_000u64 {
                let _ = model.try_acquire(k * 2_500, 1);
            }
            let all = model.stats();
            let total = |f: fn(&ProcessStats) -> u64| all.iter().map(f).sum::<u64>();
            (total(|s| s.skipped), total(|s| s.leased))
        };
        let (lost, leased) = skipped(false);
        assert!(lost * 4 > leased, "first round: {lost} of {leased} skipped");
        let (lost, leased) = skipped(true);
        assert!(lost * 20 < leased, "filtered: {lost} of {leased} skipped");
    }

    /// The offset bound: narrowed by a tighter round trip, widened by age, and replaced when
    /// the two do not meet.
    #[test]
    fn the_offset_bound_narrows_ages_and_resets() {
        let old = Offset {
            lo: -100,
            hi: 50,
            at: 0,
        };
        let trip = Offset {
            lo: -30_000,
            hi: 10,
            at: 999_000,
        };
        // 999,000 ns of age widen by 1,000 ns each side.
        let n = narrowed(old, trip);
        assert_eq!((n.lo, n.hi, n.at), (-1_100, 10, 999_000));
        let apart = Offset {
            lo: 5_000,
            hi: 6_000,
            at: 10,
        };
        let n = narrowed(old, apart);
        assert_eq!((n.lo, n.hi), (5_000, 6_000));
    }
}
