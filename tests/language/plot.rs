//! SVG charts and sparklines of `dpq::output::plot`: well-formed, deterministic, labelled, with the
//! ε axis reversed, and robust to empty or non-finite input.

use dpq::driver::{run_source, Emitted};
use dpq::eval::{Randomness, Session};
use dpq::output::plot::{
    histogram_svg, posterior_svg, simulate_svg, sparkline, PlotError, PosteriorChart, SimRow,
    MAX_LABEL,
};
use dpq::output::{Format, HistogramPart};
use dpq::plan::{SimAxis, SimMetric};
use dpq::privacy::Store;

/// A plausible simulated row (not a real simulation: a smooth function of the parameters).
fn row(n: u64, p: f64, eps: f64) -> SimRow {
    let prior_var = n as f64 * p * (1.0 - p);
    let noise_var = 2.0 / (eps * eps);
    let bayes = 0.8 * (1.0 / (1.0 / prior_var.max(1e-9) + 1.0 / noise_var)).sqrt();
    let naive = 1.0 / eps;
    let better = 0.5 + 0.45 * (1.0 - bayes / naive).max(0.0);
    SimRow {
        n,
        p,
        eps,
        m_naive_exact: naive,
        m_naive: (naive, 0.98 * naive, 1.02 * naive),
        m_bayes: (bayes, 0.98 * bayes, 1.02 * bayes),
        p_better: (better, better - 0.01, (better + 0.01).min(1.0)),
    }
}

const EPS_LOG: [f64; 8] = [0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0];
const EPS_LIN: [f64; 4] = [0.05, 0.1, 0.5, 1.0];

fn eps_rows(eps: &[f64]) -> Vec<SimRow> {
    [100, 1000]
        .iter()
        .flat_map(|&n| eps.iter().map(move |&e| row(n, 0.3, e)))
        .collect()
}

fn p_rows() -> Vec<SimRow> {
    [100, 1000]
        .iter()
        .flat_map(|&n| (0..=10).map(move |i| row(n, f64::from(i) / 10.0, 0.1)))
        .collect()
}

fn n_rows() -> Vec<SimRow> {
    [0.1, 1.0]
        .iter()
        .flat_map(|&e| [10, 100, 1000, 10000].map(|n| row(n, 0.3, e)))
        .collect()
}

fn rows_for(axis: SimAxis) -> Vec<SimRow> {
    match axis {
        SimAxis::Eps | SimAxis::Std => eps_rows(&EPS_LOG),
        SimAxis::P => p_rows(),
        SimAxis::N => n_rows(),
    }
}

/// A `<text>` element of the SVG: its x, y, anchor and content.
#[derive(Debug, Clone)]
struct Text {
    x: f64,
    y: f64,
    anchor: String,
    content: String,
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    let len = tag[start..].find('"')?;
    Some(tag[start..start + len].to_string())
}

/// Text as written in SVG, with its five escaped characters read back.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&apos;", "'")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

fn texts(svg: &str) -> Vec<Text> {
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(start) = rest.find("<text ") {
        let after = &rest[start..];
        let tag_end = after.find('>').expect("text tag closed");
        let tag = &after[..tag_end];
        let close = after.find("</text>").expect("text element closed");
        let content = unescape(after[tag_end + 1..close].trim());
        out.push(Text {
            x: attr(tag, "x").and_then(|v| v.parse().ok()).expect("x"),
            y: attr(tag, "y").and_then(|v| v.parse().ok()).expect("y"),
            anchor: attr(tag, "text-anchor").unwrap_or_default(),
            content,
        });
        rest = &after[close..];
    }
    out
}

