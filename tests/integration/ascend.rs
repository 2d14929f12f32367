//! The Ascend C lane, argv-verified: no CANN toolkit installs on these machines, so every test
//! runs the recording shim as bisheng in a fake CANN layout ([`fake_cann`]) and checks the exact
//! command lines, the environment bisheng (and nothing else) runs with, the link directives,
//! and, with [`Shim::digest_inputs`], the bytes after a header edit.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;
use cargo_mcpp::rules::ascend::ARCH_DIR;
use harness::*;
use std::path::{Path, PathBuf};

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// An Ascend C package: `kernels/add.asc` including `kernels/tiling.h`, `kernels/mul.asc`.
fn ascend_package(accel: &str, extra: &str) -> Package {
    let p = Package::new(&[
        (
            "kernels/add.asc",
            "#include \"tiling.h\"\nextern \"C\" void add() {}\n",
        ),
        ("kernels/mul.asc", "extern \"C\" void mul() {}\n"),
        ("kernels/tiling.h", "#define TILE 8\n"),
        ("inc/x.h", ""),
    ]);
    p.write("Cargo.toml", &format!("{}\n[package.metadata.mcpp.ascend]\nincludes = [\"inc\"]\nflags = [\"-O2\"]\n{extra}\n", manifest("asc-pkg", &format!("accel = \"{accel}\"\nsources = [\"kernels/*.asc\"]"))));
    p
}

fn build(p: &Package, cann: &Path) -> cargo_mcpp::Build {
    let mut b = device_build(p.dir.path(), &p.path(""));
    b.env("ASCEND_HOME_PATH", cann);
    b
}

