//! Pictures: SVG charts of simulations and posteriors (plotters), and terminal sparklines.
//!
//! The charts reproduce the figures of Naldi and D'Acquisto, "Differential privacy: an
//! estimation theory-based method for choosing epsilon" (section 4, Figures 1-8): the average
//! error of the naive and Bayes estimators of a count, and the probability that the Bayes
//! estimate is closer to the true count, against the privacy level ε, the noise standard
//! deviation √2/ε, the predicate probability p or the database size n.
//!
//! Every function here is pure: it returns the SVG document as a `String` (the caller writes
//! the file) and never prints. Output is deterministic: the same input gives byte-identical
//! SVG. Text is laid out by plotters' built-in estimating font (no font files are read) and
//! written as SVG `<text>` elements, so the viewer's own sans-serif font renders it.

use std::ops::Range;

use crate::plan::{SimAxis, SimMetric};

use plotters::coord::ranged1d::{
    KeyPointHint, KeyPointWeight, NoDefaultFormatting, Ranged, ValueFormatter,
};
use plotters::coord::Shift;
use plotters::element::MultiLineText;
use plotters::prelude::*;

/// Why a chart could not be drawn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlotError {
    /// Nothing to draw: no row (or bin) with finite values.
    #[error("nothing to plot: no data with finite values")]
    Empty,
    /// The drawing backend failed (message from plotters).
    #[error("cannot draw the chart: {0}")]
    Draw(String),
}

/// One simulated point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimRow {
    /// Database size.
    pub n: u64,
    /// Predicate probability.
    pub p: f64,
    /// Privacy level ε.
    pub eps: f64,
    /// Analytic naive average error 1/ε.
    pub m_naive_exact: f64,
    /// Monte Carlo naive average error: value, lower and upper 95% bounds.
    pub m_naive: (f64, f64, f64),
    /// Monte Carlo Bayes average error: value, lower and upper 95% bounds.
    pub m_bayes: (f64, f64, f64),
    /// Monte Carlo probability that the Bayes estimate is closer: value, lower, upper (95%).
    pub p_better: (f64, f64, f64),
}

/// The posterior distribution of a true count, as drawn by [`posterior_svg`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PosteriorChart<'a> {
    /// Title on top of the chart.
    pub title: &'a str,
    /// Bins `(lo, hi, mass)`: the probability mass of true counts in `[lo, hi)`.
    pub bins: &'a [(f64, f64, f64)],
    /// The credible interval `(lo, hi)`, shaded (and its bars drawn darker).
    pub credible: (f64, f64),
    /// The posterior mean, drawn as a solid vertical line.
    pub mean: f64,
    /// The noisy answer, drawn as a dashed vertical line.
    pub noisy: f64,
    /// The credibility level of `credible`, as a fraction (0.95) used in its legend label.
    pub level: f64,
}

/// Width and height of one chart panel, in pixels.
const PANEL: (u32, u32) = (800, 500);
const FONT: &str = "sans-serif";
const TITLE_SIZE: f64 = 22.0;
const CAPTION_SIZE: f64 = 17.0;
const DESC_SIZE: f64 = 16.0;
const TICK_SIZE: f64 = 13.0;
const LEGEND_SIZE: f64 = 13.0;

/// Series colours (the Tableau 10 palette): distinguishable, fixed, deterministic.
const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

fn draw_err(e: impl std::fmt::Display) -> PlotError {
    PlotError::Draw(e.to_string())
}

// ---------------------------------------------------------------------------------------------
// Axis: a linear or logarithmic, possibly reversed, f64 axis with "nice" ticks.
// ---------------------------------------------------------------------------------------------

/// A plotters coordinate with our own tick choice and labels: linear or log, and reversible
/// (plotters' own ranges cannot be reversed, and its log ticks are one per decade only).
#[derive(Debug, Clone)]
struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
    reversed: bool,
    major: Vec<f64>,
    minor: Vec<f64>,
    /// Decimals of the labels of a linear axis (log axes choose per value).
    decimals: usize,
}

impl Axis {
    /// A linear axis over `[lo, hi]` (`lo < hi`), about `target` labelled ticks.
    fn linear(lo: f64, hi: f64, reversed: bool, target: usize) -> Axis {
        let (step, minor_div) = nice_step((hi - lo) / target.max(1) as f64);
        let major = ticks(lo, hi, step);
        let minor = ticks(lo, hi, step / minor_div);
        let decimals = (-step.log10().floor()).max(0.0) as usize;
        Axis {
            lo,
            hi,
            log: false,
            reversed,
            major,
            minor,
            decimals,
        }
    }

    /// A logarithmic axis over `[lo, hi]` (`0 < lo < hi`): ticks at 1, 2, 5 × 10^k over
    /// short spans, at powers of ten over long ones.
    fn log(lo: f64, hi: f64, reversed: bool) -> Axis {
        let decades = (hi / lo).log10();
        let (d0, d1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        let inside = |v: f64| v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9);
        let mults: &[f64] = if decades <= 1.2 {
            &[1.0, 1.5, 2.0, 3.0, 5.0, 7.0]
        } else if decades <= 4.0 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        let every = (decades / 10.0).ceil().max(1.0) as i32;
        let mut major = Vec::new();
        let mut minor = Vec::new();
        for d in d0..=d1 {
            let base = 10f64.powi(d);
            if (d - d0) % every == 0 {
                major.extend(mults.iter().map(|m| m * base).filter(|v| inside(*v)));
            }
            if decades <= 6.0 {
                minor.extend((1..10).map(|m| f64::from(m) * base).filter(|v| inside(*v)));
            }
        }
        Axis {
            lo,
            hi,
            log: true,
            reversed,
            major,
            minor,
            decimals: 0,
        }
    }

    /// The axis of `n` bars stacked along it, bar `k` over `[k, k + 1]`: its ticks (and so
    /// its labels) at the bars' centres `k + 0.5`, where plotters' own ticks fall at round
    /// values between bars.
    fn bars(n: usize) -> Axis {
        Axis {
            lo: 0.0,
            hi: n as f64,
            log: false,
            reversed: false,
            major: (0..n).map(|k| k as f64 + 0.5).collect(),
            minor: Vec::new(),
            decimals: 1,
        }
    }

