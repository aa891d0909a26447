//! One error enum per phase and one `Diagnostic` that renders any of them as `file:line:col: message`.
//!
//! No message carries a value from the data: errors about data speak of files, line numbers and
//! column names (the schema is public), never of cell contents or counts.

use crate::data::{ColumnType, DataError};
use crate::privacy::LedgerError;
use crate::privacy::MAX_UNIT_ROWS;
use crate::span::{locate, Span};
use rust_decimal::Decimal;

/// A statement that does not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SyntaxError {
    /// The parser met something else than what the grammar allows here.
    #[error("expected {expected}{}", after.as_ref().map(|a| format!(" after `{a}`")).unwrap_or_default())]
    Expected {
        /// What would have been accepted, in words ("a number", "EPS").
        expected: String,
        /// The token just before the error, if any.
        after: Option<String>,
        /// A likely fix: the keyword a misspelled word is closest to, or the statements there are.
        help: Option<String>,
        /// Where.
        span: Span,
    },
    /// A statement written as SQL or another language would write it: what dpq writes instead.
    #[error("{message}")]
    Habit {
        /// What is wrong, in words.
        message: String,
        /// What dpq writes.
        help: String,
        /// Where.
        span: Span,
    },
    /// A `'` string with no closing quote.
    #[error("this string has no closing quote")]
    UnclosedString {
        /// Where the string starts.
        span: Span,
    },
    /// A `"` name with no closing quote.
    #[error("this quoted name has no closing quote")]
    UnclosedName {
        /// Where the name starts.
        span: Span,
    },
    /// The same clause written twice.
    #[error("{clause} is given twice")]
    DuplicateClause {
        /// The clause.
        clause: &'static str,
        /// Where the second one is.
        span: Span,
    },
    /// A predicate with more conditions or values than the parser accepts.
    #[error("the condition has more than {limit} {what}")]
    TooLong {
        /// What was counted.
        what: &'static str,
        /// The limit.
        limit: usize,
        /// Where the condition starts.
        span: Span,
    },
    /// Parentheses nested deeper than the parser accepts.
    #[error("parentheses are nested more than {limit} levels deep")]
    TooDeep {
        /// The limit.
        limit: usize,
        /// Where the limit was passed.
        span: Span,
    },
}

