//! The CUDA toolkit and the programs of a route, from the one resolver ([`tool::resolve_toolkit`],
//! the toolkit declared as [`CUDA_TOOLKIT`]): the root (`cuda.toolkit`, the toolkit a named nvcc
//! sits in, `CUDA_PATH`, `CUDA_HOME`, the `cuda-nvcc` payload, nvcc on PATH), its version
//! checked against the accelerator entry and the driver, the runtime directory of the build's
//! target (`targets/<dir>/lib` by `TARGET`), and the compilers: nvcc with its host compiler
//! (`-ccbin`, [`CCBIN`]) or clang ([`CLANG`]).

use super::probe;
use super::{CudaCompilerName, CudaOptions, CCBIN, CLANG, CUDA_TOOLKIT, MANIFEST_KEY, NVCC};
use crate::config::env::Env;
use crate::error::{Error, ErrorKind, Result};
use crate::rules::host::HostToolchain;
use crate::rules::RuleContext;
use crate::tool::{self, RootChoice, Tool, ToolSource};
use std::path::{Path, PathBuf};

/// A resolved CUDA toolkit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolkit {
    /// The root (`<root>/include/cuda.h`).
    pub root: PathBuf,
    /// `CUDA_VERSION` of `include/cuda.h` as (major, minor), e.g. (13, 0).
    pub version: Option<(u32, u32)>,
    /// How it was found (for messages).
    pub found_by: String,
}

impl Toolkit {
    /// Read the toolkit at `root`; `None` when it has no `include/cuda_runtime.h`
    /// ([`CUDA_TOOLKIT`]'s marker).
    pub fn at(root: &Path, found_by: impl Into<String>) -> Option<Toolkit> {
        CUDA_TOOLKIT.is_root(root).then(|| Toolkit::read(root, found_by))
    }

    /// Read the version of the toolkit at `root`, a root the resolver accepted
    /// ([`tool::ToolkitRoot`]); the version is `None` when `include/cuda.h` does not say it.
    pub fn read(root: &Path, found_by: impl Into<String>) -> Toolkit {
        let version = std::fs::read_to_string(root.join("include").join("cuda.h")).ok().and_then(|t| {
            t.lines().find_map(|l| l.trim().strip_prefix("#define CUDA_VERSION").and_then(|v| v.trim().parse::<u32>().ok())).map(|v| (v / 1000, (v % 1000) / 10))
        });
        Toolkit { root: root.to_path_buf(), version, found_by: found_by.into() }
    }

    /// The directories that may hold the CUDA runtime for `target`, in the order they are
    /// looked at: for the build machine's own target `lib64/`, `lib/` (the PyPI layout), then
    /// `targets/<dir>/lib/`; for a cross target only `targets/<dir>/lib/` (`lib64/` and `lib/`
    /// are the build machine's), `<dir>` from [`CudaTarget::dirs`].
    pub fn runtime_candidates(&self, target: &CudaTarget) -> Vec<PathBuf> {
        let mut c = Vec::new();
        if !target.cross {
            c.extend([self.root.join("lib64"), self.root.join("lib")]);
        }
        c.extend(target.dirs.iter().map(|d| self.root.join("targets").join(d).join("lib")));
        c
    }

    /// The first of [`Toolkit::runtime_candidates`] holding `libcudart_static.a` or a shared
    /// `libcudart.so[.N]`, with the `targets/` directory name when it is one; `None` when none does.
    pub fn runtime_dir(&self, target: &CudaTarget) -> Option<(PathBuf, Option<&'static str>)> {
        let found = self.runtime_candidates(target).into_iter().find(|d| d.join("libcudart_static.a").is_file() || shared_cudart(d).is_some())?;
        let name = target.dirs.iter().copied().find(|d| found == self.root.join("targets").join(d).join("lib"));
        Some((found, name))
    }
}

/// The CUDA side of the build's target: the triple (cargo's `TARGET`), whether
/// it is another machine than the build's (`TARGET` is not `HOST`), and the names a CUDA
/// toolkit gives it under `targets/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaTarget {
    /// The Rust target triple, e.g. `aarch64-unknown-linux-gnu`.
    pub triple: String,
    /// The target is not the build machine (nvcc then gets `-target-dir`).
    pub cross: bool,
    /// The toolkit's directory names for it, in the order looked at ([`cuda_target_dirs`]).
    pub dirs: &'static [&'static str],
}

