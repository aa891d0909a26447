//! The cost of a history when neighbouring tables differ by one *replaced* row: the largest,
//! over pairs of cells `(j, k)`, of `sum_i (eps_i / S_i) |H_ij - H_ik|`, kept up to date
//! release by release.
//!
//! Replacing one row moves one unit of count from a cell `j` to a cell `k`: release `i`'s
//! answer moves by `H_ik - H_ij`, at a privacy loss of `(eps_i / S_i) |H_ij - H_ik|` for its
//! Laplace noise of scale `S_i / eps_i`, and losses add over releases (sequential
//! composition); the history costs its worst pair.
//!
//! Cells whose columns of `H` are identical are interchangeable: they form one class, and only
//! pairs of classes matter. Each release refines the classes (cells it gives different
//! coefficients are split apart) and adds to the cost of every pair of classes it gives
//! different coefficients. Up to [`EXACT_CLASSES`] classes the cost of every pair is kept, so
//! the largest is exact; the work per release is the number of pairs it changes. The exact
//! maximum over many classes is as hard as the largest Hamming distance among many vectors,
//! for which no method much faster than trying every pair is known; beyond the cap the cost
//! is bounded instead, never under-counted: a pair costs at most the sum of what each of its
//! cells costs against a cell no release touched, so the history costs at most the sum of the
//! two largest such costs of distinct classes.
//!
//! Costs are kept as whole multiples of 10^-24 epsilon, each charge rounded up.

use rust_decimal::prelude::FromPrimitive;
use rust_decimal::Decimal;
use std::cell::RefCell;
use std::collections::BTreeMap;

/// The most classes of cells whose pairwise costs are kept exactly.
pub const EXACT_CLASSES: usize = 2048;

/// Units of epsilon per [`Cost`] step: costs are multiples of 10^-24.
const SCALE: u32 = 24;

/// A cost in units of 10^-24 epsilon.
pub type Cost = u128;

/// The cost of a history under the replace model, pair by pair of cell classes.
#[derive(Debug, Clone, PartialEq)]
pub struct PairCosts {
    /// The class of each cell.
    class_of: Vec<u32>,
    /// The cells of each class, in increasing order.
    members: Vec<Vec<u32>>,
    /// Each class's cost against a cell no release touched: `sum_i (eps_i/S_i) |H_ij|`.
    norm: Vec<Cost>,
    /// The cost of each pair of classes `(a, b)`, `a > b`, at `a (a - 1) / 2 + b`; `None`
    /// once there are more classes than [`EXACT_CLASSES`].
    pair: Option<Vec<Cost>>,
    /// The costliest pair of classes and its cost (exact while `pair` is kept).
    worst: (Cost, u32, u32),
    /// The most classes whose pairs are kept.
    cap: usize,
    /// The last release looked at and its cost: the budget is checked before a release and
    /// again as it is recorded, under one lock.
    memo: RefCell<Option<(Memo, After)>>,
}

/// A release looked at: epsilon, sensitivity and row.
type Memo = (Decimal, Decimal, Vec<(usize, Decimal)>);

/// Where the largest cost lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Worst {
    /// The cost, exact or (beyond the cap) an upper bound.
    pub cost: Decimal,
    /// A cell of each of the two classes of the costliest pair.
    pub cells: (usize, usize),
    /// Whether `cost` is exact.
    pub exact: bool,
    /// The part of `cost` that comes from answers released before the cube was declared
    /// (each charges every pair of cells in full); zero here, set by the history.
    pub before_cube: Decimal,
}

/// The charge of one release to a pair whose coefficients differ by `diff`:
/// `eps |diff| / S`, rounded up to a whole unit.
fn charge(eps: Decimal, diff: Decimal, s: Decimal) -> Cost {
    if diff.is_zero() || s.is_zero() {
        return 0;
    }
    // eps |diff| / S in units of 10^-24, exactly as a rational: num / den, rounded up.
    let num = eps.abs() * diff.abs();
    let (m, e) = (num.mantissa().unsigned_abs(), num.scale());
    let (sm, se) = (s.abs().mantissa().unsigned_abs(), s.scale());
    // value = m 10^-e / (sm 10^-se) = m 10^(se - e) / sm; in units: m 10^(24 + se - e) / sm.
    let exp = i64::from(SCALE) + i64::from(se) - i64::from(e);
    let (n, d) = if exp >= 0 {
        (
            10u128
                .checked_pow(u32::try_from(exp).unwrap_or(u32::MAX))
                .and_then(|p| m.checked_mul(p)),
            Some(sm),
        )
    } else {
        (
            Some(m),
            10u128
                .checked_pow(u32::try_from(-exp).unwrap_or(u32::MAX))
                .and_then(|p| sm.checked_mul(p)),
        )
    };
    match (n, d) {
        (Some(n), Some(d)) if d > 0 => n.div_ceil(d),
        _ => Cost::MAX,
    }
}

