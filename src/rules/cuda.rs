//! CUDA (`.cu`) to objects, archived into one static library linked into the crate
//! (upstream-facts 3.1; issue 3). Two routes, chosen by declaration
//! (`[package.metadata.mcpp.cuda] compiler = "nvcc" | "clang"`), never by what is installed:
//!
//! - nvcc: `-ccbin <host c++> -gencode arch=compute_XX,code=sm_XX` per architecture, plus
//!   `-gencode arch=compute_P,code=compute_P` for the portable floor (`ptx>=`/`floor>=`, default
//!   the highest architecture), so the binary runs without JIT on the listed GPUs and JITs on
//!   newer ones; `-Xcompiler -fPIC`; `-O3` (any `OPT_LEVEL` but 0) or `-O0 -lineinfo` (`OPT_LEVEL=0`); `-MMD -MF`.
//! - clang: `-x cuda --cuda-path=<toolkit> --cuda-gpu-arch=<arch>` per architecture, PTX for
//!   the same portable floor only (`--no-cuda-include-ptx=all --cuda-include-ptx=sm_P`),
//!   `-fPIC`, `-O3`/`-O0`, `-MD -MF`.
//!
//! Both: the island header as a forced include (`-include`) for the island's device half,
//! `-I`/`-D` from the manifest, then `flags` unexamined, then `-c <src> -o <obj>`.
//!
//! The toolkit (headers, `libcudart_static.a` in `lib`/`lib64`/`targets/*/lib`) comes from
//! `cuda.toolkit`, then `NVCC`/the `nvcc` tool choice, `CUDA_PATH`, `CUDA_HOME`, then PATH
//! (warned). Architectures: the accelerator entry's list; `native` or no list probes the GPUs
//! of this machine with `nvidia-smi` and refuses on a machine without one. Where the driver
//! can be probed (libcuda's `cuDriverGetVersion`), a toolkit whose major version is newer than
//! the driver's is refused before anything compiles (CUDA minor-version compatibility makes
//! the major the floor); where no probe answers, nothing is stated or refused.

use super::{LinkDirective, Rule, RuleContext, RulePlan};
use crate::accel::{arch_number, Backend};
use crate::env::Env;
use crate::error::{Error, ErrorKind, Result};
use crate::archive::ArchiveFormat;
use crate::graph::{Action, Builtin, Role};
use crate::manifest::{CudaCompilerName, CudaOptions, Cudart};
use crate::sources::DeviceSource;
use crate::tool::{self, Tool, ToolChoices, ToolSource, ToolSpec};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The exact `cuda-nvcc` payload version the nvcc route declares (CUDA 13.0: the H200
/// machines' driver 580 supports it).
pub const CUDA_NVCC_PAYLOAD: &str = "13.0.88";

/// nvcc: `NVCC`, then PATH.
pub const NVCC: ToolSpec = ToolSpec {
    name: "nvcc",
    programs: &["nvcc"],
    env_vars: &["NVCC", "MCPP_NVCC"],
    version_args: &["--version"],
    install_hint: "pip install nvidia-cuda-nvcc, or cargo mcpp fetch (the cuda-nvcc payload)",
    payload: Some("cuda-nvcc"),
};
/// The clang of the clang route: `MCPP_CUDA_CLANG`, then `clang++-19`/`clang++` on PATH.
pub const CLANG: ToolSpec = ToolSpec {
    name: "clang++",
    programs: &["clang++-19", "clang++"],
    env_vars: &["MCPP_CUDA_CLANG"],
    version_args: &["--version"],
    install_hint: "apt install clang-19",
    payload: None,
};
/// nvcc's host compiler (`-ccbin`).
pub const CCBIN: ToolSpec = ToolSpec { name: "ccbin", programs: &["c++"], env_vars: &["NVCC_CCBIN", "CUDAHOSTCXX"], version_args: &["--version"], install_hint: "apt install g++", payload: None };

const MANIFEST_KEY: &str = "package.metadata.mcpp.cuda";

/// The CUDA rule.
pub struct CudaRule;

/// A resolved CUDA toolkit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolkit {
    /// The root (`<root>/include/cuda.h`).
    pub root: PathBuf,
    /// Where `libcudart_static.a` is (`lib64`, `lib`, `targets/*/lib`), if anywhere.
    pub lib_dir: Option<PathBuf>,
    /// `CUDA_VERSION` of `include/cuda.h` as (major, minor), e.g. (13, 0).
    pub version: Option<(u32, u32)>,
    /// How it was found (for messages).
    pub found_by: String,
}

impl Toolkit {
    /// Read the toolkit at `root`; `None` when it has no `include/cuda_runtime.h`.
    pub fn at(root: &Path, found_by: impl Into<String>) -> Option<Toolkit> {
        if !root.join("include").join("cuda_runtime.h").is_file() {
            return None;
        }
        let mut candidates = vec![root.join("lib64"), root.join("lib")];
        if let Ok(rd) = std::fs::read_dir(root.join("targets")) {
            let mut t: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path().join("lib")).collect();
            t.sort();
            candidates.extend(t);
        }
        let lib_dir = candidates.into_iter().find(|d| d.join("libcudart_static.a").is_file() || shared_cudart(d).is_some());
        let version = std::fs::read_to_string(root.join("include").join("cuda.h")).ok().and_then(|t| {
            t.lines().find_map(|l| l.trim().strip_prefix("#define CUDA_VERSION").and_then(|v| v.trim().parse::<u32>().ok())).map(|v| (v / 1000, (v % 1000) / 10))
        });
        Some(Toolkit { root: root.to_path_buf(), lib_dir, version, found_by: found_by.into() })
    }
}

/// The nvcc program a build runs and how it was chosen (for the fingerprint and `why tool`).
#[derive(Debug, Clone)]
pub struct NvccChoice {
    /// The program (a toolkit's `bin/nvcc`, or a named wrapper).
    pub path: PathBuf,
    /// Where the choice came from.
    pub source: ToolSource,
    /// The line or variable that made it.
    pub origin: String,
}

