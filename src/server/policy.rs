//! The curator's policy: which datasets are served, from where, with what declared schema,
//! neighbour model, budget and rules, and which analysts may use them with what caps. A TOML
//! file; `dpq check-policy FILE` validates one and says what each analyst may do.
//!
//! Every key is documented in the README and shown in `examples/classroom/policy.toml`.
//! Seeded noise has no key: a served dataset is never seeded.

use crate::data::{ColumnType, Declared, Domain};
use crate::eval::{Family, Quotas, Rules};
use crate::privacy::{Mechanism, Neighbours};
use rust_decimal::Decimal;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use toml::Value;

/// A policy that is not valid: what and where, in the policy's own words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct PolicyError {
    /// The policy file.
    pub file: String,
    /// What is wrong, naming the dataset, analyst or key.
    pub message: String,
}

/// A validated policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Where the ledgers and the audit log live, if the policy says.
    pub state_dir: Option<PathBuf>,
    /// The datasets served.
    pub datasets: Vec<Dataset>,
    /// The analysts and their tokens' hashes.
    pub analysts: Vec<Analyst>,
    /// Limits on requests.
    pub limits: Limits,
    /// Whether the policy is a demo (`demo = true`): its state directory may be cleared by
    /// `dpq serve --reset-demo`, every budget with it. Never for real data.
    pub demo: bool,
}

/// One served dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// The public name analysts `USE`.
    pub name: String,
    /// The curator's identity for it: keys its ledger, whatever the file.
    pub id: String,
    /// Where its rows are: a CSV file, Parquet files, or a PostgreSQL table.
    pub source: DataSource,
    /// Whether the file's first row names its columns.
    pub header: bool,
    /// The byte between a CSV file's fields and its decimal mark (`delimiter`, `decimal`; by
    /// default `,` and `.`, a tab for a `.tsv` file).
    pub format: crate::data::CsvFormat,
    /// The declared schema, if any (else types are inferred from the data).
    pub columns: Option<Vec<Declared>>,
    /// How neighbouring tables differ.
    pub neighbours: Neighbours,
    /// The privacy unit, if one person may have several rows (then `add_remove`).
    pub unit: Option<crate::privacy::Unit>,
    /// The total budget, shared by all analysts: epsilon, or rho (`accounting = "zcdp"`).
    pub budget: Decimal,
    /// How the budget composes: in epsilon (`budget`), or in rho (`accounting = "zcdp"` with
    /// `budget_rho`).
    pub accounting: crate::privacy::Accounting,
    /// The cube, as `CUBE` would declare it without the keyword (`BY age (30, 65)`).
    pub cube: Option<String>,
    /// What analysts may do.
    pub rules: Rules,
    /// The id whose ledger this dataset continues (`continues = "old-id"`): data moved or
    /// renamed to a new id keeps its spending.
    pub continues: Option<String>,
    /// The least time, in milliseconds, before a response that read this dataset leaves the
    /// server (`response_ms`; 0: no padding); `None`: computed from its row count and source.
    pub response_ms: Option<u64>,
}

/// Where a served dataset's rows are.
#[derive(Debug, Clone, PartialEq)]
pub enum DataSource {
    /// A CSV file, or Parquet files (a `.parquet` file, a directory of them or a pattern);
    /// a relative path is read from the policy's directory.
    File(PathBuf),
    /// A PostgreSQL table: the connection string and the table's name.
    Postgres {
        /// The connection string (`host=... dbname=...`).
        conninfo: String,
        /// The table.
        table: String,
    },
    /// A Spark table: the Spark Connect address and the table's name in parts
    /// (`catalog.database.table`); a token comes from the environment only.
    Spark {
        /// `sc://host:port`.
        url: String,
        /// The table's name, split at its dots.
        table: Vec<String>,
    },
}

impl DataSource {
    /// Whether its rows are read from a CSV file into memory.
    pub fn is_csv(&self) -> bool {
        matches!(self, DataSource::File(p) if !crate::data::is_parquet_path(p))
    }
}

impl std::fmt::Display for DataSource {
    /// The source as `check-policy` names it: a path, or the table with no connection string
    /// (which can hold a password).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DataSource::File(p) => write!(f, "{}", p.display()),
            DataSource::Postgres { table, .. } => {
                write!(f, "PostgreSQL table {}", crate::data::escape_name(table))
            }
            DataSource::Spark { table, .. } => {
                write!(
                    f,
                    "Spark table {}",
                    crate::data::escape_name(&table.join("."))
                )
            }
        }
    }
}

/// One analyst.
#[derive(Debug, Clone, PartialEq)]
pub struct Analyst {
    /// Their name, as the audit log and the ledger record it.
    pub name: String,
    /// BLAKE3 of their token.
    pub token_hash: [u8; 32],
    /// Their cap on each dataset they may use, by dataset name.
    pub budgets: Vec<(String, Decimal)>,
}

/// Limits that keep one client from stalling the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest request body, in bytes.
    pub max_request_bytes: usize,
    /// The most statements in one request.
    pub max_statements: usize,
    /// How long one request may run statements, in milliseconds; statements after it are not
    /// run.
    pub request_millis: u64,
    /// How long a client may take to send its request (headers and body), and how long an
    /// idle connection is kept, in milliseconds.
    pub body_millis: u64,
    /// The most requests one analyst may have under way at once; more are refused (429).
    pub max_requests_in_flight: usize,
    /// The most connections open at once; more wait to be accepted.
    pub max_connections: usize,
    /// The most bytes of results one request may return; statements after it are not run.
    pub max_response_bytes: usize,
    /// What bounds each analyst's work and what they make the server store.
    pub quotas: Quotas,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request_bytes: 64 * 1024,
            max_statements: 100,
            request_millis: 30_000,
            body_millis: 10_000,
            max_requests_in_flight: 4,
            max_connections: 1024,
            max_response_bytes: 8 << 20,
            quotas: Quotas::default(),
        }
    }
}

