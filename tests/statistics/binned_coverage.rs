//! The uncertainty of binned statistics (`ESTIMATE MEDIAN`, `ESTIMATE MEAN ... CLAMP`) over
//! seeded runs: a table with a known distribution of ages over the bins of `CUBE BY age (20,
//! 40, 60, 80)`, a histogram at a small epsilon, and the statistic with its probability.
//!
//! What the probability claims: under the flat prior of `ESTIMATE` the reported bin holds the
//! median with that probability. That is a statement about the truths consistent with the
//! answers, so it is checked where the truth is drawn at random, each bin's count uniform on
//! 50..=450, far wider than the noise (the flat prior, cut off where it no longer matters):
//! there the reported probabilities, averaged over the runs, must match the share of runs
//! whose reported bin is the true median's. For one fixed truth they need not (near a tie the
//! average probability exceeds the share right, far from one it falls short), and the test
//! of a fixed truth checks only that the probability is low where the bin is often wrong and
//! that the 95% sets cover.
//!
//! Tolerances, with `n` = 400 runs each: the average probability within 4 binomial standard
//! errors `sqrt(f (1 - f) / n)` of the share right `f` (a false alarm at about 6e-5 if the
//! probabilities are calibrated; the Monte Carlo error of each probability, ±0.007, averages
//! out); a 95% set or interval holding the truth in at least `0.95 - 3 sqrt(0.95 * 0.05 / n)`
//! of runs (0.917 at 400 runs, 0.885 for the mean's 100; a false alarm at about 1e-3 if it
//! holds 95%, and it holds more). Every run is seeded: the outcome is the same at each run of
//! the test.

use dpq::eval::{Randomness, Session};
use dpq::privacy::Store;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde_json::Value;
use std::path::Path;

use crate::common;
use common::run_json;

/// Runs per check.
const RUNS: u64 = 400;

/// The age every row of a bin has: bins `age < 20`, `20 <= age < 40`, ..., `age >= 80`.
const AGES: [u32; 5] = [10, 30, 50, 70, 90];

/// The cube, cut so that the ages of [`AGES`] fall one per bin.
const CUBE: &str = "CUBE BY age (20, 40, 60, 80)";

/// Writes a table with `counts[b]` rows of age `AGES[b]`.
fn write_table(path: &Path, counts: &[u32; 5]) {
    let mut text = String::from("id,age\n");
    let mut id = 0;
    for (count, age) in counts.iter().zip(AGES) {
        for _ in 0..*count {
            text.push_str(&format!("{id},{age}\n"));
            id += 1;
        }
    }
    std::fs::write(path, text).expect("the table is written");
}

/// The bin holding the median of `counts` by dpq's rule: the first where the cumulative count
/// reaches half the total.
fn median_bin(counts: &[u32; 5]) -> usize {
    let total: u32 = counts.iter().sum();
    let mut cumulative = 0;
    counts
        .iter()
        .position(|c| {
            cumulative += c;
            2 * cumulative >= total
        })
        .expect("a bin reaches the total")
}

/// The position of the bin named `name` among a result's bins.
fn bin_index(result: &Value, name: &Value) -> usize {
    result["bins"]
        .as_array()
        .expect("bins")
        .iter()
        .position(|b| &b["bin"] == name)
        .unwrap_or_else(|| panic!("{name} among the bins of {result}"))
}

/// One run's `ESTIMATE MEDIAN`: the reported bin, its probability, and the 95% set (first and
/// last bin).
struct Median {
    reported: usize,
    probability: f64,
    set: (usize, usize),
}

fn median_of(result: &Value) -> Median {
    assert_eq!(result["kind"], "binned", "{result}");
    let set = result["bins95"].as_array().expect("bins95");
    Median {
        reported: bin_index(result, &result["bin"]),
        probability: result["probability"].as_f64().expect("probability"),
        set: (
            bin_index(result, set.first().expect("a bin")),
            bin_index(result, set.last().expect("a bin")),
        ),
    }
}

/// Runs `history` (releases after the cube) and `ESTIMATE MEDIAN age` over the table of
/// `counts`, seeded by `seed`.
fn median_run(dir: &Path, seed: u64, counts: &[u32; 5], history: &str) -> Median {
    let path = dir.join(format!("ages{seed}.csv"));
    write_table(&path, counts);
    let mut session = Session::new(Randomness::Seeded(seed));
    let out = run_json(
        &mut session,
        &format!(
            "LOAD '{}' AS t; {CUBE}; {history} ESTIMATE MEDIAN age;",
            path.display()
        ),
    );
    std::fs::remove_file(&path).expect("the table is removed");
    median_of(out.last().expect("a result"))
}

