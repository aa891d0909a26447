//! Loading CSV files: type inference, missing values, quoting, every `DataError`, and no panic on junk.

use std::io::Write;
use std::path::{Path, PathBuf};

use dpq::data::{
    count, escape_name, load_csv, CmpOp, ColumnType, CsvFormat, DataError, LoadOptions, Predicate,
    Table, Value,
};
use proptest::prelude::*;

/// Writes `bytes` to `name` in `dir` and returns the path.
fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    let mut f = std::fs::File::create(&path).expect("create test file");
    f.write_all(bytes).expect("write test file");
    path
}

fn load_bytes(bytes: &[u8]) -> Result<Table, DataError> {
    let dir = tempfile::tempdir().expect("tempdir");
    load_csv(&write(dir.path(), "t.csv", bytes), &LoadOptions::default()).map(|l| l.table)
}

fn types(t: &Table) -> Vec<ColumnType> {
    t.schema().into_iter().map(|(_, ty)| ty).collect()
}

fn col(t: &Table, name: &str) -> usize {
    t.column_index(name).expect("column exists")
}

fn cmp(t: &Table, name: &str, op: CmpOp, value: Value) -> Predicate {
    Predicate::Compare {
        column: col(t, name),
        op,
        value,
    }
}

fn num(x: f64) -> Value {
    Value::Number(x)
}

fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

/// Rows where column `name` has a value: `c = v OR NOT c = v` is unknown only when missing.
fn present(t: &Table, name: &str, v: Value) -> u64 {
    let p = cmp(t, name, CmpOp::Eq, v);
    count(
        t,
        &Predicate::Or(Box::new(p.clone()), Box::new(Predicate::Not(Box::new(p)))),
    )
}

#[test]
fn infers_each_type() {
    let t = load_bytes(
        b"i,f,s,b,none,mixed\n\
          1,1.5,x,true,,1\n\
          -2,2,y,FALSE,NA,true\n\
          30, 4e2 ,7,True,,2.5\n",
    )
    .expect("loads");
    assert_eq!(t.n_rows(), 3);
    assert_eq!(t.n_columns(), 6);
    assert_eq!(
        types(&t),
        [
            ColumnType::Integer,
            ColumnType::Float,
            ColumnType::Text,
            ColumnType::Boolean,
            ColumnType::Text,
            ColumnType::Text
        ]
    );
    assert_eq!(t.column_name(1), "f");
    assert_eq!(t.column_type(3), ColumnType::Boolean);
    assert_eq!(
        ColumnType::Integer.to_string() + ColumnType::Float.to_string().as_str(),
        "integerfloat"
    );
    assert_eq!(ColumnType::Text.to_string(), "text");
    assert_eq!(ColumnType::Boolean.to_string(), "boolean");
    // Values survive: whitespace around numbers is trimmed, exponents parse.
    assert_eq!(count(&t, &cmp(&t, "f", CmpOp::Eq, num(400.0))), 1);
    assert_eq!(count(&t, &cmp(&t, "i", CmpOp::Lt, num(0.0))), 1);
    assert_eq!(count(&t, &cmp(&t, "b", CmpOp::Eq, Value::Bool(true))), 2);
    assert_eq!(count(&t, &cmp(&t, "s", CmpOp::Eq, text("7"))), 1);
    assert_eq!(count(&t, &cmp(&t, "mixed", CmpOp::Eq, text("true"))), 1);
}

#[test]
fn integers_too_large_for_i64_are_floats_and_non_finite_is_text() {
    let t = load_bytes(b"big,inf\n9223372036854775808,inf\n1,2\n").expect("loads");
    assert_eq!(types(&t), [ColumnType::Float, ColumnType::Text]);
}

#[test]
fn missing_values_are_empty_or_na() {
    let t = load_bytes(b"age,name\n30,ann\n,bob\nNA,NA\n  ,\"\"\n41,   \n").expect("loads");
    assert_eq!(types(&t), [ColumnType::Integer, ColumnType::Text]);
    assert_eq!(t.n_rows(), 5);
    assert_eq!(present(&t, "age", num(30.0)), 2);
    assert_eq!(present(&t, "name", text("ann")), 2);
    // A missing cell matches no comparison, not even `!=`.
    assert_eq!(count(&t, &cmp(&t, "age", CmpOp::Ne, num(30.0))), 1);
}

