//! Errors for habits brought from SQL and other languages: a statement that does not parse
//! is looked at again for what its writer most likely meant (`&&` for AND, `"F"` for a value,
//! a forgotten `WITH EPS`, a misspelled keyword, `SELECT *`), and told what dpq writes instead.
//!
//! Everything here reads the statement's text only, never data.

use super::{DpqParser, Rule};
use pest::error::ErrorVariant;
use pest::Parser as _;
use std::sync::LazyLock;

pub use crate::spelling::closest;

/// What a statement's writer meant, and what dpq writes instead; the span is relative to the
/// statement's text.
#[derive(Debug, Clone, PartialEq)]
pub struct Habit {
    /// What is wrong.
    pub message: String,
    /// What to write.
    pub help: String,
    /// Where, in the statement's text.
    pub start: usize,
    /// Where it ends, in the statement's text.
    pub end: usize,
}

/// The rules a statement can start with, as the grammar says: what the parser expects where
/// a statement should begin (a keyword, or a statement rule whose first word is one of
/// several).
pub static STATEMENT_STARTS: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    // `?` starts no statement: the parser names every rule it tried there.
    match DpqParser::parse(Rule::stmt, "?") {
        Err(e) => match e.variant {
            ErrorVariant::ParsingError { positives, .. } => positives,
            ErrorVariant::CustomError { .. } => Vec::new(),
        },
        Ok(_) => Vec::new(),
    }
});

/// The words a statement can start with, from [`STATEMENT_STARTS`], in alphabetical order.
pub fn statement_words() -> Vec<&'static str> {
    let mut words: Vec<&'static str> = STATEMENT_STARTS
        .iter()
        .flat_map(|rule| match rule {
            // A linear query starts with COUNT, a coefficient or a sign: COUNT is named by its
            // keyword, tried at the same place.
            Rule::linear => Vec::new(),
            Rule::sum_stmt => vec!["SUM", "MEAN"],
            Rule::stat_stmt => vec!["SHARE", "MIN", "MEDIAN", "MAX"],
            other => vec![super::names::human(*other)],
        })
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}

/// A token of a statement's text: its kind and where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Word,
    Number,
    Text,
    Name,
    Symbol,
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    kind: Kind,
    text: &'a str,
    start: usize,
}

impl Token<'_> {
    fn end(&self) -> usize {
        self.start + self.text.len()
    }

    fn is(&self, word: &str) -> bool {
        self.kind == Kind::Word && self.text.eq_ignore_ascii_case(word)
    }
}

/// Splits a statement's text into words, numbers, strings, quoted names and symbols (`&&`,
/// `||`, `==`, `=>`, `<=`, `>=`, `<>`, `!=` as one symbol), skipping blanks and comments.
fn tokens(text: &str) -> Vec<Token<'_>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        let kind = if c == b'-' && bytes.get(i + 1) == Some(&b'-') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        } else if c.is_ascii_whitespace() {
            i += 1;
            continue;
        } else if c == b'\'' || c == b'"' {
            i += 1;
            while i < bytes.len() {
                if bytes[i] == c && bytes.get(i + 1) == Some(&c) {
                    i += 2;
                } else if bytes[i] == c {
                    i += 1;
                    break;
                } else {
                    i += 1;
                }
            }
            if c == b'\'' {
                Kind::Text
            } else {
                Kind::Name
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            Kind::Word
        } else if c.is_ascii_digit()
            || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
                i += 1;
            }
            Kind::Number
        } else {
            let pair = text.get(i..i + 2).unwrap_or("");
            i += if ["&&", "||", "==", "=>", "=<", "<=", ">=", "<>", "!="].contains(&pair) {
                2
            } else {
                text[i..].chars().next().map_or(1, char::len_utf8)
            };
            Kind::Symbol
        };
        // A token cut inside a multi-byte character cannot happen: every branch stops at an
        // ASCII byte or at the end.
        out.push(Token {
            kind,
            text: &text[start..i],
            start,
        });
    }
    out
}

/// The last token of `text` as an error names it: a string is "the string" (its content is
/// not repeated), anything else as written.
pub fn last_token(text: &str) -> Option<String> {
    let last = *tokens(text).last()?;
    Some(if last.kind == Kind::Text {
        "the string".to_string()
    } else {
        last.text.to_string()
    })
}

/// What a statement that failed to parse at `pos` (of its text), where the parser expected
/// `rules`, most likely meant; `None` when no habit explains it.
pub fn explain(text: &str, pos: usize, rules: &[Rule]) -> Option<Habit> {
    let tokens = tokens(text);
    if tokens.first().is_some_and(|t| t.is("select")) {
        if let Some(h) = sql(&tokens) {
            return Some(h);
        }
    }
    let at = tokens.iter().find(|t| t.end() > pos);
    if let Some(h) = at.and_then(|t| symbol(t, rules)) {
        return Some(h);
    }
    if let Some(h) = parentheses(&tokens) {
        return Some(h);
    }
    missing_eps(&tokens, at, rules)
}

