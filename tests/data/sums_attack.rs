//! Attacks on sums in the per-cell history of a cube (`Measure`, `ESTIMATE SUM`): each test
//! states the promise it checks and how it broke before its fix (each failed first).

use dpq::eval::{Randomness, Session};
use dpq::privacy::Store;
use serde_json::Value;
use std::path::Path;

use crate::common;
use common::{rewrite_ledger, run_json, write};

fn error(out: &Value) -> Option<&str> {
    (out["kind"] == "error").then(|| out["message"].as_str().unwrap_or_default())
}

fn session(state: &Path) -> Session {
    Session::with_store(Randomness::Os, Store::dir(state.to_path_buf()))
}

/// A file whose header names its *second* field `c1` and its first `NA` (a name a header may
/// have, and a missing value when the file is read with `NO HEADER`). Read with a header,
/// `c1` is 500 on each of 200 rows (sum 100,000); read with `NO HEADER`, `c1` is the first
/// field: `NA` on the header line, then 0..199 (sum 19,900).
fn two_readings(dir: &Path) -> std::path::PathBuf {
    let mut text = String::from("NA,c1,g\n");
    for i in 0..200 {
        text.push_str(&format!("{i},500,{}\n", if i % 2 == 0 { "a" } else { "b" }));
    }
    write(dir, "two.csv", &text)
}

/// PROMISE (README "Sums and means": "Every sum of one column and one pair of bounds is
/// evidence about the same per-cell sums"; "Only answers about the file's current content
/// ... are evidence"; "the same file loaded with NO HEADER has other rows ... and other
/// columns (`c1` is the first field, whatever the header named it)").
///
/// Broke: a sum made before the cube over the file read with `NO HEADER` (`SUM c1`: the
/// first field) is recorded with the measure `["sum", "c1", lo, hi]` and the content's
/// fingerprint, both the same for the header reading, whose `c1` is the second field. Once a
/// cube is declared over the header reading, `evidence` re-parses the statement against the
/// header reading and `ESTIMATE SUM c1` answers with the other column's sum: about 19,900 for
/// a true 100,000. (Counts made before the cube have the same flaw in `ESTIMATE COUNT`.)
///
/// Fixed: every release's key starts with the content's fingerprint marked with the reading
/// (`Entry::key_prefix`), and only releases of the same reading are evidence, for counts as
/// for sums.
#[test]
fn a_sum_read_with_no_header_is_not_evidence_about_the_headers_c1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = two_readings(dir.path());
    let state = dir.path().join("state");
    let out = run_json(
        &mut session(&state),
        &format!(
            "LOAD '{}' AS raw NO HEADER NEIGHBOURS add_remove; SET BUDGET 10;
             SUM c1 CLAMP (0, 1000) WITH EPS 5;",
            data.display()
        ),
    );
    assert!(out.iter().all(|o| error(o).is_none()), "{out:?}");
    let out = run_json(
        &mut session(&state),
        &format!(
            "LOAD '{}' AS t NEIGHBOURS add_remove; CUBE BY g ('a', 'b');
             ESTIMATE SUM c1 CLAMP (0, 1000);",
            data.display()
        ),
    );
    // Either not estimable (no sum of this `c1` was released) or about this `c1`'s 100,000
    // (noise of scale 200: never 5,000 away).
    if error(&out[2]).is_none() {
        let estimate = out[2]["estimate"].as_f64().expect("an estimate");
        assert!(
            (estimate - 100_000.0).abs() < 5_000.0,
            "ESTIMATE SUM c1 of the header reading answered {estimate}: the NO HEADER \
             reading's first field (true 19,900), not this c1 (true 100,000): {}",
            out[2]
        );
    }
}

