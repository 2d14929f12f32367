//! `mcpp_build::build()`, the dependency-free build.rs client, end to end: a real package whose
//! build.rs runs this repository's `cargo-mcpp` as its engine (named by `CARGO_MCPP`) under a
//! plain `cargo build`, with the real glslangValidator behind a counting wrapper.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::text;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A SPIR-V package whose build.rs is `mcpp_build::build()`; its program prints the length and
/// a checksum of the embedded SPIR-V words of `shaders/a/scale.comp`.
fn client_package(extra_mcpp: &str) -> harness::Package {
    harness::client_package(
        "client-pkg",
        extra_mcpp,
        "mod shaders { include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\")); }\nfn main() {\n    let code = shaders::a::scale_comp().code;\n    let sum = code.iter().fold(0u64, |s, w| s.wrapping_mul(31).wrapping_add(*w as u64));\n    println!(\"{} words, checksum {sum}\", code.len());\n}\n",
    )
}

/// `cargo build` of `pkg` with the given engine variable (None: unset) and CARGO_HOME.
fn cargo_build(pkg: &harness::Package, engine: Option<&Path>, cargo_home: Option<&Path>) -> Output {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.arg("build")
        .arg("--manifest-path")
        .arg(pkg.path("Cargo.toml"));
    // One target dir for these tests, so mcpp-build is compiled once; the device cache of
    // each package is its own (a fresh temp package name would collide otherwise).
    cmd.arg("--target-dir").arg(pkg.dir.path().join("target"));
    cmd.env("GLSLANG_VALIDATOR", pkg.counting_tool("glslangValidator"))
        .env("MCPP_HOME", pkg.dir.path().join("mcpp-home"))
        .env_remove("MCPP_ACCEL")
        .env_remove("MCPP_NO_ACCEL");
    match engine {
        Some(e) => cmd.env("CARGO_MCPP", e),
        None => cmd.env_remove("CARGO_MCPP"),
    };
    if let Some(h) = cargo_home {
        cmd.env("CARGO_HOME", h);
    }
    cmd.output().unwrap()
}

fn run(pkg: &harness::Package) -> String {
    let out = Command::new(pkg.dir.path().join("target/debug/client-pkg"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn compiles(pkg: &harness::Package) -> usize {
    pkg.compiles("glslangValidator").len()
}

#[test]
fn the_client_and_this_engine_agree_on_the_variable_and_the_version() {
    assert_eq!(mcpp_build::ENGINE_ENV, cargo_mcpp::cli::ENGINE_ENV);
    assert_eq!(
        mcpp_build::ENGINE_HANDSHAKE,
        cargo_mcpp::cli::ENGINE_HANDSHAKE
    );
    assert_eq!(
        mcpp_build::VERSION,
        env!("CARGO_PKG_VERSION"),
        "mcpp-build's version must follow cargo-mcpp's"
    );
}

#[test]
fn a_plain_cargo_build_through_the_client_embeds_fresh_spirv_and_a_no_op_starts_no_compiler() {
    let pkg = client_package("");
    let engine = PathBuf::from(env!("CARGO_BIN_EXE_cargo-mcpp"));
    let out = cargo_build(&pkg, Some(&engine), None);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(compiles(&pkg), 2);
    let first = run(&pkg);
    assert!(first.contains(" words, checksum "), "{first}");

    // A no-op: no compiler.
    let out = cargo_build(&pkg, Some(&engine), None);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(compiles(&pkg), 2, "{}", text(&out));

    // Edit only the included file (in place): one shader recompiles, the embedded words change.
    let glsl = pkg.path("shaders/include/common.glsl");
    std::fs::write(
        &glsl,
        std::fs::read_to_string(&glsl)
            .unwrap()
            .replace("SCALE = 3.0", "SCALE = 5.0"),
    )
    .unwrap();
    let out = cargo_build(&pkg, Some(&engine), None);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(compiles(&pkg), 3, "{}", text(&out));
    assert_ne!(run(&pkg), first, "stale SPIR-V after an include edit");

    // Refusals pass through with the engine's text and fail the build.
    std::fs::write(
        pkg.path("Cargo.toml"),
        std::fs::read_to_string(pkg.path("Cargo.toml"))
            .unwrap()
            .replace("sources = [", "bogus = 1\nsources = ["),
    )
    .unwrap();
    let out = cargo_build(&pkg, Some(&engine), None);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("unknown field `bogus`"),
        "{}",
        text(&out)
    );
}

#[test]
fn without_an_engine_the_build_is_refused_naming_the_ways_to_provide_one() {
    let pkg = client_package("");
    let empty_home = pkg.dir.path().join("empty-cargo-home");
    std::fs::create_dir_all(&empty_home).unwrap();
    // The cargo-install location is looked up in CARGO_HOME; cargo itself still needs its
    // registry, which a path-only package does not use.
    let out = cargo_build(&pkg, None, Some(&empty_home));
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains(
            "no cargo-mcpp engine: build.rs names none (Build::engine), CARGO_MCPP is unset"
        ),
        "{t}"
    );
    assert!(
        t.contains(&format!("{}", empty_home.join("bin/cargo-mcpp").display())),
        "{t}"
    );
    assert!(
        t.contains("cargo install --path")
            && t.contains("set CARGO_MCPP=")
            && !t.contains("cargo install cargo-mcpp"),
        "{t}"
    );

    let out = cargo_build(&pkg, Some(&pkg.dir.path().join("no-such-engine")), None);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("CARGO_MCPP names `") && text(&out).contains("it is not a file"),
        "{}",
        text(&out)
    );

    // A program that exits 0 without the handshake is not taken for an engine.
    let out = cargo_build(&pkg, Some(Path::new("/bin/true")), None);
    assert!(!out.status.success());
    assert!(
        text(&out)
            .contains("`/bin/true` (CARGO_MCPP) is not a cargo-mcpp engine this client can use"),
        "{}",
        text(&out)
    );
}

