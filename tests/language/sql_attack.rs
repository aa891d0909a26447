//! The SQL form (`SELECT WITH DIFFERENTIAL_PRIVACY ...`), conditions judged from the schema,
//! the prior's warning and the errors for SQL habits, checked as an analyst would push them:
//! a condition some row can meet is never refused (floats at their extremes, integers beyond
//! 2^53), a prior of any size never ends a session after its answer was paid for, a refused
//! SELECT changes nothing on disk, a SELECT spends on the table it names and obeys a served
//! dataset's policy, and words SQL made keywords still name columns and tables.

use dpq::eval::{Randomness, Session};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;
use common::serve::{error, kinds, Server, Setup};

use common::run_json as results;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("written");
    path.to_string_lossy().into_owned()
}

/// A session over `csv` loaded as `t`, seeded, with a budget large enough for exact counts.
fn exact_session(csv: &str) -> Session {
    let mut session = Session::new(Randomness::Seeded(5));
    let out = results(
        &mut session,
        &format!("LOAD '{csv}' AS t; SET BUDGET 1000000000000000;"),
    );
    assert!(out.iter().all(|r| r["kind"] != "error"), "{out:?}");
    session
}

/// The count of `condition` at epsilon 10^6 (noise of scale 10^-6: rounding gives the true
/// count), or the error's message.
fn exact_count(session: &mut Session, condition: &str) -> Result<(f64, Vec<String>), String> {
    let out = results(
        session,
        &format!("COUNT WHERE {condition} WITH EPS 1000000;"),
    );
    let r = &out[0];
    if r["kind"] == "error" {
        return Err(r["message"].as_str().unwrap_or_default().to_string());
    }
    let warnings = r["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .map(|s| s.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default();
    Ok((r["noisy"].as_f64().expect("a count").round(), warnings))
}

/// Floats at the ends of their range, beyond 2^53 and between adjacent floats.
const FLOATS: [f64; 12] = [
    -1.7976931348623157e308,
    -1e308,
    -1e17,
    -0.0,
    5e-324,
    1.0,
    1.0000000000000002,
    9007199254740992.0,
    1e17,
    1e300,
    1e308,
    1.7976931348623157e308,
];

/// Integers at the ends of i64 and around 2^53, where a float cannot name every one.
const INTEGERS: [i64; 9] = [
    i64::MIN,
    i64::MIN + 1,
    -9007199254740993,
    -1,
    0,
    9007199254740992,
    9007199254740993,
    i64::MAX - 1,
    i64::MAX,
];

/// A table with, for each constant a condition below compares with, the value itself and
/// its nearest neighbours of the column's type: every class of values those constants tell
/// apart has a row (every pair of them, one row each), so a condition no row of this table
/// meets is one no table of the schema can meet. Float column `x`, integer column `i`, each
/// also missing.
fn extremes() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("a directory");
    let mut xs: Vec<String> = FLOATS
        .iter()
        .flat_map(|c| [c.next_down(), *c, c.next_up()])
        .filter(|v| v.is_finite())
        .map(|v| format!("{v:e}"))
        .collect();
    xs.push(String::new());
    let mut is: Vec<String> = INTEGERS
        .iter()
        .flat_map(|&c| [c.checked_sub(1), Some(c), c.checked_add(1)])
        .flatten()
        .map(|v| v.to_string())
        .collect();
    is.push(String::new());
    let mut csv = String::from("x,i\n");
    for x in &xs {
        for i in &is {
            let _ = writeln!(csv, "{x},{i}");
        }
    }
    let path = write(dir.path(), "extremes.csv", &csv);
    (dir, path)
}

