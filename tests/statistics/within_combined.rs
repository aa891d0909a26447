//! `COUNT ... WITHIN w AT c` that cannot be answered from the history spends the least epsilon
//! whose release, combined with the history by the BLUE, meets the requirement, and answers with
//! that combined estimate and interval (issue 12, item 5). Theorem 5.3's epsilon (the release
//! alone) stays the ceiling and is shown for comparison.
//!
//! References were computed once with Python's mpmath at 50 digits (the script's method is in a
//! comment at each constant). Statistical tests state their false-positive rate; runs use
//! fixed seeds, so they are reproducible.

use dpq::driver::{run_source, Emitted};
use dpq::eval::{Randomness, Session};
use dpq::output::Format;
use dpq::stats::exact::Scales;
use dpq::stats::{combine, Probability};
use serde_json::Value;

fn session(seed: u64) -> Session {
    let mut s = Session::new(Randomness::Seeded(seed));
    s.set_clock(|| 0);
    s
}

/// Runs `source`; returns its JSON results.
fn json(session: &mut Session, source: &str) -> Vec<Value> {
    let mut out = Vec::new();
    run_source(session, "test", source, Format::Json, &mut |e| {
        out.push(match e {
            Emitted::Result(s) | Emitted::Error(s) => s,
        })
    });
    out.iter()
        .map(|s| serde_json::from_str(s).expect("JSON"))
        .collect()
}

fn last(session: &mut Session, source: &str) -> Value {
    json(session, source).pop().expect("a result")
}

fn num(v: &Value, field: &str) -> f64 {
    v[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} in {v}"))
}

/// `x` rounded up to six significant digits (as dpq rounds an epsilon).
fn up6(x: f64) -> f64 {
    let unit = 10f64.powi(x.log10().floor() as i32 - 5);
    (x / unit).ceil() * unit
}

const MEASURED: &str = "LOAD 'examples/data/people.csv' AS p; CUBE BY smoker (TRUE, FALSE); \
    COUNT WHERE smoker = TRUE WITH EPS 0.07289;";

#[test]
fn the_measured_case_spends_the_least_combined_epsilon() {
    // The history: one count at eps 0.07289, half-width ln(20)/0.07289 = 41.0994 at 0.95, for
    // a requirement of +-40 at 0.95. Alone, Theorem 5.3 needs ln(20)/40 = 0.0748934.
    // Combined: Z = lam L(1/0.07289) + (1 - lam) L(1/eps), lam = b^2 / (c_h^2 + b^2), and the
    // least eps with P(|Z| > 40 - margin) = 0.05 (margin 2^-19 (lam c_h + (1 - lam) b), for the
    // grid): mpmath, findroot on the closed-form tail of two Laplace scales,
    // P(X > t) = (p^2 e^(-t/p) - q^2 e^(-t/q)) / (2 (p^2 - q^2)): 0.014993632300411104.
    // (The "about 0.0155" was approximate: 4 million draws at 0.0149936 give 0.05006.)
    let least = 0.014_993_632_300_411_104;
    let mut s = session(5);
    let v = last(
        &mut s,
        &format!("{MEASURED} COUNT WHERE smoker = TRUE WITHIN 40 AT 0.95;"),
    );
    assert_eq!(v["kind"], "count", "{v}");
    let eps = num(&v, "eps");
    // Found to a relative 1e-7, then rounded up to six digits: never below the least.
    assert!(
        least <= eps && eps <= up6(least * (1.0 + 1e-7)) * (1.0 + 1e-12),
        "eps {eps}, least {least}"
    );
    assert_eq!(num(&v, "eps_alone"), 0.074_893_4);
    let combined = &v["combined"];
    let interval = combined["interval"].as_array().expect("interval");
    let (lo, hi) = (
        interval[0].as_f64().expect("lo"),
        interval[1].as_f64().expect("hi"),
    );
    let est = num(combined, "estimate");
    assert!((hi - est - (est - lo)).abs() < 1e-9 && hi - est <= 40.0 && hi - est > 39.9);
    assert_eq!(num(combined, "confidence"), 0.95);
    // The BLUE of the two answers: inverse-variance weights on the history's count and on
    // this release (Sherman-Morrison), so its variance is 1 / (1/V_h + 1/V_n).
    let (vh, vn) = (2.0 / 0.07289f64.powi(2), 2.0 / eps.powi(2));
    let var = num(combined, "variance");
    assert!(
        (var - 1.0 / (1.0 / vh + 1.0 / vn)).abs() < 1e-9 * var,
        "{var}"
    );
    let why = v["explain"].as_str().expect("explain");
    assert!(
        why.contains("alone: eps = S ln(1/delta) / w = 1 ln(1/0.05) / 40 = 0.0748934")
            && why.contains("combined: eps = "),
        "{why}"
    );
}

