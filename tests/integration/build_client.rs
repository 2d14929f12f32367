//! `mcpp_build::build()` end to end, with the real glslangValidator behind a counting wrapper:
//! the client form (a package whose build.rs runs this repository's `cargo-mcpp` as its engine,
//! named by `CARGO_MCPP`, under a plain `cargo build`), the in-process form (mcpp-build's
//! `engine` feature: a library its dependents build with nothing installed, two engine versions
//! in one graph), and the earlier `cargo-mcpp` build-dependency (kept with `engine`, refused
//! without it).
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
    cargo_build_env(pkg, engine, cargo_home, &[])
}

/// [`cargo_build`] with more environment variables.
fn cargo_build_env(
    pkg: &harness::Package,
    engine: Option<&Path>,
    cargo_home: Option<&Path>,
    vars: &[(&str, &std::ffi::OsStr)],
) -> Output {
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
    cmd.envs(vars.iter().copied());
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
    // Where `cargo install` puts the engine: both sides look in the same place.
    if std::env::var_os("CARGO_MCPP").is_none() {
        assert_eq!(
            cargo_mcpp::cli::build::installed_engine(),
            mcpp_build::Build::new()
                .locate_engine()
                .ok()
                .map(|(p, _)| p)
        );
    }
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

    // A cargo-mcpp on PATH is named, with the way to use it, and not run unasked.
    let bin = pkg.dir.path().join("path-bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_cargo-mcpp"), bin.join("cargo-mcpp")).unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin.clone())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let out = cargo_build_env(&pkg, None, Some(&empty_home), &[("PATH", path.as_os_str())]);
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains(&format!(
            "a cargo-mcpp is on PATH (`{}`)",
            bin.join("cargo-mcpp").display()
        )) && t.contains(&format!(
            "export CARGO_MCPP={}",
            bin.join("cargo-mcpp").display()
        )),
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
        text(&out).contains(
            "`/bin/true` (CARGO_MCPP) is not a cargo-mcpp engine this build script can use"
        ),
        "{}",
        text(&out)
    );
}

