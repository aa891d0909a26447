//! The mathematics against the papers and against independent references: estimators,
//! noise distributions, privacy of the noise, credible intervals, utility-driven answering.

#[path = "../common/mod.rs"]
mod common;

mod binned_coverage;
mod gaussian_blue;
mod geometric_interval;
mod neighbours;
mod noise_gaussian;
mod noise_privacy;
mod noise_staircase;
mod slides_noise;
mod smooth;
mod smooth_privacy;
mod stats_bayes;
mod stats_laplace;
mod stats_simulate;
mod stats_staircase;
mod stats_tail;
mod utility_driven;
mod within_combined;
mod xiao_xiong;
mod zcdp_privacy;
mod zcdp_sum;