    /// Position of `v` along the axis, 0 at the start (left or bottom), 1 at the end.
    fn frac(&self, v: f64) -> f64 {
        let t = if self.log {
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        let t = if self.reversed { 1.0 - t } else { t };
        if t.is_finite() {
            t.clamp(-1.0, 2.0)
        } else {
            0.0
        }
    }

    fn label(&self, v: f64) -> String {
        let decimals = if self.log {
            (-(v.log10() + 1e-9).floor()).max(0.0) as usize
        } else {
            self.decimals
        };
        format!("{:.*}", decimals, v + 0.0)
    }
}

impl Ranged for Axis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let t = self.frac(*value);
        limit.0 + (f64::from(limit.1 - limit.0) * t).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        match hint.weight() {
            KeyPointWeight::Bold => self.major.clone(),
            KeyPointWeight::Any => self.minor.clone(),
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

impl ValueFormatter<f64> for Axis {
    fn format(value: &f64) -> String {
        format!("{value}")
    }

    fn format_ext(&self, value: &f64) -> String {
        self.label(*value)
    }
}

/// A step of 1, 2 or 5 × 10^k at least `raw`, and how many minor intervals divide it.
fn nice_step(raw: f64) -> (f64, f64) {
    let raw = if raw.is_finite() && raw > 0.0 {
        raw
    } else {
        1.0
    };
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    if norm <= 1.0 + 1e-9 {
        (mag, 5.0)
    } else if norm <= 2.0 + 1e-9 {
        (2.0 * mag, 4.0)
    } else if norm <= 5.0 + 1e-9 {
        (5.0 * mag, 5.0)
    } else {
        (10.0 * mag, 5.0)
    }
}

/// The multiples of `step` inside `[lo, hi]`.
fn ticks(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let k0 = (lo / step - 1e-9).ceil() as i64;
    let k1 = (hi / step + 1e-9).floor() as i64;
    if k1 < k0 || k1 - k0 > 1000 {
        return Vec::new();
    }
    (k0..=k1).map(|k| k as f64 * step + 0.0).collect()
}

/// Shortest decimal rendering of a parameter value (0.3, 0.1, 1000).
fn fmt_param(v: f64) -> String {
    crate::output::short_number(v + 0.0)
}

// ---------------------------------------------------------------------------------------------
// Legend placement: the corner of the plotting area where the fewest drawn points fall.
// ---------------------------------------------------------------------------------------------

const CORNERS: [SeriesLabelPosition; 8] = [
    SeriesLabelPosition::UpperRight,
    SeriesLabelPosition::UpperLeft,
    SeriesLabelPosition::LowerRight,
    SeriesLabelPosition::LowerLeft,
    SeriesLabelPosition::UpperMiddle,
    SeriesLabelPosition::LowerMiddle,
    SeriesLabelPosition::MiddleRight,
    SeriesLabelPosition::MiddleLeft,
];

/// Picks the legend position among [`CORNERS`] overlapping the fewest of `pixels` (plotting
/// area coordinates), for a legend of `labels` drawn as plotters draws it.
fn legend_position(
    labels: &[String],
    area: (u32, u32),
    pixels: &[(i32, i32)],
) -> SeriesLabelPosition {
    let style: TextStyle = (FONT, LEGEND_SIZE).into_font().into();
    let mut text = MultiLineText::<_, &str>::new((0, 0), &style);
    for label in labels {
        text.push_line(label.as_str());
    }
    let (w, h) = text
        .estimate_dimension()
        .unwrap_or((200, 20 * labels.len() as i32));
    let (w, h) = (w + 30 + 20, h + 20);
    let (aw, ah) = (area.0 as i32, area.1 as i32);
    let mut best = (usize::MAX, SeriesLabelPosition::UpperRight);
    for pos in CORNERS {
        let x = match pos {
            SeriesLabelPosition::UpperLeft
            | SeriesLabelPosition::MiddleLeft
            | SeriesLabelPosition::LowerLeft => 5,
            SeriesLabelPosition::UpperMiddle | SeriesLabelPosition::LowerMiddle => (aw - w) / 2,
            _ => aw - w - 5,
        };
        let y = match pos {
            SeriesLabelPosition::UpperLeft
            | SeriesLabelPosition::UpperMiddle
            | SeriesLabelPosition::UpperRight => 5,
            SeriesLabelPosition::MiddleLeft | SeriesLabelPosition::MiddleRight => (ah - h) / 2,
            _ => ah - h - 5,
        };
        let hits = pixels
            .iter()
            .filter(|(px, py)| *px >= x - 6 && *px <= x + w + 6 && *py >= y - 6 && *py <= y + h + 6)
            .count();
        if hits < best.0 {
            best = (hits, pos);
        }
    }
    best.1
}

/// Samples a polyline (in pixels) every few pixels, for [`legend_position`].
fn sample_polyline(points: &[(i32, i32)], out: &mut Vec<(i32, i32)>) {
    out.extend(points.iter().copied());
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        let len = f64::from((b.0 - a.0).abs().max((b.1 - a.1).abs()));
        let steps = (len / 4.0).ceil() as i32;
        for s in 1..steps {
            let t = f64::from(s) / f64::from(steps);
            out.push((
                a.0 + (f64::from(b.0 - a.0) * t).round() as i32,
                a.1 + (f64::from(b.1 - a.1) * t).round() as i32,
            ));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Simulation charts.
// ---------------------------------------------------------------------------------------------

/// One Monte Carlo curve: points `(x, value, lower, upper)`.
#[derive(Debug, Clone)]
struct Curve {
    label: String,
    color: RGBColor,
    points: Vec<(f64, f64, f64, f64)>,
}

/// The analytic naive error 1/ε over x.
#[derive(Debug, Clone)]
struct NaiveLine {
    label: String,
    color: RGBColor,
    dashed: bool,
    points: Vec<(f64, f64)>,
}

/// Rows of one series with their x values, sorted by x.
type Members<'r> = Vec<(f64, &'r SimRow)>;

/// The valid rows of a simulation grouped into series, ready to draw.
struct SimGroups<'r> {
    /// Per series: its key (the two parameters other than x), its label, its rows.
    series: Vec<((f64, f64), String, Members<'r>)>,
}

fn x_value(row: &SimRow, axis: SimAxis) -> f64 {
    match axis {
        SimAxis::Eps => row.eps,
        SimAxis::Std => std::f64::consts::SQRT_2 / row.eps,
        SimAxis::P => row.p,
        SimAxis::N => row.n as f64,
    }
}

fn triple_finite(t: (f64, f64, f64)) -> bool {
    t.0.is_finite() && t.1.is_finite() && t.2.is_finite()
}

fn row_valid(row: &SimRow, axis: SimAxis, metric: SimMetric) -> bool {
    let x = x_value(row, axis);
    let x_ok = x.is_finite()
        && match axis {
            SimAxis::P => true,
            _ => x > 0.0,
        };
    let error_ok = row.m_naive_exact.is_finite() && triple_finite(row.m_bayes);
    let improvement_ok = triple_finite(row.p_better);
    x_ok && row.eps.is_finite()
        && row.p.is_finite()
        && match metric {
            SimMetric::Error => error_ok,
            SimMetric::Improvement => improvement_ok,
            SimMetric::Both => error_ok && improvement_ok,
        }
}

/// The parameters other than x that identify a series, and their names.
fn series_key(row: &SimRow, axis: SimAxis) -> (f64, f64) {
    match axis {
        SimAxis::Eps | SimAxis::Std => (row.n as f64, row.p),
        SimAxis::P => (row.n as f64, row.eps),
        SimAxis::N => (row.p, row.eps),
    }
}

fn key_names(axis: SimAxis) -> (&'static str, &'static str) {
    match axis {
        SimAxis::Eps | SimAxis::Std => ("n", "p"),
        SimAxis::P => ("n", "ε"),
        SimAxis::N => ("p", "ε"),
    }
}

fn group_rows(
    rows: &[SimRow],
    axis: SimAxis,
    metric: SimMetric,
) -> Result<SimGroups<'_>, PlotError> {
    let mut groups: Vec<((f64, f64), Members<'_>)> = Vec::new();
    for row in rows.iter().filter(|r| row_valid(r, axis, metric)) {
        let key = series_key(row, axis);
        let x = x_value(row, axis);
        match groups
            .iter_mut()
            .find(|(k, _)| k.0.to_bits() == key.0.to_bits() && k.1.to_bits() == key.1.to_bits())
        {
            Some((_, members)) => members.push((x, row)),
            None => groups.push((key, vec![(x, row)])),
        }
    }
    if groups.is_empty() {
        return Err(PlotError::Empty);
    }
    groups.sort_by(|a, b| a.0 .0.total_cmp(&b.0 .0).then(a.0 .1.total_cmp(&b.0 .1)));
    for (_, members) in &mut groups {
        members.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let distinct = |f: fn(&(f64, f64)) -> f64| {
        let first = f(&groups[0].0).to_bits();
        groups.iter().any(|(k, _)| f(k).to_bits() != first)
    };
    let (vary0, vary1) = (distinct(|k| k.0), distinct(|k| k.1));
    let (name0, name1) = key_names(axis);
    let series = groups
        .into_iter()
        .map(|(key, members)| {
            let mut parts = Vec::new();
            if vary0 || !vary1 {
                parts.push(format!("{name0} = {}", fmt_param(key.0)));
            }
            if vary1 {
                parts.push(format!("{name1} = {}", fmt_param(key.1)));
            }
            (key, parts.join(", "), members)
        })
        .collect();
    Ok(SimGroups { series })
}

/// The x axis of a simulation chart over the data values `xs` (finite, > 0 except for P).
fn sim_x_axis(axis: SimAxis, xs: &[f64]) -> Axis {
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let log_range = |min: f64, max: f64, pad: f64| {
        if max > min {
            (min / pad, max * pad)
        } else {
            (min / 2.0, max * 2.0)
        }
    };
    let linear_range = |min: f64, max: f64| {
        let span = if max > min {
            max - min
        } else {
            max.abs().max(1.0)
        };
        ((min - 0.05 * span).max(0.0), max + 0.05 * span)
    };
    match axis {
        SimAxis::Eps if max / min > 20.0 => {
            let (lo, hi) = log_range(min, max, 1.15);
            Axis::log(lo, hi, true)
        }
        SimAxis::Eps | SimAxis::Std => {
            let (lo, hi) = linear_range(min, max);
            Axis::linear(lo, hi, axis == SimAxis::Eps, 8)
        }
        SimAxis::P => Axis::linear(min.min(0.0) - 0.02, max.max(1.0) + 0.02, false, 10),
        SimAxis::N => {
            let (lo, hi) = log_range(min, max, 1.3);
            Axis::log(lo, hi, false)
        }
    }
}

fn x_desc(axis: SimAxis) -> &'static str {
    match axis {
        SimAxis::Eps => "ε (privacy level)",
        SimAxis::Std => "Noise standard deviation √2/ε",
        SimAxis::P => "Predicate probability p",
        SimAxis::N => "Database size n",
    }
}

/// Which single metric a panel draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Panel {
    Error,
    Improvement,
}

/// The curves and reference lines of one panel.
struct PanelData {
    curves: Vec<Curve>,
    naive: Vec<NaiveLine>,
    y: (f64, f64),
}

fn panel_data(groups: &SimGroups<'_>, axis: SimAxis, panel: Panel) -> PanelData {
    let curves: Vec<Curve> = groups
        .series
        .iter()
        .enumerate()
        .map(|(i, (_, label, members))| Curve {
            label: format!("Bayes, {label}"),
            color: color(i),
            points: members
                .iter()
                .map(|(x, r)| {
                    let t = match panel {
                        Panel::Error => r.m_bayes,
                        Panel::Improvement => r.p_better,
                    };
                    (*x, t.0, t.1.min(t.2), t.1.max(t.2))
                })
                .collect(),
        })
        .collect();
    let mut naive: Vec<NaiveLine> = Vec::new();
    if panel == Panel::Error {
        // The naive error depends on ε only: one line when x is ε or √2/ε, else one per ε.
        // (ε bits or None, first series index, points)
        type Line = (Option<u64>, usize, Vec<(f64, f64)>);
        let mut lines: Vec<Line> = Vec::new();
        for (i, (_, _, members)) in groups.series.iter().enumerate() {
            for (x, r) in members {
                let key = match axis {
                    SimAxis::Eps | SimAxis::Std => None,
                    SimAxis::P | SimAxis::N => Some(r.eps.to_bits()),
                };
                let idx = match lines.iter().position(|(k, _, _)| *k == key) {
                    Some(idx) => idx,
                    None => {
                        lines.push((key, i, Vec::new()));
                        lines.len() - 1
                    }
                };
                let pts = &mut lines[idx].2;
                if !pts.iter().any(|(px, _)| px.to_bits() == x.to_bits()) {
                    pts.push((*x, r.m_naive_exact));
                }
            }
        }
        let single = lines.len() == 1;
        for (key, first_series, mut pts) in lines {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let label = match key {
                Some(bits) if !single => {
                    format!("naive (1/ε), ε = {}", fmt_param(f64::from_bits(bits)))
                }
                _ => "naive (1/ε)".to_string(),
            };
            naive.push(NaiveLine {
                label,
                color: if single { BLACK } else { color(first_series) },
                dashed: !single,
                points: pts,
            });
        }
    }
    let y = match panel {
        Panel::Error => {
            let top = curves
                .iter()
                .flat_map(|c| c.points.iter().map(|p| p.3.max(p.1)))
                .chain(naive.iter().flat_map(|l| l.points.iter().map(|p| p.1)))
                .fold(0.0, f64::max);
            let bottom = curves
                .iter()
                .flat_map(|c| c.points.iter().map(|p| p.2.min(p.1)))
                .chain(naive.iter().flat_map(|l| l.points.iter().map(|p| p.1)))
                .fold(0.0, f64::min);
            let top = if top > bottom { top } else { bottom + 1.0 };
            (bottom, top + 0.08 * (top - bottom))
        }
        Panel::Improvement => {
            let low = curves
                .iter()
                .flat_map(|c| c.points.iter().map(|p| p.2.min(p.1)))
                .fold(0.4, f64::min);
            let high = curves
                .iter()
                .flat_map(|c| c.points.iter().map(|p| p.3.max(p.1)))
                .fold(1.0, f64::max);
            let low = if low < 0.4 {
                ((low - 0.02) * 20.0).floor() / 20.0
            } else {
                0.4
            };
            (low, high)
        }
    };
    PanelData { curves, naive, y }
}

/// Draws one panel of a simulation chart into `area`.
fn draw_sim_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    groups: &SimGroups<'_>,
    axis: SimAxis,
    panel: Panel,
    caption: Option<&str>,
) -> Result<(), PlotError> {
    let data = panel_data(groups, axis, panel);
    let xs: Vec<f64> = data
        .curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.0))
        .collect();
    let x_axis = sim_x_axis(axis, &xs);
    let y_axis = Axis::linear(data.y.0, data.y.1, false, 8);
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(12)
        .margin_right(24)
        .x_label_area_size(52)
        .y_label_area_size(64);
    if let Some(caption) = caption {
        builder.caption(caption, (FONT, CAPTION_SIZE));
    }
    let mut chart = builder
        .build_cartesian_2d(x_axis, y_axis)
        .map_err(draw_err)?;
    let y_desc = match panel {
        Panel::Error => "Average error",
        Panel::Improvement => "P[Bayes closer]",
    };
    chart
        .configure_mesh()
        .x_desc(x_desc(axis))
        .y_desc(y_desc)
        .label_style((FONT, TICK_SIZE))
        .axis_desc_style((FONT, DESC_SIZE))
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(BLACK.mix(0.04))
        .draw()
        .map_err(draw_err)?;

    let mut labels: Vec<String> = Vec::new();
    let mut pixels: Vec<(i32, i32)> = Vec::new();
    let origin = {
        let (xr, yr) = chart.plotting_area().get_pixel_range();
        (xr.start, yr.start)
    };
    let to_px =
        |chart: &ChartContext<'_, SVGBackend<'_>, Cartesian2d<Axis, Axis>>, x: f64, y: f64| {
            let (px, py) = chart.backend_coord(&(x, y));
            (px - origin.0, py - origin.1)
        };

    if panel == Panel::Improvement {
        let (x0, x1) = (chart.x_range().start, chart.x_range().end);
        let style = BLACK.mix(0.6).stroke_width(2);
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x0, 0.5), (x1, 0.5)],
                8,
                6,
                style,
            ))
            .map_err(draw_err)?
            .label("0.5 (no improvement)")
            .legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (8, 0)], style)
                    + PathElement::new(vec![(13, 0), (20, 0)], style)
            });
        labels.push("0.5 (no improvement)".to_string());
        let line = [to_px(&chart, x0, 0.5), to_px(&chart, x1, 0.5)];
        sample_polyline(&line, &mut pixels);
    }

    for line in &data.naive {
        let style = line.color.stroke_width(2);
        let series = if line.dashed {
            chart.draw_series(DashedLineSeries::new(line.points.clone(), 10, 6, style))
        } else {
            chart.draw_series(LineSeries::new(line.points.clone(), style))
        }
        .map_err(draw_err)?;
        series.label(line.label.clone());
        if line.dashed {
            series.legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (8, 0)], style)
                    + PathElement::new(vec![(13, 0), (20, 0)], style)
            });
        } else {
            series.legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        }
        labels.push(line.label.clone());
        let px: Vec<(i32, i32)> = line
            .points
            .iter()
            .map(|p| to_px(&chart, p.0, p.1))
            .collect();
        sample_polyline(&px, &mut pixels);
    }

    for curve in &data.curves {
        let color = curve.color;
        let style = color.stroke_width(2);
        // 95% intervals: vertical bars with caps.
        let bars = curve.points.iter().filter(|p| p.3 > p.2);
        chart
            .draw_series(
                bars.clone()
                    .map(|p| PathElement::new(vec![(p.0, p.2), (p.0, p.3)], color.stroke_width(1))),
            )
            .map_err(draw_err)?;
        chart
            .draw_series(bars.clone().flat_map(|p| {
                [p.2, p.3].map(|y| {
                    EmptyElement::at((p.0, y))
                        + PathElement::new(vec![(-4, 0), (4, 0)], color.stroke_width(1))
                })
            }))
            .map_err(draw_err)?;
        chart
            .draw_series(LineSeries::new(
                curve.points.iter().map(|p| (p.0, p.1)),
                style,
            ))
            .map_err(draw_err)?
            .label(curve.label.clone())
            .legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (20, 0)], style)
                    + Circle::new((10, 0), 3, color.filled())
            });
        chart
            .draw_series(
                curve
                    .points
                    .iter()
                    .map(|p| Circle::new((p.0, p.1), 3, color.filled())),
            )
            .map_err(draw_err)?;
        labels.push(curve.label.clone());
        let px: Vec<(i32, i32)> = curve
            .points
            .iter()
            .map(|p| to_px(&chart, p.0, p.1))
            .collect();
        sample_polyline(&px, &mut pixels);
        for p in &curve.points {
            pixels.push(to_px(&chart, p.0, p.2));
            pixels.push(to_px(&chart, p.0, p.3));
        }
    }

    let dim = chart.plotting_area().dim_in_pixel();
    let position = legend_position(&labels, dim, &pixels);
    chart
        .configure_series_labels()
        .position(position)
        .label_font((FONT, LEGEND_SIZE))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.5))
        .draw()
        .map_err(draw_err)?;
    Ok(())
}

