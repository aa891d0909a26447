//! The estimator lab: SIMULATE, OUT OF RANGE and COMPARE NOISE, and the charts of PLOT.

use super::{ninety_five, Session};
use crate::error::EvalError;
use crate::output::plot::{self, SimRow};
use crate::output::short_number;
use crate::output::{
    CompareNoiseResult, CompareNoiseRow, Interval, OutOfRangeResult, PlotOutcome, PosteriorShape,
    SimulateResult, SimulateRow,
};
use crate::plan::{ChoosePlan, SimAxis, SimulatePlan};
use crate::span::Span;
use crate::stats::simulate::{self, McEstimate, SimError, SimPoint};
use crate::stats::staircase::{self, Staircase};
use crate::stats::{accuracy, Epsilon, Positive, Probability};
use rand::RngCore;
use std::path::Path;

/// `OUT OF RANGE N n EPS e [AT a]`: paper 1, eq. 2, Theorem 1 and eq. 4-6.
pub(super) fn out_of_range(n: u64, eps: Epsilon, at: Option<u64>) -> OutOfRangeResult {
    OutOfRangeResult {
        n,
        eps: eps.get(),
        at: at.map(|a| (a, accuracy::out_of_range_probability(n, eps, a as f64))),
        p_max: accuracy::out_of_range_max(n, eps),
        p_min: accuracy::out_of_range_min(n, eps),
        argmin: n / 2,
        p_min_eq6: accuracy::out_of_range_min_eq6(n, eps),
    }
}

/// `COMPARE NOISE EPS (...) [SENSITIVITY d]`: the slides' table, row by row.
/// `COMPARE ACCOUNTING`: `k` counts of one cell, each within `±w` with probability `c`, as
/// Laplace counts under pure DP (`k eps`, eps from Naldi and D'Acquisto's eq. 10), as Gaussian
/// counts under zCDP (`k rho`, `rho = z^2 / (2 w^2)`) and as the same Laplace counts under zCDP
/// (`k eps^2 / 2`), each rho also as (epsilon, delta) at `delta` by the tight conversion. Pure
/// arithmetic on the requirement: no data, no budget.
pub(super) fn compare_accounting(
    queries: &[u64],
    requirement: ChoosePlan,
    delta: f64,
    statement: &str,
    span: Span,
) -> Result<crate::output::CompareAccountingResult, EvalError> {
    let one = super::count::choose_eps(requirement, span)?;
    let confidence = match requirement {
        ChoosePlan::Relative { confidence, .. } | ChoosePlan::Absolute { confidence, .. } => {
            confidence.get()
        }
    };
    let z = crate::stats::accuracy::normal_quantile((1.0 + confidence) / 2.0);
    let rho = z * z / (2.0 * one.half_width * one.half_width);
    let convert = |r: f64| crate::privacy::zcdp::epsilon(r, delta);
    let rows: Vec<crate::output::AccountingRow> = queries
        .iter()
        .map(|&k| {
            let n = k as f64;
            crate::output::AccountingRow {
                k,
                pure_eps: n * one.eps,
                gaussian_rho: n * rho,
                gaussian_eps: convert(n * rho),
                laplace_rho: n * one.eps * one.eps / 2.0,
                laplace_eps: convert(n * one.eps * one.eps / 2.0),
            }
        })
        .collect();
    let crossover = rows
        .iter()
        .filter(|r| r.gaussian_eps < r.pure_eps)
        .map(|r| r.k)
        .min();
    Ok(crate::output::CompareAccountingResult {
        statement: statement.to_string(),
        half_width: one.half_width,
        confidence,
        delta,
        eps: one.eps,
        rho,
        rows,
        crossover,
        plot: None,
    })
}

pub(super) fn compare_noise(eps: &[Epsilon], sensitivity: Positive) -> CompareNoiseResult {
    let ninety_five = ninety_five();
    CompareNoiseResult {
        rows: eps
            .iter()
            .map(|&e| {
                let best = Staircase::optimal(e, sensitivity);
                CompareNoiseRow {
                    eps: e.get(),
                    sensitivity: sensitivity.get(),
                    laplace_variance: staircase::laplace_variance(e, sensitivity),
                    staircase_variance: best.variance(),
                    gamma: best.gamma(),
                    laplace_half95: staircase::laplace_half_width(e, sensitivity, ninety_five),
                    staircase_half95: best.half_width(ninety_five),
                }
            })
            .collect(),
    }
}

