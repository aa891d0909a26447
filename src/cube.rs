//! Data cubes: public cells over a table's columns, and predicates compiled to rows of
//! coefficients over them (Xiao and Xiong 2012, section 2: every query is a row of `H`).
//!
//! `CUBE BY age (30, 65), sex ('F', 'M')` cuts `age` into the half-open intervals `age < 30`,
//! `30 <= age < 65`, `age >= 65` and splits `sex` into `'F'`, `'M'` and every other value;
//! each dimension also has a cell for missing values. The cells are the cartesian product,
//! numbered row-major (the last dimension varies fastest). Nothing here depends on the data:
//! the cells exist whether or not any row falls in them, so declaring a cube, naming its cells
//! or refusing a predicate reveals nothing.
//!
//! A predicate is accepted when it is a union of cells: on every cell it is true on all rows
//! or on none. Each condition is judged on each cell from the cell's bounds alone (under the
//! three-valued logic of [`crate::data::Predicate`]: a missing value makes a condition
//! unknown, and only rows where the predicate is true are counted). On an integer column the
//! cell `30 <= age < 65` holds the integers 30 to 64, so `age <= 29` and `age < 30` are the
//! same union. A predicate that is a union only through cancellation between its conditions
//! (`age < 25 OR age >= 25`) is refused: write it without the cancelling parts.

use crate::data::{CmpOp, ColumnType, Predicate, Value};

/// The most cells a cube may have (a BLUE over them factorises a cells x cells matrix).
pub use crate::privacy::MAX_CELLS;

/// A declared cube over a table's columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Cube {
    dims: Vec<Dim>,
    cells: usize,
}

/// One dimension: a column and its cuts or listed values.
#[derive(Debug, Clone, PartialEq)]
pub struct Dim {
    /// The column index in the table.
    pub column: usize,
    /// The column's name.
    pub name: String,
    /// Cuts or values.
    pub kind: DimKind,
    /// The cuts or values as written in the declaration, for messages.
    pub texts: Vec<String>,
}

/// How a dimension splits its column.
#[derive(Debug, Clone, PartialEq)]
pub enum DimKind {
    /// An integer column cut at increasing numbers.
    Integer(Vec<f64>),
    /// A float column cut at increasing numbers.
    Float(Vec<f64>),
    /// A text or boolean column split by distinct listed values (and "other").
    Values(Vec<Value>),
}

/// Why a cube cannot be declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CubeError {
    /// Cuts not strictly increasing: the index of the offending cut in its dimension.
    CutsNotIncreasing(usize, usize),
    /// A value listed twice: dimension and index.
    DuplicateValue(usize, usize),
    /// A column used in two dimensions: the second dimension's index.
    DuplicateColumn(usize),
    /// More cells than [`MAX_CELLS`].
    TooManyCells,
}

/// Why a predicate is not a union of cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotUnion {
    /// It names a column that is not a dimension of the cube.
    NotDimension {
        /// The column index.
        column: usize,
    },
    /// A condition splits a cell.
    Splits {
        /// The index of the splitting condition among the predicate's conditions, left to
        /// right.
        atom: usize,
        /// The cell split.
        cell: usize,
        /// The dimension along which the condition splits it.
        dim: usize,
        /// What would make it a union, in words.
        fix: String,
        /// The declaration with the cuts or values added, when that is the fix.
        declaration: Option<String>,
    },
}

/// The possible truth values of a condition over the rows of a cell, as a set of bits.
const T: u8 = 1;
const F: u8 = 2;
const U: u8 = 4;

impl Cube {
    /// A cube from its dimensions, checked: cuts increase, values are distinct, columns are
    /// not repeated, and the cells number at most [`MAX_CELLS`].
    pub fn new(dims: Vec<Dim>) -> Result<Cube, CubeError> {
        let mut cells = 1usize;
        for (d, dim) in dims.iter().enumerate() {
            if dims[..d].iter().any(|o| o.column == dim.column) {
                return Err(CubeError::DuplicateColumn(d));
            }
            match &dim.kind {
                DimKind::Integer(cuts) | DimKind::Float(cuts) => {
                    if let Some(i) = (1..cuts.len()).find(|&i| cuts[i] <= cuts[i - 1]) {
                        return Err(CubeError::CutsNotIncreasing(d, i));
                    }
                }
                DimKind::Values(values) => {
                    if let Some(i) = (1..values.len()).find(|&i| values[..i].contains(&values[i])) {
                        return Err(CubeError::DuplicateValue(d, i));
                    }
                }
            }
            cells = cells
                .checked_mul(dim.len())
                .filter(|&c| c <= MAX_CELLS)
                .ok_or(CubeError::TooManyCells)?;
        }
        Ok(Cube { dims, cells })
    }

    /// The number of cells.
    pub fn cells(&self) -> usize {
        self.cells
    }

    /// The dimensions.
    pub fn dims(&self) -> &[Dim] {
        &self.dims
    }

    /// The coordinates of cell `cell`, one per dimension.
    fn coords(&self, cell: usize) -> Vec<usize> {
        let mut coords = vec![0; self.dims.len()];
        self.coords_into(cell, &mut coords);
        coords
    }

