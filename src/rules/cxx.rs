//! The crate's own C++ host sources (`[package.metadata.mcpp] cxx-sources`), the island's host
//! fallback, and the generated module interfaces they import, compiled with the `cc` crate's
//! compiler choice through the action graph (fingerprints, depfiles, the jobserver) and
//! archived into one static library linked into the crate.
//!
//! C++20 modules: each unit is read for `export module X;`, `module X;` and `[export] import X;`
//! lines; interfaces are compiled before their importers (graph dependencies), and an
//! importer's key includes the bytes of every interface it reads.
//! - clang: `--precompile` the interface to `bmi/X.pcm`, compile the `.pcm` to an object,
//!   importers get `-fmodule-file=X=bmi/X.pcm`.
//! - gcc: `-fmodules-ts` with a module mapper file naming `bmi/X.gcm` for every module, so no
//!   `gcm.cache/` appears in the package.
//!
//! [`plan_host`] gathers the units ([`units`]: `cxx-sources`, the island's fallback, the
//! island's generated interface when a unit imports it), resolves the compiler ([`compiler`])
//! and checks `std` ([`check_cxx_std`]); [`plan`] reads the module lines ([`Modules::read`]),
//! orders the units, and plans each unit's actions (`unit_actions`) and the archive
//! ([`crate::rules::link::archive`]).

use crate::config::cargo_facts::CargoFacts;
use crate::config::env::Env;
use crate::error::{Error, ErrorKind, Result};
use crate::engine::graph::{Action, External, Role};
use crate::rules::host::{Family, HostToolchain};
use crate::engine::layout::{DeviceCache, Variant};
use crate::rules::link::{self, LinkDirective};
use crate::config::manifest::Manifest;
use crate::tool::Tool;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The lane name: the variant's directory for objects, BMIs and the archive (`<variant>/cxx/`)
/// and the archive's name (`mcpp_cxx_<package>`).
pub const LANE: &str = "cxx";

/// The manifest list this lane compiles.
const SOURCES_KEY: &str = "package.metadata.mcpp.cxx-sources";

/// One C++ unit to compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// Absolute path.
    pub path: PathBuf,
    /// Package-relative (or generated-file) name used in ids and messages.
    pub rel: String,
    /// A header the compiler reads before the unit's first line (`-include <header>`, `/FI<header>`
    /// for MSVC): the island's generated boundary for the island's own C++ files, so a fallback
    /// needs no `#include` of it. Not given to a module unit (its first line must be `module`).
    pub force_include: Option<PathBuf>,
    /// More declared inputs of its compile (the files an assembly unit `.incbin`s).
    pub extra_inputs: Vec<PathBuf>,
}

/// What a unit's text says about modules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleLines {
    /// `export module X;`: the unit is the interface of X.
    pub provides: Option<String>,
    /// `module X;` and `import X;` / `export import X;`, in order.
    pub requires: Vec<String>,
    /// The first header unit imported (`import <vector>;`), which the lane refuses.
    pub header_unit: Option<String>,
    /// Whether the unit is a module unit (`module;`, `module X;` or `export module X;`).
    pub module_unit: bool,
}

/// Read the module lines of a C++ unit (line-based: a declaration at the start of a line).
pub fn module_lines(text: &str) -> ModuleLines {
    let mut m = ModuleLines::default();
    for line in text.lines() {
        let l = line.trim();
        let name_of = |rest: &str| -> Option<String> {
            let n = rest.trim().strip_suffix(';')?.trim();
            (!n.is_empty() && !n.starts_with('<') && !n.starts_with('"')).then(|| n.to_string())
        };
        if l == "module;" || l.starts_with("module ") || l.starts_with("export module ") {
            m.module_unit = true;
        }
        if let Some(rest) = l.strip_prefix("export module ") {
            m.provides = name_of(rest);
        } else if let Some(rest) = l.strip_prefix("export import ").or_else(|| l.strip_prefix("import ")) {
            let r = rest.trim();
            if (r.starts_with('<') || r.starts_with('"')) && m.header_unit.is_none() {
                m.header_unit = Some(r.trim_end_matches(';').trim().to_string());
            }
            if let Some(n) = name_of(rest) {
                if !m.requires.contains(&n) {
                    m.requires.push(n);
                }
            }
        } else if let Some(rest) = l.strip_prefix("module ") {
            if let Some(n) = name_of(rest) {
                if !n.starts_with(':') && !m.requires.contains(&n) {
                    m.requires.push(n);
                }
            }
        }
    }
    m
}

/// What the host C++ lane needs of the island (`[package.metadata.mcpp.island]`): its scanned
/// files (which get the boundary header as a forced include), the fallback to compile in this
/// build, and the emitted header and module.
#[derive(Debug, Clone, Copy)]
pub struct IslandUnits<'a> {
    /// Every file the island scan read, absolute.
    pub scanned: &'a [PathBuf],
    /// The host fallback files to compile in this build (absolute, package-relative name);
    /// empty when the device half compiles.
    pub fallback: &'a [(PathBuf, String)],
    /// The generated header and C++ module interface (none under `emit-module = false`).
    pub emitted: &'a crate::surface::island::emit::Emitted,
}

