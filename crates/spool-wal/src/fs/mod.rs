//! The file-system seam: every byte the log reads or writes goes through [`Fs`].
//!
//! Two implementations: [`StdFs`] (real files, real `fdatasync`) and
//! `FaultyFs` (in memory, for tests: forgets or tears unsynced writes on
//! `crash()`, injects EIO/ENOSPC; compiled only with the `test-support`
//! feature, so release builds do not carry it). The trait is object-safe and small so that
//! a third one (a failpoint wrapper, say) stays cheap to write.
//!
//! Durability contract the log relies on, and `FaultyFs` enforces: file data
//! (and size) survive a crash only after `sync_data`/`sync_all` on that file;
//! a directory entry (create, rename, remove) survives only after `sync_dir`
//! on its parent.

#[cfg(feature = "test-support")]
mod faulty;
mod std_fs;

use std::fmt::Debug;
use std::io;
use std::path::Path;

use crate::error::{io_err, WalError};

#[cfg(feature = "test-support")]
pub use faulty::{CrashMode, FaultyFs};
pub use std_fs::StdFs;

/// A file system the log can live on.
pub trait Fs: Send + Sync + Debug + 'static {
    /// Creates `dir` and its missing parents.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Creates `path` for reading and writing, truncating an existing file.
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Opens an existing file for reading and writing.
    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Opens an existing file for reading only.
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;
    /// Renames `from` to `to`, replacing `to` if it exists.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Unlinks a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Names of the regular files directly inside `dir`, in no order.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Whether a file or directory exists at `path`.
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// Makes the entries of `dir` (creates, renames, removes) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Takes an exclusive lock on `path` (created if missing) without
    /// waiting: `ErrorKind::WouldBlock` if someone holds it. Dropping the
    /// guard releases it.
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FsLock>>;
}

/// An open file. Positioned I/O only, so one handle can serve readers and the
/// writer without a shared cursor.
pub trait FsFile: Send + Sync + Debug {
    /// Current length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// Whether the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Fills `buf` from `offset`, or fails with `UnexpectedEof`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes all of `buf` at `offset`, extending the file if needed.
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// `fdatasync`: data and the size become durable.
    fn sync_data(&self) -> io::Result<()>;
    /// `fsync`: data and all metadata become durable.
    fn sync_all(&self) -> io::Result<()>;
    /// Reserves space so the file is at least `len` bytes long (`fallocate`).
    fn allocate(&self, len: u64) -> io::Result<()>;
    /// Truncates or zero-extends the file to `len` bytes.
    fn set_len(&self, len: u64) -> io::Result<()>;
}

/// A held lock; dropping it releases the lock.
pub trait FsLock: Send + Sync + Debug {}

/// Reads the whole of `path` into `buf` (reusing its allocation).
pub(crate) fn read_into(fs: &dyn Fs, path: &Path, buf: &mut Vec<u8>) -> io::Result<()> {
    let file = fs.open_read(path)?;
    let len = usize::try_from(file.len()?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "file larger than memory"))?;
    buf.clear();
    buf.resize(len, 0);
    file.read_exact_at(buf, 0)
}

/// Reads at most `max` bytes from the start of `path`.
pub(crate) fn read_prefix(fs: &dyn Fs, path: &Path, max: usize) -> io::Result<Vec<u8>> {
    let file = fs.open_read(path)?;
    let len = file.len()?.min(max as u64) as usize;
    let mut buf = vec![0; len];
    file.read_exact_at(&mut buf, 0)?;
    Ok(buf)
}

/// Removes a file; one already gone is fine (a crash mid-cleanup).
pub(crate) fn remove_if_present(fs: &dyn Fs, path: &Path) -> Result<(), WalError> {
    match fs.remove(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_err("remove", path)(e)),
        _ => Ok(()),
    }
}
