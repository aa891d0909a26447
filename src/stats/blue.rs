//! The best linear unbiased estimator (BLUE) of a linear query from a history of noisy linear
//! answers (Xiao and Xiong 2012, section 3).
//!
//! A history is a list of [`Measurement`]s: a coefficient row `h_i` over the cells, the epsilon
//! `alpha_i` it was released with, its sensitivity `S_i` and the noisy answer `y_i`
//! (`y = H x + N`, `N_i ~ Laplace(S_i / alpha_i)`, eq. 10). The BLUE of `q x` is `A y` with
//! `A = q (H'WH)^- H'W` and `W = diag((alpha ./ S)^2)` (eq. 50-51), of variance
//! `2 q (H'WH)^- q'` (eq. 52), for every `q` in the row space of `H` (footnote 7).
//!
//! The BLUE needs only each answer's variance, not its law (Gauss-Markov): a Gaussian release
//! of standard deviation `sigma_i` (zCDP) enters with `W_ii = 2 / sigma_i^2`, the weight of a
//! Laplace answer of the same variance, and the formulas above hold unchanged.
//!
//! Two questions, answered apart:
//! - *Which queries are estimable* is a property of the design `H` alone, never of the
//!   epsilons (a cell measured once at eps 1e-7 is measured). It is decided on the unweighted
//!   rows, by a rank-revealing QR with the tolerances [`RANK_TOL`] and [`ESTIMABLE_TOL`]
//!   (`blue/design.rs` states the guarantee).
//! - *How to compute the estimate* depends on the weighted design `A = W^(1/2) H` and its
//!   condition number `kappa`. [`Blue::new`] forms `H'WH` over the measured cells from the
//!   sparse rows and factorises it by Cholesky (faer); when it is positive definite and an
//!   estimate of its condition number, scaled to a unit diagonal, is at most [`KAPPA_FAST`],
//!   that is the answer, and exactly the queries that weight no unmeasured cell are estimable
//!   (`blue/normal.rs` justifies the switch). Otherwise the design's QR gives a basis of
//!   cells and the weighted rows over it are factorised by a column-pivoted QR with rows sorted
//!   by size (`blue/stable.rs`). Either way each estimate takes one step of iterative
//!   refinement of the unbiasedness `A H = q` from the sparse rows.
//!
//! Accuracy: the weights and the variance have a relative error of at most about `10 n u K`,
//! `u = 2^-53`, with `K = kappa(A)` on the QR path and the scaled `kappa(H'WH)` (at most
//! [`KAPPA_FAST`]) on the Cholesky path; a value `sum_i a_i y_i` is within `10 n u K` of
//! `sqrt(Var / 2) |W^(1/2) y|` (when the answers are inconsistent the value is known to no
//! better, whatever the solver: Higham, Thm 20.1). `tests/statistics/xiao_xiong.rs` holds both against
//! 60-digit references up to `kappa = 1e10` (the bound is then `4.4e-5` for 4 cells; the
//! decimal coefficients' own rounding to `f64` moves the exact answer by about `u kappa`).

mod design;
mod normal;
mod stable;

pub use super::exact::Law;
use design::Design;
use normal::Normal;
use stable::Stable;

/// The rank tolerance of the design: leading pivots of the design's column-pivoted QR at most
/// `1e-12` times the first end the rank. Exactly rank-deficient decimal designs fall below it
/// by orders of magnitude, and full-rank designs of condition number up to 1e10 stay above it.
pub const RANK_TOL: f64 = 1e-12;

/// Relative tolerance of the estimability test (footnote 7): `1e-8`, or more for designs of
/// condition number above about 1e6 (`256 u kappa`, the accuracy to which their row space is
/// known).
pub const ESTIMABLE_TOL: f64 = 1e-8;

/// The largest estimated condition number of the equilibrated normal equations that the
/// Cholesky path accepts: `1e6`.
pub const KAPPA_FAST: f64 = 1e6;

