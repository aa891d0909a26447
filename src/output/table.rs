//! Rendering of results as comfy-table tables with short explanations, for people.

use super::width::{is_path, lines_of, shorten_middle, SHORTEST_PATH};
use super::{
    BudgetReport, ChooseEpsResult, CountResult, HistoryReport, Neighbours, Output, PairReport,
    Response, TableInfo,
};
use crate::plan::ChoosePlan;
use crate::privacy::{Accounting, Mechanism};
use comfy_table::{presets, ColumnConstraint, ContentArrangement, Table, Width};
use rust_decimal::Decimal;
use std::fmt::Write as _;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The result as text for a terminal or a transcript: a title, a table, notes.
pub fn render_table(response: &Response) -> String {
    let mut out = match &response.output {
        Output::Loaded(info) => format!("Loaded table {}.\n{}", info.name, table_info(info)),
        Output::Using(info) => format!("Using table {}.\n{}", info.name, table_info(info)),
        Output::Described(info) => table_info(info),
        Output::Tables(tables) => tables_list(tables),
        Output::Budget(b) => budget(b),
        Output::History(h) => history(h),
        Output::SeedSet { seed } => {
            format!("Seed set to {seed}: from now on results are reproducible and NOT private.")
        }
        Output::DeltaSet { delta } => {
            // Six digits unless they round it (0.9999999999999999 is not 1).
            let short = num(*delta);
            let shown = if short.parse::<f64>() == Ok(*delta) {
                short
            } else {
                format!("{delta:e}")
            };
            format!(
                "Delta set to {shown}: a budget in rho is also shown as (epsilon, delta) at this delta."
            )
        }
        Output::Count(c) => count(c),
        Output::Histogram(h) => histogram(h),
        Output::Sum(r) => sum(r),
        Output::Statistic(r) => statistic(r),
        Output::Binned(b) => binned(b),
        Output::ChooseEps(c) => choose_eps(c),
        Output::Cube(c) => cube(c),
        Output::Estimate(e) => estimate(e),
        Output::Answered(a) => answered(a),
        Output::Simulate(r) => simulate(r),
        Output::OutOfRange(r) => out_of_range(r),
        Output::CompareNoise(r) => compare_noise(r),
        Output::CompareAccounting(r) => compare_accounting(r),
        Output::CompareSmooth(r) => compare_smooth(r),
        Output::Explained(e) => explained(e),
        Output::Prob(p) => prob(p),
    };
    if response.practice {
        out.push_str("\nnote: practice: spending is kept in memory only and ends with the session");
    }
    if let Some(seed) = response.seed {
        if !matches!(response.output, Output::SeedSet { .. }) {
            let _ = write!(
                out,
                "\nnote: seed {seed} is in force: this result is reproducible and NOT private"
            );
        }
    }
    if super::layout() == super::Layout::Lines {
        // A table's records end with a blank line, which the last one does not need.
        out.truncate(out.trim_end_matches('\n').len());
    }
    if let Some(w) = super::width() {
        out = super::width::wrap(&out, w);
    }
    // Names and statements come from files and users: nothing printed may drive the terminal.
    crate::data::escape_controls(&out).into_owned()
}

/// A table of a result: drawn in boxes, or as records of `column = value` lines (see
/// [`super::Layout`]), whichever this thread draws in when it is shown. At a terminal's width
/// its cells wrap between words, never inside a word or a number: each column is at least as
/// wide as its widest word, a path too long for that is shortened in its middle, and a table
/// that cannot fit so is shown as records.
struct Grid {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

fn new_table(header: &[&str]) -> Grid {
    Grid {
        header: header.iter().map(|h| (*h).to_string()).collect(),
        rows: Vec::new(),
    }
}

/// The widest word of `text` (what lies between spaces and line breaks), in columns.
fn widest_word(text: &str) -> usize {
    text.split_whitespace()
        .map(UnicodeWidthStr::width)
        .max()
        .unwrap_or(0)
}

/// The columns a cell's padding takes, one on each side.
const PADDING: usize = 2;

impl Grid {
    fn add_row<S: ToString>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Self {
        self.rows
            .push(cells.into_iter().map(|c| c.to_string()).collect());
        self
    }

    fn columns(&self) -> usize {
        self.rows
            .iter()
            .map(Vec::len)
            .chain([self.header.len()])
            .max()
            .unwrap_or(0)
    }

    /// The cells of column `c`, its header's first.
    fn column(&self, c: usize) -> impl Iterator<Item = &str> {
        self.header
            .get(c)
            .into_iter()
            .chain(self.rows.iter().filter_map(move |r| r.get(c)))
            .map(String::as_str)
    }

    /// Each column's least width for no word of it to be broken, padding included; and the
    /// least again when its paths (cells that are one path) are shortened as far as they may.
    fn least_widths(&self) -> Vec<(usize, usize)> {
        (0..self.columns())
            .map(|c| {
                let whole = self.column(c).map(widest_word).max().unwrap_or(0);
                let shortened = self
                    .column(c)
                    .map(|cell| {
                        if is_path(cell) {
                            cell.width().min(SHORTEST_PATH)
                        } else {
                            widest_word(cell)
                        }
                    })
                    .max()
                    .unwrap_or(0);
                (whole + PADDING, shortened + PADDING)
            })
            .collect()
    }

