//! The one place this crate's atomics come from, as in the core: `std`'s, and crossbeam's
//! backoff for CAS loops. The lease word (`lease/word.rs`) imports only from here, so that the
//! loom model in `loom-tests/tests/lease_word.rs` compiles that same file against loom's
//! atomics (its own `sync` module) and checks the real protocol.

pub(crate) use crossbeam_utils::Backoff;
pub(crate) use std::sync::atomic::{AtomicU64, Ordering};
