//! The one resolver: where a rule's compiler comes from, and its identity (path + reported
//! version). One resolver for every tool of every rule.
//!
//! Order, the same for every rule:
//! 1. the project's explicit choice: the builder's [`crate::Build::tool`], then the manifest's
//!    `[package.metadata.mcpp.tools] <name> = "/path"` (for a toolkit, also the rule's key naming
//!    the root, e.g. `[package.metadata.mcpp.cuda] toolkit`: [`RootChoice`]);
//! 2. the rule's conventional environment variables ([`ToolSpec::env_vars`], e.g. `GLSLC`,
//!    `MCPP_GLSLC`, `NVCC`);
//! 3. the global override `MCPP_TOOL_<NAME>` ([`override_var`]);
//! 4. for a tool that lives in a toolkit ([`ToolSpec::toolkit`]: CUDA, ROCm, oneAPI, CANN), the
//!    toolkit's root variables ([`ToolkitSpec::root_vars`], e.g. `CUDA_PATH`, `CUDA_HOME`), the
//!    program being [`ToolkitSpec::program_in_root`] inside the root;
//! 5. the declared toolchain package ([`ToolSpec::toolchain_package`]), when installed (build.rs
//!    never downloads: a toolchain package declared by the manifest or `mcpp.lock` but not
//!    installed is refused with the exact `cargo mcpp fetch` command);
//! 6. PATH (found with the `which` crate), with a warning saying how to declare it instead.
//!
//! For a toolkit tool the root and the program are two answers of the one order: a program
//! named in steps 1-3 is what runs, and its toolkit is the one it sits in (a named program
//! outside any toolkit, a wrapper, still runs, with the root from the next steps); the root
//! comes from the rule's root key, the named program, the root variables, the toolchain package or
//! the program on PATH, and is accepted only when it holds every [`ToolkitSpec::marker_files`].
//!
//! A stated choice that does not exist is refused, never replaced by a later source (a root
//! variable that names no toolkit too). Every decision (and every refusal) is recorded, with
//! the manifest line, variable or build.rs line that made it (and the toolkit root with what
//! named it), in the device cache's `tool-decisions.json` ([`decisions`]); `cargo mcpp why tool <name>` prints
//! that record. When nothing answers, one refusal lists every way to name the tool, numbered
//! in order.
//!
//! The version is asked of the tool once, within [`PROBE_TIMEOUT`] (a tool that hangs is
//! refused, naming it), and cached by the program file's stat data (path, size, mtime, ctime,
//! inode: the hash cache's key, [`crate::engine::fingerprint`]), so a no-op build starts no compiler
//! process at all, not even `--version`, and a program replaced in place (`cp -p` keeps size
//! and mtime, not ctime) is asked again. A toolchain package's tool runs with its library directories on
//! `LD_LIBRARY_PATH` ([`Tool::env`]), which is part of its identity. Probes and version
//! questions run in [`process`], the one place this module starts a program.

pub mod decisions;
pub mod env_script;
pub(crate) mod launch;
pub mod process;

pub use decisions::{add_reason, read_decisions, record_decision, record_refusal, Decision};
pub use process::{find_on_path, is_executable, probe, probe_cached, PROBE_TIMEOUT};

use crate::config::env::Env;
use crate::error::{Error, ErrorKind, Result};
use crate::engine::layout::DeviceCache;
use crate::toolchain_package::Availability;
use decisions::{record_answer, record_refusal_after};
use process::version_of;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How a tool is found and asked its version.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// The key under `[package.metadata.mcpp.tools]` and for [`crate::Build::tool`].
    pub name: &'static str,
    /// Program names tried in a toolchain package's bin directories and on PATH, in order.
    pub programs: &'static [&'static str],
    /// The rule's conventional environment variables naming the program, in order.
    pub env_vars: &'static [&'static str],
    /// Arguments that make it print its version.
    pub version_args: &'static [&'static str],
    /// How to install it, for the refusal (e.g. `apt install glslang-tools`).
    pub install_hint: &'static str,
    /// The toolchain package (a name in `toolchain-packages.toml`) that provides it, if any. For
    /// a toolkit tool the package's root ([`crate::toolchain_package::Installed::root`]) is the
    /// toolkit root.
    pub toolchain_package: Option<&'static str>,
    /// The toolkit the program lives in, when the rule needs the toolkit's root as well as the
    /// program (headers, runtime libraries): CUDA's nvcc, HIP's hipcc, oneAPI's icpx, CANN's
    /// bisheng. `None` for a tool that stands alone (glslangValidator, clang++).
    pub toolkit: Option<&'static ToolkitSpec>,
}

/// A toolkit's environment for its program, from the toolkit root ([`ToolkitSpec::tool_env`]):
/// (variable, value) pairs.
pub type ToolEnv = fn(&Path) -> Vec<(String, OsString)>;

/// A toolkit: a directory tree holding the program and what the rule compiles against,
/// named by a root variable, installed as a toolchain package, or found around the program. Declared by
/// a rule (e.g. [`crate::rules::cuda_toolkit::CUDA_TOOLKIT`]) and read by the one resolver; a new lane
/// declares one of these instead of writing a resolver.
#[derive(Debug, Clone, Copy)]
pub struct ToolkitSpec {
    /// What it is called in messages: `CUDA toolkit`, `ROCm`, `oneAPI`, `CANN`.
    pub name: &'static str,
    /// The rule's manifest key naming the root, as written in messages
    /// (`[package.metadata.mcpp.cuda] toolkit`); the value comes in a [`RootChoice`].
    pub root_key: Option<&'static str>,
    /// The environment variables naming the root, in order: `CUDA_PATH`, `CUDA_HOME` (CUDA);
    /// `HIP_PATH`, `ROCM_PATH` (ROCm); `ONEAPI_ROOT` (oneAPI); `ASCEND_HOME_PATH` (CANN). A set
    /// one that names no toolkit is refused, not skipped. An entry `VAR/sub/dir` names the root
    /// `$VAR/sub/dir`, for a variable naming an installation the toolkit sits inside: oneAPI's
    /// `ONEAPI_ROOT/compiler/latest` ([`split_root_var`]).
    pub root_vars: &'static [&'static str],
    /// The program's path inside the root, `/`-separated: `bin/nvcc`. A named program whose
    /// real path ends so sits in the root above it.
    pub program_in_root: &'static str,
    /// Files, `/`-separated and relative to the root, that a root must hold to be one:
    /// `include/cuda_runtime.h`.
    pub marker_files: &'static [&'static str],
    /// A directory inside the root that a root variable may name instead of the root itself:
    /// CANN's `x86_64-linux` (`ASCEND_HOME_PATH` is the CANN root for a user, and the
    /// architecture root on bisheng's own processes). A value whose last component is this
    /// and whose parent is a root means that parent. `None`: the variable names the root.
    pub var_may_name_subdir: Option<&'static str>,
    /// The environment the program runs with, from the root (CANN's `ASCEND_HOME_PATH` and
    /// `LD_LIBRARY_PATH`): set on the version probe and on every process of the tool, so the
    /// probe sees what the compiles see. `None`: nothing beyond the resolver's own.
    pub tool_env: Option<ToolEnv>,
}

