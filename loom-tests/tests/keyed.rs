//! Keyed's eviction protocol under loom: a key evicted while another thread admits on it must
//! not lose that admission. The map is abstracted (a mutex-guarded slot holding the key's
//! current state, as the real map's entry pointer would); the state-word protocol is the real
//! code (`acquire` and `retire` of `Keyed`'s GCRA state). The planted evictor, which removes
//! an idle-looking entry without the tombstone CAS, must fail the same model.
#![cfg(hotlimit_loom)]

mod common;

use std::time::Duration;

use hotlimit::__planted_keyed::{Admit, GcraKey, LogKey, PairKey, WindowKey};
use hotlimit::Rate;
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;

/// One key's state as the models drive it: the real protocol of one `KeyedState`.
trait KeyState: Send + Sync + 'static {
    /// A fresh state: limit 1 per 10 ns, so on a frozen clock the key grants once, ever.
    fn fresh() -> Self;
    fn acquire_at(&self, now: u64) -> Admit;
    fn evict_at(&self, now: u64) -> bool;
    fn evict_racy_at(&self, now: u64) -> bool;
    /// A new key's pending state, limit 2 per 10 ns (two grants on a frozen clock).
    fn pending2() -> Self;
    /// A fresh state with the same limit, as the old (planted) creation inserted it.
    fn fresh2() -> Self;
    fn commit(&self, floor: u64);
    fn is_pending(&self) -> bool;
}

macro_rules! key_state {
    ($t:ty) => {
        impl KeyState for $t {
            fn fresh() -> Self {
                <$t>::new(Rate::new(1, Duration::from_nanos(10)).unwrap(), 0)
            }
            fn acquire_at(&self, now: u64) -> Admit {
                <$t>::acquire_at(self, now)
            }
            fn evict_at(&self, now: u64) -> bool {
                <$t>::evict_at(self, now)
            }
            fn evict_racy_at(&self, now: u64) -> bool {
                <$t>::evict_racy_at(self, now)
            }
            fn pending2() -> Self {
                <$t>::pending(Rate::new(2, Duration::from_nanos(10)).unwrap())
            }
            fn fresh2() -> Self {
                <$t>::new(Rate::new(2, Duration::from_nanos(10)).unwrap(), 0)
            }
            fn commit(&self, floor: u64) {
                <$t>::commit(self, floor)
            }
            fn is_pending(&self) -> bool {
                <$t>::is_pending(self)
            }
        }
    };
}
key_state!(GcraKey);
key_state!(LogKey);
key_state!(WindowKey);
key_state!(PairKey);

/// The abstract map for one key: the entry currently stored, if any.
type Entry<S> = Arc<Mutex<Option<Arc<S>>>>;

fn fresh<S: KeyState>() -> Arc<S> {
    Arc::new(S::fresh())
}

/// `Keyed::try_acquire_n_at` over the abstract map: look up (or create) the key's state,
/// admit on it, and on a tombstone remove the dead entry and look again.
fn admit<S: KeyState>(map: &Entry<S>, now: u64) -> bool {
    loop {
        let current = {
            let mut m = map.lock().unwrap();
            m.get_or_insert_with(fresh).clone()
        };
        match current.acquire_at(now) {
            Admit::Granted => return true,
            Admit::Denied(_) => return false,
            Admit::Evicted => {
                let mut m = map.lock().unwrap();
                if m.as_ref().is_some_and(|e| Arc::ptr_eq(e, &current)) {
                    *m = None;
                }
            }
            Admit::Moving => thread::yield_now(),
        }
    }
}

/// The sweep over the abstract map: retire the entry's state if idle, then remove it if the
/// map still holds that state.
fn evict<S: KeyState>(map: &Entry<S>, now: u64, racy: bool) {
    let Some(current) = map.lock().unwrap().clone() else {
        return;
    };
    let retired = if racy {
        current.evict_racy_at(now)
    } else {
        current.evict_at(now)
    };
    if retired {
        let mut m = map.lock().unwrap();
        if m.as_ref().is_some_and(|e| Arc::ptr_eq(e, &current)) {
            *m = None;
        }
    }
}

