//! The cost of a history when neighbouring tables differ by one *replaced* row: the largest,
//! over pairs of cells `(j, k)`, of `sum_i (eps_i / S_i) |H_ij - H_ik|`, kept up to date
//! release by release.
//!
//! Replacing one row moves one unit of count from a cell `j` to a cell `k`: release `i`'s
//! answer moves by `H_ik - H_ij`, at a privacy loss of `(eps_i / S_i) |H_ij - H_ik|` for its
//! Laplace noise of scale `S_i / eps_i`, and losses add over releases (sequential
//! composition); the history costs its worst pair. The cost of a pair is a weighted L1
//! distance between two columns of `H`, `d(j, k)`, so it obeys the triangle inequality.
//!
//! Cells whose columns of `H` are identical are interchangeable: they form one class, and only
//! pairs of classes matter. Each release refines the classes (cells it gives different
//! coefficients are split apart) and adds to the cost of every pair of classes it gives
//! different coefficients. Up to a cap ([`EXACT_CLASSES`]) the cost of every pair is kept, so
//! the largest is exact; the work per release is the number of pairs it changes. The exact
//! largest over many classes is as hard as the largest L1 distance among many vectors, for
//! which no method much faster than trying every pair is known. Beyond the cap the cost is
//! bounded from both sides, never under-counted, and exact whenever the bounds meet:
//!
//! - below, by real pairs: the distances from a few anchor cells (the costliest pair when the
//!   pairs stopped being kept, then the cells farthest from those) to every cell, kept per
//!   cell; an anchor's farthest cell is a pair that costs that much;
//! - above, by the least of: the sum over releases of the most each can cost a pair,
//!   `charge(eps_i, max_j H_ij - min_k H_ik, S_i) <= eps_i` (a release's replace sensitivity is
//!   that spread: basic sequential composition, Dwork and Roth, Theorem 3.16); the upper
//!   bound before the release plus that most (from the exact cost when pairs stopped being
//!   kept); and for every anchor `a` (and the column of a cell no release touched, whose
//!   distances are the cells' norms) the sum of the two largest distances from it, since
//!   `d(j, k) <= d(j, a) + d(a, k)`.
//!
//! The distances from an anchor change by one amount over each run of a release's row, so a
//! release costs the bounds `O(runs log cells)` per anchor. Costs are kept as whole multiples
//! of 10^-24 epsilon, each charge rounded up.

use super::row::Row;
use super::toptwo::{Top, TopTwo};
use rust_decimal::prelude::FromPrimitive;
use rust_decimal::Decimal;
use std::cell::RefCell;

/// The most classes of cells whose pairwise costs are kept exactly. A release costs the pairs
/// up to `classes^2 / 2` additions, and a `LOAD` replays every release: with counts that each
/// split a class, reaching `c` classes costs about `c^3 / 18` additions (0.06 billion at 1024,
/// half a billion at 2048, seconds of a `LOAD`). Beyond, the bounds take over, and are exact
/// for histories whose costliest pair keeps growing (as counts over ranges of an ordered
/// dimension do).
pub const EXACT_CLASSES: usize = 1024;

/// How many anchor cells bound the cost beyond [`EXACT_CLASSES`].
const ANCHORS: usize = 4;

/// Units of epsilon per [`Cost`] step: costs are multiples of 10^-24.
const SCALE: u32 = 24;

/// A cost in units of 10^-24 epsilon.
pub type Cost = u128;

/// The cost of a history under the replace model, pair by pair of cell classes.
#[derive(Debug, Clone, PartialEq)]
pub struct PairCosts {
    /// How many cells the cube has.
    cells: usize,
    /// The most classes whose pairs are kept.
    cap: usize,
    /// Each cell's cost against a cell no release touched, `sum_i (eps_i/S_i) |H_ij|`: its
    /// distance from the zero column.
    norms: TopTwo,
    /// The sum over releases of the most each costs a pair.
    sequential: Cost,
    /// Whether costs are zCDP's squares (see [`Rate`]).
    squared: bool,
    /// Every pair kept, or bounds.
    mode: Mode,
    /// The last release looked at and its cost: the budget is checked before a release and
    /// again as it is recorded, under one lock.
    memo: RefCell<Option<(Memo, After)>>,
}

/// A release looked at: its rate and row.
type Memo = (Rate, Row);

#[derive(Debug, Clone, PartialEq)]
enum Mode {
    /// Up to the cap: every pair of classes.
    Exact(Exact),
    /// Beyond it: bounds from anchors.
    Bounded(Bounded),
}

/// Every pair of classes and its cost.
#[derive(Debug, Clone, PartialEq)]
struct Exact {
    /// The class of each cell.
    class_of: Vec<u32>,
    /// The cells of each class, in increasing order.
    members: Vec<Vec<u32>>,
    /// The cost of each pair of classes `(a, b)`, `a > b`, at `a (a - 1) / 2 + b`.
    pair: Vec<Cost>,
    /// The costliest pair of classes and its cost.
    worst: (Cost, u32, u32),
}

/// Bounds on the cost once the pairs are no longer kept.
#[derive(Debug, Clone, PartialEq)]
struct Bounded {
    /// Anchor cells and their distances to every cell.
    anchors: Vec<Anchor>,
    /// The upper bound so far: the exact cost when the pairs stopped being kept, then after
    /// each release the least of this plus the most the release costs a pair and the bounds
    /// below. So it never grows by more than a release can cost, as the cost itself.
    upper: Cost,
}

/// A cell and its distance (pair cost) to every cell.
#[derive(Debug, Clone, PartialEq)]
struct Anchor {
    cell: usize,
    distance: TopTwo,
}

/// Where the largest cost lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Worst {
    /// The cost: exact, or (beyond the cap, when the bounds do not meet) an upper bound.
    pub cost: Decimal,
    /// Two distinct cells (when the cube has two): the costliest pair when the cost is exact,
    /// else the costliest pair known.
    pub cells: (usize, usize),
    /// What the pair named costs: `cost` when exact, else a lower bound of the history's
    /// cost.
    pub lower: Decimal,
    /// Whether `cost` is exact.
    pub exact: bool,
    /// The part of `cost` that comes from answers released before the cube was declared
    /// (each charges every pair of cells in full); zero here, set by the history.
    pub before_cube: Decimal,
}

