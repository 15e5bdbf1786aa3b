//! A small seeded generator (SplitMix64), written out here so that a trace depends on the
//! seed alone: no dependency's algorithm change can move a figure in `docs/ACCURACY.md`.

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): a 64-bit counter passed through a bijective mixer.
#[derive(Clone, Debug)]
pub(crate) struct Rng {
    state: u64,
}

impl Rng {
    /// A generator for `seed`, with `stream` mixed in so that two traces drawn with the same
    /// seed do not share their numbers.
    pub(crate) fn new(seed: u64, stream: &str) -> Rng {
        // FNV-1a of the stream name: fixed, so the numbers never change across builds.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in stream.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Rng {
            state: seed ^ h.rotate_left(17),
        }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), 53 bits.
    pub(crate) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n) for n ≥ 1 (Lemire's multiply-shift; the bias is below 2⁻⁶⁴·n).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// An exponential variate of mean `mean` (inverse transform; 1 − u is in (0, 1]).
    pub(crate) fn exponential(&mut self, mean: f64) -> f64 {
        -(1.0 - self.next_f64()).ln() * mean
    }
}
