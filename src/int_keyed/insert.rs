//! The insert protocol of [`IntKeyed`]: a key not found committed in its buckets is claimed
//! (a FREE slot, or an idle key's), resolved (one committed slot per key, whatever the race),
//! and evicted keys give their places back. The proof is in the
//! [`guide`](crate::guide::int_keyed#intkeyed-integer-keys-inline).

use super::*;

impl<K, C> IntKeyed<K, C> {
    /// The insert path, with the key not found committed in its buckets: claim, resolve,
    /// then grant on the one committed slot. Loops until a decision.
    #[cold]
    #[inline(never)]
    pub(super) fn acquire_slow(
        &self,
        key: u64,
        h: u64,
        permits: u32,
        now: u64,
    ) -> Result<(), Denied> {
        if u64::from(permits) > self.current_params().numbers().3 {
            // More than a new key's burst: refused before it takes a place.
            return Err(Denied::never());
        }
        // A wait is measured from the base; a `now` before it adds the difference.
        let behind = self.base.saturating_sub(now);
        let now = self.relative(now);
        let c = self.candidates(&self.place(h));
        let mut contention = Contention::new();
        let mut swept = false;
        loop {
            let snap = self.scan(&c);
            if let Some(k) = (0..c.n).find(|&k| holds(snap[k], key)) {
                match self.grant(self.slot(c.idx[k]), snap[k], key, permits, now) {
                    Some(r) => return r.map_err(|d| later(d, behind)),
                    None => continue,
                }
            }
            let settled = if (0..c.n).any(|k| is_pending_of(snap[k], key)) {
                // Another thread is inserting this key: help it rather than claim a second
                // slot.
                self.resolve(key, &c, None, now)
            } else {
                match self.claim(key, &c, &snap, now) {
                    Claim::Mine(i, v) => self.resolve(key, &c, Some((i, v)), now),
                    // A lost claim: the loop scans afresh.
                    Claim::Lost => {
                        contention.lost_then_reload(now);
                        None
                    }
                    Claim::Full { wait, free_seen } => {
                        if free_seen && !swept {
                            // The table holds `capacity` keys: evict idle keys elsewhere, then
                            // try once more.
                            swept = true;
                            let wait2 = self.sweep(key, now);
                            if wait2 == 0 {
                                continue;
                            }
                            return Err(Denied::after_nanos(
                                wait.min(wait2).saturating_add(behind),
                            )
                            .table_full());
                        }
                        return Err(Denied::after_nanos(wait.saturating_add(behind)).table_full());
                    }
                }
            };
            // The key's committed slot as the resolve saw or wrote it: grant there as a hit
            // would (a CAS from that exact value, which fails if the slot changed since),
            // without scanning the candidates again.
            if let Some((i, v)) = settled {
                if let Some(r) = self.grant(self.slot(i), v, key, permits, now) {
                    return r.map_err(|d| later(d, behind));
                }
            }
        }
    }

