//! [`Reply`]: what the per-decision scripts answer, and [`ints`], the parser of every
//! script's reply of integers. Below the algorithms and the lease, which read replies with it.

use std::time::Duration;

use hotlimit::{Decision, Denied, Quota};
use redis::Value;

use crate::error::Error;

/// What the scripts answer: granted, remaining, retry-after (µs), reset (µs), and for several
/// windows the binding one (0 otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reply {
    pub(crate) granted: bool,
    pub(crate) remaining: u64,
    pub(crate) retry_after: u64,
    pub(crate) reset: u64,
    pub(crate) binding: usize,
}

impl Reply {
    /// The reply of a script: four non-negative integers.
    ///
    /// # Errors
    ///
    /// [`Error::BadReply`] for anything else.
    pub(crate) fn parse(value: &Value) -> Result<Reply, Error> {
        let ints = ints::<4>(value)?;
        Ok(Reply {
            granted: ints[0] == 1,
            remaining: ints[1],
            retry_after: ints[2],
            reset: ints[3],
            binding: 0,
        })
    }

    /// The decision the reply says, under `quota`; `remaining` at most the quota's limit.
    pub(crate) fn decision(&self, quota: Quota) -> Decision {
        let reset = Duration::from_micros(self.reset);
        let remaining = self.remaining.min(quota.limit());
        if self.granted {
            Decision::allowed(quota, remaining, reset)
        } else {
            let retry = Denied::new(Some(Duration::from_micros(self.retry_after)));
            Decision::denied(quota, retry, remaining, reset)
        }
    }
}

/// A script's reply of exactly `N` non-negative integers.
///
/// # Errors
///
/// [`Error::BadReply`] for anything else.
pub(crate) fn ints<const N: usize>(value: &Value) -> Result<[u64; N], Error> {
    let bad = || Error::BadReply(format!("{value:?}"));
    let Value::Array(items) = value else {
        return Err(bad());
    };
    if items.len() != N {
        return Err(bad());
    }
    let mut ints = [0u64; N];
    for (slot, item) in ints.iter_mut().zip(items) {
        match item {
            Value::Int(i) if *i >= 0 => *slot = *i as u64,
            _ => return Err(bad()),
        }
    }
    Ok(ints)
}
