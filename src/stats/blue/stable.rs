//! The stable path of the BLUE: a column-pivoted Householder QR of the weighted design
//! restricted to a basis of cells, with its rows sorted by decreasing size.
//!
//! When `H` has rank `r`, a basis `B` of `r` cells (from [`super::design`]) carries the whole
//! model: the other columns are combinations `H_N = H_B T`, so `H x = H_B z` with
//! `z = x_B + T x_N`, and an estimable `q` has `q x = q_B z`. The BLUE of `q_B z` in the
//! full-rank model `y = H_B z + N` is that of `q x`. With `A = W^(1/2) H_B` and `A P = Q R`,
//! the BLUE's weights are `a = W^(1/2) t` where `t = Q R^-T P' q_B'` is the least-norm
//! solution of `A' t = q_B'` (eq. 51: `a = W H_B (H_B' W H_B)^-1 q_B'`), and its variance is
//! `2 |t|^2` (eq. 52). Householder QR is backward stable, so the weights and the variance
//! carry a relative error of about `u kappa(A)` (Higham, Thm 19.4 and 21.4), not the
//! `u kappa(A)^2` of the normal equations; sorting the rows by decreasing norm before the
//! column-pivoted QR keeps it row-wise stable when the epsilons differ by orders of magnitude
//! (Cox and Higham, *Stability of Householder QR factorization for weighted least squares
//! problems*, 1998), so that weights alone do not cost digits.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::householder;
use faer::linalg::solvers::ColPivQr;
use faer::linalg::triangular_solve;
use faer::{Conj, MatMut, Par};

/// The factorised weighted design over a basis of cells.
#[derive(Debug, Clone)]
pub(super) struct Stable {
    /// `A P = Q R` of the sorted weighted rows: `Q` kept as its Householder vectors.
    qr: ColPivQr<f64>,
    /// `perm[k]`: the basis position at pivot position `k`.
    perm: Vec<usize>,
    /// `order[k]`: the measurement at sorted row `k`.
    order: Vec<usize>,
    /// `z-hat = P R^-1 Q' W^(1/2) y` in basis order: the least-squares solution of the reduced
    /// model (eq. 50), from which values are computed.
    z: Vec<f64>,
}

impl Stable {
    /// Factorises `diag(s) H_B` for the basis cells `basis` (independent columns of `H`).
    /// `position[c]` is the index of cell `c` in `basis`, if any.
    pub(super) fn new(
        basis: &[usize],
        position: &[Option<usize>],
        rows: &[Vec<(usize, f64)>],
        s: &[f64],
        y: &[f64],
    ) -> Stable {
        let r = basis.len();
        // Row-sorting: the measurements that touch the basis, by decreasing weighted size.
        let mut order: Vec<(usize, f64)> = rows
            .iter()
            .zip(s)
            .enumerate()
            .filter_map(|(i, (row, si))| {
                let big = row
                    .iter()
                    .filter(|(c, _)| position[*c].is_some())
                    .fold(0.0f64, |a, (_, v)| a.max((si * v).abs()));
                (big > 0.0).then_some((i, big))
            })
            .collect();
        order.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut a = faer::Mat::<f64>::zeros(order.len(), r);
        for (k, &(i, _)) in order.iter().enumerate() {
            for &(c, v) in &rows[i] {
                if let Some(p) = position[c] {
                    a[(k, p)] = s[i] * v;
                }
            }
        }
        let qr = ColPivQr::new(a.as_ref());
        let perm = qr.P().arrays().0.to_vec();
        let mut stable = Stable {
            qr,
            perm,
            order: order.into_iter().map(|x| x.0).collect(),
            z: Vec::new(),
        };
        // Eq. 50 in the reduced model: z-hat = (A'A)^-1 A' W^(1/2) y = P R^-1 Q' W^(1/2) y.
        let mut b: Vec<f64> = stable.order.iter().map(|&i| s[i] * y[i]).collect();
        stable.apply_q(&mut b, true);
        b.truncate(r);
        if r > 0 && b.len() == r {
            let rhs = MatMut::from_column_major_slice_mut(&mut b, r, 1);
            triangular_solve::solve_upper_triangular_in_place(stable.qr.thin_R(), rhs, Par::Seq);
        }
        stable.z = vec![f64::NAN; r];
        for (k, &p) in stable.perm.iter().enumerate() {
            if let Some(v) = b.get(k) {
                stable.z[p] = *v;
            }
        }
        stable
    }

    /// `b <- Q b`, or `Q' b` when `transpose`, for `b` over the sorted rows.
    fn apply_q(&self, b: &mut [f64], transpose: bool) {
        let basis = self.qr.Q_basis();
        let coeff = self.qr.Q_coeff();
        let m = b.len();
        if m == 0 || coeff.ncols() == 0 {
            return;
        }
        let mut buf = MemBuffer::new(
            householder::apply_block_householder_sequence_on_the_left_in_place_scratch::<f64>(
                m,
                coeff.nrows(),
                1,
            ),
        );
        let stack = MemStack::new(&mut buf);
        let rhs = MatMut::from_column_major_slice_mut(b, m, 1);
        if transpose {
            householder::apply_block_householder_sequence_transpose_on_the_left_in_place_with_conj(
                basis,
                coeff,
                Conj::No,
                rhs,
                Par::Seq,
                stack,
            );
        } else {
            householder::apply_block_householder_sequence_on_the_left_in_place_with_conj(
                basis,
                coeff,
                Conj::No,
                rhs,
                Par::Seq,
                stack,
            );
        }
    }

    /// The BLUE of `c z` for `c` over the basis cells: `c z-hat`. Computed from the
    /// least-squares solution rather than as `sum_i a_i y_i`: when the epsilons differ by
    /// orders of magnitude the small weights are known only to `u kappa(A)` relative to the
    /// largest (the variance does not see them), and the value is better served by the
    /// least-squares solution of the row-sorted QR (Cox and Higham).
    pub(super) fn value(&self, c: &[f64]) -> f64 {
        c.iter().zip(&self.z).map(|(a, b)| a * b).sum()
    }

    /// `t`, one value per measurement (0 for those outside the basis): the least-norm solution
    /// of `A' t = c` for `c` over the basis cells (in basis order).
    pub(super) fn least_norm(&self, c: &[f64], measurements: usize) -> Vec<f64> {
        let r = self.perm.len();
        if self.order.len() < r {
            // Fewer weighted rows than basis cells cannot happen for a basis of the design;
            // answer nothing rather than index out of range.
            return vec![f64::NAN; measurements];
        }
        // u = R^-T P' c, then t = Q [u; 0].
        let mut u: Vec<f64> = self.perm.iter().map(|&k| c[k]).collect();
        if r > 0 {
            let rhs = MatMut::from_column_major_slice_mut(&mut u, r, 1);
            triangular_solve::solve_lower_triangular_in_place(
                self.qr.thin_R().transpose(),
                rhs,
                Par::Seq,
            );
        }
        u.resize(self.order.len(), 0.0);
        self.apply_q(&mut u, false);
        let mut t = vec![0.0; measurements];
        for (k, &i) in self.order.iter().enumerate() {
            t[i] = u[k];
        }
        t
    }
}