/// Conditions at the edges of floats and integers that some row meets: none is refused, and
/// none is said to hold for every value when a row's value does not meet it.
#[test]
fn conditions_at_the_edges_of_numbers_are_judged_as_counting_judges_them() {
    let (_dir, path) = extremes();
    let mut session = exact_session(&path);
    for (condition, met) in [
        // Beyond 2^53 adding 1 to a float changes nothing: the rays beyond a cut were lost.
        ("x > 1e17", true),
        ("x < -1e308", true),
        ("x > 1e308", true),
        ("x > -1e308 AND x < 1e308", true),
        // Met by many rows, but not by every value: no note may say otherwise.
        ("x >= -1e308", true),
        ("x <= 1e17", true),
        // No float lies strictly between adjacent ones: no row can meet it.
        ("x > 1 AND x < 1.0000000000000002", false),
        ("x = 0 AND x < 0", false),
        // Integers are compared exactly, beyond 2^53 too.
        ("i > 9007199254740992", true),
        ("i > 9007199254740992 AND i < 9007199254740994", true),
        ("i < -9007199254740992", true),
        ("i > 9223372036854775807", false),
        ("i >= -9223372036854775808", true),
    ] {
        let out = exact_count(&mut session, condition);
        match out {
            Ok((count, warnings)) => {
                assert_eq!(count > 0.0, met, "{condition}: {count}");
                let every = warnings.iter().any(|w| w.starts_with("every "));
                if every {
                    // Said to hold for every value: then every row with a value meets it.
                    let column = &condition[..1];
                    let (present, _) =
                        exact_count(&mut session, &format!("{column} < 0 OR {column} >= 0"))
                            .expect("a count");
                    assert_eq!(count, present, "{condition}: {warnings:?}");
                }
            }
            Err(message) => {
                assert!(
                    message.starts_with("no row can meet"),
                    "{condition}: {message}"
                );
                assert!(!met, "{condition} was refused, yet a row meets it");
            }
        }
    }
}

/// Random conditions over the extreme constants: refused exactly when no row meets them,
/// and noted as met by every value only when every row with a value meets them.
#[test]
fn random_conditions_over_extreme_numbers_are_refused_only_when_nothing_meets_them() {
    let (_dir, path) = extremes();
    let mut session = exact_session(&path);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let float = |rng: &mut ChaCha8Rng| format!("{:e}", FLOATS[rng.random_range(0..FLOATS.len())]);
    let int = |rng: &mut ChaCha8Rng| INTEGERS[rng.random_range(0..INTEGERS.len())].to_string();
    let op = |rng: &mut ChaCha8Rng| ["=", "!=", "<", "<=", ">", ">="][rng.random_range(0..6)];
    fn condition(
        rng: &mut ChaCha8Rng,
        depth: u32,
        atom: &dyn Fn(&mut ChaCha8Rng) -> String,
    ) -> String {
        if depth > 0 && rng.random_bool(0.6) {
            let a = condition(rng, depth - 1, atom);
            let b = condition(rng, depth - 1, atom);
            return match rng.random_range(0..3) {
                0 => format!("({a} AND {b})"),
                1 => format!("({a} OR {b})"),
                _ => format!("NOT ({a})"),
            };
        }
        atom(rng)
    }
    let atom = |rng: &mut ChaCha8Rng| {
        let (column, value): (&str, &dyn Fn(&mut ChaCha8Rng) -> String) = if rng.random_bool(0.5) {
            ("x", &float)
        } else {
            ("i", &int)
        };
        match rng.random_range(0..4) {
            0 => format!("{column} BETWEEN {} AND {}", value(rng), value(rng)),
            1 => format!("{column} IN ({}, {})", value(rng), value(rng)),
            2 => format!("{} {} {column}", value(rng), op(rng)),
            _ => format!("{column} {} {}", op(rng), value(rng)),
        }
    };
    let (mut refused, mut answered) = (0, 0);
    for _ in 0..300 {
        let c = condition(&mut rng, 2, &atom);
        match exact_count(&mut session, &c) {
            Err(message) => {
                assert!(message.starts_with("no row can meet"), "{c}: {message}");
                refused += 1;
                // Refused: the same rows asked another way (a value no row holds added) number 0.
                let (truth, _) = exact_count(&mut session, &format!("({c}) OR x = 12345"))
                    .expect("asked another way");
                assert_eq!(truth, 0.0, "{c} was refused, yet {truth} rows meet it");
            }
            Ok((count, warnings)) => {
                answered += 1;
                assert!(count > 0.0, "{c}: no row meets it, yet it was not refused");
                if warnings.iter().any(|w| w.starts_with("every value")) {
                    let column = if c.contains('x') { "x" } else { "i" };
                    let (present, _) =
                        exact_count(&mut session, &format!("{column} < 0 OR {column} >= 0"))
                            .expect("a count");
                    assert_eq!(count, present, "{c}: {warnings:?}");
                }
            }
        }
    }
    assert!(refused >= 5 && answered >= 100, "{refused} {answered}");
}

