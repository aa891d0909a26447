//! Parquet files as a table whose rows stay on disk: each question streams the row groups,
//! reading only the columns it names, so memory holds a few row groups whatever the size of
//! the files.
//!
//! A row group is turned into a one-segment [`Table`] and asked the question the column store
//! answers (a count, the counts of a cube's cells, a clamped sum); the answers of the row
//! groups add up. The schema comes from the files' metadata, never from their values: integer
//! types are `integer`, floating and decimal types `float`, `boolean` is `boolean`, and
//! strings, dates and times (as ISO text) are `text`. A float that is not finite is a missing
//! value. Nested and binary columns are refused at `LOAD`. Several files (a directory, or a
//! glob such as `events/*.parquet`) are one table when their schemas agree.
//!
//! In a local session, a row group whose values, as dpq found them when it read the columns
//! a question names whole from it before, rule the question's condition out is skipped (see
//! `prune`). A served dataset never skips ([`ParquetTable::constant_work`]): the bounds are
//! the data's own least and greatest values, and the time a skip saves would tell them.

use ahash::AHashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;
use rayon::prelude::*;

use super::cells::{count_cells, Buckets};
use super::count::{count, truth};
use super::error::{escape_name, DataError};
use super::lanes::{Ints, Lanes};
use super::predicate::{Predicate, Value};
use super::prune::{never_true, Bounds};
use super::table::{ColumnData, ColumnType, Dictionary, Segment, SegmentColumn, Table};

/// Rows per batch read from a row group.
const BATCH: usize = 64 * 1024;

/// Whether `path` names Parquet data: a `.parquet` (or `.parq`, `.pq`) file, a directory, or
/// a pattern with `*`, `?` or `[` (unless a file has that very name).
pub fn is_parquet_path(path: &Path) -> bool {
    let text = path.to_string_lossy();
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    matches!(ext.as_deref(), Some("parquet" | "parq" | "pq"))
        || path.is_dir()
        || (text.contains(['*', '?', '[']) && !path.exists())
}

/// One file of a Parquet table, as it was when the table was loaded.
#[derive(Debug)]
struct Part {
    path: PathBuf,
    len: u64,
    modified: Option<SystemTime>,
    row_groups: usize,
    /// The footer, parsed once at `LOAD`: parsing it again for every row group made a
    /// question on a file of many row groups quadratic in their number.
    metadata: ArrowReaderMetadata,
    /// What identifies the file's bytes besides its length and modification time: on Unix
    /// its inode and change time, which no one can set back.
    identity: (u64, i64, i64),
    /// Columns in the file.
    columns: usize,
    /// Per row group, the sets of columns (sorted) read whole from it without an error.
    read: Vec<Mutex<Vec<Vec<usize>>>>,
    /// Per row group and column, the bounds dpq found on the column's values when it read
    /// the group whole (see [`ParquetTable::scan`]).
    bounds: Vec<Mutex<Bounds>>,
}

/// What identifies a file's bytes besides its length and modification time.
#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> (u64, i64, i64) {
    use crate::sys::fs::MetadataExt;
    (meta.ino(), meta.ctime(), meta.ctime_nsec())
}

#[cfg(not(unix))]
fn identity(_: &std::fs::Metadata) -> (u64, i64, i64) {
    (0, 0, 0)
}

/// A table of one or more Parquet files, read again at every question.
pub struct ParquetTable {
    /// The schema and row count, with no rows.
    shell: Table,
    parts: Vec<Part>,
    /// Row groups read by questions so far (for tests and benchmarks of the skipping).
    groups_read: AtomicU64,
    /// Rows read by questions so far, each row once per row group read (for the same).
    rows_read: AtomicU64,
    /// Row groups a question counted on their dictionary keys (see `pages`).
    keyed_groups: AtomicU64,
    /// Whether row groups may be skipped on the bounds dpq found on their values, and
    /// counted on their dictionary keys. Off for a served dataset: those bounds are
    /// the data's own least and greatest values, and the time a skipped group saves would
    /// tell them to an analyst (see [`Self::constant_work`]).
    skipping: bool,
}

impl std::fmt::Debug for ParquetTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetTable")
            .field("files", &self.parts.len())
            .field("shell", &self.shell)
            .finish()
    }
}

impl Part {
    /// Whether the columns `set` (sorted) have been read whole from row group `g`.
    fn was_read(&self, g: usize, set: &[usize]) -> bool {
        self.read[g]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|s| s == set)
    }

    /// Records that the columns `set` were read whole from row group `g`, with the bounds
    /// `found` on their values.
    fn record_read(&self, g: usize, set: &[usize], found: Vec<Bounds>) {
        for (&c, b) in set.iter().zip(found) {
            if let Some(slot) = self.bounds.get(g * self.columns + c) {
                *slot.lock().unwrap_or_else(PoisonError::into_inner) = b;
            }
        }
        let mut read = self.read[g].lock().unwrap_or_else(PoisonError::into_inner);
        if !read.iter().any(|s| s == set) {
            read.push(set.to_vec());
        }
    }

    /// Whether row group `g` holds no row on which `pred` is true, by the bounds dpq found.
    fn rules_out(&self, g: usize, pred: &Predicate) -> bool {
        never_true(pred, &|c: usize| {
            if c >= self.columns {
                return Bounds::Unknown;
            }
            self.bounds[g * self.columns + c]
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        })
    }
}

/// The files a path names: the file itself, a directory's `.parquet` files, or a pattern's
/// matches, in name order.
fn files(path: &Path, shown: &str) -> Result<Vec<PathBuf>, DataError> {
    let text = path.to_string_lossy();
    let mut found: Vec<PathBuf> = if path.is_dir() {
        std::fs::read_dir(path)
            .map_err(|e| io_error(shown, &e))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file() && is_parquet_path(p))
            .collect()
    } else if path.is_file() {
        vec![path.to_path_buf()]
    } else if text.contains(['*', '?', '[']) {
        glob::glob(&text)
            .map_err(|e| DataError::Io {
                path: shown.to_string(),
                message: format!("the pattern does not read: {}", e.msg),
            })?
            .filter_map(Result::ok)
            .filter(|p| p.is_file())
            .collect()
    } else {
        return Err(DataError::NotFound {
            path: shown.to_string(),
        });
    };
    found.sort();
    if found.is_empty() {
        let message = if path.is_dir() {
            "it is a directory with no .parquet file"
        } else {
            "no file matches the pattern"
        };
        return Err(DataError::Io {
            path: shown.to_string(),
            message: message.to_string(),
        });
    }
    Ok(found)
}

