//! A rule from outside cargo-mcpp, registered with the builder: here a test's own rule (`kern`)
//! serving a backend no built-in rule serves (`metal`), run by the real glslangValidator, whose
//! depfile makes an edit of an included file rebuild. The rule is written against the rule API
//! only (`mcpp_build::rule` re-exports these types); the rule crate `mcpp-spvasm` has its own
//! tests through cargo.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use cargo_mcpp::rules::external::{
    CommandLine, DeviceRule, Job, OptionKey, OptionKind, PayloadKind, Refusal, ToolDecl,
};
use harness::*;
use std::sync::Arc;

/// Compute shaders in `.kern` files, compiled by glslangValidator for the `metal` backend (a
/// name only: the bytes are SPIR-V), with a depfile.
struct Kern;

impl DeviceRule for Kern {
    fn name(&self) -> &'static str {
        "kern"
    }
    fn backend(&self) -> &'static str {
        "metal"
    }
    fn extensions(&self) -> &'static [&'static str] {
        &["kern"]
    }
    fn tool(&self) -> ToolDecl {
        ToolDecl::new("kern-glslang")
            .programs(&["glslangValidator"])
            .env_vars(&["KERN_GLSLANG"])
            .install_hint("apt install glslang-tools")
    }
    fn payload_kind(&self) -> PayloadKind {
        PayloadKind::Words32
    }
    fn output_extension(&self) -> &'static str {
        "spv"
    }
    fn option_keys(&self) -> &'static [OptionKey] {
        const KEYS: &[OptionKey] = &[OptionKey::new(
            "stage",
            OptionKind::String,
            "`\"comp\"`",
            "the shader stage",
        )];
        KEYS
    }
    fn check_accel(&self, version: Option<&str>) -> Result<(), Refusal> {
        match version {
            Some(v) if v != "3" => {
                Err(Refusal::new(format!("no Metal {v} here")).help("write metal3"))
            }
            _ => Ok(()),
        }
    }
    fn command(&self, job: &Job<'_>) -> Result<CommandLine, Refusal> {
        let stage = job.options.string("stage").unwrap_or("comp");
        if stage != "comp" {
            return Err(
                Refusal::new(format!("stage `{stage}` is not compiled here"))
                    .key("stage")
                    .help("write stage = \"comp\""),
            );
        }
        let mut args: Vec<std::ffi::OsString> = vec![
            "-V".into(),
            "-S".into(),
            "comp".into(),
            "--depfile".into(),
            job.depfile.into(),
        ];
        for dir in job.includes {
            let mut arg = std::ffi::OsString::from("-I");
            arg.push(dir);
            args.push(arg);
        }
        args.extend(["-o".into(), job.output.into(), job.source.into()]);
        Ok(CommandLine::new(args).writes_depfile())
    }
}

const KERN: &str = "#version 450\n#extension GL_GOOGLE_include_directive : require\n#include \"factor.glsl\"\nlayout(local_size_x = 64) in;\nlayout(std430, binding = 0) buffer Data { float v[]; } data;\nvoid main() { uint i = gl_GlobalInvocationID.x; data.v[i] = data.v[i] * FACTOR; }\n";

fn kern_package(accel: &str, more: &str) -> Package {
    Package::new(&[
        ("Cargo.toml", &format!("{}{more}", manifest("kern-pkg", &format!("accel = \"{accel}\"\nsources = [\"k/*.kern\"]\n\n[package.metadata.mcpp.kern]\nincludes = [\"inc\"]")))),
        ("k/double.kern", KERN),
        ("inc/factor.glsl", "#define FACTOR 2.0\n"),
    ])
}

fn with_kern(pkg: &Package) -> cargo_mcpp::Build {
    let mut b = pkg.build();
    b.env(
        "KERN_GLSLANG",
        pkg.counting_wrapper_of("kern-glslang", &harness::real_tool("glslangValidator")),
    )
    .rule(Arc::new(Kern));
    b
}

