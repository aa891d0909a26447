//! EXPLAIN: what a statement would do, found without doing it. Nothing is spent, recorded or
//! drawn, and nothing is said that the statement itself would not reveal: public facts (the
//! table's size and schema, the cube, the budget and the released answers) only.

use super::count::{per_step, staircase_law, Decision};
use super::{ninety_five, Session};
use crate::error::EvalError;
use crate::output::{sensitivity_rule, short_number, ExplainedBudget, Explanation};
use crate::plan::{CountPlan, Eps, Mechanism, Plan, Spend};
use crate::privacy::{Accounting, History, Neighbours, Row, Where};
use crate::span::Span;
use crate::stats::noise;
use crate::stats::{accuracy, laplace};
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;

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
        let steps = match plan {
            Plan::Count(count) => match self.explain_count(*count, span) {
                Ok(mut e) => {
                    e.statement = statement;
                    return Ok(e);
                }
                Err(error) => vec![
                    step("refused", format!("{error}")),
                    step(
                        "changes",
                        "nothing: no budget spent, no history row, no noise drawn",
                    ),
                ],
            },
            Plan::Histogram(h) => {
                let mut e = self.explain_histogram(*h, span);
                e.statement = statement;
                return Ok(e);
            }
            Plan::Sum(q) => {
                let mut e = self.explain_sum(&q);
                e.statement = statement;
                return Ok(e);
            }
            Plan::Statistic(q) => {
                let mut e = self.explain_statistic(&q);
                e.statement = statement;
                return Ok(e);
            }
            other => self.describe(other),
        };
        Ok(Explanation {
            statement,
            spends: Decimal::ZERO,
            draws_noise: false,
            budget: None,
            steps,
        })
    }

    /// What a count would do: its transaction run dry, under the ledger's lock.
    fn explain_count(&mut self, plan: CountPlan, span: Span) -> Result<Explanation, EvalError> {
        let i = self.index(&plan.table);
        let mut decision = self.decide(&plan, i, true, span)?;
        // The chart is checked first when the count runs: an unwritable one refuses it.
        if let Some(chart) = &plan.plot {
            if let Err(error) = self.chart_target(&chart.path, chart.span) {
                if let Decision::Reused { eps, explain, .. }
                | Decision::WouldRelease { eps, explain, .. } = decision
                {
                    decision = Decision::WouldRefuse {
                        eps: Some(eps),
                        explain,
                        reason: Some(error.to_string()),
                    };
                } else if let Decision::WouldRefuse { reason, .. } = &mut decision {
                    *reason = Some(error.to_string());
                }
            }
        }
        Ok(self.count_explanation(&plan, i, decision))
    }

    /// What `COMPARE ACCOUNTING` would do: it spends nothing.
    fn describe_accounting(&self, plot: Option<&crate::plan::PlotPlan>) -> (String, String) {
        step(
            "does",
            format!(
                "computes what a workload of counts costs under pure DP (Laplace, epsilons adding up) and under zCDP (Gaussian, rhos adding up, shown as (epsilon, delta) at delta {}), from the requirement's numbers alone{}; spends nothing and draws no noise",
                crate::output::short_number(self.delta),
                plot.map_or(String::new(), |p| format!(", and writes the chart to {}", p.path.display()))
            ),
        )
    }

    /// What `SET BUDGET` would do: it spends nothing.
    fn describe_budget(
        &self,
        table: &str,
        total: Decimal,
        accounting: Accounting,
    ) -> (String, String) {
        let e = &self.entries[self.index(table)];
        let history = self.ledgers.get(e.ledger).history();
        let spent = history.spent();
        if accounting != history.accounting() && !history.releases().is_empty() {
            step(
                "refused",
                format!(
                    "`{table}` has releases accounted in {}: how its budget composes is fixed",
                    history.accounting().unit()
                ),
            )
        } else if accounting == history.accounting() && total < spent {
            step(
                "refused",
                format!("{spent} is already spent on `{table}`, more than {total}: nothing would change"),
            )
        } else {
            step(
                "does",
                format!("sets the total budget of `{table}` to {} {total} ({spent} spent); spends nothing and draws no noise", accounting.unit()),
            )
        }
    }

    /// What a statement other than a count would do: all of these spend nothing.
    fn describe(&self, plan: Plan) -> Vec<(String, String)> {
        let free = "spends nothing and draws no noise";
        match plan {
            Plan::Load {
                path,
                name,
                database,
                columns,
                ..
            } => describe_load(&path, &name, database.as_ref(), columns.is_some()),
            Plan::Use { table } => vec![step("does", format!("makes `{table}` the current table; {free}"))],
            Plan::Binned(_) => vec![step("does", format!("estimates the counts of the dimension's bins from the history (the BLUE) and the statistic from them, with its probability under the noise of the releases (Monte Carlo, seeded from the statement and the answers); {free}"))],
            Plan::ShowTables | Plan::ShowBudget { .. } | Plan::ShowHistory { .. } | Plan::Describe { .. } | Plan::ShowCube { .. } => {
                vec![step("does", format!("shows public facts (names, schemas, budgets, released answers); {free}"))]
            }
            Plan::SetDelta { delta } => vec![step(
                "does",
                format!("shows every rho spent also as (epsilon, delta) at delta {}; {free}", crate::output::short_number(delta)),
            )],
            Plan::SetBudget { table, total, accounting } => vec![self.describe_budget(&table, total, accounting)],
            Plan::SetSeed { seed } => vec![step(
                "does",
                format!("seeds the generator with {seed}: later answers are reproducible, and so not private; {free}"),
            )],
            Plan::ChooseRho(_) => vec![step(
                "does",
                format!("computes the rho of a Gaussian count meeting the requirement from its numbers alone (sigma = w / z at (1 + c)/2, rho = 1 / (2 sigma^2)), touching no data; {free}"),
            )],
            Plan::ChooseEps(_) => vec![step(
                "does",
                format!("computes the epsilon meeting the requirement from its numbers alone (Naldi and D'Acquisto 2015, eq. 10), touching no data; {free}"),
            )],
            Plan::Cube { cells, neighbours } => vec![step(
                "does",
                format!("declares a teaching cube of {cells} anonymous cells with no data, neighbouring tables differing by one {} row; {free}", match neighbours {
                    crate::privacy::Neighbours::Replace => "replaced",
                    crate::privacy::Neighbours::AddRemove => "added or removed",
                }),
            )],
            Plan::CubeBy { table, cube, .. } => {
                let carried = self.carried_to(self.index(&table), &cube);
                let mut steps = vec![step(
                    "does",
                    format!(
                        "declares {} public cells over `{table}` (cells exist whatever the data, so declaring them reveals nothing); per-cell budgets start; {free}",
                        cube.cells()
                    ),
                )];
                steps.extend(carried.map(|words| step("history", words)));
                steps
            }
            Plan::Observe { row, eps_exact, .. } => {
                let (model, cells) = self
                    .cube
                    .as_ref()
                    .map_or((crate::privacy::Neighbours::AddRemove, row.len()), |c| {
                        (c.ledger.history().neighbours(), c.cells)
                    });
                let s = crate::privacy::sensitivity(model, &row, cells);
                vec![step(
                    "does",
                    format!(
                        "records a measurement given by hand in the teaching cube (sensitivity {} under NEIGHBOURS {model}, epsilon {}), charging its cells; no data and no noise",
                        s.normalize(),
                        eps_exact.normalize()
                    ),
                )]
            }
            Plan::Estimate { text, .. } | Plan::Prob { text, .. } => vec![step(
                "does",
                format!("answers {text} from the released answers alone (BLUE and its exact distribution, Xiao and Xiong 2012, section 4); {free}"),
            )],
            Plan::Simulate(sim) => self.describe_simulate(&sim),
            Plan::OutOfRange { .. } => vec![step(
                "does",
                format!("evaluates eq. 2, Theorem 1 and eq. 4-6 of Naldi and D'Acquisto 2014 from its numbers alone; {free}"),
            )],
            Plan::CompareSmooth(_) => vec![step(
                "does",
                format!("compares Laplace and data-dependent noise from formulas and values it simulates; {free}"),
            )],
            Plan::CompareAccounting { plot, .. } => vec![self.describe_accounting(plot.as_ref())],
            Plan::CompareNoise { .. } => vec![step(
                "does",
                format!("compares Laplace and optimal staircase noise from formulas alone; {free}"),
            )],
            Plan::Count(_)
            | Plan::Histogram(_)
            | Plan::Sum(_)
            | Plan::Statistic(_)
            | Plan::Explain { .. } => {
                vec![step("does", "explains")]
            }
        }
    }

    /// What `SIMULATE` would do.
    fn describe_simulate(&self, sim: &crate::plan::SimulatePlan) -> Vec<(String, String)> {
        let free = "spends nothing and draws no noise";
        let points = sim.points().len();
        let mut steps = vec![
            step(
                "does",
                format!(
                    "runs {} runs at each of {points} point{} on synthetic counts k ~ Binomial(n, p) with y = k + Laplace(1/eps) (Naldi and D'Acquisto 2014, section 4); touches no table; {free}",
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
            steps.push(match self.chart_target(&chart.path, chart.span) {
                Ok(()) => step("plot", format!("writes {}", chart.path.display())),
                Err(error) => step("refused", format!("{error}: nothing would run")),
            });
        }
        steps
    }

    /// The explanation of a count of table `i`, from its dry run's decision.
    fn count_explanation(&self, plan: &CountPlan, i: usize, decision: Decision) -> Explanation {
        let entry = &self.entries[i];
        let history = self.ledgers.get(entry.ledger).history();
        let mut steps = self.count_facts(plan, i);
        let budget_line = |spent_after: Decimal| ExplainedBudget {
            spent_before: history.spent(),
            spent_after,
            total: history.total(),
        };
        let mut spends = Decimal::ZERO;
        let mut budget = None;
        // How WITHIN chose its spending: a rho on a zCDP table (Gaussian), else an epsilon.
        let spent_word = if plan.mechanism == Mechanism::Gaussian {
            "rho"
        } else {
            "epsilon"
        };
        match decision {
            Decision::Answered(met) => {
                steps.push(step(
                    "answer",
                    format!("{}; spends nothing and draws no noise", met.reason),
                ));
                budget = Some(budget_line(history.spent()));
            }
            Decision::Reused { .. } | Decision::Released { .. } => {
                steps.push(step(
                    "answer",
                    "an identical query (same condition, epsilon and mechanism) was answered before: its recorded answer is shown again, spending nothing and drawing nothing",
                ));
                budget = Some(budget_line(history.spent()));
            }
            Decision::WouldRefuse {
                eps: None, explain, ..
            } => steps.extend(explain.map(|why| step(spent_word, why.text))),
            Decision::WouldRefuse {
                explain,
                reason: Some(reason),
                ..
            } => {
                steps.extend(explain.map(|why| step(spent_word, why.text)));
                steps.push(step(
                    "refused",
                    format!("{reason}: nothing would be spent, recorded or drawn"),
                ));
            }
            Decision::WouldRefuse {
                eps: Some(eps),
                explain,
                reason: None,
            } => {
                steps.extend(explain.map(|why| step(spent_word, why.text)));
                steps.extend(self.release_steps(plan, i, eps));
                steps.push(step(
                    "refused",
                    format!(
                        "{} {} would exceed the budget ({} of {} spent): nothing would be spent, recorded or drawn",
                        if plan.mechanism == Mechanism::Gaussian { "rho" } else { "epsilon" },
                        eps.exact.normalize(),
                        history.spent().normalize(),
                        history.total().normalize()
                    ),
                ));
            }
            Decision::WouldRelease {
                eps,
                explain,
                spent_after,
            } => {
                steps.extend(explain.map(|why| step(spent_word, why.text)));
                steps.extend(self.release_steps(plan, i, eps));
                spends = eps.exact;
                budget = Some(budget_line(spent_after));
                steps.extend(self.would_spend(plan, i, eps, spent_after));
            }
        }
        steps.push(step(
            "composition",
            composition(
                entry.cube.is_some(),
                history.neighbours(),
                history.accounting(),
            ),
        ));
        Explanation {
            statement: plan.statement.clone(),
            spends,
            draws_noise: !spends.is_zero(),
            budget,
            steps,
        }
    }

    /// What a count that fits would spend: the budget before and after, where it costs most,
    /// and the chart it would write.
    fn would_spend(
        &self,
        plan: &CountPlan,
        i: usize,
        eps: Eps,
        spent_after: Decimal,
    ) -> Vec<(String, String)> {
        let entry = &self.entries[i];
        let history = self.ledgers.get(entry.ledger).history();
        let row = Row::from_cells(&plan.row).unwrap_or_default();
        let (upper, lower, at) = history.after_bounds(eps.exact, plan.mechanism, &row);
        let exact = history.spent_is_exact() && upper == lower;
        let spend = Spending {
            eps: eps.exact,
            mechanism: plan.mechanism,
            after: spent_after,
            exact,
            delta: self.delta,
        };
        let mut steps = spend_steps(history, &spend);
        if let (Some(cube), Where::Pair(j, k)) = (&entry.cube, at) {
            let names = (cube.cell_name(j), cube.cell_name(k));
            steps.push(pair_step(names, (!exact).then_some(lower)));
        }
        if let Some(chart) = &plan.plot {
            steps.push(step(
                "plot",
                format!("writes the posterior to {}", chart.path.display()),
            ));
        }
        steps
    }

    /// The public facts of a count: its table, query, cells and sensitivity.
    fn count_facts(&self, plan: &CountPlan, i: usize) -> Vec<(String, String)> {
        let entry = &self.entries[i];
        let n = entry.table.n_rows();
        let mut steps = vec![
            step(
                "table",
                match self.ledgers.get(entry.ledger).history().neighbours() {
                    crate::privacy::Neighbours::Replace => {
                        format!("`{}`, {n} rows (public)", plan.table)
                    }
                    crate::privacy::Neighbours::AddRemove => {
                        format!(
                            "`{}`, its row count private (NEIGHBOURS add_remove)",
                            plan.table
                        )
                    }
                },
            ),
            step(
                "query",
                match plan.single() {
                    Some(_) => "one count".to_string(),
                    None if plan.terms.len() == 1 => "one count times a coefficient".to_string(),
                    None => format!("a linear combination of {} counts", plan.terms.len()),
                },
            ),
        ];
        steps.push(match &entry.cube {
            Some(cube) if plan.outside.is_some() => step(
                "cells",
                format!(
                    "answered outside the cube ({}): charged in full, its epsilon on every one of the {} cells{}, as a count made before the cube",
                    plan.outside.as_deref().unwrap_or_default(),
                    cube.cells(),
                    match self.ledgers.get(entry.ledger).history().neighbours() {
                        crate::privacy::Neighbours::Replace => " and every pair",
                        crate::privacy::Neighbours::AddRemove => "",
                    }
                ),
            ),
            Some(cube) => {
                let listed: Vec<String> = plan
                    .row
                    .iter()
                    .take(8)
                    .map(|(j, c)| format!("{}×[{}]", c.normalize(), cube.cell_name(*j)))
                    .collect();
                let more = plan.row.len().saturating_sub(8);
                step(
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
                )
            }
            None => step(
                "cells",
                "no cube is declared: the count is charged to the whole table",
            ),
        });
        let s = plan.sensitivity;
        steps.push(step(
            "sensitivity",
            if let Some(u) = &entry.unit {
                format!(
                    "{}: a row's sensitivity times {} ({}: one unit adds or removes up to {} rows; NEIGHBOURS add_remove)",
                    s.normalize(),
                    u.max_rows,
                    crate::output::unit_clause(u),
                    u.max_rows
                )
            } else if plan.single().is_some() {
                match self.ledgers.get(entry.ledger).history().neighbours() {
                    crate::privacy::Neighbours::AddRemove => format!(
                        "{}: one row more or less changes a count by at most 1 (NEIGHBOURS add_remove)",
                        s.normalize()
                    ),
                    crate::privacy::Neighbours::Replace => format!(
                        "{}: one row replaced changes a count by at most 1 (NEIGHBOURS replace)",
                        s.normalize()
                    ),
                }
            } else {
                format!(
                    "S = {} ({})",
                    s.normalize(),
                    sensitivity_rule(self.ledgers.get(entry.ledger).history().neighbours())
                )
            },
        ));
        steps
    }

    /// What a release would draw and what it would estimate.
    fn release_steps(&self, plan: &CountPlan, i: usize, eps: Eps) -> Vec<(String, String)> {
        let entry = &self.entries[i];
        let mut steps = vec![step("noise", noise_text(plan, eps))];
        if let Some(p) = plan.prior {
            steps.push(step(
                "estimate",
                format!(
                    "the Bayes estimate with a Binomial({}, {}) prior and its 95% credible interval (Naldi and D'Acquisto 2014, eq. 11)",
                    p.n.map_or_else(|| "n".to_string(), |n| n.to_string()),
                    p.p.get()
                ),
            ));
        }
        if matches!(plan.spend, Spend::Within { .. })
            && entry.cube.is_some()
            && plan.outside.is_none()
        {
            steps.push(step(
                "evidence",
                "the release becomes evidence for later estimates of the cube",
            ));
        }
        steps
    }
}

/// The noise of a release, in words.
fn noise_text(plan: &CountPlan, eps: Eps) -> String {
    let e = eps.value;
    let s = plan.sensitivity;
    let sf = s.to_f64().unwrap_or(f64::INFINITY);
    match plan.mechanism {
        Mechanism::Gaussian => {
            let sigma = super::count::gaussian_sigma(s, eps.exact);
            format!(
                "Gaussian of standard deviation S/sqrt(2 rho) = {}/sqrt(2 x {}) = {}, drawn exactly as discrete Gaussian steps of a 2^-k grid; 95% of answers lie within ±{} of the truth",
                s.normalize(),
                eps.exact.normalize(),
                short_number(sigma),
                short_number(sigma * accuracy::normal_quantile(0.975))
            )
        }
        Mechanism::Laplace => format!(
            "Laplace of scale S/eps = {}/{} = {}, drawn exactly as discrete Laplace steps of a 2^-k grid; 95% of answers lie within ±{} of the truth",
            s.normalize(),
            eps.exact.normalize(),
            short_number(sf / e.get()),
            short_number(sf * laplace::interval_half_width(e, ninety_five()))
        ),
        Mechanism::Geometric => {
            let per = per_step(eps, s).map_or(e, |p| p.value);
            let m = accuracy::geometric_half_width(per, ninety_five());
            let rate = if s == Decimal::ONE {
                eps.exact.normalize().to_string()
            } else {
                format!("({}/{})", eps.exact.normalize(), s.normalize())
            };
            format!(
                "two-sided geometric, P(z) ∝ e^(-{rate}|z|), whole numbers; the 95% interval ±{m} holds the truth with probability {:.6} (at least 0.95: whole values)",
                accuracy::geometric_coverage(per, m)
            )
        }
        Mechanism::Staircase => {
            let law = staircase_law(per_step(eps, s).unwrap_or(eps));
            format!(
                "staircase with inner width gamma = {} (variance-optimal, floored at 2^-10) on the grid 2^-{}: variance {} against Laplace's {}; 95% of answers lie within ±{}",
                short_number(law.gamma()),
                noise::STAIRCASE_GRID_BITS,
                short_number(law.variance()),
                short_number(2.0 * sf * sf / (e.get() * e.get())),
                short_number(law.half_width(ninety_five()))
            )
        }
        Mechanism::Smooth => unreachable!("checking refuses smooth noise on a count"),
    }
}

/// The costliest exchange of a row after a release, between the cells `names`: the costliest
/// pair when the cost is exact, else (`known` is its cost) the costliest pair known, the cost
/// being bounded above only (the budget step says so).
fn pair_step(names: (String, String), known: Option<Decimal>) -> (String, String) {
    let (j, k) = names;
    step(
        "pair",
        match known {
            None => format!("the costliest exchange of a row after it: between [{j}] and [{k}] (NEIGHBOURS replace)"),
            Some(lower) => format!("the costliest exchange of a row known after it: between [{j}] and [{k}], at a cost of {} (NEIGHBOURS replace; the cost is bounded above only: the history splits the cells into more than {} classes, too many to keep the cost of every pair)", lower.normalize(), crate::privacy::EXACT_CLASSES),
        },
    )
}

/// The spending of a release and the order of its steps.
/// A release as `EXPLAIN` says what it spends.
struct Spending {
    /// Its epsilon, or a Gaussian release's rho.
    eps: Decimal,
    mechanism: Mechanism,
    /// The table's spending after it.
    after: Decimal,
    /// Whether `after` is exact (else an upper bound).
    exact: bool,
    /// The delta at which a rho is shown as (epsilon, delta).
    delta: f64,
}

fn spend_steps(history: &History, spend: &Spending) -> Vec<(String, String)> {
    let bound = if spend.exact { "" } else { "at most " };
    let price = history.price(spend.eps, spend.mechanism);
    let what = match (history.accounting(), spend.mechanism) {
        (Accounting::Pure, _) => format!("epsilon {}", spend.eps.normalize()),
        (Accounting::Zcdp, Mechanism::Gaussian) => format!("rho {}", price.normalize()),
        (Accounting::Zcdp, _) => format!(
            "rho {} at most (epsilon {} of pure noise is eps^2/2 = {} rho-zCDP; per cell or pair, the square of its share)",
            price.normalize(),
            spend.eps.normalize(),
            price.normalize()
        ),
    };
    let mut steps = vec![step(
        "budget",
        format!(
            "spends {what}: spent {bound}{} -> {bound}{} of {}",
            history.spent().normalize(),
            spend.after.normalize(),
            history.total().normalize()
        ),
    )];
    if history.accounting() == Accounting::Zcdp {
        steps.push(equivalent_step(spend.after, spend.delta));
    }
    steps.push(step("order", "the budget is checked and the spending recorded before the noise is drawn; the answer is recorded before it is shown"));
    steps
}

/// Under zCDP, what a spending of `after` (rho) is as (epsilon, delta)-DP at `delta`.
pub(super) fn equivalent_step(after: Decimal, delta: f64) -> (String, String) {
    let rho = after.to_f64().unwrap_or(f64::INFINITY);
    step(
        "(eps, delta)",
        format!(
            "rho {} is ({}, {})-DP by the tight conversion of Canonne, Kamath and Steinke 2020 (the simpler rho + 2 sqrt(rho ln(1/delta)) says {})",
            after.normalize(),
            short_number(crate::privacy::zcdp::epsilon(rho, delta)),
            short_number(delta),
            short_number(crate::privacy::zcdp::epsilon_simple(rho, delta))
        ),
    )
}

/// How releases compose on the table.
fn composition(cube: bool, neighbours: Neighbours, accounting: Accounting) -> &'static str {
    match (cube, neighbours, accounting) {
        (false, _, Accounting::Zcdp) => "zCDP composition: the rhos of all releases on the data file add up (a pure release's is eps^2/2)",
        (true, Neighbours::AddRemove, Accounting::Zcdp) => "per-cell zCDP (NEIGHBOURS add_remove): each cell j touched is charged rho h_j^2 / S2^2 (a Gaussian release's H_j^2 / (2 sigma^2)), disjoint cells in parallel; the table's spent budget is its most charged cell's",
        (true, Neighbours::Replace, Accounting::Zcdp) => "pairwise zCDP (NEIGHBOURS replace): a replaced row moves from a cell j to a cell k, so each pair is charged rho (h_j - h_k)^2 / S2^2 (a Gaussian release's (h_j - h_k)^2 / (2 sigma^2)); the table's spent budget is its costliest pair's",
        _ => composition_pure(cube, neighbours),
    }
}

