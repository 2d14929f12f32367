//! Where a command works: the packages cargo would build for `-p`/`--workspace`/`--exclude`
//! (cargo's rules, from `cargo metadata`, which runs here), and the profile directory their
//! build writes (`target/[<triple>/]<profile dir>`), which holds each package's device cache.

use super::{BuildLocation, PackageSelection};
use crate::error::{Error, ErrorKind, Result};
use std::path::{Path, PathBuf};

/// The cargo to run: `CARGO` (set when cargo runs this subcommand), else `cargo` on PATH.
pub fn cargo_program() -> std::ffi::OsString {
    crate::config::env::Env::process()
        .get_os("CARGO")
        .unwrap_or_else(|| "cargo".into())
}

/// The packages a command works on and the profile directory of their build (`why tool`
/// reads the decisions recorded there).
pub struct Located {
    /// Each selected package: its name and its `Cargo.toml`.
    pub packages: Vec<(String, PathBuf)>,
    /// The profile directory of the build: `<target dir>[/<triple>]/<debug|release|profile>`.
    pub profile_path: PathBuf,
    /// The selected packages without a build script (cargo metadata: no `custom-build` target).
    pub without_build_script: Vec<String>,
    /// Each selected package's id (cargo's `package_id` in its JSON messages) -> its name.
    pub ids: std::collections::BTreeMap<String, String>,
}

/// Find the packages `selection` names and the profile directory of `location`'s build, with
/// `cargo metadata` (no dependencies).
///
/// # Errors
/// [`ErrorKind::Manifest`] when `cargo metadata` fails; a malformed `-p`/`--exclude` glob
/// ([`select_packages`]).
pub fn locate(location: &BuildLocation, selection: &PackageSelection) -> Result<Located> {
    let metadata = metadata(location.manifest_path.as_deref())?;
    check_target_dir(&metadata, location.target_dir.as_deref())?;
    let packages = select_packages(&metadata, location.manifest_path.as_deref(), selection)?;
    let profile_path = profile_path(&metadata, location);
    let without_build_script = packages
        .iter()
        .filter(|p| !p.targets.iter().any(|t| t.is_custom_build()))
        .map(|p| p.name.to_string())
        .collect();
    let ids = packages
        .iter()
        .map(|p| (p.id.repr.clone(), p.name.to_string()))
        .collect();
    Ok(Located {
        packages: packages
            .iter()
            .map(|p| {
                (
                    p.name.to_string(),
                    p.manifest_path.clone().into_std_path_buf(),
                )
            })
            .collect(),
        profile_path,
        without_build_script,
        ids,
    })
}

/// The workspace of `manifest_path` (or of the current directory) from `cargo metadata`
/// (no dependencies): its packages with their targets, and cargo's target directory.
///
/// # Errors
/// [`ErrorKind::Manifest`] when `cargo metadata` fails, with its output.
pub fn metadata(manifest_path: Option<&Path>) -> Result<cargo_metadata::Metadata> {
    let mut meta = cargo_metadata::MetadataCommand::new();
    meta.cargo_path(cargo_program()).no_deps();
    if let Some(p) = manifest_path {
        meta.manifest_path(p);
    }
    meta.exec().map_err(|e| {
        Error::new(
            ErrorKind::Manifest,
            "`cargo metadata` failed, so the package cannot be found",
        )
        .detail(e.to_string())
        .help("run from a package directory or pass --manifest-path path/to/Cargo.toml")
    })
}

/// Refuse a target directory whose path has a control character (a newline): cargo passes it
/// on in `OUT_DIR` and the build scripts' `cargo::` directives are lines, so the build would
/// end in a link failure naming a cut path. The path is `--target-dir` (`arg`), else the
/// workspace's (`CARGO_TARGET_DIR`, `build.target-dir`, `target/`), named by where it came from.
///
/// # Errors
/// [`ErrorKind::Usage`] naming the option, the variable or the setting, before anything runs.
pub fn check_target_dir(metadata: &cargo_metadata::Metadata, arg: Option<&Path>) -> Result<()> {
    let (path, from) = match arg {
        Some(p) => (p.to_path_buf(), "--target-dir"),
        None if crate::config::env::Env::process()
            .get_os("CARGO_TARGET_DIR")
            .is_some() =>
        {
            (
                metadata.target_directory.clone().into_std_path_buf(),
                "CARGO_TARGET_DIR",
            )
        }
        None => (
            metadata.target_directory.clone().into_std_path_buf(),
            "the target directory (`build.target-dir` in .cargo/config.toml, or the workspace's)",
        ),
    };
    if !crate::text::has_control(&path.to_string_lossy()) {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::Usage,
        format!(
            "{from} `{}` holds a newline or another control character",
            crate::text::echo_path(&path)
        ),
    )
    .detail("cargo hands the directory to build scripts, whose directives to cargo are lines: a path with a newline cannot be passed on, and the link would fail")
    .help("choose a target directory whose path has no newline or control character"))
}

