//! Planted bugs for the loom models: each must make its model fail, which shows the models
//! can fail. Compiled only under `--cfg hotlimit_loom`; not part of the API.

use super::*;

/// [`MultiWindow`] that charges as it goes and never gives back: a request refused by a
/// later window stays charged in the earlier ones, so permits are lost (the windows count
/// grants that were never made).
#[derive(Debug)]
pub struct ChargeAsYouGo<C>(pub MultiWindow<C>);

impl<C> ChargeAsYouGo<C> {
    /// The broken acquire of one permit at `now`: every window in order, stopping at the first
    /// refusal.
    pub fn try_acquire_at(&self, now: u64) -> Result<(), Denied> {
        for w in self.0.windows.as_slice() {
            w.charge(1, now)?;
        }
        Ok(())
    }
}

/// [`MultiWindow`] whose ring give-back does not check that the charged bucket is still the
/// current one: a refused call whose charge was closed into a snapshot by a roll takes its
/// permits out of the new bucket instead, which then undercounts its grants.
#[derive(Debug)]
pub struct GiveBackToAnyBucket<C>(pub MultiWindow<C>);

impl<C> GiveBackToAnyBucket<C> {
    /// The broken acquire of one permit at `now`.
    pub fn try_acquire_at(&self, now: u64) -> Result<(), Denied> {
        (self.0.windows).acquire_with(1, now, window::Window::give_back_to_any_bucket)
    }
}
