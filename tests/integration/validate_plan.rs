//! The validated plan of `cargo mcpp build`, before anything
//! runs: the accelerator set is checked as a set, with its origin named (`--accel`, the
//! manifest), before cargo starts and whether or not the package has sources of a rule; every
//! problem of a manifest comes back in one pass, each at its `file:line:col`; no compiler starts.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::{client_dependency, text, Package};
use std::process::{Command, Output};

/// A package with a build.rs (`mcpp_build::build()`), `[package.metadata.mcpp]` body `mcpp`,
/// then `tables` (further TOML), and `files`.
fn package(mcpp: &str, tables: &str, files: &[(&str, &str)]) -> Package {
    let manifest = format!("[package]\nname = \"plan-pkg\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n{}\n[package.metadata.mcpp]\n{mcpp}\n{tables}\n[workspace]\n", client_dependency());
    let mut all: Vec<(&str, &str)> = vec![
        ("Cargo.toml", &manifest),
        ("build.rs", "fn main() { mcpp_build::build(); }\n"),
        ("src/main.rs", "fn main() {}\n"),
    ];
    all.extend_from_slice(files);
    Package::new(&all)
}

/// `cargo mcpp build ARGS` on `pkg`, its compilers behind counting wrappers, no accelerator
/// variable inherited.
fn mcpp_build(pkg: &Package, args: &[&str]) -> Output {
    let glslang = pkg.counting_tool("glslangValidator");
    let slangc = pkg.counting_wrapper_of("slangc", &harness::real_slangc());
    Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args(["mcpp", "build", "--manifest-path"])
        .arg(pkg.path("Cargo.toml"))
        .arg("--target-dir")
        .arg(pkg.dir.path().join("target"))
        .args(args)
        .env("GLSLANG_VALIDATOR", glslang)
        .env("SLANGC", slangc)
        .env("MCPP_HOME", pkg.dir.path().join("mcpp-home"))
        .env_remove("MCPP_ACCEL")
        .env_remove("MCPP_NO_ACCEL")
        .output()
        .unwrap()
}

/// Refused with exit 3 before cargo started and before any compiler ran.
fn assert_refused_before_cargo(pkg: &Package, out: &Output) {
    assert_eq!(out.status.code(), Some(3), "{}", text(out));
    assert!(
        !pkg.dir.path().join("target/debug/build").exists(),
        "cargo build must not have started: {}",
        text(out)
    );
    assert_eq!(
        (pkg.starts("glslangValidator"), pkg.starts("slangc")),
        (0, 0),
        "no compiler may start: {}",
        text(out)
    );
}

const COMP: &str = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n";

#[test]
fn a_cuda_entry_without_a_minor_is_a_refusal_of_the_set_naming_its_origin_without_cu_sources() {
    // No `.cu` source at all: the set itself is malformed.
    let pkg = package(
        "accel = \"vulkan1.2, cuda13+{sm_90}\"\nsources = [\"s/*.comp\"]",
        "",
        &[("s/x.comp", COMP)],
    );
    let out = mcpp_build(&pkg, &[]);
    assert_refused_before_cargo(&pkg, &out);
    let t = text(&out);
    assert!(t.contains("names CUDA 13 without a minor version"), "{t}");
    assert!(
        t.contains(&format!(
            "accelerator set from {}",
            pkg.path("Cargo.toml").display()
        )),
        "the manifest is the origin: {t}"
    );
    assert!(
        t.contains("Cargo.toml:10:1 (key `package.metadata.mcpp.accel`)"),
        "at the key: {t}"
    );
    assert!(t.contains("write cuda13.0"), "{t}");

    let out = mcpp_build(&pkg, &["--accel", "cuda13"]);
    assert_refused_before_cargo(&pkg, &out);
    let t = text(&out);
    assert!(
        t.contains("accelerator set from --accel")
            && t.contains("names CUDA 13 without a minor version"),
        "{t}"
    );
    assert!(!t.contains("MCPP_ACCEL"), "{t}");
}

#[test]
fn a_malformed_accel_option_names_accel_not_the_variable_it_becomes() {
    let pkg = package(
        "accel = \"vulkan1.2\"\nsources = [\"s/*.comp\"]",
        "",
        &[("s/x.comp", COMP)],
    );
    let out = mcpp_build(&pkg, &["--accel", "vulkann"]);
    assert_refused_before_cargo(&pkg, &out);
    let t = text(&out);
    assert!(t.contains("malformed accelerator set from --accel"), "{t}");
    assert!(
        !t.contains("MCPP_ACCEL"),
        "the variable is how build scripts hear of the choice, not its origin: {t}"
    );
}

