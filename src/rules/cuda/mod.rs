//! CUDA (`.cu`) to objects, archived into one static library linked into the crate
//! Two routes, chosen by declaration
//! (`[package.metadata.mcpp.cuda] compiler = "nvcc" | "clang"`), never by what is installed:
//!
//! - nvcc: `-ccbin <host c++> -gencode arch=compute_XX,code=sm_XX` per architecture, plus
//!   `-gencode arch=compute_P,code=compute_P` for the portable floor (`ptx>=`/`floor>=`, default
//!   the highest architecture), so the binary runs without JIT on the listed GPUs and JITs on
//!   newer ones; `-Xcompiler -fPIC`; `-O3` (any `OPT_LEVEL` but 0) or `-O0` (`OPT_LEVEL=0`; no `-lineinfo`: nvcc writes its file
//!   table with absolute paths, and has no prefix map); `-MMD -MF`.
//! - clang: `-x cuda --cuda-path=<toolkit> --cuda-gpu-arch=<arch>` per architecture, PTX for
//!   the same portable floor only (`--no-cuda-include-ptx=all --cuda-include-ptx=sm_P`),
//!   `-fPIC`, `-O3`/`-O0`, `-MD -MF`.
//!
//! Both: the island header as a forced include (`-include`) for the island's device half,
//! `-I`/`-D` from the manifest, then `flags` (a flag changing the output kind refused), then
//! `-c <src> -o <obj>`.
//!
//! `output` (the table's, or a `sources` entry's) makes a source a payload instead:
//! PTX per virtual architecture, a cubin per architecture or one fat binary, compiled
//! device-only ([`argv::device_argv`]) into the lane's directory of that kind, handed to the
//! surface as text or bytes, and generated empty for a source the build leaves out.
//!
//! The toolkit (headers, `libcudart_static.a` in `lib64`/`lib`/`targets/<target>/lib`, only
//! `targets/<target>/lib` with `-target-dir <target>` when cross compiling) and the nvcc
//! program come from the one resolver ([`crate::tool::resolve_toolkit`], the toolkit declared as
//! [`crate::rules::cuda_toolkit::CUDA_TOOLKIT`]): `cuda.toolkit`, the toolkit a named nvcc sits in (`Build::tool`,
//! `tools.nvcc`, `NVCC`, `MCPP_NVCC`, `MCPP_TOOL_NVCC`), `CUDA_PATH`, `CUDA_HOME`, the
//! `cuda-nvcc` toolchain package, then nvcc on PATH (warned). Architectures: the accelerator entry's list; `native` or no list probes the GPUs
//! of this machine with `nvidia-smi` and refuses on a machine without one. Where the driver
//! can be probed (libcuda's `cuDriverGetVersion`), a toolkit whose major version is newer than
//! the driver's is refused before anything compiles (CUDA minor-version compatibility makes
//! the major the floor); where no probe answers, nothing is stated or refused.
//!
//! [`CudaRule::plan`] is a list of named steps: the options checked for the route
//! ([`check_route_options`]), the architectures ([`probe::entry_archs`]), the toolkit and its
//! target runtime ([`toolkit::locate`], [`toolkit::target_runtime`]), the compilers
//! ([`toolkit::compilers`]), one compile per source (`plan_compiles`, argv from
//! [`argv::argv`]), the device link (`plan_device_link`), the archive ([`crate::rules::link::archive`])
//! and the runtime's link directives (`runtime_link`).

pub mod argv;
pub mod probe;
pub mod toolkit;

use super::{DeviceSource, Rule, RuleContext, RulePlan};
use crate::config::accel::Backend;
use crate::error::{Error, ErrorKind, Result};
use crate::engine::graph::{Action, External, Role};
use crate::rules::host::HostToolchain;
use crate::rules::link::{self, LinkDirective};
use crate::tool::ToolSpec;
use crate::engine::graph::Expect;
use crate::surface::{Payload, PayloadKind};
use argv::{check_nvcc_argv, check_nvcc_values, device_argv, gencode_args, host_compiler_args, output_kind_flag, rdc_flag, DeviceOnly, Invocation};
use probe::Archs;
use serde::Deserialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use crate::rules::cuda_toolkit::{Toolkit, MANIFEST_KEY};
use toolkit::{Compilers, TargetRuntime};

use crate::rules::cuda_toolkit::NVCC;

/// Which CUDA compiler the CUDA rule drives: declared, else following the host C++ compiler
/// (`route_of`). The `Default` (nvcc) is what the toolchain packages assume when undeclared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CudaCompilerName {
    /// NVIDIA nvcc with the host C++ compiler passed as `-ccbin` (with a GCC host).
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

/// What the CUDA rule makes of a `.cu` source (`output` in `[package.metadata.mcpp.cuda]`, or a
/// `sources` entry's `output`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CudaOutput {
    /// An object (host code and the embedded device code), archived and linked (default).
    #[default]
    Object,
    /// PTX text, one per virtual architecture (the floor, and each listed architecture),
    /// embedded as text payloads for the driver API (`cuModuleLoadData`).
    Ptx,
    /// A cubin per real architecture, embedded as bytes payloads.
    Cubin,
    /// One fat binary with every listed architecture and the PTX floor, embedded as a bytes
    /// payload (nvcc only).
    Fatbin,
    /// Both a cubin per real architecture and PTX per virtual architecture, so the selection
    /// function picks a cubin where one fits and PTX elsewhere (`"cubin+ptx"`).
    #[serde(rename = "cubin+ptx")]
    CubinPtx,
}

impl CudaOutput {
    /// Every spelling, as the manifest writes them ([`Rule::outputs`]).
    pub const NAMES: &'static [&'static str] = &["object", "ptx", "cubin", "fatbin", "cubin+ptx"];

    /// The output of a spelling of [`CudaOutput::NAMES`].
    pub fn parse(name: &str) -> Option<CudaOutput> {
        match name {
            "object" => Some(CudaOutput::Object),
            "ptx" => Some(CudaOutput::Ptx),
            "cubin" => Some(CudaOutput::Cubin),
            "fatbin" => Some(CudaOutput::Fatbin),
            "cubin+ptx" => Some(CudaOutput::CubinPtx),
            _ => None,
        }
    }

    /// Its spelling (`"ptx"`), also the directory of its files in the lane (`cuda/ptx/`).
    pub fn name(self) -> &'static str {
        match self {
            CudaOutput::Object => "object",
            CudaOutput::Ptx => "ptx",
            CudaOutput::Cubin => "cubin",
            CudaOutput::Fatbin => "fatbin",
            CudaOutput::CubinPtx => "cubin+ptx",
        }
    }

    /// The outputs it is made of, each compiled into its own directory: `cubin+ptx` is a cubin
    /// and PTX, any other itself.
    pub fn parts(self) -> &'static [CudaOutput] {
        match self {
            CudaOutput::Object => &[CudaOutput::Object],
            CudaOutput::Ptx => &[CudaOutput::Ptx],
            CudaOutput::Cubin => &[CudaOutput::Cubin],
            CudaOutput::Fatbin => &[CudaOutput::Fatbin],
            CudaOutput::CubinPtx => &[CudaOutput::Cubin, CudaOutput::Ptx],
        }
    }

    /// The output of `source`: its `sources` entry's, else the table's, else an object.
    pub fn of(source: &DeviceSource, opts: &CudaOptions) -> CudaOutput {
        source.output.as_deref().and_then(CudaOutput::parse).unwrap_or_else(|| opts.output.unwrap_or_default())
    }
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
    /// is the `--cuda-path`. Read as a path here (its type checked with the table); the root
    /// itself is taken by [`crate::rules::cuda_toolkit::root_choice`], for this rule, HIP on
    /// NVIDIA and SYCL for NVIDIA alike.
    pub toolkit: Option<PathBuf>,
    /// The host compiler nvcc runs (`-ccbin`); default `NVCC_CCBIN`, then `CUDAHOSTCXX`, then the
    /// `cc` crate's C++ compiler.
    pub ccbin: Option<PathBuf>,
    /// `"static"` (default), `"shared"` or `"none"`.
    pub cudart: Option<Cudart>,
    /// Relocatable device code (`-rdc=true` and a device-link step); nvcc route only. Default false.
    pub rdc: Option<bool>,
    /// What every `.cu` source compiles to, unless its `sources` entry says otherwise: an
    /// object (default), PTX, cubins or a fat binary ([`CudaOutput`]).
    pub output: Option<CudaOutput>,
    /// The oldest driver the payloads must load on, as the CUDA version it supports
    /// (`"12.4"`, what `cuDriverGetVersion` reports): PTX of a newer ISA is refused
    /// (`check_driver_floor`), and so is a toolkit of a newer major version.
    pub driver_floor: Option<String>,
    /// `includes` (`-I`), `defines` (`-DNAME=value`), `optimize` (default: on in release
    /// profiles, `-O0` in debug), `flags` (before the depfile, source and output arguments).
    #[serde(skip)]
    pub common: super::options::CommonOptions,
}

