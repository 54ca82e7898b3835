//! [`FaultyFs`]: an in-memory file system that crashes on demand. A test tool.
//!
//! It keeps, per file, the bytes a reader sees now and the bytes that would
//! survive power loss, and per directory, the entries that are durable.
//! `crash()` throws away everything not synced — or tears it: keeps a prefix
//! or a random subset of 512-byte sectors of each unsynced write, seeded so a
//! failing test replays exactly. It injects EIO on the Nth write or sync and
//! ENOSPC past a capacity.
//!
//! Invariants it models (POSIX, strictly):
//! - a write is durable only after `sync_data`/`sync_all` of its file;
//! - a failed sync does NOT make anything durable, and a later successful
//!   sync does not either (Linux drops the dirty pages: the "fsyncgate"
//!   lesson), yet those bytes may still partly survive a crash;
//! - a create, rename or remove is durable only after `sync_dir` of its
//!   parent; directories themselves are always durable (a simplification);
//! - after `crash()` every handle and lock from before is dead: handles fail
//!   with EIO, locks are free;
//! - space is what the named files hold: removing a file frees its bytes at
//!   once (a simplification: a real disk frees them when the last handle to
//!   the unlinked file closes).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rustix::io::Errno;

use super::{Fs, FsFile, FsLock};

/// The size of the unit a torn write keeps or loses.
const SECTOR: usize = 512;

/// How `crash_with` treats each write that was never synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CrashMode {
    /// Every unsynced write is lost.
    DropUnsynced,
    /// Every unsynced write reached the disk whole.
    KeepUnsynced,
    /// Each unsynced write keeps exactly its first `n` bytes.
    KeepPrefix(usize),
    /// Each unsynced write keeps a random prefix.
    RandomPrefix,
    /// Each unsynced write keeps a random subset of its 512-byte sectors.
    RandomSectors,
    /// Each unsynced write suffers one of the above, chosen at random.
    Random,
}

/// In-memory file system for crash and fault tests. Cheap to clone: clones
/// share one disk.
#[derive(Debug, Clone)]
pub struct FaultyFs {
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    rng: StdRng,
    /// Bumped by every crash; handles and locks from older generations are dead.
    generation: u64,
    dirs: BTreeSet<PathBuf>,
    names: BTreeMap<PathBuf, u64>,
    durable_names: BTreeMap<PathBuf, u64>,
    nodes: HashMap<u64, Node>,
    next_ino: u64,
    locked: HashSet<u64>,
    writes: u64,
    syncs: u64,
    fail_write_at: Option<u64>,
    fail_sync_at: Option<u64>,
    capacity: Option<u64>,
}

#[derive(Debug, Default)]
struct Node {
    /// What readers see now.
    data: Vec<u8>,
    /// What survives a crash.
    durable: Vec<u8>,
    unsynced: Vec<Unsynced>,
    /// The shortest length since the last sync: a truncation is durable
    /// only once synced, but it destroys the bytes past it even if not.
    min_len_since_sync: usize,
}

#[derive(Debug, Clone, Copy)]
struct Unsynced {
    offset: usize,
    len: usize,
    /// A sync that covered this write failed: no later sync saves it.
    lost_by_failed_sync: bool,
}

#[derive(Debug)]
struct FaultyFile {
    state: Arc<Mutex<State>>,
    ino: u64,
    generation: u64,
    writable: bool,
    path: PathBuf,
}

#[derive(Debug)]
struct FaultyLock {
    state: Arc<Mutex<State>>,
    ino: u64,
    generation: u64,
}

impl FsLock for FaultyLock {}

impl Drop for FaultyLock {
    fn drop(&mut self) {
        let mut state = lock_state(&self.state);
        if state.generation == self.generation {
            state.locked.remove(&self.ino);
        }
    }
}

fn lock_state(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // Nothing in this file panics while holding the lock; a poisoned mutex
    // would still hold a consistent disk.
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file", path.display()),
    )
}