/// What the runs of one check measured.
struct Tally {
    runs: usize,
    /// Runs whose reported bin is the true median's.
    right: usize,
    /// The sum of the reported probabilities.
    probability: f64,
    /// Runs whose 95% set holds the true median's bin.
    covered: usize,
    /// Runs reporting a probability of at least 0.95.
    sure: usize,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            runs: 0,
            right: 0,
            probability: 0.0,
            covered: 0,
            sure: 0,
        }
    }

    fn add(&mut self, m: &Median, truth: usize) {
        self.runs += 1;
        self.right += usize::from(m.reported == truth);
        self.probability += m.probability;
        self.covered += usize::from(m.set.0 <= truth && truth <= m.set.1);
        self.sure += usize::from(m.probability >= 0.95);
    }

    fn share_right(&self) -> f64 {
        self.right as f64 / self.runs as f64
    }

    fn mean_probability(&self) -> f64 {
        self.probability / self.runs as f64
    }

    fn coverage(&self) -> f64 {
        self.covered as f64 / self.runs as f64
    }

    /// `sqrt(f (1 - f) / n)` of the share right.
    fn binomial_se(&self) -> f64 {
        let f = self.share_right();
        (f * (1.0 - f) / self.runs as f64).sqrt()
    }

    /// Whether an average probability of `mean` matches the share right within 4 binomial
    /// standard errors.
    fn calibrated(&self, mean: f64) -> bool {
        (mean - self.share_right()).abs() <= 4.0 * self.binomial_se()
    }

    fn summary(&self) -> String {
        format!(
            "{} runs: right {:.4} (se {:.4}), mean probability {:.4}, 95% sets cover {:.4}, probability >= 0.95 in {}",
            self.runs,
            self.share_right(),
            self.binomial_se(),
            self.mean_probability(),
            self.coverage(),
            self.sure
        )
    }
}

/// The least coverage a 95% set may show over `runs` runs: 3 standard errors below 0.95.
fn least_coverage(runs: usize) -> f64 {
    0.95 - 3.0 * (0.95 * 0.05 / runs as f64).sqrt()
}

/// Truths drawn per run, each bin's count uniform on 50..=450 (the test's own generator,
/// seeded by the run), under `history`.
fn calibration(history: &str, seeds: std::ops::Range<u64>) -> Tally {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut tally = Tally::new();
    for seed in seeds {
        let mut truth_rng = ChaCha20Rng::seed_from_u64(seed);
        let counts: [u32; 5] = std::array::from_fn(|_| truth_rng.random_range(50..=450));
        let m = median_run(dir.path(), seed, &counts, history);
        tally.add(&m, median_bin(&counts));
    }
    tally
}

/// One histogram at eps 0.05 (Laplace noise of scale 40 on every bin, `NEIGHBOURS replace`):
/// the reported probabilities average to the share of runs whose bin is right, the 95% sets
/// hold the true bin often enough, and a probability of 1 (the bin stated without its
/// uncertainty) would fail the same check.
#[test]
fn the_median_bin_probability_is_calibrated_over_truths() {
    let tally = calibration("HISTOGRAM WITH EPS 0.05;", 0..RUNS);
    let summary = tally.summary();
    eprintln!("{summary}");
    assert!(
        tally.calibrated(tally.mean_probability()),
        "miscalibrated: {summary}"
    );
    assert!(
        tally.coverage() >= least_coverage(tally.runs),
        "95% sets cover too little: {summary}"
    );
    // The check can fail: certainty is off by the share wrong.
    assert!(!tally.calibrated(1.0), "certainty passes: {summary}");
}

/// Releases that cover several bins (a histogram, and counts of `age < 60` and of `age >= 40`,
/// all at eps 0.02): the bins' estimates are correlated, and their joint law (every release's
/// noise drawn again through the BLUE's weights) keeps the probabilities calibrated.
#[test]
fn the_median_bin_probability_is_calibrated_with_correlated_bins() {
    let history = "HISTOGRAM WITH EPS 0.02; COUNT WHERE age < 60 WITH EPS 0.02; \
                   COUNT WHERE age >= 40 WITH EPS 0.02;";
    let tally = calibration(history, 10_000..10_000 + RUNS);
    let summary = tally.summary();
    eprintln!("{summary}");
    assert!(
        tally.calibrated(tally.mean_probability()),
        "miscalibrated: {summary}"
    );
    assert!(
        tally.coverage() >= least_coverage(tally.runs),
        "95% sets cover too little: {summary}"
    );
    assert!(!tally.calibrated(1.0), "certainty passes: {summary}");
}

/// The runs of the fixed truth that also ask the mean (the first ones): its interval holds
/// the truth with probability at least 0.95 by construction, so a weaker check suffices.
const MEAN_RUNS: u64 = 100;

