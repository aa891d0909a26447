//! Privacy units (`LOAD ... PRIVACY UNIT col MAX ROWS k`): one person with many rows moves
//! every answer by at most k rows' worth, the unit is kept with the data's ledger, and a
//! table read without the bound its data's ledger records is refused.

use dpq::eval::{Randomness, Session};
use dpq::privacy::Store;
use serde_json::Value;
use std::path::Path;

use crate::common;
use common::{run_json, write};

/// Visits: person 1 has `heavy` visits to clinic A; persons 2..=200 one or two visits each.
fn visits(heavy: usize) -> String {
    let mut text = String::from("pid,clinic,cost\n");
    for _ in 0..heavy {
        text.push_str("1,A,100\n");
    }
    for p in 2..=200 {
        let clinic = ["A", "B", "C"][p % 3];
        text.push_str(&format!("{p},{clinic},{}\n", 10 * (p % 7)));
        if p % 2 == 0 {
            text.push_str(&format!("{p},B,50\n"));
        }
    }
    text
}

fn session(dir: &Path, name: &str) -> Session {
    Session::with_store(Randomness::Os, Store::dir(dir.join(name)))
}

fn kinds(out: &[Value]) -> Vec<&str> {
    out.iter()
        .map(|o| o["kind"].as_str().unwrap_or("?"))
        .collect()
}

/// One person with 1,000 rows: the count's sensitivity is the bound, 3, and the answer is
/// the count of the bounded table (the person's 1,000 rows count as 3). With a very large
/// epsilon the noise (scale 3/1000) is far below 1, so the answer shows which rows were
/// counted; the same table with the person's rows cut to 3 by hand gives the same count.
#[test]
fn one_person_with_a_thousand_rows_moves_a_count_by_the_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let heavy = write(dir.path(), "heavy.csv", &visits(1000));
    let light = write(dir.path(), "light.csv", &visits(3));
    let count = |path: &Path, unit: &str| {
        let mut s = session(dir.path(), "state");
        let out = run_json(
            &mut s,
            &format!(
                "LOAD '{}' AS t {unit}; SET BUDGET 10000; COUNT WHERE clinic = 'A' WITH EPS 1000;",
                path.display()
            ),
        );
        assert_eq!(kinds(&out), ["loaded", "budget", "count"], "{out:?}");
        out[2].clone()
    };
    let bounded = count(&heavy, "PRIVACY UNIT pid MAX ROWS 3");
    assert_eq!(bounded["sensitivity"], 3.0, "{bounded}");
    assert_eq!(bounded["scale"], 0.003, "scale S/eps: {bounded}");
    assert_eq!(bounded["n"], Value::Null, "n is private under a unit");
    let by_hand = count(&light, "PRIVACY UNIT pid MAX ROWS 3");
    let (a, b) = (
        bounded["noisy"].as_f64().expect("a number"),
        by_hand["noisy"].as_f64().expect("a number"),
    );
    assert!(
        (a - b).abs() < 0.5,
        "the bounded count {a} is the count with the person's rows cut to 3, {b}"
    );
    // Other content (one more row, in clinic C), so a ledger of its own: the same content
    // would be read with the unit its ledger records.
    let other = visits(1000) + "999,C,1\n";
    let rows = count(&write(dir.path(), "rows.csv", &other), "");
    let c = rows["noisy"].as_f64().expect("a number");
    assert!(
        (c - a - 997.0).abs() < 0.5,
        "without a unit every row counts: {c} against {a}"
    );
    assert_eq!(rows["sensitivity"], 1.0);
}

/// Sums and means: a unit of up to k rows moves a sum by k times the largest clamped value,
/// and the count of a mean by k.
#[test]
fn sums_and_means_scale_with_the_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = write(dir.path(), "v.csv", &visits(1000));
    let mut s = session(dir.path(), "s");
    let out = run_json(
        &mut s,
        &format!(
            "LOAD '{}' AS t PRIVACY UNIT pid MAX ROWS 4; SUM cost CLAMP (0, 200) WITH EPS 0.5; \
             MEAN cost CLAMP (-50, 200) WITH EPS 0.5; EXPLAIN MEAN cost CLAMP (0, 100) WITH EPS 0.2;",
            data.display()
        ),
    );
    assert_eq!(kinds(&out), ["loaded", "sum", "mean", "explain"], "{out:?}");
    assert_eq!(out[1]["sensitivity"], 800.0, "{}", out[1]);
    assert_eq!(out[1]["scale"], 1600.0, "{}", out[1]);
    assert_eq!(
        out[2]["sensitivity"], 800.0,
        "4 max(|-50|, |200|): {}",
        out[2]
    );
    let text = out[3].to_string();
    assert!(
        text.contains("400") && text.contains("up to 4 rows"),
        "EXPLAIN names the unit's share of the sensitivity: {text}"
    );
}

