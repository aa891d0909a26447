//! The estimator library: noise, the Bayes posterior of a count, accuracy formulas; no syntax, no sessions.

mod params;

pub use params::{Epsilon, ParamError, Positive, Probability};