/// `cargo-mcpp mcpp build-script` with `request` on its standard input.
fn build_script(request: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args(["mcpp", "build-script"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn the_engine_refuses_a_request_of_another_version_or_format() {
    let request = mcpp_build::Build::new().request().unwrap().replace(
        &format!("\"client_version\":\"{}\"", mcpp_build::VERSION),
        "\"client_version\":\"0.0.0\"",
    );
    let out = build_script(&request);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.starts_with(&format!("mcpp-engine={}\n", env!("CARGO_PKG_VERSION"))),
        "the handshake first: {t}"
    );
    assert!(
        t.contains(&format!(
            "mcpp-build 0.0.0 (this package's build-dependency) started cargo-mcpp {}",
            env!("CARGO_PKG_VERSION")
        )),
        "{t}"
    );
    assert!(
        t.contains("cargo::warning=")
            && t.contains("cargo install cargo-mcpp --version 0.0.0")
            && t.contains("features = [\"engine\"]"),
        "{t}"
    );

    let out = build_script("{\"format\":99}");
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("format 99, this engine reads format 2"),
        "{}",
        text(&out)
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

/// The client's builder: the package's whole build-dependency tree is `mcpp-build`, and the
/// builder's finer controls (`tool`, `env`, `env_remove`, `release`, `jobs`) reach the engine
/// through the request, which applies them as the in-process builder does.
#[test]
fn the_clients_build_dependency_tree_is_one_package_and_its_builder_reaches_the_engine() {
    let pkg = client_package("");
    let glslang = pkg.counting_tool("glslangValidator");
    pkg.write(
        "build.rs",
        &format!(
            "fn main() {{\n    mcpp_build::Build::new()\n        .tool(\"glslangValidator\", {glslang:?})\n        .env_remove(\"MCPP_NO_ACCEL\")\n        .env(\"CXXFLAGS\", \"-O2 -g\")\n        .env(\"MCPP_UNREAD\", \"--no-accel\")\n        .env_remove(\"-x\")\n        .env(\"MCPP_ACCEL\", \"vulkan1.3\")\n        .release(true)\n        .jobs(1)\n        .compile();\n}}\n"
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
    assert_eq!(packages, ["\"client-pkg\"", "\"mcpp-build\""], "{lock}");
}

/// The earlier build.rs form, a `cargo-mcpp` build-dependency without its `engine` feature and
/// `cargo_mcpp::build()`: refused, naming the two lines of the `mcpp-build` form.
#[test]
fn the_earlier_cargo_mcpp_build_dependency_without_the_engine_is_refused_with_the_new_lines() {
    let pkg = client_package("");
    let manifest = std::fs::read_to_string(pkg.path("Cargo.toml")).unwrap();
    std::fs::write(
        pkg.path("Cargo.toml"),
        manifest.replace(
            &harness::client_dependency(),
            &format!(
                "[build-dependencies]\ncargo-mcpp = {{ path = {:?}, default-features = false }}\n",
                env!("CARGO_MANIFEST_DIR")
            ),
        ),
    )
    .unwrap();
    pkg.write("build.rs", "fn main() { cargo_mcpp::build(); }\n");
    let out = cargo_build(&pkg, None, None);
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains("the cargo-mcpp library without its `engine` feature no longer runs a build script's device phase")
            && t.contains(&format!(
                "write `mcpp-build = \"{}\"` in [build-dependencies] instead of cargo-mcpp, and in build.rs `mcpp_build::build();`",
                env!("CARGO_PKG_VERSION")
            )),
        "{t}"
    );
    assert!(
        t.contains("use of deprecated function `cargo_mcpp::build`"),
        "the compiler says it first: {t}"
    );
    assert_eq!(compiles(&pkg), 0);
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
fn a_client_failure_reaches_cargo_mcpp_build_as_the_engines_own_would() {
    // The event line the dependency-free client writes is the engine's `failed` event.
    assert_eq!(
        mcpp_build::PROGRESS_ENV,
        cargo_mcpp::output::report::PROGRESS_ENV
    );
    let line = mcpp_build::failure_event("p\"q", 3, "a \"b\"\n\\c é\u{1}\t");
    let parsed: cargo_mcpp::output::report::DeviceEvent = serde_json::from_str(&line).unwrap();
    assert_eq!(
        parsed,
        cargo_mcpp::output::report::DeviceEvent::Failed {
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

/// The target directory of the in-process tests, shared with the other builds under the bare
/// `CARGO_HOME` ([`harness::in_process_target`]), so the engine (cargo-mcpp with `engine`,
/// ~45 packages) is compiled once; each test's packages have their own names (the device cache
/// is `target/<profile>/mcpp/<package>`).
fn in_process_target() -> PathBuf {
    harness::in_process_target()
}

/// `cargo <args>` of the package at `dir` with nothing installed: no `CARGO_MCPP`, the bare
/// `CARGO_HOME` ([`harness::bare_cargo_home`]), `MCPP_HOME` under `home_in`, offline, the
/// in-process target directory; glslangValidator is `glslang` (a counting wrapper), as a
/// toolchain on the machine is.
fn cargo_with_nothing_installed(
    dir: &Path,
    home_in: &Path,
    glslang: &Path,
    args: &[&str],
) -> Output {
    let home = harness::bare_cargo_home();
    let out = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(args)
        .arg("--offline")
        .arg("--target-dir")
        .arg(in_process_target())
        .current_dir(dir)
        .env_remove("CARGO_MCPP")
        .env_remove("CARGO_TARGET_DIR")
        .env("CARGO_HOME", &home)
        .env("GLSLANG_VALIDATOR", glslang)
        .env("MCPP_HOME", home_in.join("mcpp-home"))
        .env_remove("MCPP_ACCEL")
        .env_remove("MCPP_NO_ACCEL")
        .output()
        .unwrap();
    assert!(
        !home.join("bin").exists(),
        "nothing was installed into CARGO_HOME"
    );
    out
}

/// A library made by `cargo mcpp new --lib` (the in-process form) and an application that
/// depends on it: a plain `cargo build` of the application with no engine anywhere (no
/// `CARGO_MCPP`, a `CARGO_HOME` without `bin/`) compiles the library's shader in its build
/// script, and the program prints the embedded SPIR-V; an edit of the shader changes the bytes.
#[test]
fn an_application_builds_a_library_made_by_new_lib_with_no_engine_installed() {
    let pkg = harness::Package::new(&[(
        "app/Cargo.toml",
        "[package]\nname = \"inproc-app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ninproc-shaders = { path = \"../inproc-shaders\" }\n\n[workspace]\n",
    ), (
        "app/src/main.rs",
        "fn main() {\n    let code = inproc_shaders::shaders::double_comp().code;\n    let sum = code.iter().fold(0u64, |s, w| s.wrapping_mul(31).wrapping_add(*w as u64));\n    println!(\"{} words, magic {:#x}, checksum {sum}\", code.len(), code[0]);\n}\n",
    )]);
    let glslang = pkg.counting_tool("glslangValidator");
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args(["mcpp", "new", "inproc-shaders", "--lib", "--lane", "spirv"])
        .current_dir(pkg.dir.path().join("pkg"))
        .env_remove("CARGO_MCPP")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("Created src/lib.rs")
            && said.contains("Next: cargo mcpp build && cargo run --example mcpp_spirv")
            && !said.contains("export CARGO_MCPP"),
        "{said}"
    );
    let lib = pkg.path("inproc-shaders");
    let manifest = std::fs::read_to_string(lib.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains(&format!(
            "mcpp-build = {{ path = {:?}, features = [\"engine\"] }}",
            harness::repo().join("mcpp-build").display().to_string()
        )) && !manifest.contains("[package.metadata.docs.rs]"),
        "{manifest}"
    );
    assert!(lib.join("examples/mcpp_spirv.rs").is_file() && !lib.join("src/main.rs").exists());
    // The library is its own workspace (a temp dir has none above it).
    std::fs::write(lib.join("Cargo.toml"), format!("{manifest}\n[workspace]\n")).unwrap();

    let app = pkg.path("app");
    let build = || cargo_with_nothing_installed(&app, pkg.dir.path(), &glslang, &["build"]);
    let out = build();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(pkg.compiles("glslangValidator").len(), 1, "{}", text(&out));
    let run = || {
        let out = Command::new(in_process_target().join("debug/inproc-app"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let first = run();
    assert!(
        first.contains(" words, magic 0x7230203, checksum "),
        "{first}"
    );

    // A no-op compiles nothing; an edit of the library's shader changes the embedded words.
    let out = build();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(pkg.compiles("glslangValidator").len(), 1);
    harness::edit(&lib.join("shaders/double.comp"), "2.0", "3.0");
    let out = build();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(pkg.compiles("glslangValidator").len(), 2);
    assert_ne!(
        run(),
        first,
        "stale SPIR-V after an edit of the library's shader"
    );
}

/// A copy of this repository's two crates (`cargo-mcpp`, `mcpp-build`) under `dir` with the
/// version `version` (another semver-major for cargo): the sources the engine compiles, the
/// manifests with the version changed and the workspace and dev-dependencies left out.
fn crates_of_version(dir: &Path, version: &str) -> PathBuf {
    let repo = harness::repo();
    let root = dir.join(format!("cargo-mcpp-{version}"));
    let copy = |from: &Path, to: &Path| {
        let status = Command::new("cp")
            .arg("-r")
            .arg(from)
            .arg(to)
            .status()
            .unwrap();
        assert!(status.success());
    };
    std::fs::create_dir_all(root.join("mcpp-build")).unwrap();
    for d in ["src", "templates"] {
        copy(&repo.join(d), &root.join(d));
    }
    copy(
        &repo.join("toolchain-packages.toml"),
        &root.join("toolchain-packages.toml"),
    );
    copy(&repo.join("mcpp-build/src"), &root.join("mcpp-build/src"));
    let ours = env!("CARGO_PKG_VERSION");
    let manifest = std::fs::read_to_string(repo.join("Cargo.toml")).unwrap();
    let manifest = manifest[..manifest.find("\n[dev-dependencies]").unwrap()].replacen(
        &format!("version = \"{ours}\""),
        &format!("version = \"{version}\""),
        1,
    );
    std::fs::write(root.join("Cargo.toml"), manifest).unwrap();
    let client = std::fs::read_to_string(repo.join("mcpp-build/Cargo.toml"))
        .unwrap()
        .replacen(
            &format!("version = \"{ours}\""),
            &format!("version = \"{version}\""),
            1,
        )
        .replace(
            &format!("version = \"={ours}\""),
            &format!("version = \"={version}\""),
        );
    assert!(client.contains(&format!("\"={version}\"")), "{client}");
    std::fs::write(root.join("mcpp-build/Cargo.toml"), client).unwrap();
    root
}

/// A shader library in the in-process form on the `mcpp-build` at `client`.
fn shader_library(name: &str, client: &Path, factor: &str) -> Vec<(String, String)> {
    vec![
        (
            format!("{name}/Cargo.toml"),
            format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[build-dependencies]\nmcpp-build = {{ path = {:?}, features = [\"engine\"] }}\n\n[package.metadata.mcpp]\naccel = \"vulkan1.2\"\nsources = [\"shaders/*.comp\"]\n\n[package.metadata.mcpp.spirv]\ncompiler = \"glslang\"\n\n[workspace]\n", client.display().to_string()),
        ),
        (format!("{name}/build.rs"), "fn main() {\n    mcpp_build::build();\n}\n".into()),
        (
            format!("{name}/src/lib.rs"),
            "//! Shaders.\n\n/// The compiled shaders.\npub mod shaders {\n    include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\"));\n}\n".into(),
        ),
        (
            format!("{name}/shaders/scale.comp"),
            format!("#version 450\nlayout(local_size_x = 64) in;\nlayout(std430, binding = 0) buffer Data {{ float data[]; }};\nvoid main() {{ uint i = gl_GlobalInvocationID.x; data[i] = data[i] * {factor}; }}\n"),
        ),
    ]
}

/// Two libraries in one graph whose build scripts use cargo-mcpp of two semver-major versions
/// (this one and a copy made 0.99.0): each build script links its own engine, the application
/// builds with nothing installed and embeds both shaders.
#[test]
fn two_libraries_on_two_major_versions_of_the_engine_build_in_one_graph() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-two-majors-")
        .tempdir()
        .unwrap();
    let other = crates_of_version(tmp.path(), "0.99.0");
    let mut files = shader_library("major-a", &harness::repo().join("mcpp-build"), "2.0");
    files.extend(shader_library("major-b", &other.join("mcpp-build"), "5.0"));
    files.push((
        "major-app/Cargo.toml".into(),
        "[package]\nname = \"major-app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nmajor-a = { path = \"../major-a\" }\nmajor-b = { path = \"../major-b\" }\n\n[workspace]\n".into(),
    ));
    files.push((
        "major-app/src/main.rs".into(),
        "fn main() {\n    let a = major_a::shaders::scale_comp().code;\n    let b = major_b::shaders::scale_comp().code;\n    println!(\"a {} words, b {} words, differ {}\", a.len(), b.len(), a != b);\n}\n".into(),
    ));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let pkg = harness::Package::new(&refs);
    let glslang = pkg.counting_tool("glslangValidator");
    let app = pkg.path("major-app");
    let out = cargo_with_nothing_installed(&app, pkg.dir.path(), &glslang, &["build"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(pkg.compiles("glslangValidator").len(), 2, "{}", text(&out));
    let lock = std::fs::read_to_string(app.join("Cargo.lock")).unwrap();
    for (name, version) in [
        ("cargo-mcpp", env!("CARGO_PKG_VERSION")),
        ("cargo-mcpp", "0.99.0"),
        ("mcpp-build", env!("CARGO_PKG_VERSION")),
        ("mcpp-build", "0.99.0"),
    ] {
        assert!(
            lock.contains(&format!("name = \"{name}\"\nversion = \"{version}\"")),
            "{name} {version} in the graph: {lock}"
        );
    }
    let out = Command::new(in_process_target().join("debug/major-app"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(" words, differ true"),
        "{}",
        text(&out)
    );
}

/// A build script's own engine compiles naga (the WGSL translator) only with the `wgsl`
/// feature: without it the `.wgsl` sources are refused, all named, at the manifest's `sources`
/// key, with the feature.
#[test]
fn a_wgsl_shader_in_a_build_script_engine_without_the_wgsl_feature_is_refused_naming_it() {
    let pkg = harness::Package::new(&[
        (
            "Cargo.toml",
            &format!(
                "[package]\nname = \"wgsl-no-feature\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[build-dependencies]\nmcpp-build = {{ path = {:?}, features = [\"engine\"] }}\n\n[package.metadata.mcpp]\naccel = \"vulkan1.2\"\nsources = [\"shaders/*.wgsl\"]\n\n[workspace]\n",
                harness::repo().join("mcpp-build").display().to_string()
            ),
        ),
        ("build.rs", "fn main() {\n    mcpp_build::build();\n}\n"),
        (
            "src/lib.rs",
            "pub mod shaders {\n    include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\"));\n}\n",
        ),
        (
            "shaders/half.wgsl",
            "@group(0) @binding(0) var<storage, read_write> data: array<f32>;\n\n@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) id: vec3<u32>) {\n    data[id.x] = 0.5 * data[id.x];\n}\n",
        ),
        (
            "shaders/double.wgsl",
            "@group(0) @binding(0) var<storage, read_write> data: array<f32>;\n\n@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) id: vec3<u32>) {\n    data[id.x] = 2.0 * data[id.x];\n}\n",
        ),
    ]);
    let glslang = pkg.counting_tool("glslangValidator");
    let out = cargo_with_nothing_installed(&pkg.path(""), pkg.dir.path(), &glslang, &["build"]);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("shaders/double.wgsl, shaders/half.wgsl are WGSL, and this engine was compiled without the WGSL translator (naga)"),
        "every WGSL source is named: {said}"
    );
    // At the manifest's `sources` key (line 11), with the feature that brings naga.
    assert!(
        said.contains("Cargo.toml:11:")
            && said.contains("features = [\"wgsl\"]")
            && said.contains("package.metadata.mcpp.sources"),
        "{said}"
    );
}

/// `mcpp-build`'s `wgsl` feature brings naga into the engine (and the engine with it); its
/// `engine` feature alone does not. Cargo's own resolution of mcpp-build's features, so no
/// engine is compiled here: the engine's WGSL step is the command's, whose bytes the `wgsl`
/// suite checks.
#[test]
fn the_wgsl_feature_of_mcpp_build_compiles_naga_into_the_engine_and_engine_alone_does_not() {
    let tree = |features: &str| {
        let out = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args([
                "tree",
                "--offline",
                "-p",
                "mcpp-build",
                "--features",
                features,
            ])
            .args(["-e", "normal", "--prefix", "none", "-f", "{p} [{f}]"])
            .current_dir(harness::repo())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let has = |tree: &str, package: &str| tree.lines().any(|l| l.starts_with(package));
    let with = tree("wgsl");
    assert!(has(&with, "naga v"), "{with}");
    assert!(
        with.lines()
            .any(|l| l.starts_with("cargo-mcpp v") && l.ends_with("[engine,wgsl]")),
        "{with}"
    );
    let without = tree("engine");
    assert!(
        has(&without, "cargo-mcpp v") && !has(&without, "naga v"),
        "{without}"
    );
}

/// The earlier build.rs form with the engine (`cargo-mcpp = { default-features = false,
/// features = ["engine"] }`, `cargo_mcpp::build()`) keeps working, with nothing installed.
#[test]
fn the_earlier_cargo_mcpp_build_dependency_with_the_engine_keeps_working() {
    let pkg = harness::client_package(
        "earlier-form",
        "",
        "mod shaders { include!(concat!(env!(\"OUT_DIR\"), \"/mcpp_shaders.rs\")); }\nfn main() { println!(\"{} words\", shaders::a::scale_comp().code.len()); }\n",
    );
    let manifest = std::fs::read_to_string(pkg.path("Cargo.toml")).unwrap();
    std::fs::write(
        pkg.path("Cargo.toml"),
        manifest.replace(
            &harness::client_dependency(),
            &format!(
                "[build-dependencies]\ncargo-mcpp = {{ path = {:?}, default-features = false, features = [\"engine\"] }}\n",
                env!("CARGO_MANIFEST_DIR")
            ),
        ),
    )
    .unwrap();
    pkg.write("build.rs", "fn main() { cargo_mcpp::build(); }\n");
    let glslang = pkg.counting_tool("glslangValidator");
    let out = cargo_with_nothing_installed(&pkg.path(""), pkg.dir.path(), &glslang, &["build"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(compiles(&pkg), 2, "{}", text(&out));
}

/// `cargo-mcpp mcpp build-script` run as a build script runs it for `pkg` (its directory,
/// `OUT_DIR`, the counting glslangValidator), `request` on its standard input.
fn build_script_for(pkg: &harness::Package, request: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args(["mcpp", "build-script"])
        .env("CARGO_MANIFEST_DIR", pkg.path(""))
        .env("OUT_DIR", pkg.out_dir())
        .env("CARGO_PKG_NAME", "shader-pkg")
        .env("GLSLANG_VALIDATOR", pkg.counting_tool("glslangValidator"))
        .env("MCPP_HOME", pkg.dir.path().join("mcpp-home"))
        .env_remove("MCPP_ACCEL")
        .env_remove("MCPP_NO_ACCEL")
        .env_remove("MCPP_PROGRESS_SOCKET")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn the_installed_engine_applies_manifest_values_set_in_build_rs_and_names_them_in_a_refusal() {
    let pkg = harness::shader_package("glslang");
    let out = build_script_for(&pkg, &mcpp_build::Build::new().request().unwrap());
    assert!(out.status.success(), "{}", text(&out));
    let manifest_64 = pkg.embedded_bytes("shaders/b/scale.comp");
    let mut client = mcpp_build::Build::new();
    client
        .define("spirv", "WORKGROUP", "32")
        .flag("spirv", "-DUNUSED=-1");
    let out = build_script_for(&pkg, &client.request().unwrap());
    assert!(out.status.success(), "{}", text(&out));
    assert_ne!(pkg.embedded_bytes("shaders/b/scale.comp"), manifest_64);
    let last = pkg.compiles("glslangValidator");
    assert!(
        last.iter()
            .any(|l| l.contains("-DWORKGROUP=32") && l.contains(" -DUNUSED=-1")),
        "{last:?}"
    );

    let mut client = mcpp_build::Build::new();
    let line = line!() + 1;
    client.option("spirv", "compilr", "glslc");
    let out = build_script_for(&pkg, &client.request().unwrap());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains(&format!(
            "set by {}:{line}: Build::option(\"spirv\", \"compilr\", ..)",
            file!()
        )) && t.contains("`compiler`"),
        "{t}"
    );
}
