//! Human names for grammar rules, so a parse error reads `expected a number after EPS`.

use super::{habits, Rule};
use crate::error::SyntaxError;
use crate::span::Span;
use pest::error::{ErrorVariant, InputLocation};

/// What a rule is called in an error message. Exhaustive on purpose: a new rule must get a name.
pub fn human(rule: Rule) -> &'static str {
    match rule {
        Rule::statement | Rule::EOI => "the end of the statement",
        Rule::load_stmt => "LOAD",
        Rule::use_stmt => "USE",
        Rule::show_stmt => "SHOW",
        Rule::describe_stmt => "DESCRIBE",
        Rule::set_stmt => "SET",
        Rule::set_budget => "BUDGET",
        Rule::set_seed => "SEED",
        Rule::set_delta => "DELTA",
        Rule::count_stmt | Rule::count_by_stmt => "COUNT",
        Rule::histogram_stmt | Rule::kw_histogram => "HISTOGRAM",
        Rule::sum_stmt | Rule::kw_sum => "SUM",
        Rule::kw_mean => "MEAN",
        Rule::stat_stmt => "SHARE, MIN, MEDIAN, MAX",
        Rule::share_target | Rule::kw_share => "SHARE",
        Rule::order_target => "MIN, MEDIAN or MAX",
        Rule::kw_min => "MIN",
        Rule::noise_clause => "NOISE smooth or NOISE laplace",
        Rule::kw_gamma => "GAMMA",
        Rule::compare_smooth => "COMPARE NOISE",
        Rule::compare_accounting => "COMPARE ACCOUNTING",
        Rule::lab_count => "COUNT EPS (...)",
        Rule::lab_share => "SHARE N (...) M (...) EPS (...)",
        Rule::lab_order => "MIN, MEDIAN or MAX N (...) FROM law EPS (...)",
        Rule::lab_law => "UNIFORM or BETA (a, b)",
        Rule::lab_queries => "QUERIES SENSITIVITY (d1, d2) EPS e AT (...)",
        Rule::kw_m => "M",
        Rule::kw_from => "FROM",
        Rule::kw_uniform => "UNIFORM",
        Rule::kw_beta => "BETA",
        Rule::kw_queries => "QUERIES",
        Rule::kw_clamp => "CLAMP",
        Rule::kw_median => "MEDIAN",
        Rule::kw_quantile => "QUANTILE",
        Rule::binned => "MEDIAN, QUANTILE or MEAN",
        Rule::prior_clause => "PRIOR",
        Rule::mechanism_clause => "MECHANISM",
        Rule::choose_stmt => "CHOOSE",
        Rule::amount => "a number",
        Rule::percent => "%",
        Rule::predicate => "a condition",
        Rule::comparison | Rule::in_list | Rule::between => "a condition",
        Rule::negation => "NOT",
        Rule::cmp_op => "a comparison (=, !=, <, <=, >, >=)",
        Rule::number => "a number",
        Rule::string => "a quoted string",
        Rule::bare_name | Rule::quoted_name => "a name",
        Rule::kw_load => "LOAD",
        Rule::postgres_source => "POSTGRES 'connection' TABLE name",
        Rule::kw_postgres => "POSTGRES",
        Rule::spark_source => "SPARK 'sc://host:port' TABLE name",
        Rule::kw_spark => "SPARK",
        Rule::kw_table => "TABLE",
        Rule::kw_as => "AS",
        Rule::kw_no => "NO",
        Rule::kw_neighbours => "NEIGHBOURS",
        Rule::neighbours_clause => "NEIGHBOURS replace or NEIGHBOURS add_remove",
        Rule::kw_header => "HEADER",
        Rule::unit_clause => "PRIVACY UNIT column MAX ROWS k",
        Rule::kw_privacy => "PRIVACY",
        Rule::kw_unit => "UNIT",
        Rule::kw_max => "MAX",
        Rule::kw_rows => "ROWS",
        Rule::no_header => "NO HEADER",
        Rule::delimiter_clause => "DELIMITER 'character'",
        Rule::kw_delimiter => "DELIMITER",
        Rule::decimal_clause => "DECIMAL ','",
        Rule::kw_decimal => "DECIMAL",
        Rule::columns_clause | Rule::kw_columns => "COLUMNS",
        Rule::column_decl => "a column and its type, such as age integer",
        Rule::column_type
        | Rule::kw_integer
        | Rule::kw_float
        | Rule::kw_text
        | Rule::kw_boolean => "a column type (integer, float, text, boolean)",
        Rule::column_sep => "`,`",
        Rule::column_end => "`)`",
        Rule::domain_range => "BETWEEN low AND high",
        Rule::domain_values => "IN ('value', ...)",
        Rule::kw_use => "USE",
        Rule::kw_show => "SHOW",
        Rule::kw_tables => "TABLES",
        Rule::kw_budget => "BUDGET",
        Rule::kw_history => "HISTORY",
        Rule::kw_describe => "DESCRIBE",
        Rule::kw_set => "SET",
        Rule::kw_seed => "SEED",
        Rule::kw_count => "COUNT",
        Rule::kw_where => "WHERE",
        Rule::kw_with => "WITH",
        Rule::kw_eps => "EPS",
        Rule::kw_rho => "RHO",
        Rule::kw_accounting => "ACCOUNTING",
        Rule::kw_delta => "DELTA",
        Rule::kw_prior => "PRIOR",
        Rule::kw_p => "p",
        Rule::kw_mechanism => "MECHANISM",
        Rule::kw_choose => "CHOOSE",
        Rule::kw_within => "WITHIN",
        Rule::kw_at => "AT",
        Rule::kw_for => "FOR",
        Rule::kw_and => "AND",
        Rule::kw_or => "OR",
        Rule::kw_not => "NOT",
        Rule::kw_in => "IN",
        Rule::kw_between => "BETWEEN",
        Rule::kw_true => "TRUE",
        Rule::kw_false => "FALSE",
        Rule::stmt => "a statement",
        Rule::cube_stmt | Rule::kw_cube => "CUBE",
        Rule::observe_stmt | Rule::kw_observe => "OBSERVE",
        Rule::estimate_stmt | Rule::kw_estimate => "ESTIMATE",
        Rule::prob_stmt | Rule::kw_prob => "PROB",
        Rule::prob_cmp => "> or <",
        Rule::kw_by => "BY",
        Rule::cube_dim => "a column and its cuts or values, such as age (30, 65)",
        Rule::linear | Rule::count_term => "COUNT",
        Rule::lead_minus | Rule::add_op => "+/-",
        Rule::eps_clause => "WITH EPS",
        Rule::rho_clause => "WITH RHO",
        Rule::within_clause => "WITHIN",
        Rule::summed => "SUM",
        Rule::vector => "a list of coefficients such as (1, 0, 1, 0)",
        Rule::infix => "AND or OR",
        Rule::primary | Rule::literal => "a value",
        Rule::name => "a name",
        Rule::ident_char | Rule::reserved => "a name",
        Rule::WHITESPACE | Rule::COMMENT => "a blank",
        Rule::explain_stmt | Rule::kw_explain => "EXPLAIN",
        Rule::explained => "a statement",
        Rule::simulate_stmt | Rule::kw_simulate => "SIMULATE",
        Rule::num_list => "a number or a list such as (0.1, 0.5, 1)",
        Rule::plot_clause | Rule::kw_plot => "PLOT",
        Rule::plot_metric => "ERROR or IMPROVEMENT",
        Rule::kw_error => "ERROR",
        Rule::kw_improvement => "IMPROVEMENT",
        Rule::kw_n => "N",
        Rule::kw_std => "STD",
        Rule::kw_sim_p => "P",
        Rule::kw_runs => "RUNS",
        Rule::out_of_range_stmt | Rule::kw_out => "OUT OF RANGE",
        Rule::kw_of => "OF",
        Rule::kw_range => "RANGE",
        Rule::compare_stmt | Rule::kw_compare => "COMPARE",
        Rule::select_stmt | Rule::kw_select => "SELECT",
        Rule::dp_options => "WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = e)",
        Rule::kw_differential_privacy => "DIFFERENTIAL_PRIVACY",
        Rule::kw_options => "OPTIONS",
        Rule::dp_option => "an option such as epsilon = 0.5",
        Rule::sql_aggregate => "COUNT(*), SUM(col, ...) or AVG(col, ...)",
        Rule::sql_count => "COUNT(*)",
        Rule::sql_sum => "SUM(col, ...) or AVG(col, ...)",
        Rule::kw_avg => "AVG",
        Rule::sql_bounds | Rule::kw_contribution_bounds => {
            "contribution_bounds_per_group => (lo, hi)"
        }
        Rule::group_by | Rule::kw_group => "GROUP BY",
        Rule::flipped => "a condition",
        Rule::kw_noise => "NOISE",
        Rule::kw_sensitivity => "SENSITIVITY",
    }
}

