//! Attacks on inference from Gaussian answers and `WITHIN` on a zCDP table (commit 29e48f8:
//! `src/eval/count.rs` `within`, `alone_rho`, `combined_eps`; `src/stats/combine.rs`
//! `least_rho`, `NORMAL_GRID_MARGIN`; `src/stats/exact.rs` `Method::Normal`).
//!
//! Each test states the promise it checks. Four were breaks of the code they were written
//! against (described in their comments as BROKEN), fixed since; the others held.

use dpq::eval::{Randomness, Session};
use dpq::privacy::Store;
use serde_json::Value;
use std::path::{Path, PathBuf};

mod common;
use common::{rewrite_ledger, run_json};

fn seeded(state: &Path, seed: u64) -> Session {
    let mut s = Session::with_store(Randomness::Seeded(seed), Store::dir(state.to_path_buf()));
    s.set_clock(|| 0);
    s
}

fn survey() -> PathBuf {
    Path::new("examples/data/survey.csv")
        .canonicalize()
        .expect("the example data")
}

fn zcdp(extra: &str) -> String {
    format!(
        "LOAD '{}' AS s; SET BUDGET RHO 1; CUBE BY age (30, 65); {extra}",
        survey().display()
    )
}

/// The discrete Gaussian of variance parameter `sigma2` on the grid `h` (values `k h`):
/// `P(|Z| <= w)`.
fn discrete_coverage(sigma2: f64, h: f64, w: f64) -> f64 {
    let sd = sigma2.sqrt();
    let kmax = (40.0 * sd / h).ceil() as i64;
    let (mut inside, mut all) = (0.0, 0.0);
    for k in -kmax..=kmax {
        let x = k as f64 * h;
        let m = (-(x * x) / (2.0 * sigma2)).exp();
        all += m;
        if x.abs() <= w {
            inside += m;
        }
    }
    inside / all
}

/// PROMISE (SPEC 3, "answer from it and spend nothing" when the history gives a 95% interval
/// of half-width at most w; docs/language.md: the credible interval "holds the true value with
/// probability 0.95"; `combine::NORMAL_GRID_MARGIN` allows `2^-9` sd for a grid of at most
/// `2^-10` sd).
///
/// BROKEN at 29e48f8: a rho with many digits (`WITH RHO 0.01234567890123`, 28 decimals are
/// accepted) made `GridGaussian::new` fall back to a coarse grid (2^-1 for sigma 6.36: the noisy
/// count was 2474.50), but the history's error was still taken as exactly normal with a `2^-9`
/// sd allowance: `WITHIN 12.499 AT 95%` was answered from the history, "half-width 12.4856 <=
/// 12.499", while the error lay on multiples of 0.5, covering 0.9458. Now such a release is
/// refused before anything is spent (its noise cannot be drawn on the fine grid), and a rho
/// of six digits, as `CHOOSE RHO` and `WITHIN` give, is drawn on a grid of at most `2^-10` sd,
/// where the promise holds.
#[test]
fn within_from_a_coarse_gaussian_grid_keeps_its_coverage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let out = run_json(
        &mut seeded(&state, 7),
        &zcdp("COUNT WHERE age < 30 WITH RHO 0.01234567890123;"),
    );
    let refused = out.last().expect("a result");
    assert_eq!(refused["kind"], "error", "{refused}");
    let message = refused["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("cannot be drawn exactly on a grid"),
        "{message}"
    );
    let out = run_json(
        &mut seeded(&state, 7),
        &zcdp("SHOW BUDGET; COUNT WHERE age < 30 WITH RHO 0.0123457; COUNT WHERE age < 30 WITHIN 12.499 AT 95%;"),
    );
    let budget = &out[out.len() - 3];
    assert_eq!(budget["spent"].as_f64(), Some(0.0), "{budget}");
    let count = &out[out.len() - 2];
    assert_eq!(count["kind"], "count", "{count}");
    let (sigma, grid) = (
        count["sigma"].as_f64().expect("sigma"),
        count["grid"].as_f64().expect("grid"),
    );
    assert!(grid <= sigma / 1024.0, "grid {grid} for sigma {sigma}");
    let within = &out[out.len() - 1];
    let (estimate, interval) = match within["kind"].as_str() {
        Some("estimate") => (within["estimate"].as_f64(), &within["interval"]),
        _ => (
            within["combined"]["estimate"].as_f64(),
            &within["combined"]["interval"],
        ),
    };
    let estimate = estimate.expect("an estimate");
    let h = interval[1].as_f64().expect("hi") - estimate;
    if within["kind"] == "estimate" {
        let covered = discrete_coverage(sigma * sigma, grid, h);
        assert!(
            covered >= 0.95,
            "grid {grid} for sigma {sigma}: answered from the history with half-width {h} at 95%, \
             but the discrete error covers only {covered}"
        );
    }
}

/// PROMISE (SPEC 4 names `eps` fields for epsilons; the change's brief: "`eps_alone` holds a
/// rho there"). BROKEN at 29e48f8 (wording, JSON; fixed: `rho_alone`): a Gaussian WITHIN on a zCDP table reports the rho a
/// release alone would need as `eps_alone` (0.0769824 for ±5 at 95%), next to `eps: null` and
/// `rho: 0.072...`. A client reading `eps_alone` takes a rho for an epsilon.
#[test]
fn within_on_zcdp_does_not_report_a_rho_as_eps_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run_json(
        &mut seeded(&dir.path().join("state"), 7),
        &zcdp("HISTOGRAM WITH RHO 0.01; COUNT WHERE age < 30 WITHIN 5 AT 95%;"),
    );
    let count = out.last().expect("a result");
    assert_eq!(count["mechanism"], "gaussian", "{count}");
    assert!(
        count["eps_alone"].is_null(),
        "eps_alone = {} is a rho (rho = {})",
        count["eps_alone"],
        count["rho"]
    );
    assert!(count["rho_alone"].as_f64().is_some(), "{count}");
}

