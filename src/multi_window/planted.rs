//! Planted bugs for the loom models: each must make its model fail, which shows the models
//! can fail. Compiled only under `--cfg hotlimit_loom`; not part of the API.

use super::*;

/// [`MultiWindow`] that charges as it goes and never gives back: a request refused by a
/// later window stays charged in the earlier ones, so permits are lost (the windows count
/// grants that were never made).
#[derive(Debug)]
pub struct ChargeAsYouGo<C>(pub MultiWindow<C>);

impl<C: Clock> ChargeAsYouGo<C> {
    /// The broken acquire of one permit: every window in order, stopping at the first refusal.
    pub fn try_acquire(&self) -> Result<(), Denied> {
        let now = self.0.clock.now();
        for w in self.0.windows.as_slice() {
            w.charge(1, now)?;
        }
        Ok(())
    }
}