/// One fixed truth whose median's bin is narrow (60 of 600 rows, between bins of 150), at eps
/// 0.08 (noise of scale 25): the reported bin is wrong in more than a quarter of the runs, and
/// the probability says so: below 0.75 on average, and at least 0.95 in few runs (fewer than
/// one in ten); the 95% sets still hold the true bin. In the first [`MEAN_RUNS`] runs the
/// mean's 95% interval holds the true mean (the ages clamped to [0, 100]) in at least 0.95 less
/// 3 standard errors of them.
#[test]
fn a_median_bin_often_wrong_has_a_low_probability() {
    let counts = [120, 150, 60, 150, 120];
    let truth = median_bin(&counts);
    assert_eq!(truth, 2);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("fixed.csv");
    write_table(&path, &counts);
    let mut tally = Tally::new();
    let mut mean_held = 0;
    let true_mean = counts
        .iter()
        .zip(AGES)
        .map(|(c, a)| f64::from(c * a))
        .sum::<f64>()
        / f64::from(counts.iter().sum::<u32>());
    for run in 0..RUNS {
        let mean = if run < MEAN_RUNS {
            "ESTIMATE MEAN age CLAMP (0, 100);"
        } else {
            ""
        };
        let mut session = Session::new(Randomness::Seeded(20_000 + run));
        let out = run_json(
            &mut session,
            &format!(
                "LOAD '{}' AS t; {CUBE}; HISTOGRAM WITH EPS 0.08; ESTIMATE MEDIAN age; {mean}",
                path.display()
            ),
        );
        tally.add(&median_of(&out[3]), truth);
        if let Some(result) = out.get(4) {
            let interval = &result["interval95"];
            let (lo, hi) = (
                interval[0].as_f64().expect("lo"),
                interval[1].as_f64().expect("hi"),
            );
            mean_held += usize::from(lo <= true_mean && true_mean <= hi);
        }
    }
    let summary = tally.summary();
    eprintln!("{summary}");
    assert!(
        1.0 - tally.share_right() > 0.25,
        "not often wrong: {summary}"
    );
    assert!(tally.mean_probability() < 0.75, "too sure: {summary}");
    assert!(10 * tally.sure < tally.runs, "too often sure: {summary}");
    assert!(
        tally.coverage() >= least_coverage(tally.runs),
        "95% sets cover too little: {summary}"
    );
    let mean_coverage = mean_held as f64 / MEAN_RUNS as f64;
    eprintln!("the mean's 95% interval held the true mean in {mean_coverage:.4} of runs");
    assert!(
        mean_coverage >= least_coverage(MEAN_RUNS as usize),
        "the mean's interval held {mean_coverage}"
    );
}

/// The same history gives the same probabilities in every run: the Monte Carlo is seeded
/// from the statement and the answers, not from the session's generator, so a second session
/// reading the same ledger (its generator seeded from the system, as the first's) says the
/// same. Asking spends nothing.
#[test]
fn the_probabilities_repeat_for_the_same_history() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ages.csv");
    write_table(&path, &[120, 150, 60, 150, 120]);
    let state = dir.path().join("state");
    let load = format!("LOAD '{}' AS t;", path.display());
    let mut first = Session::with_store(Randomness::Os, Store::dir(&state));
    let out = run_json(
        &mut first,
        &format!(
            "{load} {CUBE}; HISTOGRAM WITH EPS 0.08; ESTIMATE MEDIAN age; ESTIMATE MEDIAN age;"
        ),
    );
    let (asked, again) = (out[3].clone(), &out[4]);
    assert_eq!(&asked, again);
    drop(first);
    let mut second = Session::with_store(Randomness::Os, Store::dir(&state));
    let out = run_json(
        &mut second,
        &format!("{load} ESTIMATE MEDIAN age; SHOW BUDGET;"),
    );
    assert_eq!(asked, out[1], "another session, the same history");
    assert_eq!(asked["eps_spent"], 0.0);
    assert_eq!(
        out[2]["spent"], 0.08,
        "only the histogram spent: {}",
        out[2]
    );
    let p = asked["probability"].as_f64().expect("probability");
    assert!(0.0 < p && p <= 1.0, "{asked}");
    assert_eq!(asked["draws"], 20_000);
    assert!(asked["coverage95"].as_f64().expect("coverage95") >= 0.95);
    let bins = asked["bins"].as_array().expect("bins");
    let total: f64 = bins
        .iter()
        .map(|b| b["probability"].as_f64().expect("p"))
        .sum();
    assert!(
        (total - 1.0).abs() < 1e-9,
        "every draw holds the median in a bin: {total}"
    );
}
