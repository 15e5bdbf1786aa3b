//! Loom models of hotlimit's limiters live in `tests/`, one file per limiter. They compile
//! only under `--cfg hotlimit_loom`:
//!
//! ```text
//! RUSTFLAGS="--cfg hotlimit_loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
//!     cargo test -p loom-tests --release
//! ```
