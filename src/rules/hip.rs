//! HIP (`.hip`) to objects, archived into one static library linked into the crate
//! Upstream compiles HIP for NVIDIA GPUs only; this rule
//! compiles for both platforms, chosen by `[package.metadata.mcpp.hip] which`:
//!
//! - `amd`: `hipcc` (default; run with `HIP_PLATFORM=amd`, so an nvcc on PATH does not turn it
//!   into the NVIDIA driver) or clang (`compiler = "clang"`: `-x hip --rocm-path=<rocm>
//!   --rocm-device-lib-path=<bitcode>`), one `--offload-arch=<gfx>` per architecture of the
//!   `hip` entry (`hip5.2+{gfx90a,gfx1030}`) in one object, `-fPIC`, `-O3`/`-O0`, `-MD -MF`;
//!   links `amdhip64` from the ROCm's library directory. An architecture whose device library
//!   (`oclc_isa_version_<n>.bc`) the ROCm lacks is refused with that reason before anything runs
//!   (clang would fail with "cannot find ROCm device library").
//! - `nvidia`: clang++ `-x cuda -D__HIP_PLATFORM_NVIDIA__ -Wno-unknown-cuda-version
//!   --cuda-path=<CUDA toolkit> --cuda-gpu-arch=<sm>` per architecture of the `cuda` entry
//!   (`hip, cuda12.9+{sm_89}`), the HIP headers first on the include path (`-I<hip>/include`),
//!   `-fPIC`, `-O3`/`-O0`, `-MD -MF`; links the CUDA runtime statically (`cudart_static dl rt
//!   pthread`). The toolkit is the CUDA rule's (the one resolver, [`super::cuda_toolkit::CUDA_TOOLKIT`]),
//!   its version checked against the `cuda` entry.
//! - `auto` (default): AMD when the `hip` entry lists architectures, NVIDIA when only the `cuda`
//!   entry does; a set listing both is ambiguous and refused, naming both ways.
//!
//! Both: the island header as a forced include (`-include`) for the island's device half,
//! `-I`/`-D` from the manifest, then `flags`, then the depfile, `-c <src> -o <obj>`. The HIP
//! install (the ROCm root: `hip.rocm`, the root a named hipcc sits in, `ROCM_PATH`, `HIP_PATH`,
//! hipcc on PATH, warned) comes from the one resolver ([`ROCM`]); its version is read from
//! `<root>/include/hip/hip_version.h` and must be the `hip` entry's (`hip5.2`) when the entry
//! names one.
//!
//! [`HipRule::plan`] is a list of named steps: the platform ([`platform`]), then
//! `plan_amd` or `plan_nvidia` (install, version, architectures, compiler, argv), one
//! compile per source, the archive ([`crate::rules::link::archive`]) and the runtime's link directives.

use super::options::{self, CommonOptions, RuleOptions};
use super::{DeviceSource, Rule, RuleContext, RulePlan};
use crate::config::accel::{AccelEntry, Backend};
use crate::error::{Error, ErrorKind, Result};
use crate::engine::facts;
use crate::engine::graph::{Action, Expect, External, Role};
use crate::rules::host::HostToolchain;
use crate::rules::link::{self, LinkDirective};
use crate::config::manifest::{KeyDoc, Manifest};
use crate::rules::cuda_toolkit;
use crate::tool::{self, RootChoice, Tool, ToolSpec, ToolkitSpec};
use serde::Deserialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The options table of the rule.
const TABLE: &str = "package.metadata.mcpp.hip";
/// The lane name: the variant's directory of the objects and the archive (`mcpp_hip_<package>`).
const LANE: &str = "hip";

/// Which GPUs the HIP sources are compiled for (`which`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HipWhich {
    /// AMD when the `hip` entry lists architectures, NVIDIA when only the `cuda` entry does
    /// (default); both listing architectures is refused as ambiguous.
    #[default]
    Auto,
    /// AMD GPUs (ROCm), the `hip` entry's `gfx` architectures.
    Amd,
    /// NVIDIA GPUs (clang's CUDA mode with the HIP headers), the `cuda` entry's `sm_` architectures.
    Nvidia,
}

/// The compiler of the AMD platform (`compiler`); the NVIDIA platform always runs clang.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HipCompiler {
    /// The ROCm's `hipcc` driver (default), run with `HIP_PLATFORM=amd`.
    #[default]
    Hipcc,
    /// clang++ in HIP mode (`-x hip --rocm-path --rocm-device-lib-path`).
    Clang,
}

/// `[package.metadata.mcpp.hip]`; every key has a default. Read once per build by [`Rule::read_options`] ([`options::read_boxed`]).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", expecting = "a table of HIP rule keys ([package.metadata.mcpp.hip])")]
pub struct HipOptions {
    /// `"auto"` (default), `"amd"` or `"nvidia"` ([`HipWhich`]).
    pub which: Option<HipWhich>,
    /// `"hipcc"` (default) or `"clang"` on the AMD platform ([`HipCompiler`]).
    pub compiler: Option<HipCompiler>,
    /// The ROCm (HIP) root holding `include/hip/hip_version.h` (and `bin/hipcc`), relative to
    /// the package root or absolute; first in the resolver's order for the root.
    pub rocm: Option<PathBuf>,
    /// The directory of the AMD device libraries (`oclc_isa_version_*.bc`); default: found in
    /// the ROCm root (`amdgcn/bitcode`, `lib/<multiarch>/amdgcn/bitcode`,
    /// `lib/llvm/lib/clang/<v>/lib/amdgcn/bitcode`).
    pub device_lib_path: Option<PathBuf>,
    /// A script that sets ROCm up, sourced once; its variables go on the AMD platform's
    /// compiler ([`crate::tool::env_script`]).
    pub env_script: Option<PathBuf>,
    /// The arguments `env_script` is sourced with.
    pub env_script_args: Option<Vec<String>>,
    /// `includes`, `defines`, `optimize`, `flags` (before the depfile, source and output arguments).
    #[serde(skip)]
    pub common: CommonOptions,
}

impl RuleOptions for HipOptions {
    const KEYS: &'static [KeyDoc] = OPTION_KEYS;
    fn common(&self) -> &CommonOptions {
        &self.common
    }
    fn common_mut(&mut self) -> &mut CommonOptions {
        &mut self.common
    }
}

