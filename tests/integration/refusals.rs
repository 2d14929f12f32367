//! Every refusal of the foundation, asserting its text: what is wrong, where, and the way out.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::*;

fn package_with(mcpp: &str, files: &[(&str, &str)]) -> Package {
    let mut all = vec![("Cargo.toml", manifest("refusals", mcpp))];
    all.extend(files.iter().map(|(p, t)| (*p, t.to_string())));
    let borrowed: Vec<(&str, &str)> = all.iter().map(|(p, t)| (*p, t.as_str())).collect();
    Package::new(&borrowed)
}

const COMP: &str = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n";

#[test]
fn malformed_accel_names_position_and_expectation() {
    let pkg = package_with(
        "accel = \"vulkan1.2, cuda12.9+{sm_90\"\nsources = [\"s/*.comp\"]",
        &[("s/x.comp", COMP)],
    );
    let e = pkg.refuse(&pkg.build());
    assert!(e.contains("malformed accelerator set from"), "{e}");
    assert!(e.contains("package.metadata.mcpp.accel"), "{e}");
    assert!(
        e.contains("expected `,` or `}` closing the architecture list at column 27"),
        "{e}"
    );
    let e = pkg.refuse(pkg.build().accel("Vulkan"));
    assert!(e.contains("malformed accelerator set from --accel"), "{e}");
    assert!(e.contains("expected a backend (`cuda`, `hip`, `sycl`, `vulkan`, `ascend`, or a registered rule's: lowercase letters) at column 1"), "{e}");
    // A backend's shape, but no rule serves it: the near built-in is offered.
    let e = pkg.refuse(pkg.build().accel("vulcan"));
    assert!(
        e.contains("--accel")
            && e.contains("the backend `vulcan` is served by no rule of this build")
            && e.contains("did you mean `vulkan`?"),
        "{e}"
    );
}

#[test]
fn unknown_key_names_key_file_and_valid_keys() {
    let pkg = package_with(
        "accel = \"vulkan\"\nsource = [\"s/*.comp\"]",
        &[("s/x.comp", COMP)],
    );
    let e = pkg.refuse(&pkg.build());
    assert!(e.contains("unknown field `source`"), "{e}");
    assert!(e.contains("Cargo.toml:8:1"), "{e}");
    assert!(e.contains("package.metadata.mcpp.source"), "{e}");
    assert!(
        e.contains("`sources`")
            && e.contains("`accel`")
            && e.contains("[package.metadata.mcpp.spirv]"),
        "{e}"
    );
    let pkg = package_with("accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.spirv]\ncompiler = \"shaderc\"", &[("s/x.comp", COMP)]);
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.contains("unknown variant `shaderc`, expected `glslang` or `glslc`"),
        "{e}"
    );
    assert!(e.contains("package.metadata.mcpp.spirv.compiler"), "{e}");
}

#[test]
fn a_manifest_with_three_problems_reports_all_three_with_line_column_key_and_fix() {
    // Lines 6.. of the manifest: the [package.metadata.mcpp] table starts at line 6.
    let pkg = package_with(
        "accel = \"vulkan1.2, cuda+{\"\nsources = [\"s/*.comp\"]\nunknown = 1\n[package.metadata.mcpp.spirv]\ncompilr = \"glslc\"",
        &[("s/x.comp", COMP)],
    );
    let e = pkg.build().try_compile().unwrap_err();
    assert_eq!(e.problems(), 3, "{e}");
    let text = e.to_string();
    for (what, at, key, fix) in [
        (
            "unknown field `unknown`",
            "Cargo.toml:9:1",
            "package.metadata.mcpp.unknown",
            "the keys valid in [package.metadata.mcpp] are",
        ),
        (
            "unknown field `compilr`",
            "Cargo.toml:11:1",
            "package.metadata.mcpp.spirv.compilr",
            "the keys valid in [package.metadata.mcpp.spirv] are",
        ),
        (
            "malformed accelerator set from",
            "Cargo.toml:7:1",
            "package.metadata.mcpp.accel",
            "help: write a comma-separated set",
        ),
    ] {
        let block = text
            .split("\n\nerror: ")
            .find(|b| b.contains(what))
            .unwrap_or_else(|| panic!("`{what}` not reported: {text}"));
        assert!(
            block.contains(at) && block.contains(&format!("(key `{key}`)")) && block.contains(fix),
            "{what}: {block}"
        );
    }
    // A table no rule owns is refused listing the rules' tables.
    let pkg = package_with("accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.metal]\narch = \"apple7\"", &[("s/x.comp", COMP)]);
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.contains("unknown field `metal`")
            && e.contains("[package.metadata.mcpp.spirv], [package.metadata.mcpp.cuda]"),
        "{e}"
    );
}