/// A prior over a large public size (`PRIOR p N`) on a table whose n is private: the warning
/// that compares the answer with the prior is computed for any size, so the answer, paid for,
/// is shown (it once ended the session after the ledger recorded the spending).
#[test]
fn a_prior_of_any_size_never_ends_the_session_after_the_answer_is_paid_for() {
    let dir = tempfile::tempdir().expect("a directory");
    let state = dir.path().join("state");
    let mut csv = String::from("age\n");
    for k in 0..200 {
        let _ = writeln!(csv, "{}", k % 90);
    }
    let data = write(dir.path(), "ages.csv", &csv);
    let store = dpq::privacy::Store::dir(&state);
    let mut session = Session::with_store(Randomness::Seeded(1), store);
    results(
        &mut session,
        &format!("LOAD '{data}' AS t NEIGHBOURS add_remove; SET BUDGET 100;"),
    );
    for (p, n) in [
        ("0.5", "1000000000000"),
        ("0.5", "9007199254740992"),
        ("0.0000001", "9007199254740992"),
        ("0.9999999999999999", "9007199254740992"),
        ("0.3", "1000"),
    ] {
        let out = results(
            &mut session,
            &format!("COUNT WHERE age < 30 WITH EPS 0.5 PRIOR p={p} N {n};"),
        );
        assert_eq!(out[0]["kind"], "count", "p={p} N {n}: {out:?}");
        let warnings = out[0]["warnings"].as_array().expect("warnings");
        // A true count near 67 is far from every prior here but the last one.
        if n != "1000" {
            assert!(
                warnings.iter().any(|w| w
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("the prior and the answer disagree")),
                "p={p} N {n}: {warnings:?}"
            );
        }
    }
}

/// The files of a state directory, byte for byte.
fn snapshot(state: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut dirs = vec![state.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.expect("an entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                let bytes = std::fs::read(&p).expect("read");
                files.push((p, bytes));
            }
        }
    }
    files.sort();
    files
}

