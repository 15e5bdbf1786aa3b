//! Lock-free rate limiters for hot paths, each with an exact guarantee that is checked by the
//! `loom` model checker and by property tests against a sequential reference model.
//!
//! | limiter | shared state | guarantee | memory |
//! |---|---|---|---|
//! | [`Gcra`] | one `AtomicU64` (the theoretical arrival time) | smooth rate: in any interval of length d at most b + d/I permits (I = period/limit, burst b); a denial is one load, no write | 8 bytes of state |
//! | [`ShardedGcra`] | S cache-padded GCRA words (default S = cores), each with its share of rate and burst | never over one `Gcra`'s b + d/I; a thread uses its home shard (thread-local) and borrows from the others before it denies, so one busy thread still gets the global rate | S × one padded line (128 bytes on x86-64) |
//!
//! Every limiter implements [`Limiter`] (`try_acquire`, `try_acquire_n`), reports bad
//! configuration as a [`ConfigError`] that names the field and the value, and refuses a
//! request with a [`Denied`] that says when to retry. Time comes from a [`Clock`]: the
//! [`DefaultClock`] ([`QuantaClock`], TSC-based) or a [`ManualClock`] for tests and
//! simulations. See the [`guide`] for choosing a limiter and the proofs of the bounds.
//!
//! # Examples
//!
//! ```
//! use hotlimit::{Gcra, Limiter, Rate};
//!
//! let limiter = Gcra::new(Rate::per_second(1_000)?)?;
//! match limiter.try_acquire() {
//!     Ok(()) => { /* serve the request */ }
//!     Err(denied) => println!("busy, retry after {:?}", denied.retry_after()),
//! }
//! # Ok::<(), hotlimit::ConfigError>(())
//! ```
//!
//! # Features
//!
//! - `std` (default): the [`QuantaClock`] default clock and `std::error::Error` impls. Without
//!   it the crate is `no_std` (it needs `alloc`), and limiters need a clock from `.clock(c)`.
//!   `std` also gives [`ShardedGcra`] its per-thread home shard (a thread-local) and its
//!   default shard count (the cores); without it every caller starts at shard 0 (pass a home
//!   to `try_acquire_n_on`) and S defaults to 1.
//!
//! On targets without native 64-bit atomics, `portable-atomic`'s fallback provides
//! `AtomicU64`; there it is not lock-free.

#![cfg_attr(not(any(feature = "std", hotlimit_loom)), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

mod clock;
mod error;
mod gcra;
pub mod guide;
mod limiter;
mod rate;
mod sharded;
mod sync;

#[cfg(feature = "std")]
pub use clock::QuantaClock;
pub use clock::{Clock, DefaultClock, ManualClock, NoClock};
pub use error::{ConfigError, Denied};
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub use gcra::planted as __planted_gcra;
pub use gcra::{Gcra, GcraBuilder};
pub use limiter::Limiter;
pub use rate::Rate;
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub use sharded::planted as __planted_sharded;
pub use sharded::{ShardedGcra, ShardedGcraBuilder};

/// The README's examples, compiled and run as doctests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
