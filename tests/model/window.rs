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

/// The bucketed decision, sequentially, for non-decreasing times: bucket width w, floor
/// f(now) = ⌊(now − lag) / w⌋ (saturating), lag = period − 1 (strict) or period − w
/// (approximate). A request counts every grant in buckets ≥ f(τ), where τ = max(now, T(s)) is
/// its effective time: s is the highest floor seen so far and T(s) = s·w + lag (T(0) = 0) the
/// first time whose floor is s. For non-decreasing times τ = now. Grants are logged at τ.
#[derive(Debug)]
pub(crate) struct BucketModel {
    pub(crate) limit: u64,
    pub(crate) floor_seen: u64,
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
            floor_seen: 0,
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

    /// The effective time of a request at `now` (and remember its floor).
    pub(crate) fn effective(&mut self, now: u64) -> u64 {
        self.floor_seen = self.floor_seen.max(self.floor(now));
        let start = if self.floor_seen == 0 {
            0
        } else {
            self.floor_seen * self.width + self.lag
        };
        now.max(start)
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
