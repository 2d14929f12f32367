//! The compiler launcher (`src/rules/launcher.rs`) with a recording shim as the launcher: it
//! goes before nvcc and the host C++ compiler, never before glslangValidator (said once), the
//! fingerprint keys the real compiler (switching the launcher on or off rebuilds nothing fresh),
//! `MCPP_LAUNCHER` overrides the manifest and a rule's `launcher = "none"` turns it off there.
//! The real sccache (two clean builds, cache hits) is `tests/launcher_sccache.rs`.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;

use harness::*;

const COMP: &str = "#version 450\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer D { float d[]; };\nvoid main() { d[0] = 1.0; }\n";

/// The cuda-island fixture with a shader beside it, both lanes in the set, and `launcher`.
fn package(tmp: &std::path::Path, pkg: &std::path::Path, launcher_line: &str) {
    std::fs::create_dir_all(pkg.join("shaders")).unwrap();
    std::fs::write(pkg.join("shaders/x.comp"), COMP).unwrap();
    let manifest = std::fs::read_to_string(pkg.join("Cargo.toml")).unwrap();
    let manifest = manifest
        .replace(
            "accel = \"cuda13.0+{sm_80}\"",
            &format!("accel = \"vulkan1.2, cuda13.0+{{sm_80}}\"\n{launcher_line}"),
        )
        .replace(
            "sources = [\"kernels/*.cu\"]",
            "sources = [\"kernels/*.cu\", \"shaders/*.comp\"]",
        );
    std::fs::write(pkg.join("Cargo.toml"), manifest).unwrap();
    let _ = tmp;
}

/// Append `text` to the file (the recording compiler lists no included file: the edits are to
/// the declared source).
fn append(path: &std::path::Path, text: &str) {
    let t = std::fs::read_to_string(path).unwrap();
    std::fs::write(path, format!("{t}{text}")).unwrap();
}

#[test]
fn the_launcher_goes_before_nvcc_only_and_switching_it_rebuilds_nothing() {
    let (tmp, pkg) = fixture("cuda-island");
    let (root, nvcc) = fake_toolkit(tmp.path());
    let launcher = Shim::install(&tmp.path().join("launcher-bin"), "sccache");
    package(
        tmp.path(),
        &pkg,
        &format!("launcher = {:?}", launcher.path().display().to_string()),
    );
    let glslang = real_tool("glslangValidator");
    let b = || {
        let mut b = cuda_build(tmp.path(), &pkg, &root);
        b.env("NVCC_CCBIN", std::fs::canonicalize(nvcc.path()).unwrap())
            .tool("glslangValidator", &glslang);
        b.env_remove("MCPP_LAUNCHER");
        b
    };
    let first = b().try_compile().unwrap_or_else(|e| panic!("{e}"));
    // The launcher was started with nvcc's path first, then nvcc's own arguments; nvcc itself
    // was started by it only (the recording launcher writes the outputs), never directly.
    let launched = launcher.calls();
    let nvcc_path = root.join("bin/nvcc").display().to_string();
    let cu = launched
        .iter()
        .find(|c| c.names("kernels/scale.cu"))
        .unwrap_or_else(|| panic!("scale.cu not launched: {launched:?}"));
    assert_eq!(cu.args[0], nvcc_path, "{:?}", cu.args);
    assert!(cu.has("-MF") && cu.has("-o"), "{:?}", cu.args);
    assert!(
        nvcc.calls().is_empty(),
        "nvcc ran directly: {:?}",
        nvcc.argvs()
    );
    assert!(
        !launched.iter().any(|c| c
            .args
            .first()
            .is_some_and(|a| a.ends_with("glslangValidator"))),
        "glslangValidator was launched: {launched:?}"
    );
    // Said once, naming the compiler and its rule.
    let said: Vec<&str> = first
        .cargo
        .warnings()
        .filter(|w| w.contains("does not handle"))
        .collect();
    assert_eq!(said, ["the launcher `sccache` does not handle glslangValidator (spirv): those compiles run without it"]);
    assert!(
        first.report.ran.iter().any(|id| id.starts_with("spirv:")),
        "{:?}",
        first.report.ran
    );

    // Switching the launcher off (MCPP_LAUNCHER=none over the manifest): everything is fresh.
    let before = launcher.starts();
    let off = b()
        .env("MCPP_LAUNCHER", "none")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        off.report.ran.is_empty(),
        "switching the launcher off rebuilt {:?}",
        off.report.ran
    );
    assert_eq!(launcher.starts(), before);
    assert!(nvcc.calls().is_empty());

    // A changed input with the launcher off runs nvcc directly (its argv without the launcher).
    append(&pkg.join("kernels/scale.cu"), "// edited\n");
    let direct = b()
        .env("MCPP_LAUNCHER", "none")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        direct
            .report
            .ran
            .iter()
            .filter(|id| id.starts_with("cuda:"))
            .count(),
        1,
        "{:?}",
        direct.report.ran
    );
    assert_eq!(launcher.starts(), before, "{:?}", launcher.argvs());
    assert_eq!(
        nvcc.calls().len(),
        1,
        "{:?} {:?}",
        nvcc.records(),
        direct.report.ran
    );

    // And back on: fresh again (the fingerprint never saw the launcher).
    let on = b().try_compile().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        on.report.ran.is_empty(),
        "switching the launcher on rebuilt {:?}",
        on.report.ran
    );

    // A rule's own `launcher = "none"`: the CUDA compile runs without it.
    let manifest = std::fs::read_to_string(pkg.join("Cargo.toml")).unwrap();
    std::fs::write(
        pkg.join("Cargo.toml"),
        manifest.replace(
            "[package.metadata.mcpp.cuda]\n",
            "[package.metadata.mcpp.cuda]\nlauncher = \"none\"\n",
        ),
    )
    .unwrap();
    append(&pkg.join("kernels/scale.cu"), "// edited again\n");
    b().try_compile().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(nvcc.calls().len(), 2, "{:?}", nvcc.argvs());
    assert_eq!(launcher.starts(), before);
}

