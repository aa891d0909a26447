//! A table of an Apache Spark cluster, asked through Spark Connect: each question is one
//! Spark SQL aggregate whose answer is a few integers, and nothing else of the rows ever
//! leaves the cluster. The cluster runs no code of dpq's; it counts and sums, and dpq adds
//! the noise, keeps the ledger and does the inference.
//!
//! The three shapes sent are those sent to PostgreSQL (see `sql`), every literal a named
//! parameter (`:p1`) bound as a typed literal, every name quoted as Spark quotes it:
//!
//! - `SELECT count(*), count(*) FILTER (WHERE <condition>), count(c), ... FROM t`;
//! - `SELECT <cell>, count(*) FROM t GROUP BY 1`, the cell a `CASE` over the cube's columns;
//! - `SELECT count(*), sum(<term>) ..., count(c), ... FROM (SELECT <term> ... FROM t)`, each
//!   term the value clamped and put on the sum's grid as an exact integer: a `BIGINT` cut in
//!   two parts summed apart where the bounds keep it below `2^40`, else a decimal (see
//!   `Sql::rounded`), the positive and negative terms summed apart so that a sum beyond
//!   `DECIMAL(38)` saturates as the column store's does.
//!
//! Text is compared byte by byte (`UTF8_BINARY`, Spark's default collation, asked for
//! explicitly from Spark 4 on); a `DECIMAL` is read as the float nearest its decimal text, as
//! the column store reads a CSV cell. Each question also counts every row in the same query:
//! a table whose row count changed since `LOAD` is refused.
//!
//! The session turns Spark's variable substitution off (`${x}` in a quoted name is that
//! name) and ANSI mode off: a cast in a view that does not read gives a missing value
//! instead of failing, so that whether a question fails cannot depend on the rows it picks;
//! `count(c)` of every column read makes every value of those columns computed whatever the
//! condition, as for PostgreSQL. Each question is preceded by `REFRESH TABLE`, so that rows
//! appended since the last question are counted (Spark keeps a table's file listing).
//! An error from Spark never reaches the user, since its text
//! can quote a value of the table: it becomes a fixed message with its SQLSTATE.

// The client's own error type is large; it is turned into a `DataError` at once.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;

use spark_connect::row::Value as Cell;
use spark_connect::{Expression, LiteralExpression, SparkError, SparkSession, SparkSessionBuilder};

use super::cells::Buckets;
use super::count::Clamp;
use super::error::{has_controls, DataError};
use super::predicate::Predicate;
use super::sql::{clamped, Dialect, Param, Sql};
use super::table::{ColumnType, Dictionary, Table};

/// The environment variable a Spark Connect token is read from, as PySpark reads it: never
/// from a statement, where it would be kept in a history and shown.
pub const TOKEN_VARIABLE: &str = "SPARK_CONNECT_AUTHENTICATE_TOKEN";

/// A Spark table, asked again at each question.
pub struct SparkTable {
    /// The schema and the row count at `LOAD`, with no rows.
    shell: Table,
    /// The table as Spark SQL names it (quoted parts).
    relation: String,
    /// Each column as Spark SQL names it (quoted).
    columns: Vec<String>,
    /// Each column's Spark type (`bigint`, `decimal(10,2)`, ...).
    typenames: Vec<String>,
    /// Whether text is compared with an explicit `COLLATE UTF8_BINARY` (Spark 4 and later).
    collate: bool,
    /// The server's `host:port`, checked before each question.
    authority: String,
    session: SparkSession,
}

impl std::fmt::Debug for SparkTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparkTable")
            .field("relation", &self.relation)
            .field("shell", &self.shell)
            .finish_non_exhaustive()
    }
}

/// What `LOAD SPARK` found: the table, the identity of its data, and the columns left out.
pub struct SparkOpened {
    /// The table.
    pub table: SparkTable,
    /// `host:port/name`, as the address and the statement spell them: where the table's
    /// ledger says it was loaded from (never a token).
    pub identity: String,
    /// What the table's data is known by: where its files lie, as Spark says (the same data
    /// whatever host asks for it), or else the server as spelled and the table's name as Spark
    /// resolved it (catalog, database, table).
    pub key: String,
    /// Columns of types dpq does not read from Spark, left out of the schema.
    pub left_out: Vec<String>,
}