impl ToolkitSpec {
    /// A toolkit named `name` whose program sits at `program_in_root` inside its root, with
    /// every other field at its default: no manifest key, no root variable, no marker file
    /// (any directory around the program is a root), the variable names the root itself, no
    /// environment of its own. A rule's constant writes the fields it needs and takes the
    /// rest from here (`ToolkitSpec { root_vars: &["CUDA_PATH"], ..ToolkitSpec::new("CUDA
    /// toolkit", "bin/nvcc") }`), so a new field with a default touches this one place.
    pub const fn new(name: &'static str, program_in_root: &'static str) -> ToolkitSpec {
        ToolkitSpec { name, root_key: None, root_vars: &[], program_in_root, marker_files: &[], var_may_name_subdir: None, tool_env: None }
    }

    /// Whether `root` holds every marker file.
    pub fn is_root(&self, root: &Path) -> bool {
        self.marker_files.iter().all(|m| root.join(m).is_file())
    }
    /// The first marker file `root` lacks, for messages (`include/cuda_runtime.h`).
    pub fn missing_marker(&self, root: &Path) -> Option<&'static str> {
        self.marker_files.iter().copied().find(|m| !root.join(m).is_file())
    }
    /// The program inside `root` ([`ToolkitSpec::program_in_root`]).
    pub fn program(&self, root: &Path) -> PathBuf {
        root.join(self.program_in_root)
    }
    /// The root `program` sits in: its real path (symlinks resolved) with
    /// [`ToolkitSpec::program_in_root`]'s directories taken off, when that is a root.
    pub fn root_around(&self, program: &Path) -> Option<PathBuf> {
        let real = std::fs::canonicalize(program).ok()?;
        let mut root = real.as_path();
        for _ in 0..Path::new(self.program_in_root).components().count() {
            root = root.parent()?;
        }
        self.is_root(root).then(|| root.to_path_buf())
    }
}

/// A [`ToolkitSpec::root_vars`] entry as (the variable, the root's path below its value):
/// `("CUDA_PATH", "")`, `("ONEAPI_ROOT", "compiler/latest")`.
pub fn split_root_var(entry: &str) -> (&str, &str) {
    entry.split_once('/').unwrap_or((entry, ""))
}

/// The project's explicit toolkit root (step 1 of the order, for a [`ToolkitSpec`] with a
/// [`ToolkitSpec::root_key`]): read by the rule from its options and handed to
/// [`resolve_toolkit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootChoice {
    /// The root, absolute (made so against the package root by the rule).
    pub root: PathBuf,
    /// The manifest file.
    pub manifest: PathBuf,
    /// The line of the key, when known.
    pub line: Option<usize>,
    /// The key as a dotted path, for refusals (`package.metadata.mcpp.cuda.toolkit`).
    pub key: String,
}

/// A resolved toolkit root and what named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolkitRoot {
    /// The root directory.
    pub root: PathBuf,
    /// What named it, short, for messages: `CUDA_PATH`, `[package.metadata.mcpp.cuda] toolkit`,
    /// `toolchain package cuda-nvcc 13.0.88 (...)`, `PATH`, or the origin of the named program.
    pub found_by: String,
    /// What named it, with its value or line, as recorded for `why tool`.
    pub origin: String,
}

/// `MCPP_TOOL_<NAME>`: the global override variable of a tool (name upper-cased, every
/// character other than a letter or digit replaced by `_`), e.g. `MCPP_TOOL_GLSLANGVALIDATOR`.
pub fn override_var(name: &str) -> String {
    // `++` reads as `XX`, as in CXX: `clang++` -> MCPP_TOOL_CLANGXX, `c++` -> MCPP_TOOL_CXX.
    let upper: String = name.replace("++", "XX").chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    format!("MCPP_TOOL_{upper}")
}

/// Where a resolved tool came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolSource {
    /// `.tool(name, path)` on the build.rs builder.
    Builder,
    /// `[package.metadata.mcpp.tools] <name> = "..."` in the manifest.
    Manifest(PathBuf),
    /// Another manifest key that names the program or where it is, e.g.
    /// `[package.metadata.mcpp.cuda] ccbin`.
    ManifestKey {
        /// The manifest.
        manifest: PathBuf,
        /// The table and key as written: `[package.metadata.mcpp.cuda] ccbin`.
        key: String,
    },
    /// One of the rule's environment variables.
    Env(String),
    /// The global override `MCPP_TOOL_<NAME>`.
    Override(String),
    /// An installed toolchain package.
    ToolchainPackage {
        /// Toolchain package name.
        name: String,
        /// Its version.
        version: String,
    },
    /// Found on PATH (warned).
    Path,
    /// The program inside a toolkit root named by a root variable ([`ToolkitSpec::root_vars`]).
    Root {
        /// The variable, e.g. `CUDA_PATH`.
        var: String,
        /// The root it names.
        root: PathBuf,
    },
    /// Derived from another decision: the `cc` crate's host compiler and archiver, a compiler
    /// wrapper (the text says which).
    Derived(String),
}

