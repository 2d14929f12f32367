//! The device phase, shared by build.rs ([`crate::Build`]) and `cargo mcpp build`:
//! manifest -> accelerator set -> sources -> island -> rules' and host C++ plans -> action
//! graph -> surface -> cargo directives. Orchestration: [`run`] is a list of named steps, each
//! living in its own module ([`crate::plan`], [`crate::sources`], [`crate::engine::graph`],
//! [`crate::surface`], [`crate::rules::link`]), with the device cache's paths from [`crate::engine::layout`].

use crate::config::accel::AccelSet;
use crate::output::cargo_output::CargoOutput;
use crate::config::env::Env;
use crate::error::{Error, ErrorKind, Result};
use crate::engine::graph::{self, Action, Observer, RunOptions, RunReport};
use crate::engine::layout::{OutDir, Variant};
use crate::config::manifest::Manifest;
use crate::plan::directives::DirectiveInputs;
use crate::plan::island::IslandState;
use crate::plan::lanes::{LaneInputs, Planned};
use crate::rules;
use crate::sources;
use crate::surface::{self, Generated, SurfaceOptions};
use crate::plan::accel::{check_entries, docs_rs, resolve_accel_with_origin, AccelChoice, AccelOrigin, NO_ACCEL_ENV};
use crate::plan::toolchain_packages::{self, fetch_command};
use crate::toolchain_package::{self, Catalog, Home, Lockfile};
use crate::tool::ToolChoices;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use crate::plan::config::Config;

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
    /// Each rule's options, read once ([`rules::Rule::read_options`]), in registry order
    /// ([`rules::registry`]).
    pub options: Vec<rules::options::RuleOptionsBox>,
    /// The accelerator set of this build.
    pub accel: AccelSet,
    /// Where the set came from (`None` for the empty set of `--no-accel`, `MCPP_NO_ACCEL` or
    /// docs.rs), computed once with it: the rules key their refusals of its entries with it.
    pub accel_origin: Option<AccelOrigin>,
    /// The device sources, classified.
    pub collected: sources::Collected,
    /// The C++ module (and namespace) of the surface.
    pub module_name: String,
    /// The data files of `[package.metadata.mcpp.embed]`, expanded and checked
    /// ([`crate::sources::embed::collect`]): embedded in every build, with or without an accelerator.
    pub embedded: crate::sources::embed::Embedded,
    /// Where each payload's bytes live ([`crate::plan::storage::resolve`]).
    pub storage: crate::plan::storage::StoragePlan,
}

/// Check a package's device phase without running anything: what `cargo mcpp build` does for
/// every selected package before cargo starts, and the first step of [`run`].
///
/// # Errors
/// Every refusal at once ([`Error::all`]): of the manifest (every rule table read once, as far
/// as it reads, [`rules::Rule::read_options`], the value kept in [`Validated::options`]; include
/// directories), the accelerator set (its grammar,
/// then each rule's check of its entries, [`rules::Rule::check_entry`], naming where the set
/// came from), the tools table (names and paths), the module name, the sources, the host
/// C++ lane's `cxx-sources` (globs, kinds, module cycles: [`crate::rules::cxx::check_sources`]) or the
/// launcher ([`crate::rules::launcher::Launchers::resolve`], [`crate::rules::launcher::refuse_rule_launcher`]).
pub fn validate(manifest_path: &Path, choice: &AccelChoice, env: &Env) -> Result<Validated> {
    validate_with(manifest_path, choice, env, &[], &Default::default())
}

