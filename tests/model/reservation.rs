//! GCRA reservations, sequentially: a reservation is the GCRA test with the tolerance widened
//! by its maximum wait; a cancel restores the state only if nothing has changed it since.
//! Plus the audit every trace of grants must pass: at most b + ⌊d/I⌋ permits in any interval
//! of length d.

/// A reservation the model handed out: the TAT it installed and its cost.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ModelReservation {
    pub(crate) tat: u128,
    pub(crate) cost: u128,
    pub(crate) ready_at: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct ReservationModel {
    tat: u128,
    interval: u128,
    tolerance: u128,
    burst: u64,
}

impl ReservationModel {
    /// `limit` per `period_ns` with burst `burst`: I = ceil(period/limit), τ = b·I.
    pub(crate) fn new(limit: u64, period_ns: u64, burst: u64) -> Self {
        let interval = u128::from(period_ns).div_ceil(u128::from(limit));
        ReservationModel {
            tat: 0,
            interval,
            tolerance: u128::from(burst) * interval,
            burst,
        }
    }

    /// Reserve `n` permits at `now`, waiting at most `max_wait`: the reservation, or
    /// `Err(Some(wait))` / `Err(None)` for "never". `n ≥ 1`.
    pub(crate) fn reserve(
        &mut self,
        n: u32,
        now: u64,
        max_wait: u64,
    ) -> Result<ModelReservation, Option<u64>> {
        if u64::from(n) > self.burst {
            return Err(None);
        }
        let now128 = u128::from(now);
        let cost = u128::from(n) * self.interval;
        let next = self.tat.max(now128) + cost;
        let limit = now128 + self.tolerance + u128::from(max_wait);
        if next > limit {
            return Err(Some(u64::try_from(next - limit).unwrap().min(u64::MAX - 1)));
        }
        if next > u128::from(u64::MAX) {
            return Err(None);
        }
        self.tat = next;
        let ready = (next.saturating_sub(self.tolerance)).max(now128);
        Ok(ModelReservation {
            tat: next,
            cost,
            ready_at: u64::try_from(ready).unwrap(),
        })
    }

    /// Give `r` back if the state is still the one it installed; returns whether it did.
    pub(crate) fn cancel(&mut self, r: &ModelReservation) -> bool {
        if self.tat == r.tat {
            self.tat -= r.cost;
            true
        } else {
            false
        }
    }

    pub(crate) fn interval(&self) -> u128 {
        self.interval
    }

    pub(crate) fn burst(&self) -> u64 {
        self.burst
    }
}

/// The GCRA bound over a trace of grants `(time, permits)`: in every interval [g_i, g_j]
/// between two grant times, the permits granted are at most b + ⌊(g_j − g_i) / I⌋. Returns
/// the first violation.
pub(crate) fn audit(grants: &[(u64, u64)], burst: u64, interval: u128) -> Result<(), String> {
    let mut g = grants.to_vec();
    g.sort_unstable();
    for i in 0..g.len() {
        let mut permits = 0u128;
        for j in i..g.len() {
            permits += u128::from(g[j].1);
            let d = u128::from(g[j].0 - g[i].0);
            let bound = u128::from(burst) + d / interval;
            if permits > bound {
                return Err(format!(
                    "{permits} permits in [{}, {}] exceed b + d/I = {bound}",
                    g[i].0, g[j].0
                ));
            }
        }
    }
    Ok(())
}
