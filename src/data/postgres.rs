//! A PostgreSQL table whose rows stay in the database: each question is compiled to one SQL
//! statement that returns exact integers, and nothing else of the rows ever leaves the
//! server.
//!
//! Only three shapes are sent, every literal a bound parameter and no cast or arithmetic on a
//! column in a condition:
//!
//! - `SELECT count(*), count(*) FILTER (WHERE <condition>), count(c), ... FROM t`;
//! - `SELECT <cell>, count(*) FROM t GROUP BY 1`, the cell a `CASE` over the cube's columns;
//! - `SELECT count(*), sum(<clamped value>) FILTER (...), count(col) FILTER (...), count(c),
//!   ... FROM t`.
//!
//! A partitioned table is asked each question partition by partition, joined by `UNION ALL`
//! and added up exactly (see [`over_parts`]): over `postgres_fdw` foreign partitions, a
//! sharded table, each shard is sent the whole aggregate and answers with integers.
//!
//! The `count(c)` of every column read computes each row's value whatever the condition, so
//! that a failure (a view's cast) depends on the columns read, never on the rows a condition
//! picks.
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
use super::predicate::Predicate;
use super::sql::{clamped, Dialect, Param, Sql};
use super::table::{ColumnType, Dictionary, Table};

/// A database table, asked again at each question.
pub struct PgTable {
    /// The schema and the row count at `LOAD`, with no rows.
    shell: Table,
    /// The table as SQL names it (a quoted identifier).
    relation: String,
    /// Each column as SQL names it (quoted).
    columns: Vec<String>,
    /// Each column's PostgreSQL type (`int8`, `numeric`, ...).
    typnames: Vec<String>,
    /// A partitioned table's leaf partitions (quoted `schema.name`), each asked the question
    /// on its own (see [`PgTable::over_parts`]); empty for any other table.
    parts: Vec<String>,
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
    /// `host:port/database/table`, as the connection string spells them: where the table's
    /// ledger says it was loaded from (never the password).
    pub identity: String,
    /// What the table's data is known by: the server's own system identifier, the database
    /// and the table's schema and name as the server resolved them; the same table however
    /// its host is spelled (`localhost`, `127.0.0.1`, `hostaddr=`, a second host of a list).
    /// The spelled identity when the server does not say (`pg_control_system()` revoked).
    pub key: String,
    /// Columns of types dpq does not read from PostgreSQL, left out of the schema.
    pub left_out: Vec<String>,
    /// How many leaf partitions each question is asked of (0 for a table that is not
    /// partitioned).
    pub partitions: usize,
}

