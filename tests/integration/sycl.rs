//! The SYCL lane, argv-verified: no SYCL compiler installs on these machines, so every test
//! runs the recording shim as `icpx` in a fake oneAPI layout ([`fake_oneapi`]) and checks the
//! exact command lines, the package-level device link consuming the objects the shim wrote,
//! and, with [`Shim::digest_inputs`], the bytes (a header edit reruns exactly its includers and
//! the device link, and changes their bytes).
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use harness::*;
use std::path::{Path, PathBuf};

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// A SYCL package: `kernels/a.sycl` including `include/common.h`, `kernels/b.sycl`, and a GCC
/// install directory stand-in at `<tmp>/gcc/12`; `extra` is appended to the SYCL table.
fn sycl_package(accel: &str, sources: &str, extra: &str) -> Package {
    let p = Package::new(&[
        ("kernels/a.sycl", "#include \"common.h\"\nvoid a() {}\n"),
        ("kernels/b.sycl", "void b() {}\n"),
        ("include/common.h", "#define SCALE 2\n"),
    ]);
    let gcc = p.dir.path().join("gcc/12");
    std::fs::create_dir_all(&gcc).unwrap();
    p.write(
        "Cargo.toml",
        &format!("{}\n[package.metadata.mcpp.sycl]\nincludes = [\"include\"]\ngcc-install-dir = {:?}\n{extra}\n", manifest("sycl-pkg", &format!("accel = \"{accel}\"\nsources = {sources}")), s(&gcc)),
    );
    p
}

fn build(p: &Package, oneapi: &Path) -> cargo_mcpp::Build {
    let mut b = device_build(p.dir.path(), &p.path(""));
    b.env("ONEAPI_ROOT", oneapi);
    b
}

/// The objects' paths named by the compiles (`-o`), by source suffix.
fn object_of(shim: &Shim, source: &str) -> PathBuf {
    let call = shim
        .calls()
        .into_iter()
        .find(|c| c.has("-c") && c.names(source))
        .unwrap_or_else(|| panic!("no compile of {source}"));
    PathBuf::from(call.after("-o").unwrap())
}

#[test]
fn sycl_argv_verified_per_source_and_one_device_link_over_every_object() {
    let p = sycl_package("sycl", "[\"kernels/*.sycl\"]", "");
    let (oneapi, icpx) = fake_oneapi(p.dir.path());
    let outcome = build(&p, &oneapi)
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let gcc = format!("--gcc-install-dir={}", s(&p.dir.path().join("gcc/12")));
    let calls = icpx.calls();
    assert_eq!(
        calls.len(),
        3,
        "two compiles and one device link: {:?}",
        icpx.argvs()
    );
    for rel in ["kernels/a.sycl", "kernels/b.sycl"] {
        let call = calls.iter().find(|c| c.has("-c") && c.names(rel)).unwrap();
        let obj = call.after("-o").unwrap().to_string();
        let dep = call.after("-MF").unwrap().to_string();
        let expected = [
            "-fsycl",
            "-std=c++17",
            "-fPIC",
            "-O0",
            &gcc,
            "-fsycl-targets=spir64",
            &format!("-I{}", s(&p.path("include"))),
            "-MD",
            "-MF",
            &dep,
            "-x",
            "c++",
            "-c",
            &s(&p.path(rel)),
            "-o",
            &obj,
        ];
        assert_eq!(call.args, expected, "{rel}");
        assert!(Path::new(&obj).is_file() && dep.ends_with(".d"), "{obj}");
    }
    // The package-level step: after both compiles, consuming exactly their objects.
    let (a, b) = (
        object_of(&icpx, "kernels/a.sycl"),
        object_of(&icpx, "kernels/b.sycl"),
    );
    let link = &calls[2];
    let out = link.after("-o").unwrap().to_string();
    assert!(out.ends_with("/sycl/obj/sycl_device_link.o"), "{out}");
    assert_eq!(
        link.args,
        [
            "-fsycl",
            "-fPIC",
            &gcc,
            "-fsycl-targets=spir64",
            "-fsycl-link",
            &s(&a),
            &s(&b),
            "-o",
            &out
        ]
    );
    let linked = std::fs::read_to_string(&out).unwrap();
    assert!(
        linked.contains(&s(&a)) && linked.contains(&s(&b)),
        "the shim's device link names the objects it read: {linked}"
    );
    // The archive holds both objects and the device link; the runtime follows it.
    let lines: Vec<String> = outcome.cargo.lines().to_vec();
    let libs: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("cargo::rustc-link-lib="))
        .collect();
    assert_eq!(
        libs,
        [
            "cargo::rustc-link-lib=static=mcpp_sycl_sycl_pkg",
            "cargo::rustc-link-lib=dylib=sycl",
            "cargo::rustc-link-lib=dylib:+verbatim=libstdc++.so.6"
        ]
    );
    let lib_dir = oneapi.join("compiler/latest/lib");
    assert!(
        lines.contains(&format!("cargo::rustc-link-search=native={}", s(&lib_dir))),
        "{lines:?}"
    );
    assert!(
        lines.contains(&format!("cargo::rustc-link-arg=-Wl,-rpath,{}", s(&lib_dir))),
        "{lines:?}"
    );
    // `why tool icpx` answers with the root and what named it.
    let decisions = std::fs::read_to_string(p.work_dir().join("tool-decisions.json")).unwrap();
    assert!(
        decisions.contains("\"icpx\"") && decisions.contains("ONEAPI_ROOT"),
        "{decisions}"
    );
}

