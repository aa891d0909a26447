//! What travels between `dpq connect` (or any client) and `dpq serve`: JSON bodies over HTTP.
//!
//! | method and path | body | answer |
//! |---|---|---|
//! | `POST /v1/run` | [`RunRequest`] | [`RunResponse`] (200), or [`Problem`] (400, 401, 413) |
//! | `GET /v1/catalog` | | [`Catalog`] (200), or [`Problem`] (401) |
//! | `GET /v1/account` | | [`Account`] (200), or [`Problem`] (401) |
//! | `GET /v1/health` | | `{"status": "ok"}`, without a token |
//!
//! Every request but `health` carries `Authorization: Bearer TOKEN`.

use serde::{Deserialize, Serialize};

/// Statements to run, in order, in the analyst's session on the server.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// The statements, as a script: `;`-separated, `--` comments.
    pub source: String,
}

/// What running them gave: a result per statement run, and the error that stopped them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunResponse {
    /// The results, in order, each in both forms.
    pub results: Vec<StatementResult>,
    /// The error that stopped the run, if one did; statements after it were not run.
    pub error: Option<ErrorBody>,
}

/// One statement's result: the JSON object of `--format json`, and the table text.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StatementResult {
    /// As `--format json` prints it.
    pub json: serde_json::Value,
    /// As `--format table` prints it.
    pub table: String,
}

/// An error in a statement, placed in the source sent, so a client can show it as local dpq
/// does (`FILE:LINE:COL: message`, the line, a caret, `help:`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ErrorBody {
    /// What is wrong.
    pub message: String,
    /// A fix, if known.
    pub help: Option<String>,
    /// Where, as byte offsets in the source sent.
    pub start: Option<usize>,
    /// The end of that span.
    pub end: Option<usize>,
    /// The kind of error, one word a program can branch on (`BudgetExceeded`, `SyntaxError`,
    /// ...: [`crate::error::Error::class`]); absent from servers older than it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
}

impl ErrorBody {
    /// The error as a diagnostic placed in `source`, the text sent (a span that does not fit
    /// it is dropped).
    pub fn diagnostic(&self, source: &str) -> crate::error::Diagnostic {
        let span = match (self.start, self.end) {
            (Some(start), Some(end)) if start <= end && end <= source.len() => {
                Some(crate::span::Span::new(start, end))
            }
            _ => None,
        };
        crate::error::Diagnostic {
            message: self.message.clone(),
            span,
            help: self.help.clone(),
        }
    }
}

/// A request refused as a whole: a wrong token, a malformed or oversized body.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Problem {
    /// What is wrong.
    pub problem: String,
}

/// What an analyst may query: the datasets of their policy, for completion and `help`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Catalog {
    /// The analyst.
    pub analyst: String,
    /// Their datasets.
    pub datasets: Vec<DatasetInfo>,
}

/// One dataset as an analyst sees it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DatasetInfo {
    /// The name to `USE`.
    pub name: String,
    /// Its columns and their types.
    pub columns: Vec<(String, String)>,
    /// The statement families allowed.
    pub statements: Vec<String>,
}

/// Who a token is and what each of their datasets has left: `dpq connect`'s greeting. Only
/// public facts: names, the row count where it is public, and budgets.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Account {
    /// The analyst.
    pub analyst: String,
    /// Their datasets.
    pub datasets: Vec<AccountDataset>,
}

/// One of an analyst's datasets, with what is left of it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AccountDataset {
    /// The name to `USE`.
    pub name: String,
    /// Its row count, when it is public (`NEIGHBOURS replace`), as `DESCRIBE` shows it.
    pub n: Option<u64>,
    /// The analyst's own budget on it: their cap, what they spent, what is left.
    pub budget: Amounts,
    /// The dataset's budget over all its analysts, when the policy shows it
    /// (`show_dataset_budget`).
    pub dataset: Option<Amounts>,
    /// What its budgets count: `"epsilon"` (pure) or `"rho"` (zCDP). A server older than
    /// this field sends none: epsilon.
    #[serde(default = "epsilon")]
    pub unit: String,
}

/// The unit of a budget sent by a server that does not name one.
fn epsilon() -> String {
    "epsilon".to_string()
}

/// A budget in three numbers, in the dataset's unit.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Amounts {
    /// The total.
    pub total: f64,
    /// What was spent.
    pub spent: f64,
    /// What is left.
    pub remaining: f64,
}
