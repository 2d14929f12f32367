//! What one `sources` entry says about its own files, as a real shader collection needs it:
//! its own target environment (`target-env`: GLSL's `--target-env`, Slang's profile), applied
//! and keyed into the fingerprint, refused where the rule has none, and a warning where a
//! constraint names another Vulkan version than the build compiles for; and the exclusion
//! forms (`exclude` in the entry, `"!pattern"` entries), so a glob reaching `.glsl` includes can
//! leave them out. Real glslangValidator and slangc; the criterion is the embedded bytes.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::*;

const PLAIN_COMP: &str = "#version 450\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer Data { float data[]; };\nvoid main() { data[gl_GlobalInvocationID.x] *= 2.0; }\n";
const SLANG: &str = "RWStructuredBuffer<float> data;\n[shader(\"compute\")]\n[numthreads(1, 1, 1)]\nvoid main(uint3 id : SV_DispatchThreadID) { data[id.x] = data[id.x] * 2.0; }\n";

/// The SPIR-V version of a module (`(1, 5)`), from its version word.
fn spirv_version(bytes: &[u8]) -> (u8, u8) {
    assert_eq!(&bytes[..4], &[0x03, 0x02, 0x23, 0x07], "SPIR-V magic");
    (bytes[6], bytes[5])
}

fn package(sources: &str) -> Package {
    Package::new(&[
        ("Cargo.toml", &format!("{}\n[package.metadata.mcpp.spirv]\nincludes = [\"shaders/include\"]\ndefines = {{ WORKGROUP = \"8\" }}\n", manifest("per-entry", &format!("accel = \"vulkan1.2\"\nsources = {sources}")))),
        ("shaders/old/a.comp", PLAIN_COMP),
        ("shaders/rt/b.comp", PLAIN_COMP),
        ("shaders/include/common.glsl", COMMON_GLSL),
        ("shaders/rt/scale.comp", SCALE_COMP),
        ("shaders/sl/c.slang", SLANG),
    ])
}

fn build(pkg: &Package) -> cargo_mcpp::Build {
    let mut b = pkg.build();
    for v in ["SLANGC", "MCPP_SLANGC", "MCPP_TOOL_SLANGC"] {
        b.env_remove(v);
    }
    b.tool("slangc", real_slangc());
    b
}

#[test]
fn an_entry_sets_its_files_target_environment_and_a_change_recompiles_them() {
    let pkg = package("[{ glob = \"shaders/old/*.comp\", target-env = \"vulkan1.0\" }, \"shaders/rt/b.comp\", { glob = \"shaders/sl/*.slang\", target-env = \"spirv_1_3\" }]");
    let out = pkg.compile(&build(&pkg));
    assert!(
        !out.cargo
            .warnings()
            .any(|w| w.contains("does not set their target")),
        "nothing unapplied"
    );
    assert_eq!(
        spirv_version(&pkg.embedded_bytes("shaders/old/a.comp")),
        (1, 0),
        "the entry's vulkan1.0"
    );
    assert_eq!(
        spirv_version(&pkg.embedded_bytes("shaders/rt/b.comp")),
        (1, 5),
        "the build's vulkan1.2"
    );
    assert_eq!(
        spirv_version(&pkg.embedded_bytes("shaders/sl/c.slang")),
        (1, 3),
        "the entry's Slang profile"
    );
    // The entry's environment is in the fingerprint: a change recompiles exactly its files.
    pkg.write(
        "Cargo.toml",
        &pkg.read("Cargo.toml")
            .replace("target-env = \"vulkan1.0\"", "target-env = \"vulkan1.1\""),
    );
    let out = pkg.compile(&build(&pkg));
    assert_eq!(out.report.ran, ["spirv:shaders/old/a.comp"]);
    assert_eq!(
        spirv_version(&pkg.embedded_bytes("shaders/old/a.comp")),
        (1, 3)
    );
}

