//! `Keyed`'s inline table under loom: the REAL table (`Table`, its slow path, its eviction and
//! its rebuild, the code `Keyed<_, Gcra>` runs) on one tiny segment whose keys all hash to the
//! same home slot, with a host that has no capacity limit and no overrides. Every model keys
//! at 1 per 10 ns, burst 1, on a frozen clock, so a key grants at most once at a given time;
//! each asserts that no interleaving grants more, and each has a planted twin (a step of the
//! protocol done the naive way) that loom must catch.
//!
//! - two creators of one key: one slot, one grant (planted: a creator that passes a claimed
//!   slot whose key is not written yet claims a second slot);
//! - a grant racing an eviction and a re-creation: one grant (planted: an eviction that stores
//!   DEAD without the CAS from the idle value it read);
//! - a creation racing another creation and the eviction of that state, for a caller whose
//!   clock read lags the sweep: no grant below the evicted state's TAT (planted: the floor read
//!   before the probe and claim, issue 14's order);
//! - two grants racing on one key: the burst, no more (planted: a grant that stores the value
//!   it decided on instead of CASing it);
//! - a grant racing a rebuild of the segment: one grant (planted: a rebuild that copies the
//!   word without freezing it);
//! - a creation racing a rebuild: the key ends with one slot and one grant;
//! - a segment growing (a new key filled three quarters of it: the real rebuild into a longer
//!   segment) while a grant races it: one grant (planted: a rebuild that copies without
//!   freezing); two creators of one key racing the growth their creation starts: one slot,
//!   one grant; the same grant on the hit path that reads the clock itself, after the
//!   segment's hint (`Keyed::try_acquire` on a table larger than a core's cache);
//! - a hit racing the creation of its key: the key's bytes are read only after a load that
//!   publishes them (the slot's key has no flag of its own; loom's cell checks every read
//!   against the write; planted: the words loaded Relaxed, a read racing the write).
#![cfg(hotlimit_loom)]

mod common;

use std::time::Duration;

use hotlimit::__planted_keyed::{ModelTable, TablePlant};
use hotlimit::Rate;
use loom::sync::atomic::AtomicU64;
use loom::sync::Arc;
use loom::thread;

/// 1 per 10 ns, burst 1.
fn one_per_10ns() -> Rate {
    Rate::new(1, Duration::from_nanos(10)).unwrap()
}

/// A table of `slots` slots with `plant` (or the real protocol), shared.
fn table(slots: usize, plant: Option<TablePlant>) -> Arc<ModelTable> {
    Arc::new(ModelTable::new(
        one_per_10ns(),
        slots,
        plant.unwrap_or(TablePlant::None),
    ))
}

/// Two threads create key 1 at once (another key already holds the home slot, so both walk
/// past it): exactly one is granted, and the key has one slot.
fn racing_creators(planted: bool) {
    loom::model(move || {
        let t = table(3, planted.then_some(TablePlant::PassClaimed));
        assert!(t.acquire_at(9, 0));
        let t2 = t.clone();
        let other = thread::spawn(move || t2.acquire_at(1, 0));
        let mine = t.acquire_at(1, 0);
        let theirs = other.join().unwrap();
        assert_eq!(
            u32::from(mine) + u32::from(theirs),
            1,
            "two slots for one key"
        );
        assert_eq!(t.live_slots(1), 1, "two slots for one key");
    });
}

common::real_and_planted! {
    "two slots for one key";
    racing_creators_of_one_key_share_one_slot, planted_creator_passing_a_claimed_slot_claims_twice
        => racing_creators;
}