#[test]
fn a_device_source_no_rule_claims_is_refused_by_name() {
    let pkg = package_with(
        "accel = \"vulkan\"\nsources = [\"k/*.metal\"]",
        &[("k/saxpy.metal", "kernel void k() {}\n")],
    );
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.contains("device source that no rule compiles: k/saxpy.metal"),
        "{e}"
    );
    assert!(
        e.contains("no rule of this cargo-mcpp claims `.metal`"),
        "{e}"
    );
}

#[test]
fn a_file_whose_extension_has_no_role_is_refused_by_name() {
    let pkg = package_with(
        "accel = \"vulkan\"\nsources = [\"s/*\"]",
        &[("s/orphan.zzz", "x"), ("s/x.comp", COMP)],
    );
    let e = pkg.refuse(&pkg.build());
    assert!(e.contains("'s/orphan.zzz' is listed in sources, and cargo-mcpp has no role for the extension '.zzz'"), "{e}");
    assert!(e.contains("refused rather than ignored"), "{e}");
    let pkg = package_with(
        "accel = \"vulkan\"\nsources = [\"s/*.cpp\"]",
        &[("s/host.cpp", "int x;")],
    );
    let e = pkg.refuse(&pkg.build());
    // `.cpp` is SYCL source only through a glob constrained to sycl: a plain glob is refused.
    assert!(
        e.contains("a `.cpp` file is sycl source only through a glob constrained to sycl")
            && e.contains("cc crate"),
        "{e}"
    );
}

#[test]
fn a_stageless_glsl_listed_as_a_source_is_refused_by_name() {
    let pkg = package_with(
        "accel = \"vulkan\"\nsources = [\"s/**/*\"]",
        &[("s/x.comp", COMP), ("s/inc/common.glsl", "float f();\n")],
    );
    let e = pkg.refuse(&pkg.build());
    assert!(e.contains("s/inc/common.glsl has no shader stage"), "{e}");
    assert!(e.contains("rename it to one of .comp .vert .frag"), "{e}");
    assert!(e.contains("`#include` it"), "{e}");
}

#[test]
fn a_collision_within_one_directory_names_both_files() {
    let pkg = package_with(
        "accel = \"vulkan\"\nsources = [\"s/*.comp\"]",
        &[("s/a-b.comp", COMP), ("s/a_b.comp", COMP)],
    );
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.contains("two device sources map to one payload name"),
        "{e}"
    );
    assert!(e.contains("s/a-b.comp") && e.contains("s/a_b.comp"), "{e}");
    assert!(e.contains("both would be `a_b_comp`"), "{e}");
    assert!(e.contains("rename one of them"), "{e}");
    // Two directories sharing a stem are two payloads, not a collision.
    let pkg = package_with(
        "accel = \"vulkan\"\nsources = [\"s/**/*.comp\"]",
        &[("s/a/x.comp", COMP), ("s/b/x.comp", COMP)],
    );
    assert_eq!(pkg.compile(&pkg.build()).payloads, 2);
}

