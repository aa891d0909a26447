//! Parser tests: statements, precedence, keywords, error messages.

use super::*;
use crate::ast::StatementKind as K;

fn one(src: &str) -> StatementKind {
    let mut v = parse_script(src).unwrap_or_else(|e| panic!("{src}: {e}"));
    assert_eq!(v.len(), 1, "{src}");
    v.remove(0).kind
}

fn err(src: &str) -> String {
    parse_script(src).expect_err(src).to_string()
}

#[test]
fn design_card_statements_parse() {
    let K::Count(q) = one("COUNT WHERE age<=30 WITH EPS 0.1 PRIOR p=0.3;") else {
        panic!("not a count")
    };
    assert!(matches!(&q.accuracy, crate::ast::Accuracy::Eps(e) if e.text == "0.1"));
    assert_eq!(q.prior.map(|p| p.p.value), Some(0.3));
    assert_eq!(q.terms[0].predicate.to_string(), "age <= 30");
    let K::ChooseEps(c) = one("CHOOSE EPS WITHIN 20% AT 0.8 FOR 100;") else {
        panic!("not choose")
    };
    assert!(c.within_percent && !c.at_percent);
    assert_eq!(c.for_count.map(|n| n.value), Some(100.0));
}

#[test]
fn keywords_are_case_insensitive_and_word_bounded() {
    assert!(matches!(one("show tables"), K::ShowTables));
    assert!(matches!(one("Show Budget;"), K::ShowBudget));
    // COUNTRY is a column, not COUNT followed by RY.
    let K::Count(q) = one("count where country = 'IT' with eps 1") else {
        panic!("not a count")
    };
    assert_eq!(q.terms[0].predicate.to_string(), "country = 'IT'");
    // A column may start with a reserved word.
    let K::Count(q) = one("COUNT WHERE notes = 'x' AND index > 1 OR order_id < 3 WITH EPS 1")
    else {
        panic!("not a count")
    };
    assert_eq!(
        q.terms[0].predicate.to_string(),
        "notes = 'x' AND index > 1 OR order_id < 3"
    );
}

