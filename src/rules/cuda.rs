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
//! The toolkit (headers, `libcudart_static.a` in `lib64`/`lib`/`targets/<target>/lib`, only
//! `targets/<target>/lib` with `-target-dir <target>` when cross compiling) and the nvcc
//! program come from the one resolver ([`tool::resolve_toolkit`], the toolkit declared as
//! [`CUDA_TOOLKIT`]): `cuda.toolkit`, the toolkit a named nvcc sits in (`Build::tool`,
//! `tools.nvcc`, `NVCC`, `MCPP_NVCC`, `MCPP_TOOL_NVCC`), `CUDA_PATH`, `CUDA_HOME`, the
//! `cuda-nvcc` toolchain package, then nvcc on PATH (warned). Architectures: the accelerator entry's list; `native` or no list probes the GPUs
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
use serde::Deserialize;
use crate::sources::DeviceSource;
use crate::tool::{self, RootChoice, Tool, ToolSource, ToolSpec, ToolkitSpec};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Which CUDA compiler the CUDA rule drives (upstream-facts 3.1); chosen by declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CudaCompilerName {
    /// NVIDIA nvcc with the host C++ compiler passed as `-ccbin` (default).
    #[default]
    Nvcc,
    /// clang++ in CUDA mode (`-x cuda --cuda-path=<toolkit>`).
    Clang,
}

/// How the CUDA runtime is linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cudart {
    /// `libcudart_static.a` plus the system libraries it needs (`dl`, `rt`, `pthread`, the C++ runtime); default.
    #[default]
    Static,
    /// `libcudart.so` (the program then needs it at run time).
    Shared,
    /// Nothing: the crate links the runtime itself, or uses only the driver API.
    None,
}

/// `[package.metadata.mcpp.cuda]`; every key has a default.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CudaOptions {
    /// `"nvcc"` (default) or `"clang"`.
    pub compiler: Option<CudaCompilerName>,
    /// The CUDA toolkit root (holding `bin/nvcc`, `include/`, `lib`/`lib64`), relative to the
    /// package root or absolute; first in the resolver's order for the root (then the toolkit a
    /// named nvcc sits in, `CUDA_PATH`, `CUDA_HOME`, the toolchain package, PATH). For the clang route it
    /// is the `--cuda-path`.
    pub toolkit: Option<PathBuf>,
    /// The host compiler nvcc runs (`-ccbin`); default `NVCC_CCBIN`, then `CUDAHOSTCXX`, then the
    /// `cc` crate's C++ compiler.
    pub ccbin: Option<PathBuf>,
    /// `"static"` (default), `"shared"` or `"none"`.
    pub cudart: Option<Cudart>,
    /// Relocatable device code (`-rdc=true` and a device-link step); nvcc route only. Default false.
    pub rdc: Option<bool>,
    /// `includes` (`-I`), `defines` (`-DNAME=value`), `optimize` (default: on in release
    /// profiles, off with `-lineinfo` in debug), `flags` (appended last).
    #[serde(skip)]
    pub common: super::options::CommonOptions,
}

impl super::options::RuleOptions for CudaOptions {
    const KEYS: &'static [crate::manifest::KeyDoc] = OPTION_KEYS;
    fn common(&self) -> &super::options::CommonOptions {
        &self.common
    }
    fn common_mut(&mut self) -> &mut super::options::CommonOptions {
        &mut self.common
    }
}

