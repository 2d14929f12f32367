//! SYCL (`.sycl`, and `.cpp` only through a `sources` entry constrained to `sycl`) to objects,
//! device-linked once per package and archived into one static library linked into the crate
//! The compiler is chosen by declaration
//! (`[package.metadata.mcpp.sycl] compiler = "dpcpp" | "acpp"`) and found by the one resolver
//! ([`crate::tool::resolve_toolkit`]): `tools.icpx` (an `icpx` or an intel/llvm `clang++`),
//! `ICPX`, `MCPP_ICPX`, `MCPP_TOOL_ICPX`, `sycl.toolkit`, `CMPLR_ROOT`, `ONEAPI_ROOT` (its
//! `compiler/latest`), then `icpx` on PATH (warned); AdaptiveCpp's `acpp` the same way with
//! `tools.acpp`, `ACPP`, `MCPP_ACPP`, `sycl.toolkit`.
//!
//! DPC++, per source (argv only):
//! `-fsycl -std=c++17 -fPIC -O2|-O0 [--gcc-install-dir=<dir>] <targeting> -D.. -I.. <flags>
//! -MD -MF <d> -x c++ -c <src> -o <obj>`; `-x c++` is mandatory: without it the driver takes a
//! `.sycl` file for a linker input, exits 0 and writes nothing (which the engine refuses: an
//! output missing after exit 0 is a failure). Targeting: `-fsycl-targets=nvptx64-nvidia-cuda
//! --cuda-path=<CUDA toolkit> -Xsycl-target-backend --cuda-gpu-arch=<sm>` per architecture when
//! the accelerator set has a `cuda` entry, else `-fsycl-targets=<the sycl entry's targets, or
//! spir64>`. Then ONE package-level step ([`super::package_step`]): `-fsycl [-fPIC
//! --gcc-install-dir=..] <targeting> -fsycl-link <every object> -o sycl_device_link.o`, archived
//! with them. Link: the compiler's `lib` directory (search path and rpath), `sycl`, and
//! `libstdc++.so.6` verbatim (upstream's `-l:libstdc++.so.6`: never `-lstdc++`, which clang
//! rewrites to `-lc++` under `-stdlib=libc++`).
//!
//! AdaptiveCpp, per source: `--acpp-targets=<generic | cuda:<sm>,..> -std=c++17 -fPIC -O2|-O0
//! -D.. -I.. <flags> -MD -MF <d> -x c++ -c <src> -o <obj>`; no device link (the objects carry
//! their device code); link: `<root>/lib`, `acpp-rt`, `libstdc++.so.6`.
//!
//! No SYCL compiler installs on the development machines: this lane is argv-verified through
//! the recording shim (`tests/integration/sycl.rs`), not compiled for real.

use super::options::{self, CommonOptions, RuleOptions};
use super::{DeviceSource, Rule, RuleContext, RulePlan};
use crate::config::accel::{AccelEntry, Backend};
use crate::error::{Error, ErrorKind, Result};
use crate::engine::graph::{Action, Expect, External, Role};
use crate::rules::link::{self, LinkDirective};
use crate::config::manifest::{KeyDoc, Manifest};
use crate::rules::cuda_toolkit;
use crate::tool::{RootChoice, Tool, ToolSpec, ToolkitSpec};
use serde::Deserialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The options table.
const TABLE: &str = "package.metadata.mcpp.sycl";
/// The lane name: `<variant>/sycl/`, and the archive `mcpp_sycl_<package>`.
const LANE: &str = "sycl";

/// The SYCL compiler the rule drives, chosen by declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyclCompiler {
    /// Intel's DPC++ (`icpx` of oneAPI, or `clang++` of an intel/llvm build); default.
    #[default]
    Dpcpp,
    /// AdaptiveCpp's `acpp`.
    Acpp,
}

