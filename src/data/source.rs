//! Reading records from a byte source (a file by verified positioned reads, or bytes in memory) through a reused window.
//!
//! Streaming through a window of a few hundred kilobytes keeps the bytes being parsed in
//! cache and spares the page faults of holding a large file in fresh memory. Any record can
//! be re-read later by its offset, which is how errors find their line numbers and how a
//! column that turns out to be text collects its earlier cells again.

use std::io;

use super::content::{is_changed, BLOCK};
use super::parse::{is_terminator, split_record, split_record_onto, Dialect, FieldRef, Split};

/// Bytes that can be read at any offset, from several threads at once.
pub(crate) trait ByteSource: Sync {
    /// Total length in bytes.
    fn len(&self) -> u64;
    /// Reads into `buf` from `offset`; returns the number of bytes read (0 at the end).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
}

impl ByteSource for [u8] {
    fn len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(<[u8]>::len(self));
        let n = buf.len().min(<[u8]>::len(self) - start);
        buf[..n].copy_from_slice(&self[start..start + n]);
        Ok(n)
    }
}

/// The initial window size.
const WINDOW: usize = 512 << 10;

/// Why the next record could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RecordError {
    /// The quote at this offset is never closed.
    UnclosedQuote(u64),
    /// The record at this offset has more fields than allowed.
    TooManyFields(u64),
    /// Reading failed.
    Io(String),
    /// The source's bytes changed between two readings.
    Changed,
}

/// The `RecordError` of a failed read.
pub(crate) fn record_io(e: io::Error) -> RecordError {
    if is_changed(&e) {
        RecordError::Changed
    } else {
        RecordError::Io(e.to_string())
    }
}

/// One record, borrowed from the reader until the next call.
pub(crate) struct Record<'r> {
    /// Offset of the record's first byte.
    pub(crate) offset: u64,
    /// Its fields.
    pub(crate) fields: &'r [FieldRef],
    buf: &'r [u8],
    scratch: &'r [u8],
}

impl Record<'_> {
    /// The bytes of field `f`.
    #[inline]
    pub(crate) fn bytes(&self, f: &FieldRef) -> &[u8] {
        f.bytes(self.buf, self.scratch)
    }
}

/// Records read together by [`Records::next_batch`], all held in the reader's window.
pub(crate) struct Batch<'r> {
    /// Each record's offset in the source.
    pub(crate) offsets: &'r [u64],
    /// Where each record's fields start in `fields`.
    starts: &'r [usize],
    fields: &'r [FieldRef],
    buf: &'r [u8],
    scratch: &'r [u8],
}

impl Batch<'_> {
    /// The number of records.
    pub(crate) fn len(&self) -> usize {
        self.offsets.len()
    }

    /// The number of fields of record `r`.
    pub(crate) fn n_fields(&self, r: usize) -> usize {
        self.starts.get(r + 1).copied().unwrap_or(self.fields.len()) - self.starts[r]
    }

    /// Field `c` of record `r` (which has more than `c` fields): its bytes, and whether it
    /// began with a quote.
    #[inline(always)]
    pub(crate) fn cell(&self, r: usize, c: usize) -> (&[u8], bool) {
        let f = &self.fields[self.starts[r] + c];
        (f.bytes(self.buf, self.scratch), f.quoted)
    }
}

/// Reads the records that start in `[from, until)` of a source, the last one possibly
/// running past `until`, split as `dialect` says. Empty lines are skipped.
pub(crate) struct Records<'s, S: ByteSource + ?Sized, D: Dialect> {
    src: &'s S,
    dialect: &'s D,
    until: u64,
    max_fields: usize,
    buf: Vec<u8>,
    /// Offset of `buf[0]` in the source.
    base: u64,
    /// Cursor in `buf`.
    pos: usize,
    /// Bytes of `buf` holding data.
    filled: usize,
    scratch: Vec<u8>,
    fields: Vec<FieldRef>,
    /// The offsets and first fields of a batch's records.
    offsets: Vec<u64>,
    starts: Vec<usize>,
}