fn dpq(state: &Path, dir: &Path, source: &str) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .current_dir(dir)
        .arg("--state-dir")
        .arg(state)
        .args(["--format", "json", "-c", source])
        .output()
        .expect("dpq runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every refused SELECT, and EXPLAIN of one that would spend, leaves the state directory
/// byte for byte as it was (a second process finds nothing recorded) and the table in use
/// where it was; an accepted one spends on the table FROM names, not the one in use.
#[test]
fn a_refused_select_changes_nothing_and_an_accepted_one_spends_on_its_table() {
    let dir = tempfile::tempdir().expect("a directory");
    let state = dir.path().join("state");
    std::fs::copy("examples/data/people.csv", dir.path().join("people.csv")).expect("copy");
    write(
        dir.path(),
        "small.csv",
        "age,income\n30,100\n40,200\n50,300\n",
    );
    let load = "LOAD 'people.csv' AS people; LOAD 'small.csv' AS small; USE people;";
    let (ok, _, err) = dpq(&state, dir.path(), &format!("{load} SHOW BUDGET;"));
    assert!(ok, "{err}");
    let before = snapshot(&state);
    let dp = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS";
    for refused in [
        "SELECT COUNT(*) FROM small WHERE age < 40;".to_string(),
        "SELECT * FROM small;".to_string(),
        format!("{dp} (epsilon = 0.1) COUNT(*) FROM small;"),
        format!("{dp} (epsilon = 0.1, delta = 0.000001) COUNT(*) FROM small WHERE age < 40;"),
        format!("{dp} (epsilon = 0.1, epsilon = 0.2) COUNT(*) FROM small WHERE age < 40;"),
        format!("{dp} (epsilon = 0.1, max_groups_contributed = 1) COUNT(*) FROM small WHERE age < 40;"),
        format!("{dp} (epsilon = 0.1, privacy_unit_column = age) COUNT(*) FROM small WHERE age < 40;"),
        format!("{dp} (epsilon = 0.1, epsilonn = 1) COUNT(*) FROM small WHERE age < 40;"),
        format!("{dp} (delta = 0) COUNT(*) FROM small WHERE age < 40;"),
        format!("{dp} (epsilon = 0.1) COUNT(*) FROM nowhere WHERE age < 40;"),
        format!("{dp} (epsilon = 0.1) COUNT(*) FROM small WHERE age BETWEEN 50 AND 40;"),
        format!("{dp} (epsilon = 0.1) COUNT(*) FROM small WHERE age = 40.5;"),
        format!("{dp} (epsilon = 0.1) SUM(income) FROM small WHERE age < 40;"),
        format!("{dp} (epsilon = 0.1) SUM(income, contribution_bounds_per_group => (0, 10)) FROM small GROUP BY age;"),
        format!("{dp} (epsilon = 0.1) COUNT(*) FROM small GROUP BY age;"),
        format!("{dp} (epsilon = 5) COUNT(*) FROM small WHERE age < 40;"),
        format!("{dp} (epsilon = 0.1) COUNT(*) FROM small WHERE nothing < 40;"),
        format!("{dp} (epsilon = 0.1) COUNT(*), SUM(age) FROM small WHERE age < 40;"),
        format!("{dp} (epsilon = 0.1) COUNT(*) FROM small WHERE age < 40 ORDER BY age;"),
        format!("EXPLAIN {dp} (epsilon = 0.1) COUNT(*) FROM small WHERE age < 40;"),
    ] {
        let (_, out, err) = dpq(&state, dir.path(), &format!("{load} {refused} SHOW TABLES;"));
        let explained = refused.starts_with("EXPLAIN");
        assert!(
            explained || err.contains("error") || out.contains("\"kind\":\"error\""),
            "{refused} was not refused: {out}"
        );
        if explained {
            // Explained, not done: and the table in use is still `people`.
            let tables: Value = out
                .lines()
                .last()
                .and_then(|l| serde_json::from_str(l).ok())
                .expect("tables");
            let current: Vec<&Value> = tables["tables"]
                .as_array()
                .expect("tables")
                .iter()
                .filter(|t| t["current"] == true)
                .collect();
            assert_eq!(current[0]["name"], "people", "{out}");
        }
        assert_eq!(snapshot(&state), before, "{refused} changed the state directory");
    }
    // Accepted: spent on `small`, FROM's table, and `people` stays in use and untouched.
    let (ok, out, err) = dpq(
        &state,
        dir.path(),
        &format!("{load} {dp} (epsilon = 0.25) COUNT(*) FROM small WHERE 40 > age; SHOW TABLES;"),
    );
    assert!(ok, "{err}");
    let tables: Value = serde_json::from_str(out.lines().last().expect("a line")).expect("JSON");
    for t in tables["tables"].as_array().expect("tables") {
        let (spent, current) = match t["name"].as_str() {
            Some("small") => (0.25, false),
            _ => (0.0, true),
        };
        assert_eq!(t["budget_spent"].as_f64(), Some(spent), "{t}");
        assert_eq!(t["current"], current, "{t}");
    }
    // A second process sees it recorded on `small` in dpq's words.
    let (_, out, _) = dpq(
        &state,
        dir.path(),
        &format!("{load} USE small; SHOW HISTORY;"),
    );
    assert!(out.contains("COUNT WHERE age < 40 WITH EPS 0.25"), "{out}");
}

/// The SQL and dpq forms of one question are one release whichever comes first, and the
/// same condition asked of another table is a release of that table (never its recorded
/// answer from the first).
#[test]
fn the_sql_and_dpq_forms_of_a_question_are_one_release_per_table() {
    let dir = tempfile::tempdir().expect("a directory");
    let a = write(dir.path(), "a.csv", "age,income\n20,100\n40,200\n50,300\n");
    let b = write(
        dir.path(),
        "b.csv",
        "age,income\n21,100\n41,200\n51,300\n61,0\n",
    );
    let mut session = Session::new(Randomness::Seeded(2));
    results(
        &mut session,
        &format!(
            "LOAD '{a}' AS a; LOAD '{b}' AS b; USE a; SET BUDGET 10; USE b; SET BUDGET 10; USE a;"
        ),
    );
    let dp = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5)";
    for (first, second) in [
        (
            "COUNT WHERE age < 30 WITH EPS 0.5;".to_string(),
            format!("{dp} COUNT(*) FROM a WHERE 30 > age;"),
        ),
        (
            format!("{dp} SUM(income, contribution_bounds_per_group => (0, 500)) FROM a WHERE age >= 30;"),
            "SUM income CLAMP (0, 500) WHERE age >= 30 WITH EPS 0.5;".to_string(),
        ),
        (
            format!("{dp} AVG(income, contribution_bounds_per_group => (0, 500)) FROM a WHERE NOT 30 <= age;"),
            "MEAN income CLAMP (0, 500) WHERE NOT age >= 30 WITH EPS 0.5;".to_string(),
        ),
    ] {
        let one = results(&mut session, &first);
        let two = results(&mut session, &second);
        assert_eq!(one[0]["from_history"], false, "{first}: {one:?}");
        assert_eq!(two[0]["from_history"], true, "{second}: {two:?}");
        assert_eq!(one[0]["noisy"], two[0]["noisy"], "{first} / {second}");
    }
    // The same condition on `b`: a release of `b`, charged to `b` alone.
    let other = results(
        &mut session,
        &format!("{dp} COUNT(*) FROM b WHERE age < 30;"),
    );
    assert_eq!(other[0]["from_history"], false, "{other:?}");
    let budgets = results(&mut session, "SHOW TABLES;");
    for t in budgets[0]["tables"].as_array().expect("tables") {
        let spent = t["budget_spent"].as_f64().expect("spent");
        match t["name"].as_str() {
            Some("a") => assert!((spent - 1.5).abs() < 1e-9, "{t}"),
            _ => assert!((spent - 0.5).abs() < 1e-9, "{t}"),
        }
    }
}

