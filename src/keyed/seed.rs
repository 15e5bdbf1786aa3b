//! The hash seed of `Keyed`'s inline table: foldhash, with the shared seed (whose first word
//! is the multiplier foldhash applies to an integer key) chosen once per process so that
//! consecutive integers spread evenly over a table.
//!
//! foldhash hashes a `u64` key `x` with one folded multiply: `fold((x ^ p) * m)`, the 128-bit
//! product's halves XORed, where `p` is the table's own random seed and `m` the process's. The
//! table takes a key's place from the top 32 bits of that hash ([`Table::locate`]: segment and home
//! slot from one multiply-shift, as if the segments were one array). For keys `0 .. n` (database
//! ids, counters: the keys a server most often has) those top bits are, up to a constant XOR, the
//! fractional parts of `j · m / 2^64` for consecutive `j`: a Weyl sequence, which spreads more
//! evenly than random keys do when `m / 2^64` is badly approximable by fractions (its continued
//! fraction's partial quotients small), and clusters the keys on a few slots when it is close to a
//! fraction of small denominator. With a multiplier drawn at random the process's seed decided
//! which (the guide's "Keyed: the inline table", *How consecutive keys spread*): some processes ran
//! `Keyed<u64>` at 1,000 keys 1.4 times slower than the others. So the process draws shared seeds
//! until the multiplier's partial quotients are at most [`MAX_QUOTIENT`] after every convergent up
//! to [`MAX_DENOMINATOR`] (about one draw in 47): consecutive keys then spread about evenly at
//! every table size, and keys with no structure spread as they did (at random). The seeds stay
//! random: the rule costs about 5.6 of the multiplier's 64 random bits (2^58 multipliers left to
//! guess among), and each table has its own 64-bit seed too.
//!
//! [`Table::locate`]: super::table::Table::locate

use core::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

use foldhash::fast::{FoldHasher, SeedableRandomState};
use foldhash::SharedSeed;

/// The largest partial quotient [`spreads_evenly`] accepts.
pub(crate) const MAX_QUOTIENT: u128 = 8;

/// The convergents [`spreads_evenly`] checks: those whose denominator is at most 2^28, the
/// slots of a table of about 190 million keys. (Past about 2^31 the quotients of any 64-bit
/// multiplier are those of its last bits, not of the number it stands for: the golden
/// ratio's, all 1 before, has a quotient of 121 there.)
pub(crate) const MAX_DENOMINATOR: u128 = 1 << 28;

/// Shared seeds drawn at most (each accepted with a chance of about 1 in 47; all 4,096
/// rejected: about once in 10^37 processes, which then keep the last one drawn).
const DRAWS: u64 = 4096;

/// The hasher of `Keyed`'s inline table.
pub(crate) type TableHasher = SeedableRandomState;

/// A new table's hasher: its own random seed, the process's chosen shared seed.
pub(crate) fn table_hasher() -> TableHasher {
    let per_table = std::hash::RandomState::new().hash_one(0x7AB1E_u64);
    SeedableRandomState::with_seed(per_table, shared())
}

/// The process's shared seed, drawn at random until its multiplier [`spreads_evenly`].
fn shared() -> &'static SharedSeed {
    static SEED: OnceLock<SharedSeed> = OnceLock::new();
    SEED.get_or_init(|| {
        let random = std::hash::RandomState::new();
        let mut seed = SharedSeed::from_u64(random.hash_one(0_u64));
        for draw in 1..DRAWS {
            match multiplier(&seed) {
                Some(m) if !spreads_evenly(m) => {}
                // Even, or foldhash no longer hashes an integer as this module reads it
                // (nothing to choose by: any seed is as good).
                _ => break,
            }
            seed = SharedSeed::from_u64(random.hash_one(draw));
        }
        seed
    })
}

/// The multiplier `m` with which `seed` hashes a `u64` (`fold((x ^ p) * m)`), read back from
/// foldhash: the hash of 1 with a zero per-hasher seed. `None` when the hashes of other keys
/// say foldhash hashes integers otherwise (a later version).
pub(crate) fn multiplier(seed: &SharedSeed) -> Option<u64> {
    let hash = |x: u64| {
        let mut h = FoldHasher::with_seed(0, seed);
        h.write_u64(x);
        h.finish()
    };
    let m = hash(1);
    let same = [2, 3, 0x9E37_79B9_7F4A_7C15, u64::MAX]
        .into_iter()
        .all(|x| hash(x) == fold(x, m));
    same.then_some(m)
}

