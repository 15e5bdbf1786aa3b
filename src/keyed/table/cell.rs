//! The directory cell of [`Table`](super::Table): one epoch-protected pointer per segment, so
//! that a rebuild can replace a segment while readers still hold the old one; empty until the
//! segment's first key (a table's memory grows with its keys: segments are allocated, then
//! grown by rebuilds, as their keys arrive).
//!
//! Normally `sdd`'s `AtomicOwned` under an `sdd::Guard` (a thread-local epoch: entering and
//! leaving it is one `lock xchg` and one store, no shared write; a replaced segment is dropped
//! once no guard that could have read it is left). Under `--cfg hotlimit_loom` a loom
//! `Mutex<Arc<T>>` stands in for it: the models check the slot words and the order of a
//! rebuild's steps around its publication (every store to the cell is one lock, as the real
//! swap is one atomic), not `sdd`'s reclamation, which is `sdd`'s own, tested by its authors.
// The crate's one `unsafe` file: the key cell below (a key without a flag of its own, and a
// `String` key kept in the cell's bytes as a `StrKey`) and a segment's aligned slots (`Lines`).
#![allow(unsafe_code)]

use alloc::alloc::Layout;
use alloc::string::String;
use core::any::{Any, TypeId};
use core::borrow::Borrow;
use core::hash::{BuildHasher, Hash};
use core::mem::MaybeUninit;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

use super::str_key::{Captured, StrKey};

#[cfg(not(hotlimit_loom))]
mod imp {
    use crate::sync::Ordering;

    /// An epoch guard: segments read under it stay allocated until it is dropped.
    pub(crate) struct Guard(sdd::Guard);

    impl Guard {
        #[inline(always)]
        pub(crate) fn new() -> Self {
            Guard(sdd::Guard::new())
        }
    }

    /// A segment as read from the directory: borrowed for the guard's lifetime.
    pub(crate) struct SegRef<'g, T>(&'g T);

    impl<T> core::ops::Deref for SegRef<'_, T> {
        type Target = T;
        #[inline(always)]
        fn deref(&self) -> &T {
            self.0
        }
    }

    /// One directory entry: empty until its segment's first key.
    pub(crate) struct Cell<T>(sdd::AtomicOwned<T>);

    impl<T> Cell<T> {
        /// An empty cell.
        pub(crate) fn empty() -> Self {
            Cell(sdd::AtomicOwned::null())
        }

        /// The current segment, if any.
        #[inline(always)]
        pub(crate) fn load<'g>(&self, guard: &'g Guard) -> Option<SegRef<'g, T>> {
            // Acquire: pairs with the Release of `init` and `replace`, so a reader of a
            // segment sees it whole (its slots as its builder wrote them, and everything the
            // builder read before: the raised floors behind the DEAD words it dropped).
            self.0
                .load(Ordering::Acquire, &guard.0)
                .as_ref()
                .map(SegRef)
        }

        /// Installs `t` in an empty cell; `false` (and `t` dropped) if another thread was
        /// first. (`'static`: a replaced segment may be dropped by any thread, later.)
        pub(crate) fn init(&self, t: T, guard: &Guard) -> bool
        where
            T: 'static,
        {
            // Release on success: see `load`. Relaxed on failure: the caller loads again.
            self.0
                .compare_exchange(
                    sdd::Ptr::null(),
                    (Some(sdd::Owned::new(t)), sdd::Tag::None),
                    Ordering::Release,
                    Ordering::Relaxed,
                    &guard.0,
                )
                .is_ok()
        }

        /// Installs `t` in place of the current segment; the old one is dropped once no guard
        /// can still read it.
        pub(crate) fn replace(&self, t: T)
        where
            T: 'static,
        {
            // Release: see `load`.
            let (old, _) = self.0.swap(
                (Some(sdd::Owned::new(t)), sdd::Tag::None),
                Ordering::Release,
            );
            drop(old);
        }
    }
}

#[cfg(hotlimit_loom)]
mod imp {
    use crate::sync::Arc;

    /// Under loom, readers hold the segment's `Arc`: nothing to enter.
    pub(crate) struct Guard;