fn io_error(shown: &str, e: &std::io::Error) -> DataError {
    DataError::Io {
        path: shown.to_string(),
        message: e.to_string(),
    }
}

/// The error for a file that does not read as Parquet. The reader's own words are left out:
/// they can quote bytes of the file.
fn not_parquet(file: &Path) -> DataError {
    DataError::Io {
        path: file.display().to_string(),
        message: format!(
            "{} does not read as a Parquet file (or its metadata is damaged)",
            file.display()
        ),
    }
}

/// The dpq type of an Arrow type, or why it cannot be read.
pub(super) fn column_type(t: &DataType) -> Result<ColumnType, &'static str> {
    use DataType as D;
    Ok(match t {
        D::Int8 | D::Int16 | D::Int32 | D::Int64 | D::UInt8 | D::UInt16 | D::UInt32 | D::UInt64 => {
            ColumnType::Integer
        }
        D::Float16 | D::Float32 | D::Float64 | D::Decimal32(..) | D::Decimal64(..) => {
            ColumnType::Float
        }
        D::Decimal128(..) | D::Decimal256(..) => ColumnType::Float,
        D::Boolean => ColumnType::Boolean,
        D::Utf8 | D::LargeUtf8 | D::Utf8View => ColumnType::Text,
        D::Date32 | D::Date64 | D::Timestamp(..) | D::Time32(_) | D::Time64(_) => ColumnType::Text,
        D::Dictionary(_, v) => column_type(v)?,
        D::Null => ColumnType::Text,
        D::Binary | D::LargeBinary | D::BinaryView | D::FixedSizeBinary(_) => return Err("binary"),
        _ => return Err("nested or of a kind dpq does not read"),
    })
}

/// The most entries Arrow's reader takes of a dictionary page of a column it reads as
/// `t`: a dictionary of narrower keys than 32 bits names fewer, and a page holding more fails
/// the read.
fn dictionary_entries(t: &DataType) -> u64 {
    use DataType as D;
    match t {
        D::Dictionary(k, _) => match k.as_ref() {
            D::Int8 => i8::MAX as u64,
            D::UInt8 => u8::MAX as u64,
            D::Int16 => i16::MAX as u64,
            D::UInt16 => u16::MAX as u64,
            D::Int32 => i32::MAX as u64,
            D::UInt32 => u32::MAX as u64,
            D::Int64 | D::UInt64 => u64::MAX,
            _ => 0,
        },
        _ => u64::MAX,
    }
}

/// How a text column's values are written, for the files of a table to agree on: strings,
/// dates, dates with times, zoned timestamps (UTC, `...Z`) and times of day each read as text
/// of their own form, which one condition cannot mean alike.
fn text_form(t: &DataType) -> &'static str {
    use DataType as D;
    match t {
        D::Dictionary(_, v) => text_form(v),
        D::Date32 => "date",
        D::Date64 | D::Timestamp(_, None) => "date and time",
        D::Timestamp(_, Some(_)) => "instant",
        D::Time32(_) | D::Time64(_) => "time",
        _ => "",
    }
}

/// Refuses the column names a CSV header may not have: empty, repeated, or holding a control
/// or format character (a right-to-left override would reorder what a terminal shows).
pub(super) fn check_names(names: &[String], shown: &str, file: &Path) -> Result<(), DataError> {
    for (i, name) in names.iter().enumerate() {
        let why = if name.is_empty() {
            "is empty"
        } else if super::error::has_controls(name) {
            "holds a control or format character"
        } else if names[..i].contains(name) {
            "is there twice"
        } else {
            continue;
        };
        return Err(DataError::Io {
            path: shown.to_string(),
            message: format!(
                "column names must be distinct, not empty and free of control characters: column {} of {} {why}",
                i + 1,
                file.display()
            ),
        });
    }
    Ok(())
}

/// Reads the metadata of the Parquet files `path` names: their schema (which must agree) and
/// row counts. Reads no value.
/// The files a Parquet path names (a file, a directory of them or a pattern), resolved, in
/// name order: for telling whether two sources share a file.
pub fn parquet_files(path: &Path) -> Result<Vec<PathBuf>, DataError> {
    let shown = path.display().to_string();
    Ok(files(path, &shown)?
        .into_iter()
        .map(|f| std::fs::canonicalize(&f).unwrap_or(f))
        .collect())
}