    /// The table in boxes for `width` columns: each column as wide as its widest word at
    /// least, the widest paths shortened as far as needed (never below [`SHORTEST_PATH`]);
    /// `None` when even so it is wider than `width`.
    fn fitted_boxes(&self, width: usize) -> Option<Table> {
        let least = self.least_widths();
        // Borders: one left of every column, and one at the right.
        let borders = least.len() + 1;
        let mut widths: Vec<usize> = least.iter().map(|(whole, _)| *whole).collect();
        let mut excess = (widths.iter().sum::<usize>() + borders).saturating_sub(width);
        // Paths give up what is needed, the widest column first.
        while excess > 0 {
            let c = (0..widths.len())
                .filter(|&c| widths[c] > least[c].1)
                .max_by_key(|&c| widths[c])?;
            let give = (widths[c] - least[c].1).min(excess);
            widths[c] -= give;
            excess -= give;
        }
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(u16::try_from(width).unwrap_or(u16::MAX));
        let shorten = |c: usize, cell: &String| {
            let room = widths[c] - PADDING;
            if is_path(cell) && cell.width() > room {
                shorten_middle(cell, room)
            } else {
                cell.clone()
            }
        };
        if !self.header.is_empty() {
            t.set_header(self.header.iter().enumerate().map(|(c, h)| shorten(c, h)));
        }
        for row in &self.rows {
            t.add_row(row.iter().enumerate().map(|(c, cell)| shorten(c, cell)));
        }
        for (c, w) in widths.iter().enumerate() {
            if let Some(column) = t.column_mut(c) {
                let least = u16::try_from(*w).unwrap_or(u16::MAX);
                column.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(least)));
            }
        }
        Some(t)
    }

    /// The table in boxes, each row on a line (no width), or fitted to `width`.
    fn boxes(&self) -> Option<Table> {
        if let Some(w) = super::width() {
            return self.fitted_boxes(w);
        }
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled);
        if !self.header.is_empty() {
            t.set_header(self.header.iter());
        }
        for row in &self.rows {
            t.add_row(row.iter());
        }
        Some(t)
    }

    /// The records: a record per row, its cells as `(column, value)`. A table without a
    /// header is a list of names and values already (its first cell names the row), so it is
    /// one record.
    fn records(&self) -> Vec<Vec<(&str, String)>> {
        if self.header.is_empty() {
            return vec![self
                .rows
                .iter()
                .map(|r| {
                    let name = r.first().map_or("", String::as_str);
                    (name, r.get(1..).map(|v| v.join(" ")).unwrap_or_default())
                })
                .collect()];
        }
        self.rows
            .iter()
            .map(|r| {
                self.header
                    .iter()
                    .zip(r)
                    .map(|(h, v)| (h.as_str(), v.clone()))
                    .collect()
            })
            .collect()
    }

    /// A record per row: `name = value` lines, names padded to one width, a value too long
    /// for a terminal's width continued under its start (broken between words, a path
    /// shortened in its middle). A table with a header shows a `-[ RECORD n ]---` line before
    /// each record, as psql's expanded display does.
    fn lines(&self) -> String {
        let records = self.records();
        let pad = records
            .iter()
            .flatten()
            .map(|(n, _)| n.width())
            .max()
            .unwrap_or(0);
        let indent = " ".repeat(pad + 3);
        // What a value may take of a line at a terminal's width (at least a path's shortest).
        let room = super::width().map(|w| w.saturating_sub(pad + 3).max(SHORTEST_PATH));
        let records: Vec<Vec<String>> = records
            .iter()
            .map(|record| {
                record
                    .iter()
                    .map(|(name, value)| {
                        let gap = " ".repeat(pad - name.width());
                        let value = match room {
                            Some(room) if is_path(value) => vec![shorten_middle(value, room)],
                            Some(room) => lines_of(value, room),
                            None => value.split('\n').map(str::to_string).collect(),
                        };
                        format!("{name}{gap} = {}", value.join(&format!("\n{indent}")))
                    })
                    .collect()
            })
            .collect();
        // Each record's line as wide as the widest line of all (at most the terminal's).
        let widest = records
            .iter()
            .flatten()
            .flat_map(|l| l.split('\n'))
            .map(UnicodeWidthStr::width)
            .max()
            .unwrap_or(0);
        let widest = super::width().map_or(widest, |w| widest.min(w));
        let mut out = String::new();
        for (i, lines) in records.iter().enumerate() {
            if !self.header.is_empty() {
                let label = format!("-[ RECORD {} ]", i + 1);
                let dashes = widest.saturating_sub(label.width()).max(1);
                out.push_str(&format!("{label}{}\n", "-".repeat(dashes)));
            }
            for line in lines {
                out.push_str(line);
                out.push('\n');
            }
        }
        // The table is apart from what follows it by a blank line.
        out
    }

    /// The table of a result rendered for no width (as a dpq server renders it: each row on
    /// a line), read back from its lines: the first `┌` to its `└`. `None` when `block` is no
    /// such table.
    fn parse(block: &[&str]) -> Option<Grid> {
        let (top, rest) = block.split_first()?;
        // The columns' right borders, in columns from the left.
        let borders: Vec<usize> = top
            .chars()
            .enumerate()
            .filter(|(_, c)| matches!(c, '┬' | '┐'))
            .map(|(i, _)| i)
            .collect();
        let cells = |line: &str| -> Option<Vec<String>> {
            let mut cells = Vec::with_capacity(borders.len());
            let mut chars = line.chars();
            if chars.next()? != '│' {
                return None;
            }
            let (mut at, mut cell) = (1, String::new());
            for c in chars {
                if borders.get(cells.len()) == Some(&at) {
                    if !matches!(c, '┆' | '│') {
                        return None;
                    }
                    cells.push(cell.trim().to_string());
                    cell.clear();
                } else {
                    cell.push(c);
                }
                at += c.width().unwrap_or(0);
            }
            (cells.len() == borders.len()).then_some(cells)
        };
        let mut header: Vec<String> = Vec::new();
        let mut rows: Vec<Vec<String>> = Vec::new();
        for line in rest {
            if line.starts_with('└') {
                break;
            }
            if line.starts_with('╞') {
                // What came before is the header (a header wrapped over lines, joined).
                header = vec![String::new(); borders.len()];
                for row in rows.drain(..) {
                    for (h, part) in header.iter_mut().zip(row) {
                        if !part.is_empty() {
                            *h = if h.is_empty() {
                                part
                            } else {
                                format!("{h} {part}")
                            };
                        }
                    }
                }
                continue;
            }
            rows.push(cells(line)?);
        }
        Some(Grid { header, rows })
    }
}

impl std::fmt::Display for Grid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (super::layout(), self.boxes()) {
            (super::Layout::Boxes, Some(table)) => write!(f, "{table}"),
            // Too narrow a terminal for a word a line: records, as `.mode line` shows them.
            _ => f.write_str(&self.lines()),
        }
    }
}

/// A result rendered for no width (as a dpq server renders it) fitted to this thread's width
/// and layout as local dpq renders it there: its tables drawn anew from their cells, its
/// prose wrapped. A table's row wrapped over lines (a cell of several lines) is read as rows
/// of their own.
pub fn refit(text: &str) -> String {
    if super::width().is_none() && super::layout() == super::Layout::Boxes {
        return text.to_string();
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let end = lines[i..]
            .iter()
            .position(|l| l.starts_with('└'))
            .map(|n| i + n);
        let grid = match end {
            Some(end) if lines[i].starts_with('┌') => Grid::parse(&lines[i..=end]),
            _ => None,
        };
        match (grid, end) {
            (Some(grid), Some(end)) => {
                // Records end with a line break, as local dpq's do before the next line.
                out.push(grid.to_string());
                i = end + 1;
            }
            _ => {
                out.push(lines[i].to_string());
                i += 1;
            }
        }
    }
    let mut out = out.join("\n");
    if super::layout() == super::Layout::Lines {
        out.truncate(out.trim_end_matches('\n').len());
    }
    match super::width() {
        Some(w) => super::width::wrap(&out, w),
        None => out,
    }
}

fn table_info(info: &TableInfo) -> String {
    let mut t = new_table(&["column", "type"]);
    for (name, ty) in &info.columns {
        t.add_row(vec![name.clone(), ty.to_string()]);
    }
    let changed = if info.data_changed {
        "\nnote: the file's content changed since its ledger last saw it: spending so far still counts, and answers given for the old content are not reused"
    } else {
        ""
    };
    let n = match &info.unit {
        Some(u) => format!(
            "n private (PRIVACY UNIT {}: at most {} row(s) of each {} are kept, and neighbouring tables differ by one {}'s rows, added or removed)",
            crate::data::escape_name(&u.column),
            u.max_rows,
            crate::data::escape_name(&u.column),
            crate::data::escape_name(&u.column),
        ),
        None => rows(info.n),
    };
    let rho = match info.accounting {
        crate::privacy::Accounting::Zcdp => " rho",
        crate::privacy::Accounting::Pure => "",
    };
    let mut out = format!(
        "{t}\ntable {} from {}: {}, budget{rho} {} spent of {}, {} remaining",
        info.name,
        info.path,
        n,
        dec(info.budget.spent),
        dec(info.budget.total),
        dec(info.budget.remaining)
    ) + changed;
    for w in &info.warnings {
        let _ = write!(out, "\nwarning: {w}");
    }
    out
}

/// How a linear query's sensitivity follows from its coefficients over cells.
pub fn sensitivity_rule(neighbours: Neighbours) -> &'static str {
    match neighbours {
        Neighbours::AddRemove => {
            "NEIGHBOURS add_remove: its largest absolute coefficient over cells (Xiao and Xiong 2012, Lemma 2.1)"
        }
        Neighbours::Replace => {
            "NEIGHBOURS replace: a row moves between two cells, so the largest difference of two cells' coefficients, cells outside the query counting 0"
        }
    }
}

/// A table's row count as shown: public under `replace`, private under `add_remove`.
fn rows(n: Option<u64>) -> String {
    match n {
        Some(n) => format!("n = {n} rows (public)"),
        None => "n private (NEIGHBOURS add_remove: neighbouring tables differ by one added or removed row)".to_string(),
    }
}

fn tables_list(tables: &[TableInfo]) -> String {
    if tables.is_empty() {
        return "No tables are loaded.".into();
    }
    let mut t = new_table(&[
        "table",
        "file",
        "n",
        "columns",
        "budget spent",
        "remaining",
        "",
    ]);
    for info in tables {
        t.add_row(vec![
            info.name.clone(),
            info.path.clone(),
            info.n
                .map_or_else(|| "private".to_string(), |n| n.to_string()),
            info.columns.len().to_string(),
            match info.accounting {
                crate::privacy::Accounting::Zcdp => format!("rho {}", dec(info.budget.spent)),
                crate::privacy::Accounting::Pure => dec(info.budget.spent),
            },
            dec(info.budget.remaining),
            if info.current {
                "current".into()
            } else {
                String::new()
            },
        ]);
    }
    t.to_string()
}