#[test]
fn the_engine_refuses_a_client_of_another_version() {
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args(["mcpp", "build-script", "--client-version", "0.0.0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains(&format!(
            "mcpp-build 0.0.0 (this package's build-dependency) started cargo-mcpp {}",
            env!("CARGO_PKG_VERSION")
        )),
        "{t}"
    );
    assert!(
        t.contains("cargo::warning=") && t.contains("cargo install cargo-mcpp --version 0.0.0"),
        "{t}"
    );
}

#[test]
fn a_refused_build_warns_under_cargo_with_the_prefix_once() {
    // Two shaders in one directory mapping to one name (`x_y_comp`): refused after the rules
    // planned, with a headline that once carried the prefix itself.
    let pkg = client_package("");
    pkg.write("shaders/a/x-y.comp", harness::SQUARE_COMP);
    pkg.write("shaders/a/x_y.comp", harness::SQUARE_COMP);
    let out = cargo_build(
        &pkg,
        Some(Path::new(env!("CARGO_BIN_EXE_cargo-mcpp"))),
        None,
    );
    assert!(!out.status.success());
    let t = text(&out);
    assert_eq!(
        t.matches(
            "warning: client-pkg@0.1.0: cargo-mcpp: two device sources map to one payload name\n"
        )
        .count(),
        1,
        "{t}"
    );
    assert_eq!(
        t.matches("cargo::warning=cargo-mcpp: two device sources map to one payload name\n")
            .count(),
        1,
        "the directive, in cargo's dump of the script's stdout: {t}"
    );
    assert!(!t.contains("cargo-mcpp: cargo-mcpp:"), "{t}");
    assert!(
        t.contains("error: two device sources map to one payload name\n"),
        "{t}"
    );
}

