//! Statement results as data, and their rendering as comfy-table text or JSON lines.

mod json;
pub mod plot;
mod table;
mod width;

pub use json::{error_json, render_json};
pub use table::{num as short_number, percent, refit, render_table, sensitivity_rule};
pub use width::{fit, layout, set_layout, set_width, width, Layout};

use crate::data::ColumnType;
use crate::plan::ChoosePlan;
pub use crate::privacy::Neighbours;
use rust_decimal::Decimal;

/// How results are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Tables for people (comfy-table).
    #[default]
    Table,
    /// One JSON object per statement result, one per line.
    Json,
}

/// The result of one statement, with the session's privacy status.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// What the statement produced.
    pub output: Output,
    /// `Some(seed)` when `SET SEED` is in force: results are reproducible and not private.
    pub seed: Option<u64>,
    /// Whether spending is kept in memory only (`--practice`): nothing is recorded.
    pub practice: bool,
}

/// What a statement produced. Never a raw value, a row or a true count.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// `LOAD`: the new table.
    Loaded(TableInfo),
    /// `USE`: the table now current.
    Using(TableInfo),
    /// `SHOW TABLES`.
    Tables(Vec<TableInfo>),
    /// `DESCRIBE`.
    Described(TableInfo),
    /// `SHOW BUDGET` and `SET BUDGET`.
    Budget(BudgetReport),
    /// `SHOW HISTORY`.
    History(HistoryReport),
    /// `SET SEED`.
    SeedSet {
        /// The seed.
        seed: u64,
    },
    /// `SET DELTA`.
    DeltaSet {
        /// The delta.
        delta: f64,
    },
    /// `COUNT`.
    Count(Box<CountResult>),
    /// Noisy counts of a cube's cells or groups of cells, released at once.
    Histogram(Box<HistogramResult>),
    /// A noisy sum or mean of a clamped column.
    Sum(Box<SumResult>),
    /// A share or order statistic, with Laplace or data-dependent noise.
    Statistic(Box<StatisticResult>),
    /// A statistic of a cube dimension from the estimates of its bins.
    Binned(Box<BinnedResult>),
    /// `CHOOSE EPS`.
    ChooseEps(ChooseEpsResult),
    /// `CUBE` and `OBSERVE`: the teaching cube and its per-cell budget.
    Cube(CubeReport),
    /// `ESTIMATE`.
    Estimate(EstimateResult),
    /// `PROB`.
    Prob(ProbResult),
    /// `COUNT ... WITHIN w AT conf` answered from the history, spending nothing.
    Answered(AnsweredResult),
    /// `SIMULATE`.
    Simulate(SimulateResult),
    /// `OUT OF RANGE`.
    OutOfRange(OutOfRangeResult),
    /// `COMPARE NOISE`.
    CompareNoise(CompareNoiseResult),
    /// `COMPARE ACCOUNTING`.
    CompareAccounting(CompareAccountingResult),
    /// Laplace against data-dependent noise (the slides' second half).
    CompareSmooth(Box<CompareSmoothResult>),
    /// `EXPLAIN`.
    Explained(Explanation),
}

/// A count answered from the history because its credible interval already meets the
/// requirement (Xiao and Xiong 2012, section 5: utility-driven answering).
#[derive(Debug, Clone, PartialEq)]
pub struct AnsweredResult {
    /// The table.
    pub table: String,
    /// The statement, canonical.
    pub statement: String,
    /// The BLUE from the history.
    pub estimate: f64,
    /// Its variance.
    pub variance: f64,
    /// The confidence asked for.
    pub confidence: f64,
    /// The credible interval at that confidence.
    pub interval: (f64, f64),
    /// The 95% credible interval.
    pub credible95: (f64, f64),
    /// Which path was taken and why.
    pub explain: String,
    /// The table's spent budget (unchanged).
    pub budget_spent: Decimal,
    /// The table's remaining budget (unchanged).
    pub budget_remaining: Decimal,
}

/// The answer of a `WITHIN` release combined with the history by the BLUE (the release joins
/// the history, Xiao and Xiong, section 5).
#[derive(Debug, Clone, PartialEq)]
pub struct CombinedAnswer {
    /// The BLUE of the query from every recorded answer, this release included.
    pub estimate: f64,
    /// Its variance.
    pub variance: f64,
    /// The confidence asked for.
    pub confidence: f64,
    /// The certified central interval at that confidence: half-width at most the `WITHIN`.
    pub interval: (f64, f64),
    /// The certified central 95% interval.
    pub credible95: (f64, f64),
}

