//! Planted bugs for the loom models (see the declaration in `int_keyed.rs`).

pub use super::Plant;
use super::*;

/// `limiter` with `plant` in its code paths.
pub fn plant<K, C>(mut limiter: IntKeyed<K, C>, plant: Plant) -> IntKeyed<K, C> {
    limiter.plant = plant;
    limiter
}

/// The key's two buckets, for models that need to know where a key lives.
/// Its two buckets and home way.
pub fn buckets_of<K: IntKey, C>(limiter: &IntKeyed<K, C>, key: K) -> (usize, usize, usize) {
    limiter.buckets_of(limiter.key_bits(key))
}

/// `builder` built with the dense layout (primary and secondary areas) whatever its capacity,
/// so that a model's small table runs the layout large tables get.
pub fn build_dense<K: IntKey, C: Clock>(
    builder: IntKeyedBuilder<K, C>,
) -> Result<IntKeyed<K, C>, ConfigError> {
    builder.build_with(Some(true))
}

/// `key`'s candidate slots, ascending, as the insert protocol sees them.
pub fn candidate_slots<K: IntKey, C>(limiter: &IntKeyed<K, C>, key: K) -> Vec<usize> {
    let c = limiter.candidates(&limiter.place(limiter.hash(limiter.key_bits(key))));
    c.idx[..c.n].to_vec()
}

/// The number of buckets in the primary area.
pub fn primary_buckets<K, C>(limiter: &IntKeyed<K, C>) -> usize {
    limiter.primary
}
