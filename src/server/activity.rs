//! What `dpq serve` tells its curator while analysts work: a record per statement (who,
//! on which dataset, what kind of statement, how it ended, what it spent and what the analyst
//! has left) and, when the server stops, the run's totals per analyst and dataset.
//!
//! Only public facts and the curator's own accounting travel here: never an answer, a noisy
//! value or a count, and not the statement's text either (a `WHERE` clause carries values an
//! analyst typed), only its kind.

use crate::ast::{StatKind, StatementKind};
use crate::error::{Error, EvalError};
use crate::output::Budget;
use rust_decimal::Decimal;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

/// One statement an analyst ran, as the curator's log shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Activity {
    /// When it finished.
    pub time: SystemTime,
    /// The analyst.
    pub analyst: String,
    /// The dataset in use when it finished, if any.
    pub dataset: Option<String>,
    /// Its kind, as a keyword (`COUNT`, `HISTOGRAM`, `ESTIMATE`, ...); `?` when it did not
    /// parse.
    pub statement: &'static str,
    /// How it ended.
    pub outcome: Outcome,
    /// The epsilon it spent (zero for a refusal or an answer from the record).
    pub eps_spent: Decimal,
    /// The analyst's own budget on the dataset after it, under their cap.
    pub budget: Option<Budget>,
}

/// How a statement ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It ran.
    Answered,
    /// Its answer came from the analyst's record, at no cost.
    FromRecord,
    /// Refused: it would have spent past the analyst's budget (or a cell's, or a pair's).
    OverBudget,
    /// Refused: the dataset's budget, shared by all its analysts, has too little left.
    OverDatasetBudget,
    /// Refused: the policy does not allow it.
    NotAllowed,
    /// Its epsilon was spent but its answer could not be recorded, so it was not shown.
    NotRecorded,
    /// Any other error (it did not parse, an unknown column, ...).
    Failed,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Outcome::Answered => "answered",
            Outcome::FromRecord => "from record",
            Outcome::OverBudget => "over budget",
            Outcome::OverDatasetBudget => "over dataset budget",
            Outcome::NotAllowed => "not allowed",
            Outcome::NotRecorded => "not recorded",
            Outcome::Failed => "error",
        })
    }
}

impl Outcome {
    /// How a statement that failed with `e` ended, and the epsilon it spent.
    pub fn of_error(e: &Error) -> (Outcome, Decimal) {
        match e {
            Error::Eval(
                EvalError::BudgetExceeded { .. }
                | EvalError::CellBudgetExceeded { .. }
                | EvalError::CellsExceeded { .. }
                | EvalError::PairExceeded { .. }
                | EvalError::Exposed { .. },
            ) => (Outcome::OverBudget, Decimal::ZERO),
            Error::Eval(EvalError::DatasetBudgetExceeded { .. }) => {
                (Outcome::OverDatasetBudget, Decimal::ZERO)
            }
            Error::Eval(EvalError::NotPermitted { .. }) => (Outcome::NotAllowed, Decimal::ZERO),
            Error::Eval(EvalError::AnswerNotRecorded { eps, .. }) => (Outcome::NotRecorded, *eps),
            _ => (Outcome::Failed, Decimal::ZERO),
        }
    }

    /// How a statement whose result is the JSON object `json` ended, and the epsilon it
    /// spent.
    pub fn of_result(json: &serde_json::Value) -> (Outcome, Decimal) {
        let eps = json.get("eps_spent").map_or(Decimal::ZERO, decimal);
        if json.get("from_history") == Some(&serde_json::Value::Bool(true)) && eps.is_zero() {
            (Outcome::FromRecord, eps)
        } else {
            (Outcome::Answered, eps)
        }
    }
}

/// An epsilon of a JSON result, exact as printed (`0.1` is the decimal 0.1).
fn decimal(v: &serde_json::Value) -> Decimal {
    let text = v.to_string();
    text.parse::<Decimal>()
        .or_else(|_| Decimal::from_scientific(&text))
        .unwrap_or(Decimal::ZERO)
}