#[test]
fn explain_compares_the_paper_rule_with_the_combined_epsilon() {
    let mut s = session(5);
    let v = last(
        &mut s,
        &format!("{MEASURED} EXPLAIN COUNT WHERE smoker = TRUE WITHIN 40 AT 0.95;"),
    );
    let steps = v["steps"].as_array().expect("steps");
    let epsilon = steps
        .iter()
        .find(|s| s["what"] == "epsilon")
        .expect("an epsilon step");
    let text = epsilon["detail"].as_str().expect("text");
    assert!(
        text.contains("alone: eps = S ln(1/delta) / w = 1 ln(1/0.05) / 40 = 0.0748934")
            && text.contains("combined: eps = 0.0149937"),
        "{text}"
    );
    let spends: f64 = v["spends"].as_f64().expect("spends");
    assert_eq!(spends, 0.014_993_7);
}

/// The largest `k` with `P(X < k) <= alpha`, `X ~ Binomial(n, p)`, by the ratio of terms.
fn lower_critical(n: usize, p: f64, alpha: f64) -> usize {
    let mut log_pmf = vec![0.0; n + 1];
    log_pmf[n] = n as f64 * p.ln();
    let odds = ((1.0 - p) / p).ln();
    for k in (1..=n).rev() {
        log_pmf[k - 1] = log_pmf[k] + (k as f64).ln() - ((n - k + 1) as f64).ln() + odds;
    }
    let mut below = 0.0;
    for (k, lp) in log_pmf.iter().enumerate() {
        let next = below + lp.exp();
        if next > alpha {
            return k;
        }
        below = next;
    }
    n + 1
}

/// The smallest `k` with `P(X > k) <= alpha`.
fn upper_critical(n: usize, p: f64, alpha: f64) -> usize {
    n - lower_critical(n, 1.0 - p, alpha)
}

