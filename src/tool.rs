//! The one resolver: where a rule's compiler comes from, and its identity (path + reported
//! version). Seed 001 ("one tool-source resolver"), upstream-facts section 6.
//!
//! Order, the same for every rule:
//! 1. the project's explicit choice: the builder's [`crate::Build::tool`], then the manifest's
//!    `[package.metadata.mcpp.tools] <name> = "/path"`;
//! 2. the rule's conventional environment variables ([`ToolSpec::env_vars`], e.g. `GLSLC`,
//!    `MCPP_GLSLC`, `NVCC`);
//! 3. the global override `MCPP_TOOL_<NAME>` ([`override_var`]);
//! 4. the declared payload ([`ToolSpec::payload`]), when installed (build.rs never downloads:
//!    a payload declared by the manifest or `mcpp.lock` but not installed is refused with the
//!    exact `cargo mcpp fetch` command);
//! 5. PATH, with a warning saying how to declare it instead.
//!
//! A stated choice that does not exist is refused, never replaced by a later source. Every
//! decision (and every refusal) is recorded, with the manifest line, variable or build.rs line
//! that made it, in `<device cache>/tool-decisions.json`; `cargo mcpp why tool <name>` prints
//! that record. When nothing answers, one refusal lists every way to name the tool, in order.
//!
//! The version is asked of the tool once and cached by (path, size, mtime) so that a no-op
//! build starts no compiler process at all, not even `--version`. A payload tool runs with its
//! library directories on `LD_LIBRARY_PATH` ([`Tool::env`]), which is part of its identity.

use crate::env::Env;
use crate::error::{Error, ErrorKind, Result};
use crate::payload::Availability;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The file, in the device cache, holding the last decision for each tool.
pub const DECISIONS_FILE: &str = "tool-decisions.json";

/// How a tool is found and asked its version.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// The key under `[package.metadata.mcpp.tools]` and for [`crate::Build::tool`].
    pub name: &'static str,
    /// Program names tried in a payload's bin directories and on PATH, in order.
    pub programs: &'static [&'static str],
    /// The rule's conventional environment variables naming the program, in order.
    pub env_vars: &'static [&'static str],
    /// Arguments that make it print its version.
    pub version_args: &'static [&'static str],
    /// How to install it, for the refusal (e.g. `apt install glslang-tools`).
    pub install_hint: &'static str,
    /// The payload (a name in `payloads.toml`) that provides it, if any.
    pub payload: Option<&'static str>,
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
    /// An installed payload.
    Payload {
        /// Payload name.
        name: String,
        /// Its version.
        version: String,
    },
    /// Found on PATH (warned).
    Path,
    /// Derived from another decision: the `cc` crate's host compiler and archiver, or the
    /// program inside a CUDA toolkit found through `CUDA_PATH` (the text says which).
    Derived(String),
}

impl ToolSource {
    /// The class shown by `why tool`: `choice`, `env`, `override`, `payload`, `path`.
    pub fn class(&self) -> &'static str {
        match self {
            ToolSource::Builder | ToolSource::Manifest(_) | ToolSource::ManifestKey { .. } => "choice",
            ToolSource::Env(_) => "env",
            ToolSource::Override(_) => "override",
            ToolSource::Payload { .. } => "payload",
            ToolSource::Path => "path",
            ToolSource::Derived(_) => "derived",
        }
    }
}

impl std::fmt::Display for ToolSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolSource::Builder => write!(f, "the build.rs builder (`Build::tool`)"),
            ToolSource::Manifest(p) => write!(f, "{} [package.metadata.mcpp.tools]", p.display()),
            ToolSource::ManifestKey { manifest, key } => write!(f, "{} {key}", manifest.display()),
            ToolSource::Env(v) => write!(f, "the environment variable {v}"),
            ToolSource::Override(v) => write!(f, "the global override {v}"),
            ToolSource::Payload { name, version } => write!(f, "the payload {name} {version}"),
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
    /// Variables set for every run of the program (a payload's `LD_LIBRARY_PATH`); empty otherwise.
    pub env: Vec<(String, OsString)>,
    /// The payload's root directory when the tool comes from a payload (for include and
    /// library directories a rule derives from it).
    pub payload_root: Option<PathBuf>,
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
/// builder's, the manifest's) and the payloads this build declared.
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
    /// The payloads this build uses (after both gates), and whether each is installed.
    pub payloads: BTreeMap<String, Availability>,
    /// The exact command that installs this build's payloads (`cargo mcpp fetch --manifest-path ...`).
    pub fetch_command: String,
}