impl CudaTarget {
    /// The build's target, from cargo's facts ([`crate::config::cargo_facts`]).
    pub fn of_build(facts: &crate::config::cargo_facts::CargoFacts) -> CudaTarget {
        CudaTarget { dirs: cuda_target_dirs(&facts.target), cross: facts.is_cross(), triple: facts.target.clone() }
    }
}

/// The directory names under a CUDA toolkit's `targets/` for a Rust target triple:
/// `x86_64-linux` for x86_64 Linux; for aarch64 Linux `sbsa-linux` (servers: Grace, ARM SBSA)
/// then `aarch64-linux` (Jetson), both of which a triple names as `aarch64-unknown-linux-gnu`.
/// Empty for a target CUDA has no directory for.
pub fn cuda_target_dirs(triple: &str) -> &'static [&'static str] {
    let arch = triple.split('-').next().unwrap_or_default();
    match (arch, triple.contains("-linux")) {
        ("x86_64", true) => &["x86_64-linux"],
        ("aarch64", true) => &["sbsa-linux", "aarch64-linux"],
        _ => &[],
    }
}

/// The shared CUDA runtime in `dir`: `libcudart.so`, else the highest `libcudart.so.N`.
pub fn shared_cudart(dir: &Path) -> Option<String> {
    if dir.join("libcudart.so").is_file() {
        return Some("libcudart.so".into());
    }
    let mut versioned: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.starts_with("libcudart.so."))
        .collect();
    versioned.sort();
    versioned.pop()
}

/// The explicit toolkit root of `opts` (`[package.metadata.mcpp.cuda] toolkit`, made absolute
/// against the package root), for the resolver.
pub fn root_choice(opts: &CudaOptions, manifest: &crate::config::manifest::Manifest) -> Option<RootChoice> {
    let t = opts.toolkit.as_ref()?;
    let root = if t.is_absolute() { t.clone() } else { manifest.dir().join(t) };
    Some(RootChoice { root, manifest: manifest.path.clone(), line: manifest.line("cuda.toolkit"), key: format!("{MANIFEST_KEY}.toolkit") })
}

/// The CUDA way out added to the resolver's refusal: the host fallback.
fn with_fallback(e: Error, env: &Env) -> Error {
    if e.kind != ErrorKind::ToolNotFound {
        return e;
    }
    e.help(format!("or build with {} for the host fallback", crate::output::report::no_accel_way(env)))
}

/// The toolkit of this build and, on the nvcc route, nvcc in it: one resolver, one decision
/// record (the clang route asks the resolver for the root alone). The toolkit's version must be
/// the entry's (`cuda13.0` with a CUDA 13.0 toolkit) and its major no newer than the driver's.
/// The resolver's PATH warning is added to `warnings`.
///
/// # Errors
/// The resolver's refusal ([`ErrorKind::ToolNotFound`], with the host fallback as a way out);
/// [`ErrorKind::Accel`] for a version that differs from the entry's or is newer than the
/// driver ([`probe::check_driver_floor`]).
pub fn locate(ctx: &RuleContext, opts: &CudaOptions, route: CudaCompilerName, warnings: &mut Vec<String>) -> Result<(Toolkit, Option<Tool>)> {
    let root_choice = root_choice(opts, ctx.manifest);
    let (kit_root, nvcc) = match route {
        CudaCompilerName::Nvcc => {
            let r = tool::resolve_toolkit(&NVCC, ctx.tools, root_choice.as_ref(), ctx.env, ctx.cache).map_err(|e| with_fallback(e, ctx.env))?;
            warnings.extend(r.warning);
            let Some(root) = r.toolkit else {
                return Err(Error::new(ErrorKind::ToolNotFound, "the resolver answered nvcc without a CUDA toolkit").help("this is a defect of cargo-mcpp; report it"));
            };
            (root, Some(r.tool))
        }
        CudaCompilerName::Clang => {
            let (root, w) = tool::find_toolkit_root(&NVCC, ctx.tools, root_choice.as_ref(), ctx.env).map_err(|e| with_fallback(e, ctx.env))?;
            warnings.extend(w);
            (root, None)
        }
    };
    let toolkit = Toolkit::read(&kit_root.root, kit_root.found_by.clone());
    check_version(ctx.accel, &toolkit)?;
    probe::check_driver_floor(toolkit.version, ctx.env, probe::probe_driver_version, &toolkit.root)?;
    Ok((toolkit, nvcc))
}

