//! Attacks on `HISTOGRAM` and `COUNT ... BY` (a vector of disjoint parts released at once, for
//! one epsilon): its cost, its cells' counts, the quota of a served analyst and the memory a
//! histogram keeps. Each test states the promise it checks and how it broke before its fix.

use dpq::eval::{Randomness, Session};
use dpq::privacy::Store;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use crate::common;
use common::serve::{token, Server};
use common::{run_json, write};

/// The result of kind `kind` among `out`, the first one.
fn first<'a>(out: &'a [Value], kind: &str) -> &'a Value {
    out.iter()
        .find(|o| o["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} result in {out:?}"))
}

/// Promise (the guide, "Histograms: every cell at once"; `src/data/cells.rs`): a histogram's
/// part is the count of the rows in its cell, the cell `COUNT WHERE` would count. On an
/// integer column the cell `v >= 1152921504606846976` (2^60) holds the integers at or above
/// 2^60.
///
/// How it broke: `count_cells` buckets an integer by `v as f64` against the cuts, and
/// 1152921504606846975 (2^60 - 1) rounds to 2^60: every such row is counted in the cell
/// `v >= 2^60`, although `COUNT WHERE v >= 1152921504606846976` (exact, on integers) counts
/// none of them. With an epsilon that makes the noise negligible the part reads 50 where the
/// truth is 0, and the cell below reads 10 where the truth is 60. (The same holds of
/// i64::MAX, bucketed at or above 2^63, a cell no integer column can reach; and of
/// nanosecond timestamps, which live around 2^60.)
#[test]
fn a_huge_integer_is_counted_in_the_cell_its_value_lies_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut text = String::from("v\n");
    for _ in 0..50 {
        text.push_str("1152921504606846975\n");
    }
    for _ in 0..10 {
        text.push_str("5\n");
    }
    let data = write(dir.path(), "big.csv", &text);
    // Geometric noise at epsilon 10^6 under add_remove: P(noise != 0) is about e^-10^6.
    let mut session = Session::new(Randomness::Seeded(1));
    let out = run_json(
        &mut session,
        &format!(
            "LOAD '{}' AS b NEIGHBOURS add_remove; SET BUDGET 10000000; \
             CUBE BY v (1152921504606846976); \
             HISTOGRAM WITH EPS 1000000 MECHANISM geometric;",
            data.display()
        ),
    );
    let h = first(&out, "histogram");
    let parts: Vec<(String, f64)> = h["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .map(|c| {
            (
                c["cell"].as_str().expect("a name").to_string(),
                c["noisy"].as_f64().expect("noisy"),
            )
        })
        .collect();
    // The exact count of the cell `v >= 2^60`, as COUNT WHERE sees it (no cube, same noise).
    let mut plain = Session::new(Randomness::Seeded(1));
    let out = run_json(
        &mut plain,
        &format!(
            "LOAD '{}' AS b NEIGHBOURS add_remove; SET BUDGET 10000000; \
             COUNT WHERE v >= 1152921504606846976 WITH EPS 1000000 MECHANISM geometric;",
            data.display()
        ),
    );
    let count = first(&out, "count")["noisy"].as_f64().expect("noisy");
    assert_eq!(count, 0.0, "no value is at or above 2^60");
    assert_eq!(
        parts,
        vec![
            ("v < 1152921504606846976".to_string(), 60.0),
            ("v >= 1152921504606846976".to_string(), 0.0),
            ("v missing".to_string(), 0.0),
        ],
        "each row counted in the cell its value lies in (COUNT WHERE v >= 2^60 says {count})"
    );
}

