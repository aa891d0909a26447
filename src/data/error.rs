//! `DataError`: everything that can go wrong loading a CSV file, told by line and column, never by value.

use std::borrow::Cow;

/// Why a CSV file could not be loaded. Messages leave the path out: the caller names the file.
///
/// Line numbers are 1-based physical lines of the file (a quoted field may span lines; a
/// record is reported at the line where it starts). Columns are named by their header name,
/// which is public schema, shown through [`escape_name`]. No variant carries a cell value from
/// the data.
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
    /// Without a header (`NO HEADER`) the same file gives [`DataError::NoRecords`].
    #[error("the file has no header row")]
    NoHeader {
        /// The path as given.
        path: String,
    },
    /// The file has bytes but no record at all (only line breaks), and no header was expected.
    #[error("the file has no records")]
    NoRecords {
        /// The path as given.
        path: String,
    },
    /// The first row does not read as a header row: a name is empty, repeated, not UTF-8,
    /// holds a control or format character, or reads as a value (a number, date, time,
    /// amount, address, or a field of its column's own type). The file most likely has no
    /// header, and its first row of data would be shown as names; so the error says nothing
    /// of which fields, or of what they hold.
    #[error("the first row does not read as a header row: column names must be distinct, not empty, free of control characters, and not values (numbers, dates, times, amounts, addresses, or values of their column's type)")]
    NotAHeader,
    /// A declared column is not in the file's header (or is declared twice). Declared names
    /// are public: the error may name them.
    #[error("the declared column {} is not in the file's header, or is declared twice", escape_name(.column))]
    DeclaredColumnMissing {
        /// The declared name.
        column: String,
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
    /// A record has more fields than a header of one field, whose name holds a character
    /// that separates the fields of other files: most likely the file is separated by it.
    /// The hint speaks of the header only, which is public.
    #[error(
        "the number of fields on line {line} differs from the header's 1, a field named {hint}"
    )]
    OneFieldHeader {
        /// Line where the record starts.
        line: u64,
        /// The header's name and the `DELIMITER` it suggests ([`super::one_field_hint`]).
        hint: String,
    },
    /// A quoted field is still open at the end of the file.
    #[error("the quoted field opened on line {line} is never closed")]
    UnclosedQuote {
        /// Line of the opening quote.
        line: u64,
    },
    /// A cell is not valid UTF-8.
    #[error("line {line}, column {}: the cell is not valid UTF-8", escape_name(.column))]
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
    #[error("column {} has too many distinct values", escape_name(.column))]
    TooManyDistinct {
        /// Header name of the column.
        column: String,
    },
    /// The file's bytes changed between two readings of the same part while it was loaded.
    #[error("the file changed while it was being read")]
    Changed {
        /// The path as given.
        path: String,
    },
    /// The path is a device or a socket, which `LOAD` refuses without reading.
    #[error("it is {kind}, not a regular file or a pipe")]
    NotAFile {
        /// The path as given.
        path: String,
        /// What it is, in words (`a character device`).
        kind: String,
    },
    /// A pipe ended before giving any byte: no program writes to it.
    #[error("no program is writing to the pipe (it ended before giving any data)")]
    PipeWithoutWriter {
        /// The path as given.
        path: String,
    },
    /// `LoadOptions::format` cannot be read (a quote between fields, a decimal comma with
    /// `,` between fields too, ...).
    #[error("{error}")]
    Format {
        /// What is wrong with it.
        error: super::format::FormatError,
    },
    /// A pipe's writer gave nothing for longer than `LoadOptions::pipe_idle`.
    #[error("the pipe gave no data for {seconds} seconds")]
    PipeIdle {
        /// The path as given.
        path: String,
        /// The idle limit, in seconds.
        seconds: f64,
    },
}

/// `name` as it can be shown on a terminal or in a log: control characters (C0, DEL, C1),
/// Unicode format characters (bidirectional overrides such as U+202E, zero-width characters
/// such as U+200B, the byte-order mark) and line or paragraph separators are written as
/// `\u{1b}`, `\u{202e}`, ...; a name without any is borrowed unchanged.
///
/// Names stay stored as they are in the file, so that statements can refer to them; this is
/// only for showing them.
pub fn escape_name(name: &str) -> Cow<'_, str> {
    if !name.chars().any(needs_escape) {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        if needs_escape(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Text for a terminal with the characters of [`escape_name`] escaped, but for line feeds and
/// tabs (the layout of a rendered table or message): whatever a name or a statement holds,
/// what is printed cannot move the cursor, set the terminal's title or reorder the text.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    let escaped = |c: char| needs_escape(c) && c != '\n' && c != '\t';
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if escaped(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// JSON text with the invisible format characters escaped as `\uXXXX` (serde already escapes
/// control characters): they can only stand inside strings, where the escape means the same.
pub fn escape_json_format(json: &str) -> Cow<'_, str> {
    if !json.chars().any(needs_escape) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    let mut units = [0u16; 2];
    for c in json.chars() {
        if needs_escape(c) {
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// True for the characters [`escape_name`] escapes.
/// Whether a name holds a character [`escape_name`] would escape.
pub(crate) fn has_controls(name: &str) -> bool {
    name.chars().any(needs_escape)
}

fn needs_escape(c: char) -> bool {
    c.is_control() || is_format(c) || c == '\u{2028}' || c == '\u{2029}'
}

/// True for the characters of Unicode's general category Cf (format), which are invisible
/// and may reorder or hide what follows them (Unicode 15.1, `DerivedGeneralCategory.txt`).
fn is_format(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{0600}'..='\u{0605}'
            | '\u{061C}'
            | '\u{06DD}'
            | '\u{070F}'
            | '\u{0890}'..='\u{0891}'
            | '\u{08E2}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0001}'
            | '\u{E0020}'..='\u{E007F}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_controls_and_format_characters_only() {
        assert!(matches!(escape_name("age"), Cow::Borrowed("age")));
        assert!(matches!(escape_name("été ü 名"), Cow::Borrowed(_)));
        assert_eq!(escape_name("a\u{1b}[31mb"), "a\\u{1b}[31mb");
        assert_eq!(
            escape_name("\u{7f}\u{85}\t\n"),
            "\\u{7f}\\u{85}\\u{9}\\u{a}"
        );
        assert_eq!(escape_name("x\u{202e}y\u{200b}"), "x\\u{202e}y\\u{200b}");
        assert_eq!(
            escape_name("\u{feff}\u{2028}\u{e0041}"),
            "\\u{feff}\\u{2028}\\u{e0041}"
        );
    }
}
