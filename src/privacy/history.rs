//! The record of a data file's releases and its budget: composed sequentially, or over a
//! declared cube of public cells, under the table's neighbour model, with every total kept up
//! to date as releases arrive so that no check grows with the length of the history.
//!
//! Under `add_remove` (neighbouring tables differ by one added or removed row; Xiao and Xiong's
//! model, their footnote 4) a linear query's sensitivity is `max_j |h_j|` and each cell
//! spends `B_j = sum_i (eps_i / S_i) |H_ij|` (their Theorem 5.5); the history costs its most
//! spent cell. Under `replace` (they differ by one replaced row, so the row count is public) a
//! row moves from one cell to another: the sensitivity is `max_{j,k} |h_j - h_k|` and the
//! history costs its costliest pair of cells (see [`super::pairs`]).

use super::decimal::AddUp;
use super::measure::Measure;
use super::pairs::{to_decimal, PairCosts, Rate, Worst};
use super::row::Row;
use super::{Accounting, Mechanism, Neighbours};
use rust_decimal::Decimal;
use std::collections::HashMap;

/// One released answer. Everything in it is public: it was shown.
///
/// A release is a row of the table's query history: with a declared cube its `row` holds
/// coefficients over cells (per-cell budgets); without one it is empty and the release stands
/// for its own query, charging every cell of a cube declared later.
#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    /// Its number in the history, from 1.
    pub seq: u64,
    /// The statement, canonical.
    pub statement: String,
    /// What makes a later query identical to this one.
    pub key: String,
    /// Sparse coefficients over cells, exact, as runs of cells; empty without a cube.
    pub row: Row,
    /// The epsilon spent, exact.
    pub eps: Decimal,
    /// The query's sensitivity.
    pub sensitivity: f64,
    /// The noise.
    pub mechanism: Mechanism,
    /// The noisy answer; `None` when the process stopped between recording the spending
    /// and the answer (the epsilon counts, and nothing was shown).
    pub noisy: Option<f64>,
    /// When, as seconds since the Unix epoch.
    pub time: u64,
    /// For one part of a vector released at once (`HISTOGRAM`, `COUNT ... BY`): its index
    /// and the number of parts. The vector spends its epsilon once; each part is a row of
    /// the history with the vector's sensitivity, so each is a measurement for inference.
    pub part: Option<(usize, usize)>,
    /// What its row measures in each cell: rows (a count), or a column's values (a sum).
    pub measure: Measure,
}

/// The cube declared on a data file, as its ledger records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CubeDecl {
    /// The declaration, canonical (`CUBE BY age (30, 65)`).
    pub spec: String,
    /// Its number of cells.
    pub cells: usize,
    /// Whether the table it was declared over read the file's first row as its header: the
    /// cube's column names name the same columns only for tables read the same way.
    pub header: bool,
    /// The clauses other than the default that table was read with (`DELIMITER ';'`,
    /// `DECIMAL ','`), empty for `,` and `.`: another reading has other rows, and other
    /// values in the same columns.
    pub reading: String,
}

/// How the releases made over a declared cube carry over to a new cube.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Carry {
    /// The new cube refines the old (`from`): each new cell lies in the old cell `parents[j]`,
    /// so every row is spread exactly over the new cells (a count over old cells is the same
    /// count over the new cells they hold), and costs and evidence carry over.
    Refine {
        /// The old cube's declaration.
        from: String,
        /// For each new cell, the old cell holding it.
        parents: Vec<usize>,
    },
    /// The new cube cuts across the old (`from`): every earlier release is charged in full,
    /// on every cell and pair, as a release made before any cube.
    Full {
        /// The old cube's declaration.
        from: String,
    },
}

/// A refinement the history took: the old and new declarations and the map between their
/// cells, which whoever reads the cubes over a table checks again (a ledger could claim a
/// map no declaration gives).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refinement {
    /// The old cube's declaration.
    pub from: String,
    /// The new cube's declaration.
    pub to: String,
    /// For each new cell, the old cell holding it.
    pub parents: Vec<usize>,
}

/// The largest bound on a privacy unit's rows.
pub const MAX_UNIT_ROWS: u32 = 1_000_000;

/// A privacy unit: the rows sharing a value of `column` are one unit's (a person's), and at
/// most `max_rows` of them are kept. Neighbouring tables differ by one unit's rows, added or
/// removed, so every sensitivity is `max_rows` times a row's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// The column naming the unit.
    pub column: String,
    /// The most rows of one unit kept (at least 1).
    pub max_rows: u32,
    /// Whether the table it bounds read the file's first row as its header: the column's name
    /// names the same column only for tables read the same way (`NO HEADER` names the fields
    /// `c1`, `c2`, ... by position, and a header may name another column `c1`).
    pub header: bool,
    /// The clauses other than the default that table was read with (`DELIMITER ';'`,
    /// `DECIMAL ','`), empty for `,` and `.`: another reading may group its rows into other
    /// units.
    pub reading: String,
}

/// Where a release would pass the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Where {
    /// The table as a whole (no cube).
    Table,
    /// A cell (`add_remove`, with a cube).
    Cell(usize),
    /// A pair of cells, one of each side (`replace`, with a cube).
    Pair(usize, usize),
    /// The data was exposed by a seeded release: its budget is used up for good.
    Exposed,
}

/// Why a release does not fit the budget: where, and the spending there after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overspend {
    /// Where the budget would be passed.
    pub at: Where,
    /// What would be spent there after the release.
    pub after: Decimal,
}

/// A data file's budget and the releases that spent it.
///
/// The spending is kept as running totals: the sum of every epsilon (sequential
/// composition), the sum of the epsilons of releases without a row (made before a cube was
/// declared, they may have counted any cell, and charge every cell and pair), and with a cube
/// each cell's charges (`add_remove`) or every pair's (`replace`). Budgets only grow, so
/// recording a release updates these in the time of its row, and checking one reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    total: Decimal,
    releases: Vec<Release>,
    cube: Option<CubeDecl>,
    neighbours: Neighbours,
    /// How the budget composes: in epsilon, or in rho (zCDP).
    accounting: Accounting,
    /// Whether a seeded release exposed the data (its answers are as good as true counts to
    /// whoever knows the seed): the budget is then used up for good.
    exposed: bool,
    /// Answered releases by key: the first answer of each identical query.
    answered: HashMap<String, usize>,
    /// Sum of all epsilons.
    sequential: Decimal,
    /// Sum of the epsilons of releases without a row.
    rowless: Decimal,
    /// Each cell's charges from releases with a row (`add_remove` with a cube).
    cells: Vec<Decimal>,
    /// The largest of `cells`.
    max_cell: Decimal,
    /// Every pair of cells' charges (`replace` with a cube).
    pairs: Option<PairCosts>,
    /// How many releases have a row.
    rows: usize,
    /// The refinements of the cube taken, in order.
    refinements: Vec<Refinement>,
    /// The privacy unit, if rows are bounded per unit (only under `add_remove`).
    unit: Option<Unit>,
}

/// What a release charges a cell: `eps |h_j| / S` (one term of `B = (alpha ./ S)' |H|`),
/// rounded up in the last decimal place when the division is not exact, so that spending is
/// never under-counted.
pub fn charge(eps: Decimal, coefficient: Decimal, sensitivity: Decimal) -> Option<Decimal> {
    // Exactly, on integers, then rounded up at the finest scale a decimal holds.
    super::decimal::share_up(eps, coefficient.abs(), sensitivity)
}

/// The sensitivity of a row: its largest absolute coefficient (Lemma 2.1); 1 for no row.
/// This is the sensitivity under `add_remove`; see [`sensitivity`].
pub fn row_sensitivity(row: &[(usize, Decimal)]) -> Decimal {
    row.iter()
        .map(|(_, c)| c.abs())
        .max()
        .unwrap_or(Decimal::ONE)
}

