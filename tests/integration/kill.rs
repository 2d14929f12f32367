//! `kill -9` during a device compile: a real package built by plain `cargo build` (build.rs
//! `mcpp_build::build()`, this repository's `cargo-mcpp` as the engine), whose glslangValidator
//! is a wrapper that stops at a chosen point of one compile and says so in a marker file. The
//! test then SIGKILLs cargo's whole process group (cargo, rustc, the build script, the engine,
//! the compiler), rebuilds without the stop, and asserts that the program's embedded SPIR-V
//! words equal those of a clean build of the same sources in another target directory.
//! Nothing here is timed: the kill waits for the marker, never for a clock.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::text;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A package whose program prints every word of both embedded modules.
fn kill_package() -> harness::Package {
    harness::client_package(
        "kill-pkg",
        "",
        "mod shaders { include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\")); }\nfn main() {\n    for (name, code) in [(\"a\", shaders::a::scale_comp().code), (\"b\", shaders::b::scale_comp().code)] {\n        let words: Vec<String> = code.iter().map(|w| format!(\"{w:08x}\")).collect();\n        println!(\"{name}: {}\", words.join(\" \"));\n    }\n}\n",
    )
}

/// The glslangValidator wrapper of `pkg`: it reads its mode from `<tools>/mode` at each start;
/// for the compile of `shaders/b/scale.comp` it writes its pid to `<tools>/at` (renamed into
/// place) at the mode's point: `before` the real compiler runs, `after` it wrote its output
/// (then it waits to be killed), `exit` just before it exits (the engine's bookkeeping follows).
fn stopping_wrapper(pkg: &harness::Package) -> PathBuf {
    let real = harness::real_tool("glslangValidator");
    let wrapper = pkg.tools.join("glslangValidator");
    let dir = pkg.tools.display();
    let script = format!(
        r#"#!/bin/sh
real='{real}'
case "$*" in *--version*) exec "$real" "$@";; esac
mode=$(cat '{dir}/mode' 2>/dev/null)
case "$*" in *b/scale.comp*) ;; *) mode=none;; esac
mark() {{ echo $$ > '{dir}/at.tmp'; mv '{dir}/at.tmp' '{dir}/at'; }}
case "$mode" in
before) mark; sleep 300; exec "$real" "$@";;
after) "$real" "$@"; rc=$?; mark; sleep 300; exit $rc;;
exit) "$real" "$@"; rc=$?; mark; exit $rc;;
*) exec "$real" "$@";;
esac
"#,
        real = real.display()
    );
    std::fs::write(&wrapper, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    wrapper
}

fn cargo_build_cmd(pkg: &harness::Package, target: &Path, compiler: &Path) -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.arg("build")
        .arg("--manifest-path")
        .arg(pkg.path("Cargo.toml"))
        .arg("--target-dir")
        .arg(target);
    cmd.env("CARGO_MCPP", env!("CARGO_BIN_EXE_cargo-mcpp"))
        .env("GLSLANG_VALIDATOR", compiler)
        .env("MCPP_HOME", pkg.dir.path().join("mcpp-home"))
        .env_remove("MCPP_ACCEL")
        .env_remove("MCPP_NO_ACCEL");
    cmd
}

fn cargo_build(pkg: &harness::Package, target: &Path, compiler: &Path) -> Output {
    let out = cargo_build_cmd(pkg, target, compiler).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    out
}

/// What the built program prints: every embedded word of both modules.
fn embedded_words(target: &Path) -> String {
    let out = Command::new(target.join("debug/kill-pkg"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// Build, edit both shaders' inputs, start a rebuild stopping at `mode`, SIGKILL cargo's
/// process group at the marker, rebuild, and compare with a clean build.
fn kill_at(mode: &str) {
    let pkg = kill_package();
    let target = pkg.dir.path().join("target");
    let wrapper = stopping_wrapper(&pkg);
    let mode_file = pkg.tools.join("mode");
    let at = pkg.tools.join("at");
    std::fs::write(&mode_file, "none").unwrap();
    cargo_build(&pkg, &target, &wrapper);
    let first = embedded_words(&target);

    harness::edit(
        &pkg.path("shaders/include/common.glsl"),
        "SCALE = 3.0",
        "SCALE = 4.0",
    );
    harness::edit(
        &pkg.path("shaders/b/scale.comp"),
        "data[i] * data[i]",
        "data[i] * data[i] + 2.0",
    );
    std::fs::write(&mode_file, mode).unwrap();
    use std::os::unix::process::CommandExt;
    let mut child = cargo_build_cmd(&pkg, &target, &wrapper)
        .process_group(0)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pgid = child.id();
    loop {
        if at.exists() {
            let status = Command::new("kill")
                .args(["-9", "--", &format!("-{pgid}")])
                .status()
                .unwrap();
            assert!(status.success(), "kill -9 -- -{pgid}");
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("{mode}: the build ended ({status}) before the wrapper reached its point");
        }
        std::thread::sleep(std::time::Duration::from_millis(if mode == "exit" {
            0
        } else {
            20
        }));
    }
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "{mode}: the killed cargo reported success"
    );
    // The stopped wrapper was in the group: its pid is gone (or a zombie's being reaped).
    let pid = std::fs::read_to_string(&at).unwrap().trim().to_string();
    std::fs::remove_file(&at).unwrap();

    std::fs::write(&mode_file, "none").unwrap();
    cargo_build(&pkg, &target, &wrapper);
    let rebuilt = embedded_words(&target);
    assert_ne!(
        rebuilt, first,
        "{mode}: the edits are not in the rebuilt program (wrapper pid was {pid})"
    );

    let clean = harness::Package::new(&[]);
    harness::copy_dir(&pkg.path(""), &clean.path(""));
    let clean_target = clean.dir.path().join("target");
    cargo_build(
        &clean,
        &clean_target,
        &harness::real_tool("glslangValidator"),
    );
    assert_eq!(
        rebuilt,
        embedded_words(&clean_target),
        "{mode}: STALE BYTES after kill -9 and a rebuild"
    );
    // And a no-op after the recovery compiles nothing: the wrapper would mark a compile of b.
    std::fs::write(&mode_file, "exit").unwrap();
    cargo_build(&pkg, &target, &wrapper);
    assert!(
        !at.exists(),
        "{mode}: the rebuild after recovery compiled b again"
    );
}

#[test]
fn kill_9_before_the_compiler_writes_then_a_rebuild_equals_a_clean_build() {
    kill_at("before");
}

#[test]
fn kill_9_after_the_compiler_wrote_its_output_then_a_rebuild_equals_a_clean_build() {
    kill_at("after");
}

/// The wrapper marks just before it exits and the kill follows at once: the engine is then
/// renaming the output, recording the action's state, copying payloads or writing the
/// surface (which of these the kill lands in is not controlled; every one must recover).
#[test]
fn kill_9_as_the_compiler_exits_then_a_rebuild_equals_a_clean_build() {
    kill_at("exit");
}
