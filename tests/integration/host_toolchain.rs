//! The declared host toolchain, `[package.metadata.mcpp.host-toolchain]`: a toolchain root
//! (`layout`), a cross prefix (`prefix`), the compiler by name or path (`cxx`) and the
//! environment of a setup script (`env-script`) decide the host C++ compiler over `CXX`; the host
//! C++ lane compiles with it, in that environment, and its refusals name the key.
//! A managed zig (`managed = "zig"`) compiles host code that a Rust program links and runs.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::*;
use std::path::Path;

/// The manifest: one host C++ file, `cxx` as its `[package.metadata.mcpp.cxx]` body, `table`
/// as its host toolchain.
fn host_manifest(cxx: &str, table: &str) -> String {
    format!("{}\n[package.metadata.mcpp.cxx]\n{cxx}\n\n[package.metadata.mcpp.host-toolchain]\n{table}\n", manifest("host-pkg", "cxx-sources = [\"cpp/*.cpp\"]\nlauncher = \"none\""))
}

/// A package with one host C++ file including `<marker.h>` from `hdr/` (an include directory
/// of the host C++ lane), and `table` as its host toolchain.
fn host_package(table: &str) -> Package {
    Package::new(&[
        ("Cargo.toml", &host_manifest("includes = [\"hdr\"]", table)),
        (
            "cpp/one.cpp",
            "#include <marker.h>\nextern \"C\" int one() { return MARKER; }\n",
        ),
        ("hdr/marker.h", "#define MARKER 1\n"),
    ])
}

/// The compile command of `cpp/one.cpp` in the build's compilation database.
fn compile_command(outcome: &cargo_mcpp::pipeline::Outcome) -> String {
    command_in(
        &outcome.variant_dir.join("compile_commands.json"),
        "cpp/one.cpp",
    )
}

/// The compile command of the unit whose path ends with `unit` in the compilation database
/// `db`, its arguments joined by spaces.
fn command_in(db: &Path, unit: &str) -> String {
    let db: serde_json::Value = serde_json::from_slice(&std::fs::read(db).unwrap()).unwrap();
    let entry = db
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["file"].as_str().unwrap().ends_with(unit))
        .expect("the unit is listed")
        .clone();
    entry["arguments"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|x| x.as_str().unwrap().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| entry["command"].as_str().unwrap().to_string())
}

/// The bytes of `cpp/one.cpp`'s object (the file after `-o` in its compile command).
/// The host unit `cpp/one.cpp` was compiled by this build (not taken fresh).
fn assert_compiled_one(outcome: &cargo_mcpp::pipeline::Outcome) {
    assert!(
        outcome
            .report
            .ran
            .iter()
            .any(|id| id.contains("cpp/one.cpp")),
        "{:?}",
        outcome.report
    );
}

fn object_bytes(outcome: &cargo_mcpp::pipeline::Outcome) -> Vec<u8> {
    let command = compile_command(outcome);
    let object = command
        .split(' ')
        .skip_while(|a| *a != "-o")
        .nth(1)
        .expect("an -o argument");
    std::fs::read(object).unwrap()
}

fn build_with_cxx(pkg: &Package, cxx: &str) -> cargo_mcpp::Build {
    let mut b = pkg.build();
    b.env("CXX", cxx).env_remove("MCPP_LAUNCHER");
    b
}