/// An SVG chart of simulation rows. Rows are grouped into series by the parameters other than
/// the x axis (e.g. x = Eps, one series per n, or per (n, p) when several), each series sorted
/// by x.
///
/// Error panels show the analytic naive error 1/ε as a line (one per ε when x is p or n, where
/// it is horizontal) and each Bayes series as a line with markers and 95% error bars.
/// Improvement panels show P[Bayes closer] with 95% error bars and a dashed reference at 0.5,
/// y from 0.4 (lower if the data are) to 1. `Both` puts the two panels side by side.
/// The ε axis is reversed (large ε, less privacy, on the left) and logarithmic when the data
/// span more than a factor 20; √2/ε and p are linear, n is logarithmic.
///
/// Rows with a non-finite value among those drawn (or a non-positive ε, √2/ε or n) are
/// skipped; [`PlotError::Empty`] when none remains. One panel is 800×500 pixels.
pub fn simulate_svg(
    rows: &[SimRow],
    x: SimAxis,
    metric: SimMetric,
    title: &str,
) -> Result<String, PlotError> {
    let groups = group_rows(rows, x, metric)?;
    let panels: &[(Panel, Option<&str>)] = match metric {
        SimMetric::Error => &[(Panel::Error, None)],
        SimMetric::Improvement => &[(Panel::Improvement, None)],
        SimMetric::Both => &[
            (Panel::Error, Some("Average error")),
            (Panel::Improvement, Some("Probability that Bayes is closer")),
        ],
    };
    let size = (PANEL.0 * panels.len() as u32, PANEL.1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let body = root.titled(title, (FONT, TITLE_SIZE)).map_err(draw_err)?;
        let areas = body.split_evenly((1, panels.len()));
        for (area, (panel, caption)) in areas.iter().zip(panels) {
            draw_sim_panel(area, &groups, x, *panel, *caption)?;
        }
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

// ---------------------------------------------------------------------------------------------
// Accounting chart.
// ---------------------------------------------------------------------------------------------

/// What a line of the accounting chart draws of a row.
type Measure = fn(&crate::output::AccountingRow) -> f64;

/// An SVG chart of `COMPARE ACCOUNTING`: the epsilon a workload of counts costs against the
/// number of counts, both axes logarithmic, one line per accounting (pure DP with Laplace
/// counts; zCDP with Gaussian counts and with the same Laplace counts, as (epsilon, delta)).
/// [`PlotError::Empty`] when no row has finite, positive values. 800×500 pixels.
pub fn accounting_svg(r: &crate::output::CompareAccountingResult) -> Result<String, PlotError> {
    let rows: Vec<_> = r
        .rows
        .iter()
        .filter(|row| {
            [row.pure_eps, row.gaussian_eps, row.laplace_eps]
                .iter()
                .all(|v| v.is_finite() && *v > 0.0)
        })
        .collect();
    if rows.is_empty() {
        return Err(PlotError::Empty);
    }
    let ks: Vec<f64> = rows.iter().map(|row| row.k as f64).collect();
    let values = rows
        .iter()
        .flat_map(|row| [row.pure_eps, row.gaussian_eps, row.laplace_eps]);
    let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let (k0, k1) = (
        ks.iter().copied().fold(f64::INFINITY, f64::min),
        ks.iter().copied().fold(0.0, f64::max),
    );
    let x_axis = Axis::log(k0 / 1.5, k1 * 1.5, false);
    let y_axis = Axis::log(lo / 1.5, hi * 1.5, false);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, PANEL).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let title = format!(
            "Epsilon of k counts, each within ±{} with probability {}",
            fmt_value(r.half_width),
            r.confidence
        );
        let body = root.titled(&title, (FONT, TITLE_SIZE)).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&body)
            .margin(12)
            .margin_right(24)
            .x_label_area_size(52)
            .y_label_area_size(64)
            .build_cartesian_2d(x_axis, y_axis)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("Number of counts k")
            .y_desc("Epsilon")
            .label_style((FONT, TICK_SIZE))
            .axis_desc_style((FONT, DESC_SIZE))
            .bold_line_style(BLACK.mix(0.12))
            .light_line_style(BLACK.mix(0.04))
            .draw()
            .map_err(draw_err)?;
        let delta = if r.delta < 1e-3 {
            format!("{:e}", r.delta)
        } else {
            r.delta.to_string()
        };
        let series: [(String, Measure); 3] = [
            ("pure DP, Laplace: k eps".to_string(), |row| row.pure_eps),
            (format!("zCDP, Gaussian: (eps, {delta})"), |row| {
                row.gaussian_eps
            }),
            (format!("zCDP, Laplace: (eps, {delta})"), |row| {
                row.laplace_eps
            }),
        ];
        for (i, (name, value)) in series.iter().enumerate() {
            let style = color(i).stroke_width(2);
            let points: Vec<(f64, f64)> =
                rows.iter().map(|row| (row.k as f64, value(row))).collect();
            chart
                .draw_series(LineSeries::new(points.clone(), style))
                .map_err(draw_err)?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
            chart
                .draw_series(points.iter().map(|p| Circle::new(*p, 3, color(i).filled())))
                .map_err(draw_err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font((FONT, LEGEND_SIZE))
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.5))
            .draw()
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

// ---------------------------------------------------------------------------------------------
// Posterior chart.
// ---------------------------------------------------------------------------------------------

/// A value for a legend: integers without decimals, others with two.
fn fmt_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{:.0}", v + 0.0)
    } else {
        format!("{:.2}", v + 0.0)
    }
}

