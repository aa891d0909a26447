//! The fast path of the BLUE: Cholesky of the equilibrated normal equations `M = H' W H`
//! (Xiao and Xiong 2012, eq. 50), taken only when a condition estimate certifies it.
//!
//! `M` is formed from the sparse rows (lower triangle only) and factorised by faer's blocked
//! Cholesky. Cholesky is invariant under symmetric diagonal scaling (van der Sluis), exactly
//! so for the powers of two `D` that bring `M` to a near-unit diagonal (`M_s = D M D`), so `M`
//! is factorised as it is and `D` enters only the condition estimate: LAPACK's `dpocon`
//! scheme estimates `kappa_1(M_s)` (Hager's and Higham's estimator of `|M_s^-1|_1`, a lower
//! bound that is in practice within a factor of 3). `M` is taken over the measured cells only
//! (a cell no row touches is never estimable). The path is refused, and the caller takes the
//! QR path, unless the factorisation meets no non-positive pivot and the estimate is at most
//! [`KAPPA_FAST`].
//!
//! Why that criterion: Cholesky is backward stable, and with van der Sluis's diagonal scaling
//! the computed solution of `M v = q` has a relative error of about `u kappa(M_s)`, at worst
//! `n u kappa(M_s)` (Higham, *Accuracy and Stability of Numerical Algorithms*, Thm 10.5 and
//! 10.7), while `kappa(M) = kappa(A)^2` for the weighted design `A = W^(1/2) H`. Up to
//! `kappa(M_s) = 1e6` this loses about 1e-10 (2e-7 in the worst case at 2000 cells), for
//! `n^3 / 3` multiply-adds against the `2 m n^2 - 2 n^3 / 3` of a QR of `A` (twenty times
//! fewer for `m = 2n`) and `n^2` memory against `m n`; beyond, the squared condition number
//! would cost more digits than the QR path's `u kappa(A)`. A certified `M_s` is also proof
//! that the measured cells' columns of `H` are independent (no perturbation of relative size
//! below `1 / kappa` makes it singular, and rounding the decimal coefficients is of size
//! `u`), so estimability is a fact of the design here too: a query is estimable exactly when
//! it weights no unmeasured cell.

use super::KAPPA_FAST;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{self, LltRegularization};
use faer::linalg::triangular_solve;
use faer::{MatMut, MatRef, Par};

/// `L L' = M` over the measured cells, with `D M D` certified well conditioned.
#[derive(Debug, Clone)]
pub(super) struct Normal {
    n: usize,
    /// The measured cells, in order: the unknowns of `M`.
    pub(super) support: Vec<usize>,
    /// `index[c]`: the position of cell `c` in `support`, if it is measured.
    pub(super) index: Vec<Option<usize>>,
    /// The Cholesky factor in the lower triangle, column-major `n x n`.
    l: Vec<f64>,
    /// `D`: powers of two, one per cell.
    d: Vec<f64>,
    /// The estimate of `kappa_1(D M D)`.
    pub(super) condition: f64,
}

impl Normal {
    /// Forms and factorises `M = sum_i w_i h_i' h_i` over the `measured` cells (a cell no
    /// row touches has a zero column of `H`, is never estimable and is left out); `None` unless
    /// the factorisation is certified (see the module's documentation).
    pub(super) fn new(measured: &[bool], rows: &[Vec<(usize, f64)>], w: &[f64]) -> Option<Normal> {
        let support: Vec<usize> = (0..measured.len()).filter(|&c| measured[c]).collect();
        let mut index = vec![None; measured.len()];
        for (k, &c) in support.iter().enumerate() {
            index[c] = Some(k);
        }
        let n = support.len();
        if n == 0 || rows.len() < n {
            return None;
        }
        // Zeroed by the allocator (pages the factorisation then fills), not by a pass.
        let mut m = vec![0.0f64; n.checked_mul(n)?];
        // Eq. 50: M = H' W H, the lower triangle only, over each row's non-zeros (sorted).
        for (row, wi) in rows.iter().zip(w) {
            for (k, &(a, va)) in row.iter().enumerate() {
                let a = index[a]?;
                let col = &mut m[a * n..(a + 1) * n];
                let f = wi * va;
                for &(b, vb) in &row[k..] {
                    col[index[b]?] += f * vb;
                }
            }
        }
        let d = equilibration(&m, n)?;
        let norm = scaled_norm_1(&m, n, &d);
        // Cholesky is invariant under the scaling D (powers of two: exactly so), so M itself
        // is factorised and D enters only the condition estimate.
        let par = Par::Seq;
        let mut buf = MemBuffer::new(factor::cholesky_in_place_scratch::<f64>(
            n,
            par,
            Default::default(),
        ));
        factor::cholesky_in_place(
            MatMut::from_column_major_slice_mut(&mut m, n, n),
            LltRegularization::default(),
            par,
            MemStack::new(&mut buf),
            Default::default(),
        )
        .ok()?;
        let mut normal = Normal {
            n,
            support,
            index,
            l: m,
            d,
            condition: f64::INFINITY,
        };
        // kappa_1(D M D) = |D M D|_1 |D^-1 M^-1 D^-1|_1.
        let inverse = inverse_norm_1(n, |x, k| {
            for col in x.chunks_mut(n) {
                col.iter_mut().zip(&normal.d).for_each(|(v, d)| *v /= d);
            }
            normal.solve_block(x, k);
            for col in x.chunks_mut(n) {
                col.iter_mut().zip(&normal.d).for_each(|(v, d)| *v /= d);
            }
        });
        normal.condition = norm * inverse;
        (normal.condition <= KAPPA_FAST).then_some(normal)
    }

