//! `LOAD ... COLUMNS (...)`: a declared schema makes what is shown of a table independent of
//! its values, and reads the file through the served datasets' loader path. Declaring columns
//! never gives a file a fresh budget: its ledger is keyed by its content, however it is read.

use crate::common;
use common::{run_json, write};
use dpq::eval::{Randomness, Session};
use dpq::privacy::Store;
use serde_json::Value;

const DECLARED: &str =
    "COLUMNS (age integer BETWEEN 0 AND 120, sex text IN ('F', 'M'), ok boolean)";

/// The `columns` of a `loaded` result.
fn schema(result: &Value) -> &Value {
    assert_eq!(result["kind"], "loaded", "{result}");
    &result["columns"]
}

#[test]
fn the_declared_schema_does_not_depend_on_the_values() {
    let dir = tempfile::tempdir().expect("a directory");
    let clean = write(
        dir.path(),
        "clean.csv",
        "age,sex,ok,notes\n30,F,true,a\n41,M,false,b\n",
    );
    let odd = write(
        dir.path(),
        "odd.csv",
        "age,sex,ok,notes\n30,F,true,a\n12.5,X,maybe,b\n",
    );
    let mut s = Session::new(Randomness::Seeded(1));
    let out = run_json(
        &mut s,
        &format!(
            "LOAD '{}' AS a {DECLARED}; LOAD '{}' AS b {DECLARED}; \
             LOAD '{}' AS c; LOAD '{}' AS d;",
            clean.display(),
            odd.display(),
            clean.display(),
            odd.display()
        ),
    );
    assert_eq!(out.len(), 4, "{out:?}");
    // Declared: the same schema for both files, and the undeclared column is not kept.
    assert_eq!(schema(&out[0]), schema(&out[1]));
    let names: Vec<&str> = schema(&out[0])
        .as_array()
        .expect("a list of columns")
        .iter()
        .map(|c| c["name"].as_str().or(c[0].as_str()).unwrap_or_default())
        .collect();
    assert_eq!(names, ["age", "sex", "ok"], "{}", out[0]);
    // Inferred: one 12.5 (and one `maybe`) shows in the schema.
    assert_ne!(schema(&out[2]), schema(&out[3]));
}

#[test]
fn declaring_columns_keeps_the_files_ledger() {
    let dir = tempfile::tempdir().expect("a directory");
    let state = dir.path().join("state");
    let data = write(dir.path(), "people.csv", "age,sex\n30,F\n41,M\n12.5,F\n");
    let run = |source: &str| {
        let mut s = Session::with_store(Randomness::Os, Store::dir(state.clone()));
        run_json(&mut s, source)
    };
    let spent = run(&format!(
        "LOAD '{}' AS p; COUNT WHERE sex = 'F' WITH EPS 0.4;",
        data.display()
    ));
    assert_eq!(spent[1]["kind"], "count", "{spent:?}");
    // Another session, the same file read with a declared schema: the same ledger, its
    // spending and its remaining budget.
    let again = run(&format!(
        "LOAD '{}' AS q COLUMNS (age integer, sex text); SHOW BUDGET;",
        data.display()
    ));
    assert_eq!(again[1]["kind"], "budget", "{again:?}");
    assert_eq!(again[1]["spent"].as_f64(), Some(0.4), "{again:?}");
    assert_eq!(again[1]["remaining"].as_f64(), Some(0.6), "{again:?}");
    // And the other way round, in one session: a declared load first, then an inferred one.
    let both = run(&format!(
        "LOAD '{0}' AS r COLUMNS (sex text); COUNT WHERE sex = 'M' WITH EPS 0.1; \
         LOAD '{0}' AS s; SHOW BUDGET;",
        data.display()
    ));
    assert_eq!(both[3]["spent"].as_f64(), Some(0.5), "{both:?}");
}
