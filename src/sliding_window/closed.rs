//! Count-closed mode's core (see
//! [`SlidingWindowBuilder::count_closed`](super::SlidingWindowBuilder::count_closed)): strict
//! time buckets whose open part also closes at `k` permits. The decision word is `{ floor: s, granted: G }`
//! over a ring of `{ epoch, count }` bucket words; an expired bucket's count is given back
//! exactly once, by whoever wins the CAS that retires its slot. See the module docs of
//! [`sliding_window`](super) and the [`guide`](crate::guide::count_closed#count-closed-buckets).
//!
//! ```text
//! state:     { floor: s mod 2^32 (bits 63..32), granted: G mod 2^32 (bits 31..0) }
//! slot[e%R]: { epoch: e mod 2^32 (bits 63..32), count: k (bits 31..0) }, k = RETIRED (2^32 − 1)
//!            marks a slot whose count was given back ("retired")
//! high:      the highest floor ever proposed, full 64 bits
//! swept:     every slot with an epoch below it has been retired, full 64 bits
//! ```
//!
//! The full floor s is rebuilt from `high` and the 32 low bits kept in `state`:
//! s = high − ((high − s) mod 2^32), exact while high − s < 2^32 (`high` is raised before
//! `state`'s floor, so high ≥ s). Slot epochs are compared with s through their signed 32-bit
//! offset. Initially `state` = `{ floor: 0, granted: 0 }` and every slot is
//! `{ epoch: 0, count: RETIRED }` (free).
//!
//! Wrap-around: the 32-bit epochs repeat every 2^32 bucket widths. An idle limiter is safe for
//! any length of time: full floors live in `high` and `swept`, and after a gap of 2^31 buckets
//! or more the sweep that moves the floor retires every live slot (no bucket is opened before
//! `swept` has reached the floor, so every live slot it meets predates the gap).
//!
//! Files: this one holds the words, the ring of closed buckets and the admission (one
//! algorithm, kept whole); `closed/read.rs` the read-back, `(remaining, reset)` at a given
//! time; `closed/planted.rs` the loom models' planted bug.

use alloc::boxed::Box;
use alloc::vec::Vec;
use crossbeam_utils::CachePadded;

use crate::error::Denied;
use crate::error::{ConfigError, Value};
use crate::sync::{AtomicU64, Backoff, Ordering};

/// The planted bug of `super::planted::RacyExpiry`.
#[cfg(hotlimit_loom)]
mod planted;
mod read;

/// Bits of a packed word that hold a count (the low half).
const COUNT_BITS: u32 = 32;
/// Mask of the count field.
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// A slot's count field when its permits have been given back.
const RETIRED: u64 = COUNT_MASK;

#[inline(always)]
fn pack(epoch: u64, count: u64) -> u64 {
    (epoch << COUNT_BITS) | count
}

#[inline(always)]
fn epoch32(word: u64) -> u32 {
    (word >> COUNT_BITS) as u32
}

#[inline(always)]
fn count(word: u64) -> u64 {
    word & COUNT_MASK
}

/// The count-closed limiter's whole state.
pub(super) struct CountClosed {
    /// `{ floor: s, granted: G }`: the decision word.
    state: CachePadded<AtomicU64>,
    /// The full 64-bit floors: `high` (≥ the floor in `state`), `swept` (≤ it).
    floors: CachePadded<Floors>,
    /// `{ epoch: e, count: k }` for bucket e in slot e mod R.
    slots: Box<[AtomicU64]>,
    /// Bucket width w in nanoseconds, at least 1.
    width: u64,
    /// f(now) = (now − lag) / w with lag = period − 1.
    lag: u64,
    /// R = ⌈lag / w⌉ + 1 slots: the most buckets that one window can touch.
    ring: u64,
    limit: u64,
    cl: Closed,
}

struct Floors {
    high: AtomicU64,
    swept: AtomicU64,
}

/// A closed bucket's `tag` count field while the entry is free.
const FREE: u64 = COUNT_MASK;
/// The most closed-bucket entries, ⌊limit / k⌋ (16 bytes each: 16 MiB).
const MAX_CLOSED: u64 = 1 << 20;

