//! GLSL (`.comp`, `.vert`, `.frag`, ... ) to SPIR-V with glslangValidator or glslc, chosen by
//! declaration (`[package.metadata.mcpp.spirv] compiler`), never by what is installed.
//! Flag spellings are those of glslangValidator and glslc; the producer writes a bare `.spv`
//! and a depfile, and the surface generator does the rest.

use super::options::{self, CommonOptions, RuleOptions};
use super::{Rule, RuleContext, RulePlan};
use crate::config::accel::Backend;
use crate::error::{Error, ErrorKind, Result};
use crate::engine::facts;
use crate::engine::graph::{Action, External, Role};
use serde::Deserialize;
use super::DeviceSource;
use crate::tool::{self, ToolSpec};
use std::ffi::OsString;

/// Which GLSL compiler the SPIR-V rule drives; chosen by declaration, never by what is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpirvCompilerName {
    /// Khronos glslangValidator (default).
    #[default]
    Glslang,
    /// Google's glslc (shaderc).
    Glslc,
}

/// `[package.metadata.mcpp.spirv]`; every key has a default. Read once per build by [`Rule::read_options`] ([`options::read_all`]).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", expecting = "a table of SPIR-V rule keys ([package.metadata.mcpp.spirv])")]
pub struct SpirvOptions {
    /// `"glslang"` (default) or `"glslc"`.
    pub compiler: Option<SpirvCompilerName>,
    /// Override of the target environment (default: from the accelerator's Vulkan version,
    /// `vulkan1.0` for a bare `vulkan`).
    pub target_env: Option<String>,
    /// Whether each compiled module is checked with `spirv-val` (default: off; see
    /// [`SPIRV_VAL`]). On, every `.spv` gets a check action ([`Role::Check`], blocking).
    pub validate: Option<bool>,
    /// `includes` (`-I`), `defines` (`-DNAME=value`), `optimize` (default: on in release
    /// profiles, off in debug) and `flags` (appended last, passed unexamined).
    #[serde(skip)]
    pub common: CommonOptions,
}

impl RuleOptions for SpirvOptions {
    const KEYS: &'static [crate::config::manifest::KeyDoc] = OPTION_KEYS;
    fn common(&self) -> &CommonOptions {
        &self.common
    }
    fn common_mut(&mut self) -> &mut CommonOptions {
        &mut self.common
    }
}

/// The keys of [`SpirvOptions`], documented ([`Rule::option_keys`]).
const OPTION_KEYS: &[crate::config::manifest::KeyDoc] = &[
    crate::config::manifest::KeyDoc { key: "compiler", default: "`\"glslang\"`", meaning: "`\"glslang\"` (glslangValidator) or `\"glslc\"`: chosen by declaration, never by what is installed" },
    CommonOptions::INCLUDES_DOC,
    CommonOptions::DEFINES_DOC,
    crate::config::manifest::KeyDoc { key: "target-env", default: "from `accel`", meaning: "e.g. `\"vulkan1.3\"`; default `vulkan<version>` of the `vulkan` entry (1.0 to 1.4), `vulkan1.0` for a bare `vulkan`. Past `vulkan1.2` the compiler's `--help` is asked once (cached) and an environment it does not list is refused before compiling, with the ones it accepts: `vulkan1.4` needs glslang 15.1 or later (glslang 13.1.1, the default toolchain package, Debian's glslang 12 and shaderc 2023 stop at `vulkan1.3`)" },
    crate::config::manifest::KeyDoc { key: "validate", default: "`false`", meaning: "a boolean: when true, every compiled module is checked with `spirv-val` (under the same target environment) before it is embedded; an invalid module fails the build naming the shader and the validator's message. Off by default: the compilers this rule drives emit valid modules, and the check needs one more tool installed (`spirv-val`, from spirv-tools)" },
    crate::config::manifest::KeyDoc { key: "optimize", default: "`true` in release profiles", meaning: "a boolean: `-Os` (glslang) / `-O` (glslc) when true, `-O0` (glslc) when false" },
    crate::config::manifest::KeyDoc { key: "flags", default: "`[]`", meaning: "extra arguments, appended last, passed unexamined" },
];

