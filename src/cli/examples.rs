//! `dpq examples`: the example scripts and the data they read, bundled in the binary, listed
//! or written out in the layout of dpq's repository.
//!
//! The scripts, the README's tour and the guide name their files from the repository's root
//! (`LOAD 'examples/data/people.csv'`, `dpq run examples/quickstart.dpq`). Writing the same
//! layout into a directory makes that directory stand in for a clone: every one of those
//! commands works from it, unchanged, for someone who installed only the binary.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// A file bundled with dpq: its path under the directory written into (the same as in dpq's
/// repository) and its bytes.
pub(crate) struct Bundled {
    /// The path, with `/` between its parts, relative to the directory written into.
    pub path: &'static str,
    /// The file's bytes, as in the repository when dpq was built.
    pub bytes: &'static [u8],
}

/// The files of the repository at `$path`s, embedded at build time.
macro_rules! bundled {
    ($($path:literal),* $(,)?) => {
        &[$(Bundled { path: $path, bytes: include_bytes!(concat!("../../", $path)) }),*]
    };
}

/// Every example script, `examples/*.dpq`: the quickstart first, then by name. A test holds
/// this list to the directory, so a new script cannot be left out.
pub(crate) const SCRIPTS: &[Bundled] = bundled!(
    "examples/quickstart.dpq",
    "examples/bayes.dpq",
    "examples/breakdown.dpq",
    "examples/cube.dpq",
    "examples/income.dpq",
    "examples/lab.dpq",
    "examples/visits.dpq",
    "examples/xiao-xiong.dpq",
);

/// The data files the scripts and the README's tour load: only these, not the Parquet copy
/// of the people or the programs that generate the data, which no script reads. A test holds
/// every path a script names to this list.
pub(crate) const DATA: &[Bundled] = bundled!(
    "examples/data/census.csv",
    "examples/data/incomes.csv",
    "examples/data/people.csv",
    "examples/data/survey.csv",
    "examples/data/visits.csv",
);

/// Directories the scripts write into, made empty if missing: `lab.dpq` plots into
/// `examples/figures/` (a chart is written only into a directory that exists).
const DIRS: &[&str] = &["examples/figures"];

/// The script run first, named in the command printed after writing.
const FIRST: &str = "examples/quickstart.dpq";

/// Every bundled file: the scripts, then the data.
fn files() -> impl Iterator<Item = &'static Bundled> {
    SCRIPTS.iter().chain(DATA)
}

/// A script's file name, `bayes.dpq`, from its path.
fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// What a script is about: the first sentence of the comment it starts with (which may run
/// over several `--` lines), or its first comment line when no sentence ends.
pub(crate) fn summary(script: &str) -> String {
    let text = script
        .lines()
        .map(str::trim)
        .take_while(|line| line.starts_with("--") && line.len() > 2)
        .map(|line| line.trim_start_matches('-').trim())
        .collect::<Vec<_>>()
        .join(" ");
    match text.find(". ") {
        Some(end) => text[..=end].to_string(),
        None => text,
    }
}

/// The listing `dpq examples` prints: each script with what it is about, and how to write
/// them out.
pub(crate) fn listing() -> String {
    let width = SCRIPTS
        .iter()
        .map(|s| file_name(s.path).len())
        .max()
        .unwrap_or(0);
    let mut out = String::from("The example scripts bundled with dpq:\n");
    for script in SCRIPTS {
        let text = String::from_utf8_lossy(script.bytes);
        let name = file_name(script.path);
        let about = hang(&summary(&text), width + 4, dpq::output::width());
        out.push_str(&format!("  {name:<width$}  {about}\n"));
    }
    out.push_str(
        "\n`dpq examples DIR` writes them into DIR/examples/, with the data they read, as they \
         are laid out in dpq's repository: from DIR, the commands of the README's tour work \
         as they are written. For instance:\n  dpq examples tour && cd tour && dpq run \
         examples/quickstart.dpq",
    );
    out
}

/// `text` broken at spaces into lines of at most `width` columns, where each line after the
/// first starts `indent` columns in (the first is printed after something that takes them);
/// as it is when no width is set.
fn hang(text: &str, indent: usize, width: Option<usize>) -> String {
    let Some(room) = width.map(|w| w.saturating_sub(indent).max(20)) else {
        return text.to_string();
    };
    let mut out = String::new();
    let mut line = 0;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let long = word.chars().count();
        if line > 0 && line + 1 + long > room {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            line = 0;
        }
        if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += long;
    }
    out
}

