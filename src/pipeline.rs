//! The device phase, shared by build.rs ([`crate::Build`]) and `cargo mcpp build`:
//! manifest -> accelerator set -> sources -> rules' plans -> action graph -> surface ->
//! cargo directives. Pure orchestration: each step lives in its own module.

use crate::accel::{AccelSet, Backend};
use crate::cargo_output::CargoOutput;
use crate::env::Env;
use crate::error::{Error, ErrorKind, Result};
use crate::graph::{self, Observer, RunOptions, RunReport};
use crate::manifest::Manifest;
use crate::rules::{self, RuleContext};
use crate::sources;
use crate::surface::{self, Generated, SurfaceOptions};
use crate::plan::accel::{accel_origin, docs_rs, resolve_accel, AccelChoice, ACCEL_ENV, NO_ACCEL_ENV};
use crate::plan::toolchain_packages::{self, fetch_command};
use crate::toolchain_package::{self, Catalog, Home, Lockfile};
use crate::tool::ToolChoices;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Everything one device phase needs.
#[derive(Debug, Clone)]
pub struct Config {
    /// The package's `Cargo.toml`.
    pub manifest_path: PathBuf,
    /// The accelerator choice.
    pub accel: AccelChoice,
    /// The package's device cache: `<target>/<profile>/mcpp/<package>`; variants below it.
    pub work_dir: PathBuf,
    /// Where surfaces are generated (build.rs's OUT_DIR); `None` runs the actions only.
    pub out_dir: Option<PathBuf>,
    /// Cargo's facts (target, host, optimisation level, debug info), read once by the caller.
    pub facts: crate::cargo_facts::CargoFacts,
    /// Parallel compilers when there is no jobserver.
    pub jobs: usize,
    /// The environment view.
    pub env: Env,
    /// Explicit tool paths from the builder.
    pub builder_tools: BTreeMap<String, PathBuf>,
    /// Where each builder tool was named (`build.rs:7`), for the recorded decision.
    pub builder_tool_lines: BTreeMap<String, String>,
}

/// What one device phase did.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The resolved accelerator set.
    pub accel: AccelSet,
    /// The action run.
    pub report: RunReport,
    /// Cargo directives (build.rs prints them).
    pub cargo: CargoOutput,
    /// The generated surface, when an out dir was given.
    pub generated: Option<Generated>,
    /// The variant directory used (`work_dir/<accel hash>` or `work_dir/host`).
    pub variant_dir: PathBuf,
    /// Number of payloads in the surface.
    pub payloads: usize,
}

/// A package's device phase, checked before anything runs: the manifest, the accelerator set,
/// the tools table, the module name and the sources (globs expanded, each file given to a rule).
#[derive(Debug)]
pub struct Validated {
    /// The manifest.
    pub manifest: Manifest,
    /// The accelerator set of this build.
    pub accel: AccelSet,
    /// The device sources, classified.
    pub collected: sources::Collected,
    /// The C++ module (and namespace) of the surface.
    pub module_name: String,
}

/// Check a package's device phase without running anything: what `cargo mcpp build` does for
/// every selected package before cargo starts, and the first step of [`run`].
///
/// # Errors
/// Any refusal of the manifest, the accelerator set, the tools table, the module name or the
/// sources.
pub fn validate(manifest_path: &Path, choice: &AccelChoice, env: &Env) -> Result<Validated> {
    let manifest = Manifest::read(manifest_path)?;
    let registry = rules::registry();
    let names: Vec<&str> = registry.iter().map(|r| r.name()).collect();
    // Every independent check runs, and every problem is reported (each with its file:line:col,
    // key and fix); the checks that need an earlier answer run only when it is there.
    let mut problems = manifest.check_keys(&names);
    for rule in &registry {
        problems.extend(rule.check_options(&manifest).err());
    }
    problems.extend(validate_tools_table(&manifest, &registry).err());
    let module_name = manifest.mcpp.module_name.clone().unwrap_or_else(|| format!("{}.shaders", surface::names::module_root(&manifest.package_name)));
    // base-dir's own checks (empty, absolute, `..`, not a directory); whether every payload is
    // under it is known once the rules have planned.
    problems.extend(surface::resolve_base(&manifest, std::iter::empty()).err());
    problems.extend(surface::check_module_name(&module_name).map_err(|e| e.file(manifest.at_col("module-name"))).err());
    let accel = match resolve_accel(choice, &manifest, env) {
        Ok(a) => Some(a),
        Err(e) => {
            problems.push(e);
            None
        }
    };
    let collected = accel.as_ref().map(|a| sources::collect(&manifest, a, &registry, env));
    let collected = match collected {
        Some(Ok(c)) => Some(c),
        Some(Err(e)) => {
            problems.push(e);
            None
        }
        None => None,
    };
    Error::all(problems)?;
    // Both are present here: a missing one was pushed to `problems` above.
    let (Some(accel), Some(collected)) = (accel, collected) else { return Err(Error::new(ErrorKind::Manifest, "the accelerator set or the sources could not be read")) };
    Ok(Validated { manifest, accel, collected, module_name })
}

