//! The content hash of a load: the BLAKE3 hash of exactly the bytes that were parsed, computed while they are read.
#![cfg_attr(not(unix), allow(dead_code))]
//!
//! A regular file is read through [`VerifiedFile`], a [`ByteSource`] that cuts the file into
//! fixed blocks of [`BLOCK`] bytes. Every read covers whole blocks and hashes each one as a
//! subtree of the file's BLAKE3 tree; the first reading of a block records its chaining value
//! and every later reading must give the same one, else the read fails: the file changed
//! while it was being read. Once the table is parsed, the blocks' chaining values are merged
//! up the tree into the root, which is the plain `blake3::hash` of the whole file. So the hash
//! describes the very bytes the table came from, without a second pass over the file and
//! without holding the file in memory.

use crate::sys::fs::FileExt;
use std::cell::RefCell;
use std::fmt;
use std::fs::File;
use std::io;
use std::sync::OnceLock;

use blake3::hazmat::{
    left_subtree_len, merge_subtrees_non_root, merge_subtrees_root, ChainingValue, HasherExt, Mode,
};
use rayon::prelude::*;

use super::source::ByteSource;

/// Bytes per block: 64 BLAKE3 chunks of 1024 bytes. A power-of-two number of chunks, so a
/// block at any multiple of its size is a whole subtree of the file's BLAKE3 tree (the
/// subtree at chunk index `k` may hold up to the largest power of two dividing `k` chunks).
pub(crate) const BLOCK: usize = 64 * blake3::CHUNK_LEN;

/// [`BLOCK`] as a file offset.
const BLOCK_U64: u64 = BLOCK as u64;

/// The BLAKE3 hash of exactly the bytes a table was parsed from, and their number.
///
/// It is the standard `blake3::hash` of the file's content. It is kept in memory only: the
/// privacy layer stores no more than a keyed function of it, since a stored plain hash of a
/// data file would confirm a guessed file offline. For that reason it has no `Display`, and
/// its `Debug` shows a placeholder; [`ContentHash::bytes`] is the one way to its value.
#[derive(Clone, PartialEq, Eq)]
pub struct ContentHash {
    bytes: [u8; 32],
    len: u64,
}

impl ContentHash {
    /// The 32 bytes of the BLAKE3 hash.
    pub fn bytes(&self) -> [u8; 32] {
        self.bytes
    }

    /// The number of bytes hashed (the length of the content parsed).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the content had no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The hash of bytes held in memory.
    pub(crate) fn of_bytes(bytes: &[u8]) -> Self {
        ContentHash {
            bytes: *blake3::hash(bytes).as_bytes(),
            len: bytes.len() as u64,
        }
    }
}

impl fmt::Debug for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the value: a log line must not carry an unkeyed hash of the data.
        f.write_str("ContentHash(..)")
    }
}

/// The cause inside the `io::Error` of a read that found a block's bytes changed.
#[derive(Debug)]
pub(crate) struct Changed;

impl fmt::Display for Changed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the file changed while it was being read")
    }
}

impl std::error::Error for Changed {}

/// An `io::Error` saying the file changed while it was being read.
fn changed() -> io::Error {
    io::Error::other(Changed)
}

/// True when `e` says the file changed while it was being read.
pub(crate) fn is_changed(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Changed>())
}

thread_local! {
    /// One block of scratch space per thread, for blocks a read covers only in part.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on a buffer of [`BLOCK`] bytes, the thread's own when it is free.
fn with_scratch<T>(f: impl FnOnce(&mut [u8]) -> T) -> T {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            if buf.len() < BLOCK {
                buf.resize(BLOCK, 0);
            }
            f(&mut buf[..BLOCK])
        }
        // Only a nested use could find it taken; a fresh buffer keeps that correct.
        Err(_) => f(&mut vec![0u8; BLOCK]),
    })
}

