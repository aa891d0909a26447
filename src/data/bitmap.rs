//! Bit vectors built one row at a time: validity masks and boolean columns (bit `i` is row `i`).

/// A growable bit vector, appended one bit per row; bits past the length are zero.
#[derive(Clone, Default)]
pub(crate) struct BitBuilder {
    words: Vec<u64>,
    current: u64,
    len: usize,
}

impl BitBuilder {
    /// An empty bit vector with room for `bits` bits.
    pub(crate) fn with_capacity(bits: usize) -> Self {
        BitBuilder {
            words: Vec::with_capacity(bits / 64 + 1),
            ..BitBuilder::default()
        }
    }

    /// `n` bits all equal to `bit`.
    pub(crate) fn filled(n: usize, bit: bool) -> Self {
        let mut b = BitBuilder::with_capacity(n);
        let word = if bit { u64::MAX } else { 0 };
        b.words.resize(n / 64, word);
        b.len = n / 64 * 64;
        for _ in b.len..n {
            b.push(bit);
        }
        b
    }

    /// Appends one bit.
    #[inline]
    pub(crate) fn push(&mut self, bit: bool) {
        self.current |= (bit as u64) << (self.len & 63);
        self.len += 1;
        if self.len & 63 == 0 {
            self.words.push(self.current);
            self.current = 0;
        }
    }

    /// Number of bits.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The words, the last one padded with zeros.
    pub(crate) fn finish(mut self) -> Vec<u64> {
        if self.len & 63 != 0 {
            self.words.push(self.current);
        }
        self.words
    }
}

/// A validity bitmap being built: only a count while every bit is set, as in most columns,
/// and a bitmap from the first clear bit on.
#[derive(Default)]
pub(crate) struct Validity {
    /// The number of bits while there is no bitmap.
    len: usize,
    bits: Option<BitBuilder>,
}

impl Validity {
    /// Appends one bit.
    #[inline(always)]
    pub(crate) fn push(&mut self, bit: bool) {
        match &mut self.bits {
            None if bit => self.len += 1,
            None => self.first_clear(),
            Some(b) => b.push(bit),
        }
    }

    /// Starts the bitmap at the first clear bit.
    #[cold]
    fn first_clear(&mut self) {
        let mut b = BitBuilder::filled(self.len, true);
        b.push(false);
        self.bits = Some(b);
    }

    /// Number of bits.
    pub(crate) fn len(&self) -> usize {
        self.bits.as_ref().map_or(self.len, BitBuilder::len)
    }

    /// The words of the bitmap (the last padded with zeros), or `None` when every bit is set.
    pub(crate) fn finish(self) -> Option<Vec<u64>> {
        self.bits.map(BitBuilder::finish)
    }
}

/// The bit at `i` of a finished bit vector.
#[inline]
pub(crate) fn get(words: &[u64], i: usize) -> bool {
    words.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
}

/// A word with the low `n` bits set (`n <= 64`).
#[inline]
pub(crate) fn low_mask(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_and_fill_agree() {
        for n in [0, 1, 63, 64, 65, 130] {
            for bit in [false, true] {
                let mut pushed = BitBuilder::default();
                for _ in 0..n {
                    pushed.push(bit);
                }
                let filled = BitBuilder::filled(n, bit);
                assert_eq!(pushed.len(), filled.len());
                assert_eq!(pushed.finish(), filled.finish());
            }
        }
    }

    #[test]
    fn bits_read_back() {
        let mut b = BitBuilder::default();
        let pattern: Vec<bool> = (0..200).map(|i| i % 3 == 0 || i % 7 == 0).collect();
        for &p in &pattern {
            b.push(p);
        }
        let words = b.finish();
        for (i, &p) in pattern.iter().enumerate() {
            assert_eq!(get(&words, i), p);
        }
        assert!(!get(&words, 10_000));
        assert_eq!(low_mask(0), 0);
        assert_eq!(low_mask(3), 7);
        assert_eq!(low_mask(64), u64::MAX);
    }
}
