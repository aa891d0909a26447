//! `dpq serve`, `dpq connect`, `dpq run --server`, `dpq check-policy` and `dpq token`.

use super::remote::{self, Remote};
use super::{repl, run_files, state_dir, Args, EXIT_OK, EXIT_STATEMENT_FAILED, EXIT_USAGE};
use dpq::output::Format;
use dpq::server::policy::Policy;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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

/// `dpq serve --policy FILE [--listen ADDR] [--allow-public-tokens]`.
pub fn serve(args: &Args, policy: &Path, listen: SocketAddr, allow_public: bool) -> ExitCode {
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
        if !allow_public {
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
    let options = dpq::server::Options { listen, state_dir };
    let served = dpq::server::serve(&policy, options, |started| {
        for note in &started.notes {
            eprintln!("dpq serve: {note}");
        }
        println!("dpq serve: listening on http://{}", started.addr);
        let _ = std::io::stdout().flush();
    });
    match served {
        Ok(()) => {
            eprintln!("dpq serve: stopped");
            ExitCode::from(EXIT_OK)
        }
        Err(e) => {
            eprintln!("dpq serve: {e}");
            ExitCode::from(EXIT_STATEMENT_FAILED)
        }
    }
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
    let ok = match (files, &args.statements) {
        (Some(files), _) => run_files(&mut server, files, format),
        (None, Some(statements)) => super::run_text(&mut server, "-c", statements, format),
        (None, None) => repl::run(&mut server, format),
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
