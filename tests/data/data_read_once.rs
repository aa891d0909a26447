//! Read once: the content hash `load_csv` returns is BLAKE3 of exactly the bytes parsed, pipes
//! are read whole without hanging, and devices are refused at once.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use dpq::data::{load_csv, load_csv_bytes, DataError, LoadOptions, Loaded};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A generous bound for what must be quick: no test can hang on a regression.
const PATIENCE: Duration = Duration::from_secs(5);

/// Runs `f` on its own thread; `None` when it has not returned within `PATIENCE`.
fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(PATIENCE).ok()
}

/// Makes a FIFO called `fifo` in `dir`.
fn mkfifo(dir: &Path) -> PathBuf {
    let path = dir.join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo failed");
    path
}

/// A CSV text of exactly `len` bytes (`len >= 1`): a header `a` and lines of digits.
fn csv_of_len(len: usize, rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut text = b"a".to_vec();
    if len > 1 {
        text.push(b'\n');
    }
    while text.len() < len {
        let room = len - text.len();
        let line = rng.random_range(1..=12).min(room);
        for _ in 0..line {
            text.push(b'0' + rng.random_range(0..10u8));
        }
        if text.len() < len {
            text.push(b'\n');
        }
    }
    text
}

/// `load_csv` on a regular file holding `bytes`.
fn load_file(bytes: &[u8]) -> Result<Loaded, DataError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.csv");
    std::fs::write(&path, bytes).expect("write");
    load_csv(&path, &LoadOptions::default())
}

#[test]
fn the_content_hash_of_a_file_is_blake3_of_its_bytes() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut lengths = vec![
        1,
        1023,
        1024,
        1025,
        65535,
        65536,
        65537,
        3 * 65536 + 5,
        8 * 65536,
    ];
    lengths.extend((0..4).map(|_| rng.random_range(2..3_000_000)));
    for len in lengths {
        let bytes = csv_of_len(len, &mut rng);
        assert_eq!(bytes.len(), len);
        let loaded = load_file(&bytes).expect("digits under a header load");
        assert_eq!(
            loaded.content.bytes(),
            *blake3::hash(&bytes).as_bytes(),
            "length {len}"
        );
        assert_eq!(loaded.content.len(), len as u64);
        let in_memory = load_csv_bytes(&bytes, &LoadOptions::default()).expect("loads");
        assert_eq!(in_memory.content, loaded.content);
        assert_eq!(in_memory.table.n_rows(), loaded.table.n_rows());
    }
}

#[test]
fn the_content_hash_is_never_shown() {
    let loaded = load_csv_bytes(b"a\n1\n", &LoadOptions::default()).expect("loads");
    let shown = format!("{loaded:?}");
    let hex = blake3::hash(b"a\n1\n").to_hex().to_string();
    assert!(shown.contains("ContentHash(..)"), "{shown}");
    assert!(!shown.contains(&hex[..16]), "{shown}");
}

#[test]
fn a_fifo_fed_twice_is_hashed_as_it_was_parsed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = mkfifo(dir.path());
    // More than a pipe's buffer: the writer's last write returns only once the loader reads.
    let mut first = b"a,b\n".to_vec();
    for i in 0..40_000 {
        first.extend_from_slice(format!("{i},{}\n", i % 7).as_bytes());
    }
    let second = b"a,b\n9,9\n".to_vec();
    let (ready, is_ready) = mpsc::channel();
    let (again, go_again) = mpsc::channel::<()>();
    let writer = {
        let (fifo, first, second) = (fifo.clone(), first.clone(), second.clone());
        std::thread::spawn(move || -> std::io::Result<()> {
            // Read-write so the open does not wait for the loader, which must find a writer.
            let mut w = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&fifo)?;
            let _ = ready.send(());
            w.write_all(&first)?;
            drop(w);
            // The second feeding, for whoever reads the FIFO next.
            if go_again.recv().is_ok() {
                let mut w = std::fs::OpenOptions::new().write(true).open(&fifo)?;
                w.write_all(&second)?;
            }
            Ok(())
        })
    };
    is_ready.recv_timeout(PATIENCE).expect("the writer opens");
    let loaded = within(move || load_csv(&fifo, &LoadOptions::default()))
        .expect("the load ends")
        .expect("the FIFO loads");
    assert_eq!(loaded.table.n_rows(), 40_000);
    assert_eq!(loaded.content.bytes(), *blake3::hash(&first).as_bytes());
    assert_eq!(loaded.content.len(), first.len() as u64);
    // A second reading of the FIFO sees other bytes: only the first was parsed.
    let _ = again.send(());
    let fifo = dir.path().join("fifo");
    let reread = within(move || std::fs::read(fifo))
        .expect("the second feeding ends")
        .expect("read");
    assert_eq!(reread, second);
    assert_ne!(*blake3::hash(&reread).as_bytes(), loaded.content.bytes());
    writer.join().expect("the writer ends").expect("writes");
}

