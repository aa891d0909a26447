//! Attacks on privacy units: statements a careless or malicious analyst could make to get an
//! answer whose noise does not hide one unit's rows, or to read a table with another bound
//! than the one its data's releases were accounted with.

use dpq::eval::{Randomness, Session};
use dpq::privacy::Store;
use serde_json::Value;
use std::path::Path;

use crate::common;
use common::{run_json, write};

fn session(dir: &Path, name: &str) -> Session {
    Session::with_store(Randomness::Os, Store::dir(dir.join(name)))
}

fn kinds(out: &[Value]) -> Vec<&str> {
    out.iter()
        .map(|o| o["kind"].as_str().unwrap_or("?"))
        .collect()
}

fn number(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

/// 400 people with one row each, `v = pid % 30`: with a bound of 50 nothing is dropped, and
/// the true count of `v = i` is the number of pids in 1..=400 with that remainder.
fn people() -> String {
    let mut text = String::from("pid,v\n");
    for p in 1..=400 {
        text.push_str(&format!("{p},{}\n", p % 30));
    }
    text
}

fn truth(i: usize) -> f64 {
    (1..=400).filter(|p| p % 30 == i).count() as f64
}

/// Under `PRIVACY UNIT pid MAX ROWS 50` a count has sensitivity 50, so its noise must have
/// scale 50/eps whatever the mechanism. Geometric and staircase noise were drawn at eps, for
/// a sensitivity of 1: one unit's 50 rows moved the answer by 50 under noise of scale 1. At
/// EPS 1 the mean absolute error of 30 counts is about 50 with the right noise (about 1 with
/// the wrong one); the geometric 95% interval is ±150 (the smallest m with
/// `1 - 2a^(m+1)/(1+a) >= 0.95`, `a = e^-(1/50)`).
#[test]
fn geometric_and_staircase_counts_take_the_units_noise() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = write(dir.path(), "people.csv", &people());
    let mut s = session(dir.path(), "state");
    let mut script = format!(
        "LOAD '{}' AS t PRIVACY UNIT pid MAX ROWS 50; SET BUDGET 100;",
        data.display()
    );
    for mech in ["geometric", "staircase"] {
        for i in 0..30 {
            script.push_str(&format!("COUNT WHERE v = {i} WITH EPS 1 MECHANISM {mech};"));
        }
    }
    let out = run_json(&mut s, &script);
    assert_eq!(out.len(), 62, "{:?}", kinds(&out));
    for (m, mech) in ["geometric", "staircase"].iter().enumerate() {
        let counts = &out[2 + 30 * m..32 + 30 * m];
        let mut error = 0.0;
        for (i, c) in counts.iter().enumerate() {
            assert_eq!(c["kind"], "count", "{c}");
            assert_eq!(c["sensitivity"], 50.0, "{c}");
            assert_eq!(c["scale"], 50.0, "{c}");
            error += (number(&c["noisy"]) - truth(i)).abs() / 30.0;
            let (lo, hi) = (number(&c["interval95"][0]), number(&c["interval95"][1]));
            if *mech == "geometric" {
                assert_eq!(hi - lo, 300.0, "the 95% interval at eps 1/50 is ±150: {c}");
            } else {
                assert!(
                    hi - lo > 200.0,
                    "the staircase's 95% interval at eps 1/50: {c}"
                );
            }
        }
        assert!(
            error > 15.0,
            "{mech} noise of scale 50 has a mean absolute error near 50, not {error}"
        );
    }
}

/// `EXPLAIN` describes the noise that would be drawn: geometric at eps/50.
#[test]
fn explain_describes_the_units_geometric_noise() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = write(dir.path(), "people.csv", &people());
    let mut s = session(dir.path(), "state");
    let out = run_json(
        &mut s,
        &format!(
            "LOAD '{}' AS t PRIVACY UNIT pid MAX ROWS 50; EXPLAIN COUNT WHERE v = 1 WITH EPS 1 MECHANISM geometric;",
            data.display()
        ),
    );
    assert_eq!(kinds(&out), ["loaded", "explain"], "{out:?}");
    let noise = out[1]["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["what"] == "noise")
        .expect("a noise step")["detail"]
        .as_str()
        .expect("text")
        .to_string();
    assert!(
        noise.contains("e^(-(1/50)|z|)") && noise.contains("±150 "),
        "{noise}"
    );
}