#[test]
fn sycl_argv_verified_a_header_edit_reruns_exactly_its_includer_and_the_device_link_and_the_bytes_change(
) {
    let p = sycl_package("sycl", "[\"kernels/*.sycl\"]", "");
    let (oneapi, icpx) = fake_oneapi(p.dir.path());
    icpx.digest_inputs();
    build(&p, &oneapi)
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let (a, b) = (
        object_of(&icpx, "kernels/a.sycl"),
        object_of(&icpx, "kernels/b.sycl"),
    );
    let dlink = a.with_file_name("sycl_device_link.o");
    let before: Vec<Vec<u8>> = [&a, &b, &dlink]
        .iter()
        .map(|f| std::fs::read(f).unwrap())
        .collect();
    let dep = std::fs::read_to_string(a.with_extension("d")).unwrap();
    assert!(
        dep.contains(&s(&p.path("include/common.h"))),
        "the shim's depfile lists the header: {dep}"
    );
    // A no-op build starts nothing, not even a version probe.
    let starts = icpx.starts();
    let outcome = build(&p, &oneapi).try_compile().unwrap();
    assert_eq!(icpx.starts(), starts, "a no-op build started icpx");
    assert!(outcome.report.ran.is_empty(), "{:?}", outcome.report.ran);
    // The header only a.sycl includes: a.sycl and the device link rerun (and the archive), b.sycl does not.
    p.write("include/common.h", "#define SCALE 3\n");
    let calls_before = icpx.calls().len();
    let outcome = build(&p, &oneapi).try_compile().unwrap();
    let rerun: Vec<String> = icpx.calls()[calls_before..]
        .iter()
        .map(|c| {
            if c.has("-fsycl-link") {
                "device-link".to_string()
            } else {
                c.args[c.args.iter().position(|x| x == "-c").unwrap() + 1].clone()
            }
        })
        .collect();
    assert_eq!(
        rerun,
        [s(&p.path("kernels/a.sycl")), "device-link".to_string()]
    );
    assert_eq!(
        outcome
            .report
            .ran
            .iter()
            .filter(|id| id.starts_with("sycl:"))
            .collect::<Vec<_>>(),
        ["sycl:kernels/a.sycl", "sycl:device-link"]
    );
    let after: Vec<Vec<u8>> = [&a, &b, &dlink]
        .iter()
        .map(|f| std::fs::read(f).unwrap())
        .collect();
    assert_ne!(
        before[0], after[0],
        "a.sycl's object follows the header's bytes"
    );
    assert_eq!(before[1], after[1], "b.sycl's object is untouched");
    assert_ne!(
        before[2], after[2],
        "the device link follows the objects' bytes"
    );
}

