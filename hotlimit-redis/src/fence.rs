//! [`Fence`]: fenced mode, in which a key the server lost restarts full (no permit free)
//! instead of empty, so that a limit stays exact across the loss. The script's side is in
//! `lua/now.lua`; this is the client's: the fence's length and the marker's key.

/// A fence of `horizon` µs: the longest a TAT can run ahead of the server's `now` (τ for a
/// per-decision GCRA, τ + the lease queue for leases). For that long after the server is
/// found to have lost its data (its marker key is missing), a missing limiter key is taken as
/// lost and restarts at the marker's time + `horizon`: with no burst (and, for leases, refused
/// for the queue's length), refilling at the rate: what a loss costs in fenced mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fence {
    pub(crate) horizon: u64,
}

impl Fence {
    /// The marker's key for the limited key `key` (its prefix `prefix`): `prefix` + `fence`,
    /// with `key`'s hash tag (`{...}`) if it has one, so that in a Redis Cluster the marker
    /// lives in the key's slot (a fenced limiter on a cluster needs hash-tagged keys: each
    /// tag has its own marker).
    pub(crate) fn marker(prefix: &[u8], key: &[u8]) -> Vec<u8> {
        let mut marker = Vec::with_capacity(prefix.len() + 16);
        marker.extend_from_slice(prefix);
        marker.extend_from_slice(b"fence");
        if let Some(tag) = hash_tag(key) {
            marker.push(b'{');
            marker.extend_from_slice(tag);
            marker.push(b'}');
        }
        marker
    }
}

/// The hash tag of `key` as Redis Cluster reads it: between the first `{` and the first `}`
/// after it, when not empty.
pub(crate) fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    let len = key[open + 1..].iter().position(|&b| b == b'}')?;
    (len > 0).then(|| &key[open + 1..open + 1 + len])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_shares_the_keys_hash_tag() {
        assert_eq!(Fence::marker(b"rl:", b"rl:bob"), b"rl:fence");
        assert_eq!(Fence::marker(b"rl:", b"rl:{t1}bob"), b"rl:fence{t1}");
        assert_eq!(Fence::marker(b"{p}:", b"{p}:x"), b"{p}:fence{p}");
        assert_eq!(Fence::marker(b"", b"{}x"), b"fence");
    }
}
