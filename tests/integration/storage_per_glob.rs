//! Storage per rule, per `sources` entry and per `embed` entry: the most specific
//! `storage` wins, one surface mixes the forms, and switching one glob's storage rewrites the
//! surface without recompiling a shader, leaving no stale bytes: after each switch a program
//! compiled against the surface reads the bytes a clean build embeds.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::*;

/// Shaders `a/scale.comp` (entry storage `a`), `b/scale.comp` (the spirv rule's `object`) and
/// the data file `d/blob.bin` (the package's `header`).
fn package(a: &str) -> Package {
    let mcpp = format!("accel = \"vulkan1.2\"\nsources = [{{ glob = \"shaders/a/*.comp\", storage = \"{a}\" }}, \"shaders/b/*.comp\"]\ncxx-sources = []");
    let cargo = format!(
        "{}\n[package.metadata.mcpp.spirv]\ncompiler = \"glslang\"\nstorage = \"object\"\nincludes = [\"shaders/include\"]\ndefines = {{ WORKGROUP = \"64\" }}\n[package.metadata.mcpp.embed]\nfiles = [\"d/*.bin\"]\n",
        manifest("mixed-app", &mcpp)
    );
    Package::new(&[
        ("Cargo.toml", &cargo),
        ("shaders/include/common.glsl", COMMON_GLSL),
        ("shaders/a/scale.comp", SCALE_COMP),
        ("shaders/b/scale.comp", SQUARE_COMP),
        ("d/blob.bin", "BLOB"),
    ])
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// What the program prints: the words of both shaders and the blob, as hex.
fn program(a_sidecar: bool) -> String {
    let a = if a_sidecar {
        "shaders::a::scale_comp().unwrap()"
    } else {
        "shaders::a::scale_comp()"
    };
    format!(
        "fn hex(b: &[u8]) -> String {{ b.iter().map(|x| format!(\"{{x:02x}}\")).collect() }}\n\
         fn words(p: shaders::Payload) -> String {{ hex(&p.code.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>()) }}\n\
         fn main() {{ println!(\"{{}} {{}} {{}}\", words({a}), words(shaders::b::scale_comp()), hex(shaders::blob_bin().bytes)); }}\n"
    )
}

fn set_a(pkg: &Package, from: &str, to: &str) {
    edit(
        &pkg.path("Cargo.toml"),
        &format!("storage = \"{from}\" }}"),
        &format!("storage = \"{to}\" }}"),
    );
}

#[test]
fn each_payload_has_its_most_specific_storage_and_switching_one_glob_recompiles_no_shader() {
    let pkg = package("sidecar");
    let mut b = pkg.build();
    b.env("CXX", real_tool("g++"));
    let exe = pkg.out_dir().join("artifacts/prog");
    let mut before = "sidecar";
    for (step, storage) in ["sidecar", "object", "header", "sidecar"]
        .into_iter()
        .enumerate()
    {
        if step > 0 {
            set_a(&pkg, before, storage);
        }
        before = storage;
        let outcome = pkg.compile(&b);
        let rust = pkg.rust_surface();
        assert!(
            rust.contains("/// `shaders/b/scale.comp` (object storage)."),
            "{rust}"
        );
        assert_eq!(
            rust.contains("/// `shaders/a/scale.comp` (sidecar storage)."),
            storage == "sidecar",
            "{rust}"
        );
        assert_eq!(
            rust.contains("/// `shaders/a/scale.comp` (object storage)."),
            storage == "object",
            "{rust}"
        );
        assert!(
            rust.contains("/// `d/blob.bin`: its bytes, 16-byte aligned."),
            "the package's header storage: {rust}"
        );
        let json = std::fs::read_to_string(pkg.out_dir().join("mcpp-sidecars.json")).unwrap();
        assert_eq!(
            json.contains("a/scale_comp.spv"),
            storage == "sidecar",
            "{storage}: {json}"
        );
        assert!(!json.contains("b/scale_comp"), "{json}");
        // The bytes a clean build of the same manifest embeds.
        let clean = package(storage);
        let mut cb = clean.build();
        cb.env("CXX", real_tool("g++"));
        clean.compile(&cb);
        let payload = |p: &Package, s: &str| {
            std::fs::read(
                p.out_dir()
                    .join(format!("mcpp/payloads/{s}/scale_comp.spv")),
            )
            .unwrap()
        };
        let want = format!(
            "{} {} {}\n",
            hex(&payload(&clean, "a")),
            hex(&payload(&clean, "b")),
            hex(b"BLOB")
        );
        let out =
            run_rust_surface_program(&pkg, &outcome, &program(storage == "sidecar"), &exe, &[]);
        assert!(out.status.success(), "{storage}: {}", text(&out));
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            want,
            "step {step}: {storage}"
        );
        // The shaders were compiled once, by the first build: a storage switch compiles none.
        assert_eq!(
            pkg.compiles("glslangValidator").len(),
            2,
            "step {step}: {:#?}",
            pkg.compiles("glslangValidator")
        );
    }
}
