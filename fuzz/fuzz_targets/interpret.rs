//! Fuzz target `interpret`: any UTF-8 script, run by `driver::run_source` (the binary's code
//! path) in table and JSON form on a seeded session that has loaded `fuzz/data/people-small.csv`
//! as `people`, with its ledger in a fresh temporary state directory, returns, never panics.
//!
//! It also checks SPEC section 1 on the way: the table's `name` and `code` columns hold unique
//! tokens that start with `qZx`, so any `qZx` word in an output that the script itself does not
//! contain came from the data, and is a leak.
#![no_main]

use dpq::driver::{run_source, Emitted};
use dpq::eval::{Randomness, Session};
use dpq::privacy::Store;
use dpq::output::Format;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/people-small.csv");

fuzz_target!(|data: &[u8]| {
    let Ok(script) = std::str::from_utf8(data) else {
        return;
    };
    for format in [Format::Table, Format::Json] {
        // On tmpfs where there is one: the ledger's fsync costs nothing there.
        let state = tempfile::tempdir_in("/dev/shm")
            .or_else(|_| tempfile::tempdir())
            .expect("a temporary state directory");
        let mut session = Session::with_store(
            Randomness::Seeded(1),
            Store::dir(state.path().to_path_buf()),
        );
        session.set_clock(|| 0);
        let setup = format!("LOAD '{DATA}' AS people; SET BUDGET 1000;");
        let mut ok = true;
        run_source(&mut session, "setup", &setup, format, &mut |e| {
            ok &= matches!(e, Emitted::Result(_));
        });
        assert!(ok, "the fuzz table loads");
        run_source(&mut session, "fuzz", script, format, &mut |e| {
            let (Emitted::Result(text) | Emitted::Error(text)) = &e;
            let shown = match format {
                Format::Table => text.clone(),
                Format::Json => {
                    let v: Value = serde_json::from_str(text).expect("one JSON object");
                    let mut strings = String::new();
                    collect_strings(&v, &mut strings);
                    strings
                }
            };
            for word in shown.split(|c: char| !c.is_ascii_alphanumeric()) {
                assert!(
                    !word.contains("qZx") || script.contains(word),
                    "a value of the data appears in the output: {word}\n{text}"
                );
            }
        });
    }
});

/// Every string of a JSON value (keys are fixed by dpq and hold no data), one per line.
fn collect_strings(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(map) => map.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}
