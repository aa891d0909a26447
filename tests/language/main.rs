//! The language as its users meet it: the binary, the prompt, transcripts, the guide, the
//! layering of the sources, and what a refused statement leaves behind.
//!
//! One test binary per group of test modules: each binary links all of dpq and its
//! dependencies (about 130 MB in a debug build), so sixty binaries took more disk than a fresh
//! CI machine may have. The tests that measure time stay binaries of their own
//! (`tests/*.rs`), where no other group runs beside them.

#[path = "../common/mod.rs"]
mod common;

mod architecture;
mod attack;
mod canary;
mod classroom;
mod cli;
mod declared_columns;
mod golden;
mod guide;
mod interrupt;
mod lab;
mod plot;
mod session;
mod sql_attack;
mod width;
