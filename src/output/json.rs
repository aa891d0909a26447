//! Rendering of results as one JSON object per line, with the fields of SPEC section 4.

use super::{BudgetReport, HistoryReport, Output, Response, TableInfo};
use crate::plan::ChoosePlan;
use crate::privacy::{Accounting, Mechanism};
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use serde_json::{json, Value};

/// The result as one line of JSON.
pub fn render_json(response: &Response) -> String {
    let mut v = match &response.output {
        Output::Loaded(info) => table_info("loaded", info),
        Output::Using(info) => table_info("using", info),
        Output::Described(info) => table_info("table", info),
        Output::Tables(tables) => json!({
            "kind": "tables",
            "tables": tables.iter().map(|t| table_info("table", t)).collect::<Vec<_>>(),
        }),
        Output::Budget(b) => budget(b),
        Output::History(h) => history(h),
        Output::SeedSet { seed } => json!({ "kind": "seed", "seed": seed }),
        Output::DeltaSet { delta } => json!({ "kind": "delta", "delta": delta }),
        Output::Count(c) => json!({
            "kind": "count",
            "table": c.table,
            "statement": c.statement,
            "noisy": c.noisy,
            "eps": c.sigma.is_none().then(|| dec(c.eps)),
            "rho": c.sigma.is_some().then(|| dec(c.eps)),
            "sigma": c.sigma,
            "accounting": c.accounting.to_string(),
            "mechanism": c.mechanism,
            "scale": c.scale,
            "grid": c.grid,
            "n": c.n,
            "neighbours": c.neighbours.to_string(),
            "size": c.size,
            "interval95": [c.interval95.0, c.interval95.1],
            "coverage95": c.coverage95,
            "prior": c.prior,
            "bayes": c.bayes,
            "credible95": c.credible95.map(|(lo, hi)| [lo, hi]),
            "p_out_of_range_max": c.out_of_range,
            "from_history": c.from_history,
            "eps_spent": (c.accounting == Accounting::Pure).then(|| dec(c.eps_spent)),
            "rho_spent": (c.accounting == Accounting::Zcdp).then(|| dec(c.eps_spent)),
            "budget_spent": dec(c.budget_spent),
            "budget_remaining": dec(c.budget_remaining),
            "eps_delta": c.equivalent.map(|(e, d)| [e, d]),
            "sensitivity": c.sensitivity,
            "explain": c.explain,
            "outside_cube": c.outside_cube,
            // What a release alone would need: an epsilon, or a Gaussian release's rho.
            "eps_alone": c.eps_alone.filter(|_| c.sigma.is_none()).map(dec),
            "rho_alone": c.eps_alone.filter(|_| c.sigma.is_some()).map(dec),
            "combined": c.combined.as_ref().map(|a| json!({
                "estimate": a.estimate,
                "variance": a.variance,
                "confidence": a.confidence,
                "interval": [a.interval.0, a.interval.1],
                "credible95": [a.credible95.0, a.credible95.1],
            })),
            "gamma": c.gamma,
            "plot": plot(c.plot.as_ref()),
            "warnings": c.warnings,
        }),
        Output::Histogram(h) => json!({
            "kind": "histogram",
            "table": h.table,
            "statement": h.statement,
            "cells": h.parts.iter().map(|p| json!({
                "cell": p.name,
                "noisy": p.noisy,
                "interval95": [p.interval95.0, p.interval95.1],
            })).collect::<Vec<_>>(),
            "eps": h.sigma.is_none().then(|| dec(h.eps)),
            "rho": h.sigma.is_some().then(|| dec(h.eps)),
            "sigma": h.sigma,
            "accounting": h.accounting.to_string(),
            "eps_spent": (h.accounting == Accounting::Pure).then(|| dec(h.eps_spent)),
            "rho_spent": (h.accounting == Accounting::Zcdp).then(|| dec(h.eps_spent)),
            "eps_delta": h.equivalent.map(|(e, d)| [e, d]),
            "sensitivity": h.sensitivity,
            "scale": h.scale,
            "mechanism": h.mechanism,
            "coverage95": h.coverage95,
            "neighbours": h.neighbours.to_string(),
            "from_history": h.from_history,
            "budget_spent": dec(h.budget_spent),
            "budget_remaining": dec(h.budget_remaining),
            "plot": plot(h.plot.as_ref()),
        }),
        Output::Binned(b) => json!({
            "kind": "binned",
            "table": b.table,
            "statement": b.statement,
            "column": b.column,
            "quantile": b.quantile,
            "bin": b.bin,
            "bounds": [b.bounds.0, b.bounds.1],
            "bins": b.bins.iter().enumerate().map(|(k, (name, estimate, variance))| json!({
                "bin": name, "estimate": estimate, "variance": variance,
                "probability": b.holds.as_ref().map(|h| h[k]),
            })).collect::<Vec<_>>(),
            "probability": b.probability,
            "bins95": b.bins95,
            "interval95": [b.interval95.0, b.interval95.1],
            "coverage95": b.coverage95,
            "draws": b.draws,
            "eps_spent": 0.0,
        }),
        Output::Sum(r) => json!({
            "kind": if r.mean { "mean" } else { "sum" },
            "table": r.table,
            "statement": r.statement,
            "column": r.column,
            "clamp": [r.clamp.0, r.clamp.1],
            "noisy": r.value,
            "noisy_sum": r.noisy_sum,
            "noisy_count": r.noisy_count,
            "interval95": [r.interval95.0, r.interval95.1],
            "coverage95": r.coverage95,
            "eps": r.sigma.is_none().then(|| dec(r.eps)),
            "rho": r.sigma.is_some().then(|| dec(r.eps)),
            "sigma": r.sigma,
            "count_sigma": r.count_sigma,
            "accounting": r.accounting.to_string(),
            "eps_spent": (r.accounting == Accounting::Pure).then(|| dec(r.eps_spent)),
            "rho_spent": (r.accounting == Accounting::Zcdp).then(|| dec(r.eps_spent)),
            "eps_delta": r.equivalent.map(|(e, d)| [e, d]),
            "sensitivity": r.sensitivity,
            "scale": r.scale,
            "mechanism": r.mechanism,
            "neighbours": r.neighbours.to_string(),
            "from_history": r.from_history,
            "budget_spent": dec(r.budget_spent),
            "budget_remaining": dec(r.budget_remaining),
        }),
        Output::Statistic(r) => json!({
            "kind": r.kind,
            "table": r.table,
            "statement": r.statement,
            "column": r.column,
            "range": [r.range.0, r.range.1],
            "noisy": r.noisy,
            "within_range": r.within_range,
            "interval95": r.interval95.map(|(a, b)| [a, b]),
            "eps": dec(r.eps),
            "eps_spent": dec(r.eps_spent),
            "noise": r.noise,
            "gamma": r.gamma,
            "sensitivity": r.sensitivity,
            "scale": r.scale,
            "neighbours": r.neighbours.to_string(),
            "from_history": r.from_history,
            "budget_spent": dec(r.budget_spent),
            "budget_remaining": dec(r.budget_remaining),
            "note": r.note,
        }),
        Output::Simulate(r) => json!({
            "kind": "simulate",
            "rows": r.rows.iter().map(|row| {
                let mc = |i: super::Interval| json!([i.lower, i.upper]);
                json!({
                    "eps": row.eps,
                    "std": row.std,
                    "n": row.n,
                    "p": row.p,
                    "runs": row.runs,
                    "m_naive": row.m_naive.value,
                    "m_naive95": mc(row.m_naive),
                    "m_naive_exact": row.m_naive_exact,
                    "m_bayes": row.m_bayes.value,
                    "m_bayes95": mc(row.m_bayes),
                    "p_bayes_better": row.p_bayes_better.value,
                    "p_bayes_better95": mc(row.p_bayes_better),
                })
            }).collect::<Vec<_>>(),
            "plot": plot(r.plot.as_ref()),
        }),
        Output::OutOfRange(r) => json!({
            "kind": "out_of_range",
            "n": r.n,
            "eps": r.eps,
            "at": r.at.map(|(a, _)| a),
            "p_at": r.at.map(|(_, p)| p),
            "p_max": r.p_max,
            "p_min": r.p_min,
            "argmin": r.argmin,
            "p_min_eq6": r.p_min_eq6,
        }),
        Output::CompareSmooth(r) => json!({
            "kind": "compare_smooth",
            "function": r.function,
            "rows": r.rows.iter().map(|row| json!({
                "n": row.n,
                "m": row.m,
                "eps": row.eps,
                "sensitivity": row.sensitivity,
                "smooth_sensitivity": row.smooth_sensitivity,
                "laplace_half95": row.laplace_half95,
                "laplace_variance": row.laplace_variance,
                "gamma_variance": row.gamma_variance,
                "smooth_variance": row.smooth_variance,
                "smooth_half95_at_gamma_variance": row.smooth_half95_at_gamma_variance,
                "gamma_interval": row.gamma_interval,
                "smooth_half95": row.smooth_half95,
            })).collect::<Vec<_>>(),
            "regions": r.regions.iter().map(|g| json!({
                "level": g.level,
                "eps": g.eps,
                "laplace_lattice": g.laplace_lattice,
                "laplace_area": g.laplace_area,
                "staircase_flat": g.staircase_flat,
                "staircase_least": g.staircase_least,
                "top": g.top,
            })).collect::<Vec<_>>(),
            "rule_of_thumb": { "gamma": r.rule_gamma, "ratio": r.rule_ratio },
            "seeded": r.seeded,
        }),
        Output::CompareNoise(r) => json!({
            "kind": "compare_noise",
            "rows": r.rows.iter().map(|row| json!({
                "eps": row.eps,
                "sensitivity": row.sensitivity,
                "laplace_variance": row.laplace_variance,
                "staircase_variance": row.staircase_variance,
                "gamma": row.gamma,
                "laplace_half95": row.laplace_half95,
                "staircase_half95": row.staircase_half95,
            })).collect::<Vec<_>>(),
        }),
        Output::Explained(e) => json!({
            "kind": "explain",
            "statement": e.statement,
            "spends": dec(e.spends),
            "draws_noise": e.draws_noise,
            "budget": e.budget.map(|b| json!({
                "spent_before": dec(b.spent_before),
                "spent_after": dec(b.spent_after),
                "total": dec(b.total),
            })),
            "steps": e.steps.iter().map(|(what, detail)| json!({"what": what, "detail": detail})).collect::<Vec<_>>(),
        }),
        Output::Cube(c) => json!({
            "kind": "cube",
            "table": c.table,
            "declaration": c.declaration,
            "cell_names": c.cell_names,
            "cells": c.cells,
            "measurements": c.measurements,
            "cell_budgets": c.budgets,
            "spent": c.spent,
            "total": dec(c.total),
            "neighbours": c.neighbours.to_string(),
            "pair": c.pair.as_ref().map(pair),
            "carried": c.carried,
            "history": c.history.as_ref().map(|h| h.iter().map(|m| json!({
                "row": m.row, "eps": m.eps, "sensitivity": m.sensitivity, "noisy": m.noisy,
            })).collect::<Vec<_>>()),
        }),
        Output::Answered(a) => json!({
            "kind": "estimate",
            "table": a.table,
            "statement": a.statement,
            "estimate": a.estimate,
            "variance": a.variance,
            "confidence": a.confidence,
            "interval": [a.interval.0, a.interval.1],
            "credible95": [a.credible95.0, a.credible95.1],
            "eps_spent": 0.0,
            "from_history": true,
            "explain": a.explain,
            "budget_spent": dec(a.budget_spent),
            "budget_remaining": dec(a.budget_remaining),
        }),
        Output::Estimate(e) => json!({
            "kind": "estimate",
            "text": e.text,
            "query": e.query,
            "estimate": e.estimate,
            "variance": e.variance,
            "credible95": [e.credible95.0, e.credible95.1],
            "eps_spent": 0.0,
            "method": e.method,
            "error_bound": e.error_bound,
        }),
        Output::Prob(p) => json!({
            "kind": "prob",
            "text": p.text,
            "query": p.query,
            "event": p.event,
            "probability": p.probability,
            "error_bound": p.error_bound,
            "relative_error": p.relative_error,
            "bound": p.bound.map(|b| match b {
                super::Bound::Upper => "upper",
                super::Bound::Lower => "lower",
            }),
        }),
        Output::CompareAccounting(r) => json!({
            "kind": "compare_accounting",
            "statement": r.statement,
            "half_width": r.half_width,
            "confidence": r.confidence,
            "delta": r.delta,
            "eps": r.eps,
            "rho": r.rho,
            "rows": r.rows.iter().map(|row| json!({
                "k": row.k,
                "pure_eps": row.pure_eps,
                "gaussian_rho": row.gaussian_rho,
                "gaussian_eps": row.gaussian_eps,
                "laplace_rho": row.laplace_rho,
                "laplace_eps": row.laplace_eps,
            })).collect::<Vec<_>>(),
            "crossover": r.crossover,
            "plot": plot(r.plot.as_ref()),
        }),
        Output::ChooseEps(c) => {
            let (confidence, relative) = match c.requirement {
                ChoosePlan::Relative {
                    fraction,
                    confidence,
                    count,
                } => (
                    confidence.get(),
                    json!({ "fraction": fraction.get(), "count": count.get() }),
                ),
                ChoosePlan::Absolute { confidence, .. } => (confidence.get(), Value::Null),
            };
            json!({
                "kind": if c.gaussian.is_some() { "choose_rho" } else { "choose_eps" },
                "rho": c.gaussian.map(|(rho, _)| rho),
                "sigma": c.gaussian.map(|(_, sigma)| sigma),
                "eps": c.eps,
                "half_width": c.half_width,
                "confidence": confidence,
                "relative": relative,
            })
        }
    };
    if let Value::Object(map) = &mut v {
        map.insert("private".into(), Value::Bool(response.seed.is_none()));
        map.insert("practice".into(), Value::Bool(response.practice));
        if let Some(seed) = response.seed {
            map.insert("seed".into(), json!(seed));
        }
    }
    crate::data::escape_json_format(&v.to_string()).into_owned()
}