/// Count-closed mode's extra state. The decision word keeps its layout but its count field
/// only grows: every give-back goes to `released` instead, so `state` never repeats a value
/// (no ABA between a call's loads and its CAS) and the permits counted are
/// `granted − released`, taken mod 2^32.
///
/// ```text
/// state:        { floor: s mod 2^32, granted: G mod 2^32 }
/// released:     permits given back so far (retired buckets, expired closed buckets)
/// latest:       the highest `now` any call has brought; a call is judged at
///               t0 = max(now, latest) read after `state` and `released`
/// head, tail:   closed buckets claimed / expired so far (full 64 bits, never wrap)
/// entry[j % M]: time = the newest grant time of closed bucket j (an upper bound of it);
///               tag  = { gen: j mod 2^32, count: permits } once published,
///                      { gen: j mod 2^32, count: FREE } while free for bucket j
/// ```
///
/// Initially entry i is `{ gen: i, count: FREE }`; expiring bucket j writes
/// `{ gen: j + M, count: FREE }`. Generations of one entry differ by M < 2^32, so a stale
/// tag is never mistaken for a current one.
struct Closed {
    /// A bucket closes when it holds at least `k` permits.
    k: u64,
    /// M = ⌊limit / k⌋ entries.
    m: u64,
    period: u64,
    latest: CachePadded<AtomicU64>,
    released: CachePadded<AtomicU64>,
    head: CachePadded<AtomicU64>,
    tail: CachePadded<AtomicU64>,
    entries: Box<[Entry]>,
}

struct Entry {
    time: AtomicU64,
    tag: AtomicU64,
}

impl Closed {
    fn new(k: u64, limit: u64, period: u64, approximate: bool) -> Result<Closed, ConfigError> {
        let value = Value::Count(u128::from(k));
        let fail = |reason| Err(ConfigError::new("count_closed", value, reason));
        if k == 0 {
            return fail("must be at least 1");
        }
        if k > limit {
            return fail("must be at most limit (a bucket never holds more than limit permits)");
        }
        if approximate {
            return fail("cannot be combined with approximate mode");
        }
        let m = limit / k;
        if m > MAX_CLOSED {
            return fail(
                "limit / count_closed must be at most 1048576 (16 bytes per closed bucket)",
            );
        }
        let entries: Vec<Entry> = (0..m)
            .map(|i| Entry {
                time: AtomicU64::new(0),
                tag: AtomicU64::new(pack(i, FREE)),
            })
            .collect();
        Ok(Closed {
            k,
            m,
            period,
            latest: CachePadded::new(AtomicU64::new(0)),
            released: CachePadded::new(AtomicU64::new(0)),
            head: CachePadded::new(AtomicU64::new(0)),
            tail: CachePadded::new(AtomicU64::new(0)),
            entries: entries.into_boxed_slice(),
        })
    }

    #[inline(always)]
    fn entry(&self, j: u64) -> &Entry {
        &self.entries[(j % self.m) as usize]
    }

    /// Closed bucket j, if published: (permits, newest grant time).
    fn published(&self, j: u64) -> Option<(u64, u64)> {
        let e = self.entry(j);
        // Acquire: pairs with the Release store of the tag: the time written before it is
        // visible.
        let tag = e.tag.load(Ordering::Acquire);
        if epoch32(tag) != j as u32 || count(tag) == FREE {
            return None;
        }
        // Acquire: if this reads a later bucket's time (the entry was reused meanwhile), the
        // freeing of bucket j happens-before it, and a CAS on the tag expecting bucket j fails.
        Some((count(tag), e.time.load(Ordering::Acquire)))
    }
}

impl CountClosed {
    /// The core for `limit` per `period` ns in buckets of `width` ns, closing at `k` permits.
    pub(super) fn new(
        k: u64,
        limit: u64,
        period: u64,
        width: u64,
        approximate: bool,
    ) -> Result<CountClosed, ConfigError> {
        let cl = Closed::new(k, limit, period, approximate)?;
        // width ≤ period: no underflow.
        let lag = period - 1;
        let ring = lag.div_ceil(width) + 1;
        let slots: Vec<AtomicU64> = (0..ring).map(|_| AtomicU64::new(RETIRED)).collect();
        Ok(CountClosed {
            state: CachePadded::new(AtomicU64::new(0)),
            floors: CachePadded::new(Floors {
                high: AtomicU64::new(0),
                swept: AtomicU64::new(0),
            }),
            slots: slots.into_boxed_slice(),
            width,
            lag,
            ring,
            limit,
            cl,
        })
    }

    /// The k of `count_closed(k)`.
    pub(super) fn k(&self) -> u64 {
        self.cl.k
    }

    /// Permits counted now (a snapshot, for `Debug`).
    pub(super) fn counted(&self) -> u64 {
        // Relaxed (both): a snapshot for display.
        let g = self.state.load(Ordering::Relaxed);
        let r = self.cl.released.load(Ordering::Relaxed);
        u64::from((count(g) as u32).wrapping_sub(r as u32))
    }

