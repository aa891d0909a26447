//! Attacks on the narrow-lane column store (commit 092bbe7): exact counts, cube cells, clamped
//! sums and privacy-unit bounds against an independent row-by-row reference.

use dpq::data::{
    bound_units, count, count_cells, load_csv_bytes, sum_clamped, Buckets, Clamp, CmpOp,
    LoadOptions, Predicate, Table, Value,
};

fn load(csv: &str) -> Table {
    load_csv_bytes(csv.as_bytes(), &LoadOptions::default())
        .expect("loads")
        .table
}

/// Reference bucket of an integer against cuts: #{c : x >= c}, exactly (i128 vs real).
fn coord(x: i64, cuts: &[f64]) -> usize {
    cuts.iter()
        .filter(|&&c| {
            let f = c.floor();
            // x >= c  <=>  x >= ceil(c); beyond i64 the comparison is decided by the sign.
            if f >= 1e19 {
                false
            } else if f <= -1e19 {
                true
            } else {
                (x as f64 >= c) && (i128::from(x) >= c.ceil() as i128)
            }
        })
        .count()
}

/// A cut beyond ±2^127 saturates `ceil(c) as i128`; `t - min` then overflows i128 in
/// cells.rs (`(t - min).clamp(0, top)`): a panic in debug builds, and in release the wrapped
/// threshold clamps to the wrong end, moving every row of the segment to the wrong bucket.
#[test]
fn huge_cut_on_segment_with_negative_min() {
    let t = load("x\n-1\n5\n");
    let cuts = vec![1e39];
    let got = count_cells(&t, &[(0, Buckets::Cuts(cuts.clone()))]);
    // Both rows are below 1e39: bucket 0.  (buckets: [<1e39, >=1e39, missing])
    assert_eq!(got, vec![2, 0, 0], "CUBE BY x (1e39) over x = -1, 5");
}

#[test]
fn huge_negative_cut_on_segment_with_positive_min() {
    let t = load("x\n3\n5\n");
    let cuts = vec![-1e39];
    let got = count_cells(&t, &[(0, Buckets::Cuts(cuts.clone()))]);
    // Both rows are at or above -1e39: bucket 1.
    assert_eq!(got, vec![0, 2, 0], "CUBE BY x (-1e39) over x = 3, 5");
}

/// Reference cube on one integer column.
fn cube_ref(vals: &[Option<i64>], cuts: &[f64]) -> Vec<u64> {
    let mut want = vec![0u64; cuts.len() + 2];
    for v in vals {
        want[v.map_or(cuts.len() + 1, |x| coord(x, cuts))] += 1;
    }
    want
}

fn csv_of(vals: &[Option<i64>]) -> String {
    let mut s = String::from("x\n");
    for v in vals {
        match v {
            Some(x) => s.push_str(&x.to_string()),
            None => s.push_str("NA"),
        }
        s.push('\n');
    }
    s
}

/// Exact reference comparisons of an i64 against a real literal.
fn cmp(x: i64, v: f64) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    if v >= 1e19 {
        return Less;
    }
    if v <= -1e19 {
        return Greater;
    }
    let f = v.floor() as i128;
    match i128::from(x).cmp(&f) {
        Equal if v.fract() != 0.0 => Less,
        o => o,
    }
}