#[test]
fn a_launcher_that_is_not_there_is_refused_naming_its_key() {
    let (tmp, pkg) = fixture("cuda-island");
    let (root, _nvcc) = fake_toolkit(tmp.path());
    package(tmp.path(), &pkg, "launcher = \"no-such-launcher-anywhere\"");
    let e = cuda_build(tmp.path(), &pkg, &root)
        .env_remove("MCPP_LAUNCHER")
        .try_compile()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the launcher `no-such-launcher-anywhere` is not on PATH"),
        "{e}"
    );
    assert!(
        e.contains("Cargo.toml:8:1") && e.contains("package.metadata.mcpp.launcher"),
        "{e}"
    );
    let e = cuda_build(tmp.path(), &pkg, &root)
        .env("MCPP_LAUNCHER", "./nope/sccache")
        .try_compile()
        .unwrap_err()
        .to_string();
    assert!(e.contains("MCPP_LAUNCHER"), "{e}");
}

/// `cargo mcpp build` of a temp SPIR-V package whose `[package.metadata.mcpp]` ends with
/// `extra`, with `envs`: its exit code, its output (temp paths redacted) and whether the build
/// script ran (it writes `ran` into the package: cargo started).
fn cli_build(extra: &str, envs: &[(&str, &str)]) -> (Option<i32>, String, bool) {
    cli_build_in("", extra, envs)
}

