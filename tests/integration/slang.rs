//! The Slang lane with the real slangc (`MCPP_SLANGC`, which `scripts/setup-toolchains.sh`
//! names in its env.sh, else the script's prefix): `.slang` sources compiled to SPIR-V with the
//! profile of the `vulkan` entry, `import` resolved through `includes`, embedded by the same
//! surface generator; the criterion of every rebuild test is the embedded bytes.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::text;
use harness::*;
use std::path::PathBuf;

/// Variables of the developer's environment that would name slangc before the test's choice.
const HIDDEN: &[&str] = &["SLANGC", "MCPP_SLANGC", "MCPP_TOOL_SLANGC"];

/// A wrapper for the real slangc in the package's tool directory, logging each start's argv.
fn counting_slangc(pkg: &Package) -> PathBuf {
    pkg.counting_wrapper_of("slangc", &real_slangc())
}

/// The package's builder with slangc named by the builder (`Build::tool`) as the counting wrapper.
fn build(pkg: &Package) -> cargo_mcpp::Build {
    let mut b = pkg.build();
    for v in HIDDEN {
        b.env_remove(v);
    }
    b.tool("slangc", counting_slangc(pkg));
    b
}

/// The argv of every slangc start (one line each), from the wrapper's log.
fn slangc_calls(pkg: &Package) -> Vec<String> {
    Shim::at(&pkg.tools.join("slangc"))
        .records()
        .iter()
        .map(|r| r.line())
        .collect()
}

const MATHUTIL: &str =
    "module mathutil;\npublic float transform(float x) { return x * 3.0 + 1.0; }\n";
const SCALE_SLANG: &str = "import mathutil;\nRWStructuredBuffer<float> data;\n[shader(\"compute\")]\n[numthreads(WORKGROUP, 1, 1)]\nvoid main(uint3 id : SV_DispatchThreadID) {\n    uint n, stride;\n    data.GetDimensions(n, stride);\n    if (id.x < n) { data[id.x] = transform(data[id.x]); }\n}\n";
const SQUARE_SLANG: &str = "RWStructuredBuffer<float> data;\n[shader(\"compute\")]\n[numthreads(WORKGROUP, 1, 1)]\nvoid main(uint3 id : SV_DispatchThreadID) { data[id.x] = data[id.x] * data[id.x]; }\n";

/// Two Slang compute shaders, one importing `mathutil` from `shaders/modules` (not a source),
/// with a define and `slang_table` as further keys of `[package.metadata.mcpp.slang]`.
fn slang_package(slang_table: &str) -> Package {
    Package::new(&[
        (
            "Cargo.toml",
            &format!(
                "{}\n[package.metadata.mcpp.slang]\nincludes = [\"shaders/modules\"]\ndefines = {{ WORKGROUP = \"64\" }}\n{slang_table}",
                manifest("slang-pkg", "accel = \"vulkan1.2\"\nsources = [\"shaders/slang/*.slang\"]")
            ),
        ),
        ("shaders/modules/mathutil.slang", MATHUTIL),
        ("shaders/slang/scale.slang", SCALE_SLANG),
        ("shaders/slang/square.slang", SQUARE_SLANG),
    ])
}

