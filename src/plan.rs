//! Checked statements: names resolved to tables and column indices, parameters validated and typed.

use crate::cube::Cube;
use crate::data::Predicate;
pub use crate::privacy::{Accounting, Mechanism, Neighbours};
use crate::span::Span;
use crate::stats::noise::ExactEpsilon;
use crate::stats::{Epsilon, Positive, Probability};
use rust_decimal::Decimal;
use std::path::PathBuf;

/// A statement ready to run: nothing in it needs checking again.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Load a CSV file as a table and make it current.
    Load {
        /// The file (with `database`, the engine's connection string).
        path: PathBuf,
        /// `POSTGRES ... TABLE name` or `SPARK ... TABLE name`: the database table.
        database: Option<crate::ast::Database>,
        /// Where the path was written, for errors about the file.
        path_span: Span,
        /// Whether the first row names the columns (else they are `c1`, `c2`, ...).
        header: bool,
        /// The delimiter and decimal mark of a CSV file (`DELIMITER`, `DECIMAL`, or its
        /// name's default); the default for other sources.
        format: crate::data::CsvFormat,
        /// The neighbour model asked for, if any (`add_remove` with a unit).
        neighbours: Option<Neighbours>,
        /// The privacy unit asked for, if any.
        unit: Option<crate::privacy::Unit>,
        /// `COLUMNS (...)`: the declared schema (`None`: types are inferred from the data).
        columns: Option<Vec<crate::data::Declared>>,
        /// The table's name.
        name: String,
    },
    /// Make a loaded table current.
    Use {
        /// The table.
        table: String,
    },
    /// List the loaded tables.
    ShowTables,
    /// The budget of a table and its spending lines.
    ShowBudget {
        /// The table.
        table: String,
    },
    /// The releases recorded for a table.
    ShowHistory {
        /// The table.
        table: String,
    },
    /// Schema, `n` and budget of a table.
    Describe {
        /// The table.
        table: String,
    },
    /// Change the total budget of a table, and how it composes.
    SetBudget {
        /// The table.
        table: String,
        /// The new total, exact: epsilon, or rho.
        total: Decimal,
        /// How the budget composes.
        accounting: Accounting,
    },
    /// The delta at which a rho is also shown as (epsilon, delta).
    SetDelta {
        /// The delta, in (0, 1).
        delta: f64,
    },
    /// Seed the session's generator: reproducible, and no longer private.
    SetSeed {
        /// The seed.
        seed: u64,
    },
    /// A noisy count.
    Count(Box<CountPlan>),
    /// Noisy counts of a cube's cells or groups of cells, released at once.
    Histogram(Box<HistogramPlan>),
    /// A noisy sum or mean of a column, its values clamped to public bounds.
    Sum(Box<SumPlan>),
    /// A relative frequency or an order statistic, with Laplace or data-dependent noise.
    Statistic(Box<StatPlan>),
    /// Laplace against data-dependent noise, from formulas and simulated values.
    CompareSmooth(LabSmoothPlan),
    /// A statistic of a cube's numeric dimension from the history's estimates of its bins.
    Binned(Box<BinnedPlan>),
    /// Epsilon from an accuracy requirement.
    ChooseEps(ChoosePlan),
    /// The rho of a Gaussian count meeting an interval requirement (`CHOOSE RHO`).
    ChooseRho(ChoosePlan),
    /// A workload of counts charged in pure epsilon and in zCDP (`COMPARE ACCOUNTING`).
    CompareAccounting {
        /// The numbers of counts, in order.
        queries: Vec<u64>,
        /// The accuracy of each count.
        requirement: ChoosePlan,
        /// The chart, if asked.
        plot: Option<PlotPlan>,
        /// The statement, canonical (the chart's title).
        statement: String,
    },
    /// The focused cube's cells, history and per-cell budgets.
    ShowCube {
        /// Which cube.
        target: CubeRef,
    },
    /// Declare public cells over a table.
    CubeBy {
        /// The table.
        table: String,
        /// The cells.
        cube: Cube,
        /// The declaration, canonical (as the ledger records it).
        spec: String,
    },
    /// Declare anonymous cells for teaching.
    Cube {
        /// How many cells.
        cells: usize,
        /// How neighbouring tables differ.
        neighbours: Neighbours,
    },
    /// Record a released measurement given by hand.
    Observe {
        /// Its row over the teaching cube's cells, exact and sparse (no zero).
        row: Vec<(usize, Decimal)>,
        /// The noisy answer entered.
        value: f64,
        /// Its epsilon, exact.
        eps_exact: Decimal,
        /// The statement, canonical.
        statement: String,
    },
    /// The BLUE of a linear query from the history.
    Estimate {
        /// Which cube's history.
        target: CubeRef,
        /// Coefficients over the cells.
        query: Vec<f64>,
        /// What it measures in each cell: rows, or a column's clamped sum.
        measure: crate::privacy::Measure,
        /// The query as written, canonical.
        text: String,
    },
    /// A posterior probability of a linear query.
    Prob {
        /// Which cube's history.
        target: CubeRef,
        /// Coefficients over the cells.
        query: Vec<f64>,
        /// What it measures in each cell: rows, or a column's clamped sum.
        measure: crate::privacy::Measure,
        /// The query as written, canonical.
        text: String,
        /// The event.
        event: Event,
    },
    /// The Monte Carlo comparison of the naive and Bayes estimators.
    Simulate(SimulatePlan),
    /// The probability that a Laplace-noised count falls outside `[0, n]` (paper 1, eq. 2-6).
    OutOfRange {
        /// Rows.
        n: u64,
        /// The noise's epsilon (scale `1/eps`).
        eps: Epsilon,
        /// The true count asked about.
        at: Option<u64>,
    },
    /// Laplace against optimal staircase noise (Soria-Comas and Domingo-Ferrer).
    CompareNoise {
        /// The epsilons.
        eps: Vec<Epsilon>,
        /// The sensitivity.
        sensitivity: Positive,
    },
    /// What a statement would do, doing nothing.
    Explain {
        /// The statement's plan.
        plan: Box<Plan>,
        /// The statement, canonical.
        statement: String,
    },
}