/// The sensitivity of a row over `cells` cells under a neighbour model: `max_j |h_j|` when a
/// row is added or removed (Lemma 2.1), `max_{j,k} |h_j - h_k|` when one is replaced (cells
/// the row leaves out have coefficient 0); 1 for no row (a count made before any cube). Zero
/// when the answer does not depend on the data under the model (the same coefficient on
/// every cell, under `replace`: a multiple of the public row count).
pub fn sensitivity(model: Neighbours, row: &[(usize, Decimal)], cells: usize) -> Decimal {
    if row.is_empty() {
        return Decimal::ONE;
    }
    match model {
        Neighbours::AddRemove => row_sensitivity(row),
        Neighbours::Replace => {
            let mut hi = row.iter().map(|(_, c)| *c).max().unwrap_or_default();
            let mut lo = row.iter().map(|(_, c)| *c).min().unwrap_or_default();
            if row.len() < cells {
                hi = hi.max(Decimal::ZERO);
                lo = lo.min(Decimal::ZERO);
            }
            // Past a decimal's range it saturates: the checker refuses such a query.
            hi.saturating_sub(lo)
        }
    }
}

/// The charges of a row at a rate, cell by cell, under `add_remove`: `eps |h_j| / S` each
/// (Theorem 5.5), or under zCDP `rho h_j^2 / S2^2`, computed once per run of cells sharing a
/// coefficient.
fn charges(rate: Rate, row: &Row) -> impl Iterator<Item = (usize, Decimal)> + '_ {
    row.runs().iter().flat_map(move |r| {
        let add = rate.decimal(r.coef);
        (r.start..r.end()).map(move |j| (j, add))
    })
}

/// `x^2`, exact or rounded up; `Decimal::MAX` past its range.
fn square_up(x: Decimal) -> Decimal {
    super::decimal::share_up(x.abs(), x.abs(), Decimal::ONE).unwrap_or(Decimal::MAX)
}

impl History {
    /// An empty history with a total budget, under a neighbour model.
    pub fn new(total: Decimal, neighbours: Neighbours) -> Self {
        Self {
            total,
            releases: Vec::new(),
            cube: None,
            neighbours,
            accounting: Accounting::Pure,
            exposed: false,
            answered: HashMap::new(),
            sequential: Decimal::ZERO,
            rowless: Decimal::ZERO,
            cells: Vec::new(),
            max_cell: Decimal::ZERO,
            pairs: None,
            rows: 0,
            unit: None,
            refinements: Vec::new(),
        }
    }

    /// The declared cube, if any.
    pub fn cube(&self) -> Option<&CubeDecl> {
        self.cube.as_ref()
    }

    /// How neighbouring tables differ.
    pub fn neighbours(&self) -> Neighbours {
        self.neighbours
    }

    /// How the budget composes: in epsilon, or in rho.
    pub fn accounting(&self) -> Accounting {
        self.accounting
    }

    /// Sets the accounting; the caller has checked that nothing was released yet.
    pub(super) fn set_accounting(&mut self, accounting: Accounting) {
        if self.accounting != accounting {
            self.accounting = accounting;
            self.reset_cells();
        }
    }

    /// What a release of `eps` (its rho for a Gaussian release) with `mechanism` costs the
    /// budget at most, in its unit: `eps` under pure accounting; under zCDP a Gaussian
    /// release's rho, and a pure release's `eps^2 / 2` rounded up (an eps-DP release is
    /// `eps^2 / 2`-zCDP: Bun and Steinke 2016, Proposition 1.4).
    pub fn price(&self, eps: Decimal, mechanism: Mechanism) -> Decimal {
        match (self.accounting, mechanism) {
            (Accounting::Pure, _) | (Accounting::Zcdp, Mechanism::Gaussian) => eps,
            (Accounting::Zcdp, _) => {
                super::decimal::share_up(eps, eps, Decimal::TWO).unwrap_or(Decimal::MAX)
            }
        }
    }

    /// The rate a release charges cells and pairs at: its price, over its sensitivity `s`
    /// (under zCDP over the squared L2 sensitivity: `l2_squared` for a Gaussian vector, whose
    /// L2 sensitivity is not its L1 one, else `s^2`).
    fn rate(
        &self,
        eps: Decimal,
        mechanism: Mechanism,
        s: Decimal,
        l2_squared: Option<Decimal>,
    ) -> Rate {
        let squared = self.accounting == Accounting::Zcdp;
        let s = match (squared, mechanism, l2_squared) {
            (false, _, _) => s,
            (true, Mechanism::Gaussian, Some(q)) => q,
            (true, _, _) => square_up(s),
        };
        Rate {
            amount: self.price(eps, mechanism),
            s,
            squared,
        }
    }

    /// The rate of a single row's release.
    fn row_rate(&self, eps: Decimal, mechanism: Mechanism, row: &Row) -> Rate {
        self.rate(eps, mechanism, self.sensitivity(row), None)
    }

    /// The rate of a vector's parts released at once with L1 sensitivity `s`.
    fn vector_rate(&self, eps: Decimal, mechanism: Mechanism, parts: &[Row], s: Decimal) -> Rate {
        let l2 = (mechanism == Mechanism::Gaussian).then(|| self.vector_l2_squared(parts));
        self.rate(eps, mechanism, s, l2)
    }

    /// The privacy unit, if rows are bounded per unit.
    pub fn unit(&self) -> Option<&Unit> {
        self.unit.as_ref()
    }

    /// The most rows one unit has: every sensitivity is this many times a row's (1 without a
    /// unit: a row is the unit).
    pub fn unit_rows(&self) -> Decimal {
        Decimal::from(self.unit.as_ref().map_or(1, |u| u.max_rows))
    }

    /// Sets the privacy unit; the caller has checked that nothing was released yet and that
    /// the model is `add_remove`.
    pub(super) fn set_unit(&mut self, unit: Option<Unit>) {
        if self.unit != unit {
            self.unit = unit;
            self.reset_cells();
        }
    }

    /// The rate a release charges cells at, under a unit of `k` rows: `k eps`. A unit's rows
    /// lie in up to `k` cells, so its loss is at most `k` times its costliest cell's
    /// `B_j = sum_i (eps_i/S_i) |H_ij|`; charging `k eps_i` makes each cell's total that bound.
    /// Under zCDP `k^2 rho`: the unit moves release `i` by `sum_r H_{i,j_r}` over its rows'
    /// cells, whose square is at most `k sum_r H_{i,j_r}^2` (Cauchy-Schwarz), so its cost is
    /// at most `k sum_r C_{j_r} <= k^2 max_j C_j`.
    fn cell_rate(&self, rate: Rate) -> Rate {
        if self.unit.is_none() {
            return rate;
        }
        let k = self.unit_rows();
        let k = if rate.squared { square_up(k) } else { k };
        Rate {
            amount: rate.amount.checked_mul(k).unwrap_or(Decimal::MAX),
            ..rate
        }
    }

    /// Whether a seeded release exposed the data.
    pub fn exposed(&self) -> bool {
        self.exposed
    }

    /// Declares the cube. The caller has checked that no release has a row over another cube,
    /// so every cell and pair starts with no charge of its own.
    pub(super) fn set_cube(&mut self, cube: CubeDecl) {
        if self.cube.as_ref() != Some(&cube) {
            self.cube = Some(cube);
            self.reset_cells();
        }
    }