#[test]
fn a_missing_compiler_names_every_way_to_name_it() {
    let pkg = package_with("accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.spirv]\ncompiler = \"glslc\"", &[("s/x.comp", COMP)]);
    let mut b = cargo_mcpp::Build::new();
    b.manifest_dir(pkg.path(""))
        .out_dir(pkg.out_dir())
        .work_dir(pkg.work_dir());
    for v in ["GLSLC", "MCPP_GLSLC", "MCPP_ACCEL", "MCPP_NO_ACCEL"] {
        b.env_remove(v);
    }
    b.env("PATH", pkg.dir.path().join("empty-bin"));
    let e = pkg.refuse(&b);
    assert!(e.contains("no glslc found"), "{e}");
    for way in [
        "Build::new().tool(\"glslc\"",
        "[package.metadata.mcpp.tools] glslc = ",
        "GLSLC=/path/to/glslc",
        "MCPP_GLSLC=",
        "on PATH as glslc",
    ] {
        assert!(e.contains(way), "missing `{way}` in:\n{e}");
    }
    // A named path that does not exist is refused naming where it was named.
    b.env("GLSLC", "/nonexistent/glslc");
    let e = pkg.refuse(&b);
    assert!(
        e.contains(
            "the environment variable GLSLC names `/nonexistent/glslc`, which does not exist"
        ),
        "{e}"
    );
}

#[test]
fn a_glob_matching_nothing_is_refused() {
    let pkg = package_with(
        "accel = \"vulkan\"\nsources = [\"shaders/*.comp\"]",
        &[("s/x.comp", COMP)],
    );
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.contains("sources entry 'shaders/*.comp' matches no file"),
        "{e}"
    );
    assert!(e.contains("package.metadata.mcpp.sources[0]"), "{e}");
}

#[test]
fn a_glob_leaving_the_package_is_refused() {
    let pkg = package_with(
        "accel = \"vulkan\"\nsources = [\"../*.comp\"]",
        &[("s/x.comp", COMP)],
    );
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.contains("sources entry '../*.comp' leaves the package"),
        "{e}"
    );
}

#[test]
fn a_missing_include_directory_names_the_key() {
    let pkg = package_with("accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.spirv]\nincludes = [\"nope\"]", &[("s/x.comp", COMP)]);
    let e = pkg.refuse(&pkg.build());
    assert!(e.contains("include directory `nope` does not exist"), "{e}");
    assert!(e.contains("package.metadata.mcpp.spirv.includes[0]"), "{e}");
}

#[test]
fn a_compile_error_shows_the_compiler_output_and_the_command() {
    let pkg = package_with(
        "accel = \"vulkan\"\nsources = [\"s/*.comp\"]",
        &[(
            "s/x.comp",
            "#version 450\nvoid main() { undefined_thing(); }\n",
        )],
    );
    let err = pkg.build().try_compile().unwrap_err();
    assert_eq!(err.kind, cargo_mcpp::ErrorKind::ToolFailed);
    let e = err.to_string();
    assert!(e.contains("glslangValidator s/x.comp failed"), "{e}");
    assert!(e.contains("undefined_thing"), "{e}");
    assert!(e.contains("command: "), "{e}");
    // A failed action leaves no state behind: fixing the file compiles it.
    pkg.write("s/x.comp", COMP);
    assert_eq!(pkg.compile(&pkg.build()).report.ran.len(), 1);
}

#[test]
fn a_bad_module_name_is_refused_with_a_working_spelling() {
    let pkg = package_with(
        "accel = \"vulkan\"\nsources = [\"s/*.comp\"]\nmodule-name = \"my-app.shaders\"",
        &[("s/x.comp", COMP)],
    );
    let e = pkg.refuse(&pkg.build());
    assert!(e.contains("`my-app.shaders` is not a usable module name: the segment `my-app` is not an identifier"), "{e}");
    assert!(e.contains("`my_app` would work"), "{e}");
}

#[test]
fn an_unknown_tool_key_is_refused_with_the_valid_names() {
    let pkg = package_with("accel = \"vulkan\"\nsources = [\"s/*.comp\"]\ntools = { glslangvalidator = \"/usr/bin/true\" }", &[("s/x.comp", COMP)]);
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.contains("unknown tool `glslangvalidator` in [package.metadata.mcpp.tools]"),
        "{e}"
    );
    assert!(e.contains("glslangValidator, glslc"), "{e}");
}

#[test]
fn a_directory_named_as_a_tool_is_not_an_executable_file() {
    let pkg = package_with(
        "accel = \"vulkan\"\nsources = [\"s/*.comp\"]",
        &[("s/x.comp", COMP)],
    );
    let e = pkg.refuse(pkg.build().tool("glslangValidator", "/tmp"));
    assert!(
        e.contains("names `/tmp`, which is not an executable file"),
        "{e}"
    );
}