/// The demo tokens shipped with dpq (`examples/classroom/tokens/`), read from the files
/// themselves so that the list cannot drift from them. They are public: a policy admitting
/// one admits anyone, and `dpq serve` refuses it unless told they are public.
pub const PUBLIC_TOKENS: [&str; 3] = [
    include_str!("../../examples/classroom/tokens/alice.token"),
    include_str!("../../examples/classroom/tokens/bob.token"),
    include_str!("../../examples/classroom/tokens/carol.token"),
];

/// The families an analyst may use when a dataset's policy names none.
const DEFAULT_FAMILIES: [Family; 11] = [
    Family::Count,
    Family::Linear,
    Family::Within,
    Family::Histogram,
    Family::Sum,
    Family::Statistic,
    Family::Estimate,
    Family::Prob,
    Family::Explain,
    Family::History,
    Family::Lab,
];

impl Policy {
    /// Reads and validates the policy file `path`.
    pub fn read(path: &Path) -> Result<Policy, PolicyError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| PolicyError {
            file: shown.clone(),
            message: format!("cannot read it: {e}"),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Policy::parse(&text, base).map_err(|message| PolicyError {
            file: shown,
            message,
        })
    }

    /// Validates the policy `text`, resolving relative paths against `base`.
    pub fn parse(text: &str, base: &Path) -> Result<Policy, String> {
        let doc: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| format!("not valid TOML: {}", e.message()))?;
        let mut t = Keys::new("the policy", &doc);
        let state_dir = t.string("state_dir")?.map(|d| base.join(d));
        let demo = t.boolean("demo")?.unwrap_or(false);
        let limits = match t.table("limits")? {
            Some(l) => limits(l)?,
            None => Limits::default(),
        };
        let datasets = t
            .array("dataset")?
            .iter()
            .map(|d| dataset(d, base))
            .collect::<Result<Vec<_>, _>>()?;
        let analysts = t
            .array("analyst")?
            .iter()
            .map(|a| analyst(a, &datasets))
            .collect::<Result<Vec<_>, _>>()?;
        t.done()?;
        unique(datasets.iter().map(|d| d.name.as_str()), "dataset name")?;
        unique(datasets.iter().map(|d| d.id.as_str()), "dataset id")?;
        unique(analysts.iter().map(|a| a.name.as_str()), "analyst name")?;
        let hashes: Vec<String> = analysts.iter().map(|a| hex(&a.token_hash)).collect();
        unique(hashes.iter().map(String::as_str), "token hash")?;
        continuations(&datasets)?;
        if datasets.is_empty() {
            return Err("it serves no dataset: add a [[dataset]]".into());
        }
        Ok(Policy {
            state_dir,
            datasets,
            analysts,
            limits,
            demo,
        })
    }

    /// The analysts whose token is one of the public demo tokens of
    /// `examples/classroom/tokens/`: anyone who has dpq's sources can use them.
    pub fn public_token_analysts(&self) -> Vec<&str> {
        let public: Vec<[u8; 32]> = PUBLIC_TOKENS
            .iter()
            .map(|t| *super::token::hash(t.trim()).as_bytes())
            .collect();
        self.analysts
            .iter()
            .filter(|a| public.contains(&a.token_hash))
            .map(|a| a.name.as_str())
            .collect()
    }

    /// What the policy allows, in words: `dpq check-policy`'s report.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for d in &self.datasets {
            out.push_str(&format!(
                "dataset `{}` (id {}): {} from {}\n  NEIGHBOURS {}, budget {}{} shared by all its analysts{}\n  statements: {}; mechanisms: {}\n",
                d.name,
                d.id,
                match &d.columns {
                    Some(c) => format!("{} declared columns", c.len()),
                    None => "columns inferred from the data (so the schema analysts see depends on it: declare [dataset.columns])".to_string(),
                },
                d.source,
                d.neighbours,
                match d.accounting {
                    crate::privacy::Accounting::Zcdp => "rho (zCDP) ",
                    crate::privacy::Accounting::Pure => "",
                },
                d.budget.normalize(),
                d.rules
                    .max_eps
                    .map(|m| format!(", at most {} per query", m.normalize()))
                    .unwrap_or_default(),
                d.rules.families.iter().map(|f| f.name()).collect::<Vec<_>>().join(", "),
                d.rules.mechanisms.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
            ));
            if !d.format.is_default() {
                out.push_str(&format!("  read with {}\n", d.format.clauses()));
            }
            if let Some(cube) = &d.cube {
                out.push_str(&format!("  cube: CUBE {cube}\n"));
            }
            if let Some(old) = &d.continues {
                out.push_str(&format!(
                    "  continues the ledger of id {old}, with what was spent on it\n"
                ));
            }
        }
        for a in &self.analysts {
            let caps: Vec<String> = a
                .budgets
                .iter()
                .map(|(d, cap)| format!("`{d}` up to {}", cap.normalize()))
                .collect();
            out.push_str(&format!(
                "analyst {}: {}\n",
                a.name,
                if caps.is_empty() {
                    "no dataset".to_string()
                } else {
                    caps.join(", ")
                }
            ));
        }
        out.push_str("No analyst may LOAD, SET BUDGET, SET SEED, declare a cube or write a chart; the dataset's budget bounds all its analysts together.");
        if self.demo {
            out.push_str("\nA demo (`demo = true`): `dpq serve --reset-demo` clears its state directory, and every budget with it.");
        }
        out
    }
}

/// The keys of one TOML table, taken one by one; any key left over is an error.
struct Keys<'a> {
    what: String,
    table: &'a toml::Table,
    taken: Vec<&'static str>,
}

impl<'a> Keys<'a> {
    fn new(what: impl Into<String>, table: &'a toml::Table) -> Self {
        Keys {
            what: what.into(),
            table,
            taken: Vec::new(),
        }
    }