    impl Guard {
        pub(crate) fn new() -> Self {
            Guard
        }
    }

    /// A segment as read from the directory: its `Arc`, under loom.
    pub(crate) type SegRef<'g, T> = Arc<T>;

    /// One directory entry: empty until its segment's first key.
    // A lock, under loom only (`--cfg hotlimit_loom`, never in a build of the crate): it stands
    // in for `sdd`'s one-atomic swap, which loom cannot model; admission paths hold no lock.
    pub(crate) struct Cell<T>(loom::sync::Mutex<Option<Arc<T>>>);

    impl<T> Cell<T> {
        pub(crate) fn empty() -> Self {
            Cell(loom::sync::Mutex::new(None))
        }

        pub(crate) fn load(&self, _: &Guard) -> Option<SegRef<'_, T>> {
            self.0.lock().unwrap().clone()
        }

        pub(crate) fn init(&self, t: T, _: &Guard) -> bool {
            let mut cell = self.0.lock().unwrap();
            if cell.is_some() {
                return false;
            }
            *cell = Some(Arc::new(t));
            true
        }

        pub(crate) fn replace(&self, t: T) {
            *self.0.lock().unwrap() = Some(Arc::new(t));
        }
    }
}

pub(crate) use imp::{Cell, Guard, SegRef};

/// A slot's key: written once, by the one thread that claimed the slot, and read by threads
/// that learned from the slot's word that it was written. No flag of its own: a `u64` key
/// takes 8 bytes, so a `Gcra` slot is 16 (a `OnceLock` key made it 24, and 24-byte slots
/// straddle cache lines), and whether the key is there is the word's kind
/// ([`written`]). Under loom the cell is loom's, which checks that every read happens after
/// the write.
///
/// A `String` table's cells hold [`StrKey`]s in the bytes of a `String` ([`is_string`]: a
/// short key's bytes sit in the slot); every other table's hold `K`. Nothing outside this file
/// reads a cell as either: a probe asks [`matches`](KeyCell::matches), a rebuild
/// [`duplicate`](KeyCell::duplicate)s, and keys go in as [`Stored`].
///
/// The protocol that makes the reads sound (the table's module docs): a slot's key is written
/// by the winner of the slot's claim (CAS FREE → CLAIMED), right after it and before any other
/// value is stored in the word, or by the builder of a segment no other thread sees yet; it
/// never changes until the segment is dropped. A reader reads it only after loading, with
/// Acquire, a word whose kind is live, MOVING or INDIRECT: such a value is the creator's
/// commit (a Release CAS after its write) or a later RMW of the same word (in the commit's
/// release sequence), or was written before the segment's publication, which the reader
/// loaded with Acquire; either way the write happens before the read.
pub(crate) struct KeyCell<K>(Inner<K>);

#[cfg(not(hotlimit_loom))]
type Inner<K> = core::cell::UnsafeCell<core::mem::MaybeUninit<K>>;
#[cfg(hotlimit_loom)]
type Inner<K> = loom::cell::UnsafeCell<core::mem::MaybeUninit<K>>;

// SAFETY: a `KeyCell` hands out `&K` to many threads (so `K: Sync`) and a key written on one
// thread may be dropped on another (so `K: Send`), as `OnceLock<K>` does; the protocol above
// orders the one write before every read.
unsafe impl<K: Send + Sync> Sync for KeyCell<K> {}
// SAFETY: as above; moving the cell moves the key.
unsafe impl<K: Send> Send for KeyCell<K> {}

/// Whether a slot whose word's value bits are `v` has its key written and published to a
/// reader that loaded the word with Acquire: live, MOVING or INDIRECT (not FREE, SEALED or
/// CLAIMED, which its creator may still be writing; DEAD slots are passed unread).
#[inline(always)]
pub(crate) fn written(v: u64) -> bool {
    use super::super::word::inline;
    v <= inline::MAX_TAT || v == inline::MOVING || v == inline::INDIRECT
}

/// Whether a slot whose word's value bits are `v` holds a key at all, for its segment's drop
/// (no other thread left): every slot claimed since the segment was built got its key right
/// after its claim, whatever became of it.
#[inline(always)]
pub(crate) fn holds_key(v: u64) -> bool {
    use super::super::word::inline;
    v != inline::FREE && v != inline::SEALED
}

