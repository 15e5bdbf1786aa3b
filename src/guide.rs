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
//! # Sharded GCRA: the sum of the shards
//!
//! [`ShardedGcra`] splits one GCRA into S shards so that threads on different cores update
//! different cache lines. Let the global rate be `limit` per `period`, I = ⌈period/limit⌉
//! (the interval of a [`Gcra`] with the same rate) and b the burst.
//!
//! *Shares.* Shard k gets l_k = ⌊limit/S⌋ (+1 for the first `limit mod S` shards) of the rate
//! and b_k = ⌊b/S⌋ (+1 for the first `b mod S` shards) of the burst, so Σ l_k = `limit` and
//! Σ b_k = b exactly. S ≤ min(limit, b), so every l_k, b_k ≥ 1. Shard k runs GCRA with
//! burst b_k and interval
//!
//! ```text
//! I_k = ⌈I · limit / l_k⌉.
//! ```
//!
//! The rounding is from I, not from `period`: rounding ⌈period/l_k⌉ instead can make the
//! shards faster than one `Gcra` (period 10 ns, limit 3, S = 3: I = 4, so one `Gcra` grants
//! one per 4 ns, while three shards of ⌈10/1⌉ = 10 ns grant 3 per 10 ns).
//!
//! *The bound: in any interval of length d, at most b + ⌊d/I⌋ permits.* Every grant is a
//! grant of exactly one shard's GCRA (a split request is several such grants, one per shard
//! it takes from), made by a CAS on that shard's word. The `Gcra` proof above applies to each
//! shard on its own (it needs only that the shard's grants are linearized by its CAS; give
//! backs are handled below): shard k grants at most b_k + ⌊d/I_k⌋ in the interval. Since
//! I_k ≥ I·limit/l_k, 1/I_k ≤ l_k/(I·limit), so Σ_k 1/I_k ≤ 1/I, and
//!
//! ```text
//! Σ_k (b_k + ⌊d/I_k⌋) ≤ Σ b_k + ⌊Σ_k d/I_k⌋ ≤ b + ⌊d/I⌋,
//! ```
//!
//! using Σ⌊x_k⌋ ≤ ⌊Σ x_k⌋. So the sharded limiter never exceeds one `Gcra`'s guarantee,
//! whatever the threads, homes and borrowing do.
//!
//! *Give-backs keep each shard an exact GCRA history.* A split request that comes up short
//! undoes each take with a CAS from the value its take wrote (`after`) back to the value it
//! read (`before`). Call a take *outstanding* until it is undone. Claim: at every moment a
//! shard's word equals the `after` of its most recent outstanding take (or its initial
//! value), and outstanding takes' `after` values strictly increase in take order. Both hold
//! initially. A take CASes from the current value v to max(v, now) + m·I_k > v, so it becomes
//! the most recent outstanding take with a larger `after`. A give-back by take X succeeds
//! only if the word equals X's `after`; if X is not the most recent outstanding take T,
//! the word is T's `after` > X's `after` (strict increase), so the CAS fails: give-backs
//! succeed only in LIFO order, and a successful one restores the value that was current
//! before X, i.e. the `after` of the previous outstanding take. Hence a take that is never
//! undone was decided on the state left by exactly the takes that precede it and are never
//! undone either (an outstanding take below a permanent one can never be given back), so the
//! permanent takes of each shard form a plain GCRA history and the bound above applies to
//! them. Undone takes granted nothing. A give-back whose CAS fails leaves its permits taken
//! and unused ("stranded", fewer than n per failed request); that only lowers admissions.
//!
//! *When it denies.* Sequentially, a request for n is granted iff Σ_k a_k ≥ n, where a_k is
//! what shard k could grant now: the whole request from the home shard if a_home ≥ n, else
//! from the first other shard with a_k ≥ n, else split greedily in order from the home. So a
//! single permit is denied only when every shard is empty. `retry_after` is the earliest
//! t ≥ now at which the shards together release n: shard k releases its m-th permit at
//! S_k − τ_k + m·I_k, so for n = 1 it is min_k (S_k − τ_k + I_k), and for larger n a binary
//! search over t (the count released by t is nondecreasing). Concurrently, each shard is read
//! at a different instant, so a denial means each shard lacked the permits when it was read.
//!
//! *What sharding costs against one `Gcra`.* (1) Whole permits per shard: up to S − 1
//! permits' worth of partial refill can be spread over shards. (2) A full shard drops its
//! refill while another is not full. After an idle spell every shard is full; a single busy
//! thread drains its home first while the shards it has not reached yet stay full, so it
//! loses at most the refill of the shards it has not reached while it drains the ones it has
//! — a one-time deficit per idle spell, of roughly (b/2)·(S−1)/S·(g/I) permits for a caller
//! whose calls are g apart (negligible for a hot loop, g ≪ I). In steady overload every shard
//! is drained and the pool refills at Σ 1/I_k. With b_k = 1 a shard is full as soon as it holds
//! one permit, so a caller that comes back only every g loses up to g/I_k per permit, as a
//! `Gcra` with burst 1 would: give each shard a burst of 2 or more (b ≥ 2S) if callers are
//! sparse. (3) The steady skewed rate Σ 1/I_k equals 1/I when S divides `limit`; otherwise
//! each I_k is rounded up by under 1 ns, a relative loss below l_max/(I·limit) ≤
//! 1/(S·I) + 1/(I·limit) with I in ns: under 0.1 % for I ≥ 1 µs.
//!
//! *Sliding windows.* The same construction applies to a hard cap per window with no
//! rounding at all: S windows with limits l_k (Σ l_k = `limit`) admit at most Σ l_k = `limit`
//! in any window, because each shard's count in that window is at most l_k, and borrowing
//! works the same way (a grant is always one shard's grant). Splitting a request needs a
//! give-back whose safety must be argued for the window's state as it is for GCRA above.
//! Not offered yet: [`ShardedGcra`] is GCRA only.
//!
//! *No token lease.* A lease (one atomic op takes a batch that the thread spends locally)
//! would strand up to batch − 1 permits per thread whenever load moves; borrowing already
//! makes the common case (home shard has permits) a single uncontended CAS on a line no other
//! core writes.
//!
//! [`ShardedGcra`]: crate::ShardedGcra