    /// The same into `coords` (one per dimension): a cube's cells are visited without
    /// allocating for each.
    fn coords_into(&self, mut cell: usize, coords: &mut [usize]) {
        for (d, dim) in self.dims.iter().enumerate().rev() {
            coords[d] = cell % dim.len();
            cell /= dim.len();
        }
    }

    /// The cell in words: `30 <= age < 65, sex = 'F'`.
    pub fn cell_name(&self, cell: usize) -> String {
        self.coords(cell)
            .iter()
            .zip(&self.dims)
            .map(|(&c, dim)| dim.coord_name(c))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// How each dimension buckets its column, for counting every cell in one pass
    /// ([`crate::data::count_cells`]).
    pub fn buckets(&self) -> Vec<(usize, crate::data::Buckets)> {
        use crate::data::Buckets;
        self.dims
            .iter()
            .map(|d| {
                let b = match &d.kind {
                    DimKind::Integer(cuts) | DimKind::Float(cuts) => Buckets::Cuts(cuts.clone()),
                    DimKind::Values(values) => Buckets::Values(values.clone()),
                };
                (d.column, b)
            })
            .collect()
    }

    /// The values each non-missing coordinate of numeric dimension `dim` holds, `(lo, hi)`:
    /// on an integer column the whole numbers `ceil(cut) ..= ceil(next) - 1`; on a float
    /// column `[cut, next)`, `hi` the exclusive end. `None` for a dimension of listed values.
    pub fn bin_bounds(&self, dim: usize) -> Option<Vec<(f64, f64)>> {
        let d = self.dims.get(dim)?;
        match &d.kind {
            DimKind::Integer(cuts) => Some((0..=cuts.len()).map(|c| int_range(cuts, c)).collect()),
            DimKind::Float(cuts) => Some((0..=cuts.len()).map(|c| float_range(cuts, c)).collect()),
            DimKind::Values(_) => None,
        }
    }

    /// Whether this cube refines `old` (every cell of `old` is a union of cells of this one),
    /// and if so, for each of this cube's cells the cell of `old` that holds it. Both cubes
    /// are over the same table. Every dimension of `old` must be one of this cube's, cut at
    /// every number `old` cuts it at (on an integer column, cuts that split the integers the
    /// same way count as the same) or listing every value `old` lists; dimensions `old` lacks
    /// may be added. Decided from the declarations alone: nothing here reads the data.
    pub fn refinement_of(&self, old: &Cube) -> Option<Vec<usize>> {
        // For each dimension of `old`: this cube's dimension over the same column, and the
        // coordinate of `old`'s that holds each of its coordinates.
        let maps = old
            .dims
            .iter()
            .map(|o| {
                let d = self.dim_of_column(o.column)?;
                Some((d, self.dims[d].coords_within(o)?))
            })
            .collect::<Option<Vec<_>>>()?;
        let mut coords = vec![0; self.dims.len()];
        let parents = (0..self.cells)
            .map(|j| {
                self.coords_into(j, &mut coords);
                maps.iter()
                    .zip(&old.dims)
                    .fold(0, |cell, ((d, map), o)| cell * o.len() + map[coords[*d]])
            })
            .collect::<Vec<usize>>();
        // Every old cell holds a new one (an old interval holding no integer may hold none:
        // then the history is taken in full rather than spread).
        let mut covered = vec![false; old.cells];
        for &p in &parents {
            covered[p] = true;
        }
        (!covered.contains(&false)).then_some(parents)
    }

    /// The dimension over table column `column`, if there is one.
    pub fn dim_of_column(&self, column: usize) -> Option<usize> {
        self.dims.iter().position(|d| d.column == column)
    }

    /// The cells of `within` grouped by their coordinates along the dimensions `by` (in that
    /// order), each group named by those coordinates (`sex = 'F'`), in the order of the
    /// coordinates; each cell a group of its own when `by` is empty.
    pub fn groups(&self, by: &[usize], within: &[bool]) -> Vec<(String, Vec<usize>)> {
        if by.is_empty() {
            return (0..self.cells)
                .filter(|&j| within[j])
                .map(|j| (self.cell_name(j), vec![j]))
                .collect();
        }
        let mut groups: std::collections::BTreeMap<Vec<usize>, Vec<usize>> = Default::default();
        let mut coords = vec![0; self.dims.len()];
        for j in (0..self.cells).filter(|&j| within[j]) {
            self.coords_into(j, &mut coords);
            let key: Vec<usize> = by.iter().map(|&d| coords[d]).collect();
            groups.entry(key).or_default().push(j);
        }
        groups
            .into_iter()
            .map(|(key, cells)| {
                let name = key
                    .iter()
                    .zip(by)
                    .map(|(&c, &d)| self.dims[d].coord_name(c))
                    .collect::<Vec<_>>()
                    .join(", ");
                (name, cells)
            })
            .collect()
    }

    /// The cells on which `predicate` is true (a union of cells), or why it is not one.
    pub fn cells_of(&self, predicate: &Predicate) -> Result<Vec<bool>, NotUnion> {
        if let Some(column) = first_column_outside(predicate, &self.dims) {
            return Err(NotUnion::NotDimension { column });
        }
        let mut out = Vec::with_capacity(self.cells);
        let mut coords = vec![0; self.dims.len()];
        for cell in 0..self.cells {
            self.coords_into(cell, &mut coords);
            let set = self.truth(predicate, &coords);
            if set == T {
                out.push(true);
            } else if set & T == 0 {
                out.push(false);
            } else {
                return Err(self.split(predicate, cell, &coords));
            }
        }
        Ok(out)
    }

    /// The possible truth values of `p` over the rows of the cell at `coords`.
    fn truth(&self, p: &Predicate, coords: &[usize]) -> u8 {
        match p {
            Predicate::And(a, b) => combine(self.truth(a, coords), self.truth(b, coords), and3),
            Predicate::Or(a, b) => combine(self.truth(a, coords), self.truth(b, coords), or3),
            Predicate::Not(a) => {
                let s = self.truth(a, coords);
                (if s & T != 0 { F } else { 0 }) | (if s & F != 0 { T } else { 0 }) | (s & U)
            }
            atom => {
                let d = self.dim_of(atom);
                self.dims[d].atom(atom, coords[d])
            }
        }
    }

    fn dim_of(&self, atom: &Predicate) -> usize {
        let column = atom_column(atom);
        self.dims
            .iter()
            .position(|d| d.column == column)
            .expect("columns outside the cube were refused first")
    }

    /// The first condition that splits `cell`, and the fix.
    fn split(&self, p: &Predicate, cell: usize, coords: &[usize]) -> NotUnion {
        let mut atoms = Vec::new();
        collect_atoms(p, &mut atoms);
        let splitting = atoms.into_iter().enumerate().find_map(|(i, atom)| {
            let d = self.dim_of(atom);
            let s = self.dims[d].atom(atom, coords[d]);
            (s & T != 0 && s != T).then_some((i, atom, d))
        });
        match splitting {
            Some((i, atom, dim)) => {
                let (fix, add) = self.dims[dim].fix(atom, coords[dim]);
                NotUnion::Splits {
                    atom: i,
                    cell,
                    dim,
                    fix,
                    declaration: add.map(|add| self.declaration_with(dim, add)),
                }
            }
            // Every condition is constant on the cell, so their combination is too; kept total.
            None => NotUnion::Splits {
                atom: 0,
                cell,
                dim: 0,
                fix: "rewrite the condition".into(),
                declaration: None,
            },
        }
    }

    /// The declaration of this cube, canonical: `CUBE BY age (30, 65), sex ('F', 'M')`.
    pub fn declaration(&self) -> String {
        self.declaration_with(usize::MAX, Vec::new())
    }

    /// The declaration with `add` (texts of cuts or values) merged into dimension `dim`.
    fn declaration_with(&self, dim: usize, add: Vec<(f64, String)>) -> String {
        let dims: Vec<String> = self
            .dims
            .iter()
            .enumerate()
            .map(|(d, x)| {
                let mut points: Vec<(f64, String)> = match &x.kind {
                    DimKind::Integer(c) | DimKind::Float(c) => {
                        c.iter().copied().zip(x.texts.iter().cloned()).collect()
                    }
                    DimKind::Values(_) => x.texts.iter().map(|t| (0.0, t.clone())).collect(),
                };
                if d == dim {
                    points.extend(add.iter().cloned());
                    if !matches!(x.kind, DimKind::Values(_)) {
                        points.sort_by(|a, b| a.0.total_cmp(&b.0));
                    }
                }
                let list: Vec<String> = points.into_iter().map(|(_, t)| t).collect();
                format!("{} ({})", ident(&x.name), list.join(", "))
            })
            .collect();
        format!("CUBE BY {}", dims.join(", "))
    }
}

impl Dim {
    /// Coordinates along this dimension: intervals or values, then "other" (values only),
    /// then missing.
    pub fn len(&self) -> usize {
        match &self.kind {
            DimKind::Integer(c) | DimKind::Float(c) => c.len() + 2,
            DimKind::Values(v) => v.len() + 2,
        }
    }