/// Many shapes of small tables (a single segment) at each width's edges: every op, NOT,
/// BETWEEN (both orders), IN with duplicates, cube cuts, sums, against the reference.
#[test]
fn small_tables_every_width() {
    let spans: [i128; 9] = [
        0,
        1,
        254,
        255,
        256,
        65_535,
        65_536,
        u32::MAX as i128,
        u32::MAX as i128 + 1,
    ];
    let bases: [i64; 6] = [i64::MIN, -65_536, -1, 0, 1, i64::MAX];
    let mut failures = Vec::new();
    for &span in &spans {
        for &b in &bases {
            // segment [lo, lo+span] clipped into i64
            let lo: i128 = if i128::from(b) + span > i64::MAX as i128 {
                i64::MAX as i128 - span
            } else {
                i128::from(b)
            };
            let hi = lo + span;
            let (lo, hi) = (lo as i64, hi as i64);
            let mid = ((i128::from(lo) + i128::from(hi)) / 2) as i64;
            let vals = vec![
                None,
                Some(hi),
                Some(lo),
                Some(mid),
                None,
                Some(lo.saturating_add(1).min(hi)),
                Some(hi),
                Some((-1i64).clamp(lo, hi)),
                Some(0i64.clamp(lo, hi)),
            ];
            let t = load(&csv_of(&vals));
            let mut lits: Vec<f64> = vec![
                1e30,
                -1e30,
                1e39,
                -1e39,
                2f64.powi(63),
                -(2f64.powi(63)),
                0.0,
                -0.5,
                0.5,
                -1.0,
                30.5,
                f64::MAX,
                -f64::MAX,
            ];
            for e in [lo, hi, mid] {
                for d in [-256i64, -1, 0, 1, 255, 256] {
                    if let Some(v) = e.checked_add(d) {
                        lits.push(v as f64);
                        lits.push(v as f64 + 0.5);
                        lits.push(v as f64 - 0.5);
                    }
                }
            }
            for &v in &lits {
                for op in CmpOp::ALL {
                    let p = Predicate::Compare {
                        column: 0,
                        op,
                        value: Value::Number(v),
                    };
                    let want = vals
                        .iter()
                        .flatten()
                        .filter(|&&x| op.holds(cmp(x, v)))
                        .count() as u64;
                    let got = count(&t, &p);
                    if got != want {
                        failures.push(format!("{vals:?}: x {op:?} {v}: want {want} got {got}"));
                    }
                    let notp = Predicate::Not(Box::new(p));
                    let nwant = vals
                        .iter()
                        .flatten()
                        .filter(|&&x| !op.holds(cmp(x, v)))
                        .count() as u64;
                    let ngot = count(&t, &notp);
                    if ngot != nwant {
                        failures.push(format!(
                            "{vals:?}: NOT x {op:?} {v}: want {nwant} got {ngot}"
                        ));
                    }
                }
            }
            for (i, &a) in lits.iter().enumerate() {
                for &bb in lits.iter().skip(i % 3).step_by(4) {
                    let p = Predicate::Between {
                        column: 0,
                        low: Value::Number(a),
                        high: Value::Number(bb),
                    };
                    let want = vals
                        .iter()
                        .flatten()
                        .filter(|&&x| cmp(x, a).is_ge() && cmp(x, bb).is_le())
                        .count() as u64;
                    let got = count(&t, &p);
                    if got != want {
                        failures.push(format!(
                            "{vals:?}: BETWEEN {a} AND {bb}: want {want} got {got}"
                        ));
                    }
                    let inl = vec![
                        Value::Number(a),
                        Value::Number(bb),
                        Value::Number(a),
                        Value::Number(1e30),
                    ];
                    let want = vals
                        .iter()
                        .flatten()
                        .filter(|&&x| [a, bb].iter().any(|&v| cmp(x, v).is_eq()))
                        .count() as u64;
                    let p = Predicate::In {
                        column: 0,
                        values: inl.clone(),
                    };
                    let got = count(&t, &p);
                    if got != want {
                        failures.push(format!(
                            "{vals:?}: IN ({a},{bb},{a},1e30): want {want} got {got}"
                        ));
                    }
                    let nwant = vals.iter().flatten().count() as u64 - want;
                    let ngot = count(&t, &Predicate::Not(Box::new(p)));
                    if ngot != nwant {
                        failures.push(format!(
                            "{vals:?}: NOT IN ({a},{bb}): want {nwant} got {ngot}"
                        ));
                    }
                }
            }
            // Cuts: sorted finite subset of lits within ±1e30 (avoid the known overflow).
            let mut cuts: Vec<f64> = lits.iter().copied().filter(|c| c.abs() <= 1e30).collect();
            cuts.sort_by(f64::total_cmp);
            cuts.dedup();
            let got = count_cells(&t, &[(0, Buckets::Cuts(cuts.clone()))]);
            let want = cube_ref(&vals, &cuts);
            if got != want {
                failures.push(format!(
                    "{vals:?}: cube {cuts:?}: want {want:?} got {got:?}"
                ));
            }
            // Sums.
            for (clo, chi) in [
                (-5i64, -1i64),
                (-1, 0),
                (i64::MIN, i64::MAX),
                (lo, hi),
                (mid, mid),
                (-300, 300),
                (0, 1 << 40),
            ] {
                let (s, n) = sum_clamped(
                    &t,
                    0,
                    None,
                    Clamp::Int {
                        lo: clo,
                        hi: chi,
                        k: 0,
                    },
                );
                let want: i128 = vals
                    .iter()
                    .flatten()
                    .map(|&x| i128::from(x.clamp(clo, chi)))
                    .sum();
                let wn = vals.iter().flatten().count() as u64;
                if (s, n) != (want, wn) {
                    failures.push(format!(
                        "{vals:?}: SUM CLAMP({clo},{chi}): want {want},{wn} got {s},{n}"
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// A file of several segments (a few MiB, so the loader cuts it into chunks) where one
/// segment's integers are narrow and the next one's wide, and a text column of exactly 256
/// distinct values in one part and more later; counts, cubes, sums and unit bounds against the
/// row-by-row reference.
#[test]
fn multi_segment_narrow_then_wide() {
    let n = 400_000usize;
    let mut a: Vec<Option<i64>> = Vec::with_capacity(n);
    let mut t: Vec<Option<String>> = Vec::with_capacity(n);
    let mut s = String::from("a,t\n");
    let mut x: u64 = 0x1234_5678_9abc_def1;
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let v = match i * 5 / n {
            0 => Some((x % 256) as i64 - 128), // span 255
            1 => Some((x % 65_536) as i64),    // span 65535
            2 if x.is_multiple_of(1000) => Some(if x.is_multiple_of(2000) {
                i64::MIN
            } else {
                i64::MAX
            }),
            2 => Some((x % 3) as i64 - 1),
            3 if x.is_multiple_of(11) => None,
            3 => Some((x % (1u64 << 32)) as i64 - (1 << 31)), // span up to 2^32-1
            _ => Some(((x % 256) as i64) + 1_000_000),
        };
        let tv = match i * 4 / n {
            0 => Some(format!("v{:03}", x % 256)),
            1 => Some(format!("v{:05}", x % 70_000)),
            2 if x.is_multiple_of(7) => None,
            2 => Some(format!("w{}", x % 257)),
            _ => Some(format!("v{:03}", x % 256)),
        };
        match v {
            Some(v) => s.push_str(&v.to_string()),
            None => s.push_str("NA"),
        }
        s.push(',');
        if let Some(tv) = &tv {
            s.push_str(tv);
        }
        s.push('\n');
        a.push(v);
        t.push(tv);
    }
    let table = load(&s);
    let mut failures = Vec::new();
    let lits = [
        -129.0,
        -128.0,
        -127.5,
        127.0,
        127.5,
        128.0,
        -1.0,
        -0.5,
        0.0,
        0.5,
        1.0,
        65_535.0,
        65_536.0,
        -2147483648.0,
        -2147483648.5,
        2147483647.0,
        1_000_000.0,
        1_000_255.0,
        1_000_255.5,
        1e30,
        -1e30,
        2f64.powi(63),
        -(2f64.powi(63)),
        9_223_372_036_854_774_784.0,
    ];
    for &v in &lits {
        for op in CmpOp::ALL {
            let p = Predicate::Compare {
                column: 0,
                op,
                value: Value::Number(v),
            };
            let want = a.iter().flatten().filter(|&&x| op.holds(cmp(x, v))).count() as u64;
            let got = count(&table, &p);
            if got != want {
                failures.push(format!("a {op:?} {v}: want {want} got {got}"));
            }
            let nwant = a.iter().flatten().count() as u64 - want;
            let ngot = count(&table, &Predicate::Not(Box::new(p)));
            if ngot != nwant {
                failures.push(format!("NOT a {op:?} {v}: want {nwant} got {ngot}"));
            }
        }
    }
    let mut cuts: Vec<f64> = lits.iter().copied().filter(|c| c.abs() <= 1e30).collect();
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    let got = count_cells(&table, &[(0, Buckets::Cuts(cuts.clone()))]);
    let want = cube_ref(&a, &cuts);
    if got != want {
        failures.push(format!("cube a {cuts:?}: want {want:?} got {got:?}"));
    }
    // Text comparisons.
    let tlits = [
        "v000", "v0", "v255", "v256", "v25", "v99999", "w", "w256", "w0", "", "zzz", "v00255",
        "v00256",
    ];
    for &l in &tlits {
        for op in CmpOp::ALL {
            let p = Predicate::Compare {
                column: 1,
                op,
                value: Value::Text(l.to_string()),
            };
            let want = t
                .iter()
                .flatten()
                .filter(|x| op.holds(x.as_str().cmp(l)))
                .count() as u64;
            let got = count(&table, &p);
            if got != want {
                failures.push(format!("t {op:?} {l:?}: want {want} got {got}"));
            }
            let nwant = t.iter().flatten().count() as u64 - want;
            let ngot = count(&table, &Predicate::Not(Box::new(p)));
            if ngot != nwant {
                failures.push(format!("NOT t {op:?} {l:?}: want {nwant} got {ngot}"));
            }
        }
    }
    for (lo, hi) in [
        ("v000", "v255"),
        ("v255", "v000"),
        ("v100", "w100"),
        ("v00255", "v00256"),
    ] {
        let p = Predicate::Between {
            column: 1,
            low: Value::Text(lo.into()),
            high: Value::Text(hi.into()),
        };
        let want = t
            .iter()
            .flatten()
            .filter(|x| x.as_str() >= lo && x.as_str() <= hi)
            .count() as u64;
        let got = count(&table, &p);
        if got != want {
            failures.push(format!("t BETWEEN {lo} AND {hi}: want {want} got {got}"));
        }
    }
    let inl: Vec<&str> = vec!["v000", "v255", "v000", "w256", "nope", "v69999"];
    let p = Predicate::In {
        column: 1,
        values: inl.iter().map(|s| Value::Text(s.to_string())).collect(),
    };
    let want = t
        .iter()
        .flatten()
        .filter(|x| inl.contains(&x.as_str()))
        .count() as u64;
    let got = count(&table, &p);
    if got != want {
        failures.push(format!("t IN {inl:?}: want {want} got {got}"));
    }
    let vals: Vec<Value> = ["v000", "v255", "w256", "v69999"]
        .iter()
        .map(|s| Value::Text(s.to_string()))
        .collect();
    let got = count_cells(
        &table,
        &[
            (1, Buckets::Values(vals.clone())),
            (0, Buckets::Cuts(vec![0.0, 1e6])),
        ],
    );
    let mut want = vec![0u64; 6 * 4];
    for (av, tv) in a.iter().zip(&t) {
        let ct = match tv {
            None => 5,
            Some(s) => vals
                .iter()
                .position(|v| *v == Value::Text(s.clone()))
                .unwrap_or(4),
        };
        let ca = av.map_or(3, |x| coord(x, &[0.0, 1e6]));
        want[ct * 4 + ca] += 1;
    }
    if got != want {
        failures.push(format!("cube t x a: want {want:?} got {got:?}"));
    }
    // Sums, with and without a condition.
    for (lo, hi) in [
        (-100i64, -1i64),
        (-5, 5),
        (0, 70_000),
        (i64::MIN, i64::MAX),
        (-(1 << 31), 1 << 31),
    ] {
        let (sum, cnt) = sum_clamped(&table, 0, None, Clamp::Int { lo, hi, k: 0 });
        let want: i128 = a
            .iter()
            .flatten()
            .map(|&x| i128::from(x.clamp(lo, hi)))
            .sum();
        if (sum, cnt) != (want, a.iter().flatten().count() as u64) {
            failures.push(format!(
                "SUM a CLAMP({lo},{hi}): want {want} got {sum},{cnt}"
            ));
        }
        let p = Predicate::Compare {
            column: 1,
            op: CmpOp::Lt,
            value: Value::Text("v128".into()),
        };
        let (sum, _) = sum_clamped(&table, 0, Some(&p), Clamp::Int { lo, hi, k: 0 });
        let want: i128 = a
            .iter()
            .zip(&t)
            .filter(|(_, tv)| tv.as_deref().is_some_and(|s| s < "v128"))
            .filter_map(|(x, _)| *x)
            .map(|x| i128::from(x.clamp(lo, hi)))
            .sum();
        if sum != want {
            failures.push(format!(
                "SUM a CLAMP({lo},{hi}) WHERE t < 'v128': want {want} got {sum}"
            ));
        }
    }
    // Privacy units: at most k rows per value of a (integer) and of t (text).
    for (col, k) in [(0usize, 1u32), (0, 3), (1, 2)] {
        let bounded = bound_units(&table, col, k);
        let mut per: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
        for i in 0..n {
            let key = if col == 0 {
                a[i].map(|x| x.to_string())
            } else {
                t[i].clone()
            };
            if let Some(key) = key {
                *per.entry(key).or_default() += 1;
            }
        }
        let missing = if col == 0 {
            a.iter().filter(|x| x.is_none()).count()
        } else {
            t.iter().filter(|x| x.is_none()).count()
        } as u64;
        let want_rows: u64 = per.values().map(|&c| c.min(u64::from(k))).sum();
        // Rows with a missing unit are one unit of their own, bounded like the others.
        let want_rows = want_rows + missing.min(u64::from(k));
        let got = bounded.n_rows();
        if got != want_rows {
            failures.push(format!(
                "bound_units col {col} k {k}: want {want_rows} (+{missing} missing) got {got}"
            ));
        }
        // Per value: a few spot checks.
        let probes: Vec<String> = if col == 0 {
            vec![
                "-128".into(),
                "0".into(),
                "1000255".into(),
                i64::MIN.to_string(),
            ]
        } else {
            vec!["v000".into(), "w0".into(), "v00255".into()]
        };
        for key in probes {
            let value = if col == 0 {
                Value::Number(key.parse::<i64>().unwrap() as f64)
            } else {
                Value::Text(key.clone())
            };
            let p = Predicate::Compare {
                column: col,
                op: CmpOp::Eq,
                value,
            };
            let got = count(&bounded, &p);
            let want = per.get(&key).copied().unwrap_or(0).min(u64::from(k));
            if got != want {
                failures.push(format!(
                    "bound_units col {col} k {k}: {key} want {want} got {got}"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Text columns of exactly 256 and 65,536 distinct values (the widths' edges), a column that
/// is numeric in early chunks and text in a late one, and an integer column that turns float
/// after values far apart (i64 extremes) in the same chunk.
#[test]
fn text_edges_and_type_changes() {
    let mut failures = Vec::new();
    for distinct in [255usize, 256, 257, 65_535, 65_536, 65_537] {
        let mut s = String::from("t\n");
        let mut vals = Vec::new();
        for i in 0..distinct + 10 {
            let v = if i % 97 == 5 {
                None
            } else {
                Some(format!("k{:06}", (i * 7919) % distinct))
            };
            s.push_str(v.as_deref().unwrap_or(""));
            s.push('\n');
            vals.push(v);
        }
        let table = load(&s);
        for l in [
            "k000000".to_string(),
            format!("k{:06}", distinct - 1),
            format!("k{:06}", distinct),
            "k".into(),
            "l".into(),
            format!("k{:06}", 255),
            format!("k{:06}", 256),
        ] {
            for op in CmpOp::ALL {
                let p = Predicate::Compare {
                    column: 0,
                    op,
                    value: Value::Text(l.clone()),
                };
                let want = vals
                    .iter()
                    .flatten()
                    .filter(|x| op.holds(x.as_str().cmp(l.as_str())))
                    .count() as u64;
                let got = count(&table, &p);
                if got != want {
                    failures.push(format!(
                        "{distinct} distinct: t {op:?} {l}: want {want} got {got}"
                    ));
                }
                let nwant = vals.iter().flatten().count() as u64 - want;
                let ngot = count(&table, &Predicate::Not(Box::new(p)));
                if ngot != nwant {
                    failures.push(format!(
                        "{distinct} distinct: NOT t {op:?} {l}: want {nwant} got {ngot}"
                    ));
                }
            }
        }
    }
    // Numbers for ~3 MiB, then one text cell: the column becomes text in every chunk.
    let mut s = String::from("c,d\n");
    let mut cs = Vec::new();
    let mut ds = Vec::new();
    let n = 300_000;
    for i in 0..n {
        let c = if i == n - 1 {
            "zz".to_string()
        } else {
            ((i * 37) % 300).to_string()
        };
        let d = match i % 1000 {
            0 => i64::MIN.to_string(),
            1 => i64::MAX.to_string(),
            2 if i > n / 2 => "0.5".into(),
            _ => (i % 7).to_string(),
        };
        s.push_str(&format!("{c},{d}\n"));
        cs.push(c);
        ds.push(d.parse::<f64>().unwrap());
    }
    let table = load(&s);
    for l in ["0", "1", "299", "300", "zz", "5"] {
        for op in CmpOp::ALL {
            let p = Predicate::Compare {
                column: 0,
                op,
                value: Value::Text(l.to_string()),
            };
            let want = cs.iter().filter(|x| op.holds(x.as_str().cmp(l))).count() as u64;
            let got = count(&table, &p);
            if got != want {
                failures.push(format!("c {op:?} {l:?}: want {want} got {got}"));
            }
        }
    }
    for v in [0.0, 0.5, 6.0, -1e18, 1e18] {
        for op in CmpOp::ALL {
            let p = Predicate::Compare {
                column: 1,
                op,
                value: Value::Number(v),
            };
            let want = ds
                .iter()
                .filter(|&&x| op.holds(x.partial_cmp(&v).unwrap()))
                .count() as u64;
            let got = count(&table, &p);
            if got != want {
                failures.push(format!("d {op:?} {v}: want {want} got {got}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
