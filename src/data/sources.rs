//! `Source`: where a table's rows are, and the only questions that ever reach them.
//!
//! Whatever holds the rows (the in-memory column store of a CSV file, Parquet files streamed
//! at each question, a PostgreSQL table), dpq asks it three things: the number of rows where a
//! condition holds, the number in every cell of a cube, and a clamped sum. The answers are
//! exact integers, for the privacy layer to add noise to; the schema and, under `replace`,
//! the row count are the public facts. A source that reads its rows again at a question can
//! fail then; the evaluator asks it before anything is spent, so a failure changes nothing.

use super::cells::{count_cells, Buckets};
use super::count::{clamped_values, count, count_work, sum_clamped, Clamp};
use super::error::DataError;
#[cfg(feature = "native")]
use super::parquet::ParquetTable;
#[cfg(feature = "native")]
use super::postgres::PgTable;
use super::predicate::Predicate;
#[cfg(feature = "spark")]
use super::spark::SparkTable;
use super::table::{ColumnType, Table};

/// The work a question took (see [`Source::count_work`]).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    /// Cells read by the condition's tests (a cell read by two tests counts twice).
    pub cells: u64,
    /// Segments of the column store, or Parquet row groups read.
    pub groups: u64,
    /// Rows read.
    pub rows: u64,
}

/// A table's rows, wherever they are.
#[derive(Debug)]
pub enum Source {
    /// A CSV file read once into the column store.
    Memory(Table),
    /// Parquet files, read again at each question.
    #[cfg(feature = "native")]
    Parquet(ParquetTable),
    /// A PostgreSQL table: each question is sent to the database as one SQL statement.
    #[cfg(feature = "native")]
    Postgres(Box<PgTable>),
    /// A Spark table: each question is sent to Spark as one aggregate query.
    #[cfg(feature = "spark")]
    Spark(Box<SparkTable>),
}

impl From<Table> for Source {
    fn from(t: Table) -> Self {
        Source::Memory(t)
    }
}

impl Source {
    /// The schema and row count (for a streamed source, a table with no rows).
    fn shell(&self) -> &Table {
        match self {
            Source::Memory(t) => t,
            #[cfg(feature = "native")]
            Source::Parquet(p) => p.shell(),
            #[cfg(feature = "native")]
            Source::Postgres(p) => p.shell(),
            #[cfg(feature = "spark")]
            Source::Spark(s) => s.shell(),
        }
    }

    /// The rows in memory, when they are.
    pub fn in_memory(&self) -> Option<&Table> {
        match self {
            Source::Memory(t) => Some(t),
            #[cfg(feature = "native")]
            Source::Parquet(_) | Source::Postgres(_) => None,
            #[cfg(feature = "spark")]
            Source::Spark(_) => None,
        }
    }