pub fn open_parquet(path: &Path) -> Result<ParquetTable, DataError> {
    let shown = path.display().to_string();
    let mut parts = Vec::new();
    type Schema = (Vec<String>, Vec<ColumnType>, Vec<&'static str>);
    let mut schema: Option<Schema> = None;
    let mut n_rows = 0u64;
    for file in files(path, &shown)? {
        let meta = std::fs::metadata(&file).map_err(|e| io_error(&shown, &e))?;
        let handle = File::open(&file).map_err(|e| io_error(&shown, &e))?;
        let metadata = ArrowReaderMetadata::load(&handle, Default::default())
            .map_err(|_| not_parquet(&file))?;
        let metadata = reading_schema(metadata).map_err(|_| not_parquet(&file))?;
        let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(handle, metadata.clone());
        let mut names = Vec::new();
        let mut types = Vec::new();
        let mut forms = Vec::new();
        for field in builder.schema().fields() {
            let t = column_type(field.data_type()).map_err(|why| DataError::Io {
                path: shown.clone(),
                message: format!(
                    "column {} of {} is {why}, which dpq cannot read",
                    escape_name(field.name()),
                    file.display()
                ),
            })?;
            names.push(field.name().clone());
            types.push(t);
            forms.push(text_form(field.data_type()));
        }
        check_names(&names, &shown, &file)?;
        let this = (names, types, forms);
        match &schema {
            None => schema = Some(this),
            Some(first) if *first == this => {}
            Some(_) => {
                return Err(DataError::Io {
                    path: shown,
                    message: format!(
                        "{} has other columns or types than the first file",
                        file.display()
                    ),
                })
            }
        }
        let md = builder.metadata();
        // The public n is the rows the scans read, row group by row group; a footer whose
        // total says otherwise is damaged (or made to show another n).
        let groups: i64 = md.row_groups().iter().map(|g| g.num_rows()).sum();
        if groups != md.file_metadata().num_rows() || groups < 0 {
            return Err(not_parquet(&file));
        }
        n_rows += u64::try_from(groups).unwrap_or(0);
        parts.push(Part {
            path: file,
            len: meta.len(),
            modified: meta.modified().ok(),
            row_groups: md.num_row_groups(),
            identity: identity(&meta),
            columns: md.file_metadata().schema_descr().num_columns(),
            read: (0..md.num_row_groups())
                .map(|_| Mutex::new(Vec::new()))
                .collect(),
            bounds: (0..md.num_row_groups() * md.file_metadata().schema_descr().num_columns())
                .map(|_| Mutex::new(Bounds::Unknown))
                .collect(),
            metadata,
        });
    }
    let (names, types, _) = schema.unwrap_or_default();
    if names.is_empty() {
        return Err(DataError::NoHeader { path: shown });
    }
    let dictionaries = vec![Dictionary::default(); names.len()];
    Ok(ParquetTable {
        shell: Table {
            names,
            types,
            dictionaries,
            segments: Vec::new(),
            n_rows,
        },
        parts,
        groups_read: AtomicU64::new(0),
        rows_read: AtomicU64::new(0),
        keyed_groups: AtomicU64::new(0),
        skipping: true,
    })
}

/// The metadata with its string columns read as dictionaries (`Dictionary(Int32, Utf8)`):
/// Arrow then hands over the keys of Parquet's dictionary pages as they are decoded, with
/// the page's strings once, rather than a string a row (a plain page is made a dictionary by
/// Arrow's reader). The schema dpq shows is the file's, read from the same metadata before.
fn reading_schema(metadata: ArrowReaderMetadata) -> parquet::errors::Result<ArrowReaderMetadata> {
    use arrow_schema::{Field, Schema};
    let schema = metadata.schema();
    let keyed = |f: &Arc<Field>| match f.data_type() {
        DataType::Utf8 => Arc::new(f.as_ref().clone().with_data_type(DataType::Dictionary(
            Box::new(DataType::Int32),
            Box::new(DataType::Utf8),
        ))),
        _ => f.clone(),
    };
    if !schema
        .fields()
        .iter()
        .any(|f| f.data_type() == &DataType::Utf8)
    {
        return Ok(metadata);
    }
    let fields: Vec<Arc<Field>> = schema.fields().iter().map(keyed).collect();
    let reading = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let options = parquet::arrow::arrow_reader::ArrowReaderOptions::new().with_schema(reading);
    ArrowReaderMetadata::try_new(metadata.metadata().clone(), options)
}

/// The BLAKE3 hash of each file's bytes, in name order.
pub fn parquet_file_hashes(table: &ParquetTable) -> Result<Vec<[u8; 32]>, DataError> {
    let mut hashes = Vec::new();
    for part in &table.parts {
        let shown = part.path.display().to_string();
        let file = File::open(&part.path).map_err(|e| io_error(&shown, &e))?;
        hashes.push(hash_file(file).map_err(|e| io_error(&shown, &e))?);
    }
    table.check_unchanged()?;
    Ok(hashes)
}

/// The most bytes of a file one thread hashes as a subtree of BLAKE3's tree: larger files are
/// split in two at the tree's own left subtree, again and again, and the halves hashed on
/// rayon's threads.
const HASH_SUBTREE: u64 = 8 << 20;

/// Bytes a thread reads at a time into its own buffer, small enough to stay in its core's
/// cache while it is hashed.
const HASH_PIECE: usize = 256 << 10;

/// The BLAKE3 hash of every byte of `file`: the same hash as one thread's over the whole
/// file, computed as the subtrees of BLAKE3's tree (each of at most [`HASH_SUBTREE`] bytes,
/// read with positioned reads on its own thread) merged into their parents. Each byte is
/// copied from the operating system once, into a buffer its thread hashes while it is still
/// in cache; a single reader handing large chunks to all cores spent more time copying than
/// hashing. The file's length is taken once: a file that changes meanwhile fails the check
/// every question makes on its length, time and identity.
fn hash_file(file: File) -> std::io::Result<[u8; 32]> {
    use blake3::hazmat::{left_subtree_len, merge_subtrees_root, Mode};
    let len = file.metadata()?.len();
    if len <= HASH_SUBTREE {
        let mut hasher = blake3::Hasher::new();
        hash_range(&file, &mut hasher, 0, len)?;
        return Ok(*hasher.finalize().as_bytes());
    }
    let left = left_subtree_len(len);
    let (a, b) = rayon::join(
        || subtree(&file, 0, left),
        || subtree(&file, left, len - left),
    );
    Ok(*merge_subtrees_root(&a?, &b?, Mode::Hash).as_bytes())
}

/// The chaining value of the subtree of BLAKE3's tree over `len` bytes of `file` from
/// `start` (a subtree's start and length, as [`hash_file`] splits them).
fn subtree(file: &File, start: u64, len: u64) -> std::io::Result<blake3::hazmat::ChainingValue> {
    use blake3::hazmat::{left_subtree_len, merge_subtrees_non_root, HasherExt, Mode};
    if len <= HASH_SUBTREE {
        let mut hasher = blake3::Hasher::new();
        hasher.set_input_offset(start);
        hash_range(file, &mut hasher, start, len)?;
        return Ok(hasher.finalize_non_root());
    }
    let left = left_subtree_len(len);
    let (a, b) = rayon::join(
        || subtree(file, start, left),
        || subtree(file, start + left, len - left),
    );
    Ok(merge_subtrees_non_root(&a?, &b?, Mode::Hash))
}

/// Feeds `len` bytes of `file` from `start` to `hasher`, [`HASH_PIECE`] bytes at a time.
fn hash_range(
    file: &File,
    hasher: &mut blake3::Hasher,
    start: u64,
    len: u64,
) -> std::io::Result<()> {
    use crate::sys::fs::FileExt;
    let mut buf = vec![0u8; HASH_PIECE.min(usize::try_from(len).unwrap_or(HASH_PIECE))];
    let mut done = 0u64;
    while done < len {
        let n = buf
            .len()
            .min(usize::try_from(len - done).unwrap_or(usize::MAX));
        file.read_exact_at(&mut buf[..n], start + done)?;
        hasher.update(&buf[..n]);
        done += n as u64;
    }
    Ok(())
}

/// The BLAKE3 identity of the files' bytes: a single file's own hash (as a CSV file's is),
/// or for several the hash of their hashes in name order.
pub fn parquet_content(table: &ParquetTable) -> Result<[u8; 32], DataError> {
    Ok(parquet_set(&parquet_file_hashes(table)?))
}

/// The identity of files whose hashes are `hashes`: the one file's own, or the hash of them.
fn parquet_set(hashes: &[[u8; 32]]) -> [u8; 32] {
    match hashes {
        [one] => *one,
        many => {
            let mut hasher = blake3::Hasher::new_derive_key("dpq 2026 parquet files");
            for h in many {
                hasher.update(h);
            }
            *hasher.finalize().as_bytes()
        }
    }
}

impl ParquetTable {
    /// The schema and row count, as a table with no rows.
    pub fn shell(&self) -> &Table {
        &self.shell
    }

    /// The number of files.
    pub fn files(&self) -> usize {
        self.parts.len()
    }

    /// An error unless every file has the length and time it had when it was loaded: an
    /// answer is only ever about the data the table's ledger is for.
    fn check_unchanged(&self) -> Result<(), DataError> {
        for part in &self.parts {
            let meta = std::fs::metadata(&part.path).ok();
            let same = meta.as_ref().is_some_and(|m| {
                m.len() == part.len
                    && m.modified().ok() == part.modified
                    && identity(m) == part.identity
            });
            if !same {
                return Err(DataError::Changed {
                    path: part.path.display().to_string(),
                });
            }
        }
        Ok(())
    }

    /// Row groups read by questions so far: those the statistics let a question skip are not
    /// counted.
    pub fn groups_read(&self) -> u64 {
        self.groups_read.load(Ordering::Relaxed)
    }

    /// Rows read by questions so far (a row read from a group by two questions counts twice).
    pub fn rows_read(&self) -> u64 {
        self.rows_read.load(Ordering::Relaxed)
    }

    /// Row groups that questions so far counted on the groups' dictionary keys, without
    /// reading their rows into a table (see [`Self::count`] and [`Self::count_cells`]).
    pub fn groups_by_keys(&self) -> u64 {
        self.keyed_groups.load(Ordering::Relaxed)
    }

    /// Makes every question read every row group whole: no group is skipped, no bounds on
    /// the values are kept, and no group is counted on its dictionary keys (whose runs the
    /// writer chose by the values). What a question then reads depends on the files' row groups
    /// and the columns it names, never on the values; `dpq serve` asks this of every
    /// Parquet dataset, whose analysts must not learn a column's least or greatest value
    /// from how long an answer takes.
    pub fn constant_work(&mut self) {
        self.skipping = false;
    }

    /// Asks every row group, in parallel, through a one-segment table holding the columns in
    /// `needed`, and adds the answers up with `add`.
    ///
    /// A row group on which `rows` (the condition the answer is about) can be true on no row
    /// is skipped: it adds nothing. Whether it can is decided on the bounds dpq itself found
    /// on the group's values (never on the file's footer statistics), and only once this very
    /// set of columns has been read whole from the group without an error: a group that
    /// cannot be read with these columns then fails every question on them alike, whatever
    /// the condition, so whether a question fails never tells what the group holds. The
    /// error reported is the first group's in file order, whichever thread met it first.
    pub(crate) fn scan<T: Send>(
        &self,
        needed: &[usize],
        rows: Option<&Predicate>,
        zero: impl Fn() -> T + Sync + Send,
        ask: impl Fn(&Table) -> T + Sync + Send,
        add: impl Fn(T, T) -> T + Sync + Send,
    ) -> Result<T, DataError> {
        self.scan_with(needed, rows, |_, _| None, zero, ask, add)
    }

    /// The true number of rows where `pred` is true, as [`super::count::count`] counts a
    /// table's. In a local session, a condition on one integer column is counted on each
    /// row group's dictionary keys where its pages allow (see `pages`): the condition is
    /// asked of each dictionary entry once, and the rows of the entries where it holds are
    /// added up; the group's bounds for skipping are its used entries' least and greatest.
    /// A served dataset ([`Self::constant_work`]) and any other condition read every row.
    ///
    /// Internal: the number must only ever be used to add noise to.
    pub fn count(&self, pred: &Predicate) -> Result<u64, DataError> {
        let mut needed = pred.columns();
        needed.sort_unstable();
        needed.dedup();
        let by_keys = match needed.as_slice() {
            [c] if self.skipping && self.shell.types.get(*c) == Some(&ColumnType::Integer) => {
                Some(*c)
            }
            _ => None,
        };
        self.scan_with(
            &needed,
            Some(pred),
            |part, g| {
                let c = by_keys?;
                let physical = match part.metadata.schema().fields().get(c)?.data_type() {
                    DataType::Int32 => parquet::basic::Type::INT32,
                    DataType::Int64 => parquet::basic::Type::INT64,
                    _ => return None,
                };
                let group = part.metadata.metadata().row_groups().get(g)?;
                let file = File::open(&part.path).ok()?;
                let tally = decoding(&part.path, || {
                    Ok(super::pages::key_tally(file, group, c, physical, u64::MAX))
                })
                .ok()??;
                let entries = tally.dictionary.buffer();
                let values = super::pages::int_entries(entries, tally.keys.len(), physical)?;
                let holds = truth(&self.entry_table(c, &values), pred);
                let mut n = 0;
                let (mut lo, mut hi) = (i64::MAX, i64::MIN);
                for (e, (&k, &v)) in tally.keys.iter().zip(&values).enumerate() {
                    if k > 0 {
                        n += if super::bitmap::get(&holds, e) { k } else { 0 };
                        (lo, hi) = (lo.min(v), hi.max(v));
                    }
                }
                let bounds = if lo > hi {
                    Bounds::AllMissing
                } else {
                    Bounds::Int(lo, hi)
                };
                self.keyed_groups.fetch_add(1, Ordering::Relaxed);
                Some((n, Some(vec![bounds])))
            },
            || 0,
            |t| count(t, pred),
            |a, b| a + b,
        )
    }

    /// A one-segment table whose column `c` holds `values`, one a row, and whose other
    /// columns hold nothing: a dictionary's entries, for a condition to be asked of.
    fn entry_table(&self, c: usize, values: &[i64]) -> Table {
        let n = self.shell.names.len();
        let mut columns: Vec<SegmentColumn> = (0..n)
            .map(|_| SegmentColumn {
                data: ColumnData::Integer(Ints::zeros(0)),
                valid: None,
            })
            .collect();
        columns[c].data = ColumnData::Integer(Ints::from_values(values, None));
        Table {
            names: self.shell.names.clone(),
            types: self.shell.types.clone(),
            dictionaries: vec![Dictionary::default(); n],
            segments: vec![Segment {
                len: values.len(),
                columns,
            }],
            n_rows: values.len() as u64,
        }
    }

    /// The true number of rows in every cell of a cube whose dimensions are `dims`, as
    /// [`super::cells::count_cells`] counts a table's. In a local session, a cube by one
    /// text column is counted on each row group's dictionary keys where its pages allow
    /// (see `pages`); a served dataset ([`Self::constant_work`]) and any other cube read
    /// every row's value.
    ///
    /// Internal: the numbers must only ever be used to add noise to.
    pub fn count_cells(&self, dims: &[(usize, Buckets)]) -> Result<Vec<u64>, DataError> {
        let needed: Vec<usize> = dims.iter().map(|(c, _)| *c).collect();
        let cells: usize = dims.iter().map(|(_, b)| b.len()).product();
        let by_keys = match dims {
            [(c, Buckets::Values(values))]
                if self.skipping && self.shell.types[*c] == ColumnType::Text =>
            {
                let listed: Vec<Option<&str>> = values
                    .iter()
                    .map(|v| match v {
                        Value::Text(t) => Some(t.as_str()),
                        _ => None,
                    })
                    .collect();
                Some((*c, listed))
            }
            _ => None,
        };
        self.scan_with(
            &needed,
            None,
            |part, g| {
                let (c, listed) = by_keys.as_ref()?;
                let group = part.metadata.metadata().row_groups().get(g)?;
                let file = File::open(&part.path).ok()?;
                let entries = dictionary_entries(part.metadata.schema().field(*c).data_type());
                let cells = decoding(&part.path, || {
                    Ok(super::pages::key_cells(file, group, *c, entries, listed))
                })
                .ok()??;
                self.keyed_groups.fetch_add(1, Ordering::Relaxed);
                Some((cells, None))
            },
            || vec![0; cells],
            |t| count_cells(t, dims),
            |a, b| a.iter().zip(&b).map(|(x, y)| x + y).collect(),
        )
    }

    /// [`Self::scan`], asking `quick` first for each row group read: its answer, when it has
    /// one, is the group's, and the group's rows are not read into a table. With the answer
    /// come the bounds of the columns of `needed` (sorted) it found, when it read them whole.
    fn scan_with<T: Send>(
        &self,
        needed: &[usize],
        rows: Option<&Predicate>,
        quick: impl Fn(&Part, usize) -> Option<(T, Option<Vec<Bounds>>)> + Sync + Send,
        zero: impl Fn() -> T + Sync + Send,
        ask: impl Fn(&Table) -> T + Sync + Send,
        add: impl Fn(T, T) -> T + Sync + Send,
    ) -> Result<T, DataError> {
        self.check_unchanged()?;
        let mut set = needed.to_vec();
        set.sort_unstable();
        set.dedup();
        let groups: Vec<(usize, usize)> = self
            .parts
            .iter()
            .enumerate()
            .flat_map(|(f, p)| (0..p.row_groups).map(move |g| (f, g)))
            .collect();
        let answers: Vec<Result<T, DataError>> = groups
            .par_iter()
            .map(|&(f, g)| {
                let part = &self.parts[f];
                if let (true, Some(pred)) = (self.skipping, rows) {
                    if part.was_read(g, &set) && part.rules_out(g, pred) {
                        return Ok(zero());
                    }
                }
                self.groups_read.fetch_add(1, Ordering::Relaxed);
                if let Some((answer, found)) = quick(part, g) {
                    let rows = part.metadata.metadata().row_group(g).num_rows();
                    self.rows_read
                        .fetch_add(u64::try_from(rows).unwrap_or(0), Ordering::Relaxed);
                    if let (true, Some(found)) = (self.skipping, found) {
                        part.record_read(g, &set, found);
                    }
                    return Ok(answer);
                }
                let mut total = zero();
                let mut found: Vec<Bounds> = vec![Bounds::AllMissing; set.len()];
                let mut ranked: Vec<Option<Ranked>> = set.iter().map(|_| None).collect();
                let mut reader = decoding(&part.path, || self.read_group(part, g, &set))?;
                while let Some(batch) = decoding(&part.path, || Ok(reader.next()))? {
                    let batch = batch.map_err(|_| not_parquet(&part.path))?;
                    let chunk = self.chunk(&batch, &set, &mut ranked)?;
                    self.rows_read
                        .fetch_add(batch.num_rows() as u64, Ordering::Relaxed);
                    if self.skipping {
                        for (b, &c) in found.iter_mut().zip(&set) {
                            *b = std::mem::replace(b, Bounds::Unknown).union(Bounds::of(&chunk, c));
                        }
                    }
                    total = add(total, ask(&chunk));
                }
                if self.skipping {
                    part.record_read(g, &set, found);
                }
                Ok(total)
            })
            .collect();
        let mut total = zero();
        for answer in answers {
            total = add(total, answer?);
        }
        self.check_unchanged()?;
        Ok(total)
    }

    /// A reader of row group `g` of `part`, projected on `needed`.
    fn read_group(
        &self,
        part: &Part,
        g: usize,
        needed: &[usize],
    ) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader, DataError> {
        let shown = part.path.display().to_string();
        let file = File::open(&part.path).map_err(|e| io_error(&shown, &e))?;
        let builder =
            ParquetRecordBatchReaderBuilder::new_with_metadata(file, part.metadata.clone());
        let mask = ProjectionMask::roots(builder.parquet_schema(), needed.iter().copied());
        builder
            .with_projection(mask)
            .with_row_groups(vec![g])
            .with_batch_size(BATCH)
            .build()
            .map_err(|_| not_parquet(&part.path))
    }

    /// A batch of rows as a one-segment table: the columns in `needed` hold the batch's
    /// values (the batch has them in schema order), the others nothing. `ranked` holds, per
    /// column of the batch, the sorted dictionary of the row group's text read so far.
    fn chunk(
        &self,
        batch: &RecordBatch,
        needed: &[usize],
        ranked: &mut [Option<Ranked>],
    ) -> Result<Table, DataError> {
        let len = batch.num_rows();
        let n = self.shell.names.len();
        let mut dictionaries = vec![Dictionary::default(); n];
        let mut columns: Vec<SegmentColumn> = (0..n)
            .map(|_| SegmentColumn {
                data: ColumnData::Integer(Ints::zeros(0)),
                valid: None,
            })
            .collect();
        let mut sorted: Vec<usize> = needed.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        for (position, &c) in sorted.iter().enumerate() {
            let array = batch.column(position);
            let slot = ranked.get_mut(position);
            let (column, dictionary) = match (self.shell.types[c], slot) {
                (ColumnType::Text, Some(slot)) => keyed_by_group(array, slot),
                (t, _) => convert(array, t),
            }
            .map_err(|why| self.value_error(c, why))?;
            columns[c] = column;
            dictionaries[c] = dictionary;
        }
        Ok(Table {
            names: self.shell.names.clone(),
            types: self.shell.types.clone(),
            dictionaries,
            segments: vec![Segment { len, columns }],
            n_rows: len as u64,
        })
    }

    fn value_error(&self, column: usize, why: &str) -> DataError {
        DataError::Io {
            path: self
                .parts
                .first()
                .map(|p| p.path.display().to_string())
                .unwrap_or_default(),
            message: format!("column {}: {why}", escape_name(&self.shell.names[column])),
        }
    }
}

thread_local! {
    /// Whether this thread is inside [`decoding`].
    static DECODING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, in which Arrow's reader decodes a row group of the file at `path`, and turns a
/// panic in it into the error of a file that does not read. Arrow's decoders panic on some
/// damaged pages (a run of definition levels past the page's end, a run header of more than
/// ten bytes); such a file must fail its question, not end the session. The panic is not
/// printed: the error says what is wrong. A panic anywhere else is printed as before. The
/// key path (see `pages`) reads pages through the same page reader, which panics on some page
/// headers, inside it too: a panic there leaves the group to the general path, which fails.
fn decoding<T>(path: &Path, f: impl FnOnce() -> Result<T, DataError>) -> Result<T, DataError> {
    static QUIET: std::sync::Once = std::sync::Once::new();
    QUIET.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !DECODING.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
    let was = DECODING.with(|d| d.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    DECODING.with(|d| d.set(was));
    result.unwrap_or_else(|_| Err(not_parquet(path)))
}

/// The validity bitmap of `array` (`None` when every value is present).
pub(super) fn validity(array: &dyn Array, present: impl Fn(usize) -> bool) -> Option<Vec<u64>> {
    let len = array.len();
    let mut bits = vec![0u64; len.div_ceil(64)];
    let mut all = true;
    for i in 0..len {
        if array.is_valid(i) && present(i) {
            bits[i / 64] |= 1 << (i % 64);
        } else {
            all = false;
        }
    }
    (!all).then_some(bits)
}

/// The validity bitmap of `array` (`None` when every value is present), a word at a time
/// from Arrow's null buffer.
pub(super) fn nulls(array: &dyn Array) -> Option<Vec<u64>> {
    let nulls = array.logical_nulls()?;
    (nulls.null_count() > 0).then(|| nulls.inner().bit_chunks().iter_padded().collect())
}

/// One Arrow column as the column store holds it. A value that does not convert (an unsigned
/// integer past `i64::MAX`, a date or time out of range) is a missing value, as a float that
/// is not finite is: never an error, which would tell whether such a value is there.
pub(super) fn convert(
    array: &ArrayRef,
    t: ColumnType,
) -> Result<(SegmentColumn, Dictionary), &'static str> {
    let lenient = arrow_cast::CastOptions {
        safe: true,
        ..Default::default()
    };
    let none = Dictionary::default();
    match t {
        ColumnType::Integer => {
            if let Some(column) = narrow_ints(array) {
                return Ok((column, none));
            }
            let cast = arrow_cast::cast_with_options(array, &DataType::Int64, &lenient)
                .map_err(|_| "the column does not read as 64-bit integers")?;
            let values = cast.as_primitive::<Int64Type>();
            let valid = nulls(values);
            let data = ColumnData::Integer(Ints::from_values(values.values(), valid.as_deref()));
            Ok((SegmentColumn { data, valid }, none))
        }
        ColumnType::Float => {
            let cast = arrow_cast::cast_with_options(array, &DataType::Float64, &lenient)
                .map_err(|_| "the column does not read as floating-point numbers")?;
            let values = cast.as_primitive::<Float64Type>();
            let raw = values.values();
            let valid = validity(values, |i| raw[i].is_finite());
            let data = ColumnData::Float(
                raw.iter()
                    .map(|x| if x.is_finite() { *x } else { 0.0 })
                    .collect(),
            );
            Ok((SegmentColumn { data, valid }, none))
        }
        ColumnType::Boolean => {
            let values = array
                .as_boolean_opt()
                .ok_or("a value does not read as a boolean")?;
            let mut bits = vec![0u64; values.len().div_ceil(64)];
            for i in 0..values.len() {
                if values.is_valid(i) && values.value(i) {
                    bits[i / 64] |= 1 << (i % 64);
                }
            }
            let valid = nulls(values);
            let data = ColumnData::Boolean(bits);
            Ok((SegmentColumn { data, valid }, none))
        }
        ColumnType::Text => text_column(array),
    }
}

/// A column of integers narrower than 64 bits (every one an `i64`), read from Arrow's own
/// values with no cast to 64 bits first: the cast wrote and read eight bytes a row more.
/// `None` for 64-bit and other columns.
fn narrow_ints(array: &ArrayRef) -> Option<SegmentColumn> {
    use arrow_array::types::{Int16Type, Int8Type, UInt16Type, UInt32Type, UInt8Type};
    let valid = nulls(array.as_ref());
    let v = valid.as_deref();
    let ints = match array.data_type() {
        DataType::Int8 => Ints::from_values(array.as_primitive::<Int8Type>().values(), v),
        DataType::Int16 => Ints::from_values(array.as_primitive::<Int16Type>().values(), v),
        DataType::Int32 => Ints::from_values(array.as_primitive::<Int32Type>().values(), v),
        DataType::UInt8 => Ints::from_values(array.as_primitive::<UInt8Type>().values(), v),
        DataType::UInt16 => Ints::from_values(array.as_primitive::<UInt16Type>().values(), v),
        DataType::UInt32 => Ints::from_values(array.as_primitive::<UInt32Type>().values(), v),
        _ => return None,
    };
    Some(SegmentColumn {
        data: ColumnData::Integer(ints),
        valid,
    })
}

/// The ISO text of a column of dates, times or timestamps, and of strings as they are. A
/// timestamp with a time zone is the UTC instant (`1970-01-01T00:00:00Z`), whatever its zone is called;
/// a value that cannot be written is missing.
pub(super) fn as_text(array: &ArrayRef) -> Result<ArrayRef, &'static str> {
    use arrow_array::types::{
        TimestampMicrosecondType as Us, TimestampMillisecondType as Ms,
        TimestampNanosecondType as Ns, TimestampSecondType as S,
    };
    use arrow_schema::TimeUnit;
    let unreadable = "the column does not read as text";
    let array = match array.data_type() {
        DataType::Dictionary(_, v) => arrow_cast::cast(array, v).map_err(|_| unreadable)?,
        _ => array.clone(),
    };
    let utc = "+00:00";
    let array: ArrayRef = match array.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null => {
            return arrow_cast::cast(&array, &DataType::Utf8).map_err(|_| unreadable)
        }
        DataType::Timestamp(unit, Some(_)) => match unit {
            TimeUnit::Second => Arc::new(array.as_primitive::<S>().clone().with_timezone(utc)),
            TimeUnit::Millisecond => {
                Arc::new(array.as_primitive::<Ms>().clone().with_timezone(utc))
            }
            TimeUnit::Microsecond => {
                Arc::new(array.as_primitive::<Us>().clone().with_timezone(utc))
            }
            TimeUnit::Nanosecond => Arc::new(array.as_primitive::<Ns>().clone().with_timezone(utc)),
        },
        _ => array,
    };
    let options = arrow_cast::display::FormatOptions::default();
    let formatter = arrow_cast::display::ArrayFormatter::try_new(array.as_ref(), &options)
        .map_err(|_| unreadable)?;
    let mut text = String::new();
    let values: arrow_array::StringArray = (0..array.len())
        .map(|i| {
            text.clear();
            (array.is_valid(i) && formatter.value(i).write(&mut text).is_ok()).then(|| text.clone())
        })
        .collect();
    Ok(Arc::new(values))
}

