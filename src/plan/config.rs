//! What one device phase is given: the package, the accelerator choice, the device cache, the
//! surface directory, cargo's facts, parallelism, the environment view and the builder's tools.
//! Built by [`crate::Build::config`] (build.rs) and read by [`crate::pipeline::run`].

use crate::config::env::Env;
use crate::engine::layout::DeviceCache;
use crate::plan::accel::AccelChoice;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Everything one device phase needs.
#[derive(Debug, Clone)]
pub struct Config {
    /// The package's `Cargo.toml`.
    pub manifest_path: PathBuf,
    /// The accelerator choice.
    pub accel: AccelChoice,
    /// The package's device cache, `<target>/<profile>/mcpp/<package>` ([`crate::engine::layout`]);
    /// its variants below it.
    pub cache: DeviceCache,
    /// Where surfaces are generated (build.rs's OUT_DIR); `None` runs the actions only.
    pub out_dir: Option<PathBuf>,
    /// Cargo's facts (target, host, optimisation level, debug info), read once by the caller.
    pub facts: crate::config::cargo_facts::CargoFacts,
    /// Parallel compilers when there is no jobserver.
    pub jobs: usize,
    /// The environment view.
    pub env: Env,
    /// Explicit tool paths from the builder.
    pub builder_tools: BTreeMap<String, PathBuf>,
    /// Where each builder tool was named (`build.rs:7`), for the recorded decision.
    pub builder_tool_lines: BTreeMap<String, String>,
    /// The manifest values build.rs set (`mcpp_build::Build::include`, `define`, `flag`,
    /// `option`, `storage`, `module_name`), in call order: merged into the manifest before it
    /// is validated ([`crate::config::manifest::Manifest::parse_with`]).
    pub builder_settings: Vec<crate::config::manifest::BuilderSetting>,
    /// The rules build.rs registered (`mcpp_build::Build::rule`), after the built-in ones.
    pub rules: crate::rules::external::RegisteredRules,
    /// The build script's edits of the planned device actions (`mcpp_build::Build::edit_plan`).
    pub plan_edits: crate::plan::edit::PlanEdits,
}
