//! The host toolchain as the `cc` crate chooses it: the C++ compiler (with its default
//! arguments and family), plus the archive format of the target. The CUDA rule passes the
//! compiler to nvcc as `-ccbin`; the host C++ lane ([`crate::rules::cxx`]) compiles with it; both
//! archive their objects in process ([`crate::engine::archive`]). Asking `cc` runs the compiler once (family detection), so the answer
//! is cached in the tool cache, keyed by the target, the profile and every environment
//! variable `cc` reads for them, so that a no-op build starts no process.

use crate::config::cargo_facts::CargoFacts;
use crate::config::env::Env;
use crate::error::{Error, ErrorKind, Result};
use crate::engine::layout::DeviceCache;
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
    /// A compiler wrapper named before it (`CXX="ccache g++"`), absolute: the host C++ lane
    /// runs the wrapper with the compiler as its first argument; nvcc's `-ccbin` gets the
    /// compiler alone.
    pub wrapper: Option<PathBuf>,
    /// The arguments named with the compiler in its variable (`CXX="g++ -DX=1"` gives
    /// `["-DX=1"]`), in order; also the first entries of `cxx_args`.
    pub env_args: Vec<String>,
    /// The arguments the compiler gets on the host C++ lane: `env_args`, then what `cc` gives it
    /// for this target and profile (`-O`, `-fPIC`, `-g`, `-m64`, ..., `CXXFLAGS`).
    pub cxx_args: Vec<String>,
    /// Its family.
    pub family: Family,
    /// The archive format the target's linker reads.
    pub archive_format: crate::engine::archive::ArchiveFormat,
    /// The C++ runtime library to link (`stdc++`, `c++`), `None` for MSVC.
    pub cpp_stdlib: Option<String>,
    /// The variables the declared host toolchain's `env-script` set ([`declared`]): put on every
    /// process that runs the compiler (the host C++ lane, nvcc with `-ccbin`), so they are part
    /// of those actions' fingerprints. Empty without one.
    #[serde(default)]
    pub env: Vec<(String, std::ffi::OsString)>,
    /// Where the compiler was declared (`Cargo.toml:12:1 [package.metadata.mcpp.host-toolchain]
    /// layout`), for `cargo mcpp why tool c++`; `None`: the `cc` crate's choice.
    #[serde(default)]
    pub declared_at: Option<String>,
    /// The toolchain package the compiler comes from (`managed`): then [`HostToolchain::cxx`]
    /// is its program, its leading arguments are [`HostToolchain::env_args`], and its identity
    /// is the package's. `None` for a compiler of the user's own.
    #[serde(default)]
    pub managed: Option<Managed>,
}

/// The host C++ compiler of a toolchain package (`[package.metadata.mcpp.host-toolchain]
/// managed`): the program [`HostToolchain::cxx`] with leading arguments (`zig` `c++`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Managed {
    /// The toolchain package (`zig`).
    pub package: String,
    /// Its version.
    pub version: String,
    /// Why that version ([`crate::toolchain_package::Selected::why`]).
    pub why: String,
    /// The arguments that lead every command line of the compiler (`["c++", ...]`).
    pub leading: Vec<String>,
    /// The compiler's identity in fingerprints: the package, its version and its archives'
    /// sha256, so another install of another zig recompiles.
    pub identity: String,
}

/// The host toolchain the manifest declares (`[package.metadata.mcpp.host-toolchain]`), found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// The C++ compiler, absolute; `None` when the table declares only an `env-script` (the
    /// `cc` crate then chooses, in the script's environment).
    pub compiler: Option<PathBuf>,
    /// The variables its `env-script` set, sorted by name.
    pub env: Vec<(String, std::ffi::OsString)>,
    /// Where it is declared: `<manifest>:<line>:<col> [package.metadata.mcpp.host-toolchain] <key>`.
    pub at: String,
    /// The toolchain package the compiler comes from (`managed`).
    pub managed: Option<Managed>,
}

