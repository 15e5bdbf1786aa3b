//! Lock-free rate limiters for hot paths, each with an exact guarantee that is checked by the
//! `loom` model checker and by property tests against a sequential reference model.
//!
//! | limiter | shared state | guarantee | memory |
//! |---|---|---|---|
//! | [`Gcra`] | one `AtomicU64`: the theoretical arrival time | smooth rate: in any interval of length d at most b + d/I permits (I = period/limit rounded up, burst b, default `limit`); a denial is one load, no write; `retry_after` is exact | 8 bytes of state |
//! | [`GcraPair`] | one 16-byte atomic word: two TATs side by side | two smooth rates at once ("10 per second AND 1,000 per hour"): each rate's b + d/I bound; granted only if both admit, a refusal charges neither and waits the later of the two exact waits; one 128-bit CAS per grant, a denial is one load; per key: [`Keyed::gcra_pair`] | 16 bytes of state |
//! | [`GcraMulti`] | a pool of snapshots of up to 8 TATs, and one `AtomicU64` naming the current one | three or more smooth rates at once, with `GcraPair`'s guarantees (each rate's bound, all or nothing, exact later wait); a grant writes a spare snapshot and CASes the name, a denial is loads only; grants from several cores contend (27 → 7 million per second from 1 to 2 threads, BENCHMARKS.md): not for a hot path many cores share | 72 bytes × snapshots (default 2 × cores + 2) |
//! | [`ShardedGcra`] | S cache-padded GCRA words (default S = cores), each with its share of the rate and burst | never over one `Gcra`'s b + d/I; each thread starts at its own home shard (thread-local) and borrows from the others before it denies, so a single busy thread still gets the global rate | S × one padded line (128 bytes on x86-64) |
//! | [`SlidingWindow`] | one decision word (the count of permits ever granted, beside the current bucket) and a ring of that count's snapshots at bucket ends: a grant is one CAS | hard cap: at most `limit` in every window of length `period`, never over-admits, each grant counted at its effective time τ (its `now`; for a caller preempted between its clock read and its CAS, the newest bucket's start: τ always lies within the call, so an audit by real time never sees more than `limit`, while an audit by the callers' own `now`s can see up to `limit` + the number of threads, measured 1.88 × `limit` at `limit` 8 with 16 threads on 2 cores: see the [guide](guide::sliding_window#what-time-a-grant-is-counted-at)); a false denial only if `limit` were granted within `period` + one bucket width (default 10 buckets); `count_closed(k)` also closes a bucket at k permits, so a request for n is wrongly denied only if fewer than n + k − 1 permits are truly free as well (k = 1: exact for a sequential caller); `approximate()` mode never wrongly denies a sequential caller but may admit up to 2 × `limit` in a window (measured +8–19 % under random load, 10 buckets) | 8 bytes × M (M the power of two ≥ buckets + 1: 16 for the default 10) + 512 bytes (the head's two cache lines: the word every grant CASes, and the epoch every call reads; 128 bytes of padding on each side of the ring); count-closed: 8 bytes × (buckets + 1) + 16 bytes × ⌊`limit`/k⌋ + six cache lines |
//! | [`SlidingLog`] | a ring of `limit` `AtomicU64` grant times and a cursor | exact sliding window: at most `limit` permits in every window (t − period, t], under any concurrency; a sequential caller gets exactly the exact log's decisions and `retry_after`; a denial is read-only | 8 bytes × `limit` |
//! | [`MultiWindow`] | up to 8 windows, each a `SlidingWindow` ring or a `SlidingLog` ring with its own limit and period | several hard windows at once ("100/min AND 2,000/h"): each window's bound (a ring's or a log's), all or nothing: two rings share one decision word and a grant is one CAS of it; other sets charge each window by its own CAS and a refusal gives every charge back (a racing caller may be refused meanwhile, never granted: see the [guide](guide::multi_window)); a sequential caller gets the windows' exact decisions and the latest wait; per key: [`Keyed::multi_window`] | per window 120 bytes + a ring's 8 bytes × M or a log's 8 bytes × `limit`, 64 bytes for the set; per key 80 bytes + the windows + the key and map entry |
//! | [`KeyPool`] | a [`SlidingLog`] of K·`max_uses` slots, slot i → key i mod K; or, with [`buckets(n)`](KeyPoolBuilder::buckets), one strict [`SlidingWindow`] per key and a cursor | hands out API keys ([`try_next_key`](KeyPool::try_next_key)): no key more than `max_uses` times in any window of `period`; denied, with the exact wait, only when every key is spent (with `buckets(n)`: spent within `period` + one bucket width) | 8 bytes × K × `max_uses`; with `buckets(n)`: about 104 + 8·M bytes × K, M the power of two ≥ n + 1 (245 MB for a million keys, n = 10) |
//! | [`Keyed`] (`std`) | key → one limiter state: for [`Gcra`] (one `AtomicU64`) and [`GcraPair`] (one 16-byte word) inline beside the key in a lock-free open-addressed table; for [`SlidingLog`] and [`SlidingWindow`] (a ring behind a gate word) in a lock-free map | the inner limiter's guarantee per key, also while keys are evicted; at most `capacity` keys, idle keys evicted by sweeps on insert, [`WhenFull`] when too few are idle; per-key rate overrides (at most `capacity`) and default-rate changes at runtime | `Gcra`: at most 1.4 slots of 16 bytes per `u64` key of capacity (32 with `GcraPair`), segments that grow with integer keys; logs and windows: the key + 16 bytes + map overhead, `SlidingLog` + 8 bytes × `limit`, `SlidingWindow` + 8 bytes × M (M the power of two ≥ buckets + 1) + about 150 bytes of header (measured for `u64` keys: 28 bytes with `Gcra`, 55 with `GcraPair`, 278 with a `SlidingLog` of `limit` 10, 342 with a `SlidingWindow` of 10 buckets) |
//! | [`IntKeyed`] (`std`) | an open-addressed table of 16-byte atomic slots `{key, GCRA state}` for integer keys (`u64`, `u32`, `u16`, `i64`, `usize`) and IP addresses (`Ipv4Addr`; `Ipv6Addr` and `IpAddr` per prefix, default /56), two buckets of four per key (one cache line each; two more in a secondary area in tables over 1 MiB) | per key exactly [`Gcra`] (one rate for all keys, changed at runtime by [`set_rate`](IntKeyed::set_rate) as [`Gcra::set_rate`] changes one), also while keys are evicted: a grant is one 128-bit CAS of key and state together, and an insert protocol keeps at most one state per key (proof in the [guide](guide::int_keyed#intkeyed-integer-keys-inline), loom-checked); a hard capacity, idle keys replaced by new ones (no background thread); a new key with no room is denied with the wait until a slot goes idle | allocated at build: 16 bytes × the power of two ≥ 2·`capacity` up to a capacity of 32,768 (at most 1 MiB), 20.8 bytes per key of capacity above it (a primary area at load 0.85 and a secondary one for keys whose buckets are full); lock-free where the target has a 16-byte CAS (x86-64, aarch64), portable-atomic's lock elsewhere |
//! | [`Pacer`] | a `Gcra` | for load generators: N threads share one target rate; [`Pacer::pace_blocking`] (threads) or `pace_async(sleep)` (tasks) returns at the caller's slot (reserved with one CAS, then an adaptive sleep: woken the learned OS oversleep early, at most 10 µs of spin), slots one interval apart in reservation order; up to 10 ms of missed slots made up | 8 bytes of state |
//!
//! `Gcra` is **not** "at most `limit` in any window of `period`": with burst b = `limit` it can
//! grant up to 2·`limit` − 1 in one window. A hard cap per window is what `SlidingWindow` (never
//! over-admits, O(buckets) memory) and `SlidingLog` (exact, O(limit) memory) are for.
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
//! [`Gcra::acquire_blocking`]; [`LimiterExt`] (blocking and async waits for every limiter:
//! on a `Gcra`, however it is held, the same first-come-first-served line; on the others,
//! retrying and not fair); per-key waits on [`Keyed`], [`IntKeyed`] and [`KeyPool`]
//! (retrying); and [`Gcra::reserve`] (a place in line, one CAS). Methods that block the
//! thread say `blocking` in their name: never call them from async code.
//!
//! # Bad configuration and clocks
//!
//! Bad configuration is a [`ConfigError`] that names the field and the value
//! (`invalid burst = 0: must be at least 1`), never a panic or an abort: a limiter whose memory
//! grows with its configuration (`SlidingLog`'s ring, `IntKeyed`'s table, `Keyed`'s `capacity` ×
//! one key's bytes) checks its worst case at `build()` against `max_memory` (default 1 GiB, a
//! builder setting), and a rate no clock could charge (an emission interval over 2^62 ns, 146
//! years) is refused. A clock that goes backwards never frees permits, also for a key evicted
//! and re-created: a new per-key log or window denies a request below the eviction's time until
//! that time.
//!
//! Rates can be written as text (`"5/s"`, `"100/min"`, `"3 per 20s"`: [`Rate`] implements
//! `FromStr`, `Display`, and with the `serde` feature `Serialize`/`Deserialize`) or as constants
//! (`const R: Rate = Rate::per_second_nz(NonZeroU64::new(5).unwrap())`).
//!
//! # Changing limits while running
//!
//! | limiter | call | what happens to permits already granted |
//! |---|---|---|
//! | [`Gcra`], [`ShardedGcra`] | `set_rate`, `set_rate_and_burst` (`Gcra`: also `set_burst`) | permits free before stay free, at most the new burst; time owed is never forgiven. Across the change at s: at most b + (s−t)/I + (t+d−s)/I' in [t, t+d] |
//! | [`SlidingWindow`] | `set_limit` | a lower limit at once; a higher one a period later. A window containing the change holds at most the smaller limit |
//! | [`SlidingLog`] | `set_limit` (`&mut self`) | the newest grant times are carried: the exact log of every grant |
//! | [`Pacer`] | `set_rate` | the next slot follows the last one: a load ramp is one call per step |
//! | [`KeyPool`] | `report_refused`, `retire`, `reinstate`, `add_key` (`&mut`, with buckets) | a key refused upstream (429) is skipped until its cooldown ends |
//! | [`Keyed`] | `set_rate`, `set_rate_and_burst`, `set_default_rate` | per key, as `Gcra` |
//!
//! The grant paths are unchanged apart from layout (callgrind figures in BENCHMARKS.md). The
//! proofs are in the [guide](guide::rate_changes#changing-a-rate-while-running).
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
//!   to `try_acquire_n_on_at`) and S defaults to 1.
//! - `serde`: `Serialize` and `Deserialize` for [`Rate`], as its text form (`"5/s"`,
//!   `"100/min"`, `"3 per 20s"`; see [`Rate`]'s `FromStr`). Works without `std`.
//!
//! On targets without native 64-bit atomics, `portable-atomic`'s fallback provides
//! `AtomicU64`; there it is not lock-free.

