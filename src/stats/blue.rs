//! The best linear unbiased estimator (BLUE) of a linear query from a history of noisy linear answers (Xiao and Xiong, section 3).
//!
//! A history is a list of [`Measurement`]s: a coefficient row `h_i` over the cells, the epsilon
//! `alpha_i` it was released with, its sensitivity `S_i` and the noisy answer `y_i`
//! (`y = H x + N`, `N_i ~ Laplace(S_i / alpha_i)`, eq. 10). [`Blue::new`] forms
//! `M = H' W H` with `W = diag((alpha ./ S)^2)` straight from the sparse rows and factorises it
//! once with a blocked Cholesky with diagonal pivoting (rank revealing, so rank-deficient
//! histories are handled); [`Blue::estimate`] then answers any query `q` in `O(n r)`.
//!
//! Numerical tolerances (documented once, used everywhere below):
//! - rank: a pivot whose updated diagonal is at most [`RANK_TOL`]` * n * max(diag M)` ends the
//!   factorisation (LAPACK `dpstrf` uses `n * eps * max(diag M)`; ours is 64 times safer), so
//!   directions with less evidence than that are treated as unobserved;
//! - estimability: `q` is in the row space of `H` when the residual of its component outside
//!   the factor's range is at most [`ESTIMABLE_TOL`] times the size of the terms that make it.

use nalgebra::DMatrix;

/// Relative pivot tolerance of the factorisation, per cell: `64 * f64::EPSILON` (about 1.4e-14).
pub const RANK_TOL: f64 = 64.0 * f64::EPSILON;

/// Relative tolerance of the estimability test (footnote 7): `1e-8`.
pub const ESTIMABLE_TOL: f64 = 1e-8;

/// Block size of the pivoted Cholesky factorisation.
const BLOCK: usize = 64;

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
    /// A measurement has a non-finite coefficient or answer, or a non-positive epsilon or sensitivity.
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

/// A history prepared for estimation: `M = H' W H` factorised once.
#[derive(Debug, Clone)]
pub struct Blue {
    cells: usize,
    rows: Vec<Vec<(usize, f64)>>,
    /// `W_ii = (alpha_i / S_i)^2`.
    w: Vec<f64>,
    /// `z = H' W y`.
    z: Vec<f64>,
    /// `P' M P = L L'`: L in the lower triangle of the first `rank` columns (permuted order).
    l: DMatrix<f64>,
    /// `perm[k]` = the cell at permuted position `k`.
    perm: Vec<usize>,
    rank: usize,
    /// Cells touched by at least one measurement with a non-zero coefficient.
    measured: Vec<bool>,
}

impl Blue {
    /// Prepares `history` over `cells` cells: validates it, forms `M = H' W H` from the sparse
    /// rows and factorises it. An empty history is valid (every query but 0 is not estimable).
    ///
    /// Cost: `O(sum_i nnz_i^2)` to form `M`, `n^3 / 3` multiply-adds (as `2 n^3 / 3` in `gemm`,
    /// both triangles) to factorise it; 0.19 s for 4000 x 2000 at 1% density
    /// (`benches/blue.rs`). Coefficients whose squares overflow `f64` leave a non-finite `M`,
    /// treated as rank 0 (nothing estimable).
    pub fn new(cells: usize, history: &[Measurement]) -> Result<Blue, BlueError> {
        let mut rows = Vec::with_capacity(history.len());
        let mut w = Vec::with_capacity(history.len());
        let mut z = vec![0.0; cells];
        let mut measured = vec![false; cells];
        let mut m = DMatrix::<f64>::zeros(cells, cells);
        for (i, meas) in history.iter().enumerate() {
            let ok = meas.eps.is_finite()
                && meas.eps > 0.0
                && meas.sensitivity.is_finite()
                && meas.sensitivity > 0.0
                && meas.noisy.is_finite();
            if !ok {
                return Err(BlueError::InvalidMeasurement { measurement: i });
            }
            for &(c, v) in &meas.row {
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
            // Eq. 50: W = diag^2(alpha ./ S).
            let wi = (meas.eps / meas.sensitivity).powi(2);
            let data = m.as_mut_slice();
            for &(a, va) in &meas.row {
                if va != 0.0 {
                    measured[a] = true;
                }
                // z = H' W y.
                z[a] += wi * va * meas.noisy;
                // M = H' W H = sum_i w_i h_i' h_i, only over the row's non-zeros (column-major).
                for &(b, vb) in &meas.row {
                    data[a * cells + b] += wi * va * vb;
                }
            }
            rows.push(meas.row.clone());
            w.push(wi);
        }
        let (perm, rank) = pivoted_cholesky(&mut m);
        Ok(Blue {
            cells,
            rows,
            w,
            z,
            l: m,
            perm,
            rank,
            measured,
        })
    }

    /// The number of cells.
    pub fn cells(&self) -> usize {
        self.cells
    }

    /// The numerical rank of `H` (of `M`).
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The BLUE of the query with dense coefficients `q` (one per cell).
    ///
    /// `O(n r)` for an estimable query. A refusal lists the cells behind it, at one extra
    /// `O(r^2)` solve per non-zero coefficient of `q`.
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
        let qp: Vec<f64> = self.perm.iter().map(|&c| q[c]).collect();
        let u = match self.solve_range(&qp) {
            Some(u) => u,
            None => return Err(BlueError::NotEstimable(self.why_not(q))),
        };
        // Eq. 52: Var = 2 q M^+ q' = 2 u'u with u = L11^{-1} (P'q)_1 (q = P [L11; L21] u).
        let variance = 2.0 * u.iter().map(|x| x * x).sum::<f64>();
        let v = self.back(&u);
        // Eq. 51: A = q M^- H' W (any generalised inverse gives the same A for estimable q).
        let weights: Vec<f64> = self
            .rows
            .iter()
            .zip(&self.w)
            .map(|(row, wi)| wi * row.iter().map(|&(c, h)| h * v[c]).sum::<f64>())
            .collect();
        // theta-hat = A y = q M^- H' W y = v . z.
        let value = v.iter().zip(&self.z).map(|(a, b)| a * b).sum();
        Ok(Estimate {
            value,
            variance,
            weights,
        })
    }

