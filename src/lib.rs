//! Lock-free rate limiters for hot paths, each with an exact guarantee that is checked by the
//! `loom` model checker and by property tests against a sequential reference model.
//!
//! | limiter | shared state | guarantee | memory |
//! |---|---|---|---|
//! | [`Gcra`] | one `AtomicU64` (the theoretical arrival time) | smooth rate: in any interval of length d at most b + d/I permits (I = period/limit, burst b); a denial is one load, no write | 8 bytes of state |
//!
//! Every limiter implements [`Limiter`] (`try_acquire`, `try_acquire_n`), reports bad
//! configuration as a [`ConfigError`] that names the field and the value, and refuses a
//! request with a [`Denied`] that says when to retry. Time comes from a [`Clock`]: the
//! [`DefaultClock`] ([`QuantaClock`], TSC-based), a `CoarseClock` for the hottest paths (one
//! load per read, ~1 ms resolution, error documented on the type), or a [`ManualClock`] for
//! tests and simulations. See the [`guide`] for choosing a limiter and the proofs of the
//! bounds, and BENCHMARKS.md for measurements against `governor` and others.
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
mod sync;

#[cfg(all(feature = "std", not(hotlimit_loom)))]
pub use clock::CoarseClock;
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

/// The README's examples, compiled and run as doctests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
