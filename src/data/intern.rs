//! A byte-string interner that numbers the distinct cells of a text column while loading.
//!
//! It is an open-addressing hash table over one byte arena (no allocation per value), with a
//! fast multiplicative hash of a packed key (values of up to 16 bytes are compared
//! as two words, without `memcmp`): text columns are looked up once per cell, so this is on the hot
//! path of loading. Every new value is checked to be UTF-8 once, when it is first seen.

/// Interns byte strings, giving each distinct one a dense `u32` code in order of first sight.
#[derive(Clone, Default)]
pub(crate) struct Interner {
    arena: Vec<u8>,
    /// `ends[c]` is the end of value `c` in the arena; it starts at `ends[c - 1]` (or 0).
    ends: Vec<usize>,
    entries: Vec<Entry>,
    /// Slots hold `code + 1`, 0 when empty; the length is a power of two.
    slots: Vec<u32>,
    shift: u32,
    /// `code + 1` of each one-byte value seen, 0 for the others (256 entries once one is
    /// seen): one-letter codes (`F`, `M`, `Y`, `N`) are common, and skip the hash table.
    single: Vec<u32>,
}

/// What a slot probe compares before looking at the bytes.
#[derive(Clone, Copy)]
struct Entry {
    hash: u64,
    key: (u64, u64),
    len: usize,
}

/// Why a value could not be interned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InternError {
    /// The value is not UTF-8.
    InvalidUtf8,
    /// The column has run out of codes.
    Full,
}

/// A short value packed into two words, which with its length identifies it: bytes are read
/// with overlapping loads (first and last 8, or first and last 4, or first, middle and last
/// one), so every byte of a value of at most 16 bytes lands in the key.
#[inline]
fn pack(b: &[u8]) -> (u64, u64) {
    let n = b.len();
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[i..i + 8]);
        u64::from_le_bytes(w)
    };
    let half = |i: usize| {
        let mut w = [0u8; 4];
        w.copy_from_slice(&b[i..i + 4]);
        u32::from_le_bytes(w) as u64
    };
    if n >= 8 {
        (word(0), word(n - 8))
    } else if n >= 4 {
        (half(0) | half(n - 4) << 32, 0)
    } else if n > 0 {
        (
            b[0] as u64 | (b[n / 2] as u64) << 8 | (b[n - 1] as u64) << 16,
            0,
        )
    } else {
        (0, 0)
    }
}

/// Values up to this long are compared by their packed key alone.
const SHORT: usize = 16;

/// A fast non-cryptographic hash of a value and its packed key.
#[inline]
fn hash(bytes: &[u8], key: (u64, u64)) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = (key.0 ^ (bytes.len() as u64).rotate_left(56)).wrapping_mul(K);
    h = (h.rotate_left(23) ^ key.1).wrapping_mul(K);
    if bytes.len() > SHORT {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            h = (h.rotate_left(23) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
    }
    h
}

impl Interner {
    /// Number of distinct values.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The value with code `c`.
    pub(crate) fn get(&self, c: usize) -> &[u8] {
        let start = if c == 0 { 0 } else { self.ends[c - 1] };
        &self.arena[start..self.ends[c]]
    }

    #[inline]
    fn slot_of(&self, h: u64) -> usize {
        (h >> self.shift) as usize
    }

    /// The code of `bytes`, adding it when new.
    #[inline]
    pub(crate) fn intern(&mut self, bytes: &[u8]) -> Result<u32, InternError> {
        if let [b] = bytes {
            if let Some(&s) = self.single.get(usize::from(*b)) {
                if s != 0 {
                    return Ok(s - 1);
                }
            }
            return self.intern_single(*b);
        }
        self.intern_table(bytes)
    }

    /// The code of the one-byte value `b`, from the hash table, remembered for the next time.
    #[cold]
    fn intern_single(&mut self, b: u8) -> Result<u32, InternError> {
        let code = self.intern_table(&[b])?;
        if self.single.is_empty() {
            self.single = vec![0; 256];
        }
        self.single[usize::from(b)] = code + 1;
        Ok(code)
    }

    /// [`Interner::intern`] through the hash table.
    #[inline]
    fn intern_table(&mut self, bytes: &[u8]) -> Result<u32, InternError> {
        if self.slots.is_empty() {
            self.grow();
        }
        let key = pack(bytes);
        let h = hash(bytes, key);
        let mask = self.slots.len() - 1;
        let mut i = self.slot_of(h);
        loop {
            let s = self.slots[i];
            if s == 0 {
                break;
            }
            let c = (s - 1) as usize;
            let e = &self.entries[c];
            if e.hash == h
                && e.key == key
                && e.len == bytes.len()
                && (bytes.len() <= SHORT || self.get(c) == bytes)
            {
                return Ok(c as u32);
            }
            i = (i + 1) & mask;
        }
        self.insert(bytes, key, h, i)
    }

    /// Adds a value not seen before at slot `i`.
    #[cold]
    fn insert(
        &mut self,
        bytes: &[u8],
        key: (u64, u64),
        hash: u64,
        i: usize,
    ) -> Result<u32, InternError> {
        if std::str::from_utf8(bytes).is_err() {
            return Err(InternError::InvalidUtf8);
        }
        let code = self.ends.len();
        if code >= (u32::MAX - 1) as usize {
            return Err(InternError::Full);
        }
        self.arena.extend_from_slice(bytes);
        self.ends.push(self.arena.len());
        self.entries.push(Entry {
            hash,
            key,
            len: bytes.len(),
        });
        self.slots[i] = code as u32 + 1;
        if self.ends.len() * 2 > self.slots.len() {
            self.grow();
        }
        Ok(code as u32)
    }