/// One released answer of the history: a row of `H`, `alpha_i`, `S_i` and `y_i`.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// Sparse coefficients `(cell, coefficient)`; repeated cells add up.
    pub row: Vec<(usize, f64)>,
    /// The epsilon it was released with (`alpha_i`), finite and positive.
    pub eps: f64,
    /// Its sensitivity `S_i` (Lemma 2.1: the largest absolute coefficient), finite and positive.
    pub sensitivity: f64,
    /// The noisy answer `y_i`, finite.
    pub noisy: f64,
    /// The law of its noise: Laplace of scale `S_i / alpha_i`, or normal of standard
    /// deviation `sigma_i = S_i / alpha_i` (a Gaussian release of rho, `S_i` its L2
    /// sensitivity and `alpha_i = sqrt(2 rho)`). Either way the BLUE weighs it by the inverse
    /// of its variance.
    pub law: Law,
}

/// Why a history or a query was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BlueError {
    /// A measurement names a cell outside `0..cells`.
    #[error("measurement {measurement} names cell {cell}, but there are {cells} cells")]
    CellOutOfRange {
        /// Index of the measurement in the history.
        measurement: usize,
        /// The offending cell.
        cell: usize,
        /// The number of cells.
        cells: usize,
    },
    /// A measurement has a non-finite coefficient or answer, a non-positive epsilon or
    /// sensitivity, or a noise scale `S / alpha` beyond the range of `f64` or that of the
    /// history's other measurements (their ratio past about 1e300).
    #[error("measurement {measurement} has a non-finite or non-positive parameter")]
    InvalidMeasurement {
        /// Index of the measurement in the history.
        measurement: usize,
    },
    /// The query has the wrong number of coefficients.
    #[error("the query has {got} coefficients, but there are {expected} cells")]
    QueryLength {
        /// The number of cells.
        expected: usize,
        /// The length of the query.
        got: usize,
    },
    /// The query has a non-finite coefficient or names a cell out of range.
    #[error("the query has a non-finite coefficient or a cell out of range")]
    InvalidQuery,
    /// The query is not in the row space of `H` (footnote 7).
    #[error("{0}")]
    NotEstimable(NotEstimable),
}

/// A query outside the row space of `H`: the history holds no unbiased linear estimate of it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NotEstimable {
    /// The cells the query weights (non-zero coefficient) whose own count is not estimable from
    /// the history: they are never measured, or only ever measured in fixed combinations with
    /// other cells. Sorted, never empty for a refused query.
    pub cells: Vec<usize>,
    /// The subset of `cells` that no measurement touches at all.
    pub unmeasured: Vec<usize>,
}

impl std::fmt::Display for NotEstimable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list: Vec<String> = self.cells.iter().map(|c| c.to_string()).collect();
        write!(f, "cells {} lack evidence", list.join(", "))
    }
}

/// The BLUE of one query.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// `theta-hat = A y` (eq. 51).
    pub value: f64,
    /// `Var(theta-hat) = 2 q M^+ q'` (eq. 52).
    pub variance: f64,
    /// `A`, one weight per measurement of the history (eq. 51): `theta-hat = sum_i A_i y_i`.
    pub weights: Vec<f64>,
}

/// How a history's BLUE is computed (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Solver {
    /// Cholesky of the equilibrated normal equations, with the estimate of their 1-norm
    /// condition number (at most [`KAPPA_FAST`]).
    Cholesky {
        /// The estimate of `kappa_1(D H'WH D)`.
        condition: f64,
    },
    /// Column-pivoted QR of the weighted design over a basis of cells, after the design's own
    /// rank-revealing QR.
    Qr,
}

/// The factorisation a history was prepared with.
#[derive(Debug, Clone)]
enum Path {
    Normal(Normal),
    Stable {
        design: Box<Design>,
        qr: Box<Stable>,
    },
}