/// The seed of a point of a simulation in a seeded session: a function of the seed and of the
/// point's parameters alone, so a point gives the same numbers in whatever statement it
/// appears (with or without a chart, beside any other points), on every run and machine.
fn point_seed(seed: u64, n: u64, p: Probability, eps: Epsilon, runs: u64) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(b"dpq simulate");
    h.update(&seed.to_le_bytes());
    h.update(&n.to_le_bytes());
    h.update(&p.get().to_bits().to_le_bytes());
    h.update(&eps.get().to_bits().to_le_bytes());
    h.update(&runs.to_le_bytes());
    let bytes = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&bytes.as_bytes()[..8]);
    u64::from_le_bytes(first)
}

fn interval(m: McEstimate) -> Interval {
    Interval {
        value: m.value,
        lower: m.lower,
        upper: m.upper,
    }
}

impl Session {
    /// `SIMULATE`: paper 1, section 4, at every point of the plan. Touches no table and spends
    /// nothing; in a seeded session each point's runs are a function of the seed.
    pub(super) fn simulate(
        &mut self,
        plan: SimulatePlan,
        span: Span,
    ) -> Result<SimulateResult, EvalError> {
        if let Some(chart) = &plan.plot {
            self.chart_target(&chart.path, chart.span)?;
        }
        let points = plan.points();
        let seeds: Vec<u64> = points
            .iter()
            .map(|&(n, p, eps)| match self.seed {
                Some(seed) => point_seed(seed, n, p, eps, plan.runs),
                None => self.rng.next_u64(),
            })
            .collect();
        let progress = self.progress.as_deref();
        if let Some(p) = progress {
            p.start("SIMULATE", points.len() as u64 * plan.runs);
        }
        let advance = |done: u64| {
            if let Some(p) = progress {
                p.advance(done);
            }
        };
        // Ctrl-C at the prompt stops the runs between chunks: a simulation spends nothing, so
        // any point of it is a safe place to stop.
        let stop = crate::sys::interrupt::requested;
        let mut rows = Vec::with_capacity(points.len());
        for (&(n, p, eps), &seed) in points.iter().zip(&seeds) {
            let point = SimPoint { n, p, eps };
            let run = || simulate::simulate_until(point, plan.runs, seed, &advance, &stop);
            let outcome = match lab_pool() {
                Some(pool) => pool.install(run),
                None => run(),
            };
            let outcome = match outcome {
                Ok(o) => o,
                Err(e) => {
                    if let Some(p) = progress {
                        p.finish();
                    }
                    return Err(match e {
                        SimError::Interrupted => EvalError::Interrupted {
                            what: "SIMULATE stopped before its runs were done".into(),
                            span,
                        },
                        e => EvalError::Simulation {
                            message: e.to_string(),
                            span,
                        },
                    });
                }
            };
            rows.push(SimulateRow {
                n,
                p: p.get(),
                eps: eps.get(),
                std: std::f64::consts::SQRT_2 / eps.get(),
                runs: outcome.runs,
                m_naive_exact: outcome.m_naive_exact,
                m_naive: interval(outcome.m_naive),
                m_bayes: interval(outcome.m_bayes),
                p_bayes_better: interval(outcome.p_bayes_better),
            });
        }
        if let Some(p) = progress {
            p.finish();
        }
        let plot = plan.plot.as_ref().map(|chart| {
            let title = simulate_title(&plan);
            let data: Vec<SimRow> = rows.iter().map(sim_row).collect();
            let svg = plot::simulate_svg(&data, plan.axis(), chart.metric, &title)
                .map_err(|e| e.to_string());
            outcome_of(&chart.path, svg)
        });
        Ok(SimulateResult {
            rows,
            std: plan.std,
            plot,
        })
    }
}

fn sim_row(r: &SimulateRow) -> SimRow {
    let triple = |i: Interval| (i.value, i.lower, i.upper);
    SimRow {
        n: r.n,
        p: r.p,
        eps: r.eps,
        m_naive_exact: r.m_naive_exact,
        m_naive: triple(r.m_naive),
        m_bayes: triple(r.m_bayes),
        p_better: triple(r.p_bayes_better),
    }
}

