//! Draws of the joint error of several BLUE estimates from one history, for what is not linear
//! in them (the bin holding a quantile): each release's noise drawn again from its own law and
//! pushed through the estimates' weights.
//!
//! The estimates `theta-hat_k = A_k y` of one history share its noises: their errors are
//! `e = A N` (Xiao and Xiong 2012, Lemma 4.1, one row of `A` per estimate), with
//! `N_i ~ Laplace(b_i)` independent, `b_i = S_i / alpha_i` (or `N_i ~ Normal(0, sigma_i^2)`
//! for a Gaussian release). Drawing `N` again with the same
//! scales and computing `A N` gives draws of exactly that joint law, correlations included
//! (estimates of bins that a release covers together move together). Under the paper's flat
//! prior the true values are `theta-hat - e`, as for one estimate in [`super::exact`].
//!
//! Draws come in chunks of [`CHUNK`]; chunk `c` draws from its own ChaCha8 stream `c` of the
//! given seed, so the outcome depends on the seed alone, never on how many threads ran the
//! chunks (they run in parallel on rayon's pool). Cost per draw: one Laplace variable per
//! release that weighs in some estimate, and `A N` either sparse (`nnz(A)` multiply-adds, a
//! histogram's parts: one each) or, for eight estimates or more with more than a quarter of
//! `A` non-zero, by faer's matrix product over the chunk.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef, Par};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Exp1, StandardNormal};

use super::exact::Law;
use rayon::prelude::*;

/// Draws per chunk (one ChaCha8 stream each).
pub const CHUNK: usize = 500;

/// The fewest estimates for which weights mostly non-zero are multiplied as a dense matrix.
const DENSE_ESTIMATES: usize = 8;

/// Per release, its `(estimate, weight)` pairs.
type Columns = Vec<Vec<(usize, f64)>>;

/// The releases with a non-zero weight in some estimate: per release, its `(estimate, weight)`
/// pairs, and its scale and law.
fn columns(weights: &[Vec<f64>], noises: &[(f64, Law)]) -> (Columns, Vec<(f64, Law)>) {
    let mut columns: Columns = vec![Vec::new(); noises.len()];
    for (k, w) in weights.iter().enumerate() {
        for (i, &a) in w.iter().enumerate().take(noises.len()) {
            if a != 0.0 && noises[i].0 != 0.0 {
                columns[i].push((k, a));
            }
        }
    }
    columns
        .into_iter()
        .zip(noises.iter().copied())
        .filter(|(column, _)| !column.is_empty())
        .unzip()
}

/// The weights of several estimates over the releases that weigh in at least one of them.
#[derive(Debug, Clone)]
enum Weights {
    /// Per release, its `(estimate, weight)` pairs.
    Sparse(Vec<Vec<(usize, f64)>>),
    /// `A` over the kept releases: estimates x releases.
    Dense(Mat<f64>),
}

/// The joint law of the errors of several estimates from one history, ready to be drawn.
#[derive(Debug, Clone)]
pub struct JointError {
    estimates: usize,
    /// The scale (`b_i`, or `sigma_i` for a normal law) and law of each release kept (one with
    /// a non-zero weight in some estimate).
    noises: Vec<(f64, Law)>,
    weights: Weights,
}

impl JointError {
    /// The errors of the estimates whose BLUE weights are `weights` (one vector per estimate,
    /// one weight per release of the history, as [`super::blue::Estimate::weights`]), the
    /// release `i` having noise of scale `noises[i].0` and law `noises[i].1` (Laplace of
    /// scale `S_i / alpha_i`, or normal of that standard deviation). Missing weights count as
    /// 0; a release of scale 0 (none in a valid history) adds nothing.
    pub fn new(weights: &[Vec<f64>], noises: &[(f64, Law)]) -> JointError {
        let (columns, _) = columns(weights, noises);
        let nnz: usize = columns.iter().map(Vec::len).sum();
        // A matrix product pays for itself on many estimates sharing most releases.
        let dense = weights.len() >= DENSE_ESTIMATES && 4 * nnz > weights.len() * columns.len();
        JointError::build(weights, noises, dense)
    }

    /// The errors of the estimates, their weights kept dense or sparse as `dense` says.
    fn build(weights: &[Vec<f64>], noises: &[(f64, Law)], dense: bool) -> JointError {
        let estimates = weights.len();
        let (columns, noises) = columns(weights, noises);
        let weights = if dense {
            let mut a = Mat::<f64>::zeros(estimates, columns.len());
            for (j, column) in columns.iter().enumerate() {
                for &(k, w) in column {
                    a[(k, j)] = w;
                }
            }
            Weights::Dense(a)
        } else {
            Weights::Sparse(columns)
        };
        JointError {
            estimates,
            noises,
            weights,
        }
    }