    /// Never true: a dimension has at least its missing cell.
    pub fn is_empty(&self) -> bool {
        false
    }

    fn coord_name(&self, c: usize) -> String {
        let name = ident(&self.name);
        if c + 1 == self.len() {
            return format!("{name} missing");
        }
        match &self.kind {
            DimKind::Integer(cuts) | DimKind::Float(cuts) => {
                let k = cuts.len();
                if c == 0 {
                    format!("{name} < {}", self.texts[0])
                } else if c == k {
                    format!("{name} >= {}", self.texts[k - 1])
                } else {
                    format!("{} <= {name} < {}", self.texts[c - 1], self.texts[c])
                }
            }
            DimKind::Values(values) => {
                if c < values.len() {
                    format!("{name} = {}", self.texts[c])
                } else {
                    format!("{name} other")
                }
            }
        }
    }

    /// For each coordinate of this dimension, the coordinate of `old` (over the same column)
    /// that holds every value it holds; `None` when one straddles two of `old`'s.
    fn coords_within(&self, old: &Dim) -> Option<Vec<usize>> {
        let missing = |c: usize| c + 1 == self.len();
        (0..self.len())
            .map(|c| {
                if missing(c) {
                    return Some(old.len() - 1);
                }
                match (&self.kind, &old.kind) {
                    (DimKind::Integer(new), DimKind::Integer(cuts)) => {
                        let (lo, hi) = int_range(new, c);
                        // The last coordinate of `old` starting at or before `lo` (by binary
                        // search: cubes of thousands of cuts are refined at every LOAD).
                        let at = cuts.partition_point(|cut| cut.ceil() <= lo);
                        let near = at.saturating_sub(1)..=(at + 1).min(cuts.len());
                        // An interval holding no integer (cuts 30.2 and 30.5) holds no row:
                        // the same empty interval of `old`, or the coordinate holding its start.
                        near.clone()
                            .find(|&k| int_range(cuts, k) == (lo, hi))
                            .or_else(|| {
                                near.clone().find(|&k| {
                                    let (olo, ohi) = int_range(cuts, k);
                                    olo <= lo && hi.max(lo) <= ohi
                                })
                            })
                    }
                    (DimKind::Float(new), DimKind::Float(cuts)) => {
                        let (lo, hi) = float_range(new, c);
                        let k = cuts.partition_point(|cut| *cut <= lo);
                        let (olo, ohi) = float_range(cuts, k);
                        (olo <= lo && hi <= ohi).then_some(k)
                    }
                    (DimKind::Values(new), DimKind::Values(listed)) => match new.get(c) {
                        // A listed value: its own coordinate in `old`, or `old`'s other.
                        Some(v) => Some(listed.iter().position(|l| l == v).unwrap_or(listed.len())),
                        // This dimension's other holds every value it does not list: within
                        // `old`'s other only if `old` lists nothing this one does not.
                        None => listed
                            .iter()
                            .all(|l| new.contains(l))
                            .then_some(listed.len()),
                    },
                    _ => None,
                }
            })
            .collect()
    }