/// Key 1 granted at 0 (idle from 10). At 10, one thread asks for it while another sweeps
/// (evicts it if idle) and then asks too: one grant at 10, whatever the order.
fn grant_racing_an_eviction(planted: bool) {
    loom::model(move || {
        let t = table(3, planted.then_some(TablePlant::EvictByStore));
        assert!(t.acquire_at(1, 0));
        let t2 = t.clone();
        let asker = thread::spawn(move || t2.acquire_at(1, 10));
        t.evict_at(10);
        let mine = t.acquire_at(1, 10);
        let theirs = asker.join().unwrap();
        assert_eq!(
            u32::from(mine) + u32::from(theirs),
            1,
            "over-admission across an eviction"
        );
    });
}

common::real_and_planted! {
    "over-admission across an eviction";
    eviction_never_loses_a_grant, planted_eviction_by_store_over_admits
        => grant_racing_an_eviction;
}

/// A caller whose clock read 9 (it lags) asks for new key 1 while this thread creates it at 0
/// (granted: its TAT is 10) and then sweeps at 10 (evicting it, the floor raised to 10). The
/// lagging caller may be granted only if it created the key first (then this thread's request
/// at 0 is denied); a fresh state made after the eviction starts at the floor and denies at 9.
fn creation_racing_an_eviction(planted: bool) {
    loom::model(move || {
        let t = table(3, planted.then_some(TablePlant::FloorFirst));
        let t2 = t.clone();
        let lagging = thread::spawn(move || t2.acquire_at(1, 9));
        let first = t.acquire_at(1, 0);
        t.evict_at(10);
        let late = lagging.join().unwrap();
        assert!(
            !(first && late),
            "a fresh state below the evicted one's TAT"
        );
    });
}

common::real_and_planted! {
    "a fresh state below the evicted one's TAT";
    creation_after_an_eviction_starts_at_the_floor, planted_floor_read_before_the_claim_over_admits
        => creation_racing_an_eviction;
}

/// Key 1 granted at 0 (its TAT is then 10). At 10, two threads ask for it at once: one grant
/// (the CAS that loses goes through the contention policy and decides again on the winner's
/// value, which denies).
fn grants_racing_on_one_key(planted: bool) {
    loom::model(move || {
        let t = table(2, planted.then_some(TablePlant::GrantByStore));
        assert!(t.acquire_at(1, 0));
        let t2 = t.clone();
        let other = thread::spawn(move || t2.acquire_at(1, 10));
        let mine = t.acquire_at(1, 10);
        let theirs = other.join().unwrap();
        assert_eq!(
            u32::from(mine) + u32::from(theirs),
            1,
            "two grants where the burst holds one"
        );
    });
}

common::real_and_planted! {
    "two grants where the burst holds one";
    racing_grants_on_one_key_take_the_burst_once, planted_grant_by_store_over_admits
        => grants_racing_on_one_key;
}

/// Key 1 granted at 0 (idle from 10). At 10, one thread asks for it while another rebuilds
/// the segment and then asks too: one grant at 10.
fn grant_racing_a_rebuild(planted: bool) {
    loom::model(move || {
        let t = table(2, planted.then_some(TablePlant::CopyWithoutFreeze));
        assert!(t.acquire_at(1, 0));
        let t2 = t.clone();
        let asker = thread::spawn(move || t2.acquire_at(1, 10));
        t.rebuild_at(10);
        let mine = t.acquire_at(1, 10);
        let theirs = asker.join().unwrap();
        assert_eq!(
            u32::from(mine) + u32::from(theirs),
            1,
            "a grant lost in a rebuild"
        );
    });
}

common::real_and_planted! {
    "a grant lost in a rebuild";
    rebuild_never_loses_a_grant, planted_rebuild_copying_without_freeze_over_admits
        => grant_racing_a_rebuild;
}

/// A key created on one thread while another asks for it on the hit path: the asker compares
/// the key in the slot only after a load of the slot's word that orders the key's write
/// before the read (loom's cell checks it); planted: a hit that loads the words Relaxed,
/// which loom reports as a read racing the key's write.
fn hit_racing_a_creation(planted: bool) {
    loom::model(move || {
        let t = table(2, planted.then_some(TablePlant::RelaxedKeyRead));
        let t2 = t.clone();
        let creator = thread::spawn(move || t2.acquire_at(1, 0));
        let mine = t.acquire_at(1, 0);
        let theirs = creator.join().unwrap();
        assert_eq!(u32::from(mine) + u32::from(theirs), 1, "two grants");
        assert_eq!(t.live_slots(1), 1);
    });
}