/// Promise (SPEC section 1; README, "Histograms"): spending is checked before noise is drawn,
/// a release that would pass the total is refused, and one histogram spends its epsilon. With
/// a total of 10^20 a histogram of epsilon 6 * 10^19 spends 6 * 10^19, and a second one
/// over the same cells does not fit.
///
/// How it broke: under `replace` the cost of the pairs of cells is kept in units of 10^-24
/// epsilon in a u128, which saturates at about 3.4 * 10^14 epsilon; the saturated value is
/// shown and compared as a finite spending (`to_decimal(Cost::MAX)`). The histogram is charged
/// 340282366920938.44 instead of 6 * 10^19, and the second histogram, and a count after it,
/// are released too: 1.8 * 10^20 spent under a total of 10^20, charged 3.4 * 10^14. (Any total
/// above 3.4 * 10^14 can then be spent without end.)
#[test]
fn a_histogram_past_the_largest_pair_cost_is_charged_its_epsilon() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut text = String::from("age\n");
    for i in 0..40 {
        text.push_str(&format!("{}\n", i * 2));
    }
    let data = write(dir.path(), "t.csv", &text);
    let mut session = Session::new(Randomness::Seeded(2));
    let out = run_json(
        &mut session,
        &format!(
            "LOAD '{}' AS t; SET BUDGET 100000000000000000000; CUBE BY age (30, 65); \
             HISTOGRAM WITH EPS 60000000000000000000; SHOW BUDGET;",
            data.display()
        ),
    );
    // Fixed: pair costs are exact up to about 3.4 * 10^14 epsilon; a release whose cost
    // passes that range is charged as much as a decimal can say, and so refused, never
    // charged less. Either the histogram is refused, or it spends its epsilon.
    if out[3]["kind"] == "error" {
        let budget = run_json(&mut session, "SHOW BUDGET;");
        assert_eq!(
            budget[0]["spent"], 0.0,
            "refused: nothing spent: {budget:?}"
        );
        return;
    }
    let budget = out.last().expect("SHOW BUDGET");
    let spent = budget["spent"].as_f64().expect("spent");
    assert_eq!(spent, 6e19, "one histogram spends its epsilon");
    let out = run_json(
        &mut session,
        "HISTOGRAM WHERE age < 30 WITH EPS 60000000000000000000;",
    );
    assert_eq!(
        out[0]["kind"], "error",
        "6e19 + 6e19 does not fit a total of 1e20: {}",
        out[0]
    );
}

/// Promise (SPEC section 1 and README, "Two neighbour models"): the ledger is keyed by the
/// data, so every table loaded from the same data spends one budget, and a cube's cells are
/// disjoint sets of the data's rows (so releases over disjoint cells compose in parallel).
///
/// How it broke: the same file loaded twice, with its header (`c2,c1`) and with `NO HEADER`
/// (columns named `c1`, `c2` by position), shares one ledger and one cube declaration,
/// `CUBE BY c1 ('x')`, but each table builds that cube over its own column `c1`: the file's
/// second column in one, its first in the other. `HISTOGRAM WHERE c1 = 'x'` on the first and
/// `HISTOGRAM WHERE c1 != 'x'` on the second are charged to disjoint cells (total 1 of 1
/// under add_remove), yet a row `y,x` is in both: the two releases lose 2.
#[test]
fn one_file_loaded_twice_cannot_spend_its_budget_twice_through_one_cube() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut text = String::from("c2,c1\n");
    for i in 0..60 {
        let a = if i % 2 == 0 { "x" } else { "y" };
        let b = if i % 3 == 0 { "x" } else { "y" };
        text.push_str(&format!("{a},{b}\n"));
    }
    let data = write(dir.path(), "sw.csv", &text);

    // Both readings loaded, then the cube declared: the declaration is refused (the other
    // reading cannot hold it) and changes nothing.
    let mut session = Session::with_store(Randomness::Os, Store::dir(dir.path().join("a")));
    let out = run_json(
        &mut session,
        &format!(
            "LOAD '{p}' AS t1 NEIGHBOURS add_remove; LOAD '{p}' AS t2 NO HEADER NEIGHBOURS add_remove; \
             USE t1; CUBE BY c1 ('x');",
            p = data.display()
        ),
    );
    assert_eq!(out[3]["kind"], "error", "the cube is refused: {}", out[3]);
    let message = out[3]["message"].as_str().expect("a message");
    assert!(
        message.contains("NO HEADER") && message.contains("t2"),
        "the refusal names the other reading: {message}"
    );
    let out = run_json(&mut session, "USE t2; SHOW CUBE;");
    assert_eq!(out[1]["kind"], "error", "no cube was recorded: {}", out[1]);

    // The cube declared and spent over one reading: the other reading is refused at LOAD.
    let mut session = Session::with_store(Randomness::Os, Store::dir(dir.path().join("b")));
    let out = run_json(
        &mut session,
        &format!(
            "LOAD '{p}' AS t1 NEIGHBOURS add_remove; CUBE BY c1 ('x'); \
             HISTOGRAM WHERE c1 = 'x' WITH EPS 1; LOAD '{p}' AS t2 NO HEADER;",
            p = data.display()
        ),
    );
    assert!(
        out[..3].iter().all(|o| o["kind"] != "error"),
        "the setup runs: {out:?}"
    );
    assert_eq!(
        out[3]["kind"], "error",
        "a second reading of the same rows under the cube must be refused, got {}",
        out[3]
    );
    let message = out[3]["message"].as_str().expect("a message");
    assert!(
        message.contains("NO HEADER"),
        "the refusal says why: {message}"
    );
}