impl FaultyFs {
    /// An empty disk whose random choices (tears, `Random` crashes) follow `seed`.
    pub fn new(seed: u64) -> FaultyFs {
        let state = State {
            rng: StdRng::seed_from_u64(seed),
            generation: 0,
            dirs: BTreeSet::from([PathBuf::from("/")]),
            names: BTreeMap::new(),
            durable_names: BTreeMap::new(),
            nodes: HashMap::new(),
            next_ino: 1,
            locked: HashSet::new(),
            writes: 0,
            syncs: 0,
            fail_write_at: None,
            fail_sync_at: None,
            capacity: None,
        };
        FaultyFs {
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// Simulates power loss with [`CrashMode::Random`].
    pub fn crash(&self) {
        self.crash_with(CrashMode::Random);
    }

    /// Simulates power loss: unsynced directory entries vanish, unsynced
    /// writes are lost or torn per `mode`, open handles and locks die.
    /// Pending fault injections are cleared.
    pub fn crash_with(&self, mode: CrashMode) {
        let mut guard = lock_state(&self.state);
        let state = &mut *guard;
        state.generation += 1;
        state.locked.clear();
        state.fail_write_at = None;
        state.fail_sync_at = None;
        state.names = state.durable_names.clone();
        let live: HashSet<u64> = state.names.values().copied().collect();
        state.nodes.retain(|ino, _| live.contains(ino));
        for node in state.nodes.values_mut() {
            node.crash(mode, &mut state.rng);
        }
    }

    /// The write after the next `n` successful ones fails with EIO (once).
    pub fn fail_write_after(&self, n: u64) {
        let mut state = lock_state(&self.state);
        state.fail_write_at = Some(state.writes + n);
    }

    /// The file sync after the next `n` successful ones fails with EIO
    /// (once); the writes it covered are never made durable.
    pub fn fail_sync_after(&self, n: u64) {
        let mut state = lock_state(&self.state);
        state.fail_sync_at = Some(state.syncs + n);
    }

    /// Writes, allocations and extensions that would make the files' total
    /// size exceed `bytes` fail with ENOSPC. `None` removes the limit.
    pub fn set_capacity(&self, bytes: Option<u64>) {
        lock_state(&self.state).capacity = bytes;
    }

    /// Bytes the named files hold now: what [`FaultyFs::set_capacity`]
    /// compares against.
    pub fn used_bytes(&self) -> u64 {
        lock_state(&self.state).total_bytes()
    }

    /// Flips one bit of a file in place, durably: damage at rest, for
    /// corruption tests.
    pub fn flip_bit(&self, path: &Path, offset: u64, bit: u8) -> io::Result<()> {
        let mut state = lock_state(&self.state);
        let ino = *state.names.get(path).ok_or_else(|| not_found(path))?;
        let node = state.nodes.get_mut(&ino).ok_or_else(|| not_found(path))?;
        let at = usize::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
        let mask = 1u8 << (bit % 8);
        for bytes in [&mut node.data, &mut node.durable] {
            let byte = bytes.get_mut(at).ok_or(io::ErrorKind::UnexpectedEof)?;
            *byte ^= mask;
        }
        Ok(())
    }

    fn file(&self, state: &mut State, path: &Path, ino: u64, writable: bool) -> Box<dyn FsFile> {
        Box::new(FaultyFile {
            state: Arc::clone(&self.state),
            ino,
            generation: state.generation,
            writable,
            path: path.to_path_buf(),
        })
    }

    fn require_parent(state: &State, path: &Path) -> io::Result<()> {
        match path.parent() {
            Some(parent) if state.dirs.contains(parent) => Ok(()),
            _ => Err(not_found(path)),
        }
    }
}

impl Node {
    fn sync(&mut self) {
        self.durable.truncate(self.min_len_since_sync);
        self.durable.resize(self.data.len(), 0);
        for write in self.unsynced.iter().filter(|w| !w.lost_by_failed_sync) {
            let end = (write.offset + write.len).min(self.data.len());
            if write.offset < end {
                self.durable[write.offset..end].copy_from_slice(&self.data[write.offset..end]);
            }
        }
        self.unsynced.retain(|w| w.lost_by_failed_sync);
        self.min_len_since_sync = self.data.len();
    }

    fn crash(&mut self, mode: CrashMode, rng: &mut StdRng) {
        let mut image = std::mem::take(&mut self.durable);
        for write in std::mem::take(&mut self.unsynced) {
            for (start, end) in kept_ranges(write, mode, rng) {
                let end = end.min(self.data.len());
                if start >= end {
                    continue;
                }
                if image.len() < end {
                    image.resize(end, 0);
                }
                image[start..end].copy_from_slice(&self.data[start..end]);
            }
        }
        self.data = image.clone();
        self.min_len_since_sync = image.len();
        self.durable = image;
    }
}

/// The absolute byte ranges of an unsynced write that survive a crash.
fn kept_ranges(write: Unsynced, mode: CrashMode, rng: &mut StdRng) -> Vec<(usize, usize)> {
    let (start, end) = (write.offset, write.offset + write.len);
    let mode = match mode {
        CrashMode::Random => match rng.gen_range(0..4) {
            0 => CrashMode::DropUnsynced,
            1 => CrashMode::KeepUnsynced,
            2 => CrashMode::RandomPrefix,
            _ => CrashMode::RandomSectors,
        },
        other => other,
    };
    match mode {
        CrashMode::DropUnsynced | CrashMode::Random => Vec::new(),
        CrashMode::KeepUnsynced => vec![(start, end)],
        CrashMode::KeepPrefix(n) => vec![(start, start + n.min(write.len))],
        CrashMode::RandomPrefix => vec![(start, start + rng.gen_range(0..=write.len))],
        CrashMode::RandomSectors => {
            let mut kept = Vec::new();
            let mut sector = start - start % SECTOR;
            while sector < end {
                let next = sector + SECTOR;
                if rng.gen_bool(0.5) {
                    kept.push((sector.max(start), next.min(end)));
                }
                sector = next;
            }
            kept
        }
    }
}

impl State {
    fn total_bytes(&self) -> u64 {
        let named: HashSet<u64> = self.names.values().copied().collect();
        named
            .iter()
            .filter_map(|ino| self.nodes.get(ino))
            .map(|n| n.data.len() as u64)
            .sum()
    }

    /// ENOSPC if growing file `ino` to `new_len` would pass the capacity.
    fn check_space(&self, ino: u64, new_len: usize) -> io::Result<()> {
        let Some(capacity) = self.capacity else {
            return Ok(());
        };
        let current = self.nodes.get(&ino).map_or(0, |n| n.data.len());
        let growth = new_len.saturating_sub(current) as u64;
        if self.total_bytes() + growth > capacity {
            return Err(Errno::NOSPC.into());
        }
        Ok(())
    }
}

impl Fs for FaultyFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut state = lock_state(&self.state);
        for ancestor in dir.ancestors() {
            if !ancestor.as_os_str().is_empty() {
                state.dirs.insert(ancestor.to_path_buf());
            }
        }
        Ok(())
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let mut guard = lock_state(&self.state);
        let state = &mut *guard;
        Self::require_parent(state, path)?;
        let ino = match state.names.get(path) {
            Some(&ino) => {
                if let Some(node) = state.nodes.get_mut(&ino) {
                    node.data.clear();
                    node.min_len_since_sync = 0;
                }
                ino
            }
            None => {
                let ino = state.next_ino;
                state.next_ino += 1;
                state.nodes.insert(ino, Node::default());
                state.names.insert(path.to_path_buf(), ino);
                ino
            }
        };
        Ok(self.file(state, path, ino, true))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let mut state = lock_state(&self.state);
        let ino = *state.names.get(path).ok_or_else(|| not_found(path))?;
        Ok(self.file(&mut state, path, ino, true))
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let mut state = lock_state(&self.state);
        let ino = *state.names.get(path).ok_or_else(|| not_found(path))?;
        Ok(self.file(&mut state, path, ino, false))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = lock_state(&self.state);
        Self::require_parent(&state, to)?;
        let ino = state.names.remove(from).ok_or_else(|| not_found(from))?;
        state.names.insert(to.to_path_buf(), ino);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut state = lock_state(&self.state);
        state.names.remove(path).ok_or_else(|| not_found(path))?;
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let state = lock_state(&self.state);
        if !state.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        Ok(state
            .names
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
            .collect())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let state = lock_state(&self.state);
        Ok(state.names.contains_key(path) || state.dirs.contains(path))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut guard = lock_state(&self.state);
        let state = &mut *guard;
        if !state.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        state.durable_names.retain(|p, _| p.parent() != Some(dir));
        for (path, &ino) in state.names.iter().filter(|(p, _)| p.parent() == Some(dir)) {
            state.durable_names.insert(path.clone(), ino);
        }
        Ok(())
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FsLock>> {
        let ino = {
            let state = lock_state(&self.state);
            state.names.get(path).copied()
        };
        if ino.is_none() {
            self.create(path)?;
        }
        let mut state = lock_state(&self.state);
        let ino = *state.names.get(path).ok_or_else(|| not_found(path))?;
        if !state.locked.insert(ino) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(Box::new(FaultyLock {
            state: Arc::clone(&self.state),
            ino,
            generation: state.generation,
        }))
    }
}

impl FaultyFile {
    /// Runs `f` on this file's node, unless the disk crashed since it was opened.
    fn with_node<T>(&self, f: impl FnOnce(&mut State, u64) -> io::Result<T>) -> io::Result<T> {
        let mut state = lock_state(&self.state);
        if state.generation != self.generation || !state.nodes.contains_key(&self.ino) {
            return Err(io::Error::other(format!(
                "{}: handle died in a simulated crash",
                self.path.display()
            )));
        }
        f(&mut state, self.ino)
    }