/// A sidecar deleted or edited by hand under `target/<profile>/mcpp-data/` is written again by
/// the next plain `cargo build` (each sidecar is a rerun-if-changed input of the build script,
/// its time set to cargo's invocation time), and a no-op after that runs no build script.
#[test]
fn a_deleted_or_edited_sidecar_is_restored_by_the_next_build_and_a_no_op_runs_no_build_script() {
    let pkg = harness::client_package(
        "client-pkg",
        "storage = \"sidecar\"",
        "mod shaders { include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\")); }\nfn main() {\n    let code = shaders::a::scale_comp().unwrap_or_else(|e| { eprintln!(\"{e}\"); std::process::exit(3) }).code;\n    let sum = code.iter().fold(0u64, |s, w| s.wrapping_mul(31).wrapping_add(*w as u64));\n    println!(\"{} words, checksum {sum}\", code.len());\n}\n",
    );
    let engine = PathBuf::from(env!("CARGO_BIN_EXE_cargo-mcpp"));
    let verbose = |pkg: &harness::Package| {
        let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        cmd.args(["build", "-v", "--manifest-path"])
            .arg(pkg.path("Cargo.toml"))
            .arg("--target-dir")
            .arg(pkg.dir.path().join("target"));
        cmd.env("GLSLANG_VALIDATOR", pkg.counting_tool("glslangValidator"))
            .env("MCPP_HOME", pkg.dir.path().join("mcpp-home"))
            .env("CARGO_MCPP", &engine)
            .env_remove("MCPP_ACCEL")
            .env_remove("MCPP_NO_ACCEL");
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let ran_build_script = |log: &str| {
        log.lines().any(|l| {
            l.contains("Running") && l.contains("client-pkg-") && l.contains("build-script-build")
        })
    };
    assert!(ran_build_script(&verbose(&pkg)));
    let first = run(&pkg);
    assert!(first.contains(" words, checksum "), "{first}");
    let sidecar = pkg
        .dir
        .path()
        .join("target/debug/mcpp-data/client-pkg/a/scale_comp.spv");
    let bytes = std::fs::read(&sidecar).unwrap();
    let log = verbose(&pkg);
    assert!(
        !ran_build_script(&log),
        "a no-op after the first build ran the build script:\n{log}"
    );

    std::fs::remove_file(&sidecar).unwrap();
    assert!(
        ran_build_script(&verbose(&pkg)),
        "a deleted sidecar reruns the build script"
    );
    assert_eq!(std::fs::read(&sidecar).unwrap(), bytes);
    assert_eq!(run(&pkg), first);
    let log = verbose(&pkg);
    assert!(
        !ran_build_script(&log),
        "a no-op after the restore ran the build script:\n{log}"
    );

    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&sidecar, b"abc").unwrap();
    assert!(
        ran_build_script(&verbose(&pkg)),
        "an edited sidecar reruns the build script"
    );
    assert_eq!(std::fs::read(&sidecar).unwrap(), bytes);
    assert_eq!(run(&pkg), first);
    assert!(
        !ran_build_script(&verbose(&pkg)),
        "a no-op after the second restore ran the build script"
    );
}