#[test]
fn combined_answers_hold_the_truth_at_the_required_level() {
    // 3,000 independent runs (seeds 1..=3000) on a table of 100 rows, 60 of them flagged: a
    // count at eps 0.1 (half-width 16.09 at 0.8), then WITHIN 15 AT 0.8, which must spend. Each
    // run's combined error Z = lam L(10) + (1 - lam) L(1/eps) depends on public things only,
    // so every run chooses the same eps and the hits of |estimate - 60| <= 15 are
    // Binomial(3000, p*) with p* = P(|Z| <= 15) in [0.8, 0.8 + 1e-4] (eps is the least, rounded
    // up by at most 1e-5 relative). Two-sided test at false-positive rate 1e-6: the count must
    // lie within [lower critical of 0.8, upper critical of 0.8001] at 5e-7 each; about
    // 0.8 -/+ 0.035. Answering with the release alone at the combined eps would hold it 50.5%
    // of the time, and spending Theorem 5.3's eps (0.107) 88.6%: both far outside. The
    // reported 80% interval (half-width at most 15) holds it at the same rate, checked the same
    // way. (Observed: 2423 of 3000, 0.808.)
    let dir = tempfile::tempdir().expect("a directory");
    let path = dir.path().join("flags.csv");
    let mut csv = String::from("id,flag\n");
    for i in 0..100 {
        csv.push_str(&format!("{i},{}\n", if i < 60 { "true" } else { "false" }));
    }
    std::fs::write(&path, csv).expect("write");
    let script = format!(
        "LOAD '{}' AS t; CUBE BY flag (TRUE, FALSE); COUNT WHERE flag = TRUE WITH EPS 0.1; \
         COUNT WHERE flag = TRUE WITHIN 15 AT 0.8;",
        path.display()
    );
    let runs = 3000usize;
    let (mut hits, mut held) = (0usize, 0usize);
    let mut chosen = None;
    for seed in 1..=runs as u64 {
        let v = last(&mut session(seed), &script);
        let eps = num(&v, "eps");
        // mpmath, as in the measured case: the least eps is 0.046864224533101613.
        assert!(chosen.is_none_or(|c| c == eps), "seed {seed}: {eps}");
        chosen = Some(eps);
        let c = &v["combined"];
        let est = num(c, "estimate");
        if (est - 60.0).abs() <= 15.0 {
            hits += 1;
        }
        let i = c["interval"].as_array().expect("interval");
        let (lo, hi) = (i[0].as_f64().expect("lo"), i[1].as_f64().expect("hi"));
        if lo <= 60.0 && 60.0 <= hi {
            held += 1;
        }
    }
    let eps = chosen.expect("runs");
    let least = 0.046_864_224_533_101_613;
    assert!(
        least <= eps && eps <= up6(least * (1.0 + 1e-7)) * (1.0 + 1e-12),
        "{eps}"
    );
    let (lo, hi) = (
        lower_critical(runs, 0.8, 5e-7),
        upper_critical(runs, 0.8001, 5e-7),
    );
    assert!(
        (lo..=hi).contains(&hits),
        "{hits} of {runs} within 15, outside [{lo}, {hi}]"
    );
    assert!(
        (lo..=hi).contains(&held),
        "{held} of {runs} held by the interval, outside [{lo}, {hi}]"
    );
}

/// One statement's JSON result in a fresh session after `setup`.
fn within_after(setup: &str, query: &str) -> Value {
    last(&mut session(11), &format!("{setup} {query}"))
}

