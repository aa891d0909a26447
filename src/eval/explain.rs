//! EXPLAIN: what a statement would do, found without doing it. Nothing is spent, recorded or
//! drawn, and nothing is said that the statement itself would not reveal: public facts (the
//! table's size and schema, the cube, the budget and the released answers) only.

use super::{lab, ninety_five, staircase_law, Session};
use crate::error::EvalError;
use crate::output::{short_number, ExplainedBudget, Explanation, Output};
use crate::plan::{CountPlan, Eps, Mechanism, Plan, Spend};
use crate::span::Span;
use crate::stats::laplace;
use crate::stats::noise;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;

/// What a count would do.
pub(super) enum Verdict {
    /// A `WITHIN` requirement met by the history: answered from it, spending nothing.
    Answered(String),
    /// An identical earlier query: its recorded answer is shown again.
    Reused,
    /// A release (with the `WITHIN` path's reasons, if any).
    Releases(Option<String>),
    /// Refused (with the `WITHIN` path's reasons, if any): by the budget when no reason is
    /// given, else for the reason given.
    Refused(Option<String>, Option<String>),
}

fn step(label: &str, text: impl Into<String>) -> (String, String) {
    (label.to_string(), text.into())
}

impl Session {
    /// `EXPLAIN statement`.
    pub(super) fn explain(
        &mut self,
        plan: Plan,
        statement: String,
        span: Span,
    ) -> Result<Explanation, EvalError> {
        let nothing = |steps: Vec<(String, String)>| Explanation {
            statement: statement.clone(),
            spends: Decimal::ZERO,
            draws_noise: false,
            budget: None,
            steps,
        };
        let free = "spends nothing and draws no noise";
        Ok(match plan {
            Plan::Count(count) => match self.count(count, span, true) {
                Ok(Output::Explained(mut e)) => {
                    e.statement = statement;
                    e
                }
                Ok(_) => nothing(vec![step("does", "answers the count")]),
                Err(error) => nothing(vec![
                    step("refused", format!("{error}")),
                    step("changes", "nothing: no budget spent, no history row, no noise drawn"),
                ]),
            },
            Plan::Load { path, name, .. } => nothing(vec![
                step(
                    "does",
                    format!(
                        "reads {} as table `{name}`, inferring column types; its row count and schema are public and shown",
                        path.display()
                    ),
                ),
                step(
                    "budget",
                    format!("the file's ledger keeps its budget (a new file gets {}); {free}", super::DEFAULT_BUDGET),
                ),
            ]),
            Plan::Use { table } => nothing(vec![step("does", format!("makes `{table}` the current table; {free}"))]),
            Plan::ShowTables | Plan::ShowBudget { .. } | Plan::ShowHistory { .. } | Plan::Describe { .. } | Plan::ShowCube { .. } => {
                nothing(vec![step("does", format!("shows public facts (names, schemas, budgets, released answers); {free}"))])
            }
            Plan::SetBudget { table, total } => {
                let spent = self.files[self.entries[self.index(&table)].file]
                    .ledger
                    .history()
                    .spent();
                nothing(vec![if total < spent {
                    step(
                        "refused",
                        format!("{spent} is already spent on `{table}`, more than {total}: nothing would change"),
                    )
                } else {
                    step(
                        "does",
                        format!("sets the total budget of `{table}` to {total} ({spent} spent); {free}"),
                    )
                }])
            }
            Plan::SetSeed { seed } => nothing(vec![step(
                "does",
                format!("seeds the generator with {seed}: later answers are reproducible, and so not private; {free}"),
            )]),
            Plan::ChooseEps(_) => nothing(vec![step(
                "does",
                format!("computes the epsilon meeting the requirement from its numbers alone (Naldi and D'Acquisto, eq. 10), touching no data; {free}"),
            )]),
            Plan::Cube { cells } => nothing(vec![step(
                "does",
                format!("declares a teaching cube of {cells} anonymous cells with no data; {free}"),
            )]),
            Plan::CubeBy { table, cube, .. } => nothing(vec![step(
                "does",
                format!(
                    "declares {} public cells over `{table}` (cells exist whatever the data, so declaring them reveals nothing); per-cell budgets start; {free}",
                    cube.cells()
                ),
            )]),
            Plan::Observe { measurement, eps_exact } => nothing(vec![step(
                "does",
                format!(
                    "records a measurement given by hand in the teaching cube (sensitivity {}, epsilon {}), charging its cells; no data and no noise",
                    short_number(measurement.sensitivity),
                    eps_exact.normalize()
                ),
            )]),
            Plan::Estimate { text, .. } | Plan::Prob { text, .. } => nothing(vec![step(
                "does",
                format!("answers {text} from the released answers alone (BLUE and its exact distribution, Xiao and Xiong, section 4); {free}"),
            )]),
            Plan::Simulate(sim) => {
                let points = sim.points().len();
                let mut steps = vec![
                    step(
                        "does",
                        format!(
                            "runs {} runs at each of {points} point{} on synthetic counts k ~ Binomial(n, p) with y = k + Laplace(1/eps) (paper 1, section 4); touches no table; {free}",
                            sim.runs,
                            if points == 1 { "" } else { "s" }
                        ),
                    ),
                    step(
                        "reports",
                        "the average absolute error of the naive and Bayes estimates, and the probability that Bayes is closer, with 95% Monte Carlo intervals",
                    ),
                ];
                if let Some(chart) = &sim.plot {
                    steps.push(match lab::writable(&chart.path, chart.span) {
                        Ok(()) => step("plot", format!("writes {}", chart.path.display())),
                        Err(error) => step("refused", format!("{error}: nothing would run")),
                    });
                }
                nothing(steps)
            }
            Plan::OutOfRange { .. } => nothing(vec![step(
                "does",
                format!("evaluates paper 1's eq. 2, Theorem 1 and eq. 4-6 from its numbers alone; {free}"),
            )]),
            Plan::CompareNoise { .. } => nothing(vec![step(
                "does",
                format!("compares Laplace and optimal staircase noise from formulas alone; {free}"),
            )]),
            Plan::Explain { .. } => nothing(vec![step("does", "explains")]),
        })
    }