/// A comparison with its value first reads as the same comparison with the column first,
/// for every operator, alone, negated and combined: the second form is the first's recorded
/// answer, and EXPLAIN shows it with the column first.
#[test]
fn a_value_first_comparison_is_the_column_first_one_for_every_operator() {
    let dir = tempfile::tempdir().expect("a directory");
    let t = write(dir.path(), "t.csv", "age\n20\n30\n40\n");
    let mut session = Session::new(Randomness::Seeded(4));
    results(&mut session, &format!("LOAD '{t}' AS t; SET BUDGET 1000;"));
    for (flipped, plain) in [
        ("30 < age", "age > 30"),
        ("30 <= age", "age >= 30"),
        ("30 > age", "age < 30"),
        ("30 >= age", "age <= 30"),
        ("30 = age", "age = 30"),
        ("30 != age", "age != 30"),
        ("30 <> age", "age <> 30"),
        ("NOT 25 > age", "NOT age < 25"),
        (
            "(20 < age AND 40 >= age) OR NOT 35 <= age",
            "(age > 20 AND age <= 40) OR NOT age >= 35",
        ),
    ] {
        let explained = results(
            &mut session,
            &format!("EXPLAIN SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM t WHERE {flipped};"),
        );
        let shown = explained[0]["statement"].as_str().unwrap_or_default();
        assert!(
            !shown.contains(" 30 <") && !shown.contains(" 25 >"),
            "{shown}"
        );
        let one = results(&mut session, &format!("COUNT WHERE {flipped} WITH EPS 1;"));
        let two = results(&mut session, &format!("COUNT WHERE {plain} WITH EPS 1;"));
        assert_eq!(one[0]["kind"], "count", "{flipped}: {one:?}");
        assert_eq!(two[0]["from_history"], true, "{flipped} / {plain}: {two:?}");
        // And what EXPLAIN shows, run, is that release again.
        let native = shown
            .split("; ")
            .nth(1)
            .unwrap_or_default()
            .replace("EPS 1;", "EPS 1");
        let three = results(&mut session, &format!("{native};"));
        assert_eq!(three[0]["from_history"], true, "{shown}: {three:?}");
    }
}

