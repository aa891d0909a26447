//! Fuzz target `csv_chunks`: the parallel loader agrees with itself. A file that loads is
//! rebuilt as its header and then its body repeated to more than 3 MiB, which `load_csv` cuts
//! into chunks parsed in parallel (cuts land anywhere, inside quoted fields too); the big file
//! must load, with the same schema, `copies` times the rows, and `copies` times each column's
//! count of present values and of a few comparisons.
#![no_main]

use dpq::data::{count, load_csv, CmpOp, ColumnType, LoadOptions, Predicate, Table, Value};
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const BIG: usize = 3 << 20;

fn dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temporary directory"))
        .path()
}

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir().join(name);
    std::fs::write(&p, bytes).expect("write the input");
    p
}

/// Per column: rows with a value, and rows matching two comparisons of the column's type.
fn stats(t: &Table) -> Vec<u64> {
    let mut out = vec![t.n_rows()];
    for c in 0..t.n_columns() {
        let (a, b) = match t.column_type(c) {
            ColumnType::Integer | ColumnType::Float => (Value::Number(0.0), Value::Number(1.5)),
            ColumnType::Text => (Value::Text(String::new()), Value::Text("m".into())),
            ColumnType::Boolean => (Value::Bool(false), Value::Bool(true)),
        };
        let cmp = |op, value: &Value| Predicate::Compare {
            column: c,
            op,
            value: value.clone(),
        };
        let eq = cmp(CmpOp::Eq, &a);
        let present = Predicate::Or(Box::new(eq.clone()), Box::new(Predicate::Not(Box::new(eq))));
        out.push(count(t, &present));
        out.push(count(t, &cmp(CmpOp::Lt, &b)));
        out.push(count(t, &cmp(CmpOp::Ge, &a)));
    }
    out
}

fuzz_target!(|data: &[u8]| {
    // The header must end at the first line break: no quote in the first line.
    let Some(nl) = data.iter().position(|&b| b == b'\n') else {
        return;
    };
    let (header, body) = data.split_at(nl + 1);
    // One record, not blank, ended by `\n` or `\r\n` (a lone `\r` ends a record too).
    let line = &header[..nl];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
    if line.is_empty() || line.contains(&b'"') || line.contains(&b'\r') || body.is_empty() {
        return;
    }
    let mut body = body.to_vec();
    if body.last() != Some(&b'\n') {
        body.push(b'\n');
    }
    let opts = LoadOptions::default();
    let small = [header, &body].concat();
    let Ok(one) = load_csv(&write("one.csv", &small), &opts).map(|l| l.table) else {
        return;
    };
    if one.n_rows() == 0 {
        return;
    }
    let copies = BIG / body.len() + 1;
    let mut big = Vec::with_capacity(header.len() + copies * body.len());
    big.extend_from_slice(header);
    for _ in 0..copies {
        big.extend_from_slice(&body);
    }
    let many = match load_csv(&write("many.csv", &big), &opts) {
        Ok(loaded) => loaded.table,
        Err(e) => panic!("{copies} copies of a body that loads do not load: {e}"),
    };
    assert_eq!(
        one.schema(),
        many.schema(),
        "the schema changes with {copies} copies"
    );
    let (s1, sn) = (stats(&one), stats(&many));
    let scaled: Vec<u64> = s1.iter().map(|x| x * copies as u64).collect();
    assert_eq!(scaled, sn, "counts do not scale with {copies} copies");
});