/// The generated payload surface the host C++ lane compiles with the crate's units (the copy
/// in the variant's `surface/`, [`crate::engine::layout::Variant::surface_cpp_dir`]): the interface
/// (`<module>.cppm`, compiled in module order when a unit imports the module; or the C header
/// `<module>.h`, found through `-I` of its directory) and the implementation unit, compiled and
/// linked whenever the lane compiles anything.
#[derive(Debug, Clone, Copy)]
pub struct SurfaceUnits<'a> {
    /// The dotted module name (`my_app.shaders`).
    pub module_name: &'a str,
    /// The interface: the `.cppm` under `modules = true`, the header otherwise.
    pub interface: &'a Path,
    /// The implementation unit (`<module>.impl.cpp`): the `extern "C"` accessors' definitions.
    pub implementation: &'a Path,
    /// Whether the interface is a C++20 module.
    pub modules: bool,
    /// Object storage: the generated assembly and the payload files it `.incbin`s (declared
    /// inputs of its action: an assembler's depfile may not list them). Assembled even when the
    /// crate has no C++ unit (the Rust accessors read its symbols).
    pub assembly: Option<(&'a Path, &'a [PathBuf])>,
}

/// What the host C++ lane planned.
#[derive(Debug, Clone)]
pub struct HostPlan {
    /// The compiles and the archive, `deps` local to this list.
    pub actions: Vec<Action>,
    /// The archive and the C++ runtime, in order.
    pub link: Vec<LinkDirective>,
    /// What to watch: the `cxx-sources` glob directories (a new file there reruns the build
    /// script) and the compiler.
    pub watch: Vec<PathBuf>,
}

/// Plan the host C++ lane: `cxx-sources`, the island's fallback when its device half is not
/// compiled, and the island's generated module when a unit imports it. `None` when there is
/// nothing to compile.
///
/// # Errors
/// A glob matching nothing, a file that is not C++, a missing include directory, no host
/// compiler, a `std` the lane refuses ([`check_cxx_std`]), a module problem ([`plan`]).
pub fn plan_host(manifest: &Manifest, island: Option<IslandUnits>, surface: Option<SurfaceUnits>, (env, facts, tools): (&Env, &CargoFacts, &crate::tool::ToolChoices), cache: &DeviceCache, variant: &Variant) -> Result<Option<HostPlan>> {
    let (units, watch_dirs) = units(manifest, island, surface)?;
    if units.is_empty() {
        return Ok(None);
    }
    let opts = manifest.mcpp.cxx.clone().unwrap_or_default();
    let mut includes: Vec<PathBuf> = island.map(|i| i.emitted.dir.clone()).into_iter().collect();
    includes.extend(surface.and_then(|s| s.interface.parent()).map(Path::to_path_buf));
    includes.extend(crate::rules::host::resolve_includes(manifest, "package.metadata.mcpp.cxx", &opts.includes)?);
    let (host, compiler) = compiler(manifest, env, facts, cache, tools)?;
    let std = opts.std.clone().unwrap_or_else(|| "c++20".to_string());
    let module_unit = units.iter().find(|u| std::fs::read_to_string(&u.path).is_ok_and(|t| {
        let m = module_lines(&t);
        m.provides.is_some() || !m.requires.is_empty()
    }));
    check_cxx_std(&std, module_unit.map(|u| u.rel.as_str()), &manifest.path)?;
    let (actions, link) = plan(&CxxPlanInput {
        host: &host,
        compiler: &compiler,
        units: &units,
        std: &std,
        includes: &includes,
        defines: &opts.defines,
        flags: &opts.flags,
        variant,
        cwd: manifest.dir(),
        package: &manifest.package_name,
    })?;
    // The glob directories are watched like the device sources', so a new C++ file there
    // reruns the build script; the tools are watched too.
    Ok(Some(HostPlan { actions, link, watch: watch_dirs.into_iter().chain([compiler.path]).collect() }))
}

