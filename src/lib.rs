//! Lock-free rate limiters for hot paths, each with an exact guarantee that is checked by the
//! `loom` model checker and by property tests against a sequential reference model.
//!
//! | limiter | shared state | guarantee | memory |
//! |---|---|---|---|
//! | [`Gcra`] | one `AtomicU64` (the theoretical arrival time) | smooth rate: in any interval of length d at most b + d/I permits (I = period/limit, burst b); a denial is one load, no write | 8 bytes of state |
//! | [`GcraPair`] | one 16-byte atomic word: two TATs side by side | two smooth rates at once ("10 per second AND 1,000 per hour"): each rate's b + d/I bound; a request is granted only if both admit, a denial is charged to neither and waits the later of the two exact waits; one 128-bit CAS per grant, a denial is one load | 16 bytes of state |
//! | [`GcraMulti`] | a pool of snapshots of up to 8 TATs, and one `AtomicU64` naming the current one | three or more smooth rates at once, with `GcraPair`'s guarantees (each rate's bound, all or nothing, exact later wait); a grant writes a spare snapshot and CASes the name, a denial is loads only | 72 bytes × snapshots (default 2 × cores + 2) |
//! | [`ShardedGcra`] | S cache-padded GCRA words (default S = cores), each with its share of rate and burst | never over one `Gcra`'s b + d/I; a thread uses its home shard (thread-local) and borrows from the others before it denies, so one busy thread still gets the global rate | S × one padded line (128 bytes on x86-64) |
//! | [`SlidingWindow`] | one decision word (the count of permits ever granted, beside the current bucket) and a ring of that count's snapshots at bucket ends: a grant is one CAS | hard cap: at most `limit` in every window of length `period`, never over-admits, each grant counted at its effective time (its `now`, or the newest bucket's start for a caller preempted before its CAS: by real time never over `limit`, by the callers' own `now`s up to `limit` + threads; see the [guide](guide#what-time-a-grant-is-counted-at)); a false denial only if `limit` were granted within `period` + one bucket width (`count_closed(k)`: and only if fewer than n + k − 1 permits are truly free; an `approximate()` mode trades that for bounded over-admission) | 8 bytes × M (M the power of two ≥ buckets + 1) + 512 bytes of head and padding (count-closed: 8 bytes × (buckets + 1) + 16 bytes × ⌊`limit`/k⌋ + six cache lines) |
//! | [`SlidingLog`] | a ring of `limit` `AtomicU64` grant times, a cursor | exact sliding window: in every window (t − period, t] at most `limit` permits, under any concurrency; a sequential caller gets exactly the exact log's decisions and `retry_after`; a denial is read-only | 8 bytes × `limit` |
//! | [`KeyPool`] | a [`SlidingLog`] of K·`max_uses` slots, slot i → key i mod K; or, with [`buckets(n)`](KeyPoolBuilder::buckets), one strict [`SlidingWindow`] per key and a cursor | hands out API keys: no key more than `max_uses` times in any window of `period`; denied (with the exact wait) only when every key has used its budget (with `buckets(n)`: within `period` + one bucket width) | 8 bytes × K × `max_uses`; with `buckets(n)`: about 104 + 8·M bytes × K, M the power of two ≥ n + 1 (245 MB for a million keys, n = 10) |
//! | [`Keyed`] (`std`) | key → one limiter state: for [`Gcra`] (one `AtomicU64`) and [`GcraPair`] (one 16-byte word) inline beside the key in a lock-free open-addressed table; for [`SlidingLog`] and [`SlidingWindow`] (a ring behind a gate word) in a lock-free map | the inner limiter's guarantee per key, also while keys are evicted; at most `capacity` keys, idle keys evicted by sweeps on insert, [`WhenFull`] when too few are idle; per-key rate overrides (at most `capacity`) and default-rate changes at runtime | `Gcra`: 1.4 slots of 24 bytes per `u64` key of capacity (32 with `GcraPair`), a segment at a time; logs and windows: the key + 16 bytes + map overhead, `SlidingLog` + 8 bytes × `limit`, `SlidingWindow` + 8 bytes × M (M the power of two ≥ buckets + 1) + about 150 bytes of header (measured for `u64` keys: 34 bytes with `Gcra`, 45 with `GcraPair`, 278 with a `SlidingLog` of `limit` 10, 342 with a `SlidingWindow` of 10 buckets) |
//! | [`IntKeyed`] (`std`) | a table of 16-byte atomic slots `{key, GCRA state}` for integer keys, two 4-slot buckets (one cache line each) per key | per key exactly [`Gcra`] (one rate for all keys, changed at runtime by [`set_rate`](IntKeyed::set_rate) as [`Gcra::set_rate`] changes one), also while keys are evicted (a grant is one 128-bit CAS of key and state); at most `capacity` keys, idle keys replaced by new ones, a new key with no room denied with the wait until a slot goes idle | 16 bytes × the power of two ≥ 2·`capacity`, allocated at build |
//! | [`Pacer`] | a `Gcra` | paces many threads to one target rate: each [`Pacer::pace_blocking`] (or `pace_async`) returns at the caller's slot (one CAS to reserve it, then sleep and spin to it), slots one interval apart in reservation order, up to 10 ms of missed slots made up | 8 bytes of state |
//!
//! Every limiter implements [`Limiter`] (`try_acquire`, `try_acquire_n`), reports bad
//! configuration as a [`ConfigError`] that names the field and the value, and refuses a
//! request with a [`Denied`] that says when to retry. Time comes from a [`Clock`]: the
//! [`DefaultClock`] ([`QuantaClock`], TSC-based), a `CoarseClock` for the hottest paths (one
//! load per read, ~1 ms resolution, error documented on the type), or a [`ManualClock`] for
//! tests and simulations. See the [`guide`] for choosing a limiter and the proofs of the
//! bounds, and BENCHMARKS.md for measurements against `governor` and others.
//! To wait instead of being refused: [`Gcra::acquire_async`] (first come first served, any
//! runtime, a dropped waiter gives its place back when it is last in line) and
//! [`Gcra::acquire_blocking`]; [`LimiterExt`] (retrying blocking and async waits for every
//! limiter); per-key waits on [`Keyed`], [`IntKeyed`] and [`KeyPool`]; and [`Gcra::reserve`]
//! (a place in line, one CAS). Methods that block the thread say `blocking` in their name:
//! never call them from async code.
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
//! - `serde`: `Serialize` and `Deserialize` for [`Rate`], as its text form (`"5/s"`,
//!   `"100/min"`, `"3 per 20s"`; see [`Rate`]'s `FromStr`). Works without `std`.
//!
//! On targets without native 64-bit atomics, `portable-atomic`'s fallback provides
//! `AtomicU64`; there it is not lock-free.

