//! The GCRA definition, sequentially: S' = max(S, now) + n·I; grant iff S' ≤ now + τ.

/// A model's decision: `Ok`, or `Err(Some(wait_ns))`, or `Err(None)` for "never".
pub(crate) type Decision = Result<(), Option<u64>>;

#[derive(Debug, Clone)]
pub(crate) struct GcraModel {
    tat: u128,
    interval: u128,
    tolerance: u128,
    burst: u64,
}

impl GcraModel {
    /// `limit` per `period_ns` with burst `burst`: I = ceil(period/limit), τ = b·I.
    pub(crate) fn new(limit: u64, period_ns: u64, burst: u64) -> Self {
        let interval = u128::from(period_ns).div_ceil(u128::from(limit));
        GcraModel {
            tat: 0,
            interval,
            tolerance: u128::from(burst) * interval,
            burst,
        }
    }

    pub(crate) fn acquire(&mut self, n: u32, now: u64) -> Decision {
        if n == 0 {
            return Ok(());
        }
        if u64::from(n) > self.burst {
            return Err(None);
        }
        let now = u128::from(now);
        let next = self.tat.max(now) + u128::from(n) * self.interval;
        if next > now + self.tolerance {
            let wait = next - now - self.tolerance;
            // The limiter reserves u64::MAX for "never"; it clamps a real wait below it.
            return Err(Some(u64::try_from(wait).unwrap().min(u64::MAX - 1)));
        }
        if next > u128::from(u64::MAX) {
            // The state would not fit the clock's range: documented as "never".
            return Err(None);
        }
        self.tat = next;
        Ok(())
    }
}

impl GcraModel {
    /// The state's TAT (for the bound checks).
    pub(crate) fn tat(&self) -> u128 {
        self.tat
    }

    /// The emission interval and burst in force.
    pub(crate) fn params(&self) -> (u128, u64) {
        (self.interval, self.burst)
    }

    /// Permits a request at `now` could take (the limiter's `remaining_at`).
    pub(crate) fn remaining(&self, now: u64) -> u128 {
        let ahead = self.tat.saturating_sub(u128::from(now));
        self.tolerance.saturating_sub(ahead) / self.interval
    }

    /// A rate change at `now`, by the documented rule, written out plainly: carry the free
    /// time as the same number of permits, at most the new tolerance; keep time queued beyond
    /// the tolerance; never move the TAT below its highest value so far plus 1 (grants only
    /// here, so that is the TAT itself). Parameters that leave I and τ unchanged change nothing.
    pub(crate) fn rerate(&mut self, limit: u64, period_ns: u64, burst: u64, now: u64) {
        let interval = u128::from(period_ns).div_ceil(u128::from(limit));
        let tolerance = u128::from(burst) * interval;
        if (interval, tolerance) != (self.interval, self.tolerance) {
            let now = u128::from(now);
            let owed = self.tat.max(now) - now;
            let free = self.tolerance.saturating_sub(owed);
            let queued = owed.saturating_sub(self.tolerance);
            let free2 = (free * interval / self.interval).min(tolerance);
            let carried = now + (tolerance - free2) + queued;
            self.tat = carried.max(self.tat + 1).min(u128::from(u64::MAX));
        }
        self.interval = interval;
        self.tolerance = tolerance;
        self.burst = burst;
    }
}