    fn get(&mut self, key: &'static str) -> Option<&'a Value> {
        self.taken.push(key);
        self.table.get(key)
    }

    fn wrong(&self, key: &str, expected: &str) -> String {
        format!("{}: `{key}` must be {expected}", self.what)
    }

    fn string(&mut self, key: &'static str) -> Result<Option<String>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.wrong(key, "a string")),
        }
    }

    fn required(&mut self, key: &'static str) -> Result<String, String> {
        self.string(key)?
            .ok_or_else(|| format!("{}: `{key}` is missing", self.what))
    }

    fn boolean(&mut self, key: &'static str) -> Result<Option<bool>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(*b)),
            Some(_) => Err(self.wrong(key, "true or false")),
        }
    }

    fn number(&mut self, key: &'static str) -> Result<Option<Decimal>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => decimal(v)
                .map(Some)
                .ok_or_else(|| self.wrong(key, "a number")),
        }
    }

    fn integer(&mut self, key: &'static str) -> Result<Option<u64>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Integer(i)) if *i > 0 => Ok(Some(*i as u64)),
            Some(_) => Err(self.wrong(key, "a positive whole number")),
        }
    }

    fn strings(&mut self, key: &'static str) -> Result<Option<Vec<String>>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "a list of strings")),
            Some(_) => Err(self.wrong(key, "a list of strings")),
        }
    }

    fn table(&mut self, key: &'static str) -> Result<Option<&'a toml::Table>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Table(t)) => Ok(Some(t)),
            Some(_) => Err(self.wrong(key, "a table")),
        }
    }

    fn array(&mut self, key: &'static str) -> Result<Vec<&'a toml::Table>, String> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(Value::as_table)
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| self.wrong(key, &format!("written [[{key}]]"))),
            Some(_) => Err(self.wrong(key, &format!("written [[{key}]]"))),
        }
    }

    /// Refuses keys the policy does not know (a misspelt key would silently do nothing).
    fn done(&self) -> Result<(), String> {
        match self
            .table
            .keys()
            .find(|k| !self.taken.contains(&k.as_str()))
        {
            Some(k) => Err(format!("{}: unknown key `{k}`", self.what)),
            None => Ok(()),
        }
    }
}

/// A TOML number (or a string holding one) as an exact decimal: `0.1` is one tenth.
fn decimal(v: &Value) -> Option<Decimal> {
    match v {
        // The shortest text that reads back as the float: what the curator wrote.
        Value::Float(f) if f.is_finite() => Decimal::from_str(&f.to_string()).ok(),
        Value::Integer(i) => Some(Decimal::from(*i)),
        Value::String(s) => Decimal::from_str(s.trim()).ok(),
        _ => None,
    }
}

fn limits(t: &toml::Table) -> Result<Limits, String> {
    let mut k = Keys::new("[limits]", t);
    let d = Limits::default();
    let size = |v: Option<u64>, default: usize| v.map_or(default, |v| v as usize);
    let q = d.quotas;
    let l = Limits {
        max_request_bytes: size(k.integer("max_request_bytes")?, d.max_request_bytes),
        max_statements: size(k.integer("max_statements")?, d.max_statements),
        request_millis: k.integer("request_millis")?.unwrap_or(d.request_millis),
        body_millis: k.integer("body_millis")?.unwrap_or(d.body_millis),
        max_requests_in_flight: size(
            k.integer("max_requests_in_flight")?,
            d.max_requests_in_flight,
        ),
        max_connections: size(k.integer("max_connections")?, d.max_connections),
        max_response_bytes: size(k.integer("max_response_bytes")?, d.max_response_bytes),
        quotas: Quotas {
            max_simulate_runs: k
                .integer("max_simulate_runs")?
                .unwrap_or(q.max_simulate_runs),
            max_releases: size(k.integer("max_releases")?, q.max_releases),
            max_statement_bytes: size(k.integer("max_statement_bytes")?, q.max_statement_bytes),
        },
    };
    k.done()?;
    Ok(l)
}

/// Whether `s` is a name a statement can write without quotes: a letter or `_`, then letters,
/// digits or `_`.
fn plain_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && s.len() <= 64
}

/// The most `response_ms` a dataset may ask for: ten minutes.
pub const MAX_RESPONSE_MS: u64 = 600_000;

