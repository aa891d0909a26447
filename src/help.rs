//! The text of `help` and `help STATEMENT`: one entry per statement, with syntax and an example.

/// One statement's help.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topic {
    /// The keyword(s) naming it, as typed after `help`.
    pub name: &'static str,
    /// Its syntax.
    pub synopsis: &'static str,
    /// What it does, in a few lines.
    pub about: &'static str,
    /// An example.
    pub example: &'static str,
}

/// Every statement, in the order of the manual.
pub const TOPICS: &[Topic] = &[
    Topic {
        name: "LOAD",
        synopsis: "LOAD 'file.csv' | POSTGRES 'connection' TABLE name | SPARK 'sc://host:port' TABLE name [AS name] [NO HEADER] [DELIMITER ';'] [DECIMAL ','] [NEIGHBOURS replace|add_remove] [PRIVACY UNIT column MAX ROWS k] [COLUMNS (name type [BETWEEN lo AND hi | IN ('a', ...)], ...)];",
        about:
            "Reads a CSV file with a header row into a table and makes it current. Column types \
(integer, float, text, boolean) are inferred; empty and NA cells are missing and match no \
comparison. Shows the schema, the public row count n and the budget (total epsilon 1 by default). \
COLUMNS (age integer BETWEEN 0 AND 120, sex text IN ('F', 'M'), ok boolean) declares the \
schema instead: each column is read as its type, a cell that does not parse as it (or lies \
outside its domain) is missing, the file's other columns are left out, and the schema shown \
no longer depends on the values (inferred, it tells whether any cell of a column is, say, \
12.5). Declared columns are named as in the header, or c1, c2, ... with NO HEADER. \
A first row that looks like data (numbers, dates) is refused: with NO HEADER the first row is \
data and the columns are named c1, c2, ... DELIMITER ';' reads fields separated by another \
character ('\\t', a backslash and a t, is a tab; a .tsv file is tab-separated by default), and \
DECIMAL ',' reads numbers with a decimal comma (3,5 is 3.5, 1.234,5 is 1234.5); without it \
1,234.50 is text. The budget belongs to the data: a copy or a \
rename of the file finds the same ledger. When one person may have many rows, PRIVACY UNIT \
names the column that identifies them and MAX ROWS k keeps at most k rows of each (chosen by \
a hash of each row's own content); every sensitivity is then k times a row's, neighbouring \
tables differ by one person's rows (NEIGHBOURS add_remove), and n is private. The unit is \
recorded with the data and holds when the file is loaded again. A .parquet file, a directory \
of them or a pattern (LOAD 'events/*.parquet') is one table whose rows stay on disk: its \
schema comes from the files' metadata and every question streams them. LOAD POSTGRES \
'connection' TABLE name reads a PostgreSQL table's schema and row count; every question is \
then one SQL statement sent to the database. LOAD SPARK 'sc://host:port' TABLE db.name does \
the same for a Spark table through Spark Connect (a build with the spark feature); a token \
comes from SPARK_CONNECT_AUTHENTICATE_TOKEN, never from the statement.",
        example: "LOAD 'examples/data/people.csv' AS people;",
    },
    Topic {
        name: "USE",
        synopsis: "USE name;",
        about: "Makes a loaded table the current one.",
        example: "USE people;",
    },
    Topic {
        name: "SHOW",
        synopsis: "SHOW TABLES; | SHOW BUDGET; | SHOW HISTORY; | SHOW CUBE;",
        about: "TABLES lists the loaded tables. BUDGET shows the current table's total, spent and \
remaining epsilon and every spending, and with a cube each cell's spending. HISTORY lists the \
answers released so far: their row of coefficients over cells (H), epsilon (alpha), sensitivity \
(S) and noisy value (y). CUBE shows the cube's cells, each cell's spent budget and the history \
it estimates from.",
        example: "SHOW BUDGET;",
    },
    Topic {
        name: "DESCRIBE",
        synopsis: "DESCRIBE [name];",
        about: "Shows a table's columns and types, its row count n and its budget. Never values.",
        example: "DESCRIBE people;",
    },
    Topic {
        name: "SET",
        synopsis: "SET BUDGET e; | SET SEED n;",
        about:
            "BUDGET sets the current table's total epsilon (not below what is spent). SEED makes \
the noise reproducible, for teaching and tests: every result then says it is not private.",
        example: "SET BUDGET 2;",
    },
    Topic {
        name: "COUNT",
        synopsis: "COUNT WHERE condition WITH EPS e [PRIOR p=q [PLOT 'file.svg']] [MECHANISM laplace|geometric|staircase]; | COUNT WHERE condition WITHIN w AT p; | 2*COUNT WHERE a - COUNT WHERE b ... WITH EPS e (or WITHIN w AT p);",
        about: "Releases the number of rows satisfying the condition plus Laplace noise of scale \
1/e (on a fine grid; MECHANISM geometric: whole numbers; MECHANISM staircase: the \
variance-optimal staircase noise, a little narrower than Laplace), sampled exactly, spending e of the \
budget (checked before any noise is drawn and recorded in the ledger before the answer). Shows the 95% noise interval \
noisy +- ln(20)/e (geometric noise: the smallest whole half-width holding the count with \
probability at least 0.95, and that probability exactly). With PRIOR, also the Bayes estimate of the true count under a Binomial(n, q) \
prior and its 95% credible interval (free: post-processing), with a sparkline of the posterior; \
PLOT 'file.svg' draws the posterior with its credible interval. An identical query (same \
condition, epsilon and mechanism) returns its recorded answer at no cost. Conditions: = != <> < \
<= > >= against numbers, 'strings' and TRUE/FALSE; col IN (v, ...); col BETWEEN a AND b; AND, \
OR, NOT, parentheses. \
With a cube (CUBE BY), every condition must be a union of its cells, and counts combine into \
linear queries such as 2*COUNT WHERE a - COUNT WHERE b: the sensitivity S is the largest \
coefficient over cells, the noise scale S/e, and each cell spends e/S times its |coefficient| \
(disjoint cells compose in parallel). WITHIN w AT p asks for an answer within +-w with \
probability p instead of an epsilon: answered from the history (free) when its credible interval \
is narrow enough, else released with the least epsilon whose release, combined with the history \
by the BLUE, meets it, and answered with that combined estimate (never more than a release \
alone needs, S ln(1/(1-p))/w, which is shown beside it).",
        example: "COUNT WHERE age <= 30 WITH EPS 0.1 PRIOR p=0.3;",
    },
    Topic {
        name: "HISTOGRAM",
        synopsis: "HISTOGRAM [WHERE condition] WITH EPS e [MECHANISM laplace|geometric] [PLOT 'file.svg']; | COUNT [WHERE condition] BY column, ... WITH EPS e ...;",
        about: "Releases the count of every cell of the table's cube (those the condition, a union of cells, selects; empty cells, 'other' and 'missing' included) at once, each with its own noise, for one epsilon: its sensitivity is 1 under NEIGHBOURS add_remove (a row is in one cell) and 2 under replace (a row moves from one cell to another), the noise of every part S/e. COUNT ... BY releases the counts of the groups of cells sharing the named dimensions' coordinates the same way. Every part enters the history as a row of its own: ESTIMATE of any union of cells is then free. PLOT draws the counts as bars with their 95% intervals.",
        example: "HISTOGRAM WITH EPS 0.5;",
    },
    Topic {
        name: "SUM",
        synopsis: "SUM column CLAMP (lo, hi) [WHERE condition] WITH EPS e [MECHANISM laplace|geometric]; | ... WITH RHO r; | MEAN column CLAMP (lo, hi) ...;",
        about: "Releases the sum of a number column's values clamped to the public bounds [lo, hi] (never taken from the data), over the rows the condition selects; missing values count 0. Sensitivity max(|lo|, |hi|) under NEIGHBOURS add_remove, max(hi, 0) - min(lo, 0) under replace; exact noise of scale S/e on the value grid. MEAN spends half on the sum and half on the count of the rows that contributed, and gives their ratio with an interval holding the true mean with probability at least 0.95. Over a cube, a sum whose condition is a union of cells is charged on those cells only under NEIGHBOURS add_remove (on every cell and pair under replace), and enters the history of sums of its column and bounds: ESTIMATE SUM of a union of cells is then free. WITH RHO r on a table that accounts in zCDP: exact Gaussian noise of sigma = S/sqrt(2 r) (a MEAN's sum and count at r/2 each), charged r.",
        example: "SUM income CLAMP (0, 200000) WHERE age >= 30 WITH EPS 0.5;",
    },
    Topic {
        name: "SHARE",
        synopsis: "SHARE WHERE condition WITH EPS e [NOISE laplace | NOISE smooth [GAMMA g]]; | MIN|MEDIAN|MAX column CLAMP (lo, hi) [WHERE condition] WITH EPS e [NOISE ...];",
        about: "Releases the share of the table's rows where the condition holds, or the least, median (the lower one) or greatest value of a number column clamped to the public range [lo, hi] over the rows the condition selects. Laplace noise at the global sensitivity by default: 1/2 for a share under NEIGHBOURS add_remove (1/n under replace, n public), hi - lo for the others; its 95% interval is shown. NOISE smooth draws heavy-tailed noise 4 gamma S*/e Z, Z of density proportional to 1/(1+|z|^gamma) (GAMMA 4.53 by default, the least variance), scaled to the smooth sensitivity S* at the data (Nissim, Raskhodnikova and Smith 2007): far less noise where the data are dense, more where they are not; it pays only when S* is at least 10.96 times below the global sensitivity, never for a count. S* is never shown, so neither is an interval from it. Pure epsilon-DP; charged on the whole table (every cell of a cube); no privacy unit; PostgreSQL tables answer SHARE only. EXPLAIN gives both variances.",
        example: "MEDIAN age CLAMP (0, 120) WITH EPS 1 NOISE smooth;",
    },
    Topic {
        name: "CHOOSE",
        synopsis: "CHOOSE EPS WITHIN w% AT p FOR c; | CHOOSE EPS WITHIN h AT p;",
        about:
            "The epsilon whose Laplace noise keeps the answer within +-w% of an assumed count c \
(or within +-h) with probability p: eps = -ln(1-p)/(w c). FOR takes an assumed count, never a \
query: using the true count would leak it. Spends nothing.",
        example: "CHOOSE EPS WITHIN 20% AT 0.8 FOR 100;",
    },
    Topic {
        name: "CUBE",
        synopsis: "CUBE BY column (cut, ...) [, column ('value', ...)]; | CUBE n;",
        about: "BY declares public cells over the current table: numbers cut a numeric column into \
half-open intervals (age < 30, 30 <= age < 65, age >= 65), strings or TRUE/FALSE split a column \
by value (plus a cell for the other values); each column also has a cell for missing values, \
and the cells are the product. Counts then become rows of coefficients over cells, each cell \
keeps its own spending (recorded in the ledger: the cube stays with the data file), and the \
history answers ESTIMATE and PROB. A count the cube cannot express is answered outside it, \
charged in full on every cell. A new cube that refines the declared one (its cuts and values \
kept, dimensions added) keeps every release's cost per cell; any other takes earlier releases \
in full. \
CUBE n declares n anonymous cells x1..xn with no data, for learning inference from a history of \
answers entered with OBSERVE; each cell has a budget of 1.",
        example: "CUBE BY age (30, 65), sex ('F', 'M');",
    },
    Topic {
        name: "OBSERVE",
        synopsis: "OBSERVE (c1, ..., cn) = y WITH EPS e;",
        about: "Records by hand a released answer y of the linear query c1 x1 + ... + cn xn made \
with epsilon e. Its sensitivity is its largest absolute coefficient; each cell spends \
e/S times its |coefficient|, and the cube's cost is the largest cell's spending (cells are \
disjoint, so they compose in parallel). Refused before recording if a cell would pass its budget.",
        example: "OBSERVE (1, 1, 0, 0) = 30.8 WITH EPS 0.05;",
    },
    Topic {
        name: "ESTIMATE",
        synopsis: "ESTIMATE (c1, ..., cn); | ESTIMATE [c*]COUNT WHERE ... [+|- ...]; | ESTIMATE SUM column CLAMP (lo, hi) [WHERE ...];",
        about: "The best linear unbiased estimate of a linear query from the recorded answers, its \
variance, and the 95% credible interval from the exact distribution of its error (a weighted \
sum of Laplace noises, by FFT). Spends nothing. An error names the cells that lack evidence. \
ESTIMATE SUM uses the released sums (and means' sums) of the same column and bounds only.",
        example: "ESTIMATE (1, 0, 1, 0);",
    },
    Topic {
        name: "PROB",
        synopsis: "PROB query > x; | PROB query < x; | PROB query BETWEEN a AND b;",
        about: "The posterior probability of an event about a linear query, given the recorded \
answers (flat prior). The query is a list of coefficients, counts or a sum, as for ESTIMATE. Spends \
nothing. Accurate far into the tails, with a bound on its relative error and only the digits \
it vouches for; where no accurate value is reached (or below 1e-300) a bound is printed \
instead, such as P(...) < 1e-300.",
        example: "PROB (1, 0, 1, 0) > 0;",
    },
    Topic {
        name: "SIMULATE",
        synopsis: "SIMULATE N n|(n, ...) P p|(p, ...) EPS e|(e, ...) [RUNS r] [PLOT [ERROR|IMPROVEMENT] 'file.svg']; (STD s|(s, ...) instead of EPS)",
        about: "The Monte Carlo comparison of Naldi and D'Acquisto 2014, section 4: each run draws a true \
count k ~ Binomial(n, p) and a noisy answer y = k + Laplace(1/eps), and compares the naive \
estimate y with the Bayes estimate (eq. 11). For each point it reports the average absolute error \
of both (and the naive one's exact value 1/eps) and the probability that Bayes is closer, with \
95% Monte Carlo intervals. STD gives the noise as standard deviations sqrt(2)/eps. RUNS defaults \
to the paper's 100,000. PLOT writes an SVG chart: ERROR the average errors (Figures 1-5), \
IMPROVEMENT the probability of a Bayes improvement (Figures 6-8), both when neither is said; the x \
axis is the list with several values (eps is drawn reversed, as in the paper). Touches no data and \
spends nothing; with SET SEED the results are reproducible.",
        example: "SIMULATE N 100 P 0.3 EPS (0.05, 0.1, 0.5, 1) RUNS 10000;",
    },
    Topic {
        name: "OUT",
        synopsis: "OUT OF RANGE N n EPS e [AT a];",
        about: "The probability that Laplace noise of scale 1/e puts a count of n rows outside [0, n]: \
at the true count a (Naldi and D'Acquisto 2014, eq. 2), its largest value, at 0 and n (Theorem 1: \
(1 + e^(-e n))/2), and its least, at n/2 (exact over whole counts, and eq. 6 as the paper writes \
it). Spends nothing.",
        example: "OUT OF RANGE N 100 EPS 0.1 AT 30;",
    },
    Topic {
        name: "COMPARE",
        synopsis: "COMPARE NOISE EPS e|(e, ...) [SENSITIVITY d]; | COMPARE NOISE COUNT EPS (...); | COMPARE NOISE SHARE N (...) M (...) EPS (...); | COMPARE NOISE MIN|MEDIAN|MAX N (...) FROM UNIFORM|BETA (a, b) EPS (...); | COMPARE NOISE QUERIES SENSITIVITY (d1, d2) EPS e AT (...);",
        about: "Laplace noise against the optimal data-independent noise, the staircase (Soria-Comas \
and Domingo-Ferrer 2011; Geng and Viswanath 2012): for each epsilon, the variances 2 d^2/e^2 and the least \
staircase variance, the staircase's inner width gamma, and the 95% interval half-widths of both. \
COUNT, SHARE, MIN, MEDIAN and MAX compare Laplace with data-dependent noise scaled to the smooth \
sensitivity (the slides' second half): Laplace's 95% half-width and variance, and the smooth \
noise's at the gamma of least variance and of least half-width, for a count, a share of m = M n \
of n records (M a fraction), or a statistic of n values drawn from U[0, 1] or Beta(a, b) (from \
the session's seed when set). QUERIES gives the size of the confidence region of two queries \
answered at once, Laplace against a staircase stepped in the shape of the sensitivity box. \
Spends nothing.",
        example: "COMPARE NOISE SHARE N (100, 1000) M (0, 0.5) EPS 0.1;",
    },
    Topic {
        name: "EXPLAIN",
        synopsis: "EXPLAIN statement;",
        about: "Says what the statement would do without doing it: for a count, the table, the cells \
it touches, its sensitivity, the noise and its scale, the budget before and after, the \
composition rule, or why it would be refused or answered for free. Spends nothing, records \
nothing, draws no noise.",
        example: "EXPLAIN COUNT WHERE age < 30 WITH EPS 0.1;",
    },
    Topic {
        name: "SELECT",
        synopsis: "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = e [, delta = 0] [, privacy_unit_column = c]) COUNT(*) | SUM(col, contribution_bounds_per_group => (lo, hi)) | AVG(...) FROM t [WHERE ...] [GROUP BY col, ...];",
        about: "BigQuery's SQL form of the common questions, run as the dpq statement it translates \
to (shown in the result, the history and EXPLAIN): COUNT(*) with WHERE is COUNT WHERE ... WITH EPS \
e, with GROUP BY it is COUNT [WHERE ...] BY col WITH EPS e over the table's cube, SUM and AVG are \
SUM and MEAN col CLAMP (lo, hi). Asked in either form, it is the same release. A SELECT without \
the privacy options, SELECT *, a column list, JOIN, ORDER BY and LIMIT are refused, saying why \
(docs/sql.md).",
        example: "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) COUNT(*) FROM people WHERE age < 30;",
    },
];