/// The keys of [`CudaOptions`], documented ([`Rule::option_keys`]).
const OPTION_KEYS: &[crate::manifest::KeyDoc] = &[
    crate::manifest::KeyDoc { key: "compiler", default: "`\"nvcc\"`", meaning: "`\"nvcc\"` or `\"clang\"` (clang++ `-x cuda --cuda-path=<toolkit>`)" },
    crate::manifest::KeyDoc { key: "toolkit", default: "discovered", meaning: "the CUDA root. Without it: the toolkit a named nvcc sits in (`Build::tool(\"nvcc\", ..)`, `tools.nvcc`, `NVCC`, `MCPP_NVCC`, `MCPP_TOOL_NVCC`), then `CUDA_PATH`, `CUDA_HOME`, the installed `cuda-nvcc` toolchain package, then nvcc on PATH (warned). A named nvcc that is not inside a toolkit (a wrapper such as ccache) is still the program that runs. A `CUDA_PATH`/`CUDA_HOME` that is no toolkit is refused, not skipped" },
    crate::manifest::KeyDoc { key: "ccbin", default: "the `cc` crate's C++ compiler", meaning: "nvcc's host compiler. Without it: `NVCC_CCBIN`, then `CUDAHOSTCXX`, then the `cc` crate's C++ compiler for the target (`CXX_<target>`, `TARGET_CXX`/`HOST_CXX`, `CXX`, or its default, e.g. `aarch64-linux-gnu-g++` for an aarch64 target), whose arguments in `CXX` reach nvcc as `-Xcompiler <arg>` each (`CXX=\"g++ -DX=1\"`: `-ccbin /usr/bin/g++ -Xcompiler -DX=1`; a wrapper such as ccache is left out, warned, since `-ccbin` takes a compiler path). `-allow-unsupported-compiler` is never added for you. Not used on the clang route (warned)" },
    crate::manifest::KeyDoc { key: "cudart", default: "`\"static\"`", meaning: "`\"static\"` (also links `dl rt pthread`), `\"shared\"` (`libcudart.so`, or the versioned `libcudart.so.N` the PyPI runtime ships, with an rpath to the toolkit) or `\"none\"` (link a runtime yourself)" },
    crate::manifest::KeyDoc { key: "rdc", default: "`false`", meaning: "relocatable device code (`-rdc=true` plus an `nvcc -dlink` step). nvcc only" },
    super::options::CommonOptions::INCLUDES_DOC,
    super::options::CommonOptions::DEFINES_DOC,
    crate::manifest::KeyDoc { key: "optimize", default: "`true` in release profiles", meaning: "`-O3` when true, `-O0 -lineinfo` (clang `-O0`) when false" },
    crate::manifest::KeyDoc { key: "flags", default: "`[]`", meaning: "extra arguments appended last, unexamined, except one: a flag that turns relocatable device code on (`-rdc=true`, `-rdc true`, `--relocatable-device-code=true` or `... true`, `-dc`, `--device-c`) without `rdc = true` is refused before compiling, naming `flags[i]`: without the device link the program fails to link with `undefined symbol: __cudaRegisterLinkedBinary_...`. Set `rdc = true` instead" },
];

/// The exact `cuda-nvcc` toolchain package version the nvcc route declares (CUDA 13.0: the H200
/// machines' driver 580 supports it).
pub const CUDA_NVCC_VERSION: &str = "13.0.88";

/// The CUDA toolkit, as the resolver reads it: `[package.metadata.mcpp.cuda] toolkit`, then
/// `CUDA_PATH`, `CUDA_HOME`; a root holds `bin/nvcc` and `include/cuda_runtime.h`.
pub const CUDA_TOOLKIT: ToolkitSpec = ToolkitSpec {
    name: "CUDA toolkit",
    root_key: Some("[package.metadata.mcpp.cuda] toolkit"),
    root_vars: &["CUDA_PATH", "CUDA_HOME"],
    program_in_root: "bin/nvcc",
    marker_files: &["include/cuda_runtime.h"],
};

/// nvcc, in its toolkit: the explicit choice, `NVCC`, `MCPP_NVCC`, `MCPP_TOOL_NVCC`, the
/// toolkit root ([`CUDA_TOOLKIT`]), the `cuda-nvcc` toolchain package, then PATH.
pub const NVCC: ToolSpec = ToolSpec {
    name: "nvcc",
    programs: &["nvcc"],
    env_vars: &["NVCC", "MCPP_NVCC"],
    version_args: &["--version"],
    install_hint: "pip install nvidia-cuda-nvcc nvidia-cuda-runtime nvidia-cuda-crt nvidia-nvvm, or cargo mcpp fetch (the cuda-nvcc toolchain package)",
    toolchain_package: Some("cuda-nvcc"),
    toolkit: Some(&CUDA_TOOLKIT),
};
/// The clang of the clang route: `MCPP_CUDA_CLANG`, then `clang++-19`/`clang++` on PATH.
pub const CLANG: ToolSpec = ToolSpec {
    name: "clang++",
    programs: &["clang++-19", "clang++"],
    env_vars: &["MCPP_CUDA_CLANG"],
    version_args: &["--version"],
    install_hint: "apt install clang-19",
    toolchain_package: None,
    toolkit: None,
};
/// nvcc's host compiler (`-ccbin`).
pub const CCBIN: ToolSpec = ToolSpec { name: "ccbin", programs: &["c++"], env_vars: &["NVCC_CCBIN", "CUDAHOSTCXX"], version_args: &["--version"], install_hint: "apt install g++", toolchain_package: None, toolkit: None };

const MANIFEST_KEY: &str = "package.metadata.mcpp.cuda";