/// Whether `id` is a dataset id: 1 to 100 of letters, digits, `-`, `_` and `.`.
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 100
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn dataset(t: &toml::Table, base: &Path) -> Result<Dataset, String> {
    let mut k = Keys::new("a [[dataset]]", t);
    let name = k.required("name")?;
    if !plain_name(&name) {
        return Err(format!(
            "dataset `{name}`: its name must be a plain word (letters, digits and _, at most 64)"
        ));
    }
    k.what = format!("dataset `{name}`");
    let id = k.required("id")?;
    if !valid_id(&id) {
        return Err(format!(
            "dataset `{name}`: its id must be 1 to 100 of letters, digits, '-', '_' and '.'"
        ));
    }
    let continues = k.string("continues")?;
    if let Some(old) = &continues {
        if !valid_id(old) {
            return Err(format!(
                "dataset `{name}`: `continues` names an id: 1 to 100 of letters, digits, '-', '_' and '.'"
            ));
        }
        if *old == id {
            return Err(format!(
                "dataset `{name}`: `continues = \"{old}\"` names its own id; `continues` is for a new id that keeps an old one's ledger"
            ));
        }
    }
    let response_ms = match k.get("response_ms") {
        None => None,
        Some(Value::Integer(ms)) if (0..=MAX_RESPONSE_MS as i64).contains(ms) => Some(*ms as u64),
        Some(_) => {
            return Err(format!(
                "dataset `{name}`: `response_ms` must be a whole number of milliseconds from 0 to {MAX_RESPONSE_MS}"
            ))
        }
    };
    let engines = (k.string("postgres")?, k.string("spark")?);
    let source = match (k.string("source")?, engines, k.string("table")?) {
        (Some(path), (None, None), None) => DataSource::File(base.join(path)),
        (None, (Some(conninfo), None), Some(table)) => DataSource::Postgres { conninfo, table },
        (None, (None, Some(url)), Some(table)) => DataSource::Spark {
            url,
            table: table.split('.').map(str::to_string).collect(),
        },
        (None, (Some(_), None), None) | (None, (None, Some(_)), None) => {
            return Err(format!(
                "dataset `{name}`: `postgres` or `spark` names a server; add `table = \"name\"`"
            ))
        }
        _ => {
            return Err(format!(
                "dataset `{name}`: give either `source` (a CSV or Parquet file), or `postgres` and `table`, or `spark` and `table`"
            ))
        }
    };
    let header = k.boolean("header")?.unwrap_or(true);
    let format = csv_format(&mut k, &source, &name)?;
    let unit = match (k.string("privacy_unit")?, k.integer("max_rows_per_unit")?) {
        (None, None) => None,
        (None, Some(_)) => {
            return Err(format!(
                "dataset `{name}`: `max_rows_per_unit` bounds the rows of a `privacy_unit`, which is missing"
            ))
        }
        (Some(column), None) => {
            return Err(format!(
                "dataset `{name}`: `privacy_unit = \"{column}\"` needs a bound on each unit's rows: add `max_rows_per_unit = k`"
            ))
        }
        (Some(column), Some(k)) => {
            let max_rows = u32::try_from(k)
                .ok()
                .filter(|k| (1..=crate::privacy::MAX_UNIT_ROWS).contains(k))
                .ok_or_else(|| {
                    format!(
                        "dataset `{name}`: `max_rows_per_unit` must be a whole number from 1 to {}",
                        crate::privacy::MAX_UNIT_ROWS
                    )
                })?;
            Some(crate::privacy::Unit {
                column,
                max_rows,
                header,
                reading: format.clauses(),
            })
        }
    };
    let neighbours = match k.string("neighbours")? {
        None if unit.is_some() => Neighbours::AddRemove,
        None => Neighbours::Replace,
        Some(n) => Neighbours::from_name(&n).ok_or_else(|| {
            format!("dataset `{name}`: `neighbours` must be \"replace\" or \"add_remove\"")
        })?,
    };
    if unit.is_some() && neighbours == Neighbours::Replace {
        return Err(format!(
            "dataset `{name}`: a privacy unit is added or removed with all its rows: its model is `neighbours = \"add_remove\"`"
        ));
    }
    if let Some(public) = k.boolean("n_public")? {
        if public != (neighbours == Neighbours::Replace) {
            return Err(format!(
                "dataset `{name}`: n is public exactly when neighbouring tables have the same size: `n_public = {public}` needs `neighbours = \"{}\"`",
                if public { "replace" } else { "add_remove" }
            ));
        }
    }
    let accounting = match k.string("accounting")? {
        None => crate::privacy::Accounting::Pure,
        Some(a) => crate::privacy::Accounting::from_name(&a).ok_or_else(|| {
            format!("dataset `{name}`: unknown accounting `{a}` (known: pure, zcdp)")
        })?,
    };
    let (budget, budget_rho) = (
        positive(k.number("budget")?, &name, "budget")?,
        positive(k.number("budget_rho")?, &name, "budget_rho")?,
    );
    let budget = match (accounting, budget, budget_rho) {
        (crate::privacy::Accounting::Pure, Some(b), None) => b,
        (crate::privacy::Accounting::Zcdp, None, Some(r)) => r,
        (crate::privacy::Accounting::Pure, None, None) => {
            return Err(format!("dataset `{name}`: `budget` is missing"))
        }
        (crate::privacy::Accounting::Zcdp, _, None) => {
            return Err(format!(
                "dataset `{name}`: `accounting = \"zcdp\"` needs `budget_rho`, its total in rho (and no `budget`)"
            ))
        }
        (crate::privacy::Accounting::Pure, _, Some(_)) => {
            return Err(format!(
                "dataset `{name}`: `budget_rho` is a zCDP dataset's budget: add `accounting = \"zcdp\"`, or give `budget` in epsilon"
            ))
        }
        (crate::privacy::Accounting::Zcdp, Some(_), Some(_)) => {
            return Err(format!(
                "dataset `{name}`: a zCDP dataset's budget is `budget_rho` alone; drop `budget`"
            ))
        }
    };
    let max_eps = positive(k.number("max_eps_per_query")?, &name, "max_eps_per_query")?;
    if max_eps.is_some() && accounting == crate::privacy::Accounting::Zcdp {
        return Err(format!(
            "dataset `{name}`: `max_eps_per_query` caps epsilons; a zCDP dataset's answers are bounded by `budget_rho` and each analyst's cap"
        ));
    }
    if max_eps.is_some_and(|m| m > budget) {
        return Err(format!(
            "dataset `{name}`: `max_eps_per_query` is above its `budget`"
        ));
    }
    let families = match k.strings("statements")? {
        None => DEFAULT_FAMILIES.to_vec(),
        Some(names) => names
            .iter()
            .map(|n| {
                Family::from_name(n).ok_or_else(|| {
                    format!(
                        "dataset `{name}`: unknown statement family `{n}` (known: {})",
                        Family::ALL.map(|(n, _)| n).join(", ")
                    )
                })
            })
            .collect::<Result<_, _>>()?,
    };
    let mechanisms = match k.strings("mechanisms")? {
        None if accounting == crate::privacy::Accounting::Zcdp => vec![
            Mechanism::Laplace,
            Mechanism::Geometric,
            Mechanism::Staircase,
            Mechanism::Smooth,
            Mechanism::Gaussian,
        ],
        None => vec![
            Mechanism::Laplace,
            Mechanism::Geometric,
            Mechanism::Staircase,
            Mechanism::Smooth,
        ],
        Some(names) => names
            .iter()
            .map(|n| {
                Mechanism::from_name(n).ok_or_else(|| {
                    format!("dataset `{name}`: unknown mechanism `{n}` (known: laplace, geometric, staircase, smooth, gaussian)")
                })
            })
            .collect::<Result<_, _>>()?,
    };
    let show_dataset_budget = k.boolean("show_dataset_budget")?.unwrap_or(true);
    let cube = k.string("cube")?;
    let columns = match k.table("columns")? {
        None => None,
        Some(c) => Some(columns(c, &name)?),
    };
    if !source.is_csv() {
        // Parquet files and database tables name and type their own columns.
        let what = if header {
            None
        } else {
            Some("`header = false`")
        };
        let what = what
            .or(columns.as_ref().map(|_| "[dataset.columns]"))
            .or(unit.as_ref().map(|_| "`privacy_unit`"));
        if let Some(what) = what {
            return Err(format!(
                "dataset `{name}`: {what} is for CSV files; {source} has its own schema, and dpq bounds privacy units of CSV data only"
            ));
        }
    }
    k.done()?;
    Ok(Dataset {
        name,
        id,
        source,
        header,
        format,
        columns,
        neighbours,
        unit,
        budget,
        accounting,
        cube,
        rules: Rules {
            families,
            mechanisms,
            max_eps,
            show_dataset_budget,
        },
        continues,
        response_ms,
    })
}