/// A text column: a sorted dictionary of the batch's values and a code per row.
fn text_column(array: &ArrayRef) -> Result<(SegmentColumn, Dictionary), &'static str> {
    if let Some(keyed) = array.as_dictionary_opt::<Int32Type>() {
        if let Some(values) = keyed.values().as_string_opt::<i32>() {
            if values.null_count() == 0 {
                return keyed_text(keyed.keys(), values);
            }
        }
    }
    let cast = as_text(array)?;
    let values = cast.as_string::<i32>();
    // Codes in order of first appearance (one hash a row), then renumbered by rank: a batch
    // has few distinct values next to its rows. A column of plain strings comes here only
    // when Arrow did not read it as a dictionary (see `reading_schema`).
    let mut first: AHashMap<&str, u32> = AHashMap::new();
    let mut codes: Vec<u32> = Vec::with_capacity(values.len());
    let mut distinct: Vec<&str> = Vec::new();
    for i in 0..values.len() {
        if values.is_valid(i) {
            let v = values.value(i);
            codes.push(*first.entry(v).or_insert_with(|| {
                distinct.push(v);
                (distinct.len() - 1) as u32
            }));
        } else {
            codes.push(0);
        }
    }
    u32::try_from(distinct.len()).map_err(|_| "too many distinct values")?;
    sorted_codes(&distinct, codes, nulls(values))
}