/// A history prepared for estimation, factorised once.
#[derive(Debug, Clone)]
pub struct Blue {
    cells: usize,
    /// The rows, by increasing cell, repeated cells added up, zeros dropped.
    rows: Vec<Vec<(usize, f64)>>,
    /// `alpha_i / S_i` (times `sqrt 2` for a normal answer): `W_ii = (alpha_i / S_i)^2`
    /// (eq. 50), `2 / Var(N_i)` whatever the law.
    s: Vec<f64>,
    /// Each answer's law.
    laws: Vec<Law>,
    /// `g alpha_i / S_i`, with `g` a power of two that brings the weighted coefficients near 1
    /// (the BLUE's weights do not change when every `W_ii` is multiplied by `g^2`).
    scaled: Vec<f64>,
    /// The answers `y_i`.
    y: Vec<f64>,
    path: Path,
    /// Cells touched by at least one measurement with a non-zero coefficient.
    measured: Vec<bool>,
}

impl Blue {
    /// Prepares `history` over `cells` cells: validates it and factorises it, by Cholesky of
    /// the normal equations when a condition estimate certifies them, else by the design's
    /// rank-revealing QR and a QR of the weighted rows. An empty history is valid (every query
    /// but 0 is then not estimable).
    ///
    /// Cost: `O(sum_i nnz_i^2)` to form `H'WH` and `n^3 / 3` multiply-adds to factorise it
    /// (faer's blocked Cholesky, one core; `benches/blue.rs`: 78 ms for 4000 x 2000 at 1%
    /// density); on the QR path `O(m n min(m, n))` with `m x n` dense storage, its column
    /// pivoting unblocked (seconds at 4000 x 2000).
    pub fn new(cells: usize, history: &[Measurement]) -> Result<Blue, BlueError> {
        let (rows, s, y) = prepare(cells, history)?;
        let laws = history.iter().map(|m| m.law).collect();
        let mut measured = vec![false; cells];
        for row in &rows {
            for &(c, _) in row {
                measured[c] = true;
            }
        }
        // g: the power of two that brings the largest weighted coefficient into [0.5, 1).
        let big = rows
            .iter()
            .zip(&s)
            .map(|(row, si)| row.iter().fold(0.0f64, |a, x| a.max((si * x.1).abs())))
            .fold(0.0f64, f64::max);
        let g = if big.is_normal() {
            2f64.powi(-(big.log2().floor() as i32) - 1)
        } else {
            1.0
        };
        let scaled: Vec<f64> = s.iter().map(|x| x * g).collect();
        // Noise scales that span more than the range of f64 cannot be weighed together.
        for (i, (row, si)) in rows.iter().zip(&scaled).enumerate() {
            let big = row.iter().fold(0.0f64, |a, x| a.max((si * x.1).abs()));
            if !row.is_empty() && !big.is_normal() {
                return Err(BlueError::InvalidMeasurement { measurement: i });
            }
        }
        let w: Vec<f64> = scaled.iter().map(|x| x * x).collect();
        let normal = Normal::new(&measured, &rows, &w);
        let path = match normal {
            Some(n) => Path::Normal(n),
            None => {
                let design = Design::new(cells, &rows);
                let mut position = vec![None; cells];
                for (k, &c) in design.basis.iter().enumerate() {
                    position[c] = Some(k);
                }
                let qr = Stable::new(&design.basis, &position, &rows, &scaled, &y);
                Path::Stable {
                    design: Box::new(design),
                    qr: Box::new(qr),
                }
            }
        };
        Ok(Blue {
            cells,
            rows,
            s,
            laws,
            scaled,
            y,
            path,
            measured,
        })
    }

    /// The number of cells.
    pub fn cells(&self) -> usize {
        self.cells
    }

    /// The rank of `H`, decided on the design (see [`RANK_TOL`]).
    pub fn rank(&self) -> usize {
        match &self.path {
            Path::Normal(n) => n.support.len(),
            Path::Stable { design, .. } => design.rank,
        }
    }

    /// How the history was factorised.
    pub fn solver(&self) -> Solver {
        match &self.path {
            Path::Normal(n) => Solver::Cholesky {
                condition: n.condition,
            },
            Path::Stable { .. } => Solver::Qr,
        }
    }