#[test]
fn a_layout_and_a_prefix_choose_the_compiler_over_cxx() {
    // A toolchain root holding clang++ (a recording wrapper of the real clang++-19).
    let pkg = host_package("layout = \"llvm\"");
    let bin = pkg.path("llvm/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let clang = Shim::wrap(&bin, "clang++", Path::new("/usr/bin/clang++-19"));
    let outcome = pkg.compile(&build_with_cxx(&pkg, "g++"));
    assert!(
        compile_command(&outcome).starts_with(&bin.join("clang++").display().to_string()),
        "{}",
        compile_command(&outcome)
    );
    assert!(
        !clang.calls().is_empty(),
        "the layout's clang++ compiled the unit"
    );
    assert_compiled_one(&outcome);

    // A prefix, looked up on PATH: Debian's x86_64-linux-gnu-g++. Another compiler reruns the unit.
    pkg.write(
        "Cargo.toml",
        &host_manifest("includes = [\"hdr\"]", "prefix = \"x86_64-linux-gnu-\""),
    );
    let outcome = pkg.compile(&build_with_cxx(&pkg, "clang++-19"));
    assert!(
        compile_command(&outcome).starts_with("/usr/bin/x86_64-linux-gnu-g++"),
        "{}",
        compile_command(&outcome)
    );
    assert_compiled_one(&outcome);
    assert!(
        pkg.compile(&build_with_cxx(&pkg, "clang++-19"))
            .report
            .ran
            .is_empty(),
        "a no-op runs nothing"
    );
}

#[test]
fn the_env_scripts_variables_reach_the_host_compiler_and_its_edit_rebuilds() {
    // The header is found only through the script's CPLUS_INCLUDE_PATH.
    let pkg = host_package("cxx = \"g++\"\nenv-script = \"setup.sh\"");
    pkg.write(
        "Cargo.toml",
        &host_manifest("", "cxx = \"g++\"\nenv-script = \"setup.sh\""),
    );
    pkg.write(
        "setup.sh",
        &format!("export CPLUS_INCLUDE_PATH={}\n", pkg.path("hdr").display()),
    );
    let mut b = pkg.build();
    b.env_remove("CPLUS_INCLUDE_PATH")
        .env_remove("MCPP_LAUNCHER");
    let outcome = pkg.compile(&b);
    assert_compiled_one(&outcome);
    let first = object_bytes(&outcome);
    assert!(
        pkg.compile(&b).report.ran.is_empty(),
        "the capture is cached: a no-op runs nothing"
    );

    // The script points elsewhere: the unit is compiled again, against the other header.
    pkg.write("hdr2/marker.h", "#define MARKER 2\n");
    pkg.write(
        "setup.sh",
        &format!("export CPLUS_INCLUDE_PATH={}\n", pkg.path("hdr2").display()),
    );
    let outcome = pkg.compile(&b);
    // The script's new environment rebuilds.
    assert_compiled_one(&outcome);
    assert_ne!(
        object_bytes(&outcome),
        first,
        "stale object after the script's edit"
    );

    // Without the script the header is not found: the environment was the script's.
    pkg.write("Cargo.toml", &host_manifest("", "cxx = \"g++\""));
    let e = pkg.refuse(&b);
    assert!(e.contains("marker.h"), "{e}");
}

#[test]
fn a_toolchain_that_is_not_there_is_refused_naming_the_key() {
    let pkg = host_package("layout = \"no-such-root\"");
    let e = pkg.refuse(&build_with_cxx(&pkg, "g++"));
    assert!(
        e.contains("the host toolchain's layout")
            && e.contains("is not a directory")
            && e.contains("package.metadata.mcpp.host-toolchain.layout")
            && e.contains(&pkg.manifest_at("layout")),
        "{e}"
    );

    let pkg = host_package("layout = \"empty\"\nprefix = \"riscv64-linux-gnu-\"");
    std::fs::create_dir_all(pkg.path("empty/bin")).unwrap();
    let e = pkg.refuse(&build_with_cxx(&pkg, "g++"));
    assert!(
        e.contains("the declared host toolchain has no C++ compiler")
            && e.contains("empty/bin/riscv64-linux-gnu-clang++")
            && e.contains("empty/bin/riscv64-linux-gnu-g++"),
        "{e}"
    );

    let pkg = host_package("cxx = \"bin/no-such-c++\"");
    let e = pkg.refuse(&build_with_cxx(&pkg, "g++"));
    assert!(
        e.contains("the host toolchain's compiler")
            && e.contains("does not exist")
            && e.contains("package.metadata.mcpp.host-toolchain.cxx"),
        "{e}"
    );

    let pkg = host_package("compiler = \"g++\"");
    let e = pkg.refuse(&build_with_cxx(&pkg, "g++"));
    assert!(
        e.contains("unknown field `compiler`")
            && e.contains("`layout`, `prefix`, `cxx`, `env-script`, `env-script-args`")
            && e.contains(&pkg.manifest_at("compiler")),
        "{e}"
    );
}

#[test]
fn a_compiler_on_the_env_scripts_path_is_the_one_that_runs() {
    // The script puts a `c++` that is clang first on PATH; the unit's command names it.
    let pkg = host_package("env-script = \"setup.sh\"");
    let bin = pkg.path("tc/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink("/usr/bin/clang++-19", bin.join("c++")).unwrap();
    pkg.write(
        "setup.sh",
        &format!("export PATH={}:$PATH\n", bin.display()),
    );
    let mut b = pkg.build();
    b.env("CXX", "c++").env_remove("MCPP_LAUNCHER");
    let outcome = pkg.compile(&b);
    assert!(
        compile_command(&outcome).starts_with(&bin.join("c++").display().to_string()),
        "{}",
        compile_command(&outcome)
    );

    // `prefix` and `cxx` together: one of them is refused, not silently dropped.
    pkg.write(
        "Cargo.toml",
        &host_manifest(
            "includes = [\"hdr\"]",
            "prefix = \"x86_64-linux-gnu-\"\ncxx = \"g++\"",
        ),
    );
    let e = pkg.refuse(&b);
    assert!(
        e.contains("the host toolchain sets both `prefix` and `cxx`")
            && e.contains(&pkg.manifest_at("prefix")),
        "{e}"
    );
}

/// The one `MCPP_HOME` of the managed host toolchain's tests, under `target/tmp`, with zig
/// installed by `cargo mcpp fetch` once per test run ([`once_per_run`]; the wheel is 100 MB;
/// pip's cache and an install left by an earlier run make later fetches cheap).
fn zig_home() -> std::path::PathBuf {
    static HOME: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let root = repo().join("target/tmp/managed-host-toolchain");
        let home = root.join("mcpp-home");
        once_per_run(&root, || {
            let pkg = root.join("fetch");
            std::fs::create_dir_all(pkg.join("cpp")).unwrap();
            // A workspace of its own: it sits inside this repository's.
            std::fs::write(
                pkg.join("Cargo.toml"),
                format!("{}\n[workspace]\n", host_manifest("", "managed = \"zig\"")),
            )
            .unwrap();
            std::fs::write(
                pkg.join("cpp/one.cpp"),
                "extern \"C\" int one() { return 1; }\n",
            )
            .unwrap();
            std::fs::create_dir_all(pkg.join("src")).unwrap();
            std::fs::write(pkg.join("src/lib.rs"), "").unwrap();
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
                .args(["mcpp", "fetch", "--manifest-path"])
                .arg(pkg.join("Cargo.toml"))
                .env("MCPP_HOME", &home)
                .env_remove("CARGO_NET_OFFLINE")
                .output()
                .unwrap();
            assert!(out.status.success(), "cargo mcpp fetch: {}", text(&out));
        });
        home
    })
    .clone()
}