/// The chart's title: the parameters that are the same at every point, and the runs.
fn simulate_title(plan: &SimulatePlan) -> String {
    let mut parts = Vec::new();
    if plan.n.len() == 1 {
        parts.push(format!("n = {}", plan.n[0]));
    }
    if plan.p.len() == 1 {
        parts.push(format!("p = {}", plan.p[0].get()));
    }
    if plan.eps.len() == 1 && plan.axis() != SimAxis::Eps && plan.axis() != SimAxis::Std {
        let eps = plan.eps[0].get();
        parts.push(if plan.std {
            format!(
                "noise std = {}",
                short_number(std::f64::consts::SQRT_2 / eps)
            )
        } else {
            format!("ε = {}", short_number(eps))
        });
    }
    parts.push(format!("{} runs per point", plan.runs));
    format!("Naive and Bayes estimates of a count: {}", parts.join(", "))
}

impl Session {
    /// Refuses, before any work or spending, a chart that cannot be written or must not be:
    /// an empty name, a directory that does not exist, an existing target that is not a
    /// regular file (a directory, a device: the chart replaces its file, and must not replace
    /// those), anything inside the state directory (a ledger, its mark, the secret), the file
    /// of a loaded table, or a directory where a file cannot be created (probed with the
    /// temporary file the chart is written through).
    /// `COMPARE ACCOUNTING`, at the session's delta, with its chart when asked.
    pub(super) fn compare_accounting(
        &self,
        queries: &[u64],
        requirement: ChoosePlan,
        plot: Option<&crate::plan::PlotPlan>,
        statement: &str,
        span: Span,
    ) -> Result<crate::output::CompareAccountingResult, EvalError> {
        if let Some(chart) = plot {
            self.chart_target(&chart.path, chart.span)?;
        }
        let mut r = compare_accounting(queries, requirement, self.delta, statement, span)?;
        if let Some(chart) = plot {
            let svg = plot::accounting_svg(&r).map_err(|e| e.to_string());
            r.plot = Some(outcome_of(&chart.path, svg));
        }
        Ok(r)
    }

    pub(super) fn chart_target(&self, path: &Path, span: Span) -> Result<(), EvalError> {
        let refuse = |reason: String| EvalError::PlotNotWritten {
            path: path.display().to_string(),
            reason,
            span,
        };
        if path.as_os_str().is_empty() {
            return Err(refuse("the file name is empty".into()));
        }
        // Without files (a page in a browser) a chart is kept in memory for the page.
        if cfg!(not(unix)) {
            return Ok(());
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            return Err(refuse(format!(
                "the directory {} does not exist",
                dir.display()
            )));
        }
        if self.ledgers.holds(path) || self.ledgers.holds(&temporary(path)) {
            return Err(refuse(
                "it lies in the state directory, where the ledgers are kept".into(),
            ));
        }
        if self.is_data_file(path) {
            return Err(refuse("it is the data file of a loaded table".into()));
        }
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if !meta.file_type().is_file() {
                return Err(refuse("it exists and is not a regular file".into()));
            }
            if !is_chart(path) {
                return Err(refuse(
                    "it exists and is not a chart (an SVG file); dpq replaces only charts".into(),
                ));
            }
        }
        let tmp = temporary(path);
        if std::fs::symlink_metadata(&tmp).is_ok() {
            return Err(refuse(format!("{} is in the way", tmp.display())));
        }
        std::fs::File::create(&tmp)
            .and_then(|_| std::fs::remove_file(&tmp))
            .map_err(|e| refuse(e.to_string()))
    }
}

/// Whether the existing file at `path` is a chart: an SVG document, by its first bytes. A
/// chart may replace a chart; any other file (data, a script, notes) is never replaced.
fn is_chart(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 512];
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let Ok(n) = file.read(&mut head) else {
        return false;
    };
    let text = String::from_utf8_lossy(&head[..n]);
    let text = text.trim_start_matches('\u{feff}').trim_start();
    text.starts_with("<svg") || (text.starts_with("<?xml") && text.contains("<svg"))
}

/// The file a chart is written to before it is renamed into place.
fn temporary(path: &Path) -> std::path::PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    tmp.into()
}