/// A name quoted as a Spark SQL identifier.
fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// The fixed message for a failure of Spark or the connection. Spark's own text is never
/// shown: it can quote a value of the table.
fn failed(what: &str, e: &SparkError) -> DataError {
    let code = e
        .sql_state
        .as_deref()
        .filter(|s| s.len() == 5 && s.bytes().all(|b| b.is_ascii_alphanumeric()))
        .map(|s| format!(" (SQLSTATE {s})"))
        .unwrap_or_default();
    DataError::Io {
        path: what.to_string(),
        message: format!("Spark could not answer{code}"),
    }
}

fn io(what: &str, message: &str) -> DataError {
    DataError::Io {
        path: what.to_string(),
        message: message.to_string(),
    }
}

/// The dpq type of a Spark type, by its name; `None` for types dpq leaves out.
fn column_type(typename: &str) -> Option<ColumnType> {
    let t = typename.to_ascii_lowercase();
    Some(match t.as_str() {
        "tinyint" | "smallint" | "int" | "integer" | "bigint" | "long" | "byte" | "short" => {
            ColumnType::Integer
        }
        "float" | "double" => ColumnType::Float,
        "boolean" => ColumnType::Boolean,
        _ if t.starts_with("decimal") => ColumnType::Float,
        _ if t == "string" || t.starts_with("string ") || t.starts_with("varchar") => {
            ColumnType::Text
        }
        _ if t.starts_with("char") => ColumnType::Text,
        _ => return None,
    })
}

/// The host and port of a Spark Connect address (`sc://host:port/;params`), checked: a
/// token in it is refused, since a statement is kept and shown.
fn authority(url: &str, what: &str) -> Result<String, DataError> {
    let rest = url.strip_prefix("sc://").ok_or_else(|| {
        io(
            what,
            "a Spark Connect address reads sc://host:port (15002 when no port is given)",
        )
    })?;
    let (host, params) = rest.split_once('/').unwrap_or((rest, ""));
    // A user before the host is the client's business, never part of the table's identity.
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    if host.is_empty() || has_controls(url) {
        return Err(io(what, "a Spark Connect address reads sc://host:port"));
    }
    for param in params.split(';') {
        let key = param.split('=').next().unwrap_or_default().trim();
        if key.eq_ignore_ascii_case("token") {
            return Err(io(
                what,
                &format!("a token is never written in a statement: set {TOKEN_VARIABLE} in dpq's environment instead"),
            ));
        }
    }
    Ok(if host.contains(':') {
        host.to_string()
    } else {
        format!("{host}:15002")
    })
}

/// How long a connection to the server may take to open.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Whether a TCP connection to `authority` (`host:port`) opens within [`CONNECT_TIMEOUT`].
/// The client retries an unavailable server for minutes (its policy, which it does not let
/// a caller change): a server that is not there is found out first, at once.
fn reachable(authority: &str) -> bool {
    use std::net::{TcpStream, ToSocketAddrs};
    authority.to_socket_addrs().is_ok_and(|mut addrs| {
        addrs.any(|a| TcpStream::connect_timeout(&a, CONNECT_TIMEOUT).is_ok())
    })
}

/// The identity of a Spark table's data, from its key ([`SparkOpened::key`]): a keyed hash,
/// since a table has no bytes to hash.
pub fn spark_content(key: &str) -> [u8; 32] {
    *blake3::Hasher::new_derive_key("dpq 2026 spark table")
        .update(key.as_bytes())
        .finalize()
        .as_bytes()
}

/// The named arguments of a statement's parameters: `p1`, `p2`, ... as typed literals.
fn arguments(params: &[Param]) -> HashMap<String, Expression> {
    params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let literal = match p {
                Param::Int(x) => LiteralExpression::long(*x),
                Param::Float(x) => LiteralExpression::double(*x),
                Param::Text(s) => LiteralExpression::string(s.clone()),
                Param::Bool(b) => LiteralExpression::boolean(*b),
            };
            (format!("p{}", i + 1), Expression::Literal(literal))
        })
        .collect()
}