/// The numeric tick labels of the x axis: the most populated row of centred numeric texts,
/// sorted left to right, as (x, value).
fn x_ticks(svg: &str) -> Vec<(f64, f64)> {
    let numeric: Vec<(f64, f64, f64)> = texts(svg)
        .into_iter()
        .filter(|t| t.anchor == "middle")
        .filter_map(|t| t.content.parse::<f64>().ok().map(|v| (t.x, t.y, v)))
        .collect();
    let mut best_y = f64::NAN;
    let mut best_count = 0;
    for (_, y, _) in &numeric {
        let count = numeric.iter().filter(|t| t.1 == *y).count();
        if count > best_count {
            best_count = count;
            best_y = *y;
        }
    }
    let mut ticks: Vec<(f64, f64)> = numeric
        .into_iter()
        .filter(|t| t.1 == best_y)
        .map(|t| (t.0, t.2))
        .collect();
    ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
    ticks
}

fn assert_well_formed(svg: &str) {
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<svg").count(), 1);
    assert_eq!(
        svg.matches("<text").count(),
        svg.matches("</text>").count(),
        "every text element closed"
    );
    assert!(
        !svg.contains("NaN") && !svg.contains("inf"),
        "non-finite coordinate"
    );
}

const AXES: [SimAxis; 4] = [SimAxis::Eps, SimAxis::Std, SimAxis::P, SimAxis::N];
const METRICS: [SimMetric; 3] = [SimMetric::Error, SimMetric::Improvement, SimMetric::Both];

fn x_label(axis: SimAxis) -> &'static str {
    match axis {
        SimAxis::Eps => "ε (privacy level)",
        SimAxis::Std => "Noise standard deviation √2/ε",
        SimAxis::P => "Predicate probability p",
        SimAxis::N => "Database size n",
    }
}

#[test]
fn simulate_every_axis_and_metric_is_well_formed_labelled_and_deterministic() {
    for axis in AXES {
        let rows = rows_for(axis);
        for metric in METRICS {
            let title = format!("Chart {axis:?} {metric:?}");
            let svg = simulate_svg(&rows, axis, metric, &title).expect("chart");
            assert_well_formed(&svg);
            let all: Vec<String> = texts(&svg).into_iter().map(|t| t.content).collect();
            let has = |s: &str| all.iter().any(|t| t == s);
            assert!(has(&title), "{axis:?} {metric:?}: title missing");
            assert!(has(x_label(axis)), "{axis:?} {metric:?}: x label missing");
            let series = match axis {
                SimAxis::Eps | SimAxis::Std | SimAxis::P => ["Bayes, n = 100", "Bayes, n = 1000"],
                SimAxis::N => ["Bayes, ε = 0.1", "Bayes, ε = 1"],
            };
            for label in series {
                assert!(has(label), "{axis:?} {metric:?}: legend {label} missing");
            }
            if metric != SimMetric::Improvement {
                assert!(has("Average error"));
                let naive = match axis {
                    SimAxis::Eps | SimAxis::Std => "naive (1/ε)",
                    SimAxis::P => "naive (1/ε)",
                    SimAxis::N => "naive (1/ε), ε = 0.1",
                };
                assert!(
                    has(naive),
                    "{axis:?} {metric:?}: {naive} missing in {all:?}"
                );
            }
            if metric != SimMetric::Error {
                assert!(has("P[Bayes closer]"));
                assert!(has("0.5 (no improvement)"));
            }
            assert!(svg.contains("<polyline"), "{axis:?} {metric:?}: no lines");
            assert!(svg.contains("<circle"), "{axis:?} {metric:?}: no markers");
            let again = simulate_svg(&rows, axis, metric, &title).expect("chart");
            assert_eq!(svg, again, "{axis:?} {metric:?}: not deterministic");
        }
    }
}

