//! The privacy layer: the history of releases, the budget arithmetic, the ledger file, the
//! state directory, and the one release protocol by which anything is spent.
//!
//! It sits below the evaluator and imports nothing above it: statements arrive here as
//! requests (a row over cells, an epsilon, a key), and leave as recorded answers or refusals.
//! Everything that carries the promise of SPEC section 1 (budget checked before noise, spending
//! durable before the answer, damage refused, nothing stored that confirms a guess about the
//! data) lives in these files.

pub mod decimal;
pub mod durable;
mod history;
mod identities;
mod ledger;
mod measure;
mod pairs;
mod protocol;
mod row;
mod store;
mod toptwo;
pub mod zcdp;

pub use history::{
    charge, row_sensitivity, sensitivity, Carry, CubeDecl, History, Overspend, Refinement, Release,
    Unit, Where, MAX_UNIT_ROWS,
};
pub use identities::{Identities, IdentityError};
pub use ledger::{Ledger, LedgerError, Lock, MAX_LINE};
pub use measure::Measure;
pub use pairs::{PairCosts, Worst, EXACT_CLASSES};
pub use protocol::{
    ManyTicket, Prepared, PreparedMany, PreparedVector, Recorded, Refusal, ReleaseError, Request,
    Ticket, Txn, VectorRequest, VectorTicket,
};
pub use row::{Row, Run};
pub use store::{Fresh, LedgerId, Ledgers, OpenError, Opened, Store, HELD_ROWS};

use std::fmt;

/// The most cells a cube may have.
pub const MAX_CELLS: usize = 10_000;

/// How neighbouring tables differ: the unit that differential privacy protects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Neighbours {
    /// By one replaced row: tables of the same size, so the row count is public (bounded
    /// differential privacy). The default for loaded tables, whose row count dpq shows.
    #[default]
    Replace,
    /// By one added or removed row: the row count is private (unbounded differential
    /// privacy, Xiao and Xiong's model). The default for teaching cubes.
    AddRemove,
}

impl Neighbours {
    /// The model named `name` as written in a statement or a ledger.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "replace" => Some(Self::Replace),
            "add_remove" => Some(Self::AddRemove),
            _ => None,
        }
    }
}

impl fmt::Display for Neighbours {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Neighbours::Replace => "replace",
            Neighbours::AddRemove => "add_remove",
        })
    }
}

/// How a table's budget composes: in epsilon (pure differential privacy, sequential or
/// per-cell composition), or in rho (zero-concentrated differential privacy, whose costs add
/// as squares: many releases cost far less than under pure accounting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Accounting {
    /// Pure epsilon-DP, the default: a release of epsilon costs epsilon.
    #[default]
    Pure,
    /// rho-zCDP: a Gaussian release costs its rho, a pure release of epsilon costs
    /// `epsilon^2 / 2` (Bun and Steinke 2016, Proposition 1.4), and per cell or pair of cells
    /// a release costs the square of its pure cost's share (see [`pairs`]).
    Zcdp,
}

impl Accounting {
    /// The accounting named `name` as written in a policy or a ledger.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "pure" => Some(Self::Pure),
            "zcdp" => Some(Self::Zcdp),
            _ => None,
        }
    }

    /// The name of its budget's unit: `epsilon` or `rho`.
    pub fn unit(self) -> &'static str {
        match self {
            Accounting::Pure => "epsilon",
            Accounting::Zcdp => "rho",
        }
    }
}

impl fmt::Display for Accounting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Accounting::Pure => "pure",
            Accounting::Zcdp => "zcdp",
        })
    }
}

/// The noise a release adds. Both are sampled exactly with integer arithmetic
/// (`stats::noise`), so no floating-point artefact tells neighbouring inputs apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// Laplace noise of scale `sensitivity / eps`, released on a grid of `2^-k`.
    Laplace,
    /// Two-sided geometric (discrete Laplace) noise: integer answers.
    Geometric,
    /// The staircase noise of the variance-optimal parameter (Geng and Viswanath; the
    /// Soria-Comas and Domingo-Ferrer slides), released on a grid of `2^-20`.
    Staircase,
    /// Heavy-tailed noise scaled to the smooth sensitivity at the data (`SHARE`, `MIN`,
    /// `MEDIAN`, `MAX` with `NOISE smooth`), released on a grid.
    Smooth,
    /// The discrete Gaussian of standard deviation `S2 / sqrt(2 rho)` on a grid of `2^-k`
    /// (`WITH RHO`): rho-zCDP (Canonne, Kamath and Steinke 2020). Its release's `eps` field
    /// holds its rho; only tables that account in zCDP take it.
    Gaussian,
}

impl Mechanism {
    /// The mechanism named `name` as written in a statement or a ledger.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "laplace" => Some(Self::Laplace),
            "geometric" => Some(Self::Geometric),
            "staircase" => Some(Self::Staircase),
            "smooth" => Some(Self::Smooth),
            "gaussian" => Some(Self::Gaussian),
            _ => None,
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mechanism::Laplace => "laplace",
            Mechanism::Geometric => "geometric",
            Mechanism::Staircase => "staircase",
            Mechanism::Smooth => "smooth",
            Mechanism::Gaussian => "gaussian",
        })
    }
}