/// [`validate`] with the manifest values build.rs set merged into the manifest first
/// ([`Manifest::read_with`]): every check below reads them as it reads the manifest's keys, and
/// a refusal of one names its build.rs call.
///
/// # Errors
/// As [`validate`].
pub fn validate_with(manifest_path: &Path, choice: &AccelChoice, env: &Env, settings: &[crate::config::manifest::BuilderSetting], registered: &rules::external::RegisteredRules) -> Result<Validated> {
    let manifest = Manifest::read_with(manifest_path, settings)?;
    let registry = rules::registry_with(registered)?;
    let deferred = registered.deferred;
    let mut names: Vec<&str> = registry.iter().map(|r| r.name()).collect();
    if deferred {
        // A table no known rule has may be a registered rule's: the build script checks it.
        // (A key that is no table cannot be a rule's: it stays unknown.)
        names.extend(manifest.mcpp.rule_tables.iter().filter(|(_, v)| v.is_table()).map(|(k, _)| k.as_str()));
    }
    // Every independent check runs, and every problem is reported (each with its file:line:col,
    // key and fix); the checks that need an earlier answer run only when it is there.
    let mut problems = manifest.check_keys(&names);
    let mut options = Vec::with_capacity(registry.len());
    for rule in &registry {
        let (read, rule_problems) = rule.read_options(&manifest);
        problems.extend(Error::all(rule_problems).err());
        options.push(read);
    }
    if let Some(cxx) = &manifest.mcpp.cxx {
        problems.extend(crate::rules::host::include_problems(&manifest, "package.metadata.mcpp.cxx", &cxx.includes));
        problems.extend(crate::rules::host::flag_include_problems(&manifest, "cxx", &cxx.flags));
    }
    // The host C++ lane runs after the device phase; what of it needs no compiler is refused now.
    problems.extend(crate::rules::cxx::check_sources(&manifest));
    problems.extend(crate::engine::compile_db::check_manifest_dir(&manifest).err());
    problems.extend(crate::plan::exports::problems(&manifest));
    let module_name = surface_module_name(&manifest);
    // base-dir's own checks (empty, absolute, `..`, not a directory); whether every payload is
    // under it is known once the rules have planned.
    problems.extend(surface::resolve_base(&manifest, std::iter::empty()).err());
    problems.extend(surface::check_module_name(&module_name).map_err(|e| e.file(manifest.at_col("module-name"))).err());
    let (accel, accel_origin) = match resolve_accel_with_origin(choice, &manifest, env) {
        Ok((a, origin)) => {
            problems.extend(check_entries(&a, origin.as_ref(), &registry, deferred));
            (Some(a), origin)
        }
        Err(e) => {
            problems.push(e);
            (None, None)
        }
    };
    let collected = accel.as_ref().map(|a| sources::collect_with(&manifest, a, &registry, env, deferred));
    let collected = match collected {
        Some(Ok(c)) => Some(c),
        Some(Err(e)) => {
            problems.push(e);
            None
        }
        None => None,
    };
    // A tool's path is checked when its rule compiles something in this build (what the
    // resolver would refuse later); a `tools` entry for a lane this build leaves out (a CPU-only
    // `--no-accel` build with `tools.nvcc` set for the CUDA machines) is not needed here.
    let used: Option<Vec<&str>> = collected.as_ref().map(|c| registry.iter().enumerate().filter(|(i, _)| c.sources.iter().any(|s| s.selected && s.rule == *i)).map(|(_, r)| r.name()).collect());
    problems.extend(validate_tools_table(&manifest, &registry, used.as_deref(), deferred));
    // The launcher (`launcher`, each rule's own, `MCPP_LAUNCHER`): a program that is not there
    // or not executable, an empty value, or a rule's key where its compilers take none. Only
    // where a compiler may run: a rule with a selected source, or the host C++ lane's sources or
    // island (the device phase resolves it again when it plans, and refuses it only when an
    // action would start it: `MCPP_NO_ACCEL=1 cargo doc` of a shader crate needs no launcher).
    let may_compile = used.as_ref().is_none_or(|u| !u.is_empty()) || !manifest.mcpp.cxx_sources.is_empty() || manifest.mcpp.island.is_some();
    if may_compile {
        problems.extend(crate::rules::launcher::Launchers::resolve(&manifest, env).err());
    }
    for rule in &registry {
        let programs: Vec<&str> = rule.tools().iter().map(|t| t.name).collect();
        problems.extend(crate::rules::launcher::refuse_rule_launcher(&manifest, rule.name(), &programs));
    }
    let embedded = crate::sources::embed::collect(&manifest).map_err(|e| problems.push(e)).unwrap_or_default();
    // The package's storage is checked whether or not the sources could be read; the rules'
    // and entries' once they are.
    let storage = match &collected {
        Some(c) => crate::plan::storage::resolve(&manifest, c, &registry, &options).map_err(|e| problems.push(e)).unwrap_or_default(),
        None => surface::storage::from_manifest(&manifest).map_err(|e| problems.push(e)).map(|package| crate::plan::storage::StoragePlan { package, ..Default::default() }).unwrap_or_default(),
    };
    Error::all(problems)?;
    // Both are present here: a missing one was pushed to `problems` above.
    let (Some(accel), Some(collected)) = (accel, collected) else { return Err(Error::new(ErrorKind::Manifest, "the accelerator set or the sources could not be read")) };
    Ok(Validated { manifest, options, accel, accel_origin, collected, module_name, embedded, storage })
}