    /// The floor f(now): the oldest bucket a request at `now` counts.
    #[inline(always)]
    fn floor_at(&self, now: u64) -> u64 {
        now.saturating_sub(self.lag) / self.width
    }

    /// T(s): the first time whose floor is s (0 for s = 0). Saturates; callers pass floors that
    /// came from real times, for which it is exact.
    #[inline(always)]
    fn floor_start(&self, s: u64) -> u64 {
        if s == 0 {
            0
        } else {
            s.saturating_mul(self.width).saturating_add(self.lag)
        }
    }

    #[inline(always)]
    fn slot(&self, epoch: u64) -> &AtomicU64 {
        &self.slots[(epoch % self.ring) as usize]
    }

    /// True when `state`'s floor field still reads `floor32`.
    #[inline]
    fn floor_unchanged(&self, floor32: u32) -> bool {
        // Acquire: pairs with the AcqRel CAS that moved the floor, so a slot retired or
        // stamped under a newer floor (which we observed with Acquire) implies we see that
        // floor here: read-read coherence along happens-before.
        epoch32(self.state.load(Ordering::Acquire)) == floor32
    }

    /// Retires a live slot that held `word`: marks it RETIRED and subtracts its count from
    /// `state`, exactly once (only the CAS winner subtracts). False if the slot changed.
    fn retire(&self, slot: &AtomicU64, word: u64) -> bool {
        let retired = (word & !COUNT_MASK) | RETIRED;
        // AcqRel: acquire what the granters that recorded into this slot published (their
        // permits are in `state`); release so that a granter who later finds the slot retired
        // also sees the floor move that caused it.
        if slot
            .compare_exchange(word, retired, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        let k = count(word);
        if k > 0 {
            self.give_back(k);
        }
        true
    }

    /// Takes `k` permits out of the count: into `released` (the decision word's count field
    /// only grows, see [`Closed`]).
    #[inline]
    fn give_back(&self, k: u64) {
        // AcqRel: published to the granters that read `released` (see `Closed`).
        self.cl.released.fetch_add(k, Ordering::AcqRel);
    }

    /// Retires every live slot whose bucket is below floor `s`, then records that in `swept`.
    fn sweep(&self, s: u64) {
        // Acquire: pairs with the fetch_max below (another sweep's retirements are visible).
        let done = self.floors.swept.load(Ordering::Acquire);
        if done >= s {
            return;
        }
        // After an idle gap of 2^31 buckets or more, 32-bit offsets from `s` say nothing, but
        // every bucket opened since the last complete sweep is older than `s`: buckets are
        // only opened once `swept` has caught up with the floor (see `try_acquire_n_at`).
        let jump = s - done >= 1 << 31;
        let backoff = Backoff::new();
        for slot in self.slots.iter() {
            loop {
                // Acquire: see the stamp's floor (see `floor_unchanged`) and, for a bucket
                // opened after a sweep, that sweep's `swept`.
                let word = slot.load(Ordering::Acquire);
                if count(word) == RETIRED {
                    break;
                }
                let stale = if jump {
                    // Acquire: if another sweep finished, buckets may be open at the new
                    // floor: leave the slots to the caller's retry.
                    if self.floors.swept.load(Ordering::Acquire) != done {
                        return;
                    }
                    true
                } else {
                    let offset = epoch32(word).wrapping_sub(s as u32) as i32;
                    // offset < 0: below the floor. offset ≥ R: above every live bucket, so
                    // either a newer floor exists (not ours to retire) or it is stale.
                    offset < 0 || (offset as u64 >= self.ring && self.floor_unchanged(s as u32))
                };
                if !stale || self.retire(slot, word) {
                    break;
                }
                backoff.spin();
            }
        }
        // AcqRel: publishes the retirements above to a caller that skips the sweep because of
        // this value.
        self.floors.swept.fetch_max(s, Ordering::AcqRel);
    }

    /// Makes `slot` ready for bucket `x` (from `word`, which is not live for x): stamps a
    /// retired slot, or retires a stale live one. Returns without change when our floor is
    /// stale; the caller reloads and retries either way.
    fn open_bucket(&self, slot: &AtomicU64, word: u64, x: u64, s: u64) {
        let (ep, k) = (epoch32(word), count(word));
        if k == RETIRED {
            // A retired slot stamped x: either bucket x itself was retired (the floor moved
            // past it, and then we see the new floor) or it is x's 2^32-bucket alias.
            if ep == x as u32 && !self.floor_unchanged(s as u32) {
                return;
            }
            // AcqRel: the stamp publishes nothing but must not be reordered with our floor
            // reads (see `floor_unchanged`).
            let _ = slot.compare_exchange(word, pack(x, 0), Ordering::AcqRel, Ordering::Acquire);
            return;
        }
        // Live for another epoch y ≡ x (mod R). No live bucket of our floor but x maps here,
        // so y is below the floor (retire it), newer (we are stale) or a wrapped alias.
        let offset = ep.wrapping_sub(s as u32) as i32;
        let newer = offset >= 0 && offset as u64 >= self.ring;
        if !newer || self.floor_unchanged(s as u32) {
            self.retire(slot, word);
        }
    }

    /// Adds our `n` permits (already counted in `state`) to bucket x, or, if x has been
    /// retired meanwhile, gives them back ourselves: either way they are given back exactly
    /// once.
    fn record(&self, slot: &AtomicU64, x: u64, n: u64) {
        let backoff = Backoff::new();
        // Acquire: see the slot's latest stamp.
        let mut word = slot.load(Ordering::Acquire);
        loop {
            if count(word) == RETIRED || epoch32(word) != x as u32 {
                // The floor passed x after our grant: x's permits no longer count, ours
                // included. The retirer did not see ours, so we give them back.
                self.give_back(n);
                return;
            }
            // AcqRel: serialises with `retire` on this slot: either we add first (the retirer
            // gives our permits back) or it retires first (we see RETIRED and give them back).
            match slot.compare_exchange_weak(word, word + n, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return,
                Err(current) => {
                    word = current;
                    backoff.spin();
                }
            }
        }
    }

    /// Loads the decision word and rebuilds its full 64-bit floor: `(word, floor)`.
    #[inline(always)]
    fn load_state(&self) -> (u64, u64) {
        // Acquire: pairs with the AcqRel RMWs on `state`; together with the Acquire load of
        // `high` below it guarantees high ≥ the floor read here, and that the retirements
        // made before the word was written are visible.
        let g = self.state.load(Ordering::Acquire);
        // Acquire: `high` is raised before `state`'s floor (see `catch_up`).
        let high = self.floors.high.load(Ordering::Acquire);
        // high ≥ s always (see above), so this never saturates; saturating rather than
        // panicking if that were ever broken.
        let s = high.saturating_sub(u64::from((high as u32).wrapping_sub(epoch32(g))));
        (g, s)
    }

    /// Brings the window up to the caller's floor `f`, given the word `g` and its floor `s`
    /// from [`load_state`](Self::load_state): moves the floor if `f > s`, else retires the
    /// slots below `s` if a sweep is pending. True if it did either: the caller then retries
    /// with a fresh word.
    #[inline(always)]
    fn catch_up(&self, g: u64, s: u64, f: u64) -> bool {
        if f > s {
            // Our time is past the floor: move it. `high` first, so that every reader of the
            // new floor can rebuild its full value.
            // AcqRel: released to the readers of `state` through the CAS below.
            self.floors.high.fetch_max(f, Ordering::AcqRel);
            // AcqRel: publishes the `high` update; failure means `state` moved: retry.
            let _ = self.state.compare_exchange(
                g,
                pack(f, count(g)),
                Ordering::AcqRel,
                Ordering::Acquire,
            );
            return true;
        }
        // Acquire: pairs with `sweep`'s fetch_max: the retirements it covers are visible.
        if self.floors.swept.load(Ordering::Acquire) < s {
            self.sweep(s);
            return true;
        }
        false
    }
}

// Count-closed admission (see `Closed` and the guide, "Count-closed buckets").
impl CountClosed {
    /// [`try_acquire_n_at`](super::SlidingWindow::try_acquire_n_at) in count-closed mode, for
    /// 1 ≤ n ≤ limit. Never inlined, so that strict mode's code stays small.
    #[inline(never)]
    pub(super) fn acquire(&self, n: u64, now: u64) -> Result<(), Denied> {
        let cl = &self.cl;
        // Acquire: see the latest high-water mark before deciding to raise it.
        if cl.latest.load(Ordering::Acquire) < now {
            // AcqRel: sequenced before every give-back this call makes, so whoever reads
            // `released` after them also reads `latest` ≥ now (see the guide's Lemma 2).
            cl.latest.fetch_max(now, Ordering::AcqRel);
        }
        let backoff = Backoff::new();
        loop {
            let (g, s) = self.load_state();
            // Acquire, after `state`: if our CAS on `g` succeeds, every give-back counted in
            // `r` was made while `state` was still `g` or before.
            let r = cl.released.load(Ordering::Acquire);
            // Acquire, after `released`: every closed bucket expired in `r` was expired at a
            // time t ≤ latest, so our t0 ≥ t.
            let t0 = now.max(cl.latest.load(Ordering::Acquire));
            let f = self.floor_at(t0);
            if self.catch_up(g, s, f) {
                continue;
            }
            if self.expire(cl, t0) {
                continue;
            }
            // Permits counted: granted − released, mod 2^32. More than `limit` only when `r`
            // includes give-backs of grants made after `g` was read: look again.
            let c = u64::from((count(g) as u32).wrapping_sub(r as u32));
            if c > self.limit {
                backoff.spin();
                continue;
            }
            if c + n > self.limit {
                // A denial with nothing to expire or retire returns here, before any write.
                return Err(self.denial_closed(cl, s, c, n, now));
            }
            let tau = t0.max(self.floor_start(s));
            let x = tau / self.width;
            let slot = self.slot(x);
            // Acquire: see the stamp's floor (see `floor_unchanged`).
            let word = slot.load(Ordering::Acquire);
            if count(word) == RETIRED || epoch32(word) != x as u32 {
                self.open_bucket(slot, word, x, s);
                continue;
            }
            // The count field only grows, wrapping inside its 32 bits.
            let next = (g & !COUNT_MASK) | (g.wrapping_add(n) & COUNT_MASK);
            // The decision: c + n ≤ limit under floor s and `g` unchanged since `released`
            // was read. AcqRel: orders the grant with the slot reads above and the record below.
            if self
                .state
                .compare_exchange_weak(g, next, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                backoff.spin();
                continue;
            }
            self.record_closed(cl, slot, x, n, tau);
            return Ok(());
        }
    }

