//! dpq: an interpreter for a declarative language of differentially private queries over CSV data.
//!
//! The pipeline, one stage per module:
//!
//! ```text
//! source text
//!   | syntax::parse_script   pest Pairs never leave syntax/
//!   v
//! ast::Statement           every node carries a Span (byte offsets)
//!   | check                names resolved against the schema, parameters validated
//!   v
//! plan::Plan               strictly typed: Epsilon, Probability, column indices
//!   | eval::Session        tables, budget and history, RNG (injected, never global)
//!   v
//! output::Output (data)    noisy answers, estimates, budget reports; never text
//!   | output::render       comfy-table or JSON, one place
//!   v
//! text
//! ```
//!
//! `stats` is the estimator library (noise, Bayes posterior, accuracy formulas); it knows
//! nothing of syntax or sessions and can be used alone (see `examples/embed.rs`).
//! `data` is the in-memory column store and its CSV loader. The library never prints and
//! never exits; the `dpq` binary owns the terminal.
#![deny(clippy::unwrap_used)]

pub mod ast;
pub mod check;
pub mod cube;
pub mod data;
pub mod driver;
pub mod error;
pub mod eval;
pub mod help;
pub mod output;
pub mod plan;
pub mod privacy;
#[cfg(feature = "python")]
pub mod python;
#[cfg(feature = "native")]
pub mod server;
pub mod span;
pub mod spelling;
pub mod stats;
pub mod syntax;
pub mod sys;
#[cfg(target_arch = "wasm32")]
pub mod web;

/// The Spark Connect client dpq asks Spark with, for tests and benchmarks that set up the
/// tables it is asked about.
#[cfg(feature = "spark")]
#[doc(hidden)]
pub use spark_connect;