/// A cube: its cells, measurements and per-cell spending.
#[derive(Debug, Clone, PartialEq)]
pub struct CubeReport {
    /// The table, for a cube over data; `None` for the teaching cube.
    pub table: Option<String>,
    /// The declaration, for a cube over data.
    pub declaration: Option<String>,
    /// The cells in words (`x1`, `x2`, ... for the teaching cube).
    pub cell_names: Vec<String>,
    /// Number of cells.
    pub cells: usize,
    /// Number of measurements recorded.
    pub measurements: usize,
    /// Each cell's spent budget, `B = (alpha ./ S)' |H|` (Xiao and Xiong 2012, section 5.4).
    pub budgets: Vec<f64>,
    /// The cube's cost, `max(B)` (Theorem 5.5: disjoint cells compose in parallel).
    pub spent: f64,
    /// The measurements, when asked for (`SHOW CUBE`): rows of H, alpha, S, y.
    pub history: Option<Vec<MeasurementRow>>,
    /// The total budget.
    pub total: Decimal,
    /// How neighbouring tables differ.
    pub neighbours: Neighbours,
    /// Under `replace`: the costliest pair of cells.
    pub pair: Option<PairReport>,
    /// When declaring it changed the cube under releases: how they carried over, in words.
    pub carried: Option<String>,
}

/// One measurement of a cube's history: a row of `H`, its `alpha`, `S` and `y`.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasurementRow {
    /// Coefficients over the cells.
    pub row: Vec<f64>,
    /// The epsilon (`alpha`).
    pub eps: f64,
    /// The sensitivity (`S`, Lemma 2.1).
    pub sensitivity: f64,
    /// The noisy answer (`y`).
    pub noisy: f64,
}

/// The best linear unbiased estimate of a linear query from the history.
#[derive(Debug, Clone, PartialEq)]
pub struct EstimateResult {
    /// The query as written, canonical.
    pub text: String,
    /// The query's coefficients.
    pub query: Vec<f64>,
    /// `theta-hat = A y`.
    pub estimate: f64,
    /// Its variance, `2 Q (H' W H)^-1 Q'`.
    pub variance: f64,
    /// The 95% credible interval from the exact distribution of the estimate.
    pub credible95: (f64, f64),
    /// How the distribution was computed: "fft" or "monte carlo".
    pub method: String,
    /// A bound on the error of any probability the distribution gives.
    pub error_bound: f64,
}

/// A posterior probability about a linear query.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbResult {
    /// The query as written, canonical.
    pub text: String,
    /// The query's coefficients.
    pub query: Vec<f64>,
    /// The event, in words, e.g. "> 0".
    pub event: String,
    /// Its posterior probability, or the bound when `bound` is set.
    pub probability: f64,
    /// A bound on the absolute error of `probability` (for a bound, the bound itself).
    pub error_bound: f64,
    /// A bound on the relative error of `probability`; `None` for a bound.
    pub relative_error: Option<f64>,
    /// Set when `probability` is only a bound on the probability.
    pub bound: Option<Bound>,
}

/// Which side of a probability a reported bound lies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The probability is below the number reported.
    Upper,
    /// The probability is above the number reported.
    Lower,
}

/// Public facts of a table: name, file, schema, row count, budget.
#[derive(Debug, Clone, PartialEq)]
pub struct TableInfo {
    /// The table's name.
    pub name: String,
    /// The file it was loaded from, as written.
    pub path: String,
    /// The row count, when it is public (`NEIGHBOURS replace`).
    pub n: Option<u64>,
    /// Column names and types.
    pub columns: Vec<(String, ColumnType)>,
    /// Its budget.
    pub budget: Budget,
    /// Whether it is the current table.
    pub current: bool,
    /// Whether the file's content changed since its ledger last saw it (spending still counts;
    /// answers recorded for the old content are not reused).
    pub data_changed: bool,
    /// What loading had to report about the ledger (a torn line dropped, a mark remade).
    pub warnings: Vec<String>,
    /// How neighbouring tables differ.
    pub neighbours: Neighbours,
    /// The privacy unit its rows are bounded by, if any.
    pub unit: Option<crate::privacy::Unit>,
    /// How its budget composes: in epsilon (pure) or in rho (zCDP).
    pub accounting: crate::privacy::Accounting,
}