/// The table `[package.metadata.mcpp.host-toolchain]` of `manifest`, found: its `env-script`
/// captured ([`crate::tool::env_script`], cached), its compiler looked up where the table says
/// (`cxx` as a path; else each of `cxx` or `clang++`, `g++`, `c++` with `prefix`, in `layout`'s
/// `bin/`, else on the PATH of the build, the script's PATH first). `None` without the table.
///
/// # Errors
/// [`ErrorKind::ToolNotFound`] naming the key and every place looked: no such compiler; a
/// `layout` that is no directory; the script's refusals. For `managed`, the installed toolchain
/// package from `tools` ([`managed`]).
pub fn declared(manifest: &crate::config::manifest::Manifest, env: &Env, cache: &DeviceCache, tools: &crate::tool::ToolChoices) -> Result<Option<Declared>> {
    let Some(decl) = &manifest.mcpp.host_toolchain else { return Ok(None) };
    const TABLE: &str = "host-toolchain";
    let script = crate::tool::env_script::for_rule(TABLE, decl.env_script.as_deref(), decl.env_script_args.as_deref(), manifest, env, cache)?;
    let vars: Vec<(String, std::ffi::OsString)> = script.map(|s| s.vars).unwrap_or_default();
    // The key that names the compiler most directly, for messages and `why tool`.
    let key = if decl.managed.is_some() {
        "managed"
    } else if decl.cxx.is_some() {
        "cxx"
    } else if decl.layout.is_some() {
        "layout"
    } else if decl.prefix.is_some() {
        "prefix"
    } else {
        "env-script"
    };
    let at = format!("{} [package.metadata.mcpp.{TABLE}] {key}", manifest.at_col(&format!("{TABLE}.{key}")));
    let refuse = |headline: String| Error::new(ErrorKind::ToolNotFound, headline).file(manifest.at_col(&format!("{TABLE}.{key}"))).key(format!("package.metadata.mcpp.{TABLE}.{key}"));
    if let Some(name) = &decl.managed {
        let managed = managed(manifest, name, tools)?;
        return Ok(Some(Declared { compiler: Some(managed.0), env: vars, at, managed: Some(managed.1) }));
    }
    let layout_bin = match &decl.layout {
        Some(l) => {
            let root = if l.is_absolute() { l.clone() } else { manifest.dir().join(l) };
            if !root.is_dir() {
                return Err(refuse(format!("the host toolchain's layout `{}` is not a directory", crate::text::echo_path(&root))).help("name the toolchain's root (the directory holding `bin/`), relative to the package root or absolute"));
            }
            Some(root.join("bin"))
        }
        None => None,
    };
    if decl.cxx.is_none() && decl.layout.is_none() && decl.prefix.is_none() {
        return Ok(Some(Declared { compiler: None, env: vars, at, managed: None }));
    }
    if let (Some(_), Some(_)) = (&decl.prefix, &decl.cxx) {
        return Err(Error::new(ErrorKind::Manifest, "the host toolchain sets both `prefix` and `cxx`")
            .file(manifest.at_col(&format!("{TABLE}.prefix")))
            .key(format!("package.metadata.mcpp.{TABLE}.prefix"))
            .help("`cxx` names the compiler itself (write the prefixed name there), `prefix` chooses among clang++, g++ and c++: keep one"));
    }
    let prefix = decl.prefix.clone().unwrap_or_default();
    if let Some(cxx) = decl.cxx.as_deref().filter(|c| c.contains('/')) {
        let path = if Path::new(cxx).is_absolute() { PathBuf::from(cxx) } else { manifest.dir().join(cxx) };
        if !path.is_file() {
            return Err(refuse(format!("the host toolchain's compiler `{}` does not exist", crate::text::echo_path(&path))).help("name an installed C++ compiler, or a name to look up (`clang++-19`)"));
        }
        return Ok(Some(Declared { compiler: Some(std::path::absolute(&path).unwrap_or(path)), env: vars, at, managed: None }));
    }
    let names: Vec<String> = match &decl.cxx {
        Some(c) => vec![c.clone()],
        None => ["clang++", "g++", "c++"].iter().map(|n| format!("{prefix}{n}")).collect(),
    };
    // The script's PATH first: a toolkit's setup puts its compiler there.
    let search = with_script_path(env, &vars);
    let mut looked = Vec::new();
    for name in &names {
        let found = match &layout_bin {
            Some(bin) => {
                looked.push(bin.join(name).display().to_string());
                Some(bin.join(name)).filter(|p| p.is_file())
            }
            None => {
                looked.push(format!("{name} on PATH"));
                crate::tool::find_on_path(name, &search)
            }
        };
        if let Some(p) = found {
            return Ok(Some(Declared { compiler: Some(std::path::absolute(&p).unwrap_or(p)), env: vars, at, managed: None }));
        }
    }
    Err(refuse("the declared host toolchain has no C++ compiler".to_string())
        .detail(format!("looked for {}", looked.join(", ")))
        .help("install the toolchain there, or name the compiler with [package.metadata.mcpp.host-toolchain] cxx"))
}