impl super::options::RuleOptions for CudaOptions {
    const KEYS: &'static [crate::config::manifest::KeyDoc] = OPTION_KEYS;
    fn common(&self) -> &super::options::CommonOptions {
        &self.common
    }
    fn common_mut(&mut self) -> &mut super::options::CommonOptions {
        &mut self.common
    }
}

/// The keys of [`CudaOptions`], documented ([`Rule::option_keys`]).
const OPTION_KEYS: &[crate::config::manifest::KeyDoc] = &[
    crate::config::manifest::KeyDoc { key: "compiler", default: "follows the host C++ compiler", meaning: "`\"nvcc\"` or `\"clang\"` (clang++ `-x cuda --cuda-path=<toolkit>`). Without it the route follows the host C++ compiler (`CXX`, or what the `cc` crate chooses for the target): clang when it is clang (with a warning naming the choice), nvcc otherwise; `cargo mcpp why tool nvcc` (or `clang++`) says which and why" },
    crate::config::manifest::KeyDoc { key: "toolkit", default: "discovered", meaning: "the CUDA root. Without it: the toolkit a named nvcc sits in (`Build::tool(\"nvcc\", ..)`, `tools.nvcc`, `NVCC`, `MCPP_NVCC`, `MCPP_TOOL_NVCC`), then `CUDA_PATH`, `CUDA_HOME`, the installed `cuda-nvcc` toolchain package, then nvcc on PATH (warned). A named nvcc that is not inside a toolkit (a wrapper such as ccache) is still the program that runs. A `CUDA_PATH`/`CUDA_HOME` that is no toolkit is refused, not skipped" },
    crate::config::manifest::KeyDoc { key: "ccbin", default: "the `cc` crate's C++ compiler", meaning: "nvcc's host compiler. Without it: `NVCC_CCBIN`, then `CUDAHOSTCXX`, then the `cc` crate's C++ compiler for the target (`CXX_<target>`, `TARGET_CXX`/`HOST_CXX`, `CXX`, or its default, e.g. `aarch64-linux-gnu-g++` for an aarch64 target), whose arguments in `CXX` reach nvcc as `-Xcompiler <arg>` each (`CXX=\"g++ -DX=1\"`: `-ccbin /usr/bin/g++ -Xcompiler -DX=1`; a wrapper such as ccache is left out, warned, since `-ccbin` takes a compiler path). `-allow-unsupported-compiler` is never added for you. Not used on the clang route (warned)" },
    crate::config::manifest::KeyDoc { key: "cudart", default: "`\"static\"`", meaning: "`\"static\"` (also links `dl rt pthread`), `\"shared\"` (`libcudart.so`, or the versioned `libcudart.so.N` the PyPI runtime ships, with an rpath to the toolkit) or `\"none\"` (link a runtime yourself)" },
    crate::config::manifest::KeyDoc { key: "rdc", default: "`false`", meaning: "relocatable device code (`-rdc=true` plus an `nvcc -dlink` step). nvcc only" },
    crate::config::manifest::KeyDoc { key: "output", default: "`\"object\"`", meaning: "what each `.cu` compiles to (a `sources` entry `{ glob = \"...\", output = \"ptx\" }` overrides it for its files): `\"object\"` (linked through the archive), `\"ptx\"` (nvcc `--ptx`, clang `--cuda-device-only -S`: one text payload per virtual architecture: `<stem>_ptx_compute_NN()` each, and `<stem>_ptx()`, the lowest, which the driver JIT-compiles on every listed GPU), `\"cubin\"` (nvcc `-cubin`, clang `--cuda-device-only -c`: one bytes payload per architecture, `<stem>_cubin_sm_NN()` each, and `<stem>_cubin()`, the lowest), `\"fatbin\"` (nvcc `-fatbin` with every architecture and the PTX floor: `<stem>_fatbin()`; not offered on clang, refused), `\"cubin+ptx\"` (both the cubins and the PTX, so a program loads a cubin where one fits and PTX elsewhere). Every architecture declared in the manifest (`accel`, and each `sources` entry's) has its accessors in every build, empty where the build's set does not list it or with `--no-accel`. Each source also gets `<stem>_select(major, minor)`, the best image for a GPU, and `<stem>_entries`, its kernels' names read from the built images. Device-only outputs are compiled without the host pass, so `#if __CUDA_ARCH__` guards hold; each has its own directory of the lane (`cuda/ptx/`, ...)" },
    crate::config::manifest::KeyDoc { key: "driver-floor", default: "none", meaning: "the oldest driver the program must load its payloads on, as the CUDA version it supports (`\"12.4\"`: what `cuDriverGetVersion` reports, `nvidia-smi` shows). The build reads the PTX ISA version of every PTX payload (its `.version` line) and refuses one that needs a newer driver (PTX ISA 8.4 needs CUDA 12.4, 9.0 needs 13.0: NVIDIA's PTX ISA release history), naming the ways out: embed cubins (`output = \"cubin\"` or `\"fatbin\"` with every GPU's architecture listed), an older toolkit, or a higher floor. A toolkit of a newer major version than the floor is refused before anything compiles" },
    super::options::CommonOptions::INCLUDES_DOC,
    super::options::CommonOptions::DEFINES_DOC,
    crate::config::manifest::KeyDoc { key: "optimize", default: "`true` in release profiles", meaning: "`-O3` when true, `-O0` when false. No `-lineinfo`: nvcc writes its file table with the checkout's absolute paths (it has no prefix map), so the bytes would depend on where the package is; add it through `flags` to profile" },
    crate::config::manifest::KeyDoc { key: "flags", default: "`[]`", meaning: "extra arguments, after the rule's own and before the depfile, source and output arguments (so the rule's `-MF` and `-o` win), unexamined, except two kinds: a flag that turns relocatable device code on (`-rdc=true`, `-rdc true`, `--relocatable-device-code=true` or `... true`, `-dc`, `--device-c`) without `rdc = true` is refused before compiling, naming `flags[i]`: without the device link the program fails to link with `undefined symbol: __cudaRegisterLinkedBinary_...`. Set `rdc = true` instead. And a flag that changes what the compiler writes (nvcc `--ptx`/`-ptx`, `-cubin`, `-fatbin`, `-optix-ir`, `-E`, `-M`, `-MM`, `-cuda`, `-lib`, `-link`, `-dlink`, `-dw`, `-run`; clang `--cuda-device-only`, `--cuda-host-only`, `-S`, `-E`, `-M`, `-MM`, `-emit-llvm`, `-fsyntax-only`) is refused naming `output` (or `rdc`). An object output that is not an object file of the target (ELF on Linux, Mach-O on Apple) is a failure" },
];

