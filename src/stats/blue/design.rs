//! Estimability from the design alone: the rank of `H`, a basis of its cells and its row
//! space, decided on the unweighted rows so that no epsilon can change them (Xiao and Xiong,
//! footnote 7: `q` is estimable when it lies in the row space of `H`).
//!
//! The rows are scaled to a largest coefficient of 1 and the columns by powers of two to a
//! largest entry in [1, 2) (neither scaling changes the rank or, mapped back, the row space),
//! and factorised by a column-pivoted Householder QR, `G P = Q R`. The rank is the number of
//! leading pivots `|R_kk| > RANK_TOL |R_00|`. Guarantee: every decimal coefficient reaches
//! `f64` with a relative error of at most `u = 2^-53` and Householder QR is backward stable
//! (Higham, Thm 19.4), so a design that is exactly rank-deficient in its decimals has trailing
//! pivots of about `u` times the size of `G` (1e-15 for thousands of cells), far below
//! [`RANK_TOL`] = 1e-12; a full-rank design whose scaled condition number is at most 1e10 has
//! pivots of at least 1e-10 (column pivoting reveals the smallest singular value to within a
//! modest factor in practice), far above it. Designs between 1e10 and 1e12 are rank-deficient
//! to working precision and are resolved by the tolerance, not by exact arithmetic.
//!
//! A query is estimable when its distance to the computed row space, in the scaled
//! coordinates, is at most `ESTIMABLE_TOL |q|`. The row space of a design of condition
//! `kappa_r = |R_00| / |R_(r-1)(r-1)|` is itself only known to an angle of about `u kappa_r`,
//! so past `kappa_r` of about 1e6 (a rank-deficient design that is also ill-conditioned) a
//! query estimable in the decimals may be refused; the tolerance is never widened to admit
//! it, since a wider one admits queries that are not estimable (a small weight on a cell only
//! ever measured together with another), answered with a confident, wrong value. Refusing is
//! the safe error. A full-rank design (every cell separated) estimates every query, however
//! ill-conditioned.

use super::{ESTIMABLE_TOL, RANK_TOL};
use faer::linalg::solvers::{ColPivQr, Qr};
use faer::Mat;

/// The design's rank, basis and row space.
#[derive(Debug, Clone)]
pub(super) struct Design {
    /// The rank of `H`.
    pub(super) rank: usize,
    /// `rank` cells whose columns of `H` are independent, in pivot order.
    pub(super) basis: Vec<usize>,
    /// The column scaling of `G` (powers of two), one per cell.
    scale: Vec<f64>,
    /// An orthonormal basis (cells x rank) of the scaled row space; `None` at full rank.
    row_space: Option<Mat<f64>>,
    /// The tolerance of [`Design::contains`], relative to `|q|`.
    tol: f64,
}

impl Design {
    /// Analyses the rows (sorted, merged, non-zero coefficients) over `cells` cells.
    pub(super) fn new(cells: usize, rows: &[Vec<(usize, f64)>]) -> Design {
        let rows: Vec<&Vec<(usize, f64)>> = rows.iter().filter(|r| !r.is_empty()).collect();
        let mut g = Mat::<f64>::zeros(rows.len(), cells);
        for (i, row) in rows.iter().enumerate() {
            let big = row.iter().fold(0.0f64, |a, x| a.max(x.1.abs()));
            for &(c, v) in row.iter() {
                g[(i, c)] = v / big;
            }
        }
        let scale: Vec<f64> = (0..cells)
            .map(|c| {
                let big = g.col_as_slice(c).iter().fold(0.0f64, |a, x| a.max(x.abs()));
                if big > 0.0 {
                    2f64.powi(-(big.log2().floor() as i32))
                } else {
                    1.0
                }
            })
            .collect();
        for (c, s) in scale.iter().enumerate() {
            g.col_as_slice_mut(c).iter_mut().for_each(|x| *x *= s);
        }
        if rows.is_empty() || cells == 0 {
            return Design {
                rank: 0,
                basis: Vec::new(),
                scale,
                row_space: Some(Mat::zeros(cells, 0)),
                tol: ESTIMABLE_TOL,
            };
        }
        // With more rows than cells, a blocked QR first brings G to its n x n factor R0, of the
        // same row space and singular values, so the slower pivoted QR runs on n rows only.
        let qr = if rows.len() > cells {
            ColPivQr::new(Qr::new(g.as_ref()).thin_R())
        } else {
            ColPivQr::new(g.as_ref())
        };
        let r = qr.R();
        let size = rows.len().min(cells);
        let top = r[(0, 0)].abs();
        let rank = (0..size)
            .take_while(|&k| r[(k, k)].abs() > RANK_TOL * top)
            .count();
        let (fwd, _) = qr.P().arrays();
        let basis: Vec<usize> = fwd[..rank].to_vec();
        // Never widened with the condition: a wider tolerance would take a query that puts
        // a small weight on a cell never separated for one the history answers (a legal
        // release with near-collinear coefficients can raise kappa to 1e12 and the width to
        // 2e-2). Past kappa of about 1e6 a query the decimals make estimable may be refused:
        // the history is then too ill-conditioned for its row space to be known to 1e-8.
        let tol = ESTIMABLE_TOL;

        let row_space = (rank < cells).then(|| {
            // The scaled row space is spanned by the first `rank` rows of R P'.
            let mut x = Mat::<f64>::zeros(cells, rank);
            for (k, &c) in fwd.iter().enumerate() {
                for i in 0..rank.min(k + 1) {
                    x[(c, i)] = r[(i, k)];
                }
            }
            Qr::new(x.as_ref()).compute_thin_Q()
        });
        Design {
            rank,
            basis,
            scale,
            row_space,
            tol,
        }
    }

    /// Whether `q` (one coefficient per cell) lies in the row space of `H`.
    pub(super) fn contains(&self, q: &[f64]) -> bool {
        let Some(v) = &self.row_space else {
            return true;
        };
        // q x = (q D) (D^-1 x): the scaled query is q D.
        let mut res: Vec<f64> = q.iter().zip(&self.scale).map(|(a, s)| a * s).collect();
        let norm = res.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm == 0.0 {
            return true;
        }
        if !norm.is_finite() {
            return false;
        }
        // q - V V' q, twice: one projection leaves about u |q| / (distance) of q's own part.
        for _ in 0..2 {
            for k in 0..v.ncols() {
                let col = v.col_as_slice(k);
                let dot: f64 = col.iter().zip(&res).map(|(a, b)| a * b).sum();
                res.iter_mut().zip(col).for_each(|(x, a)| *x -= dot * a);
            }
        }
        let dist = res.iter().map(|x| x * x).sum::<f64>().sqrt();
        dist <= self.tol * norm
    }
}