#[test]
fn a_registered_rule_serves_a_new_backend_and_its_depfile_rebuilds_an_edit_of_an_include() {
    let pkg = kern_package("metal3", "");
    let outcome = pkg.compile(&with_kern(&pkg));
    assert_eq!(
        outcome.report.ran,
        vec!["kern:k/double.kern".to_string()],
        "{:?}",
        outcome.report
    );
    let first = pkg.embedded_bytes("k/double.kern");
    assert_eq!(&first[..4], &[0x03, 0x02, 0x23, 0x07], "SPIR-V magic");
    assert!(
        pkg.rust_surface().contains("pub fn double_kern()"),
        "{}",
        pkg.rust_surface()
    );
    let directives = outcome.cargo.lines().join("\n");
    assert!(
        directives.contains("cargo::rustc-cfg=mcpp_accel=\"metal\"")
            && directives.contains(
                "values(\"cuda\", \"hip\", \"sycl\", \"vulkan\", \"ascend\", \"metal\", \"none\")"
            ),
        "{directives}"
    );

    // A no-op runs nothing.
    let outcome = pkg.compile(&with_kern(&pkg));
    assert!(outcome.report.ran.is_empty(), "{:?}", outcome.report);
    assert_eq!(pkg.compiles("kern-glslang").len(), 1);

    // The include is in the depfile: its edit changes the embedded words.
    pkg.write("inc/factor.glsl", "#define FACTOR 3.0\n");
    let outcome = pkg.compile(&with_kern(&pkg));
    assert_eq!(outcome.report.ran.len(), 1, "{:?}", outcome.report);
    assert_ne!(
        pkg.embedded_bytes("k/double.kern"),
        first,
        "stale SPIR-V after an edit of an included file"
    );
}

#[test]
fn a_backend_without_its_rule_and_the_rules_own_refusals_are_named() {
    // Not registered: the backend is served by no rule, and a near name is offered.
    let pkg = kern_package("metal3", "");
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.contains("the backend `metal` is served by no rule of this build")
            && e.contains("mcpp_build::Build::rule")
            && e.contains("package.metadata.mcpp.accel"),
        "{e}"
    );
    assert!(
        !e.contains("unknown field `kern`") || e.contains("[package.metadata.mcpp]"),
        "{e}"
    );
    let pkg = kern_package("vulkn1.2", "");
    let e = pkg.refuse(&with_kern(&pkg));
    assert!(
        e.contains("the backend `vulkn` is served by no rule")
            && e.contains("did you mean `vulkan`?"),
        "{e}"
    );

    // The rule's check of its entry, keyed where the set came from.
    let pkg = kern_package("metal2", "");
    let e = pkg.refuse(&with_kern(&pkg));
    assert!(
        e.contains("kern: no Metal 2 here")
            && e.contains("write metal3")
            && e.contains("Cargo.toml:"),
        "{e}"
    );

    // Its options: an unknown key and a wrong type at their file:line:col, the valid keys listed.
    let pkg = kern_package("metal3", "\nbogus = true\nstage = 1\n");
    let e = pkg.refuse(&with_kern(&pkg));
    assert!(
        e.contains(&pkg.manifest_at("bogus"))
            && e.contains("unknown field `bogus`")
            && e.contains("`stage`, `includes`, `defines`, `optimize`, `flags`"),
        "{e}"
    );
    assert!(
        e.contains(&pkg.manifest_at("stage"))
            && e.contains("invalid type: integer, expected a string"),
        "{e}"
    );

    // A refusal of its command naming a key is shown at that key.
    let pkg = kern_package("metal3", "\nstage = \"frag\"\n");
    let e = pkg.refuse(&with_kern(&pkg));
    assert!(
        e.contains("kern: stage `frag` is not compiled here")
            && e.contains(&pkg.manifest_at("stage")),
        "{e}"
    );

    // A second rule claiming the same extension, or a built-in's name, is refused.
    let mut b = with_kern(&pkg);
    b.rule(Arc::new(Kern));
    let e = pkg.refuse(&b);
    assert!(
        e.contains(
            "a registered rule is named `kern`, which another rule of this build already has"
        ),
        "{e}"
    );
}