#[test]
fn and_binds_tighter_than_or_and_not_tightest() {
    let K::Count(mut q) = one("COUNT WHERE a = 1 OR b = 2 AND NOT c = 3 WITH EPS 1") else {
        panic!()
    };
    match q.terms.remove(0).predicate {
        Expr::Or(_, rhs) => match *rhs {
            Expr::And(_, not) => assert!(matches!(*not, Expr::Not(_))),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

#[test]
fn in_between_and_parentheses() {
    let K::Count(q) = one(
        "COUNT WHERE (region IN ('North', 'South') OR age NOT BETWEEN 20 AND 30) AND employed = TRUE WITH EPS 0.5",
    ) else {
        panic!()
    };
    assert_eq!(
        q.terms[0].predicate.to_string(),
        "(region IN ('North', 'South') OR age NOT BETWEEN 20 AND 30) AND employed = TRUE"
    );
}

#[test]
fn strings_and_quoted_names_unescape() {
    let K::Count(q) = one("COUNT WHERE \"first name\" = 'O''Brien' WITH EPS 1") else {
        panic!()
    };
    assert_eq!(
        q.terms[0].predicate.to_string(),
        "\"first name\" = 'O''Brien'"
    );
}

#[test]
fn comments_and_blank_statements() {
    let v = parse_script("-- setup\nSHOW TABLES; -- trailing\n;\nSHOW BUDGET -- no semicolon")
        .expect("parses");
    assert_eq!(v.len(), 2);
}

#[test]
fn errors_read_like_sentences() {
    assert_eq!(
        err("COUNT WHERE age < 30 WITH EPS;"),
        "expected a number after `EPS`"
    );
    assert_eq!(
        err("COUNT WHERE age < 30 EPS 0.1;"),
        "expected WITH, WITHIN, AND, OR, BY or +/- after `30`"
    );
    assert!(err("SELECT * FROM t;").starts_with("dpq never returns rows"));
    assert!(err("COUTN WHERE a = 1 WITH EPS 1;").starts_with("expected a statement"));
    assert_eq!(
        err("SHOW ME;"),
        "expected TABLES, BUDGET, HISTORY or CUBE after `SHOW`"
    );
    assert_eq!(
        err("COUNT WHERE a = 1 WITH EPS 1 PRIOR p=0.2 PRIOR p=0.3"),
        "PRIOR is given twice"
    );
}

/// The help line of the error `src` gives.
fn help(src: &str) -> String {
    let e = crate::error::Error::from(parse_script(src).expect_err("does not parse"));
    e.help().unwrap_or_default()
}

#[test]
fn habits_from_other_languages_are_explained() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "COUNT WHERE sex = \"F\" WITH EPS 0.1",
            "double quotes are for names",
            "write 'F'",
        ),
        (
            "COUNT WHERE a < 3 && b = 1 WITH EPS 1",
            "dpq writes AND",
            "AND",
        ),
        (
            "COUNT WHERE a < 3 || b = 1 WITH EPS 1",
            "dpq writes OR",
            "OR",
        ),
        (
            "COUNT WHERE a == 3 WITH EPS 1",
            "a comparison takes one =",
            "age = 30",
        ),
        ("COUNT WHERE a =< 3 WITH EPS 1", "dpq writes <=", "<="),
        ("COUNT WHERE ! a = 3 WITH EPS 1", "dpq writes NOT", "NOT"),
        (
            "COUNT WHERE (a = 3 WITH EPS 1",
            "this `(` is never closed",
            "`)`",
        ),
        (
            "COUNT WHERE a = 3) WITH EPS 1",
            "this `)` closes nothing",
            "remove it",
        ),
        (
            "COUNT WHERE a < 30",
            "COUNT does not say what it may spend",
            "WITH EPS 0.1",
        ),
        (
            "COUNT WHERE a < 30 PRIOR p=0.3",
            "COUNT does not say what it may spend",
            "WITHIN",
        ),
        (
            "HISTOGRAM",
            "HISTOGRAM does not say what it may spend",
            "WITH EPS",
        ),
        (
            "COUTN WHERE a = 1 WITH EPS 1",
            "expected a statement",
            "did you mean COUNT?",
        ),
        (
            "HISTOGRM WITH EPS 1",
            "expected a statement",
            "did you mean HISTOGRAM?",
        ),
        (
            "COUNT WHER a = 1 WITH EPS 1",
            "expected WHERE or BY",
            "did you mean WHERE?",
        ),
        (
            "SELECT * FROM t",
            "dpq never returns rows",
            "DIFFERENTIAL_PRIVACY",
        ),
        (
            "SELECT a, b FROM t",
            "dpq never returns a row's values",
            "COUNT(*)",
        ),
        (
            "SELECT COUNT(*) FROM t JOIN u ON t.a = u.a",
            "one table at a time",
            "COUNT(*)",
        ),
        (
            "SELECT COUNT(*) FROM t ORDER BY a",
            "ORDER BY has no private form",
            "COUNT(*)",
        ),
        (
            "SELECT COUNT(*) FROM t LIMIT 3",
            "LIMIT has no private form",
            "COUNT(*)",
        ),
        (
            "SELECT COUNT(*), SUM(a) FROM t",
            "a SELECT asks one aggregate",
            "of its own",
        ),
        (
            "SELECT MAX(a) FROM t",
            "MAX has no SQL form",
            "MEDIAN age CLAMP",
        ),
    ];
    for (src, message, fix) in cases {
        let e = err(src);
        assert!(e.contains(message), "{src}: {e}");
        let h = help(src);
        assert!(h.contains(fix), "{src}: help {h}");
    }
    // The statement list is the grammar's: every statement is named.
    let e = err("FOO;");
    for word in ["HISTOGRAM", "SUM", "MEAN", "SHARE", "SELECT", "EXPLAIN"] {
        assert!(e.contains(word), "{word} missing: {e}");
    }
}