/// A package whose host C++ unit compiles only against zig's libc++ (`_LIBCPP_VERSION`; the
/// system's compilers use libstdc++), with `table` as its host toolchain.
fn zig_package(table: &str) -> Package {
    Package::new(&[
        ("Cargo.toml", &host_manifest("includes = [\"hdr\"]", table)),
        (
            "cpp/one.cpp",
            "#include <cstddef>\n#include <marker.h>\n#ifndef _LIBCPP_VERSION\n#error not compiled against zig's libc++\n#endif\nextern \"C\" int one() { return MARKER; }\n",
        ),
        ("hdr/marker.h", "#define MARKER 1\n"),
    ])
}

#[test]
fn a_managed_zig_compiles_the_host_code_and_a_header_edit_recompiles_it() {
    let home = zig_home();
    let pkg = zig_package("managed = \"zig\"");
    let mut b = build_with_cxx(&pkg, "g++");
    b.env("MCPP_HOME", &home);
    let outcome = pkg.compile(&b);
    let zig = home.join("packages/zig/0.17.1/ziglang/zig");
    let command = compile_command(&outcome);
    assert!(
        command.starts_with(&format!("{} c++ ", zig.display())),
        "the managed zig, with `c++` leading, wins over CXX: {command}"
    );
    assert!(
        command.contains("-target x86_64-linux-gnu") && !command.contains("--target="),
        "{command}"
    );
    let first = object_bytes(&outcome);
    // zig's clang names itself in the object's .comment; Debian's clang and g++ say "Debian".
    let comment = |bytes: &[u8]| {
        let at = bytes.windows(14).position(|w| w == b"clang version ");
        at.map(|i| String::from_utf8_lossy(&bytes[i..i + 40]).into_owned())
    };
    let version = comment(&first).expect("a clang version in the object");
    assert!(
        !String::from_utf8_lossy(&first).contains("Debian"),
        "{version}"
    );
    let decisions = std::fs::read_to_string(pkg.work_dir().join("tool-decisions.json")).unwrap();
    assert!(
        decisions.contains("host-toolchain] managed")
            && decisions.contains("toolchain package zig 0.17.1"),
        "{decisions}"
    );

    // An included header's edit recompiles the unit, with other bytes; a no-op runs nothing.
    pkg.write("hdr/marker.h", "#define MARKER 2\n");
    let outcome = pkg.compile(&b);
    assert_compiled_one(&outcome);
    assert_ne!(
        object_bytes(&outcome),
        first,
        "stale object after the header's edit"
    );
    assert!(
        pkg.compile(&b).report.ran.is_empty(),
        "a no-op runs nothing"
    );
}

