//! How the [`Table`](super::Table) keeps a `String` key: [`StrKey`], the key's bytes in the
//! slot itself when it has at most [`INLINE`] of them (a user id, an IP address, a route), else
//! a `Box<str>`, in the 24 bytes a `String` takes. A lookup of a short key then reads one slot
//! and no heap bytes: the second cache miss of a `String` key (its slot, then its bytes) goes,
//! as it does for [`ShortKey`](crate::ShortKey), without a key type of the user's choosing.
//!
//! A lookup compares the key it is given (`&Q`, where `String: Borrow<Q>`: a `str`, a `String`)
//! with a slot's bytes through [`Matcher`], a [`Hasher`] that checks the bytes `Q`'s `Hash`
//! writes against the slot's, in the form `str`'s `Hash` writes them (the bytes, then `0xff`).
//! `Borrow`'s contract (a borrowed form hashes and compares as the owned key does) makes that
//! the same answer as `Q`'s `==` on the key, for every `Q` a `String` can be borrowed as; it is
//! what lets a table read a key it never turned back into a `String`.
//!
//! The hit path does the same with one pass over the key instead of one a compared slot: it
//! feeds `Q`'s `Hash` once into [`Captured`], a [`Hasher`] that keeps a copy of the bytes when
//! the stream is a `str`'s of at most [`CAPTURE`] bytes, and compares each slot with that
//! copy inline ([`StrKey::is`]). Any other stream (a longer key, a type that writes more than
//! its bytes) goes the [`Matcher`]'s way. The key is still hashed from its own stream, not
//! from the copy: hashing the copy put the copy's stores and loads on the path to the slot's
//! address (33 against 23 ns a lookup at 1,000 keys), where the compare, a predicted branch,
//! hides them.

use alloc::boxed::Box;
use alloc::string::String;
use core::hash::{Hash, Hasher};

/// The longest key kept in the slot: 23 bytes, with its length the 24 bytes of a `String`.
pub(crate) const INLINE: usize = 23;

/// The length of a key kept in the slot: 0 to 23. An enum, so that the values 24 to 255 are a
/// niche in which [`StrKey`] keeps its variant, and it stays 24 bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
#[rustfmt::skip]
pub(crate) enum Len {
    L0, L1, L2, L3, L4, L5, L6, L7, L8, L9, L10, L11, L12, L13, L14, L15, L16, L17, L18, L19, L20,
    L21, L22, L23,
}

impl Len {
    /// Every length, in order: `ALL[n]` is `n`.
    #[rustfmt::skip]
    const ALL: [Len; INLINE + 1] = [
        Len::L0, Len::L1, Len::L2, Len::L3, Len::L4, Len::L5, Len::L6, Len::L7, Len::L8, Len::L9,
        Len::L10, Len::L11, Len::L12, Len::L13, Len::L14, Len::L15, Len::L16, Len::L17, Len::L18,
        Len::L19, Len::L20, Len::L21, Len::L22, Len::L23,
    ];
}

/// A `String` key as a slot keeps it: its bytes inline (at most [`INLINE`]), or boxed.
#[derive(Clone)]
pub(crate) enum StrKey {
    /// The key's length and bytes, then zeros.
    Inline(Len, [u8; INLINE]),
    /// A longer key, on the heap (its capacity trimmed to its length).
    Heap(Box<str>),
}

// The cell stores a `StrKey` in the bytes of a `String` (`KeyCell`): it must fit them.
const _: () = assert!(core::mem::size_of::<StrKey>() == core::mem::size_of::<String>());
const _: () = assert!(core::mem::align_of::<StrKey>() <= core::mem::align_of::<String>());

/// The most bytes [`Captured`] keeps: a key of up to 32 bytes (a user id, an address, a
/// 32-character API key) is compared inline on the hit path.
pub(crate) const CAPTURE: usize = 32;

/// What a lookup's key wrote into its [`Hash`], when that was a `str`'s stream of at most
/// [`CAPTURE`] bytes: the bytes in one `write`, then `write_u8(0xff)`, nothing else. Comparing
/// the bytes with a slot's ([`StrKey::is`]) is then the answer [`StrKey::matches`] gives for
/// the key itself (both compare the stream), without the [`Matcher`]'s call.
pub(crate) struct Captured {
    buf: [u8; CAPTURE],
    len: u8,
    /// [`EMPTY`], [`BYTES`] (one `write` kept), [`DONE`] (then its `0xff`), or [`OTHER`].
    state: u8,
}