/// A privacy unit as the clause that declares it.
pub fn unit_clause(unit: &crate::privacy::Unit) -> String {
    let column = crate::ast::Ident {
        name: unit.column.clone(),
        span: crate::span::Span::default(),
    };
    // Over a table read with NO HEADER, the column is named by its position; the reading's
    // delimiter and decimal mark are said too, as LOAD writes them.
    let header = if unit.header { "" } else { "NO HEADER " };
    let reading = match unit.reading.as_str() {
        "" => String::new(),
        r => format!("{r} "),
    };
    format!(
        "{header}{reading}PRIVACY UNIT {column} MAX ROWS {}",
        unit.max_rows
    )
}

/// A table's privacy unit as a clause, or "no privacy unit".
pub fn unit_text(unit: Option<&crate::privacy::Unit>) -> String {
    unit.map_or_else(|| "no privacy unit".to_string(), unit_clause)
}

/// How a privacy unit of up to `k` rows scales a row's sensitivity, in words: empty for a
/// row (`k` = 1).
pub fn unit_words(k: u32) -> String {
    if k <= 1 {
        String::new()
    } else {
        format!("; a privacy unit adds or removes up to {k} rows, so {k} times a row's")
    }
}

/// A table's budget in three numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// The total epsilon.
    pub total: Decimal,
    /// The epsilon spent.
    pub spent: Decimal,
    /// `total - spent`.
    pub remaining: Decimal,
}

/// A table's budget: total, spent, remaining, and every spending.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetReport {
    /// How the budget composes: totals, spending and lines in epsilon, or in rho.
    pub accounting: crate::privacy::Accounting,
    /// Under zCDP, what is spent as (epsilon, delta) at the session's delta.
    pub equivalent: Option<(f64, f64)>,
    /// The table.
    pub table: String,
    /// The total epsilon.
    pub total: Decimal,
    /// The epsilon spent (sum of the releases' epsilons: sequential composition).
    pub spent: Decimal,
    /// `total - spent`.
    pub remaining: Decimal,
    /// The ledger file, when spending is persisted.
    pub ledger: Option<String>,
    /// One line per release.
    pub lines: Vec<SpendLine>,
    /// With a cube: each cell in words and its spent budget `B_j`.
    pub cells: Option<Vec<(String, Decimal)>>,
    /// How neighbouring tables differ.
    pub neighbours: Neighbours,
    /// The privacy unit, if rows are bounded per unit.
    pub unit: Option<crate::privacy::Unit>,
    /// Under `replace` with a cube: the costliest pair of cells.
    pub pair: Option<PairReport>,
    /// Whether a seeded release exposed the data (its budget is then used up for good).
    pub exposed: bool,
    /// On a served dataset, when its policy shows it: the budget all its analysts share (the
    /// lines above are the analyst's own).
    pub dataset: Option<Budget>,
}

/// The costliest pair of cells under `replace`: a row moving between them.
#[derive(Debug, Clone, PartialEq)]
pub struct PairReport {
    /// A cell of one side, in words.
    pub first: String,
    /// A cell of the other side, in words.
    pub second: String,
    /// What the history costs: the exchange's cost when exact, else an upper bound.
    pub cost: Decimal,
    /// Whether the cost is exact (else an upper bound: too many classes of cells for every
    /// pair to be kept, and the bounds do not meet).
    pub exact: bool,
    /// What the exchange of the pair named costs: `cost` when exact, else a lower bound of
    /// the history's cost.
    pub lower: Decimal,
    /// The part of the cost from answers released before the cube was declared: each may
    /// have counted any cells, so it charges every pair in full.
    pub before_cube: Decimal,
}

/// One spending of the budget.
#[derive(Debug, Clone, PartialEq)]
pub struct SpendLine {
    /// The release's number in the table's history, from 1.
    pub seq: u64,
    /// The statement that spent it, canonical.
    pub statement: String,
    /// The epsilon spent; a Gaussian release's rho.
    pub eps: Decimal,
    /// Its noise.
    pub mechanism: crate::privacy::Mechanism,
    /// What it costs the budget alone, in the budget's unit: its epsilon, or under zCDP its
    /// rho (`eps^2 / 2` for a pure release).
    pub cost: Decimal,
    /// When, as seconds since the Unix epoch.
    pub time: u64,
}

