//! `LOAD`, `USE`, `DESCRIBE` and `SHOW TABLES`: tables, their public facts and their ledgers.

use super::{cubes, Entry, Session, DEFAULT_BUDGET};
use crate::data::{self, DataError, LoadOptions, Source as Rows};
use crate::error::EvalError;
use crate::output::{Budget, Output, TableInfo};
use crate::privacy::{Fresh, History, LedgerId, Neighbours, OpenError, Unit};
use crate::span::Span;
use crate::sys::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Where a table comes from, as `LOAD` says.
pub(super) struct Source {
    /// The file (with `database`, the engine's connection string, never shown).
    pub(super) path: PathBuf,
    /// `POSTGRES ... TABLE name` or `SPARK ... TABLE name`: the database table.
    pub(super) database: Option<crate::ast::Database>,
    /// Where the path was written.
    pub(super) path_span: Span,
    /// Whether the first row names the columns.
    pub(super) header: bool,
    /// The delimiter and decimal mark of a CSV file.
    pub(super) format: data::CsvFormat,
    /// The neighbour model asked for.
    pub(super) neighbours: Option<Neighbours>,
    /// The privacy unit asked for.
    pub(super) unit: Option<Unit>,
    /// `COLUMNS (...)`: the declared schema, read as the served datasets' is.
    pub(super) columns: Option<Vec<data::Declared>>,
}

/// Rows handed over in memory for a `LOAD` of `shown` ([`Session::give`]).
pub(super) struct Given {
    pub(super) shown: String,
    pub(super) table: data::Table,
    pub(super) content: [u8; 32],
}

impl Session {
    /// `LOAD 'path' AS name`: reads the file once, opens the ledger its content or path leads
    /// to, checks the table against what the ledger declares (its cube, its neighbour model)
    /// before anything is written, and restores the cube. In a seeded session the table's
    /// releases go to a practice copy of the ledger.
    pub(super) fn load(
        &mut self,
        source: Source,
        name: String,
        span: Span,
    ) -> Result<Output, EvalError> {
        if self.entries.iter().any(|e| e.name == name) {
            return Err(EvalError::TableExists { name, span });
        }
        let Source {
            path,
            database,
            path_span,
            header,
            format,
            neighbours,
            unit,
            columns,
        } = source;
        let options = LoadOptions {
            header,
            format,
            columns,
            ..self.load_options.clone()
        };
        let (table, content, data_file, shown, mut warnings) = self
            .read(&path, database.as_ref(), &options)
            .map_err(|(shown, error)| EvalError::Load {
                path: shown,
                error,
                span: path_span,
            })?;
        let file_id = std::fs::metadata(&data_file)
            .ok()
            .filter(|_| database.is_none())
            .map(|m| (m.dev(), m.ino()));
        if let Some(u) = &unit {
            unit_column(&table, u, &name, span)?;
        }
        let fresh = Fresh {
            total: DEFAULT_BUDGET,
            neighbours,
            unit: unit.clone(),
            time: (self.clock)(),
        };
        let mut cube = None;
        let mut bounded = None;
        let reading = format.clauses();
        let accept = |h: &History| {
            let asked = (unit.as_ref(), header, reading.as_str());
            let in_force = unit_in_force(h, asked, neighbours, &name, span)?;
            bounded = in_force
                .map(|u| bounded_rows(&table, u, &name, span))
                .transpose()?;
            let rows = bounded.as_ref().unwrap_or(&table);
            let read = (header, reading.clone());
            accept(h, rows, &name, read, neighbours, &mut cube, span)
        };
        let opened = self
            .ledgers
            .open(&data_file, &content, fresh, accept)
            .map_err(|e| match e {
                OpenError::Ledger(error) => EvalError::Ledger { error, span },
                OpenError::Refused(e) => e,
            })?;
        let table = bounded.unwrap_or(table);
        let unit = self.ledgers.get(opened.ledger).history().unit().cloned();
        let (ledger, private) = self.seeded_ledger(opened.ledger);
        self.entries.push(Entry {
            name,
            path: shown,
            data_file,
            file_id,
            table: std::sync::Arc::new(table),
            ledger,
            private,
            fingerprint: opened.fingerprint,
            content: hex(&content),
            changed: opened.changed,
            header,
            format,
            schema: schema_mark(options.columns.as_deref()),
            declared: options.columns.clone().unwrap_or_default(),
            unit,
            cube,
            rules: None,
            asked: Default::default(),
            values: Default::default(),
        });
        let i = self.entries.len() - 1;
        self.current = Some(i);
        self.teaching_focus = false;
        let mut info = self.info(i);
        warnings.extend(opened.warnings);
        info.warnings = warnings;
        Ok(Output::Loaded(info))
    }