/// The topic named `name` (case-insensitive), if any.
pub fn topic(name: &str) -> Option<&'static Topic> {
    let word = name.split_whitespace().next().unwrap_or("");
    // Statements documented together.
    let word = if word.eq_ignore_ascii_case("mean") {
        "SUM"
    } else if ["min", "median", "max"]
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w))
    {
        "SHARE"
    } else {
        word
    };
    TOPICS.iter().find(|t| t.name.eq_ignore_ascii_case(word))
}

/// What `help TOPIC` answers: the overview for no topic, a topic's help, or the overview
/// after saying there is no such topic. The prompt and the page both answer with it.
pub fn answer(topic: &str) -> String {
    let topic = topic.split_whitespace().collect::<Vec<_>>().join(" ");
    if topic.is_empty() {
        return overview();
    }
    match self::topic(&topic) {
        Some(t) => render(t),
        None => format!("No help for `{topic}`.\n{}", overview()),
    }
}

/// The overview printed by `help`.
pub fn overview() -> String {
    let mut out = String::from("Statements (end each with ;):\n");
    for t in TOPICS {
        out.push_str(&format!("  {}\n", t.synopsis));
    }
    out.push_str("Type `help COUNT` (or any statement) for more. Keywords are case-insensitive; -- starts a comment.");
    out
}

/// The prompt's greeting, fitted to this thread's width (see [`crate::output::set_width`]).
pub fn banner() -> String {
    crate::output::fit(&format!(
        "dpq {} -- differentially private queries. Type `help` or `.help`, end statements with ;, Ctrl-D or `.quit` quits.",
        env!("CARGO_PKG_VERSION")
    ))
}

/// The full text of one topic.
pub fn render(t: &Topic) -> String {
    format!("{}\n\n{}\n\nExample:\n  {}", t.synopsis, t.about, t.example)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_topic_example_parses() {
        for t in TOPICS {
            crate::syntax::parse_script(t.example)
                .unwrap_or_else(|e| panic!("help example of {} does not parse: {e}", t.name));
        }
    }

    #[test]
    fn topics_are_found_case_insensitively() {
        assert_eq!(topic("count").map(|t| t.name), Some("COUNT"));
        assert_eq!(topic("Show budget").map(|t| t.name), Some("SHOW"));
        assert!(topic("nothing").is_none());
    }
}