/// Turns a pest error on the statement `text`, starting at `offset` of `source`, into a
/// `SyntaxError`: a habit from another language explained where one is recognised
/// ([`super::habits`]), else what was expected, with the keyword a misspelled word is closest to.
pub fn syntax_error(
    source: &str,
    offset: usize,
    text: &str,
    e: &pest::error::Error<super::Rule>,
) -> SyntaxError {
    let rel = match e.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    };
    let pos = rel + offset;
    let rules: Vec<Rule> = match &e.variant {
        ErrorVariant::ParsingError { positives, .. } => positives.clone(),
        ErrorVariant::CustomError { .. } => Vec::new(),
    };
    if let Some(h) = habits::explain(text, rel, &rules) {
        return SyntaxError::Habit {
            message: h.message,
            help: h.help,
            span: Span::new(h.start + offset, h.end + offset),
        };
    }
    let after = previous_token(&source[offset..pos]);
    let at_start = after.is_none();
    let starts = &*habits::STATEMENT_STARTS;
    let written = word_at(&source[pos..]);
    let (expected, candidates) = if at_start || rules.iter().all(|r| starts.contains(r)) {
        let words = habits::statement_words();
        let list = match words.split_last() {
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        };
        (format!("a statement ({list})"), words)
    } else {
        let mut names: Vec<&str> = Vec::new();
        for r in &rules {
            let n = human(*r);
            if !names.contains(&n) {
                names.push(n);
            }
        }
        // Another term of a linear query is the least likely intent: named last.
        if let Some(i) = names.iter().position(|n| *n == "+/-") {
            let n = names.remove(i);
            names.push(n);
        }
        let keywords: Vec<&'static str> = rules
            .iter()
            .filter(|r| format!("{r:?}").starts_with("kw_"))
            .map(|r| human(*r))
            .collect();
        let expected = match names.len() {
            0 => "something else".to_string(),
            1 => names[0].to_string(),
            _ => {
                let last = names.pop().unwrap_or_default();
                format!("{} or {last}", names.join(", "))
            }
        };
        (expected, keywords)
    };
    let help = written
        .and_then(|w| habits::closest(w, candidates.iter().copied()).map(|c| (w, c)))
        .filter(|(w, c)| !w.eq_ignore_ascii_case(c))
        .map(|(_, c)| match after {
            None => format!("did you mean {c}? type `help` for the list of statements"),
            Some(_) => format!("did you mean {c}?"),
        });
    let end = next_token_end(source, pos);
    SyntaxError::Expected {
        expected,
        after,
        help,
        span: Span::new(pos, end),
    }
}

/// The word (letters, digits, `_`) that starts `rest`, if one does.
fn word_at(rest: &str) -> Option<&str> {
    let len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (len > 0 && rest.starts_with(|c: char| c.is_ascii_alphabetic())).then(|| &rest[..len])
}

/// The last word, number, string or symbol before the error, skipping blanks and comments,
/// to say where it happened.
fn previous_token(before: &str) -> Option<String> {
    habits::last_token(before)
}

fn next_token_end(source: &str, pos: usize) -> usize {
    let rest = &source[pos.min(source.len())..];
    let len = rest
        .find(|c: char| c.is_whitespace() || c == ';')
        .unwrap_or(rest.len());
    let first = rest.chars().next().map_or(0, char::len_utf8);
    pos + len.max(first)
}
