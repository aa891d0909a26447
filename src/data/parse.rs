//! Byte-level CSV record splitting (RFC 4180, as the `csv` crate reads it) and cell parsing.
//!
//! The splitter follows `csv-core`'s state machine with its default settings: `,` (or the
//! [`Dialect`]'s delimiter) separates fields, `\r`, `\n` and `\r\n` end records, empty lines
//! are skipped, `"` opens a quoted field only at the start of a field, `""` inside quotes is
//! one quote, and bytes after a closing quote continue the field unquoted. Unlike `csv`, a
//! quote still open at the end of the input is an error. Unquoted fields are returned as
//! slices of the input without copying.

use super::format::CsvFormat;

/// True for the bytes that end an unquoted field: `,`, `\n`, `\r`.
static ENDS_FIELD: [bool; 256] = ends_field(b',');

/// The bytes that end an unquoted field when `delimiter` separates fields.
const fn ends_field(delimiter: u8) -> [bool; 256] {
    let mut t = [false; 256];
    t[delimiter as usize] = true;
    t[b'\n' as usize] = true;
    t[b'\r' as usize] = true;
    t
}

/// How records are split into fields and cells read as numbers. The loader is generic over
/// it: the default reading, [`Comma`], compiles to code with `,` and `.` as constants, and
/// any other [`CsvFormat`] is read by [`Other`]. The choice is made once per file, never per
/// cell.
pub(crate) trait Dialect: Sync {
    /// Whether `b` ends an unquoted field: the delimiter, `\n` or `\r`.
    fn ends_field(&self, b: u8) -> bool;
    /// The byte between fields.
    fn delimiter(&self) -> u8;
    /// A trimmed cell as an integer.
    fn int(&self, t: &[u8]) -> Option<i64>;
    /// A trimmed cell as a finite float.
    fn float(&self, t: &[u8]) -> Option<f64>;
}

/// The default reading: `,` between fields, `.` before decimals.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Comma;

impl Dialect for Comma {
    #[inline(always)]
    fn ends_field(&self, b: u8) -> bool {
        ENDS_FIELD[b as usize]
    }

    #[inline(always)]
    fn delimiter(&self) -> u8 {
        b','
    }

    #[inline(always)]
    fn int(&self, t: &[u8]) -> Option<i64> {
        parse_i64(t)
    }

    #[inline(always)]
    fn float(&self, t: &[u8]) -> Option<f64> {
        parse_f64(t)
    }
}

/// Any other reading: another delimiter, a decimal comma, or both.
#[derive(Debug, Clone)]
pub(crate) struct Other {
    ends: [bool; 256],
    delimiter: u8,
    decimal_comma: bool,
}

impl Other {
    /// The dialect of `format` (checked by [`CsvFormat::check`]).
    pub(crate) fn new(format: CsvFormat) -> Self {
        Other {
            ends: ends_field(format.delimiter),
            delimiter: format.delimiter,
            decimal_comma: format.decimal_comma,
        }
    }
}

impl Dialect for Other {
    #[inline]
    fn ends_field(&self, b: u8) -> bool {
        self.ends[b as usize]
    }

    #[inline]
    fn delimiter(&self) -> u8 {
        self.delimiter
    }

    #[inline]
    fn int(&self, t: &[u8]) -> Option<i64> {
        if self.decimal_comma {
            with_decimal_point(t, parse_i64)
        } else {
            parse_i64(t)
        }
    }

    #[inline]
    fn float(&self, t: &[u8]) -> Option<f64> {
        if self.decimal_comma {
            with_decimal_point(t, parse_f64)
        } else {
            parse_f64(t)
        }
    }
}

/// Reads a trimmed cell written with a decimal comma (`3,5`, `-1.234,5`, `1,5E+03`) by
/// `read`, once rewritten as `str::parse` reads numbers (`3.5`, `-1234.5`, `1.5E+03`). A `.`
/// may only separate groups of three digits before the comma, after a first group of one to
/// three (`1.234.567`); any other `.` makes the cell no number (`1.5` is not 1.5, nor 15).
fn with_decimal_point<T>(t: &[u8], read: impl FnOnce(&[u8]) -> Option<T>) -> Option<T> {
    if !t.iter().any(|&b| b == b'.' || b == b',') {
        return read(t);
    }
    let mut stack = [0u8; 64];
    let mut heap = Vec::new();
    let out: &mut [u8] = if t.len() <= stack.len() {
        &mut stack[..t.len()]
    } else {
        heap.resize(t.len(), 0);
        &mut heap
    };
    let n = point_for_comma(t, out)?;
    read(&out[..n])
}

/// Writes `t` into `out` (as long as `t`) with its thousands separators left out and its
/// decimal comma written `.`; its length, or `None` when a `.` separates no group of three.
fn point_for_comma(t: &[u8], out: &mut [u8]) -> Option<usize> {
    let mut n = 0;
    let mut put = |b: u8| {
        out[n] = b;
        n += 1;
    };
    let sign = usize::from(matches!(t.first(), Some(b'-' | b'+')));
    t[..sign].iter().for_each(|&b| put(b));
    let body = &t[sign..];
    let whole = body
        .iter()
        .position(|&b| matches!(b, b',' | b'e' | b'E'))
        .unwrap_or(body.len());
    let (int, rest) = body.split_at(whole);
    let digits = |g: &[u8]| g.iter().all(u8::is_ascii_digit);
    for (i, group) in int.split(|&b| b == b'.').enumerate() {
        let grouped = int.contains(&b'.');
        let fits = match i {
            0 => !grouped || ((1..=3).contains(&group.len()) && digits(group)),
            _ => group.len() == 3 && digits(group),
        };
        if !fits {
            return None;
        }
        group.iter().for_each(|&b| put(b));
    }
    for &b in rest {
        match b {
            b'.' => return None,
            b',' => put(b'.'),
            b => put(b),
        }
    }
    Some(n)
}

/// True when `b` ends a record.
#[inline]
pub(crate) fn is_terminator(b: u8) -> bool {
    b == b'\n' || b == b'\r'
}