/// Run the device phase.
///
/// # Errors
/// Any refusal of the manifest, accelerator set, sources or rules, a missing tool, or a
/// failed compiler.
pub fn run(config: &Config, observer: &dyn Observer, jobserver: Option<&jobserver::Client>) -> Result<Outcome> {
    let env = &config.env;
    let Validated { manifest, accel, collected, module_name } = validate(&config.manifest_path, &config.accel, env)?;
    let registry = rules::registry();
    let docs_rs = docs_rs(env);
    let variant = if accel.is_empty() { "host".to_string() } else { crate::fingerprint::sha256_hex(accel.to_string().as_bytes())[..16].to_string() };
    let variant_dir = config.work_dir.join(&variant);
    // One device phase at a time per package variant: two cargo processes (two `cargo mcpp
    // build`, one beside a plain `cargo build`) run this in their build scripts on one device
    // cache; an action deletes its outputs before its compiler runs, so the second waits here
    // (held until the surface is written from the verified outputs) and then finds them fresh.
    let _lock = crate::lock::FileLock::acquire_or_wait(&variant_dir.join("lock"), || {
        eprintln!("Blocking: waiting for file lock on the device cache of {} ({})", manifest.package_name, variant_dir.display());
    })?;
    let mut cargo = CargoOutput::default();
    for w in &collected.warnings {
        cargo.warning(w);
    }
    if accel.is_empty() && !docs_rs && config.accel != AccelChoice::NoAccel && env.get_nonempty(NO_ACCEL_ENV).is_none() && !collected.sources.is_empty() {
        // Name where the empty set came from: an empty --accel / MCPP_ACCEL, or the manifest.
        let origin = accel_origin(&config.accel, env).unwrap_or_else(|| format!("`accel` in {}", manifest.path.display()));
        cargo.warning(&format!(
            "no accelerator: {origin} is empty or absent, so none of the {} device source(s) is compiled (name a set, e.g. \"vulkan1.2\", or build with {} to say it on purpose)",
            collected.sources.len(),
            crate::report::no_accel_way(env)
        ));
    }
    let catalog = Catalog::builtin()?;
    let requirements = toolchain_packages::requirements(&manifest, &accel, &collected, &registry, env, &config.builder_tools)?;
    let lock_path = toolchain_packages::lockfile_path(&manifest);
    let lock = if requirements.is_empty() { Lockfile::default() } else { Lockfile::read(&lock_path)? };
    let selected = toolchain_package::select_locked(&catalog, &requirements, &manifest.toolchain_package_pins(&catalog)?, &manifest.path, Some((&lock, &lock_path)))?;
    let fetch_command = fetch_command(&manifest, &accel);
    let mut availability = BTreeMap::new();
    if !selected.is_empty() {
        let home = Home::from_env(env)?;
        availability = toolchain_package::availability(&catalog, &home, &selected, &lock, &lock_path, &fetch_command);
        // A new fetch rewrites the lockfile or reinstalls (a new marker): rerun the build script.
        cargo.rerun_if_changed(&lock_path);
        for s in &selected {
            cargo.rerun_if_changed(&home.install_dir(&s.name, &s.version).join(toolchain_package::MARKER));
        }
        if availability.values().any(|a| matches!(a, toolchain_package::Availability::Missing { .. })) {
            // Installed later by a fetch, which rewrites the stamp: this build script reruns.
            let stamp = home.installs_stamp();
            if !stamp.exists() {
                let _ = home.touch_installs_stamp();
            }
            cargo.rerun_if_changed(&stamp);
        }
        for s in &selected {
            for r in &s.reports {
                cargo.warning(r);
            }
        }
    }
    let tools = ToolChoices {
        builder: config.builder_tools.clone(),
        builder_lines: config.builder_tool_lines.clone(),
        manifest: manifest.mcpp.tools.iter().map(|(k, v)| (k.clone(), if v.is_absolute() { v.clone() } else { manifest.dir().join(v) })).collect(),
        manifest_lines: manifest.mcpp.tools.keys().filter_map(|k| manifest.line(&format!("tools.{k}")).map(|l| (k.clone(), l))).collect(),
        manifest_path: manifest.path.clone(),
        toolchain_packages: availability,
        fetch_command,
    };
    let island = prepare_island(&manifest, &collected, &registry, &config.work_dir)?;
    crate::island::refuse_marked_outside(&manifest, &collected, island.as_ref().map(|i| i.scanned.as_slice()))?;
    let mut actions: Vec<graph::Action> = Vec::new();
    let mut payloads = Vec::new();
    let mut tool_files = Vec::new();
    let mut path_tools = false;
    let mut link = Vec::new();
    for (index, rule) in registry.iter().enumerate() {
        let mine: Vec<&sources::DeviceSource> = collected.sources.iter().filter(|s| s.rule == index && s.selected).collect();
        let Some(entry) = accel.entry(rule.backend()) else {
            let left_out = collected.sources.iter().filter(|s| s.rule == index).count();
            if left_out > 0 && !accel.is_empty() {
                cargo.warning(&format!(
                    "{left_out} {} source(s) left out: the accelerator set `{accel}` names no {}",
                    rule.name(),
                    rule.backend()
                ));
            }
            continue;
        };
        if mine.is_empty() {
            // Several rules may compile for one backend (GLSL and Slang both target vulkan): the
            // backend has nothing to compile only when none of them has a source, and that is
            // said once, by the first of them, naming them all.
            let same_backend: Vec<usize> = (0..registry.len()).filter(|&i| registry[i].backend() == rule.backend()).collect();
            let backend_has_sources = collected.sources.iter().any(|s| s.selected && same_backend.contains(&s.rule));
            if !backend_has_sources && same_backend.first() == Some(&index) {
                let names: Vec<&str> = same_backend.iter().map(|&i| registry[i].name()).collect();
                cargo.warning(&format!("the accelerator set names {} but no source in `sources` is a {} source; nothing was compiled for it", entry.backend, names.join(" or ")));
            }
            continue;
        }
        let ctx = RuleContext {
            manifest: &manifest,
            accel: entry,
            set: &accel,
            work_dir: &variant_dir,
            tool_cache: &config.work_dir,
            env,
            tools: &tools,
            facts: &config.facts,
            island: island.as_ref().map(|i| &i.boundary),
        };
        let plan = rule.plan(&ctx, &mine).map_err(|mut e| {
            // A rule names the manifest key; when the set came from elsewhere, say where.
            if e.key.as_deref() == Some("package.metadata.mcpp.accel") {
                if let Some(origin) = accel_origin(&config.accel, env) {
                    e.key = None;
                    e.file = None;
                    e = e.detail(format!("(the accelerator set came from {origin})"));
                }
            }
            e
        })?;
        for w in &plan.warnings {
            cargo.warning(w);
        }
        tool_files.extend(plan.tools.iter().map(|t| t.path.clone()));
        path_tools |= plan.tools.iter().any(|t| t.source == crate::tool::ToolSource::Path);
        append_actions(&mut actions, plan.actions);
        payloads.extend(plan.payloads.into_iter().map(|p| (rule.name(), p)));
        link.extend(plan.link);
    }
    if let Some((cxx_actions, cxx_link, cxx_tools)) = plan_cxx(&manifest, island.as_ref(), config, &variant_dir)? {
        append_actions(&mut actions, cxx_actions);
        link.extend(cxx_link);
        tool_files.extend(cxx_tools);
    }
    let base = surface::resolve_base(&manifest, payloads.iter().map(|(_, p)| p.source.as_str()))?;
    let items = surface::name_payloads(&payloads, base.dirs()).map_err(|e| e.file(&manifest.path))?;
    let options = RunOptions { state_dir: &variant_dir.join("fingerprints"), jobs: config.jobs, jobserver };
    // docs.rs documents the crate: nothing is compiled, and nothing is linked below.
    let report = if docs_rs { RunReport::default() } else { graph::run(&actions, &options, observer)? };
    // What the compilers that ran printed on success (warnings), as the cc crate shows them.
    for w in &report.warnings {
        cargo.warning(w);
    }
    let generated = match &config.out_dir {
        Some(out_dir) => Some(surface::generate(
            &items,
            &SurfaceOptions {
                package_name: manifest.package_name.clone(),
                module_name,
                modules: manifest.mcpp.modules.unwrap_or(true),
                cpp_dir: out_dir.join("mcpp"),
                rust_file: out_dir.join("mcpp_shaders.rs"),
                payload_dir: out_dir.join("mcpp").join("payloads"),
                verified: report.outputs.clone(),
            },
        )?),
        None => None,
    };
    if generated.is_some() {
        // Recorded by the run that generates the surface (build.rs), so `cargo mcpp build`'s own
        // device run leaves the warning to the build script it then runs.
        if let Some(w) = surface::note_base(&variant_dir, &base, &items)? {
            cargo.warning(&w);
        }
    }
    if let (Some(out_dir), Some(island)) = (&config.out_dir, &island) {
        publish_island(island, out_dir)?;
    }
    // Files under the device cache (objects, BMIs, the generated boundary) derive from watched
    // inputs; watching them too would only give cargo more mtimes to compare.
    let mut read = report.clone();
    read.read.retain(|p| !p.starts_with(&config.work_dir));
    let include_dirs: Vec<PathBuf> = actions.iter().flat_map(|a| a.include_dirs.iter().cloned()).filter(|d| !d.starts_with(&config.work_dir)).collect();
    let watched: Vec<PathBuf> = tool_files.into_iter().chain(include_dirs).collect();
    directives(&mut cargo, &manifest, &collected, &read, &watched, &accel, env);
    if path_tools {
        // A tool found on PATH (already warned) depends on PATH.
        cargo.rerun_if_env_changed("PATH");
    }
    if let Some(island) = &island {
        for f in island.scanned.iter().chain(&island.watch_dirs) {
            cargo.rerun_if_changed(f);
        }
    }
    for l in link.iter().filter(|_| !docs_rs) {
        match l {
            rules::LinkDirective::Search(dir) => cargo.link_search(dir),
            rules::LinkDirective::Lib(spec) => cargo.link_lib(spec),
            rules::LinkDirective::Arg(arg) => cargo.link_arg(arg),
        }
    }
    Ok(Outcome { accel, report, cargo, generated, variant_dir, payloads: items.len() })
}

