//! `count` against a naive row-by-row evaluator under three-valued logic, on random and hand-made tables.

use std::cmp::Ordering;
use std::io::Write;

use dpq::data::{count, load_csv, CmpOp, ColumnType, LoadOptions, Predicate, Table, Value};
use proptest::prelude::*;

/// A cell of the model table the CSV file is written from.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Int(i64),
    Float(f64),
    Text(String),
    Bool(bool),
}

/// A column of the model: its cells (`None` when missing).
type Column = Vec<Option<Cell>>;

/// Writes the model as CSV (text always quoted, missing cells as empty or `NA`) and loads it.
fn load(columns: &[Column], rows: usize) -> Table {
    let mut s = (0..columns.len())
        .map(|c| format!("c{c}"))
        .collect::<Vec<_>>()
        .join(",");
    s.push('\n');
    for r in 0..rows {
        let fields: Vec<String> = columns
            .iter()
            .map(|col| match &col[r] {
                None if r % 2 == 0 => "NA".to_string(),
                // An empty line is skipped (as the `csv` crate does), so quote it alone.
                None if columns.len() == 1 => "\"\"".to_string(),
                None => String::new(),
                Some(Cell::Int(i)) => i.to_string(),
                // `{:?}` prints the shortest text that reads back as the same f64.
                Some(Cell::Float(f)) => format!("{f:?}"),
                Some(Cell::Text(t)) => format!("\"{}\"", t.replace('"', "\"\"")),
                Some(Cell::Bool(b)) => if *b { "True" } else { "false" }.to_string(),
            })
            .collect();
        s.push_str(&fields.join(","));
        s.push('\n');
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.csv");
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(s.as_bytes()))
        .expect("write");
    load_csv(&path, &LoadOptions::default())
        .expect("the model loads")
        .table
}

/// The naive reference: `None` is unknown.
fn eval(table: &Table, columns: &[Column], row: usize, p: &Predicate) -> Option<bool> {
    match p {
        Predicate::Compare { column, op, value } => leaf(table, columns, row, *column, |c| {
            match (c, value) {
                // IEEE: every comparison with NaN is false, except `!=`.
                (Cell::Int(_) | Cell::Float(_), Value::Number(x)) if x.is_nan() => {
                    Some(*op == CmpOp::Ne)
                }
                _ => order(c, value).map(|o| op.holds(o)),
            }
        }),
        Predicate::In { column, values } => leaf(table, columns, row, *column, |c| {
            Some(values.iter().any(|v| order(c, v) == Some(Ordering::Equal)))
        }),
        Predicate::Between { column, low, high } => leaf(table, columns, row, *column, |c| {
            Some(
                matches!(order(c, low), Some(Ordering::Greater | Ordering::Equal))
                    && matches!(order(c, high), Some(Ordering::Less | Ordering::Equal)),
            )
        }),
        Predicate::And(a, b) => {
            match (eval(table, columns, row, a), eval(table, columns, row, b)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            }
        }
        Predicate::Or(a, b) => match (eval(table, columns, row, a), eval(table, columns, row, b)) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
        Predicate::Not(a) => eval(table, columns, row, a).map(|b| !b),
    }
}

/// A leaf: false on a column that does not exist, unknown on a missing cell, false on a
/// literal of the wrong type, else `test`.
fn leaf(
    table: &Table,
    columns: &[Column],
    row: usize,
    column: usize,
    test: impl Fn(&Cell) -> Option<bool>,
) -> Option<bool> {
    if column >= table.n_columns() {
        return Some(false);
    }
    let cell = columns[column][row].as_ref()?;
    test(cell).or(Some(false))
}

/// The cell against a literal; `None` for a type mismatch or an unordered number (NaN).
fn order(c: &Cell, v: &Value) -> Option<Ordering> {
    match (c, v) {
        (Cell::Int(i), Value::Number(x)) => exact_cmp(*i, *x),
        (Cell::Float(f), Value::Number(x)) => f.partial_cmp(x),
        (Cell::Text(s), Value::Text(t)) => Some(s.as_bytes().cmp(t.as_bytes())),
        (Cell::Bool(b), Value::Bool(x)) => Some(b.cmp(x)),
        _ => None,
    }
}

/// An integer against a real, exactly (no rounding of the integer to a float); `None` for NaN.
fn exact_cmp(i: i64, x: f64) -> Option<Ordering> {
    if x.is_nan() {
        return None;
    }
    let f = x.floor();
    // Beyond ±2^64 the saturated floor is still beyond every i64.
    match i128::from(i).cmp(&(f as i128)) {
        Ordering::Equal if f != x => Some(Ordering::Less),
        o => Some(o),
    }
}