/// Writes a chart (to a temporary file beside it, then renamed, so a reader never sees half
/// a chart; only over a regular file or nothing) and says how it went.
pub(super) fn outcome_of(path: &Path, svg: Result<String, String>) -> PlotOutcome {
    let shown = path.display().to_string();
    #[cfg(not(unix))]
    return match svg {
        Ok(svg) => {
            crate::output::plot::keep_chart(&shown, svg);
            PlotOutcome::Written(shown)
        }
        Err(reason) => PlotOutcome::Failed(format!("{shown}: {reason}")),
    };
    #[cfg(unix)]
    {
        let written = svg.and_then(|svg| {
            if std::fs::symlink_metadata(path).is_ok_and(|m| !m.file_type().is_file()) {
                return Err("it exists and is not a regular file".to_string());
            }
            if std::fs::symlink_metadata(path).is_ok() && !is_chart(path) {
                return Err("it exists and is not a chart (an SVG file)".to_string());
            }
            let tmp = temporary(path);
            std::fs::write(&tmp, &svg)
                .and_then(|()| std::fs::rename(&tmp, path))
                .map_err(|e| {
                    let _ = std::fs::remove_file(&tmp);
                    e.to_string()
                })?;
            if crate::output::plot::keeping_written_charts() {
                crate::output::plot::keep_chart(&shown, svg);
            }
            Ok(())
        });
        match written {
            Ok(()) => PlotOutcome::Written(shown),
            Err(reason) => PlotOutcome::Failed(format!("{shown}: {reason}")),
        }
    }
}

/// The posterior of the true count in `bins` equal bins over its credible interval widened
/// by half its width on each side (clamped to `[0, n]`); `None` when that window holds more
/// than `MAX_WINDOW` counts.
pub(super) fn posterior_shape(
    n: u64,
    p: Probability,
    eps: Epsilon,
    noisy: f64,
    credible: (u64, u64),
    bins: usize,
) -> Option<PosteriorShape> {
    const MAX_WINDOW: u64 = 4_000_000;
    let (lo, hi) = credible;
    let pad = ((hi - lo) / 2).max(2);
    let from = lo.saturating_sub(pad);
    let to = hi.saturating_add(pad).min(n);
    if to - from >= MAX_WINDOW {
        return None;
    }
    let masses = crate::stats::bayes::posterior_masses(n, p, eps, noisy, from, to);
    // Bins of `size` whole counts each (the last may hold fewer), each showing the mean
    // probability of its counts, so that no bin looks lower for holding fewer counts.
    let size = masses.len().div_ceil(bins.max(1)).max(1);
    let out = masses
        .chunks(size)
        .map(|chunk| chunk.iter().sum::<f64>() / chunk.len() as f64)
        .collect();
    Some(PosteriorShape {
        from,
        to,
        size: size as u64,
        masses: out,
    })
}

/// The posterior chart of `COUNT ... PRIOR ... PLOT`: masses in bins of counts, the credible
/// interval, the Bayes estimate and the noisy answer.
pub(super) fn posterior_chart(
    n: u64,
    p: Probability,
    eps: Epsilon,
    noisy: f64,
    post: &crate::stats::bayes::CountPosterior,
    statement: &str,
) -> Result<String, String> {
    let shape = posterior_shape(n, p, eps, noisy, (post.lower, post.upper), 120)
        .ok_or_else(|| "the posterior is too wide to draw".to_string())?;
    // Bin i holds the counts from + i size .. min(from + (i+1) size, to + 1), drawn from the
    // first count's left edge to the last one's right edge.
    let bins: Vec<(f64, f64, f64)> = shape
        .masses
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let lo = shape.from + i as u64 * shape.size;
            let hi = (lo + shape.size).min(shape.to + 1);
            (lo as f64 - 0.5, hi as f64 - 0.5, *m)
        })
        .collect();
    // The statement without its PLOT clause (printed last), short enough for the title line.
    let query = statement
        .rfind(" PLOT '")
        .map_or(statement, |i| &statement[..i]);
    let mut title = format!("Posterior: {query}");
    if title.chars().count() > 80 {
        title = title.chars().take(79).collect::<String>() + "…";
    }
    plot::posterior_svg(&plot::PosteriorChart {
        title: &title,
        bins: &bins,
        credible: (post.lower as f64, post.upper as f64),
        mean: post.mean,
        noisy,
        level: post.level,
    })
    .map_err(|e| e.to_string())
}

/// The threads `SIMULATE` runs on: a pool of its own, apart from rayon's global pool where
/// questions about the data (counts over large tables) run. Rayon's workers take their own
/// queued work before work sent from outside, so a simulation on the global pool would hold a
/// count sent meanwhile (another analyst's, on a served dataset) until its last chunk; with
/// two pools the operating system shares the cores between them. `None` when the system
/// would not start its threads (the simulation then runs where it is asked).
fn lab_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("dpq-lab-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}