impl<K> KeyCell<K> {
    /// An empty cell.
    pub(crate) fn new() -> Self {
        KeyCell(Inner::new(core::mem::MaybeUninit::uninit()))
    }

    /// Writes the key.
    ///
    /// # Safety
    ///
    /// The caller is the slot's one writer: it won the slot's claim (CAS FREE → CLAIMED), or
    /// builds a segment no other thread can read yet; and it writes before storing any other
    /// value in the slot's word.
    #[inline(always)]
    pub(crate) unsafe fn write(&self, key: Stored<K>) {
        #[cfg(not(hotlimit_loom))]
        // SAFETY: the caller's contract: no other thread reads or writes the cell now.
        unsafe {
            key.write_to(self.0.get());
        }
        #[cfg(hotlimit_loom)]
        self.0.with_mut(|p| {
            // SAFETY: as above; loom checks it.
            unsafe { key.write_to(p) }
        });
    }

    /// Whether the key is `key`.
    ///
    /// # Safety
    ///
    /// The key was written, and its write happens before this read: the caller loaded the
    /// slot's word with Acquire and its kind is [`written`] (or the segment is the caller's
    /// own, or every other thread that used it has been joined).
    #[inline(always)]
    pub(crate) unsafe fn matches<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q> + 'static,
        Q: Hash + Eq + ?Sized,
    {
        #[cfg(not(hotlimit_loom))]
        // SAFETY: the caller's contract: written once, before, and never written again while
        // the cell lives.
        unsafe {
            matches_at(self.0.get(), key)
        }
        #[cfg(hotlimit_loom)]
        self.0.with(|p| {
            // SAFETY: as above; loom checks the order of the write and this read.
            unsafe { matches_at(p, key) }
        })
    }

    /// Whether the key is a `String` whose bytes are `bytes` (false in any other table).
    ///
    /// # Safety
    ///
    /// As for [`matches`](Self::matches).
    #[inline(always)]
    pub(crate) unsafe fn is_bytes(&self, bytes: &[u8]) -> bool
    where
        K: 'static,
    {
        #[cfg(not(hotlimit_loom))]
        // SAFETY: as for `matches`.
        unsafe {
            is_bytes_at(self.0.get(), bytes)
        }
        #[cfg(hotlimit_loom)]
        self.0.with(|p| {
            // SAFETY: as above; loom checks the order of the write and this read.
            unsafe { is_bytes_at(p, bytes) }
        })
    }

    /// A copy of the key, for a rebuild to place in a new segment.
    ///
    /// # Safety
    ///
    /// As for [`matches`](Self::matches).
    pub(crate) unsafe fn duplicate(&self) -> Stored<K>
    where
        K: Clone + 'static,
    {
        #[cfg(not(hotlimit_loom))]
        // SAFETY: as for `matches`.
        unsafe {
            duplicate_at(self.0.get())
        }
        #[cfg(hotlimit_loom)]
        self.0.with(|p| {
            // SAFETY: as above; loom checks the order of the write and this read.
            unsafe { duplicate_at(p) }
        })
    }

    /// Drops the key; `strs`: the segment's keys are `String`s, kept as [`StrKey`]s
    /// ([`is_string`], recorded when the segment was made: a segment's drop cannot ask).
    ///
    /// # Safety
    ///
    /// The key was written ([`holds_key`]) and is not dropped twice.
    pub(crate) unsafe fn drop_key(&mut self, strs: bool) {
        #[cfg(not(hotlimit_loom))]
        // SAFETY: the caller's contract; `&mut self`: no reader left.
        unsafe {
            drop_at(self.0.get_mut(), strs);
        }
        #[cfg(hotlimit_loom)]
        self.0.with_mut(|p| {
            // SAFETY: as above.
            unsafe { drop_at(p, strs) }
        });
    }
}

/// Whether `K` is `String`: its keys are kept as [`StrKey`]s (a short key's bytes in the slot).
/// Both sides are constants: the compiler keeps one branch.
#[inline(always)]
pub(crate) fn is_string<K: 'static>() -> bool {
    TypeId::of::<K>() == TypeId::of::<String>()
}