/// The keys of [`HipOptions`], documented (the guide's generated manifest reference).
const OPTION_KEYS: &[KeyDoc] = &[
    KeyDoc {
        key: "which",
        default: "`\"auto\"`",
        meaning: "the platform: `\"amd\"` (ROCm, the `hip` entry's `gfx` architectures: `hip5.2+{gfx90a}`), `\"nvidia\"` (clang `-x cuda -D__HIP_PLATFORM_NVIDIA__`, the `cuda` entry's architectures: `hip, cuda12.9+{sm_89}`) or `\"auto\"`: AMD when the `hip` entry lists architectures, NVIDIA when only the `cuda` entry does; both listing architectures is refused as ambiguous",
    },
    KeyDoc { key: "compiler", default: "`\"hipcc\"`", meaning: "on AMD: `\"hipcc\"` (run with `HIP_PLATFORM=amd`) or `\"clang\"` (clang++ `-x hip --rocm-path=<rocm> --rocm-device-lib-path=<dir>`; `MCPP_HIP_CLANG`, else clang++-19/clang++ on PATH). The NVIDIA platform always runs clang++" },
    KeyDoc { key: "rocm", default: "discovered", meaning: "the ROCm (HIP) root, holding `include/hip/hip_version.h`. Without it: the root a named hipcc sits in (`Build::tool(\"hipcc\", ..)`, `tools.hipcc`, `HIPCC`, `MCPP_HIPCC`, `MCPP_TOOL_HIPCC`), then `ROCM_PATH`, `HIP_PATH`, then hipcc on PATH (warned; Debian's `/usr/bin/hipcc` gives `/usr`). Its HIP version must be the `hip` entry's when the entry names one" },
    KeyDoc { key: "device-lib-path", default: "found in the ROCm root", meaning: "the AMD device libraries (`oclc_isa_version_<n>.bc`): an architecture without one is refused before compiling. Default: `<rocm>/amdgcn/bitcode`, `<rocm>/lib/<multiarch>/amdgcn/bitcode` or `<rocm>/lib/llvm/lib/clang/<v>/lib/amdgcn/bitcode`, the first that exists" },
    crate::tool::env_script::ENV_SCRIPT_DOC,
    crate::tool::env_script::ENV_SCRIPT_ARGS_DOC,
    CommonOptions::INCLUDES_DOC,
    CommonOptions::DEFINES_DOC,
    KeyDoc { key: "optimize", default: "`true` in release profiles", meaning: "`-O3` when true, `-O0` when false" },
    KeyDoc { key: "flags", default: "`[]`", meaning: "extra arguments, after the rule's own and before the depfile, source and output arguments (`-MD -MF <d> -c <src> -o <obj>`), passed unexamined" },
];

/// The ROCm (HIP) install, as the resolver reads it: `[package.metadata.mcpp.hip] rocm`, then
/// `ROCM_PATH`, `HIP_PATH`; a root holds `bin/hipcc` and `include/hip/hip_version.h`.
pub const ROCM: ToolkitSpec = ToolkitSpec {
    root_key: Some("[package.metadata.mcpp.hip] rocm"),
    root_vars: &["ROCM_PATH", "HIP_PATH"],
    marker_files: &["include/hip/hip_version.h"],
    ..ToolkitSpec::new("ROCm (HIP)", "bin/hipcc")
};

/// hipcc, in its ROCm: the explicit choice, `HIPCC`, `MCPP_HIPCC`, `MCPP_TOOL_HIPCC`, the ROCm
/// root ([`ROCM`]), then PATH.
pub const HIPCC: ToolSpec = ToolSpec {
    name: "hipcc",
    programs: &["hipcc"],
    env_vars: &["HIPCC", "MCPP_HIPCC"],
    version_args: &["--version"],
    install_hint: "apt install hipcc libamdhip64-dev (Debian 12: HIP 5.2), or a ROCm release (ROCM_PATH=/opt/rocm)",
    toolchain_package: None,
    toolkit: Some(&ROCM),
};

/// The clang++ of `compiler = "clang"` and of the NVIDIA platform: `MCPP_HIP_CLANG`, then
/// `clang++-19`/`clang++` on PATH.
pub const CLANG: ToolSpec = ToolSpec {
    name: "clang++",
    programs: &["clang++-19", "clang++"],
    env_vars: &["MCPP_HIP_CLANG"],
    version_args: &["--version"],
    install_hint: "apt install clang-19",
    toolchain_package: None,
    toolkit: None,
};

/// The platform a build compiles its HIP sources for, and the architectures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Platform {
    /// AMD, with the `hip` entry's `gfx` architectures.
    Amd(Vec<String>),
    /// NVIDIA, with the `cuda` entry (its architectures and version).
    Nvidia(AccelEntry),
}