    /// `b <- M^-1 b = (L L')^-1 b`, over the measured cells (in `support` order).
    pub(super) fn solve(&self, b: &mut [f64]) {
        self.solve_block(b, 1);
    }

    /// The same for the `k` columns of the column-major block `b`.
    fn solve_block(&self, b: &mut [f64], k: usize) {
        let n = self.n;
        let l = MatRef::from_column_major_slice(&self.l, n, n);
        let mut rhs = MatMut::from_column_major_slice_mut(b, n, k);
        triangular_solve::solve_lower_triangular_in_place(l, rhs.as_mut(), Par::Seq);
        triangular_solve::solve_upper_triangular_in_place(l.transpose(), rhs.as_mut(), Par::Seq);
    }
}

/// `D` with `D_jj` the power of two nearest `M_jj^(-1/2)`, so that `D M D` has its diagonal
/// in [0.5, 2); `None` when a diagonal is not positive and normal (an unmeasured cell, or an
/// underflow or overflow of the weights).
fn equilibration(m: &[f64], n: usize) -> Option<Vec<f64>> {
    (0..n)
        .map(|j| {
            let mjj = m[j * n + j];
            let e = (-0.5 * mjj.log2()).round() as i32;
            let d = 2f64.powi(e);
            (mjj.is_normal() && mjj > 0.0 && d.is_normal()).then_some(d)
        })
        .collect()
}

/// `|D M D|_1` of the symmetric `M` whose lower triangle is `m` (column-major `n x n`).
fn scaled_norm_1(m: &[f64], n: usize, d: &[f64]) -> f64 {
    let mut sums = vec![0.0; n];
    for j in 0..n {
        // Column j's lower part adds to column j's sum and, by symmetry, entry (i, j) to
        // column i's.
        let mut own = 0.0;
        let col = &m[j * n + j..(j + 1) * n];
        for ((x, di), s) in col.iter().zip(&d[j..]).zip(&mut sums[j..]) {
            let v = (x * di * d[j]).abs();
            *s += v;
            own += v;
        }
        sums[j] += own - (m[j * n + j] * d[j] * d[j]).abs();
    }
    sums.into_iter().fold(0.0, f64::max)
}

/// An estimate of `|B|_1` for the symmetric `B` applied in place by `apply` to the columns of
/// a column-major block (Hager 1984, Higham 1988, as LAPACK's `dlacn2`): at most five steps
/// of a gradient ascent over the unit ball of the 1-norm, and Higham's alternating vector as
/// a safeguard, applied together with the first step. A lower bound.
fn inverse_norm_1(n: usize, mut apply: impl FnMut(&mut [f64], usize)) -> f64 {
    // The first step and the safeguard b_i = (-1)^i (1 + i / (n - 1)) in one block.
    let mut block = vec![1.0 / n as f64; 2 * n];
    for (i, b) in block[n..].iter_mut().enumerate() {
        let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
        *b = sign * (1.0 + i as f64 / (n.max(2) - 1) as f64);
    }
    apply(&mut block, 2);
    let alt = 2.0 * block[n..].iter().map(|v| v.abs()).sum::<f64>() / (3.0 * n as f64);
    block.truncate(n);
    let mut y = block;
    let mut x = vec![1.0 / n as f64; n];
    let mut est = 0.0;
    let mut last = usize::MAX;
    let mut signs: Vec<f64> = Vec::new();
    for step in 0..5 {
        if step > 0 {
            y.clone_from(&x);
            apply(&mut y, 1);
        }
        let norm: f64 = y.iter().map(|v| v.abs()).sum();
        if !norm.is_finite() {
            return f64::INFINITY;
        }
        if step > 0 && norm <= est {
            break;
        }
        est = norm;
        // z = B' sign(y) (B is symmetric); the next x is the unit vector at its largest entry.
        // The same signs as the last step's give the same z: converged (dlacn2's test).
        let next: Vec<f64> = y
            .iter()
            .map(|v| if *v >= 0.0 { 1.0 } else { -1.0 })
            .collect();
        if next == signs {
            break;
        }
        signs.clone_from(&next);
        let mut z = next;
        apply(&mut z, 1);
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
    if !alt.is_finite() {
        return f64::INFINITY;
    }
    est.max(alt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimator_finds_the_norm_of_a_diagonal_inverse() {
        let diag = [4.0, 0.5, 1e-3, 2.0];
        let est = inverse_norm_1(4, |x, _| {
            for col in x.chunks_mut(4) {
                col.iter_mut().zip(diag).for_each(|(v, d)| *v /= d);
            }
        });
        assert!((est - 1e3).abs() < 1e-9, "{est}");
    }

    #[test]
    fn refuses_an_unmeasured_cell_and_certifies_a_well_conditioned_history() {
        let rows = vec![vec![(0, 1.0)], vec![(0, 1.0), (1, 1.0)]];
        assert!(Normal::new(&[true, true], &rows[..1], &[1.0]).is_none());
        let n = Normal::new(&[true, true, false], &rows, &[1.0, 4.0]).expect("well conditioned");
        assert_eq!(n.support, vec![0, 1]);
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
