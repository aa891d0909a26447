//! Fuzz target `parse`: any UTF-8 text given to `syntax::parse_script` returns, never panics;
//! and every statement it parses prints canonically and parses back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(statements) = dpq::syntax::parse_script(source) else {
        return;
    };
    // STYLE: parse of display is the identity (spans compare equal whatever their offsets).
    for stmt in &statements {
        let printed = stmt.to_string();
        match dpq::syntax::parse_script(&printed) {
            Ok(again) => assert!(
                again.len() == 1 && again[0] == *stmt,
                "the canonical print parses to something else: {printed:?}\n{stmt:?}\n{again:?}"
            ),
            Err(e) => panic!("the canonical print does not parse: {printed:?}: {e}"),
        }
    }
});