fn budget(b: &BudgetReport) -> String {
    let zcdp = b.accounting == Accounting::Zcdp;
    let total = if zcdp { "total rho" } else { "total epsilon" };
    let mut t = new_table(&["table", total, "spent", "remaining"]);
    t.add_row(vec![
        b.table.clone(),
        dec(b.total),
        dec(b.spent),
        dec(b.remaining),
    ]);
    let mut out = t.to_string();
    if let Some((eps, delta)) = b.equivalent {
        let _ = write!(
            out,
            "\nzCDP: rho {} spent is ({}, {})-DP (the tight conversion of Canonne, Kamath and Steinke 2020; SET DELTA changes delta).",
            dec(b.spent),
            num(eps),
            num(delta)
        );
    }
    if let Some(path) = &b.ledger {
        let _ = write!(out, "\nledger: {path}");
    }
    if b.lines.is_empty() {
        out.push_str("\nNothing spent yet.");
    } else if zcdp {
        let mut lines = new_table(&["#", "statement", "noise", "rho"]);
        for l in &b.lines {
            let noise = match l.mechanism {
                Mechanism::Gaussian => "gaussian".to_string(),
                m => format!("{m}, eps {} (rho eps^2/2)", dec(l.eps)),
            };
            lines.add_row(vec![
                l.seq.to_string(),
                short(&l.statement),
                noise,
                dec(l.cost),
            ]);
        }
        let _ = write!(out, "\n{lines}");
        if b.cells.is_none() {
            out.push_str("\nSpent is the sum of the rhos above (zCDP composes by adding rho).");
        }
    } else {
        let mut lines = new_table(&["#", "statement", "epsilon"]);
        for l in &b.lines {
            lines.add_row(vec![l.seq.to_string(), short(&l.statement), dec(l.eps)]);
        }
        let _ = write!(out, "\n{lines}");
        if b.cells.is_none() {
            out.push_str("\nSpent is the sum of the epsilons above (sequential composition).");
        }
    }
    if b.cells.is_none() {
        out.push_str(match (b.neighbours, &b.unit) {
            (_, Some(_)) => "\nNEIGHBOURS add_remove: neighbouring tables differ by one privacy unit's rows, added or removed; n is private.",
            (Neighbours::Replace, None) => "\nNEIGHBOURS replace: neighbouring tables differ by one replaced row; n is public.",
            (Neighbours::AddRemove, None) => "\nNEIGHBOURS add_remove: neighbouring tables differ by one added or removed row; n is private.",
        });
    }
    if let Some(cells) = &b.cells {
        // Every cell when few; otherwise those that spent something.
        const SHOWN: usize = 40;
        let mut t = new_table(&["cell", "spent", "remaining"]);
        let mut hidden = 0;
        for (name, spent) in cells {
            if cells.len() <= SHOWN || !spent.is_zero() {
                t.add_row(vec![name.clone(), dec(*spent), dec(b.total - *spent)]);
            } else {
                hidden += 1;
            }
        }
        let _ = write!(out, "\n{t}");
        if hidden > 0 {
            let _ = write!(out, "\n({hidden} more cells have spent nothing)");
        }
        out.push_str(&match (&b.neighbours, &b.pair) {
            (Neighbours::Replace, Some(pair)) if zcdp => format!(
                "\nNEIGHBOURS replace: a row may move from any cell to any other, so the history costs its costliest pair of cells, sum_i rho_i (H_ij - H_ik)^2 / S2_i^2 (zCDP: the Gaussian release of rho_i costs (H_ij - H_ik)^2 / (2 sigma_i^2) for that move; a pure release of eps_i, (eps_i |H_ij - H_ik| / S_i)^2 / 2): {}. Each cell's line above is its cost against a cell no answer touched.",
                pair_cost(pair)
            ),
            (Neighbours::AddRemove, _) if zcdp => "\nNEIGHBOURS add_remove: each cell spends sum_i rho_i H_ij^2 / S2_i^2 (zCDP: a Gaussian release costs H_ij^2 / (2 sigma_i^2) for a row added to cell j; a pure one (eps_i |H_ij| / S_i)^2 / 2; for a privacy unit of k rows, k^2 times that): answers over disjoint cells compose in parallel, and spent is the largest cell's.".to_string(),
            (Neighbours::Replace, None) => "\nNEIGHBOURS replace: a row may move from any cell to any other, so the history costs its costliest pair of cells; nothing is spent yet.".to_string(),
            (Neighbours::Replace, Some(pair)) => format!(
                "\nNEIGHBOURS replace: a row may move from any cell to any other, so the history costs its costliest pair of cells, sum_i (eps_i/S_i) |H_ij - H_ik|: {}. Each cell's line above is its cost against a cell no answer touched.",
                pair_cost(pair)
            ),
            (_, _) if b.unit.is_some() => format!(
                "\nNEIGHBOURS add_remove with {u}: a unit's rows may lie in up to {k} cells, so each cell's line is {k} B_j = {k} (alpha ./ S)' |H| (Xiao and Xiong 2012, Theorem 5.5, for a unit with all its rows in that cell; S is {k} times a row's sensitivity), and a unit loses at most the largest.",
                u = super::unit_text(b.unit.as_ref()),
                k = b.unit.as_ref().map_or(1, |u| u.max_rows)
            ),
            _ => "\nNEIGHBOURS add_remove: each cell spends B = (alpha ./ S)' |H| (Xiao and Xiong 2012, Theorem 5.5): answers over disjoint cells compose in parallel, and spent is the largest cell's.".to_string(),
        });
    }
    if let Some(d) = &b.dataset {
        let _ = write!(
            out,
            "\nThe budget above and its lines are this analyst's own. The dataset's budget, shared by all its analysts: {} spent of {}, {} remaining.",
            dec(d.spent),
            dec(d.total),
            dec(d.remaining)
        );
    }
    if b.exposed {
        out.push_str("\nExposed: a seeded release (SET SEED, --seed) was made on this data; whoever knows the seed can recover its true counts, so its budget is used up for good.");
    }
    out
}

/// The costliest pair and what the history costs, in words: exact, or an upper bound and the
/// costliest pair known.
fn pair_cost(pair: &PairReport) -> String {
    if pair.exact {
        return format!(
            "{} and {} cost {}{}",
            pair.first,
            pair.second,
            dec(pair.cost),
            before_cube(pair)
        );
    }
    format!(
        "it costs at most {}{}, an upper bound (the history splits the cells into more than {} classes, too many to keep the cost of every pair, and its bounds do not meet); the costliest pair known, {} and {}, costs {}",
        dec(pair.cost),
        before_cube(pair),
        crate::privacy::EXACT_CLASSES,
        pair.first,
        pair.second,
        dec(pair.lower)
    )
}

/// What part of a pair's cost comes from answers released before the cube, in words: a count
/// made before the cube may have counted any cells, so it charges every pair in full.
fn before_cube(pair: &PairReport) -> String {
    if pair.before_cube.is_zero() {
        String::new()
    } else if pair.before_cube >= pair.cost {
        ", all of it from answers released before the cube or outside it (which may have counted any cells, so each charges every pair in full: every pair costs as much)".to_string()
    } else {
        format!(
            ", {} of it from answers released before the cube or outside it (which may have counted any cells, so each charges every pair in full)",
            dec(pair.before_cube)
        )
    }
}

fn history(h: &HistoryReport) -> String {
    if h.releases.is_empty() {
        return format!("No answers have been released from table {} yet.", h.table);
    }
    let rows = h.releases.iter().any(|r| r.row.is_some());
    let mut header = vec!["#", "statement"];
    if rows {
        header.push("H (row over cells)");
    }
    // A Gaussian release (zCDP) spends a rho, not an epsilon: said in its cell.
    let gaussian = h.releases.iter().any(|r| r.mechanism == "gaussian");
    let spent = if gaussian {
        "alpha (epsilon) or rho"
    } else {
        "alpha (epsilon)"
    };
    header.extend([spent, "S", "mechanism", "y (noisy answer)"]);
    let mut t = new_table(&header);
    for r in &h.releases {
        let mut line = vec![r.seq.to_string(), short(&r.statement)];
        if rows {
            line.push(r.row.as_deref().map_or_else(|| "(all cells)".into(), query));
        }
        line.extend([
            if r.mechanism == "gaussian" {
                format!("rho {}", dec(r.eps))
            } else {
                dec(r.eps)
            },
            num(r.sensitivity),
            r.mechanism.clone(),
            r.noisy
                .map_or_else(|| "(not recorded)".to_string(), |x| fixed(x, 2)),
        ]);
        t.add_row(line);
    }
    let mut out = t.to_string();
    if rows {
        out.push_str("\nCells x1, x2, ... are numbered as SHOW CUBE lists them; a release without a row was made before the cube (or outside it) and charges every cell.");
    }
    out
}

