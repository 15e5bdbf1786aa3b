//! The rate-limit fields the layer writes on every response: `RateLimit-Policy` and
//! `RateLimit` as draft-ietf-httpapi-ratelimit-headers-10 defines them, `Retry-After` (whole
//! seconds, rounded up, at least 1) and the optional `X-RateLimit-*` trio. [`FieldText`] holds
//! each field's pre-encoded text, [`HeaderBlock`] one response's values.
//!
//! What each field says (the rules the crate docs state):
//!
//! - `RateLimit-Policy: "name";q=Q;w=W` for every field of the layer, on every response: Q
//!   the quota's limit (a GCRA's burst), W its window in whole seconds, rounded up, at least 1
//!   (a GCRA's refill time). The same text on every response unless a key's own rate (an
//!   override) differs.
//! - `RateLimit: "name";r=R;t=T` for every field that applies to the request: R what is left
//!   (never above Q), T the seconds until at least one more unit is available (the draft's
//!   "additional quota"), rounded up and never above W; no `t` when R = Q (full: nothing more
//!   is coming). A field whose policy did not decide reports its state for the request's key,
//!   uncharged; a keyless request a field rejects reports `r=0`; a field that lets keyless
//!   requests through, or whose limiter was not asked (a networked one) or failed while the
//!   layer fails open, reports nothing (one that failed while it fails closed: `r=0`).

use std::time::Duration;

use bytes::Bytes;
use hotlimit::{Decision, Quota};
use http::header::{HeaderName, HeaderValue, RETRY_AFTER};
use http::HeaderMap;

use crate::arena;
use crate::erased::Report;
use crate::field::Field;

