//! Attacks on counts answered outside the cube and on changing the cube under releases: every
//! test here states what must hold; those that fail are breaks.

mod common;

use common::chain;
use common::cubes::{budgets, close, load, no_errors, run, LOAD};

use dpq::eval::{Randomness, Session};
use dpq::privacy::Store;
use serde_json::Value;
use std::path::Path;

// ---------------------------------------------------------------------------------------------
// Answers reused from the history after a cube change.
// ---------------------------------------------------------------------------------------------

/// A count over `CUBE BY sex ('F', 'M')` of `sex = 'F'` is keyed by its cells (cell 0 of 4).
/// The cube `CUBE BY sex ('M', 'F')` refines it (the same cells, listed in another order), and
/// over it `sex = 'M'` is cell 0 of 4: a different query, which must be released (or refused),
/// never answered "from history" with the answer about `sex = 'F'`.
#[test]
fn a_reordered_cube_does_not_answer_a_new_count_with_an_old_ones_answer() {
    for model in ["add_remove", "replace"] {
        let dir = tempfile::tempdir().expect("a directory");
        let out = run(
            dir.path(),
            &format!(
                "{} CUBE BY sex ('F', 'M'); COUNT WHERE sex = 'F' WITH EPS 0.1; \
                 CUBE BY sex ('M', 'F'); COUNT WHERE sex = 'M' WITH EPS 0.1;",
                load(model)
            ),
        );
        no_errors(&out);
        let (f, m) = (&out[2], &out[4]);
        assert_eq!(m["kind"], "count", "{m}");
        assert!(
            m["from_history"] == false && m["noisy"] != f["noisy"],
            "{model}: COUNT WHERE sex = 'M' answered from history with the answer of \
             COUNT WHERE sex = 'F': {f} then {m}"
        );
    }
}

/// The same with dimensions reordered: `CUBE BY age (30), sex ('F', 'M')` then
/// `CUBE BY sex ('F', 'M'), age (30)` (12 cells each, a refinement both ways).
#[test]
fn reordered_dimensions_do_not_answer_a_new_count_with_an_old_ones_answer() {
    let dir = tempfile::tempdir().expect("a directory");
    let out = run(
        dir.path(),
        &format!(
            "{} CUBE BY age (30), sex ('F', 'M'); COUNT WHERE age < 30 AND sex = 'M' WITH EPS 0.1; \
             CUBE BY sex ('F', 'M'), age (30); COUNT WHERE sex = 'F' AND age >= 30 WITH EPS 0.1;",
            load("add_remove")
        ),
    );
    no_errors(&out);
    let m = &out[4];
    assert!(
        m["from_history"] == false,
        "COUNT WHERE sex = 'F' AND age >= 30 answered from history with the answer of \
         COUNT WHERE age < 30 AND sex = 'M': {} then {m}",
        out[2]
    );
}

/// A cube across the old one with as many cells: `CUBE BY age (30)` then `CUBE BY age (40)`.
/// The count of `age < 30` was cell 0 of 3; over the new cube `age < 40` is cell 0 of 3.
#[test]
fn a_cube_across_the_old_one_does_not_answer_a_new_count_with_an_old_ones_answer() {
    let dir = tempfile::tempdir().expect("a directory");
    let out = run(
        dir.path(),
        &format!(
            "{} CUBE BY age (30); COUNT WHERE age < 30 WITH EPS 0.1; \
             CUBE BY age (40); COUNT WHERE age < 40 WITH EPS 0.1;",
            load("add_remove")
        ),
    );
    no_errors(&out);
    let m = &out[4];
    assert!(
        m["from_history"] == false,
        "COUNT WHERE age < 40 answered from history with the answer of COUNT WHERE age < 30: \
         {} then {m}",
        out[2]
    );
}

