//! `CsvFormat`: how a CSV file's text is cut into fields (`DELIMITER`) and its numbers read (`DECIMAL`).
//!
//! A reading other than the default is another table of the same bytes: its rows differ. So
//! the format is part of what a table is, in the keys of its releases ([`CsvFormat::key_mark`])
//! and beside the cube and privacy unit its ledger records ([`CsvFormat::clauses`]).

use std::path::Path;

/// The field delimiter and the decimal mark a CSV file is read with.
///
/// `,` between fields and `.` before decimals by default; a tab between fields for a file
/// whose name ends in `.tsv`. With `decimal_comma` (`DECIMAL ','`), `,` marks decimals and
/// `.` groups thousands, as spreadsheets write numbers under German, French or Italian
/// locales: `3,5` is 3.5 and `1.234,5` is 1234.5.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CsvFormat {
    /// The byte between fields: one ASCII character, never a quote, a line break, a letter,
    /// a digit or `.` ([`delimiter_byte`]).
    pub delimiter: u8,
    /// Whether `,` marks decimals and `.` separates groups of three digits.
    pub decimal_comma: bool,
}

impl Default for CsvFormat {
    fn default() -> Self {
        CsvFormat {
            delimiter: b',',
            decimal_comma: false,
        }
    }
}

/// Why a `DELIMITER` or `DECIMAL` cannot read a file. The texts are the statement's, never the
/// data's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// `DELIMITER ''`, or more than one character (`\t` aside).
    #[error("DELIMITER takes one character (or \\t for a tab)")]
    DelimiterLength,
    /// A character of more than one byte in UTF-8 (`é`, `§`): fields are cut at bytes.
    #[error("DELIMITER takes an ASCII character: `{0}` is more than one byte in UTF-8")]
    DelimiterNotAscii(char),
    /// A character with a meaning of its own in CSV text or in its numbers.
    #[error("{what} cannot separate fields: {why}")]
    DelimiterReserved {
        /// The character, in words (`a quote`, `a line break`, `the letter x`).
        what: &'static str,
        /// What it already does.
        why: &'static str,
    },
    /// `DECIMAL` other than `.` or `,`.
    #[error("DECIMAL is '.' (the default) or ','")]
    Decimal,
    /// `DECIMAL ','` with `,` between fields too.
    #[error("DECIMAL ',' needs another DELIMITER: with `,` between fields too, `3,5` would be two fields")]
    DecimalIsDelimiter,
}

impl CsvFormat {
    /// The format a file is read with by default: a tab between fields when its name ends
    /// in `.tsv` (in any case), else `,`.
    pub fn for_path(path: &Path) -> Self {
        let tsv = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("tsv"));
        CsvFormat {
            delimiter: if tsv { b'\t' } else { b',' },
            decimal_comma: false,
        }
    }

    /// Checks that the format can be read: a delimiter [`delimiter_byte`] accepts, other than
    /// the decimal mark.
    pub fn check(&self) -> Result<(), FormatError> {
        check_delimiter(self.delimiter)?;
        if self.decimal_comma && self.delimiter == b',' {
            return Err(FormatError::DecimalIsDelimiter);
        }
        Ok(())
    }

    /// Whether this is the default reading (`,` and `.`), whatever the file's name.
    pub fn is_default(&self) -> bool {
        *self == CsvFormat::default()
    }

    /// The clauses of `LOAD` that give this format, as written (`DELIMITER ';' DECIMAL ','`,
    /// `DELIMITER '\t'`), or nothing for `,` and `.`. Recorded beside a cube or a privacy unit
    /// declared over the table, so that neither is read over another reading of the data.
    pub fn clauses(&self) -> String {
        let mut out = Vec::new();
        match self.delimiter {
            b',' => {}
            b'\t' => out.push("DELIMITER '\\t'".to_string()),
            b'\'' => out.push("DELIMITER ''''".to_string()),
            d => out.push(format!("DELIMITER '{}'", char::from(d))),
        }
        if self.decimal_comma {
            out.push("DECIMAL ','".to_string());
        }
        out.join(" ")
    }

    /// What marks this reading in the keys of a table's releases: nothing for `,` and `.`
    /// (the keys of every table read before formats existed), else `~delimiter:` and the
    /// byte in hexadecimal, and `~decimal:comma`. No mark holds `|`, which ends a key's prefix.
    pub fn key_mark(&self) -> String {
        let mut out = String::new();
        if self.delimiter != b',' {
            out.push_str(&format!("~delimiter:{:02x}", self.delimiter));
        }
        if self.decimal_comma {
            out.push_str("~decimal:comma");
        }
        out
    }
}

/// What to say of a header of one field, `name`, that holds a character separating the
/// fields of other files (`;`, `|` or `,`, when it is not `delimiter`):
/// `` `a;b;c`: if `;` separates its fields, LOAD it with DELIMITER ';' ``; `None` otherwise.
/// Only the header is looked at, which is public (the schema), never a cell. A long name is
/// cut: its start is enough to recognise it.
pub fn one_field_hint(name: &str, delimiter: u8) -> Option<String> {
    const SHOWN: usize = 60;
    let separator = [';', '|', ',']
        .into_iter()
        .filter(|&c| c as u32 != u32::from(delimiter))
        .find(|&c| name.contains(c))?;
    let shown = match name.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}...", &name[..end]),
        None => name.to_string(),
    };
    Some(format!(
        "`{}`: if `{separator}` separates its fields, LOAD it with DELIMITER '{separator}'",
        super::escape_name(&shown)
    ))
}