/// Nothing written yet.
const EMPTY: u8 = 0;
/// The bytes written, in one `write` of at most [`CAPTURE`].
const BYTES: u8 = 1;
/// The bytes, then `0xff`: a `str`'s stream.
const DONE: u8 = 2;
/// Anything else: the lookup goes the [`Matcher`]'s way.
const OTHER: u8 = 3;

impl Captured {
    /// Nothing captured yet: [`capture`](Captured::capture) a key into it.
    #[inline(always)]
    pub(crate) fn new() -> Captured {
        Captured {
            buf: [0; CAPTURE],
            len: 0,
            state: EMPTY,
        }
    }

    /// Feeds it what `key`'s `Hash` writes; [`is_str`](Captured::is_str) then says whether
    /// that was a `str`'s stream of at most [`CAPTURE`] bytes.
    #[inline(always)]
    pub(crate) fn capture<Q: Hash + ?Sized>(&mut self, key: &Q) {
        key.hash(self);
    }

    /// Whether the stream was a `str`'s, its bytes kept.
    #[inline(always)]
    pub(crate) fn is_str(&self) -> bool {
        self.state == DONE
    }

    /// The bytes kept.
    #[inline(always)]
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }
}

/// Copies `src` (at most [`CAPTURE`] bytes) to the front of `dst` with a few overlapping
/// moves (`copy_from_slice` of a length known only at run time calls `memcpy`).
#[inline(always)]
fn copy_short(dst: &mut [u8; CAPTURE], src: &[u8]) {
    #[inline(always)]
    fn put<const N: usize>(dst: &mut [u8; CAPTURE], src: &[u8], at: usize) {
        let mut w = [0; N];
        w.copy_from_slice(&src[at..at + N]);
        dst[at..at + N].copy_from_slice(&w);
    }
    let n = src.len();
    match n {
        0 => {}
        1..=3 => {
            dst[0] = src[0];
            dst[n / 2] = src[n / 2];
            dst[n - 1] = src[n - 1];
        }
        4..=7 => {
            put::<4>(dst, src, 0);
            put::<4>(dst, src, n - 4);
        }
        8..=16 => {
            put::<8>(dst, src, 0);
            put::<8>(dst, src, n - 8);
        }
        17..=CAPTURE => {
            put::<16>(dst, src, 0);
            put::<16>(dst, src, n - 16);
        }
        _ => {}
    }
}

/// `Hasher` methods that mark a [`Captured`] stream as not a `str`'s.
macro_rules! not_a_str {
    ($($method:ident: $t:ty),* $(,)?) => {
        $(
            fn $method(&mut self, _: $t) {
                self.state = OTHER;
            }
        )*
    };
}

impl Hasher for Captured {
    #[inline(always)]
    fn write(&mut self, bytes: &[u8]) {
        if self.state == EMPTY && bytes.len() <= CAPTURE {
            copy_short(&mut self.buf, bytes);
            self.len = bytes.len() as u8;
            self.state = BYTES;
        } else {
            self.state = OTHER;
        }
    }

    #[inline(always)]
    fn write_u8(&mut self, byte: u8) {
        self.state = if self.state == BYTES && byte == 0xff {
            DONE
        } else {
            OTHER
        };
    }

    // Every other write is not a `str`'s stream (the defaults would pass them to `write`).
    not_a_str! {
        write_u16: u16, write_u32: u32, write_u64: u64, write_u128: u128, write_usize: usize,
        write_i8: i8, write_i16: i16, write_i32: i32, write_i64: i64, write_i128: i128,
        write_isize: isize
    }

    fn finish(&self) -> u64 {
        0
    }
}

impl StrKey {
    /// `key` as a slot keeps it (a short key's heap bytes are freed).
    pub(crate) fn new(key: String) -> StrKey {
        match Len::ALL.get(key.len()) {
            Some(&len) => {
                let mut bytes = [0; INLINE];
                bytes[..key.len()].copy_from_slice(key.as_bytes());
                StrKey::Inline(len, bytes)
            }
            None => StrKey::Heap(key.into_boxed_str()),
        }
    }

    /// Whether the key's bytes sit in the slot.
    pub(crate) fn is_inline(&self) -> bool {
        matches!(self, StrKey::Inline(..))
    }