/// The cost after a release, and the costliest pair known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct After {
    /// The cost, in units of 10^-24 epsilon: exact, or an upper bound.
    pub cost: Cost,
    /// What the pair named costs: a lower bound of the cost (`cost` itself when exact).
    pub lower: Cost,
    /// A cell of each side of the costliest pair known.
    pub cells: (usize, usize),
}

/// The charge of one release to a pair whose coefficients differ by `diff`:
/// `eps |diff| / S`, rounded up to a whole unit.
fn charge(eps: Decimal, diff: Decimal, s: Decimal) -> Cost {
    if diff.is_zero() || s.is_zero() {
        return 0;
    }
    // eps |diff| / S in units of 10^-24, exactly as a rational: num / den, rounded up.
    let Some(num) = eps.abs().checked_mul(diff.abs()) else {
        // Past a decimal's range: the most a charge can be (the release is refused).
        return Cost::MAX;
    };
    let (m, e) = (num.mantissa().unsigned_abs(), num.scale());
    let (sm, se) = (s.abs().mantissa().unsigned_abs(), s.scale());
    // value = m 10^-e / (sm 10^-se) = m 10^(se - e) / sm; in units: m 10^(24 + se - e) / sm.
    let exp = i64::from(SCALE) + i64::from(se) - i64::from(e);
    if sm == 0 {
        return Cost::MAX;
    }
    if exp < 0 {
        // m / (sm 10^-exp): a denominator past u128 is above m (at most 2^96), so the charge
        // is a fraction of a unit, rounded up to one.
        return 10u128
            .checked_pow(u32::try_from(-exp).unwrap_or(u32::MAX))
            .and_then(|p| sm.checked_mul(p))
            .map_or(1, |d| m.div_ceil(d));
    }
    let p = 10u128.checked_pow(u32::try_from(exp).unwrap_or(u32::MAX));
    if let Some(n) = p.and_then(|p| m.checked_mul(p)) {
        return n.div_ceil(sm);
    }
    // m 10^exp / sm by long division, one decimal digit at a time: the remainder stays below
    // sm (at most 2^96), so only a quotient past u128 saturates, never an intermediate.
    let (mut q, mut r) = (m / sm, m % sm);
    for _ in 0..exp {
        let Some(next) = q.checked_mul(10).and_then(|q| q.checked_add(r * 10 / sm)) else {
            return Cost::MAX;
        };
        q = next;
        r = r * 10 % sm;
    }
    if r > 0 {
        q = q.saturating_add(1);
    }
    q
}

/// The most a release costs any pair: its charge at the spread of its coefficients over
/// `cells` cells (cells it leaves out count as 0). No pair's coefficients differ by more, and
/// a charge grows with the difference; under `replace` the spread is `S`, so this is `eps`
/// (or `rho`).
fn most(rate: &Rate, row: &Row, cells: usize) -> Cost {
    let (hi, lo) = row.extremes(cells);
    rate.cost(hi.saturating_sub(lo))
}

/// How one release charges a pair of cells (or a cell) whose coefficients differ by `d`.
///
/// Under pure accounting, `eps |d| / S`: the privacy loss of Laplace-like noise of scale
/// `S / eps` when the answer moves by `|d|`. Under zCDP (`squared`), `rate d^2 / s` with `s`
/// the square of the release's L2 sensitivity: a Gaussian release of standard deviation
/// `sigma = S2 / sqrt(2 rho)` costs `d^2 / (2 sigma^2) = rho d^2 / S2^2` for that move, and a
/// pure release of epsilon, whose loss for the move is `eps |d| / S`, costs the square of it
/// over 2, `(eps^2 / 2) d^2 / S^2` (Bun and Steinke 2016, Proposition 3.3, for the pair).
/// Both are additive over releases for a fixed pair, and the square root of their sum is a
/// weighted Euclidean distance between two columns of `H`: it obeys the triangle inequality,
/// as the pure cost does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// `eps`, or (zCDP) the release's rho: its own for a Gaussian release, `eps^2 / 2` for a
    /// pure one.
    pub amount: Decimal,
    /// The sensitivity `S` it is divided by, or (zCDP) the squared L2 sensitivity `S2^2`.
    pub s: Decimal,
    /// Whether charges are squared (zCDP).
    pub squared: bool,
}

impl Rate {
    /// The charge for a difference of coefficients `d`, in units of 10^-24, rounded up.
    pub fn cost(&self, d: Decimal) -> Cost {
        if self.squared {
            match super::decimal::share_up(d.abs(), d.abs(), Decimal::ONE) {
                Some(d2) if d2 < Decimal::MAX => charge(self.amount, d2, self.s),
                _ if d.is_zero() => 0,
                _ => Cost::MAX,
            }
        } else {
            charge(self.amount, d, self.s)
        }
    }

    /// The charge for a difference `d` as a decimal, rounded up; `Decimal::MAX` past its
    /// range.
    pub fn decimal(&self, d: Decimal) -> Decimal {
        let d = if self.squared {
            match super::decimal::share_up(d.abs(), d.abs(), Decimal::ONE) {
                Some(d2) => d2,
                None => return Decimal::MAX,
            }
        } else {
            d.abs()
        };
        super::decimal::share_up(self.amount, d, self.s).unwrap_or(Decimal::MAX)
    }
}

/// `(sqrt(a) + sqrt(b))^2`, rounded up: the bound the triangle inequality gives on the squared
/// distance `d(j, k)^2 <= (d(j, a) + d(a, k))^2` for zCDP costs.
fn root_sum_squared(a: Cost, b: Cost) -> Cost {
    let up = |x: Cost| {
        let r = x.isqrt();
        if r * r < x {
            r + 1
        } else {
            r
        }
    };
    let r = up(a).saturating_add(up(b));
    r.checked_mul(r).unwrap_or(Cost::MAX)
}