#[test]
fn both_metrics_make_two_panels_side_by_side() {
    let rows = eps_rows(&EPS_LOG);
    let one = simulate_svg(&rows, SimAxis::Eps, SimMetric::Error, "t").expect("chart");
    let both = simulate_svg(&rows, SimAxis::Eps, SimMetric::Both, "t").expect("chart");
    assert!(one.starts_with("<svg width=\"800\" height=\"500\""));
    assert!(both.starts_with("<svg width=\"1600\" height=\"500\""));
    let contents: Vec<String> = texts(&both).into_iter().map(|t| t.content).collect();
    let count = |label: &str| contents.iter().filter(|c| *c == label).count();
    // Panel captions, then one y label each, and the x label under both panels.
    assert_eq!(count("Probability that Bayes is closer"), 1);
    assert_eq!(count("Average error"), 2);
    assert_eq!(count("P[Bayes closer]"), 1);
    assert_eq!(count("ε (privacy level)"), 2);
    // The right panel's texts are all in the right half.
    let title_x = texts(&both)
        .into_iter()
        .find(|t| t.content == "P[Bayes closer]")
        .map(|t| t.x)
        .expect("y label");
    assert!(title_x > 800.0);
}

fn assert_decreasing_left_to_right(ticks: &[(f64, f64)]) {
    assert!(ticks.len() >= 3, "too few ticks: {ticks:?}");
    for w in ticks.windows(2) {
        assert!(w[0].0 < w[1].0);
        assert!(w[0].1 > w[1].1, "larger ε must be further left: {ticks:?}");
    }
}

fn assert_increasing_left_to_right(ticks: &[(f64, f64)]) {
    assert!(ticks.len() >= 3, "too few ticks: {ticks:?}");
    for w in ticks.windows(2) {
        assert!(w[0].1 < w[1].1, "values must grow to the right: {ticks:?}");
    }
}

#[test]
fn eps_axis_is_reversed_on_log_and_linear_scales() {
    for metric in [SimMetric::Error, SimMetric::Improvement] {
        // 0.05..5 spans a factor 100: log scale, ticks 5, 2, 1, 0.5, ... from left to right.
        let svg = simulate_svg(&eps_rows(&EPS_LOG), SimAxis::Eps, metric, "log").expect("chart");
        let ticks = x_ticks(&svg);
        assert_decreasing_left_to_right(&ticks);
        assert!(ticks.iter().any(|t| t.1 == 0.1) && ticks.iter().any(|t| t.1 == 1.0));
        // Log scale: 0.1 → 1 is as wide as 1 → 10 would be; check 0.1→1 vs 0.5→5 spacing.
        let at = |v: f64| ticks.iter().find(|t| t.1 == v).map(|t| t.0).expect("tick");
        let (d1, d2) = (at(0.1) - at(1.0), at(0.5) - at(5.0));
        assert!((d1 - d2).abs() <= 2.0, "not logarithmic: {d1} vs {d2}");

        // 0.05..1 spans a factor 20: linear scale, still reversed.
        let svg = simulate_svg(&eps_rows(&EPS_LIN), SimAxis::Eps, metric, "lin").expect("chart");
        let ticks = x_ticks(&svg);
        assert_decreasing_left_to_right(&ticks);
        let gaps: Vec<f64> = ticks.windows(2).map(|w| w[1].0 - w[0].0).collect();
        let (lo, hi) = gaps
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), g| (a.min(*g), b.max(*g)));
        assert!(
            hi - lo <= 2.0,
            "linear ticks must be evenly spaced: {gaps:?}"
        );
    }
}

#[test]
fn other_axes_increase_left_to_right() {
    for axis in [SimAxis::Std, SimAxis::P, SimAxis::N] {
        let svg = simulate_svg(&rows_for(axis), axis, SimMetric::Error, "t").expect("chart");
        let ticks = x_ticks(&svg);
        assert_increasing_left_to_right(&ticks);
        if axis == SimAxis::P {
            assert_eq!(ticks.first().map(|t| t.1), Some(0.0));
            assert_eq!(ticks.last().map(|t| t.1), Some(1.0));
        }
        if axis == SimAxis::N {
            for v in [10.0, 100.0, 1000.0, 10000.0] {
                assert!(ticks.iter().any(|t| t.1 == v), "{v} missing: {ticks:?}");
            }
        }
    }
}