#[test]
fn quoted_fields_keep_commas_quotes_and_newlines() {
    let t = load_bytes(
        b"id,note\r\n\
          1,\"a, b\"\r\n\
          2,\"two\nlines\"\r\n\
          3,\"say \"\"hi\"\"\"\r\n\
          4,\" padded \"\r\n\
          5,  trimmed  \r\n",
    )
    .expect("loads");
    assert_eq!(t.n_rows(), 5);
    for (v, n) in [
        ("a, b", 1),
        ("two\nlines", 1),
        ("say \"hi\"", 1),
        (" padded ", 1),
        ("padded", 0),
        ("trimmed", 1),
    ] {
        assert_eq!(count(&t, &cmp(&t, "note", CmpOp::Eq, text(v))), n, "{v:?}");
    }
}

#[test]
fn header_names_are_trimmed_and_looked_up() {
    let t = load_bytes("\u{feff} Age ,AGE,Sex\n1,2,F\n".as_bytes()).expect("loads");
    assert_eq!(
        t.schema(),
        vec![
            ("Age".to_string(), ColumnType::Integer),
            ("AGE".to_string(), ColumnType::Integer),
            ("Sex".to_string(), ColumnType::Text)
        ]
    );
    assert_eq!(t.column_index("AGE"), Some(1));
    assert_eq!(t.column_index("Age"), Some(0));
    assert_eq!(
        t.column_index("age"),
        None,
        "ambiguous without an exact match"
    );
    assert_eq!(t.column_index("sex"), Some(2));
    assert_eq!(t.column_index("height"), None);
}

#[test]
fn a_header_only_file_has_no_rows() {
    let t = load_bytes(b"a,b\n").expect("loads");
    assert_eq!(t.n_rows(), 0);
    assert_eq!(types(&t), [ColumnType::Text, ColumnType::Text]);
    assert_eq!(count(&t, &cmp(&t, "a", CmpOp::Eq, text("x"))), 0);
}

#[test]
fn debug_shows_schema_not_cells() {
    let t = load_bytes(b"name,salary\nzanzibar,987654\n").expect("loads");
    let shown = format!("{t:?}");
    assert!(
        shown.contains("name") && shown.contains("n_rows: 1"),
        "{shown}"
    );
    assert!(
        !shown.contains("zanzibar") && !shown.contains("987654"),
        "{shown}"
    );
}

/// Secret cell values planted in the error files; no message may contain them.
const SECRETS: [&str; 4] = ["zanzibar", "987654", "hunter2", "31337"];

fn assert_no_secret(e: &DataError) {
    for text in [e.to_string(), format!("{e:?}")] {
        for s in SECRETS {
            assert!(!text.contains(s), "{text:?} reveals {s:?}");
        }
        assert!(!text.is_empty());
    }
}

/// Loads `bytes` with `opts` and returns the error.
fn error_of(bytes: &[u8], opts: &LoadOptions) -> DataError {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "bad.csv", bytes);
    let e = load_csv(&path, opts).expect_err("must fail");
    assert_no_secret(&e);
    e
}

fn error(bytes: &[u8]) -> DataError {
    error_of(bytes, &LoadOptions::default())
}