fn count(c: &CountResult) -> String {
    let mut t = new_table(&[]);
    let label = if c.plain {
        "noisy count"
    } else {
        "noisy answer"
    };
    t.add_row(vec![label.to_string(), fixed(c.noisy, 2)]);
    t.add_row(vec![
        "95% noise interval".to_string(),
        interval(c.interval95, 1),
    ]);
    if let Some(a) = &c.combined {
        t.add_row(vec![
            "combined estimate".to_string(),
            format!(
                "{} (the BLUE of this answer and the history)",
                fixed(a.estimate, 2)
            ),
        ]);
        t.add_row(vec![
            format!("{}% credible interval", percent(a.confidence)),
            interval(a.interval, 2),
        ]);
    }
    if let (Some(b), Some((lo, hi)), Some(p)) = (c.bayes, c.credible95, c.prior) {
        t.add_row(vec![
            "Bayes estimate".to_string(),
            format!(
                "{} (prior Binomial(n={}, p={}))",
                fixed(b, 2),
                c.size.unwrap_or_default(),
                num(p)
            ),
        ]);
        t.add_row(vec![
            "95% credible interval".to_string(),
            format!("[{lo}, {hi}]"),
        ]);
    }
    if let Some(p) = c.out_of_range {
        t.add_row(vec![
            "out of range".to_string(),
            format!(
                "outside [0, {}]; such answers occur with probability up to {}",
                c.size.unwrap_or_default(),
                num(p)
            ),
        ]);
    }
    let zcdp = c.accounting == Accounting::Zcdp;
    t.add_row(vec![
        if zcdp { "rho spent" } else { "epsilon spent" }.to_string(),
        if c.from_history {
            format!(
                "0 (identical to an earlier query: its recorded answer, {} {})",
                if c.sigma.is_some() { "rho" } else { "epsilon" },
                dec(c.eps)
            )
        } else if let Some(sigma) = c.sigma {
            format!(
                "{} (gaussian noise, sigma {}, on a grid of {})",
                dec(c.eps_spent),
                num(sigma),
                grid(c.grid)
            )
        } else if zcdp {
            format!(
                "{} (epsilon {} of {} noise, charged eps^2/2; {}, on a grid of {})",
                dec(c.eps_spent),
                dec(c.eps),
                c.mechanism,
                match c.gamma {
                    Some(g) => format!("gamma {}", num(g)),
                    None => format!("scale {}", num(c.scale)),
                },
                grid(c.grid)
            )
        } else {
            format!(
                "{} ({} noise, {}, on a grid of {})",
                dec(c.eps_spent),
                c.mechanism,
                match c.gamma {
                    Some(g) => format!("gamma {}", num(g)),
                    None => format!("scale {}", num(c.scale)),
                },
                grid(c.grid)
            )
        },
    ]);
    t.add_row(vec![
        "budget".to_string(),
        budget_words(c.budget_spent, c.budget_remaining, zcdp, c.equivalent),
    ]);
    let mut out = format!(
        "{} -- table {}, {}\n{t}",
        short(&c.statement),
        c.table,
        match c.n {
            Some(n) => format!("n = {n}"),
            None => "n private".to_string(),
        }
    );
    if c.plain && c.coverage95 != 0.95 {
        let _ = write!(
            out,
            "\nThe noise interval holds the true count with probability at least 0.95 over the noise ({:.6}: the noise takes whole values, so the smallest whole half-width that holds 95% holds a little more).",
            c.coverage95
        );
    } else if c.plain {
        out.push_str(
            "\nThe noise interval holds the true count with probability 0.95 over the noise.",
        );
    } else {
        let _ = write!(
            out,
            "\nA linear query of sensitivity S = {} ({}): noise scale {}. The interval holds the true value with probability 0.95.",
            num(c.sensitivity),
            sensitivity_rule(c.neighbours),
            if c.sigma.is_some() {
                "sigma = S/sqrt(2 rho)"
            } else {
                "S/eps"
            }
        );
    }
    if let Some(a) = &c.combined {
        let _ = write!(
            out,
            "\nThe combined estimate is the best linear unbiased estimate from this answer and the history; its {}% credible interval, from the exact distribution of its error, holds the true value with probability {} (Xiao and Xiong 2012, section 5).",
            percent(a.confidence),
            sig(a.confidence, 12)
        );
    }
    if let Some(e) = &c.explain {
        let _ = write!(out, "\nwhy: {e}");
    }
    if let Some(why) = &c.outside_cube {
        let _ = write!(
            out,
            "\nAnswered outside the cube ({why}): charged in full, {} {} on every cell{}.",
            if c.sigma.is_some() { "rho" } else { "epsilon" },
            dec(c.eps),
            if c.neighbours == Neighbours::Replace {
                " and pair"
            } else {
                ""
            }
        );
    }
    if c.bayes.is_some() {
        out.push_str(
            "\nThe Bayes estimate and credible interval combine the noisy answer with the prior (post-processing: free).",
        );
    }
    for w in &c.warnings {
        let _ = write!(out, "\nwarning: {w}");
    }
    if let Some(shape) = &c.posterior_shape {
        let _ = write!(
            out,
            "\nposterior of the true count, {} to {}: {}",
            shape.from,
            shape.to,
            super::plot::sparkline(&shape.masses, shape.masses.len())
        );
    }
    if let Some(g) = c.gamma {
        let _ = write!(
            out,
            "\nStaircase noise with inner width gamma = {} ({}).",
            num(g),
            if g <= 1.0 / 1024.0 {
                "the floor 2^-10: the variance-optimal width is narrower at this epsilon"
            } else {
                "the variance-optimal one, Geng and Viswanath 2012, on the grid"
            }
        );
    }
    plot_note(&mut out, c.plot.as_ref());
    out
}

fn histogram(h: &super::HistogramResult) -> String {
    let part = if h.grouped { "group" } else { "cell" };
    let mut t = new_table(&[part, "noisy count", "95% interval"]);
    for p in &h.parts {
        t.add_row(vec![
            p.name.clone(),
            fixed(p.noisy, 2),
            interval(p.interval95, 1),
        ]);
    }
    let mut out = format!("{} -- table {}\n{t}", short(&h.statement), h.table);
    let zcdp = h.accounting == Accounting::Zcdp;
    let unit = if zcdp { "rho" } else { "epsilon" };
    let spent = if h.from_history {
        format!(
            "0 (identical to an earlier histogram: its recorded answers, {} {})",
            if h.sigma.is_some() { "rho" } else { "epsilon" },
            dec(h.eps)
        )
    } else {
        format!(
            "{} for the whole vector ({} noise {} on every part, {}: {})",
            dec(h.eps_spent),
            h.mechanism,
            match h.sigma {
                Some(sigma) => format!("of standard deviation S2/sqrt(2 rho) = {}", num(sigma)),
                None if zcdp => format!(
                    "of epsilon {} (charged per part, eps^2/2 each over S^2) and scale S/eps = {}",
                    dec(h.eps),
                    num(h.scale)
                ),
                None => format!("of scale S/eps = {}", num(h.scale)),
            },
            if let Some(sigma) = h.sigma {
                let rho: f64 =
                    rust_decimal::prelude::ToPrimitive::to_f64(&h.eps).unwrap_or(f64::NAN);
                format!("S2 = {}", num(sigma * (2.0 * rho).sqrt()))
            } else {
                format!("S = {}", num(h.sensitivity))
            },
            match (h.neighbours, h.unit_rows) {
                (Neighbours::Replace, _) => "a replaced row moves two parts by 1 each".to_string(),
                (Neighbours::AddRemove, 0 | 1) =>
                    "an added or removed row moves one part by 1".to_string(),
                (Neighbours::AddRemove, k) => format!(
                    "a privacy unit adds or removes up to {k} rows, moving the parts by {k} in all"
                ),
            }
        )
    };
    let _ = write!(
        out,
        "\n{unit} spent: {spent}; budget: {} spent, {} remaining{}",
        dec(h.budget_spent),
        dec(h.budget_remaining),
        h.equivalent.map_or(String::new(), |(e, d)| format!(
            "; ({}, {})-DP so far",
            num(e),
            num(d)
        ))
    );
    if h.coverage95 == 0.95 {
        out.push_str("\nEach interval holds its true count with probability 0.95 over the noise.");
    } else {
        let _ = write!(
            out,
            "\nEach interval holds its true count with probability at least 0.95 ({:.6}: whole-valued noise).",
            h.coverage95
        );
    }
    out.push_str(
        "\nEvery part is released, empty or not. Each is a row of the history: ESTIMATE unions of them for free.",
    );
    plot_note(&mut out, h.plot.as_ref());
    out
}

