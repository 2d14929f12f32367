//! The host toolchain as the `cc` crate chooses it: the C++ compiler (with its default
//! arguments and family), plus the archive format of the target. The CUDA rule passes the
//! compiler to nvcc as `-ccbin`; the host C++ lane ([`crate::cxx`]) compiles with it; both
//! archive their objects in process ([`crate::archive`]). Asking `cc` runs the compiler once (family detection), so the answer
//! is cached in the tool cache, keyed by the target, the profile and every environment
//! variable `cc` reads for them, so that a no-op build starts no process.

use crate::cargo_facts::CargoFacts;
use crate::env::Env;
use crate::error::{Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The compiler family, for flag spellings (C++20 modules differ per family).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Family {
    /// GCC (`g++`): `-fmodules-ts` and a module mapper.
    Gnu,
    /// Clang (`clang++`): `--precompile` and `-fmodule-file=`.
    Clang,
    /// MSVC (`cl.exe`): `/FI` forced includes; C++20 modules not planned by this version.
    Msvc,
}

/// What the `cc` crate chose for the target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostToolchain {
    /// The C++ compiler, absolute.
    pub cxx: PathBuf,
    /// The arguments `cc` gives it for this target and profile (`-O`, `-fPIC`, `-g`, `-m64`, ...).
    pub cxx_args: Vec<String>,
    /// Its family.
    pub family: Family,
    /// The archive format the target's linker reads.
    pub archive_format: crate::archive::ArchiveFormat,
    /// The C++ runtime library to link (`stdc++`, `c++`), `None` for MSVC.
    pub cpp_stdlib: Option<String>,
}

/// The environment variables `cc` reads when choosing the C++ compiler for
/// `target` (cc-rs `Build::getenv_with_target_prefixes`), read here through [`Env`] so that
/// cargo reruns the build script when one changes.
fn cc_env_vars(target: &str) -> Vec<String> {
    let t = target.replace('-', "_");
    let mut v = Vec::new();
    for base in ["CXX", "CXXFLAGS"] {
        v.push(format!("{base}_{target}"));
        v.push(format!("{base}_{t}"));
        v.push(format!("TARGET_{base}"));
        v.push(format!("HOST_{base}"));
        v.push(base.to_string());
    }
    v.extend(["CRATE_CC_NO_DEFAULTS".to_string(), "CC_FORCE_DISABLE".to_string()]);
    v
}

#[derive(Serialize, Deserialize)]
struct Cached {
    key: String,
    stamp: String,
    toolchain: HostToolchain,
}

fn stamp(p: &Path) -> String {
    std::fs::metadata(p)
        .ok()
        .map(|m| {
            let t = m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map(|d| d.as_nanos()).unwrap_or(0);
            format!("{}|{t}", m.len())
        })
        .unwrap_or_default()
}

/// The host toolchain for a build, from the cache in `cache_dir` when nothing it depends on
/// changed, else asked of the `cc` crate (which runs the compiler once to learn its family).
///
/// # Errors
/// [`ErrorKind::ToolNotFound`] when `cc` finds no C++ compiler.
pub fn toolchain(env: &Env, facts: &CargoFacts, cache_dir: &Path) -> Result<HostToolchain> {
    let (target, host) = (&facts.target, &facts.host);
    let mut key = format!("{target}|{host}|{}|{}", facts.opt_level.as_str(), facts.debug);
    for var in cc_env_vars(target) {
        key.push_str(&format!("|{var}={}", env.get(&var).unwrap_or_default()));
    }
    let cache_file = cache_dir.join("host-toolchain.json");
    if let Some(c) = std::fs::read(&cache_file).ok().and_then(|b| serde_json::from_slice::<Cached>(&b).ok()) {
        if c.key == key && c.stamp == stamp(&c.toolchain.cxx) {
            return Ok(c.toolchain);
        }
    }
    let probe_dir = cache_dir.join("cc-probe");
    std::fs::create_dir_all(&probe_dir).map_err(|e| Error::io("cannot create", &probe_dir, e))?;
    let mut b = cc::Build::new();
    b.cpp(true)
        .target(target)
        .host(host)
        .opt_level_str(facts.opt_level.as_str())
        .debug(facts.debug)
        .out_dir(&probe_dir)
        .cargo_metadata(false)
        .cargo_warnings(false);
    // cc reads the process environment; a compiler named in this build's [`Env`] view (e.g.
    // `Build::env("CXX", ...)`) is handed to it explicitly so both agree.
    let t = target.replace('-', "_");
    let named = |base: &str| [format!("{base}_{target}"), format!("{base}_{t}"), format!("TARGET_{base}"), base.to_string()].into_iter().find_map(|v| env.get_nonempty(&v));
    if let Some(cxx) = named("CXX") {
        b.compiler(cxx);
    }
    let tool = b.try_get_compiler().map_err(|e| {
        Error::new(ErrorKind::ToolNotFound, "the cc crate found no C++ compiler for the host code")
            .detail(e.to_string())
            .help("install a C++ compiler (g++ or clang++), or name one with CXX=/path/to/c++")
    })?;
    let family = if tool.is_like_msvc() {
        Family::Msvc
    } else if tool.is_like_clang() {
        Family::Clang
    } else {
        Family::Gnu
    };
    let cxx = absolute_program(tool.path(), env);
    let cpp_stdlib = match family {
        Family::Msvc => None,
        _ if target.contains("apple") || target.contains("freebsd") || target.contains("openbsd") => Some("c++".to_string()),
        _ => Some("stdc++".to_string()),
    };
    let toolchain = HostToolchain {
        cxx_args: tool.args().iter().map(|a| a.to_string_lossy().into_owned()).collect(),
        cxx,
        family,
        archive_format: crate::archive::ArchiveFormat::for_target(target),
        cpp_stdlib,
    };
    let cached = Cached { key, stamp: stamp(&toolchain.cxx), toolchain: toolchain.clone() };
    if let Ok(json) = serde_json::to_vec_pretty(&cached) {
        crate::fingerprint::write_if_changed(&cache_file, &json)?;
    }
    Ok(toolchain)
}

fn absolute_program(p: &Path, env: &Env) -> PathBuf {
    let found = if p.components().count() == 1 { crate::tool::find_on_path(&p.to_string_lossy(), env) } else { None };
    let p = found.unwrap_or_else(|| p.to_path_buf());
    // Absolute, but symlinks kept: `c++`/`clang++-19` name the driver mode.
    std::path::absolute(&p).unwrap_or(p)
}

/// The `-I`/`-D` arguments for `includes` (already absolute) and `defines`.
pub fn include_define_args(includes: &[PathBuf], defines: &BTreeMap<String, String>) -> Vec<std::ffi::OsString> {
    let mut a = Vec::new();
    for (k, v) in defines {
        a.push(format!("-D{k}={v}").into());
    }
    for inc in includes {
        let mut s = std::ffi::OsString::from("-I");
        s.push(inc);
        a.push(s);
    }
    a
}

/// Resolve manifest include directories against the package root, refusing a missing one or a
/// relative one that resolves outside the package (naming the key `<table>.includes[i]`;
/// [`crate::walk::package_dir`]).
///
/// # Errors
/// [`ErrorKind::Manifest`] for a directory that does not exist or leaves the package.
pub fn resolve_includes(manifest: &crate::manifest::Manifest, table: &str, includes: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let root = manifest.dir();
    let mut out = Vec::new();
    for (i, inc) in includes.iter().enumerate() {
        out.push(crate::walk::package_dir(root, &manifest.path, &format!("{table}.includes[{i}]"), inc)?);
    }
    Ok(out)
}