/// An SVG chart of the posterior of a true count: one bar of probability mass per bin
/// `[lo, hi)` (bars whose `lo` lies in the credible interval darker, the interval also
/// shaded), the
/// posterior mean as a solid vertical line and the noisy answer as a dashed one, all named in
/// the legend with their values.
///
/// Bins with a non-finite value, a negative mass or `hi <= lo` are skipped, bins of zero mass
/// draw no bar; non-finite `credible`, `mean` or `noisy` are not drawn. [`PlotError::Empty`]
/// when no bin remains. The chart is 800×500 pixels.
pub fn posterior_svg(chart: &PosteriorChart<'_>) -> Result<String, PlotError> {
    let bins: Vec<(f64, f64, f64)> = chart
        .bins
        .iter()
        .copied()
        .filter(|(lo, hi, m)| {
            lo.is_finite() && hi.is_finite() && m.is_finite() && hi > lo && *m >= 0.0
        })
        .collect();
    if bins.is_empty() {
        return Err(PlotError::Empty);
    }
    let credible = (
        chart.credible.0.min(chart.credible.1),
        chart.credible.0.max(chart.credible.1),
    );
    let credible = (credible.0.is_finite() && credible.1.is_finite()).then_some(credible);
    let mean = chart.mean.is_finite().then_some(chart.mean);
    let noisy = chart.noisy.is_finite().then_some(chart.noisy);

    // Bars lower than 1/1000 of the highest (under half a pixel) are not drawn and do not
    // stretch the x axis, so long negligible tails do not squeeze the distribution.
    let peak = bins.iter().map(|b| b.2).fold(0.0, f64::max);
    let visible: Vec<(f64, f64, f64)> = bins
        .iter()
        .copied()
        .filter(|b| b.2 > 0.0 && b.2 >= 1e-3 * peak)
        .collect();
    let extent = if visible.is_empty() { &bins } else { &visible };
    let mut x_min = extent.iter().map(|b| b.0).fold(f64::INFINITY, f64::min);
    let mut x_max = extent.iter().map(|b| b.1).fold(f64::NEG_INFINITY, f64::max);
    for v in mean
        .into_iter()
        .chain(credible.into_iter().flat_map(|c| [c.0, c.1]))
    {
        x_min = x_min.min(v);
        x_max = x_max.max(v);
    }
    // A noisy answer far from the posterior (the prior dominates: tiny eps, or an answer
    // outside [0, n]) would squeeze the distribution into a sliver: it is then drawn at the
    // edge of the chart, its legend saying where it is.
    let reach = x_max - x_min;
    let off_chart = noisy.filter(|z| *z < x_min - reach || *z > x_max + reach);
    if let Some(z) = noisy.filter(|_| off_chart.is_none()) {
        x_min = x_min.min(z);
        x_max = x_max.max(z);
    }
    let pad = 0.03 * (x_max - x_min);
    let x_axis = Axis::linear(x_min - pad, x_max + pad, false, 10);
    let top = if peak > 0.0 { peak * 1.15 } else { 1.0 };
    let y_axis = Axis::linear(0.0, top, false, 8);

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, PANEL).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let body = root
            .titled(chart.title, (FONT, TITLE_SIZE))
            .map_err(draw_err)?;
        let mut plot = ChartBuilder::on(&body)
            .margin(12)
            .margin_right(24)
            .x_label_area_size(52)
            .y_label_area_size(72)
            .build_cartesian_2d(x_axis, y_axis)
            .map_err(draw_err)?;
        plot.configure_mesh()
            .x_desc("True count")
            .y_desc("Posterior probability")
            .label_style((FONT, TICK_SIZE))
            .axis_desc_style((FONT, DESC_SIZE))
            .bold_line_style(BLACK.mix(0.12))
            .light_line_style(BLACK.mix(0.04))
            .draw()
            .map_err(draw_err)?;

        let origin = {
            let (xr, yr) = plot.plotting_area().get_pixel_range();
            (xr.start, yr.start)
        };
        let mut labels: Vec<String> = Vec::new();
        let mut pixels: Vec<(i32, i32)> = Vec::new();
        let inside_color = RGBColor(31, 119, 180);
        let outside_color = RGBColor(158, 202, 225);

        let is_inside = |b: &(f64, f64, f64)| match credible {
            Some((c0, c1)) => b.0 >= c0 - 1e-9 && b.0 <= c1 + 1e-9,
            None => true,
        };
        let bars = visible.iter();
        if let Some((c0, c1)) = credible {
            let band = RGBColor(255, 200, 80);
            let label = if chart.level.is_finite() && chart.level > 0.0 {
                let pct = if chart.level <= 1.0 {
                    chart.level * 100.0
                } else {
                    chart.level
                };
                format!(
                    "{}% credible interval [{}, {}]",
                    fmt_param((pct * 10.0).round() / 10.0),
                    fmt_value(c0),
                    fmt_value(c1)
                )
            } else {
                format!("credible interval [{}, {}]", fmt_value(c0), fmt_value(c1))
            };
            // The band covers the interval and the whole of the bars inside it.
            let (b0, b1) = bars
                .clone()
                .filter(|b| is_inside(b))
                .fold((c0, c1), |(lo, hi), b| (lo.min(b.0), hi.max(b.1)));
            plot.draw_series(std::iter::once(Rectangle::new(
                [(b0, 0.0), (b1, top)],
                band.mix(0.25).filled(),
            )))
            .map_err(draw_err)?
            .label(label.clone())
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 6), (x + 20, y + 6)], band.mix(0.5).filled())
            });
            labels.push(label);
        }

        // Wide bars get a one-pixel gap on each side so that neighbours stay distinct.
        let gap = |b: &(f64, f64, f64)| {
            let width = plot.backend_coord(&(b.1, 0.0)).0 - plot.backend_coord(&(b.0, 0.0)).0;
            if width.abs() >= 8 {
                1
            } else {
                0
            }
        };
        let rects: Vec<_> = bars
            .clone()
            .map(|b| {
                let c = if is_inside(b) {
                    inside_color
                } else {
                    outside_color
                };
                let m = gap(b);
                let mut rect = Rectangle::new([(b.0, 0.0), (b.1, b.2)], c.filled());
                rect.set_margin(0, 0, m, m);
                rect
            })
            .collect();
        plot.draw_series(rects)
            .map_err(draw_err)?
            .label("posterior probability")
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 6), (x + 20, y + 6)], inside_color.filled())
            });
        labels.push("posterior probability".to_string());
        for b in bars {
            let (px, py) = plot.backend_coord(&((b.0 + b.1) / 2.0, b.2));
            let (_, py0) = plot.backend_coord(&(b.0, 0.0));
            let mut column = Vec::new();
            sample_polyline(
                &[
                    (px - origin.0, py - origin.1),
                    (px - origin.0, py0 - origin.1),
                ],
                &mut column,
            );
            pixels.extend(column);
        }

        let mut vline = |v: f64, label: String, color: RGBColor, dashed: bool| {
            let style = color.stroke_width(2);
            let pts = vec![(v, 0.0), (v, top)];
            let series = if dashed {
                plot.draw_series(DashedLineSeries::new(pts, 8, 5, style))
            } else {
                plot.draw_series(LineSeries::new(pts, style))
            }
            .map_err(draw_err)?;
            series.label(label.clone());
            if dashed {
                series.legend(move |(x, y)| {
                    EmptyElement::at((x, y))
                        + PathElement::new(vec![(0, 0), (8, 0)], style)
                        + PathElement::new(vec![(13, 0), (20, 0)], style)
                });
            } else {
                series.legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
            }
            labels.push(label);
            let (px, _) = plot.backend_coord(&(v, 0.0));
            let dim = plot.plotting_area().dim_in_pixel();
            sample_polyline(
                &[(px - origin.0, 0), (px - origin.0, dim.1 as i32)],
                &mut pixels,
            );
            Ok::<(), PlotError>(())
        };
        if let Some(m) = mean {
            vline(
                m,
                format!("posterior mean = {}", fmt_value(m)),
                RGBColor(214, 39, 40),
                false,
            )?;
        }
        match (noisy, off_chart) {
            (Some(z), None) => {
                vline(z, format!("noisy answer = {}", fmt_value(z)), BLACK, true)?;
            }
            (Some(z), Some(_)) => {
                let (edge, side) = if z > x_max {
                    (x_max + pad, "right")
                } else {
                    (x_min - pad, "left")
                };
                vline(
                    edge,
                    format!("noisy answer = {} (off the chart, {side})", fmt_value(z)),
                    BLACK,
                    true,
                )?;
            }
            _ => {}
        }

        let dim = plot.plotting_area().dim_in_pixel();
        let position = legend_position(&labels, dim, &pixels);
        plot.configure_series_labels()
            .position(position)
            .label_font((FONT, LEGEND_SIZE))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.5))
            .draw()
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