/// `Cargo.toml:<line>:1` of the line of the package's manifest that starts with `start`.
fn at(pkg: &Package, start: &str) -> String {
    let line = pkg
        .read("Cargo.toml")
        .lines()
        .position(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starts with {start}"))
        + 1;
    format!("Cargo.toml:{line}:1")
}

/// The SPIR-V version word of a module (`0x00010500` for 1.5), after the magic.
fn spirv_version(bytes: &[u8]) -> (u8, u8) {
    assert_eq!(&bytes[..4], &[0x03, 0x02, 0x23, 0x07], "SPIR-V magic");
    (bytes[6], bytes[5])
}

#[test]
fn slang_sources_compile_with_their_import_to_spirv_of_the_vulkan_profile_and_are_embedded() {
    let pkg = slang_package("");
    let outcome = pkg.compile(&build(&pkg));
    let mut ran = outcome.report.ran.clone();
    ran.sort();
    assert_eq!(
        ran,
        [
            "slang:shaders/slang/scale.slang",
            "slang:shaders/slang/square.slang"
        ]
    );
    assert_eq!(outcome.payloads, 2);
    for src in ["shaders/slang/scale.slang", "shaders/slang/square.slang"] {
        let bytes = pkg.embedded_bytes(src);
        assert_eq!(
            spirv_version(&bytes),
            (1, 5),
            "vulkan1.2 is profile spirv_1_5: {src}"
        );
        assert!(
            bytes.windows(5).any(|w| w == b"main\0"),
            "{src}: the entry point `main`"
        );
    }
    assert_ne!(
        pkg.embedded_bytes("shaders/slang/scale.slang"),
        pkg.embedded_bytes("shaders/slang/square.slang")
    );
    // Named `<stem>_comp` by the surface generator, in every language.
    let rust = pkg.rust_surface();
    assert!(
        rust.contains("pub fn scale_comp()") && rust.contains("pub fn square_comp()"),
        "{rust}"
    );
    // The payload copy is named after it too; no C/C++ unit in the package, so no C arrays.
    let copy = std::fs::read(pkg.out_dir().join("mcpp/payloads/scale_comp.spv")).unwrap();
    assert_eq!(copy, pkg.embedded_bytes("shaders/slang/scale.slang"));
    assert!(!pkg.out_dir().join("mcpp/data").exists());
    // The command: one `-v` probe, then one argv per source with the rule's flags.
    let calls = slangc_calls(&pkg);
    assert_eq!(calls.len(), 3, "{calls:#?}");
    assert_eq!(calls[0], "-v");
    for c in &calls[1..] {
        assert!(
            c.starts_with(
                "-target spirv -profile spirv_1_5 -entry main -stage compute -O0 -DWORKGROUP=64 -I"
            ),
            "{c}"
        );
        assert!(
            c.contains("shaders/modules -depfile ") && c.contains(".d -o "),
            "{c}"
        );
    }
    // Neither lane warns that the other compiled nothing (both compile for vulkan).
    let warnings: Vec<String> = outcome.cargo.warnings().map(str::to_string).collect();
    assert!(warnings.is_empty(), "{warnings:#?}");
    // The imported module is a real input of the build script.
    assert!(outcome
        .cargo
        .lines()
        .iter()
        .any(|l| l.starts_with("cargo::rerun-if-changed=")
            && l.ends_with("shaders/modules/mathutil.slang")));
    assert_eq!(
        pkg.starts("glslangValidator") + pkg.starts("glslc"),
        0,
        "no GLSL compiler runs for Slang sources"
    );

    // vulkan1.3 is spirv_1_6, in its own variant; the profile key overrides the mapping.
    let v13 = pkg.compile(build(&pkg).accel("vulkan1.3"));
    assert_eq!(v13.report.ran.len(), 2);
    assert_eq!(
        spirv_version(&pkg.embedded_bytes("shaders/slang/scale.slang")),
        (1, 6)
    );
    let v11 = pkg.compile(build(&pkg).accel("vulkan1.1"));
    assert_eq!(v11.report.ran.len(), 2);
    assert_eq!(
        spirv_version(&pkg.embedded_bytes("shaders/slang/scale.slang")),
        (1, 3)
    );
    pkg.write(
        "Cargo.toml",
        &pkg.read("Cargo.toml")
            .replace("includes = ", "profile = \"spirv_1_4\"\nincludes = "),
    );
    pkg.compile(&build(&pkg));
    assert_eq!(
        spirv_version(&pkg.embedded_bytes("shaders/slang/scale.slang")),
        (1, 4)
    );
}

#[test]
fn editing_only_the_imported_module_changes_the_embedded_bytes() {
    let pkg = slang_package("");
    pkg.compile(&build(&pkg));
    let scale = pkg.embedded_bytes("shaders/slang/scale.slang");
    let square = pkg.embedded_bytes("shaders/slang/square.slang");
    pkg.write(
        "shaders/modules/mathutil.slang",
        &MATHUTIL.replace("3.0", "5.0"),
    );
    let outcome = pkg.compile(&build(&pkg));
    assert_eq!(
        outcome.report.ran,
        ["slang:shaders/slang/scale.slang"],
        "exactly the importer reruns"
    );
    let edited = pkg.embedded_bytes("shaders/slang/scale.slang");
    assert_ne!(
        edited, scale,
        "stale bytes after editing the imported module"
    );
    assert_eq!(pkg.embedded_bytes("shaders/slang/square.slang"), square);
    // 5.0f is in the new module's constants, 3.0f is gone.
    let has = |b: &[u8], f: f32| b.windows(4).any(|w| w == f.to_le_bytes());
    assert!(has(&edited, 5.0) && !has(&edited, 3.0) && has(&scale, 3.0));
    // The payload copy the surface names carries the new bytes too.
    let copy = std::fs::read(pkg.out_dir().join("mcpp/payloads/scale_comp.spv")).unwrap();
    assert!(has(&copy, 5.0) && !has(&copy, 3.0));
    // A define change reaches slangc too.
    pkg.write(
        "Cargo.toml",
        &pkg.read("Cargo.toml")
            .replace("WORKGROUP = \"64\"", "WORKGROUP = \"32\""),
    );
    let outcome = pkg.compile(&build(&pkg));
    assert_eq!(outcome.report.ran.len(), 2);
    assert_ne!(pkg.embedded_bytes("shaders/slang/square.slang"), square);
}

#[test]
fn a_no_op_build_starts_no_slangc() {
    let pkg = slang_package("");
    pkg.compile(&build(&pkg));
    let starts = slangc_calls(&pkg).len();
    assert_eq!(starts, 3);
    let outcome = pkg.compile(&build(&pkg));
    assert!(outcome.report.ran.is_empty());
    assert_eq!(outcome.report.fresh.len(), 2);
    assert_eq!(
        slangc_calls(&pkg).len(),
        starts,
        "a no-op build started slangc (not even -v)"
    );
    assert!(
        outcome.generated.unwrap().written.is_empty(),
        "no generated file rewritten"
    );
}

#[test]
fn a_slang_and_a_comp_with_one_stem_in_one_directory_collide_and_in_two_directories_both_compile() {
    let pkg = Package::new(&[
        ("Cargo.toml", &format!("{}\n[package.metadata.mcpp.spirv]\ndefines = {{ WORKGROUP = \"8\" }}\n[package.metadata.mcpp.slang]\ndefines = {{ WORKGROUP = \"8\" }}\n", manifest("mixed", "accel = \"vulkan1.2\"\nsources = [\"shaders/**/*.comp\", \"shaders/**/*.slang\"]"))),
        ("shaders/x/scale.comp", SQUARE_COMP),
        ("shaders/x/scale.slang", SQUARE_SLANG),
    ]);
    let refused = pkg.refuse(&build(&pkg));
    assert!(
        refused.contains("two device sources map to one payload name"),
        "{refused}"
    );
    assert!(
        refused.contains("shaders/x/scale.comp")
            && refused.contains("shaders/x/scale.slang")
            && refused.contains("both would be `scale_comp`"),
        "{refused}"
    );
    assert!(refused.contains("rename one of them"), "{refused}");

    std::fs::remove_file(pkg.path("shaders/x/scale.slang")).unwrap();
    pkg.write("shaders/y/scale.slang", SQUARE_SLANG);
    let outcome = pkg.compile(&build(&pkg));
    let mut ran = outcome.report.ran.clone();
    ran.sort();
    assert_eq!(
        ran,
        ["slang:shaders/y/scale.slang", "spirv:shaders/x/scale.comp"]
    );
    let rust = pkg.rust_surface();
    assert!(
        rust.contains("pub mod x") && rust.contains("pub mod y"),
        "{rust}"
    );
    assert_eq!(
        spirv_version(&pkg.embedded_bytes("shaders/y/scale.slang")),
        (1, 5)
    );
    assert_eq!(
        spirv_version(&pkg.embedded_bytes("shaders/x/scale.comp")),
        (1, 5)
    );
    assert_eq!(
        outcome.cargo.warnings().count(),
        0,
        "{:?}",
        outcome.cargo.warnings().collect::<Vec<_>>()
    );
}

#[test]
fn options_are_the_rules_own_and_refused_with_file_line_col_key_and_fix() {
    let pkg = slang_package("optimise = true\n");
    let refused = pkg.refuse(&build(&pkg));
    assert!(
        refused.contains(&at(&pkg, "optimise"))
            && refused.contains("package.metadata.mcpp.slang.optimise"),
        "{refused}"
    );
    assert!(
        refused.contains("the keys valid in [package.metadata.mcpp.slang] are")
            && refused.contains("`optimize`")
            && refused.contains("`entry`"),
        "{refused}"
    );
    let pkg = slang_package("stage = \"computer\"\n");
    let refused = pkg.refuse(&build(&pkg));
    assert!(
        refused.contains("package.metadata.mcpp.slang.stage") && refused.contains("`compute`"),
        "{refused}"
    );
    let pkg = slang_package("entry = \"main()\"\n");
    let refused = pkg.refuse(&build(&pkg));
    assert!(
        refused.contains("`main()` is not a Slang function name")
            && refused.contains(&at(&pkg, "entry"))
            && refused.contains("package.metadata.mcpp.slang.entry"),
        "{refused}"
    );
    pkg.write(
        "Cargo.toml",
        &pkg.read("Cargo.toml")
            .replace("WORKGROUP = \"64\"", "\"WORK GROUP\" = \"64\""),
    );
    let refused = pkg.refuse(&build(&pkg));
    assert!(
        refused.contains("is not a preprocessor macro name")
            && refused.contains("package.metadata.mcpp.slang.defines.WORK GROUP"),
        "{refused}"
    );
    assert!(
        refused.contains("is not a Slang function name"),
        "every problem is reported: {refused}"
    );
    assert_eq!(slangc_calls(&pkg).len(), 0, "refused before slangc runs");

    // A Vulkan version without a known profile names `accel` and the way out.
    let pkg = slang_package("");
    pkg.write(
        "Cargo.toml",
        &pkg.read("Cargo.toml").replace("vulkan1.2", "vulkan2.0"),
    );
    let refused = pkg.refuse(&build(&pkg));
    assert!(
        refused.contains("vulkan2.0")
            && refused.contains("package.metadata.mcpp.accel")
            && refused.contains("[package.metadata.mcpp.slang] profile"),
        "{refused}"
    );
    assert!(
        pkg.compile(build(&pkg).accel("vulkan1.2")).payloads == 2,
        "an --accel with a known version compiles"
    );

    // `entry` names the function; `optimize = true` asks slangc for -O1, which the toolchain
    // package's slangc cannot do (no spirv-opt): its own error is shown.
    let pkg = slang_package("entry = \"scale\"\n");
    pkg.write(
        "shaders/slang/scale.slang",
        &SCALE_SLANG.replace("void main", "void scale"),
    );
    pkg.write(
        "shaders/slang/square.slang",
        &SQUARE_SLANG.replace("void main", "void scale"),
    );
    let outcome = pkg.compile(&build(&pkg));
    assert_eq!(outcome.payloads, 2);
    assert!(slangc_calls(&pkg)[1].contains("-entry scale -stage compute -O0"));
    assert!(
        pkg.embedded_bytes("shaders/slang/scale.slang")
            .windows(5)
            .any(|w| w == b"main\0"),
        "slangc names the SPIR-V entry point main"
    );
    let pkg = slang_package("optimize = true\n");
    let refused = pkg.refuse(&build(&pkg));
    assert!(refused.contains("spirv-opt"), "{refused}");
    assert!(slangc_calls(&pkg)[1].contains("-stage compute -O1 "));
}

/// A package `cargo metadata` accepts, so `cargo mcpp why tool` can find its device cache.
fn why_package() -> Package {
    let pkg = slang_package("");
    pkg.write(
        "Cargo.toml",
        &pkg.read("Cargo.toml").replace(
            "edition = \"2021\"\n",
            "edition = \"2021\"\n[lib]\npath = \"lib.rs\"\n[workspace]\n",
        ),
    );
    pkg.write("lib.rs", "");
    pkg
}

fn why_slangc(pkg: &Package) -> String {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args(["mcpp", "why", "tool", "slangc", "--manifest-path"])
        .arg(pkg.path("Cargo.toml"))
        .arg("--target-dir")
        .arg(pkg.path("target"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    text(&o)
}

#[test]
fn why_tool_slangc_answers_from_the_one_resolver() {
    let pkg = why_package();
    let cache = pkg.path("target/debug/mcpp/slang-pkg");
    let base = || {
        let mut b = build(&pkg);
        b.work_dir(&cache);
        b
    };
    // The builder's choice.
    pkg.compile(&base());
    let why = why_slangc(&pkg);
    assert!(
        why.contains("source:  choice")
            && why.contains("Build::tool(\"slangc\"")
            && why.contains("version: 2026.14.1"),
        "{why}"
    );
    // The rule's variable MCPP_SLANGC (SLANGC unset), after the choices it consulted.
    let mut b = pkg.build();
    b.work_dir(&cache)
        .env_remove("SLANGC")
        .env_remove("MCPP_TOOL_SLANGC")
        .env("MCPP_SLANGC", counting_slangc(&pkg));
    pkg.compile(&b);
    let why = why_slangc(&pkg);
    assert!(
        why.contains("source:  env") && why.contains("the environment variable MCPP_SLANGC="),
        "{why}"
    );
    assert!(
        why.contains("[package.metadata.mcpp.tools] slangc (not in")
            && why.contains("SLANGC (unset)"),
        "{why}"
    );
    // The manifest's choice, with its line.
    pkg.write(
        "Cargo.toml",
        &format!(
            "{}\n[package.metadata.mcpp.tools]\nslangc = {:?}\n",
            pkg.read("Cargo.toml"),
            counting_slangc(&pkg).display().to_string()
        ),
    );
    let mut b = pkg.build();
    b.work_dir(&cache);
    for v in HIDDEN {
        b.env_remove(v);
    }
    pkg.compile(&b);
    let why = why_slangc(&pkg);
    assert!(
        why.contains("source:  choice")
            && why.contains(&format!(
                "{} [package.metadata.mcpp.tools] slangc =",
                at(&pkg, "slangc = ").trim_end_matches(":1")
            )),
        "{why}"
    );
    // Nothing answers: the refusal lists every way, the toolchain package among them, and is recorded.
    pkg.write(
        "Cargo.toml",
        &pkg.read("Cargo.toml")
            .replace("[package.metadata.mcpp.tools]\n", "")
            .replace(
                &format!(
                    "slangc = {:?}\n",
                    counting_slangc(&pkg).display().to_string()
                ),
                "",
            ),
    );
    let mut b = pkg.build();
    b.work_dir(&cache).env("PATH", "/usr/bin:/bin");
    for v in HIDDEN {
        b.env_remove(v);
    }
    let refused = pkg.refuse(&b);
    for way in [
        "no slangc found",
        "SLANGC=/path/to/slangc or MCPP_SLANGC=/path/to/slangc",
        "MCPP_TOOL_SLANGC=/path/to/slangc",
        "4. the toolchain package slang: `cargo mcpp fetch",
    ] {
        assert!(refused.contains(way), "{way}: {refused}");
    }
    let why = why_slangc(&pkg);
    assert!(
        why.contains("source:  none")
            && why.contains("refused:")
            && why.contains("toolchain package slang"),
        "{why}"
    );
}

/// slangc loads a precompiled `mathutil.slang-module` in the import path before any
/// `mathutil.slang` (its depfile names neither the module nor, when the module sits in another
/// directory, the source): replacing the module must change the embedded bytes, and the
/// module shadowing the source is said in a warning.
#[test]
fn a_precompiled_module_in_the_import_path_is_tracked_and_its_shadowing_is_warned() {
    let pkg = slang_package("");
    let slangc = real_slangc();
    let module = |pkg: &Package, factor: &str, rel: &str| {
        let src = pkg.path("module-src/mathutil.slang");
        std::fs::create_dir_all(src.parent().unwrap()).unwrap();
        std::fs::write(&src, MATHUTIL.replace("3.0", factor)).unwrap();
        let out = pkg.path(rel);
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        let status = std::process::Command::new(&slangc)
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .status()
            .unwrap();
        assert!(status.success(), "slangc could not precompile the module");
    };
    let has = |b: &[u8], f: f32| b.windows(4).any(|w| w == f.to_le_bytes());
    pkg.compile(&build(&pkg));
    assert!(has(&pkg.embedded_bytes("shaders/slang/scale.slang"), 3.0));
    // A module beside the source: slangc loads it, not the source.
    module(&pkg, "7.0", "shaders/modules/mathutil.slang-module");
    let outcome = pkg.compile(&build(&pkg));
    assert_eq!(
        outcome.report.ran,
        ["slang:shaders/slang/scale.slang"],
        "the new module reran its importer"
    );
    let seven = pkg.embedded_bytes("shaders/slang/scale.slang");
    assert!(
        has(&seven, 7.0) && !has(&seven, 3.0),
        "the module's code is embedded"
    );
    let warnings: Vec<String> = outcome.cargo.warnings().map(str::to_string).collect();
    assert!(
        warnings.iter().any(|w| w.contains("mathutil.slang-module")
            && w.contains("shadows")
            && w.contains("shaders/modules/mathutil.slang")),
        "no shadowing warning: {warnings:?}"
    );
    // Replacing the module reaches the bytes.
    module(&pkg, "9.0", "shaders/modules/mathutil.slang-module");
    let outcome = pkg.compile(&build(&pkg));
    assert_eq!(
        outcome.report.ran,
        ["slang:shaders/slang/scale.slang"],
        "replacing the module reran its importer"
    );
    let nine = pkg.embedded_bytes("shaders/slang/scale.slang");
    assert!(
        has(&nine, 9.0) && !has(&nine, 7.0),
        "stale bytes after replacing the module"
    );
    // A module only (no source anywhere) in the importer's directory: tracked the same way.
    std::fs::remove_file(pkg.path("shaders/modules/mathutil.slang-module")).unwrap();
    std::fs::remove_file(pkg.path("shaders/modules/mathutil.slang")).unwrap();
    module(&pkg, "11.0", "shaders/slang/mathutil.slang-module");
    let outcome = pkg.compile(&build(&pkg));
    assert!(outcome
        .report
        .ran
        .contains(&"slang:shaders/slang/scale.slang".to_string()));
    assert!(
        !outcome.cargo.warnings().any(|w| w.contains("shadows")),
        "nothing shadowed now"
    );
    module(&pkg, "13.0", "shaders/slang/mathutil.slang-module");
    let outcome = pkg.compile(&build(&pkg));
    assert_eq!(outcome.report.ran, ["slang:shaders/slang/scale.slang"]);
    assert!(
        has(&pkg.embedded_bytes("shaders/slang/scale.slang"), 13.0),
        "stale bytes after replacing a lone module"
    );
}