/// The CUDA rule.
pub struct CudaRule;

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
    /// The build's target, from cargo's facts ([`crate::cargo_facts`]).
    pub fn of_build(facts: &crate::cargo_facts::CargoFacts) -> CudaTarget {
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

/// The index of the first entry of `flags` that turns relocatable device code on, as nvcc
/// reads it: `-rdc=true`, `--relocatable-device-code=true`, `-rdc true`,
/// `--relocatable-device-code true`, `-dc`, `--device-c`. nvcc accepts only `true`/`false`
/// there (`-rdc=1` is nvcc's own error), so only `true` counts. The value of an option that
/// passes arguments on (`-Xcompiler -dc`) is not nvcc's.
pub fn rdc_flag(flags: &[String]) -> Option<usize> {
    const PASS_ON: &[&str] = &["-Xcompiler", "--compiler-options", "-Xptxas", "--ptxas-options", "-Xnvlink", "--nvlink-options", "-Xlinker", "--linker-options", "-Xarchive", "--archive-options", "-Xfatbin", "--fatbin-options"];
    let is_rdc = |f: &str| f == "-rdc" || f == "--relocatable-device-code";
    flags.iter().enumerate().find_map(|(i, f)| {
        if i > 0 && PASS_ON.contains(&flags[i - 1].as_str()) {
            return None;
        }
        let on = match f.split_once('=') {
            Some((k, v)) => is_rdc(k) && v == "true",
            None => (is_rdc(f) && flags.get(i + 1).is_some_and(|v| v == "true")) || f == "-dc" || f == "--device-c",
        };
        on.then_some(i)
    })
}

/// The explicit toolkit root of `opts` (`[package.metadata.mcpp.cuda] toolkit`, made absolute
/// against the package root), for the resolver.
pub fn root_choice(opts: &CudaOptions, manifest: &crate::manifest::Manifest) -> Option<RootChoice> {
    let t = opts.toolkit.as_ref()?;
    let root = if t.is_absolute() { t.clone() } else { manifest.dir().join(t) };
    Some(RootChoice { root, manifest: manifest.path.clone(), line: manifest.line("cuda.toolkit"), key: format!("{MANIFEST_KEY}.toolkit") })
}

/// The CUDA way out added to the resolver's refusal: the host fallback.
fn with_fallback(e: Error, env: &Env) -> Error {
    if e.kind != ErrorKind::ToolNotFound {
        return e;
    }
    e.help(format!("or build with {} for the host fallback", crate::report::no_accel_way(env)))
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
            return Err(Error::new(ErrorKind::Accel, format!("`{}` in `{}` is not a CUDA architecture", crate::text::echo(a), crate::text::echo(accel_text)))
                .key("package.metadata.mcpp.accel")
                .help("CUDA architectures are compute capabilities: sm_80, sm_89, sm_90, sm_90a, sm_100f, ..."));
        }
    }
    Ok(out)
}

/// The architectures the selected CUDA compiler accepts, known from the compiler itself
/// (issue "Nothing escapes", item 9): nvcc's `--list-gpu-code` (the `sm_N` it compiles for;
/// the arch-specific `sm_Na` exists from sm_90, the family `sm_Nf` from sm_100 with nvcc 12.9,
/// neither is listed), clang's `--target=nvptx64-nvidia-cuda --print-supported-cpus` (every
/// name listed, `sm_90a` included). Asked once per compiler file and cached
/// ([`tool::probe_cached`]); `None` when the program does not say it is nvcc or clang in its
/// version, or lists nothing (then nothing is checked here and the compiler has the last word).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownArchs {
    /// The compiler, as named in messages (`nvcc 13.0`, `clang++`).
    pub compiler: String,
    /// The numbers of the plain `sm_N` names, ascending.
    pub numbers: Vec<u64>,
    /// Names accepted beyond `sm_N` (clang's `sm_90a`), sorted.
    pub extra: Vec<String>,
    /// nvcc's suffix rule: (`a` from this number, `f` from this number), `None` for clang.
    pub suffixes: Option<(u64, Option<u64>)>,
}

