//! A cube never locks a table: a count the cube cannot express is answered outside it and
//! charged in full; a cube that refines the declared one keeps its history cell by cell (the
//! costs equal those of the same releases made over the finer cube from the start); any other
//! cube takes the earlier releases in full; and a ledger claiming a refinement the
//! declarations do not give is refused.

use crate::common;

use common::cubes::{budgets, close, load, no_errors, run, LOAD};

use std::path::Path;
use std::process::Command;

#[test]
fn a_count_outside_the_cube_is_answered_and_charged_in_full() {
    for (model, pair) in [("add_remove", ""), ("replace", " and every pair")] {
        let dir = tempfile::tempdir().expect("a directory");
        let out = run(
            dir.path(),
            &format!(
                "{} CUBE BY region ('North', 'South', 'East', 'West', 'Centre'); \
                 HISTOGRAM WITH EPS 0.2; EXPLAIN COUNT WHERE age <= 30 WITH EPS 0.1; \
                 COUNT WHERE age <= 30 WITH EPS 0.1; SHOW CUBE;",
                load(model)
            ),
        );
        no_errors(&out);
        let explain = out[3].to_string();
        assert!(
            explain.contains("answered outside the cube (`age` is not a dimension of the cube)")
                && explain.contains(&format!("on every one of the 7 cells{pair}")),
            "{explain}"
        );
        let count = &out[4];
        assert_eq!(count["kind"], "count", "{count}");
        assert_eq!(
            count["outside_cube"], "`age` is not a dimension of the cube",
            "{count}"
        );
        assert_eq!(count["eps_spent"].as_f64(), Some(0.1), "{count}");
        // The histogram's 0.2 on every cell, and the count's 0.1 on every cell (and pair).
        let (cells, spent) = budgets(&out[5]);
        assert!(close(spent, 0.3), "{model}: spent {spent}");
        if model == "add_remove" {
            assert!(cells.iter().all(|b| close(*b, 0.3)), "{cells:?}");
        }
    }
}

#[test]
fn a_condition_splitting_a_cell_is_answered_outside_the_cube_but_a_combination_is_refused() {
    let dir = tempfile::tempdir().expect("a directory");
    let out = run(
        dir.path(),
        &format!(
            "{} CUBE BY age (30, 65); COUNT WHERE age < 40 WITH EPS 0.1; \
             COUNT WHERE age < 40 - COUNT WHERE age < 20 WITH EPS 0.1;",
            load("add_remove")
        ),
    );
    assert_eq!(out[2]["kind"], "count", "{}", out[2]);
    assert_eq!(
        out[2]["outside_cube"], "its condition splits the cell [30 <= age < 65]",
        "{}",
        out[2]
    );
    // A linear combination's sensitivity is read from its row over the cells: it must be a
    // union of them, and the refusal names the cut to add.
    assert_eq!(out[3]["kind"], "error", "{}", out[3]);
    assert!(
        out[3].to_string().contains("CUBE BY age (30, 40, 65)"),
        "{}",
        out[3]
    );
    let out = run(dir.path(), &format!("{} SHOW BUDGET;", load("add_remove")));
    assert_eq!(out[1]["spent"].as_f64(), Some(0.1), "{}", out[1]);
}

