//! The WGSL lane: `.wgsl` sources translated by naga in process (no compiler installed) to
//! SPIR-V of the `vulkan` entry's version, accepted by `spirv-val`, run on the first Vulkan
//! device (lavapipe where there is no GPU); `output = "wgsl"` embeds the validated text. The
//! criterion of every rebuild test is the embedded bytes.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Doubles every float of its buffer (binding 0), 64 invocations a workgroup.
const DOUBLE_WGSL: &str = "// Doubles every float of its buffer.\n@group(0) @binding(0) var<storage, read_write> data: array<f32>;\n\n@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) id: vec3<u32>) {\n    if (id.x < arrayLength(&data)) {\n        data[id.x] = 2.0 * data[id.x];\n    }\n}\n";
/// Squares every float of its buffer, with a helper function.
const SQUARE_WGSL: &str = "@group(0) @binding(0) var<storage, read_write> data: array<f32>;\n\nfn square(x: f32) -> f32 { return x * x; }\n\n@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) id: vec3<u32>) {\n    if (id.x < arrayLength(&data)) { data[id.x] = square(data[id.x]); }\n}\n";

/// Two WGSL compute shaders under `accel`, with `more` after the `[package.metadata.mcpp]` body.
fn wgsl_package(accel: &str, sources: &str, more: &str) -> Package {
    Package::new(&[
        (
            "Cargo.toml",
            &format!(
                "{}{more}",
                manifest(
                    "wgsl-pkg",
                    &format!("accel = \"{accel}\"\nsources = {sources}")
                )
            ),
        ),
        ("shaders/double.wgsl", DOUBLE_WGSL),
        ("shaders/square.wgsl", SQUARE_WGSL),
    ])
}

/// The SPIR-V version of a module (`0x00010500` for 1.5), after the magic.
fn spirv_version(bytes: &[u8]) -> (u8, u8) {
    assert_eq!(&bytes[..4], &[0x03, 0x02, 0x23, 0x07], "SPIR-V magic");
    (bytes[6], bytes[5])
}

/// `spirv-val --target-env <env>` accepts `bytes`.
fn spirv_val(bytes: &[u8], env: &str) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.spv");
    std::fs::write(&f, bytes).unwrap();
    let out = Command::new(real_tool("spirv-val"))
        .arg("--target-env")
        .arg(env)
        .arg(&f)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "spirv-val --target-env {env} refused the output: {}",
        text(&out)
    );
}

#[test]
fn wgsl_sources_become_spirv_of_the_vulkan_entrys_version_that_spirv_val_accepts() {
    for (accel, version, env) in [
        ("vulkan1.2", (1, 5), "vulkan1.2"),
        ("vulkan", (1, 0), "vulkan1.0"),
        ("vulkan1.3", (1, 6), "vulkan1.3"),
    ] {
        let pkg = wgsl_package(accel, "[\"shaders/*.wgsl\"]", "");
        let outcome = pkg.compile(&pkg.build());
        let mut ran = outcome.report.ran.clone();
        ran.sort();
        assert_eq!(
            ran,
            ["wgsl:shaders/double.wgsl", "wgsl:shaders/square.wgsl"],
            "{accel}"
        );
        assert_eq!(outcome.payloads, 2);
        assert_eq!(
            pkg.starts("glslangValidator") + pkg.starts("glslc"),
            0,
            "no compiler process"
        );
        for src in ["shaders/double.wgsl", "shaders/square.wgsl"] {
            let bytes = pkg.embedded_bytes(src);
            assert_eq!(spirv_version(&bytes), version, "{accel}: {src}");
            spirv_val(&bytes, env);
        }
        assert_ne!(
            pkg.embedded_bytes("shaders/double.wgsl"),
            pkg.embedded_bytes("shaders/square.wgsl")
        );
        // The same surface as GLSL and Slang: `&[u32]` words, named `<stem>_wgsl`.
        let rust = pkg.rust_surface();
        assert!(
            rust.contains("pub fn double_wgsl()") && rust.contains("pub fn square_wgsl()"),
            "{rust}"
        );
        assert!(rust.contains("pub code: &'static [u32]"), "{rust}");
        // Reproducible: the same source in another package (another path) gives the same bytes.
        let other = wgsl_package(accel, "[\"shaders/*.wgsl\"]", "");
        other.compile(&other.build());
        assert_eq!(
            other.embedded_bytes("shaders/double.wgsl"),
            pkg.embedded_bytes("shaders/double.wgsl"),
            "{accel}"
        );
    }
}