    /// The BLUE of the query with dense coefficients `q` (one per cell).
    ///
    /// `O(n^2 + nnz(H))` on the Cholesky path, `O(m r + n r)` on the QR path. A refusal lists
    /// the cells behind it, at one `O(n r)` test per non-zero coefficient of `q`.
    pub fn estimate(&self, q: &[f64]) -> Result<Estimate, BlueError> {
        if q.len() != self.cells {
            return Err(BlueError::QueryLength {
                expected: self.cells,
                got: q.len(),
            });
        }
        if q.iter().any(|v| !v.is_finite()) {
            return Err(BlueError::InvalidQuery);
        }
        let estimable = match &self.path {
            Path::Normal(n) => q
                .iter()
                .zip(&n.index)
                .all(|(v, i)| *v == 0.0 || i.is_some()),
            Path::Stable { design, .. } => design.contains(q),
        };
        if !estimable {
            return Err(BlueError::NotEstimable(self.why_not(q)));
        }
        // Eq. 51: A = Q (H'WH)^- H'W. One step of iterative refinement on A H = Q (the
        // unbiasedness of Corollary 3.1), its residual computed from the sparse rows.
        let target = self.constraint(q);
        let mut weights = self.weights_for(&target);
        let residual: Vec<f64> = self
            .constraint_of(&weights)
            .iter()
            .zip(&target)
            .map(|(ah, t)| t - ah)
            .collect();
        if residual.iter().any(|r| *r != 0.0) {
            let correction = self.weights_for(&residual);
            weights
                .iter_mut()
                .zip(correction)
                .for_each(|(a, d)| *a += d);
        }
        // theta-hat = A y.
        let value = match &self.path {
            Path::Normal(_) => weights.iter().zip(&self.y).map(|(a, y)| a * y).sum(),
            Path::Stable { qr, .. } => qr.value(&target),
        };
        // Eq. 52: Var(A y) = sum_i a_i^2 Var(N_i) = 2 sum_i (a_i S_i / alpha_i)^2, which is
        // 2 Q M^- Q' for the BLUE's weights.
        let variance = 2.0
            * weights
                .iter()
                .zip(&self.s)
                .map(|(a, s)| (a / s).powi(2))
                .sum::<f64>();
        Ok(Estimate {
            value,
            variance,
            weights,
        })
    }

    /// The part of `q` the factorisation solves for: its measured cells on the Cholesky path,
    /// its basis cells on the QR path (the others follow from them for an estimable `q`).
    fn constraint(&self, q: &[f64]) -> Vec<f64> {
        match &self.path {
            Path::Normal(n) => n.support.iter().map(|&c| q[c]).collect(),
            Path::Stable { design, .. } => design.basis.iter().map(|&c| q[c]).collect(),
        }
    }

