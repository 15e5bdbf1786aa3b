//! [`FieldText`]: one field's rate-limit header text, encoded once when the layer is built
//! (its `RateLimit` item's prefix, its `RateLimit-Policy` item), and the numbers a quota is
//! written with (`q`, `w`, and the `t` of a full quota). The rules are in `headers.rs`.

use std::time::Duration;

use hotlimit::{Decision, Quota};

use crate::buf::Buf;

/// Whole seconds, rounded up.
pub(crate) fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// The numbers a quota's fields are written with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Numbers {
    /// `q`: the quota's limit.
    pub(crate) q: u64,
    /// `w`: its window in whole seconds, rounded up, at least 1 (the draft's window is a
    /// non-zero integer).
    pub(crate) w: u64,
    /// The `t` of a full quota: the time one unit takes to come back once spent (the window
    /// over the limit), rounded up, at most `w`.
    pub(crate) full_t: u64,
}

impl Numbers {
    pub(crate) fn of(quota: Quota) -> Numbers {
        let q = quota.limit();
        let w = ceil_secs(quota.window()).max(1);
        let per_unit =
            u64::try_from(quota.window().as_nanos() / u128::from(q.max(1))).unwrap_or(u64::MAX);
        Numbers {
            q,
            w,
            full_t: ceil_secs(Duration::from_nanos(per_unit)).min(w),
        }
    }

    /// `(r, t)` of a decision or state `d` under this quota: `r` the available quota, never
    /// above `q`; `t` the effective window (see the module docs).
    #[inline]
    pub(crate) fn item(&self, d: &Decision) -> (u64, u64) {
        let r = d.remaining().min(self.q);
        let t = if r < self.q {
            ceil_secs(d.next()).min(self.w)
        } else {
            self.full_t
        };
        (r, t)
    }
}

/// A field's header text, encoded once when the layer is built.
#[derive(Debug)]
pub(crate) struct FieldText {
    /// `"name";r=`: the start of its `RateLimit` item (the name as a structured-field string).
    pub(crate) state_prefix: Box<[u8]>,
    /// `"name";q=Q;w=W` for the quota the field was built with.
    pub(crate) policy_item: Box<[u8]>,
    /// The numbers of that quota.
    pub(crate) own: Numbers,
}

impl FieldText {
    /// The text of the field named `quoted` (an sf-string) with `quota`.
    pub(crate) fn new(quoted: &str, quota: Quota) -> FieldText {
        let own = Numbers::of(quota);
        let mut prefix = Buf::new();
        prefix.push(quoted.as_bytes());
        prefix.push(b";r=");
        let mut item = Buf::new();
        policy_item(&mut item, quoted.as_bytes(), own);
        FieldText {
            state_prefix: prefix.as_bytes().into(),
            policy_item: item.as_bytes().into(),
            own,
        }
    }

    /// The quoted name.
    pub(crate) fn quoted(&self) -> &[u8] {
        &self.state_prefix[..self.state_prefix.len() - b";r=".len()]
    }

    /// Appends the `RateLimit` item saying `r` and `t` (`None`: no `t`).
    #[inline]
    pub(crate) fn state_item(&self, buf: &mut Buf, r: u64, t: Option<u64>) {
        buf.push(&self.state_prefix);
        buf.push_u64(r);
        if let Some(t) = t {
            buf.push(b";t=");
            buf.push_u64(t);
        }
    }
}

/// Appends `"name";q=Q;w=W`.
pub(crate) fn policy_item(buf: &mut Buf, quoted: &[u8], n: Numbers) {
    buf.push(quoted);
    buf.push(b";q=");
    buf.push_u64(n.q);
    buf.push(b";w=");
    buf.push_u64(n.w);
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
        let n = |limit, ms| Numbers::of(Quota::new(limit, Duration::from_millis(ms)));
        assert_eq!((n(1, 100).w, n(1, 1000).w, n(1, 1001).w), (1, 1, 2));
        // A full quota's window: one unit's share of the window, rounded up, at most w.
        assert_eq!(n(20, 2000).full_t, 1);
        assert_eq!(n(3, 7_200_000).full_t, 2400);
        assert_eq!(n(1, 1500).full_t, 2);
        assert_eq!(n(0, 1000).full_t, 1);
    }

    #[test]
    fn the_effective_window_is_the_time_within_which_no_more_than_r_can_be_used() {
        let quota = Quota::new(20, Duration::from_secs(2));
        let n = Numbers::of(quota);
        // 10 per second, 19 left: the 20th comes back within 100 ms.
        let d = Decision::allowed(quota, 19, Duration::from_millis(100));
        assert_eq!(n.item(&d), (19, 1));
        // Full: spent, one unit takes 100 ms to come back.
        assert_eq!(
            n.item(&Decision::allowed(quota, 20, Duration::ZERO)),
            (20, 1)
        );
        // Never above w, nor r above q.
        let d = Decision::allowed(quota, 99, Duration::from_secs(9));
        assert_eq!(n.item(&d), (20, 1));
        let d = Decision::allowed(quota, 0, Duration::from_secs(9));
        assert_eq!(n.item(&d), (0, 2));
    }
}