/// A histogram over `CUBE BY age (30)`, then one over `CUBE BY age (40)` (a Full carry, the
/// same number of cells): the second is about other cells and must not be the first's answers
/// relabelled.
#[test]
fn a_histogram_over_a_new_cube_is_not_the_old_histogram_relabelled() {
    let mut wrong = Vec::new();
    for (old, new) in [
        ("CUBE BY age (30);", "CUBE BY age (40);"),
        ("CUBE BY sex ('F', 'M');", "CUBE BY sex ('M', 'F');"),
    ] {
        let dir = tempfile::tempdir().expect("a directory");
        let out = run(
            dir.path(),
            &format!(
                "{} {old} HISTOGRAM WITH EPS 0.1; {new} HISTOGRAM WITH EPS 0.1;",
                load("add_remove")
            ),
        );
        no_errors(&out);
        let second = &out[4];
        assert_eq!(second["kind"], "histogram", "{second}");
        if second["from_history"] != false {
            wrong.push(format!(
                "{old} -> {new}: the new histogram is the old one's answers under new cell \
                 names: {} then {second}",
                out[2]
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Two sessions on one state directory: a cube declared by one while the other holds an older
// view of the ledger.
// ---------------------------------------------------------------------------------------------

fn session(state: &Path) -> Session {
    Session::with_store(Randomness::Os, Store::dir(state.to_path_buf()))
}

fn ledger_path(out: &Value) -> std::path::PathBuf {
    std::path::PathBuf::from(out["ledger"].as_str().expect("a ledger path"))
}

/// Session B loaded the table before A declared any cube; A declares one and releases over
/// it; B then declares a cube of its own. B's statement must either work (carrying A's
/// releases over) or be refused with an error that says what happened: never a claim that
/// the ledger is damaged (it is not: the next LOAD reads it), and never a change to it.
#[test]
fn a_cube_declared_by_a_session_that_loaded_before_any_cube_is_not_called_damage() {
    let dir = tempfile::tempdir().expect("a directory");
    let mut a = session(dir.path());
    let mut b = session(dir.path());
    no_errors(&common::run_json(&mut b, &load("add_remove")));
    let out = common::run_json(
        &mut a,
        &format!(
            "{} CUBE BY age (30); COUNT WHERE age < 30 WITH EPS 0.1; SHOW BUDGET;",
            load("add_remove")
        ),
    );
    no_errors(&out);
    let ledger = ledger_path(&out[3]);
    let before = std::fs::read_to_string(&ledger).expect("the ledger");
    let out = common::run_json(&mut b, "CUBE BY sex ('F', 'M');");
    if out[0]["kind"] == "error" {
        let after = std::fs::read_to_string(&ledger).expect("the ledger");
        assert_eq!(before, after, "a refused CUBE BY changed the ledger");
        assert!(
            !out[0]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("damaged"),
            "a benign race is reported as a damaged ledger: {}",
            out[0]
        );
    }
    // And the ledger is whole: a new session reads it.
    let again = run(dir.path(), &format!("{} SHOW BUDGET;", load("add_remove")));
    no_errors(&again);
}

/// Session B holds `CUBE BY age (30)`; A refines it to `CUBE BY age (30), sex ('F', 'M')`;
/// B then declares `CUBE BY age (30, 50)` (a refinement of B's cube, not of the ledger's).
/// The same: carried over correctly, or refused without claiming damage and without a change.
#[test]
fn a_cube_declared_over_a_stale_cube_is_not_called_damage() {
    let dir = tempfile::tempdir().expect("a directory");
    let mut a = session(dir.path());
    let mut b = session(dir.path());
    let out = common::run_json(
        &mut a,
        &format!(
            "{} CUBE BY age (30); COUNT WHERE age < 30 WITH EPS 0.1; SHOW BUDGET;",
            load("add_remove")
        ),
    );
    no_errors(&out);
    let ledger = ledger_path(&out[3]);
    no_errors(&common::run_json(&mut b, &load("add_remove")));
    no_errors(&common::run_json(
        &mut a,
        "CUBE BY age (30), sex ('F', 'M'); COUNT WHERE sex = 'F' WITH EPS 0.1;",
    ));
    let before = std::fs::read_to_string(&ledger).expect("the ledger");
    let out = common::run_json(&mut b, "CUBE BY age (30, 50);");
    if out[0]["kind"] == "error" {
        let after = std::fs::read_to_string(&ledger).expect("the ledger");
        assert_eq!(before, after, "a refused CUBE BY changed the ledger");
        assert!(
            !out[0]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("damaged"),
            "a benign race is reported as a damaged ledger: {}",
            out[0]
        );
    } else {
        // Carried over: the cost must be at least what either cube alone says was spent
        // (0.1 on age < 30, and 0.1 on sex = 'F', both on cell age < 30, sex = 'F').
        let show = common::run_json(&mut b, "SHOW BUDGET;");
        assert!(
            show[0]["spent"].as_f64().expect("spent") >= 0.2 - 1e-12,
            "{}",
            show[0]
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Crafted ledgers.
// ---------------------------------------------------------------------------------------------

/// Appends `entry` to `ledger`, chained after its last line, and moves the high-water mark:
/// a line as another process would append it, leaving every earlier line byte for byte.
fn append_line(ledger: &Path, entry: Value) {
    let text = std::fs::read_to_string(ledger).expect("the ledger");
    let last: Value =
        serde_json::from_str(text.lines().last().expect("a line")).expect("a ledger line");
    let previous = last["sum"].as_str().expect("a checksum").to_string();
    let json = serde_json::to_string(&entry).expect("json");
    let sum = chain(&previous, &json);
    let body = &json[..json.len() - 1];
    let mut out = text.clone();
    out.push_str(&format!("{body},\"sum\":\"{sum}\"}}\n"));
    std::fs::write(ledger, out).expect("append");
    let name = ledger
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("a name")
        .to_string();
    let lines = text.lines().count() + 1;
    let mark = serde_json::json!({"ledger": name, "lines": lines, "sum": sum}).to_string();
    std::fs::write(ledger.with_extension("hwm"), format!("{mark:<128}")).expect("the mark");
}

/// A refinement whose map puts the cells of `age < 30` under the old cell `age >= 30` and
/// back: it covers every old cell, and `LOAD` refuses it (tests/data/cube_change.rs). Appended
/// while a session has the table loaded, as another process would append it, it is read by
/// that session's next statement with no check against the declarations: the 0.6 spent on
/// `age < 30` lands on the cells of `age >= 30`, and a second 0.6 on `age < 30` fits a
/// budget of 1.
#[test]
fn a_bogus_refinement_appended_under_a_live_session_does_not_under_count() {
    let dir = tempfile::tempdir().expect("a directory");
    let mut a = session(dir.path());
    let out = common::run_json(
        &mut a,
        &format!(
            "{} CUBE BY age (30); COUNT WHERE age < 30 WITH EPS 0.6; SHOW BUDGET;",
            load("add_remove")
        ),
    );
    no_errors(&out);
    let ledger = ledger_path(&out[3]);
    append_line(
        &ledger,
        serde_json::json!({
            "type": "cube",
            "spec": "CUBE BY age (30), sex ('F', 'M')",
            "cells": 12,
            "from": "CUBE BY age (30)",
            "parents": [1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 2, 2],
            "time": 0,
        }),
    );
    let out = common::run_json(
        &mut a,
        "CUBE BY age (30), sex ('F', 'M'); COUNT WHERE age < 30 WITH EPS 0.6; SHOW BUDGET;",
    );
    let released = out.iter().any(|v| v["kind"] == "count");
    assert!(
        !released,
        "a second 0.6 on age < 30 was released under a budget of 1: {out:?}"
    );
    // A fresh LOAD refuses the ledger, as it should.
    let again = run(dir.path(), &format!("{} SHOW BUDGET;", load("add_remove")));
    assert_eq!(again[0]["kind"], "error", "{}", again[0]);
}

/// Edits of a ledger's cube entry that would charge less than was spent: each is refused by
/// `LOAD`, or reads back with at least the true spending.
#[test]
fn crafted_cube_entries_are_refused_or_charge_at_least_the_truth() {
    type Edit = fn(&mut serde_json::Map<String, Value>);
    let edits: [(&str, Edit); 8] = [
        // A refinement read as a cut across: every release in full, at least the truth.
        ("parents dropped", |l| {
            l.remove("parents");
        }),
        ("parents one short", |l| {
            l["parents"].as_array_mut().expect("parents").pop();
        }),
        ("parents one long", |l| {
            l["parents"].as_array_mut().expect("parents").push(2.into());
        }),
        ("parents out of range", |l| {
            l["parents"].as_array_mut().expect("parents")[0] = 3.into();
        }),
        ("from another cube", |l| {
            l["from"] = "CUBE BY age (40)".into();
        }),
        ("from dropped", |l| {
            l.remove("from");
        }),
        ("from and parents dropped", |l| {
            l.remove("from");
            l.remove("parents");
        }),
        ("every new cell under one old cell", |l| {
            // Covers no other old cell: refused by the ledger's own check.
            for p in l["parents"].as_array_mut().expect("parents") {
                *p = 0.into();
            }
        }),
    ];
    for (what, edit) in edits {
        let dir = tempfile::tempdir().expect("a directory");
        let out = run(
            dir.path(),
            &format!(
                "{} CUBE BY age (30); COUNT WHERE age < 30 WITH EPS 0.5; \
                 CUBE BY age (30), sex ('F', 'M'); SHOW BUDGET;",
                load("add_remove")
            ),
        );
        no_errors(&out);
        let ledger = ledger_path(&out[4]);
        common::rewrite_ledger(&ledger, |line| {
            if line.get("parents").is_some() {
                edit(line);
            }
        });
        let again = run(dir.path(), &format!("{} SHOW BUDGET;", load("add_remove")));
        if again[0]["kind"] != "error" {
            let spent = again[1]["spent"].as_f64().expect("spent");
            eprintln!("{what}: read, spending {spent}");
            assert!(spent >= 0.5 - 1e-12, "{what}: read back spending {spent}");
        } else {
            eprintln!("{what}: refused: {}", again[0]["message"]);
        }
    }
}

/// A Full carry turned into a refinement with a map that covers every old cell: `LOAD`
/// checks it against the declarations (which give none: `region` cuts across `age`).
#[test]
fn a_full_carry_forged_into_a_refinement_is_refused() {
    let dir = tempfile::tempdir().expect("a directory");
    let out = run(
        dir.path(),
        &format!(
            "{} CUBE BY age (30); COUNT WHERE age < 30 WITH EPS 0.5; \
             CUBE BY region ('North', 'South'); SHOW BUDGET;",
            load("add_remove")
        ),
    );
    no_errors(&out);
    assert!(close(out[4]["spent"].as_f64().expect("spent"), 0.5));
    let ledger = ledger_path(&out[4]);
    common::rewrite_ledger(&ledger, |line| {
        if line.get("from").is_some() {
            // 4 new cells over 3 old: North -> 0, South -> 0, other -> 1, missing -> 2.
            line.insert("parents".into(), serde_json::json!([0, 0, 1, 2]));
        }
    });
    let again = run(dir.path(), &format!("{} SHOW BUDGET;", load("add_remove")));
    assert_eq!(again[0]["kind"], "error", "{again:?}");
}

// ---------------------------------------------------------------------------------------------
// Costs after a chain of cube changes, against a brute force: the same releases made over the
// final cube from the start (and, for releases taken in full, their epsilons on every cell).
// ---------------------------------------------------------------------------------------------

/// The last cube report of a run.
fn last_cube(out: &[Value]) -> &Value {
    out.iter()
        .rev()
        .find(|v| v["kind"] == "cube")
        .expect("a cube report")
}

/// Runs `refined` and `direct` (each after a LOAD under `model` of `load`), and checks that
/// the final cube's cell budgets and spending agree, `extra` (releases taken in full) added to
/// every cell of the direct run.
fn same_costs(model: &str, load_stmt: &str, refined: &str, direct: &str, extra: f64) {
    let a = tempfile::tempdir().expect("a directory");
    let r = run(a.path(), &format!("{load_stmt} {refined} SHOW CUBE;"));
    no_errors(&r);
    let b = tempfile::tempdir().expect("a directory");
    let d = run(b.path(), &format!("{load_stmt} {direct} SHOW CUBE;"));
    no_errors(&d);
    let (rc, rs) = budgets(last_cube(&r));
    let (dc, ds) = budgets(last_cube(&d));
    assert_eq!(rc.len(), dc.len(), "{model}: the same final cube");
    if model == "add_remove" {
        for (j, (x, y)) in rc.iter().zip(&dc).enumerate() {
            assert!(
                close(*x, y + extra),
                "{model}: cell {j}: refined {x}, direct {y} + {extra}\n{refined}\n{rc:?}\n{dc:?}"
            );
        }
    }
    assert!(
        close(rs, ds + extra),
        "{model}: spent: refined {rs}, direct {ds} + {extra}\n{refined}"
    );
    // Read again, the refined ledger gives the same.
    let again = run(a.path(), &format!("{load_stmt} SHOW CUBE;"));
    no_errors(&again);
    let (ac, asp) = budgets(last_cube(&again));
    assert!(
        ac.iter().zip(&rc).all(|(x, y)| close(*x, *y)) && close(asp, rs),
        "{model}: read again {ac:?} {asp}, against {rc:?} {rs}"
    );
}

/// Three cubes in a chain: an integer cut that splits the integers alike (29.5 for 30), a
/// dimension added, dimensions reordered, a value added to a values dimension; counts,
/// a linear combination, vectors, sums, a mean and a median.
#[test]
fn a_chain_of_refinements_costs_what_the_final_cube_from_the_start_costs() {
    for model in ["add_remove", "replace"] {
        let stage1 = "HISTOGRAM WITH EPS 0.2; COUNT WHERE age < 30 WITH EPS 0.1; \
             2*COUNT WHERE age < 30 - COUNT WHERE age >= 30 WITH EPS 0.05; \
             MEDIAN age CLAMP (0, 120) WITH EPS 0.05;";
        let stage2 = "COUNT WHERE sex = 'M' WITH EPS 0.1; COUNT WHERE sex != 'F' WITH EPS 0.02; \
             COUNT WHERE sex = 'F' AND age <= 29 WITH EPS 0.07; \
             SUM income CLAMP (0, 100000) WHERE sex = 'M' WITH EPS 0.05; \
             MEAN height_cm CLAMP (100, 250) WHERE age >= 30 WITH EPS 0.04;";
        let stage3 = "COUNT WHERE region = 'North' WITH EPS 0.03; HISTOGRAM WITH EPS 0.02; \
             COUNT BY region WITH EPS 0.01; COUNT WHERE sex = 'X' WITH EPS 0.015;";
        let last = "CUBE BY region ('North', 'South'), sex ('F', 'M', 'X'), age (30);";
        let refined = format!(
            "CUBE BY age (30); {stage1} CUBE BY age (29.5), sex ('F', 'M'); {stage2} \
             {last} {stage3}"
        );
        let direct = format!(
            "{last} {} {stage2} {stage3}",
            stage1.replace("HISTOGRAM WITH EPS 0.2", "COUNT BY age WITH EPS 0.2")
        );
        same_costs(model, &load(model), &refined, &direct, 0.0);
    }
}

/// A cube across the declared one, then a refinement of it: the releases before the cut are
/// charged in full (their epsilons on every cell), those after carry over cell by cell.
#[test]
fn a_refinement_after_a_cut_across_keeps_the_releases_taken_in_full() {
    for model in ["add_remove", "replace"] {
        let refined =
            "CUBE BY age (30); HISTOGRAM WITH EPS 0.2; COUNT WHERE age < 30 WITH EPS 0.1; \
             CUBE BY region ('North', 'South'); COUNT WHERE region = 'North' WITH EPS 0.1; \
             CUBE BY region ('North', 'South'), age (65); COUNT WHERE age >= 65 WITH EPS 0.05;";
        let direct = "CUBE BY region ('North', 'South'), age (65); \
             COUNT WHERE region = 'North' WITH EPS 0.1; COUNT WHERE age >= 65 WITH EPS 0.05;";
        same_costs(model, &load(model), refined, direct, 0.3);
    }
}

/// Float cuts added (and integer cuts beside them).
#[test]
fn float_cuts_refine_at_the_same_costs() {
    for model in ["add_remove", "replace"] {
        let refined = "CUBE BY height_cm (170), age (30); \
             COUNT WHERE height_cm < 170 WITH EPS 0.1; COUNT WHERE height_cm >= 170 WITH EPS 0.2; \
             COUNT BY height_cm WITH EPS 0.05; COUNT WHERE age >= 30 WITH EPS 0.04; \
             CUBE BY height_cm (170), age (18, 30, 40); \
             CUBE BY height_cm (160, 170, 180.5), age (18, 30, 40); \
             COUNT WHERE height_cm < 160 WITH EPS 0.1; COUNT WHERE age >= 40 WITH EPS 0.03;";
        let direct = "CUBE BY height_cm (170), age (18, 30, 40); \
             COUNT WHERE height_cm < 170 WITH EPS 0.1; COUNT WHERE height_cm >= 170 WITH EPS 0.2; \
             COUNT BY height_cm WITH EPS 0.05; COUNT WHERE age >= 30 WITH EPS 0.04; \
             CUBE BY height_cm (160, 170, 180.5), age (18, 30, 40); \
             COUNT WHERE height_cm < 160 WITH EPS 0.1; COUNT WHERE age >= 40 WITH EPS 0.03;";
        same_costs(model, &load(model), refined, direct, 0.0);
    }
}

/// An interval of an integer dimension that holds no integer (30.2 to 30.5) holds no row.
/// The table's spending after the refinement is the direct run's (the empty cell may carry
/// its parent's charges, which no row ever pays).
#[test]
fn an_empty_interval_refines_at_the_same_spending() {
    for model in ["add_remove", "replace"] {
        let a = tempfile::tempdir().expect("a directory");
        let r = run(
            a.path(),
            &format!(
                "{} CUBE BY age (30); COUNT WHERE age >= 30 WITH EPS 0.1; \
                 COUNT WHERE age < 30 WITH EPS 0.2; CUBE BY age (30, 30.2, 30.5); \
                 COUNT WHERE age >= 31 WITH EPS 0.03; SHOW CUBE;",
                load(model)
            ),
        );
        no_errors(&r);
        let b = tempfile::tempdir().expect("a directory");
        let d = run(
            b.path(),
            &format!(
                "{} CUBE BY age (30, 30.2, 30.5); COUNT WHERE age >= 30 WITH EPS 0.1; \
                 COUNT WHERE age < 30 WITH EPS 0.2; COUNT WHERE age >= 31 WITH EPS 0.03; \
                 SHOW CUBE;",
                load(model)
            ),
        );
        no_errors(&d);
        let (rc, rs) = budgets(last_cube(&r));
        let (dc, ds) = budgets(last_cube(&d));
        assert!(close(rs, ds), "{model}: {rs} against {ds}");
        // Every cell but the empty one ([30.2, 30.5), cell 2) as in the direct run.
        for j in [0, 1, 3, 4] {
            assert!(
                close(rc[j], dc[j]),
                "{model}: cell {j}: {rc:?} against {dc:?}"
            );
        }
    }
}

/// The count of `age >= 30` released over `CUBE BY age (30)` is the count of the same rows
/// over `CUBE BY age (30, 30.2, 30.5)`: it stays evidence for it ("every answer's use as
/// evidence carries over"), as the same release over the finer cube from the start is.
#[test]
#[ignore = "known limitation (issue 23 note): a cell holding no integer takes its parent's coefficient when a row is spread, but no compiled row covers it; spending is unaffected"]
fn a_count_spread_over_an_empty_interval_stays_evidence_for_itself() {
    let dir = tempfile::tempdir().expect("a directory");
    let out = run(
        dir.path(),
        &format!(
            "{} CUBE BY age (30, 30.2, 30.5); COUNT WHERE age >= 30 WITH EPS 0.1; \
             ESTIMATE COUNT WHERE age >= 30;",
            load("add_remove")
        ),
    );
    assert_eq!(out[3]["kind"], "estimate", "directly: {}", out[3]);
    let dir = tempfile::tempdir().expect("a directory");
    let out = run(
        dir.path(),
        &format!(
            "{} CUBE BY age (30); COUNT WHERE age >= 30 WITH EPS 0.1; \
             CUBE BY age (30, 30.2, 30.5); ESTIMATE COUNT WHERE age >= 30;",
            load("add_remove")
        ),
    );
    no_errors(&out[..4]);
    assert_eq!(
        out[4]["kind"], "estimate",
        "the count released over the coarser cube is no evidence for itself: {}",
        out[4]
    );
}

/// Privacy units: every charge is `k` times a row's, before and after a refinement.
#[test]
fn a_refinement_under_a_privacy_unit_costs_what_the_final_cube_costs() {
    let load_stmt =
        "LOAD 'examples/data/visits.csv' AS visits PRIVACY UNIT patient_id MAX ROWS 3; \
                     SET BUDGET 10;";
    let refined = "CUBE BY month (6); HISTOGRAM WITH EPS 0.2; COUNT WHERE month < 6 WITH EPS 0.1; \
         SUM cost CLAMP (0, 1000) WHERE month >= 6 WITH EPS 0.05; \
         CUBE BY clinic ('North', 'West'), month (6), kind ('acute'); \
         COUNT WHERE clinic = 'West' WITH EPS 0.1; COUNT BY kind WITH EPS 0.03;";
    let direct = "CUBE BY clinic ('North', 'West'), month (6), kind ('acute'); \
         COUNT BY month WITH EPS 0.2; COUNT WHERE month < 6 WITH EPS 0.1; \
         SUM cost CLAMP (0, 1000) WHERE month >= 6 WITH EPS 0.05; \
         COUNT WHERE clinic = 'West' WITH EPS 0.1; COUNT BY kind WITH EPS 0.03;";
    same_costs("add_remove", load_stmt, refined, direct, 0.0);
}

/// "An identical statement on the same table (same query, epsilon and mechanism) returns its
/// recorded answer at no cost": after a refinement, `COUNT WHERE age < 30` counts the same rows
/// as before (its row is spread over the finer cells), so asking it again must not buy fresh
/// noise (two independent answers of one count average to a sharper one).
#[test]
fn the_same_count_asked_again_after_a_refinement_is_answered_from_history() {
    for model in ["add_remove", "replace"] {
        let dir = tempfile::tempdir().expect("a directory");
        let out = run(
            dir.path(),
            &format!(
                "{} CUBE BY age (30); COUNT WHERE age < 30 WITH EPS 0.1; HISTOGRAM WITH EPS 0.1; \
                 CUBE BY age (30), sex ('F', 'M'); COUNT WHERE age < 30 WITH EPS 0.1;",
                load(model)
            ),
        );
        no_errors(&out);
        let (first, again) = (&out[2], &out[5]);
        assert!(
            again["from_history"] == true && again["noisy"] == first["noisy"],
            "{model}: the identical count bought fresh noise after a refinement: {first} then {again}"
        );
    }
}

/// The same after a cube across the old one: `COUNT WHERE age < 30` released over
/// `CUBE BY age (30)` is the same query when asked again over `CUBE BY age (40)` (where it
/// is answered outside the cube): its recorded answer, at no cost.
#[test]
#[ignore = "known limitation (issue 23 note): after a cube across the old one, a count released over the old cells is retired from reuse (its key named them); asked again it is released anew, and charged"]
fn the_same_count_asked_again_after_a_cut_across_is_answered_from_history() {
    let dir = tempfile::tempdir().expect("a directory");
    let out = run(
        dir.path(),
        &format!(
            "{} CUBE BY age (30); COUNT WHERE age < 30 WITH EPS 0.1; \
             CUBE BY age (40); COUNT WHERE age < 30 WITH EPS 0.1;",
            load("add_remove")
        ),
    );
    no_errors(&out);
    let (first, again) = (&out[2], &out[4]);
    assert!(
        again["from_history"] == true && again["noisy"] == first["noisy"],
        "the identical count bought fresh noise after a cube change: {first} then {again}"
    );
}

// ---------------------------------------------------------------------------------------------
// A cut across that takes the spending past the total.
// ---------------------------------------------------------------------------------------------

/// The JSON of SHOW BUDGET and SHOW HISTORY, and the ledger's bytes.
fn state(session: &mut Session, ledger: &Path) -> (String, String, String) {
    let out = common::run_json(session, "SHOW BUDGET; SHOW HISTORY;");
    (
        out[0].to_string(),
        out[1].to_string(),
        std::fs::read_to_string(ledger).expect("the ledger"),
    )
}

/// Three counts of 0.4 on disjoint cells of `CUBE BY age (30, 65)` cost 0.4 (`add_remove`)
/// or 0.8 (`replace`, the costliest pair); over a cube across it each is charged in full: 1.2
/// of a budget of 1. The cube is taken (spending is never under-counted); every later release
/// is refused, a refusal changes nothing, and a new session reads the ledger with nothing
/// remaining.
#[test]
fn past_the_total_after_a_cut_across_every_release_is_refused_and_changes_nothing() {
    for model in ["add_remove", "replace"] {
        let dir = tempfile::tempdir().expect("a directory");
        let mut s = session(dir.path());
        let out = common::run_json(
            &mut s,
            &format!(
                "{} CUBE BY age (30, 65); COUNT WHERE age < 30 WITH EPS 0.4; \
                 COUNT WHERE age >= 30 AND age < 65 WITH EPS 0.4; COUNT WHERE age >= 65 WITH EPS 0.4; \
                 SHOW BUDGET; CUBE BY sex ('F', 'M'); SHOW BUDGET;",
                load(model)
            ),
        );
        no_errors(&out);
        let spent = out[5]["spent"].as_f64().expect("spent");
        let expected = if model == "replace" { 0.8 } else { 0.4 };
        assert!(close(spent, expected), "{model}: {}", out[5]);
        let spent = out[7]["spent"].as_f64().expect("spent");
        assert!(close(spent, 1.2), "{model}: {}", out[7]);
        assert_eq!(
            out[7]["remaining"].as_f64(),
            Some(0.0),
            "{model}: {}",
            out[7]
        );
        let ledger = ledger_path(&out[7]);
        let before = state(&mut s, &ledger);
        for stmt in [
            "COUNT WHERE sex = 'F' WITH EPS 0.01;",
            "COUNT WHERE income > 1000 WITH EPS 0.01;",
            "COUNT WHERE age < 30 WITH EPS 0.01;",
            "2*COUNT WHERE sex = 'F' - COUNT WHERE sex = 'M' WITH EPS 0.01;",
            "HISTOGRAM WITH EPS 0.01;",
            "COUNT BY sex WITH EPS 0.01;",
            "SUM income CLAMP (0, 1000) WITH EPS 0.01;",
            "MEAN income CLAMP (0, 1000) WHERE sex = 'M' WITH EPS 0.01;",
            "MEDIAN age CLAMP (0, 120) WITH EPS 0.01;",
            "COUNT WHERE sex = 'F' WITHIN 1000 AT 0.5;",
        ] {
            let out = common::run_json(&mut s, stmt);
            assert_eq!(
                out[0]["kind"], "error",
                "{model}: {stmt} released: {}",
                out[0]
            );
            assert_eq!(
                state(&mut s, &ledger),
                before,
                "{model}: a refused {stmt} changed something"
            );
        }
        // The old answers are still free (post-processing), and a refinement keeps the total.
        let out = common::run_json(
            &mut s,
            "CUBE BY sex ('F', 'M'), region ('North'); SHOW BUDGET;",
        );
        no_errors(&out);
        assert!(
            close(out[1]["spent"].as_f64().expect("spent"), 1.2),
            "{}",
            out[1]
        );
        let again = run(dir.path(), &format!("{} SHOW BUDGET;", load(model)));
        no_errors(&again);
        assert!(
            again[1]["remaining"].as_f64() == Some(0.0)
                && close(again[1]["spent"].as_f64().expect("spent"), 1.2),
            "{model}: {}",
            again[1]
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Counts answered outside the cube: what they say, and what they are evidence for.
// ---------------------------------------------------------------------------------------------

/// A count outside the cube is charged in full and "is not evidence for ESTIMATE" of the
/// unions of cells it covers in part.
#[test]
fn a_count_outside_the_cube_is_no_evidence() {
    for model in ["add_remove", "replace"] {
        let dir = tempfile::tempdir().expect("a directory");
        let out = run(
            dir.path(),
            &format!(
                "{} CUBE BY age (30, 65); COUNT WHERE age < 40 WITH EPS 0.5; \
                 COUNT WHERE income > 40000 WITH EPS 0.3;",
                load(model)
            ),
        );
        no_errors(&out);
        for q in [
            "ESTIMATE COUNT WHERE age < 30;",
            "ESTIMATE COUNT WHERE age < 65;",
            "ESTIMATE COUNT WHERE age >= 30 AND age < 65;",
            "ESTIMATE (1, 1, 1, 1);",
            "PROB COUNT WHERE age < 30 > 10;",
        ] {
            let out = run(dir.path(), &format!("{} {q}", load(model)));
            assert_eq!(out[1]["kind"], "error", "{model}: {q}: {}", out[1]);
            assert!(
                out[1]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("cannot estimate")),
                "{model}: {q}: {}",
                out[1]
            );
        }
        // Once a finer cube expresses its condition, its statement gives its row again (as
        // for a count made before any cube): then it is evidence, with its own noise.
        let out = run(
            dir.path(),
            &format!(
                "{} CUBE BY age (30, 40, 65); ESTIMATE COUNT WHERE age < 40;",
                load(model)
            ),
        );
        assert_eq!(out[2]["kind"], "estimate", "{model}: {}", out[2]);
        assert!(
            close(out[2]["variance"].as_f64().expect("a variance"), 8.0),
            "{}",
            out[2]
        );
    }
}

/// `EXPLAIN` says what a statement would do. A `WITHIN` count outside the cube is not
/// combined with the history because it is outside the cube (a cube is declared), and its
/// release is no evidence for later estimates.
#[test]
fn explain_of_a_within_count_outside_the_cube_says_what_it_does() {
    let dir = tempfile::tempdir().expect("a directory");
    let out = run(
        dir.path(),
        &format!(
            "{} CUBE BY age (30, 65); COUNT WHERE age < 30 WITH EPS 0.2; \
             EXPLAIN COUNT WHERE age < 40 WITHIN 50 AT 0.95; \
             COUNT WHERE age < 40 WITHIN 50 AT 0.95;",
            load("replace")
        ),
    );
    no_errors(&out);
    let explain = out[3].to_string();
    assert!(
        !explain.contains("no cube is declared"),
        "EXPLAIN says no cube is declared under `CUBE BY age (30, 65)`: {explain}"
    );
    assert!(
        !explain.contains("becomes evidence"),
        "EXPLAIN says a count outside the cube becomes evidence: {explain}"
    );
    let count = out[4].to_string();
    assert!(
        !count.contains("no cube is declared"),
        "the result says no cube is declared: {count}"
    );
}

/// What a count outside the cube says (its reason, EXPLAIN, its errors) is a function of the
/// statement, the declarations and public facts: the same on two files that differ in their
/// values (and in how many rows satisfy the condition), but for the noisy numbers.
#[test]
fn what_a_count_outside_the_cube_says_does_not_depend_on_the_data() {
    let dir = tempfile::tempdir().expect("a directory");
    let original = std::fs::read_to_string("examples/data/people.csv").expect("the data");
    let mut lines: Vec<String> = original.lines().map(str::to_string).collect();
    // Every fifth person 20 years younger and with an income of 99999.
    for line in lines.iter_mut().skip(1).step_by(5) {
        let mut fields: Vec<String> = line.split(',').map(str::to_string).collect();
        if let Ok(age) = fields[1].parse::<i64>() {
            fields[1] = (age - 20).max(0).to_string();
        }
        fields[3] = "99999".to_string();
        *line = fields.join(",");
    }
    let a = common::write(dir.path(), "a.csv", &original);
    let b = common::write(dir.path(), "b.csv", &(lines.join("\n") + "\n"));
    let script = |path: &Path| {
        format!(
            "LOAD '{}' AS t NEIGHBOURS replace; CUBE BY age (30, 65), sex ('F', 'M'); \
             EXPLAIN COUNT WHERE income > 40000 WITH EPS 0.1; \
             COUNT WHERE income > 40000 WITH EPS 0.1 PRIOR p=0.4; \
             EXPLAIN COUNT WHERE age < 40 WITH EPS 0.2 MECHANISM geometric; \
             COUNT WHERE age < 40 WITH EPS 0.2 MECHANISM geometric; \
             COUNT WHERE age < 40 AND sex = 'F' WITHIN 30 AT 0.9; \
             COUNT WHERE region = 'North' WITH EPS 0.9;",
            path.display()
        )
    };
    let noisy = [
        "noisy",
        "interval95",
        "bayes",
        "credible95",
        "p_out_of_range_max",
        "combined",
        // A prior the noisy answer contradicts is said from that answer (post-processing).
        "warnings",
    ];
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            for k in noisy {
                o.remove(k);
            }
            o.remove("path");
            o.remove("ledger");
            o.remove("spending");
        }
        v
    };
    let ra = run(&dir.path().join("sa"), &script(&a));
    let rb = run(&dir.path().join("sb"), &script(&b));
    assert_eq!(ra.len(), rb.len());
    for (x, y) in ra.iter().zip(&rb).skip(1) {
        assert_eq!(strip(x), strip(y), "outputs differ with the data");
    }
    // The counts were answered outside the cube, and the last refused with the same words.
    for i in [3, 5, 6] {
        assert!(ra[i]["outside_cube"].is_string(), "{}", ra[i]);
    }
    assert_eq!(ra.len(), 8);
    assert_eq!(ra[7]["kind"], "error", "{}", ra[7]);
}

// ---------------------------------------------------------------------------------------------
// Served datasets: the curator's policy declares the cubes.
// ---------------------------------------------------------------------------------------------

use common::serve::{error, kinds, Server, Setup};

/// Analysts cannot declare a cube, nor have one explained (which would say how many releases
/// with a row the dataset has).
#[test]
fn served_analysts_cannot_declare_or_explain_a_cube() {
    let setup = Setup::new(1);
    let policy = setup.policy("budget = 1\ncube = \"BY age (30)\"", &["1"], "");
    let server = Server::start(&setup, &policy);
    let a = setup.token(0);
    let (_, body) = server.run(a, "COUNT WHERE age < 30 WITH EPS 0.1;");
    assert_eq!(kinds(&body), ["count"], "{body}");
    for stmt in [
        "CUBE BY age (30), sex ('F', 'M');",
        "CUBE BY sex ('F', 'M');",
        "EXPLAIN CUBE BY age (30), sex ('F', 'M');",
    ] {
        let (_, body) = server.run(a, stmt);
        assert!(kinds(&body).is_empty(), "{stmt}: {body}");
        assert!(!error(&body).is_empty(), "{stmt}: {body}");
    }
    let (_, body) = server.run(a, "SHOW CUBE;");
    assert_eq!(
        body["results"][0]["json"]["declaration"], "CUBE BY age (30)",
        "{body}"
    );
}

/// The curator reorders the policy's cube (`BY sex ('F', 'M')` to `BY sex ('M', 'F')`, a
/// refinement: the same cells in another order) and restarts the server: an analyst's
/// `COUNT WHERE sex = 'M'` must not be answered with their earlier answer about `sex = 'F'`.
#[test]
fn a_reordered_policy_cube_does_not_answer_an_analyst_with_another_querys_answer() {
    let setup = Setup::new(1);
    let a = setup.token(0).to_string();
    let policy = setup.policy(
        "budget = 1\nneighbours = \"add_remove\"\ncube = \"BY sex ('F', 'M')\"",
        &["1"],
        "",
    );
    let server = Server::start(&setup, &policy);
    let (_, body) = server.run(&a, "COUNT WHERE sex = 'F' WITH EPS 0.1;");
    let f = body["results"][0]["json"].clone();
    assert_eq!(f["kind"], "count", "{body}");
    drop(server);
    let policy = setup.policy(
        "budget = 1\nneighbours = \"add_remove\"\ncube = \"BY sex ('M', 'F')\"",
        &["1"],
        "",
    );
    let server = Server::start(&setup, &policy);
    let (_, body) = server.run(&a, "COUNT WHERE sex = 'M' WITH EPS 0.1;");
    let m = &body["results"][0]["json"];
    assert_eq!(m["kind"], "count", "{body}");
    assert!(
        m["from_history"] == false && m["noisy"] != f["noisy"],
        "COUNT WHERE sex = 'M' answered with the answer of COUNT WHERE sex = 'F': {f} then {m}"
    );
}

/// A policy cube across the old one takes every analyst's releases in full: the dataset's
/// spending (0.6 on disjoint cells by two analysts, 0.6 per cell) becomes 1.2 of 1, and
/// neither analyst can release again, though each is under their own cap.
#[test]
fn a_policy_cube_across_the_old_one_leaves_nothing_to_any_analyst() {
    let setup = Setup::new(2);
    let (a, b) = (setup.token(0).to_string(), setup.token(1).to_string());
    let policy = setup.policy(
        "budget = 1\nneighbours = \"add_remove\"\ncube = \"BY age (30)\"",
        &["0.8", "0.8"],
        "",
    );
    let server = Server::start(&setup, &policy);
    let (_, body) = server.run(&a, "COUNT WHERE age < 30 WITH EPS 0.6;");
    assert_eq!(kinds(&body), ["count"], "{body}");
    let (_, body) = server.run(&b, "COUNT WHERE age >= 30 WITH EPS 0.6;");
    assert_eq!(kinds(&body), ["count"], "{body}");
    drop(server);
    let policy = setup.policy(
        "budget = 1\nneighbours = \"add_remove\"\ncube = \"BY sex ('F', 'M')\"",
        &["0.8", "0.8"],
        "",
    );
    let server = Server::start(&setup, &policy);
    for t in [&a, &b] {
        let (_, body) = server.run(t, "COUNT WHERE sex = 'F' WITH EPS 0.05;");
        assert!(
            kinds(&body).is_empty(),
            "released past the dataset's total: {body}"
        );
        let (_, body) = server.run(t, "HISTOGRAM WITH EPS 0.05;");
        assert!(
            kinds(&body).is_empty(),
            "released past the dataset's total: {body}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The check of refinements at LOAD, and its cost.
// ---------------------------------------------------------------------------------------------

/// A refinement dpq itself recorded over a table read with `age` an integer (`29.5` splits
/// the integers as `30` does) is checked again over a table of the same file read with
/// `COLUMNS (age float)`, where the two cubes are not a refinement. Refusing to read the
/// data that way is the cautious choice; saying the ledger "was not written by dpq" (a forged
/// ledger, for the curator to restore from a backup) is not true.
#[test]
fn a_refinement_read_under_another_column_type_is_not_called_forged() {
    let dir = tempfile::tempdir().expect("a directory");
    let out = run(
        dir.path(),
        &format!(
            "{} CUBE BY age (30); COUNT WHERE age < 30 WITH EPS 0.1; CUBE BY age (29.5, 50);",
            load("add_remove")
        ),
    );
    no_errors(&out);
    let out = run(
        dir.path(),
        &format!("{LOAD} NEIGHBOURS add_remove COLUMNS (age float, sex text); SHOW BUDGET;"),
    );
    if out[0]["kind"] == "error" {
        assert!(
            !out[0].to_string().contains("not written by dpq"),
            "a ledger dpq wrote is called forged: {}",
            out[0]
        );
    } else {
        assert!(
            out[1]["spent"].as_f64().expect("spent") >= 0.1 - 1e-12,
            "{}",
            out[1]
        );
    }
}

/// After a refused `CUBE BY` the session goes on: its next statements work.
#[test]
fn a_session_whose_cube_was_refused_goes_on() {
    let dir = tempfile::tempdir().expect("a directory");
    let mut a = session(dir.path());
    let mut b = session(dir.path());
    no_errors(&common::run_json(&mut b, &load("add_remove")));
    no_errors(&common::run_json(
        &mut a,
        &format!(
            "{} CUBE BY age (30); COUNT WHERE age < 30 WITH EPS 0.1;",
            load("add_remove")
        ),
    ));
    let _ = common::run_json(&mut b, "CUBE BY sex ('F', 'M');");
    let out = common::run_json(&mut b, "SHOW BUDGET;");
    no_errors(&out);
    assert!(
        close(out[0]["spent"].as_f64().expect("spent"), 0.1),
        "{}",
        out[0]
    );
}

/// Timing (ignored by default: SPEC section 6 measures speed by benchmarks). Spreading a row
/// over a refinement walks every new cell for every release (`Row::spread`), and the ledger
/// replays it at every LOAD: after one refinement of a cube of 5,000 cells holding two
/// histograms (10,000 releases) into 10,000 cells, every LOAD does 10^8 steps. Compared with
/// the LOAD before the refinement.
#[test]
#[ignore = "timing: run with --ignored"]
fn a_load_after_a_refinement_does_not_cost_releases_times_cells() {
    let dir = tempfile::tempdir().expect("a directory");
    let old: Vec<String> = (1..5000).map(|i| (2 * i).to_string()).collect();
    let new: Vec<String> = (1..9999).map(|i| i.to_string()).collect();
    let out = run(
        dir.path(),
        &format!(
            "{} SET BUDGET 100; CUBE BY id ({}); HISTOGRAM WITH EPS 0.01; HISTOGRAM WITH EPS 0.02;",
            load("add_remove"),
            old.join(", ")
        ),
    );
    no_errors(&out);
    let timed = || {
        let start = std::time::Instant::now();
        no_errors(&run(dir.path(), &load("add_remove")));
        start.elapsed()
    };
    let before = timed();
    no_errors(&run(
        dir.path(),
        &format!("{} CUBE BY id ({});", load("add_remove"), new.join(", ")),
    ));
    let after = timed();
    assert!(
        after < before * 5,
        "a LOAD took {before:?} before the refinement and {after:?} after"
    );
}

/// A count outside the cube is keyed as a plain count: `count|` and its predicate, whose
/// columns are numbered in the table's schema. Two tables of one file read with different
/// schemas (`COLUMNS` keeps the columns declared, in their order) number their columns
/// differently: `age` is column 0 of one, `id` column 0 of the other. `COUNT WHERE id < 30` on
/// the second must not be answered with the first's `COUNT WHERE age < 30`. With a cube both
/// are answered outside it (before this change both were refused); without one the same
/// happens (a plain count's key was already so).
#[test]
fn a_count_outside_the_cube_is_not_answered_with_another_columns_count() {
    let mut wrong = Vec::new();
    for cube in ["CUBE BY sex ('F', 'M');", ""] {
        let dir = tempfile::tempdir().expect("a directory");
        let out = run(
            dir.path(),
            &format!(
                "{LOAD} NEIGHBOURS add_remove COLUMNS (age integer, sex text); {cube} \
                 COUNT WHERE age < 30 WITH EPS 0.1; \
                 LOAD 'examples/data/people.csv' AS whole NEIGHBOURS add_remove; \
                 COUNT WHERE id < 30 WITH EPS 0.1;"
            ),
        );
        no_errors(&out);
        let age = out
            .iter()
            .find(|v| v["statement"] == "COUNT WHERE age < 30 WITH EPS 0.1");
        let id = out
            .iter()
            .find(|v| v["statement"] == "COUNT WHERE id < 30 WITH EPS 0.1");
        let (age, id) = (age.expect("the age count"), id.expect("the id count"));
        if id["from_history"] != false || id["noisy"] == age["noisy"] {
            wrong.push(format!(
                "[{cube}] COUNT WHERE id < 30 answered with the answer of COUNT WHERE age < 30: \
                 {age} then {id}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