/// A Bayes estimate speaks of the noise drawn: Laplace of scale 50 under a unit of 50 rows,
/// the likelihood of eps/50 per unit of the count. It was computed at eps, as if the noise had
/// scale 1: a posterior far narrower than the answer allows. The expected posterior is the
/// library's own at eps 1/50 for the same noisy answer; the out-of-range bound likewise.
#[test]
fn a_prior_under_a_unit_speaks_of_the_units_noise() {
    use dpq::stats::{bayes, Epsilon, Probability};
    let dir = tempfile::tempdir().expect("tempdir");
    let data = write(dir.path(), "people.csv", &people());
    let mut s = session(dir.path(), "state");
    let out = run_json(
        &mut s,
        &format!(
            "LOAD '{}' AS t PRIVACY UNIT pid MAX ROWS 50; COUNT WHERE v = 1 WITH EPS 1 PRIOR p=0.014 N 1000;",
            data.display()
        ),
    );
    assert_eq!(kinds(&out), ["loaded", "count"], "{out:?}");
    let c = &out[1];
    let noisy = number(&c["noisy"]);
    let prob = |x: f64| Probability::new(x).expect("a probability");
    let eps = Epsilon::new(1.0 / 50.0).expect("an epsilon");
    let post = bayes::posterior(1000, prob(0.014), eps, noisy, prob(0.95));
    assert_eq!(number(&c["bayes"]), post.mean, "{c}");
    assert_eq!(c["credible95"][0].as_u64(), Some(post.lower), "{c}");
    assert_eq!(c["credible95"][1].as_u64(), Some(post.upper), "{c}");
    if !(0.0..=1000.0).contains(&noisy) {
        let max = dpq::stats::accuracy::out_of_range_max(1000, eps);
        assert_eq!(number(&c["p_out_of_range_max"]), max, "{c}");
    }
}

/// A file whose header names its second column `c1`: read with `NO HEADER`, `c1` is the first
/// field (here the person); read with its header, `c1` is the second. A unit declared over
/// one reading named another column over the other, so person 1's 500 rows were counted in
/// full under a sensitivity of 1, charged to the same ledger.
fn two_readings(dir: &Path) -> std::path::PathBuf {
    let mut text = String::from("x,c1\n");
    for i in 0..500 {
        text.push_str(&format!("1,{i}\n"));
    }
    for p in 2..50 {
        text.push_str(&format!("{p},{p}\n"));
    }
    write(dir, "h.csv", &text)
}

#[test]
fn a_unit_declared_over_no_header_does_not_bound_another_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = two_readings(dir.path());
    let mut s = session(dir.path(), "state");
    let out = run_json(
        &mut s,
        &format!(
            "LOAD '{0}' AS a NO HEADER PRIVACY UNIT c1 MAX ROWS 1; SET BUDGET 10; COUNT WHERE c1 = '1' WITH EPS 1; LOAD '{0}' AS b;",
            data.display()
        ),
    );
    assert_eq!(
        kinds(&out),
        ["loaded", "budget", "count", "error"],
        "{out:?}"
    );
    let message = out[3]["message"].as_str().expect("a message");
    assert!(message.contains("NO HEADER"), "{message}");
    // Asking for the same clause over the other reading is another unit: refused, since
    // answers were released under the first.
    let out = run_json(
        &mut s,
        &format!("LOAD '{}' AS b PRIVACY UNIT c1 MAX ROWS 1;", data.display()),
    );
    assert_eq!(kinds(&out), ["error"], "{out:?}");
    // Read as it was declared, the data is still usable, in a new session too.
    let mut again = session(dir.path(), "state");
    let out = run_json(
        &mut again,
        &format!(
            "LOAD '{}' AS a NO HEADER; COUNT WHERE c1 = '1' WITH EPS 1;",
            data.display()
        ),
    );
    assert_eq!(kinds(&out), ["loaded", "count"], "{out:?}");
    assert_eq!(out[1]["sensitivity"], 1.0);
    assert_eq!(out[0]["unit"]["column"], "c1");
}

