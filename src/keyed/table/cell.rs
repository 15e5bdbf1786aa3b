//! The directory cell of [`Table`](super::Table): one epoch-protected pointer per segment, so
//! that a rebuild can replace a segment while readers still hold the old one; empty until the
//! segment's first key (a table's memory grows with its keys, a segment at a time).
//!
//! Normally `sdd`'s `AtomicOwned` under an `sdd::Guard` (a thread-local epoch: entering and
//! leaving it is one `lock xchg` and one store, no shared write; a replaced segment is dropped
//! once no guard that could have read it is left). Under `--cfg hotlimit_loom` a loom
//! `Mutex<Arc<T>>` stands in for it: the models check the slot words and the order of a
//! rebuild's steps around its publication (every store to the cell is one lock, as the real
//! swap is one atomic), not `sdd`'s reclamation, which is `sdd`'s own, tested by its authors.

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

/// A slot's key: written once, by the creator that claimed the slot. `std`'s `OnceLock`
/// (its completion is a Release store, its `get` an Acquire load); under loom the same with
/// that flag a loom atomic, so that the models schedule around the key's publication.
#[cfg(not(hotlimit_loom))]
pub(crate) type KeyCell<K> = std::sync::OnceLock<K>;

/// A slot's key under loom: a `OnceLock` published by a loom flag.
#[cfg(hotlimit_loom)]
pub(crate) struct KeyCell<K> {
    value: std::sync::OnceLock<K>,
    published: loom::sync::atomic::AtomicBool,
}

#[cfg(hotlimit_loom)]
impl<K> KeyCell<K> {
    pub(crate) fn new() -> Self {
        KeyCell {
            value: std::sync::OnceLock::new(),
            published: loom::sync::atomic::AtomicBool::new(false),
        }
    }

    pub(crate) fn set(&self, key: K) -> Result<(), K> {
        self.value.set(key)?;
        // Release: as `OnceLock`'s completion.
        self.published.store(true, crate::sync::Ordering::Release);
        Ok(())
    }

    pub(crate) fn get(&self) -> Option<&K> {
        // Acquire: as `OnceLock::get`.
        if self.published.load(crate::sync::Ordering::Acquire) {
            self.value.get()
        } else {
            None
        }
    }
}
