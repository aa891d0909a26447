//! Fuzz target `csv`: any bytes, written to a file and given to `data::load_csv`, load or give
//! a `DataError`, never a panic; a loaded table's schema matches its column count. The same
//! bytes loaded from memory give the same outcome, and the same content hash: the file's is
//! computed block by block as it is parsed, the memory's in one piece.
#![no_main]

use dpq::data::{load_csv, load_csv_bytes, LoadOptions};
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
    let no_header = LoadOptions {
        header: false,
        ..LoadOptions::default()
    };
    for opts in [LoadOptions::default(), small, no_header] {
        let from_file = load_csv(p, &opts);
        let in_memory = load_csv_bytes(data, &opts);
        match (from_file, in_memory) {
            (Ok(file), Ok(memory)) => {
                let table = &file.table;
                assert_eq!(table.schema().len(), table.n_columns());
                assert!(table.n_columns() >= 1);
                assert_eq!(table.schema(), memory.table.schema());
                assert_eq!(table.n_rows(), memory.table.n_rows());
                assert_eq!(file.content, memory.content, "the content hashes differ");
                assert_eq!(file.content.len(), data.len() as u64);
            }
            (Err(_), Err(_)) => {}
            (a, b) => panic!(
                "the file gives {:?}, memory gives {:?}",
                a.map(|l| l.table),
                b.map(|l| l.table)
            ),
        }
    }
});
