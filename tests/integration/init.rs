//! `cargo mcpp new` / `cargo mcpp init` (`src/cli/init.rs`, `templates/init/`), each
//! lane's generated crate built with the real compilers and its program run: the SPIR-V (GLSL)
//! and Slang lanes dispatch their shader with ash on the first Vulkan device (lavapipe where
//! there is no GPU) and print the doubled result; the CUDA island (`--island`, nvcc) and the HIP
//! island (hipcc, gfx90a) say "no ... device is present" and exit 2 where there is none, and
//! run their CPU fallback with the command init and the program print (`MCPP_NO_ACCEL=1 cargo
//! run`), run as printed. Refused, with nothing written: an existing
//! `build.rs`, `--island` on a shader lane, an `--accel` that does not name the lane's backend.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;

use harness::{repo, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `cargo mcpp <args>` in `dir`, `CARGO_MCPP` naming this engine (as the `cargo` commands of
/// these tests do, so `Next:` needs no `export`: see [`the_next_line_exports_the_engine_a_plain_cargo_run_needs`]).
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

#[test]
fn the_next_line_exports_the_engine_a_plain_cargo_run_needs() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-init-")
        .tempdir()
        .unwrap();
    let home = tmp.path().join("cargo-home");
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_cargo-mcpp")).unwrap();
    let new = |name: &str| {
        let out = Command::new(&exe)
            .args(["mcpp", "new", name, "--mcpp-build-path", &build_dep()])
            .current_dir(tmp.path())
            .env_remove("CARGO_MCPP")
            .env("CARGO_HOME", &home)
            .env_remove("MCPP_ACCEL")
            .env_remove("MCPP_NO_ACCEL")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        text(&out)
    };
    // Not $CARGO_HOME/bin/cargo-mcpp: a plain `cargo run` would not find this engine.
    let said = new("elsewhere");
    assert!(
        said.contains(&format!(
            "Next: export CARGO_MCPP={} && cargo mcpp build && cargo run\n",
            exe.display()
        )),
        "{said}"
    );
    // Installed where mcpp_build looks (a link to this executable): nothing to export.
    std::fs::create_dir_all(home.join("bin")).unwrap();
    std::os::unix::fs::symlink(&exe, home.join("bin/cargo-mcpp")).unwrap();
    let said = new("installed");
    assert!(
        said.contains("Next: cargo mcpp build && cargo run\n"),
        "{said}"
    );
}

fn cargo(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args(args)
        .current_dir(dir)
        .env("CARGO_MCPP", env!("CARGO_BIN_EXE_cargo-mcpp"))
        .env_remove("MCPP_ACCEL")
        .env_remove("MCPP_NO_ACCEL");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn build_dep() -> String {
    repo().join("mcpp-build").display().to_string()
}

/// One target directory for the generated crates of these tests and the other packages the
/// tests build with the installed engine, so ash is compiled once.
fn target() -> String {
    crate::harness::packages_target().display().to_string()
}

/// `cargo mcpp new <name> <args>` in a new temp dir; returns (temp dir, package dir, init's output).
fn new_package(name: &str, args: &[&str]) -> (tempfile::TempDir, PathBuf, String) {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-init-")
        .tempdir()
        .unwrap();
    let mut all = vec!["new", name, "--mcpp-build-path"];
    let dep = build_dep();
    all.push(&dep);
    all.extend_from_slice(args);
    let out = mcpp(tmp.path(), &all);
    assert!(out.status.success(), "{}", text(&out));
    let dir = tmp.path().join(name);
    (tmp, dir, text(&out))
}

/// `cargo mcpp build <args>` then `cargo run` of the package (with `MCPP_NO_ACCEL=1` when
/// `--no-accel` is among `args`, as the README says); returns the run.
fn build_and_run(dir: &Path, args: &[&str], run_args: &[&str], envs: &[(&str, &str)]) -> Output {
    let t = target();
    let mut b = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"));
    b.arg("mcpp")
        .arg("build")
        .args(args)
        .args(["--target-dir", &t])
        .current_dir(dir)
        .env_remove("MCPP_ACCEL")
        .env_remove("MCPP_NO_ACCEL");
    for (k, v) in envs {
        b.env(k, v);
    }
    let out = b.output().unwrap();
    assert!(
        out.status.success(),
        "cargo mcpp build {args:?}: {}",
        text(&out)
    );
    let mut envs = envs.to_vec();
    if args.contains(&"--no-accel") {
        envs.push(("MCPP_NO_ACCEL", "1"));
    }
    let mut all = vec!["run", "-q", "--target-dir", &t];
    all.extend_from_slice(run_args);
    cargo(dir, &all, &envs)
}

/// Run a command line that `cargo mcpp init` or a generated program printed (`[K=V ...] cargo
/// ARGS`), as a user would type it in `dir`: `cargo` is this test's cargo, the target directory
/// the shared one (`CARGO_TARGET_DIR`).
fn run_advice(dir: &Path, line: &str) -> Output {
    let mut words = line.split_whitespace().peekable();
    let mut envs = Vec::new();
    while let Some((k, v)) = words.peek().and_then(|w| w.split_once('=')) {
        envs.push((k.to_string(), v.to_string()));
        words.next();
    }
    assert_eq!(words.next(), Some("cargo"), "{line}");
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args(words)
        .current_dir(dir)
        .env("CARGO_MCPP", env!("CARGO_BIN_EXE_cargo-mcpp"))
        .env("CARGO_TARGET_DIR", target())
        .env_remove("MCPP_ACCEL")
        .env_remove("MCPP_NO_ACCEL")
        .envs(envs);
    cmd.output().unwrap()
}

/// The command after `marker` on a line of `said`, up to the line's end or a closing backquote.
fn advice<'a>(said: &'a str, marker: &str) -> &'a str {
    let at = said
        .find(marker)
        .unwrap_or_else(|| panic!("no `{marker}` in {said}"))
        + marker.len();
    said[at..].lines().next().unwrap().trim_end_matches('`')
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn has_nvidia_gpu() -> bool {
    Command::new("nvidia-smi")
        .arg("-L")
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
}

/// Whether this machine has an AMD GPU the HIP runtime can reach (`/dev/kfd`).
fn has_amd_gpu() -> bool {
    Path::new("/dev/kfd").exists()
}

#[test]
fn new_spirv_package_runs_its_shader_on_vulkan() {
    let (_tmp, dir, said) = new_package("spv-app", &["--lane", "spirv"]);
    assert!(
        said.contains("Next: cargo mcpp build && cargo run"),
        "{said}"
    );
    for f in [
        "Cargo.toml",
        "build.rs",
        "src/main.rs",
        "shaders/double.comp",
    ] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("shaders/double.comp")).unwrap(),
        std::fs::read_to_string(repo().join("templates/init/spirv/double.comp")).unwrap()
    );
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("[dependencies]\nash = \"0.38\"\n")
            && manifest.contains("accel = \"vulkan1.2\"\nsources = [\"shaders/*.comp\"]"),
        "{manifest}"
    );

    // On the first Vulkan device (lavapipe on a machine without a GPU): every float doubled.
    let run = build_and_run(&dir, &[], &[], &[]);
    assert!(run.status.success(), "{}", text(&run));
    assert!(
        stdout(&run).starts_with("double.comp (")
            && stdout(&run).contains("words of SPIR-V) doubled 1024 floats on ")
            && stdout(&run).contains("y[100] = 200"),
        "{}",
        text(&run)
    );

    // With --no-accel no shader is compiled, and the program says so.
    let run = build_and_run(&dir, &["--no-accel"], &[], &[]);
    assert!(run.status.success(), "{}", text(&run));
    assert!(stdout(&run).contains("double.comp: not compiled in this build (accelerator set none, 0 shaders built), nothing to run"), "{}", text(&run));

    // A second init is refused: the table exists.
    let again = mcpp(&dir, &["init"]);
    assert_eq!(again.status.code(), Some(3), "{}", text(&again));
    assert!(
        text(&again).contains("[package.metadata.mcpp] already"),
        "{}",
        text(&again)
    );
}