    /// Claim a candidate slot as `{key, PENDING, tag}`: a FREE one if a place under the
    /// capacity can be reserved, else an idle key's.
    fn claim(&self, key: u64, c: &Candidates, snap: &[u128; CANDIDATES], now: u64) -> Claim {
        // b1's ways first (a hit then costs one line), then b2's, then the secondary's, each
        // bucket from the home way on.
        let (mut free, mut n_free, mut wait) = ([0; CANDIDATES], 0, u64::MAX);
        // The idle key to replace: one past its grace (the first seen), else the one-shot key
        // idle most recently (`Pick`).
        let mut pick = Pick::None;
        let mut grace = None;
        for k in c.claim_order[..c.n].iter().map(|&k| usize::from(k)) {
            let v = snap[k];
            let meta = meta_of(v);
            if meta & FLAGS == 0 {
                free[n_free] = k;
                n_free += 1;
            } else if meta & COMMITTED != 0 {
                let from = self.evictable_from(meta, &mut grace);
                if from <= now {
                    pick.offer(k, meta, self.past_grace(meta, now, &mut grace));
                } else {
                    wait = wait.min(from - now);
                }
            } else {
                // Someone else's insert in progress: it resolves in nanoseconds.
                wait = wait.min(1);
            }
        }
        // The tag is taken only for a claim that will be tried, so that refusing a new key when
        // there is no room writes nothing shared (under a flood, most calls are refusals).
        // Relaxed: the counter only needs each claim to get a distinct value (an RMW reads the
        // latest value in the counter's modification order).
        let pending = || {
            pack(
                key,
                PENDING | (self.tags.fetch_add(1, Ordering::Relaxed) & VALUE),
            )
        };
        if n_free > 0 && self.reserve() {
            let pending = pending();
            for &k in &free[..n_free] {
                // SeqCst: the claim half of the Dekker pattern (see `scan`). On a lost race,
                // the next FREE slot seen.
                if self
                    .slot(c.idx[k])
                    .compare_exchange(0, pending, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
                {
                    return Claim::Mine(c.idx[k], pending);
                }
            }
            self.release();
            return Claim::Lost;
        }
        if let Some(k) = pick.slot() {
            // Replace the idle key: the floor first, so that whoever re-creates that key sees
            // it. No change to `len`: one key out, one in.
            self.raise_floor(now);
            let pending = pending();
            #[cfg(hotlimit_loom)]
            if self.plant() == Plant::ReplaceByStore {
                // Planted: the idle key replaced by a store (a CAS from whatever is there now),
                // over whatever came since the scan.
                let slot = self.slot(c.idx[k]);
                while slot
                    .compare_exchange(
                        slot.load(Ordering::SeqCst),
                        pending,
                        Ordering::SeqCst,
                        Ordering::SeqCst,
                    )
                    .is_err()
                {}
                return Claim::Mine(c.idx[k], pending);
            }
            // SeqCst: as the claim above; also after the floor's raise in the total order.
            return match self.slot(c.idx[k]).compare_exchange(
                snap[k],
                pending,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => Claim::Mine(c.idx[k], pending),
                Err(_) => Claim::Lost,
            };
        }
        Claim::Full {
            wait: wait.clamp(1, u64::MAX - 1),
            free_seen: n_free > 0,
        }
    }

    /// Settle `key`'s inserts among its candidates until a COMMITTED slot exists or no PENDING
    /// one does. `mine`: our own claim (slot, exact value), which ends committed or killed.
    /// Returns the committed slot and the value it was seen or written with, or `None` when
    /// no pending claim is left (the caller looks again).
    fn resolve(
        &self,
        key: u64,
        c: &Candidates,
        mine: Option<(usize, u128)>,
        now: u64,
    ) -> Option<(usize, u128)> {
        let mut contention = Contention::new();
        let mut prev: Option<[u128; CANDIDATES]> = None;
        loop {
            let snap = self.scan(c);
            if let Some(k) = (0..c.n).find(|&k| holds(snap[k], key)) {
                if let Some((i, v)) = mine {
                    if i != c.idx[k] {
                        self.kill(i, v);
                    }
                }
                return Some((c.idx[k], snap[k]));
            }
            let mut pend = (0..c.n).filter(|&k| is_pending_of(snap[k], key));
            let Some(low) = pend.next() else {
                // No pending left (ours was killed): the caller looks again.
                return None;
            };
            // The committer's scan must come after the claim it commits: true of our own
            // claim; for another's, the previous scan saw this very claim (tags are unique).
            let confirmed =
                mine == Some((c.idx[low], snap[low])) || prev.is_some_and(|p| p[low] == snap[low]);
            if !confirmed {
                prev = Some(snap);
                continue;
            }
            let mut killed_all = true;
            #[cfg(hotlimit_loom)]
            let kill_others = self.plant() != Plant::NoKill;
            #[cfg(not(hotlimit_loom))]
            let kill_others = true;
            if kill_others {
                for k in pend {
                    killed_all &= self.kill(c.idx[k], snap[k]);
                }
            }
            if killed_all {
                // SeqCst: read after the scan, so it includes every eviction of an earlier
                // state of this key (guide); the new state starts here.
                let tat0 = self.floor.load(Ordering::SeqCst).min(TAT);
                // On the current parameter set, held until the commit is in (a rate change
                // waits for it: see `change.rs`).
                let (p, flags) = self.enter_commit();
                let state = pack(key, flags | tat0);
                // SeqCst: the commit; fails if the claim was killed meanwhile.
                let committed = self
                    .slot(c.idx[low])
                    .compare_exchange(snap[low], state, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok();
                self.leave_commit(p);
                if committed {
                    return Some((c.idx[low], state));
                }
            }
            prev = Some(snap);
            // A commit or a kill lost its CAS: the loop scans afresh.
            contention.lost_then_reload(now);
        }
    }

    /// CAS a pending claim (exact value) to FREE; the killer returns its place.
    fn kill(&self, i: usize, v: u128) -> bool {
        // SeqCst: see `acquire`.
        let ok = self
            .slot(i)
            .compare_exchange(v, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if ok {
            self.release();
        }
        ok
    }

    /// The first `now` at which the committed slot `meta` may give its place to a new key:
    ///
    /// - a *one-shot* key (one grant found it idle since it was created: a flood's key, or a
    ///   client before its second request) from its TAT on, the instant it is idle, as
    ///   [`Keyed`](crate::Keyed) evicts one-shot keys (issue 43: both tables agree at the
    ///   boundary);
    /// - a key no grant has found idle yet (its inserter's grant is under way) 1 ns after its
    ///   TAT, so that its re-created state (grant count 0, at the floor ≥ the eviction's `now`)
    ///   is above it: no slot value repeats (see `change.rs`);
    /// - a *returning* key (it came back after going idle: a client) 1 ns after it has been
    ///   idle for its tolerance τ, the time its whole burst takes to come back, as `Keyed`'s
    ///   horizon.
    ///
    /// An idle key carries no information, so evicting any of them keeps every guarantee; the
    /// grace only decides who competes for a place. Without it, a client under its limit was
    /// idle between two requests and lost its place to the next new key in its buckets: a flood
    /// of new addresses (one request each) refused a steady client 29 of 41 times (issue 42).
    /// With it, a client that comes back within τ of going idle keeps its place whatever the
    /// flood, whose keys churn through the places they take.
    ///
    /// `grace` holds τ once read: the current parameter set's, read once per scan (an old
    /// set's slot may wait a little more or less; evicting any idle key is safe).
    #[inline]
    fn evictable_from(&self, meta: u64, grace: &mut Option<u64>) -> u64 {
        let tat = meta & TAT;
        match grants(meta) {
            1 => tat,
            0 => tat + 1,
            _ => {
                let tolerance = *grace.get_or_insert_with(|| self.current_params().numbers().1);
                tat.saturating_add(tolerance).saturating_add(1)
            }
        }
    }

    /// Whether the committed slot `meta` has been idle for longer than its tolerance τ at `now`
    /// (whatever it was, it did not come back): such keys go before one-shot keys still within
    /// it.
    #[inline]
    fn past_grace(&self, meta: u64, now: u64, grace: &mut Option<u64>) -> bool {
        let tolerance = *grace.get_or_insert_with(|| self.current_params().numbers().1);
        (meta & TAT).saturating_add(tolerance) < now
    }

    /// For a preview ([`Decide::peek`](crate::Decide::peek)) of a key that holds no slot:
    /// `None` when a request on it would find a place now (a FREE candidate under the
    /// capacity, an evictable one, or one freed by the sweep an insert would run: a sweep
    /// evicts only idle keys, which changes no key's limit), else the wait a refusal for want
    /// of room reports (from the base). `now` is relative to the base.
    pub(super) fn no_room_for(&self, key: u64, now: u64) -> Option<u64> {
        let c = self.candidates(&self.place(self.hash(key)));
        let snap = self.scan(&c);
        let (mut wait, mut free_seen, mut grace) = (u64::MAX - 1, false, None);
        for v in &snap[..c.n] {
            let meta = meta_of(*v);
            if meta & FLAGS == 0 {
                free_seen = true;
            } else if meta & COMMITTED != 0 {
                let from = self.evictable_from(meta, &mut grace);
                if from <= now {
                    return None;
                }
                wait = wait.min(from - now);
            } else {
                // An insert in progress: it resolves in nanoseconds.
                return None;
            }
        }
        if free_seen {
            // Relaxed: a snapshot, as in `reserve`.
            if self.len.load(Ordering::Relaxed) < self.capacity {
                return None;
            }
            match self.sweep(key, now) {
                0 => return None,
                w => wait = wait.min(w),
            }
        }
        Some(wait)
    }

    /// Evict the keys of `SWEEP` buckets (from a place that depends on the key and the time)
    /// idle past their grace, or if there is none the one-shot key idle most recently; 0 if one
    /// was evicted, else the wait until the earliest slot seen may go.
    #[cold]
    fn sweep(&self, key: u64, now: u64) -> u64 {
        let buckets = self.table.len();
        // The first bucket: the mixed value mapped onto the table by a multiply and a shift
        // (the table's length need not be a power of two), then the next ones, wrapping.
        let mixed = fold_mul(key ^ now, self.seed[1]);
        let mut b = ((u128::from(mixed) * buckets as u128) >> 64) as usize;
        let mut wait = u64::MAX - 1;
        let mut evicted = false;
        let mut grace = None;
        let mut one_shot: Option<(usize, u128)> = None;
        for _ in 0..SWEEP.min(buckets) {
            if b == buckets {
                b = 0;
            }
            for j in 0..WAYS {
                let i = b * WAYS + j;
                // SeqCst: see `acquire`.
                let v = self.slot(i).load(Ordering::SeqCst);
                let meta = meta_of(v);
                if meta & COMMITTED == 0 {
                    continue;
                }
                let from = self.evictable_from(meta, &mut grace);
                if from > now {
                    wait = wait.min(from - now);
                    continue;
                }
                if !self.past_grace(meta, now, &mut grace) {
                    // One-shot and idle: evicted only if no key here is past its grace.
                    if one_shot.is_none_or(|(_, w)| meta_of(w) & TAT < meta & TAT) {
                        one_shot = Some((i, v));
                    }
                    continue;
                }
                if self.evict(i, v, now) {
                    evicted = true;
                } else {
                    // Granted meanwhile, or taken: another look may find it idle again.
                    wait = wait.min(1);
                }
            }
            b += 1;
        }
        if !evicted {
            if let Some((i, v)) = one_shot {
                if self.evict(i, v, now) {
                    evicted = true;
                } else {
                    wait = wait.min(1);
                }
            }
        }
        if evicted {
            0
        } else {
            wait
        }
    }

    /// Evicts the committed slot `i` last seen as `v` at `now` (the floor first); returns
    /// whether it was evicted (the slot still held `v`).
    fn evict(&self, i: usize, v: u128, now: u64) -> bool {
        self.raise_floor(now);
        // SeqCst: after the floor's raise; fails if the key was granted meanwhile.
        let ok = self
            .slot(i)
            .compare_exchange(v, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if ok {
            self.release();
        }
        ok
    }

    fn raise_floor(&self, now: u64) {
        // SeqCst (both): the raise must precede the eviction's CAS in the total order, so that
        // whoever commits the evicted key's next state (reading the floor after a scan that
        // saw the eviction) starts at or above it. Read first: usually already high enough.
        if self.floor.load(Ordering::SeqCst) < now {
            self.floor.fetch_max(now, Ordering::SeqCst);
        }
    }

    /// Reserve a place under the capacity.
    fn reserve(&self) -> bool {
        // Relaxed: `len` is a self-contained count; the CAS keeps it ≤ capacity.
        let mut len = self.len.load(Ordering::Relaxed);
        loop {
            if len >= self.capacity {
                return false;
            }
            // Relaxed: as above.
            match self
                .len
                .compare_exchange_weak(len, len + 1, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(l) => len = l,
            }
        }
    }

    fn release(&self) {
        // Relaxed: as `reserve`.
        self.len.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The idle candidate a claim replaces: the first one past its grace, else the one-shot one
/// idle most recently (the greatest TAT; the first seen on a tie). A client between its first
/// two requests went idle before the flood's keys that came after it: they go first.
#[derive(Clone, Copy)]
enum Pick {
    None,
    /// A one-shot candidate and its TAT.
    OneShot(usize, u64),
    Gone(usize),
}

impl Pick {
    #[inline]
    fn offer(&mut self, k: usize, meta: u64, past_grace: bool) {
        *self = match *self {
            Pick::Gone(_) => return,
            _ if past_grace => Pick::Gone(k),
            Pick::OneShot(_, tat) if tat >= meta & TAT => return,
            _ => Pick::OneShot(k, meta & TAT),
        };
    }

    #[inline]
    fn slot(self) -> Option<usize> {
        match self {
            Pick::None => None,
            Pick::OneShot(k, _) | Pick::Gone(k) => Some(k),
        }
    }
}

/// A wait measured from the base, for a `now` that was `behind` ns before it.
#[inline]
pub(super) fn later(d: Denied, behind: u64) -> Denied {
    match d.retry_after_nanos() {
        Some(w) if behind > 0 => Denied::after_nanos(w.saturating_add(behind)),
        _ => d,
    }
}
