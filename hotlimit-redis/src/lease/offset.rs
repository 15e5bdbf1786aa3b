//! [`Offset`]: what the limiter's round trips tell of the server's clock against the local one,
//! kept across round trips so that a reply read late (its thread waiting for a core) does not
//! shrink its lease's windows by the delay.
//!
//! δ(t) is the server's clock minus the local one (ns) at local time t. A reply carrying the
//! server's `TIME` N (µs, truncated), sent at local t₀ and read at t₁, says
//! δ(t*) ∈ [1000·N − t₁, 1000·N + 1000 − t₀] for the instant t* ∈ [t₀, t₁] the server read its
//! clock. Each clock runs within 500 ppm of true time (NTP's largest slew), so their rates
//! differ by at most ρ = 1,000 ppm (both slewing at the limit, in opposite directions), taken
//! as ρ/(1 − ρ) = 1/999 of local time: δ moves by at most |t − t'|/999 between t and t'. So one
//! round trip bounds δ(t₁), widened by (t₁ − t₀)/999; an older bound, widened by its age/999,
//! still holds, and the intersection of the two is the tightest. A lease uses the bound widened
//! by its reach/999 (from t₁ to its last deadline), so that δ at every instant one of its
//! permits may be granted lies in it.
//!
//! If the two bounds do not meet, the server's clock was stepped (or another server answers):
//! the round trip's own bound is kept, as without the filter. A step that leaves them meeting
//! breaks the mapping, as a stepped server clock breaks every Redis limiter's arithmetic.

use super::word::Lease;

/// 1/ρ' for ρ' = ρ/(1 − ρ), ρ = 1,000 ppm (two clocks, each within 500 ppm of true time).
const DRIFT_DIVISOR: i128 = 999;

/// δ at local time `at` lies in [lo, hi] (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Offset {
    pub(crate) lo: i128,
    pub(crate) hi: i128,
    pub(crate) at: u64,
}

#[cfg(test)]
thread_local! {
    /// Planted bug (tests only, this thread): the clocks are taken to run at the same rate.
    pub(super) static PLANTED_SAME_RATE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The most δ moves over `span` ns (span ≥ 0), rounded up.
fn drift(span: i128) -> i128 {
    #[cfg(test)]
    if PLANTED_SAME_RATE.get() {
        return 0;
    }
    (span.max(0) + DRIFT_DIVISOR - 1) / DRIFT_DIVISOR
}

impl Offset {
    /// The bound one round trip gives at its `received` instant: the server read `now` (µs)
    /// between local `sent` and `received` (ns).
    pub(crate) fn of_trip(now: u64, sent: u64, received: u64) -> Offset {
        let server = i128::from(now) * 1000;
        let widen = drift(i128::from(received) - i128::from(sent));
        Offset {
            lo: server - i128::from(received) - widen,
            hi: server + 1000 - i128::from(sent) + widen,
            at: received,
        }
    }

    /// This bound carried to `trip.at` (widened by its age either way) and intersected with
    /// `trip`; `trip` alone when they do not meet.
    pub(crate) fn narrowed(self, trip: Offset) -> Offset {
        let age = drift((i128::from(trip.at) - i128::from(self.at)).abs());
        let lo = (self.lo - age).max(trip.lo);
        let hi = (self.hi + age).min(trip.hi);
        if lo > hi {
            trip
        } else {
            Offset {
                lo,
                hi,
                at: trip.at,
            }
        }
    }

    /// The bound on δ over a lease that ends at server time `end` (µs, S + k·I): from `at`
    /// (when the lease is installed) to the last local instant one of its permits may be
    /// granted, which is before `end` mapped with `lo`.
    pub(crate) fn over_lease(self, end: u64) -> (i128, i128) {
        let reach = i128::from(end) * 1000 - self.lo - i128::from(self.at);
        let widen = drift(reach);
        (self.lo - widen, self.hi + widen)
    }
}

/// The lease a reply `{start, interval, tolerance, now}` (µs) of `permits` permits carries,
/// sent at local `sent` and read at `received` (ns), on the local clock: `kept` (the bound so
/// far) narrowed by this round trip, kept for the next, and widened by the lease's reach.
#[allow(clippy::too_many_arguments)] // the reply's four integers and the round trip's three
pub(crate) fn map(
    kept: &mut Option<Offset>,
    start: u64,
    interval: u64,
    tolerance: u64,
    now: u64,
    permits: u64,
    sent: u64,
    received: u64,
) -> Lease {
    let trip = Offset::of_trip(now, sent, received);
    let offset = kept.map_or(trip, |old| old.narrowed(trip));
    *kept = Some(offset);
    let end = start.saturating_add(permits.saturating_mul(interval));
    let (lo, hi) = offset.over_lease(end);
    Lease::mapped(start, interval, tolerance, permits, lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_round_trip_bounds_the_offset_by_its_span() {
        // The server read 5,000 µs between local 1,000,000 and 1,100,000 ns.
        let o = Offset::of_trip(5_000, 1_000_000, 1_100_000);
        // 100,000 ns of round trip widen by ⌈100,000/999⌉ = 101 ns each side.
        assert_eq!(
            (o.lo, o.hi, o.at),
            (3_900_000 - 101, 4_001_000 + 101, 1_100_000)
        );
    }

    #[test]
    fn a_bound_narrows_ages_and_gives_way_to_one_it_does_not_meet() {
        let old = Offset {
            lo: -100,
            hi: 50,
            at: 0,
        };
        let trip = Offset {
            lo: -30_000,
            hi: 10,
            at: 999_000,
        };
        // 999,000 ns of age widen by 1,000 ns each side.
        let n = old.narrowed(trip);
        assert_eq!((n.lo, n.hi, n.at), (-1_100, 10, 999_000));
        // An older trip than the bound: the bound is carried back.
        let n = trip.narrowed(old);
        assert_eq!((n.lo, n.hi, n.at), (-100, 50, 0));
        let apart = Offset {
            lo: 5_000,
            hi: 6_000,
            at: 10,
        };
        assert_eq!(old.narrowed(apart), apart);
    }

    #[test]
    fn a_lease_widens_the_bound_by_its_reach() {
        let o = Offset {
            lo: 0,
            hi: 10,
            at: 1_000_000,
        };
        // Reach: 1,999 µs on the server − 0 − 1,000,000 ns = 999,000 ns: 1,000 ns.
        assert_eq!(o.over_lease(1_999), (-1_000, 1_010));
        // A lease that ended before `at` (all its deadlines gone) widens by nothing.
        assert_eq!(o.over_lease(0), (0, 10));
    }
}