/// The sorted dictionary of a row group's text column, as Arrow hands it over with every
/// batch of the group: one array of values, shared by the batches.
pub(super) struct Ranked {
    /// The dictionary's values as Arrow holds them: kept, so that the next batch's are known
    /// to be these very values when they are the same array.
    values: ArrayRef,
    /// Each entry's code: its value's rank among the distinct values, at the width of the
    /// dictionary's codes.
    rank: Lanes,
    dictionary: Dictionary,
}

/// A text column, by the sorted dictionary of its row group: Arrow reads a column chunk's
/// dictionary page once and hands the same values with each batch, so they are sorted once
/// a group (in `slot`), not once a batch, and each row's code is its key's rank. The
/// dictionary holds every value of the page, used by a row of the batch or not: codes only
/// name values, and a count or a cell reads every row's code whatever they are. Any other
/// column (plain strings, dates) is read as [`text_column`] reads it.
fn keyed_by_group(
    array: &ArrayRef,
    slot: &mut Option<Ranked>,
) -> Result<(SegmentColumn, Dictionary), &'static str> {
    let Some(keyed) = array.as_dictionary_opt::<Int32Type>() else {
        return text_column(array);
    };
    let values = keyed.values();
    let same = slot
        .as_ref()
        .is_some_and(|r| Arc::ptr_eq(&r.values, values));
    if !same {
        match values.as_string_opt::<i32>() {
            Some(strings) if strings.null_count() == 0 => {
                let (rank, dictionary) = rank_entries(strings)?;
                let max_code = dictionary.len().saturating_sub(1) as u64;
                let rank = Lanes::from_codes(rank, max_code);
                *slot = Some(Ranked {
                    values: values.clone(),
                    rank,
                    dictionary,
                });
            }
            _ => return text_column(array),
        }
    }
    let ranked = slot.as_ref().ok_or("the dictionary is not read")?;
    let keys = keyed.keys();
    let valid = nulls(keys);
    // A missing row's code is 0, as the column store's is; a key is within the dictionary
    // (Arrow checks it), and one that were not would read as 0 too.
    let data = ColumnData::Text(Lanes::gather(&ranked.rank, keys.values(), valid.as_deref()));
    Ok((SegmentColumn { data, valid }, ranked.dictionary.clone()))
}

