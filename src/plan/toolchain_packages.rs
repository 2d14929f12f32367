//! The toolchain packages one build needs (each rule brings its own environment): the rules' requirements after the two gates, the command that installs them,
//! and where their lockfile is. One computation for the device phase (`pipeline`) and `cargo
//! mcpp fetch` (`crate::toolchain_package::fetch`), which also installs those `cargo mcpp pack` takes
//! ([`pack_requirements`]).

use crate::config::accel::AccelSet;
use crate::config::env::Env;
use crate::error::{Error, ErrorKind, Result};
use crate::config::manifest::Manifest;
use crate::rules;
use crate::sources;
use crate::toolchain_package::{Requirement, VersionReq, LOCKFILE};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The toolchain package requirements of a build, after the two gates: a
/// rule's toolchain packages count only when the package has sources of that rule selected for
/// this build AND the accelerator set names the rule's backend. A toolchain package whose tool
/// the project names explicitly (the builder, manifest `tools`, the rule's variables,
/// `MCPP_TOOL_<NAME>`, its toolkit's root variables such as `CUDA_PATH`) is not required: a
/// choice never causes the package to be fetched. `options` are the rules' options
/// ([`rules::Rule::read_options`]), in registry order: they may choose the compiler. The managed
/// host toolchain (`[package.metadata.mcpp.host-toolchain] managed`) is required whatever the
/// sources: the manifest declares it ([`MANAGED_BY`]).
///
/// # Errors
/// [`ErrorKind::Manifest`] for a rule's malformed version rule (a defect of the rule).
pub fn requirements(
    manifest: &Manifest,
    accel: &AccelSet,
    collected: &sources::Collected,
    registry: &[Box<dyn rules::Rule>],
    options: &[rules::options::RuleOptionsBox],
    env: &Env,
    builder_tools: &BTreeMap<String, PathBuf>,
) -> Result<Vec<Requirement>> {
    let mut out = Vec::new();
    for (index, rule) in registry.iter().enumerate() {
        if accel.entry(rule.backend()).is_none() || !collected.sources.iter().any(|s| s.rule == index && s.selected) {
            continue;
        }
        for req in rule.toolchain_packages(&options[index])? {
            let t = &req.tool;
            let chosen = builder_tools.contains_key(t.name)
                || manifest.mcpp.tools.contains_key(t.name)
                || t.env_vars.iter().chain(req.named_by_env).copied().chain(t.toolkit.map_or(&[][..], |k| k.root_vars).iter().map(|e| crate::tool::split_root_var(e).0)).any(|v| env.get_nonempty(v).is_some())
                || env.get_nonempty(&crate::tool::override_var(t.name)).is_some();
            if chosen {
                continue;
            }
            let version = VersionReq::parse(req.version)
                .map_err(|m| Error::new(ErrorKind::Manifest, format!("the {} rule declares toolchain package {} with a bad version rule: {m}", rule.name(), req.package)).help("this is a defect of cargo-mcpp; report it"))?;
            out.push(Requirement { package: req.package.to_string(), req: Some(version), by: format!("the {} rule", rule.name()) });
        }
    }
    if let Some(name) = manifest.mcpp.host_toolchain.as_ref().and_then(|h| h.managed.as_ref()) {
        out.push(Requirement { package: name.clone(), req: None, by: MANAGED_BY.to_string() });
    }
    Ok(out)
}

/// Who requires the managed host toolchain's package, in messages and `cargo mcpp why tool`.
pub const MANAGED_BY: &str = "[package.metadata.mcpp.host-toolchain] managed";