/// Run the device phase: validate ([`validate`]), lock the variant of the device cache
/// ([`lock_variant`]), say what will not compile (`source_warnings`), gather the resolver's
/// choices and the toolchain packages (`tool_choices`), prepare the island
/// ([`crate::plan::island::prepare_island`]), plan every lane ([`crate::plan::lanes::plan`]),
/// name the payloads (`name_payloads`), run the actions (`run_actions`), write the surface
/// (`write_surface`) and the cargo directives ([`crate::plan::directives::emit`]).
///
/// # Errors
/// Any refusal of the manifest, accelerator set, sources or rules, a missing tool, or a
/// failed compiler.
pub fn run(config: &Config, observer: &dyn Observer, jobserver: Option<&jobserver::Client>) -> Result<Outcome> {
    let env = &config.env;
    refuse_control_in_out_dirs(config)?;
    let mut validated = validate_with(&config.manifest_path, &config.accel, env, &config.builder_settings, &config.rules)?;
    // A dependency's exported include directories: known only in the build script, where
    // cargo sets `DEP_<LINKS>_MCPP_INCLUDE`; every rule's includes end with them.
    validated.manifest.mcpp.dependency_includes = crate::plan::exports::dependency_includes(&validated.manifest, env)?;
    let Validated { manifest, accel, collected, .. } = &validated;
    let registry = rules::registry_with(&config.rules)?;
    refuse_unknown_builder_tools(config, &registry)?;
    let variant = config.cache.variant(accel);
    let _lock = lock_variant(manifest, &variant)?;
    let mut cargo = CargoOutput::default();
    source_warnings(&mut cargo, &validated, config);
    for w in &validated.embedded.warnings {
        cargo.warning(w);
    }
    let inputs: Vec<&Path> = std::iter::once(manifest.path.as_path()).chain(collected.sources.iter().map(|s| s.path.as_path())).chain(validated.embedded.files().map(PathBuf::as_path)).collect();
    if let Some(w) = crate::engine::fingerprint::whole_second_warning(&inputs, &config.cache.whole_second_marker()) {
        cargo.warning(&w);
    }
    let tools = tool_choices(&mut cargo, &validated, &registry, config)?;
    let island = crate::plan::island::prepare_island(manifest, collected, &registry, &config.cache)?;
    crate::plan::island::refuse_marked_outside(manifest, collected, island.as_ref())?;
    let lane_inputs = LaneInputs {
        manifest,
        accel,
        collected,
        registry: &registry,
        options: &validated.options,
        cache: &config.cache,
        variant: &variant,
        env,
        tools: &tools,
        facts: &config.facts,
        island: island.as_ref(),
        accel_origin: validated.accel_origin.as_ref(),
    };
    let mut planned = crate::plan::lanes::plan(&lane_inputs)?;
    crate::plan::edit::apply(&config.plan_edits, &mut planned.actions)?;
    for w in &planned.warnings {
        cargo.warning(w);
    }
    let named = name_payloads(manifest, collected, &planned, &validated.embedded, &validated.storage)?;
    let mut report = match run_actions(&mut cargo, &planned.actions, &variant, config, observer, jobserver) {
        Ok(report) => report,
        Err(e) => {
            // The database still lists the device units, so an editor can show what failed.
            write_compile_commands(&mut cargo, manifest, &planned.actions, &[], (&config.cache, &variant), env)?;
            return Err(e);
        }
    };
    for (rule, options) in registry.iter().zip(&validated.options) {
        let made: Vec<&surface::Payload> = planned.payloads.iter().filter(|(r, _)| *r == rule.name()).map(|(_, p)| p).collect();
        if !made.is_empty() {
            rule.check_payloads(manifest, options, &made)?;
        }
    }
    let generated = write_surface(&mut cargo, &validated, &variant, &named, &report, island.as_ref(), config)?;
    run_host_lane(&mut cargo, &lane_inputs, &mut planned, &mut report, generated.as_ref().filter(|_| !named.items.is_empty()), config, (observer, jobserver))?;
    crate::plan::directives::emit(
        &mut cargo,
        &DirectiveInputs { manifest, collected, accel, cache: &config.cache, report: &report, planned: &planned, island: island.as_ref(), env, link: !docs_rs(env), rule_backends: registry.iter().map(|r| r.backend()).collect() },
    );
    // The embedded files are the surface's inputs (no action reads them): a changed, added or
    // removed one reruns the build script, which rewrites what holds its bytes.
    for f in validated.embedded.files().chain(&validated.embedded.watch_dirs) {
        cargo.rerun_if_changed(f);
    }
    if let Some(dirs) = crate::plan::exports::export_directive(manifest)? {
        cargo.metadata(crate::plan::exports::METADATA_KEY, &dirs);
    }
    Ok(Outcome { accel: validated.accel, report, cargo, generated, variant_dir: variant.dir().to_path_buf(), payloads: named.items.len() })
}