fn directives(
    cargo: &mut CargoOutput,
    manifest: &Manifest,
    collected: &sources::Collected,
    report: &RunReport,
    watched: &[PathBuf],
    accel: &AccelSet,
    env: &Env,
) {
    cargo.rerun_if_changed(&manifest.path);
    for dir in &collected.watch_dirs {
        cargo.rerun_if_changed(dir);
    }
    for s in &collected.sources {
        cargo.rerun_if_changed(&s.path);
    }
    for p in &report.read {
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
    let values: Vec<String> = Backend::ALL.iter().map(|b| format!("\"{}\"", b.name())).chain(std::iter::once("\"none\"".to_string())).collect();
    cargo.rustc_check_cfg(&format!("cfg(mcpp_accel, values({}))", values.join(", ")));
    if accel.is_empty() {
        cargo.rustc_cfg("mcpp_accel=\"none\"");
    }
    for e in &accel.entries {
        cargo.rustc_cfg(&format!("mcpp_accel=\"{}\"", e.backend));
    }
    cargo.rustc_env("MCPP_BUILD_ACCEL", &accel.to_string());
}

/// Refuse keys of `[package.metadata.mcpp.tools]` that name no tool of any rule.
fn validate_tools_table(manifest: &Manifest, registry: &[Box<dyn rules::Rule>]) -> Result<()> {
    let known: Vec<&str> = registry.iter().flat_map(|r| r.tools().iter().map(|t| t.name)).collect();
    for name in manifest.mcpp.tools.keys() {
        if !known.contains(&name.as_str()) {
            return Err(Error::new(ErrorKind::Manifest, format!("unknown tool `{name}` in [package.metadata.mcpp.tools]"))
                .file(manifest.at_col(&format!("tools.{name}")))
                .key(format!("package.metadata.mcpp.tools.{name}"))
                .help(format!("the tools this cargo-mcpp runs are: {}", known.join(", "))));
        }
    }
    Ok(())
}

/// The device cache of a package for a build script: `<profile dir>/mcpp/<package>`, where the
/// profile dir is the parent of the `build` directory above `out_dir`
/// (`target/debug/build/<pkg>-<hash>/out`). `cargo mcpp build` computes the same path from
/// cargo metadata, so its work is found fresh by the build script.
pub fn work_dir_from_out_dir(out_dir: &Path, package: &str) -> PathBuf {
    let profile_dir = out_dir.ancestors().find(|a| a.file_name().is_some_and(|n| n == "build")).and_then(Path::parent);
    match profile_dir {
        Some(p) => p.join("mcpp").join(package),
        None => out_dir.join("mcpp-work"),
    }
}

/// Append a rule's actions, shifting their dependency indices past the actions already planned.
fn append_actions(all: &mut Vec<graph::Action>, mut more: Vec<graph::Action>) {
    let base = all.len();
    for a in &mut more {
        for d in &mut a.deps {
            *d += base;
        }
    }
    all.extend(more);
}

/// Files (absolute, package-relative name) and directories to watch, from [`expand_globs`].
pub type Expanded = (Vec<(PathBuf, String)>, Vec<PathBuf>);

/// Expand package-relative globs (`key` names the manifest list for messages), sorted, without
/// duplicates; each file with its package-relative name.
///
/// # Errors
/// [`ErrorKind::Manifest`] for a glob that is invalid, leaves the package, or matches nothing.
pub fn expand_globs(manifest: &Manifest, key: &str, globs: &[String]) -> Result<Expanded> {
    let root = manifest.dir();
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    let mut watch = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, pattern) in globs.iter().enumerate() {
        let k = format!("{key}[{i}]");
        let subject = format!("`{}`", crate::text::echo(pattern));
        let matched = crate::walk::expand(root, pattern, crate::walk::Asker { manifest: &manifest.path, key: &k, subject: &subject })?;
        if matched.is_empty() {
            return Err(Error::new(ErrorKind::Manifest, format!("{subject} matches no file"))
                .file(&manifest.path)
                .key(k)
                .help(format!("check the pattern against the files under {}; globs are relative to the package root", root.display())));
        }
        for m in matched {
            // One file once (by its resolved path), in a hash set: linear.
            if seen.insert(m.real) {
                files.push((m.path, m.rel));
            }
        }
        let fixed: Vec<&str> = pattern.split('/').take_while(|c| !c.contains(['*', '?', '[', '{'])).collect();
        if fixed.len() < pattern.split('/').count() && !fixed.is_empty() {
            let dir = root.join(fixed.join("/"));
            if dir.is_dir() && !watch.contains(&dir) {
                watch.push(dir);
            }
        }
    }
    Ok((files, watch))
}