/// The units of the lane, in order: `cxx-sources` (expanded), then the island's fallback files
/// not listed there, then the island's generated interface when a unit imports its module,
/// then the payload surface's implementation unit (and its module interface when a unit
/// imports it). The island's own files get its header as a forced include (no `#include`
/// needed). Returns them with the glob directories to watch.
///
/// # Errors
/// A glob matching nothing ([`crate::sources::expand_globs`]); a unit that is neither C++ (`.cpp
/// .cc .cxx .c++`, or a `.cppm .ixx .mpp` module interface) nor C (`.c`, compiled as C).
pub fn units(manifest: &Manifest, island: Option<IslandUnits>, surface: Option<SurfaceUnits>) -> Result<(Vec<Unit>, Vec<PathBuf>)> {
    let (listed, watch_dirs) = crate::sources::expand_globs(manifest, SOURCES_KEY, &manifest.mcpp.cxx_sources)?;
    // The island's own files (its fallback, or an island source listed in cxx-sources) read the
    // generated header as a forced include, as its device half does: no `#include` needed.
    let forced = |path: &Path| island.filter(|i| i.scanned.iter().any(|s| s == path)).map(|i| i.emitted.header.clone());
    let mut units: Vec<Unit> = listed.into_iter().map(|(path, rel)| Unit { force_include: forced(&path), path, rel, extra_inputs: Vec::new() }).collect();
    if let Some(i) = island {
        for (path, rel) in i.fallback {
            if !units.iter().any(|u| u.path == *path) {
                units.push(Unit { path: path.clone(), rel: rel.clone(), force_include: forced(path), extra_inputs: Vec::new() });
            }
        }
    }
    let assembly = surface.and_then(|s| s.assembly).map(|(path, incbins)| Unit { path: path.to_path_buf(), rel: format!("(generated) {}", path.file_name().unwrap_or_default().to_string_lossy()), force_include: None, extra_inputs: incbins.to_vec() });
    if units.is_empty() {
        return Ok((assembly.into_iter().collect(), watch_dirs));
    }
    for u in &units {
        check_kind(u)?;
    }
    if let Some(i) = island {
        let imported = units.iter().any(|u| std::fs::read_to_string(&u.path).is_ok_and(|t| module_lines(&t).requires.contains(&i.emitted.module_name)));
        match (&i.emitted.interface, imported) {
            (Some(interface), true) => units.push(Unit { path: interface.clone(), rel: format!("(generated) {}.cppm", i.emitted.module_name), force_include: None, extra_inputs: Vec::new() }),
            (None, true) => {
                let unit = units.iter().find(|u| std::fs::read_to_string(&u.path).is_ok_and(|t| module_lines(&t).requires.contains(&i.emitted.module_name))).map(|u| u.rel.clone()).unwrap_or_default();
                return Err(Error::new(ErrorKind::Manifest, format!("{unit} imports the island's module `{}`, and the island writes no module (emit-module = false)", i.emitted.module_name))
                    .file(&manifest.path)
                    .key("package.metadata.mcpp.island.emit-module")
                    .help(format!("include the header instead (`#include \"{}.h\"`), or remove `emit-module = false`", i.emitted.module_name)));
            }
            (_, false) => {}
        }
    }
    if let Some(s) = surface {
        check_surface_form(&units, &s)?;
        let imported = s.modules && units.iter().any(|u| std::fs::read_to_string(&u.path).is_ok_and(|t| module_lines(&t).requires.iter().any(|r| r == s.module_name)));
        if imported {
            units.push(Unit { path: s.interface.to_path_buf(), rel: format!("(generated) {}.cppm", s.module_name), force_include: None, extra_inputs: Vec::new() });
        }
        units.push(Unit { path: s.implementation.to_path_buf(), rel: format!("(generated) {}.impl.cpp", s.module_name), force_include: None, extra_inputs: Vec::new() });
    }
    units.extend(assembly);
    Ok((units, watch_dirs))
}

/// Whether the host C++ lane has a unit of the package to compile (`cxx-sources`, or an island's
/// fallback in this build): the condition under which it compiles the payload surface's
/// implementation unit too ([`units`]), so the one under which header storage writes its C
/// arrays ([`crate::surface::SurfaceOptions::cxx`]).
///
/// # Errors
/// As [`units`].
pub(crate) fn has_units(manifest: &Manifest, island: Option<IslandUnits>) -> Result<bool> {
    Ok(!units(manifest, island, None)?.0.is_empty())
}

/// Each unit uses the payload surface in the form `modules` generates, checked before any
/// compiler starts: under `modules = false` an `import <module>;` (the surface is a header),
/// under `modules = true` an `#include "<module>.h"` (the header is not generated; a C unit
/// needs that form).
///
/// # Errors
/// [`ErrorKind::Sources`] at the unit's `path:line`, naming the module, the form and `modules`.
fn check_surface_form(units: &[Unit], s: &SurfaceUnits) -> Result<()> {
    let header = format!("{}.h", s.module_name);
    for u in units {
        let Ok(text) = std::fs::read_to_string(&u.path) else { continue };
        for (n, line) in text.lines().enumerate() {
            let t = line.trim_start();
            let at = format!("{}:{}", u.path.display(), n + 1);
            if !s.modules && module_lines(line).requires.iter().any(|r| r == s.module_name) {
                return Err(Error::new(ErrorKind::Sources, format!("{} imports the module `{}`, but `modules = false` makes the payload surface a header", u.rel, s.module_name))
                    .file(at)
                    .key(SOURCES_KEY)
                    .help(format!("write `#include \"{header}\"` instead of `import {};` (its directory is on the include path), or set `modules = true` in [package.metadata.mcpp]", s.module_name)));
            }
            let included = t.strip_prefix('#').map(str::trim_start).and_then(|r| r.strip_prefix("include")).map(str::trim);
            if s.modules && included.is_some_and(|i| i == format!("\"{header}\"") || i == format!("<{header}>")) {
                let c = if crate::sources::extension(&u.path).as_deref() == Some("c") { " (a C unit needs the header form)" } else { "" };
                return Err(Error::new(ErrorKind::Sources, format!("{} includes `{header}`, which is generated only under `modules = false`{c}", u.rel))
                    .file(at)
                    .key(SOURCES_KEY)
                    .detail(format!("With `modules = true` (the default) the payload surface is the C++ module `{}`.", s.module_name))
                    .help(format!("set `modules = false` in [package.metadata.mcpp] to generate the header, or `import {};` from a C++ unit", s.module_name)));
            }
        }
    }
    Ok(())
}

