//! The rules: one module per kind of device source, each knowing its compiler's flag
//! spellings. A rule claims file
//! extensions, reads its own entry of the accelerator set, and plans actions; it never runs
//! anything itself: a compiler that is a library is handed to the graph as a step
//! ([`crate::engine::graph::Step`], [`crate::engine::graph::Action::in_process`]), which the graph fingerprints
//! and runs like a program. The registry [`registry`] is the single list the engine dispatches on.

pub mod cxx;
pub mod host;
pub mod launcher;
pub mod link;

pub mod ascend;
pub mod cuda;
pub mod cuda_toolkit;
pub mod external;
pub mod hip;
pub mod options;
pub mod slang;
pub mod spirv;
pub mod sycl;
pub mod wgsl;

use crate::config::accel::{AccelEntry, Backend};
use crate::config::env::Env;
use crate::error::{Error, Result};
use crate::engine::graph::Action;
use crate::engine::layout::{DeviceCache, Variant};
use crate::rules::link::LinkDirective;
use crate::config::manifest::Manifest;
use crate::rules::options::RuleOptionsBox;
use crate::tool::ToolChoices;
use std::path::PathBuf;

/// One device source of the package, classified by [`crate::sources::collect`] (it lives here,
/// with the rules that read it, so the rules never import the classification).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSource {
    /// Absolute path.
    pub path: PathBuf,
    /// Package-root-relative path with `/` separators, as shown in messages.
    pub rel: String,
    /// The extension without the dot (`comp`), from the file name's last `.`.
    pub ext: String,
    /// The index of the rule (in the registry) that claims it.
    pub rule: usize,
    /// The index of the `sources` entry that listed it (for `sources[i]` in messages).
    pub entry: usize,
    /// Whether this build compiles it: its constraint (if any) is covered and its rule's
    /// backend is in the accelerator set.
    pub selected: bool,
    /// The `output` its `sources` entry asks for (`{ glob = "...", output = "ptx" }`), one of
    /// [`Rule::outputs`]; none: the rule's own default (its options table's `output`).
    pub output: Option<String>,
    /// The target environment its `sources` entry sets (`{ glob = "...", target-env =
    /// "vulkan1.0" }`), over the rule's; only for a rule that takes one ([`Rule::takes_target_env`]).
    pub target_env: Option<String>,
}

/// What a rule gets to plan with.
pub struct RuleContext<'a> {
    /// The package manifest.
    pub manifest: &'a Manifest,
    /// This rule's options, `[package.metadata.mcpp.<rule>]`, as validation read them
    /// ([`Rule::read_options`]); taken back as the rule's type by [`RuleContext::options`].
    pub options: &'a RuleOptionsBox,
    /// This rule's entry of the accelerator set.
    pub accel: &'a AccelEntry,
    /// The whole accelerator set of the build (a rule may read another backend's entry, as
    /// HIP on NVIDIA reads the `cuda` entry).
    pub set: &'a crate::config::accel::AccelSet,
    /// The package's device cache: tool decisions, versions and probes, the host toolchain
    /// ([`crate::engine::layout`]).
    pub cache: &'a DeviceCache,
    /// This build's variant of it: where the rule's outputs go ([`Variant::lane_dir`],
    /// [`crate::rules::link::object_path`]).
    pub variant: &'a Variant,
    /// The environment (every read is declared to cargo).
    pub env: &'a Env,
    /// Explicit tool choices.
    pub tools: &'a ToolChoices,
    /// Cargo's facts: target, host, optimisation level, debug info ([`crate::config::cargo_facts`]).
    pub facts: &'a crate::config::cargo_facts::CargoFacts,
    /// The island boundary of the package, when `[package.metadata.mcpp.island]` is declared:
    /// a rule compiling one of its device sources gives the compiler the header as a forced
    /// include on that rule's own command line.
    pub island: Option<&'a crate::surface::island::Boundary>,
    /// Where the accelerator set came from (`--accel`, `MCPP_ACCEL`, the manifest's `accel`):
    /// a refusal of the rule's entry is keyed with it ([`RuleContext::accel_refusal`]).
    pub accel_origin: Option<&'a crate::config::accel::AccelOrigin>,
}

