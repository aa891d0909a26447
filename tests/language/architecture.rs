//! The layering of the library, read from its sources: no import cycle between modules, the
//! privacy layer and the libraries below it importing nothing above them, and the evaluator
//! and the privacy layer written in short functions.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read the sources") {
            let p = e.expect("an entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The library's top-level module a source file belongs to (`None` for the crate root and
/// the binary's own modules).
fn module_of(file: &Path) -> Option<String> {
    let rel = file.strip_prefix("src").ok()?;
    let first = rel
        .components()
        .next()?
        .as_os_str()
        .to_string_lossy()
        .into_owned();
    let name = first.trim_end_matches(".rs").to_string();
    (!matches!(name.as_str(), "lib" | "main" | "cli")).then_some(name)
}

/// Module -> the modules it names through `crate::`.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in sources(Path::new("src")) {
        let Some(module) = module_of(&file) else {
            continue;
        };
        let text = std::fs::read_to_string(&file).expect("read a source");
        let targets = graph.entry(module.clone()).or_default();
        for (i, _) in text.match_indices("crate::") {
            let name: String = text[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !name.is_empty() && name != module {
                targets.insert(name);
            }
        }
    }
    graph
}

#[test]
fn no_module_imports_form_a_cycle() {
    let graph = imports();
    for start in graph.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = graph[start].iter().collect();
        while let Some(m) = stack.pop() {
            assert_ne!(m, start, "{start} reaches itself: {graph:?}");
            if seen.insert(m.clone()) {
                stack.extend(graph.get(m).into_iter().flatten());
            }
        }
    }
}

#[test]
fn the_lower_layers_import_nothing_above_them() {
    let graph = imports();
    let allowed: &[(&str, &[&str])] = &[
        // The privacy layer: history, costs, ledger, store and the release protocol. `sys`
        // is the platform's file calls (Unix, or stand-ins in a browser), below everything.
        ("privacy", &["sys"]),
        ("stats", &[]),
        ("data", &["sys"]),
        ("span", &[]),
        ("sys", &[]),
    ];
    for (module, may) in allowed {
        let found = graph.get(*module).cloned().unwrap_or_default();
        let extra: Vec<&String> = found
            .iter()
            .filter(|m| !may.contains(&m.as_str()))
            .collect();
        assert!(extra.is_empty(), "{module} imports {extra:?}");
    }
}

#[test]
fn the_evaluator_and_the_privacy_layer_are_written_in_short_functions() {
    for dir in ["src/eval", "src/privacy"] {
        for file in sources(Path::new(dir)) {
            let text = std::fs::read_to_string(&file).expect("read a source");
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                let trimmed = line.trim_start();
                let is_fn = ["fn ", "pub fn ", "pub(super) fn ", "pub(crate) fn "]
                    .iter()
                    .any(|p| trimmed.starts_with(p));
                if !is_fn || line.trim_end().ends_with(';') {
                    continue;
                }
                let indent = line.len() - trimmed.len();
                let close = format!("{}}}", " ".repeat(indent));
                let end = lines[i + 1..]
                    .iter()
                    .position(|l| l.trim_end() == close)
                    .map_or(lines.len(), |j| i + 1 + j);
                let length = end - i + 1;
                assert!(
                    length <= 100,
                    "{}:{}: a function of {length} lines",
                    file.display(),
                    i + 1
                );
            }
        }
    }
}