/// Words the SQL form reads as keywords (SELECT, FROM, GROUP, OPTIONS, AVG, ...) still name
/// columns and tables in every statement, as they did before it.
#[test]
fn sql_words_still_name_columns_and_tables() {
    let dir = tempfile::tempdir().expect("a directory");
    let t = write(
        dir.path(),
        "t.csv",
        "select,group,options,from,avg,count,sum,as,by,differential_privacy\n1,2,a,4,5,6,7,8,9,1\n2,3,b,4,5,6,7,8,9,0\n",
    );
    for table in ["select", "from", "group", "options", "avg", "t"] {
        let mut session = Session::new(Randomness::Seeded(6));
        let dp = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01)";
        let source = format!(
            "LOAD '{t}' AS {table}; USE {table}; DESCRIBE {table}; SET BUDGET 100;
             COUNT WHERE select = 1 AND group > 1 AND options = 'a' AND from = 4 WITH EPS 0.01;
             COUNT WHERE avg < 9 OR count = 6 OR sum = 7 OR as = 8 OR by = 9 WITH EPS 0.01;
             COUNT WHERE differential_privacy = 1 WITH EPS 0.01;
             COUNT WHERE 4 = from AND select IN (1, 2) AND group BETWEEN 1 AND 3 WITH EPS 0.01;
             SUM avg CLAMP (0, 10) WHERE from = 4 WITH EPS 0.01;
             MEAN group CLAMP (0, 10) WHERE select = 1 WITH EPS 0.01;
             {dp} COUNT(*) FROM {table} WHERE from = 4 AND select > 0;
             {dp} SUM(avg, contribution_bounds_per_group => (0, 10)) FROM {table} WHERE group = 2;
             {dp} AVG(options_not_a_column_so_refused, contribution_bounds_per_group => (0, 1)) FROM {table} WHERE group = 2;"
        );
        let out = results(&mut session, &source);
        let errors: Vec<&Value> = out.iter().filter(|r| r["kind"] == "error").collect();
        assert_eq!(errors.len(), 1, "{table}: {errors:?}");
        assert!(
            errors[0]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("options_not_a_column_so_refused"),
            "{table}: {errors:?}"
        );
        let mut session = Session::new(Randomness::Seeded(6));
        let source = format!(
            "LOAD '{t}' AS {table}; SET BUDGET 100; CUBE BY group (3), options ('a', 'b');
             COUNT BY group WITH EPS 0.01; HISTOGRAM WITH EPS 0.01;
             {dp} COUNT(*) AS from FROM {table} WHERE group >= 3 GROUP BY options;
             {dp} COUNT(*) FROM {table} GROUP BY group, options;
             ESTIMATE COUNT WHERE group < 3;"
        );
        let out = results(&mut session, &source);
        assert!(out.iter().all(|r| r["kind"] != "error"), "{table}: {out:?}");
    }
}

/// `privacy_unit_column` names the unit as the table was loaded with it, written as a
/// quoted string when it is not a plain name (a quote doubled inside, as SQL writes it).
#[test]
fn privacy_unit_column_reads_a_quoted_name_as_sql_writes_it() {
    let dir = tempfile::tempdir().expect("a directory");
    let t = write(dir.path(), "u.csv", "we'ird,x\n1,2\n1,3\n2,4\n");
    let mut session = Session::new(Randomness::Seeded(8));
    let out = results(
        &mut session,
        &format!(
            "LOAD '{t}' AS u NEIGHBOURS add_remove PRIVACY UNIT \"we'ird\" MAX ROWS 2;
             SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, privacy_unit_column = 'we''ird') COUNT(*) FROM u WHERE x > 2;
             SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, privacy_unit_column = x) COUNT(*) FROM u WHERE x > 2;"
        ),
    );
    assert_eq!(out[1]["kind"], "count", "{out:?}");
    assert_eq!(out[2]["kind"], "error", "{out:?}");
    // What the refusal tells to write is what is accepted.
    let help = out[2]["help"].as_str().unwrap_or_default();
    assert!(help.contains("privacy_unit_column = 'we''ird'"), "{help}");
}