fn habit(message: impl Into<String>, help: impl Into<String>, token: &Token<'_>) -> Habit {
    Habit {
        message: message.into(),
        help: help.into(),
        start: token.start,
        end: token.end(),
    }
}

/// A value is expected: a double-quoted name, or an operator from another language.
fn symbol(t: &Token<'_>, rules: &[Rule]) -> Option<Habit> {
    let value_expected = rules
        .iter()
        .any(|r| matches!(r, Rule::number | Rule::string | Rule::kw_true));
    if t.kind == Kind::Name && value_expected {
        let inner = &t.text[1..t.text.len().saturating_sub(1).max(1)];
        let quoted = format!("'{}'", inner.replace("\"\"", "\"").replace('\'', "''"));
        return Some(habit(
            "double quotes are for names (of columns and tables); a text value takes single quotes",
            format!("write {quoted}"),
            t,
        ));
    }
    if t.kind != Kind::Symbol {
        return None;
    }
    let (message, help) = match t.text {
        "&&" => (
            "dpq writes AND, not &&",
            "write a AND b, e.g. age < 30 AND sex = 'F'",
        ),
        "||" => (
            "dpq writes OR, not ||",
            "write a OR b, e.g. city = 'Rome' OR city = 'Milan'",
        ),
        "==" => ("a comparison takes one =, not ==", "write age = 30"),
        "=<" => ("dpq writes <=, not =<", "write age <= 30"),
        "=>" => ("dpq writes >=, not =>", "write age >= 30"),
        "!" => (
            "dpq writes NOT, not !",
            "write NOT (age < 30), or age != 30",
        ),
        _ => return None,
    };
    Some(habit(message, help, t))
}