#[test]
fn ascend_argv_verified_one_mixed_mode_compile_per_source_and_architecture_with_the_tools_env_on_its_process_only(
) {
    let p = ascend_package("ascend8.5+{dav-c220,dav-m200}", "");
    let (cann, bisheng) = fake_cann(p.dir.path());
    let outcome = build(&p, &cann)
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let arch = cann.join(ARCH_DIR);
    let calls = bisheng.calls();
    let mut ids: Vec<(String, String)> = calls
        .iter()
        .map(|c| {
            (
                c.args[2].clone(),
                c.args[c.args.iter().position(|a| a == "-c").unwrap() + 1].clone(),
            )
        })
        .collect();
    ids.sort_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0)));
    assert_eq!(
        ids,
        [
            (
                "--cce-aicore-arch=dav-c220".to_string(),
                s(&p.path("kernels/add.asc"))
            ),
            (
                "--cce-aicore-arch=dav-m200".to_string(),
                s(&p.path("kernels/add.asc"))
            ),
            (
                "--cce-aicore-arch=dav-c220".to_string(),
                s(&p.path("kernels/mul.asc"))
            ),
            (
                "--cce-aicore-arch=dav-m200".to_string(),
                s(&p.path("kernels/mul.asc"))
            ),
        ]
    );
    let c = calls
        .iter()
        .find(|c| c.has("--cce-aicore-arch=dav-c220") && c.names("kernels/add.asc"))
        .unwrap();
    let other = calls
        .iter()
        .find(|c| c.has("--cce-aicore-arch=dav-m200") && c.names("kernels/add.asc"))
        .unwrap();
    let (obj, dep) = (
        c.after("-o").unwrap().to_string(),
        c.after("-MF").unwrap().to_string(),
    );
    let expected = [
        "-x",
        "asc",
        "--cce-aicore-arch=dav-c220",
        "-fPIC",
        "-DTILING_KEY_VAR=0",
        &format!("-I{}", s(&arch.join("asc/include"))),
        &format!("-I{}", s(&arch.join("tikcpp/tikcfw"))),
        &format!("-I{}", s(&p.path("inc"))),
        "-MD",
        "-MF",
        &dep,
        "-O2",
        "-c",
        &s(&p.path("kernels/add.asc")),
        "-o",
        &obj,
    ];
    assert_eq!(c.args, expected);
    assert!(!c.has("--cce-aicore-only"), "mixed mode");
    assert_ne!(
        c.after("-o"),
        other.after("-o"),
        "one object per architecture"
    );
    // The tool's environment: on the compiles and on its version probe, so the probe sees what
    // the compiles see; not on cargo's processes.
    for c in &calls {
        assert_eq!(c.env.get("ASCEND_HOME_PATH"), Some(&s(&arch)));
        assert_eq!(c.env.get("LD_LIBRARY_PATH"), Some(&s(&arch.join("lib64"))));
    }
    let probe = bisheng
        .records()
        .into_iter()
        .find(|r| r.is_probe())
        .expect("the version probe");
    assert_eq!(probe.env.get("ASCEND_HOME_PATH"), Some(&s(&arch)));
    assert_eq!(
        probe.env.get("LD_LIBRARY_PATH"),
        Some(&s(&arch.join("lib64")))
    );
    // Link: the archive, then lib64 with its rpaths, the driver stubs, the libraries present in upstream's order.
    let lines: Vec<String> = outcome
        .cargo
        .lines()
        .iter()
        .filter(|l| l.starts_with("cargo::rustc-link"))
        .cloned()
        .collect();
    let lib64 = s(&arch.join("lib64"));
    let stubs = s(&arch
        .join("devlib/linux")
        .join(ARCH_DIR.trim_end_matches("-linux")));
    let tail: Vec<String> = lines
        .iter()
        .skip_while(|l| !l.ends_with("static=mcpp_ascend_asc_pkg"))
        .skip(1)
        .cloned()
        .collect();
    assert_eq!(
        tail[..7],
        [
            format!("cargo::rustc-link-search=native={lib64}"),
            format!("cargo::rustc-link-arg=-Wl,-rpath-link,{lib64}"),
            format!("cargo::rustc-link-arg=-Wl,-rpath,{lib64}"),
            format!("cargo::rustc-link-search=native={stubs}"),
            format!("cargo::rustc-link-arg=-Wl,-rpath-link,{stubs}"),
            "cargo::rustc-link-lib=dylib=ascendc_runtime".to_string(),
            "cargo::rustc-link-lib=dylib=runtime".to_string(),
        ]
    );
    assert_eq!(tail[7], "cargo::rustc-link-lib=static=c_sec");
    let decisions = std::fs::read_to_string(p.work_dir().join("tool-decisions.json")).unwrap();
    assert!(
        decisions.contains("\"bisheng\"") && decisions.contains("ASCEND_HOME_PATH"),
        "why tool bisheng: {decisions}"
    );
}

#[test]
fn ascend_argv_verified_a_header_edit_reruns_exactly_its_includers_architectures_and_the_bytes_change(
) {
    let p = ascend_package("ascend8.5+{dav-c220,dav-m200}", "");
    let (cann, bisheng) = fake_cann(p.dir.path());
    bisheng.digest_inputs();
    build(&p, &cann)
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut calls = bisheng.calls();
    calls.sort_by_key(|c| (c.names("kernels/mul.asc"), c.line()));
    let objects: Vec<PathBuf> = calls
        .iter()
        .map(|c| PathBuf::from(c.after("-o").unwrap()))
        .collect();
    let before: Vec<Vec<u8>> = objects.iter().map(|o| std::fs::read(o).unwrap()).collect();
    let starts = bisheng.starts();
    build(&p, &cann).try_compile().unwrap();
    assert_eq!(bisheng.starts(), starts, "a no-op build starts nothing");
    p.write("kernels/tiling.h", "#define TILE 16\n");
    let calls = bisheng.calls().len();
    let outcome = build(&p, &cann).try_compile().unwrap();
    let rerun: Vec<String> = outcome
        .report
        .ran
        .iter()
        .filter(|id| id.starts_with("ascend:"))
        .cloned()
        .collect();
    assert_eq!(
        rerun,
        [
            "ascend:kernels/add.asc:dav-c220",
            "ascend:kernels/add.asc:dav-m200"
        ]
    );
    assert_eq!(bisheng.calls().len(), calls + 2);
    let after: Vec<Vec<u8>> = objects.iter().map(|o| std::fs::read(o).unwrap()).collect();
    assert_ne!(before[0], after[0]);
    assert_ne!(before[1], after[1]);
    assert_eq!(before[2..], after[2..], "mul.asc's objects are untouched");
}