#[test]
fn one_series_per_pair_when_both_parameters_vary() {
    let mut rows = eps_rows(&EPS_LIN);
    rows.extend(EPS_LIN.iter().map(|&e| row(100, 0.5, e)));
    let svg = simulate_svg(&rows, SimAxis::Eps, SimMetric::Error, "t").expect("chart");
    let contents: Vec<String> = texts(&svg).into_iter().map(|t| t.content).collect();
    for label in [
        "Bayes, n = 100, p = 0.3",
        "Bayes, n = 100, p = 0.5",
        "Bayes, n = 1000, p = 0.3",
    ] {
        assert!(
            contents.iter().any(|c| c == label),
            "{label} in {contents:?}"
        );
    }
    // The naive line depends on ε only: drawn and listed once.
    assert_eq!(contents.iter().filter(|c| *c == "naive (1/ε)").count(), 1);
}

#[test]
fn improvement_y_axis_spans_point_four_to_one_or_lower() {
    let svg = simulate_svg(
        &eps_rows(&EPS_LOG),
        SimAxis::Eps,
        SimMetric::Improvement,
        "t",
    )
    .expect("chart");
    let y_ticks: Vec<f64> = texts(&svg)
        .into_iter()
        .filter(|t| t.anchor == "end")
        .filter_map(|t| t.content.parse().ok())
        .collect();
    let min = y_ticks.iter().copied().fold(f64::MAX, f64::min);
    let max = y_ticks.iter().copied().fold(f64::MIN, f64::max);
    assert_eq!((min, max), (0.4, 1.0), "{y_ticks:?}");

    let mut rows = eps_rows(&EPS_LOG);
    rows[0].p_better = (0.3, 0.25, 0.35);
    let svg = simulate_svg(&rows, SimAxis::Eps, SimMetric::Improvement, "t").expect("chart");
    let lowest = texts(&svg)
        .into_iter()
        .filter(|t| t.anchor == "end")
        .filter_map(|t| t.content.parse::<f64>().ok())
        .fold(f64::MAX, f64::min);
    assert!(lowest <= 0.25, "{lowest}");
}

#[test]
fn empty_and_non_finite_rows() {
    for metric in METRICS {
        assert_eq!(
            simulate_svg(&[], SimAxis::Eps, metric, "t"),
            Err(PlotError::Empty)
        );
    }
    let mut bad = row(100, 0.3, 0.1);
    bad.m_bayes.0 = f64::NAN;
    bad.p_better.2 = f64::INFINITY;
    assert_eq!(
        simulate_svg(&[bad], SimAxis::Eps, SimMetric::Both, "t"),
        Err(PlotError::Empty)
    );
    let zero_eps = row(100, 0.3, 0.0); // 1/ε infinite, √2/ε infinite
    assert_eq!(
        simulate_svg(&[zero_eps], SimAxis::Std, SimMetric::Error, "t"),
        Err(PlotError::Empty)
    );

    // Bad rows among good ones are skipped; no NaN reaches the SVG.
    let mut rows = eps_rows(&EPS_LOG);
    rows.push(bad);
    rows.push(zero_eps);
    rows.push(SimRow {
        eps: f64::NAN,
        ..row(100, 0.3, 0.1)
    });
    for axis in AXES {
        for metric in METRICS {
            let svg = simulate_svg(&rows, axis, metric, "t").expect("chart");
            assert_well_formed(&svg);
        }
    }
    // A single point (degenerate ranges) still draws.
    for axis in AXES {
        let svg = simulate_svg(&[row(100, 0.3, 0.5)], axis, SimMetric::Both, "one").expect("one");
        assert_well_formed(&svg);
    }
}

fn posterior_bins() -> Vec<(f64, f64, f64)> {
    // A discretised bell over counts 20..40 (all bins visible), plus an empty bin.
    let mut bins: Vec<(f64, f64, f64)> = (20..40)
        .map(|k| {
            let z = (f64::from(k) - 30.0) / 4.0;
            (f64::from(k), f64::from(k + 1), (-0.5 * z * z).exp())
        })
        .collect();
    let total: f64 = bins.iter().map(|b| b.2).sum();
    for b in &mut bins {
        b.2 /= total;
    }
    bins.push((40.0, 41.0, 0.0));
    bins
}