/// The releases of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryReport {
    /// The table.
    pub table: String,
    /// Every release, in order.
    pub releases: Vec<ReleaseRow>,
}

/// One release as shown: all of it is public (it was released).
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseRow {
    /// Its number, from 1.
    pub seq: u64,
    /// The statement, canonical.
    pub statement: String,
    /// The epsilon spent.
    pub eps: Decimal,
    /// The query's sensitivity.
    pub sensitivity: f64,
    /// Its row of `H` over the cube's cells, dense; `None` without a row.
    pub row: Option<Vec<f64>>,
    /// The noise.
    pub mechanism: String,
    /// The noisy answer released; `None` if the process stopped before it was recorded (the
    /// epsilon counts, and nothing was shown).
    pub noisy: Option<f64>,
    /// When, as seconds since the Unix epoch.
    pub time: u64,
}

/// One part of a histogram: a cell or a group of cells, its noisy count and interval.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramPart {
    /// The cell or group in words (`30 <= age < 65, sex = 'F'`).
    pub name: String,
    /// Its noisy count.
    pub noisy: f64,
    /// The interval that holds its true count with probability 0.95 over the noise (at least
    /// 0.95 for geometric noise).
    pub interval95: (f64, f64),
}

/// A histogram: every part's noisy count, released at once with one epsilon.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramResult {
    /// How the table's budget composes: `eps_spent`, `budget_spent` and `budget_remaining`
    /// are in epsilon, or in rho.
    pub accounting: crate::privacy::Accounting,
    /// A Gaussian vector's standard deviation on every part (its `eps` is its rho).
    pub sigma: Option<f64>,
    /// Under zCDP, the budget spent as (epsilon, delta) at the session's delta.
    pub equivalent: Option<(f64, f64)>,
    /// The table.
    pub table: String,
    /// The statement, canonical.
    pub statement: String,
    /// The parts, every cell or group (zeros included).
    pub parts: Vec<HistogramPart>,
    /// Whether the parts are groups of cells (`COUNT ... BY`) rather than cells.
    pub grouped: bool,
    /// The epsilon of the vector.
    pub eps: Decimal,
    /// What it spent now (0 when answered from the record).
    pub eps_spent: Decimal,
    /// Its L1 sensitivity under the table's model.
    pub sensitivity: f64,
    /// The noise scale of every part, `S / eps`.
    pub scale: f64,
    /// The noise.
    pub mechanism: String,
    /// The probability each interval holds its true count.
    pub coverage95: f64,
    /// How neighbouring tables differ.
    pub neighbours: Neighbours,
    /// The most rows of a privacy unit (1 without one).
    pub unit_rows: u32,
    /// Whether it is the recorded answer of an identical histogram.
    pub from_history: bool,
    /// The table's spending after it.
    pub budget_spent: Decimal,
    /// Its remaining budget.
    pub budget_remaining: Decimal,
    /// The chart written, if one was asked for.
    pub plot: Option<PlotOutcome>,
}

/// A median, quantile or mean of a cube's numeric dimension, bounded by its bins.
#[derive(Debug, Clone, PartialEq)]
pub struct BinnedResult {
    /// The table.
    pub table: String,
    /// The statement, canonical.
    pub statement: String,
    /// The dimension's column.
    pub column: String,
    /// The quantile's level (0.5 for the median); `None` for a mean.
    pub quantile: Option<f64>,
    /// For a quantile, the bin holding it.
    pub bin: Option<String>,
    /// The values the statistic lies between: the bin's (a quantile), or the mean's bounds.
    pub bounds: (f64, f64),
    /// Every bin: its name, estimated count and that estimate's variance.
    pub bins: Vec<(String, f64, f64)>,
    /// For a quantile, the probability that `bin` holds it, under the noise of the releases
    /// (the paper's flat prior; a share of `draws` Monte Carlo draws).
    pub probability: Option<f64>,
    /// For a quantile, each bin's probability of holding it, in the order of `bins`.
    pub holds: Option<Vec<f64>>,
    /// For a quantile, the fewest consecutive bins holding it with probability at least 0.95
    /// (in the draws), in order.
    pub bins95: Option<Vec<String>>,
    /// The values the statistic lies between with probability `coverage95`: those of the bins
    /// of `bins95` (a quantile), or the mean's interval.
    pub interval95: (f64, f64),
    /// That probability: attained in the draws for a quantile's bins (at least 0.95 unless
    /// draws with no count above 0 hold it nowhere); 0.95 for a mean's interval, a lower
    /// bound.
    pub coverage95: f64,
    /// The number of Monte Carlo draws behind the probabilities.
    pub draws: usize,
}