#[test]
fn sycl_argv_verified_targets_nvidia_through_the_cuda_entry() {
    let p = sycl_package("sycl, cuda13.0+{sm_89,sm_90}", "[\"kernels/*.sycl\"]", "");
    let (oneapi, icpx) = fake_oneapi(p.dir.path());
    let (cuda, _) = fake_toolkit(p.dir.path());
    let outcome = build(&p, &oneapi)
        .env("CUDA_PATH", &cuda)
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let targeting = [
        "-fsycl-targets=nvptx64-nvidia-cuda",
        &format!("--cuda-path={}", s(&cuda)),
        "-Xsycl-target-backend",
        "--cuda-gpu-arch=sm_89",
        "-Xsycl-target-backend",
        "--cuda-gpu-arch=sm_90",
    ];
    for call in icpx.calls() {
        let at = call
            .args
            .iter()
            .position(|a| a == "-fsycl-targets=nvptx64-nvidia-cuda")
            .unwrap_or_else(|| panic!("{:?}", call.args));
        assert_eq!(
            call.args[at..at + targeting.len()],
            targeting,
            "compiles and the device link share the targeting"
        );
    }
    // The cuda entry has no .cu source, but SYCL compiles for it (`Rule::borrows`): no
    // "nothing was compiled for it" warning.
    let warnings: Vec<&String> = outcome
        .cargo
        .lines()
        .iter()
        .filter(|l| l.contains("names cuda but no source"))
        .collect();
    assert!(warnings.is_empty(), "{:?}", outcome.cargo.lines());
}

#[test]
fn sycl_argv_verified_a_compiler_that_exits_0_without_writing_its_object_fails_the_build() {
    // DPC++ without `-x c++` takes a `.sycl` file for a linker input, exits 0 and writes
    // nothing: the shim does that to any start lacking `-x c++`, and the lane's argv has it.
    let p = sycl_package("sycl", "[\"kernels/*.sycl\"]", "");
    let (oneapi, icpx) = fake_oneapi(p.dir.path());
    icpx.silent_unless_args("-x c++");
    let e = build(&p, &oneapi).try_compile().unwrap_err().to_string();
    // The compiles wrote their objects; the device link (no -x c++: its inputs are objects) did
    // not, so the engine refuses it exactly as it would a compile that forgot `-x c++`.
    assert!(
        e.contains("icpx -fsycl-link (2 objects) exited 0 but did not write")
            && e.contains("sycl_device_link.o"),
        "{e}"
    );
    assert!(object_of(&icpx, "kernels/a.sycl").is_file());
    // A compile without `-x c++` is refused the same way (the shim silent unless `-x sycl`).
    let p = sycl_package("sycl", "[\"kernels/*.sycl\"]", "");
    let (oneapi, icpx) = fake_oneapi(p.dir.path());
    icpx.silent_unless_args("-x sycl");
    let e = build(&p, &oneapi).try_compile().unwrap_err().to_string();
    assert!(
        e.contains("icpx kernels/a.sycl exited 0 but did not write"),
        "{e}"
    );
}

