//! The per-key state protocol for the loom models, with the map abstracted away: the real
//! GCRA state word and its real `acquire` / `retire`, and a planted evictor that must fail its
//! model. Compiled only under `--cfg hotlimit_loom`; not part of the API.

use alloc::vec::Vec;

use super::log::log_end;
use super::window::window_idle_at;
use super::{KeyedState, Retire};
use crate::gcra::Gcra;
use crate::sliding_log::SlidingLog;
use crate::sliding_window::SlidingWindow;
use crate::sync::{AtomicU64, Ordering};

pub use super::gcra_pair::planted::PairKey;
/// The inline table's model (the real table, slow path, eviction and rebuild) and its bugs.
pub use super::table::planted::ModelTable;
pub use super::table::Plant as TablePlant;
/// What an admission saw.
pub use super::Admit;

/// The sweep's raise of the floor (real code), before it retires states at `now`.
pub fn raise_floor(floor: &AtomicU64, now: u64) {
    super::raise_floor(floor, now);
}

/// The removal of a retired entry (real code: the Release fence, then `remove`).
pub fn remove_retired(remove: impl FnOnce() -> bool) -> bool {
    super::remove_retired(remove)
}

/// A model key whose state the real creation protocol can commit.
pub trait ModelKey {
    /// The `KeyedState` it holds.
    type L: KeyedState;
    /// Its state.
    fn state(&self) -> &<Self::L as KeyedState>::State;
}

/// The real creation protocol ([`super::create`]) with the model's map insert: `insert`
/// puts the creator's pending state in the map if the key is absent and returns it. No
/// capacity (the reservation always succeeds).
pub fn create<'a, M: ModelKey + 'a>(floor: &AtomicU64, insert: impl FnOnce() -> Option<&'a M>) {
    let _ = super::create::<M::L, _>(floor, || insert().map(M::state), || Ok(()), || {});
}

/// The planted bug (the order before issue 14's fix): the floor read BEFORE the insert, so
/// an eviction between the two raises a floor this creator never sees, and its state starts
/// below the evicted state's grants.
pub fn create_floor_first<'a, M: ModelKey + 'a>(
    floor: &AtomicU64,
    insert: impl FnOnce() -> Option<&'a M>,
) {
    // Relaxed: deliberately read too early; the order is the bug.
    let floor = floor.load(Ordering::Relaxed);
    if let Some(ours) = insert() {
        <M::L as KeyedState>::commit(ours.state(), floor);
    }
}

/// A model key: the struct (`cfg` and `state`, as a `Keyed` entry holds them), its
/// [`ModelKey`] impl, and the real protocol steps every model drives (made pending, committed,
/// admitted, evicted), for a key over the `KeyedState` `$l` whose configuration for `$rate`
/// is `$config`. Each key's planted bug stays beside it, written out.
macro_rules! model_key {
    ($(#[$doc:meta])* $key:ident: $l:ty, |$rate:ident| $config:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $key {
            cfg: <$l as $crate::keyed::KeyedState>::Config,
            state: <$l as $crate::keyed::KeyedState>::State,
        }

        impl $crate::keyed::planted::ModelKey for $key {
            type L = $l;
            fn state(&self) -> &<$l as $crate::keyed::KeyedState>::State {
                &self.state
            }
        }

        impl $key {
            /// A new key's state as its creator inserts it: pending until `commit`.
            pub fn pending($rate: $crate::rate::Rate) -> Self {
                let cfg = $config;
                let state = <$l as $crate::keyed::KeyedState>::pending(&cfg);
                $key { cfg, state }
            }

            /// The creator's commit once its place is reserved.
            pub fn commit(&self, floor: u64) {
                <$l as $crate::keyed::KeyedState>::commit(&self.state, floor);
            }

            /// Whether the state is still pending.
            pub fn is_pending(&self) -> bool {
                <$l as $crate::keyed::KeyedState>::is_pending(&self.state)
            }

            /// A fresh state for `rate` with floor `floor`, made as `Keyed` makes one:
            /// pending, then committed.
            pub fn new(rate: $crate::rate::Rate, floor: u64) -> Self {
                let key = Self::pending(rate);
                key.commit(floor);
                key
            }

            /// The real admission (on the state word, or through the gate).
            pub fn acquire_at(&self, now: u64) -> $crate::keyed::Admit {
                <$l as $crate::keyed::KeyedState>::acquire(&self.cfg, &self.state, 1, now)
            }

            /// The real eviction (a CAS to the tombstone, or: close the gate, wait out the
            /// admitters, check idleness, retire); true if the caller may now remove the
            /// entry.
            pub fn evict_at(&self, now: u64) -> bool {
                let how = $crate::keyed::Retire::IfIdle;
                <$l as $crate::keyed::KeyedState>::retire(&self.cfg, &self.state, now, how)
                    .is_some()
            }

            /// The real per-key rate change (`Keyed::set_rate`'s move of a live state) to
            /// `rate` at `now`: freeze the state (`Retire::Move`), then build its successor on
            /// the new configuration from what it held. `None` if another move or an eviction
            /// got there first.
            pub fn move_to_at(&self, rate: $crate::rate::Rate, now: u64) -> Option<Self> {
                let how = $crate::keyed::Retire::Move;
                let carry =
                    <$l as $crate::keyed::KeyedState>::retire(&self.cfg, &self.state, now, how)?;
                Some(Self::successor_to(rate, carry))
            }

            /// The successor of a moved state on `rate`'s configuration (floor 0).
            fn successor_to(
                $rate: $crate::rate::Rate,
                carry: <$l as $crate::keyed::KeyedState>::Carry,
            ) -> Self {
                let cfg = $config;
                let state = <$l as $crate::keyed::KeyedState>::carried(&cfg, carry, 0);
                $key { cfg, state }
            }
        }
    };
}
pub(super) use model_key;

