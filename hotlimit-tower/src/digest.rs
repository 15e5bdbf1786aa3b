//! Keys whose memory is bounded whatever a client sends: a header, token or path key longer
//! than [`MAX_KEY_LEN`] bytes is stored as its 128-bit keyed digest (SipHash-1-3 under a key
//! drawn at random once per process), written as `\u{1}` and 32 hex digits.
//!
//! A client can send a new 64 KB `x-api-key` on every request; stored whole, 17,400 of them
//! took a server from 7.6 MB to 1.1 GB (issue 25). Digested, each key costs at most 64 bytes
//! plus the map's entry, and the keyed limiter's capacity bounds how many there are. The
//! digest is keyed with a secret, so a client cannot make two of its keys meet in one digest
//! (or meet someone else's) on purpose, and 128 bits make it vanishingly unlikely by chance
//! (about 2^-88 among a million long keys). A digest starts with `\u{1}`, a byte no header
//! value or path the extractors read can hold, so it never equals a short key kept whole.

use std::fmt::Write as _;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

use siphasher::sip128::{Hasher128, SipHasher13};

/// The longest header, token or path key kept as it is, in bytes; a longer one is stored as
/// its 33-byte keyed digest ([`HeaderKey`](crate::HeaderKey), [`Bearer`](crate::Bearer),
/// [`Route`](crate::Route)).
///
/// # Examples
///
/// ```
/// use hotlimit_tower::{HeaderKey, KeyExtractor, MAX_KEY_LEN};
///
/// let long = "k".repeat(64 * 1024);
/// let (parts, ()) = http::Request::get("/").header("x-api-key", &long).body(()).unwrap().into_parts();
/// let key = HeaderKey::new("x-api-key")?.extract(&parts).unwrap();
/// assert!(key.len() <= MAX_KEY_LEN);
/// # Ok::<(), hotlimit_tower::ConfigError>(())
/// ```
pub const MAX_KEY_LEN: usize = 64;

/// The digest's key, drawn once per process from the operating system's randomness (through
/// `std`'s `RandomState`, which seeds itself from it).
fn secret() -> (u64, u64) {
    static SECRET: OnceLock<(u64, u64)> = OnceLock::new();
    *SECRET.get_or_init(|| {
        let seeded = std::collections::hash_map::RandomState::new();
        let draw = |salt: u64| {
            let mut h = seeded.build_hasher();
            h.write_u64(salt);
            h.finish()
        };
        (draw(0x6b65_795f_6469_6765), draw(0x7374_5f73_6563_7265))
    })
}

/// `key` as a bounded key: itself when at most [`MAX_KEY_LEN`] bytes, else its digest.
#[inline]
pub(crate) fn bounded(key: &str) -> String {
    if key.len() <= MAX_KEY_LEN {
        return key.to_owned();
    }
    digest(key.as_bytes())
}

/// `bytes` as a bounded key: the text itself when it is at most [`MAX_KEY_LEN`] bytes of
/// visible ASCII or spaces, else its digest. A header value with other bytes (obs-text, a tab)
/// is still the key its client sent: digested, so it never equals a key kept whole.
#[inline]
pub(crate) fn bounded_bytes(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) if s.bytes().all(|b| (0x20..0x7f).contains(&b)) => bounded(s),
        _ => digest(bytes),
    }
}

/// `\u{1}` and the 32 hex digits of `bytes`' keyed 128-bit digest.
#[cold]
fn digest(bytes: &[u8]) -> String {
    let (k0, k1) = secret();
    let mut h = SipHasher13::new_with_keys(k0, k1);
    h.write(bytes);
    let mut out = String::with_capacity(33);
    out.push('\u{1}');
    let _ = write!(out, "{:032x}", h.finish128().as_u128());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_keys_stay_long_keys_are_digested() {
        let short = "k".repeat(MAX_KEY_LEN);
        assert_eq!(bounded(&short), short);
        let long = "k".repeat(MAX_KEY_LEN + 1);
        let d = bounded(&long);
        assert_eq!(d.len(), 33);
        assert!(d.starts_with('\u{1}'));
        // Stable within the process, different for different keys.
        assert_eq!(bounded(&long), d);
        assert_ne!(bounded(&"k".repeat(MAX_KEY_LEN + 2)), d);
    }
}
