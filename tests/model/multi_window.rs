//! Several hard windows at once, sequentially: a request is granted iff every window, judged
//! as its own limiter would judge it, has room; then it is recorded in every window. A denial
//! waits for the latest of the windows' waits. Times must not decrease (each window then
//! judges a call at its `now`). Written from the definitions, in u128.

/// One window's definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spec {
    /// A counted ring: `limit` per `period` ns, `buckets` buckets, the oldest counted whole.
    Ring {
        limit: u64,
        period: u64,
        buckets: u64,
    },
    /// An exact log: `limit` per `period` ns.
    Log { limit: u64, period: u64 },
}

impl Spec {
    pub(crate) fn limit(&self) -> u64 {
        match *self {
            Spec::Ring { limit, .. } | Spec::Log { limit, .. } => limit,
        }
    }

    pub(crate) fn period(&self) -> u64 {
        match *self {
            Spec::Ring { period, .. } | Spec::Log { period, .. } => period,
        }
    }
}

#[derive(Debug)]
pub(crate) struct MultiModel {
    specs: Vec<Spec>,
    /// Every grant `(time, permits)`, in call order (the same for every window).
    grants: Vec<(u64, u64)>,
}

impl MultiModel {
    pub(crate) fn new(specs: Vec<Spec>) -> MultiModel {
        MultiModel {
            specs,
            grants: Vec::new(),
        }
    }

    /// Permits window `spec` counts at `t`.
    fn counted(&self, spec: Spec, t: u128) -> u128 {
        let first = match spec {
            Spec::Ring {
                period, buckets, ..
            } => {
                // Floor f(t) = ⌊(t − (period − 1)) / w⌋, saturating; counts buckets ≥ f.
                let w = u128::from(period.div_ceil(buckets));
                t.saturating_sub(u128::from(period) - 1) / w * w
            }
            // (t − period, t]: grants at times ≥ t − period + 1.
            Spec::Log { period, .. } => (t + 1).saturating_sub(u128::from(period)),
        };
        self.grants
            .iter()
            .filter(|&&(g, _)| u128::from(g) >= first)
            .map(|&(_, n)| u128::from(n))
            .sum()
    }

    /// The wait of window `spec` for `n` at `now`: 0 if it has room.
    fn wait(&self, spec: Spec, n: u64, now: u64) -> u128 {
        let fits = |t: u128| self.counted(spec, t) + u128::from(n) <= u128::from(spec.limit());
        let now = u128::from(now);
        if fits(now) {
            return 0;
        }
        // The count only changes when a grant (or a bucket) leaves: try each such instant.
        let mut leaves: Vec<u128> = match spec {
            Spec::Ring {
                period, buckets, ..
            } => {
                let w = u128::from(period.div_ceil(buckets));
                // Bucket y leaves at (y + 1)·w + period − 1.
                self.grants
                    .iter()
                    .map(|&(g, _)| (u128::from(g) / w + 1) * w + u128::from(period) - 1)
                    .collect()
            }
            Spec::Log { period, .. } => self
                .grants
                .iter()
                .map(|&(g, _)| u128::from(g) + u128::from(period))
                .collect(),
        };
        leaves.sort_unstable();
        let t = leaves
            .into_iter()
            .filter(|&t| t > now)
            .find(|&t| fits(t))
            .expect("every window is empty once its grants leave");
        t - now
    }

    /// Ok, or Err(retry after in ns from `now`; None = never).
    pub(crate) fn acquire(&mut self, n: u32, now: u64) -> Result<(), Option<u64>> {
        if n == 0 {
            return Ok(());
        }
        let n = u64::from(n);
        if self.specs.iter().any(|s| n > s.limit()) {
            return Err(None);
        }
        let wait = self
            .specs
            .iter()
            .map(|&s| self.wait(s, n, now))
            .max()
            .unwrap_or(0);
        if wait == 0 {
            self.grants.push((now, n));
            return Ok(());
        }
        Err(Some(u64::try_from(wait).unwrap()))
    }

    /// The fewest permits any window has left at `now`.
    pub(crate) fn remaining(&self, now: u64) -> u64 {
        self.specs
            .iter()
            .map(|&s| {
                let left = u128::from(s.limit()).saturating_sub(self.counted(s, u128::from(now)));
                u64::try_from(left).unwrap()
            })
            .min()
            .unwrap()
    }

    /// Every grant, `(time, permits)`.
    pub(crate) fn grants(&self) -> &[(u64, u64)] {
        &self.grants
    }
}