/// Statements mutated at random around the SQL form and the habits it explains (quotes,
/// `&&`, `=>`, Unicode, unclosed groups) never panic, and every statement that parses prints
/// back as text that parses to the same print.
#[test]
fn mutated_sql_never_panics_and_what_parses_prints_back() {
    let dir = tempfile::tempdir().expect("a directory");
    let t = write(dir.path(), "t.csv", "age,sex,income\n30,F,100\n40,M,200\n");
    let seeds = [
        "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1, delta = 0) COUNT(*) AS n FROM t WHERE 30 > age AND sex = 'F' GROUP BY sex",
        "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) AVG(income, contribution_bounds_per_group => (0, 100)) FROM \"t\" WHERE NOT age BETWEEN 1 AND 2",
        "SELECT COUNT(*) FROM t WHERE sex = \"F\" && age == 3 || !(age => 4)",
        "EXPLAIN SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (privacy_unit_column = 'a''b', epsilon = .5) SUM(age) FROM t",
        "COUNT WHERE sex IN ('é', 'ü''x', \"日本\") AND 3 <= age WITH EPS 0.1 PRIOR p=0.5",
    ];
    let pieces = [
        "\"", "'", "(", ")", "é", "日", "&&", "||", "==", "=>", "=<", "!", ",", "*", " ", "--",
        ";", "SELECT", "WITH", "OPTIONS", "FROM", "GROUP BY", "ORDER BY", "JOIN", "\"é", "''",
        "1e308", "-0.0", "age", "\u{1}", "💥",
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut session = Session::new(Randomness::Seeded(9));
    results(&mut session, &format!("LOAD '{t}' AS t; SET BUDGET 1000;"));
    for _ in 0..1500 {
        let mut text = seeds[rng.random_range(0..seeds.len())].to_string();
        for _ in 0..rng.random_range(1..4) {
            let chars: Vec<(usize, char)> = text.char_indices().collect();
            let (at, _) = chars[rng.random_range(0..chars.len())];
            let piece = pieces[rng.random_range(0..pieces.len())];
            match rng.random_range(0..3) {
                0 => text.insert_str(at, piece),
                1 => {
                    let end = text[at..]
                        .char_indices()
                        .nth(rng.random_range(1..4))
                        .map_or(text.len(), |(k, _)| at + k);
                    text.replace_range(at..end, "");
                }
                _ => {
                    let end = text[at..].chars().next().map_or(at, |c| at + c.len_utf8());
                    text.replace_range(at..end, piece);
                }
            }
        }
        text.push(';');
        if let Ok(statements) = dpq::syntax::parse_script(&text) {
            for s in statements {
                let printed = format!("{};", s.kind);
                let again = dpq::syntax::parse_script(&printed)
                    .unwrap_or_else(|e| panic!("{text}\nprints as\n{printed}\nwhich fails: {e}"));
                assert_eq!(
                    format!("{};", again[0].kind),
                    printed,
                    "{text} does not print back"
                );
            }
        }
        // Run too, without spending: practice is in memory, and errors must be errors.
        let _ = results(&mut session, &text);
    }
}

/// On a served dataset a SELECT is the statement it translates to under the policy: a table
/// the analyst was not given is unknown (and never suggested), a statement family the
/// policy leaves out and an epsilon above its cap are refused, and none of it spends.
#[test]
fn a_served_select_obeys_the_policy_and_names_no_other_dataset() {
    let setup = Setup::new(2);
    let policy = setup.policy(
        "budget = 1\nmax_eps_per_query = 0.2\nstatements = [\"histogram\", \"sum\"]\ncube = \"BY sex ('F', 'M')\"",
        &["0.5", "0.5"],
        "",
    );
    setup.add_other_dataset(&policy, "budget = 1", "0.5");
    let server = Server::start(&setup, &policy);
    // Analyst a1 was not given `other`.
    let b = setup.token(1);
    let dp = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS";
    for (statement, says) in [
        (
            format!("{dp} (epsilon = 0.1) COUNT(*) FROM other WHERE age < 30;"),
            "other",
        ),
        (
            format!("{dp} (epsilon = 0.1) COUNT(*) FROM othr WHERE age < 30;"),
            "othr",
        ),
        (
            format!("{dp} (epsilon = 0.1) COUNT(*) FROM people WHERE age < 30;"),
            "count statements",
        ),
        (
            format!("{dp} (epsilon = 0.3) COUNT(*) FROM people GROUP BY sex;"),
            "0.2",
        ),
        (
            format!("EXPLAIN {dp} (epsilon = 0.1) COUNT(*) FROM people GROUP BY sex;"),
            "explain statements",
        ),
        (
            format!("{dp} (epsilon = 0.1) AVG(age, contribution_bounds_per_group => (0, 100)) FROM people WHERE age = 0.5;"),
            "no row can meet",
        ),
    ] {
        let (status, body) = server.run(b, &statement);
        assert_eq!(status, 200, "{statement}: {body}");
        let help = body["error"]["help"].to_string();
        let message = format!("{} {help}", error(&body));
        assert!(message.contains(says), "{statement}: {body}");
        assert!(
            !help.contains("other"),
            "{statement}: the help names a dataset a1 was not given: {body}"
        );
    }
    assert_eq!(server.budget(b)["spent"], 0.0);
    // What the policy allows runs, on the dataset FROM names.
    let (_, body) = server.run(
        b,
        &format!("{dp} (epsilon = 0.1) COUNT(*) FROM people GROUP BY sex;"),
    );
    assert_eq!(kinds(&body), ["histogram"], "{body}");
    assert_eq!(server.budget(b)["spent"], 0.1);
}

/// A column called `limit`, `join`, `distinct` or `having` is a column: a SELECT with an
/// unrelated mistake is told about that mistake, not about a clause it does not contain;
/// the clauses themselves are still explained.
#[test]
fn a_column_named_like_a_sql_clause_is_not_taken_for_it() {
    let dir = tempfile::tempdir().expect("a directory");
    let t = write(
        dir.path(),
        "t.csv",
        "limit,join,order,distinct,having\n1,2,3,4,5\n",
    );
    let mut session = Session::new(Randomness::Seeded(8));
    results(&mut session, &format!("LOAD '{t}' AS t; SET BUDGET 100;"));
    let dp = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM t";
    for column in ["limit", "join", "order", "distinct", "having"] {
        let fine = results(&mut session, &format!("{dp} WHERE {column} = 1;"));
        assert_eq!(fine[0]["kind"], "count", "{column}: {fine:?}");
        let fine = results(&mut session, &format!("{dp} WHERE 2 < {column};"));
        assert_eq!(fine[0]["kind"], "count", "{column}: {fine:?}");
        let broken = results(&mut session, &format!("{dp} WHERE {column} = 1 AND;"));
        let message = broken[0]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("expected"), "{column}: {message}");
    }
    for (clause, says) in [
        ("WHERE limit = 1 LIMIT 10", "LIMIT has no private form"),
        ("JOIN u ON t.join = u.join WHERE join = 2", "JOIN"),
        (
            "WHERE order = 3 ORDER BY order",
            "ORDER BY has no private form",
        ),
        (
            "WHERE having > 1 GROUP BY join HAVING COUNT(*) > 5",
            "HAVING has no private form",
        ),
    ] {
        let out = results(&mut session, &format!("{dp} {clause};"));
        let message = out[0]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{clause}: {message}");
    }
}