    /// Adds our `n` permits to bucket x, closing it if it then holds at least k: its permits
    /// move, in the same CAS, out of the bucket into a closed-bucket entry. If x has been
    /// retired meanwhile we give our permits back ourselves (as `record` does).
    fn record_closed(&self, cl: &Closed, slot: &AtomicU64, x: u64, n: u64, tau: u64) {
        let backoff = Backoff::new();
        // Acquire: see the slot's latest stamp.
        let mut word = slot.load(Ordering::Acquire);
        let total = loop {
            if count(word) == RETIRED || epoch32(word) != x as u32 {
                self.give_back(n);
                return;
            }
            let total = count(word) + n;
            let next = if total >= cl.k {
                word & !COUNT_MASK
            } else {
                word + n
            };
            // AcqRel: serialises with `retire` (as in `record`) and acquires the records
            // of every grant already in the bucket, hence their raises of `latest`.
            match slot.compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) if total >= cl.k => break total,
                Ok(_) => return,
                Err(current) => {
                    word = current;
                    backoff.spin();
                }
            }
        };
        // Every grant in the closed bucket was judged at a time ≤ `latest` as of its record,
        // which our CAS acquired. Acquire: that raise is visible.
        let newest = tau.max(cl.latest.load(Ordering::Acquire));
        if !self.push_closed(cl, total, newest) {
            // Unreachable: a full ring would mean more than `limit` permits counted (guide).
            // Keep the permits in the bucket (time-closed only): never over-admits.
            debug_assert!(false, "closed-bucket ring full");
            self.record(slot, x, total);
        }
    }

    /// Publishes a closed bucket of `permits` whose newest grant is at `time`, at the head.
    /// False only if the ring is full, which the guide proves cannot happen.
    fn push_closed(&self, cl: &Closed, permits: u64, time: u64) -> bool {
        let backoff = Backoff::new();
        loop {
            // Acquire: see the entries freed up to this head.
            let h = cl.head.load(Ordering::Acquire);
            let e = cl.entry(h);
            // Acquire: pairs with the freeing CAS, so our writes below come after it.
            if e.tag.load(Ordering::Acquire) != pack(h, FREE) {
                // Acquire: a moved head means our look was stale.
                if cl.head.load(Ordering::Acquire) == h {
                    return false;
                }
                continue;
            }
            // AcqRel: claims index h; the entry is ours alone until we publish it.
            if cl
                .head
                .compare_exchange_weak(h, h + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                backoff.spin();
                continue;
            }
            // Release: a reader that sees this time also sees the freeing before it.
            e.time.store(time, Ordering::Release);
            // Release: publishes the time with the count.
            e.tag.store(pack(h, permits), Ordering::Release);
            return true;
        }
    }

    /// Expires closed buckets in order from the tail while the oldest one's newest grant is
    /// at least one period before `t0`; true if it gave any permits back.
    fn expire(&self, cl: &Closed, t0: u64) -> bool {
        let mut gave = false;
        loop {
            // Acquire (both): entries below the tail were freed; entries below the head
            // were claimed.
            let t = cl.tail.load(Ordering::Acquire);
            if t == cl.head.load(Ordering::Acquire) {
                return gave;
            }
            let e = cl.entry(t);
            // Acquire: a published tag carries its time.
            let tag = e.tag.load(Ordering::Acquire);
            if epoch32(tag) == t.wrapping_add(cl.m) as u32 {
                // Bucket t was freed (and its entry maybe reused): help move the tail.
                // AcqRel: publishes the freeing to the next reader of `tail`.
                let _ = cl
                    .tail
                    .compare_exchange(t, t + 1, Ordering::AcqRel, Ordering::Acquire);
                continue;
            }
            let Some((permits, time)) = cl.published(t) else {
                // Claimed but not yet published (or `t` is stale): nothing more now.
                // Acquire: a moved tail means our look was stale.
                if cl.tail.load(Ordering::Acquire) != t {
                    continue;
                }
                return gave;
            };
            let expired = time.checked_add(cl.period).is_some_and(|end| end <= t0);
            if !expired {
                return gave;
            }
            // AcqRel: exactly one caller frees bucket t (a CAS on its published tag) and
            // gives its permits back.
            if e.tag
                .compare_exchange(
                    pack(t, permits),
                    pack(t.wrapping_add(cl.m), FREE),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
            {
                self.give_back(permits);
                gave = true;
            }
            // AcqRel: as above.
            let _ = cl
                .tail
                .compare_exchange(t, t + 1, Ordering::AcqRel, Ordering::Acquire);
        }
    }

    /// The wait for a denied request: the first instant at which enough permits have left,
    /// merging the time buckets (bucket y leaves at T(y + 1)) with the closed buckets (in
    /// order; bucket j leaves one period after its newest grant).
    fn denial_closed(&self, cl: &Closed, s: u64, c: u64, n: u64, now: u64) -> Denied {
        let need = c + n - self.limit;
        let leaves = |y: u64| (u128::from(y) + 1) * u128::from(self.width) + u128::from(self.lag);
        let bucket = |y: u64| {
            // Acquire: a snapshot of the bucket.
            let word = self.slot(y).load(Ordering::Acquire);
            let k = if count(word) != RETIRED && epoch32(word) == y as u32 {
                count(word)
            } else {
                0
            };
            (k, leaves(y))
        };
        let y_end = s.saturating_add(self.ring);
        // Acquire (both): the closed buckets between tail and head.
        let head = cl.head.load(Ordering::Acquire);
        let mut j = cl.tail.load(Ordering::Acquire);
        let mut gone = 0u128;
        let mut chunk = |j: u64| {
            if j >= head {
                return None;
            }
            let (k, time) = cl.published(j)?;
            gone = gone.max(u128::from(time) + u128::from(cl.period));
            Some((k, gone))
        };
        let mut y = s;
        let mut nb = (y < y_end).then(|| bucket(y));
        let mut nc = chunk(j);
        let mut freed = 0;
        let at = loop {
            let (k, t) = match (nb, nc) {
                (Some(b), Some(c)) if b.1 <= c.1 => {
                    y += 1;
                    nb = (y < y_end).then(|| bucket(y));
                    b
                }
                (Some(b), None) => {
                    y += 1;
                    nb = (y < y_end).then(|| bucket(y));
                    b
                }
                (_, Some(c)) => {
                    j += 1;
                    nc = chunk(j);
                    c
                }
                (None, None) => {
                    // Some permits are still being recorded or published: they leave by the
                    // last time bucket's expiry, or a period after the newest time seen.
                    // Acquire: the high-water mark.
                    let latest = cl.latest.load(Ordering::Acquire);
                    break leaves(y_end.saturating_sub(1))
                        .max(u128::from(latest) + u128::from(cl.period));
                }
            };
            freed += k;
            if freed >= need {
                break t;
            }
        };
        match u64::try_from(at) {
            Ok(t) => Denied::after_nanos(t.saturating_sub(now).max(1)),
            Err(_) => Denied::never(),
        }
    }
}