impl RuleContext<'_> {
    /// This rule's options as its own type `T` (what its [`Rule::read_options`] reads).
    ///
    /// # Errors
    /// `T` is not that type (a defect of cargo-mcpp, said so).
    pub fn options<T: std::any::Any>(&self) -> Result<&T> {
        self.options.get()
    }

    /// `e`, a refusal of the accelerator set's entry (made whole), keyed where the set came
    /// from: the manifest (its path and the `accel` key), or a line naming `--accel` /
    /// `MCPP_ACCEL` ([`crate::config::accel::AccelOrigin::key`]).
    pub fn accel_refusal(&self, e: Error) -> Error {
        crate::config::accel::AccelOrigin::key(self.accel_origin, e, Some(&self.manifest.path))
    }

    /// [`RuleContext::accel_refusal`] naming no file when it is the manifest's key.
    pub fn accel_key(&self, e: Error) -> Error {
        crate::config::accel::AccelOrigin::key(self.accel_origin, e, None)
    }
}

/// What a rule planned.
#[derive(Debug, Default)]
pub struct RulePlan {
    /// The actions to run (fingerprinted by the engine): programs to start, or in-process steps
    /// ([`crate::engine::graph::Action::in_process`]).
    pub actions: Vec<Action>,
    /// Payloads for the surface, each with its kind (SPIR-V: [`crate::surface::PayloadKind::Words32`]).
    pub payloads: Vec<crate::surface::Payload>,
    /// Warnings to show (e.g. a tool found on PATH).
    pub warnings: Vec<String>,
    /// Tools the plan runs (their files are watched for changes).
    pub tools: Vec<crate::tool::Tool>,
    /// What the crate links (archives the actions produce, runtimes), in order.
    pub link: Vec<LinkDirective>,
    /// Other files the plan read (a rule's `env-script`): watched for changes.
    pub watch: Vec<std::path::PathBuf>,
}

/// A toolchain package a rule drives, with its version rule (each rule
/// brings its own environment): exact (`"13.0.88"`) where the package is coupled to something
/// the rule cannot see (a CUDA runtime must not be newer than the driver), a floor
/// (`">=11.0"`) where not.
#[derive(Debug, Clone, Copy)]
pub struct ToolchainPackageReq {
    /// The toolchain package name in `toolchain-packages.toml`.
    pub package: &'static str,
    /// `"X.Y.Z"` (exact) or `">=X.Y"` (floor); parsed by
    /// [`crate::toolchain_package::VersionReq::parse`].
    pub version: &'static str,
    /// The tool it provides: when the project names that tool explicitly (manifest `tools`,
    /// the rule's variables, `MCPP_TOOL_<NAME>`), the package is not fetched.
    pub tool: crate::tool::ToolSpec,
    /// Further environment variables that name the tool's installation, beyond its toolkit's
    /// root variables ([`crate::tool::ToolkitSpec::root_vars`], e.g. CUDA's `CUDA_PATH`, which
    /// count already): when one is set, the package is not fetched either.
    pub named_by_env: &'static [&'static str],
}

/// The options of a rule that takes none: an empty table is accepted, any key refused.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoOptions {}