/// foldhash's folded multiply: the 128-bit product's halves, XORed.
pub(crate) fn fold(x: u64, m: u64) -> u64 {
    let p = u128::from(x) * u128::from(m);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Whether consecutive multiples of `m / 2^64` spread evenly: every partial quotient of its
/// continued fraction that follows a convergent of denominator at most [`MAX_DENOMINATOR`] is
/// at most [`MAX_QUOTIENT`]. (A large quotient `a` after the convergent `p/q` puts
/// `m / 2^64` within `1/(a·q²)` of `p/q`: `q` or more consecutive keys then fall on `q` narrow
/// clusters.)
pub(crate) fn spreads_evenly(m: u64) -> bool {
    // m / 2^64 = [0; a1, a2, ...]: the quotients of 2^64 / m, then of the remainders.
    let (mut num, mut den) = (1_u128 << 64, u128::from(m));
    // The denominators of the last two convergents: q_0 = 1, q_-1 = 0.
    let (mut q_prev, mut q) = (0_u128, 1_u128);
    while den != 0 && q <= MAX_DENOMINATOR {
        let a = num / den;
        if a > MAX_QUOTIENT {
            return false;
        }
        (num, den) = (den, num - a * den);
        (q_prev, q) = (q, a * q + q_prev);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::super::table::{home, place_of, shape};
    use super::*;

    /// The mean probe length of keys `0 .. n` placed in a table of `capacity` (its real shape,
    /// its real segment and home for each hash; linear probing, as the table's, segments at
    /// their full length), hashed with `seed` and the table seed `p`.
    fn mean_probe(seed: &SharedSeed, p: u64, n: u64, capacity: u64) -> f64 {
        let (nseg, len) = shape(capacity);
        let mut used = std::vec![false; nseg * len];
        let mut probes = 0;
        for x in 0..n {
            let mut h = FoldHasher::with_seed(p, seed);
            h.write_u64(x);
            let (s, spot) = place_of(h.finish(), nseg);
            let mut i = home(spot, len);
            // A full segment counts its length (the real table would refuse the key).
            for _ in 0..len {
                probes += 1;
                if !used[s * len + i] {
                    used[s * len + i] = true;
                    break;
                }
                i = (i + 1) % len;
            }
        }
        probes as f64 / n as f64
    }

    /// The first of the seeds `SharedSeed::from_u64(0, 1, ...)` whose multiplier does (or does
    /// not) spread evenly.
    fn fixed_seed(even: bool) -> SharedSeed {
        (0..)
            .map(SharedSeed::from_u64)
            .find(|s| spreads_evenly(multiplier(s).unwrap()) == even)
            .unwrap()
    }

    #[test]
    fn the_multiplier_read_back_is_the_one_foldhash_hashes_integers_with() {
        // If foldhash changes how it hashes a `u64`, this fails: the choice of seed would
        // silently stop choosing.
        for s in 0..64 {
            let seed = SharedSeed::from_u64(s);
            let m = multiplier(&seed).expect("foldhash hashes a u64 with one folded multiply");
            for (p, x) in [(0, 1), (7, 12_345), (u64::MAX, 0), (0xDEAD_BEEF, 1 << 40)] {
                let mut h = FoldHasher::with_seed(p, &seed);
                h.write_u64(x);
                assert_eq!(h.finish(), fold(x ^ p, m));
            }
        }
    }

    #[test]
    fn the_golden_ratio_spreads_and_a_multiplier_near_a_fraction_does_not() {
        // 2^64 / φ: every partial quotient 1.
        assert!(spreads_evenly(0x9E37_79B9_7F4A_7C15));
        // Near 1/2, 1/3 + ε, 5/7: a large quotient after a small denominator.
        assert!(!spreads_evenly((1 << 63) + 1));
        assert!(!spreads_evenly(u64::MAX / 3 + 1000));
        assert!(!spreads_evenly(
            ((u128::from(u64::MAX) * 5) / 7) as u64 + (1 << 20)
        ));
        // A quotient of 9 right after the first convergent (1/(1 + 1/9) = 0.9).
        assert!(!spreads_evenly(((1_u128 << 64) * 9 / 10) as u64));
    }

    #[test]
    fn enough_seeds_spread_evenly_that_the_draws_always_find_one() {
        // 1 in 47 here: 4,096 draws all fail about once in 10^37 processes.
        let n = 20_000;
        let even = (0..n)
            .filter(|&i| spreads_evenly(multiplier(&SharedSeed::from_u64(i)).unwrap()))
            .count();
        assert!(
            (n as usize / 100..n as usize / 20).contains(&even),
            "{even} of {n}"
        );
    }

    #[test]
    fn consecutive_keys_spread_at_least_as_evenly_as_random_keys() {
        // Random keys probe 1.28 slots a lookup at load 0.36 (capacity 2n: the harness's),
        // 2.2 at load 0.71 (capacity n). Every seed chosen by the rule, with any table seed,
        // places keys 0 .. n better: the process's seed and 40 fixed ones.
        let fixed: std::vec::Vec<SharedSeed> = (0..2_000)
            .map(SharedSeed::from_u64)
            .filter(|s| spreads_evenly(multiplier(s).unwrap()))
            .take(40)
            .collect();
        assert_eq!(fixed.len(), 40);
        let random = std::hash::RandomState::new();
        for (i, seed) in core::iter::once(shared()).chain(&fixed).enumerate() {
            let p = random.hash_one(i);
            for (n, capacity, most) in [
                (1_000, 2_000, 1.5),
                (1_000, 1_000, 2.2),
                (20_000, 40_000, 1.5),
                (20_000, 20_000, 2.2),
            ] {
                let mean = mean_probe(seed, p, n, capacity);
                assert!(
                    mean <= most,
                    "seed {i}, {n} keys, capacity {capacity}: {mean:.3} probes"
                );
            }
        }
    }

    #[test]
    fn a_multiplier_the_rule_rejects_can_cluster_consecutive_keys() {
        // The planted twin of the rule: a rejected seed places keys 0 .. 2,000 worse than
        // random keys (the first rejected seed, table seed 0).
        let seed = fixed_seed(false);
        let worst = (0..1)
            .map(|p| mean_probe(&seed, p, 2_000, 2_000))
            .fold(0.0, f64::max);
        assert!(worst > 2.2, "{worst:.3}");
    }

    #[test]
    fn the_process_seed_spreads_evenly_and_tables_differ_in_their_own_seed() {
        let m = multiplier(shared()).unwrap();
        assert!(spreads_evenly(m));
        let (a, b) = (table_hasher(), table_hasher());
        assert_ne!(a.hash_one(1_u64), b.hash_one(1_u64));
        // The same process seed: the difference of two tables is their own seed's.
        assert!(core::ptr::eq(shared(), shared()));
    }
}