#[test]
fn a_fifo_without_a_writer_is_an_error_not_a_hang() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = mkfifo(dir.path());
    let e = within(move || load_csv(&fifo, &LoadOptions::default()).err())
        .expect("the load ends")
        .expect("no writer is an error");
    assert!(matches!(e, DataError::PipeWithoutWriter { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "no program is writing to the pipe (it ended before giving any data)"
    );
}

#[test]
fn a_fifo_whose_writer_stays_silent_gives_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = mkfifo(dir.path());
    // A writer that opens and never writes, until the test ends.
    let silent = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .expect("open the FIFO");
    let opts = LoadOptions {
        pipe_idle: Duration::from_millis(300),
        ..LoadOptions::default()
    };
    let e = within(move || load_csv(&fifo, &opts).err())
        .expect("the load ends")
        .expect("an idle pipe is an error");
    assert!(matches!(e, DataError::PipeIdle { .. }), "{e:?}");
    assert_eq!(e.to_string(), "the pipe gave no data for 0.3 seconds");
    drop(silent);
}

/// A reader of `fifo` that never reads: while it is open, bytes written stay in the FIFO even
/// when their writer closes before the loader opens it.
fn keeper(fifo: &Path) -> std::fs::File {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(fifo)
        .expect("open the FIFO to read")
}

#[test]
fn a_slow_writer_is_waited_for() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = mkfifo(dir.path());
    let keep = keeper(&fifo);
    let mut w = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .expect("open the FIFO");
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        for part in [&b"x,y\n"[..], b"1,2\n", b"3,4\n"] {
            std::thread::sleep(Duration::from_millis(60));
            w.write_all(part)?;
        }
        Ok(())
    });
    let loaded = within(move || load_csv(&fifo, &LoadOptions::default()))
        .expect("the load ends")
        .expect("loads");
    assert_eq!(loaded.table.n_rows(), 2);
    assert_eq!(
        loaded.content.bytes(),
        *blake3::hash(b"x,y\n1,2\n3,4\n").as_bytes()
    );
    writer.join().expect("the writer ends").expect("writes");
    drop(keep);
}

#[test]
fn a_pipe_larger_than_the_limit_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = mkfifo(dir.path());
    let mut w = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .expect("open the FIFO");
    // Less than the FIFO's buffer, so the write returns; the writer stays open meanwhile.
    w.write_all(&[b'1'; 5000]).expect("write");
    let opts = LoadOptions {
        max_bytes: 1000,
        ..LoadOptions::default()
    };
    let e = within(move || load_csv(&fifo, &opts).err())
        .expect("the load ends")
        .expect("too large");
    assert_eq!(e, DataError::TooLarge { limit: 1000 });
    drop(w);
}

#[test]
fn devices_are_refused_at_once() {
    for (device, kind) in [
        ("/dev/zero", "a character device"),
        ("/dev/urandom", "a character device"),
        ("/dev/null", "a character device"),
    ] {
        if !Path::new(device).exists() {
            continue;
        }
        let e = within(move || load_csv(Path::new(device), &LoadOptions::default()).err())
            .unwrap_or_else(|| panic!("{device} is not refused within {PATIENCE:?}"))
            .unwrap_or_else(|| panic!("{device} loads"));
        assert_eq!(
            e,
            DataError::NotAFile {
                path: device.to_string(),
                kind: kind.to_string()
            }
        );
        assert_eq!(
            e.to_string(),
            format!("it is {kind}, not a regular file or a pipe")
        );
    }
}

#[test]
fn a_symlink_to_a_device_is_refused_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let link = dir.path().join("data.csv");
    std::os::unix::fs::symlink("/dev/zero", &link).expect("symlink");
    let e = within(move || load_csv(&link, &LoadOptions::default()).err())
        .expect("refused at once")
        .expect("an error");
    assert!(matches!(e, DataError::NotAFile { .. }), "{e:?}");
}