    /// Declares a new cube over a history with releases over another: each earlier release's
    /// row spread over the new cells (a refinement), or charged in full. The caller has
    /// checked that `carry` starts from the declared cube and maps every new cell.
    pub(super) fn recube(&mut self, cube: CubeDecl, carry: &Carry) {
        let parents = match carry {
            Carry::Refine { from, parents } => {
                self.refinements.push(Refinement {
                    from: from.clone(),
                    to: cube.spec.clone(),
                    parents: parents.clone(),
                });
                Some(parents.as_slice())
            }
            Carry::Full { .. } => None,
        };
        let releases = std::mem::take(&mut self.releases);
        let old_cells = self.cube.as_ref().map_or(0, |c| c.cells);
        let new_cells = cube.cells;
        // Each old cell's new cells, by increasing cell: a row spreads in the time of its new
        // cells, not of the whole cube.
        let children = parents.map(|p| {
            let mut children = vec![Vec::new(); old_cells];
            for (j, &parent) in p.iter().enumerate() {
                if let Some(c) = children.get_mut(parent) {
                    c.push(j);
                }
            }
            children
        });
        self.cube = Some(cube);
        self.answered.clear();
        self.sequential = Decimal::ZERO;
        self.rowless = Decimal::ZERO;
        self.rows = 0;
        self.reset_cells();
        let spread = |row: &Row| match &children {
            Some(c) => row.spread(c),
            None => Row::default(),
        };
        // A key naming the old cells names another query over the new ones: a count's is
        // rewritten over its spread row (asked again, it is answered from the record), any
        // other's is retired, so that no answer is ever given for another query.
        let rekey = |release: &Release, row: &Row| -> String {
            let key = &release.key;
            if release.row.is_empty() || !key.contains(&format!("cells{old_cells}|")) {
                return key.clone();
            }
            let old = format!("|cells{old_cells}|{}|", release.row.key_text());
            match (key.matches(&old).count(), row.is_empty(), release.part) {
                (1, false, None) => {
                    key.replacen(&old, &format!("|cells{new_cells}|{}|", row.key_text()), 1)
                }
                _ => format!("{key}|carried"),
            }
        };
        let mut i = 0;
        while i < releases.len() {
            let first = &releases[i];
            match first.part {
                // A vector spends its epsilon once over all its parts.
                Some((0, n)) if n > 0 && i + n <= releases.len() => {
                    let price = self.price(first.eps, first.mechanism);
                    self.sequential = self.sequential.add_up(price);
                    let s = Decimal::try_from(first.sensitivity).unwrap_or(Decimal::MAX);
                    let spread_parts: Vec<Row> =
                        releases[i..i + n].iter().map(|p| spread(&p.row)).collect();
                    let rate = self.vector_rate(first.eps, first.mechanism, &spread_parts, s);
                    for (part, row) in releases[i..i + n].iter().zip(spread_parts) {
                        if row.is_empty() {
                            if part.part == Some((0, n)) {
                                self.rowless = self.rowless.add_up(price);
                            }
                        } else {
                            self.rows += 1;
                            self.charge_row(rate, &row);
                        }
                        self.push(Release {
                            key: rekey(part, &row),
                            row,
                            ..part.clone()
                        });
                    }
                    i += n;
                }
                _ => {
                    let row = spread(&first.row);
                    self.record(Release {
                        key: rekey(first, &row),
                        row,
                        ..first.clone()
                    });
                    i += 1;
                }
            }
        }
    }

    /// The refinements of the cube taken, in order.
    pub fn refinements(&self) -> &[Refinement] {
        &self.refinements
    }

    /// Sets the neighbour model; the caller has checked that nothing was released yet.
    pub(super) fn set_neighbours(&mut self, neighbours: Neighbours) {
        if self.neighbours != neighbours {
            self.neighbours = neighbours;
            self.reset_cells();
        }
    }

    /// Marks the data as exposed by a seeded release.
    pub(super) fn expose(&mut self) {
        self.exposed = true;
    }

    /// Clears the mark (in a practice copy, which records the seeded releases themselves).
    pub(super) fn unexpose(&mut self) {
        self.exposed = false;
    }

    fn reset_cells(&mut self) {
        let cells = self.cube.as_ref().map_or(0, |c| c.cells);
        self.cells = vec![Decimal::ZERO; cells];
        self.max_cell = Decimal::ZERO;
        let squared = self.accounting == Accounting::Zcdp;
        self.pairs = (self.cube.is_some() && self.neighbours == Neighbours::Replace)
            .then(|| PairCosts::new(cells, squared));
        debug_assert!(
            self.unit.is_none() || self.neighbours == Neighbours::AddRemove,
            "a privacy unit is only ever set under add_remove"
        );
    }

    /// The sensitivity of `row` on this history's cube and model (see [`sensitivity`]).
    pub fn sensitivity(&self, row: &Row) -> Decimal {
        self.row_sensitivity(row)
            .checked_mul(self.unit_rows())
            .unwrap_or(Decimal::MAX)
    }

    /// The sensitivity of `row` when one row is the unit.
    fn row_sensitivity(&self, row: &Row) -> Decimal {
        if row.is_empty() {
            return Decimal::ONE;
        }
        match self.neighbours {
            Neighbours::AddRemove => row
                .runs()
                .iter()
                .map(|r| r.coef.abs())
                .max()
                .unwrap_or(Decimal::ONE),
            Neighbours::Replace => {
                let (hi, lo) = row.extremes(self.cube.as_ref().map_or(0, |c| c.cells));
                hi.saturating_sub(lo)
            }
        }
    }

    /// How many releases have a row over the cube.
    pub fn rows_released(&self) -> usize {
        self.rows
    }

    /// Each cell's spent budget with a cube declared, exact: under `add_remove`
    /// `B = (alpha ./ S)' |H|` over the releases with a row; under `replace` each cell's cost
    /// against a cell no release touched (the same sum with the replace sensitivities); plus,
    /// on every cell, the epsilons of the releases without a row.
    pub fn cell_spent(&self) -> Option<Vec<Decimal>> {
        self.cube.as_ref()?;
        let base = match &self.pairs {
            Some(p) => p.cell_norms(),
            None => self.cells.clone(),
        };
        Some(base.into_iter().map(|c| c.add_up(self.rowless)).collect())
    }

    /// Under `replace` with a cube: the costliest pair of cells and its cost, with the
    /// releases made before the cube (each may have counted any cells, so it charges every
    /// pair, and every row moved within a cell, in full).
    pub fn worst_pair(&self) -> Option<Worst> {
        let w = self.pairs.as_ref()?.worst();
        Some(Worst {
            cost: w.cost.add_up(self.rowless),
            lower: w.lower.saturating_add(self.rowless),
            before_cube: self.rowless,
            ..w
        })
    }

    /// The total epsilon.
    pub fn total(&self) -> Decimal {
        self.total
    }

    /// The epsilon spent, exact: without a cube the sum of the releases' epsilons
    /// (sequential composition); with one the largest cell's spending (`add_remove`, Theorem
    /// 5.5: releases over disjoint cells compose in parallel) or the costliest pair's
    /// (`replace`).
    pub fn spent(&self) -> Decimal {
        match (&self.cube, &self.pairs) {
            (None, _) => self.sequential,
            (Some(_), Some(p)) => p.worst().cost.add_up(self.rowless),
            (Some(_), None) => self.max_cell.add_up(self.rowless),
        }
    }

    /// `total - spent`, never below nothing (an analyst's cap lowered by a new policy below
    /// what they spent); nothing once the data was exposed.
    pub fn remaining(&self) -> Decimal {
        if self.exposed {
            return Decimal::ZERO;
        }
        self.total.saturating_sub(self.spent()).max(Decimal::ZERO)
    }

    /// Whether a release of `eps` (its rho for a Gaussian release) with `mechanism` and `row`
    /// over the cube (or without a row) fits the budget; if not, where it would pass it.
    pub fn check_row(
        &self,
        eps: Decimal,
        mechanism: Mechanism,
        row: &Row,
    ) -> Result<(), Overspend> {
        if self.exposed {
            return Err(Overspend {
                at: Where::Exposed,
                after: self.total,
            });
        }
        // Spending after a release is at most what is spent plus the most it can add: when
        // that fits, so does the release, and nothing more need be looked at.
        let rate = self.row_rate(eps, mechanism, row);
        if self.spent().add_up(self.most_added(rate, row)) <= self.total {
            return Ok(());
        }
        let (after, _, at) = self.after_bounds_with(rate, row);
        if after <= self.total {
            Ok(())
        } else {
            Err(Overspend { at, after })
        }
    }