/// A unit the lane compiles: C++ (`.cpp .cc .cxx .c++`), a module interface (`.cppm .ixx
/// .mpp`) or C (`.c`), by its extension.
///
/// # Errors
/// [`ErrorKind::Manifest`] naming the unit, `cxx-sources` and the extensions.
fn check_kind(u: &Unit) -> Result<()> {
    let ext = crate::sources::extension(&u.path).unwrap_or_default();
    if ["cpp", "cc", "cxx", "c++", "cppm", "ixx", "mpp", "c"].contains(&ext.as_str()) {
        return Ok(());
    }
    Err(Error::new(ErrorKind::Manifest, format!("`{}` is not a C++ or C source", u.rel))
        .file(&u.path)
        .key(SOURCES_KEY)
        .help("the host C++ lane compiles .cpp .cc .cxx .c++ units, .cppm .ixx .mpp module interfaces and .c units (as C)"))
}

/// What of the host C++ lane is checked before the device phase runs (`pipeline::validate`, so
/// a bad `cxx-sources` entry is refused before any device compiler starts, and by `cargo mcpp
/// build` before cargo starts): the globs, each unit's kind, and the module structure among the
/// user's own units (one interface per module, what the lane does not support, no import
/// cycle). An import of a module no listed unit provides is left to the lane: the generated
/// surface's and island's modules exist only after the device phase.
///
/// Returns every problem found (empty when none), worded as [`units`] and [`Modules::read`]
/// word them.
pub fn check_sources(manifest: &Manifest) -> Vec<Error> {
    if manifest.mcpp.cxx_sources.is_empty() {
        return Vec::new();
    }
    let listed = match crate::sources::expand_globs(manifest, SOURCES_KEY, &manifest.mcpp.cxx_sources) {
        Ok((listed, _)) => listed,
        Err(e) => return vec![e],
    };
    let units: Vec<Unit> = listed.into_iter().map(|(path, rel)| Unit { path, rel, force_include: None, extra_inputs: Vec::new() }).collect();
    let problems: Vec<Error> = units.iter().filter_map(|u| check_kind(u).err()).collect();
    if !problems.is_empty() {
        return problems;
    }
    let mut lines = Vec::new();
    for u in &units {
        match std::fs::read_to_string(&u.path) {
            Ok(text) => lines.push(module_lines(&text)),
            Err(e) => return vec![Error::io("cannot read the C++ source", &u.path, e)],
        }
    }
    let provider = match providers(&units, &lines) {
        Ok(p) => p,
        Err(e) => return vec![e],
    };
    let mut problems: Vec<Error> = check_supported(&units, &lines).err().into_iter().collect();
    // A cycle through the user's own interfaces; the other imports are the lane's to check.
    let own: Vec<ModuleLines> = lines.iter().map(|m| ModuleLines { requires: m.requires.iter().filter(|r| provider.contains_key(*r)).cloned().collect(), ..m.clone() }).collect();
    problems.extend(order(&units, &own, &provider).err());
    problems
}

/// The host C++ compiler as a tool (`cargo mcpp why tool c++`), chosen by the `cc` crate.
pub const HOST_CXX: crate::tool::ToolSpec = crate::tool::ToolSpec { name: "c++", programs: &["c++"], env_vars: &["CXX"], version_args: &["--version"], install_hint: "apt install g++", toolchain_package: None, toolkit: None };

/// The host compiler: the declared host toolchain's, else the `cc` crate's choice (`CXX` or its default) for cargo's `TARGET`,
/// recorded as such for `cargo mcpp why tool c++`, run through the wrapper `CXX` names
/// ([`crate::rules::host::lane_tool`]).
///
/// # Errors
/// [`ErrorKind::ToolNotFound`] when `cc` finds none, or it or the wrapper does not run.
pub fn compiler(manifest: &Manifest, env: &Env, facts: &CargoFacts, cache: &DeviceCache, tools: &crate::tool::ToolChoices) -> Result<(HostToolchain, Tool)> {
    let host = crate::rules::host::toolchain(manifest, env, facts, cache, tools)?;
    let (source, origin) = match &host.declared_at {
        Some(at) => (crate::tool::ToolSource::Derived(format!("the declared host toolchain ({at})")), at.clone()),
        None => (crate::tool::ToolSource::Derived("the cc crate's C++ compiler (CXX or its default)".to_string()), "the cc crate".to_string()),
    };
    let resolved = match &host.managed {
        // A toolchain package's compiler: its identity is the package's (name, version, archives),
        // and its leading arguments are the first of every command line (`zig c++ ...`).
        Some(m) => {
            let origin = format!("{origin}: toolchain package {} {} ({}), run as `{} {}`", m.package, m.version, m.why, host.cxx.display(), m.leading.join(" "));
            let source = crate::tool::ToolSource::ToolchainPackage { name: m.package.clone(), version: m.version.clone() };
            crate::tool::resolve_known(&HOST_CXX, &host.cxx, m.identity.clone(), source, &origin, cache)?
        }
        None => crate::tool::resolve_at(&HOST_CXX, &host.cxx, source, &origin, env, cache)?,
    };
    let mut compiler = crate::rules::host::lane_tool(&host, resolved, env, cache)?;
    // The declared toolchain's script variables: on the compiler's processes, in its fingerprint.
    compiler.env.extend(host.env.iter().cloned());
    Ok((host, compiler))
}

