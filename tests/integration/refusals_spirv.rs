//! The refusal texts of the SPIR-V lane, pinned as one snapshot
//! (`tests/integration/snapshots/integration__refusals_spirv__spirv_refusals.snap`): each bad input's whole text, the
//! temp paths replaced by `[PKG]` (the package) and `[TMP]` (its temp dir). A change of wording
//! shows as a snapshot diff; accept it with `INSTA_UPDATE=always` (or `cargo insta review`).
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::*;

/// One bad input: its name, the `[package.metadata.mcpp]` body and the files.
type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

/// `s/` and a file name of 254 bytes (legal: a name may have 255), a compute shader.
const LONG_NAME: &str = "s/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.comp";

const COMP: &str = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n";

/// The refusal of a package with `[package.metadata.mcpp]` body `mcpp` and `files`, normalised.
fn refusal(mcpp: &str, files: &[(&str, &str)]) -> String {
    package_refusal(mcpp, files, |_| {})
}

#[test]
fn spirv_refusals() {
    let cases: &[Case] = &[
        ("malformed accel", "accel = \"vulkan1.2, cuda12.9+{sm_90\"\nsources = [\"s/*.comp\"]", &[("s/x.comp", COMP)]),
        ("unknown key", "accel = \"vulkan\"\nsource = [\"s/*.comp\"]", &[("s/x.comp", COMP)]),
        ("unknown compiler", "accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.spirv]\ncompiler = \"shaderc\"", &[("s/x.comp", COMP)]),
        (
            "three problems",
            "accel = \"vulkan1.2, cuda+{\"\nsources = [\"s/*.comp\"]\nunknown = 1\n[package.metadata.mcpp.spirv]\ncompilr = \"glslc\"",
            &[("s/x.comp", COMP)],
        ),
        ("no rule claims .metal", "accel = \"vulkan\"\nsources = [\"k/*.metal\"]", &[("k/saxpy.metal", "kernel void k() {}\n")]),
        ("extension without a role", "accel = \"vulkan\"\nsources = [\"s/*\"]", &[("s/orphan.zzz", "x"), ("s/x.comp", COMP)]),
        ("stageless glsl", "accel = \"vulkan\"\nsources = [\"s/**/*\"]", &[("s/x.comp", COMP), ("s/inc/common.glsl", "float f();\n")]),
        ("name collision", "accel = \"vulkan\"\nsources = [\"s/*.comp\"]", &[("s/a-b.comp", COMP), ("s/a_b.comp", COMP)]),
        ("glob matching nothing", "accel = \"vulkan\"\nsources = [\"shaders/*.comp\"]", &[("s/x.comp", COMP)]),
        ("glob leaving the package", "accel = \"vulkan\"\nsources = [\"../*.comp\"]", &[("s/x.comp", COMP)]),
        ("missing include directory", "accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.spirv]\nincludes = [\"nope\"]", &[("s/x.comp", COMP)]),
        ("bad module name", "accel = \"vulkan\"\nsources = [\"s/*.comp\"]\nmodule-name = \"my-app.shaders\"", &[("s/x.comp", COMP)]),
        ("renamed key payloads", "accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.payloads]\nglslang = \"13.1.1\"", &[("s/x.comp", COMP)]),
        ("unknown tool key", "accel = \"vulkan\"\nsources = [\"s/*.comp\"]\ntools = { glslangvalidator = \"/usr/bin/true\" }", &[("s/x.comp", COMP)]),
        ("another backend's constraint", "accel = \"vulkan\"\nsources = [{ glob = \"s/*.comp\", accel = \"cuda12.9+{sm_90}\" }]", &[("s/x.comp", COMP)]),
        ("define name", "accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.spirv]\ndefines = { \"A B\" = \"1\" }", &[("s/x.comp", COMP)]),
        ("vulkan version", "accel = \"vulkan1.9\"\nsources = [\"s/*.comp\"]", &[("s/x.comp", COMP)]),
        ("a file name of 254 bytes", "accel = \"vulkan\"\nsources = [\"s/*.comp\"]", &[(LONG_NAME, COMP)]),
        ("empty target-env", "accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.spirv]\ntarget-env = \"\"", &[("s/x.comp", COMP)]),
        ("a SYCL standard's year as the sycl entry's version, with no SYCL source", "accel = \"vulkan, sycl2020\"\nsources = [\"s/*.comp\"]", &[("s/x.comp", COMP)]),
    ];
    let mut all = String::new();
    for (name, mcpp, files) in cases {
        all.push_str(&format!("===== {name}\n{}\n\n", refusal(mcpp, files)));
    }
    insta::assert_snapshot!("spirv_refusals", all);
}
