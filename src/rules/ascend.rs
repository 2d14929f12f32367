//! Ascend C (`.asc`) to objects with bisheng from a CANN toolkit, archived into one static
//! library linked into the crate.
//!
//! The toolkit comes from the one resolver ([`crate::tool::resolve_toolkit`], the toolkit
//! declared as [`CANN`]): `ascend.toolkit`, the toolkit a named bisheng sits in
//! (`tools.bisheng`, `BISHENG`, `MCPP_BISHENG`, `MCPP_TOOL_BISHENG`), `ASCEND_HOME_PATH` (the
//! CANN root or its `<arch>-linux` directory, [`CANN`]); its
//! architecture root is `<root>/x86_64-linux` (or `aarch64-linux` on an aarch64 host) and the
//! compiler `<arch root>/ccec_compiler/bin/bisheng`. A missing toolkit, or one without bisheng,
//! is refused naming what was looked for and every way to name it.
//!
//! One action per (source, architecture of the `ascend` entry, `ascend8.5+{dav-c220,dav-m200}`),
//! in MIXED mode (never `--cce-aicore-only`: the object carries the device binary and the host
//! launcher): `bisheng -x asc --cce-aicore-arch=<arch> -fPIC -DTILING_KEY_VAR=0 -I<the toolkit's
//! include directories that exist> -I<includes> -D<defines> -MD -MF <d> <flags> -c <src> -o
//! <obj>`, `flags` last before the source so they win. The tool's environment
//! (`ASCEND_HOME_PATH=<arch root>`, `LD_LIBRARY_PATH=<arch root>/lib64`) is set on that process
//! only ([`crate::tool::Tool::env`]), never on cargo or another tool, and is part of the
//! action's fingerprint. Link, in upstream's order: `<arch root>/lib64` with `-Wl,-rpath-link`
//! and `-Wl,-rpath`, the driver stubs `<arch root>/devlib/linux/<arch>` with `-Wl,-rpath-link`,
//! then each of `ascendc_runtime`, `ascend_dump`, `runtime`, `mmpa`, `profapi`, `c_sec` that
//! exists there, then the C++ runtime. The project links `ascendcl` itself.
//!
//! No CANN toolkit installs on the development machines: this lane is argv-verified through
//! the recording shim in a fake CANN layout (`tests/integration/ascend.rs`), not compiled for real.

use super::options::{self, CommonOptions, RuleOptions};
use super::{DeviceSource, Rule, RuleContext, RulePlan};
use crate::config::accel::{AccelEntry, Backend};
use crate::error::{Error, ErrorKind, Result};
use crate::engine::graph::{Action, Expect, External, Role};
use crate::rules::link::{self, LinkDirective};
use crate::config::manifest::{KeyDoc, Manifest};
use crate::tool::{RootChoice, ToolSpec, ToolkitSpec};
use serde::Deserialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The options table.
const TABLE: &str = "package.metadata.mcpp.ascend";
/// The lane name: `<variant>/ascend/`, and the archive `mcpp_ascend_<package>`.
const LANE: &str = "ascend";

/// `[package.metadata.mcpp.ascend]`; every key has a default.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", expecting = "a table of Ascend C rule keys ([package.metadata.mcpp.ascend])")]
pub struct AscendOptions {
    /// The CANN toolkit root (holding `<arch>-linux/ccec_compiler/bin/bisheng`), relative to the
    /// package root or absolute.
    pub toolkit: Option<PathBuf>,
    /// `includes` (after the toolkit's), `defines`, `flags` (last before `-c <src> -o <obj>`).
    /// `optimize` is refused: bisheng's optimisation is the flags'.
    /// A script that sets up the toolkit, sourced once; what it sets goes on this rule's tools
    /// ([`crate::tool::env_script`]).
    pub env_script: Option<PathBuf>,
    /// The arguments `env_script` is sourced with.
    pub env_script_args: Option<Vec<String>>,
    #[serde(skip)]
    pub common: CommonOptions,
}

