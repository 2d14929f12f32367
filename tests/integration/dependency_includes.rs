//! A dependency's shader includes, the Cargo way: a library member with `links` and
//! `export-includes` hands its include directories to the build scripts of its dependents
//! (`DEP_<LINKS>_MCPP_INCLUDE`); a member naming it in `include-from` compiles GLSL `#include`s
//! and Slang `import`s from there, and an edit to the library's header changes the dependent's
//! embedded bytes. `cargo mcpp build` of a two-member workspace, real glslangValidator and slangc.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::{repo, text, COMMON_GLSL, SCALE_COMP};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MATHUTIL: &str =
    "module mathutil;\npublic float transform(float x) { return x * 3.0 + 1.0; }\n";
const SCALE_SLANG: &str = "import mathutil;\nRWStructuredBuffer<float> data;\n[shader(\"compute\")]\n[numthreads(64, 1, 1)]\nvoid main(uint3 id : SV_DispatchThreadID) { data[id.x] = transform(data[id.x]); }\n";

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// `<tmp>/ws`: `lib` (links `shaderlib`, exports `shaders/include`) and `app` (depends on it,
/// `include-from = ["shaderlib"]`, a `.comp` including `common.glsl` and a `.slang` importing
/// `mathutil`, both only in the library).
fn workspace(tmp: &Path) -> PathBuf {
    let ws = tmp.join("ws");
    let build_dep = format!(
        "mcpp-build = {{ path = {:?} }}",
        repo().join("mcpp-build").display().to_string()
    );
    write(
        &ws,
        "Cargo.toml",
        "[workspace]\nmembers = [\"lib\", \"app\"]\nresolver = \"2\"\n",
    );
    write(
        &ws,
        "lib/Cargo.toml",
        &format!("[package]\nname = \"shaderlib\"\nversion = \"0.1.0\"\nedition = \"2021\"\nlinks = \"shaderlib\"\n\n[build-dependencies]\n{build_dep}\n\n[package.metadata.mcpp]\nexport-includes = [\"shaders/include\"]\n"),
    );
    write(
        &ws,
        "lib/build.rs",
        "fn main() {\n    mcpp_build::build();\n}\n",
    );
    write(&ws, "lib/src/lib.rs", "");
    write(&ws, "lib/shaders/include/common.glsl", COMMON_GLSL);
    write(&ws, "lib/shaders/include/mathutil.slang", MATHUTIL);
    write(
        &ws,
        "app/Cargo.toml",
        &format!("[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nshaderlib = {{ path = \"../lib\" }}\n\n[build-dependencies]\n{build_dep}\n\n[package.metadata.mcpp]\naccel = \"vulkan1.2\"\nsources = [\"shaders/*.comp\", \"shaders/*.slang\"]\ninclude-from = [\"shaderlib\"]\n\n[package.metadata.mcpp.spirv]\ndefines = {{ WORKGROUP = \"8\" }}\n"),
    );
    write(
        &ws,
        "app/build.rs",
        "fn main() {\n    mcpp_build::build();\n}\n",
    );
    write(&ws, "app/src/lib.rs", "");
    write(&ws, "app/shaders/scale.comp", SCALE_COMP);
    write(&ws, "app/shaders/blend.slang", SCALE_SLANG);
    ws
}

fn target() -> PathBuf {
    repo().join("target/dependency-includes")
}

fn mcpp_build(ws: &Path) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args(["mcpp", "build", "--workspace", "--manifest-path"])
        .arg(ws.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target())
        .env("SLANGC", harness::real_slangc())
        .env_remove("MCPP_ACCEL")
        .env_remove("MCPP_NO_ACCEL")
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo mcpp build: {}", text(&out));
    out
}

/// The bytes of `app`'s payload file `name` (`OUT_DIR/mcpp/payloads/<name>`) of the newest build.
fn app_payload(name: &str) -> Vec<u8> {
    let build = target().join("debug/build");
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(&build)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("app-"))
        .map(|e| e.path().join("out/mcpp/payloads").join(name))
        .filter(|p| p.is_file())
        .map(|p| (std::fs::metadata(&p).unwrap().modified().unwrap(), p))
        .collect();
    found.sort();
    let (_, newest) = found
        .pop()
        .unwrap_or_else(|| panic!("no payload {name} under {}", build.display()));
    std::fs::read(newest).unwrap()
}

fn has(bytes: &[u8], f: f32) -> bool {
    bytes.windows(4).any(|w| w == f.to_le_bytes())
}

#[test]
fn a_dependency_exports_its_include_directories_and_an_edit_there_reaches_the_dependents_bytes() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-dep-inc-")
        .tempdir()
        .unwrap();
    let ws = workspace(tmp.path());
    mcpp_build(&ws);
    let comp = app_payload("scale_comp.spv");
    let slang = app_payload("blend_comp.spv");
    assert!(
        has(&comp, 3.0) && has(&slang, 3.0),
        "the library's header and module were compiled in"
    );
    // An edit to the library's header and module: the dependent's bytes follow.
    write(
        &ws,
        "lib/shaders/include/common.glsl",
        &COMMON_GLSL.replace("3.0", "5.0"),
    );
    write(
        &ws,
        "lib/shaders/include/mathutil.slang",
        &MATHUTIL.replace("3.0", "7.0"),
    );
    mcpp_build(&ws);
    let (comp2, slang2) = (app_payload("scale_comp.spv"), app_payload("blend_comp.spv"));
    assert!(
        has(&comp2, 5.0) && !has(&comp2, 3.0),
        "stale GLSL bytes after the library's header changed"
    );
    assert!(
        has(&slang2, 7.0) && !has(&slang2, 3.0),
        "stale Slang bytes after the library's module changed"
    );
    // The dependent without the dependency: refused naming the key and the way out.
    let manifest = ws.join("app/Cargo.toml");
    let text_before = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text_before.replace("shaderlib = { path = \"../lib\" }\n", ""),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args(["mcpp", "build", "-p", "app", "--manifest-path"])
        .arg(ws.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target())
        .env("SLANGC", harness::real_slangc())
        .env_remove("MCPP_ACCEL")
        .env_remove("MCPP_NO_ACCEL")
        .output()
        .unwrap();
    let said = text(&out);
    assert!(!out.status.success());
    assert!(
        said.contains(
            "no dependency exports include directories under the `links` name `shaderlib`"
        ) && said.contains("DEP_SHADERLIB_MCPP_INCLUDE")
            && said.contains("package.metadata.mcpp.include-from[0]"),
        "{said}"
    );
}