#[test]
fn sycl_argv_verified_cpp_sources_only_through_a_glob_constrained_to_sycl() {
    let p = sycl_package(
        "sycl",
        "[{ glob = \"kernels/*.cpp\", accel = \"sycl\" }]",
        "",
    );
    p.write("kernels/c.cpp", "void c() {}\n");
    let (oneapi, icpx) = fake_oneapi(p.dir.path());
    build(&p, &oneapi)
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let call = icpx.calls().into_iter().find(|c| c.has("-c")).unwrap();
    assert!(
        call.line()
            .contains(&format!("-x c++ -c {}", s(&p.path("kernels/c.cpp")))),
        "{}",
        call.line()
    );
    // The same file through a plain glob is host C++: refused, naming the constrained form.
    p.write(
        "Cargo.toml",
        &p.read("Cargo.toml").replace(
            "[{ glob = \"kernels/*.cpp\", accel = \"sycl\" }]",
            "[\"kernels/*.cpp\"]",
        ),
    );
    let e = build(&p, &oneapi).try_compile().unwrap_err().to_string();
    assert!(
        e.contains("a `.cpp` file is sycl source only through a glob constrained to sycl")
            && e.contains("accel = \"sycl\""),
        "{e}"
    );
    // A constraint the build does not name leaves them out (warned) and compiles nothing more.
    let calls = icpx.calls().len();
    p.write(
        "Cargo.toml",
        &p.read("Cargo.toml")
            .replace(
                "[\"kernels/*.cpp\"]",
                "[{ glob = \"kernels/*.cpp\", accel = \"sycl\" }]",
            )
            .replace(
                "accel = \"sycl\"\nsources",
                "accel = \"vulkan1.2\"\nsources",
            ),
    );
    build(&p, &oneapi)
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(icpx.calls().len(), calls);
}

#[test]
fn sycl_argv_verified_cmplr_root_and_the_default_gcc_install_dir() {
    let p = Package::new(&[("kernels/a.sycl", "void a() {}\n")]);
    p.write(
        "Cargo.toml",
        &manifest(
            "sycl-pkg",
            "accel = \"sycl\"\nsources = [\"kernels/*.sycl\"]",
        ),
    );
    let (oneapi, icpx) = fake_oneapi(p.dir.path());
    let mut b = device_build(p.dir.path(), &p.path(""));
    b.env("CMPLR_ROOT", oneapi.join("compiler/latest"));
    b.try_compile().unwrap_or_else(|e| panic!("{e}"));
    let call = icpx.calls().into_iter().find(|c| c.has("-c")).unwrap();
    assert!(
        call.args
            .iter()
            .any(|a| a.starts_with("--gcc-install-dir=/usr/lib/gcc/")),
        "{}",
        call.line()
    );
    let decisions = std::fs::read_to_string(p.work_dir().join("tool-decisions.json")).unwrap();
    assert!(decisions.contains("CMPLR_ROOT"), "{decisions}");
}

/// A `.sycl` file can be an island's device half: the boundary header is forced into its
/// compile (`-include`), and is an input of it; the host fallback compiles when the build
/// leaves SYCL out.
#[test]
fn sycl_argv_verified_an_island_device_half_gets_the_boundary_header() {
    let p = sycl_package("sycl", "[\"kernels/*.sycl\"]", "");
    p.write(
        "kernels/k.sycl",
        "MCPP_EXPORT_C int k_run(float* y, unsigned n) { return 0; }\n",
    );
    p.write(
        "host/k.cpp",
        "MCPP_EXPORT_C int k_run(float* y, unsigned n) { return 1; }\n",
    );
    let manifest = p.read("Cargo.toml");
    p.write("Cargo.toml", &format!("{manifest}\n[package.metadata.mcpp.island]\nsources = [\"kernels/k.sycl\", \"host/k.cpp\"]\nfallback = [\"host/k.cpp\"]\n"));
    let (oneapi, icpx) = fake_oneapi(p.dir.path());
    build(&p, &oneapi)
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let calls = icpx.calls();
    let island = calls
        .iter()
        .find(|c| c.has("-c") && c.names("kernels/k.sycl"))
        .expect("a compile of the device half");
    let header = PathBuf::from(
        island
            .after("-include")
            .unwrap_or_else(|| panic!("no forced include: {:?}", island.args)),
    );
    assert!(
        std::fs::read_to_string(&header).unwrap().contains("k_run"),
        "the boundary header: {}",
        header.display()
    );
    let other = calls
        .iter()
        .find(|c| c.has("-c") && c.names("kernels/b.sycl"))
        .unwrap();
    assert!(
        !other.has("-include"),
        "only the island's device half gets the header: {:?}",
        other.args
    );
    // Without SYCL in the set, the fallback is the half that compiles (by the host compiler).
    let out = build(&p, &oneapi)
        .accel("")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.report.ran.iter().any(|id| id.contains("host/k.cpp")),
        "{:?}",
        out.report.ran
    );
}

