//! `SET BUDGET`, `SHOW BUDGET`, `SHOW HISTORY` and `SET SEED`.

use super::{cubes, ledger_error, Session};
use crate::error::EvalError;
use crate::output::{BudgetReport, HistoryReport, Output, ReleaseRow, SpendLine};
use crate::privacy::Accounting;
use crate::span::Span;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;

impl Session {
    /// `SET BUDGET e` or `SET BUDGET RHO r`: never below what is spent, and how the budget
    /// composes fixed once anything is released; checked and recorded under the ledger's lock.
    pub(super) fn set_budget(
        &mut self,
        table: String,
        total: Decimal,
        accounting: Accounting,
        span: Span,
    ) -> Result<Output, EvalError> {
        let i = self.index(&table);
        let time = (self.clock)();
        let mut txn = self
            .ledgers
            .get_mut(self.entries[i].ledger)
            .begin()
            .map_err(ledger_error(span))?;
        let history = txn.history();
        if accounting != history.accounting() && !history.releases().is_empty() {
            return Err(EvalError::AccountingFixed {
                table,
                accounting: history.accounting().unit(),
                span,
            });
        }
        let spent = history.spent();
        if accounting == history.accounting() && total < spent {
            return Err(EvalError::BudgetBelowSpent {
                table,
                total,
                spent,
                span,
            });
        }
        txn.set_total(total, accounting, time)
            .map_err(ledger_error(span))?;
        drop(txn);
        Ok(Output::Budget(self.budget(i)))
    }

    /// `SHOW BUDGET`: as the ledger now says, other processes' spending included.
    pub(super) fn show_budget(&mut self, table: &str, span: Span) -> Result<Output, EvalError> {
        let i = self.index(table);
        self.refresh(i, span)?;
        Ok(Output::Budget(self.budget(i)))
    }

    /// `SHOW HISTORY`.
    pub(super) fn show_history(&mut self, table: &str, span: Span) -> Result<Output, EvalError> {
        let i = self.index(table);
        self.refresh(i, span)?;
        Ok(Output::History(self.history(i)))
    }

    /// `SET SEED n`: only before any noise was drawn. Reseeding later would let two queries
    /// share their noise, and the difference of their answers would be the difference of
    /// their true counts.
    pub(super) fn set_seed(&mut self, seed: u64, span: Span) -> Result<Output, EvalError> {
        if self.drawn {
            return Err(EvalError::SeedAfterNoise { span });
        }
        self.rng = ChaCha20Rng::seed_from_u64(seed);
        self.seed = Some(seed);
        Ok(Output::SeedSet { seed })
    }

    /// Under zCDP, what a history has spent as (epsilon, delta) at the session's delta, by the
    /// tight conversion of Canonne, Kamath and Steinke (2020); nothing under pure accounting.
    pub(super) fn equivalent(&self, history: &crate::privacy::History) -> Option<(f64, f64)> {
        (history.accounting() == Accounting::Zcdp).then(|| {
            let rho = history.spent().to_f64().unwrap_or(f64::INFINITY);
            (crate::privacy::zcdp::epsilon(rho, self.delta), self.delta)
        })
    }

    /// Under zCDP, `; (eps, delta)-DP after it` for a spending of `rho` in words; nothing
    /// under pure accounting.
    pub(super) fn equivalent_after(
        &self,
        history: &crate::privacy::History,
        rho: Decimal,
    ) -> String {
        if history.accounting() != Accounting::Zcdp {
            return String::new();
        }
        let rho = rho.to_f64().unwrap_or(f64::INFINITY);
        format!(
            " ({}, {})-DP after it",
            crate::output::short_number(crate::privacy::zcdp::epsilon(rho, self.delta)),
            crate::output::short_number(self.delta)
        )
    }

    /// Table `i`'s budget, every spending, and with a cube each cell's.
    pub(super) fn budget(&self, i: usize) -> BudgetReport {
        let e = &self.entries[i];
        let ledger = self.ledgers.get(e.ledger);
        let history = ledger.history();
        BudgetReport {
            accounting: history.accounting(),
            equivalent: self.equivalent(history),
            unit: history.unit().cloned(),
            table: e.name.clone(),
            total: history.total(),
            spent: history.spent(),
            remaining: history.remaining(),
            // An analyst is not shown where the server keeps its state.
            ledger: ledger
                .path()
                .filter(|_| self.analyst.is_none())
                .map(|p| p.display().to_string()),
            // A vector released at once spent its epsilon once: one line, for its first part.
            lines: history
                .releases()
                .iter()
                .filter(|r| r.part.is_none_or(|(i, _)| i == 0))
                .map(|r| SpendLine {
                    seq: r.seq,
                    statement: match r.part {
                        Some((_, n)) => format!("{} ({n} parts)", r.statement),
                        None => r.statement.clone(),
                    },
                    eps: r.eps,
                    mechanism: r.mechanism,
                    cost: history.price(r.eps, r.mechanism),
                    time: r.time,
                })
                .collect(),
            cells: match (&e.cube, history.cell_spent()) {
                (Some(cube), Some(b)) => Some(
                    b.into_iter()
                        .enumerate()
                        .map(|(j, spent)| (cube.cell_name(j), spent))
                        .collect(),
                ),
                _ => None,
            },
            neighbours: history.neighbours(),
            pair: e.cube.as_ref().and_then(|cube| {
                cubes::pair_report(history, &|j| format!("[{}]", cube.cell_name(j)))
            }),
            exposed: history.exposed(),
            dataset: self.dataset_budget(i),
        }
    }

    /// Table `i`'s releases, with their rows over the cube.
    fn history(&self, i: usize) -> HistoryReport {
        let e = &self.entries[i];
        let history = self.ledgers.get(e.ledger).history();
        HistoryReport {
            table: e.name.clone(),
            releases: history
                .releases()
                .iter()
                .map(|r| ReleaseRow {
                    row: history.cube().filter(|_| !r.row.is_empty()).map(|c| {
                        let mut dense = vec![0.0; c.cells];
                        for (j, v) in r.row.iter() {
                            if let Some(x) = dense.get_mut(j) {
                                *x = v.to_f64().unwrap_or(f64::NAN);
                            }
                        }
                        dense
                    }),
                    seq: r.seq,
                    statement: match r.part {
                        Some((i, n)) => format!("{} (part {} of {n})", r.statement, i + 1),
                        None => r.statement.clone(),
                    },
                    eps: r.eps,
                    sensitivity: r.sensitivity,
                    mechanism: r.mechanism.to_string(),
                    noisy: r.noisy,
                    time: r.time,
                })
                .collect(),
        }
    }
}