/// A key as a slot keeps it: the key itself, or a `String` key as a [`StrKey`]. Made only by
/// [`Stored::new`] and [`KeyCell::duplicate`], so that a [`StrKey`] is only ever stored for
/// `K = String`, whose bytes it fits.
pub(crate) struct Stored<K>(Form<K>);

enum Form<K> {
    Key(K),
    Str(StrKey),
}

impl<K: 'static> Stored<K> {
    /// `key` as a slot keeps it. Made before a claim, so that a short `String`'s free (or a
    /// `Clone` that blocks) holds no slot.
    pub(crate) fn new(key: K) -> Self {
        let mut key = Some(key);
        let string = (&mut key as &mut dyn Any)
            .downcast_mut::<Option<String>>()
            .and_then(Option::take);
        match (string, key) {
            (Some(s), _) => Stored(Form::Str(StrKey::new(s))),
            (None, Some(k)) => Stored(Form::Key(k)),
            (None, None) => unreachable!("the key is taken out only as a String"),
        }
    }

    /// Whether this is a `String` key too long for its slot (its bytes on the heap).
    pub(crate) fn is_boxed(&self) -> bool {
        matches!(&self.0, Form::Str(s) if !s.is_inline())
    }

    /// The key's hash under `hasher`: the one a lookup of it computes (a `String`'s `Hash` is
    /// its `str`'s).
    pub(crate) fn hash_with<S: BuildHasher>(&self, hasher: &S) -> u64
    where
        K: Hash,
    {
        match &self.0 {
            Form::Key(k) => hasher.hash_one(k),
            Form::Str(s) => hasher.hash_one(s.as_str()),
        }
    }
}

impl<K> Stored<K> {
    /// Writes the key into `p`.
    ///
    /// # Safety
    ///
    /// `p` is valid for writes and nobody else reads or writes it now.
    #[inline(always)]
    unsafe fn write_to(self, p: *mut MaybeUninit<K>) {
        match self.0 {
            // SAFETY: the caller's contract.
            Form::Key(k) => unsafe {
                (*p).write(k);
            },
            // SAFETY: the caller's contract, and a `Form::Str` exists only for `K = String`
            // (`Stored::new`, `duplicate_at`), whose size and alignment `StrKey` fits (asserted
            // in `str_key`).
            Form::Str(s) => unsafe { p.cast::<StrKey>().write(s) },
        }
    }
}

/// [`KeyCell::matches`] on the cell's contents.
///
/// # Safety
///
/// `p`'s key was written and its write happens before this read.
#[inline(always)]
unsafe fn matches_at<K, Q>(p: *const MaybeUninit<K>, key: &Q) -> bool
where
    K: Borrow<Q> + 'static,
    Q: Hash + Eq + ?Sized,
{
    if is_string::<K>() {
        // SAFETY: the caller's contract; a `String` table's cells hold `StrKey`s (`write_to`).
        let s = unsafe { &*p.cast::<StrKey>() };
        s.matches(key)
    } else {
        // SAFETY: the caller's contract; any other table's cells hold `K`s.
        let k = unsafe { (*p).assume_init_ref() };
        k.borrow() == key
    }
}

/// [`KeyCell::is_bytes`] on the cell's contents.
///
/// # Safety
///
/// As for [`matches_at`].
#[inline(always)]
unsafe fn is_bytes_at<K: 'static>(p: *const MaybeUninit<K>, bytes: &[u8]) -> bool {
    // SAFETY: the caller's contract; a `String` table's cells hold `StrKey`s (`write_to`).
    is_string::<K>() && unsafe { (*p.cast::<StrKey>()).is(bytes) }
}

/// What a probe compares a slot's key with.
pub(crate) trait KeyQuery<K> {
    /// Whether `cell` holds this key.
    ///
    /// # Safety
    ///
    /// As for [`KeyCell::matches`].
    unsafe fn is_in(&self, cell: &KeyCell<K>) -> bool;
}

/// A key as the caller borrowed it: compared by [`KeyCell::matches`].
pub(crate) struct ByKey<'q, Q: ?Sized>(pub(crate) &'q Q);