model_key!(
    /// One key's GCRA state and its configuration, as a `Keyed` entry holds them.
    GcraKey: Gcra,
    |rate| <Gcra as KeyedState>::config(rate, None).expect("valid rate")
);

impl GcraKey {
    /// The planted bug: a rate change that loads the TAT instead of freezing it, so a grant
    /// made on the old state after the load is in neither state.
    pub fn move_racy_to_at(&self, rate: crate::rate::Rate, now: u64) -> Option<GcraKey> {
        // Relaxed: deliberately broken; the missing freeze is the bug.
        let tat = self.state.0.load(Ordering::Relaxed);
        Some(Self::successor_to(
            rate,
            (tat, self.cfg.interval, self.cfg.tolerance, now),
        ))
    }

    /// The planted bug: checks idleness with a load and lets the caller remove the entry
    /// without retiring the state word, so an admitter holding the old state can still
    /// grant on it after a fresh state replaced it.
    pub fn evict_racy_at(&self, now: u64) -> bool {
        // Relaxed: deliberately broken; the missing tombstone CAS is the bug.
        self.state.0.load(Ordering::Relaxed) <= now
    }
}

model_key!(
    /// One key's sliding log behind its gate, as a `Keyed<_, SlidingLog>` entry holds it.
    LogKey: SlidingLog,
    |rate| <SlidingLog as KeyedState>::config(rate, None).expect("valid rate")
);

impl LogKey {
    /// The planted bug: a rate change that copies the stamps without closing the gate, so a
    /// grant made on the old state after the copy is in neither state.
    pub fn move_racy_to_at(&self, rate: crate::rate::Rate, _now: u64) -> Option<LogKey> {
        Some(Self::successor_to(rate, self.state.log.all_stamps()))
    }

    /// The planted bug: checks idleness with loads only, without closing the gate.
    pub fn evict_racy_at(&self, now: u64) -> bool {
        self.state
            .log
            .stamps()
            .all(|s| log_end(&self.cfg, s) <= now)
    }
}

model_key!(
    /// One key's strict sliding window behind its gate, as a `Keyed<_, SlidingWindow>` entry
    /// holds it (one bucket: the smallest ring).
    WindowKey: SlidingWindow,
    |rate| <SlidingWindow as KeyedState>::config(rate, Some(1)).expect("valid rate")
);

impl WindowKey {
    /// The planted bug: checks idleness from the buckets with loads only, without closing
    /// the gate, so a grant decided but not yet recorded in its bucket (or not yet made) is
    /// missed and lands on a state the caller then removes.
    pub fn evict_racy_at(&self, now: u64) -> bool {
        window_idle_at(&self.cfg, &self.state.window) <= now
    }

    /// The real rate change (to the same rate): freeze the state behind its gate and build
    /// its successor from what it counted. `None` if another move or an eviction got there
    /// first.
    pub fn move_at(&self, now: u64) -> Option<WindowKey> {
        let carry =
            <SlidingWindow as KeyedState>::retire(&self.cfg, &self.state, now, Retire::Move)?;
        Some(self.successor(carry))
    }

    /// The planted bug: a rate change that reads the counted buckets without closing the
    /// gate and without freezing the state, so a grant made on the old state after the
    /// read is in neither state's count.
    pub fn move_racy_at(&self, _now: u64) -> Option<WindowKey> {
        let carry = self.state.window.counted().collect();
        Some(self.successor(carry))
    }

    /// The planted bug of [`move_racy_at`](WindowKey::move_racy_at), to `rate`.
    pub fn move_racy_to_at(&self, rate: crate::rate::Rate, _now: u64) -> Option<WindowKey> {
        Some(Self::successor_to(
            rate,
            self.state.window.counted().collect(),
        ))
    }

    fn successor(&self, carry: Vec<(u64, u64)>) -> WindowKey {
        let cfg =
            <SlidingWindow as KeyedState>::config(self.cfg.rate, Some(1)).expect("valid rate");
        // Relaxed: the model reads its own committed state.
        let floor = self.state.floor.load(Ordering::Relaxed);
        let state = <SlidingWindow as KeyedState>::carried(&cfg, carry, floor);
        WindowKey { cfg, state }
    }
}