    /// The truth values of a condition on this dimension's column over coordinate `c`.
    fn atom(&self, atom: &Predicate, c: usize) -> u8 {
        if c + 1 == self.len() {
            return U; // missing: every comparison is unknown
        }
        match &self.kind {
            DimKind::Integer(cuts) => {
                let (lo, hi) = int_range(cuts, c);
                int_atom(atom, lo, hi)
            }
            DimKind::Float(cuts) => {
                let lo = if c == 0 {
                    f64::NEG_INFINITY
                } else {
                    cuts[c - 1]
                };
                let hi = if c == cuts.len() {
                    f64::INFINITY
                } else {
                    cuts[c]
                };
                float_atom(atom, lo, hi)
            }
            DimKind::Values(values) => {
                if c < values.len() {
                    if value_holds(atom, &values[c]) {
                        T
                    } else {
                        F
                    }
                } else {
                    other_atom(atom, values)
                }
            }
        }
    }

    /// What to change so that `atom` no longer splits coordinate `c`, and the cuts or values
    /// to add when that is the fix.
    fn fix(&self, atom: &Predicate, c: usize) -> (String, Option<Vec<(f64, String)>>) {
        let name = &ident(&self.name);
        let say = |s: String| (s, None);
        match &self.kind {
            DimKind::Integer(cuts) => {
                let (lo, hi) = int_range(cuts, c);
                let mut new: Vec<f64> = int_boundaries(atom)
                    .into_iter()
                    .filter(|&b| b > lo && b <= hi)
                    .collect();
                new.sort_by(f64::total_cmp);
                new.dedup();
                if new.is_empty() {
                    say("rewrite the condition as a union of the cells".into())
                } else {
                    (
                        format!("add the cut{} {} to {name}", plural(new.len()), list(&new)),
                        Some(new.iter().map(|&x| (x, number(x))).collect()),
                    )
                }
            }
            DimKind::Float(_) => match atom {
                Predicate::Compare {
                    op: CmpOp::Lt | CmpOp::Ge,
                    value: Value::Number(x),
                    ..
                } => (
                    format!("add the cut {} to {name}", number(*x)),
                    Some(vec![(*x, number(*x))]),
                ),
                Predicate::Compare {
                    op: CmpOp::Le | CmpOp::Gt,
                    value: Value::Number(x),
                    ..
                } => say(format!(
                    "cells of a float column are half-open: write {name} < {x} or {name} >= {x} \
                     and add the cut {x} to {name}",
                    x = number(*x)
                )),
                _ => say(format!(
                    "cells of a float column are half-open ranges: compare {name} with < and >= \
                     at cuts of the cube"
                )),
            },
            DimKind::Values(values) => {
                let mut unlisted: Vec<String> = Vec::new();
                for v in atom_values(atom)
                    .into_iter()
                    .filter(|v| !values.contains(v))
                {
                    let text = value_text(v);
                    if !unlisted.contains(&text) {
                        unlisted.push(text);
                    }
                }
                match atom {
                    Predicate::Compare {
                        op: CmpOp::Eq | CmpOp::Ne,
                        ..
                    }
                    | Predicate::In { .. }
                        if !unlisted.is_empty() =>
                    {
                        (
                            format!("add {} to the values of {name}", unlisted.join(", ")),
                            Some(unlisted.iter().map(|t| (0.0, t.clone())).collect()),
                        )
                    }
                    _ => say(format!(
                        "the cells of {name} are its listed values: compare it with = or IN"
                    )),
                }
            }
        }
    }
}

/// The integers `lo..=hi` of interval coordinate `c` of an integer dimension: `[cut, next)`
/// holds `ceil(cut) ..= ceil(next) - 1`. Infinite ends stay infinite.
fn int_range(cuts: &[f64], c: usize) -> (f64, f64) {
    let lo = if c == 0 {
        f64::NEG_INFINITY
    } else {
        cuts[c - 1].ceil()
    };
    let hi = if c == cuts.len() {
        f64::INFINITY
    } else {
        cuts[c].ceil() - 1.0
    };
    (lo, hi)
}

/// The half-open interval `[lo, hi)` of coordinate `c` of a float dimension cut at `cuts`.
fn float_range(cuts: &[f64], c: usize) -> (f64, f64) {
    let lo = if c == 0 {
        f64::NEG_INFINITY
    } else {
        cuts[c - 1]
    };
    let hi = cuts.get(c).copied().unwrap_or(f64::INFINITY);
    (lo, hi)
}

/// The set of integers where a numeric condition holds, as closed ranges.
fn int_set(atom: &Predicate) -> Vec<(f64, f64)> {
    let inf = f64::INFINITY;
    let num = |v: &Value| match v {
        Value::Number(x) => Some(*x),
        _ => None,
    };
    match atom {
        Predicate::Compare { op, value, .. } => {
            let Some(x) = num(value) else {
                return Vec::new();
            };
            match op {
                CmpOp::Lt => vec![(-inf, x.ceil() - 1.0)],
                CmpOp::Le => vec![(-inf, x.floor())],
                CmpOp::Gt => vec![(x.floor() + 1.0, inf)],
                CmpOp::Ge => vec![(x.ceil(), inf)],
                CmpOp::Eq if x.fract() == 0.0 => vec![(x, x)],
                CmpOp::Eq => Vec::new(),
                CmpOp::Ne if x.fract() == 0.0 => vec![(-inf, x - 1.0), (x + 1.0, inf)],
                CmpOp::Ne => vec![(-inf, inf)],
            }
        }
        Predicate::Between { low, high, .. } => match (num(low), num(high)) {
            (Some(a), Some(b)) => vec![(a.ceil(), b.floor())],
            _ => Vec::new(),
        },
        Predicate::In { values, .. } => {
            let mut points: Vec<f64> = values
                .iter()
                .filter_map(num)
                .filter(|x| x.fract() == 0.0)
                .collect();
            points.sort_by(f64::total_cmp);
            points.dedup();
            points.into_iter().map(|x| (x, x)).collect()
        }
        _ => Vec::new(),
    }
}

/// Integers up to this magnitude are exact in an `f64`, and so is one more or less.
const EXACT: f64 = 4_503_599_627_370_496.0; // 2^52

/// A numeric condition over the integers `lo..=hi` (a non-empty or empty range).
///
/// Decided by containment, never by counting integers (a count of an open-ended cell is
/// infinite on both sides of any comparison): true when one range of the condition's set,
/// after joining ranges that touch, contains the cell; false when none meets it. Bounds beyond
/// 2^52, where `x + 1` may equal `x`, are only trusted for plain comparisons; otherwise the
/// condition is taken to split the cell.
fn int_atom(atom: &Predicate, lo: f64, hi: f64) -> u8 {
    if lo > hi {
        return F; // no integer lies in the cell: it holds no row
    }
    let set = int_set(atom);
    let meets = set.iter().any(|&(a, b)| a.max(lo) <= b.min(hi));
    if !meets {
        return F;
    }
    let huge = |x: f64| x.is_finite() && x.abs() >= EXACT;
    if set.iter().any(|&(a, b)| huge(a) || huge(b)) || huge(lo) || huge(hi) {
        return if set.iter().any(|&(a, b)| a <= lo && hi <= b) && set.len() == 1 {
            T
        } else {
            T | F
        };
    }
    // Join ranges that touch (the set is sorted and disjoint): points 30 and 31 cover 30..=31.
    let mut joined: Vec<(f64, f64)> = Vec::with_capacity(set.len());
    for (a, b) in set {
        match joined.last_mut() {
            Some(last) if a <= last.1 + 1.0 => last.1 = last.1.max(b),
            _ => joined.push((a, b)),
        }
    }
    if joined.iter().any(|&(a, b)| a <= lo && hi <= b) {
        T
    } else {
        T | F
    }
}

/// The integer cuts that would make a numeric condition a union of cells.
fn int_boundaries(atom: &Predicate) -> Vec<f64> {
    int_set(atom)
        .into_iter()
        .flat_map(|(a, b)| [a, b + 1.0])
        .filter(|x| x.is_finite())
        .collect()
}

/// A numeric condition over the reals of `[lo, hi)` (`lo < hi`).
fn float_atom(atom: &Predicate, lo: f64, hi: f64) -> u8 {
    let num = |v: &Value| match v {
        Value::Number(x) => Some(*x),
        _ => None,
    };
    // [lo, hi) against a set described by its own bounds.
    let interval = |a: f64, a_closed: bool, b: f64, b_closed: bool| -> u8 {
        // Disjoint: the set ends before lo, or starts at or after hi.
        let ends_before = b < lo || (b == lo && !b_closed);
        let starts_after = a >= hi;
        if ends_before || starts_after {
            return F;
        }
        let covers_lo = a < lo || (a == lo && (a_closed || lo.is_infinite()));
        let covers_hi = b >= hi;
        if covers_lo && covers_hi {
            T
        } else {
            T | F
        }
    };
    let inside = |x: f64| lo <= x && x < hi;
    match atom {
        Predicate::Compare { op, value, .. } => {
            let Some(x) = num(value) else {
                return F;
            };
            let inf = f64::INFINITY;
            match op {
                CmpOp::Lt => interval(-inf, false, x, false),
                CmpOp::Le => interval(-inf, false, x, true),
                CmpOp::Gt => interval(x, false, inf, false),
                CmpOp::Ge => interval(x, true, inf, false),
                CmpOp::Eq if inside(x) => T | F,
                CmpOp::Eq => F,
                CmpOp::Ne if inside(x) => T | F,
                CmpOp::Ne => T,
            }
        }
        Predicate::Between { low, high, .. } => match (num(low), num(high)) {
            (Some(a), Some(b)) if a <= b => interval(a, true, b, true),
            _ => F,
        },
        Predicate::In { values, .. } => {
            if values.iter().filter_map(num).any(inside) {
                T | F
            } else {
                F
            }
        }
        _ => F,
    }
}

/// A condition on one listed value.
fn value_holds(atom: &Predicate, v: &Value) -> bool {
    let cmp = |a: &Value, b: &Value| match (a, b) {
        (Value::Text(x), Value::Text(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        _ => None,
    };
    match atom {
        Predicate::Compare { op, value, .. } => cmp(v, value).is_some_and(|o| op.holds(o)),
        Predicate::In { values, .. } => values
            .iter()
            .any(|x| cmp(v, x) == Some(std::cmp::Ordering::Equal)),
        Predicate::Between { low, high, .. } => {
            cmp(v, low).is_some_and(|o| o.is_ge()) && cmp(v, high).is_some_and(|o| o.is_le())
        }
        _ => false,
    }
}

/// A condition on the "other" coordinate: every value not listed.
fn other_atom(atom: &Predicate, listed: &[Value]) -> u8 {
    let unlisted = atom_values(atom).iter().any(|v| !listed.contains(v));
    match atom {
        Predicate::Compare { op: CmpOp::Eq, .. } | Predicate::In { .. } => {
            if unlisted {
                T | F
            } else {
                F
            }
        }
        Predicate::Compare { op: CmpOp::Ne, .. } => {
            if unlisted {
                T | F
            } else {
                T
            }
        }
        // An order on unknown values: some may fall on each side.
        _ => T | F,
    }
}

fn atom_values(atom: &Predicate) -> Vec<&Value> {
    match atom {
        Predicate::Compare { value, .. } => vec![value],
        Predicate::In { values, .. } => values.iter().collect(),
        Predicate::Between { low, high, .. } => vec![low, high],
        _ => Vec::new(),
    }
}

fn atom_column(atom: &Predicate) -> usize {
    match atom {
        Predicate::Compare { column, .. }
        | Predicate::In { column, .. }
        | Predicate::Between { column, .. } => *column,
        _ => usize::MAX,
    }
}

fn collect_atoms<'a>(p: &'a Predicate, out: &mut Vec<&'a Predicate>) {
    match p {
        Predicate::And(a, b) | Predicate::Or(a, b) => {
            collect_atoms(a, out);
            collect_atoms(b, out);
        }
        Predicate::Not(a) => collect_atoms(a, out),
        atom => out.push(atom),
    }
}

fn first_column_outside(p: &Predicate, dims: &[Dim]) -> Option<usize> {
    let mut atoms = Vec::new();
    collect_atoms(p, &mut atoms);
    atoms
        .into_iter()
        .map(atom_column)
        .find(|c| !dims.iter().any(|d| d.column == *c))
}

fn combine(a: u8, b: u8, op: fn(u8, u8) -> u8) -> u8 {
    let mut out = 0;
    for x in [T, F, U] {
        for y in [T, F, U] {
            if a & x != 0 && b & y != 0 {
                out |= op(x, y);
            }
        }
    }
    out
}

/// Kleene AND of two single truth values.
fn and3(x: u8, y: u8) -> u8 {
    if x == F || y == F {
        F
    } else if x == U || y == U {
        U
    } else {
        T
    }
}

/// Kleene OR of two single truth values.
fn or3(x: u8, y: u8) -> u8 {
    if x == T || y == T {
        T
    } else if x == U || y == U {
        U
    } else {
        F
    }
}

fn ident(name: &str) -> String {
    crate::ast::Ident {
        name: name.to_string(),
        span: Default::default(),
    }
    .to_string()
}

fn value_text(v: &Value) -> String {
    match v {
        Value::Number(x) => number(*x),
        Value::Text(t) => format!("'{}'", t.replace('\'', "''")),
        Value::Bool(b) => if *b { "TRUE" } else { "FALSE" }.into(),
    }
}

fn number(x: f64) -> String {
    format!("{x}")
}

fn list(xs: &[f64]) -> String {
    xs.iter()
        .map(|x| number(*x))
        .collect::<Vec<_>>()
        .join(" and ")
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The type a dimension's literals must have for a column type: numbers cut numeric columns,
/// strings and booleans list values.
pub fn dim_kind(ty: ColumnType, numbers: Vec<f64>, values: Vec<Value>) -> DimKind {
    match ty {
        ColumnType::Integer => DimKind::Integer(numbers),
        ColumnType::Float => DimKind::Float(numbers),
        ColumnType::Text | ColumnType::Boolean => DimKind::Values(values),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn age_sex() -> Cube {
        Cube::new(vec![
            Dim {
                column: 0,
                name: "age".into(),
                kind: DimKind::Integer(vec![30.0, 65.0]),
                texts: vec!["30".into(), "65".into()],
            },
            Dim {
                column: 1,
                name: "sex".into(),
                kind: DimKind::Values(vec![Value::Text("F".into()), Value::Text("M".into())]),
                texts: vec!["'F'".into(), "'M'".into()],
            },
        ])
        .expect("a valid cube")
    }

    fn cmp(column: usize, op: CmpOp, value: Value) -> Predicate {
        Predicate::Compare { column, op, value }
    }

    fn cells(cube: &Cube, p: &Predicate) -> Vec<usize> {
        let row = cube.cells_of(p).expect("a union of cells");
        (0..row.len()).filter(|&i| row[i]).collect()
    }

    #[test]
    fn cells_are_the_product_with_missing_and_other() {
        let cube = age_sex();
        assert_eq!(cube.cells(), 4 * 4);
        assert_eq!(cube.cell_name(0), "age < 30, sex = 'F'");
        assert_eq!(cube.cell_name(6), "30 <= age < 65, sex other");
        assert_eq!(cube.cell_name(15), "age missing, sex missing");
    }

    #[test]
    fn integer_columns_read_le_29_as_lt_30() {
        let cube = age_sex();
        let lt = cells(&cube, &cmp(0, CmpOp::Lt, Value::Number(30.0)));
        let le = cells(&cube, &cmp(0, CmpOp::Le, Value::Number(29.0)));
        assert_eq!(lt, vec![0, 1, 2, 3]);
        assert_eq!(lt, le);
        // Missing ages are unknown, so NOT age < 30 leaves them out.
        let not = Predicate::Not(Box::new(cmp(0, CmpOp::Lt, Value::Number(30.0))));
        assert_eq!(cells(&cube, &not), vec![4, 5, 6, 7, 8, 9, 10, 11]);
    }

    #[test]
    fn a_split_names_the_cut_to_add() {
        let cube = age_sex();
        match cube.cells_of(&cmp(0, CmpOp::Le, Value::Number(40.0))) {
            Err(NotUnion::Splits {
                cell,
                dim,
                fix,
                declaration,
                ..
            }) => {
                assert_eq!(cube.cell_name(cell), "30 <= age < 65, sex = 'F'");
                assert_eq!(dim, 0);
                assert_eq!(fix, "add the cut 41 to age");
                assert_eq!(
                    declaration.as_deref(),
                    Some("CUBE BY age (30, 41, 65), sex ('F', 'M')")
                );
            }
            other => panic!("expected a split, got {other:?}"),
        }
        match cube.cells_of(&cmp(1, CmpOp::Eq, Value::Text("X".into()))) {
            Err(NotUnion::Splits { fix, .. }) => assert_eq!(fix, "add 'X' to the values of sex"),
            other => panic!("expected a split, got {other:?}"),
        }
        assert_eq!(
            cube.cells_of(&cmp(2, CmpOp::Eq, Value::Number(1.0))),
            Err(NotUnion::NotDimension { column: 2 })
        );
    }

    /// Open-ended cells hold infinitely many integers: coverage is decided by containment.
    #[test]
    fn open_ended_cells_are_not_covered_by_a_part() {
        let cube = Cube::new(vec![Dim {
            column: 0,
            name: "age".into(),
            kind: DimKind::Integer(vec![65.0]),
            texts: vec!["65".into()],
        }])
        .expect("a valid cube");
        for p in [
            cmp(0, CmpOp::Lt, Value::Number(30.0)),
            cmp(0, CmpOp::Ne, Value::Number(10.0)),
            cmp(0, CmpOp::Gt, Value::Number(1e300)),
        ] {
            assert!(cube.cells_of(&p).is_err(), "{p:?} must split a cell");
        }
        assert_eq!(
            cells(&cube, &cmp(0, CmpOp::Le, Value::Number(64.0))),
            vec![0]
        );
        let huge = Cube::new(vec![Dim {
            column: 0,
            name: "age".into(),
            kind: DimKind::Integer(vec![0.0, 2f64.powi(60)]),
            texts: vec!["0".into(), "1152921504606846976".into()],
        }])
        .expect("a valid cube");
        assert!(huge
            .cells_of(&cmp(0, CmpOp::Ne, Value::Number(40.0)))
            .is_err());
        let points = Cube::new(vec![Dim {
            column: 0,
            name: "age".into(),
            kind: DimKind::Integer(vec![30.0, 32.0]),
            texts: vec!["30".into(), "32".into()],
        }])
        .expect("a valid cube");
        let listed = Predicate::In {
            column: 0,
            values: vec![Value::Number(31.0), Value::Number(30.0)],
        };
        assert_eq!(cells(&points, &listed), vec![1]);
    }

    #[test]
    fn values_and_other_cells_compose() {
        let cube = age_sex();
        let f = cmp(1, CmpOp::Eq, Value::Text("F".into()));
        assert_eq!(cells(&cube, &f), vec![0, 4, 8, 12]);
        let not_f = cmp(1, CmpOp::Ne, Value::Text("F".into()));
        assert_eq!(cells(&cube, &not_f), vec![1, 2, 5, 6, 9, 10, 13, 14]);
        let both = Predicate::And(
            Box::new(f),
            Box::new(cmp(0, CmpOp::Ge, Value::Number(65.0))),
        );
        assert_eq!(cells(&cube, &both), vec![8]);
    }

    #[test]
    fn float_cells_are_half_open() {
        let cube = Cube::new(vec![Dim {
            column: 0,
            name: "w".into(),
            kind: DimKind::Float(vec![1.5]),
            texts: vec!["1.5".into()],
        }])
        .expect("a valid cube");
        assert_eq!(
            cells(&cube, &cmp(0, CmpOp::Lt, Value::Number(1.5))),
            vec![0]
        );
        assert_eq!(
            cells(&cube, &cmp(0, CmpOp::Ge, Value::Number(1.5))),
            vec![1]
        );
        assert!(cube
            .cells_of(&cmp(0, CmpOp::Le, Value::Number(1.5)))
            .is_err());
        assert!(cube
            .cells_of(&cmp(0, CmpOp::Lt, Value::Number(2.0)))
            .is_err());
    }

    #[test]
    fn declarations_are_checked() {
        let dim = |kind, column| Dim {
            column,
            name: "c".into(),
            kind,
            texts: vec![],
        };
        assert_eq!(
            Cube::new(vec![dim(DimKind::Integer(vec![3.0, 3.0]), 0)]),
            Err(CubeError::CutsNotIncreasing(0, 1))
        );
        let many: Vec<f64> = (0..200).map(f64::from).collect();
        assert_eq!(
            Cube::new(vec![
                dim(DimKind::Integer(many.clone()), 0),
                dim(DimKind::Integer(many), 1)
            ]),
            Err(CubeError::TooManyCells)
        );
    }

    /// The cell of `cube` holding a row with `age` (column 0, integer) and `sex` (column 1),
    /// found from the declarations by brute force, coordinate by coordinate.
    fn cell_of(cube: &Cube, age: Option<i64>, sex: Option<&str>) -> usize {
        cube.dims.iter().fold(0, |cell, d| {
            let c = match (&d.kind, d.column) {
                (DimKind::Integer(cuts), 0) => match age {
                    None => d.len() - 1,
                    Some(a) => cuts.iter().filter(|c| a as f64 >= **c).count(),
                },
                (DimKind::Values(values), 1) => match sex {
                    None => d.len() - 1,
                    Some(s) => values
                        .iter()
                        .position(|v| *v == Value::Text(s.into()))
                        .unwrap_or(values.len()),
                },
                _ => unreachable!("the test's cubes"),
            };
            cell * d.len() + c
        })
    }

    fn cube_of(ages: &[f64], sexes: Option<&[&str]>) -> Cube {
        let mut dims = Vec::new();
        if let Some(sexes) = sexes {
            dims.push(Dim {
                column: 1,
                name: "sex".into(),
                kind: DimKind::Values(sexes.iter().map(|s| Value::Text((*s).into())).collect()),
                texts: sexes.iter().map(|s| format!("'{s}'")).collect(),
            });
        }
        if !ages.is_empty() {
            dims.push(Dim {
                column: 0,
                name: "age".into(),
                kind: DimKind::Integer(ages.to_vec()),
                texts: ages.iter().map(|a| a.to_string()).collect(),
            });
        }
        Cube::new(dims).expect("a valid cube")
    }

    #[test]
    fn a_refinement_maps_every_row_to_the_old_cell_that_holds_it() {
        let old = age_sex();
        let refining = [
            cube_of(&[30.0, 65.0], Some(&["F", "M"])),
            cube_of(&[18.0, 30.0, 50.0, 65.0], Some(&["M", "X", "F"])),
            // 29.5 and 30 split the integers alike; an empty interval between 64.2 and 64.7.
            cube_of(&[10.0, 29.5, 64.2, 64.7], Some(&["F", "M", "Y"])),
        ];
        let ages: Vec<Option<i64>> = (-5..100).map(Some).chain([None]).collect();
        let sexes = [Some("F"), Some("M"), Some("X"), Some("Y"), Some("f"), None];
        for new in &refining {
            let parents = new
                .refinement_of(&old)
                .unwrap_or_else(|| panic!("{} refines", new.declaration()));
            assert_eq!(parents.len(), new.cells());
            for age in &ages {
                for sex in sexes {
                    assert_eq!(
                        parents[cell_of(new, *age, sex)],
                        cell_of(&old, *age, sex),
                        "{} at age {age:?}, sex {sex:?}",
                        new.declaration()
                    );
                }
            }
        }
        let across = [
            cube_of(&[30.0], Some(&["F", "M"])),
            cube_of(&[30.0, 60.0], Some(&["F", "M"])),
            cube_of(&[30.0, 65.0], Some(&["F"])),
            cube_of(&[30.0, 65.0], None),
            cube_of(&[], Some(&["F", "M"])),
        ];
        for new in &across {
            assert_eq!(new.refinement_of(&old), None, "{}", new.declaration());
        }
    }
}