/// A cost as a decimal of epsilon (exact: 10^-24 is within a decimal's reach).
pub fn to_decimal(cost: Cost) -> Decimal {
    // A cost that reached the top of its range saturated there: it is at least that much, so
    // it is as large as a decimal can say (a release past it is refused, never under-charged).
    if cost == Cost::MAX {
        return Decimal::MAX;
    }
    let whole = cost / 10u128.pow(SCALE);
    let frac = cost % 10u128.pow(SCALE);
    let whole = Decimal::from_u128(whole).unwrap_or(Decimal::MAX);
    let frac = Decimal::from_i128_with_scale(frac as i128, SCALE);
    whole.saturating_add(frac).normalize()
}

/// The index of pair `(a, b)`, `a != b`, in the triangle.
fn at(a: usize, b: usize) -> usize {
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    hi * (hi - 1) / 2 + lo
}

/// A part of a class as a release sees it.
#[derive(Debug, Clone, Copy)]
struct Part {
    class: u32,
    coef: Decimal,
    /// One of its cells.
    cell: usize,
}

/// How a release's row falls on one class it touches.
struct Touch {
    /// The class.
    class: u32,
    /// The cells it touches, by coefficient: the coefficient, how many, and the first.
    groups: Vec<(Decimal, usize, u32)>,
    /// How many of its cells it touches.
    touched: usize,
    /// Whether some cells of the class are left out (coefficient 0).
    rest: bool,
}

impl PairCosts {
    /// One class of `cells` cells, none touched yet; costs in epsilon, or (`squared`) in rho.
    pub fn new(cells: usize, squared: bool) -> Self {
        Self::with_cap(cells, EXACT_CLASSES, squared)
    }

    /// The same with another cap on exact classes (tests of the bounds).
    pub fn with_cap(cells: usize, cap: usize, squared: bool) -> Self {
        Self {
            cells,
            cap,
            norms: TopTwo::new(cells, |_| 0),
            sequential: 0,
            squared,
            mode: Mode::Exact(Exact::new(cells)),
            memo: RefCell::new(None),
        }
    }

    /// Whether the cost of every pair of classes is kept (there are at most as many classes
    /// as the cap); beyond it the cost is exact only when its bounds meet.
    pub fn keeps_every_pair(&self) -> bool {
        matches!(self.mode, Mode::Exact(_))
    }

    /// The number of classes of cells, while every pair is kept.
    pub fn classes(&self) -> Option<usize> {
        match &self.mode {
            Mode::Exact(e) => Some(e.members.len()),
            Mode::Bounded(_) => None,
        }
    }

    /// The largest cost over pairs of cells (or an upper bound of it), and where.
    pub fn worst(&self) -> Worst {
        if self.sequential == Cost::MAX {
            return self.too_large();
        }
        let (cost, lower, cells) = match &self.mode {
            Mode::Exact(e) => (
                e.worst.0,
                e.worst.0,
                self.distinct(e.two_cells(e.worst.1, e.worst.2)),
            ),
            Mode::Bounded(b) => {
                let (lower, cells) = b.known(b.anchors.iter().map(|a| (a.cell, a.distance.top())));
                (b.upper.max(lower), lower, self.distinct(cells))
            }
        };
        Worst {
            cost: to_decimal(cost),
            cells,
            lower: to_decimal(lower),
            exact: lower >= cost,
            before_cube: Decimal::ZERO,
        }
    }

    /// The cost once a charge too large to hold was recorded (the sum of the most each
    /// release costs a pair, which bounds every pair's cost, reached [`Cost::MAX`]): at most
    /// "too large", with no pair known.
    fn too_large(&self) -> Worst {
        Worst {
            cost: to_decimal(Cost::MAX),
            cells: self.distinct((0, 0)),
            lower: Decimal::ZERO,
            exact: false,
            before_cube: Decimal::ZERO,
        }
    }

    /// A pair named in order of its cells, and always two distinct cells when the cube has
    /// two: a pair found as one cell twice (an anchor with nothing farther) is the cell and
    /// its neighbour.
    fn distinct(&self, (j, k): (usize, usize)) -> (usize, usize) {
        let (j, k) = if j == k && self.cells >= 2 {
            (j, (j + 1) % self.cells)
        } else {
            (j, k)
        };
        (j.min(k), j.max(k))
    }

    /// Each cell's cost against a cell no release touched (the per-cell view).
    pub fn cell_norms(&self) -> Vec<Decimal> {
        self.norms.values().into_iter().map(to_decimal).collect()
    }

    /// The most a release of `rate` with `row` can add to the cost: what it costs the pair
    /// its coefficients set farthest apart.
    pub fn most_added(&self, rate: &Rate, row: &Row) -> Decimal {
        to_decimal(most(rate, row, self.cells))
    }

    /// The cost of the history after a release of `rate` with `row`, and a cell of each side
    /// of its costliest pair, without recording it.
    pub fn after(&self, rate: &Rate, row: &Row) -> After {
        debug_assert_eq!(
            rate.squared, self.squared,
            "a rate of the table's accounting"
        );
        if let Some((k, after)) = self.memo.borrow().as_ref() {
            if k.0 == *rate && k.1 == *row {
                return *after;
            }
        }
        let most = most(rate, row, self.cells);
        let after = match &self.mode {
            _ if self.sequential.saturating_add(most) == Cost::MAX => After {
                cost: Cost::MAX,
                lower: 0,
                cells: self.distinct((0, 0)),
            },
            Mode::Exact(e) => {
                let after = e.after(rate, row);
                After {
                    cells: self.distinct(after.cells),
                    ..after
                }
            }
            Mode::Bounded(b) => {
                let norms = self.norms.top_after(
                    row.segments(self.cells)
                        .map(|(from, to, c)| (from, to, rate.cost(c))),
                );
                let anchors = b.anchors.iter().map(|a| {
                    let h = row.coef(a.cell);
                    let top = a.distance.top_after(
                        row.segments(self.cells)
                            .map(|(from, to, c)| (from, to, rate.cost(c - h))),
                    );
                    (a.cell, top)
                });
                let (upper, lower, cells) = b.judge(
                    norms,
                    self.sequential.saturating_add(most),
                    b.upper.saturating_add(most),
                    anchors,
                    self.squared,
                );
                After {
                    // The bounds hold (tested against brute force); the larger is kept all
                    // the same, so that a fault could only over-count.
                    cost: upper.max(lower),
                    lower,
                    cells: self.distinct(cells),
                }
            }
        };
        *self.memo.borrow_mut() = Some(((*rate, row.clone()), after));
        after
    }