impl ToolSource {
    /// The class shown by `why tool`: `choice`, `env`, `override`, `root`, `toolchain-package`, `path`,
    /// `derived`.
    pub fn class(&self) -> &'static str {
        match self {
            ToolSource::Builder | ToolSource::Manifest(_) | ToolSource::ManifestKey { .. } => "choice",
            ToolSource::Env(_) => "env",
            ToolSource::Override(_) => "override",
            ToolSource::Root { .. } => "root",
            ToolSource::ToolchainPackage { .. } => "toolchain-package",
            ToolSource::Path => "path",
            ToolSource::Derived(_) => "derived",
        }
    }
}

impl std::fmt::Display for ToolSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolSource::Builder => write!(f, "the build.rs builder (`Build::tool`)"),
            ToolSource::Manifest(p) => write!(f, "{} [package.metadata.mcpp.tools]", crate::text::echo_path(p)),
            ToolSource::ManifestKey { manifest, key } => write!(f, "{} {key}", crate::text::echo_path(manifest)),
            ToolSource::Env(v) => write!(f, "the environment variable {v}"),
            ToolSource::Override(v) => write!(f, "the global override {v}"),
            ToolSource::ToolchainPackage { name, version } => write!(f, "the toolchain package {name} {version}"),
            ToolSource::Root { var, root } => write!(f, "the toolkit root {var}={}", crate::text::echo_path(root)),
            ToolSource::Derived(how) => write!(f, "{how}"),
            ToolSource::Path => write!(f, "PATH"),
        }
    }
}

/// A resolved tool: what runs, and the identity every action that runs it is keyed on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    /// The key name (e.g. `glslangValidator`).
    pub name: String,
    /// Absolute path of the program.
    pub path: PathBuf,
    /// What the program printed for its version (whole text, trimmed); see [`Tool::version_line`].
    pub version: String,
    /// Where it came from.
    pub source: ToolSource,
    /// Variables set for every run of the program (a toolchain package's `LD_LIBRARY_PATH`); empty
    /// otherwise.
    pub env: Vec<(String, OsString)>,
    /// The toolchain package's root directory when the tool comes from one (for include and
    /// library directories a rule derives from it).
    pub toolchain_package_root: Option<PathBuf>,
    /// The compiler launcher this tool is started through (`<launcher> <path> <args>`:
    /// sccache, ccache; [`crate::rules::launcher`]), set on a planned action by [`crate::plan::lanes`]
    /// where the rule takes it ([`crate::rules::Rule::launcher_ok`]). Never part of
    /// [`Tool::identity`]: switching the launcher on or off rebuilds nothing that is fresh.
    pub launcher: Option<PathBuf>,
}

impl Tool {
    /// The first line of the version text, for messages.
    pub fn version_line(&self) -> &str {
        // The line that names the version: nvcc prints its name first and
        // `Cuda compilation tools, release 13.0, V13.0.88` last; glslang and clang say `version`.
        let lines = || self.version.lines().map(str::trim).filter(|l| !l.is_empty());
        lines()
            .find(|l| {
                let lower = l.to_ascii_lowercase();
                lower.contains("version") || lower.contains("release")
            })
            .or_else(|| lines().next())
            .unwrap_or("")
    }
    /// The identity string that enters every fingerprint of an action running this tool:
    /// path, version text and the variables it runs with.
    pub fn identity(&self) -> String {
        let mut s = format!("{}\0{}", self.path.display(), self.version);
        for (k, v) in &self.env {
            s.push_str(&format!("\0{k}={}", v.to_string_lossy()));
        }
        s
    }
    /// Apply [`Tool::env`] to a command that runs this tool.
    pub fn apply_env(&self, cmd: &mut Command) {
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
    }
}

/// Everything the resolver consults besides the environment: explicit choices (the
/// builder's, the manifest's) and the toolchain packages this build declared.
#[derive(Debug, Clone, Default)]
pub struct ToolChoices {
    /// From [`crate::Build::tool`].
    pub builder: BTreeMap<String, PathBuf>,
    /// Where each builder choice was made (`build.rs:7`), from `#[track_caller]`.
    pub builder_lines: BTreeMap<String, String>,
    /// From `[package.metadata.mcpp.tools]`, already made absolute against the package root.
    pub manifest: BTreeMap<String, PathBuf>,
    /// The line of each `[package.metadata.mcpp.tools]` key.
    pub manifest_lines: BTreeMap<String, usize>,
    /// The manifest file (for messages).
    pub manifest_path: PathBuf,
    /// The toolchain packages this build uses (after both gates), and whether each is installed.
    pub toolchain_packages: BTreeMap<String, Availability>,
    /// The exact command that installs this build's toolchain packages (`cargo mcpp fetch --manifest-path ...`).
    pub fetch_command: String,
}

/// Take `path` as `spec`'s program, decided elsewhere (`source`, with `origin` saying where:
/// the line or variable), check that it runs, and record the decision for `cargo mcpp why
/// tool` exactly as [`resolve`] does. For the host tools the `cc` crate chose and nvcc's host
/// compiler (`-ccbin`), whose order is the `cc` crate's.
///
/// # Errors
/// [`ErrorKind::ToolNotFound`] when `path` does not exist, is not executable, does not run or
/// does not answer its version within [`PROBE_TIMEOUT`]; the refusal is recorded too.
pub fn resolve_at(spec: &ToolSpec, path: &Path, source: ToolSource, origin: &str, env: &Env, cache: &DeviceCache) -> Result<Tool> {
    let empty = ToolChoices::default();
    let found = (|| {
        let path = if is_bare(path) {
            find_on_path(&path.to_string_lossy(), env)
                .ok_or_else(|| refusal(spec, &empty, format!("{} cannot be used: {source} names `{}`, which is not on PATH", spec.name, crate::text::echo_path(path))))?
        } else {
            path.to_path_buf()
        };
        check_named(spec, &empty, &path, &source, origin)?;
        let version = version_of(spec, &path, &[], cache, PROBE_TIMEOUT).map_err(|e| e.detail(format!("  (named at {origin})")))?;
        Ok(Tool { name: spec.name.to_string(), path, version, source: source.clone(), env: Vec::new(), toolchain_package_root: None, launcher: None })
    })();
    record_named(spec, found, origin, cache)
}