/// `compile_commands.json` of every planned translation unit ([`crate::engine::compile_db`]): the
/// rules' (`device`) and the host C++ lane's (`host`, planned after the surface), written once
/// per device phase (before the host lane runs, or when the device run failed) into the
/// variant; and, under plain `cargo build` only, its copy into the manifest's
/// `compile-commands` directory (relative to the package root), merged with what it holds as
/// `cargo mcpp build` merges ([`crate::engine::compile_db::merge`]: another package's entries in a shared
/// directory are kept). Under `cargo mcpp build` the command line writes every copy after cargo
/// finishes (merging the packages). Nothing under docs.rs (no compiler runs there). A copy that
/// was not a JSON array is written again, with a warning.
///
/// # Errors
/// [`ErrorKind::Io`] naming the path that cannot be written.
fn write_compile_commands(cargo: &mut CargoOutput, manifest: &Manifest, device: &[Action], host: &[Action], (cache, variant): (&crate::engine::layout::DeviceCache, &Variant), env: &Env) -> Result<()> {
    if docs_rs(env) {
        return Ok(());
    }
    let all: Vec<Action> = device.iter().chain(host).cloned().collect();
    let database = variant.compile_commands();
    crate::engine::compile_db::write(&all, &database)?;
    if crate::output::report::started_by_cargo_mcpp(env) {
        return Ok(());
    }
    if let Some(dir) = crate::engine::compile_db::manifest_dir(manifest) {
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("cannot create the compile_commands.json directory", &dir, e))?;
        let source = crate::engine::compile_db::Source { package: manifest.package_name.clone(), database, cache_dir: cache.dir().to_path_buf() };
        let merged = crate::engine::compile_db::merge(&[source], &dir)?;
        if let Some(why) = &merged.replaced_unreadable {
            cargo.warning(&format!("{} was not a JSON array of compile commands ({why}): written again with this package's entries only", merged.path.display()));
        }
    }
    Ok(())
}

/// Lock the variant of the device cache for this device phase: two cargo processes (two `cargo
/// mcpp build`, one beside a plain `cargo build`) run it in their build scripts on one device
/// cache; an action deletes its outputs before its compiler runs, so the second waits here
/// (held until the surface is written from the verified outputs) and then finds them fresh.
///
/// # Errors
/// [`ErrorKind::Io`] when the lock file cannot be created.
pub fn lock_variant(manifest: &Manifest, variant: &Variant) -> Result<crate::engine::lock::FileLock> {
    crate::engine::lock::FileLock::acquire_or_wait(&variant.lock_file(), || {
        eprintln!("Blocking: waiting for file lock on the device cache of {} ({})", manifest.package_name, variant.dir().display());
    })
}

/// Refuse an `OUT_DIR` or device cache whose path holds a control character (a newline from a
/// `CARGO_TARGET_DIR`), before anything is written: the build script's directives to cargo are
/// lines, so the link would fail on a cut path.
fn refuse_control_in_out_dirs(config: &Config) -> Result<()> {
    for (what, dir) in [("OUT_DIR", config.out_dir.as_deref()), ("the device cache", Some(config.cache.dir()))] {
        if let Some(d) = dir.filter(|d| crate::text::has_control(&d.to_string_lossy())) {
            return Err(Error::new(ErrorKind::Usage, format!("{what} `{}` holds a newline or another control character", crate::text::echo_path(d)))
                .detail("cargo derives it from the target directory (CARGO_TARGET_DIR, --target-dir, build.target-dir); the build script's directives to cargo are lines, so such a path cannot be passed on and the link would fail")
                .help("choose a target directory whose path has no newline or control character"));
        }
    }
    Ok(())
}

