//! SIMULATE speed: 100,000 runs per parameter point (paper 1, section 4.2 uses 100,000), and
//! the Bayes table alone.
//!
//! The target is 100,000 runs at n = 1000, p = 0.3, eps = 0.1 in at most 50 ms on two cores
//! (a plain numpy version takes 1.3 s). `simulate` uses rayon's global pool: all cores.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use dpq::stats::simulate::{simulate, BayesTable, SimPoint};
use dpq::stats::{laplace, Epsilon, Probability};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution};

fn point(n: u64, p: f64, e: f64) -> SimPoint {
    SimPoint {
        n,
        p: Probability::new(p).expect("valid probability"),
        eps: Epsilon::new(e).expect("valid epsilon"),
    }
}

fn bench_simulate(c: &mut Criterion) {
    let mut group = c.benchmark_group("simulate");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    for (name, n, e) in [
        ("100k_runs_n1000", 1000, 0.1),
        ("100k_runs_n1000_eps1", 1000, 1.0),
        ("100k_runs_n100", 100, 0.1),
        ("100k_runs_n1000_eps0.01", 1000, 0.01),
    ] {
        let at = point(n, 0.3, e);
        group.bench_function(name, |b| {
            b.iter(|| simulate(black_box(at), 100_000, black_box(7), &|_| {}))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("bayes_table");
    group
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    let (p, e) = (
        Probability::new(0.3).expect("valid probability"),
        Epsilon::new(0.1).expect("valid epsilon"),
    );
    group.bench_function("new_n1000", |b| {
        b.iter(|| BayesTable::new(black_box(1000), p, e))
    });
    group.bench_function("new_n1e6", |b| {
        b.iter(|| BayesTable::new(black_box(1_000_000), p, e))
    });
    group.bench_function("new_n1e9", |b| {
        b.iter(|| BayesTable::new(black_box(1_000_000_000), p, e))
    });
    // One estimate, for scale (y inside the table).
    let table = BayesTable::new(1000, p, e).expect("n is supported");
    group.bench_function("estimate_n1000", |b| {
        b.iter(|| table.estimate(black_box(317.3)))
    });
    group.finish();

    // The parts of one run, 1000 at a time: the binomial draw (rand_distr's BTPE; slower at
    // n p (1-p) = 21 than at 210), the Laplace draw, and the Bayes estimate over a sweep of
    // y across [0, n] (at n = 1000 the table's rows cover y <= 841; beyond them a proven
    // bound lets the value at the last row answer, again in constant time).
    let mut group = c.benchmark_group("parts_x1000");
    group
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for n in [100u64, 1000] {
        let prior = Binomial::new(n, 0.3).expect("valid binomial");
        group.bench_function(format!("binomial_n{n}"), |b| {
            b.iter(|| (0..1000).map(|_| prior.sample(&mut rng)).sum::<u64>())
        });
        let table = BayesTable::new(n, p, e).expect("n is supported");
        let nf = n as f64;
        group.bench_function(format!("estimate_sweep_n{n}"), |b| {
            b.iter(|| {
                (0..1000)
                    .map(|i| table.estimate(black_box(i as f64 * nf / 1000.0 + 0.37)))
                    .sum::<f64>()
            })
        });
    }
    group.bench_function("laplace", |b| {
        b.iter(|| {
            (0..1000)
                .map(|_| laplace::sample(&mut rng, 10.0))
                .sum::<f64>()
        })
    });
    group.finish();
}

criterion_group!(benches, bench_simulate);
criterion_main!(benches);
