//! The `flood` mode: the issue-26 probe replayed on a `ManualClock`. Capacity 1,000, GCRA at
//! 10 per second per key, 13,000 new keys a second for 20 s (260,000 one-shot keys, each asking
//! once), and five steady clients asking every 500 ms (a fifth of their rate): either known
//! before the flood (`established`, asking from 0 s) or first seen in the middle of it (`late`,
//! from 5 s). Prints how many of the steady clients' requests were served, and how many of the
//! flood's keys were admitted.

use hotlimit::{Gcra, Keyed, ManualClock, Rate};

/// One replay; `late`: the steady clients start at 5 s.
fn replay(late: bool) -> (u64, u64, u64, u64) {
    let k: Keyed<u64, Gcra, ManualClock> = Keyed::gcra(Rate::per_second(10).unwrap())
        .capacity(1_000)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let steady: Vec<u64> = (0..5).map(|i| (1 << 40) + i).collect();
    let flood = 13_000 * 20;
    let step = 1_000_000_000 / 13_000;
    let mut next = if late { 5_000_000_000 } else { 0 };
    let (mut served, mut asked, mut admitted) = (0, 0, 0);
    for f in 0..flood {
        let now = f * step;
        if now >= next {
            for s in &steady {
                asked += 1;
                served += u64::from(k.try_acquire_at(s, now).is_ok());
            }
            next += 500_000_000;
        }
        admitted += u64::from(k.try_acquire_at(&f, now).is_ok());
    }
    (served, asked, admitted, flood)
}

pub(crate) fn flood_mode() {
    println!("| steady clients | served | flood keys admitted |");
    println!("|---|---:|---:|");
    for (late, label) in [
        (false, "known before the flood"),
        (true, "first seen at 5 s"),
    ] {
        let (served, asked, admitted, flood) = replay(late);
        println!("| {label} | {served} of {asked} | {admitted} of {flood} |");
    }
}