/// `[package.metadata.mcpp.sycl]`; every key has a default.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", expecting = "a table of SYCL rule keys ([package.metadata.mcpp.sycl])")]
pub struct SyclOptions {
    /// `"dpcpp"` (default) or `"acpp"`.
    pub compiler: Option<SyclCompiler>,
    /// The compiler's installation root (`<root>/bin/icpx` and `<root>/include/sycl/sycl.hpp`
    /// for DPC++, `<root>/bin/acpp` for AdaptiveCpp), relative to the package root or absolute.
    pub toolkit: Option<PathBuf>,
    /// The GCC installation whose libstdc++ DPC++ compiles and links against
    /// (`--gcc-install-dir`, Linux targets only); default the GCC installation of the host C++ compiler (its `-print-libgcc-file-name`).
    pub gcc_install_dir: Option<PathBuf>,
    /// `includes`, `defines`, `optimize` (default on in release profiles: `-O2`, else `-O0`),
    /// `flags` (before the depfile and `-x c++ -c <src> -o <obj>`).
    /// A script that sets up the toolkit, sourced once; what it sets goes on this rule's tools
    /// ([`crate::tool::env_script`]).
    pub env_script: Option<PathBuf>,
    /// The arguments `env_script` is sourced with.
    pub env_script_args: Option<Vec<String>>,
    #[serde(skip)]
    pub common: CommonOptions,
}

impl RuleOptions for SyclOptions {
    const KEYS: &'static [KeyDoc] = OPTION_KEYS;
    fn common(&self) -> &CommonOptions {
        &self.common
    }
    fn common_mut(&mut self) -> &mut CommonOptions {
        &mut self.common
    }
}

/// The keys of [`SyclOptions`], documented (the guide's generated manifest reference).
const OPTION_KEYS: &[KeyDoc] = &[
    KeyDoc { key: "compiler", default: "`\"dpcpp\"`", meaning: "`\"dpcpp\"` (oneAPI `icpx`, or an intel/llvm `clang++` named as `tools.icpx`) or `\"acpp\"` (AdaptiveCpp)" },
    KeyDoc { key: "toolkit", default: "discovered", meaning: "the compiler's installation root (`bin/icpx` and `include/sycl/sycl.hpp`; `bin/acpp` for AdaptiveCpp). Without it: the root a named compiler sits in (`tools.icpx`, `ICPX`, `MCPP_ICPX`, `MCPP_TOOL_ICPX`; `tools.acpp`, `ACPP`, ...), then `CMPLR_ROOT`, `ONEAPI_ROOT` (its `compiler/latest`), then the compiler on PATH (warned)" },
    KeyDoc { key: "gcc-install-dir", default: "the host C++ compiler's GCC", meaning: "DPC++'s `--gcc-install-dir` on Linux targets (the libstdc++ it compiles and links against). Default: the GCC installation of the host C++ compiler (`CXX`, or what the `cc` crate chooses for the target), the directory of the `libgcc.a` it answers `-print-libgcc-file-name` with; a host compiler that names none (a clang using compiler-rt) is refused naming this key. Never the newest GCC under `/usr/lib/gcc`" },
    CommonOptions::INCLUDES_DOC,
    CommonOptions::DEFINES_DOC,
    KeyDoc { key: "optimize", default: "`true` in release profiles", meaning: "`-O2` when true, `-O0` when false" },
    crate::tool::env_script::ENV_SCRIPT_DOC,
    crate::tool::env_script::ENV_SCRIPT_ARGS_DOC,
    KeyDoc { key: "flags", default: "`[]`", meaning: "extra arguments, after the rule's own and before `-MD -MF <d> -x c++ -c <src> -o <obj>`, passed unexamined (DPC++: not to the device link)" },
];

/// The oneAPI DPC++ compiler installation: `sycl.toolkit`, `CMPLR_ROOT` (set by oneAPI's
/// `setvars.sh` to the compiler's own root), then `ONEAPI_ROOT` (the whole oneAPI
/// installation; the compiler is its `compiler/latest`).
pub const ONEAPI: ToolkitSpec = ToolkitSpec {
    root_key: Some("[package.metadata.mcpp.sycl] toolkit"),
    root_vars: &["CMPLR_ROOT", "ONEAPI_ROOT/compiler/latest"],
    marker_files: &["include/sycl/sycl.hpp"],
    ..ToolkitSpec::new("oneAPI DPC++ compiler", "bin/icpx")
};

