//! Golden transcripts: every `tests/golden/**/*.dpq`, `examples/*.dpq` and the slides' scripts
//! (`examples/slides/*.dpq`) run as `dpq run --seed 2`
//! would run them, compared with the sibling `.out` file. `DPQ_BLESS=1 cargo test` rewrites them.
//!
//! A script whose first line is `-- format: json` is run with `--format json`, one whose first
//! line is `-- format: line` draws its tables as `.mode line` does; one whose first
//! line is `-- width: 80` is rendered for a terminal of 80 columns, and no line of its
//! transcript may be wider. Transcripts of
//! `examples/NAME.dpq` live in `tests/golden/examples/NAME.out`.

use crate::common;
use common::transcript::{normalise, run, session};
use dpq::output::Format;
use std::path::{Path, PathBuf};

fn scripts(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            scripts(&path, out);
        } else if path.extension().is_some_and(|e| e == "dpq") {
            out.push(path);
        }
    }
}

/// What `dpq run --seed 2 FILE` prints, stdout and stderr interleaved, and its exit status.
fn transcript(path: &Path) -> String {
    let source = std::fs::read_to_string(path).expect("a golden script is readable");
    let format = if source.starts_with("-- format: json") {
        Format::Json
    } else {
        Format::Table
    };
    dpq::output::set_width(width_of(&source));
    // `-- format: line` draws tables as `.mode line` does.
    let layout = if source.starts_with("-- format: line") {
        dpq::output::Layout::Lines
    } else {
        dpq::output::Layout::Boxes
    };
    dpq::output::set_layout(layout);
    let state = tempfile::tempdir().expect("a state directory");
    let mut session = session(state.path());
    let origin = path.to_string_lossy().replace('\\', "/");
    let (mut out, ok) = run(&mut session, &origin, &source, format);
    dpq::output::set_width(None);
    dpq::output::set_layout(dpq::output::Layout::Boxes);
    out.push_str(&format!("[exit {}]\n", if ok { 0 } else { 1 }));
    normalise(&out, state.path())
}

/// The terminal width a script's first line asks for (`-- width: 80`), if any.
fn width_of(source: &str) -> Option<usize> {
    source
        .lines()
        .next()?
        .strip_prefix("-- width: ")?
        .trim()
        .parse()
        .ok()
}

fn expected_path(script: &Path) -> PathBuf {
    match script.strip_prefix("examples") {
        Ok(rest) => Path::new("tests/golden/examples")
            .join(rest)
            .with_extension("out"),
        Err(_) => script.with_extension("out"),
    }
}

/// Runs `scripts` and compares (or, with `DPQ_BLESS`, writes) their transcripts.
fn check_transcripts(scripts: &[PathBuf]) -> Vec<String> {
    let bless = std::env::var_os("DPQ_BLESS").is_some();
    let mut failures = Vec::new();
    for script in scripts {
        let got = transcript(script);
        // At a terminal's width, nothing a statement shows is wider: no box breaks.
        if let Some(w) = std::fs::read_to_string(script)
            .ok()
            .as_deref()
            .and_then(width_of)
        {
            for line in got.lines() {
                if line.chars().count() > w {
                    failures.push(format!(
                        "{}: a line wider than {w} columns:\n{line}",
                        script.display()
                    ));
                }
            }
        }
        let expected_file = expected_path(script);
        if bless {
            if let Some(dir) = expected_file.parent() {
                std::fs::create_dir_all(dir).expect("create golden dir");
            }
            std::fs::write(&expected_file, &got).expect("write golden file");
            continue;
        }
        match std::fs::read_to_string(&expected_file) {
            Ok(expected) if expected == got => {}
            Ok(expected) => failures.push(format!(
                "{}: transcript differs from {}\n--- expected\n{expected}\n--- got\n{got}",
                script.display(),
                expected_file.display()
            )),
            Err(_) => failures.push(format!(
                "{}: no {} (run DPQ_BLESS=1 cargo test)",
                script.display(),
                expected_file.display()
            )),
        }
    }
    failures
}

/// The figures of Naldi and D'Acquisto (`examples/figures/figN.dpq`, one per figure): each
/// runs in the harness (a test of its own, so it runs beside the other transcripts) and
/// writes its chart, an SVG with the paper's axes.
#[test]
fn figure_scripts_write_their_charts() {
    let mut figures: Vec<PathBuf> = std::fs::read_dir("examples/figures")
        .expect("examples/figures exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "dpq"))
        .collect();
    figures.sort();
    assert_eq!(figures.len(), 8, "one script per figure of paper 1");
    let failures = check_transcripts(&figures);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    for script in &figures {
        let svg_path = script.with_extension("svg");
        let svg = std::fs::read_to_string(&svg_path)
            .unwrap_or_else(|e| panic!("{} was not written: {e}", svg_path.display()));
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        let axis = if script.ends_with("fig5.dpq") || script.ends_with("fig8.dpq") {
            "Predicate probability p"
        } else if ["fig3.dpq", "fig4.dpq", "fig7.dpq"]
            .iter()
            .any(|f| script.ends_with(f))
        {
            "privacy level"
        } else {
            "Noise standard deviation"
        };
        assert!(
            svg.contains(axis),
            "{}: no axis `{axis}`",
            svg_path.display()
        );
    }
}

#[test]
fn golden_transcripts() {
    let mut all = Vec::new();
    scripts(Path::new("tests/golden"), &mut all);
    for dir in ["examples", "examples/attack", "examples/slides"] {
        if let Ok(entries) = std::fs::read_dir(dir) {
            all.extend(
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|e| e == "dpq")),
            );
        }
    }
    all.sort();
    assert!(all.len() >= 10, "the golden scripts were not found");
    let failures = check_transcripts(&all);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
