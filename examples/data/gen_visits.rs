//! Writes `visits.csv`, a synthetic table of clinic visits where one patient has many rows, to
//! stdout; the same bytes every run.
//!
//! Regenerate with:
//!
//! ```text
//! cargo run --release --example gen_visits > examples/data/visits.csv
//! ```
//!
//! Columns: `patient_id` (integer), `clinic` (North, South, East, West), `month` (1-12),
//! `kind` (checkup, acute, chronic) and `cost` (integer). 2,000 patients: most visit one to
//! six times a year, and about one in a hundred (chronic care) visits 40 to 400 times, so a
//! count of visits moves by hundreds with one patient. That is what `PRIVACY UNIT patient_id
//! MAX ROWS k` is for (`examples/visits.dpq`). Seeded ChaCha20, reproducible across
//! platforms and `rand` versions.

use std::io::{self, BufWriter, Write};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

const PATIENTS: u32 = 2_000;
const SEED: u64 = 2028;
const CLINICS: [&str; 4] = ["North", "South", "East", "West"];

fn main() -> io::Result<()> {
    let mut rng = ChaCha20Rng::seed_from_u64(SEED);
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    writeln!(out, "patient_id,clinic,month,kind,cost")?;
    let mut rows = Vec::new();
    for patient in 1..=PATIENTS {
        let home = CLINICS[rng.random_range(0..CLINICS.len())];
        let chronic = rng.random_bool(0.01);
        let visits = if chronic {
            rng.random_range(40..=400)
        } else {
            rng.random_range(1..=6)
        };
        for _ in 0..visits {
            // Most visits are to the patient's own clinic.
            let clinic = if rng.random_bool(0.85) {
                home
            } else {
                CLINICS[rng.random_range(0..CLINICS.len())]
            };
            let month: u32 = rng.random_range(1..=12);
            let (kind, cost) = if chronic && rng.random_bool(0.8) {
                ("chronic", rng.random_range(80..=600))
            } else if rng.random_bool(0.6) {
                ("checkup", rng.random_range(40..=150))
            } else {
                ("acute", rng.random_range(100..=2_500))
            };
            rows.push((patient, clinic, month, kind, cost));
        }
    }
    // Visits in the order they were booked, not grouped by patient.
    for i in (1..rows.len()).rev() {
        rows.swap(i, rng.random_range(0..=i));
    }
    for (patient, clinic, month, kind, cost) in rows {
        writeln!(out, "{patient},{clinic},{month},{kind},{cost}")?;
    }
    Ok(())
}
