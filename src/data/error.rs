//! `DataError`: everything that can go wrong loading a CSV file, told by line and column, never by value.

/// Why a CSV file could not be loaded. Messages leave the path out: the caller names the file.
///
/// Line numbers are 1-based physical lines of the file (a quoted field may span lines; a
/// record is reported at the line where it starts). Columns are named by their header name,
/// which is public schema. No variant carries a cell value from the data.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DataError {
    /// There is no file at the path.
    #[error("no such file")]
    NotFound {
        /// The path as given.
        path: String,
    },
    /// The file exists but could not be read.
    #[error("{message}")]
    Io {
        /// The path as given.
        path: String,
        /// The operating system's explanation.
        message: String,
    },
    /// The file has no bytes at all (a lone byte-order mark counts as none).
    #[error("the file is empty")]
    Empty {
        /// The path as given.
        path: String,
    },
    /// The file has bytes but no record to serve as the header row (only line breaks).
    #[error("the file has no header row")]
    NoHeader {
        /// The path as given.
        path: String,
    },
    /// Two header fields have the same name.
    #[error("the header names the column {column} more than once")]
    DuplicateHeader {
        /// The repeated name.
        column: String,
    },
    /// A header field is empty (or only whitespace).
    #[error("column {column_number} has an empty name in the header")]
    EmptyHeader {
        /// 1-based position of the column.
        column_number: usize,
    },
    /// A header field is not valid UTF-8.
    #[error("the name of column {column_number} in the header is not valid UTF-8")]
    InvalidHeaderUtf8 {
        /// 1-based position of the column.
        column_number: usize,
    },
    /// A record has a different number of fields than the header. The record's own count is
    /// left out: it would tell how many unquoted commas its values hold.
    #[error("the number of fields on line {line} differs from the header's {expected}")]
    RaggedRow {
        /// Line where the record starts.
        line: u64,
        /// Number of header fields.
        expected: usize,
    },
    /// A quoted field is still open at the end of the file.
    #[error("the quoted field opened on line {line} is never closed")]
    UnclosedQuote {
        /// Line of the opening quote.
        line: u64,
    },
    /// A cell is not valid UTF-8.
    #[error("line {line}, column {column}: the cell is not valid UTF-8")]
    InvalidUtf8 {
        /// Line where the record starts.
        line: u64,
        /// Header name of the column.
        column: String,
    },
    /// The file is larger than `LoadOptions::max_bytes`.
    #[error("the file is larger than the limit of {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// A record (the header included) has more fields than `LoadOptions::max_fields`.
    #[error("line {line} has more than {limit} fields")]
    TooManyFields {
        /// Line where the record starts.
        line: u64,
        /// The limit on fields per record.
        limit: usize,
    },
    /// A text column has more distinct values than its codes can number (2^32 - 1).
    #[error("column {column} has too many distinct values")]
    TooManyDistinct {
        /// Header name of the column.
        column: String,
    },
}