/// The platform of `which` for the set's `hip` entry and its `cuda` entry (`hip, cuda12.9+{sm_89}`).
///
/// # Errors
/// [`ErrorKind::Accel`]: `auto` with both entries listing architectures (ambiguous) or neither;
/// `amd` without `gfx` architectures in the `hip` entry; `nvidia` without a `cuda` entry listing
/// architectures.
pub fn platform(which: HipWhich, hip: &AccelEntry, cuda: Option<&AccelEntry>) -> Result<Platform> {
    let cuda_archs = cuda.filter(|c| !c.archs.is_empty());
    let set = match cuda {
        Some(c) => format!("{hip}, {c}"),
        None => hip.to_string(),
    };
    let accel_err = |message: String| Error::new(ErrorKind::Accel, message);
    match which {
        HipWhich::Auto => match (hip.archs.is_empty(), cuda_archs) {
            (false, None) => Ok(Platform::Amd(hip.archs.clone())),
            (true, Some(c)) => Ok(Platform::Nvidia(c.clone())),
            (false, Some(c)) => Err(accel_err(format!("the accelerator set `{set}` names HIP for both platforms: AMD ({}) and NVIDIA ({})", hip.archs.join(", "), c.archs.join(", ")))
                .detail("With which = \"auto\" the HIP rule compiles for AMD when the hip entry lists architectures and for NVIDIA when only the cuda entry does; this set does both, and one object cannot be both.")
                .help(format!("say which in [{TABLE}]: which = \"amd\" (the gfx architectures) or which = \"nvidia\" (the cuda entry's)"))
                .help("or drop the architectures of the platform you do not want from `accel`")),
            (true, None) => Err(accel_err(format!("the accelerator set `{set}` names HIP without an architecture to compile for"))
                .detail("HIP compiles for AMD GPUs listed in the hip entry (hip5.2+{gfx90a}), or for NVIDIA GPUs listed in a cuda entry beside it (hip, cuda12.9+{sm_89}).")
                .help("list the AMD architectures: accel = \"hip5.2+{gfx90a}\", or the NVIDIA ones: accel = \"hip, cuda12.9+{sm_89}\"")),
        },
        HipWhich::Amd => {
            if hip.archs.is_empty() {
                return Err(accel_err(format!("[{TABLE}] which = \"amd\", and the hip entry of `{set}` lists no AMD architecture"))
                    .help("list them in the hip entry: accel = \"hip5.2+{gfx90a,gfx1030}\""));
            }
            Ok(Platform::Amd(hip.archs.clone()))
        }
        HipWhich::Nvidia => match cuda_archs {
            Some(c) => Ok(Platform::Nvidia(c.clone())),
            None => Err(accel_err(format!("[{TABLE}] which = \"nvidia\", and the accelerator set `{set}` has no cuda entry listing architectures"))
                .detail("HIP on NVIDIA compiles for the GPUs of the cuda entry beside the hip entry.")
                .help("add one: accel = \"hip, cuda12.9+{sm_89}\"")),
        },
    }
}

/// The HIP runtime floor, through the fact channel ([`crate::engine::facts`]): the fact
/// `hip-runtime` (the version of the `libamdhip64.so` the program links, in `lib_dir`, asked
/// through `hipRuntimeGetVersion`) must be at least the `hip` entry's version, or the version
/// of the headers at `root` when the entry names none: a runtime older than the HIP the kernels
/// were compiled for fails at load.
///
/// # Errors
/// [`ErrorKind::Accel`] in the channel's shape, naming `accel`.
fn check_runtime_floor(ctx: &RuleContext, root: &Path, lib_dir: &Path) -> Result<()> {
    let (version, from) = match (&ctx.accel.version, hip_version(root)) {
        (Some(_), _) => (ctx.accel.version_numbers(), format!("the accelerator entry `{}`", ctx.accel)),
        (None, Some((a, b, _))) => (vec![a.into(), b.into()], format!("the HIP headers at {}", root.display())),
        (None, None) => return Ok(()),
    };
    let floor = facts::Floor {
        fact: "hip-runtime",
        what: "the HIP runtime (libamdhip64)",
        relation: facts::Relation::AtLeast,
        version: facts::Version(version),
        needed_by: from,
        why: "A runtime older than the HIP the kernels are compiled for fails when the program loads them.".into(),
        help: format!("install a newer HIP runtime, or lower the HIP version of the entry (in `accel` or `--accel`) to the runtime's and point at a matching ROCm ([{TABLE}] rocm, ROCM_PATH)"),
        file: None,
        key: None,
    };
    facts::require(&floor, ctx.env, || probe_runtime_version(lib_dir)).map(|_| ()).map_err(|e| ctx.accel_refusal(e))
}

/// The version of the HIP runtime `<lib_dir>/libamdhip64.so`, through its
/// `hipRuntimeGetVersion` (`HIP_VERSION`: major * 10000000 + minor * 100000 + patch); `None`
/// where it does not load or answer (no fact is stated then). Asked once per directory.
pub fn probe_runtime_version(lib_dir: &Path) -> Option<facts::Reading> {
    static SEEN: std::sync::Mutex<Vec<(PathBuf, Option<facts::Reading>)>> = std::sync::Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, r)) = seen.iter().find(|(d, _)| d == lib_dir) {
        return r.clone();
    }
    let lib = lib_dir.join("libamdhip64.so");
    // SAFETY: loading the HIP runtime runs its initialisers, which expect nothing of the caller;
    // the symbol, when found, is `hipError_t hipRuntimeGetVersion(int*)` (the type written
    // here), called with a valid pointer while the library is loaded. The library then stays
    // loaded for the life of the process (a GPU runtime is not made to be unloaded).
    let read = unsafe {
        libloading::Library::new(&lib).ok().and_then(|l| {
            let v = {
                let f: libloading::Symbol<unsafe extern "C" fn(*mut std::ffi::c_int) -> std::ffi::c_int> = l.get(b"hipRuntimeGetVersion\0").ok()?;
                let mut v: std::ffi::c_int = 0;
                (f(&mut v) == 0 && v > 0).then_some(v as u64)?
            };
            std::mem::forget(l);
            Some(v)
        })
    };
    let r = read.map(|v| facts::Reading { version: facts::Version(vec![v / 10_000_000, (v / 100_000) % 100, v % 100_000]), source: format!("{}, hipRuntimeGetVersion", lib.display()) });
    seen.push((lib_dir.to_path_buf(), r.clone()));
    r
}

/// The HIP version of the install at `root`, from `include/hip/hip_version.h`
/// (`HIP_VERSION_MAJOR`, `_MINOR`, `_PATCH`): (major, minor, patch); `None` when it does not say.
pub fn hip_version(root: &Path) -> Option<(u32, u32, u32)> {
    let text = std::fs::read_to_string(root.join("include/hip/hip_version.h")).ok()?;
    let get = |name: &str| {
        text.lines().find_map(|l| {
            let rest = l.trim().strip_prefix("#define")?.trim_start();
            let value = rest.strip_prefix(name)?;
            value.starts_with([' ', '\t']).then(|| value.trim().parse::<u32>().ok()).flatten()
        })
    };
    Some((get("HIP_VERSION_MAJOR")?, get("HIP_VERSION_MINOR")?, get("HIP_VERSION_PATCH").unwrap_or(0)))
}