/// Where cargo puts `location`'s profile output: `<target dir>[/<triple>]/<profile dir>`, the
/// target directory being `--target-dir` or the workspace's; `dev`/`test` build into `debug`,
/// `bench` into `release`, any other profile into its own name. The device caches
/// ([`crate::engine::layout::DeviceCache::in_profile`]) and `cargo mcpp pack`'s default output are
/// below it.
pub fn profile_path(metadata: &cargo_metadata::Metadata, location: &BuildLocation) -> PathBuf {
    let profile = match (&location.profile, location.release) {
        (Some(p), _) => p.clone(),
        (None, true) => "release".to_string(),
        (None, false) => "dev".to_string(),
    };
    let profile_dir = match profile.as_str() {
        "dev" | "test" => "debug".to_string(),
        "bench" => "release".to_string(),
        other => other.to_string(),
    };
    let mut profile_path = location
        .target_dir
        .clone()
        .unwrap_or_else(|| metadata.target_directory.clone().into_std_path_buf());
    if let Some(t) = &location.target {
        profile_path.push(t);
    }
    profile_path.push(&profile_dir);
    profile_path
}

/// A `-p`/`--exclude` spec: the name, the version after `@`, and the glob when it is one.
type PackageSpec = (String, Option<String>, Option<glob::Pattern>);

/// The workspace packages cargo builds for these flags, by cargo's rules: `--workspace` (less
/// `--exclude`), else the `-p` specs, else the package of the manifest (`--manifest-path`, or
/// the nearest `Cargo.toml` above the current directory), else, for a virtual manifest, the
/// workspace's `default-members` (all members when it has none). A `-p` naming a package
/// outside the workspace (a dependency) selects nothing here: cargo builds it, and its own
/// build script does its device work.
///
/// # Errors
/// [`ErrorKind::Manifest`] for a malformed `-p`/`--exclude` glob.
pub fn select_packages<'m>(
    metadata: &'m cargo_metadata::Metadata,
    manifest_path: Option<&std::path::Path>,
    selection: &PackageSelection,
) -> Result<Vec<&'m cargo_metadata::Package>> {
    let members = metadata.workspace_packages();
    let matcher = |specs: &[String]| -> Result<Vec<PackageSpec>> {
        specs
            .iter()
            .map(|spec| {
                let (name, version) = match spec.split_once('@') {
                    Some((n, v)) => (n.to_string(), Some(v.to_string())),
                    None => (spec.clone(), None),
                };
                let pattern = if name.contains(['*', '?', '[']) {
                    Some(glob::Pattern::new(&name).map_err(|e| {
                        Error::new(
                            ErrorKind::Usage,
                            format!("`{spec}` is not a valid package glob: {}", e.msg),
                        )
                        .help("write a package name, name@version, or a glob such as `app-*`")
                    })?)
                } else {
                    None
                };
                Ok((name, version, pattern))
            })
            .collect()
    };
    let matches = |specs: &[(String, Option<String>, Option<glob::Pattern>)],
                   p: &cargo_metadata::Package| {
        specs.iter().any(|(name, version, pattern)| {
            let name_ok = match pattern {
                Some(g) => g.matches(&p.name),
                None => *name == *p.name,
            };
            name_ok
                && version.as_ref().is_none_or(|v| {
                    p.version.to_string() == *v
                        || p.version.to_string().starts_with(&format!("{v}."))
                })
        })
    };
    if selection.workspace {
        let excluded = matcher(&selection.exclude)?;
        return Ok(members
            .into_iter()
            .filter(|p| !matches(&excluded, p))
            .collect());
    }
    if !selection.package.is_empty() {
        let wanted = matcher(&selection.package)?;
        return Ok(members
            .into_iter()
            .filter(|p| matches(&wanted, p))
            .collect());
    }
    let manifest = match manifest_path {
        Some(p) => Some(p.to_path_buf()),
        None => std::env::current_dir().ok().and_then(|d| {
            d.ancestors()
                .map(|a| a.join("Cargo.toml"))
                .find(|m| m.is_file())
        }),
    };
    let canonical =
        |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if let Some(m) = manifest.map(|m| canonical(&m)) {
        if let Some(p) = members
            .iter()
            .find(|p| canonical(p.manifest_path.as_std_path()) == m)
        {
            return Ok(vec![*p]);
        }
    }
    Ok(metadata.workspace_default_packages())
}