/// The Monte Carlo comparison of the naive and Bayes estimators (paper 1, section 4).
#[derive(Debug, Clone, PartialEq)]
pub struct SimulatePlan {
    /// Database sizes.
    pub n: Vec<u64>,
    /// Predicate probabilities.
    pub p: Vec<Probability>,
    /// Epsilons (from `STD s` as `sqrt(2)/s`).
    pub eps: Vec<Epsilon>,
    /// The noise was given as standard deviations: the chart's x axis shows them.
    pub std: bool,
    /// Runs per point.
    pub runs: u64,
    /// The chart to write, if any.
    pub plot: Option<PlotPlan>,
}

impl SimulatePlan {
    /// The points, `n` outermost and epsilon innermost, as they are reported.
    pub fn points(&self) -> Vec<(u64, Probability, Epsilon)> {
        let mut points = Vec::with_capacity(self.n.len() * self.p.len() * self.eps.len());
        for &n in &self.n {
            for &p in &self.p {
                for &e in &self.eps {
                    points.push((n, p, e));
                }
            }
        }
        points
    }

    /// What the chart's x axis shows: the list with several values (p first, then the noise,
    /// then n), the noise when every list has one value.
    pub fn axis(&self) -> SimAxis {
        if self.p.len() > 1 {
            SimAxis::P
        } else if self.eps.len() == 1 && self.n.len() > 1 {
            SimAxis::N
        } else if self.std {
            SimAxis::Std
        } else {
            SimAxis::Eps
        }
    }
}

/// A chart to write.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotPlan {
    /// The file.
    pub path: PathBuf,
    /// Where its name was written.
    pub span: Span,
    /// Which metric (SIMULATE).
    pub metric: SimMetric,
}