    /// `A H` over the cells of [`Blue::constraint`].
    fn constraint_of(&self, weights: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; self.cells];
        for (row, a) in self.rows.iter().zip(weights) {
            for &(c, h) in row {
                out[c] += a * h;
            }
        }
        self.constraint(&out)
    }

    /// The BLUE's weights for a constraint `c` (eq. 51): `a = W H M^-1 c` on the Cholesky
    /// path, `a = W^(1/2) t` with `t` the least-norm solution of `A' t = c` on the QR path.
    fn weights_for(&self, c: &[f64]) -> Vec<f64> {
        match &self.path {
            Path::Normal(n) => {
                let mut local = c.to_vec();
                n.solve(&mut local);
                let mut v = vec![0.0; self.cells];
                for (k, &c) in n.support.iter().enumerate() {
                    v[c] = local[k];
                }
                self.rows
                    .iter()
                    .zip(&self.scaled)
                    .map(|(row, si)| si * si * row.iter().map(|&(j, h)| h * v[j]).sum::<f64>())
                    .collect()
            }
            Path::Stable { qr, .. } => {
                let t = qr.least_norm(c, self.rows.len());
                t.iter().zip(&self.scaled).map(|(t, si)| t * si).collect()
            }
        }
    }

    /// The terms `a_i N_i` of an estimate's error `theta-hat - theta = A N` (Lemma 4.1), for
    /// [`super::exact::NoiseSum`]: weight `a_i` and Laplace scale `S_i / alpha_i`. Weights past
    /// the history's length are ignored; missing ones count as 0.
    pub fn noise_terms(&self, weights: &[f64]) -> Vec<super::exact::Term> {
        weights
            .iter()
            .zip(self.s.iter().zip(&self.laws))
            .map(|(&weight, (si, &law))| super::exact::Term {
                weight,
                // Var(N_i) = 2 / s_i^2 either way: Laplace scale 1 / s_i, normal sd sqrt(2) / s_i.
                scale: match law {
                    Law::Laplace => 1.0 / si,
                    Law::Normal => std::f64::consts::SQRT_2 / si,
                },
                law,
            })
            .collect()
    }

    /// The BLUE of a query given by sparse coefficients `(cell, coefficient)`; repeats add up.
    pub fn estimate_sparse(&self, q: &[(usize, f64)]) -> Result<Estimate, BlueError> {
        let mut dense = vec![0.0; self.cells];
        for &(c, v) in q {
            match dense.get_mut(c) {
                Some(slot) => *slot += v,
                None => return Err(BlueError::InvalidQuery),
            }
        }
        self.estimate(&dense)
    }

    /// `x-hat`: the BLUE of each cell's count, `None` for a cell that is not estimable.
    ///
    /// One solve on the Cholesky path; one estimate per cell on the QR path.
    pub fn cell_estimates(&self) -> Vec<Option<f64>> {
        if let Path::Normal(n) = &self.path {
            // Eq. 50: x-hat = (H'WH)^-1 H'W y (the scale g^2 of W cancels).
            let mut z = vec![0.0; self.cells];
            for ((row, si), y) in self.rows.iter().zip(&self.scaled).zip(&self.y) {
                for &(c, h) in row {
                    z[c] += si * si * h * y;
                }
            }
            let mut local = self.constraint(&z);
            n.solve(&mut local);
            let mut out = vec![None; self.cells];
            for (k, &c) in n.support.iter().enumerate() {
                out[c] = Some(local[k]);
            }
            return out;
        }
        (0..self.cells)
            .map(|c| {
                let mut e = vec![0.0; self.cells];
                e[c] = 1.0;
                self.estimate(&e).ok().map(|est| est.value)
            })
            .collect()
    }

    /// The cells behind a refusal: those the query weights whose own count is not estimable.
    fn why_not(&self, q: &[f64]) -> NotEstimable {
        // Each cell is a projection onto the row space: a few suffice to name the cells
        // lacking evidence, and a query over thousands of cells must not cost thousands.
        const LOOKED_AT: usize = 32;
        let mut cells = Vec::new();
        let mut e = vec![0.0; self.cells];
        for (c, &qc) in q
            .iter()
            .enumerate()
            .filter(|(_, qc)| **qc != 0.0)
            .take(LOOKED_AT)
        {
            if qc == 0.0 {
                continue;
            }
            e[c] = 1.0;
            let alone = match &self.path {
                Path::Normal(n) => n.index[c].is_some(),
                Path::Stable { design, .. } => design.contains(&e),
            };
            if !alone {
                cells.push(c);
            }
            e[c] = 0.0;
        }
        let unmeasured = cells
            .iter()
            .copied()
            .filter(|&c| !self.measured[c])
            .collect();
        NotEstimable { cells, unmeasured }
    }
}

/// Validates a history: its rows (by increasing cell, repeats added up, zeros dropped),
/// `alpha_i / S_i` and the answers.
type Prepared = (Vec<Vec<(usize, f64)>>, Vec<f64>, Vec<f64>);

