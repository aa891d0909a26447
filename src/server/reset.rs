//! `dpq serve --reset-demo`: a demo's state directory cleared for the next class, every
//! budget in it with it. Only for a policy marked `demo = true`; refused while a server runs
//! on the directory, and refused, removing nothing, when the directory holds anything but the
//! files `dpq serve` writes for this policy's datasets: it never resets a real budget, nor
//! touches a file outside the state directory.

use super::policy::Policy;
use std::collections::BTreeSet;
use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The file a running server holds a shared lock on, and a reset an exclusive one.
pub const SERVE_LOCK: &str = "serve.lock";

/// Files of a state directory's top level that `dpq serve` writes.
const FILES: [&str; 6] = [
    "audit.log",
    "datasets.json",
    "datasets.lock",
    "index.lock",
    "secret",
    SERVE_LOCK,
];

/// Folders of a state directory: the ledgers, and the index of files loaded at the prompt
/// (empty when only servers used it).
const FOLDERS: [&str; 3] = ["ledgers", "content", "paths"];

/// Opens the state directory's serve lock: shared by running servers, taken whole by a reset.
pub fn open_lock(dir: &Path) -> Result<File, String> {
    let path = dir.join(SERVE_LOCK);
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))
}

/// Clears the state directory `dir` of the demo `policy`: its ledgers, the record of its
/// datasets' identities, its secret and its audit log. Returns what was removed (nothing when
/// the directory does not exist), or why nothing was.
pub fn reset_demo(policy: &Policy, dir: &Path) -> Result<Vec<String>, String> {
    if !policy.demo {
        return Err("the policy is not marked as a demo (`demo = true`), so its state is never reset: the budgets in it protect the people in its data. To reset a demo, write `demo = true` at the top of its policy; for real data, keep the state directory".to_string());
    }
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(Vec::new());
    }
    let lock = open_lock(dir)?;
    if lock.try_lock().is_err() {
        return Err(format!(
            "a dpq serve is running on the state directory {}: stop it (Ctrl-C) first",
            dir.display()
        ));
    }
    let removed = inspect(policy, dir)?;
    for name in &removed {
        let path = dir.join(name);
        let gone = if FOLDERS.contains(&name.as_str()) {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        gone.map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
    }
    drop(lock);
    Ok(removed)
}

/// What a reset of `dir` would remove, or why it must not: an entry dpq did not write, a
/// link, ledgers of files loaded at the prompt, or datasets of another policy.
fn inspect(policy: &Policy, dir: &Path) -> Result<Vec<String>, String> {
    let foreign = |name: &str, why: &str| {
        format!(
            "the state directory {} holds `{name}`, {why}: nothing was removed. A demo needs a state directory of its own (`state_dir` in its policy)",
            dir.display()
        )
    };
    let mut removed = Vec::new();
    for entry in read_dir(dir)? {
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry
            .file_type()
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        if kind.is_symlink() {
            return Err(foreign(&name, "a link"));
        }
        let folder = FOLDERS.contains(&name.as_str());
        let file = FILES.contains(&name.as_str()) || leftover(&name);
        if !(folder && kind.is_dir() || file && kind.is_file()) {
            return Err(foreign(&name, "which dpq serve does not write"));
        }
        if name == "content" || name == "paths" {
            if read_dir(&entry.path())?.next().is_some() {
                return Err(foreign(
                    &name,
                    "the index of files loaded at the prompt, whose ledgers are not the demo's",
                ));
            }
        } else if name == "ledgers" {
            ledgers(&entry.path(), &foreign)?;
        }
        if name != SERVE_LOCK {
            removed.push(name);
        }
    }
    served_here(policy, dir, &removed)?;
    removed.sort();
    Ok(removed)
}

/// A file left by a write that did not finish (`secret.1234.tmp`, `datasets.tmp`).
fn leftover(name: &str) -> bool {
    name.ends_with(".tmp") && ["secret.", "datasets."].iter().any(|p| name.starts_with(p))
}

