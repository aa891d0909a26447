//! `load_csv`: reads a CSV file into a `Table`, parsing chunks of it in parallel and inferring column types.
//!
//! The header is read first, then the body is cut into chunks at line breaks. Each chunk is
//! streamed on its own thread as if a record started there, keeping per column the narrowest
//! type that fits so far (missing, integer, float, boolean, text). A cut inside a quoted
//! field shows up as a chunk that does not start where its predecessor ended; the rest of
//! the file is then parsed again in one piece, so the result never depends on where the
//! cuts fell. Finally the chunks' column types are joined, values are converted to the
//! joined type, and text dictionaries are merged and sorted.
//!
//! A regular file is read once, by blocks that are hashed as they are read (see
//! [`content`](super::content)); a pipe is read whole into memory first. Either way the
//! [`ContentHash`] returned with the table is the BLAKE3 hash of exactly the bytes parsed.

use std::path::Path;
use std::time::Duration;

use rayon::prelude::*;

use super::bitmap::{BitBuilder, Validity};
use super::content::ContentHash;
use super::error::DataError;
use super::format::CsvFormat;
use super::intern::{InternError, Interner};
use super::lanes::{remap_codes, CodeBuilder, IntBuilder, Ints, Lanes};
use super::open::{open, Opened};
use super::parse::{is_missing, looks_like_value, parse_bool, parse_i64, Comma, Dialect, Other};
use super::schema::{self, Declared};
use super::source::{line_of, next_line_start, record_io, Batch, ByteSource, RecordError, Records};
use super::table::{ColumnData, ColumnType, Dictionary, Segment, SegmentColumn, Table};

/// How a file is read: its header setting, its delimiter and decimal mark, and limits that
/// protect the process from files it cannot sensibly hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// Largest file accepted, in bytes (default 4 GiB).
    pub max_bytes: u64,
    /// Most fields accepted in one record, header included (default 4096).
    pub max_fields: usize,
    /// True (the default) when the first record names the columns. False for `NO HEADER`:
    /// the columns are named `c1`, `c2`, ... and the first record is data.
    pub header: bool,
    /// The byte between fields and the decimal mark (default `,` and `.`; `DELIMITER`,
    /// `DECIMAL`). Checked by [`CsvFormat::check`] before anything is read.
    pub format: CsvFormat,
    /// How long a pipe may give no data before the load gives up (default 10 seconds).
    pub pipe_idle: Duration,
    /// A declared schema (`None`: types are inferred). The header must name every declared
    /// column; each is read as its declared type, a cell that does not parse as it or lies
    /// outside its domain is missing, and the file's other columns are not kept.
    pub columns: Option<Vec<Declared>>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            max_bytes: 4 << 30,
            max_fields: 4096,
            header: true,
            format: CsvFormat::default(),
            pipe_idle: Duration::from_secs(10),
            columns: None,
        }
    }
}

/// A loaded table and the hash of the bytes it was parsed from.
#[derive(Debug)]
pub struct Loaded {
    /// The table.
    pub table: Table,
    /// BLAKE3 of exactly the bytes parsed; kept in memory only (the privacy layer stores
    /// only a keyed function of it).
    pub content: ContentHash,
}

/// Reads the CSV file at `path` (a header row unless `opts.header` is false, then one record
/// per row) into a [`Table`], with the [`ContentHash`] of the bytes it was parsed from.
///
/// Column types are inferred over all non-missing cells: all `i64` gives integer, else all
/// finite numbers gives float, else all `true`/`false` (any case) gives boolean, else text;
/// a column with no values is text. Cells that are empty after trimming ASCII whitespace, or
/// `NA`, are missing. Numbers and booleans are read after trimming ASCII whitespace; text is
/// trimmed when unquoted and kept verbatim when quoted. Header names are trimmed; a header
/// with a field that reads as a number, a date or a time is refused as a row of data. A
/// leading UTF-8 byte-order mark is ignored. Quoting follows RFC 4180 as the `csv` crate
/// reads it (`""` is a quote inside a quoted field; `\n`, `\r\n` and `\r` end records; empty
/// lines are skipped), except that a quote still open at the end of the file is an error.
///
/// A regular file is read once, and a part read twice (by neighbouring chunks, or to find a
/// line number) must not have changed in between. A FIFO or pipe is read whole, up to
/// `opts.max_bytes`; one without a writer, or idle for `opts.pipe_idle`, is an error. Devices
/// and sockets are refused without being read.
///
/// On any error no table is returned; the error names lines and columns, never values.
pub fn load_csv(path: &Path, opts: &LoadOptions) -> Result<Loaded, DataError> {
    let shown = path.display().to_string();
    match open(path, &shown, opts)? {
        #[cfg(unix)]
        Opened::File(src) => {
            let table = parse_table(&src, &shown, opts, default_chunks(src.len()))?;
            let content = src.finish().map_err(|e| read_error(record_io(e), &shown))?;
            Ok(Loaded { table, content })
        }
        #[cfg(unix)]
        Opened::Bytes(bytes, content) => {
            let table = parse_table(&bytes[..], &shown, opts, default_chunks(bytes.len() as u64))?;
            Ok(Loaded { table, content })
        }
        #[cfg(not(unix))]
        Opened::Shared(bytes, content) => {
            let table = parse_table(&bytes[..], &shown, opts, default_chunks(bytes.len() as u64))?;
            Ok(Loaded { table, content })
        }
    }
}

/// Reads CSV from bytes in memory, as [`load_csv`] reads a file (errors name the source
/// `(memory)`).
pub fn load_csv_bytes(bytes: &[u8], opts: &LoadOptions) -> Result<Loaded, DataError> {
    if bytes.len() as u64 > opts.max_bytes {
        return Err(DataError::TooLarge {
            limit: opts.max_bytes,
        });
    }
    let table = parse_table(bytes, "(memory)", opts, default_chunks(bytes.len() as u64))?;
    Ok(Loaded {
        table,
        content: ContentHash::of_bytes(bytes),
    })
}

/// The error of a read that failed (`RecordError::Io` or `Changed`).
fn read_error(e: RecordError, path: &str) -> DataError {
    match e {
        RecordError::Changed => DataError::Changed {
            path: path.to_string(),
        },
        RecordError::Io(message) => DataError::Io {
            path: path.to_string(),
            message,
        },
        // Not a read error: no caller passes these.
        RecordError::UnclosedQuote(_) | RecordError::TooManyFields(_) => DataError::Io {
            path: path.to_string(),
            message: "the file could not be read".to_string(),
        },
    }
}

/// How many chunks to cut a body of `len` bytes into: a few per thread, none under 1 MiB.
fn default_chunks(len: u64) -> usize {
    const MIN_CHUNK: u64 = 1 << 20;
    let threads = rayon::current_num_threads().max(1);
    usize::try_from(len / MIN_CHUNK)
        .unwrap_or(usize::MAX)
        .clamp(1, threads * 4)
}

/// Parses a whole CSV source, cutting its body into about `chunks` pieces. The default
/// format is read by its own copy of the parser, with `,` and `.` as constants: the choice
/// is made here, once per file.
pub(crate) fn parse_table<S: ByteSource + ?Sized>(
    src: &S,
    path: &str,
    opts: &LoadOptions,
    chunks: usize,
) -> Result<Table, DataError> {
    opts.format
        .check()
        .map_err(|error| DataError::Format { error })?;
    if opts.format.is_default() {
        parse_table_as(src, &Comma, path, opts, chunks)
    } else {
        parse_table_as(src, &Other::new(opts.format), path, opts, chunks)
    }
}

/// [`parse_table`] in dialect `d`.
fn parse_table_as<S: ByteSource + ?Sized, D: Dialect>(
    src: &S,
    d: &D,
    path: &str,
    opts: &LoadOptions,
    chunks: usize,
) -> Result<Table, DataError> {
    let len = src.len();
    let mut head = [0u8; 3];
    let n = src
        .read_at(&mut head, 0)
        .map_err(|e| read_error(record_io(e), path))?;
    let start = if n == 3 && head == *b"\xEF\xBB\xBF" {
        3
    } else {
        0
    };
    if start == len {
        return Err(DataError::Empty {
            path: path.to_string(),
        });
    }
    let (names, body) = parse_header(src, d, start, path, opts)?;
    let ncols = names.len();
    let plan = match &opts.columns {
        Some(declared) => Some(declared_plan(&names, declared)?),
        None => None,
    };
    let kinds = plan.as_ref().map(|(kinds, _)| kinds.as_slice());
    let outs = parse_body(src, d, body, ncols, opts.max_fields, chunks, kinds)
        .map_err(|e| e.into_data_error(src, path, &names, opts.max_fields, ncols))
        .map_err(|e| one_field_header(e, &names, opts.header, d.delimiter()))?;
    let table = assemble(src, d, path, names, outs, opts.max_fields, kinds)?;
    match (&opts.columns, plan) {
        (Some(declared), Some((_, order))) => Ok(schema::conform(table, declared, &order)),
        _ if opts.header && header_of_values(&table, d) => Err(DataError::NotAHeader),
        _ => Ok(table),
    }
}

/// A ragged row under a header of one field that holds `;`, `|` or `,` (other than the
/// delimiter), told with a hint: that character most likely separates the fields. The hint
/// names the header only, which is public; with `NO HEADER` the one field is a row of data.
fn one_field_header(e: DataError, names: &[String], header: bool, delimiter: u8) -> DataError {
    match (e, names) {
        (DataError::RaggedRow { line, expected: 1 }, [name]) if header => {
            match super::format::one_field_hint(name, delimiter) {
                Some(hint) => DataError::OneFieldHeader { line, hint },
                None => DataError::RaggedRow { line, expected: 1 },
            }
        }
        (e, _) => e,
    }
}

/// For a declared schema: each file column's declared kind (`Kind::Missing` for a column
/// that is not kept), and the file column of each declared one. Every declared name must be
/// in the header, once.
fn declared_plan(
    names: &[String],
    declared: &[Declared],
) -> Result<(Vec<Kind>, Vec<usize>), DataError> {
    let mut kinds = vec![Kind::Missing; names.len()];
    let mut order = Vec::with_capacity(declared.len());
    for d in declared {
        let c = names.iter().position(|n| *n == d.name).ok_or_else(|| {
            DataError::DeclaredColumnMissing {
                column: d.name.clone(),
            }
        })?;
        if order.contains(&c) {
            return Err(DataError::DeclaredColumnMissing {
                column: d.name.clone(),
            });
        }
        kinds[c] = match d.ty {
            ColumnType::Integer => Kind::Integer,
            ColumnType::Float => Kind::Float,
            ColumnType::Boolean => Kind::Boolean,
            ColumnType::Text => Kind::Text,
        };
        order.push(c);
    }
    Ok((kinds, order))
}

/// Whether some header field has the type of its column's values: `true` over booleans,
/// `NaN` over floats, `3,5` over floats read with `DECIMAL ','`. Such a first row is data the
/// shape check alone lets through.
fn header_of_values<D: Dialect>(table: &Table, d: &D) -> bool {
    (0..table.n_columns()).any(|c| {
        let name = table.column_name(c).as_bytes();
        match table.column_type(c) {
            ColumnType::Boolean => parse_bool(name).is_some(),
            // Any float spelling, the words too (`NaN`, `inf`), which no cell of the column is.
            ColumnType::Float => {
                std::str::from_utf8(name).is_ok_and(|n| n.trim().parse::<f64>().is_ok())
                    || d.float(name.trim_ascii()).is_some()
            }
            ColumnType::Integer => parse_i64(name).is_some() || d.int(name.trim_ascii()).is_some(),
            ColumnType::Text => false,
        }
    })
}

/// Reads the first record; returns the column names and where the body starts. With a
/// header, the names are its trimmed fields and the body follows it; without, the names are
/// `c1`, `c2`, ... and the body starts with the first record.
fn parse_header<S: ByteSource + ?Sized, D: Dialect>(
    src: &S,
    d: &D,
    start: u64,
    path: &str,
    opts: &LoadOptions,
) -> Result<(Vec<String>, u64), DataError> {
    let mut records = Records::new(src, d, start, src.len(), opts.max_fields);
    let raw: Vec<Vec<u8>> = match records.next() {
        Ok(Some(rec)) => rec.fields.iter().map(|f| rec.bytes(f).to_vec()).collect(),
        Ok(None) if opts.header => {
            return Err(DataError::NoHeader {
                path: path.to_string(),
            })
        }
        Ok(None) => {
            return Err(DataError::NoRecords {
                path: path.to_string(),
            })
        }
        Err(e) => {
            return Err(ChunkError::Record(e).into_data_error(src, path, &[], opts.max_fields, 0))
        }
    };
    if !opts.header {
        let names = (1..=raw.len()).map(|i| format!("c{i}")).collect();
        return Ok((names, start));
    }
    let body = records.position();
    let mut names: Vec<String> = Vec::with_capacity(raw.len());
    for bytes in raw {
        let name = String::from_utf8(bytes).map_err(|_| DataError::NotAHeader)?;
        names.push(name.trim_ascii().to_string());
    }
    // Values where names should be: the first row is data, and would be shown as names. The
    // error names no field: which of a row's fields are empty, equal or dates is data too.
    let valueish = names.iter().any(|n| looks_like_value(n.as_bytes()));
    let empty = names.iter().any(String::is_empty);
    let control = names.iter().any(|n| super::error::has_controls(n));
    let repeated = names
        .iter()
        .enumerate()
        .any(|(i, n)| names[..i].contains(n));
    if valueish || empty || control || repeated {
        return Err(DataError::NotAHeader);
    }
    Ok((names, body))
}