/// The exact `cuda-nvcc` toolchain package version the nvcc route declares (CUDA 13.0: the H200
/// machines' driver 580 supports it).
pub const CUDA_NVCC_VERSION: &str = "13.0.88";

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


/// The CUDA rule.
pub struct CudaRule;

impl Rule for CudaRule {
    fn tools(&self) -> &'static [ToolSpec] {
        &[NVCC, CLANG, CCBIN]
    }
    /// The nvcc route drives the `cuda-nvcc` toolchain package at an exact version (the runtime must not
    /// be newer than the driver it meets; each rule brings its own environment),
    /// unless the project names nvcc or a toolkit (`cuda.toolkit`, `NVCC`, `CUDA_PATH`, `CUDA_HOME`).
    /// The clang route needs a CUDA 12.x layout no toolchain package ships yet, so it declares none.
    fn read_options(&self, manifest: &crate::config::manifest::Manifest) -> (super::options::RuleOptionsBox, Vec<Error>) {
        super::options::read_boxed::<CudaOptions>(manifest, self.name())
    }
    fn option_keys(&self) -> &'static [crate::config::manifest::KeyDoc] {
        OPTION_KEYS
    }
    fn outputs(&self) -> &'static [&'static str] {
        CudaOutput::NAMES
    }
    /// A left-out source with a device-only output keeps its accessors, empty: `<stem>_ptx()`
    /// and `<stem>_ptx_compute_NN()` (text), `<stem>_cubin()` and `<stem>_cubin_sm_NN()`,
    /// `<stem>_fatbin()` (bytes), for every architecture the manifest declares
    /// ([`declared_archs`]).
    fn placeholders(&self, manifest: &crate::config::manifest::Manifest, options: &super::options::RuleOptionsBox, sources: &[&DeviceSource]) -> Result<Vec<crate::surface::Payload>> {
        let opts: &CudaOptions = options.get()?;
        let (declared, declared_virt) = declared_archs(manifest);
        let mut out = Vec::new();
        for s in sources {
            // No image to read names from: the kernels the source itself defines.
            let kernels = std::fs::read_to_string(&s.path).map(|t| source_kernels(&t)).unwrap_or_default();
            for unit in CudaOutput::of(s, opts).parts().iter().flat_map(|o| payload_units(*o, source_stem(&s.rel), &[], &[], None, &declared, &declared_virt)) {
                let p = Payload::empty(s.rel.clone(), unit.identifier, unit.kind).with_doc(unit.doc).with_kernels(kernels.clone());
                out.push(match unit.image {
                    Some(arch) => p.with_cuda(arch),
                    None => p,
                });
            }
        }
        Ok(out)
    }
    fn check_payloads(&self, manifest: &crate::config::manifest::Manifest, options: &super::options::RuleOptionsBox, payloads: &[&crate::surface::Payload]) -> Result<()> {
        let Some(floor) = driver_floor(manifest, options.get()?)? else { return Ok(()) };
        // Each PTX file once, under its architecture's accessor (the unsuffixed one shares it).
        for p in payloads.iter().filter(|p| p.kind == PayloadKind::Text && !p.is_placeholder()) {
            let Some(arch) = &p.cuda else { continue };
            // A file the device phase did not write (docs.rs builds run nothing) is no fact.
            let Ok(text) = std::fs::read_to_string(&p.path) else { continue };
            check_driver_floor(manifest, floor, &p.source, arch, &text)?;
        }
        Ok(())
    }
    fn check_entry(&self, entry: &crate::config::accel::AccelEntry) -> Result<()> {
        probe::check_entry_version(entry)
    }
    fn toolchain_packages(&self, options: &super::options::RuleOptionsBox) -> Result<Vec<super::ToolchainPackageReq>> {
        let opts: &CudaOptions = options.get()?;
        if opts.toolkit.is_some() || opts.compiler.unwrap_or_default() != CudaCompilerName::Nvcc {
            return Ok(Vec::new());
        }
        // `CUDA_PATH`/`CUDA_HOME` name the toolkit: they are NVCC's toolkit root variables.
        Ok(vec![super::ToolchainPackageReq { package: "cuda-nvcc", version: CUDA_NVCC_VERSION, tool: NVCC, named_by_env: &[] }])
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
        let opts: &CudaOptions = ctx.options()?;
        let host = crate::rules::host::toolchain(ctx.manifest, ctx.env, ctx.facts, ctx.cache, ctx.tools)?;
        let (route, route_reason) = route_of(opts, &host);
        let rdc = opts.rdc.unwrap_or(false);
        check_route_options(ctx, opts, route, sources)?;
        let mut plan = RulePlan::default();
        if let (Some(reason), CudaCompilerName::Clang) = (&route_reason, route) {
            plan.warnings.push(format!("{reason}; declare [{MANIFEST_KEY}] compiler = \"clang\" or \"nvcc\" to choose"));
        }
        let archs = probe::entry_archs(ctx.accel, ctx.env).map_err(|e| ctx.accel_key(e))?;
        if route == CudaCompilerName::Clang && opts.ccbin.is_some() {
            plan.warnings.push(format!("{MANIFEST_KEY}.ccbin is nvcc's host compiler and is not used with compiler = \"clang\" (clang compiles the host side itself)"));
        }
        let (toolkit, mut nvcc) = toolkit::locate(ctx, route, &mut plan.warnings)?;
        // nvcc runs the host compiler (`-ccbin`) in its own environment: the declared host
        // toolchain's script variables go on it too.
        if let Some(n) = nvcc.as_mut() {
            n.env.extend(host.env.iter().cloned());
        }
        check_toolkit_floor(ctx.manifest, opts, &toolkit)?;
        let runtime = toolkit::target_runtime(&toolkit, ctx.facts, ctx.env)?;
        let compilers = toolkit::compilers(ctx, opts, &host, nvcc, &mut plan.warnings)?;
        if let Some(reason) = &route_reason {
            crate::tool::add_reason(ctx.cache, &compilers.compiler.name, reason)?;
        }
        if let Some(known) = probe::known_archs(route, &compilers.compiler, ctx.cache) {
            probe::check_known_archs(ctx.accel, &archs.archs, &known).map_err(|e| ctx.accel_key(e))?;
        }
        let lane = Lane { ctx, opts, route, rdc, archs: &archs, toolkit: &toolkit, runtime: &runtime, compilers: &compilers, host: &host };
        let (object_sources, device_sources): (Vec<&DeviceSource>, Vec<&DeviceSource>) = sources.iter().partition(|s| CudaOutput::of(s, opts) == CudaOutput::Object);
        plan_device_only(&lane, &device_sources, &mut plan)?;
        if !object_sources.is_empty() {
            let first = plan.actions.len();
            let mut objects = plan_compiles(&lane, &object_sources, &mut plan)?;
            if rdc {
                objects.push(plan_device_link(&lane, &objects, &mut plan));
            }
            let deps: Vec<usize> = (first..plan.actions.len()).collect();
            let (action, link) = link::archive(ctx.variant, LANE, &ctx.manifest.package_name, host.archive_format, &objects, deps, ctx.manifest.dir());
            plan.actions.push(action);
            plan.link.extend(link);
            plan.link.extend(runtime_link(&lane, &host, &mut plan.warnings)?);
        }
        if route == CudaCompilerName::Nvcc {
            for a in &plan.actions {
                if a.builtin.is_none() {
                    check_nvcc_argv(&a.args, &ctx.manifest.path)?;
                }
            }
        }
        let Compilers { compiler, ccbin, .. } = compilers;
        plan.tools.push(compiler);
        plan.tools.extend(ccbin);
        Ok(plan)
    }
}

