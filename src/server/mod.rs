//! `dpq serve`: a curator's policy served to analysts over HTTP, with the same statements and
//! JSON results as local dpq. The analysts hold neither the data nor the state; the policy
//! fixes the datasets, their schemas, budgets and rules, and who may use them.
//!
//! It sits above the evaluator, as the prompt does: `policy` reads the curator's TOML,
//! `token` makes and checks bearer tokens, `api` is what travels over the wire, `app` is
//! the server itself, `activity` what it tells the curator as analysts work, and `reset`
//! clears a demo's state for its next class.

pub mod activity;
pub mod api;
mod app;
pub mod client;
pub mod identity;
pub mod policy;
mod reset;
pub mod token;

pub use app::{
    contents_of, read_dataset, response_deadline, serve, unpadded_note, Options, Started,
};
pub use reset::reset_demo;