/// Where the server hands each statement's [`Activity`]: it must return at once (the
/// statement's response waits for it), so a printer hands it to a thread of its own.
pub type Log = Arc<dyn Fn(&Activity) + Send + Sync>;

/// The keyword naming a statement's kind; never any of its values.
pub fn statement_kind(kind: &StatementKind) -> &'static str {
    match kind {
        StatementKind::Load { .. } => "LOAD",
        StatementKind::Use { .. } => "USE",
        StatementKind::ShowTables => "SHOW TABLES",
        StatementKind::ShowBudget => "SHOW BUDGET",
        StatementKind::ShowHistory => "SHOW HISTORY",
        StatementKind::ShowCube => "SHOW CUBE",
        StatementKind::Describe { .. } => "DESCRIBE",
        StatementKind::SetBudget { .. } => "SET BUDGET",
        StatementKind::SetSeed { .. } => "SET SEED",
        StatementKind::SetDelta { .. } => "SET DELTA",
        StatementKind::Count(_) => "COUNT",
        StatementKind::Histogram(h) if h.by.is_some() => "COUNT BY",
        StatementKind::Histogram(_) => "HISTOGRAM",
        StatementKind::Sum(q) if q.mean => "MEAN",
        StatementKind::Sum(_) => "SUM",
        StatementKind::Statistic(q) => match q.kind {
            StatKind::Share => "SHARE",
            StatKind::Min => "MIN",
            StatKind::Median => "MEDIAN",
            StatKind::Max => "MAX",
        },
        StatementKind::Binned { .. } | StatementKind::Estimate { .. } => "ESTIMATE",
        StatementKind::ChooseEps(c) if c.rho => "CHOOSE RHO",
        StatementKind::ChooseEps(_) => "CHOOSE EPS",
        StatementKind::Cube { .. } => "CUBE",
        StatementKind::CubeBy { .. } => "CUBE BY",
        StatementKind::Observe { .. } => "OBSERVE",
        StatementKind::Prob { .. } => "PROB",
        StatementKind::Simulate(_) => "SIMULATE",
        StatementKind::OutOfRange { .. } => "OUT OF RANGE",
        StatementKind::CompareNoise { .. } | StatementKind::CompareSmooth(_) => "COMPARE NOISE",
        StatementKind::CompareAccounting { .. } => "COMPARE ACCOUNTING",
        StatementKind::Explain(_) => "EXPLAIN",
        StatementKind::Select(_) => "SELECT",
    }
}

/// What the server says when it stops: this run's statements and spending per analyst and
/// dataset, and each dataset's budget over all its analysts and runs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    /// Per analyst and dataset that ran a statement this run, by analyst then dataset.
    pub analysts: Vec<AnalystRun>,
    /// Each dataset's budget, all analysts and runs together.
    pub datasets: Vec<(String, Budget)>,
    /// The ledger lines this run wrote, and the `fsync`s that made them durable (fewer than
    /// the lines when releases arrived together: see [`crate::privacy::durable`]).
    pub durable: (u64, u64),
}

/// One analyst's run on one dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalystRun {
    /// The analyst.
    pub analyst: String,
    /// The dataset (`-` for statements with none in use).
    pub dataset: String,
    /// The statements run, refused ones included.
    pub statements: u64,
    /// The budget the analyst spent on it this run: what their spending grew by, which under
    /// a cube can be less than the sum of the epsilons.
    pub spent: Decimal,
    /// What they have left on it.
    pub remaining: Option<Decimal>,
}

/// The run's totals, kept as statements finish.
#[derive(Debug, Default)]
pub struct Tally {
    runs: BTreeMap<(String, String), Run>,
}

#[derive(Debug, Default)]
struct Run {
    statements: u64,
    /// The analyst's spending when the server started, and now.
    spent_at_start: Option<Decimal>,
    budget: Option<Budget>,
}

