//! The keys every mode walks: the order keys are created in and the sequence of lookups, in
//! sequential or shuffled (random) order, shared by all threads from different offsets.

/// The order of creation and lookups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// Keys created 0, 1, 2, …; looked up 0, 1, 2, … round and round.
    Seq,
    /// Keys created in a shuffled order; looked up in shuffled passes (each pass a new
    /// permutation, so every key comes once per pass, in no order a prefetcher can follow).
    Shuffled,
}

impl Order {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Order::Seq => "seq",
            Order::Shuffled => "shuffled",
        }
    }

    /// `ORDER` (`seq`, `shuffled` or `seq,shuffled`; default both).
    pub(crate) fn from_env() -> Vec<Order> {
        let s = std::env::var("ORDER").unwrap_or_else(|_| "seq,shuffled".into());
        s.split(',')
            .map(|o| match o.trim() {
                "seq" => Order::Seq,
                "shuffled" | "random" => Order::Shuffled,
                other => panic!("ORDER: unknown order {other} (seq, shuffled)"),
            })
            .collect()
    }
}

/// A small fixed-seed generator (xorshift64*): the same shuffles in every run.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Fisher–Yates.
    pub(crate) fn shuffle(&mut self, v: &mut [u32]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

/// The order in which keys 0 .. n are created.
pub(crate) fn creation(order: Order, n: u64) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n as u32).collect();
    if order == Order::Shuffled {
        Rng::new(0x5EED_0001).shuffle(&mut v);
    }
    v
}

/// The lookups, `len` key indices (at least one pass over every key); thread t of T walks it
/// from `t × len / T`, wrapping around.
pub(crate) fn lookups(order: Order, n: u64, len: usize) -> Vec<u32> {
    let len = len.max(n as usize);
    match order {
        Order::Seq => (0..len).map(|i| (i as u64 % n) as u32).collect(),
        Order::Shuffled => {
            let mut rng = Rng::new(0x5EED_0002);
            let mut v = Vec::with_capacity(len);
            while v.len() < len {
                let mut pass: Vec<u32> = (0..n as u32).collect();
                rng.shuffle(&mut pass);
                v.extend_from_slice(&pass);
            }
            v.truncate(len);
            v
        }
    }
}

/// The `u64` key of index `i`: `i` itself, or with `KEYVALS=random` a fixed bijection of it
/// (splitmix64's finalizer), keys with no structure, as hashed ids or client addresses are.
/// Consecutive ids meet a hash of one multiply (foldhash's for a `u64`, which `Keyed`'s table
/// uses) as a low-discrepancy sequence: in most processes (the hash seed decides how much) they
/// share home slots less than random keys would, and a lookup probes fewer slots (callgrind:
/// 152–173 instructions a `Keyed<u64>` call at 100,000 keys, 175 with keys of no structure).
/// `IntKeyed` (two multiplies) and governor (SipHash) see no difference.
pub(crate) fn u64_key(i: u32) -> u64 {
    static RANDOM: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let random = *RANDOM.get_or_init(|| match std::env::var("KEYVALS").as_deref() {
        Ok("random") => true,
        Ok("seq") | Err(_) => false,
        Ok(other) => panic!("KEYVALS: unknown {other} (seq, random)"),
    });
    if !random {
        return u64::from(i);
    }
    let mut z = u64::from(i).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The length of the `String` keys (`KEY_LEN`, default 15, at least 15): `user:` and the
/// index, zero-padded. 15 bytes is a user id as a service would see it; 40 a token.
pub(crate) fn key_len() -> usize {
    static LEN: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LEN.get_or_init(|| {
        std::env::var("KEY_LEN").map_or(15, |s| s.parse::<usize>().unwrap().max(15))
    })
}

/// The `String` key of index `i`: `user:` and `i` zero-padded to [`key_len`] bytes.
pub(crate) fn string_key(i: u32) -> String {
    format!("user:{i:0w$}", w = key_len() - 5)
}

std::thread_local! {
    /// Each thread's key buffer for [`with_hot_key`]: reused, so its bytes stay in L1.
    static HOT_KEY: std::cell::RefCell<String> = std::cell::RefCell::new(String::with_capacity(64));
}

/// Calls `f` with [`string_key`]`(i)` written into this thread's reused buffer: the key where
/// a server has it, in bytes it has just parsed from the request (in L1), rather than read
/// from a vector of 100,000 keys (a cache miss on the `String` and one on its bytes, which
/// every peer pays alike). The `u64` rows' keys are computed from `i` the same way.
pub(crate) fn with_hot_key<R>(i: u32, f: impl FnOnce(&String) -> R) -> R {
    HOT_KEY.with(|buf| {
        let mut buf = buf.borrow_mut();
        buf.clear();
        buf.push_str("user:");
        for _ in 15..key_len() {
            buf.push('0');
        }
        let mut digits = [b'0'; 10];
        let mut rest = i;
        for d in digits.iter_mut().rev() {
            *d = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        buf.push_str(std::str::from_utf8(&digits).expect("ASCII digits"));
        f(&buf)
    })
}

/// A comma-separated list of numbers from the environment variable `var`, else `default`.
pub(crate) fn list_from_env<T: std::str::FromStr>(var: &str, default: &str) -> Vec<T>
where
    T::Err: std::fmt::Debug,
{
    std::env::var(var)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| s.trim().replace('_', "").parse().expect(var))
        .collect()
}