/// The route of the lane: the declared `compiler`, else the one that follows the host C++
/// toolchain (the `cc` crate's compiler for the target, `CXX`): clang++ with an LLVM host
/// compiler, nvcc with GCC (or MSVC). With the reason, for the build's warning and
/// `cargo mcpp why tool`, when it was not declared.
fn route_of(opts: &CudaOptions, host: &crate::rules::host::HostToolchain) -> (CudaCompilerName, Option<String>) {
    if let Some(r) = opts.compiler {
        return (r, None);
    }
    let cxx = host.cxx.display();
    if let Some(m) = &host.managed {
        // zig c++ cannot be nvcc's host compiler; the nvcc route refuses it, naming the way out.
        return (CudaCompilerName::Nvcc, Some(format!("the CUDA route is nvcc: [{MANIFEST_KEY}] compiler is not declared and the host C++ compiler is the managed toolchain package {}", m.package)));
    }
    match host.family {
        crate::rules::host::Family::Clang => (CudaCompilerName::Clang, Some(format!("the CUDA route is clang++ -x cuda: [{MANIFEST_KEY}] compiler is not declared and the host C++ compiler ({cxx}) is clang"))),
        _ => (CudaCompilerName::Nvcc, Some(format!("the CUDA route is nvcc: [{MANIFEST_KEY}] compiler is not declared and the host C++ compiler ({cxx}) is not clang"))),
    }
}

/// The lane name: the directory of the variant the objects and the archive go to
/// (`<variant>/cuda/`), and the archive's name (`mcpp_cuda_<package>`).
const LANE: &str = "cuda";

/// What the steps after the resolution share: the options, the route and what was resolved.
struct Lane<'a> {
    ctx: &'a RuleContext<'a>,
    opts: &'a CudaOptions,
    route: CudaCompilerName,
    rdc: bool,
    archs: &'a Archs,
    toolkit: &'a Toolkit,
    runtime: &'a TargetRuntime,
    compilers: &'a Compilers,
    host: &'a HostToolchain,
}

/// The options that cannot work on the chosen route, refused before anything is resolved:
/// `rdc = true` on clang; a flag that turns relocatable device code on without `rdc = true`
/// ([`rdc_flag`]); a flag that changes what the compiler writes ([`output_kind_flag`]); a fat
/// binary on clang; a device-only output for the island's device half; on nvcc, a value its
/// shell would evaluate ([`check_nvcc_values`]).
///
/// # Errors
/// [`ErrorKind::Manifest`] naming the key (`file:line:col` for a flag).
pub fn check_route_options(ctx: &RuleContext, opts: &CudaOptions, route: CudaCompilerName, sources: &[&DeviceSource]) -> Result<()> {
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
    if let Some(f) = output_kind_flag(route, &opts.common.flags) {
        let i = f.index;
        return Err(Error::new(ErrorKind::Manifest, format!("`{}` in the CUDA flags makes the compiler write {} instead of the output cargo-mcpp planned", opts.common.flags[i], f.writes))
            .file(ctx.manifest.at_col(&format!("cuda.flags[{i}]")))
            .key(format!("{MANIFEST_KEY}.flags[{i}]"))
            .detail("The output kind is the `output` key's (object, ptx, cubin, fatbin): each compile is planned, named and checked for it (with `--ptx`, nvcc exits 0 having written PTX text where the object belongs).")
            .help(f.instead));
    }
    for s in sources {
        let output = CudaOutput::of(s, opts);
        let key = if s.output.is_some() { format!("package.metadata.mcpp.sources[{}].output", s.entry) } else { format!("{MANIFEST_KEY}.output") };
        let at = if s.output.is_some() { format!("sources[{}].output", s.entry) } else { "cuda.output".to_string() };
        if output == CudaOutput::Fatbin && route == CudaCompilerName::Clang {
            return Err(Error::new(ErrorKind::Manifest, format!("output = \"fatbin\" ({}) is not offered with compiler = \"clang\"", s.rel))
                .file(ctx.manifest.at_col(&at))
                .key(key)
                .detail("clang's driver runs fatbinary itself and writes the fat binary only inside a host object; it has no device-only fat binary output.")
                .help("use output = \"cubin\" (one per architecture) or \"ptx\" with clang, or compiler = \"nvcc\" for a fat binary"));
        }
        let island_half = ctx.island.is_some_and(|i| i.device_sources.contains(&s.path));
        if output != CudaOutput::Object && island_half {
            return Err(Error::new(ErrorKind::Manifest, format!("{} is the island's device half, and output = \"{}\" compiles no host code", s.rel, output.name()))
                .file(ctx.manifest.at_col(&at))
                .key(key)
                .detail("The island's entry points are host functions linked into the crate: only an object has them.")
                .help(format!("keep {} an object (output = \"object\"), and give the kernels to embed a `sources` entry of their own: {{ glob = \"...\", output = \"{}\" }}", s.rel, output.name())));
        }
    }
    if route == CudaCompilerName::Nvcc {
        check_nvcc_values(opts, sources, &ctx.manifest.path)?;
    }
    Ok(())
}

/// One translation unit's invocation on the lane's route, toolkit, host compiler, target and
/// options: `archs` the architectures it compiles for, `includes` the resolved include
/// directories, `force_include` the island header for the island's device half.
fn invocation<'a>(lane: &'a Lane, archs: &'a [String], includes: &'a [PathBuf], optimize: bool, rdc: bool, force_include: Option<&'a Path>) -> Invocation<'a> {
    Invocation {
        route: lane.route,
        toolkit: &lane.toolkit.root,
        ccbin: lane.compilers.ccbin.as_ref().map(|t| t.path.as_path()),
        ccbin_args: &lane.compilers.ccbin_args,
        target_dir: lane.runtime.target_dir,
        archs,
        ptx: lane.archs.ptx,
        optimize,
        rdc,
        force_include,
        includes,
        defines: &lane.opts.common.defines,
        flags: &lane.opts.common.flags,
    }
}

/// `dirs` as the compiler sees them from the package directory `pkg`, its working directory:
/// those below it relative (`kernels/include`), others as they are. Sources are named the
/// same way (their package-relative path), so no path of the checkout reaches `__FILE__`
/// (`assert`'s message) or line info, and two checkouts of one commit compile identical bytes.
fn package_relative(pkg: &Path, dirs: &[PathBuf]) -> Vec<PathBuf> {
    dirs.iter()
        .map(|d| match d.strip_prefix(pkg) {
            Ok(r) if r.as_os_str().is_empty() => PathBuf::from("."),
            Ok(r) => r.to_path_buf(),
            Err(_) => d.clone(),
        })
        .collect()
}