/// The leaf partitions of `relation` (quoted `schema.name`, in a fixed order) when it is a
/// partitioned table that may be asked partition by partition; empty otherwise, and the
/// table is then asked as a whole.
///
/// A partition read directly escapes what PostgreSQL enforces on its parent: the parent's
/// row security policies, and column privileges granted on the parent only. So the
/// partitions are asked only when this connection may read the parent's every column
/// (table-level `SELECT`), no table of the partition tree has row security enabled, and it
/// may read every leaf (`SELECT` on it and `USAGE` on its schema); each is what reading the
/// parent as a whole would let it see.
fn leaf_partitions(
    client: &mut impl postgres::GenericClient,
    relation: &str,
) -> Result<Vec<String>, postgres::Error> {
    let parent = client.query_one(
        "SELECT p.relkind = 'p' AND has_table_privilege(p.oid, 'SELECT') \
         AND NOT EXISTS (SELECT 1 FROM pg_partition_tree(p.oid) t \
           JOIN pg_class c ON c.oid = t.relid WHERE c.relrowsecurity) \
         FROM pg_class p WHERE p.oid = to_regclass($1::text)",
        &[&relation],
    );
    match parent {
        Ok(row) if row.get::<_, Option<bool>>(0) == Some(true) => {}
        Ok(_) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    }
    let rows = client.query(
        "SELECT format('%I.%I', n.nspname, c.relname), \
         has_table_privilege(c.oid, 'SELECT') AND has_schema_privilege(n.oid, 'USAGE') \
         FROM pg_partition_tree(to_regclass($1::text)) t \
         JOIN pg_class c ON c.oid = t.relid JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE t.isleaf ORDER BY 1",
        &[&relation],
    )?;
    if rows.iter().any(|r| !r.get::<_, bool>(1)) {
        return Ok(Vec::new());
    }
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// A name quoted as an SQL identifier.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// ` (SQLSTATE code)` of a server's error, or nothing: the code carries no value.
fn sqlstate(e: &postgres::Error) -> String {
    e.code()
        .map(|c| format!(" (SQLSTATE {})", c.code()))
        .unwrap_or_default()
}

/// The fixed message for a failure of the server or the connection. The server's own text
/// is never shown: it can quote a value of the table.
fn failed(what: &str, e: &postgres::Error) -> DataError {
    let code = sqlstate(e);
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

/// The server's identity of `relation`: `system_identifier/database/schema.table`, each part
/// quoted as SQL quotes an identifier; `None` when the server does not tell it.
fn server_key(client: &mut Client, relation: &str) -> Option<String> {
    let row = client
        .query_one(
            "SELECT (SELECT system_identifier FROM pg_control_system())::text, \
             quote_ident(current_database()), quote_ident(n.nspname), quote_ident(c.relname) \
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.oid = to_regclass($1::text)",
            &[&relation],
        )
        .ok()?;
    let part = |i: usize| row.get::<_, Option<String>>(i);
    Some(format!(
        "postgres system {}/{}/{}.{}",
        part(0)?,
        part(1)?,
        part(2)?,
        part(3)?
    ))
}

/// The identity of a live table's data, from its server's key ([`PgOpened::key`]): a
/// keyed hash, since a table has no bytes to hash.
pub fn postgres_content(key: &str) -> [u8; 32] {
    *blake3::Hasher::new_derive_key("dpq 2026 postgres table")
        .update(key.as_bytes())
        .finalize()
        .as_bytes()
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
        message: format!("cannot connect to the database{}", sqlstate(&e)),
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
    let (mut names, mut types, mut columns, mut typnames, mut left_out) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for row in &rows {
        let name: String = row.get(0);
        let typname: String = row.get(1);
        match column_type(&typname) {
            Some(t) if !has_controls(&name) => {
                columns.push(quote(&name));
                typnames.push(typname);
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
    let parts = leaf_partitions(&mut client, &relation).map_err(|e| failed(&what, &e))?;
    let all = over_parts(&parts, &relation, "count(*) AS a0", "", "sum(a0)::int8", "");
    let n: Option<i64> = client
        .query_one(&all, &[])
        .map_err(|e| failed(&what, &e))?
        .get(0);
    let n = n.unwrap_or(0);
    let dictionaries = vec![Dictionary::default(); names.len()];
    let key = server_key(&mut client, &relation).unwrap_or_else(|| identity(&config, table));
    Ok(PgOpened {
        partitions: parts.len(),
        identity: identity(&config, table),
        key,
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
            typnames,
            parts,
            client: Mutex::new(client),
        },
        left_out,
    })
}

impl Dialect for PgTable {
    /// `$n::type`: each parameter typed so that no column is cast for it.
    fn placeholder(&self, n: usize, p: &Param) -> String {
        let ty = match p {
            Param::Int(_) => "int8",
            Param::Float(_) => "float8",
            Param::Text(_) => "text",
            Param::Bool(_) => "bool",
        };
        format!("${n}::{ty}")
    }

    fn column(&self, c: usize) -> &str {
        &self.columns[c]
    }

    /// Text in the `C` collation (UTF-8 byte order); a `numeric` as the nearest `float8`
    /// (see [`numeric_as_float`]).
    fn operand(&self, column: usize) -> String {
        match self.shell.types[column] {
            ColumnType::Text => format!("{} COLLATE \"C\"", self.columns[column]),
            _ if self.typnames[column] == "numeric" => numeric_as_float(&self.columns[column]),
            _ => self.columns[column].clone(),
        }
    }

    fn column_type(&self, c: usize) -> ColumnType {
        self.shell.types[c]
    }

    fn truncated(&self, x: &str) -> String {
        format!("trunc({x})::int8")
    }

    fn wide(&self, x: &str) -> String {
        format!("({x})::numeric")
    }
}

impl PgTable {
    /// The schema and row count, as a table with no rows.
    pub fn shell(&self) -> &Table {
        &self.shell
    }

    /// Runs `sql` in one read-only snapshot; its first column must be the count of every
    /// row, which must still be the `n` of `LOAD`.
    fn ask(&self, sql: &Sql<'_, Self>) -> Result<Vec<postgres::Row>, DataError> {
        let what = format!("PostgreSQL table {}", self.relation);
        let mut client = self.client.lock().map_err(|_| DataError::Io {
            path: what.clone(),
            message: "the connection was lost".to_string(),
        })?;
        let params: Vec<&(dyn ToSql + Sync)> = sql
            .params
            .iter()
            .map(|p| -> &(dyn ToSql + Sync) {
                match p {
                    Param::Int(x) => x,
                    Param::Float(x) => x,
                    Param::Text(x) => x,
                    Param::Bool(x) => x,
                }
            })
            .collect();
        let mut txn = client
            .build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(|e| failed(&what, &e))?;
        // The partitions asked must still be the table's, in the same snapshot: a partition
        // attached since `LOAD` would go uncounted, one detached would be counted.
        if !self.parts.is_empty() {
            let now = leaf_partitions(&mut txn, &self.relation).map_err(|e| failed(&what, &e))?;
            if now != self.parts {
                return Err(self.changed());
            }
        }
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

    /// `, count(c)` for each of `columns`: every row's value of every column a question
    /// reads is computed, whatever its condition. A column of a view can fail for some rows
    /// (a cast of text that does not read); a condition evaluates a column only for the rows
    /// it reaches (`name = 'bob' AND bad > 0`), so without this a failure would answer, for
    /// free, about the rows a condition picks. With it, whether a question fails depends on
    /// the columns it reads, never on its condition.
    /// The items `, count(c) AS v<c>` of the question, and `, sum(v<c>)` that add them up
    /// over partitions.
    fn every_value(&self, mut columns: Vec<usize>) -> (String, String) {
        columns.sort_unstable();
        columns.dedup();
        let inner = columns
            .iter()
            .map(|&c| format!(", count({}) AS v{c}", self.columns[c]))
            .collect();
        let outer = columns
            .iter()
            .map(|&c| format!(", sum(v{c})::int8"))
            .collect();
        (inner, outer)
    }

    /// The question whose select list is `inner` asked of the table (see [`over_parts`]).
    fn over_parts(&self, inner: &str, tail: &str, outer: &str, after: &str) -> String {
        over_parts(&self.parts, &self.relation, inner, tail, outer, after)
    }

    /// The true number of rows where `pred` is true.
    pub fn count(&self, pred: &Predicate) -> Result<u64, DataError> {
        let mut sql = Sql::new(self);
        let (read, reads) = self.every_value(pred.columns());
        sql.push("count(*) AS a0, count(*) FILTER (WHERE ");
        sql.condition(pred);
        sql.push(&format!(") AS a1{read}"));
        sql.text = self.over_parts(
            &sql.text,
            "",
            &format!("sum(a0)::int8, sum(a1)::int8{reads}"),
            "",
        );
        let rows = self.ask(&sql)?;
        let row = rows.first().ok_or_else(|| self.changed())?;
        self.unchanged(row.get(0))?;
        Ok(u64::try_from(row.get::<_, i64>(1)).unwrap_or(0))
    }

    /// The true number of rows in every cell of a cube (numbered as `count_cells` does).
    pub fn count_cells(&self, dims: &[(usize, Buckets)]) -> Result<Vec<u64>, DataError> {
        let cells: usize = dims.iter().map(|(_, b)| b.len()).product();
        let mut sql = Sql::new(self);
        sql.cell(dims);
        sql.push("::int8 AS a0, count(*) AS a1");
        sql.text = self.over_parts(&sql.text, " GROUP BY 1", "a0, sum(a1)::int8", " GROUP BY 1");
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
        let mut sql = Sql::new(self);
        let (term, k) = match clamp {
            Clamp::Int { lo, hi, k } => {
                let (lo, hi) = (sql.param(Param::Int(lo)), sql.param(Param::Int(hi)));
                (clamped(col, &lo, &hi), k)
            }
            Clamp::Float { lo, hi, k } => {
                // y = clamp(x) 2^k is exact (a power of two), then rounded exactly, as wide
                // as it is (see `Sql::rounded`).
                let (lo, hi) = (sql.param(Param::Float(lo)), sql.param(Param::Float(hi)));
                let scale = sql.param(Param::Float(2f64.powi(k as i32)));
                let x = if self.typnames[column] == "numeric" {
                    numeric_as_float(col)
                } else {
                    format!("{col}::float8")
                };
                let y = format!("({} * {scale})", clamped(&x, &lo, &hi));
                (sql.rounded(&y), 0)
            }
        };
        let filter = |sql: &mut Sql<'_, Self>| {
            sql.push(&format!(" FILTER (WHERE {col} IS NOT NULL"));
            if let Some(p) = pred {
                sql.push(" AND ");
                sql.condition(p);
            }
            sql.push(")");
        };
        sql.push(&format!("count(*) AS a0, sum({term})"));
        filter(&mut sql);
        sql.push(" AS a1, count(*)");
        filter(&mut sql);
        let mut read = pred.map(Predicate::columns).unwrap_or_default();
        read.push(column);
        let (read, reads) = self.every_value(read);
        sql.push(&format!(" AS a2{read}"));
        sql.text = self.over_parts(
            &sql.text,
            "",
            &format!("sum(a0)::int8, sum(a1)::text, sum(a2)::int8{reads}"),
            "",
        );
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

/// The question whose select list is `inner` (its items named `a0`, `a1`, ... and `v<c>`)
/// asked of the table, its answer combined by `outer`:
/// `SELECT <outer> FROM (SELECT <inner> FROM t<tail>) s<after>`. A partitioned table is
/// asked partition by partition, `SELECT <inner> FROM p1<tail> UNION ALL SELECT <inner>
/// FROM p2<tail> ...`, so that each partition's aggregate is one query of its own: a
/// partition that is a foreign table on another server (`postgres_fdw`) is sent the whole
/// aggregate and returns its counts, never its rows, and with `async_capable` every server
/// answers at once. The outer query adds the partitions' counts up, exactly.
fn over_parts(
    parts: &[String],
    relation: &str,
    inner: &str,
    tail: &str,
    outer: &str,
    after: &str,
) -> String {
    let one = |from: &str| format!("SELECT {inner} FROM {from}{tail}");
    let branches: Vec<String> = if parts.is_empty() {
        vec![one(relation)]
    } else {
        parts.iter().map(|p| one(p)).collect()
    };
    format!(
        "SELECT {outer} FROM ({}) s{after}",
        branches.join(" UNION ALL ")
    )
}

/// A `numeric` column as the `float8` nearest its value, as `str::parse::<f64>` rounds it,
/// with no error: PostgreSQL's own cast fails on a value beyond the range of a `float8`
/// (`1e400`, `1e-400`), and a failure that depends on the rows is an answer about them
/// (`name = 'bob' AND x > 0` evaluates `x` only for Bob's rows). A value at or beyond
/// `2^1024 - 2^970` (halfway between the largest float and `2^1024`) is an infinity; one at
/// most `2^-1075` (half the smallest float) in magnitude is zero; `NaN` stays `NaN`.
fn numeric_as_float(col: &str) -> String {
    let over = decimal(2, 970, (1u64 << 54) - 1, 0);
    let under = decimal(5, 1075, 1, 1075);
    format!(
        "(CASE WHEN {col} = 'NaN'::numeric THEN 'NaN'::float8 \
         WHEN {col} >= {over} THEN 'Infinity'::float8 \
         WHEN {col} <= -{over} THEN '-Infinity'::float8 \
         WHEN {col} BETWEEN -{under} AND {under} THEN 0::float8 \
         ELSE {col}::float8 END)"
    )
}

/// `base^exp * times / 10^point`, written exactly as a decimal `numeric` literal.
fn decimal(base: u32, exp: u32, times: u64, point: usize) -> String {
    // Little-endian decimal digits.
    let mut digits: Vec<u8> = vec![1];
    let mut multiply = |by: u64| {
        let mut carry: u128 = 0;
        for d in digits.iter_mut() {
            let v = u128::from(*d) * u128::from(by) + carry;
            *d = (v % 10) as u8;
            carry = v / 10;
        }
        while carry > 0 {
            digits.push((carry % 10) as u8);
            carry /= 10;
        }
    };
    for _ in 0..exp {
        multiply(u64::from(base));
    }
    multiply(times);
    while digits.len() <= point {
        digits.push(0);
    }
    let text: String = digits.iter().rev().map(|d| char::from(b'0' + d)).collect();
    let (whole, fraction) = text.split_at(text.len() - point);
    if point == 0 {
        format!("{whole}::numeric")
    } else {
        format!("{whole}.{fraction}::numeric")
    }
}