#[test]
fn posterior_chart_has_bars_lines_and_labels() {
    let bins = posterior_bins();
    let chart = PosteriorChart {
        title: "Posterior of the true count",
        bins: &bins,
        credible: (23.0, 37.0),
        mean: 30.5,
        noisy: 27.25,
        level: 0.95,
    };
    let svg = posterior_svg(&chart).expect("chart");
    assert_well_formed(&svg);
    let contents: Vec<String> = texts(&svg).into_iter().map(|t| t.content).collect();
    for label in [
        "Posterior of the true count",
        "True count",
        "Posterior probability",
        "95% credible interval [23, 37]",
        "posterior mean = 30.50",
        "noisy answer = 27.25",
    ] {
        assert!(
            contents.iter().any(|c| c == label),
            "{label} in {contents:?}"
        );
    }
    let non_empty = bins.iter().filter(|b| b.2 > 0.0).count();
    assert!(
        svg.matches("<rect").count() >= non_empty,
        "{} rects for {non_empty} bins",
        svg.matches("<rect").count()
    );
    assert!(svg.contains("<polyline"), "vertical lines");
    assert_eq!(
        svg,
        posterior_svg(&chart).expect("chart"),
        "not deterministic"
    );
}

#[test]
fn a_noisy_answer_far_from_the_posterior_is_drawn_at_the_edge_and_named() {
    let bins = posterior_bins();
    let tick_values = |svg: &str| -> Vec<f64> {
        texts(svg)
            .into_iter()
            .filter_map(|t| t.content.parse::<f64>().ok())
            .collect()
    };
    for (noisy, side) in [(5000.5, "right"), (-4000.25, "left")] {
        let chart = PosteriorChart {
            title: "far",
            bins: &bins,
            credible: (23.0, 37.0),
            mean: 30.5,
            noisy,
            level: 0.95,
        };
        let svg = posterior_svg(&chart).expect("chart");
        assert_well_formed(&svg);
        let label = format!("noisy answer = {noisy:.2} (off the chart, {side})");
        assert!(
            texts(&svg).iter().any(|t| t.content == label),
            "{label} missing"
        );
        // The axis stays on the posterior: no tick beyond a few counts of it.
        assert!(tick_values(&svg).iter().all(|v| (-1.0..=60.0).contains(v)));
    }
    // Near the posterior, the answer is drawn where it is.
    let chart = PosteriorChart {
        title: "near",
        bins: &bins,
        credible: (23.0, 37.0),
        mean: 30.5,
        noisy: 45.5,
        level: 0.95,
    };
    let svg = posterior_svg(&chart).expect("chart");
    assert!(texts(&svg)
        .iter()
        .any(|t| t.content == "noisy answer = 45.50"));
}

#[test]
fn posterior_errors_and_non_finite_values() {
    let empty = PosteriorChart {
        title: "t",
        bins: &[],
        credible: (0.0, 1.0),
        mean: 0.5,
        noisy: 0.5,
        level: 0.95,
    };
    assert_eq!(posterior_svg(&empty), Err(PlotError::Empty));
    let nan_bins = [
        (f64::NAN, 1.0, 0.5),
        (0.0, f64::INFINITY, 0.5),
        (2.0, 3.0, f64::NAN),
    ];
    assert_eq!(
        posterior_svg(&PosteriorChart {
            bins: &nan_bins,
            ..empty
        }),
        Err(PlotError::Empty)
    );
    let bins = posterior_bins();
    let chart = PosteriorChart {
        title: "t",
        bins: &bins,
        credible: (f64::NAN, 37.0),
        mean: f64::NAN,
        noisy: f64::INFINITY,
        level: f64::NAN,
    };
    let svg = posterior_svg(&chart).expect("chart");
    assert_well_formed(&svg);
    assert!(!svg.contains("posterior mean") && !svg.contains("noisy answer"));
    // A noisy answer far outside the bins widens the axis rather than failing.
    let svg = posterior_svg(&PosteriorChart {
        noisy: -15.0,
        mean: 30.0,
        credible: (23.0, 37.0),
        ..chart
    })
    .expect("chart");
    assert!(svg.contains("noisy answer = -15"));
}