/// The shader stages, by extension; both compilers take the same short stage names.
pub const STAGES: &[&str] = &["comp", "vert", "frag", "geom", "tesc", "tese", "mesh", "task", "rgen", "rint", "rahit", "rchit", "rmiss", "rcall"];

/// glslangValidator: `GLSLANG_VALIDATOR`, `MCPP_GLSLANG`, `MCPP_TOOL_GLSLANGVALIDATOR`, the
/// `glslang` toolchain package, then PATH.
pub const GLSLANG: ToolSpec = ToolSpec {
    name: "glslangValidator",
    programs: &["glslangValidator", "glslang"],
    env_vars: &["GLSLANG_VALIDATOR", "MCPP_GLSLANG"],
    version_args: &["--version"],
    install_hint: "apt install glslang-tools, or cargo mcpp fetch (the glslang toolchain package)",
    toolchain_package: Some("glslang"),
    toolkit: None,
};

/// glslc: `GLSLC`, `MCPP_GLSLC`, `MCPP_TOOL_GLSLC`, then PATH (no toolchain package ships glslc).
pub const GLSLC: ToolSpec = ToolSpec {
    name: "glslc",
    programs: &["glslc"],
    env_vars: &["GLSLC", "MCPP_GLSLC"],
    version_args: &["--version"],
    install_hint: "apt install glslc",
    toolchain_package: None,
    toolkit: None,
};

/// spirv-val, the SPIR-V validator of spirv-tools, run by the rule's check when
/// `[package.metadata.mcpp.spirv] validate = true`: `SPIRV_VAL`, `MCPP_SPIRV_VAL`,
/// `MCPP_TOOL_SPIRV_VAL`, then PATH (no toolchain package ships it).
pub const SPIRV_VAL: ToolSpec = ToolSpec {
    name: "spirv-val",
    programs: &["spirv-val"],
    env_vars: &["SPIRV_VAL", "MCPP_SPIRV_VAL"],
    version_args: &["--version"],
    install_hint: "apt install spirv-tools, or set validate = false in [package.metadata.mcpp.spirv]",
    toolchain_package: None,
    toolkit: None,
};

/// The glslang toolchain package's floor: `--depfile` and `--target-env vulkan1.3` need glslang 11.
pub const GLSLANG_FLOOR: &str = ">=11.0";

/// The SPIR-V rule.
pub struct SpirvRule;

/// The Vulkan versions whose target environment the GLSL compilers know (and whose SPIR-V
/// profile the Slang rule derives, [`crate::rules::slang::profile_for`]).
pub const KNOWN_VULKAN: &[&str] = &["1.0", "1.1", "1.2", "1.3", "1.4"];

/// The refusal of a `vulkan` entry's version that no Vulkan has ([`KNOWN_VULKAN`]), when nothing
/// overrides what it derives (no `spirv.target-env`, no `slang.profile`): known without any
/// compiler, so `cargo mcpp init --accel vulkan9.9` refuses it as the build would. Whether a
/// known version's environment is accepted (`vulkan1.4` needs glslang 15.1) asks the compiler,
/// at build time (`check_target_env`). `None` for a known version or a bare `vulkan`.
pub fn unknown_vulkan(version: Option<&str>) -> Option<Error> {
    let v = version.filter(|v| !KNOWN_VULKAN.contains(v))?;
    Some(
        Error::new(ErrorKind::Accel, format!("the accelerator names vulkan{}, which is no Vulkan version a GLSL compiler targets", crate::text::echo(v)))
            .detail(format!("known: vulkan{}", KNOWN_VULKAN.join(", vulkan"))),
    )
}