/// `[package.metadata.mcpp.cxx] std`: `c++NN` or `gnu++NN` (NN one of 11 14 17 20 23 26, or
/// the draft names 2a 2b 2c), and C++20 or later when a unit (`module_unit`, its path relative
/// to the package) declares or imports a module.
///
/// # Errors
/// [`ErrorKind::Manifest`] naming the key and the accepted values.
pub fn check_cxx_std(std: &str, module_unit: Option<&str>, manifest_path: &Path) -> Result<()> {
    let key = "package.metadata.mcpp.cxx.std";
    let year = std.strip_prefix("c++").or_else(|| std.strip_prefix("gnu++"));
    let Some(year) = year.filter(|y| ["11", "14", "17", "20", "23", "26", "2a", "2b", "2c"].contains(y)) else {
        return Err(Error::new(ErrorKind::Manifest, format!("`{std}` is not a C++ standard this lane accepts (c++11 through c++26, or gnu++)"))
            .file(manifest_path)
            .key(key)
            .help("write c++20 (the default), c++23, c++26, c++17, ... (or 2a/2b/2c), or their gnu++ forms"));
    };
    if let Some(unit) = module_unit.filter(|_| ["11", "14", "17"].contains(&year)) {
        return Err(Error::new(ErrorKind::Manifest, format!("`{std}` has no modules, and `{unit}` declares or imports one"))
            .file(manifest_path)
            .key(key)
            .help("use c++20 or later (the default is c++20), or drop the module declarations"));
    }
    Ok(())
}

/// The options of one host C++ compile.
#[derive(Debug, Clone)]
pub struct CxxPlanInput<'a> {
    /// The host toolchain (cc's choice).
    pub host: &'a HostToolchain,
    /// The compiler as a resolved tool (identity for fingerprints).
    pub compiler: &'a Tool,
    /// The units, in the order given.
    pub units: &'a [Unit],
    /// `-std=` value.
    pub std: &'a str,
    /// Include directories (absolute).
    pub includes: &'a [PathBuf],
    /// Definitions.
    pub defines: &'a BTreeMap<String, String>,
    /// Extra flags, appended last.
    pub flags: &'a [String],
    /// The variant of the device cache: objects, module files and the archive go to its
    /// `cxx/` directory ([`crate::engine::layout::Variant::lane_dir`]).
    pub variant: &'a Variant,
    /// The working directory (package root).
    pub cwd: &'a Path,
    /// The package name, which names the archive ([`crate::rules::link::lib_name`]: `mcpp_cxx_<package>`).
    pub package: &'a str,
}

/// The module structure of the units: what each declares, who provides each module, the order
/// interfaces-before-importers, and each unit's transitive requirements.
#[derive(Debug, Clone)]
pub struct Modules {
    /// Each unit's module lines, in unit order.
    pub lines: Vec<ModuleLines>,
    /// The unit providing each module.
    pub provider: BTreeMap<String, usize>,
    /// The units in dependency order (interfaces before importers).
    pub order: Vec<usize>,
    /// Each unit's transitive module requirements, in order of first need.
    pub closure: Vec<Vec<String>>,
    /// Whether any unit declares or imports a module.
    pub any: bool,
}

impl Modules {
    /// Read and check the units' module lines: one interface per module (`providers`), what
    /// the lane does not support (`check_supported`), every import provided
    /// (`check_imports`), no cycle (`order`).
    ///
    /// # Errors
    /// [`ErrorKind::Sources`] for each of those; [`ErrorKind::Io`] for an unreadable unit;
    /// [`ErrorKind::ToolNotFound`] for modules under MSVC.
    pub fn read(units: &[Unit], family: Family) -> Result<Modules> {
        let mut lines = Vec::new();
        for u in units {
            let text = std::fs::read_to_string(&u.path).map_err(|e| Error::io("cannot read the C++ source", &u.path, e))?;
            lines.push(module_lines(&text));
        }
        let provider = providers(units, &lines)?;
        let any = !provider.is_empty() || lines.iter().any(|m| !m.requires.is_empty());
        if any && family == Family::Msvc {
            return Err(Error::new(ErrorKind::ToolNotFound, "C++20 modules in the host sources need gcc or clang; the cc crate chose MSVC")
                .help("set CXX to clang++ or g++, or use headers instead of modules"));
        }
        check_supported(units, &lines)?;
        check_imports(units, &lines, &provider)?;
        let order = order(units, &lines, &provider)?;
        let closure = closure(&order, &lines, &provider);
        Ok(Modules { lines, provider, order, closure, any })
    }
}

/// The unit that is the interface of each module.
///
/// # Errors
/// [`ErrorKind::Sources`] for two interfaces of one module, naming both.
fn providers(units: &[Unit], lines: &[ModuleLines]) -> Result<BTreeMap<String, usize>> {
    let mut provider: BTreeMap<String, usize> = BTreeMap::new();
    for (i, m) in lines.iter().enumerate() {
        if let Some(name) = &m.provides {
            if let Some(&j) = provider.get(name) {
                return Err(Error::new(ErrorKind::Sources, format!("two units are the interface of the module `{name}`"))
                    .file(&units[i].path)
                    .detail(units[j].rel.clone())
                    .detail(units[i].rel.clone())
                    .help("one module has one primary interface unit; rename one of the modules"));
            }
            provider.insert(name.clone(), i);
        }
    }
    Ok(provider)
}