/// The collection's warnings, and the one that says an empty or absent accelerator set leaves
/// every device source uncompiled (naming where the empty set came from), unless that is on
/// purpose (`--no-accel`, `MCPP_NO_ACCEL`, docs.rs).
fn source_warnings(cargo: &mut CargoOutput, validated: &Validated, config: &Config) {
    let env = &config.env;
    let Validated { manifest, accel, collected, .. } = validated;
    for w in &collected.warnings {
        cargo.warning(w);
    }
    if accel.is_empty() && !docs_rs(env) && config.accel != AccelChoice::NoAccel && env.get_nonempty(NO_ACCEL_ENV).is_none() && !collected.sources.is_empty() {
        // Name where the empty set came from: an empty --accel / MCPP_ACCEL, or the manifest.
        let origin = validated.accel_origin.as_ref().and_then(|o| o.elsewhere.clone()).unwrap_or_else(|| format!("`accel` in {}", manifest.path.display()));
        cargo.warning(&format!(
            "no accelerator: {origin} is empty or absent, so none of the {} device source(s) is compiled (name a set, e.g. \"vulkan1.2\", or build with {} to say it on purpose)",
            collected.sources.len(),
            crate::output::report::no_accel_way(env)
        ));
    }
}

/// What the resolver consults besides the environment: the builder's and the manifest's
/// explicit tools, and the payloads this build uses (after both gates, [`payload_requirements`]),
/// each with whether it is installed. A build that uses payloads reruns when `mcpp.lock`, an
/// install's marker or (while one is missing) the installs stamp changes; the payload
/// selection's reports become warnings.
///
/// # Errors
/// A malformed pin or `mcpp.lock`, an unusable payload home ([`Home::from_env`]), a selection
/// the catalog cannot satisfy.
fn tool_choices(cargo: &mut CargoOutput, validated: &Validated, registry: &[Box<dyn rules::Rule>], config: &Config) -> Result<ToolChoices> {
    let env = &config.env;
    let Validated { manifest, accel, collected, .. } = validated;
    let catalog = Catalog::builtin()?;
    let requirements = toolchain_packages::requirements(manifest, accel, collected, registry, &validated.options, env, &config.builder_tools)?;
    let lock_path = toolchain_packages::lockfile_path(manifest);
    let lock = if requirements.is_empty() { Lockfile::default() } else { Lockfile::read(&lock_path)? };
    let selected = toolchain_package::select_locked(&catalog, &requirements, &manifest.toolchain_package_pins(&catalog)?, &manifest.path, Some((&lock, &lock_path)))?;
    let fetch_command = fetch_command(manifest, accel);
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
    Ok(ToolChoices {
        builder: config.builder_tools.clone(),
        builder_lines: config.builder_tool_lines.clone(),
        manifest: manifest.mcpp.tools.iter().map(|(k, v)| (k.clone(), if v.is_absolute() { v.clone() } else { manifest.dir().join(v) })).collect(),
        manifest_lines: manifest.mcpp.tools.keys().filter_map(|k| manifest.line(&format!("tools.{k}")).map(|l| (k.clone(), l))).collect(),
        manifest_path: manifest.path.clone(),
        toolchain_packages: availability,
        fetch_command,
    })
}

/// The payloads of the surface, named.
struct Named {
    /// The base directory the names are relative to.
    base: surface::BaseDir,
    /// The named payloads, the embedded files among them.
    items: Vec<surface::PayloadItem>,
    /// The lookup tables of the embedded files.
    tables: Vec<surface::LookupTable>,
}

/// The surface's base directory and its named payloads ([`surface::resolve_base`],
/// [`surface::name_payloads`]), with the embedded files ([`crate::sources::embed::merge`], named by
/// their own entries: they do not move the base directory).
///
/// # Errors
/// A payload outside `base-dir`; two payloads that map to one name (pointing at the `sources`
/// entry that listed the second, `file:line:col`, when a `sources` entry did, or at the
/// `embed` entry).
fn name_payloads(manifest: &Manifest, collected: &sources::Collected, planned: &Planned, embedded: &crate::sources::embed::Embedded, storage: &crate::plan::storage::StoragePlan) -> Result<Named> {
    let base = surface::resolve_base(manifest, planned.payloads.iter().map(|(_, p)| p.source.as_str()))?;
    let items = surface::name_payloads(&planned.payloads, base.dirs()).map_err(|e| {
        // The second colliding source is the error's second detail line (surface::name_payloads).
        let entry = e.detail.get(1).and_then(|second| collected.sources.iter().find(|s| &s.rel == second)).map(|s| s.entry);
        match entry {
            Some(i) => e.file(manifest.at_col(&format!("sources[{i}]"))).key(format!("package.metadata.mcpp.sources[{i}]")),
            None => e.file(&manifest.path),
        }
    })?;
    // A rule's or a `sources` entry's own storage (the embedded files carry theirs).
    let items: Vec<surface::PayloadItem> = items.into_iter().map(|i| surface::PayloadItem { storage: storage.by_source.get(&i.source).copied(), ..i }).collect();
    let items = crate::sources::embed::merge(items, embedded)?;
    Ok(Named { base, items, tables: embedded.tables.clone() })
}