#[test]
fn an_edit_changes_the_embedded_bytes_and_a_no_op_runs_nothing() {
    let pkg = wgsl_package("vulkan1.2", "[\"shaders/*.wgsl\"]", "");
    pkg.compile(&pkg.build());
    let before = pkg.embedded_bytes("shaders/double.wgsl");
    let square = pkg.embedded_bytes("shaders/square.wgsl");

    let outcome = pkg.compile(&pkg.build());
    assert!(
        outcome.report.ran.is_empty(),
        "a no-op ran {:?}",
        outcome.report.ran
    );
    assert_eq!(outcome.report.fresh.len(), 2);
    assert!(
        outcome.generated.unwrap().written.is_empty(),
        "no generated file rewritten"
    );

    edit(
        &pkg.path("shaders/double.wgsl"),
        "2.0 * data[id.x]",
        "3.0 * data[id.x]",
    );
    let outcome = pkg.compile(&pkg.build());
    assert_eq!(outcome.report.ran, ["wgsl:shaders/double.wgsl"]);
    let after = pkg.embedded_bytes("shaders/double.wgsl");
    assert_ne!(before, after, "the edit reached the embedded SPIR-V");
    assert_eq!(pkg.embedded_bytes("shaders/square.wgsl"), square);
    spirv_val(&after, "vulkan1.2");
}

#[test]
fn a_wgsl_problem_is_refused_at_its_file_line_and_column_and_the_other_shader_still_compiles() {
    let pkg = wgsl_package("vulkan1.2", "[\"shaders/*.wgsl\"]", "");
    edit(
        &pkg.path("shaders/double.wgsl"),
        "2.0 * data[id.x]",
        "2.0 * data[id.x] + 1u",
    );
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.starts_with("shaders/double.wgsl does not validate: "),
        "{e}"
    );
    // Line 7, the column of the offending expression, in the file's absolute path.
    let at = format!("--> {}:7:", pkg.path("shaders/double.wgsl").display());
    assert!(e.contains(&at), "{at} in {e}");
    assert!(e.contains("help: fix the shader at the place shown"), "{e}");
    // Keep-going: the other shader was translated and is recorded, fresh next time.
    pkg.write("shaders/double.wgsl", DOUBLE_WGSL);
    let outcome = pkg.compile(&pkg.build());
    assert_eq!(outcome.report.ran, ["wgsl:shaders/double.wgsl"]);

    // A module without an entry point is refused too, naming the file.
    pkg.write(
        "shaders/helpers.wgsl",
        "fn helper(x: f32) -> f32 { return x; }\n",
    );
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.starts_with("shaders/helpers.wgsl has no entry point"),
        "{e}"
    );
}

/// The text a text payload `ident` embeds (its copy, which the Rust surface includes, and one NUL).
fn embedded_text(pkg: &Package, ident: &str) -> String {
    let rust = pkg.rust_surface();
    let at = rust
        .find(&format!("pub fn {ident}() -> TextPayload"))
        .unwrap_or_else(|| panic!("no text payload {ident}:\n{rust}"));
    let lit = &rust[at..][rust[at..].find("include_bytes!(").unwrap() + "include_bytes!(".len()..];
    let path: String = serde_json::from_str(&lit[..lit.find(')').unwrap()]).unwrap();
    let bytes = std::fs::read(path).unwrap();
    String::from_utf8(bytes.strip_suffix(b"\0").unwrap_or(&bytes).to_vec()).unwrap()
}

