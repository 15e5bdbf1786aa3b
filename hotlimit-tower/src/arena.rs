//! Header values without a heap allocation per response.
//!
//! A `HeaderValue` owns its bytes (a [`Bytes`]). The layer writes the per-response
//! `RateLimit` text into a per-thread [`BytesMut`] chunk and hands out slices of it: each slice
//! is a reference count on the chunk, not an allocation. Once every response that took a
//! slice has been sent and dropped, the chunk is unique again and is reused from its start
//! (`BytesMut::try_reclaim`); only while some response still holds a slice of a full chunk
//! does the thread start a new one (one allocation per 16 KiB of header text at most, and
//! none once the responses keep pace). The `RateLimit-Policy` value, the same on every
//! response of a layer, is copied once per thread for the first layer the thread serves: each
//! response clones that copy (a reference count no other core touches); another layer's
//! responses clone the layer's own value (one reference count for all threads).

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{Bytes, BytesMut};
use http::HeaderValue;

/// The size of a thread's chunk.
const CHUNK: usize = 16 * 1024;

/// A thread's chunk, and its copy of one layer's `RateLimit-Policy` value.
struct Local {
    chunk: BytesMut,
    /// The id of the layer whose value `policy` is (0: none yet).
    policy_id: u64,
    policy: Option<HeaderValue>,
}

thread_local! {
    static LOCAL: RefCell<Local> = RefCell::new(Local {
        chunk: BytesMut::new(),
        policy_id: 0,
        policy: None,
    });
}

/// `text` (visible ASCII) as a header value, its bytes in the thread's chunk.
#[inline]
pub(crate) fn value(text: &[u8]) -> HeaderValue {
    let bytes = LOCAL.with(|local| {
        let chunk = &mut local.borrow_mut().chunk;
        if chunk.capacity() - chunk.len() < text.len() && !chunk.try_reclaim(text.len()) {
            // Some response still holds a slice of the old chunk: it lives on with it.
            *chunk = BytesMut::with_capacity(CHUNK.max(text.len()));
        }
        chunk.extend_from_slice(text);
        chunk.split().freeze()
    });
    // The layer writes visible ASCII only: this never fails.
    HeaderValue::from_maybe_shared(bytes).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// A process-unique id for a layer's `RateLimit-Policy` value (never 0).
pub(crate) fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    // Relaxed: only uniqueness matters (the counter's own atomicity).
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The `RateLimit-Policy` value `shared` of the layer `id`: the thread's own copy if the
/// thread keeps this layer's (the first layer it serves), else `shared` itself.
#[inline]
pub(crate) fn policy_value(id: u64, shared: &HeaderValue) -> HeaderValue {
    LOCAL.with(|local| {
        let mut local = local.borrow_mut();
        if local.policy_id == id {
            if let Some(v) = &local.policy {
                return v.clone();
            }
        }
        if local.policy_id == 0 {
            // This thread's own copy: its reference count stays on this core.
            let own = HeaderValue::from_maybe_shared(Bytes::copy_from_slice(shared.as_bytes()))
                .unwrap_or_else(|_| shared.clone());
            local.policy_id = id;
            local.policy = Some(own.clone());
            return own;
        }
        shared.clone()
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
    fn the_policy_value_is_the_layers_own() {
        let (x, y) = (next_id(), next_id());
        let tx = HeaderValue::from_static("\"x\";q=1;w=1");
        let ty = HeaderValue::from_static("\"y\";q=2;w=1");
        std::thread::spawn(move || {
            // The thread's first layer is copied, the next one shared: both read right.
            assert_eq!(policy_value(x, &tx), tx);
            assert_eq!(policy_value(y, &ty), ty);
            assert_eq!(policy_value(x, &tx), tx);
        })
        .join()
        .unwrap();
    }
}