/// What went wrong in a chunk, by offset; turned into a `DataError` once it is known to be
/// real (the chunk started at a true record boundary).
#[derive(Debug, Clone, PartialEq, Eq)]
enum ChunkError {
    /// The record could not be split or read.
    Record(RecordError),
    /// The record at this offset has another number of fields than the header.
    Ragged { record: u64 },
    /// A cell of the record at this offset is not UTF-8.
    InvalidUtf8 { record: u64, column: usize },
    /// A text column ran out of codes.
    TooManyDistinct { column: usize },
}

impl ChunkError {
    fn into_data_error<S: ByteSource + ?Sized>(
        self,
        src: &S,
        path: &str,
        names: &[String],
        max_fields: usize,
        ncols: usize,
    ) -> DataError {
        let name = |c: usize| names.get(c).cloned().unwrap_or_default();
        // The line of an offset: found by reading the source again, which may fail too.
        let located = |at: u64, error: &dyn Fn(u64) -> DataError| match line_of(src, at) {
            Ok(line) => error(line),
            Err(e) => read_error(e, path),
        };
        match self {
            ChunkError::Record(RecordError::UnclosedQuote(at)) => {
                located(at, &|line| DataError::UnclosedQuote { line })
            }
            ChunkError::Record(RecordError::TooManyFields(at)) => {
                located(at, &|line| DataError::TooManyFields {
                    line,
                    limit: max_fields,
                })
            }
            ChunkError::Record(e) => read_error(e, path),
            ChunkError::Ragged { record } => located(record, &|line| DataError::RaggedRow {
                line,
                expected: ncols,
            }),
            ChunkError::InvalidUtf8 { record, column } => {
                located(record, &|line| DataError::InvalidUtf8 {
                    line,
                    column: name(column),
                })
            }
            ChunkError::TooManyDistinct { column } => DataError::TooManyDistinct {
                column: name(column),
            },
        }
    }
}

/// The type a column has so far, in a chunk or over the file: the join of its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// No values yet.
    Missing,
    Integer,
    Float,
    Boolean,
    Text,
}

impl Kind {
    /// The least type that holds both.
    fn join(self, other: Kind) -> Kind {
        use Kind::*;
        match (self, other) {
            (Missing, k) | (k, Missing) => k,
            (a, b) if a == b => a,
            (Integer, Float) | (Float, Integer) => Float,
            _ => Text,
        }
    }
}

/// A column's values so far, in the narrowest type that holds them (integers and codes at
/// the narrowest width, too).
enum Values {
    /// Only missing cells so far (the count is the validity length).
    Missing,
    Integer(IntBuilder),
    Float(Vec<f64>),
    Boolean(BitBuilder),
    Text(CodeBuilder, Interner),
}

/// Rows a segment holds at most. Each segment of an integer column is stored from its own
/// least value at its own width, so a column that drifts (keys, times, row numbers) takes two
/// bytes a row where one span over a whole chunk would take four. A multiple of 64, so the
/// segments' validity bitmaps are whole words of the chunk's.
const SEGMENT_ROWS: usize = 1 << 16;

/// Why a cell could not be added to a column builder.
enum PushError {
    /// The cell does not fit the column's type: the column must become text.
    NeedsText,
    /// The cell is not UTF-8.
    InvalidUtf8,
    /// The text column is out of codes.
    Full,
}

impl From<InternError> for PushError {
    fn from(e: InternError) -> Self {
        match e {
            InternError::InvalidUtf8 => PushError::InvalidUtf8,
            InternError::Full => PushError::Full,
        }
    }
}

/// One column of one chunk, being built.
struct ColumnBuilder {
    valid: Validity,
    values: Values,
    /// An integer column's finished segments, before the cells in `values`.
    settled: Vec<Ints>,
    /// A text column's codes of finished segments, before the cells in `values`.
    settled_codes: Vec<Lanes>,
}

impl ColumnBuilder {
    fn new() -> Self {
        ColumnBuilder {
            valid: Validity::default(),
            values: Values::Missing,
            settled: Vec::new(),
            settled_codes: Vec::new(),
        }
    }

    fn kind(&self) -> Kind {
        match self.values {
            Values::Missing => Kind::Missing,
            Values::Integer(_) => Kind::Integer,
            Values::Float(_) => Kind::Float,
            Values::Boolean(_) => Kind::Boolean,
            Values::Text(..) => Kind::Text,
        }
    }

    /// Makes room for `additional` more rows.
    fn reserve(&mut self, additional: usize) {
        match &mut self.values {
            Values::Integer(v) => v.reserve(additional.min(SEGMENT_ROWS)),
            Values::Float(v) => v.reserve(additional),
            Values::Text(v, _) => v.reserve(additional),
            Values::Missing | Values::Boolean(_) => {}
        }
    }

    /// Moves an integer column's cells so far into finished segments of [`SEGMENT_ROWS`]
    /// (the last may be shorter, and then must be the chunk's last): the parse holds the
    /// builder's wider distances for one segment at a time. With `more`, the builder keeps
    /// its buffer for the next segment's cells.
    fn settle(&mut self, more: bool) {
        match &mut self.values {
            Values::Integer(b) => {
                self.settled.extend(b.take_cut(SEGMENT_ROWS));
                if !more {
                    *b = IntBuilder::default();
                }
            }
            // Codes are cut as they are, to be mapped into the file's dictionary at the end.
            Values::Text(codes, _) => {
                self.settled_codes.extend(codes.take_cut(SEGMENT_ROWS));
                if !more {
                    *codes = CodeBuilder::missing(0, 0);
                }
            }
            _ => {}
        }
    }

    /// The settled segments of an integer column as floats, and then the cells after them.
    fn floats_of(settled: Vec<Ints>, rest: IntBuilder) -> Vec<f64> {
        let mut f: Vec<f64> = settled
            .iter()
            .flat_map(|ints| (0..ints.lanes.len()).map(|i| ints.get(i) as f64))
            .collect();
        f.extend(rest.into_f64());
        f
    }

    /// Adds one cell, widening the type when it allows; `NeedsText` when only text fits.
    ///
    /// The common cases (a value of the column's type, or a missing cell) stay here, small
    /// enough to be inlined into the record loop; a first value and a widening go to
    /// [`ColumnBuilder::push_rare`].
    #[inline(always)]
    fn push<D: Dialect>(&mut self, d: &D, bytes: &[u8], quoted: bool) -> Result<(), PushError> {
        // An integer first, untrimmed: an integer has no whitespace to trim, so a cell that
        // reads as one reads as the same one trimmed.
        if let Values::Integer(v) = &mut self.values {
            if let Some(x) = d.int(bytes) {
                v.push(x);
                self.valid.push(true);
                return Ok(());
            }
        }
        let t = bytes.trim_ascii();
        let valid = match &mut self.values {
            Values::Integer(v) => match d.int(t) {
                Some(x) => {
                    v.push(x);
                    true
                }
                None if is_missing(t) => {
                    v.push_missing();
                    false
                }
                None => return self.push_rare(d, bytes, quoted),
            },
            Values::Float(v) => match d.float(t) {
                Some(x) => {
                    v.push(x);
                    true
                }
                None if is_missing(t) => {
                    v.push(0.0);
                    false
                }
                None => return Err(PushError::NeedsText),
            },
            Values::Boolean(bits) => match parse_bool(t) {
                Some(b) => {
                    bits.push(b);
                    true
                }
                None if is_missing(t) => {
                    bits.push(false);
                    false
                }
                None => return Err(PushError::NeedsText),
            },
            Values::Text(codes, dict) => {
                if is_missing(t) {
                    codes.push(0);
                    false
                } else {
                    codes.push(dict.intern(if quoted { bytes } else { t })?);
                    true
                }
            }
            Values::Missing => return self.push_rare(d, bytes, quoted),
        };
        self.valid.push(valid);
        Ok(())
    }

    /// [`ColumnBuilder::push`] for a cell that changes the column's type: the first value
    /// of a column that held only missing cells, or a float in an integer column. Missing
    /// cells of a column with no type yet are counted here too.
    #[cold]
    #[inline(never)]
    fn push_rare<D: Dialect>(
        &mut self,
        d: &D,
        bytes: &[u8],
        quoted: bool,
    ) -> Result<(), PushError> {
        let t = bytes.trim_ascii();
        match &mut self.values {
            Values::Integer(v) => {
                let Some(x) = d.float(t) else {
                    return Err(PushError::NeedsText);
                };
                // Every i64 that parses also parses as the f64 nearest to it, which is
                // what `as` gives.
                let settled = std::mem::take(&mut self.settled);
                let mut f = Self::floats_of(settled, std::mem::take(v));
                f.push(x);
                self.valid.push(true);
                self.values = Values::Float(f);
                Ok(())
            }
            Values::Missing if is_missing(t) => {
                self.valid.push(false);
                Ok(())
            }
            Values::Missing => {
                let n = self.valid.len();
                self.values = if d.int(t).is_some() {
                    Values::Integer(IntBuilder::missing(n))
                } else if d.float(t).is_some() {
                    Values::Float(vec![0.0; n])
                } else if parse_bool(t).is_some() {
                    Values::Boolean(BitBuilder::filled(n, false))
                } else {
                    Values::Text(CodeBuilder::missing(n, n), Interner::default())
                };
                self.push(d, bytes, quoted)
            }
            _ => self.push(d, bytes, quoted),
        }
    }

    /// Adds one cell to a text column.
    #[inline]
    fn push_text(&mut self, bytes: &[u8], quoted: bool) -> Result<(), PushError> {
        match self.values {
            // A text column reads no number: any dialect will do.
            Values::Text(..) => self.push(&Comma, bytes, quoted),
            _ => Err(PushError::NeedsText),
        }
    }

    /// An empty column of a declared kind (`Kind::Missing`: a column that is not kept).
    fn declared(kind: Kind) -> Self {
        ColumnBuilder {
            valid: Validity::default(),
            values: match kind {
                Kind::Integer => Values::Integer(IntBuilder::default()),
                Kind::Float => Values::Float(Vec::new()),
                Kind::Boolean => Values::Boolean(BitBuilder::default()),
                Kind::Text => Values::Text(CodeBuilder::missing(0, 0), Interner::default()),
                Kind::Missing => Values::Missing,
            },
            settled: Vec::new(),
            settled_codes: Vec::new(),
        }
    }

    /// Adds one cell to a column of a declared type: a cell that does not parse as it is
    /// missing. The type never changes.
    #[inline]
    fn push_declared<D: Dialect>(
        &mut self,
        d: &D,
        bytes: &[u8],
        quoted: bool,
    ) -> Result<(), PushError> {
        let t = bytes.trim_ascii();
        let valid = match &mut self.values {
            Values::Integer(v) => {
                let x = d.int(t);
                match x {
                    Some(x) => v.push(x),
                    None => v.push_missing(),
                }
                x.is_some()
            }
            Values::Float(v) => {
                let x = d.float(t);
                v.push(x.unwrap_or(0.0));
                x.is_some()
            }
            Values::Boolean(bits) => {
                let x = parse_bool(t);
                bits.push(x.unwrap_or(false));
                x.is_some()
            }
            Values::Text(..) => return self.push_text(bytes, quoted),
            Values::Missing => false,
        };
        self.valid.push(valid);
        Ok(())
    }

    /// An empty text column.
    fn text(capacity: usize) -> Self {
        ColumnBuilder {
            valid: Validity::default(),
            values: Values::Text(CodeBuilder::missing(0, capacity), Interner::default()),
            settled: Vec::new(),
            settled_codes: Vec::new(),
        }
    }
}

/// The parsed records of one chunk.
struct ChunkOut {
    /// Offset of the first record (after any empty lines), or `end` when there is none.
    start: u64,
    /// Offset after the last record and the empty lines that follow it.
    end: u64,
    rows: usize,
    columns: Vec<ColumnBuilder>,
    error: Option<ChunkError>,
}

/// The error for a cell that could not be added.
fn cell_error(why: PushError, record: u64, column: usize) -> ChunkError {
    match why {
        PushError::Full => ChunkError::TooManyDistinct { column },
        // `NeedsText` cannot happen for a text column, which takes every cell.
        PushError::InvalidUtf8 | PushError::NeedsText => ChunkError::InvalidUtf8 { record, column },
    }
}

/// Reads the first `rows` records from `start` again and collects column `col` as text.
fn extract_text<S: ByteSource + ?Sized, D: Dialect>(
    src: &S,
    d: &D,
    start: u64,
    rows: usize,
    col: usize,
    max_fields: usize,
) -> Result<ColumnBuilder, ChunkError> {
    let mut out = ColumnBuilder::text(rows + rows / 8 + 16);
    let mut records = Records::new(src, d, start, src.len(), max_fields);
    for _ in 0..rows {
        let Some(rec) = records.next().map_err(ChunkError::Record)? else {
            break;
        };
        if let Some(f) = rec.fields.get(col) {
            out.push_text(rec.bytes(f), f.quoted)
                .map_err(|why| cell_error(why, rec.offset, col))?;
        }
    }
    Ok(out)
}

/// Records parsed at a time, column by column: each column's cells of a batch go through
/// one loop, so the choice of what its type makes of a cell is the same for the whole loop
/// and predicted, where a record at a time changes it at every field.
const BATCH_ROWS: usize = 512;