impl<K, Q> KeyQuery<K> for ByKey<'_, Q>
where
    K: Borrow<Q> + 'static,
    Q: Hash + Eq + ?Sized,
{
    #[inline(always)]
    unsafe fn is_in(&self, cell: &KeyCell<K>) -> bool {
        // SAFETY: the caller's contract.
        unsafe { cell.matches(self.0) }
    }
}

/// A `String` key's bytes as a lookup captured them from its hash stream: compared by
/// [`KeyCell::is_bytes`] (in a `String` table only; it matches no key of another).
impl<K: 'static> KeyQuery<K> for Captured {
    #[inline(always)]
    unsafe fn is_in(&self, cell: &KeyCell<K>) -> bool {
        // SAFETY: the caller's contract.
        unsafe { cell.is_bytes(self.bytes()) }
    }
}

/// [`KeyCell::duplicate`] on the cell's contents.
///
/// # Safety
///
/// As for [`matches_at`].
unsafe fn duplicate_at<K: Clone + 'static>(p: *const MaybeUninit<K>) -> Stored<K> {
    if is_string::<K>() {
        // SAFETY: as in `matches_at`.
        let s = unsafe { &*p.cast::<StrKey>() };
        Stored(Form::Str(s.clone()))
    } else {
        // SAFETY: as in `matches_at`.
        let k = unsafe { (*p).assume_init_ref() };
        Stored(Form::Key(k.clone()))
    }
}

/// [`KeyCell::drop_key`] on the cell's contents.
///
/// # Safety
///
/// `p`'s key was written, nobody else can reach it, and it is not dropped twice; `strs` is
/// [`is_string`] of `K`.
unsafe fn drop_at<K>(p: *mut MaybeUninit<K>, strs: bool) {
    if strs {
        // SAFETY: the caller's contract; a `String` table's cells hold `StrKey`s.
        unsafe { core::ptr::drop_in_place(p.cast::<StrKey>()) }
    } else {
        // SAFETY: the caller's contract.
        unsafe { (*p).assume_init_drop() }
    }
}

/// A segment's slots: a slice aligned so that slots of 32 bytes (a `String` or `ShortKey` key
/// beside a `Gcra` word, a `u64` beside a `GcraPair` word) never straddle two cache lines. A `Box<[T]>` is only aligned to `T` (8 or 16), and the
/// allocator's 16-byte alignment put every other 32-byte slot of half the segments across a
/// line: two misses for one lookup (callgrind, `prof hotlimit-string-hot 100000 seq`: 1.52
/// last-level misses a call).
pub(crate) struct Lines<T> {
    ptr: NonNull<T>,
    /// The slots initialised (all of them, but while `try_new` makes them).
    len: usize,
    /// The slots allocated.
    cap: usize,
}

// SAFETY: `Lines<T>` owns its `T`s as a `Box<[T]>` does.
unsafe impl<T: Send> Send for Lines<T> {}
// SAFETY: as above: `&Lines<T>` hands out `&T` only.
unsafe impl<T: Sync> Sync for Lines<T> {}

impl<T> Lines<T> {
    /// The alignment of the first slot: the slot's size rounded up to a power of two, at most
    /// a cache line (64 bytes). A slot of 16 or 32 bytes aligned to its size never straddles
    /// two lines (and 16 is what the allocator gives anyway: no over-aligned allocation for
    /// a `u64` key's slots); a larger one starts a line.
    const ALIGN: usize = {
        let size = core::mem::size_of::<T>().next_power_of_two();
        let align = core::mem::align_of::<T>();
        let want = if size < 64 { size } else { 64 };
        if want > align {
            want
        } else {
            align
        }
    };

    /// The allocation of `len` slots (its size is the slice's, its alignment [`Self::ALIGN`]).
    fn layout(len: usize) -> Layout {
        match Layout::array::<T>(len).and_then(|l| l.align_to(Self::ALIGN)) {
            Ok(layout) => layout,
            // As `Vec` does for a length whose bytes overflow `isize`.
            Err(_) => panic!("a segment of {len} slots overflows the address space"),
        }
    }