impl<'s, S: ByteSource + ?Sized, D: Dialect> Records<'s, S, D> {
    /// A reader of the records starting in `[from, until)`.
    pub(crate) fn new(
        src: &'s S,
        dialect: &'s D,
        from: u64,
        until: u64,
        max_fields: usize,
    ) -> Self {
        Records {
            src,
            dialect,
            until,
            max_fields,
            buf: Vec::new(),
            base: from,
            pos: 0,
            filled: 0,
            scratch: Vec::new(),
            fields: Vec::new(),
            offsets: Vec::new(),
            starts: Vec::new(),
        }
    }

    /// The offset of the cursor: after the last record read and the empty lines after it,
    /// once `next` has returned `None`.
    pub(crate) fn position(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// True when the window holds the source's last byte.
    fn at_eof(&self) -> bool {
        self.base + self.filled as u64 >= self.src.len()
    }

    /// Drops the bytes before the cursor and reads more after what is held, growing the
    /// window when the cursor's record fills it. Returns false at the end of the source.
    fn refill(&mut self) -> Result<bool, RecordError> {
        if self.at_eof() {
            return Ok(false);
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.filled, 0);
            self.base += self.pos as u64;
            self.filled -= self.pos;
            self.pos = 0;
        }
        if self.filled == self.buf.len() {
            // No larger than what is left to read (and one block more, for the boundary): a
            // small file needs a small window.
            let left = self.src.len().saturating_sub(self.base) as usize;
            let size = (self.buf.len() * 2)
                .max(WINDOW.min(left.saturating_add(BLOCK)))
                .max(self.filled + 1);
            self.buf.resize(size, 0);
        }
        // End the read on a block boundary when that still reads something: the next read
        // then starts on one, and a source that reads by whole blocks reads each only once.
        let at = self.base + self.filled as u64;
        let mut want = self.buf.len() - self.filled;
        let end = at + want as u64;
        let aligned = end - end % BLOCK as u64;
        if end < self.src.len() && aligned > at {
            want = (aligned - at) as usize;
        }
        let n = self
            .src
            .read_at(&mut self.buf[self.filled..self.filled + want], at)
            .map_err(record_io)?;
        if n == 0 {
            return Err(RecordError::Io("the file ended early".to_string()));
        }
        self.filled += n;
        Ok(true)
    }

    /// The next record, or `None` when no more start before `until`.
    #[inline]
    pub(crate) fn next(&mut self) -> Result<Option<Record<'_>>, RecordError> {
        // Skip empty lines.
        loop {
            while self.pos < self.filled && is_terminator(self.buf[self.pos]) {
                self.pos += 1;
            }
            if self.pos < self.filled || !self.refill()? {
                break;
            }
        }
        let offset = self.position();
        if self.pos >= self.filled || offset >= self.until {
            return Ok(None);
        }
        loop {
            let data = &self.buf[..self.filled];
            let split = split_record(
                self.dialect,
                data,
                self.pos,
                &mut self.scratch,
                &mut self.fields,
                self.max_fields,
            );
            let next = match split {
                Split::Terminated(next) => next,
                Split::TooManyFields => return Err(RecordError::TooManyFields(offset)),
                Split::AtEnd if self.at_eof() => self.filled,
                Split::OpenQuote(q) if self.at_eof() => {
                    return Err(RecordError::UnclosedQuote(self.base + q as u64))
                }
                // The record may go on past the window: read more and split it again.
                Split::AtEnd | Split::OpenQuote(_) => {
                    self.refill()?;
                    continue;
                }
            };
            let start = self.pos;
            self.pos = next;
            return Ok(Some(Record {
                offset: self.base + start as u64,
                fields: &self.fields,
                buf: &self.buf[..self.filled],
                scratch: &self.scratch,
            }));
        }
    }
}

impl<'s, S: ByteSource + ?Sized, D: Dialect> Records<'s, S, D> {
    /// Up to `max` more records, read as [`Records::next`] reads them one by one, and the
    /// error that stopped them early, if one did: the records before it are whole. A batch
    /// ends early, too, before a record that runs past the window (unless it would be empty):
    /// every record of a batch is in the window at once. An empty batch with no error: no
    /// more records start before `until`.
    pub(crate) fn next_batch(&mut self, max: usize) -> (Batch<'_>, Option<RecordError>) {
        self.offsets.clear();
        self.starts.clear();
        self.fields.clear();
        self.scratch.clear();
        let error = self.fill_batch(max).err();
        let batch = Batch {
            offsets: &self.offsets,
            starts: &self.starts,
            fields: &self.fields,
            buf: &self.buf[..self.filled],
            scratch: &self.scratch,
        };
        (batch, error)
    }

