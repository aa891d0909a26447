//! The estimator library used on its own, without the language: a noisy count, its Bayes
//! estimate, and the epsilon for an accuracy requirement.
//!
//! Run with `cargo run --example embed`.

use dpq::stats::noise::{laplace_count, ExactEpsilon};
use dpq::stats::{accuracy, bayes, laplace, Epsilon, Positive, Probability};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rust_decimal::Decimal;

fn main() -> Result<(), dpq::stats::ParamError> {
    // A fixed seed, so the example prints the same numbers every time (and is not private).
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let n = 10_000;
    let eps = Epsilon::new(0.1)?;
    let prior = Probability::new(0.3)?;
    let level = Probability::new(0.95)?;

    // A count known only to the data holder, released with Laplace noise of scale 1/eps,
    // sampled exactly on a grid of 2^-17 (safe against floating-point attacks).
    let true_count = 2_987;
    let exact = ExactEpsilon::new(Decimal::new(1, 1))?;
    let released = laplace_count(&mut rng, true_count, exact);
    let noisy = released.value();
    println!("released on a grid of 2^-{}", released.k);
    let half = laplace::interval_half_width(eps, level);
    println!(
        "noisy count {noisy:.2}, 95% noise interval [{:.1}, {:.1}]",
        noisy - half,
        noisy + half
    );

    // Post-processing of the released answer: the Bayes posterior under a Binomial(n, 0.3) prior.
    let post = bayes::posterior(n, prior, eps, noisy, level);
    println!(
        "Bayes estimate {:.2}, 95% credible interval [{}, {}]",
        post.mean, post.lower, post.upper
    );

    // The epsilon for answers within 20% of 100 with probability 0.8.
    let chosen = accuracy::choose_eps_relative(
        Positive::new(0.2)?,
        Probability::new(0.8)?,
        Positive::new(100.0)?,
    );
    println!("eps for +-20% of 100 at 0.8: {chosen:.4}");
    println!(
        "worst-case probability of an answer outside [0, n]: {:.3}",
        accuracy::out_of_range_max(n, eps)
    );
    Ok(())
}