#[test]
fn new_slang_package_runs_its_shader_on_vulkan() {
    let slangc = harness::real_slangc();
    let (_tmp, dir, _) = new_package("slang-app", &["--lane", "slang"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("shaders/double.slang")).unwrap(),
        std::fs::read_to_string(repo().join("templates/init/slang/double.slang")).unwrap()
    );
    let slangc = slangc.display().to_string();
    let run = build_and_run(&dir, &[], &[], &[("MCPP_SLANGC", &slangc)]);
    assert!(run.status.success(), "{}", text(&run));
    assert!(
        stdout(&run).starts_with("double.slang (")
            && stdout(&run).contains("doubled 1024 floats on ")
            && stdout(&run).contains("y[100] = 200"),
        "{}",
        text(&run)
    );
}

#[test]
fn new_cuda_island_builds_with_nvcc_and_runs_the_fallback_with_no_accel() {
    let toolkit = harness::cuda13().display().to_string();
    let (_tmp, dir, said) = new_package("cuda-island-app", &["--island"]);
    assert!(said.contains("Next: cargo mcpp build && cargo run\n      without a CUDA toolkit, the CPU fallback: MCPP_NO_ACCEL=1 cargo run\n"), "{said}");
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("accel = \"cuda13.0+{sm_80}\"\nsources = [\"kernels/*.cu\"]\n\n[package.metadata.mcpp.island]\nsources = [\"kernels/scale.cu\", \"host/scale.cpp\"]"), "{manifest}");
    assert!(!manifest.contains("ash"), "{manifest}");

    // nvcc: the kernel runs on an NVIDIA GPU, or the program says there is none and exits 2.
    let run = build_and_run(&dir, &[], &[], &[("CUDA_PATH", &toolkit)]);
    if has_nvidia_gpu() {
        assert!(
            run.status.success()
                && stdout(&run).contains(
                    "scale_run doubled 1024 floats (accel cuda13.0+{sm_80}); y[100] = 200"
                ),
            "{}",
            text(&run)
        );
    } else {
        assert_eq!(run.status.code(), Some(2), "{}", text(&run));
        assert!(
            text(&run).contains(
                "no CUDA device is present: for the CPU fallback, run `MCPP_NO_ACCEL=1 cargo run`"
            ),
            "{}",
            text(&run)
        );
        // The program's advice, run as printed, right after the accelerated build.
        let run = run_advice(&dir, advice(&text(&run), "for the CPU fallback, run `"));
        assert!(run.status.success(), "{}", text(&run));
        assert!(
            stdout(&run).contains(
                "scale_run doubled 1024 floats (accel none: the CPU fallback); y[100] = 200"
            ),
            "{}",
            text(&run)
        );
    }

    // init's advice, run as printed.
    let run = run_advice(&dir, advice(&said, "the CPU fallback: "));
    assert!(run.status.success(), "{}", text(&run));
    assert!(
        stdout(&run)
            .contains("scale_run doubled 1024 floats (accel none: the CPU fallback); y[100] = 200"),
        "{}",
        text(&run)
    );
}

