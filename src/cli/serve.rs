//! `dpq serve`, `dpq connect`, `dpq run --server`, `dpq check-policy` and `dpq token`.

use super::remote::{self, Remote};
use super::{repl, run_files, state_dir, Args, EXIT_OK, EXIT_STATEMENT_FAILED, EXIT_USAGE};
use dpq::output::Format;
use dpq::server::activity::{Activity, Log, Summary};
use dpq::server::policy::Policy;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;

/// Seeded noise and practice are a local curator's tools: a served dataset never has them.
fn refuse_local_flags(args: &Args, what: &str) -> Option<ExitCode> {
    if args.seed.is_some() || args.practice {
        eprintln!("dpq: {what} takes neither --seed nor --practice: a served dataset is never seeded, and its budget is the server's");
        return Some(ExitCode::from(EXIT_USAGE));
    }
    None
}

/// What a policy admitting the public demo tokens is told.
fn public_tokens(policy: &Policy) -> Option<String> {
    let analysts = policy.public_token_analysts();
    (!analysts.is_empty()).then(|| {
        let (who, holds) = match analysts.len() {
            1 => ("analyst", "holds a demo token"),
            _ => ("analysts", "hold demo tokens"),
        };
        format!(
            "{who} {} {holds} of examples/classroom/tokens/, which are public: anyone can use them. Make new tokens with `dpq token` for real analysts, or pass --allow-public-tokens to serve them on a machine of your own",
            analysts.join(", ")
        )
    })
}

/// The state directory of a policy: the command line's --state-dir, else the policy's, else
/// DPQ_STATE_DIR or the default.
fn policy_state_dir(args: &Args, policy: &Policy) -> Result<Option<PathBuf>, String> {
    match (&args.state_dir, &policy.state_dir) {
        (Some(d), _) | (None, Some(d)) => Ok(Some(d.clone())),
        (None, None) => state_dir(None),
    }
}

/// What `dpq serve` is asked besides its policy and address.
#[derive(Debug, Clone, Copy)]
pub struct ServeFlags {
    /// Serve a policy admitting the public demo tokens.
    pub allow_public_tokens: bool,
    /// Print no line per statement (the summary at exit stays).
    pub quiet: bool,
    /// Clear a demo's state directory first.
    pub reset_demo: bool,
}