    fn check_writable(&self) -> io::Result<()> {
        if self.writable {
            Ok(())
        } else {
            Err(Errno::BADF.into())
        }
    }

    fn sync(&self) -> io::Result<()> {
        self.with_node(|state, ino| {
            let failing = state.fail_sync_at == Some(state.syncs);
            let node = state.nodes.get_mut(&ino).ok_or(io::ErrorKind::NotFound)?;
            if failing {
                state.fail_sync_at = None;
                for write in &mut node.unsynced {
                    write.lost_by_failed_sync = true;
                }
                return Err(Errno::IO.into());
            }
            node.sync();
            state.syncs += 1;
            Ok(())
        })
    }
}

impl FsFile for FaultyFile {
    fn len(&self) -> io::Result<u64> {
        self.with_node(|state, ino| Ok(state.nodes.get(&ino).map_or(0, |n| n.data.len() as u64)))
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.with_node(|state, ino| {
            let node = state.nodes.get(&ino).ok_or(io::ErrorKind::NotFound)?;
            let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
            let src = start
                .checked_add(buf.len())
                .and_then(|end| node.data.get(start..end))
                .ok_or(io::ErrorKind::UnexpectedEof)?;
            buf.copy_from_slice(src);
            Ok(())
        })
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.check_writable()?;
        self.with_node(|state, ino| {
            if state.fail_write_at == Some(state.writes) {
                state.fail_write_at = None;
                return Err(Errno::IO.into());
            }
            let start = usize::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
            let end = start
                .checked_add(buf.len())
                .ok_or(io::ErrorKind::InvalidInput)?;
            state.check_space(ino, end)?;
            state.writes += 1;
            let node = state.nodes.get_mut(&ino).ok_or(io::ErrorKind::NotFound)?;
            if node.data.len() < end {
                node.data.resize(end, 0);
            }
            node.data[start..end].copy_from_slice(buf);
            node.unsynced.push(Unsynced {
                offset: start,
                len: buf.len(),
                lost_by_failed_sync: false,
            });
            Ok(())
        })
    }