/// A statement that parses but does not make sense against the session's tables.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CheckError {
    /// No table has been loaded or chosen.
    #[error("no table is in use")]
    NoCurrentTable {
        /// The statement.
        span: Span,
    },
    /// A SQL query dpq cannot answer as written, or a private SQL form missing a part.
    #[error("{message}")]
    Sql {
        /// Why, in words.
        message: String,
        /// What to write instead.
        help: String,
        /// Where.
        span: Span,
    },
    /// A condition that no row can meet, or that every value the schema allows meets: the
    /// answer is known before anything is spent.
    #[error("{message}")]
    Foregone {
        /// Why, from the schema alone.
        message: String,
        /// What to ask instead.
        help: String,
        /// The condition.
        span: Span,
    },
    /// A table name that no LOAD gave.
    #[error("unknown table `{name}`")]
    UnknownTable {
        /// The name written.
        name: String,
        /// The tables there are.
        known: Vec<String>,
        /// Where.
        span: Span,
    },
    /// A column that the table does not have.
    #[error("unknown column `{column}` in table `{table}`")]
    UnknownColumn {
        /// The name written.
        column: String,
        /// The table searched.
        table: String,
        /// Its columns.
        known: Vec<String>,
        /// Where.
        span: Span,
    },
    /// A literal of the wrong type for its column.
    #[error("column `{column}` is {column_type}, but is compared with {literal}")]
    TypeMismatch {
        /// The column.
        column: String,
        /// Its type.
        column_type: ColumnType,
        /// What it was compared with, in words.
        literal: &'static str,
        /// Where the literal is.
        span: Span,
    },
    /// An epsilon that is not a finite number greater than 0.
    #[error("epsilon must be a finite number greater than 0, not {text}")]
    InvalidEpsilon {
        /// The literal as written.
        text: String,
        /// Where.
        span: Span,
    },
    /// A rho that is not a finite number greater than 0, exact as a decimal.
    #[error(
        "rho must be a finite number greater than 0 with at most 28 decimal places, not {text}"
    )]
    InvalidRho {
        /// The literal as written.
        text: String,
        /// Where.
        span: Span,
    },
    /// `WITH RHO` on a table whose budget is in epsilon.
    #[error("table `{table}` accounts in epsilon (pure DP); WITH RHO draws Gaussian noise, charged in rho on a table that accounts in zCDP")]
    RhoNeedsZcdp {
        /// The table.
        table: String,
        /// Where.
        span: Span,
    },
    /// An epsilon with more digits than the budget can add exactly.
    #[error("epsilon {text} cannot be added to the budget exactly: at most 28 decimal places")]
    InexactEpsilon {
        /// The literal as written.
        text: String,
        /// Where.
        span: Span,
    },
    /// A probability outside (0, 1).
    #[error("{what} must lie strictly between 0 and 1, not {text}")]
    InvalidProbability {
        /// Which parameter.
        what: &'static str,
        /// The literal as written (with `%` when given as a percentage).
        text: String,
        /// Where.
        span: Span,
    },
    /// A quantity that must be a finite number greater than 0.
    #[error("{what} must be a finite number greater than 0, not {text}")]
    NotPositive {
        /// Which parameter.
        what: &'static str,
        /// The literal as written.
        text: String,
        /// Where.
        span: Span,
    },
    /// A number too large to be represented.
    #[error("the number {text} is out of range")]
    NumberOutOfRange {
        /// The literal as written.
        text: String,
        /// Where.
        span: Span,
    },
    /// `CUBE n` with n not a whole number in 1..=limit.
    #[error("a cube has a whole number of cells from 1 to {limit}, not {text}")]
    InvalidCells {
        /// The literal as written.
        text: String,
        /// The largest cube.
        limit: usize,
        /// Where.
        span: Span,
    },
    /// OBSERVE, ESTIMATE or PROB with no cube declared.
    #[error("no cube is declared")]
    NoCube {
        /// The statement.
        span: Span,
    },
    /// A `CUBE BY` declaration that cannot be a cube.
    #[error("{message}")]
    BadCube {
        /// What is wrong.
        message: String,
        /// Where.
        span: Span,
    },
    /// A count whose condition is not a union of the cube's cells.
    #[error("`{condition}` splits the cell {cell} of the cube")]
    SplitsCell {
        /// The condition, as written.
        condition: String,
        /// The cell, in words.
        cell: String,
        /// The fix: the cut or value to add.
        fix: String,
        /// The corrected declaration, when a cut or value would do.
        declaration: Option<String>,
        /// Where.
        span: Span,
    },
    /// A count over a column that is not a dimension of the cube.
    #[error("`{column}` is not a dimension of the cube of table `{table}`")]
    NotDimension {
        /// The column.
        column: String,
        /// The table.
        table: String,
        /// The cube's declaration.
        cube: String,
        /// Where.
        span: Span,
    },
    /// A linear combination of counts, or a count by cells, on a table with no cube.
    #[error("{what} needs a cube on table `{table}`")]
    NeedsCube {
        /// What was asked.
        what: &'static str,
        /// The table.
        table: String,
        /// Where.
        span: Span,
    },
    /// A linear query whose coefficients cancel on every cell.
    #[error("this query is 0 on every cell of the cube")]
    EmptyQuery {
        /// Where.
        span: Span,
    },
    /// A released linear query with a coefficient that is not a whole number.
    #[error("released linear queries take whole-number coefficients; {cell} gets {coefficient}")]
    NotWhole {
        /// The cell or the count, in words.
        cell: String,
        /// Its coefficient.
        coefficient: String,
        /// Where.
        span: Span,
    },
    /// A neighbour model dpq does not know.
    #[error("unknown neighbour model `{name}`")]
    UnknownNeighbours {
        /// The name given.
        name: String,
        /// Where.
        span: Span,
    },
    /// `PRIOR` without `N` on a table whose row count is private.
    #[error("the table's row count is private (NEIGHBOURS add_remove): PRIOR needs a public size")]
    NeedsPublicSize {
        /// Where.
        span: Span,
    },
    /// `PRIOR ... N` on a table whose row count is public.
    #[error("the table's row count is public (NEIGHBOURS replace): PRIOR takes no N")]
    SizeIsPublic {
        /// Where.
        span: Span,
    },
    /// A linear query whose answer does not depend on the data under the table's model.
    #[error("this query gives every cell the same coefficient: under NEIGHBOURS replace its answer is a multiple of the public row count, and there is nothing to release")]
    PublicAnswer {
        /// Where.
        span: Span,
    },
    /// A column declared twice in `COLUMNS (...)`.
    #[error("column `{column}` is declared twice in COLUMNS")]
    DeclaredTwice {
        /// The name.
        column: String,
        /// The second declaration.
        span: Span,
    },
    /// `COLUMNS (...)` on a source that names and types its own columns.
    #[error("COLUMNS is for CSV files: {source_kind} names and types its own columns")]
    ColumnsNotCsv {
        /// What the source is (`a Parquet file`, `a PostgreSQL table`).
        source_kind: &'static str,
        /// The COLUMNS clause.
        span: Span,
    },
    /// `DELIMITER` or `DECIMAL` on a source that is not CSV text.
    #[error("{clause} says how CSV text is read: {source_kind} is not CSV text")]
    NotCsvText {
        /// The clause (`DELIMITER`, `DECIMAL`).
        clause: &'static str,
        /// What the source is (`Parquet data`, `a PostgreSQL table`).
        source_kind: &'static str,
        /// The clause's string.
        span: Span,
    },
    /// A `DELIMITER` or `DECIMAL` that cannot read a file.
    #[error("{error}")]
    CsvFormat {
        /// What is wrong with it.
        error: crate::data::FormatError,
        /// The clause's string.
        span: Span,
    },
    /// A declared name under `NO HEADER`, where the columns are named by position.
    #[error("with NO HEADER the file's columns are named c1, c2, ... by position, and COLUMNS declares them by those names, not `{column}`")]
    DeclaredNoHeader {
        /// The name declared.
        column: String,
        /// The declaration.
        span: Span,
    },
    /// `PRIVACY UNIT col` naming a column that `COLUMNS (...)` leaves out.
    #[error("PRIVACY UNIT {column}: COLUMNS keeps the declared columns only, and `{column}` is not one of them")]
    UnitNotDeclared {
        /// The unit column.
        column: String,
        /// The unit clause.
        span: Span,
    },
    /// A public domain that does not fit its column's declared type.
    #[error("column `{column}` is declared {column_type}, and {domain} is for {fits} columns")]
    DomainType {
        /// The column.
        column: String,
        /// Its declared type.
        column_type: ColumnType,
        /// The domain's form (`BETWEEN`, `IN`).
        domain: &'static str,
        /// The types it fits.
        fits: &'static str,
        /// The domain.
        span: Span,
    },
    /// `BETWEEN lo AND hi` with lo above hi: no value would be kept.
    #[error("the domain of column `{column}` is empty: BETWEEN takes the low end first")]
    DomainEmpty {
        /// The column.
        column: String,
        /// The declaration.
        span: Span,
    },
    /// `PRIVACY UNIT col` without the bound on each unit's rows.
    #[error("PRIVACY UNIT {column} needs a bound on each unit's rows: add MAX ROWS k (at most k rows of each {column} are kept, and every sensitivity is k times a row's)")]
    UnitUnbounded {
        /// The unit column.
        column: String,
        /// The clause.
        span: Span,
    },
    /// A bound on a unit's rows that is not a whole number in range.
    #[error("MAX ROWS takes a whole number from 1 to {max}, not {text}", max = MAX_UNIT_ROWS)]
    UnitBound {
        /// The bound as written.
        text: String,
        /// Where.
        span: Span,
    },
    /// A privacy unit under `NEIGHBOURS replace`.
    #[error("a privacy unit is added or removed with all its rows, and their number varies, so the table's size is private: a table with PRIVACY UNIT is under NEIGHBOURS add_remove")]
    UnitModel {
        /// The NEIGHBOURS clause.
        span: Span,
    },
    /// A chart of more bars than it can draw.
    #[error("a chart draws at most {max} bars; this histogram has {parts}: drop PLOT or ask for fewer parts", max = crate::output::plot::MAX_BARS)]
    TooManyBars {
        /// The parts asked for.
        parts: usize,
        /// The PLOT clause.
        span: Span,
    },
    /// A clause that does not apply to this form of the statement.
    #[error("{message}")]
    NotApplicable {
        /// What does not apply, and to what.
        message: &'static str,
        /// Where.
        span: Span,
    },
    /// A list of coefficients of the wrong length.
    #[error("the cube has {expected} cells, but {found} coefficients are given")]
    VectorLength {
        /// Cells of the cube.
        expected: usize,
        /// Coefficients given.
        found: usize,
        /// Where.
        span: Span,
    },
    /// A measurement whose coefficients are all zero (sensitivity 0).
    #[error("a measurement needs at least one coefficient other than 0")]
    ZeroQuery {
        /// The statement.
        span: Span,
    },
    /// A seed that is not a whole number in 0..2^64.
    #[error("a seed must be a whole number from 0 to 18446744073709551615, not {text}")]
    InvalidSeed {
        /// The literal as written.
        text: String,
        /// Where.
        span: Span,
    },
    /// A mechanism name dpq does not know.
    #[error("unknown mechanism `{name}`")]
    UnknownMechanism {
        /// The name written.
        name: String,
        /// Where.
        span: Span,
    },
    /// A number outside the range a statement accepts.
    #[error("{what} must be {bounds}, not {text}")]
    OutOfBounds {
        /// What the number is.
        what: &'static str,
        /// What is accepted.
        bounds: String,
        /// The number as written.
        text: String,
        /// Where.
        span: Span,
    },
    /// `WITHIN w%` with no `FOR c`.
    #[error("a relative half-width needs an assumed count")]
    RelativeWithoutCount {
        /// Where.
        span: Span,
    },
    /// `WITHIN h` (absolute) with a `FOR c` that would be ignored.
    #[error("FOR applies only to a relative half-width such as WITHIN 20%")]
    CountWithAbsolute {
        /// Where.
        span: Span,
    },
}