impl RuleOptions for AscendOptions {
    const KEYS: &'static [KeyDoc] = OPTION_KEYS;
    fn common(&self) -> &CommonOptions {
        &self.common
    }
    fn common_mut(&mut self) -> &mut CommonOptions {
        &mut self.common
    }
    /// `optimize`: upstream's command has no optimisation flag; a `-O` belongs in `flags`.
    fn problems(&self, manifest: &Manifest, _rule: &str) -> Vec<Error> {
        match self.common.optimize {
            Some(_) => vec![Error::new(ErrorKind::Manifest, "`optimize` is not an Ascend C option: bisheng's command has no optimisation level of the rule's")
                .file(manifest.at_col("ascend.optimize"))
                .key(format!("{TABLE}.optimize"))
                .help("put the level in `flags` (e.g. flags = [\"-O2\"]), or leave `optimize` out")],
            None => Vec::new(),
        }
    }
}

/// The keys of [`AscendOptions`], documented (the guide's generated manifest reference).
const OPTION_KEYS: &[KeyDoc] = &[
    KeyDoc { key: "toolkit", default: "discovered", meaning: "the CANN toolkit root (holding `x86_64-linux/ccec_compiler/bin/bisheng`, `aarch64-linux/...` on an aarch64 host). Without it: the root a named bisheng sits in (`tools.bisheng`, `BISHENG`, `MCPP_BISHENG`, `MCPP_TOOL_BISHENG`), then `ASCEND_HOME_PATH`, then bisheng on PATH (warned)" },
    KeyDoc { key: "includes", default: "`[]`", meaning: "include directories (`-I`) after the toolkit's, relative to the package root (inside it) or absolute" },
    CommonOptions::DEFINES_DOC,
    KeyDoc { key: "optimize", default: "refused", meaning: "not an Ascend C option (upstream's command has no level): write `-O2` in `flags`" },
    crate::tool::env_script::ENV_SCRIPT_DOC,
    crate::tool::env_script::ENV_SCRIPT_ARGS_DOC,
    KeyDoc { key: "flags", default: "`[]`", meaning: "extra arguments, last before `-c <src> -o <obj>` (so they win), passed unexamined" },
];

/// The architecture directory of the CANN toolkit for this host: `x86_64-linux` or
/// `aarch64-linux`.
#[cfg(target_arch = "aarch64")]
pub const ARCH_DIR: &str = "aarch64-linux";
/// The architecture directory of the CANN toolkit for this host: `x86_64-linux` or
/// `aarch64-linux`.
#[cfg(not(target_arch = "aarch64"))]
pub const ARCH_DIR: &str = "x86_64-linux";

/// The CANN toolkit: `ascend.toolkit`, then `ASCEND_HOME_PATH` (the CANN root, or its
/// `<arch>-linux` directory, which is what bisheng's own processes get); bisheng at
/// `<root>/<arch>-linux/ccec_compiler/bin/bisheng`.
/// A root holds its bisheng: a named bisheng whose root lacks one (a copy elsewhere) is not
/// taken for a toolkit, and a root variable naming a directory without one is refused.
pub const CANN: ToolkitSpec = ToolkitSpec {
    root_key: Some("[package.metadata.mcpp.ascend] toolkit"),
    root_vars: &["ASCEND_HOME_PATH"],
    marker_files: &[BISHENG_IN_ROOT],
    var_may_name_subdir: Some(ARCH_DIR),
    tool_env: Some(bisheng_env),
    ..ToolkitSpec::new("CANN toolkit", BISHENG_IN_ROOT)
};