    /// The number of releases whose noise is drawn (those that weigh in some estimate).
    pub fn releases(&self) -> usize {
        self.noises.len()
    }

    /// `draws` draws of the errors `e = A N`, each handed to `visit` (a slice of one error
    /// per estimate, which it may overwrite), and what `visit` returns, in the order drawn.
    /// Deterministic for a
    /// `seed`.
    pub fn draw<T, F>(&self, draws: usize, seed: [u8; 32], visit: F) -> Vec<T>
    where
        T: Send,
        F: Fn(&mut [f64]) -> T + Sync,
    {
        let chunks = draws.div_ceil(CHUNK);
        let per_chunk: Vec<Vec<T>> = (0..chunks)
            .into_par_iter()
            .map(|c| {
                let n = CHUNK.min(draws - c * CHUNK);
                let mut rng = ChaCha8Rng::from_seed(seed);
                rng.set_stream(c as u64);
                self.chunk(n, &mut rng, &visit)
            })
            .collect();
        per_chunk.into_iter().flatten().collect()
    }

    /// `n` draws from `rng`: the noises of a draw are drawn together, release by release.
    fn chunk<T>(&self, n: usize, rng: &mut ChaCha8Rng, visit: &dyn Fn(&mut [f64]) -> T) -> Vec<T> {
        let m = self.noises.len();
        // N': releases x draws, one draw per column (column-major).
        let mut noise = vec![0.0; m * n];
        let mut laplace = Laplace::new(rng);
        for column in noise.chunks_exact_mut(m.max(1)) {
            for (x, &(b, law)) in column.iter_mut().zip(&self.noises) {
                *x = match law {
                    Law::Laplace => laplace.draw(b),
                    Law::Normal => b * laplace.rng.sample::<f64, _>(StandardNormal),
                };
            }
        }
        match &self.weights {
            Weights::Dense(a) => {
                // E = A N': estimates x draws.
                let mut e = Mat::<f64>::zeros(self.estimates, n);
                if m > 0 {
                    let noise = MatRef::from_column_major_slice(&noise, m, n);
                    matmul(&mut e, Accum::Replace, a, noise, 1.0, Par::Seq);
                }
                (0..n).map(|d| visit(e.col_as_slice_mut(d))).collect()
            }
            Weights::Sparse(columns) => {
                let mut e = vec![0.0; self.estimates];
                (0..n)
                    .map(|d| {
                        e.iter_mut().for_each(|x| *x = 0.0);
                        for (column, &x) in columns.iter().zip(&noise[d * m..(d + 1) * m]) {
                            for &(k, w) in column {
                                e[k] += w * x;
                            }
                        }
                        visit(&mut e)
                    })
                    .collect()
            }
        }
    }
}

/// Laplace draws from one generator: an exponential (rand_distr's ziggurat `Exp1`) times the
/// scale, with a random sign, the signs taken 64 at a time from one word. In floating point:
/// these draws are computation, never a release.
struct Laplace<'a> {
    rng: &'a mut ChaCha8Rng,
    signs: u64,
    left: u32,
}

impl<'a> Laplace<'a> {
    fn new(rng: &'a mut ChaCha8Rng) -> Self {
        Laplace {
            rng,
            signs: 0,
            left: 0,
        }
    }