/// Every entry's rank among the distinct values of a dictionary's `values` (which may repeat
/// a value), and the sorted dictionary of those values.
fn rank_entries(values: &arrow_array::StringArray) -> Result<(Vec<u32>, Dictionary), &'static str> {
    u32::try_from(values.len()).map_err(|_| "too many distinct values")?;
    let entries: Vec<&str> = (0..values.len()).map(|i| values.value(i)).collect();
    rank(&entries)
}

/// A text column read as a dictionary (Parquet's dictionary pages, decoded by Arrow into a
/// key a row): the batch's dictionary is sorted once, and each row's code is its key's rank,
/// with no string hashed or compared per row. Every key a row holds (a missing row's too)
/// gets a code, so the column's dictionary may hold values no present row has: codes only
/// name values, and a count or a cell reads every row's code whatever they are.
fn keyed_text(
    keys: &arrow_array::Int32Array,
    values: &arrow_array::StringArray,
) -> Result<(SegmentColumn, Dictionary), &'static str> {
    let entries = values.len();
    // Which entries the batch's keys use (a key is within the dictionary: Arrow checks it).
    let mut used = vec![u32::MAX; entries];
    let mut distinct: Vec<&str> = Vec::new();
    for &k in keys.values() {
        let slot = &mut used[usize::try_from(k).map_err(|_| "a key out of range")?];
        if *slot == u32::MAX {
            *slot = distinct.len() as u32;
            distinct.push(values.value(k as usize));
        }
    }
    u32::try_from(distinct.len()).map_err(|_| "too many distinct values")?;
    let codes: Vec<u32> = keys.values().iter().map(|&k| used[k as usize]).collect();
    sorted_codes(&distinct, codes, nulls(keys))
}

