//! Replaying a trace: the decisions, the metrics, and the series the pictures draw.

use crate::error::SimError;
use crate::limiters::{SimLimiter, Spec};
use crate::trace::Trace;
use crate::window::ExactWindow;

/// What one limiter shows at one instant of the picture's time grid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Sample {
    /// The instant, nanoseconds.
    pub(crate) at: u64,
    /// Permits granted so far.
    pub(crate) used: u64,
    /// Permits granted at least one period ago (they left the window).
    pub(crate) freed: u64,
    /// `limit` minus the permits this limiter granted in the window ending here: what the
    /// exact log would have free after the same grants (negative: the window is over).
    pub(crate) exact_free: i64,
    /// What the limiter reports as free (`remaining_at`).
    pub(crate) reported: u64,
    /// The lowest `exact_free` since the previous sample (after each grant).
    pub(crate) min_free: i64,
}

/// One limiter's replay of one trace.
#[derive(Clone, Debug)]
pub(crate) struct Outcome {
    /// None for the exact log itself.
    pub(crate) spec: Option<Spec>,
    pub(crate) label: String,
    pub(crate) slug: String,
    /// Requests in the trace.
    pub(crate) requests: u64,
    /// Permits granted.
    pub(crate) granted: u64,
    /// Requests denied although the exact window over this limiter's own grants had room.
    pub(crate) false_denials: u64,
    /// The most permits this limiter granted in any window of one period.
    pub(crate) worst: u64,
    /// The longest stretch of false denial, in nanoseconds: from a false denial until the
    /// limiter grants again, i.e. to the next request that is not a false denial, or sooner
    /// to the instant the last false denial's `retry_after` named (what the limiter itself
    /// said); at the end of the trace, to that instant or the end.
    pub(crate) longest_false: u64,
    /// The picture's series.
    pub(crate) samples: Vec<Sample>,
    /// The stretches of false denial, in time order: (start, end, the most room the exact
    /// window had at one of its denials), nanoseconds. Stretches closer than one sample
    /// interval are merged, so there are at most about as many as samples.
    pub(crate) stretches: Vec<(u64, u64, u64)>,
}

impl Outcome {
    /// Permits granted as a share of the exact log's, in percent.
    pub(crate) fn utilisation(&self, exact: &Outcome) -> f64 {
        if exact.granted == 0 {
            100.0
        } else {
            100.0 * self.granted as f64 / exact.granted as f64
        }
    }

    /// False denials as a share of all requests, in percent.
    pub(crate) fn false_share(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            100.0 * self.false_denials as f64 / self.requests as f64
        }
    }

    /// Permits above `limit` in the fullest window (0 when never over).
    pub(crate) fn over(&self, limit: u64) -> u64 {
        self.worst.saturating_sub(limit)
    }
}

/// A trace replayed through the exact log and a set of limiters.
#[derive(Clone, Debug)]
pub(crate) struct Run {
    pub(crate) trace_name: String,
    pub(crate) trace_slug: String,
    pub(crate) trace_short: String,
    pub(crate) limit: u64,
    pub(crate) period: u64,
    pub(crate) end: u64,
    /// The reference: the exact sliding log on the same requests.
    pub(crate) exact: Outcome,
    pub(crate) limiters: Vec<Outcome>,
}

impl Run {
    /// The outcome of `spec`, if it was run.
    pub(crate) fn get(&self, spec: Spec) -> Option<&Outcome> {
        self.limiters.iter().find(|o| o.spec == Some(spec))
    }
}

/// Anything that decides requests in time order.
trait Decider {
    /// `Ok` if granted, else when to retry (nanoseconds from `now`; `None`: never).
    fn decide(&mut self, now: u64, permits: u32) -> Result<(), Option<u64>>;
    fn reported_free(&mut self, now: u64) -> u64;
}

impl Decider for SimLimiter {
    fn decide(&mut self, now: u64, permits: u32) -> Result<(), Option<u64>> {
        self.try_acquire(now, permits)
    }
    fn reported_free(&mut self, now: u64) -> u64 {
        SimLimiter::reported_free(self, now)
    }
}

impl Decider for ExactWindow {
    fn decide(&mut self, now: u64, permits: u32) -> Result<(), Option<u64>> {
        // The reference never denies falsely, so its stretches need no retry time.
        if self.try_acquire(now, u64::from(permits)) {
            Ok(())
        } else {
            Err(None)
        }
    }
    fn reported_free(&mut self, now: u64) -> u64 {
        self.free_at(now).max(0) as u64
    }
}

