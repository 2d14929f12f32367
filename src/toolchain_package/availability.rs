//! What a build can use of the toolchain packages it selected ([`availability`]): installed
//! and consistent with `mcpp.lock`, missing (declared or not), or refused. Reads only the
//! cache and the lockfile; never downloads (installing is `crate::toolchain_package::fetch`).

use super::home::{Home, Installed, MARKER};
use super::lockfile::{same_archives, Lockfile};
use super::select::Selected;
use super::Catalog;
use crate::error::{Error, ErrorKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Whether a toolchain package a build needs can be used, as the resolver sees it.
#[derive(Debug, Clone)]
pub enum Availability {
    /// Installed and consistent with `mcpp.lock`.
    Ready {
        /// The install.
        installed: Installed,
        /// Its library directories and those of the toolchain packages it needs.
        lib_dirs: Vec<PathBuf>,
        /// Why this version ([`Selected::why`]).
        why: String,
    },
    /// Not installed.
    Missing {
        /// The version wanted.
        version: String,
        /// What declares it (`mcpp.lock`, a manifest line), when something does: then its
        /// absence is refused; otherwise the resolver goes on to PATH.
        declared_by: Option<String>,
        /// Why this version.
        why: String,
    },
    /// Installed, but not from the archives `mcpp.lock` records, or the lock names another version.
    Refused(Error),
}

/// What the build can use of each selected toolchain package: installed and matching `mcpp.lock`, missing
/// (declared or not), or refused. Reads only the cache and the lockfile; never downloads.
pub fn availability(catalog: &Catalog, home: &Home, selected: &[Selected], lock: &Lockfile, lock_path: &Path, fetch_command: &str) -> BTreeMap<String, Availability> {
    let mut out = BTreeMap::new();
    for s in selected {
        let locked = lock.get(&s.name);
        let declared_by = if s.pinned {
            Some(s.why.clone())
        } else {
            locked.map(|_| format!("{}", lock_path.display()))
        };
        if let Some(l) = locked {
            if l.version != s.version {
                out.insert(
                    s.name.clone(),
                    Availability::Refused(
                        Error::new(ErrorKind::Manifest, format!("{} records {} {}, but this build uses {} {} ({})", lock_path.display(), s.name, l.version, s.name, s.version, s.why))
                            .file(lock_path)
                            .help(format!("run `{fetch_command}` to install {} {} and update the lockfile", s.name, s.version)),
                    ),
                );
                continue;
            }
        }
        let state = match home.installed(catalog, &s.name, &s.version) {
            Some(inst) => {
                if let Some(l) = locked {
                    if !same_archives(&l.archives, &inst.archives) {
                        out.insert(
                            s.name.clone(),
                            Availability::Refused(
                                Error::new(ErrorKind::Manifest, format!("the installed {} {} was not unpacked from the archives {} records", s.name, s.version, lock_path.display()))
                                    .file(inst.dir.join(MARKER))
                                    .help(format!("run `{fetch_command}`: it checks the archives against the lockfile and reinstalls from them (it refuses archives whose sha256 differs)")),
                            ),
                        );
                        continue;
                    }
                }
                if let Some(d) = inst.damage(false) {
                    out.insert(
                        s.name.clone(),
                        Availability::Refused(
                            Error::new(ErrorKind::Manifest, format!("the installed toolchain package {} {} is damaged: {d}", s.name, s.version))
                                .file(&inst.dir)
                                .help(format!("run `{fetch_command}`: it checks every installed file and reinstalls a damaged toolchain package")),
                        ),
                    );
                    continue;
                }
                let mut lib_dirs = inst.lib_dirs.clone();
                let mut missing_need = None;
                if let Some(d) = catalog.packages.get(&s.name) {
                    for n in &d.needs {
                        match selected.iter().find(|x| &x.name == n) {
                            Some(x) => match home.installed(catalog, &x.name, &x.version) {
                                Some(other) => lib_dirs.extend(other.lib_dirs),
                                None => missing_need = Some(format!("{} {}", x.name, x.version)),
                            },
                            None => missing_need = Some(n.clone()),
                        }
                    }
                }
                if let Some(need) = missing_need {
                    out.insert(
                        s.name.clone(),
                        Availability::Refused(
                            Error::new(ErrorKind::Manifest, format!("the toolchain package {} {} needs the toolchain package {need} at run time, which is not installed", s.name, s.version))
                                .help(format!("run `{fetch_command}`: it installs both")),
                        ),
                    );
                    continue;
                }
                Availability::Ready { installed: inst, lib_dirs, why: s.why.clone() }
            }
            None => Availability::Missing { version: s.version.clone(), declared_by, why: s.why.clone() },
        };
        out.insert(s.name.clone(), state);
    }
    out
}