fn reference(table: &Table, columns: &[Column], rows: usize, p: &Predicate) -> u64 {
    (0..rows)
        .filter(|&r| eval(table, columns, r, p) == Some(true))
        .count() as u64
}

/// The model column types.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Int,
    Float,
    Text,
    Bool,
}

fn cell(kind: Kind) -> BoxedStrategy<Option<Cell>> {
    let value: BoxedStrategy<Cell> = match kind {
        Kind::Int => (-50i64..50).prop_map(Cell::Int).boxed(),
        Kind::Float => prop_oneof![
            (-200i64..200).prop_map(|i| Cell::Float(i as f64 / 4.0)),
            Just(Cell::Float(0.1)),
            Just(Cell::Float(-0.0)),
        ]
        .boxed(),
        Kind::Text => "[ab\"é, ]{0,2}[a-c]".prop_map(Cell::Text).boxed(),
        Kind::Bool => any::<bool>().prop_map(Cell::Bool).boxed(),
    };
    prop_oneof![1 => Just(None), 4 => value.prop_map(Some)].boxed()
}

fn literal() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (-60i64..60).prop_map(|i| Value::Number(i as f64)),
        2 => (-240i64..240).prop_map(|i| Value::Number(i as f64 / 4.0 + 0.125)),
        1 => prop_oneof![
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(1e300),
            Just(-1e19),
            Just(9.3e18),
            Just(-0.0),
        ]
        .prop_map(Value::Number),
        3 => "[ab\"é, ]{0,2}[a-c]?".prop_map(Value::Text),
        2 => any::<bool>().prop_map(Value::Bool),
    ]
}

fn op() -> impl Strategy<Value = CmpOp> {
    prop_oneof![
        Just(CmpOp::Eq),
        Just(CmpOp::Ne),
        Just(CmpOp::Lt),
        Just(CmpOp::Le),
        Just(CmpOp::Gt),
        Just(CmpOp::Ge)
    ]
}

fn predicate(ncols: usize) -> impl Strategy<Value = Predicate> {
    // Now and then a column that does not exist.
    let column = 0..ncols + 1;
    let leaf = prop_oneof![
        (column.clone(), op(), literal()).prop_map(|(column, op, value)| Predicate::Compare {
            column,
            op,
            value
        }),
        (column.clone(), proptest::collection::vec(literal(), 0..4))
            .prop_map(|(column, values)| Predicate::In { column, values }),
        (column, literal(), literal()).prop_map(|(column, low, high)| Predicate::Between {
            column,
            low,
            high
        }),
    ];
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone())
                .prop_map(|(a, b)| Predicate::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone())
                .prop_map(|(a, b)| Predicate::Or(Box::new(a), Box::new(b))),
            inner.prop_map(|a| Predicate::Not(Box::new(a))),
        ]
    })
}

fn model() -> impl Strategy<Value = (Vec<Column>, usize)> {
    let kind = prop_oneof![
        Just(Kind::Int),
        Just(Kind::Float),
        Just(Kind::Text),
        Just(Kind::Bool)
    ];
    (proptest::collection::vec(kind, 1..5), 0usize..200).prop_flat_map(|(kinds, rows)| {
        let columns: Vec<_> = kinds
            .into_iter()
            .map(|k| proptest::collection::vec(cell(k), rows))
            .collect();
        (columns, Just(rows))
    })
}