#[test]
fn a_hit_reads_a_key_only_after_its_publication() {
    hit_racing_a_creation(false);
}

#[test]
#[should_panic(expected = "Causality violation")]
fn planted_hit_reading_keys_after_a_relaxed_load_races_the_write() {
    hit_racing_a_creation(true);
}

/// A new key created while the segment is rebuilt: it ends with exactly one slot, and a
/// second request at the same time is denied.
#[test]
fn creation_racing_a_rebuild_keeps_one_state() {
    loom::model(|| {
        let t = table(2, None);
        assert!(t.acquire_at(9, 0));
        let t2 = t.clone();
        let creator = thread::spawn(move || t2.acquire_at(1, 0));
        t.rebuild_at(0);
        assert!(creator.join().unwrap());
        assert!(!t.acquire_at(1, 0));
        assert_eq!(t.live_slots(1), 1);
    });
}

/// A one-segment table that starts with 2 slots and grows to at most 4, shared.
fn growing(plant: Option<TablePlant>) -> Arc<ModelTable> {
    Arc::new(ModelTable::growing(
        one_per_10ns(),
        2,
        4,
        plant.unwrap_or(TablePlant::None),
    ))
}

/// Key 1 granted at 0 in a segment of 2 slots. At 10, one thread asks for key 1 while this one
/// creates key 2 (the second of 2 slots used: the segment grows to 4, by a rebuild) and then
/// asks for key 1 too: one grant of key 1 at 10, and each key one slot in the grown segment.
/// With `clocked`, the asker takes the hit path of a table larger than a core's cache
/// (`Keyed::try_acquire` there): it reads the segment's hint (stale once the segment grows),
/// the clock (a loom atomic holding 10), then loads the segment and probes, so the growth can
/// retire the segment between any two of these steps, or before the CAS.
fn grant_racing_growth_on(planted: bool, clocked: bool) {
    loom::model(move || {
        let t = growing(planted.then_some(TablePlant::CopyWithoutFreeze));
        assert!(t.acquire_at(1, 0));
        assert_eq!(t.slots(), 2);
        let (t2, clock) = (t.clone(), Arc::new(AtomicU64::new(10)));
        let asker = thread::spawn(move || {
            if clocked {
                t2.acquire_clocked(1, &clock)
            } else {
                t2.acquire_at(1, 10)
            }
        });
        assert!(t.acquire_at(2, 10));
        let mine = t.acquire_at(1, 10);
        let theirs = asker.join().unwrap();
        assert_eq!(
            u32::from(mine) + u32::from(theirs),
            1,
            "a grant lost in a growth"
        );
        assert_eq!(t.slots(), 4, "the segment grew");
        assert_eq!((t.live_slots(1), t.live_slots(2)), (1, 1));
    });
}

common::real_and_planted! {
    "a grant lost in a growth";
    growth_never_loses_a_grant, planted_growth_copying_without_freeze_over_admits
        => |planted| grant_racing_growth_on(planted, false);
    clocked_hit_never_loses_a_grant_in_a_growth,
        planted_clocked_hit_over_a_copy_without_freeze_over_admits
        => |planted| grant_racing_growth_on(planted, true);
}