const CLAIMED: &[&str] = &["comp", "vert", "frag", "geom", "tesc", "tese", "mesh", "task", "rgen", "rint", "rahit", "rchit", "rmiss", "rcall", "glsl", "hlsl"];

impl Rule for SpirvRule {
    fn name(&self) -> &'static str {
        "spirv"
    }
    fn backend(&self) -> Backend {
        Backend::Vulkan
    }
    fn extensions(&self) -> &'static [&'static str] {
        CLAIMED
    }
    fn takes_target_env(&self) -> Option<&'static str> {
        Some("--target-env")
    }
    fn tools(&self) -> &'static [ToolSpec] {
        &[GLSLANG, GLSLC, SPIRV_VAL]
    }

    fn read_options(&self, manifest: &crate::config::manifest::Manifest) -> (options::RuleOptionsBox, Vec<Error>) {
        let (opts, mut problems) = options::read_all::<SpirvOptions>(manifest, self.name());
        // An empty or spaced value would reach the compiler as an argument it fails on (said
        // once the table reads).
        match opts.target_env.as_deref() {
            Some(env) if problems.is_empty() && (env.is_empty() || env.chars().any(|c| c.is_whitespace() || c.is_control())) => problems.push(
                Error::new(ErrorKind::Manifest, format!("`target-env = \"{}\"` names no target environment", crate::text::echo(env)))
                    .file(manifest.at_col("spirv.target-env"))
                    .key("package.metadata.mcpp.spirv.target-env")
                    .help("write one such as \"vulkan1.2\" or \"spirv1.4\" (one word), or remove the key to derive it from `accel`"),
            ),
            _ => {}
        }
        (options::RuleOptionsBox::new(opts), problems)
    }
    fn option_keys(&self) -> &'static [crate::config::manifest::KeyDoc] {
        OPTION_KEYS
    }
    fn toolchain_packages(&self, options: &options::RuleOptionsBox) -> Result<Vec<super::ToolchainPackageReq>> {
        Ok(match options.get::<SpirvOptions>()?.compiler.unwrap_or_default() {
            SpirvCompilerName::Glslang => vec![super::ToolchainPackageReq { package: "glslang", version: GLSLANG_FLOOR, tool: GLSLANG, named_by_env: &[] }],
            SpirvCompilerName::Glslc => Vec::new(),
        })
    }

    fn makes_payload(&self, _manifest: &crate::config::manifest::Manifest, _options: &options::RuleOptionsBox, _source: &DeviceSource) -> crate::error::Result<bool> {
        Ok(true)
    }
    /// A left-out shader keeps its accessor `<stem>_<ext>`, empty.
    fn placeholders(&self, _manifest: &crate::config::manifest::Manifest, _options: &options::RuleOptionsBox, sources: &[&DeviceSource]) -> Result<Vec<crate::surface::Payload>> {
        Ok(sources.iter().map(|s| crate::surface::Payload::empty(s.rel.clone(), identifier(s), crate::surface::PayloadKind::Words32)).collect())
    }
    fn plan(&self, ctx: &RuleContext, sources: &[&DeviceSource]) -> Result<RulePlan> {
        for s in sources {
            if !STAGES.contains(&s.ext.as_str()) {
                return Err(Error::new(ErrorKind::Sources, format!("{} has no shader stage", s.rel))
                    .file(&ctx.manifest.path)
                    .key(format!("package.metadata.mcpp.sources[{}]", s.entry))
                    .detail("Both compilers derive the stage from the extension, and a `.glsl`/`.hlsl` file is for `#include`.")
                    .help(format!("rename it to one of .{}, or leave it out of `sources` and `#include` it", STAGES.join(" ."))));
            }
        }
        let opts: &SpirvOptions = ctx.options()?;
        let which = opts.compiler.unwrap_or_default();
        let spec = match which {
            SpirvCompilerName::Glslang => GLSLANG,
            SpirvCompilerName::Glslc => GLSLC,
        };
        let (tool, warning) = tool::resolve(&spec, ctx.tools, ctx.env, ctx.cache)?;
        let target_env = match (&opts.target_env, &ctx.accel.version) {
            (Some(t), _) => t.clone(),
            (None, Some(v)) => match unknown_vulkan(Some(v)) {
                None => format!("vulkan{v}"),
                Some(e) => return Err(ctx.accel_refusal(e.help("write one of those in `accel`, or set [package.metadata.mcpp.spirv] target-env explicitly"))),
            },
            (None, None) => "vulkan1.0".to_string(),
        };
        check_target_env(ctx, &tool, opts, &target_env, None)?;
        // A `sources` entry's own `target-env`, checked as the rule's is, naming the entry.
        for s in sources {
            if let Some(t) = &s.target_env {
                check_target_env(ctx, &tool, opts, t, Some(format!("package.metadata.mcpp.sources[{}].target-env", s.entry)))?;
            }
        }
        check_loader_floor(ctx)?;
        // `optimize` overrides on/off; the level (speed or size) is cargo's `OPT_LEVEL`.
        let optimize = match opts.common.optimize_or(ctx.facts.opt_level.optimizes()) {
            false => Optimization::Off,
            true if ctx.facts.opt_level.for_size() => Optimization::Size,
            true => Optimization::Speed,
        };
        let root = ctx.manifest.dir();
        let includes = opts.common.resolve_includes(ctx.manifest, self.name())?;
        let mut plan = RulePlan::default();
        plan.warnings.extend(warning);
        let validator = match opts.validate.unwrap_or(false) {
            true => {
                let (val, warning) = tool::resolve(&SPIRV_VAL, ctx.tools, ctx.env, ctx.cache)?;
                plan.warnings.extend(warning);
                Some(val)
            }
            false => None,
        };
        for s in sources {
            let out = ctx.variant.lane_dir("spirv").join(format!("{}.spv", s.rel));
            let depfile = ctx.variant.lane_dir("spirv").join(format!("{}.d", s.rel));
            let env = s.target_env.as_deref().unwrap_or(&target_env);
            let args = argv(which, opts, env, optimize, &s.ext, &includes, &depfile, &out, &s.path);
            plan.actions.push(Action::external(External {
                id: format!("spirv:{}", s.rel),
                description: format!("{} {}", tool.name, s.rel),
                role: Role::Source,
                tool: tool.clone(),
                args,
                cwd: root.to_path_buf(),
                inputs: vec![s.path.clone()],
                outputs: vec![out.clone()],
            })
                .with_depfile(depfile, includes.clone()));
            if let Some(val) = &validator {
                plan.actions.push(check_action(val, env, s, &out, ctx.variant.lane_dir("spirv").join(format!("{}.checked", s.rel)), root));
            }
            plan.payloads.push(crate::surface::Payload::words(s.rel.clone(), identifier(s), out));
        }
        plan.tools.push(tool);
        plan.tools.extend(validator);
        Ok(plan)
    }
}