/// DPC++: `tools.icpx`, `ICPX`, `MCPP_ICPX`, `MCPP_TOOL_ICPX`, the oneAPI root ([`ONEAPI`]),
/// then `icpx` on PATH. An intel/llvm build's `clang++` is named as `tools.icpx`.
pub const ICPX: ToolSpec = ToolSpec {
    name: "icpx",
    programs: &["icpx"],
    env_vars: &["ICPX", "MCPP_ICPX"],
    version_args: &["--version"],
    install_hint: "the Intel oneAPI DPC++/C++ Compiler (then `source /opt/intel/oneapi/setvars.sh`, which sets CMPLR_ROOT), or an intel/llvm build named as [package.metadata.mcpp.tools] icpx = \"<build>/bin/clang++\"",
    toolchain_package: None,
    toolkit: Some(&ONEAPI),
};

/// An AdaptiveCpp installation: `sycl.toolkit`, or the root a named `acpp` sits in.
pub const ADAPTIVECPP: ToolkitSpec = ToolkitSpec { root_key: Some("[package.metadata.mcpp.sycl] toolkit"), ..ToolkitSpec::new("AdaptiveCpp installation", "bin/acpp") };

/// AdaptiveCpp: `tools.acpp`, `ACPP`, `MCPP_ACPP`, `MCPP_TOOL_ACPP`, `sycl.toolkit`, then PATH.
pub const ACPP: ToolSpec = ToolSpec {
    name: "acpp",
    programs: &["acpp"],
    env_vars: &["ACPP", "MCPP_ACPP"],
    version_args: &["--version"],
    install_hint: "AdaptiveCpp (https://adaptivecpp.github.io), installed with its `bin/acpp`",
    toolchain_package: None,
    toolkit: Some(&ADAPTIVECPP),
};

/// The SYCL standards' names as a sycl entry's version would spell them (`sycl1.2.1`): no
/// compiler has these releases.
const SYCL_STANDARDS: &[&str] = &["1.2", "1.2.1", "121"];

/// The `-fsycl-targets` a `sycl` entry may list (`sycl+{spir64_x86_64}`) when the set has no
/// `cuda` entry: DPC++'s SPIR-V targets.
pub const SPIR_TARGETS: &[&str] = &["spir64", "spir64_x86_64", "spir64_gen", "spir64_fpga"];

/// The SYCL rule.
pub struct SyclRule;