/// Plan and run the host C++ lane ([`crate::plan::lanes::plan_host`]) after the surface is
/// written: `cxx-sources`, the island's units and, when there are payloads, the generated
/// surface's copy in the variant (`surface/`): its implementation unit when the lane compiles a
/// unit of the crate (`cxx-sources`, the island's fallback), its module interface when a unit
/// imports it, its header's directory on `-I`; object storage's assembly always. A crate whose
/// host side is pure Rust under header (or sidecar) storage starts no C++ compiler and needs
/// none ([`crate::rules::cxx::units`]). A payload edit changes
/// only the implementation unit's data headers, never the interface: no BMI and no importer
/// is rebuilt. Its report is merged into `report`, its actions appended to `planned`.
///
/// # Errors
/// The lane's refusals, a compiler that failed.
fn run_host_lane(
    cargo: &mut CargoOutput,
    inputs: &LaneInputs,
    planned: &mut Planned,
    report: &mut RunReport,
    generated: Option<&Generated>,
    config: &Config,
    (observer, jobserver): (&dyn Observer, Option<&jobserver::Client>),
) -> Result<()> {
    let mirror = inputs.variant.surface_cpp_dir();
    let paths = generated.map(|g| (mirror.join(g.interface_file.file_name().unwrap_or_default()), mirror.join(g.impl_file.file_name().unwrap_or_default())));
    let module_name = surface_module_name(inputs.manifest);
    let assembly = generated.and_then(|g| g.assembly.as_ref()).map(|(path, incbins)| (path.as_path(), incbins.as_slice()));
    let surface = paths.as_ref().map(|(interface, implementation)| crate::rules::cxx::SurfaceUnits { module_name: &module_name, interface, implementation, modules: inputs.manifest.mcpp.modules.unwrap_or(true), assembly });
    let warned = planned.warnings.len();
    let actions = crate::plan::lanes::plan_host(inputs, surface, planned)?;
    for w in &planned.warnings[warned..] {
        cargo.warning(w);
    }
    write_compile_commands(cargo, inputs.manifest, &planned.actions, &actions, (inputs.cache, inputs.variant), inputs.env)?;
    if actions.is_empty() {
        return Ok(());
    }
    // The progress of one device phase counts both runs: the host lane's actions add to those
    // the first run planned.
    let offset = OffsetObserver { inner: observer, before: report.ran.len() };
    let host = run_actions(cargo, &actions, inputs.variant, config, &offset, jobserver)?;
    report.ran.extend(host.ran);
    report.fresh.extend(host.fresh);
    report.read.extend(host.read);
    report.peak_concurrency = report.peak_concurrency.max(host.peak_concurrency);
    report.outputs.extend(host.outputs);
    report.warnings.extend(host.warnings);
    planned.append_actions(actions);
    Ok(())
}

/// An observer of the host lane's run that reports its planned total after the `before`
/// actions of the first run, so one progress bar covers the whole device phase.
struct OffsetObserver<'a> {
    inner: &'a dyn Observer,
    before: usize,
}

impl Observer for OffsetObserver<'_> {
    fn planned(&self, total: usize) {
        if total > 0 {
            self.inner.planned(self.before + total);
        }
    }
    fn started(&self, action: &graph::Action) {
        self.inner.started(action);
    }
    fn finished(&self, action: &graph::Action) {
        self.inner.finished(action);
    }
}

/// The module name of the surface: `module-name`, or `<package>.shaders`.
fn surface_module_name(manifest: &Manifest) -> String {
    manifest.mcpp.module_name.clone().unwrap_or_else(|| format!("{}.shaders", surface::names::module_root(&manifest.package_name)))
}

/// Run the planned actions ([`graph::run`], fingerprints in the variant); under docs.rs nothing
/// runs (the crate is documented, nothing compiled or linked). What the compilers that ran
/// printed on success becomes warnings, as the cc crate shows them.
///
/// # Errors
/// A compiler that failed or left an output missing; the variant's state not writable.
fn run_actions(cargo: &mut CargoOutput, actions: &[graph::Action], variant: &Variant, config: &Config, observer: &dyn Observer, jobserver: Option<&jobserver::Client>) -> Result<RunReport> {
    let options = RunOptions { variant, jobs: config.jobs, jobserver };
    let report = if docs_rs(&config.env) { RunReport::default() } else { graph::run(actions, &options, observer)? };
    for w in &report.warnings {
        cargo.warning(w);
    }
    Ok(report)
}