/// PROMISE (SPEC 1: "An identical statement on the same table (same query, epsilon and
/// mechanism) returns its recorded answer").
///
/// Broke: a sum's key names its column by name (`fingerprint|private|sum|c1|0|1000|None|
/// sum|5|laplace`), so `SUM c1 ... WITH EPS 5` over the header reading is "identical" to the
/// same text over the `NO HEADER` reading and is answered from the history with the other
/// field's sum (about 19,900 for a true 100,000), marked `from_history`. (A count's key holds
/// the predicate with the column's index; a sum's holds the name.)
///
/// Fixed: the reading is in every key (`Entry::key_prefix`).
#[test]
fn a_sum_read_with_no_header_is_not_the_recorded_answer_for_the_headers_c1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = two_readings(dir.path());
    let state = dir.path().join("state");
    let out = run_json(
        &mut session(&state),
        &format!(
            "LOAD '{}' AS raw NO HEADER NEIGHBOURS add_remove; SET BUDGET 10;
             SUM c1 CLAMP (0, 1000) WITH EPS 5;",
            data.display()
        ),
    );
    assert!(out.iter().all(|o| error(o).is_none()), "{out:?}");
    let out = run_json(
        &mut session(&state),
        &format!(
            "LOAD '{}' AS t NEIGHBOURS add_remove; SUM c1 CLAMP (0, 1000) WITH EPS 5;",
            data.display()
        ),
    );
    assert!(error(&out[1]).is_none(), "{}", out[1]);
    let noisy = out[1]["noisy"].as_f64().expect("a noisy sum");
    assert!(
        out[1]["from_history"] == false || (noisy - 100_000.0).abs() < 5_000.0,
        "the header reading's SUM c1 was answered from the history with {noisy}: the NO \
         HEADER reading's first field (true 19,900), not this c1 (true 100,000): {}",
        out[1]
    );
}

/// Rewrites a ledger as the dpq before this change wrote it (commit 8723536): the same
/// format 3, but spend lines have no `measure` (sums and means were recorded without a row,
/// as the one here was).
fn without_measures(ledger: &Path) {
    rewrite_ledger(ledger, |v| {
        v.remove("measure");
    });
}

fn the_ledger(state: &Path) -> std::path::PathBuf {
    std::fs::read_dir(state.join("ledgers"))
        .expect("the ledgers")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "ledger"))
        .expect("a ledger")
}

/// PROMISE (README "Sums and means": "Sums with other bounds, a mean's count and counts are
/// not evidence about it"; conversely a sum is no evidence about a count. "Only answers
/// about ... made with Laplace noise, are evidence" of the quantity asked).
///
/// Broke: a ledger written by the dpq before this change records its sums without a
/// `measure`, and the ledger reads a spend line without one as `Measure::Rows`, a count. Its
/// sums were made without a row, so `evidence` finds their row again from the statement, and
/// `row_from_statement` now parses `SUM ...` (and `MEAN ... (sum)`) statements as well as
/// counts, whatever the measure asked for. So after an upgrade, `ESTIMATE COUNT WHERE g =
/// 'a'` answers with the noisy *sum* of `v` over the cell (about 50,000 for 100 rows), and
/// `COUNT ... WITHIN` may answer from it for free.
///
/// Fixed: `row_from_statement` takes a `COUNT` statement as evidence only about rows and a
/// `SUM` (or a `MEAN`'s sum part) only about sums; a sum recorded without a measure is
/// evidence about nothing.
#[test]
fn a_sum_from_an_earlier_dpq_is_not_evidence_about_a_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut text = String::from("v,g\n");
    for i in 0..200 {
        text.push_str(&format!("500,{}\n", if i % 2 == 0 { "a" } else { "b" }));
    }
    let data = write(dir.path(), "t.csv", &text);
    let state = dir.path().join("state");
    let out = run_json(
        &mut session(&state),
        &format!(
            "LOAD '{}' AS t NEIGHBOURS add_remove; SET BUDGET 20;
             SUM v CLAMP (0, 1000) WHERE g = 'a' WITH EPS 10;
             MEAN v CLAMP (0, 1000) WHERE g = 'a' WITH EPS 10;",
            data.display()
        ),
    );
    assert!(out.iter().all(|o| error(o).is_none()), "{out:?}");
    without_measures(&the_ledger(&state));
    let out = run_json(
        &mut session(&state),
        &format!(
            "LOAD '{}' AS t; CUBE BY g ('a', 'b'); ESTIMATE COUNT WHERE g = 'a';",
            data.display()
        ),
    );
    assert!(error(&out[0]).is_none(), "the old ledger reads: {}", out[0]);
    assert!(error(&out[1]).is_none(), "{}", out[1]);
    // No count was ever released: not estimable. Had anything been, it would be near 100.
    if error(&out[2]).is_none() {
        let estimate = out[2]["estimate"].as_f64().expect("an estimate");
        assert!(
            (estimate - 100.0).abs() < 1_000.0,
            "ESTIMATE COUNT WHERE g = 'a' (true 100, and no count released) answered \
             {estimate}, from the clamped sums of v: {}",
            out[2]
        );
    }
}