/// Refuse what the lane does not build: header units (`import <vector>;`), partitions, the
/// standard library module, an interface importing itself.
///
/// # Errors
/// [`ErrorKind::Sources`] naming the unit and the way out.
fn check_supported(units: &[Unit], lines: &[ModuleLines]) -> Result<()> {
    for (i, m) in lines.iter().enumerate() {
        let unit = &units[i];
        let unsupported = |what: &str, help: &str| {
            Err(Error::new(ErrorKind::Sources, format!("{}: {what} is not supported by the host C++ lane", unit.rel)).file(&unit.path).key(SOURCES_KEY).help(help.to_string()))
        };
        if let Some(h) = &m.header_unit {
            return unsupported(&format!("the header unit `import {h};`"), "include the header instead (`#include <...>`): header units need per-compiler scanning this lane does not do");
        }
        if m.provides.as_deref().is_some_and(|p| p.contains(':')) || m.requires.iter().any(|r| r.contains(':')) {
            return unsupported("a module partition (`module a:part` / `import :part`)", "split the partition into a module of its own (`export module a.part;`) and import that");
        }
        for r in &m.requires {
            if r == "std" || r == "std.compat" {
                return unsupported(&format!("`import {r};`"), "include the standard headers (`#include <vector>`): the standard library module needs a prebuilt std BMI this lane does not build");
            }
            if m.provides.as_ref() == Some(r) {
                return Err(Error::new(ErrorKind::Sources, format!("{} imports the module `{r}` it is the interface of", unit.rel))
                    .file(&unit.path)
                    .help(format!("remove `import {r};` from its own interface")));
            }
        }
    }
    Ok(())
}

/// Every imported module is provided by a unit.
///
/// # Errors
/// [`ErrorKind::Sources`] naming the importer and the module.
fn check_imports(units: &[Unit], lines: &[ModuleLines], provider: &BTreeMap<String, usize>) -> Result<()> {
    for (i, m) in lines.iter().enumerate() {
        for r in &m.requires {
            if !provider.contains_key(r) {
                return Err(Error::new(ErrorKind::Sources, format!("{} imports the module `{r}`, which no C++ source provides", units[i].rel))
                    .file(&units[i].path)
                    .key(SOURCES_KEY)
                    .help(format!("add the unit with `export module {r};` to cxx-sources (generated modules: the payload surface's `module-name`, `<package>.shaders` by default, when the package has payloads; the island's `<package>.kernels` when [package.metadata.mcpp.island] is declared)")));
            }
        }
    }
    Ok(())
}

/// The units in topological order: each after the interfaces it imports (depth first, in unit
/// order otherwise).
///
/// # Errors
/// [`ErrorKind::Sources`] for an import cycle, naming the chain.
fn order(units: &[Unit], lines: &[ModuleLines], provider: &BTreeMap<String, usize>) -> Result<Vec<usize>> {
    fn visit(i: usize, lines: &[ModuleLines], provider: &BTreeMap<String, usize>, state: &mut [u8], order: &mut Vec<usize>, units: &[Unit], stack: &mut Vec<usize>) -> Result<()> {
        match state[i] {
            2 => return Ok(()),
            1 => {
                let from = stack.iter().position(|&s| s == i).unwrap_or(0);
                let chain: Vec<&str> = stack[from..].iter().chain(std::iter::once(&i)).map(|&u| units[u].rel.as_str()).collect();
                return Err(Error::new(ErrorKind::Sources, format!("the module imports of {} form a cycle", units[i].rel))
                    .file(&units[i].path)
                    .key(SOURCES_KEY)
                    .detail(chain.join(" imports "))
                    .help("C++ modules cannot import each other in a cycle; move the shared part into a third module"));
            }
            _ => {}
        }
        state[i] = 1;
        stack.push(i);
        for r in &lines[i].requires {
            let p = provider[r];
            if p != i {
                visit(p, lines, provider, state, order, units, stack)?;
            }
        }
        stack.pop();
        state[i] = 2;
        order.push(i);
        Ok(())
    }
    let mut order: Vec<usize> = Vec::new();
    let mut state = vec![0u8; lines.len()];
    for i in 0..lines.len() {
        visit(i, lines, provider, &mut state, &mut order, units, &mut Vec::new())?;
    }
    Ok(order)
}

/// Each unit's transitive module requirements (what it imports, and what those import), in
/// order of first need.
fn closure(order: &[usize], lines: &[ModuleLines], provider: &BTreeMap<String, usize>) -> Vec<Vec<String>> {
    let mut closure: Vec<Vec<String>> = vec![Vec::new(); lines.len()];
    for &i in order {
        let mut all: Vec<String> = Vec::new();
        for r in &lines[i].requires {
            let p = provider[r];
            for t in closure[p].iter().chain(std::iter::once(r)) {
                if !all.contains(t) {
                    all.push(t.clone());
                }
            }
        }
        closure[i] = all;
    }
    closure
}

/// The compiled interface of module `name`: `<variant>/cxx/bmi/<name>.pcm` (clang) or `.gcm` (g++).
fn bmi(input: &CxxPlanInput, name: &str) -> PathBuf {
    let ext = if input.host.family == Family::Clang { "pcm" } else { "gcm" };
    input.variant.bmi_dir().join(format!("{name}.{ext}"))
}