/// An error as one line of JSON: `message`, `line`, `column`, and `help` when known.
pub fn error_json(
    message: &str,
    line: Option<usize>,
    column: Option<usize>,
    help: Option<&str>,
) -> String {
    let text = json!({
        "kind": "error",
        "message": message,
        "line": line,
        "column": column,
        "help": help,
    })
    .to_string();
    crate::data::escape_json_format(&text).into_owned()
}

fn table_info(kind: &str, info: &TableInfo) -> Value {
    json!({
        "kind": kind,
        "name": info.name,
        "path": info.path,
        "n": info.n,
        "columns": info.columns.iter().map(|(n, t)| json!({ "name": n, "type": t.to_string() })).collect::<Vec<_>>(),
        "budget_total": dec(info.budget.total),
        "budget_spent": dec(info.budget.spent),
        "budget_remaining": dec(info.budget.remaining),
        "budget_unit": info.accounting.unit(),
        "current": info.current,
        "data_changed": info.data_changed,
        "warnings": info.warnings,
        "neighbours": info.neighbours.to_string(),
        "unit": info.unit.as_ref().map(|u| json!({ "column": u.column, "max_rows": u.max_rows })),
    })
}

/// The costliest pair of cells under `replace`.
fn pair(p: &super::PairReport) -> Value {
    json!({
        "cells": [p.first, p.second],
        "cost": dec(p.cost),
        "exact": p.exact,
        "lower": dec(p.lower),
        "before_cube": dec(p.before_cube),
    })
}