#[test]
fn combining_never_spends_more_than_the_release_alone() {
    let cube = "LOAD 'examples/data/people.csv' AS p; CUBE BY age (30, 65), sex ('F', 'M');";
    // (history, query, whether the history can estimate the query)
    let cases = [
        (
            "COUNT WHERE age < 30 WITH EPS 0.1;",
            "COUNT WHERE age < 30 WITHIN 10 AT 0.95;",
            true,
        ),
        (
            "COUNT WHERE age < 30 AND sex = 'F' WITH EPS 0.05; COUNT WHERE age < 30 AND sex = 'M' WITH EPS 0.05; COUNT WHERE age < 30 AND sex != 'F' AND sex != 'M' WITH EPS 0.2;",
            "COUNT WHERE age < 30 WITHIN 20 AT 0.9;",
            false,
        ),
        (
            "COUNT WHERE age < 30 WITH EPS 0.02; COUNT WHERE age < 30 WITH EPS 0.03;",
            "COUNT WHERE age < 30 WITHIN 30 AT 0.99;",
            true,
        ),
        (
            "2*COUNT WHERE age < 30 - COUNT WHERE age >= 65 WITH EPS 0.05; COUNT WHERE age >= 65 WITH EPS 0.1;",
            "COUNT WHERE age < 30 WITHIN 25 AT 0.9;",
            true,
        ),
        (
            "COUNT WHERE age >= 65 WITH EPS 0.1;",
            "COUNT WHERE age < 30 WITHIN 10 AT 0.95;",
            false,
        ),
        // At a confidence of 0.3 and w = 2, far below the history's scale 13.7, combining would
        // widen the interval past w at Theorem 5.3's eps: released alone.
        (
            "COUNT WHERE age < 30 WITH EPS 0.07289;",
            "COUNT WHERE age < 30 WITHIN 2 AT 0.3;",
            false,
        ),
    ];
    for (history, query, estimable) in cases {
        let v = within_after(&format!("{cube} {history}"), query);
        assert_eq!(v["kind"], "count", "{history} {query}: {v}");
        let (eps, alone) = (num(&v, "eps"), num(&v, "eps_alone"));
        assert!(eps <= alone, "{query}: {eps} > {alone}");
        if estimable {
            assert!(eps < alone, "{query}: {eps} against {alone}");
            let i = v["combined"]["interval"].as_array().expect("interval");
            let w = (i[1].as_f64().expect("hi") - i[0].as_f64().expect("lo")) / 2.0;
            let asked: f64 = query
                .split("WITHIN ")
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .and_then(|x| x.parse().ok())
                .expect("w");
            assert!(w <= asked, "{query}: half-width {w}");
        } else {
            assert_eq!(eps, alone, "{query}");
            assert!(v["combined"].is_null(), "{query}: {v}");
        }
    }
    // Without a cube nothing is combined: Theorem 5.3's eps, and no combined answer.
    let v = within_after(
        "LOAD 'examples/data/people.csv' AS p; COUNT WHERE age < 30 WITH EPS 0.1;",
        "COUNT WHERE age < 30 WITHIN 10 AT 0.95;",
    );
    assert_eq!(num(&v, "eps"), num(&v, "eps_alone"));
    assert!(v["combined"].is_null());
}

#[test]
fn the_choice_depends_on_public_things_only_and_runs_reproduce() {
    // Different seeds give the history different noisy answers; the epsilon chosen must not
    // move. The same seed gives the same transcript.
    let script = format!("{MEASURED} COUNT WHERE smoker = TRUE WITHIN 40 AT 0.95;");
    let runs: Vec<Vec<Value>> = [1u64, 2, 3, 1]
        .iter()
        .map(|&seed| json(&mut session(seed), &script))
        .collect();
    let eps: Vec<f64> = runs.iter().map(|r| num(&r[3], "eps")).collect();
    assert!(eps.iter().all(|e| *e == eps[0]), "{eps:?}");
    let noisy: Vec<f64> = runs.iter().map(|r| num(&r[2], "noisy")).collect();
    assert!(noisy[0] != noisy[1] && noisy[1] != noisy[2], "{noisy:?}");
    assert_eq!(runs[0], runs[3]);
}

#[test]
fn the_budget_is_checked_with_the_combined_epsilon() {
    // Budget 0.1: after 0.07289, Theorem 5.3's 0.0748934 would not fit, the combined 0.0149937
    // does (the same cells: their costs add up).
    let setup =
        "LOAD 'examples/data/people.csv' AS p; SET BUDGET 0.1; CUBE BY smoker (TRUE, FALSE); \
        COUNT WHERE smoker = TRUE WITH EPS 0.07289;";
    let v = within_after(setup, "COUNT WHERE smoker = TRUE WITHIN 40 AT 0.95;");
    assert_eq!(v["kind"], "count", "{v}");
    assert_eq!(num(&v, "budget_spent"), 0.072_89 + num(&v, "eps"));
    // Budget 0.08: not even the combined epsilon fits: refused, and nothing changes.
    let setup = setup.replace("SET BUDGET 0.1", "SET BUDGET 0.08");
    let mut a = session(11);
    let mut b = session(11);
    json(&mut a, &setup);
    json(&mut b, &setup);
    let refused = last(&mut b, "COUNT WHERE smoker = TRUE WITHIN 40 AT 0.95;");
    assert_eq!(refused["kind"], "error", "{refused}");
    let message = refused["message"].as_str().expect("message");
    assert!(message.contains("budget"), "{message}");
    let after = "SHOW BUDGET; SHOW HISTORY; COUNT WHERE smoker = FALSE WITH EPS 0.001;";
    assert_eq!(json(&mut a, after), json(&mut b, after));
}