/// The `hip` entry's version (`hip5.2`) is the install's, when both are known.
///
/// # Errors
/// [`ErrorKind::Accel`] naming both versions and the install; when the entry names a version
/// and the install's `hip_version.h` does not say one, naming the install.
pub fn check_version(entry: &AccelEntry, root: &Path, found_by: &str) -> Result<()> {
    let Some(want) = &entry.version else { return Ok(()) };
    let Some((major, minor, patch)) = hip_version(root) else {
        // The entry names a version the build must not lie about: an install that does not say
        // its own is refused, not taken on trust.
        return Err(Error::new(ErrorKind::Accel, format!("the accelerator names hip{want}, but the HIP found does not say its version"))
            .detail(format!("HIP: {} (found through {found_by}); include/hip/hip_version.h has no readable HIP_VERSION_MAJOR and HIP_VERSION_MINOR", root.display()))
            .detail("The version in the accelerator entry is the HIP the build compiles with; it is checked against the install's include/hip/hip_version.h.")
            .help(format!("point at a complete HIP {want} install ([{TABLE}] rocm, ROCM_PATH), or drop the version from the entry (hip+{{...}}) to take the install as it is")));
    };
    let nums = entry.version_numbers();
    if nums.first() == Some(&u64::from(major)) && nums.get(1).copied().unwrap_or(0) == u64::from(minor) {
        return Ok(());
    }
    Err(Error::new(ErrorKind::Accel, format!("the accelerator names hip{want}, but the HIP found is HIP {major}.{minor} ({major}.{minor}.{patch})"))
        .detail(format!("HIP: {} (found through {found_by}; the version from include/hip/hip_version.h)", root.display()))
        .detail("The version in the accelerator entry is the HIP the build compiles with; a different one would make the build lie about it.")
        .help(format!("write the entry as hip{major}.{minor}+{{...}} (in `accel` or `--accel`), or point at a HIP {want} install ([{TABLE}] rocm, ROCM_PATH)")))
}

/// The AMD device-library directories of a ROCm root, in the order looked at:
/// `amdgcn/bitcode` (ROCm releases up to 5), `lib/<multiarch>/amdgcn/bitcode` (Debian),
/// `lib/llvm/lib/clang/<v>/lib/amdgcn/bitcode` (ROCm 6).
pub fn device_lib_candidates(root: &Path) -> Vec<PathBuf> {
    let mut c = vec![root.join("amdgcn/bitcode")];
    let subdirs = |d: PathBuf| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d).map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect()).unwrap_or_default();
        v.sort();
        v
    };
    c.extend(subdirs(root.join("lib")).into_iter().map(|d| d.join("amdgcn/bitcode")).filter(|d| d.is_dir()));
    c.extend(subdirs(root.join("lib/llvm/lib/clang")).into_iter().map(|d| d.join("lib/amdgcn/bitcode")).filter(|d| d.is_dir()));
    c
}

/// The device-library file of a `gfx` architecture: `oclc_isa_version_<n>.bc`, `<n>` the part
/// after `gfx` without target features (`gfx90a:xnack+` -> `90a`); `None` for a name that is no
/// `gfx` architecture.
pub fn device_lib_file(arch: &str) -> Option<String> {
    let isa = arch.strip_prefix("gfx")?.split(':').next()?;
    (!isa.is_empty() && isa.chars().all(|c| c.is_ascii_alphanumeric())).then(|| format!("oclc_isa_version_{isa}.bc"))
}

/// The architectures a device-library directory has libraries for (`gfx90a`, ...), sorted.
fn known_gfx(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_prefix("oclc_isa_version_")?.strip_suffix(".bc").map(|n| format!("gfx{n}")))).collect())
        .unwrap_or_default();
    v.sort_by_key(|a| (a.len(), a.clone()));
    v
}

/// Every architecture of the `hip` entry has a device library in `dir`.
///
/// # Errors
/// [`ErrorKind::Accel`] naming the architecture, the file looked for and the architectures the
/// directory has.
pub fn check_device_libs(archs: &[String], dir: &Path) -> Result<()> {
    for a in archs {
        let Some(file) = device_lib_file(a) else { continue };
        if !dir.join(&file).is_file() {
            let known = known_gfx(dir);
            return Err(Error::new(ErrorKind::Accel, format!("the ROCm device libraries have no library for {a}: this HIP cannot compile for it"))
                .detail(format!("looked for {} (device libraries: {})", dir.join(&file).display(), dir.display()))
                .detail(format!("architectures it has: {}", if known.is_empty() { "none".to_string() } else { known.join(", ") }))
                .help(format!("drop {a} from the hip entry of `accel`, or install a ROCm whose device libraries support it and name it ([{TABLE}] rocm or device-lib-path, ROCM_PATH)")));
        }
    }
    Ok(())
}

/// The directory holding `libamdhip64.so` in a ROCm root: `lib`, `lib64`, or `lib/<multiarch>`.
pub fn amdhip_dir(root: &Path) -> Option<PathBuf> {
    let mut c = vec![root.join("lib"), root.join("lib64")];
    let mut multi: Vec<PathBuf> = std::fs::read_dir(root.join("lib")).map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect()).unwrap_or_default();
    multi.sort();
    c.extend(multi);
    c.into_iter().find(|d| d.join("libamdhip64.so").exists())
}

/// A directory the linker searches anyway (no `-L`, no rpath needed): `/usr/lib...`, `/lib...`.
fn system_lib_dir(dir: &Path) -> bool {
    dir.starts_with("/usr/lib") || dir.starts_with("/lib") || dir.starts_with("/usr/lib64") || dir.starts_with("/lib64")
}

/// The explicit ROCm root of `opts` (`hip.rocm`, made absolute against the package root).
fn root_choice(opts: &HipOptions, manifest: &Manifest) -> Option<RootChoice> {
    let r = opts.rocm.as_ref()?;
    let root = if r.is_absolute() { r.clone() } else { manifest.dir().join(r) };
    Some(RootChoice { root, manifest: manifest.path.clone(), line: manifest.line("hip.rocm"), key: format!("{TABLE}.rocm") })
}

/// The host fallback as a way out of a missing install.
fn with_fallback(e: Error, env: &crate::config::env::Env) -> Error {
    if e.kind != ErrorKind::ToolNotFound {
        return e;
    }
    e.help(format!("or build with {} for the host fallback", crate::output::report::no_accel_way(env)))
}