    /// Whether a release of `eps` with `row` would, for certain, take the spending past the
    /// total: its lower bound does. A ledger is read with this check (dpq checks the upper
    /// bound before it writes a spending, so a spending past the total was not written by it);
    /// the two agree wherever the cost is exact, and a ledger stays readable should its bounds
    /// ever be computed differently.
    pub fn exceeds_for_certain(&self, eps: Decimal, mechanism: Mechanism, row: &Row) -> bool {
        let rate = self.row_rate(eps, mechanism, row);
        if self.spent().add_up(self.most_added(rate, row)) <= self.total {
            return false;
        }
        self.after_bounds_with(rate, row).1 > self.total
    }

    /// The most a release at `rate` with `row` can add to the spending: its price without a
    /// cube or a row; with one, its largest charge to a cell (`add_remove`) or a pair
    /// (`replace`).
    fn most_added(&self, rate: Rate, row: &Row) -> Decimal {
        if self.cube.is_none() || row.is_empty() {
            return rate.amount;
        }
        match &self.pairs {
            Some(p) => p.most_added(&rate, row),
            None => {
                let hi = row.runs().iter().map(|r| r.coef.abs()).max();
                self.cell_rate(rate).decimal(hi.unwrap_or_default())
            }
        }
    }

    /// What [`History::spent`] would be after releasing `row` with `eps` and `mechanism` (not
    /// checked against the total).
    pub fn spent_after(&self, eps: Decimal, mechanism: Mechanism, row: &Row) -> Decimal {
        self.after(eps, mechanism, row).0
    }

    /// The spending after a release, and where it is largest (a cell, or a pair of cells).
    pub fn after(&self, eps: Decimal, mechanism: Mechanism, row: &Row) -> (Decimal, Where) {
        let (after, _, at) = self.after_bounds(eps, mechanism, row);
        (after, at)
    }

    /// Whether [`History::spent`] is exact (else an upper bound: see [`super::pairs`]).
    pub fn spent_is_exact(&self) -> bool {
        self.worst_pair().is_none_or(|w| w.exact)
    }

    /// The spending after a release (an upper bound where it is not exact), a lower bound of
    /// it (equal when exact), and where it is largest.
    pub fn after_bounds(
        &self,
        eps: Decimal,
        mechanism: Mechanism,
        row: &Row,
    ) -> (Decimal, Decimal, Where) {
        self.after_bounds_with(self.row_rate(eps, mechanism, row), row)
    }

    /// [`History::after_bounds`] for a release at `rate`.
    fn after_bounds_with(&self, rate: Rate, row: &Row) -> (Decimal, Decimal, Where) {
        let eps = rate.amount;
        let Some(_) = &self.cube else {
            let after = self.spent().add_up(eps);
            return (after, after, Where::Table);
        };
        if let Some(p) = &self.pairs {
            let (upper, lower, cells) = if row.is_empty() {
                let w = p.worst();
                (w.cost.add_up(eps), w.lower.saturating_add(eps), w.cells)
            } else {
                let a = p.after(&rate, row);
                (to_decimal(a.cost), to_decimal(a.lower), a.cells)
            };
            return (
                upper.add_up(self.rowless),
                lower.saturating_add(self.rowless),
                Where::Pair(cells.0, cells.1),
            );
        }
        if row.is_empty() {
            let after = self.max_cell.add_up(self.rowless).add_up(eps);
            return (after, after, Where::Cell(self.fullest_cell()));
        }
        let mut worst = (self.max_cell, self.fullest_cell());
        for (j, add) in charges(self.cell_rate(rate), row) {
            let cell = self
                .cells
                .get(j)
                .copied()
                .unwrap_or(Decimal::MAX)
                .add_up(add);
            if cell > worst.0 {
                worst = (cell, j);
            }
        }
        let after = worst.0.add_up(self.rowless);
        (after, after, Where::Cell(worst.1))
    }

    /// The first of the most charged cells.
    fn fullest_cell(&self) -> usize {
        self.cells
            .iter()
            .position(|c| *c == self.max_cell)
            .unwrap_or(0)
    }

    /// Sets the total; the caller has checked it is not below what is spent.
    pub(super) fn set_total(&mut self, total: Decimal) {
        self.total = total;
    }

    /// The answered release of an identical earlier query, if any.
    pub fn find(&self, key: &str) -> Option<&Release> {
        self.answered.get(key).map(|&i| &self.releases[i])
    }

    /// The release numbered `seq`.
    pub fn get(&self, seq: u64) -> Option<&Release> {
        let i = usize::try_from(seq.checked_sub(1)?).ok()?;
        self.releases.get(i)
    }

    /// Fills in the noisy answer of release `seq`; false if there is no such release.
    pub(super) fn set_noisy(&mut self, seq: u64, noisy: f64) -> bool {
        let Some(i) = seq
            .checked_sub(1)
            .and_then(|i| usize::try_from(i).ok())
            .filter(|i| *i < self.releases.len())
        else {
            return false;
        };
        let release = &mut self.releases[i];
        release.noisy = Some(noisy);
        self.answered.entry(release.key.clone()).or_insert(i);
        true
    }

    /// The releases, in order.
    pub fn releases(&self) -> &[Release] {
        &self.releases
    }

    /// The number the next release gets.
    pub fn next_seq(&self) -> u64 {
        self.releases.len() as u64 + 1
    }

    /// Records a release; the caller has checked the budget and its number.
    pub(super) fn record(&mut self, release: Release) {
        let price = self.price(release.eps, release.mechanism);
        self.sequential = self.sequential.add_up(price);
        if !release.row.is_empty() {
            self.rows += 1;
        }
        let charged = self.charged_row(&release.measure, &release.row);
        if charged.is_empty() {
            self.rowless = self.rowless.add_up(price);
        } else {
            let s = self.noise_sensitivity(&release, &charged);
            let rate = self.rate(release.eps, release.mechanism, s, None);
            self.charge_row(rate, &charged);
        }
        self.push(release);
    }

    /// The row a release of `measure` with `row` over the cube is charged with under this
    /// history's model (see [`Measure::charged_row`]); empty when it charges every cell and
    /// pair in full.
    pub fn charged_row(&self, measure: &Measure, row: &Row) -> Row {
        measure.charged_row(row, self.neighbours)
    }

    /// The sensitivity a release's charges are computed with. A count's is the one its noise
    /// was drawn with (its loss on a pair of cells is `eps |h_j - h_k| / S_noise`, whatever
    /// the model said when it was drawn), and never more than the row's sensitivity under the
    /// ledger's model: a release recorded by an earlier dpq, or made under a model since
    /// changed, is charged what it lost, never less. Any other measure's noise was drawn with
    /// exactly its charged row's sensitivity (its bounds' weight times the unit's rows; the
    /// model and the unit never change after a release), which its recorded floating-point
    /// sensitivity may miss in the last bit: the exact one is used.
    fn noise_sensitivity(&self, release: &Release, charged: &Row) -> Decimal {
        let model = self.sensitivity(charged);
        if release.measure != Measure::Rows {
            return model;
        }
        match Decimal::from_f64_retain(release.sensitivity) {
            Some(s) if s > Decimal::ZERO && s < model => s,
            _ => model,
        }
    }

    /// Charges a row at `rate` to the cells or pairs it touches.
    fn charge_row(&mut self, rate: Rate, row: &Row) {
        match &mut self.pairs {
            Some(p) => p.record(&rate, row),
            None => {
                let rate = self.cell_rate(rate);
                for (j, add) in charges(rate, row) {
                    if let Some(cell) = self.cells.get_mut(j) {
                        *cell = cell.add_up(add);
                        self.max_cell = self.max_cell.max(*cell);
                    }
                }
            }
        }
    }

    fn push(&mut self, release: Release) {
        if release.noisy.is_some() {
            self.answered
                .entry(release.key.clone())
                .or_insert(self.releases.len());
        }
        self.releases.push(release);
    }

