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
//! # SlidingWindow: the strict bound
//!
//! [`SlidingWindow`](crate::SlidingWindow) is the hard cap in O(buckets) memory: it never
//! over-admits, and may deny wrongly only within one bucket width of the exact window.
//!
//! Notation: period p, `limit` L, n buckets of width w = ⌈p / n⌉ (so n·w ≥ p and w ≤ p),
//! bucket e = the times [e·w, (e+1)·w). The floor of a time t is
//! f(t) = ⌊(t − lag) / w⌋ (0 when t < lag) with lag = p − 1 (strict) or p − w
//! (approximate), and T(s) = s·w + lag (T(0) = 0) is the first time whose floor is s.
//! A request at t counts the buckets ≥ f(t). In strict mode bucket f(t) holds the instant
//! t − p + 1, the oldest of the window (t − p, t], so every grant in the window is in a
//! counted bucket.
//!
//! **Ring size.** The buckets a request can count are f(t) ..= ⌊t / w⌋; their number
//! ⌊t/w⌋ − ⌊(t − lag)/w⌋ + 1 is at most ⌈lag / w⌉ + 1 =: R, attained for suitable t. So R
//! slots (slot e mod R) never hold two live buckets. Strict: R = n + 1 when w > 1 and
//! p = n·w (a window of n buckets can straddle n + 1 of them).
//!
//! **The state.** `state` = `{ floor: s, count: c }` changes only by: a floor move
//! (s → s' > s, c unchanged), a grant (c → c + n, CAS validating s and c together), and a
//! subtraction (c → c − k, `fetch_sub`). `high` (raised before the floor) lets every reader
//! rebuild the full 64-bit s; the floor never moves back.
//!
//! *Lemma 1 (exactly once).* Every granted permit is subtracted from c at most once, and
//! only after the floor exceeded its bucket x. A granter reserves slot x (`{ epoch: x,
//! count: k }`) before its CAS on `state` and adds its n to the slot after it. Only two
//! things subtract: the CAS that retires the slot (`{ epoch: x, count: RETIRED }`), done
//! only under a floor s > x, subtracts the k it replaced; and a granter that finds its slot
//! no longer live for x (so it was retired) subtracts its own n. The granter's add and the
//! retirement are CASes on the same word: if the add comes first the retirer's k includes
//! it, otherwise the granter sees RETIRED. Either way exactly once.
//!
//! *Theorem (strict).* Give each grant the effective time τ = max(now, T(s)), s being the
//! floor its CAS validated; τ = now whenever the caller's clock is not behind the floor,
//! in particular for any sequential caller whose clock does not go backwards. Then every
//! window (t − p, t] holds at most L permits of grants by τ.
//!
//! *Proof.* f(τ) = s (τ ≥ T(s), and if τ = now then f(now) ≤ s because the call moves the
//! floor to f(now) first), and the grant is recorded in bucket x = ⌊τ / w⌋ ≥ s. Fix a
//! window and let k be the grant in it whose CAS came last. Any other grant i in the
//! window was linearized before k. If τ_i ≤ τ_k then τ_i > t − p ≥ τ_k − p, so
//! x_i = ⌊τ_i / w⌋ ≥ f(τ_k) = s_k: by Lemma 1 its permits were not subtracted when k's
//! CAS saw the count. If τ_i > τ_k then x_i ≥ ⌊τ_k / w⌋ ≥ s_k: the same. So k's CAS saw
//! c ≥ the permits of every other grant in the window, and required c + n_k ≤ L. ∎
//!
//! The proof uses nothing about the order of the `now`s, so it holds for concurrent
//! callers whose clock reads interleave arbitrarily with their CASes. A denial changes no
//! count, so it cannot affect the bound.
//!
//! **False denials.** Called sequentially, c is exactly the permits in buckets ≥ f(now), all
//! granted at times ≥ f(now)·w ≥ now − lag − (w − 1) = now − p − w + 2. So a denial means
//! more than L − n permits were granted within the last p + w − 1 ns. Concurrently, c can
//! also briefly include permits whose bucket just expired (a retirement or a sweep in
//! progress, or a granter between its decision and its bucket update): that can only deny,
//! and only while that other call is in progress. The property tests check this bound
//! against the exact log on every denial.
//!
//! **Exact retry.** A denial at `now` (c + n > L under floor s) walks the buckets y ≥ s in
//! order, adding up their counts, and answers T(y + 1) − now for the first y at which the
//! freed permits reach c + n − L. At T(y + 1) the floor is y + 1: those buckets no longer
//! count and the request fits; at T(y + 1) − 1 the floor is still y and it does not. (If
//! the buckets hold less than that, some grants are still being recorded; the answer is
//! then the time when every live bucket has left, T(s + R).) The property tests check both
//! sides on random traces.
//!
//! **Clocks that go backwards.** A `now` behind the floor is judged at T(s): the same
//! buckets as the newest caller sees, none of them expired. An expired bucket is one below
//! the floor, and the floor only moves forward.
//!
//! **Wrap-around and ABA.** Epochs in packed words keep 32 bits. A slot stamped with an
//! epoch is compared with the current floor by its signed 32-bit offset, and a retired slot
//! still carrying x's low bits is only taken as "x was retired" after re-reading the floor
//! (a retirement of x is only done under a floor > x, and the reader sees that floor).
//! After an idle gap of 2^31 buckets or more (offsets mean nothing), the sweep that moves
//! the floor retires every live slot: no bucket is opened before `swept` catches up with the
//! floor, so every live slot it sees predates the gap (tested with a gap of exactly 2^32
//! buckets, where the old bucket has the new bucket's low bits). What remains is a call
//! suspended between two of its own atomic steps for about 2^31 bucket widths (6.8 years at
//! w = 100 ms, 36 minutes at w = 1 µs): then a stale stamp could be misread.
//!
//! **Approximate mode.** lag = p − w: the floor is the first bucket that starts after
//! now − p, dropping the partially overlapping oldest bucket. The proof above then bounds
//! only the grants at or after f(τ_k)·w > τ_k − p; the dropped part of a window lies in
//! one bucket, whose permits were themselves admitted under the cap, so a
//! window holds at most 2·L, and that is reached: L at the last instant of a bucket, then L
//! at the first instant whose floor is past that bucket, p − w + 1 ns later. In exchange a
//! sequential caller is never denied unless the exact window (t − p, t] holds more than
//! L − n (the counted buckets all lie in it). Measured by `approximate_over_admission_measured`
//! in `tests/sliding_window.rs` (`cargo test --release --test sliding_window approximate --
//! --nocapture`), L = 100, p = 1 s, worst window over the exact log minus L:
//!
//! | buckets | adversarial trace | Poisson arrivals 1× the rate | 2× | 4× |
//! |---|---|---|---|---|
//! | 4 (share 25) | +100 | +13 | +24 | +29 |
//! | 10 (share 10) | +100 | +8 | +12 | +19 |
//! | 16 (share 6) | +100 | +7 | +9 | +14 |
//!
//! (300 periods of seeded Poisson arrivals per cell; "share" is L / n.) So under random
//! load the worst window exceeds the cap by roughly one to two buckets' share, and an
//! adversary can double it.
//!
//! # Count-closed buckets: not provided
//!
//! Closing a bucket also when it holds k permits (to bound false denials by k permits
//! rather than by a bucket width) needs a ring whose exact size is not proven here; the
//! crate does not offer a mode whose ring could silently be too small. Strict time-closed
//! buckets with more buckets (up to 65,536) are the supported way to tighten the margin.
