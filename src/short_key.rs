//! [`ShortKey`]: a string key of at most 23 bytes, stored inline, for [`Keyed`](crate::Keyed)
//! tables keyed by short ids.

use core::fmt;
use core::hash::{Hash, Hasher};
use core::str::FromStr;

/// A string key of at most [`ShortKey::MAX_LEN`] (23) bytes, stored inline in 24 bytes: no
/// heap, `Copy`.
///
/// A `Keyed<ShortKey>` keeps the key's bytes in the table's slot (32 bytes with its `Gcra`
/// state): a lookup in a table larger than the caches misses once, where a map of `String`
/// keys (governor's keyed limiter) misses on the entry and then on the key's bytes. A
/// `Keyed<String>` does the same for its keys of at most 23 bytes (and keeps a longer one on
/// the heap); `ShortKey` is that layout as a key type of its own: `Copy`, no allocation when a
/// key is first seen, and an id longer than 23 bytes refused up front ([`KeyTooLong`]) rather
/// than kept on the heap. Both take 55 bytes a key against governor's 101; in time
/// `Keyed<String>` looked up by `&str` is the faster of the two, since its lookup compares a
/// copy of the key's bytes inline (BENCHMARKS.md, "Keyed", the key hot: 1.35–3.37× governor's
/// keyed limiter on `String` keys at 1,000 to 1,000,000 keys on one thread, `ShortKey` with its
/// conversion 1.12–3.04×). Pick `ShortKey` for the type, not for speed. User ids, session ids,
/// tenant names and IP addresses as text fit; a longer key (a 32-byte API token, a URL) needs
/// a `Keyed<String>`, or a digest of it.
///
/// Equality, order and hash are those of the string: two keys made from the same string are
/// one key, and `"a"` and `"a\0"` are two. A lookup takes `&ShortKey`: convert the request's
/// `&str` with [`ShortKey::new`] (a copy of at most 23 bytes) and keep `Keyed<String>` for
/// keys that may be longer.
///
/// # Examples
///
/// ```
/// use hotlimit::{Keyed, Rate, ShortKey};
///
/// let per_user: Keyed<ShortKey> = Keyed::gcra(Rate::per_second(1)?).burst(2).build()?;
/// let user = ShortKey::new("user:42")?;
/// assert!(per_user.try_acquire(&user).is_ok());
/// assert!(per_user.try_acquire(&user).is_ok());
/// assert!(per_user.try_acquire(&user).is_err()); // burst 2 spent
/// assert!(per_user.try_acquire(&ShortKey::new("user:43")?).is_ok()); // another key
///
/// // More than 23 bytes is an error that says how long the key was.
/// let long = ShortKey::new("a key much longer than twenty-three bytes").unwrap_err();
/// assert_eq!(long.len(), 41);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ShortKey {
    /// The key's length in bytes, at most [`ShortKey::MAX_LEN`].
    len: u8,
    /// The key's bytes, then zeros.
    bytes: [u8; ShortKey::MAX_LEN],
}

impl ShortKey {
    /// The longest key, in bytes: 23, so that the key with its length fills 24 bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::ShortKey;
    ///
    /// assert!(ShortKey::new(&"x".repeat(ShortKey::MAX_LEN)).is_ok());
    /// assert!(ShortKey::new(&"x".repeat(ShortKey::MAX_LEN + 1)).is_err());
    /// ```
    pub const MAX_LEN: usize = 23;

    /// The key `key`, or [`KeyTooLong`] if it has more than [`MAX_LEN`](Self::MAX_LEN) bytes.
    ///
    /// # Errors
    ///
    /// [`KeyTooLong`], with the key's length, if `key.len() > 23`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::ShortKey;
    ///
    /// let key = ShortKey::new("tenant-7")?;
    /// assert_eq!(key.as_str(), "tenant-7");
    /// assert_eq!(key.len(), 8);
    /// assert!(ShortKey::new("0123456789abcdef0123456789").is_err());
    /// # Ok::<(), hotlimit::KeyTooLong>(())
    /// ```
    #[inline]
    pub fn new(key: &str) -> Result<ShortKey, KeyTooLong> {
        let src = key.as_bytes();
        if src.len() > Self::MAX_LEN {
            return Err(KeyTooLong { len: src.len() });
        }
        let mut bytes = [0; Self::MAX_LEN];
        bytes[..src.len()].copy_from_slice(src);
        Ok(ShortKey {
            len: src.len() as u8,
            bytes,
        })
    }

    /// The key as text.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::ShortKey;
    ///
    /// let key = ShortKey::new("β-tester")?; // UTF-8: 9 bytes
    /// assert_eq!(key.as_str(), "β-tester");
    /// assert_eq!(key.len(), 9);
    /// # Ok::<(), hotlimit::KeyTooLong>(())
    /// ```
    #[inline]
    pub fn as_str(&self) -> &str {
        match core::str::from_utf8(self.as_bytes()) {
            Ok(s) => s,
            // `new` copies a whole `&str` and nothing else writes the bytes.
            Err(_) => unreachable!("a ShortKey holds the bytes of a whole &str"),
        }
    }