/// Find the toolkit and the nvcc program, each in the resolver's order (seed 001):
///
/// - the program (what runs): `Build::tool("nvcc", ..)` / `[package.metadata.mcpp.tools] nvcc`,
///   then `NVCC`, `MCPP_NVCC`, then `MCPP_TOOL_NVCC`, else the toolkit's own `bin/nvcc`;
/// - the toolkit (headers, cudart): `cuda.toolkit`, the toolkit the named program sits in,
///   `CUDA_PATH`, `CUDA_HOME`, the installed `cuda-nvcc` payload, then nvcc on PATH (warned).
///
/// # Errors
/// [`ErrorKind::ToolNotFound`] naming every way to provide it, in order, and what was tried;
/// [`ErrorKind::Manifest`] when the payload is declared (mcpp.lock, a pin) but not installed.
pub fn find_toolkit(opts: &CudaOptions, manifest_dir: &Path, tools: &ToolChoices, env: &Env) -> Result<(Toolkit, NvccChoice, Option<String>)> {
    let mut tried = Vec::new();
    let named: Option<(PathBuf, ToolSource, String)> = if let Some(p) = tools.builder.get("nvcc") {
        let at = tools.builder_lines.get("nvcc").cloned().unwrap_or_else(|| "build.rs".into());
        Some((p.clone(), ToolSource::Builder, format!("{at} Build::tool(\"nvcc\", ..)")))
    } else if let Some(p) = tools.manifest.get("nvcc") {
        let line = tools.manifest_lines.get("nvcc").map(|l| format!(":{l}")).unwrap_or_default();
        Some((p.clone(), ToolSource::Manifest(tools.manifest_path.clone()), format!("{}{line} [package.metadata.mcpp.tools] nvcc", tools.manifest_path.display())))
    } else {
        let ovr = tool::override_var("nvcc");
        NVCC.env_vars.iter().map(|v| v.to_string()).chain(std::iter::once(ovr.clone())).find_map(|var| {
            env.get_nonempty(&var).map(|v| {
                let source = if var == ovr { ToolSource::Override(var.clone()) } else { ToolSource::Env(var.clone()) };
                (PathBuf::from(&v), source, format!("the environment variable {var}={v}"))
            })
        })
    };
    let named = named.map(|(p, source, origin)| {
        let p = if p.is_relative() && p.components().count() == 1 {
            tool::find_on_path(&p.to_string_lossy(), env).unwrap_or(p)
        } else if p.is_relative() {
            manifest_dir.join(p)
        } else {
            p
        };
        NvccChoice { path: p, source, origin }
    });
    let with_program = |t: Toolkit, source: ToolSource, origin: String| -> NvccChoice {
        named.clone().unwrap_or_else(|| NvccChoice { path: t.root.join("bin").join("nvcc"), source, origin })
    };
    if let Some(t) = &opts.toolkit {
        let root = if t.is_absolute() { t.clone() } else { manifest_dir.join(t) };
        let key = format!("{MANIFEST_KEY}.toolkit");
        let Some(kit) = Toolkit::at(&root, key.clone()) else {
            return Err(not_found(vec![format!("{key} names `{}`, which has no include/cuda_runtime.h", root.display())], env).key(key));
        };
        let choice = with_program(kit.clone(), ToolSource::ManifestKey { manifest: tools.manifest_path.clone(), key: format!("[{MANIFEST_KEY}] toolkit") }, format!("{} [{MANIFEST_KEY}] toolkit", tools.manifest_path.display()));
        return Ok((kit, choice, None));
    }
    if let Some(n) = &named {
        let real = std::fs::canonicalize(&n.path).unwrap_or_else(|_| n.path.clone());
        match real.parent().and_then(Path::parent).and_then(|r| Toolkit::at(r, n.origin.clone())) {
            Some(t) => return Ok((t, n.clone(), None)),
            None => tried.push(format!("nvcc `{}` ({}) is not inside a toolkit root; the toolkit comes from the next ways", n.path.display(), n.origin)),
        }
    }
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(v) = env.get_nonempty(var) {
            match Toolkit::at(Path::new(&v), var) {
                Some(t) => {
                    let c = with_program(t.clone(), ToolSource::Derived(format!("the CUDA toolkit named by {var}")), format!("the environment variable {var}={v}"));
                    return Ok((t, c, None));
                }
                None => {
                    // A named root that is no toolkit is refused, never replaced by a later way.
                    tried.push(format!("{var}=`{v}` has no include/cuda_runtime.h"));
                    return Err(not_found(tried, env).key(var.to_string()));
                }
            }
        }
    }
    match tools.payloads.get("cuda-nvcc") {
        Some(crate::payload::Availability::Ready { installed, why, .. }) => {
            let by = format!("payload cuda-nvcc {} ({why})", installed.version);
            match Toolkit::at(&installed.root, by.clone()) {
                Some(t) => {
                    let c = with_program(t.clone(), ToolSource::Payload { name: "cuda-nvcc".into(), version: installed.version.clone() }, format!("{by}, installed in {}", installed.dir.display()));
                    return Ok((t, c, None));
                }
                None => tried.push(format!("the payload cuda-nvcc {} at `{}` has no include/cuda_runtime.h", installed.version, installed.root.display())),
            }
        }
        Some(crate::payload::Availability::Missing { version, declared_by: Some(by), .. }) => {
            return Err(Error::new(ErrorKind::Manifest, format!("the CUDA rule needs the payload cuda-nvcc {version}, which is declared ({by}) but not installed"))
                .detail("build.rs never downloads; payloads are installed by `cargo mcpp fetch` (and by `cargo mcpp build` before it starts cargo)")
                .help(format!("run `{}`", tools.fetch_command)));
        }
        Some(crate::payload::Availability::Missing { version, .. }) => {
            tried.push(format!("payload cuda-nvcc {version} (not installed; `{}` installs it)", tools.fetch_command));
        }
        Some(crate::payload::Availability::Refused(e)) => return Err(e.clone()),
        None => {}
    }
    if let Some(nvcc) = tool::find_on_path("nvcc", env) {
        let real = std::fs::canonicalize(&nvcc).unwrap_or(nvcc.clone());
        if let Some(t) = real.parent().and_then(Path::parent).and_then(|r| Toolkit::at(r, "PATH")) {
            let w = format!(
                "the CUDA toolkit was found through nvcc on PATH ({}); declare it instead: [package.metadata.mcpp.cuda] toolkit = \"{}\" or CUDA_PATH={}",
                nvcc.display(),
                t.root.display(),
                t.root.display()
            );
            let c = with_program(t.clone(), ToolSource::Path, format!("PATH ({})", nvcc.display()));
            return Ok((t, c, Some(w)));
        }
        tried.push(format!("nvcc on PATH (`{}`) is not inside a toolkit root", nvcc.display()));
    }
    let mut e = not_found(tried, env);
    if !tools.fetch_command.is_empty() {
        e = e.help(format!("or install the cuda-nvcc payload: `{}`", tools.fetch_command));
    }
    Err(e)
}