    /// Records a release of `rate` with `row`.
    pub fn record(&mut self, rate: &Rate, row: &Row) {
        debug_assert_eq!(
            rate.squared, self.squared,
            "a rate of the table's accounting"
        );
        let most = most(rate, row, self.cells);
        self.sequential = self.sequential.saturating_add(most);
        for run in row.runs() {
            self.norms.add(run.start, run.end(), rate.cost(run.coef));
        }
        match &mut self.mode {
            Mode::Exact(e) => {
                e.record(rate, row);
                if e.members.len() > self.cap {
                    self.mode = Mode::Bounded(e.bounded(self.cells));
                }
            }
            Mode::Bounded(b) => {
                b.record(rate, row, self.cells);
                let anchors = b.anchors.iter().map(|a| (a.cell, a.distance.top()));
                let (upper, _, _) = b.judge(
                    self.norms.top(),
                    self.sequential,
                    b.upper.saturating_add(most),
                    anchors,
                    self.squared,
                );
                b.upper = upper;
            }
        }
        *self.memo.borrow_mut() = None;
    }
}

impl Bounded {
    /// The bounds from the two largest norms, the sum of the most each release costs a pair,
    /// the upper bound carried from before and each anchor's two largest distances: the cost
    /// is at most the least of them (returned first), and at least the largest distance from
    /// an anchor (a real pair, returned with it). zCDP costs (`squared`) are squared
    /// distances, so the triangle inequality bounds them by `(sqrt(x) + sqrt(y))^2`.
    fn judge(
        &self,
        norms: Top,
        sequential: Cost,
        carried: Cost,
        anchors: impl Iterator<Item = (usize, Top)>,
        squared: bool,
    ) -> (Cost, Cost, (usize, usize)) {
        let through = |top: Top| {
            if squared {
                let best = top.best.map_or(0, |b| b.0);
                root_sum_squared(best, top.second.unwrap_or(0))
            } else {
                top.pair_sum()
            }
        };
        // d(j, k) <= d(j, 0) + d(0, k): the two largest norms (the zero column as anchor).
        let mut upper = sequential.min(carried).min(through(norms));
        let anchors: Vec<(usize, Top)> = anchors.collect();
        for (_, top) in &anchors {
            // d(j, k) <= d(j, a) + d(a, k) for the anchor a.
            upper = upper.min(through(*top));
        }
        let (lower, cells) = self.known(anchors.into_iter());
        (upper, lower, cells)
    }

    /// The costliest pair known: an anchor and its farthest cell.
    fn known(&self, anchors: impl Iterator<Item = (usize, Top)>) -> (Cost, (usize, usize)) {
        let mut known: Option<(Cost, (usize, usize))> = None;
        for (cell, top) in anchors {
            if let Some((far, other)) = top.best {
                if known.is_none_or(|(k, _)| far > k) {
                    known = Some((far, (cell, other)));
                }
            }
        }
        known.unwrap_or((0, (0, 0)))
    }

    /// Adds a release to every anchor's distances: over each range of cells the row gives
    /// one coefficient `c`, the distance from an anchor of coefficient `h` grows by the
    /// charge of `c - h`.
    fn record(&mut self, rate: &Rate, row: &Row, cells: usize) {
        for a in &mut self.anchors {
            let h = row.coef(a.cell);
            for (from, to, c) in row.segments(cells) {
                a.distance.add(from, to, rate.cost(c - h));
            }
        }
    }
}

impl Exact {
    /// One class of `cells` cells.
    fn new(cells: usize) -> Self {
        Self {
            class_of: vec![0; cells],
            members: vec![(0..cells as u32).collect()],
            pair: Vec::new(),
            worst: (0, 0, 0),
        }
    }

    /// The cost of the pair of classes `(a, b)`.
    fn cost(&self, a: u32, b: u32) -> Cost {
        if a == b {
            0
        } else {
            self.pair[at(a as usize, b as usize)]
        }
    }

    fn first(&self, class: u32) -> usize {
        self.members
            .get(class as usize)
            .and_then(|m| m.first())
            .map_or(0, |c| *c as usize)
    }

    /// A cell of class `a` and another of class `b`: two distinct cells whenever the cube has
    /// two. When `a == b` (no release told any cells apart, so every pair costs the same)
    /// the two are taken from that class, or from another.
    fn two_cells(&self, a: u32, b: u32) -> (usize, usize) {
        let first = self.first(a);
        if a != b {
            return (first, self.first(b));
        }
        let other = self.members[a as usize]
            .get(1)
            .map(|c| *c as usize)
            .or_else(|| {
                (0..self.members.len() as u32)
                    .find(|c| *c != a)
                    .map(|c| self.first(c))
            });
        (first, other.unwrap_or(first))
    }

    /// How a row falls on the classes it touches, in one pass over its cells.
    fn touches(&self, row: &Row) -> Vec<Touch> {
        let mut slot = vec![u32::MAX; self.members.len()];
        let mut out: Vec<Touch> = Vec::new();
        for run in row.runs() {
            let end = run.end().min(self.class_of.len());
            for cell in run.start..end {
                let class = self.class_of[cell];
                let t = match slot[class as usize] {
                    u32::MAX => {
                        slot[class as usize] = out.len() as u32;
                        out.push(Touch {
                            class,
                            groups: Vec::new(),
                            touched: 0,
                            rest: false,
                        });
                        out.len() - 1
                    }
                    t => t as usize,
                };
                let touch = &mut out[t];
                touch.touched += 1;
                match touch.groups.iter_mut().rev().find(|g| g.0 == run.coef) {
                    Some(g) => g.1 += 1,
                    None => touch.groups.push((run.coef, 1, cell as u32)),
                }
            }
        }
        for t in &mut out {
            t.rest = t.touched < self.members[t.class as usize].len();
        }
        out
    }