/// One compile action per source (`cuda:<rel>`), its object at [`link::object_path`] with the
/// depfile beside it, checked to be an object file of the target ([`Expect::object`]); the
/// island's device half gets the boundary header as a forced include (and as an input).
/// Returns the objects, in source order.
///
/// # Errors
/// An include directory outside the package or missing ([`crate::rules::host::resolve_includes`]); an
/// nvcc argument its shell would evaluate.
fn plan_compiles(lane: &Lane, sources: &[&DeviceSource], plan: &mut RulePlan) -> Result<Vec<PathBuf>> {
    let ctx = lane.ctx;
    let includes = lane.opts.common.resolve_includes(ctx.manifest, LANE)?;
    let rel_includes = package_relative(ctx.manifest.dir(), &includes);
    let optimize = lane.opts.common.optimize_or(ctx.facts.opt_level.optimizes());
    let compiler = &lane.compilers.compiler;
    let mut objects = Vec::new();
    for s in sources {
        let obj = link::object_path(ctx.variant, LANE, &s.rel);
        let depfile = obj.with_extension("d");
        let island_half = ctx.island.filter(|i| i.device_sources.contains(&s.path)).map(|i| i.header.as_path());
        let inv = invocation(lane, &lane.archs.archs, &rel_includes, optimize, lane.rdc, island_half);
        let mut inputs = vec![s.path.clone()];
        inputs.extend(island_half.map(Path::to_path_buf));
        plan.actions.push(Action::external(External {
            id: format!("cuda:{}", s.rel),
            description: format!("{} {}", compiler.name, s.rel),
            role: Role::Object,
            tool: compiler.clone(),
            args: argv::argv(&inv, Path::new(&s.rel), &obj, &depfile),
            cwd: ctx.manifest.dir().to_path_buf(),
            inputs,
            outputs: vec![obj.clone()],
        })
            .with_depfile(depfile, includes.clone())
            .with_failure_hint(failure_hint)
            .with_expect(Expect::object(lane.host.archive_format)));
        objects.push(obj);
    }
    Ok(objects)
}

/// The device link of relocatable device code (`rdc = true`, nvcc): `nvcc -dlink` over every
/// object into `<variant>/cuda/obj/device-link.o`, archived with them: a package-level step
/// ([`super::package_step`]) whose edges to the compiles come from its inputs. Returns that
/// object.
fn plan_device_link(lane: &Lane, objects: &[PathBuf], plan: &mut RulePlan) -> PathBuf {
    let dlink = lane.ctx.variant.objects_dir(LANE).join("device-link.o");
    let mut args: Vec<OsString> = Vec::new();
    args.extend(host_compiler_args(lane.compilers.ccbin.as_ref().map(|t| t.path.as_path()), &lane.compilers.ccbin_args, lane.runtime.target_dir));
    args.push("-dlink".into());
    args.extend(gencode_args(&lane.archs.archs, lane.archs.ptx));
    args.extend(["-Xcompiler".into(), "-fPIC".into()]);
    args.extend(objects.iter().map(|o| o.clone().into_os_string()));
    args.extend(["-o".into(), dlink.clone().into()]);
    plan.actions.push(super::package_step(super::PackageStep {
        id: "cuda:device-link".into(),
        description: format!("nvcc -dlink ({} objects)", objects.len()),
        tool: lane.compilers.compiler.clone(),
        args,
        cwd: lane.ctx.manifest.dir().to_path_buf(),
        consumes: objects.to_vec(),
        output: dlink.clone(),
        expect: Expect::object(lane.host.archive_format),
    }));
    dlink
}

/// The stem payloads of `rel` are named by: the file name without its extension (`affine` for
/// `kernels/affine.cu`).
fn source_stem(rel: &str) -> &str {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name.rsplit_once('.').map_or(name, |(stem, _)| stem)
}

/// The architectures the manifest declares for CUDA: the real ones (`sm_80`, `sm_90a`) of the
/// `accel` key's CUDA entry and of every `sources` entry's `accel`, and the virtual ones their
/// PTX is built for (each real one's and each floor's: `compute_80`), each sorted by number.
/// `{native}` declares none. These name the per-architecture accessors every build generates
/// ([`payload_units`]), so code naming one compiles under any accelerator set, `--no-accel`
/// included.
pub(crate) fn declared_archs(manifest: &crate::config::manifest::Manifest) -> (Vec<String>, Vec<String>) {
    let mut texts: Vec<&str> = manifest.mcpp.accel.iter().map(String::as_str).collect();
    for e in &manifest.mcpp.sources {
        if let crate::config::manifest::SourceEntry::Constrained(c) = e {
            texts.extend(c.accel.as_deref());
        }
    }
    let mut real: Vec<String> = Vec::new();
    let mut floors: Vec<u64> = Vec::new();
    for text in texts {
        let Ok(set) = crate::config::accel::AccelSet::parse(text) else { continue };
        for entry in set.entries.iter().filter(|e| e.backend == Backend::Cuda) {
            real.extend(entry.archs.iter().filter(|a| a.starts_with("sm_")).cloned());
            floors.extend(entry.floor.as_deref().and_then(crate::config::accel::arch_number));
        }
    }
    arch_lists(real, &floors)
}

/// Real architectures and PTX floors as the two sorted lists of [`declared_archs`].
fn arch_lists(mut real: Vec<String>, floors: &[u64]) -> (Vec<String>, Vec<String>) {
    let key = |a: &String| (crate::config::accel::arch_number(a).unwrap_or(0), a.clone());
    real.sort_by_key(key);
    real.dedup();
    let mut virt: Vec<String> = real.iter().map(|a| format!("compute_{}", arch_suffix(a))).chain(floors.iter().map(|f| format!("compute_{f}"))).collect();
    virt.sort_by_key(key);
    virt.dedup();
    (real, virt)
}

/// `90a` of `sm_90a` or `compute_90a`.
fn arch_suffix(arch: &str) -> &str {
    arch.strip_prefix("sm_").or_else(|| arch.strip_prefix("compute_")).unwrap_or(arch)
}

/// The compute capability an architecture names, as the driver reports it (`sm_86` -> 8.6).
fn capability(arch: &str) -> String {
    let n = crate::config::accel::arch_number(arch).unwrap_or(0);
    format!("{}.{}", n / 10, n % 10)
}

/// One payload of a device-only source: what compiles it (`None`: a placeholder, or an alias
/// of another unit's file), the architecture part of its action id and file name, its
/// identifier, kind and doc sentence.
struct PayloadUnit<'a> {
    what: Option<DeviceOnly<'a>>,
    arch: String,
    identifier: String,
    kind: PayloadKind,
    doc: String,
    /// The unit (by architecture) whose file this one's accessor hands out.
    same_as: Option<String>,
    /// What the image is built for ([`Payload::cuda`]): the architecture, a fat binary's list;
    /// `None` for the unsuffixed alias (its architecture's own accessor is the image).
    image: Option<String>,
}