fn not_found(tried: Vec<String>, env: &Env) -> Error {
    let mut e = Error::new(ErrorKind::ToolNotFound, "no CUDA toolkit found");
    for t in tried {
        e = e.detail(t);
    }
    e.detail("cargo-mcpp looks for it in this order; provide it in any one of these ways:")
        .detail(format!("  1. in Cargo.toml: [{}] toolkit = \"/path/to/cuda\"", MANIFEST_KEY))
        .detail("     or nvcc named: cargo_mcpp::Build::new().tool(\"nvcc\", \"/path/to/cuda/bin/nvcc\") or [package.metadata.mcpp.tools] nvcc = \"...\"")
        .detail("  2. the environment: NVCC or MCPP_NVCC=/path/to/cuda/bin/nvcc, CUDA_PATH or CUDA_HOME=/path/to/cuda")
        .detail("  3. the global override: MCPP_TOOL_NVCC=/path/to/cuda/bin/nvcc")
        .detail("  4. the payload cuda-nvcc: `cargo mcpp fetch --manifest-path <Cargo.toml>` installs it")
        .detail("  5. nvcc on PATH (a warning asks you to declare it)")
        .help(format!(
            "install a toolkit (e.g. `pip install nvidia-cuda-nvcc nvidia-cuda-runtime nvidia-cuda-crt nvidia-nvvm`) and name it, or build with {} for the host fallback",
            crate::report::no_accel_way(env)
        ))
}

/// The architectures to compile for: the entry's list, with `native` (or an absent list)
/// replaced by the compute capabilities `nvidia-smi` reports on this machine.
///
/// # Errors
/// [`ErrorKind::Accel`] when `native`/no list meets a machine without an NVIDIA GPU (naming the
/// key to set), or an architecture is not a CUDA one (`sm_XX`, `sm_XXa`, `sm_XXf`).
pub fn resolve_archs(archs: &[String], accel_text: &str, env: &Env) -> Result<Vec<String>> {
    let wants_native = archs.is_empty() || archs.iter().any(|a| a == "native");
    let mut out: Vec<String> = archs.iter().filter(|a| *a != "native").cloned().collect();
    if wants_native {
        let probed = probe_gpu_archs(env);
        if probed.is_empty() {
            return Err(Error::new(ErrorKind::Accel, format!("the accelerator entry `{accel_text}` asks for the GPUs of this machine, and it has no NVIDIA GPU"))
                .key("package.metadata.mcpp.accel")
                .detail("`{native}` (or no architecture list) means \"the compute capabilities nvidia-smi reports here\";")
                .detail("nvidia-smi found none, and compiling for no architecture would give an empty or garbage -arch.")
                .help(format!("name the architectures: accel = \"cuda13.0+{{sm_90}}\" in [package.metadata.mcpp], or {}", crate::report::accel_way(env, "cuda13.0+{sm_80,sm_90}")))
                .help(format!("or build with {} for the host fallback", crate::report::no_accel_way(env))));
        }
        for a in probed {
            if !out.contains(&a) {
                out.push(a);
            }
        }
    }
    for a in &out {
        if !is_cuda_arch(a) {
            return Err(Error::new(ErrorKind::Accel, format!("`{a}` in `{accel_text}` is not a CUDA architecture"))
                .key("package.metadata.mcpp.accel")
                .help("CUDA architectures are compute capabilities: sm_80, sm_89, sm_90, sm_90a, sm_100f, ..."));
        }
    }
    Ok(out)
}

/// `sm_<digits>` with an optional `a`/`f` suffix.
pub fn is_cuda_arch(a: &str) -> bool {
    let Some(rest) = a.strip_prefix("sm_") else { return false };
    let digits = rest.trim_end_matches(['a', 'f']);
    !digits.is_empty() && digits.len() + 1 >= rest.len() && digits.chars().all(|c| c.is_ascii_digit())
}

/// The compute capabilities of this machine's GPUs as `sm_XX`, from
/// `nvidia-smi --query-gpu=compute_cap --format=csv,noheader`; empty when nvidia-smi is absent,
/// fails, or lists nothing.
pub fn probe_gpu_archs(env: &Env) -> Vec<String> {
    let Some(smi) = tool::find_on_path("nvidia-smi", env) else { return Vec::new() };
    let Some(stdout) = tool::probe(&smi, &["--query-gpu=compute_cap", "--format=csv,noheader"]) else { return Vec::new() };
    let mut archs = Vec::new();
    for line in stdout.lines() {
        let digits: String = line.trim().chars().filter(|c| c.is_ascii_digit()).collect();
        if !digits.is_empty() && line.trim().contains('.') {
            let a = format!("sm_{digits}");
            if !archs.contains(&a) {
                archs.push(a);
            }
        }
    }
    archs
}