/// Parses the records that start in `[from, until)` (the last may run past `until`).
fn parse_chunk<S: ByteSource + ?Sized, D: Dialect>(
    src: &S,
    d: &D,
    from: u64,
    until: u64,
    ncols: usize,
    max_fields: usize,
    declared: Option<&[Kind]>,
) -> ChunkOut {
    if let Some(kinds) = declared {
        return parse_chunk_declared(src, d, from, until, kinds, max_fields);
    }
    let mut records = Records::new(src, d, from, until, max_fields);
    let mut columns: Vec<ColumnBuilder> = (0..ncols).map(|_| ColumnBuilder::new()).collect();
    let mut rows = 0usize;
    let mut start = None;
    let mut reserved = false;
    let error = loop {
        if rows >= 1024 && !reserved {
            // Guess the chunk's row count from the first rows and reserve once.
            let first = start.unwrap_or(from);
            let per_row = ((records.position() - first) / rows as u64).max(1);
            let guess = usize::try_from(until.saturating_sub(first) / per_row).unwrap_or(0);
            let extra = (guess + guess / 16).saturating_sub(rows);
            columns.iter_mut().for_each(|c| c.reserve(extra));
            reserved = true;
        }
        // A batch never crosses a segment's end, where the integer columns are settled.
        let room = SEGMENT_ROWS - rows % SEGMENT_ROWS;
        let (batch, pending) = records.next_batch(BATCH_ROWS.min(room));
        let Some(&offset) = batch.offsets.first() else {
            break pending.map(ChunkError::Record);
        };
        let first = *start.get_or_insert(offset);
        // Cells of the records before the first ragged one; the first error in the file's
        // order is the one reported, as a record at a time would meet it.
        let whole = (0..batch.len())
            .position(|r| batch.n_fields(r) != ncols)
            .unwrap_or(batch.len());
        let mut failed: Option<(usize, usize, ChunkError)> = None;
        for (c, column) in columns.iter_mut().enumerate() {
            let at = Cells {
                src,
                d,
                first,
                rows,
                max_fields,
            };
            if let Err((r, e)) = at.push_column(column, &batch, c, whole) {
                if failed.as_ref().is_none_or(|(fr, _, _)| r < *fr) {
                    failed = Some((r, c, e));
                }
            }
        }
        if let Some((_, _, e)) = failed {
            break Some(e);
        }
        if whole < batch.len() {
            break Some(ChunkError::Ragged {
                record: batch.offsets[whole],
            });
        }
        rows += batch.len();
        if rows.is_multiple_of(SEGMENT_ROWS) {
            columns.iter_mut().for_each(|c| c.settle(true));
        }
        if let Some(e) = pending {
            break Some(ChunkError::Record(e));
        }
    };
    let end = records.position();
    columns.iter_mut().for_each(|c| c.settle(false));
    ChunkOut {
        start: start.unwrap_or(end),
        end,
        rows,
        columns,
        error,
    }
}

/// Where a batch's cells go: the chunk's source, and the rows parsed before the batch.
struct Cells<'a, S: ?Sized, D> {
    src: &'a S,
    d: &'a D,
    /// The offset of the chunk's first record.
    first: u64,
    /// Rows of the chunk before the batch.
    rows: usize,
    max_fields: usize,
}

impl<S: ByteSource + ?Sized, D: Dialect> Cells<'_, S, D> {
    /// Adds field `c` of the batch's first `n` records to `column`, turning it to text when
    /// a cell needs it; the first error, with its record's index in the batch.
    fn push_column(
        &self,
        column: &mut ColumnBuilder,
        batch: &Batch<'_>,
        c: usize,
        n: usize,
    ) -> Result<(), (usize, ChunkError)> {
        for r in 0..n {
            let (bytes, quoted) = batch.cell(r, c);
            match column.push(self.d, bytes, quoted) {
                Ok(()) => {}
                Err(PushError::NeedsText) => {
                    let (src, d, rows) = (self.src, self.d, self.rows + r);
                    let promoted = extract_text(src, d, self.first, rows, c, self.max_fields)
                        .and_then(|mut t| {
                            t.push_text(bytes, quoted)
                                .map_err(|why| cell_error(why, batch.offsets[r], c))?;
                            Ok(t)
                        });
                    *column = promoted.map_err(|e| (r, e))?;
                }
                Err(why) => return Err((r, cell_error(why, batch.offsets[r], c))),
            }
        }
        Ok(())
    }
}

/// [`parse_chunk`] for a declared schema: every column keeps its declared kind.
fn parse_chunk_declared<S: ByteSource + ?Sized, D: Dialect>(
    src: &S,
    d: &D,
    from: u64,
    until: u64,
    kinds: &[Kind],
    max_fields: usize,
) -> ChunkOut {
    let mut records = Records::new(src, d, from, until, max_fields);
    let mut columns: Vec<ColumnBuilder> =
        kinds.iter().map(|&k| ColumnBuilder::declared(k)).collect();
    let mut rows = 0usize;
    let mut start = None;
    let error = loop {
        let rec = match records.next() {
            Ok(Some(rec)) => rec,
            Ok(None) => break None,
            Err(e) => break Some(ChunkError::Record(e)),
        };
        start.get_or_insert(rec.offset);
        if rec.fields.len() != kinds.len() {
            break Some(ChunkError::Ragged { record: rec.offset });
        }
        let failed = rec
            .fields
            .iter()
            .zip(columns.iter_mut())
            .enumerate()
            .find_map(|(i, (f, column))| {
                column
                    .push_declared(d, rec.bytes(f), f.quoted)
                    .err()
                    .map(|why| cell_error(why, rec.offset, i))
            });
        if failed.is_some() {
            break failed;
        }
        rows += 1;
    };
    let end = records.position();
    columns.iter_mut().for_each(|c| c.settle(false));
    ChunkOut {
        start: start.unwrap_or(end),
        end,
        rows,
        columns,
        error,
    }
}

/// Cuts `[body, len)` into about `chunks` pieces at line breaks and parses them in parallel.
fn parse_body<S: ByteSource + ?Sized, D: Dialect>(
    src: &S,
    d: &D,
    body: u64,
    ncols: usize,
    max_fields: usize,
    chunks: usize,
    declared: Option<&[Kind]>,
) -> Result<Vec<ChunkOut>, ChunkError> {
    let len = src.len();
    let chunks = chunks.max(1) as u64;
    let mut cuts = vec![body];
    for k in 1..chunks {
        let nominal = body + (len - body) / chunks * k;
        let from = nominal.max(cuts.last().copied().unwrap_or(body));
        match next_line_start(src, from) {
            Ok(Some(cut)) => cuts.push(cut),
            Ok(None) => break,
            Err(e) => return Err(ChunkError::Record(record_io(e))),
        }
    }
    cuts.dedup();
    cuts.push(len);
    let ranges: Vec<(u64, u64)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    let parsed: Vec<ChunkOut> = ranges
        .par_iter()
        .map(|&(from, until)| parse_chunk(src, d, from, until, ncols, max_fields, declared))
        .collect();
    let mut outs = Vec::with_capacity(parsed.len());
    let mut parsed = parsed.into_iter().peekable();
    while let Some(out) = parsed.next() {
        // `out` starts at a true record boundary, so its error is real.
        if let Some(e) = out.error {
            return Err(e);
        }
        let end = out.end;
        outs.push(out);
        if let Some(next) = parsed.peek() {
            if next.start != end {
                // The cut fell inside a quoted field: parse the rest in one piece.
                let rest = parse_chunk(src, d, end, len, ncols, max_fields, declared);
                if let Some(e) = rest.error {
                    return Err(e);
                }
                outs.push(rest);
                break;
            }
        }
    }
    Ok(outs)
}

/// Joins the chunks' column types, converts every chunk to them and builds the table.
fn assemble<S: ByteSource + ?Sized, D: Dialect>(
    src: &S,
    d: &D,
    path: &str,
    names: Vec<String>,
    mut outs: Vec<ChunkOut>,
    max_fields: usize,
    declared: Option<&[Kind]>,
) -> Result<Table, DataError> {
    let ncols = names.len();
    let kinds: Vec<Kind> = match declared {
        Some(kinds) => kinds.to_vec(),
        None => (0..ncols)
            .map(|c| {
                outs.iter()
                    .fold(Kind::Missing, |k, o| k.join(o.columns[c].kind()))
            })
            .collect(),
    };
    // Text columns whose chunk saw only numbers or booleans: collect them as text again.
    outs.par_iter_mut()
        .try_for_each(|out| {
            for (c, &kind) in kinds.iter().enumerate() {
                let local = out.columns[c].kind();
                if kind == Kind::Text && local != Kind::Text && local != Kind::Missing {
                    out.columns[c] = extract_text(src, d, out.start, out.rows, c, max_fields)?;
                }
            }
            Ok(())
        })
        .map_err(|e: ChunkError| e.into_data_error(src, path, &names, max_fields, ncols))?;
    // One sorted dictionary per text column, and each chunk's map into it.
    let mut dictionaries: Vec<Dictionary> = (0..ncols).map(|_| Dictionary::default()).collect();
    let mut remaps: Vec<Vec<Vec<u32>>> = vec![Vec::new(); ncols];
    for c in 0..ncols {
        if kinds[c] == Kind::Text {
            (dictionaries[c], remaps[c]) = merge_dictionaries(&outs, c);
        }
    }
    let segments: Vec<Segment> = outs
        .into_par_iter()
        .enumerate()
        .filter(|(_, out)| out.rows > 0)
        .flat_map_iter(|(i, out)| {
            let rows = out.rows;
            let mut columns: Vec<std::vec::IntoIter<SegmentColumn>> = out
                .columns
                .into_iter()
                .enumerate()
                .map(|(c, col)| {
                    let max_code = dictionaries[c].len().saturating_sub(1) as u64;
                    finish_column(col, kinds[c], rows, remaps[c].get(i), max_code).into_iter()
                })
                .collect();
            segment_lens(rows).into_iter().map(move |len| Segment {
                len,
                // Every column was cut into the same lengths.
                columns: columns.iter_mut().filter_map(Iterator::next).collect(),
            })
        })
        .collect();
    let n_rows = segments.iter().map(|s| s.len as u64).sum();
    let types = kinds
        .iter()
        .map(|k| match k {
            Kind::Integer => ColumnType::Integer,
            Kind::Float => ColumnType::Float,
            Kind::Boolean => ColumnType::Boolean,
            Kind::Missing | Kind::Text => ColumnType::Text,
        })
        .collect();
    Ok(Table {
        names,
        types,
        dictionaries,
        segments,
        n_rows,
    })
}

/// Merges the chunks' interned values of text column `c` into one sorted dictionary, and
/// gives each chunk the map from its codes to the dictionary's.
///
/// All values are sorted together once (by an 8-byte prefix held inline, then by their
/// bytes), and codes are handed out in one pass over the sorted list: no per-value search,
/// whose cache misses dominate for columns of millions of distinct values.
fn merge_dictionaries(outs: &[ChunkOut], c: usize) -> (Dictionary, Vec<Vec<u32>>) {
    let interners: Vec<Option<&Interner>> = outs
        .iter()
        .map(|out| match &out.columns[c].values {
            Values::Text(_, dict) => Some(dict),
            _ => None,
        })
        .collect();
    let value = |chunk: u32, code: u32| -> &[u8] {
        interners[chunk as usize].map_or(&[][..], |d| d.get(code as usize))
    };
    // Big-endian and zero-padded: prefix order agrees with byte order, ties aside.
    let prefix = |b: &[u8]| {
        let mut w = [0u8; 8];
        let n = b.len().min(8);
        w[..n].copy_from_slice(&b[..n]);
        u64::from_be_bytes(w)
    };
    let mut entries: Vec<(u64, u32, u32)> = Vec::new();
    for (chunk, d) in interners.iter().enumerate() {
        if let Some(d) = d {
            entries
                .extend((0..d.len()).map(|code| (prefix(d.get(code)), chunk as u32, code as u32)));
        }
    }
    entries.par_sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| value(a.1, a.2).cmp(value(b.1, b.2)))
    });
    let mut remaps: Vec<Vec<u32>> = interners
        .iter()
        .map(|d| vec![0; d.map_or(0, |d| d.len())])
        .collect();
    let mut bytes: Vec<u8> = Vec::new();
    let mut ends: Vec<usize> = Vec::new();
    let mut previous: Option<(u64, &[u8])> = None;
    for &(key, chunk, code) in &entries {
        let v = value(chunk, code);
        // Equal prefixes first: most neighbours differ there, without touching the bytes.
        if previous.is_none_or(|(k, p)| k != key || p != v) {
            bytes.extend_from_slice(v);
            ends.push(bytes.len());
            previous = Some((key, v));
        }
        remaps[chunk as usize][code as usize] = (ends.len() - 1) as u32;
    }
    // Every interned value was checked to be UTF-8, so the concatenation is too.
    let dictionary =
        Dictionary::from_parts(bytes, ends).expect("the interner admits only UTF-8 values");
    (dictionary, remaps)
}

