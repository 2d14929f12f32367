//! What the build script tells cargo after a device phase: a rerun line for every real input
//! (the manifest, the source directories and files, every file an action read, the tools, the
//! include directories, the island's files; never a derived file of the device cache), the
//! environment variables read, the `mcpp_accel` cfgs and `MCPP_BUILD_ACCEL`, and the lanes'
//! link directives ([`crate::rules::link::print`]).

use super::island::IslandState;
use super::lanes::Planned;
use crate::config::accel::{AccelSet, Backend};
use crate::output::cargo_output::CargoOutput;
use crate::config::env::Env;
use crate::engine::graph::RunReport;
use crate::engine::layout::DeviceCache;
use crate::config::manifest::Manifest;
use crate::plan::accel::{ACCEL_ENV, NO_ACCEL_ENV};
use crate::sources::Collected;
use std::path::PathBuf;

/// What the directives are computed from.
pub struct DirectiveInputs<'a> {
    /// The manifest.
    pub manifest: &'a Manifest,
    /// The classified sources and the directories their globs watch.
    pub collected: &'a Collected,
    /// The accelerator set of the build.
    pub accel: &'a AccelSet,
    /// The device cache, whose files are derived and not watched.
    pub cache: &'a DeviceCache,
    /// What the action graph read.
    pub report: &'a RunReport,
    /// What the lanes planned (actions, tools, link directives).
    pub planned: &'a Planned,
    /// The island, when declared.
    pub island: Option<&'a IslandState>,
    /// The environment view (its reads are declared).
    pub env: &'a Env,
    /// Whether to link (not under docs.rs, where nothing is compiled).
    pub link: bool,
    /// The backends of the build's rules that no built-in rule serves (a registered rule's):
    /// declared to `check-cfg` whether or not the set names them.
    pub rule_backends: Vec<crate::config::accel::Backend>,
}

/// Add every directive of the build to `cargo`, in a fixed order: rerun lines and cfgs
/// ([`directives`]), `PATH` when a tool came from it, the island's files, then the link
/// directives.
pub fn emit(cargo: &mut CargoOutput, i: &DirectiveInputs) {
    // Files under the device cache (objects, BMIs, the generated boundary) derive from watched
    // inputs; watching them too would only give cargo more mtimes to compare.
    let read: Vec<PathBuf> = i.report.read.iter().filter(|p| !i.cache.contains(p)).cloned().collect();
    let include_dirs = i.planned.actions.iter().flat_map(|a| a.include_dirs.iter().cloned()).filter(|d| !i.cache.contains(d));
    let watched: Vec<PathBuf> = i.planned.tool_files.iter().cloned().chain(include_dirs).collect();
    directives(cargo, i, &read, &watched);
    if i.planned.path_tools {
        // A tool found on PATH (already warned) depends on PATH.
        cargo.rerun_if_env_changed("PATH");
    }
    if let Some(island) = i.island {
        for f in island.scanned.iter().chain(&island.watch_dirs) {
            cargo.rerun_if_changed(f);
        }
    }
    if i.link {
        crate::rules::link::print(cargo, &i.planned.link);
    }
}

/// The rerun lines (the manifest, the glob directories, the sources, the files read, `watched`,
/// the accelerator variables and every variable read except those cargo sets itself), the
/// `mcpp_accel` check-cfg and cfgs, and `MCPP_BUILD_ACCEL`.
pub fn directives(cargo: &mut CargoOutput, i: &DirectiveInputs, read: &[PathBuf], watched: &[PathBuf]) {
    let (manifest, collected, accel, rule_backends, env) = (i.manifest, i.collected, i.accel, &i.rule_backends, i.env);
    cargo.rerun_if_changed(&manifest.path);
    for dir in &collected.watch_dirs {
        cargo.rerun_if_changed(dir);
    }
    for s in &collected.sources {
        cargo.rerun_if_changed(&s.path);
    }
    for p in read {
        cargo.rerun_if_changed(p);
    }
    for w in watched {
        cargo.rerun_if_changed(w);
    }
    for var in [ACCEL_ENV, NO_ACCEL_ENV] {
        cargo.rerun_if_env_changed(var);
    }
    // Variables cargo itself sets for a build script are not declared: they are already part
    // of cargo's own fingerprint, and PATH is left out as cc-rs does (spurious reruns).
    const CARGO_SET: &[&str] = &["PATH", "OUT_DIR", "PROFILE", "NUM_JOBS", "TARGET", "HOST", "OPT_LEVEL", "DEBUG"];
    for var in env.reads() {
        if !CARGO_SET.contains(&var.as_str()) && !var.starts_with("CARGO_") {
            cargo.rerun_if_env_changed(&var);
        }
    }
    // A registered rule's backend too, whether or not this build's set names it.
    let mut values: Vec<String> = Backend::ALL.into_iter().map(|b| format!("\"{}\"", b.name())).collect();
    for b in rule_backends.iter().filter(|b| !b.is_builtin()) {
        let v = format!("\"{}\"", b.name());
        if !values.contains(&v) {
            values.push(v);
        }
    }
    values.push("\"none\"".to_string());
    cargo.rustc_check_cfg(&format!("cfg(mcpp_accel, values({}))", values.join(", ")));
    if accel.is_empty() {
        cargo.rustc_cfg("mcpp_accel=\"none\"");
    }
    for e in &accel.entries {
        cargo.rustc_cfg(&format!("mcpp_accel=\"{}\"", e.backend));
    }
    cargo.rustc_env("MCPP_BUILD_ACCEL", &accel.to_string());
}