/// A well-formed statement that could not be carried out. Nothing was spent or recorded, but
/// for `AnswerNotRecorded`, which says so.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    /// The query would spend more than the table's remaining budget.
    #[error("budget exceeded on table `{table}`: this query needs {unit} {requested}, {remaining} remains of {total}")]
    BudgetExceeded {
        /// The table.
        table: String,
        /// What its budget counts: `epsilon`, or `rho` (zCDP).
        unit: &'static str,
        /// What the query would spend, in that unit (a pure release on a zCDP table is
        /// charged `eps^2 / 2`).
        requested: Decimal,
        /// What remains.
        remaining: Decimal,
        /// The total.
        total: Decimal,
        /// The statement.
        span: Span,
    },
    /// Another session changed the table's neighbour model after the statement was checked.
    #[error("the neighbour model of table `{table}` was changed by another session since this statement was checked; nothing was spent")]
    ModelChanged {
        /// The table.
        table: String,
        /// The statement.
        span: Span,
    },
    /// `SET BUDGET` in another unit once answers are out.
    #[error("table `{table}` has releases accounted in {accounting}: how its budget composes is fixed once answers are out")]
    AccountingFixed {
        /// The table.
        table: String,
        /// The unit it accounts in.
        accounting: &'static str,
        /// The statement.
        span: Span,
    },
    /// Another session set the table's budget in epsilon after a Gaussian statement was
    /// checked against its rho.
    #[error("table `{table}` no longer accounts in rho (another session set its budget in epsilon since this statement was checked); nothing was spent")]
    AccountingChanged {
        /// The table.
        table: String,
        /// The statement.
        span: Span,
    },
    /// A served dataset's total, shared by all its analysts, has too little left.
    #[error("the dataset `{table}` has too little budget left for all its analysts{}", dataset_numbers(.shown))]
    DatasetBudgetExceeded {
        /// The dataset, by the name analysts use.
        table: String,
        /// Its spending after the query and its total, when its policy shows its budget.
        shown: Option<(Decimal, Decimal)>,
        /// The statement.
        span: Span,
    },
    /// A statement the curator's policy does not allow an analyst of a served dataset.
    #[error("not allowed here: {what}")]
    NotPermitted {
        /// What was refused, and by what rule.
        what: String,
        /// The statement.
        span: Span,
    },
    /// `SET BUDGET` below what is already spent.
    #[error("the budget of table `{table}` cannot be set to {total}: {spent} is already spent")]
    BudgetBelowSpent {
        /// The table.
        table: String,
        /// The total asked for.
        total: Decimal,
        /// Already spent.
        spent: Decimal,
        /// The statement.
        span: Span,
    },
    /// An accuracy requirement whose epsilon is 0 or infinite in floating point.
    #[error("this requirement gives an epsilon of {eps:e}, which no query can use")]
    UnusableEpsilon {
        /// The epsilon computed.
        eps: f64,
        /// The statement.
        span: Span,
    },
    /// An accuracy requirement whose rho (a Gaussian release on a zCDP table) is 0 or
    /// infinite in floating point, or beyond what a budget can hold.
    #[error("this requirement gives a rho of {rho:e}, which no query can use")]
    UnusableRho {
        /// The rho computed.
        rho: f64,
        /// The statement.
        span: Span,
    },
    /// A Gaussian release whose noise the exact sampler cannot draw on a grid of at most
    /// `2^-10` of its standard deviation (its variance's fraction too fine, or its rho far
    /// too large).
    #[error("Gaussian noise for rho {rho} cannot be drawn exactly on a grid of 2^-10 of its standard deviation (its variance, {sigma2}, has too fine a fraction for the exact sampler, or is too small)")]
    GaussianGrid {
        /// The rho asked.
        rho: Decimal,
        /// The variance parameter the ledger gives it, as a fraction.
        sigma2: String,
        /// The statement.
        span: Span,
    },
    /// A query the history cannot estimate.
    #[error("the history cannot estimate this query: {cells}")]
    NotEstimable {
        /// Which cells lack evidence, in words.
        cells: String,
        /// The statement.
        span: Span,
    },
    /// A measurement that would spend past the budget of some cell.
    #[error("budget exceeded: this measurement would bring cell {cell} to {after} of a budget of {total}")]
    CellBudgetExceeded {
        /// The first cell (1-based) that would pass the budget.
        cell: usize,
        /// Its spending after the measurement.
        after: Decimal,
        /// The budget.
        total: Decimal,
        /// The statement.
        span: Span,
    },
    /// A query that would bring some cell of a table's cube past the budget.
    #[error("budget exceeded on table `{table}`: this query would bring the cell {cell} to {after} of a budget of {total}")]
    CellsExceeded {
        /// The table.
        table: String,
        /// The first cell that would pass the budget, in words.
        cell: String,
        /// Its spending after the query.
        after: Decimal,
        /// The total.
        total: Decimal,
        /// The statement.
        span: Span,
    },
    /// Under `replace`: a release that would bring the exchange of a row between two cells
    /// past the budget.
    #[error("budget exceeded{}: this {} would bring the cost of a row moving between the cells {first} and {second} to {after} of a budget of {total} (NEIGHBOURS replace). In plain words: answering would let someone compare these two groups more precisely than the budget allows", table.as_ref().map(|t| format!(" on table `{t}`")).unwrap_or_default(), if table.is_some() { "query" } else { "measurement" })]
    PairExceeded {
        /// The table; `None` for the teaching cube.
        table: Option<String>,
        /// A cell of one side, in words.
        first: String,
        /// A cell of the other side, in words.
        second: String,
        /// The pair's cost after the release.
        after: Decimal,
        /// The total.
        total: Decimal,
        /// The statement.
        span: Span,
    },
    /// A release on data that a seeded release exposed.
    #[error("the data of table `{table}` was exposed by a seeded release (whoever knows the seed can recover its true counts): its budget is used up for good")]
    Exposed {
        /// The table.
        table: String,
        /// The statement.
        span: Span,
    },
    /// A neighbour model other than the one the data's releases were made under.
    #[error("the data of table `{table}` keeps NEIGHBOURS {current}: {releases} release(s) were made under it")]
    NeighboursFixed {
        /// The table.
        table: String,
        /// The model recorded.
        current: String,
        /// How many releases were made.
        releases: usize,
        /// The statement.
        span: Span,
    },
    /// `NEIGHBOURS add_remove` (or a privacy unit) asked of data whose ledger is `replace`:
    /// every `LOAD` under `replace` showed the exact row count, which `add_remove` keeps
    /// private.
    #[error("the data of table `{table}` keeps NEIGHBOURS replace: its exact row count n was shown when it was loaded under it, and add_remove (which a privacy unit needs) keeps n private; a count once shown cannot be made private again")]
    CountShown {
        /// The table.
        table: String,
        /// The statement.
        span: Span,
    },
    /// A served dataset whose policy declares no privacy unit, over a ledger that records one
    /// (a ledger's unit is never removed: its rows would be read unbounded).
    #[error("the ledger of dataset `{table}` records {current}, and its policy declares no privacy unit: declare privacy_unit and max_rows_per_unit as recorded (a unit, once recorded, is never removed)")]
    UnitRecorded {
        /// The dataset.
        table: String,
        /// The unit recorded.
        current: String,
        /// The statement.
        span: Span,
    },
    /// A privacy unit other than the one the data's releases were made under.
    #[error("the data of table `{table}` keeps {current}: answers were released under it")]
    UnitFixed {
        /// The table.
        table: String,
        /// The unit recorded, as a clause (or "no privacy unit").
        current: String,
        /// The statement.
        span: Span,
    },
    /// A table whose data has a privacy unit, asked under `NEIGHBOURS replace`.
    #[error("the data of table `{table}` has {unit}: a unit is added or removed with all its rows, so its model is NEIGHBOURS add_remove")]
    UnitModel {
        /// The table.
        table: String,
        /// The unit, as a clause.
        unit: String,
        /// The statement.
        span: Span,
    },
    /// The data's privacy unit is not the one the table's rows were bounded with.
    #[error("the privacy unit of the data of table `{table}` is now {current}, not what its rows were read with; nothing was spent: LOAD the file again (under another name) to read it so")]
    UnitChanged {
        /// The table.
        table: String,
        /// The unit now recorded, as a clause (or "no privacy unit").
        current: String,
        /// The statement.
        span: Span,
    },
    /// A recorded privacy unit over a table that reads the file otherwise than it was
    /// declared over (with or without `NO HEADER`).
    #[error("the data of table `{table}` has {unit}, declared over the file read another way (with or without NO HEADER, or with another DELIMITER or DECIMAL), where its column's name may name another column or its values group other rows; nothing was spent: LOAD it as the unit was declared, or name its unit with PRIVACY UNIT while nothing is released")]
    UnitReading {
        /// The table.
        table: String,
        /// The unit, as a clause.
        unit: String,
        /// The statement.
        span: Span,
    },
    /// A privacy unit naming no column of the table.
    #[error("PRIVACY UNIT {column}: table `{table}` has no such column")]
    UnitColumn {
        /// The column named.
        column: String,
        /// The table.
        table: String,
        /// The statement.
        span: Span,
    },
    /// Ctrl-C at the prompt: the statement did not run (those before it ran to their end).
    #[error("interrupted (Ctrl-C): {what}; nothing was spent")]
    Interrupted {
        /// What did not run.
        what: String,
        /// The statement.
        span: Span,
    },
    /// The cube a ledger records no longer fits the data file's columns.
    #[error("the ledger declares a cube this table does not fit: {message}")]
    CubeUnusable {
        /// Why.
        message: String,
        /// The statement.
        span: Span,
    },
    /// A linear query whose largest possible answer (from public facts: `n` and the
    /// coefficients) is too large to release exactly on its noise grid.
    #[error(
        "this query's answers can reach {bound}, too large to release exactly with this epsilon"
    )]
    TooLarge {
        /// `n` times the sum of the absolute coefficients.
        bound: String,
        /// The statement.
        span: Span,
    },
    /// The cube changed under the statement (another session declared one).
    #[error("the cube of table `{table}` was changed by another session; run the statement again")]
    CubeChanged {
        /// The table.
        table: String,
        /// The statement.
        span: Span,
    },
    /// `CUBE` again once measurements were recorded.
    #[error("a cube with measurements is already declared")]
    CubeInUse {
        /// The statement.
        span: Span,
    },
    /// `SET SEED` after noise was drawn in the session.
    #[error("SET SEED must come before the first noisy answer of the session")]
    SeedAfterNoise {
        /// The statement.
        span: Span,
    },
    /// `LOAD ... AS name` when `name` is taken.
    #[error("a table named `{name}` is already loaded")]
    TableExists {
        /// The name.
        name: String,
        /// Where.
        span: Span,
    },
    /// The ledger of the table's data file cannot be used; nothing was spent.
    #[error("{error}{}", if matches!(error, LedgerError::Io { .. }) { "; nothing was spent" } else { "" })]
    Ledger {
        /// Why.
        error: LedgerError,
        /// The statement.
        span: Span,
    },
    /// The noise was drawn but its answer could not be recorded: the epsilon is spent (the
    /// spending was recorded first) and the answer is not shown.
    #[error(
        "epsilon {eps} is spent, but the answer could not be recorded and is not shown: {error}"
    )]
    AnswerNotRecorded {
        /// The epsilon spent.
        eps: Decimal,
        /// Why.
        error: LedgerError,
        /// The statement.
        span: Span,
    },
    /// A statistic that cannot be released here (its source, or its parameters); nothing
    /// was spent.
    #[error("{message}; nothing was spent")]
    StatisticUnavailable {
        /// Why.
        message: String,
        /// The statement.
        span: Span,
    },
    /// A simulation that cannot run (its parameters are beyond what it supports).
    #[error("SIMULATE cannot run: {message}")]
    Simulation {
        /// Why.
        message: String,
        /// The statement.
        span: Span,
    },
    /// A chart that cannot be written where asked.
    #[error("cannot write the chart {path}: {reason}")]
    PlotNotWritten {
        /// The file.
        path: String,
        /// Why.
        reason: String,
        /// Where the file was named.
        span: Span,
    },
    /// The CSV file could not be loaded; no table was created.
    #[error("cannot load {path}: {error}")]
    Load {
        /// The file.
        path: String,
        /// Why.
        error: DataError,
        /// The path literal.
        span: Span,
    },
    /// A privacy unit asked of a table whose rows are not in memory.
    #[error("a privacy unit keeps at most k rows of each unit, which needs the rows in memory, and table `{table}` reads its rows from {kind} at each question: load the data as CSV to bound a privacy unit")]
    UnitSource {
        /// The table.
        table: String,
        /// Where its rows are (`parquet`).
        kind: String,
        /// The statement.
        span: Span,
    },
    /// The rows of a table that are read again at each question (Parquet files, a database
    /// table) could not be read; nothing was spent.
    #[error("the rows of table `{table}` could not be read: {error}; nothing was spent")]
    SourceFailed {
        /// The table.
        table: String,
        /// Why.
        error: DataError,
        /// The statement.
        span: Span,
    },
}