/// A `(` never closed, or a `)` that closes nothing.
fn parentheses(tokens: &[Token<'_>]) -> Option<Habit> {
    let mut open: Vec<&Token<'_>> = Vec::new();
    for t in tokens.iter().filter(|t| t.kind == Kind::Symbol) {
        match t.text {
            "(" => open.push(t),
            ")" if open.pop().is_none() => {
                return Some(habit(
                    "this `)` closes nothing",
                    "remove it, or open the group it closes with `(`",
                    t,
                ))
            }
            _ => {}
        }
    }
    let unclosed = open.pop()?;
    Some(habit(
        "this `(` is never closed",
        "close the group with `)` where it ends",
        unclosed,
    ))
}

/// A statement that releases an answer but does not say what it may spend.
fn missing_eps(tokens: &[Token<'_>], at: Option<&Token<'_>>, rules: &[Rule]) -> Option<Habit> {
    if !rules.contains(&Rule::kw_with) {
        return None;
    }
    let first = tokens.first()?;
    if first.is("select") {
        return None;
    }
    let later_clause = |t: &Token<'_>| {
        ["prior", "mechanism", "plot", "noise", "gamma"]
            .iter()
            .any(|w| t.is(w))
    };
    let place = match at {
        None => tokens.last()?,
        Some(t) if later_clause(t) => t,
        Some(_) => return None,
    };
    let statement = first.text.to_uppercase();
    let within = if rules.contains(&Rule::kw_within) {
        ", or WITHIN 10 AT 95% to ask for an accuracy and spend what it takes"
    } else {
        ""
    };
    Some(Habit {
        message: format!("{statement} does not say what it may spend: it needs WITH EPS"),
        help: format!(
            "every answer from the data spends privacy budget: add WITH EPS 0.1 to spend 0.1 (smaller is more private, and noisier){within}"
        ),
        start: if at.is_none() { place.end() } else { place.start },
        end: place.end(),
    })
}

/// The private SQL forms, shown in errors about SQL.
const SQL_FORMS: &str = "dpq answers SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) COUNT(*) FROM t [WHERE ...] [GROUP BY ...], and SUM or AVG(col, contribution_bounds_per_group => (lo, hi)) likewise (docs/sql.md)";

/// What a `SELECT` asks that has no private form.
fn sql(tokens: &[Token<'_>]) -> Option<Habit> {
    for (i, t) in tokens.iter().enumerate() {
        let next = tokens.get(i + 1);
        if compared(tokens, i) {
            // A column that happens to be called `limit`, `join`, ...: not the SQL clause.
            continue;
        }
        let refused = if t.is("join") {
            "dpq answers over one table at a time: a JOIN can match one person's row with many rows of another table, so no bound on one person's influence holds"
        } else if t.is("order") && next.is_some_and(|n| n.is("by")) {
            "ORDER BY has no private form: dpq releases aggregates, and a count per group comes in the groups' declared order"
        } else if t.is("limit") {
            "LIMIT has no private form: which groups or rows it keeps would depend on the data"
        } else if t.is("having") {
            "HAVING has no private form: which groups it keeps would depend on their true values"
        } else if t.is("distinct") {
            "dpq counts rows, not distinct values: one row can change a count of distinct values by more than a row count's bound"
        } else if t.is("union") || t.is("intersect") || t.is("except") {
            "a SELECT asks one aggregate of one table; combine answers after they are released"
        } else if [
            "min",
            "max",
            "median",
            "percentile_cont",
            "stddev",
            "variance",
            "approx_quantiles",
        ]
        .iter()
        .any(|w| t.is(w))
            && next.is_some_and(|n| n.text == "(")
        {
            return Some(habit(
                format!("{} has no SQL form in dpq", t.text.to_uppercase()),
                "write dpq's own statement: MEDIAN age CLAMP (0, 120) WITH EPS 1; MIN and MAX likewise (docs/language.md)",
                t,
            ));
        } else {
            continue;
        };
        return Some(habit(refused, SQL_FORMS, t));
    }
    selected(tokens)
}

/// Whether the word at `i` is compared in a condition (`limit = 3`, `3 < limit`,
/// `join IN (...)`) or grouped by (`GROUP BY join`): a column's name, not a keyword.
fn compared(tokens: &[Token<'_>], i: usize) -> bool {
    let operator = |t: Option<&Token<'_>>| {
        t.is_some_and(|t| {
            (t.kind == Kind::Symbol
                && ["=", "!=", "<>", "<", "<=", ">", ">=", "=="].contains(&t.text))
                || t.is("in")
                || t.is("between")
                || t.is("not")
        })
    };
    operator(tokens.get(i + 1))
        || (i > 0 && operator(tokens.get(i - 1)) && !tokens[i - 1].is("not"))
        || (i > 0 && tokens[i - 1].is("by"))
}

/// The select list: `*`, a column list, or several aggregates.
fn selected(tokens: &[Token<'_>]) -> Option<Habit> {
    // After SELECT, and after WITH DIFFERENTIAL_PRIVACY OPTIONS (...) if written.
    let mut i = 1;
    if tokens.get(i).is_some_and(|t| t.is("with")) {
        let mut depth = 0usize;
        i += 1;
        while let Some(t) = tokens.get(i) {
            i += 1;
            match t.text {
                "(" => depth += 1,
                ")" if depth <= 1 => break,
                ")" => depth -= 1,
                _ => {}
            }
        }
    }
    let first = tokens.get(i)?;
    if first.text == "*" {
        return Some(habit(
            "dpq never returns rows: every answer is an aggregate released with noise",
            SQL_FORMS,
            first,
        ));
    }
    let aggregate = ["count", "sum", "avg"].iter().any(|w| first.is(w));
    if !aggregate && matches!(first.kind, Kind::Word | Kind::Name) {
        return Some(habit(
            "dpq never returns a row's values: a SELECT asks an aggregate",
            SQL_FORMS,
            first,
        ));
    }
    // A second aggregate after the first one's closing parenthesis.
    let mut depth = 0usize;
    for t in &tokens[i..] {
        match t.text {
            "(" => depth += 1,
            ")" => depth = depth.saturating_sub(1),
            "," if depth == 0 => {
                return Some(habit(
                    "a SELECT asks one aggregate: each is a release with its own epsilon",
                    "ask each aggregate in a SELECT of its own",
                    t,
                ))
            }
            _ if t.is("from") => break,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_statement_words_come_from_the_grammar() {
        let words = statement_words();
        for w in [
            "LOAD",
            "COUNT",
            "HISTOGRAM",
            "SUM",
            "MEAN",
            "SHARE",
            "MEDIAN",
            "SELECT",
            "EXPLAIN",
            "OUT OF RANGE",
        ] {
            assert!(words.contains(&w), "{w} missing from {words:?}");
        }
    }

    #[test]
    fn every_word_listed_starts_a_statement() {
        for w in statement_words() {
            let text = format!("{w} ?");
            let e = DpqParser::parse(Rule::statement, &text).expect_err("`?` ends no statement");
            let pos = match e.location {
                pest::error::InputLocation::Pos(p) => p,
                pest::error::InputLocation::Span((s, _)) => s,
            };
            assert!(pos > 0, "{w} does not start a statement");
        }
    }

    #[test]
    fn a_misspelling_is_found_and_a_stranger_is_not() {
        let words = ["COUNT", "CUBE", "CHOOSE", "HISTOGRAM"];
        assert_eq!(closest("COUTN", words), Some("COUNT"));
        assert_eq!(closest("histgram", words), Some("HISTOGRAM"));
        assert_eq!(closest("cube", words), Some("CUBE"));
        assert_eq!(closest("TABLE", words), None);
        assert_eq!(closest("x", words), None);
    }
}