    /// Reads what `LOAD` names: a database table, rows handed over for this path
    /// ([`Session::give`]), or files. Rows handed over are taken whatever happens.
    fn read(
        &mut self,
        path: &Path,
        database: Option<&crate::ast::Database>,
        options: &LoadOptions,
    ) -> Result<Read, (String, DataError)> {
        let given = self
            .given
            .take()
            .filter(|g| database.is_none() && Path::new(&g.shown) == path);
        match (database, given) {
            (Some(d), _) if d.engine == crate::ast::Engine::Spark => {
                read_spark(path, &d.parts(), options.header)
            }
            (Some(d), _) => read_postgres(path, &d.parts().join("."), options.header),
            (None, Some(given)) => read_given(given, options),
            (None, None) => read_table(path, options),
        }
    }

    /// Where a table's releases go: its data's ledger, or in a seeded session (over a state
    /// directory) a practice copy of it, with the data's own ledger kept to be marked exposed.
    pub(super) fn seeded_ledger(&mut self, own: LedgerId) -> (LedgerId, Option<LedgerId>) {
        if self.seed.is_none() || self.practice() {
            return (own, None);
        }
        // A practice copy follows its data's privacy unit while it has no release of its own.
        let stale = self.practice_of.get(&own).is_some_and(|&copy| {
            let c = self.ledgers.get(copy).history();
            c.releases().is_empty() && c.unit() != self.ledgers.get(own).history().unit()
        });
        let copy = match self.practice_of.get(&own) {
            Some(&copy) if !stale => copy,
            _ => {
                let copy = self.ledgers.practice_copy(own);
                self.practice_of.insert(own, copy);
                copy
            }
        };
        (copy, Some(own))
    }

    /// `USE name`.
    pub(super) fn use_table(&mut self, table: &str) -> Output {
        let i = self.index(table);
        self.current = Some(i);
        self.teaching_focus = false;
        Output::Using(self.info(i))
    }

    /// The public facts of table `i`.
    pub(super) fn info(&self, i: usize) -> TableInfo {
        let e = &self.entries[i];
        let history = self.ledgers.get(e.ledger).history();
        TableInfo {
            name: e.name.clone(),
            path: e.path.clone(),
            n: (history.neighbours() == Neighbours::Replace).then(|| e.table.n_rows()),
            neighbours: history.neighbours(),
            unit: e.unit.clone(),
            accounting: history.accounting(),
            columns: e.table.schema(),
            budget: Budget {
                total: history.total(),
                spent: history.spent(),
                remaining: history.remaining(),
            },
            current: self.current == Some(i),
            data_changed: e.changed,
            warnings: Vec::new(),
        }
    }

    /// Whether `path` is the file of a loaded table (the same file under any name).
    pub(super) fn is_data_file(&self, path: &Path) -> bool {
        let resolved = std::fs::canonicalize(path).ok();
        let id = std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
        self.entries.iter().any(|e| {
            resolved.as_deref() == Some(e.data_file.as_path()) || (id.is_some() && id == e.file_id)
        })
    }
}

/// A table's rows as `LOAD` reads them: the rows, the BLAKE3 identity of their data, the
/// path their ledger is kept for, the name shown, and warnings.
type Read = (Rows, [u8; 32], PathBuf, String, Vec<String>);

/// Reads a table's rows with the plain BLAKE3 hash of their bytes: a CSV file once into
/// memory, Parquet files (a `.parquet` file, a directory or a pattern) by their metadata,
/// their rows read again at each question.
fn read_table(path: &Path, options: &LoadOptions) -> Result<Read, (String, DataError)> {
    let shown = path.display().to_string();
    let data_file = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let fail = |e| (shown.clone(), e);
    #[cfg(feature = "native")]
    if data::is_parquet_path(path) {
        if !options.header {
            return Err(fail(no_header("a Parquet file")));
        }
        if options.columns.is_some() {
            // The checker refuses this first; kept so no plan reads Parquet as declared.
            return Err(fail(DataError::Io {
                path: String::new(),
                message: "COLUMNS is for CSV files: Parquet data names and types its own columns"
                    .to_string(),
            }));
        }
        let table = data::open_parquet(path).map_err(fail)?;
        let content = data::parquet_content(&table).map_err(fail)?;
        return Ok((Rows::Parquet(table), content, data_file, shown, Vec::new()));
    }
    let loaded = data::load_csv(path, options).map_err(fail)?;
    let content = loaded.content.bytes();
    let warnings = delimiter_hint(&loaded.table, options).into_iter().collect();
    Ok((
        Rows::Memory(loaded.table),
        content,
        data_file,
        shown,
        warnings,
    ))
}