fn binned(b: &super::BinnedResult) -> String {
    let what = match b.quantile {
        Some(0.5) => "median".to_string(),
        Some(q) => format!("{q}-quantile"),
        None => "mean".to_string(),
    };
    let mut header = vec!["bin", "estimated count", "variance"];
    let column = format!("P({what} in bin)");
    if b.holds.is_some() {
        header.push(&column);
    }
    let mut t = new_table(&header);
    for (k, (name, estimate, variance)) in b.bins.iter().enumerate() {
        let mut row = vec![name.clone(), fixed(*estimate, 2), num(*variance)];
        if let Some(holds) = &b.holds {
            row.push(chance(holds[k]));
        }
        t.add_row(row);
    }
    let said = match (b.quantile, &b.bin) {
        (Some(q), Some(bin)) => binned_quantile(b, &what, q, bin),
        _ => format!(
            "The mean of `{}` lies between {} and {} at the estimated counts: every value at its bin's least, and at its greatest (the outer bins closed by the clamp). With probability at least 0.95 it lies between {} and {} (the 2.5% quantile of the draws' least means, the 97.5% quantile of their greatest).",
            b.column,
            num(b.bounds.0),
            num(b.bounds.1),
            num(b.interval95.0),
            num(b.interval95.1)
        ),
    };
    format!(
        "{} -- table {}\n{t}\n{said}\nProbabilities under the noise of the releases (the flat prior of ESTIMATE), from {} draws of the bins' counts: each within ±0.007 at 95%. From the history's estimates of the bins (counts below 0 taken as 0). Spends nothing.",
        short(&b.statement),
        b.table,
        b.draws
    )
}

/// What a binned quantile says: its bin and that bin's probability, and its 95% set of bins.
fn binned_quantile(b: &super::BinnedResult, what: &str, q: f64, bin: &str) -> String {
    let end = |x: f64| {
        if x.is_infinite() {
            "unbounded".to_string()
        } else {
            num(x)
        }
    };
    let mut out = format!(
        "The {what} of `{}` lies in the bin {bin} (from {} to {}) with probability {}: the first bin where the estimated counts reach {} of their total.",
        b.column,
        end(b.bounds.0),
        end(b.bounds.1),
        chance(b.probability.unwrap_or(0.0)),
        num(q)
    );
    let set = b.bins95.as_deref().unwrap_or_default();
    let bins = match set {
        [one] => format!("the bin {one}"),
        [first, .., last] => format!("the bins {first} to {last}"),
        [] => "no bin".to_string(),
    };
    let range = format!("from {} to {}", end(b.interval95.0), end(b.interval95.1));
    if b.coverage95 < 0.95 {
        let _ = write!(
            out,
            " It lies in some bin with probability {} only: in the other draws no bin's count is above 0.",
            chance(b.coverage95)
        );
    } else if set.len() == 1 && set[0] == bin {
        out.push_str(" That bin alone holds it with probability at least 0.95.");
    } else {
        let _ = write!(
            out,
            " With probability at least 0.95 ({} in the draws) it lies in {bins} ({range}), the fewest consecutive bins that reach 0.95.",
            chance(b.coverage95)
        );
    }
    out
}

/// A probability from Monte Carlo draws, to the two decimals they vouch for (each within
/// ±0.007): below 0.01 and above 0.99 as bounds.
fn chance(p: f64) -> String {
    if p >= 0.995 {
        "> 0.99".to_string()
    } else if p < 0.005 {
        "< 0.01".to_string()
    } else {
        format!("{p:.2}")
    }
}

fn statistic(r: &super::StatisticResult) -> String {
    let mut t = new_table(&[]);
    let what = match r.column.as_deref() {
        Some(c) => format!("noisy {} of {c}", r.kind),
        None => "noisy share".to_string(),
    };
    // Whole numbers where the range is whole (an integer column): no decimals to read into.
    let whole = r.kind != "share" && r.range.0.fract() == 0.0 && r.range.1.fract() == 0.0;
    let shown = |x: f64| {
        if whole && x.fract() == 0.0 {
            fixed(x, 0)
        } else {
            fixed(x, 4)
        }
    };
    t.add_row(vec![what, shown(r.noisy)]);
    t.add_row(vec![
        format!("within [{}, {}]", num(r.range.0), num(r.range.1)),
        shown(r.within_range),
    ]);
    t.add_row(vec![
        "95% noise interval".to_string(),
        match r.interval95 {
            Some(i) => interval(i, 4),
            None => "not shown (it would reveal the data)".to_string(),
        },
    ]);
    let noise = match (r.gamma, r.scale) {
        (Some(g), _) => format!("smooth noise, gamma {}", num(g)),
        (None, Some(s)) => format!("{} noise, scale {}", r.noise, num(s)),
        (None, None) => format!("{} noise", r.noise),
    };
    t.add_row(vec![
        "epsilon spent".to_string(),
        if r.from_history {
            format!(
                "0 (identical to an earlier statement: its recorded answer, epsilon {})",
                dec(r.eps)
            )
        } else {
            format!("{} ({noise})", dec(r.eps_spent))
        },
    ]);
    t.add_row(vec![
        "budget".to_string(),
        format!(
            "{} spent, {} remaining",
            dec(r.budget_spent),
            dec(r.budget_remaining)
        ),
    ]);
    format!(
        "{} -- table {}\n{t}\nGlobal sensitivity {} (NEIGHBOURS {}). {}",
        short(&r.statement),
        r.table,
        num(r.sensitivity),
        r.neighbours,
        r.note
    )
}

fn sum(r: &super::SumResult) -> String {
    let mut t = new_table(&[]);
    let bounds = format!("clamped to [{}, {}]", num(r.clamp.0), num(r.clamp.1));
    if r.mean {
        t.add_row(vec![
            "mean".to_string(),
            match r.value {
                Some(v) => format!("{} ({bounds})", fixed(v, 4)),
                None => "none: the noisy count is below 1".to_string(),
            },
        ]);
        t.add_row(vec![
            "95% interval".to_string(),
            format!("{} (at least 0.95)", interval(r.interval95, 4)),
        ]);
        t.add_row(vec!["noisy sum".to_string(), fixed(r.noisy_sum, 2)]);
        t.add_row(vec![
            "noisy count".to_string(),
            fixed(r.noisy_count.unwrap_or(f64::NAN), 2),
        ]);
    } else {
        t.add_row(vec![
            "noisy sum".to_string(),
            format!("{} ({bounds})", fixed(r.noisy_sum, 2)),
        ]);
        t.add_row(vec![
            "95% noise interval".to_string(),
            interval(r.interval95, 2),
        ]);
    }
    let zcdp = r.accounting == Accounting::Zcdp;
    t.add_row(vec![
        if zcdp { "rho spent" } else { "epsilon spent" }.to_string(),
        sum_spent(r),
    ]);
    t.add_row(vec![
        "budget".to_string(),
        budget_words(r.budget_spent, r.budget_remaining, zcdp, r.equivalent),
    ]);
    let mut out = format!("{} -- table {}\n{t}", short(&r.statement), r.table);
    let _ = write!(
        out,
        "\nSensitivity {} ({}): values are clamped to public bounds, never the data's.",
        num(r.sensitivity),
        match (r.neighbours, r.unit_rows) {
            (Neighbours::Replace, _) =>
                "max(hi, 0) - min(lo, 0): a replaced row moves the sum from one value to another".to_string(),
            (Neighbours::AddRemove, 0 | 1) =>
                "max(|lo|, |hi|): an added or removed row moves the sum by its value".to_string(),
            (Neighbours::AddRemove, k) => format!(
                "{k} max(|lo|, |hi|): a privacy unit adds or removes up to {k} rows, each moving the sum by its value"
            ),
        }
    );
    if r.mean {
        out.push_str("\nThe mean is the noisy sum over the noisy count; its interval holds the true mean with probability at least 0.95 (both answers within their 97.5% intervals).");
    }
    out
}

