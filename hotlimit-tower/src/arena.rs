//! Header values without a heap allocation per response.
//!
//! A `HeaderValue` owns its bytes (a [`Bytes`]). The layer writes the per-response
//! `RateLimit` text into a per-thread [`BytesMut`] chunk and hands out slices of it: each slice
//! is a reference count on the chunk, not an allocation. Once every response that took a
//! slice has been sent and dropped, the chunk is unique again and is reused from its start
//! (`BytesMut::try_reclaim`); only while some response still holds a slice of a full chunk
//! does the thread start a new one (one allocation per 16 KiB of header text at most, and
//! none once the responses keep pace).
//!
//! Each thread also keeps the last value it made for a one-policy layer, under the numbers it
//! says (the layer, `r` and `t`): the next response with the same numbers clones it (a
//! reference count on this thread's chunk) instead of writing and checking the text again.
//! Clients at rest between requests all get the same `r` and `t`, so on a server with many
//! clients most responses repeat the one before.

use std::cell::RefCell;

use bytes::{Bytes, BytesMut};
use http::HeaderValue;

use crate::buf::Buf;

/// The size of a thread's chunk.
const CHUNK: usize = 16 * 1024;

/// What a memoized value says: its layer's id (never 0), `r`, and `t` (`u64::MAX`: none).
pub(crate) type MemoKey = [u64; 3];

/// A thread's chunk, and the last memoized value.
struct Local {
    /// `None` until the thread's first value.
    chunk: Option<BytesMut>,
    /// The key of `memo` (all 0: none).
    memo_key: MemoKey,
    memo: Option<HeaderValue>,
}

thread_local! {
    static LOCAL: RefCell<Local> = const {
        RefCell::new(Local {
            chunk: None,
            memo_key: [0; 3],
            memo: None,
        })
    };
}

impl Local {
    /// `text` (visible ASCII) as a header value, its bytes in the chunk.
    #[inline]
    fn value(&mut self, text: &[u8]) -> HeaderValue {
        let chunk = self.chunk.get_or_insert_with(BytesMut::new);
        if chunk.capacity() - chunk.len() < text.len() && !chunk.try_reclaim(text.len()) {
            // Some response still holds a slice of the old chunk: it lives on with it.
            *chunk = BytesMut::with_capacity(CHUNK.max(text.len()));
        }
        chunk.extend_from_slice(text);
        let bytes: Bytes = chunk.split().freeze();
        // The layer writes visible ASCII only: this never fails.
        HeaderValue::from_maybe_shared(bytes).unwrap_or_else(|_| HeaderValue::from_static(""))
    }
}

/// `text` (visible ASCII) as a header value, its bytes in the thread's chunk.
#[inline]
pub(crate) fn value(text: &[u8]) -> HeaderValue {
    LOCAL.with(|local| local.borrow_mut().value(text))
}

/// The value `key` says: the thread's last memoized one if it has this key, else the text
/// `write` writes (which must depend on nothing but `key`), memoized.
#[inline]
pub(crate) fn memoized(key: MemoKey, write: impl FnOnce(&mut Buf)) -> HeaderValue {
    LOCAL.with(|local| {
        let mut local = local.borrow_mut();
        if local.memo_key == key {
            if let Some(v) = &local.memo {
                return v.clone();
            }
        }
        let mut buf = Buf::new();
        write(&mut buf);
        let v = local.value(buf.as_bytes());
        local.memo_key = key;
        local.memo = Some(v.clone());
        v
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_what_was_written_and_chunks_are_reused() {
        let a = value(b"\"a\";r=1");
        let b = value(b"\"b\";r=22;t=3");
        assert_eq!(
            (a.to_str().unwrap(), b.to_str().unwrap()),
            ("\"a\";r=1", "\"b\";r=22;t=3")
        );
        drop((a, b));
        // Far more text than a chunk, each value dropped at once: the chunk is reclaimed.
        for i in 0..10_000u32 {
            let v = value(format!("\"p\";r={i}").as_bytes());
            assert!(v.to_str().unwrap().ends_with(&i.to_string()));
        }
        // A value longer than a chunk.
        let long = "x".repeat(CHUNK * 2);
        assert_eq!(value(long.as_bytes()).len(), CHUNK * 2);
    }

    #[test]
    fn a_memoized_value_is_written_once_per_key() {
        let mut writes = 0;
        let mut get = |key: MemoKey| {
            memoized(key, |b| {
                writes += 1;
                b.push(b"\"p\";r=");
                b.push_u64(key[1]);
            })
        };
        assert_eq!(get([7, 3, 1]), "\"p\";r=3");
        assert_eq!(get([7, 3, 1]), "\"p\";r=3");
        assert_eq!(get([7, 4, 1]), "\"p\";r=4");
        // Another layer with the same numbers is another key.
        assert_eq!(get([8, 4, 1]), "\"p\";r=4");
        assert_eq!(writes, 3);
    }
}
