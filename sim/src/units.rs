//! Units: nanoseconds, the simulator's one unit of time, read from and written as text. The
//! one place for them, so that the trace, the run, the pictures and the tables share them
//! without importing each other.

/// Nanoseconds in one second.
pub(crate) const SECOND: u64 = 1_000_000_000;

/// Decimal seconds ("12", "0.25", "3.000000001") to nanoseconds, exactly.
pub(crate) fn parse_seconds(s: &str) -> Result<u64, String> {
    let bad = || format!("time {s:?} is not a number of seconds like 12 or 0.25");
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if whole.is_empty() && frac.is_empty() {
        return Err(bad());
    }
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(frac) {
        return Err(bad());
    }
    if frac.len() > 9 {
        return Err(format!(
            "time {s:?} has more than 9 decimals (nanoseconds are the finest unit)"
        ));
    }
    let too_big = || format!("time {s:?} is beyond 584 years");
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| too_big())?
    };
    let frac_ns: u64 = if frac.is_empty() {
        0
    } else {
        // At most 9 digits: fits, and scales to nanoseconds.
        frac.parse::<u64>().map_err(|_| bad())? * 10u64.pow(9 - frac.len() as u32)
    };
    whole
        .checked_mul(SECOND)
        .and_then(|ns| ns.checked_add(frac_ns))
        .ok_or_else(too_big)
}

/// Nanoseconds as (fractional) seconds.
pub(crate) fn seconds(ns: u64) -> f64 {
    ns as f64 / SECOND as f64
}

/// Nanoseconds as seconds with two decimals ("0.25"), for tables.
pub(crate) fn seconds_text(ns: u64) -> String {
    format!("{:.2}", seconds(ns))
}

/// "1 s", "10 min", "250 ms".
pub(crate) fn duration_text(ns: u64) -> String {
    const MINUTE: u64 = 60_000_000_000;
    if ns >= MINUTE && ns.is_multiple_of(MINUTE) {
        format!("{} min", ns / MINUTE)
    } else if ns >= 1_000_000_000 {
        format!("{} s", ns as f64 / 1e9)
    } else {
        format!("{} ms", ns as f64 / 1e6)
    }
}