/// bisheng's environment for the CANN root `root`: `ASCEND_HOME_PATH=<root>/<arch>-linux`
/// and `LD_LIBRARY_PATH=<root>/<arch>-linux/lib64`, on its version probe and its compiles
/// (never on cargo or another tool).
fn bisheng_env(root: &Path) -> Vec<(String, OsString)> {
    let arch_root = root.join(ARCH_DIR);
    vec![("ASCEND_HOME_PATH".into(), arch_root.clone().into()), ("LD_LIBRARY_PATH".into(), arch_root.join("lib64").into())]
}

/// bisheng's path inside the CANN root for this host's architecture.
#[cfg(target_arch = "aarch64")]
pub const BISHENG_IN_ROOT: &str = "aarch64-linux/ccec_compiler/bin/bisheng";
/// bisheng's path inside the CANN root for this host's architecture.
#[cfg(not(target_arch = "aarch64"))]
pub const BISHENG_IN_ROOT: &str = "x86_64-linux/ccec_compiler/bin/bisheng";

/// bisheng: `tools.bisheng`, `BISHENG`, `MCPP_BISHENG`, `MCPP_TOOL_BISHENG`, the CANN root
/// ([`CANN`]), then PATH.
pub const BISHENG: ToolSpec = ToolSpec {
    name: "bisheng",
    programs: &["bisheng"],
    env_vars: &["BISHENG", "MCPP_BISHENG"],
    version_args: &["--version"],
    install_hint: "the CANN toolkit (Ascend-cann-toolkit_<version>_linux-<arch>.run, then `source <install>/set_env.sh`, which sets ASCEND_HOME_PATH)",
    toolchain_package: None,
    toolkit: Some(&CANN),
};

/// The Da Vinci architectures bisheng's `--cce-aicore-arch` takes.
pub const KNOWN_ARCHS: &[&str] = &["dav-c100", "dav-m200", "dav-m200-vec", "dav-m201", "dav-c220", "dav-c220-vec", "dav-c220-cube", "dav-m300", "dav-c310", "dav-t210"];

/// The include directories of the architecture root, in upstream's order (each only if present).
pub const TOOLKIT_INCLUDES: &[&str] = &[
    "asc/impl/adv_api",
    "asc/impl/basic_api",
    "asc/impl/utils",
    "asc/include",
    "asc/include/adv_api",
    "asc/include/basic_api",
    "asc/include/aicpu_api",
    "asc/include/utils",
    "tikcpp/tikcfw",
    "tikcpp/tikcfw/interface",
    "tikcpp/tikcfw/impl",
];

/// The runtime libraries linked when present in `lib64`, in upstream's order.
pub const RUNTIME_LIBS: &[&str] = &["ascendc_runtime", "ascend_dump", "runtime", "mmpa", "profapi", "c_sec"];

/// The Ascend C rule.
pub struct AscendRule;