#[test]
fn init_hip_into_an_existing_crate_builds_with_hipcc_and_runs_the_fallback() {
    let rocm = harness::real_rocm().display().to_string();
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-init-")
        .tempdir()
        .unwrap();
    let dir = tmp.path().join("hip-host-app");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"hip-host-app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n").unwrap();
    std::fs::write(
        dir.join("src/main.rs"),
        "fn main() { println!(\"mine\"); }\n",
    )
    .unwrap();
    let out = mcpp(
        &dir,
        &["init", "--lane", "hip", "--mcpp-build-path", &build_dep()],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(dir.join("src/main.rs")).unwrap(),
        "fn main() { println!(\"mine\"); }\n",
        "never overwritten"
    );
    assert!(
        text(&out).contains("cargo run --example mcpp_hip"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("kernels/scale.hip")).unwrap(),
        std::fs::read_to_string(repo().join("templates/init/hip/scale.hip")).unwrap()
    );

    // hipcc for gfx90a: the kernel runs on an AMD GPU, or the program says there is none and exits 2.
    let run = build_and_run(
        &dir,
        &[],
        &["--example", "mcpp_hip"],
        &[("ROCM_PATH", &rocm)],
    );
    if has_amd_gpu() {
        assert!(
            run.status.success() && stdout(&run).contains("y[100] = 200"),
            "{}",
            text(&run)
        );
    } else {
        assert_eq!(run.status.code(), Some(2), "{}", text(&run));
        assert!(text(&run).contains("no HIP device is present: for the CPU fallback, run `MCPP_NO_ACCEL=1 cargo run --example mcpp_hip`"), "{}", text(&run));
    }

    assert!(text(&out).contains("Next: cargo mcpp build && cargo run --example mcpp_hip\n      without a ROCm, the CPU fallback: MCPP_NO_ACCEL=1 cargo run --example mcpp_hip\n"), "{}", text(&out));
    let run = run_advice(&dir, advice(&text(&out), "the CPU fallback: "));
    assert!(run.status.success(), "{}", text(&run));
    assert!(
        stdout(&run)
            .contains("scale_run doubled 1024 floats (accel none: the CPU fallback); y[100] = 200"),
        "{}",
        text(&run)
    );
}

#[test]
fn init_cuda_into_an_existing_crate_runs_the_fallback_with_no_accel() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-init-")
        .tempdir()
        .unwrap();
    let dir = tmp.path().join("host-app");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"host-app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n").unwrap();
    std::fs::write(
        dir.join("src/main.rs"),
        "fn main() { println!(\"mine\"); }\n",
    )
    .unwrap();
    let out = mcpp(
        &dir,
        &["init", "--lane", "cuda", "--mcpp-build-path", &build_dep()],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(dir.join("src/main.rs")).unwrap(),
        "fn main() { println!(\"mine\"); }\n",
        "never overwritten"
    );
    assert!(
        text(&out).contains("cargo run --example mcpp_cuda"),
        "{}",
        text(&out)
    );
    let run = run_advice(&dir, advice(&text(&out), "the CPU fallback: "));
    assert!(run.status.success(), "{}", text(&run));
    assert!(
        stdout(&run).contains("scale_run doubled 1024 floats (accel none: the CPU fallback)"),
        "{}",
        text(&run)
    );
}