/// The shared CUDA runtime in `dir`: `libcudart.so`, else the highest `libcudart.so.N`.
fn shared_cudart(dir: &Path) -> Option<String> {
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

/// The portable (PTX) architecture number: the floor (`ptx>=90`, `floor>=sm_90`) when given,
/// else the highest architecture's number.
pub fn ptx_arch(archs: &[String], floor: Option<&str>) -> Option<u64> {
    floor.and_then(arch_number).or_else(|| archs.iter().filter_map(|a| arch_number(a)).max())
}

/// The CUDA version of the installed driver as (major, minor), through libcuda's
/// `cuDriverGetVersion`; `None` where no driver library loads (no fact is stated then).
pub fn probe_driver_version() -> Option<(u32, u32)> {
    #[cfg(target_os = "linux")]
    {
        use std::ffi::{c_char, c_int, c_void};
        extern "C" {
            fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
            fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
        }
        const RTLD_NOW: c_int = 2;
        // SAFETY: dlopen/dlsym are called with NUL-terminated literals; the symbol, when found,
        // is libcuda's `CUresult cuDriverGetVersion(int*)`, called with a valid pointer. The
        // library stays loaded (no dlclose), so the function pointer never dangles.
        unsafe {
            let handle = dlopen(c"libcuda.so.1".as_ptr(), RTLD_NOW);
            if handle.is_null() {
                return None;
            }
            let sym = dlsym(handle, c"cuDriverGetVersion".as_ptr());
            if sym.is_null() {
                return None;
            }
            let f: extern "C" fn(*mut c_int) -> c_int = std::mem::transmute(sym);
            let mut v: c_int = 0;
            if f(&mut v) != 0 || v <= 0 {
                return None;
            }
            Some(((v / 1000) as u32, ((v % 1000) / 10) as u32))
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// The driver floor (seed 002 "facts and floors"): a toolkit whose major version is newer than
/// the driver's cannot run on it (minor versions within one major are compatible).
///
/// # Errors
/// [`ErrorKind::Accel`] naming both versions.
pub fn check_driver_floor(toolkit: Option<(u32, u32)>, driver: Option<(u32, u32)>, toolkit_root: &Path) -> Result<()> {
    if let (Some(t), Some(d)) = (toolkit, driver) {
        if t.0 > d.0 {
            return Err(Error::new(ErrorKind::Accel, format!("the CUDA toolkit is {}.{} and this machine's driver supports CUDA {}.{}", t.0, t.1, d.0, d.1))
                .file(toolkit_root)
                .detail("A runtime of a newer major version than the driver's fails at its first call")
                .detail("(cudaErrorInsufficientDriver), so this is refused before compiling.")
                .help(format!("use a CUDA {}.x toolkit ([package.metadata.mcpp.cuda] toolkit or CUDA_PATH), or update the driver", d.0)));
        }
    }
    Ok(())
}

/// The characters nvcc's sub-steps would evaluate: nvcc runs its steps (preprocessor,
/// cudafe++, cicc, ptxas, the host compiler) through `sh`, each argument inside double quotes,
/// where `$` (expansion, `$(...)`), `` ` `` (command substitution), `"` and `\` keep their
/// meaning; a control character (a newline) ends the command.
pub const NVCC_SHELL_CHARS: &[char] = &['$', '`', '"', '\\'];

/// The first character of `value` that nvcc would hand to a shell to evaluate, if any.
pub fn nvcc_shell_char(value: &str) -> Option<char> {
    value.chars().find(|c| NVCC_SHELL_CHARS.contains(c) || c.is_control())
}

fn nvcc_shell_refusal(what: &str, c: char) -> Error {
    Error::new(ErrorKind::Manifest, format!("{what} contains {c:?}, which nvcc would evaluate in a shell; refused before nvcc runs"))
        .detail("nvcc runs its sub-steps through `sh` with each argument in double quotes, where `$(...)`, backticks, `$VAR`, `\"` and `\\` are interpreted: the value would run as a command or change.")
}

/// Refuse `value` (from `key`: a manifest key or where the value came from) when nvcc would
/// hand it to a shell to evaluate ([`NVCC_SHELL_CHARS`], control characters).
///
/// # Errors
/// [`ErrorKind::Manifest`] naming the manifest file, the key and the way out.
pub fn check_nvcc_shell_safe(value: &str, key: &str, manifest_path: &Path) -> Result<()> {
    match nvcc_shell_char(value) {
        None => Ok(()),
        Some(c) => Err(nvcc_shell_refusal(&format!("`{value}` ({key})"), c)
            .file(manifest_path)
            .key(key.to_string())
            .help("write the value without these characters (a define's value can be spelled in the source instead), or use compiler = \"clang\" in [package.metadata.mcpp.cuda], which runs no shell")),
    }
}

/// A CUDA define's name must be an identifier, as SPIR-V's are (`-DNAME=value`; on the nvcc
/// route the name also reaches a shell).
///
/// # Errors
/// [`ErrorKind::Manifest`] naming the file and `package.metadata.mcpp.cuda.defines.<name>`.
pub fn check_define_name(name: &str, manifest_path: &Path) -> Result<()> {
    let ok = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        return Ok(());
    }
    Err(Error::new(ErrorKind::Manifest, format!("`{name}` is not a preprocessor macro name"))
        .file(manifest_path)
        .key(format!("{MANIFEST_KEY}.defines.{name}"))
        .help("a define's name is an identifier ([A-Za-z_][A-Za-z0-9_]*); its value goes on the right: NAME = \"value\""))
}

/// The nvcc route's manifest values and source names, checked with [`check_nvcc_shell_safe`].
fn check_nvcc_values(opts: &crate::manifest::CudaOptions, sources: &[&DeviceSource], manifest_path: &Path) -> Result<()> {
    for (name, value) in &opts.defines {
        check_nvcc_shell_safe(value, &format!("{MANIFEST_KEY}.defines.{name}"), manifest_path)?;
    }
    for flag in &opts.flags {
        check_nvcc_shell_safe(flag, &format!("{MANIFEST_KEY}.flags"), manifest_path)?;
    }
    for dir in &opts.includes {
        check_nvcc_shell_safe(&dir.to_string_lossy(), &format!("{MANIFEST_KEY}.includes"), manifest_path)?;
    }
    if let Some(ccbin) = &opts.ccbin {
        check_nvcc_shell_safe(&ccbin.to_string_lossy(), &format!("{MANIFEST_KEY}.ccbin"), manifest_path)?;
    }
    for s in sources {
        if let Some(c) = nvcc_shell_char(&s.rel) {
            return Err(nvcc_shell_refusal(&format!("the source file name `{}`", s.rel), c)
                .file(&s.path)
                .key("package.metadata.mcpp.sources")
                .help("rename the file, or use compiler = \"clang\" in [package.metadata.mcpp.cuda], which runs no shell"));
        }
    }
    Ok(())
}

/// Every argument of an nvcc action, last: paths cargo-mcpp adds (the package directory, the
/// target directory, the toolkit) reach the shell too.
fn check_nvcc_argv(args: &[OsString], manifest_path: &Path) -> Result<()> {
    for a in args {
        let text = a.to_string_lossy();
        if let Some(c) = nvcc_shell_char(&text) {
            return Err(nvcc_shell_refusal(&format!("the nvcc argument `{text}`"), c)
                .file(manifest_path)
                .help("move the package, the target directory (CARGO_TARGET_DIR) or the toolkit to a path without these characters, or use compiler = \"clang\" in [package.metadata.mcpp.cuda], which runs no shell"));
        }
    }
    Ok(())
}

/// Everything the argv of one translation unit depends on.
#[derive(Debug, Clone)]
pub struct Invocation<'a> {
    /// The route.
    pub route: CudaCompilerName,
    /// The toolkit root (the clang route's `--cuda-path`).
    pub toolkit: &'a Path,
    /// nvcc's host compiler (nvcc route).
    pub ccbin: Option<&'a Path>,
    /// The architectures, e.g. `["sm_80", "sm_90"]`.
    pub archs: &'a [String],
    /// The PTX architecture number (nvcc route).
    pub ptx: Option<u64>,
    /// Optimise (release) or not (debug, with `-lineinfo` on nvcc).
    pub optimize: bool,
    /// Relocatable device code.
    pub rdc: bool,
    /// The forced include (the island header), for the island's device half.
    pub force_include: Option<&'a Path>,
    /// Include directories (absolute).
    pub includes: &'a [PathBuf],
    /// Definitions.
    pub defines: &'a BTreeMap<String, String>,
    /// Extra flags, appended last.
    pub flags: &'a [String],
}

/// The gencode arguments (nvcc): one `-gencode arch=compute_N,code=sm_N` per architecture,
/// then the PTX one.
pub fn gencode_args(archs: &[String], ptx: Option<u64>) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    for arch in archs {
        let suffix = arch.strip_prefix("sm_").unwrap_or(arch);
        a.push("-gencode".into());
        a.push(format!("arch=compute_{suffix},code=sm_{suffix}").into());
    }
    if let Some(p) = ptx {
        a.push("-gencode".into());
        a.push(format!("arch=compute_{p},code=compute_{p}").into());
    }
    a
}

/// The arguments (after the program) that compile `src` to `obj` writing `depfile`.
pub fn argv(inv: &Invocation, src: &Path, obj: &Path, depfile: &Path) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    match inv.route {
        CudaCompilerName::Nvcc => {
            if let Some(cc) = inv.ccbin {
                a.extend(["-ccbin".into(), cc.into()]);
            }
            a.extend(gencode_args(inv.archs, inv.ptx));
            a.extend(["-Xcompiler".into(), "-fPIC".into()]);
            if inv.optimize {
                a.push("-O3".into());
            } else {
                a.extend(["-O0".into(), "-lineinfo".into()]);
            }
            if inv.rdc {
                a.push("-rdc=true".into());
            }
        }
        CudaCompilerName::Clang => {
            a.extend(["-x".into(), "cuda".into()]);
            let mut p = OsString::from("--cuda-path=");
            p.push(inv.toolkit);
            a.push(p);
            for arch in inv.archs {
                a.push(format!("--cuda-gpu-arch={arch}").into());
            }
            // PTX for the portable floor only, as on the nvcc route (clang's default embeds
            // PTX for every architecture).
            if let Some(p) = inv.ptx {
                let floor = format!("sm_{p}");
                if !inv.archs.contains(&floor) {
                    a.push(format!("--cuda-gpu-arch={floor}").into());
                }
                a.push("--no-cuda-include-ptx=all".into());
                a.push(format!("--cuda-include-ptx={floor}").into());
            }
            a.extend(["-Wno-unknown-cuda-version".into(), "-fPIC".into()]);
            a.push(if inv.optimize { "-O3" } else { "-O0" }.into());
        }
    }
    if let Some(h) = inv.force_include {
        a.extend(crate::island::emit::force_include_args(h, false));
    }
    a.extend(crate::host::include_define_args(inv.includes, inv.defines));
    a.extend(inv.flags.iter().map(OsString::from));
    match inv.route {
        CudaCompilerName::Nvcc => a.extend(["-MMD".into(), "-MF".into(), depfile.into()]),
        CudaCompilerName::Clang => a.extend(["-MD".into(), "-MF".into(), depfile.into()]),
    }
    a.extend(["-c".into(), src.into(), "-o".into(), obj.into()]);
    a
}

