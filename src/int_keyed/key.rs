//! Where a key lives: the [`IntKey`] trait (a key's 64 bits), its hash, its two buckets
//! and home way, and its candidate slots.

use super::*;

pub(super) mod sealed {
    pub trait Sealed {
        /// The key's 64 bits, IPv4 addresses masked with `v4`, IPv6 ones with `v6` (the
        /// masks of the limiter's prefixes; other keys ignore them).
        fn bits(self, v4: u32, v6: u64) -> u64;
    }
}

/// An integer key for [`IntKeyed`]: converted to a `u64` without loss (`i64` and `usize` by
/// their bits, [`Ipv4Addr`] as its `u32`), or, for IPv6 addresses, to the address's network
/// prefix (see [`IpKey`]). Sealed: implemented for `u64`, `u32`, `u16`, `i64`, `usize`,
/// [`Ipv4Addr`], [`Ipv6Addr`] and [`IpAddr`] only.
///
/// # Examples
///
/// ```
/// use hotlimit::IntKey;
/// use std::net::{Ipv4Addr, Ipv6Addr};
///
/// assert_eq!(Ipv4Addr::new(10, 0, 0, 1).to_u64(), 0x0A00_0001);
/// assert_eq!((-1i64).to_u64(), u64::MAX);
/// // An IPv6 address under the default /56 prefix.
/// let ip: Ipv6Addr = "2001:db8:aa:bbcc:1:2:3:4".parse()?;
/// assert_eq!(ip.to_u64(), 0x2001_0db8_00aa_bb00);
/// # Ok::<(), std::net::AddrParseError>(())
/// ```
pub trait IntKey: Copy + Send + Sync + 'static + sealed::Sealed {
    /// The key as 64 bits; distinct keys give distinct values (IP addresses: distinct
    /// networks under the default prefixes, /32 for IPv4 and /56 for IPv6).
    fn to_u64(self) -> u64;
}

macro_rules! int_key {
    ($($t:ty => |$k:ident| $e:expr),* $(,)?) => {$(
        impl sealed::Sealed for $t {
            #[inline(always)]
            fn bits(self, _: u32, _: u64) -> u64 {
                let $k = self;
                $e
            }
        }
        impl IntKey for $t {
            #[inline(always)]
            fn to_u64(self) -> u64 {
                let $k = self;
                $e
            }
        }
    )*};
}

int_key! {
    u64 => |k| k,
    u32 => |k| u64::from(k),
    u16 => |k| u64::from(k),
    // The bits: a bijection from i64 to u64.
    i64 => |k| k as u64,
    // usize is at most 64 bits on every target Rust supports.
    usize => |k| k as u64,
}

/// A key's candidate slots, as indices in the table, ascending: its two buckets' slots.
pub(super) struct Candidates {
    pub(super) idx: [usize; 2 * WAYS],
    pub(super) n: usize,
}

/// The folded multiply: the 128-bit product's halves XORed (foldhash's mixing step).
#[inline(always)]
pub(super) fn fold_mul(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

impl<K, C> IntKeyed<K, C> {
    /// The key's 64 bits under this limiter's prefixes: every method that takes a key
    /// converts it here (never with [`IntKey::to_u64`], which knows only the default prefixes).
    #[inline(always)]
    pub(super) fn key_bits(&self, key: K) -> u64
    where
        K: IntKey,
    {
        sealed::Sealed::bits(key, self.v4_mask, self.v6_mask)
    }

    /// The key's hash: two folded multiplies, the first with both operands seeded (foldhash's
    /// integer step; not cryptographic, but an attacker who does not know the seeds cannot aim
    /// keys at a bucket). One round is not enough: for consecutive keys (user ids) its two
    /// buckets are linearly related, and keys were refused below half the capacity (measured:
    /// `bucket_full_refusals_are_rare_consecutive_keys`).
    #[inline(always)]
    pub(super) fn hash(&self, key: u64) -> u64 {
        fold_mul(
            fold_mul(key ^ self.seed[0], self.seed[1]),
            0x9E37_79B9_7F4A_7C15,
        )
    }

    /// The hash's first bucket, from bits 0..30 (at most 2^30 buckets).
    #[inline(always)]
    pub(super) fn b1(&self, h: u64) -> usize {
        h as usize & self.mask
    }

    /// The hash's second bucket, from bits 32..62: never b1 unless the table has one bucket.
    #[inline(always)]
    pub(super) fn b2(&self, h: u64) -> usize {
        let b1 = self.b1(h);
        let b2 = (h >> 32) as usize & self.mask;
        if b2 == b1 {
            (b1 ^ 1) & self.mask
        } else {
            b2
        }
    }

    /// The hash's home way, from bits 62..64: inserts try the ways of each bucket from the
    /// home way on, and lookups look there first, so that most lookups load one slot.
    #[inline(always)]
    pub(super) fn home(h: u64) -> usize {
        (h >> 62) as usize
    }

    /// The key's two buckets and home way.
    pub(super) fn buckets_of(&self, key: u64) -> (usize, usize, usize) {
        let h = self.hash(key);
        (self.b1(h), self.b2(h), Self::home(h))
    }

    pub(super) fn candidates(&self, b1: usize, b2: usize) -> Candidates {
        let (lo, hi) = if b1 < b2 { (b1, b2) } else { (b2, b1) };
        let mut idx = [0; 2 * WAYS];
        for j in 0..WAYS {
            idx[j] = lo * WAYS + j;
            idx[WAYS + j] = hi * WAYS + j;
        }
        Candidates {
            idx,
            n: if lo == hi { WAYS } else { 2 * WAYS },
        }
    }

    pub(super) fn scan(&self, c: &Candidates) -> [u128; 2 * WAYS] {
        let mut snap = [0; 2 * WAYS];
        for (s, &i) in snap.iter_mut().zip(&c.idx[..c.n]) {
            // SeqCst: the scan's loads and the claims' CASes are a Dekker pattern: of two
            // claimants of one key, the later claim's scan must see the earlier claim (guide).
            *s = self.slot(i).load(Ordering::SeqCst);
        }
        snap
    }
}