    /// The parts of the classes a release sees, each with its coefficient and a cell of it: a
    /// class it does not touch (0), a class it touches whole with one coefficient, and each
    /// group of a class it splits (the cells it leaves out are a group of coefficient 0).
    fn parts(&self, row: &Row, touches: &[Touch]) -> Vec<Part> {
        let mut touched = vec![false; self.members.len()];
        let mut parts = Vec::with_capacity(self.members.len() + touches.len());
        for t in touches {
            touched[t.class as usize] = true;
            parts.extend(t.groups.iter().map(|(c, _, first)| Part {
                class: t.class,
                coef: *c,
                cell: *first as usize,
            }));
            if t.rest {
                let cell = self.members[t.class as usize]
                    .iter()
                    .find(|c| row.coef(**c as usize).is_zero())
                    .map_or(0, |c| *c as usize);
                parts.push(Part {
                    class: t.class,
                    coef: Decimal::ZERO,
                    cell,
                });
            }
        }
        parts.extend(
            (0..self.members.len() as u32)
                .filter(|a| !touched[*a as usize])
                .map(|a| Part {
                    class: a,
                    coef: Decimal::ZERO,
                    cell: self.first(a),
                }),
        );
        parts
    }

    /// The exact cost after a release, without recording it: every pair of parts with
    /// different coefficients gains the release's charge; two parts of one class cost nothing
    /// so far.
    fn after(&self, rate: &Rate, row: &Row) -> After {
        let touches = self.touches(row);
        let parts = self.parts(row, &touches);
        let (a0, b0) = self.two_cells(self.worst.1, self.worst.2);
        let mut worst = (self.worst.0, (a0, b0));
        let by = by_coefficient(&parts);
        for (i, (ci, xs)) in by.iter().enumerate() {
            for (cj, ys) in &by[..i] {
                let add = rate.cost(*ci - *cj);
                for x in xs {
                    for y in ys {
                        let cost = self.cost(x.class, y.class).saturating_add(add);
                        if cost > worst.0 {
                            worst = (cost, (x.cell, y.cell));
                        }
                    }
                }
            }
        }
        After {
            cost: worst.0,
            lower: worst.0,
            cells: worst.1,
        }
    }

    /// Records a release: splits the classes it tells apart, then charges every pair of
    /// classes it gives different coefficients.
    fn record(&mut self, rate: &Rate, row: &Row) {
        // Each group of a class the row splits becomes a class of its own, a copy of the
        // class so far; the cells left out (or, if none is, the first group) stay.
        let old = self.members.len();
        let mut coefs: Vec<(u32, Decimal)> = Vec::new();
        // For each class split: the new class of each coefficient.
        let mut moves: Vec<Vec<(Decimal, u32)>> = vec![Vec::new(); old];
        let mut split: Vec<u32> = Vec::new();
        for t in self.touches(row) {
            if !t.rest && t.groups.len() == 1 {
                coefs.push((t.class, t.groups[0].0));
                continue;
            }
            let moving = if t.rest {
                &t.groups[..]
            } else {
                coefs.push((t.class, t.groups[0].0));
                &t.groups[1..]
            };
            for (c, _, _) in moving {
                let b = self.new_class(t.class);
                moves[t.class as usize].push((*c, b));
                coefs.push((b, *c));
            }
            split.push(t.class);
        }
        if !split.is_empty() {
            self.move_cells(row, &moves, old);
            for a in split {
                let class_of = &self.class_of;
                self.members[a as usize].retain(|c| class_of[*c as usize] == a);
            }
        }
        self.charge_pairs(rate, &coefs);
    }

    /// A new class, empty, with the costs of class `a` so far: its row of the triangle is
    /// `a`'s costs against every older class, and 0 against `a`.
    fn new_class(&mut self, a: u32) -> u32 {
        let b = self.members.len();
        self.members.push(Vec::new());
        self.pair.reserve(b);
        for c in 0..b {
            let cost = self.cost(a, c as u32);
            self.pair.push(cost);
        }
        b as u32
    }

    /// Moves the cells of the row that lie in a class being split (of the `old` classes)
    /// to the new class of their coefficient (`moves`, by class).
    fn move_cells(&mut self, row: &Row, moves: &[Vec<(Decimal, u32)>], old: usize) {
        for run in row.runs() {
            let end = run.end().min(self.class_of.len());
            for cell in run.start..end {
                let a = self.class_of[cell] as usize;
                if a >= old {
                    continue;
                }
                if let Some((_, b)) = moves[a].iter().find(|(c, _)| *c == run.coef) {
                    self.class_of[cell] = *b;
                    self.members[*b as usize].push(cell as u32);
                }
            }
        }
    }