#[test]
fn sparkline_shapes() {
    assert_eq!(sparkline(&[], 10), "");
    assert_eq!(sparkline(&[1.0, 2.0], 0), "");
    let values: Vec<f64> = (0..100).map(|i| f64::from(i % 17)).collect();
    for width in [1, 7, 10, 33, 100] {
        assert_eq!(sparkline(&values, width).chars().count(), width);
    }
    // Fewer values than the width: one character per value.
    assert_eq!(sparkline(&[1.0, 2.0, 3.0], 10).chars().count(), 3);

    let s = sparkline(&[0.0, 1.0, 2.0, 4.0, 8.0, 0.0], 6);
    let chars: Vec<char> = s.chars().collect();
    assert_eq!(chars[0], '▁');
    assert_eq!(chars[4], '█');
    assert_eq!(chars[5], '▁');
    assert!(chars[1] <= chars[2] && chars[2] <= chars[3] && chars[3] <= chars[4]);

    assert_eq!(sparkline(&[0.0; 5], 5), "▁▁▁▁▁");
    assert_eq!(sparkline(&[f64::NAN, -1.0, 3.0], 3), "▁▁█");

    // Buckets keep their maximum: a lone peak survives downsampling.
    let mut spiky = vec![0.0; 1000];
    spiky[501] = 5.0;
    let s = sparkline(&spiky, 10);
    assert_eq!(s.chars().count(), 10);
    assert_eq!(s.chars().filter(|c| *c == '█').count(), 1);
    assert_eq!(s.chars().nth(5), Some('█'));
}

/// Runs `script` in a practice session seeded with 2 and returns its JSON results; every
/// statement must succeed.
fn run_script(script: &str) -> Vec<serde_json::Value> {
    let mut session = Session::with_store(Randomness::Seeded(2), Store::memory());
    let mut out = Vec::new();
    run_source(
        &mut session,
        "test",
        script,
        Format::Json,
        &mut |e| match e {
            Emitted::Result(s) => out.push(serde_json::from_str(&s).expect("one JSON object")),
            Emitted::Error(s) => panic!("{s}"),
        },
    );
    out
}

/// The bars of a histogram chart, top to bottom: the filled rectangles' (top, bottom) in
/// pixels.
fn bars(svg: &str) -> Vec<(f64, f64)> {
    svg.split("<rect ")
        .skip(1)
        .map(|r| &r[..r.find('>').expect("rect closed")])
        .filter(|r| r.contains("fill=\"#1F77B4\""))
        .map(|r| {
            let num = |name| attr(&format!(" {r}"), name).and_then(|v| v.parse::<f64>().ok());
            let y = num("y").expect("y");
            (y, y + num("height").expect("height"))
        })
        .collect()
}