#[test]
fn a_backend_the_set_names_without_sources_is_warned_once() {
    let p = ascend_package("ascend8.5+{dav-c220}, sycl", "");
    let (cann, _) = fake_cann(p.dir.path());
    let outcome = build(&p, &cann)
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let warnings: Vec<&String> = outcome
        .cargo
        .lines()
        .iter()
        .filter(|l| l.starts_with("cargo::warning") && l.contains("sycl"))
        .collect();
    assert_eq!(warnings.len(), 1, "{:?}", outcome.cargo.lines());
    assert!(
        warnings[0].contains("names sycl but no source in `sources` is a sycl source"),
        "{}",
        warnings[0]
    );
}

#[test]
fn ascend_argv_verified_constrained_globs_include_exclude_and_refuse_by_the_build_set() {
    let p = ascend_package("ascend8.5+{dav-c220,dav-m200}", "");
    p.write(
        "Cargo.toml",
        &p.read("Cargo.toml").replace(
            "sources = [\"kernels/*.asc\"]",
            "sources = [{ glob = \"kernels/*.asc\", accel = \"ascend8.5+{dav-c220}\" }]",
        ),
    );
    let (cann, bisheng) = fake_cann(p.dir.path());
    // Covered: compiled for every architecture of the build's entry.
    build(&p, &cann)
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bisheng.calls().len(), 4);
    // A build naming ascend without covering the constraint refuses it, naming the entry.
    let e = build(&p, &cann)
        .accel("ascend8.5+{dav-m200}")
        .try_compile()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "is constrained to accel \"ascend8.5+{dav-c220}\", which this build does not cover"
        ),
        "{e}"
    );
    // A build without ascend leaves them out, compiling nothing.
    let calls = bisheng.calls().len();
    let p2 = Package::new(&[
        ("kernels/add.asc", "void add() {}\n"),
        ("kernels/s.sycl", "void s() {}\n"),
    ]);
    p2.write("Cargo.toml", &manifest("mixed", "accel = \"sycl\"\nsources = [{ glob = \"kernels/*.asc\", accel = \"ascend8.5+{dav-c220}\" }, \"kernels/*.sycl\"]"));
    let (oneapi, icpx) = fake_oneapi(p2.dir.path());
    device_build(p2.dir.path(), &p2.path(""))
        .env("ASCEND_HOME_PATH", &cann)
        .env("ONEAPI_ROOT", &oneapi)
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bisheng.calls().len(), calls);
    assert!(icpx.calls().iter().any(|c| c.names("kernels/s.sycl")));
}

#[test]
fn ascend_argv_verified_ascend_home_path_may_name_the_cann_root_or_its_arch_directory() {
    // `set_env.sh` users have the CANN root; bisheng's own processes get `<root>/<arch>-linux`.
    // Either value names the same toolkit and gives the same command lines.
    let p = ascend_package("ascend8.5+{dav-c220}", "");
    let (cann, bisheng) = fake_cann(p.dir.path());
    let arch = cann.join(ARCH_DIR);
    build(&p, &arch)
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let calls = bisheng.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    for c in &calls {
        assert!(
            c.has(&format!("-I{}", s(&arch.join("asc/include")))),
            "{}",
            c.line()
        );
        assert_eq!(c.env.get("ASCEND_HOME_PATH"), Some(&s(&arch)));
    }
    // A directory that is neither is still refused, naming the variable.
    let e = build(&p, &cann.join("lib64"))
        .try_compile()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ASCEND_HOME_PATH") && e.contains("has no"),
        "{e}"
    );
}