impl Rule for SyclRule {
    fn name(&self) -> &'static str {
        "sycl"
    }
    fn backend(&self) -> Backend {
        Backend::Sycl
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["sycl"]
    }
    fn constrained_extensions(&self) -> &'static [&'static str] {
        &["cpp"]
    }
    fn tools(&self) -> &'static [ToolSpec] {
        &[ICPX, ACPP]
    }
    fn option_keys(&self) -> &'static [KeyDoc] {
        OPTION_KEYS
    }
    /// SYCL on NVIDIA compiles for the `cuda` entry's architectures (so that entry is used
    /// even when no `.cu` source is compiled by the CUDA rule).
    fn borrows(&self) -> &'static [Backend] {
        &[Backend::Cuda]
    }
    fn read_options(&self, manifest: &Manifest) -> (options::RuleOptionsBox, Vec<Error>) {
        options::read_boxed::<SyclOptions>(manifest, self.name())
    }
    fn check_entry(&self, entry: &AccelEntry) -> Result<()> {
        // A SYCL standard's name (1.2, 1.2.1, 2020) is no compiler release: refused whether or
        // not a SYCL source is built, as the set's other checks are.
        if let Some(v) = entry.version.as_deref().filter(|v| SYCL_STANDARDS.contains(v) || v.split('.').next() == Some("2020")) {
            return Err(Error::new(ErrorKind::Accel, format!("`sycl{}` names the SYCL {} standard, and a sycl entry's version is the compiler's release", crate::text::echo(v), crate::text::echo(v)))
                .detail("The compilers implement SYCL 2020; their releases are numbered otherwise (DPC++ 2025.0, AdaptiveCpp 24.10).")
                .help("write a bare `sycl` (any release), or the compiler's version, e.g. `sycl2025.0`"));
        }
        match entry.archs.iter().find(|a| !SPIR_TARGETS.contains(&a.as_str())) {
            Some(a) => Err(Error::new(ErrorKind::Accel, format!("`{}` in the sycl entry is no SYCL target this rule knows", crate::text::echo(a)))
                .detail(format!("known: {}; an NVIDIA device is named by a cuda entry beside it (`sycl, cuda12.9+{{sm_89}}`)", SPIR_TARGETS.join(", ")))
                .help("write one of those in sycl+{...}, or leave the list out for spir64")),
            None => Ok(()),
        }
    }

    fn plan(&self, ctx: &RuleContext, sources: &[&DeviceSource]) -> Result<RulePlan> {
        let opts: &SyclOptions = ctx.options()?;
        let compiler = opts.compiler.unwrap_or_default();
        let mut plan = RulePlan::default();
        let spec = match compiler {
            SyclCompiler::Dpcpp => ICPX,
            SyclCompiler::Acpp => ACPP,
        };
        let root = root_choice(opts, ctx.manifest);
        let script = crate::tool::env_script::for_rule(self.name(), opts.env_script.as_deref(), opts.env_script_args.as_deref(), ctx.manifest, ctx.env, ctx.cache)?;
        let resolved = crate::tool::resolve_toolkit_with(&spec, ctx.tools, root.as_ref(), script.as_ref(), ctx.env, ctx.cache)?;
        plan.watch.extend(script.map(|s| s.script));
        plan.warnings.extend(resolved.warning);
        let tool = resolved.tool;
        let toolkit_root = resolved.toolkit.map(|t| t.root).unwrap_or_else(|| tool.path.parent().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default());
        if compiler == SyclCompiler::Dpcpp {
            check_version(ctx, &tool)?;
        }
        let targeting = targeting(ctx, compiler)?;
        let host = crate::rules::host::toolchain(ctx.manifest, ctx.env, ctx.facts, ctx.cache, ctx.tools)?;
        let linux = ctx.facts.target.contains("linux");
        let gcc = match (compiler, linux) {
            (SyclCompiler::Dpcpp, true) => Some(gcc_install_dir(ctx, opts, &host)?),
            _ => None,
        };
        let includes = opts.common.resolve_includes(ctx.manifest, LANE)?;
        let optimize = opts.common.optimize_or(ctx.facts.opt_level.optimizes());
        let front = Front { compiler, gcc: gcc.as_deref(), targeting: &targeting, optimize };
        let expect = Expect::object(host.archive_format);
        let mut objects = Vec::new();
        for s in sources {
            let obj = link::object_path(ctx.variant, LANE, &s.rel);
            let depfile = obj.with_extension("d");
            // The island's device half gets the boundary header (its marker), forced.
            let island_half = ctx.island.filter(|i| i.device_sources.contains(&s.path)).map(|i| i.header.as_path());
            let mut inputs = vec![s.path.clone()];
            inputs.extend(island_half.map(Path::to_path_buf));
            plan.actions.push(Action::external(External {
                id: format!("sycl:{}", s.rel),
                description: format!("{} {}", tool.name, s.rel),
                role: Role::Object,
                tool: tool.clone(),
                args: compile_argv(&front, &opts.common, &includes, island_half, &s.path, &obj, &depfile),
                cwd: ctx.manifest.dir().to_path_buf(),
                inputs,
                outputs: vec![obj.clone()],
            })
                .with_depfile(depfile, includes.clone())
                .with_expect(expect));
            objects.push(obj);
        }
        if compiler == SyclCompiler::Dpcpp {
            let out = ctx.variant.objects_dir(LANE).join("sycl_device_link.o");
            plan.actions.push(super::package_step(super::PackageStep {
                id: "sycl:device-link".into(),
                description: format!("{} -fsycl-link ({} objects)", tool.name, objects.len()),
                tool: tool.clone(),
                args: device_link_argv(&front, &objects, &out),
                cwd: ctx.manifest.dir().to_path_buf(),
                consumes: objects.clone(),
                output: out.clone(),
                expect,
            }));
            objects.push(out);
        }
        // The archive's edges to the compiles and the device link come from its inputs.
        let (action, archive_link) = link::archive(ctx.variant, LANE, &ctx.manifest.package_name, host.archive_format, &objects, Vec::new(), ctx.manifest.dir());
        plan.actions.push(action);
        plan.link.extend(archive_link);
        plan.link.extend(runtime_link(compiler, &toolkit_root, linux));
        plan.tools.push(tool);
        Ok(plan)
    }
}

