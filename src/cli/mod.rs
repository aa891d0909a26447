//! Command-line arguments and the script and `-c` modes; the REPL is in `repl`.

mod examples;
mod remote;
mod repl;
mod serve;

use clap::{Parser, Subcommand, ValueEnum};
use dpq::data::escape_controls;
use dpq::driver::{run_source_from, Emitted};
use dpq::eval::{Progress, Randomness, Session};
use dpq::output::Format;
use dpq::privacy::Store;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;

/// Exit status when every statement ran.
pub const EXIT_OK: u8 = 0;
/// Exit status when a statement failed or a script could not be read.
pub const EXIT_STATEMENT_FAILED: u8 = 1;
/// Exit status when the command line itself is wrong (clap uses it too).
pub const EXIT_USAGE: u8 = 2;

/// dpq: differentially private queries over CSV data.
///
/// With no arguments, opens the interactive prompt.
#[derive(Debug, Parser)]
#[command(name = "dpq", version, about, long_about = None)]
pub struct Args {
    /// Run these statements and exit, e.g. -c "LOAD 'people.csv'; SHOW TABLES;"
    #[arg(
        short = 'c',
        value_name = "STATEMENTS",
        allow_hyphen_values = true,
        global = true
    )]
    pub statements: Option<String>,
    /// How results are shown: tables, or one JSON object per line.
    #[arg(long, value_enum, default_value_t = FormatArg::Table, global = true)]
    pub format: FormatArg,
    /// Seed the noise (SET SEED before the first statement): reproducible, and not private.
    #[arg(long, value_name = "N", global = true)]
    pub seed: Option<u64>,
    /// Where the ledgers of spent budget live [default: $DPQ_STATE_DIR, else the user's data
    /// directory, e.g. ~/.local/share/dpq]
    #[arg(long, value_name = "DIR", global = true)]
    pub state_dir: Option<PathBuf>,
    /// Practice: keep spending in memory only, touching no ledger; every result says so.
    #[arg(long, global = true, conflicts_with = "state_dir")]
    pub practice: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run .dpq scripts in order, in one session; stop at the first error.
    Run {
        /// The scripts.
        #[arg(required = true, value_name = "FILE.dpq")]
        files: Vec<PathBuf>,
        /// Run them on a dpq server, in the analyst's session there.
        #[arg(long, value_name = "URL")]
        server: Option<String>,
        /// The analyst's token for --server [default: $DPQ_TOKEN]
        #[arg(long, value_name = "FILE", requires = "server")]
        token_file: Option<PathBuf>,
    },
    /// Serve the datasets of a curator's policy to its analysts over HTTP.
    Serve {
        /// The policy (TOML).
        #[arg(long, value_name = "FILE")]
        policy: PathBuf,
        /// The address to listen on.
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7878")]
        listen: std::net::SocketAddr,
        /// Serve a policy that admits the demo tokens of examples/classroom/tokens/, which are
        /// public (anyone with dpq's sources has them): for trying dpq on one machine only.
        #[arg(long)]
        allow_public_tokens: bool,
        /// Print no line per statement on standard output (the summary at exit stays).
        #[arg(long)]
        quiet: bool,
        /// First clear the state directory of a demo policy (`demo = true`): every budget in
        /// it starts anew, for the next class. Refused for any other policy.
        #[arg(long)]
        reset_demo: bool,
    },
    /// The prompt, on a dpq server, as one of its analysts.
    Connect {
        /// The server, e.g. http://127.0.0.1:7878
        #[arg(value_name = "URL")]
        url: String,
        /// The analyst's token [default: $DPQ_TOKEN]
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
    },
    /// Check a policy and say what each analyst may do.
    CheckPolicy {
        /// The policy (TOML).
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Make a new analyst token and the hash a policy records.
    Token,
    /// List the bundled example scripts, or write them and the data they read into DIR.
    ///
    /// DIR gets them as dpq's repository holds them (DIR/examples/*.dpq, DIR/examples/data/),
    /// so the commands of the README's tour work from DIR as written, e.g.
    /// `dpq examples tour && cd tour && dpq run examples/quickstart.dpq`.
    Examples {
        /// Where to write them (made if missing); without it, the scripts are listed.
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Replace the files in DIR that differ from the bundled ones (else nothing is
        /// written when one does).
        #[arg(long, requires = "dir")]
        force: bool,
    },
}

/// What runs statements: a local session, or a dpq server.
pub trait Backend {
    /// Runs every statement of `source` (which starts at line `first_line` of `origin`) in
    /// order, handing each rendered result to `emit`; stops at the first error. Returns whether
    /// all ran.
    fn run(
        &mut self,
        origin: &str,
        source: &str,
        first_line: usize,
        format: Format,
        emit: &mut dyn FnMut(Emitted),
    ) -> bool;

    /// The tables and their columns, for completion.
    fn names(&self) -> Vec<(String, Vec<String>)>;
}

impl Backend for Session {
    fn run(
        &mut self,
        origin: &str,
        source: &str,
        first_line: usize,
        format: Format,
        emit: &mut dyn FnMut(Emitted),
    ) -> bool {
        run_source_from(self, origin, source, first_line, format, emit)
    }

    fn names(&self) -> Vec<(String, Vec<String>)> {
        Session::names(self)
    }
}

/// The output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// Tables (comfy-table), for people.
    Table,
    /// One JSON object per statement result, one per line.
    Json,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Table => Format::Table,
            FormatArg::Json => Format::Json,
        }
    }
}