/// Two admitters and an evictor on one key at a frozen clock: the key's burst is 1, so
/// exactly one admission is granted, whatever the eviction does.
fn two_admitters_and_an_evictor<S: KeyState>(racy: bool) {
    loom::model(move || {
        let map: Entry<S> = Arc::new(Mutex::new(Some(fresh())));
        let granted = Arc::new(AtomicU64::new(0));
        let mut handles = Vec::new();
        for _ in 0..2 {
            let (map, granted) = (map.clone(), granted.clone());
            handles.push(thread::spawn(move || {
                if admit(&map, 0) {
                    // Relaxed: read after join.
                    granted.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        evict(&map, 0, racy);
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(
            granted.load(Ordering::Relaxed),
            1,
            "over-admission across an eviction"
        );
    });
}

common::real_and_planted! {
    "over-admission across an eviction";
    eviction_never_loses_an_admission, planted_eviction_without_tombstone_over_admits
        => two_admitters_and_an_evictor::<GcraKey>;
}

/// One admitter racing an evictor, then a second admission after both finished: with a
/// limit of 1 on a frozen clock exactly one of the two admissions is granted. Smaller than the
/// three-thread model (the log's evictor waits for the admitters inside its gate, a yielding
/// loop that multiplies loom's branches), and it still catches the lost admission: the racing
/// grant lands on a state the evictor then removes, and the late admission starts afresh.
fn admitter_and_evictor_then_admitter<S: KeyState>(racy: bool) {
    let mut model = loom::model::Builder::new();
    model.max_branches = 10_000;
    model.check(move || {
        let map: Entry<S> = Arc::new(Mutex::new(Some(fresh())));
        let m2 = map.clone();
        let t = thread::spawn(move || admit(&m2, 0));
        evict(&map, 0, racy);
        let first = t.join().unwrap();
        let second = admit(&map, 0);
        assert_eq!(
            u32::from(first) + u32::from(second),
            1,
            "over-admission across an eviction"
        );
    });
}

common::real_and_planted! {
    "over-admission across an eviction";
    /// The per-key sliding log behind its gate.
    log_eviction_never_loses_an_admission, planted_log_eviction_without_closing_the_gate_over_admits
        => admitter_and_evictor_then_admitter::<LogKey>;
    /// The two-thread model on GCRA too (its planted evictor fails it as well).
    gcra_admitter_and_evictor_then_admitter, planted_gcra_two_thread_model_fails
        => admitter_and_evictor_then_admitter::<GcraKey>;
}

/// The per-key GcraPair (one 16-byte word, its markers in the first half): the same models,
/// and its planted evictor (no marker CAS) fails them.
#[test]
fn pair_eviction_never_loses_an_admission() {
    two_admitters_and_an_evictor::<PairKey>(false);
    admitter_and_evictor_then_admitter::<PairKey>(false);
}

#[test]
#[should_panic(expected = "over-admission across an eviction")]
fn planted_pair_eviction_without_marker_over_admits() {
    two_admitters_and_an_evictor::<PairKey>(true);
}

/// An admission at a later time after the key went idle, racing an eviction: the grant either
/// lands on the old state (which is then busy and not evicted) or on a fresh one; the key
/// ends with exactly the one grant's debt (the next permit at 20 ns, not before).
#[test]
fn admission_racing_eviction_keeps_its_debt() {
    loom::model(|| {
        let map: Entry<GcraKey> = Arc::new(Mutex::new(Some(fresh())));
        let m2 = map.clone();
        let t = thread::spawn(move || admit(&m2, 10));
        evict(&map, 10, false);
        assert!(t.join().unwrap());
        assert!(!admit(&map, 19), "the grant at 10 ns was lost");
        assert!(admit(&map, 20));
    });
}

common::real_and_planted! {
    "over-admission across an eviction";
    /// The per-key strict sliding window behind its gate: a grant decided on the window's word but
    /// not yet recorded in its bucket, or not yet made, must keep the evictor off the state.
    window_eviction_never_loses_an_admission, planted_window_eviction_without_closing_the_gate_over_admits
        => admitter_and_evictor_then_admitter::<WindowKey>;
}

/// A rate change racing an admission on a per-key window: the mover freezes the state behind
/// its gate and builds the successor from what it counted, then a second admission follows.
/// Limit 1 at a frozen clock: exactly one of the two admissions is granted, so a grant made
/// while the state was being moved is carried into the successor, never lost.
fn window_move_racing_an_admission(racy: bool) {
    let mut model = loom::model::Builder::new();
    model.max_branches = 10_000;
    model.check(move || {
        let map: Entry<WindowKey> = Arc::new(Mutex::new(Some(fresh())));
        let m2 = map.clone();
        let t = thread::spawn(move || admit(&m2, 0));
        let current = map.lock().unwrap().clone().unwrap();
        let next = if racy {
            current.move_racy_at(0)
        } else {
            current.move_at(0)
        };
        if let Some(next) = next {
            // The mover alone replaces a frozen entry (one map store in `Keyed`).
            *map.lock().unwrap() = Some(Arc::new(next));
        }
        let first = t.join().unwrap();
        let second = admit(&map, 0);
        assert_eq!(
            u32::from(first) + u32::from(second),
            1,
            "over-admission across a rate change"
        );
    });
}

common::real_and_planted! {
    "over-admission across a rate change";
    window_rate_change_never_loses_an_admission, planted_window_rate_change_without_the_gate_over_admits
        => window_move_racing_an_admission;
}

/// A key whose live state a per-key rate change (`Keyed::set_rate` / `set_default_rate`)
/// moves: the real move and a planted one, and the two rates its model changes between.
trait MovingKey: KeyState + Sized {
    /// The rate before and after the change, chosen so that both orders of the change and
    /// the racing admission give exactly one grant in all (see `change_racing_an_admission`).
    fn rates() -> (Rate, Rate);
    fn with_rate(rate: Rate) -> Self;
    fn move_to_at(&self, rate: Rate, now: u64) -> Option<Self>;
    fn move_racy_to_at(&self, rate: Rate, now: u64) -> Option<Self>;
}

macro_rules! moving_key {
    ($t:ty, $old:expr, $new:expr) => {
        impl MovingKey for $t {
            fn rates() -> (Rate, Rate) {
                (
                    Rate::new($old, Duration::from_nanos(10)).unwrap(),
                    Rate::new($new, Duration::from_nanos(10)).unwrap(),
                )
            }
            fn with_rate(rate: Rate) -> Self {
                <$t>::new(rate, 0)
            }
            fn move_to_at(&self, rate: Rate, now: u64) -> Option<Self> {
                <$t>::move_to_at(self, rate, now)
            }
            fn move_racy_to_at(&self, rate: Rate, now: u64) -> Option<Self> {
                <$t>::move_racy_to_at(self, rate, now)
            }
        }
    };
}
// GCRA: 1 → 2 per 10 ns. Granted before the change: the carried state holds no free permit
// (1 in all); after it: the one free permit stays one (1 in all).
moving_key!(GcraKey, 1, 2);
// Log and window: 2 → 1 per 10 ns. Granted before the change: its stamp fills the new limit
// (1 in all); after it: one of the two requests (1 in all).
moving_key!(LogKey, 2, 1);
moving_key!(WindowKey, 2, 1);

/// A per-key rate change racing an admission, at a frozen clock: a worker admits once while
/// the main thread moves the key's state to the new rate (`Keyed`'s move: freeze, carry,
/// replace the entry) and then admits once. With the rates of [`MovingKey::rates`] the
/// admission decided on the old rate (before the move) and on the new one (after it) both
/// leave exactly one grant in all; a grant lost in the move gives two.
///
/// Why this model has no torn-read twin: a per-key state reads its parameters from its
/// entry's immutable configuration (`Arc`'d in `Keyed`, one value in the entry here), which
/// no change writes: a change builds a new configuration and a new state, so a request reads
/// one parameter set with the state it decides on, and cannot mix. And no change reinstalls a
/// value a request loaded (the ABA case): the move leaves the old state frozen for good
/// (`MOVING`, or its gate closed) and the request that loaded it retries on the successor.
/// What can go wrong is the move itself, so the planted twin (`racy`) is a move that copies
/// the state without freezing it: a grant made on the old state after the copy is carried
/// into neither state, and loom must catch it.
fn change_racing_an_admission<S: MovingKey>(racy: bool) {
    let mut model = loom::model::Builder::new();
    model.max_branches = 10_000;
    model.check(move || {
        let (old, new) = S::rates();
        let map: Entry<S> = Arc::new(Mutex::new(Some(Arc::new(S::with_rate(old)))));
        let m2 = map.clone();
        let t = thread::spawn(move || admit(&m2, 0));
        let current = map.lock().unwrap().clone().unwrap();
        let next = if racy {
            current.move_racy_to_at(new, 0)
        } else {
            current.move_to_at(new, 0)
        };
        if let Some(next) = next {
            // The mover alone replaces a frozen entry (one map store in `Keyed`).
            *map.lock().unwrap() = Some(Arc::new(next));
        }
        let first = t.join().unwrap();
        let second = admit(&map, 0);
        assert_eq!(
            u32::from(first) + u32::from(second),
            1,
            "over-admission across a rate change to another rate"
        );
    });
}

common::real_and_planted! {
    "over-admission across a rate change to another rate";
    gcra_rate_change_to_another_rate_is_one_set, planted_gcra_move_without_the_freeze_over_admits
        => change_racing_an_admission::<GcraKey>;
}

common::real_and_planted! {
    "over-admission across a rate change to another rate";
    log_rate_change_to_another_rate_is_one_set, planted_log_move_without_the_gate_over_admits
        => change_racing_an_admission::<LogKey>;
}

common::real_and_planted! {
    "over-admission across a rate change to another rate";
    window_rate_change_to_another_rate_is_one_set, planted_window_move_without_the_gate_over_admits
        => change_racing_an_admission::<WindowKey>;
}

/// The abstract map for one key plus `Keyed`'s place counter (`len`), capacity 1.
struct Table<S> {
    entry: Mutex<Option<Arc<S>>>,
    len: AtomicU64,
}

/// `Keyed::reserve_place` with capacity 1: with a single key, a sweep finds nothing to evict
/// (the only entry is the key being created), so a full count is a refusal.
fn reserve_place(len: &AtomicU64) -> bool {
    // Relaxed (all): a counter, as in `Keyed`.
    let mut n = len.load(Ordering::Relaxed);
    loop {
        if n >= 1 {
            return false;
        }
        match len.compare_exchange(n, n + 1, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(current) => n = current,
        }
    }
}

/// `Keyed::try_acquire_n_at` for a key that may not exist yet. The real creation inserts the
/// state pending, and only the thread whose insert won reserves a place and commits it;
/// `planted` is the old creation, which reserved a place before inserting, so a racing
/// creator of the same key saw the count full and was refused although the key fits.
fn admit_new<S: KeyState>(table: &Table<S>, now: u64, planted: bool) -> bool {
    loop {
        let current = table.entry.lock().unwrap().clone();
        if let Some(state) = current {
            match state.acquire_at(now) {
                Admit::Granted => return true,
                Admit::Denied(_) => return false,
                Admit::Evicted => unreachable!("nothing evicts in this model"),
                Admit::Moving => thread::yield_now(),
            }
            continue;
        }
        if planted {
            if !reserve_place(&table.len) {
                return false;
            }
            let mut m = table.entry.lock().unwrap();
            if m.is_none() {
                *m = Some(Arc::new(S::fresh2()));
            } else {
                // Another creator won: give the place back. Relaxed: a counter.
                table.len.fetch_sub(1, Ordering::Relaxed);
            }
            continue;
        }
        let ours = Arc::new(S::pending2());
        {
            let mut m = table.entry.lock().unwrap();
            if m.is_some() {
                continue; // try_insert lost: look again
            }
            *m = Some(ours.clone());
        }
        if !reserve_place(&table.len) {
            let mut m = table.entry.lock().unwrap();
            if m.as_ref().is_some_and(|e| e.is_pending()) {
                *m = None;
            }
            return false;
        }
        ours.commit(0);
    }
}

/// Two threads create the same new key at once in a table of capacity 1: the key fits, and
/// its limit (2 on a frozen clock) covers both requests, so both are granted and one place
/// is counted.
fn two_creators_of_one_key<S: KeyState>(planted: bool) {
    loom::model(move || {
        let table = Arc::new(Table::<S> {
            entry: Mutex::new(None),
            len: AtomicU64::new(0),
        });
        let other = {
            let table = table.clone();
            thread::spawn(move || admit_new(&table, 0, planted))
        };
        let mine = admit_new(&table, 0, planted);
        let theirs = other.join().unwrap();
        assert!(mine && theirs, "a new key that fits was refused");
        // Relaxed: after join.
        assert_eq!(table.len.load(Ordering::Relaxed), 1);
    });
}

#[test]
fn racing_creators_of_one_key_are_both_admitted() {
    two_creators_of_one_key::<GcraKey>(false);
    two_creators_of_one_key::<LogKey>(false);
    two_creators_of_one_key::<WindowKey>(false);
    two_creators_of_one_key::<PairKey>(false);
}

#[test]
#[should_panic(expected = "a new key that fits was refused")]
fn planted_reserve_before_insert_refuses_a_racing_creator() {
    two_creators_of_one_key::<GcraKey>(true);
}