/// A regular file read by positioned reads of whole blocks, each hashed and checked against
/// its first reading. See the module documentation.
pub(crate) struct VerifiedFile {
    file: File,
    /// The file's length when it was opened: bytes beyond are never read.
    len: u64,
    /// Per block, its value once first read: the chaining value of its subtree, or the root
    /// hash itself when the file is a single block.
    blocks: Vec<OnceLock<ChainingValue>>,
}

impl VerifiedFile {
    /// Reads `file` up to `len` bytes (its length when opened).
    pub(crate) fn new(file: File, len: u64) -> Self {
        let n = usize::try_from(len.div_ceil(BLOCK_U64)).unwrap_or(usize::MAX);
        VerifiedFile {
            file,
            len,
            blocks: (0..n).map(|_| OnceLock::new()).collect(),
        }
    }

    /// Where block `i` starts and how many bytes it has (only the last may be short).
    fn block_range(&self, i: usize) -> (u64, usize) {
        let start = i as u64 * BLOCK_U64;
        let n = self.len.saturating_sub(start).min(BLOCK_U64);
        (start, n as usize)
    }

    /// The value recorded for block `i` holding `bytes`: its subtree's chaining value, or the
    /// root hash when it is the whole file (a lone chunk or block has no parent to merge into).
    fn block_value(&self, i: usize, bytes: &[u8]) -> ChainingValue {
        if self.blocks.len() == 1 {
            return *blake3::hash(bytes).as_bytes();
        }
        let mut hasher = blake3::Hasher::new();
        // A multiple of BLOCK, hence of the chunk length, and the subtree there may hold a
        // whole block: neither assertion of `set_input_offset`/`update` can fire.
        hasher.set_input_offset(i as u64 * BLOCK_U64);
        hasher.update(bytes);
        hasher.finalize_non_root()
    }

    /// Hashes block `i`, which holds `bytes`, and records the value on its first reading;
    /// fails when an earlier reading recorded another.
    fn check(&self, i: usize, bytes: &[u8]) -> io::Result<()> {
        let value = self.block_value(i, bytes);
        let slot = self.blocks.get(i).ok_or_else(changed)?;
        if *slot.get_or_init(|| value) == value {
            Ok(())
        } else {
            Err(changed())
        }
    }

    /// Reads exactly `buf.len()` bytes at `offset`; a file now shorter than it was when opened
    /// has changed.
    fn read_exact(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                changed()
            } else {
                e
            }
        })
    }

    /// Reads block `i` whole into the front of `into` (at least `BLOCK` bytes) and checks it;
    /// returns its length.
    fn read_block(&self, i: usize, into: &mut [u8]) -> io::Result<usize> {
        let (start, n) = self.block_range(i);
        let bytes = into.get_mut(..n).ok_or_else(changed)?;
        self.read_exact(bytes, start)?;
        self.check(i, bytes)?;
        Ok(n)
    }

    /// Reads and records every block not read yet, then merges the blocks' values into the
    /// BLAKE3 hash of the whole file.
    pub(crate) fn finish(&self) -> io::Result<ContentHash> {
        (0..self.blocks.len())
            .into_par_iter()
            .filter(|&i| self.blocks[i].get().is_none())
            .try_for_each(|i| with_scratch(|buf| self.read_block(i, buf).map(|_| ())))?;
        let values: Vec<ChainingValue> = self
            .blocks
            .iter()
            .map(|slot| slot.get().copied().ok_or_else(changed))
            .collect::<io::Result<_>>()?;
        Ok(ContentHash {
            bytes: root(&values, self.len),
            len: self.len,
        })
    }
}

impl ByteSource for VerifiedFile {
    fn len(&self) -> u64 {
        self.len
    }