/// What became of one bundled file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    /// It was not there and was written.
    Written,
    /// It differed and `--force` replaced it.
    Replaced,
    /// It was there already, byte for byte.
    Unchanged,
}

/// Why the examples could not be written.
#[derive(Debug)]
pub(crate) enum WriteError {
    /// A file is in DIR and differs from the bundled one (`others`: how many more do).
    Differs { file: PathBuf, others: usize },
    /// Something in DIR is in the way of a bundled file (a directory, a link).
    InTheWay { file: PathBuf },
    /// DIR itself exists and is not a directory.
    NotADirectory { dir: PathBuf },
    /// The file system refused.
    Io {
        file: PathBuf,
        error: std::io::Error,
    },
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Differs { file, others: 0 } => write!(
                f,
                "{} exists and differs from the bundled file; nothing was written",
                file.display()
            ),
            Self::Differs { file, others } => write!(
                f,
                "{} exists and differs from the bundled file ({others} other {} too); \
                 nothing was written",
                file.display(),
                if *others == 1 {
                    "file does"
                } else {
                    "files do"
                }
            ),
            Self::InTheWay { file } => write!(
                f,
                "{} exists and is not a regular file; nothing was written",
                file.display()
            ),
            Self::NotADirectory { dir } => {
                write!(f, "{} exists and is not a directory", dir.display())
            }
            Self::Io { file, error } => write!(f, "cannot write {}: {error}", file.display()),
        }
    }
}

/// What an existing file at `target` means for the bundled `bytes`.
fn fate_of(target: &Path, bytes: &[u8]) -> Result<Option<Fate>, WriteError> {
    let io = |error| WriteError::Io {
        file: target.to_path_buf(),
        error,
    };
    match std::fs::symlink_metadata(target) {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(Some(Fate::Written)),
        Err(e) => Err(io(e)),
        // A link is never written through: it could lead out of DIR.
        Ok(meta) if !meta.file_type().is_file() => Err(WriteError::InTheWay {
            file: target.to_path_buf(),
        }),
        Ok(_) => {
            let same = std::fs::read(target).map_err(io)? == bytes;
            Ok(if same { Some(Fate::Unchanged) } else { None })
        }
    }
}

/// Writes every bundled file into `dir` (created if missing) at its path there, and makes
/// the directories the scripts write into. A file already there and identical is left as it
/// is; one that differs is replaced only with `force`, else nothing at all is written.
pub(crate) fn write(dir: &Path, force: bool) -> Result<Vec<(&'static str, Fate)>, WriteError> {
    if dir.exists() && !dir.is_dir() {
        return Err(WriteError::NotADirectory {
            dir: dir.to_path_buf(),
        });
    }
    let mut plan = Vec::new();
    let mut differing = Vec::new();
    for file in files() {
        let target = dir.join(file.path);
        match fate_of(&target, file.bytes)? {
            Some(fate) => plan.push((file, fate)),
            None if force => plan.push((file, Fate::Replaced)),
            None => differing.push(target),
        }
    }
    if let Some(file) = differing.first() {
        return Err(WriteError::Differs {
            file: file.clone(),
            others: differing.len() - 1,
        });
    }
    for made in DIRS {
        let made = dir.join(made);
        std::fs::create_dir_all(&made).map_err(|error| WriteError::Io { file: made, error })?;
    }
    for (file, fate) in &plan {
        let target = dir.join(file.path);
        if *fate == Fate::Unchanged {
            continue;
        }
        let io = |error| WriteError::Io {
            file: target.clone(),
            error,
        };
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(&target, file.bytes).map_err(io)?;
    }
    Ok(plan
        .into_iter()
        .map(|(file, fate)| (file.path, fate))
        .collect())
}