/// A PostgreSQL float column holds infinities and NaN (which PostgreSQL orders above every
/// number): a condition only they meet is answered, never refused as one no row can meet.
/// The server is named by `DPQ_TEST_POSTGRES` (see `tests/data/sources.rs`).
#[test]
fn a_database_column_with_infinities_is_judged_with_them() {
    let Some(conninfo) = common::postgres_server() else {
        return;
    };
    let table = format!("sql_atk_inf_{}", std::process::id());
    let mut client = postgres::Client::connect(&conninfo, postgres::NoTls).expect("the server");
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (x float8, n numeric); \
             INSERT INTO {table} VALUES ('Infinity', 'NaN'), ('-Infinity', 'Infinity'), \
             ('NaN', '1e400'), (1.5, 2.5), (2, NULL);"
        ))
        .expect("the table");
    let mut session = Session::new(Randomness::Seeded(3));
    let out = results(
        &mut session,
        &format!("LOAD postgres '{conninfo}' TABLE {table} AS p; SET BUDGET 1000000000;"),
    );
    assert!(out.iter().all(|r| r["kind"] != "error"), "{out:?}");
    for (condition, count) in [
        ("x > 1.7976931348623157e308", 2.0),
        ("x < -1.7976931348623157e308", 1.0),
        ("n > 1.7976931348623157e308", 3.0),
        ("x >= -1.7976931348623157e308", 4.0),
    ] {
        let (got, warnings) = exact_count(&mut session, condition)
            .unwrap_or_else(|e| panic!("{condition} was refused: {e}"));
        assert_eq!(got, count, "{condition}");
        assert!(warnings.is_empty(), "{condition}: {warnings:?}");
    }
    client
        .batch_execute(&format!("DROP TABLE {table};"))
        .expect("dropped");
}