/// Before anything is released, the other reading may name a unit of its own (it replaces
/// the recorded one), but it never silently takes the recorded unit's name as its own.
#[test]
fn before_any_release_the_other_reading_names_its_own_unit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = two_readings(dir.path());
    let mut s = session(dir.path(), "state");
    let out = run_json(
        &mut s,
        &format!(
            "LOAD '{0}' AS a NO HEADER PRIVACY UNIT c1 MAX ROWS 1; LOAD '{0}' AS b;",
            data.display()
        ),
    );
    assert_eq!(kinds(&out), ["loaded", "error"], "{out:?}");
    let out = run_json(
        &mut s,
        &format!(
            "LOAD '{}' AS b PRIVACY UNIT x MAX ROWS 2; SET BUDGET 10; COUNT WHERE x = 1 WITH EPS 1; USE a; COUNT WHERE c1 = '1' WITH EPS 1;",
            data.display()
        ),
    );
    assert_eq!(
        kinds(&out),
        ["loaded", "budget", "count", "using", "error"],
        "{out:?}"
    );
    assert_eq!(out[2]["sensitivity"], 2.0);
}

/// A served dataset: the policy's unit bounds the rows and scales every sensitivity, an
/// analyst cannot LOAD the file under another unit, and a policy whose unit differs from the
/// one the dataset's releases were made under (or that drops it) is refused when attached.
#[test]
fn a_served_unit_is_the_policys_and_stays_with_the_ledger() {
    use dpq::data::{bound_units, load_csv, LoadOptions};
    use dpq::eval::{Quotas, ServedTable};
    use dpq::privacy::Unit;
    use std::sync::Arc;
    let dir = tempfile::tempdir().expect("tempdir");
    let data = write(dir.path(), "people.csv", &people());
    let loaded = load_csv(&data, &LoadOptions::default()).expect("the data");
    let content = loaded.content.bytes();
    let served = |unit: Option<Unit>, analyst: bool| {
        let table = match &unit {
            Some(u) => bound_units(&loaded.table, 0, u.max_rows),
            // Every row: no unit has more.
            None => bound_units(&loaded.table, 0, u32::MAX),
        };
        ServedTable {
            name: "people".into(),
            id: "people-1".into(),
            table: Arc::new(dpq::data::Source::Memory(table)),
            content,
            header: true,
            format: Default::default(),
            neighbours: dpq::privacy::Neighbours::AddRemove,
            unit,
            declared: Vec::new(),
            total: "10".parse().expect("a decimal"),
            analyst: analyst.then(|| ("ana".to_string(), "5".parse().expect("a decimal"))),
            rules: None,
        }
    };
    let unit = |k| Unit {
        column: "pid".into(),
        max_rows: k,
        header: true,
        reading: String::new(),
    };
    // Before any release: a policy that drops the recorded unit is refused by name (a unit,
    // once recorded, is never removed).
    let mut early = session(dir.path(), "early");
    early
        .attach(served(Some(unit(50)), false))
        .expect("attached");
    let mut dropped = session(dir.path(), "early");
    let message = dropped
        .attach(served(None, false))
        .map(|_| String::new())
        .unwrap_or_else(|e| e.to_string());
    assert!(
        message.contains("records PRIVACY UNIT pid MAX ROWS 50")
            && message.contains("declares no privacy unit"),
        "{message}"
    );
    let mut ana = session(dir.path(), "state");
    ana.serve_analyst(Quotas::default());
    ana.attach(served(Some(unit(50)), true)).expect("attached");
    let out = run_json(
        &mut ana,
        &format!(
            "COUNT WHERE v = 1 WITH EPS 1 MECHANISM geometric; LOAD '{}' AS mine PRIVACY UNIT pid MAX ROWS 1;",
            data.display()
        ),
    );
    assert_eq!(kinds(&out), ["count", "error"], "{out:?}");
    assert_eq!(out[0]["sensitivity"], 50.0);
    let (lo, hi) = (
        number(&out[0]["interval95"][0]),
        number(&out[0]["interval95"][1]),
    );
    assert_eq!(hi - lo, 300.0, "{}", out[0]);
    for other in [Some(unit(1)), None] {
        let mut curator = session(dir.path(), "state");
        let refused = curator.attach(served(other.clone(), false));
        assert!(
            refused.is_err(),
            "{other:?} over releases made under PRIVACY UNIT pid MAX ROWS 50"
        );
    }
}
