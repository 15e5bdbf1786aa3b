//! Sliding-window references: the exact log of grants (the guarantee itself) and the bucketed
//! decision written out sequentially (what `SlidingWindow` must decide, request by request).

/// Every grant `(time, permits)`, in call order, with window queries over it.
#[derive(Debug, Default)]
pub(crate) struct WindowLog {
    grants: Vec<(u64, u64)>,
}

impl WindowLog {
    pub(crate) fn new() -> WindowLog {
        WindowLog::default()
    }

    pub(crate) fn record(&mut self, t: u64, n: u64) {
        self.grants.push((t, n));
    }

    /// Permits granted at times in `lo..=hi`.
    pub(crate) fn granted_in(&self, lo: u64, hi: u64) -> u128 {
        self.grants
            .iter()
            .filter(|&&(t, _)| lo <= t && t <= hi)
            .map(|&(_, n)| u128::from(n))
            .sum()
    }

    /// Permits granted in the window (t − period, t], with t − period clamped at 0.
    pub(crate) fn in_window(&self, t: u64, period: u64) -> u128 {
        let lo = if t >= period { t - period + 1 } else { 0 };
        self.granted_in(lo, t)
    }

    /// The most permits in any window of length `period`: the worst window ends at a grant.
    /// Two pointers over the grants sorted by time, O(k log k).
    pub(crate) fn worst_window(&self, period: u64) -> u128 {
        let mut g = self.grants.clone();
        g.sort_unstable();
        let (mut lo, mut sum, mut worst) = (0, 0u128, 0u128);
        for hi in 0..g.len() {
            sum += u128::from(g[hi].1);
            // Drop grants at or before g[hi].0 − period.
            while g[hi].0 >= period && g[lo].0 <= g[hi].0 - period {
                sum -= u128::from(g[lo].1);
                lo += 1;
            }
            worst = worst.max(sum);
        }
        worst
    }

    pub(crate) fn total(&self) -> u128 {
        self.grants.iter().map(|&(_, n)| u128::from(n)).sum()
    }
}

/// The bucketed decision, sequentially: bucket width w, floor f(now) = ⌊(now − lag) / w⌋
/// (saturating), lag = period − 1 (strict) or period − w (approximate). A request counts every
/// grant in buckets ≥ f(τ), where τ = max(now, x·w) is its effective time: x is the newest
/// bucket any request has reached so far. For non-decreasing times τ = now. Grants are logged
/// at τ.
#[derive(Debug)]
pub(crate) struct BucketModel {
    pub(crate) limit: u64,
    pub(crate) bucket_seen: u64,
    pub(crate) width: u64,
    pub(crate) lag: u64,
    pub(crate) log: WindowLog,
}

impl BucketModel {
    pub(crate) fn new(limit: u64, period: u64, buckets: u64, approximate: bool) -> BucketModel {
        let width = period.div_ceil(buckets);
        let lag = if approximate {
            period - width
        } else {
            period - 1
        };
        BucketModel {
            limit,
            bucket_seen: 0,
            width,
            lag,
            log: WindowLog::new(),
        }
    }

    fn floor(&self, now: u64) -> u64 {
        now.saturating_sub(self.lag) / self.width
    }

    /// Permits the limiter counts at `now`.
    pub(crate) fn counted(&self, now: u64) -> u128 {
        let first = u128::from(self.floor(now)) * u128::from(self.width);
        self.log
            .grants
            .iter()
            .filter(|&&(t, _)| u128::from(t) >= first)
            .map(|&(_, n)| u128::from(n))
            .sum()
    }

    /// The effective time of a request at `now` (and remember its bucket).
    pub(crate) fn effective(&mut self, now: u64) -> u64 {
        self.bucket_seen = self.bucket_seen.max(now / self.width);
        now.max(self.bucket_seen * self.width)
    }

    /// Ok (and records the grant at its effective time) or Err(retry after, in ns from `now`;
    /// None = never).
    pub(crate) fn acquire(&mut self, n: u64, now: u64) -> Result<(), Option<u64>> {
        if n == 0 {
            return Ok(());
        }
        if n > self.limit {
            return Err(None);
        }
        let tau = self.effective(now);
        if self.counted(tau) + u128::from(n) <= u128::from(self.limit) {
            self.log.record(tau, n);
            return Ok(());
        }
        // The first bucket expiry T = (y + 1)·w + lag, y ≥ f(τ), at which the request fits.
        let mut y = self.floor(tau);
        loop {
            let t = (u128::from(y) + 1) * u128::from(self.width) + u128::from(self.lag);
            let t = u64::try_from(t).map_err(|_| None)?;
            if self.counted(t) + u128::from(n) <= u128::from(self.limit) {
                return Err(Some(t - now));
            }
            y += 1;
        }
    }
}