/// Converts one chunk's column to the file's type for it, cut into segments of
/// [`SEGMENT_ROWS`]; `max_code` is the largest code of a text column's dictionary.
fn finish_column(
    col: ColumnBuilder,
    kind: Kind,
    rows: usize,
    remap: Option<&Vec<u32>>,
    max_code: u64,
) -> Vec<SegmentColumn> {
    let lens = segment_lens(rows);
    let words = SEGMENT_ROWS / 64;
    let valid: Vec<Option<Vec<u64>>> = if let Some(bits) = col.valid.finish() {
        bits.chunks(words)
            .zip(&lens)
            .map(|(w, &n)| {
                let ones: usize = w.iter().map(|x| x.count_ones() as usize).sum();
                (ones < n).then(|| w.to_vec())
            })
            .collect()
    } else {
        vec![None; lens.len()]
    };
    let cut_f64 = |v: &[f64]| -> Vec<ColumnData> {
        v.chunks(SEGMENT_ROWS)
            .map(|c| ColumnData::Float(c.to_vec()))
            .collect()
    };
    let data: Vec<ColumnData> = match (kind, col.values) {
        (Kind::Integer, Values::Integer(v)) => col
            .settled
            .into_iter()
            .chain(v.finish_cut(SEGMENT_ROWS))
            .map(ColumnData::Integer)
            .collect(),
        (Kind::Float, Values::Float(v)) => cut_f64(&v),
        (Kind::Float, Values::Integer(v)) => cut_f64(&ColumnBuilder::floats_of(col.settled, v)),
        (Kind::Boolean, Values::Boolean(b)) => b
            .finish()
            .chunks(words)
            .map(|w| ColumnData::Boolean(w.to_vec()))
            .collect(),
        (Kind::Text | Kind::Missing, Values::Text(codes, _)) => {
            let remap = remap.filter(|m| !m.is_empty()).map(Vec::as_slice);
            let rest = codes.finish(remap, max_code).cut(SEGMENT_ROWS);
            col.settled_codes
                .into_iter()
                .map(|c| remap_codes(c, remap, max_code))
                .chain(rest)
                .map(ColumnData::Text)
                .collect()
        }
        // Only missing cells in this chunk (any other pairing was converted before).
        (Kind::Integer, _) => lens
            .iter()
            .map(|&n| ColumnData::Integer(Ints::zeros(n)))
            .collect(),
        (Kind::Float, _) => lens
            .iter()
            .map(|&n| ColumnData::Float(vec![0.0; n]))
            .collect(),
        (Kind::Boolean, _) => lens
            .iter()
            .map(|&n| ColumnData::Boolean(vec![0; n.div_ceil(64)]))
            .collect(),
        (Kind::Text | Kind::Missing, _) => lens
            .iter()
            .map(|&n| ColumnData::Text(Lanes::zeros(n)))
            .collect(),
    };
    data.into_iter()
        .zip(valid)
        .map(|(data, valid)| SegmentColumn { data, valid })
        .collect()
}

/// The lengths of the segments `rows` rows are cut into.
fn segment_lens(rows: usize) -> Vec<usize> {
    (0..rows)
        .step_by(SEGMENT_ROWS)
        .map(|start| SEGMENT_ROWS.min(rows - start))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse_f64;
    use super::super::table::Cell;
    use super::*;
    use proptest::prelude::*;

    fn load(bytes: &[u8], chunks: usize) -> Result<Table, DataError> {
        parse_table(bytes, "mem.csv", &LoadOptions::default(), chunks)
    }

    /// A schema and every cell.
    type Loaded = (Vec<(String, ColumnType)>, Vec<Vec<Option<Cell>>>);

    /// A loaded table, or its error, in a form that can be compared.
    fn outcome(bytes: &[u8], chunks: usize) -> Result<Loaded, DataError> {
        load(bytes, chunks).map(|t| (t.schema(), t.cells()))
    }

    /// How a generated column's cells look.
    #[derive(Debug, Clone, Copy)]
    enum Flavor {
        Int,
        Float,
        Bool,
        Word,
        Anything,
    }

    fn cell_text(flavor: Flavor) -> BoxedStrategy<String> {
        let missing = prop_oneof![
            Just(String::new()),
            Just("NA".to_string()),
            Just("  ".to_string())
        ];
        let value: BoxedStrategy<String> = match flavor {
            Flavor::Int => (-1000i64..1000).prop_map(|i| i.to_string()).boxed(),
            Flavor::Float => prop_oneof![
                (-1000i64..1000).prop_map(|i| i.to_string()),
                (-1e6f64..1e6).prop_map(|f| format!("{f:.3}")),
                Just("1e3".to_string()),
            ]
            .boxed(),
            Flavor::Bool => prop_oneof![
                Just("true".to_string()),
                Just("FALSE".to_string()),
                Just(" True ".to_string())
            ]
            .boxed(),
            Flavor::Word => "[a-c]{1,3}".boxed(),
            Flavor::Anything => "[a1 ,\"\r\n.é-]{0,6}".boxed(),
        };
        prop_oneof![1 => missing, 6 => value].boxed()
    }

    /// A table as cells with a quoting choice, then serialised with random line endings.
    fn csv_table() -> impl Strategy<Value = (Vec<Vec<(String, bool)>>, String)> {
        csv_table_by(',')
    }

    /// [`csv_table`] with `delimiter` between fields.
    fn csv_table_by(delimiter: char) -> impl Strategy<Value = (Vec<Vec<(String, bool)>>, String)> {
        let flavor = prop_oneof![
            Just(Flavor::Int),
            Just(Flavor::Float),
            Just(Flavor::Bool),
            Just(Flavor::Word),
            Just(Flavor::Anything)
        ];
        (proptest::collection::vec(flavor, 1..4), 0usize..30)
            .prop_flat_map(|(flavors, rows)| {
                let row = flavors
                    .iter()
                    .map(|&f| (cell_text(f), any::<bool>()))
                    .collect::<Vec<_>>();
                let ends = proptest::collection::vec(
                    prop_oneof![Just("\n"), Just("\r\n"), Just("\r"), Just("\n\n")],
                    rows + 1,
                );
                (proptest::collection::vec(row, rows), ends, any::<bool>())
            })
            .prop_map(move |(rows, ends, final_end)| {
                let ncols = rows.first().map_or(1, |r: &Vec<(String, bool)>| r.len());
                let mut text = (0..ncols)
                    .map(|c| format!("c{c}"))
                    .collect::<Vec<_>>()
                    .join(&delimiter.to_string());
                text.push_str(ends[0]);
                let mut cells = Vec::new();
                for (i, row) in rows.iter().enumerate() {
                    let mut fields = Vec::new();
                    let mut out = Vec::new();
                    for (content, quote) in row {
                        let must = content.contains([delimiter, '"', '\r', '\n'])
                            || (ncols == 1 && content.is_empty());
                        let quoted = *quote || must;
                        fields.push(if quoted {
                            format!("\"{}\"", content.replace('"', "\"\""))
                        } else {
                            content.clone()
                        });
                        out.push((content.clone(), quoted));
                    }
                    text.push_str(&fields.join(&delimiter.to_string()));
                    if i + 1 < rows.len() || final_end {
                        text.push_str(ends[i + 1]);
                    }
                    cells.push(out);
                }
                (cells, text)
            })
    }

    /// The table the rules of `load_csv` give for these cells.
    fn expected(
        rows: &[Vec<(String, bool)>],
        ncols: usize,
    ) -> (Vec<ColumnType>, Vec<Vec<Option<Cell>>>) {
        let mut types = Vec::new();
        for c in 0..ncols {
            let values: Vec<&str> = rows
                .iter()
                .map(|r| r[c].0.trim_ascii())
                .filter(|t| !t.is_empty() && *t != "NA")
                .collect();
            let ty = if values.is_empty() {
                ColumnType::Text
            } else if values.iter().all(|t| t.parse::<i64>().is_ok()) {
                ColumnType::Integer
            } else if values
                .iter()
                .all(|t| t.parse::<f64>().is_ok_and(f64::is_finite))
            {
                ColumnType::Float
            } else if values
                .iter()
                .all(|t| t.eq_ignore_ascii_case("true") || t.eq_ignore_ascii_case("false"))
            {
                ColumnType::Boolean
            } else {
                ColumnType::Text
            };
            types.push(ty);
        }
        let cells = rows
            .iter()
            .map(|r| {
                r.iter()
                    .zip(&types)
                    .map(|((content, quoted), ty)| {
                        let t = content.trim_ascii();
                        if t.is_empty() || t == "NA" {
                            return None;
                        }
                        Some(match ty {
                            ColumnType::Integer => Cell::Integer(t.parse().ok()?),
                            ColumnType::Float => Cell::Float(t.parse().ok()?),
                            ColumnType::Boolean => Cell::Boolean(t.eq_ignore_ascii_case("true")),
                            ColumnType::Text => Cell::Text(if *quoted {
                                content.clone()
                            } else {
                                t.to_string()
                            }),
                        })
                    })
                    .collect()
            })
            .collect();
        (types, cells)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn loads_what_was_written((rows, text) in csv_table(), chunks in 1usize..9) {
            let ncols = rows.first().map_or(0, Vec::len);
            let table = load(text.as_bytes(), chunks).expect("generated CSV is valid");
            if ncols > 0 {
                let (types, cells) = expected(&rows, ncols);
                let got: Vec<ColumnType> = table.schema().into_iter().map(|(_, t)| t).collect();
                prop_assert_eq!(got, types);
                prop_assert_eq!(table.cells(), cells);
            } else {
                prop_assert_eq!(table.n_rows(), 0);
            }
        }

        /// Another delimiter reads the same cells, written with it, as `,` reads them.
        #[test]
        fn another_delimiter_loads_what_was_written(
            (delimiter, (rows, text)) in prop_oneof![Just(';'), Just('\t'), Just('|')]
                .prop_flat_map(|d| (Just(d), csv_table_by(d))),
            chunks in 1usize..9,
        ) {
            let ncols = rows.first().map_or(0, Vec::len);
            let format = CsvFormat { delimiter: delimiter as u8, decimal_comma: false };
            let opts = LoadOptions { format, ..LoadOptions::default() };
            let table = parse_table(text.as_bytes(), "mem.csv", &opts, chunks).expect("generated CSV is valid");
            if ncols > 0 {
                let (types, cells) = expected(&rows, ncols);
                let got: Vec<ColumnType> = table.schema().into_iter().map(|(_, t)| t).collect();
                prop_assert_eq!(got, types);
                prop_assert_eq!(table.cells(), cells);
            }
        }

        /// With a decimal comma too, the outcome does not depend on where the body is cut.
        #[test]
        fn chunking_never_changes_a_decimal_comma_outcome(
            bytes in proptest::collection::vec(
                prop_oneof![
                    Just(b'a'), Just(b'1'), Just(b','), Just(b';'), Just(b'"'), Just(b'\n'),
                    Just(b'2'), Just(b' '), Just(b'.'), Just(b'-')
                ],
                0..200,
            ),
            chunks in 2usize..9,
        ) {
            let opts = LoadOptions {
                format: CsvFormat { delimiter: b';', decimal_comma: true },
                ..LoadOptions::default()
            };
            let outcome = |chunks| {
                parse_table(&bytes[..], "mem.csv", &opts, chunks).map(|t| (t.schema(), t.cells()))
            };
            prop_assert_eq!(outcome(chunks), outcome(1));
        }

        #[test]
        fn chunking_never_changes_the_outcome(
            bytes in proptest::collection::vec(
                prop_oneof![
                    Just(b'a'), Just(b'1'), Just(b','), Just(b'"'), Just(b'\n'),
                    Just(b'\r'), Just(b' '), Just(b'.'), Just(0xff)
                ],
                0..200,
            ),
            chunks in 2usize..9,
        ) {
            prop_assert_eq!(outcome(&bytes, chunks), outcome(&bytes, 1));
        }

        /// With a declared schema too: the table is the same however the body is cut, its
        /// schema is the declared one whatever the cells, and a declared column's cell holds
        /// a value exactly when it parses as the declared type.
        #[test]
        fn declared_schemas_do_not_depend_on_chunks_or_cells(
            (rows, text) in csv_table(),
            chunks in 1usize..9,
            types in proptest::collection::vec(0usize..4, 1..4),
        ) {
            let ncols = rows.first().map_or(0, Vec::len);
            prop_assume!(ncols > 0);
            let all = [ColumnType::Integer, ColumnType::Float, ColumnType::Boolean, ColumnType::Text];
            // Declare the columns backwards, one type each, leaving out any beyond `types`.
            let declared: Vec<Declared> = (0..ncols)
                .rev()
                .zip(&types)
                .map(|(c, t)| Declared::new(format!("c{c}"), all[*t]))
                .collect();
            let opts = LoadOptions { columns: Some(declared.clone()), ..LoadOptions::default() };
            let one = parse_table(text.as_bytes(), "mem.csv", &opts, 1).expect("valid CSV");
            let many = parse_table(text.as_bytes(), "mem.csv", &opts, chunks).expect("valid CSV");
            let schema: Vec<(String, ColumnType)> =
                declared.iter().map(|d| (d.name.clone(), d.ty)).collect();
            prop_assert_eq!(one.schema(), schema.clone());
            prop_assert_eq!(many.schema(), schema);
            prop_assert_eq!(one.cells(), many.cells());
            for (i, d) in declared.iter().enumerate() {
                let c: usize = d.name[1..].parse().expect("c<k>");
                for (r, row) in rows.iter().enumerate() {
                    let t = row[c].0.trim_ascii();
                    let parses = match d.ty {
                        ColumnType::Integer => parse_i64(t.as_bytes()).is_some(),
                        ColumnType::Float => parse_f64(t.as_bytes()).is_some(),
                        ColumnType::Boolean => parse_bool(t.as_bytes()).is_some(),
                        // As inference reads text: missing when empty or NA after trimming.
                        ColumnType::Text => !is_missing(t.as_bytes()),
                    };
                    prop_assert_eq!(one.cells()[r][i].is_some(), parses, "row {} column {}", r, d.name);
                }
            }
        }
    }

    fn load_as(text: &str, delimiter: u8, decimal_comma: bool) -> Result<Loaded, DataError> {
        let opts = LoadOptions {
            format: CsvFormat {
                delimiter,
                decimal_comma,
            },
            ..LoadOptions::default()
        };
        parse_table(text.as_bytes(), "mem.csv", &opts, 3).map(|t| (t.schema(), t.cells()))
    }

    #[test]
    fn a_decimal_comma_types_and_reads_numbers_as_european_spreadsheets_write_them() {
        let text = "a;b;c;d\n3,5;1.234;x;1.5\n-1.234,5;2;y;2\n;NA;;\n";
        let (schema, cells) = load_as(text, b';', true).expect("valid");
        let types: Vec<ColumnType> = schema.iter().map(|(_, t)| *t).collect();
        assert_eq!(
            types,
            [
                ColumnType::Float,
                ColumnType::Integer,
                ColumnType::Text,
                // `1.5` is no number with a decimal comma: neither 1.5 nor 15.
                ColumnType::Text
            ]
        );
        assert_eq!(cells[0][0], Some(Cell::Float(3.5)));
        assert_eq!(cells[1][0], Some(Cell::Float(-1234.5)));
        assert_eq!(cells[0][1], Some(Cell::Integer(1234)));
        assert_eq!(cells[2], vec![None, None, None, None]);
        // Without DECIMAL ',' the same text has other values: another table.
        let (schema, cells) = load_as(text, b';', false).expect("valid");
        assert_eq!(schema[0].1, ColumnType::Text);
        assert_eq!(schema[1].1, ColumnType::Float);
        assert_eq!(cells[0][1], Some(Cell::Float(1.234)));
        // A declared float column reads the same rule.
        let opts = LoadOptions {
            format: CsvFormat {
                delimiter: b'\t',
                decimal_comma: true,
            },
            columns: Some(vec![Declared::new("w", ColumnType::Float)]),
            ..LoadOptions::default()
        };
        let t =
            parse_table(&b"w\tv\n1.000,25\tx\n1.5\ty\n"[..], "mem.csv", &opts, 1).expect("valid");
        assert_eq!(
            t.cells(),
            vec![vec![Some(Cell::Float(1000.25))], vec![None]]
        );
    }

    #[test]
    fn formats_that_cannot_be_read_are_refused_before_reading() {
        for (delimiter, decimal_comma) in [(b',', true), (b'"', false), (b'\n', false)] {
            assert!(matches!(
                load_as("a\n1\n", delimiter, decimal_comma),
                Err(DataError::Format { .. })
            ));
        }
    }

    #[test]
    fn a_semicolon_file_read_with_commas_is_one_column() {
        let text = "name;age;city\nAna;31;Roma\n";
        let (schema, _) = load_as(text, b',', false).expect("valid");
        assert_eq!(schema, [("name;age;city".to_string(), ColumnType::Text)]);
        // With a decimal comma in a row, it is ragged: the error names the header's hint.
        assert_eq!(
            load_as("name;height\nAna;1,72\n", b',', false).err(),
            Some(DataError::OneFieldHeader {
                line: 2,
                hint: "`name;height`: if `;` separates its fields, LOAD it with DELIMITER ';'"
                    .into()
            })
        );
        // A header of one field with nothing to suggest, or none at all: as any ragged row.
        for (text, header) in [("name\n1,2\n", true), ("a;b\n1,2\n", false)] {
            let opts = LoadOptions {
                header,
                ..LoadOptions::default()
            };
            assert!(matches!(
                parse_table(text.as_bytes(), "mem.csv", &opts, 1),
                Err(DataError::RaggedRow { .. })
            ));
        }
        let (schema, cells) = load_as(text, b';', false).expect("valid");
        assert_eq!(schema.len(), 3);
        assert_eq!(cells[0][1], Some(Cell::Integer(31)));
    }

    #[test]
    fn a_cut_inside_a_quoted_field_is_repaired() {
        let mut text = String::from("id,note\n");
        for i in 0..200 {
            text.push_str(&format!("{i},\"line one\nline two\n\nline four, {i}\"\n"));
        }
        let whole = outcome(text.as_bytes(), 1).expect("valid");
        assert_eq!(whole.1.len(), 200);
        for chunks in 2..40 {
            assert_eq!(outcome(text.as_bytes(), chunks).as_ref(), Ok(&whole));
        }
    }

    #[test]
    fn a_column_that_turns_to_text_late_keeps_its_earlier_cells() {
        let mut text = String::from("a,b\n");
        for i in 0..5000 {
            text.push_str(&format!("{i},{}\n", i % 7));
        }
        text.push_str("x,2.5\n");
        let (schema, cells) = outcome(text.as_bytes(), 1).expect("valid");
        assert_eq!(schema[0].1, ColumnType::Text);
        assert_eq!(schema[1].1, ColumnType::Float);
        assert_eq!(cells[4999][0], Some(Cell::Text("4999".to_string())));
        assert_eq!(cells[5000][0], Some(Cell::Text("x".to_string())));
        assert_eq!(cells[12][1], Some(Cell::Float(5.0)));
        for chunks in [2, 3, 8] {
            assert_eq!(
                outcome(text.as_bytes(), chunks),
                Ok((schema.clone(), cells.clone()))
            );
        }
    }

    #[test]
    fn errors_are_the_same_for_any_chunking() {
        let mut text = String::from("a,b\n");
        for i in 0..3000 {
            text.push_str(&format!("{i},v{i}\n"));
        }
        let mut bad = text.clone().into_bytes();
        bad.extend_from_slice(b"1,\xff\n");
        let ragged = format!("{text}1,2,3\n");
        for chunks in [1, 2, 5] {
            assert_eq!(
                load(&bad, chunks).err(),
                Some(DataError::InvalidUtf8 {
                    line: 3002,
                    column: "b".to_string()
                })
            );
            assert_eq!(
                load(ragged.as_bytes(), chunks).err(),
                Some(DataError::RaggedRow {
                    line: 3002,
                    expected: 2,
                })
            );
        }
    }

    /// Row `i` of a file whose columns change type, start to have values, take wider codes
    /// or miss cells only after a chunk's first segments are settled, and its cells as they
    /// must load.
    fn long_row(i: usize) -> (String, Vec<Option<Cell>>) {
        let int = |x: i64| Some(Cell::Integer(x));
        let id = 1_000_000_000_000 + i as i64;
        let late_float = if i == 100_000 { 2.5 } else { (i % 1000) as f64 };
        let late_text = if i == 140_000 {
            "x".to_string()
        } else {
            i.to_string()
        };
        let late_int = (i >= 70_000).then_some((i % 300) as i64);
        let sparse = (!i.is_multiple_of(9973) && !(65_536..65_600).contains(&i))
            .then_some((i % 50) as i64 - 25);
        let word = format!("w{}", if i < 66_000 { i % 3 } else { i % 700 });
        let flag = (i != 131_072).then_some(i.is_multiple_of(3));
        let text = format!(
            "{id},{},{late_text},{},{},{word},{}\n",
            if i == 100_000 {
                "2.5".to_string()
            } else {
                (i % 1000).to_string()
            },
            late_int.map_or(String::new(), |x| x.to_string()),
            sparse.map_or("NA".to_string(), |x| x.to_string()),
            flag.map_or(String::new(), |b| b.to_string()),
        );
        let cells = vec![
            int(id),
            Some(Cell::Float(late_float)),
            Some(Cell::Text(late_text)),
            late_int.and_then(int),
            sparse.and_then(int),
            Some(Cell::Text(word)),
            flag.map(Cell::Boolean),
        ];
        (text, cells)
    }

    #[test]
    fn chunks_of_many_segments_load_every_cell_as_written() {
        const N: usize = 150_000;
        let mut text = String::from("id,late_float,late_text,late_int,sparse,word,flag\n");
        let mut expected = Vec::with_capacity(N);
        for i in 0..N {
            let (line, cells) = long_row(i);
            text.push_str(&line);
            expected.push(cells);
        }
        for chunks in [1, 2, 3] {
            let table = load(text.as_bytes(), chunks).expect("valid");
            let types: Vec<ColumnType> = table.schema().into_iter().map(|(_, t)| t).collect();
            use ColumnType::*;
            assert_eq!(
                types,
                [Integer, Float, Text, Integer, Integer, Text, Boolean]
            );
            assert!(table.segments.iter().all(|s| s.len <= SEGMENT_ROWS));
            assert_eq!(table.segments.iter().map(|s| s.len).sum::<usize>(), N);
            // Consecutive keys from a base of 10^12 take two bytes a row in every segment.
            assert!(
                table.lane_bits(0).iter().all(|&b| b <= 16),
                "{:?}",
                table.lane_bits(0)
            );
            let cells = table.cells();
            for (i, (got, want)) in cells.iter().zip(&expected).enumerate() {
                assert_eq!(got, want, "row {i}, {chunks} chunks");
            }
            assert_eq!(cells.len(), N);
        }
    }

    #[test]
    fn errors_after_settled_segments_are_the_same_for_any_chunking() {
        let mut text = String::from("id,late_float,late_text,late_int,sparse,word,flag\n");
        for i in 0..120_000 {
            text.push_str(&long_row(i).0);
        }
        let mut bad = text.clone().into_bytes();
        bad.extend_from_slice(b"1,2,3,4,5,\xff,true\n");
        let ragged = format!("{text}1,2\n");
        for chunks in [1, 2, 3] {
            assert_eq!(
                load(&bad, chunks).err(),
                Some(DataError::InvalidUtf8 {
                    line: 120_002,
                    column: "word".to_string()
                })
            );
            assert_eq!(
                load(ragged.as_bytes(), chunks).err(),
                Some(DataError::RaggedRow {
                    line: 120_002,
                    expected: 7,
                })
            );
        }
    }

    #[test]
    fn integers_with_whitespace_around_them_read_as_the_integers() {
        let text = "a,b\n 1,x\n2 ,y\n\t3\t,z\n\"4\",w\n\" 5 \",v\n-6,u\n";
        for chunks in [1, 2] {
            let (schema, cells) = outcome(text.as_bytes(), chunks).expect("valid");
            assert_eq!(schema[0].1, ColumnType::Integer);
            let got: Vec<Option<Cell>> = cells.iter().map(|row| row[0].clone()).collect();
            let want: Vec<Option<Cell>> =
                [1, 2, 3, 4, 5, -6].map(|x| Some(Cell::Integer(x))).into();
            assert_eq!(got, want);
        }
        let (schema, cells) = load_as("a;b\n 1;x\n2 ;y\n1.234;z\n", b';', true).expect("valid");
        assert_eq!(schema[0].1, ColumnType::Integer);
        assert_eq!(cells[2][0], Some(Cell::Integer(1234)));
        assert_eq!(cells[0][0], Some(Cell::Integer(1)));
    }
}

