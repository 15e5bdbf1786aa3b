//! Each thread's copies of recent denials, in front of the shared map: a denied key asked again
//! on the same thread is answered with no lock and no atomic operation.
//!
//! A copy is always safe to answer from, however old: a GCRA entry is a lower bound of the
//! key's TAT (a newer denial only raises it), and a log entry a refusal that holds until its
//! time. A stale copy can only fail to deny, and then the shared map is asked (see
//! [`DenialCache::deny`](super::DenialCache::deny)).
//!
//! The table is direct-mapped (the key's hash picks its one slot), [`SLOTS`] slots per thread,
//! each tagged with the cache it belongs to, so several limiters share one thread's table and
//! a limiter that is dropped leaves at most [`SLOTS`] entries behind, overwritten by later ones.

use std::cell::RefCell;

use super::Entry;

/// Slots per thread: a power of two (the hash's low bits pick one).
const SLOTS: usize = 32;

struct Slot {
    /// The cache's id.
    owner: u64,
    hash: u64,
    key: Box<str>,
    entry: Entry,
}

thread_local! {
    static COPIES: RefCell<[Option<Slot>; SLOTS]> = const { RefCell::new([const { None }; SLOTS]) };
}

/// This thread's copy of cache `owner`'s entry for `key` (whose hash is `hash`), if it has one.
#[inline(always)]
pub(super) fn get(owner: u64, hash: u64, key: &str) -> Option<Entry> {
    COPIES
        .try_with(|copies| {
            let copies = copies.try_borrow().ok()?;
            match &copies[hash as usize & (SLOTS - 1)] {
                Some(s) if s.owner == owner && s.hash == hash && *s.key == *key => Some(s.entry),
                _ => None,
            }
        })
        .ok()
        .flatten()
}

/// Keeps `entry` as this thread's copy for `key` of cache `owner`, in place of whatever the
/// slot held.
pub(super) fn put(owner: u64, hash: u64, key: &str, entry: Entry) {
    let _ = COPIES.try_with(|copies| {
        let Ok(mut copies) = copies.try_borrow_mut() else {
            return;
        };
        let slot = &mut copies[hash as usize & (SLOTS - 1)];
        match slot {
            Some(s) if s.owner == owner && s.hash == hash && *s.key == *key => s.entry = entry,
            _ => {
                *slot = Some(Slot {
                    owner,
                    hash,
                    key: key.into(),
                    entry,
                })
            }
        }
    });
}
