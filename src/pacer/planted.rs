//! Planted bugs for the loom models (`loom-tests/tests/pacer.rs`). Compiled only under
//! `--cfg hotlimit_loom`; not part of the API.

use super::*;

/// [`Pacer`] whose rate change reinstalls the state value a racing slot request loaded: the
/// change of its [`Gcra`] raised only to the old TAT (`gcra::planted::ReinstallingChange`),
/// not past every value the word held. A request that read the TAT before the change and a
/// parameter after it then wins its CAS (the ABA case) and hands out a slot no parameter set
/// gives. The slot requests are the real ones.
#[derive(Debug)]
pub struct ReinstallingRateChange<'a, C>(pub &'a Pacer<C>);

impl<C> ReinstallingRateChange<'_, C> {
    /// The broken change to `rate` at `now` (the catch-up as the real one).
    pub fn set_rate_at(&self, rate: Rate, now: u64) {
        let p = self.0;
        if let Ok(burst) = burst_for(rate, p.catch_up) {
            crate::gcra::planted::ReinstallingChange(&p.gcra).set_rate_at(rate, Some(burst), now);
        }
    }
}