/// Record the decision about a program named by `origin` (`found`: the tool or its refusal) for
/// `cargo mcpp why tool`, and return it.
fn record_named(spec: &ToolSpec, found: Result<Tool>, origin: &str, cache: &DeviceCache) -> Result<Tool> {
    match found {
        Ok(tool) => {
            record_answer(&tool, origin.to_string(), Vec::new(), None, None, cache)?;
            Ok(tool)
        }
        Err(e) => {
            record_refusal(spec, &e, cache);
            Err(e)
        }
    }
}

/// Take `path` as `spec`'s program with the identity `version` known already (a toolchain
/// package's compiler, identified by the package's name, version and archives, not by asking
/// it), check that it is an executable file, and record the decision for `cargo mcpp why tool`
/// as [`resolve_at`] does.
///
/// # Errors
/// [`ErrorKind::ToolNotFound`] when `path` does not exist or is not executable; recorded too.
pub fn resolve_known(spec: &ToolSpec, path: &Path, version: String, source: ToolSource, origin: &str, cache: &DeviceCache) -> Result<Tool> {
    let found = check_named(spec, &ToolChoices::default(), path, &source, origin)
        .map(|()| Tool { name: spec.name.to_string(), path: path.to_path_buf(), version, source: source.clone(), env: Vec::new(), toolchain_package_root: None, launcher: None });
    record_named(spec, found, origin, cache)
}

/// Resolve `spec` in the order of the module docs; the version comes from the cache in
/// `cache` when the program file is unchanged. Records the decision (or the refusal) in
/// `cache`. Returns the tool and, for a PATH answer, the warning to show. For a toolkit
/// tool this is [`resolve_toolkit`] without a root key, the root left out.
///
/// # Errors
/// [`ErrorKind::ToolNotFound`] when no source answers, a named path does not exist or does
/// not run, or the version is not answered within [`PROBE_TIMEOUT`] (the text lists every way
/// to name the tool); [`ErrorKind::Manifest`] when the toolchain package is declared but not installed
/// (naming the `cargo mcpp fetch` command) or does not match `mcpp.lock`.
pub fn resolve(spec: &ToolSpec, choices: &ToolChoices, env: &Env, cache: &DeviceCache) -> Result<(Tool, Option<String>)> {
    let r = resolve_toolkit(spec, choices, None, env, cache)?;
    Ok((r.tool, r.warning))
}

/// What [`resolve_toolkit`] answers.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The program and its identity.
    pub tool: Tool,
    /// The PATH warning, when PATH answered.
    pub warning: Option<String>,
    /// The toolkit root, for a tool with a [`ToolSpec::toolkit`]; `None` otherwise.
    pub toolkit: Option<ToolkitRoot>,
}

/// Resolve `spec` and, when it lives in a toolkit, its toolkit root, in the one order of the
/// module docs (`root` is the rule's explicit root, e.g. `[package.metadata.mcpp.cuda]
/// toolkit`). Records the decision, with the root and what named it, for `cargo mcpp why tool`.
///
/// # Errors
/// As [`resolve`]; also [`ErrorKind::ToolNotFound`] when the root key or a set root variable
/// names a directory without the toolkit's marker files (refused with the key or variable, not
/// skipped), and when a toolkit answers without its program.
pub fn resolve_toolkit(spec: &ToolSpec, choices: &ToolChoices, root: Option<&RootChoice>, env: &Env, cache: &DeviceCache) -> Result<Resolved> {
    resolve_toolkit_with(spec, choices, root, None, env, cache)
}

/// [`resolve_toolkit`] with the environment a rule's `env-script` set ([`env_script`]): the
/// toolkit is looked for with the script's variables on top of `env` (a root variable it sets
/// names the toolkit; a program on the PATH it sets counts as declared, named by the script's
/// key, not warned), and the tool runs with them ([`Tool::env`]; the toolkit's own
/// [`ToolkitSpec::tool_env`] and a toolchain package's variables win over the script's).
///
/// # Errors
/// As [`resolve_toolkit`].
pub fn resolve_toolkit_with(spec: &ToolSpec, choices: &ToolChoices, root: Option<&RootChoice>, script: Option<&env_script::ScriptEnv>, env: &Env, cache: &DeviceCache) -> Result<Resolved> {
    let overlay = script.map(|s| s.overlay(env));
    let mut considered = Vec::new();
    let outcome = find(spec, choices, root, overlay.as_ref().unwrap_or(env), true, &mut considered);
    if let (Some(s), Some(o)) = (script, &overlay) {
        // What the search read of the build's own environment is an input of the build.
        for name in o.reads().iter().filter(|n| !s.sets(n)) {
            env.record_read(name);
        }
    }
    let result = outcome.and_then(|mut found| {
        if let Some(s) = script {
            from_script(&mut found, s);
        }
        // The toolkit's own environment for its program, on the probe as on the compiles.
        if let (Some(f), Some(t)) = (spec.toolkit.and_then(|k| k.tool_env), &found.toolkit) {
            let own = f(&t.root);
            found.env.retain(|(k, _)| !own.iter().any(|(o, _)| o == k));
            found.env.extend(own);
        }
        let version = version_of(spec, &found.path, &found.env, cache, PROBE_TIMEOUT).map_err(|e| e.detail(format!("  (named at {})", found.origin)))?;
        Ok((found, version))
    });
    match result {
        Ok((found, version)) => {
            let tool = Tool { name: spec.name.to_string(), path: found.path, version, source: found.source, env: found.env, toolchain_package_root: found.toolchain_package_root, launcher: None };
            record_answer(&tool, found.origin, considered, found.warning.clone(), found.toolkit.as_ref(), cache)?;
            Ok(Resolved { tool, warning: found.warning, toolkit: found.toolkit })
        }
        Err(e) => {
            record_refusal_after(spec, &e, considered, cache);
            Err(e)
        }
    }
}

