//! The long form: choosing a limiter, and the proofs of each guarantee.
//!
//! # Choosing a limiter
//!
//! - **Smooth a rate** (pacing, protecting a backend from bursts above b): [`Gcra`]. Eight
//!   bytes of state, one CAS per grant, a single load per denial.
//! - **A hard cap per window** ("at most 500 calls in any 10 minutes", an upstream quota):
//!   a sliding window or log. GCRA does *not* give this: with burst b = limit it can grant
//!   up to 2·limit − 1 in one window of length `period` (b at once, then one per I).
//!
//! # GCRA: the bound "at most b + d/I in any interval of length d"
//!
//! Let the grants, in the order their CAS succeeded (the linearization order), be
//! g₁, g₂, …, with times `now_k`, sizes `n_k`, and TAT S_k after grant k. By the algorithm,
//! S_k = max(S_{k−1}, now_k) + n_k·I and S_k ≤ now_k + τ, with τ = b·I.
//!
//! Take any interval [t, t + d] and let f and l be the first and last grants (in
//! linearization order) whose `now` lies in it. Every grant in the interval is among
//! g_f … g_l, and S only grows by at least n·I per grant, so
//!
//! ```text
//! S_l ≥ max(S_{f−1}, now_f) + Σ_{k=f..l} n_k·I ≥ now_f + N·I,
//! ```
//!
//! where N ≥ the permits granted in the interval. With S_l ≤ now_l + τ:
//! N·I ≤ now_l − now_f + τ ≤ d + b·I, so N ≤ b + d/I. Nothing here needs the `now`s to be
//! in linearization order, so the bound holds for concurrent callers whose clock reads
//! interleave arbitrarily with their CASes. A denial writes nothing, so it cannot affect
//! the bound.
//!
//! *Rounding.* I is `period / limit` rounded up to whole nanoseconds, so b + d/I never exceeds
//! the exact-rational bound; the long-run rate is at most `limit / period` and below it by
//! less than 1 ns per permit.
//!
//! *Clocks that go backwards.* If `now` is below S the request is judged as if no time had
//! passed since S was set: max(S, now) = S. A smaller `now` also shrinks the grant threshold
//! now + τ, so a clock set back can only deny more, never grant more.
//!
//! *Exact retry.* A denial at `now` returns r = S' − (now + τ), where
//! S' = max(S, now) + n·I. Retried at now + r with S unchanged: if S ≥ now + r, the grant
//! condition S + n·I ≤ now + r + τ holds with equality (then S > now, so S' = S + n·I);
//! if S < now + r, it reads now + r + n·I ≤ now + r + τ, true because n ≤ b. So waiting
//! exactly r succeeds unless another grant took the capacity meanwhile.
//!
//! # What a call costs, and why Gcra keeps its CAS
//!
//! Measured side by side with `governor`, the `ratelimit` crate and `Mutex` peers in
//! BENCHMARKS.md (`benches/`, `examples/scaling.rs`, `benches/callgrind.sh`). Single-threaded,
//! a [`Gcra`] call on the default clock is 45 instructions when granted and 39 when denied
//! (governor: 50 and 44), of which 24 are the TSC clock read; with `CoarseClock` the read is
//! 4 instructions and the whole allowed call is 23 instructions, 6 of them the CAS loop.
//!
//! Under contention a limiter that reads a precise clock on every call cannot run faster than
//! the clock read, and Gcra's CAS (clock read before the load, `Backoff` after a failed CAS, no
//! write on denial) reaches that ceiling at two threads. A `fetch_add` reservation of n·I on
//! the busy path was considered and rejected: when the state trails `now` the update is `now +
//! n·I`, which needs a CAS anyway, and a reservation that fails must be taken back; taking it
//! back with `fetch_sub` over-admits once another thread has replaced the word in between
//! (BENCHMARKS.md gives the interleaving; a loom model in `loom-tests/tests/gcra.rs` finds it),
//! and taking it back only when nobody wrote since loses permits under exactly the contention
//! it is meant for. The CAS is exact for any `now` a caller passes, which is the guarantee this
//! crate documents.
//!
//! [`Gcra`]: crate::Gcra