#[test]
fn a_constraint_that_is_not_a_target_is_said_and_a_target_env_the_rule_cannot_apply_is_refused() {
    // `accel = "vulkan1.0"` inside a vulkan1.2 build selects the files and compiles them at 1.2:
    // said, with the way to compile them for 1.0.
    let pkg = package("[{ glob = \"shaders/old/*.comp\", accel = \"vulkan1.0\" }]");
    let out = pkg.compile(&build(&pkg));
    let warnings: Vec<&str> = out.cargo.warnings().collect();
    assert!(
        warnings.iter().any(|w| w.contains("sources entry 'shaders/old/*.comp' is constrained to vulkan1.0, and this build compiles its files for vulkan1.2") && w.contains("target-env = \"vulkan1.0\"")),
        "{warnings:?}"
    );
    assert_eq!(
        spirv_version(&pkg.embedded_bytes("shaders/old/a.comp")),
        (1, 5)
    );
    // With target-env the constraint and the target agree: no warning, 1.0 bytes.
    let pkg = package(
        "[{ glob = \"shaders/old/*.comp\", accel = \"vulkan1.0\", target-env = \"vulkan1.0\" }]",
    );
    let out = pkg.compile(&build(&pkg));
    assert!(!out
        .cargo
        .warnings()
        .any(|w| w.contains("does not set their target")));
    assert_eq!(
        spirv_version(&pkg.embedded_bytes("shaders/old/a.comp")),
        (1, 0)
    );
    // A rule with one target per build: refused naming the entry's key.
    let pkg = package("[{ glob = \"shaders/*.wgsl\", target-env = \"vulkan1.0\" }]");
    pkg.write(
        "shaders/w.wgsl",
        "@compute @workgroup_size(1) fn main() {}\n",
    );
    let e = pkg.refuse(&build(&pkg));
    assert!(e.contains("sets target-env \"vulkan1.0\" for shaders/w.wgsl, and the wgsl rule has one target per build") && e.contains("package.metadata.mcpp.sources[0].target-env"), "{e}");
    let pkg = package("[{ glob = \"shaders/old/*.comp\", target-env = \"\" }]");
    let e = pkg.refuse(&build(&pkg));
    assert!(e.contains("names no target environment"), "{e}");
}

#[test]
fn exclusions_leave_include_files_out_of_a_glob() {
    // Without an exclusion, a glob reaching the `.glsl` include is refused (it has no stage).
    let pkg = package("[\"shaders/**/*.*\"]");
    std::fs::remove_dir_all(pkg.path("shaders/sl")).unwrap();
    let e = pkg.refuse(&build(&pkg));
    assert!(e.contains("common.glsl"), "{e}");
    // `"!pattern"`, gitignore's form, leaves it out of every entry.
    pkg.write(
        "Cargo.toml",
        &pkg.read("Cargo.toml").replace(
            "sources = [\"shaders/**/*.*\"]",
            "sources = [\"shaders/**/*.*\", \"!shaders/include/**\"]",
        ),
    );
    let out = pkg.compile(&build(&pkg));
    assert_eq!(out.payloads, 3, "a.comp, b.comp, scale.comp");
    // `exclude` in the entry, Cargo's form; the include still reaches its includer.
    pkg.write("Cargo.toml", &pkg.read("Cargo.toml").replace("sources = [\"shaders/**/*.*\", \"!shaders/include/**\"]", "sources = [{ glob = \"shaders/**/*.*\", exclude = [\"shaders/include/*.glsl\", \"shaders/old/**\"] }]"));
    let out = pkg.compile(&build(&pkg));
    assert_eq!(out.payloads, 2, "b.comp and scale.comp");
    let before = pkg.embedded_bytes("shaders/rt/scale.comp");
    pkg.write(
        "shaders/include/common.glsl",
        &COMMON_GLSL.replace("3.0", "5.0"),
    );
    let out = pkg.compile(&build(&pkg));
    assert_eq!(out.report.ran, ["spirv:shaders/rt/scale.comp"]);
    assert_ne!(pkg.embedded_bytes("shaders/rt/scale.comp"), before);
    // Everything excluded: refused, not an empty build.
    pkg.write(
        "Cargo.toml",
        &pkg.read("Cargo.toml")
            .replace("\"shaders/old/**\"]", "\"shaders/**\"]"),
    );
    let e = pkg.refuse(&build(&pkg));
    assert!(
        e.contains("every file sources entry 'shaders/**/*.*' matches is excluded"),
        "{e}"
    );
}
