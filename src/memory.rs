//! The memory budget every limiter whose memory grows with its configuration checks at
//! `build()`: the worst case it can reach (a log's ring, a keyed table full of keys) must fit
//! in `max_memory` bytes, so that no configuration aborts the process on an allocation that
//! cannot be had, and no request path allocates a key's state that was not accounted for.

use crate::error::{ConfigError, Value};

/// The default budget: 1 GiB per limiter. Raise it with the builder's `max_memory`.
pub(crate) const DEFAULT_MAX_MEMORY: usize = 1 << 30;

/// `Ok` if `need` bytes fit in `budget`; otherwise an error naming `field` (the setting that
/// drives the memory) with its `value`, the bytes needed and the budget.
pub(crate) fn within(
    field: &'static str,
    value: u128,
    need: u128,
    budget: usize,
) -> Result<(), ConfigError> {
    if need <= budget as u128 {
        return Ok(());
    }
    Err(ConfigError::new(
        field,
        Value::Memory {
            value,
            need,
            budget: budget as u128,
        },
        "lower it, or raise the builder's max_memory",
    ))
}

/// The error for an allocation of `need` bytes that failed although it was within the budget.
#[cfg(any(feature = "std", hotlimit_loom))]
pub(crate) fn cannot_allocate(field: &'static str, value: u128, need: u128) -> ConfigError {
    ConfigError::new(
        field,
        Value::Memory {
            value,
            need,
            budget: u128::MAX,
        },
        "the allocation failed",
    )
}
