//! The exact sliding log, sequentially: every grant's time, kept in a list.
//!
//! A request for n permits at `now` is granted iff the grants still in the window, plus n, are
//! at most `limit`. A grant counts until `period` after its time: grants recorded after `now`
//! (the clock was set back) still count, so going back frees nothing. A grant at a `now` below
//! the newest recorded time is recorded at that newest time ("no time has passed"). Times are
//! u128 so that nothing overflows.

use std::collections::VecDeque;

pub(crate) use super::gcra::Decision;

#[derive(Debug, Clone)]
pub(crate) struct LogModel {
    limit: u64,
    period: u128,
    /// Recorded grant times, oldest first (recording at max(now, newest) keeps them sorted).
    /// A grant keeps only the newest `limit`: an older grant t ≤ every kept one, so whenever t
    /// still counts all `limit` kept ones do too, and any request is denied regardless of t.
    /// A limit change keeps them all (see `set_limit`).
    log: VecDeque<u128>,
}

impl LogModel {
    pub(crate) fn new(limit: u64, period_ns: u64) -> Self {
        LogModel {
            limit,
            period: u128::from(period_ns),
            log: VecDeque::new(),
        }
    }

    /// Grants still in the window at `now`: those with t + period > now.
    fn in_window(&self, now: u128) -> Vec<u128> {
        self.log
            .iter()
            .copied()
            .filter(|&t| t + self.period > now)
            .collect()
    }

    pub(crate) fn acquire(&mut self, n: u32, now: u64) -> Decision {
        if n == 0 {
            return Ok(());
        }
        let n = u64::from(n);
        if n > self.limit {
            return Err(None);
        }
        if now == u64::MAX {
            // The limiter cannot record a grant at the end of the clock's range.
            return Err(None);
        }
        let now = u128::from(now);
        let counted = self.in_window(now);
        let counted_len = counted.len() as u64;
        if counted_len + n <= self.limit {
            let at = self.log.back().map_or(now, |&newest| newest.max(now));
            for _ in 0..n {
                self.log.push_back(at);
            }
            while self.log.len() as u64 > self.limit {
                self.log.pop_front();
            }
            return Ok(());
        }
        // The oldest `counted + n − limit` counted grants must leave the window first; the
        // last of them leaves at its time + period.
        let must_leave = (counted_len + n - self.limit) as usize;
        let free_at = counted[must_leave - 1] + self.period;
        if free_at >= u128::from(u64::MAX) {
            // Frees only at the end of the clock's range, where nothing can be granted.
            return Err(None);
        }
        Err(Some(u64::try_from(free_at - now).unwrap()))
    }

    /// The recorded grant times, oldest first (the newest `limit` grants, in or out of the
    /// window).
    pub(crate) fn grants(&self) -> Vec<u128> {
        self.log.iter().copied().collect()
    }

    /// Grants in the window at `now` (for tests that want a count).
    pub(crate) fn used(&self, now: u64) -> usize {
        self.in_window(u128::from(now)).len()
    }
}

impl LogModel {
    /// A limit change that keeps every grant: each counts until it leaves the window, under
    /// whatever limit is in force then. Nothing is dropped here: under a lower limit the older
    /// grants decide nothing (while one counts, the newest `limit` do too), but a later raise
    /// judges by them again (issue 43: dropping them let 50 → 3 → 50 at one instant admit 97
    /// in one window). A grant drops what is older than the newest `limit` once it is granted:
    /// then fewer than `limit` counted, so those had left the window for good.
    pub(crate) fn set_limit(&mut self, limit: u64) {
        self.limit = limit;
    }
}
