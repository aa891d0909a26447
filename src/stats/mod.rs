//! The estimator library: noise, the Bayes posterior of a count, accuracy formulas; no syntax, no sessions.

pub mod accuracy;
pub mod bayes;
pub mod blue;
pub mod combine;
pub mod exact;
pub mod joint;
pub mod laplace;
pub mod noise;
mod params;
pub mod regions;
pub mod simulate;
pub mod smooth;
pub mod staircase;
pub mod tail;

pub use params::{Epsilon, ParamError, Positive, Probability};
