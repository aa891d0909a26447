//! The noise of a Gaussian sum and mean (`SUM ... WITH RHO r`, `MEAN ... WITH RHO r`), drawn
//! by the interpreter: its variance is `S^2 / (2 rho)` with `S` the sum's sensitivity from its
//! bounds under the table's neighbour model, and a mean's parts each have the variance of
//! half the rho (the count's `S` is 1).
//!
//! Draws. A session seeded with `Randomness::Seeded` (each release's noise comes from a
//! generator keyed by the seed and the statement) releases `N` sums over the same rows, each
//! with a condition of its own (`WHERE x > -k`, true for every row) so that none is answered
//! from the record: `N` independent draws around the same true value. The data is `x` = 1 to
//! 50, clamped to `(-5, 10)`: the true sum is `1 + ... + 10 + 40 * 10 = 455` and the true count
//! 50, known, so each draw's error is exact.
//!
//! Statistic. For `N` independent normal errors of variance `sigma^2`, `sum e_i^2 / sigma^2`
//! is chi-square with `N` degrees of freedom. The discrete Gaussian on the grid `2^-k` that
//! `GridGaussian` chooses (at least 1024 steps per standard deviation) has a variance within
//! `1e-100` of its parameter and tails lighter than the normal's, so the chi-square law holds
//! to far below the tolerance. Each of the six checks (two models, three parts) accepts when
//! the statistic lies between the chi-square quantiles at `a/2` and `1 - a/2`, `a = 1e-6 / 6`
//! (Bonferroni): a correct interpreter fails the test with probability at most `1e-6`. With
//! `N = 1500` the band is about `sigma^2 (1 +- 0.2)`.
//!
//! Controls that must fail: the same draws judged against the variance of the other model's
//! sensitivity (`15^2` against `10^2`), and against `S^2 / rho` (twice the variance: the
//! rho not halved), fall far outside their bands.
//!
//! Time: 2 x 2 x 1500 statements, a few seconds in a debug build
//! (`cargo test --test statistics zcdp_sum`).

use dpq::eval::{Randomness, Session};
use dpq::privacy::Store;
use statrs::distribution::{ChiSquared, ContinuousCDF};

use crate::common::run_json;

/// Releases of each statement kind per model.
const N: usize = 1500;

/// The false-positive rate of the whole test, shared by its six checks.
const FALSE_POSITIVE: f64 = 1e-6;

/// The rho of each release.
const RHO: f64 = 0.5;

/// The true clamped sum and count of `x` = 1 to 50 over `(-5, 10)`.
const TRUE_SUM: f64 = 455.0;
const TRUE_COUNT: f64 = 50.0;

/// The band of `sum e_i^2 / sigma^2` for `N` draws that a correct interpreter lands in.
fn band() -> (f64, f64) {
    let chi = ChiSquared::new(N as f64).expect("a chi-square law");
    let a = FALSE_POSITIVE / 6.0;
    (chi.inverse_cdf(a / 2.0), chi.inverse_cdf(1.0 - a / 2.0))
}

/// `N` releases of `statement` (`{k}` replaced by 1 to `N`) on a zCDP table under `model`:
/// each result's `field`.
fn draws(model: &str, statement: &str, fields: &[&str], seed: u64) -> Vec<Vec<f64>> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let text: String = std::iter::once("x\n".to_string())
        .chain((1..=50).map(|v| format!("{v}\n")))
        .collect();
    let data = crate::common::write(dir.path(), "x.csv", &text);
    let mut session = Session::with_store(Randomness::Seeded(seed), Store::memory());
    let load = format!(
        "LOAD '{}' AS t NEIGHBOURS {model}; SET BUDGET RHO 100000;",
        data.display()
    );
    let out = run_json(&mut session, &load);
    assert!(out.iter().all(|r| r["kind"] != "error"), "{out:?}");
    let script: String = (1..=N)
        .map(|k| statement.replace("{k}", &k.to_string()))
        .collect();
    let out = run_json(&mut session, &script);
    assert_eq!(out.len(), N);
    fields
        .iter()
        .map(|f| {
            out.iter()
                .map(|r| {
                    assert_eq!(r["from_history"], false, "{r}");
                    r[*f].as_f64().expect("a noisy value")
                })
                .collect()
        })
        .collect()
}

/// `sum (x_i - truth)^2 / sigma2`.
fn statistic(values: &[f64], truth: f64, sigma2: f64) -> f64 {
    values.iter().map(|v| (v - truth).powi(2)).sum::<f64>() / sigma2
}

/// Under each model a Gaussian sum's errors have variance `S^2 / (2 rho)`, and a mean's noisy
/// sum and count `S^2 / rho` and `1 / rho` (half the rho each); the controls do not.
#[test]
fn gaussian_sums_and_means_have_the_variance_their_rho_gives() {
    let (lo, hi) = band();
    // replace: S = max(hi, 0) - min(lo, 0) = 15; add_remove: S = max(|lo|, |hi|) = 10.
    for (model, s, other) in [("replace", 15.0, 10.0), ("add_remove", 10.0, 15.0)] {
        let sums = draws(
            model,
            "SUM x CLAMP (-5, 10) WHERE x > -{k} WITH RHO 0.5;",
            &["noisy_sum"],
            7,
        );
        let sigma2: f64 = s * s / (2.0 * RHO);
        let q = statistic(&sums[0], TRUE_SUM, sigma2);
        assert!(
            lo <= q && q <= hi,
            "{model}: SUM's errors give {q} against sigma^2 = {sigma2}, outside [{lo}, {hi}]"
        );
        // Controls: the other model's sensitivity, and the rho not halved.
        let wrong = statistic(&sums[0], TRUE_SUM, other * other / (2.0 * RHO));
        assert!(!(lo..=hi).contains(&wrong), "{model}: control {wrong}");
        let wrong = statistic(&sums[0], TRUE_SUM, s * s / RHO);
        assert!(!(lo..=hi).contains(&wrong), "{model}: control {wrong}");

        let means = draws(
            model,
            "MEAN x CLAMP (-5, 10) WHERE x > -{k} WITH RHO 0.5;",
            &["noisy_sum", "noisy_count"],
            11,
        );
        let q = statistic(&means[0], TRUE_SUM, s * s / RHO);
        assert!(
            lo <= q && q <= hi,
            "{model}: MEAN's sum gives {q}, outside [{lo}, {hi}]"
        );
        let q = statistic(&means[1], TRUE_COUNT, 1.0 / RHO);
        assert!(
            lo <= q && q <= hi,
            "{model}: MEAN's count gives {q}, outside [{lo}, {hi}]"
        );
        let wrong = statistic(&means[1], TRUE_COUNT, 1.0 / (2.0 * RHO));
        assert!(!(lo..=hi).contains(&wrong), "{model}: control {wrong}");
    }
}