/// The host C++ compiler of the toolchain package `name` (`managed`), as this build installed it
/// (`tools`, [`crate::tool::ToolChoices::toolchain_packages`]): its program, found in the
/// install's `bin` directories, and what leads its command line. A build never downloads.
///
/// # Errors
/// [`ErrorKind::Manifest`] at the key: the package is not installed (naming `cargo mcpp
/// fetch`), or its install is refused (not from `mcpp.lock`'s archives, damaged);
/// [`ErrorKind::ToolNotFound`] when the install has no such program.
pub fn managed(manifest: &crate::config::manifest::Manifest, name: &str, tools: &crate::tool::ToolChoices) -> Result<(PathBuf, Managed)> {
    use crate::toolchain_package::Availability;
    let (file, key) = (manifest.at_col("host-toolchain.managed"), "package.metadata.mcpp.host-toolchain.managed");
    let catalog = crate::toolchain_package::Catalog::builtin()?;
    let desc = catalog.get(name).map_err(|e| e.file(&file).key(key))?;
    let Some((program, leading)) = desc.host_cxx.split_first() else {
        return Err(Error::new(ErrorKind::Manifest, format!("the toolchain package `{name}` provides no host C++ compiler")).file(&file).key(key).help(format!("name one that does: {}", catalog.host_cxx_names().join(", "))));
    };
    let fetch = match tools.fetch_command.as_str() {
        "" => format!("cargo mcpp fetch --manifest-path {}", manifest.path.display()),
        c => c.to_string(),
    };
    match tools.toolchain_packages.get(name) {
        Some(Availability::Ready { installed, why, .. }) => {
            let Some(path) = installed.bin_dirs.iter().map(|d| d.join(program)).find(|p| p.is_file()) else {
                return Err(Error::new(ErrorKind::ToolNotFound, format!("the installed toolchain package {name} {} has no `{program}`", installed.version))
                    .file(&file)
                    .key(key)
                    .detail(format!("looked in {}", installed.bin_dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")))
                    .help(format!("run `{fetch}`: it checks the install and reinstalls a damaged one")));
            };
            let archives: Vec<String> = installed.archives.iter().map(|a| format!("{} sha256 {}", a.file, a.sha256)).collect();
            let identity = format!("{name} {} (toolchain package: {})", installed.version, archives.join(", "));
            Ok((path, Managed { package: name.to_string(), version: installed.version.clone(), why: why.clone(), leading: leading.to_vec(), identity }))
        }
        Some(Availability::Refused(e)) => Err(e.clone()),
        Some(Availability::Missing { version, .. }) => Err(Error::new(ErrorKind::Manifest, format!("the host C++ compiler is the toolchain package {name} {version}, which is not installed"))
            .file(&file)
            .key(key)
            .detail("build.rs never downloads; toolchain packages are installed by `cargo mcpp fetch` (and by `cargo mcpp build` before it starts cargo)")
            .help(format!("run `{fetch}`"))),
        None => Err(Error::new(ErrorKind::Manifest, format!("the host C++ compiler is the toolchain package {name}, which this build did not select"))
            .file(&file)
            .key(key)
            .help(format!("run `{fetch}`, then build again"))),
    }
}

/// The target as zig spells it (`x86_64-linux-gnu`: the architecture, the system and the ABI,
/// no vendor) for a Linux `target` of Rust (`x86_64-unknown-linux-gnu`); `None` for another
/// system. zig refuses the LLVM spelling the `cc` crate passes in `--target=`.
fn zig_target(target: &str) -> Option<String> {
    match target.split('-').collect::<Vec<_>>()[..] {
        [arch, _vendor, "linux", abi] => Some(format!("{arch}-linux-{abi}")),
        _ => None,
    }
}

/// The environment variables `cc` reads when choosing the C++ compiler for
/// `target` (cc-rs `Build::getenv_with_target_prefixes`), read here through [`Env`] so that
/// cargo reruns the build script when one changes.
fn cc_env_vars(target: &str) -> Vec<String> {
    let t = target.replace(['-', '.'], "_");
    let mut v = Vec::new();
    for base in ["CXX", "CXXFLAGS"] {
        v.push(format!("{base}_{target}"));
        v.push(format!("{base}_{t}"));
        v.push(format!("TARGET_{base}"));
        v.push(format!("HOST_{base}"));
        v.push(base.to_string());
    }
    v.extend(["CRATE_CC_NO_DEFAULTS".to_string(), "CC_FORCE_DISABLE".to_string(), "CC_KNOWN_WRAPPER_CUSTOM".to_string()]);
    v
}

/// The compiler wrappers the `cc` crate recognises as the first word of `CC`/`CXX`
/// (cc-rs 1.11 `Build::env_tool`); `CC_KNOWN_WRAPPER_CUSTOM` adds one.
pub const KNOWN_WRAPPERS: &[&str] = &["ccache", "distcc", "sccache", "icecc", "cachepot", "buildcache", "kache"];

/// A compiler named by a variable such as `CXX`: an optional wrapper, the program, and the
/// arguments given with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompilerCommand {
    /// The wrapper (`ccache` in `CXX="ccache g++"`), as written.
    pub wrapper: Option<PathBuf>,
    /// The compiler, as written (a bare name is looked up on PATH later).
    pub program: PathBuf,
    /// The arguments after it, in order.
    pub args: Vec<String>,
}

/// Split the value of `CXX` (or `CC`) the way the `cc` crate does (cc-rs 1.11 `env_tool`):
/// the value trimmed; when the whole value names an existing file (`is_file`), it is the
/// program, spaces and all; otherwise it splits on whitespace, a first word whose file stem is
/// a known wrapper ([`KNOWN_WRAPPERS`], or `custom_wrapper` from `CC_KNOWN_WRAPPER_CUSTOM`,
/// case-insensitive) followed by another word is the wrapper, the next word the compiler and
/// the rest its arguments. `None` for an empty value.
pub fn split_compiler_command(value: &str, custom_wrapper: Option<&str>, is_file: impl Fn(&Path) -> bool) -> Option<CompilerCommand> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    if is_file(Path::new(value)) {
        return Some(CompilerCommand { wrapper: None, program: PathBuf::from(value), args: Vec::new() });
    }
    let mut words = value.split_whitespace();
    let first = words.next()?;
    let stem = Path::new(first).file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let is_wrapper = KNOWN_WRAPPERS.iter().copied().chain(custom_wrapper).any(|w| w.eq_ignore_ascii_case(stem));
    let rest: Vec<&str> = words.collect();
    match rest.split_first() {
        Some((compiler, args)) if is_wrapper => Some(CompilerCommand {
            wrapper: Some(PathBuf::from(first)),
            program: PathBuf::from(compiler),
            args: args.iter().map(|a| a.to_string()).collect(),
        }),
        _ => Some(CompilerCommand { wrapper: None, program: PathBuf::from(first), args: rest.iter().map(|a| a.to_string()).collect() }),
    }
}

