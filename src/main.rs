//! The `dpq` binary: the REPL, the script runner and one-shot statements; it owns the terminal.
#![deny(clippy::unwrap_used)]

mod cli;

use std::process::ExitCode;

#[cfg(all(unix, feature = "jemalloc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    match cli::parse() {
        Ok(args) => cli::main(args),
        Err(code) => code,
    }
}
