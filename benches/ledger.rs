//! Benchmarks of statements against a long ledger: a `COUNT` and a `LOAD` on a 10,000-row
//! table whose ledger already holds 100,000 releases (targets: at most 2 ms and 0.5 s).
//!
//! The long ledger is built once at set-up through the session itself, without `fsync`
//! (`Store::unsynced`, a set-up shortcut only); the measured statements use the real, synced
//! store. `DPQ_BENCH_RELEASES` changes the number of releases.

// Shared with the count and load benchmarks; this one needs only the table writer.
mod common;

use common::write_people;

use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use dpq::driver::{run_source, Emitted};
use dpq::eval::{Randomness, Session};
use dpq::output::Format;
use dpq::privacy::Store;

/// Releases in the long ledger: `DPQ_BENCH_RELEASES`, else 100,000.
fn releases() -> usize {
    std::env::var("DPQ_BENCH_RELEASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000)
}

/// Runs `source`, panicking on any error.
fn run(session: &mut Session, source: &str) {
    let ok = run_source(session, "bench", source, Format::Json, &mut |e| {
        if let Emitted::Error(e) = e {
            panic!("{e}");
        }
    });
    assert!(ok);
}

fn load(path: &Path) -> String {
    format!("LOAD '{}' AS people;", path.display())
}

fn long_ledger(c: &mut Criterion) {
    let n = releases();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data = dir.path().join("people.csv");
    write_people(&data, 10_000).expect("the table is written");
    let state = dir.path().join("state");
    {
        let store = Store::dir(&state).unsynced();
        let mut session = Session::with_store(Randomness::Os, store);
        run(&mut session, &format!("{} SET BUDGET 1000;", load(&data)));
        let mut script = String::new();
        for i in 0..n {
            // Distinct queries, so every one is a release of its own.
            script.push_str(&format!("COUNT WHERE income < {} WITH EPS 0.001;\n", i + 1));
            if script.len() > 1 << 20 {
                run(&mut session, &script);
                script.clear();
            }
        }
        run(&mut session, &script);
    }
    let mut group = c.benchmark_group(format!("ledger with {n} releases"));
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));

    // A fresh session loads the table: the whole ledger is read and verified.
    group.bench_function("LOAD", |b| {
        b.iter_batched(
            || Session::with_store(Randomness::Os, Store::dir(&state)),
            |mut session| {
                run(&mut session, &load(&data));
                session
            },
            BatchSize::PerIteration,
        )
    });

    // A COUNT in a session that has loaded the table: only what was appended since is read.
    let mut session = Session::with_store(Randomness::Os, Store::dir(&state));
    run(&mut session, &load(&data));
    let mut next = 0u64;
    group.bench_function("COUNT", |b| {
        b.iter(|| {
            next += 1;
            run(
                &mut session,
                &format!("COUNT WHERE income >= {next} WITH EPS 0.001;"),
            );
        })
    });
    group.finish();
}

criterion_group!(benches, long_ledger);
criterion_main!(benches);