    /// Splits records onto the batch; see [`Records::next_batch`]. The window is refilled
    /// only while the batch is empty: a refill moves the bytes its fields point into.
    fn fill_batch(&mut self, max: usize) -> Result<(), RecordError> {
        while self.offsets.len() < max {
            while self.pos < self.filled && is_terminator(self.buf[self.pos]) {
                self.pos += 1;
            }
            if self.pos >= self.filled {
                if !self.offsets.is_empty() || !self.refill()? {
                    return Ok(());
                }
                continue;
            }
            let offset = self.position();
            if offset >= self.until {
                return Ok(());
            }
            let (nf, ns) = (self.fields.len(), self.scratch.len());
            let split = split_record_onto(
                self.dialect,
                &self.buf[..self.filled],
                self.pos,
                &mut self.scratch,
                &mut self.fields,
                self.max_fields,
            );
            let whole = match split {
                Split::Terminated(next) => Some(next),
                Split::AtEnd if self.at_eof() => Some(self.filled),
                _ => None,
            };
            let Some(next) = whole else {
                // The batch keeps whole records only.
                self.fields.truncate(nf);
                self.scratch.truncate(ns);
                match split {
                    Split::TooManyFields => return Err(RecordError::TooManyFields(offset)),
                    Split::OpenQuote(q) if self.at_eof() => {
                        return Err(RecordError::UnclosedQuote(self.base + q as u64))
                    }
                    // The record may go on past the window: leave it to a batch of its own,
                    // or read more and split it again.
                    _ if !self.offsets.is_empty() => return Ok(()),
                    _ => {
                        self.refill()?;
                        continue;
                    }
                }
            };
            self.offsets.push(offset);
            self.starts.push(nf);
            self.pos = next;
        }
        Ok(())
    }
}

/// The 1-based line of byte `offset` of a source: one more than the line ends before it,
/// where a line ends at a line feed, or at a carriage return not followed by one (`\r\n`
/// ends one line; a file of lone `\r`, as some spreadsheets write, has a line per record).
pub(crate) fn line_of<S: ByteSource + ?Sized>(src: &S, offset: u64) -> Result<u64, RecordError> {
    let mut buf = vec![0u8; WINDOW.min(usize::try_from(offset).unwrap_or(WINDOW).max(1))];
    let mut at = 0u64;
    let mut lines = 1u64;
    // Whether the last byte read was a carriage return, whose line ends unless a line feed
    // comes next (counted then as that line feed).
    let mut after_cr = false;
    while at < offset {
        let want = usize::try_from(offset - at)
            .unwrap_or(usize::MAX)
            .min(WINDOW);
        let n = src.read_at(&mut buf[..want], at).map_err(record_io)?;
        if n == 0 {
            // The offset is past the end: every line end has been counted.
            break;
        }
        let bytes = &buf[..n];
        if after_cr && bytes[0] != b'\n' {
            lines += 1;
        }
        lines += memchr::memchr_iter(b'\n', bytes).count() as u64;
        lines += memchr::memchr_iter(b'\r', &bytes[..n - 1])
            .filter(|&i| bytes[i + 1] != b'\n')
            .count() as u64;
        after_cr = bytes[n - 1] == b'\r';
        at += n as u64;
    }
    // A carriage return just before `offset` ends its line unless a line feed is at `offset`.
    if after_cr {
        let mut next = [0u8; 1];
        let n = src.read_at(&mut next, at).map_err(record_io)?;
        if n == 0 || next[0] != b'\n' {
            lines += 1;
        }
    }
    Ok(lines)
}