    fn sync_data(&self) -> io::Result<()> {
        self.sync()
    }

    fn sync_all(&self) -> io::Result<()> {
        self.sync()
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        self.check_writable()?;
        self.with_node(|state, ino| {
            let len = usize::try_from(len).map_err(|_| io::ErrorKind::InvalidInput)?;
            state.check_space(ino, len)?;
            let node = state.nodes.get_mut(&ino).ok_or(io::ErrorKind::NotFound)?;
            if node.data.len() < len {
                node.data.resize(len, 0);
            }
            Ok(())
        })
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.check_writable()?;
        self.with_node(|state, ino| {
            let len = usize::try_from(len).map_err(|_| io::ErrorKind::InvalidInput)?;
            state.check_space(ino, len)?;
            let node = state.nodes.get_mut(&ino).ok_or(io::ErrorKind::NotFound)?;
            node.data.resize(len, 0);
            node.min_len_since_sync = node.min_len_since_sync.min(len);
            Ok(())
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn setup() -> (FaultyFs, PathBuf) {
        let fs = FaultyFs::new(7);
        let dir = PathBuf::from("/d");
        fs.create_dir_all(&dir).unwrap();
        (fs, dir)
    }

    fn read_all(fs: &FaultyFs, path: &Path) -> Vec<u8> {
        let f = fs.open_read(path).unwrap();
        let mut buf = vec![0; f.len().unwrap() as usize];
        f.read_exact_at(&mut buf, 0).unwrap();
        buf
    }

    #[test]
    fn synced_data_and_entries_survive_a_crash_and_the_rest_does_not() {
        let (fs, dir) = setup();
        let kept = dir.join("kept");
        let f = fs.create(&kept).unwrap();
        f.write_all_at(b"durable", 0).unwrap();
        f.sync_data().unwrap();
        fs.sync_dir(&dir).unwrap();
        f.write_all_at(b"-lost", 7).unwrap();
        let unsynced_entry = dir.join("new");
        let g = fs.create(&unsynced_entry).unwrap();
        g.write_all_at(b"x", 0).unwrap();
        g.sync_data().unwrap();

        fs.crash_with(CrashMode::DropUnsynced);

        assert_eq!(read_all(&fs, &kept), b"durable");
        assert!(!fs.exists(&unsynced_entry).unwrap());
        assert!(f.len().is_err(), "old handles die in a crash");
    }

    #[test]
    fn keep_prefix_tears_an_unsynced_write() {
        let (fs, dir) = setup();
        let p = dir.join("f");
        let f = fs.create(&p).unwrap();
        fs.sync_dir(&dir).unwrap();
        f.write_all_at(b"abcdef", 0).unwrap();
        fs.crash_with(CrashMode::KeepPrefix(4));
        assert_eq!(read_all(&fs, &p), b"abcd");
    }

    #[test]
    fn a_failed_sync_is_never_made_good_by_a_later_one() {
        let (fs, dir) = setup();
        let p = dir.join("f");
        let f = fs.create(&p).unwrap();
        fs.sync_dir(&dir).unwrap();
        f.write_all_at(b"abc", 0).unwrap();
        fs.fail_sync_after(0);
        assert_eq!(f.sync_data().unwrap_err().raw_os_error(), Some(5));
        f.sync_data().unwrap();
        fs.crash_with(CrashMode::DropUnsynced);
        // The size may have become durable with the later sync; the data not.
        assert!(read_all(&fs, &p).iter().all(|&b| b == 0));
    }

    #[test]
    fn nth_write_fails_once_and_capacity_gives_enospc() {
        let (fs, dir) = setup();
        let f = fs.create(&dir.join("f")).unwrap();
        fs.fail_write_after(1);
        f.write_all_at(b"a", 0).unwrap();
        assert!(f.write_all_at(b"b", 1).is_err());
        f.write_all_at(b"c", 1).unwrap();
        fs.set_capacity(Some(4));
        assert_eq!(
            f.allocate(5).unwrap_err().raw_os_error(),
            Some(Errno::NOSPC.raw_os_error())
        );
        f.allocate(4).unwrap();
    }

    #[test]
    fn unsynced_rename_reverts_and_locks_are_exclusive_until_dropped() {
        let (fs, dir) = setup();
        let tmp = dir.join("tmp");
        fs.create(&tmp).unwrap().sync_data().unwrap();
        fs.sync_dir(&dir).unwrap();
        fs.rename(&tmp, &dir.join("final")).unwrap();
        let held = fs.lock(&dir.join("LOCK")).unwrap();
        assert_eq!(
            fs.lock(&dir.join("LOCK")).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        drop(held);
        fs.lock(&dir.join("LOCK")).unwrap();
        fs.crash_with(CrashMode::DropUnsynced);
        assert!(fs.exists(&tmp).unwrap());
        assert!(!fs.exists(&dir.join("final")).unwrap());
    }
}
