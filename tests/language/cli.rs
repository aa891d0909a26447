//! Drives the real `dpq` binary: script mode, `-c`, JSON, the piped REPL, exit codes.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// The binary, with a fresh state directory so tests never touch the user's ledgers.
fn command() -> (Command, tempfile::TempDir) {
    let state = tempfile::tempdir().expect("a state directory");
    let mut c = Command::new(env!("CARGO_BIN_EXE_dpq"));
    c.env("DPQ_STATE_DIR", state.path());
    (c, state)
}

fn dpq(args: &[&str]) -> Output {
    let (mut c, _state) = command();
    c.args(args).output().expect("the dpq binary runs")
}

/// The prompt reading `input` from a pipe, with `args`.
fn piped(args: &[&str], input: &[u8]) -> Output {
    let (mut c, _state) = command();
    let mut child = c
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn dpq");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write");
    child
        .wait_with_output()
        .expect("dpq ends at the end of its input")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn quickstart_runs_as_a_script() {
    let o = dpq(&["run", "examples/quickstart.dpq"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Bayes estimate"), "{out}");
    assert!(out.contains("0.08047"), "{out}");
    assert!(
        !out.contains("NOT private"),
        "an unseeded run is private: {out}"
    );
}

#[test]
fn a_failing_script_names_file_line_and_column_and_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("bad.dpq");
    std::fs::write(
        &script,
        "LOAD 'examples/data/people.csv';\n\nCOUNT WHERE age < 30 WITH EPS 0;\nSHOW TABLES;\n",
    )
    .expect("write script");
    let o = dpq(&["run", script.to_str().expect("utf-8 path")]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    let expected = format!("{}:3:31: epsilon must be", script.display());
    assert!(err.starts_with(&expected), "{err}");
    assert!(err.contains("COUNT WHERE age < 30 WITH EPS 0;"), "{err}");
    assert!(err.contains('^'), "{err}");
    // Nothing after the error ran.
    assert!(
        !stdout(&o).contains("Loaded table people.\n\nLoaded"),
        "{}",
        stdout(&o)
    );
    assert!(!stdout(&o).contains("current"));
}

#[test]
fn scripts_share_one_session_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = dir.path().join("a.dpq");
    let b = dir.path().join("b.dpq");
    std::fs::write(&a, "LOAD 'examples/data/people.csv' AS p;").expect("write");
    std::fs::write(&b, "DESCRIBE p;").expect("write");
    let o = dpq(&[
        "run",
        a.to_str().expect("utf-8"),
        b.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn missing_script_is_a_clear_error() {
    let o = dpq(&["run", "no/such/script.dpq"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot read no/such/script.dpq"));
}

#[test]
fn dash_c_with_json_gives_one_object_per_statement() {
    let o = dpq(&[
        "--format",
        "json",
        "--seed",
        "7",
        "-c",
        "LOAD 'examples/data/people.csv'; COUNT WHERE age <= 30 WITH EPS 0.1 PRIOR p=0.3; CHOOSE EPS WITHIN 20% AT 0.8 FOR 100; SHOW BUDGET;",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(lines.len(), 4);
    let count = &lines[1];
    assert_eq!(count["kind"], "count");
    for field in [
        "noisy",
        "eps",
        "mechanism",
        "n",
        "interval95",
        "bayes",
        "credible95",
        "budget_spent",
        "budget_remaining",
    ] {
        assert!(count.get(field).is_some(), "count lacks {field}: {count}");
    }
    assert_eq!(count["private"], false);
    assert_eq!(count["seed"], 7);
    assert_eq!(lines[2]["kind"], "choose_eps");
    let eps = lines[2]["eps"].as_f64().expect("eps is a number");
    assert!((eps - 0.080_471_895_6).abs() < 1e-9, "{eps}");
    assert_eq!(lines[3]["kind"], "budget");
    for field in ["total", "spent", "remaining", "ledger"] {
        assert!(lines[3].get(field).is_some(), "budget lacks {field}");
    }
}

#[test]
fn json_errors_are_objects_with_line_and_column() {
    let o = dpq(&[
        "--format",
        "json",
        "-c",
        "SHOW TABLES;\n  COUNT WHERE x < 1 WITH EPS 1;",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let last = stdout(&o)
        .lines()
        .last()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON"))
        .expect("an error line");
    assert_eq!(last["kind"], "error");
    assert_eq!(last["line"], 2);
    assert_eq!(last["column"], 3);
    assert!(last["message"]
        .as_str()
        .expect("message")
        .contains("no table"));
}

#[test]
fn seeded_runs_are_reproducible_and_say_they_are_not_private() {
    let run = || {
        stdout(&dpq(&[
            "--seed",
            "11",
            "-c",
            "LOAD 'examples/data/people.csv'; COUNT WHERE age < 40 WITH EPS 0.2;",
        ]))
    };
    let (a, b) = (run(), run());
    assert_eq!(a, b);
    assert!(a.contains("NOT private"), "{a}");
}

#[test]
fn unseeded_runs_draw_fresh_noise() {
    let run = || {
        let o = dpq(&[
            "--format",
            "json",
            "-c",
            "LOAD 'examples/data/people.csv'; COUNT WHERE age < 40 WITH EPS 0.2;",
        ]);
        let line = stdout(&o).lines().nth(1).expect("count line").to_string();
        serde_json::from_str::<serde_json::Value>(&line).expect("JSON")["noisy"]
            .as_f64()
            .expect("noisy")
    };
    // Two continuous Laplace draws coincide with probability 0.
    assert_ne!(run(), run());
}

#[test]
fn the_repl_reads_a_pipe_with_multi_line_statements_and_help() {
    let o = piped(
        &["--seed", "3"],
        b"help\nhelp count\nLOAD 'examples/data/people.csv'\n  AS people;\nCOUNT WHERE age\n < 30\n WITH EPS 0.1;\nSHOW BUDGET;\n",
    );
    let out = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.contains("Statements (end each with ;)"), "{out}");
    assert!(out.contains("COUNT WHERE condition WITH EPS e"), "{out}");
    assert!(out.contains("Loaded table people."), "{out}");
    assert!(out.contains("noisy count"), "{out}");
    assert!(out.contains("0.1 spent, 0.9 remaining"), "{out}");
}

#[test]
fn a_piped_repl_keeps_going_after_an_error_and_reports_it() {
    let o = piped(&[], b"USE nothing;\nCHOOSE EPS WITHIN 5 AT 0.95;\n");
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("<repl>:1:5: unknown table `nothing`"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("0.5991"), "{}", stdout(&o));
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(dpq(&["--format", "yaml"]).status.code(), Some(2));
    assert_eq!(dpq(&["run"]).status.code(), Some(2));
}

#[test]
fn global_options_go_before_or_after_run() {
    for args in [
        ["--format", "json", "run", "examples/quickstart.dpq"],
        ["run", "--format", "json", "examples/quickstart.dpq"],
    ] {
        let o = dpq(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).starts_with("{\"budget_remaining\""), "{args:?}");
    }
    assert_eq!(
        dpq(&["-c", "SHOW TABLES;", "run", "examples/quickstart.dpq"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn dash_c_takes_text_that_starts_with_a_comment() {
    let o = dpq(&["-c", "-- nothing but a note\nCHOOSE EPS WITHIN 5 AT 0.95;"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("0.5991"));
}

#[test]
fn a_script_may_start_with_a_byte_order_mark() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("bom.dpq");
    std::fs::write(&script, "\u{feff}CHOOSE EPS WITHIN 5 AT 0.95;\n").expect("write");
    let o = dpq(&["run", script.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_piped_repl_names_the_line_of_the_whole_input() {
    let o = piped(
        &[],
        b"CHOOSE EPS WITHIN 5\n  AT 0.95;\n\nCHOOSE EPS\n  WITHIN 5 AT 2;\n",
    );
    assert!(
        stderr(&o).starts_with("<repl>:5:15: the confidence level"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn simulate_shows_no_progress_bar_when_output_is_not_a_terminal() {
    for format in [&[][..], &["--format", "json"][..]] {
        let mut args = vec!["--seed", "1"];
        args.extend_from_slice(format);
        args.extend_from_slice(&["-c", "SIMULATE N 100 P 0.3 EPS (0.1, 1) RUNS 200000;"]);
        let out = dpq(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(stderr(&out), "", "nothing but results when piped");
        assert!(stdout(&out).contains("0.1"));
    }
}

/// At a terminal, Ctrl-D at the continuation prompt abandons the statement being typed (it
/// would have spent budget without its `;`); a second Ctrl-D leaves.
#[test]
fn ctrl_d_at_the_continuation_prompt_abandons_the_statement() {
    let (mut c, state) = command();
    c.env("HOME", state.path());
    let mut p = rexpect::session::spawn_command(c, Some(20_000)).expect("a pty");
    p.exp_string("dpq> ").expect("the prompt");
    p.send_line("LOAD 'examples/data/people.csv' AS people;")
        .expect("send");
    p.exp_string("dpq> ").expect("loaded");
    p.send_line("COUNT WHERE age < 30 WITH EPS 0.5")
        .expect("send");
    p.exp_string("  -> ").expect("the continuation prompt");
    p.send_control('d').expect("Ctrl-D");
    p.exp_string("abandoned").expect("abandoned");
    p.exp_string("dpq> ").expect("a fresh prompt");
    p.send_line("SHOW BUDGET;").expect("send");
    p.exp_string("Nothing spent yet.")
        .expect("nothing was spent");
    p.exp_string("dpq> ").expect("the prompt");
    p.send_control('d').expect("Ctrl-D");
    p.exp_eof().expect("dpq leaves");
}

/// `--practice` keeps spending in memory: every result says so and no state is written.
#[test]
fn practice_touches_no_ledger_and_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let o = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .env("DPQ_STATE_DIR", &state)
        .args(["--practice", "run", "examples/quickstart.dpq"])
        .output()
        .expect("dpq runs");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let results = out.split("\n\n").count();
    assert_eq!(out.matches("note: practice").count(), results, "{out}");
    assert!(!state.exists(), "nothing written under the state directory");
    let o = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .env("DPQ_STATE_DIR", &state)
        .args(["--practice", "--format", "json", "-c"])
        .arg("LOAD 'examples/data/people.csv'; COUNT WHERE age < 30 WITH EPS 0.1;")
        .output()
        .expect("dpq runs");
    for line in stdout(&o).lines() {
        assert!(line.contains("\"practice\":true"), "{line}");
    }
    assert!(!state.exists());
}

/// The bundled examples, run in the README's order in one state directory and then again,
/// never break each other: none leaves a cube or a spent budget in another's way.
#[test]
fn the_examples_run_in_any_order_in_one_state_directory() {
    let (_, state) = command();
    let examples = [
        "examples/quickstart.dpq",
        "examples/bayes.dpq",
        "examples/cube.dpq",
        "examples/xiao-xiong.dpq",
        "examples/lab.dpq",
        "examples/breakdown.dpq",
        "examples/income.dpq",
        "examples/visits.dpq",
        "examples/quickstart.dpq",
        "examples/income.dpq",
        "examples/visits.dpq",
        "examples/cube.dpq",
        "examples/breakdown.dpq",
        "examples/bayes.dpq",
        "examples/lab.dpq",
        "examples/quickstart.dpq",
    ];
    for example in examples {
        let o = Command::new(env!("CARGO_BIN_EXE_dpq"))
            .env("DPQ_STATE_DIR", state.path())
            .args(["run", example])
            .output()
            .expect("dpq runs");
        assert!(o.status.success(), "{example}: {}", stderr(&o));
    }
}

/// Practice still never writes a chart into the state directory it leaves alone.
#[test]
fn practice_refuses_charts_in_the_state_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    std::fs::create_dir_all(state.join("ledgers")).expect("mkdir");
    let target = state.join("ledgers").join("x.ledger");
    std::fs::write(&target, "kept").expect("write");
    let o = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .env("DPQ_STATE_DIR", &state)
        .args(["--practice", "-c"])
        .arg(format!(
            "SIMULATE N 10 P 0.3 EPS 1 RUNS 2 PLOT '{}';",
            target.display()
        ))
        .output()
        .expect("dpq runs");
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).contains("state directory"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "kept");
}

/// A relative DPQ_STATE_DIR would give every working directory a budget of its own.
#[test]
fn a_relative_state_directory_from_the_environment_is_refused() {
    let o = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .env("DPQ_STATE_DIR", "relative/state")
        .args(["-c", "SHOW TABLES;"])
        .output()
        .expect("dpq runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("absolute"), "{}", stderr(&o));
}

/// A header can hold terminal escapes (setting the title, moving the cursor) or a
/// right-to-left override: such a header is refused, and nothing printed carries them raw.
#[test]
fn names_with_control_characters_are_printed_escaped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("t.csv");
    std::fs::write(&data, "age\u{1b}]0;pwned\u{7},b\u{202e}x\n1,2\n3,4\n").expect("write");
    for format in ["table", "json"] {
        let o = dpq(&[
            "--format",
            format,
            "-c",
            &format!(
                "LOAD '{}' AS t; DESCRIBE; SHOW TABLES; COUNT WHERE nope = 1 WITH EPS 0.1;",
                data.display()
            ),
        ]);
        for text in [stdout(&o), stderr(&o)] {
            assert!(!text.contains('\u{1b}'), "{format}: {text}");
            assert!(!text.contains('\u{7}'), "{format}: {text}");
            assert!(!text.contains('\u{202e}'), "{format}: {text}");
        }
        // Such a header is refused outright: a name must be plain.
        let all = stdout(&o) + &stderr(&o);
        assert!(
            all.contains("does not read as a header row"),
            "{format}: {all}"
        );
    }
}

/// `help` echoes what it was asked: escaped, and in JSON as a JSON object.
#[test]
fn help_echoes_its_topic_escaped_and_speaks_json_in_json() {
    let o = piped(&[], b"help \x1b]0;PWN\x07 x\n");
    assert!(!stdout(&o).contains('\u{1b}'), "{}", stdout(&o));
    assert!(!stdout(&o).contains('\u{7}'), "{}", stdout(&o));
    let o = piped(&["--format", "json"], b"help COUNT\n");
    for line in stdout(&o).lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("one JSON object a line");
        assert_eq!(v["kind"], "help", "{line}");
    }
}

/// A chart is never written into the default state directory, even while another is used.
#[test]
fn charts_stay_out_of_the_default_state_directory() {
    let home = tempfile::tempdir().expect("home");
    let default = home.path().join(".local/share/dpq");
    std::fs::create_dir_all(&default).expect("mkdir");
    let other = home.path().join("other");
    let target = default.join("x.svg");
    let o = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .env("HOME", home.path())
        .env_remove("XDG_DATA_HOME")
        .args(["--state-dir", other.to_str().expect("utf-8"), "-c"])
        .arg(format!(
            "SIMULATE N 10 P 0.3 EPS 1 RUNS 2 PLOT '{}';",
            target.display()
        ))
        .output()
        .expect("dpq runs");
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(!target.exists());
}

/// The prompt's own commands, as psql and DuckDB users type them, on lines of their own:
/// `.tables`, `.mode json`, `\?`, an unknown one refused with a message (and the exit code of
/// a failure), and `\q` leaving before the rest of the input.
#[test]
fn the_prompt_knows_the_commands_of_psql_and_duckdb() {
    let o = piped(
        &["--practice"],
        b".tables\nLOAD 'examples/data/people.csv' AS p;\n.mode json\n.tables\n\\?\n.frobnicate\n\\q\nSHOW BUDGET;\n",
    );
    let out = stdout(&o);
    assert!(out.contains("No tables are loaded."), "{out}");
    let tables = out
        .lines()
        .find(|l| l.starts_with("{\"kind\":\"tables\""))
        .unwrap_or_else(|| panic!("SHOW TABLES in JSON after .mode json: {out}"));
    assert!(tables.contains("\"name\":\"p\""), "{tables}");
    assert!(out.contains("\"kind\":\"help\""), "{out}");
    assert!(!out.contains("\"kind\":\"budget\""), "ran after \\q: {out}");
    assert!(
        stderr(&o).contains("unknown command `.frobnicate`"),
        "{}",
        stderr(&o)
    );
    assert_eq!(o.status.code(), Some(1));
}

/// At a terminal the prompt runs `~/.dpqrc` first, Tab completes a table's name, and two
/// prompts open at once both keep their lines in the history (appended, not overwritten by the
/// last to leave).
#[test]
fn the_prompt_runs_dpqrc_and_appends_its_history() {
    let (_, state) = command();
    let home = state.path().join("home");
    std::fs::create_dir_all(&home).expect("a home");
    std::fs::write(
        home.join(".dpqrc"),
        "LOAD 'examples/data/people.csv' AS people;\n",
    )
    .expect("the rc file");
    let prompt = || {
        let (mut c, _) = command();
        c.env("HOME", &home)
            .env_remove("XDG_DATA_HOME")
            .env("DPQ_STATE_DIR", state.path());
        let mut p = rexpect::session::spawn_command(c, Some(20_000)).expect("a pty");
        p.exp_string("dpq> ").expect("the prompt");
        p
    };
    let mut first = prompt();
    let mut second = prompt();
    first.send_line(".tables").expect("send");
    first.exp_string("people").expect("~/.dpqrc loaded people");
    first.exp_string("dpq> ").expect("the prompt");
    first.send_line("SHOW TABLES;").expect("send");
    first.exp_string("dpq> ").expect("the prompt");
    // Tab completes a table's name after DESCRIBE.
    first.send("DESCRIBE peo\t").expect("send");
    first.send_line(";").expect("send");
    first.exp_string("height_cm").expect("people described");
    first.exp_string("dpq> ").expect("the prompt");
    second.send_line("SHOW BUDGET;").expect("send");
    second.exp_string("dpq> ").expect("the prompt");
    first.send_line("\\q").expect("send");
    first.exp_eof().expect("the first leaves");
    second.send_line(".quit").expect("send");
    second.exp_eof().expect("the second leaves");
    let history = std::fs::read_to_string(home.join(".local/share/dpq/repl_history.txt"))
        .expect("the history");
    assert!(history.contains("SHOW TABLES;"), "{history}");
    assert!(history.contains("SHOW BUDGET;"), "{history}");
}

/// `dpq` with `args`, run in `dir`, reading `input`, with a fresh state directory.
fn dpq_in(dir: &std::path::Path, args: &[&str], input: &[u8]) -> Output {
    let (mut c, _state) = command();
    let mut child = c
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn dpq");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write");
    child.wait_with_output().expect("dpq ends")
}

/// The repository's root, where the tests run and the README's commands are typed.
fn root() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The names of the repository's `examples/*.dpq`, sorted.
fn example_scripts() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("examples"))
        .expect("the examples directory")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".dpq"))
        .collect();
    names.sort();
    names
}

/// A script typed where a command goes (`dpq quickstart.dpq`) is refused with the command that
/// runs it: `run` put before it, the options typed before it kept, a bare name found under
/// `examples/` given its path there. A word that names no script is left to clap's message.
#[test]
fn a_script_named_without_run_is_refused_with_the_command_that_runs_it() {
    let empty = tempfile::tempdir().expect("tempdir");
    let cases: [(&std::path::Path, &[&str], &str, &str); 4] = [
        (
            empty.path(),
            &["quickstart.dpq"],
            "quickstart.dpq",
            "dpq run quickstart.dpq",
        ),
        (
            root(),
            &["--seed", "2", "quickstart.dpq", "bayes.dpq"],
            "quickstart.dpq",
            "dpq --seed 2 run examples/quickstart.dpq bayes.dpq",
        ),
        (
            root(),
            &["examples/my notes.dpq"],
            "examples/my notes.dpq",
            "dpq run 'examples/my notes.dpq'",
        ),
        // An existing file, whatever its name.
        (root(), &["Cargo.toml"], "Cargo.toml", "dpq run Cargo.toml"),
    ];
    for (dir, args, word, help) in cases {
        let o = dpq_in(dir, args, b"");
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert_eq!(stdout(&o), "", "{args:?}");
        assert_eq!(
            stderr(&o),
            format!("dpq: unknown command `{word}`\nhelp: to run a script, type: {help}\n"),
            "{args:?}"
        );
    }
    let o = dpq(&["runn"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("a similar subcommand exists: 'run'"),
        "{}",
        stderr(&o)
    );
}

/// `dpq examples` lists exactly the scripts of `examples/`, each with what it is about.
#[test]
fn dpq_examples_lists_every_script_of_the_examples_directory() {
    let o = dpq(&["examples"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let mut listed: Vec<String> = Vec::new();
    for line in out.lines() {
        let Some(name) = line.strip_prefix("  ").and_then(|l| l.split(' ').next()) else {
            continue;
        };
        if name.ends_with(".dpq") {
            let about = line.trim_start()[name.len()..].trim();
            assert!(about.ends_with('.'), "{name} has no description: {line}");
            listed.push(name.to_string());
        }
    }
    listed.sort();
    assert_eq!(listed, example_scripts(), "{out}");
    assert!(out.contains("dpq examples DIR"), "{out}");
}

/// `dpq examples DIR` writes the scripts and their data as the repository holds them: from
/// DIR every script runs, and gives what it gives from the repository's root; so does the
/// README's tour.
#[test]
fn the_examples_written_out_run_as_they_do_from_the_repository() {
    let parent = tempfile::tempdir().expect("tempdir");
    let tour = parent.path().join("tour");
    let o = dpq_in(parent.path(), &["examples", "tour"], b"");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("Next, type: cd tour && dpq run examples/quickstart.dpq"),
        "{out}"
    );
    for name in example_scripts() {
        let path = format!("examples/{name}");
        assert!(
            out.contains(&format!("  {path}\n")),
            "{path} not listed: {out}"
        );
        let bundled = std::fs::read(tour.join(&path)).expect("the script was written");
        assert_eq!(
            bundled,
            std::fs::read(root().join(&path)).expect("read"),
            "{path}"
        );
        let args = ["run", "--seed", "2", path.as_str()];
        let there = dpq_in(&tour, &args, b"");
        assert!(there.status.success(), "{path}: {}", stderr(&there));
        // lab.dpq plots into examples/figures/: run from the root it would rewrite the
        // repository's chart.
        if name == "lab.dpq" {
            assert!(tour.join("examples/figures/posterior.svg").is_file());
            continue;
        }
        let here = dpq_in(root(), &args, b"");
        assert_eq!(stdout(&there), stdout(&here), "{path}");
        assert_eq!(stderr(&there), stderr(&here), "{path}");
    }
    let tour_statements = b"LOAD 'examples/data/people.csv' AS people;\n\
        COUNT WHERE age <= 30 WITH EPS 0.1 PRIOR p=0.3;\nSHOW BUDGET;\n";
    let there = dpq_in(&tour, &["--seed", "2", "--practice"], tour_statements);
    let here = dpq_in(root(), &["--seed", "2", "--practice"], tour_statements);
    assert!(there.status.success(), "{}", stderr(&there));
    assert!(
        stdout(&there).contains("n = 10000 rows"),
        "{}",
        stdout(&there)
    );
    assert_eq!(stdout(&there), stdout(&here));
}

/// A file in DIR that differs from the bundled one is never replaced without `--force`, and
/// then nothing at all is written; identical files are no obstacle.
#[test]
fn dpq_examples_refuses_to_replace_a_changed_file_without_force() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = dir.path().to_str().expect("utf-8");
    assert!(dpq(&["examples", target]).status.success());
    let bayes = dir.path().join("examples/bayes.dpq");
    std::fs::write(&bayes, "-- my own notes\n").expect("write");
    let people = dir.path().join("examples/data/people.csv");
    std::fs::remove_file(&people).expect("remove");
    let o = dpq(&["examples", target]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "dpq: {} exists and differs from the bundled file; nothing was written",
            bayes.display()
        )),
        "{err}"
    );
    assert!(err.contains("dpq examples --force"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&bayes).expect("read"),
        "-- my own notes\n"
    );
    assert!(!people.exists(), "nothing is written after a refusal");
    let o = dpq(&["examples", "--force", target]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("examples/bayes.dpq (replaced)"),
        "{}",
        stdout(&o)
    );
    assert_eq!(
        std::fs::read(&bayes).expect("read"),
        std::fs::read(root().join("examples/bayes.dpq")).expect("read")
    );
    assert!(people.is_file());
    let o = dpq(&["examples", target]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("identical; nothing was written"),
        "{}",
        stdout(&o)
    );
    // --force needs a DIR, and -c has no place beside examples.
    assert_eq!(dpq(&["examples", "--force"]).status.code(), Some(2));
    assert_eq!(
        dpq(&["-c", "SHOW TABLES;", "examples"]).status.code(),
        Some(2)
    );
}
