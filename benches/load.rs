//! Benchmark of `load_csv` on a generated 10-million-row CSV file (about 280 MB).
//!
//! The file is written to a temporary directory at setup and removed afterwards. Set
//! `DPQ_BENCH_ROWS` to use another row count.

mod common;

use common::{bench_rows, write_people};

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
        // The table is dropped outside the timed part.
        b.iter_batched(
            || (),
            |()| load_csv(&path, &opts).expect("the benchmark file loads"),
            BatchSize::PerIteration,
        )
    });
    // The whole statement as a user runs it: load, fingerprint the file for its ledger, open
    // the ledger (in a fresh state directory each time), describe the table.
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

criterion_group!(benches, load);
criterion_main!(benches);