/// `delimiter = ";"` and `decimal = ","`, read as `LOAD`'s `DELIMITER` and `DECIMAL` read
/// them (`'\t'`, a backslash and a `t`, is a tab too); a CSV file's default is its name's
/// (a tab for `.tsv`). For CSV files only.
fn csv_format(
    k: &mut Keys<'_>,
    source: &DataSource,
    name: &str,
) -> Result<crate::data::CsvFormat, String> {
    use crate::data::{decimal_comma, delimiter_byte, CsvFormat};
    let (delimiter, decimal) = (k.string("delimiter")?, k.string("decimal")?);
    let path = match source {
        DataSource::File(path) if source.is_csv() => path,
        _ => {
            return match (&delimiter, &decimal) {
                (None, None) => Ok(CsvFormat::default()),
                (given, _) => Err(format!(
                    "dataset `{name}`: `{}` is for CSV files; {source} is not CSV text",
                    if given.is_some() {
                        "delimiter"
                    } else {
                        "decimal"
                    }
                )),
            }
        }
    };
    let bad = |key: &str, e: crate::data::FormatError| format!("dataset `{name}`: `{key}`: {e}");
    let mut format = CsvFormat::for_path(path);
    if let Some(d) = &delimiter {
        format.delimiter = delimiter_byte(d).map_err(|e| bad("delimiter", e))?;
    }
    if let Some(d) = &decimal {
        format.decimal_comma = decimal_comma(d).map_err(|e| bad("decimal", e))?;
    }
    format.check().map_err(|e| bad("decimal", e))?;
    Ok(format)
}

fn positive(v: Option<Decimal>, dataset: &str, key: &str) -> Result<Option<Decimal>, String> {
    match v {
        Some(d) if d <= Decimal::ZERO => Err(format!(
            "dataset `{dataset}`: `{key}` must be a positive number"
        )),
        other => Ok(other),
    }
}

/// The declared columns, in the order written: `name = "type"` or `name = { type = "...",
/// min = .., max = .. }` or `{ type = "text", values = [...] }`.
fn columns(t: &toml::Table, dataset: &str) -> Result<Vec<Declared>, String> {
    t.iter()
        .map(|(name, v)| {
            let what = format!("dataset `{dataset}`, column `{name}`");
            if name.is_empty() || name.chars().any(char::is_control) {
                return Err(format!("{what}: a column name must be plain text"));
            }
            let ty = |s: &str| match s {
                "integer" => Ok(ColumnType::Integer),
                "float" => Ok(ColumnType::Float),
                "text" => Ok(ColumnType::Text),
                "boolean" => Ok(ColumnType::Boolean),
                _ => Err(format!(
                    "{what}: the type must be integer, float, text or boolean"
                )),
            };
            match v {
                Value::String(s) => Ok(Declared::new(name.clone(), ty(s)?)),
                Value::Table(spec) => {
                    let mut k = Keys::new(what.clone(), spec);
                    let ty = ty(&k.required("type")?)?;
                    let min = k.number("min")?;
                    let max = k.number("max")?;
                    let values = k.strings("values")?;
                    k.done()?;
                    let domain = match (min, max, values, ty) {
                        (None, None, None, _) => Domain::Any,
                        (Some(min), Some(max), None, ColumnType::Integer | ColumnType::Float)
                            if min <= max =>
                        {
                            Domain::Range { min, max }
                        }
                        (None, None, Some(v), ColumnType::Text) if !v.is_empty() => {
                            Domain::Values(v)
                        }
                        _ => {
                            return Err(format!(
                                "{what}: a domain is `min` and `max` (min <= max) on a number column, or a non-empty `values` list on a text column"
                            ))
                        }
                    };
                    Ok(Declared {
                        name: name.clone(),
                        ty,
                        domain,
                    })
                }
                _ => Err(format!(
                    "{what}: write `{name} = \"integer\"` or `{name} = {{ type = \"integer\", min = 0, max = 120 }}`"
                )),
            }
        })
        .collect()
}

