//! A PostgreSQL table whose rows stay in the database: each question is compiled to one SQL
//! statement that returns exact integers, and nothing else of the rows ever leaves the
//! server.
//!
//! Only three shapes are sent, every literal a bound parameter and no cast or arithmetic on a
//! column in a condition:
//!
//! - `SELECT count(*), count(*) FILTER (WHERE <condition>) FROM t`;
//! - `SELECT <cell>, count(*) FROM t GROUP BY 1`, the cell a `CASE` over the cube's columns;
//! - `SELECT count(*), sum(<clamped value>) FILTER (...), count(col) FILTER (...) FROM t`.
//!
//! SQL's three-valued logic is dpq's: a comparison with a missing value (NULL) is unknown,
//! `NOT` of unknown is unknown, and `WHERE` and `FILTER` count the rows where the condition
//! is true. Text is compared in the `C` collation, which is UTF-8 byte order, as in the
//! column store. Each question also counts every row, in the same scan and the same
//! snapshot: a table whose row count changed since `LOAD` is refused (its public `n` and its
//! ledger are for the rows it had).
//!
//! An error from the server never reaches the user: it can quote a value of the table (a
//! failing cast prints the offending value). It becomes a fixed message with its SQLSTATE
//! code.

use std::sync::Mutex;

use postgres::types::ToSql;
use postgres::{Client, Config, NoTls};

use super::cells::Buckets;
use super::count::Clamp;
use super::error::{has_controls, DataError};
use super::predicate::{CmpOp, Predicate, Value};
use super::table::{ColumnType, Dictionary, Table};

/// A database table, asked again at each question.
pub struct PgTable {
    /// The schema and the row count at `LOAD`, with no rows.
    shell: Table,
    /// The table as SQL names it (a quoted identifier).
    relation: String,
    /// Each column as SQL names it (quoted).
    columns: Vec<String>,
    client: Mutex<Client>,
}

impl std::fmt::Debug for PgTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTable")
            .field("relation", &self.relation)
            .field("shell", &self.shell)
            .finish_non_exhaustive()
    }
}

/// What `LOAD POSTGRES` found: the table, the identity of its data, and the columns left out.
pub struct PgOpened {
    /// The table.
    pub table: PgTable,
    /// `host:port/database/table`: what the table's ledger is keyed by (never the password).
    pub identity: String,
    /// Columns of types dpq does not read from PostgreSQL, left out of the schema.
    pub left_out: Vec<String>,
}

/// A name quoted as an SQL identifier.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The fixed message for a failure of the server or the connection. The server's own text
/// is never shown: it can quote a value of the table.
fn failed(what: &str, e: &postgres::Error) -> DataError {
    let code = e
        .code()
        .map(|c| format!(" (SQLSTATE {})", c.code()))
        .unwrap_or_default();
    DataError::Io {
        path: what.to_string(),
        message: format!("the database could not answer{code}"),
    }
}

/// The dpq type of a PostgreSQL type, by its name; `None` for types dpq leaves out.
fn column_type(typname: &str) -> Option<ColumnType> {
    Some(match typname {
        "int2" | "int4" | "int8" => ColumnType::Integer,
        "float4" | "float8" | "numeric" => ColumnType::Float,
        "bool" => ColumnType::Boolean,
        "text" | "varchar" => ColumnType::Text,
        _ => return None,
    })
}

/// The identity of a table: its server, database and name, never the credentials.
fn identity(config: &Config, table: &str) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            postgres::config::Host::Tcp(name) => name.clone(),
            postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".to_string());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or_default();
    format!("{host}:{port}/{db}/{table}")
}

/// Connects to the database `conninfo` names and reads the schema and row count of `table`.
pub fn open_postgres(conninfo: &str, table: &str) -> Result<PgOpened, DataError> {
    let what = format!("PostgreSQL table {}", super::escape_name(table));
    let config: Config = conninfo.parse().map_err(|_| DataError::Io {
        path: what.clone(),
        message: "the connection string does not read (key=value pairs or a postgres:// URL)"
            .to_string(),
    })?;
    let mut client = config.connect(NoTls).map_err(|e| DataError::Io {
        path: what.clone(),
        message: format!(
            "cannot connect to the database{}",
            e.code()
                .map(|c| format!(" (SQLSTATE {})", c.code()))
                .unwrap_or_default()
        ),
    })?;
    let relation = quote(table);
    let rows = client
        .query(
            "SELECT a.attname::text, t.typname::text FROM pg_attribute a \
             JOIN pg_type t ON t.oid = a.atttypid \
             WHERE a.attrelid = to_regclass($1::text) AND a.attnum > 0 AND NOT a.attisdropped \
             ORDER BY a.attnum",
            &[&relation],
        )
        .map_err(|e| failed(&what, &e))?;
    let (mut names, mut types, mut columns, mut left_out) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for row in &rows {
        let name: String = row.get(0);
        let typname: String = row.get(1);
        match column_type(&typname) {
            Some(t) if !has_controls(&name) => {
                columns.push(quote(&name));
                names.push(name);
                types.push(t);
            }
            _ => left_out.push(name),
        }
    }
    if rows.is_empty() {
        return Err(DataError::Io {
            path: what,
            message: "no table of that name is visible to this connection".to_string(),
        });
    }
    let n: i64 = client
        .query_one(&format!("SELECT count(*) FROM {relation}"), &[])
        .map_err(|e| failed(&what, &e))?
        .get(0);
    let dictionaries = vec![Dictionary::default(); names.len()];
    Ok(PgOpened {
        identity: identity(&config, table),
        table: PgTable {
            shell: Table {
                names,
                types,
                dictionaries,
                segments: Vec::new(),
                n_rows: u64::try_from(n).unwrap_or(0),
            },
            relation,
            columns,
            client: Mutex::new(client),
        },
        left_out,
    })
}