/// Runs `query` with no parameters and returns its rows.
fn rows(session: &SparkSession, query: &str) -> Result<Vec<Vec<Cell>>, SparkError> {
    let rows = session.sql(query)?.collect()?;
    Ok(rows.into_iter().map(|r| r.values().to_vec()).collect())
}

/// An integer Spark returned, or `None`.
fn int(cell: Option<&Cell>) -> Option<i64> {
    match cell? {
        Cell::Long(x) => Some(*x),
        Cell::Integer(x) => Some(i64::from(*x)),
        Cell::Short(x) => Some(i64::from(*x)),
        Cell::Byte(x) => Some(i64::from(*x)),
        _ => None,
    }
}

/// Where the data of `relation` lies and how Spark resolves its name, from `DESCRIBE TABLE
/// EXTENDED`: `location <uri>`, or `name <catalog>.<database>.<table>`; `None` when Spark
/// tells neither.
fn resolved(session: &SparkSession, relation: &str) -> Option<String> {
    let described = rows(session, &format!("DESCRIBE TABLE EXTENDED {relation}")).ok()?;
    let field = |name: &str| {
        described.iter().find_map(|r| match (r.first(), r.get(1)) {
            (Some(Cell::String(k)), Some(Cell::String(v))) if k == name => Some(v.clone()),
            _ => None,
        })
    };
    if let Some(location) = field("Location").filter(|l| !l.is_empty()) {
        return Some(format!("location {location}"));
    }
    let parts = [field("Catalog"), field("Database"), field("Table")];
    let parts: Vec<String> = parts.into_iter().flatten().map(|p| quote(&p)).collect();
    (parts.len() == 3).then(|| format!("name {}", parts.join(".")))
}

/// Connects to the Spark Connect server `url` names (`sc://host:port`, a token from
/// [`TOKEN_VARIABLE`]) and reads the schema and row count of the table named by `parts`
/// (`[catalog.][database.]table`).
pub fn open_spark(url: &str, parts: &[String]) -> Result<SparkOpened, DataError> {
    let name = parts.join(".");
    let what = format!("Spark table {}", super::escape_name(&name));
    let authority = authority(url, &what)?;
    if !reachable(&authority) {
        return Err(io(&what, "cannot connect to the Spark Connect server"));
    }
    let session = SparkSessionBuilder::new()
        .remote(url)
        .get_or_create()
        .map_err(|_| io(&what, "cannot connect to the Spark Connect server"))?;
    // A failing cast gives a missing value, not an error that depends on the rows; and the
    // text sent is the text run: `${x}` in a quoted name is that name, never a variable
    // Spark would substitute.
    for (key, value) in [
        ("spark.sql.ansi.enabled", "false"),
        ("spark.sql.variable.substitute", "false"),
        // A table is a table of the catalog, never files named in its place
        // (`parquet.\`/path\``), which would be the same data under another name.
        ("spark.sql.runSQLOnFiles", "false"),
    ] {
        session
            .conf()
            .set(key, value)
            .map_err(|e| failed(&what, &e))?;
    }
    let major: u32 = session
        .version()
        .map_err(|e| failed(&what, &e))?
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    let relation = parts.iter().map(|p| quote(p)).collect::<Vec<_>>().join(".");
    let dtypes = session
        .sql(&format!("SELECT * FROM {relation}"))
        .and_then(|df| df.dtypes())
        .map_err(|e| match e.sql_state.as_deref() {
            // TABLE_OR_VIEW_NOT_FOUND
            Some("42P01") => io(&what, "no table of that name is visible to this connection"),
            _ => failed(&what, &e),
        })?;
    let (mut names, mut types, mut columns, mut typenames, mut left_out) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (name, typename) in dtypes {
        match column_type(&typename) {
            Some(t) if !has_controls(&name) => {
                columns.push(quote(&name));
                typenames.push(typename.to_ascii_lowercase());
                names.push(name);
                types.push(t);
            }
            _ => left_out.push(name),
        }
    }
    let counted = rows(&session, &format!("REFRESH TABLE {relation}"))
        .and_then(|_| rows(&session, &format!("SELECT count(*) FROM {relation}")))
        .map_err(|e| failed(&what, &e))?;
    let n = int(counted.first().and_then(|r| r.first())).unwrap_or(0);
    let identity = format!("{authority}/{name}");
    let key = match resolved(&session, &relation) {
        Some(r) => format!("spark {r}"),
        // A temporary view lives as long as its Spark application: keyed by that application
        // and its name as Spark reads it (case-insensitively), whatever the address.
        None => match session.conf().get("spark.app.id") {
            Ok(Some(app)) => format!(
                "spark application {app}/{}",
                parts
                    .iter()
                    .map(|p| quote(&p.to_lowercase()))
                    .collect::<Vec<_>>()
                    .join(".")
            ),
            _ => format!("spark {identity}"),
        },
    };
    let dictionaries = vec![Dictionary::default(); names.len()];
    Ok(SparkOpened {
        identity,
        key,
        left_out,
        table: SparkTable {
            shell: Table {
                names,
                types,
                dictionaries,
                segments: Vec::new(),
                n_rows: u64::try_from(n).unwrap_or(0),
            },
            relation,
            columns,
            typenames,
            collate: major >= 4,
            authority,
            session,
        },
    })
}

