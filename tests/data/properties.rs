//! Properties of the front end: the canonical print of any AST parses back to the same AST, and
//! no input, however malformed, makes the interpreter panic.

use dpq::ast::{
    Accuracy, ChooseEps, CmpOp, ColumnDecl, ColumnsClause, CountQuery, CountTerm, CubeDim,
    Database, DeclaredDomain, DeclaredType, Engine, Expr, Ident, Literal, Number, Plot, PlotMetric,
    Prior, ProbEvent, Query, Simulate, Statement, StatementKind, Text, UnitClause,
};
use dpq::driver::run_source;
use dpq::eval::{Randomness, Session};
use dpq::output::Format;
use dpq::span::Span;
use dpq::syntax::parse_script;
use proptest::prelude::*;

fn name() -> impl Strategy<Value = Ident> {
    prop_oneof![
        "[a-z_][a-z0-9_]{0,6}",
        // Reserved words and odd names must come back through quoting.
        Just("and".to_string()),
        Just("count".to_string()),
        "[ a-zA-Z\"'é;-]{1,6}",
    ]
    .prop_map(|name| Ident {
        name,
        span: Span::default(),
    })
}

fn number() -> impl Strategy<Value = Number> {
    prop_oneof![
        (0u32..100_000).prop_map(|n| n.to_string()),
        (-1000i32..1000, 0u32..1000).prop_map(|(a, b)| format!("{a}.{b}")),
        (1u32..10, -30i32..30).prop_map(|(m, e)| format!("{m}e{e}")),
    ]
    .prop_map(|text| Number {
        value: text.parse().unwrap_or(f64::NAN),
        text,
        span: Span::default(),
    })
}

fn text() -> impl Strategy<Value = Text> {
    "[ a-zA-Z0-9'\";-é]{0,8}".prop_map(|value| Text {
        value,
        span: Span::default(),
    })
}

/// What `DELIMITER` and `DECIMAL` hold: any text, a tab, or `\t` written as two characters.
fn delimiter() -> impl Strategy<Value = Text> {
    prop_oneof![
        text(),
        Just("\t".to_string()).prop_map(|value| Text {
            value,
            span: Span::default(),
        }),
        Just("\\t".to_string()).prop_map(|value| Text {
            value,
            span: Span::default(),
        }),
    ]
}

fn literal() -> impl Strategy<Value = Literal> {
    prop_oneof![
        number().prop_map(Literal::Number),
        text().prop_map(Literal::Text),
        any::<bool>().prop_map(|b| Literal::Bool(b, Span::default())),
    ]
}

fn cmp_op() -> impl Strategy<Value = CmpOp> {
    prop_oneof![
        Just(CmpOp::Eq),
        Just(CmpOp::Ne),
        Just(CmpOp::Lt),
        Just(CmpOp::Le),
        Just(CmpOp::Gt),
        Just(CmpOp::Ge),
    ]
}

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        (name(), cmp_op(), literal()).prop_map(|(column, op, value)| Expr::Compare {
            column,
            op,
            value
        }),
        (
            name(),
            any::<bool>(),
            prop::collection::vec(literal(), 1..4)
        )
            .prop_map(|(column, negated, values)| Expr::In {
                column,
                negated,
                values
            }),
        (name(), any::<bool>(), literal(), literal()).prop_map(|(column, negated, low, high)| {
            Expr::Between {
                column,
                negated,
                low,
                high,
            }
        }),
    ];
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::Or(Box::new(a), Box::new(b))),
            inner.prop_map(|a| Expr::Not(Box::new(a))),
        ]
    })
}

fn terms() -> impl Strategy<Value = Vec<CountTerm>> {
    prop::collection::vec(
        (any::<bool>(), prop::option::of(number()), expr()).prop_map(
            |(minus, coefficient, predicate)| CountTerm {
                minus,
                coefficient,
                predicate,
            },
        ),
        1..4,
    )
}

fn accuracy() -> impl Strategy<Value = Accuracy> {
    prop_oneof![
        number().prop_map(Accuracy::Eps),
        number().prop_map(Accuracy::Rho),
        (number(), number(), any::<bool>()).prop_map(|(half_width, at, at_percent)| {
            Accuracy::Within {
                half_width,
                at,
                at_percent,
            }
        }),
    ]
}

fn query() -> impl Strategy<Value = Query> {
    prop_oneof![
        prop::collection::vec(number(), 1..6).prop_map(Query::Vector),
        terms().prop_map(Query::Linear),
    ]
}