/// A hint for a file read as one column whose name holds a character that separates the
/// fields of other files (`;`, `|`, `,`): most likely its fields are separated by it
/// ([`data::one_field_hint`]). Only the header is looked at, which is public (the schema); a
/// name never holds a tab (a header with a control character is refused, and that error's
/// help names `DELIMITER '\t'`). With `NO HEADER` there is no hint: the one column is `c1`,
/// and whether its cells hold such a character is a fact about the data, which no warning
/// may tell.
fn delimiter_hint(table: &data::Table, options: &LoadOptions) -> Option<String> {
    if !options.header || options.columns.is_some() || table.n_columns() != 1 {
        return None;
    }
    let hint = data::one_field_hint(table.column_name(0), options.format.delimiter)?;
    Some(format!("the file has one column, named {hint}"))
}

/// Rows handed over in memory: their ledger is found by their content alone (the store names
/// them by their content's keyed fingerprint, so no two contents share a path).
fn read_given(given: Given, options: &LoadOptions) -> Result<Read, (String, DataError)> {
    let Given {
        shown,
        table,
        content,
    } = given;
    let refuse = |what: &str| {
        Err((
            shown.clone(),
            DataError::Io {
                path: String::new(),
                message: format!(
                    "{what} is for CSV files: rows in memory name and type their own columns"
                ),
            },
        ))
    };
    if !options.header {
        return refuse("NO HEADER");
    }
    if options.columns.is_some() {
        return refuse("COLUMNS");
    }
    if !options.format.is_default() {
        return refuse("DELIMITER or DECIMAL");
    }
    let data_file = PathBuf::from(crate::privacy::HELD_ROWS);
    Ok((Rows::Memory(table), content, data_file, shown, Vec::new()))
}

#[cfg_attr(not(feature = "native"), allow(dead_code))]
fn no_header(what: &str) -> DataError {
    DataError::Io {
        path: String::new(),
        message: format!("NO HEADER is for CSV files: {what} names its columns"),
    }
}

/// Connects to a PostgreSQL table and reads its schema and row count. Its ledger is kept for
/// its server (by the server's own system identifier), database and schema-qualified name,
/// never the connection string, which can hold a password and can spell one server many
/// ways: a live table has no bytes to hash.
#[cfg(not(feature = "native"))]
fn read_postgres(_: &Path, relation: &str, _: bool) -> Result<Read, (String, DataError)> {
    Err((
        format!("PostgreSQL table {}", data::escape_name(relation)),
        DataError::Io {
            path: String::new(),
            message: "this build of dpq reads CSV data only".to_string(),
        },
    ))
}

#[cfg(feature = "native")]
fn read_postgres(
    conninfo: &Path,
    relation: &str,
    header: bool,
) -> Result<Read, (String, DataError)> {
    let shown = format!("PostgreSQL table {}", data::escape_name(relation));
    if !header {
        return Err((shown, no_header("a database table")));
    }
    let opened = data::open_postgres(&conninfo.to_string_lossy(), relation)
        .map_err(|e| (shown.clone(), e))?;
    let content = data::postgres_content(&opened.key);
    let warnings = opened
        .left_out
        .iter()
        .map(|c| {
            format!(
                "column {} is left out: dpq reads integer, float, numeric, boolean, text and varchar columns of PostgreSQL (or its name holds a control character)",
                data::escape_name(c)
            )
        })
        .collect();
    let data_file = PathBuf::from(format!("postgres://{}", opened.identity));
    Ok((
        Rows::Postgres(Box::new(opened.table)),
        content,
        data_file,
        shown,
        warnings,
    ))
}

/// Connects to a Spark table through Spark Connect and reads its schema and row count. Its
/// ledger is kept for where its data lies, as Spark says (the same files whatever host asks
/// for them), or for its server and name as Spark resolves it; never the connection string.
#[cfg(not(feature = "spark"))]
fn read_spark(_: &Path, table: &[String], _: bool) -> Result<Read, (String, DataError)> {
    Err((
        format!("Spark table {}", data::escape_name(&table.join("."))),
        DataError::Io {
            path: String::new(),
            message: "this build of dpq has no Spark: build it with `cargo build --features spark`"
                .to_string(),
        },
    ))
}

#[cfg(feature = "spark")]
fn read_spark(url: &Path, table: &[String], header: bool) -> Result<Read, (String, DataError)> {
    let shown = format!("Spark table {}", data::escape_name(&table.join(".")));
    if !header {
        return Err((shown, no_header("a Spark table")));
    }
    let opened = data::open_spark(&url.to_string_lossy(), table).map_err(|e| (shown.clone(), e))?;
    let content = data::spark_content(&opened.key);
    let warnings = opened
        .left_out
        .iter()
        .map(|c| {
            format!(
                "column {} is left out: dpq reads integer, float, decimal, boolean and string columns of Spark (or its name holds a control character)",
                data::escape_name(c)
            )
        })
        .collect();
    let data_file = PathBuf::from(format!("spark://{}", opened.identity));
    Ok((
        Rows::Spark(Box::new(opened.table)),
        content,
        data_file,
        shown,
        warnings,
    ))
}

