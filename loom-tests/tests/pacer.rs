//! Pacer under loom: a slot request racing a live rate change gets a slot of the old rate or
//! of the new one, never of a mix. The pacer's requests are its `Gcra`'s reservations and its
//! change is `Gcra::set_rate_at`, so what keeps them consistent is `Gcra`'s (the guide, "What
//! makes the read consistent"); the planted `ReinstallingRateChange` (a change that gives the
//! word back the value a request loaded) must fail the model.
#![cfg(hotlimit_loom)]

use std::time::Duration;

use hotlimit::__planted_pacer::ReinstallingRateChange;
use hotlimit::{ManualClock, Pacer, Rate};
use loom::sync::Arc;
use loom::thread;

/// The ABA case through the pacer. I = 10 ns with 3 catch-up slots (b = 4, τ = 40): the
/// schedule starts at TAT 30, the first slot (at 0) is 0 and leaves the TAT at 40. A second
/// slot request at 0 races a change to I' = 5 ns (b = 4, τ' = 20), whose carry rule alone
/// gives the TAT 20, raised to the old 40: the request may have loaded 40 before the change
/// and read a parameter after it. Sequentially the slot is 50 − 40 = 10 (before the change)
/// or, after it, (41 + 5) − 20 = 26 with the real rule (which installs one past every value
/// the word held), (40 + 5) − 20 = 25 with the planted one. A mix says 30 (I with τ') or 5
/// (I' with τ). The real request's grant CAS expects the TAT it loaded, which the real change
/// never gives back, so it cannot stand on a mix. `twin`: the planted change, which loom must
/// catch.
fn slot_racing_a_change(twin: bool) {
    loom::model(move || {
        let p = Arc::new(
            Pacer::builder(Rate::new(1, Duration::from_nanos(10)).unwrap())
                .catch_up(3)
                .clock(ManualClock::new())
                .build()
                .unwrap(),
        );
        assert_eq!(p.next_slot_at(0).unwrap(), 0);
        let p2 = p.clone();
        let request = thread::spawn(move || p2.next_slot_at(0).ok());
        let new = Rate::new(1, Duration::from_nanos(5)).unwrap();
        if twin {
            ReinstallingRateChange(&p).set_rate_at(new, 0);
        } else {
            p.set_rate_at(new, 0).unwrap();
        }
        let slot = request.join().unwrap();
        let sequential = if twin { [10, 25] } else { [10, 26] };
        assert!(
            slot.is_some_and(|s| sequential.contains(&s)),
            "mixed parameters: slot {slot:?}; sequential: {sequential:?}"
        );
        assert_eq!(p.interval(), Duration::from_nanos(5));
    });
}

#[test]
fn a_slot_racing_a_change_is_of_one_rate() {
    slot_racing_a_change(false);
}

#[test]
#[should_panic(expected = "mixed parameters")]
fn a_change_reinstalling_the_loaded_tat_is_caught() {
    slot_racing_a_change(true);
}