#[cfg(test)]
/// The first position at or after `pos` that is not a record terminator (empty lines are skipped).
#[inline]
pub(crate) fn skip_terminators(buf: &[u8], mut pos: usize) -> usize {
    while pos < buf.len() && is_terminator(buf[pos]) {
        pos += 1;
    }
    pos
}

/// Where one field's bytes are: a range of the input, or of the scratch buffer when the
/// field had to be unescaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FieldRef {
    /// Start of the bytes.
    pub(crate) start: usize,
    /// End of the bytes.
    pub(crate) end: usize,
    /// True when the bytes are in the scratch buffer.
    pub(crate) in_scratch: bool,
    /// True when the field began with a quote.
    pub(crate) quoted: bool,
}

impl FieldRef {
    /// The field's bytes.
    #[inline]
    pub(crate) fn bytes<'a>(&self, buf: &'a [u8], scratch: &'a [u8]) -> &'a [u8] {
        if self.in_scratch {
            &scratch[self.start..self.end]
        } else {
            &buf[self.start..self.end]
        }
    }
}

/// How splitting a record ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Split {
    /// The record ended with a terminator; the next record may start at this position.
    Terminated(usize),
    /// The record ran to the end of the input: complete only if the input is the whole file.
    AtEnd,
    /// The quote at this position is still open at the end of the input.
    OpenQuote(usize),
    /// The record has more than the allowed number of fields.
    TooManyFields,
}

/// Splits the record that starts at `pos` (not a terminator) into `fields`, unescaped bytes
/// going to `scratch` (both are cleared first). At most `max_fields` fields are accepted.
#[inline]
pub(crate) fn split_record<D: Dialect>(
    d: &D,
    buf: &[u8],
    pos: usize,
    scratch: &mut Vec<u8>,
    fields: &mut Vec<FieldRef>,
    max_fields: usize,
) -> Split {
    fields.clear();
    scratch.clear();
    split_record_onto(d, buf, pos, scratch, fields, max_fields)
}

/// [`split_record`] appending to `fields` and `scratch`, which keep what they hold: the
/// record's fields are those after the present ones. On any outcome but `Terminated` and
/// `AtEnd`, what was appended is unspecified.
#[inline]
pub(crate) fn split_record_onto<D: Dialect>(
    d: &D,
    buf: &[u8],
    mut pos: usize,
    scratch: &mut Vec<u8>,
    fields: &mut Vec<FieldRef>,
    max_fields: usize,
) -> Split {
    let first = fields.len();
    if let Some(split) = unquoted_fields(d, buf, &mut pos, fields, first, max_fields) {
        return split;
    }
    fields_from(d, buf, pos, scratch, fields, first, max_fields)
}

/// [`split_record_onto`] a field at a time from `pos`, the start of a field, the record's
/// fields so far starting at `first`: the reading every record can take.
fn fields_from<D: Dialect>(
    d: &D,
    buf: &[u8],
    mut pos: usize,
    scratch: &mut Vec<u8>,
    fields: &mut Vec<FieldRef>,
    first: usize,
    max_fields: usize,
) -> Split {
    let len = buf.len();
    loop {
        if fields.len() - first >= max_fields {
            return Split::TooManyFields;
        }
        if pos < len && buf[pos] == b'"' {
            match quoted_field(d, buf, pos, scratch) {
                Ok((field, next)) => {
                    fields.push(field);
                    pos = next;
                }
                Err(open) => return Split::OpenQuote(open),
            }
        } else {
            let start = pos;
            pos = field_end(d, buf, pos);
            fields.push(FieldRef {
                start,
                end: pos,
                in_scratch: false,
                quoted: false,
            });
        }
        // `pos` is at a delimiter, a terminator or the end.
        if pos >= len {
            return Split::AtEnd;
        }
        let b = buf[pos];
        pos += 1;
        if b != d.delimiter() {
            return Split::Terminated(pos);
        }
    }
}

/// The fields of the record from `*pos` on, while none begins with a quote, found a word of
/// eight bytes at a time: a word's delimiters and terminators end the fields in it one after
/// another, where finding each field's end on its own loads a word per field. Returns the
/// outcome when the record ends in whole words of `buf`; otherwise `None`, with `*pos` at the
/// start of the field to go on from (one that begins with a quote, or too near the end of
/// `buf`), and the fields before it appended.
#[inline(always)]
fn unquoted_fields<D: Dialect>(
    d: &D,
    buf: &[u8],
    pos: &mut usize,
    fields: &mut Vec<FieldRef>,
    first: usize,
    max_fields: usize,
) -> Option<Split> {
    let delimiter = broadcast(d.delimiter());
    let hits_at = |at: usize| {
        let word = buf.get(at..)?.first_chunk::<8>()?;
        let w = u64::from_le_bytes(*word);
        Some(bytes_equal(
            w,
            delimiter,
            broadcast(b'\n'),
            broadcast(b'\r'),
        ))
    };
    let mut start = *pos;
    let mut word_at = start;
    let mut hits = hits_at(word_at)?;
    loop {
        if fields.len() - first >= max_fields {
            return Some(Split::TooManyFields);
        }
        if buf.get(start) == Some(&b'"') {
            *pos = start;
            return None;
        }
        // Every hit left in `hits` is at or after `start`.
        let end = loop {
            if hits != 0 {
                break word_at + (hits.trailing_zeros() / 8) as usize;
            }
            word_at += 8;
            match hits_at(word_at) {
                Some(h) => hits = h,
                None => {
                    *pos = start;
                    return None;
                }
            }
        };
        hits &= hits - 1;
        fields.push(FieldRef {
            start,
            end,
            in_scratch: false,
            quoted: false,
        });
        if buf[end] != d.delimiter() {
            return Some(Split::Terminated(end + 1));
        }
        start = end + 1;
    }
}

/// Every byte of a word set to `b`.
const fn broadcast(b: u8) -> u64 {
    b as u64 * 0x0101_0101_0101_0101
}

/// The low seven bits of every byte of a word.
const LOW7: u64 = broadcast(0x7f);

/// The high bit set in each byte of `w` equal to one of the bytes broadcast in `a`, `b` or
/// `c`, and in no other. Exact: `(x & 0x7f) + 0x7f` carries into a byte's high bit, never
/// beyond it, so no byte's result depends on its neighbours'.
#[inline(always)]
fn bytes_equal(w: u64, a: u64, b: u64, c: u64) -> u64 {
    let nonzero = |x: u64| ((x & LOW7) + LOW7) | x;
    !(nonzero(w ^ a) & nonzero(w ^ b) & nonzero(w ^ c)) & !LOW7
}

