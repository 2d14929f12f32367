//! `cargo mcpp new` / `cargo mcpp init` (issue 14, `src/cli/init.rs`, `templates/init/`): the
//! SPIR-V lane's new package builds with `cargo mcpp build` and its program runs; the CUDA lane
//! added to an existing crate builds with `--no-accel` and its example runs the CPU fallback; an
//! existing `build.rs` is refused naming the line to add, with nothing written.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

mod harness;

use harness::{repo, text};
use std::path::Path;
use std::process::{Command, Output};

fn mcpp(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-mcpp")).arg("mcpp").args(args).current_dir(dir).env_remove("MCPP_ACCEL").env_remove("MCPP_NO_ACCEL").output().unwrap()
}

fn cargo(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args(args).current_dir(dir).env("CARGO_MCPP", env!("CARGO_BIN_EXE_cargo-mcpp")).env_remove("MCPP_ACCEL").env_remove("MCPP_NO_ACCEL");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn build_dep() -> String {
    repo().join("mcpp-build").display().to_string()
}

#[test]
fn new_spirv_package_builds_and_runs() {
    let tmp = tempfile::Builder::new().prefix("mcpp-init-").tempdir().unwrap();
    let out = mcpp(tmp.path(), &["new", "spv-app", "--lane", "spirv", "--mcpp-build-path", &build_dep()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("Next: cargo mcpp build && cargo run"), "{}", text(&out));
    let dir = tmp.path().join("spv-app");
    for f in ["Cargo.toml", "build.rs", "src/main.rs", "shaders/double.comp"] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    assert_eq!(std::fs::read_to_string(dir.join("shaders/double.comp")).unwrap(), std::fs::read_to_string(repo().join("templates/init/spirv/double.comp")).unwrap());
    let target = tmp.path().join("target");
    let t = target.display().to_string();
    let out = mcpp(&dir, &["build", "--target-dir", &t]);
    assert!(out.status.success(), "{}", text(&out));
    let run = cargo(&dir, &["run", "--target-dir", &t], &[]);
    assert!(run.status.success(), "{}", text(&run));
    assert!(String::from_utf8_lossy(&run.stdout).contains("double.comp: ") && String::from_utf8_lossy(&run.stdout).contains("words of SPIR-V 1."), "{}", text(&run));

    // A second init is refused: the table exists.
    let again = mcpp(&dir, &["init"]);
    assert_eq!(again.status.code(), Some(3), "{}", text(&again));
    assert!(text(&again).contains("[package.metadata.mcpp] already"), "{}", text(&again));
}

#[test]
fn init_cuda_into_an_existing_crate_runs_the_fallback_with_no_accel() {
    let tmp = tempfile::Builder::new().prefix("mcpp-init-").tempdir().unwrap();
    let dir = tmp.path().join("host-app");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"host-app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n").unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() { println!(\"mine\"); }\n").unwrap();
    let out = mcpp(&dir, &["init", "--lane", "cuda", "--mcpp-build-path", &build_dep()]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(dir.join("src/main.rs")).unwrap(), "fn main() { println!(\"mine\"); }\n", "never overwritten");
    assert!(text(&out).contains("cargo run --example mcpp_cuda"), "{}", text(&out));
    let t = tmp.path().join("target").display().to_string();
    let out = mcpp(&dir, &["build", "--no-accel", "--target-dir", &t]);
    assert!(out.status.success(), "{}", text(&out));
    let run = cargo(&dir, &["run", "--example", "mcpp_cuda", "--target-dir", &t], &[("MCPP_NO_ACCEL", "1")]);
    assert!(run.status.success(), "{}", text(&run));
    assert!(String::from_utf8_lossy(&run.stdout).contains("scale_run doubled 1024 floats (accel none: the CPU fallback)"), "{}", text(&run));
}

#[test]
fn an_existing_build_rs_is_refused_naming_the_line_and_nothing_is_written() {
    let tmp = tempfile::Builder::new().prefix("mcpp-init-").tempdir().unwrap();
    let manifest = "[package]\nname = \"has-build\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
    std::fs::write(tmp.path().join("Cargo.toml"), manifest).unwrap();
    std::fs::write(tmp.path().join("build.rs"), "fn main() { println!(\"cargo::rerun-if-changed=x\"); }\n").unwrap();
    let out = mcpp(tmp.path(), &["init", "--lane", "spirv"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("add this line to its `fn main`: `mcpp_build::build();`"), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(tmp.path().join("Cargo.toml")).unwrap(), manifest);
    assert!(!tmp.path().join("shaders").exists() && !tmp.path().join("src").exists());
}