#![cfg_attr(not(any(feature = "std", hotlimit_loom)), no_std)]
// `deny`, not `forbid`: `keyed/table/cell.rs` allows it for its key cell (and the table's
// reads, writes and drops of keys, each with its `SAFETY`), and only there.
#![deny(unsafe_code)]

extern crate alloc;

mod clock;
mod contention;
mod decide;
mod error;
mod fair_queue;
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
mod multi_window;
mod pacer;
mod rate;
mod reservation;
mod sharded;
mod short_key;
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
// The seam between the waits and a limiter's first-come-first-served line (the hidden
// `Limiter::__fair_queue` hook returns it). Not part of the API.
#[doc(hidden)]
pub use fair_queue::{FairQueue as __FairQueue, Place as __Place};
pub use gcra::GcraRule;
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
pub use multi_window::{MultiWindow, MultiWindowBuilder};
pub use pacer::{Pacer, PacerBuilder, Tick};
pub use rate::Rate;
pub use reservation::{FairAcquire, Reservation};
pub use sharded::{ShardedGcra, ShardedGcraBuilder};
pub use short_key::{KeyTooLong, ShortKey};
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
pub use multi_window::planted as __planted_multi_window;
#[cfg(hotlimit_loom)]
#[doc(hidden)]
pub use pacer::planted as __planted_pacer;
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
