//! `cargo mcpp build` end to end on a copy of examples/vulkan-compute: the device phase with
//! its process count, build.rs finding it fresh, the program run on the first Vulkan device
//! (lavapipe on CI), an include edit (GLSL) and an imported-module edit (Slang) reaching the
//! printed result, `--no-accel`, exit codes.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::{copy_dir, repo, text};
use std::path::PathBuf;
use std::process::{Command, Output};

struct Example {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    target: PathBuf,
    tools: harness::Package,
}

impl Example {
    fn new() -> Example {
        let tmp = tempfile::Builder::new()
            .prefix("mcpp-e2e-")
            .tempdir()
            .unwrap();
        let dir = tmp.path().join("vulkan-compute");
        copy_dir(&repo().join("examples/vulkan-compute"), &dir);
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let manifest = manifest.replace(
            "path = \"../../mcpp-build\"",
            &format!(
                "path = {:?}",
                repo().join("mcpp-build").display().to_string()
            ),
        );
        std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
        // One target dir for these tests and the other packages built with the installed
        // engine, so ash is compiled once; the device cache cleared is this package's alone.
        let target = harness::packages_target();
        let _ = std::fs::remove_dir_all(target.join("debug/mcpp/vulkan-compute"));
        Example {
            _tmp: tmp,
            dir,
            target,
            tools: harness::Package::new(&[]),
        }
    }
    fn mcpp(&self, args: &[&str]) -> Output {
        let wrapper = self.tools.counting_tool("glslangValidator");
        let slangc = self
            .tools
            .counting_wrapper_of("slangc", &harness::real_slangc());
        Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
            .args(["mcpp", "build", "--manifest-path"])
            .arg(self.dir.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&self.target)
            .args(args)
            .env("GLSLANG_VALIDATOR", wrapper)
            .env("SLANGC", slangc)
            .env_remove("MCPP_ACCEL")
            .env_remove("MCPP_NO_ACCEL")
            .output()
            .unwrap()
    }
    fn compiles(&self) -> usize {
        // Every start of the wrapper but the one `--version` probe.
        self.tools.compiles("glslangValidator").len()
    }
    fn slang_compiles(&self) -> usize {
        // Every start of the slangc wrapper but the one `-v` probe.
        harness::Shim::at(&self.tools.tools.join("slangc"))
            .records()
            .iter()
            .filter(|r| r.line() != "-v")
            .count()
    }
    fn run(&self) -> Output {
        Command::new(self.target.join("debug/vulkan-compute"))
            .output()
            .unwrap()
    }
}

