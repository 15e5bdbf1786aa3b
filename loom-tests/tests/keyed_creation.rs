//! Keyed's creation protocol racing an eviction (issue 14), over a lock-free one-key map.
//!
//! The map is modelled as papaya behaves for one key: a lookup is an Acquire load of the key's
//! slot, an insert a CAS from empty (Release, as papaya's), a removal a CAS back to empty
//! (Release). No mutex anywhere, so the insert can interleave with the removal, the floor's
//! raise and the retire. What runs is the real code: `create` (insert, reserve, fence, floor
//! read, commit), `raise_floor`, the state's `acquire` / `retire`, and `remove_retired` (the
//! fence, then the removal). The planted twin is the order before the fix (floor read before
//! the insert), which must fail.
#![cfg(hotlimit_loom)]

mod common;

use std::time::Duration;

use hotlimit::__planted_keyed::{
    create, create_floor_first, raise_floor, remove_retired, Admit, GcraKey, LogKey, ModelKey,
    PairKey, WindowKey,
};
use hotlimit::Rate;
use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// A model key: a new key's pending state, limit 1 per 10 ns (burst 1), and the real
/// admission and eviction on it.
trait Key: ModelKey + Send + Sync + 'static {
    /// When B's grant at 0 has left the state idle.
    const IDLE_AT: u64;
    fn pending1() -> Self;
    fn acquire_at(&self, now: u64) -> Admit;
    fn evict_at(&self, now: u64) -> bool;
}

macro_rules! key {
    ($t:ty, $idle:expr) => {
        impl Key for $t {
            const IDLE_AT: u64 = $idle;
            fn pending1() -> Self {
                <$t>::pending(Rate::new(1, Duration::from_nanos(10)).unwrap())
            }
            fn acquire_at(&self, now: u64) -> Admit {
                <$t>::acquire_at(self, now)
            }
            fn evict_at(&self, now: u64) -> bool {
                <$t>::evict_at(self, now)
            }
        }
    };
}
key!(GcraKey, 10);
key!(LogKey, 10);
// One bucket [0, 10 ns), counted until its last instant + the period.
key!(WindowKey, 19);
// GcraPair: I₁ = 10 ns, I₂ = 20 ns, bursts 1: idle when S₂ = 20 ns has passed.
key!(PairKey, 20);

/// One key's map entry: 0 empty, i + 1 the state `states[i]` (each thread's own pending
/// state, made before the model's threads start, inserted at most once).
struct OneKeyMap<S> {
    states: Vec<S>,
    slot: AtomicUsize,
    floor: AtomicU64,
}

impl<S: Key> OneKeyMap<S> {
    fn lookup(&self) -> Option<(usize, &S)> {
        // Acquire: as papaya's lookup (it protects the entry pointer with Acquire).
        match self.slot.load(Ordering::Acquire) {
            0 => None,
            i => Some((i, &self.states[i - 1])),
        }
    }

    /// papaya's `try_insert` of state `mine` (index + 1): the key's entry if it was absent.
    fn try_insert(&self, mine: usize) -> Option<&S> {
        // Release on success (papaya's insert CAS); Relaxed on failure: we only look again.
        self.slot
            .compare_exchange(0, mine, Ordering::Release, Ordering::Relaxed)
            .ok()
            .map(|_| &self.states[mine - 1])
    }

    /// papaya's `remove_if` for the entry `i`, through the real `remove_retired`.
    fn remove(&self, i: usize) {
        remove_retired(|| {
            // Release on success (papaya's removal CAS); Relaxed on failure (someone else did).
            self.slot
                .compare_exchange(i, 0, Ordering::Release, Ordering::Relaxed)
                .is_ok()
        });
    }

    /// `Keyed::try_acquire_at` for the key, creating its state with `mine` if absent. The
    /// retry loop is bounded (a request that has not been decided after four looks counts as
    /// denied): the property is "never over-admits", which a give-up cannot break, and an
    /// unbounded yield loop makes loom's executions long enough to overflow its store history.
    fn admit(&self, mine: usize, now: u64, planted: bool) -> bool {
        for _ in 0..4 {
            match self.lookup() {
                Some((i, state)) => match state.acquire_at(now) {
                    Admit::Granted => return true,
                    Admit::Denied(_) => return false,
                    Admit::Evicted => self.remove(i),
                    Admit::Moving => thread::yield_now(),
                },
                None if planted => create_floor_first(&self.floor, || self.try_insert(mine)),
                None => create(&self.floor, || self.try_insert(mine)),
            }
        }
        false
    }

    /// `Keyed::evict_idle_at(now)`: raise the floor, retire the entry's state if idle, remove.
    fn evict_idle_at(&self, now: u64) {
        raise_floor(&self.floor, now);
        if let Some((i, state)) = self.lookup() {
            if state.evict_at(now) {
                self.remove(i);
            }
        }
    }
}

/// Thread A asks for the key at 1 ns; thread B asks at 0 and then evicts at `S::IDLE_AT` (its
/// grant leaves the state idle then). Burst 1, one permit per 10 ns: at most one of the two asks may be
/// granted, whichever state each lands on.
fn creation_racing_eviction<S: Key>(planted: bool) {
    let mut model = loom::model::Builder::new();
    model.max_branches = 20_000;
    model.check(move || {
        let map = Arc::new(OneKeyMap {
            states: vec![S::pending1(), S::pending1()],
            slot: AtomicUsize::new(0),
            floor: AtomicU64::new(0),
        });
        let a = {
            let map = Arc::clone(&map);
            thread::spawn(move || map.admit(1, 1, planted))
        };
        let b = map.admit(2, 0, false);
        map.evict_idle_at(S::IDLE_AT);
        let a = a.join().unwrap();
        assert!(
            !(a && b),
            "over-admission: a key re-created across an eviction granted again"
        );
    });
}

common::real_and_planted! {
    "over-admission";
    gcra_creation_racing_eviction, planted_gcra_floor_read_before_insert_over_admits
        => creation_racing_eviction::<GcraKey>;
    log_creation_racing_eviction, planted_log_floor_read_before_insert_over_admits
        => creation_racing_eviction::<LogKey>;
    window_creation_racing_eviction, planted_window_floor_read_before_insert_over_admits
        => creation_racing_eviction::<WindowKey>;
    pair_creation_racing_eviction, planted_pair_floor_read_before_insert_over_admits
        => creation_racing_eviction::<PairKey>;
}