    /// The key's bytes.
    #[inline(always)]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            StrKey::Inline(len, bytes) => &bytes[..*len as usize],
            StrKey::Heap(key) => key.as_bytes(),
        }
    }

    /// The key as a `str`: to hash it when a rebuild places it, and to hand it back as a
    /// `String`. (The bytes came from a `String`: always UTF-8.)
    pub(crate) fn as_str(&self) -> &str {
        match self {
            StrKey::Inline(..) => core::str::from_utf8(self.as_bytes()).unwrap_or_default(),
            StrKey::Heap(key) => key,
        }
    }

    /// Whether this key's bytes are `bytes` (a [`Captured`] key's).
    #[inline(always)]
    pub(crate) fn is(&self, bytes: &[u8]) -> bool {
        same_bytes(self.as_bytes(), bytes)
    }

    /// Whether `key` is this key: `key`'s `Hash` writes this key's bytes and `0xff`, as
    /// `str`'s does ([`Matcher`]).
    #[inline(always)]
    pub(crate) fn matches<Q: Hash + ?Sized>(&self, key: &Q) -> bool {
        let mut m = Matcher {
            key: self.as_bytes(),
            at: 0,
            same: true,
        };
        key.hash(&mut m);
        m.same && m.at == m.key.len() + 1
    }
}

/// Whether `a == b`, for the short keys a probe compares: a few word loads, overlapping,
/// inlined (a slice compare calls `memcmp`, whose vector loads read past a short key into the
/// next cache line: 0.3 more last-level misses a lookup under callgrind at 100,000 keys).
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    #[inline(always)]
    fn word(s: &[u8], at: usize) -> u64 {
        let mut w = [0; 8];
        w.copy_from_slice(&s[at..at + 8]);
        u64::from_ne_bytes(w)
    }
    #[inline(always)]
    fn half(s: &[u8], at: usize) -> u32 {
        let mut w = [0; 4];
        w.copy_from_slice(&s[at..at + 4]);
        u32::from_ne_bytes(w)
    }
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        17..=24 => {
            word(a, 0) == word(b, 0) && word(a, 8) == word(b, 8) && word(a, n - 8) == word(b, n - 8)
        }
        _ => a == b,
    }
}

/// A [`Hasher`] that compares what it is fed with `key`'s bytes followed by `0xff` (what
/// `str`'s `Hash` writes: `write_str`, whose default is the bytes and then `write_u8(0xff)`).
struct Matcher<'k> {
    key: &'k [u8],
    /// How much of `key` and its `0xff` has been matched.
    at: usize,
    /// Nothing fed so far differed.
    same: bool,
}

impl Matcher<'_> {
    /// Every stream but a `str`'s bytes in one write: kept out of line, so that the one-write
    /// path (what `str`'s `write_str` calls) saves no registers and runs 11 instructions
    /// fewer a lookup (`write_str` itself is still a call).
    #[cold]
    #[inline(never)]
    fn write_parts(&mut self, bytes: &[u8]) {
        let n = self.key.len();
        let mut bytes = bytes;
        if self.at < n {
            let take = bytes.len().min(n - self.at);
            let (head, tail) = bytes.split_at(take);
            match self.key.get(self.at..self.at + take) {
                Some(key) if same_bytes(key, head) => {}
                _ => self.same = false,
            }
            self.at += take;
            bytes = tail;
        }
        match bytes {
            [] => {}
            [0xff] if self.at == n => self.at = n + 1,
            _ => self.same = false,
        }
    }
}

