//! `Rate` as users write it: constants, the text form (`Display` and `FromStr`, which must
//! agree), and `serde` through the text form.

use std::num::NonZeroU64;
use std::time::Duration;

use hotlimit::Rate;
use proptest::prelude::*;

const SEC: u64 = 1_000_000_000;

fn rate(limit: u64, period_ns: u64) -> Rate {
    Rate::new(limit, Duration::from_nanos(period_ns)).unwrap()
}

// Compiles only if the constructors are usable in a constant.
const PER_SECOND: Rate = Rate::per_second_nz(NonZeroU64::new(5).unwrap());
const PER_MINUTE: Rate = match Rate::per_minute(100) {
    Ok(r) => r,
    Err(_) => panic!("zero"),
};
const ODD: Rate = match Rate::new(3, Duration::from_secs(20)) {
    Ok(r) => r,
    Err(_) => panic!("zero"),
};

#[test]
fn constants_equal_the_fallible_constructors() {
    assert_eq!(Ok(PER_SECOND), Rate::per_second(5));
    assert_eq!(Ok(PER_MINUTE), Rate::per_minute(100));
    assert_eq!(
        Rate::per_hour_nz(NonZeroU64::new(7).unwrap()),
        Rate::per_hour(7).unwrap()
    );
    assert_eq!(
        Rate::new_nz(
            NonZeroU64::new(3).unwrap(),
            NonZeroU64::new(20 * SEC).unwrap()
        ),
        ODD
    );
    // The largest period is a valid rate both ways.
    assert_eq!(
        Rate::new_nz(NonZeroU64::MIN, NonZeroU64::MAX),
        rate(1, u64::MAX)
    );
}

#[test]
fn display_forms() {
    let cases = [
        (rate(5, SEC), "5/s"),
        (rate(100, 60 * SEC), "100/min"),
        (rate(1_000, 3_600 * SEC), "1000/h"),
        (rate(2, 86_400 * SEC), "2/d"),
        (rate(50, 1_000_000), "50/ms"),
        (rate(1, 1_000), "1/us"),
        (rate(9, 1), "9/ns"),
        (rate(3, 20 * SEC), "3 per 20s"),
        (rate(7, 90 * SEC), "7 per 90s"),
        (rate(7, 120 * SEC), "7 per 2min"),
        (rate(1, 1_500_000_000), "1 per 1500ms"),
        (rate(4, 7 * 86_400 * SEC), "4 per 7d"),
        (rate(1, 7), "1 per 7ns"),
        (
            rate(u64::MAX, u64::MAX),
            "18446744073709551615 per 18446744073709551615ns",
        ),
    ];
    for (r, text) in cases {
        assert_eq!(r.to_string(), text);
        assert_eq!(text.parse::<Rate>(), Ok(r), "{text}");
    }
}

#[test]
fn from_str_accepts_aliases_spaces_and_case() {
    let cases = [
        ("5/s", rate(5, SEC)),
        (" 5 / s ", rate(5, SEC)),
        ("5/sec", rate(5, SEC)),
        ("5/second", rate(5, SEC)),
        ("5 per second", rate(5, SEC)),
        ("5 PER SECONDS", rate(5, SEC)),
        ("5/1s", rate(5, SEC)),
        ("5/10s", rate(5, 10 * SEC)),
        ("30/m", rate(30, 60 * SEC)),
        ("100/minute", rate(100, 60 * SEC)),
        ("3 per 20 s", rate(3, 20 * SEC)),
        ("3per20s", rate(3, 20 * SEC)),
        ("10 per 2 hours", rate(10, 7_200 * SEC)),
        ("10/hr", rate(10, 3_600 * SEC)),
        ("1/day", rate(1, 86_400 * SEC)),
        ("8/µs", rate(8, 1_000)),
        ("8/μs", rate(8, 1_000)),
        ("8/us", rate(8, 1_000)),
        ("8/nanoseconds", rate(8, 1)),
        ("2 per 250ms", rate(2, 250_000_000)),
    ];
    for (text, r) in cases {
        assert_eq!(text.parse::<Rate>(), Ok(r), "{text}");
    }
}