/// PROMISE (the change: zCDP WITHIN speaks of rho). BROKEN at 29e48f8 (wording, fixed): EXPLAIN's step that says
/// how WITHIN chose its spending is labelled `epsilon` (table: the `epsilon` row; JSON:
/// `"what": "epsilon"`) while its text is all rho.
#[test]
fn explain_within_on_zcdp_says_rho() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run_json(
        &mut seeded(&dir.path().join("state"), 7),
        &zcdp("EXPLAIN COUNT WHERE age < 30 WITHIN 5 AT 95%;"),
    );
    let explain = out.last().expect("a result");
    let steps = explain["steps"].as_array().expect("steps");
    let labels: Vec<&str> = steps.iter().filter_map(|s| s["what"].as_str()).collect();
    assert!(!labels.contains(&"epsilon"), "{labels:?}");
}

/// PROMISE (SPEC 5: one clear error naming what). BROKEN at 29e48f8 (wording, fixed): a zCDP WITHIN whose rho is
/// unusable says "this requirement gives an epsilon of 1.924559372353e16" (WITHIN 1e-8) or
/// "an epsilon of 0e0" (WITHIN 1e300): it is a rho.
#[test]
fn unusable_rho_of_within_is_called_rho() {
    for w in ["1e-8", "1e300"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = run_json(
            &mut seeded(&dir.path().join("state"), 7),
            &zcdp(&format!("COUNT WHERE age < 30 WITHIN {w} AT 95%;")),
        );
        let last = out.last().expect("a result");
        assert_eq!(last["kind"], "error", "{last}");
        let message = last["message"].as_str().unwrap_or_default();
        assert!(!message.contains("epsilon"), "WITHIN {w}: {message}");
    }
}

/// PROMISE: BLUE of repeated Gaussian counts of one cell has variance 1 / sum(1/sigma_i^2)
/// (here 1/(1/50 + 1/12.5) = 10), and with a Laplace answer of variance 2 (S/eps)^2 = 200,
/// 1/(0.1 + 0.005). HOLDS.
#[test]
fn blue_variance_of_repeated_gaussian_and_laplace_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run_json(
        &mut seeded(&dir.path().join("state"), 7),
        &zcdp(
            "COUNT WHERE age < 30 WITH RHO 0.01; COUNT WHERE age < 30 WITH RHO 0.04; \
             ESTIMATE COUNT WHERE age < 30; COUNT WHERE age < 30 WITH EPS 0.1; \
             ESTIMATE COUNT WHERE age < 30;",
        ),
    );
    let n = out.len();
    let (a, b) = (&out[n - 3], &out[n - 1]);
    assert!((a["variance"].as_f64().unwrap() - 10.0).abs() < 1e-9, "{a}");
    assert_eq!(a["method"], "normal (Gaussian answers only: exact)", "{a}");
    let want = 1.0 / (0.1 + 0.005);
    assert!((b["variance"].as_f64().unwrap() - want).abs() < 1e-9, "{b}");
}

/// PROMISE (SPEC 1: checked before noise is drawn; nothing spent on refusal). A zCDP WITHIN
/// whose least rho exceeds the budget is refused and leaves the ledger without a spend. HOLDS.
#[test]
fn within_over_budget_spends_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let out = run_json(
        &mut seeded(&state, 7),
        &format!(
            "LOAD '{}' AS s; SET BUDGET RHO 0.001; CUBE BY age (30, 65); \
             COUNT WHERE age < 30 WITHIN 1 AT 95%; SHOW BUDGET;",
            survey().display()
        ),
    );
    let n = out.len();
    assert_eq!(out[n - 1]["kind"], "error", "{}", out[n - 1]);
    let out = run_json(
        &mut seeded(&state, 8),
        &format!("LOAD '{}' AS s; SHOW BUDGET;", survey().display()),
    );
    let budget = out.last().expect("budget");
    assert_eq!(budget["spent"], 0.0, "{budget}");
}

/// PROMISE (SPEC 1: a damaged ledger is refused; `check_noise`). A ledger line of a Gaussian
/// release whose `sigma2` claims less noise than its rho gives, re-chained as a curator could,
/// is refused on reading (it would otherwise make ESTIMATE trust the answer more). HOLDS.
#[test]
fn an_altered_gaussian_sigma2_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let out = run_json(
        &mut seeded(&state, 7),
        &zcdp("COUNT WHERE age < 30 WITH RHO 0.01;"),
    );
    assert_eq!(out.last().expect("count")["kind"], "count");
    let ledger = std::fs::read_dir(state.join("ledgers"))
        .expect("ledgers")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "ledger"))
        .expect("a ledger");
    rewrite_ledger(&ledger, |v| {
        if v.get("sigma2").is_some() {
            v.insert("sigma2".into(), Value::String("1".into()));
        }
    });
    let out = run_json(
        &mut seeded(&state, 8),
        &format!(
            "LOAD '{}' AS s; ESTIMATE COUNT WHERE age < 30;",
            survey().display()
        ),
    );
    assert!(
        out.iter().any(|r| r["kind"] == "error"),
        "an altered sigma2 was read back: {out:?}"
    );
}