/// `sycl.toolkit` as the resolver's explicit root.
fn root_choice(opts: &SyclOptions, manifest: &Manifest) -> Option<RootChoice> {
    let t = opts.toolkit.as_ref()?;
    let root = if t.is_absolute() { t.clone() } else { manifest.dir().join(t) };
    Some(RootChoice { root, manifest: manifest.path.clone(), line: manifest.line("sycl.toolkit"), key: format!("{TABLE}.toolkit") })
}

/// The DPC++ version in a `--version` text: the first dotted number of the line naming DPC++
/// (`Intel(R) oneAPI DPC++/C++ Compiler 2025.0.4 (2025.0.4.20241205)` -> `2025.0.4`), else of
/// the first line (`clang version 19.0.0git (https://github.com/intel/llvm ...)` -> `19.0.0`).
pub fn dpcpp_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.contains("DPC++")).or_else(|| text.lines().next())?;
    line.split(|c: char| !(c.is_ascii_digit() || c == '.')).find(|w| w.contains('.') && w.starts_with(|c: char| c.is_ascii_digit())).map(|w| w.trim_end_matches('.').to_string())
}

/// A versioned `sycl` entry (`sycl2025.0`) must name the compiler's version: each of its numbers
/// equal to the compiler's, in order.
fn check_version(ctx: &RuleContext, tool: &Tool) -> Result<()> {
    let Some(want) = ctx.accel.version.as_deref() else { return Ok(()) };
    let have = dpcpp_version(&tool.version);
    let matches = have.as_deref().is_some_and(|h| {
        let h: Vec<&str> = h.split('.').collect();
        let w: Vec<&str> = want.split('.').collect();
        w.len() <= h.len() && w.iter().zip(&h).all(|(a, b)| a.trim_start_matches('0') == b.trim_start_matches('0'))
    });
    if matches {
        return Ok(());
    }
    Err(ctx.accel_refusal(
        Error::new(ErrorKind::Accel, format!("the accelerator names sycl{want}, and the SYCL compiler {} is version {}", crate::text::echo_path(&tool.path), have.as_deref().unwrap_or("(none stated)")))
            .detail(format!("its --version: {}", crate::text::echo(tool.version_line())))
            .detail("A sycl entry's version is the compiler's release (sycl2025.0), not the SYCL standard's (2020).")
            .help("write the compiler's version in the sycl entry (or a bare `sycl`), or point cargo-mcpp at that compiler: [package.metadata.mcpp.sycl] toolkit, CMPLR_ROOT or ICPX"),
    ))
}

