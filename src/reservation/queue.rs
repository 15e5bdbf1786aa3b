//! A [`Gcra`]'s reservations as its [`FairQueue`]: the line every wait on a `Gcra` joins,
//! whatever holds the limiter. A place is a [`Reservation`] taken apart; leaving the line is
//! that reservation's cancel, so the protocol (and its loom model) is the one proved.

use super::Reservation;
use crate::clock::Clock;
use crate::error::Denied;
use crate::fair_queue::{FairQueue, Place};
use crate::gcra::Gcra;

impl<C: Clock> FairQueue for Gcra<C> {
    fn queue_clock(&self) -> &dyn Clock {
        self.clock()
    }

    fn join(&self, permits: u32, now: u64, max_wait: u64) -> Result<Place, Denied> {
        let r = self.reserve_n_at(permits, now, max_wait)?;
        let place = Place {
            tat: r.tat,
            cost: r.cost,
            ready_at: r.ready_at,
        };
        r.keep();
        Ok(place)
    }

    fn leave(&self, place: &Place) -> bool {
        Reservation {
            gcra: self,
            tat: place.tat,
            cost: place.cost,
            ready_at: place.ready_at,
            scheduled: place.ready_at,
            // A place for zero permits holds nothing to give back.
            settled: place.cost == 0,
        }
        .cancel()
    }
}