#[test]
fn every_problem_of_a_manifest_comes_back_in_one_pass_each_at_its_position() {
    let tables = "tools = { glslc = \"\", slangc = \"bin/no-such-slangc\" }\n\
                  [package.metadata.mcpp.hip]\nx = 1\n\
                  [package.metadata.mcpp.spirv]\ninclud = [\"inc\"]\ndefines = { \"1BAD\" = \"1\" }\nincludes = [\"inc\", \"missing\"]\n\
                  [package.metadata.mcpp.slang]\nentry = \"not an ident\"\nstage = \"bogus\"\n\
                  [package.metadata.mcpp.cxx]\nincludes = [\"gone\"]\n";
    let pkg = package(
        "accel = \"vulkan1.2\"\nsources = [\"s/*.comp\", \"s/*.slang\"]",
        tables,
        &[("s/x.comp", COMP), ("s/y.slang", ""), ("inc/a.glsl", "")],
    );
    let out = mcpp_build(&pkg, &[]);
    assert_refused_before_cargo(&pkg, &out);
    let t = text(&out);
    let m = pkg.path("Cargo.toml").display().to_string();
    for (problem, at) in [
        (
            "unknown field `x`",
            format!("{m}:14:1 (key `package.metadata.mcpp.hip.x`)"),
        ),
        (
            "unknown field `includ`",
            format!("{m}:16:1 (key `package.metadata.mcpp.spirv.includ`)"),
        ),
        (
            "`1BAD` is not a preprocessor macro name",
            format!("{m}:17:13 (key `package.metadata.mcpp.spirv.defines.1BAD`)"),
        ),
        (
            "include directory `missing` does not exist",
            format!("{m}:18:20 (key `package.metadata.mcpp.spirv.includes[1]`)"),
        ),
        (
            "`not an ident` is not a Slang function name",
            format!("{m}:20:1 (key `package.metadata.mcpp.slang.entry`)"),
        ),
        (
            "unknown variant `bogus`",
            format!("{m}:21:1 (key `package.metadata.mcpp.slang.stage`)"),
        ),
        (
            "include directory `gone` does not exist",
            format!("{m}:23:13 (key `package.metadata.mcpp.cxx.includes[0]`)"),
        ),
        (
            "[package.metadata.mcpp.tools] glslc is empty",
            format!("{m}:12:11 (key `package.metadata.mcpp.tools.glslc`)"),
        ),
        (
            "[package.metadata.mcpp.tools] slangc names",
            format!("{m}:12:23 (key `package.metadata.mcpp.tools.slangc`)"),
        ),
    ] {
        assert!(t.contains(problem), "missing `{problem}` in:\n{t}");
        assert!(t.contains(&at), "missing `{at}` (for {problem}) in:\n{t}");
    }
    assert!(
        t.contains("bin/no-such-slangc`, which does not exist"),
        "{t}"
    );
}

#[test]
fn refusals_of_list_entries_name_the_entry_and_its_position() {
    let m = |mcpp: &str, files: &[(&str, &str)]| {
        let manifest = harness::manifest("entries", mcpp);
        let mut all = vec![("Cargo.toml", manifest.as_str())];
        all.extend_from_slice(files);
        let pkg = Package::new(&all);
        let e = pkg.refuse(&pkg.build());
        (e, pkg.path("Cargo.toml").display().to_string())
    };
    // A glob that leaves the package: the entry's position.
    let (e, at) = m(
        "accel = \"vulkan1.2\"\nsources = [\"s/*.comp\", \"../*.comp\"]",
        &[("s/x.comp", COMP)],
    );
    assert!(
        e.contains("sources entry '../*.comp' leaves the package"),
        "{e}"
    );
    assert!(
        e.contains(&format!(
            "{at}:8:24 (key `package.metadata.mcpp.sources[1]`)"
        )),
        "{e}"
    );
    // A glob matching nothing.
    let (e, at) = m(
        "accel = \"vulkan1.2\"\nsources = [\"s/*.comp\", \"t/*.comp\"]",
        &[("s/x.comp", COMP)],
    );
    assert!(
        e.contains("matches no file")
            && e.contains(&format!(
                "{at}:8:24 (key `package.metadata.mcpp.sources[1]`)"
            )),
        "{e}"
    );
    // Two sources with one payload name: the entry that listed the second.
    let (e, at) = m(
        "accel = \"vulkan1.2\"\nsources = [\"s/*.comp\", \"t/*.comp\"]",
        &[
            ("s/x.comp", COMP),
            ("t/a-b.comp", COMP),
            ("t/a_b.comp", COMP),
        ],
    );
    assert!(
        e.contains("two device sources map to one payload name"),
        "{e}"
    );
    assert!(
        e.contains(&format!(
            "{at}:8:24 (key `package.metadata.mcpp.sources[1]`)"
        )),
        "{e}"
    );
}