/// The targeting arguments (the compiles' and the device link's): NVIDIA through the `cuda`
/// entry of the set, else the `sycl` entry's SPIR-V targets (default `spir64`).
///
/// # Errors
/// A `cuda` entry without architectures; no CUDA toolkit for `--cuda-path`; a toolkit whose
/// version is not the `cuda` entry's.
fn targeting(ctx: &RuleContext, compiler: SyclCompiler) -> Result<Vec<OsString>> {
    let Some(cuda) = ctx.set.entry(Backend::Cuda) else {
        return Ok(match compiler {
            SyclCompiler::Dpcpp => {
                let targets = if ctx.accel.archs.is_empty() { "spir64".to_string() } else { ctx.accel.archs.join(",") };
                vec![format!("-fsycl-targets={targets}").into()]
            }
            SyclCompiler::Acpp => vec!["--acpp-targets=generic".into()],
        });
    };
    if cuda.archs.is_empty() || cuda.archs.iter().any(|a| a == "native") {
        return Err(ctx.accel_refusal(
            Error::new(ErrorKind::Accel, format!("the accelerator set `{}` targets SYCL at NVIDIA through its cuda entry, which names no architecture", ctx.set)).help("name the architectures in the cuda entry: `sycl, cuda12.9+{sm_89}`"),
        ));
    }
    if compiler == SyclCompiler::Acpp {
        let list: Vec<String> = cuda.archs.iter().map(|a| format!("cuda:{a}")).collect();
        return Ok(vec![format!("--acpp-targets={}", list.join(";")).into()]);
    }
    let (kit, _) = crate::tool::find_toolkit_root(&cuda_toolkit::NVCC, ctx.tools, cuda_toolkit::root_choice(ctx.manifest).as_ref(), ctx.env)?;
    // The cuda entry's version is the toolkit's, as for the CUDA lane and HIP on NVIDIA (the
    // one check, theirs): `sycl, cuda12.9+{sm_89}` must not compile against CUDA 13.
    cuda_toolkit::check_version(cuda, &cuda_toolkit::Toolkit::read(&kit.root, kit.found_by.clone())).map_err(|e| ctx.accel_refusal(e))?;
    let mut a: Vec<OsString> = vec!["-fsycl-targets=nvptx64-nvidia-cuda".into()];
    let mut path = OsString::from("--cuda-path=");
    path.push(kit.root.components().collect::<PathBuf>());
    a.push(path);
    for arch in &cuda.archs {
        a.extend(["-Xsycl-target-backend".into(), format!("--cuda-gpu-arch={arch}").into()]);
    }
    Ok(a)
}

/// `--gcc-install-dir`: the option, else the GCC installation of the declared host C++
/// compiler (the one `CXX` or the `cc` crate names for the target, [`crate::rules::host`]):
/// the directory of the `libgcc.a` it answers `-print-libgcc-file-name` with (asked once,
/// cached by the compiler's file). Never a scan of the host's `/usr/lib/gcc`: the C++ library
/// DPC++ compiles against is the host toolchain's, not whichever GCC is newest.
///
/// # Errors
/// [`ErrorKind::Manifest`] for an option that names no directory; [`ErrorKind::ToolNotFound`]
/// naming `gcc-install-dir` when the host compiler names no GCC installation (a clang that
/// uses compiler-rt, MSVC).
fn gcc_install_dir(ctx: &RuleContext, opts: &SyclOptions, host: &crate::rules::host::HostToolchain) -> Result<PathBuf> {
    if let Some(d) = &opts.gcc_install_dir {
        let d = if d.is_absolute() { d.clone() } else { ctx.manifest.dir().join(d) };
        if !d.is_dir() {
            return Err(Error::new(ErrorKind::Manifest, format!("{TABLE}.gcc-install-dir names {}, which is no directory", crate::text::echo_path(&d)))
                .file(ctx.manifest.at_col("sycl.gcc-install-dir"))
                .key(format!("{TABLE}.gcc-install-dir"))
                .help("name a GCC installation directory such as /usr/lib/gcc/x86_64-linux-gnu/12, or leave the key out"));
        }
        return Ok(d);
    }
    let compiler = crate::tool::Tool {
        name: "the host C++ compiler".into(),
        path: host.cxx.clone(),
        version: String::new(),
        source: crate::tool::ToolSource::Derived("the host C++ toolchain".into()),
        env: Vec::new(),
        toolchain_package_root: None,
        launcher: None,
    };
    let mut args: Vec<&str> = host.env_args.iter().map(String::as_str).collect();
    args.push("-print-libgcc-file-name");
    let answer = crate::tool::probe_cached(&compiler, &args, ctx.cache).unwrap_or_default();
    gcc_dir_of(&answer).ok_or_else(|| {
        Error::new(ErrorKind::ToolNotFound, format!("the host C++ compiler {} names no GCC installation, which DPC++ needs for libstdc++ (--gcc-install-dir)", host.cxx.display()))
            .file(&ctx.manifest.path)
            .key(format!("{TABLE}.gcc-install-dir"))
            .detail(format!("asked: {} {}", host.cxx.display(), args.join(" ")))
            .detail(format!("answered: {}", crate::text::echo(answer.lines().next().unwrap_or("nothing"))))
            .help(format!("set {TABLE}.gcc-install-dir to the GCC installation to use (e.g. /usr/lib/gcc/x86_64-linux-gnu/12), or make CXX a g++ for the target"))
    })
}

