//! The fast path of the BLUE: Cholesky of the equilibrated normal equations `M = H' W H`
//! (Xiao and Xiong, eq. 50), taken only when a condition estimate certifies it.
//!
//! `M` is formed from the sparse rows (lower triangle only), scaled symmetrically by powers of
//! two to a unit diagonal (`M_s = D M D`, exact in binary), and factorised by faer's blocked
//! Cholesky. LAPACK's `dpocon` scheme then estimates `kappa_1(M_s)` (Hager's and Higham's
//! estimator of `|M_s^-1|_1`, a lower bound that is in practice within a factor of 3). The
//! path is refused, and the caller takes the QR path, unless every cell is measured, the
//! factorisation meets no non-positive pivot and the estimate is at most [`KAPPA_FAST`].
//!
//! Why that criterion: Cholesky is backward stable, and with van der Sluis's diagonal scaling
//! the computed solution of `M v = q` has a relative error of about `u kappa(M_s)`, at worst
//! `n u kappa(M_s)` (Higham, *Accuracy and Stability of Numerical Algorithms*, Thm 10.5 and
//! 10.7), while `kappa(M) = kappa(A)^2` for the weighted design `A = W^(1/2) H`. Up to
//! `kappa(M_s) = 1e6` this loses about 1e-10 (2e-7 in the worst case at 2000 cells), for
//! `n^3 / 3` multiply-adds against the `2 m n^2 - 2 n^3 / 3` of a QR of `A` (twenty times
//! fewer for `m = 2n`) and `n^2` memory against `m n`; beyond, the squared condition number
//! would cost more digits than the QR path's `u kappa(A)`. A certified
//! `M_s` is also proof that `H` has full column rank (no perturbation of relative size below
//! `1 / kappa` makes it singular, and rounding the decimal coefficients is of size `u`), so
//! estimability is a fact of the design here too: every query is estimable.

use super::KAPPA_FAST;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{self, LltRegularization};
use faer::linalg::triangular_solve;
use faer::{Mat, MatMut, Par};

/// `L L' = D M D`, certified well conditioned.
#[derive(Debug, Clone)]
pub(super) struct Normal {
    /// The Cholesky factor, in the lower triangle.
    l: Mat<f64>,
    /// `D`: powers of two, one per cell.
    d: Vec<f64>,
    /// The estimate of `kappa_1(D M D)`.
    pub(super) condition: f64,
}

impl Normal {
    /// Forms and factorises `M = sum_i w_i h_i' h_i` over `cells` cells; `None` unless the
    /// factorisation is certified (see the module's documentation).
    pub(super) fn new(cells: usize, rows: &[Vec<(usize, f64)>], w: &[f64]) -> Option<Normal> {
        if cells == 0 || rows.len() < cells {
            return None;
        }
        let mut m = Mat::<f64>::zeros(cells, cells);
        // Eq. 50: M = H' W H, the lower triangle only, over each row's non-zeros (sorted).
        for (row, wi) in rows.iter().zip(w) {
            for (k, &(a, va)) in row.iter().enumerate() {
                let col = m.col_as_slice_mut(a);
                let f = wi * va;
                for &(b, vb) in &row[k..] {
                    col[b] += f * vb;
                }
            }
        }
        let d = equilibrate(&mut m)?;
        let norm = norm_1(&m);
        let par = Par::Seq;
        let mut buf = MemBuffer::new(factor::cholesky_in_place_scratch::<f64>(
            cells,
            par,
            Default::default(),
        ));
        let stack = MemStack::new(&mut buf);
        factor::cholesky_in_place(
            m.as_mut(),
            LltRegularization::default(),
            par,
            stack,
            Default::default(),
        )
        .ok()?;
        let mut normal = Normal {
            l: m,
            d,
            condition: f64::INFINITY,
        };
        normal.condition = norm * inverse_norm_1(cells, |x| normal.solve_scaled(x));
        (normal.condition <= KAPPA_FAST).then_some(normal)
    }

    /// `b <- M^-1 b = D (L L')^-1 D b`.
    pub(super) fn solve(&self, b: &mut [f64]) {
        b.iter_mut().zip(&self.d).for_each(|(x, d)| *x *= d);
        self.solve_scaled(b);
        b.iter_mut().zip(&self.d).for_each(|(x, d)| *x *= d);
    }

    /// `b <- (L L')^-1 b`.
    fn solve_scaled(&self, b: &mut [f64]) {
        let n = b.len();
        let mut rhs = MatMut::from_column_major_slice_mut(b, n, 1);
        triangular_solve::solve_lower_triangular_in_place(self.l.as_ref(), rhs.as_mut(), Par::Seq);
        triangular_solve::solve_upper_triangular_in_place(
            self.l.as_ref().transpose(),
            rhs.as_mut(),
            Par::Seq,
        );
    }
}