fn analyst(t: &toml::Table, datasets: &[Dataset]) -> Result<Analyst, String> {
    let mut k = Keys::new("an [[analyst]]", t);
    let name = k.required("name")?;
    if !plain_name(&name) {
        return Err(format!(
            "analyst `{name}`: the name must be a plain word (letters, digits and _, at most 64)"
        ));
    }
    k.what = format!("analyst `{name}`");
    let hash = k.required("token_hash")?;
    let token_hash = super::token::parse_hash(&hash).ok_or_else(|| {
        format!("analyst `{name}`: `token_hash` must be what `dpq token` prints (blake3:...)")
    })?;
    let mut budgets = Vec::new();
    if let Some(b) = k.table("budgets")? {
        for (dataset, cap) in b {
            let Some(d) = datasets.iter().find(|d| d.name == *dataset) else {
                return Err(format!(
                    "analyst `{name}`: no dataset `{dataset}` in `budgets`"
                ));
            };
            let cap = decimal(cap).filter(|c| *c > Decimal::ZERO).ok_or_else(|| {
                format!("analyst `{name}`: the cap on `{dataset}` must be a positive number")
            })?;
            if cap > d.budget {
                return Err(format!(
                    "analyst `{name}`: the cap on `{dataset}` ({}) is above the dataset's budget ({})",
                    cap.normalize(),
                    d.budget.normalize()
                ));
            }
            budgets.push((dataset.clone(), cap));
        }
    }
    k.done()?;
    Ok(Analyst {
        name,
        token_hash,
        budgets,
    })
}

/// Refuses a `continues` that would make two datasets of the policy share one ledger: one
/// naming another served dataset's id, or two naming the same id.
fn continuations(datasets: &[Dataset]) -> Result<(), String> {
    for (i, d) in datasets.iter().enumerate() {
        let Some(old) = &d.continues else { continue };
        if let Some(other) = datasets.iter().find(|o| o.id == *old) {
            return Err(format!(
                "dataset `{}` (id {}): `continues = \"{old}\"` names the id of dataset `{}`, which this policy serves too; two datasets cannot share one ledger: drop `continues`, or stop serving `{}`",
                d.name, d.id, other.name, other.name
            ));
        }
        if let Some(other) = datasets[..i].iter().find(|o| o.continues == d.continues) {
            return Err(format!(
                "datasets `{}` (id {}) and `{}` (id {}) both continue id {old}; two datasets cannot share one ledger",
                other.name, other.id, d.name, d.id
            ));
        }
    }
    Ok(())
}

fn unique<'a>(items: impl Iterator<Item = &'a str>, what: &str) -> Result<(), String> {
    let mut seen: Vec<&str> = Vec::new();
    for i in items {
        if seen.contains(&i) {
            return Err(format!("two entries share the {what} `{i}`"));
        }
        seen.push(i);
    }
    Ok(())
}