/// The offset just after the first line feed at or after `from`, if any before the end.
pub(crate) fn next_line_start<S: ByteSource + ?Sized>(
    src: &S,
    from: u64,
) -> io::Result<Option<u64>> {
    let mut buf = vec![0u8; 64 << 10];
    let mut at = from;
    loop {
        let n = src.read_at(&mut buf, at)?;
        if n == 0 {
            return Ok(None);
        }
        if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
            let start = at + i as u64 + 1;
            return Ok((start < src.len()).then_some(start));
        }
        at += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::Comma;
    use super::*;

    /// Each record's offset and fields.
    type Read = Vec<(u64, Vec<Vec<u8>>)>;

    fn all(src: &[u8], from: u64, until: u64) -> Result<Read, RecordError> {
        let mut r = Records::new(src, &Comma, from, until, 100);
        let mut out = Vec::new();
        while let Some(rec) = r.next()? {
            out.push((
                rec.offset,
                rec.fields.iter().map(|f| rec.bytes(f).to_vec()).collect(),
            ));
        }
        Ok(out)
    }

    #[test]
    fn records_across_window_boundaries() {
        // Long fields force refills and window growth in the middle of records.
        let long = "x".repeat(WINDOW + 100);
        let text = format!("a,b\n\n{long},\"q\n{long}\"\r\n1,2");
        let recs = all(text.as_bytes(), 0, text.len() as u64).expect("valid");
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[1].0, 5);
        assert_eq!(recs[1].1[0].len(), long.len());
        assert_eq!(recs[1].1[1].len(), long.len() + 2);
        assert_eq!(recs[2].1, vec![b"1".to_vec(), b"2".to_vec()]);
    }

    #[test]
    fn records_start_before_until() {
        let text = b"a\nbb\nccc\n";
        let recs = all(text, 0, 3).expect("valid");
        assert_eq!(recs.len(), 2);
        let recs = all(text, 2, 5).expect("valid");
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].0, 2);
    }

    #[test]
    fn errors_carry_offsets() {
        assert_eq!(all(b"a\n\"b\n", 0, 5), Err(RecordError::UnclosedQuote(2)));
        let wide = "a,".repeat(200);
        assert_eq!(
            all(wide.as_bytes(), 0, wide.len() as u64),
            Err(RecordError::TooManyFields(0))
        );
    }

    #[test]
    fn lines_and_line_starts() {
        let text = b"a\nb\r\nc";
        assert_eq!(line_of(&text[..], 0), Ok(1));
        assert_eq!(line_of(&text[..], 2), Ok(2));
        assert_eq!(line_of(&text[..], 5), Ok(3));
        assert_eq!(next_line_start(&text[..], 0).ok(), Some(Some(2)));
        assert_eq!(next_line_start(&text[..], 3).ok(), Some(Some(5)));
        assert_eq!(next_line_start(&text[..], 5).ok(), Some(None));
    }

    /// A line ends at `\n`, or at `\r` not followed by `\n`, wherever the windows of the
    /// read fall: every offset near a window's edge, and others, against a count by hand.
    #[test]
    fn lines_end_at_line_feeds_and_lone_carriage_returns_across_windows() {
        let len = 2 * WINDOW + 100;
        let mut next = super::super::rng::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut text: Vec<u8> = (0..len)
            .map(|_| [b'a', b'\r', b'\n', b'\r'][(next() % 4) as usize])
            .collect();
        // A `\r\n` and a lone `\r` astride each window's edge.
        text[WINDOW - 1..WINDOW + 1].copy_from_slice(b"\r\n");
        text[2 * WINDOW - 1..2 * WINDOW + 1].copy_from_slice(b"\ra");
        let ends = |i: usize| match text[i] {
            b'\n' => true,
            b'\r' => text.get(i + 1) != Some(&b'\n'),
            _ => false,
        };
        let mut before = vec![1u64; len + 1];
        for i in 0..len {
            before[i + 1] = before[i] + u64::from(ends(i));
        }
        let mut offsets: Vec<usize> = (0..5).collect();
        for edge in [WINDOW, 2 * WINDOW] {
            offsets.extend(edge - 3..edge + 3);
        }
        offsets.extend((0..len).step_by(9973));
        offsets.push(len);
        for at in offsets {
            assert_eq!(line_of(&text[..], at as u64), Ok(before[at]), "offset {at}");
        }
        assert_eq!(line_of(&b"a\rb\r\nc\rd"[..], 7), Ok(4));
    }
}