/// The island of a package, scanned and emitted.
#[derive(Debug, Clone)]
pub struct IslandState {
    /// What the device rules need (header, device half).
    pub boundary: crate::island::Boundary,
    /// The entry points.
    pub entries: Vec<crate::island::Entry>,
    /// The emitted header and module (in the device cache, `<work_dir>/island/`).
    pub emitted: crate::island::emit::Emitted,
    /// Every scanned file.
    pub scanned: Vec<PathBuf>,
    /// Directories whose globs may gain files.
    pub watch_dirs: Vec<PathBuf>,
    /// The host fallback files to compile in this build (empty when the device half compiles).
    pub fallback: Vec<(PathBuf, String)>,
}

/// Scan and emit the island declared in `[package.metadata.mcpp.island]`, if any. The header
/// and module are written into the device cache (`work_dir/island`, shared by `cargo mcpp
/// build` and build.rs, so both plan one argv) and mirrored into OUT_DIR by [`publish_island`].
///
/// # Errors
/// As [`crate::island::scan`] and [`crate::island::emit::emit`]; a glob matching nothing.
pub fn prepare_island(manifest: &Manifest, collected: &sources::Collected, registry: &[Box<dyn rules::Rule>], work_dir: &Path) -> Result<Option<IslandState>> {
    let Some(opts) = &manifest.mcpp.island else { return Ok(None) };
    let key = "package.metadata.mcpp.island";
    if opts.sources.is_empty() {
        return Err(Error::new(ErrorKind::Manifest, "the island lists no sources to scan")
            .file(&manifest.path)
            .key(format!("{key}.sources"))
            .help("list the device half and its host fallback, e.g. sources = [\"kernels/saxpy.cu\", \"host/saxpy.cpp\"]"));
    }
    let (scanned, mut watch_dirs) = expand_globs(manifest, &format!("{key}.sources"), &opts.sources)?;
    let (fallback, w2) = expand_globs(manifest, &format!("{key}.fallback"), &opts.fallback)?;
    watch_dirs.extend(w2);
    let marker = opts.marker.clone().unwrap_or_else(|| crate::island::DEFAULT_MARKER.to_string());
    if marker.is_empty() || !marker.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || marker.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(Error::new(ErrorKind::Manifest, format!("the island marker `{marker}` is not an identifier"))
            .file(&manifest.path)
            .key(format!("{key}.marker"))
            .help("the marker is a macro name, e.g. MCPP_EXPORT_C"));
    }
    for (i, inc) in opts.header_includes.iter().enumerate() {
        if let Err(why) = crate::island::emit::check_header_include(inc) {
            return Err(Error::new(ErrorKind::Manifest, format!("the header-includes entry `{}` cannot be written into an #include line: {why}", crate::text::echo(inc)))
                .file(&manifest.path)
                .key(format!("{key}.header-includes[{i}]"))
                .help("write `<name.h>`, `\"name.h\"` or a bare `name.h` (included as `<name.h>`)"));
        }
    }
    let files: Vec<PathBuf> = scanned.iter().map(|(p, _)| p.clone()).collect();
    let entries = crate::island::scan(&files, &marker).map_err(|e| if e.key.is_none() { e.key(format!("{key}.sources")) } else { e })?;
    if opts.header_includes.is_empty() {
        // The generated header includes only `header-includes`; a standard typedef in a
        // signature would fail later, in the generated module or in bindgen, less clearly.
        const STD_TYPES: &[&str] = &["int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "size_t", "ptrdiff_t", "intptr_t", "uintptr_t"];
        for e in &entries {
            let used = e.decl.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).find(|w| STD_TYPES.contains(w));
            if let Some(t) = used {
                return Err(Error::new(ErrorKind::Manifest, format!("the entry point `{}` ({}:{}) uses `{t}`, and the generated header includes no header that declares it", e.name, e.origin.display(), e.line))
                    .file(&manifest.path)
                    .key(format!("{key}.header-includes"))
                    .detail(format!("  {}", e.decl))
                    .help("name the headers the signatures need: header-includes = [\"<stdint.h>\"] (or <stddef.h> for size_t)"));
            }
        }
    }
    let module_name = opts.module_name.clone().unwrap_or_else(|| format!("{}.kernels", surface::names::module_root(&manifest.package_name)));
    let produced_by = format!("the package `{}`", manifest.package_name);
    let emitted = crate::island::emit::emit(&entries, &module_name, &marker, &opts.header_includes, &work_dir.join("island"), &produced_by, &format!("{key}.module-name"))
        .map_err(|e| e.file(&manifest.path))?;
    let device_sources: Vec<PathBuf> = files.iter().filter(|f| sources::extension(f).is_some_and(|ext| registry.iter().any(|r| r.claims(&ext)))).cloned().collect();
    let device_compiled = collected.sources.iter().any(|s| s.selected && device_sources.contains(&s.path));
    check_island_halves(manifest, &entries, &files, &fallback, &device_sources, device_compiled)?;
    let fallback = if device_compiled { Vec::new() } else { fallback };
    Ok(Some(IslandState { boundary: crate::island::Boundary { header: emitted.header.clone(), device_sources }, entries, emitted, scanned: files, watch_dirs, fallback }))
}