/// The GCC installation directory in a compiler's answer to `-print-libgcc-file-name`: the
/// directory of the first line naming an existing `libgcc.a`.
fn gcc_dir_of(answer: &str) -> Option<PathBuf> {
    answer.lines().map(|l| Path::new(l.trim())).find(|p| p.file_name().is_some_and(|n| n == "libgcc.a") && p.is_file()).and_then(Path::parent).map(Path::to_path_buf)
}

/// What every DPC++/AdaptiveCpp command of the package shares.
struct Front<'a> {
    compiler: SyclCompiler,
    gcc: Option<&'a Path>,
    targeting: &'a [OsString],
    optimize: bool,
}

/// The arguments before the per-source ones: DPC++ `-fsycl -std=c++17 -fPIC -O2|-O0
/// [--gcc-install-dir=..] <targeting>`; AdaptiveCpp `<targeting> -std=c++17 -fPIC -O2|-O0`.
fn front_args(front: &Front) -> Vec<OsString> {
    let opt: OsString = if front.optimize { "-O2" } else { "-O0" }.into();
    let mut a: Vec<OsString> = Vec::new();
    match front.compiler {
        SyclCompiler::Dpcpp => {
            a.extend(["-fsycl".into(), "-std=c++17".into(), "-fPIC".into(), opt]);
            a.extend(front.gcc.map(gcc_arg));
            a.extend(front.targeting.iter().cloned());
        }
        SyclCompiler::Acpp => {
            a.extend(front.targeting.iter().cloned());
            a.extend(["-std=c++17".into(), "-fPIC".into(), opt]);
        }
    }
    a
}

fn gcc_arg(dir: &Path) -> OsString {
    let mut s = OsString::from("--gcc-install-dir=");
    s.push(dir);
    s
}

/// One source's arguments: the front, `[-include <island header>]`, `-D..`, `-I..`, `flags`,
/// `-MD -MF <d> -x c++ -c <src> -o <obj>`.
fn compile_argv(front: &Front, common: &CommonOptions, includes: &[PathBuf], force_include: Option<&Path>, src: &Path, obj: &Path, depfile: &Path) -> Vec<OsString> {
    let mut a = front_args(front);
    if let Some(h) = force_include {
        a.extend(crate::surface::island::emit::force_include_args(h, false));
    }
    a.extend(common.define_args());
    for inc in includes {
        let mut s = OsString::from("-I");
        s.push(inc);
        a.push(s);
    }
    a.extend(common.flags.iter().map(OsString::from));
    a.extend(["-MD".into(), "-MF".into(), depfile.into()]);
    a.extend(["-x".into(), "c++".into(), "-c".into(), src.into(), "-o".into(), obj.into()]);
    a
}

/// The device link: `-fsycl -fPIC [--gcc-install-dir=..] <targeting> -fsycl-link <objects> -o <out>`.
fn device_link_argv(front: &Front, objects: &[PathBuf], out: &Path) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec!["-fsycl".into(), "-fPIC".into()];
    a.extend(front.gcc.map(gcc_arg));
    a.extend(front.targeting.iter().cloned());
    a.push("-fsycl-link".into());
    a.extend(objects.iter().map(|o| o.clone().into_os_string()));
    a.extend(["-o".into(), out.into()]);
    a
}

