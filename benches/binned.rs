//! Benchmarks of `ESTIMATE MEDIAN` and `ESTIMATE MEAN ... CLAMP` with their uncertainty (the
//! BLUE of every bin, then 20,000 draws of the bins' counts) on a cube of 100 bins with a
//! history of about 1,000 releases, in two shapes:
//!
//! - *histograms*: a histogram and ten `HISTOGRAM WHERE x >= k` (1,046 parts, one bin or the
//!   missing values each): every bin's
//!   estimate weighs its own parts only, and the draws are sparse;
//! - *ranges*: one histogram and 900 counts of ranges `a <= x < b` (1,001 releases): every
//!   bin's estimate weighs most releases, and the draws are a dense matrix product.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use dpq::driver::{run_source, Emitted};
use dpq::eval::{Randomness, Session};
use dpq::output::Format;

/// Bins of the cube: `x < 1`, `1 <= x < 2`, ..., `x >= 99`.
const BINS: usize = 100;

/// Runs `source`, panicking on any error.
fn run(session: &mut Session, source: &str) {
    let ok = run_source(session, "bench", source, Format::Json, &mut |e| {
        if let Emitted::Error(e) = e {
            panic!("{e}");
        }
    });
    assert!(ok);
}

/// A session with a table of 10,000 rows, `x` from 0 to 99, cut into `BINS` bins.
fn session(data: &Path) -> Session {
    let mut text = String::from("x\n");
    for i in 0..10_000 {
        let _ = writeln!(text, "{}", (i * 37 + i / 7) % BINS);
    }
    std::fs::write(data, text).expect("the table is written");
    let cuts: Vec<String> = (1..BINS).map(|c| c.to_string()).collect();
    let mut session = Session::new(Randomness::Seeded(1));
    run(
        &mut session,
        &format!(
            "LOAD '{}' AS t NEIGHBOURS add_remove; SET BUDGET 100000; CUBE BY x ({});",
            data.display(),
            cuts.join(", ")
        ),
    );
    session
}

fn histograms(session: &mut Session) {
    let mut script = String::from("HISTOGRAM WITH EPS 0.5;");
    for k in 1..=10 {
        let _ = write!(script, "HISTOGRAM WHERE x >= {k} WITH EPS 0.5;");
    }
    run(session, &script);
}

fn ranges(session: &mut Session) {
    let mut script = String::from("HISTOGRAM WITH EPS 0.5;");
    let mut made = 0;
    'all: for width in 2..BINS {
        for a in 1..=BINS - width {
            let _ = write!(
                script,
                "COUNT WHERE x >= {a} AND x < {} WITH EPS 0.5;",
                a + width
            );
            made += 1;
            if made == 900 {
                break 'all;
            }
        }
    }
    run(session, &script);
}

fn binned(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (name, history) in [
        ("histograms", histograms as fn(&mut Session)),
        ("ranges", ranges),
    ] {
        let mut session = session(&dir.path().join(format!("{name}.csv")));
        history(&mut session);
        let mut group = c.benchmark_group(format!("{BINS} bins, {name}"));
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(10));
        for statement in ["ESTIMATE MEDIAN x;", "ESTIMATE MEAN x CLAMP (0, 100);"] {
            group.bench_function(statement, |b| b.iter(|| run(&mut session, statement)));
        }
        group.finish();
    }
}

criterion_group!(benches, binned);
criterion_main!(benches);