// ---------------------------------------------------------------------------------------------
// Sparkline.
// ---------------------------------------------------------------------------------------------

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// A one-line Unicode sparkline (▁▂▃▄▅▆▇█) of `values` resampled to `width` characters.
///
/// The values are split into `width` consecutive buckets of (nearly) equal size and each
/// bucket shows its **maximum**, so peaks survive downsampling and uneven bucket sizes do not
/// bias heights (as sums would). With fewer values than `width` there is one character per
/// value (no upsampling). Heights are relative to the largest bucket: the maximum is `█`,
/// zero (and negative or non-finite values, treated as zero) is `▁`, and a bucket gets the
/// bar `round(7 · max / overall max)`. An empty input or a zero width gives the empty string; all zeros give a row of
/// `▁`.
pub fn sparkline(values: &[f64], width: usize) -> String {
    if values.is_empty() || width == 0 {
        return String::new();
    }
    let clean = |v: f64| if v.is_finite() && v > 0.0 { v } else { 0.0 };
    let buckets = width.min(values.len());
    let maxima: Vec<f64> = (0..buckets)
        .map(|i| {
            let start = i * values.len() / buckets;
            let end = ((i + 1) * values.len() / buckets).max(start + 1);
            values[start..end]
                .iter()
                .copied()
                .map(clean)
                .fold(0.0, f64::max)
        })
        .collect();
    let top = maxima.iter().copied().fold(0.0, f64::max);
    maxima
        .into_iter()
        .map(|v| {
            if v <= 0.0 || top <= 0.0 {
                BARS[0]
            } else {
                let level = (v / top * 7.0).round().clamp(0.0, 7.0) as usize;
                BARS[level]
            }
        })
        .collect()
}