/// Replays `trace` through the exact log and every spec in `specs` (leaving key pools out of
/// a trace whose requests cost more than one permit), with `samples` points per series;
/// `progress` is told how many requests were replayed as they go (a progress bar, or nothing).
pub(crate) fn run(
    trace: &Trace,
    specs: &[Spec],
    samples: usize,
    progress: &dyn Fn(u64),
) -> Result<Run, SimError> {
    let (limit, period) = (trace.rate.limit(), trace.rate.period_nanos());
    let mut reference = ExactWindow::new(limit, period);
    let exact = replay(trace, &mut reference, None, samples, progress);
    let mut limiters = Vec::new();
    for &spec in specs {
        if spec.is_pool() && trace.has_costs() {
            continue;
        }
        let mut limiter = SimLimiter::new(spec, trace.rate)?;
        limiters.push(replay(trace, &mut limiter, Some(spec), samples, progress));
    }
    Ok(Run {
        trace_name: trace.name.clone(),
        trace_slug: trace.slug.clone(),
        trace_short: trace.short.clone(),
        limit,
        period,
        end: trace.end,
        exact,
        limiters,
    })
}

/// One limiter through the trace.
fn replay(
    trace: &Trace,
    decider: &mut dyn Decider,
    spec: Option<Spec>,
    samples: usize,
    progress: &dyn Fn(u64),
) -> Outcome {
    let (limit, period) = (trace.rate.limit(), trace.rate.period_nanos());
    let mut audit = ExactWindow::new(limit, period);
    let samples = samples.max(1);
    // Sample j is at end·(j+1)/samples (the last at the trace's end), taken after the
    // requests at its instant.
    let grid = |j: usize| (u128::from(trace.end) * (j as u128 + 1) / samples as u128) as u64;
    let mut series = Vec::with_capacity(samples);
    let mut next = 0;
    let mut min_free = limit as i64;
    let mut emit =
        |at: u64, audit: &mut ExactWindow, decider: &mut dyn Decider, min_free: &mut i64| {
            let exact_free = audit.free_at(at);
            series.push(Sample {
                at,
                used: audit.used(),
                freed: audit.freed(),
                exact_free,
                reported: decider.reported_free(at),
                min_free: (*min_free).min(exact_free),
            });
            *min_free = limit as i64;
        };
    let (mut false_denials, mut longest) = (0u64, 0u64);
    // The open stretch of false denials: (its start, when the last one said to retry, the
    // most room at one of them).
    let mut stretch: Option<(u64, u64, u64)> = None;
    let mut stretches: Vec<(u64, u64, u64)> = Vec::new();
    let cell = trace.end / samples as u64;
    let mut close = |start: u64, end: u64, room: u64, longest: &mut u64| {
        *longest = (*longest).max(end - start);
        match stretches.last_mut() {
            Some(last) if start.saturating_sub(last.1) < cell => {
                last.1 = last.1.max(end);
                last.2 = last.2.max(room);
            }
            _ => stretches.push((start, end, room)),
        }
    };
    for (i, r) in trace.requests.iter().enumerate() {
        while next < samples && grid(next) < r.at {
            emit(grid(next), &mut audit, decider, &mut min_free);
            next += 1;
        }
        let cost = u64::from(r.cost);
        let room = audit.free_at(r.at);
        let decision = decider.decide(r.at, r.cost);
        let false_denial = decision.is_err() && room >= cost as i64;
        match decision {
            Ok(()) => {
                audit.add(r.at, cost);
                min_free = min_free.min(audit.free_at(r.at));
            }
            Err(retry) if false_denial => {
                false_denials += 1;
                let until = r.at.saturating_add(retry.unwrap_or(u64::MAX));
                let (start, most) = stretch.map_or((r.at, 0), |(s, _, m)| (s, m));
                stretch = Some((start, until, most.max(room as u64)));
            }
            Err(_) => {}
        }
        if !false_denial {
            if let Some((start, until, room)) = stretch.take() {
                close(start, r.at.min(until), room, &mut longest);
            }
        }
        if i % 4096 == 4095 {
            progress(4096);
        }
    }
    progress(trace.requests.len() as u64 % 4096);
    if let Some((start, until, room)) = stretch {
        close(start, trace.end.max(start).min(until), room, &mut longest);
    }
    while next < samples {
        emit(grid(next), &mut audit, decider, &mut min_free);
        next += 1;
    }
    let (label, slug) = match spec {
        Some(s) => (s.label(), s.slug()),
        None => ("exact sliding log (reference)".into(), "exact".into()),
    };
    Outcome {
        spec,
        label,
        slug,
        requests: trace.requests.len() as u64,
        granted: audit.used(),
        false_denials,
        worst: audit.worst(),
        longest_false: longest,
        samples: series,
        stretches,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{self, Request};
    use crate::units::SECOND;
    use hotlimit::Rate;

    fn ms(ms: u64) -> u64 {
        ms * 1_000_000
    }

    /// 2 per second; a strict window of 2 buckets (500 ms). Worked by hand:
    ///
    /// | t (ms) | exact window over the limiter's grants | strict window counts | limiter | false? |
    /// |---|---|---|---|---|
    /// | 0    | {} room 2         | bucket 0: 0       | grant | |
    /// | 400  | {0} room 1        | bucket 0: 1       | grant | |
    /// | 1000 | {400} room 1 (0 left at 1000) | from bucket 0 (floor ⌊(1000 − 999.999999)/500⌋ = 0): 2 | deny | yes |
    /// | 1200 | {400} room 1      | from bucket 0: 2  | deny | yes |
    /// | 1500 | {} room 2         | from bucket 1: 0  | grant | |
    /// | 1600 | {1500} room 1     | from bucket 1: 1  | grant | |
    /// | 1700 | {1500, 1600} room 0 | 2               | deny | no (truly full) |
    ///
    /// The exact log on its own: grants 0, 400, 1000, 1500 (1200, 1600, 1700 find it full).
    #[test]
    fn a_hand_computed_trace_counts_exact_false_denials() {
        let rate = Rate::per_second(2).unwrap();
        let requests = [0, 400, 1000, 1200, 1500, 1600, 1700]
            .map(|t| Request { at: ms(t), cost: 1 })
            .to_vec();
        let trace = Trace {
            name: "hand".into(),
            slug: "hand".into(),
            short: "hand".into(),
            rate,
            end: 2 * SECOND,
            requests,
            pool_keys: None,
        };
        let specs = [Spec::TimeClosed { buckets: 2 }, Spec::SlidingLog];
        let run = run(&trace, &specs, 4, &|_| {}).unwrap();
        assert_eq!(run.exact.granted, 4);
        assert_eq!(run.exact.false_denials, 0);
        let strict = &run.limiters[0];
        assert_eq!(strict.granted, 4);
        assert_eq!(strict.false_denials, 2);
        // From the first false denial (1000 ms) to when the one at 1200 ms said to retry:
        // bucket 0 leaves the window at 1500 ms − 1 ns (the floor ⌊(now − 999.999999 ms) /
        // 500 ms⌋ reaches 1), before the next request (1500 ms).
        assert_eq!(strict.longest_false, ms(500) - 1);
        assert_eq!(strict.worst, 2);
        assert_eq!(strict.utilisation(&run.exact), 100.0);
        assert!((strict.false_share() - 200.0 / 7.0).abs() < 1e-9);
        let log = &run.limiters[1];
        assert_eq!((log.granted, log.false_denials, log.worst), (4, 0, 2));
        assert_eq!(strict.stretches, [(ms(1000), ms(1500) - 1, 1)]);
        // Samples at 500, 1000, 1500, 2000 ms, each after the requests at its instant.
        let used: Vec<u64> = strict.samples.iter().map(|s| s.used).collect();
        assert_eq!(used, [2, 2, 3, 4]);
        // The grant at 0 leaves at 1000 ms, the one at 400 at 1400 ms.
        let freed: Vec<u64> = strict.samples.iter().map(|s| s.freed).collect();
        assert_eq!(freed, [0, 1, 2, 2]);
    }

    #[test]
    fn approximate_mode_doubles_the_window_on_the_edge_burst_and_strict_never_over_admits() {
        let rate = Rate::per_second(20).unwrap();
        let trace = trace::edge(rate, 10, 4 * SECOND);
        let specs = [
            Spec::Approximate { buckets: 10 },
            Spec::TimeClosed { buckets: 10 },
            Spec::Both { buckets: 10, k: 4 },
        ];
        let run = run(&trace, &specs, 10, &|_| {}).unwrap();
        assert_eq!(run.exact.worst, 20);
        assert_eq!(run.limiters[0].worst, 40);
        assert_eq!(run.limiters[0].utilisation(&run.exact), 200.0);
        assert_eq!(run.limiters[1].worst, 20);
        assert_eq!(run.limiters[2].worst, 20);
    }
}
