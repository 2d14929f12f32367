//! Cross compilation of the host C++ lane, for real: a package with `cxx-sources` and the
//! one-line build.rs built for `aarch64-unknown-linux-gnu` on this x86_64 machine (the cc
//! crate's `aarch64-linux-gnu-g++`, the rust target and the cross binutils come from
//! `scripts/setup-toolchains.sh`, component `cross`). The objects in the device cache and the
//! linked program are aarch64 ELF, and an identical second build reruns nothing.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::{repo, text, walk};
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "aarch64-unknown-linux-gnu";
const PKG: &str = "cross-pkg";

/// `e_machine` of ELF for AArch64 (System V ABI, AArch64 supplement).
const EM_AARCH64: u16 = 183;

/// The `e_machine` field of an ELF file's header: the little-endian u16 at offset 18, after
/// checking the `\x7fELF` magic and the little-endian data byte (`EI_DATA` = 1 at offset 5).
/// `None` for anything else.
fn elf_e_machine(bytes: &[u8]) -> Option<u16> {
    if bytes.len() < 20 || &bytes[..4] != b"\x7fELF" || bytes[5] != 1 {
        return None;
    }
    Some(u16::from_le_bytes([bytes[18], bytes[19]]))
}

/// A package with two C++ units (one in a subdirectory, for the `**` glob), called from Rust.
fn cross_package(dir: &Path) -> PathBuf {
    let pkg = dir.join(PKG);
    let files = [
        (
            "Cargo.toml",
            format!(
                "[package]\nname = \"{PKG}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[build-dependencies]\nmcpp-build = {{ path = {:?}, features = [\"engine\"] }}\n\n[package.metadata.mcpp]\ncxx-sources = [\"cpp/**/*.cpp\"]\n\n[workspace]\n",
                repo().join("mcpp-build").display().to_string()
            ),
        ),
        ("build.rs", "fn main() { mcpp_build::build(); }\n".to_string()),
        ("cpp/add.cpp", "extern \"C\" int cross_add(int a, int b) { return a + b; }\n".to_string()),
        ("cpp/more/twice.cpp", "extern \"C\" int cross_twice(int a) { return 2 * a; }\n".to_string()),
        (
            "src/main.rs",
            "extern \"C\" {\n    fn cross_add(a: i32, b: i32) -> i32;\n    fn cross_twice(a: i32) -> i32;\n}\nfn main() {\n    // SAFETY: both are plain C functions of cpp/ taking and returning ints.\n    println!(\"{}\", unsafe { cross_twice(cross_add(2, 3)) });\n}\n".to_string(),
        ),
    ];
    for (rel, text) in files {
        let p = pkg.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    pkg
}

/// The target directory of the other in-process builds: the engine (a build dependency, built
/// for the host) compiles once for all of them.
fn target_dir() -> PathBuf {
    crate::harness::in_process_target()
}

/// The commands that build `pkg` for [`TARGET`], each named: plain cargo and `cargo mcpp
/// build` with the same arguments (issue "One device phase", case 1: the second must rerun
/// nothing and leave the objects aarch64).
fn the_ways_to_build(pkg: &Path) -> Vec<(&'static str, Command)> {
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo
        .arg("build")
        .arg("--manifest-path")
        .arg(pkg.join("Cargo.toml"))
        .args(["--target", TARGET])
        .arg("--target-dir")
        .arg(target_dir());
    let mut mcpp = Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"));
    mcpp.args(["mcpp", "build"])
        .arg("--manifest-path")
        .arg(pkg.join("Cargo.toml"))
        .args(["--target", TARGET])
        .arg("--target-dir")
        .arg(target_dir());
    vec![
        ("cargo build --target", cargo),
        ("cargo mcpp build --target", mcpp),
    ]
}

/// Give `cmd` the environment of a cross build: the target's linker, and nothing from this
/// process that would change the compiler or the accelerator set.
fn cross_env(cmd: &mut Command) {
    cmd.env(
        "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER",
        "aarch64-linux-gnu-gcc",
    )
    // The home of the other in-process builds in that directory (nothing installed).
    .env("CARGO_HOME", crate::harness::bare_cargo_home());
    for v in [
        "CXX",
        "CXXFLAGS",
        "TARGET_CXX",
        "CXX_aarch64_unknown_linux_gnu",
        "CXX_aarch64-unknown-linux-gnu",
        "RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "MCPP_ACCEL",
        "MCPP_NO_ACCEL",
        "CARGO_MCPP",
    ] {
        cmd.env_remove(v);
    }
}

/// The objects of the package in the device cache, `<target-dir>/<target>/debug/mcpp/<pkg>/`,
/// with their bytes and modification times.
fn cached_objects() -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let dir = target_dir().join(TARGET).join("debug/mcpp").join(PKG);
    let mut objects: Vec<_> = walk(&dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "o"))
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
            (p, bytes, mtime)
        })
        .collect();
    objects.sort();
    objects
}