/// The delimiter a `DELIMITER` text names: one ASCII character, or `\t` (a backslash and a
/// `t`) for a tab. A quote, a line break, a letter, a digit and `.` are refused: each has a
/// meaning of its own in CSV text or in the numbers it holds.
pub fn delimiter_byte(text: &str) -> Result<u8, FormatError> {
    if text == "\\t" {
        return Ok(b'\t');
    }
    let mut chars = text.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        return Err(FormatError::DelimiterLength);
    };
    if !c.is_ascii() {
        return Err(FormatError::DelimiterNotAscii(c));
    }
    let byte = c as u8;
    check_delimiter(byte)?;
    Ok(byte)
}

/// Whether a `DECIMAL` text asks for a decimal comma: `,` does, `.` (the default) does not.
pub fn decimal_comma(text: &str) -> Result<bool, FormatError> {
    match text {
        "," => Ok(true),
        "." => Ok(false),
        _ => Err(FormatError::Decimal),
    }
}

fn check_delimiter(byte: u8) -> Result<(), FormatError> {
    let reserved = |what, why| Err(FormatError::DelimiterReserved { what, why });
    match byte {
        b'"' => reserved("a quote", "it quotes fields"),
        b'\n' | b'\r' => reserved("a line break", "it ends records"),
        b'.' => reserved("`.`", "it marks decimals or groups thousands in numbers"),
        b'0'..=b'9' => reserved("a digit", "digits make numbers"),
        b'a'..=b'z' | b'A'..=b'Z' => reserved(
            "a letter",
            "letters make words, true, false, NA and exponents",
        ),
        128.. => Err(FormatError::DelimiterNotAscii(char::from(byte))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delimiters_are_one_ascii_character_or_backslash_t() {
        assert_eq!(delimiter_byte(";"), Ok(b';'));
        assert_eq!(delimiter_byte("|"), Ok(b'|'));
        assert_eq!(delimiter_byte("\\t"), Ok(b'\t'));
        assert_eq!(delimiter_byte("\t"), Ok(b'\t'));
        assert_eq!(delimiter_byte(" "), Ok(b' '));
        assert_eq!(delimiter_byte("'"), Ok(b'\''));
        assert_eq!(delimiter_byte(""), Err(FormatError::DelimiterLength));
        assert_eq!(delimiter_byte(";;"), Err(FormatError::DelimiterLength));
        assert_eq!(delimiter_byte("\\n"), Err(FormatError::DelimiterLength));
        assert_eq!(
            delimiter_byte("§"),
            Err(FormatError::DelimiterNotAscii('§'))
        );
        for refused in ["\"", "\n", "\r", ".", "0", "x", "E"] {
            assert!(
                matches!(
                    delimiter_byte(refused),
                    Err(FormatError::DelimiterReserved { .. })
                ),
                "{refused:?}"
            );
        }
    }

    #[test]
    fn a_decimal_comma_needs_another_delimiter() {
        assert_eq!(decimal_comma(","), Ok(true));
        assert_eq!(decimal_comma("."), Ok(false));
        assert_eq!(decimal_comma(";"), Err(FormatError::Decimal));
        let clash = CsvFormat {
            delimiter: b',',
            decimal_comma: true,
        };
        assert_eq!(clash.check(), Err(FormatError::DecimalIsDelimiter));
        let european = CsvFormat {
            delimiter: b';',
            decimal_comma: true,
        };
        assert_eq!(european.check(), Ok(()));
        assert_eq!(european.clauses(), "DELIMITER ';' DECIMAL ','");
        assert_eq!(european.key_mark(), "~delimiter:3b~decimal:comma");
    }

    #[test]
    fn a_one_field_header_holding_a_separator_is_named_with_a_hint() {
        assert_eq!(
            one_field_hint("name;age", b','),
            Some("`name;age`: if `;` separates its fields, LOAD it with DELIMITER ';'".into())
        );
        assert_eq!(
            one_field_hint("a,b", b';').as_deref(),
            Some("`a,b`: if `,` separates its fields, LOAD it with DELIMITER ','")
        );
        assert_eq!(one_field_hint("a;b", b';'), None);
        assert_eq!(one_field_hint("name", b','), None);
        let long = format!("{};x", "é".repeat(100));
        let hint = one_field_hint(&long, b',').expect("a hint");
        assert!(
            hint.starts_with(&format!("`{}...`", "é".repeat(60))),
            "{hint}"
        );
    }

    #[test]
    fn tsv_files_are_read_with_tabs_by_default() {
        assert_eq!(CsvFormat::for_path(Path::new("a/b.TSV")).delimiter, b'\t');
        assert_eq!(
            CsvFormat::for_path(Path::new("b.tsv")).clauses(),
            "DELIMITER '\\t'"
        );
        assert!(CsvFormat::for_path(Path::new("b.csv")).is_default());
        assert!(CsvFormat::for_path(Path::new("tsv")).is_default());
        assert_eq!(CsvFormat::default().key_mark(), "");
        assert_eq!(CsvFormat::default().clauses(), "");
        let pipe = CsvFormat {
            delimiter: b'|',
            decimal_comma: false,
        };
        assert!(!pipe.key_mark().contains('|'));
    }
}