impl KnownArchs {
    /// Parse a list of `sm_...` words (nvcc's or clang's output); `None` when it has none.
    pub fn parse(compiler: &str, text: &str, suffixes: Option<(u64, Option<u64>)>) -> Option<KnownArchs> {
        let mut numbers = Vec::new();
        let mut extra = Vec::new();
        for w in text.split(|c: char| c.is_whitespace() || c == ',') {
            let Some(rest) = w.strip_prefix("sm_") else { continue };
            if !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit()) {
                if let Ok(n) = rest.parse() {
                    numbers.push(n);
                }
            } else if is_cuda_arch(w) {
                extra.push(w.to_string());
            }
        }
        numbers.sort_unstable();
        numbers.dedup();
        extra.sort();
        extra.dedup();
        (!numbers.is_empty()).then(|| KnownArchs { compiler: compiler.to_string(), numbers, extra, suffixes })
    }

    /// Whether `arch` (`sm_90`, `sm_90a`, `sm_100f`) is accepted: written canonically (no
    /// leading zero) and known to the compiler.
    pub fn accepts(&self, arch: &str) -> bool {
        if self.extra.iter().any(|e| e == arch) {
            return true;
        }
        let Some(rest) = arch.strip_prefix("sm_") else { return false };
        let (digits, suffix) = match rest.strip_suffix(['a', 'f']) {
            Some(d) => (d, rest.chars().last()),
            None => (rest, None),
        };
        if digits.is_empty() || digits.starts_with('0') || !digits.chars().all(|c| c.is_ascii_digit()) {
            return false;
        }
        let Ok(n) = digits.parse::<u64>() else { return false };
        if !self.numbers.contains(&n) {
            return false;
        }
        match (suffix, self.suffixes) {
            (None, _) => true,
            (Some('a'), Some((a, _))) => n >= a,
            (Some('f'), Some((_, Some(f)))) => n >= f,
            _ => false,
        }
    }

    /// Whether `floor` (the text after `ptx>=`) names a virtual architecture the compiler
    /// generates PTX for: a plain number it lists, without a leading zero.
    pub fn accepts_floor(&self, floor: &str) -> bool {
        !floor.starts_with('0') && floor.chars().all(|c| c.is_ascii_digit()) && floor.parse::<u64>().is_ok_and(|n| self.numbers.contains(&n))
    }

    /// The accepted names, for messages: `sm_75 sm_80 ... (and sm_Na from sm_90, sm_Nf from sm_100)`.
    pub fn shown(&self) -> String {
        let mut s = self.numbers.iter().map(|n| format!("sm_{n}")).chain(self.extra.iter().cloned()).collect::<Vec<_>>().join(" ");
        match self.suffixes {
            Some((a, Some(f))) => s.push_str(&format!(" (and sm_Na from sm_{a}, sm_Nf from sm_{f})")),
            Some((a, None)) => s.push_str(&format!(" (and sm_Na from sm_{a})")),
            None => {}
        }
        s
    }
}

/// What the selected compiler accepts, asked of it once (cached): see [`KnownArchs`].
pub fn known_archs(route: CudaCompilerName, compiler: &Tool, cache_dir: &Path) -> Option<KnownArchs> {
    match route {
        CudaCompilerName::Nvcc => {
            // Only a program that says it is nvcc is asked (a wrapper or a test shim is not).
            let line = compiler.version.lines().find(|l| l.contains("Cuda compilation tools"))?;
            let release = line.split("release ").nth(1)?.split(',').next()?.trim().to_string();
            let nums: Vec<u64> = release.split('.').filter_map(|p| p.parse().ok()).collect();
            let f_from = (nums.as_slice() >= [12, 9].as_slice()).then_some(100);
            let text = tool::probe_cached(compiler, &["--list-gpu-code"], cache_dir)?;
            KnownArchs::parse(&format!("nvcc {release}"), &text, Some((90, f_from)))
        }
        CudaCompilerName::Clang => {
            if !compiler.version.contains("clang version") {
                return None;
            }
            let text = tool::probe_cached(compiler, &["--target=nvptx64-nvidia-cuda", "--print-supported-cpus"], cache_dir)?;
            KnownArchs::parse(&compiler.name, &text, None)
        }
    }
}