/// Key 9 in a segment of 2 slots; two threads create key 1 at once (whichever claims the
/// second slot grows the segment, while the other may be probing the old one): one grant,
/// one slot for key 1, in the grown segment.
#[test]
fn creators_racing_growth_share_one_slot() {
    loom::model(|| {
        let t = growing(None);
        assert!(t.acquire_at(9, 0));
        let t2 = t.clone();
        let other = thread::spawn(move || t2.acquire_at(1, 0));
        let mine = t.acquire_at(1, 0);
        let theirs = other.join().unwrap();
        assert_eq!(
            u32::from(mine) + u32::from(theirs),
            1,
            "two slots for one key"
        );
        assert_eq!(t.slots(), 4, "the segment grew");
        assert_eq!(t.live_slots(1), 1, "two slots for one key");
    });
}

/// `String` keys: the table keeps each as a `StrKey` (a key of at most 23 bytes in the slot
/// itself, a longer one boxed), written and read through the same cell. A short and a long
/// key, so that both forms are written, read and copied.
const SHORT: &str = "user:0000000001";
const LONG: &str = "a token of forty bytes: 0123456789abcdef";

/// A table of `String` keys: `slots` slots growing to at most `most`, with `plant`, shared.
fn string_table(slots: usize, most: usize, plant: Option<TablePlant>) -> Arc<ModelTable<String>> {
    Arc::new(ModelTable::growing(
        one_per_10ns(),
        slots,
        most,
        plant.unwrap_or(TablePlant::None),
    ))
}

/// [`hit_racing_a_creation`] on a `String` key (`key`): the asker compares its `&str` with
/// the slot's `StrKey` only after a load that orders the key's write before the read;
/// planted: the Relaxed load, which loom reports.
fn string_hit_racing_a_creation(key: &'static str, planted: bool) {
    loom::model(move || {
        let t = string_table(2, 2, planted.then_some(TablePlant::RelaxedKeyRead));
        let t2 = t.clone();
        let creator = thread::spawn(move || t2.acquire_at(key.to_owned(), 0));
        let mine = t.acquire_at(key.to_owned(), 0);
        let theirs = creator.join().unwrap();
        assert_eq!(u32::from(mine) + u32::from(theirs), 1, "two grants");
        assert_eq!(t.live_slots(key.to_owned()), 1);
    });
}

#[test]
fn a_hit_reads_a_short_string_key_only_after_its_publication() {
    string_hit_racing_a_creation(SHORT, false);
}

#[test]
fn a_hit_reads_a_long_string_key_only_after_its_publication() {
    string_hit_racing_a_creation(LONG, false);
}

#[test]
#[should_panic(expected = "Causality violation")]
fn planted_hit_reading_a_string_key_after_a_relaxed_load_races_the_write() {
    string_hit_racing_a_creation(SHORT, true);
}

/// [`grant_racing_growth`] on `String` keys: the growth copies the short key's bytes and
/// clones the long key's box into the new segment while a grant races it: one grant, and each
/// key found in one slot of the grown segment (planted: a copy without the freeze).
fn string_grant_racing_growth(planted: bool) {
    loom::model(move || {
        let t = string_table(2, 4, planted.then_some(TablePlant::CopyWithoutFreeze));
        assert!(t.acquire_at(SHORT.to_owned(), 0));
        let t2 = t.clone();
        let asker = thread::spawn(move || t2.acquire_at(SHORT.to_owned(), 10));
        assert!(t.acquire_at(LONG.to_owned(), 10));
        let mine = t.acquire_at(SHORT.to_owned(), 10);
        let theirs = asker.join().unwrap();
        assert_eq!(
            u32::from(mine) + u32::from(theirs),
            1,
            "a grant lost in a growth"
        );
        assert_eq!(t.slots(), 4, "the segment grew");
        assert_eq!(
            (
                t.live_slots(SHORT.to_owned()),
                t.live_slots(LONG.to_owned())
            ),
            (1, 1)
        );
        assert!(
            !t.acquire_at(LONG.to_owned(), 10),
            "the long key's state was carried"
        );
    });
}

common::real_and_planted! {
    "a grant lost in a growth";
    string_growth_never_loses_a_grant, planted_string_growth_copying_without_freeze_over_admits
        => string_grant_racing_growth;
}