/// The arguments every unit starts with: the compiler (after a wrapper), its arguments, `-std`,
/// g++'s module flags and mapper, then (at the returned index, where a forced include goes)
/// `-I`/`-D` and the flags.
fn common_args(input: &CxxPlanInput, modules: &Modules) -> (Vec<OsString>, usize) {
    // Under a wrapper (`CXX="ccache g++"`) the program run is the wrapper ([`crate::rules::host::lane_tool`]),
    // and the compiler is its first argument.
    let mut common: Vec<OsString> = input.host.wrapper.iter().map(|_| input.host.cxx.clone().into_os_string()).collect();
    common.extend(input.host.cxx_args.iter().map(OsString::from));
    common.push(format!("-std={}", input.std).into());
    if modules.any && input.host.family == Family::Gnu {
        common.push("-fmodules-ts".into());
        let mut m = OsString::from("-fmodule-mapper=");
        m.push(input.variant.module_map());
        common.push(m);
    }
    // A forced include goes here: after the language options, before -I/-D and the flags.
    let forced_at = common.len();
    common.extend(crate::rules::host::include_define_args(input.includes, input.defines));
    common.extend(input.flags.iter().map(OsString::from));
    (common, forced_at)
}

/// g++'s module mapper (every module to its BMI), written when g++ compiles modules, with the
/// BMI directory it writes into.
///
/// # Errors
/// [`ErrorKind::Io`] when either cannot be written.
fn write_module_map(input: &CxxPlanInput, modules: &Modules) -> Result<()> {
    if !(modules.any && input.host.family == Family::Gnu) {
        return Ok(());
    }
    let text: String = modules.provider.keys().map(|n| format!("{n} {}\n", bmi(input, n).display())).collect();
    crate::engine::fingerprint::write_if_changed(&input.variant.module_map(), text.as_bytes())?;
    let dir = input.variant.bmi_dir();
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("cannot create", &dir, e))
}

/// The actions (in dependency order, `deps` indices local to the returned list) and the link
/// directives: each unit's actions (`unit_actions`) in module order, then the archive of
/// their objects and, when a unit is C++, the C++ runtime.
///
/// # Errors
/// [`ErrorKind::Sources`] for a module provided twice, an import no unit provides (that is not
/// a standard header unit), or an import cycle; [`ErrorKind::ToolNotFound`] for MSVC with modules.
pub fn plan(input: &CxxPlanInput) -> Result<(Vec<Action>, Vec<LinkDirective>)> {
    let modules = Modules::read(input.units, input.host.family)?;
    write_module_map(input, &modules)?;
    let (common, forced_at) = common_args(input, &modules);
    let mut actions: Vec<Action> = Vec::new();
    // The index of the action whose output is each module's BMI.
    let mut bmi_action: BTreeMap<String, usize> = BTreeMap::new();
    let mut objects = Vec::new();
    for &i in &modules.order {
        objects.push(unit_actions(input, &modules, i, (&common, forced_at), &mut actions, &mut bmi_action));
    }
    let all: Vec<usize> = (0..actions.len()).collect();
    let (archive, mut link) = link::archive(input.variant, LANE, input.package, input.host.archive_format, &objects, all, input.cwd);
    actions.push(archive);
    // The C++ runtime only for a C++ unit: an archive of C units and object storage's assembly
    // alone (a pure-Rust crate under object storage) needs none.
    if input.units.iter().any(|u| !matches!(crate::sources::extension(&u.path).as_deref(), Some("S" | "s" | "c"))) {
        link.extend(link::cpp_runtime(input.host));
    }
    Ok((actions, link))
}