/// Write the surface into the out dir, when there is one: `mcpp_shaders.rs`, the C++ module or
/// header, the verified payload copies ([`surface::generate`]); record the base directory it
/// was named by in the variant (warning when a derived base moved, [`surface::note_base`]);
/// mirror the island into it ([`crate::plan::island::publish_island`]). Nothing is written
/// without an out dir (`cargo mcpp build`'s own run leaves that to the build script).
///
/// # Errors
/// As [`surface::generate`], [`surface::note_base`] and the island's publishing.
fn write_surface(cargo: &mut CargoOutput, validated: &Validated, variant: &Variant, named: &Named, report: &RunReport, island: Option<&IslandState>, config: &Config) -> Result<Option<Generated>> {
    let Some(out_dir) = &config.out_dir else { return Ok(None) };
    let out = OutDir::at(out_dir);
    let manifest = &validated.manifest;
    let (storage, fallback) = surface::storage::effective(validated.storage.package, &config.facts.target);
    // Each payload's own storage, effective for the target (object under MSVC is header).
    let mut fell_back = fallback.filter(|_| named.items.iter().any(|i| i.storage.is_none()));
    let items: Vec<surface::PayloadItem> = named
        .items
        .iter()
        .map(|i| {
            let own = i.storage.map(|s| {
                let (s, w) = surface::storage::effective(s, &config.facts.target);
                fell_back = fell_back.take().or(w);
                s
            });
            surface::PayloadItem { storage: own, ..i.clone() }
        })
        .collect();
    if let Some(w) = fell_back {
        cargo.warning(&w);
    }
    let generated = surface::generate_with_tables(
        &items,
        &named.tables,
        &SurfaceOptions {
            package_name: manifest.package_name.clone(),
            module_name: validated.module_name.clone(),
            modules: manifest.mcpp.modules.unwrap_or(true),
            cpp_dir: out.cpp_dir(),
            rust_file: out.rust_surface(),
            payload_dir: out.payload_dir(),
            verified: report.outputs.clone(),
            cpp_mirror: Some(variant.surface_cpp_dir()),
            storage,
            object_format: surface::ObjectFormat::of_target(&config.facts.target).unwrap_or(surface::ObjectFormat::Elf),
            artifact_dir: out.artifact_dir(),
            cxx: crate::rules::cxx::has_units(manifest, island.map(IslandState::cxx_units))?,
        },
    )?;
    watch_sidecars(cargo, out_dir, &generated.sidecars)?;
    // The contract with `cargo mcpp pack`: written whenever the package uses mcpp (an empty
    // list under header and object storage), only when it changed.
    crate::engine::fingerprint::write_if_changed(&out.sidecars_manifest(), surface::storage::sidecars_json(&generated.sidecars).as_bytes())?;
    // The base directory names the compiled payloads only; embedded files are named by their entries.
    let compiled: Vec<surface::PayloadItem> = named.items.iter().filter(|i| i.rule != crate::sources::embed::RULE).cloned().collect();
    if let Some(w) = surface::note_base(&variant.surface_base(), &named.base, &compiled)? {
        cargo.warning(&w);
    }
    if let Some(island) = island {
        crate::plan::island::publish_island(island, &out)?;
    }
    Ok(Some(generated))
}

/// Make the sidecar files (written beside the artifacts, outside `OUT_DIR`) inputs of the build
/// script, so that one deleted or edited by hand is written again by the next `cargo build`:
/// each is a `rerun-if-changed` path, its modification time set to cargo's invocation time of
/// this run (the `invoked.timestamp` cargo writes beside `OUT_DIR` before it starts the build
/// script, and against which it compares every `rerun-if-changed` path: newer is stale,
/// missing is stale). Without the reset the build's own write would be newer and cargo would
/// rerun the build script on every build. Without that file (the pipeline run outside cargo,
/// as in the tests' fake `OUT_DIR`) nothing is watched: no cargo compares anything then.
/// Source: cargo's `custom_build.rs` (`set_invocation_time`) and fingerprint (`find_stale_file`).
///
/// # Errors
/// [`ErrorKind::Io`] when a sidecar's modification time cannot be set.
fn watch_sidecars(cargo: &mut CargoOutput, out_dir: &Path, sidecars: &[(PathBuf, String)]) -> Result<()> {
    let Some(invoked) = out_dir.parent().map(|d| d.join("invoked.timestamp")).and_then(|f| std::fs::metadata(f).and_then(|m| m.modified()).ok()) else { return Ok(()) };
    for (file, _) in sidecars {
        let current = std::fs::metadata(file).and_then(|m| m.modified()).map_err(|e| Error::io("cannot read the sidecar", file, e))?;
        if current != invoked {
            let handle = std::fs::File::options().write(true).open(file).map_err(|e| Error::io("cannot open the sidecar", file, e))?;
            handle.set_modified(invoked).map_err(|e| Error::io("cannot set the modification time of the sidecar", file, e))?;
        }
        cargo.rerun_if_changed(file);
    }
    Ok(())
}

