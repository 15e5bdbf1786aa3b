//! Per-key GCRA, sequentially: one GCRA definition per key, in u128, states kept forever (an
//! idle state, TAT ≤ now, equals a fresh one, so a limiter that evicts it is still exact).

use std::collections::HashMap;

use super::gcra::Decision;

#[derive(Debug, Clone)]
pub(crate) struct IntKeyedModel {
    interval: u128,
    tolerance: u128,
    burst: u64,
    tats: HashMap<u64, u128>,
}

impl IntKeyedModel {
    /// `limit` per `period_ns` with burst `burst` for every key: I = ceil(period/limit).
    pub(crate) fn new(limit: u64, period_ns: u64, burst: u64) -> Self {
        let interval = u128::from(period_ns).div_ceil(u128::from(limit));
        IntKeyedModel {
            interval,
            tolerance: u128::from(burst) * interval,
            burst,
            tats: HashMap::new(),
        }
    }

    /// The GCRA decision for `key`, without applying it.
    pub(crate) fn peek(&self, key: u64, n: u32, now: u64) -> (Decision, Option<u128>) {
        if n == 0 {
            return (Ok(()), None);
        }
        if u64::from(n) > self.burst {
            return (Err(None), None);
        }
        let now = u128::from(now);
        let tat = self.tats.get(&key).copied().unwrap_or(0);
        let next = tat.max(now) + u128::from(n) * self.interval;
        if next > now + self.tolerance {
            let wait = next - now - self.tolerance;
            return (
                Err(Some(u64::try_from(wait).unwrap().min(u64::MAX - 1))),
                None,
            );
        }
        (Ok(()), Some(next))
    }

    /// Apply a grant that `peek` returned.
    pub(crate) fn commit(&mut self, key: u64, next: Option<u128>) {
        if let Some(next) = next {
            self.tats.insert(key, next);
        }
    }

    /// The key's state equals a fresh one at `now` (so the limiter may hold it or not).
    pub(crate) fn is_idle(&self, key: u64, now: u64) -> bool {
        self.tats.get(&key).is_none_or(|&t| t <= u128::from(now))
    }

    /// Permits the key could take at `now`.
    pub(crate) fn remaining(&self, key: u64, now: u64) -> u64 {
        let tat = self.tats.get(&key).copied().unwrap_or(0);
        let ahead = tat.saturating_sub(u128::from(now));
        u64::try_from(self.tolerance.saturating_sub(ahead) / self.interval).unwrap()
    }

    /// For each key not yet evictable, the waits until it may be: `IntKeyed` replaces a
    /// one-shot key (granted once since its state was created) from its TAT on, one whose
    /// grant is under way 1 ns after it, and a returning key 1 ns after it has been idle for its
    /// tolerance τ (issues 42 and 43). The model keeps states forever and does not know which
    /// the limiter evicted (a re-created key counts its grants afresh), so each key offers
    /// every wait it may have.
    pub(crate) fn busy_waits(&self, now: u64) -> Vec<u64> {
        let now = u128::from(now);
        self.tats
            .values()
            .flat_map(|&t| [t, t + 1, t + self.tolerance + 1])
            .filter(|&at| at > now)
            .map(|at| u64::try_from(at - now).unwrap())
            .collect()
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.tats.keys().copied()
    }
}
