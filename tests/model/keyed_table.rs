//! Not a model: the keyed table the keyed property tests build, on a `ManualClock`.

use hotlimit::{DefaultClock, Keyed, KeyedBuilder, KeyedState, ManualClock, WhenFull};

/// `builder` with room for `capacity` keys and `when_full`, on a fresh `ManualClock`.
pub(crate) fn keyed_table<L: KeyedState>(
    builder: KeyedBuilder<u64, L, DefaultClock>,
    capacity: usize,
    when_full: WhenFull,
) -> Keyed<u64, L, ManualClock> {
    builder
        .capacity(capacity)
        .when_full(when_full)
        .clock(ManualClock::new())
        .build()
        .unwrap()
}