/// Every entry point must be defined by both halves: by a device source (when the island has
/// one) and by the fallback (when it has one), and a build that compiles no device half needs a
/// fallback at all; otherwise the bindings name a symbol nothing defines and the link fails.
fn check_island_halves(
    manifest: &Manifest,
    entries: &[crate::island::Entry],
    scanned: &[PathBuf],
    fallback: &[(PathBuf, String)],
    device: &[PathBuf],
    device_compiled: bool,
) -> Result<()> {
    let key = "package.metadata.mcpp.island";
    let rel = |p: &Path| p.strip_prefix(manifest.dir()).unwrap_or(p).display().to_string();
    for (path, r) in fallback {
        if !scanned.contains(path) {
            return Err(Error::new(ErrorKind::Manifest, format!("the island fallback {r} is not among the island's sources"))
                .file(&manifest.path)
                .key(format!("{key}.fallback"))
                .detail("It would be compiled but never scanned, so its entry points could differ from the boundary unseen.")
                .help(format!("add it to {key}.sources too")));
        }
    }
    let host: Vec<&PathBuf> = fallback.iter().map(|(p, _)| p).collect();
    for e in entries {
        let in_device = e.files.iter().any(|f| device.contains(f));
        let in_host = e.files.iter().any(|f| host.contains(&f));
        let lacking = if !device.is_empty() && !in_device {
            Some(("the device half", device.iter().map(|p| rel(p)).collect::<Vec<_>>(), "a build with the accelerator"))
        } else if !host.is_empty() && !in_host {
            Some(("the host fallback", host.iter().map(|p| rel(p)).collect::<Vec<_>>(), "a build without it (`--no-accel`)"))
        } else {
            None
        };
        if let Some((half, files, build)) = lacking {
            return Err(Error::new(ErrorKind::Sources, format!("the entry point `{}` is not defined by {half}", e.name))
                .file(&e.origin)
                .detail(format!("marked at {}:{} (defined in: {})", rel(&e.origin), e.line, e.files.iter().map(|p| rel(p)).collect::<Vec<_>>().join(", ")))
                .detail(format!("{half}: {}", files.join(", ")))
                .detail(format!("The boundary (header, bindings, module) declares it in every build, so {build} would fail to link."))
                .help(format!("define `{}` with the same signature in {half}, or unmark it", e.decl)));
        }
    }
    if host.is_empty() && !device_compiled {
        if let Some(e) = entries.first() {
            return Err(Error::new(ErrorKind::Sources, format!("this build compiles no device half of the island, and the island has no fallback, so nothing defines `{}`", e.name))
                .file(&manifest.path)
                .key(format!("{key}.fallback"))
                .help(format!("add a host fallback ({key}.fallback), or build with an accelerator set that names the island's backend")));
        }
    }
    Ok(())
}