/// `COLUMNS (...)`: any names, types and domains (the checker, not the grammar, matches a
/// domain to its type).
fn columns() -> impl Strategy<Value = ColumnsClause> {
    let ty = prop_oneof![
        Just(DeclaredType::Integer),
        Just(DeclaredType::Float),
        Just(DeclaredType::Text),
        Just(DeclaredType::Boolean),
    ];
    let domain = prop_oneof![
        (number(), number()).prop_map(|(lo, hi)| DeclaredDomain::Between(lo, hi)),
        prop::collection::vec(text(), 1..4).prop_map(DeclaredDomain::In),
    ];
    prop::collection::vec(
        (name(), ty, prop::option::of(domain)).prop_map(|(name, ty, domain)| ColumnDecl {
            name,
            ty,
            domain,
            span: Span::default(),
        }),
        1..4,
    )
    .prop_map(|columns| ColumnsClause {
        columns,
        span: Span::default(),
    })
}

/// A database table: a PostgreSQL table of one name, or a Spark table of one to three.
fn database() -> impl Strategy<Value = Database> {
    prop_oneof![
        name().prop_map(|t| Database {
            engine: Engine::Postgres,
            table: vec![t],
        }),
        prop::collection::vec(name(), 1..4).prop_map(|table| Database {
            engine: Engine::Spark,
            table,
        }),
    ]
}

fn statement() -> impl Strategy<Value = StatementKind> {
    prop_oneof![
        (
            text(),
            prop::option::of(name()),
            any::<bool>(),
            prop::option::of(name()),
            prop::option::of((name(), prop::option::of(number()))),
            prop::option::of(database()),
            prop::option::of(columns()),
            prop::option::of(delimiter()),
            prop::option::of(delimiter()),
        )
            .prop_map(
                |(
                    path,
                    alias,
                    no_header,
                    neighbours,
                    unit,
                    database,
                    columns,
                    delimiter,
                    decimal,
                )| {
                    StatementKind::Load {
                        path,
                        database,
                        alias,
                        no_header,
                        delimiter,
                        decimal,
                        neighbours,
                        unit: unit.map(|(column, max_rows)| UnitClause {
                            column,
                            max_rows,
                            span: Span::default(),
                        }),
                        columns,
                    }
                }
            ),
        name().prop_map(|table| StatementKind::Use { table }),
        Just(StatementKind::ShowTables),
        Just(StatementKind::ShowBudget),
        Just(StatementKind::ShowHistory),
        Just(StatementKind::ShowCube),
        prop::option::of(name()).prop_map(|table| StatementKind::Describe { table }),
        (number(), any::<bool>()).prop_map(|(total, rho)| StatementKind::SetBudget { total, rho }),
        number().prop_map(|delta| StatementKind::SetDelta { delta }),
        number().prop_map(|seed| StatementKind::SetSeed { seed }),
        (
            terms(),
            accuracy(),
            prop::option::of(
                (number(), prop::option::of(number())).prop_map(|(p, n)| Prior { p, n })
            ),
            prop::option::of(name()),
            prop::option::of(plot())
        )
            .prop_map(
                |(terms, accuracy, prior, mechanism, plot)| StatementKind::Count(CountQuery {
                    terms,
                    accuracy,
                    prior,
                    mechanism,
                    plot
                })
            ),
        prop::collection::vec(
            (name(), prop::collection::vec(literal(), 1..4))
                .prop_map(|(column, points)| CubeDim { column, points }),
            1..4
        )
        .prop_map(|dims| StatementKind::CubeBy { dims }),
        (
            number(),
            any::<bool>(),
            number(),
            any::<bool>(),
            prop::option::of(number()),
            any::<bool>()
        )
            .prop_map(|(within, within_percent, at, at_percent, for_count, rho)| {
                StatementKind::ChooseEps(ChooseEps {
                    within,
                    within_percent,
                    at,
                    at_percent,
                    for_count,
                    rho,
                })
            }),
        (
            prop::collection::vec(number(), 1..5),
            number(),
            any::<bool>(),
            number(),
            any::<bool>(),
            (prop::option::of(number()), prop::option::of(plot()))
        )
            .prop_map(
                |(queries, within, within_percent, at, at_percent, (for_count, plot))| {
                    StatementKind::CompareAccounting {
                        queries,
                        requirement: ChooseEps {
                            within,
                            within_percent,
                            at,
                            at_percent,
                            for_count,
                            rho: false,
                        },
                        plot,
                    }
                }
            ),
        (number(), prop::option::of(name()))
            .prop_map(|(cells, neighbours)| StatementKind::Cube { cells, neighbours }),
        (prop::collection::vec(number(), 1..6), number(), number())
            .prop_map(|(row, value, eps)| StatementKind::Observe { row, value, eps }),
        query().prop_map(|query| StatementKind::Estimate { query }),
        (
            query(),
            prop_oneof![
                number().prop_map(ProbEvent::Greater),
                number().prop_map(ProbEvent::Less),
                (number(), number()).prop_map(|(a, b)| ProbEvent::Between(a, b)),
            ]
        )
            .prop_map(|(query, event)| StatementKind::Prob { query, event }),
        lab(),
    ]
}

