//! The exact sliding window: the reference every limiter is judged against.
//!
//! A window of length `period` ending at t is (t − period, t]: a permit granted at g is in it
//! while g > t − period, and leaves at g + period exactly. The same structure serves two
//! purposes: as the *exact log* it decides (grant iff the window has room), and as an
//! *audit* it follows a limiter's own grants, to say whether a denial was false and how full
//! any window got.

use std::collections::VecDeque;

/// The grants in the window ending at the last time it was brought to, with their total.
#[derive(Clone, Debug)]
pub(crate) struct ExactWindow {
    limit: u64,
    period: u64,
    /// (time, permits), oldest first.
    grants: VecDeque<(u64, u64)>,
    /// The permits in `grants`.
    held: u64,
    /// Permits ever added.
    used: u64,
    /// The most permits any window has held.
    worst: u64,
}

impl ExactWindow {
    pub(crate) fn new(limit: u64, period: u64) -> ExactWindow {
        ExactWindow {
            limit,
            period,
            grants: VecDeque::new(),
            held: 0,
            used: 0,
            worst: 0,
        }
    }

    /// Moves the window's end to `now` (not before the last call's), dropping what left.
    pub(crate) fn advance(&mut self, now: u64) {
        while let Some(&(at, n)) = self.grants.front() {
            if at.saturating_add(self.period) > now {
                break;
            }
            self.grants.pop_front();
            self.held -= n;
        }
    }

    /// The permits free in the window ending at `now`: `limit − held`, negative when the
    /// window holds more than the limit (a limiter that over-admitted).
    pub(crate) fn free_at(&mut self, now: u64) -> i64 {
        self.advance(now);
        self.limit as i64 - self.held as i64
    }

    /// Records `permits` granted at `now`.
    pub(crate) fn add(&mut self, now: u64, permits: u64) {
        self.advance(now);
        self.grants.push_back((now, permits));
        self.held += permits;
        self.used += permits;
        self.worst = self.worst.max(self.held);
    }

    /// The exact log's decision: grant `permits` at `now` iff the window has room for them.
    pub(crate) fn try_acquire(&mut self, now: u64, permits: u64) -> bool {
        let fits = self.free_at(now) >= permits as i64;
        if fits {
            self.add(now, permits);
        }
        fits
    }

    /// Permits ever granted.
    pub(crate) fn used(&self) -> u64 {
        self.used
    }

    /// Permits that have left the window (granted at least `period` ago).
    pub(crate) fn freed(&self) -> u64 {
        self.used - self.held
    }

    /// The most permits any window of length `period` has held.
    pub(crate) fn worst(&self) -> u64 {
        self.worst
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_leaves_exactly_one_period_later() {
        let mut w = ExactWindow::new(2, 1_000);
        assert!(w.try_acquire(0, 1));
        assert!(w.try_acquire(400, 1));
        assert!(!w.try_acquire(999, 1));
        assert!(w.try_acquire(1_000, 1)); // the grant at 0 left at 1000
        assert_eq!((w.used(), w.freed(), w.worst()), (3, 1, 2));
        w.add(1_000, 3); // an over-admission, as an audit sees it
        assert_eq!(w.free_at(1_000), -3);
        assert_eq!(w.worst(), 5);
    }
}
