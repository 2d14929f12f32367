//! Selecting one version of each toolchain package a build needs: the rules' requirements
//! (after the gates), the project's pins from `[package.metadata.mcpp.toolchain-packages]`, the
//! descriptors' defaults and `needs`, and the version `mcpp.lock` records.

use super::lockfile::Lockfile;
use super::version::{compare_versions, VersionReq};
use super::{Catalog, CATALOG_FILE};
use crate::error::{Error, ErrorKind, Result};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::Path;

/// One requirement on a toolchain package: who asks, and which versions.
#[derive(Debug, Clone)]
pub struct Requirement {
    /// The toolchain package name.
    pub package: String,
    /// The version rule; `None` takes the descriptor's default (a package another one needs).
    pub req: Option<VersionReq>,
    /// Who asks, for messages (`the spirv rule`).
    pub by: String,
}

/// A project's override from `[package.metadata.mcpp.toolchain-packages]`.
#[derive(Debug, Clone)]
pub struct ProjectPin {
    /// The version rule written.
    pub req: VersionReq,
    /// Where: `path/Cargo.toml:12`.
    pub at: String,
}

/// The one version of a toolchain package this build uses, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selected {
    /// Toolchain package name.
    pub name: String,
    /// The version.
    pub version: String,
    /// Why this version, with the manifest line when the project named it.
    pub why: String,
    /// Whether the project's manifest names this package (then it is declared, and a missing
    /// install is refused rather than skipped).
    pub pinned: bool,
    /// Overrides to report (the project's pin replacing a rule's exact default).
    pub reports: Vec<String>,
    /// The exact distributions to fetch.
    pub dists: Vec<(String, String)>,
}

/// Combine the rules' `requirements` (gated already) with the project's `pins` into one
/// version per toolchain package, expanding `needs`.
///
/// # Errors
/// [`ErrorKind::Manifest`] for a pin below a floor (naming both), two rules asking for
/// different exact versions, an unknown toolchain package, a version the descriptor does not know, or a
/// project floor no known version meets.
pub fn select(catalog: &Catalog, requirements: &[Requirement], pins: &BTreeMap<String, ProjectPin>, manifest: &Path) -> Result<Vec<Selected>> {
    select_locked(catalog, requirements, pins, manifest, None)
}

/// [`select`], preferring the version `lock` records for a package that neither the project
/// pins nor a rule names exactly, when that version meets every floor (so a newer default in a
/// newer cargo-mcpp does not move a locked project).
///
/// # Errors
/// As [`select`].
pub fn select_locked(catalog: &Catalog, requirements: &[Requirement], pins: &BTreeMap<String, ProjectPin>, manifest: &Path, lock: Option<(&Lockfile, &Path)>) -> Result<Vec<Selected>> {
    let mut reqs: Vec<Requirement> = requirements.to_vec();
    let mut i = 0;
    while i < reqs.len() {
        let d = catalog.get(&reqs[i].package)?;
        for n in &d.needs {
            if !reqs.iter().any(|r| &r.package == n) {
                let by = format!("the {} toolchain package (its programs load {n}'s libraries)", reqs[i].package);
                reqs.push(Requirement { package: n.clone(), req: None, by });
            }
        }
        i += 1;
    }
    let mut order: Vec<String> = Vec::new();
    for r in &reqs {
        if !order.contains(&r.package) {
            order.push(r.package.clone());
        }
    }
    let mut out = Vec::new();
    for name in order {
        let d = catalog.get(&name)?;
        let mine: Vec<&Requirement> = reqs.iter().filter(|r| r.package == name).collect();
        let key = format!("package.metadata.mcpp.toolchain-packages.{name}");
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
                                .help(format!("pin one in [package.metadata.mcpp.toolchain-packages] {name} = \"...\"")));
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
                            None => (d.default.clone(), format!("{CATALOG_FILE} default for {rule}")),
                        }
                    }
                };
                for (by, floor) in &floors {
                    if compare_versions(&v, floor) == Ordering::Less {
                        return Err(refuse(format!("{name} {v} ({why}) is below the floor >={floor} of {by}"))
                            .help(format!("pin a version that meets it: [package.metadata.mcpp.toolchain-packages] {name} = \"{floor}\"")));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolchain_package::LockedPackage;

    fn req(p: &str, r: Option<&str>, by: &str) -> Requirement {
        Requirement { package: p.into(), req: r.map(|r| VersionReq::parse(r).unwrap()), by: by.into() }
    }
    fn pin(v: &str) -> BTreeMap<String, ProjectPin> {
        [("glslang".to_string(), ProjectPin { req: VersionReq::parse(v).unwrap(), at: "Cargo.toml:9".into() })].into()
    }

    #[test]
    fn a_floor_takes_the_default_and_pulls_in_what_the_package_needs() {
        let c = Catalog::builtin().unwrap();
        let s = select(&c, &[req("glslang", Some(">=11.0"), "the spirv rule")], &BTreeMap::new(), Path::new("Cargo.toml")).unwrap();
        assert_eq!(s.iter().map(|s| (s.name.as_str(), s.version.as_str())).collect::<Vec<_>>(), [("glslang", "13.1.1"), ("spirv-tools", "2025.5")]);
        assert!(!s[0].pinned && s[0].why == "toolchain-packages.toml default for the spirv rule (>=11.0)", "{}", s[0].why);
        assert_eq!(s[1].why, "toolchain-packages.toml default for the glslang toolchain package (its programs load spirv-tools's libraries)");
    }

    #[test]
    fn a_pin_below_a_floor_is_refused_naming_both() {
        let c = Catalog::builtin().unwrap();
        let e = select(&c, &[req("glslang", Some(">=11.0"), "the spirv rule")], &pin("10.2"), Path::new("/p/Cargo.toml")).unwrap_err();
        let t = e.to_string();
        assert!(t.contains("Cargo.toml:9 pins glslang 10.2, below the floor >=11.0 of the spirv rule"), "{t}");
        assert!(t.contains("package.metadata.mcpp.toolchain-packages.glslang"), "{t}");
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
        let mut lock = Lockfile { version: 1, packages: Vec::new() };
        lock.set(LockedPackage { name: "glslang".into(), version: "12.0.0".into(), archives: Vec::new() });
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
}
