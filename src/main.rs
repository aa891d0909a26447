//! The `dpq` binary: the REPL, the script runner and one-shot statements; it owns the terminal.
#![deny(clippy::unwrap_used)]

mod cli;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Args::parse();
    cli::main(args)
}