fn prepare(cells: usize, history: &[Measurement]) -> Result<Prepared, BlueError> {
    let mut rows = Vec::with_capacity(history.len());
    let mut s = Vec::with_capacity(history.len());
    let mut y = Vec::with_capacity(history.len());
    for (i, meas) in history.iter().enumerate() {
        // 2 / Var(N_i): (alpha/S)^2 for Laplace, 2 / sigma^2 = 2 (alpha/S)^2 for normal.
        let si = match meas.law {
            Law::Laplace => meas.eps / meas.sensitivity,
            Law::Normal => std::f64::consts::SQRT_2 * meas.eps / meas.sensitivity,
        };
        let ok = meas.eps.is_finite()
            && meas.eps > 0.0
            && meas.sensitivity.is_finite()
            && meas.sensitivity > 0.0
            && meas.noisy.is_finite()
            && si.is_normal()
            && (1.0 / si).is_finite();
        if !ok {
            return Err(BlueError::InvalidMeasurement { measurement: i });
        }
        let mut row = meas.row.clone();
        for &(c, v) in &row {
            if c >= cells {
                return Err(BlueError::CellOutOfRange {
                    measurement: i,
                    cell: c,
                    cells,
                });
            }
            if !v.is_finite() {
                return Err(BlueError::InvalidMeasurement { measurement: i });
            }
        }
        row.sort_by_key(|x| x.0);
        let mut merged: Vec<(usize, f64)> = Vec::with_capacity(row.len());
        for (c, v) in row {
            match merged.last_mut() {
                Some(last) if last.0 == c => last.1 += v,
                _ => merged.push((c, v)),
            }
        }
        merged.retain(|x| x.1 != 0.0);
        if merged.iter().any(|x| !x.1.is_finite()) {
            return Err(BlueError::InvalidMeasurement { measurement: i });
        }
        rows.push(merged);
        s.push(si);
        y.push(meas.noisy);
    }
    Ok((rows, s, y))
}