/// Tables of fewer rows than this have their sums of terms below `2^40` summed as two
/// `BIGINT`s (see `SparkTable::sum_clamped`): `2^42` rows of parts below `2^20` sum below
/// `2^62`.
const NARROW_ROWS: u64 = 1 << 42;

impl Dialect for SparkTable {
    /// `:pn`, bound to a typed literal (a `bigint`, a `double`, a `string`, a `boolean`).
    fn placeholder(&self, n: usize, _: &Param) -> String {
        format!(":p{n}")
    }

    fn column(&self, c: usize) -> &str {
        &self.columns[c]
    }

    /// Text in byte order; a `DECIMAL` as the float nearest its decimal text (Spark's own
    /// cast of a decimal to a double need not be the nearest).
    fn operand(&self, c: usize) -> String {
        let col = &self.columns[c];
        match self.shell.types[c] {
            ColumnType::Text if self.collate => format!("({col} COLLATE UTF8_BINARY)"),
            ColumnType::Float if self.typenames[c].starts_with("decimal") => {
                format!("CAST(CAST({col} AS STRING) AS DOUBLE)")
            }
            _ => col.clone(),
        }
    }

    fn column_type(&self, c: usize) -> ColumnType {
        self.shell.types[c]
    }

    fn truncated(&self, x: &str) -> String {
        format!("CAST({x} AS BIGINT)")
    }

    fn wide(&self, x: &str) -> String {
        format!("CAST({x} AS DECIMAL(38, 0))")
    }
}

impl SparkTable {
    /// The schema and row count, as a table with no rows.
    pub fn shell(&self) -> &Table {
        &self.shell
    }

    fn what(&self) -> String {
        format!("Spark table {}", self.relation)
    }

    /// Runs `sql` and returns its rows; its first column must be the count of every row,
    /// which must still be the `n` of `LOAD` (checked by the caller). The table's files are
    /// listed again first (`REFRESH TABLE`): Spark keeps a table's file listing from its first
    /// read, and rows appended since would go unseen, by the count too.
    fn ask(&self, sql: &Sql<'_, Self>) -> Result<Vec<Vec<Cell>>, DataError> {
        if !reachable(&self.authority) {
            return Err(io(
                &self.what(),
                "cannot connect to the Spark Connect server",
            ));
        }
        rows(&self.session, &format!("REFRESH TABLE {}", self.relation))
            .map_err(|e| failed(&self.what(), &e))?;
        let rows = self
            .session
            .sql_with_args(&sql.text, Vec::new(), arguments(&sql.params))
            .and_then(|df| df.collect())
            .map_err(|e| failed(&self.what(), &e))?;
        Ok(rows.into_iter().map(|r| r.values().to_vec()).collect())
    }

