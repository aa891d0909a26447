//! Opening what `LOAD` names: a regular file to read by blocks, a pipe to read whole, anything else refused at once.
//!
//! The path is looked at before it is opened (a device is refused without being opened) and
//! the opened handle again (`fstat`), so a path swapped between the two can neither make the
//! load hang nor be read as something else. Opening never blocks: a FIFO is opened with
//! `O_NONBLOCK`, which succeeds at once whether or not a program writes to it.

#[cfg(unix)]
use std::fs::{File, FileType, OpenOptions};
#[cfg(unix)]
use std::io::{ErrorKind, Read};
#[cfg(unix)]
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
#[cfg(unix)]
use std::time::{Duration, Instant};

use super::content::ContentHash;
#[cfg(unix)]
use super::content::VerifiedFile;
use super::error::DataError;
use super::load::LoadOptions;

/// Files handed over by a program that embeds dpq where there are no files (a page in a
/// browser): `LOAD` reads them by these paths, and only there.
static PROVIDED: Mutex<Vec<(PathBuf, Arc<Vec<u8>>)>> = Mutex::new(Vec::new());

/// Hands `bytes` over as the file at `path`, for `LOAD` where there is no file system (on
/// wasm32; on Unix `LOAD` reads the file system only). A second file at one path replaces
/// the first.
pub fn provide_file(path: impl Into<PathBuf>, bytes: Vec<u8>) {
    let path = path.into();
    let mut files = PROVIDED.lock().unwrap_or_else(PoisonError::into_inner);
    files.retain(|(p, _)| *p != path);
    files.push((path, Arc::new(bytes)));
}

/// The bytes handed over as the file at `path`, if any.
#[cfg_attr(unix, allow(dead_code))]
fn provided(path: &Path) -> Option<Arc<Vec<u8>>> {
    let files = PROVIDED.lock().unwrap_or_else(PoisonError::into_inner);
    let clean = |p: &Path| p.components().collect::<PathBuf>();
    files
        .iter()
        .find(|(p, _)| clean(p) == clean(path))
        .map(|(_, b)| Arc::clone(b))
}

/// A source ready to parse.
pub(crate) enum Opened {
    /// A regular file, read by blocks as it is parsed.
    #[cfg(unix)]
    File(VerifiedFile),
    /// The whole content of a pipe, and its hash.
    #[cfg(unix)]
    Bytes(Vec<u8>, ContentHash),
    /// The content of a file handed over by the page, not copied, and its hash.
    #[cfg(not(unix))]
    Shared(Arc<Vec<u8>>, ContentHash),
}

/// Opens `path` (shown as `shown` in errors) for loading: where there is no Unix, a file
/// handed over with [`provide_file`].
#[cfg(not(unix))]
pub(crate) fn open(path: &Path, shown: &str, opts: &LoadOptions) -> Result<Opened, DataError> {
    let bytes = provided(path).ok_or_else(|| DataError::NotFound {
        path: shown.to_string(),
    })?;
    if bytes.len() as u64 > opts.max_bytes {
        return Err(DataError::TooLarge {
            limit: opts.max_bytes,
        });
    }
    let hash = ContentHash::of_bytes(&bytes);
    Ok(Opened::Shared(bytes, hash))
}

/// Opens `path` (shown as `shown` in errors) for loading.
#[cfg(unix)]
pub(crate) fn open(path: &Path, shown: &str, opts: &LoadOptions) -> Result<Opened, DataError> {
    let io = |e: std::io::Error| DataError::Io {
        path: shown.to_string(),
        message: e.to_string(),
    };
    let not_found = |e: std::io::Error| match e.kind() {
        ErrorKind::NotFound => DataError::NotFound {
            path: shown.to_string(),
        },
        _ => io(e),
    };
    // A device or socket is refused before it is opened: opening some devices acts.
    let before = std::fs::metadata(path).map_err(not_found)?;
    refuse_special(before.file_type(), shown)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(not_found)?;
    // What was opened is what counts: the path may have been replaced since it was looked at.
    let meta = file.metadata().map_err(io)?;
    let kind = meta.file_type();
    refuse_special(kind, shown)?;
    if kind.is_dir() {
        return Err(DataError::Io {
            path: shown.to_string(),
            message: "it is a directory".to_string(),
        });
    }
    if kind.is_file() {
        if meta.len() > opts.max_bytes {
            return Err(DataError::TooLarge {
                limit: opts.max_bytes,
            });
        }
        return Ok(Opened::File(VerifiedFile::new(file, meta.len())));
    }
    // Only a FIFO (or an anonymous pipe seen through /dev/fd) is left.
    let bytes = read_pipe(file, shown, opts)?;
    let hash = ContentHash::of_bytes(&bytes);
    Ok(Opened::Bytes(bytes, hash))
}

#[cfg(unix)]
/// Refuses character and block devices and sockets: they never end, block, or are not data.
fn refuse_special(kind: FileType, shown: &str) -> Result<(), DataError> {
    let what = if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        return Ok(());
    };
    Err(DataError::NotAFile {
        path: shown.to_string(),
        kind: what.to_string(),
    })
}

#[cfg(unix)]
/// The longest nap between two reads of a pipe that had nothing to give.
const MAX_NAP: Duration = Duration::from_millis(20);

#[cfg(unix)]
/// Reads a pipe opened with `O_NONBLOCK` to its end, up to `opts.max_bytes`.
///
/// An end at once with nothing read means no program writes to the pipe (or one closed it
/// without writing): an error rather than an empty table. While the writer is slow the read
/// naps and retries, and gives up once the pipe has given nothing for `opts.pipe_idle`.
fn read_pipe(file: File, shown: &str, opts: &LoadOptions) -> Result<Vec<u8>, DataError> {
    let mut bytes = Vec::new();
    let mut limited = file.take(opts.max_bytes.saturating_add(1));
    let mut last_data = Instant::now();
    let mut nap = Duration::from_millis(1);
    loop {
        let before = bytes.len();
        // Appends what the pipe holds until its end (Ok) or until it is empty for now.
        let result = limited.read_to_end(&mut bytes);
        if bytes.len() as u64 > opts.max_bytes {
            return Err(DataError::TooLarge {
                limit: opts.max_bytes,
            });
        }
        if bytes.len() > before {
            last_data = Instant::now();
            nap = Duration::from_millis(1);
        }
        match result {
            Ok(_) if bytes.is_empty() => {
                return Err(DataError::PipeWithoutWriter {
                    path: shown.to_string(),
                })
            }
            Ok(_) => return Ok(bytes),
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if last_data.elapsed() >= opts.pipe_idle {
                    return Err(DataError::PipeIdle {
                        path: shown.to_string(),
                        seconds: opts.pipe_idle.as_secs_f64(),
                    });
                }
                std::thread::sleep(nap);
                nap = (nap * 2).min(MAX_NAP);
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(DataError::Io {
                    path: shown.to_string(),
                    message: e.to_string(),
                })
            }
        }
    }
}
