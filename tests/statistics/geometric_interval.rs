//! The 95% noise interval of a count with geometric (discrete Laplace) noise holds the count
//! with probability at least 0.95, not exactly: the noise takes whole values. The result says
//! so and gives the exact probability, here checked against a direct sum over the law.

use dpq::driver::{run_source, Emitted};
use dpq::eval::{Randomness, Session};
use dpq::output::Format;

fn run(source: &str, format: Format) -> Vec<String> {
    let mut session = Session::new(Randomness::Seeded(3));
    let mut out = Vec::new();
    run_source(&mut session, "test", source, format, &mut |e| {
        out.push(match e {
            Emitted::Result(s) | Emitted::Error(s) => s,
        })
    });
    out
}

/// `P(|Z| <= m)` for `P(z) = (1-a)/(1+a) a^|z|`, `a = e^-eps`, summed term by term.
fn covered(eps: f64, m: i64) -> f64 {
    let a = (-eps).exp();
    (-m..=m)
        .map(|z| (1.0 - a) / (1.0 + a) * a.powi(z.abs() as i32))
        .sum()
}

#[test]
fn geometric_intervals_state_their_exact_coverage() {
    for (eps, expected_m) in [(0.5, 6i64), (1.0, 3), (0.1, 30), (2.0, 1)] {
        let source = format!(
            "LOAD 'examples/data/people.csv'; SET BUDGET 5; COUNT WHERE sex = 'F' WITH EPS {eps} MECHANISM geometric;"
        );
        let out = run(&source, Format::Json);
        let v: serde_json::Value = serde_json::from_str(&out[2]).expect("JSON");
        let noisy = v["noisy"].as_f64().expect("noisy");
        let (lo, hi) = (v["interval95"][0].as_f64(), v["interval95"][1].as_f64());
        let m = (noisy - lo.expect("lo")).round() as i64;
        assert_eq!(m, expected_m, "eps {eps}");
        assert_eq!(hi.expect("hi") - noisy, m as f64);
        let coverage = v["coverage95"].as_f64().expect("coverage95");
        let direct = covered(eps, m);
        assert!(
            (coverage - direct).abs() < 1e-12,
            "eps {eps}: {coverage} vs {direct}"
        );
        assert!(coverage >= 0.95 && covered(eps, m - 1) < 0.95, "eps {eps}");
        let text = run(&source, Format::Table).join("\n");
        let shown = format!("{coverage:.6}");
        let shown = shown.trim_end_matches('0');
        assert!(
            text.contains("with probability at least 0.95") && text.contains(shown),
            "eps {eps}: {text}"
        );
        assert!(
            !text.contains("with probability 0.95 over"),
            "eps {eps}: {text}"
        );
    }
}

#[test]
fn laplace_intervals_hold_exactly_95_percent() {
    let out = run(
        "LOAD 'examples/data/people.csv'; COUNT WHERE sex = 'F' WITH EPS 0.5;",
        Format::Json,
    );
    let v: serde_json::Value = serde_json::from_str(&out[1]).expect("JSON");
    assert_eq!(v["coverage95"].as_f64(), Some(0.95));
    let text = run(
        "LOAD 'examples/data/people.csv'; COUNT WHERE sex = 'F' WITH EPS 0.5;",
        Format::Table,
    )
    .join("\n");
    assert!(
        text.contains("with probability 0.95 over the noise"),
        "{text}"
    );
}

#[test]
fn explain_gives_the_geometric_interval_and_its_coverage() {
    let out = run(
        "LOAD 'examples/data/people.csv'; EXPLAIN COUNT WHERE sex = 'F' WITH EPS 0.5 MECHANISM geometric;",
        Format::Table,
    )
    .join("\n");
    // eps 0.5: m = 6, P(|Z| <= 6) = 1 - 2 e^-3.5 / (1 + e^-0.5) = 0.962407.
    assert!(out.contains("±6") && out.contains("0.962407"), "{out}");
}