/// Refuse an architecture or PTX floor the compiler would reject ("Unsupported gpu
/// architecture"), before anything compiles, with the column in the entry and what it accepts.
/// `listed` are the architectures written in the entry (a probed `{native}` one has no column).
///
/// # Errors
/// [`ErrorKind::Accel`] naming `package.metadata.mcpp.accel`.
pub fn check_known_archs(entry: &crate::accel::AccelEntry, archs: &[String], known: &KnownArchs) -> Result<()> {
    let text = entry.to_string();
    let refuse = |what: String, column: Option<usize>| {
        let mut e = Error::new(ErrorKind::Accel, what).key("package.metadata.mcpp.accel");
        if let Some(c) = column {
            let (shown, caret) = crate::text::echo_window(&text, c - 1);
            e = e.detail(shown).detail(format!("{}^ column {c}", " ".repeat(caret)));
        }
        e.detail(format!("{} accepts: {}", known.compiler, known.shown())).help("write one of those in `accel` (or --accel / MCPP_ACCEL), or use a toolkit that knows it")
    };
    for a in archs {
        if known.accepts(a) {
            continue;
        }
        let column = entry.archs.iter().position(|x| x == a).map(|k| {
            let head = text.find("+{").map(|i| i + 2).unwrap_or(0);
            head + entry.archs[..k].iter().map(|x| x.chars().count() + 1).sum::<usize>() + 1
        });
        let from = if column.is_some() { String::new() } else { " (reported by nvidia-smi for this machine)".to_string() };
        return Err(refuse(format!("`{}` in `{}` is not an architecture {} compiles for{from}", crate::text::echo(a), crate::text::echo(&text), known.compiler), column));
    }
    if let (Some(floor), Some(word)) = (&entry.floor, entry.floor_word) {
        if !known.accepts_floor(floor) {
            let w = if word == crate::accel::FloorWord::Ptx { "ptx" } else { "floor" };
            let column = text.rfind(">=").map(|i| text[..i + 2].chars().count() + 1);
            return Err(refuse(format!("`{w}>={}` in `{}` names no virtual architecture {} generates PTX for", crate::text::echo(floor), crate::text::echo(&text), known.compiler), column));
        }
    }
    Ok(())
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
        use std::ffi::c_int;
        static DRIVER: std::sync::OnceLock<Option<(u32, u32)>> = std::sync::OnceLock::new();
        *DRIVER.get_or_init(|| {
            // SAFETY: loading libcuda runs its initialisers, which expect nothing of the caller;
            // the symbol, when found, is libcuda's `CUresult cuDriverGetVersion(int*)` (the
            // type written here), called with a valid pointer while the library is loaded. The
            // library is then left loaded for the life of the process (unloading a GPU driver
            // library is not something its vendor supports).
            unsafe {
                let lib = libloading::Library::new("libcuda.so.1").ok()?;
                let v = {
                    let f: libloading::Symbol<unsafe extern "C" fn(*mut c_int) -> c_int> = lib.get(b"cuDriverGetVersion\0").ok()?;
                    let mut v: c_int = 0;
                    if f(&mut v) != 0 || v <= 0 {
                        return None;
                    }
                    v
                };
                std::mem::forget(lib);
                Some(((v / 1000) as u32, ((v % 1000) / 10) as u32))
            }
        })
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

/// The variables nvcc reads for extra arguments of every run (NVIDIA's `NVCC_PREPEND_FLAGS`,
/// `NVCC_APPEND_FLAGS`): inputs of the compile, and values nvcc hands to its shell.
pub const NVCC_ENV_FLAGS: &[&str] = &["NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"];

/// The nvcc route's manifest values and source names, checked with [`check_nvcc_shell_safe`].
fn check_nvcc_values(opts: &CudaOptions, sources: &[&DeviceSource], manifest_path: &Path) -> Result<()> {
    for (name, value) in &opts.common.defines {
        check_nvcc_shell_safe(value, &format!("{MANIFEST_KEY}.defines.{name}"), manifest_path)?;
    }
    for flag in &opts.common.flags {
        check_nvcc_shell_safe(flag, &format!("{MANIFEST_KEY}.flags"), manifest_path)?;
    }
    for dir in &opts.common.includes {
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
    /// Arguments for the host compiler (those named with it in `CXX`), each passed as
    /// `-Xcompiler <arg>` (nvcc route; `-ccbin` takes a path only).
    pub ccbin_args: &'a [String],
    /// The toolkit's `targets/` directory of a cross target (`-target-dir`, nvcc route).
    pub target_dir: Option<&'a str>,
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

/// nvcc's host-compiler and target arguments: `-ccbin <path>`, `-target-dir <dir>` for a
/// cross target, then `-Xcompiler <arg>` for each argument named with the host compiler.
pub fn host_compiler_args(ccbin: Option<&Path>, ccbin_args: &[String], target_dir: Option<&str>) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    if let Some(cc) = ccbin {
        a.extend(["-ccbin".into(), cc.into()]);
    }
    if let Some(d) = target_dir {
        a.extend(["-target-dir".into(), d.into()]);
    }
    for arg in ccbin_args {
        a.extend(["-Xcompiler".into(), arg.into()]);
    }
    a
}

/// The arguments (after the program) that compile `src` to `obj` writing `depfile`.
pub fn argv(inv: &Invocation, src: &Path, obj: &Path, depfile: &Path) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    match inv.route {
        CudaCompilerName::Nvcc => {
            a.extend(host_compiler_args(inv.ccbin, inv.ccbin_args, inv.target_dir));
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
        toolchain_package_root: None,
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
        &[NVCC, CLANG, CCBIN]
    }
    /// The nvcc route drives the `cuda-nvcc` toolchain package at an exact version (the runtime must not
    /// be newer than the driver it meets; seed 000 "Each rule brings its own environment"),
    /// unless the project names nvcc or a toolkit (`cuda.toolkit`, `NVCC`, `CUDA_PATH`, `CUDA_HOME`).
    /// The clang route needs a CUDA 12.x layout no toolchain package ships yet, so it declares none.
    fn check_options(&self, manifest: &crate::manifest::Manifest) -> Result<()> {
        super::options::read::<CudaOptions>(manifest, self.name()).map(drop)
    }
    fn option_keys(&self) -> &'static [crate::manifest::KeyDoc] {
        OPTION_KEYS
    }
    fn toolchain_packages(&self, manifest: &crate::manifest::Manifest) -> Vec<super::ToolchainPackageReq> {
        let opts = super::options::parse::<CudaOptions>(manifest, self.name()).unwrap_or_default();
        if opts.toolkit.is_some() || opts.compiler.unwrap_or_default() != CudaCompilerName::Nvcc {
            return Vec::new();
        }
        // `CUDA_PATH`/`CUDA_HOME` name the toolkit: they are NVCC's toolkit root variables.
        vec![super::ToolchainPackageReq { package: "cuda-nvcc", version: CUDA_NVCC_VERSION, tool: NVCC, named_by_env: &[] }]
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
        let opts: CudaOptions = super::options::read(ctx.manifest, self.name())?;
        let route = opts.compiler.unwrap_or_default();
        let rdc = opts.rdc.unwrap_or(false);
        if rdc && route == CudaCompilerName::Clang {
            return Err(Error::new(ErrorKind::Manifest, "relocatable device code (`rdc = true`) is planned for the nvcc route only")
                .file(&ctx.manifest.path)
                .key(format!("{MANIFEST_KEY}.rdc"))
                .help("use compiler = \"nvcc\", or drop `rdc`"));
        }
        if let (false, CudaCompilerName::Nvcc, Some(i)) = (rdc, route, rdc_flag(&opts.common.flags)) {
            return Err(Error::new(ErrorKind::Manifest, format!("`{}` in the CUDA flags turns on relocatable device code, which needs the device-link step `rdc = true` plans", opts.common.flags[i]))
                .file(ctx.manifest.at_col(&format!("cuda.flags[{i}]")))
                .key(format!("{MANIFEST_KEY}.flags[{i}]"))
                .detail("Without `nvcc -dlink` and libcudadevrt the link fails with `undefined symbol: __cudaRegisterLinkedBinary_...`.")
                .help(format!("set `rdc = true` in [{MANIFEST_KEY}] (it passes -rdc=true and adds the device link) and remove the flag")));
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
        // The toolkit and, on the nvcc route, the program: one resolver, one decision record.
        let root_choice = root_choice(&opts, ctx.manifest);
        let (kit_root, nvcc) = match route {
            CudaCompilerName::Nvcc => {
                let r = tool::resolve_toolkit(&NVCC, ctx.tools, root_choice.as_ref(), ctx.env, ctx.tool_cache).map_err(|e| with_fallback(e, ctx.env))?;
                plan.warnings.extend(r.warning);
                let Some(root) = r.toolkit else {
                    return Err(Error::new(ErrorKind::ToolNotFound, "the resolver answered nvcc without a CUDA toolkit").help("this is a defect of cargo-mcpp; report it"));
                };
                (root, Some(r.tool))
            }
            CudaCompilerName::Clang => {
                let (root, w) = tool::find_toolkit_root(&NVCC, ctx.tools, root_choice.as_ref(), ctx.env).map_err(|e| with_fallback(e, ctx.env))?;
                plan.warnings.extend(w);
                (root, None)
            }
        };
        let toolkit = Toolkit::read(&kit_root.root, kit_root.found_by.clone());
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
        let target = CudaTarget::of_build(ctx.facts);
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
                .help(format!("or build for this machine's target, or with {} for the host fallback", crate::report::no_accel_way(ctx.env))));
        }
        let target_dir = if target.cross { runtime.as_ref().and_then(|(_, d)| *d) } else { None };
        let lib_dir = runtime.map(|(d, _)| d);
        let host = crate::host::toolchain(ctx.env, ctx.facts, ctx.tool_cache)?;
        let mut ccbin_args: Vec<String> = Vec::new();
        // `nvcc` is resolved on the nvcc route only.
        let (compiler, ccbin) = match nvcc {
            Some(nvcc) => {
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
                let (ccbin_source, ccbin_origin) = match (&opts.ccbin, CCBIN.env_vars.iter().find(|v| ctx.env.get_nonempty(v).is_some())) {
                    (Some(_), _) => (ToolSource::ManifestKey { manifest: ctx.manifest.path.clone(), key: format!("[{MANIFEST_KEY}] ccbin") }, format!("{} [{MANIFEST_KEY}] ccbin", ctx.manifest.path.display())),
                    (None, _) if named => (ToolSource::Manifest(ctx.manifest.path.clone()), "the explicit choice (Build::tool or [package.metadata.mcpp.tools]) ccbin".to_string()),
                    (None, None) if override_set => (ToolSource::Env(tool::override_var(CCBIN.name)), format!("the environment variable {}", tool::override_var(CCBIN.name))),
                    (None, Some(var)) => (ToolSource::Env(var.to_string()), format!("the environment variable {var}")),
                    (None, None) => (ToolSource::Derived("the cc crate's C++ compiler (CXX or its default)".into()), "the cc crate".into()),
                };
                // The arguments named with the cc crate's compiler (`CXX="g++ -DX=1"`) go with it.
                if matches!(ccbin_source, ToolSource::Derived(_)) {
                    ccbin_args = host.env_args.clone();
                    if let Some(w) = &host.wrapper {
                        plan.warnings.push(format!(
                            "CXX names the compiler wrapper {}; nvcc's -ccbin takes a compiler path only, so nvcc runs {} without it",
                            w.display(),
                            host.cxx.display()
                        ));
                    }
                }
                let ccbin_key = match (&opts.ccbin, CCBIN.env_vars.iter().find(|v| ctx.env.get_nonempty(v).is_some())) {
                    (Some(_), _) => format!("{MANIFEST_KEY}.ccbin"),
                    (None, Some(var)) => format!("the environment variable {var}"),
                    (None, None) => "the cc crate's C++ compiler (CXX)".to_string(),
                };
                check_nvcc_shell_safe(&ccbin_path.to_string_lossy(), &ccbin_key, &ctx.manifest.path)?;
                let ccbin = tool::resolve_at(&CCBIN, &ccbin_path, ccbin_source, &ccbin_origin, ctx.env, ctx.tool_cache)
                    .map_err(|e| if opts.ccbin.is_some() { e.file(&ctx.manifest.path).key(format!("{MANIFEST_KEY}.ccbin")) } else { e })?;
                let mut nvcc = nvcc;
                // nvcc reads these itself and hands them to its shell: read here (declared to
                // cargo), checked like every value nvcc shells out, and set on the tool so they
                // enter every action's fingerprint (a change recompiles).
                for var in NVCC_ENV_FLAGS {
                    if let Some(value) = ctx.env.get_nonempty(var) {
                        check_nvcc_shell_safe(&value, &format!("the environment variable {var}"), &ctx.manifest.path)?;
                        nvcc.env.push((var.to_string(), value.into()));
                    }
                }
                (nvcc, Some(ccbin))
            }
            None => {
                let (clang, w) = tool::resolve(&CLANG, ctx.tools, ctx.env, ctx.tool_cache)?;
                plan.warnings.extend(w);
                (clang, None)
            }
        };
        if let Some(known) = known_archs(route, &compiler, ctx.tool_cache) {
            check_known_archs(ctx.accel, &archs, &known)?;
        }
        let includes = opts.common.resolve_includes(ctx.manifest, self.name())?;
        let optimize = opts.common.optimize_or(ctx.facts.opt_level.optimizes());
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
                ccbin_args: &ccbin_args,
                target_dir,
                archs: &archs,
                ptx,
                optimize,
                rdc,
                force_include: island_half,
                includes: &includes,
                defines: &opts.common.defines,
                flags: &opts.common.flags,
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
            args.extend(host_compiler_args(ccbin.as_ref().map(|t| t.path.as_path()), &ccbin_args, target_dir));
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
            match &lib_dir {
                Some(d) => plan.link.push(LinkDirective::Search(d.clone())),
                None => {
                    let looked: Vec<String> = toolkit.runtime_candidates(&target).iter().map(|d| d.display().to_string()).collect();
                    return Err(Error::new(ErrorKind::ToolNotFound, format!("the CUDA toolkit at {} has no libcudart_static.a", toolkit.root.display()))
                        .file(&toolkit.root)
                        .detail(format!("looked in {}", looked.join(", ")))
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
                let dir = lib_dir.clone().unwrap_or_default();
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

    /// What nvcc 13.0 and clang 19 print, checked against what they do (measured with the
    /// installed tools: `nvcc -gencode arch=compute_X,code=sm_X` accepts 90a, 100a, 100f, 120a,
    /// 121f and rejects 80a, 90f, 8, 080, 99, 70).
    #[test]
    fn known_architectures_follow_the_compilers_lists() {
        let nvcc = KnownArchs::parse("nvcc 13.0", "sm_75\nsm_80\nsm_86\nsm_87\nsm_88\nsm_89\nsm_90\nsm_100\nsm_110\nsm_103\nsm_120\nsm_121\n", Some((90, Some(100)))).unwrap();
        for ok in ["sm_75", "sm_80", "sm_90", "sm_90a", "sm_100a", "sm_100f", "sm_103f", "sm_120a", "sm_121f"] {
            assert!(nvcc.accepts(ok), "{ok}");
        }
        for bad in ["sm_80a", "sm_90f", "sm_8", "sm_080", "sm_99", "sm_70", "sm_", "compute_90", "sm_1000000000000000000000"] {
            assert!(!nvcc.accepts(bad), "{bad}");
        }
        assert!(nvcc.accepts_floor("80") && nvcc.accepts_floor("120"));
        for bad in ["0", "10", "85", "080", "8.5", "99"] {
            assert!(!nvcc.accepts_floor(bad), "{bad}");
        }
        let clang = KnownArchs::parse("clang++", "Available CPUs for this target:\n\tsm_20\n\tsm_89\n\tsm_90\n\tsm_90a\nUse -mcpu", None).unwrap();
        assert!(clang.accepts("sm_90a") && clang.accepts("sm_89") && !clang.accepts("sm_100") && !clang.accepts("sm_89a"));
        assert!(KnownArchs::parse("x", "recording shim 1.0", None).is_none());

        let entry = |s: &str| crate::accel::AccelSet::parse(s).unwrap().entries[0].clone();
        let e = entry("cuda13.0+{sm_90,sm_80a}");
        let err = check_known_archs(&e, &e.archs, &nvcc).unwrap_err().to_string();
        assert!(err.contains("`sm_80a` in `cuda13.0+{sm_90,sm_80a}` is not an architecture nvcc 13.0 compiles for"), "{err}");
        assert!(err.contains("^ column 17") && err.contains("nvcc 13.0 accepts: sm_75 sm_80") && err.contains("sm_Nf from sm_100"), "{err}");
        let e = entry("cuda13.0+{sm_90} ptx>=85");
        let err = check_known_archs(&e, &e.archs, &nvcc).unwrap_err().to_string();
        assert!(err.contains("`ptx>=85` in `cuda13.0+{sm_90} ptx>=85` names no virtual architecture nvcc 13.0 generates PTX for") && err.contains("column 23"), "{err}");
        let e = entry("cuda13.0+{sm_80,sm_90a} ptx>=80");
        assert!(check_known_archs(&e, &e.archs, &nvcc).is_ok());
    }

    #[test]
    fn rdc_flags_are_found_in_every_spelling_nvcc_reads_as_true() {
        let f = |v: &[&str]| rdc_flag(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        for on in [&["-rdc=true"][..], &["--relocatable-device-code=true"], &["-dc"], &["--device-c"], &["-rdc", "true"], &["--relocatable-device-code", "true"]] {
            assert_eq!(f(on), Some(0), "{on:?}");
        }
        assert_eq!(f(&["-lineinfo", "--use_fast_math", "-rdc=true"]), Some(2));
        assert_eq!(f(&["-Xptxas", "-v", "-rdc", "true"]), Some(2), "the index of the flag, not its value");
        for off in [&["-rdc=false"][..], &["-rdc", "false"], &["-rdc=1"], &["-Xcompiler", "-dc"], &["--use_fast_math"], &["-rdc"], &[]] {
            assert_eq!(f(off), None, "{off:?}");
        }
    }

    #[test]
    fn cuda_target_directories_and_host_compiler_args() {
        assert_eq!(cuda_target_dirs("x86_64-unknown-linux-gnu"), ["x86_64-linux"]);
        assert_eq!(cuda_target_dirs("aarch64-unknown-linux-gnu"), ["sbsa-linux", "aarch64-linux"]);
        assert!(cuda_target_dirs("x86_64-pc-windows-msvc").is_empty() && cuda_target_dirs("riscv64gc-unknown-linux-gnu").is_empty());
        let a: Vec<String> = host_compiler_args(Some(Path::new("/usr/bin/aarch64-linux-gnu-g++")), &["-DFROM_ENV=1".into(), "-O1".into()], Some("sbsa-linux"))
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        assert_eq!(a, ["-ccbin", "/usr/bin/aarch64-linux-gnu-g++", "-target-dir", "sbsa-linux", "-Xcompiler", "-DFROM_ENV=1", "-Xcompiler", "-O1"]);
        let kit = Toolkit { root: PathBuf::from("/cuda"), version: None, found_by: String::new() };
        let cross = CudaTarget { triple: "aarch64-unknown-linux-gnu".into(), cross: true, dirs: cuda_target_dirs("aarch64-unknown-linux-gnu") };
        assert_eq!(kit.runtime_candidates(&cross), [PathBuf::from("/cuda/targets/sbsa-linux/lib"), PathBuf::from("/cuda/targets/aarch64-linux/lib")]);
        let native = CudaTarget { triple: "x86_64-unknown-linux-gnu".into(), cross: false, dirs: cuda_target_dirs("x86_64-unknown-linux-gnu") };
        assert_eq!(kit.runtime_candidates(&native), [PathBuf::from("/cuda/lib64"), PathBuf::from("/cuda/lib"), PathBuf::from("/cuda/targets/x86_64-linux/lib")]);
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