#[cfg(test)]
mod attack_tests {
    use super::super::schema::Declared;
    use super::super::table::Cell;
    use super::*;

    fn load(bytes: &[u8], chunks: usize) -> Result<Table, DataError> {
        parse_table(bytes, "mem.csv", &LoadOptions::default(), chunks)
    }

    #[test]
    fn a_segment_after_a_wide_one_that_starts_missing_is_stored_from_its_least_value() {
        // The first segment spans more than 32 bits; the second starts with a missing cell
        // and then holds four values near 4 * 10^18: one byte a row, from 4 * 10^18.
        let mut text = String::from("x\n");
        for i in 0..SEGMENT_ROWS {
            text.push_str(if i % 2 == 0 { "0\n" } else { "1000000000000\n" });
        }
        text.push_str("NA\n");
        let big = 4_000_000_000_000_000_000i64;
        for i in 0..1000 {
            text.push_str(&format!("{}\n", big + i % 4));
        }
        let table = load(text.as_bytes(), 1).expect("valid");
        let cells = table.cells();
        assert_eq!(cells[SEGMENT_ROWS], vec![None]);
        assert_eq!(cells[SEGMENT_ROWS + 1], vec![Some(Cell::Integer(big))]);
        assert_eq!(table.lane_bits(0)[1], 8, "{:?}", table.lane_bits(0));
        match &table.segments[1].columns[0].data {
            ColumnData::Integer(ints) => assert_eq!(ints.min, big),
            _ => panic!("not an integer column"),
        }
    }
    /// Checks what readers of a table's segments rely on: segments of 1 to [`SEGMENT_ROWS`]
    /// rows adding up to `n`, every column as long as its segment, a validity bitmap of whole
    /// words only where a cell is missing, integer lanes within `max_off` (missing cells too),
    /// and text codes inside the column's dictionary.
    fn check_storage(t: &Table) {
        let total: usize = t.segments.iter().map(|s| s.len).sum();
        assert_eq!(total as u64, t.n_rows);
        for (k, seg) in t.segments.iter().enumerate() {
            assert!(
                (1..=SEGMENT_ROWS).contains(&seg.len),
                "segment {k}: {}",
                seg.len
            );
            for (c, col) in seg.columns.iter().enumerate() {
                if let Some(v) = &col.valid {
                    assert_eq!(v.len(), seg.len.div_ceil(64), "segment {k} column {c}");
                }
                match &col.data {
                    ColumnData::Integer(ints) => {
                        assert_eq!(ints.lanes.len(), seg.len, "segment {k} column {c}");
                        assert!(ints.max_off <= ints.lanes.max());
                        for i in 0..seg.len {
                            assert!(
                                ints.lanes.get(i) <= ints.max_off,
                                "segment {k} column {c} row {i}"
                            );
                        }
                    }
                    ColumnData::Text(codes) => {
                        assert_eq!(codes.len(), seg.len, "segment {k} column {c}");
                        let n = t.dictionaries[c].len() as u64;
                        for i in 0..seg.len {
                            let code = codes.get(i);
                            assert!(
                                code < n.max(1),
                                "segment {k} column {c} row {i}: code {code} of {n}"
                            );
                        }
                    }
                    ColumnData::Float(v) => assert_eq!(v.len(), seg.len),
                    ColumnData::Boolean(w) => assert_eq!(w.len(), seg.len.div_ceil(64)),
                }
            }
        }
    }

    /// A random text value that trimming leaves alone (a letter at each end) with multi-byte
    /// characters, delimiters, quotes and line breaks of every kind between, and whether it
    /// must be quoted.
    fn random_value(next: &mut impl FnMut() -> u64, delimiter: char) -> String {
        let inner = [
            "a",
            "b",
            "\u{e9}",
            "\u{20ac}",
            "\u{1f600}",
            " ",
            "\"",
            "\"\"",
            "\n",
            "\r\n",
            "\r",
            "xyzw",
            "0",
        ];
        let ends = ["a", "\u{e9}", "\u{20ac}", "\u{1f600}", "Q"];
        let mut v = String::from(ends[(next() % ends.len() as u64) as usize]);
        for _ in 0..next() % 12 {
            let r = next();
            if r.is_multiple_of(5) {
                v.push(delimiter);
            } else {
                v.push_str(inner[(r / 5 % inner.len() as u64) as usize]);
            }
        }
        v.push_str(ends[(next() % ends.len() as u64) as usize]);
        v
    }

