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
    validate_tools_table(&manifest, &registry)?;
    let module_name = manifest.mcpp.module_name.clone().unwrap_or_else(|| format!("{}.shaders", surface::names::module_root(&manifest.package_name)));
    surface::check_module_name(&module_name).map_err(|e| e.file(&manifest.path))?;
    let collected = sources::collect(&manifest, &accel, &registry)?;
    let variant = if accel.is_empty() { "host".to_string() } else { crate::fingerprint::sha256_hex(accel.to_string().as_bytes())[..16].to_string() };
    let variant_dir = config.work_dir.join(&variant);
    let mut cargo = CargoOutput::default();
    for w in &collected.warnings {
        cargo.warning(w);
    }
    if accel.is_empty() && config.accel == AccelChoice::Manifest && env.get_nonempty(NO_ACCEL_ENV).is_none() && !collected.sources.is_empty() {
        cargo.warning(&format!(
            "no accelerator: `accel` in {} is empty or absent, so none of the {} device source(s) is compiled (write e.g. accel = \"vulkan1.2\", or build with --no-accel to say it on purpose)",
            manifest.path.display(),
            collected.sources.len()
        ));
    }
    let tools = ToolChoices {
        builder: config.builder_tools.clone(),
        manifest: manifest.mcpp.tools.iter().map(|(k, v)| (k.clone(), if v.is_absolute() { v.clone() } else { manifest.dir().join(v) })).collect(),
        manifest_path: manifest.path.clone(),
    };
    let mut actions = Vec::new();
    let mut payloads = Vec::new();
    let mut tool_files = Vec::new();
    let mut path_tools = false;
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
        path_tools |= plan.tools.iter().any(|t| t.source == crate::tool::ToolSource::Path);
        actions.extend(plan.actions);
        payloads.extend(plan.payloads);
    }
    let items = surface::name_payloads(&payloads, "cargo-mcpp").map_err(|e| e.file(&manifest.path))?;
    // The set of sources (and the surface's shape) as a stamp build.rs watches: when
    // `cargo mcpp build` sees a new source that cargo could not (a new file at the package
    // root), the stamp changes and cargo reruns the build script, which regenerates the surface.
    let stamp = variant_dir.join("sources.stamp");
    let stamp_text: String = std::iter::once(format!("module {module_name} {:?}\n", manifest.mcpp.modules))
        .chain(collected.sources.iter().map(|s| format!("{} {}\n", s.rel, s.selected)))
        .collect();
    crate::fingerprint::write_if_changed(&stamp, stamp_text.as_bytes())?;
    let options = RunOptions { state_dir: &variant_dir.join("fingerprints"), jobs: config.jobs, jobserver };
    let report = graph::run(&actions, &options, observer)?;
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
    let include_dirs: Vec<PathBuf> = actions.iter().flat_map(|a| a.include_dirs.iter().cloned()).collect();
    let watched: Vec<PathBuf> = tool_files.into_iter().chain(include_dirs).chain(std::iter::once(stamp)).collect();
    directives(&mut cargo, &manifest, &collected, &report, &watched, &accel, env);
    if path_tools {
        // A tool found on PATH (already warned) depends on PATH.
        cargo.rerun_if_env_changed("PATH");
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
                .file(&manifest.path)
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