/// Each cell's spent budget `B = (alpha ./ S)' abs(H)` (Theorem 5.5, eq. 71); the table's
/// cost is `alpha-bar = max(B)` (eq. 70). Validates the history as [`Blue::new`] does.
pub fn cell_budgets(cells: usize, history: &[Measurement]) -> Result<Vec<f64>, BlueError> {
    let mut b = vec![0.0; cells];
    for (i, meas) in history.iter().enumerate() {
        let ok = meas.eps.is_finite()
            && meas.eps > 0.0
            && meas.sensitivity.is_finite()
            && meas.sensitivity > 0.0;
        if !ok {
            return Err(BlueError::InvalidMeasurement { measurement: i });
        }
        // Eq. 71: B_j = sum_i alpha_i / S_i * |H_ij| (repeated cells of a row add up first).
        let mut row: Vec<(usize, f64)> = meas.row.clone();
        row.sort_by_key(|x| x.0);
        let mut k = 0;
        while k < row.len() {
            let (c, mut v) = row[k];
            if c >= cells {
                return Err(BlueError::CellOutOfRange {
                    measurement: i,
                    cell: c,
                    cells,
                });
            }
            while k + 1 < row.len() && row[k + 1].0 == c {
                k += 1;
                v += row[k].1;
            }
            if !v.is_finite() {
                return Err(BlueError::InvalidMeasurement { measurement: i });
            }
            b[c] += meas.eps / meas.sensitivity * v.abs();
            k += 1;
        }
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meas(row: &[(usize, f64)], eps: f64, noisy: f64) -> Measurement {
        let s = row.iter().fold(0.0f64, |a, x| a.max(x.1.abs()));
        Measurement {
            row: row.to_vec(),
            eps,
            sensitivity: s.max(1e-300),
            noisy,
            law: Default::default(),
        }
    }

    #[test]
    fn single_count_is_its_own_estimate() {
        let b = Blue::new(1, &[meas(&[(0, 1.0)], 0.5, 7.0)]).expect("valid");
        let e = b.estimate(&[1.0]).expect("estimable");
        assert!((e.value - 7.0).abs() < 1e-12);
        // Var of Laplace(1/0.5) = 2 * 2^2 = 8.
        assert!((e.variance - 8.0).abs() < 1e-12);
        assert_eq!(e.weights, vec![1.0]);
    }

    #[test]
    fn empty_history_refuses_all_but_zero() {
        let b = Blue::new(3, &[]).expect("valid");
        assert_eq!(b.rank(), 0);
        let err = b.estimate(&[0.0, 1.0, 2.0]).expect_err("not estimable");
        assert_eq!(
            err,
            BlueError::NotEstimable(NotEstimable {
                cells: vec![1, 2],
                unmeasured: vec![1, 2]
            })
        );
        let zero = b.estimate(&[0.0; 3]).expect("zero is estimable");
        assert_eq!(zero.value, 0.0);
        assert_eq!(err.to_string(), "cells 1, 2 lack evidence");
    }

    #[test]
    fn cells_seen_only_together() {
        let h = [
            meas(&[(0, 1.0), (1, 1.0)], 1.0, 10.0),
            meas(&[(2, 1.0)], 1.0, 3.0),
        ];
        let b = Blue::new(4, &h).expect("valid");
        assert_eq!(b.rank(), 2);
        assert!(b.estimate(&[1.0, 1.0, 1.0, 0.0]).is_ok());
        match b.estimate(&[1.0, 0.0, 0.0, 1.0]) {
            Err(BlueError::NotEstimable(ne)) => {
                assert_eq!(ne.cells, vec![0, 3]);
                assert_eq!(ne.unmeasured, vec![3]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(b.cell_estimates(), vec![None, None, Some(3.0), None]);
    }

    /// An unmeasured cell leaves the other cells on the Cholesky path; near-collinear rows
    /// (condition number 4e7, 1.6e15 for the normal equations) take the QR path.
    #[test]
    fn the_solver_follows_the_condition_number() {
        let h = [
            meas(&[(0, 1.0)], 0.5, 3.0),
            meas(&[(1, 1.0)], 0.5, 4.0),
            meas(&[(0, 1.0), (1, 1.0)], 0.5, 8.0),
        ];
        let b = Blue::new(3, &h).expect("valid");
        assert!(matches!(b.solver(), Solver::Cholesky { condition } if condition < 10.0));
        assert_eq!(b.rank(), 2);
        // Two counts and their sum, all at the same epsilon: x1-hat = (2 y1 - y2 + y3) / 3.
        let e = b.estimate(&[1.0, 0.0, 0.0]).expect("measured");
        assert!(
            (e.value - (6.0 - 4.0 + 8.0) / 3.0).abs() < 1e-12,
            "{}",
            e.value
        );
        assert_eq!(
            b.estimate(&[1.0, 0.0, 2.0]),
            Err(BlueError::NotEstimable(NotEstimable {
                cells: vec![2],
                unmeasured: vec![2]
            }))
        );
        assert_eq!(b.cell_estimates()[2], None);
        let near = [
            meas(&[(0, 1.0), (1, 1.0)], 0.5, 5.0),
            meas(&[(0, 1.0), (1, 1.0000001)], 0.5, 6.0),
        ];
        let b = Blue::new(2, &near).expect("valid");
        assert_eq!(b.solver(), Solver::Qr);
        assert_eq!(b.rank(), 2);
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert!(matches!(
            Blue::new(2, &[meas(&[(5, 1.0)], 1.0, 0.0)]),
            Err(BlueError::CellOutOfRange { .. })
        ));
        assert!(matches!(
            Blue::new(2, &[meas(&[(0, 1.0)], 0.0, 0.0)]),
            Err(BlueError::InvalidMeasurement { .. })
        ));
        assert!(matches!(
            Blue::new(2, &[meas(&[(0, f64::NAN)], 1.0, 0.0)]),
            Err(BlueError::InvalidMeasurement { .. })
        ));
        let b = Blue::new(2, &[meas(&[(0, 1.0)], 1.0, 0.0)]).expect("valid");
        assert!(matches!(
            b.estimate(&[1.0]),
            Err(BlueError::QueryLength {
                expected: 2,
                got: 1
            })
        ));
        assert_eq!(b.estimate_sparse(&[(9, 1.0)]), Err(BlueError::InvalidQuery));
        assert_eq!(
            b.estimate(&[f64::INFINITY, 0.0]),
            Err(BlueError::InvalidQuery)
        );
        // A zero row with a positive sensitivity contributes nothing.
        let z = Blue::new(2, &[meas(&[(0, 0.0)], 1.0, 5.0)]).expect("valid");
        assert_eq!(z.rank(), 0);
    }
}