    /// One draw of Laplace(0, b): density `exp(-|x| / b) / 2b`.
    fn draw(&mut self, b: f64) -> f64 {
        if self.left == 0 {
            self.signs = self.rng.next_u64();
            self.left = 64;
        }
        let negative = self.signs & 1 == 1;
        self.signs >>= 1;
        self.left -= 1;
        let magnitude: f64 = self.rng.sample(Exp1);
        if negative {
            -b * magnitude
        } else {
            b * magnitude
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sample covariance of the errors, from `draws` draws.
    fn covariance(joint: &JointError, draws: usize) -> Vec<Vec<f64>> {
        let k = joint.estimates;
        let samples = joint.draw(draws, [7; 32], |e: &mut [f64]| e.to_vec());
        let mut c = vec![vec![0.0; k]; k];
        for e in &samples {
            for i in 0..k {
                for j in 0..k {
                    c[i][j] += e[i] * e[j] / draws as f64;
                }
            }
        }
        c
    }

    /// Laplace noises of these scales.
    fn laplace(scales: &[f64]) -> Vec<(f64, Law)> {
        scales.iter().map(|&b| (b, Law::Laplace)).collect()
    }

    /// `sum_r a_ir a_jr Var(N_r)`: the covariance of `A N` (`Var = 2 b^2` for Laplace,
    /// `sigma^2` for normal).
    fn exact(weights: &[Vec<f64>], noises: &[(f64, Law)]) -> Vec<Vec<f64>> {
        let var = |(b, law): (f64, Law)| match law {
            Law::Laplace => 2.0 * b * b,
            Law::Normal => b * b,
        };
        weights
            .iter()
            .map(|wi| {
                weights
                    .iter()
                    .map(|wj| {
                        (0..noises.len())
                            .map(|r| wi[r] * wj[r] * var(noises[r]))
                            .sum()
                    })
                    .collect()
            })
            .collect()
    }

    /// Both paths draw the covariance of `A N`: within 5 standard errors of each entry
    /// (`sqrt(Var(e_i e_j) / n)`, bounded by `sqrt(E[e_i^2 e_j^2] / n)`, at most
    /// `sqrt(6 Var_i Var_j / n)` for sums of Laplace and normal variables, whose kurtosis is
    /// at most 6). Two of the releases are Gaussian.
    #[test]
    fn the_draws_have_the_covariance_of_the_weighted_noises() {
        let scales = [
            (1.0, Law::Laplace),
            (2.0, Law::Normal),
            (0.5, Law::Laplace),
            (3.0, Law::Normal),
            (1.5, Law::Laplace),
        ];
        // Sparse: each release in one estimate at most (a histogram's parts), one estimate
        // with no release, one release in none.
        let sparse = vec![
            vec![1.0, 0.0, 0.0, 0.0, 0.0],
            vec![0.0, 1.0, 0.5, 0.0, 0.0],
            vec![0.0, 0.0, 0.0, 1.0, 0.0],
            vec![0.0; 5],
        ];
        // Dense: releases shared by the estimates, two of them weighing in none.
        let dense = vec![
            vec![0.5, 0.25, -1.0, 0.0, 0.0],
            vec![0.5, -0.75, 1.0, 0.0, 0.0],
        ];
        let n = 40_000;
        for weights in [sparse, dense] {
            for dense in [false, true] {
                let joint = JointError::build(&weights, &scales, dense);
                assert_eq!(joint.releases(), if weights.len() == 4 { 4 } else { 3 });
                let got = covariance(&joint, n);
                let want = exact(&weights, &scales);
                for i in 0..weights.len() {
                    for j in 0..weights.len() {
                        let se = (6.0 * want[i][i] * want[j][j] / n as f64).sqrt();
                        assert!(
                            (got[i][j] - want[i][j]).abs() <= 5.0 * se,
                            "{weights:?}, dense {dense}: cov[{i}][{j}] {} against {} (se {se})",
                            got[i][j],
                            want[i][j]
                        );
                    }
                }
            }
        }
    }

    /// Dense and sparse weights draw the same noises and give the same errors (to rounding);
    /// `new` keeps few estimates sparse, and many sharing most releases dense.
    #[test]
    fn dense_and_sparse_weights_agree() {
        let scales: Vec<f64> = (1..=12).map(f64::from).collect();
        let weights: Vec<Vec<f64>> = (0..9)
            .map(|k| {
                (0..12)
                    .map(|i| ((i * 7 + k * 3) % 5) as f64 - 2.0)
                    .collect()
            })
            .collect();
        let sparse = JointError::build(&weights, &laplace(&scales), false);
        let dense = JointError::build(&weights, &laplace(&scales), true);
        let a = sparse.draw(1200, [3; 32], |e: &mut [f64]| e.to_vec());
        let b = dense.draw(1200, [3; 32], |e: &mut [f64]| e.to_vec());
        for (x, y) in a.iter().flatten().zip(b.iter().flatten()) {
            assert!((x - y).abs() <= 1e-12 * (1.0 + x.abs()), "{x} against {y}");
        }
        assert!(matches!(
            JointError::new(&weights, &laplace(&scales)).weights,
            Weights::Dense(_)
        ));
        assert!(matches!(
            JointError::new(&weights[..3], &laplace(&scales)).weights,
            Weights::Sparse(_)
        ));
    }

    /// The same seed gives the same draws, whatever the pool; another seed, others.
    #[test]
    fn the_draws_depend_on_the_seed_alone() {
        let joint = JointError::new(&[vec![1.0, 1.0], vec![0.0, 2.0]], &laplace(&[1.0, 1.0]));
        let a = joint.draw(1234, [1; 32], |e: &mut [f64]| e.to_vec());
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("a pool of one thread");
        let b = one.install(|| joint.draw(1234, [1; 32], |e: &mut [f64]| e.to_vec()));
        assert_eq!(a.len(), 1234);
        assert_eq!(a, b);
        assert_ne!(a, joint.draw(1234, [2; 32], |e: &mut [f64]| e.to_vec()));
    }

    /// No release weighs in: every error is 0.
    #[test]
    fn no_weight_no_error() {
        let joint = JointError::new(&[vec![0.0, 0.0]], &laplace(&[1.0, 1.0]));
        assert_eq!(joint.releases(), 0);
        let d = joint.draw(3, [0; 32], |e: &mut [f64]| e.to_vec());
        assert_eq!(d, vec![vec![0.0]; 3]);
    }
}