/// An SQL statement under construction: its text and its bound parameters.
#[derive(Default)]
struct Sql {
    text: String,
    params: Vec<Box<dyn ToSql + Sync>>,
}

impl Sql {
    /// Binds `value` as a parameter of SQL type `ty` and returns its placeholder.
    fn param(&mut self, value: impl ToSql + Sync + 'static, ty: &str) -> String {
        self.params.push(Box::new(value));
        format!("${}::{ty}", self.params.len())
    }

    /// Binds `value` and writes its placeholder, typed so that no column is cast for it.
    fn bind(&mut self, value: &Value) {
        let placeholder = match value {
            Value::Number(x) => self.param(*x, "float8"),
            Value::Text(s) => self.param(s.clone(), "text"),
            Value::Bool(b) => self.param(*b, "bool"),
        };
        self.text.push_str(&placeholder);
    }

    fn push(&mut self, s: &str) {
        self.text.push_str(s);
    }
}

impl PgTable {
    /// The schema and row count, as a table with no rows.
    pub fn shell(&self) -> &Table {
        &self.shell
    }

    /// A column as a condition reads it: text in the `C` collation (UTF-8 byte order).
    fn operand(&self, column: usize) -> String {
        match self.shell.types[column] {
            ColumnType::Text => format!("{} COLLATE \"C\"", self.columns[column]),
            _ => self.columns[column].clone(),
        }
    }