    /// Doubles the slot table and re-inserts every value.
    fn grow(&mut self) {
        let n = (self.slots.len() * 2).max(16);
        self.shift = 64 - n.trailing_zeros();
        self.slots = vec![0; n];
        let mask = n - 1;
        for c in 0..self.entries.len() {
            let mut i = self.slot_of(self.entries[c].hash);
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = c as u32 + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_dense_and_stable() {
        let mut t = Interner::default();
        let words: Vec<String> = (0..1000).map(|i| format!("value-{}", i % 137)).collect();
        let mut first = std::collections::HashMap::new();
        for w in &words {
            let c = t.intern(w.as_bytes()).expect("utf-8");
            let prev = *first.entry(w.clone()).or_insert(c);
            assert_eq!(prev, c);
        }
        assert_eq!(t.len(), 137);
        for (w, &c) in &first {
            assert_eq!(t.get(c as usize), w.as_bytes());
        }
        assert_eq!(t.intern(b""), Ok(137));
        assert_eq!(t.get(137), b"");
    }

    #[test]
    fn one_byte_values_keep_the_order_of_first_sight() {
        let mut t = Interner::default();
        let cells: [&[u8]; 9] = [b"M", b"ab", b"F", b"M", b"", b"F", b"\xff", b"a", b"ab"];
        let codes: Vec<Result<u32, InternError>> = cells.iter().map(|c| t.intern(c)).collect();
        let want = [
            Ok(0),
            Ok(1),
            Ok(2),
            Ok(0),
            Ok(3),
            Ok(2),
            Err(InternError::InvalidUtf8),
            Ok(4),
            Ok(1),
        ];
        assert_eq!(codes, want);
        assert_eq!(t.intern(b"\xff"), Err(InternError::InvalidUtf8));
        assert_eq!(t.get(2), b"F");
        assert_eq!(t.len(), 5);
    }

    /// The interner before 5a956c3, by its definition: codes in order of first sight, a
    /// value refused when not UTF-8, and nothing remembered of a refused value.
    #[derive(Default)]
    struct Reference {
        codes: std::collections::HashMap<Vec<u8>, u32>,
        values: Vec<Vec<u8>>,
    }

    impl Reference {
        fn intern(&mut self, bytes: &[u8]) -> Result<u32, InternError> {
            if let Some(&c) = self.codes.get(bytes) {
                return Ok(c);
            }
            std::str::from_utf8(bytes).map_err(|_| InternError::InvalidUtf8)?;
            let c = self.values.len() as u32;
            self.codes.insert(bytes.to_vec(), c);
            self.values.push(bytes.to_vec());
            Ok(c)
        }
    }

    #[test]
    fn one_byte_values_among_longer_ones_are_coded_as_by_first_sight() {
        // Every byte alone (the 128 above 0x7f refused), as a prefix, a suffix and inside
        // longer values, in an order that mixes them; many times over, so that the table
        // grows while one-byte codes are remembered.
        let mut state = 0x853c_49e6_748f_ea9bu64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..20 {
            let mut t = Interner::default();
            let mut r = Reference::default();
            for i in 0..20_000 {
                let x = next();
                let b = (x >> 8) as u8;
                let value: Vec<u8> = match x % 6 {
                    0 | 1 => vec![b],
                    2 => vec![b, b'a'],
                    3 => vec![b'a', b],
                    4 => vec![b, b],
                    _ => format!("v{}", (x >> 16) % 5000).into_bytes(),
                };
                let want = r.intern(&value);
                assert_eq!(t.intern(&value), want, "round {round}, cell {i}: {value:?}");
                assert_eq!(t.len(), r.values.len());
            }
            for (c, v) in r.values.iter().enumerate() {
                assert_eq!(t.get(c), v.as_slice());
            }
            // Every byte once more, after all that: the same code, or the same refusal.
            for b in 0..=255u8 {
                assert_eq!(t.intern(&[b]), r.intern(&[b]), "byte {b:#x}");
            }
        }
    }

    #[test]
    fn a_refused_byte_leaves_no_code_and_is_refused_again() {
        let mut t = Interner::default();
        for b in 0x80..=0xffu8 {
            assert_eq!(t.intern(&[b]), Err(InternError::InvalidUtf8));
            assert_eq!(t.intern(&[b]), Err(InternError::InvalidUtf8));
        }
        assert_eq!(t.len(), 0);
        assert_eq!(t.intern(b"\xc3\xa9"), Ok(0));
        assert_eq!(t.intern(b"\xc3"), Err(InternError::InvalidUtf8));
        assert_eq!(t.intern(b"\xa9"), Err(InternError::InvalidUtf8));
        assert_eq!(t.intern(b"\x00"), Ok(1));
        assert_eq!(t.intern(b"\x7f"), Ok(2));
        assert_eq!(t.intern(b""), Ok(3));
        assert_eq!(t.intern(b"\x00"), Ok(1));
        assert_eq!(t.len(), 4);
        // A clone answers as the original, and what one learns the other does not.
        let mut u = t.clone();
        assert_eq!(u.intern(b"z"), Ok(4));
        assert_eq!(t.intern(b"y"), Ok(4));
        assert_eq!(u.intern(b"\x7f"), Ok(2));
        assert_eq!(u.get(4), b"z");
        assert_eq!(t.get(4), b"y");
    }

    #[test]
    fn rejects_invalid_utf8_once_seen() {
        let mut t = Interner::default();
        assert_eq!(t.intern(b"ok"), Ok(0));
        assert_eq!(t.intern(b"\xff\xfe"), Err(InternError::InvalidUtf8));
        assert_eq!(t.len(), 1);
    }
}
