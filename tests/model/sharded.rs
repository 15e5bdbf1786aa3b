//! ShardedGcra, sequentially: S independent GCRA definitions pooled on admission. A request
//! for n is granted iff the shards together hold n; it is taken whole from the home shard if
//! it fits, else whole from the first other shard (in order home+1, home+2, ...) that holds
//! it, else split greedily in that order starting at the home. A denial waits for the n-th
//! permit release among all shards, found by listing every release time (no search).

use super::gcra::Decision;

#[derive(Debug, Clone)]
struct ShardModel {
    tat: u128,
    interval: u128,
    tolerance: u128,
    burst: u64,
}

impl ShardModel {
    /// Permits grantable at `now`: m with max(S, now) + m·I ≤ now + τ, and the new state
    /// within u64.
    fn available(&self, now: u128) -> u64 {
        let base = self.tat.max(now);
        if base > now + self.tolerance {
            return 0;
        }
        let by_burst = (now + self.tolerance - base) / self.interval;
        let by_range = (u128::from(u64::MAX) - base) / self.interval;
        u64::try_from(by_burst.min(by_range)).unwrap()
    }

    fn take(&mut self, m: u64, now: u128) {
        assert!(m <= self.available(now));
        self.tat = self.tat.max(now) + u128::from(m) * self.interval;
    }
}

#[derive(Debug, Clone)]
pub(crate) struct ShardedModel {
    shards: Vec<ShardModel>,
    burst: u64,
}

impl ShardedModel {
    /// `limit` per `period_ns`, burst `burst`, `s` shards: l_k and b_k are the even shares
    /// with remainders to the first shards; I = ⌈period/limit⌉; I_k = ⌈I·limit/l_k⌉.
    pub(crate) fn new(limit: u64, period_ns: u64, burst: u64, s: u64) -> Self {
        let interval = u128::from(period_ns).div_ceil(u128::from(limit));
        let shards = (0..s)
            .map(|k| {
                let l = limit / s + u64::from(k < limit % s);
                let b = burst / s + u64::from(k < burst % s);
                let i = (interval * u128::from(limit)).div_ceil(u128::from(l));
                ShardModel {
                    tat: 0,
                    interval: i,
                    tolerance: u128::from(b) * i,
                    burst: b,
                }
            })
            .collect();
        ShardedModel { shards, burst }
    }

    pub(crate) fn shard_intervals(&self) -> Vec<u128> {
        self.shards.iter().map(|s| s.interval).collect()
    }

    pub(crate) fn remaining(&self, now: u64) -> u64 {
        self.shards
            .iter()
            .map(|s| s.available(u128::from(now)))
            .sum()
    }

    pub(crate) fn acquire_on(&mut self, home: usize, n: u32, now: u64) -> Decision {
        if n == 0 {
            return Ok(());
        }
        let n = u64::from(n);
        if n > self.burst {
            return Err(None);
        }
        let s = self.shards.len();
        let order: Vec<usize> = (0..s).map(|i| (home % s + i) % s).collect();
        let t = u128::from(now);
        for &k in &order {
            if self.shards[k].available(t) >= n {
                self.shards[k].take(n, t);
                return Ok(());
            }
        }
        let total: u64 = self.shards.iter().map(|x| x.available(t)).sum();
        if total >= n {
            let mut need = n;
            for &k in &order {
                let m = self.shards[k].available(t).min(need);
                if m > 0 {
                    self.shards[k].take(m, t);
                    need -= m;
                }
            }
            assert_eq!(need, 0);
            return Ok(());
        }
        // Every permit's release time S_k − τ_k + m·I_k, m = 1..=b_k; the n-th smallest (not
        // before now) is when the shards together hold n again (ignoring the u64 range).
        let mut releases: Vec<i128> = self
            .shards
            .iter()
            .flat_map(|x| {
                (1..=x.burst).map(move |m| {
                    x.tat as i128 - x.tolerance as i128 + i128::from(m) * x.interval as i128
                })
            })
            .collect();
        releases.sort_unstable();
        let at = releases[n as usize - 1].max(i128::from(now)) as u128;
        let held: u64 = self.shards.iter().map(|x| x.available(at)).sum();
        if held < n {
            // The state would not fit in u64 at that time: the clock's range is exhausted.
            return Err(None);
        }
        let wait = u64::try_from(at - t).unwrap();
        Err(Some(wait.min(u64::MAX - 1)))
    }
}