    /// The sensitivity of a vector of disjoint parts (no cell in two parts; see
    /// [`History::disjoint`]), released at once with one noise per part: its L1 sensitivity on
    /// this history's cube and model. One row added or removed moves `sum_g |h_g(j)|`
    /// (`add_remove`): the largest coefficient of any part. One moved from cell `j` to `k`
    /// moves `sum_g |h_g(j) - h_g(k)|` (`replace`): for disjoint parts, the two largest
    /// coefficients of two different parts, a cell outside every part counting as a part of
    /// coefficient 0. Noise of scale `S/eps` on every part, each part charged
    /// `eps |h_g(j) - h_g(k)| / S` (or `eps |h_g(j)| / S`), makes the vector eps-DP and
    /// charges it exactly eps at its costliest pair.
    pub fn vector_sensitivity(&self, parts: &[Row]) -> Decimal {
        let (a, b) = self.vector_moves(parts);
        a.saturating_add(b)
    }

    /// The squared L2 sensitivity of a vector of disjoint parts, exact: what one row moves
    /// `sum_g (answer_g change)^2` by at most. Added or removed (`add_remove`), the largest
    /// coefficient of any part, squared, times the unit's rows squared (a unit's rows may
    /// all fall in one part); moved from one cell to another (`replace`), the squares of the
    /// two largest coefficients of two different parts, a cell outside every part counting as
    /// a part of coefficient 0: 2 for a histogram, whose noise then has `sigma^2 = 1 / rho`.
    pub fn vector_l2_squared(&self, parts: &[Row]) -> Decimal {
        let (a, b) = self.vector_moves(parts);
        square_up(a).add_up(square_up(b))
    }

    /// The most one neighbour moves two parts of a vector of disjoint parts by: under
    /// `add_remove` one part, by its largest coefficient times the unit's rows (a unit's rows
    /// may fall in one part or in many), and nothing else; under `replace` the two largest
    /// coefficients of two different parts, a cell outside every part counting as a part of
    /// coefficient 0.
    fn vector_moves(&self, parts: &[Row]) -> (Decimal, Decimal) {
        let cells = self.cube.as_ref().map_or(0, |c| c.cells);
        let mut largest: Vec<Decimal> = parts
            .iter()
            .map(|p| {
                p.runs()
                    .iter()
                    .map(|r| r.coef.abs())
                    .max()
                    .unwrap_or_default()
            })
            .collect();
        match self.neighbours {
            Neighbours::AddRemove => {
                let top = largest.into_iter().max().unwrap_or_default();
                let moved = top.checked_mul(self.unit_rows()).unwrap_or(Decimal::MAX);
                (moved, Decimal::ZERO)
            }
            Neighbours::Replace => {
                let covered: usize = parts.iter().map(Row::cells).sum();
                if covered < cells {
                    largest.push(Decimal::ZERO);
                }
                largest.sort_unstable_by(|a, b| b.cmp(a));
                match largest.as_slice() {
                    [a, b, ..] => (*a, *b),
                    _ => (Decimal::ZERO, Decimal::ZERO),
                }
            }
        }
    }

    /// The variance parameter of a Gaussian release's noise, `S2^2 / (2 rho)` exactly; `None`
    /// for any other release. A count's `S2` is its row's sensitivity on this history's cube,
    /// model and unit. A sum's (or a mean's count of rows with a value) is its measure's
    /// sensitivity under the model (see [`Measure::sensitivity`], the checker's) times the
    /// unit's rows: one number, whose L2 sensitivity is its L1 one.
    pub fn sigma2(&self, release: &Release) -> Option<(u128, u128)> {
        if release.mechanism != Mechanism::Gaussian {
            return None;
        }
        let s = match &release.measure {
            Measure::Rows => self.sensitivity(&release.row),
            measure => measure
                .sensitivity(self.neighbours)?
                .checked_mul(self.unit_rows())
                .unwrap_or(Decimal::MAX),
        };
        // A squared sensitivity past a decimal's range saturates: no variance is given for it
        // (the release is refused), rather than one built on the saturated value.
        let l2 = square_up(s);
        if l2 == Decimal::MAX {
            return None;
        }
        super::zcdp::gaussian_variance(l2, release.eps)
    }

    /// The variance parameter of the noise on each part of a Gaussian vector,
    /// `S2^2 / (2 rho)` with its squared L2 sensitivity; `None` for any other vector.
    pub fn vector_sigma2(&self, first: &Release, parts: &[Row]) -> Option<(u128, u128)> {
        if first.mechanism != Mechanism::Gaussian {
            return None;
        }
        let l2 = self.vector_l2_squared(parts);
        if l2 == Decimal::MAX {
            return None;
        }
        super::zcdp::gaussian_variance(l2, first.eps)
    }

    /// The variance parameter of each release's noise when it is Gaussian, as the ledger gave
    /// it (`None` for other releases): a part of a vector has its vector's, `S2^2 / (2 rho)`
    /// with the vector's squared L2 sensitivity ([`History::vector_sigma2`]), computed once
    /// per vector; a single release its own ([`History::sigma2`]).
    pub fn noise_variances(&self) -> Vec<Option<(u128, u128)>> {
        let mut out = Vec::with_capacity(self.releases.len());
        let mut k = 0;
        while k < self.releases.len() {
            let r = &self.releases[k];
            match r.part {
                Some((0, n)) if n > 0 && k + n <= self.releases.len() => {
                    let parts: Vec<Row> = self.releases[k..k + n]
                        .iter()
                        .map(|p| p.row.clone())
                        .collect();
                    let sigma2 = self.vector_sigma2(r, &parts);
                    out.extend(std::iter::repeat_n(sigma2, n));
                    k += n;
                }
                Some(_) => {
                    // A part whose vector is not whole here (never written by dpq).
                    out.push(None);
                    k += 1;
                }
                None => {
                    out.push(self.sigma2(r));
                    k += 1;
                }
            }
        }
        out
    }

    /// Whether `parts` are disjoint rows over this history's cube: every cell in one part at
    /// most, every cell within the cube.
    pub fn disjoint(&self, parts: &[Row]) -> bool {
        let cells = self.cube.as_ref().map_or(0, |c| c.cells);
        let mut seen = vec![false; cells];
        for part in parts {
            for r in part.runs() {
                for j in r.start..r.end() {
                    match seen.get_mut(j) {
                        Some(s) if !*s => *s = true,
                        _ => return false,
                    }
                }
            }
        }
        true
    }

    /// Whether releasing the parts of a vector with `eps` (its rho, Gaussian), `mechanism` and
    /// L1 sensitivity `s` fits the budget; if not, where it would pass it.
    pub fn check_vector(
        &self,
        eps: Decimal,
        mechanism: Mechanism,
        parts: &[Row],
        s: Decimal,
    ) -> Result<(), Overspend> {
        if self.exposed {
            return Err(Overspend {
                at: Where::Exposed,
                after: self.total,
            });
        }
        let (after, _, at) = self.vector_after_bounds(eps, mechanism, parts, s);
        if after <= self.total {
            Ok(())
        } else {
            Err(Overspend { at, after })
        }
    }

    /// What the spending would be after a vector's release (an upper bound where it is not
    /// exact), a lower bound of it, and where it is largest: its parts charged one after the
    /// other to a copy of the running totals.
    pub fn vector_after_bounds(
        &self,
        eps: Decimal,
        mechanism: Mechanism,
        parts: &[Row],
        s: Decimal,
    ) -> (Decimal, Decimal, Where) {
        let Some((last, first)) = parts.split_last() else {
            let spent = self.spent();
            return (spent, spent, Where::Table);
        };
        let rate = self.vector_rate(eps, mechanism, parts, s);
        let mut scratch = History {
            releases: Vec::new(),
            answered: HashMap::new(),
            ..self.clone_totals()
        };
        for part in first {
            scratch.charge_row(rate, part);
        }
        scratch.after_bounds_with(rate, last)
    }