/// The toolchain packages `cargo mcpp pack` takes, which `cargo mcpp fetch` installs beside the
/// build's (`pack` itself never downloads): the AppImage runtime
/// ([`crate::toolchain_package::APPIMAGE_RUNTIME`]) for a package with
/// `[package.metadata.mcpp.pack]`, on the one platform it is described for (`linux-x86_64`).
/// Not a requirement of the device phase: a build never refuses for want of it.
pub fn pack_requirements(manifest: &Manifest) -> Vec<Requirement> {
    if manifest.mcpp.pack.is_none() || crate::toolchain_package::host_platform() != "linux-x86_64" {
        return Vec::new();
    }
    vec![Requirement { package: crate::toolchain_package::APPIMAGE_RUNTIME.to_string(), req: None, by: "[package.metadata.mcpp.pack]".into() }]
}

/// The exact command that installs the toolchain packages of this build:
/// `cargo mcpp fetch --manifest-path <path>`, with `--accel "<set>"` when the set is not the
/// manifest's.
pub fn fetch_command(manifest: &Manifest, accel: &AccelSet) -> String {
    let mut c = format!("cargo mcpp fetch --manifest-path {}", manifest.path.display());
    let from_manifest = manifest.mcpp.accel.as_deref().and_then(|a| AccelSet::parse(a).ok());
    if from_manifest.as_ref() != Some(accel) {
        c.push_str(&format!(" --accel \"{accel}\""));
    }
    c
}

/// `mcpp.lock` of the package: beside its manifest.
pub fn lockfile_path(manifest: &Manifest) -> PathBuf {
    manifest.dir().join(LOCKFILE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn the_fetch_command_names_the_set_only_when_it_is_not_the_manifests() {
        let m = Manifest::parse(Path::new("/p/Cargo.toml"), "[package]\nname = \"p\"\n[package.metadata.mcpp]\naccel = \"vulkan1.2\"\n").unwrap();
        assert_eq!(fetch_command(&m, &AccelSet::parse("vulkan1.2").unwrap()), "cargo mcpp fetch --manifest-path /p/Cargo.toml");
        assert_eq!(fetch_command(&m, &AccelSet::parse("cuda13").unwrap()), "cargo mcpp fetch --manifest-path /p/Cargo.toml --accel \"cuda13\"");
        assert_eq!(lockfile_path(&m), Path::new("/p/mcpp.lock"));
    }

    #[test]
    fn a_package_that_packs_needs_the_appimage_runtime_and_no_other_does() {
        let m = Manifest::parse(Path::new("/p/Cargo.toml"), "[package]\nname = \"p\"\n[package.metadata.mcpp.pack]\napp-name = \"P\"\n").unwrap();
        let reqs = pack_requirements(&m);
        if crate::toolchain_package::host_platform() == "linux-x86_64" {
            assert_eq!(reqs.iter().map(|r| (r.package.as_str(), r.req.is_none(), r.by.as_str())).collect::<Vec<_>>(), [("appimage-runtime", true, "[package.metadata.mcpp.pack]")]);
        } else {
            assert!(reqs.is_empty());
        }
        let m = Manifest::parse(Path::new("/p/Cargo.toml"), "[package]\nname = \"p\"\n[package.metadata.mcpp]\naccel = \"vulkan\"\n").unwrap();
        assert!(pack_requirements(&m).is_empty());
    }

    #[test]
    fn the_managed_host_toolchain_is_required_without_any_source() {
        let env = Env::empty();
        let registry = rules::registry();
        let options: Vec<_> = Vec::new();
        let collected = sources::Collected::default();
        for (table, want) in [("managed = \"zig\"\n", vec![("zig".to_string(), MANAGED_BY.to_string())]), ("cxx = \"g++\"\n", vec![])] {
            let m = Manifest::parse(Path::new("/p/Cargo.toml"), &format!("[package]\nname = \"p\"\n[package.metadata.mcpp.host-toolchain]\n{table}")).unwrap();
            let reqs = requirements(&m, &AccelSet::default(), &collected, &registry, &options, &env, &BTreeMap::new()).unwrap();
            assert_eq!(reqs.iter().map(|r| (r.package.clone(), r.by.clone())).collect::<Vec<_>>(), want);
            assert!(reqs.iter().all(|r| r.req.is_none()));
        }
    }
}