/// PROMISE (SPEC 5: every bad input "gets one clear error ..., never a panic, and changes
/// nothing").
///
/// Broke (before this change too, in the sum checker it moved): under `replace` a sum's
/// sensitivity is `max(hi, 0) - min(lo, 0)`, computed with `Decimal`'s `-`, which panics
/// when it overflows: `SUM income CLAMP (-7.9e28, 7.9e28)` (both bounds a decimal holds)
/// panics the session ("Subtraction overflowed") instead of being refused, as the same bounds
/// are under `add_remove` ("the query's sensitivity is out of range").
///
/// Fixed: `checked_sub` in `check_sum`, mapped to `CheckError::NumberOutOfRange`.
#[test]
fn huge_bounds_under_replace_are_refused_not_a_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = write(dir.path(), "t.csv", "v,g\n1,a\n2,b\n");
    let script = format!(
        "LOAD '{}' AS t; SUM v CLAMP (-79228162514264337593543950335, \
         79228162514264337593543950335) WITH EPS 1;",
        data.display()
    );
    let outcome = std::panic::catch_unwind(move || {
        let mut s = Session::new(Randomness::Os);
        run_json(&mut s, &script)
    });
    let out = outcome.unwrap_or_else(|_| panic!("SUM with bounds of +-7.9e28 panicked"));
    assert!(error(&out[1]).is_some(), "{}", out[1]);
}

/// PROMISE (README "The privacy model": in a seeded session "two different queries never
/// share noise, even across ledgers, and the difference of their answers says nothing
/// exact").
///
/// Broke: a seeded sum's noise is keyed by the content's hash and its `query_key`, which
/// names the column by name: `SUM c1` over the `NO HEADER` reading and over the header
/// reading (two different fields) draw the same noise under the same seed, so the difference
/// of the two answers is exactly the difference of the true sums (100,000 - 19,900 = 80,100)
/// at any epsilon.
///
/// Fixed: a seeded release's noise derives from the content's hash marked with the reading
/// (`Entry::noise_prefix`).
#[test]
fn seeded_sums_of_two_readings_do_not_share_noise() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = two_readings(dir.path());
    let noisy = |clause: &str| {
        let mut s = Session::new(Randomness::Seeded(7));
        let out = run_json(
            &mut s,
            &format!(
                "LOAD '{}' AS t {clause}; SUM c1 CLAMP (0, 1000) WITH EPS 0.01;",
                data.display()
            ),
        );
        out[1]["noisy"]
            .as_f64()
            .unwrap_or_else(|| panic!("{}", out[1]))
    };
    let difference = noisy("") - noisy("NO HEADER");
    assert_ne!(
        difference, 80_100.0,
        "noise of scale 100,000 cancelled: the difference is the true one exactly"
    );
}

/// Minor (no privacy loss, evidence lost): column names are matched without regard to case
/// (`SUM INCOME` sums `income`), but the measure records the name as typed, so `ESTIMATE SUM
/// income` does not use a released `SUM INCOME` of the same column and bounds (and the same
/// sum asked in another case is released and charged again, its key differing).
///
/// Fixed: the measure and the key record the table's own name of the column
/// (`table.column_name(index)`).
#[test]
fn a_sum_named_in_another_case_is_evidence_about_its_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = two_readings(dir.path());
    let mut s = Session::new(Randomness::Os);
    let out = run_json(
        &mut s,
        &format!(
            "LOAD '{}' AS t NEIGHBOURS add_remove; CUBE BY g ('a', 'b');
             SUM C1 CLAMP (0, 1000) WHERE g = 'a' WITH EPS 0.5;
             ESTIMATE SUM c1 CLAMP (0, 1000) WHERE g = 'a';",
            data.display()
        ),
    );
    assert!(error(&out[2]).is_none(), "{}", out[2]);
    assert!(error(&out[3]).is_none(), "{}", out[3]);
}

/// PROMISE (SPEC: bad input gets one clear error, never a panic): a MEAN whose epsilon is the
/// largest decimal there is. Halving it and adding the halves back overflowed a `Decimal`
/// and panicked the process (in the browser, the whole page's module).
#[test]
fn a_mean_of_the_largest_epsilon_is_refused_not_a_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = session(dir.path());
    let out = run_json(
        &mut s,
        "LOAD 'examples/data/people.csv'; MEAN age CLAMP (0, 1) WITH EPS 79228162514264337593543950335;",
    );
    assert!(error(&out[1]).is_some(), "{}", out[1]);
    let again = run_json(&mut s, "SHOW BUDGET;");
    assert_eq!(again[0]["spent"], 0.0, "nothing was spent: {}", again[0]);
}