/// The peak resident memory of a process, in kB (Linux).
fn peak_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// Promise (README: a cube has at most 10,000 cells, "one histogram costs its e once, not once
/// per cell"; served datasets hold every analyst's history): a histogram's record grows with
/// its parts, so the largest cube allowed can be released at once.
///
/// How it broke: every part of a vector is recorded with a copy of the vector's key, and the
/// key lists every cell of every part (`histogram|cells10000|0;1;...;9999`, about 49 KB),
/// once in the releases and once in the map of answered keys: 10,000 parts keep about 1 GB,
/// memory quadratic in the cells (1,004 cells: 29 MB; 4,004: 197 MB; 10,000: 1.06 GB of peak
/// resident memory). The same happens at every `LOAD` that replays the ledger. On
/// `dpq serve` one analyst's histogram over such a cube took the server from 20 MB to 2.1 GB
/// (its view and the whole history each keep a copy), a second analyst's to 4.7 GB, and a
/// restart then took 10 s and 5.6 GB: a handful of analysts with the `histogram` family can
/// exhaust the server for good. The process here is the prompt, fed on its standard input,
/// so its peak can be read before it exits; a histogram of 4,004 parts peaks at 211 MB (a
/// record linear in the parts would keep a few tens of MB: 1,004 parts peak at 29 MB).
#[test]
fn a_histogram_keeps_memory_linear_in_its_parts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut text = String::from("age,sex\n");
    for i in 0..200 {
        text.push_str(&format!("{},{}\n", i % 100, ["F", "M", "X"][i % 3]));
    }
    let data = write(dir.path(), "t.csv", &text);
    // 1,001 coordinates of age (999 cuts, then missing) times 4 of sex: 4,004 cells (the
    // largest cube allowed, 10,000 cells, peaks at 1 GB, but takes 8 s unoptimised).
    let cuts: Vec<String> = (1..=999).map(|c| c.to_string()).collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .args(["--practice", "--format", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn dpq");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(
        stdin,
        "LOAD '{}' AS t;\nCUBE BY age ({}), sex ('F', 'M');\nHISTOGRAM WITH EPS 0.1;",
        data.display(),
        cuts.join(", ")
    )
    .expect("send the statements");
    stdin.flush().expect("flush");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut kinds = Vec::new();
    while kinds.len() < 3 {
        let Some(Ok(line)) = lines.next() else { break };
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        kinds.push(v["kind"].as_str().unwrap_or("?").to_string());
    }
    // The histogram was answered (or the process died): read its peak while it waits.
    let peak = if kinds.len() == 3 {
        Some(peak_kb(child.id()))
    } else {
        None
    };
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(kinds, ["loaded", "cube", "histogram"], "the histogram runs");
    let peak = peak.expect("a peak");
    assert!(
        peak < 100_000,
        "a histogram of 4,004 parts peaked at {} MB of resident memory",
        peak / 1000
    );
}

