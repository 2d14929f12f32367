//! The CUDA rule's toolkit and the programs of a route: the toolkit from the one resolver
//! ([`tool::resolve_toolkit`], the toolkit shared with HIP and SYCL,
//! [`crate::rules::cuda_toolkit`]: `cuda.toolkit`, the toolkit a named nvcc sits in,
//! `CUDA_PATH`, `CUDA_HOME`, the `cuda-nvcc` payload, nvcc on PATH), its version checked
//! against the accelerator entry and the driver, the runtime directory of the build's target
//! (`targets/<dir>/lib` by `TARGET`), and the compilers: nvcc with its host compiler (`-ccbin`,
//! [`CCBIN`]) or clang ([`CLANG`]).

use super::probe;
use super::{CudaCompilerName, CudaOptions, CCBIN, CLANG, MANIFEST_KEY};
use crate::rules::cuda_toolkit::{check_version, root_choice, CudaTarget, Toolkit, NVCC};
use crate::config::env::Env;
use crate::error::{Error, ErrorKind, Result};
use crate::rules::host::HostToolchain;
use crate::rules::RuleContext;
use crate::tool::{self, Tool, ToolSource};
use std::path::PathBuf;

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
pub fn locate(ctx: &RuleContext, route: CudaCompilerName, warnings: &mut Vec<String>) -> Result<(Toolkit, Option<Tool>)> {
    let root_choice = root_choice(ctx.manifest);
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
        (None, None) => match &host.declared_at {
            Some(at) => (ToolSource::Derived(format!("the declared host toolchain ({at})")), at.clone()),
            None => (ToolSource::Derived("the cc crate's C++ compiler (CXX or its default)".into()), "the cc crate".into()),
        },
    };
    if let (ToolSource::Derived(_), Some(m)) = (&ccbin_source, &host.managed) {
        // nvcc's `-ccbin` takes one program, and zig is a C++ compiler only with its leading
        // argument (`zig c++`): nvcc would run `zig` alone.
        return Err(Error::new(ErrorKind::ToolNotFound, format!("nvcc cannot use the managed host toolchain {} as its host compiler (-ccbin)", m.package))
            .file(ctx.manifest.at_col("host-toolchain.managed"))
            .key("package.metadata.mcpp.host-toolchain.managed")
            .detail(format!("nvcc's -ccbin takes one program; {} is a C++ compiler only as `{} {}`", m.package, host.cxx.display(), m.leading.join(" ")))
            .help(format!("for a CUDA build, declare the host compiler with [package.metadata.mcpp.host-toolchain] cxx or layout instead of managed, name nvcc's host compiler with [{MANIFEST_KEY}] ccbin, or compile CUDA with clang: [{MANIFEST_KEY}] compiler = \"clang\"")));
    }
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
