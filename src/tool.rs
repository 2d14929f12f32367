//! Where a rule's compiler comes from, and its identity (path + reported version).
//!
//! Order (this simple form of seed 001's resolver): (1) the explicit choice, the
//! builder's [`crate::Build::tool`] or the manifest's `[package.metadata.mcpp.tools]`,
//! (2) the tool's conventional environment variables (`GLSLANG_VALIDATOR`, `MCPP_GLSLANG`,
//! `GLSLC`, `MCPP_GLSLC`), (3) PATH, with a warning saying how to declare it instead. When
//! nothing answers, one refusal lists every way to name it, in order.
//!
//! The version is asked of the tool once and cached by (path, size, mtime) so that a no-op
//! build starts no compiler process at all, not even `--version`.

use crate::env::Env;
use crate::error::{Error, ErrorKind, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How a tool is found and asked its version.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// The key under `[package.metadata.mcpp.tools]` and for [`crate::Build::tool`].
    pub name: &'static str,
    /// Program names tried on PATH, in order.
    pub programs: &'static [&'static str],
    /// Environment variables naming the program, in order.
    pub env_vars: &'static [&'static str],
    /// Arguments that make it print its version.
    pub version_args: &'static [&'static str],
    /// How to install it, for the refusal (e.g. `apt install glslang-tools`).
    pub install_hint: &'static str,
}

/// Where a resolved tool came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolSource {
    /// `.tool(name, path)` on the build.rs builder.
    Builder,
    /// `[package.metadata.mcpp.tools] <name> = "..."` in the manifest.
    Manifest(PathBuf),
    /// An environment variable.
    Env(String),
    /// Found on PATH (warned).
    Path,
}

impl std::fmt::Display for ToolSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolSource::Builder => write!(f, "the build.rs builder (`Build::tool`)"),
            ToolSource::Manifest(p) => write!(f, "{} [package.metadata.mcpp.tools]", p.display()),
            ToolSource::Env(v) => write!(f, "the environment variable {v}"),
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
}

impl Tool {
    /// The first line of the version text, for messages.
    pub fn version_line(&self) -> &str {
        self.version.lines().next().unwrap_or("")
    }
    /// The identity string that enters every fingerprint of an action running this tool.
    pub fn identity(&self) -> String {
        format!("{}\0{}", self.path.display(), self.version)
    }
}

/// Explicit tool choices (the builder's, then the manifest's) by tool name.
#[derive(Debug, Clone, Default)]
pub struct ToolChoices {
    /// From [`crate::Build::tool`].
    pub builder: BTreeMap<String, PathBuf>,
    /// From `[package.metadata.mcpp.tools]`, already made absolute against the package root.
    pub manifest: BTreeMap<String, PathBuf>,
    /// The manifest file (for messages).
    pub manifest_path: PathBuf,
}

/// Resolve `spec`; the version comes from the cache in `cache_dir` when the program file is
/// unchanged. Returns the tool and, for a PATH answer, the warning to show.
///
/// # Errors
/// [`ErrorKind::ToolNotFound`] when no source answers, or a named path does not exist or does
/// not run; the text lists every way to name the tool.
pub fn resolve(spec: &ToolSpec, choices: &ToolChoices, env: &Env, cache_dir: &Path) -> Result<(Tool, Option<String>)> {
    let mut warning = None;
    let (path, source) = if let Some(p) = choices.builder.get(spec.name) {
        (p.clone(), ToolSource::Builder)
    } else if let Some(p) = choices.manifest.get(spec.name) {
        (p.clone(), ToolSource::Manifest(choices.manifest_path.clone()))
    } else if let Some((var, p)) = spec.env_vars.iter().find_map(|v| env.get_nonempty(v).map(|p| (*v, PathBuf::from(p)))) {
        (p, ToolSource::Env(var.to_string()))
    } else if let Some(p) = spec.programs.iter().find_map(|prog| find_on_path(prog, env)) {
        warning = Some(format!(
            "{} was found on PATH ({}); declare it instead: [package.metadata.mcpp.tools] {} = \"{}\" or {}=...",
            spec.name,
            p.display(),
            spec.name,
            p.display(),
            spec.env_vars[0]
        ));
        (p, ToolSource::Path)
    } else {
        return Err(not_found(spec, None));
    };
    let path = if path.is_relative() && path.components().count() == 1 {
        find_on_path(&path.to_string_lossy(), env).unwrap_or(path)
    } else {
        path
    };
    if !path.exists() {
        return Err(not_found(spec, Some(format!("{} names `{}`, which does not exist", source, path.display()))));
    }
    if !is_executable(&path) {
        return Err(not_found(spec, Some(format!("{} names `{}`, which is not an executable file", source, path.display()))));
    }
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    let version = version_of(spec, &path, cache_dir)?;
    Ok((Tool { name: spec.name.to_string(), path, version, source }, warning))
}

fn not_found(spec: &ToolSpec, why: Option<String>) -> Error {
    let mut e = Error::new(ErrorKind::ToolNotFound, match &why {
        Some(w) => format!("{} cannot be used: {w}", spec.name),
        None => format!("no {} found", spec.name),
    });
    e = e
        .detail("cargo-mcpp looks for it in this order; name it in any one of these ways:")
        .detail(format!("  1. in build.rs: cargo_mcpp::Build::new().tool(\"{}\", \"/path/to/{}\")", spec.name, spec.programs[0]))
        .detail(format!("  2. in Cargo.toml: [package.metadata.mcpp.tools] {} = \"/path/to/{}\"", spec.name, spec.programs[0]));
    let vars: Vec<String> = spec.env_vars.iter().map(|v| format!("{v}=/path/to/{}", spec.programs[0])).collect();
    e = e.detail(format!("  3. the environment: {}", vars.join(" or ")));
    e.detail(format!("  4. on PATH as {} (a warning asks you to declare it)", spec.programs.join(" or ")))
        .help(format!("install it (on Debian: {}), then name it in one of the ways above", spec.install_hint))
}

/// Run a hardware or driver probe (`nvidia-smi --query-gpu=...`) by argv and return its
/// stdout when it exits 0; `None` when it cannot start or fails. Probes are facts, never
/// refusals by themselves (seed 002 "facts and floors").
pub fn probe(program: &Path, args: &[&str]) -> Option<String> {
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

fn version_of(spec: &ToolSpec, path: &Path, cache_dir: &Path) -> Result<String> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io("cannot read", path, e))?;
    let mtime = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map(|d| d.as_nanos()).unwrap_or(0);
    let key = format!("{}|{}|{}", path.display(), meta.len(), mtime);
    let cache_file = cache_dir.join("tool-versions.json");
    let mut cache: BTreeMap<String, String> =
        std::fs::read(&cache_file).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
    if let Some(v) = cache.get(&key) {
        return Ok(v.clone());
    }
    let out = Command::new(path).args(spec.version_args).output().map_err(|e| {
        not_found(spec, Some(format!("`{}` does not run: {e}", path.display())))
    })?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let version = if text.trim().is_empty() { "unknown".to_string() } else { text.trim().to_string() };
    cache.insert(key, version.clone());
    if let Ok(json) = serde_json::to_vec_pretty(&cache) {
        crate::fingerprint::write_if_changed(&cache_file, &json)?;
    }
    Ok(version)
}