/// The toolkit root of `spec` alone, in the same order as [`resolve_toolkit`], without running
/// or requiring the program and without recording a decision: for a rule that compiles against
/// the toolkit with another program (CUDA's clang route, `--cuda-path`). Returns the root and,
/// when PATH answered, the warning.
///
/// # Errors
/// As [`resolve_toolkit`]; [`ErrorKind::ToolNotFound`] also when `spec` declares no toolkit (a
/// defect of the rule).
pub fn find_toolkit_root(spec: &ToolSpec, choices: &ToolChoices, root: Option<&RootChoice>, env: &Env) -> Result<(ToolkitRoot, Option<String>)> {
    let mut considered = Vec::new();
    let found = find(spec, choices, root, env, false, &mut considered)?;
    match found.toolkit {
        Some(t) => Ok((t, found.warning)),
        None => Err(Error::new(ErrorKind::ToolNotFound, format!("the tool {} declares no toolkit", spec.name)).help("this is a defect of cargo-mcpp; report it")),
    }
}

/// The script's part in a found tool: its variables first on the tool's environment (what the
/// resolver set wins), and, where the script named the tool (the PATH it set, a root variable
/// it set), the origin saying so.
fn from_script(found: &mut Found, s: &env_script::ScriptEnv) {
    let own: Vec<(String, OsString)> = std::mem::take(&mut found.env);
    found.env = s.vars.iter().filter(|(k, _)| !own.iter().any(|(o, _)| o == k)).cloned().collect();
    found.env.extend(own);
    if found.source == ToolSource::Path && s.sets("PATH") {
        // The manifest named the script, and the script the PATH: a declaration, not a guess.
        found.source = ToolSource::ManifestKey { manifest: s.manifest.clone(), key: s.shown_key.clone() };
        found.origin = format!("PATH set by {} ({})", s.origin, crate::text::echo_path(&found.path));
        found.warning = None;
        if let Some(t) = found.toolkit.as_mut().filter(|t| t.found_by == "PATH") {
            t.found_by = s.shown_key.clone();
            t.origin = found.origin.clone();
        }
        return;
    }
    if let ToolSource::Root { var, .. } = &found.source {
        if s.sets(var) {
            found.origin = format!("{} (set by {})", found.origin, s.origin);
        }
    }
    if let Some(t) = found.toolkit.as_mut().filter(|t| s.sets(&t.found_by)) {
        t.origin = format!("{} (set by {})", t.origin, s.origin);
    }
}

struct Found {
    path: PathBuf,
    source: ToolSource,
    origin: String,
    env: Vec<(String, OsString)>,
    toolchain_package_root: Option<PathBuf>,
    warning: Option<String>,
    toolkit: Option<ToolkitRoot>,
}

/// A program name without a directory (`nvcc`), looked up on PATH.
fn is_bare(p: &Path) -> bool {
    p.is_relative() && p.components().count() == 1
}

/// What is wrong with `path` as a program a project names: `which does not exist`, `which is
/// not an executable file`, or `None` when it can run. Shared by the resolver and
/// [`crate::pipeline::validate`] (the manifest's `tools` table, checked before anything runs).
pub fn named_program_problem(path: &Path) -> Option<&'static str> {
    if !path.exists() {
        Some("which does not exist")
    } else if !is_executable(path) {
        Some("which is not an executable file")
    } else {
        None
    }
}

/// Refuse a named program that does not exist or is not executable.
fn check_named(spec: &ToolSpec, choices: &ToolChoices, path: &Path, source: &ToolSource, origin: &str) -> Result<()> {
    let Some(problem) = named_program_problem(path) else { return Ok(()) };
    Err(refusal(spec, choices, format!("{} cannot be used: {source} names `{}`, {problem}", spec.name, crate::text::echo_path(path))).detail(format!("  (named at {origin})")))
}

/// Steps 1-3: the program the project names (explicit choice, the rule's variables, the
/// global override), checked; `None` when none names it.
fn find_named(spec: &ToolSpec, choices: &ToolChoices, env: &Env, considered: &mut Vec<String>) -> Result<Option<Found>> {
    let named = |path: PathBuf, source: ToolSource, origin: String| -> Result<Option<Found>> {
        let path = if is_bare(&path) { find_on_path(&path.to_string_lossy(), env).unwrap_or(path) } else { path };
        check_named(spec, choices, &path, &source, &origin)?;
        // Absolute, but symlinks kept: `clang++-19` must not become `clang` (another driver mode).
        let path = std::path::absolute(&path).unwrap_or(path);
        Ok(Some(Found { path, source, origin, env: Vec::new(), toolchain_package_root: None, warning: None, toolkit: None }))
    };
    // 1. The explicit choice.
    if let Some(p) = choices.builder.get(spec.name) {
        let at = choices.builder_lines.get(spec.name).cloned().unwrap_or_else(|| "build.rs".into());
        return named(p.clone(), ToolSource::Builder, format!("{at} Build::tool(\"{}\", \"{}\")", spec.name, crate::text::echo_path(p)));
    }
    considered.push(format!("build.rs Build::tool(\"{}\", ..) (not called)", spec.name));
    if let Some(p) = choices.manifest.get(spec.name) {
        let line = choices.manifest_lines.get(spec.name).map(|l| format!(":{l}")).unwrap_or_default();
        return named(p.clone(), ToolSource::Manifest(choices.manifest_path.clone()), format!("{}{line} [package.metadata.mcpp.tools] {} = \"{}\"", crate::text::echo_path(&choices.manifest_path), spec.name, crate::text::echo_path(p)));
    }
    considered.push(format!("[package.metadata.mcpp.tools] {} (not in {})", spec.name, crate::text::echo_path(&choices.manifest_path)));
    // 2. The rule's variables.
    for var in spec.env_vars {
        if let Some(v) = env.get_nonempty(var) {
            return named(PathBuf::from(&v), ToolSource::Env(var.to_string()), format!("the environment variable {var}={}", crate::text::echo_path(Path::new(&v))));
        }
        considered.push(format!("{var} (unset)"));
    }
    // 3. The global override.
    let ovr = override_var(spec.name);
    if let Some(v) = env.get_nonempty(&ovr) {
        return named(PathBuf::from(&v), ToolSource::Override(ovr.clone()), format!("the environment variable {ovr}={}", crate::text::echo_path(Path::new(&v))));
    }
    considered.push(format!("{ovr} (unset)"));
    Ok(None)
}