#[test]
fn a_constraint_of_another_backend_on_shaders_is_refused() {
    let pkg = package_with(
        "accel = \"vulkan\"\nsources = [{ glob = \"s/*.comp\", accel = \"cuda12.9+{sm_90}\" }]",
        &[("s/x.comp", COMP)],
    );
    let e = pkg.refuse(&pkg.build());
    assert!(e.contains("constrains s/x.comp to accel \"cuda12.9+{sm_90}\", but a `.comp` file is compiled only for vulkan"), "{e}");
}

#[test]
fn directories_that_become_one_identifier_are_refused_as_such() {
    let pkg = package_with(
        "accel = \"vulkan\"\nsources = [\"c/**/*.comp\"]",
        &[("c/default/x.comp", COMP), ("c/default_/x.comp", COMP)],
    );
    let e = pkg.refuse(&pkg.build());
    assert!(e.contains("both would be `default_::x_comp`"), "{e}");
    assert!(
        e.contains("Their directories differ only where a name becomes an identifier"),
        "{e}"
    );
}

#[test]
fn a_define_name_that_is_no_identifier_is_refused() {
    let pkg = package_with("accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.spirv]\ndefines = { \"A B\" = \"1\" }", &[("s/x.comp", COMP)]);
    let e = pkg.refuse(&pkg.build());
    assert!(e.contains("`A B` is not a preprocessor macro name"), "{e}");
    assert!(e.contains("package.metadata.mcpp.spirv.defines.A B"), "{e}");
    assert_eq!(
        pkg.starts("glslangValidator"),
        0,
        "refused with the manifest's checks, before any process starts"
    );
}

#[test]
fn a_vulkan_version_no_compiler_targets_is_refused() {
    let pkg = package_with(
        "accel = \"vulkan1.9\"\nsources = [\"s/*.comp\"]",
        &[("s/x.comp", COMP)],
    );
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.contains(
            "the accelerator names vulkan1.9, which is no Vulkan version a GLSL compiler targets"
        ),
        "{e}"
    );
}

#[test]
fn a_bad_module_name_is_refused_before_anything_compiles() {
    for name in ["fn", "1abc", "a..b", "std.shaders"] {
        let pkg = package_with(
            &format!("accel = \"vulkan\"\nsources = [\"s/*.comp\"]\nmodule-name = \"{name}\""),
            &[("s/x.comp", COMP)],
        );
        let e = pkg.refuse(&pkg.build());
        assert!(e.contains("is not a usable module name"), "{name}: {e}");
        assert_eq!(
            pkg.starts("glslangValidator"),
            0,
            "{name}: nothing may compile before the refusal"
        );
    }
}

#[test]
fn a_compiler_that_writes_no_output_is_a_failure_not_stale_bytes() {
    let pkg = package_with(
        "accel = \"vulkan\"\nsources = [\"s/*.comp\"]",
        &[("s/x.comp", COMP)],
    );
    pkg.compile(&pkg.build());
    pkg.write(
        "s/x.comp",
        &COMP.replace("void main() {}", "void main() { }"),
    );
    let e = pkg.refuse(pkg.build().tool("glslangValidator", "/bin/true"));
    assert!(e.contains("exited 0 but did not write"), "{e}");
}

#[test]
fn an_empty_accel_with_sources_warns() {
    let pkg = package_with(
        "accel = \"\"\nsources = [\"s/*.comp\"]",
        &[("s/x.comp", COMP)],
    );
    let outcome = pkg.compile(&pkg.build());
    assert!(
        outcome
            .cargo
            .warnings()
            .any(|w| w.contains("no accelerator: `accel`")),
        "{:?}",
        outcome.cargo.lines()
    );
    let quiet = pkg.compile(pkg.build().no_accel());
    assert!(!quiet.cargo.warnings().any(|w| w.contains("no accelerator")));
}