/// The position of the first byte at or after `pos` that ends an unquoted field (the
/// delimiter, `\n` or `\r`), or the end of `buf`. Eight bytes are tested at a time: fields
/// of numbers and codes are short, and a byte-at-a-time loop spends a branch on each byte.
#[inline(always)]
fn field_end<D: Dialect>(d: &D, buf: &[u8], mut pos: usize) -> usize {
    let delimiter = broadcast(d.delimiter());
    while let Some(word) = buf.get(pos..).and_then(<[u8]>::first_chunk::<8>) {
        let hits = bytes_equal(
            u64::from_le_bytes(*word),
            delimiter,
            broadcast(b'\n'),
            broadcast(b'\r'),
        );
        if hits != 0 {
            return pos + (hits.trailing_zeros() / 8) as usize;
        }
        pos += 8;
    }
    while pos < buf.len() && !d.ends_field(buf[pos]) {
        pos += 1;
    }
    pos
}

/// Reads the quoted field whose opening quote is at `open`; returns it and the position of
/// the byte that ends it (delimiter, terminator or end), or `Err(open)` when never closed.
#[inline]
fn quoted_field<D: Dialect>(
    d: &D,
    buf: &[u8],
    open: usize,
    scratch: &mut Vec<u8>,
) -> Result<(FieldRef, usize), usize> {
    let len = buf.len();
    let start = open + 1;
    let Some(off) = memchr::memchr(b'"', &buf[start..]) else {
        return Err(open);
    };
    let close = start + off;
    let after = close + 1;
    if after >= len || d.ends_field(buf[after]) {
        // The common case: a plain quoted field, no copy.
        let field = FieldRef {
            start,
            end: close,
            in_scratch: false,
            quoted: true,
        };
        return Ok((field, after));
    }
    // Escaped quotes or bytes after the closing quote: build the field in `scratch`.
    let from = scratch.len();
    scratch.extend_from_slice(&buf[start..close]);
    let mut pos = after;
    // State: just after a closing quote, and `buf[pos]` ends nothing.
    loop {
        if pos >= len || d.ends_field(buf[pos]) {
            break;
        }
        if buf[pos] == b'"' {
            // `""`: a literal quote, and the quoted field goes on.
            scratch.push(b'"');
            pos += 1;
            let Some(off) = memchr::memchr(b'"', &buf[pos..]) else {
                return Err(open);
            };
            scratch.extend_from_slice(&buf[pos..pos + off]);
            pos += off + 1;
        } else {
            // Bytes after a closing quote: the rest of the field is unquoted, quotes literal.
            let rest = pos;
            while pos < len && !d.ends_field(buf[pos]) {
                pos += 1;
            }
            scratch.extend_from_slice(&buf[rest..pos]);
            break;
        }
    }
    let field = FieldRef {
        start: from,
        end: scratch.len(),
        in_scratch: true,
        quoted: true,
    };
    Ok((field, pos))
}

/// A cell with no value: empty after trimming ASCII whitespace, or `NA`.
#[inline]
pub(crate) fn is_missing(trimmed: &[u8]) -> bool {
    trimmed.is_empty() || trimmed == b"NA"
}

/// Parses a trimmed cell as `i64` exactly as `str::parse::<i64>` does.
#[inline(always)]
pub(crate) fn parse_i64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if (1..=8).contains(&digits.len()) {
        return eight_digits(digits).map(|v| if neg { -v } else { v });
    }
    long_i64(neg, digits)
}

/// [`parse_i64`] for no digits or more than eight.
#[inline(never)]
fn long_i64(neg: bool, digits: &[u8]) -> Option<i64> {
    if digits.is_empty() {
        return None;
    }
    if digits.len() <= 18 {
        // At most 18 digits cannot overflow.
        let mut v: i64 = 0;
        for &d in digits {
            let d = d.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            v = v * 10 + d as i64;
        }
        return Some(if neg { -v } else { v });
    }
    let mut v: i64 = 0;
    for &d in digits {
        let d = d.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?;
        v = if neg {
            v.checked_sub(d as i64)?
        } else {
            v.checked_add(d as i64)?
        };
    }
    Some(v)
}

/// The value of one to eight ASCII digits, or `None` when another byte is among them. The
/// digits are right-aligned in a word padded with `0`s and combined in three multiplications
/// (pairs, then fours, then the eight), as simdjson's `parse_eight_digits_unrolled` does.
#[inline(always)]
fn eight_digits(digits: &[u8]) -> Option<i64> {
    let w = right_aligned(digits);
    // Every byte is 0x30..=0x39: its high half is 3, and stays 3 when 6 is added (no byte
    // can carry into the next once the first test holds).
    let high = broadcast(0xf0);
    if w & high != broadcast(b'0') || w.wrapping_add(broadcast(6)) & high != broadcast(b'0') {
        return None;
    }
    let v = w - broadcast(b'0');
    let v = v.wrapping_mul(10).wrapping_add(v >> 8);
    const PAIRS: u64 = 0x0000_00ff_0000_00ff;
    let v = ((v & PAIRS).wrapping_mul(100 + (1_000_000 << 32)))
        .wrapping_add(((v >> 16) & PAIRS).wrapping_mul(1 + (10_000 << 32)))
        >> 32;
    Some(v as i64)
}

/// One to eight bytes as the high bytes of a little-endian word (digit `i` of `n` at byte
/// `8 - n + i`), the low bytes `0`. Built from two overlapping loads of four bytes, or three
/// single bytes under four, with no loop: a copy through memory would stall the load that
/// reads it back, and a byte-at-a-time loop mispredicts its exit. Overlapping bytes land at
/// the same place with the same value, so or-ing them is harmless.
#[inline(always)]
fn right_aligned(b: &[u8]) -> u64 {
    let n = b.len();
    let low = 8 * (8 - n) as u32;
    let fill = broadcast(b'0')
        .checked_shl(64 - low)
        .map_or(0, |w| w >> (64 - low));
    let placed = match (b.first_chunk::<4>(), b.last_chunk::<4>()) {
        (Some(first), Some(last)) => {
            u64::from(u32::from_le_bytes(*first)) << low
                | u64::from(u32::from_le_bytes(*last)) << 32
        }
        _ => {
            u64::from(b[0]) << low
                | u64::from(b[n / 2]) << (low + 8 * (n / 2) as u32)
                | u64::from(b[n - 1]) << 56
        }
    };
    fill | placed
}