/// What one compile needs beyond the source: the compiler, its leading arguments (platform,
/// install, architectures), the resolved includes, the options.
pub struct Invocation<'a> {
    /// The platform's leading arguments (`--offload-arch=...` or `-x cuda ... --cuda-gpu-arch=...`).
    pub front: &'a [OsString],
    /// Optimise (`-O3`) or not (`-O0`).
    pub optimize: bool,
    /// The island header, forced (`-include`) for the island's device half.
    pub force_include: Option<&'a Path>,
    /// Resolved include directories (`-I`).
    pub includes: &'a [PathBuf],
    /// The options (defines, flags).
    pub opts: &'a HipOptions,
}

/// One source's arguments: the front, `-fPIC`, `-O3|-O0`, `-include <hdr>`, `-I..`, `-D..`,
/// `<flags>`, `-MD -MF <d> -c <src> -o <obj>`.
pub fn argv(inv: &Invocation, src: &Path, obj: &Path, depfile: &Path) -> Vec<OsString> {
    let mut a: Vec<OsString> = inv.front.to_vec();
    a.push("-fPIC".into());
    a.push(if inv.optimize { "-O3" } else { "-O0" }.into());
    if let Some(h) = inv.force_include {
        a.extend(["-include".into(), h.into()]);
    }
    for inc in inv.includes {
        let mut s = OsString::from("-I");
        s.push(inc);
        a.push(s);
    }
    a.extend(inv.opts.common.define_args());
    a.extend(inv.opts.common.flags.iter().map(OsString::from));
    a.extend(["-MD".into(), "-MF".into(), depfile.into(), "-c".into(), src.into(), "-o".into(), obj.into()]);
    a
}

/// The AMD front: hipcc's `--offload-arch=<gfx>` each; clang's `-x hip --rocm-path=<root>
/// --rocm-device-lib-path=<dir>` then the same.
pub fn amd_front(compiler: HipCompiler, root: &Path, device_libs: &Path, archs: &[String]) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    if compiler == HipCompiler::Clang {
        a.extend(["-x".into(), "hip".into()]);
        let mut r = OsString::from("--rocm-path=");
        r.push(root);
        a.push(r);
        let mut d = OsString::from("--rocm-device-lib-path=");
        d.push(device_libs);
        a.push(d);
    }
    a.extend(archs.iter().map(|g| OsString::from(format!("--offload-arch={g}"))));
    a
}

/// The NVIDIA front: `-x cuda -D__HIP_PLATFORM_NVIDIA__
/// -Wno-unknown-cuda-version --cuda-path=<toolkit> --cuda-gpu-arch=<sm>` each, then
/// `-I<hip>/include` (the HIP headers before every other include directory).
pub fn nvidia_front(cuda_root: &Path, hip_root: &Path, archs: &[String]) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec!["-x".into(), "cuda".into(), "-D__HIP_PLATFORM_NVIDIA__".into(), "-Wno-unknown-cuda-version".into()];
    let mut p = OsString::from("--cuda-path=");
    p.push(cuda_root);
    a.push(p);
    a.extend(archs.iter().map(|s| OsString::from(format!("--cuda-gpu-arch={s}"))));
    let mut i = OsString::from("-I");
    i.push(hip_root.join("include"));
    a.push(i);
    a
}

/// The HIP rule.
pub struct HipRule;

impl Rule for HipRule {
    fn name(&self) -> &'static str {
        "hip"
    }
    fn backend(&self) -> Backend {
        Backend::Hip
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["hip"]
    }
    fn tools(&self) -> &'static [ToolSpec] {
        &[HIPCC, CLANG]
    }
    fn option_keys(&self) -> &'static [KeyDoc] {
        OPTION_KEYS
    }
    /// HIP on NVIDIA compiles for the `cuda` entry's architectures.
    fn borrows(&self) -> &'static [Backend] {
        &[Backend::Cuda]
    }
    fn read_options(&self, manifest: &Manifest) -> (options::RuleOptionsBox, Vec<Error>) {
        options::read_boxed::<HipOptions>(manifest, self.name())
    }
    /// A HIP version names its minor (`hip5.2`), and the architectures of a hip entry are AMD
    /// ones (`gfx90a`); NVIDIA architectures belong to the cuda entry beside it.
    fn check_entry(&self, entry: &AccelEntry) -> Result<()> {
        if let Some(v) = entry.version.as_deref().filter(|v| !v.contains('.')) {
            return Err(Error::new(ErrorKind::Accel, format!("`{entry}` names HIP {v} without a minor version"))
                .detail("A HIP version is major.minor: the entry is checked against include/hip/hip_version.h, and 5 alone would match any 5.x.")
                .help(format!("write hip{v}.2 (or the minor of your HIP), in `accel` or `--accel`")));
        }
        if let Some(a) = entry.archs.iter().find(|a| device_lib_file(a).is_none()) {
            return Err(Error::new(ErrorKind::Accel, format!("`{}` in `{entry}` is not an AMD GPU architecture", crate::text::echo(a)))
                .detail("The hip entry lists AMD architectures (gfx90a, gfx1030, ...); HIP on NVIDIA takes the architectures of a cuda entry beside it.")
                .help("write AMD architectures in the hip entry (hip5.2+{gfx90a}), or NVIDIA ones in a cuda entry: hip, cuda12.9+{sm_89}"));
        }
        Ok(())
    }

    fn plan(&self, ctx: &RuleContext, sources: &[&DeviceSource]) -> Result<RulePlan> {
        let opts: &HipOptions = ctx.options()?;
        let which = opts.which.unwrap_or_default();
        // A refusal of an explicit `which` names that key (the set is fine for the other platform).
        let platform = platform(which, ctx.accel, ctx.set.entry(Backend::Cuda)).map_err(|e| match which {
            HipWhich::Auto => ctx.accel_key(e),
            _ => e.file(ctx.manifest.at_col("hip.which")).key(format!("{TABLE}.which")),
        })?;
        let host = crate::rules::host::toolchain(ctx.manifest, ctx.env, ctx.facts, ctx.cache, ctx.tools)?;
        let mut plan = RulePlan::default();
        let (compiler, front, runtime) = match &platform {
            Platform::Amd(archs) => {
                let script = crate::tool::env_script::for_rule(self.name(), opts.env_script.as_deref(), opts.env_script_args.as_deref(), ctx.manifest, ctx.env, ctx.cache)?;
                plan.watch.extend(script.as_ref().map(|s| s.script.clone()));
                plan_amd(ctx, opts, archs, &host, script.as_ref(), &mut plan.warnings)?
            }
            Platform::Nvidia(cuda) => plan_nvidia(ctx, opts, cuda, &host, &mut plan.warnings)?,
        };
        let includes = opts.common.resolve_includes(ctx.manifest, self.name())?;
        let optimize = opts.common.optimize_or(ctx.facts.opt_level.optimizes());
        let mut objects = Vec::new();
        for s in sources {
            let obj = link::object_path(ctx.variant, LANE, &s.rel);
            let depfile = obj.with_extension("d");
            let island_half = ctx.island.filter(|i| i.device_sources.contains(&s.path)).map(|i| i.header.as_path());
            let inv = Invocation { front: &front, optimize, force_include: island_half, includes: &includes, opts };
            let mut inputs = vec![s.path.clone()];
            inputs.extend(island_half.map(Path::to_path_buf));
            plan.actions.push(Action::external(External {
                id: format!("hip:{}", s.rel),
                description: format!("{} {}", compiler.name, s.rel),
                role: Role::Object,
                tool: compiler.clone(),
                args: argv(&inv, &s.path, &obj, &depfile),
                cwd: ctx.manifest.dir().to_path_buf(),
                inputs,
                outputs: vec![obj.clone()],
            })
                .with_depfile(depfile, includes.clone())
                .with_expect(Expect::object(host.archive_format)));
            objects.push(obj);
        }
        let deps: Vec<usize> = (0..plan.actions.len()).collect();
        let (action, link) = link::archive(ctx.variant, LANE, &ctx.manifest.package_name, host.archive_format, &objects, deps, ctx.manifest.dir());
        plan.actions.push(action);
        plan.link.extend(link);
        plan.link.extend(runtime);
        plan.tools.push(compiler);
        Ok(plan)
    }
}

