//! Planted bugs for the loom models (see the declaration in `sharded.rs`).

use super::*;

/// [`ShardedGcra`] whose *borrowing* is broken: it takes a permit from another shard by
/// load, compute, then a plain store. The home shard's own CAS is intact, so the bug needs
/// a borrower and that shard's owner to race: both see the permit free, both grant.
#[derive(Debug)]
pub struct RacyBorrow<C>(pub ShardedGcra<C>);

impl<C: Clock> RacyBorrow<C> {
    /// The broken acquire of one permit with home shard `home`.
    pub fn try_acquire_on(&self, home: usize) -> Result<(), Denied> {
        let g = &self.0;
        let now = g.clock.now();
        let s = g.shards.len();
        let home = home % s;
        if g.shards[home].try_take(1, now).is_ok() {
            return Ok(());
        }
        for step in 1..s {
            let shard = &g.shards[wrap(home + step, s)];
            // Relaxed: deliberately broken; the lost update is the bug, not the ordering.
            let tat = shard.tat.load(Ordering::Relaxed);
            if shard.available(tat, now) >= 1 {
                let base = if tat > now { tat } else { now };
                shard
                    .tat
                    .store(base + shard.params().interval, Ordering::Relaxed);
                return Ok(());
            }
        }
        Err(g.denial(1, now))
    }
}

/// [`ShardedGcra`] whose split request gives back without announcing it in the denial hint
/// (`sharded/hint.rs`): a single-permit denial that publishes a hint while the split's take
/// is outstanding leaves that hint live after the give-back frees the permit again, and a
/// later request is denied by it while a shard holds a permit.
#[derive(Debug)]
pub struct SilentGiveBack<'a, C>(pub &'a ShardedGcra<C>);

impl<C> SilentGiveBack<'_, C> {
    /// The broken split: one permit from shard 0, one from shard 1, all or nothing, the take
    /// from shard 0 undone with no announcement if shard 1 has none.
    pub fn try_acquire_split(&self, now: u64) -> bool {
        let g = self.0;
        let Some((before, after, _)) = g.shards[0].take_up_to(1, now) else {
            return false;
        };
        if g.shards[1].take_up_to(1, now).is_some() {
            return true;
        }
        // Deliberately broken: the give-back lowers shard 0 with the hint left as it is.
        let _ = g.shards[0].give_back(before, after);
        false
    }
}

/// [`ShardedGcra`]'s denial as it was before issue 43: the home shard's attempt, then one
/// pass of the borrowing and the denial's `retry_after` from the shards' TATs and parameters
/// read as separate Relaxed loads, returned as decided: no `settled` check of the home
/// shard's denial and no re-check of the change counter (`borrow`'s), so a rate change
/// between the loads makes a decision on parameters that never existed together.
#[derive(Debug)]
pub struct TornDenial<'a, C>(pub &'a ShardedGcra<C>);

impl<C> TornDenial<'_, C> {
    /// The unchecked request for `permits` at `now` with home shard `home`.
    pub fn try_acquire_n_on_at(&self, home: usize, permits: u32, now: u64) -> Result<(), Denied> {
        let g = self.0;
        let n = u64::from(permits);
        let home = home % g.shards.len();
        let shard = &g.shards[home];
        match shard.attempt(n, now, shard.load()) {
            Ok(Ok(())) => Ok(()),
            // The bug: the denial stands unchecked, and so does the borrowing's.
            Ok(Err(tat)) => g.borrow_once(home, n, now, tat),
            Err(_) => match shard.try_take(n, now) {
                Ok(()) => Ok(()),
                Err(tat) => g.borrow_once(home, n, now, tat),
            },
        }
    }
}