#[test]
fn a_flipped_comparison_reads_as_written_the_other_way() {
    let flipped = parse_script("COUNT WHERE 30 > age WITH EPS 1").expect("parses");
    let straight = parse_script("COUNT WHERE age < 30 WITH EPS 1").expect("parses");
    assert_eq!(flipped[0].kind.to_string(), straight[0].kind.to_string());
    let flipped = parse_script("COUNT WHERE 'F' = sex AND 2 <= n WITH EPS 1").expect("parses");
    assert_eq!(
        flipped[0].kind.to_string(),
        "COUNT WHERE sex = 'F' AND n >= 2 WITH EPS 1"
    );
}

#[test]
fn a_select_prints_back_to_itself() {
    for src in [
        "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) COUNT(*) FROM t WHERE age < 30",
        "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, privacy_unit_column = id) COUNT(*) AS n FROM t GROUP BY sex, region",
        "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) AVG(income, contribution_bounds_per_group => (0, 100000)) FROM \"my table\" WHERE age >= 30",
        "SELECT SUM(income) FROM t",
    ] {
        let once = parse_script(src).expect("parses")[0].kind.to_string();
        assert_eq!(once, src);
        let twice = parse_script(&once).expect("parses again")[0].kind.to_string();
        assert_eq!(twice, once);
    }
}

#[test]
fn a_database_table_prints_back_to_itself() {
    for src in [
        "LOAD POSTGRES 'host=db dbname=x' TABLE visits AS v",
        "LOAD SPARK 'sc://spark.example:15002' TABLE visits AS v",
        "LOAD SPARK 'sc://h' TABLE lake.visits",
        "LOAD SPARK 'sc://h' TABLE main.lake.\"my visits\" AS v NEIGHBOURS add_remove",
    ] {
        let once = parse_script(src).expect("parses")[0].kind.to_string();
        assert_eq!(once, src);
    }
    match one("LOAD SPARK 'sc://h' TABLE main.lake.visits") {
        K::Load {
            database: Some(d), ..
        } => {
            assert_eq!(d.engine, crate::ast::Engine::Spark);
            assert_eq!(d.parts(), ["main", "lake", "visits"]);
        }
        other => panic!("{other:?}"),
    }
    // At most catalog, database and table.
    assert!(parse_script("LOAD SPARK 'sc://h' TABLE a.b.c.d").is_err());
    // PostgreSQL names one table.
    assert!(parse_script("LOAD POSTGRES 'x' TABLE a.b").is_err());
}

#[test]
fn error_spans_point_into_the_script() {
    let src = "SHOW TABLES;\nCOUNT WHERE age < 30 WITH EPS;";
    let e = parse_script(src).expect_err("bad");
    let span = crate::error::Error::from(e).span();
    assert_eq!(&src[span.start..span.end], ";");
    assert_eq!(crate::span::locate(src, span.start).0.line, 2);
}

#[test]
fn large_predicates_are_refused_not_overflowed() {
    let too_long = |src: &str| matches!(parse_script(src), Err(SyntaxError::TooLong { .. }));
    assert!(too_long(&format!(
        "COUNT WHERE {} a = 1 WITH EPS 1",
        "NOT ".repeat(100_000)
    )));
    assert!(too_long(&format!(
        "COUNT WHERE a = 1{} WITH EPS 1",
        " AND a = 1".repeat(5_000)
    )));
    // Nesting multiplies: groups of 100 conditions five levels deep are 500 conditions.
    let mut nested = "a = 1".to_string();
    for _ in 0..5 {
        nested = format!("({nested}){}", " AND a = 1".repeat(100));
    }
    assert!(too_long(&format!("COUNT WHERE {nested} WITH EPS 1")));
    let values = vec!["1"; 10_001].join(", ");
    assert!(too_long(&format!("COUNT WHERE a IN ({values}) WITH EPS 1")));
}