/// A noisy sum, or a mean from a noisy sum and count, of a column clamped to public bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct SumResult {
    /// How the table's budget composes: `eps_spent`, `budget_spent` and `budget_remaining`
    /// are in epsilon, or in rho.
    pub accounting: crate::privacy::Accounting,
    /// A Gaussian sum's standard deviation (its `eps` is its rho; a mean's sum part, at half
    /// the rho).
    pub sigma: Option<f64>,
    /// A Gaussian mean's count's standard deviation, at half the rho.
    pub count_sigma: Option<f64>,
    /// Under zCDP, the budget spent as (epsilon, delta) at the session's delta.
    pub equivalent: Option<(f64, f64)>,
    /// The table.
    pub table: String,
    /// The statement, canonical.
    pub statement: String,
    /// A mean rather than a sum.
    pub mean: bool,
    /// The column.
    pub column: String,
    /// The bounds the values were clamped to (whole numbers on an integer column).
    pub clamp: (f64, f64),
    /// The answer: the noisy sum, or the mean estimate (`None` when the noisy count is below
    /// one: no mean can be said).
    pub value: Option<f64>,
    /// The noisy sum.
    pub noisy_sum: f64,
    /// For a mean, the noisy count of the rows that contributed.
    pub noisy_count: Option<f64>,
    /// The interval holding the true value with probability `coverage95` at least.
    pub interval95: (f64, f64),
    /// Its probability.
    pub coverage95: f64,
    /// The statement's epsilon (its rho, Gaussian).
    pub eps: Decimal,
    /// What it spent now, in the table's unit (0 when answered from the record).
    pub eps_spent: Decimal,
    /// The sum's sensitivity under the table's model.
    pub sensitivity: f64,
    /// The sum's noise scale (Gaussian: its standard deviation).
    pub scale: f64,
    /// The noise.
    pub mechanism: String,
    /// How neighbouring tables differ.
    pub neighbours: Neighbours,
    /// The most rows of a privacy unit (1 without one).
    pub unit_rows: u32,
    /// Whether it is the recorded answer of an identical statement.
    pub from_history: bool,
    /// The table's spending after it.
    pub budget_spent: Decimal,
    /// Its remaining budget.
    pub budget_remaining: Decimal,
}

/// A noisy share or order statistic, and what public facts say of it.
#[derive(Debug, Clone, PartialEq)]
pub struct StatisticResult {
    /// The table.
    pub table: String,
    /// The statement, canonical.
    pub statement: String,
    /// `share`, `min`, `median` or `max`.
    pub kind: String,
    /// An order statistic's column.
    pub column: Option<String>,
    /// The range the statistic lies in: `[0, 1]` for a share, the clamp (on its grid) else.
    pub range: (f64, f64),
    /// The noisy answer.
    pub noisy: f64,
    /// The noisy answer brought into the range (post-processing).
    pub within_range: f64,
    /// The 95% interval, where public facts give one.
    pub interval95: Option<(f64, f64)>,
    /// The statement's epsilon.
    pub eps: Decimal,
    /// What it spent now (0 when answered from the record).
    pub eps_spent: Decimal,
    /// `laplace` or `smooth`.
    pub noise: String,
    /// The smooth noise's exponent.
    pub gamma: Option<f64>,
    /// The global sensitivity under the table's model (public).
    pub sensitivity: f64,
    /// The Laplace noise's scale; none for smooth noise (it would reveal the data).
    pub scale: Option<f64>,
    /// How neighbouring tables differ.
    pub neighbours: Neighbours,
    /// Whether it is the recorded answer of an identical statement.
    pub from_history: bool,
    /// The table's spending after it.
    pub budget_spent: Decimal,
    /// Its remaining budget.
    pub budget_remaining: Decimal,
    /// What is shown and why.
    pub note: String,
}