fn hex(bytes: &[u8; 32]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str = "blake3:0000000000000000000000000000000000000000000000000000000000000001";

    fn parse(text: &str) -> Result<Policy, String> {
        Policy::parse(text, Path::new("/srv"))
    }

    #[test]
    fn a_full_policy_reads_as_written() {
        let p = parse(&format!(
            r#"
state_dir = "state"
[limits]
max_statements = 10
max_releases = 7
max_simulate_runs = 5000

[[dataset]]
name = "survey"
id = "survey-2026.v1"
source = "survey.csv"
neighbours = "add_remove"
budget = 1.0
max_eps_per_query = 0.25
statements = ["count", "estimate"]
mechanisms = ["laplace"]
cube = "BY age (30, 65)"
[dataset.columns]
age = {{ type = "integer", min = 0, max = 120 }}
sex = {{ type = "text", values = ["F", "M"] }}
income = "float"

[[analyst]]
name = "ana"
token_hash = "{HASH}"
budgets = {{ survey = 0.5 }}
"#
        ))
        .expect("valid");
        assert_eq!(p.state_dir, Some(PathBuf::from("/srv/state")));
        assert_eq!(p.limits.max_statements, 10);
        assert_eq!(p.limits.quotas.max_releases, 7);
        assert_eq!(p.limits.quotas.max_simulate_runs, 5000);
        assert_eq!(p.limits.max_requests_in_flight, 4, "the default");
        let d = &p.datasets[0];
        assert_eq!(d.source, DataSource::File(PathBuf::from("/srv/survey.csv")));
        assert_eq!(d.neighbours, Neighbours::AddRemove);
        assert_eq!(d.budget, Decimal::ONE);
        assert_eq!(
            d.rules.max_eps,
            Some(Decimal::from_str("0.25").expect("decimal"))
        );
        assert_eq!(d.rules.families, vec![Family::Count, Family::Estimate]);
        let names: Vec<&str> = d
            .columns
            .as_ref()
            .expect("declared")
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(names, ["age", "sex", "income"], "the order written");
        assert_eq!(
            p.analysts[0].budgets,
            vec![(
                "survey".to_string(),
                Decimal::from_str("0.5").expect("decimal")
            )]
        );
    }

    #[test]
    fn a_privacy_unit_makes_the_model_add_remove() {
        let d = &parse(&format!(
            "[[dataset]]\nname = \"v\"\nid = \"v1\"\nsource = \"v.csv\"\nbudget = 1\nprivacy_unit = \"pid\"\nmax_rows_per_unit = 4\n[[analyst]]\nname = \"ana\"\ntoken_hash = \"{HASH}\"\n"
        ))
        .expect("a policy")
        .datasets[0];
        assert_eq!(d.neighbours, Neighbours::AddRemove);
        assert_eq!(
            d.unit,
            Some(crate::privacy::Unit {
                column: "pid".into(),
                max_rows: 4,
                header: true,
                reading: String::new(),
            })
        );
    }

    #[test]
    fn a_csv_dataset_says_its_delimiter_and_decimal_mark() {
        let one = |source: &str, extra: &str| {
            parse(&format!(
                "[[dataset]]\nname = \"s\"\nid = \"s1\"\nsource = \"{source}\"\nbudget = 1\nprivacy_unit = \"id\"\nmax_rows_per_unit = 2\n{extra}\n[[analyst]]\nname = \"ana\"\ntoken_hash = \"{HASH}\"\n"
            ))
        };
        let d = &one("s.csv", "delimiter = \";\"\ndecimal = \",\"")
            .expect("a policy")
            .datasets[0];
        assert_eq!(d.format.clauses(), "DELIMITER ';' DECIMAL ','");
        assert_eq!(
            d.unit.as_ref().map(|u| u.reading.as_str()),
            Some("DELIMITER ';' DECIMAL ','")
        );
        // A .tsv file is read with tabs, and `'\t'` (TOML's literal string) names a tab too.
        let tsv = &one("s.TSV", "").expect("a policy").datasets[0];
        assert_eq!(tsv.format.delimiter, b'\t');
        let literal = &one("s.txt", "delimiter = '\\t'")
            .expect("a policy")
            .datasets[0];
        assert_eq!(literal.format.delimiter, b'\t');
        for (source, extra, says) in [
            (
                "s.csv",
                "decimal = \",\"",
                "`decimal`: DECIMAL ',' needs another DELIMITER",
            ),
            (
                "s.csv",
                "delimiter = \";;\"",
                "`delimiter`: DELIMITER takes one character",
            ),
            (
                "e.parquet",
                "delimiter = \";\"",
                "`delimiter` is for CSV files",
            ),
        ] {
            let err = one(source, extra).expect_err(says);
            assert!(err.contains(says), "{source} {extra}: {err}");
        }
    }

    #[test]
    fn parquet_and_postgres_sources_have_their_own_schemas() {
        let one = |source: &str, extra: &str| {
            parse(&format!(
                "[[dataset]]\nname = \"s\"\nid = \"s1\"\n{source}\nbudget = 1\n{extra}\n[[analyst]]\nname = \"ana\"\ntoken_hash = \"{HASH}\"\n"
            ))
        };
        let pg = one("postgres = \"host=db dbname=x\"\ntable = \"events\"", "").expect("a policy");
        assert_eq!(
            pg.datasets[0].source,
            DataSource::Postgres {
                conninfo: "host=db dbname=x".into(),
                table: "events".into()
            }
        );
        // The connection string, which can hold a password, is never shown.
        assert!(!pg.describe().contains("host=db"), "{}", pg.describe());
        assert!(one("source = \"e.parquet\"", "").is_ok());
        let lake =
            one("spark = \"sc://h:15002\"\ntable = \"main.lake.events\"", "").expect("a policy");
        assert_eq!(
            lake.datasets[0].source,
            DataSource::Spark {
                url: "sc://h:15002".into(),
                table: vec!["main".into(), "lake".into(), "events".into()]
            }
        );
        assert!(lake.describe().contains("Spark table main.lake.events"));
        for (source, extra, says) in [
            (
                "source = \"e.parquet\"",
                "header = false",
                "`header = false` is for CSV files",
            ),
            (
                "source = \"e/*.parquet\"",
                "[dataset.columns]\nage = \"integer\"",
                "[dataset.columns] is for CSV files",
            ),
            (
                "postgres = \"host=db\"\ntable = \"t\"",
                "privacy_unit = \"id\"\nmax_rows_per_unit = 2",
                "`privacy_unit` is for CSV files",
            ),
            ("postgres = \"host=db\"", "", "add `table = \"name\"`"),
            ("spark = \"sc://h:15002\"", "", "add `table = \"name\"`"),
            (
                "spark = \"sc://h\"\npostgres = \"host=db\"\ntable = \"t\"",
                "",
                "or `spark` and `table`",
            ),
            (
                "spark = \"sc://h\"\ntable = \"t\"",
                "privacy_unit = \"id\"\nmax_rows_per_unit = 2",
                "`privacy_unit` is for CSV files",
            ),
            (
                "source = \"s.csv\"\npostgres = \"host=db\"\ntable = \"t\"",
                "",
                "either `source`",
            ),
        ] {
            let err = one(source, extra).expect_err(says);
            assert!(err.contains(says), "{source} {extra}: {err}");
        }
    }

    #[test]
    fn continues_and_response_ms_are_read_and_checked() {
        let one = |extra: &str| {
            parse(&format!(
                "[[dataset]]\nname = \"s\"\nid = \"s2\"\nsource = \"s.csv\"\nbudget = 1\n{extra}\n"
            ))
        };
        let d = &one("continues = \"s1\"\nresponse_ms = 0")
            .expect("valid")
            .datasets[0];
        assert_eq!(d.continues.as_deref(), Some("s1"));
        assert_eq!(d.response_ms, Some(0), "0 turns padding off");
        let d = &one("response_ms = 600000").expect("valid").datasets[0];
        assert_eq!(
            (d.continues.as_deref(), d.response_ms),
            (None, Some(600_000))
        );
        assert_eq!(one("").expect("valid").datasets[0].response_ms, None);
        for (extra, says) in [
            ("response_ms = 600001", "`response_ms` must be"),
            ("response_ms = -1", "`response_ms` must be"),
            ("response_ms = 1.5", "`response_ms` must be"),
            ("continues = \"s2\"", "names its own id"),
            ("continues = \"a b\"", "`continues` names an id"),
        ] {
            let err = one(extra).expect_err(says);
            assert!(err.contains(says), "{extra}: {err}");
        }
        let two = |a: &str, b: &str| {
            parse(&format!(
                "[[dataset]]\nname = \"a\"\nid = \"a2\"\nsource = \"a.csv\"\nbudget = 1\n{a}\n[[dataset]]\nname = \"b\"\nid = \"b2\"\nsource = \"b.csv\"\nbudget = 1\n{b}\n"
            ))
        };
        let err = two("continues = \"b2\"", "").expect_err("served too");
        assert!(err.contains("which this policy serves too"), "{err}");
        let err = two("continues = \"x\"", "continues = \"x\"").expect_err("both");
        assert!(err.contains("both continue id x"), "{err}");
    }

    #[test]
    fn the_public_tokens_are_the_shipped_ones() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/classroom/tokens");
        let shipped = std::fs::read_dir(&dir)
            .expect("the demo tokens")
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "token"))
            })
            .count();
        assert_eq!(shipped, PUBLIC_TOKENS.len(), "every shipped token is known");
        let classroom = Policy::read(&dir.join("../policy.toml")).expect("the classroom");
        assert_eq!(classroom.public_token_analysts(), ["alice", "bob", "carol"]);
        let mine = parse(&format!(
            "[[dataset]]\nname = \"s\"\nid = \"s1\"\nsource = \"s.csv\"\nbudget = 1\n[[analyst]]\nname = \"ana\"\ntoken_hash = \"{HASH}\"\n"
        ))
        .expect("valid");
        assert!(mine.public_token_analysts().is_empty());
    }

    /// `accounting = "zcdp"` with `budget_rho`: the dataset's budget is in rho, Gaussian
    /// noise is among its mechanisms, and a cap per query in epsilon is refused.
    #[test]
    fn a_zcdp_dataset_has_its_budget_in_rho() {
        let policy = |extra: &str| {
            format!(
                "[[dataset]]\nname = \"s\"\nid = \"s1\"\nsource = \"s.csv\"\naccounting = \"zcdp\"\nbudget_rho = 0.5\n{extra}\n[[analyst]]\nname = \"ana\"\ntoken_hash = \"{HASH}\"\n"
            )
        };
        let p = parse(&policy("")).expect("valid");
        let d = &p.datasets[0];
        assert_eq!(d.accounting, crate::privacy::Accounting::Zcdp);
        assert_eq!(d.budget, Decimal::new(5, 1));
        assert!(d.rules.mechanisms.contains(&Mechanism::Gaussian));
        assert!(p.describe().contains("budget rho (zCDP) 0.5"));
        let capped = parse(&policy("max_eps_per_query = 0.1")).expect_err("refused");
        assert!(
            capped.contains("`max_eps_per_query` caps epsilons"),
            "{capped}"
        );
        let pure = parse(&format!(
            "[[dataset]]\nname = \"s\"\nid = \"s1\"\nsource = \"s.csv\"\nbudget = 1\n[[analyst]]\nname = \"ana\"\ntoken_hash = \"{HASH}\"\n"
        ))
        .expect("valid");
        assert_eq!(
            pure.datasets[0].accounting,
            crate::privacy::Accounting::Pure
        );
        assert!(!pure.datasets[0]
            .rules
            .mechanisms
            .contains(&Mechanism::Gaussian));
    }

    #[test]
    fn mistakes_are_named() {
        let base = |extra: &str, analyst: &str| {
            format!(
                "[[dataset]]\nname = \"s\"\nid = \"s1\"\nsource = \"s.csv\"\nbudget = 1\n{extra}\n[[analyst]]\nname = \"ana\"\ntoken_hash = \"{HASH}\"\n{analyst}\n"
            )
        };
        for (extra, analyst, says) in [
            ("budgt = 2", "", "unknown key `budgt`"),
            ("neighbours = \"swap\"", "", "`neighbours` must be"),
            ("max_eps_per_query = 2", "", "above its `budget`"),
            ("n_public = false", "", "n_public = false"),
            (
                "statements = [\"load\"]",
                "",
                "unknown statement family `load`",
            ),
            ("mechanisms = [\"gauss\"]", "", "unknown mechanism `gauss`"),
            ("accounting = \"renyi\"", "", "unknown accounting `renyi`"),
            ("accounting = \"zcdp\"", "", "needs `budget_rho`"),
            ("accounting = \"zcdp\"\nbudget_rho = 1", "", "drop `budget`"),
            ("budget_rho = 0.5", "", "add `accounting = \"zcdp\"`"),
            ("privacy_unit = \"pid\"", "", "add `max_rows_per_unit = k`"),
            (
                "max_rows_per_unit = 3",
                "",
                "`privacy_unit`, which is missing",
            ),
            (
                "privacy_unit = \"pid\"\nmax_rows_per_unit = 0",
                "",
                "`max_rows_per_unit` must be a positive",
            ),
            (
                "privacy_unit = \"pid\"\nmax_rows_per_unit = 3\nneighbours = \"replace\"",
                "",
                "`neighbours = \"add_remove\"`",
            ),
            ("", "budgets = { s = 2 }", "above the dataset's budget"),
            ("", "budgets = { t = 0.5 }", "no dataset `t`"),
            ("", "budgets = { s = -1 }", "positive number"),
            ("[dataset.columns]\nage = \"date\"", "", "column `age`"),
            (
                "[dataset.columns]\nage = { type = \"text\", min = 0, max = 3 }",
                "",
                "a domain is",
            ),
        ] {
            let err = parse(&base(extra, analyst)).expect_err(says);
            assert!(err.contains(says), "{extra} {analyst}: {err}");
        }
        let err = parse("[[dataset]]\nname = \"a b\"\nid = \"x\"\nsource = \"s\"\nbudget = 1\n")
            .expect_err("name");
        assert!(err.contains("plain word"), "{err}");
        let err = parse("x = 1").expect_err("unknown");
        assert!(err.contains("unknown key `x`"), "{err}");
        let two = format!(
            "{}\n[[analyst]]\nname = \"bob\"\ntoken_hash = \"{HASH}\"\n",
            base("", "")
        );
        assert!(parse(&two).expect_err("shared").contains("token hash"));
    }

    #[test]
    fn a_policy_is_a_demo_only_when_it_says_so() {
        let dataset = "[[dataset]]\nname = \"s\"\nid = \"s-1\"\nsource = \"s.csv\"\nbudget = 1\n";
        assert!(!parse(dataset).expect("valid").demo);
        let demo = parse(&format!("demo = true\n{dataset}")).expect("valid");
        assert!(demo.demo);
        assert!(demo.describe().contains("--reset-demo"));
        assert!(
            !parse(&format!("demo = false\n{dataset}"))
                .expect("valid")
                .demo
        );
        let err = parse(&format!("demo = \"yes\"\n{dataset}")).expect_err("not a boolean");
        assert!(err.contains("demo"), "{err}");
    }
}