#[test]
fn a_managed_zig_not_installed_is_refused_naming_cargo_mcpp_fetch() {
    // The package's own, empty MCPP_HOME: a build never downloads.
    let pkg = zig_package("managed = \"zig\"");
    let e = pkg.refuse(&build_with_cxx(&pkg, "g++"));
    assert!(
        e.contains(
            "the host C++ compiler is the toolchain package zig 0.17.1, which is not installed"
        ) && e.contains("package.metadata.mcpp.host-toolchain.managed")
            && e.contains(&pkg.manifest_at("managed"))
            && e.contains("cargo mcpp fetch --manifest-path"),
        "{e}"
    );
    assert!(
        !pkg.path("mcpp-home/packages").exists()
            && !pkg.out_dir().join("mcpp").join("cxx").exists()
    );

    // A package that is no compiler, and `managed` beside `cxx`, are refused at the key.
    let pkg = zig_package("managed = \"glslang\"");
    let e = pkg.refuse(&build_with_cxx(&pkg, "g++"));
    assert!(
        e.contains("provides no host C++ compiler") && e.contains(&pkg.manifest_at("managed")),
        "{e}"
    );
    let pkg = zig_package("managed = \"zig\"\ncxx = \"g++\"");
    let e = pkg.refuse(&build_with_cxx(&pkg, "g++"));
    assert!(
        e.contains("sets both `managed` and `cxx`") && e.contains(&pkg.manifest_at("cxx =")),
        "{e}"
    );
}

#[test]
fn nvcc_with_a_managed_zig_as_its_host_compiler_is_refused_naming_the_ways_out() {
    let (tmp, pkg) = fixture("cuda-island");
    let manifest = std::fs::read_to_string(pkg.join("Cargo.toml")).unwrap();
    std::fs::write(
        pkg.join("Cargo.toml"),
        format!("{manifest}\n[package.metadata.mcpp.host-toolchain]\nmanaged = \"zig\"\n"),
    )
    .unwrap();
    let (root, shim) = fake_toolkit(tmp.path());
    let mut b = cuda_build(tmp.path(), &pkg, &root);
    b.env("MCPP_HOME", zig_home()).env_remove("MCPP_LAUNCHER");
    let e = b.try_compile().unwrap_err().to_string();
    assert!(
        e.contains("nvcc cannot use the managed host toolchain zig as its host compiler (-ccbin)")
            && e.contains("package.metadata.mcpp.host-toolchain.managed")
            && e.contains("Cargo.toml:20:1")
            && e.contains("cxx or layout")
            && e.contains("[package.metadata.mcpp.cuda] ccbin")
            && e.contains("compiler = \"clang\""),
        "{e}"
    );
    assert!(
        shim.calls().iter().all(|c| !c.names("kernels/scale.cu")),
        "nvcc compiled nothing"
    );
}

/// The package name of the program linking zig-compiled host code.
const ZIG_APP: &str = "zig-linked-app";

