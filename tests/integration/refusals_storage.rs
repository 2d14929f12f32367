//! The refusal texts of the storage forms and of the surface's host units, pinned as one
//! snapshot (`tests/integration/snapshots/integration__refusals_storage__storage_refusals.snap`), temp paths redacted.
//! Accept a deliberate change with `INSTA_UPDATE=always` (or `cargo insta review`).
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::*;

/// One bad input: its name, the `[package.metadata.mcpp]` body and the files.
type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

const COMP: &str = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n";

/// The refusal of a package with `[package.metadata.mcpp]` body `mcpp` and `files` (g++ as
/// the host compiler), normalised.
fn refusal(mcpp: &str, files: &[(&str, &str)]) -> String {
    package_refusal(mcpp, files, |b| {
        b.env("CXX", real_tool("g++"));
    })
}

#[test]
fn storage_refusals() {
    let cases: &[Case] = &[
        ("unknown storage", "accel = \"vulkan\"\nsources = [\"s/*.comp\"]\nstorage = \"disk\"", &[("s/x.comp", COMP)]),
        ("storage not a string", "accel = \"vulkan\"\nsources = [\"s/*.comp\"]\nstorage = 1", &[("s/x.comp", COMP)]),
        ("a host unit neither C++ nor C", "accel = \"vulkan\"\nsources = [\"s/*.comp\"]\ncxx-sources = [\"cpp/use.m\"]", &[("s/x.comp", COMP), ("cpp/use.m", "int x;\n")]),
        (
            "an import of a module no unit provides",
            "accel = \"vulkan\"\nsources = [\"s/*.comp\"]\ncxx-sources = [\"cpp/use.cpp\"]",
            &[("s/x.comp", COMP), ("cpp/use.cpp", "import refusals.shaderz;\nint f() { return 0; }\n")],
        ),
        (
            "an import of the surface under modules = false",
            "accel = \"vulkan\"\nsources = [\"s/*.comp\"]\nmodules = false\ncxx-sources = [\"cpp/use.cpp\"]",
            &[("s/x.comp", COMP), ("cpp/use.cpp", "import refusals.shaders;\nint f() { return 0; }\n")],
        ),
        (
            "a C unit including the surface's header under modules = true",
            "accel = \"vulkan\"\nsources = [\"s/*.comp\"]\ncxx-sources = [\"cpp/use.c\"]",
            &[("s/x.comp", COMP), ("cpp/use.c", "#include \"refusals.shaders.h\"\nint f(void) { return 0; }\n")],
        ),
    ];
    let mut all = String::new();
    for (name, mcpp, files) in cases {
        all.push_str(&format!("===== {name}\n{}\n\n", refusal(mcpp, files)));
    }
    insta::assert_snapshot!("storage_refusals", all);
}

/// `storage` per rule, per `sources` entry and per `embed` entry: a value that is no form, or
/// a key where no payload is made (`tests/integration/snapshots/integration__refusals_storage__per_rule_storage_refusals.snap`).
#[test]
fn per_rule_storage_refusals() {
    let cases: &[Case] = &[
        ("a rule's storage that is no form", "accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.spirv]\nstorage = \"disk\"", &[("s/x.comp", COMP)]),
        ("a rule's storage that is not a string", "accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.spirv]\nstorage = true", &[("s/x.comp", COMP)]),
        ("storage for a rule with no source", "accel = \"vulkan\"\nsources = [\"s/*.comp\"]\n[package.metadata.mcpp.hip]\nstorage = \"object\"", &[("s/x.comp", COMP)]),
        ("storage for CUDA objects", "accel = \"vulkan\"\nsources = [\"s/*.comp\", \"k/*.cu\"]\n[package.metadata.mcpp.cuda]\nstorage = \"sidecar\"", &[("s/x.comp", COMP), ("k/x.cu", "__global__ void k() {}\n")]),
        ("storage of a sources entry of CUDA objects", "accel = \"vulkan\"\nsources = [{ glob = \"k/*.cu\", storage = \"object\" }]", &[("k/x.cu", "__global__ void k() {}\n")]),
        ("an embed entry's storage that is no form", "[package.metadata.mcpp.embed]\nfiles = [{ glob = \"d/*\", storage = \"rom\" }]", &[("d/x", "1")]),
    ];
    let mut all = String::new();
    for (name, mcpp, files) in cases {
        all.push_str(&format!("===== {name}\n{}\n\n", refusal(mcpp, files)));
    }
    insta::assert_snapshot!("per_rule_storage_refusals", all);
}