    /// An error unless `all` rows is the table's `n` at `LOAD`.
    fn unchanged(&self, all: Option<i64>) -> Result<(), DataError> {
        if all.and_then(|a| u64::try_from(a).ok()) == Some(self.shell.n_rows) {
            Ok(())
        } else {
            Err(DataError::Changed { path: self.what() })
        }
    }

    /// `, count(c)` for each of `columns`: every value of every column a question reads is
    /// computed, whatever its condition (see the module's notes).
    fn every_value(&self, mut columns: Vec<usize>) -> String {
        columns.sort_unstable();
        columns.dedup();
        columns
            .iter()
            .map(|&c| format!(", count({}) AS v{c}", self.columns[c]))
            .collect()
    }

    /// The true number of rows where `pred` is true.
    pub fn count(&self, pred: &Predicate) -> Result<u64, DataError> {
        let mut sql = Sql::new(self);
        // Every item is named: Spark names an unnamed one after its text, and would send the
        // question's literals back with the answer.
        sql.push("SELECT count(*) AS a0, count(*) FILTER (WHERE ");
        sql.condition(pred);
        let read = self.every_value(pred.columns());
        sql.push(&format!(") AS a1{read} FROM {}", self.relation));
        let rows = self.ask(&sql)?;
        let row = rows.first();
        self.unchanged(int(row.and_then(|r| r.first())))?;
        Ok(int(row.and_then(|r| r.get(1)))
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(0))
    }

    /// The true number of rows in every cell of a cube (numbered as `count_cells` does).
    pub fn count_cells(&self, dims: &[(usize, Buckets)]) -> Result<Vec<u64>, DataError> {
        let cells: usize = dims.iter().map(|(_, b)| b.len()).product();
        let mut sql = Sql::new(self);
        sql.push("SELECT CAST(");
        sql.cell(dims);
        sql.push(&format!(
            " AS BIGINT) AS a0, count(*) AS a1 FROM {} GROUP BY 1",
            self.relation
        ));
        let mut out = vec![0u64; cells];
        let mut all = 0i64;
        for row in self.ask(&sql)? {
            let (cell, n) = (int(row.first()), int(row.get(1)).unwrap_or(0));
            all = all.saturating_add(n);
            let slot = cell
                .and_then(|c| usize::try_from(c).ok())
                .and_then(|c| out.get_mut(c));
            if let Some(slot) = slot {
                *slot = u64::try_from(n).unwrap_or(0);
            }
        }
        self.unchanged(Some(all))?;
        Ok(out)
    }