    /// A random file of text columns, with every cell as it must load (`None` when missing).
    fn random_text_file(
        next: &mut impl FnMut() -> u64,
        delimiter: char,
    ) -> (String, Vec<Vec<Option<String>>>) {
        let ncols = 1 + (next() % 4) as usize;
        let nrows = (next() % 40) as usize;
        let ends = ["\n", "\r\n", "\r"];
        let header: Vec<String> = (0..ncols).map(|c| format!("c{c}")).collect();
        let mut text = header.join(&delimiter.to_string());
        text.push_str(ends[(next() % 3) as usize]);
        let mut rows = Vec::new();
        for r in 0..nrows {
            let mut fields = Vec::new();
            let mut cells = Vec::new();
            for _ in 0..ncols {
                let kind = next() % 8;
                if kind == 0 && ncols > 1 {
                    // An empty cell (a lone empty field would be an empty line).
                    fields.push(String::new());
                    cells.push(None);
                } else if kind == 1 {
                    fields.push("\"\"".to_string());
                    cells.push(None);
                } else {
                    let v = random_value(next, delimiter);
                    let must = v.contains([delimiter, '"', '\r', '\n']);
                    if must || next().is_multiple_of(3) {
                        fields.push(format!("\"{}\"", v.replace('"', "\"\"")));
                    } else {
                        fields.push(v.clone());
                    }
                    cells.push(Some(v));
                }
            }
            text.push_str(&fields.join(&delimiter.to_string()));
            if r + 1 < nrows || next().is_multiple_of(2) {
                text.push_str(ends[(next() % 3) as usize]);
            }
            rows.push(cells);
        }
        (text, rows)
    }

    /// The records of `text` after its header as the `csv` crate reads them, an empty field
    /// read as missing.
    fn csv_crate_cells(text: &str, delimiter: u8) -> Vec<Vec<Option<String>>> {
        let mut r = csv::ReaderBuilder::new()
            .delimiter(delimiter)
            .has_headers(true)
            .from_reader(text.as_bytes());
        r.records()
            .map(|rec| {
                rec.expect("the csv crate reads it")
                    .iter()
                    .map(|f| (!f.is_empty()).then(|| f.to_string()))
                    .collect()
            })
            .collect()
    }