/// `LD_LIBRARY_PATH` for a toolchain package's programs: its existing library directories.
fn package_env(lib_dirs: &[PathBuf]) -> Vec<(String, OsString)> {
    let dirs: Vec<&PathBuf> = lib_dirs.iter().filter(|d| d.is_dir()).collect();
    if dirs.is_empty() {
        return Vec::new();
    }
    vec![("LD_LIBRARY_PATH".to_string(), std::env::join_paths(dirs).unwrap_or_default())]
}

/// The refusal of a toolchain package that is declared (a pin, `mcpp.lock`) but not installed.
fn declared_not_installed(spec: &ToolSpec, p: &str, version: &str, by: &str, choices: &ToolChoices) -> Error {
    Error::new(ErrorKind::Manifest, format!("{} needs the toolchain package {p} {version}, which is declared ({by}) but not installed", spec.name))
        .detail("build.rs never downloads; toolchain packages are installed by `cargo mcpp fetch` (and by `cargo mcpp build` before it starts cargo)")
        .help(format!("run `{}`", choices.fetch_command))
}

/// The refusal when nothing answered: the headline, every way, and what was consulted.
fn nothing_answered(spec: &ToolSpec, choices: &ToolChoices, considered: &[String]) -> Error {
    let headline = match spec.toolkit {
        Some(kit) => format!("no {} found (for {})", kit.name, spec.name),
        None => format!("no {} found", spec.name),
    };
    consulted(refusal(spec, choices, headline), considered)
}

fn consulted(mut e: Error, considered: &[String]) -> Error {
    e = e.detail("consulted:");
    for c in considered {
        e = e.detail(format!("  {c}"));
    }
    e
}

fn find(spec: &ToolSpec, choices: &ToolChoices, root: Option<&RootChoice>, env: &Env, need_program: bool, considered: &mut Vec<String>) -> Result<Found> {
    let named = find_named(spec, choices, env, considered)?;
    if let Some(kit) = spec.toolkit {
        return find_in_toolkit(&KitSearch { spec, kit, choices, env, need_program }, root, named, considered);
    }
    if let Some(found) = named {
        return Ok(found);
    }
    let ovr = override_var(spec.name);
    // 5. The declared toolchain package.
    if let Some(p) = spec.toolchain_package {
        match choices.toolchain_packages.get(p) {
            Some(Availability::Ready { installed, lib_dirs, why }) => {
                let program = spec.programs.iter().find_map(|prog| installed.bin_dirs.iter().map(|d| d.join(prog)).find(|c| is_executable(c)));
                let Some(path) = program else {
                    return Err(Error::new(ErrorKind::ToolNotFound, format!("toolchain package {p} {} has no {} in {}", installed.version, spec.programs.join(" or "), crate::text::echo_path(&installed.root)))
                        .help("its layout differs from toolchain-packages.toml; name the tool instead: [package.metadata.mcpp.tools]"));
                };
                return Ok(Found {
                    path,
                    source: ToolSource::ToolchainPackage { name: p.to_string(), version: installed.version.clone() },
                    origin: format!("toolchain package {p} {} ({why}), installed in {}", installed.version, crate::text::echo_path(&installed.dir)),
                    env: package_env(lib_dirs),
                    toolchain_package_root: Some(installed.root.clone()),
                    warning: None,
                    toolkit: None,
                });
            }
            Some(Availability::Missing { version, declared_by: Some(by), .. }) => return Err(declared_not_installed(spec, p, version, by, choices)),
            Some(Availability::Missing { version, declared_by: None, .. }) => {
                considered.push(format!("toolchain package {p} {version} (not installed; `{}` installs it)", choices.fetch_command));
            }
            Some(Availability::Refused(e)) => return Err(e.clone()),
            None => considered.push(format!("toolchain package {p} (not used by this build)")),
        }
    }
    // 6. PATH.
    if let Some(path) = spec.programs.iter().find_map(|prog| find_on_path(prog, env)) {
        let mut w = format!(
            "{} was found on PATH ({}); declare it instead: [package.metadata.mcpp.tools] {} = \"{}\" or {}=...",
            spec.name,
            path.display(),
            spec.name,
            path.display(),
            spec.env_vars.first().copied().unwrap_or(ovr.as_str())
        );
        if let Some(p) = spec.toolchain_package {
            w.push_str(&format!(", or install the toolchain package {p} with `{}`", choices.fetch_command));
        }
        // Absolute, but symlinks kept: `clang++-19` must not become `clang` (another driver mode).
        let path = std::path::absolute(&path).unwrap_or(path);
        return Ok(Found { origin: format!("PATH ({})", crate::text::echo_path(&path)), path, source: ToolSource::Path, env: Vec::new(), toolchain_package_root: None, warning: Some(w), toolkit: None });
    }
    considered.push(format!("PATH (no {})", spec.programs.join(", ")));
    Err(nothing_answered(spec, choices, considered))
}

/// What the toolkit steps share: the tool, its toolkit, the choices and whether the program
/// must be there (the clang route of CUDA asks for the root alone).
struct KitSearch<'a> {
    spec: &'a ToolSpec,
    kit: &'a ToolkitSpec,
    choices: &'a ToolChoices,
    env: &'a Env,
    need_program: bool,
}