#[test]
fn output_wgsl_embeds_the_validated_text_and_switching_output_translates_again() {
    let pkg = wgsl_package(
        "vulkan1.2",
        "[{ glob = \"shaders/double.wgsl\", output = \"wgsl\" }, \"shaders/square.wgsl\"]",
        "",
    );
    let outcome = pkg.compile(&pkg.build());
    assert_eq!(outcome.report.ran.len(), 2);
    let rust = pkg.rust_surface();
    assert!(
        rust.contains("pub fn double_wgsl() -> TextPayload"),
        "{rust}"
    );
    assert_eq!(
        embedded_text(&pkg, "double_wgsl"),
        DOUBLE_WGSL,
        "the source as written"
    );
    assert_eq!(
        spirv_version(&pkg.embedded_bytes("shaders/square.wgsl")),
        (1, 5)
    );

    // The table's `output` for every source: square becomes text too; double is fresh.
    pkg.write(
        "Cargo.toml",
        &format!(
            "{}\n[package.metadata.mcpp.wgsl]\noutput = \"wgsl\"\n",
            manifest(
                "wgsl-pkg",
                "accel = \"vulkan1.2\"\nsources = [\"shaders/*.wgsl\"]"
            )
        ),
    );
    let outcome = pkg.compile(&pkg.build());
    assert_eq!(outcome.report.ran, ["wgsl:shaders/square.wgsl"]);
    assert_eq!(embedded_text(&pkg, "square_wgsl"), SQUARE_WGSL);
    // An edit of the source changes the embedded text.
    edit(
        &pkg.path("shaders/square.wgsl"),
        "return x * x;",
        "return x * x * x;",
    );
    let outcome = pkg.compile(&pkg.build());
    assert_eq!(outcome.report.ran, ["wgsl:shaders/square.wgsl"]);
    assert!(embedded_text(&pkg, "square_wgsl").contains("return x * x * x;"));

    // Invalid WGSL is refused under `output = "wgsl"` as well: the text is embedded only once valid.
    edit(&pkg.path("shaders/square.wgsl"), "x * x * x", "x * y");
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.starts_with("shaders/square.wgsl is not valid WGSL: "),
        "{e}"
    );

    // An unknown key or output is refused at its line.
    pkg.write(
        "Cargo.toml",
        &format!(
            "{}\n[package.metadata.mcpp.wgsl]\noutput = \"msl\"\n",
            manifest(
                "wgsl-pkg",
                "accel = \"vulkan1.2\"\nsources = [\"shaders/*.wgsl\"]"
            )
        ),
    );
    let e = pkg.refuse(&pkg.build());
    let line = pkg
        .read("Cargo.toml")
        .lines()
        .position(|l| l.starts_with("output"))
        .unwrap()
        + 1;
    assert!(
        e.contains(&format!("Cargo.toml:{line}:"))
            && e.contains("package.metadata.mcpp.wgsl.output"),
        "{e}"
    );
}

/// `cargo mcpp <args>` in `dir`, with this engine.
fn mcpp(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .arg("mcpp")
        .args(args)
        .current_dir(dir)
        .env("CARGO_MCPP", env!("CARGO_BIN_EXE_cargo-mcpp"))
        .env_remove("MCPP_ACCEL")
        .env_remove("MCPP_NO_ACCEL")
        .output()
        .unwrap()
}

/// The target directory of the other packages the tests build with the installed engine (ash
/// once).
fn target() -> String {
    crate::harness::packages_target().display().to_string()
}

#[test]
fn a_wgsl_compute_shader_runs_on_vulkan_and_doubles_its_buffer() {
    // The crate `cargo mcpp new --lane spirv` makes (ash, the compute dispatch that checks
    // every element), its GLSL shader replaced by the WGSL one.
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-wgsl-")
        .tempdir()
        .unwrap();
    let dep = repo().join("mcpp-build").display().to_string();
    let out = mcpp(
        tmp.path(),
        &[
            "new",
            "wgsl-app",
            "--mcpp-build-path",
            &dep,
            "--lane",
            "spirv",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let dir: PathBuf = tmp.path().join("wgsl-app");
    std::fs::remove_file(dir.join("shaders/double.comp")).unwrap();
    std::fs::write(dir.join("shaders/double.wgsl"), DOUBLE_WGSL).unwrap();
    edit(
        &dir.join("Cargo.toml"),
        "sources = [\"shaders/*.comp\"]",
        "sources = [\"shaders/*.wgsl\"]",
    );
    let main = std::fs::read_to_string(dir.join("src/main.rs")).unwrap();
    assert!(main.contains("shaders::double_comp().code"), "{main}");
    std::fs::write(
        dir.join("src/main.rs"),
        main.replace("double_comp", "double_wgsl")
            .replace("double.comp", "double.wgsl"),
    )
    .unwrap();

    let t = target();
    let build = mcpp(&dir, &["build", "--target-dir", &t]);
    assert!(build.status.success(), "{}", text(&build));
    let run = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["run", "-q", "--target-dir", &t])
        .current_dir(&dir)
        .env("CARGO_MCPP", env!("CARGO_BIN_EXE_cargo-mcpp"))
        .env_remove("MCPP_ACCEL")
        .env_remove("MCPP_NO_ACCEL")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{}", text(&run));
    // The program asserts every element doubled before it prints.
    assert!(
        said.starts_with("double.wgsl (")
            && said.contains("words of SPIR-V) doubled 1024 floats on ")
            && said.contains("y[100] = 200"),
        "{}",
        text(&run)
    );
}