/// The package of [`a_managed_zigs_host_code_links_into_a_rust_program_that_runs`]: the
/// client form of mcpp-build (no features), one host C++ unit compiled by the managed zig
/// against its libc++ headers, called from `main`.
fn zig_linked_app(dir: &Path) -> std::path::PathBuf {
    let pkg = dir.join(ZIG_APP);
    let manifest = format!(
        "[package]\nname = \"{ZIG_APP}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[build-dependencies]\nmcpp-build = {{ path = {:?} }}\n\n[package.metadata.mcpp]\ncxx-sources = [\"cpp/*.cpp\"]\n\n[package.metadata.mcpp.host-toolchain]\nmanaged = \"zig\"\n\n[workspace]\n",
        repo().join("mcpp-build").display().to_string()
    );
    for (rel, text) in [
        ("Cargo.toml", manifest.as_str()),
        ("build.rs", "fn main() { mcpp_build::build(); }\n"),
        ("cpp/add.cpp", &zig_add_source("a + b")),
        (
            "src/main.rs",
            "extern \"C\" {\n    fn zig_add(a: i32, b: i32) -> i32;\n}\nfn main() {\n    // SAFETY: a plain C function of cpp/add.cpp taking and returning ints.\n    println!(\"zig_add(20, 22) = {}\", unsafe { zig_add(20, 22) });\n}\n",
        ),
    ] {
        let p = pkg.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    pkg
}

/// `cpp/add.cpp`: `zig_add` applies `expr` (of `a` and `b`) through a class with a virtual
/// function, allocated with `new` and freed with `delete` (the C++ runtime: operator new and
/// delete, the vtable's type information), in a `std::array` (libc++'s headers).
fn zig_add_source(expr: &str) -> String {
    format!(
        "#include <array>\n#ifndef _LIBCPP_VERSION\n#error not compiled against zig's libc++\n#endif\nstruct Op {{\n    virtual ~Op() = default;\n    virtual int apply(int a, int b) const = 0;\n}};\nstruct Sum final : Op {{\n    int apply(int a, int b) const override {{ return {expr}; }}\n}};\nextern \"C\" int zig_add(int a, int b) {{\n    std::array<Op*, 1> ops{{new Sum()}};\n    int r = ops[0]->apply(a, b);\n    delete ops[0];\n    return r;\n}}\n"
    )
}

#[test]
fn a_managed_zigs_host_code_links_into_a_rust_program_that_runs() {
    let home = zig_home();
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-zig-link-")
        .tempdir()
        .unwrap();
    let pkg = zig_linked_app(tmp.path());
    // Shared with the other tests that build packages: only this package's cache is cleared.
    let target = harness::packages_target();
    let cache = target.join("debug/mcpp").join(ZIG_APP);
    let _ = std::fs::remove_dir_all(&cache);
    let build_and_run = || {
        let mut build = std::process::Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"));
        build
            .args(["mcpp", "build", "--manifest-path"])
            .arg(pkg.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&target)
            .env("MCPP_HOME", &home);
        for v in [
            "CXX",
            "CXXFLAGS",
            "RUSTFLAGS",
            "CARGO_BUILD_TARGET",
            "CARGO_MCPP",
            "MCPP_LAUNCHER",
            "MCPP_ACCEL",
            "MCPP_NO_ACCEL",
        ] {
            build.env_remove(v);
        }
        let out = build.output().unwrap();
        assert!(out.status.success(), "cargo mcpp build: {}", text(&out));
        let run = std::process::Command::new(target.join("debug").join(ZIG_APP))
            .output()
            .unwrap();
        assert!(run.status.success(), "{}", text(&run));
        run.stdout
    };
    assert_eq!(
        String::from_utf8_lossy(&build_and_run()),
        "zig_add(20, 22) = 42\n"
    );
    let dbs: Vec<_> = walk(&cache)
        .into_iter()
        .filter(|p| p.ends_with(cargo_mcpp::engine::layout::COMPILE_COMMANDS))
        .collect();
    assert_eq!(dbs.len(), 1, "one compilation database: {dbs:?}");
    let zig = home.join("packages/zig/0.17.1/ziglang/zig");
    let command = command_in(&dbs[0], "cpp/add.cpp");
    assert!(
        command.starts_with(&format!("{} c++ ", zig.display())),
        "the managed zig compiled the unit: {command}"
    );

    // The unit's edit is compiled and linked again: the program prints the new value.
    std::fs::write(pkg.join("cpp/add.cpp"), zig_add_source("a * b")).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&build_and_run()),
        "zig_add(20, 22) = 440\n"
    );
}
