//! Sequential reference models: each guarantee written as plainly as possible, in u128 so
//! that nothing overflows, for property tests to compare the real limiters against.
#![allow(dead_code)]

pub(crate) mod gcra;
pub(crate) mod gcra_pair;
pub(crate) mod int_keyed;
pub(crate) mod keyed_table;
pub(crate) mod log;
pub(crate) mod multi_window;
pub(crate) mod reservation;
pub(crate) mod sharded;
pub(crate) mod trace;
pub(crate) mod window;
