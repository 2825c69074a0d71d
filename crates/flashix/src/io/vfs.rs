//! [`Vfs`]: the small named files of an index directory (WAL, manifest), on a real
//! directory ([`DirVfs`]) or in memory ([`MemVfs`]).
//!
//! Durability model (what the fault injector's `FaultyVfs` enforces in tests): file
//! contents are durable after [`Vfs::sync`] of that file; creations, removals and renames
//! are durable after [`Vfs::sync_dir`].

use crate::error::{Error, Result};
use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// Named files in one directory. Methods take `&self`; implementations lock inside.
pub trait Vfs: Send + Sync {
    /// Create `name` empty, truncating it if it exists.
    fn create(&self, name: &str) -> Result<()>;
    /// Append bytes at the end of `name`.
    fn append(&self, name: &str, data: &[u8]) -> Result<()>;
    /// The whole contents of `name`.
    fn read(&self, name: &str) -> Result<Vec<u8>>;
    /// Length of `name` in bytes.
    fn len(&self, name: &str) -> Result<u64>;
    /// Cut `name` to `len` bytes.
    fn truncate(&self, name: &str, len: u64) -> Result<()>;
    /// Make the contents of `name` durable.
    fn sync(&self, name: &str) -> Result<()>;
    /// Rename `from` to `to`, replacing `to`.
    fn rename(&self, from: &str, to: &str) -> Result<()>;
    /// Remove `name`; removing a missing file is an error.
    fn remove(&self, name: &str) -> Result<()>;
    /// True if `name` exists.
    fn exists(&self, name: &str) -> Result<bool>;
    /// Names of all files, sorted.
    fn list(&self) -> Result<Vec<String>>;
    /// Make creations, removals and renames durable.
    fn sync_dir(&self) -> Result<()>;
}

fn not_found(name: &str) -> Error {
    Error::io(
        format!("opening {name}"),
        std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
    )
}

/// Files in memory. Clones share the same files.
#[derive(Clone, Default)]
pub struct MemVfs {
    files: Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
}

impl MemVfs {
    /// An empty in-memory directory.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Vec<u8>>> {
        self.files.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replace the whole contents of `name` (tests: corrupt or forge a file).
    pub fn put(&self, name: &str, data: Vec<u8>) {
        self.lock().insert(name.to_string(), data);
    }
}

impl Vfs for MemVfs {
    fn create(&self, name: &str) -> Result<()> {
        self.lock().insert(name.to_string(), Vec::new());
        Ok(())
    }
    fn append(&self, name: &str, data: &[u8]) -> Result<()> {
        self.lock()
            .get_mut(name)
            .ok_or_else(|| not_found(name))?
            .extend_from_slice(data);
        Ok(())
    }
    fn read(&self, name: &str) -> Result<Vec<u8>> {
        self.lock()
            .get(name)
            .cloned()
            .ok_or_else(|| not_found(name))
    }
    fn len(&self, name: &str) -> Result<u64> {
        Ok(self.lock().get(name).ok_or_else(|| not_found(name))?.len() as u64)
    }
    fn truncate(&self, name: &str, len: u64) -> Result<()> {
        self.lock()
            .get_mut(name)
            .ok_or_else(|| not_found(name))?
            .resize(len as usize, 0);
        Ok(())
    }
    fn sync(&self, name: &str) -> Result<()> {
        if self.lock().contains_key(name) {
            Ok(())
        } else {
            Err(not_found(name))
        }
    }
    fn rename(&self, from: &str, to: &str) -> Result<()> {
        let mut files = self.lock();
        let data = files.remove(from).ok_or_else(|| not_found(from))?;
        files.insert(to.to_string(), data);
        Ok(())
    }
    fn remove(&self, name: &str) -> Result<()> {
        self.lock()
            .remove(name)
            .map(|_| ())
            .ok_or_else(|| not_found(name))
    }
    fn exists(&self, name: &str) -> Result<bool> {
        Ok(self.lock().contains_key(name))
    }
    fn list(&self) -> Result<Vec<String>> {
        Ok(self.lock().keys().cloned().collect())
    }
    fn sync_dir(&self) -> Result<()> {
        Ok(())
    }
}

/// Files in a real directory. Open handles are cached so appends do not reopen.
pub struct DirVfs {
    dir: PathBuf,
    handles: Mutex<HashMap<String, File>>,
    writable: bool,
}