/// A noisy count and what can be said of it from public facts.
#[derive(Debug, Clone, PartialEq)]
pub struct CountResult {
    /// How the table's budget composes: `eps_spent`, `budget_spent` and `budget_remaining`
    /// are in epsilon, or in rho.
    pub accounting: crate::privacy::Accounting,
    /// A Gaussian release's standard deviation (its `eps` is its rho).
    pub sigma: Option<f64>,
    /// Under zCDP, the budget spent as (epsilon, delta) at the session's delta.
    pub equivalent: Option<(f64, f64)>,
    /// The table.
    pub table: String,
    /// The statement, canonical.
    pub statement: String,
    /// The noisy answer.
    pub noisy: f64,
    /// The epsilon of the release.
    pub eps: Decimal,
    /// The noise.
    pub mechanism: String,
    /// The noise scale `1/eps`.
    pub scale: f64,
    /// The spacing of the values the mechanism can release: `2^-k` for Laplace, 1 for geometric.
    pub grid: f64,
    /// The public row count.
    /// The size the prior and the out-of-range probability speak of: the public row count,
    /// or the size given with `PRIOR ... N`.
    pub size: Option<u64>,
    pub n: Option<u64>,
    /// How neighbouring tables differ.
    pub neighbours: Neighbours,
    /// `noisy +- ln(20)/eps` (Laplace): holds the true count with probability 0.95 over the
    /// noise; for geometric noise, `noisy +- m` with the smallest whole `m` holding at least 0.95.
    pub interval95: (f64, f64),
    /// The probability that `interval95` holds the true count: 0.95, or for geometric noise
    /// `1 - 2 a^(m+1) / (1 + a)`, `a = e^-eps`, at least 0.95.
    pub coverage95: f64,
    /// The prior fraction, when `PRIOR p=` was given.
    pub prior: Option<f64>,
    /// The Bayes posterior mean of the true count (Naldi and D'Acquisto 2014, eq. 11).
    pub bayes: Option<f64>,
    /// The 95% equal-tailed posterior credible interval.
    pub credible95: Option<(u64, u64)>,
    /// When the noisy answer is outside `[0, n]`: the largest probability, over true counts,
    /// of such an answer (paper 1, Theorem 1).
    pub out_of_range: Option<f64>,
    /// Whether the answer is the recorded one of an identical earlier query (nothing spent).
    pub from_history: bool,
    /// Epsilon spent by this statement (0 when from history).
    pub eps_spent: Decimal,
    /// The table's spent budget after this statement.
    pub budget_spent: Decimal,
    /// The table's remaining budget after this statement.
    pub budget_remaining: Decimal,
    /// The query's sensitivity `S` (1 for a count).
    pub sensitivity: f64,
    /// Whether it is a plain count (the Bayes estimate and the range `[0, n]` apply).
    pub plain: bool,
    /// Which path was taken and why, for `WITHIN` requirements.
    pub explain: Option<String>,
    /// Why a count was answered outside the table's cube (it was charged in full on every
    /// cell and pair), in words.
    pub outside_cube: Option<String>,
    /// For `WITHIN`: the epsilon a release alone would need (Xiao and Xiong 2012, Theorem 5.3).
    pub eps_alone: Option<Decimal>,
    /// For `WITHIN` with a history that estimates the query: the answer, the BLUE of this
    /// release and the history.
    pub combined: Option<CombinedAnswer>,
    /// The staircase's inner width `gamma` (a fraction of the sensitivity), for `MECHANISM staircase`.
    pub gamma: Option<f64>,
    /// The posterior's shape over the counts around its credible interval (masses of equal
    /// bins, for a sparkline), with a prior.
    pub posterior_shape: Option<PosteriorShape>,
    /// What the answer's reader should know: a prior the released answer contradicts.
    pub warnings: Vec<String>,
    /// The chart written by `PLOT`, or why it could not be.
    pub plot: Option<PlotOutcome>,
}

