//! What dpq asks of the operating system: the Unix file calls it makes, with stand-ins where
//! there is no Unix (wasm32 in a browser: there every file call fails before these are
//! reached, since tables come from text the embedding page hands over, `data::provide_file`,
//! and the ledger stays in memory), and the [`interrupt`] a user's Ctrl-C raises.

/// A request, raised from outside (the prompt's Ctrl-C), that the running statement stop at
/// its next safe point: a point before anything is spent, or after a release is recorded and
/// its answer handed back. Long loops that spend nothing (`SIMULATE`'s runs) look at it; the
/// release protocol never does, so a release is always finished. Signals are the process's,
/// so the request is too: only a front end that owns the terminal raises it, and clears it
/// before each statement.
pub mod interrupt {
    use std::sync::atomic::{AtomicBool, Ordering};

    static REQUESTED: AtomicBool = AtomicBool::new(false);

    /// Asks the running statement to stop at its next safe point.
    pub fn request() {
        REQUESTED.store(true, Ordering::SeqCst);
    }

    /// Whether a stop has been asked for since the last [`clear`].
    pub fn requested() -> bool {
        REQUESTED.load(Ordering::SeqCst)
    }

    /// Forgets any request: called before a statement runs, and once it has.
    pub fn clear() {
        REQUESTED.store(false, Ordering::SeqCst);
    }
}

#[cfg(unix)]
pub use std::os::unix::fs;

/// Stand-ins for `std::os::unix::fs`: every call fails, or reads as zero.
#[cfg(not(unix))]
pub mod fs {
    use std::io;

    fn unsupported() -> io::Error {
        io::Error::new(io::ErrorKind::Unsupported, "no files here")
    }

    /// Positioned reads and writes.
    pub trait FileExt {
        /// Fails: no files.
        fn read_at(&self, _buf: &mut [u8], _offset: u64) -> io::Result<usize> {
            Err(unsupported())
        }
        /// Fails: no files.
        fn read_exact_at(&self, _buf: &mut [u8], _offset: u64) -> io::Result<()> {
            Err(unsupported())
        }
        /// Fails: no files.
        fn write_all_at(&self, _buf: &[u8], _offset: u64) -> io::Result<()> {
            Err(unsupported())
        }
    }
    impl FileExt for std::fs::File {}

    /// A file's identity and times: zero.
    pub trait MetadataExt {
        /// Zero.
        fn ino(&self) -> u64 {
            0
        }
        /// Zero.
        fn dev(&self) -> u64 {
            0
        }
        /// Zero.
        fn ctime(&self) -> i64 {
            0
        }
        /// Zero.
        fn ctime_nsec(&self) -> i64 {
            0
        }
    }
    impl MetadataExt for std::fs::Metadata {}

    /// Open flags and modes: ignored.
    pub trait OpenOptionsExt {
        /// Ignored.
        fn mode(&mut self, _mode: u32) -> &mut Self {
            self
        }
        /// Ignored.
        fn custom_flags(&mut self, _flags: i32) -> &mut Self {
            self
        }
    }
    impl OpenOptionsExt for std::fs::OpenOptions {}

    /// Directory modes: ignored.
    pub trait DirBuilderExt {
        /// Ignored.
        fn mode(&mut self, _mode: u32) -> &mut Self {
            self
        }
    }
    impl DirBuilderExt for std::fs::DirBuilder {}
}

/// The state directory: `--state-dir`, else `DPQ_STATE_DIR`, else `dpq` in the user's data
/// directory. A relative `DPQ_STATE_DIR` is refused: set once in a shell's profile, it would
/// give every working directory a budget of its own.
#[cfg(feature = "native")]
pub fn state_dir(flag: Option<std::path::PathBuf>) -> Result<Option<std::path::PathBuf>, String> {
    if flag.is_some() {
        return Ok(flag);
    }
    if let Some(env) = std::env::var_os("DPQ_STATE_DIR").filter(|v| !v.is_empty()) {
        let dir = std::path::PathBuf::from(env);
        if dir.is_relative() {
            return Err(format!(
                "DPQ_STATE_DIR must be an absolute path (it is {}): relative to the working directory, every directory would keep a budget of its own",
                dir.display()
            ));
        }
        return Ok(Some(dir));
    }
    Ok(dirs::data_dir().map(|d| d.join("dpq")))
}
