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
