//! `cargo check`, `cargo doc` and `DOCS_RS`: `cargo check` runs the device phase as `cargo build` does (what `cc` and `bindgen`
//! users expect: cargo runs the same build script for both and shares its output, so a later
//! `cargo build` finds it done), and under `DOCS_RS` `cargo doc` starts no device compiler while
//! the surface is still generated.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

mod harness;

use harness::text;
use std::process::{Command, Output};

fn cargo(pkg: &harness::Package, args: &[&str], docs_rs: bool) -> Output {
    cargo_with(pkg, args, docs_rs, &[])
}

/// [`cargo`] with further environment variables.
fn cargo_with(
    pkg: &harness::Package,
    args: &[&str],
    docs_rs: bool,
    vars: &[(&str, &str)],
) -> Output {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args(args)
        .arg("--manifest-path")
        .arg(pkg.path("Cargo.toml"))
        .arg("--target-dir")
        .arg(pkg.dir.path().join("target"));
    cmd.env("GLSLANG_VALIDATOR", pkg.counting_tool("glslangValidator"))
        .env("MCPP_HOME", pkg.dir.path().join("mcpp-home"))
        .env("CARGO_MCPP", env!("CARGO_BIN_EXE_cargo-mcpp"))
        .env_remove("MCPP_ACCEL")
        .env_remove("MCPP_NO_ACCEL");
    if docs_rs {
        cmd.env("DOCS_RS", "1");
    } else {
        cmd.env_remove("DOCS_RS");
    }
    cmd.envs(vars.iter().copied());
    cmd.output().unwrap()
}

#[test]
fn check_compiles_the_device_code_once_for_build_and_docs_rs_compiles_none() {
    let pkg = harness::client_package(
        "check-pkg",
        "",
        "//! The crate.\nmod shaders { include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\")); }\n/// The words of the shader.\npub fn words() -> usize { shaders::a::scale_comp().code.len() }\nfn main() { println!(\"{}\", words()); }\n",
    );
    let compiles = || pkg.compiles("glslangValidator").len();

    let out = cargo(&pkg, &["check"], false);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        compiles(),
        2,
        "cargo check compiles the device code (as cc does): {}",
        text(&out)
    );
    let out = cargo(&pkg, &["build"], false);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        compiles(),
        2,
        "cargo build after cargo check compiles nothing again: {}",
        text(&out)
    );

    // docs.rs: a changed shader, yet no compiler runs; the surface (empty payloads) documents.
    let shader = pkg.path("shaders/b/scale.comp");
    std::fs::write(
        &shader,
        std::fs::read_to_string(&shader)
            .unwrap()
            .replace("data[i] * data[i]", "data[i] + data[i]"),
    )
    .unwrap();
    let out = cargo(&pkg, &["doc", "--no-deps"], true);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        compiles(),
        2,
        "DOCS_RS: no device compiler runs: {}",
        text(&out)
    );
    assert!(
        pkg.dir
            .path()
            .join("target/doc/check_pkg/index.html")
            .is_file(),
        "{}",
        text(&out)
    );
}

#[test]
fn docs_rs_neither_resolves_nor_refuses_the_launcher() {
    let pkg = harness::client_package("doc-launcher", "launcher = \"tools/absent-launcher\"\n", "//! The crate.\nmod shaders { include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\")); }\nfn main() { let _ = shaders::a::scale_comp(); }\n");
    let out = cargo(&pkg, &["doc", "--no-deps"], true);
    assert!(
        out.status.success(),
        "DOCS_RS: no compiler runs, so no launcher is needed: {}",
        text(&out)
    );
    let out = cargo(&pkg, &["build"], false);
    assert!(
        !out.status.success() && text(&out).contains("absent-launcher"),
        "a build still refuses it: {}",
        text(&out)
    );
    // The empty accelerator set of a shader crate compiles nothing either: no launcher needed.
    let out = cargo_with(
        &pkg,
        &["doc", "--no-deps"],
        false,
        &[("MCPP_NO_ACCEL", "1")],
    );
    assert!(
        out.status.success(),
        "MCPP_NO_ACCEL=1 cargo doc: no compiler runs, so no launcher is needed: {}",
        text(&out)
    );
    // Host C++ still compiles under MCPP_NO_ACCEL: there the launcher is used, so it is refused.
    pkg.write("cpp/one.cpp", "extern \"C\" int one() { return 1; }\n");
    let manifest = pkg.read("Cargo.toml");
    pkg.write(
        "Cargo.toml",
        &manifest.replace("launcher = ", "cxx-sources = [\"cpp/*.cpp\"]\nlauncher = "),
    );
    let out = cargo_with(
        &pkg,
        &["doc", "--no-deps"],
        false,
        &[("MCPP_NO_ACCEL", "1")],
    );
    assert!(
        !out.status.success() && text(&out).contains("absent-launcher"),
        "a host C++ compile still needs it: {}",
        text(&out)
    );
}