/// One resolver decision, as recorded in [`DECISIONS_FILE`] and printed by `cargo mcpp why tool`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// The tool name.
    pub tool: String,
    /// The program used; `None` when nothing answered (the refusal is in `refusal`).
    pub answer: Option<PathBuf>,
    /// The first line of its version.
    pub version: Option<String>,
    /// `choice`, `env`, `override`, `payload`, `path` or `none`.
    pub source: String,
    /// What made the decision, with its line: `/p/Cargo.toml:12 [package.metadata.mcpp.tools] glslc`,
    /// `the environment variable GLSLC=/usr/bin/glslc`, `payload glslang 13.1.1 (pinned at /p/Cargo.toml:9)`.
    pub origin: String,
    /// The sources consulted before it, in order, each with why it did not answer.
    pub considered: Vec<String>,
    /// The PATH warning, when there was one.
    pub warning: Option<String>,
    /// The refusal text, when nothing answered.
    pub refusal: Option<String>,
}

/// Read the recorded decisions in `cache_dir` (empty when none were recorded).
pub fn read_decisions(cache_dir: &Path) -> BTreeMap<String, Decision> {
    std::fs::read(cache_dir.join(DECISIONS_FILE)).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
}

fn record(cache_dir: &Path, d: Decision) -> Result<()> {
    let mut all = read_decisions(cache_dir);
    all.insert(d.tool.clone(), d);
    let json = serde_json::to_vec_pretty(&all).map_err(|e| Error::new(ErrorKind::Io, e.to_string()))?;
    crate::fingerprint::write_if_changed(&cache_dir.join(DECISIONS_FILE), &json)?;
    Ok(())
}

/// Take `path` as `spec`'s program, decided elsewhere (`source`, with `origin` saying where:
/// the line or variable), check that it runs, and record the decision for `cargo mcpp why
/// tool` exactly as [`resolve`] does. For rules whose program comes with a toolkit found by
/// its own order (CUDA: `cuda.toolkit`, `NVCC`, `CUDA_PATH`, the payload, PATH) and for the
/// host tools the `cc` crate chose.
///
/// # Errors
/// [`ErrorKind::ToolNotFound`] when `path` does not exist, is not executable or does not run;
/// the refusal is recorded too.
pub fn resolve_at(spec: &ToolSpec, path: &Path, source: ToolSource, origin: &str, env: &Env, cache_dir: &Path) -> Result<Tool> {
    let empty = ToolChoices::default();
    let found = (|| {
        let path = if path.is_relative() && path.components().count() == 1 {
            find_on_path(&path.to_string_lossy(), env)
                .ok_or_else(|| not_found(spec, &empty, Some(format!("{source} names `{}`, which is not on PATH", path.display()))))?
        } else {
            path.to_path_buf()
        };
        if !path.exists() {
            return Err(not_found(spec, &empty, Some(format!("{source} names `{}`, which does not exist", path.display()))).detail(format!("  (named at {origin})")));
        }
        if !is_executable(&path) {
            return Err(not_found(spec, &empty, Some(format!("{source} names `{}`, which is not an executable file", path.display()))).detail(format!("  (named at {origin})")));
        }
        let version = version_of(spec, &path, &[], cache_dir)?;
        Ok(Tool { name: spec.name.to_string(), path, version, source: source.clone(), env: Vec::new(), payload_root: None })
    })();
    match found {
        Ok(tool) => {
            record_answer(&tool, origin.to_string(), Vec::new(), None, cache_dir)?;
            Ok(tool)
        }
        Err(e) => {
            record_refusal(spec, &e, cache_dir);
            Err(e)
        }
    }
}

/// Record that `spec` could not be resolved (`error`), so `cargo mcpp why tool` never shows an
/// earlier build's answer after a refusal.
pub fn record_refusal(spec: &ToolSpec, error: &Error, cache_dir: &Path) {
    record_refusal_after(spec, error, Vec::new(), cache_dir);
}

fn record_refusal_after(spec: &ToolSpec, error: &Error, considered: Vec<String>, cache_dir: &Path) {
    let _ = record(
        cache_dir,
        Decision {
            tool: spec.name.to_string(),
            answer: None,
            version: None,
            source: "none".into(),
            origin: "nothing answered".into(),
            considered,
            warning: None,
            refusal: Some(error.to_string()),
        },
    );
}

/// Record the answer `tool` (decided by `origin`, after `considered`) for `cargo mcpp why tool`.
fn record_answer(tool: &Tool, origin: String, considered: Vec<String>, warning: Option<String>, cache_dir: &Path) -> Result<()> {
    record(
        cache_dir,
        Decision {
            tool: tool.name.clone(),
            answer: Some(tool.path.clone()),
            version: Some(tool.version_line().to_string()),
            source: tool.source.class().to_string(),
            origin,
            considered,
            warning,
            refusal: None,
        },
    )
}

