//! [`Contention`]: what every single-word limiter's CAS loop does when it loses, in one place.
//!
//! `Gcra` (and through it the `Pacer` and reservations), `GcraPair`, `SlidingWindow`'s
//! decision word, `SlidingLog`'s cursor, `ShardedGcra`'s shards and `GcraMulti`'s snapshot
//! pointer each update one shared word by a `compare_exchange_weak` loop: read the word once,
//! decide, CAS, with the same `now` throughout (the clock is read once per call, before the
//! loop). So do the per-key states: `Keyed`'s GCRA and pair words (inline in its table or in
//! its map) and `IntKeyed`'s 16-byte slots, and `IntKeyed`'s claims and commits. Each loop
//! holds a `Contention` and calls [`lost`](Contention::lost) after a lost CAS (or
//! [`lost_then_reload`](Contention::lost_then_reload) where it scans afresh anyway),
//! [`wait`](Contention::wait) while it waits for another thread's step (a rate change, a
//! window roll) and [`snooze`](Contention::snooze) where that step may outlast a time slice
//! (a new key's creator, a table rebuild, a gate draining). How long a lost CAS pauses, and
//! whether the loop then decides on the value the failed CAS returned or on a fresh load, is
//! [`policy::CHOSEN`], one constant: the next improvement lands in every limiter at once. The
//! per-key loops keep their first decision and CAS inline and call out of line only after a
//! lost CAS, so the uncontended path holds no contention state.
//!
//! The chosen policy, "batch, then fight": the first six losses in a row pause (exponentially,
//! with a per-thread jitter) and then CAS the value the failed CAS returned, so a thread that
//! is winning runs a batch of calls with the line to itself; from the seventh on the loser
//! loads the word afresh and retries without pausing, so no caller loses more than about
//! 10 µs of pauses in a row and its `now` stays fresh.
//!
//! The pause is time, not correctness: every loop decides again on a value the word held, so
//! no policy changes a guarantee (the loom models run every loop with one scheduler yield per
//! loss and a reload after every second loss, whatever the policy). What each candidate costs
//! at 1, 2 and many threads is in the
//! [`guide`](crate::guide::contention#contention-one-policy-for-every-single-word-limiter).

// Under loom a lost CAS yields once whatever the policy, so most of the arithmetic goes unused.
#[cfg_attr(hotlimit_loom, allow(dead_code))]
pub(crate) mod policy;

/// One CAS loop's contention state: the lost CASes (and waits) of this call so far.
#[derive(Debug)]
pub(crate) struct Contention {
    losses: u32,
}

impl Contention {
    /// A loop's state at its start: no loss yet.
    #[inline(always)]
    pub(crate) const fn new() -> Self {
        Contention { losses: 0 }
    }

    /// After a lost CAS that returned `current`: the chosen policy's pause for this many
    /// losses in a row, then the word to decide on next: `current`, or a fresh `reload()`
    /// (each loop passes its own load, with the ordering of its first one). `seed` differs
    /// between threads (their clock reading), so two threads that lose to each other do not
    /// pause in step.
    ///
    /// Out of line, reload included: the loop then has one way back to its decision, as with
    /// a plain pause, and its uncontended code stays as it was (with the reload inline, the
    /// compiler merged `Gcra`'s two decision branches into one flag computation: 4 to 5
    /// instructions more per call, allowed and denied, under callgrind).
    #[cold]
    #[inline(never)]
    pub(crate) fn lost<W>(&mut self, current: W, seed: u64, reload: impl FnOnce() -> W) -> W {
        self.losses = self.losses.saturating_add(1);
        if pause(self.losses, seed) {
            reload()
        } else {
            current
        }
    }

    /// After a lost CAS when the loop looks at the word again anyway (a lost claim that
    /// restarts from a fresh read): the chosen policy's pause only.
    #[cold]
    #[inline(never)]
    pub(crate) fn lost_then_reload(&mut self, seed: u64) {
        self.losses = self.losses.saturating_add(1);
        let _ = pause(self.losses, seed);
    }

    /// While another thread's step must finish first (a rate change holding the word, a window
    /// being rolled): crossbeam's exponential `Backoff::spin` schedule, 2^min(k − 1, 6) hints
    /// on the k-th wait. Not a lost CAS: nothing was decided, the loop reads the word again.
    #[cold]
    #[inline(never)]
    pub(crate) fn wait(&mut self) {
        self.losses = self.losses.saturating_add(1);
        wait(self.losses);
    }
}

impl Contention {
    /// While another thread finishes a protocol of several steps that may outlast its time
    /// slice (a new key's creator reserving its place, a rebuild of a table segment, a rate
    /// change moving a key, admitters leaving a gate), where the waiter can only look again:
    /// crossbeam's `Backoff::snooze` schedule, [`wait`](Contention::wait)'s spins for the first
    /// six waits, then the thread yields (with `std`), so that on a machine with more threads
    /// than cores the thread waited for gets to run. Not a lost CAS: nothing was decided.
    #[cold]
    #[inline(never)]
    #[cfg_attr(not(feature = "std"), allow(dead_code))] // only `Keyed`'s protocols wait so
    pub(crate) fn snooze(&mut self) {
        self.losses = self.losses.saturating_add(1);
        #[cfg(all(feature = "std", not(hotlimit_loom)))]
        if self.losses > SNOOZE_SPINS {
            std::thread::yield_now();
            return;
        }
        wait(self.losses);
    }
}

/// The waits [`Contention::snooze`] spins through before it yields (crossbeam's
/// `SPIN_LIMIT`).
#[cfg(all(feature = "std", not(hotlimit_loom)))]
const SNOOZE_SPINS: u32 = 6;

/// The pause after the `losses`-th lost CAS in a row, and whether to load the word again
/// after it.
#[inline(always)]
fn pause(losses: u32, seed: u64) -> bool {
    let step = policy::CHOSEN.step(losses, seed);
    #[cfg(not(hotlimit_loom))]
    {
        spin(step.hints);
        step.reload
    }
    // Under loom: one yield per loss, so the scheduler runs the thread that won, and a reload
    // after every second loss: the policy reloads only after several losses in a row, more
    // than a small model makes, and both ways of deciding again must be explored (the policy
    // only chooses between them; each is correct on its own).
    #[cfg(hotlimit_loom)]
    {
        let _ = step;
        loom::hint::spin_loop();
        losses.is_multiple_of(2)
    }
}

/// The pause of the `waits`-th wait.
#[inline(always)]
fn wait(waits: u32) {
    #[cfg(not(hotlimit_loom))]
    spin(policy::Policy::Exponential.step(waits, 0).hints);
    #[cfg(hotlimit_loom)]
    {
        let _ = waits;
        loom::hint::spin_loop();
    }
}

/// `n` spin hints.
#[cfg(not(hotlimit_loom))]
#[inline(always)]
fn spin(n: u32) {
    for _ in 0..n {
        core::hint::spin_loop();
    }
}