/// Exact powers of ten as `f64` (all up to 10^22 are representable).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Parses a trimmed cell as a finite `f64`, with the result of `str::parse::<f64>`.
///
/// Plain decimals with at most 15 significant digits take Clinger's fast path (an exact
/// mantissa divided by an exact power of ten is correctly rounded); anything else goes to
/// the standard library. Infinities and NaN are not accepted.
#[inline]
pub(crate) fn parse_f64(s: &[u8]) -> Option<f64> {
    let (neg, body) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut mantissa: u64 = 0;
    let mut digits = 0usize;
    let mut frac_digits = 0usize;
    let mut seen_dot = false;
    let mut simple = !body.is_empty();
    for &b in body {
        if b.is_ascii_digit() {
            mantissa = mantissa.wrapping_mul(10).wrapping_add((b - b'0') as u64);
            digits += 1;
            frac_digits += seen_dot as usize;
        } else if b == b'.' && !seen_dot {
            seen_dot = true;
        } else {
            simple = false;
            break;
        }
    }
    if simple && digits > 0 && digits <= 15 && frac_digits < POW10.len() {
        let v = mantissa as f64 / POW10[frac_digits];
        return Some(if neg { -v } else { v });
    }
    let text = std::str::from_utf8(s).ok()?;
    let v: f64 = text.parse().ok()?;
    v.is_finite().then_some(v)
}

/// Parses a trimmed cell as a boolean: `true` or `false`, ASCII case-insensitive.
#[inline]
pub(crate) fn parse_bool(s: &[u8]) -> Option<bool> {
    if s.eq_ignore_ascii_case(b"true") {
        Some(true)
    } else if s.eq_ignore_ascii_case(b"false") {
        Some(false)
    } else {
        None
    }
}

/// True when a trimmed header field reads as a value rather than a name: a number (`42`,
/// `-3.5`, `1e3`; not the words `inf` or `NaN`), the same with a currency sign, a percent
/// sign or thousands separators (`$52,000`, `12%`, `52 000`), hexadecimal (`0x1F`), a date
/// (with digits or a month's name: `5 Jan 2020`), a time of day (`10:00`, `10:00 PM`), a date
/// and time, an e-mail address, or a telephone number (seven digits or more, with spaces,
/// dashes, dots, parentheses or a plus). A heuristic: `NO HEADER` is the sure way.
pub(crate) fn looks_like_value(t: &[u8]) -> bool {
    looks_like_number(t)
        || looks_like_date_or_time(t)
        || looks_like_decorated_number(t)
        || looks_like_named_date(t)
        || looks_like_address(t)
        || looks_like_phone(t)
}

/// A number once currency signs, a percent sign and thousands separators are taken away, or
/// a hexadecimal number.
fn looks_like_decorated_number(t: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(t) else {
        return false;
    };
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    let bare: String = s
        .chars()
        .filter(|c| {
            !matches!(
                c,
                '$' | '€' | '£' | '¥' | '%' | ',' | ' ' | '\u{a0}' | '\'' | '_'
            )
        })
        .collect();
    bare.len() < s.len() && !bare.is_empty() && looks_like_number(bare.as_bytes())
}

/// A date written with a month's name and digits, in any order (`Jan 5 2020`, `5 January,
/// 2020`), or a time of day followed by AM or PM.
fn looks_like_named_date(t: &[u8]) -> bool {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let Ok(s) = std::str::from_utf8(t) else {
        return false;
    };
    let words: Vec<String> = s
        .split([' ', ',', '-', '/'])
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    if let [time, half] = words.as_slice() {
        if (half == "am" || half == "pm") && is_time(time.as_bytes()) {
            return true;
        }
    }
    let month = |w: &str| w.len() >= 3 && MONTHS.iter().any(|m| w.starts_with(m));
    let numbers = words
        .iter()
        .filter(|w| !w.is_empty() && w.len() <= 4 && w.bytes().all(|b| b.is_ascii_digit()))
        .count();
    words.len() >= 2 && words.iter().filter(|w| month(w)).count() == 1 && numbers == words.len() - 1
}

/// An e-mail address: something, `@`, a domain with a dot, no spaces.
fn looks_like_address(t: &[u8]) -> bool {
    let Some(at) = t.iter().position(|b| *b == b'@') else {
        return false;
    };
    let (user, domain) = (&t[..at], &t[at + 1..]);
    !user.is_empty()
        && domain.contains(&b'.')
        && !domain.starts_with(b".")
        && !domain.ends_with(b".")
        && !t.contains(&b' ')
}

/// A telephone number: seven digits or more, with only spaces, dashes, dots, parentheses
/// and a leading plus between them.
fn looks_like_phone(t: &[u8]) -> bool {
    let digits = t.iter().filter(|b| b.is_ascii_digit()).count();
    digits >= 7
        && t.iter()
            .all(|b| b.is_ascii_digit() || matches!(b, b' ' | b'-' | b'.' | b'(' | b')' | b'+'))
}

/// An integer, or anything `str::parse::<f64>` reads that has a digit in it.
fn looks_like_number(t: &[u8]) -> bool {
    parse_i64(t).is_some()
        || (t.iter().any(u8::is_ascii_digit)
            && std::str::from_utf8(t).is_ok_and(|s| s.parse::<f64>().is_ok()))
}

/// A date (`2024-01-31`, `2024/01/31`, `31/01/2024`, `01/31/2024`, `31.01.2024`), a time of
/// day (`10:00`, `10:00:05.5`) or a date, `T` or a space, and a time (`2024-01-31T10:00Z`).
fn looks_like_date_or_time(t: &[u8]) -> bool {
    match date_prefix(t) {
        Some([]) => true,
        Some([b'T' | b't' | b' ', time @ ..]) => is_time(time),
        Some(_) => false,
        None => is_time(t),
    }
}

