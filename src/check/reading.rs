//! Checking how `LOAD` reads its source: `DELIMITER` and `DECIMAL` for CSV text, refused elsewhere.

use crate::ast::{Engine, Text};
use crate::data::{self, CsvFormat};
use crate::error::CheckError;
use std::path::Path;

/// What a source that is not CSV text is, in words (`Parquet data`, `a PostgreSQL table`);
/// `None` for a CSV file.
pub(super) fn source_kind(path: &str, database: Option<Engine>) -> Option<&'static str> {
    #[cfg(feature = "native")]
    let parquet = database.is_none() && data::is_parquet_path(Path::new(path));
    #[cfg(not(feature = "native"))]
    let parquet = {
        let _ = path;
        false
    };
    if let Some(engine) = database {
        Some(match engine {
            Engine::Postgres => "a PostgreSQL table",
            Engine::Spark => "a Spark table",
        })
    } else if parquet {
        Some("Parquet data")
    } else {
        None
    }
}

/// `DELIMITER 'c'` and `DECIMAL ','`: the format a CSV file is read with, by default the one
/// its name gives (a tab between the fields of a `.tsv` file). Each clause is checked where it
/// is written; a decimal comma with `,` between fields too (written, or a `.csv` file's
/// default) is refused at `DECIMAL`.
pub(super) fn check_format(
    path: &str,
    database: Option<Engine>,
    delimiter: Option<&Text>,
    decimal: Option<&Text>,
) -> Result<CsvFormat, CheckError> {
    let clauses = [("DELIMITER", delimiter), ("DECIMAL", decimal)];
    if let Some(source_kind) = source_kind(path, database) {
        return match clauses.into_iter().find_map(|(c, t)| Some((c, t?))) {
            Some((clause, text)) => Err(CheckError::NotCsvText {
                clause,
                source_kind,
                span: text.span,
            }),
            None => Ok(CsvFormat::default()),
        };
    }
    let bad = |text: &Text| {
        let span = text.span;
        move |error| CheckError::CsvFormat { error, span }
    };
    let mut format = CsvFormat::for_path(Path::new(path));
    if let Some(text) = delimiter {
        format.delimiter = data::delimiter_byte(&text.value).map_err(bad(text))?;
    }
    if let Some(text) = decimal {
        format.decimal_comma = data::decimal_comma(&text.value).map_err(bad(text))?;
        format.check().map_err(bad(text))?;
    }
    Ok(format)
}
