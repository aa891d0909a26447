//! Benchmark of `load_csv` (parsing and the content hash) on a generated 10-million-row CSV
//! file (about 280 MB), beside a plain BLAKE3 pass over the same file and the whole `LOAD`.
//!
//! The file is written to a temporary directory at setup and removed afterwards. Set
//! `DPQ_BENCH_ROWS` to use another row count.

mod common;

use common::{bench_rows, write_people};

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode, Throughput};
use dpq::data::{load_csv, LoadOptions};
use dpq::driver::run_source;
use dpq::eval::{Randomness, Session};
use dpq::output::Format;
use dpq::privacy::Store;

fn load(c: &mut Criterion) {
    let rows = bench_rows();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("people.csv");
    write_people(&path, rows).expect("the benchmark file is written");
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let opts = LoadOptions::default();

    let mut group = c.benchmark_group("load");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(8));
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function(format!("load_csv {rows} rows"), |b| {
        // Parsing and the content hash, in one pass over the file. The table is dropped
        // outside the timed part.
        b.iter_batched(
            || (),
            |()| load_csv(&path, &opts).expect("the benchmark file loads"),
            BatchSize::PerIteration,
        )
    });
    // For comparison: a plain BLAKE3 pass over the file, as a second read to hash it costs.
    group.bench_function(format!("blake3 of the file {rows} rows"), |b| {
        b.iter(|| blake3_of(&path).expect("the benchmark file is read"))
    });
    // The whole statement as a user runs it: load (with the content hash), open the ledger
    // (in a fresh state directory each time), describe the table.
    let statement = format!("LOAD '{}' AS people;", path.display());
    group.bench_function(format!("LOAD statement {rows} rows"), |b| {
        b.iter_batched(
            || {
                let state = tempfile::tempdir().expect("a state directory");
                let session =
                    Session::with_store(Randomness::Os, Store::dir(state.path().to_path_buf()));
                (state, session)
            },
            |(state, mut session)| {
                let ok = run_source(&mut session, "bench", &statement, Format::Json, &mut |_| {});
                assert!(ok, "the benchmark file loads");
                (state, session)
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

/// BLAKE3 of a file read sequentially through a 1 MiB buffer.
fn blake3_of(path: &Path) -> std::io::Result<blake3::Hash> {
    let mut hasher = blake3::Hasher::new();
    let mut file = File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(hasher.finalize());
        }
        hasher.update(&buf[..n]);
    }
}

criterion_group!(benches, load);
criterion_main!(benches);
