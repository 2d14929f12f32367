//! A cargo-mcpp rule for SPIR-V assembly: `.spvasm` files assembled by `spirv-as` (SPIRV-Tools)
//! into SPIR-V words, embedded in the crate's generated surface like a compiled shader.
//!
//! It is a rule from outside cargo-mcpp: a build script registers it.
//!
//! In `build.rs`:
//!
//! ```no_run
//! mcpp_build::Build::new().rule(mcpp_spvasm::Spvasm).compile();
//! ```
//!
//! ```toml
//! [package.metadata.mcpp]
//! accel = "vulkan1.2"
//! sources = ["shaders/*.spvasm"]
//!
//! [package.metadata.mcpp.spvasm]
//! target-env = "vulkan1.1"        # optional: default from the `vulkan` entry
//! preserve-numeric-ids = true     # optional: keep `%1`-style ids as written
//! ```
//!
//! The accessor of `shaders/double.spvasm` is `double_spvasm()`, its code `&'static [u32]`.
//! The tool is found as cargo-mcpp finds its own: `[package.metadata.mcpp.tools] spirv-as`,
//! `SPIRV_AS`, `MCPP_TOOL_SPIRV_AS`, then PATH (with a warning).

use mcpp_build::rule::{
    CommandLine, DeviceRule, Job, OptionKey, OptionKind, Options, PayloadKind, Refusal, ToolDecl,
};

/// The SPIR-V assembly rule: `.spvasm` -> SPIR-V words, for the `vulkan` backend.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spvasm;

/// The target environments `spirv-as` takes that a Vulkan build can use.
pub const TARGET_ENVS: &[&str] = &[
    "vulkan1.0",
    "vulkan1.1",
    "vulkan1.2",
    "vulkan1.3",
    "spv1.0",
    "spv1.1",
    "spv1.2",
    "spv1.3",
    "spv1.4",
    "spv1.5",
    "spv1.6",
];

/// The Vulkan versions of the accelerator entry this rule assembles for.
const VULKAN_VERSIONS: &[&str] = &["1.0", "1.1", "1.2", "1.3"];

const KEYS: &[OptionKey] = &[
    OptionKey::new(
        "target-env",
        OptionKind::String,
        "`vulkan<version of the entry>`",
        "`spirv-as --target-env`: one of `vulkan1.0`..`vulkan1.3`, `spv1.0`..`spv1.6`",
    ),
    OptionKey::new(
        "preserve-numeric-ids",
        OptionKind::Bool,
        "`false`",
        "keep numeric ids (`%1`) as written (`--preserve-numeric-ids`)",
    ),
];

impl DeviceRule for Spvasm {
    fn name(&self) -> &'static str {
        "spvasm"
    }
    fn backend(&self) -> &'static str {
        "vulkan"
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["spvasm"]
    }
    fn tool(&self) -> ToolDecl {
        ToolDecl::new("spirv-as")
            .env_vars(&["SPIRV_AS"])
            .install_hint("apt install spirv-tools")
    }
    fn payload_kind(&self) -> PayloadKind {
        PayloadKind::Words32
    }
    fn output_extension(&self) -> &'static str {
        "spv"
    }
    fn option_keys(&self) -> &'static [OptionKey] {
        KEYS
    }
    fn check_options(&self, options: &Options) -> Vec<Refusal> {
        match options.string("target-env") {
            Some(env) if !TARGET_ENVS.contains(&env) => {
                vec![Refusal::new(format!(
                    "`{env}` is no target environment spirv-as assembles for"
                ))
                .key("target-env")
                .help(format!("write one of {}", TARGET_ENVS.join(", ")))]
            }
            _ => Vec::new(),
        }
    }
    fn check_accel(&self, version: Option<&str>) -> Result<(), Refusal> {
        match version {
            Some(v) if !VULKAN_VERSIONS.contains(&v) => Err(Refusal::new(format!("spirv-as assembles for no Vulkan {v}")).help("write vulkan1.0 to vulkan1.3 in `accel`, or set target-env in [package.metadata.mcpp.spvasm]")),
            _ => Ok(()),
        }
    }
    fn command(&self, job: &Job<'_>) -> Result<CommandLine, Refusal> {
        let env = match (job.options.string("target-env"), job.accel_version) {
            (Some(env), _) => env.to_string(),
            (None, Some(v)) => format!("vulkan{v}"),
            (None, None) => "vulkan1.0".to_string(),
        };
        let mut args: Vec<std::ffi::OsString> = vec!["--target-env".into(), env.into()];
        if job.options.bool("preserve-numeric-ids") == Some(true) {
            args.push("--preserve-numeric-ids".into());
        }
        args.extend(job.flags.iter().map(Into::into));
        args.extend(["-o".into(), job.output.into(), job.source.into()]);
        Ok(CommandLine::new(args))
    }
}