/// The payloads of a source of `output` named `stem`, for the architectures `built` (real) and
/// virtual `built_virt` this build compiles, over the declared ones (`declared`, virtual
/// `declared_virt`, [`declared_archs`]):
///
/// - ptx: `<stem>_ptx_compute_NN` for every virtual architecture built or declared, and
///   `<stem>_ptx`, the lowest one built (the floor: the driver JIT-compiles it on every GPU the
///   build lists, and on newer ones);
/// - cubin: `<stem>_cubin_sm_NN` for every real architecture built or declared, and
///   `<stem>_cubin`, the lowest one built (it loads on that major architecture only);
/// - fatbin: `<stem>_fatbin`, every built architecture and PTX for `fat_ptx` (the floor).
///
/// Those not built are placeholders (no bytes); with nothing built, every accessor is one.
fn payload_units<'a>(output: CudaOutput, stem: &str, built: &'a [String], built_virt: &'a [String], fat_ptx: Option<u64>, declared: &[String], declared_virt: &[String]) -> Vec<PayloadUnit<'a>> {
    let mut units = Vec::new();
    let mut family = |kind_name: &str, built: &'a [String], declared: &[String], kind: PayloadKind, make: &dyn Fn(&'a str) -> DeviceOnly<'a>, doc: &dyn Fn(&str) -> String| {
        let (all, _) = arch_lists(built.iter().chain(declared).cloned().collect(), &[]);
        let lowest = built.first();
        let unsuffixed = format!("{stem}_{kind_name}");
        units.push(PayloadUnit {
            what: None,
            arch: String::new(),
            identifier: unsuffixed,
            kind,
            doc: match lowest {
                Some(a) => {
                    let d = doc(a);
                    // "A cubin ..." reads on as "a cubin ..."; "PTX ..." stays.
                    let d = d.strip_prefix("A ").map_or(d.clone(), |rest| format!("a {rest}"));
                    format!("The default, the lowest architecture this build lists: {d}")
                }
                None => "Empty: this build compiles this source for no architecture (its accelerator set leaves CUDA out).".to_string(),
            },
            same_as: lowest.cloned(),
            image: None,
        });
        for a in &all {
            let b = built.iter().find(|b| *b == a);
            units.push(PayloadUnit {
                what: b.map(|b| make(b)),
                arch: a.clone(),
                identifier: format!("{stem}_{kind_name}_{a}"),
                kind,
                doc: if b.is_some() { doc(a) } else { format!("Empty: {a} is declared in the manifest, and this build's accelerator set does not list it.") },
                same_as: None,
                image: Some(a.clone()),
            });
        }
    };
    match output {
        CudaOutput::Object | CudaOutput::CubinPtx => {}
        CudaOutput::Ptx => family("ptx", built_virt, declared_virt, PayloadKind::Text, &|v| DeviceOnly::Ptx(v), &|v| {
            format!("PTX for {v}: the driver JIT-compiles it on GPUs of compute capability {} and higher, if it knows the PTX ISA version in its `.version` line.", capability(v))
        }),
        CudaOutput::Cubin => family("cubin", built, declared, PayloadKind::Bytes, &|a| DeviceOnly::Cubin(a), &|a| {
            let n = crate::config::accel::arch_number(a).unwrap_or(0);
            format!("A cubin for {a}: it loads on GPUs of compute capability {} up to {}.9 (the same major, an equal or higher minor), with no JIT.", capability(a), n / 10)
        }),
        CudaOutput::Fatbin => units.push(PayloadUnit {
            what: (!built.is_empty()).then_some(DeviceOnly::Fatbin),
            arch: String::new(),
            identifier: format!("{stem}_fatbin"),
            kind: PayloadKind::Bytes,
            doc: if built.is_empty() {
                "Empty: this build compiles this source for no architecture (its accelerator set leaves CUDA out).".to_string()
            } else {
                format!("A fat binary: cubins for {} and PTX for {}; the driver loads the cubin that fits the GPU, else JIT-compiles the PTX.", built.join(", "), fat_ptx.map_or("none".to_string(), |p| format!("compute_{p}")))
            },
            same_as: None,
            image: Some(built.iter().cloned().chain(fat_ptx.map(|p| format!("compute_{p}"))).collect::<Vec<_>>().join(",")),
        }),
    }
    units
}

/// The device-only compiles of `sources` (each with a non-object output), one action per
/// (source, architecture) where the kind has several, each writing into the lane's directory
/// of its kind ([`crate::engine::layout::Variant::output_dir`]) with its depfile beside it, and the
/// payloads they make ([`payload_units`]: per-architecture accessors for every architecture
/// built or declared, the unsuffixed one the lowest built). PTX is built for every virtual
/// architecture of the build (each listed one's and the floor's), cubins for every listed
/// one; text and bytes, cubins checked to be ELF, a fat binary to be one.
///
/// Action ids are `cuda:<kind>[:<arch>]:<rel>`, apart from the object's `cuda:<rel>`.
///
/// # Errors
/// An include directory outside the package or missing.
fn plan_device_only(lane: &Lane, sources: &[&DeviceSource], plan: &mut RulePlan) -> Result<()> {
    if sources.is_empty() {
        return Ok(());
    }
    let ctx = lane.ctx;
    let includes = lane.opts.common.resolve_includes(ctx.manifest, LANE)?;
    let rel_includes = package_relative(ctx.manifest.dir(), &includes);
    let optimize = lane.opts.common.optimize_or(ctx.facts.opt_level.optimizes());
    let compiler = &lane.compilers.compiler;
    let archs = &lane.archs.archs;
    let (built, built_virt) = arch_lists(archs.clone(), &lane.archs.ptx.into_iter().collect::<Vec<_>>());
    let (declared, declared_virt) = declared_archs(ctx.manifest);
    for s in sources {
        let stem = source_stem(&s.rel);
        for &output in CudaOutput::of(s, lane.opts).parts() {
        let dir = ctx.variant.output_dir(LANE, output.name());
        let file_of = |arch: &str| {
            let file_ext = if arch.is_empty() { output.name().to_string() } else { format!("{arch}.{}", output.name()) };
            dir.join(link::object_name(&s.rel, &file_ext))
        };
        for unit in payload_units(output, stem, &built, &built_virt, lane.archs.ptx, &declared, &declared_virt) {
            let path = match (&unit.what, &unit.same_as) {
                (Some(what), _) => {
                    let out = file_of(&unit.arch);
                    let depfile = out.with_extension("d");
                    let inv = invocation(lane, archs, &rel_includes, optimize, false, None);
                    let tag = if unit.arch.is_empty() { output.name().to_string() } else { format!("{}:{}", output.name(), unit.arch) };
                    let expect = match output {
                        CudaOutput::Cubin => Some(Expect::ELF),
                        CudaOutput::Fatbin => Some(Expect::FATBIN),
                        _ => None,
                    };
                    plan.actions.push(Action::external(External {
                        id: format!("cuda:{tag}:{}", s.rel),
                        description: format!("{} {} ({tag})", compiler.name, s.rel),
                        role: Role::Source,
                        tool: compiler.clone(),
                        args: device_argv(&inv, *what, Path::new(&s.rel), &out, &depfile),
                        cwd: ctx.manifest.dir().to_path_buf(),
                        inputs: vec![s.path.clone()],
                        outputs: vec![out.clone()],
                    })
                        .with_depfile(depfile, includes.clone())
                        .with_expect(expect));
                    out
                }
                (None, Some(arch)) => file_of(arch),
                (None, None) => PathBuf::new(),
            };
            plan.payloads.push(Payload { source: s.rel.clone(), identifier: unit.identifier, path, kind: unit.kind, doc: Some(unit.doc), cuda: unit.image, kernels: Vec::new() });
        }
        }
    }
    Ok(())
}