impl Rule for AscendRule {
    fn name(&self) -> &'static str {
        "ascend"
    }
    fn backend(&self) -> Backend {
        Backend::Ascend
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["asc", "cce"]
    }
    fn tools(&self) -> &'static [ToolSpec] {
        &[BISHENG]
    }
    fn option_keys(&self) -> &'static [KeyDoc] {
        OPTION_KEYS
    }
    fn read_options(&self, manifest: &Manifest) -> (options::RuleOptionsBox, Vec<Error>) {
        options::read_boxed::<AscendOptions>(manifest, self.name())
    }
    fn check_entry(&self, entry: &AccelEntry) -> Result<()> {
        // As HIP's `hip5`: the version is checked against the toolkit's major.minor, and a
        // major alone would match any 8.x.
        if let Some(v) = entry.version.as_deref().filter(|v| !v.contains('.')) {
            return Err(Error::new(ErrorKind::Accel, format!("`{entry}` names CANN {v} without a minor version"))
                .detail("An Ascend version is major.minor: the entry is checked against the toolkit's <arch>-linux/ascend_toolkit_install.info, and 8 alone would match any 8.x.")
                .help(format!("write the minor too (ascend{v}.0+{{...}}, the toolkit's version), or no version (ascend+{{...}})")));
        }
        if entry.archs.is_empty() {
            return Err(Error::new(ErrorKind::Accel, "the ascend entry names no architecture; bisheng compiles for one `--cce-aicore-arch` each")
                .help("name them: `ascend8.5+{dav-c220}`"));
        }
        match entry.archs.iter().find(|a| !KNOWN_ARCHS.contains(&a.as_str())) {
            Some(a) => Err(Error::new(ErrorKind::Accel, format!("`{}` is no Ascend architecture this rule knows", crate::text::echo(a)))
                .detail(format!("known: {}", KNOWN_ARCHS.join(", ")))
                .help("write one of those in ascend+{...}")),
            None => Ok(()),
        }
    }

    fn plan(&self, ctx: &RuleContext, sources: &[&DeviceSource]) -> Result<RulePlan> {
        let opts: &AscendOptions = ctx.options()?;
        let mut plan = RulePlan::default();
        let root = root_choice(opts, ctx.manifest);
        let script = crate::tool::env_script::for_rule(self.name(), opts.env_script.as_deref(), opts.env_script_args.as_deref(), ctx.manifest, ctx.env, ctx.cache)?;
        let resolved = crate::tool::resolve_toolkit_with(&BISHENG, ctx.tools, root.as_ref(), script.as_ref(), ctx.env, ctx.cache)?;
        plan.watch.extend(script.map(|s| s.script));
        plan.warnings.extend(resolved.warning);
        let Some(kit) = resolved.toolkit else {
            return Err(Error::new(ErrorKind::ToolNotFound, format!("bisheng `{}` is not inside a CANN toolkit, and nothing names one", crate::text::echo_path(&resolved.tool.path)))
                .detail(format!("looked for {}", CANN.program_in_root))
                .help(format!("set {TABLE}.toolkit or ASCEND_HOME_PATH to the toolkit root")));
        };
        let arch_root = kit.root.join(ARCH_DIR);
        check_version(ctx, &arch_root)?;
        // The tool's environment ([`bisheng_env`], set by the resolver, the version probe
        // included): on bisheng's processes only, and in their fingerprints.
        let tool = resolved.tool.clone();
        let host = crate::rules::host::toolchain(ctx.manifest, ctx.env, ctx.facts, ctx.cache, ctx.tools)?;
        let kit_includes: Vec<PathBuf> = TOOLKIT_INCLUDES.iter().map(|d| arch_root.join(d)).filter(|d| d.is_dir()).collect();
        let includes = opts.common.resolve_includes(ctx.manifest, LANE)?;
        let mut all_includes = kit_includes.clone();
        all_includes.extend(includes.iter().cloned());
        let mut objects = Vec::new();
        for s in sources {
            for arch in &ctx.accel.archs {
                let obj = link::object_path(ctx.variant, LANE, &format!("{}.{arch}", s.rel));
                let depfile = obj.with_extension("d");
                // The island's device half gets the boundary header (its marker), forced.
                let island_half = ctx.island.filter(|i| i.device_sources.contains(&s.path)).map(|i| i.header.as_path());
                let mut inputs = vec![s.path.clone()];
                inputs.extend(island_half.map(Path::to_path_buf));
                plan.actions.push(Action::external(External {
                    id: format!("ascend:{}:{arch}", s.rel),
                    description: format!("bisheng -x {} {} ({arch})", language(&s.path), s.rel),
                    role: Role::Object,
                    tool: tool.clone(),
                    args: argv(arch, &all_includes, &opts.common, island_half, &s.path, &obj, &depfile),
                    cwd: ctx.manifest.dir().to_path_buf(),
                    inputs,
                    outputs: vec![obj.clone()],
                })
                    .with_depfile(depfile, all_includes.clone())
                    .with_expect(Expect::object(host.archive_format)));
                objects.push(obj);
            }
        }
        let (action, archive_link) = link::archive(ctx.variant, LANE, &ctx.manifest.package_name, host.archive_format, &objects, Vec::new(), ctx.manifest.dir());
        plan.actions.push(action);
        plan.link.extend(archive_link);
        plan.link.extend(runtime_link(&arch_root));
        plan.link.extend(link::cpp_runtime(&host));
        plan.tools.push(resolved.tool);
        Ok(plan)
    }
}

