//! Group commit: the lines that many transactions append to one ledger are made durable
//! together.
//!
//! A release writes its spending line under the ledger's lock, lets the lock go, and waits
//! until that line is durable before its noise is drawn; its answer line likewise before the
//! answer is shown. While one `fsync` of the file is under way, the lines written meanwhile
//! wait for the next one, which makes all of them durable at once. With many analysts
//! releasing on one dataset, one `fsync` serves several releases, and the lock is held only
//! while a line is written, never across the disk's flush.
//!
//! The order of the ledger is the order of its lines, as before: each line is chained to the
//! one before it under the lock, and an `fsync` makes every line written before it durable,
//! so a line is never durable without the lines before it. What waits for durability is
//! exactly what waited before: the noise, for its spending line; the answer, for its line.
//!
//! The groups are per file (device and inode), shared by every ledger open on that file in
//! this process (each analyst of a served dataset has a view of its own on the same file).
//! Other processes flush their own lines: an `fsync` covers the file whoever wrote to it.

use std::collections::HashMap;
use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, LazyLock, Mutex, MutexGuard, PoisonError, Weak};

/// One file's lines: how far they were written by this process and how far they are durable.
#[derive(Debug, Default)]
pub(super) struct Group {
    state: Mutex<State>,
    settled: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// The end of the last line this process wrote to the file.
    written: u64,
    /// Every byte before this offset is durable.
    durable: u64,
    /// An `fsync` is under way.
    syncing: bool,
    /// An `fsync` failed: what was written may not be durable, and after a failed `fsync` a
    /// later one can succeed without having flushed it. Nothing more is made durable through
    /// this file in this process, so nothing more is drawn or shown from it.
    failed: Option<String>,
    /// The `fsync`s made through this group.
    fsyncs: u64,
}

/// Groups by the device and inode of their file.
type Groups = HashMap<(u64, u64), Weak<Group>>;

/// The groups of the files open now. A group lives only as long as a ledger holding it, which
/// keeps its file open too, so the file's inode cannot be reused by another file meanwhile.
static GROUPS: LazyLock<Mutex<Groups>> = LazyLock::new(Mutex::default);

/// Lines written and `fsync`s made, over every ledger of this process.
static LINES: AtomicU64 = AtomicU64::new(0);
static FSYNCS: AtomicU64 = AtomicU64::new(0);

/// How many ledger lines this process has written, and how many `fsync`s made them durable.
pub fn counts() -> (u64, u64) {
    (
        LINES.load(Ordering::Relaxed),
        FSYNCS.load(Ordering::Relaxed),
    )
}

impl Group {
    /// The group of the file of device and inode `id`.
    pub(super) fn of(id: (u64, u64)) -> Arc<Group> {
        let mut groups = GROUPS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(group) = groups.get(&id).and_then(Weak::upgrade) {
            return group;
        }
        groups.retain(|_, g| g.strong_count() > 0);
        let group = Arc::new(Group::default());
        groups.insert(id, Arc::downgrade(&group));
        group
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Why an `fsync` of the file failed in this process, if one did: nothing more may be
    /// written through it then, since nothing written could be made durable.
    pub(super) fn failure(&self) -> Option<String> {
        self.state().failed.clone()
    }

    /// Marks the file's group as failed, as a failed `fsync` does.
    #[cfg(test)]
    pub(super) fn fail(&self, why: &str) {
        self.state().failed = Some(why.to_string());
    }

    /// Notes that a line ending at `end` was written (under the ledger's lock).
    pub(super) fn wrote(&self, end: u64) {
        LINES.fetch_add(1, Ordering::Relaxed);
        let mut state = self.state();
        state.written = state.written.max(end);
    }

    /// Returns once every byte of the file before `end` is durable: at once if it already is,
    /// after the `fsync` under way if that one covers it, or after an `fsync` of its own,
    /// which covers every line written before it began. `file` is any handle of the file.
    pub(super) fn settle(&self, file: &File, end: u64) -> std::io::Result<()> {
        let mut state = self.state();
        loop {
            if let Some(why) = &state.failed {
                return Err(std::io::Error::other(format!(
                    "an earlier fsync of the ledger failed ({why}); restart dpq once the disk is sound"
                )));
            }
            if state.durable >= end {
                return Ok(());
            }
            if state.syncing {
                state = self
                    .settled
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            // Everything written so far is covered by the fsync about to begin.
            let target = state.written.max(end);
            state.syncing = true;
            drop(state);
            let flushed = file.sync_data();
            FSYNCS.fetch_add(1, Ordering::Relaxed);
            state = self.state();
            state.syncing = false;
            state.fsyncs += 1;
            match &flushed {
                Ok(()) => state.durable = state.durable.max(target),
                Err(e) => state.failed = Some(e.to_string()),
            }
            self.settled.notify_all();
            flushed?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn concurrent_lines_share_fsyncs_and_each_waits_for_its_own() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("l");
        let file = File::create(&path).expect("create");
        let group = Arc::new(Group::default());
        let writer = Mutex::new(file);
        let (lines_before, _) = counts();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..50 {
                        let (end, handle) = {
                            let mut f = writer.lock().expect("lock");
                            f.write_all(&[b'x'; 100]).expect("write");
                            let end = f.metadata().expect("meta").len();
                            group.wrote(end);
                            (end, f.try_clone().expect("clone"))
                        };
                        group.settle(&handle, end).expect("settle");
                        assert!(group.state().durable >= end);
                    }
                });
            }
        });
        assert!(counts().0 - lines_before >= 400);
        // One fsync a line would be 400: lines written while one was under way shared the next.
        let state = group.state();
        assert!(state.fsyncs < 400, "{} fsyncs", state.fsyncs);
        assert_eq!(state.durable, 40_000);
    }

    #[test]
    fn a_line_already_durable_costs_no_fsync() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = File::create(dir.path().join("l")).expect("create");
        let group = Group::default();
        group.wrote(10);
        group.settle(&file, 10).expect("settle");
        group.state().syncing = true;
        // Covered by the flush already made: returns without waiting for the one under way.
        group.settle(&file, 10).expect("settled");
        assert_eq!(group.state().fsyncs, 1);
    }
}