/// Resolve `spec` in the order of the module docs; the version comes from the cache in
/// `cache_dir` when the program file is unchanged. Records the decision (or the refusal) in
/// `cache_dir`. Returns the tool and, for a PATH answer, the warning to show.
///
/// # Errors
/// [`ErrorKind::ToolNotFound`] when no source answers, or a named path does not exist or does
/// not run (the text lists every way to name the tool); [`ErrorKind::Manifest`] when the
/// payload is declared but not installed (naming the `cargo mcpp fetch` command) or does not
/// match `mcpp.lock`.
pub fn resolve(spec: &ToolSpec, choices: &ToolChoices, env: &Env, cache_dir: &Path) -> Result<(Tool, Option<String>)> {
    let mut considered = Vec::new();
    let outcome = find(spec, choices, env, &mut considered);
    let result = outcome.and_then(|found| {
        let version = version_of(spec, &found.path, &found.env, cache_dir)?;
        Ok((found, version))
    });
    match result {
        Ok((found, version)) => {
            let tool = Tool { name: spec.name.to_string(), path: found.path, version, source: found.source, env: found.env, payload_root: found.payload_root };
            record_answer(&tool, found.origin, considered, found.warning.clone(), cache_dir)?;
            Ok((tool, found.warning))
        }
        Err(e) => {
            record_refusal_after(spec, &e, considered, cache_dir);
            Err(e)
        }
    }
}

struct Found {
    path: PathBuf,
    source: ToolSource,
    origin: String,
    env: Vec<(String, OsString)>,
    payload_root: Option<PathBuf>,
    warning: Option<String>,
}

