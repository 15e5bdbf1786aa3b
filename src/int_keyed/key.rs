//! Where a key lives: the [`IntKey`] trait (a key's 64 bits), its hash, its buckets (two in
//! the primary area, two in the secondary area where the table has one) and home way, and its
//! candidate slots.

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

/// A key's candidate slots, as indices in the table, ascending: the slots of its buckets (two
/// in the primary area, and two in the secondary area where the table has one).
pub(super) struct Candidates {
    pub(super) idx: [usize; CANDIDATES],
    pub(super) n: usize,
    /// Positions in `idx` in the order an insert tries them: b1's ways from the home way on,
    /// then b2's, then the secondary buckets' (so that most keys sit where a hit looks first).
    pub(super) claim_order: [u8; CANDIDATES],
}

/// The most candidate slots a key has: four buckets of [`WAYS`].
pub(super) const CANDIDATES: usize = 4 * WAYS;

/// The folded multiply: the 128-bit product's halves XORed (foldhash's mixing step).
#[inline(always)]
pub(super) fn fold_mul(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// `x` mapped onto `0..n` by a multiply and a shift (Lemire's fast range): uniform for a
/// uniform `x`, for any `n` (not only powers of two), `n` ≤ 2^32.
#[inline(always)]
fn range(x: u32, n: usize) -> usize {
    ((u64::from(x) * n as u64) >> 32) as usize
}

/// The second of a pair of buckets in `0..n` from `x`, never `first` unless `n` is 1.
#[inline(always)]
fn other(first: usize, x: u32, n: usize) -> usize {
    let b = range(x, n);
    if b != first {
        b
    } else if first + 1 < n {
        first + 1
    } else {
        0
    }
}

/// A key's buckets, in the order a hit and an insert try them, and its home way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Place {
    /// b1, b2 in the primary area (equal only when it has one bucket).
    pub(super) primary: [usize; 2],
    /// b3, b4 in the secondary area (indices after the primary's); `None` where the table
    /// has no secondary area. Equal only when it has one bucket.
    pub(super) secondary: Option<[usize; 2]>,
    /// The way of each bucket a hit looks at first and an insert tries first.
    pub(super) home: usize,
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

    /// The hash's first bucket: its bits 0..30 masked where the primary area is a power of two
    /// (the sparse layout: one AND on the hit path), its low 32 bits mapped onto the area
    /// (dense).
    #[inline(always)]
    pub(super) fn b1(&self, h: u64) -> usize {
        if self.secondary == 0 {
            h as usize & (self.primary - 1)
        } else {
            range(h as u32, self.primary)
        }
    }

    /// The hash's second bucket, never b1 unless the primary area has one bucket: bits 32..62
    /// masked (sparse), or bits 28..60 mapped onto the area (dense), so that neither uses
    /// the home way's bits.
    #[inline(always)]
    pub(super) fn b2(&self, h: u64) -> usize {
        if self.secondary == 0 {
            let b1 = self.b1(h);
            let b2 = (h >> 32) as usize & (self.primary - 1);
            if b2 == b1 {
                (b1 ^ 1) & (self.primary - 1)
            } else {
                b2
            }
        } else {
            other(self.b1(h), (h >> 28) as u32, self.primary)
        }
    }

    /// The hash's home way, from bits 62..64 (which neither b1 nor b2 uses): inserts try the
    /// ways of each bucket from the home way on, and lookups look there first, so that most
    /// lookups load one slot.
    #[inline(always)]
    pub(super) fn home(h: u64) -> usize {
        (h >> 62) as usize
    }

    /// The hash's secondary buckets (b3, b4), from a third folded multiply of the hash, or
    /// `None` where the table has no secondary area.
    #[inline(always)]
    pub(super) fn secondary_of(&self, h: u64) -> Option<[usize; 2]> {
        if self.secondary == 0 {
            return None;
        }
        let g = fold_mul(h, 0xD6E8_FEB8_6659_FD93);
        let b3 = range(g as u32, self.secondary);
        let b4 = other(b3, (g >> 32) as u32, self.secondary);
        Some([self.primary + b3, self.primary + b4])
    }

    /// Where the key with hash `h` may live.
    #[inline]
    pub(super) fn place(&self, h: u64) -> Place {
        Place {
            primary: [self.b1(h), self.b2(h)],
            secondary: self.secondary_of(h),
            home: Self::home(h),
        }
    }

    /// The key's two primary buckets and home way (for the loom models).
    #[cfg(hotlimit_loom)]
    pub(super) fn buckets_of(&self, key: u64) -> (usize, usize, usize) {
        let h = self.hash(key);
        (self.b1(h), self.b2(h), Self::home(h))
    }

    pub(super) fn candidates(&self, p: &Place) -> Candidates {
        // The distinct buckets in the insert's order, then ascending (every secondary bucket
        // comes after every primary one).
        let mut pref = [0; 4];
        let mut nb = 0;
        let [b1, b2] = p.primary;
        let mut push = |b: usize| {
            if !pref[..nb].contains(&b) {
                pref[nb] = b;
                nb += 1;
            }
        };
        push(b1);
        push(b2);
        if let Some([b3, b4]) = p.secondary {
            push(b3);
            push(b4);
        }
        let mut asc = pref;
        asc[..nb].sort_unstable();
        let mut c = Candidates {
            idx: [0; CANDIDATES],
            n: nb * WAYS,
            claim_order: [0; CANDIDATES],
        };
        for (j, &b) in asc[..nb].iter().enumerate() {
            for w in 0..WAYS {
                c.idx[j * WAYS + w] = b * WAYS + w;
            }
        }
        let mut k = 0;
        for &b in &pref[..nb] {
            let j = asc[..nb].iter().position(|&a| a == b).unwrap_or(0);
            for w in 0..WAYS {
                c.claim_order[k] = (j * WAYS + (p.home + w) % WAYS) as u8;
                k += 1;
            }
        }
        c
    }

    pub(super) fn scan(&self, c: &Candidates) -> [u128; CANDIDATES] {
        let mut snap = [0; CANDIDATES];
        for (s, &i) in snap.iter_mut().zip(&c.idx[..c.n]) {
            // SeqCst: the scan's loads and the claims' CASes are a Dekker pattern: of two
            // claimants of one key, the later claim's scan must see the earlier claim (guide).
            *s = self.slot(i).load(Ordering::SeqCst);
        }
        snap
    }
}
