//! `LOAD`, `USE`, `DESCRIBE` and `SHOW TABLES`: tables, their public facts and their ledgers.

use super::{cubes, ledger_error, Entry, Session, DEFAULT_BUDGET};
use crate::data::{self, DataError, LoadOptions, Table};
use crate::error::EvalError;
use crate::output::{Budget, Output, TableInfo};
use crate::span::Span;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

impl Session {
    /// `LOAD 'path' AS name`: reads the file once, opens the ledger its content or path leads
    /// to, and restores the cube the ledger declares.
    pub(super) fn load(
        &mut self,
        path: PathBuf,
        path_span: Span,
        header: bool,
        name: String,
        span: Span,
    ) -> Result<Output, EvalError> {
        if self.entries.iter().any(|e| e.name == name) {
            return Err(EvalError::TableExists { name, span });
        }
        let shown = path.display().to_string();
        let options = LoadOptions {
            header,
            ..self.load_options.clone()
        };
        let (table, content) = read_table(&path, &options).map_err(|error| EvalError::Load {
            path: shown.clone(),
            error,
            span: path_span,
        })?;
        let data_file = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        let file_id = std::fs::metadata(&data_file)
            .ok()
            .map(|m| (m.dev(), m.ino()));
        let opened = self
            .ledgers
            .open(&data_file, &content, DEFAULT_BUDGET, (self.clock)())
            .map_err(ledger_error(span))?;
        let declared = self.ledgers.get(opened.ledger).history().cube().cloned();
        let mut entry = Entry {
            name,
            path: shown,
            data_file,
            file_id,
            table,
            ledger: opened.ledger,
            fingerprint: opened.fingerprint,
            content: hex(&content),
            changed: opened.changed,
            cube: None,
        };
        cubes::sync_cube(&mut entry, declared.as_ref(), span)?;
        self.entries.push(entry);
        let i = self.entries.len() - 1;
        self.current = Some(i);
        self.teaching_focus = false;
        let mut info = self.info(i);
        info.warnings = opened.warnings;
        Ok(Output::Loaded(info))
    }

    /// `USE name`.
    pub(super) fn use_table(&mut self, table: &str) -> Output {
        let i = self.index(table);
        self.current = Some(i);
        self.teaching_focus = false;
        Output::Using(self.info(i))
    }

    /// The public facts of table `i`.
    pub(super) fn info(&self, i: usize) -> TableInfo {
        let e = &self.entries[i];
        let history = self.ledgers.get(e.ledger).history();
        TableInfo {
            name: e.name.clone(),
            path: e.path.clone(),
            n: e.table.n_rows(),
            columns: e.table.schema(),
            budget: Budget {
                total: history.total(),
                spent: history.spent(),
                remaining: history.remaining(),
            },
            current: self.current == Some(i),
            data_changed: e.changed,
            warnings: Vec::new(),
        }
    }

    /// Whether `path` is the file of a loaded table (the same file under any name).
    pub(super) fn is_data_file(&self, path: &Path) -> bool {
        let resolved = std::fs::canonicalize(path).ok();
        let id = std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
        self.entries.iter().any(|e| {
            resolved.as_deref() == Some(e.data_file.as_path()) || (id.is_some() && id == e.file_id)
        })
    }
}

/// Reads a CSV file once into a table, with the plain BLAKE3 hash of the very bytes parsed.
fn read_table(path: &Path, options: &LoadOptions) -> Result<(Table, [u8; 32]), DataError> {
    let loaded = data::load_csv(path, options)?;
    Ok((loaded.table, loaded.content.bytes()))
}

fn hex(bytes: &[u8; 32]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