/// Splits off the run of ASCII digits at the start of `s`: its value (if at most 9 digits),
/// its length and the rest.
fn digits(s: &[u8]) -> (Option<u32>, usize, &[u8]) {
    let n = s.iter().take_while(|b| b.is_ascii_digit()).count();
    let value = (n <= 9).then(|| {
        s[..n]
            .iter()
            .fold(0u32, |v, &d| v * 10 + u32::from(d - b'0'))
    });
    (value, n, &s[n..])
}

/// When `s` starts with a date of three digit groups and one separator (`-`, `/` or `.`)
/// used twice, the rest after it. Year first: 4 digits, then month 1-12 and day 1-31 of 1 or
/// 2 digits. Year last: 2 or 4 digits, after a day and a month of 1 or 2 digits, either way
/// round.
fn date_prefix(s: &[u8]) -> Option<&[u8]> {
    let (a, la, rest) = digits(s);
    let (&sep, rest) = rest.split_first()?;
    if !matches!(sep, b'-' | b'/' | b'.') {
        return None;
    }
    let (b, lb, rest) = digits(rest);
    let rest = rest.strip_prefix(&[sep])?;
    let (c, lc, rest) = digits(rest);
    let (a, b, c) = (a?, b?, c?);
    let day = |d: u32| (1..=31).contains(&d);
    let month = |m: u32| (1..=12).contains(&m);
    let short = |l: usize| (1..=2).contains(&l);
    let year_first = la == 4 && short(lb) && short(lc) && month(b) && day(c);
    let year_last = short(la)
        && short(lb)
        && (lc == 2 || lc == 4)
        && ((day(a) && month(b)) || (month(a) && day(b)));
    (year_first || year_last).then_some(rest)
}

