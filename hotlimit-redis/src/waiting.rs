//! The waiting marker: how a per-decision caller refused by a leased key's queue gets the
//! leases to stop queueing. A per-decision grant passes only while the bucket (τ) has room,
//! and leases may queue up to Q past it, so without the marker the per-decision callers of an
//! over-limit key get only what the leases happen to leave (issue 43's stress run: 3 of
//! 7,500). With it, a per-decision refusal that found the TAT past now + τ (only leases put it
//! there) sets the marker for 2τ (`lua/gcra.lua`), and while it lives every lease stops at the
//! bucket, now + τ (`lua/lease.lua`), where per-decision grants stop too: the two kinds meet at
//! the bucket's edge, each request taking what has come free when it arrives. The marker only
//! ever makes leases shorter, so it cannot cost the bound anything; see
//! [`LeasedGcra`](crate::LeasedGcra)'s docs.

use crate::fence::hash_tag;

/// What every waiting marker's key ends with. Not UTF-8 (0xFF never occurs in it), so it
/// cannot be a limiter key of a prefix and a key that are both UTF-8.
const SUFFIX: &[u8] = b"\xffwaiting";

/// The waiting marker's key for the limited Redis key `key`, in `key`'s Redis Cluster slot:
/// `key` + [`SUFFIX`] when `key` has a hash tag (the marker has the same one), else
/// `{key}` + [`SUFFIX`] (the marker's hash tag is `key` itself, so it hashes as `key` does).
/// `None` for a key that holds a `}` but no hash tag, or is empty (an empty prefix and an
/// empty key): no name can share its slot by a tag, and such a key goes without the marker
/// (its per-decision callers get what the leases leave, as before the marker).
pub(crate) fn marker(key: &[u8]) -> Option<Vec<u8>> {
    let mut marker = Vec::with_capacity(key.len() + 2 + SUFFIX.len());
    if hash_tag(key).is_some() {
        marker.extend_from_slice(key);
    } else if !key.is_empty() && !key.contains(&b'}') {
        marker.push(b'{');
        marker.extend_from_slice(key);
        marker.push(b'}');
    } else {
        return None;
    }
    marker.extend_from_slice(SUFFIX);
    Some(marker)
}

/// How long a marker lives, ms, for a key of tolerance τ µs: 2τ, rounded up. A refused caller
/// comes back within its retry-after, at most Q + I ≤ 2τ (Q < τ, I ≤ τ), and finds the marker
/// still there.
pub(crate) fn ttl_ms(tolerance: u64) -> u64 {
    (2 * tolerance).div_ceil(1000).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Redis Cluster's slot of `key`: CRC16-XMODEM of its hash tag (or the whole key), mod 16384.
    fn slot(key: &[u8]) -> u16 {
        let hashed = hash_tag(key).unwrap_or(key);
        let mut crc: u16 = 0;
        for &byte in hashed {
            crc ^= u16::from(byte) << 8;
            for _ in 0..8 {
                crc = if crc & 0x8000 != 0 {
                    (crc << 1) ^ 0x1021
                } else {
                    crc << 1
                };
            }
        }
        crc & 0x3fff
    }

    #[test]
    fn the_slot_function_is_redis_clusters() {
        // From the Redis Cluster specification's examples and `CLUSTER KEYSLOT`.
        assert_eq!(slot(b"123456789"), 0x31c3 & 0x3fff);
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
    }

    #[test]
    fn the_marker_lives_in_the_keys_slot() {
        for key in [
            &b"hotlimit:bob"[..],
            b"hotlimit:",
            b"rl:{t1}bob",
            b"{t1}",
            b"a{b",
            b"{",
            b"{{x}",
            b"x{y}z}",
            "hotlimit:é".as_bytes(),
        ] {
            let marker = marker(key).unwrap();
            assert_eq!(slot(&marker), slot(key), "{key:?}");
            assert!(marker.ends_with(SUFFIX));
            assert_ne!(marker, key);
        }
        assert_eq!(marker(b"k").unwrap(), b"{k}\xffwaiting");
        assert_eq!(marker(b"rl:{t}k").unwrap(), b"rl:{t}k\xffwaiting");
    }

    #[test]
    fn an_empty_key_or_one_with_a_brace_and_no_tag_has_no_marker() {
        for key in [&b"a}b"[..], b"{}x", b"}{", b"}", b""] {
            assert_eq!(hash_tag(key), None);
            assert_eq!(marker(key), None, "{key:?}");
        }
    }

    #[test]
    fn the_marker_outlives_a_refused_callers_wait() {
        assert_eq!(ttl_ms(1), 1);
        assert_eq!(ttl_ms(1_000_000), 2_000);
        assert_eq!(ttl_ms(10_400), 21);
    }
}