impl Tally {
    /// Notes what `analyst` had spent on `dataset` when the server started.
    pub fn start(&mut self, analyst: &str, dataset: &str, budget: Budget) {
        let run = self
            .runs
            .entry((analyst.to_string(), dataset.to_string()))
            .or_default();
        run.spent_at_start = Some(budget.spent);
        run.budget = Some(budget);
    }

    /// Counts a statement.
    pub fn add(&mut self, a: &Activity) {
        let dataset = a.dataset.clone().unwrap_or_else(|| "-".to_string());
        let run = self.runs.entry((a.analyst.clone(), dataset)).or_default();
        run.statements += 1;
        if a.budget.is_some() {
            run.budget = a.budget;
        }
    }

    /// The analysts' part of the summary: those who ran a statement.
    pub fn analysts(&self) -> Vec<AnalystRun> {
        self.runs
            .iter()
            .filter(|(_, r)| r.statements > 0)
            .map(|((analyst, dataset), r)| AnalystRun {
                analyst: analyst.clone(),
                dataset: dataset.clone(),
                statements: r.statements,
                spent: match (r.spent_at_start, r.budget) {
                    (Some(before), Some(now)) => (now.spent - before).max(Decimal::ZERO),
                    _ => Decimal::ZERO,
                },
                remaining: r.budget.map(|b| b.remaining),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).expect("a decimal")
    }

    fn budget(spent: &str) -> Budget {
        Budget {
            total: d("0.5"),
            spent: d(spent),
            remaining: d("0.5") - d(spent),
        }
    }

    #[test]
    fn the_tally_counts_statements_and_the_spending_they_added() {
        let mut t = Tally::default();
        t.start("alice", "people", budget("0.1"));
        t.start("bob", "people", budget("0"));
        let mut a = Activity {
            time: SystemTime::now(),
            analyst: "alice".into(),
            dataset: Some("people".into()),
            statement: "COUNT",
            outcome: Outcome::Answered,
            eps_spent: d("0.1"),
            budget: Some(budget("0.2")),
        };
        t.add(&a);
        a.outcome = Outcome::OverBudget;
        a.eps_spent = Decimal::ZERO;
        a.budget = Some(budget("0.2"));
        t.add(&a);
        let runs = t.analysts();
        // bob ran nothing: not in the summary.
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].statements, 2);
        assert_eq!(runs[0].spent, d("0.1"), "0.2 now, 0.1 at the start");
        assert_eq!(runs[0].remaining, Some(d("0.3")));
    }

    #[test]
    fn a_results_epsilon_is_read_exactly() {
        let json = serde_json::json!({"eps_spent": 0.1, "from_history": false});
        assert_eq!(Outcome::of_result(&json), (Outcome::Answered, d("0.1")));
        let json = serde_json::json!({"eps_spent": 1e-7});
        assert_eq!(Outcome::of_result(&json).1, d("0.0000001"));
        let json = serde_json::json!({"eps_spent": 0.0, "from_history": true});
        assert_eq!(Outcome::of_result(&json).0, Outcome::FromRecord);
        let json = serde_json::json!({"kind": "tables"});
        assert_eq!(
            Outcome::of_result(&json),
            (Outcome::Answered, Decimal::ZERO)
        );
    }

    #[test]
    fn a_statements_kind_names_no_value() {
        let source = "COUNT WHERE sex = 'F' AND age < 31 WITH EPS 0.1";
        let stmt =
            crate::syntax::parse_statement_at(source, crate::span::Span::new(0, source.len()))
                .expect("parses");
        assert_eq!(statement_kind(&stmt.kind), "COUNT");
        let source = "MEAN income CLAMP (0, 90000) WITH EPS 0.1";
        let stmt =
            crate::syntax::parse_statement_at(source, crate::span::Span::new(0, source.len()))
                .expect("parses");
        assert_eq!(statement_kind(&stmt.kind), "MEAN");
    }
}
