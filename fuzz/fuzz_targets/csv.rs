//! Fuzz target `csv`: any bytes, written to a file and given to `data::load_csv`, load or give
//! a `DataError`, never a panic; a loaded table's schema matches its column count.
#![no_main]

use dpq::data::{load_csv, LoadOptions};
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

/// One temporary file for the whole run, rewritten for every input.
fn path() -> &'static PathBuf {
    static PATH: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &PATH
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("a temporary directory");
            let p = dir.path().join("fuzz.csv");
            (dir, p)
        })
        .1
}

fuzz_target!(|data: &[u8]| {
    let p = path();
    std::fs::write(p, data).expect("write the input");
    // Small limits reach the TooLarge and TooManyFields paths too.
    let small = LoadOptions {
        max_bytes: 4096,
        max_fields: 16,
        ..LoadOptions::default()
    };
    for opts in [LoadOptions::default(), small] {
        if let Ok(table) = load_csv(p, &opts) {
            assert_eq!(table.schema().len(), table.n_columns());
            assert!(table.n_columns() >= 1);
        }
    }
});
