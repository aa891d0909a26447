//! A served dataset's identity cannot be edited into a fresh budget, and the public demo
//! tokens are not served unless said so: the real `dpq serve` and `dpq check-policy`, against
//! one state directory across policy edits (issue 21, items 3 and 5b).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common;
use common::serve::{error, kinds, Server, Setup};

/// Writes the setup's `policy.toml` (over the last one): `datasets` (each `(name, extra
/// keys)`, the keys including `id` and `source`), every one capped at 1 for analyst `a0`.
fn policy(setup: &Setup, datasets: &[(&str, &str)]) -> PathBuf {
    let mut p = String::new();
    for (name, keys) in datasets {
        p.push_str(&format!(
            "[[dataset]]\nname = \"{name}\"\n{keys}\nbudget = 1\n\n"
        ));
    }
    let caps: Vec<String> = datasets.iter().map(|(n, _)| format!("{n} = 1")).collect();
    p.push_str(&format!(
        "[[analyst]]\nname = \"a0\"\ntoken_hash = \"{}\"\nbudgets = {{ {} }}\n",
        setup.tokens[0].1,
        caps.join(", ")
    ));
    let path = setup.path("policy.toml");
    std::fs::write(&path, p).expect("write the policy");
    path
}

/// Starts `dpq serve` on `policy` (with `flags`) expecting a refusal: its standard error.
/// Panics if it starts serving.
fn refused(setup: &Setup, policy: &Path, flags: &[&str]) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .args(["serve", "--listen", "127.0.0.1:0", "--policy"])
        .arg(policy)
        .args(flags)
        .arg("--state-dir")
        .arg(setup.state())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn dpq serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the server's output");
    if !line.is_empty() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the server started: {line}");
    }
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("stderr");
    let status = child.wait().expect("the server's exit");
    assert!(!status.success(), "{err}");
    err
}