fn find(spec: &ToolSpec, choices: &ToolChoices, env: &Env, considered: &mut Vec<String>) -> Result<Found> {
    let named = |path: PathBuf, source: ToolSource, origin: String| -> Result<Found> {
        let path = if path.is_relative() && path.components().count() == 1 {
            find_on_path(&path.to_string_lossy(), env).unwrap_or(path)
        } else {
            path
        };
        if !path.exists() {
            return Err(not_found(spec, choices, Some(format!("{source} names `{}`, which does not exist", path.display()))).detail(format!("  (named at {origin})")));
        }
        if !is_executable(&path) {
            return Err(not_found(spec, choices, Some(format!("{source} names `{}`, which is not an executable file", path.display()))).detail(format!("  (named at {origin})")));
        }
        // Absolute, but symlinks kept: `clang++-19` must not become `clang` (another driver mode).
        let path = std::path::absolute(&path).unwrap_or(path);
        Ok(Found { path, source, origin, env: Vec::new(), payload_root: None, warning: None })
    };
    // 1. The explicit choice.
    if let Some(p) = choices.builder.get(spec.name) {
        let at = choices.builder_lines.get(spec.name).cloned().unwrap_or_else(|| "build.rs".into());
        return named(p.clone(), ToolSource::Builder, format!("{at} Build::tool(\"{}\", {:?})", spec.name, p.display().to_string()));
    }
    considered.push(format!("build.rs Build::tool(\"{}\", ..) (not called)", spec.name));
    if let Some(p) = choices.manifest.get(spec.name) {
        let line = choices.manifest_lines.get(spec.name).map(|l| format!(":{l}")).unwrap_or_default();
        return named(p.clone(), ToolSource::Manifest(choices.manifest_path.clone()), format!("{}{line} [package.metadata.mcpp.tools] {} = {:?}", choices.manifest_path.display(), spec.name, p.display().to_string()));
    }
    considered.push(format!("[package.metadata.mcpp.tools] {} (not in {})", spec.name, choices.manifest_path.display()));
    // 2. The rule's variables.
    for var in spec.env_vars {
        if let Some(v) = env.get_nonempty(var) {
            return named(PathBuf::from(&v), ToolSource::Env(var.to_string()), format!("the environment variable {var}={v}"));
        }
        considered.push(format!("{var} (unset)"));
    }
    // 3. The global override.
    let ovr = override_var(spec.name);
    if let Some(v) = env.get_nonempty(&ovr) {
        return named(PathBuf::from(&v), ToolSource::Override(ovr.clone()), format!("the environment variable {ovr}={v}"));
    }
    considered.push(format!("{ovr} (unset)"));
    // 4. The declared payload.
    if let Some(p) = spec.payload {
        match choices.payloads.get(p) {
            Some(Availability::Ready { installed, lib_dirs, why }) => {
                let program = spec.programs.iter().find_map(|prog| installed.bin_dirs.iter().map(|d| d.join(prog)).find(|c| is_executable(c)));
                let Some(path) = program else {
                    return Err(Error::new(ErrorKind::ToolNotFound, format!("payload {p} {} has no {} in {}", installed.version, spec.programs.join(" or "), installed.root.display()))
                        .help("its layout differs from payloads.toml; name the tool instead: [package.metadata.mcpp.tools]"));
                };
                let mut tool_env = Vec::new();
                let dirs: Vec<&PathBuf> = lib_dirs.iter().filter(|d| d.is_dir()).collect();
                if !dirs.is_empty() {
                    let joined = std::env::join_paths(dirs).unwrap_or_default();
                    tool_env.push(("LD_LIBRARY_PATH".to_string(), joined));
                }
                return Ok(Found {
                    path,
                    source: ToolSource::Payload { name: p.to_string(), version: installed.version.clone() },
                    origin: format!("payload {p} {} ({why}), installed in {}", installed.version, installed.dir.display()),
                    env: tool_env,
                    payload_root: Some(installed.root.clone()),
                    warning: None,
                });
            }
            Some(Availability::Missing { version, declared_by: Some(by), .. }) => {
                return Err(Error::new(ErrorKind::Manifest, format!("{} needs the payload {p} {version}, which is declared ({by}) but not installed", spec.name))
                    .detail("build.rs never downloads; payloads are installed by `cargo mcpp fetch` (and by `cargo mcpp build` before it starts cargo)")
                    .help(format!("run `{}`", choices.fetch_command)));
            }
            Some(Availability::Missing { version, declared_by: None, .. }) => {
                considered.push(format!("payload {p} {version} (not installed; `{}` installs it)", choices.fetch_command));
            }
            Some(Availability::Refused(e)) => return Err(e.clone()),
            None => considered.push(format!("payload {p} (not used by this build)")),
        }
    }
    // 5. PATH.
    if let Some(path) = spec.programs.iter().find_map(|prog| find_on_path(prog, env)) {
        let mut w = format!(
            "{} was found on PATH ({}); declare it instead: [package.metadata.mcpp.tools] {} = \"{}\" or {}=...",
            spec.name,
            path.display(),
            spec.name,
            path.display(),
            spec.env_vars.first().copied().unwrap_or(ovr.as_str())
        );
        if let Some(p) = spec.payload {
            w.push_str(&format!(", or install the payload {p} with `{}`", choices.fetch_command));
        }
        // Absolute, but symlinks kept: `clang++-19` must not become `clang` (another driver mode).
        let path = std::path::absolute(&path).unwrap_or(path);
        return Ok(Found { origin: format!("PATH ({})", path.display()), path, source: ToolSource::Path, env: Vec::new(), payload_root: None, warning: Some(w) });
    }
    considered.push(format!("PATH (no {})", spec.programs.join(", ")));
    let mut e = not_found(spec, choices, None);
    e = e.detail("consulted:");
    for c in considered.iter() {
        e = e.detail(format!("  {c}"));
    }
    Err(e)
}

fn not_found(spec: &ToolSpec, choices: &ToolChoices, why: Option<String>) -> Error {
    let prog = spec.programs[0];
    let mut e = Error::new(ErrorKind::ToolNotFound, match &why {
        Some(w) => format!("{} cannot be used: {w}", spec.name),
        None => format!("no {} found", spec.name),
    });
    // Numbered as listed: a tool without variables or a payload has fewer ways.
    let mut ways: Vec<String> = vec![format!(
        "in build.rs: cargo_mcpp::Build::new().tool(\"{}\", \"/path/to/{prog}\")\n     or in Cargo.toml: [package.metadata.mcpp.tools] {} = \"/path/to/{prog}\"",
        spec.name, spec.name
    )];
    let vars: Vec<String> = spec.env_vars.iter().map(|v| format!("{v}=/path/to/{prog}")).collect();
    if !vars.is_empty() {
        ways.push(format!("the environment: {}", vars.join(" or ")));
    }
    ways.push(format!("the global override: {}=/path/to/{prog}", override_var(spec.name)));
    if let Some(p) = spec.payload {
        let cmd = if choices.fetch_command.is_empty() { "cargo mcpp fetch".to_string() } else { choices.fetch_command.clone() };
        ways.push(format!("the payload {p}: `{cmd}` installs it (pin a version with [package.metadata.mcpp.payloads] {p} = \"...\")"));
    }
    ways.push(format!("on PATH as {} (a warning asks you to declare it)", spec.programs.join(" or ")));
    e = e.detail("cargo-mcpp looks for it in this order; name it in any one of these ways:");
    for (n, way) in ways.iter().enumerate() {
        for (i, line) in way.lines().enumerate() {
            e = e.detail(if i == 0 { format!("  {}. {line}", n + 1) } else { line.to_string() });
        }
    }
    e
        .help(format!("install it (on Debian: {}), then name it in one of the ways above", spec.install_hint))
        .help("cargo-mcpp's README, \"Declared toolchains\", says how each way works; `cargo mcpp why tool <name>` shows what a build chose")
}