/// A cost as a decimal of epsilon (exact: 10^-24 is within a decimal's reach).
pub fn to_decimal(cost: Cost) -> Decimal {
    let whole = cost / 10u128.pow(SCALE);
    let frac = cost % 10u128.pow(SCALE);
    let whole = Decimal::from_u128(whole).unwrap_or(Decimal::MAX);
    let frac = Decimal::from_i128_with_scale(frac as i128, SCALE);
    whole.saturating_add(frac).normalize()
}

/// Parts grouped by coefficient.
fn by_coefficient(parts: &[Part]) -> Vec<(Decimal, Vec<Part>)> {
    let mut by: BTreeMap<Decimal, Vec<Part>> = BTreeMap::new();
    for p in parts {
        by.entry(p.coef).or_default().push(*p);
    }
    by.into_iter().collect()
}

/// A part of a class as a release sees it.
#[derive(Debug, Clone, Copy)]
struct Part {
    class: u32,
    coef: Decimal,
    /// One of its cells.
    cell: usize,
}

/// The cost after a release, and a cell of each side of the costliest pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct After {
    /// The cost, in units of 10^-24 epsilon (exact, or beyond the cap an upper bound).
    pub cost: Cost,
    /// A cell of each side of the costliest pair.
    pub cells: (usize, usize),
}

/// The index of pair `(a, b)`, `a != b`, in the triangle.
fn at(a: usize, b: usize) -> usize {
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    hi * (hi - 1) / 2 + lo
}

/// How a release's row falls on one class it touches.
struct Touch {
    /// The class.
    class: u32,
    /// The cells it touches, by coefficient.
    groups: Vec<(Decimal, Vec<u32>)>,
    /// Whether some cells of the class are left out (coefficient 0).
    rest: bool,
}

impl PairCosts {
    /// One class of `cells` cells, none touched yet.
    pub fn new(cells: usize) -> Self {
        Self::with_cap(cells, EXACT_CLASSES)
    }

    /// The same with another cap on exact classes (tests of the bound).
    pub fn with_cap(cells: usize, cap: usize) -> Self {
        Self {
            cap,
            class_of: vec![0; cells],
            members: vec![(0..cells as u32).collect()],
            norm: vec![0],
            pair: Some(Vec::new()),
            worst: (0, 0, 0),
            memo: RefCell::new(None),
        }
    }

    /// Whether the cost is exact (there are at most [`EXACT_CLASSES`] classes).
    pub fn exact(&self) -> bool {
        self.pair.is_some()
    }

    /// The number of classes of cells.
    pub fn classes(&self) -> usize {
        self.members.len()
    }