/// A release's budget line: spent and remaining in the table's unit, and under zCDP the
/// spending as (epsilon, delta).
fn budget_words(
    spent: Decimal,
    remaining: Decimal,
    zcdp: bool,
    equivalent: Option<(f64, f64)>,
) -> String {
    format!(
        "{} {}spent, {} remaining{}",
        dec(spent),
        if zcdp { "rho " } else { "" },
        dec(remaining),
        equivalent.map_or(String::new(), |(e, d)| format!(
            "; ({}, {})-DP so far",
            num(e),
            num(d)
        ))
    )
}

/// What a sum or mean spent, in the table's unit, and with what noise.
fn sum_spent(r: &super::SumResult) -> String {
    let halves = if r.mean {
        "half on the sum, half on the count; "
    } else {
        ""
    };
    if r.from_history {
        format!(
            "0 (identical to an earlier statement: its recorded answers, {} {})",
            if r.sigma.is_some() { "rho" } else { "epsilon" },
            dec(r.eps)
        )
    } else if let Some(sigma) = r.sigma {
        format!(
            "{} ({halves}gaussian noise, {}sigma {}{})",
            dec(r.eps_spent),
            if r.mean { "sum " } else { "" },
            num(sigma),
            r.count_sigma
                .map_or(String::new(), |c| format!(", count sigma {}", num(c)))
        )
    } else if r.accounting == Accounting::Zcdp {
        format!(
            "{} (epsilon {} of {} noise, {}charged eps^2/2{}; {}scale {})",
            dec(r.eps_spent),
            dec(r.eps),
            r.mechanism,
            halves,
            if r.mean { " each" } else { "" },
            if r.mean { "sum " } else { "" },
            num(r.scale)
        )
    } else {
        format!(
            "{} ({halves}{} noise, {}scale {})",
            dec(r.eps_spent),
            r.mechanism,
            if r.mean { "sum " } else { "" },
            num(r.scale)
        )
    }
}

fn plot_note(out: &mut String, plot: Option<&super::PlotOutcome>) {
    match plot {
        Some(super::PlotOutcome::Written(path)) => {
            let _ = write!(out, "\nchart written to {path}");
        }
        Some(super::PlotOutcome::Failed(why)) => {
            let _ = write!(out, "\nwarning: the chart was not written: {why}");
        }
        None => {}
    }
}

fn simulate(r: &super::SimulateResult) -> String {
    let noise = if r.std { "noise std" } else { "eps" };
    let mut t = new_table(&[
        "n",
        "p",
        noise,
        "naive error (1/eps)",
        "naive error (MC)",
        "Bayes error (MC)",
        "P[Bayes closer]",
    ]);
    for row in &r.rows {
        let mc = |i: super::Interval| {
            format!(
                "{} [{}, {}]",
                sig(i.value, 4),
                sig(i.lower, 4),
                sig(i.upper, 4)
            )
        };
        t.add_row(vec![
            row.n.to_string(),
            num(row.p),
            num(if r.std { row.std } else { row.eps }),
            sig(row.m_naive_exact, 4),
            mc(row.m_naive),
            mc(row.m_bayes),
            mc(row.p_bayes_better),
        ]);
    }
    let runs = r.rows.first().map_or(0, |row| row.runs);
    let mut out = format!(
        "SIMULATE: the naive estimate (the noisy answer) against the Bayes estimate (Naldi and D'Acquisto 2014, eq. 11), {runs} runs per point\n{t}\nEach run draws k ~ Binomial(n, p) and y = k + Laplace(1/eps); errors are mean |estimate - k|, [..] a 95% Monte Carlo interval. No data is touched and nothing is spent."
    );
    plot_note(&mut out, r.plot.as_ref());
    out
}

fn out_of_range(r: &super::OutOfRangeResult) -> String {
    let mut t = new_table(&[]);
    if let Some((a, p)) = r.at {
        t.add_row(vec![
            format!("at a true count of {a}"),
            format!("{} (eq. 2)", sig(p, 6)),
        ]);
    }
    t.add_row(vec![
        "largest, at 0 and n".to_string(),
        format!("{} (Theorem 1: (1 + e^(-eps n))/2)", sig(r.p_max, 6)),
    ]);
    t.add_row(vec![
        format!("least, at {}", r.argmin),
        format!("{} (exact over whole counts)", sig(r.p_min, 6)),
    ]);
    t.add_row(vec![
        "least as eq. 6 writes it".to_string(),
        format!(
            "{}{}",
            sig(r.p_min_eq6, 6),
            if r.n % 2 == 1 {
                " (n odd: exact)"
            } else {
                " (n even: a = (n-1)/2 is not a count; the exact minimum is smaller by cosh(eps/2))"
            }
        ),
    ]);
    format!(
        "Probability that Laplace noise of scale 1/eps = {} puts a count of n = {} outside [0, {}] (Naldi and D'Acquisto 2014, section 2)\n{t}",
        num(1.0 / r.eps),
        r.n,
        r.n
    )
}

fn compare_smooth(r: &super::CompareSmoothResult) -> String {
    let rule = format!(
        "Rule of thumb: data-dependent noise has the smaller variance only when the smooth sensitivity is at least {} times below the global one (gamma {}).",
        fixed(r.rule_ratio, 2),
        fixed(r.rule_gamma, 2)
    );
    if !r.regions.is_empty() {
        let mut t = new_table(&[
            "level",
            "eps",
            "Laplace answers",
            "Laplace area",
            "staircase flat",
            "staircase least",
            "top",
        ]);
        for g in &r.regions {
            t.add_row(vec![
                num(g.level),
                num(g.eps),
                sig(g.laplace_lattice, 6),
                sig(g.laplace_area, 6),
                sig(g.staircase_flat, 5),
                sig(g.staircase_least, 5),
                fixed(g.top, 3),
            ]);
        }
        return format!(
            "COMPARE NOISE: the confidence region of {}, Laplace against staircase noise stepped in the shape of the sensitivity box (Soria-Comas and Domingo-Ferrer 2011)\n{t}\nLaplace answers: integer answers in the region; areas for real answers. staircase flat: no flat top; least: the top (times the box) that makes the region least. No data is touched and nothing is spent.",
            r.function
        );
    }
    let sized = r.rows.iter().any(|row| row.n.is_some());
    let mut head = Vec::new();
    if sized {
        head.push("n");
    }
    if r.rows.iter().any(|row| row.m.is_some()) {
        head.push("m");
    }
    head.extend([
        "eps",
        "Laplace ±95%",
        "Laplace var",
        "gamma",
        "smooth var",
        "smooth ±95%",
        "gamma*",
        "smooth ±95%*",
    ]);
    let mut t = new_table(&head);
    for row in &r.rows {
        let mut cells = Vec::new();
        if sized {
            cells.push(row.n.map_or(String::new(), |n| n.to_string()));
        }
        if let Some(m) = row.m {
            cells.push(m.to_string());
        }
        cells.extend([
            num(row.eps),
            sig(row.laplace_half95, 4),
            sig(row.laplace_variance, 3),
            fixed(row.gamma_variance, 2),
            sig(row.smooth_variance, 3),
            sig(row.smooth_half95_at_gamma_variance, 3),
            fixed(row.gamma_interval, 2),
            sig(row.smooth_half95, 3),
        ]);
        t.add_row(cells);
    }
    let what = match r.function.as_str() {
        "count" => "the absolute frequency (smooth sensitivity 1, as the global one: data-dependent noise never pays)".to_string(),
        "share" => "the relative frequency m/n under add_remove (global sensitivity 1/2; 1/n under replace over the whole table, 1/2 over a subset)".to_string(),
        other => format!("the {other}, range [0, 1] (global sensitivity 1){}", if r.seeded { ", drawn from the session's seed" } else { "" }),
    };
    format!(
        "COMPARE NOISE: Laplace against data-dependent noise for {what} (Soria-Comas and Domingo-Ferrer 2011)\n{t}\ngamma: least variance (gamma > 3), the half-width at it; gamma*: least half-width.\n{rule} No data is touched and nothing is spent."
    )
}

