//! Benchmarks of a large cube under `NEIGHBOURS replace`: a `COUNT` and a `LOAD` on a table
//! with a cube of 10,000 cells whose ledger already holds 10,000 releases over it (issue 12:
//! "a cube of 10,000 cells with 10,000 releases still answers a COUNT in milliseconds"; a
//! `LOAD` of such a ledger well under a second).
//!
//! The cube cuts an `id` column of 10,000 rows into 9,999 intervals (`CUBE BY id (2, 3, ...,
//! 9999)`) and a cell of missing values; the releases are counts `id < k` in a shuffled order,
//! so every one splits a class of cells and the history has as many classes as releases, far
//! beyond the pairs kept exactly: its cost comes from the bounds (here they meet: every release
//! separates the first cell from the last). The ledger is built once at set-up through the
//! session without `fsync` (`Store::unsynced`, a set-up shortcut only); the measured
//! statements use the real, synced store. `DPQ_BENCH_RELEASES` changes the number of releases.
//!
//! The same runs again on a table that accounts in zCDP (`SET BUDGET RHO`, Gaussian counts
//! `WITH RHO`, issue 27): every pair's cost is then a sum of squares, kept and bounded as the
//! pure costs are.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use dpq::driver::{run_source, Emitted};
use dpq::eval::{Randomness, Session};
use dpq::output::Format;
use dpq::privacy::Store;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// Rows of the table, and so the cube's cells (9,999 intervals and the missing values).
const ROWS: usize = 10_000;

/// Releases in the ledger: `DPQ_BENCH_RELEASES`, else 10,000.
fn releases() -> usize {
    std::env::var("DPQ_BENCH_RELEASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000)
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
    format!("LOAD '{}' AS t;", path.display())
}

/// A table of `ROWS` rows: an `id` from 1 and a yes/no column.
fn write_table(path: &Path) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(w, "id,x")?;
    for id in 1..=ROWS {
        writeln!(w, "{id},{}", if id % 3 == 0 { "yes" } else { "no" })?;
    }
    w.flush()
}

/// `CUBE BY id (2, 3, ..., ROWS - 1)`: `ROWS` cells.
fn cube() -> String {
    let mut s = String::from("CUBE BY id (");
    for cut in 2..ROWS {
        if cut > 2 {
            s.push_str(", ");
        }
        let _ = write!(s, "{cut}");
    }
    s.push_str(");");
    s
}

fn large_cube(c: &mut Criterion) {
    cube_ledger(c, false);
    cube_ledger(c, true);
}

/// The benchmarks on a table accounting in epsilon, or (`zcdp`) in rho.
fn cube_ledger(c: &mut Criterion, zcdp: bool) {
    let (budget, with) = if zcdp {
        ("SET BUDGET RHO 1000;", "RHO")
    } else {
        ("SET BUDGET 1000;", "EPS")
    };
    let n = releases();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data = dir.path().join("ids.csv");
    write_table(&data).expect("the table is written");
    let state = dir.path().join("state");
    {
        let store = Store::dir(&state).unsynced();
        let mut session = Session::with_store(Randomness::Os, store);
        run(
            &mut session,
            &format!("{} {budget} {}", load(&data), cube()),
        );
        let mut cuts: Vec<usize> = (2..ROWS).collect();
        cuts.shuffle(&mut ChaCha20Rng::seed_from_u64(12));
        let mut script = String::new();
        for i in 0..n {
            // Distinct queries (another epsilon once every cut was used), so every one is a
            // release of its own.
            let round = i / cuts.len();
            let _ = writeln!(
                script,
                "COUNT WHERE id < {} WITH {with} 0.0000{};",
                cuts[i % cuts.len()],
                round + 1
            );
            if script.len() > 1 << 16 {
                run(&mut session, &script);
                script.clear();
            }
        }
        run(&mut session, &script);
    }
    let accounting = if zcdp { ", zCDP" } else { "" };
    let mut group = c.benchmark_group(format!("cube of {ROWS} cells, {n} releases{accounting}"));
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));

    // A fresh session loads the table: the whole ledger is read, verified and replayed.
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

    // A COUNT in a session that has loaded the table: the cube's predicate checked over its
    // cells, the budget checked, two lines made durable.
    let mut session = Session::with_store(Randomness::Os, Store::dir(&state));
    run(&mut session, &load(&data));
    let mut next = 0usize;
    group.bench_function("COUNT", |b| {
        b.iter(|| {
            next += 1;
            run(
                &mut session,
                &format!(
                    "COUNT WHERE id >= {} WITH {with} 0.00001{next:08};",
                    2 + next % (ROWS - 2)
                ),
            );
        })
    });
    group.finish();
}

criterion_group!(benches, large_cube);
criterion_main!(benches);
