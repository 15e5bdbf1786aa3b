//! [`Args`]: a script's ARGV (its two parameters, n, and the test hook's `now`; for several
//! windows, their parameters after those), and the largest microsecond value a script may see.
//! Below the algorithms: `gcra.rs`, `sliding_log.rs` and `multi_window.rs` build their
//! arguments with it, and `algorithm.rs` passes them on.

/// The largest microsecond value a script may see, with `now` added: 2^52, so that
/// now (~2^50.6 µs since the epoch) + tolerance stays below 2^53, where doubles stop being exact.
pub(crate) const MAX_MICROS: u64 = 1 << 52;

/// A script's ARGV: its two parameters, n, the test hook's `now` if any (0: none), and the
/// fence if any (fenced mode: the longest a TAT can run ahead of `now`, µs; see `lua/now.lua`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Args {
    values: [u64; MAX_ARGS],
    len: usize,
}

/// The most arguments: the five shared ones, then three per window of up to eight.
const MAX_ARGS: usize = 5 + 3 * 8;

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
        let mut values = [0; MAX_ARGS];
        values[..5].copy_from_slice(&[a, b, u64::from(n), now.unwrap_or(0), fence]);
        Args { values, len }
    }

    /// These arguments with ARGV[6], the waiting marker's lifetime in ms (GCRA's: see
    /// `lua/gcra.lua`), ARGV[4] and ARGV[5] filled in (0: no test hook, not fenced) if absent.
    pub(crate) fn with_waiting(mut self, ttl_ms: u64) -> Args {
        self.values[5] = ttl_ms;
        self.len = 6;
        self
    }

    /// Several windows' ARGV: `k` windows, 0, n, the test hook's `now` (0: none), no fence,
    /// then `windows` (at most 24 values: what does not fit is left out, and `multi_window.rs`
    /// never passes more).
    pub(crate) fn with_windows(k: u64, n: u32, now: u64, windows: &[u64]) -> Args {
        let mut values = [0; MAX_ARGS];
        values[..5].copy_from_slice(&[k, 0, u64::from(n), now, 0]);
        let extra = windows.len().min(MAX_ARGS - 5);
        values[5..5 + extra].copy_from_slice(&windows[..extra]);
        Args {
            values,
            len: 5 + extra,
        }
    }

    pub(crate) fn as_slice(&self) -> &[u64] {
        &self.values[..self.len]
    }
}
