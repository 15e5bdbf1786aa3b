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
    /// refusal (two rings: each ring's own grant on its view of the pair's word).
    pub fn try_acquire_at(&self, now: u64) -> Result<(), Denied> {
        self.0.windows.charge_as_you_go(1, now)
    }
}

/// [`MultiWindow`] of two rings whose roll freezes a ring by a store of the pair's word as it
/// read it, instead of a CAS: a grant made between the read and the store is lost from both
/// rings, which then admit more than their limits.
#[derive(Debug)]
pub struct StaleFreeze<C>(pub MultiWindow<C>);

impl<C> StaleFreeze<C> {
    /// The broken acquire of one permit at `now`.
    pub fn try_acquire_at(&self, now: u64) -> Result<(), Denied> {
        self.0.windows.acquire_stale_freeze(1, now)
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