/// The posterior of a true count in equal bins of counts.
#[derive(Debug, Clone, PartialEq)]
pub struct PosteriorShape {
    /// The first count shown.
    pub from: u64,
    /// The last count shown.
    pub to: u64,
    /// Counts per bin (the last bin may hold fewer).
    pub size: u64,
    /// The mean posterior probability of the counts of each bin, left to right.
    pub masses: Vec<f64>,
}

/// A chart written, or the reason it was not.
#[derive(Debug, Clone, PartialEq)]
pub enum PlotOutcome {
    /// Written to this file.
    Written(String),
    /// Not written (the statement's answer stands).
    Failed(String),
}

/// The Monte Carlo comparison of the naive and Bayes estimators (paper 1, section 4).
#[derive(Debug, Clone, PartialEq)]
pub struct SimulateResult {
    /// One row per parameter point.
    pub rows: Vec<SimulateRow>,
    /// Whether the noise was given as standard deviations.
    pub std: bool,
    /// The chart written, if any.
    pub plot: Option<PlotOutcome>,
}

/// A Monte Carlo estimate with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// The estimate.
    pub value: f64,
    /// Lower end of the 95% Monte Carlo interval.
    pub lower: f64,
    /// Upper end.
    pub upper: f64,
}

/// One parameter point of a simulation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimulateRow {
    /// Database size.
    pub n: u64,
    /// Predicate probability.
    pub p: f64,
    /// Epsilon.
    pub eps: f64,
    /// The noise's standard deviation `sqrt(2)/eps`.
    pub std: f64,
    /// Runs.
    pub runs: u64,
    /// The naive estimator's average error, analytic: `1/eps` (paper 1, eq. 14).
    pub m_naive_exact: f64,
    /// The naive estimator's average error, by simulation.
    pub m_naive: Interval,
    /// The Bayes estimator's average error, by simulation.
    pub m_bayes: Interval,
    /// The probability that the Bayes estimate is closer to the true count (eq. 13).
    pub p_bayes_better: Interval,
}

/// The probability that a Laplace-noised count falls outside `[0, n]` (paper 1, eq. 2-6).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutOfRangeResult {
    /// Rows.
    pub n: u64,
    /// Epsilon.
    pub eps: f64,
    /// The true count asked about, and the probability there (eq. 2).
    pub at: Option<(u64, f64)>,
    /// The maximum over true counts, at 0 and n (Theorem 1, eq. 5).
    pub p_max: f64,
    /// The minimum over integer true counts, and where (eq. 4).
    pub p_min: f64,
    /// The true count where the minimum is reached, `floor(n/2)`.
    pub argmin: u64,
    /// The paper's eq. 6 for the minimum (exact for odd n).
    pub p_min_eq6: f64,
}

/// `COMPARE ACCOUNTING`: a workload of counts of one cell, each meeting an accuracy, charged
/// in pure epsilon and in zCDP.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareAccountingResult {
    /// The statement, canonical.
    pub statement: String,
    /// The half-width each count must meet.
    pub half_width: f64,
    /// With this probability.
    pub confidence: f64,
    /// The delta (epsilon, delta) is given at.
    pub delta: f64,
    /// The epsilon of one Laplace count meeting it (Naldi and D'Acquisto 2015, eq. 10).
    pub eps: f64,
    /// The rho of one Gaussian count meeting it: `z^2 / (2 w^2)`.
    pub rho: f64,
    /// One row per number of counts.
    pub rows: Vec<AccountingRow>,
    /// The fewest counts of those asked for which Gaussian zCDP costs less epsilon than pure
    /// accounting.
    pub crossover: Option<u64>,
    /// The chart, if asked.
    pub plot: Option<PlotOutcome>,
}

/// A workload of `k` counts under both accountings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccountingRow {
    /// The number of counts.
    pub k: u64,
    /// Pure DP, Laplace counts: `k eps`.
    pub pure_eps: f64,
    /// zCDP, Gaussian counts: `k rho`.
    pub gaussian_rho: f64,
    /// ... as (epsilon, delta).
    pub gaussian_eps: f64,
    /// zCDP, the same Laplace counts: `k eps^2 / 2`.
    pub laplace_rho: f64,
    /// ... as (epsilon, delta).
    pub laplace_eps: f64,
}

/// Laplace against optimal staircase noise at several epsilons.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareNoiseResult {
    /// One row per epsilon.
    pub rows: Vec<CompareNoiseRow>,
}