/// The ledgers folder holds ledgers, their high-water marks and leftovers, and nothing else.
fn ledgers(path: &Path, foreign: &dyn Fn(&str, &str) -> String) -> Result<(), String> {
    for entry in read_dir(path)? {
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        let known = [".ledger", ".hwm", ".tmp"]
            .iter()
            .any(|s| name.ends_with(s));
        if !is_file || !known {
            return Err(foreign(
                &format!("ledgers/{name}"),
                "which dpq serve does not write",
            ));
        }
    }
    Ok(())
}

/// The datasets the state directory records having served are this policy's (their ids, and
/// the ids they continue): a demo's reset never clears another policy's budgets.
fn served_here(policy: &Policy, dir: &Path, present: &[String]) -> Result<(), String> {
    let record = dir.join("datasets.json");
    let has_ledgers = present.iter().any(|n| n == "ledgers");
    let text = match std::fs::read(&record) {
        Ok(t) => t,
        Err(e) if e.kind() == ErrorKind::NotFound && !has_ledgers => return Ok(()),
        Err(_) => return Err(format!(
            "the state directory {} has ledgers but no readable record of the datasets they are for (datasets.json): nothing was removed. Start `dpq serve` on it once to rebuild the record, or remove the directory by hand",
            dir.display()
        )),
    };
    let damaged = || format!("{} is damaged: nothing was removed", record.display());
    let value: serde_json::Value = serde_json::from_slice(&text).map_err(|_| damaged())?;
    let datasets = value
        .get("datasets")
        .and_then(|d| d.as_object())
        .ok_or_else(damaged)?;
    // The policy's ids and, through the continuations recorded, every id whose ledger they
    // keep.
    let mut ours: BTreeSet<&str> = policy
        .datasets
        .iter()
        .flat_map(|d| std::iter::once(d.id.as_str()).chain(d.continues.as_deref()))
        .collect();
    loop {
        let more: Vec<&str> = ours
            .iter()
            .filter_map(|id| datasets.get(*id)?.get("continues")?.as_str())
            .filter(|id| !ours.contains(id))
            .collect();
        if more.is_empty() {
            break;
        }
        ours.extend(more);
    }
    match datasets.keys().find(|id| !ours.contains(id.as_str())) {
        Some(id) => Err(format!(
            "the state directory {} also keeps the budget of id {id}, which this policy does not serve: nothing was removed. A demo needs a state directory of its own (`state_dir` in its policy)",
            dir.display()
        )),
        None => Ok(()),
    }
}