/// The variables naming the C++ compiler for `target`, in the `cc` crate's order
/// (cc-rs `target_envs`): `CXX_<target>`, `CXX_<target with _>`, `TARGET_CXX` when cross
/// compiling else `HOST_CXX`, then `CXX`. Returns the first set and non-empty one with its value.
fn named_compiler(env: &Env, target: &str, host: &str) -> Option<(String, String)> {
    let kind = if target != host { "TARGET" } else { "HOST" };
    let t = target.replace(['-', '.'], "_");
    [format!("CXX_{target}"), format!("CXX_{t}"), format!("{kind}_CXX"), "CXX".to_string()]
        .into_iter()
        .find_map(|v| env.get_nonempty(&v).map(|value| (v, value)))
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

/// The host toolchain for a build, from the device cache's `host-toolchain.json`
/// ([`DeviceCache::host_toolchain`]) when nothing it depends on changed, else asked of the `cc`
/// crate (which runs the compiler once to learn its family, in [`DeviceCache::cc_probe_dir`]).
///
/// # Errors
/// [`ErrorKind::ToolNotFound`] when `cc` finds no C++ compiler.
pub fn toolchain(manifest: &crate::config::manifest::Manifest, env: &Env, facts: &CargoFacts, cache: &DeviceCache, tools: &crate::tool::ToolChoices) -> Result<HostToolchain> {
    let declared = declared(manifest, env, cache, tools)?;
    let (target, host) = (&facts.target, &facts.host);
    let mut key = format!("{target}|{host}|{}|{}", facts.opt_level.as_str(), facts.debug);
    if let Some(d) = &declared {
        key.push_str(&format!("|declared={:?}|{:?}|{:?}", d.compiler, d.env, d.managed));
    }
    for var in cc_env_vars(target) {
        key.push_str(&format!("|{var}={}", env.get(&var).unwrap_or_default()));
    }
    let cache_file = cache.host_toolchain();
    if let Some(c) = std::fs::read(&cache_file).ok().and_then(|b| serde_json::from_slice::<Cached>(&b).ok()) {
        if c.key == key && c.stamp == stamp(&c.toolchain.cxx) {
            return Ok(c.toolchain);
        }
    }
    let probe_dir = cache.cc_probe_dir();
    std::fs::create_dir_all(&probe_dir).map_err(|e| Error::io("cannot create", &probe_dir, e))?;
    let mut b = cc::Build::new();
    // cc reads CXX, CXXFLAGS, CRATE_CC_NO_DEFAULTS, ... itself: it gets this build's view
    // (`Build::env("CXXFLAGS", ..)` included), not the process environment, so what the key
    // above records is what cc used. (`set_envs_snapshot` is cc 1.11's; Cargo.toml requires it.)
    let mut snapshot = env.snapshot();
    if let Some(d) = &declared {
        snapshot.retain(|(k, _)| !d.env.iter().any(|(v, _)| std::ffi::OsStr::new(v) == k));
        snapshot.extend(d.env.iter().map(|(k, v)| (k.into(), v.clone())));
    }
    b.set_envs_snapshot(snapshot);
    b.cpp(true)
        .target(target)
        .host(host)
        .opt_level_str(facts.opt_level.as_str())
        .debug(facts.debug)
        .out_dir(&probe_dir)
        .cargo_metadata(false)
        .cargo_warnings(false);
    // A compiler named in this build's [`Env`] view (e.g. `Build::env("CXX", ...)`) is split
    // here as cc splits it (wrapper, program, arguments) and its program handed to cc
    // explicitly, so both agree; its arguments come first on the lane.
    // A bare name is looked up on the PATH the compiler was chosen with: the declared
    // toolchain's script's, when it set one.
    let search = with_script_path(env, declared.as_ref().map_or(&[][..], |d| &d.env));
    // A declared compiler wins over `CXX`: the manifest's choice is the build's.
    let named = if declared.as_ref().is_some_and(|d| d.compiler.is_some()) { None } else { named_compiler(env, target, host) };
    let named = named.and_then(|(var, value)| {
        let custom = env.get_nonempty("CC_KNOWN_WRAPPER_CUSTOM");
        split_compiler_command(&value, custom.as_deref(), |p| p.is_file()).map(|c| (var, value, c))
    });
    if let Some((var, value, c)) = &named {
        for (what, p) in c.wrapper.iter().map(|w| ("compiler wrapper", w)).chain([("C++ compiler", &c.program)]) {
            let found = absolute_program(p, &search);
            if !found.is_file() {
                return Err(Error::new(ErrorKind::ToolNotFound, format!("{var}=`{value}` names the {what} `{}`, which is not found", p.display()))
                    .detail(format!("looked for `{}`", found.display()))
                    .detail("the value is read as the cc crate reads it: an optional wrapper (ccache, sccache, distcc, ...), the compiler, then its arguments, split on whitespace")
                    .help(format!("set {var} to an installed compiler (e.g. {var}=\"g++ -DNAME=1\" or {var}=/usr/bin/clang++-19), or unset it for the cc crate's default")));
            }
        }
        b.compiler(absolute_program(&c.program, &search));
    }
    if let Some(compiler) = declared.as_ref().and_then(|d| d.compiler.as_ref()) {
        b.compiler(compiler);
    }
    let tool = b.try_get_compiler().map_err(|e| {
        Error::new(ErrorKind::ToolNotFound, "the cc crate found no C++ compiler for the host code")
            .detail(e.to_string())
            .help("install a C++ compiler (g++ or clang++), or name one with CXX=/path/to/c++")
    })?;
    let managed = declared.as_ref().and_then(|d| d.managed.clone());
    // A toolchain package's compiler is clang-based (zig c++). cc learns a family by running the
    // compiler with `-E` and no leading argument, which zig refuses; cc then guesses by the name.
    let family = if managed.is_some() {
        Family::Clang
    } else if tool.is_like_msvc() {
        Family::Msvc
    } else if tool.is_like_clang() {
        Family::Clang
    } else {
        Family::Gnu
    };
    // cc names a cross compiler by its bare name (`x86_64-w64-mingw32-g++`) whether or not it
    // is installed: one not on PATH is refused here, named as searched, not made absolute
    // against the working directory (a path nobody chose). (The host's own compiler missing is
    // refused later, by the lane that runs it, after the device tools' refusals.)
    if target != host && tool.path().components().count() == 1 && crate::tool::find_on_path(&tool.path().to_string_lossy(), env).is_none() {
        let upper = target.replace(['-', '.'], "_");
        return Err(Error::new(ErrorKind::ToolNotFound, format!("the C++ compiler for the target {target}, `{}`, is not on PATH", tool.path().display()))
            .detail(format!("the cc crate names it for this target; it was looked for in every PATH directory: {}", env.get("PATH").unwrap_or_default()))
            .help(format!("install the cross compiler for {target}{}, or name one with CXX_{upper}=/path/to/c++ (or CXX)", if target.contains("windows-gnu") { " (Debian: g++-mingw-w64-x86-64)" } else { "" })));
    }
    let cxx = absolute_program(tool.path(), &search);
    let cpp_stdlib = match family {
        Family::Msvc => None,
        _ if target.contains("apple") || target.contains("freebsd") || target.contains("openbsd") => Some("c++".to_string()),
        _ => Some("stdc++".to_string()),
    };
    let mut cc_args: Vec<String> = tool.args().iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let env_args: Vec<String> = match &managed {
        Some(m) => {
            // zig takes `-target arch-os-abi`, not the LLVM triple cc passes: the target is
            // spelled its way (which also keeps zig off the build machine's own CPU features).
            let Some(zig) = zig_target(target) else {
                return Err(Error::new(ErrorKind::ToolNotFound, format!("the managed host toolchain {} compiles for Linux targets; {target} is not one", m.package))
                    .file(manifest.at_col("host-toolchain.managed"))
                    .key("package.metadata.mcpp.host-toolchain.managed")
                    .help("for this target, name a compiler of your own: [package.metadata.mcpp.host-toolchain] cxx or layout"));
            };
            cc_args.retain(|a| !a.starts_with("--target="));
            cc_args.splice(0..0, ["-target".to_string(), zig]);
            m.leading.clone()
        }
        None => named.as_ref().map(|(_, _, c)| c.args.clone()).unwrap_or_default(),
    };
    let wrapper = named.as_ref().and_then(|(_, _, c)| c.wrapper.as_ref()).map(|w| absolute_program(w, &search));
    let toolchain = HostToolchain {
        cxx_args: env_args.iter().cloned().chain(cc_args).collect(),
        env_args,
        wrapper,
        cxx,
        family,
        archive_format: crate::engine::archive::ArchiveFormat::for_target(target),
        cpp_stdlib,
        env: declared.as_ref().map(|d| d.env.clone()).unwrap_or_default(),
        declared_at: declared.as_ref().filter(|d| d.compiler.is_some()).map(|d| d.at.clone()),
        managed,
    };
    let cached = Cached { key, stamp: stamp(&toolchain.cxx), toolchain: toolchain.clone() };
    if let Ok(json) = serde_json::to_vec_pretty(&cached) {
        crate::engine::fingerprint::write_if_changed(&cache_file, &json)?;
    }
    Ok(toolchain)
}

/// The compiler wrapper as a tool (`ccache --version` is its identity).
pub const WRAPPER: crate::tool::ToolSpec =
    crate::tool::ToolSpec { name: "c++ wrapper", programs: &["ccache"], env_vars: &[], version_args: &["--version"], install_hint: "install the wrapper CXX names, or drop it from CXX", toolchain_package: None, toolkit: None };

/// The program the host C++ lane runs for `compiler` (the resolved [`HostToolchain::cxx`]):
/// the compiler itself, or, when `CXX` names a wrapper, the wrapper, whose identity then
/// carries the compiler's path and version too (so a new compiler behind the same wrapper
/// recompiles). The lane passes [`HostToolchain::cxx`] as the wrapper's first argument.
///
/// # Errors
/// [`ErrorKind::ToolNotFound`] when the wrapper does not run.
pub fn lane_tool(host: &HostToolchain, compiler: crate::tool::Tool, env: &Env, cache: &DeviceCache) -> Result<crate::tool::Tool> {
    let Some(w) = &host.wrapper else { return Ok(compiler) };
    let source = crate::tool::ToolSource::Derived("the compiler wrapper named in CXX".into());
    let wrapper = crate::tool::resolve_at(&WRAPPER, w, source, "the cc crate", env, cache)?;
    Ok(crate::tool::Tool {
        version: format!("{}\nwrapping {}: {}", wrapper.version, compiler.path.display(), compiler.version),
        path: wrapper.path,
        env: wrapper.env,
        ..compiler
    })
}

/// `env` with the `PATH` of a script's variables `vars`, when they set one.
fn with_script_path(env: &Env, vars: &[(String, std::ffi::OsString)]) -> Env {
    let mut search = env.clone();
    if let Some((_, path)) = vars.iter().find(|(k, _)| k == "PATH") {
        search.set("PATH", path.clone());
    }
    search
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

/// Whether `name` is a C-like identifier (`[A-Za-z_][A-Za-z0-9_]*`): a macro or function name.
pub fn is_identifier(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The refusal of a define in `[package.metadata.mcpp.<rule>] defines` whose name is no
/// identifier (`-DNAME=value` of every lane; on nvcc the name also reaches a shell), or
/// `None`: naming the key's `file:line:col`, the key (the name escaped) and the fix.
pub fn define_name_refusal(manifest: &crate::config::manifest::Manifest, rule: &str, name: &str) -> Option<Error> {
    if is_identifier(name) {
        return None;
    }
    Some(
        Error::new(ErrorKind::Manifest, format!("`{}` is not a preprocessor macro name", crate::text::echo(name)))
            .file(manifest.at_col(&format!("{rule}.defines.{name}")))
            .key(format!("{}.{rule}.defines.{}", crate::config::manifest::MCPP_TABLE, crate::text::echo(name)))
            .help("a define's name is an identifier ([A-Za-z_][A-Za-z0-9_]*); its value goes on the right: NAME = \"value\""),
    )
}

/// Resolve manifest include directories against the package root, refusing a missing one or a
/// relative one that resolves outside the package (naming the key `<table>.includes[i]` and its
/// `file:line:col`; [`crate::sources::walk::package_dir`]).
///
/// # Errors
/// [`ErrorKind::Manifest`]: every directory that does not exist or leaves the package, at once.
pub fn resolve_includes(manifest: &crate::config::manifest::Manifest, table: &str, includes: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for (i, inc) in includes.iter().enumerate() {
        match include_dir(manifest, table, i, inc) {
            Ok(p) => out.push(p),
            Err(e) => problems.push(e),
        }
    }
    Error::all(problems)?;
    // A dependency's exported directories ([`crate::plan::exports`]), searched last.
    for dir in &manifest.mcpp.dependency_includes {
        if !out.contains(dir) {
            out.push(dir.clone());
        }
    }
    Ok(out)
}

/// The options of the compilers here that add an include (or module search) directory, with the
/// directory in the next argument or joined (`-Idir`, `--include-path=dir`): gcc and clang
/// (`-I`, `-isystem`, `-iquote`, `-idirafter`, `--include-directory`), nvcc (`--include-path`,
/// `--system-include`), glslang and slangc (`-I`), and the `/I` of MSVC-style drivers.
const INCLUDE_FLAGS: &[&str] = &["--include-directory", "--include-path", "--system-include", "-idirafter", "-isystem", "-iquote", "-I", "/I"];

/// The include directories written in `flags`: (index of the argument holding the directory,
/// the directory as written), for each spelling of [`INCLUDE_FLAGS`]. What
/// [`flag_include_problems`] holds to the rule of `includes`.
pub(crate) fn flag_include_dirs(flags: &[String]) -> Vec<(usize, PathBuf)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < flags.len() {
        let flag = flags[i].as_str();
        if INCLUDE_FLAGS.contains(&flag) {
            if let Some(dir) = flags.get(i + 1) {
                out.push((i + 1, PathBuf::from(dir)));
            }
            i += 2;
            continue;
        }
        for opt in INCLUDE_FLAGS {
            if let Some(rest) = flag.strip_prefix(opt) {
                let dir = if opt.starts_with("--") { rest.strip_prefix('=') } else { Some(rest) };
                if let Some(dir) = dir {
                    out.push((i, PathBuf::from(dir)));
                }
                break;
            }
        }
        i += 1;
    }
    out
}

/// Every include directory written in the `flags` of `table` (`spirv`, `cxx`: a table under
/// `package.metadata.mcpp`) that [`crate::sources::walk::package_dir`] refuses (missing, or a relative one
/// leaving the package), each naming `<table>.flags[i]` and its `file:line:col`: the containment
/// rule of `includes`, which `-I../x` in `flags` would otherwise bypass.
pub fn flag_include_problems(manifest: &crate::config::manifest::Manifest, table: &str, flags: &[String]) -> Vec<Error> {
    let mut out = Vec::new();
    for (i, dir) in flag_include_dirs(flags) {
        if dir.as_os_str().is_empty() || dir.to_string_lossy().contains('\0') {
            continue;
        }
        let key = format!("{}.{table}.flags[{i}]", crate::config::manifest::MCPP_TABLE);
        if let Err(e) = crate::sources::walk::package_dir(manifest.dir(), Path::new(&manifest.at_col(&format!("{table}.flags[{i}]"))), &key, &dir) {
            out.push(e);
        }
    }
    out
}

/// Every problem of the include directories of `table` (`package.metadata.mcpp.spirv`), as
/// [`resolve_includes`] refuses them: what [`crate::pipeline::validate`] reports before anything
/// runs. An entry with a NUL character is left to its own refusal
/// ([`crate::rules::options::CommonOptions::problems`]).
pub fn include_problems(manifest: &crate::config::manifest::Manifest, table: &str, includes: &[PathBuf]) -> Vec<Error> {
    includes.iter().enumerate().filter(|(_, p)| !p.as_os_str().to_string_lossy().contains('\0')).filter_map(|(i, inc)| include_dir(manifest, table, i, inc).err()).collect()
}

/// The include directory `inc`, entry `i` of `<table>.includes`, resolved and checked
/// ([`crate::sources::walk::package_dir`]), a refusal naming the entry's `file:line:col`.
fn include_dir(manifest: &crate::config::manifest::Manifest, table: &str, i: usize, inc: &Path) -> Result<PathBuf> {
    let key = format!("{table}.includes[{i}]");
    let in_mcpp = key.strip_prefix(&format!("{}.", crate::config::manifest::MCPP_TABLE)).unwrap_or(&key);
    crate::sources::walk::package_dir(manifest.dir(), Path::new(&manifest.at_col(in_mcpp)), &key, inc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(v: &str) -> Option<CompilerCommand> {
        split_compiler_command(v, None, |_| false)
    }

    #[test]
    fn a_compiler_variable_splits_as_the_cc_crate_splits_it() {
        let c = split("  g++ -DFROM_ENV=1  -O1 ").unwrap();
        assert_eq!((c.wrapper, c.program, c.args), (None, PathBuf::from("g++"), vec!["-DFROM_ENV=1".to_string(), "-O1".to_string()]));
        let c = split("clang++-19 -stdlib=libstdc++").unwrap();
        assert_eq!((c.program, c.args), (PathBuf::from("clang++-19"), vec!["-stdlib=libstdc++".to_string()]));
        let c = split("/usr/bin/ccache g++ -DX").unwrap();
        assert_eq!((c.wrapper, c.program, c.args), (Some(PathBuf::from("/usr/bin/ccache")), PathBuf::from("g++"), vec!["-DX".to_string()]));
        let c = split("SCCACHE clang++").unwrap();
        assert_eq!((c.wrapper, c.program), (Some(PathBuf::from("SCCACHE")), PathBuf::from("clang++")));
        // A wrapper alone is the program; a custom wrapper counts.
        assert_eq!(split("ccache").unwrap(), CompilerCommand { wrapper: None, program: PathBuf::from("ccache"), args: vec![] });
        let c = split_compiler_command("mywrap g++", Some("mywrap"), |_| false).unwrap();
        assert_eq!(c.wrapper, Some(PathBuf::from("mywrap")));
        // An existing file is the program, spaces and all.
        let c = split_compiler_command("/opt/my tools/g++", None, |p| p == Path::new("/opt/my tools/g++")).unwrap();
        assert_eq!((c.program, c.args), (PathBuf::from("/opt/my tools/g++"), vec![]));
        assert_eq!(split("   "), None);
    }
}