/// The accelerator entry's CUDA version (`cuda13.0`) is the toolkit's, when both are known: a
/// different toolkit would make the build lie about the CUDA it compiles with.
///
/// # Errors
/// [`ErrorKind::Accel`] naming both versions and the toolkit.
pub fn check_version(entry: &crate::config::accel::AccelEntry, toolkit: &Toolkit) -> Result<()> {
    if let (Some(want), Some((major, minor))) = (&entry.version, toolkit.version) {
        let nums = entry.version_numbers();
        if nums.first() != Some(&(major as u64)) || nums.get(1).copied().unwrap_or(0) != minor as u64 {
            return Err(Error::new(ErrorKind::Accel, format!("the accelerator names cuda{want}, but the CUDA toolkit found is CUDA {major}.{minor}"))
                .detail(format!("toolkit: {} (found through {})", toolkit.root.display(), toolkit.found_by))
                .detail("The version in the accelerator entry is the CUDA the build compiles with; a different toolkit would make the build lie about it.")
                .help(format!("write the entry as cuda{major}.{minor}+{{...}} (in `accel` or `--accel`), or point the toolkit at a CUDA {want} installation ([{MANIFEST_KEY}] toolkit, CUDA_PATH)")));
        }
    }
    Ok(())
}

/// The CUDA runtime of the build's target in a toolkit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetRuntime {
    /// The build's target.
    pub target: CudaTarget,
    /// The toolkit's `targets/` directory name for a cross target (nvcc's `-target-dir`);
    /// `None` for the build machine's own target.
    pub target_dir: Option<&'static str>,
    /// The directory holding the runtime ([`Toolkit::runtime_dir`]); `None` when none does.
    pub lib_dir: Option<PathBuf>,
}

/// Where the runtime of the build's target is in `toolkit`. A cross build needs the target's
/// runtime under `targets/<dir>/lib` (never the build machine's `lib/`); a native build without
/// one is refused later, only when a runtime is linked (`super::runtime_link`).
///
/// # Errors
/// [`ErrorKind::ToolNotFound`] for a cross target the toolkit has no runtime for, naming the
/// directories looked in.
pub fn target_runtime(toolkit: &Toolkit, facts: &crate::config::cargo_facts::CargoFacts, env: &Env) -> Result<TargetRuntime> {
    let target = CudaTarget::of_build(facts);
    let runtime = toolkit.runtime_dir(&target);
    if target.cross && runtime.is_none() {
        let looked: Vec<String> = toolkit.runtime_candidates(&target).iter().map(|d| d.display().to_string()).collect();
        let mut e = Error::new(ErrorKind::ToolNotFound, format!("the CUDA toolkit at {} has no runtime for the target {}", toolkit.root.display(), target.triple))
            .file(&toolkit.root)
            .key(format!("{MANIFEST_KEY}.toolkit"))
            .detail(format!("toolkit: {} (found through {})", toolkit.root.display(), toolkit.found_by));
        e = if looked.is_empty() {
            e.detail(format!("CUDA has no targets/ directory for {} (known: x86_64 Linux, aarch64 Linux)", target.triple))
        } else {
            e.detail(format!("looked for libcudart_static.a or libcudart.so in {}", looked.join(", ")))
        };
        return Err(e
            .detail("A cross build compiles and links against the target's headers and runtime under <toolkit>/targets/<dir>/, never the build machine's lib/.")
            .help("install the target's CUDA runtime into the toolkit (NVIDIA's cross packages put it in targets/sbsa-linux or targets/aarch64-linux), or name a toolkit that has it ([package.metadata.mcpp.cuda] toolkit, CUDA_PATH)")
            .help(format!("or build for this machine's target, or with {} for the host fallback", crate::output::report::no_accel_way(env))));
    }
    let target_dir = if target.cross { runtime.as_ref().and_then(|(_, d)| *d) } else { None };
    Ok(TargetRuntime { target, target_dir, lib_dir: runtime.map(|(d, _)| d) })
}

