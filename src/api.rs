//! The engine's builder of a build script's device phase (cc-rs style `&mut self` setters).
//! Build scripts use `mcpp_build::Build`, whose request (`crate::request`) is applied to this
//! one; it stays public, hidden from the docs, for the old `cargo_mcpp::build()` form and as
//! the tests' way to run a device phase in process and read its [`Outcome`].

use crate::config::env::Env;
use crate::error::{Error, ErrorKind, Result};
use crate::pipeline::{self, Config, Outcome};
use crate::plan::accel::AccelChoice;
use crate::output::report::{DeviceEvent, Reporter};
use crate::config::manifest::{BuilderSetting, SettingKind};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The device phase of a build script, configured (the engine's side of `mcpp_build::Build`).
///
/// Defaults come from the variables cargo gives a build script: `CARGO_MANIFEST_DIR`
/// (the manifest), `OUT_DIR` (generated surface; the device cache sits beside the profile
/// directory, `target/<profile>/mcpp/<package>`), cargo's facts `TARGET`, `HOST`, `PROFILE`,
/// `OPT_LEVEL`, `DEBUG` ([`crate::config::cargo_facts::CargoFacts`]: `OPT_LEVEL` decides device
/// optimisation), `NUM_JOBS` and cargo's jobserver (parallel compilers).
#[derive(Debug, Clone)]
pub struct Build {
    manifest_dir: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    work_dir: Option<PathBuf>,
    accel: AccelChoice,
    release: Option<bool>,
    jobs: Option<usize>,
    env: Env,
    tools: BTreeMap<String, PathBuf>,
    tool_lines: BTreeMap<String, String>,
    settings: Vec<BuilderSetting>,
    rules: crate::rules::external::RegisteredRules,
    plan_edits: crate::plan::edit::PlanEdits,
}

impl Default for Build {
    fn default() -> Self {
        Build::new()
    }
}

impl Build {
    /// A builder with every default (see the type docs).
    pub fn new() -> Build {
        Build {
            manifest_dir: None,
            out_dir: None,
            work_dir: None,
            accel: AccelChoice::Manifest,
            release: None,
            jobs: None,
            env: Env::process(),
            tools: BTreeMap::new(),
            tool_lines: BTreeMap::new(),
            settings: Vec::new(),
            rules: Default::default(),
            plan_edits: Default::default(),
        }
    }
    /// The package directory (default `CARGO_MANIFEST_DIR`).
    pub fn manifest_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Build {
        self.manifest_dir = Some(dir.into());
        self
    }
    /// Where the surface is generated (default `OUT_DIR`).
    pub fn out_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Build {
        self.out_dir = Some(dir.into());
        self
    }
    /// The device cache of this package (default `<profile dir>/mcpp/<package>`).
    pub fn work_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Build {
        self.work_dir = Some(dir.into());
        self
    }
    /// Override the accelerator set (as `cargo mcpp build --accel SPEC`).
    pub fn accel(&mut self, spec: &str) -> &mut Build {
        self.accel = AccelChoice::Spec(spec.to_string());
        self
    }
    /// Build with no accelerator (as `--no-accel`): no device source compiles.
    pub fn no_accel(&mut self) -> &mut Build {
        self.accel = AccelChoice::NoAccel;
        self
    }
    /// Optimise device code (`true`: as `OPT_LEVEL=3`) or not (`false`: as `OPT_LEVEL=0` with
    /// debug info). Default: cargo's `OPT_LEVEL` and `DEBUG`.
    pub fn release(&mut self, release: bool) -> &mut Build {
        self.release = Some(release);
        self
    }
    /// Parallel compilers when cargo's jobserver is absent (default `NUM_JOBS`, else the CPUs).
    pub fn jobs(&mut self, jobs: usize) -> &mut Build {
        self.jobs = Some(jobs);
        self
    }
    /// Name a tool's program explicitly (first in the resolver's order), e.g.
    /// `.tool("glslc", "/opt/shaderc/bin/glslc")`. The calling line is recorded with the
    /// decision (`cargo mcpp why tool glslc` prints it), and the tool's toolchain package is not needed.
    #[track_caller]
    pub fn tool(&mut self, name: &str, path: impl Into<PathBuf>) -> &mut Build {
        let at = std::panic::Location::caller();
        self.tool_at(name, path, format!("{}:{}", at.file(), at.line()))
    }
    /// [`Build::tool`] with the calling line given (`file:line`): a request from
    /// `mcpp_build::Build::tool` names the build.rs line that called it.
    pub(crate) fn tool_at(&mut self, name: &str, path: impl Into<PathBuf>, at: String) -> &mut Build {
        self.tool_lines.insert(name.to_string(), at);
        self.tools.insert(name.to_string(), path.into());
        self
    }
    /// Set an environment variable for this build's view (the process environment is untouched).
    pub fn env(&mut self, name: &str, value: impl Into<std::ffi::OsString>) -> &mut Build {
        self.env.set(name, value);
        self
    }
    /// Hide an environment variable from this build's view.
    pub fn env_remove(&mut self, name: &str) -> &mut Build {
        self.env.remove(name);
        self
    }
    /// A manifest value set by build.rs (`mcpp_build::Build::include`, `define`, `flag`,
    /// `option`, `storage`, `module_name`), with the build.rs line that set it (`file:line`):
    /// merged into the manifest before it is validated, in call order.
    pub(crate) fn setting_at(&mut self, kind: SettingKind, at: String) -> &mut Build {
        self.settings.push(BuilderSetting { kind, at });
        self
    }

    /// Register a rule from outside cargo-mcpp ([`crate::rules::external::DeviceRule`]), after
    /// the built-in ones and those registered before.
    pub fn rule(&mut self, rule: std::sync::Arc<dyn crate::rules::external::DeviceRule>) -> &mut Build {
        self.rules.rules.push(rule);
        self
    }

    /// Edit the planned device actions before they run ([`crate::plan::edit::Plan`]), after the
    /// edits given before.
    pub fn edit_plan(&mut self, edit: crate::plan::edit::PlanEdit) -> &mut Build {
        self.plan_edits.edits.push(edit);
        self
    }

    /// The registered rules and plan edits of `mcpp_build::Build` (with the build.rs line of
    /// each), which cannot travel in the request's text.
    pub(crate) fn extensions(&mut self, rules: crate::rules::external::RegisteredRules, edits: crate::plan::edit::PlanEdits) -> &mut Build {
        self.rules = rules;
        self.plan_edits = edits;
        self
    }

    fn required(&self, name: &str) -> Result<PathBuf> {
        self.env.get_os(name).map(PathBuf::from).ok_or_else(|| {
            Error::new(ErrorKind::Manifest, format!("{name} is not set"))
                .help("cargo_mcpp::build() runs from a build script (cargo sets it); elsewhere set it with Build::manifest_dir / Build::out_dir")
        })
    }

    /// The configuration [`Build::try_compile`] runs with.
    ///
    /// # Errors
    /// When `CARGO_MANIFEST_DIR`/`OUT_DIR` are needed and unset.
    pub fn config(&self) -> Result<Config> {
        let manifest_dir = match &self.manifest_dir {
            Some(d) => d.clone(),
            None => self.required("CARGO_MANIFEST_DIR")?,
        };
        let out_dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => self.required("OUT_DIR")?,
        };
        let manifest_path = manifest_dir.join("Cargo.toml");
        let cache = match &self.work_dir {
            Some(d) => crate::engine::layout::DeviceCache::at(d),
            None => {
                let package = self.env.get("CARGO_PKG_NAME").unwrap_or_else(|| "package".into());
                crate::engine::layout::DeviceCache::from_out_dir(&out_dir, &package)
            }
        };
        let facts = crate::config::cargo_facts::CargoFacts::from_env(&self.env);
        let facts = match self.release {
            Some(release) => facts.with_release(release),
            None => facts,
        };
        let jobs = self.jobs.or_else(|| self.env.get("NUM_JOBS").and_then(|n| n.parse().ok())).unwrap_or_else(default_jobs);
        Ok(Config {
            manifest_path,
            accel: self.accel.clone(),
            cache,
            out_dir: Some(out_dir),
            facts,
            jobs,
            env: self.env.clone(),
            builder_tools: self.tools.clone(),
            builder_tool_lines: self.tool_lines.clone(),
            builder_settings: self.settings.clone(),
            rules: self.rules.clone(),
            plan_edits: self.plan_edits.clone(),
        })
    }

    /// Run the device phase and return what it did, printing nothing.
    ///
    /// # Errors
    /// Any refusal (manifest, accelerator set, sources, missing tool) or compiler failure.
    pub fn try_compile(&self) -> Result<Outcome> {
        self.run(&Reporter::silent())
    }

    /// Run the device phase, sending its progress to `reporter` (the side channel of `cargo
    /// mcpp build`, [`crate::output::report`]), and the outcome: done or failed.
    fn run(&self, reporter: &Reporter) -> Result<Outcome> {
        let result = self.config().and_then(|config| {
            // SAFETY (of the call): cargo's jobserver file descriptors are inherited by this
            // build script and not used by anything else in it.
            let client = if self.env.inherits() { unsafe { jobserver::Client::from_env() } } else { None };
            pipeline::run(&config, reporter, client.as_ref())
        });
        let package = reporter.package().to_string();
        for event in crate::output::report::detail_events(&package, result.as_ref().map(|o| &o.report)) {
            reporter.send(&event);
        }
        reporter.send(&match &result {
            Ok(o) => DeviceEvent::Done {
                package,
                accel: o.accel.to_string(),
                compiled: o.report.ran.len(),
                fresh: o.report.fresh.len(),
                warnings: crate::output::report::warning_count(&o.report.warnings),
            },
            Err(e) => DeviceEvent::Failed { package, exit_code: e.exit_code(), message: e.message.clone() },
        });
        result
    }

    /// Run the device phase and print the cargo directives. On a refusal or failure, print the
    /// error (cargo shows a build script's output when it fails) and exit with status 1,
    /// without a panic backtrace. Under `cargo mcpp build`, progress and the outcome also go
    /// to it ([`crate::output::report`]).
    pub fn compile(&self) {
        let code = self.compile_status();
        if code != 0 {
            std::process::exit(code);
        }
    }

    /// [`Build::compile`] returning the build script's exit status (0 done, 1 failed or
    /// refused, printed) instead of exiting.
    pub(crate) fn compile_status(&self) -> i32 {
        let package = self.env.get("CARGO_PKG_NAME").unwrap_or_else(|| "package".into());
        match self.run(&Reporter::from_env(&self.env, &package)) {
            Ok(outcome) => {
                outcome.cargo.print();
                0
            }
            Err(e) => {
                print_failure(&e);
                1
            }
        }
    }
}

/// Print `error` the way a failing build script should: the whole error on stderr (cargo shows
/// it under `--- stderr`) and its headline as one warning, through
/// [`crate::output::cargo_output::CargoOutput::warning`], the one place that adds the `cargo-mcpp: `
/// prefix (so cargo prints `warning: <pkg>@<ver>: cargo-mcpp: <headline>`, the prefix once).
pub(crate) fn print_failure(error: &Error) {
    eprintln!("\nerror: {error}\n");
    let mut out = crate::output::cargo_output::CargoOutput::default();
    out.warning(&error.message);
    out.print();
}

/// The CPUs of this machine (at least 1).
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// The earlier build.rs form, `fn main() { cargo_mcpp::build(); }` with a cargo-mcpp
/// build-dependency that has the `engine` feature: still runs the device phase in process.
/// New build scripts call `mcpp_build::build()`.
pub fn build() {
    Build::new().compile();
}