/// The toolkit steps: the root from the root key, the named program's location, the root
/// variables, the toolchain package, PATH; the program is the named one, else the root's own.
fn find_in_toolkit(search: &KitSearch, root_choice: Option<&RootChoice>, named: Option<Found>, considered: &mut Vec<String>) -> Result<Found> {
    // 1. The rule's root key.
    if let Some(c) = root_choice {
        return from_root_key(search, c, named, considered);
    }
    if let Some(k) = search.kit.root_key {
        considered.push(format!("{k} (not set)"));
    }
    // The root the named program sits in; a named program outside any (a wrapper) still runs.
    let mut named = match named {
        Some(n) => match search.kit.root_around(&n.path) {
            Some(root) => {
                let toolkit = ToolkitRoot { found_by: n.origin.clone(), origin: format!("the root {} sits in ({})", crate::text::echo_path(&n.path), n.origin), root };
                return Ok(Found { toolkit: Some(toolkit), ..n });
            }
            None => {
                considered.push(format!("{} `{}` ({}) is not inside a {} root; the root comes from the next ways", search.spec.name, crate::text::echo_path(&n.path), n.origin, search.kit.name));
                Some(n)
            }
        },
        None => None,
    };
    // 4. The root variables, 5. the declared toolchain package, 6. the program on PATH.
    if let Some(found) = from_root_vars(search, &mut named, considered)? {
        return Ok(found);
    }
    if let Some(found) = from_toolchain_package(search, &mut named, considered)? {
        return Ok(found);
    }
    if let Some(found) = from_path(search, &mut named, considered)? {
        return Ok(found);
    }
    Err(nothing_answered(search.spec, search.choices, considered))
}

/// The program for a found root: the named one (with the root added), else the root's own
/// ([`ToolkitSpec::program`]), which must be executable when the program is needed.
fn in_root(search: &KitSearch, named: Option<Found>, toolkit: ToolkitRoot, source: ToolSource, env_vars: Vec<(String, OsString)>, toolchain_package_root: Option<PathBuf>, considered: &[String]) -> Result<Found> {
    if let Some(n) = named {
        return Ok(Found { toolkit: Some(toolkit), ..n });
    }
    let (spec, kit) = (search.spec, search.kit);
    let path = kit.program(&toolkit.root);
    if search.need_program && !is_executable(&path) {
        let e = refusal(spec, search.choices, format!("{} cannot be used: the {} at `{}` ({}) has no executable {}", spec.name, kit.name, crate::text::echo_path(&toolkit.root), toolkit.origin, kit.program_in_root));
        return Err(consulted(e, considered));
    }
    Ok(Found { path, source, origin: toolkit.origin.clone(), env: env_vars, toolchain_package_root, warning: None, toolkit: Some(toolkit) })
}

/// Step 1 for the root: the rule's root key (`[package.metadata.mcpp.cuda] toolkit`), refused
/// when it names no toolkit.
fn from_root_key(search: &KitSearch, c: &RootChoice, named: Option<Found>, considered: &[String]) -> Result<Found> {
    let kit = search.kit;
    let key_text = kit.root_key.map(str::to_string).unwrap_or_else(|| c.key.clone());
    let line = c.line.map(|l| format!(":{l}")).unwrap_or_default();
    let origin = format!("{}{line} {key_text} = \"{}\"", crate::text::echo_path(&c.manifest), crate::text::echo_path(&c.root));
    if let Some(m) = kit.missing_marker(&c.root) {
        let e = refusal(search.spec, search.choices, format!("the {} cannot be used: {key_text} names `{}`, which has no {m}", kit.name, crate::text::echo_path(&c.root)));
        // `file:line` of the key, as every manifest refusal names it.
        let at = match c.line {
            Some(l) => PathBuf::from(format!("{}:{l}", c.manifest.display())),
            None => c.manifest.clone(),
        };
        return Err(e.file(at).key(c.key.clone()).detail(format!("  (named at {origin})")));
    }
    let source = ToolSource::ManifestKey { manifest: c.manifest.clone(), key: key_text.clone() };
    in_root(search, named, ToolkitRoot { root: c.root.clone(), found_by: key_text, origin }, source, Vec::new(), None, considered)
}

/// Step 4: the root variables (`CUDA_PATH`, `CUDA_HOME`); a set one that names no toolkit is
/// refused, not skipped. `None` when none is set.
fn from_root_vars(search: &KitSearch, named: &mut Option<Found>, considered: &mut Vec<String>) -> Result<Option<Found>> {
    let kit = search.kit;
    for entry in kit.root_vars {
        let (var, below) = split_root_var(entry);
        let Some(v) = search.env.get_nonempty(var) else {
            considered.push(format!("{var} (unset)"));
            continue;
        };
        let given = std::path::absolute(&v).unwrap_or_else(|_| PathBuf::from(&v));
        let root = if below.is_empty() { given } else { given.join(below) };
        // A value naming the root's `var_may_name_subdir` (CANN's `<arch>-linux`) means its parent.
        let root = match (kit.var_may_name_subdir, root.parent()) {
            (Some(sub), Some(parent)) if below.is_empty() && !kit.is_root(&root) && root.file_name().is_some_and(|n| n == sub) && kit.is_root(parent) => parent.to_path_buf(),
            _ => root,
        };
        if let Some(m) = kit.missing_marker(&root) {
            let m = if below.is_empty() { m.to_string() } else { format!("{below}/{m}") };
            let e = refusal(search.spec, search.choices, format!("the {} cannot be used: {var}=`{}` has no {m}", kit.name, crate::text::echo_path(Path::new(&v))));
            return Err(consulted(e, considered).key(var.to_string()));
        }
        let toolkit = ToolkitRoot { root: root.clone(), found_by: var.to_string(), origin: format!("the environment variable {var}={}", crate::text::echo_path(Path::new(&v))) };
        return in_root(search, named.take(), toolkit, ToolSource::Root { var: var.to_string(), root }, Vec::new(), None, considered).map(Some);
    }
    Ok(None)
}

/// Step 5: the declared toolchain package, whose root is the toolkit root. `None` when it is not
/// installed (and not declared), lacks a marker, or is not used by this build; refused when it
/// is declared but not installed.
fn from_toolchain_package(search: &KitSearch, named: &mut Option<Found>, considered: &mut Vec<String>) -> Result<Option<Found>> {
    let (spec, kit, choices) = (search.spec, search.kit, search.choices);
    let Some(p) = spec.toolchain_package else { return Ok(None) };
    match choices.toolchain_packages.get(p) {
        Some(Availability::Ready { installed, lib_dirs, why }) => match kit.missing_marker(&installed.root) {
            None => {
                let by = format!("toolchain package {p} {} ({why})", installed.version);
                let toolkit = ToolkitRoot { root: installed.root.clone(), origin: format!("{by}, installed in {}", crate::text::echo_path(&installed.dir)), found_by: by };
                let source = ToolSource::ToolchainPackage { name: p.to_string(), version: installed.version.clone() };
                return in_root(search, named.take(), toolkit, source, package_env(lib_dirs), Some(installed.root.clone()), considered).map(Some);
            }
            Some(m) => considered.push(format!("the toolchain package {p} {} at `{}` has no {m}", installed.version, crate::text::echo_path(&installed.root))),
        },
        Some(Availability::Missing { version, declared_by: Some(by), .. }) => return Err(declared_not_installed(spec, p, version, by, choices)),
        Some(Availability::Missing { version, declared_by: None, .. }) => {
            considered.push(format!("toolchain package {p} {version} (not installed; `{}` installs it)", choices.fetch_command));
        }
        Some(Availability::Refused(e)) => return Err(e.clone()),
        None => considered.push(format!("toolchain package {p} (not used by this build)")),
    }
    Ok(None)
}