/// Any error of a statement.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// It did not parse.
    #[error(transparent)]
    Syntax(#[from] SyntaxError),
    /// It did not check.
    #[error(transparent)]
    Check(#[from] CheckError),
    /// It could not run.
    #[error(transparent)]
    Eval(#[from] EvalError),
}

impl Error {
    /// The kind of error, as one word a program can branch on: the name of the Python
    /// exception it raises (`dpq.BudgetExceeded`), and `class` in a served run's error.
    pub fn class(&self) -> &'static str {
        use CheckError as C;
        use EvalError as E;
        match self {
            Error::Syntax(_) => "SyntaxError",
            Error::Check(
                C::NoCurrentTable { .. } | C::UnknownTable { .. } | C::UnknownColumn { .. },
            ) => "UnknownName",
            Error::Check(_) => "InvalidQuery",
            Error::Eval(e) => match e {
                E::BudgetExceeded { .. }
                | E::DatasetBudgetExceeded { .. }
                | E::CellBudgetExceeded { .. }
                | E::CellsExceeded { .. }
                | E::PairExceeded { .. } => "BudgetExceeded",
                E::Load { .. }
                | E::SourceFailed { .. }
                | E::UnitReading { .. }
                | E::UnitColumn { .. }
                | E::UnitSource { .. } => "DataError",
                E::Ledger { .. } | E::AnswerNotRecorded { .. } => "LedgerError",
                E::NotPermitted { .. } => "NotPermitted",
                E::Interrupted { .. } => "Interrupted",
                _ => "Refused",
            },
        }
    }

    /// Where in the source the error points.
    pub fn span(&self) -> Span {
        match self {
            Error::Syntax(e) => match e {
                SyntaxError::Expected { span, .. }
                | SyntaxError::Habit { span, .. }
                | SyntaxError::UnclosedString { span }
                | SyntaxError::UnclosedName { span }
                | SyntaxError::TooDeep { span, .. }
                | SyntaxError::DuplicateClause { span, .. }
                | SyntaxError::TooLong { span, .. } => *span,
            },
            Error::Check(e) => match e {
                CheckError::NoCurrentTable { span }
                | CheckError::UnknownTable { span, .. }
                | CheckError::Sql { span, .. }
                | CheckError::Foregone { span, .. }
                | CheckError::UnknownColumn { span, .. }
                | CheckError::TypeMismatch { span, .. }
                | CheckError::InvalidEpsilon { span, .. }
                | CheckError::InexactEpsilon { span, .. }
                | CheckError::InvalidRho { span, .. }
                | CheckError::RhoNeedsZcdp { span, .. }
                | CheckError::InvalidProbability { span, .. }
                | CheckError::NotPositive { span, .. }
                | CheckError::OutOfBounds { span, .. }
                | CheckError::InvalidSeed { span, .. }
                | CheckError::NumberOutOfRange { span, .. }
                | CheckError::InvalidCells { span, .. }
                | CheckError::NoCube { span }
                | CheckError::VectorLength { span, .. }
                | CheckError::BadCube { span, .. }
                | CheckError::SplitsCell { span, .. }
                | CheckError::NotDimension { span, .. }
                | CheckError::NeedsCube { span, .. }
                | CheckError::EmptyQuery { span }
                | CheckError::TooManyBars { span, .. }
                | CheckError::UnitUnbounded { span, .. }
                | CheckError::DeclaredTwice { span, .. }
                | CheckError::ColumnsNotCsv { span, .. }
                | CheckError::NotCsvText { span, .. }
                | CheckError::CsvFormat { span, .. }
                | CheckError::DeclaredNoHeader { span, .. }
                | CheckError::DomainType { span, .. }
                | CheckError::DomainEmpty { span, .. }
                | CheckError::UnitNotDeclared { span, .. }
                | CheckError::UnitBound { span, .. }
                | CheckError::UnitModel { span }
                | CheckError::NotWhole { span, .. }
                | CheckError::NotApplicable { span, .. }
                | CheckError::UnknownNeighbours { span, .. }
                | CheckError::NeedsPublicSize { span }
                | CheckError::SizeIsPublic { span }
                | CheckError::PublicAnswer { span }
                | CheckError::ZeroQuery { span }
                | CheckError::UnknownMechanism { span, .. }
                | CheckError::RelativeWithoutCount { span }
                | CheckError::CountWithAbsolute { span } => *span,
            },
            Error::Eval(e) => match e {
                EvalError::BudgetExceeded { span, .. }
                | EvalError::DatasetBudgetExceeded { span, .. }
                | EvalError::ModelChanged { span, .. }
                | EvalError::AccountingChanged { span, .. }
                | EvalError::AccountingFixed { span, .. }
                | EvalError::NotPermitted { span, .. }
                | EvalError::BudgetBelowSpent { span, .. }
                | EvalError::TableExists { span, .. }
                | EvalError::SeedAfterNoise { span }
                | EvalError::UnusableEpsilon { span, .. }
                | EvalError::UnusableRho { span, .. }
                | EvalError::GaussianGrid { span, .. }
                | EvalError::Ledger { span, .. }
                | EvalError::AnswerNotRecorded { span, .. }
                | EvalError::Simulation { span, .. }
                | EvalError::StatisticUnavailable { span, .. }
                | EvalError::PlotNotWritten { span, .. }
                | EvalError::NotEstimable { span, .. }
                | EvalError::CellBudgetExceeded { span, .. }
                | EvalError::CubeInUse { span }
                | EvalError::CellsExceeded { span, .. }
                | EvalError::UnitFixed { span, .. }
                | EvalError::UnitChanged { span, .. }
                | EvalError::UnitModel { span, .. }
                | EvalError::UnitColumn { span, .. }
                | EvalError::UnitReading { span, .. }
                | EvalError::PairExceeded { span, .. }
                | EvalError::Exposed { span, .. }
                | EvalError::NeighboursFixed { span, .. }
                | EvalError::CountShown { span, .. }
                | EvalError::UnitRecorded { span, .. }
                | EvalError::CubeChanged { span, .. }
                | EvalError::CubeUnusable { span, .. }
                | EvalError::Interrupted { span, .. }
                | EvalError::TooLarge { span, .. }
                | EvalError::Load { span, .. }
                | EvalError::SourceFailed { span, .. }
                | EvalError::UnitSource { span, .. } => *span,
            },
        }
    }

    /// A fix, where one is known.
    pub fn help(&self) -> Option<String> {
        match self {
            Error::Syntax(SyntaxError::Expected { help: Some(h), .. }) => Some(h.clone()),
            Error::Syntax(SyntaxError::Habit { help, .. }) => Some(help.clone()),
            Error::Syntax(SyntaxError::Expected { after: None, expected, .. })
                if expected.starts_with("a statement") =>
            {
                Some("type `help` for the list of statements".into())
            }
            Error::Syntax(SyntaxError::UnclosedString { .. }) => {
                Some("strings are written in single quotes; write '' for a quote inside".into())
            }
            Error::Syntax(_) => None,
            Error::Check(e) => match e {
                CheckError::NoCurrentTable { .. } => {
                    Some("LOAD 'file.csv'; first, or USE a loaded table".into())
                }
                CheckError::Sql { help, .. } | CheckError::Foregone { help, .. } => {
                    Some(help.clone())
                }
                CheckError::UnknownTable { known, .. } if known.is_empty() => {
                    Some("no table is loaded yet: LOAD 'file.csv' AS name;".into())
                }
                CheckError::UnknownTable { name, known, .. } => Some(format!(
                    "{}loaded tables: {}",
                    did_you_mean(name, known),
                    known.join(", ")
                )),
                CheckError::UnknownColumn { column, known, .. } => Some(format!(
                    "{}columns: {}",
                    did_you_mean(column, known),
                    known.join(", ")
                )),
                CheckError::TypeMismatch { column_type, .. } => Some(match column_type {
                    ColumnType::Integer | ColumnType::Float => "compare it with a number".into(),
                    ColumnType::Text => "compare it with a quoted string such as 'F'".into(),
                    ColumnType::Boolean => "compare it with TRUE or FALSE".into(),
                }),
                CheckError::DomainType { .. } => Some(
                    "a number column takes BETWEEN low AND high, a text column IN ('a', 'b'), and a boolean column no domain"
                        .into(),
                ),
                CheckError::DeclaredNoHeader { .. } => Some(
                    "declare the columns as c1 integer, c2 text, ... (any of them, in any order)"
                        .into(),
                ),
                CheckError::CsvFormat { error, .. } => match error {
                    crate::data::FormatError::DecimalIsDelimiter => Some(
                        "files with decimal commas mostly separate fields with `;`: LOAD it with DELIMITER ';' DECIMAL ','"
                            .into(),
                    ),
                    crate::data::FormatError::Decimal => None,
                    _ => Some(
                        "DELIMITER ';', DELIMITER '|' or DELIMITER '\\t' (a tab), for instance"
                            .into(),
                    ),
                },
                CheckError::InvalidEpsilon { .. } => {
                    Some("smaller epsilon means more noise and more privacy; 0.1 is common".into())
                }
                CheckError::UnknownMechanism { .. } => {
                    Some("mechanisms: laplace (the default), geometric and staircase; Gaussian noise is WITH RHO r on a table that accounts in zCDP".into())
                }

                CheckError::RelativeWithoutCount { .. } => Some(
                    "add FOR c with an assumed count, e.g. FOR 100; the true count is private".into(),
                ),
                CheckError::NoCube { .. } => Some(
                    "declare the cells first: CUBE BY age (30, 65); over the current table, or CUBE 4; for teaching"
                        .into(),
                ),
                CheckError::SplitsCell {
                    fix, declaration, ..
                } => Some(match declaration {
                    Some(d) => format!("{fix}: {d};"),
                    None => fix.clone(),
                }),
                CheckError::NotDimension { column, cube, .. } => Some(format!(
                    "add it to the cube: {cube}, {column} (...); refines the cube, so every release over it keeps its cost per cell and stays evidence (docs/troubleshooting.md)"
                )),
                CheckError::NeedsCube { .. } => Some(
                    "declare the cells first, e.g. CUBE BY age (30, 65); the sensitivity of a linear query is computed over them"
                        .into(),
                ),
                CheckError::UnknownNeighbours { .. } => Some(
                    "NEIGHBOURS replace (a row replaced; the row count is public) or NEIGHBOURS add_remove (a row added or removed; it is private)"
                        .into(),
                ),
                CheckError::NeedsPublicSize { .. } => Some(
                    "give a public size, e.g. PRIOR p=0.3 N 28000: a known bound or published figure, never the true row count"
                        .into(),
                ),
                CheckError::SizeIsPublic { .. } => {
                    Some("drop N: the Binomial prior uses the table's public row count".into())
                }
                CheckError::CountWithAbsolute { .. } => {
                    Some("write WITHIN 20% FOR 100, or drop FOR".into())
                }
                CheckError::RhoNeedsZcdp { .. } => Some(
                    "SET BUDGET RHO 0.5 makes the table account in zCDP, before anything is released (docs/privacy.md, \"zCDP\"); or ask WITH EPS"
                        .into(),
                ),
                _ => None,
            },
            Error::Eval(e) => match e {
                EvalError::BudgetExceeded { unit, .. } => Some(format!(
                    "ask with a smaller {}, or repeat an earlier query: its recorded answer is free; to try statements without spending, start dpq with --practice (docs/troubleshooting.md)",
                    if *unit == "rho" { "RHO (or EPS)" } else { "EPS" }
                )),
                EvalError::ModelChanged { .. } => {
                    Some("run the statement again: it is checked under the model now recorded".into())
                }
                EvalError::GaussianGrid { .. } => Some(
                    "ask WITH RHO of six significant digits or fewer (CHOOSE RHO gives such a rho)"
                        .into(),
                ),
                EvalError::DatasetBudgetExceeded { .. } => Some(
                    "the dataset's budget is shared by all its analysts and is nearly spent; repeat an earlier query (free) or ESTIMATE from the history"
                        .into(),
                ),
                EvalError::SeedAfterNoise { .. } => Some(
                    "reseeding would let two queries share their noise; use --seed N or SET SEED first"
                        .into(),
                ),
                EvalError::TableExists { .. } => {
                    Some("USE it, or LOAD the file AS another name".into())
                }
                EvalError::CellsExceeded { .. } => Some(
                    "ask with a smaller EPS, ask about other cells, or ESTIMATE the query from the history for free"
                        .into(),
                ),
                EvalError::Exposed { .. } => Some(
                    "seeded sessions (SET SEED, --seed) are for teaching and tests: use --practice, or a copy of other data"
                        .into(),
                ),
                EvalError::NeighboursFixed { .. } => Some(
                    "the releases' costs are accounted under that model; load it without NEIGHBOURS"
                        .into(),
                ),
                EvalError::PairExceeded { .. } => Some(
                    "ask with a smaller EPS, or ESTIMATE the query from the history for free"
                        .into(),
                ),
                EvalError::Ledger { error, .. } => ledger_help(error),
                EvalError::Load { error, .. } => match error {
                    DataError::DeclaredColumnMissing { .. } => Some(
                        "COLUMNS declares columns by the names of the file's header row, exactly as written (case included), or with NO HEADER as c1, c2, ... up to the file's number of columns"
                            .into(),
                    ),
                    DataError::NotAHeader => Some(
                        "if the file has no header row, load it with NO HEADER: its columns are then named c1, c2, ...; if it has one, give its columns distinct plain names; if its fields are separated by tabs, LOAD it with DELIMITER '\\t'"
                            .into(),
                    ),
                    DataError::Changed { .. } => Some(
                        "something wrote to the file while it was loaded; LOAD it again once the file is complete"
                            .into(),
                    ),
                    DataError::NotAFile { .. } => {
                        Some("LOAD reads regular files and pipes".into())
                    }
                    DataError::PipeWithoutWriter { .. } => {
                        Some("start the program that writes to the pipe, then LOAD it".into())
                    }
                    DataError::PipeIdle { .. } => Some(
                        "write the data to a file first, then LOAD the file".into(),
                    ),
                    _ => None,
                },
                _ => None,
            },
        }
    }

    /// The error as a diagnostic, ready to render.
    pub fn diagnostic(&self) -> Diagnostic {
        Diagnostic {
            message: self.to_string(),
            span: Some(self.span()),
            help: self.help(),
        }
    }
}

/// A message with a position and an optional fix, rendered the same way everywhere.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    /// What is wrong, in plain words.
    pub message: String,
    /// Where, if known.
    pub span: Option<Span>,
    /// A fix, if known.
    pub help: Option<String>,
}