/// How pure releases compose on the table.
fn composition_pure(cube: bool, neighbours: Neighbours) -> &'static str {
    match (cube, neighbours) {
        (false, _) => "sequential composition: the epsilons of all releases on the data file add up",
        (true, Neighbours::AddRemove) => "per-cell composition (NEIGHBOURS add_remove): each cell j touched is charged eps |h_j| / S, disjoint cells in parallel; the table's spent budget is its most charged cell's",
        (true, Neighbours::Replace) => "pairwise composition (NEIGHBOURS replace): a replaced row moves from a cell j to a cell k, so each pair is charged eps |h_j - h_k| / S; the table's spent budget is its costliest pair's (disjoint counts add up pairwise)",
    }
}

/// What `LOAD` would do: read a file (inferring its types, or with declared columns) or ask
/// PostgreSQL for a table's schema; it spends nothing.
fn describe_load(
    path: &std::path::Path,
    name: &str,
    database: Option<&crate::ast::Database>,
    declared: bool,
) -> Vec<(String, String)> {
    let free = "spends nothing and draws no noise";
    let does = match (database, declared) {
        // The connection string can hold a password: never shown.
        (Some(d), _) if d.engine == crate::ast::Engine::Postgres => format!(
            "asks PostgreSQL for the schema and row count of its table {} as table `{name}`; every later question is sent to the database as one SQL statement",
            crate::data::escape_name(&d.parts().join("."))
        ),
        (Some(d), _) => format!(
            "asks Spark for the schema and row count of its table {} as table `{name}`; every later question is sent to Spark as one aggregate query, and only its integers come back",
            crate::data::escape_name(&d.parts().join("."))
        ),
        (None, true) => format!(
            "reads {} as table `{name}` with the declared columns only (a cell that does not parse as declared is missing); its row count is public and shown, its schema is the declared one",
            path.display()
        ),
        (None, false) => format!(
            "reads {} as table `{name}`, inferring column types; its row count and schema are public and shown",
            path.display()
        ),
    };
    vec![
        step("does", does),
        step(
            "budget",
            format!(
                "the file's ledger keeps its budget (a new file gets {}); {free}",
                super::DEFAULT_BUDGET
            ),
        ),
    ]
}

/// EXPLAIN's budget step of a release that fits: what it charges (`{e}` standing for its
/// epsilon), and the table's spending before and after, of its total.
pub(super) fn budget_step(
    charges: &str,
    eps: Decimal,
    spent: Decimal,
    after: Decimal,
    total: Decimal,
) -> (String, String) {
    (
        "budget".to_string(),
        format!(
            "{}: spent {} -> {} of {}",
            charges.replace("{e}", &eps.normalize().to_string()),
            spent.normalize(),
            after.normalize(),
            total.normalize()
        ),
    )
}