/// `ascend.toolkit` as the resolver's explicit root.
fn root_choice(opts: &AscendOptions, manifest: &Manifest) -> Option<RootChoice> {
    let t = opts.toolkit.as_ref()?;
    let root = if t.is_absolute() { t.clone() } else { manifest.dir().join(t) };
    Some(RootChoice { root, manifest: manifest.path.clone(), line: manifest.line("ascend.toolkit"), key: format!("{TABLE}.toolkit") })
}

/// The toolkit's version, from `<arch root>/ascend_toolkit_install.info` (`version=8.5.0`);
/// `None` when the file or the line is missing.
pub fn toolkit_version(arch_root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(arch_root.join("ascend_toolkit_install.info")).ok()?;
    text.lines().find_map(|l| l.trim().strip_prefix("version=")).map(|v| v.trim().to_string())
}

/// A versioned `ascend` entry (`ascend8.5`) must name the toolkit's version (each of its
/// numbers equal, in order); a toolkit that states none is not checked.
fn check_version(ctx: &RuleContext, arch_root: &Path) -> Result<()> {
    let (Some(want), Some(have)) = (ctx.accel.version.as_deref(), toolkit_version(arch_root)) else { return Ok(()) };
    let h: Vec<&str> = have.split('.').collect();
    let w: Vec<&str> = want.split('.').collect();
    if w.len() <= h.len() && w.iter().zip(&h).all(|(a, b)| a == b) {
        return Ok(());
    }
    Err(ctx.accel_refusal(
        Error::new(ErrorKind::Accel, format!("the accelerator names ascend{want}, and the CANN toolkit at {} is version {have}", crate::text::echo_path(arch_root)))
            .detail(format!("read from {}", crate::text::echo_path(&arch_root.join("ascend_toolkit_install.info"))))
            .help("write the toolkit's version in the ascend entry, or point cargo-mcpp at that toolkit: [package.metadata.mcpp.ascend] toolkit or ASCEND_HOME_PATH"),
    ))
}

/// bisheng's language of a source (`-x`): `cce` for a `.cce` (CCE C), else `asc` (Ascend C).
fn language(src: &Path) -> &'static str {
    if src.extension().is_some_and(|e| e == "cce") {
        "cce"
    } else {
        "asc"
    }
}

/// One (source, architecture)'s arguments: `-x asc|cce --cce-aicore-arch=<arch> -fPIC
/// -DTILING_KEY_VAR=0 [-include <island header>] -I<toolkit and package includes> -D<defines>
/// -MD -MF <d> <flags> -c <src> -o <obj>`.
fn argv(arch: &str, includes: &[PathBuf], common: &CommonOptions, force_include: Option<&Path>, src: &Path, obj: &Path, depfile: &Path) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec!["-x".into(), language(src).into(), format!("--cce-aicore-arch={arch}").into(), "-fPIC".into(), "-DTILING_KEY_VAR=0".into()];
    if let Some(h) = force_include {
        a.extend(crate::surface::island::emit::force_include_args(h, false));
    }
    for inc in includes {
        let mut s = OsString::from("-I");
        s.push(inc);
        a.push(s);
    }
    a.extend(common.define_args());
    a.extend(["-MD".into(), "-MF".into(), depfile.into()]);
    a.extend(common.flags.iter().map(OsString::from));
    a.extend(["-c".into(), src.into(), "-o".into(), obj.into()]);
    a
}