#[test]
fn predicates_at_the_limits_parse_print_and_drop() {
    // The deepest tree the limits allow: 499 NOTs around one condition, run on a test
    // thread's small stack through parsing, printing and dropping.
    let src = format!(
        "COUNT WHERE {}a = 1 WITH EPS 1",
        "NOT ".repeat(MAX_TERMS - 1)
    );
    let stmt = parse_script(&src).expect("within the limit");
    assert!(stmt[0].to_string().len() > 2000);
    let values = vec!["1"; MAX_VALUES].join(", ");
    parse_script(&format!("COUNT WHERE a IN ({values}) WITH EPS 1")).expect("within the limit");
}

#[test]
fn display_is_canonical_and_reparses() {
    for src in [
        "LOAD 'examples/data/people.csv' AS people;",
        "LOAD 'it''s.csv';",
        "USE people;",
        "DESCRIBE;",
        "SET BUDGET 2.5;",
        "SET SEED 7;",
        "COUNT WHERE NOT (a = 1 OR b != 'x') AND c IN (1, 2) WITH EPS 1e-2 PRIOR p=0.5 MECHANISM laplace;",
        "COUNT WHERE a = 1 AND (b = 2 AND c = 3) WITH EPS 1;",
        "CHOOSE EPS WITHIN 5 AT 95%;",
        "CUBE BY age (30, 65), sex ('F', 'M');",
        "2*COUNT WHERE age < 30 - COUNT WHERE sex = 'F' WITH EPS 0.05;",
        "- COUNT WHERE a = 1 + -2*COUNT WHERE a = 2 WITH EPS 1;",
        "- 3*COUNT WHERE a = 1 WITHIN 10 AT 95%;",
        "COUNT WHERE age < 30 WITHIN 10 AT 0.95;",
        "ESTIMATE COUNT WHERE age < 30;",
        "PROB COUNT WHERE age < 30 > 10;",
        "PROB 2*COUNT WHERE a BETWEEN 1 AND 5 BETWEEN 3 AND 9;",
    ] {
        let stmt = &parse_script(src).expect("parses")[0];
        let printed = stmt.to_string();
        assert_eq!(printed, src);
        assert_eq!(&parse_script(&printed).expect("reparses")[0], stmt);
    }
}

#[test]
fn linear_queries_keep_signs_and_coefficients() {
    let K::Count(q) =
        one("2*COUNT WHERE a < 30 - COUNT WHERE b = 'x' +0.5*COUNT WHERE c > 1 WITH EPS 0.05;")
    else {
        panic!("not a count")
    };
    let shape: Vec<(bool, Option<String>)> = q
        .terms
        .iter()
        .map(|t| (t.minus, t.coefficient.as_ref().map(|c| c.text.clone())))
        .collect();
    assert_eq!(
        shape,
        vec![
            (false, Some("2".into())),
            (true, None),
            (false, Some("0.5".into()))
        ]
    );
    // A leading `-2` is the coefficient -2; `- 2` is a sign and the coefficient 2.
    let K::Count(q) = one("-2*COUNT WHERE a = 1 WITH EPS 1;") else {
        panic!("not a count")
    };
    assert!(!q.terms[0].minus);
    assert_eq!(q.terms[0].coefficient.as_ref().map(|c| c.value), Some(-2.0));
    let K::Count(q) = one("- 2*COUNT WHERE a = 1 WITH EPS 1;") else {
        panic!("not a count")
    };
    assert!(q.terms[0].minus);
    assert!(err("COUNT WHERE a = 1 - WITH EPS 1;").contains("expected"));
    let K::CubeBy { dims } = one("cube by age (30, 65), \"first name\" ('a');") else {
        panic!("not a cube")
    };
    assert_eq!(dims.len(), 2);
    assert_eq!(dims[1].column.name, "first name");
}

