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
