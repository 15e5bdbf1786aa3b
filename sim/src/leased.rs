//! [`Leased`]: a model of hotlimit-redis's `LeasedGcra` on the simulator's clock: one GCRA
//! state on a server, leased to `processes` processes that take the trace's requests in turn
//! (as if they came to that many machines behind a load balancer), with round trips of
//! `rtt`. Each process grants locally from its leases by the crate's rules, so the row shows
//! what leases cost against the exact log and against `Gcra` itself: permits a process held
//! and could not use in time.
//!
//! The rules, as `LeasedGcra`'s docs state and prove them (its code needs Redis; this model
//! runs them on the core's [`GcraRule`] arithmetic):
//! - a lease of k permits moves the server's TAT from S = max(TAT, now) to S + k·I; permit m
//!   (0-based) may be granted within [S + (m + 1)·I − τ, S + m·I] (server time), the slot
//!   mapped late and the deadline early by half the round trip each (the server reads its
//!   clock mid-way: the model's clocks are one);
//! - a permit whose deadline has passed is skipped; a request that does not fit the lease moves
//!   to the next one (a process holds its current lease and at most one waiting);
//! - a refill starts when a grant leaves the lease half spent and arrives a round trip later;
//!   a request that finds none waits for the refill it starts, and another request of the
//!   same process meanwhile is denied (busy) for about a round trip; a lease's size is the
//!   process's demand × `lease_time`, the whole
//!   rate when the process spends its permits as their slots come, at least the request plus
//!   the round trip's worth, at most `max_lease`.

use hotlimit::GcraRule;

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

#[derive(Debug, Default)]
struct Process {
    current: Option<Lease>,
    /// Permits of `current` spent (granted or skipped).
    next: u64,
    waiting: Option<Lease>,
    /// When `current` arrived (for the demand estimate).
    arrived: u64,
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
    calls: u64,
}

impl Leased {
    /// `processes` processes on a GCRA of interval I and burst b (ns), round trips of `rtt`,
    /// leases sized for `lease_time` of demand, at most `max_lease` permits.
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
            calls: 0,
        }
    }

    /// `permits` at `now` from the next process in turn: `Ok`, or when to retry (ns).
    pub(crate) fn try_acquire(&mut self, now: u64, permits: u32) -> Result<(), Option<u64>> {
        let n = u64::from(permits);
        if n > self.rule.burst() {
            return Err(None);
        }
        let p = (self.calls % self.processes.len() as u64) as usize;
        self.calls += 1;
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
                    process.current = process.waiting.take();
                    process.next = 0;
                    process.arrived = now;
                    continue;
                }
                if process.waiting.is_some() {
                    return Err(Some(self.rtt.max(1)));
                }
                return self.refill_and_take(p, now, n);
            }
            let slot = lease.first_slot + i128::from(j + n - 1) * interval;
            if t < slot {
                return Err(Some((slot - t) as u64));
            }
            process.next = j + n;
            if (lease.permits - process.next) * 2 <= lease.permits && process.waiting.is_none() {
                self.refill(p, now, n);
            }
            return Ok(());
        }
    }

    /// A request that found its process dry, as `LeasedGcra::try_acquire` serves it: it waits
    /// one round trip for the refill it starts, then takes from the new lease at now + rtt
    /// (its grant, if any, is counted at its own `now`: one round trip early in the audit).
    fn refill_and_take(&mut self, p: usize, now: u64, n: u64) -> Result<(), Option<u64>> {
        self.refill(p, now, n);
        let later = now + self.rtt;
        let process = &mut self.processes[p];
        process.current = process.waiting.take();
        process.next = 0;
        process.arrived = later;
        let lease = process.current.expect("just refilled");
        let interval = i128::from(self.rule.interval());
        let t = i128::from(later);
        let deadline = lease.first_deadline;
        let j = if t > deadline {
            ((t - deadline) as u128).div_ceil(interval as u128) as u64
        } else {
            0
        };
        if j + n > lease.permits {
            process.next = lease.permits;
            return Err(Some(self.rtt.max(1)));
        }
        let slot = lease.first_slot + i128::from(j + n - 1) * interval;
        if t < slot {
            process.next = j;
            return Err(Some((slot - i128::from(now)) as u64));
        }
        process.next = j + n;
        Ok(())
    }

    /// Process `p` asks for a lease at `now` (for a request of `n`): the server answers at
    /// now + rtt/2, the lease arrives at now + rtt, as the process's waiting lease.
    fn refill(&mut self, p: usize, now: u64, n: u64) {
        let (interval, tolerance) = (self.rule.interval(), self.rule.tolerance());
        let permits = self.size(p, now, n);
        let process = &mut self.processes[p];
        let server_now = now + self.rtt / 2;
        let start = self.tat.max(server_now);
        self.tat = start + permits * interval;
        let half = i128::from(self.rtt / 2);
        let s = i128::from(start);
        process.waiting = Some(Lease {
            first_slot: s + i128::from(interval) - i128::from(tolerance) + half,
            first_deadline: s - half,
            permits,
            arrives: now + self.rtt,
        });
    }

    /// The next lease's size for process `p` (the crate's rule).
    fn size(&self, p: usize, now: u64, n: u64) -> u64 {
        let interval = self.rule.interval();
        let process = &self.processes[p];
        let floor = n + self.rtt.div_ceil(interval) + 1;
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
        demand.max(floor).min(self.max_lease.max(n))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The GCRA bound holds for the model's grants (every grant at its own time), on a trace
    /// far over the rate spread over 4 processes.
    #[test]
    fn grants_keep_the_gcra_bound() {
        // I = 1 ms, b = 20; round trips of 0.3 ms.
        let rule = GcraRule::new(1_000_000, 20).unwrap();
        let mut model = Leased::new(rule, 4, 300_000, 50_000_000, 1024);
        let mut grants = Vec::new();
        for k in 0..200_000u64 {
            let now = k * 50_000; // a request every 50 µs: 20 × the rate
            if model.try_acquire(now, 1).is_ok() {
                grants.push(now);
            }
        }
        for i in 0..grants.len() {
            for j in i..grants.len() {
                let bound = 20 + (grants[j] - grants[i]) / 1_000_000;
                assert!(
                    (j - i + 1) as u64 <= bound,
                    "{} grants in [{}, {}]",
                    j - i + 1,
                    grants[i],
                    grants[j]
                );
            }
        }
        // 10 s at 1,000/s: most of it is granted.
        assert!(grants.len() > 9_000, "{} grants", grants.len());
    }
}