/// The accessor's name of a shader, built or left out: `<stem>_<ext>` (`scale_comp`).
fn identifier(s: &DeviceSource) -> String {
    let stem = s.path.file_stem().map(|x| x.to_string_lossy().into_owned()).unwrap_or_default();
    format!("{stem}_{}", s.ext)
}

/// The check of one compiled module: `spirv-val [--target-env <env>] <spv>`, blocking, its
/// stamp at `stamp`. The environment is the compile's, in spirv-val's spelling (`spirv1.4`
/// is `spv1.4`); one it has no spelling for (`opengl`) validates under SPIR-V's universal rules.
fn check_action(val: &crate::tool::Tool, target_env: &str, s: &DeviceSource, spv: &std::path::Path, stamp: std::path::PathBuf, root: &std::path::Path) -> Action {
    let mut args: Vec<OsString> = Vec::new();
    let env = match target_env.strip_prefix("spirv") {
        Some(v) => Some(format!("spv{v}")),
        None => target_env.starts_with("vulkan").then(|| target_env.to_string()),
    };
    if let Some(env) = env {
        args.extend(["--target-env".into(), env.into()]);
    }
    args.push(spv.into());
    Action::external(External {
        id: format!("spirv-val:{}", s.rel),
        description: format!("{} {}", val.name, s.rel),
        role: Role::Check { blocking: true },
        tool: val.clone(),
        args,
        cwd: root.to_path_buf(),
        inputs: vec![spv.to_path_buf()],
        outputs: vec![stamp],
    })
    .with_failure_hint(validation_hint)
}

