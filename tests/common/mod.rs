//! Helpers shared by the integration tests: a script run to its JSON results, and a file
//! written into a test's own directory.
#![allow(dead_code)]

use dpq::driver::{run_source, Emitted};
use dpq::eval::Session;
use dpq::output::Format;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Runs `source` in `session` and parses every result and error, in order.
pub fn run_json(session: &mut Session, source: &str) -> Vec<Value> {
    let mut out = Vec::new();
    run_source(session, "test", source, Format::Json, &mut |e| {
        let (Emitted::Result(s) | Emitted::Error(s)) = e;
        out.push(serde_json::from_str(&s).expect("every result is one JSON object"));
    });
    out
}

/// Writes `text` to `dir/name` and returns its path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("the file is written");
    path
}
