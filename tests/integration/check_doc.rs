//! `cargo check`, `cargo doc` and `DOCS_RS`: `cargo check` runs the device phase as `cargo build` does (what `cc` and `bindgen`
//! users expect: cargo runs the same build script for both and shares its output, so a later
//! `cargo build` finds it done), and under `DOCS_RS` `cargo doc` starts no device compiler while
//! the surface is still generated.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;

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

/// docs.rs emulated for a user crate in each form `cargo mcpp new` writes, with no engine and
/// no toolkit anywhere: no `CARGO_MCPP`, a `CARGO_HOME` without `bin/` (its registry a link to
/// this machine's, offline), a `PATH` holding only cargo, rustc, rustdoc, the C/C++ compilers, no
/// tool variable. `DOCS_RS=1 cargo doc` with the features `[package.metadata.docs.rs]` names
/// passes, and the documentation has the generated surface as under `--no-accel` (docs.rs
/// compiles no device code): the shader module, and the island's Rust bindings.
#[test]
fn docs_rs_documents_a_user_crate_in_every_recommended_form_with_no_engine_and_no_toolkit() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-docs-rs-")
        .tempdir()
        .unwrap();
    // The bare home and target directory the other builds with nothing installed share: the
    // engine's dependencies compile once for all of them.
    let home = harness::bare_cargo_home();
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    // The C and C++ compilers of a Rust build (the cc crate's; an island's CPU fallback is
    // host C++), no device toolkit.
    for tool in ["cargo", "rustc", "rustdoc", "cc", "c++", "ld", "as"] {
        std::os::unix::fs::symlink(harness::real_tool(tool), bin.join(tool)).unwrap();
    }
    let target = harness::in_process_target();
    // The device caches of an earlier run (other temp paths) are not this run's; the other
    // packages' caches in the shared directory are not this test's.
    for package in ["docs-app", "docs-lib", "docs-kernels"] {
        let _ = std::fs::remove_dir_all(target.join("debug/mcpp").join(package));
    }
    // (`cargo mcpp new` arguments, the crate, the surface items documented: each page and a
    // text it holds)
    let not_built = "not built in this build (accelerator set none";
    // (arguments, crate, [(page, text)])
    type Form<'a> = (&'a [&'a str], &'a str, &'a [(&'a str, &'a str)]);
    let forms: [Form; 3] = [
        (
            &["docs-app", "--lane", "spirv"],
            "docs_app",
            &[
                ("shaders/fn.all.html", "fn all"),
                ("shaders/fn.double_comp.html", not_built),
            ],
        ),
        (
            &["docs-lib", "--lib", "--lane", "spirv"],
            "docs_lib",
            &[
                ("shaders/fn.all.html", "fn all"),
                ("shaders/fn.double_comp.html", not_built),
            ],
        ),
        (
            &["docs-kernels", "--lib", "--island"],
            "docs_kernels",
            &[("kernels/fn.scale_run.html", "fn scale_run")],
        ),
    ];
    for (args, krate, items) in forms {
        let out = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
            .args(["mcpp", "new"])
            .args(args)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let dir = tmp.path().join(args[0]);
        // The example program's ash is left out (this machine's registry may not have it):
        // the build dependency is what is tried here.
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let manifest: String = manifest
            .lines()
            .filter(|l| !l.starts_with("ash = "))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(dir.join("Cargo.toml"), format!("{manifest}\n[workspace]\n")).unwrap();
        let _ = std::fs::remove_dir_all(dir.join("examples"));
        if dir.join("src/main.rs").exists() {
            std::fs::write(
                dir.join("src/main.rs"),
                "//! The program.\nmod shaders {\n    include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\"));\n}\nfn main() {\n    println!(\"{}\", shaders::all().len());\n}\n",
            )
            .unwrap();
        }
        // What docs.rs passes: the features of [package.metadata.docs.rs].
        let docs_rs: toml::Table = toml::from_str(&manifest).unwrap();
        let features: Vec<String> = docs_rs
            .get("package")
            .and_then(|p| p.get("metadata"))
            .and_then(|m| m.get("docs"))
            .and_then(|d| d.get("rs"))
            .and_then(|d| d.get("features"))
            .and_then(|f| f.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|f| f.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let mut cmd = Command::new(bin.join("cargo"));
        cmd.args(["doc", "--no-deps", "--offline", "--target-dir"])
            .arg(&target)
            .current_dir(&dir)
            .env_clear()
            .env("PATH", &bin)
            .env("HOME", std::env::var_os("HOME").unwrap())
            .env("CARGO_HOME", &home)
            .env("MCPP_HOME", tmp.path().join("mcpp-home"))
            .env("DOCS_RS", "1");
        for v in ["RUSTUP_HOME", "RUSTUP_TOOLCHAIN"] {
            if let Some(value) = std::env::var_os(v) {
                cmd.env(v, value);
            }
        }
        if !features.is_empty() {
            cmd.arg("--features").arg(features.join(","));
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        // The shader's accessor is documented, empty, and says why (as under `--no-accel`).
        for (item, holds) in items {
            let page = std::fs::read_to_string(target.join("doc").join(krate).join(item))
                .unwrap_or_else(|e| {
                    panic!("{args:?}: no {item} in the docs ({e}): {}", text(&out))
                });
            assert!(
                page.contains(holds),
                "{args:?}: {item} does not say `{holds}`:\n{page}"
            );
        }
        assert!(!home.join("bin").exists());
    }
}