/// Judges a table against its ledger as read, before anything is written: the cube the
/// ledger declares must fit the table, and a neighbour model asked for must be the ledger's,
/// or the ledger must have no release yet.
pub(super) fn accept(
    history: &History,
    table: &Rows,
    name: &str,
    read: (bool, String),
    neighbours: Option<Neighbours>,
    cube: &mut Option<crate::cube::Cube>,
    span: Span,
) -> Result<(), EvalError> {
    if let Some(asked) = neighbours {
        // A ledger made by this LOAD has the model asked; one under `replace` was made by a
        // LOAD (or a curator's dataset) that showed the exact n.
        if asked == Neighbours::AddRemove && history.neighbours() == Neighbours::Replace {
            return Err(EvalError::CountShown {
                table: name.to_string(),
                span,
            });
        }
        let releases = history.releases().len();
        if asked != history.neighbours() && releases > 0 {
            return Err(EvalError::NeighboursFixed {
                table: name.to_string(),
                current: history.neighbours().to_string(),
                releases,
                span,
            });
        }
    }
    cubes::check_refinements(history, table, name)
        .map_err(|message| EvalError::CubeUnusable { message, span })?;
    *cube = cubes::restore_cube(history.cube(), table, name, read)
        .map_err(|message| EvalError::CubeUnusable { message, span })?;
    Ok(())
}

/// The mark a declared schema puts in its releases' keys: `~columns:` and a hash of the
/// declaration; nothing for a schema read from the file.
fn schema_mark(columns: Option<&[data::Declared]>) -> String {
    columns
        .map(|c| {
            let hash = blake3::hash(format!("{c:?}").as_bytes());
            format!("~columns:{}", &hash.to_hex()[..16])
        })
        .unwrap_or_default()
}

/// `table`'s rows with at most `u.max_rows` of each of `u`'s units kept, which needs the rows
/// in memory.
fn bounded_rows(table: &Rows, u: &Unit, name: &str, span: Span) -> Result<Rows, EvalError> {
    let c = unit_column(table, u, name, span)?;
    let rows = table.in_memory().ok_or_else(|| EvalError::UnitSource {
        table: name.to_string(),
        kind: table.kind().to_string(),
        span,
    })?;
    Ok(Rows::Memory(data::bound_units(rows, c, u.max_rows)))
}

/// The index of a unit's column in `table`: a public fact of the schema.
fn unit_column(table: &Rows, unit: &Unit, name: &str, span: Span) -> Result<usize, EvalError> {
    table
        .column_index(&unit.column)
        .filter(|&c| table.column_name(c) == unit.column)
        .ok_or_else(|| EvalError::UnitColumn {
            column: crate::data::escape_name(&unit.column).into_owned(),
            table: name.to_string(),
            span,
        })
}

/// The privacy unit a table is read with: the one asked for, else the one its data's ledger
/// records. A unit other than the recorded one is refused once anything was released (the
/// releases were accounted with the recorded one), as is `NEIGHBOURS replace` for data with
/// a unit, and a recorded unit over a table that reads the file otherwise (`header`, and the
/// clauses of its delimiter and decimal mark, `reading`): its column's name may name another
/// column there, or its values group other rows.
pub(super) fn unit_in_force<'a>(
    history: &'a History,
    (asked, header, reading): (Option<&'a Unit>, bool, &str),
    neighbours: Option<Neighbours>,
    name: &str,
    span: Span,
) -> Result<Option<&'a Unit>, EvalError> {
    // A seeded release exposed the data: it was answered under the recorded unit too.
    let released = !history.releases().is_empty() || history.exposed();
    let shown = crate::output::unit_text;
    if asked.is_some() && asked != history.unit() && released {
        return Err(EvalError::UnitFixed {
            table: name.to_string(),
            current: shown(history.unit()),
            span,
        });
    }
    let in_force = asked.or(history.unit());
    if let Some(u) = in_force.filter(|u| u.header != header || u.reading != reading) {
        return Err(EvalError::UnitReading {
            table: name.to_string(),
            unit: crate::output::unit_clause(u),
            span,
        });
    }
    if let (Some(u), Some(Neighbours::Replace)) = (in_force, neighbours) {
        return Err(EvalError::UnitModel {
            table: name.to_string(),
            unit: crate::output::unit_clause(u),
            span,
        });
    }
    Ok(in_force)
}

pub(super) fn hex(bytes: &[u8; 32]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