fn read_dir(dir: &Path) -> Result<impl Iterator<Item = std::fs::DirEntry>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    Ok(entries.filter_map(Result::ok))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(demo: bool, id: &str) -> Policy {
        let text = format!(
            "demo = {demo}\n[[dataset]]\nname = \"people\"\nid = \"{id}\"\nsource = \"people.csv\"\nbudget = 1\n"
        );
        Policy::parse(&text, Path::new("/nowhere")).expect("a valid policy")
    }

    /// A state directory as a served demo leaves it.
    fn served(dir: &Path, id: &str) {
        std::fs::create_dir_all(dir.join("ledgers")).expect("ledgers");
        std::fs::write(dir.join("ledgers/ab12.ledger"), "lines").expect("a ledger");
        std::fs::write(dir.join("ledgers/ab12.hwm"), "mark").expect("a mark");
        std::fs::write(dir.join("secret"), [7u8; 32]).expect("a secret");
        std::fs::write(dir.join("audit.log"), "{}\n").expect("the audit log");
        std::fs::write(dir.join("index.lock"), "").expect("a lock");
        std::fs::write(
            dir.join("datasets.json"),
            format!("{{\"format\": 1, \"datasets\": {{\"{id}\": {{\"contents\": []}}}}}}"),
        )
        .expect("the record");
    }

    #[test]
    fn a_demos_state_is_cleared_and_nothing_else() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("state");
        served(&dir, "demo-1");
        std::fs::write(root.path().join("beside.txt"), "keep").expect("a file beside");
        let removed = reset_demo(&policy(true, "demo-1"), &dir).expect("reset");
        assert_eq!(
            removed,
            [
                "audit.log",
                "datasets.json",
                "index.lock",
                "ledgers",
                "secret"
            ]
        );
        let left: Vec<String> = std::fs::read_dir(&dir)
            .expect("the state directory stays")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, [SERVE_LOCK]);
        assert!(root.path().join("beside.txt").exists());
        // Again: nothing left to remove.
        let again = reset_demo(&policy(true, "demo-1"), &dir).expect("reset");
        assert!(again.is_empty(), "{again:?}");
    }

    #[test]
    fn a_policy_that_is_not_a_demo_is_never_reset() {
        let root = tempfile::tempdir().expect("tempdir");
        served(root.path(), "real-1");
        let err = reset_demo(&policy(false, "real-1"), root.path()).expect_err("refused");
        assert!(err.contains("not marked as a demo"), "{err}");
        assert!(root.path().join("ledgers/ab12.ledger").exists());
        assert!(root.path().join("secret").exists());
    }

    #[test]
    fn a_state_directory_shared_with_anything_else_is_left_alone() {
        /// What the state directory holds besides the demo's files, and what says so.
        type Spoil<'a> = (&'a str, &'a dyn Fn(&Path));
        let cases: [Spoil; 5] = [
            ("notes.txt", &|d| {
                std::fs::write(d.join("notes.txt"), "mine").expect("write")
            }),
            ("content", &|d| {
                std::fs::create_dir_all(d.join("content")).expect("mkdir");
                std::fs::write(d.join("content/ff00"), "local").expect("write");
            }),
            ("ledgers/x", &|d| {
                std::fs::create_dir_all(d.join("ledgers/x")).expect("mkdir")
            }),
            ("other-1", &|d| {
                std::fs::write(
                    d.join("datasets.json"),
                    "{\"format\": 1, \"datasets\": {\"demo-1\": {}, \"other-1\": {}}}",
                )
                .expect("write")
            }),
            ("policy.toml", &|d| {
                std::os::unix::fs::symlink("/etc/hostname", d.join("policy.toml")).expect("a link")
            }),
        ];
        for (says, spoil) in cases {
            let root = tempfile::tempdir().expect("tempdir");
            served(root.path(), "demo-1");
            spoil(root.path());
            let err = reset_demo(&policy(true, "demo-1"), root.path()).expect_err(says);
            assert!(err.contains(says), "{says}: {err}");
            assert!(err.contains("nothing was removed"), "{err}");
            assert!(root.path().join("ledgers/ab12.ledger").exists(), "{says}");
            assert!(root.path().join("secret").exists(), "{says}");
        }
    }

    #[test]
    fn a_running_server_keeps_its_state() {
        let root = tempfile::tempdir().expect("tempdir");
        served(root.path(), "demo-1");
        let serving = open_lock(root.path()).expect("the lock");
        serving.try_lock_shared().expect("shared");
        let err = reset_demo(&policy(true, "demo-1"), root.path()).expect_err("refused");
        assert!(err.contains("stop it"), "{err}");
        assert!(root.path().join("ledgers/ab12.ledger").exists());
        drop(serving);
        reset_demo(&policy(true, "demo-1"), root.path()).expect("reset once stopped");
    }

    #[test]
    fn a_continued_id_is_the_policys_own() {
        let root = tempfile::tempdir().expect("tempdir");
        served(root.path(), "demo-2");
        std::fs::write(
            root.path().join("datasets.json"),
            "{\"format\": 1, \"datasets\": {\"demo-1\": {}, \"demo-2\": {\"continues\": \"demo-1\"}}}",
        )
        .expect("write");
        reset_demo(&policy(true, "demo-2"), root.path()).expect("reset");
    }
}
