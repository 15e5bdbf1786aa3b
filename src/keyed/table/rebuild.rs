//! Rebuilding a segment of the [`Table`]: its dead slots reclaimed (a compaction), its keys
//! given more room (a segment starts small and grows with its keys, so that the table's memory
//! follows the keys rather than the capacity), or its live states carried onto a new default
//! configuration (`set_default_rate`). One protocol for all three: the new segment is sized
//! from the keys the rebuild froze ([`Table::rebuilt_len`]), after it froze them.
//!
//! One thread at a time per segment (the segment's `state`, CURRENT → REBUILDING by CAS). It
//! walks the slots in order and closes each with one CAS, whose kind decides what happens:
//!
//! - FREE → SEALED: no creator can claim it any more (a creator that finds it looks again from
//!   the directory, after the new segment is published);
//! - live or INDIRECT → MOVING (frozen): a grant racing the freeze either lands first (the CAS
//!   then reads its value, which is the one copied) or fails on MOVING and looks again from
//!   the directory; the frozen value is copied into the new segment (carried onto the new
//!   configuration if it differs), with a copy of the key (a `String` key's `StrKey`: a short
//!   key's bytes, or a clone of its box);
//! - DEAD: dropped (a DEAD slot never changes again);
//! - CLAIMED or MOVING (a creator, or a rate change, in the middle of its steps on this slot):
//!   waited for, then closed as whatever it became.
//!
//! Then the frozen keys go into a new segment sized for them, which replaces the old one in
//! the directory (Release), and the old one is marked RETIRED (its slots are all sealed,
//! frozen or dead: nothing can be granted in it). A request on a key of the segment waits from
//! its key's freeze to the publication: the price of reclaiming slots that readers may be
//! comparing keys in.

use core::hash::{BuildHasher, Hash};

use alloc::vec::Vec;

use super::super::word::{inline, TatWord, WordOf};
use super::super::KeyedState;
use super::{Guard, Segment, Stored, Table, CURRENT, REBUILDING, RETIRED};
use crate::contention::Contention;
use crate::sync::{Arc, Ordering};

impl<K: Hash + Eq + Clone + 'static, L: KeyedState, S: BuildHasher> Table<K, L, S> {
    /// Rebuilds segment `s` onto `cfg` (`None`: its own configuration, a compaction), carrying
    /// live states at `now` (after the base) when the configuration changes. `false` if another
    /// thread is rebuilding it (or has just replaced it): the caller looks again.
    pub(crate) fn rebuild(&self, s: usize, cfg: Option<&Arc<L::Config>>, now: u64) -> bool {
        if <L::Word as TatWord>::free().is_none() {
            // States kept in the map have no table (and so no segment to rebuild).
            return false;
        }
        let guard = Guard::new();
        let Some(old) = self.segment(s, &guard) else {
            // No key yet: nothing to rebuild (its first key allocates it on the default).
            return true;
        };
        // Acquire on success: a previous rebuild's publication of this segment is behind us
        // (we read it from the directory), and so is everything its builder wrote. Relaxed on
        // failure: someone else holds it, or it was replaced.
        if old
            .state
            .compare_exchange(CURRENT, REBUILDING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        let cfg: Arc<L::Config> = cfg.cloned().unwrap_or_else(|| old.cfg.clone());
        let rerate = !Arc::ptr_eq(&cfg, &old.cfg);
        // The keys to copy and their words, frozen (every slot of the old segment closed).
        let mut moved: Vec<(Stored<K>, WordOf<L>)> = Vec::new();
        for slot in old.slots.iter() {
            let mut contention = Contention::new();
            loop {
                // Acquire: a DEAD word read here comes from an eviction's Release CAS, made
                // after it raised the floor; reading it before we publish carries that raise
                // to every creator that reads the new segment (see `Keyed`'s creation). A live
                // or INDIRECT word publishes its key (`KeyCell`), which we copy.
                let w = slot.word.load(Ordering::Acquire);
                let first = <L::Word as TatWord>::first(w);
                let v = first & inline::V_MASK;
                let closed = if v == inline::FREE {
                    inline::SEALED
                } else if inline::is_live(first) || v == inline::INDIRECT {
                    inline::MOVING
                } else if v == inline::DEAD {
                    break;
                } else {
                    // CLAIMED or MOVING: a creator or a rate change is between its steps on
                    // this slot; it ends in a few stores.
                    contention.snooze();
                    continue;
                };
                #[cfg(hotlimit_loom)]
                if self.plant == super::Plant::CopyWithoutFreeze && closed == inline::MOVING {
                    // Planted: copy the value read, leave the old slot as it was.
                    if super::cell::written(v) {
                        // SAFETY: read with Acquire and written (`KeyCell`).
                        #[allow(unsafe_code)]
                        moved.push((unsafe { slot.key.duplicate() }, w));
                    }
                    break;
                }
                // Relaxed (both): the CAS decides against every grant, claim, eviction and
                // move on this one word (their RMWs are totally ordered with it); what we copy
                // is the value it replaced, and the key, published by the Acquire load above.
                if slot
                    .word
                    .cas(
                        w,
                        <L::Word as TatWord>::marker(w, closed),
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    )
                    .is_err()
                {
                    continue;
                }
                if closed == inline::SEALED {
                    break;
                }
                // SAFETY: `w`, loaded with Acquire, is live or INDIRECT (the CAS above froze
                // exactly that value): the key was written and published (`KeyCell`).
                #[allow(unsafe_code)]
                let key = unsafe { slot.key.duplicate() };
                let carried = if v == inline::INDIRECT {
                    w
                } else if rerate {
                    L::word_rerate(&old.cfg, &cfg, w, now)
                } else {
                    w
                };
                moved.push((key, carried));
                break;
            }
        }
        // Sized for the keys frozen: none can be added to the old segment any more.
        let boxed = moved.iter().any(|(key, _)| key.is_boxed());
        let Some(new) = Segment::new(cfg, self.rebuilt_len(moved.len(), boxed)) else {
            unreachable!("the word sits inline (checked above)");
        };
        for (key, w) in moved {
            self.place(&new, key, w);
        }
        // Relaxed: a late rebuilder of the old segment fails its CAS on either value.
        old.state.store(RETIRED, Ordering::Relaxed);
        self.segs[s].replace(new);
        true
    }
}