/// The event of a posterior probability.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event {
    /// `theta > x`
    Greater(f64),
    /// `theta < x`
    Less(f64),
    /// `a < theta < b`
    Between(f64, f64),
}

/// The cube a statement speaks of: the session's teaching cube, or a table's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CubeRef {
    /// `CUBE n`: anonymous cells, measurements entered by hand.
    Teaching,
    /// `CUBE BY ...` over this table.
    Table(String),
}

/// A Binomial prior for the Bayes estimate of a count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PriorPlan {
    /// The prior fraction `p`.
    pub p: Probability,
    /// The public size given with `N`, when the table's row count is private.
    pub n: Option<u64>,
}

/// What a count may spend.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Spend {
    /// `WITH EPS e`.
    Eps(Eps),
    /// `WITHIN w AT conf`: from the history if it is precise enough, else the least epsilon
    /// that meets the requirement (Xiao and Xiong 2012, Theorem 5.3).
    Within {
        /// The half-width `w`.
        half_width: Positive,
        /// The confidence `1 - delta`.
        confidence: Probability,
    },
}

/// An epsilon in the three forms dpq uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Eps {
    /// For accuracy formulas.
    pub value: Epsilon,
    /// Exact, for the budget.
    pub exact: Decimal,
    /// As an exact fraction, for the noise.
    pub noise: ExactEpsilon,
}

/// A checked histogram: the counts of groups of a cube's cells (each cell a group, or with
/// `BY` the cells sharing the named dimensions' coordinates), released at once with one
/// noise each and one epsilon for all.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramPlan {
    /// The table.
    pub table: String,
    /// Each group: its name in words and its cells, disjoint.
    pub groups: Vec<(String, Vec<usize>)>,
    /// Whether the groups come from `BY` (else each is a cell).
    pub grouped: bool,
    /// The declaration of the cube the groups are over.
    pub cube: String,
    /// The epsilon of the whole vector.
    pub eps: Eps,
    /// The noise: Laplace or geometric.
    pub mechanism: Mechanism,
    /// `PLOT`: the bars to draw.
    pub plot: Option<PlotPlan>,
    /// The statement, canonical, as recorded.
    pub statement: String,
    /// What makes two histograms identical, but for epsilon and mechanism: the cells of
    /// every group.
    pub query_key: String,
}

/// A statistic of a numeric dimension, from its bins.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BinnedStatistic {
    /// The bin holding the `q`-quantile (0.5: the median).
    Quantile(f64),
    /// The bounds of the mean, the outer bins closed at `lo` and `hi`.
    Mean(f64, f64),
}

/// One bin of a dimension: its name, the values it holds (`lo` to `hi`, each end as the
/// cuts say), and its cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Bin {
    /// The bin in words (`30 <= age < 65`).
    pub name: String,
    /// The least value it holds (`-inf` for the first).
    pub lo: f64,
    /// The greatest value it holds, or its exclusive end on a float column (`inf` for the
    /// last).
    pub hi: f64,
    /// Its cells: every cell with this coordinate.
    pub cells: Vec<usize>,
}

/// A checked `ESTIMATE MEDIAN | QUANTILE q OF | MEAN ... CLAMP` of a cube dimension.
#[derive(Debug, Clone, PartialEq)]
pub struct BinnedPlan {
    /// The table.
    pub table: String,
    /// The dimension's column.
    pub column: String,
    /// The statistic.
    pub stat: BinnedStatistic,
    /// The bins, missing values left out.
    pub bins: Vec<Bin>,
    /// The statement, canonical.
    pub statement: String,
}