fn compare_accounting(r: &super::CompareAccountingResult) -> String {
    let mut t = new_table(&[
        "counts",
        "pure eps (Laplace)",
        "zCDP rho (Gaussian)",
        "as (eps, delta)",
        "zCDP rho (Laplace)",
        "as (eps, delta)",
    ]);
    for row in &r.rows {
        t.add_row(vec![
            row.k.to_string(),
            sig(row.pure_eps, 4),
            sig(row.gaussian_rho, 4),
            sig(row.gaussian_eps, 4),
            sig(row.laplace_rho, 4),
            sig(row.laplace_eps, 4),
        ]);
    }
    let mut out = format!(
        "k counts of one cell, each within ±{} of the truth with probability {}\n{t}\nOne Laplace count needs eps {} (Naldi and D'Acquisto 2015, eq. 10): k counts cost k eps under pure DP. One Gaussian count needs rho = z^2 / (2 w^2) = {} (sigma {}): k cost k rho under zCDP, shown as (epsilon, {})-DP by the tight conversion of Canonne, Kamath and Steinke 2020. zCDP adds rhos, so its epsilon grows like the square root of k, pure DP's like k.",
        num(r.half_width),
        num(r.confidence),
        sig(r.eps, 4),
        sig(r.rho, 4),
        sig(1.0 / (2.0 * r.rho).sqrt(), 4),
        num(r.delta),
    );
    let _ = match r.crossover {
        Some(k) => write!(
            out,
            "\nFrom {k} counts on (of those asked), Gaussian zCDP costs less epsilon than pure DP at delta {}; a delta of 0 is pure DP's alone.",
            num(r.delta)
        ),
        None => write!(
            out,
            "\nFor these numbers of counts pure DP costs less: zCDP pays for many releases, and its epsilon comes with a delta."
        ),
    };
    plot_note(&mut out, r.plot.as_ref());
    out
}

fn compare_noise(r: &super::CompareNoiseResult) -> String {
    let mut t = new_table(&[
        "eps",
        "sensitivity",
        "Laplace variance",
        "staircase variance",
        "gamma",
        "Laplace 95% ±",
        "staircase 95% ±",
    ]);
    for row in &r.rows {
        t.add_row(vec![
            num(row.eps),
            num(row.sensitivity),
            sig(row.laplace_variance, 4),
            sig(row.staircase_variance, 4),
            sig(row.gamma, 4),
            sig(row.laplace_half95, 4),
            sig(row.staircase_half95, 4),
        ]);
    }
    format!(
        "Laplace noise against the optimal data-independent (staircase) noise\n{t}\nLaplace: variance 2 d^2/eps^2; staircase: the variance-optimal gamma (Geng and Viswanath 2012), as in the table of Soria-Comas and Domingo-Ferrer 2011. The gain is small for eps <= 1 and large only where eps is large."
    )
}

fn explained(e: &super::Explanation) -> String {
    let mut t = new_table(&[]);
    for (label, text) in &e.steps {
        t.add_row(vec![label.clone(), text.clone()]);
    }
    let mut out = format!("EXPLAIN {}\n{t}", short(&e.statement));
    if let Some(b) = &e.budget {
        let _ = write!(
            out,
            "\nbudget: spent {} -> {} of {}",
            dec(b.spent_before),
            dec(b.spent_after),
            dec(b.total)
        );
    }
    let _ = write!(
        out,
        "\nNothing was done: EXPLAIN spends nothing, records nothing and draws no noise."
    );
    out
}

/// `x1 + x3`, `2 x1 - x2`: a linear query over cells, for people.
fn query(q: &[f64]) -> String {
    let mut out = String::new();
    for (i, c) in q.iter().enumerate().filter(|(_, c)| **c != 0.0) {
        let sign = if *c < 0.0 { "-" } else { "+" };
        let magnitude = c.abs();
        if out.is_empty() {
            if *c < 0.0 {
                out.push('-');
            }
        } else {
            let _ = write!(out, " {sign} ");
        }
        if magnitude != 1.0 {
            let _ = write!(out, "{} ", num(magnitude));
        }
        let _ = write!(out, "x{}", i + 1);
    }
    if out.is_empty() {
        out.push('0');
    }
    out
}

/// A posterior probability: as many digits as its relative error vouches for (at most 6), or
/// a bound, rounded outwards.
fn prob(p: &super::ProbResult) -> String {
    let what = format!("P({} {})", shown_query(&p.text, &p.query), p.event);
    match (p.bound, p.relative_error) {
        (Some(super::Bound::Upper), _) => format!(
            "{what} < {} (an upper bound: {})",
            sig_up(p.probability, 2),
            if p.probability <= crate::stats::tail::TINY {
                "the probability is below what is carried"
            } else {
                "no value to a relative error of 1e-3 was reached"
            }
        ),
        (Some(super::Bound::Lower), _) => format!(
            "{what} > {} (a lower bound: no value to a relative error of 1e-3 was reached)",
            sig_down(p.probability, 2)
        ),
        (None, Some(rel)) if rel > 0.0 => {
            let digits = (-rel.log10()).floor().clamp(2.0, 6.0) as i32;
            format!(
                "{what} = {} (relative error at most {})",
                sig(p.probability, digits),
                sig_up(rel, 2)
            )
        }
        _ => format!("{what} = {} (exactly)", sig(p.probability, 6)),
    }
}

/// `x > 0` to `digits` significant digits, rounded up: never below `x`.
fn sig_up(x: f64, digits: i32) -> String {
    let shown = sig(x, digits);
    if shown.parse::<f64>().is_ok_and(|v| v >= x) {
        return shown;
    }
    // Half a unit of the last digit more than x rounds to a number at least x.
    sig(x * (1.0 + 0.5 * 10f64.powi(1 - digits)), digits)
}

/// `x > 0` to `digits` significant digits, rounded down: never above `x`.
fn sig_down(x: f64, digits: i32) -> String {
    let shown = sig(x, digits);
    if shown.parse::<f64>().is_ok_and(|v| v <= x) {
        return shown;
    }
    sig(x * (1.0 - 0.5 * 10f64.powi(1 - digits)), digits)
}

fn answered(a: &super::AnsweredResult) -> String {
    let mut t = new_table(&[]);
    t.add_row(vec!["estimate".to_string(), fixed(a.estimate, 2)]);
    t.add_row(vec![
        format!("{}% credible interval", percent(a.confidence)),
        interval(a.interval, 2),
    ]);
    t.add_row(vec!["variance".to_string(), sig(a.variance, 6)]);
    t.add_row(vec![
        "epsilon spent".to_string(),
        "0 (answered from the history)".to_string(),
    ]);
    t.add_row(vec![
        "budget".to_string(),
        format!(
            "{} spent, {} remaining",
            dec(a.budget_spent),
            dec(a.budget_remaining)
        ),
    ]);
    format!(
        "{} -- table {}\n{t}\nwhy: {}",
        short(&a.statement),
        a.table,
        a.explain
    )
}

fn cube(c: &super::CubeReport) -> String {
    let named = c.table.is_some();
    let mut t = new_table(if named {
        &["cell", "condition", "budget spent"]
    } else {
        &["cell", "budget spent"]
    });
    // Every cell when few; otherwise those that spent something.
    const SHOWN: usize = 40;
    let mut hidden = 0;
    for (i, b) in c.budgets.iter().enumerate() {
        if c.budgets.len() > SHOWN && *b == 0.0 {
            hidden += 1;
            continue;
        }
        let mut line = vec![format!("x{}", i + 1)];
        if named {
            line.push(c.cell_names.get(i).cloned().unwrap_or_default());
        }
        line.push(num(*b));
        t.add_row(line);
    }
    let more = if hidden > 0 {
        format!("\n({hidden} more cells have spent nothing; JSON lists them all)")
    } else {
        String::new()
    };
    let history = match &c.history {
        Some(rows) if !rows.is_empty() => {
            let mut h = new_table(&["#", "H (coefficients)", "alpha", "S", "y"]);
            for (i, m) in rows.iter().enumerate() {
                h.add_row(vec![
                    (i + 1).to_string(),
                    m.row.iter().map(|x| num(*x)).collect::<Vec<_>>().join(" "),
                    num(m.eps),
                    num(m.sensitivity),
                    num(m.noisy),
                ]);
            }
            format!("{h}\n")
        }
        Some(_) => "No measurements yet.\n".to_string(),
        None => String::new(),
    };
    let title = match (&c.table, &c.declaration) {
        (Some(table), Some(d)) => format!("{d} -- table {table}\n"),
        _ => String::new(),
    };
    let cost = match (&c.neighbours, &c.pair) {
        (Neighbours::Replace, Some(pair)) if pair.exact => format!(
            "cost {} of {} (NEIGHBOURS replace: the costliest pair of cells, {} and {}; a row moving between them is what the history exposes most){}",
            num(c.spent),
            dec(c.total),
            pair.first,
            pair.second,
            before_cube(pair)
        ),
        (Neighbours::Replace, Some(pair)) => format!(
            "cost at most {} of {} (NEIGHBOURS replace: {})",
            num(c.spent),
            dec(c.total),
            pair_cost(pair)
        ),
        (Neighbours::Replace, None) => format!(
            "cost {} of {} (NEIGHBOURS replace: the history costs its costliest pair of cells)",
            num(c.spent),
            dec(c.total)
        ),
        (Neighbours::AddRemove, _) => format!(
            "cost max(B) = {} of {} (NEIGHBOURS add_remove: cells are disjoint, each spends its own budget)",
            num(c.spent),
            dec(c.total)
        ),
    };
    let carried = match &c.carried {
        Some(words) => format!("\nThe cube {words}."),
        None => String::new(),
    };
    title
        + &history
        + &format!(
            "{t}{more}\ncube of {} cells, {} measurements: {cost}{carried}",
            c.cells, c.measurements
        )
}