/// One rule.
pub trait Rule: Send + Sync {
    /// Short name used in messages and action ids (`spirv`).
    fn name(&self) -> &'static str;
    /// The backend whose accelerator entry this rule reads.
    fn backend(&self) -> Backend;
    /// The extensions (without dot) this rule claims.
    fn extensions(&self) -> &'static [&'static str];
    /// The tools this rule may run (their names are the valid keys of
    /// `[package.metadata.mcpp.tools]`).
    fn tools(&self) -> &'static [crate::tool::ToolSpec];
    /// Extensions this rule claims only through a `sources` entry constrained to its backend
    /// (`{ glob = "k/*.cpp", accel = "sycl" }`: a `.cpp` is host C++ unless its entry says
    /// otherwise); listed by a plain glob they are refused naming the way. Default: none.
    fn constrained_extensions(&self) -> &'static [&'static str] {
        &[]
    }
    /// Whether this rule claims files with extension `ext`.
    fn claims(&self, ext: &str) -> bool {
        self.extensions().contains(&ext)
    }
    /// Read this rule's options table, `[package.metadata.mcpp.<name>]`, into the rule's own
    /// options type ([`options::read_boxed`] for one that shares the common shapes,
    /// [`options::read_plain`] otherwise): the value as far as the table reads, and every
    /// problem, each a [`crate::ErrorKind::Manifest`] naming `file:line:col`, the key and the
    /// valid keys. Called once per build, for every rule, whether or not the build has sources
    /// of the rule: by [`crate::pipeline::validate`], which refuses the problems and keeps the
    /// value in the validated plan for the rule's other steps ([`RuleContext::options`],
    /// [`RuleOptionsBox::get`]); and by `cargo mcpp fetch`, which only asks
    /// [`Rule::toolchain_packages`]. Default: the rule has no options, so a table of its name is
    /// refused as not understood.
    fn read_options(&self, manifest: &Manifest) -> (RuleOptionsBox, Vec<Error>) {
        options::read_plain::<NoOptions>(manifest, self.name())
    }
    /// Check this rule's entry of the accelerator set beyond the set's grammar (CUDA: a version
    /// names its minor): run by [`crate::pipeline::validate`] for every entry of the rule's
    /// backend, whether or not the package has sources of the rule, before anything runs. The
    /// pipeline makes the error a refusal of the set naming where it came from
    /// ([`crate::config::accel::AccelOrigin`]): its message becomes a detail, its details and
    /// help are kept. Default: every entry is fine.
    ///
    /// # Errors
    /// [`crate::ErrorKind::Accel`]: what is wrong with the entry and the fix.
    fn check_entry(&self, _entry: &AccelEntry) -> Result<()> {
        Ok(())
    }
    /// The keys of this rule's options table, each with its default and meaning: the one list
    /// The guide's "Manifest reference" is generated from (`cargo xtask codegen`,
    /// [`crate::reference`]); a test holds it equal to the keys [`Rule::read_options`]
    /// accepts. Default: none (a rule without options).
    fn option_keys(&self) -> &'static [crate::config::manifest::KeyDoc] {
        &[]
    }
    /// The output kinds a `sources` entry may ask of this rule (`{ glob = "...", output =
    /// "ptx" }`); any other is refused naming the entry. Default: none (one kind of output).
    fn outputs(&self) -> &'static [&'static str] {
        &[]
    }
    /// Whether a `sources` entry may set its files' target environment (`target-env`) and what
    /// it is to this rule, for messages (`"--target-env"`, `"the profile"`); `None` (default):
    /// the rule has one target per build, and an entry's `target-env` is refused naming it.
    fn takes_target_env(&self) -> Option<&'static str> {
        None
    }
    /// The payloads this rule would hand the surface for `sources` (claimed by it, left out of
    /// this build: `--no-accel`, an accelerator set without its backend, a constraint not
    /// covered), each empty ([`crate::surface::Payload::empty`]): the surface keeps its
    /// accessors, so a CPU build and `cargo doc` see the same names. Default: none.
    ///
    /// # Errors
    /// `options` are not the rule's ([`RuleOptionsBox::get`]).
    fn placeholders(&self, _manifest: &Manifest, _options: &RuleOptionsBox, _sources: &[&DeviceSource]) -> Result<Vec<crate::surface::Payload>> {
        Ok(Vec::new())
    }
    /// Check the payloads this rule made once the device phase wrote them, for what only their
    /// bytes tell (the CUDA rule: the PTX ISA version against `driver-floor`). Default: nothing.
    ///
    /// # Errors
    /// A payload the manifest's constraints refuse, naming the key and the way out.
    fn check_payloads(&self, _manifest: &Manifest, _options: &RuleOptionsBox, _payloads: &[&crate::surface::Payload]) -> Result<()> {
        Ok(())
    }
    /// Whether the rule hands the surface a payload for `source` (bytes whose `storage` can be
    /// chosen, [`crate::plan::storage`]), rather than only objects that are linked. Default:
    /// whether it names a placeholder for it ([`Rule::placeholders`]).
    ///
    /// # Errors
    /// `options` are not the rule's ([`RuleOptionsBox::get`]).
    fn makes_payload(&self, manifest: &Manifest, options: &RuleOptionsBox, source: &DeviceSource) -> Result<bool> {
        Ok(!self.placeholders(manifest, options, &[source])?.is_empty())
    }
    /// Plan the actions for `sources` (all claimed by this rule and selected by the build).
    ///
    /// # Errors
    /// A refusal specific to the rule (a stage-less shader, a missing compiler, ...).
    fn plan(&self, ctx: &RuleContext, sources: &[&DeviceSource]) -> Result<RulePlan>;
    /// The backends whose accelerator entries this rule also reads, beside its own (HIP on
    /// NVIDIA compiles for the `cuda` entry of `hip, cuda12.9+{sm_89}`): when the rule has
    /// sources to compile, such an entry is in use, and no "nothing was compiled for it"
    /// warning is given for it. Default: none.
    fn borrows(&self) -> &'static [Backend] {
        &[]
    }
    /// The toolchain packages this rule drives with `options` (they may choose the compiler).
    /// Fetched only when the package has sources of this rule and the accelerator set names its
    /// backend. Default: none.
    ///
    /// # Errors
    /// `options` are not the rule's ([`RuleOptionsBox::get`]).
    fn toolchain_packages(&self, _options: &RuleOptionsBox) -> Result<Vec<ToolchainPackageReq>> {
        Ok(Vec::new())
    }
    /// Whether `launcher` goes before this planned action's compiler ([`crate::rules::launcher`];
    /// applied by [`crate::plan::lanes`] to every action the rule planned that starts a
    /// process). Default: when the launcher handles the compiler
    /// ([`crate::rules::launcher::Launcher::handles`]: C, C++ and CUDA compilers, never a shader
    /// compiler); a rule whose compiler a launcher mishandles in some mode says no here.
    fn launcher_ok(&self, action: &Action, launcher: &crate::rules::launcher::Launcher) -> bool {
        launcher.handles(&action.tool)
    }
}