/// Plan unit `i`'s actions into `actions` and return its object: for a clang interface,
/// `--precompile` to its BMI then the BMI to the object; otherwise one compile (g++ writes an
/// interface's BMI beside the object). An importer reads every BMI of its closure (inputs and
/// dependencies; `-fmodule-file=` on clang); an island file gets the boundary header forced.
fn unit_actions(input: &CxxPlanInput, modules: &Modules, i: usize, (common, forced_at): (&[OsString], usize), actions: &mut Vec<Action>, bmi_action: &mut BTreeMap<String, usize>) -> PathBuf {
    let u = &input.units[i];
    let clang = input.host.family == Family::Clang;
    let obj = link::object_path(input.variant, LANE, &u.rel);
    let depfile = obj.with_extension("d");
    let ext = crate::sources::extension(&u.path).unwrap_or_default();
    let mut args = match ext.as_str() {
        "c" => c_args(input, &["-x", "c"], "/TC"),
        "S" => c_args(input, &["-x", "assembler-with-cpp"], ""),
        _ => common.to_vec(),
    };
    let mut inputs = vec![u.path.clone()];
    inputs.extend(u.extra_inputs.iter().cloned());
    if let Some(header) = u.force_include.as_ref().filter(|_| !modules.lines[i].module_unit) {
        let forced = crate::surface::island::emit::force_include_args(header, input.host.family == Family::Msvc);
        args.splice(forced_at..forced_at, forced);
        inputs.push(header.clone());
    }
    let mut deps = Vec::new();
    for r in &modules.closure[i] {
        inputs.push(bmi(input, r));
        deps.push(bmi_action[r]);
        if clang {
            args.push(module_file_arg(input, r));
        }
    }
    if modules.any && input.host.family == Family::Gnu {
        inputs.push(input.variant.module_map());
    }
    let action = |id: String, description: String, role: Role, args: Vec<OsString>, inputs: Vec<PathBuf>, outputs: Vec<PathBuf>, depfile: Option<PathBuf>, deps: Vec<usize>| {
        let action = Action::external(External { id, description, role, tool: input.compiler.clone(), args, cwd: input.cwd.to_path_buf(), inputs, outputs }).with_deps(deps);
        match depfile {
            Some(depfile) => action.with_depfile(depfile, input.includes.to_vec()),
            None => action,
        }
    };
    let provides = modules.lines[i].provides.clone();
    match (&provides, clang) {
        (Some(name), true) => {
            let pcm = bmi(input, name);
            let mut pre = args;
            pre.extend(["-MD".into(), "-MF".into(), depfile.clone().into(), "-x".into(), "c++-module".into(), "--precompile".into()]);
            pre.extend([u.path.clone().into(), "-o".into(), pcm.clone().into()]);
            let description = format!("{} --precompile {}", input.compiler.name, u.rel);
            actions.push(action(format!("cxx:{}:bmi", u.rel), description, Role::Source, pre, inputs, vec![pcm.clone()], Some(depfile), deps.clone()));
            let pre_index = actions.len() - 1;
            bmi_action.insert(name.clone(), pre_index);
            let mut c = common.to_vec();
            c.extend(modules.closure[i].iter().map(|r| module_file_arg(input, r)));
            c.extend(["-c".into(), pcm.clone().into(), "-o".into(), obj.clone().into()]);
            let mut d = deps;
            d.push(pre_index);
            actions.push(action(format!("cxx:{}", u.rel), format!("{} {}", input.compiler.name, u.rel), Role::Object, c, vec![pcm], vec![obj.clone()], None, d));
        }
        _ => {
            args.extend(["-MD".into(), "-MF".into(), depfile.clone().into()]);
            if provides.is_some() {
                args.extend(["-x".into(), "c++".into()]);
            }
            args.extend(["-c".into(), u.path.clone().into(), "-o".into(), obj.clone().into()]);
            let mut outputs = vec![obj.clone()];
            outputs.extend(provides.as_deref().map(|name| bmi(input, name)));
            actions.push(action(format!("cxx:{}", u.rel), format!("{} {}", input.compiler.name, u.rel), Role::Object, args, inputs, outputs, Some(depfile), deps));
            if let Some(name) = provides {
                bmi_action.insert(name, actions.len() - 1);
            }
        }
    }
    obj
}

/// The arguments of a C unit (`.c` in `cxx-sources`) or of object storage's assembly (`.S`):
/// the compiler (after a wrapper) and its arguments, told the language (`language`: `-x c`,
/// `-x assembler-with-cpp`; `msvc_language` for MSVC), then `-I`/`-D` and the flags; no
/// `-std=c++..` and no module options. A C unit imports no module (it cannot) and reads the
/// payload surface through its C header.
fn c_args(input: &CxxPlanInput, language: &[&str], msvc_language: &str) -> Vec<OsString> {
    let mut args: Vec<OsString> = input.host.wrapper.iter().map(|_| input.host.cxx.clone().into_os_string()).collect();
    args.extend(input.host.cxx_args.iter().map(OsString::from));
    if input.host.family == Family::Msvc {
        args.extend((!msvc_language.is_empty()).then(|| msvc_language.into()));
    } else {
        args.extend(language.iter().map(OsString::from));
    }
    args.extend(crate::rules::host::include_define_args(input.includes, input.defines));
    args.extend(input.flags.iter().map(OsString::from));
    args
}

/// clang's `-fmodule-file=<module>=<its BMI>`.
fn module_file_arg(input: &CxxPlanInput, module: &str) -> OsString {
    let mut f = OsString::from(format!("-fmodule-file={module}="));
    f.push(bmi(input, module));
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cxx_standard_is_checked_against_the_known_ones_and_modules() {
        let m = Path::new("Cargo.toml");
        for ok in ["c++20", "gnu++23", "c++2c", "c++17"] {
            assert!(check_cxx_std(ok, None, m).is_ok(), "{ok}");
        }
        let e = check_cxx_std("c++20x", None, m).unwrap_err().to_string();
        assert!(e.contains("`c++20x` is not a C++ standard") && e.contains("package.metadata.mcpp.cxx.std"), "{e}");
        assert!(check_cxx_std("20", None, m).is_err());
        let e = check_cxx_std("c++17", Some("cpp/seam.cppm"), m).unwrap_err().to_string();
        assert!(e.contains("`c++17` has no modules, and `cpp/seam.cppm` declares or imports one"), "{e}");
    }

    #[test]
    fn module_lines_are_read() {
        let m = module_lines("module;\n#include \"k.h\"\nexport module app.seam;\nimport app.kernels;\nexport import other;\nimport <vector>;\n");
        assert_eq!(m.provides.as_deref(), Some("app.seam"));
        assert_eq!(m.requires, ["app.kernels", "other"]);
        assert!(m.module_unit);
        let m = module_lines("module app.seam;\n");
        assert_eq!((m.provides, m.requires, m.module_unit), (None, vec!["app.seam".to_string()], true));
        let m = module_lines("#include \"k.h\"\nimport app.kernels;\nint f() { return 0; }\n");
        assert!(!m.module_unit, "an importer is not a module unit");
    }
}