/// The programs a route runs.
#[derive(Debug, Clone)]
pub struct Compilers {
    /// nvcc (with `NVCC_PREPEND_FLAGS`/`NVCC_APPEND_FLAGS` in its identity) or clang.
    pub compiler: Tool,
    /// nvcc's host compiler (`-ccbin`); `None` on the clang route.
    pub ccbin: Option<Tool>,
    /// The arguments named with the `cc` crate's compiler in `CXX`, passed as `-Xcompiler`
    /// each when that compiler is the `-ccbin`; empty otherwise.
    pub ccbin_args: Vec<String>,
}

/// The compilers of the route: `nvcc` (resolved with the toolkit by [`locate`]) with its host
/// compiler ([`ccbin`]), or clang from the resolver ([`CLANG`]). Warnings are added to
/// `warnings`.
///
/// # Errors
/// As [`ccbin`] and [`nvcc_env_flags`]; the resolver's refusal of clang.
pub fn compilers(ctx: &RuleContext, opts: &CudaOptions, host: &HostToolchain, nvcc: Option<Tool>, warnings: &mut Vec<String>) -> Result<Compilers> {
    match nvcc {
        Some(mut nvcc) => {
            let (ccbin, ccbin_args) = ccbin(ctx, opts, host, warnings)?;
            nvcc_env_flags(&mut nvcc, ctx)?;
            Ok(Compilers { compiler: nvcc, ccbin: Some(ccbin), ccbin_args })
        }
        None => {
            let (clang, w) = tool::resolve(&CLANG, ctx.tools, ctx.env, ctx.cache)?;
            warnings.extend(w);
            Ok(Compilers { compiler: clang, ccbin: None, ccbin_args: Vec::new() })
        }
    }
}

/// nvcc's host compiler and the arguments it gets as `-Xcompiler`: `cuda.ccbin` (a relative
/// path with a directory is the package's), the explicit choice (`Build::tool("ccbin", ..)`,
/// `tools.ccbin`), `NVCC_CCBIN`, `CUDAHOSTCXX`, `MCPP_TOOL_CCBIN`, else the `cc` crate's C++
/// compiler with the arguments named with it in `CXX` (a wrapper there is left out, warned:
/// `-ccbin` takes a compiler path). Recorded for `cargo mcpp why tool ccbin`.
///
/// # Errors
/// A path nvcc's shell would evaluate ([`super::argv::check_nvcc_shell_safe`]); a compiler that
/// does not run ([`tool::resolve_at`], naming `cuda.ccbin` when that named it).
pub fn ccbin(ctx: &RuleContext, opts: &CudaOptions, host: &HostToolchain, warnings: &mut Vec<String>) -> Result<(Tool, Vec<String>)> {
    let ccbin_path = opts
        .ccbin
        .as_ref()
        .map(|p| if p.components().count() > 1 && p.is_relative() { ctx.manifest.dir().join(p) } else { p.clone() })
        .or_else(|| ctx.tools.builder.get(CCBIN.name).or_else(|| ctx.tools.manifest.get(CCBIN.name)).cloned())
        .or_else(|| CCBIN.env_vars.iter().find_map(|v| ctx.env.get_nonempty(v)).map(PathBuf::from))
        .or_else(|| ctx.env.get_nonempty(&tool::override_var(CCBIN.name)).map(PathBuf::from))
        .unwrap_or_else(|| host.cxx.clone());
    let named = ctx.tools.builder.contains_key(CCBIN.name) || ctx.tools.manifest.contains_key(CCBIN.name);
    let override_set = ctx.env.get_nonempty(&tool::override_var(CCBIN.name)).is_some();
    let env_var = CCBIN.env_vars.iter().find(|v| ctx.env.get_nonempty(v).is_some());
    let (ccbin_source, ccbin_origin) = match (&opts.ccbin, env_var) {
        (Some(_), _) => (ToolSource::ManifestKey { manifest: ctx.manifest.path.clone(), key: format!("[{MANIFEST_KEY}] ccbin") }, format!("{} [{MANIFEST_KEY}] ccbin", ctx.manifest.path.display())),
        (None, _) if named => (ToolSource::Manifest(ctx.manifest.path.clone()), "the explicit choice (Build::tool or [package.metadata.mcpp.tools]) ccbin".to_string()),
        (None, None) if override_set => (ToolSource::Env(tool::override_var(CCBIN.name)), format!("the environment variable {}", tool::override_var(CCBIN.name))),
        (None, Some(var)) => (ToolSource::Env(var.to_string()), format!("the environment variable {var}")),
        (None, None) => (ToolSource::Derived("the cc crate's C++ compiler (CXX or its default)".into()), "the cc crate".into()),
    };
    let mut ccbin_args = Vec::new();
    // The arguments named with the cc crate's compiler (`CXX="g++ -DX=1"`) go with it.
    if matches!(ccbin_source, ToolSource::Derived(_)) {
        ccbin_args = host.env_args.clone();
        if let Some(w) = &host.wrapper {
            warnings.push(format!("CXX names the compiler wrapper {}; nvcc's -ccbin takes a compiler path only, so nvcc runs {} without it", w.display(), host.cxx.display()));
        }
    }
    let ccbin_key = match (&opts.ccbin, env_var) {
        (Some(_), _) => format!("{MANIFEST_KEY}.ccbin"),
        (None, Some(var)) => format!("the environment variable {var}"),
        (None, None) => "the cc crate's C++ compiler (CXX)".to_string(),
    };
    super::argv::check_nvcc_shell_safe(&ccbin_path.to_string_lossy(), &ccbin_key, &ctx.manifest.path)?;
    let ccbin = tool::resolve_at(&CCBIN, &ccbin_path, ccbin_source, &ccbin_origin, ctx.env, ctx.cache)
        .map_err(|e| if opts.ccbin.is_some() { e.file(&ctx.manifest.path).key(format!("{MANIFEST_KEY}.ccbin")) } else { e })?;
    Ok((ccbin, ccbin_args))
}