impl Hasher for Matcher<'_> {
    #[inline(always)]
    fn write(&mut self, bytes: &[u8]) {
        if self.at == 0 && bytes.len() == self.key.len() {
            // A `str`'s bytes in one write: the whole key at once.
            self.same = same_bytes(self.key, bytes);
            self.at = bytes.len();
        } else {
            self.write_parts(bytes);
        }
    }

    #[inline(always)]
    fn write_u8(&mut self, byte: u8) {
        if byte == 0xff && self.at == self.key.len() {
            // A `str`'s terminator, right after its bytes.
            self.at += 1;
        } else {
            self.write_parts(&[byte]);
        }
    }

    fn finish(&self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec::Vec;

    fn key(n: usize) -> String {
        (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect()
    }

    #[test]
    fn keys_of_every_length_round_trip_and_short_ones_sit_inline() {
        for n in 0..40 {
            let k = StrKey::new(key(n));
            assert_eq!(k.as_str(), key(n));
            assert_eq!(k.as_bytes(), key(n).as_bytes());
            assert_eq!(matches!(k, StrKey::Inline(..)), n <= INLINE, "length {n}");
            assert_eq!(k.clone().as_str(), key(n));
        }
        let multibyte = "é".repeat(11); // 22 bytes
        assert_eq!(StrKey::new(multibyte.clone()).as_str(), multibyte);
    }

    #[test]
    fn a_key_matches_itself_borrowed_as_str_or_string_and_nothing_else() {
        let keys: Vec<String> = (0..40)
            .map(key)
            .chain(["user:1", "user:10", "", "\u{ff}", "a\u{0}"].map(ToString::to_string))
            .collect();
        for a in &keys {
            let k = StrKey::new(a.clone());
            for b in &keys {
                assert_eq!(k.matches(b.as_str()), a == b, "{a:?} vs {b:?}");
                assert_eq!(k.matches(b), a == b, "{a:?} vs String {b:?}");
            }
        }
    }

    #[test]
    fn same_bytes_sees_a_difference_at_any_place_of_any_length() {
        for n in 0..48 {
            let a: Vec<u8> = (0..n).map(|i| i as u8 ^ 0x5a).collect();
            assert!(same_bytes(&a, &a.clone()), "length {n}");
            for at in 0..n {
                let mut b = a.clone();
                b[at] ^= 0x80;
                assert!(!same_bytes(&a, &b), "length {n}, byte {at}");
            }
            let mut longer = a.clone();
            longer.push(0);
            assert!(!same_bytes(&a, &longer));
        }
    }

    fn captured<Q: Hash + ?Sized>(key: &Q) -> Option<Vec<u8>> {
        let mut c = Captured::new();
        c.capture(key);
        c.is_str().then(|| c.bytes().to_vec())
    }

    #[test]
    fn a_str_of_at_most_capture_bytes_is_captured_whole() {
        for n in 0..48 {
            let k = key(n);
            let want = (n <= CAPTURE).then(|| k.as_bytes().to_vec());
            assert_eq!(captured(k.as_str()), want, "str of {n} bytes");
            assert_eq!(captured(&k), want, "String of {n} bytes");
        }
        let multibyte = "é".repeat(16); // 32 bytes
        assert_eq!(
            captured(multibyte.as_str()),
            Some(multibyte.as_bytes().to_vec())
        );
    }

    #[test]
    fn a_captured_key_matches_exactly_what_the_matcher_matches() {
        let keys: Vec<String> = (0..40)
            .map(key)
            .chain(["user:1", "user:10", "", "\u{ff}", "a\u{0}", "é"].map(ToString::to_string))
            .collect();
        for a in &keys {
            let k = StrKey::new(a.clone());
            for b in &keys {
                if let Some(bytes) = captured(b.as_str()) {
                    assert_eq!(k.is(&bytes), k.matches(b.as_str()), "{a:?} vs {b:?}");
                    assert_eq!(k.is(&bytes), a == b, "{a:?} vs {b:?}");
                }
            }
        }
    }

    #[test]
    fn a_stream_that_is_not_one_short_str_is_not_captured() {
        // The bytes without the terminator, the terminator alone, a terminator other than 0xff.
        assert_eq!(captured(&[b'a', b'b'][..]), None);
        struct Stream(&'static [&'static [u8]], &'static [u8]);
        impl Hash for Stream {
            fn hash<H: Hasher>(&self, h: &mut H) {
                for w in self.0 {
                    h.write(w);
                }
                for &b in self.1 {
                    h.write_u8(b);
                }
            }
        }
        assert_eq!(captured(&Stream(&[], &[0xff])), None);
        assert_eq!(captured(&Stream(&[b"ab"], &[0xfe])), None);
        assert_eq!(captured(&Stream(&[b"ab"], &[0xff, 0xff])), None);
        // A str's bytes in two writes: the matcher's case, not one write.
        assert_eq!(captured(&Stream(&[b"a", b"b"], &[0xff])), None);
        assert_eq!(captured(&Stream(&[b"ab"], &[0xff])), Some(b"ab".to_vec()));
        // Integers, a tuple, a str past the capture.
        assert_eq!(captured(&7u64), None);
        assert_eq!(captured(&("ab", 1u8)), None);
        assert_eq!(captured(&("ab", 7u32)), None);
        assert_eq!(captured("x".repeat(CAPTURE + 1).as_str()), None);
    }

    #[test]
    fn a_stream_that_is_not_a_str_does_not_match() {
        let k = StrKey::new("ab".to_string());
        // The same bytes without the terminator, or with more after it.
        assert!(!k.matches(&[b'a', b'b'][..]));
        assert!(!k.matches(&("ab", 1u8)));
        // The same bytes in two writes, then the terminator: a `str`'s stream.
        struct Split;
        impl Hash for Split {
            fn hash<H: Hasher>(&self, h: &mut H) {
                h.write(b"a");
                h.write(b"b");
                h.write_u8(0xff);
            }
        }
        assert!(k.matches(&Split));
    }
}