/// `RateLimit-Policy`.
pub(crate) static RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`.
pub(crate) static RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
static X_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
static X_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
static X_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// Whole seconds, rounded up.
fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// The `w` of `quota`: its window in whole seconds, rounded up, at least 1 (the draft's
/// window is a non-zero integer).
fn window_secs(quota: Quota) -> u64 {
    ceil_secs(quota.window()).max(1)
}

/// A field's header text, encoded once when the layer is built.
#[derive(Debug)]
pub(crate) struct FieldText {
    /// The name as a structured-field string, quotes included.
    quoted: Box<[u8]>,
    /// `"name";q=Q;w=W` for the quota the field was built with.
    policy_item: Box<[u8]>,
}

impl FieldText {
    /// The text of the field named `quoted` (an sf-string) with `quota`.
    pub(crate) fn new(quoted: &str, quota: Quota) -> FieldText {
        let mut item = Buf::new();
        item.policy_item(quoted.as_bytes(), quota);
        FieldText {
            quoted: quoted.as_bytes().into(),
            policy_item: item.as_bytes().into(),
        }
    }
}

/// A layer's `RateLimit-Policy` value listing every field, built once and owned by the layer,
/// and the id its per-thread copies are kept under (see `arena.rs`).
#[derive(Debug)]
pub(crate) struct PolicyText {
    pub(crate) id: u64,
    pub(crate) value: HeaderValue,
}

impl PolicyText {
    /// The value for `fields`.
    pub(crate) fn new(fields: &[Field]) -> PolicyText {
        let mut buf = Buf::new();
        for (i, f) in fields.iter().enumerate() {
            buf.separate(i == 0);
            buf.push(&f.text.policy_item);
        }
        PolicyText {
            id: arena::next_id(),
            // Names are checked printable ASCII; numbers are digits.
            value: HeaderValue::from_maybe_shared(Bytes::copy_from_slice(buf.as_bytes()))
                .unwrap_or_else(|_| HeaderValue::from_static("")),
        }
    }
}

/// The headers of one response, applied after the inner service or the rejection handler.
#[derive(Debug, Default)]
pub(crate) struct HeaderBlock {
    policy: Option<HeaderValue>,
    state: Option<HeaderValue>,
    retry_after: Option<u64>,
    legacy: Option<(u64, u64, u64)>,
}

impl HeaderBlock {
    /// The fields of a response: `reports[i]` is what `fields[i]` reports, `policy` the
    /// layer's pre-built `RateLimit-Policy` (used unless a report carries another quota),
    /// `denied` the decision that refused the request, if any; `legacy` adds `X-RateLimit-*`
    /// for the field with the least remaining.
    pub(crate) fn new(
        fields: &[Field],
        reports: &[Report],
        policy: &PolicyText,
        denied: Option<&Decision>,
        legacy: bool,
    ) -> HeaderBlock {
        let mut state = Buf::new();
        let mut first = true;
        let mut own_quotas = true;
        let mut tightest: Option<(u64, u64, u64)> = None;
        for (f, report) in fields.iter().zip(reports) {
            let (quota, remaining, next) = match report {
                Report::Silent => continue,
                Report::Keyless => (f.quota, 0, None),
                Report::Decided(d) | Report::Peeked(d) => {
                    own_quotas &= d.quota() == f.quota;
                    (d.quota(), d.remaining(), Some(d))
                }
            };
            let q = quota.limit();
            let r = remaining.min(q);
            state.separate(first);
            first = false;
            state.push(&f.text.quoted);
            state.push(b";r=");
            state.push_u64(r);
            if let (Some(d), true) = (next, r < q) {
                state.push(b";t=");
                state.push_u64(ceil_secs(d.next()).min(window_secs(quota)));
            }
            if let (Some(d), true) = (next, legacy) {
                if tightest.is_none_or(|(_, least, _)| r < least) {
                    tightest = Some((q, r, ceil_secs(d.reset())));
                }
            }
        }
        let policy = if own_quotas {
            arena::policy_value(policy.id, &policy.value)
        } else {
            Buf::policy_list(fields, reports).value()
        };
        HeaderBlock {
            policy: Some(policy),
            state: (!first).then(|| state.value()),
            retry_after: denied
                .and_then(Decision::denial)
                .and_then(|d| d.retry_after_secs_ceil()),
            legacy: tightest,
        }
    }

    /// The `Retry-After` seconds, if a denial set one.
    pub(crate) fn retry_after(&self) -> Option<u64> {
        self.retry_after
    }

    /// Adds the fields to `headers`: appended on an admitted response (an inner layer's own
    /// fields stay: these are lists), inserted over anything a rejection handler set.
    pub(crate) fn apply(self, headers: &mut HeaderMap, overwrite: bool) {
        let mut put = |name: &HeaderName, v: HeaderValue| {
            if overwrite {
                headers.insert(name.clone(), v);
            } else {
                headers.append(name.clone(), v);
            }
        };
        if let Some(v) = self.policy {
            put(&RATELIMIT_POLICY, v);
        }
        if let Some(v) = self.state {
            put(&RATELIMIT, v);
        }
        if let Some(s) = self.retry_after {
            headers.insert(RETRY_AFTER, number(s));
        }
        if let Some((limit, remaining, reset)) = self.legacy {
            headers.insert(X_LIMIT.clone(), number(limit));
            headers.insert(X_REMAINING.clone(), number(remaining));
            headers.insert(X_RESET.clone(), number(reset));
        }
    }
}

/// `n` in decimal as a header value, without an allocation.
fn number(n: u64) -> HeaderValue {
    let mut buf = Buf::new();
    buf.push_u64(n);
    buf.value()
}

/// Two decimal digits for each of 0..100.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Text for a header value, on the stack unless it is long.
struct Buf {
    bytes: [u8; 128],
    len: usize,
    /// The text once it outgrew `bytes` (several policies with long names).
    spill: Vec<u8>,
}

impl Buf {
    #[inline]
    fn new() -> Buf {
        Buf {
            bytes: [0; 128],
            len: 0,
            spill: Vec::new(),
        }
    }

    #[inline]
    fn as_bytes(&self) -> &[u8] {
        if self.spill.is_empty() {
            &self.bytes[..self.len]
        } else {
            &self.spill[..]
        }
    }

    /// The text as a header value, in the thread's arena (no allocation).
    #[inline]
    fn value(&self) -> HeaderValue {
        arena::value(self.as_bytes())
    }

    /// Appends `s`.
    #[inline]
    fn push(&mut self, s: &[u8]) {
        match self.bytes.get_mut(self.len..self.len + s.len()) {
            Some(dst) if self.spill.is_empty() => {
                dst.copy_from_slice(s);
                self.len += s.len();
            }
            _ => self.push_spilled(s),
        }
    }

    #[cold]
    fn push_spilled(&mut self, s: &[u8]) {
        if self.spill.is_empty() {
            self.spill.extend_from_slice(&self.bytes[..self.len]);
        }
        self.spill.extend_from_slice(s);
    }

    /// Appends `n` in decimal, two digits at a time.
    #[inline]
    fn push_u64(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        while n >= 100 {
            // `n % 100 < 100`: the cast keeps it.
            let d = (n % 100) as usize * 2;
            n /= 100;
            i -= 2;
            digits[i..i + 2].copy_from_slice(&PAIRS[d..d + 2]);
        }
        if n >= 10 {
            let d = n as usize * 2;
            i -= 2;
            digits[i..i + 2].copy_from_slice(&PAIRS[d..d + 2]);
        } else {
            i -= 1;
            // `n < 10`: one digit.
            digits[i] = b'0' + n as u8;
        }
        self.push(&digits[i..]);
    }

    /// Appends `, ` unless this is the first item.
    #[inline]
    fn separate(&mut self, first: bool) {
        if !first {
            self.push(b", ");
        }
    }

    /// Appends `"name";q=Q;w=W`.
    fn policy_item(&mut self, quoted: &[u8], quota: Quota) {
        self.push(quoted);
        self.push(b";q=");
        self.push_u64(quota.limit());
        self.push(b";w=");
        self.push_u64(window_secs(quota));
    }

    /// `RateLimit-Policy` for a response where some report carries a quota of its own (a
    /// key's override): each field's pre-encoded item, or its item for that quota.
    #[cold]
    fn policy_list(fields: &[Field], reports: &[Report]) -> Buf {
        let mut buf = Buf::new();
        for (i, (f, report)) in fields.iter().zip(reports).enumerate() {
            buf.separate(i == 0);
            match report.decision() {
                Some(d) if d.quota() != f.quota => buf.policy_item(&f.text.quoted, d.quota()),
                _ => buf.push(&f.text.policy_item),
            }
        }
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_round_up() {
        assert_eq!(ceil_secs(Duration::ZERO), 0);
        assert_eq!(ceil_secs(Duration::from_nanos(1)), 1);
        assert_eq!(ceil_secs(Duration::from_secs(2)), 2);
        assert_eq!(ceil_secs(Duration::from_millis(2001)), 3);
        let q = |ms| Quota::new(1, Duration::from_millis(ms));
        assert_eq!(
            (
                window_secs(q(100)),
                window_secs(q(1000)),
                window_secs(q(1001))
            ),
            (1, 1, 2)
        );
    }

    #[test]
    fn numbers_and_spills_are_written_exactly() {
        let mut b = Buf::new();
        for n in [0, 7, 10, 1_000_000_007, u64::MAX] {
            b.separate(n == 0);
            b.push_u64(n);
        }
        assert_eq!(b.value(), "0, 7, 10, 1000000007, 18446744073709551615");
        let mut long = Buf::new();
        for i in 0..40u64 {
            long.separate(i == 0);
            long.push(b"\"p\";r=");
            long.push_u64(i);
        }
        let v = long.value();
        assert!(v.to_str().unwrap().ends_with(r#""p";r=39"#));
        assert_eq!(v.len(), 40 * 7 + 30 + 39 * 2);
    }
}
