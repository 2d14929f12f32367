//! The shared cache of toolchain packages ([`Home`]): `$MCPP_HOME`, else `$CARGO_HOME/mcpp`,
//! else `~/.cargo/mcpp`, holding `archives/<dist>-<version>/<wheel>`,
//! `packages/<name>/<version>/` (one complete install, its [`MARKER`] inside), `tmp/`,
//! `locks/` and `installs.stamp`; and what an install is ([`Installed`]).

use super::lockfile::ArchiveRecord;
use super::Catalog;
use crate::config::env::Env;
use crate::error::{Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The directory of the installs under the cache root: `packages/<name>/<version>`.
pub const PACKAGES_DIR: &str = "packages";

/// The marker written inside a toolchain package's install directory before it is renamed
/// into place; its presence means the install is complete.
pub const MARKER: &str = ".mcpp-toolchain-package.json";

/// The shared toolchain package cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    /// Its root directory.
    pub root: PathBuf,
}

impl Home {
    /// `$MCPP_HOME`, else `$CARGO_HOME/mcpp`, else `$HOME/.cargo/mcpp` (read through `env`).
    ///
    /// # Errors
    /// [`ErrorKind::Io`] when none of the three variables is set.
    pub fn from_env(env: &Env) -> Result<Home> {
        if let Some(h) = env.get_nonempty("MCPP_HOME") {
            return Ok(Home { root: PathBuf::from(h) });
        }
        if let Some(c) = env.get_nonempty("CARGO_HOME") {
            return Ok(Home { root: PathBuf::from(c).join("mcpp") });
        }
        if let Some(h) = env.get_nonempty("HOME") {
            return Ok(Home { root: PathBuf::from(h).join(".cargo").join("mcpp") });
        }
        Err(Error::new(ErrorKind::Io, "no toolchain package cache directory: MCPP_HOME, CARGO_HOME and HOME are all unset").help("set MCPP_HOME=/path/to/a/cache"))
    }
    /// `packages/<name>/<version>`: the install of one toolchain package version.
    pub fn install_dir(&self, name: &str, version: &str) -> PathBuf {
        self.root.join(PACKAGES_DIR).join(name).join(version)
    }
    /// `archives/<dist>-<version>`: where that distribution's downloaded archive is kept.
    pub fn archive_dir(&self, dist: &str, version: &str) -> PathBuf {
        self.root.join("archives").join(format!("{dist}-{version}"))
    }
    /// `tmp`: scratch space on the same file system (downloads, unpacking).
    pub fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }
    /// `locks`: lock files serialising fetches.
    pub fn lock_dir(&self) -> PathBuf {
        self.root.join("locks")
    }
    /// `installs.stamp`: rewritten by every fetch that installs a toolchain package or writes a
    /// lockfile. A build script that found a toolchain package it wants missing (and so fell back to
    /// PATH, or refused) watches it, so that `cargo mcpp fetch`/`cargo mcpp build` installing
    /// it afterwards makes cargo rerun that build script: a `mcpp.lock` or a marker that did
    /// not exist cannot be watched (a missing path would rerun it on every build).
    pub fn installs_stamp(&self) -> PathBuf {
        self.root.join("installs.stamp")
    }
    /// Rewrite [`Home::installs_stamp`] with a new content (the time), so its mtime is now.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] when it cannot be written.
    pub fn touch_installs_stamp(&self) -> Result<()> {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default();
        crate::engine::fingerprint::write_if_changed(&self.installs_stamp(), format!("{now}\n").as_bytes()).map(drop)
    }
    /// The complete install of `name` `version`, if there is one (its marker is present).
    pub fn installed(&self, catalog: &Catalog, name: &str, version: &str) -> Option<Installed> {
        let dir = self.install_dir(name, version);
        let marker: Marker = serde_json::from_slice(&std::fs::read(dir.join(MARKER)).ok()?).ok()?;
        let d = catalog.packages.get(name)?;
        let root = dir.join(&d.root);
        Some(Installed {
            name: name.to_string(),
            version: version.to_string(),
            bin_dirs: d.bin.iter().map(|b| root.join(b)).collect(),
            lib_dirs: d.lib.iter().map(|b| root.join(b)).collect(),
            root,
            dir,
            archives: marker.archives,
            files: marker.files,
        })
    }
}

/// What [`MARKER`] holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Marker {
    /// Toolchain package name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The archives it was unpacked from.
    pub archives: Vec<ArchiveRecord>,
    /// Every file of the install: path relative to the install directory, size in bytes,
    /// sha256. A build checks the sizes (a stat each); `cargo mcpp fetch` checks the hashes
    /// and reinstalls a damaged install.
    #[serde(default)]
    pub files: Vec<(String, u64, String)>,
}

/// A complete toolchain package install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// Toolchain package name.
    pub name: String,
    /// Version.
    pub version: String,
    /// `packages/<name>/<version>`.
    pub dir: PathBuf,
    /// The package's root inside it.
    pub root: PathBuf,
    /// Program directories.
    pub bin_dirs: Vec<PathBuf>,
    /// Library directories (this package's own).
    pub lib_dirs: Vec<PathBuf>,
    /// The archives it came from, with their sha256.
    pub archives: Vec<ArchiveRecord>,
    /// The inventory recorded at install time (see [`Marker::files`]).
    pub files: Vec<(String, u64, String)>,
}

impl Installed {
    /// The first sign of damage: a recorded file missing, of another size, or (with
    /// `hashes`) with other bytes. `None` when the install is as it was unpacked.
    pub fn damage(&self, hashes: bool) -> Option<String> {
        for (rel, size, sha) in &self.files {
            let path = self.dir.join(rel);
            match std::fs::metadata(&path) {
                Err(_) => return Some(format!("`{rel}` is missing")),
                Ok(m) if m.len() != *size => return Some(format!("`{rel}` is {} bytes, not the {size} it was installed with", m.len())),
                Ok(_) if hashes && crate::engine::fingerprint::hash_file(&path).as_deref() != Some(sha.as_str()) => {
                    return Some(format!("`{rel}` has other bytes than it was installed with"))
                }
                Ok(_) => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_install_is_a_version_directory_under_packages_with_its_marker() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home { root: dir.path().to_path_buf() };
        let install = home.install_dir("glslang", "13.1.1");
        assert_eq!(install, dir.path().join("packages/glslang/13.1.1"));
        let catalog = Catalog::builtin().unwrap();
        // Without its marker a directory is not an install (an interrupted or older layout).
        std::fs::create_dir_all(install.join("cmeel.prefix/bin")).unwrap();
        assert!(home.installed(&catalog, "glslang", "13.1.1").is_none());
        std::fs::create_dir_all(dir.path().join("payloads/glslang/13.1.1")).unwrap();
        std::fs::write(dir.path().join("payloads/glslang/13.1.1/.mcpp-payload.json"), r#"{"name":"glslang","version":"13.1.1","archives":[]}"#).unwrap();
        assert!(home.installed(&catalog, "glslang", "13.1.1").is_none(), "the layout of an earlier cargo-mcpp is not read");
        std::fs::write(install.join(MARKER), r#"{"name":"glslang","version":"13.1.1","archives":[],"files":[]}"#).unwrap();
        let inst = home.installed(&catalog, "glslang", "13.1.1").expect("an install");
        assert_eq!((inst.root.clone(), inst.bin_dirs.clone()), (install.join("cmeel.prefix"), vec![install.join("cmeel.prefix/bin")]));
        assert_eq!(inst.damage(true), None);
    }
}
