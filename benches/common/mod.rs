//! The synthetic people table shared by the count and load benchmarks.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Rows in the benchmark file: `DPQ_BENCH_ROWS`, else 10 million.
pub fn bench_rows() -> usize {
    std::env::var("DPQ_BENCH_ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000)
}

/// Writes `rows` synthetic people (two integer, one float, two text and one boolean
/// column, with a few missing ages and incomes) to `path`.
pub fn write_people(path: &Path, rows: usize) -> std::io::Result<()> {
    const REGIONS: [&str; 5] = ["North", "South", "East", "West", "Centre"];
    let mut rng = ChaCha20Rng::seed_from_u64(20_240_611);
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
    writeln!(w, "age,sex,income,region,height_cm,employed")?;
    for _ in 0..rows {
        let age: u32 = rng.random_range(18..=90);
        if rng.random_bool(0.01) {
            write!(w, "NA,")?;
        } else {
            write!(w, "{age},")?;
        }
        let sex = if rng.random_bool(0.5) { "F" } else { "M" };
        let income: u32 = rng.random_range(0..150_000);
        if rng.random_bool(0.02) {
            write!(w, "{sex},,")?;
        } else {
            write!(w, "{sex},{income},")?;
        }
        let region = REGIONS[rng.random_range(0..REGIONS.len())];
        let height = rng.random_range(1400..2100) as f64 / 10.0;
        let employed = rng.random_bool(0.6);
        writeln!(w, "{region},{height:.1},{employed}")?;
    }
    w.flush()
}