/// A histogram under a unit: its L1 sensitivity is k (a person's k rows may fall in k
/// parts), it costs its epsilon once, and later counts of single cells cost k times their
/// per-cell charge (each cell's line is what a person with every row in it would lose).
#[test]
fn a_histogram_and_cell_budgets_under_a_unit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = write(dir.path(), "v.csv", &visits(1000));
    let mut s = session(dir.path(), "s");
    let out = run_json(
        &mut s,
        &format!(
            "LOAD '{}' AS t PRIVACY UNIT pid MAX ROWS 3; CUBE BY clinic ('A', 'B', 'C'); \
             HISTOGRAM WITH EPS 0.3; COUNT WHERE clinic = 'A' WITH EPS 0.1; \
             COUNT WHERE clinic = 'B' WITH EPS 0.1; SHOW BUDGET;",
            data.display()
        ),
    );
    assert_eq!(
        kinds(&out),
        ["loaded", "cube", "histogram", "count", "count", "budget"],
        "{out:?}"
    );
    assert_eq!(out[2]["sensitivity"], 3.0, "{}", out[2]);
    assert_eq!(out[2]["eps_spent"], 0.3);
    assert_eq!(out[3]["sensitivity"], 3.0);
    // Each count charges its cell 3 x 0.1 x 1/3 = 0.1: cells A and B reach 0.4, and a
    // person with rows in both loses 0.3 + 0.1 x a/3 + 0.1 x b/3 <= 0.4 for a + b <= 3.
    let budget = &out[5];
    assert_eq!(budget["spent"], 0.4, "{budget}");
    assert_eq!(budget["unit"]["max_rows"], 3, "{budget}");
    let cells = budget["cells"].as_array().expect("cells");
    let spent = |name: &str| {
        cells
            .iter()
            .find(|c| c["cell"] == name)
            .map(|c| c["spent"].as_f64().expect("a number"))
            .expect("the cell")
    };
    assert_eq!(spent("clinic = 'A'"), 0.4);
    assert_eq!(spent("clinic = 'B'"), 0.4);
    assert_eq!(spent("clinic = 'C'"), 0.3);
}

/// The unit is kept with the data's ledger: loading the file again without the clause reads
/// it with the recorded unit; another unit, or none, is refused once anything was released;
/// and NEIGHBOURS replace is refused for data with a unit.
#[test]
fn the_unit_stays_with_the_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = write(dir.path(), "v.csv", &visits(1000));
    let p = data.display();
    let mut first = session(dir.path(), "state");
    let out = run_json(
        &mut first,
        &format!(
            "LOAD '{p}' AS t PRIVACY UNIT pid MAX ROWS 2; COUNT WHERE clinic = 'A' WITH EPS 0.1;"
        ),
    );
    assert_eq!(kinds(&out), ["loaded", "count"], "{out:?}");
    drop(first);
    let mut again = session(dir.path(), "state");
    let out = run_json(&mut again, &format!("LOAD '{p}' AS t;"));
    assert_eq!(out[0]["unit"]["column"], "pid", "{}", out[0]);
    assert_eq!(out[0]["unit"]["max_rows"], 2, "{}", out[0]);
    assert_eq!(out[0]["n"], Value::Null);
    assert_eq!(out[0]["budget_spent"], 0.1);
    let out = run_json(&mut again, "COUNT WHERE clinic = 'A' WITH EPS 0.2;");
    assert_eq!(
        out[0]["sensitivity"], 2.0,
        "the recorded unit holds: {}",
        out[0]
    );
    for (clause, what) in [
        ("PRIVACY UNIT pid MAX ROWS 5", "another bound"),
        ("PRIVACY UNIT clinic MAX ROWS 2", "another column"),
        ("NEIGHBOURS replace", "the replace model"),
    ] {
        let out = run_json(&mut again, &format!("LOAD '{p}' AS u {clause};"));
        assert_eq!(out[0]["kind"], "error", "{what} is refused: {}", out[0]);
        let message = out[0]["message"].as_str().expect("a message");
        assert!(message.contains("PRIVACY UNIT pid MAX ROWS 2"), "{message}");
    }
}