    /// The explanation of a count of table `i`, found by [`Session::count`] in its dry mode.
    pub(super) fn count_explanation(
        &self,
        plan: &CountPlan,
        i: usize,
        eps: Option<Eps>,
        verdict: Verdict,
    ) -> Output {
        let entry = &self.entries[i];
        let file = &self.files[entry.file];
        let history = file.ledger.history();
        let n = entry.table.n_rows();
        let mut steps = vec![step(
            "table",
            format!("`{}`, {n} rows (public)", plan.table),
        )];
        steps.push(step(
            "query",
            match plan.single() {
                Some(_) => "one count".to_string(),
                None if plan.terms.len() == 1 => "one count times a coefficient".to_string(),
                None => format!("a linear combination of {} counts", plan.terms.len()),
            },
        ));
        match &file.cube {
            Some(cube) => {
                let listed: Vec<String> = plan
                    .row
                    .iter()
                    .take(8)
                    .map(|(j, c)| format!("{}×[{}]", c.normalize(), cube.cell_name(*j)))
                    .collect();
                let more = plan.row.len().saturating_sub(8);
                steps.push(step(
                    "cells",
                    format!(
                        "touches {} of the {} cells: {}{}",
                        plan.row.len(),
                        cube.cells(),
                        listed.join(", "),
                        if more > 0 {
                            format!(" and {more} more")
                        } else {
                            String::new()
                        }
                    ),
                ));
            }
            None => steps.push(step(
                "cells",
                "no cube is declared: the count is charged to the whole table",
            )),
        }
        let s = plan.sensitivity;
        steps.push(step(
            "sensitivity",
            if plan.single().is_some() {
                format!("{}: one row more or less changes a count by at most 1", s.normalize())
            } else {
                format!(
                    "S = {}, the largest absolute coefficient of a cell (Xiao and Xiong, Lemma 2.1)",
                    s.normalize()
                )
            },
        ));
        let budget_line = |spent_after: Decimal| ExplainedBudget {
            spent_before: history.spent(),
            spent_after,
            total: history.total(),
        };
        let composition = if file.cube.is_some() {
            "per-cell composition: each cell j touched is charged eps |h_j| / S, disjoint cells in parallel; the table's spent budget is its most charged cell's"
        } else {
            "sequential composition: the epsilons of all releases on the data file add up"
        };
        let mut spends = Decimal::ZERO;
        let mut draws = false;
        let mut budget = None;
        match verdict {
            Verdict::Answered(why) => {
                steps.push(step(
                    "answer",
                    format!("{why}; spends nothing and draws no noise"),
                ));
                budget = Some(budget_line(history.spent()));
            }
            Verdict::Reused => {
                steps.push(step(
                    "answer",
                    "an identical query (same condition, epsilon and mechanism) was answered before: its recorded answer is shown again, spending nothing and drawing nothing",
                ));
                budget = Some(budget_line(history.spent()));
            }
            Verdict::Releases(why) | Verdict::Refused(why, _) if eps.is_none() => {
                if let Some(why) = why {
                    steps.push(step("epsilon", why));
                }
            }
            Verdict::Refused(why, Some(reason)) => {
                if let Some(why) = why {
                    steps.push(step("epsilon", why));
                }
                steps.push(step(
                    "refused",
                    format!("{reason}: nothing would be spent, recorded or drawn"),
                ));
            }
            Verdict::Releases(why) | Verdict::Refused(why, None) => {
                let eps = eps.expect("checked above");
                let refused = history.check_row(eps.exact, &plan.row).is_err();
                if let Some(why) = why {
                    steps.push(step("epsilon", why));
                }
                let e = eps.value;
                let sf = s.to_f64().unwrap_or(f64::INFINITY);
                steps.push(step(
                    "noise",
                    match plan.mechanism {
                        Mechanism::Laplace => format!(
                            "Laplace of scale S/eps = {}/{} = {}, drawn exactly as discrete Laplace steps of a 2^-k grid; 95% of answers lie within ±{} of the truth",
                            s.normalize(),
                            eps.exact.normalize(),
                            short_number(sf / e.get()),
                            short_number(sf * laplace::interval_half_width(e, ninety_five()))
                        ),
                        Mechanism::Geometric => format!(
                            "two-sided geometric, P(z) ∝ e^(-{}|z|), whole numbers",
                            eps.exact.normalize()
                        ),
                        Mechanism::Staircase => {
                            let law = staircase_law(eps);
                            format!(
                                "staircase with inner width gamma = {} (variance-optimal, floored at 2^-10) on the grid 2^-{}: variance {} against Laplace's {}; 95% of answers lie within ±{}",
                                short_number(law.gamma()),
                                noise::STAIRCASE_GRID_BITS,
                                short_number(law.variance()),
                                short_number(2.0 / (e.get() * e.get())),
                                short_number(law.half_width(ninety_five()))
                            )
                        }
                    },
                ));
                if let Some(p) = plan.prior {
                    steps.push(step(
                        "estimate",
                        format!(
                            "the Bayes estimate with a Binomial({n}, {}) prior and its 95% credible interval (Naldi and D'Acquisto, eq. 11)",
                            p.get()
                        ),
                    ));
                }
                if matches!(plan.spend, Spend::Within { .. }) && file.cube.is_some() {
                    steps.push(step(
                        "evidence",
                        "the release becomes evidence for later estimates of the cube",
                    ));
                }
                if refused {
                    steps.push(step(
                        "refused",
                        format!(
                            "epsilon {} would exceed the budget ({} of {} spent): nothing would be spent, recorded or drawn",
                            eps.exact.normalize(),
                            history.spent().normalize(),
                            history.total().normalize()
                        ),
                    ));
                } else {
                    spends = eps.exact;
                    draws = true;
                    let after = history.spent_after(eps.exact, &plan.row);
                    budget = Some(budget_line(after));
                    steps.push(step(
                        "budget",
                        format!(
                            "spends epsilon {}: spent {} -> {} of {}",
                            eps.exact.normalize(),
                            history.spent().normalize(),
                            after.normalize(),
                            history.total().normalize()
                        ),
                    ));
                    steps.push(step("order", "the budget is checked and the spending recorded before the noise is drawn; the answer is recorded before it is shown"));
                }
                if let Some(chart) = &plan.plot {
                    steps.push(step(
                        "plot",
                        format!("writes the posterior to {}", chart.path.display()),
                    ));
                }
            }
        }
        steps.push(step("composition", composition));
        Output::Explained(Explanation {
            statement: plan.statement.clone(),
            spends,
            draws_noise: draws,
            budget,
            steps,
        })
    }
}