    /// What holds the rows, in a word (`csv`, `parquet`).
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Memory(_) => "csv",
            #[cfg(feature = "native")]
            Source::Parquet(_) => "parquet",
            #[cfg(feature = "native")]
            Source::Postgres(_) => "postgres",
            #[cfg(feature = "spark")]
            Source::Spark(_) => "spark",
        }
    }

    /// The number of rows (public only under `replace`).
    pub fn n_rows(&self) -> u64 {
        self.shell().n_rows()
    }

    /// The number of columns.
    pub fn n_columns(&self) -> usize {
        self.shell().n_columns()
    }

    /// The name of column `i`. Panics when `i >= n_columns()`.
    pub fn column_name(&self, i: usize) -> &str {
        self.shell().column_name(i)
    }

    /// The type of column `i`. Panics when `i >= n_columns()`.
    pub fn column_type(&self, i: usize) -> ColumnType {
        self.shell().column_type(i)
    }

    /// The index of the column called `name` (see [`Table::column_index`]).
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.shell().column_index(name)
    }

    /// The column names and types, in order.
    pub fn schema(&self) -> Vec<(String, ColumnType)> {
        self.shell().schema()
    }

    /// The true number of rows where `pred` is true.
    ///
    /// Internal: the number must only ever be used to add noise to.
    pub fn count(&self, pred: &Predicate) -> Result<u64, DataError> {
        match self {
            Source::Memory(t) => Ok(count(t, pred)),
            #[cfg(feature = "native")]
            Source::Parquet(p) => p.count(pred),
            #[cfg(feature = "native")]
            Source::Postgres(p) => p.count(pred),
            #[cfg(feature = "spark")]
            Source::Spark(s) => s.count(pred),
        }
    }

    /// The true count of [`Self::count`], with the work it took: the cells its condition's
    /// tests read, and for Parquet files the row groups and rows read. For tests and
    /// benchmarks of constant work (a present and an absent value must cost the same); a
    /// Parquet table's counters are read before and after, so questions asked at the same
    /// time on the same table are counted too.
    ///
    /// Internal: the count must only ever be used to add noise to.
    #[doc(hidden)]
    pub fn count_work(&self, pred: &Predicate) -> Result<(u64, Work), DataError> {
        match self {
            Source::Memory(t) => {
                let (n, cells) = count_work(t, pred);
                let work = Work {
                    cells,
                    groups: t.segments.len() as u64,
                    rows: t.n_rows(),
                };
                Ok((n, work))
            }
            #[cfg(feature = "native")]
            Source::Parquet(p) => {
                let (groups, rows) = (p.groups_read(), p.rows_read());
                let (n, cells) = p.scan(
                    &pred.columns(),
                    Some(pred),
                    || (0, 0),
                    |t| count_work(t, pred),
                    |a, b| (a.0 + b.0, a.1 + b.1),
                )?;
                let work = Work {
                    cells,
                    groups: p.groups_read() - groups,
                    rows: p.rows_read() - rows,
                };
                Ok((n, work))
            }
            #[cfg(feature = "native")]
            Source::Postgres(p) => Ok((p.count(pred)?, Work::default())),
            #[cfg(feature = "spark")]
            Source::Spark(s) => Ok((s.count(pred)?, Work::default())),
        }
    }

    /// Makes what a question does depend on nothing but public facts (the source's size and
    /// layout, the schema, the question): Parquet files are then read whole at every
    /// question, never skipped on bounds found on their values. The column store always
    /// works so; a database plans its own work, which only padding the response hides.
    /// `dpq serve` asks this of every dataset.
    pub fn constant_work(&mut self) {
        match self {
            Source::Memory(_) => {}
            #[cfg(feature = "native")]
            Source::Parquet(p) => p.constant_work(),
            #[cfg(feature = "native")]
            Source::Postgres(_) => {}
            #[cfg(feature = "spark")]
            Source::Spark(_) => {}
        }
    }

    /// The true number of rows in every cell of a cube (see [`count_cells`]).
    ///
    /// Internal: the numbers must only ever be used to add noise to.
    pub fn count_cells(&self, dims: &[(usize, Buckets)]) -> Result<Vec<u64>, DataError> {
        match self {
            Source::Memory(t) => Ok(count_cells(t, dims)),
            #[cfg(feature = "native")]
            Source::Parquet(p) => p.count_cells(dims),
            #[cfg(feature = "native")]
            Source::Postgres(p) => p.count_cells(dims),
            #[cfg(feature = "spark")]
            Source::Spark(s) => s.count_cells(dims),
        }
    }

    /// The true clamped sum of `column` where `pred` holds, and the rows that contributed
    /// (see [`sum_clamped`]).
    ///
    /// Internal: the numbers must only ever be used to add noise to.
    pub fn sum_clamped(
        &self,
        column: usize,
        pred: Option<&Predicate>,
        clamp: Clamp,
    ) -> Result<(i128, u64), DataError> {
        match self {
            Source::Memory(t) => Ok(sum_clamped(t, column, pred, clamp)),
            #[cfg(feature = "native")]
            Source::Parquet(p) => {
                let mut needed = pred.map(Predicate::columns).unwrap_or_default();
                needed.push(column);
                p.scan(
                    &needed,
                    pred,
                    || (0, 0),
                    |t| sum_clamped(t, column, pred, clamp),
                    |a, b| (a.0.saturating_add(b.0), a.1 + b.1),
                )
            }
            #[cfg(feature = "native")]
            Source::Postgres(p) => p.sum_clamped(column, pred, clamp),
            #[cfg(feature = "spark")]
            Source::Spark(s) => s.sum_clamped(column, pred, clamp),
        }
    }

    /// The values of `column` clamped as `clamp` says, in grid steps, over the rows where
    /// `pred` holds and the value is present (see [`clamped_values`]), for an order
    /// statistic. A PostgreSQL or Spark table answers counts and sums only: `None`.
    ///
    /// Internal: the values must only ever be used to add noise to a statistic of them.
    pub fn clamped_values(
        &self,
        column: usize,
        pred: Option<&Predicate>,
        clamp: Clamp,
    ) -> Result<Option<Vec<i128>>, DataError> {
        match self {
            Source::Memory(t) => Ok(Some(clamped_values(t, column, pred, clamp))),
            #[cfg(feature = "native")]
            Source::Parquet(p) => {
                let mut needed = pred.map(Predicate::columns).unwrap_or_default();
                needed.push(column);
                p.scan(
                    &needed,
                    pred,
                    Vec::new,
                    |t| clamped_values(t, column, pred, clamp),
                    |mut a, b| {
                        a.extend(b);
                        a
                    },
                )
                .map(Some)
            }
            #[cfg(feature = "native")]
            Source::Postgres(_) => Ok(None),
            #[cfg(feature = "spark")]
            Source::Spark(_) => Ok(None),
        }
    }
}