/// [`cli_build`] started in the package's subdirectory `sub` (`""`: the package root).
fn cli_build_in(sub: &str, extra: &str, envs: &[(&str, &str)]) -> (Option<i32>, String, bool) {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-launcher-")
        .tempdir()
        .unwrap();
    let pkg = tmp.path().join("pkg");
    let manifest = format!(
        "[package]\nname = \"launch\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[build-dependencies]\nmcpp-build = {{ path = {:?} }}\n\n[package.metadata.mcpp]\naccel = \"vulkan1.2\"\nsources = [\"shaders/*.comp\"]\n{extra}",
        repo().join("mcpp-build").display().to_string()
    );
    for (rel, text) in [
        ("Cargo.toml", manifest.as_str()),
        ("build.rs", "fn main() {\n    std::fs::write(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/ran\"), \"\").unwrap();\n    mcpp_build::build();\n}\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("shaders/x.comp", COMP),
        ("tools/not-exec", "#!/bin/sh\nexec \"$@\"\n"),
        ("tools/wrap", "#!/bin/sh\nexec \"$@\"\n"),
    ] {
        std::fs::create_dir_all(pkg.join(rel).parent().unwrap()).unwrap();
        std::fs::write(pkg.join(rel), text).unwrap();
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        pkg.join("tools/wrap"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::set_permissions(
        pkg.join("tools/not-exec"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"));
    c.args(["mcpp", "build", "--target-dir"])
        .arg(tmp.path().join("target"))
        .current_dir(pkg.join(sub))
        .env("CARGO_MCPP", env!("CARGO_BIN_EXE_cargo-mcpp"));
    for v in ["MCPP_LAUNCHER", "MCPP_ACCEL", "MCPP_NO_ACCEL"] {
        c.env_remove(v);
    }
    for (k, v) in envs {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (
        out.status.code(),
        redact(&text(&out), tmp.path()),
        pkg.join("ran").exists(),
    )
}

/// One bad launcher: its name, the end of `[package.metadata.mcpp]` and the environment.
type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

#[test]
fn a_bad_launcher_is_refused_by_cargo_mcpp_build_before_cargo_starts() {
    let cases: &[Case] = &[
        ("a launcher not on PATH", "launcher = \"nonexistent-tool\"\n", &[]),
        ("an empty launcher", "launcher = \"\"\n", &[]),
        ("a path that is not executable", "launcher = \"tools/not-exec\"\n", &[]),
        ("a path that is not a file", "launcher = \"./tools\"\n", &[]),
        ("a launcher on a rule whose compilers take none", "launcher = \"tools/wrap\"\n\n[package.metadata.mcpp.spirv]\nlauncher = \"tools/wrap\"\n", &[]),
        ("MCPP_LAUNCHER not on PATH", "", &[("MCPP_LAUNCHER", "nonexistent-tool")]),
        ("MCPP_LAUNCHER not executable", "", &[("MCPP_LAUNCHER", "tools/not-exec")]),
        ("a launcher that is a compiler itself", "launcher = \"g++\"\n", &[]),
        ("MCPP_LAUNCHER that is a compiler itself", "", &[("MCPP_LAUNCHER", "gcc")]),
        ("every problem at once", "launcher = \"\"\n\n[package.metadata.mcpp.spirv]\nlauncher = \"nonexistent-tool\"\n", &[]),
    ];
    let mut all = String::new();
    for (name, extra, envs) in cases {
        let (code, out, ran) = cli_build(extra, envs);
        assert_eq!(code, Some(3), "{name}: {out}");
        assert!(
            !ran,
            "{name}: the build script ran, so cargo had started: {out}"
        );
        assert!(!out.contains("Compiling"), "{name}: {out}");
        all.push_str(&format!("===== {name}\n{out}\n"));
    }
    insta::assert_snapshot!("launcher_refusals", all);

    // The same package with a good launcher (`tools/wrap`, before no compiler of this package)
    // and with `launcher = "none"` on the spirv rule builds.
    let (code, out, ran) = cli_build(
        "launcher = \"tools/wrap\"\n\n[package.metadata.mcpp.spirv]\nlauncher = \"none\"\n",
        &[],
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(ran, "{out}");
}

#[test]
fn a_relative_mcpp_launcher_is_read_from_the_directory_cargo_mcpp_build_started_in() {
    // Started in `src/`: `../tools/wrap` is the package's tools/wrap from there (from the package
    // root, where the build script runs, it would be a file that is not there).
    let (code, out, ran) = cli_build_in("src", "", &[("MCPP_LAUNCHER", "../tools/wrap")]);
    assert_eq!(code, Some(0), "{out}");
    assert!(ran, "{out}");
}