impl DirVfs {
    /// The directory `dir`, which must exist.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        DirVfs {
            dir: dir.into(),
            handles: Mutex::new(HashMap::new()),
            writable: true,
        }
    }

    /// The directory `dir` for reading only: files are opened read-only and every change
    /// (create, append, truncate, sync, rename, remove, sync_dir) is an error. The base of
    /// a read-only index (`crate::io::OverlayVfs`, `Db::open_read_only`).
    pub fn read_only(dir: impl Into<PathBuf>) -> Self {
        DirVfs {
            writable: false,
            ..DirVfs::new(dir)
        }
    }

    /// An error for a change asked of a read-only directory.
    fn check_writable(&self, what: &str, name: &str) -> Result<()> {
        if self.writable {
            return Ok(());
        }
        Err(Error::io(
            format!("{what} {}", self.dir.join(name).display()),
            std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "the directory was opened read-only",
            ),
        ))
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, File>> {
        self.handles.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn with_file<T>(
        &self,
        name: &str,
        what: &str,
        f: impl FnOnce(&mut File) -> std::io::Result<T>,
    ) -> Result<T> {
        let mut handles = self.lock();
        if !handles.contains_key(name) {
            let file = OpenOptions::new()
                .read(true)
                .write(self.writable)
                .open(self.dir.join(name))
                .map_err(|e| Error::io(format!("opening {}", self.dir.join(name).display()), e))?;
            handles.insert(name.to_string(), file);
        }
        let file = handles.get_mut(name).ok_or_else(|| not_found(name))?;
        f(file).map_err(|e| Error::io(format!("{what} {}", self.dir.join(name).display()), e))
    }
}

impl Vfs for DirVfs {
    fn create(&self, name: &str) -> Result<()> {
        self.check_writable("creating", name)?;
        let path = self.dir.join(name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        self.lock().insert(name.to_string(), file);
        Ok(())
    }
    fn append(&self, name: &str, data: &[u8]) -> Result<()> {
        self.check_writable("appending to", name)?;
        self.with_file(name, "appending to", |f| {
            f.seek(SeekFrom::End(0))?;
            f.write_all(data)
        })
    }
    fn read(&self, name: &str) -> Result<Vec<u8>> {
        self.with_file(name, "reading", |f| {
            f.seek(SeekFrom::Start(0))?;
            let mut v = Vec::new();
            f.read_to_end(&mut v)?;
            Ok(v)
        })
    }
    fn len(&self, name: &str) -> Result<u64> {
        self.with_file(name, "reading the length of", |f| Ok(f.metadata()?.len()))
    }
    fn truncate(&self, name: &str, len: u64) -> Result<()> {
        self.check_writable("truncating", name)?;
        self.with_file(name, "truncating", |f| f.set_len(len))
    }
    fn sync(&self, name: &str) -> Result<()> {
        self.check_writable("syncing", name)?;
        self.with_file(name, "syncing", |f| f.sync_data())
    }
    fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.check_writable("renaming", from)?;
        let mut handles = self.lock();
        std::fs::rename(self.dir.join(from), self.dir.join(to)).map_err(|e| {
            Error::io(
                format!("renaming {from} to {to} in {}", self.dir.display()),
                e,
            )
        })?;
        handles.remove(to);
        if let Some(f) = handles.remove(from) {
            handles.insert(to.to_string(), f);
        }
        Ok(())
    }
    fn remove(&self, name: &str) -> Result<()> {
        self.check_writable("removing", name)?;
        self.lock().remove(name);
        let path = self.dir.join(name);
        std::fs::remove_file(&path)
            .map_err(|e| Error::io(format!("removing {}", path.display()), e))
    }
    fn exists(&self, name: &str) -> Result<bool> {
        Ok(self.dir.join(name).exists())
    }
    fn list(&self) -> Result<Vec<String>> {
        let rd = std::fs::read_dir(&self.dir)
            .map_err(|e| Error::io(format!("listing {}", self.dir.display()), e))?;
        let mut names = Vec::new();
        for entry in rd {
            let entry =
                entry.map_err(|e| Error::io(format!("listing {}", self.dir.display()), e))?;
            if entry.file_type().map(|t| t.is_file()).unwrap_or(false) {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        names.sort();
        Ok(names)
    }
    fn sync_dir(&self) -> Result<()> {
        self.check_writable("syncing", ".")?;
        let d = File::open(&self.dir)
            .map_err(|e| Error::io(format!("opening directory {}", self.dir.display()), e))?;
        d.sync_all()
            .map_err(|e| Error::io(format!("syncing directory {}", self.dir.display()), e))
    }
}