/// `word` as a POSIX shell reads it back: as it is when it holds no special character, else
/// in single quotes.
pub(crate) fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The report of a write into `dir`: each file and what became of it, and the next command.
pub(crate) fn report(dir: &Path, fates: &[(&str, Fate)]) -> String {
    let shown = dir.display().to_string();
    let count = |f: Fate| fates.iter().filter(|(_, fate)| *fate == f).count();
    let (written, replaced, unchanged) = (
        count(Fate::Written),
        count(Fate::Replaced),
        count(Fate::Unchanged),
    );
    let files = |n: usize| {
        if n == 1 {
            "1 file".to_string()
        } else {
            format!("{n} files")
        }
    };
    let mut out = String::new();
    if written + replaced > 0 {
        out.push_str(&format!(
            "Wrote {} into {shown}:\n",
            files(written + replaced)
        ));
    }
    for (path, fate) in fates {
        match fate {
            Fate::Written => out.push_str(&format!("  {path}\n")),
            Fate::Replaced => out.push_str(&format!("  {path} (replaced)\n")),
            Fate::Unchanged => {}
        }
    }
    if written + replaced == 0 {
        out.push_str(&format!(
            "The {} bundled files are in {shown} already, identical; nothing was written.\n",
            fates.len()
        ));
    } else if unchanged > 0 {
        out.push_str(&format!(
            "Left as {}: {} already there and identical.\n",
            if unchanged == 1 {
                "it was"
            } else {
                "they were"
            },
            files(unchanged)
        ));
    }
    out.push_str(&format!(
        "Next, type: cd {} && dpq run {FIRST}\n\
         From there the README's tour runs as written: `LOAD 'examples/data/people.csv' AS \
         people;` at the prompt of `dpq --practice`.",
        shell_word(&shown)
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The repository's `examples/*.dpq`.
    fn scripts_on_disk() -> BTreeSet<String> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        std::fs::read_dir(&dir)
            .expect("the examples directory")
            .map(|e| e.expect("an entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "dpq"))
            .map(|p| {
                format!(
                    "examples/{}",
                    p.file_name().expect("a name").to_string_lossy()
                )
            })
            .collect()
    }

    #[test]
    fn the_bundled_scripts_are_every_script_of_the_examples_directory() {
        let bundled: BTreeSet<String> = SCRIPTS.iter().map(|s| s.path.to_string()).collect();
        assert_eq!(bundled, scripts_on_disk());
        assert_eq!(SCRIPTS.len(), bundled.len(), "a script bundled twice");
    }

    /// Every path between quotes in a script under `examples/` is a bundled file, or a file
    /// in a directory the scripts write into.
    #[test]
    fn every_file_a_script_names_is_bundled() {
        for script in SCRIPTS {
            let text = std::str::from_utf8(script.bytes).expect("a script is UTF-8");
            for named in text.split('\'').skip(1).step_by(2) {
                if !named.starts_with("examples/") {
                    continue;
                }
                let in_dir = DIRS
                    .iter()
                    .any(|d| named.strip_prefix(d).is_some_and(|r| r.starts_with('/')));
                assert!(
                    in_dir || files().any(|f| f.path == named),
                    "{} names {named}, which is not bundled",
                    script.path
                );
            }
        }
    }

    #[test]
    fn a_summary_is_the_first_sentence_of_the_opening_comment() {
        assert_eq!(
            summary("-- Breakdowns: a histogram, and binned\n-- statistics. More here.\nLOAD"),
            "Breakdowns: a histogram, and binned statistics."
        );
        assert_eq!(summary("-- No full stop\n--\n-- later"), "No full stop");
        assert_eq!(summary("COUNT;"), "");
        for script in SCRIPTS {
            let text = std::str::from_utf8(script.bytes).expect("UTF-8");
            assert!(summary(text).ends_with('.'), "{}", script.path);
        }
    }

    #[test]
    fn a_summary_hangs_under_its_column_at_a_width() {
        let text = "one two three four five six seven eight nine ten eleven twelve";
        assert_eq!(hang(text, 4, None), text);
        let hung = hang(text, 4, Some(30));
        let lines: Vec<&str> = hung.lines().collect();
        assert!(lines.len() > 1, "{hung}");
        // The first line follows 4 columns of something else; the others start 4 columns in.
        assert!(lines[0].len() <= 26, "{hung}");
        for line in &lines[1..] {
            assert!(line.len() <= 30, "{hung}");
            assert!(
                line.starts_with("    ") && !line[4..].starts_with(' '),
                "{hung}"
            );
        }
        assert_eq!(hung.split_whitespace().collect::<Vec<_>>().join(" "), text);
    }

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_word("tour"), "tour");
        assert_eq!(shell_word("my tour"), "'my tour'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }
}