/// The names every rule's tools answer to, each once (rules may share one: clang++ for CUDA's
/// clang route and HIP), in the registry's order: the keys of `[package.metadata.mcpp.tools]`
/// and of `Build::tool`.
fn known_tool_names(registry: &[Box<dyn rules::Rule>]) -> Vec<&'static str> {
    let mut known: Vec<&'static str> = Vec::new();
    for name in registry.iter().flat_map(|r| r.tools().iter().map(|t| t.name)) {
        if !known.contains(&name) {
            known.push(name);
        }
    }
    known
}

/// `Build::tool` with a name no rule's tool answers to (a typo, `glslangvalidator`) is refused,
/// naming the build.rs line and the names there are, as the manifest's `tools` key is: it would
/// otherwise be ignored and the resolver would pick another program.
///
/// # Errors
/// [`ErrorKind::Manifest`] for the first unknown name.
fn refuse_unknown_builder_tools(config: &Config, registry: &[Box<dyn rules::Rule>]) -> Result<()> {
    let known = known_tool_names(registry);
    match config.builder_tools.keys().find(|name| !known.contains(&name.as_str())) {
        None => Ok(()),
        Some(name) => {
            let line = config.builder_tool_lines.get(name).map(|l| format!(" ({l})")).unwrap_or_default();
            Err(Error::new(ErrorKind::Manifest, format!("unknown tool `{}` named by Build::tool{line}", crate::text::echo(name))).help(format!("the tools this cargo-mcpp runs are: {}", known.join(", "))))
        }
    }
}

/// Every problem of `[package.metadata.mcpp.tools]`, each at its key's `file:line:col`: a key
/// that names no tool of any rule, an empty path, and, for a tool of a rule in `used` (the
/// rules this build runs; `None` when the sources could not be read, so no path is checked),
/// a path that does not exist or is not an executable file (relative paths are the package
/// root's, as the resolver reads them).
fn validate_tools_table(manifest: &Manifest, registry: &[Box<dyn rules::Rule>], used: Option<&[&str]>, deferred: bool) -> Vec<Error> {
    let known = known_tool_names(registry);
    let used_tools: Vec<&str> = registry.iter().filter(|r| used.is_some_and(|u| u.contains(&r.name()))).flat_map(|r| r.tools().iter().map(|t| t.name)).collect();
    let mut out = Vec::new();
    for (name, path) in &manifest.mcpp.tools {
        let shown = crate::text::echo(name);
        let at = manifest.at_col(&format!("tools.{name}"));
        let key = format!("package.metadata.mcpp.tools.{shown}");
        if !known.contains(&name.as_str()) {
            if deferred {
                continue;
            }
            out.push(Error::new(ErrorKind::Manifest, format!("unknown tool `{shown}` in [package.metadata.mcpp.tools]")).file(at).key(key).help(format!("the tools this cargo-mcpp runs are: {}; a rule that build.rs registers (`mcpp_build::Build::rule`) adds its own", known.join(", "))));
            continue;
        }
        if path.as_os_str().is_empty() {
            out.push(
                Error::new(ErrorKind::Manifest, format!("[package.metadata.mcpp.tools] {shown} is empty"))
                    .file(at)
                    .key(key)
                    .help(format!("name the program's path (relative to the package root, or absolute), or remove the key to let the resolver find {shown}")),
            );
            continue;
        }
        if !used_tools.contains(&name.as_str()) {
            continue;
        }
        let full = if path.is_absolute() { path.clone() } else { manifest.dir().join(path) };
        if let Some(problem) = crate::tool::named_program_problem(&full) {
            out.push(
                Error::new(ErrorKind::Manifest, format!("[package.metadata.mcpp.tools] {shown} names `{}`, {problem}", crate::text::echo(&full.display().to_string())))
                    .file(at)
                    .key(key)
                    .help("fix the path (relative to the package root, or absolute) or the file's mode, or remove the key to let the resolver find the tool"),
            );
        }
    }
    out
}
