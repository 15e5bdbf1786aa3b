//! [`Args`]: a script's ARGV (its two parameters, n, and the test hook's `now`), and the
//! largest microsecond value a script may see. Below the algorithms: `gcra.rs` and
//! `sliding_log.rs` build their arguments with it, and `algorithm.rs` passes them on.

/// The largest microsecond value a script may see, with `now` added: 2^52, so that
/// now (~2^50.6 µs since the epoch) + tolerance stays below 2^53, where doubles stop being exact.
pub(crate) const MAX_MICROS: u64 = 1 << 52;

/// A script's ARGV: its two parameters, n, the test hook's `now` if any (0: none), and the
/// fence if any (fenced mode: the longest a TAT can run ahead of `now`, µs; see `lua/now.lua`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Args {
    values: [u64; 5],
    len: usize,
}

impl Args {
    /// The two parameters `a` and `b`, the permits `n`, the test hook's `now`, and the fence
    /// (0: not fenced).
    pub(crate) fn new(a: u64, b: u64, n: u32, now: Option<u64>, fence: u64) -> Args {
        let len = if fence > 0 {
            5
        } else if now.is_some() {
            4
        } else {
            3
        };
        Args {
            values: [a, b, u64::from(n), now.unwrap_or(0), fence],
            len,
        }
    }

    pub(crate) fn as_slice(&self) -> &[u64] {
        &self.values[..self.len]
    }
}