    /// Adds the charges of a release whose classes are split: `coefs` gives the non-zero
    /// coefficient of each class that has one. Each pair is visited once, in the row of its
    /// larger class, so each row of the triangle is read in order.
    fn charge_pairs(&mut self, rate: &Rate, coefs: &[(u32, Decimal)]) {
        let classes = self.members.len();
        // Coefficient values, 0 first; each class's value.
        let mut values = vec![Decimal::ZERO];
        let mut value_of = vec![0usize; classes];
        for (class, c) in coefs {
            let v = match values.iter().position(|x| x == c) {
                Some(v) => v,
                None => {
                    values.push(*c);
                    values.len() - 1
                }
            };
            value_of[*class as usize] = v;
        }
        let g = values.len();
        if g == 1 {
            return;
        }
        let add: Vec<Cost> = (0..g * g)
            .map(|i| rate.cost(values[i / g] - values[i % g]))
            .collect();
        let mut by_value: Vec<Vec<u32>> = vec![Vec::new(); g];
        for (class, v) in value_of.iter().enumerate() {
            by_value[*v].push(class as u32);
        }
        // No pair's cost exceeds the sum of the most each release costs a pair, which the
        // caller keeps below Cost::MAX (else it reports Cost::MAX): the additions cannot wrap.
        let mut worst = self.worst;
        for (r, &vr) in value_of.iter().enumerate().skip(1) {
            let base = r * (r - 1) / 2;
            let row = &mut self.pair[base..base + r];
            let same = by_value[vr].partition_point(|y| (*y as usize) < r);
            if 4 * (r - same) >= r {
                // Most of the row changes: one pass over it, in order.
                let plus: Vec<Cost> = (0..g).map(|q| add[vr * g + q]).collect();
                let mut best = (0, 0);
                for (y, cost) in row.iter_mut().enumerate() {
                    *cost = cost.wrapping_add(plus[value_of[y]]);
                    if *cost > best.0 {
                        best = (*cost, y);
                    }
                }
                if best.0 > worst.0 {
                    worst = (best.0, r as u32, best.1 as u32);
                }
                continue;
            }
            for (q, ys) in by_value.iter().enumerate() {
                let plus = add[vr * g + q];
                if q == vr || plus == 0 {
                    continue;
                }
                for &y in &ys[..ys.partition_point(|y| (*y as usize) < r)] {
                    let cost = &mut row[y as usize];
                    *cost = cost.wrapping_add(plus);
                    if *cost > worst.0 {
                        worst = (*cost, r as u32, y);
                    }
                }
            }
        }
        self.worst = worst;
    }

    /// The bounds that replace the pairs once there are too many: anchors chosen farthest
    /// first, from the costliest pair, each with its distance to every cell.
    fn bounded(&self, cells: usize) -> Bounded {
        let classes = self.members.len() as u32;
        let mut chosen: Vec<u32> = if self.worst.0 > 0 && self.worst.1 != self.worst.2 {
            vec![self.worst.1, self.worst.2]
        } else {
            vec![0]
        };
        // Each class's distance to the nearest anchor chosen so far.
        let mut near: Vec<Cost> = (0..classes)
            .map(|c| chosen.iter().map(|a| self.cost(*a, c)).min().unwrap_or(0))
            .collect();
        while chosen.len() < ANCHORS {
            let Some(next) = (0..classes).max_by_key(|c| (near[*c as usize], u32::MAX - c)) else {
                break;
            };
            if near[next as usize] == 0 {
                break;
            }
            chosen.push(next);
            for (c, d) in near.iter_mut().enumerate() {
                *d = (*d).min(self.cost(next, c as u32));
            }
        }
        let anchors = chosen
            .iter()
            .map(|a| Anchor {
                cell: self.first(*a),
                distance: TopTwo::new(cells, |j| self.cost(*a, self.class_of[j])),
            })
            .collect();
        Bounded {
            anchors,
            upper: self.worst.0,
        }
    }
}