fn budget(b: &BudgetReport) -> Value {
    json!({
        "kind": "budget",
        "table": b.table,
        "accounting": b.accounting.to_string(),
        "budget_unit": b.accounting.unit(),
        "eps_delta": b.equivalent.map(|(e, d)| [e, d]),
        "total": dec(b.total),
        "spent": dec(b.spent),
        "remaining": dec(b.remaining),
        "ledger": b.ledger,
        "spending": b.lines.iter().map(|l| json!({
            "seq": l.seq, "statement": l.statement,
            "eps": (l.mechanism != Mechanism::Gaussian).then(|| dec(l.eps)),
            "rho": (l.mechanism == Mechanism::Gaussian).then(|| dec(l.eps)),
            "mechanism": l.mechanism.to_string(), "cost": dec(l.cost), "time": l.time,
        })).collect::<Vec<_>>(),
        "cells": b.cells.as_ref().map(|cells| cells.iter().map(|(name, spent)| json!({
            "cell": name, "spent": dec(*spent), "remaining": dec(b.total - *spent),
        })).collect::<Vec<_>>()),
        "neighbours": b.neighbours.to_string(),
        "unit": b.unit.as_ref().map(|u| json!({ "column": u.column, "max_rows": u.max_rows })),
        "pair": b.pair.as_ref().map(pair),
        "exposed": b.exposed,
        "dataset": b.dataset.as_ref().map(|d| json!({
            "total": dec(d.total), "spent": dec(d.spent), "remaining": dec(d.remaining),
        })),
    })
}

fn history(h: &HistoryReport) -> Value {
    json!({
        "kind": "history",
        "table": h.table,
        "releases": h.releases.iter().map(|r| json!({
            "seq": r.seq, "statement": r.statement,
            // A Gaussian release's spending is a rho (as in a count's result).
            "eps": if r.mechanism == "gaussian" { Value::Null } else { dec(r.eps) },
            "rho": if r.mechanism == "gaussian" { dec(r.eps) } else { Value::Null },
            "sensitivity": r.sensitivity, "mechanism": r.mechanism, "noisy": r.noisy, "time": r.time,
            "row": r.row,
        })).collect::<Vec<_>>(),
    })
}

/// The chart written (its path), or null; a chart that failed is `{"error": why}`.
fn plot(outcome: Option<&super::PlotOutcome>) -> Value {
    match outcome {
        Some(super::PlotOutcome::Written(path)) => json!(path),
        Some(super::PlotOutcome::Failed(why)) => json!({ "error": why }),
        None => Value::Null,
    }
}

fn dec(d: Decimal) -> Value {
    d.to_f64().map_or(Value::Null, |f| json!(f))
}
