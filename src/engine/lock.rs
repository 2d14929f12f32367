//! Exclusive advisory file locks (the standard library's `File::try_lock`/`File::lock`: `flock` on
//! Unix, `LockFileEx` on Windows; no crate, so build.rs users compile none for it), held until
//! dropped. Two users: `cargo mcpp fetch` serialising installs into the shared toolchain package cache
//! (`fetch.rs`), and every device phase serialising its work on one package variant of the
//! device cache (`pipeline::lock_variant`, the variant's `lock`), so two cargo processes whose build scripts run the same
//! device phase never delete or half-write each other's outputs.

use crate::error::{Error, Result};
use std::path::Path;

/// An exclusive advisory lock on a file, held until dropped.
pub struct FileLock {
    _file: Option<std::fs::File>,
}

impl FileLock {
    /// Block until `path` (created if absent, with its directory) is exclusively locked by
    /// this process.
    ///
    /// # Errors
    /// [`crate::ErrorKind::Io`] naming the file.
    pub fn acquire(path: &Path) -> Result<FileLock> {
        FileLock::acquire_or_wait(path, || {})
    }

    /// As [`FileLock::acquire`], calling `blocking` once, before waiting, when another holder
    /// has the lock (to say why the build stands still, as cargo's "Blocking waiting for file
    /// lock" does). A file system without locks (some network mounts answer `ENOLCK` or
    /// `ENOTSUP`) gives an unlocked guard: the build goes on, as cargo's own locks do there.
    ///
    /// # Errors
    /// [`crate::ErrorKind::Io`] naming the file when it cannot be created or opened.
    pub fn acquire_or_wait(path: &Path, blocking: impl FnOnce()) -> Result<FileLock> {
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(|e| Error::io("cannot create", d, e))?;
        }
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(path).map_err(|e| Error::io("cannot open the lock file", path, e))?;
        let locked = match file.try_lock() {
            Ok(()) => Ok(()),
            Err(std::fs::TryLockError::WouldBlock) => {
                blocking();
                file.lock()
            }
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        };
        match locked {
            Ok(()) => Ok(FileLock { _file: Some(file) }),
            Err(e) if unsupported(&e) => Ok(FileLock { _file: None }),
            Err(e) => Err(Error::io("cannot lock", path, e)),
        }
    }
}

/// Whether a lock error says the file system has no locks (not that the lock is held).
fn unsupported(e: &std::io::Error) -> bool {
    // ENOLCK (37) and ENOTSUP/EOPNOTSUPP (95) on Linux.
    e.kind() == std::io::ErrorKind::Unsupported || (cfg!(target_os = "linux") && matches!(e.raw_os_error(), Some(37 | 95)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_told_it_blocks_and_gets_the_lock_after_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/lock");
        let first = FileLock::acquire(&path).unwrap();
        let (told_tx, told_rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let _second = FileLock::acquire_or_wait(&path, move || told_tx.send(()).unwrap()).unwrap();
        });
        // The waiter says it blocks before it waits; only then is the first lock released.
        told_rx.recv().unwrap();
        drop(first);
        waiter.join().unwrap();
    }
}