#[test]
fn from_str_errors_quote_the_input_and_say_what_is_wrong() {
    let cases = [
        ("", "expected LIMIT/PERIOD or LIMIT per PERIOD, e.g. 5/s, 100/min or 3 per 20s"),
        ("5", "expected LIMIT/PERIOD or LIMIT per PERIOD, e.g. 5/s, 100/min or 3 per 20s"),
        ("five/s", "the limit \"five\" is not a whole number of permits"),
        ("/s", "the limit \"\" is not a whole number of permits"),
        ("-5/s", "the limit \"-5\" is not a whole number of permits"),
        ("2.5/s", "the limit \"2.5\" is not a whole number of permits"),
        ("1_000/s", "the limit \"1_000\" is not a whole number of permits"),
        ("18446744073709551616/s", "the limit \"18446744073709551616\" is not a whole number of permits"),
        ("5/", "unknown unit \"\" (expected ns, us, ms, s, min, h or d)"),
        ("5/20", "unknown unit \"\" (expected ns, us, ms, s, min, h or d)"),
        ("5/fortnight", "unknown unit \"fortnight\" (expected ns, us, ms, s, min, h or d)"),
        ("5/1.5s", "unknown unit \".5s\" (expected ns, us, ms, s, min, h or d)"),
        ("5/99999999999999999999s", "the period's count \"99999999999999999999\" does not fit in 64 bits"),
        ("0/s", "invalid limit = 0: must be at least 1"),
        ("1 per 0s", "invalid period = 0 ns: must be at least 1 ns"),
        (
            "1 per 18446744073709551616ns",
            "the period's count \"18446744073709551616\" does not fit in 64 bits",
        ),
        (
            "1 per 584 years",
            "unknown unit \"years\" (expected ns, us, ms, s, min, h or d)",
        ),
        (
            "1 per 213504d",
            "invalid period = 18446745600000000000 ns: must fit in u64 nanoseconds (at most about 584 years)",
        ),
    ];
    for (text, why) in cases {
        let err = text.parse::<Rate>().unwrap_err();
        assert_eq!(err.input(), text);
        assert_eq!(err.to_string(), format!("invalid rate {text:?}: {why}"));
        assert_eq!(
            err.config_error().is_some(),
            why.starts_with("invalid "),
            "{text}"
        );
        // The config error is the source, for error reporters that walk the chain.
        let source = std::error::Error::source(&err).map(|s| s.to_string());
        assert_eq!(source, err.config_error().map(|e| e.to_string()));
    }
}

/// Periods drawn so that every unit (and plain nanoseconds) is exercised, not just the
/// nanosecond form that a uniform draw would give almost always.
fn any_period() -> impl Strategy<Value = u64> {
    let units = prop::sample::select(vec![
        1,
        1_000,
        1_000_000,
        SEC,
        60 * SEC,
        3_600 * SEC,
        86_400 * SEC,
    ]);
    prop_oneof![
        (1..=u64::MAX),
        (units, 1..=1_000_000u64).prop_filter_map("fits in u64", |(u, n)| u.checked_mul(n)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5_000))]

    /// Every rate's text reads back to the same rate.
    #[test]
    fn display_then_from_str_is_the_identity(limit in 1..=u64::MAX, period_ns in any_period()) {
        let r = rate(limit, period_ns);
        let text = r.to_string();
        prop_assert_eq!(text.parse::<Rate>(), Ok(r), "{}", text);
    }

    /// No text makes the parser panic; what it accepts, it prints back to a text that means
    /// the same rate.
    #[test]
    fn from_str_never_panics(text in "[0-9a-zµ /]{0,16}") {
        if let Ok(r) = text.parse::<Rate>() {
            prop_assert_eq!(r.to_string().parse::<Rate>(), Ok(r));
        }
    }
}

#[cfg(feature = "serde")]
mod serde_form {
    use super::*;

    #[test]
    fn serializes_as_the_text_form() {
        assert_eq!(serde_json::to_string(&rate(5, SEC)).unwrap(), "\"5/s\"");
        assert_eq!(
            serde_json::to_string(&rate(3, 20 * SEC)).unwrap(),
            "\"3 per 20s\""
        );
    }

    #[test]
    fn deserializes_every_text_form_and_names_bad_input() {
        let r: Rate = serde_json::from_str("\"100 per minute\"").unwrap();
        assert_eq!(r, rate(100, 60 * SEC));
        let err = serde_json::from_str::<Rate>("\"5/fortnight\"").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid rate \"5/fortnight\": unknown unit \"fortnight\""),
            "{err}"
        );
        let err = serde_json::from_str::<Rate>("5").unwrap_err();
        assert!(err.to_string().contains("a rate such as"), "{err}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1_000))]

        #[test]
        fn json_round_trip(limit in 1..=u64::MAX, period_ns in any_period()) {
            let r = rate(limit, period_ns);
            let json = serde_json::to_string(&r).unwrap();
            prop_assert_eq!(serde_json::from_str::<Rate>(&json).unwrap(), r);
        }
    }
}