/// Every part of a histogram or `COUNT ... BY` chart is named beside its own bar: the names
/// (the cells of the JSON result, in order) are the chart's right-aligned labels, top to
/// bottom, each at the height of its bar. (Before the fix plotters put its ticks at round
/// values between bars and every label was empty.)
fn assert_every_bar_named(svg: &str, result: &serde_json::Value) {
    assert_well_formed(svg);
    let names: Vec<String> = result["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .map(|c| c["cell"].as_str().expect("a cell's name").to_string())
        .collect();
    assert!(names.len() >= 2, "{names:?}");
    let mut labels: Vec<Text> = texts(svg)
        .into_iter()
        .filter(|t| t.anchor == "end" && !t.content.is_empty())
        .collect();
    labels.sort_by(|a, b| a.y.total_cmp(&b.y));
    let shown: Vec<&str> = labels.iter().map(|t| t.content.as_str()).collect();
    assert_eq!(shown, names, "the labels, top to bottom");
    let bars = bars(svg);
    assert_eq!(bars.len(), names.len(), "one bar per part");
    for (label, (top, bottom)) in labels.iter().zip(&bars) {
        assert!(
            *top <= label.y && label.y <= *bottom,
            "{} at y = {} beside its bar from {top} to {bottom}",
            label.content,
            label.y
        );
    }
}

#[test]
fn a_histogram_chart_names_every_cell() {
    let dir = tempfile::tempdir().expect("tempdir");
    let chart = dir.path().join("cells.svg");
    let out = run_script(&format!(
        "LOAD 'examples/data/census.csv' AS census; \
         CUBE BY age (18, 30, 45, 65, 80), region ('North', 'South', 'East', 'West', 'Centre'); \
         HISTOGRAM WITH EPS 0.4 PLOT '{}';",
        chart.display()
    ));
    let svg = std::fs::read_to_string(&chart).expect("the chart is written");
    let result = &out[2];
    assert_eq!(result["kind"], "histogram");
    assert_eq!(result["cells"].as_array().map(Vec::len), Some(49));
    assert_every_bar_named(&svg, result);
    assert!(texts(&svg)
        .iter()
        .any(|t| t.content == "18 <= age < 30, region = 'North'"));
}

#[test]
fn a_count_by_chart_names_every_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let chart = dir.path().join("groups.svg");
    let out = run_script(&format!(
        "LOAD 'examples/data/census.csv' AS census; \
         CUBE BY age (18, 30, 45, 65, 80), region ('North', 'South', 'East', 'West', 'Centre'); \
         COUNT BY region WITH EPS 0.2 PLOT '{}';",
        chart.display()
    ));
    let svg = std::fs::read_to_string(&chart).expect("the chart is written");
    let result = &out[2];
    assert_eq!(result["kind"], "histogram");
    assert_every_bar_named(&svg, result);
    let contents: Vec<String> = texts(&svg).into_iter().map(|t| t.content).collect();
    for region in ["North", "South", "East", "West", "Centre"] {
        let name = format!("region = '{region}'");
        assert!(contents.contains(&name), "{name} in {contents:?}");
    }
}

/// A name too long for the label area is shortened in the middle, keeping both ends, so
/// that two long names differing at either end stay told apart and no label runs off the
/// chart's left edge.
#[test]
fn long_bar_names_are_shortened_in_the_middle() {
    let long = |end: &str| format!("{}{end}", "x".repeat(2 * MAX_LABEL));
    let part = |name: String| HistogramPart {
        name,
        noisy: 10.0,
        interval95: (5.0, 15.0),
    };
    let parts = [
        part(long("North")),
        part(long("South")),
        part("short".into()),
    ];
    let svg = histogram_svg("long names", &parts).expect("chart");
    assert_well_formed(&svg);
    let mut labels: Vec<Text> = texts(&svg)
        .into_iter()
        .filter(|t| t.anchor == "end" && !t.content.is_empty())
        .collect();
    labels.sort_by(|a, b| a.y.total_cmp(&b.y));
    assert_eq!(labels.len(), 3);
    for (label, end) in labels.iter().zip(["North", "South"]) {
        assert_eq!(
            label.content.chars().count(),
            MAX_LABEL,
            "{}",
            label.content
        );
        assert!(label.content.starts_with("xxx"), "{}", label.content);
        assert!(label.content.contains('…'), "{}", label.content);
        assert!(label.content.ends_with(end), "{}", label.content);
    }
    assert_eq!(labels[2].content, "short");
    // The labels end at the same x, right of the left edge by at least their estimated width
    // (7 pixels a character).
    assert!(labels
        .iter()
        .all(|l| l.x >= (7 * MAX_LABEL) as f64 && l.x == labels[0].x));
}