#[test]
fn an_export_without_links_is_refused_before_cargo_starts() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-dep-inc-")
        .tempdir()
        .unwrap();
    let ws = workspace(tmp.path());
    let manifest = ws.join("lib/Cargo.toml");
    let t = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, t.replace("links = \"shaderlib\"\n", "")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args(["mcpp", "build", "-p", "shaderlib", "--manifest-path"])
        .arg(ws.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target())
        .output()
        .unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        said.contains("`export-includes` needs `links` in [package]")
            && said.contains("add `links = \"shaderlib\"`"),
        "{said}"
    );
}

/// The CUDA rule takes the same directories (here `DEP_SHADERLIB_MCPP_INCLUDE` as cargo would
/// set it, with the real nvcc): the header is read through them, watched, and an edit to it
/// changes the object.
#[test]
fn a_cuda_kernel_includes_a_dependencys_header_and_an_edit_there_changes_the_object() {
    let pkg = harness::Package::new(&[(
        "kernels/k.cu",
        "#include \"factor.cuh\"\n__global__ void k(float* y) { y[threadIdx.x] *= FACTOR; }\n",
    )]);
    pkg.write("Cargo.toml", &harness::manifest("dep-cuda", "accel = \"cuda13.0+{sm_80}\"\nsources = [\"kernels/*.cu\"]\ninclude-from = [\"shaderlib\"]"));
    let lib = pkg.dir.path().join("lib/shaders/include");
    write(&lib, "factor.cuh", "#define FACTOR 3.0f\n");
    let build = || {
        let mut b = pkg.build();
        for v in [
            "NVCC",
            "MCPP_NVCC",
            "MCPP_TOOL_NVCC",
            "CUDA_HOME",
            "CUDAHOSTCXX",
            "NVCC_CCBIN",
            "TARGET",
            "HOST",
        ] {
            b.env_remove(v);
        }
        b.env("CUDA_PATH", harness::cuda13())
            .env("MCPP_LAUNCHER", "none")
            .env("DEP_SHADERLIB_MCPP_INCLUDE", &lib);
        b
    };
    let object = |o: &cargo_mcpp::pipeline::Outcome| {
        o.report
            .outputs
            .iter()
            .find(|(p, _)| {
                p.to_string_lossy().ends_with(".o") && p.to_string_lossy().contains("k.cu")
            })
            .map(|(_, h)| h.clone())
            .expect("the kernel's object")
    };
    let first = pkg.compile(&build());
    let lines = first.cargo.lines();
    assert!(
        lines.contains(&"cargo::rerun-if-env-changed=DEP_SHADERLIB_MCPP_INCLUDE".to_string()),
        "{lines:#?}"
    );
    assert!(
        lines.contains(&format!(
            "cargo::rerun-if-changed={}",
            lib.join("factor.cuh").display()
        )),
        "{lines:#?}"
    );
    write(&lib, "factor.cuh", "#define FACTOR 5.0f\n");
    let second = pkg.compile(&build());
    assert!(
        second.report.ran.contains(&"cuda:kernels/k.cu".to_string()),
        "{:?}",
        second.report.ran
    );
    assert_ne!(
        object(&second),
        object(&first),
        "stale object after the dependency's header changed"
    );
}

/// The HIP rule takes them too (argv-verified with the recording hipcc): `-I<dependency dir>`
/// after the rule's own includes.
#[test]
fn a_hip_compile_searches_a_dependencys_include_directory_after_its_own() {
    let (tmp, pkg) = harness::fixture("hip-island");
    let lib = tmp.path().join("lib/shaders/include");
    std::fs::create_dir_all(&lib).unwrap();
    harness::edit(
        &pkg.join("Cargo.toml"),
        "sources = [\"kernels/*.hip\"]\n",
        "sources = [\"kernels/*.hip\"]\ninclude-from = [\"shaderlib\"]\n",
    );
    let (root, hipcc) = harness::fake_rocm(tmp.path());
    harness::hip_build(tmp.path(), &pkg, &root)
        .accel("hip5.2+{gfx90a}")
        .env("DEP_SHADERLIB_MCPP_INCLUDE", &lib)
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let call = hipcc
        .calls()
        .into_iter()
        .find(|c| c.names("kernels/scale.hip"))
        .expect("scale.hip compiled");
    let dep = format!("-I{}", lib.display());
    let at = call
        .args
        .iter()
        .position(|a| *a == dep)
        .unwrap_or_else(|| panic!("no {dep}: {:?}", call.args));
    let own = call
        .args
        .iter()
        .position(|a| a.starts_with("-I") && a.ends_with("/include") && *a != dep);
    assert!(
        own.is_none_or(|o| o < at),
        "the package's own includes first: {:?}",
        call.args
    );
}
