//! The rate-limit fields the layer writes on every response: `RateLimit-Policy` and
//! `RateLimit` of draft-ietf-httpapi-ratelimit-headers, `Retry-After` (whole seconds, rounded
//! up, at least 1) and the optional `X-RateLimit-*` trio. [`PolicyFields`] holds each policy's
//! pre-encoded text, [`HeaderBlock`] one response's values.

use std::time::Duration;

use bytes::Bytes;
use hotlimit::Decision;
use http::header::{HeaderName, HeaderValue, RETRY_AFTER};
use http::HeaderMap;

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

/// The headers of one response, applied after the inner service or the rejection handler.
#[derive(Debug, Default)]
pub(crate) struct HeaderBlock {
    policy: Option<HeaderValue>,
    state: Option<HeaderValue>,
    retry_after: Option<u64>,
    legacy: Option<(u64, u64, u64)>,
}

/// Text for a header value, on the stack unless it is long.
struct Buf {
    bytes: [u8; 96],
    len: usize,
    spill: Vec<u8>,
}

impl Buf {
    fn new() -> Buf {
        Buf {
            bytes: [0; 96],
            len: 0,
            spill: Vec::new(),
        }
    }

    fn value(&self) -> Option<HeaderValue> {
        let text = if self.spill.is_empty() {
            &self.bytes[..self.len]
        } else {
            &self.spill[..]
        };
        // One allocation, of the exact size. The layer writes visible ASCII only.
        (!text.is_empty())
            .then(|| HeaderValue::from_bytes(text).ok())
            .flatten()
    }
}

impl Buf {
    /// Appends `s` (short: a byte loop beats a call to `memcpy` here).
    #[inline]
    fn push(&mut self, s: &[u8]) {
        if self.spill.is_empty() && self.len + s.len() <= self.bytes.len() {
            for (d, b) in self.bytes[self.len..].iter_mut().zip(s) {
                *d = *b;
            }
            self.len += s.len();
        } else {
            if self.spill.is_empty() {
                self.spill.extend_from_slice(&self.bytes[..self.len]);
            }
            self.spill.extend_from_slice(s);
        }
    }

    /// Appends `n` in decimal.
    #[inline]
    fn push_u64(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
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
}

/// `"name";q=…;w=…` for every `(quoted name, quota)`, comma-separated.
fn write_policies<'a>(buf: &mut Buf, items: impl Iterator<Item = (&'a str, hotlimit::Quota)>) {
    for (i, (quoted, q)) in items.enumerate() {
        buf.separate(i == 0);
        buf.push(quoted.as_bytes());
        buf.push(b";q=");
        buf.push_u64(q.limit());
        buf.push(b";w=");
        buf.push_u64(ceil_secs(q.window()).max(1));
    }
}

/// The `RateLimit-Policy` value of a layer's policies, built once per layer and owned by it
/// (a response clones it: a reference count, no copy). Nothing outlives the layer.
pub(crate) fn policy_field<'a>(
    items: impl Iterator<Item = (&'a str, hotlimit::Quota)>,
) -> HeaderValue {
    let mut buf = Buf::new();
    write_policies(&mut buf, items);
    let text = if buf.spill.is_empty() {
        buf.bytes[..buf.len].to_vec()
    } else {
        buf.spill
    };
    // Policy names are checked printable ASCII; numbers are digits.
    HeaderValue::from_maybe_shared(Bytes::from(text))
        .unwrap_or_else(|_| HeaderValue::from_static(""))
}

impl HeaderBlock {
    /// The fields for `decisions` (each with its policy's quoted name); `policy` is the
    /// precomputed `RateLimit-Policy` when it applies; `denied` is the decision that refused,
    /// if any; `legacy` adds `X-RateLimit-*` for the most restrictive policy.
    pub(crate) fn new<'a>(
        decisions: impl Iterator<Item = (&'a str, &'a Decision)> + Clone,
        policy: Option<HeaderValue>,
        denied: Option<&Decision>,
        legacy: bool,
    ) -> HeaderBlock {
        let policy = policy.or_else(|| {
            let mut buf = Buf::new();
            write_policies(&mut buf, decisions.clone().map(|(q, d)| (q, d.quota())));
            buf.value()
        });
        let mut state = Buf::new();
        let mut tightest: Option<(u64, u64, u64)> = None;
        for (i, (quoted, d)) in decisions.enumerate() {
            let mut t = ceil_secs(d.reset());
            if let Some(s) = d.denial().and_then(|x| x.retry_after_secs_ceil()) {
                t = t.max(s);
            }
            state.separate(i == 0);
            state.push(quoted.as_bytes());
            state.push(b";r=");
            state.push_u64(d.remaining());
            state.push(b";t=");
            state.push_u64(t);
            if legacy && tightest.is_none_or(|(_, r, _)| d.remaining() < r) {
                tightest = Some((d.quota().limit(), d.remaining(), t));
            }
        }
        HeaderBlock {
            policy,
            state: state.value(),
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
            headers.insert(RETRY_AFTER, HeaderValue::from(s));
        }
        if let Some((limit, remaining, reset)) = self.legacy {
            headers.insert(X_LIMIT.clone(), HeaderValue::from(limit));
            headers.insert(X_REMAINING.clone(), HeaderValue::from(remaining));
            headers.insert(X_RESET.clone(), HeaderValue::from(reset));
        }
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
    }

    #[test]
    fn numbers_and_spills_are_written_exactly() {
        let mut b = Buf::new();
        for n in [0, 7, 10, 1_000_000_007, u64::MAX] {
            b.separate(n == 0);
            b.push_u64(n);
        }
        assert_eq!(
            b.value().unwrap(),
            "0, 7, 10, 1000000007, 18446744073709551615"
        );
        let mut long = Buf::new();
        for i in 0..40u64 {
            long.separate(i == 0);
            long.push(b"\"p\";r=");
            long.push_u64(i);
        }
        let v = long.value().unwrap();
        assert!(v.to_str().unwrap().ends_with(r#""p";r=39"#));
        assert_eq!(v.len(), 40 * 7 + 30 + 39 * 2);
    }
}
