//! The per-key state protocol for the loom models, with the map abstracted away: the real
//! GCRA state word and its real `acquire` / `retire`, and a planted evictor that must fail its
//! model. Compiled only under `--cfg hotlimit_loom`; not part of the API.

use alloc::vec::Vec;

use super::gcra::{GcraConfig, GcraState};
use super::log::{log_end, LogConfig, LogState};
use super::window::{window_idle_at, WindowConfig, WindowState};
use super::{KeyedState, Retire};
use crate::gcra::Gcra;
use crate::rate::Rate;
use crate::sliding_log::SlidingLog;
use crate::sliding_window::SlidingWindow;
use crate::sync::{AtomicU64, Ordering};

/// One key's GCRA state and its configuration, as a `Keyed` entry holds them.
#[derive(Debug)]
pub struct GcraKey {
    cfg: GcraConfig,
    state: GcraState,
}

pub use super::gcra_pair::planted::PairKey;
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

impl ModelKey for GcraKey {
    type L = Gcra;
    fn state(&self) -> &GcraState {
        &self.state
    }
}

impl ModelKey for LogKey {
    type L = SlidingLog;
    fn state(&self) -> &LogState {
        &self.state
    }
}

impl ModelKey for WindowKey {
    type L = SlidingWindow;
    fn state(&self) -> &WindowState {
        &self.state
    }
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

impl GcraKey {
    /// A new key's state as its creator inserts it: pending until [`commit`](GcraKey::commit).
    pub fn pending(rate: Rate) -> Self {
        let cfg = <Gcra as KeyedState>::config(rate, None).expect("valid rate");
        let state = <Gcra as KeyedState>::pending(&cfg);
        GcraKey { cfg, state }
    }

    /// The creator's commit once its place is reserved.
    pub fn commit(&self, floor: u64) {
        <Gcra as KeyedState>::commit(&self.state, floor);
    }

    /// Whether the state is still pending.
    pub fn is_pending(&self) -> bool {
        <Gcra as KeyedState>::is_pending(&self.state)
    }

    /// A fresh state for `rate` (burst = limit) with floor `floor`, made as `Keyed` makes
    /// one: pending, then committed.
    pub fn new(rate: Rate, floor: u64) -> Self {
        let cfg = <Gcra as KeyedState>::config(rate, None).expect("valid rate");
        let state = <Gcra as KeyedState>::pending(&cfg);
        <Gcra as KeyedState>::commit(&state, floor);
        GcraKey { cfg, state }
    }

    /// The real admission on the state word.
    pub fn acquire_at(&self, now: u64) -> Admit {
        <Gcra as KeyedState>::acquire(&self.cfg, &self.state, 1, now)
    }

    /// The real eviction: CAS an idle state to the tombstone; true if the caller may now
    /// remove the entry.
    pub fn evict_at(&self, now: u64) -> bool {
        <Gcra as KeyedState>::retire(&self.cfg, &self.state, now, Retire::IfIdle).is_some()
    }

    /// The planted bug: checks idleness with a load and lets the caller remove the entry
    /// without retiring the state word, so an admitter holding the old state can still
    /// grant on it after a fresh state replaced it.
    pub fn evict_racy_at(&self, now: u64) -> bool {
        // Relaxed: deliberately broken; the missing tombstone CAS is the bug.
        self.state.0.load(Ordering::Relaxed) <= now
    }
}

/// One key's sliding log behind its gate, as a `Keyed<_, SlidingLog>` entry holds it.
#[derive(Debug)]
pub struct LogKey {
    cfg: LogConfig,
    state: LogState,
}

impl LogKey {
    /// A new key's state as its creator inserts it: pending until [`commit`](LogKey::commit).
    pub fn pending(rate: Rate) -> Self {
        let cfg = <SlidingLog as KeyedState>::config(rate, None).expect("valid rate");
        let state = <SlidingLog as KeyedState>::pending(&cfg);
        LogKey { cfg, state }
    }