/// A file name for an object of `rel`: readable, and unique per path (`a/b.cu` and `a_b.cu`
/// differ by the hash suffix), so archive members never collide.
pub fn object_name(rel: &str, ext: &str) -> String {
    let flat: String = rel.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' }).collect();
    format!("{flat}.{}.{ext}", &crate::fingerprint::sha256_hex(rel.as_bytes())[..8])
}

/// Plan the archive of `objects` (indices `deps` in the caller's action list) as
/// `<dir>/lib-<hash of the member list>/lib<name>.a`, written in process ([`crate::archive`]):
/// a new member list gets a new archive directory. Returns the action and the link directives.
pub fn archive(format: ArchiveFormat, name: &str, dir: &Path, objects: &[PathBuf], deps: Vec<usize>, cwd: &Path) -> (Action, Vec<LinkDirective>) {
    let list: String = objects.iter().map(|o| o.to_string_lossy().into_owned()).collect::<Vec<_>>().join("\n");
    let lib_dir = dir.join(format!("lib-{}", &crate::fingerprint::sha256_hex(list.as_bytes())[..12]));
    let lib = lib_dir.join(format!("lib{name}.a"));
    let writer = Tool {
        name: "archive writer".into(),
        path: PathBuf::from("(built into cargo-mcpp)"),
        version: crate::archive::writer_identity(format),
        source: ToolSource::Derived("built into cargo-mcpp".into()),
        env: Vec::new(),
        payload_root: None,
    };
    let mut args: Vec<OsString> = vec![lib.clone().into()];
    args.extend(objects.iter().map(|o| o.clone().into_os_string()));
    let action = Action {
        id: format!("archive:{name}"),
        description: format!("archive lib{name}.a ({} objects)", objects.len()),
        role: Role::Object,
        tool: writer,
        args,
        cwd: cwd.to_path_buf(),
        inputs: objects.to_vec(),
        outputs: vec![lib],
        depfile: None,
        include_dirs: Vec::new(),
        deps,
        builtin: Some(Builtin::Archive(format)),
    };
    (action, vec![LinkDirective::Search(lib_dir), LinkDirective::Lib(format!("static={name}"))])
}