/// A checked `SUM` or `MEAN`: a column's values clamped to public bounds, over the rows a
/// condition selects.
#[derive(Debug, Clone, PartialEq)]
pub struct SumPlan {
    /// The table.
    pub table: String,
    /// `MEAN` rather than `SUM`.
    pub mean: bool,
    /// The column summed, and its name.
    pub column: usize,
    /// Its name.
    pub column_name: String,
    /// Whether the column holds integers (its values are whole, summed exactly).
    pub integer: bool,
    /// The clamp's bounds as written.
    pub clamp: (Decimal, Decimal),
    /// The rows summed; every row when absent.
    pub filter: Option<Predicate>,
    /// The epsilon of the statement (a mean spends half on the sum, half on the count).
    pub eps: Eps,
    /// The noise.
    pub mechanism: Mechanism,
    /// The sum's sensitivity under the table's model, from the bounds: `max(|lo|, |hi|)`
    /// when a row is added or removed, `max(hi, 0) - min(lo, 0)` when one is replaced; times
    /// the most rows of a privacy unit.
    pub sensitivity: Decimal,
    /// The sensitivity of a count of the table's rows: the most rows of a privacy unit (1
    /// without one).
    pub count_sensitivity: Decimal,
    /// The neighbour model it was computed under.
    pub neighbours: Neighbours,
    /// The statement, canonical, as recorded.
    pub statement: String,
    /// What makes two sums identical, but for epsilon and mechanism.
    pub query_key: String,
    /// Its row over the cells of the table's cube (1 on each cell its condition holds on),
    /// when the condition is a union of cells; empty otherwise, or without a cube.
    pub row: Vec<(usize, Decimal)>,
    /// The declaration of the cube the row is over.
    pub cube: Option<String>,
}

/// `COMPARE NOISE` of the data-dependent side, checked.
#[derive(Debug, Clone, PartialEq)]
pub enum LabSmoothPlan {
    /// The absolute frequency at each epsilon.
    Count {
        /// The epsilons.
        eps: Vec<Epsilon>,
    },
    /// The relative frequency at each `n`, fraction `m/n` and epsilon.
    Share {
        /// Data set sizes.
        n: Vec<u64>,
        /// Fractions with the property, in `[0, 1]`.
        m: Vec<f64>,
        /// The epsilons.
        eps: Vec<Epsilon>,
    },
    /// An order statistic of `n` values drawn from a law on [0, 1].
    Order {
        /// Which statistic.
        kind: crate::ast::StatKind,
        /// Data set sizes.
        n: Vec<u64>,
        /// `None` for U[0, 1]; `Some((a, b))` for Beta(a, b).
        beta: Option<(f64, f64)>,
        /// The epsilons.
        eps: Vec<Epsilon>,
    },
    /// The confidence regions of two queries answered at once.
    Queries {
        /// Their sensitivities.
        sensitivity: (f64, f64),
        /// The epsilon.
        eps: Epsilon,
        /// The confidence levels.
        at: Vec<Probability>,
    },
}

/// How a data-dependent statistic is noised.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StatNoise {
    /// Laplace noise scaled to the global sensitivity (the default).
    Laplace,
    /// Heavy-tailed noise scaled to the smooth sensitivity at the data.
    Smooth {
        /// The exponent of the noise's density `1 / (1 + |z|^gamma)`.
        gamma: f64,
    },
}

/// The column of an order statistic and its public range.
#[derive(Debug, Clone, PartialEq)]
pub struct StatColumn {
    /// The column's index.
    pub index: usize,
    /// Its name, as the table spells it.
    pub name: String,
    /// Whether it holds integers.
    pub integer: bool,
    /// The public range every value is clamped to, `lo < hi`.
    pub clamp: (Decimal, Decimal),
}

/// A checked `SHARE`, `MIN`, `MEDIAN` or `MAX`.
#[derive(Debug, Clone, PartialEq)]
pub struct StatPlan {
    /// The table.
    pub table: String,
    /// Which statistic.
    pub kind: crate::ast::StatKind,
    /// An order statistic's column; `None` for a share.
    pub column: Option<StatColumn>,
    /// A share's property, or the rows an order statistic is over (every row when absent).
    pub filter: Option<Predicate>,
    /// The epsilon.
    pub eps: Eps,
    /// The noise.
    pub noise: StatNoise,
    /// The table's neighbour model.
    pub neighbours: Neighbours,
    /// The row count when it is public (under `replace`).
    pub public_rows: Option<u64>,
    /// The statement, canonical, as recorded.
    pub statement: String,
    /// What makes two statements identical, but for epsilon and noise.
    pub query_key: String,
    /// The declaration of the table's cube, if any: the release is charged on every cell.
    pub cube: Option<String>,
}