/// The `cargo-mcpp` library without its `engine` feature (`default-features = false`) is the
/// client: the package's whole build-dependency tree is `cargo-mcpp` and `mcpp-build`, and the
/// builder's finer controls (`tool`, `env`, `env_remove`, `release`, `jobs`) reach the engine,
/// which applies them as the in-process builder does.
#[test]
fn the_library_without_its_engine_feature_is_a_client_of_two_packages_and_its_builder_reaches_the_engine(
) {
    let pkg = client_package("");
    let glslang = pkg.counting_tool("glslangValidator");
    let manifest = std::fs::read_to_string(pkg.path("Cargo.toml")).unwrap();
    let library = format!(
        "[build-dependencies]\ncargo-mcpp = {{ path = {:?}, default-features = false }}\n",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::write(
        pkg.path("Cargo.toml"),
        manifest.replace(&harness::client_dependency(), &library),
    )
    .unwrap();
    pkg.write(
        "build.rs",
        &format!(
            "fn main() {{\n    cargo_mcpp::Build::new()\n        .tool(\"glslangValidator\", {glslang:?})\n        .env_remove(\"MCPP_NO_ACCEL\")\n        .env(\"CXXFLAGS\", \"-O2 -g\")\n        .env(\"MCPP_UNREAD\", \"--no-accel\")\n        .env_remove(\"-x\")\n        .env(\"MCPP_ACCEL\", \"vulkan1.3\")\n        .release(true)\n        .jobs(1)\n        .compile();\n}}\n"
        ),
    );
    // Cargo's environment says the opposite of every setting: a control that did not reach the
    // engine fails the build (no such compiler, no accelerator) or shows in the argv.
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args(["build", "--manifest-path"])
        .arg(pkg.path("Cargo.toml"))
        .arg("--target-dir")
        .arg(pkg.dir.path().join("target"));
    cmd.env("CARGO_MCPP", env!("CARGO_BIN_EXE_cargo-mcpp"))
        .env("GLSLANG_VALIDATOR", "/nonexistent/glslangValidator")
        .env("MCPP_NO_ACCEL", "1")
        .env("MCPP_HOME", pkg.dir.path().join("mcpp-home"))
        .env_remove("MCPP_ACCEL");
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let calls = pkg.compiles("glslangValidator");
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        calls
            .iter()
            .all(|c| c.contains("vulkan1.3") && c.contains("-Os")),
        "Build::env and Build::release(true) in the engine's argv: {calls:?}"
    );
    assert!(run(&pkg).contains(" words, checksum "));

    let lock = std::fs::read_to_string(pkg.path("Cargo.lock")).unwrap();
    let mut packages: Vec<&str> = lock
        .lines()
        .filter_map(|l| l.strip_prefix("name = "))
        .collect();
    packages.sort_unstable();
    assert_eq!(
        packages,
        ["\"cargo-mcpp\"", "\"client-pkg\"", "\"mcpp-build\""],
        "{lock}"
    );

    // No engine: the refusal offers the library's own way out, the `engine` feature.
    let empty_home = pkg.dir.path().join("empty-cargo-home");
    std::fs::create_dir_all(&empty_home).unwrap();
    let out = cmd
        .env_remove("CARGO_MCPP")
        .env("CARGO_HOME", &empty_home)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains("no cargo-mcpp engine: CARGO_MCPP is unset")
            && t.contains("features = [\"engine\"]")
            && !t.contains("Build::engine"),
        "{t}"
    );
}

#[test]
fn an_engine_killed_after_the_handshake_is_named_with_its_signal_not_a_silent_failure() {
    let pkg = client_package("");
    let engine = pkg.dir.path().join("crashing-engine");
    std::fs::write(&engine, "#!/bin/sh\necho mcpp-engine=0.1.0\nkill -9 $$\n").unwrap();
    std::fs::set_permissions(&engine, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = cargo_build(&pkg, Some(&engine), None);
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains("was killed before it finished") && t.contains("signal: 9"),
        "{t}"
    );
}

#[test]
fn the_engine_names_the_library_when_it_is_the_client_of_another_version() {
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args([
            "mcpp",
            "build-script",
            "--client-version",
            "0.0.0",
            "--client",
            "cargo-mcpp",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains("cargo-mcpp 0.0.0 (this package's build-dependency) started cargo-mcpp")
            && t.contains("make the build-dependency cargo-mcpp = \""),
        "{t}"
    );
}

#[test]
fn a_client_failure_reaches_cargo_mcpp_build_as_the_engines_own_would() {
    // The event line the dependency-free client writes is the engine's `failed` event.
    assert_eq!(mcpp_build::PROGRESS_ENV, cargo_mcpp::report::PROGRESS_ENV);
    let line = mcpp_build::failure_event("p\"q", 3, "a \"b\"\n\\c é\u{1}\t");
    let parsed: cargo_mcpp::report::DeviceEvent = serde_json::from_str(&line).unwrap();
    assert_eq!(
        parsed,
        cargo_mcpp::report::DeviceEvent::Failed {
            package: "p\"q".into(),
            exit_code: 3,
            message: "a \"b\"\n\\c é\u{1}\t".into()
        }
    );

    // No engine under `cargo mcpp build`: exit 3 (a missing tool) with the package named, not
    // cargo's 101.
    let pkg = client_package("");
    let out = pkg
        .cargo_mcpp_build(&[])
        .env("CARGO_MCPP", "/nonexistent/cargo-mcpp")
        .env("GLSLANG_VALIDATOR", pkg.counting_tool("glslangValidator"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("CARGO_MCPP names `/nonexistent/cargo-mcpp`"),
        "{}",
        text(&out)
    );
}