/// The AMD platform: the ROCm root (with hipcc from the resolver, or the root alone for clang),
/// its HIP version against the entry, the device libraries of every architecture, the compiler
/// (hipcc with `HIP_PLATFORM=amd`, or clang), the front, and the runtime: `amdhip64` (with its
/// directory and an rpath when it is not a system one) and the C++ runtime.
///
/// # Errors
/// The resolver's refusal (with the host fallback); a version mismatch; an architecture without
/// a device library; a ROCm without device libraries or without `libamdhip64.so`.
fn plan_amd(ctx: &RuleContext, opts: &HipOptions, archs: &[String], host: &HostToolchain, script: Option<&crate::tool::env_script::ScriptEnv>, warnings: &mut Vec<String>) -> Result<(Tool, Vec<OsString>, Vec<LinkDirective>)> {
    let compiler_choice = opts.compiler.unwrap_or_default();
    let root_choice = root_choice(opts, ctx.manifest);
    let (root, found_by, compiler) = match compiler_choice {
        HipCompiler::Hipcc => {
            let r = tool::resolve_toolkit_with(&HIPCC, ctx.tools, root_choice.as_ref(), script, ctx.env, ctx.cache).map_err(|e| with_fallback(e, ctx.env))?;
            warnings.extend(r.warning);
            let Some(kit) = r.toolkit else {
                return Err(Error::new(ErrorKind::ToolNotFound, "the resolver answered hipcc without a ROCm root").help("this is a defect of cargo-mcpp; report it"));
            };
            let mut hipcc = r.tool;
            // hipcc picks its platform from HIP_PLATFORM, else from whether nvcc is on PATH.
            hipcc.env.push(("HIP_PLATFORM".into(), "amd".into()));
            (kit.root, kit.found_by, hipcc)
        }
        HipCompiler::Clang => {
            let (kit, w) = tool::find_toolkit_root(&HIPCC, ctx.tools, root_choice.as_ref(), ctx.env).map_err(|e| with_fallback(e, ctx.env))?;
            warnings.extend(w);
            let (mut clang, w) = tool::resolve(&CLANG, ctx.tools, ctx.env, ctx.cache)?;
            warnings.extend(w);
            clang.env.extend(script.map(|s| s.vars.clone()).unwrap_or_default());
            (kit.root, kit.found_by, clang)
        }
    };
    check_version(ctx.accel, &root, &found_by).map_err(|e| ctx.accel_key(e))?;
    let device_libs = match &opts.device_lib_path {
        Some(d) => {
            let d = if d.is_absolute() { d.clone() } else { ctx.manifest.dir().join(d) };
            if !d.is_dir() {
                return Err(Error::new(ErrorKind::Manifest, format!("{TABLE}.device-lib-path names {}, which is no directory", crate::text::echo_path(&d)))
                    .file(ctx.manifest.at_col("hip.device-lib-path"))
                    .key(format!("{TABLE}.device-lib-path"))
                    .help("name the directory holding oclc_isa_version_*.bc, or leave the key out to find it in the ROCm root"));
            }
            d
        }
        None => match device_lib_candidates(&root).into_iter().find(|d| d.is_dir()) {
            Some(d) => d,
            None => {
                let looked: Vec<String> = device_lib_candidates(&root).iter().map(|d| d.display().to_string()).collect();
                return Err(Error::new(ErrorKind::ToolNotFound, format!("the ROCm at {} has no AMD device libraries", root.display()))
                    .detail(format!("looked in {} (and lib/*/amdgcn/bitcode, lib/llvm/lib/clang/*/lib/amdgcn/bitcode)", looked.join(", ")))
                    .detail(format!("ROCm found through {found_by}"))
                    .help(format!("install them (Debian: apt install rocm-device-libs), or name their directory: [{TABLE}] device-lib-path")));
            }
        },
    };
    check_device_libs(archs, &device_libs).map_err(|e| match &opts.device_lib_path {
        // The directory came from device-lib-path: the refusal points at that key.
        Some(_) => e.file(ctx.manifest.at_col("hip.device-lib-path")).key(format!("{TABLE}.device-lib-path")),
        None => ctx.accel_key(e),
    })?;
    let Some(lib_dir) = amdhip_dir(&root) else {
        return Err(Error::new(ErrorKind::ToolNotFound, format!("the ROCm at {} has no libamdhip64.so to link", root.display()))
            .detail(format!("looked in {}/lib, lib64 and lib/<multiarch>; ROCm found through {found_by}", root.display()))
            .help("install the HIP runtime (Debian: apt install libamdhip64-dev), or name a ROCm that has it ([package.metadata.mcpp.hip] rocm, ROCM_PATH)"));
    };
    check_runtime_floor(ctx, &root, &lib_dir)?;
    let mut link = Vec::new();
    if !system_lib_dir(&lib_dir) {
        link.push(LinkDirective::Search(lib_dir.clone()));
        link.push(LinkDirective::Arg(format!("-Wl,-rpath,{}", lib_dir.display())));
    }
    link.push(LinkDirective::Lib("dylib=amdhip64".into()));
    link.extend(link::cpp_runtime(host));
    Ok((compiler, amd_front(compiler_choice, &root, &device_libs, archs), link))
}

