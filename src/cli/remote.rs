//! `dpq connect URL` and `dpq run --server URL`: the same prompt and scripts, run by a dpq
//! server in the analyst's session there. Results arrive in both forms and are printed as
//! local dpq prints them; errors are placed in the source the user wrote.

use super::Backend;
use dpq::driver::{render_diagnostic, Emitted};
use dpq::error::Diagnostic;
use dpq::output::Format;
pub use dpq::server::client::Remote;
use std::path::Path;

/// The token: from `--token-file`, else `DPQ_TOKEN`.
pub fn token(file: Option<&Path>) -> Result<String, String> {
    let token = match file {
        Some(f) => std::fs::read_to_string(f)
            .map_err(|e| format!("cannot read the token file {}: {e}", f.display()))?,
        None => std::env::var("DPQ_TOKEN").map_err(|_| {
            "no token: give --token-file FILE or set DPQ_TOKEN (the curator hands it out)"
                .to_string()
        })?,
    };
    let token = token.trim().to_string();
    if token.is_empty() {
        return Err("the token is empty".into());
    }
    Ok(token)
}

impl Backend for Remote {
    fn run(
        &mut self,
        origin: &str,
        source: &str,
        first_line: usize,
        format: Format,
        emit: &mut dyn FnMut(Emitted),
    ) -> bool {
        let response = match self.post(source) {
            Ok(Some(r)) => r,
            Ok(None) => {
                let d = Diagnostic {
                    message: "interrupted: dpq stopped waiting for the server, where the \
                              statements may still run to their end and spend"
                        .into(),
                    span: None,
                    help: Some(
                        "SHOW HISTORY and SHOW BUDGET say what ran and what it spent (they \
                         answer once the server is done)"
                            .into(),
                    ),
                };
                emit(render_diagnostic(origin, source, first_line, &d, format));
                return false;
            }
            Err(message) => {
                let d = Diagnostic {
                    message,
                    span: None,
                    help: None,
                };
                emit(render_diagnostic(origin, source, first_line, &d, format));
                return false;
            }
        };
        for r in response.results {
            emit(Emitted::Result(match format {
                Format::Json => dpq::data::escape_json_format(&r.json.to_string()).into_owned(),
                Format::Table => {
                    dpq::data::escape_controls(&dpq::output::refit(&r.table)).into_owned()
                }
            }));
        }
        match response.error {
            None => true,
            Some(e) => {
                let d = e.diagnostic(source);
                emit(render_diagnostic(origin, source, first_line, &d, format));
                false
            }
        }
    }

    fn names(&self) -> Vec<(String, Vec<String>)> {
        Remote::names(self)
    }
}