#[test]
fn the_epsilons_that_meet_a_requirement_form_an_interval() {
    // The search assumes that once an epsilon meets the requirement, every larger one does
    // (the set is [least, ceiling]), and that at Theorem 5.3's eps the combination meets it
    // (so combining never spends more). The tail P(|Z(eps)| > w) need not fall everywhere: a
    // little noise added to the history's peak moves mass outwards when w is below its scale
    // (here it rises by 3e-9 for [13.72] at w = 9.7), but only while the tail is above the
    // history's own, which exceeds 1 - c whenever a release is needed. Checked on a grid of
    // 400 epsilons from 1e-4 to 10 times Theorem 5.3's, for histories of one to eight terms
    // and confidences from 0.3 to 0.999, at w = 0.9 and 0.5 times the history's half-width.
    let histories: [&[f64]; 5] = [
        &[13.72],
        &[5.0, 5.0],
        &[1.0, 30.0, 2.5],
        &[9.54, 3.64, 0.65, 4.95, 5.0, 10.46, 2.8, 2.38],
        &[0.01, 100.0],
    ];
    //
    // The same holds for Gaussian releases (zCDP) over the same histories, their scales taken
    // as Laplace scales and as normal standard deviations, with rho in place of epsilon
    // (Gaussian alone: rho = 1 / (2 sigma^2), sigma = w / z_{(1+c)/2}).
    let mut fell_back = Vec::new();
    let cases = histories.iter().flat_map(|h| {
        [(false, false), (true, false), (false, true), (true, true)].map(|laws| (*h, laws))
    });
    for (h, (normal_history, gaussian)) in cases {
        let h = &if normal_history {
            Scales {
                laplace: Vec::new(),
                normal: h.to_vec(),
            }
        } else {
            Scales::laplace(h.to_vec())
        };
        let combined = |x: f64| {
            if gaussian {
                combine::combined_gaussian(h, 1.0, x)
            } else {
                combine::combined_scales(h, 1.0, x)
            }
        };
        for c in [0.3, 0.8, 0.95, 0.999] {
            let level = Probability::new(c).expect("valid");
            for share in [0.9, 0.5] {
                let w = share * combine::half_width(h, level);
                assert!(!combine::meets(h, w, level));
                let alone = if gaussian {
                    let z = statrs::distribution::ContinuousCDF::inverse_cdf(
                        &statrs::distribution::Normal::standard(),
                        (1.0 + c) / 2.0,
                    );
                    let sigma = w / (z + combine::NORMAL_GRID_MARGIN);
                    1.0 / (2.0 * sigma * sigma)
                } else {
                    (1.0 / (1.0 - c)).ln() / w
                };
                // Theorem 5.3's eps, rounded up a little as dpq does: combined, it meets the
                // requirement, except at a low confidence with w well below the history's
                // scale, where dpq releases alone instead.
                let ceiling = alone * (1.0 + 1e-5);
                if !combine::meets(&combined(ceiling), w, level) {
                    fell_back.push((gaussian, c, share));
                    continue;
                }
                let mut met = false;
                for k in 0..400 {
                    let eps = alone * 1e-4 * 10f64.powf(5.0 * k as f64 / 399.0);
                    let ok = combine::meets(&combined(eps), w, level);
                    assert!(
                        ok || !met,
                        "{h:?} c {c} w {w}: eps {eps} fails after one met"
                    );
                    met |= ok;
                }
                assert!(met, "{h:?} c {c} w {w}");
            }
        }
    }
    assert!(fell_back.iter().all(|&(_, c, _)| c < 0.5), "{fell_back:?}");
    assert!(!fell_back.is_empty());
}