    /// The running totals without the releases (a scratch copy to charge a vector to).
    fn clone_totals(&self) -> History {
        History {
            total: self.total,
            releases: Vec::new(),
            cube: self.cube.clone(),
            neighbours: self.neighbours,
            accounting: self.accounting,
            exposed: self.exposed,
            answered: HashMap::new(),
            sequential: self.sequential,
            rowless: self.rowless,
            cells: self.cells.clone(),
            max_cell: self.max_cell,
            pairs: self.pairs.clone(),
            rows: self.rows,
            unit: self.unit.clone(),
            refinements: Vec::new(),
        }
    }

    /// Records the parts of a vector released at once: each a release of its own, numbered
    /// from `first.seq`, with the vector's epsilon and sensitivity, keyed `key#i`; the epsilon
    /// is spent once. The caller has checked the budget and the numbers.
    pub(super) fn record_vector(&mut self, first: &Release, parts: &[Row]) {
        self.sequential = self
            .sequential
            .add_up(self.price(first.eps, first.mechanism));
        let s = Decimal::try_from(first.sensitivity).unwrap_or(Decimal::MAX);
        let rate = self.vector_rate(first.eps, first.mechanism, parts, s);
        let n = parts.len();
        self.rows += n;
        for (i, part) in parts.iter().enumerate() {
            self.charge_row(rate, part);
            self.push(Release {
                seq: first.seq + i as u64,
                key: format!("{}#{i}", first.key),
                row: part.clone(),
                part: Some((i, n)),
                noisy: None,
                ..first.clone()
            });
        }
    }