impl Rule for CudaRule {
    fn tools(&self) -> &'static [ToolSpec] {
        &[NVCC, CLANG]
    }
    /// The nvcc route drives the `cuda-nvcc` payload at an exact version (the runtime must not
    /// be newer than the driver it meets; seed 000 "Each rule brings its own environment"),
    /// unless the project names a toolkit (`cuda.toolkit`, `NVCC`, `CUDA_PATH`, `CUDA_HOME`).
    /// The clang route needs a CUDA 12.x layout no payload ships yet, so it declares none.
    fn payloads(&self, manifest: &crate::manifest::Manifest) -> Vec<super::PayloadReq> {
        let opts = manifest.mcpp.cuda.clone().unwrap_or_default();
        if opts.toolkit.is_some() || opts.compiler.unwrap_or_default() != CudaCompilerName::Nvcc {
            return Vec::new();
        }
        vec![super::PayloadReq { payload: "cuda-nvcc", version: CUDA_NVCC_PAYLOAD, tool: NVCC, named_by_env: &["CUDA_PATH", "CUDA_HOME"] }]
    }
    fn name(&self) -> &'static str {
        "cuda"
    }
    fn backend(&self) -> Backend {
        Backend::Cuda
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["cu"]
    }

    fn plan(&self, ctx: &RuleContext, sources: &[&DeviceSource]) -> Result<RulePlan> {
        let opts = ctx.manifest.mcpp.cuda.clone().unwrap_or_default();
        let route = opts.compiler.unwrap_or_default();
        let rdc = opts.rdc.unwrap_or(false);
        if rdc && route == CudaCompilerName::Clang {
            return Err(Error::new(ErrorKind::Manifest, "relocatable device code (`rdc = true`) is planned for the nvcc route only")
                .file(&ctx.manifest.path)
                .key(format!("{MANIFEST_KEY}.rdc"))
                .help("use compiler = \"nvcc\", or drop `rdc`"));
        }
        for name in opts.defines.keys() {
            check_define_name(name, &ctx.manifest.path)?;
        }
        if route == CudaCompilerName::Nvcc {
            check_nvcc_values(&opts, sources, &ctx.manifest.path)?;
        }
        let mut plan = RulePlan::default();
        let accel_text = ctx.accel.to_string();
        if let Some(v) = ctx.accel.version.as_deref().filter(|v| !v.contains('.')) {
            return Err(Error::new(ErrorKind::Accel, format!("`{accel_text}` names CUDA {v} without a minor version"))
                .key("package.metadata.mcpp.accel")
                .detail("A CUDA version is major.minor: the entry is checked against the toolkit's, and 13 alone would match any 13.x.")
                .help(format!("write cuda{v}.0 (or the minor of your toolkit), in `accel` or `--accel`")));
        }
        let archs = resolve_archs(&ctx.accel.archs, &accel_text, ctx.env)?;
        let ptx = ptx_arch(&archs, ctx.accel.floor.as_deref());
        let highest = archs.iter().filter_map(|a| arch_number(a)).max();
        if let (Some(f), Some(h)) = (ctx.accel.floor.as_deref().and_then(arch_number), highest) {
            if f > h {
                return Err(Error::new(ErrorKind::Accel, format!("the PTX floor of `{accel_text}` (compute_{f}) is above every listed architecture (highest sm_{h})"))
                    .key("package.metadata.mcpp.accel")
                    .detail("The floor names the architecture the portable PTX is generated for; it must be one the entry compiles for or an older one,")
                    .detail("or GPUs between the listed ones and the floor would get neither SASS nor PTX they can run.")
                    .help(format!("lower the floor (e.g. ptx>={h}), or list sm_{f} among the architectures")));
            }
        }
        if route == CudaCompilerName::Clang && opts.ccbin.is_some() {
            plan.warnings.push(format!("{MANIFEST_KEY}.ccbin is nvcc's host compiler and is not used with compiler = \"clang\" (clang compiles the host side itself)"));
        }
        let (toolkit, nvcc_choice, warning) = match find_toolkit(&opts, ctx.manifest.dir(), ctx.tools, ctx.env) {
            Ok(found) => found,
            Err(e) => {
                tool::record_refusal(&NVCC, &e, ctx.tool_cache);
                return Err(e);
            }
        };
        plan.warnings.extend(warning);
        if let (Some(want), Some((major, minor))) = (&ctx.accel.version, toolkit.version) {
            let nums = ctx.accel.version_numbers();
            if nums.first() != Some(&(major as u64)) || nums.get(1).copied().unwrap_or(0) != minor as u64 {
                return Err(Error::new(ErrorKind::Accel, format!("the accelerator names cuda{want}, but the CUDA toolkit found is CUDA {major}.{minor}"))
                    .detail(format!("toolkit: {} (found through {})", toolkit.root.display(), toolkit.found_by))
                    .detail("The version in the accelerator entry is the CUDA the build compiles with; a different toolkit would make the build lie about it.")
                    .help(format!("write the entry as cuda{major}.{minor}+{{...}} (in `accel` or `--accel`), or point the toolkit at a CUDA {want} installation ([{MANIFEST_KEY}] toolkit, CUDA_PATH)")));
            }
        }
        check_driver_floor(toolkit.version, probe_driver_version(), &toolkit.root)?;
        let host = crate::host::toolchain(ctx.env, ctx.facts, ctx.tool_cache)?;
        let (compiler, ccbin) = match route {
            CudaCompilerName::Nvcc => {
                let nvcc = tool::resolve_at(&NVCC, &nvcc_choice.path, nvcc_choice.source.clone(), &nvcc_choice.origin, ctx.env, ctx.tool_cache)?;
                let ccbin_path = opts
                    .ccbin
                    .as_ref()
                    .map(|p| if p.components().count() > 1 && p.is_relative() { ctx.manifest.dir().join(p) } else { p.clone() })
                    .or_else(|| CCBIN.env_vars.iter().find_map(|v| ctx.env.get_nonempty(v)).map(PathBuf::from))
                    .unwrap_or_else(|| host.cxx.clone());
                let (ccbin_source, ccbin_origin) = match (&opts.ccbin, CCBIN.env_vars.iter().find(|v| ctx.env.get_nonempty(v).is_some())) {
                    (Some(_), _) => (ToolSource::ManifestKey { manifest: ctx.manifest.path.clone(), key: format!("[{MANIFEST_KEY}] ccbin") }, format!("{} [{MANIFEST_KEY}] ccbin", ctx.manifest.path.display())),
                    (None, Some(var)) => (ToolSource::Env(var.to_string()), format!("the environment variable {var}")),
                    (None, None) => (ToolSource::Derived("the cc crate's C++ compiler (CXX or its default)".into()), "the cc crate".into()),
                };
                let ccbin_key = match (&opts.ccbin, CCBIN.env_vars.iter().find(|v| ctx.env.get_nonempty(v).is_some())) {
                    (Some(_), _) => format!("{MANIFEST_KEY}.ccbin"),
                    (None, Some(var)) => format!("the environment variable {var}"),
                    (None, None) => "the cc crate's C++ compiler (CXX)".to_string(),
                };
                check_nvcc_shell_safe(&ccbin_path.to_string_lossy(), &ccbin_key, &ctx.manifest.path)?;
                let ccbin = tool::resolve_at(&CCBIN, &ccbin_path, ccbin_source, &ccbin_origin, ctx.env, ctx.tool_cache)
                    .map_err(|e| if opts.ccbin.is_some() { e.file(&ctx.manifest.path).key(format!("{MANIFEST_KEY}.ccbin")) } else { e })?;
                (nvcc, Some(ccbin))
            }
            CudaCompilerName::Clang => {
                let (clang, w) = tool::resolve(&CLANG, ctx.tools, ctx.env, ctx.tool_cache)?;
                plan.warnings.extend(w);
                (clang, None)
            }
        };
        let includes = crate::host::resolve_includes(ctx.manifest, MANIFEST_KEY, &opts.includes)?;
        let optimize = opts.optimize.unwrap_or(ctx.facts.opt_level.optimizes());
        let root = ctx.manifest.dir();
        let out_dir = ctx.work_dir.join("cuda");
        let mut objects = Vec::new();
        for s in sources {
            let obj = out_dir.join("obj").join(object_name(&s.rel, "o"));
            let depfile = obj.with_extension("d");
            let island_half = ctx.island.filter(|i| i.device_sources.contains(&s.path)).map(|i| i.header.as_path());
            let inv = Invocation {
                route,
                toolkit: &toolkit.root,
                ccbin: ccbin.as_ref().map(|t| t.path.as_path()),
                archs: &archs,
                ptx,
                optimize,
                rdc,
                force_include: island_half,
                includes: &includes,
                defines: &opts.defines,
                flags: &opts.flags,
            };
            let mut inputs = vec![s.path.clone()];
            inputs.extend(island_half.map(Path::to_path_buf));
            plan.actions.push(Action {
                id: format!("cuda:{}", s.rel),
                description: format!("{} {}", compiler.name, s.rel),
                role: Role::Object,
                tool: compiler.clone(),
                args: argv(&inv, &s.path, &obj, &depfile),
                cwd: root.to_path_buf(),
                inputs,
                outputs: vec![obj.clone()],
                depfile: Some(depfile),
                include_dirs: includes.clone(),
                deps: Vec::new(),
                builtin: None,
            });
            objects.push(obj);
        }
        if route == CudaCompilerName::Nvcc {
            for a in &plan.actions {
                check_nvcc_argv(&a.args, &ctx.manifest.path)?;
            }
        }
        let compiled: Vec<usize> = (0..plan.actions.len()).collect();
        if rdc {
            let dlink = out_dir.join("obj").join("device-link.o");
            let mut args: Vec<OsString> = Vec::new();
            if let Some(cc) = &ccbin {
                args.extend(["-ccbin".into(), cc.path.clone().into()]);
            }
            args.push("-dlink".into());
            args.extend(gencode_args(&archs, ptx));
            args.extend(["-Xcompiler".into(), "-fPIC".into()]);
            args.extend(objects.iter().map(|o| o.clone().into_os_string()));
            args.extend(["-o".into(), dlink.clone().into()]);
            plan.actions.push(Action {
                id: "cuda:device-link".into(),
                description: format!("nvcc -dlink ({} objects)", objects.len()),
                role: Role::Object,
                tool: compiler.clone(),
                args,
                cwd: root.to_path_buf(),
                inputs: objects.clone(),
                outputs: vec![dlink.clone()],
                depfile: None,
                include_dirs: Vec::new(),
                deps: compiled.clone(),
                builtin: None,
            });
            objects.push(dlink);
        }
        let lib_name = format!("mcpp_cuda_{}", crate::surface::names::identifier(&ctx.manifest.package_name, "package"));
        let deps: Vec<usize> = (0..plan.actions.len()).collect();
        let (action, link) = archive(host.archive_format, &lib_name, &out_dir, &objects, deps, root);
        plan.actions.push(action);
        plan.link.extend(link);
        let cudart = opts.cudart.unwrap_or_default();
        if cudart != Cudart::None || rdc {
            match &toolkit.lib_dir {
                Some(d) => plan.link.push(LinkDirective::Search(d.clone())),
                None => {
                    return Err(Error::new(ErrorKind::ToolNotFound, format!("the CUDA toolkit at {} has no libcudart_static.a", toolkit.root.display()))
                        .file(&toolkit.root)
                        .detail("looked in lib64/, lib/ and targets/*/lib/")
                        .help(format!("install the runtime (PyPI nvidia-cuda-runtime) into the toolkit, or set {MANIFEST_KEY}.cudart = \"none\" and link it yourself")))
                }
            }
        }
        if rdc {
            plan.link.push(LinkDirective::Lib("static=cudadevrt".into()));
        }
        match cudart {
            Cudart::Static => {
                plan.link.push(LinkDirective::Lib("static=cudart_static".into()));
                for l in ["dl", "rt", "pthread"] {
                    plan.link.push(LinkDirective::Lib(format!("dylib={l}")));
                }
            }
            Cudart::Shared => {
                let dir = toolkit.lib_dir.clone().unwrap_or_default();
                let Some(file) = shared_cudart(&dir) else {
                    return Err(Error::new(ErrorKind::ToolNotFound, format!("{MANIFEST_KEY}.cudart = \"shared\", and the CUDA toolkit at {} has no libcudart.so", toolkit.root.display()))
                        .key(format!("{MANIFEST_KEY}.cudart"))
                        .help("use cudart = \"static\" (the default), or a toolkit with the shared runtime"));
                };
                // `libcudart.so` when the toolkit has the development link, else the versioned
                // file itself (the PyPI runtime ships only `libcudart.so.13`); an rpath so the
                // program finds it where it was linked.
                if file == "libcudart.so" {
                    plan.link.push(LinkDirective::Lib("dylib=cudart".into()));
                } else {
                    plan.link.push(LinkDirective::Lib(format!("dylib:+verbatim={file}")));
                }
                plan.link.push(LinkDirective::Arg(format!("-Wl,-rpath,{}", dir.display())));
            }
            Cudart::None => plan.warnings.push(format!(
                "{MANIFEST_KEY}.cudart = \"none\": link a CUDA runtime yourself (e.g. cargo::rustc-link-lib=static=cudart_static), or the link fails with undefined __cudaRegisterFatBinary"
            )),
        }
        // nvcc's host stub uses the C++ runtime (`__cxa_guard_acquire`), so it is linked on every route.
        if let Some(std) = &host.cpp_stdlib {
            plan.link.push(LinkDirective::Lib(format!("dylib={std}")));
        }
        plan.tools.push(compiler);
        plan.tools.extend(ccbin);
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_architectures_and_ptx() {
        assert!(is_cuda_arch("sm_90") && is_cuda_arch("sm_90a") && is_cuda_arch("sm_100f"));
        assert!(!is_cuda_arch("gfx942") && !is_cuda_arch("sm_") && !is_cuda_arch("sm_9x0") && !is_cuda_arch("native"));
        let archs = vec!["sm_80".to_string(), "sm_90".to_string()];
        assert_eq!(ptx_arch(&archs, None), Some(90));
        assert_eq!(ptx_arch(&archs, Some("80")), Some(80));
        let g: Vec<String> = gencode_args(&archs, Some(90)).iter().map(|s| s.to_string_lossy().into_owned()).collect();
        assert_eq!(g, ["-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_90,code=compute_90"]);
    }

    #[test]
    fn driver_floor_refuses_a_newer_major_only() {
        let root = Path::new("/cuda");
        assert!(check_driver_floor(Some((13, 5)), Some((13, 0)), root).is_ok());
        assert!(check_driver_floor(Some((13, 0)), None, root).is_ok());
        let e = check_driver_floor(Some((13, 0)), Some((12, 8)), root).unwrap_err().to_string();
        assert!(e.contains("toolkit is 13.0") && e.contains("supports CUDA 12.8"), "{e}");
    }

    #[test]
    fn native_without_a_gpu_is_refused_naming_the_key() {
        let mut env = Env::empty();
        env.set("PATH", "/nonexistent");
        let e = resolve_archs(&["native".to_string()], "cuda13.0+{native}", &env).unwrap_err().to_string();
        assert!(e.contains("has no NVIDIA GPU") && e.contains("package.metadata.mcpp.accel"), "{e}");
        let e = resolve_archs(&[], "cuda13.0", &env).unwrap_err().to_string();
        assert!(e.contains("has no NVIDIA GPU"), "{e}");
        assert_eq!(resolve_archs(&["sm_90".to_string()], "cuda13.0+{sm_90}", &env).unwrap(), ["sm_90"]);
    }
}
