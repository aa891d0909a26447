//! The in-memory column store: CSV loading with type inference, schemas, and counting by predicate.
//!
//! A [`Table`] is loaded once by [`load_csv`], which also gives the [`ContentHash`] of the
//! very bytes it parsed (the file is read once), and never changes afterwards. Its cells are
//! private: the public API exposes the schema and the public row count, and [`count`] gives
//! the true number of rows matching a [`Predicate`], which the evaluator only ever uses to add
//! noise to. No error, `Debug` or `Display` output of this module contains a cell value.
//!
//! Storage is columnar and split into segments (of at most 65,536 rows of a CSV file, each
//! parallel load chunk cut into them as it is parsed; a batch of a Parquet file): integers as
//! offsets from the segment's least value in lanes of 8, 16, 32 or 64 bits (the narrowest
//! that holds them), floats as `f64` vectors, booleans as bitmaps, text as codes into one
//! sorted dictionary per column (lanes as narrow as the dictionary allows), and a validity
//! bitmap per column where cells are missing.

#[cfg(feature = "native")]
mod arrow;
mod bitmap;
mod cells;
mod content;
mod count;
mod error;
mod format;
mod intern;
mod lanes;
mod load;
mod open;
#[cfg(feature = "native")]
mod pages;
#[cfg(feature = "native")]
mod parquet;
mod parse;
#[cfg(feature = "native")]
mod postgres;
mod predicate;
#[cfg(feature = "native")]
mod prune;
#[cfg(test)]
mod rng;
mod schema;
mod source;
mod sources;
#[cfg(feature = "spark")]
mod spark;
#[cfg(feature = "native")]
mod sql;
mod table;
mod units;
mod values;

#[cfg(feature = "native")]
pub use arrow::from_batches;
pub use cells::{count_cells, Buckets};
pub use content::ContentHash;
pub use count::{clamped_values, count, count_work, sum_clamped, Clamp};
pub use error::{escape_controls, escape_json_format, escape_name, DataError};
pub use format::{decimal_comma, delimiter_byte, one_field_hint, CsvFormat, FormatError};
pub use load::{load_csv, load_csv_bytes, LoadOptions, Loaded};
pub use open::provide_file;
#[cfg(feature = "native")]
pub use parquet::{
    is_parquet_path, open_parquet, parquet_content, parquet_file_hashes, parquet_files,
    ParquetTable,
};
#[cfg(feature = "native")]
pub use postgres::{open_postgres, postgres_content, PgOpened, PgTable};
pub use predicate::{CmpOp, Predicate, Value};
pub use schema::{Declared, Domain};
pub use sources::{Source, Work};
#[cfg(feature = "spark")]
pub use spark::{open_spark, spark_content, SparkOpened, SparkTable, TOKEN_VARIABLE};
pub use table::{ColumnType, Table};
pub use units::bound_units;
pub use values::value_hash;
