//! Writes `people.csv`, a synthetic table of 10,000 people, to stdout; the same bytes every run.
//!
//! Regenerate with:
//!
//! ```text
//! cargo run --release --example gen_people > examples/data/people.csv
//! cargo run --release --example gen_people -- 5000 2025 > examples/data/survey.csv
//! cargo run --release --example gen_people -- 4000 2026 > examples/data/census.csv
//! cargo run --release --example gen_people -- 3000 2027 > examples/data/incomes.csv
//! ```
//!
//! The optional arguments are the number of people and the seed: `survey.csv`, `census.csv`
//! and `incomes.csv` are other tables of the same shape for the examples that declare a cube
//! or set a budget (each its own), so that no example's cube or spending lands on a table
//! another example, or the quickstart, asks about (both stay with the data's ledger).
//!
//! Columns: `id`, `age` (integer 18-90, about 30% at most 30, about 2% missing as `NA` or empty), `sex` (`F`/`M`),
//! `income` (integer, rising with education and age until the late fifties, lower when not
//! employed, about 3% missing), `region` (North, South, East, West, Centre), `education`
//! (none, secondary, bachelor, master, doctorate), `employed` (boolean), `height_cm` (float,
//! one decimal, by sex) and `smoker` (boolean, commoner with less education). The generator
//! is seeded ChaCha20, so the file is reproducible across platforms and `rand` versions.

use std::io::{self, BufWriter, Write};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rand_distr::{Distribution, Normal};

/// Number of people written by default.
const PEOPLE: u32 = 10_000;
/// The seed by default.
const SEED: u64 = 2024;

const REGIONS: [&str; 5] = ["North", "South", "East", "West", "Centre"];
/// Education levels with their base yearly income.
const EDUCATION: [(&str, f64); 5] = [
    ("none", 17_000.0),
    ("secondary", 26_000.0),
    ("bachelor", 38_000.0),
    ("master", 47_000.0),
    ("doctorate", 55_000.0),
];

fn main() -> io::Result<()> {
    let mut args = std::env::args().skip(1);
    let people: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(PEOPLE);
    let seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(SEED);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let noise = Normal::<f64>::new(0.0, 0.25).expect("a valid standard deviation");
    let height_f = Normal::<f64>::new(163.0, 7.0).expect("a valid standard deviation");
    let height_m = Normal::<f64>::new(177.0, 7.5).expect("a valid standard deviation");
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    writeln!(
        out,
        "id,age,sex,income,region,education,employed,height_cm,smoker"
    )?;
    for id in 1..=people {
        // About 30% of the adults are 30 or younger, so the quickstart's PRIOR p=0.3 is a
        // fair prior for `age <= 30`.
        let age: u32 = if rng.random_bool(0.3) {
            rng.random_range(18..=30)
        } else {
            rng.random_range(31..=90)
        };
        let female = rng.random_bool(0.51);
        let region = REGIONS[rng.random_range(0..REGIONS.len())];
        // Younger people are a little more educated; the weights shift with age.
        let young = age < 40;
        let weights: [f64; 5] = if young {
            [0.05, 0.40, 0.33, 0.17, 0.05]
        } else {
            [0.12, 0.48, 0.25, 0.11, 0.04]
        };
        let edu = pick(&mut rng, &weights);
        let (education, base) = EDUCATION[edu];
        let employed = if age >= 67 {
            rng.random_bool(0.08)
        } else {
            rng.random_bool(0.70 + 0.04 * edu as f64)
        };
        // Income grows about 2% a year of age until 57, then eases off; lognormal noise.
        let years = age.min(57) as f64 - 18.0;
        let late = age.saturating_sub(57) as f64;
        let mut income = base * (1.0 + 0.02 * years) * (1.0 - 0.01 * late);
        if !employed {
            income *= 0.35;
        }
        income *= noise.sample(&mut rng).exp();
        let income = (income / 100.0).round() as i64 * 100;
        let height = if female {
            height_f.sample(&mut rng)
        } else {
            height_m.sample(&mut rng)
        };
        let smoker = rng.random_bool(0.30 - 0.04 * edu as f64);

        let age_cell = match rng.random_range(0..100) {
            0 => "NA".to_string(),
            1 => String::new(),
            _ => age.to_string(),
        };
        let income_cell = if rng.random_bool(0.03) {
            String::new()
        } else {
            income.to_string()
        };
        writeln!(
            out,
            "{id},{age_cell},{},{income_cell},{region},{education},{employed},{height:.1},{smoker}",
            if female { "F" } else { "M" },
        )?;
    }
    out.flush()
}

/// An index drawn with the given weights (which sum to 1).
fn pick(rng: &mut impl Rng, weights: &[f64]) -> usize {
    let mut u: f64 = rng.random();
    for (i, w) in weights.iter().enumerate() {
        if u < *w {
            return i;
        }
        u -= w;
    }
    weights.len() - 1
}
