//! The `dpq` binary: REPL, script runner and one-shot statements.
fn main() {}