/// Mirror the island's header and module into `OUT_DIR/mcpp/` and write its Rust bindings to
/// `OUT_DIR/mcpp_kernels.rs` (for `include!`).
///
/// # Errors
/// As [`crate::island::bindings::generate`]; [`ErrorKind::Io`] for writes.
pub fn publish_island(island: &IslandState, out_dir: &Path) -> Result<()> {
    for f in [&island.emitted.header, &island.emitted.interface] {
        let bytes = std::fs::read(f).map_err(|e| Error::io("cannot read", f, e))?;
        let name = f.file_name().unwrap_or_default();
        crate::fingerprint::write_if_changed(&out_dir.join("mcpp").join(name), &bytes)?;
    }
    let bindings = island.emitted.dir.join(format!("{}.rs", island.emitted.module_name));
    crate::island::bindings::generate(&island.emitted.header, &island.entries, &bindings)?;
    let bytes = std::fs::read(&bindings).map_err(|e| Error::io("cannot read", &bindings, e))?;
    crate::fingerprint::write_if_changed(&out_dir.join("mcpp_kernels.rs"), &bytes)?;
    Ok(())
}

/// Plan the host C++ lane: `cxx-sources`, the island's fallback when its device half is not
/// compiled, and the island's generated module when a unit imports it. `None` when there is
/// nothing to compile. Returns the actions, the link directives and the paths to watch (the
/// `cxx-sources` glob directories and the tool files).
///
/// # Errors
/// A glob matching nothing, a missing include directory, a module problem ([`crate::cxx::plan`]),
/// no host compiler.
#[allow(clippy::type_complexity)]
pub fn plan_cxx(manifest: &Manifest, island: Option<&IslandState>, config: &Config, variant_dir: &Path) -> Result<Option<(Vec<graph::Action>, Vec<rules::LinkDirective>, Vec<PathBuf>)>> {
    let key = "package.metadata.mcpp.cxx-sources";
    let (listed, watch_dirs) = expand_globs(manifest, key, &manifest.mcpp.cxx_sources)?;
    // The island's own files (its fallback, or an island source listed in cxx-sources) read the
    // generated header as a forced include, as its device half does: no `#include` needed.
    let forced = |path: &Path| island.filter(|i| i.scanned.iter().any(|s| s == path)).map(|i| i.emitted.header.clone());
    let mut units: Vec<crate::cxx::Unit> = listed.into_iter().map(|(path, rel)| crate::cxx::Unit { force_include: forced(&path), path, rel }).collect();
    if let Some(i) = island {
        for (path, rel) in &i.fallback {
            if !units.iter().any(|u| u.path == *path) {
                units.push(crate::cxx::Unit { path: path.clone(), rel: rel.clone(), force_include: forced(path) });
            }
        }
    }
    if units.is_empty() {
        return Ok(None);
    }
    for u in &units {
        let ext = sources::extension(&u.path).unwrap_or_default();
        if !["cpp", "cc", "cxx", "c++", "cppm", "ixx", "mpp"].contains(&ext.as_str()) {
            return Err(Error::new(ErrorKind::Manifest, format!("`{}` is not a C++ source", u.rel))
                .file(&u.path)
                .key(key)
                .help("the host C++ lane compiles .cpp .cc .cxx .c++ units and .cppm .ixx .mpp module interfaces"));
        }
    }
    if let Some(i) = island {
        let imported = units.iter().any(|u| std::fs::read_to_string(&u.path).is_ok_and(|t| crate::cxx::module_lines(&t).requires.contains(&i.emitted.module_name)));
        if imported {
            units.push(crate::cxx::Unit { path: i.emitted.interface.clone(), rel: format!("(generated) {}.cppm", i.emitted.module_name), force_include: None });
        }
    }
    let opts = manifest.mcpp.cxx.clone().unwrap_or_default();
    let mut includes = Vec::new();
    if let Some(i) = island {
        includes.push(i.emitted.dir.clone());
    }
    includes.extend(crate::host::resolve_includes(manifest, "package.metadata.mcpp.cxx", &opts.includes)?);
    let host = crate::host::toolchain(&config.env, &config.facts, &config.work_dir)?;
    // The host compiler is the `cc` crate's choice (CXX or its default), recorded as such.
    let tool_at = |spec: &crate::tool::ToolSpec, path: &Path, what: &str| {
        let source = crate::tool::ToolSource::Derived(format!("the cc crate's {what}"));
        crate::tool::resolve_at(spec, path, source, "the cc crate", &config.env, &config.work_dir)
    };
    const CXX: crate::tool::ToolSpec = crate::tool::ToolSpec { name: "c++", programs: &["c++"], env_vars: &["CXX"], version_args: &["--version"], install_hint: "apt install g++", toolchain_package: None, toolkit: None };
    let compiler = crate::host::lane_tool(&host, tool_at(&CXX, &host.cxx, "C++ compiler (CXX or its default)")?, &config.env, &config.work_dir)?;
    let lib_name = format!("mcpp_cxx_{}", surface::names::identifier(&manifest.package_name, "package"));
    let std = opts.std.clone().unwrap_or_else(|| "c++20".to_string());
    let module_unit = units.iter().find(|u| std::fs::read_to_string(&u.path).is_ok_and(|t| {
        let m = crate::cxx::module_lines(&t);
        m.provides.is_some() || !m.requires.is_empty()
    }));
    check_cxx_std(&std, module_unit.map(|u| u.rel.as_str()), &manifest.path)?;
    let (actions, link) = crate::cxx::plan(&crate::cxx::CxxPlanInput {
        host: &host,
        compiler: &compiler,
        units: &units,
        std: &std,
        includes: &includes,
        defines: &opts.defines,
        flags: &opts.flags,
        dir: &variant_dir.join("cxx"),
        cwd: manifest.dir(),
        lib_name: &lib_name,
    })?;
    // The glob directories are watched like the device sources', so a new C++ file there
    // reruns the build script; the tools are watched too.
    Ok(Some((actions, link, watch_dirs.into_iter().chain([compiler.path]).collect())))
}