#[test]
fn an_existing_build_rs_is_refused_naming_the_line_and_nothing_is_written() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-init-")
        .tempdir()
        .unwrap();
    let manifest = "[package]\nname = \"has-build\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
    std::fs::write(tmp.path().join("Cargo.toml"), manifest).unwrap();
    std::fs::write(
        tmp.path().join("build.rs"),
        "fn main() { println!(\"cargo::rerun-if-changed=x\"); }\n",
    )
    .unwrap();
    let out = mcpp(tmp.path(), &["init", "--lane", "spirv"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("add this line to its `fn main`: `mcpp_build::build();`"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("Cargo.toml")).unwrap(),
        manifest
    );
    assert!(!tmp.path().join("shaders").exists() && !tmp.path().join("src").exists());
}

#[test]
fn a_lane_and_accel_mismatch_or_an_island_of_a_shader_is_refused_with_nothing_written() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-init-")
        .tempdir()
        .unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["--island", "--lane", "slang"], "error: --island with --lane slang: a shader has no entry points the host calls\nhelp: an island is a CUDA or HIP kernel with its CPU fallback: use `--island` (CUDA) or `--lane hip`; or leave `--island` out for a shader"),
        (&["--lane", "hip", "--accel", "vulkan1.2"], "error: --accel `vulkan1.2` names no `hip` entry, so the hip lane's example would never be compiled\nhelp: add a `hip` entry (the lane's default is `hip+{gfx90a}`), or choose the lane of that set with `--lane`"),
        (&["--island", "--accel", "hip+{gfx90a}"], "error: --accel `hip+{gfx90a}` names no `cuda` entry, so the cuda lane's example would never be compiled"),
        (&["--accel", "cuda13.0+{sm_80}"], "error: --accel `cuda13.0+{sm_80}` names no `vulkan` entry, so the spirv lane's example would never be compiled"),
    ];
    for (args, expected) in cases {
        let mut all = vec!["new", "refused"];
        all.extend_from_slice(args);
        let out = mcpp(tmp.path(), &all);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(expected), "{args:?}: {}", text(&out));
        assert!(
            !tmp.path().join("refused").exists(),
            "{args:?}: nothing written"
        );
    }
    // In an existing crate: the manifest is unchanged.
    let manifest = "[package]\nname = \"mismatch\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
    std::fs::write(tmp.path().join("Cargo.toml"), manifest).unwrap();
    let out = mcpp(
        tmp.path(),
        &["init", "--lane", "cuda", "--accel", "vulkan1.2"],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("Cargo.toml")).unwrap(),
        manifest
    );
    assert!(!tmp.path().join("src").exists() && !tmp.path().join("build.rs").exists());
}

/// Every file below `dir` with its bytes, to assert that a refusal wrote nothing.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<_> = harness::walk(dir)
        .into_iter()
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect();
    out.sort();
    out
}