/// The most parts a histogram chart draws: beyond them the bars would be thinner than text.
pub const MAX_BARS: usize = 200;

/// The most characters of a bar's name on a chart; a longer name is shortened in the middle.
pub const MAX_LABEL: usize = 48;

/// `name` in at most `max` characters: whole when it fits, else its start and its end with
/// `…` between them.
fn shorten(name: &str, max: usize) -> String {
    let count = name.chars().count();
    if count <= max || max < 3 {
        return name.to_string();
    }
    let tail = (max - 1) / 2;
    let head = max - 1 - tail;
    let start: String = name.chars().take(head).collect();
    let end: String = name.chars().skip(count - tail).collect();
    format!("{start}…{end}")
}

/// The name of the bar whose centre is at `y` on [`Axis::bars`], the first of `names` at the
/// top (bar `k` from the bottom is part `n - 1 - k`); empty anywhere else.
fn bar_name(names: &[String], y: f64) -> String {
    let n = names.len();
    let k = y - 0.5;
    if k.fract() != 0.0 || !(0.0..n as f64).contains(&k) {
        return String::new();
    }
    names[n - 1 - k as usize].clone()
}

/// A histogram as horizontal bars, one per part (cell or group), each with its 95% interval
/// as a whisker; a noisy count below zero is drawn as a bar to the left of zero (it is
/// noise, not an error). The names are drawn beside the bars.
pub fn histogram_svg(
    title: &str,
    parts: &[crate::output::HistogramPart],
) -> Result<String, String> {
    let finite = |p: &&crate::output::HistogramPart| {
        p.noisy.is_finite() && p.interval95.0.is_finite() && p.interval95.1.is_finite()
    };
    if parts.is_empty() || !parts.iter().all(|p| finite(&p)) {
        return Err(PlotError::Empty.to_string());
    }
    if parts.len() > MAX_BARS {
        return Err(format!(
            "a chart draws at most {MAX_BARS} bars; this histogram has {}",
            parts.len()
        ));
    }
    let lo = parts
        .iter()
        .map(|p| p.interval95.0.min(0.0))
        .fold(0.0, f64::min);
    let hi = parts
        .iter()
        .map(|p| p.interval95.1.max(0.0))
        .fold(0.0, f64::max);
    let pad = 0.04 * (hi - lo).max(1.0);
    let x_axis = Axis::linear(lo - pad, hi + pad, false, 8);
    let n = parts.len();
    // Each bar's name, shortened in the middle when long: both ends of a compound name
    // (`18 <= age < 30, region = 'North'`) are where names differ.
    let names: Vec<String> = parts.iter().map(|p| shorten(&p.name, MAX_LABEL)).collect();
    let label_width = names.iter().map(|s| s.chars().count()).max().unwrap_or(0) as u32;
    let height = (120 + 26 * n as u32).max(300);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (PANEL.0 + 7 * label_width, height))
            .into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_err(e).to_string())?;
        let body = root
            .titled(title, (FONT, TITLE_SIZE))
            .map_err(|e| draw_err(e).to_string())?;
        let mut chart = ChartBuilder::on(&body)
            .margin(12)
            .margin_right(24)
            .x_label_area_size(52)
            .y_label_area_size(16 + 7 * label_width)
            .build_cartesian_2d(x_axis, Axis::bars(n))
            .map_err(|e| draw_err(e).to_string())?;
        chart
            .configure_mesh()
            .x_desc("Noisy count, with its 95% interval")
            .disable_y_mesh()
            .y_label_formatter(&|y| bar_name(&names, *y))
            .label_style((FONT, TICK_SIZE))
            .axis_desc_style((FONT, DESC_SIZE))
            .bold_line_style(BLACK.mix(0.12))
            .light_line_style(BLACK.mix(0.0))
            .draw()
            .map_err(|e| draw_err(e).to_string())?;
        let bar = RGBColor(31, 119, 180);
        // Part i is drawn from the top: at y = n - i - 1 .. n - i.
        let y = |i: usize| (n - i - 1) as f64;
        chart
            .draw_series(parts.iter().enumerate().map(|(i, p)| {
                Rectangle::new(
                    [
                        (p.noisy.min(0.0), y(i) + 0.2),
                        (p.noisy.max(0.0), y(i) + 0.8),
                    ],
                    bar.mix(0.7).filled(),
                )
            }))
            .map_err(|e| draw_err(e).to_string())?;
        chart
            .draw_series(parts.iter().enumerate().map(|(i, p)| {
                PathElement::new(
                    vec![(p.interval95.0, y(i) + 0.5), (p.interval95.1, y(i) + 0.5)],
                    BLACK.stroke_width(2),
                )
            }))
            .map_err(|e| draw_err(e).to_string())?;
        for cap in [0, 1] {
            chart
                .draw_series(parts.iter().enumerate().map(|(i, p)| {
                    let x = if cap == 0 {
                        p.interval95.0
                    } else {
                        p.interval95.1
                    };
                    PathElement::new(
                        vec![(x, y(i) + 0.3), (x, y(i) + 0.7)],
                        BLACK.stroke_width(2),
                    )
                }))
                .map_err(|e| draw_err(e).to_string())?;
        }
        root.present().map_err(|e| draw_err(e).to_string())?;
    }
    Ok(svg)
}

/// Whether a chart written to its file is kept too, for a notebook to show it inline.
static KEEP_WRITTEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Keeps every chart written to a file from now on (Python's sessions show them inline).
pub fn keep_written_charts() {
    KEEP_WRITTEN.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether charts written to files are kept.
pub fn keeping_written_charts() -> bool {
    KEEP_WRITTEN.load(std::sync::atomic::Ordering::Relaxed)
}

/// Charts drawn where there are no files (a page in a browser), by name, oldest first.
static KEPT: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// Keeps the chart `svg` drawn for `name` (replacing one of that name), for the page to show.
pub fn keep_chart(name: &str, svg: String) {
    let mut kept = KEPT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    kept.retain(|(n, _)| n != name);
    kept.push((name.to_string(), svg));
}

/// The charts kept since the last call, oldest first.
pub fn take_charts() -> Vec<(String, String)> {
    std::mem::take(
        &mut *KEPT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    )
}