#[test]
fn cargo_mcpp_build_compiles_once_runs_on_vulkan_and_sees_an_include_edit() {
    let ex = Example::new();
    let out = ex.mcpp(&[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("Device vulkan-compute [vulkan1.2]: 3 compiled, 0 fresh"),
        "{}",
        text(&out)
    );
    assert_eq!(ex.compiles(), 2, "build.rs must find the CLI's work fresh");
    assert_eq!(
        ex.slang_compiles(),
        1,
        "build.rs must find the CLI's work fresh"
    );

    let run = ex.run();
    let first = text(&run);
    assert!(run.status.success(), "{first}");
    assert!(first.contains("vulkan-compute: device: "), "{first}");
    assert!(
        first.contains("shaders/a/scale.comp (") && first.contains("shaders/b/scale.comp ("),
        "{first}"
    );
    assert!(first.contains("all results match"), "{first}");
    assert!(
        first.contains("[1, 2.5, 4, 5.5, ...]"),
        "x * 3 + 1 over 0, 0.5, 1, ...: {first}"
    );
    assert!(first.contains("shaders/c/scale.slang ("), "{first}");
    assert!(
        first.contains("[0.25, 1.25, 2.25, 3.25, ...]"),
        "the Slang shader: x * 2 + 0.25: {first}"
    );

    // A no-op `cargo mcpp build`: no compiler.
    let out = ex.mcpp(&[]);
    assert!(out.status.success());
    assert_eq!(ex.compiles(), 2, "{}", text(&out));
    assert_eq!(ex.slang_compiles(), 1, "{}", text(&out));

    // Edit only the included file: exactly one shader recompiles and the result changes.
    let glsl = ex.dir.join("shaders/include/common.glsl");
    let edited = std::fs::read_to_string(&glsl)
        .unwrap()
        .replace("SCALE = 3.0", "SCALE = 5.0");
    std::fs::write(&glsl, edited).unwrap();
    let out = ex.mcpp(&[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(ex.compiles(), 3, "{}", text(&out));
    let second = text(&ex.run());
    assert!(
        second.contains("[1, 3.5, 6, 8.5, ...]"),
        "x * 5 + 1: {second}"
    );
    assert!(second.contains("all results match"), "{second}");
    let line = |t: &str, src: &str| t.lines().find(|l| l.starts_with(src)).map(str::to_string);
    assert_ne!(
        line(&first, "shaders/a/scale.comp"),
        line(&second, "shaders/a/scale.comp")
    );
    assert_eq!(
        line(&first, "shaders/b/scale.comp"),
        line(&second, "shaders/b/scale.comp")
    );
    assert_eq!(
        line(&first, "shaders/c/scale.slang"),
        line(&second, "shaders/c/scale.slang")
    );
    assert_eq!(
        ex.slang_compiles(),
        1,
        "the GLSL include is no input of the Slang shader"
    );

    // Edit only the module the Slang shader imports: slangc runs once and the result changes.
    let module = ex.dir.join("shaders/modules/affine.slang");
    let edited = std::fs::read_to_string(&module)
        .unwrap()
        .replace("SLOPE = 2.0", "SLOPE = 4.0");
    std::fs::write(&module, edited).unwrap();
    let out = ex.mcpp(&[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("Device vulkan-compute [vulkan1.2]: 1 compiled, 2 fresh"),
        "{}",
        text(&out)
    );
    assert_eq!(
        (ex.compiles(), ex.slang_compiles()),
        (3, 2),
        "{}",
        text(&out)
    );
    let third = text(&ex.run());
    assert!(
        third.contains("[0.25, 2.25, 4.25, 6.25, ...]"),
        "x * 4 + 0.25: {third}"
    );
    assert!(third.contains("all results match"), "{third}");
    assert_ne!(
        line(&second, "shaders/c/scale.slang"),
        line(&third, "shaders/c/scale.slang")
    );
    assert_eq!(
        line(&second, "shaders/a/scale.comp"),
        line(&third, "shaders/a/scale.comp")
    );

    // --no-accel: no shader, the CPU variant of the program.
    let out = ex.mcpp(&["--no-accel"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("Device vulkan-compute [no accelerator]: 0 compiled"),
        "{}",
        text(&out)
    );
    let none = text(&ex.run());
    assert!(
        none.contains("names no vulkan; 0 of 3 shaders built, nothing to run"),
        "{none}"
    );
    assert_eq!((ex.compiles(), ex.slang_compiles()), (3, 2));

    // Back to the manifest's set: its variant is still fresh.
    let out = ex.mcpp(&[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        (ex.compiles(), ex.slang_compiles()),
        (3, 2),
        "{}",
        text(&out)
    );
    let back = text(&ex.run());
    assert!(
        back.contains("[1, 3.5, 6, 8.5, ...]") && back.contains("[0.25, 2.25, 4.25, 6.25, ...]"),
        "{back}"
    );
}

#[test]
fn refusals_exit_3_before_cargo_starts() {
    let pkg = harness::Package::new(&[
        (
            "Cargo.toml",
            &harness::manifest(
                "bad",
                "accel = \"vulkan1.2\"\nsources = [\"s/*.comp\"]\nunknown = 1",
            ),
        ),
        ("src/main.rs", "fn main() {}"),
        (
            "s/x.comp",
            "#version 450\nlayout(local_size_x=1) in;\nvoid main(){}\n",
        ),
    ]);
    let target = pkg.dir.path().join("target");
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args(["mcpp", "build", "--manifest-path"])
        .arg(pkg.path("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("error: invalid manifest: unknown field `unknown`"),
        "{}",
        text(&out)
    );
    assert!(
        !target.join("debug/build").exists(),
        "cargo build must not have started"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args(["mcpp", "build", "--accel", "cuda+{", "--manifest-path"])
        .arg(pkg.path("Cargo.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));

    // `--accel` after an option cargo-mcpp does not know is still cargo-mcpp's (before, it went to
    // cargo with `--bogus`): checked before cargo starts, naming `--accel`.
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args([
            "mcpp",
            "build",
            "--bogus",
            "--accel",
            "cuda+{",
            "--manifest-path",
        ])
        .arg(pkg.path("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("malformed accelerator set from --accel")
            && !target.join("debug/build").exists(),
        "{}",
        text(&out)
    );

    let out = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args(["mcpp", "frobnicate"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args(["mcpp", "build", "--accel", "vulkan", "--no-accel"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

/// A target directory whose path holds a newline (from `CARGO_TARGET_DIR` or `--target-dir`)
/// is refused before cargo starts, naming where it came from and writing nothing: before, the
/// build ran and ended in a link failure (cargo's directives are lines, and a `-L` path cut in
/// two names no directory).
#[test]
fn a_target_directory_with_a_newline_is_refused_before_cargo_starts() {
    let pkg = harness::Package::new(&[
        (
            "Cargo.toml",
            &format!(
                "[package]\nname = \"nl\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n{}\n[package.metadata.mcpp]\nembed = [\"data/*\"]\n\n[workspace]\n",
                harness::client_dependency()
            ),
        ),
        ("build.rs", "fn main() { mcpp_build::build(); }\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("data/greeting.txt", "good day\n"),
    ]);
    let bad = pkg.dir.path().join("tar\nget");
    for (how, by_env) in [("CARGO_TARGET_DIR", true), ("--target-dir", false)] {
        for command in ["build", "pack"] {
            let mut c = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"));
            c.args(["mcpp", command, "--manifest-path"])
                .arg(pkg.path("Cargo.toml"))
                .env("MCPP_HOME", pkg.dir.path().join("mcpp-home"))
                .env("CARGO_MCPP", env!("CARGO_BIN_EXE_cargo-mcpp"))
                .env_remove("CARGO_TARGET_DIR");
            if command == "pack" {
                c.args(["--format", "appimage"]);
            }
            if by_env {
                c.env("CARGO_TARGET_DIR", &bad);
            } else {
                c.arg("--target-dir").arg(&bad);
            }
            let out = c.output().unwrap();
            let t = text(&out);
            assert_eq!(out.status.code(), Some(2), "{how} {command}: {t}");
            assert!(
                t.contains(how) && t.contains("newline") && !t.contains("Compiling"),
                "{how} {command}: {t}"
            );
            assert!(
                !bad.exists(),
                "{how} {command}: the target directory was written"
            );
        }
    }
}
