//! Throughput of the exact noise samplers (`stats::noise`) against the textbook float sampler.
//!
//! Each iteration draws 10,000 values from `ChaCha20Rng` (the session's generator), so the
//! reported throughput is in draws per second. The target is 10 million exact discrete
//! Laplace draws per second at the scales of counts (eps 0.1 to 1: scale 1 to 10, and the
//! grid scales of about 2^20 steps). Short measurement times keep the whole run near a minute.

use std::hint::black_box;
use std::str::FromStr;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use dpq::stats::laplace;
use dpq::stats::noise::{bernoulli_exp, DiscreteLaplace, ExactEpsilon, GridLaplace, Rational};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rust_decimal::Decimal;

const DRAWS: usize = 10_000;

fn eps(s: &str) -> ExactEpsilon {
    ExactEpsilon::new(Decimal::from_str(s).expect("a decimal")).expect("a valid epsilon")
}

fn configured(
    c: &mut Criterion,
) -> criterion::BenchmarkGroup<'_, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group("noise");
    group
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
        .throughput(Throughput::Elements(DRAWS as u64));
    group
}

fn samplers(c: &mut Criterion) {
    let mut group = configured(c);
    let mut rng = ChaCha20Rng::seed_from_u64(1);

    // The geometric mechanism (discrete Laplace, scale 1/eps), one draw per call.
    for e in ["1", "0.1", "0.3"] {
        let dl = DiscreteLaplace::new(eps(e).count_scale());
        group.bench_function(BenchmarkId::new("geometric_eps", e), |b| {
            b.iter(|| {
                let mut acc = 0i128;
                for _ in 0..DRAWS {
                    acc = acc.wrapping_add(rng.sample(dl));
                }
                black_box(acc)
            })
        });
    }

    // The same through `fill`, which shares one bit stream between draws.
    let dl = DiscreteLaplace::new(eps("0.1").count_scale());
    let mut out = vec![0i128; DRAWS];
    group.bench_function("geometric_eps_0.1_fill", |b| {
        b.iter(|| {
            dl.fill(&mut rng, &mut out);
            black_box(out[DRAWS - 1])
        })
    });

    // The grid Laplace mechanism for a count (scale 2^k/eps steps, about 2^20 to 2^21).
    for e in ["1", "0.1", "0.3"] {
        let lap = GridLaplace::for_count(eps(e));
        group.bench_function(BenchmarkId::new("grid_laplace_count_eps", e), |b| {
            b.iter(|| {
                let mut acc = 0.0f64;
                for i in 0..DRAWS {
                    acc += lap.release_count(&mut rng, i as i64).value();
                }
                black_box(acc)
            })
        });
    }

    // A 28-digit epsilon: u128 numerators and denominators with divisions on every draw.
    let dl = DiscreteLaplace::new(eps("0.1234567890123456789012345678").count_scale());
    group.bench_function("geometric_eps_28_digits", |b| {
        b.iter(|| {
            let mut acc = 0i128;
            for _ in 0..DRAWS {
                acc = acc.wrapping_add(rng.sample(dl));
            }
            black_box(acc)
        })
    });

    // Bernoulli(exp(-1/3)) alone.
    let three = std::num::NonZeroU128::new(3).expect("3 > 0");
    group.bench_function("bernoulli_exp_1_3", |b| {
        b.iter(|| {
            let mut hits = 0u32;
            for _ in 0..DRAWS {
                hits += u32::from(bernoulli_exp(&mut rng, 1, three));
            }
            black_box(hits)
        })
    });

    // The textbook float sampler it replaces, for comparison.
    group.bench_function("textbook_f64_laplace_scale_10", |b| {
        b.iter(|| {
            let mut acc = 0.0f64;
            for _ in 0..DRAWS {
                acc += laplace::sample(&mut rng, 10.0);
            }
            black_box(acc)
        })
    });

    // Scale 2^20 as a plain rational (no epsilon).
    let dl = DiscreteLaplace::new(Rational::new(1 << 20, 1).expect("positive"));
    group.bench_function("discrete_laplace_scale_2^20", |b| {
        b.iter(|| {
            let mut acc = 0i128;
            for _ in 0..DRAWS {
                acc = acc.wrapping_add(rng.sample(dl));
            }
            black_box(acc)
        })
    });
    group.finish();
}

criterion_group!(benches, samplers);
criterion_main!(benches);