#[test]
fn load_columns_parse_in_any_order_and_print_back() {
    let src = "load 'f.csv' as t columns (age Integer between 0 and 120, sex TEXT in ('F', 'M'), \
               ok boolean, w float) no header privacy unit age max rows 2";
    let K::Load {
        columns: Some(c),
        no_header,
        unit,
        ..
    } = one(src)
    else {
        panic!("no columns")
    };
    assert!(no_header && unit.is_some());
    let names: Vec<_> = c.columns.iter().map(|d| d.name.name.as_str()).collect();
    assert_eq!(names, ["age", "sex", "ok", "w"]);
    assert_eq!(c.columns[0].ty, DeclaredType::Integer);
    assert!(matches!(&c.columns[1].domain, Some(DeclaredDomain::In(v)) if v.len() == 2));
    let printed = Statement {
        kind: one(src),
        span: Span::default(),
    }
    .to_string();
    assert_eq!(
        printed,
        "LOAD 'f.csv' AS t NO HEADER PRIVACY UNIT age MAX ROWS 2 COLUMNS (age integer BETWEEN 0 \
         AND 120, sex text IN ('F', 'M'), ok boolean, w float);"
    );
    assert_eq!(one(&printed), one(src));
    // Type names are keywords only in their place: a column may be called `text`, and
    // COLUMNSX is a name, not COLUMNS.
    let K::Load {
        columns: Some(c), ..
    } = one("LOAD 'f.csv' COLUMNS (text text)")
    else {
        panic!("no columns")
    };
    assert_eq!(c.columns[0].name.name, "text");
    assert!(err("LOAD 'f.csv' COLUMNSX (a integer)").contains("expected"));
}

#[test]
fn load_delimiter_and_decimal_parse_in_any_order_and_print_back() {
    let src = "load 'f.csv' as t decimal ',' no header delimiter '\\t'";
    let K::Load {
        delimiter: Some(d),
        decimal: Some(c),
        no_header,
        ..
    } = one(src)
    else {
        panic!("no delimiter or decimal")
    };
    assert!(no_header);
    // Kept as written: the checker reads `\t` as a tab.
    assert_eq!((d.value.as_str(), c.value.as_str()), ("\\t", ","));
    let printed = Statement {
        kind: one(src),
        span: Span::default(),
    }
    .to_string();
    assert_eq!(
        printed,
        "LOAD 'f.csv' AS t NO HEADER DELIMITER '\\t' DECIMAL ',';"
    );
    assert_eq!(one(&printed), one(src));
    assert_eq!(
        err("LOAD 'f.csv' DELIMITER ';' DELIMITER ','"),
        "DELIMITER is given twice"
    );
    assert_eq!(
        err("LOAD 'f.csv' DECIMAL ',' DECIMAL ','"),
        "DECIMAL is given twice"
    );
    assert!(err("LOAD 'f.csv' DELIMITER").contains("a quoted string"));
}

#[test]
fn load_columns_errors_name_what_is_expected() {
    assert_eq!(
        err("LOAD 'f.csv' COLUMNS (age int)"),
        "expected a column type (integer, float, text, boolean) after `age`"
    );
    assert_eq!(
        err("LOAD 'f.csv' COLUMNS (age integer, sex)"),
        "expected a column type (integer, float, text, boolean) after `sex`"
    );
    assert!(err("LOAD 'f.csv' COLUMNS ()").contains("a column and its type"));
    assert!(err("LOAD 'f.csv' COLUMNS (age integer BETWEEN 0)").contains("AND"));
    assert_eq!(
        err("LOAD 'f.csv' COLUMNS (a text) COLUMNS (b text)"),
        "COLUMNS is given twice"
    );
}