/// After the archive: the runtime's directory (search path and, on Linux, rpath), the runtime
/// (`sycl`, or `acpp-rt`), and libstdc++ by its file name (`-l:libstdc++.so.6`).
fn runtime_link(compiler: SyclCompiler, root: &Path, linux: bool) -> Vec<LinkDirective> {
    let lib = root.join("lib");
    let mut l = vec![LinkDirective::Search(lib.clone())];
    if linux {
        l.push(LinkDirective::Arg(format!("-Wl,-rpath,{}", lib.display())));
    }
    l.push(LinkDirective::Lib(match compiler {
        SyclCompiler::Dpcpp => "dylib=sycl".into(),
        SyclCompiler::Acpp => "dylib=acpp-rt".into(),
    }));
    if linux {
        l.push(LinkDirective::Lib("dylib:+verbatim=libstdc++.so.6".into()));
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(a: &[OsString]) -> Vec<String> {
        a.iter().map(|s| s.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn the_dpcpp_compile_is_argv_with_x_cpp_before_the_source_and_the_device_link_consumes_every_object() {
        let targeting: Vec<OsString> = vec!["-fsycl-targets=spir64".into()];
        let front = Front { compiler: SyclCompiler::Dpcpp, gcc: Some(Path::new("/usr/lib/gcc/x86_64-linux-gnu/12")), targeting: &targeting, optimize: true };
        let common = CommonOptions { flags: vec!["-g".into()], ..Default::default() };
        let a = compile_argv(&front, &common, &[PathBuf::from("/p/inc")], None, Path::new("/p/k/a.sycl"), Path::new("/o/a.o"), Path::new("/o/a.d"));
        assert_eq!(
            words(&a),
            ["-fsycl", "-std=c++17", "-fPIC", "-O2", "--gcc-install-dir=/usr/lib/gcc/x86_64-linux-gnu/12", "-fsycl-targets=spir64", "-I/p/inc", "-g", "-MD", "-MF", "/o/a.d", "-x", "c++", "-c", "/p/k/a.sycl", "-o", "/o/a.o"]
        );
        let l = device_link_argv(&front, &[PathBuf::from("/o/a.o"), PathBuf::from("/o/b.o")], Path::new("/o/sycl_device_link.o"));
        assert_eq!(words(&l), ["-fsycl", "-fPIC", "--gcc-install-dir=/usr/lib/gcc/x86_64-linux-gnu/12", "-fsycl-targets=spir64", "-fsycl-link", "/o/a.o", "/o/b.o", "-o", "/o/sycl_device_link.o"]);
    }

    #[test]
    fn versions_and_gcc_dirs_are_read_as_the_tools_write_them() {
        assert_eq!(dpcpp_version("Intel(R) oneAPI DPC++/C++ Compiler 2025.0.4 (2025.0.4.20241205)\nTarget: x86_64").as_deref(), Some("2025.0.4"));
        assert_eq!(dpcpp_version("clang version 19.0.0git (https://github.com/intel/llvm abc)").as_deref(), Some("19.0.0"));
        let t = tempfile::tempdir().unwrap();
        let libgcc = t.path().join("12/libgcc.a");
        std::fs::create_dir_all(libgcc.parent().unwrap()).unwrap();
        std::fs::write(&libgcc, "").unwrap();
        assert_eq!(gcc_dir_of(&format!("{}\n", libgcc.display())), Some(t.path().join("12")));
        assert_eq!(gcc_dir_of("/usr/lib/llvm-19/lib/clang/19/lib/linux/libclang_rt.builtins-x86_64.a\n"), None, "compiler-rt is no GCC installation");
        assert_eq!(gcc_dir_of("libgcc.a\n"), None, "a bare name (a compiler that found none) names nothing");
        let link = runtime_link(SyclCompiler::Dpcpp, Path::new("/opt/intel/oneapi/compiler/latest"), true);
        assert_eq!(link[2], LinkDirective::Lib("dylib=sycl".into()));
        assert_eq!(link[3], LinkDirective::Lib("dylib:+verbatim=libstdc++.so.6".into()), "-l:libstdc++.so.6, never -lstdc++");
    }
}