/// Parts grouped by coefficient.
fn by_coefficient(parts: &[Part]) -> Vec<(Decimal, Vec<Part>)> {
    let mut by: Vec<(Decimal, Vec<Part>)> = Vec::new();
    for p in parts {
        match by.iter_mut().find(|(c, _)| *c == p.coef) {
            Some((_, ps)) => ps.push(*p),
            None => by.push((p.coef, vec![*p])),
        }
    }
    by
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A charge is exact (rounded up to 10^-24) however large its coefficients: a query of
    /// coefficient 1e26 at epsilon 0.001 costs a pair 0.001, not a saturated maximum.
    #[test]
    fn charges_are_exact_past_the_range_of_their_intermediates() {
        let d = |s: &str| {
            Decimal::from_scientific(s)
                .or_else(|_| s.parse())
                .expect("decimal")
        };
        // eps diff / S with diff = S: eps itself, at any size of S.
        for s in ["1", "1e20", "1e26", "79228162514264337593543950335"] {
            let s = d(s);
            assert_eq!(to_decimal(charge(d("0.001"), s, s)), d("0.001"), "S = {s}");
        }
        // 1/3 of 0.001, rounded up at the 24th decimal.
        assert_eq!(
            to_decimal(charge(
                d("0.001"),
                d("1e26").checked_div(d("3")).expect("a quotient").round(),
                d("1e26")
            )),
            d("0.000333333333333333333334")
        );
        // A quotient past the range saturates: the release is refused, never under-charged.
        assert_eq!(charge(d("1e20"), d("1e8"), d("1")), Cost::MAX);
        // A charge below one unit rounds up to one.
        assert_eq!(charge(d("1e-28"), d("1"), d("1e28")), 1);
    }

    /// A release: its rate (epsilon and sensitivity, at least the spread of its coefficients
    /// over every cell, untouched ones at 0; or rho and that spread squared) and row.
    type Release = (Rate, Row);

    /// A pure release's rate: `eps |d| / s`.
    fn pure(eps: Decimal, s: Decimal) -> Rate {
        Rate {
            amount: eps,
            s,
            squared: false,
        }
    }

    const EPS: [&str; 5] = ["0.1", "0.05", "0.3", "1", "0.0001"];

    /// A release from dense coefficients (one at least is made non-zero), charged in epsilon
    /// or (`squared`) in rho.
    fn release(eps: &str, mut dense: Vec<i64>, spare: usize, squared: bool) -> Release {
        if dense.iter().all(|c| *c == 0) {
            let n = dense.len();
            dense[spare % n] = 1;
        }
        let cells: Vec<(usize, Decimal)> = dense
            .iter()
            .enumerate()
            .filter(|(_, c)| **c != 0)
            .map(|(j, c)| (j, Decimal::from(*c)))
            .collect();
        let row = Row::from_cells(&cells).expect("increasing cells");
        let (hi, lo) = row.extremes(dense.len());
        let e = Decimal::from_str_exact(eps).expect("a decimal");
        let spread = (hi - lo).max(Decimal::ONE);
        let s = if squared { spread * spread } else { spread };
        let rate = Rate {
            amount: e,
            s,
            squared,
        };
        (rate, row)
    }

    fn random_history(
        rng: &mut ChaCha8Rng,
        cells: usize,
        releases: usize,
        squared: bool,
    ) -> Vec<Release> {
        (0..releases)
            .map(|_| {
                let dense: Vec<i64> = if rng.random_bool(0.5) {
                    (0..cells)
                        .map(|_| {
                            let c = rng.random_range(-2i64..=3);
                            if rng.random_bool(0.4) {
                                c
                            } else {
                                0
                            }
                        })
                        .collect()
                } else {
                    // A range of cells with one coefficient: a count over an interval.
                    let a = rng.random_range(0..cells);
                    let b = rng.random_range(a..=cells);
                    let c = rng.random_range(1i64..=2);
                    (0..cells)
                        .map(|j| if (a..b).contains(&j) { c } else { 0 })
                        .collect()
                };
                let spare = rng.random_range(0..cells);
                release(EPS[rng.random_range(0..EPS.len())], dense, spare, squared)
            })
            .collect()
    }

    /// The cost of pair `(j, k)` by brute force: the sum over releases of each one's charge,
    /// `eps |H_ij - H_ik| / S` or `rho (H_ij - H_ik)^2 / S2^2`, computed here from the formula
    /// (not with [`Rate::cost`]).
    fn pair_cost(history: &[Release], j: usize, k: usize) -> Cost {
        history
            .iter()
            .map(|(r, row)| direct(r, row.coef(j) - row.coef(k)))
            .sum()
    }

    /// One release's charge for a difference `d`, from the formula.
    fn direct(r: &Rate, d: Decimal) -> Cost {
        let d = d.abs();
        let d = if r.squared { d * d } else { d };
        charge(r.amount, d, r.s)
    }

    /// The costliest pair by brute force, and every cell's norm.
    fn brute(cells: usize, history: &[Release]) -> (Cost, Vec<Cost>) {
        let mut worst = 0;
        for j in 0..cells {
            for k in 0..j {
                worst = worst.max(pair_cost(history, j, k));
            }
        }
        let norms = (0..cells)
            .map(|j| history.iter().map(|(r, row)| direct(r, row.coef(j))).sum())
            .collect();
        (worst, norms)
    }

    #[test]
    fn the_costliest_pair_equals_brute_force_on_random_histories() {
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        for round in 0..120 {
            let squared = round % 2 == 1;
            let cells = rng.random_range(2..14);
            let releases = rng.random_range(1..12);
            let history = random_history(&mut rng, cells, releases, squared);
            let mut p = PairCosts::new(cells, squared);
            for (i, (r, row)) in history.iter().enumerate() {
                let predicted = p.after(r, row);
                p.record(r, row);
                let (worst, norms) = brute(cells, &history[..=i]);
                assert_eq!(predicted.cost, worst, "round {round}, release {i}: after");
                let w = p.worst();
                assert_eq!(to_decimal(worst), w.cost, "round {round}, release {i}");
                assert!(w.exact && w.lower == w.cost);
                let got: Vec<Decimal> = p.cell_norms();
                let want: Vec<Decimal> = norms.into_iter().map(to_decimal).collect();
                assert_eq!(got, want, "round {round}, release {i}: norms");
            }
            // The pair named is two cells that cost that much.
            let w = p.worst();
            let (j, k) = w.cells;
            assert_ne!(j, k);
            assert_eq!(
                to_decimal(pair_cost(&history, j, k)),
                w.cost,
                "round {round}: the pair named"
            );
        }
    }

    /// Checks the bounds of `p` after each release of `history` against brute force.
    fn check_bounds(
        cells: usize,
        cap: usize,
        history: &[Release],
        squared: bool,
    ) -> Result<(), TestCaseError> {
        let mut p = PairCosts::with_cap(cells, cap, squared);
        let mut sequential = 0;
        for (i, (r, row)) in history.iter().enumerate() {
            let predicted = p.after(r, row);
            p.record(r, row);
            sequential += most(r, row, cells);
            let (worst, norms) = brute(cells, &history[..=i]);
            let w = p.worst();
            // What the check predicted is what is recorded.
            prop_assert_eq!(to_decimal(predicted.cost), w.cost, "release {}", i);
            prop_assert_eq!(to_decimal(predicted.lower), w.lower, "release {}", i);
            // lower <= exact <= upper, and the pair named costs the lower bound.
            prop_assert!(w.lower <= to_decimal(worst), "release {}: lower bound", i);
            prop_assert!(to_decimal(worst) <= w.cost, "release {}: never under", i);
            let (j, k) = w.cells;
            prop_assert_ne!(j, k);
            prop_assert_eq!(to_decimal(pair_cost(&history[..=i], j, k)), w.lower);
            if w.exact {
                prop_assert_eq!(w.cost, to_decimal(worst), "release {}: exact", i);
            }
            // Never looser than the bound through the zero column (two largest norms), nor
            // than the sum.
            let mut sorted = norms;
            sorted.sort_unstable_by(|a, b| b.cmp(a));
            let second = sorted.get(1).copied().unwrap_or(0);
            let norms_bound = if squared {
                root_sum_squared(sorted[0], second)
            } else {
                sorted[0] + second
            };
            prop_assert!(w.cost <= to_decimal(norms_bound.min(sequential)));
            // Every pair is kept while there are at most `cap` classes.
            prop_assert_eq!(p.keeps_every_pair(), p.classes().is_some());
            prop_assert!(p.classes().is_none_or(|c| c <= cap));
            if p.keeps_every_pair() {
                prop_assert!(w.exact);
            }
        }
        Ok(())
    }

    /// Cells, a cap, and releases: an epsilon (by index), dense coefficients, and a cell to
    /// make non-zero should they all be zero.
    type RawHistory = (usize, usize, Vec<(usize, Vec<i64>, usize)>);

    fn histories() -> impl Strategy<Value = RawHistory> {
        (2usize..13, 1usize..5).prop_flat_map(|(cells, cap)| {
            let release = (
                0..EPS.len(),
                prop::collection::vec(prop_oneof![3 => Just(0i64), 2 => -2i64..=3], cells),
                0..cells,
            );
            (
                Just(cells),
                Just(cap),
                prop::collection::vec(release, 1..14),
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Beyond the cap, on random histories: the lower bound is the cost of the pair it
        /// names, the upper bound is never below the exact cost (brute force over every
        /// pair), and when they meet they are the exact cost.
        #[test]
        fn beyond_the_cap_the_bounds_hold_and_meet_only_at_the_cost(
            (cells, cap, raw) in histories(),
            squared in any::<bool>(),
        ) {
            let history: Vec<Release> = raw
                .into_iter()
                .map(|(e, dense, spare)| release(EPS[e], dense, spare, squared))
                .collect();
            check_bounds(cells, cap, &history, squared)?;
        }
    }

    #[test]
    fn beyond_the_cap_the_bounds_hold_on_ranges_and_mixed_rows() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for round in 0..80 {
            let squared = round % 2 == 1;
            let cells = rng.random_range(6..20);
            let history = random_history(&mut rng, cells, 16, squared);
            let cap = rng.random_range(1..5);
            check_bounds(cells, cap, &history, squared).expect("the bounds hold");
        }
    }

    /// The audit's case in small: prefix counts (`COUNT WHERE id < k`) over more classes than
    /// are kept exactly. Every release separates the first cell from the last, so the history
    /// costs exactly the sum of the epsilons, which is also an upper bound of every history
    /// (each release costs any pair at most its epsilon). The sum of the two largest cell
    /// norms, the former bound, is twice that.
    #[test]
    fn prefix_counts_beyond_the_cap_cost_exactly_their_sum() {
        let cells = 60;
        let mut p = PairCosts::with_cap(cells, 4, false);
        let eps = Decimal::new(1, 5);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut sum = Decimal::ZERO;
        for i in 0..40 {
            let k = rng.random_range(1..cells);
            let row = Row::from_runs(&[(0, k, Decimal::ONE)]).expect("a run");
            let predicted = p.after(&pure(eps, Decimal::ONE), &row);
            p.record(&pure(eps, Decimal::ONE), &row);
            sum += eps;
            let w = p.worst();
            assert_eq!(to_decimal(predicted.cost), w.cost, "release {i}");
            assert_eq!(w.cost, sum, "release {i}");
            assert!(w.exact, "release {i}: the bounds meet");
        }
        assert!(!p.keeps_every_pair(), "beyond the cap");
    }

    fn cells_row(cells: &[(usize, Decimal)]) -> Row {
        Row::from_cells(cells).expect("increasing cells")
    }

    /// The example: two counts over disjoint cells cost 0.2 under replace; ten counts
    /// over the ten cells of a partition cost 0.2, not 1.0.
    #[test]
    fn disjoint_counts_cost_twice_and_a_partition_costs_two() {
        let tenth = Decimal::new(1, 1);
        let mut p = PairCosts::new(3, false);
        p.record(&pure(tenth, Decimal::ONE), &cells_row(&[(0, Decimal::ONE)]));
        p.record(&pure(tenth, Decimal::ONE), &cells_row(&[(1, Decimal::ONE)]));
        assert_eq!(p.worst().cost, Decimal::new(2, 1));
        let mut p = PairCosts::new(11, false);
        for j in 0..10 {
            p.record(&pure(tenth, Decimal::ONE), &cells_row(&[(j, Decimal::ONE)]));
        }
        assert_eq!(p.worst().cost, Decimal::new(2, 1));
        // a - b over disjoint a and b: S = 2 under replace, so the pair (a, b) costs eps.
        let mut p = PairCosts::new(3, false);
        p.record(
            &pure(tenth, Decimal::TWO),
            &cells_row(&[(0, Decimal::ONE), (1, -Decimal::ONE)]),
        );
        assert_eq!(p.worst().cost, tenth);
        let (j, k) = p.worst().cells;
        assert_eq!((j.min(k), j.max(k)), (0, 1));
    }

    /// With nothing told apart every pair costs the same; the pair named is still two cells.
    #[test]
    fn the_pair_named_is_two_distinct_cells() {
        let p = PairCosts::new(4, false);
        let (j, k) = p.worst().cells;
        assert_ne!(j, k);
        // A count over every cell tells none apart (under replace it is the public n).
        let mut p = PairCosts::new(3, false);
        let all = Row::from_runs(&[(0, 3, Decimal::ONE)]).expect("a run");
        p.record(&pure(Decimal::ONE, Decimal::ZERO), &all);
        let (j, k) = p.worst().cells;
        assert_ne!(j, k);
        let a = p.after(&pure(Decimal::ONE, Decimal::ZERO), &all);
        assert_ne!(a.cells.0, a.cells.1);
    }

    /// A charge too large to hold makes the cost "too large" for good, never a wrapped-around
    /// small number.
    #[test]
    fn a_charge_too_large_to_hold_saturates() {
        let mut p = PairCosts::new(3, false);
        let huge = Decimal::from_str_exact("100000000000000000000").expect("a decimal");
        let row = cells_row(&[(0, huge)]);
        let max = to_decimal(Cost::MAX);
        assert_eq!(
            to_decimal(p.after(&pure(Decimal::ONE, Decimal::ONE), &row).cost),
            max
        );
        p.record(&pure(Decimal::ONE, Decimal::ONE), &row);
        assert_eq!(p.worst().cost, max);
        p.record(
            &pure(Decimal::ONE, Decimal::ONE),
            &cells_row(&[(1, Decimal::ONE)]),
        );
        assert_eq!(p.worst().cost, max);
        assert!(!p.worst().exact);
    }

    #[test]
    fn charges_round_up_and_are_exact_for_decimals() {
        let e = Decimal::new(1, 1);
        assert_eq!(to_decimal(charge(e, Decimal::ONE, Decimal::ONE)), e);
        assert_eq!(
            to_decimal(charge(e, Decimal::ONE, Decimal::TWO)),
            Decimal::new(5, 2)
        );
        let third = charge(Decimal::ONE, Decimal::ONE, Decimal::from(3));
        assert!(third * 3 >= 10u128.pow(SCALE));
        assert_eq!(charge(e, Decimal::ZERO, Decimal::ONE), 0);
    }
}