impl Diagnostic {
    /// `file:line:col: message`, the source line, a caret under the span, and `help:`.
    pub fn render(&self, origin: &str, source: &str) -> String {
        self.render_from(origin, source, 1)
    }

    /// As [`Diagnostic::render`], for a `source` whose first line is line `first_line` of its
    /// origin (the REPL hands over one statement at a time).
    pub fn render_from(&self, origin: &str, source: &str, first_line: usize) -> String {
        // At a terminal's width the message and the help wrap at spaces (a terminal would cut
        // their words) and the source line is shown as a window that fits.
        let fit = |text: String| crate::output::fit(&text);
        let Some(span) = self.span else {
            let mut out = format!("{origin}: {}", self.message);
            if let Some(h) = &self.help {
                out.push_str(&format!("\nhelp: {h}"));
            }
            return fit(out);
        };
        let (lc, line) = locate(source, span.start);
        let line_number = lc.line + first_line - 1;
        let mut out = fit(format!(
            "{origin}:{line_number}:{}: {}",
            lc.column, self.message
        ));
        out.push('\n');
        let gutter = line_number.to_string();
        let pad = " ".repeat(gutter.len());
        let width = {
            let start = span.start.min(source.len());
            let end = span.end.clamp(start, source.len());
            let text = source.get(start..end).unwrap_or("");
            text.lines().next().unwrap_or("").chars().count().max(1)
        };
        // A long line is shown as a window around the caret: 120 characters, or what a
        // terminal's width leaves beside the gutter and two `…`.
        let shown_chars =
            crate::output::width().map_or(120, |w| w.saturating_sub(gutter.len() + 5).max(20));
        let before = shown_chars / 2;
        let chars: Vec<char> = line.chars().collect();
        let from = (lc.column - 1).saturating_sub(before);
        let to = (from + shown_chars).min(chars.len());
        let mut shown: String = chars[from.min(to)..to].iter().collect();
        let mut caret_at = lc.column - 1 - from;
        if from > 0 {
            shown.insert(0, '…');
            caret_at += 1;
        }
        if to < chars.len() {
            shown.push('…');
        }
        let width = width.min(shown_chars - before);
        out.push_str(&format!("{pad} |\n{gutter} | {shown}\n"));
        out.push_str(&format!(
            "{pad} | {}{}",
            " ".repeat(caret_at),
            "^".repeat(width)
        ));
        if let Some(h) = &self.help {
            out.push('\n');
            out.push_str(&fit(format!("{pad} = help: {h}")));
        }
        out
    }