/// The way out of a module spirv-val rejects.
fn validation_hint(id: &str, _output: &str) -> Option<String> {
    let rel = id.strip_prefix("spirv-val:")?;
    Some(format!("the SPIR-V module compiled from {rel} is invalid (the validator's message is above): a flag in [package.metadata.mcpp.spirv] `flags` or the compiler may have produced it; change the shader or the flags, or set validate = false to skip the check"))
}

/// The Vulkan target environments every compiler this rule drives accepts (glslang from 11.0,
/// the toolchain package's floor; glslc since shaderc 2020). A newer one is checked against the compiler.
pub const ALWAYS_ACCEPTED: &[&str] = &["vulkan1.0", "vulkan1.1", "vulkan1.2"];

/// The `vulkanX.Y` words a compiler lists for `--target-env` in its `--help` (glslangValidator:
/// `--target-env {vulkan1.0 | ... }`; glslc: one value a line), in order, without duplicates.
pub fn listed_target_envs(help: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in help.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.')) {
        let Some(v) = w.strip_prefix("vulkan") else { continue };
        let ok = v.split_once('.').is_some_and(|(a, b)| !a.is_empty() && !b.is_empty() && a.chars().all(|c| c.is_ascii_digit()) && b.chars().all(|c| c.is_ascii_digit()));
        if ok && !out.iter().any(|x| x == w) {
            out.push(w.to_string());
        }
    }
    out
}

/// Refuse a Vulkan target environment the selected compiler does not accept, before anything
/// compiles (`vulkan1.4` is documented, and glslang before 15.1 and shaderc 2023 reject it). Past [`ALWAYS_ACCEPTED`], the compiler's `--help` is asked
/// once (cached by its file, [`tool::probe_cached`]); a compiler whose help lists no Vulkan
/// environment is not second-guessed.
///
/// # Errors
/// [`ErrorKind::Accel`] naming `accel` with the column of the version (or `spirv.target-env`
/// when set there, or `entry_key`, a `sources` entry's `target-env`) and the environments the
/// compiler accepts.
fn check_target_env(ctx: &RuleContext, tool: &crate::tool::Tool, opts: &SpirvOptions, target_env: &str, entry_key: Option<String>) -> Result<()> {
    if !target_env.starts_with("vulkan") || ALWAYS_ACCEPTED.contains(&target_env) {
        return Ok(());
    }
    let Some(help) = tool::probe_cached(tool, &["--help"], ctx.cache) else { return Ok(()) };
    let accepted = listed_target_envs(&help);
    if accepted.is_empty() || accepted.iter().any(|a| a == target_env) {
        return Ok(());
    }
    let env = crate::text::echo(target_env);
    let e = Error::new(ErrorKind::Accel, format!("{} ({}) does not accept --target-env {env}", tool.name, crate::text::echo(tool.version_line()))).detail(format!("it accepts: {}", accepted.join(" ")));
    let help = format!("write one it accepts (e.g. {}) in `accel` or [package.metadata.mcpp.spirv] target-env, or use a newer compiler (glslang 15.1 or later targets vulkan1.4)", accepted.last().map(String::as_str).unwrap_or("vulkan1.2"));
    Err(if let Some(key) = entry_key {
        e.file(&ctx.manifest.path).key(key).help(help)
    } else if opts.target_env.is_some() {
        e.file(&ctx.manifest.path).key("package.metadata.mcpp.spirv.target-env").help(help)
    } else {
        let text = ctx.accel.to_string();
        let column = "vulkan".len() + 1;
        ctx.accel_refusal(e.detail(format!("{} (the version at column {column} of the entry `{}`)", text, crate::text::echo(&text))).help(help))
    })
}