/// Runs the command line; the exit code says whether every statement ran.
/// Renders tables and text for the terminal's width when the output is a terminal (read
/// again before each statement at the prompt, where the window may have been resized).
pub fn fit_terminal() {
    let width = std::io::stdout()
        .is_terminal()
        .then(crossterm::terminal::size)
        .and_then(Result::ok)
        // A terminal that does not say its size (0 columns) is left unfitted.
        .filter(|(columns, _)| *columns > 0)
        .map(|(columns, _)| usize::from(columns));
    dpq::output::set_width(width);
}

pub fn main(args: Args) -> ExitCode {
    let format = Format::from(args.format);
    match &args.command {
        Some(Command::Serve {
            policy,
            listen,
            allow_public_tokens,
            quiet,
            reset_demo,
        }) => {
            let flags = serve::ServeFlags {
                allow_public_tokens: *allow_public_tokens,
                quiet: *quiet,
                reset_demo: *reset_demo,
            };
            return serve::serve(&args, policy, *listen, flags);
        }
        Some(Command::CheckPolicy { file }) => return serve::check_policy(&args, file),
        Some(Command::Token) => return serve::token(),
        Some(Command::Examples { dir, force }) => {
            return write_examples(args.statements.is_some(), dir.as_deref(), *force);
        }
        Some(Command::Connect { url, token_file }) => {
            return serve::connect(&args, url, token_file.as_deref(), format, None);
        }
        Some(Command::Run {
            files,
            server: Some(url),
            token_file,
        }) => {
            return serve::connect(&args, url, token_file.as_deref(), format, Some(files));
        }
        _ => {}
    }
    fit_terminal();
    let state_dir = match state_dir(args.state_dir.clone()) {
        Ok(dir) => dir,
        Err(message) => {
            eprintln!("dpq: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let store = match (args.practice, state_dir) {
        // Practice reads and writes no ledger, and still writes no chart where they are.
        (true, Some(dir)) => Store::memory_beside(dir),
        (true, None) => Store::memory(),
        (false, Some(dir)) => Store::dir(dir),
        (false, None) => {
            eprintln!(
                "dpq: no state directory for the ledgers: give --state-dir DIR or set DPQ_STATE_DIR"
            );
            return ExitCode::from(EXIT_USAGE);
        }
    };
    // Charts stay out of every state directory this command line knows of, not only the one
    // in use: the default one, and the environment's.
    let store = [
        dirs::data_dir().map(|d| d.join("dpq")),
        std::env::var_os("DPQ_STATE_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
    ]
    .into_iter()
    .flatten()
    .filter(|d| d.is_absolute())
    .fold(store, Store::guarding);
    let randomness = match args.seed {
        Some(s) => Randomness::Seeded(s),
        None => Randomness::Os,
    };
    let mut session = Session::with_store(randomness, store);
    // A progress bar for long statements only where a person watches: table output to a
    // terminal. JSON and redirected output stay clean.
    if format == Format::Table && std::io::stdout().is_terminal() && std::io::stderr().is_terminal()
    {
        session.set_progress(Some(Box::new(Bar::default())));
    }
    let ok = match (&args.command, &args.statements) {
        (Some(_), Some(_)) => {
            eprintln!("dpq: -c and run cannot be used together");
            return ExitCode::from(EXIT_USAGE);
        }
        (Some(Command::Run { files, .. }), None) => run_files(&mut session, files, format),
        (None, Some(statements)) => run_text(&mut session, "-c", statements, format),
        (None, None) => repl::run(&mut session, format),
        // The other commands returned above.
        (Some(_), None) => true,
    };
    ExitCode::from(if ok { EXIT_OK } else { EXIT_STATEMENT_FAILED })
}

/// An indicatif progress bar on standard error.
#[derive(Default)]
struct Bar(Mutex<Option<ProgressBar>>);

impl Bar {
    fn bar(&self) -> Option<ProgressBar> {
        self.0.lock().ok().and_then(|b| b.clone())
    }
}

impl Progress for Bar {
    fn start(&self, what: &str, total: u64) {
        // The bar takes what the terminal's width leaves (`wide_bar`): the line fits it.
        let style = ProgressStyle::with_template(
            "{msg} [{wide_bar}] {human_pos}/{human_len} runs, {eta} left",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
            .with_style(style)
            .with_message(what.to_string());
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(bar);
        }
    }

    fn advance(&self, done: u64) {
        if let Some(bar) = self.bar() {
            bar.inc(done);
        }
    }

    fn finish(&self) {
        if let Some(bar) = self.0.lock().ok().and_then(|mut b| b.take()) {
            bar.finish_and_clear();
        }
    }
}

pub(crate) use dpq::sys::state_dir;

/// `dpq examples [DIR]`: lists the bundled example scripts, or writes them into `dir`.
fn write_examples(with_statements: bool, dir: Option<&std::path::Path>, force: bool) -> ExitCode {
    if with_statements {
        eprintln!("dpq: -c and examples cannot be used together");
        return ExitCode::from(EXIT_USAGE);
    }
    fit_terminal();
    let Some(dir) = dir else {
        println!("{}", dpq::output::fit(&examples::listing()));
        return ExitCode::from(EXIT_OK);
    };
    match examples::write(dir, force) {
        Ok(fates) => {
            let report = examples::report(dir, &fates);
            println!("{}", dpq::output::fit(&escape_controls(&report)));
            ExitCode::from(EXIT_OK)
        }
        Err(e) => {
            eprintln!("dpq: {}", escape_controls(&e.to_string()));
            if matches!(e, examples::WriteError::Differs { .. }) {
                let dir = examples::shell_word(&dir.display().to_string());
                eprintln!(
                    "help: to replace every bundled file that differs, type: dpq examples --force {}",
                    escape_controls(&dir)
                );
            }
            ExitCode::from(EXIT_STATEMENT_FAILED)
        }
    }
}

/// The command line, parsed. A script named where a command is expected (`dpq
/// quickstart.dpq`) is refused with the command that runs it; any other mistake is clap's to
/// report (and `--help` and `--version` its to print).
pub fn parse() -> Result<Args, ExitCode> {
    let error = match Args::try_parse() {
        Ok(args) => return Ok(args),
        Err(error) => error,
    };
    if error.kind() == clap::error::ErrorKind::InvalidSubcommand {
        let typed: Vec<String> = std::env::args_os()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let word = match error.get(clap::error::ContextKind::InvalidSubcommand) {
            Some(clap::error::ContextValue::String(word)) => word.as_str(),
            _ => "",
        };
        if let Some(help) = run_hint(&typed, word) {
            eprintln!("dpq: unknown command `{}`", escape_controls(word));
            eprintln!("help: to run a script, type: {}", escape_controls(&help));
            return Err(ExitCode::from(EXIT_USAGE));
        }
    }
    let _ = error.print();
    Err(ExitCode::from(
        u8::try_from(error.exit_code()).unwrap_or(EXIT_USAGE),
    ))
}

/// The command that runs `word` as a script, when `word` (typed among `typed`, the arguments)
/// reads as one: it ends in `.dpq` or names a file. `run` goes just before it, so options
/// typed before it stay and the words after it are scripts too. A bare name found only under
/// `examples/` (as `dpq quickstart.dpq` typed where the examples were written) is given
/// its path there.
fn run_hint(typed: &[String], word: &str) -> Option<String> {
    let path = std::path::Path::new(word);
    if !(word.ends_with(".dpq") || path.is_file()) {
        return None;
    }
    let at = typed.iter().position(|a| a == word)?;
    let in_examples = std::path::Path::new("examples").join(word);
    let script = if !path.exists() && path.components().count() == 1 && in_examples.is_file() {
        format!("examples/{word}")
    } else {
        word.to_string()
    };
    // After `--` every word is a script's: it stays after `run`.
    let ended = typed[..at].iter().any(|a| a == "--");
    let mut words: Vec<&str> = vec!["dpq"];
    words.extend(
        typed[..at]
            .iter()
            .map(String::as_str)
            .filter(|a| *a != "--"),
    );
    words.push("run");
    if ended {
        words.push("--");
    }
    words.push(&script);
    words.extend(typed[at + 1..].iter().map(String::as_str));
    let words: Vec<String> = words.into_iter().map(examples::shell_word).collect();
    Some(words.join(" "))
}

pub(crate) fn run_files(session: &mut dyn Backend, files: &[PathBuf], format: Format) -> bool {
    for file in files {
        let origin = file.display().to_string();
        let source = match std::fs::read_to_string(file) {
            // A byte-order mark some editors write is not part of the script.
            Ok(s) => s.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(s),
            Err(e) => {
                eprintln!("dpq: cannot read {origin}: {e}");
                return false;
            }
        };
        if !run_text(session, &origin, &source, format) {
            return false;
        }
    }
    true
}

/// Runs `source`, printing results to stdout and errors to stderr (table) or stdout (JSON).
pub fn run_text(session: &mut dyn Backend, origin: &str, source: &str, format: Format) -> bool {
    let mut printer = Printer::new(format);
    session.run(origin, source, 1, format, &mut |e| printer.emit(e))
}

/// Prints emitted results, a blank line between tables.
pub struct Printer {
    format: Format,
    first: bool,
}

impl Printer {
    /// A printer for `format`.
    pub fn new(format: Format) -> Self {
        Self {
            format,
            first: true,
        }
    }

    /// Prints one piece of output where it belongs.
    pub fn emit(&mut self, e: Emitted) {
        let separate = self.format == Format::Table && !self.first;
        self.first = false;
        let mut out = std::io::stdout().lock();
        match e {
            Emitted::Result(text) => {
                if separate {
                    let _ = writeln!(out);
                }
                let _ = writeln!(out, "{text}");
            }
            Emitted::Error(text) if self.format == Format::Json => {
                let _ = writeln!(out, "{text}");
            }
            Emitted::Error(text) => {
                let _ = out.flush();
                eprintln!("{text}");
            }
        }
        let _ = out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::Args;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Args::command().debug_assert();
    }
}