    /// Reads whole blocks: those inside the request straight into `buf`, those it covers only
    /// in part through the thread's scratch block. Every block is checked before any of its
    /// bytes is handed out.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let room = self.len.saturating_sub(offset);
        let n = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let end = offset + n as u64;
        let mut at = offset;
        while at < end {
            let i = usize::try_from(at / BLOCK_U64).unwrap_or(usize::MAX);
            let (start, size) = self.block_range(i);
            let block_end = start + size as u64;
            let dst = (at - offset) as usize;
            if at == start && block_end <= end {
                // A run of whole blocks: one read into the caller's buffer, then each checked.
                let run_end = if end == self.len {
                    end
                } else {
                    start + (end - start) / BLOCK_U64 * BLOCK_U64
                };
                let run = &mut buf[dst..dst + (run_end - start) as usize];
                self.read_exact(run, start)?;
                for (k, bytes) in run.chunks(BLOCK).enumerate() {
                    self.check(i + k, bytes)?;
                }
                at = run_end;
            } else {
                let until = end.min(block_end);
                let (from, to) = ((at - start) as usize, (until - start) as usize);
                with_scratch(|block| {
                    self.read_block(i, block)?;
                    buf[dst..dst + (to - from)].copy_from_slice(&block[from..to]);
                    Ok::<(), io::Error>(())
                })?;
                at = until;
            }
        }
        Ok(n)
    }
}

/// The BLAKE3 root hash of `len` bytes from the values of their blocks (see
/// [`VerifiedFile::block_value`]): no block is the hash of nothing, one block is already the
/// root, more are merged as the root's two subtrees.
fn root(values: &[ChainingValue], len: u64) -> [u8; 32] {
    match values {
        [] => *blake3::hash(&[]).as_bytes(),
        [only] => *only,
        _ => {
            let (left, right, left_len) = split(values, len);
            let root = merge_subtrees_root(
                &subtree(left, left_len),
                &subtree(right, len - left_len),
                Mode::Hash,
            );
            *root.as_bytes()
        }
    }
}

/// The chaining value of the subtree over `len` bytes whose blocks have these values.
fn subtree(values: &[ChainingValue], len: u64) -> ChainingValue {
    if let [only] = values {
        return *only;
    }
    let (left, right, left_len) = split(values, len);
    merge_subtrees_non_root(
        &subtree(left, left_len),
        &subtree(right, len - left_len),
        Mode::Hash,
    )
}

