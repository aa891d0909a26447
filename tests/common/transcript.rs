//! Transcripts of scripts as `dpq run --seed 2` prints them: the golden files and the
//! examples of the user guide are both compared with these.
#![allow(dead_code)]

use dpq::driver::{run_source, Emitted};
use dpq::eval::{Randomness, Session};
use dpq::output::Format;
use dpq::privacy::Store;
use std::path::Path;

/// The seed of every transcript: reproducible, and saying it is not private.
pub const SEED: u64 = 2;

/// A seeded session with a clock at 0 and its state in `state`.
pub fn session(state: &Path) -> Session {
    let mut session =
        Session::with_store(Randomness::Seeded(SEED), Store::dir(state.to_path_buf()));
    session.set_clock(|| 0);
    session
}

/// Runs `source` in `session` and returns what it printed, results and errors interleaved
/// (an error after `[stderr] `, a blank line between tables), and whether every statement ran.
pub fn run(session: &mut Session, origin: &str, source: &str, format: Format) -> (String, bool) {
    let mut out = String::new();
    let ok = run_source(session, origin, source, format, &mut |e| {
        if format == Format::Table && !out.is_empty() {
            out.push('\n');
        }
        match e {
            Emitted::Result(text) => out.push_str(&text),
            Emitted::Error(text) => {
                out.push_str("[stderr] ");
                out.push_str(&text);
            }
        }
        out.push('\n');
    });
    (out, ok)
}

/// `out` with the state directory `state` named `$STATE`, and each ledger's file name (a hash
/// of its data file's absolute path, which differs between checkouts) named `FILE`.
pub fn normalise(out: &str, state: &Path) -> String {
    let state_path = state.to_string_lossy().replace('\\', "/");
    let out = out.replace(&state_path, "$STATE");
    let marker = "$STATE/ledgers/";
    let mut named = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(i) = rest.find(marker) {
        let after = &rest[i + marker.len()..];
        let hash_len = after.bytes().take_while(u8::is_ascii_hexdigit).count();
        named.push_str(&rest[..i]);
        named.push_str(marker);
        named.push_str("FILE");
        rest = &after[hash_len..];
    }
    named.push_str(rest);
    named
}