    /// The largest cost over pairs of cells, and where.
    pub fn worst(&self) -> Worst {
        let (cost, a, b) = match &self.pair {
            Some(_) => self.worst,
            None => {
                let (cost, a, b) = Self::bound(&self.norm);
                (cost, a as u32, b as u32)
            }
        };
        Worst {
            cost: to_decimal(cost),
            cells: self.two_cells(a, b),
            exact: self.pair.is_some(),
            before_cube: Decimal::ZERO,
        }
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

    fn first(&self, class: u32) -> usize {
        self.members
            .get(class as usize)
            .and_then(|m| m.first())
            .map_or(0, |c| *c as usize)
    }

    /// Each cell's cost against a cell no release touched (the per-cell view).
    pub fn cell_norms(&self) -> Vec<Decimal> {
        self.class_of
            .iter()
            .map(|c| to_decimal(self.norm[*c as usize]))
            .collect()
    }

    /// The sum of the two largest norms of distinct parts, and those parts: a bound on the
    /// cost of every pair (`sum |x - y| <= sum |x| + sum |y|`).
    fn bound(norm: &[Cost]) -> (Cost, usize, usize) {
        let first = (0..norm.len()).max_by_key(|&i| norm[i]).unwrap_or(0);
        let second = (0..norm.len())
            .filter(|&i| i != first)
            .max_by_key(|&i| norm[i])
            .unwrap_or(first);
        let cost = norm.get(first).copied().unwrap_or(0);
        let other = if second == first { 0 } else { norm[second] };
        (cost.saturating_add(other), first, second)
    }

    /// How a row falls on the classes it touches.
    fn touches(&self, row: &[(usize, Decimal)]) -> Vec<Touch> {
        let mut by: BTreeMap<u32, BTreeMap<Decimal, Vec<u32>>> = BTreeMap::new();
        for (cell, c) in row {
            if let Some(class) = self.class_of.get(*cell) {
                by.entry(*class)
                    .or_default()
                    .entry(c.normalize())
                    .or_default()
                    .push(*cell as u32);
            }
        }
        by.into_iter()
            .map(|(class, groups)| {
                let touched: usize = groups.values().map(Vec::len).sum();
                Touch {
                    class,
                    rest: touched < self.members[class as usize].len(),
                    groups: groups.into_iter().collect(),
                }
            })
            .collect()
    }

    /// The parts of the classes a release sees, each with its coefficient and a cell of it: a
    /// class it does not touch (0), a class it touches whole with one coefficient, and each
    /// group of a class it splits (the cells it leaves out are a group of coefficient 0).
    fn parts(&self, touches: &[Touch]) -> Vec<Part> {
        let mut touched = vec![false; self.members.len()];
        let mut parts = Vec::with_capacity(self.members.len() + touches.len());
        for t in touches {
            touched[t.class as usize] = true;
            parts.extend(t.groups.iter().map(|(c, cells)| Part {
                class: t.class,
                coef: *c,
                cell: cells[0] as usize,
            }));
            if t.rest {
                let inside: std::collections::HashSet<u32> = t
                    .groups
                    .iter()
                    .flat_map(|(_, c)| c.iter().copied())
                    .collect();
                let cell = self.members[t.class as usize]
                    .iter()
                    .find(|c| !inside.contains(c))
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

    /// The cost of the history after a release of `eps` with `row` and sensitivity `s`, and a
    /// cell of each side of its costliest pair, without recording it.
    pub fn after(&self, eps: Decimal, row: &[(usize, Decimal)], s: Decimal) -> After {
        let key = (eps, s, row.to_vec());
        if let Some((k, after)) = self.memo.borrow().as_ref() {
            if *k == key {
                return *after;
            }
        }
        let after = self.compute_after(eps, row, s);
        *self.memo.borrow_mut() = Some((key, after));
        after
    }

    fn compute_after(&self, eps: Decimal, row: &[(usize, Decimal)], s: Decimal) -> After {
        let touches = self.touches(row);
        // The classes the release leaves: the cost is judged as it will be kept after it.
        let classes = self.members.len()
            + touches
                .iter()
                .map(|t| t.groups.len() - usize::from(!t.rest))
                .sum::<usize>();
        let parts = self.parts(&touches);
        let exact = self.pair.as_ref().filter(|_| classes <= self.cap);
        let Some(pair) = exact else {
            let norm: Vec<Cost> = parts
                .iter()
                .map(|p| self.norm[p.class as usize].saturating_add(charge(eps, p.coef, s)))
                .collect();
            let (cost, a, b) = Self::bound(&norm);
            return After {
                cost,
                cells: (parts[a].cell, parts[b].cell),
            };
        };
        // Every pair of parts with different coefficients gains the release's charge; two
        // parts of one class cost nothing so far.
        let (a0, b0) = self.worst_cells();
        let mut worst = After {
            cost: self.worst.0,
            cells: (a0, b0),
        };
        let by = by_coefficient(&parts);
        for (i, (ci, xs)) in by.iter().enumerate() {
            for (cj, ys) in &by[..i] {
                let add = charge(eps, *ci - *cj, s);
                for x in xs {
                    for y in ys {
                        let base = if x.class == y.class {
                            0
                        } else {
                            pair[at(x.class as usize, y.class as usize)]
                        };
                        let cost = base.saturating_add(add);
                        if cost > worst.cost {
                            worst = After {
                                cost,
                                cells: (x.cell, y.cell),
                            };
                        }
                    }
                }
            }
        }
        worst
    }

    fn worst_cells(&self) -> (usize, usize) {
        self.two_cells(self.worst.1, self.worst.2)
    }

    /// Records a release of `eps` with `row` and sensitivity `s`.
    pub fn record(&mut self, eps: Decimal, row: &[(usize, Decimal)], s: Decimal) {
        // Split: each group of a class the row splits becomes a class of its own, a copy of
        // the class so far; the cells left out (or, if none is, the first group) stay.
        for t in self.touches(row) {
            if !t.rest && t.groups.len() == 1 {
                continue;
            }
            let moving = if t.rest {
                &t.groups[..]
            } else {
                &t.groups[1..]
            };
            for (_, cells) in moving {
                self.split_off(t.class, cells);
            }
        }
        self.apply(eps, row, s);
        if self.members.len() > self.cap {
            self.pair = None;
        }
        *self.memo.borrow_mut() = None;
    }

    /// Moves `cells` out of class `a` into a new class with `a`'s costs so far.
    fn split_off(&mut self, a: u32, cells: &[u32]) {
        let b = self.members.len();
        for cell in cells {
            self.class_of[*cell as usize] = b as u32;
        }
        let moved: std::collections::HashSet<u32> = cells.iter().copied().collect();
        self.members[a as usize].retain(|c| !moved.contains(c));
        self.members.push(cells.to_vec());
        self.norm.push(self.norm[a as usize]);
        if let Some(pair) = &mut self.pair {
            // Row b of the triangle: b's cost against every older class is a's; 0 against a.
            for c in 0..b {
                let cost = if c == a as usize {
                    0
                } else {
                    pair[at(a as usize, c)]
                };
                pair.push(cost);
            }
        }
    }

    /// Adds the release's charges once its classes are split: every pair of classes with
    /// different coefficients, and every class's norm.
    fn apply(&mut self, eps: Decimal, row: &[(usize, Decimal)], s: Decimal) {
        let mut coef = vec![Decimal::ZERO; self.members.len()];
        for (cell, c) in row {
            if let Some(class) = self.class_of.get(*cell) {
                coef[*class as usize] = c.normalize();
            }
        }
        for (a, c) in coef.iter().enumerate() {
            self.norm[a] = self.norm[a].saturating_add(charge(eps, *c, s));
        }
        let Some(pair) = &mut self.pair else {
            return;
        };
        // Classes by coefficient: only pairs across two values change.
        let parts: Vec<Part> = coef
            .iter()
            .enumerate()
            .map(|(a, c)| Part {
                class: a as u32,
                coef: *c,
                cell: 0,
            })
            .collect();
        let by = by_coefficient(&parts);
        for (i, (ci, xs)) in by.iter().enumerate() {
            for (cj, ys) in &by[..i] {
                let add = charge(eps, *ci - *cj, s);
                for x in xs {
                    for y in ys {
                        let k = at(x.class as usize, y.class as usize);
                        pair[k] = pair[k].saturating_add(add);
                        if pair[k] > self.worst.0 {
                            self.worst = (pair[k], x.class, y.class);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A release: epsilon, sensitivity (max - min over every cell, untouched ones at 0), row.
    type Release = (Decimal, Decimal, Vec<(usize, Decimal)>);

    fn random_history(rng: &mut ChaCha8Rng, cells: usize, releases: usize) -> Vec<Release> {
        let eps = ["0.1", "0.05", "0.3", "1", "0.0001"];
        (0..releases)
            .map(|_| {
                let mut row: Vec<(usize, Decimal)> = Vec::new();
                for j in 0..cells {
                    let c = rng.random_range(-2i64..=3);
                    if rng.random_bool(0.4) && c != 0 {
                        row.push((j, Decimal::from(c)));
                    }
                }
                if row.is_empty() {
                    row.push((rng.random_range(0..cells), Decimal::ONE));
                }
                let dense: Vec<Decimal> = (0..cells)
                    .map(|j| {
                        row.iter()
                            .find(|(k, _)| *k == j)
                            .map_or(Decimal::ZERO, |r| r.1)
                    })
                    .collect();
                let s = dense.iter().max().copied().unwrap_or_default()
                    - dense.iter().min().copied().unwrap_or_default();
                let e = Decimal::from_str_exact(eps[rng.random_range(0..eps.len())])
                    .expect("a decimal");
                (e, s.max(Decimal::ONE), row)
            })
            .collect()
    }

    /// The cost of every pair, by brute force: the sum over releases of each one's charge.
    fn brute(cells: usize, history: &[Release]) -> (Cost, Vec<Cost>) {
        let coef = |row: &[(usize, Decimal)], j: usize| {
            row.iter()
                .find(|(k, _)| *k == j)
                .map_or(Decimal::ZERO, |r| r.1)
        };
        let mut worst = 0;
        for j in 0..cells {
            for k in 0..j {
                let cost: Cost = history
                    .iter()
                    .map(|(e, s, row)| charge(*e, coef(row, j) - coef(row, k), *s))
                    .sum();
                worst = worst.max(cost);
            }
        }
        let norms = (0..cells)
            .map(|j| {
                history
                    .iter()
                    .map(|(e, s, row)| charge(*e, coef(row, j), *s))
                    .sum()
            })
            .collect();
        (worst, norms)
    }

    #[test]
    fn the_costliest_pair_equals_brute_force_on_random_histories() {
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        for round in 0..60 {
            let cells = rng.random_range(2..14);
            let releases = rng.random_range(1..12);
            let history = random_history(&mut rng, cells, releases);
            let mut p = PairCosts::new(cells);
            for (i, (e, s, row)) in history.iter().enumerate() {
                let predicted = p.after(*e, row, *s);
                p.record(*e, row, *s);
                let (worst, norms) = brute(cells, &history[..=i]);
                assert_eq!(predicted.cost, worst, "round {round}, release {i}: after");
                assert_eq!(
                    to_decimal(worst),
                    p.worst().cost,
                    "round {round}, release {i}"
                );
                let got: Vec<Decimal> = p.cell_norms();
                let want: Vec<Decimal> = norms.into_iter().map(to_decimal).collect();
                assert_eq!(got, want, "round {round}, release {i}: norms");
            }
            // The pair named is one that costs that much.
            let w = p.worst();
            let (j, k) = w.cells;
            let pair_cost: Cost = history
                .iter()
                .map(|(e, s, row)| {
                    let c = |x: usize| {
                        row.iter()
                            .find(|(y, _)| *y == x)
                            .map_or(Decimal::ZERO, |r| r.1)
                    };
                    charge(*e, c(j) - c(k), *s)
                })
                .sum();
            assert_eq!(
                to_decimal(pair_cost),
                w.cost,
                "round {round}: the pair named"
            );
        }
    }

    #[test]
    fn beyond_the_cap_the_cost_is_bounded_never_under_counted() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for round in 0..20 {
            let cells = rng.random_range(6..14);
            let history = random_history(&mut rng, cells, 10);
            let mut p = PairCosts::with_cap(cells, 3);
            for (i, (e, s, row)) in history.iter().enumerate() {
                let predicted = p.after(*e, row, *s);
                p.record(*e, row, *s);
                let (worst, norms) = brute(cells, &history[..=i]);
                let mut sorted = norms.clone();
                sorted.sort_unstable_by(|a, b| b.cmp(a));
                let bound = sorted[0] + sorted.get(1).copied().unwrap_or(0);
                // The recorded cost is what the check predicted, never below the exact cost,
                // and beyond the cap no more than the two largest cell norms together.
                assert_eq!(
                    to_decimal(predicted.cost),
                    p.worst().cost,
                    "round {round}, {i}"
                );
                assert!(
                    to_decimal(worst) <= p.worst().cost,
                    "round {round}: never under"
                );
                if !p.exact() {
                    assert!(p.worst().cost <= to_decimal(bound), "round {round}, {i}");
                }
            }
            assert!(!p.exact() || p.classes() <= 3);
        }
    }

    /// The example: two counts over disjoint cells cost 0.2 under replace; ten counts
    /// over the ten cells of a partition cost 0.2, not 1.0.
    #[test]
    fn disjoint_counts_cost_twice_and_a_partition_costs_two() {
        let tenth = Decimal::new(1, 1);
        let mut p = PairCosts::new(3);
        p.record(tenth, &[(0, Decimal::ONE)], Decimal::ONE);
        p.record(tenth, &[(1, Decimal::ONE)], Decimal::ONE);
        assert_eq!(p.worst().cost, Decimal::new(2, 1));
        let mut p = PairCosts::new(11);
        for j in 0..10 {
            p.record(tenth, &[(j, Decimal::ONE)], Decimal::ONE);
        }
        assert_eq!(p.worst().cost, Decimal::new(2, 1));
        // a - b over disjoint a and b: S = 2 under replace, so the pair (a, b) costs eps.
        let mut p = PairCosts::new(3);
        p.record(
            tenth,
            &[(0, Decimal::ONE), (1, -Decimal::ONE)],
            Decimal::TWO,
        );
        assert_eq!(p.worst().cost, tenth);
        let (j, k) = p.worst().cells;
        assert_eq!((j.min(k), j.max(k)), (0, 1));
    }

    /// With nothing told apart every pair costs the same; the pair named is still two cells.
    #[test]
    fn the_pair_named_is_two_distinct_cells() {
        let p = PairCosts::new(4);
        let (j, k) = p.worst().cells;
        assert_ne!(j, k);
        // A count over every cell tells none apart (under replace it is the public n).
        let mut p = PairCosts::new(3);
        let all: Vec<(usize, Decimal)> = (0..3).map(|j| (j, Decimal::ONE)).collect();
        p.record(Decimal::ONE, &all, Decimal::ZERO);
        let (j, k) = p.worst().cells;
        assert_ne!(j, k);
        let a = p.after(Decimal::ONE, &all, Decimal::ZERO);
        assert_ne!(a.cells.0, a.cells.1);
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
