//! Helpers shared by the integration tests: a script run to its JSON results, and a file
//! written into a test's own directory.
#![allow(dead_code)]

pub mod cubes;
pub mod serve;
pub mod shards;
pub mod transcript;

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

/// The checksum dpq chains its ledger lines with (`privacy::ledger::chain`): BLAKE3 of the
/// previous checksum, a line feed and the line's JSON; 32 hex digits.
pub fn chain(previous: &str, json: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(previous.as_bytes());
    h.update(b"\n");
    h.update(json.as_bytes());
    h.finalize().to_hex()[..32].to_string()
}

/// Rewrites every line of `ledger` with `edit` (its checksum removed first) and chains the
/// checksums and the high-water mark again, as dpq makes them: a ledger as an earlier dpq
/// wrote it, or as a curator could edit it.
pub fn rewrite_ledger(ledger: &Path, mut edit: impl FnMut(&mut serde_json::Map<String, Value>)) {
    let text = std::fs::read_to_string(ledger).expect("the ledger");
    let mut out = String::new();
    // The chain starts from the genesis value of `privacy::ledger`.
    let mut sum = "dpq-ledger-v2".to_string();
    let mut lines = 0;
    for line in text.lines() {
        let mut v: serde_json::Map<String, Value> =
            serde_json::from_str(line).expect("a ledger line");
        v.remove("sum");
        edit(&mut v);
        let json = serde_json::to_string(&Value::Object(v)).expect("json");
        sum = chain(&sum, &json);
        let body = &json[..json.len() - 1];
        out.push_str(&format!("{body},\"sum\":\"{sum}\"}}\n"));
        lines += 1;
    }
    std::fs::write(ledger, out).expect("rewrite the ledger");
    let name = ledger
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("a name")
        .to_string();
    let mark = serde_json::json!({"ledger": name, "lines": lines, "sum": sum}).to_string();
    std::fs::write(ledger.with_extension("hwm"), format!("{mark:<128}")).expect("the mark");
}

/// The connection string of the test PostgreSQL server (`DPQ_TEST_POSTGRES`; `bash
/// .ci/postgres.sh` starts one and prints it), if there is one. Without it the PostgreSQL
/// side of a test is left out with a note, unless `DPQ_REQUIRE_POSTGRES` is set, as in CI,
/// where its absence fails the test.
pub fn postgres_server() -> Option<String> {
    match std::env::var("DPQ_TEST_POSTGRES") {
        Ok(c) if !c.is_empty() => Some(c),
        _ if std::env::var_os("DPQ_REQUIRE_POSTGRES").is_some() => {
            panic!("DPQ_REQUIRE_POSTGRES is set but DPQ_TEST_POSTGRES names no server")
        }
        _ => {
            eprintln!("note: DPQ_TEST_POSTGRES is not set: the PostgreSQL tests are not run");
            None
        }
    }
}

/// The address of the test Spark Connect server (`DPQ_TEST_SPARK`; `bash .ci/spark.sh` starts
/// one and prints it), if there is one. Without it the Spark side of a test is left out with a
/// note, unless `DPQ_REQUIRE_SPARK` is set, as in CI, where its absence fails the test.
pub fn spark_server() -> Option<String> {
    match std::env::var("DPQ_TEST_SPARK") {
        Ok(c) if !c.is_empty() => Some(c),
        _ if std::env::var_os("DPQ_REQUIRE_SPARK").is_some() => {
            panic!("DPQ_REQUIRE_SPARK is set but DPQ_TEST_SPARK names no server")
        }
        _ => {
            eprintln!("note: DPQ_TEST_SPARK is not set: the Spark tests are not run");
            None
        }
    }
}

/// The byte range of column `column`'s chunk in row group `group` of the Parquet file `file`.
pub fn parquet_chunk_range(file: &Path, group: usize, column: usize) -> (u64, u64) {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let reader = SerializedFileReader::new(std::fs::File::open(file).expect("the file"))
        .expect("a Parquet file");
    reader
        .metadata()
        .row_group(group)
        .column(column)
        .byte_range()
}