/// `dpq check-policy` on `policy` against the setup's state directory: success and output.
fn check_policy(setup: &Setup, policy: &Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .arg("check-policy")
        .arg(policy)
        .arg("--state-dir")
        .arg(setup.state())
        .output()
        .expect("dpq check-policy");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Serves `policy`, spends `eps` on `name` as analyst 0, and stops.
fn spend(setup: &Setup, policy: &Path, name: &str, eps: &str) {
    let server = Server::start(setup, policy);
    let (_, body) = server.run(
        setup.token(0),
        &format!("USE {name}; COUNT WHERE age < 30 WITH EPS {eps};"),
    );
    assert_eq!(kinds(&body), ["using", "count"], "{body}");
}

/// The dataset's spending as analyst 0 sees it once `policy` is served.
fn dataset_spent(setup: &Setup, policy: &Path, name: &str) -> f64 {
    let server = Server::start(setup, policy);
    let (_, body) = server.run(setup.token(0), &format!("USE {name}; SHOW BUDGET;"));
    assert!(error(&body).is_empty(), "{body}");
    body["results"][1]["json"]["dataset"]["spent"]
        .as_f64()
        .unwrap_or_else(|| panic!("the dataset's budget: {body}"))
}

/// Editing a dataset's id once it has spent is refused by `dpq serve` and `dpq check-policy`,
/// naming both ids and the way out; nothing is recorded by the refusal.
#[test]
fn editing_a_dataset_id_is_refused() {
    let setup = Setup::new(1);
    let v1 = policy(
        &setup,
        &[("people", "id = \"people-v1\"\nsource = \"people.csv\"")],
    );
    spend(&setup, &v1, "people", "0.3");
    let v2 = policy(
        &setup,
        &[("people", "id = \"people-v2\"\nsource = \"people.csv\"")],
    );
    let err = refused(&setup, &v2, &[]);
    for says in ["people-v1", "people-v2", "continues = \"people-v1\""] {
        assert!(err.contains(says), "{says}: {err}");
    }
    let (ok, text) = check_policy(&setup, &v2);
    assert!(!ok, "{text}");
    assert!(
        text.contains("people-v1") && text.contains("people-v2"),
        "{text}"
    );
    // Still refused: the refusal recorded nothing under the new id.
    refused(&setup, &v2, &[]);
    // The old id still serves, with its spending.
    let v1 = policy(
        &setup,
        &[("people", "id = \"people-v1\"\nsource = \"people.csv\"")],
    );
    assert_eq!(dataset_spent(&setup, &v1, "people"), 0.3);
}

/// One file under two ids in one policy is refused, however it is named: the same path, a
/// path through another directory, a symbolic link, or a copy of its bytes.
#[test]
fn one_file_under_two_ids_is_refused() {
    let setup = Setup::new(1);
    std::fs::create_dir(setup.path("sub")).expect("mkdir");
    std::os::unix::fs::symlink(setup.path("people.csv"), setup.path("link.csv")).expect("link");
    std::fs::copy(setup.path("people.csv"), setup.path("copy.csv")).expect("copy");
    for other in [
        "people.csv",
        "sub/../people.csv",
        "./people.csv",
        "link.csv",
        "copy.csv",
    ] {
        let p = policy(
            &setup,
            &[
                ("people", "id = \"people-v1\"\nsource = \"people.csv\""),
                (
                    "again",
                    &format!("id = \"people-again\"\nsource = \"{other}\""),
                ),
            ],
        );
        let err = refused(&setup, &p, &[]);
        assert!(
            err.contains("people-v1") && err.contains("people-again"),
            "{other}: {err}"
        );
        let (ok, text) = check_policy(&setup, &p);
        assert!(!ok, "{other}: {text}");
        assert!(
            text.contains("people-v1") && text.contains("people-again"),
            "{other}: {text}"
        );
    }
}

/// `continues` carries the old id's spending over to the new id (the data moved, too); the
/// continuation is recorded for good, so dropping `continues` later keeps the old ledger
/// rather than starting anew; and the old and new id cannot then be served side by side.
#[test]
fn continues_carries_the_spending_over_for_good() {
    let setup = Setup::new(1);
    let v1 = policy(
        &setup,
        &[("people", "id = \"people-v1\"\nsource = \"people.csv\"")],
    );
    spend(&setup, &v1, "people", "0.3");
    std::fs::create_dir(setup.path("moved")).expect("mkdir");
    std::fs::rename(setup.path("people.csv"), setup.path("moved/people.csv")).expect("move");
    let v2 = policy(
        &setup,
        &[(
            "people",
            "id = \"people-v2\"\ncontinues = \"people-v1\"\nsource = \"moved/people.csv\"",
        )],
    );
    let (ok, text) = check_policy(&setup, &v2);
    assert!(ok, "{text}");
    assert_eq!(dataset_spent(&setup, &v2, "people"), 0.3);
    spend(&setup, &v2, "people", "0.2");
    let v3 = policy(
        &setup,
        &[(
            "people",
            "id = \"people-v2\"\nsource = \"moved/people.csv\"",
        )],
    );
    let (ok, text) = check_policy(&setup, &v3);
    assert!(ok, "{text}");
    assert!(text.contains("keeps the ledger of id people-v1"), "{text}");
    assert_eq!(
        dataset_spent(&setup, &v3, "people"),
        0.5,
        "not a fresh budget"
    );
    // The old id's ledger is the same one: serving both ids at once is refused.
    let both = policy(
        &setup,
        &[
            (
                "people",
                "id = \"people-v2\"\nsource = \"moved/people.csv\"",
            ),
            ("old", "id = \"people-v1\"\nsource = \"copy.csv\""),
        ],
    );
    std::fs::write(setup.path("copy.csv"), "age\n1\n2\n").expect("write");
    let err = refused(&setup, &both, &[]);
    assert!(err.contains("share one ledger"), "{err}");
}

/// A `continues` that cannot hold is refused: an id the state directory never served, an id
/// this policy serves too, an id with a ledger of its own, or another id than recorded.
#[test]
fn a_continuation_that_cannot_hold_is_refused() {
    let setup = Setup::new(1);
    std::fs::copy(setup.path("people.csv"), setup.path("other.csv")).expect("copy");
    std::fs::write(setup.path("other.csv"), "age\n1\n2\n3\n").expect("write");
    let v1 = policy(
        &setup,
        &[
            ("people", "id = \"people-v1\"\nsource = \"people.csv\""),
            ("other", "id = \"other-v1\"\nsource = \"other.csv\""),
        ],
    );
    spend(&setup, &v1, "people", "0.1");
    for (keys, says) in [
        (
            "id = \"people-v2\"\ncontinues = \"peeple-v1\"",
            "records no dataset of id peeple-v1",
        ),
        (
            "id = \"other-v1\"\ncontinues = \"people-v1\"",
            "already has a ledger of its own",
        ),
    ] {
        let p = policy(
            &setup,
            &[("people", &format!("{keys}\nsource = \"people.csv\""))],
        );
        let err = refused(&setup, &p, &[]);
        assert!(err.contains(says), "{keys}: {err}");
        let (ok, text) = check_policy(&setup, &p);
        assert!(!ok && text.contains(says), "{keys}: {text}");
    }
    let p = policy(
        &setup,
        &[
            ("people", "id = \"people-v1\"\nsource = \"people.csv\""),
            (
                "other",
                "id = \"other-v2\"\ncontinues = \"people-v1\"\nsource = \"other.csv\"",
            ),
        ],
    );
    let err = refused(&setup, &p, &[]);
    assert!(err.contains("which this policy serves too"), "{err}");
    // Recorded once, a continuation cannot be pointed elsewhere.
    let v2 = policy(
        &setup,
        &[(
            "people",
            "id = \"people-v2\"\ncontinues = \"people-v1\"\nsource = \"people.csv\"",
        )],
    );
    drop(Server::start(&setup, &v2));
    let p = policy(
        &setup,
        &[(
            "people",
            "id = \"people-v2\"\ncontinues = \"other-v1\"\nsource = \"people.csv\"",
        )],
    );
    let err = refused(&setup, &p, &[]);
    assert!(err.contains("continues id people-v1's ledger"), "{err}");
}

/// A re-export under the same id (new bytes, same people) keeps its ledger, as before.
#[test]
fn a_re_export_under_the_same_id_keeps_its_ledger() {
    let setup = Setup::new(1);
    let v1 = policy(
        &setup,
        &[("people", "id = \"people-v1\"\nsource = \"people.csv\"")],
    );
    spend(&setup, &v1, "people", "0.3");
    let mut data = std::fs::read(setup.path("people.csv")).expect("read");
    data.extend_from_slice(b"\n");
    std::fs::write(setup.path("people-2.csv"), data).expect("write");
    let v2 = policy(
        &setup,
        &[("people", "id = \"people-v1\"\nsource = \"people-2.csv\"")],
    );
    let (ok, text) = check_policy(&setup, &v2);
    assert!(ok, "{text}");
    assert_eq!(dataset_spent(&setup, &v2, "people"), 0.3);
    // Both exports are recorded under people-v1: neither can start another id's budget.
    for source in ["people.csv", "people-2.csv"] {
        let p = policy(
            &setup,
            &[(
                "people",
                &format!("id = \"people-v9\"\nsource = \"{source}\""),
            )],
        );
        let err = refused(&setup, &p, &[]);
        assert!(err.contains("people-v1"), "{source}: {err}");
    }
}

/// The state directory's record of identities is private and holds no unkeyed hash of the
/// data; a damaged record is refused, never reset.
#[test]
fn the_record_of_identities_is_private_and_refused_if_damaged() {
    use std::os::unix::fs::PermissionsExt;
    let setup = Setup::new(1);
    let v1 = policy(
        &setup,
        &[("people", "id = \"people-v1\"\nsource = \"people.csv\"")],
    );
    spend(&setup, &v1, "people", "0.1");
    let record = setup.state().join("datasets.json");
    let mode = std::fs::metadata(&record)
        .expect("the record")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let text = std::fs::read_to_string(&record).expect("read");
    let plain = blake3::hash(&std::fs::read(setup.path("people.csv")).expect("data"));
    assert!(!text.contains(&plain.to_hex().to_string()), "{text}");
    assert!(text.contains("people-v1"), "{text}");
    std::fs::write(&record, "{\"format\":1,\"datasets\":").expect("damage it");
    let err = refused(&setup, &v1, &[]);
    assert!(err.contains("damaged"), "{err}");
}

/// A state directory written before identities were recorded has its record rebuilt from its
/// served ledgers: renaming an id there is refused too.
#[test]
fn a_record_lost_is_rebuilt_from_the_ledgers() {
    let setup = Setup::new(1);
    let v1 = policy(
        &setup,
        &[("people", "id = \"people-v1\"\nsource = \"people.csv\"")],
    );
    spend(&setup, &v1, "people", "0.1");
    std::fs::remove_file(setup.state().join("datasets.json")).expect("remove the record");
    let v2 = policy(
        &setup,
        &[("people", "id = \"people-v2\"\nsource = \"people.csv\"")],
    );
    let (ok, text) = check_policy(&setup, &v2);
    assert!(!ok && text.contains("people-v1"), "{text}");
    let err = refused(&setup, &v2, &[]);
    assert!(err.contains("people-v1"), "{err}");
}

/// The demo tokens shipped in `examples/classroom/tokens/` are public: `dpq serve` refuses a
/// policy admitting them, naming the analysts, unless `--allow-public-tokens`;
/// `dpq check-policy` warns.
#[test]
fn the_public_demo_tokens_need_a_flag() {
    let setup = Setup::new(1);
    let classroom = std::fs::canonicalize("examples/classroom/policy.toml").expect("policy");
    let err = refused(&setup, &classroom, &[]);
    for says in [
        "alice, bob, carol",
        "public",
        "--allow-public-tokens",
        "dpq token",
    ] {
        assert!(err.contains(says), "{says}: {err}");
    }
    let (ok, text) = check_policy(&setup, &classroom);
    assert!(ok, "{text}");
    assert!(
        text.contains("warning") && text.contains("alice, bob, carol"),
        "{text}"
    );
    // One demo token among others is refused too.
    let bob = std::fs::read_to_string("examples/classroom/tokens/bob.token").expect("token");
    let hash = blake3::hash(bob.trim().as_bytes()).to_hex();
    let text = std::fs::read_to_string(policy(
        &setup,
        &[("people", "id = \"people-v1\"\nsource = \"people.csv\"")],
    ))
    .expect("read");
    let p = setup.path("policy.toml");
    std::fs::write(
        &p,
        format!("{text}\n[[analyst]]\nname = \"bob\"\ntoken_hash = \"blake3:{hash}\"\n"),
    )
    .expect("write");
    let err = refused(&setup, &p, &[]);
    assert!(err.contains("analyst bob "), "{err}");
    // With the flag, the classroom serves.
    let mut child = Command::new(env!("CARGO_BIN_EXE_dpq"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--allow-public-tokens",
            "--policy",
        ])
        .arg(&classroom)
        .arg("--state-dir")
        .arg(setup.state())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("dpq serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("listening");
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.starts_with("dpq serve: listening on"), "{line}");
}

/// A start that fails (a dataset that cannot be read) records nothing, not even the
/// continuation its policy asks for: the curator can still write another.
#[test]
fn a_failed_start_records_no_continuation() {
    let setup = Setup::new(1);
    let v1 = policy(
        &setup,
        &[("people", "id = \"people-v1\"\nsource = \"people.csv\"")],
    );
    spend(&setup, &v1, "people", "0.1");
    let broken = policy(
        &setup,
        &[(
            "people",
            "id = \"people-v2\"\ncontinues = \"people-v1\"\nsource = \"missing.csv\"",
        )],
    );
    let err = refused(&setup, &broken, &[]);
    assert!(err.contains("cannot load"), "{err}");
    let record = std::fs::read_to_string(setup.state().join("datasets.json")).expect("record");
    assert!(!record.contains("people-v2"), "{record}");
}

/// A chain of continuations is recorded as each id continuing the first one's ledger, so
/// no chain grows long however often a dataset is renamed, and every id keeps the spending.
#[test]
fn renamed_again_and_again_a_dataset_keeps_its_first_ledger() {
    let setup = Setup::new(1);
    let mut last = "people-v0".to_string();
    let v0 = policy(
        &setup,
        &[(
            "people",
            &format!("id = \"{last}\"\nsource = \"people.csv\""),
        )],
    );
    spend(&setup, &v0, "people", "0.25");
    for k in 1..=4 {
        let id = format!("people-v{k}");
        let p = policy(
            &setup,
            &[(
                "people",
                &format!("id = \"{id}\"\ncontinues = \"{last}\"\nsource = \"people.csv\""),
            )],
        );
        drop(Server::start(&setup, &p));
        last = id;
    }
    let record = std::fs::read_to_string(setup.state().join("datasets.json")).expect("record");
    let json: serde_json::Value = serde_json::from_str(&record).expect("json");
    for k in 1..=4 {
        let entry = json
            .pointer(&format!("/datasets/people-v{k}/continues"))
            .unwrap_or_else(|| panic!("people-v{k} in {record}"));
        assert_eq!(entry, "people-v0", "{record}");
    }
    let p = policy(
        &setup,
        &[(
            "people",
            &format!("id = \"{last}\"\ncontinues = \"people-v3\"\nsource = \"people.csv\""),
        )],
    );
    assert!((dataset_spent(&setup, &p, "people") - 0.25).abs() < 1e-12);
}

/// A Parquet directory and one of its files are one source: refused under two ids.
#[test]
fn a_parquet_directory_and_one_of_its_files_are_one_source() {
    let setup = Setup::new(1);
    let dir = setup.path("parts");
    std::fs::create_dir(&dir).expect("mkdir");
    for f in ["a.parquet", "b.parquet"] {
        std::fs::copy("examples/data/people.parquet", dir.join(f)).expect("copy");
    }
    let p = policy(
        &setup,
        &[
            ("whole", "id = \"all\"\nsource = \"parts\""),
            ("part", "id = \"part\"\nsource = \"parts/a.parquet\""),
        ],
    );
    let err = refused(&setup, &p, &[]);
    assert!(err.contains("read the same source"), "{err}");
    let (ok, text) = check_policy(&setup, &p);
    assert!(!ok && text.contains("read the same source"), "{text}");
}

/// Across policy edits too: once a Parquet directory was served, one of its files under a
/// new id is the same rows, refused (each file's own bytes are recorded with the set's).
#[test]
fn a_file_of_a_served_parquet_directory_is_refused_under_a_new_id() {
    let setup = Setup::new(1);
    let dir = setup.path("parts");
    std::fs::create_dir(&dir).expect("mkdir");
    for f in ["a.parquet", "b.parquet"] {
        std::fs::copy("examples/data/people.parquet", dir.join(f)).expect("copy");
    }
    let whole = policy(&setup, &[("whole", "id = \"all\"\nsource = \"parts\"")]);
    spend(&setup, &whole, "whole", "0.5");
    let part = policy(
        &setup,
        &[("part", "id = \"part\"\nsource = \"parts/a.parquet\"")],
    );
    let err = refused(&setup, &part, &[]);
    assert!(err.contains("already served under id all"), "{err}");
    let (ok, text) = check_policy(&setup, &part);
    assert!(
        !ok && text.contains("already served under id all"),
        "{text}"
    );
}

/// A state directory that lost its secret is refused by `dpq check-policy` as `dpq serve`
/// refuses it, rather than found valid.
#[test]
fn check_policy_refuses_a_state_directory_without_its_secret() {
    let setup = Setup::new(1);
    let v1 = policy(
        &setup,
        &[("people", "id = \"people-v1\"\nsource = \"people.csv\"")],
    );
    spend(&setup, &v1, "people", "0.1");
    std::fs::remove_file(setup.state().join("secret")).expect("remove the secret");
    let err = refused(&setup, &v1, &[]);
    assert!(err.contains("secret"), "{err}");
    let (ok, text) = check_policy(&setup, &v1);
    assert!(!ok && text.contains("secret"), "{text}");
}