/// Promise (README, policy table: `[limits] max_releases` is "releases one analyst may make
/// on one dataset (default 10,000): each is a line the server keeps"): the quota bounds what
/// an analyst makes the server keep. Either a vector is one release (two lines) and counts
/// once, or it is one release per part and a vector that would pass the quota is refused.
///
/// How it broke: the quota is checked against the analyst's history rows before the release
/// (`permit_release`), and a vector adds one row per part. With `max_releases = 5` an analyst
/// with no release makes a 16-part histogram (16 rows, past the quota of 5), and is then
/// refused a single count: the vector counts as 16 releases, yet it is let past the quota
/// whole. With the default quota, an analyst at 9,999 releases can add a 10,000-part vector.
#[test]
fn a_vector_is_either_one_release_or_refused_past_the_quota() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut text = String::from("age,sex\n");
    for i in 0..100 {
        text.push_str(&format!("{},{}\n", i % 90, ["F", "M", "X"][i % 3]));
    }
    write(dir.path(), "t.csv", &text);
    let (tok, hash) = token();
    let policy = write(
        dir.path(),
        "policy.toml",
        &format!(
            "[[dataset]]\nname = \"t\"\nid = \"t-v1\"\nsource = \"t.csv\"\nbudget = 1.0\n\
             cube = \"BY age (30, 65), sex ('F', 'M')\"\n\n\
             [[analyst]]\nname = \"a0\"\ntoken_hash = \"{hash}\"\nbudgets = {{ t = 1.0 }}\n\n\
             [limits]\nmax_releases = 5\n"
        ),
    );
    let server = Server::start_at(&policy, &dir.path().join("state"), None);
    let (_, histogram) = server.run(&tok, "HISTOGRAM WITH EPS 0.1;");
    let released = histogram["results"]
        .as_array()
        .is_some_and(|r| r.iter().any(|x| x["json"]["kind"] == "histogram"));
    if !released {
        // Refused as past the quota: the quota counts parts, and holds.
        return;
    }
    let (_, count) = server.run(&tok, "COUNT WHERE age < 30 WITH EPS 0.1;");
    let counted = count["results"]
        .as_array()
        .is_some_and(|r| r.iter().any(|x| x["json"]["kind"] == "count"));
    assert!(
        counted,
        "a 16-part histogram was let past a quota of 5 releases, and then a single count \
         was refused as past it: {}",
        count["error"]
    );
}

/// Promise (SPEC: a refused statement changes nothing): a histogram chart draws at most 200
/// bars, so a histogram of more parts with `PLOT` is refused before its epsilon is spent,
/// rather than released and then not drawn.
#[test]
fn a_chart_of_too_many_bars_is_refused_before_the_release() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut text = String::from("k\n");
    for i in 0..600 {
        text.push_str(&format!("{}\n", i % 300));
    }
    let data = write(dir.path(), "k.csv", &text);
    let mut session = Session::with_store(Randomness::Os, Store::dir(dir.path().join("s")));
    let chart = dir.path().join("bars.svg");
    let cuts = (1..300)
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let out = run_json(
        &mut session,
        &format!(
            "LOAD '{}' AS t; CUBE BY k ({cuts}); HISTOGRAM WITH EPS 0.5 PLOT '{}';",
            data.display(),
            chart.display()
        ),
    );
    assert!(
        out[..2].iter().all(|o| o["kind"] != "error"),
        "the setup runs: {out:?}"
    );
    assert_eq!(out[2]["kind"], "error", "the chart is refused: {}", out[2]);
    let message = out[2]["message"].as_str().expect("a message");
    let parts: usize = message
        .split("this histogram has ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        message.contains("200 bars") && parts >= 300,
        "the refusal names the limit and the parts (300 cells at least): {message}"
    );
    let out = run_json(&mut session, "SHOW BUDGET;");
    assert_eq!(out[0]["spent"], 0.0, "nothing was spent: {}", out[0]);
    assert!(!chart.exists(), "no chart was written");
}