#[test]
fn the_cxx_lane_cross_compiles_to_aarch64_and_no_way_of_building_reruns_the_other() {
    let tmp = tempfile::Builder::new()
        .prefix("mcpp-cross-")
        .tempdir()
        .unwrap();
    let pkg = cross_package(tmp.path());
    let _ = std::fs::remove_dir_all(target_dir().join(TARGET).join("debug/mcpp").join(PKG));
    let build = |way: &str| {
        let (_, mut cmd) = the_ways_to_build(&pkg)
            .into_iter()
            .find(|(w, _)| *w == way)
            .unwrap();
        cross_env(&mut cmd);
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{way}: {}", text(&out));
        text(&out)
    };
    // cargo, then cargo mcpp, then cargo again: the first compiles aarch64 objects, the others
    // rerun nothing and leave every object's bytes and mtime as they were.
    build("cargo build --target");
    let objects = cached_objects();
    let names: Vec<String> = objects
        .iter()
        .map(|(p, _, _)| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(objects.len(), 2, "one object per unit: {names:?}");
    assert!(
        names[0].starts_with("cpp_add.cpp.") && names[1].starts_with("cpp_more_twice.cpp."),
        "{names:?}"
    );
    for (path, bytes, _) in &objects {
        assert_eq!(
            elf_e_machine(bytes),
            Some(EM_AARCH64),
            "{} is not an aarch64 ELF object",
            path.display()
        );
    }
    let program = std::fs::read(target_dir().join(TARGET).join("debug").join(PKG)).unwrap();
    assert_eq!(
        elf_e_machine(&program),
        Some(EM_AARCH64),
        "the linked program is aarch64"
    );
    for way in [
        "cargo mcpp build --target",
        "cargo build --target",
        "cargo build --target",
    ] {
        let out = build(way);
        assert!(
            !out.contains(&format!("Compiling {PKG}")),
            "{way}: recompiled after the other way:\n{out}"
        );
        assert_eq!(
            cached_objects(),
            objects,
            "{way}: the objects' bytes and mtimes are unchanged"
        );
    }
}

#[test]
fn elf_e_machine_reads_the_header_field() {
    let mut header = vec![0u8; 64];
    header[..6].copy_from_slice(b"\x7fELF\x02\x01");
    header[18..20].copy_from_slice(&183u16.to_le_bytes());
    assert_eq!(elf_e_machine(&header), Some(EM_AARCH64));
    header[18..20].copy_from_slice(&62u16.to_le_bytes());
    assert_eq!(elf_e_machine(&header), Some(62), "x86-64");
    assert_eq!(elf_e_machine(b"!<arch>\n"), None);
}

/// A cross C++ compiler the cc crate names but that is not installed is reported by the name
/// searched and where (PATH), not under a path nobody chose (`<package dir>/x86_64-w64-mingw32-g++`,
/// the bare name made absolute against the working directory).
#[test]
fn a_missing_cross_compiler_is_named_as_searched_on_path() {
    let pkg = harness::Package::new(&[
        (
            "Cargo.toml",
            &harness::manifest("cross-missing", "cxx-sources = [\"cpp/add.cpp\"]"),
        ),
        (
            "cpp/add.cpp",
            "extern \"C\" int add(int a, int b) { return a + b; }\n",
        ),
    ]);
    let empty = pkg.dir.path().join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let mut b = pkg.build();
    b.env("TARGET", "x86_64-pc-windows-gnu")
        .env("HOST", "x86_64-unknown-linux-gnu")
        .env("PATH", &empty);
    for v in [
        "CXX",
        "TARGET_CXX",
        "CXX_x86_64_pc_windows_gnu",
        "CXX_x86_64-pc-windows-gnu",
        "HOST_CXX",
    ] {
        b.env_remove(v);
    }
    let e = pkg.refuse(&b);
    assert!(
        e.contains("`x86_64-w64-mingw32-g++`, is not on PATH")
            && e.contains(&empty.display().to_string())
            && !e.contains(&pkg.path("x86_64-w64-mingw32-g++").display().to_string()),
        "{e}"
    );
}
