//! The denial of a [`ShardedGcra`] request no shard could serve: its exact `retry_after` (the
//! earliest time the shards together release the request), and for a single permit the hint
//! it leaves for the denials after it (`sharded/hint.rs`).

use super::*;

impl<C> ShardedGcra<C> {
    /// The denial for `n` at `now`: the earliest t ≥ now at which the shards together have
    /// released n permits, or "never" if at that time the state would not fit in u64.
    pub(super) fn denial(&self, n: u64, now: u64) -> Denied {
        let (mut opened, mut earliest) = (None, 0);
        let at = if n == 1 {
            // A hint may be published from these reads: the hint word is read first.
            opened = self.empty.open(now);
            // The earliest single permit: min_k (S_k − τ_k + I_k), in i128 as S_k < τ_k is
            // possible. No search needed.
            let mut first = i128::MAX;
            for (k, shard) in self.shards.iter().enumerate() {
                let tat = shard.load();
                let p = shard.rest_params();
                let t = i128::from(tat) - i128::from(p.tolerance) + i128::from(p.interval);
                if t < first {
                    (first, earliest) = (t, k);
                }
            }
            // The earliest is at most max_k S_k ≤ u64::MAX.
            u64::try_from(first.max(i128::from(now))).unwrap_or(u64::MAX)
        } else {
            self.search(n, now)
        };
        if self.total_at(at, Shard::available) < n {
            // Concurrent grants since the first look, or the clock's range is exhausted.
            if self.total_at(at, Shard::released) >= n {
                return Denied::never();
            }
        } else if let Some(opened) = opened.filter(|_| at > now) {
            // Every shard read above frees no permit before `at`: until a give-back or a rate
            // change lowers one, single-permit denials before `at` need only the hint.
            self.empty.publish(opened, at, earliest);
        }
        Denied::after_nanos(at - now)
    }

    /// The smallest t ≥ now at which Σ released(t) ≥ n, by binary search (released is
    /// nondecreasing in t); O(S · log(range)). Under concurrent changes the result is only a
    /// hint, but the search always ends.
    fn search(&self, n: u64, now: u64) -> u64 {
        if self.total_at(now, Shard::released) >= n {
            return now;
        }
        // At t = max_k S_k every shard is full: Σ b_k = b ≥ n.
        let mut hi = now;
        for shard in self.shards.iter() {
            hi = hi.max(shard.load());
        }
        let mut lo = now; // invariant: total(lo) < n ≤ total(hi), unless concurrently changed
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.total_at(mid, Shard::released) >= n {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }

    /// Σ_k f(shard k, its state, t).
    pub(super) fn total_at(&self, t: u64, f: fn(&Shard, u64, u64) -> u64) -> u64 {
        self.shards
            .iter()
            .map(|shard| f(shard, shard.load(), t))
            // Saturating: a snapshot racing a rate change may read a mix of parameter sets
            // (the caller decides again after a change); nothing may panic on it.
            .fold(0, u64::saturating_add)
    }
}