    /// The answers of an identical vector released before, part by part, if all are on
    /// record.
    pub fn find_vector(&self, key: &str, parts: usize) -> Option<Vec<f64>> {
        (0..parts)
            .map(|i| self.find(&format!("{key}#{i}")).and_then(|r| r.noisy))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal::prelude::ToPrimitive;

    const L: Mechanism = Mechanism::Laplace;
    use std::str::FromStr;

    fn release(seq: u64, eps: &str) -> Release {
        Release {
            seq,
            statement: String::new(),
            key: format!("k{seq}"),
            row: Row::default(),
            eps: Decimal::from_str(eps).expect("decimal"),
            sensitivity: 1.0,
            mechanism: Mechanism::Laplace,
            noisy: Some(0.0),
            time: 0,
            part: None,
            measure: Measure::Rows,
        }
    }

    fn cube(cells: usize, model: Neighbours) -> History {
        let mut h = History::new(Decimal::ONE, model);
        h.set_cube(CubeDecl {
            spec: "CUBE 6".into(),
            cells,
            header: true,
            reading: String::new(),
        });
        h
    }

    fn cells(list: &[usize]) -> Row {
        let cells: Vec<(usize, Decimal)> = list.iter().map(|&j| (j, Decimal::ONE)).collect();
        Row::from_cells(&cells).expect("increasing cells")
    }

    /// The cost of a history by brute force over every pair of cells (`replace`) or every
    /// cell (`add_remove`), from its releases' rows, epsilons and sensitivities.
    fn brute(h: &History, n: usize) -> f64 {
        let replace = h.neighbours() == Neighbours::Replace;
        let rows: Vec<(f64, f64, Vec<f64>)> = h
            .releases()
            .iter()
            .map(|r| {
                let mut dense = vec![0.0; n];
                for (j, c) in r.row.iter() {
                    dense[j] = c.to_f64().expect("a number");
                }
                (r.eps.to_f64().expect("eps"), r.sensitivity, dense)
            })
            .collect();
        let mut worst: f64 = 0.0;
        for j in 0..n {
            for k in 0..n {
                if replace == (j == k) {
                    continue;
                }
                let cost: f64 = rows
                    .iter()
                    .map(|(e, s, h)| {
                        // j == k: the row added or removed in cell j (`add_remove`).
                        let d = if j == k {
                            h[j].abs()
                        } else {
                            (h[j] - h[k]).abs()
                        };
                        e * d / s
                    })
                    .sum();
                worst = worst.max(cost);
            }
        }
        worst
    }

    /// A histogram spends its epsilon once, whatever its number of cells: under `add_remove`
    /// every cell is charged eps (a row is in one cell), under `replace` the costliest pair of
    /// cells is (a row moves from one cell to another, changing two parts by 1 each, with
    /// noise of scale 2/eps on every part). Checked against brute force.
    #[test]
    fn a_histogram_spends_its_epsilon_once_under_both_models() {
        for (model, s) in [(Neighbours::AddRemove, 1), (Neighbours::Replace, 2)] {
            let mut h = cube(6, model);
            let parts: Vec<Row> = (0..6).map(|j| cells(&[j])).collect();
            assert_eq!(h.vector_sensitivity(&parts), Decimal::from(s), "{model}");
            let half = Decimal::from_str("0.5").expect("decimal");
            h.check_vector(half, L, &parts, Decimal::from(s))
                .expect("half the budget fits");
            let first = Release {
                sensitivity: f64::from(s),
                ..release(1, "0.5")
            };
            h.record_vector(&first, &parts);
            assert_eq!(h.spent(), half, "{model}");
            assert_eq!(h.releases().len(), 6);
            assert_eq!(h.next_seq(), 7);
            assert!(
                (brute(&h, 6) - 0.5).abs() < 1e-12,
                "{model}: {}",
                brute(&h, 6)
            );
            // Three more halves do not fit; a fourth half would be 2.
            let over = h.check_vector(half.saturating_add(half), L, &parts, Decimal::from(s));
            assert!(over.is_err(), "{model}");
            // Under `replace` a count of one cell after it costs its own eps on top of the
            // pair it separates: 0.5 + 0.25.
            if model == Neighbours::Replace {
                let (after, _) =
                    h.after(Decimal::from_str("0.25").expect("decimal"), L, &cells(&[0]));
                assert_eq!(after, Decimal::from_str("0.75").expect("decimal"));
            }
        }
    }

    /// A histogram over some cells and a `COUNT ... BY` over groups of cells: their
    /// sensitivity under `replace` counts the cells outside every part, and their cost is the
    /// brute-force one.
    #[test]
    fn partial_histograms_and_groups_cost_what_brute_force_says() {
        let mut h = cube(6, Neighbours::Replace);
        let one = vec![cells(&[0, 1, 2])];
        assert_eq!(
            h.vector_sensitivity(&one),
            Decimal::ONE,
            "one group and the rest"
        );
        let all = vec![cells(&[0, 1, 2, 3, 4, 5])];
        assert_eq!(
            h.vector_sensitivity(&all),
            Decimal::ZERO,
            "the public row count"
        );
        let groups = vec![cells(&[0, 1]), cells(&[2, 3])];
        assert_eq!(h.vector_sensitivity(&groups), Decimal::from(2));
        assert!(h.disjoint(&groups));
        assert!(!h.disjoint(&[cells(&[0, 1]), cells(&[1, 2])]));
        let first = Release {
            sensitivity: 2.0,
            ..release(1, "0.4")
        };
        h.record_vector(&first, &groups);
        assert!((h.spent().to_f64().expect("f64") - brute(&h, 6)).abs() < 1e-12);
        assert!((brute(&h, 6) - 0.4).abs() < 1e-12);
        let mut a = cube(6, Neighbours::AddRemove);
        a.record_vector(
            &Release {
                sensitivity: 1.0,
                ..release(1, "0.4")
            },
            &groups,
        );
        assert_eq!(a.spent(), Decimal::from_str("0.4").expect("decimal"));
        assert!((brute(&a, 6) - 0.4).abs() < 1e-12);
    }

    #[test]
    fn ten_spends_of_a_tenth_fit_a_budget_of_one_exactly() {
        let mut h = History::new(Decimal::ONE, Neighbours::AddRemove);
        let tenth = Decimal::from_str("0.1").expect("decimal");
        for seq in 1..=10 {
            assert!(
                h.check_row(tenth, L, &Row::default()).is_ok(),
                "spend {seq} must fit"
            );
            h.record(release(seq, "0.1"));
        }
        assert_eq!(h.spent(), Decimal::ONE);
        assert_eq!(h.remaining(), Decimal::ZERO);
        assert_eq!(
            h.check_row(tenth, L, &Row::default()),
            Err(Overspend {
                at: Where::Table,
                after: dec("1.1")
            })
        );
    }

    /// Theorem 5.5: two counts over disjoint cells compose in parallel.
    #[test]
    fn disjoint_rows_compose_in_parallel() {
        let mut h = History::new(Decimal::ONE, Neighbours::AddRemove);
        h.set_cube(CubeDecl {
            spec: "CUBE BY x (1)".into(),
            cells: 3,
            header: true,
            reading: String::new(),
        });
        let tenth = Decimal::from_str("0.1").expect("decimal");
        for (seq, cell) in [(1, 0), (2, 1)] {
            let mut r = release(seq, "0.1");
            r.row = Row::from_cells(&[(cell, Decimal::ONE)]).expect("a row");
            r.sensitivity = h.sensitivity(&r.row).to_f64().expect("a number");
            assert!(h.check_row(tenth, L, &r.row).is_ok());
            h.record(r);
        }
        assert_eq!(h.spent(), tenth, "0.1 + 0.1 over disjoint cells costs 0.1");
        // 2*a - b: S = 2, so cell 0 is charged 0.1 and cell 1 0.05.
        let mut r = release(3, "0.1");
        r.row = Row::from_cells(&[(0, Decimal::TWO), (1, -Decimal::ONE)]).expect("a row");
        r.sensitivity = h.sensitivity(&r.row).to_f64().expect("a number");
        h.record(r);
        let b = h.cell_spent().expect("a cube");
        assert_eq!(b, vec![dec("0.2"), dec("0.15"), Decimal::ZERO]);
        // A release without a row charges every cell.
        h.record(release(4, "0.7"));
        assert_eq!(h.spent(), dec("0.9"));
        assert_eq!(h.check_row(tenth, L, &one(0)), Ok(()));
        assert_eq!(
            h.check_row(dec("0.2"), L, &one(0)),
            Err(Overspend {
                at: Where::Cell(0),
                after: dec("1.1")
            })
        );
        assert_eq!(h.spent_after(dec("0.05"), L, &one(2)), dec("0.9"));
        assert_eq!(h.spent_after(dec("0.05"), L, &one(0)), dec("0.95"));
        // An inexact charge is rounded up, never down.
        let third = charge(Decimal::ONE, Decimal::ONE, Decimal::from(3)).expect("a charge");
        assert!(third * Decimal::from(3) >= Decimal::ONE);
    }

    /// The running totals agree with the totals recomputed from every release.
    #[test]
    fn running_totals_equal_a_full_recount() {
        let mut h = History::new(Decimal::from(1000), Neighbours::AddRemove);
        h.set_cube(CubeDecl {
            spec: "c".into(),
            cells: 5,
            header: true,
            reading: String::new(),
        });
        let mut seq = 0;
        for i in 0..200u64 {
            seq += 1;
            let mut r = release(seq, if i % 3 == 0 { "0.3" } else { "0.07" });
            if i % 7 != 0 {
                let cells: Vec<(usize, Decimal)> = (0..5)
                    .filter(|j| (i + j) % 3 != 0)
                    .map(|j| (j as usize, Decimal::from((i % 4) as i64 + 1)))
                    .collect();
                r.row = Row::from_cells(&cells).expect("a row");
                r.sensitivity = h.sensitivity(&r.row).to_f64().expect("a number");
            }
            h.record(r);
        }
        let mut cells = [Decimal::ZERO; 5];
        let mut rowless = Decimal::ZERO;
        for r in h.releases() {
            if r.row.is_empty() {
                rowless += r.eps;
            }
            let rate = Rate {
                amount: r.eps,
                s: h.sensitivity(&r.row),
                squared: false,
            };
            for (j, add) in charges(rate, &r.row) {
                cells[j] += add;
            }
        }
        let full: Vec<Decimal> = cells.iter().map(|c| c + rowless).collect();
        assert_eq!(h.cell_spent().expect("a cube"), full);
        assert_eq!(h.spent(), full.iter().copied().max().expect("cells"));
    }

    #[test]
    fn identical_queries_are_found_by_key_once_answered() {
        let mut h = History::new(Decimal::ONE, Neighbours::AddRemove);
        let mut r = release(1, "0.1");
        r.noisy = None;
        h.record(r);
        assert!(h.find("k1").is_none(), "no answer was recorded yet");
        assert!(h.set_noisy(1, 4.5));
        assert_eq!(h.find("k1").and_then(|r| r.noisy), Some(4.5));
        assert!(!h.set_noisy(2, 1.0));
        assert!(!h.set_noisy(0, 1.0));
    }

    /// The zCDP cost of a history by brute force, from the definition: for every pair of
    /// cells (`replace`) or every cell (`add_remove`), the sum over releases of their cost for
    /// that neighbour, `(H_ij - H_ik)^2 / (2 sigma_i^2)` for a Gaussian release (its sigma from
    /// its rho and L2 sensitivity) and `(eps_i |H_ij - H_ik| / S_i)^2 / 2` for a pure one; a
    /// vector's parts each move by their own coefficient. Releases are given as
    /// `(gaussian, eps or rho, parts)`, a single release being a vector of one part.
    fn brute_zcdp(model: Neighbours, n: usize, history: &[(bool, f64, Vec<Vec<f64>>)]) -> f64 {
        let replace = model == Neighbours::Replace;
        // Each release's sensitivities (L1 and L2 squared) over its parts, from the move of a
        // row between any two cells (or of one added row).
        let moves = |j: usize, k: Option<usize>, parts: &[Vec<f64>]| -> Vec<f64> {
            parts
                .iter()
                .map(|h| h[j] - k.map_or(0.0, |k| h[k]))
                .collect()
        };
        let neighbours: Vec<(usize, Option<usize>)> = if replace {
            (0..n)
                .flat_map(|j| (0..n).filter(move |k| *k != j).map(move |k| (j, Some(k))))
                .collect()
        } else {
            (0..n).map(|j| (j, None)).collect()
        };
        let mut worst: f64 = 0.0;
        for &(j, k) in &neighbours {
            let mut cost = 0.0;
            for (gaussian, amount, parts) in history {
                let l1 = neighbours
                    .iter()
                    .map(|&(a, b)| moves(a, b, parts).iter().map(|d| d.abs()).sum::<f64>())
                    .fold(0.0, f64::max);
                let l2 = neighbours
                    .iter()
                    .map(|&(a, b)| moves(a, b, parts).iter().map(|d| d * d).sum::<f64>())
                    .fold(0.0, f64::max);
                let d = moves(j, k, parts);
                cost += if *gaussian {
                    let sigma2 = l2 / (2.0 * amount);
                    d.iter().map(|d| d * d / (2.0 * sigma2)).sum::<f64>()
                } else {
                    d.iter()
                        .map(|d| (amount * d.abs() / l1).powi(2) / 2.0)
                        .sum::<f64>()
                };
            }
            worst = worst.max(cost);
        }
        worst
    }

    /// Per-cell and pairwise zCDP costs equal brute force on random histories of Gaussian and
    /// pure releases, rows and vectors, under both models.
    #[test]
    fn zcdp_costs_equal_brute_force_on_random_histories() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(27);
        for round in 0..200 {
            let model = if round % 2 == 0 {
                Neighbours::Replace
            } else {
                Neighbours::AddRemove
            };
            let n = rng.random_range(2..7);
            let mut h = cube(n, model);
            h.set_accounting(Accounting::Zcdp);
            h.set_total(Decimal::from(1000));
            let mut plain: Vec<(bool, f64, Vec<Vec<f64>>)> = Vec::new();
            for seq in 1..=rng.random_range(1..8u64) {
                let gaussian = rng.random_bool(0.6);
                let amount = ["0.01", "0.1", "0.25", "1"][rng.random_range(0..4)];
                let mechanism = if gaussian {
                    Mechanism::Gaussian
                } else {
                    Mechanism::Laplace
                };
                let next = h.next_seq();
                if rng.random_bool(0.4) {
                    // A histogram over every cell: one part per cell.
                    let parts: Vec<Row> = (0..n).map(|j| cells(&[j])).collect();
                    let s = h.vector_sensitivity(&parts);
                    let first = Release {
                        seq: next,
                        mechanism,
                        sensitivity: s.to_f64().expect("a number"),
                        ..release(next, amount)
                    };
                    h.record_vector(&first, &parts);
                    let dense = (0..n)
                        .map(|j| (0..n).map(|c| if c == j { 1.0 } else { 0.0 }).collect())
                        .collect();
                    plain.push((gaussian, amount.parse().expect("f64"), dense));
                } else {
                    let dense: Vec<i64> = (0..n).map(|_| rng.random_range(-2i64..=2)).collect();
                    let cells: Vec<(usize, Decimal)> = dense
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| **c != 0)
                        .map(|(j, c)| (j, Decimal::from(*c)))
                        .collect();
                    let Some(row) = Row::from_cells(&cells).filter(|r| !r.is_empty()) else {
                        continue;
                    };
                    let s = h.sensitivity(&row);
                    if s.is_zero() {
                        continue;
                    }
                    let r = Release {
                        seq: next,
                        mechanism,
                        row,
                        sensitivity: s.to_f64().expect("a number"),
                        ..release(next, amount)
                    };
                    h.record(r);
                    let dense = dense.iter().map(|c| *c as f64).collect();
                    plain.push((gaussian, amount.parse().expect("f64"), vec![dense]));
                }
                let _ = seq;
            }
            let want = brute_zcdp(model, n, &plain);
            let got = h.spent().to_f64().expect("a number");
            assert!(
                (got - want).abs() <= 1e-9 * want.max(1.0),
                "round {round} ({model}): {got} against brute force {want}"
            );
        }
    }

    /// The workload: a hundred Gaussian counts of one cell with sigma^2 = 200 (rho
    /// 0.0025 each, the variance of a Laplace count at eps 0.1) charge rho 0.25, where a
    /// hundred Laplace counts at eps 0.1 charge epsilon 10; and a 10-cell histogram at rho r
    /// costs r once.
    #[test]
    fn a_hundred_gaussian_counts_charge_a_quarter_of_rho() {
        for model in [Neighbours::Replace, Neighbours::AddRemove] {
            let mut z = cube(10, model);
            z.set_accounting(Accounting::Zcdp);
            let mut pure = cube(10, model);
            pure.set_total(Decimal::from(100));
            for seq in 1..=100 {
                let row = one(3);
                let gaussian = Release {
                    mechanism: Mechanism::Gaussian,
                    row: row.clone(),
                    ..release(seq, "0.0025")
                };
                assert_eq!(z.sigma2(&gaussian), Some((200, 1)), "sigma^2 = 1/(2 rho)");
                z.check_row(gaussian.eps, Mechanism::Gaussian, &row)
                    .expect("fits");
                z.record(gaussian);
                pure.record(Release {
                    row,
                    ..release(seq, "0.1")
                });
            }
            assert_eq!(z.spent(), dec("0.25"), "{model}");
            assert_eq!(pure.spent(), dec("10"), "{model}");
            let eps = super::super::zcdp::epsilon(0.25, 1e-6);
            assert!((eps - 3.542291300477016).abs() < 1e-9, "{eps}");
            let simple = super::super::zcdp::epsilon_simple(0.25, 1e-6);
            assert!((simple - 3.97).abs() < 0.005, "{simple}");
            // A histogram over the ten cells at rho 0.01: rho 0.01, once.
            let mut h = cube(10, model);
            h.set_accounting(Accounting::Zcdp);
            let parts: Vec<Row> = (0..10).map(|j| cells(&[j])).collect();
            let s = h.vector_sensitivity(&parts);
            let first = Release {
                mechanism: Mechanism::Gaussian,
                sensitivity: s.to_f64().expect("a number"),
                ..release(1, "0.01")
            };
            let sigma2 = h.vector_sigma2(&first, &parts);
            h.record_vector(&first, &parts);
            assert_eq!(h.spent(), dec("0.01"), "{model}");
            let want = if model == Neighbours::Replace {
                (100, 1)
            } else {
                (50, 1)
            };
            assert_eq!(sigma2, Some(want), "{model}: S2^2 / (2 rho)");
        }
    }

    /// A Gaussian sum's variance is `S^2 / (2 rho)` with `S` its bounds' sensitivity under the
    /// model: `max(|lo|, |hi|)` added or removed, `max(hi, 0) - min(lo, 0)` replaced; a
    /// mean's count of rows with a value has `S = 1`; a unit of `k` rows scales `S` by `k`.
    /// A Gaussian sum at rho costs rho, on the table or on the cells it covers.
    #[test]
    fn a_gaussian_sum_has_the_variance_of_its_bounds_under_each_model() {
        let sum = |lo: &str, hi: &str| Measure::Sum {
            column: "income".into(),
            lo: dec(lo),
            hi: dec(hi),
        };
        let gaussian = |measure: Measure, rho: &str, row: Row| Release {
            mechanism: Mechanism::Gaussian,
            measure,
            row,
            ..release(1, rho)
        };
        let valued = Measure::Valued {
            column: "income".into(),
        };
        for (model, s2) in [
            (Neighbours::AddRemove, 250 * 250),
            (Neighbours::Replace, 260 * 260),
        ] {
            let mut h = History::new(Decimal::ONE, model);
            h.set_accounting(Accounting::Zcdp);
            // S^2 / (2 rho) = S^2 / 0.2 = 5 S^2.
            let r = gaussian(sum("-250", "10"), "0.1", Row::default());
            assert_eq!(h.sigma2(&r), Some((5 * s2, 1)), "{model}");
            let count = gaussian(valued.clone(), "0.1", Row::default());
            assert_eq!(h.sigma2(&count), Some((5, 1)), "{model}");
            // Exact fractions: 100^2 / (2 * 0.3) = 50000/3.
            let r = gaussian(sum("0", "100"), "0.3", Row::default());
            assert_eq!(h.sigma2(&r), Some((50000, 3)), "{model}");
            h.record(r);
            assert_eq!(h.spent(), dec("0.3"), "{model}");
            let laplace = Release {
                measure: sum("0", "100"),
                ..release(2, "0.3")
            };
            assert_eq!(
                h.sigma2(&laplace),
                None,
                "only Gaussian noise has a sigma^2"
            );
            // Bounds whose square passes a decimal's range give no variance.
            let huge = gaussian(sum("0", "1e20"), "0.1", Row::default());
            assert_eq!(h.sigma2(&huge), None, "{model}");
        }
        // Over a cube under add_remove the sum costs rho on each cell it covers, once.
        let mut c = cube(4, Neighbours::AddRemove);
        c.set_accounting(Accounting::Zcdp);
        c.record(gaussian(sum("-250", "10"), "0.1", cells(&[1, 2])));
        c.record(gaussian(valued, "0.1", cells(&[1, 2])));
        assert_eq!(c.spent(), dec("0.2"));
        assert_eq!(
            c.cell_spent(),
            Some(vec![Decimal::ZERO, dec("0.2"), dec("0.2"), Decimal::ZERO])
        );
        // A unit of 3 rows: S = 3 * 250.
        let mut u = History::new(Decimal::ONE, Neighbours::AddRemove);
        u.set_accounting(Accounting::Zcdp);
        u.set_unit(Some(Unit {
            column: "person".into(),
            max_rows: 3,
            header: true,
            reading: String::new(),
        }));
        let r = gaussian(sum("-250", "10"), "0.1", Row::default());
        assert_eq!(u.sigma2(&r), Some((5 * 750 * 750, 1)));
    }

    fn one(cell: usize) -> Row {
        Row::from_cells(&[(cell, Decimal::ONE)]).expect("a row")
    }

    fn dec(s: &str) -> Decimal {
        Decimal::from_str(s).expect("decimal")
    }
}