/// Splits a subtree of more than one block into its two children (BLAKE3 paper, section 2.1):
/// the left child holds the largest power-of-two number of chunks strictly less than the
/// whole, `left_subtree_len(len)` bytes. As `len > BLOCK` and a block is a power of two
/// chunks, that is a whole number of blocks, at least one and at most all but the last.
/// Returns the left values, the right values and the left child's length in bytes.
fn split(values: &[ChainingValue], len: u64) -> (&[ChainingValue], &[ChainingValue], u64) {
    let left_len = left_subtree_len(len);
    let k = usize::try_from(left_len / BLOCK_U64)
        .unwrap_or(usize::MAX)
        .clamp(1, values.len() - 1);
    let (left, right) = values.split_at(k);
    (left, right, left_len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::io::Write;

    /// A temporary file holding `bytes`, and its directory (kept alive with it).
    fn file_with(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("data");
        std::fs::write(&path, bytes).expect("write");
        (dir, path)
    }

    fn verified(path: &std::path::Path, len: usize) -> VerifiedFile {
        VerifiedFile::new(File::open(path).expect("open"), len as u64)
    }

    fn random_bytes(rng: &mut ChaCha8Rng, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        rng.fill(&mut v[..]);
        v
    }

    /// The lengths the hash is checked at: around chunk and block boundaries, and random.
    fn lengths(rng: &mut ChaCha8Rng) -> Vec<usize> {
        let mut v = vec![
            0,
            1,
            1023,
            1024,
            1025,
            65535,
            65536,
            65537,
            2 * 65536,
            3 * 65536 + 5,
            4 * 65536,
            4 * 65536 + 1,
            7 * 65536 - 1,
        ];
        v.extend((0..6).map(|_| rng.random_range(1..4_000_000)));
        v
    }

    #[test]
    fn the_hash_is_blake3_of_the_file_whatever_is_read() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for len in lengths(&mut rng) {
            let bytes = random_bytes(&mut rng, len);
            let (_dir, path) = file_with(&bytes);
            let expected = *blake3::hash(&bytes).as_bytes();
            // Nothing read before the end: every block is read by `finish`.
            let src = verified(&path, len);
            let hash = src.finish().expect("unchanged");
            assert_eq!(hash.bytes(), expected, "length {len}");
            assert_eq!(hash.len(), len as u64);
            // Reads of random sizes at random offsets, in any order, some past the end.
            let src = verified(&path, len);
            let mut buf = vec![0u8; 300_000];
            for _ in 0..40 {
                let offset = rng.random_range(0..=len as u64 + 10);
                let want = rng.random_range(0..buf.len());
                let n = src.read_at(&mut buf[..want], offset).expect("unchanged");
                let start = (offset as usize).min(len);
                assert_eq!(n, want.min(len - start));
                assert_eq!(&buf[..n], &bytes[start..start + n], "length {len}");
            }
            assert_eq!(src.finish().expect("unchanged").bytes(), expected);
        }
    }

    #[test]
    fn reads_back_to_front_give_the_same_hash() {
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let len = 9 * BLOCK + 77;
        let bytes = random_bytes(&mut rng, len);
        let (_dir, path) = file_with(&bytes);
        let src = verified(&path, len);
        let mut buf = vec![0u8; 5000];
        let mut at = len as u64;
        while at > 0 {
            at = at.saturating_sub(4999);
            let n = src.read_at(&mut buf, at).expect("unchanged");
            assert_eq!(&buf[..n], &bytes[at as usize..at as usize + n]);
        }
        let hash = src.finish().expect("unchanged");
        assert_eq!(hash.bytes(), *blake3::hash(&bytes).as_bytes());
    }

    #[test]
    fn a_block_rewritten_between_two_reads_is_detected() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for len in [100, BLOCK, 3 * BLOCK + 5] {
            let bytes = random_bytes(&mut rng, len);
            let (_dir, path) = file_with(&bytes);
            let src = verified(&path, len);
            let mut buf = vec![0u8; 10];
            let at = len as u64 - 20;
            src.read_at(&mut buf, at).expect("first read");
            // The same length, one byte different, in the block just read.
            let mut other = bytes.clone();
            other[len - 15] ^= 1;
            std::fs::write(&path, &other).expect("rewrite");
            let e = src.read_at(&mut buf, at).expect_err("changed");
            assert!(is_changed(&e), "{e}");
            assert_eq!(e.to_string(), "the file changed while it was being read");
            // Reading the block again through a larger read is refused too.
            let mut big = vec![0u8; len];
            assert!(src.read_at(&mut big, 0).is_err());
        }
    }

    #[test]
    fn a_file_cut_short_while_read_is_detected() {
        let bytes = vec![b'x'; 2 * BLOCK + 10];
        let (_dir, path) = file_with(&bytes);
        let src = verified(&path, bytes.len());
        let mut buf = vec![0u8; 100];
        src.read_at(&mut buf, 0).expect("first read");
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_len(BLOCK as u64 + 3))
            .expect("truncate");
        let e = src.finish().expect_err("cut short");
        assert!(is_changed(&e), "{e}");
    }

    #[test]
    fn bytes_appended_after_opening_are_not_read() {
        let bytes = vec![b'y'; BLOCK + 1];
        let (_dir, path) = file_with(&bytes);
        let src = verified(&path, bytes.len());
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(b"more"))
            .expect("append");
        let hash = src.finish().expect("the first len bytes did not change");
        assert_eq!(hash.bytes(), *blake3::hash(&bytes).as_bytes());
    }

    #[test]
    fn debug_shows_no_hash() {
        let h = ContentHash::of_bytes(b"a,b\n1,2\n");
        assert_eq!(format!("{h:?}"), "ContentHash(..)");
        assert_eq!(h.len(), 8);
        assert!(!h.is_empty());
    }
}