/// Count-closed buckets, sequentially: strict time buckets (lag = period − 1) whose open part
/// also closes once it holds `k` permits. A closed bucket counts until one period after its
/// newest grant; the open part of bucket x counts while x ≥ f(t). A request is judged at
/// τ = the highest `now` seen so far (the limiter's high-water mark). Grants are logged at τ.
#[derive(Debug)]
pub(crate) struct ClosedModel {
    pub(crate) limit: u64,
    pub(crate) k: u64,
    pub(crate) period: u64,
    pub(crate) width: u64,
    pub(crate) latest: u64,
    /// Open part of each bucket: (bucket, permits).
    pub(crate) open: Vec<(u64, u64)>,
    /// Closed buckets: (newest grant time, permits), oldest first.
    pub(crate) closed: Vec<(u64, u64)>,
    /// The most time buckets / closed buckets that ever counted at once.
    pub(crate) max_live_buckets: usize,
    pub(crate) max_live_closed: usize,
    pub(crate) log: WindowLog,
}

impl ClosedModel {
    pub(crate) fn new(limit: u64, period: u64, buckets: u64, k: u64) -> ClosedModel {
        ClosedModel {
            limit,
            k,
            period,
            width: period.div_ceil(buckets),
            latest: 0,
            open: Vec::new(),
            closed: Vec::new(),
            max_live_buckets: 0,
            max_live_closed: 0,
            log: WindowLog::new(),
        }
    }

    /// The slots a strict ring has: ⌈(period − 1) / w⌉ + 1.
    pub(crate) fn ring(&self) -> u64 {
        (self.period - 1).div_ceil(self.width) + 1
    }

    fn floor(&self, t: u64) -> u64 {
        t.saturating_sub(self.period - 1) / self.width
    }

    /// The time bucket y leaves the window: T(y + 1).
    fn bucket_leaves(&self, y: u64) -> u128 {
        (u128::from(y) + 1) * u128::from(self.width) + u128::from(self.period - 1)
    }

    /// Permits counted at `t` with no further grants.
    pub(crate) fn counted(&self, t: u64) -> u128 {
        let f = self.floor(t);
        let open: u128 = self
            .open
            .iter()
            .filter(|&&(x, _)| x >= f)
            .map(|&(_, n)| u128::from(n))
            .sum();
        let closed: u128 = self
            .closed
            .iter()
            .filter(|&&(time, _)| u128::from(time) + u128::from(self.period) > u128::from(t))
            .map(|&(_, n)| u128::from(n))
            .sum();
        open + closed
    }

    /// Ok (and records the grant) or Err(retry after, ns from `now`; None = never).
    pub(crate) fn acquire(&mut self, n: u64, now: u64) -> Result<(), Option<u64>> {
        if n == 0 {
            return Ok(());
        }
        if n > self.limit {
            return Err(None);
        }
        self.latest = self.latest.max(now);
        let tau = self.latest;
        // Forget what no longer counts (it never will again: τ never decreases).
        let f = self.floor(tau);
        self.open.retain(|&(x, _)| x >= f);
        let period = self.period;
        self.closed
            .retain(|&(time, _)| u128::from(time) + u128::from(period) > u128::from(tau));
        if self.counted(tau) + u128::from(n) <= u128::from(self.limit) {
            self.log.record(tau, n);
            let x = tau / self.width;
            let i = match self.open.iter().position(|&(y, _)| y == x) {
                Some(i) => i,
                None => {
                    self.open.push((x, 0));
                    self.open.len() - 1
                }
            };
            self.open[i].1 += n;
            if self.open[i].1 >= self.k {
                self.closed.push((tau, self.open[i].1));
                self.open[i].1 = 0;
            }
            self.max_live_buckets = self.max_live_buckets.max(self.open.len());
            self.max_live_closed = self.max_live_closed.max(self.closed.len());
            return Ok(());
        }
        // Candidate instants: every bucket's and closed bucket's departure; the first at
        // which the request fits.
        let mut times: Vec<u128> = self
            .open
            .iter()
            .map(|&(x, _)| self.bucket_leaves(x))
            .chain(
                self.closed
                    .iter()
                    .map(|&(time, _)| u128::from(time) + u128::from(self.period)),
            )
            .collect();
        times.sort_unstable();
        for t in times {
            let Ok(t) = u64::try_from(t) else {
                return Err(None);
            };
            if self.counted(t) + u128::from(n) <= u128::from(self.limit) {
                return Err(Some(t - now));
            }
        }
        unreachable!("everything counted leaves at one of the candidate instants")
    }
}