#[test]
fn every_error_is_clear_and_shows_no_value() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("absent.csv");
    let e = load_csv(&missing, &LoadOptions::default()).expect_err("absent");
    assert_eq!(
        e,
        DataError::NotFound {
            path: missing.display().to_string()
        }
    );
    let e = load_csv(dir.path(), &LoadOptions::default()).expect_err("a directory");
    assert!(matches!(e, DataError::Io { .. }), "{e:?}");

    assert!(matches!(error(b""), DataError::Empty { .. }));
    assert!(matches!(error(b"\xEF\xBB\xBF"), DataError::Empty { .. }));
    assert!(matches!(error(b"\n\r\n\n"), DataError::NoHeader { .. }));
    assert_eq!(
        error(b"a,b,a\nzanzibar,987654,hunter2\n"),
        DataError::NotAHeader
    );
    assert_eq!(
        error(b"a, ,c\nzanzibar,987654,hunter2\n"),
        DataError::NotAHeader
    );
    assert_eq!(error(b"a,b\xff\nzanzibar,987654\n"), DataError::NotAHeader);
    assert_eq!(
        error(b"a,b\nzanzibar,987654\nhunter2\n31337,1\n"),
        DataError::RaggedRow {
            line: 3,
            expected: 2,
        }
    );
    // Line numbers count the lines inside quoted fields.
    assert_eq!(
        error(b"a,b\n\"zan\nzibar\",1\n987654,hunter2,31337\n"),
        DataError::RaggedRow {
            line: 4,
            expected: 2,
        }
    );
    assert_eq!(
        error(b"a,b\nzanzibar,987654\n\"hunter2,31337\n1,2\n"),
        DataError::UnclosedQuote { line: 3 }
    );
    assert_eq!(
        error(b"a,b\nzanzibar,987654\n31337,hunter2\xC3\x28\n"),
        DataError::InvalidUtf8 {
            line: 3,
            column: "b".to_string()
        }
    );
    let big = LoadOptions {
        max_bytes: 10,
        ..LoadOptions::default()
    };
    assert_eq!(
        error_of(b"a,b\nzanzibar,987654\n", &big),
        DataError::TooLarge { limit: 10 }
    );
    let narrow = LoadOptions {
        max_fields: 2,
        ..LoadOptions::default()
    };
    assert_eq!(
        error_of(b"a,b,c\nzanzibar,987654,hunter2\n", &narrow),
        DataError::TooManyFields { line: 1, limit: 2 }
    );
    assert_eq!(
        error_of(b"a,b\nzanzibar,987654\n31337,hunter2,3\n", &narrow),
        DataError::TooManyFields { line: 3, limit: 2 }
    );
    // A `;` file read with `,`: the error names the header (public), never a row.
    assert_eq!(
        error(b"name;age\nzanzibar;987,654\n"),
        DataError::OneFieldHeader {
            line: 2,
            hint: "`name;age`: if `;` separates its fields, LOAD it with DELIMITER ';'".into()
        }
    );
    // Without a header the one field is a row of data: no hint names it.
    let headless = LoadOptions {
        header: false,
        ..LoadOptions::default()
    };
    assert_eq!(
        error_of(b"zanzibar;987654\nhunter2;3,1337\n", &headless),
        DataError::RaggedRow {
            line: 2,
            expected: 1,
        }
    );
    let clash = LoadOptions {
        format: CsvFormat {
            delimiter: b',',
            decimal_comma: true,
        },
        ..LoadOptions::default()
    };
    assert!(matches!(
        error_of(b"a\nzanzibar\n", &clash),
        DataError::Format { .. }
    ));
}

#[test]
fn messages_are_plain_sentences() {
    let e = DataError::RaggedRow {
        line: 7,
        expected: 3,
    };
    assert_eq!(
        e.to_string(),
        "the number of fields on line 7 differs from the header's 3"
    );
    let e = DataError::InvalidUtf8 {
        line: 2,
        column: "name".to_string(),
    };
    assert_eq!(
        e.to_string(),
        "line 2, column name: the cell is not valid UTF-8"
    );
    assert_eq!(
        DataError::UnclosedQuote { line: 4 }.to_string(),
        "the quoted field opened on line 4 is never closed"
    );
}

