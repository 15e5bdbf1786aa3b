//! [`Buf`]: header text written on the stack (a spill to the heap only past 128 bytes), and
//! integers written into it two digits at a time, without formatting machinery.

/// Two decimal digits for each of 0..100.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Text for a header value, on the stack unless it is long.
pub(crate) struct Buf {
    bytes: [u8; 128],
    len: usize,
    /// The text once it outgrew `bytes` (several policies with long names).
    spill: Vec<u8>,
}

impl Buf {
    #[inline]
    pub(crate) fn new() -> Buf {
        Buf {
            bytes: [0; 128],
            len: 0,
            spill: Vec::new(),
        }
    }

    #[inline]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        if self.spill.is_empty() {
            &self.bytes[..self.len]
        } else {
            &self.spill[..]
        }
    }

    /// Appends `s`.
    #[inline]
    pub(crate) fn push(&mut self, s: &[u8]) {
        match self.bytes.get_mut(self.len..self.len + s.len()) {
            Some(dst) if self.spill.is_empty() => {
                dst.copy_from_slice(s);
                self.len += s.len();
            }
            _ => self.push_spilled(s),
        }
    }

    #[cold]
    fn push_spilled(&mut self, s: &[u8]) {
        if self.spill.is_empty() {
            self.spill.extend_from_slice(&self.bytes[..self.len]);
        }
        self.spill.extend_from_slice(s);
    }

    /// Appends `n` in decimal, two digits at a time.
    #[inline]
    pub(crate) fn push_u64(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        while n >= 100 {
            // `n % 100 < 100`: the cast keeps it.
            let d = (n % 100) as usize * 2;
            n /= 100;
            i -= 2;
            digits[i..i + 2].copy_from_slice(&PAIRS[d..d + 2]);
        }
        if n >= 10 {
            let d = n as usize * 2;
            i -= 2;
            digits[i..i + 2].copy_from_slice(&PAIRS[d..d + 2]);
        } else {
            i -= 1;
            // `n < 10`: one digit.
            digits[i] = b'0' + n as u8;
        }
        self.push(&digits[i..]);
    }

    /// Appends `, ` unless this is the first item.
    #[inline]
    pub(crate) fn separate(&mut self, first: bool) {
        if !first {
            self.push(b", ");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_spills_are_written_exactly() {
        let mut b = Buf::new();
        for n in [0, 7, 10, 99, 100, 1_000_000_007, u64::MAX] {
            b.separate(n == 0);
            b.push_u64(n);
        }
        assert_eq!(
            b.as_bytes(),
            b"0, 7, 10, 99, 100, 1000000007, 18446744073709551615"
        );
        let mut long = Buf::new();
        for i in 0..40u64 {
            long.separate(i == 0);
            long.push(b"\"p\";r=");
            long.push_u64(i);
        }
        let text = std::str::from_utf8(long.as_bytes()).unwrap();
        assert!(text.starts_with(r#""p";r=0, "p";r=1, "#));
        assert!(text.ends_with(r#""p";r=39"#));
        assert_eq!(text.len(), 40 * 7 + 30 + 39 * 2);
    }
}