/// Runs `dpq --state-dir state run script` and says whether it succeeded, with its output.
fn dpq_run(state: &Path, script: &Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .arg("--state-dir")
        .arg(state)
        .arg("run")
        .arg(script)
        .output()
        .expect("dpq runs");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn the_breakdown_then_the_quickstart_run_in_one_state_directory() {
    let dir = tempfile::tempdir().expect("a directory");
    let state = dir.path().join("state");
    // The breakdown's cube by region over the quickstart's own data, then the quickstart,
    // whose `COUNT WHERE age<=30` the cube cannot express.
    let breakdown = common::write(
        dir.path(),
        "people_breakdown.dpq",
        &format!(
            "{LOAD}; CUBE BY region ('North', 'South', 'East', 'West', 'Centre'); \
             HISTOGRAM WITH EPS 0.2; COUNT BY region WITH EPS 0.1;"
        ),
    );
    for script in [
        Path::new("examples/breakdown.dpq"),
        breakdown.as_path(),
        Path::new("examples/quickstart.dpq"),
    ] {
        let (ok, out) = dpq_run(&state, script);
        assert!(ok, "{} failed:\n{out}", script.display());
        if script.ends_with("quickstart.dpq") {
            assert!(out.contains("Answered outside the cube"), "{out}");
        }
    }
}

/// The statements of one history over the cube `CUBE BY age (30), sex ('F', 'M')`, made in
/// two ways: over `CUBE BY age (30)` and then refined, or over the finer cube from the start.
const REFINED: &str = "CUBE BY age (30), sex ('F', 'M');";

#[test]
fn a_refining_cube_keeps_the_costs_a_brute_force_over_the_finer_cells_gives() {
    for model in ["add_remove", "replace"] {
        let a = tempfile::tempdir().expect("a directory");
        let refined = run(
            a.path(),
            &format!(
                "{} CUBE BY age (30); HISTOGRAM WITH EPS 0.2; COUNT WHERE age < 30 WITH EPS 0.1; \
                 COUNT WHERE age >= 30 WITH EPS 0.05; EXPLAIN {REFINED} {REFINED} SHOW CUBE; \
                 COUNT WHERE sex = 'F' WITH EPS 0.07; SHOW CUBE; ESTIMATE COUNT WHERE age < 30;",
                load(model)
            ),
        );
        no_errors(&refined);
        let b = tempfile::tempdir().expect("a directory");
        let direct = run(
            b.path(),
            &format!(
                "{} {REFINED} COUNT BY age WITH EPS 0.2; COUNT WHERE age < 30 WITH EPS 0.1; \
                 COUNT WHERE age >= 30 WITH EPS 0.05; SHOW CUBE; \
                 COUNT WHERE sex = 'F' WITH EPS 0.07; SHOW CUBE;",
                load(model)
            ),
        );
        no_errors(&direct);
        let explain = refined[5].to_string();
        assert!(
            explain
                .contains("refines CUBE BY age (30): its 5 release(s) with a row keep their costs"),
            "{explain}"
        );
        assert!(
            refined[6]["carried"]
                .as_str()
                .is_some_and(|c| c.starts_with("refines CUBE BY age (30)")),
            "{}",
            refined[6]
        );
        for (r, d) in [(7, 5), (9, 7)] {
            let (rc, rs) = budgets(&refined[r]);
            let (dc, ds) = budgets(&direct[d]);
            assert_eq!(rc.len(), 12, "{model}: 3 ages x 4 sexes");
            assert!(
                rc.iter().zip(&dc).all(|(x, y)| close(*x, *y)) && close(rs, ds),
                "{model}: refined {rc:?} {rs}, direct {dc:?} {ds}"
            );
            assert_eq!(refined[r]["pair"], direct[d]["pair"], "{model}");
            assert_eq!(
                refined[r]["measurements"], direct[d]["measurements"],
                "{model}"
            );
        }
        // The history is evidence over the new cells: the count of age < 30 is estimated.
        assert_eq!(refined[10]["kind"], "estimate", "{}", refined[10]);
        // A new session reads the refinement from the ledger and finds the same costs.
        let again = run(a.path(), &format!("{} SHOW CUBE;", load(model)));
        let (ac, asp) = budgets(&again[1]);
        let (rc, rs) = budgets(&refined[9]);
        assert!(
            ac.iter().zip(&rc).all(|(x, y)| close(*x, *y)) && close(asp, rs),
            "{model}: {ac:?} {asp} against {rc:?} {rs}"
        );
    }
}

#[test]
fn a_cube_across_the_old_one_charges_the_earlier_releases_in_full() {
    let dir = tempfile::tempdir().expect("a directory");
    let out = run(
        dir.path(),
        &format!(
            "{} CUBE BY age (30); HISTOGRAM WITH EPS 0.2; COUNT WHERE age < 30 WITH EPS 0.1; \
             SHOW CUBE; CUBE BY region ('North', 'South');",
            load("add_remove")
        ),
    );
    no_errors(&out);
    let (before, spent) = budgets(&out[4]);
    assert!(close(spent, 0.3) && close(before[1], 0.2), "{before:?}");
    let (after, spent) = budgets(&out[5]);
    // Every release on every cell: 0.2 + 0.1, the cost of the costliest cell before.
    assert!(close(spent, 0.3), "{spent}");
    assert!(after.iter().all(|b| close(*b, 0.3)), "{after:?}");
    assert!(
        out[5]["carried"]
            .as_str()
            .is_some_and(|c| c.starts_with("cuts across CUBE BY age (30): its 4 release(s)")),
        "{}",
        out[5]
    );
    // Read again, the ledger gives the same.
    let again = run(dir.path(), &format!("{} SHOW CUBE;", load("add_remove")));
    let (cells, spent) = budgets(&again[1]);
    assert!(
        close(spent, 0.3) && cells.iter().all(|b| close(*b, 0.3)),
        "{cells:?}"
    );
}

#[test]
fn a_ledger_claiming_a_refinement_the_declarations_do_not_give_is_refused() {
    let dir = tempfile::tempdir().expect("a directory");
    let out = run(
        dir.path(),
        &format!(
            "{} CUBE BY age (30); COUNT WHERE age < 30 WITH EPS 0.5; {REFINED} SHOW BUDGET;",
            load("add_remove")
        ),
    );
    no_errors(&out);
    let ledger = out[4]["ledger"]
        .as_str()
        .expect("a ledger path")
        .to_string();
    // Every new cell mapped to the old cell the count left out, (missing age): the map covers
    // every old cell only if it keeps one new cell in each, so swap the first two instead.
    common::rewrite_ledger(Path::new(&ledger), |line| {
        if line.get("parents").is_some() {
            let parents = line["parents"].as_array_mut().expect("parents");
            let (first, second) = (parents[0].clone(), parents[4].clone());
            assert_ne!(first, second, "cells 1 and 5 lie in different old cells");
            parents[0] = second;
            parents[4] = first;
        }
    });
    let out = run(dir.path(), &format!("{} SHOW BUDGET;", load("add_remove")));
    assert_eq!(out[0]["kind"], "error", "{}", out[0]);
    assert!(
        out[0]
            .to_string()
            .contains("which the two declarations do not give"),
        "{}",
        out[0]
    );
}