/// Before any release the unit may still be set or changed (under add_remove: a row count
/// shown under replace cannot become private again); a table of this session read
/// with another unit (or none) is then refused rather than answered with the wrong
/// sensitivity, and nothing is spent.
#[test]
fn a_table_read_before_its_unit_changed_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = write(dir.path(), "v.csv", &visits(1000));
    let p = data.display();
    let mut s = session(dir.path(), "state");
    let out = run_json(
        &mut s,
        &format!(
            "LOAD '{p}' AS rows NEIGHBOURS add_remove; \
             LOAD '{p}' AS people PRIVACY UNIT pid MAX ROWS 3;"
        ),
    );
    assert_eq!(kinds(&out), ["loaded", "loaded"], "{out:?}");
    for statement in [
        "COUNT WHERE clinic = 'A' WITH EPS 0.1;",
        "SUM cost CLAMP (0, 10) WITH EPS 0.1;",
    ] {
        let out = run_json(&mut s, &format!("USE rows; {statement}"));
        assert_eq!(out[1]["kind"], "error", "{statement}: {}", out[1]);
        let message = out[1]["message"].as_str().expect("a message");
        assert!(
            message.contains("PRIVACY UNIT pid MAX ROWS 3") && message.contains("LOAD"),
            "{message}"
        );
    }
    let out = run_json(&mut s, "USE people; SHOW BUDGET;");
    assert_eq!(out[1]["spent"], 0.0, "{}", out[1]);
}

/// A unit column that does not exist, a bound missing, zero or too large: each one error,
/// naming what is wrong, and nothing loaded.
#[test]
fn bad_units_are_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = write(dir.path(), "v.csv", &visits(10));
    let p = data.display();
    for (clause, expect) in [
        ("PRIVACY UNIT pid", "add MAX ROWS k"),
        ("PRIVACY UNIT pid MAX ROWS 0", "from 1 to 1000000"),
        ("PRIVACY UNIT pid MAX ROWS 1000001", "from 1 to 1000000"),
        ("PRIVACY UNIT pid MAX ROWS 1.5", "not 1.5"),
        ("PRIVACY UNIT person MAX ROWS 2", "no such column"),
        (
            "PRIVACY UNIT pid MAX ROWS 2 NEIGHBOURS replace",
            "add_remove",
        ),
    ] {
        let mut s = session(dir.path(), "state");
        let out = run_json(&mut s, &format!("LOAD '{p}' AS t {clause}; SHOW TABLES;"));
        assert_eq!(
            out.len(),
            1,
            "{clause}: the script stops at the error: {out:?}"
        );
        let message = out[0]["message"].as_str().expect("an error");
        assert!(message.contains(expect), "{clause}: {message}");
    }
}

/// A row count shown under `replace` cannot be made private again: `NEIGHBOURS add_remove`
/// and a privacy unit are refused for data first loaded under `replace`, before any release
/// as after, and nothing is written.
#[test]
fn a_count_shown_under_replace_stays_shown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = write(dir.path(), "v.csv", &visits(1000));
    let p = data.display();
    let mut s = session(dir.path(), "state");
    let out = run_json(&mut s, &format!("LOAD '{p}' AS rows;"));
    assert_eq!(out[0]["n"], 1299, "shown under replace: {}", out[0]);
    for clause in ["NEIGHBOURS add_remove", "PRIVACY UNIT pid MAX ROWS 3"] {
        let out = run_json(&mut s, &format!("LOAD '{p}' AS other {clause};"));
        let message = out[0]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("cannot be made private again"),
            "{clause}: {message}"
        );
    }
    let mut fresh = session(dir.path(), "state");
    let out = run_json(&mut fresh, &format!("LOAD '{p}' AS again;"));
    assert_eq!(out[0]["neighbours"], "replace", "{}", out[0]);
}