/// A package-level step: one action over other actions' outputs (every object of a lane),
/// writing one file. SYCL's device link (`-fsycl-link` over every `.sycl` object into
/// `sycl_device_link.o`) and CUDA's (`nvcc -dlink` over the relocatable objects into
/// `device-link.o`) are this shape.
#[derive(Debug, Clone)]
pub struct PackageStep {
    /// Stable action id (`sycl:device-link`).
    pub id: String,
    /// What the progress line shows.
    pub description: String,
    /// The program it runs.
    pub tool: crate::tool::Tool,
    /// Its whole argument list (the consumed files and the output included where the tool wants them).
    pub args: Vec<std::ffi::OsString>,
    /// Working directory (the package root).
    pub cwd: PathBuf,
    /// The files it consumes: other actions' outputs, in order.
    pub consumes: Vec<PathBuf>,
    /// The one file it writes.
    pub output: PathBuf,
    /// What that file must start with (an object of the target).
    pub expect: Option<crate::engine::graph::Expect>,
}

/// The action of a [`PackageStep`]: its inputs are the consumed files and no dependency index is
/// written by the rule; the graph derives the edges from inputs that are other actions' outputs
/// ([`crate::engine::graph::connect_inputs`]), so the step runs after every producer, reruns when one
/// reruns and is skipped when one fails, wherever in the package's plan they are.
pub fn package_step(step: PackageStep) -> Action {
    Action::external(crate::engine::graph::External {
        id: step.id,
        description: step.description,
        role: crate::engine::graph::Role::Object,
        tool: step.tool,
        args: step.args,
        cwd: step.cwd,
        inputs: step.consumes,
        outputs: vec![step.output],
    })
    .with_expect(step.expect)
}

/// The rules of a build: every built-in rule ([`registry`]), then the rules its build script
/// registered ([`external::RegisteredRules::adapt`]).
///
/// # Errors
/// A registered rule whose name or an extension is taken, or of the wrong shape.
pub fn registry_with(registered: &external::RegisteredRules) -> Result<Vec<Box<dyn Rule>>> {
    let mut rules = registry();
    let more = registered.adapt(&rules)?;
    rules.extend(more);
    Ok(rules)
}

/// Every rule of this cargo-mcpp, in dispatch order.
pub fn registry() -> Vec<Box<dyn Rule>> {
    vec![Box::new(spirv::SpirvRule), Box::new(cuda::CudaRule), Box::new(slang::SlangRule), Box::new(hip::HipRule), Box::new(sycl::SyclRule), Box::new(ascend::AscendRule), Box::new(wgsl::WgslRule)]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys a rule's options table accepts, read from its refusal of an unknown key (the
    /// serde list in "expected one of ..."; none for a rule without options).
    fn accepted_keys(rule: &dyn Rule) -> Vec<String> {
        let text = format!("[package]\nname = \"p\"\n[package.metadata.mcpp.{}]\nmcpp-no-such-key = 1\n", rule.name());
        let manifest = Manifest::parse(std::path::Path::new("Cargo.toml"), &text).expect("a manifest");
        let e = Error::all(rule.read_options(&manifest).1).expect_err("an unknown key is refused");
        let message = e.to_string();
        match message.split_once("expected one of ").or_else(|| message.split_once(", expected ")) {
            Some((_, list)) => list.lines().next().unwrap_or_default().split(", ").map(|k| k.trim().trim_matches('`').to_string()).filter(|k| !k.is_empty()).collect(),
            None => Vec::new(),
        }
    }

    #[test]
    fn every_rule_documents_exactly_the_option_keys_it_accepts() {
        for rule in registry() {
            let mut documented: Vec<String> = rule.option_keys().iter().map(|k| k.key.to_string()).collect();
            let mut accepted = accepted_keys(rule.as_ref());
            documented.sort();
            accepted.sort();
            assert_eq!(documented, accepted, "rule {}: option_keys() and the keys its options type accepts differ", rule.name());
        }
    }
}