/// A checked counting query: a count, or a linear combination of counts over a cube.
#[derive(Debug, Clone, PartialEq)]
pub struct CountPlan {
    /// The table.
    pub table: String,
    /// The counts and their exact coefficients; the true answer is `sum c_t count_t`.
    pub terms: Vec<(Decimal, Predicate)>,
    /// The query's row of `H` over the cells of the table's cube, sparse and exact; empty
    /// without a cube.
    pub row: Vec<(usize, Decimal)>,
    /// The declaration of the cube the row is over (or that a count outside it was checked
    /// against).
    pub cube: Option<String>,
    /// Why a plain count is answered outside the table's cube, in words: it has no row, and
    /// is charged in full on every cell (and pair).
    pub outside: Option<String>,
    /// `S`, the largest absolute coefficient over cells (Lemma 2.1); 1 for a plain count.
    pub sensitivity: Decimal,
    /// The neighbour model `S` was computed under.
    pub neighbours: Neighbours,
    /// What it may spend.
    pub spend: Spend,
    /// The Binomial prior, for the Bayes estimate.
    pub prior: Option<PriorPlan>,
    /// The noise.
    pub mechanism: Mechanism,
    /// `PLOT`: the posterior chart to write.
    pub plot: Option<PlotPlan>,
    /// The statement, canonical, as recorded in the history.
    pub statement: String,
    /// What makes two queries identical, but for epsilon and mechanism (the predicate, or the
    /// row over cells, cell by cell): a seeded release's noise derives from it.
    pub query_key: String,
    /// The same in the words a ledger records (a row's runs of cells as `a-b:c`): an identical
    /// query is answered from the history, free.
    pub release_key: String,
    /// The key the same count had before the cube was declared, if it is a plain count.
    pub plain_key: Option<String>,
    /// What the schema says of its conditions, shown with the answer: a condition every value
    /// meets counts the rows where its columns have a value.
    pub notes: Vec<String>,
}

impl CountPlan {
    /// The predicate of a plain count (one term, coefficient 1).
    pub fn single(&self) -> Option<&Predicate> {
        match self.terms.as_slice() {
            [(c, p)] if *c == Decimal::ONE => Some(p),
            _ => None,
        }
    }
}

/// A checked accuracy requirement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ChoosePlan {
    /// Within `fraction * count` of the true count with probability `confidence` (paper 2, eq. 7).
    Relative {
        /// The relative half-width (0.2 for 20%).
        fraction: Positive,
        /// The confidence level.
        confidence: Probability,
        /// The assumed count (never the true one).
        count: Positive,
    },
    /// Within `half_width` of the true count with probability `confidence`.
    Absolute {
        /// The absolute half-width.
        half_width: Positive,
        /// The confidence level.
        confidence: Probability,
    },
}

/// What the x axis of a simulation chart shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimAxis {
    /// The privacy level ε, drawn reversed (large ε on the left), log scale when the data
    /// span more than a factor 20.
    Eps,
    /// The noise standard deviation √2/ε, linear and increasing.
    Std,
    /// The predicate probability p, linear over [0, 1].
    P,
    /// The database size n, log scale.
    N,
}

/// Which metric(s) to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimMetric {
    /// Average absolute error: analytic naive 1/ε and Monte Carlo Bayes (Figures 1-5).
    Error,
    /// Probability that the Bayes estimate is closer than the naive one (Figures 6-8).
    Improvement,
    /// Both panels side by side in one SVG.
    Both,
}