    /// The key's bytes (UTF-8).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::ShortKey;
    ///
    /// assert_eq!(ShortKey::new("ab")?.as_bytes(), b"ab");
    /// # Ok::<(), hotlimit::KeyTooLong>(())
    /// ```
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The key's length in bytes (0 to 23).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::ShortKey;
    ///
    /// assert_eq!(ShortKey::new("user:42")?.len(), 7);
    /// # Ok::<(), hotlimit::KeyTooLong>(())
    /// ```
    #[inline]
    pub const fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the key is the empty string (a valid key, like any other).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::ShortKey;
    ///
    /// assert!(ShortKey::new("")?.is_empty());
    /// assert!(!ShortKey::new("a")?.is_empty());
    /// # Ok::<(), hotlimit::KeyTooLong>(())
    /// ```
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The 24 bytes as three words, for hashing: the length and the bytes, zero-padded.
    #[inline(always)]
    fn words(&self) -> [u64; 3] {
        let mut all = [0u8; 24];
        all[0] = self.len;
        all[1..].copy_from_slice(&self.bytes);
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&all[8 * i..8 * i + 8]);
            u64::from_le_bytes(w)
        };
        [word(0), word(1), word(2)]
    }
}

/// Three words: equal keys (same length and bytes, the rest zeros) hash alike, and the hash
/// is three `write_u64`s, not a loop over bytes.
impl Hash for ShortKey {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        let [a, b, c] = self.words();
        state.write_u64(a);
        state.write_u64(b);
        state.write_u64(c);
    }
}

/// The order of the strings (byte by byte, as `str`'s).
impl Ord for ShortKey {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl PartialOrd for ShortKey {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for ShortKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for ShortKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AsRef<str> for ShortKey {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl TryFrom<&str> for ShortKey {
    type Error = KeyTooLong;

    fn try_from(key: &str) -> Result<Self, KeyTooLong> {
        ShortKey::new(key)
    }
}

impl FromStr for ShortKey {
    type Err = KeyTooLong;

    fn from_str(key: &str) -> Result<Self, KeyTooLong> {
        ShortKey::new(key)
    }
}

/// A key longer than [`ShortKey::MAX_LEN`] bytes, given to [`ShortKey::new`].
///
/// # Examples
///
/// ```
/// use hotlimit::ShortKey;
///
/// let err = ShortKey::new(&"k".repeat(28)).unwrap_err();
/// assert_eq!(err.len(), 28);
/// assert_eq!(
///     err.to_string(),
///     "a key of 28 bytes is longer than ShortKey's 23: use Keyed<String> for longer keys"
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyTooLong {
    len: usize,
}

impl KeyTooLong {
    /// The length of the key refused, in bytes (more than 23).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::ShortKey;
    ///
    /// assert_eq!(ShortKey::new(&"k".repeat(30)).unwrap_err().len(), 30);
    /// ```
    #[allow(clippy::len_without_is_empty)] // never empty: a refused key has more than 23 bytes
    pub fn len(&self) -> usize {
        self.len
    }
}

impl fmt::Display for KeyTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a key of {} bytes is longer than ShortKey's {}: use Keyed<String> for longer keys",
            self.len,
            ShortKey::MAX_LEN
        )
    }
}

#[cfg(feature = "std")]
impl std::error::Error for KeyTooLong {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;

    fn hash_of(k: &ShortKey) -> u64 {
        let mut h = DefaultHasher::new();
        k.hash(&mut h);
        h.finish()
    }

    #[test]
    fn every_length_up_to_the_most_round_trips() {
        for n in 0..=ShortKey::MAX_LEN {
            let s = "k".repeat(n);
            let key = ShortKey::new(&s).unwrap();
            assert_eq!(key.as_str(), s);
            assert_eq!(key.len(), n);
            assert_eq!(key.is_empty(), n == 0);
        }
        let err = ShortKey::new(&"k".repeat(ShortKey::MAX_LEN + 1)).unwrap_err();
        assert_eq!(err.len(), ShortKey::MAX_LEN + 1);
    }

    #[test]
    fn a_prefix_and_its_padding_are_different_keys() {
        // "a" and "a\0" have the same bytes up to the padding: the length tells them apart.
        let a = ShortKey::new("a").unwrap();
        let a0 = ShortKey::new("a\0").unwrap();
        assert_ne!(a, a0);
        assert_ne!(hash_of(&a), hash_of(&a0));
        assert_eq!(a, ShortKey::new("a").unwrap());
        assert_eq!(hash_of(&a), hash_of(&ShortKey::new("a").unwrap()));
    }

    #[test]
    fn multibyte_text_is_kept_whole() {
        let s = "ключ-🔑"; // 8 × 2 + 1 + 4 = 14 bytes
        let key: ShortKey = s.parse().unwrap();
        assert_eq!(key.as_str(), s);
        assert_eq!(format!("{key}"), s);
        assert_eq!(format!("{key:?}"), format!("{s:?}"));
        assert_eq!(ShortKey::try_from(s).unwrap(), key);
    }
}