    /// Writes `pred` as an SQL condition.
    fn condition(&self, pred: &Predicate, sql: &mut Sql) {
        match pred {
            Predicate::Compare { column, op, value } => {
                sql.push(&format!("({} {} ", self.operand(*column), op_text(*op)));
                sql.bind(value);
                sql.push(")");
            }
            Predicate::In { column, values } => {
                sql.push(&format!("({} IN (", self.operand(*column)));
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        sql.push(", ");
                    }
                    sql.bind(v);
                }
                sql.push("))");
            }
            Predicate::Between { column, low, high } => {
                sql.push(&format!("({} BETWEEN ", self.operand(*column)));
                sql.bind(low);
                sql.push(" AND ");
                sql.bind(high);
                sql.push(")");
            }
            Predicate::And(a, b) | Predicate::Or(a, b) => {
                let word = if matches!(pred, Predicate::And(..)) {
                    " AND "
                } else {
                    " OR "
                };
                sql.push("(");
                self.condition(a, sql);
                sql.push(word);
                self.condition(b, sql);
                sql.push(")");
            }
            Predicate::Not(a) => {
                sql.push("(NOT ");
                self.condition(a, sql);
                sql.push(")");
            }
        }
    }

    /// Runs `sql` in one read-only snapshot; its first column must be the count of every
    /// row, which must still be the `n` of `LOAD`.
    fn ask(&self, sql: &Sql) -> Result<Vec<postgres::Row>, DataError> {
        let what = format!("PostgreSQL table {}", self.relation);
        let mut client = self.client.lock().map_err(|_| DataError::Io {
            path: what.clone(),
            message: "the connection was lost".to_string(),
        })?;
        let params: Vec<&(dyn ToSql + Sync)> = sql.params.iter().map(|p| p.as_ref()).collect();
        let mut txn = client
            .build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(|e| failed(&what, &e))?;
        let rows = txn
            .query(&sql.text, &params)
            .map_err(|e| failed(&what, &e))?;
        txn.commit().map_err(|e| failed(&what, &e))?;
        Ok(rows)
    }

    /// An error unless `all` rows is the table's `n` at `LOAD`.
    fn unchanged(&self, all: i64) -> Result<(), DataError> {
        if u64::try_from(all).ok() == Some(self.shell.n_rows) {
            Ok(())
        } else {
            Err(self.changed())
        }
    }

    /// The error for a table whose rows changed since `LOAD`.
    fn changed(&self) -> DataError {
        DataError::Changed {
            path: format!("PostgreSQL table {}", self.relation),
        }
    }

    /// The true number of rows where `pred` is true.
    pub fn count(&self, pred: &Predicate) -> Result<u64, DataError> {
        let mut sql = Sql::default();
        sql.push("SELECT count(*), count(*) FILTER (WHERE ");
        self.condition(pred, &mut sql);
        sql.push(&format!(") FROM {}", self.relation));
        let rows = self.ask(&sql)?;
        let row = rows.first().ok_or_else(|| self.changed())?;
        self.unchanged(row.get(0))?;
        Ok(u64::try_from(row.get::<_, i64>(1)).unwrap_or(0))
    }

    /// One dimension's coordinate of a row, as an SQL expression (see `count_cells`).
    fn coordinate(&self, column: usize, buckets: &Buckets, sql: &mut Sql) {
        let col = self.operand(column);
        sql.push(&format!(
            "(CASE WHEN {col} IS NULL THEN {}",
            buckets.len() - 1
        ));
        match buckets {
            Buckets::Cuts(cuts) => {
                for (i, cut) in cuts.iter().enumerate().rev() {
                    sql.push(&format!(" WHEN {col} >= "));
                    sql.bind(&Value::Number(*cut));
                    sql.push(&format!(" THEN {}", i + 1));
                }
                sql.push(" ELSE 0 END)");
            }
            Buckets::Values(values) => {
                for (i, v) in values.iter().enumerate() {
                    sql.push(&format!(" WHEN {col} = "));
                    sql.bind(v);
                    sql.push(&format!(" THEN {i}"));
                }
                sql.push(&format!(" ELSE {} END)", values.len()));
            }
        }
    }

    /// The true number of rows in every cell of a cube (numbered as `count_cells` does).
    pub fn count_cells(&self, dims: &[(usize, Buckets)]) -> Result<Vec<u64>, DataError> {
        let cells: usize = dims.iter().map(|(_, b)| b.len()).product();
        let mut sql = Sql::default();
        sql.push("SELECT (0");
        let mut stride = cells;
        for (column, buckets) in dims {
            stride /= buckets.len();
            sql.push(&format!(" + {stride} * "));
            self.coordinate(*column, buckets, &mut sql);
        }
        sql.push(&format!(
            ")::int8, count(*) FROM {} GROUP BY 1",
            self.relation
        ));
        let mut out = vec![0u64; cells];
        let mut all = 0i64;
        for row in self.ask(&sql)? {
            let (cell, n): (i64, i64) = (row.get(0), row.get(1));
            all += n;
            if let Some(slot) = usize::try_from(cell).ok().and_then(|c| out.get_mut(c)) {
                *slot = u64::try_from(n).unwrap_or(0);
            }
        }
        self.unchanged(all)?;
        Ok(out)
    }

    /// The true clamped sum of `column` where `pred` holds, on the grid `2^-k`, and the rows
    /// that contributed (see `sum_clamped`): each value clamped, scaled by `2^k` (exact) and
    /// rounded half away from zero as the column store does, then summed as integers.
    pub fn sum_clamped(
        &self,
        column: usize,
        pred: Option<&Predicate>,
        clamp: Clamp,
    ) -> Result<(i128, u64), DataError> {
        let col = &self.columns[column];
        let mut sql = Sql::default();
        let (term, k) = match clamp {
            Clamp::Int { lo, hi, k } => {
                let (lo, hi) = (sql.param(lo, "int8"), sql.param(hi, "int8"));
                (format!("least(greatest({col}, {lo}), {hi})"), k)
            }
            Clamp::Float { lo, hi, k } => {
                // y = clamp(x) 2^k is exact (a power of two); round() is half to even on
                // float8, so a tie (a fraction of exactly 1/2, computed exactly) goes away
                // from zero by hand; every other value rounds to its nearest integer.
                let (lo, hi) = (sql.param(lo, "float8"), sql.param(hi, "float8"));
                let scale = sql.param(2f64.powi(k as i32), "float8");
                let y = format!("(least(greatest({col}::float8, {lo}), {hi}) * {scale})");
                (
                    format!(
                        "(CASE WHEN {y} - trunc({y}) = 0.5 THEN trunc({y}) + 1 \
                         WHEN {y} - trunc({y}) = -0.5 THEN trunc({y}) - 1 ELSE round({y}) END)::int8"
                    ),
                    0,
                )
            }
        };
        let filter = |sql: &mut Sql| {
            sql.push(&format!(" FILTER (WHERE {col} IS NOT NULL"));
            if let Some(p) = pred {
                sql.push(" AND ");
                self.condition(p, sql);
            }
            sql.push(")");
        };
        sql.push(&format!("SELECT count(*), (sum({term})"));
        filter(&mut sql);
        sql.push(")::text, count(*)");
        filter(&mut sql);
        sql.push(&format!(" FROM {}", self.relation));
        let rows = self.ask(&sql)?;
        let row = rows.first().ok_or_else(|| self.changed())?;
        self.unchanged(row.get(0))?;
        let sum: Option<String> = row.get(1);
        let sum: i128 = sum.and_then(|s| s.parse().ok()).unwrap_or(0);
        let n: i64 = row.get(2);
        Ok((
            sum.saturating_mul(1i128 << k),
            u64::try_from(n).unwrap_or(0),
        ))
    }
}

fn op_text(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "=",
        CmpOp::Ne => "<>",
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
    }
}