#[test]
fn the_default_gcc_install_dir_is_the_host_compilers_and_a_host_compiler_without_gcc_is_refused() {
    let p = Package::new(&[("kernels/a.sycl", "void a() {}\n")]);
    p.write(
        "Cargo.toml",
        &manifest(
            "sycl-pkg",
            "accel = \"sycl\"\nsources = [\"kernels/*.sycl\"]",
        ),
    );
    let (oneapi, icpx) = fake_oneapi(p.dir.path());
    // The declared host compiler (CXX), a recording wrapper of the real g++.
    let gxx = Shim::wrap(&p.dir.path().join("host"), "g++", &real_tool("g++"));
    let mut b = device_build(p.dir.path(), &p.path(""));
    b.env("CMPLR_ROOT", oneapi.join("compiler/latest"))
        .env("CXX", gxx.path());
    b.try_compile().unwrap_or_else(|e| panic!("{e}"));
    let answer = std::process::Command::new(real_tool("g++"))
        .arg("-print-libgcc-file-name")
        .output()
        .unwrap();
    let libgcc = PathBuf::from(String::from_utf8_lossy(&answer.stdout).trim());
    let want = format!("--gcc-install-dir={}", s(libgcc.parent().unwrap()));
    let call = icpx.calls().into_iter().find(|c| c.has("-c")).unwrap();
    assert!(call.has(&want), "{want} in: {}", call.line());
    assert!(
        gxx.records()
            .iter()
            .any(|r| r.has("-print-libgcc-file-name")),
        "the host compiler was asked"
    );

    // A host compiler that uses compiler-rt names no GCC: refused, naming the key.
    let mut b = device_build(p.dir.path(), &p.path(""));
    b.env("CMPLR_ROOT", oneapi.join("compiler/latest"))
        .env("CXX", "clang++-19 -rtlib=compiler-rt");
    let e = b.try_compile().map(|_| ()).unwrap_err().to_string();
    assert!(
        e.contains("names no GCC installation, which DPC++ needs for libstdc++")
            && e.contains("package.metadata.mcpp.sycl.gcc-install-dir")
            && e.contains("-rtlib=compiler-rt -print-libgcc-file-name")
            && e.contains("libclang_rt.builtins"),
        "{e}"
    );
}