    /// The terms `a_i N_i` of an estimate's error `theta-hat - theta = A N` (Lemma 4.1), for
    /// [`super::exact::NoiseSum`]: weight `a_i` and Laplace scale `S_i / alpha_i`. Weights past
    /// the history's length are ignored; missing ones count as 0.
    pub fn noise_terms(&self, weights: &[f64]) -> Vec<super::exact::Term> {
        weights
            .iter()
            .zip(&self.w)
            .map(|(&weight, wi)| super::exact::Term {
                weight,
                // w_i = (alpha_i / S_i)^2 > 0, so S_i / alpha_i = 1 / sqrt(w_i).
                scale: 1.0 / wi.sqrt(),
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
    /// Costs one solve per cell (`O(n r^2)`) when `H` is rank-deficient, one in all otherwise.
    pub fn cell_estimates(&self) -> Vec<Option<f64>> {
        if self.rank == self.cells {
            // Eq. 50: x-hat = M^{-1} H' W y.
            let zp: Vec<f64> = self.perm.iter().map(|&c| self.z[c]).collect();
            let u = self.forward(&zp);
            return self.back(&u).into_iter().map(Some).collect();
        }
        (0..self.cells)
            .map(|c| {
                let mut e = vec![0.0; self.cells];
                e[c] = 1.0;
                self.estimate(&e).ok().map(|est| est.value)
            })
            .collect()
    }

    /// Forward substitution `L11 u = b[..rank]`.
    fn forward(&self, b: &[f64]) -> Vec<f64> {
        let n = self.cells;
        let r = self.rank;
        let data = self.l.as_slice();
        let mut u = b[..r].to_vec();
        for c in 0..r {
            let col = &data[c * n..c * n + n];
            u[c] /= col[c];
            let uc = u[c];
            for (ui, lic) in u[c + 1..r].iter_mut().zip(&col[c + 1..r]) {
                *ui -= lic * uc;
            }
        }
        u
    }

    /// `u = L11^{-1} q1` if `q2 = L21 u` within [`ESTIMABLE_TOL`] (q in the range of `P[L11; L21]`).
    fn solve_range(&self, qp: &[f64]) -> Option<Vec<f64>> {
        let n = self.cells;
        let r = self.rank;
        let data = self.l.as_slice();
        let u = self.forward(qp);
        let mut t = vec![0.0; n - r];
        let mut scale: Vec<f64> = qp[r..].iter().map(|x| x.abs()).collect();
        for (c, &uc) in u.iter().enumerate() {
            let col = &data[c * n + r..c * n + n];
            for ((ti, si), lic) in t.iter_mut().zip(scale.iter_mut()).zip(col) {
                *ti += lic * uc;
                *si += (lic * uc).abs();
            }
        }
        let qmax = qp.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        let ok = t
            .iter()
            .zip(&qp[r..])
            .zip(&scale)
            .all(|((ti, qi), si)| (qi - ti).abs() <= ESTIMABLE_TOL * si.max(qmax));
        ok.then_some(u)
    }

    /// `v = P [L11^{-T} u; 0]`, i.e. `M^- q` with the generalised inverse `P [M11^{-1} 0; 0 0] P'`.
    fn back(&self, u: &[f64]) -> Vec<f64> {
        let n = self.cells;
        let r = self.rank;
        let data = self.l.as_slice();
        let mut vp = u.to_vec();
        for c in (0..r).rev() {
            let col = &data[c * n..c * n + n];
            let dot: f64 = col[c + 1..r]
                .iter()
                .zip(&vp[c + 1..r])
                .map(|(a, b)| a * b)
                .sum();
            vp[c] = (vp[c] - dot) / col[c];
        }
        let mut v = vec![0.0; n];
        for (k, val) in vp.into_iter().enumerate() {
            v[self.perm[k]] = val;
        }
        v
    }

    /// The cells behind a refusal: those the query weights whose own count is not estimable.
    fn why_not(&self, q: &[f64]) -> NotEstimable {
        let mut cells = Vec::new();
        for (c, &qc) in q.iter().enumerate() {
            if qc == 0.0 {
                continue;
            }
            let mut e = vec![0.0; self.cells];
            e[c] = 1.0;
            let ep: Vec<f64> = self.perm.iter().map(|&k| e[k]).collect();
            if self.solve_range(&ep).is_none() {
                cells.push(c);
            }
        }
        let unmeasured = cells
            .iter()
            .copied()
            .filter(|&c| !self.measured[c])
            .collect();
        NotEstimable { cells, unmeasured }
    }
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

/// Blocked Cholesky with diagonal pivoting of the symmetric positive semi-definite `a`
/// (full storage, both triangles), in place: `P' A P = L L'` with `L` (n x rank) left in the
/// lower triangle of the first `rank` columns. Returns the permutation and the rank.
///
/// LAPACK `dpstrf`'s scheme: within a block of [`BLOCK`] columns the pivot is the largest
/// updated diagonal and the column is computed left-looking; the trailing matrix is then
/// updated with one matrix product (`gemm`, matrixmultiply's kernel) per block.
fn pivoted_cholesky(a: &mut DMatrix<f64>) -> (Vec<usize>, usize) {
    let n = a.nrows();
    let mut perm: Vec<usize> = (0..n).collect();
    let maxdiag = (0..n).fold(0.0f64, |m, i| m.max(a[(i, i)]));
    if n == 0 || maxdiag <= 0.0 || !maxdiag.is_finite() {
        return (perm, 0);
    }
    let tol = RANK_TOL * n as f64 * maxdiag;
    // work[i] = sum of squares of row i of the current block's computed columns.
    let mut work = vec![0.0; n];
    let mut k = 0;
    while k < n {
        let jb = BLOCK.min(n - k);
        work[k..].iter_mut().for_each(|x| *x = 0.0);
        for j in k..k + jb {
            // Pivot: the largest updated diagonal a_ii - work_i, i >= j.
            let mut p = j;
            let mut dmax = f64::NEG_INFINITY;
            for (i, wi) in work.iter().enumerate().skip(j) {
                let d = a[(i, i)] - wi;
                if d > dmax {
                    dmax = d;
                    p = i;
                }
            }
            if dmax <= tol || !dmax.is_finite() {
                return (perm, j);
            }
            if p != j {
                a.swap_rows(j, p);
                a.swap_columns(j, p);
                work.swap(j, p);
                perm.swap(j, p);
            }
            let ljj = dmax.sqrt();
            let data = a.as_mut_slice();
            // Column j below the diagonal: (a_ij - sum_{c in k..j} l_ic l_jc) / l_jj.
            let (before, rest) = data.split_at_mut(j * n);
            let colj = &mut rest[..n];
            colj[j] = ljj;
            for c in k..j {
                let colc = &before[c * n..c * n + n];
                let f = colc[j];
                if f != 0.0 {
                    for (x, l) in colj[j + 1..].iter_mut().zip(&colc[j + 1..]) {
                        *x -= l * f;
                    }
                }
            }
            for (x, wi) in colj[j + 1..].iter_mut().zip(work[j + 1..].iter_mut()) {
                *x /= ljj;
                *wi += *x * *x;
            }
        }
        let s = k + jb;
        if s < n {
            // Trailing update: A22 -= L21 L21' (both triangles, kept symmetric for the swaps).
            let l21 = a.view((s, k), (n - s, jb)).into_owned();
            let l21t = l21.transpose();
            a.view_mut((s, s), (n - s, n - s))
                .gemm(-1.0, &l21, &l21t, 1.0);
        }
        k = s;
    }
    (perm, n)
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
