//! The persistent ledger and the accounting it keeps: restarts, damage, concurrent
//! processes, the column store and row-group skipping, and a served dataset's identity.

#[path = "../common/mod.rs"]
mod common;

mod accounting_attack;
mod gaussian_sum;
mod lanes_attack;
mod ledger;
mod prune_attack;
mod serve_identity;