/// The column of `codes`, numbered by first appearance among `distinct` (a value may come
/// twice, from a dictionary that repeats one), renumbered by the rank of their value in a
/// sorted dictionary of the distinct values.
fn sorted_codes(
    distinct: &[&str],
    mut codes: Vec<u32>,
    valid: Option<Vec<u64>>,
) -> Result<(SegmentColumn, Dictionary), &'static str> {
    let (rank, dictionary) = rank(distinct)?;
    for (i, c) in codes.iter_mut().enumerate() {
        let present = valid.as_ref().is_none_or(|v| super::bitmap::get(v, i));
        *c = if present { rank[*c as usize] } else { 0 };
    }
    let max_code = dictionary.len().saturating_sub(1) as u64;
    Ok((
        SegmentColumn {
            data: ColumnData::Text(Lanes::from_codes(codes, max_code)),
            valid,
        },
        dictionary,
    ))
}

/// Each of `values`' rank among their distinct values (a value may come twice), and the
/// sorted dictionary of the distinct values.
fn rank(values: &[&str]) -> Result<(Vec<u32>, Dictionary), &'static str> {
    let mut by_value: Vec<u32> = (0..values.len() as u32).collect();
    by_value.sort_unstable_by(|&a, &b| values[a as usize].cmp(values[b as usize]));
    let mut rank = vec![0u32; values.len()];
    let mut bytes = Vec::new();
    let mut ends: Vec<usize> = Vec::with_capacity(values.len());
    let mut last: Option<&str> = None;
    for &c in &by_value {
        let v = values[c as usize];
        if last != Some(v) {
            bytes.extend_from_slice(v.as_bytes());
            ends.push(bytes.len());
            last = Some(v);
        }
        rank[c as usize] = (ends.len() - 1) as u32;
    }
    let dictionary = Dictionary::from_parts(bytes, ends).ok_or("a value is not UTF-8")?;
    Ok((rank, dictionary))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::NullBufferBuilder;
    use arrow_array::{DictionaryArray, Int32Array, StringArray};

    /// Each row's text as the column reads it: `None` for a missing row, whose code is 0.
    fn read(column: &SegmentColumn, dictionary: &Dictionary, len: usize) -> Vec<Option<String>> {
        let ColumnData::Text(lanes) = &column.data else {
            panic!("not text");
        };
        (0..len)
            .map(|i| {
                let code = lanes.get(i) as usize;
                let present = column.valid.as_ref().is_none_or(|v| bitmap_get(v, i));
                if present {
                    Some(dictionary.get(code).to_string())
                } else {
                    assert_eq!(code, 0, "a missing row's code");
                    None
                }
            })
            .collect()
    }

    fn bitmap_get(v: &[u64], i: usize) -> bool {
        (v[i / 64] >> (i % 64)) & 1 == 1
    }

    fn keyed(keys: Vec<i32>, valid: Option<Vec<bool>>, values: &ArrayRef) -> ArrayRef {
        let nulls = valid.and_then(|v| {
            let mut b = NullBufferBuilder::new(v.len());
            v.iter().for_each(|&x| b.append(x));
            b.finish()
        });
        let keys = Int32Array::new(keys.into(), nulls);
        Arc::new(DictionaryArray::<Int32Type>::try_new(keys, values.clone()).expect("keys"))
    }

    fn expected(array: &ArrayRef) -> Vec<Option<String>> {
        let text = as_text(array).expect("text");
        let text = text.as_string::<i32>();
        (0..text.len())
            .map(|i| text.is_valid(i).then(|| text.value(i).to_string()))
            .collect()
    }

    /// `decoding` sets its flag only while it runs: after a panic it caught, around a nested
    /// call that caught one, and on a rayon worker for the worker's next tasks.
    #[test]
    fn decoding_restores_its_flag_after_a_panic_nested_and_on_rayon_workers() {
        let flag = || DECODING.with(std::cell::Cell::get);
        let path = Path::new("x.parquet");
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("a pool");
        pool.install(|| {
            let failed: Result<(), DataError> = decoding(path, || panic!("in a decoder"));
            assert!(failed.is_err());
            assert!(!flag());
            let outer = decoding(path, || {
                let inner: Result<(), DataError> = decoding(path, || panic!("nested"));
                assert!(inner.is_err());
                assert!(flag(), "the outer call's flag is restored");
                Ok(7)
            });
            assert_eq!(outer.ok(), Some(7));
            assert!(!flag());
        });
        assert!(!pool.install(flag), "the worker's next task");
        let flags: Vec<bool> = pool.install(|| {
            (0..64)
                .into_par_iter()
                .map(|i| {
                    let _ = decoding(path, || if i % 2 == 0 { panic!("even") } else { Ok(()) });
                    flag()
                })
                .collect()
        });
        assert!(flags.iter().all(|f| !f));
        assert!(!pool.install(flag));
        assert!(!flag());
    }

    /// A row group's dictionary, ranked once and kept while batches hand the very same
    /// values: a dictionary that repeats a value and holds one no key uses, missing rows whose
    /// keys point anywhere (past the dictionary too), the same values handed again, then a
    /// different dictionary (which must be ranked anew, never read with the old ranks), plain
    /// strings in between, and the first dictionary again after another was kept.
    #[test]
    fn a_kept_dictionary_is_only_used_for_its_own_values() {
        let first: ArrayRef = Arc::new(StringArray::from(vec!["b", "a", "b", "zz", "a", ""]));
        let second: ArrayRef = Arc::new(StringArray::from(vec!["a", "zz", "b", "c"]));
        let batches: Vec<ArrayRef> = vec![
            keyed(
                (0..130).map(|i| [0, 1, 2, 4, 5, 99][i % 6]).collect(),
                Some((0..130).map(|i| i % 6 != 5).collect()),
                &first,
            ),
            keyed(vec![5, 4, 2, 2, 0], None, &first),
            keyed(
                vec![3, 2, 1, 0, -7],
                Some(vec![true, true, true, true, false]),
                &second,
            ),
            Arc::new(StringArray::from(vec![Some("q"), None, Some("a")])),
            keyed(vec![0, 1, 2, 3, 0], None, &second),
            keyed(
                vec![1, 3, 0, 1000],
                Some(vec![true, true, true, false]),
                &first,
            ),
        ];
        let mut slot = None;
        for (b, array) in batches.iter().enumerate() {
            let (column, dictionary) = keyed_by_group(array, &mut slot).expect("read");
            assert_eq!(
                read(&column, &dictionary, array.len()),
                expected(array),
                "batch {b}"
            );
            // Codes are ranks in a sorted dictionary of distinct values.
            let all: Vec<&str> = (0..dictionary.len()).map(|c| dictionary.get(c)).collect();
            assert!(all.windows(2).all(|w| w[0] < w[1]), "batch {b}: {all:?}");
        }
    }
}