/// Laplace against optimal staircase noise at one epsilon.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompareNoiseRow {
    /// Epsilon.
    pub eps: f64,
    /// Sensitivity.
    pub sensitivity: f64,
    /// `2 d^2 / eps^2`.
    pub laplace_variance: f64,
    /// The least variance of a staircase (Geng and Viswanath).
    pub staircase_variance: f64,
    /// Its inner width, as a fraction of the sensitivity.
    pub gamma: f64,
    /// The 95% interval half-width of Laplace noise, `d ln(20) / eps`.
    pub laplace_half95: f64,
    /// The 95% interval half-width of the optimal staircase.
    pub staircase_half95: f64,
}

/// `COMPARE NOISE COUNT | SHARE | MIN | MEDIAN | MAX | QUERIES`.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareSmoothResult {
    /// What is compared: `count`, `share`, `max of values from U[0, 1]`, `2 queries`.
    pub function: String,
    /// One row per data set and epsilon.
    pub rows: Vec<CompareSmoothRow>,
    /// For `QUERIES`, one row per confidence level.
    pub regions: Vec<RegionRow>,
    /// The rule of thumb's gamma (least variance factor).
    pub rule_gamma: f64,
    /// How many times below the global sensitivity the smooth one must be to pay.
    pub rule_ratio: f64,
    /// Whether the simulated values were drawn from the session's seed.
    pub seeded: bool,
}

/// Laplace against data-dependent noise on one data set at one epsilon.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompareSmoothRow {
    /// The data set's size, where it has one.
    pub n: Option<u64>,
    /// The records with the property (a share).
    pub m: Option<u64>,
    /// Epsilon.
    pub eps: f64,
    /// The global sensitivity.
    pub sensitivity: f64,
    /// The smooth sensitivity at the variance's best gamma.
    pub smooth_sensitivity: f64,
    /// Laplace's 95% half-width.
    pub laplace_half95: f64,
    /// Laplace's variance.
    pub laplace_variance: f64,
    /// The gamma of least variance.
    pub gamma_variance: f64,
    /// That variance.
    pub smooth_variance: f64,
    /// The 95% half-width at that gamma.
    pub smooth_half95_at_gamma_variance: f64,
    /// The gamma of least 95% half-width.
    pub gamma_interval: f64,
    /// That half-width.
    pub smooth_half95: f64,
}

/// The size of the confidence region of several queries answered at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RegionRow {
    /// The confidence level.
    pub level: f64,
    /// Epsilon.
    pub eps: f64,
    /// The number of integer answers in Laplace's region (geometric noise of integer answers).
    pub laplace_lattice: f64,
    /// The area of Laplace's region.
    pub laplace_area: f64,
    /// The area of the staircase's region with no flat top.
    pub staircase_flat: f64,
    /// The least area of the staircase's region over its top.
    pub staircase_least: f64,
    /// That top, a multiple of the sensitivity box.
    pub top: f64,
}

/// What a statement would do (`EXPLAIN`), found without doing it.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// The statement explained, canonical.
    pub statement: String,
    /// The epsilon it would spend (0 if none).
    pub spends: Decimal,
    /// Whether it would draw noise.
    pub draws_noise: bool,
    /// The table's budget before and after: (spent, remaining) each, and the total.
    pub budget: Option<ExplainedBudget>,
    /// What it would do, step by step: a label and a sentence.
    pub steps: Vec<(String, String)>,
}

/// A budget before and after a statement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExplainedBudget {
    /// Spent before.
    pub spent_before: Decimal,
    /// Spent after.
    pub spent_after: Decimal,
    /// The total.
    pub total: Decimal,
}

/// The epsilon meeting an accuracy requirement (paper 2, eq. 10).
#[derive(Debug, Clone, PartialEq)]
pub struct ChooseEpsResult {
    /// The requirement.
    pub requirement: ChoosePlan,
    /// The epsilon.
    pub eps: f64,
    /// The absolute half-width the requirement asks for.
    pub half_width: f64,
    /// `CHOOSE RHO`: the rho of a Gaussian count meeting the requirement and its standard
    /// deviation (`eps` is then the Laplace count's, for comparison).
    pub gaussian: Option<(f64, f64)>,
}
