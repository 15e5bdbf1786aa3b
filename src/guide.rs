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
//! [`Gcra`]: crate::Gcra
//!
//! # Waiting: blocking, async, reservations and the pacer
//!
//! *Which waiter.* Every limiter gets [`LimiterExt`]: `acquire`, `acquire_timeout`, their
//! `_with` forms that take a [`Sleep`], and `acquire_async`. They loop on `try_acquire_n` and
//! wait each denial's `retry_after`; they hold nothing while waiting, so a timeout or a
//! dropped future never leaks a permit, but a waiter that wakes can lose its permit to a
//! newcomer (not first-come-first-served). [`Gcra`] adds [`Reservation`]s and inherent
//! `acquire*` methods built on them, which serve waiters strictly in order. [`Pacer`] is for
//! load generators: threads call `pace()` and send when it returns.
//!
//! *Waking on time.* [`Precise`] sleeps with `thread::sleep` until a margin (100 µs by
//! default) before the deadline, then spins on the clock (yielding to the OS while more than
//! 20 µs remain). `thread::sleep` alone wakes late by the OS timer slack plus scheduling
//! delay; the spin removes that on an idle core. No jitter is ever added. A [`ManualClock`]
//! is also a [`Sleep`]: "sleeping" moves it to the deadline, so blocking code runs instantly
//! and deterministically in tests. Async waiting is runtime-agnostic: `acquire_async` takes
//! the runtime's sleep function (`|d| tokio::time::sleep(d)`), so the crate needs no runtime
//! dependency; its precision is the runtime timer's.
//!
//! # Reservations: one CAS for a place in line
//!
//! A reservation for n permits at `now` with maximum wait W is the GCRA step with the
//! tolerance widened by W: with base = max(S, now), allowed iff base + n·I ≤ now + τ + W; then
//! S' = base + n·I is installed by one CAS and the permits are the caller's from
//! r = max(now, S' − τ). With W = 0 this is exactly `try_acquire_n_at` (and r = now). The
//! queue of waiters is the TAT itself, pushed into the future; the order of service is the
//! order of the CASes.
//!
//! *The bound, counting each permit at its ready time r.* The proof for grants above goes
//! through with r_k in place of now_k: S_k ≤ r_k + τ holds because r_k ≥ S_k − τ, and
//! S_f ≥ r_f + n_f·I holds in both cases of the max (r_f = now_f ≤ base_f, or r_f = S_f − τ
//! with τ ≥ n_f·I). So in any interval of length d at most b + ⌊d/I⌋ permits become ready.
//!
//! *Cancels.* A cancel CASes S from its S' back to S' − n·I = base, and succeeds only if S
//! still equals S'. Call a reservation or grant *live* unless it was cancelled successfully.
//! Invariant: the live operations' S' values strictly increase in linearization order, and the
//! current S ≥ the last live S'. A grant or reservation keeps it (S' > S ≥ last live S'). A
//! cancel of op j succeeds only if S = S'_j; any live op after j would have S' > S'_j and
//! S ≥ that, so j is the last live op; it sets S to base_j ≥ the S at j's time ≥ the S' of the
//! op that was last live then, which is the last live op now (ops between them that were live
//! at j's time would have had to be cancelled while j was live, which the same argument
//! forbids). Failed cancels and denials write nothing. With the invariant, consecutive live
//! ops satisfy S'_k ≥ S'_{k−1} + n_k·I, which is all the bound's proof uses: **cancels never
//! break the GCRA bound**, for any interleaving. Loom checks this with 3 threads, and a
//! planted cancel that subtracts n·I blindly fails the same model.
//!
//! *When a cancel gives back exactly.* A successful cancel leaves S = max(S_before, now_j):
//! the state as if the reservation had never been made, for every request at or after its
//! `now` (a request with an older `now` sees a slightly later S: conservative). A cancel
//! succeeds exactly when S still holds the S' it installed: nothing has landed since, or
//! everything that did was itself given back (necessarily in reverse order) and was made at
//! a `now` no later than that S'. Otherwise it **fails**: its permits are not given back and
//! that capacity stays unused. Giving back a slot in the middle of the line
//! would need a hole in the queue, and one word cannot hold holes; moving S back under later
//! slots would hand them out twice (the planted bug). Blocking `acquire` on a `Gcra` never
//! cancels (it only reserves within its timeout), so it never wastes capacity; cancels come
//! from dropping a [`Reservation`] before it was kept or waited for.
//!
//! # The pacer
//!
//! [`Pacer`] is a GCRA with burst k + 1 (k = catch-up slots), whose state is seeded at build
//! so that the first slot is the build time rather than a burst. `pace()` reserves one permit
//! with unbounded wait and waits to the slot s = S' − τ (not clamped to `now`, so lateness
//! behind schedule is visible in [`Tick`]). Slots are one interval apart in reservation order
//! whichever thread reserved them. Falling more than k slots behind drops the excess and
//! restarts the schedule from now. The default k is 10 ms worth of slots: measured on a
//! loaded machine (BENCHMARKS.md), a pacer without catch-up loses every stall for good.
//!
//! [`LimiterExt`]: crate::LimiterExt
//! [`Sleep`]: crate::Sleep
//! [`Reservation`]: crate::Reservation
//! [`Pacer`]: crate::Pacer
//! [`Precise`]: crate::Precise
//! [`ManualClock`]: crate::ManualClock
//! [`Tick`]: crate::Tick