/// The way out to add to a failed CUDA compile, from its action id and its output: an object
/// compile (`cuda:<rel>`) whose compiler reports a redefinition (nvcc: `has already been
/// defined`, clang: `redefinition of`) most often meets a header that defines a function only
/// below an architecture (`#if __CUDA_ARCH__ < 800`): the host pass of an object compile sees
/// `__CUDA_ARCH__` undefined (0 in `#if`), so the guarded definition collides with the
/// toolkit's. A device-only output has no host pass.
pub(crate) fn failure_hint(action_id: &str, output: &str) -> Option<String> {
    let rel = action_id.strip_prefix("cuda:")?;
    if CudaOutput::NAMES.iter().any(|k| rel.starts_with(&format!("{k}:"))) || rel == "device-link" {
        return None;
    }
    if !(output.contains("has already been defined") || output.contains("redefinition of")) {
        return None;
    }
    Some(format!(
        "if a header defines this only for some architectures (`#if __CUDA_ARCH__ < ...`), the host pass of an object compile sees `__CUDA_ARCH__` undefined and collides with the toolkit's definition: compile {rel} device-only instead, with output = \"ptx\" (or \"cubin\", \"fatbin\") in [{MANIFEST_KEY}] or a `sources` entry {{ glob = \"{rel}\", output = \"ptx\" }}, and load it through the driver API"
    ))
}

/// The kernels a CUDA source defines itself, read without compiling: the name before `(` of
/// each `__global__` definition (`extern "C" __global__ void scale(`, `__global__
/// __launch_bounds__(256) void k(`). Templates and kernels in included headers are not seen.
/// A placeholder's entry-name constants come from this list, so they exist in a build without
/// CUDA; a built image's names are read from the image instead.
pub(crate) fn source_kernels(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (at, _) in text.match_indices("__global__") {
        let before = text[..at].trim_end();
        // `template<...> __global__`: no name without an instantiation. The `>` of an
        // `#include <...>` line just above is no template.
        let line_before = before.rsplit('\n').next().unwrap_or_default().trim_start();
        if before.ends_with('>') && !line_before.starts_with('#') {
            continue;
        }
        // `// ... __global__ ...`: a comment.
        if text[..at].rsplit('\n').next().unwrap_or_default().contains("//") {
            continue;
        }
        let rest = &text[at + "__global__".len()..];
        let Some(paren) = rest.find("void").map(|v| v + 4) else { continue };
        // Between `__global__` and `void` only attributes (`__launch_bounds__(256)`), never the
        // end of a statement or a block.
        if rest[..paren].contains([';', '{', '}']) {
            continue;
        }
        let tail = rest[paren..].trim_start();
        let name: String = tail.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        let params = tail[name.len()..].trim_start();
        // A definition (its parameter list closed by `)` and then `{`), not a declaration: two
        // definitions of one name (in two namespaces, or overloads) are two kernels, as the
        // built image lists them (`AXPY`, `AXPY_2`).
        if !name.is_empty() && params.starts_with('(') && defines_body(params) {
            out.push(name);
        }
    }
    out
}

/// Whether `params`, starting at a parameter list's `(`, is followed by a body (`{`) after its
/// matching `)`, rather than `;` (a declaration).
fn defines_body(params: &str) -> bool {
    let mut depth = 0usize;
    for (i, c) in params.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return params[i + 1..].trim_start().starts_with('{');
                }
            }
            _ => {}
        }
    }
    false
}

/// The CUDA version a driver must support to load PTX of ISA `isa` (major, minor): NVIDIA's PTX
/// ISA document, "Release Notes -> PTX release history" (the same table as `cuda-python`'s
/// `get_minimal_required_cuda_ver_from_ptx_ver`). `None` for an ISA newer than the table.
pub(crate) fn ptx_isa_min_cuda(isa: (u32, u32)) -> Option<(u32, u32)> {
    match isa {
        (7, m @ 0..=8) => Some((11, m)),
        (8, m @ 0..=5) => Some((12, m)),
        (8, m @ 6..=8) => Some((12, m + 1)),
        (9, m @ 0..=1) => Some((13, m)),
        (m, _) if m < 7 => Some((10, 2)),
        _ => None,
    }
}

/// The PTX ISA version of PTX text: its `.version X.Y` line.
pub(crate) fn ptx_isa(text: &str) -> Option<(u32, u32)> {
    let line = text.lines().map(str::trim).find(|l| l.starts_with(".version"))?;
    let (major, minor) = line.trim_start_matches(".version").trim().split_once('.')?;
    Some((major.parse().ok()?, minor.trim().parse().ok()?))
}

/// `driver-floor` as (major, minor).
///
/// # Errors
/// [`ErrorKind::Manifest`] at the key for a value that is not `major.minor`.
fn driver_floor(manifest: &crate::config::manifest::Manifest, opts: &CudaOptions) -> Result<Option<(u32, u32)>> {
    let Some(raw) = &opts.driver_floor else { return Ok(None) };
    let parsed = raw.split_once('.').and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)));
    match parsed {
        Some(v) => Ok(Some(v)),
        None => Err(Error::new(ErrorKind::Manifest, format!("`driver-floor = \"{}\"` is not a CUDA version", crate::text::echo(raw)))
            .file(manifest.at_col("cuda.driver-floor"))
            .key(format!("{MANIFEST_KEY}.driver-floor"))
            .help("write the CUDA version the oldest driver supports as major.minor, e.g. driver-floor = \"12.4\" (what `nvidia-smi` shows as \"CUDA Version\")")),
    }
}

/// A toolkit of a newer major version than `driver-floor` builds nothing a driver of the floor
/// loads (CUDA's minor-version compatibility holds within one major): refused before compiling.
///
/// # Errors
/// [`ErrorKind::Manifest`] at `driver-floor`, naming the toolkit, with the ways out.
fn check_toolkit_floor(manifest: &crate::config::manifest::Manifest, opts: &CudaOptions, toolkit: &Toolkit) -> Result<()> {
    let (Some(floor), Some(tk)) = (driver_floor(manifest, opts)?, toolkit.version) else { return Ok(()) };
    if tk.0 <= floor.0 {
        return Ok(());
    }
    Err(Error::new(ErrorKind::Manifest, format!("the CUDA {}.{} toolkit builds nothing a driver of CUDA {}.{} loads, and `driver-floor` is {}.{}", tk.0, tk.1, floor.0, floor.1, floor.0, floor.1))
        .file(manifest.at_col("cuda.driver-floor"))
        .key(format!("{MANIFEST_KEY}.driver-floor"))
        .detail(format!("toolkit: {} ({})", toolkit.root.display(), toolkit.found_by))
        .detail(format!("A driver runs cubins of toolkits of its own major version, and JIT-compiles PTX of an ISA it knows: CUDA {}.x writes PTX ISA {}.x, which a CUDA {}.x driver does not know.", tk.0, tk.0 - 4, floor.0))
        .help(format!("declare a CUDA {}.x toolkit ([{MANIFEST_KEY}] toolkit = \"...\", or CUDA_PATH), or raise driver-floor to \"{}.0\"", floor.0, tk.0)))
}

