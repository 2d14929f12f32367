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
use crate::payload::{self, Catalog, Home, Lockfile, Requirement, VersionReq};
use crate::tool::ToolChoices;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The environment variable `cargo mcpp build --accel SPEC` sets for build.rs.
pub const ACCEL_ENV: &str = "MCPP_ACCEL";
/// The environment variable `cargo mcpp build --no-accel` sets (to `1`) for build.rs.
pub const NO_ACCEL_ENV: &str = "MCPP_NO_ACCEL";

/// Where the accelerator set of one build comes from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AccelChoice {
    /// `[package.metadata.mcpp] accel`, unless the environment overrides it.
    #[default]
    Manifest,
    /// `--accel SPEC` / [`crate::Build::accel`].
    Spec(String),
    /// `--no-accel` / [`crate::Build::no_accel`]: the empty set; no device source compiles.
    NoAccel,
}

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
    /// Release profile (optimisation on).
    pub release: bool,
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

/// Resolve the accelerator set: the explicit choice, else `MCPP_NO_ACCEL` / `MCPP_ACCEL` from
/// the environment (set by `cargo mcpp build`), else the manifest.
///
/// # Errors
/// [`ErrorKind::Accel`] naming where the malformed string came from.
pub fn resolve_accel(choice: &AccelChoice, manifest: &Manifest, env: &Env) -> Result<AccelSet> {
    let (text, origin, key) = match choice {
        AccelChoice::NoAccel => return Ok(AccelSet::none()),
        AccelChoice::Spec(s) => (s.clone(), "--accel".to_string(), None),
        AccelChoice::Manifest => {
            if env.get_nonempty(NO_ACCEL_ENV).is_some() {
                return Ok(AccelSet::none());
            }
            match env.get(ACCEL_ENV) {
                Some(s) => (s, format!("the environment variable {ACCEL_ENV}"), None),
                None => (manifest.mcpp.accel.clone().unwrap_or_default(), manifest.path.display().to_string(), Some("package.metadata.mcpp.accel")),
            }
        }
    };
    AccelSet::parse(&text).map_err(|e| {
        let mut err = Error::new(ErrorKind::Accel, format!("malformed accelerator set from {origin}")).detail(e.to_string());
        if let Some(k) = key {
            err = err.file(&manifest.path).key(k);
        }
        err.help("write a comma-separated set such as \"vulkan1.2\" or \"hip, cuda12.9+{sm_89}\" (README.md \"The accelerator set\")")
    })
}