/// The loaded type must be what the model's cells imply (so the reference applies).
fn check_types(table: &Table, columns: &[Column]) {
    for (c, col) in columns.iter().enumerate() {
        let cells: Vec<&Cell> = col.iter().flatten().collect();
        let want = match cells.first() {
            None => ColumnType::Text,
            Some(Cell::Int(_)) => ColumnType::Integer,
            // Written with a decimal point, so never read as integers.
            Some(Cell::Float(_)) => ColumnType::Float,
            Some(Cell::Text(_)) => ColumnType::Text,
            Some(Cell::Bool(_)) => ColumnType::Boolean,
        };
        assert_eq!(table.column_type(c), want, "column {c}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn count_matches_the_reference(
        (columns, rows) in model(),
        preds in proptest::collection::vec(predicate(4), 1..6),
    ) {
        let table = load(&columns, rows);
        prop_assert_eq!(table.n_rows(), rows as u64);
        check_types(&table, &columns);
        for p in &preds {
            prop_assert_eq!(count(&table, p), reference(&table, &columns, rows, p), "{:?}", p);
        }
    }
}

fn int(i: i64) -> Option<Cell> {
    Some(Cell::Int(i))
}

fn txt(s: &str) -> Option<Cell> {
    Some(Cell::Text(s.to_string()))
}

fn cmp(column: usize, op: CmpOp, value: Value) -> Predicate {
    Predicate::Compare { column, op, value }
}

fn not(p: Predicate) -> Predicate {
    Predicate::Not(Box::new(p))
}

fn or(a: Predicate, b: Predicate) -> Predicate {
    Predicate::Or(Box::new(a), Box::new(b))
}

fn and(a: Predicate, b: Predicate) -> Predicate {
    Predicate::And(Box::new(a), Box::new(b))
}

#[test]
fn hand_made_cases() {
    // age: 25, 29, 30, missing, 41; name: ann, bob, missing, cy, "Ann".
    let columns = vec![
        vec![int(25), int(29), int(30), None, int(41)],
        vec![txt("ann"), txt("bob"), None, txt("cy"), txt("Ann")],
        vec![
            Some(Cell::Bool(true)),
            None,
            Some(Cell::Bool(false)),
            Some(Cell::Bool(true)),
            Some(Cell::Bool(false)),
        ],
    ];
    let t = load(&columns, 5);
    let n = |x: f64| Value::Number(x);
    let s = |x: &str| Value::Text(x.to_string());
    let age_lt_30 = cmp(0, CmpOp::Lt, n(30.0));
    let cases = [
        // A missing age is neither below 30 nor not below 30.
        (or(age_lt_30.clone(), not(age_lt_30.clone())), 4),
        (not(age_lt_30.clone()), 2),
        // Integer columns compare exactly with fractional literals.
        (cmp(0, CmpOp::Le, n(29.5)), 2),
        (cmp(0, CmpOp::Gt, n(29.5)), 2),
        (cmp(0, CmpOp::Eq, n(29.5)), 0),
        (cmp(0, CmpOp::Ne, n(29.5)), 4),
        (cmp(0, CmpOp::Lt, n(f64::INFINITY)), 4),
        (cmp(0, CmpOp::Gt, n(-1e300)), 4),
        (
            Predicate::Between {
                column: 0,
                low: n(25.0),
                high: n(30.0),
            },
            3,
        ),
        (
            Predicate::Between {
                column: 0,
                low: n(30.0),
                high: n(25.0),
            },
            0,
        ),
        (
            Predicate::In {
                column: 0,
                values: vec![n(25.0), n(41.0), n(3.5)],
            },
            2,
        ),
        // Text compares by UTF-8 byte order: "Ann" < "ann" < "bob" < "cy".
        (cmp(1, CmpOp::Lt, s("b")), 2),
        (cmp(1, CmpOp::Ge, s("bob")), 2),
        (cmp(1, CmpOp::Gt, s("zzz")), 0),
        (cmp(1, CmpOp::Ne, s("nobody")), 4),
        (
            Predicate::Between {
                column: 1,
                low: s("ann"),
                high: s("bz"),
            },
            2,
        ),
        (
            Predicate::In {
                column: 1,
                values: vec![s("cy"), s("Ann"), s("x")],
            },
            2,
        ),
        // Booleans: false < true; a missing one is unknown.
        (cmp(2, CmpOp::Eq, Value::Bool(true)), 2),
        (not(cmp(2, CmpOp::Eq, Value::Bool(true))), 2),
        (cmp(2, CmpOp::Lt, Value::Bool(true)), 2),
        // Kleene: unknown AND false is false, unknown OR true is true.
        (
            not(and(age_lt_30.clone(), cmp(1, CmpOp::Eq, s("nobody")))),
            5,
        ),
        (or(age_lt_30.clone(), cmp(1, CmpOp::Eq, s("cy"))), 3),
        // A literal of the wrong type is false where the cell has a value.
        (cmp(0, CmpOp::Eq, s("25")), 0),
        (not(cmp(0, CmpOp::Eq, s("25"))), 4),
        (not(cmp(1, CmpOp::Eq, n(1.0))), 4),
        // A column that does not exist is false on every row.
        (not(cmp(9, CmpOp::Eq, n(1.0))), 5),
    ];
    for (p, want) in cases {
        assert_eq!(count(&t, &p), want, "{p:?}");
        assert_eq!(reference(&t, &columns, 5, &p), want, "reference on {p:?}");
    }
}

#[test]
fn a_table_of_many_segments_and_blocks() {
    // Big enough to load in several chunks and span many blocks; missing cells everywhere.
    let rows = 300_003;
    let ints: Column = (0..rows as i64)
        .map(|i| (i % 11 != 0).then_some(Cell::Int(i % 1000 - 500)))
        .collect();
    let floats: Column = (0..rows)
        .map(|i| (i % 17 != 3).then_some(Cell::Float((i % 301) as f64 * 0.5)))
        .collect();
    let texts: Column = (0..rows)
        .map(|i| {
            (i % 5 != 1).then(|| Cell::Text(["n", "s", "e", "w", "c", "ne"][i % 6].to_string()))
        })
        .collect();
    let bools: Column = (0..rows)
        .map(|i| (i % 9 != 4).then_some(Cell::Bool(i % 3 == 0)))
        .collect();
    let columns = vec![ints, floats, texts, bools];
    let t = load(&columns, rows);
    assert_eq!(t.n_rows(), rows as u64);
    check_types(&t, &columns);
    let n = |x: f64| Value::Number(x);
    let s = |x: &str| Value::Text(x.to_string());
    let preds = [
        cmp(0, CmpOp::Le, n(30.0)),
        cmp(0, CmpOp::Ne, n(-500.0)),
        Predicate::In {
            column: 0,
            values: vec![n(1.0), n(7.0), n(-3.0), n(499.0)],
        },
        or(
            cmp(1, CmpOp::Gt, n(100.25)),
            not(cmp(3, CmpOp::Eq, Value::Bool(true))),
        ),
        and(cmp(2, CmpOp::Eq, s("ne")), not(cmp(0, CmpOp::Lt, n(0.0)))),
        Predicate::In {
            column: 2,
            values: vec![s("n"), s("w")],
        },
        Predicate::Between {
            column: 2,
            low: s("e"),
            high: s("s"),
        },
        not(or(cmp(1, CmpOp::Lt, n(10.0)), cmp(2, CmpOp::Ge, s("s")))),
    ];
    for p in &preds {
        assert_eq!(count(&t, p), reference(&t, &columns, rows, p), "{p:?}");
    }
}

/// Integer columns whose segments take every width (values at the edges of 8, 16 and 32
/// bits from each segment's least value, and the extremes of `i64`), and text columns of 300
/// and 70,000 distinct values (16- and 32-bit codes): every comparison with literals at and
/// beyond the edges gives the reference count, the file loaded in several chunks.
#[test]
fn columns_of_every_width_count_exactly() {
    let rows = 200_000usize;
    let word = |k: usize| format!("w{k:05}");
    let columns: Vec<Column> = vec![
        // Offsets of 0..=255 from -128, then of 0..=65535, then of 0..=2^32: the chunks see
        // spans at, under and over each width.
        (0..rows)
            .map(|i| {
                let v = match i * 4 / rows {
                    0 => (i % 256) as i64 - 128,
                    1 => (i % 65_536) as i64 - 128,
                    2 => (i as i64 * 65_537) % (1 << 32),
                    _ => (i as i64 * 7_919) % 1_000 + 4_294_967_168,
                };
                (i % 13 != 5).then_some(Cell::Int(v))
            })
            .collect(),
        // The extremes of i64 now and then among small values.
        (0..rows)
            .map(|i| {
                let v = match i % 5_003 {
                    0 => i64::MAX,
                    1 => i64::MIN,
                    2 => i64::MAX - 1,
                    _ => (i % 100) as i64,
                };
                (i % 17 != 2 || i % 5_003 < 3).then_some(Cell::Int(v))
            })
            .collect(),
        (0..rows)
            .map(|i| (i % 11 != 3).then(|| Cell::Text(word(i % 300))))
            .collect(),
        (0..rows)
            .map(|i| (i % 19 != 4).then(|| Cell::Text(word((i * 7) % 70_000))))
            .collect(),
    ];
    let t = load(&columns, rows);
    check_types(&t, &columns);
    let mut numbers = vec![
        f64::NAN,
        f64::INFINITY,
        -1e19,
        2f64.powi(63),
        9_223_372_036_854_774_784.0,
        -(2f64.powi(63)),
    ];
    for e in [
        -128i64,
        127,
        128,
        65_407,
        65_408,
        4_294_967_167,
        4_294_967_168,
        4_294_967_296,
        4_294_968_167,
        0,
        99,
    ] {
        numbers.extend([
            e as f64 - 1.0,
            e as f64 - 0.5,
            e as f64,
            e as f64 + 0.5,
            e as f64 + 1.0,
        ]);
    }
    let texts = [
        "", "w", "w00000", "w00255", "w00256", "w00299", "w00299x", "w65536", "w69999", "x",
    ];
    let mut preds = Vec::new();
    for op in CmpOp::ALL {
        for &v in &numbers {
            preds.push(cmp(0, op, Value::Number(v)));
            preds.push(not(cmp(1, op, Value::Number(v))));
        }
        for s in texts {
            preds.push(cmp(2, op, Value::Text(s.to_string())));
            preds.push(not(cmp(3, op, Value::Text(s.to_string()))));
        }
    }
    for w in numbers.windows(3) {
        preds.push(Predicate::Between {
            column: 0,
            low: Value::Number(w[0]),
            high: Value::Number(w[2]),
        });
        preds.push(Predicate::In {
            column: 1,
            values: w.iter().map(|v| Value::Number(*v)).collect(),
        });
    }
    for w in texts.windows(2) {
        preds.push(Predicate::Between {
            column: 3,
            low: Value::Text(w[0].to_string()),
            high: Value::Text(w[1].to_string()),
        });
        preds.push(Predicate::In {
            column: 2,
            values: vec![Value::Text(w[0].to_string()), Value::Text(w[1].to_string())],
        });
    }
    for p in &preds {
        assert_eq!(count(&t, p), reference(&t, &columns, rows, p), "{p:?}");
    }
}

/// `count_cells` against a row-by-row count of each row's cell, on a seeded random table with
/// an integer, a float, a text and a boolean dimension (missing values and "other" values
/// included).
#[test]
fn count_cells_counts_every_row_in_its_cell() {
    use dpq::data::{count_cells, Buckets};
    let rows = 3000;
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let words = ["a", "b", "c", "d"];
    let mut columns: Vec<Column> = vec![Vec::new(); 4];
    for _ in 0..rows {
        let missing = |k: u64| k == 0;
        columns[0].push((!missing(next(10))).then(|| Cell::Int(next(100) as i64 - 20)));
        columns[1].push((!missing(next(10))).then(|| Cell::Float(next(1000) as f64 / 7.0)));
        columns[2].push((!missing(next(10))).then(|| Cell::Text(words[next(4) as usize].into())));
        columns[3].push((!missing(next(10))).then(|| Cell::Bool(next(2) == 0)));
    }
    let table = load(&columns, rows);
    let dims = vec![
        (0, Buckets::Cuts(vec![0.0, 30.5, 50.0])),
        (1, Buckets::Cuts(vec![10.0, 100.0])),
        (
            2,
            Buckets::Values(vec![Value::Text("a".into()), Value::Text("c".into())]),
        ),
        (3, Buckets::Values(vec![Value::Bool(true)])),
    ];
    let counts = count_cells(&table, &dims);
    let lens = [5usize, 4, 4, 3];
    assert_eq!(counts.len(), lens.iter().product::<usize>());
    let mut expected = vec![0u64; counts.len()];
    let cut = |x: f64, cuts: &[f64]| cuts.iter().filter(|c| **c <= x).count();
    for (((a, b), c), d) in columns[0]
        .iter()
        .zip(&columns[1])
        .zip(&columns[2])
        .zip(&columns[3])
    {
        let coords = [
            match a {
                Some(Cell::Int(i)) => cut(*i as f64, &[0.0, 30.5, 50.0]),
                _ => 4,
            },
            match b {
                Some(Cell::Float(f)) => cut(*f, &[10.0, 100.0]),
                _ => 3,
            },
            match c {
                Some(Cell::Text(t)) if t == "a" => 0,
                Some(Cell::Text(t)) if t == "c" => 1,
                Some(_) => 2,
                None => 3,
            },
            match d {
                Some(Cell::Bool(true)) => 0,
                Some(_) => 1,
                None => 2,
            },
        ];
        let cell = coords
            .iter()
            .zip(lens)
            .fold(0usize, |acc, (c, len)| acc * len + c);
        expected[cell] += 1;
    }
    assert_eq!(counts, expected);
    assert_eq!(counts.iter().sum::<u64>(), rows as u64);
}