/// An `.asc` file can be an island's device half (the boundary header forced into each of its
/// compiles, one per architecture), and `.cce` sources are claimed too, compiled as CCE C.
#[test]
fn ascend_argv_verified_an_island_device_half_gets_the_boundary_header_and_cce_is_claimed() {
    let p = Package::new(&[
        (
            "kernels/k.asc",
            "MCPP_EXPORT_C int k_run(float* y, unsigned n) { return 0; }\n",
        ),
        ("kernels/old.cce", "extern \"C\" void old() {}\n"),
        (
            "host/k.cpp",
            "MCPP_EXPORT_C int k_run(float* y, unsigned n) { return 1; }\n",
        ),
    ]);
    p.write(
        "Cargo.toml",
        &manifest(
            "asc-island",
            "accel = \"ascend8.5+{dav-c220,dav-m200}\"\nsources = [\"kernels/*.asc\", \"kernels/*.cce\"]\n[package.metadata.mcpp.island]\nsources = [\"kernels/k.asc\", \"host/k.cpp\"]\nfallback = [\"host/k.cpp\"]",
        ),
    );
    let (cann, bisheng) = fake_cann(p.dir.path());
    build(&p, &cann)
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let calls = bisheng.calls();
    let island: Vec<_> = calls
        .iter()
        .filter(|c| c.has("-c") && c.names("kernels/k.asc"))
        .collect();
    assert_eq!(island.len(), 2, "one compile per architecture");
    for c in &island {
        let header = PathBuf::from(
            c.after("-include")
                .unwrap_or_else(|| panic!("no forced include: {:?}", c.args)),
        );
        assert!(
            std::fs::read_to_string(&header).unwrap().contains("k_run"),
            "{}",
            header.display()
        );
        assert_eq!(c.after("-x"), Some("asc"));
    }
    let cce: Vec<_> = calls
        .iter()
        .filter(|c| c.has("-c") && c.names("kernels/old.cce"))
        .collect();
    assert_eq!(
        cce.len(),
        2,
        "a .cce source is compiled for each architecture"
    );
    for c in &cce {
        assert_eq!(c.after("-x"), Some("cce"), "{:?}", c.args);
        assert!(
            !c.has("-include"),
            "only the island's device half gets the header"
        );
    }
}

/// A CANN toolkit set up by its `set_env.sh`: the script's `ASCEND_HOME_PATH` (the architecture
/// directory, as CANN's script sets it) names the toolkit, and its other variables reach
/// bisheng's compiles; the toolkit's own `LD_LIBRARY_PATH` wins over the script's.
#[test]
fn ascend_argv_verified_env_script_names_the_toolkit_and_its_variables_reach_bisheng() {
    let p = ascend_package("ascend8.5+{dav-c220}", "env-script = \"set_env.sh\"");
    let (cann, bisheng) = fake_cann(p.dir.path());
    let arch = cann.join(ARCH_DIR);
    p.write(
        "set_env.sh",
        &format!(
            "export ASCEND_HOME_PATH='{}'\nexport LD_LIBRARY_PATH=/from/the/script\nexport ASCEND_OPP_PATH='{}/opp'\n",
            s(&arch),
            s(&arch)
        ),
    );
    device_build(p.dir.path(), &p.path(""))
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let calls = bisheng.calls();
    assert_eq!(calls.len(), 2, "{:?}", bisheng.argvs());
    for c in &calls {
        assert_eq!(
            c.env.get("ASCEND_OPP_PATH"),
            Some(&format!("{}/opp", s(&arch))),
            "{}",
            c.line()
        );
        assert_eq!(c.env.get("ASCEND_HOME_PATH"), Some(&s(&arch)));
        assert_eq!(
            c.env.get("LD_LIBRARY_PATH"),
            Some(&s(&arch.join("lib64"))),
            "the toolkit's own wins"
        );
    }
    let decisions = std::fs::read_to_string(p.work_dir().join("tool-decisions.json")).unwrap();
    assert!(
        decisions.contains("ASCEND_HOME_PATH")
            && decisions.contains("[package.metadata.mcpp.ascend] env-script"),
        "{decisions}"
    );
}