#[test]
fn without_a_header_columns_are_numbered_and_the_first_row_is_data() {
    let opts = LoadOptions {
        header: false,
        ..LoadOptions::default()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(
        dir.path(),
        "t.csv",
        b"\xEF\xBB\xBF\n42,zanzibar,2024-01-31\n7,x,\n",
    );
    let t = load_csv(&path, &opts).expect("loads").table;
    assert_eq!(
        t.schema(),
        vec![
            ("c1".to_string(), ColumnType::Integer),
            ("c2".to_string(), ColumnType::Text),
            ("c3".to_string(), ColumnType::Text)
        ]
    );
    assert_eq!(t.n_rows(), 2);
    assert_eq!(count(&t, &cmp(&t, "c1", CmpOp::Eq, num(42.0))), 1);
    assert_eq!(count(&t, &cmp(&t, "c2", CmpOp::Eq, text("zanzibar"))), 1);
    // The first record sets the width; a later one of another width is ragged.
    assert_eq!(
        error_of(b"1,2\n3,4,5\n", &opts),
        DataError::RaggedRow {
            line: 2,
            expected: 2
        }
    );
    assert!(matches!(
        error_of(b"\n\r\n", &opts),
        DataError::NoRecords { .. }
    ));
    assert_eq!(
        error_of(b"1,\xff\n", &opts),
        DataError::InvalidUtf8 {
            line: 1,
            column: "c2".to_string()
        }
    );
}

#[test]
fn a_header_that_looks_like_data_is_refused() {
    for header in [
        "987654,b",
        "a, -3.5 ",
        "1e3,b,31337",
        "2024-01-31,b",
        "a,2024-01-31T10:00",
        "a,b,31/01/2024",
        "01/31/2024,b",
        "2024/01/31,b",
    ] {
        let e = error(format!("{header}\nzanzibar,hunter2,x\n").as_bytes());
        assert_eq!(e, DataError::NotAHeader, "{header}");
        let shown = e.to_string();
        for field in header.split(',') {
            let field = field.trim();
            if field.len() > 1 {
                assert!(!shown.contains(field), "{shown:?} shows {field:?}");
            }
        }
    }
    // Names with digits, and the words of floats over a text column, are names.
    let t = load_bytes(b"x1,inf,NaN,2nd,v1.2.3\n1,2,x,4,5\n").expect("names");
    assert_eq!(t.n_columns(), 5);
}

#[test]
fn control_characters_in_names_are_shown_escaped() {
    // Names holding control or format characters are refused outright (see
    // names_with_control_or_format_characters_are_refused); escaping still guards the rest.
    let e = error(b"\x1b[31m,\x1b[31m\nzanzibar,987654\n");
    assert_eq!(e, DataError::NotAHeader);
    assert!(!e.to_string().contains('\x1b'), "{e}");
    assert_eq!(escape_name("a\u{200b}"), "a\\u{200b}");
    assert_eq!(escape_name("plain name"), "plain name");
}

#[test]
fn a_ragged_row_does_not_tell_its_own_count() {
    let e = error(b"a,b\nzanzibar,987654\n1,2,3,4,5,6,7,8,9\n");
    assert_eq!(
        e.to_string(),
        "the number of fields on line 3 differs from the header's 2"
    );
    assert!(!format!("{e:?}").contains('9'), "{e:?}");
}

#[test]
fn a_large_file_loads_in_parallel_chunks_like_a_small_one() {
    // About 4 MB: several chunks on any machine; quoted newlines sit near the cuts.
    let mut s = String::from("id,group,score,note\n");
    for i in 0..120_000u64 {
        let note = if i % 97 == 0 {
            "\"multi\nline, note\""
        } else {
            "plain"
        };
        let score = if i % 13 == 0 {
            String::new()
        } else {
            format!("{}.5", i % 1000)
        };
        s.push_str(&format!("{i},g{},{score},{note}\n", i % 7));
    }
    let t = load_bytes(s.as_bytes()).expect("loads");
    assert_eq!(t.n_rows(), 120_000);
    assert_eq!(
        types(&t),
        [
            ColumnType::Integer,
            ColumnType::Text,
            ColumnType::Float,
            ColumnType::Text
        ]
    );
    let expect = |f: &dyn Fn(u64) -> bool| (0..120_000u64).filter(|&i| f(i)).count() as u64;
    assert_eq!(
        count(&t, &cmp(&t, "note", CmpOp::Eq, text("multi\nline, note"))),
        expect(&|i| i % 97 == 0)
    );
    assert_eq!(
        count(&t, &cmp(&t, "score", CmpOp::Ge, num(500.0))),
        expect(&|i| i % 13 != 0 && i % 1000 >= 500)
    );
    assert_eq!(
        count(&t, &cmp(&t, "group", CmpOp::Eq, text("g3"))),
        expect(&|i| i % 7 == 3)
    );
    assert_eq!(count(&t, &cmp(&t, "id", CmpOp::Lt, num(65_536.5))), 65_537);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Arbitrary bytes as a CSV file: a table or an error, never a panic.
    #[test]
    fn junk_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        if let Ok(t) = load_bytes(&bytes) {
            prop_assert!(t.n_columns() >= 1);
        }
    }

    /// Junk read with another delimiter and a decimal comma: a table or an error, never a
    /// panic.
    #[test]
    fn junk_never_panics_in_another_format(
        bytes in proptest::collection::vec(
            prop_oneof![
                Just(b'a'), Just(b'1'), Just(b','), Just(b';'), Just(b'.'), Just(b'"'),
                Just(b'\n'), Just(b'\t'), Just(b'-'), Just(0xC3)
            ],
            0..300,
        ),
        delimiter in prop_oneof![Just(b';'), Just(b'\t'), Just(b'|')],
        decimal_comma in any::<bool>(),
    ) {
        let opts = LoadOptions {
            format: CsvFormat { delimiter, decimal_comma },
            ..LoadOptions::default()
        };
        match dpq::data::load_csv_bytes(&bytes, &opts) {
            Ok(l) => prop_assert!(l.table.n_columns() >= 1),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    /// Junk made of CSV's own special bytes, where the parser's corners are.
    #[test]
    fn csv_like_junk_never_panics(
        bytes in proptest::collection::vec(
            prop_oneof![
                Just(b'a'), Just(b'1'), Just(b','), Just(b'"'), Just(b'\n'),
                Just(b'\r'), Just(b' '), Just(0xC3), Just(0xFF)
            ],
            0..300,
        )
    ) {
        match load_bytes(&bytes) {
            Ok(t) => prop_assert!(t.n_columns() >= 1),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}

/// A first row that is data with two equal values looks like a header naming a column twice:
/// the error names neither the field (it may be a value) nor where it is.
#[test]
fn a_repeated_header_field_is_not_named() {
    let e = error(b"secretvalue,secretvalue\n1,2\n");
    assert_eq!(e, DataError::NotAHeader);
    assert!(!e.to_string().contains("secretvalue"), "{e}");
}

/// What a header error says cannot tell anything about a first row that is data: which of
/// its fields are empty, dates or equal.
#[test]
fn header_errors_say_nothing_of_the_first_rows_fields() {
    let rows = [
        "Alice,,2023-04-01",
        "Alice,2023-03-09,2023-04-01",
        "Alice,Paris,Paris",
        "Alice,,Paris",
        "1,2,3",
    ];
    let messages: Vec<String> = rows
        .iter()
        .map(|r| error(format!("{r}\nBob,Lyon,2023-05-01\n").as_bytes()).to_string())
        .collect();
    for m in &messages {
        assert_eq!(
            m, &messages[0],
            "one message whatever the row: {messages:?}"
        );
        assert!(!m.chars().any(|c| c.is_ascii_digit()), "{m}");
    }
}

/// First rows of data that a header check must not take for names.
#[test]
fn values_are_not_taken_for_names() {
    for first in [
        "alice@example.com,1",
        "(555) 123-4567,1",
        "$52000,1",
        "52 000,1",
        "12%,1",
        "10:00 PM,1",
        "Jan 5 2020,1",
        "5 Jan 2020,1",
    ] {
        let e = error(format!("{first}\nbob@example.com,2\n").as_bytes());
        assert!(matches!(e, DataError::NotAHeader), "{first}: {e:?}");
    }
    // A field that has the type of its column's values is a value: `true` over booleans,
    // `NaN` over floats.
    for text in ["x,true\n1,false\n2,true\n", "x,NaN\n1,1.5\n2,2.5\n"] {
        let e = error(text.as_bytes());
        assert!(matches!(e, DataError::NotAHeader), "{text}: {e:?}");
    }
    // Names still load.
    let t = load_bytes(b"x1,inf,nan_count,2nd,v1.2.3,email\n1,x,3,4,5,a@b.c\n").expect("names");
    assert_eq!(t.n_columns(), 6);
}

/// A name holding a line feed, a tab, an escape or a format character could forge output
/// lines or drive a terminal: refused, naming nothing.
#[test]
fn names_with_control_or_format_characters_are_refused() {
    for header in ["a,\"b\nc\"", "a,b\tc", "a,b\u{1b}]0;x\u{7}", "a,b\u{202e}c"] {
        let e = error(format!("{header}\n1,2\n").as_bytes());
        assert!(matches!(e, DataError::NotAHeader), "{header:?}: {e:?}");
    }
}

/// With a declared schema nothing about the table depends on the data: the declared columns
/// in the declared order and types, cells that do not parse or lie outside their domain
/// missing (never an error), undeclared columns gone, and text kept as written.
#[test]
fn a_declared_schema_is_the_schema_whatever_the_cells() {
    use dpq::data::{Declared, Domain};
    use rust_decimal::Decimal;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(
        dir.path(),
        "t.csv",
        b"secret,zip,age,ok,region\nx,007,30,true,north\ny,02139,abc,maybe,south\nz,10001,150,FALSE,mars\nw,,-1,,north\nv,99,7.5,true,\"south\"\n",
    );
    let declared = vec![
        Declared {
            name: "age".into(),
            ty: ColumnType::Integer,
            domain: Domain::Range {
                min: Decimal::ZERO,
                max: Decimal::from(120),
            },
        },
        Declared::new("zip", ColumnType::Text),
        Declared::new("ok", ColumnType::Boolean),
        Declared {
            name: "region".into(),
            ty: ColumnType::Text,
            domain: Domain::Values(vec!["north".into(), "south".into()]),
        },
    ];
    let opts = LoadOptions {
        columns: Some(declared),
        ..LoadOptions::default()
    };
    let loaded = load_csv(&path, &opts).expect("load");
    let t = loaded.table;
    assert_eq!(
        t.schema(),
        vec![
            ("age".to_string(), ColumnType::Integer),
            ("zip".to_string(), ColumnType::Text),
            ("ok".to_string(), ColumnType::Boolean),
            ("region".to_string(), ColumnType::Text),
        ],
    );
    assert_eq!(t.n_rows(), 5);
    // age: 30 kept; abc, 150 (outside 0..120), -1 (outside) and 7.5 (not an integer) missing.
    assert_eq!(present(&t, "age", num(0.0)), 1);
    assert_eq!(count(&t, &cmp(&t, "age", CmpOp::Eq, num(30.0))), 1);
    // zip: text as written, leading zeros and all; one missing.
    assert_eq!(count(&t, &cmp(&t, "zip", CmpOp::Eq, text("007"))), 1);
    assert_eq!(present(&t, "zip", text("")), 4);
    // ok: maybe and the empty cell missing.
    assert_eq!(present(&t, "ok", Value::Bool(true)), 3);
    // region: mars is outside the listed values.
    assert_eq!(present(&t, "region", text("north")), 4);
    assert!(t.column_index("secret").is_none());
    let missing = LoadOptions {
        columns: Some(vec![Declared::new("income", ColumnType::Integer)]),
        ..LoadOptions::default()
    };
    match load_csv(&path, &missing) {
        Err(e @ DataError::DeclaredColumnMissing { .. }) => {
            assert!(e.to_string().contains("income"), "{e}")
        }
        other => panic!("expected a missing declared column, got {other:?}"),
    }
}

/// Integer and one-byte text cells of every length up to 40 digits, at the end of a file
/// with each ending (none, `\n`, `\r`, `\r\n`): types, counts and values as `str::parse`
/// and first sight read them.
#[test]
fn cells_of_every_length_at_the_end_of_the_file_load_as_std_reads_them() {
    for n in 1..=40usize {
        let digits: String = "1234567890".chars().cycle().take(n).collect();
        for ending in ["", "\n", "\r", "\r\n"] {
            let body = format!("a,b\n7,M\n{digits},\u{e9}\n-{digits},M{ending}");
            let t = load_bytes(body.as_bytes()).expect("loads");
            assert_eq!(t.n_rows(), 3, "{body:?}");
            let fits = digits.parse::<i64>().is_ok();
            let want = if fits {
                ColumnType::Integer
            } else {
                ColumnType::Float
            };
            assert_eq!(types(&t), [want, ColumnType::Text], "{body:?}");
            assert_eq!(count(&t, &cmp(&t, "b", CmpOp::Eq, text("M"))), 2);
            assert_eq!(count(&t, &cmp(&t, "b", CmpOp::Eq, text("\u{e9}"))), 1);
            if n <= 15 {
                let v: f64 = digits.parse().expect("digits");
                assert_eq!(count(&t, &cmp(&t, "a", CmpOp::Eq, num(v))), 1, "{body:?}");
                assert_eq!(count(&t, &cmp(&t, "a", CmpOp::Eq, num(-v))), 1, "{body:?}");
            }
        }
    }
}