/// nvcc reads `NVCC_PREPEND_FLAGS`/`NVCC_APPEND_FLAGS` ([`super::argv::NVCC_ENV_FLAGS`]) itself
/// and hands them to its shell: read here (declared to cargo), checked like every value nvcc
/// shells out, and set on the tool so they enter every action's fingerprint (a change
/// recompiles).
///
/// # Errors
/// [`ErrorKind::Manifest`] for a value nvcc's shell would evaluate.
pub fn nvcc_env_flags(nvcc: &mut Tool, ctx: &RuleContext) -> Result<()> {
    for var in super::argv::NVCC_ENV_FLAGS {
        if let Some(value) = ctx.env.get_nonempty(var) {
            super::argv::check_nvcc_shell_safe(&value, &format!("the environment variable {var}"), &ctx.manifest.path)?;
            nvcc.env.push((var.to_string(), value.into()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_target_directories_and_runtime_candidates() {
        assert_eq!(cuda_target_dirs("x86_64-unknown-linux-gnu"), ["x86_64-linux"]);
        assert_eq!(cuda_target_dirs("aarch64-unknown-linux-gnu"), ["sbsa-linux", "aarch64-linux"]);
        assert!(cuda_target_dirs("x86_64-pc-windows-msvc").is_empty() && cuda_target_dirs("riscv64gc-unknown-linux-gnu").is_empty());
        let kit = Toolkit { root: PathBuf::from("/cuda"), version: None, found_by: String::new() };
        let cross = CudaTarget { triple: "aarch64-unknown-linux-gnu".into(), cross: true, dirs: cuda_target_dirs("aarch64-unknown-linux-gnu") };
        assert_eq!(kit.runtime_candidates(&cross), [PathBuf::from("/cuda/targets/sbsa-linux/lib"), PathBuf::from("/cuda/targets/aarch64-linux/lib")]);
        let native = CudaTarget { triple: "x86_64-unknown-linux-gnu".into(), cross: false, dirs: cuda_target_dirs("x86_64-unknown-linux-gnu") };
        assert_eq!(kit.runtime_candidates(&native), [PathBuf::from("/cuda/lib64"), PathBuf::from("/cuda/lib"), PathBuf::from("/cuda/targets/x86_64-linux/lib")]);
    }
}