fn plot() -> impl Strategy<Value = Plot> {
    (
        prop::option::of(prop_oneof![
            Just(PlotMetric::Error),
            Just(PlotMetric::Improvement)
        ]),
        text(),
    )
        .prop_map(|(metric, path)| Plot { metric, path })
}

fn list() -> impl Strategy<Value = Vec<Number>> {
    prop::collection::vec(number(), 1..5)
}

/// The estimator lab's statements, and EXPLAIN of any statement but EXPLAIN.
fn lab() -> impl Strategy<Value = StatementKind> {
    let simulate = (
        list(),
        list(),
        any::<bool>(),
        list(),
        prop::option::of(number()),
        prop::option::of(plot()),
    )
        .prop_map(|(n, p, std, noise, runs, plot)| {
            StatementKind::Simulate(Simulate {
                n,
                p,
                std,
                noise,
                runs,
                plot,
            })
        })
        .boxed();
    let out_of_range = (number(), number(), prop::option::of(number()))
        .prop_map(|(n, eps, at)| StatementKind::OutOfRange { n, eps, at })
        .boxed();
    let compare = (list(), prop::option::of(number()))
        .prop_map(|(eps, sensitivity)| StatementKind::CompareNoise { eps, sensitivity })
        .boxed();
    let plain = prop_oneof![
        simulate.clone(),
        out_of_range.clone(),
        compare.clone(),
        Just(StatementKind::ShowBudget),
        (terms(), accuracy()).prop_map(|(terms, accuracy)| StatementKind::Count(CountQuery {
            terms,
            accuracy,
            prior: None,
            mechanism: None,
            plot: None,
        })),
    ];
    prop_oneof![
        simulate,
        out_of_range,
        compare,
        plain.prop_map(|k| StatementKind::Explain(Box::new(k))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn parse_of_display_is_the_identity(kind in statement()) {
        let stmt = Statement { kind, span: Span::default() };
        let printed = stmt.to_string();
        let parsed = parse_script(&printed)
            .map_err(|e| TestCaseError::fail(format!("{printed}: {e}")))?;
        prop_assert_eq!(parsed.len(), 1, "{}", printed);
        prop_assert_eq!(&parsed[0], &stmt, "{}", printed);
    }

    #[test]
    fn no_input_makes_the_interpreter_panic(
        tail in prop_oneof![
            any::<String>(),
            // Fragments of the language glued at random reach deeper than random text.
            prop::collection::vec(
                prop::sample::select(vec![
                    "COUNT", "WHERE", "WITH", "EPS", "PRIOR", "p=", "age", "sex", "'F'", "30",
                    "-1", "1e400", "0.1", "(", ")", "AND", "OR", "NOT", "IN", "BETWEEN", ",",
                    ";", "<=", "=", "CHOOSE", "WITHIN", "%", "AT", "FOR", "SET", "BUDGET",
                    "SEED", "SHOW", "HISTORY", "LOAD", "USE", "DESCRIBE", "--", "\n", "\"",
                    "'", "é", "TRUE", "MECHANISM", "laplace", "geometric", "staircase", "OUT", "OF",
                    "RANGE", "N", "COMPARE", "NOISE", "SENSITIVITY", "EXPLAIN", "COLUMNS",
                    "integer", "text", "boolean", "NO", "HEADER", "'examples/data/people.csv'",
                ]),
                0..24,
            ).prop_map(|words| words.join(" ")),
        ]
    ) {
        let source = format!("LOAD 'examples/data/people.csv' AS people; SET BUDGET 1000;\n{tail}");
        for format in [Format::Table, Format::Json] {
            let mut session = Session::new(Randomness::Seeded(1));
            let mut outputs = 0usize;
            run_source(&mut session, "prop", &source, format, &mut |_| outputs += 1);
            prop_assert!(outputs >= 1);
        }
    }
}
