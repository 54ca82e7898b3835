//! [`StdFs`]: the real file system.
//!
//! `sync_data` is a real `fdatasync` and `sync_all` a real `fsync`, never
//! skipped: the log's acknowledgements mean exactly what these calls mean.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use rustix::fs::{FallocateFlags, FlockOperation};
use rustix::io::Errno;

use super::{Fs, FsFile, FsLock};

/// Real files through `std::fs` and `rustix`.
#[derive(Debug, Default, Clone, Copy)]
pub struct StdFs;

#[derive(Debug)]
struct StdFile(File);

/// Holds the locked `LOCK` file open: closing it releases the `flock`.
#[derive(Debug)]
struct StdLock {
    _file: File,
}

impl FsLock for StdLock {}

impl Fs for StdFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Box::new(StdFile(file)))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Ok(Box::new(StdFile(file)))
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        Ok(Box::new(StdFile(File::open(path)?)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                if let Some(name) = entry.file_name().to_str() {
                    names.push(name.to_owned());
                }
            }
        }
        Ok(names)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FsLock>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive)?;
        Ok(Box::new(StdLock { _file: file }))
    }
}

impl FsFile for StdFile {
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        FileExt::read_exact_at(&self.0, buf, offset)
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        FileExt::write_all_at(&self.0, buf, offset)
    }

    fn sync_data(&self) -> io::Result<()> {
        Ok(rustix::fs::fdatasync(&self.0)?)
    }

    fn sync_all(&self) -> io::Result<()> {
        Ok(rustix::fs::fsync(&self.0)?)
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        let current = self.len()?;
        if len <= current {
            return Ok(());
        }
        match rustix::fs::fallocate(&self.0, FallocateFlags::empty(), current, len - current) {
            Ok(()) => Ok(()),
            // Some file systems cannot preallocate; a sparse extension keeps
            // the log correct, only its syncs pay for block allocation.
            Err(Errno::OPNOTSUPP | Errno::NOSYS) => self.0.set_len(len),
            Err(e) => Err(e.into()),
        }
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
}
