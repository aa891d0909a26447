//! The estimator lab's statements against the papers' formulas and tables, through the
//! interpreter (JSON results): OUT OF RANGE against paper 1's eq. 2, Theorem 1 and eq. 6,
//! computed here independently; COMPARE NOISE against the Soria-Comas and Domingo-Ferrer table.

use dpq::driver::{run_source, Emitted};
use dpq::eval::{Randomness, Session};
use dpq::output::Format;
use serde_json::Value;

fn json(source: &str) -> Vec<Value> {
    let mut session = Session::new(Randomness::Seeded(1));
    let mut out = Vec::new();
    run_source(&mut session, "test", source, Format::Json, &mut |e| {
        let text = match e {
            Emitted::Result(s) | Emitted::Error(s) => s,
        };
        out.push(serde_json::from_str(&text).expect("one JSON object"));
    });
    out
}

fn num(v: &Value, field: &str) -> f64 {
    v[field]
        .as_f64()
        .unwrap_or_else(|| panic!("no number {field} in {v}"))
}

/// Relative difference.
fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance * b.abs().max(f64::MIN_POSITIVE)
}

#[test]
fn out_of_range_follows_equation_2_theorem_1_and_equation_6() {
    for (n, eps, at) in [
        (100u64, 0.1f64, 30u64),
        (101, 0.1, 0),
        (1000, 0.01, 500),
        (7, 2.0, 7),
    ] {
        let out = json(&format!("OUT OF RANGE N {n} EPS {eps} AT {at};"));
        let r = &out[0];
        assert_eq!(r["kind"], "out_of_range", "{r}");
        let (nf, a) = (n as f64, at as f64);
        // Eq. 2: (e^{-eps a} + e^{eps (a - n)}) / 2.
        let eq2 = |a: f64| ((-eps * a).exp() + (eps * (a - nf)).exp()) / 2.0;
        assert!(close(num(r, "p_at"), eq2(a), 1e-12), "{r}");
        // Theorem 1: (1 + e^{-eps n}) / 2, and no whole count exceeds it.
        let max = (1.0 + (-eps * nf).exp()) / 2.0;
        assert!(close(num(r, "p_max"), max, 1e-12), "{r}");
        // The least over whole counts, by brute force over 0..=n.
        let least = (0..=n).map(|a| eq2(a as f64)).fold(f64::INFINITY, f64::min);
        assert!(close(num(r, "p_min"), least, 1e-12), "{r}");
        assert!((0..=n).all(|a| eq2(a as f64) <= max * (1.0 + 1e-12)));
        // Eq. 6, the paper's form of the minimum: exact for odd n; for even n larger than the
        // least by cosh(eps / 2).
        let eq6 = ((-eps * (nf - 1.0) / 2.0).exp() + (-eps * (nf + 1.0) / 2.0).exp()) / 2.0;
        assert!(close(num(r, "p_min_eq6"), eq6, 1e-12), "{r}");
        if n % 2 == 1 {
            assert!(close(eq6, least, 1e-12));
        } else {
            assert!(close(eq6 / least, (eps / 2.0).cosh(), 1e-12));
        }
    }
}

/// A cell of the slides' table: eps, Laplace variance, optimal variance as printed, and the
/// unit of its last printed digit.
type Cell = (f64, f64, f64, f64);

#[test]
fn compare_noise_reproduces_the_slides_table() {
    // The slides' "Comparison (I): Single Query": Laplace variance against the least variance
    // of a data-independent noise, to the digits printed (the slides truncate 19991.67 and
    // 191.81 to 19991 and 191.8).
    let table: [(f64, [Cell; 3]); 3] = [
        (
            0.1,
            [
                (0.1, 2.0, 1.999, 1e-3),
                (1.0, 0.02, 0.0192, 1e-4),
                (10.0, 2e-4, 8.47e-6, 1e-8),
            ],
        ),
        (
            1.0,
            [
                (0.1, 200.0, 199.9, 0.1),
                (1.0, 2.0, 1.92, 1e-2),
                (10.0, 0.02, 8.47e-4, 1e-6),
            ],
        ),
        (
            10.0,
            [
                (0.1, 20000.0, 19991.0, 1.0),
                (1.0, 200.0, 191.8, 0.1),
                (10.0, 2.0, 8.47e-2, 1e-4),
            ],
        ),
    ];
    for (d, cells) in table {
        let out = json(&format!("COMPARE NOISE EPS (0.1, 1, 10) SENSITIVITY {d};"));
        let rows = out[0]["rows"].as_array().expect("rows").clone();
        assert_eq!(rows.len(), 3);
        for (row, (eps, laplace, optimal, unit)) in rows.iter().zip(cells) {
            assert_eq!(num(row, "eps"), eps);
            assert!(close(num(row, "laplace_variance"), laplace, 1e-12), "{row}");
            // Within one unit of the last printed digit (truncation or rounding).
            let v = num(row, "staircase_variance");
            assert!(
                (v - optimal).abs() <= unit,
                "d {d} eps {eps}: {v} against {optimal}"
            );
            assert!(v < num(row, "laplace_variance"));
        }
    }
    // The slides' 95% interval of Laplace noise: [m - 29.9, m + 29.9] at eps 0.1 and
    // [m - 2.99, m + 2.99] at eps 1; exactly ln(20)/eps = 29.957 and 2.9957, which the
    // slides truncate.
    let out = json("COMPARE NOISE EPS (0.1, 1);");
    let rows = out[0]["rows"].as_array().expect("rows").clone();
    for (row, printed) in rows.iter().zip([29.9, 2.99]) {
        let h = num(row, "laplace_half95");
        assert!(close(h, 20f64.ln() / num(row, "eps"), 1e-12));
        assert!(
            h >= printed && h < printed * 1.0034,
            "{h} against {printed}"
        );
        assert!(num(row, "staircase_half95") <= h);
    }
}

#[test]
fn simulate_reports_every_point_with_its_intervals() {
    let out = json("SIMULATE N (100, 1000) P 0.3 STD (2, 20) RUNS 4000;");
    let rows = out[0]["rows"].as_array().expect("rows").clone();
    assert_eq!(rows.len(), 4);
    for row in &rows {
        let eps = num(row, "eps");
        assert!(close(
            num(row, "std"),
            std::f64::consts::SQRT_2 / eps,
            1e-12
        ));
        assert!(close(num(row, "m_naive_exact"), 1.0 / eps, 1e-12));
        for field in ["m_naive", "m_bayes", "p_bayes_better"] {
            let v = num(row, field);
            let band = row[format!("{field}95")]
                .as_array()
                .expect("an interval")
                .clone();
            let (lo, hi) = (band[0].as_f64().expect("lo"), band[1].as_f64().expect("hi"));
            assert!(lo <= v && v <= hi, "{field}: {row}");
        }
    }
}