/// `[package.metadata.mcpp.cxx] std`: `c++NN` or `gnu++NN` (NN one of 11 14 17 20 23 26, or
/// the draft names 2a 2b 2c), and C++20 or later when a unit (`module_unit`, its path relative
/// to the package) declares or imports a module.
///
/// # Errors
/// [`ErrorKind::Manifest`] naming the key and the accepted values.
pub fn check_cxx_std(std: &str, module_unit: Option<&str>, manifest_path: &Path) -> Result<()> {
    let key = "package.metadata.mcpp.cxx.std";
    let year = std.strip_prefix("c++").or_else(|| std.strip_prefix("gnu++"));
    let Some(year) = year.filter(|y| ["11", "14", "17", "20", "23", "26", "2a", "2b", "2c"].contains(y)) else {
        return Err(Error::new(ErrorKind::Manifest, format!("`{std}` is not a C++ standard this lane accepts (c++11 through c++26, or gnu++)"))
            .file(manifest_path)
            .key(key)
            .help("write c++20 (the default), c++23, c++26, c++17, ... (or 2a/2b/2c), or their gnu++ forms"));
    };
    if let Some(unit) = module_unit.filter(|_| ["11", "14", "17"].contains(&year)) {
        return Err(Error::new(ErrorKind::Manifest, format!("`{std}` has no modules, and `{unit}` declares or imports one"))
            .file(manifest_path)
            .key(key)
            .help("use c++20 or later (the default is c++20), or drop the module declarations"));
    }
    Ok(())
}

#[cfg(test)]
mod cxx_std_tests {
    use super::check_cxx_std;
    use std::path::Path;

    #[test]
    fn the_cxx_standard_is_checked_against_the_known_ones_and_modules() {
        let m = Path::new("Cargo.toml");
        for ok in ["c++20", "gnu++23", "c++2c", "c++17"] {
            assert!(check_cxx_std(ok, None, m).is_ok(), "{ok}");
        }
        let e = check_cxx_std("c++20x", None, m).unwrap_err().to_string();
        assert!(e.contains("`c++20x` is not a C++ standard") && e.contains("package.metadata.mcpp.cxx.std"), "{e}");
        assert!(check_cxx_std("20", None, m).is_err());
        let e = check_cxx_std("c++17", Some("cpp/seam.cppm"), m).unwrap_err().to_string();
        assert!(e.contains("`c++17` has no modules, and `cpp/seam.cppm` declares or imports one"), "{e}");
    }
}