/// The toolkit's link directives, in upstream's order: `lib64` (search, `-rpath-link`,
/// `-rpath`), the driver stubs (search, `-rpath-link`) when present, then the runtime libraries
/// that exist (`.so` linked as `dylib`, else `.a` as `static`).
fn runtime_link(arch_root: &Path) -> Vec<LinkDirective> {
    let lib64 = arch_root.join("lib64");
    let mut l = vec![
        LinkDirective::Search(lib64.clone()),
        LinkDirective::Arg(format!("-Wl,-rpath-link,{}", lib64.display())),
        LinkDirective::Arg(format!("-Wl,-rpath,{}", lib64.display())),
    ];
    let stubs = arch_root.join("devlib/linux").join(ARCH_DIR.trim_end_matches("-linux"));
    if stubs.is_dir() {
        l.push(LinkDirective::Search(stubs.clone()));
        l.push(LinkDirective::Arg(format!("-Wl,-rpath-link,{}", stubs.display())));
    }
    for name in RUNTIME_LIBS {
        if lib64.join(format!("lib{name}.so")).is_file() {
            l.push(LinkDirective::Lib(format!("dylib={name}")));
        } else if lib64.join(format!("lib{name}.a")).is_file() {
            l.push(LinkDirective::Lib(format!("static={name}")));
        }
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_is_mixed_mode_argv_with_flags_last_before_the_source() {
        let common = CommonOptions { flags: vec!["-O2".into()], defines: [("N".to_string(), "4".to_string())].into(), ..Default::default() };
        let a = argv("dav-c220", &[PathBuf::from("/cann/x/asc/include"), PathBuf::from("/p/inc")], &common, None, Path::new("/p/k/add.asc"), Path::new("/o/add.o"), Path::new("/o/add.d"));
        let words: Vec<String> = a.iter().map(|s| s.to_string_lossy().into_owned()).collect();
        assert_eq!(
            words,
            ["-x", "asc", "--cce-aicore-arch=dav-c220", "-fPIC", "-DTILING_KEY_VAR=0", "-I/cann/x/asc/include", "-I/p/inc", "-DN=4", "-MD", "-MF", "/o/add.d", "-O2", "-c", "/p/k/add.asc", "-o", "/o/add.o"]
        );
        assert!(!words.iter().any(|w| w == "--cce-aicore-only"), "mixed mode");
    }

    #[test]
    fn the_tools_environment_enters_the_fingerprint() {
        let tool = |home: &str| crate::tool::Tool {
            name: "bisheng".into(),
            path: "/cann/x86_64-linux/ccec_compiler/bin/bisheng".into(),
            version: "bisheng 1".into(),
            source: crate::tool::ToolSource::Path,
            env: vec![("ASCEND_HOME_PATH".into(), home.into())],
            toolchain_package_root: None,
            launcher: None,
        };
        assert_ne!(tool("/cann/a").identity(), tool("/cann/b").identity());
    }

    #[test]
    fn link_directives_follow_upstreams_order_with_only_the_libraries_present() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        std::fs::create_dir_all(root.join("lib64")).unwrap();
        std::fs::create_dir_all(root.join("devlib/linux").join(ARCH_DIR.trim_end_matches("-linux"))).unwrap();
        for f in ["libruntime.so", "libascendc_runtime.a", "libc_sec.so"] {
            std::fs::write(root.join("lib64").join(f), "").unwrap();
        }
        let l = runtime_link(root);
        let libs: Vec<&LinkDirective> = l.iter().filter(|d| matches!(d, LinkDirective::Lib(_))).collect();
        assert_eq!(libs, [&LinkDirective::Lib("static=ascendc_runtime".into()), &LinkDirective::Lib("dylib=runtime".into()), &LinkDirective::Lib("dylib=c_sec".into())]);
        assert_eq!(l[1], LinkDirective::Arg(format!("-Wl,-rpath-link,{}", root.join("lib64").display())));
        assert!(matches!(&l[3], LinkDirective::Search(d) if d.ends_with(ARCH_DIR.trim_end_matches("-linux"))));
    }
}
