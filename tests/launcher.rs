//! The compiler launcher (issue 14, `src/launcher.rs`) with a recording shim as the launcher: it
//! goes before nvcc and the host C++ compiler, never before glslangValidator (said once), the
//! fingerprint keys the real compiler (switching the launcher on or off rebuilds nothing fresh),
//! `MCPP_LAUNCHER` overrides the manifest and a rule's `launcher = "none"` turns it off there.
//! The real sccache (two clean builds, cache hits) is `tests/launcher_sccache.rs`.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

mod harness;

use harness::*;

const COMP: &str = "#version 450\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer D { float d[]; };\nvoid main() { d[0] = 1.0; }\n";

/// The cuda-island fixture with a shader beside it, both lanes in the set, and `launcher`.
fn package(tmp: &std::path::Path, pkg: &std::path::Path, launcher_line: &str) {
    std::fs::create_dir_all(pkg.join("shaders")).unwrap();
    std::fs::write(pkg.join("shaders/x.comp"), COMP).unwrap();
    let manifest = std::fs::read_to_string(pkg.join("Cargo.toml")).unwrap();
    let manifest = manifest
        .replace("accel = \"cuda13.0+{sm_80}\"", &format!("accel = \"vulkan1.2, cuda13.0+{{sm_80}}\"\n{launcher_line}"))
        .replace("sources = [\"kernels/*.cu\"]", "sources = [\"kernels/*.cu\", \"shaders/*.comp\"]");
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
    package(tmp.path(), &pkg, &format!("launcher = {:?}", launcher.path().display().to_string()));
    let glslang = real_tool("glslangValidator");
    let b = || {
        let mut b = cuda_build(tmp.path(), &pkg, &root);
        b.env("NVCC_CCBIN", std::fs::canonicalize(nvcc.path()).unwrap()).tool("glslangValidator", &glslang);
        b.env_remove("MCPP_LAUNCHER");
        b
    };
    let first = b().try_compile().unwrap_or_else(|e| panic!("{e}"));
    // The launcher was started with nvcc's path first, then nvcc's own arguments; nvcc itself
    // was started by it only (the recording launcher writes the outputs), never directly.
    let launched = launcher.calls();
    let nvcc_path = root.join("bin/nvcc").display().to_string();
    let cu = launched.iter().find(|c| c.names("kernels/scale.cu")).unwrap_or_else(|| panic!("scale.cu not launched: {launched:?}"));
    assert_eq!(cu.args[0], nvcc_path, "{:?}", cu.args);
    assert!(cu.has("-MF") && cu.has("-o"), "{:?}", cu.args);
    assert!(nvcc.calls().is_empty(), "nvcc ran directly: {:?}", nvcc.argvs());
    assert!(!launched.iter().any(|c| c.args.first().is_some_and(|a| a.ends_with("glslangValidator"))), "glslangValidator was launched: {launched:?}");
    // Said once, naming the compiler and its rule.
    let said: Vec<&str> = first.cargo.warnings().filter(|w| w.contains("does not handle")).collect();
    assert_eq!(said, ["the launcher `sccache` does not handle glslangValidator (spirv): those compiles run without it"]);
    assert!(first.report.ran.iter().any(|id| id.starts_with("spirv:")), "{:?}", first.report.ran);

    // Switching the launcher off (MCPP_LAUNCHER=none over the manifest): everything is fresh.
    let before = launcher.starts();
    let off = b().env("MCPP_LAUNCHER", "none").try_compile().unwrap_or_else(|e| panic!("{e}"));
    assert!(off.report.ran.is_empty(), "switching the launcher off rebuilt {:?}", off.report.ran);
    assert_eq!(launcher.starts(), before);
    assert!(nvcc.calls().is_empty());

    // A changed input with the launcher off runs nvcc directly (its argv without the launcher).
    append(&pkg.join("kernels/scale.cu"), "// edited\n");
    let direct = b().env("MCPP_LAUNCHER", "none").try_compile().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(direct.report.ran.iter().filter(|id| id.starts_with("cuda:")).count(), 1, "{:?}", direct.report.ran);
    assert_eq!(launcher.starts(), before, "{:?}", launcher.argvs());
    assert_eq!(nvcc.calls().len(), 1, "{:?} {:?}", nvcc.records(), direct.report.ran);

    // And back on: fresh again (the fingerprint never saw the launcher).
    let on = b().try_compile().unwrap_or_else(|e| panic!("{e}"));
    assert!(on.report.ran.is_empty(), "switching the launcher on rebuilt {:?}", on.report.ran);

    // A rule's own `launcher = "none"`: the CUDA compile runs without it.
    let manifest = std::fs::read_to_string(pkg.join("Cargo.toml")).unwrap();
    std::fs::write(pkg.join("Cargo.toml"), manifest.replace("[package.metadata.mcpp.cuda]\n", "[package.metadata.mcpp.cuda]\nlauncher = \"none\"\n")).unwrap();
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
    let e = cuda_build(tmp.path(), &pkg, &root).env_remove("MCPP_LAUNCHER").try_compile().unwrap_err().to_string();
    assert!(e.contains("the launcher `no-such-launcher-anywhere` is not on PATH"), "{e}");
    assert!(e.contains("Cargo.toml:8:1") && e.contains("package.metadata.mcpp.launcher"), "{e}");
    let e = cuda_build(tmp.path(), &pkg, &root).env("MCPP_LAUNCHER", "./nope/sccache").try_compile().unwrap_err().to_string();
    assert!(e.contains("MCPP_LAUNCHER"), "{e}");
}