/// `cargo mcpp build` checks every package before cargo starts, without the build scripts'
/// rules: what no known rule takes (a rule's table, its backend, its sources, its tool) is left
/// to the build script, which registers the rule. The same manifest without the rule is refused
/// by the build script, not before.
#[test]
fn the_command_lines_check_leaves_a_registered_rules_keys_to_the_build_script() {
    let pkg = Package::new(&[
        (
            "Cargo.toml",
            &manifest(
                "deferred-pkg",
                "accel = \"vulkan1.2, metal3\"\nsources = [\"k/*.kern\", \"k/*.spvasm\"]\n\n[package.metadata.mcpp.tools]\nkern-glslang = \"/usr/bin/glslangValidator\"\n\n[package.metadata.mcpp.kern]\nstage = \"comp\"",
            ),
        ),
        ("k/double.kern", KERN),
        ("k/other.spvasm", "; nothing\n"),
    ]);
    let path = pkg.path("Cargo.toml");
    let choice = cargo_mcpp::plan::accel::AccelChoice::Manifest;
    let env = cargo_mcpp::config::env::Env::empty();
    let deferred = cargo_mcpp::pipeline::validate_with(
        &path,
        &choice,
        &env,
        &[],
        &cargo_mcpp::rules::external::RegisteredRules::unknown(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        deferred.collected.sources.is_empty(),
        "the files no known rule claims are the build script's: {:?}",
        deferred.collected.sources
    );
    let e = cargo_mcpp::pipeline::validate_with(&path, &choice, &env, &[], &Default::default())
        .expect_err("without the rules")
        .to_string();
    for what in [
        "unknown field `kern`",
        "the backend `metal` is served by no rule",
        "cargo-mcpp has no role for the extension '.kern'",
        "Build::rule",
    ] {
        assert!(e.contains(what), "{what}: {e}");
    }
}

/// A rule with the name or extensions given, for the registration's refusals.
struct Named(&'static str, &'static [&'static str]);

impl DeviceRule for Named {
    fn name(&self) -> &'static str {
        self.0
    }
    fn backend(&self) -> &'static str {
        "metal"
    }
    fn extensions(&self) -> &'static [&'static str] {
        self.1
    }
    fn tool(&self) -> ToolDecl {
        ToolDecl::new("named-tool")
    }
    fn payload_kind(&self) -> PayloadKind {
        PayloadKind::Bytes
    }
    fn output_extension(&self) -> &'static str {
        "bin"
    }
    fn command(&self, _job: &Job<'_>) -> Result<CommandLine, Refusal> {
        Ok(CommandLine::new(Vec::<String>::new()))
    }
}

#[test]
fn a_registration_that_cannot_hold_is_refused_and_a_registered_backend_is_declared_to_check_cfg() {
    let pkg = kern_package("metal3", "");
    for (rule, what) in [
        (
            Named("pack", &["x"]),
            "a registered rule is named `pack`, which is a key of [package.metadata.mcpp]",
        ),
        (
            Named("spirv", &["x"]),
            "a registered rule is named `spirv`, which another rule of this build already has",
        ),
        (
            Named("upper", &["CPY"]),
            "claims the extension `CPY`, which is no file extension it can match",
        ),
        (
            Named("empty", &[""]),
            "claims the extension ``, which is no file extension it can match",
        ),
        (
            Named("comp", &["comp"]),
            "claims `.comp`, which the rule `spirv` claims",
        ),
    ] {
        let mut b = with_kern(&pkg);
        b.rule(Arc::new(rule));
        let e = pkg.refuse(&b);
        assert!(e.contains(what) && e.contains("Build::rule"), "{what}: {e}");
    }

    // A build that leaves the backend out still declares it, so `cfg(mcpp_accel = "metal")`
    // is known to rustc's check-cfg.
    let outcome = pkg.compile(with_kern(&pkg).no_accel());
    let directives = outcome.cargo.lines().join("\n");
    assert!(
        directives.contains("\"metal\", \"none\")")
            && directives.contains("cargo::rustc-cfg=mcpp_accel=\"none\""),
        "{directives}"
    );
    assert!(outcome.report.ran.is_empty());
}