/// Run a hardware or driver probe (`nvidia-smi --query-gpu=...`) by argv and return its
/// stdout when it exits 0; `None` when it cannot start or fails. Probes are facts, never
/// refusals by themselves (seed 002 "facts and floors").
pub fn probe(program: &Path, args: &[&str]) -> Option<String> {
    #[allow(clippy::disallowed_methods)] // tool.rs runs hardware and driver probes (argv)
    let out = Command::new(program).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The first `program` on the PATH of `env`.
pub fn find_on_path(program: &str, env: &Env) -> Option<PathBuf> {
    let path = env.get_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// What `tool` prints (stdout then stderr) for `args`, asked once and cached in
/// `<cache_dir>/tool-probes.json` by (path, size, mtime, args) like its version, so a no-op build
/// starts no process. `None` when it does not start, is killed, cannot execute (126/127) or
/// prints nothing (nothing is cached then); another exit code counts as an answer
/// (`glslangValidator --help` exits 1).
/// Used for what a compiler accepts (`nvcc --list-gpu-code`, clang's `--print-supported-cpus`).
pub fn probe_cached(tool: &Tool, args: &[&str], cache_dir: &Path) -> Option<String> {
    let meta = std::fs::metadata(&tool.path).ok()?;
    let mtime = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map(|d| d.as_nanos()).unwrap_or(0);
    let key = format!("{}|{}|{}|{}", tool.path.display(), meta.len(), mtime, args.join(" "));
    let cache_file = cache_dir.join("tool-probes.json");
    let mut cache: BTreeMap<String, String> = std::fs::read(&cache_file).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
    if let Some(v) = cache.get(&key) {
        return Some(v.clone());
    }
    #[allow(clippy::disallowed_methods)] // tool.rs asks a tool what it accepts (argv, cached)
    let mut cmd = Command::new(&tool.path);
    cmd.args(args);
    for (k, v) in &tool.env {
        cmd.env(k, v);
    }
    let out = cmd.output().ok()?;
    if matches!(out.status.code(), None | Some(126) | Some(127)) {
        return None;
    }
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if text.trim().is_empty() {
        return None;
    }
    cache.insert(key, text.clone());
    if let Ok(json) = serde_json::to_vec_pretty(&cache) {
        let _ = crate::fingerprint::write_if_changed(&cache_file, &json);
    }
    Some(text)
}

fn version_of(spec: &ToolSpec, path: &Path, tool_env: &[(String, OsString)], cache_dir: &Path) -> Result<String> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io("cannot read", path, e))?;
    let mtime = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map(|d| d.as_nanos()).unwrap_or(0);
    let key = format!("{}|{}|{}", path.display(), meta.len(), mtime);
    let cache_file = cache_dir.join("tool-versions.json");
    let mut cache: BTreeMap<String, String> =
        std::fs::read(&cache_file).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
    if let Some(v) = cache.get(&key) {
        return Ok(v.clone());
    }
    #[allow(clippy::disallowed_methods)] // tool.rs asks a tool its version (argv, cached)
    let mut cmd = Command::new(path);
    cmd.args(spec.version_args);
    for (k, v) in tool_env {
        cmd.env(k, v);
    }
    let out = cmd.output().map_err(|e| {
        Error::new(ErrorKind::ToolNotFound, format!("{} cannot be used: `{}` does not run: {e}", spec.name, path.display()))
    })?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if matches!(out.status.code(), None | Some(126) | Some(127)) {
        return Err(Error::new(ErrorKind::ToolNotFound, format!("{} cannot be used: `{}` does not run ({})", spec.name, path.display(), out.status))
            .detail(text.trim().lines().take(5).collect::<Vec<_>>().join("\n"))
            .help("a payload's programs need its library directories; run `cargo mcpp fetch` again, or name a working program"));
    }
    let version = if text.trim().is_empty() { "unknown".to_string() } else { text.trim().to_string() };
    cache.insert(key, version.clone());
    if let Ok(json) = serde_json::to_vec_pretty(&cache) {
        crate::fingerprint::write_if_changed(&cache_file, &json)?;
    }
    Ok(version)
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