/// Run the device phase.
///
/// # Errors
/// Any refusal of the manifest, accelerator set, sources or rules, a missing tool, or a
/// failed compiler.
pub fn run(config: &Config, observer: &dyn Observer, jobserver: Option<&jobserver::Client>) -> Result<Outcome> {
    let manifest = Manifest::read(&config.manifest_path)?;
    let env = &config.env;
    let accel = resolve_accel(&config.accel, &manifest, env)?;
    let registry = rules::registry();
    let collected = sources::collect(&manifest, &accel, &registry)?;
    let variant = if accel.is_empty() { "host".to_string() } else { crate::fingerprint::sha256_hex(accel.to_string().as_bytes())[..16].to_string() };
    let variant_dir = config.work_dir.join(&variant);
    let mut cargo = CargoOutput::default();
    let catalog = Catalog::builtin()?;
    let requirements = payload_requirements(&manifest, &accel, &collected, &registry, env, &config.builder_tools)?;
    let lock_path = manifest.dir().join(payload::LOCKFILE);
    let lock = if requirements.is_empty() { Lockfile::default() } else { Lockfile::read(&lock_path)? };
    let selected = payload::select_locked(&catalog, &requirements, &manifest.payload_pins(&catalog)?, &manifest.path, Some((&lock, &lock_path)))?;
    let fetch_command = fetch_command(&manifest, &accel);
    let mut availability = BTreeMap::new();
    if !selected.is_empty() {
        let home = Home::from_env(env)?;
        availability = payload::availability(&catalog, &home, &selected, &lock, &lock_path, &fetch_command);
        // A new fetch rewrites the lockfile or reinstalls (a new marker): rerun the build script.
        cargo.rerun_if_changed(&lock_path);
        for s in &selected {
            cargo.rerun_if_changed(&home.install_dir(&s.name, &s.version).join(payload::MARKER));
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
        manifest_lines: manifest.mcpp.tools.keys().filter_map(|k| manifest.lines.get(&format!("tools.{k}")).map(|l| (k.clone(), *l))).collect(),
        manifest_path: manifest.path.clone(),
        payloads: availability,
        fetch_command,
    };
    let mut actions = Vec::new();
    let mut payloads = Vec::new();
    let mut tool_files = Vec::new();
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
            cargo.warning(&format!("the accelerator set names {} but no source in `sources` is a {} source; nothing was compiled for it", entry.backend, rule.name()));
            continue;
        }
        let ctx = RuleContext {
            manifest: &manifest,
            accel: entry,
            work_dir: &variant_dir,
            tool_cache: &config.work_dir,
            env,
            tools: &tools,
            release: config.release,
        };
        let plan = rule.plan(&ctx, &mine)?;
        for w in &plan.warnings {
            cargo.warning(w);
        }
        tool_files.extend(plan.tools.iter().map(|t| t.path.clone()));
        actions.extend(plan.actions);
        payloads.extend(plan.payloads);
    }
    let items = surface::name_payloads(&payloads, "cargo-mcpp")?;
    let options = RunOptions { state_dir: &variant_dir.join("fingerprints"), jobs: config.jobs, jobserver };
    let report = graph::run(&actions, &options, observer)?;
    let module_name = manifest.mcpp.module_name.clone().unwrap_or_else(|| format!("{}.shaders", surface::names::module_root(&manifest.package_name)));
    let generated = match &config.out_dir {
        Some(out_dir) => Some(surface::generate(
            &items,
            &SurfaceOptions {
                package_name: manifest.package_name.clone(),
                module_name,
                modules: manifest.mcpp.modules.unwrap_or(true),
                cpp_dir: out_dir.join("mcpp"),
                rust_file: out_dir.join("mcpp_shaders.rs"),
            },
        )?),
        None => None,
    };
    directives(&mut cargo, &manifest, &collected, &report, &tool_files, &accel, env);
    Ok(Outcome { accel, report, cargo, generated, variant_dir, payloads: items.len() })
}

/// The payload requirements of a build, after the two gates (issue 4; seed 000): a rule's
/// payloads count only when the package has sources of that rule selected for this build AND
/// the accelerator set names the rule's backend. A payload whose tool the project names
/// explicitly (the builder, manifest `tools`, the rule's variables, `MCPP_TOOL_<NAME>`) is not
/// required: a choice never causes the payload to be fetched.
///
/// # Errors
/// [`ErrorKind::Manifest`] for a rule's malformed version rule (a defect of the rule).
pub fn payload_requirements(
    manifest: &Manifest,
    accel: &AccelSet,
    collected: &sources::Collected,
    registry: &[Box<dyn rules::Rule>],
    env: &Env,
    builder_tools: &BTreeMap<String, PathBuf>,
) -> Result<Vec<Requirement>> {
    let mut out = Vec::new();
    for (index, rule) in registry.iter().enumerate() {
        if accel.entry(rule.backend()).is_none() || !collected.sources.iter().any(|s| s.rule == index && s.selected) {
            continue;
        }
        for req in rule.payloads(manifest) {
            let t = &req.tool;
            let chosen = builder_tools.contains_key(t.name)
                || manifest.mcpp.tools.contains_key(t.name)
                || t.env_vars.iter().any(|v| env.get_nonempty(v).is_some())
                || env.get_nonempty(&crate::tool::override_var(t.name)).is_some();
            if chosen {
                continue;
            }
            let version = VersionReq::parse(req.version)
                .map_err(|m| Error::new(ErrorKind::Manifest, format!("the {} rule declares payload {} with a bad version rule: {m}", rule.name(), req.payload)).help("this is a defect of cargo-mcpp; report it"))?;
            out.push(Requirement { payload: req.payload.to_string(), req: Some(version), by: format!("the {} rule", rule.name()) });
        }
    }
    Ok(out)
}

/// The exact command that installs the payloads of this build:
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

fn directives(
    cargo: &mut CargoOutput,
    manifest: &Manifest,
    collected: &sources::Collected,
    report: &RunReport,
    tools: &[PathBuf],
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
    for t in tools {
        cargo.rerun_if_changed(t);
    }
    for var in [ACCEL_ENV, NO_ACCEL_ENV] {
        cargo.rerun_if_env_changed(var);
    }
    for var in env.reads() {
        if var != "PATH" {
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