    /// `len` slots made by `make`, or `None` if `make` returns `None` (the slots made so far
    /// dropped, the memory freed).
    pub(crate) fn try_new(len: usize, mut make: impl FnMut() -> Option<T>) -> Option<Self> {
        let layout = Self::layout(len);
        let ptr = if layout.size() == 0 {
            NonNull::dangling()
        } else {
            // SAFETY: the layout's size is not zero.
            let raw = unsafe { alloc::alloc::alloc(layout) }.cast::<T>();
            match NonNull::new(raw) {
                Some(ptr) => ptr,
                None => alloc::alloc::handle_alloc_error(layout),
            }
        };
        // Owns the slots made so far: a `None` (or a panic in `make`) drops them and frees the
        // memory.
        let mut lines = Lines {
            ptr,
            len: 0,
            cap: len,
        };
        for i in 0..len {
            let slot = make()?;
            // SAFETY: `i < len`, inside the allocation; slot `i` is not initialised yet, and
            // `lines.len` counts it only once written.
            unsafe { ptr.as_ptr().add(i).write(slot) };
            lines.len = i + 1;
        }
        Some(lines)
    }
}

impl<T> Deref for Lines<T> {
    type Target = [T];

    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: `len` slots from `ptr` are initialised (`try_new`) and owned by `self`.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> DerefMut for Lines<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` is the only access.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Drop for Lines<T> {
    fn drop(&mut self) {
        // The allocation's layout, as `try_new` made it.
        let layout = Self::layout(self.cap);
        // SAFETY: the first `len` slots are initialised and owned by `self`, and dropped once.
        unsafe {
            core::ptr::drop_in_place(core::ptr::slice_from_raw_parts_mut(
                self.ptr.as_ptr(),
                self.len,
            ));
        }
        if layout.size() != 0 {
            // SAFETY: allocated by `try_new` with this layout.
            unsafe { alloc::alloc::dealloc(self.ptr.as_ptr().cast(), layout) };
        }
    }
}

#[cfg(all(test, not(hotlimit_loom)))]
mod tests {
    use super::Lines;
    use core::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn no_slot_straddles_a_cache_line() {
        fn check<T>(lines: &Lines<T>) {
            let size = core::mem::size_of::<T>();
            if size > 64 {
                // Larger than a line: the first starts one.
                assert_eq!(lines.as_ptr() as usize % 64, 0);
                return;
            }
            for slot in lines.iter() {
                let at = slot as *const T as usize;
                assert_eq!(
                    at / 64,
                    (at + size - 1) / 64,
                    "a {size}-byte slot across a line"
                );
            }
        }
        for len in [1, 2, 3, 64, 1000] {
            let a = Lines::try_new(len, || Some([0u64; 4])).unwrap();
            assert_eq!(a.len(), len);
            check(&a);
            check(&Lines::try_new(len, || Some([0u64; 2])).unwrap());
            check(&Lines::try_new(len, || Some([0u64; 8])).unwrap());
            check(&Lines::try_new(len, || Some([0u64; 12])).unwrap());
            let b = Lines::try_new(len, || Some(7u8)).unwrap();
            assert!(b.iter().all(|&x| x == 7));
        }
        let empty = Lines::try_new(0, || Some(1u64)).unwrap();
        assert!(empty.is_empty());
        let zst = Lines::try_new(5, || Some(())).unwrap();
        assert_eq!(zst.len(), 5);
    }

    /// A slot made and dropped: counted.
    struct Counted<'a>(&'a AtomicUsize);

    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn every_slot_made_is_dropped_once_even_when_making_stops_part_way() {
        let dropped = AtomicUsize::new(0);
        let mut lines = Lines::try_new(10, || Some(Counted(&dropped))).unwrap();
        lines[3] = Counted(&dropped); // the old slot 3 dropped by the assignment
        drop(lines);
        assert_eq!(dropped.load(Ordering::Relaxed), 11);

        let dropped = AtomicUsize::new(0);
        let mut made = 0;
        let none = Lines::try_new(10, || {
            made += 1;
            (made <= 4).then(|| Counted(&dropped))
        });
        assert!(none.is_none());
        assert_eq!(dropped.load(Ordering::Relaxed), 4);
    }
}