    /// The creator's commit once its place is reserved.
    pub fn commit(&self, floor: u64) {
        <SlidingLog as KeyedState>::commit(&self.state, floor);
    }

    /// Whether the state is still pending.
    pub fn is_pending(&self) -> bool {
        <SlidingLog as KeyedState>::is_pending(&self.state)
    }

    /// A fresh log for `rate` with floor `floor` (pending, then committed, as in `Keyed`).
    pub fn new(rate: Rate, floor: u64) -> Self {
        let cfg = <SlidingLog as KeyedState>::config(rate, None).expect("valid rate");
        let state = <SlidingLog as KeyedState>::pending(&cfg);
        <SlidingLog as KeyedState>::commit(&state, floor);
        LogKey { cfg, state }
    }

    /// The real admission through the gate.
    pub fn acquire_at(&self, now: u64) -> Admit {
        <SlidingLog as KeyedState>::acquire(&self.cfg, &self.state, 1, now)
    }

    /// The real eviction: close the gate, wait out the admitters, check idleness, retire.
    pub fn evict_at(&self, now: u64) -> bool {
        <SlidingLog as KeyedState>::retire(&self.cfg, &self.state, now, Retire::IfIdle).is_some()
    }

    /// The planted bug: checks idleness with loads only, without closing the gate.
    pub fn evict_racy_at(&self, now: u64) -> bool {
        self.state
            .log
            .stamps()
            .all(|s| log_end(&self.cfg, s) <= now)
    }
}

/// One key's strict sliding window behind its gate, as a `Keyed<_, SlidingWindow>` entry
/// holds it (one bucket: the smallest ring).
#[derive(Debug)]
pub struct WindowKey {
    cfg: WindowConfig,
    state: WindowState,
}

impl WindowKey {
    /// A new key's state as its creator inserts it: pending until [`commit`](WindowKey::commit).
    pub fn pending(rate: Rate) -> Self {
        let cfg = <SlidingWindow as KeyedState>::config(rate, Some(1)).expect("valid rate");
        let state = <SlidingWindow as KeyedState>::pending(&cfg);
        WindowKey { cfg, state }
    }

    /// The creator's commit once its place is reserved.
    pub fn commit(&self, floor: u64) {
        <SlidingWindow as KeyedState>::commit(&self.state, floor);
    }

    /// Whether the state is still pending.
    pub fn is_pending(&self) -> bool {
        <SlidingWindow as KeyedState>::is_pending(&self.state)
    }

    /// A fresh one-bucket window for `rate` with floor `floor` (pending, then committed).
    pub fn new(rate: Rate, floor: u64) -> Self {
        let cfg = <SlidingWindow as KeyedState>::config(rate, Some(1)).expect("valid rate");
        let state = <SlidingWindow as KeyedState>::pending(&cfg);
        <SlidingWindow as KeyedState>::commit(&state, floor);
        WindowKey { cfg, state }
    }

    /// The real admission through the gate.
    pub fn acquire_at(&self, now: u64) -> Admit {
        <SlidingWindow as KeyedState>::acquire(&self.cfg, &self.state, 1, now)
    }

    /// The real eviction: close the gate, wait out the admitters, check idleness, retire.
    pub fn evict_at(&self, now: u64) -> bool {
        <SlidingWindow as KeyedState>::retire(&self.cfg, &self.state, now, Retire::IfIdle).is_some()
    }

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

    fn successor(&self, carry: Vec<(u64, u64)>) -> WindowKey {
        let cfg =
            <SlidingWindow as KeyedState>::config(self.cfg.rate, Some(1)).expect("valid rate");
        // Relaxed: the model reads its own committed state.
        let floor = self.state.floor.load(Ordering::Relaxed);
        let state = <SlidingWindow as KeyedState>::carried(&cfg, carry, floor);
        WindowKey { cfg, state }
    }
}