fn estimate(e: &super::EstimateResult) -> String {
    let mut t = new_table(&[]);
    t.add_row(vec!["estimate".to_string(), fixed(e.estimate, 4)]);
    t.add_row(vec!["variance".to_string(), sig(e.variance, 6)]);
    t.add_row(vec![
        "95% credible interval".to_string(),
        interval(e.credible95, 2),
    ]);
    t.add_row(vec![
        "distribution".to_string(),
        if e.error_bound == 0.0 {
            e.method.clone()
        } else {
            format!("{} (error at most {})", e.method, sig(e.error_bound, 2))
        },
    ]);
    t.add_row(vec![
        "epsilon spent".to_string(),
        "0 (from the history)".to_string(),
    ]);
    format!(
        "ESTIMATE {} -- best linear unbiased estimate (Xiao and Xiong 2012, eq. 50-52)\n{t}",
        shown_query(&e.text, &e.query)
    )
}

/// A query as people read it: coefficients over cells as `x1 + x3`, counts as written.
fn shown_query(text: &str, q: &[f64]) -> String {
    if text.starts_with('(') {
        query(q)
    } else {
        text.to_string()
    }
}

fn choose_eps(c: &ChooseEpsResult) -> String {
    let (meaning, conf) = match c.requirement {
        ChoosePlan::Relative {
            fraction,
            confidence,
            count,
        } => (
            format!(
                "the noisy answer lies within {}% of a true count of {} (±{}) with probability {}",
                num(fraction.get() * 100.0),
                num(count.get()),
                num(c.half_width),
                num(confidence.get())
            ),
            confidence.get(),
        ),
        ChoosePlan::Absolute {
            half_width,
            confidence,
        } => (
            format!(
                "the noisy answer lies within ±{} of the true count with probability {}",
                num(half_width.get()),
                num(confidence.get())
            ),
            confidence.get(),
        ),
    };
    let mut t = new_table(&[]);
    if let Some((rho, sigma)) = c.gaussian {
        t.add_row(vec!["rho".to_string(), num(rho)]);
        t.add_row(vec!["Gaussian sigma".to_string(), sig(sigma, 4)]);
        t.add_row(vec!["requirement".to_string(), meaning]);
        t.add_row(vec![
            "Laplace instead".to_string(),
            format!(
                "eps {} (Naldi and D'Acquisto 2015, eq. 10), which costs rho eps^2/2 = {} on a zCDP table",
                sig(c.eps, 4),
                sig(c.eps * c.eps / 2.0, 4)
            ),
        ]);
        return format!(
            "{t}\nsigma = w / z = {} / {} (z the standard normal quantile at (1 + {})/2) and rho = 1 / (2 sigma^2) for a count, rounded up; WITH RHO {} on a table that accounts in zCDP meets it. Spending nothing.",
            num(c.half_width),
            sig(crate::stats::accuracy::normal_quantile((1.0 + conf) / 2.0), 6),
            num(conf),
            num(rho)
        );
    }
    t.add_row(vec!["epsilon".to_string(), sig(c.eps, 4)]);
    t.add_row(vec!["noise scale 1/eps".to_string(), sig(1.0 / c.eps, 4)]);
    t.add_row(vec!["requirement".to_string(), meaning]);
    format!(
        "{t}\neps = -ln(1 - {}) / {} (Naldi and D'Acquisto 2015, eq. 10). Smaller epsilon is more private; spending nothing.",
        num(conf),
        num(c.half_width)
    )
}

/// A statement cut to a width a table can show (`SHOW HISTORY` in JSON has it whole).
fn short(statement: &str) -> String {
    const WIDTH: usize = 100;
    if statement.chars().count() <= WIDTH {
        statement.to_string()
    } else {
        let cut: String = statement.chars().take(WIDTH - 1).collect();
        format!("{cut}…")
    }
}

/// A grid spacing: `1`, or `2^-k`.
fn grid(spacing: f64) -> String {
    if spacing >= 1.0 {
        "1".into()
    } else {
        format!("2^{}", spacing.log2().round())
    }
}

/// A decimal without trailing zeros.
/// An exact decimal as shown: at most 9 decimal places (a charge such as 0.05/3 is kept to
/// 24 places, rounded up; a person needs fewer), exact in JSON.
fn dec(d: Decimal) -> String {
    d.round_dp(9).normalize().to_string()
}

/// An interval `[lo, hi]`, both ends with `digits` decimals.
fn interval((lo, hi): (f64, f64), digits: usize) -> String {
    format!("[{}, {}]", fixed(lo, digits), fixed(hi, digits))
}

/// A float with `digits` decimals.
fn fixed(x: f64, digits: usize) -> String {
    format!("{x:.digits$}")
}

/// A float to `digits` significant digits, without trailing zeros.
fn sig(x: f64, digits: i32) -> String {
    if x == 0.0 || !x.is_finite() {
        return x.to_string();
    }
    let magnitude = x.abs().log10().floor() as i32;
    if !(-6..15).contains(&magnitude) {
        // Scientific notation for the very small and the very large: `8.47e-7`, `2e300`.
        let decimals = (digits - 1).max(0) as usize;
        let text = format!("{x:.decimals$e}");
        return match text.split_once('e') {
            Some((mantissa, exponent)) => format!("{}e{exponent}", trim(mantissa.to_string())),
            None => text,
        };
    }
    let decimals = (digits - 1 - magnitude).max(0) as usize;
    trim(format!("{x:.decimals$}"))
}

/// A probability as a percentage, with every digit it was given (up to 12 significant).
pub fn percent(p: f64) -> String {
    sig(p * 100.0, 12)
}

/// A float as short as it reads well: up to 6 significant digits.
pub fn num(x: f64) -> String {
    sig(x, 6)
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(exact: bool) -> BudgetReport {
        let d = |s: &str| s.parse::<Decimal>().expect("a decimal");
        BudgetReport {
            accounting: Accounting::Pure,
            equivalent: None,
            unit: None,
            table: "t".into(),
            total: Decimal::ONE,
            spent: d("0.126"),
            remaining: d("0.874"),
            ledger: None,
            lines: Vec::new(),
            cells: Some(vec![("[a]".into(), d("0.063")), ("[b]".into(), d("0.063"))]),
            neighbours: Neighbours::Replace,
            pair: Some(PairReport {
                first: "[a]".into(),
                second: "[b]".into(),
                cost: d("0.126"),
                exact,
                lower: if exact { d("0.126") } else { d("0.0632") },
                before_cube: Decimal::ZERO,
            }),
            exposed: false,
            dataset: None,
        }
    }

    /// A cost beyond the pairs kept is said to be an upper bound, with the costliest pair
    /// known and what it costs.
    #[test]
    fn an_upper_bound_is_said_as_such() {
        let text = budget(&report(false));
        assert!(
            text.contains("it costs at most 0.126, an upper bound"),
            "{text}"
        );
        assert!(
            text.contains("the costliest pair known, [a] and [b], costs 0.0632"),
            "{text}"
        );
        let text = budget(&report(true));
        assert!(text.contains("[a] and [b] cost 0.126."), "{text}");
        assert!(!text.contains("at most"), "{text}");
    }
}