    /// The true clamped sum of `column` where `pred` holds, on the grid `2^-k`, and the rows
    /// that contributed (see `sum_clamped`): each value clamped, scaled by `2^k` (exact) and
    /// rounded half away from zero as the column store does, then summed exactly.
    ///
    /// When a term cannot reach `2^40` (the bounds say so, and they are the analyst's own)
    /// each term is a `BIGINT`, cut into a high and a low part below `2^20`, and the two parts
    /// are summed as `BIGINT`s: Spark sums a `DECIMAL(38)` through Java's big decimals,
    /// several times slower. Neither part's sum can leave 64 bits over fewer than `2^42` rows
    /// ([`NARROW_ROWS`]); a larger table, or one grown past it since `LOAD` (whose sums could
    /// wrap, ANSI mode being off), is refused by the row count asked in the same query or
    /// summed as decimals. Which way a sum goes is decided by the bounds and by that fixed
    /// row count alone, never by a threshold the analyst can move: under `add_remove` the
    /// row count is private, and the time a question takes must not tell it. Otherwise each
    /// term is an exact `DECIMAL(38)` integer and the positive and negative terms are summed
    /// apart, so that a part beyond `DECIMAL(38)` saturates.
    pub fn sum_clamped(
        &self,
        column: usize,
        pred: Option<&Predicate>,
        clamp: Clamp,
    ) -> Result<(i128, u64), DataError> {
        let col = self.columns[column].clone();
        let few_rows = self.shell.n_rows < NARROW_ROWS;
        let narrow = |bound: f64| few_rows && bound < 2f64.powi(40);
        let mut sql = Sql::new(self);
        let (term, k, narrow) = match clamp {
            Clamp::Int { lo, hi, k } => {
                let bound = lo.unsigned_abs().max(hi.unsigned_abs());
                let narrow = narrow(bound as f64);
                let (lo, hi) = (sql.param(Param::Int(lo)), sql.param(Param::Int(hi)));
                // Clamped as a `BIGINT` (exact for every integer column), so that every term
                // is in `[lo, hi]` whatever the column holds by now: text put in its place
                // since `LOAD` (`'1e30'`) would compare as missing and pass unclamped.
                let term = clamped(&format!("CAST({col} AS BIGINT)"), &lo, &hi);
                let term = if narrow { term } else { self.wide(&term) };
                (term, k, narrow)
            }
            Clamp::Float { lo, hi, k } => {
                let narrow = narrow(lo.abs().max(hi.abs()) * 2f64.powi(k as i32));
                let (lo, hi) = (sql.param(Param::Float(lo)), sql.param(Param::Float(hi)));
                let scale = sql.param(Param::Float(2f64.powi(k as i32)));
                let x = if self.typenames[column].starts_with("decimal") {
                    self.operand(column)
                } else {
                    format!("CAST({col} AS DOUBLE)")
                };
                let y = format!("({} * {scale})", clamped(&x, &lo, &hi));
                let term = if narrow {
                    sql.rounded_narrow(&y)
                } else {
                    sql.rounded(&y)
                };
                (term, 0, narrow)
            }
        };
        // The inner query is written first, its parameters after the term's, then taken out
        // to be wrapped.
        sql.push(&format!("SELECT CASE WHEN {col} IS NOT NULL"));
        if let Some(p) = pred {
            sql.push(" AND ");
            sql.condition(p);
        }
        sql.push(&format!(" THEN {term} END AS t"));
        let mut read = pred.map(Predicate::columns).unwrap_or_default();
        read.push(column);
        read.sort_unstable();
        read.dedup();
        for &c in &read {
            sql.push(&format!(", {} AS v{c}", self.columns[c]));
        }
        sql.push(&format!(" FROM {}", self.relation));
        let inner = std::mem::take(&mut sql.text);
        let reads: String = read
            .iter()
            .map(|c| format!(", count(v{c}) AS r{c}"))
            .collect();
        let sums = if narrow {
            "sum(t DIV 1048576) AS a2, sum(t - (t DIV 1048576) * 1048576) AS a3"
        } else {
            "CAST(sum(CASE WHEN t > 0 THEN t END) AS STRING) AS a2, \
             count(CASE WHEN t > 0 THEN 1 END) AS a3, \
             CAST(sum(CASE WHEN t < 0 THEN t END) AS STRING) AS a4, \
             count(CASE WHEN t < 0 THEN 1 END) AS a5"
        };
        sql.push(&format!(
            "SELECT count(*) AS a0, count(t) AS a1, {sums}{reads} FROM ({inner}) s"
        ));
        let rows = self.ask(&sql)?;
        let row = rows.first();
        let cell = |i: usize| row.and_then(|r| r.get(i));
        self.unchanged(int(cell(0)))?;
        let n = int(cell(1))
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(0);
        // A part whose sum overflowed `DECIMAL(38)` (a missing sum over rows that have
        // terms) saturates.
        let part = |sum: usize, terms: usize, full: i128| match cell(sum) {
            Some(Cell::String(s)) => s.parse::<i128>().unwrap_or(full),
            _ if int(cell(terms)).unwrap_or(0) > 0 => full,
            _ => 0,
        };
        let sum = if narrow {
            // Both parts are BIGINT sums, missing only over no terms; anything else means
            // the table is not what it was at `LOAD`.
            let part = |i: usize| match cell(i) {
                None | Some(Cell::Null) if n == 0 => Some(0),
                c => int(c).map(i128::from),
            };
            match (part(2), part(3)) {
                (Some(high), Some(low)) => high * (1 << 20) + low,
                _ => return Err(DataError::Changed { path: self.what() }),
            }
        } else {
            part(2, 3, i128::MAX).saturating_add(part(4, 5, i128::MIN))
        };
        Ok((sum.saturating_mul(1i128 << k), n))
    }
}