/// A time of day: `H:MM`, `HH:MM`, then optionally `:SS` and a fraction, then optionally a
/// zone (`Z`, `+01`, `+0100`, `-01:00`).
fn is_time(s: &[u8]) -> bool {
    let two = |s: &[u8], max: u32| -> Option<usize> {
        let (v, n, _) = digits(s);
        (n == 2 && v? <= max).then_some(2)
    };
    let (h, lh, rest) = digits(s);
    if !(1..=2).contains(&lh) || h.is_none_or(|h| h > 24) {
        return false;
    }
    let Some(rest) = rest.strip_prefix(b":") else {
        return false;
    };
    let Some(n) = two(rest, 59) else {
        return false;
    };
    let mut rest = &rest[n..];
    if let Some(after) = rest.strip_prefix(b":") {
        let Some(n) = two(after, 60) else {
            return false;
        };
        rest = &after[n..];
        if let Some(after) = rest.strip_prefix(b".") {
            let (_, n, after) = digits(after);
            if n == 0 {
                return false;
            }
            rest = after;
        }
    }
    match rest {
        [] | [b'Z' | b'z'] => true,
        [b'+' | b'-', zone @ ..] => {
            let (_, n, after) = digits(zone);
            match (n, after) {
                (2 | 4, []) => true,
                (2, [b':', m @ ..]) => two(m, 59) == Some(2) && m.len() == 2,
                _ => false,
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(input: &str) -> Result<Vec<Vec<String>>, usize> {
        fields_with(&Comma, input)
    }

    fn fields_with<D: Dialect>(d: &D, input: &str) -> Result<Vec<Vec<String>>, usize> {
        let buf = input.as_bytes();
        let mut scratch = Vec::new();
        let mut refs = Vec::new();
        let mut out = Vec::new();
        let mut pos = skip_terminators(buf, 0);
        while pos < buf.len() {
            let split = split_record(d, buf, pos, &mut scratch, &mut refs, usize::MAX);
            out.push(
                refs.iter()
                    .map(|f| String::from_utf8_lossy(f.bytes(buf, &scratch)).into_owned())
                    .collect(),
            );
            pos = match split {
                Split::Terminated(next) => skip_terminators(buf, next),
                Split::AtEnd => buf.len(),
                Split::OpenQuote(at) => return Err(at),
                Split::TooManyFields => unreachable!(),
            };
        }
        Ok(out)
    }

    #[test]
    fn field_limit_is_enforced() {
        let mut scratch = Vec::new();
        let mut refs = Vec::new();
        assert_eq!(
            split_record(&Comma, b"a,b,c\n", 0, &mut scratch, &mut refs, 2),
            Split::TooManyFields
        );
        assert_eq!(
            split_record(&Comma, b"a,b,c\n", 0, &mut scratch, &mut refs, 3),
            Split::Terminated(6)
        );
        assert_eq!(
            split_record(&Comma, b"a,\"b", 0, &mut scratch, &mut refs, 3),
            Split::OpenQuote(2)
        );
        assert_eq!(
            split_record(&Comma, b"a,b", 0, &mut scratch, &mut refs, 3),
            Split::AtEnd
        );
    }

    fn with_csv_crate(input: &str) -> Vec<Vec<String>> {
        with_csv_crate_by(b',', input)
    }

    fn with_csv_crate_by(delimiter: u8, input: &str) -> Vec<Vec<String>> {
        let mut r = csv::ReaderBuilder::new()
            .delimiter(delimiter)
            .has_headers(false)
            .flexible(true)
            .from_reader(input.as_bytes());
        r.byte_records()
            .map(|rec| {
                rec.expect("csv crate reads it")
                    .iter()
                    .map(|f| String::from_utf8_lossy(f).into_owned())
                    .collect()
            })
            .collect()
    }

    /// A record's outcome and fields (as bytes, with whether each was quoted).
    fn split_with<D: Dialect>(
        d: &D,
        buf: &[u8],
        pos: usize,
        max_fields: usize,
        word_at_a_time: bool,
    ) -> (Split, Vec<(Vec<u8>, bool)>) {
        let (mut scratch, mut fields) = (Vec::new(), Vec::new());
        let split = if word_at_a_time {
            split_record(d, buf, pos, &mut scratch, &mut fields, max_fields)
        } else {
            fields_from(d, buf, pos, &mut scratch, &mut fields, 0, max_fields)
        };
        let cells = match split {
            Split::Terminated(_) | Split::AtEnd => fields
                .iter()
                .map(|f| (f.bytes(buf, &scratch).to_vec(), f.quoted))
                .collect(),
            // Unspecified fields.
            _ => Vec::new(),
        };
        (split, cells)
    }

    #[test]
    fn words_of_fields_split_as_a_field_at_a_time() {
        // Records of bytes that end fields, quote them or neither, cut at every length and
        // read from every position: the word-at-a-time reading of unquoted fields gives the
        // outcome and fields of the reading a field at a time, for any field limit.
        let alphabet = b"a1,;\"\r\n\t \xff";
        let mut next = super::super::rng::xorshift(0x2545_f491_4f6c_dd1du64);
        for case in 0..4000 {
            let n = (next() % 40) as usize;
            // Mostly plain bytes, so that long unquoted runs and many fields a word occur.
            let plain = case % 2 == 0;
            let buf: Vec<u8> = (0..n)
                .map(|_| {
                    let r = next();
                    if plain && !r.is_multiple_of(4) {
                        b"a1,"[(r / 4 % 3) as usize]
                    } else {
                        alphabet[(r / 4 % alphabet.len() as u64) as usize]
                    }
                })
                .collect();
            for pos in 0..buf.len() {
                for max_fields in [1, 2, 3, 5, 64] {
                    let other = Other::new(CsvFormat {
                        delimiter: b';',
                        ..CsvFormat::default()
                    });
                    assert_eq!(
                        split_with(&Comma, &buf, pos, max_fields, true),
                        split_with(&Comma, &buf, pos, max_fields, false),
                        "{buf:?} from {pos}, at most {max_fields}"
                    );
                    assert_eq!(
                        split_with(&other, &buf, pos, max_fields, true),
                        split_with(&other, &buf, pos, max_fields, false),
                        "{buf:?} from {pos} by ';', at most {max_fields}"
                    );
                }
            }
        }
    }

    #[test]
    fn random_bytes_with_stray_quotes_split_as_the_csv_crate_reads_them() {
        // Quotes anywhere (opening, closing, doubled, after a closing quote, inside unquoted
        // fields), CR, LF and delimiters, with multi-byte characters at every offset of a
        // word: every input whose quotes all close splits as the csv crate reads it.
        let pieces = [
            "a", "b", ",", "\"", "\"\"", "\n", "\r", "\r\n", "\u{e9}", "\u{20ac}", "xyzwv",
        ];
        let mut next = super::super::rng::xorshift(0x0ddc_0ffe_e5ee_d123u64);
        let mut compared = 0;
        for case in 0..10_000 {
            let n = (next() % 30) as usize;
            let input: String = (0..n)
                .map(|_| pieces[(next() % pieces.len() as u64) as usize])
                .collect();
            for shift in [0, case % 8] {
                let input = format!("{}{input}", "\n".repeat(shift));
                if let Ok(ours) = fields(&input) {
                    compared += 1;
                    assert_eq!(ours, with_csv_crate(&input), "input {input:?}");
                }
            }
        }
        assert!(compared > 5_000, "{compared}");
    }

    #[test]
    fn splits_like_the_csv_crate() {
        let cases = [
            "a,b\n1,2\n",
            "a,b\r\n1,2\r\n",
            "a,b\r1,2",
            "\n\na,b\n\n\n1,2\n\n",
            "a,\"b,c\"\n\"x\ny\",2\n",
            "a,\"he said \"\"hi\"\"\"\n",
            "\"ab\"cd,e\n",
            "\"ab\"c\"d\",e\n",
            "a\"b,c\n",
            ",\n,,\n",
            "\"\"\n\"\",\"\"\n",
            "a,b,",
            "x,\"\"\"\"\n",
        ];
        for c in cases {
            assert_eq!(fields(c), Ok(with_csv_crate(c)), "input {c:?}");
        }
    }

    #[test]
    fn splits_by_another_delimiter_like_the_csv_crate() {
        let cases = [
            "a;b\n1,5;2\n",
            "a\tb\r\n\"x\ty\"\t2\r\n",
            "a|\"he said \"\"hi\"\"\"|c\n",
            "\"ab\"cd;e,f\n",
            ";\n;;\n",
            "a;b;",
        ];
        for (delimiter, c) in [b';', b'\t', b'|', b';', b';', b';'].into_iter().zip(cases) {
            let other = Other::new(CsvFormat {
                delimiter,
                decimal_comma: false,
            });
            assert_eq!(
                fields_with(&other, c),
                Ok(with_csv_crate_by(delimiter, c)),
                "input {c:?}"
            );
        }
    }

    #[test]
    fn a_decimal_comma_reads_numbers_as_european_spreadsheets_write_them() {
        let d = Other::new(CsvFormat {
            delimiter: b';',
            decimal_comma: true,
        });
        for (text, int, float) in [
            ("3", Some(3), Some(3.0)),
            ("3,5", None, Some(3.5)),
            ("-3,5", None, Some(-3.5)),
            ("+1.234", Some(1234), Some(1234.0)),
            ("1.234,5", None, Some(1234.5)),
            ("-12.345.678,25", None, Some(-12_345_678.25)),
            (",5", None, Some(0.5)),
            ("5,", None, Some(5.0)),
            ("1,5E+03", None, Some(1500.0)),
            ("1.5", None, None),
            ("1.2345", None, None),
            ("1234.567", None, None),
            (".123", None, None),
            ("1..234", None, None),
            ("1.234.", None, None),
            ("1,234.5", None, None),
            ("1,2,3", None, None),
            ("a.bcd", None, None),
            ("1e3,5", None, None),
            ("NA", None, None),
        ] {
            assert_eq!(d.int(text.as_bytes()), int, "{text:?}");
            assert_eq!(d.float(text.as_bytes()), float, "{text:?}");
        }
        let long = format!("{}1,5", "0".repeat(100));
        assert_eq!(d.float(long.as_bytes()), Some(1.5));
        // Without DECIMAL ',' another delimiter reads numbers as the default does.
        let semicolon = Other::new(CsvFormat {
            delimiter: b';',
            decimal_comma: false,
        });
        assert_eq!(semicolon.float(b"3,5"), None);
        assert_eq!(semicolon.float(b"1.5"), Some(1.5));
        assert_eq!(semicolon.int(b"1.234"), None);
    }

    #[test]
    fn unclosed_quote_is_an_error() {
        assert_eq!(fields("a,b\n1,\"2\n3,4\n"), Err(6));
        assert_eq!(fields("\"a\"\"b"), Err(0));
        assert_eq!(fields("x,\"ab\"\"\n"), Err(2));
    }

    #[test]
    fn integers_parse_like_std() {
        for s in [
            "0",
            "-0",
            "+7",
            "007",
            "123456789012345678",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "-9223372036854775809",
            "99999999999999999999",
            "",
            "-",
            "+",
            "1.0",
            "1e3",
            " 1",
            "1_000",
            "٣",
        ] {
            assert_eq!(
                parse_i64(s.as_bytes()),
                s.parse::<i64>().ok(),
                "input {s:?}"
            );
        }
    }

    #[test]
    fn integers_of_every_length_and_stray_byte_parse_like_std() {
        let mut cases: Vec<String> = Vec::new();
        for n in 1..=20 {
            let digits: String = "9876543210123456789012".chars().take(n).collect();
            cases.push(digits.clone());
            cases.push(format!("-{digits}"));
            cases.push("0".repeat(n));
            for i in 0..n {
                for stray in ['/', ':', ' ', '.', 'a', '\u{e9}', '\u{0}'] {
                    let mut s: Vec<char> = digits.chars().collect();
                    s[i] = stray;
                    cases.push(s.into_iter().collect());
                }
            }
        }
        for v in (0..100_000i64)
            .step_by(7)
            .chain([99_999_999, 100_000_000, 12_345_678])
        {
            cases.push(v.to_string());
        }
        for s in cases {
            assert_eq!(
                parse_i64(s.as_bytes()),
                s.parse::<i64>().ok(),
                "input {s:?}"
            );
        }
    }

    #[test]
    fn fields_are_found_across_words_of_eight_bytes() {
        // Fields of every length up to 20 bytes, with bytes above 0x7f and quotes inside,
        // so that delimiters fall at every position of a word and none is mistaken.
        let mut rows = Vec::new();
        for n in 0..=20 {
            let field: String = "\u{e9}x\u{ff}a\"b\u{7f}c".chars().cycle().take(n).collect();
            rows.push(format!("{field},{field}\r\n{field};{field}\n"));
        }
        let text = rows.concat();
        assert_eq!(fields(&text), Ok(with_csv_crate(&text)));
        let semicolon = Other::new(CsvFormat {
            delimiter: b';',
            decimal_comma: false,
        });
        assert_eq!(
            fields_with(&semicolon, &text),
            Ok(with_csv_crate_by(b';', &text))
        );
    }

    /// The byte loop `field_end` replaced (826bc6f), the reference it must agree with.
    fn field_end_by_byte<D: Dialect>(d: &D, buf: &[u8], mut pos: usize) -> usize {
        while pos < buf.len() && !d.ends_field(buf[pos]) {
            pos += 1;
        }
        pos
    }

    /// `field_end` and the byte loop over one buffer from one position, in one dialect.
    type Check = Box<dyn Fn(&[u8], usize) -> (usize, usize)>;

    /// The dialects whose delimiters the words are tested for: the default, and others
    /// `CsvFormat::check` accepts (NUL and DEL among them, at the ends of the ASCII range).
    fn dialects() -> Vec<Check> {
        let mut out: Vec<Check> = vec![Box::new(|buf: &[u8], pos: usize| {
            (
                field_end(&Comma, buf, pos),
                field_end_by_byte(&Comma, buf, pos),
            )
        })];
        for delimiter in [b';', b'\t', b'|', b' ', 0u8, 0x7f] {
            let format = CsvFormat {
                delimiter,
                decimal_comma: false,
            };
            assert_eq!(format.check(), Ok(()), "{delimiter:#x}");
            let d = Other::new(format);
            out.push(Box::new(move |buf: &[u8], pos: usize| {
                (field_end(&d, buf, pos), field_end_by_byte(&d, buf, pos))
            }));
        }
        out
    }

    #[test]
    fn field_end_agrees_with_a_byte_loop_for_every_byte_at_every_position() {
        // Fillers that end no field but sit next to the enders in value, or are them with
        // the high bit set (0x80|',', 0x80|'\n', 0x80|'\r', 0x80|';'): where a "has a zero
        // byte" word trick gives false positives.
        let near: Vec<u8> = vec![
            0xac, 0x8a, 0x8d, 0xbb, 0x89, 0xfc, 0x80, 0xff, 0x2b, 0x2d, 0x0b, 0x0c, 0x0e, 0x09,
            0x01, 0xfe, 0x7e, 0x3b, 0x7c, 0x20, 0x00, 0x7f, b'7', b'"',
        ];
        for (k, check) in dialects().iter().enumerate() {
            for len in 0..=40usize {
                let filler: Vec<u8> = near
                    .iter()
                    .copied()
                    .cycle()
                    .skip(k + len)
                    .take(len)
                    .collect();
                for p in 0..len {
                    for b in 0..=255u8 {
                        let mut buf = filler.clone();
                        buf[p] = b;
                        for start in [0, p.min(3), p, len] {
                            let (ours, want) = check(&buf, start);
                            assert_eq!(ours, want, "dialect {k}, {buf:?} from {start}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn field_end_agrees_with_a_byte_loop_on_random_words() {
        let alphabet: &[u8] = b",;\t| \n\r\0\x7f\xac\x8a\x8d\xbb\x89\xfc\x80\xffa1\"";
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let checks = dialects();
        for _ in 0..4000 {
            let len = (next() % 70) as usize;
            // Mostly bytes that end nothing, so that fields run across words.
            let sparse = next() % 4 != 0;
            let buf: Vec<u8> = (0..len)
                .map(|_| {
                    let r = next();
                    let i = (r >> 8) as usize % alphabet.len();
                    if sparse && r % 8 != 0 {
                        alphabet[(i % 9) + 8]
                    } else {
                        alphabet[i]
                    }
                })
                .collect();
            for check in &checks {
                for start in 0..=len {
                    let (ours, want) = check(&buf, start);
                    assert_eq!(ours, want, "{buf:?} from {start}");
                }
            }
        }
    }

    /// The loop that placed digits in a word before ef15e67, the reference for
    /// `right_aligned`.
    fn right_aligned_by_fold(digits: &[u8]) -> u64 {
        digits
            .iter()
            .fold(broadcast(b'0'), |w, &b| (w >> 8) | (u64::from(b) << 56))
    }

    fn std_i64(s: &[u8]) -> Option<i64> {
        std::str::from_utf8(s).ok()?.parse().ok()
    }

    #[test]
    fn right_aligned_agrees_with_the_fold_for_any_bytes() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let n = 1 + (state % 8) as usize;
            let bytes = state.rotate_left(11).to_le_bytes();
            let b = &bytes[..n];
            assert_eq!(right_aligned(b), right_aligned_by_fold(b), "{b:?}");
        }
        for n in 1..=8usize {
            for p in 0..n {
                for x in 0..=255u8 {
                    let mut b = vec![b'5'; n];
                    b[p] = x;
                    assert_eq!(right_aligned(&b), right_aligned_by_fold(&b), "{b:?}");
                }
            }
        }
    }

    #[test]
    fn integers_of_up_to_eight_digits_with_any_byte_anywhere_parse_like_std() {
        for sign in ["", "-", "+"] {
            for n in 1..=9usize {
                let digits: Vec<u8> = b"987654321".iter().copied().take(n).collect();
                for p in 0..n {
                    for x in 0..=255u8 {
                        let mut s = sign.as_bytes().to_vec();
                        let mut d = digits.clone();
                        d[p] = x;
                        s.extend_from_slice(&d);
                        assert_eq!(parse_i64(&s), std_i64(&s), "input {s:?}");
                    }
                }
                // Two bytes at the edges of the digits' range, and with the high half 3 but
                // not a digit, at every pair of positions.
                let edges = [
                    0x2f, 0x30, 0x39, 0x3a, 0x3f, 0x40, 0x00, 0x06, 0xb0, 0xb9, 0xf9,
                ];
                for p in 0..n {
                    for q in p + 1..n {
                        for &x in &edges {
                            for &y in &edges {
                                let mut s = sign.as_bytes().to_vec();
                                let mut d = digits.clone();
                                d[p] = x;
                                d[q] = y;
                                s.extend_from_slice(&d);
                                assert_eq!(parse_i64(&s), std_i64(&s), "input {s:?}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn integers_of_every_value_and_padding_parse_like_std() {
        let mut v = 0i64;
        while v < 100_000_000 {
            for s in [
                v.to_string(),
                format!("{v:08}"),
                format!("-{v:07}"),
                format!("+{v}"),
            ] {
                assert_eq!(
                    parse_i64(s.as_bytes()),
                    s.parse::<i64>().ok(),
                    "input {s:?}"
                );
            }
            v += 997;
        }
        for s in [
            "00000000",
            "-00000000",
            "99999999",
            "-99999999",
            "000000001",
            "00000000000000000000000000001",
            "+-1",
            "-+1",
            "--1",
            "++1",
            "1-",
            "1+",
            "-9223372036854775808",
            "-9223372036854775809",
            "9223372036854775807",
            "9223372036854775808",
            "-0009223372036854775808",
            "\u{ff11}",
            "\u{ff11}\u{ff12}",
            "1\u{ff12}",
            "\u{663}\u{664}",
            "\u{967}",
            "1\u{300}",
            "1 2",
            "0x10",
            "1_000",
            "1e3",
            "\u{0}",
            "12345678\u{0}",
        ] {
            assert_eq!(
                parse_i64(s.as_bytes()),
                s.parse::<i64>().ok(),
                "input {s:?}"
            );
        }
    }

    #[test]
    fn floats_parse_like_std() {
        for s in [
            "0",
            "-0.0",
            "1.5",
            ".5",
            "5.",
            "-.5",
            "+2.25",
            "0.1",
            "123456789012345",
            "1234567890123456789",
            "0.30000000000000004",
            "1e10",
            "1E-5",
            "172.3",
            "3.141592653589793",
            "1.2.3",
            ".",
            "-",
            "",
            "1,5",
        ] {
            let std = s.parse::<f64>().ok().filter(|v| v.is_finite());
            let ours = parse_f64(s.as_bytes());
            assert_eq!(ours.map(f64::to_bits), std.map(f64::to_bits), "input {s:?}");
        }
        for s in ["inf", "-inf", "NaN", "infinity", "1e400"] {
            assert_eq!(parse_f64(s.as_bytes()), None, "input {s:?}");
        }
    }

    #[test]
    fn header_fields_that_look_like_values() {
        for v in [
            "42",
            "-3.5",
            "+7",
            "1e3",
            ".5",
            "1e400",
            "2024-01-31",
            "2024-1-5",
            "2024-01-31T10:00",
            "2024-01-31t10:00:59.25Z",
            "2024-01-31 10:00:00+01:00",
            "2024-01-31T23:59:60-0500",
            "31/01/2024",
            "01/31/2024",
            "1/2/24",
            "2024/01/31",
            "31.01.2024",
            "10:00",
            "7:05:30",
        ] {
            assert!(looks_like_value(v.as_bytes()), "{v:?} is a value");
        }
        for n in [
            "age",
            "inf",
            "NaN",
            "infinity",
            "x1",
            "1st",
            "2024-01/31",
            "31/13/2024",
            "1/2/3",
            "v1.2.3",
            "2024-01-31T",
            "2024-01-31Tx",
            "25:00",
            "10:60",
            "10:5",
            "10:00:",
            "10:00.5",
            "10:00+1",
            "1.2.2024x",
            "",
        ] {
            assert!(!looks_like_value(n.as_bytes()), "{n:?} is a name");
        }
    }

    #[test]
    fn booleans_and_missing() {
        assert_eq!(parse_bool(b"TRUE"), Some(true));
        assert_eq!(parse_bool(b"False"), Some(false));
        assert_eq!(parse_bool(b"yes"), None);
        assert!(is_missing(b""));
        assert!(is_missing(b"NA"));
        assert!(!is_missing(b"na"));
    }
}