/// `dpq serve --policy FILE [--listen ADDR] [--allow-public-tokens] [--quiet] [--reset-demo]`.
pub fn serve(args: &Args, policy: &Path, listen: SocketAddr, flags: ServeFlags) -> ExitCode {
    if let Some(code) = refuse_local_flags(args, "serve") {
        return code;
    }
    let policy = match Policy::read(policy) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("dpq: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if let Some(message) = public_tokens(&policy) {
        if !flags.allow_public_tokens {
            eprintln!("dpq serve: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
        eprintln!(
            "dpq serve: --allow-public-tokens: analysts with the public demo tokens are served"
        );
    }
    let dir = match policy_state_dir(args, &policy) {
        Ok(d) => d,
        Err(message) => {
            eprintln!("dpq: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let Some(state_dir) = dir else {
        eprintln!("dpq: no state directory: give --state-dir DIR or state_dir in the policy");
        return ExitCode::from(EXIT_USAGE);
    };
    if flags.reset_demo {
        match dpq::server::reset_demo(&policy, &state_dir) {
            Ok(removed) if removed.is_empty() => eprintln!(
                "dpq serve: --reset-demo: {} holds no state: every budget is whole",
                state_dir.display()
            ),
            Ok(removed) => eprintln!(
                "dpq serve: --reset-demo: the demo's state in {} is cleared ({}): every budget is whole again",
                state_dir.display(),
                removed.join(", ")
            ),
            Err(message) => {
                eprintln!("dpq serve: --reset-demo: {message}");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    let widths = Widths::of(&policy);
    let printer = (!flags.quiet).then(|| Printer::start(widths));
    let log = printer.as_ref().map(Printer::log);
    let options = dpq::server::Options { listen, state_dir };
    let served = dpq::server::serve(
        &policy,
        options,
        |started| {
            for note in &started.notes {
                eprintln!("dpq serve: {note}");
            }
            // Written, not printed: a closed output must not stop the server.
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "dpq serve: listening on http://{}", started.addr);
            if !flags.quiet {
                let _ = writeln!(out, "{}", widths.header());
            }
            let _ = out.flush();
        },
        log,
    );
    let dropped = printer.map_or(0, Printer::finish);
    match served {
        Ok(summary) => {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "{}", summary_text(&summary, widths, dropped));
            let _ = out.flush();
            eprintln!("dpq serve: stopped");
            ExitCode::from(EXIT_OK)
        }
        Err(e) => {
            eprintln!("dpq serve: {e}");
            ExitCode::from(EXIT_STATEMENT_FAILED)
        }
    }
}

/// The widths of the curator's columns: the policy's longest analyst and dataset names.
#[derive(Debug, Clone, Copy)]
struct Widths {
    analyst: usize,
    dataset: usize,
}

/// The widest statement kind (`COMPARE NOISE`) and outcome (`over dataset budget`).
const KIND_WIDTH: usize = 13;
const OUTCOME_WIDTH: usize = 19;

impl Widths {
    fn of(policy: &Policy) -> Widths {
        let longest = |names: &mut dyn Iterator<Item = usize>, least: usize| {
            names.max().unwrap_or(0).max(least)
        };
        Widths {
            analyst: longest(&mut policy.analysts.iter().map(|a| a.name.len()), 7),
            dataset: longest(&mut policy.datasets.iter().map(|d| d.name.len()), 7),
        }
    }

    fn header(self) -> String {
        format!(
            "{:8}  {:aw$}  {:dw$}  {:KIND_WIDTH$}  {:OUTCOME_WIDTH$}  {:>5}  left",
            "time",
            "analyst",
            "dataset",
            "statement",
            "outcome",
            "eps",
            aw = self.analyst,
            dw = self.dataset,
        )
    }

    /// A statement's line: its local time, who, where, what kind, how it ended, the epsilon
    /// it spent and what the analyst has left. Never an answer, nor the statement's text.
    fn line(self, a: &Activity) -> String {
        let time = chrono::DateTime::<chrono::Local>::from(a.time);
        format!(
            "{}  {:aw$}  {:dw$}  {:KIND_WIDTH$}  {:OUTCOME_WIDTH$}  {:>5}  {}",
            time.format("%H:%M:%S"),
            a.analyst,
            a.dataset.as_deref().unwrap_or("-"),
            a.statement,
            a.outcome.to_string(),
            a.eps_spent.normalize().to_string(),
            a.budget
                .map_or("-".to_string(), |b| b.remaining.normalize().to_string()),
            aw = self.analyst,
            dw = self.dataset,
        )
    }
}

/// The day a line's time falls on, for a line of its own when it changes.
fn day(a: &Activity) -> String {
    chrono::DateTime::<chrono::Local>::from(a.time)
        .format("-- %A %-d %B %Y, local time --")
        .to_string()
}

/// What goes to the printing thread.
enum Message {
    Line(Box<Activity>),
    End,
}

/// Prints the curator's lines on a thread of its own, so that a slow or paused terminal
/// never holds up a statement: lines it cannot take at once are counted, not waited for.
struct Printer {
    sender: SyncSender<Message>,
    thread: std::thread::JoinHandle<()>,
    dropped: Arc<AtomicU64>,
}

/// Lines waiting to be printed before more are dropped.
const WAITING_LINES: usize = 4096;

impl Printer {
    fn start(widths: Widths) -> Printer {
        let (sender, receiver) = sync_channel::<Message>(WAITING_LINES);
        let thread = std::thread::spawn(move || {
            let mut today = String::new();
            while let Ok(Message::Line(a)) = receiver.recv() {
                let mut out = std::io::stdout().lock();
                let date = day(&a);
                if date != today {
                    let _ = writeln!(out, "{date}");
                    today = date;
                }
                let _ = writeln!(out, "{}", widths.line(&a));
                let _ = out.flush();
            }
        });
        Printer {
            sender,
            thread,
            dropped: Arc::new(AtomicU64::new(0)),
        }
    }

    /// What the server calls with each statement: hands it over without waiting.
    fn log(&self) -> Log {
        let sender = self.sender.clone();
        let dropped = Arc::clone(&self.dropped);
        Arc::new(move |a: &Activity| {
            if sender.try_send(Message::Line(Box::new(a.clone()))).is_err() {
                dropped.fetch_add(1, Ordering::Relaxed);
            }
        })
    }

    /// Prints what is waiting and stops; returns how many lines were dropped.
    fn finish(self) -> u64 {
        let _ = self.sender.send(Message::End);
        let _ = self.thread.join();
        self.dropped.load(Ordering::Relaxed)
    }
}

/// The summary printed when the server stops.
fn summary_text(summary: &Summary, widths: Widths, dropped: u64) -> String {
    let mut out = String::new();
    if dropped > 0 {
        out.push_str(&format!(
            "dpq serve: {dropped} line(s) were not printed: the output did not keep up\n"
        ));
    }
    if summary.analysts.is_empty() {
        out.push_str("dpq serve: this run, no analyst ran a statement\n");
    } else {
        out.push_str("dpq serve: this run, by analyst and dataset:\n");
        out.push_str(&format!(
            "  {:aw$}  {:dw$}  {:>10}  {:>5}  left\n",
            "analyst",
            "dataset",
            "statements",
            "spent",
            aw = widths.analyst,
            dw = widths.dataset,
        ));
        for r in &summary.analysts {
            out.push_str(&format!(
                "  {:aw$}  {:dw$}  {:>10}  {:>5}  {}\n",
                r.analyst,
                r.dataset,
                r.statements,
                r.spent.normalize().to_string(),
                r.remaining
                    .map_or("-".to_string(), |d| d.normalize().to_string()),
                aw = widths.analyst,
                dw = widths.dataset,
            ));
        }
    }
    for (name, b) in &summary.datasets {
        out.push_str(&format!(
            "dpq serve: dataset `{name}`: {} of {} spent by all its analysts, {} left\n",
            b.spent.normalize(),
            b.total.normalize(),
            b.remaining.normalize()
        ));
    }
    let (lines, fsyncs) = summary.durable;
    if lines > 0 {
        out.push_str(&format!(
            "dpq serve: {lines} ledger line(s) written, made durable by {fsyncs} fsync(s)\n"
        ));
    }
    out
}

/// `dpq connect URL` (the prompt) and `dpq run --server URL FILE...` (scripts).
pub fn connect(
    args: &Args,
    url: &str,
    token_file: Option<&Path>,
    format: Format,
    files: Option<&Vec<PathBuf>>,
) -> ExitCode {
    if let Some(code) = refuse_local_flags(args, "a server") {
        return code;
    }
    if args.statements.is_some() && files.is_some() {
        eprintln!("dpq: -c and run cannot be used together");
        return ExitCode::from(EXIT_USAGE);
    }
    let token = match remote::token(token_file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("dpq: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let mut server = match Remote::connect(url, token) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("dpq: {e}");
            return ExitCode::from(EXIT_STATEMENT_FAILED);
        }
    };
    // The server renders for no width: dpq fits its tables and prose to this terminal.
    super::fit_terminal();
    let ok = match (files, &args.statements) {
        (Some(files), _) => run_files(&mut server, files, format),
        (None, Some(statements)) => super::run_text(&mut server, "-c", statements, format),
        (None, None) => {
            // At a terminal, as the prompt's banner: piped output stays results only.
            if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                println!("{}", dpq::output::fit(&server.greeting()));
            }
            repl::run(&mut server, format)
        }
    };
    ExitCode::from(if ok { EXIT_OK } else { EXIT_STATEMENT_FAILED })
}

/// `dpq check-policy FILE`: the policy valid, its files readable as declared, and what each
/// analyst may do.
pub fn check_policy(args: &Args, file: &Path) -> ExitCode {
    let policy = match Policy::read(file) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("dpq: {e}");
            return ExitCode::from(EXIT_STATEMENT_FAILED);
        }
    };
    let mut ok = true;
    let mut contents = Vec::new();
    let mut deadlines = Vec::new();
    for d in &policy.datasets {
        match dpq::server::read_dataset(d) {
            Ok((source, content)) => {
                let deadline = dpq::server::response_deadline(d, &source);
                let how = if d.response_ms.is_some() {
                    "its response_ms"
                } else {
                    "the default for its source and size"
                };
                deadlines.push(format!(
                    "dataset `{}`: a statement that reads its rows answers no earlier than {} ms after it began ({how})",
                    d.name,
                    deadline.as_millis()
                ));
                deadlines.extend(dpq::server::unpadded_note(d, &source));
                match dpq::server::contents_of(d, &source, content) {
                    Ok(all) => contents.extend(all.into_iter().map(|c| (d.name.clone(), c))),
                    Err(e) => {
                        eprintln!("dpq: {}: {e}", file.display());
                        ok = false;
                    }
                }
            }
            Err(e) => {
                eprintln!("dpq: {}: {e}", file.display());
                ok = false;
            }
        }
    }
    // What the state directory remembers of the datasets' identities, read and never written.
    let dir = match policy_state_dir(args, &policy) {
        Ok(d) => d,
        Err(message) => {
            eprintln!("dpq: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let mut notes = Vec::new();
    match dpq::server::identity::check(&policy, dir.as_deref(), &contents) {
        Ok(n) => notes = n,
        Err(e) => {
            eprintln!("dpq: {}: {e}", file.display());
            ok = false;
        }
    }
    if let Some(message) = public_tokens(&policy) {
        eprintln!("dpq: {}: warning: {message}", file.display());
    }
    println!("{}", policy.describe());
    for line in deadlines {
        println!("{line}");
    }
    for note in notes {
        println!("{note}");
    }
    if ok {
        println!("The policy is valid.");
        ExitCode::from(EXIT_OK)
    } else {
        ExitCode::from(EXIT_STATEMENT_FAILED)
    }
}

/// `dpq token`: a new token for an analyst, and the hash for the policy.
pub fn token() -> ExitCode {
    let (token, hash) = dpq::server::token::new_token();
    println!("token = \"{token}\"        # give this to the analyst; dpq keeps no copy");
    println!("token_hash = \"{hash}\"   # put this in the policy's [[analyst]]");
    ExitCode::from(EXIT_OK)
}