#[cfg(unix)]
#[test]
fn a_source_whose_name_is_not_utf8_is_refused_by_name_with_the_glob() {
    use std::os::unix::ffi::OsStrExt;
    let pkg = Package::new(&[
        (
            "Cargo.toml",
            &harness::manifest(
                "odd",
                "accel = \"vulkan1.2\"\nsources = [\"shaders/c/*.slang\"]",
            ),
        ),
        ("shaders/c/good.slang", ""),
    ]);
    std::fs::write(
        pkg.path("shaders/c")
            .join(std::ffi::OsStr::from_bytes(b"bad\xff.slang")),
        "",
    )
    .unwrap();
    let e = pkg.refuse(&pkg.build());
    assert!(e.contains("sources entry 'shaders/c/*.slang' matches `shaders/c/bad\\xff.slang`, a file name that is not UTF-8"), "{e}");
    assert!(
        e.contains("(key `package.metadata.mcpp.sources[0]`)"),
        "{e}"
    );
    // Under `**`, a directory named so is refused too (it would be walked).
    let pkg = Package::new(&[
        (
            "Cargo.toml",
            &harness::manifest(
                "odd",
                "accel = \"vulkan1.2\"\nsources = [\"shaders/**/*.slang\"]",
            ),
        ),
        ("shaders/good.slang", ""),
    ]);
    std::fs::create_dir_all(
        pkg.path("shaders")
            .join(std::ffi::OsStr::from_bytes(b"d\xfe")),
    )
    .unwrap();
    let e = pkg.refuse(&pkg.build());
    assert!(
        e.contains("matches `shaders/d\\xfe`, a file name that is not UTF-8"),
        "{e}"
    );
}

#[test]
fn a_tools_path_is_checked_for_the_lanes_the_build_runs() {
    // `tools.nvcc` names a missing program: a Vulkan build runs no CUDA rule, so it is not
    // needed; an empty value is malformed whatever the build.
    let pkg = package("accel = \"vulkan1.2\"\nsources = [\"s/*.comp\"]\ntools = { nvcc = \"/no/such/nvcc\", glslc = \"\" }", "", &[("s/x.comp", COMP)]);
    let out = mcpp_build(&pkg, &[]);
    assert_refused_before_cargo(&pkg, &out);
    let t = text(&out);
    assert!(
        t.contains("[package.metadata.mcpp.tools] glslc is empty"),
        "{t}"
    );
    assert!(!t.contains("/no/such/nvcc"), "{t}");
}

/// The host C++ lane runs after the device phase, but what of it needs no compiler is refused
/// before any device compiler starts (`pipeline::validate`): a `cxx-sources` glob matching
/// nothing, a unit that is neither C++ nor C, and an import cycle among the user's own module
/// interfaces. An import of the generated surface module is not refused there (it exists only
/// after the device phase): that package builds.
#[test]
fn host_cxx_refusals_come_before_any_device_compiler_starts() {
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 3] = [
        ("cxx-sources = [\"cpp/*.cpp\"]", &[], "cpp/*.cpp"),
        (
            "cxx-sources = [\"cpp/use.m\"]",
            &[("cpp/use.m", "int x;\n")],
            "`cpp/use.m` is not a C++ or C source",
        ),
        (
            "cxx-sources = [\"cpp/*.cppm\"]",
            &[
                (
                    "cpp/a.cppm",
                    "export module shader_pkg.a;\nimport shader_pkg.b;\n",
                ),
                (
                    "cpp/b.cppm",
                    "export module shader_pkg.b;\nimport shader_pkg.a;\n",
                ),
            ],
            "cpp/a.cppm imports cpp/b.cppm imports cpp/a.cppm",
        ),
    ];
    for (line, files, expected) in cases {
        let pkg = harness::shader_package("glslang");
        harness::edit(
            &pkg.path("Cargo.toml"),
            "sources = [",
            &format!("{line}\nsources = ["),
        );
        for (rel, body) in files {
            pkg.write(rel, body);
        }
        let e = pkg.refuse(&pkg.build());
        assert!(
            e.contains(expected) && e.contains("cxx-sources"),
            "{line}: {e}"
        );
        assert_eq!(
            pkg.starts("glslangValidator") + pkg.starts("glslc"),
            0,
            "{line}: refused before any device compiler (or its probe) started: {e}"
        );
    }
    // The generated module is imported, not provided by a listed unit: the lane checks that.
    let pkg = harness::shader_package("glslang");
    harness::edit(
        &pkg.path("Cargo.toml"),
        "sources = [",
        "cxx-sources = [\"cpp/use.cpp\"]\nsources = [",
    );
    pkg.write("cpp/use.cpp", "import shader_pkg.shaders;\nunsigned long n() { return shader_pkg::shaders::a::scale_comp().size_bytes; }\n");
    let mut b = pkg.build();
    b.env("CXX", harness::real_tool("clang++-19"));
    let outcome = pkg.compile(&b);
    assert!(
        outcome.report.ran.iter().any(|r| r.contains("cpp/use.cpp")),
        "{:?}",
        outcome.report.ran
    );
}