#![cfg_attr(not(any(feature = "std", hotlimit_loom)), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

mod clock;
mod decide;
mod error;
mod gcra;
mod gcra_multi;
mod gcra_pair;
pub mod guide;
#[cfg(any(feature = "std", hotlimit_loom))]
mod int_keyed;
mod key_pool;
mod key_wait;
#[cfg(any(feature = "std", hotlimit_loom))]
mod keyed;
mod limiter;
mod memory;
mod pacer;
mod rate;
mod reservation;
mod sharded;
mod sliding_log;
mod sliding_window;
mod sync;
mod wait;

#[cfg(all(feature = "std", not(hotlimit_loom)))]
pub use clock::CoarseClock;
#[cfg(feature = "std")]
pub use clock::QuantaClock;
pub use clock::{Clock, DefaultClock, ManualClock, NoClock};
pub use decide::{Decide, Decision, Quota};
pub use error::{ConfigError, DenialReason, Denied, ParseRateError};
pub use gcra::{Gcra, GcraBuilder};
pub use gcra_multi::{GcraMulti, GcraMultiBuilder};
pub use gcra_pair::{GcraPair, GcraPairBuilder};
#[cfg(any(feature = "std", hotlimit_loom))]
pub use int_keyed::{IntKey, IntKeyed, IntKeyedBuilder, IpKey};
pub use key_pool::{KeyPool, KeyPoolBuilder};
#[cfg(feature = "std")]
pub use keyed::{Keyed, KeyedBuilder, KeyedRead, KeyedState, WhenFull};
#[cfg(all(hotlimit_loom, not(feature = "std")))]
pub use keyed::{KeyedRead, KeyedState};
pub use limiter::Limiter;
pub use pacer::{Pacer, PacerBuilder, Tick};
pub use rate::Rate;
pub use reservation::{FairAcquire, Reservation};
pub use sharded::{ShardedGcra, ShardedGcraBuilder};
pub use sliding_log::{SlidingLog, SlidingLogBuilder};
pub use sliding_window::{SlidingWindow, SlidingWindowBuilder};
#[cfg(feature = "std")]
pub use wait::Precise;
pub use wait::{Acquire, LimiterExt, Sleep};

// Planted bugs for the loom models in `loom-tests/` (each model must be able to fail). They
// exist only under `--cfg hotlimit_loom` and are not part of the API.
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub use gcra::planted as __planted_gcra;
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub use gcra_multi::planted as __planted_gcra_multi;
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub use gcra_pair::planted as __planted_gcra_pair;
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub use int_keyed::planted as __planted_int_keyed;
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub use keyed::planted as __planted_keyed;
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub use reservation::planted as __planted_reservation;
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub use sharded::planted as __planted_sharded;
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub use sliding_log::planted as __planted_sliding_log;
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub use sliding_window::planted as __planted_sliding_window;

/// The README's examples, compiled and run as doctests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