/// The Vulkan loader floor, through the fact channel ([`crate::engine::facts`]): where a
/// `vulkan` entry names a version (`vulkan1.3`), the fact `vulkan-loader` (the instance API
/// version of this machine's loader, [`probe_loader_version`]) must be at least it. No
/// version, or no loader: nothing is stated or refused.
///
/// # Errors
/// [`ErrorKind::Accel`] in the channel's shape, naming `accel`.
fn check_loader_floor(ctx: &RuleContext) -> Result<()> {
    if ctx.accel.version.is_none() {
        return Ok(());
    }
    let floor = facts::Floor {
        fact: "vulkan-loader",
        what: "the Vulkan API version of this machine's loader",
        relation: facts::Relation::AtLeast,
        version: facts::Version(ctx.accel.version_numbers()),
        needed_by: format!("the accelerator entry `{}`", ctx.accel),
        why: "A program asking for a newer Vulkan than the loader offers cannot create its instance.".into(),
        help: "lower the entry's Vulkan version (in `accel` or `--accel`), or update the Vulkan loader (libvulkan1)".into(),
        file: None,
        key: None,
    };
    facts::require(&floor, ctx.env, probe_loader_version).map(|_| ()).map_err(|e| ctx.accel_refusal(e))
}

/// The instance API version of this machine's Vulkan loader (`libvulkan.so.1`), through its
/// `vkEnumerateInstanceVersion` (a loader without that function is Vulkan 1.0); `None` where no
/// loader loads (no fact is stated then). Asked once per process.
pub fn probe_loader_version() -> Option<facts::Reading> {
    #[cfg(target_os = "linux")]
    {
        static LOADER: std::sync::OnceLock<Option<facts::Reading>> = std::sync::OnceLock::new();
        LOADER
            .get_or_init(|| {
                // SAFETY: loading the loader runs its initialisers, which expect nothing of the
                // caller; the symbol, when found, is the loader's exported
                // `VkResult vkEnumerateInstanceVersion(uint32_t*)` (the type written here), called
                // with a valid pointer while the library is loaded. The library then stays loaded
                // for the life of the process, as the CUDA driver's does.
                let packed = unsafe {
                    let lib = libloading::Library::new("libvulkan.so.1").ok()?;
                    let packed = match lib.get::<unsafe extern "C" fn(*mut u32) -> i32>(b"vkEnumerateInstanceVersion\0") {
                        Ok(f) => {
                            let mut v: u32 = 0;
                            (f(&mut v) == 0).then_some(v)?
                        }
                        Err(_) => 1 << 22,
                    };
                    std::mem::forget(lib);
                    packed
                };
                // VK_API_VERSION_MAJOR/MINOR/PATCH: 7, 10 and 12 bits above the variant's 3.
                let version = facts::Version(vec![((packed >> 22) & 0x7f).into(), ((packed >> 12) & 0x3ff).into(), (packed & 0xfff).into()]);
                Some(facts::Reading { version, source: "libvulkan.so.1, vkEnumerateInstanceVersion".into() })
            })
            .clone()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// How a shader is optimised: from cargo's `OPT_LEVEL` (`0` off, `s`/`z` size, else speed),
/// switched on or off by `[package.metadata.mcpp.spirv] optimize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optimization {
    /// glslangValidator: no `-O` flag; glslc `-O0`.
    Off,
    /// glslangValidator `-Os` (its only level); glslc `-O`.
    Speed,
    /// `-Os` on both.
    Size,
}

/// The compiler arguments (after the program) for one shader, in each compiler's spelling:
/// glslangValidator `-V --target-env <env> -S <stage> [-Os] -D.. -I.. <flags> --depfile <d> -o <spv> <src>`;
/// glslc `--target-env=<env> -fshader-stage=<stage> [-O|-Os|-O0] -D.. -I.. <flags> -MD -MF <d> -o <spv> <src>`.
#[allow(clippy::too_many_arguments)]
pub fn argv(
    which: SpirvCompilerName,
    opts: &SpirvOptions,
    target_env: &str,
    optimize: Optimization,
    stage: &str,
    includes: &[std::path::PathBuf],
    depfile: &std::path::Path,
    out: &std::path::Path,
    src: &std::path::Path,
) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    match which {
        SpirvCompilerName::Glslang => {
            a.extend(["-V".into(), "--target-env".into(), target_env.into(), "-S".into(), stage.into()]);
            if optimize != Optimization::Off {
                a.push("-Os".into());
            }
        }
        SpirvCompilerName::Glslc => {
            a.push(format!("--target-env={target_env}").into());
            a.push(format!("-fshader-stage={stage}").into());
            a.push(match optimize {
                Optimization::Size => "-Os",
                Optimization::Speed => "-O",
                Optimization::Off => "-O0",
            }.into());
        }
    }
    a.extend(opts.common.define_args());
    for inc in includes {
        let mut s = OsString::from("-I");
        s.push(inc);
        a.push(s);
    }
    a.extend(opts.common.flags.iter().map(OsString::from));
    match which {
        SpirvCompilerName::Glslang => a.extend(["--depfile".into(), depfile.into()]),
        SpirvCompilerName::Glslc => a.extend(["-MD".into(), "-MF".into(), depfile.into()]),
    }
    a.extend(["-o".into(), out.into(), src.into()]);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The loader installed here (libvulkan1 1.3.239) answers 1.3; a machine without one states
    /// no fact.
    #[test]
    fn the_loader_version_is_read_where_a_loader_exists() {
        let installed = ["/usr/lib/x86_64-linux-gnu/libvulkan.so.1", "/usr/lib64/libvulkan.so.1", "/usr/lib/libvulkan.so.1"].iter().any(|p| std::path::Path::new(p).exists());
        match probe_loader_version() {
            Some(r) => {
                assert!(r.version.0[0] == 1 && r.version.0.len() == 3, "{r:?}");
                assert!(r.source.contains("vkEnumerateInstanceVersion"));
            }
            None => assert!(!installed, "a loader is installed but was not read"),
        }
    }

    /// The lists glslangValidator 12.0.0 and glslc (shaderc 2023.2) print, as measured here:
    /// both reject `--target-env vulkan1.4` and neither lists it.
    #[test]
    fn target_envs_are_read_from_the_compilers_help() {
        let glslang = "  --target-env {vulkan1.0 | vulkan1.1 | vulkan1.2 | vulkan1.3 | opengl |\n                spirv1.0 | spirv1.1 }\n  * vulkan1.0 under --client vulkan<ver>\n";
        assert_eq!(listed_target_envs(glslang), ["vulkan1.0", "vulkan1.1", "vulkan1.2", "vulkan1.3"]);
        let glslc = "  --target-env=<environment>\n   Values are:\n      vulkan1.0       # The default\n      vulkan1.1\n      vulkan1.2\n      vulkan1.3\n      vulkan          # Same as vulkan1.0\n      opengl4.5\n";
        assert_eq!(listed_target_envs(glslc), ["vulkan1.0", "vulkan1.1", "vulkan1.2", "vulkan1.3"]);
        assert!(listed_target_envs("recording shim 1.0").is_empty());
    }
}