/// A toolkit set up by a script: `env-script` names a fake `setvars.sh` that exports
/// `CMPLR_ROOT` and a marker; with nothing else naming oneAPI, the build finds the compiler
/// through it, and every compile runs with the marker. An unchanged script runs nothing again
/// (not even the script: it counts its runs); a changed marker reruns the compiles.
#[test]
fn sycl_argv_verified_env_script_names_the_toolkit_and_its_variables_reach_the_compiles() {
    let p = sycl_package(
        "sycl",
        "[\"kernels/*.sycl\"]",
        "env-script = \"setup/setvars.sh\"\nenv-script-args = [\"--force\"]",
    );
    let (oneapi, icpx) = fake_oneapi(p.dir.path());
    let runs = p.dir.path().join("script-runs");
    let script = |marker: &str| {
        format!(
            "echo \"sourced with $1\" >> '{}'\necho 'oneAPI environment initialized'\nexport CMPLR_ROOT='{}'\nexport MCPP_ENV_SCRIPT_MARKER={marker}\n",
            s(&runs),
            s(&oneapi.join("compiler/latest"))
        )
    };
    p.write("setup/setvars.sh", &script("one"));
    let build = || {
        device_build(p.dir.path(), &p.path(""))
            .try_compile()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let outcome = build();
    assert_eq!(
        outcome.report.ran.len(),
        4,
        "two compiles, the device link, the archive: {:?}",
        outcome.report.ran
    );
    let calls = icpx.calls();
    assert_eq!(calls.len(), 3, "{:?}", icpx.argvs());
    for c in &calls {
        assert_eq!(
            c.env.get("MCPP_ENV_SCRIPT_MARKER").map(String::as_str),
            Some("one"),
            "{}",
            c.line()
        );
        assert_eq!(
            c.env.get("CMPLR_ROOT").map(String::as_str),
            Some(s(&oneapi.join("compiler/latest")).as_str())
        );
    }
    assert_eq!(
        std::fs::read_to_string(&runs).unwrap(),
        "sourced with --force\n"
    );
    let decisions = std::fs::read_to_string(p.work_dir().join("tool-decisions.json")).unwrap();
    assert!(
        decisions.contains("CMPLR_ROOT")
            && decisions.contains("[package.metadata.mcpp.sycl] env-script"),
        "{decisions}"
    );
    assert!(
        outcome
            .cargo
            .lines()
            .iter()
            .any(|l| l == &format!("cargo::rerun-if-changed={}", s(&p.path("setup/setvars.sh")))),
        "the script is watched: {:?}",
        outcome.cargo.lines()
    );

    // Unchanged: nothing runs, the script included.
    let again = build();
    assert!(again.report.ran.is_empty(), "{:?}", again.report.ran);
    assert_eq!(icpx.calls().len(), 3);
    assert_eq!(
        std::fs::read_to_string(&runs).unwrap(),
        "sourced with --force\n"
    );

    // The marker changed: the script runs once more and every compile reruns with the new value.
    p.write("setup/setvars.sh", &script("two"));
    let changed = build();
    assert_eq!(changed.report.ran.len(), 4, "{:?}", changed.report.ran);
    let calls = icpx.calls();
    assert_eq!(calls.len(), 6);
    for c in &calls[3..] {
        assert_eq!(
            c.env.get("MCPP_ENV_SCRIPT_MARKER").map(String::as_str),
            Some("two"),
            "{}",
            c.line()
        );
    }
    assert_eq!(
        std::fs::read_to_string(&runs).unwrap(),
        "sourced with --force\nsourced with --force\n"
    );
}

/// A script that puts the compiler on PATH (and sets no root variable) names it: no PATH
/// warning, and `why tool` says the script's PATH found it.
#[test]
fn sycl_argv_verified_the_compiler_on_the_path_an_env_script_sets_counts_as_declared() {
    let p = sycl_package(
        "sycl",
        "[\"kernels/*.sycl\"]",
        "env-script = \"setvars.sh\"",
    );
    let (oneapi, icpx) = fake_oneapi(p.dir.path());
    let bin = oneapi.join("compiler/latest/bin");
    p.write(
        "setvars.sh",
        &format!("export PATH='{}':\"$PATH\"\n", s(&bin)),
    );
    let outcome = device_build(p.dir.path(), &p.path(""))
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(icpx.calls().len(), 3);
    let warnings: Vec<&String> = outcome
        .cargo
        .lines()
        .iter()
        .filter(|l| l.contains("warning"))
        .collect();
    assert!(!warnings.iter().any(|w| w.contains("PATH")), "{warnings:?}");
    let decisions = std::fs::read_to_string(p.work_dir().join("tool-decisions.json")).unwrap();
    assert!(
        decisions.contains("PATH set by") && decisions.contains("env-script = "),
        "{decisions}"
    );
    let path = icpx.calls()[0].env.get("PATH").cloned().unwrap_or_default();
    assert!(
        path.starts_with(&s(&bin)),
        "the compile runs with the script's PATH: {path}"
    );
}