/// Scales the lower triangle of `m` to `D M D` with `D_jj` the power of two nearest
/// `M_jj^(-1/2)`, so the diagonal lies in [0.5, 2) and no rounding occurs; `None` when a
/// diagonal is not positive and finite (an unmeasured cell, or an overflow).
fn equilibrate(m: &mut Mat<f64>) -> Option<Vec<f64>> {
    let n = m.nrows();
    let mut d = Vec::with_capacity(n);
    for j in 0..n {
        let mjj = m.col_as_slice(j)[j];
        if !(mjj.is_normal() && mjj > 0.0) {
            return None;
        }
        let e = (-0.5 * mjj.log2()).round() as i32;
        d.push(2f64.powi(e));
    }
    for j in 0..n {
        let dj = d[j];
        for (x, di) in m.col_as_slice_mut(j)[j..].iter_mut().zip(&d[j..]) {
            *x *= dj * di;
        }
    }
    d.iter().all(|x| x.is_normal()).then_some(d)
}

/// `|M|_1` of the symmetric matrix whose lower triangle is `m`.
fn norm_1(m: &Mat<f64>) -> f64 {
    let n = m.nrows();
    let mut sums = vec![0.0; n];
    for j in 0..n {
        for (i, x) in m.col_as_slice(j).iter().enumerate().skip(j) {
            sums[j] += x.abs();
            if i != j {
                sums[i] += x.abs();
            }
        }
    }
    sums.into_iter().fold(0.0, f64::max)
}

/// An estimate of `|B|_1` for the symmetric `B` applied in place by `apply` (Hager 1984,
/// Higham 1988, as LAPACK's `dlacn2`): at most five steps of a gradient ascent over the unit
/// ball of the 1-norm, and Higham's alternating vector as a safeguard. A lower bound.
fn inverse_norm_1(n: usize, mut apply: impl FnMut(&mut [f64])) -> f64 {
    let mut x = vec![1.0 / n as f64; n];
    let mut est = 0.0;
    let mut last = usize::MAX;
    for step in 0..5 {
        let mut y = x.clone();
        apply(&mut y);
        let norm: f64 = y.iter().map(|v| v.abs()).sum();
        if !norm.is_finite() {
            return f64::INFINITY;
        }
        if step > 0 && norm <= est {
            break;
        }
        est = norm;
        // z = B' sign(y) (B is symmetric).
        let mut z: Vec<f64> = y
            .iter()
            .map(|v| if *v >= 0.0 { 1.0 } else { -1.0 })
            .collect();
        apply(&mut z);
        let (j, zmax) = z
            .iter()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |(bj, bz), (i, v)| {
                if v.abs() > bz {
                    (i, v.abs())
                } else {
                    (bj, bz)
                }
            });
        let zx: f64 = z.iter().zip(&x).map(|(a, b)| a * b).sum();
        if step > 0 && (zmax <= zx || j == last) {
            break;
        }
        last = j;
        x.iter_mut().for_each(|v| *v = 0.0);
        x[j] = 1.0;
    }
    // Higham's safeguard: b_i = (-1)^i (1 + i / (n - 1)), estimate 2 |B b|_1 / (3 n).
    let mut b: Vec<f64> = (0..n)
        .map(|i| {
            let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
            sign * (1.0 + i as f64 / (n.max(2) - 1) as f64)
        })
        .collect();
    apply(&mut b);
    let alt = 2.0 * b.iter().map(|v| v.abs()).sum::<f64>() / (3.0 * n as f64);
    est.max(alt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimator_finds_the_norm_of_a_diagonal_inverse() {
        let diag = [4.0, 0.5, 1e-3, 2.0];
        let est = inverse_norm_1(4, |x| {
            x.iter_mut().zip(diag).for_each(|(v, d)| *v /= d);
        });
        assert!((est - 1e3).abs() < 1e-9, "{est}");
    }

    #[test]
    fn refuses_an_unmeasured_cell_and_certifies_a_well_conditioned_history() {
        let rows = vec![vec![(0, 1.0)], vec![(0, 1.0), (1, 1.0)]];
        assert!(Normal::new(3, &rows, &[1.0, 1.0]).is_none());
        let n = Normal::new(2, &rows, &[1.0, 4.0]).expect("well conditioned");
        // M = [[5, 4], [4, 4]]; M^-1 [1, 0] = [1, -1].
        let mut b = [1.0, 0.0];
        n.solve(&mut b);
        assert!(
            (b[0] - 1.0).abs() < 1e-14 && (b[1] + 1.0).abs() < 1e-14,
            "{b:?}"
        );
        assert!(n.condition >= 1.0 && n.condition < 100.0, "{}", n.condition);
    }
}
