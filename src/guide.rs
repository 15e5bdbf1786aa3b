//! The long form: choosing a limiter, and the proofs of each guarantee, one page a topic.
//!
//! Start with [`choosing`] (which limiter for which job, each with an example, and hotlimit
//! beside the other Rust rate limiters). Each other page proves one limiter's guarantee, or one
//! mechanism several share, and says what was measured on the way; read them in any order.
//!
//! | topic | what it holds |
//! |---|---|
//! | [`choosing`] | Which limiter for which job, with an example of each, and hotlimit beside the other Rust rate limiters. |
//! | [`migrating`] | Moving from governor: each common setup and its hotlimit equivalent, side by side (`tower_governor`: `hotlimit_tower::migrating`). |
//! | [`gcra`] | GCRA's bound, proved, and what one call costs. |
//! | [`contention`] | What a single-word limiter does after a lost CAS, the candidates measured, and the one chosen. |
//! | [`rate_changes`] | Changing a limiter's rate while it runs, and the bound across the change. |
//! | [`live_changes`] | What makes a request's read of its parameters consistent while a change runs, and why counted grants survive every change. |
//! | [`gcra_pair`] | Two rates in one word, all or nothing, and why not "claim, then give back" for more. |
//! | [`gcra_multi`] | Up to eight rates by snapshot swap. |
//! | [`multi_window`] | Several hard windows at once ("100 per minute AND 2,000 per hour"), all or nothing: each window's bound, proved, and what a give-back can do to other callers. |
//! | [`sliding_log`] | The exact sliding window: no over-admission under any concurrency, exact for a sequential caller. |
//! | [`key_pool`] | Handing out API keys, and the pool's bounded memory. |
//! | [`waiting`] | Blocking and async waits, reservations, and the pacer. |
//! | [`sharded`] | Sharded GCRA: why the sum of the shards keeps one GCRA's bound. |
//! | [`sliding_window`] | The bucketed sliding window's strict bound, and what time a grant is counted at. |
//! | [`count_closed`] | Buckets closed by count: the exact number of extra buckets, and the bound on false denials. |
//! | [`keyed`] | Per-key limits with bounded memory: eviction, overrides, rate changes, a flood of new keys. |
//! | [`keyed_table`] | Keyed's inline table: its slots, its segments, how keys are placed, and what each round of measurement taught. |
//! | [`int_keyed`] | IntKeyed: integer keys inline, at most one state per key, proved and loom-checked. |
//! | [`measurements`] | What the benchmarks taught: each run's conditions, the A/B runs, the candidates not kept, and the history of the figures. |
//! | [`measurements_keyed`] | How the keyed tables' figures were measured, their ranges, and what each round of measurement changed. |
//!
//! Each topic is a Markdown file, `src/guide/<topic>.md`, included by one `pub mod` below: its
//! Rust blocks are doctests (`cargo test --doc -p hotlimit guide`), and a link to a heading of
//! another page names that page's module (`tests/doc_blocks.rs` checks the heading exists).

pub mod choosing {
    #![doc = include_str!("guide/choosing.md")]
}
pub mod migrating {
    #![doc = include_str!("guide/migrating.md")]
}
pub mod gcra {
    #![doc = include_str!("guide/gcra.md")]
}
pub mod contention {
    #![doc = include_str!("guide/contention.md")]
}
pub mod rate_changes {
    #![doc = include_str!("guide/rate_changes.md")]
}
pub mod live_changes {
    #![doc = include_str!("guide/live_changes.md")]
}
pub mod gcra_pair {
    #![doc = include_str!("guide/gcra_pair.md")]
}
pub mod gcra_multi {
    #![doc = include_str!("guide/gcra_multi.md")]
}
pub mod multi_window {
    #![doc = include_str!("guide/multi_window.md")]
}
pub mod sliding_log {
    #![doc = include_str!("guide/sliding_log.md")]
}
pub mod key_pool {
    #![doc = include_str!("guide/key_pool.md")]
}
pub mod waiting {
    #![doc = include_str!("guide/waiting.md")]
}
pub mod sharded {
    #![doc = include_str!("guide/sharded.md")]
}
pub mod sliding_window {
    #![doc = include_str!("guide/sliding_window.md")]
}
pub mod count_closed {
    #![doc = include_str!("guide/count_closed.md")]
}
pub mod keyed {
    #![doc = include_str!("guide/keyed.md")]
}
pub mod keyed_table {
    #![doc = include_str!("guide/keyed_table.md")]
}
pub mod int_keyed {
    #![doc = include_str!("guide/int_keyed.md")]
}
pub mod measurements {
    #![doc = include_str!("guide/measurements.md")]
}
pub mod measurements_keyed {
    #![doc = include_str!("guide/measurements_keyed.md")]
}