#[test]
fn an_empty_accel_override_is_named_as_the_origin_of_the_empty_set() {
    let pkg = shader_package("glslang");
    let mut b = pkg.build();
    b.accel("");
    let outcome = pkg.compile(&b);
    let directives = outcome.cargo.lines().join("\n");
    assert!(directives.contains("no accelerator: --accel \"\" is empty or absent, so none of the 2 device source(s) is compiled"), "{directives}");
    assert_eq!(pkg.starts("glslangValidator"), 0);
}

/// A builder for `pkg` whose GLSL compiler the resolver must find (no explicit tool).
fn resolving_build(pkg: &Package) -> cargo_mcpp::Build {
    let mut b = cargo_mcpp::Build::new();
    b.manifest_dir(pkg.path(""))
        .out_dir(pkg.out_dir())
        .work_dir(pkg.work_dir())
        .env("CARGO_PKG_NAME", "refusals")
        .env("MCPP_HOME", pkg.dir.path().join("mcpp-home"));
    for v in [
        "MCPP_ACCEL",
        "MCPP_NO_ACCEL",
        "GLSLANG_VALIDATOR",
        "MCPP_GLSLANG",
        "MCPP_TOOL_GLSLANGVALIDATOR",
    ] {
        b.env_remove(v);
    }
    b
}

#[test]
fn a_tool_value_with_a_newline_or_of_any_length_is_shown_escaped_and_cut() {
    let pkg = package_with(
        "accel = \"vulkan1.2\"\nsources = [\"s/*.comp\"]",
        &[("s/x.comp", COMP)],
    );
    let e = pkg.refuse(resolving_build(&pkg).env("MCPP_TOOL_GLSLANGVALIDATOR", "/tmp/a\nb"));
    assert!(
        !e.contains("/tmp/a\nb"),
        "a raw newline splits the message (and a cargo warning): {e}"
    );
    assert!(
        e.contains("names `/tmp/a\\nb`, which does not exist")
            && e.contains("MCPP_TOOL_GLSLANGVALIDATOR=/tmp/a\\nb"),
        "{e}"
    );
    let long = format!("/tmp/{}", "x".repeat(100_000));
    let e = pkg.refuse(resolving_build(&pkg).env("MCPP_TOOL_GLSLANGVALIDATOR", &long));
    assert!(
        e.len() < 5_000 && e.contains("more characters"),
        "the value is cut ({} bytes)",
        e.len()
    );
}

#[test]
fn why_tool_shows_a_recorded_version_and_origin_escaped() {
    let pkg = package_with(
        "accel = \"vulkan1.2\"\nsources = [\"s/*.comp\"]",
        &[("s/x.comp", COMP), ("src/lib.rs", "")],
    );
    let target = pkg.dir.path().join("target");
    let decisions = target.join("debug/mcpp/refusals/tool-decisions.json");
    std::fs::create_dir_all(decisions.parent().unwrap()).unwrap();
    let record = serde_json::json!({ "glslangValidator": {
        "tool": "glslangValidator", "answer": "/usr/bin/glslangValidator", "version": "Glslang \u{1b}[31mred\u{1b}[0m 15.0",
        "source": "env", "origin": "the environment variable GLSLANG_VALIDATOR=/a\u{1b}]0;title\u{7}", "considered": ["x\ny"], "warning": null, "refusal": null } });
    std::fs::write(&decisions, serde_json::to_vec(&record).unwrap()).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args(["mcpp", "why", "tool", "glslangValidator", "--manifest-path"])
        .arg(pkg.path("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        !t.contains('\u{1b}') && !t.contains('\u{7}'),
        "no raw escape sequence: {t:?}"
    );
    assert!(
        t.contains("version: Glslang \\u{1b}[31mred\\u{1b}[0m 15.0"),
        "{t}"
    );
    assert!(t.contains("    x\\ny"), "{t}");
}

#[test]
fn why_tool_of_a_name_no_rule_runs_says_so_listing_the_tools() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args(["mcpp", "why", "tool", "bogus"])
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "a usage error: {t}");
    assert!(t.contains("`bogus` is no tool of any rule"), "{t}");
    assert!(
        t.contains("glslangValidator")
            && t.contains("slangc")
            && t.contains("nvcc")
            && t.contains("c++"),
        "the tools are listed: {t}"
    );
    assert!(!t.contains("no build has resolved"), "{t}");
}