/// Refuse PTX (`text`, from `source`, for `arch`) whose ISA version needs a newer driver than
/// `floor`, with the ways out.
///
/// # Errors
/// [`ErrorKind::Manifest`] at `driver-floor`.
pub(crate) fn check_driver_floor(manifest: &crate::config::manifest::Manifest, floor: (u32, u32), source: &str, arch: &str, text: &str) -> Result<()> {
    let Some(isa) = ptx_isa(text) else { return Ok(()) };
    let needs = ptx_isa_min_cuda(isa);
    if needs.is_some_and(|n| n <= floor) {
        return Ok(());
    }
    let needs_text = needs.map_or(format!("a driver newer than CUDA 13.1 (ISA {}.{} is newer than the table cargo-mcpp knows)", isa.0, isa.1), |(a, b)| format!("a driver of CUDA {a}.{b} or newer"));
    let raise = needs.map_or("the CUDA version of your oldest driver".to_string(), |(a, b)| format!("\"{a}.{b}\""));
    Err(Error::new(ErrorKind::Manifest, format!("the PTX of {source} for {arch} needs {needs_text}, and `driver-floor` is {}.{}", floor.0, floor.1))
        .file(manifest.at_col("cuda.driver-floor"))
        .key(format!("{MANIFEST_KEY}.driver-floor"))
        .detail(format!("Its `.version` line says PTX ISA {}.{}. A driver JIT-compiles only PTX of an ISA version it knows; an older one fails with CUDA_ERROR_UNSUPPORTED_PTX_VERSION (the ISA of each CUDA release: NVIDIA's PTX ISA document, \"PTX release history\").", isa.0, isa.1))
        .help(format!("embed cubins instead, which a driver of the toolkit's major version loads without JIT: output = \"cubin\" (or, on the nvcc route, \"fatbin\") for {source}, with the architecture of every GPU it must run on listed in `accel`"))
        .help("or declare an older toolkit, whose PTX ISA the floor's driver knows ([package.metadata.mcpp.cuda] toolkit = \"...\", or CUDA_PATH)")
        .help(format!("or raise driver-floor to {raise}")))
}

/// The link directives of the CUDA runtime, after the archive: the runtime directory of the
/// target (when a runtime or the device runtime is linked), `static=cudadevrt` for `rdc`, then
/// `cudart`: static (`cudart_static` and `dl rt pthread`), shared (`libcudart.so`, or the
/// versioned file the PyPI runtime ships, with an rpath) or none (warned); last the C++ runtime
/// ([`link::cpp_runtime`]), which nvcc's host stub needs on every route.
///
/// # Errors
/// [`ErrorKind::ToolNotFound`] when the toolkit has no runtime to link, or no shared one for
/// `cudart = "shared"`.
fn runtime_link(lane: &Lane, host: &HostToolchain, warnings: &mut Vec<String>) -> Result<Vec<LinkDirective>> {
    let toolkit = lane.toolkit;
    let lib_dir = &lane.runtime.lib_dir;
    let mut link = Vec::new();
    let cudart = lane.opts.cudart.unwrap_or_default();
    if cudart != Cudart::None || lane.rdc {
        match lib_dir {
            Some(d) => link.push(LinkDirective::Search(d.clone())),
            None => {
                let looked: Vec<String> = toolkit.runtime_candidates(&lane.runtime.target).iter().map(|d| d.display().to_string()).collect();
                return Err(Error::new(ErrorKind::ToolNotFound, format!("the CUDA toolkit at {} has no libcudart_static.a", toolkit.root.display()))
                    .file(&toolkit.root)
                    .detail(format!("looked in {}", looked.join(", ")))
                    .help(format!("install the runtime (PyPI nvidia-cuda-runtime) into the toolkit, or set {MANIFEST_KEY}.cudart = \"none\" and link it yourself")));
            }
        }
    }
    if lane.rdc {
        link.push(LinkDirective::Lib("static=cudadevrt".into()));
    }
    match cudart {
        Cudart::Static => {
            link.push(LinkDirective::Lib("static=cudart_static".into()));
            for l in ["dl", "rt", "pthread"] {
                link.push(LinkDirective::Lib(format!("dylib={l}")));
            }
        }
        Cudart::Shared => {
            let dir = lib_dir.clone().unwrap_or_default();
            let Some(file) = crate::rules::cuda_toolkit::shared_cudart(&dir) else {
                return Err(Error::new(ErrorKind::ToolNotFound, format!("{MANIFEST_KEY}.cudart = \"shared\", and the CUDA toolkit at {} has no libcudart.so", toolkit.root.display()))
                    .key(format!("{MANIFEST_KEY}.cudart"))
                    .help("use cudart = \"static\" (the default), or a toolkit with the shared runtime"));
            };
            // `libcudart.so` when the toolkit has the development link, else the versioned
            // file itself (the PyPI runtime ships only `libcudart.so.13`); an rpath so the
            // program finds it where it was linked.
            if file == "libcudart.so" {
                link.push(LinkDirective::Lib("dylib=cudart".into()));
            } else {
                link.push(LinkDirective::Lib(format!("dylib:+verbatim={file}")));
            }
            link.push(LinkDirective::Arg(format!("-Wl,-rpath,{}", dir.display())));
        }
        Cudart::None => warnings.push(format!(
            "{MANIFEST_KEY}.cudart = \"none\": link a CUDA runtime yourself (e.g. cargo::rustc-link-lib=static=cudart_static), or the link fails with undefined __cudaRegisterFatBinary"
        )),
    }
    // nvcc's host stub uses the C++ runtime (`__cxa_guard_acquire`), so it is linked on every route.
    link.extend(link::cpp_runtime(host));
    Ok(link)
}

#[cfg(test)]
mod floor_tests {
    use super::*;

    /// The PTX ISA -> CUDA table of NVIDIA's PTX release history, at its edges.
    #[test]
    fn the_ptx_isa_names_the_driver_it_needs() {
        let cases = [((7, 0), Some((11, 0))), ((7, 8), Some((11, 8))), ((8, 0), Some((12, 0))), ((8, 4), Some((12, 4))), ((8, 5), Some((12, 5))), ((8, 6), Some((12, 7))), ((8, 8), Some((12, 9))), ((9, 0), Some((13, 0))), ((9, 1), Some((13, 1))), ((9, 2), None)];
        for (isa, cuda) in cases {
            assert_eq!(ptx_isa_min_cuda(isa), cuda, "{isa:?}");
        }
        assert_eq!(ptx_isa("//\n// Generated by NVIDIA NVVM Compiler\n\n.version 9.0\n.target sm_80\n"), Some((9, 0)));
        assert_eq!(ptx_isa(".target sm_80\n"), None);
    }

    /// The kernels a source defines, read without compiling.
    #[test]
    fn kernels_are_read_from_the_source() {
        let src = "#include \"x.cuh\"\n// __global__ in a comment without a definition\nextern \"C\" __global__ void affine(float* y) {}\n__global__ __launch_bounds__(256) void scale (float* y) {}\ntemplate <typename T> __global__ void generic(T* y) {}\n__device__ void helper() {}\n";
        assert_eq!(source_kernels(src), ["affine", "scale"]);
        // A kernel right after an `#include <...>` line is no template; a declaration is no
        // kernel; one name defined twice (two namespaces) is two kernels, as the image lists them.
        let src = "#include <cassert>\n__global__ void check(const float* x) { assert(x); }\n__global__ void axpy(float a);\n__global__ void axpy(float a) {}\nnamespace ns { __global__ void axpy(float a) {} }\n";
        assert_eq!(source_kernels(src), ["check", "axpy", "axpy"]);
        assert_eq!(crate::surface::cuda::constant_names(&source_kernels(src)), ["CHECK", "AXPY", "AXPY_2"]);
    }
}
