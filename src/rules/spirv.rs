//! GLSL (`.comp`, `.vert`, `.frag`, ... ) to SPIR-V with glslangValidator or glslc, chosen by
//! declaration (`[package.metadata.mcpp.spirv] compiler`), never by what is installed.
//! Flag spellings are upstream-facts 3.5; the producer writes a bare `.spv` and a depfile,
//! and the surface generator does the rest (seed 003 section 4).

use super::{Rule, RuleContext, RulePlan};
use crate::accel::Backend;
use crate::error::{Error, ErrorKind, Result};
use crate::graph::{Action, Role};
use crate::manifest::{SpirvCompilerName, SpirvOptions};
use crate::sources::DeviceSource;
use crate::tool::{self, ToolSpec};
use std::ffi::OsString;

/// The shader stages, by extension; both compilers take the same short stage names.
pub const STAGES: &[&str] = &["comp", "vert", "frag", "geom", "tesc", "tese", "mesh", "task", "rgen", "rint", "rahit", "rchit", "rmiss", "rcall"];

/// glslangValidator: `GLSLANG_VALIDATOR`, `MCPP_GLSLANG`, `MCPP_TOOL_GLSLANGVALIDATOR`, the
/// `glslang` payload, then PATH.
pub const GLSLANG: ToolSpec = ToolSpec {
    name: "glslangValidator",
    programs: &["glslangValidator", "glslang"],
    env_vars: &["GLSLANG_VALIDATOR", "MCPP_GLSLANG"],
    version_args: &["--version"],
    install_hint: "apt install glslang-tools, or cargo mcpp fetch (the glslang payload)",
    payload: Some("glslang"),
};

/// glslc: `GLSLC`, `MCPP_GLSLC`, `MCPP_TOOL_GLSLC`, then PATH (no payload ships glslc).
pub const GLSLC: ToolSpec = ToolSpec {
    name: "glslc",
    programs: &["glslc"],
    env_vars: &["GLSLC", "MCPP_GLSLC"],
    version_args: &["--version"],
    install_hint: "apt install glslc",
    payload: None,
};

/// The glslang payload's floor: `--depfile` and `--target-env vulkan1.3` need glslang 11.
pub const GLSLANG_FLOOR: &str = ">=11.0";

/// The SPIR-V rule.
pub struct SpirvRule;

/// The Vulkan versions whose target environment the GLSL compilers know.
const KNOWN_VULKAN: &[&str] = &["1.0", "1.1", "1.2", "1.3", "1.4"];

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
    fn tools(&self) -> &'static [ToolSpec] {
        &[GLSLANG, GLSLC]
    }

    fn payloads(&self, manifest: &crate::manifest::Manifest) -> Vec<super::PayloadReq> {
        match manifest.mcpp.spirv.as_ref().and_then(|s| s.compiler).unwrap_or_default() {
            SpirvCompilerName::Glslang => vec![super::PayloadReq { payload: "glslang", version: GLSLANG_FLOOR, tool: GLSLANG, named_by_env: &[] }],
            SpirvCompilerName::Glslc => Vec::new(),
        }
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
        let opts = ctx.manifest.mcpp.spirv.clone().unwrap_or_default();
        let which = opts.compiler.unwrap_or_default();
        let spec = match which {
            SpirvCompilerName::Glslang => GLSLANG,
            SpirvCompilerName::Glslc => GLSLC,
        };
        let (tool, warning) = tool::resolve(&spec, ctx.tools, ctx.env, ctx.tool_cache)?;
        let target_env = match (&opts.target_env, &ctx.accel.version) {
            (Some(t), _) => t.clone(),
            (None, Some(v)) if KNOWN_VULKAN.contains(&v.as_str()) => format!("vulkan{v}"),
            (None, Some(v)) => {
                return Err(Error::new(ErrorKind::Accel, format!("the accelerator names vulkan{v}, which is no Vulkan version a GLSL compiler targets"))
                    .file(&ctx.manifest.path)
                    .key("package.metadata.mcpp.accel")
                    .detail(format!("known: vulkan{}", KNOWN_VULKAN.join(", vulkan")))
                    .help("write one of those in `accel`, or set [package.metadata.mcpp.spirv] target-env explicitly"))
            }
            (None, None) => "vulkan1.0".to_string(),
        };
        for name in opts.defines.keys() {
            let ok = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ok {
                return Err(Error::new(ErrorKind::Manifest, format!("`{name}` is not a preprocessor macro name"))
                    .file(&ctx.manifest.path)
                    .key(format!("package.metadata.mcpp.spirv.defines.{name}"))
                    .help("a define's name is an identifier ([A-Za-z_][A-Za-z0-9_]*); its value goes on the right: NAME = \"value\""));
            }
        }
        // `optimize` overrides on/off; the level (speed or size) is cargo's `OPT_LEVEL`.
        let optimize = match opts.optimize.unwrap_or(ctx.facts.opt_level.optimizes()) {
            false => Optimization::Off,
            true if ctx.facts.opt_level.for_size() => Optimization::Size,
            true => Optimization::Speed,
        };
        let root = ctx.manifest.dir();
        let includes = crate::host::resolve_includes(ctx.manifest, "package.metadata.mcpp.spirv", &opts.includes)?;
        let mut plan = RulePlan::default();
        plan.warnings.extend(warning);
        for s in sources {
            let out = ctx.work_dir.join("spirv").join(format!("{}.spv", s.rel));
            let depfile = ctx.work_dir.join("spirv").join(format!("{}.d", s.rel));
            let args = argv(which, &opts, &target_env, optimize, &s.ext, &includes, &depfile, &out, &s.path);
            let stem = s.path.file_stem().map(|x| x.to_string_lossy().into_owned()).unwrap_or_default();
            plan.actions.push(Action {
                id: format!("spirv:{}", s.rel),
                description: format!("{} {}", tool.name, s.rel),
                role: Role::Source,
                tool: tool.clone(),
                args,
                cwd: root.to_path_buf(),
                inputs: vec![s.path.clone()],
                outputs: vec![out.clone()],
                depfile: Some(depfile),
                include_dirs: includes.clone(),
                deps: Vec::new(),
                builtin: None,
            });
            plan.payloads.push((s.rel.clone(), format!("{stem}_{}", s.ext), out));
        }
        plan.tools.push(tool);
        Ok(plan)
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
    for (k, v) in &opts.defines {
        a.push(format!("-D{k}={v}").into());
    }
    for inc in includes {
        let mut s = OsString::from("-I");
        s.push(inc);
        a.push(s);
    }
    a.extend(opts.flags.iter().map(OsString::from));
    match which {
        SpirvCompilerName::Glslang => a.extend(["--depfile".into(), depfile.into()]),
        SpirvCompilerName::Glslc => a.extend(["-MD".into(), "-MF".into(), depfile.into()]),
    }
    a.extend(["-o".into(), out.into(), src.into()]);
    a
}