    /// The 1-based line and column of the span in `source`, if any.
    pub fn line_col(&self, source: &str) -> Option<(usize, usize)> {
        self.span.map(|s| {
            let (lc, _) = locate(source, s.start);
            (lc.line, lc.column)
        })
    }
}

/// The numbers of a dataset's refusal, when its budget is shown to its analysts.
fn dataset_numbers(shown: &Option<(Decimal, Decimal)>) -> String {
    match shown {
        Some((after, total)) => {
            format!(": this query would bring its spending to {after} of {total}")
        }
        None => String::new(),
    }
}

/// What to do about a ledger that cannot be used. dpq never repairs or resets one itself.
/// `did you mean `age`? ` when one of `known` is a likely spelling of `written`, else nothing.
fn did_you_mean(written: &str, known: &[String]) -> String {
    match crate::spelling::closest(written, known.iter().map(String::as_str)) {
        Some(name) => format!("did you mean `{name}`? "),
        None => String::new(),
    }
}

fn ledger_help(error: &LedgerError) -> Option<String> {
    Some(match error {
        LedgerError::Damaged { .. } => "restore the ledger from a backup; dpq never repairs or resets a ledger: moving it aside would start this data's budget anew, which is for the data's curator to decide".into(),
        LedgerError::Missing { .. } => "restore it from a backup; without it dpq cannot tell what was spent".into(),
        LedgerError::WrongSecret { .. } => "restore this state directory's own secret from a backup".into(),
        LedgerError::TwoLedgers { .. } => "load the file from a new path if it is a copy of the data loaded before; if it is an edit of this path's data, that data's curator decides".into(),
        LedgerError::OldLayout { .. } => "keep that directory for its records and give dpq a new one (--state-dir DIR or DPQ_STATE_DIR)".into(),
        LedgerError::TooLong { .. } => "shorten the statement".into(),
        LedgerError::Io { .. } => return None,
    })
}