    /// The loaded cells of a table whose columns are all text.
    fn text_cells(t: &Table) -> Vec<Vec<Option<String>>> {
        t.cells()
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .map(|c| match c {
                        None => None,
                        Some(Cell::Text(s)) => Some(s),
                        Some(other) => panic!("not text: {other:?}"),
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn quoted_multibyte_and_crlf_fields_at_every_word_offset_load_as_the_csv_crate_reads_them() {
        // Quotes, `""`, delimiters, CR, LF and CRLF inside and between fields, characters of
        // two to four bytes, empty last fields and a last record with or without a line end,
        // every record shifted by 0 to 8 bytes so that each falls at every place in a word.
        let mut next = super::super::rng::xorshift(0x51f1_5eed_c0ff_ee01);
        for case in 0..120 {
            for (delimiter, format) in [
                (',', CsvFormat::default()),
                (
                    ';',
                    CsvFormat {
                        delimiter: b';',
                        decimal_comma: false,
                    },
                ),
            ] {
                let (text, want) = random_text_file(&mut next, delimiter);
                for shift in 0..=8 {
                    // The same records behind `shift` more bytes of empty lines.
                    let split = text.find(['\n', '\r']).expect("a header line end") + 1;
                    let text =
                        format!("{}{}{}", &text[..split], "\n".repeat(shift), &text[split..]);
                    assert_eq!(
                        csv_crate_cells(&text, delimiter as u8),
                        want,
                        "case {case}: the generator and the csv crate agree on {text:?}"
                    );
                    for chunks in [1, 2, 3, 7] {
                        let opts = LoadOptions {
                            format,
                            ..LoadOptions::default()
                        };
                        let t = parse_table(text.as_bytes(), "mem.csv", &opts, chunks)
                            .unwrap_or_else(|e| {
                                panic!("case {case}, {chunks} chunks: {e} in {text:?}")
                            });
                        check_storage(&t);
                        assert_eq!(
                            text_cells(&t),
                            want,
                            "case {case}, shift {shift}, {chunks} chunks: {text:?}"
                        );
                    }
                }
            }
        }
    }
    /// The data rows (0-based) where `parse_body` starts chunks 2, 3, ... of a body of `rows`
    /// records of `width` bytes each: a cut goes after the line feed at or after each
    /// `body / chunks * k`.
    fn cut_rows(rows: usize, width: usize, chunks: usize) -> Vec<usize> {
        let body = rows * width;
        (1..chunks)
            .map(|k| (body / chunks * k) / width + 1)
            .filter(|&r| r < rows)
            .collect()
    }

    /// The first data row of each chunk `parse_body` makes of `text`, to check
    /// [`cut_rows`] against.
    fn chunk_first_rows(text: &[u8], chunks: usize) -> Vec<usize> {
        let (names, body) =
            parse_header(text, &Comma, 0, "mem.csv", &LoadOptions::default()).expect("a header");
        let outs = parse_body(text, &Comma, body, names.len(), 4096, chunks, None)
            .unwrap_or_else(|_| panic!("a valid body"));
        let mut first = 0;
        let mut starts = Vec::new();
        for out in &outs {
            starts.push(first);
            first += out.rows;
        }
        starts
    }

    #[test]
    fn records_longer_than_the_window_load_whole_wherever_they_fall() {
        // Records of about 800 KB, more than the reader's 512 KiB window: the first and the
        // last of the file (with no line end after it), inside a batch of 512 with short
        // records around them, at a batch's edges, and wherever the chunks' cuts fall; quoted
        // with line breaks, delimiters and quotes inside, or plain.
        const N: usize = 2000;
        let long_at = [0usize, 300, 511, 512, 513, 1024, 1500, N - 1];
        let mut text = String::from("id,note,n\n");
        let mut want: Vec<Vec<Option<Cell>>> = Vec::new();
        for i in 0..N {
            let (written, value) = if long_at.contains(&i) {
                if i % 2 == 0 {
                    let v = format!("q{i}\n{}", "a,b\r\n\"\u{e9}".repeat(100_000));
                    (format!("\"{}\"", v.replace('"', "\"\"")), v)
                } else {
                    let v = format!("L{i}-{}", "x\u{e9}yz".repeat(160_000));
                    (v.clone(), v)
                }
            } else {
                (format!("s{i}"), format!("s{i}"))
            };
            let n = (i % 13 != 0).then_some((i % 100) as i64);
            text.push_str(&format!(
                "{i},{written},{}",
                n.map_or(String::new(), |x| x.to_string())
            ));
            if i + 1 < N {
                text.push_str(if i % 3 == 0 { "\r\n" } else { "\n" });
            }
            want.push(vec![
                Some(Cell::Integer(i as i64)),
                Some(Cell::Text(value)),
                n.map(Cell::Integer),
            ]);
        }
        for chunks in [1, 2, 3, 7] {
            let t = load(text.as_bytes(), chunks).expect("valid");
            check_storage(&t);
            assert_eq!(t.n_rows, N as u64, "{chunks} chunks");
            for (i, row) in want.iter().enumerate() {
                for (c, cell) in row.iter().enumerate() {
                    assert!(t.cell(i, c) == *cell, "row {i} column {c}, {chunks} chunks");
                }
            }
        }
    }

    /// How a column of [`type_change_file`] changes at row `at`: its written cell at row
    /// `i`, and what it must load as.
    fn changing_cell(kind: usize, at: usize, i: usize) -> (String, Option<Cell>) {
        let int = |x: i64| (x.to_string(), Some(Cell::Integer(x)));
        let missing = || {
            (
                if i.is_multiple_of(2) { "" } else { "NA" }.to_string(),
                None,
            )
        };
        let flag = |i: usize| {
            let b = i.is_multiple_of(2);
            (if b { "true" } else { "False" }.to_string(), b)
        };
        match kind {
            // integer, then a float at `at`: every cell a float
            0 if i == at => ("2.5".to_string(), Some(Cell::Float(2.5))),
            0 => {
                let x = (i % 1000) as i64;
                (x.to_string(), Some(Cell::Float(x as f64)))
            }
            // integer, then a word at `at`: every cell text as written
            1 if i == at => ("x".to_string(), Some(Cell::Text("x".to_string()))),
            1 => {
                let x = (i % 1000).to_string();
                (x.clone(), Some(Cell::Text(x)))
            }
            // missing until `at`, integers from it
            2 if i < at => missing(),
            2 => int((i % 300) as i64 - 150),
            // small integers, the least i64 at `at`, small again
            3 if i == at => int(i64::MIN),
            3 => int((i % 7) as i64),
            // values near 10^12, the greatest i64 at `at`, a missing cell every 1001 rows
            4 if i == at => int(i64::MAX),
            4 if i.is_multiple_of(1001) => missing(),
            4 => int(1_000_000_000_000 + (i % 5) as i64),
            // missing until `at`, booleans from it
            5 if i < at => missing(),
            5 => {
                let (w, b) = flag(i);
                (w, Some(Cell::Boolean(b)))
            }
            // booleans, then a word at `at`: every cell text as written
            6 if i == at => ("maybe".to_string(), Some(Cell::Text("maybe".to_string()))),
            6 => {
                let (w, _) = flag(i);
                (w.clone(), Some(Cell::Text(w)))
            }
            // integers with a first missing cell at `at`
            7 if i == at => (String::new(), None),
            7 => int((i % 100) as i64),
            // missing until `at`, words from it
            8 if i < at => missing(),
            8 => {
                let w = format!("w{}", i % 3);
                (w.clone(), Some(Cell::Text(w)))
            }
            // missing until `at`, a float there and integers after: every value a float
            9 if i < at => missing(),
            9 if i == at => ("0.5".to_string(), Some(Cell::Float(0.5))),
            _ => {
                let x = (i % 50) as i64;
                (x.to_string(), Some(Cell::Float(x as f64)))
            }
        }
    }

    /// The kinds of [`changing_cell`] and the types their columns load as.
    const CHANGING: [ColumnType; 10] = [
        ColumnType::Float,
        ColumnType::Text,
        ColumnType::Integer,
        ColumnType::Integer,
        ColumnType::Integer,
        ColumnType::Boolean,
        ColumnType::Text,
        ColumnType::Integer,
        ColumnType::Text,
        ColumnType::Float,
    ];

    /// Bytes of every data row of [`type_change_file`], padding included.
    const CHANGE_WIDTH: usize = 80;

    /// A file of `rows` rows of [`CHANGE_WIDTH`] bytes whose columns change as
    /// [`changing_cell`] says at row `at`, and its cells.
    fn type_change_file(rows: usize, at: usize) -> (String, Vec<Vec<Option<Cell>>>) {
        let mut text: String = (0..CHANGING.len()).map(|k| format!("k{k},")).collect();
        text.push_str("pad\n");
        let mut cells = Vec::with_capacity(rows);
        for i in 0..rows {
            let (written, row): (Vec<String>, Vec<Option<Cell>>) =
                (0..CHANGING.len()).map(|k| changing_cell(k, at, i)).unzip();
            let line = written.join(",");
            let pad = CHANGE_WIDTH - line.len() - 2;
            text.push_str(&line);
            text.push(',');
            text.push_str(&"z".repeat(pad));
            text.push('\n');
            cells.push(row);
        }
        (text, cells)
    }

    #[test]
    fn types_that_change_at_segment_batch_and_chunk_edges_load_every_cell_as_written() {
        // Integer to float, integer to text, missing to integer, boolean or text, widths
        // that jump to 64 bits and back, a first missing cell: each at the last and first
        // rows of a batch, of a segment (rows 65,535 to 65,537 and 131,071 to 131,073, 0-based)
        // and of a chunk, and at a segment's edges counted from a chunk's first row.
        const N: usize = 140_000;
        let (probe, _) = type_change_file(N, 0);
        let (two, three) = (cut_rows(N, CHANGE_WIDTH, 2), cut_rows(N, CHANGE_WIDTH, 3));
        assert_eq!(chunk_first_rows(probe.as_bytes(), 2)[1..], two[..]);
        assert_eq!(chunk_first_rows(probe.as_bytes(), 3)[1..], three[..]);
        let mut ats = vec![
            0,
            511,
            512,
            65_535,
            65_536,
            65_537,
            131_071,
            131_072,
            131_073,
            two[0] - 1,
            two[0],
            two[0] + 65_535,
            two[0] + 65_536,
            two[0] + 65_537,
            three[0] + 65_536,
            three[1] - 1,
            three[1],
        ];
        ats.sort_unstable();
        ats.dedup();
        for at in ats {
            let (text, want) = type_change_file(N, at);
            for chunks in [1, 2, 3] {
                let t = load(text.as_bytes(), chunks).expect("valid");
                check_storage(&t);
                let types: Vec<ColumnType> = t.schema().into_iter().map(|(_, t)| t).collect();
                assert_eq!(
                    types[..CHANGING.len()],
                    CHANGING,
                    "at {at}, {chunks} chunks"
                );
                assert_eq!(t.n_rows, N as u64);
                for (i, row) in want.iter().enumerate() {
                    for (k, cell) in row.iter().enumerate() {
                        let got = t.cell(i, k);
                        assert!(
                            got == *cell,
                            "kind {k} changing at {at}, row {i}, {chunks} chunks: {got:?}, not {cell:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn text_columns_whose_codes_widen_across_segments_and_chunks_load_every_cell() {
        // More than 256 and more than 65,536 distinct values, sets that differ between the
        // halves of the file and between segments, values first seen in a late segment that
        // sort before every earlier one, and values alike in their first eight bytes or
        // told apart only by a trailing NUL: codes change width between segments, and the
        // chunks' dictionaries are merged and the settled codes mapped into the merge.
        const N: usize = 200_000;
        let alike = [
            "abcdefgh",
            "abcdefghi",
            "abcdefg",
            "abcdefg\u{0}",
            "ab",
            "ab\u{0}",
            "\u{e9}",
            "\u{e9}\u{e9}",
            "abcdefgh\u{0}",
        ];
        let value = |c: usize, i: usize| -> Option<String> {
            match c {
                0 if i < 65_536 => Some(format!("a{}", i % 3)),
                0 if i < 131_072 => Some(format!("a{}", i % 300)),
                0 => Some(format!("a{i}")),
                1 if i.is_multiple_of(7) => None,
                1 if i < 150_000 => Some(format!("m{}", i % 5)),
                1 => Some(format!("!{i}")),
                2 if i < 100_000 => Some(format!("x{}", i % 500)),
                2 => Some(format!(" y{} ", i % 400)),
                3 if i >= 131_072 && i.is_multiple_of(2) => Some(format!("abcdefgh{}", i % 50)),
                3 => Some(alike[i % alike.len()].to_string()),
                4 if i == 65_536 || i == N - 1 || i == 1 => Some(format!("e{i}")),
                4 => None,
                5 if i < 100_000 => Some(format!("f{}", i % 1000)),
                _ => Some("g".to_string()),
            }
        };
        const COLS: usize = 6;
        let mut text = String::from("a,b,c,d,e,f\n");
        let mut want = Vec::with_capacity(N);
        for i in 0..N {
            let row: Vec<Option<String>> = (0..COLS).map(|c| value(c, i)).collect();
            let fields: Vec<String> = row
                .iter()
                .map(|v| match v {
                    None if i % 2 == 0 => String::new(),
                    None => "NA".to_string(),
                    Some(v) if v.starts_with(' ') || i % 5 == 0 => format!("\"{v}\""),
                    Some(v) => v.clone(),
                })
                .collect();
            text.push_str(&fields.join(","));
            text.push('\n');
            want.push(row);
        }
        for chunks in [1, 2, 3, 7] {
            let t = load(text.as_bytes(), chunks).expect("valid");
            check_storage(&t);
            assert!(t.schema().iter().all(|(_, ty)| *ty == ColumnType::Text));
            for c in 0..COLS {
                let d = &t.dictionaries[c];
                let mut distinct: Vec<&str> = want.iter().filter_map(|r| r[c].as_deref()).collect();
                distinct.sort_unstable();
                distinct.dedup();
                let got: Vec<&str> = (0..d.len()).map(|k| d.get(k)).collect();
                assert!(got == distinct, "column {c}: dictionary, {chunks} chunks");
            }
            for (i, row) in want.iter().enumerate() {
                for (c, v) in row.iter().enumerate() {
                    let got = t.cell(i, c);
                    let v = v.clone().map(Cell::Text);
                    assert!(
                        got == v,
                        "row {i} column {c}, {chunks} chunks: {got:?}, not {v:?}"
                    );
                }
            }
        }
    }
    /// A byte of [`error_file`] replaced: its row, its place in the row, the new byte.
    type Edit = (usize, usize, u8);

    /// Bytes of every data row of [`error_file`].
    const ERROR_WIDTH: usize = 13;

    /// Rows `000000,t0,00` ... of [`ERROR_WIDTH`] bytes under the header `a,b,c`, with the
    /// edits: each replaces the byte at a row and a place in it, so that no row's length
    /// changes and the chunks' cuts stay where [`cut_rows`] says.
    fn error_file(rows: usize, edits: &[Edit]) -> Vec<u8> {
        let mut text = b"a,b,c\n".to_vec();
        let body = text.len();
        for i in 0..rows {
            text.extend_from_slice(format!("{:06},t{},{:02}\n", i, i % 10, i % 100).as_bytes());
        }
        for &(row, at, byte) in edits {
            text[body + row * ERROR_WIDTH + at] = byte;
        }
        text
    }

    #[test]
    fn the_first_error_in_the_file_is_reported_for_any_chunking_at_segment_and_chunk_edges() {
        // Places in a row: 0 the first byte of `a`, 7 of `b` (`t`), 10 of `c`, 6 and 9 the
        // commas.
        const N: usize = 140_000;
        let line = |row: usize| row as u64 + 2;
        let utf8 = |row: usize, column: &str| DataError::InvalidUtf8 {
            line: line(row),
            column: column.to_string(),
        };
        let ragged = |row: usize| DataError::RaggedRow {
            line: line(row),
            expected: 3,
        };
        let two = cut_rows(N, ERROR_WIDTH, 2);
        let three = cut_rows(N, ERROR_WIDTH, 3);
        let seven = cut_rows(N, ERROR_WIDTH, 7);
        let base = error_file(N, &[]);
        assert_eq!(chunk_first_rows(&base, 2)[1..], two[..]);
        assert_eq!(chunk_first_rows(&base, 3)[1..], three[..]);
        assert_eq!(chunk_first_rows(&base, 7)[1..], seven[..]);
        let mut rows = vec![
            511,
            65_535,
            65_536,
            131_072,
            two[0] - 1,
            two[0],
            two[0] + 65_536,
            three[1],
            seven[2],
        ];
        rows.sort_unstable();
        rows.dedup();
        for r in rows {
            // The edits, and the error they must give.
            let cases: Vec<(&str, Vec<Edit>, DataError)> = vec![
                (
                    "bad byte in a text column",
                    vec![(r, 7, 0xff)],
                    utf8(r, "b"),
                ),
                (
                    "bad byte in an integer column",
                    vec![(r, 10, 0xff)],
                    utf8(r, "c"),
                ),
                ("too few fields", vec![(r, 9, b'x')], ragged(r)),
                ("too many fields", vec![(r, 7, b',')], ragged(r)),
                (
                    "a bad byte before a ragged row",
                    vec![(r, 10, 0xff), (r + 1, 6, b'x')],
                    utf8(r, "c"),
                ),
                (
                    "a ragged row before a bad byte",
                    vec![(r, 6, b'x'), (r + 1, 0, 0xff)],
                    ragged(r),
                ),
                (
                    "two bad bytes in a row",
                    vec![(r, 10, 0xff), (r, 8, 0xfe)],
                    utf8(r, "b"),
                ),
                (
                    "a bad byte in a later row's first column",
                    vec![(r + 1, 0, 0xff), (r, 10, 0xff)],
                    utf8(r, "c"),
                ),
                (
                    "an integer column turned text just before a bad byte",
                    vec![(r - 2, 10, b'x'), (r, 11, 0xff), (r + 1, 0, 0xff)],
                    utf8(r, "c"),
                ),
                (
                    "a quote never closed",
                    vec![(r, 7, b'"')],
                    DataError::UnclosedQuote { line: line(r) },
                ),
                (
                    "a ragged row before a quote never closed",
                    vec![(r, 9, b'x'), (r + 3, 7, b'"')],
                    ragged(r),
                ),
                (
                    "a bad byte inside a quoted field over two lines",
                    vec![
                        (r, 7, b'"'),
                        (r, 8, b'\n'),
                        (r + 1, 0, 0xff),
                        (r + 1, 1, b'"'),
                        (r + 1, 2, b','),
                        (r + 1, 6, b'0'),
                        (r + 1, 9, b'0'),
                    ],
                    // The record is `000r,"\n,rr\n\xff",nnn0tn0nn`: its field `b` is bad.
                    utf8(r, "b"),
                ),
            ];
            for (what, edits, want) in cases {
                let text = error_file(N, &edits);
                for chunks in [1, 2, 3, 7] {
                    assert_eq!(
                        load(&text, chunks).err(),
                        Some(want.clone()),
                        "{what} at row {r}, {chunks} chunks"
                    );
                }
            }
        }
    }

    #[test]
    fn a_bare_quote_inside_an_unquoted_field_is_part_of_it_as_the_csv_crate_reads_it() {
        let mut text = String::from("a,b\n");
        for i in 0..70_000 {
            if matches!(i, 511 | 512 | 65_535 | 65_536) {
                text.push_str(&format!("{i},t\"{i}\"x\"\n"));
            } else {
                text.push_str(&format!("{i},t{i}\n"));
            }
        }
        let want = csv_crate_cells(&text, b',');
        for chunks in [1, 2, 3, 7] {
            let t = load(text.as_bytes(), chunks).expect("valid");
            let got: Vec<Option<Cell>> = (0..want.len()).map(|i| t.cell(i, 1)).collect();
            let want: Vec<Option<Cell>> = want
                .iter()
                .map(|row| row[1].clone().map(Cell::Text))
                .collect();
            assert!(got == want, "{chunks} chunks");
        }
    }
    #[test]
    fn declared_columns_over_many_segments_load_every_cell_for_any_chunking() {
        // A declared schema reads a record at a time and cuts segments only at the end of
        // a chunk: integers at every width in one segment (the least and greatest i64
        // together), cells that do not parse (missing), text with more than 65,536
        // distinct values first seen late, and a file column that is not kept.
        const N: usize = 150_000;
        let int = |i: usize| -> (String, Option<Cell>) {
            match i {
                70_000 => (i64::MIN.to_string(), Some(Cell::Integer(i64::MIN))),
                70_001 => (i64::MAX.to_string(), Some(Cell::Integer(i64::MAX))),
                _ if i.is_multiple_of(997) => ("x".to_string(), None),
                _ if i.is_multiple_of(1009) => ("2.5".to_string(), None),
                _ => {
                    let x = (i % 300) as i64 - 100;
                    (x.to_string(), Some(Cell::Integer(x)))
                }
            }
        };
        let float = |i: usize| -> (String, Option<Cell>) {
            if i.is_multiple_of(991) {
                ("true".to_string(), None)
            } else {
                let x = (i % 1000) as f64 / 8.0;
                (x.to_string(), Some(Cell::Float(x)))
            }
        };
        let flag = |i: usize| -> (String, Option<Cell>) {
            match i % 5 {
                0 => ("TRUE".to_string(), Some(Cell::Boolean(true))),
                1 => ("false".to_string(), Some(Cell::Boolean(false))),
                2 => ("1".to_string(), None),
                _ => (String::new(), None),
            }
        };
        let word = |i: usize| -> (String, Option<Cell>) {
            let w = if i < 65_536 {
                format!("w{}", i % 10)
            } else {
                format!("v{i}")
            };
            (w.clone(), Some(Cell::Text(w)))
        };
        let mut text = String::from("junk,i,f,b,t\n");
        let mut want = Vec::with_capacity(N);
        for i in 0..N {
            let cells = [int(i), float(i), flag(i), word(i)];
            let junk = if i % 2 == 0 { "1" } else { "\u{e9}x" };
            text.push_str(junk);
            for (written, _) in &cells {
                text.push(',');
                text.push_str(written);
            }
            text.push('\n');
            // Declared backwards: t, b, f, i.
            want.push(
                cells
                    .iter()
                    .rev()
                    .map(|(_, c)| c.clone())
                    .collect::<Vec<_>>(),
            );
        }
        let declared = vec![
            Declared::new("t", ColumnType::Text),
            Declared::new("b", ColumnType::Boolean),
            Declared::new("f", ColumnType::Float),
            Declared::new("i", ColumnType::Integer),
        ];
        let opts = LoadOptions {
            columns: Some(declared),
            ..LoadOptions::default()
        };
        for chunks in [1, 2, 3, 7] {
            let t = parse_table(text.as_bytes(), "mem.csv", &opts, chunks).expect("valid");
            check_storage(&t);
            assert_eq!(t.n_rows, N as u64);
            for (i, row) in want.iter().enumerate() {
                for (c, cell) in row.iter().enumerate() {
                    let got = t.cell(i, c);
                    assert!(
                        got == *cell,
                        "row {i} column {c}, {chunks} chunks: {got:?}, not {cell:?}"
                    );
                }
            }
        }
    }
    #[test]
    fn errors_in_a_file_of_carriage_return_line_ends_name_the_line_of_the_record() {
        // Lone CR line ends (as "CSV (Macintosh)" exports write them) are read as record
        // ends, so an error must name the line where its record starts, as it does for the
        // same file with LF or CRLF line ends: not line 1 for every record.
        let rows = ["a,b", "1,x", "2,y", "3", "4,w"];
        for end in ["\n", "\r\n", "\r"] {
            let text = rows.join(end) + end;
            assert_eq!(
                load(text.as_bytes(), 1).err(),
                Some(DataError::RaggedRow {
                    line: 4,
                    expected: 2
                }),
                "line ends {end:?}"
            );
        }
        let mut bad = b"a,b\r1,x\r2,".to_vec();
        bad.extend_from_slice(b"\xff\r");
        assert_eq!(
            load(&bad, 1).err(),
            Some(DataError::InvalidUtf8 {
                line: 3,
                column: "b".to_string()
            })
        );
    }
    #[cfg(unix)]
    #[test]
    fn a_file_read_by_verified_blocks_loads_as_its_bytes_do_for_any_chunking() {
        // The same content from a file (read by 64 KiB blocks, each hashed and checked on
        // every later read) and from memory: records over the window, quoted line breaks
        // where cuts fall, columns that turn text late (their earlier cells read again from
        // the chunk's start) and an error near the end (its line found by reading again).
        let mut text = String::from("id,note,late\n");
        for i in 0..60_000 {
            let note = if i % 9_000 == 4_500 {
                format!("\"{}\"", "line\n,\"\"".repeat(80_000))
            } else if i % 7 == 0 {
                format!("\"q\n{i}\"")
            } else {
                format!("n{}", i % 40)
            };
            let late = if i == 59_990 {
                "x".to_string()
            } else {
                (i % 1000).to_string()
            };
            text.push_str(&format!("{i},{note},{late}\n"));
        }
        let mut bad = text.clone().into_bytes();
        bad.extend_from_slice(b"1,\xff,2\n");
        let dir = tempfile::tempdir().expect("a temporary directory");
        for (name, bytes) in [("good.csv", text.as_bytes()), ("bad.csv", &bad[..])] {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).expect("written");
            let want = parse_table(bytes, "mem.csv", &LoadOptions::default(), 1)
                .map(|t| (t.schema(), t.cells()));
            for chunks in [1, 2, 3, 7, 16] {
                let opened = super::super::open::open(&path, "f.csv", &LoadOptions::default())
                    .expect("opened");
                let Opened::File(src) = opened else {
                    panic!("a regular file is read by blocks")
                };
                let got = parse_table(&src, "mem.csv", &LoadOptions::default(), chunks)
                    .map(|t| (t.schema(), t.cells()));
                assert!(got == want, "{name}, {chunks} chunks: {:?}", got.err());
                if want.is_ok() {
                    let hash = src.finish().expect("unchanged");
                    assert_eq!(hash, ContentHash::of_bytes(bytes));
                }
            }
        }
    }
    #[test]
    fn a_record_over_the_field_limit_is_ordered_with_the_other_errors_for_any_chunking() {
        // With a limit of three fields, a record of four is an error found while splitting
        // (before its cells are read, after the earlier records' cells are): it must come
        // after an earlier record's bad byte or ragged row and before a later one's.
        const N: usize = 140_000;
        let opts = LoadOptions {
            max_fields: 3,
            ..LoadOptions::default()
        };
        let line = |row: usize| row as u64 + 2;
        let two = cut_rows(N, ERROR_WIDTH, 2);
        let seven = cut_rows(N, ERROR_WIDTH, 7);
        for r in [511, 512, 65_536, 131_072, two[0], seven[3]] {
            let over = |row: usize| DataError::TooManyFields {
                line: line(row),
                limit: 3,
            };
            let cases: Vec<(&str, Vec<Edit>, DataError)> = vec![
                ("a record of four fields", vec![(r, 7, b',')], over(r)),
                (
                    "a bad byte just before",
                    vec![(r - 1, 10, 0xff), (r, 7, b',')],
                    DataError::InvalidUtf8 {
                        line: line(r - 1),
                        column: "c".to_string(),
                    },
                ),
                (
                    "a ragged row just before",
                    vec![(r - 1, 9, b'x'), (r, 7, b',')],
                    DataError::RaggedRow {
                        line: line(r - 1),
                        expected: 3,
                    },
                ),
                (
                    "a bad byte and a ragged row just after",
                    vec![(r, 7, b','), (r + 1, 10, 0xff), (r + 2, 9, b'x')],
                    over(r),
                ),
            ];
            for (what, edits, want) in cases {
                let text = error_file(N, &edits);
                for chunks in [1, 2, 3, 7] {
                    assert_eq!(
                        parse_table(&text[..], "mem.csv", &opts, chunks).err(),
                        Some(want.clone()),
                        "{what} at row {r}, {chunks} chunks"
                    );
                }
            }
        }
    }
    #[test]
    fn a_byte_order_mark_is_ignored_before_a_header_or_a_first_record_for_any_chunking() {
        let bom = "\u{feff}";
        let mut body = String::new();
        for i in 0..30_000 {
            body.push_str(&format!("{i},\"v\r\n{}\"\r\n", i % 9));
        }
        for header in ["a,b\r\n", "\"a\",b\r\n", "\r\n\r\na,b\r\n"] {
            let text = format!("{bom}{header}{body}");
            let plain = format!("{header}{body}");
            for chunks in [1, 2, 3, 7] {
                let got = load(text.as_bytes(), chunks).map(|t| (t.schema(), t.cells()));
                let want = load(plain.as_bytes(), 1).map(|t| (t.schema(), t.cells()));
                assert!(got.is_ok() && got == want, "{header:?}, {chunks} chunks");
            }
        }
        // Without a header the first record is data: its first cell is the number 0.
        let opts = LoadOptions {
            header: false,
            ..LoadOptions::default()
        };
        let text = format!("{bom}{body}");
        for chunks in [1, 2, 3] {
            let t = parse_table(text.as_bytes(), "mem.csv", &opts, chunks).expect("valid");
            assert_eq!(t.column_type(0), ColumnType::Integer);
            assert_eq!(t.cell(0, 0), Some(Cell::Integer(0)));
            assert_eq!(t.n_rows, 30_000);
        }
        // A bad byte's line counts from the file's start, the mark included.
        let mut bad = format!("{bom}a,b\n1,x\n").into_bytes();
        bad.extend_from_slice(b"2,\xff\n");
        assert_eq!(
            load(&bad, 1).err(),
            Some(DataError::InvalidUtf8 {
                line: 3,
                column: "b".to_string()
            })
        );
        assert!(matches!(
            load(bom.as_bytes(), 1),
            Err(DataError::Empty { .. })
        ));
        assert!(matches!(
            load(format!("{bom}\r\n").as_bytes(), 1),
            Err(DataError::NoHeader { .. })
        ));
    }
    #[test]
    fn fields_split_by_other_delimiters_at_every_word_offset_load_as_the_csv_crate_reads_them() {
        // Tab, bar, space, NUL and DEL between fields (the last two at the ends of the ASCII
        // range, where word-at-a-time byte tests go wrong first), with the same quoted,
        // multi-byte and CRLF fields as for `,`.
        let mut next = super::super::rng::xorshift(0x7ab1_e5ee_d0dd_ba11);
        for case in 0..40 {
            for delimiter in ['\t', '|', ' ', '\0', '\u{7f}'] {
                let format = CsvFormat {
                    delimiter: delimiter as u8,
                    decimal_comma: false,
                };
                let opts = LoadOptions {
                    format,
                    ..LoadOptions::default()
                };
                let (text, want) = random_text_file(&mut next, delimiter);
                let split = text.find(['\n', '\r']).expect("a header line end") + 1;
                for shift in 0..=8 {
                    let text =
                        format!("{}{}{}", &text[..split], "\n".repeat(shift), &text[split..]);
                    assert_eq!(csv_crate_cells(&text, delimiter as u8), want, "{text:?}");
                    for chunks in [1, 3] {
                        let t = parse_table(text.as_bytes(), "mem.csv", &opts, chunks)
                            .unwrap_or_else(|e| panic!("case {case}: {e} in {text:?}"));
                        check_storage(&t);
                        assert_eq!(
                            text_cells(&t),
                            want,
                            "case {case}, {delimiter:?}, shift {shift}, {chunks} chunks: {text:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn types_joined_across_chunks_read_every_chunk_again_as_text_where_they_differ() {
        // Each third of the file gives a column another type (integer, boolean, float, or
        // only missing cells) over several segments: the joined type is text or float, and
        // every cell reads as written in it, whichever chunk it was parsed in.
        const N: usize = 210_000;
        let thirds = [
            ["int", "bool", "float"],
            ["bool", "missing", "int"],
            ["float", "int", "missing"],
            ["missing", "float", "int"],
        ];
        let written = |kind: &str, i: usize| -> String {
            match kind {
                "int" => (i % 500).to_string(),
                "bool" => if i.is_multiple_of(2) { "TRUE" } else { "false" }.to_string(),
                "float" => format!("{}.5", i % 400),
                _ if i.is_multiple_of(2) => String::new(),
                _ => "NA".to_string(),
            }
        };
        let mut text = String::from("a,b,c,d\n");
        for i in 0..N {
            let third = i * 3 / N;
            let row: Vec<String> = thirds.iter().map(|k| written(k[third], i)).collect();
            text.push_str(&row.join(","));
            text.push('\n');
        }
        let want_type = [
            ColumnType::Text,
            ColumnType::Text,
            ColumnType::Float,
            ColumnType::Float,
        ];
        for chunks in [1, 2, 3, 4, 7] {
            let t = load(text.as_bytes(), chunks).expect("valid");
            check_storage(&t);
            let types: Vec<ColumnType> = t.schema().into_iter().map(|(_, t)| t).collect();
            assert_eq!(types, want_type, "{chunks} chunks");
            for i in 0..N {
                let third = i * 3 / N;
                for (c, kinds) in thirds.iter().enumerate() {
                    let w = written(kinds[third], i);
                    let want = if w.is_empty() || w == "NA" {
                        None
                    } else if want_type[c] == ColumnType::Text {
                        Some(Cell::Text(w))
                    } else {
                        Some(Cell::Float(w.parse().expect("a number")))
                    };
                    let got = t.cell(i, c);
                    assert!(got == want, "row {i} column {c}, {chunks} chunks: {got:?}");
                }
            }
        }
    }

    /// A `\r\n` or a lone `\r` whose `\r` is the last byte of a 512 KiB window of the error's
    /// line count (and of the reader's), in files of lone `\r`, of `\r\n` and of both: the
    /// error after it names the editor's line of its record.
    #[test]
    fn a_carriage_return_at_a_windows_end_counts_one_line_through_the_loader() {
        let window = 512usize << 10;
        for (case, (end, edge)) in [("\r", "\r\n"), ("\r\n", "\r\n"), ("\r", "\r"), ("\n", "\r")]
            .into_iter()
            .enumerate()
        {
            for shift in 0..3 {
                let mut text = b"a,b".to_vec();
                text.extend_from_slice(end.as_bytes());
                let mut i = 0;
                // Rows until the edge's `\r` falls at the window's last byte (or one off).
                let target = window - 1 + shift - 1;
                while text.len() + 40 < target {
                    text.extend_from_slice(format!("{},{}", i, "x".repeat(i % 30)).as_bytes());
                    text.extend_from_slice(end.as_bytes());
                    i += 1;
                }
                let fill = target - text.len() - 2;
                text.extend_from_slice(format!("1,{}", "y".repeat(fill)).as_bytes());
                assert_eq!(text.len(), target, "case {case}");
                text.extend_from_slice(edge.as_bytes());
                text.extend_from_slice(b"2,z");
                text.extend_from_slice(end.as_bytes());
                let at = text.len();
                text.extend_from_slice(b"3");
                text.extend_from_slice(end.as_bytes());
                let line = editor_line(&text, at);
                for chunks in 1..=3 {
                    assert_eq!(
                        load(&text, chunks).err(),
                        Some(DataError::RaggedRow { line, expected: 2 }),
                        "case {case}, shift {shift}, {chunks} chunks"
                    );
                }
            }
        }
    }

    /// The line a text editor shows for byte `at`: one more than the line ends before it,
    /// `\n`, `\r\n` (one) and a lone `\r` each ending one, in quoted fields too.
    fn editor_line(bytes: &[u8], at: usize) -> u64 {
        let mut line = 1;
        for i in 0..at {
            let ends = bytes[i] == b'\n' || (bytes[i] == b'\r' && bytes.get(i + 1) != Some(&b'\n'));
            line += u64::from(ends);
        }
        line
    }

    /// Mixed `\n`, `\r\n` and lone `\r` line ends in one file, quoted fields holding each of
    /// them before the error, a file that starts with `\r`, a header ended by `\r\n`: a ragged
    /// row, bad UTF-8, an unclosed quote and too many fields, on the first record, in the
    /// middle and on the last line, name the editor's line of the record's first byte.
    #[test]
    fn errors_in_files_of_mixed_line_ends_name_the_editors_line() {
        let ends = ["\n", "\r\n", "\r"];
        let cells = [
            "1,x",
            "\"q\ry\",2",
            "\"q\r\nz\",3",
            "\"a\nb\",4",
            "5,\"\r\r\n\n\"",
        ];
        let bads: [(&[u8], &str); 4] = [
            (b"7", "ragged"),
            (b"8,\xff", "utf8"),
            (b"\"open,9", "quote"),
            (b"1,2,3,4,5,6,7,8,9", "fields"),
        ];
        let opts = LoadOptions {
            max_fields: 4,
            ..LoadOptions::default()
        };
        for case in 0..90 {
            let lead = ["", "\r", "\r\n", "\n\r"][case % 4];
            let mut text: Vec<u8> = lead.as_bytes().to_vec();
            text.extend_from_slice(b"a,b");
            text.extend_from_slice(ends[case % 3].as_bytes());
            let before = case % 6;
            for r in 0..before {
                text.extend_from_slice(cells[(r + case) % cells.len()].as_bytes());
                text.extend_from_slice(ends[(r + case / 3) % 3].as_bytes());
            }
            let (bad, kind) = bads[case / 6 % 4];
            let at = text.len();
            text.extend_from_slice(bad);
            if case % 2 == 0 {
                text.extend_from_slice(ends[case / 2 % 3].as_bytes());
                text.extend_from_slice(b"6,u\r\n");
            }
            let line = editor_line(&text, at);
            let want = match kind {
                "ragged" => DataError::RaggedRow { line, expected: 2 },
                "utf8" => DataError::InvalidUtf8 {
                    line,
                    column: "b".to_string(),
                },
                "quote" => DataError::UnclosedQuote { line },
                _ => DataError::TooManyFields { line, limit: 4 },
            };
            for chunks in 1..=3 {
                let got = parse_table(&text[..], "mem.csv", &opts, chunks).err();
                assert_eq!(
                    got,
                    Some(want.clone()),
                    "case {case} {kind}, {chunks} chunks: {:?}",
                    String::from_utf8_lossy(&text)
                );
            }
        }
    }
}