/// The NVIDIA platform: the HIP headers (the ROCm root's `include/`, which must have the NVIDIA
/// platform's `hip/nvidia_detail/`), the CUDA toolkit from the CUDA rule's resolver (its version
/// against the `cuda` entry), clang++, the front, and the CUDA runtime linked statically.
///
/// # Errors
/// The resolver's refusals; headers without the NVIDIA platform; a CUDA version mismatch; a
/// toolkit without `libcudart_static.a`.
fn plan_nvidia(ctx: &RuleContext, opts: &HipOptions, cuda: &AccelEntry, host: &HostToolchain, warnings: &mut Vec<String>) -> Result<(Tool, Vec<OsString>, Vec<LinkDirective>)> {
    if opts.compiler == Some(HipCompiler::Hipcc) {
        warnings.push(format!("{TABLE}.compiler = \"hipcc\" is the AMD compiler; HIP on NVIDIA runs clang++ -x cuda (every decision hipcc would make is made here)"));
    }
    let (kit, w) = tool::find_toolkit_root(&HIPCC, ctx.tools, root_choice(opts, ctx.manifest).as_ref(), ctx.env).map_err(|e| with_fallback(e, ctx.env))?;
    warnings.extend(w);
    check_version(ctx.accel, &kit.root, &kit.found_by).map_err(|e| ctx.accel_key(e))?;
    let nvidia_header = kit.root.join("include/hip/nvidia_detail/nvidia_hip_runtime.h");
    if !nvidia_header.is_file() {
        return Err(Error::new(ErrorKind::ToolNotFound, format!("the HIP headers at {} have no NVIDIA platform", kit.root.join("include").display()))
            .detail(format!("looked for {} (HIP found through {})", nvidia_header.display(), kit.found_by))
            .help(format!("name a HIP whose headers include hip/nvidia_detail (the hipother/hip-nvidia headers): [{TABLE}] rocm, ROCM_PATH, HIP_PATH")));
    }
    let cuda_root = cuda_toolkit::root_choice(ctx.manifest);
    let (cuda_kit, w) = tool::find_toolkit_root(&cuda_toolkit::NVCC, ctx.tools, cuda_root.as_ref(), ctx.env).map_err(|e| with_fallback(e, ctx.env))?;
    warnings.extend(w);
    let toolkit = cuda_toolkit::Toolkit::read(&cuda_kit.root, cuda_kit.found_by.clone());
    cuda_toolkit::check_version(cuda, &toolkit)?;
    let (clang, w) = tool::resolve(&CLANG, ctx.tools, ctx.env, ctx.cache)?;
    warnings.extend(w);
    let target = cuda_toolkit::CudaTarget::of_build(ctx.facts);
    let Some((lib_dir, _)) = toolkit.runtime_dir(&target) else {
        let looked: Vec<String> = toolkit.runtime_candidates(&target).iter().map(|d| d.display().to_string()).collect();
        return Err(Error::new(ErrorKind::ToolNotFound, format!("the CUDA toolkit at {} has no libcudart_static.a for HIP on NVIDIA", toolkit.root.display()))
            .detail(format!("looked in {}", looked.join(", ")))
            .help("install the runtime (PyPI nvidia-cuda-runtime) into the toolkit, or name one that has it ([package.metadata.mcpp.cuda] toolkit, CUDA_PATH)"));
    };
    let mut link = vec![LinkDirective::Search(lib_dir), LinkDirective::Lib("static=cudart_static".into())];
    link.extend(["dl", "rt", "pthread"].iter().map(|l| LinkDirective::Lib(format!("dylib={l}"))));
    link.extend(link::cpp_runtime(host));
    Ok((clang, nvidia_front(&toolkit.root, &kit.root, &cuda.archs), link))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Debian 12's HIP runtime (libamdhip64 5.2.21153) answers without a GPU; a directory
    /// without a runtime, or a file that is no library, states no fact.
    #[test]
    fn the_hip_runtime_version_is_read_from_the_installed_library() {
        let debian = Path::new("/usr/lib/x86_64-linux-gnu");
        if debian.join("libamdhip64.so").exists() {
            let r = probe_runtime_version(debian).expect("the installed HIP runtime answers");
            assert_eq!(r.version.0[..2], [5, 2], "{r:?}");
            assert!(r.source.ends_with("libamdhip64.so, hipRuntimeGetVersion"), "{r:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        assert!(probe_runtime_version(dir.path()).is_none());
        std::fs::write(dir.path().join("libamdhip64.so"), "").unwrap();
        let other = dir.path().join("sub");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("libamdhip64.so"), "not a library").unwrap();
        assert!(probe_runtime_version(&other).is_none());
    }

    fn entry(text: &str, backend: Backend) -> AccelEntry {
        crate::config::accel::AccelSet::parse(text).expect("a set").entry(backend).expect("the entry").clone()
    }

    #[test]
    fn the_platform_follows_which_and_refuses_an_ambiguous_set() {
        let amd = entry("hip5.2+{gfx90a,gfx1030}", Backend::Hip);
        assert_eq!(platform(HipWhich::Auto, &amd, None).unwrap(), Platform::Amd(vec!["gfx90a".into(), "gfx1030".into()]));
        let bare = entry("hip, cuda12.9+{sm_89}", Backend::Hip);
        let cuda = entry("hip, cuda12.9+{sm_89}", Backend::Cuda);
        assert!(matches!(platform(HipWhich::Auto, &bare, Some(&cuda)).unwrap(), Platform::Nvidia(c) if c.archs == ["sm_89"]));
        let both_hip = entry("hip5.2+{gfx90a}, cuda12.9+{sm_89}", Backend::Hip);
        let both_cuda = entry("hip5.2+{gfx90a}, cuda12.9+{sm_89}", Backend::Cuda);
        let e = platform(HipWhich::Auto, &both_hip, Some(&both_cuda)).unwrap_err().to_string();
        assert!(e.contains("both platforms") && e.contains("which = \"amd\""), "{e}");
        assert_eq!(platform(HipWhich::Amd, &both_hip, Some(&both_cuda)).unwrap(), Platform::Amd(vec!["gfx90a".into()]));
        assert!(matches!(platform(HipWhich::Nvidia, &both_hip, Some(&both_cuda)).unwrap(), Platform::Nvidia(_)));
        assert!(platform(HipWhich::Auto, &bare, None).unwrap_err().to_string().contains("without an architecture"));
        assert!(platform(HipWhich::Nvidia, &amd, None).is_err());
        assert!(platform(HipWhich::Amd, &bare, Some(&cuda)).is_err());
    }

    #[test]
    fn device_library_names_and_the_version_header() {
        assert_eq!(device_lib_file("gfx90a").as_deref(), Some("oclc_isa_version_90a.bc"));
        assert_eq!(device_lib_file("gfx1030").as_deref(), Some("oclc_isa_version_1030.bc"));
        assert_eq!(device_lib_file("gfx90a:xnack+").as_deref(), Some("oclc_isa_version_90a.bc"));
        assert_eq!(device_lib_file("sm_89"), None);
        assert_eq!(device_lib_file("gfx"), None);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("include/hip")).unwrap();
        std::fs::write(dir.path().join("include/hip/hip_version.h"), "#define HIP_VERSION_H\n#define HIP_VERSION_MAJOR 5\n#define HIP_VERSION_MINOR 2\n#define HIP_VERSION_PATCH 21153\n").unwrap();
        assert_eq!(hip_version(dir.path()), Some((5, 2, 21153)));
        let e = |t: &str| entry(t, Backend::Hip);
        assert!(check_version(&e("hip5.2+{gfx90a}"), dir.path(), "test").is_ok());
        assert!(check_version(&e("hip+{gfx90a}"), dir.path(), "test").is_ok());
        let err = check_version(&e("hip6.1+{gfx90a}"), dir.path(), "test").unwrap_err().to_string();
        assert!(err.contains("hip6.1") && err.contains("HIP 5.2"), "{err}");
        // A header that does not say its version: refused when the entry names one.
        let unsaid = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(unsaid.path().join("include/hip")).unwrap();
        std::fs::write(unsaid.path().join("include/hip/hip_version.h"), "#define HIP_VERSION_H\n").unwrap();
        assert_eq!(hip_version(unsaid.path()), None);
        let err = check_version(&e("hip5.2+{gfx90a}"), unsaid.path(), "test").unwrap_err().to_string();
        assert!(err.contains("hip5.2") && err.contains("does not say its version"), "{err}");
        assert!(check_version(&e("hip+{gfx90a}"), unsaid.path(), "test").is_ok());
        let bitcode = dir.path().join("lib/x86_64-linux-gnu/amdgcn/bitcode");
        std::fs::create_dir_all(&bitcode).unwrap();
        std::fs::write(bitcode.join("oclc_isa_version_90a.bc"), "").unwrap();
        assert_eq!(device_lib_candidates(dir.path())[1], bitcode);
        assert!(check_device_libs(&["gfx90a".into()], &bitcode).is_ok());
        let err = check_device_libs(&["gfx1100".into()], &bitcode).unwrap_err().to_string();
        assert!(err.contains("gfx1100") && err.contains("oclc_isa_version_1100.bc") && err.contains("gfx90a"), "{err}");
    }

    #[test]
    fn the_argv_of_both_platforms() {
        let opts = HipOptions { common: CommonOptions { flags: vec!["-g".into()], ..Default::default() }, ..Default::default() };
        let front = amd_front(HipCompiler::Clang, Path::new("/rocm"), Path::new("/rocm/bc"), &["gfx90a".into(), "gfx1030".into()]);
        let inv = Invocation { front: &front, optimize: true, force_include: Some(Path::new("/i/k.h")), includes: &[PathBuf::from("/p/inc")], opts: &opts };
        let a = argv(&inv, Path::new("/p/s.hip"), Path::new("/o/s.o"), Path::new("/o/s.d"));
        let words: Vec<&str> = a.iter().map(|s| s.to_str().unwrap()).collect();
        assert_eq!(
            words,
            [
                "-x", "hip", "--rocm-path=/rocm", "--rocm-device-lib-path=/rocm/bc", "--offload-arch=gfx90a", "--offload-arch=gfx1030", "-fPIC", "-O3", "-include", "/i/k.h", "-I/p/inc", "-g", "-MD", "-MF",
                "/o/s.d", "-c", "/p/s.hip", "-o", "/o/s.o"
            ]
        );
        let hipcc = amd_front(HipCompiler::Hipcc, Path::new("/rocm"), Path::new("/rocm/bc"), &["gfx90a".into()]);
        assert_eq!(hipcc, [OsString::from("--offload-arch=gfx90a")]);
        let nv = nvidia_front(Path::new("/cuda"), Path::new("/hip"), &["sm_89".into()]);
        let words: Vec<&str> = nv.iter().map(|s| s.to_str().unwrap()).collect();
        assert_eq!(words, ["-x", "cuda", "-D__HIP_PLATFORM_NVIDIA__", "-Wno-unknown-cuda-version", "--cuda-path=/cuda", "--cuda-gpu-arch=sm_89", "-I/hip/include"]);
    }
}