#[test]
fn init_at_a_virtual_workspace_root_is_refused_and_writes_nothing() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-init-")
        .tempdir()
        .unwrap();
    std::fs::write(
        tmp.path().join("Cargo.toml"),
        "[workspace]\nmembers = [\"a\"]\nresolver = \"2\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(tmp.path().join("a/src")).unwrap();
    std::fs::write(
        tmp.path().join("a/Cargo.toml"),
        "[package]\nname = \"a\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(tmp.path().join("a/src/lib.rs"), "").unwrap();
    let before = snapshot(tmp.path());
    let out = mcpp(tmp.path(), &["init", "--lane", "cuda"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains(
            "a virtual workspace manifest (a [workspace] and no [package]): not a package"
        ) && text(&out).contains("help: run it in a member"),
        "{}",
        text(&out)
    );
    assert_eq!(snapshot(tmp.path()), before, "nothing written");
}

/// A package directory in a temp dir with `manifest` and, when given, `(path, text)` files.
fn package_with(manifest: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-init-")
        .tempdir()
        .unwrap();
    std::fs::write(tmp.path().join("Cargo.toml"), manifest).unwrap();
    for (rel, content) in files {
        let p = tmp.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    tmp
}

#[test]
fn a_build_key_or_a_commented_out_call_is_refused_naming_the_fix_and_nothing_is_written() {
    let head = "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
    type Files<'a> = Vec<(&'a str, &'a str)>;
    let cases: [(String, Files, &str); 4] = [
        // A commented-out call is no call.
        (head.to_string(), vec![("build.rs", "fn main() {\n    // mcpp_build::build();\n}\n")], "error: build.rs exists and does not run the device phase; cargo mcpp init does not change it\n"),
        (head.to_string(), vec![("build.rs", "fn main() {\n    /* mcpp_build::build(); */\n}\n")], "help: add this line to its `fn main`: `mcpp_build::build();`"),
        // `build = "tools/gen.rs"`: that script, not build.rs.
        (format!("{head}build = \"tools/gen.rs\"\n"), vec![("tools/gen.rs", "fn main() {}\n")], "error: tools/gen.rs exists and does not run the device phase; cargo mcpp init does not change it\n"),
        // `build = false`: the key to remove, at its line.
        (format!("{head}build = false\n"), vec![], "Cargo.toml:5:1 (key `package.build`)\nhelp: remove `build = false` from [package]"),
    ];
    for (manifest, files, expected) in cases {
        let tmp = package_with(&manifest, &files);
        let before = snapshot(tmp.path());
        let out = mcpp(tmp.path(), &["init", "--lane", "cuda"]);
        assert_eq!(out.status.code(), Some(3), "{manifest}: {}", text(&out));
        assert!(text(&out).contains(expected), "{manifest}: {}", text(&out));
        assert_eq!(snapshot(tmp.path()), before, "{manifest}: nothing written");
    }
    // A build script named by `build` that runs the device phase is used as it is: no build.rs.
    let tmp = package_with(
        &format!("{head}build = \"tools/gen.rs\"\n"),
        &[("tools/gen.rs", "fn main() {\n    mcpp_build::build();\n}\n")],
    );
    let out = mcpp(
        tmp.path(),
        &["init", "--lane", "cuda", "--mcpp-build-path", &build_dep()],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(!tmp.path().join("build.rs").exists() && tmp.path().join("kernels/scale.cu").is_file());
}

#[test]
fn the_default_build_dependency_is_the_mcpp_build_this_cargo_mcpp_was_built_from() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-init-")
        .tempdir()
        .unwrap();
    let out = mcpp(tmp.path(), &["new", "dflt", "--island"]);
    assert!(out.status.success(), "{}", text(&out));
    let dir = tmp.path().join("dflt");
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let expected = format!(
        "[build-dependencies]\nmcpp-build = {{ path = \"{}\" }}\n",
        build_dep()
    );
    assert!(manifest.contains(&expected), "{manifest}");
    // Cargo resolves it (offline: a version that is not on crates.io would not resolve).
    let meta = cargo(
        &dir,
        &["metadata", "--offline", "--format-version", "1"],
        &[],
    );
    assert!(meta.status.success(), "{}", text(&meta));
    assert!(
        stdout(&meta).contains("\"name\":\"mcpp-build\""),
        "{}",
        text(&meta)
    );
    // And builds: init's advice for the CPU fallback, run as printed.
    let run = run_advice(&dir, advice(&text(&out), "the CPU fallback: "));
    assert!(run.status.success(), "{}", text(&run));
    assert!(
        stdout(&run)
            .contains("scale_run doubled 1024 floats (accel none: the CPU fallback); y[100] = 200"),
        "{}",
        text(&run)
    );
}

#[test]
fn a_relative_mcpp_build_path_is_written_absolute_and_a_wrong_one_is_refused() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-init-")
        .tempdir()
        .unwrap();
    let from = tmp.path().join("here");
    std::fs::create_dir_all(&from).unwrap();
    // `../link` from `here`: a path relative to the current directory, not to the new manifest.
    std::os::unix::fs::symlink(repo().join("mcpp-build"), tmp.path().join("link")).unwrap();
    let out = mcpp(
        &from,
        &["new", "rel", "--island", "--mcpp-build-path", "../link"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let manifest = std::fs::read_to_string(from.join("rel/Cargo.toml")).unwrap();
    let abs = std::fs::canonicalize(repo().join("mcpp-build")).unwrap();
    assert!(
        manifest.contains(&format!("mcpp-build = {{ path = \"{}\" }}", abs.display())),
        "{manifest}"
    );
    let meta = cargo(
        &from.join("rel"),
        &["metadata", "--offline", "--format-version", "1"],
        &[],
    );
    assert!(meta.status.success(), "{}", text(&meta));

    // Not the mcpp-build crate (cargo-mcpp's own root), or nothing there: refused, nothing written.
    let repo_dir = repo().display().to_string();
    let cases: [(&str, &str); 2] = [
        (
            &repo_dir,
            "is not the mcpp-build crate (its Cargo.toml does not name the package `mcpp-build`)",
        ),
        (
            "../nowhere",
            "--mcpp-build-path `../nowhere`: No such file or directory",
        ),
    ];
    for (path, expected) in cases {
        let out = mcpp(&from, &["new", "refused", "--mcpp-build-path", path]);
        assert_eq!(out.status.code(), Some(3), "{path}: {}", text(&out));
        assert!(text(&out).contains(expected), "{path}: {}", text(&out));
        assert!(!from.join("refused").exists(), "{path}");
    }
}

#[test]
fn names_cargo_refuses_and_an_ambiguous_hip_set_are_refused_with_nothing_written() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-init-")
        .tempdir()
        .unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["new", "test"], "error: the name `test` cannot be used as a package name: it is a crate of Rust's standard library"),
        (&["new", "core"], "error: the name `core` cannot be used as a package name: it is a crate of Rust's standard library"),
        (&["new", "fn"], "error: the name `fn` cannot be used as a package name: it is a Rust keyword"),
        (&["new", "deps"], "error: the name `deps` cannot be used as a package name: it conflicts with cargo's build directory names"),
        // The HIP rule's own platform choice: AMD and NVIDIA architectures both listed.
        (&["new", "hipboth", "--lane", "hip", "--accel", "hip+{gfx90a},cuda13.0+{sm_80}"], "error: --accel `hip+{gfx90a},cuda13.0+{sm_80}`: the accelerator set `hip+{gfx90a}, cuda13.0+{sm_80}` names HIP for both platforms: AMD (gfx90a) and NVIDIA (sm_80)"),
    ];
    for (args, expected) in cases {
        let out = mcpp(tmp.path(), args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(expected), "{args:?}: {}", text(&out));
        assert!(
            std::fs::read_dir(tmp.path()).unwrap().next().is_none(),
            "{args:?}: nothing written"
        );
    }
    // A Vulkan version no Vulkan has: known without a compiler, refused at init, not at the build.
    for lane in ["spirv", "slang"] {
        let out = mcpp(
            tmp.path(),
            &["new", "vk", "--lane", lane, "--accel", "vulkan9.9"],
        );
        assert_eq!(out.status.code(), Some(3), "{}", text(&out));
        assert!(text(&out).contains("error: --accel `vulkan9.9`: the accelerator names vulkan9.9, which is no Vulkan version a GLSL compiler targets") && text(&out).contains("known: vulkan1.0, vulkan1.1, vulkan1.2, vulkan1.3, vulkan1.4"), "{}", text(&out));
        assert!(
            std::fs::read_dir(tmp.path()).unwrap().next().is_none(),
            "nothing written"
        );
    }
    // A rule's check of its entry (a HIP version names its minor), as the build would refuse it.
    let out = mcpp(
        tmp.path(),
        &[
            "new",
            "hipfive",
            "--lane",
            "hip",
            "--accel",
            "hip5+{gfx90a}",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("names HIP 5 without a minor version"),
        "{}",
        text(&out)
    );
}

#[test]
fn new_inside_a_workspace_adds_the_package_to_its_members() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-init-")
        .tempdir()
        .unwrap();
    std::fs::write(
        tmp.path().join("Cargo.toml"),
        "[workspace]\nmembers = [\"a\"]\nresolver = \"2\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(tmp.path().join("a/src")).unwrap();
    std::fs::write(
        tmp.path().join("a/Cargo.toml"),
        "[package]\nname = \"a\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(tmp.path().join("a/src/lib.rs"), "").unwrap();
    std::fs::create_dir_all(tmp.path().join("crates")).unwrap();
    let out = mcpp(&tmp.path().join("crates"), &["new", "c", "--island"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("Added `crates/c` to the members of the workspace"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("Cargo.toml")).unwrap(),
        "[workspace]\nmembers = [\"a\", \"crates/c\"]\nresolver = \"2\"\n"
    );
    // Cargo sees both members (before, it refused: the package believed it was in a workspace).
    let meta = cargo(
        &tmp.path().join("crates/c"),
        &[
            "metadata",
            "--offline",
            "--no-deps",
            "--format-version",
            "1",
        ],
        &[],
    );
    assert!(meta.status.success(), "{}", text(&meta));
    assert!(
        stdout(&meta).contains("\"name\":\"c\"") && stdout(&meta).contains("\"name\":\"a\""),
        "{}",
        text(&meta)
    );

    // A glob that already matches: the manifest is left alone.
    std::fs::write(
        tmp.path().join("Cargo.toml"),
        "[workspace]\nmembers = [\"a\", \"crates/*\"]\n",
    )
    .unwrap();
    let out = mcpp(&tmp.path().join("crates"), &["new", "d", "--island"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("Cargo.toml")).unwrap(),
        "[workspace]\nmembers = [\"a\", \"crates/*\"]\n"
    );
}

#[test]
fn names_cargo_new_refuses_are_refused_and_unicode_letters_taken() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-init-")
        .tempdir()
        .unwrap();
    std::fs::write(
        tmp.path().join("Cargo.toml"),
        "[workspace]\nmembers = []\nresolver = \"2\"\n",
    )
    .unwrap();
    let before = snapshot(tmp.path());
    let cases: [(&[&str], &str); 3] = [
        (&["new", "--", "-x"], "error: `-x` is not a package name: the first character `-` must be a letter or `_`"),
        (&["new", "1x"], "error: `1x` is not a package name: the first character `1` must be a letter or `_`"),
        (&["new", "a.b"], "error: `a.b` is not a package name: the character `.` is not a letter, a digit, `-` or `_`"),
    ];
    for (args, expected) in cases {
        let out = mcpp(tmp.path(), args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(expected), "{args:?}: {}", text(&out));
        assert_eq!(snapshot(tmp.path()), before, "{args:?}: nothing written");
    }
    // What cargo new takes (`x-`, `café`, `_a`) joins the workspace, and cargo reads it.
    for name in ["x-", "café", "_a"] {
        let out = mcpp(
            tmp.path(),
            &["new", name, "--island", "--mcpp-build-path", &build_dep()],
        );
        assert!(out.status.success(), "{name}: {}", text(&out));
    }
    let meta = cargo(
        tmp.path(),
        &[
            "metadata",
            "--offline",
            "--no-deps",
            "--format-version",
            "1",
        ],
        &[],
    );
    assert!(meta.status.success(), "{}", text(&meta));
    assert!(
        stdout(&meta).contains("\"name\":\"café\"") && stdout(&meta).contains("\"name\":\"x-\""),
        "{}",
        text(&meta)
    );
}

#[test]
fn a_member_glob_does_not_match_across_a_slash() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-init-")
        .tempdir()
        .unwrap();
    std::fs::write(
        tmp.path().join("Cargo.toml"),
        "[workspace]\nmembers = [\"crates/*\"]\nresolver = \"2\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(tmp.path().join("crates/x/src")).unwrap();
    std::fs::write(
        tmp.path().join("crates/x/Cargo.toml"),
        "[package]\nname = \"x\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(tmp.path().join("crates/x/src/lib.rs"), "").unwrap();
    let out = mcpp(
        tmp.path(),
        &[
            "new",
            "crates/x/inner2",
            "--island",
            "--mcpp-build-path",
            &build_dep(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("Added `crates/x/inner2` to the members"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("Cargo.toml")).unwrap(),
        "[workspace]\nmembers = [\"crates/*\", \"crates/x/inner2\"]\nresolver = \"2\"\n"
    );
    let meta = cargo(
        &tmp.path().join("crates/x/inner2"),
        &[
            "metadata",
            "--offline",
            "--no-deps",
            "--format-version",
            "1",
        ],
        &[],
    );
    assert!(meta.status.success(), "{}", text(&meta));
    // `crates/../z`: the message names what was written, `z`.
    let out = mcpp(
        tmp.path(),
        &[
            "new",
            "crates/../z",
            "--island",
            "--mcpp-build-path",
            &build_dep(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("Added `z` to the members"),
        "{}",
        text(&out)
    );
    assert!(std::fs::read_to_string(tmp.path().join("Cargo.toml"))
        .unwrap()
        .contains("\"crates/x/inner2\", \"z\"]"));
    // Through a directory that does not exist yet: the entry is still the resolved `w`.
    let out = mcpp(
        tmp.path(),
        &[
            "new",
            "nowhere/../w",
            "--island",
            "--mcpp-build-path",
            &build_dep(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("Added `w` to the members"),
        "{}",
        text(&out)
    );
    assert!(std::fs::read_to_string(tmp.path().join("Cargo.toml"))
        .unwrap()
        .contains("\"z\", \"w\"]"));
}

#[test]
fn an_inline_metadata_table_a_bad_build_key_or_a_stale_dependency_is_refused_at_its_line() {
    let head = "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
    let engine = {
        let t = std::fs::read_to_string(repo().join("mcpp-build/Cargo.toml")).unwrap();
        t.lines()
            .find_map(|l| l.strip_prefix("version = \""))
            .unwrap()
            .trim_end_matches('"')
            .to_string()
    };
    let cases: Vec<(String, &[&str], String)> = vec![
        (format!("{head}metadata = {{ docs = {{ rs = {{ all-features = true }} }} }}\n"), &["--lane", "cuda"], "Cargo.toml:5:1 (key `package.metadata`)\nhelp: write it as a table, `[package.metadata]`".into()),
        (format!("{head}build = 5\n"), &["--lane", "cuda"], "error: [package] build = 5: cargo takes a path or a boolean".into()),
        (format!("{head}build = \"\"\n"), &["--lane", "cuda"], "error: [package] build = \"\": an empty build script path".into()),
        (format!("{head}build = \"tools/gen.rs\"\n"), &["--lane", "cuda"], "Cargo.toml:5:1 (key `package.build`)".into()),
        (format!("{head}\n[dependencies]\nash = \"0.37\"\n"), &["--lane", "spirv"], "error: [dependencies] ash = \"0.37\": the code cargo mcpp init writes needs ash 0.38.0".into()),
        (format!("{head}\n[dependencies]\nash = {{ version = \"0.38\", default-features = false }}\n"), &["--lane", "spirv"], "Cargo.toml:7:1 (key `dependencies.ash`)\nhelp: add `features = [\"loaded\"]` to it".into()),
        (format!("{head}\n[build-dependencies]\nmcpp-build = \"0.0.1\"\n"), &["--lane", "cuda"], format!("Cargo.toml:7:1 (key `build-dependencies.mcpp-build`)\nhelp: change it to `mcpp-build = \"{engine}\"`")),
    ];
    for (manifest, args, expected) in cases {
        let tmp = package_with(&manifest, &[]);
        let before = snapshot(tmp.path());
        let out = mcpp(tmp.path(), &[&["init"][..], args].concat());
        assert_eq!(out.status.code(), Some(3), "{manifest}: {}", text(&out));
        assert!(text(&out).contains(&expected), "{manifest}: {}", text(&out));
        assert_eq!(snapshot(tmp.path()), before, "{manifest}: nothing written");
    }
    // ash 0.38.2 and a dotted `metadata.docs` key are fine; cargo reads the result.
    let tmp = package_with(
        &format!(
            "{head}metadata.docs.rs.all-features = true\n\n[dependencies]\nash = \"0.38.2\"\n"
        ),
        &[],
    );
    let out = mcpp(tmp.path(), &["init", "--mcpp-build-path", &build_dep()]);
    assert!(out.status.success(), "{}", text(&out));
    let meta = cargo(
        tmp.path(),
        &[
            "metadata",
            "--offline",
            "--no-deps",
            "--format-version",
            "1",
        ],
        &[],
    );
    assert!(meta.status.success(), "{}", text(&meta));
}

#[test]
fn an_mcpp_build_path_to_its_cargo_toml_is_taken() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-init-")
        .tempdir()
        .unwrap();
    let toml = repo().join("mcpp-build/Cargo.toml").display().to_string();
    let out = mcpp(
        tmp.path(),
        &["new", "viatoml", "--island", "--mcpp-build-path", &toml],
    );
    assert!(out.status.success(), "{}", text(&out));
    let manifest = std::fs::read_to_string(tmp.path().join("viatoml/Cargo.toml")).unwrap();
    let abs = std::fs::canonicalize(repo().join("mcpp-build")).unwrap();
    assert!(
        manifest.contains(&format!("mcpp-build = {{ path = \"{}\" }}", abs.display())),
        "{manifest}"
    );
    // Another file: refused naming that file, not `<file>/Cargo.toml`.
    let other = repo().join("mcpp-build/src/lib.rs");
    let out = mcpp(
        tmp.path(),
        &[
            "new",
            "refused",
            "--mcpp-build-path",
            &other.display().to_string(),
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        !text(&out).contains("lib.rs/Cargo.toml") && !tmp.path().join("refused").exists(),
        "{}",
        text(&out)
    );
}

/// `cargo mcpp new --lane cuda --payload`: the kernel compiled to cubins and PTX, embedded, and
/// loaded with cudarc through the selection function and the kernel-name constant; without a
/// GPU the program says so and exits 2. `--payload` of another lane is refused.
#[test]
fn new_cuda_payload_package_builds_and_loads_the_image_the_selection_function_picks() {
    let toolkit = harness::cuda13().display().to_string();
    let (_tmp, dir, said) = new_package("cuda-payload-app", &["--lane", "cuda", "--payload"]);
    assert!(!said.contains("CPU fallback"), "{said}");
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("cudarc = { version = \"0.19\", default-features = false, features = [\"std\", \"driver\", \"nvrtc\", \"dynamic-loading\", \"cuda-13000\"] }"), "{manifest}");
    assert!(manifest.contains("accel = \"cuda13.0+{sm_80}\"\nsources = [{ glob = \"kernels/*.cu\", output = \"cubin+ptx\" }]\n"), "{manifest}");
    let main = std::fs::read_to_string(dir.join("src/main.rs")).unwrap();
    assert!(
        main.contains("kernels::scale_select(major, minor)")
            && main.contains("kernels::scale_entries::SCALE"),
        "{main}"
    );
    let run = build_and_run(&dir, &[], &[], &[("CUDA_PATH", &toolkit)]);
    if has_nvidia_gpu() {
        assert!(
            run.status.success() && stdout(&run).contains("scale doubled 1024 floats on"),
            "{}",
            text(&run)
        );
    } else {
        assert_eq!(run.status.code(), Some(2), "{}", text(&run));
        assert!(
            text(&run).contains("no CUDA device is present"),
            "{}",
            text(&run)
        );
    }

    let tmp = tempfile::tempdir().unwrap();
    let out = mcpp(tmp.path(), &["new", "p", "--lane", "hip", "--payload"]);
    assert!(
        !out.status.success()
            && text(&out)
                .contains("--payload with --lane hip: the payload form is the CUDA lane's"),
        "{}",
        text(&out)
    );
    assert!(!tmp.path().join("p").exists(), "nothing written");
}