/// Step 6: the program on PATH, when it sits in a root (warned, naming the declarations that
/// would name it instead). `None` when no program on PATH is inside one.
fn from_path(search: &KitSearch, named: &mut Option<Found>, considered: &mut Vec<String>) -> Result<Option<Found>> {
    let (spec, kit, choices) = (search.spec, search.kit, search.choices);
    let mut on_path = false;
    for prog in spec.programs {
        let Some(path) = find_on_path(prog, search.env) else { continue };
        on_path = true;
        let Some(root) = kit.root_around(&path) else {
            considered.push(format!("{prog} on PATH (`{}`) is not inside a {} root", crate::text::echo_path(&path), kit.name));
            continue;
        };
        let mut declare: Vec<String> = kit.root_key.map(|k| format!("{k} = \"{}\"", crate::text::echo_path(&root))).into_iter().collect();
        declare.extend(kit.root_vars.first().map(|v| split_root_var(v)).filter(|(_, below)| below.is_empty()).map(|(v, _)| format!("{v}={}", crate::text::echo_path(&root))));
        let mut w = format!("the {} was found through {prog} on PATH ({}); declare it instead: {}", kit.name, crate::text::echo_path(&path), declare.join(" or "));
        if let Some(p) = spec.toolchain_package {
            w.push_str(&format!(", or install the toolchain package {p} with `{}`", choices.fetch_command));
        }
        let toolkit = ToolkitRoot { root, found_by: "PATH".into(), origin: format!("PATH ({})", crate::text::echo_path(&path)) };
        let mut found = in_root(search, named.take(), toolkit, ToolSource::Path, Vec::new(), None, considered)?;
        found.warning = Some(w);
        return Ok(Some(found));
    }
    if !on_path {
        considered.push(format!("PATH (no {})", spec.programs.join(", ")));
    }
    Ok(None)
}

/// A refusal of `spec` with `headline`, listing every way to name it, numbered in order (a
/// tool without variables, a toolkit or a toolchain package has fewer ways), and the way out.
fn refusal(spec: &ToolSpec, choices: &ToolChoices, headline: String) -> Error {
    let prog = spec.programs[0];
    let mut e = Error::new(ErrorKind::ToolNotFound, headline);
    let mut first = format!(
        "in build.rs: mcpp_build::Build::new().tool(\"{}\", \"/path/to/{prog}\")\n     or in Cargo.toml: [package.metadata.mcpp.tools] {} = \"/path/to/{prog}\"",
        spec.name, spec.name
    );
    if let Some(k) = spec.toolkit.and_then(|k| k.root_key) {
        first.push_str(&format!("\n     or the {} root in Cargo.toml: {k} = \"/path/to/root\"", spec.toolkit.map(|k| k.name).unwrap_or_default()));
    }
    let mut ways: Vec<String> = vec![first];
    let vars: Vec<String> = spec.env_vars.iter().map(|v| format!("{v}=/path/to/{prog}")).collect();
    if !vars.is_empty() {
        ways.push(format!("the environment: {}", vars.join(" or ")));
    }
    ways.push(format!("the global override: {}=/path/to/{prog}", override_var(spec.name)));
    if let Some(kit) = spec.toolkit.filter(|k| !k.root_vars.is_empty()) {
        let roots: Vec<String> = kit
            .root_vars
            .iter()
            .map(|e| match split_root_var(e) {
                (v, "") => format!("{v}=/path/to/root"),
                (v, below) => format!("{v}=/path/to/installation (the root is its {below})"),
            })
            .collect();
        let mut holds = vec![kit.program_in_root];
        holds.extend(kit.marker_files.iter().copied().filter(|m| *m != kit.program_in_root));
        ways.push(format!("the {} root: {} (a root holds {})", kit.name, roots.join(" or "), holds.join(" and ")));
    }
    if let Some(p) = spec.toolchain_package {
        let cmd = if choices.fetch_command.is_empty() { "cargo mcpp fetch".to_string() } else { choices.fetch_command.clone() };
        ways.push(format!("the toolchain package {p}: `{cmd}` installs it (pin a version with [package.metadata.mcpp.toolchain-packages] {p} = \"...\")"));
    }
    let inside = spec.toolkit.map(|k| format!(", inside a {} root", k.name)).unwrap_or_default();
    ways.push(format!("on PATH as {}{inside} (a warning asks you to declare it)", spec.programs.join(" or ")));
    e = e.detail("cargo-mcpp looks for it in this order; name it in any one of these ways:");
    for (n, way) in ways.iter().enumerate() {
        for (i, line) in way.lines().enumerate() {
            e = e.detail(if i == 0 { format!("  {}. {line}", n + 1) } else { line.to_string() });
        }
    }
    e.help(format!("install it (on Debian: {}), then name it in one of the ways above", spec.install_hint))
        .help("the cargo-mcpp guide, \"Declared toolchains\", says how each way works; `cargo mcpp why tool <name>` shows what a build chose")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_variables_are_upper_case_identifiers() {
        assert_eq!(override_var("glslangValidator"), "MCPP_TOOL_GLSLANGVALIDATOR");
        assert_eq!(override_var("spirv-val"), "MCPP_TOOL_SPIRV_VAL");
        assert_eq!(override_var("nvcc"), "MCPP_TOOL_NVCC");
    }
}
