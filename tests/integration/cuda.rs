//! The CUDA lane through the library API (`cargo_mcpp::Build`) on temp copies of
//! `tests/fixtures/cuda-island`: exact argv of both routes (recording shim), real nvcc
//! compiles (stale bytes, no-op, architecture switch), and the refusals with their texts.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;

use cargo_mcpp::{Build, ErrorKind};
use harness::*;
use std::path::{Path, PathBuf};

fn build(tmp: &Path, pkg: &Path) -> Build {
    let mut b = Build::new();
    // A private toolchain package cache: an installed cuda-nvcc elsewhere must not answer for the toolkit.
    b.manifest_dir(pkg)
        .out_dir(tmp.join("out"))
        .work_dir(tmp.join("work"))
        .release(false)
        .jobs(2)
        .env("MCPP_HOME", tmp.join("mcpp-home"));
    for v in [
        "NVCC",
        "MCPP_NVCC",
        "MCPP_TOOL_NVCC",
        "CUDA_HOME",
        "CUDAHOSTCXX",
        "NVCC_CCBIN",
        "MCPP_ACCEL",
        "MCPP_NO_ACCEL",
        "TARGET",
        "HOST",
    ] {
        b.env_remove(v);
    }
    b
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The argv of the one compile of `scale.cu`, with the object and depfile it names.
fn compile_call(shim: &Shim) -> (Vec<String>, String, String) {
    let call = shim
        .calls()
        .into_iter()
        .find(|c| c.names("kernels/scale.cu"))
        .expect("scale.cu compiled");
    let (obj, dep) = (
        call.after("-o").unwrap().to_string(),
        call.after("-MF").unwrap().to_string(),
    );
    (call.args, obj, dep)
}

#[test]
fn nvcc_route_argv_is_exact_and_links_the_archive_and_cudart() {
    let (tmp, pkg) = fixture("cuda-island");
    let (root, shim) = fake_toolkit(tmp.path());
    let ccbin = std::fs::canonicalize(shim.path()).unwrap();
    let outcome = build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .env("NVCC_CCBIN", &ccbin)
        .accel("cuda13.0+{sm_80,sm_90}")
        .try_compile()
        .unwrap();
    let (call, obj, dep) = compile_call(&shim);
    let header = tmp.path().join("work/island/fix_island.kernels.h");
    let expected: Vec<String> = [
        "-ccbin",
        &s(&ccbin),
        "-gencode",
        "arch=compute_80,code=sm_80",
        "-gencode",
        "arch=compute_90,code=sm_90",
        "-gencode",
        "arch=compute_90,code=compute_90",
        "-Xcompiler",
        "-fPIC",
        "-O0",
    ]
    .iter()
    .map(|a| a.to_string())
    .chain(island_tail(&header, &pkg, "-MMD", &dep, &obj))
    .collect();
    assert_eq!(call, expected);
    assert!(
        obj.starts_with(&s(&tmp.path().join("work"))) && obj.ends_with(".o") && dep.ends_with(".d"),
        "{obj} {dep}"
    );
    // The header the forced include names exists, with the verbatim (collapsed) signature.
    let h = std::fs::read_to_string(&header).unwrap();
    assert!(h.contains("int scale_run(float* y, unsigned n);"), "{h}");
    // The Rust bindings and the mirrored header are in OUT_DIR.
    let rs = std::fs::read_to_string(tmp.path().join("out/mcpp_kernels.rs")).unwrap();
    assert!(rs.contains("pub fn scale_run("), "{rs}");
    assert!(
        !rs.contains("scale_kernel"),
        "only marked entry points are bound: {rs}"
    );
    assert!(tmp.path().join("out/mcpp/fix_island.kernels.h").is_file());
    // The archive was made (real ar) and is linked first, then the runtime and what it needs.
    let lines = outcome.cargo.lines().to_vec();
    let libs: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("cargo::rustc-link-lib="))
        .collect();
    assert_eq!(
        libs,
        [
            "cargo::rustc-link-lib=static=mcpp_cuda_fix_island",
            "cargo::rustc-link-lib=static=cudart_static",
            "cargo::rustc-link-lib=dylib=dl",
            "cargo::rustc-link-lib=dylib=rt",
            "cargo::rustc-link-lib=dylib=pthread",
            "cargo::rustc-link-lib=dylib=stdc++",
        ]
    );
    assert!(
        lines.contains(&format!(
            "cargo::rustc-link-search=native={}",
            s(&root.join("lib"))
        )),
        "{lines:#?}"
    );
    let search = lines
        .iter()
        .find_map(|l| {
            l.strip_prefix("cargo::rustc-link-search=native=")
                .filter(|d| d.contains("lib-"))
        })
        .unwrap();
    assert!(Path::new(search)
        .join("libmcpp_cuda_fix_island.a")
        .is_file());
    assert!(lines.contains(&"cargo::rustc-cfg=mcpp_accel=\"cuda\"".to_string()));
    // The fallback is not compiled in a CUDA build.
    assert!(
        !outcome
            .report
            .ran
            .iter()
            .any(|id| id.contains("host/scale.cpp")),
        "{:?}",
        outcome.report.ran
    );
}

#[test]
fn ptx_floor_release_and_flags_order() {
    let (tmp, pkg) = fixture("cuda-island");
    let (root, shim) = fake_toolkit(tmp.path());
    build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .env("NVCC_CCBIN", shim.path())
        .release(true)
        .accel("cuda13.0+{sm_80,sm_90} ptx>=80")
        .try_compile()
        .unwrap();
    let (call, _, _) = compile_call(&shim);
    let gencodes: Vec<&String> = call.iter().filter(|a| a.starts_with("arch=")).collect();
    assert_eq!(
        gencodes,
        [
            "arch=compute_80,code=sm_80",
            "arch=compute_90,code=sm_90",
            "arch=compute_80,code=compute_80"
        ]
    );
    assert!(
        call.contains(&"-O3".to_string()) && !call.contains(&"-lineinfo".to_string()),
        "{call:?}"
    );
    let flag = call.iter().position(|a| a == "--extra-flag").unwrap();
    assert_eq!(
        call[flag + 1],
        "-MMD",
        "flags come after every generated argument: {call:?}"
    );
}

#[test]
fn a_cuda_version_without_minor_and_a_ptx_floor_above_every_arch_are_refused_before_compiling() {
    let (tmp, pkg) = fixture("cuda-island");
    let (root, shim) = fake_toolkit(tmp.path());
    let e = build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .accel("cuda13+{sm_90}")
        .try_compile()
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Accel);
    assert!(
        e.to_string()
            .contains("`cuda13+{sm_90}` names CUDA 13 without a minor version")
            && e.to_string().contains("cuda13.0"),
        "{e}"
    );
    let e = build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .accel("cuda13.0+{sm_90} ptx>=95")
        .try_compile()
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("(compute_95) is above every listed architecture (highest sm_90)"),
        "{e}"
    );
    assert_eq!(compile_calls(&shim), 0, "nothing compiled");
}

/// The end of both routes' argv for the fixture's `kernels/scale.cu`: the forced boundary
/// header, the manifest's define, include and flag, the depfile (`dep_flag`) and the compile.
fn island_tail(header: &Path, pkg: &Path, dep_flag: &str, dep: &str, obj: &str) -> Vec<String> {
    // Package-relative: the compile runs in the package directory.
    let _ = pkg;
    let include = "-Iinclude".to_string();
    let src = "kernels/scale.cu".to_string();
    [
        "-include",
        &s(header),
        "-DWIDTH=4",
        &include,
        "--extra-flag",
        dep_flag,
        "-MF",
        dep,
        "-c",
        &src,
        "-o",
        obj,
    ]
    .iter()
    .map(|a| a.to_string())
    .collect()
}

fn compile_calls(shim: &Shim) -> usize {
    shim.calls().iter().filter(|c| c.has("-c")).count()
}

#[test]
fn clang_route_argv_is_exact() {
    let (tmp, pkg) = fixture("cuda-island");
    let (root, _) = fake_toolkit(tmp.path());
    let clang = Shim::install(tmp.path(), "clang-shim");
    edit(&pkg.join("Cargo.toml"), "[package.metadata.mcpp.cuda]\n", &format!("[package.metadata.mcpp.cuda]\ncompiler = \"clang\"\ntoolkit = \"{}\"\nccbin = \"/usr/bin/g++\"\n", s(&root)));
    let outcome = build(tmp.path(), &pkg)
        .tool("clang++", clang.path())
        .accel("cuda13.0+{sm_80,sm_90}")
        .try_compile()
        .unwrap();
    let directives = outcome.cargo.lines().join("\n");
    assert!(
        directives
            .contains("ccbin is nvcc's host compiler and is not used with compiler = \"clang\""),
        "{directives}"
    );
    let (call, obj, dep) = compile_call(&clang);
    let header = tmp.path().join("work/island/fix_island.kernels.h");
    let expected: Vec<String> = [
        "-x",
        "cuda",
        &format!("--cuda-path={}", s(&root)),
        "--cuda-gpu-arch=sm_80",
        "--cuda-gpu-arch=sm_90",
        "--no-cuda-include-ptx=all",
        "--cuda-include-ptx=sm_90",
        "-Wno-unknown-cuda-version",
        "-fPIC",
        "-O0",
    ]
    .iter()
    .map(|a| a.to_string())
    .chain(island_tail(&header, &pkg, "-MD", &dep, &obj))
    .collect();
    assert_eq!(call, expected);
}

#[test]
fn no_toolkit_is_refused_naming_every_way() {
    let (tmp, pkg) = fixture("cuda-island");
    let e = build(tmp.path(), &pkg)
        .env_remove("CUDA_PATH")
        .env("PATH", "/nonexistent")
        .try_compile()
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::ToolNotFound);
    let t = e.to_string();
    // The one resolver's refusal: every way, numbered in order without gaps, then the CUDA way out.
    let ways = [
        "no CUDA toolkit found (for nvcc)",
        "1. in build.rs: mcpp_build::Build::new().tool(\"nvcc\", \"/path/to/nvcc\")",
        "or in Cargo.toml: [package.metadata.mcpp.tools] nvcc = \"/path/to/nvcc\"",
        "or the CUDA toolkit root in Cargo.toml: [package.metadata.mcpp.cuda] toolkit = \"/path/to/root\"",
        "2. the environment: NVCC=/path/to/nvcc or MCPP_NVCC=/path/to/nvcc",
        "3. the global override: MCPP_TOOL_NVCC=/path/to/nvcc",
        "4. the CUDA toolkit root: CUDA_PATH=/path/to/root or CUDA_HOME=/path/to/root (a root holds bin/nvcc and include/cuda_runtime.h)",
        "5. the toolchain package cuda-nvcc: `cargo mcpp fetch --manifest-path",
        "6. on PATH as nvcc, inside a CUDA toolkit root",
        "consulted:",
        "CUDA_PATH (unset)",
        "CUDA_HOME (unset)",
        "PATH (no nvcc)",
        "--no-accel",
    ];
    let mut at = 0;
    for w in ways {
        let i = t[at..]
            .find(w)
            .unwrap_or_else(|| panic!("missing or out of order `{w}` in:\n{t}"));
        at += i + w.len();
    }
    assert!(!t.contains("7. "), "six ways: {t}");
}

#[test]
fn native_without_a_gpu_is_refused_naming_the_key() {
    let (tmp, pkg) = fixture("cuda-island");
    let (root, shim) = fake_toolkit(tmp.path());
    // No nvidia-smi on this PATH (and no GPU on CI): `{native}` cannot be answered.
    let e = build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .env("PATH", "/nonexistent")
        .accel("cuda13.0+{native}")
        .try_compile()
        .unwrap_err();
    let t = e.to_string();
    assert!(
        t.contains("asks for the GPUs of this machine, and it has no NVIDIA GPU"),
        "{t}"
    );
    assert!(
        t.contains("(the accelerator set came from --accel \"cuda13.0+{native}\")")
            && t.contains("cuda13.0+{sm_90}"),
        "{t}"
    );
    assert!(shim.argvs().is_empty(), "nothing may compile");
    // From the manifest, the refusal names the key.
    edit(
        &pkg.join("Cargo.toml"),
        "accel = \"cuda13.0+{sm_80}\"",
        "accel = \"cuda13.0+{native}\"",
    );
    let e = build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .env("PATH", "/nonexistent")
        .try_compile()
        .unwrap_err()
        .to_string();
    assert!(e.contains("key `package.metadata.mcpp.accel`"), "{e}");
    let e = build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .env("PATH", "/nonexistent")
        .accel("cuda13.0")
        .try_compile()
        .unwrap_err();
    assert!(e.to_string().contains("has no NVIDIA GPU"), "{e}");
}

#[test]
fn empty_architecture_list_is_refused() {
    let (tmp, pkg) = fixture("cuda-island");
    let e = build(tmp.path(), &pkg)
        .accel("cuda13.0+{}")
        .try_compile()
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Accel);
    let t = e.to_string();
    assert!(
        t.contains("expected an architecture name") && t.contains("cuda13.0+{}"),
        "{t}"
    );
    let e = build(tmp.path(), &pkg)
        .accel("cuda13.0+{gfx942}")
        .env("CUDA_PATH", "/nonexistent")
        .try_compile()
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("`gfx942` in `cuda13.0+{gfx942}` is not a CUDA architecture"),
        "{e}"
    );
}

#[test]
fn mismatched_island_halves_are_refused_with_both_signatures() {
    let (tmp, pkg) = fixture("cuda-island");
    edit(
        &pkg.join("host/scale.cpp"),
        "int scale_run(float* y, unsigned n)",
        "int scale_run(float* y, int n)",
    );
    for accel in [None, Some("cuda13.0+{sm_90}")] {
        let mut b = build(tmp.path(), &pkg);
        if accel.is_none() {
            b.no_accel();
        }
        let t = b.try_compile().unwrap_err().to_string();
        assert!(
            t.contains("two definitions of `scale_run` declare it differently"),
            "{t}"
        );
        assert!(
            t.contains("int scale_run(float* y, unsigned n)")
                && t.contains("int scale_run(float* y, int n)"),
            "{t}"
        );
        assert!(
            t.contains("kernels/scale.cu") && t.contains("host/scale.cpp"),
            "{t}"
        );
        assert!(t.contains("never meet at the link"), "{t}");
    }
}

#[test]
fn no_accel_compiles_the_fallback_and_the_same_boundary() {
    let (tmp, pkg) = fixture("cuda-island");
    let (root, shim) = fake_toolkit(tmp.path());
    build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .env("NVCC_CCBIN", shim.path())
        .try_compile()
        .unwrap();
    let cuda_header = std::fs::read(tmp.path().join("out/mcpp/fix_island.kernels.h")).unwrap();
    let cuda_rs = std::fs::read(tmp.path().join("out/mcpp_kernels.rs")).unwrap();
    let out = build(tmp.path(), &pkg).no_accel().try_compile().unwrap();
    assert!(
        out.report.ran.iter().any(|id| id == "cxx:host/scale.cpp"),
        "{:?}",
        out.report.ran
    );
    assert!(!out.report.ran.iter().any(|id| id.starts_with("cuda:")));
    assert_eq!(
        std::fs::read(tmp.path().join("out/mcpp/fix_island.kernels.h")).unwrap(),
        cuda_header
    );
    assert_eq!(
        std::fs::read(tmp.path().join("out/mcpp_kernels.rs")).unwrap(),
        cuda_rs
    );
    let lines = out.cargo.lines();
    assert!(
        lines.contains(&"cargo::rustc-link-lib=static=mcpp_cxx_fix_island".to_string()),
        "{lines:#?}"
    );
    assert!(!lines.iter().any(|l| l.contains("cudart")), "{lines:#?}");
}

fn object_of(outcome_dir: &Path) -> Vec<u8> {
    let mut found = Vec::new();
    for e in walk(outcome_dir) {
        if e.to_string_lossy().contains("/cuda/obj/kernels_scale.cu")
            && e.extension().is_some_and(|x| x == "o")
        {
            found.push(e);
        }
    }
    assert_eq!(found.len(), 1, "{found:?}");
    std::fs::read(&found[0]).unwrap()
}

#[test]
fn real_nvcc_header_edit_changes_bytes_noop_starts_nothing_arch_switch_rebuilds() {
    let (tmp, pkg) = fixture("cuda-island");
    edit(
        &pkg.join("Cargo.toml"),
        "flags = [\"--extra-flag\"]",
        "flags = []",
    );
    let (root, nvcc) = counted_toolkit(tmp.path());
    let run = |accel: &str| {
        build(tmp.path(), &pkg)
            .env("CUDA_PATH", &root)
            .accel(accel)
            .try_compile()
            .unwrap()
    };
    let first = run("cuda13.0+{sm_80}");
    assert!(
        first
            .report
            .ran
            .contains(&"cuda:kernels/scale.cu".to_string()),
        "{:?}",
        first.report.ran
    );
    let bytes1 = object_of(&first.variant_dir);
    let after_first = nvcc.starts();
    assert!(after_first >= 1);

    // No change: every action fresh, no nvcc process at all (not even --version).
    let again = run("cuda13.0+{sm_80}");
    assert!(again.report.ran.is_empty(), "{:?}", again.report.ran);
    assert_eq!(nvcc.starts(), after_first);

    // Editing only the .cuh the kernel includes rebuilds it, with different bytes.
    edit(&pkg.join("kernels/params.cuh"), "3.0f", "5.0f");
    let edited = run("cuda13.0+{sm_80}");
    assert!(
        edited
            .report
            .ran
            .contains(&"cuda:kernels/scale.cu".to_string()),
        "{:?}",
        edited.report.ran
    );
    assert!(edited
        .report
        .ran
        .contains(&"archive:mcpp_cuda_fix_island".to_string()));
    assert_ne!(
        object_of(&edited.variant_dir),
        bytes1,
        "the object must change when the header does"
    );
    assert_eq!(nvcc.starts(), after_first + 1);

    // sm_80 -> sm_90 rebuilds.
    let switched = run("cuda13.0+{sm_90}");
    assert!(switched
        .report
        .ran
        .contains(&"cuda:kernels/scale.cu".to_string()));
    let sm90 = object_of(&switched.variant_dir);
    assert!(
        sm90.windows(5).any(|w| w == b"sm_90"),
        "the object names sm_90"
    );
    assert_eq!(nvcc.starts(), after_first + 2);
}

#[test]
fn real_clang19_compiles_cuda_with_the_12_9_layout() {
    let (tmp, pkg) = fixture("cuda-island");
    let layout = cuda12_clang();
    edit(
        &pkg.join("Cargo.toml"),
        "flags = [\"--extra-flag\"]",
        "flags = []",
    );
    edit(
        &pkg.join("Cargo.toml"),
        "[package.metadata.mcpp.cuda]\n",
        &format!(
            "[package.metadata.mcpp.cuda]\ncompiler = \"clang\"\ntoolkit = \"{}\"\n",
            s(&layout)
        ),
    );
    let out = build(tmp.path(), &pkg)
        .tool("clang++", "/usr/bin/clang++-19")
        .accel("cuda12.9+{sm_90}")
        .try_compile()
        .unwrap();
    assert!(out
        .report
        .ran
        .contains(&"cuda:kernels/scale.cu".to_string()));
    let bytes = object_of(&out.variant_dir);
    assert!(
        bytes.starts_with(b"\x7fELF") && bytes.windows(10).any(|w| w == b".nv_fatbin"),
        "an object with embedded device code"
    );
    assert!(out.cargo.lines().contains(&format!(
        "cargo::rustc-link-search=native={}",
        s(&layout.join("lib64"))
    )));
}

#[test]
fn a_toolkit_of_another_cuda_version_than_the_accelerator_is_refused() {
    let (tmp, pkg) = fixture("cuda-island");
    let (root, _) = fake_toolkit(tmp.path());
    let e = build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .accel("cuda12.9+{sm_90}")
        .try_compile()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the accelerator names cuda12.9, but the CUDA toolkit found is CUDA 13.0"),
        "{e}"
    );
    assert!(e.contains("cuda13.0+{...}"), "{e}");
}

#[test]
fn a_named_cuda_path_that_is_no_toolkit_is_refused_not_replaced() {
    let (tmp, pkg) = fixture("cuda-island");
    let (root, _) = fake_toolkit(tmp.path());
    let err = build(tmp.path(), &pkg)
        .env("CUDA_PATH", "/nonexistent")
        .env("PATH", root.join("bin"))
        .try_compile()
        .unwrap_err();
    let e = err.to_string();
    assert!(e.contains("the CUDA toolkit cannot be used: CUDA_PATH=`/nonexistent` has no include/cuda_runtime.h"), "{e}");
    assert_eq!(err.key.as_deref(), Some("CUDA_PATH"), "{e}");
    assert!(
        e.contains("4. the CUDA toolkit root: CUDA_PATH=/path/to/root or CUDA_HOME=/path/to/root"),
        "the shared refusal lists the ways: {e}"
    );
    // The refusal is the recorded decision (never an earlier build's answer).
    let decisions: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("work/tool-decisions.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(decisions["nvcc"]["source"], "none");
    assert!(
        decisions["nvcc"]["refusal"]
            .as_str()
            .unwrap()
            .contains("CUDA_PATH=`/nonexistent`"),
        "{decisions}"
    );
}

/// The toolkit-root step of the one resolver: `CUDA_PATH` names the root, the program is the
/// root's `bin/nvcc`, and the decision names the variable and the root; `CUDA_HOME` answers
/// when `CUDA_PATH` is unset.
#[test]
fn cuda_path_names_the_toolkit_and_the_decision_records_the_variable_and_the_root() {
    let (tmp, pkg) = fixture("cuda-island");
    let (root, shim) = fake_toolkit(tmp.path());
    let ccbin = Shim::install(tmp.path(), "ccbin-shim").path().to_path_buf();
    let decision = || -> serde_json::Value {
        let all: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(tmp.path().join("work/tool-decisions.json")).unwrap(),
        )
        .unwrap();
        all["nvcc"].clone()
    };
    build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .env("NVCC_CCBIN", &ccbin)
        .env("PATH", "/nonexistent")
        .try_compile()
        .unwrap();
    assert!(
        shim.argvs()
            .iter()
            .any(|c| c.iter().any(|a| a.ends_with("kernels/scale.cu"))),
        "the root's bin/nvcc compiled scale.cu"
    );
    let d = decision();
    assert_eq!(d["answer"], s(&root.join("bin/nvcc")));
    assert_eq!(d["source"], "root");
    assert_eq!(
        d["origin"],
        format!("the environment variable CUDA_PATH={}", s(&root))
    );
    assert_eq!(d["toolkit"], s(&root));
    assert_eq!(
        d["toolkit_origin"],
        format!("the environment variable CUDA_PATH={}", s(&root))
    );
    let considered: Vec<&str> = d["considered"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        &considered[considered.len() - 2..],
        [
            "MCPP_TOOL_NVCC (unset)",
            "[package.metadata.mcpp.cuda] toolkit (not set)"
        ]
    );
    build(tmp.path(), &pkg)
        .env_remove("CUDA_PATH")
        .env("CUDA_HOME", &root)
        .env("NVCC_CCBIN", &ccbin)
        .env("PATH", "/nonexistent")
        .try_compile()
        .unwrap();
    let d = decision();
    assert_eq!(
        (d["source"].as_str(), d["toolkit"].as_str()),
        (Some("root"), Some(s(&root).as_str()))
    );
    assert_eq!(
        d["toolkit_origin"],
        format!("the environment variable CUDA_HOME={}", s(&root))
    );
    assert!(
        d["considered"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "CUDA_PATH (unset)"),
        "{d}"
    );
}

#[test]
fn a_named_nvcc_wrapper_is_the_program_run_and_why_tool_names_its_variable() {
    let (tmp, pkg) = fixture("cuda-island");
    let (root, real) = fake_toolkit(tmp.path());
    let wrapper = Shim::install(tmp.path(), "wrapper-nvcc");
    let shim = Shim::install(tmp.path(), "ccbin-shim");
    build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .env("NVCC", wrapper.path())
        .env("NVCC_CCBIN", shim.path())
        .try_compile()
        .unwrap();
    assert!(
        wrapper.calls().iter().any(|c| c.names("kernels/scale.cu")),
        "the wrapper compiled scale.cu"
    );
    assert!(
        !real.calls().iter().any(|c| c.names("kernels/scale.cu")),
        "the toolkit's own nvcc did not"
    );
    let decisions = std::fs::read_to_string(tmp.path().join("work/tool-decisions.json")).unwrap();
    assert!(
        decisions.contains("the environment variable NVCC="),
        "{decisions}"
    );
    assert!(decisions.contains("\"source\": \"env\""), "{decisions}");
    let e = build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .env("NVCC", "/nonexistent/nvcc")
        .try_compile()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("names `/nonexistent/nvcc`, which does not exist"),
        "{e}"
    );
}

#[test]
fn an_entry_point_one_half_lacks_is_refused_naming_the_half() {
    let (tmp, pkg) = fixture("cuda-island");
    let cu = pkg.join("kernels/scale.cu");
    let text = std::fs::read_to_string(&cu).unwrap();
    std::fs::write(
        &cu,
        format!("{text}\nMCPP_EXPORT_C int only_device(int x) {{ return x; }}\n"),
    )
    .unwrap();
    let e = build(tmp.path(), &pkg)
        .no_accel()
        .try_compile()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the entry point `only_device` is not defined by the host fallback"),
        "{e}"
    );
    assert!(e.contains("`--no-accel`) would fail to link"), "{e}");
}

#[test]
fn module_shapes_the_host_lane_does_not_build_are_refused_by_name() {
    let cases = [
        (
            "export module fix_island.self;\nimport fix_island.self;\n",
            "imports the module `fix_island.self` it is the interface of",
        ),
        ("export module fix_island.api:part;\n", "a module partition"),
        (
            "export module fix_island.api;\nexport import :part;\n",
            "a module partition",
        ),
        (
            "export module fix_island.api;\nimport std;\n",
            "`import std;` is not supported",
        ),
        (
            "export module fix_island.api;\nimport <vector>;\n",
            "the header unit `import <vector>;` is not supported",
        ),
    ];
    for (text, expected) in cases {
        let (tmp, pkg) = fixture("cuda-island");
        edit(
            &pkg.join("Cargo.toml"),
            "sources = [\"kernels/*.cu\"]\n",
            "sources = [\"kernels/*.cu\"]\ncxx-sources = [\"cpp/extra.cppm\"]\n",
        );
        std::fs::write(pkg.join("cpp/extra.cppm"), text).unwrap();
        let e = build(tmp.path(), &pkg)
            .no_accel()
            .try_compile()
            .unwrap_err()
            .to_string();
        assert!(e.contains(expected), "{text}: {e}");
    }
}

#[test]
fn an_import_cycle_shows_the_chain() {
    let (tmp, pkg) = fixture("cuda-island");
    edit(
        &pkg.join("Cargo.toml"),
        "sources = [\"kernels/*.cu\"]\n",
        "sources = [\"kernels/*.cu\"]\ncxx-sources = [\"cpp/a.cppm\", \"cpp/b.cppm\"]\n",
    );
    std::fs::write(
        pkg.join("cpp/a.cppm"),
        "export module fix_island.a;\nimport fix_island.b;\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("cpp/b.cppm"),
        "export module fix_island.b;\nimport fix_island.a;\n",
    )
    .unwrap();
    let e = build(tmp.path(), &pkg)
        .no_accel()
        .try_compile()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("form a cycle")
            && e.contains("cpp/a.cppm imports cpp/b.cppm imports cpp/a.cppm"),
        "{e}"
    );
}

#[test]
fn an_accel_refusal_names_where_the_set_came_from() {
    let (tmp, pkg) = fixture("cuda-island");
    let e = build(tmp.path(), &pkg)
        .accel("cuda13.0+{gfx90a}")
        .try_compile()
        .unwrap_err();
    assert_eq!(e.key, None, "{e}");
    assert!(
        e.to_string()
            .contains("(the accelerator set came from --accel \"cuda13.0+{gfx90a}\")"),
        "{e}"
    );
    let e = build(tmp.path(), &pkg)
        .env("MCPP_ACCEL", "cuda13.0+{gfx90a}")
        .try_compile()
        .unwrap_err();
    assert!(
        e.to_string().contains("MCPP_ACCEL=\"cuda13.0+{gfx90a}\""),
        "{e}"
    );
}

#[test]
fn the_cxx_sources_directories_are_watched_for_new_files() {
    let (tmp, pkg) = fixture("cuda-island");
    edit(
        &pkg.join("Cargo.toml"),
        "sources = [\"kernels/*.cu\"]\n",
        "sources = [\"kernels/*.cu\"]\ncxx-sources = [\"cpp/*.cppm\", \"cpp/*.cpp\"]\n",
    );
    let out = build(tmp.path(), &pkg).no_accel().try_compile().unwrap();
    let dir = pkg.join("cpp");
    assert!(
        out.cargo
            .lines()
            .contains(&format!("cargo::rerun-if-changed={}", dir.display())),
        "{:#?}",
        out.cargo.lines()
    );
}

#[test]
fn a_standard_typedef_in_a_signature_without_header_includes_is_refused_naming_the_key() {
    let (tmp, pkg) = fixture("cuda-island");
    for half in ["kernels/scale.cu", "host/scale.cpp"] {
        let text = std::fs::read_to_string(pkg.join(half)).unwrap();
        std::fs::write(pkg.join(half), text.replace("unsigned n", "uint32_t n")).unwrap();
    }
    let mut b = build(tmp.path(), &pkg);
    b.no_accel();
    let t = b.try_compile().unwrap_err().to_string();
    assert!(
        t.contains("the entry point `scale_run` (") && t.contains("uses `uint32_t`"),
        "{t}"
    );
    assert!(
        t.contains("package.metadata.mcpp.island.header-includes") && t.contains("<stdint.h>"),
        "{t}"
    );
}

/// A `CXX` that records each argv and runs the real g++.
fn logging_gxx(dir: &Path) -> Shim {
    let gxx = ["/usr/bin/g++", "/usr/local/bin/g++"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .expect("g++ is installed (scripts/setup-toolchains.sh)");
    Shim::wrap(dir, "logging-g++", &gxx)
}

#[test]
fn the_fallback_gets_the_boundary_header_forced_with_or_without_its_own_include() {
    for keep_include in [false, true] {
        let (tmp, pkg) = fixture("cuda-island");
        if !keep_include {
            edit(
                &pkg.join("host/scale.cpp"),
                "#include \"fix_island.kernels.h\"\n",
                "",
            );
        }
        let gxx = logging_gxx(tmp.path());
        let out = build(tmp.path(), &pkg)
            .env("CXX", gxx.path())
            .no_accel()
            .try_compile()
            .unwrap_or_else(|e| panic!("include kept: {keep_include}\n{e}"));
        assert!(
            out.report.ran.iter().any(|id| id == "cxx:host/scale.cpp"),
            "{:?}",
            out.report.ran
        );
        let header = tmp.path().join("work/island/fix_island.kernels.h");
        let call = gxx
            .argvs()
            .into_iter()
            .find(|c| c.iter().any(|a| a.ends_with("host/scale.cpp")))
            .expect("the fallback compiled");
        let at = call
            .iter()
            .position(|a| a == "-include")
            .unwrap_or_else(|| panic!("no -include in {call:?}"));
        assert_eq!(call[at + 1], s(&header), "{call:?}");
        assert!(
            at < call.iter().position(|a| a.starts_with("-I")).unwrap(),
            "the forced include precedes -I: {call:?}"
        );
        assert!(
            call[..at].iter().any(|a| a.starts_with("-std=")),
            "after the language options: {call:?}"
        );
    }
}

#[test]
fn a_marked_cu_without_an_island_is_refused_before_compiling_with_the_lines_to_add() {
    let (tmp, pkg) = fixture("cuda-island");
    let manifest = std::fs::read_to_string(pkg.join("Cargo.toml")).unwrap();
    std::fs::write(
        pkg.join("Cargo.toml"),
        &manifest[..manifest.find("[package.metadata.mcpp.island]").unwrap()],
    )
    .unwrap();
    let (root, shim) = fake_toolkit(tmp.path());
    for accel in [true, false] {
        let mut b = build(tmp.path(), &pkg);
        b.env("CUDA_PATH", &root).env("NVCC_CCBIN", shim.path());
        if !accel {
            b.no_accel();
        }
        let e = b.try_compile().unwrap_err();
        assert_eq!(e.kind, ErrorKind::Sources);
        let t = e.to_string();
        assert!(t.starts_with("`kernels/scale.cu` marks `scale_run` with `MCPP_EXPORT_C` (line 8), and it is not among the island's sources (no [package.metadata.mcpp.island] is declared)"), "{t}");
        assert!(
            t.contains(&format!(
                "--> {}:8 (key `package.metadata.mcpp.island`)",
                s(&pkg.join("kernels/scale.cu"))
            )),
            "{t}"
        );
        assert!(t.contains("help:   [package.metadata.mcpp.island]\nhelp:   sources = [\"kernels/scale.cu\", \"host/<fallback>.cpp\"]\nhelp:   fallback = [\"host/<fallback>.cpp\"]"), "{t}");
    }
    assert_eq!(compile_calls(&shim), 0, "refused before compiling");
}

#[test]
fn a_marked_file_outside_the_declared_island_is_refused_naming_the_lists_to_extend() {
    let (tmp, pkg) = fixture("cuda-island");
    edit(
        &pkg.join("Cargo.toml"),
        "sources = [\"kernels/*.cu\"]\n",
        "sources = [\"kernels/*.cu\"]\ncxx-sources = [\"cpp/extra.cpp\"]\n",
    );
    std::fs::write(
        pkg.join("cpp/extra.cpp"),
        "// helpers\n\nMCPP_EXPORT_C int extra_run(int n)\n{ return n; }\n",
    )
    .unwrap();
    let t = build(tmp.path(), &pkg)
        .no_accel()
        .try_compile()
        .unwrap_err()
        .to_string();
    assert!(t.starts_with("`cpp/extra.cpp` marks `extra_run` with `MCPP_EXPORT_C` (line 3), and it is not among the island's sources\n"), "{t}");
    assert!(
        t.contains(&format!(
            "--> {}:3 (key `package.metadata.mcpp.island.sources`)",
            s(&pkg.join("cpp/extra.cpp"))
        )),
        "{t}"
    );
    assert!(
        t.contains("[package.metadata.mcpp.island] sources = [\"kernels/scale.cu\", \"host/scale.cpp\", \"cpp/extra.cpp\"] and fallback = [\"host/scale.cpp\", \"cpp/extra.cpp\"]"),
        "{t}"
    );
    // The island's own marker counts: under `marker = "MY_EXPORT"` the same file is not marked,
    // and a second .cu marked with it (in `sources`, not the island's) is refused.
    edit(
        &pkg.join("Cargo.toml"),
        "fallback = [\"host/scale.cpp\"]\n",
        "fallback = [\"host/scale.cpp\"]\nmarker = \"MY_EXPORT\"\n",
    );
    for half in ["kernels/scale.cu", "host/scale.cpp"] {
        edit(
            &pkg.join(half),
            "MCPP_EXPORT_C int scale_run",
            "MY_EXPORT int scale_run",
        );
    }
    std::fs::write(
        pkg.join("kernels/other.cu"),
        "MY_EXPORT void other_run() {}\n",
    )
    .unwrap();
    let t = build(tmp.path(), &pkg)
        .no_accel()
        .try_compile()
        .unwrap_err()
        .to_string();
    assert!(
        t.starts_with("`kernels/other.cu` marks `other_run` with `MY_EXPORT` (line 1)"),
        "{t}"
    );
    assert!(t.contains("[package.metadata.mcpp.island] sources = [\"kernels/scale.cu\", \"host/scale.cpp\", \"kernels/other.cu\"]"), "{t}");
}

/// A unit that compiles only when `FROM_ENV` is 1, and whose object carries `PROBE`.
const FROM_ENV_UNIT: &str = "#if FROM_ENV != 1\n#error FROM_ENV did not arrive\n#endif\nint from_env_probe() { return PROBE * 1000003; }\n";

/// The bytes of the one object below `dir` whose name starts with `stem`.
fn object_named(dir: &Path, stem: &str) -> Vec<u8> {
    let found: Vec<PathBuf> = walk(dir)
        .into_iter()
        .filter(|p| {
            p.file_name().unwrap().to_string_lossy().starts_with(stem)
                && p.extension().is_some_and(|x| x == "o")
        })
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    std::fs::read(&found[0]).unwrap()
}

#[test]
fn cxx_with_arguments_reaches_the_cxx_lane_and_nvcc_and_changing_them_recompiles() {
    let (tmp, pkg) = fixture("cuda-island");
    edit(
        &pkg.join("Cargo.toml"),
        "flags = [\"--extra-flag\"]",
        "flags = []",
    );
    edit(
        &pkg.join("Cargo.toml"),
        "sources = [\"kernels/*.cu\"]\n",
        "sources = [\"kernels/*.cu\"]\ncxx-sources = [\"cpp/from_env.cpp\"]\n",
    );
    std::fs::write(pkg.join("cpp/from_env.cpp"), FROM_ENV_UNIT).unwrap();
    std::fs::write(
        pkg.join("kernels/from_env.cu"),
        format!("{FROM_ENV_UNIT}__global__ void from_env_kernel(int* p) {{ *p = FROM_ENV; }}\n"),
    )
    .unwrap();
    // g++ and nvcc behind wrappers that log their argv.
    let gxx = Shim::wrap(&tmp.path().join("bin"), "g++", &real_tool("g++"));
    let real = cuda13();
    let root = tmp.path().join("logged-cuda");
    for d in ["include", "lib"] {
        std::fs::create_dir_all(&root).unwrap();
        std::os::unix::fs::symlink(real.join(d), root.join(d)).unwrap();
    }
    let nvcc = Shim::wrap(&root.join("bin"), "nvcc", &real.join("bin/nvcc"));
    let run = |cxx: &str| {
        build(tmp.path(), &pkg)
            .env("CUDA_PATH", &root)
            .env("CXX", cxx)
            .accel("cuda13.0+{sm_90}")
            .try_compile()
            .unwrap()
    };

    let cxx = format!("{} -DFROM_ENV=1 -DPROBE=7", gxx.path().display());
    let first = run(&cxx);
    for id in ["cxx:cpp/from_env.cpp", "cuda:kernels/from_env.cu"] {
        assert!(
            first.report.ran.contains(&id.to_string()),
            "{id}: {:?}",
            first.report.ran
        );
    }
    // The C++ lane: the arguments lead the argv, right after the program.
    let lane: Vec<String> = logged(&gxx)
        .filter(|l| l.contains("-c ") && l.contains("cpp/from_env.cpp"))
        .collect();
    assert_eq!(lane.len(), 1, "{lane:?}");
    assert!(
        lane[0].starts_with("-DFROM_ENV=1 -DPROBE=7 "),
        "{}",
        lane[0]
    );
    // nvcc: the program as -ccbin, each argument as -Xcompiler <arg>.
    let nv: Vec<String> = logged(&nvcc)
        .filter(|l| l.contains("kernels/from_env.cu"))
        .collect();
    assert_eq!(nv.len(), 1, "{nv:?}");
    assert!(
        nv[0].starts_with(&format!(
            "-ccbin {} -Xcompiler -DFROM_ENV=1 -Xcompiler -DPROBE=7 -gencode ",
            gxx.path().display()
        )),
        "{}",
        nv[0]
    );
    let cpp1 = object_named(&first.variant_dir, "cpp_from_env.cpp");
    let cu1 = object_named(&first.variant_dir, "kernels_from_env.cu");

    // The same CXX: nothing reruns.
    let again = run(&cxx);
    assert!(again.report.ran.is_empty(), "{:?}", again.report.ran);

    // Another argument in CXX: both compiles rerun, with other bytes.
    let changed = run(&format!("{} -DFROM_ENV=1 -DPROBE=9", gxx.path().display()));
    for id in [
        "cxx:cpp/from_env.cpp",
        "cuda:kernels/from_env.cu",
        "cuda:kernels/scale.cu",
    ] {
        assert!(
            changed.report.ran.contains(&id.to_string()),
            "{id}: {:?}",
            changed.report.ran
        );
    }
    assert_ne!(object_named(&changed.variant_dir, "cpp_from_env.cpp"), cpp1);
    assert_ne!(
        object_named(&changed.variant_dir, "kernels_from_env.cu"),
        cu1
    );
    assert_eq!(
        logged(&nvcc)
            .filter(|l| l.contains("kernels/from_env.cu"))
            .count(),
        2,
        "nvcc compiled from_env.cu twice in three builds"
    );
}

/// The argument lines (`echo "$*"`) of every start of a wrapper.
fn logged(wrapper: &Shim) -> impl Iterator<Item = String> {
    wrapper.records().into_iter().map(|r| r.line())
}

/// A fake toolkit with the aarch64 server runtime (`targets/sbsa-linux/lib`) beside the
/// build machine's `lib/`.
fn fake_cross_toolkit(dir: &Path) -> (PathBuf, Shim) {
    let (root, shim) = fake_toolkit(dir);
    std::fs::create_dir_all(root.join("targets/sbsa-linux/lib")).unwrap();
    std::fs::create_dir_all(root.join("targets/sbsa-linux/include")).unwrap();
    std::fs::write(
        root.join("targets/sbsa-linux/lib/libcudart_static.a"),
        "!<arch>\n",
    )
    .unwrap();
    (root, shim)
}

#[test]
fn a_cross_target_gets_its_toolkit_directory_its_runtime_and_its_cxx_as_ccbin() {
    let (tmp, pkg) = fixture("cuda-island");
    let (root, shim) = fake_cross_toolkit(tmp.path());
    let target = "aarch64-unknown-linux-gnu";
    let outcome = build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .env("TARGET", target)
        .env("HOST", "x86_64-unknown-linux-gnu")
        .env(
            "CXX_aarch64_unknown_linux_gnu",
            "aarch64-linux-gnu-g++ -DFROM_ENV=1",
        )
        .accel("cuda13.0+{sm_90}")
        .try_compile()
        .unwrap();
    let (call, _, _) = compile_call(&shim);
    let cross_gxx = real_tool("aarch64-linux-gnu-g++");
    assert_eq!(
        call[..8],
        [
            "-ccbin",
            &s(&cross_gxx),
            "-target-dir",
            "sbsa-linux",
            "-Xcompiler",
            "-DFROM_ENV=1",
            "-gencode",
            "arch=compute_90,code=sm_90"
        ]
    );
    let lines = outcome.cargo.lines();
    assert!(
        lines.contains(&format!(
            "cargo::rustc-link-search=native={}",
            s(&root.join("targets/sbsa-linux/lib"))
        )),
        "{lines:#?}"
    );
    assert!(
        !lines.contains(&format!(
            "cargo::rustc-link-search=native={}",
            s(&root.join("lib"))
        )),
        "the build machine's lib/ is not the target's: {lines:#?}"
    );
}

#[test]
fn a_toolkit_with_no_runtime_for_the_target_is_refused_before_compiling() {
    let (tmp, pkg) = fixture("cuda-island");
    let real = cuda13();
    let target = "aarch64-unknown-linux-gnu";
    let e = build(tmp.path(), &pkg)
        .env("CUDA_PATH", &real)
        .env("TARGET", target)
        .env("HOST", "x86_64-unknown-linux-gnu")
        .accel("cuda13.0+{sm_90}")
        .try_compile()
        .unwrap_err();
    assert_eq!(
        (e.kind, e.exit_code()),
        (
            ErrorKind::ToolNotFound,
            cargo_mcpp::error::exit_code::REFUSED
        )
    );
    let t = e.to_string();
    assert!(
        t.starts_with(&format!(
            "the CUDA toolkit at {} has no runtime for the target {target}",
            s(&real)
        )),
        "{t}"
    );
    assert!(
        t.contains(&s(&real.join("targets/sbsa-linux/lib")))
            && t.contains(&s(&real.join("targets/aarch64-linux/lib"))),
        "{t}"
    );
    assert!(
        t.contains("key `package.metadata.mcpp.cuda.toolkit`") && t.contains("help: "),
        "{t}"
    );
    assert!(
        walk(&tmp.path().join("work"))
            .iter()
            .all(|p| p.extension().is_none_or(|x| x != "o")),
        "nothing compiled"
    );
}

#[test]
fn an_rdc_flag_without_the_rdc_key_is_refused_naming_the_flag_and_the_key() {
    for (flags, index, shown) in [
        ("[\"-rdc=true\"]", 0, "-rdc=true"),
        (
            "[\"-lineinfo\", \"--relocatable-device-code\", \"true\"]",
            1,
            "--relocatable-device-code",
        ),
        ("[\"-dc\"]", 0, "-dc"),
    ] {
        let (tmp, pkg) = fixture("cuda-island");
        let (root, shim) = fake_toolkit(tmp.path());
        edit(
            &pkg.join("Cargo.toml"),
            "flags = [\"--extra-flag\"]",
            &format!("flags = {flags}"),
        );
        let e = build(tmp.path(), &pkg)
            .env("CUDA_PATH", &root)
            .env("NVCC_CCBIN", shim.path())
            .try_compile()
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Manifest);
        let t = e.to_string();
        assert!(
            t.starts_with(&format!(
                "`{shown}` in the CUDA flags turns on relocatable device code"
            )),
            "{t}"
        );
        assert!(
            t.contains(&format!(
                "(key `package.metadata.mcpp.cuda.flags[{index}]`)"
            )) && t.contains(&s(&pkg.join("Cargo.toml"))),
            "{t}"
        );
        assert!(
            t.contains("help: set `rdc = true` in [package.metadata.mcpp.cuda]"),
            "{t}"
        );
        assert_eq!(compile_calls(&shim), 0, "nothing compiled");
        // With the key, the same flags build.
        edit(
            &pkg.join("Cargo.toml"),
            "[package.metadata.mcpp.cuda]\n",
            "[package.metadata.mcpp.cuda]\nrdc = true\n",
        );
        build(tmp.path(), &pkg)
            .env("CUDA_PATH", &root)
            .env("NVCC_CCBIN", shim.path())
            .try_compile()
            .unwrap();
    }
}

#[test]
fn cxx_naming_clang_with_a_stdlib_argument_compiles_the_lane_with_it() {
    let (tmp, pkg) = fixture("cuda-island");
    edit(
        &pkg.join("Cargo.toml"),
        "sources = [\"kernels/*.cu\"]\n",
        "sources = [\"kernels/*.cu\"]\ncxx-sources = [\"cpp/from_env.cpp\"]\n",
    );
    std::fs::write(pkg.join("cpp/from_env.cpp"), FROM_ENV_UNIT).unwrap();
    let clang = Shim::wrap(
        &tmp.path().join("bin"),
        "clang++-19",
        &real_tool("clang++-19"),
    );
    let out = build(tmp.path(), &pkg)
        .no_accel()
        .env(
            "CXX",
            format!(
                "{} -stdlib=libstdc++ -DFROM_ENV=1 -DPROBE=3",
                clang.path().display()
            ),
        )
        .try_compile()
        .unwrap();
    assert!(
        out.report.ran.contains(&"cxx:cpp/from_env.cpp".to_string()),
        "{:?}",
        out.report.ran
    );
    let lane: Vec<String> = logged(&clang)
        .filter(|l| l.contains("-c ") && l.contains("cpp/from_env.cpp"))
        .collect();
    assert_eq!(lane.len(), 1, "{lane:?}");
    assert!(
        lane[0].starts_with("-stdlib=libstdc++ -DFROM_ENV=1 -DPROBE=3 "),
        "{}",
        lane[0]
    );
}

/// nvcc runs its sub-steps through `sh` (checked with the real nvcc 13.0: a define value
/// `$(touch F)`, a `-Xcompiler` flag, a `-ccbin` path or a `.cu` name with it creates F).
/// Every such value is refused before nvcc starts, naming its key; nothing is created.
#[test]
fn values_nvcc_would_hand_to_a_shell_are_refused_by_key_and_never_run() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "defines = { WIDTH = \"4\" }",
            "defines = { WIDTH = \"$(touch {P})\" }",
            "package.metadata.mcpp.cuda.defines.WIDTH",
        ),
        (
            "defines = { WIDTH = \"4\" }",
            "defines = { WIDTH = \"`touch {P}`\" }",
            "package.metadata.mcpp.cuda.defines.WIDTH",
        ),
        (
            "flags = [\"--extra-flag\"]",
            "flags = [\"-Xcompiler=$(touch {P})\"]",
            "package.metadata.mcpp.cuda.flags",
        ),
        (
            "includes = [\"include\"]",
            "includes = [\"include\"]\nccbin = \"/usr/bin/g++$(touch {P})\"",
            "package.metadata.mcpp.cuda.ccbin",
        ),
        (
            "flags = [\"--extra-flag\"]",
            "flags = []",
            "package.metadata.mcpp.sources",
        ),
    ];
    for (n, (from, to, key)) in cases.iter().enumerate() {
        let (tmp, pkg) = fixture("cuda-island");
        let (root, nvcc) = counted_toolkit(tmp.path());
        let mut pwned = tmp.path().join("pwned");
        edit(
            &pkg.join("Cargo.toml"),
            from,
            &to.replace("{P}", &s(&pwned)),
        );
        if *key == "package.metadata.mcpp.sources" {
            // `$(touch pwned)` would run in the package directory (nvcc's working directory).
            std::fs::write(
                pkg.join("kernels/x$(touch pwned).cu"),
                "__global__ void k() {}\n",
            )
            .unwrap();
            pwned = pkg.join("pwned");
        }
        let e = build(tmp.path(), &pkg)
            .env("CUDA_PATH", &root)
            .try_compile()
            .unwrap_err();
        let text = e.to_string();
        assert_eq!(e.kind, ErrorKind::Manifest, "case {n}: {text}");
        assert_eq!(e.key.as_deref(), Some(*key), "case {n}: {text}");
        assert!(
            text.contains("nvcc would evaluate in a shell"),
            "case {n}: {text}"
        );
        assert!(!pwned.exists(), "case {n}: the value was run");
        assert_eq!(nvcc.starts(), 0, "case {n}: nvcc started");
    }
}

#[test]
fn a_cuda_define_name_that_is_no_identifier_is_refused_on_both_routes() {
    for route in ["nvcc", "clang"] {
        let (tmp, pkg) = fixture("cuda-island");
        let (root, _) = fake_toolkit(tmp.path());
        edit(
            &pkg.join("Cargo.toml"),
            "defines = { WIDTH = \"4\" }",
            &format!("defines = {{ \"WIDTH=5 -DX\" = \"4\" }}\ncompiler = \"{route}\""),
        );
        let e = build(tmp.path(), &pkg)
            .env("CUDA_PATH", &root)
            .tool("clang++", "/usr/bin/clang++-19")
            .try_compile()
            .unwrap_err();
        assert_eq!(
            e.key.as_deref(),
            Some("package.metadata.mcpp.cuda.defines.WIDTH=5 -DX"),
            "{route}: {e}"
        );
        assert!(
            e.to_string().contains("is not a preprocessor macro name"),
            "{route}: {e}"
        );
    }
}

/// The clang route runs no shell: the same define value is an ordinary (unused) macro there.
#[test]
fn the_clang_route_passes_a_shell_looking_define_without_running_it() {
    let (tmp, pkg) = fixture("cuda-island");
    let pwned = tmp.path().join("pwned");
    let layout = cuda12_clang();
    edit(
        &pkg.join("Cargo.toml"),
        "flags = [\"--extra-flag\"]",
        "flags = []",
    );
    edit(&pkg.join("Cargo.toml"), "defines = { WIDTH = \"4\" }", &format!("defines = {{ WIDTH = \"4\", UNUSED = \"$(touch {})\" }}\ncompiler = \"clang\"\ntoolkit = \"{}\"", s(&pwned), s(&layout)));
    let out = build(tmp.path(), &pkg)
        .tool("clang++", "/usr/bin/clang++-19")
        .accel("cuda12.9+{sm_90}")
        .try_compile()
        .unwrap();
    assert!(out
        .report
        .ran
        .contains(&"cuda:kernels/scale.cu".to_string()));
    assert!(!pwned.exists(), "clang ran the define value");
}

/// A `ccbin` that does not exist is refused as coming from `[package.metadata.mcpp.cuda] ccbin`
/// (not the tools table), with that key, and the ways to name it numbered without a gap.
#[test]
fn a_bad_ccbin_is_refused_naming_its_own_key() {
    let (tmp, pkg) = fixture("cuda-island");
    let (root, _) = fake_toolkit(tmp.path());
    edit(
        &pkg.join("Cargo.toml"),
        "includes = [\"include\"]",
        "includes = [\"include\"]\nccbin = \"/nonexistent/g++\"",
    );
    let e = build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .try_compile()
        .unwrap_err();
    let text = e.to_string();
    assert_eq!(
        e.key.as_deref(),
        Some("package.metadata.mcpp.cuda.ccbin"),
        "{text}"
    );
    assert!(
        text.contains("[package.metadata.mcpp.cuda] ccbin names `/nonexistent/g++`"),
        "{text}"
    );
    assert!(
        !text.contains("[package.metadata.mcpp.tools] names"),
        "{text}"
    );
    let numbers: Vec<String> = text
        .lines()
        .filter_map(|l| l.trim_start().split_once(". ").map(|(n, _)| n.to_string()))
        .filter(|n| n.parse::<u32>().is_ok())
        .collect();
    assert_eq!(numbers, ["1", "2", "3", "4"], "{text}");
}

/// `Build::env("CXXFLAGS", ..)` changes what the `cc` crate gives the C++ lane, not only the
/// cache key: cc reads the build's environment view, not the process environment.
#[test]
fn cxxflags_of_the_environment_view_reach_the_cxx_lane() {
    let (tmp, pkg) = fixture("cuda-island");
    edit(
        &pkg.join("Cargo.toml"),
        "sources = [\"kernels/*.cu\"]\n",
        "sources = [\"kernels/*.cu\"]\ncxx-sources = [\"cpp/from_view.cpp\"]\n",
    );
    std::fs::write(pkg.join("cpp/from_view.cpp"), "#if FROM_VIEW != 1\n#error FROM_VIEW did not arrive\n#endif\nint from_view_probe() { return 7; }\n").unwrap();
    let gxx = Shim::wrap(&tmp.path().join("bin"), "g++", &real_tool("g++"));
    let out = build(tmp.path(), &pkg)
        .no_accel()
        .env("CXX", gxx.path())
        .env("CXXFLAGS", "-DFROM_VIEW=1")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.report
            .ran
            .contains(&"cxx:cpp/from_view.cpp".to_string()),
        "{:?}",
        out.report.ran
    );
    let lane: Vec<String> = logged(&gxx)
        .filter(|l| l.contains("-c ") && l.contains("cpp/from_view.cpp"))
        .collect();
    assert_eq!(lane.len(), 1, "{lane:?}");
    assert!(
        lane[0].split(' ').any(|a| a == "-DFROM_VIEW=1"),
        "{}",
        lane[0]
    );
}

/// nvcc's warnings on a successful compile (`#warning`, an unused variable) reach the build's
/// `cargo::warning` lines, each naming the action; the clean kernel beside it adds none.
#[test]
fn a_real_nvcc_warning_on_success_is_shown_naming_the_action() {
    let (tmp, pkg) = fixture("cuda-island");
    edit(
        &pkg.join("Cargo.toml"),
        "flags = [\"--extra-flag\"]",
        "flags = []",
    );
    std::fs::write(
        pkg.join("kernels/noisy.cu"),
        "#warning \"mcpp noisy kernel\"\n__global__ void noisy_kernel(int* p) { *p = 1; }\n",
    )
    .unwrap();
    let (root, _) = counted_toolkit(tmp.path());
    let out = build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .accel("cuda13.0+{sm_90}")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.report
            .ran
            .contains(&"cuda:kernels/noisy.cu".to_string()),
        "{:?}",
        out.report.ran
    );
    let warnings: Vec<&str> = out.cargo.warnings().collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("nvcc kernels/noisy.cu: ") && w.contains("mcpp noisy kernel")),
        "{warnings:?}"
    );
    assert!(
        !warnings
            .iter()
            .any(|w| w.starts_with("nvcc kernels/scale.cu")),
        "the clean kernel warns nothing: {warnings:?}"
    );
}

/// nvcc reads `NVCC_PREPEND_FLAGS`/`NVCC_APPEND_FLAGS` itself and hands them to its shell:
/// a value with `$(...)` is refused naming the
/// variable and nothing runs; a plain value is an input: a change recompiles with new argv.
#[test]
fn nvcc_flag_variables_are_checked_and_are_inputs() {
    let (tmp, pkg) = fixture("cuda-island");
    edit(
        &pkg.join("Cargo.toml"),
        "flags = [\"--extra-flag\"]",
        "flags = []",
    );
    let (root, nvcc) = counted_toolkit(tmp.path());
    let pwned = tmp.path().join("pwned");
    for var in ["NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"] {
        let e = build(tmp.path(), &pkg)
            .env("CUDA_PATH", &root)
            .env(var, format!("-DX=$(touch {})", s(&pwned)))
            .try_compile()
            .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("nvcc would evaluate in a shell")
                && text.contains(&format!("the environment variable {var}")),
            "{text}"
        );
        assert!(!pwned.exists(), "{var}: the value was run");
        // Only the `--version` probe ran (nvcc runs no shell for it; checked with the real nvcc).
        assert!(nvcc.starts() <= 1, "{var}: nvcc compiled");
    }
    let first = build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .env("NVCC_PREPEND_FLAGS", "-DMCPP_TEST_A=1")
        .try_compile()
        .unwrap();
    assert!(!first.report.ran.is_empty());
    assert!(
        first
            .cargo
            .lines()
            .iter()
            .any(|l| l == "cargo::rerun-if-env-changed=NVCC_PREPEND_FLAGS"),
        "{:?}",
        first.cargo.lines()
    );
    let again = build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .env("NVCC_PREPEND_FLAGS", "-DMCPP_TEST_A=1")
        .try_compile()
        .unwrap();
    assert!(
        again.report.ran.is_empty(),
        "same flags: nothing reruns: {:?}",
        again.report.ran
    );
    let changed = build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .env("NVCC_PREPEND_FLAGS", "-DMCPP_TEST_A=2")
        .try_compile()
        .unwrap();
    assert!(
        changed.report.ran.iter().any(|id| id.starts_with("cuda:")),
        "a changed NVCC_PREPEND_FLAGS recompiles: {:?}",
        changed.report.ran
    );
}

/// The ways the ccbin refusal lists all work: `[package.metadata.mcpp.tools] ccbin` and `MCPP_TOOL_CCBIN` name nvcc's host
/// compiler (a missing one is refused naming it, never ignored or called an unknown tool).
#[test]
fn every_listed_way_to_name_ccbin_is_honoured() {
    let (tmp, pkg) = fixture("cuda-island");
    let (root, _) = fake_toolkit(tmp.path());
    let e = build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .env("MCPP_TOOL_CCBIN", "/nonexistent/g++")
        .try_compile()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/nonexistent/g++") && e.contains("MCPP_TOOL_CCBIN"),
        "{e}"
    );
    edit(&pkg.join("Cargo.toml"), "[package.metadata.mcpp.island]", "[package.metadata.mcpp.tools]\nccbin = \"/nonexistent/g++\"\n\n[package.metadata.mcpp.island]");
    let e = build(tmp.path(), &pkg)
        .env("CUDA_PATH", &root)
        .try_compile()
        .unwrap_err()
        .to_string();
    assert!(!e.contains("unknown tool"), "{e}");
    assert!(e.contains("/nonexistent/g++"), "{e}");
}

#[test]
fn an_undeclared_route_follows_the_host_compiler_clang_with_clang_nvcc_with_gcc() {
    let (tmp, pkg) = fixture("cuda-island");
    let layout = cuda12_clang();
    edit(
        &pkg.join("Cargo.toml"),
        "flags = [\"--extra-flag\"]",
        "flags = []",
    );
    edit(
        &pkg.join("Cargo.toml"),
        "[package.metadata.mcpp.cuda]\n",
        &format!(
            "[package.metadata.mcpp.cuda]\ntoolkit = \"{}\"\n",
            s(&layout)
        ),
    );
    // An LLVM host toolchain: the clang route, said in the build's output and in `why`.
    let out = build(tmp.path(), &pkg)
        .env("CXX", "/usr/bin/clang++-19")
        .tool("clang++", "/usr/bin/clang++-19")
        .accel("cuda12.9+{sm_90}")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let bytes = object_of(&out.variant_dir);
    assert!(
        bytes.starts_with(b"\x7fELF") && bytes.windows(10).any(|w| w == b".nv_fatbin"),
        "clang compiled the device code"
    );
    assert!(
        out.cargo.warnings().any(|w| w.contains("the CUDA route is clang++ -x cuda: [package.metadata.mcpp.cuda] compiler is not declared and the host C++ compiler (/usr/bin/clang++-19) is clang")),
        "{:?}",
        out.cargo.lines()
    );
    let decisions = std::fs::read_to_string(tmp.path().join("work/tool-decisions.json")).unwrap();
    let d: serde_json::Value = serde_json::from_str(&decisions).unwrap();
    assert!(
        d["clang++"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("is clang")),
        "{decisions}"
    );

    // A GCC host toolchain: the nvcc route (a stand-in nvcc in a fake toolkit).
    let (root, nvcc) = fake_toolkit(tmp.path());
    edit(
        &pkg.join("Cargo.toml"),
        &format!("toolkit = \"{}\"\n", s(&layout)),
        &format!("toolkit = \"{}\"\n", s(&root)),
    );
    let out = build(tmp.path(), &pkg)
        .env("CXX", "/usr/bin/g++")
        .accel("cuda13.0+{sm_90}")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.cargo.warnings().all(|w| !w.contains("the CUDA route")),
        "no warning for the nvcc route"
    );
    assert!(nvcc.calls().iter().any(|c| c.has("-c")), "nvcc compiled");
    let decisions = std::fs::read_to_string(tmp.path().join("work/tool-decisions.json")).unwrap();
    let d: serde_json::Value = serde_json::from_str(&decisions).unwrap();
    assert!(
        d["nvcc"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("the CUDA route is nvcc")
                && r.contains("(/usr/bin/g++) is not clang")),
        "{decisions}"
    );
}

/// The fixture with `listed_run` defined through a macro in the fallback (no marker: the scan
/// cannot see it), listed in `entries`; `cxx-sources` are the seam importing the island's module.
fn listed_island(pkg: &Path, island_extra: &str) {
    let manifest = std::fs::read_to_string(pkg.join("Cargo.toml"))
        .unwrap()
        .replace(
            "sources = [\"kernels/*.cu\"]\n",
            "sources = [\"kernels/*.cu\"]\ncxx-sources = [\"cpp/seam.cppm\", \"cpp/use.cpp\"]\n",
        );
    std::fs::write(pkg.join("Cargo.toml"), format!("{manifest}{island_extra}")).unwrap();
    let host = std::fs::read_to_string(pkg.join("host/scale.cpp")).unwrap();
    std::fs::write(
        pkg.join("host/scale.cpp"),
        format!("{host}\n#define DEFINE_SCALE(name, k) int name(float* y, unsigned n) {{ for (unsigned i = 0; i < n; ++i) y[i] *= k; return (int)k * 10; }}\nDEFINE_SCALE(listed_run, 5)\n"),
    )
    .unwrap();
}

#[test]
fn a_listed_entry_reaches_the_header_the_bindings_and_rust_through_the_fallback() {
    let (tmp, pkg) = fixture("cuda-island");
    listed_island(
        &pkg,
        "entries = [\"int listed_run(float* y, unsigned n)\"]\n",
    );
    let out = build(tmp.path(), &pkg).no_accel().try_compile().unwrap();
    let header_path = tmp.path().join("out/mcpp/fix_island.kernels.h");
    let header = std::fs::read_to_string(&header_path).unwrap();
    assert!(
        header.contains(
            "\nint listed_run(float* y, unsigned n);\nint scale_run(float* y, unsigned n);\n"
        ),
        "{header}"
    );
    let rs = std::fs::read_to_string(tmp.path().join("out/mcpp_kernels.rs")).unwrap();
    assert!(
        rs.contains("pub fn listed_run(") && rs.contains("pub fn scale_run("),
        "{rs}"
    );
    let module =
        std::fs::read_to_string(tmp.path().join("out/mcpp/fix_island.kernels.cppm")).unwrap();
    assert!(
        module.contains("using ::listed_run;\nusing ::scale_run;\n"),
        "{module}"
    );
    // A Rust program calls the listed entry (the fallback's macro) through the bindings, and the
    // seam (a C++ unit that imports the island's module, compiled by g++) calls the scanned one.
    let main = tmp.path().join("main.rs");
    std::fs::write(
        &main,
        format!(
            "#[allow(non_camel_case_types, non_upper_case_globals, non_snake_case, dead_code)]\nmod kernels {{ include!({:?}); }}\nextern \"C\" {{ fn use_seam(y: *mut f32, n: u32) -> i32; }}\nfn main() {{\n    let mut y = [1.0f32, 2.0];\n    let r = unsafe {{ kernels::listed_run(y.as_mut_ptr(), 2) }};\n    let s = unsafe {{ use_seam(y.as_mut_ptr(), 2) }};\n    println!(\"{{r}} {{s}} {{y:?}}\");\n}}\n",
            tmp.path().join("out/mcpp_kernels.rs").display().to_string()
        ),
    )
    .unwrap();
    let exe = tmp.path().join("listed");
    let rustc = std::process::Command::new("rustc")
        .args(["--edition", "2021", "-o"])
        .arg(&exe)
        .arg(&main)
        .args(rustc_link_args(&out))
        .output()
        .unwrap();
    assert!(rustc.status.success(), "{}", text(&rustc));
    let run = std::process::Command::new(&exe).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "50 0 [15.0, 30.0]\n",
        "{}",
        text(&run)
    );

    // Editing the listed declaration changes the header's bytes.
    let manifest = std::fs::read_to_string(pkg.join("Cargo.toml")).unwrap();
    std::fs::write(
        pkg.join("Cargo.toml"),
        manifest.replace("int listed_run(float* y", "int listed_run(float* values"),
    )
    .unwrap();
    build(tmp.path(), &pkg).no_accel().try_compile().unwrap();
    let edited = std::fs::read_to_string(&header_path).unwrap();
    assert_ne!(edited, header);
    assert!(
        edited.contains("\nint listed_run(float* values, unsigned n);\n"),
        "{edited}"
    );
}

#[test]
fn emit_module_false_writes_the_header_alone_and_an_import_of_the_module_is_refused() {
    let (tmp, pkg) = fixture("cuda-island");
    listed_island(
        &pkg,
        "entries = [\"int listed_run(float* y, unsigned n)\"]\n",
    );
    build(tmp.path(), &pkg).no_accel().try_compile().unwrap();
    let cppm = tmp.path().join("out/mcpp/fix_island.kernels.cppm");
    assert!(cppm.is_file());
    let manifest = std::fs::read_to_string(pkg.join("Cargo.toml")).unwrap();
    std::fs::write(
        pkg.join("Cargo.toml"),
        format!("{manifest}emit-module = false\n"),
    )
    .unwrap();
    let e = build(tmp.path(), &pkg)
        .no_accel()
        .try_compile()
        .unwrap_err();
    let t = format!("{e:?}");
    assert_eq!(
        e.key.as_deref(),
        Some("package.metadata.mcpp.island.emit-module"),
        "{t}"
    );
    assert!(
        e.message.starts_with("cpp/seam.cppm imports the island's module `fix_island.kernels`, and the island writes no module (emit-module = false)"),
        "{t}"
    );
    assert!(t.contains("#include \\\"fix_island.kernels.h\\\""), "{t}");
    // A hand-written seam that includes the header instead.
    std::fs::write(pkg.join("cpp/seam.cppm"), "module;\n#include \"fix_island.kernels.h\"\nexport module fix_island.seam;\nexport namespace seam {\nint triple(float* y, unsigned n) { return scale_run(y, n); }\n}\n").unwrap();
    build(tmp.path(), &pkg).no_accel().try_compile().unwrap();
    assert!(tmp.path().join("out/mcpp/fix_island.kernels.h").is_file());
    assert!(
        !cppm.exists(),
        "the module an earlier build wrote is removed"
    );
    assert!(!tmp
        .path()
        .join("work/island/fix_island.kernels.cppm")
        .exists());
}

#[test]
fn listed_entries_that_are_no_declaration_or_disagree_with_the_scan_are_refused() {
    for (listed, message) in [
        ("int listed_run(float* y, unsigned n);", "the island entry `int listed_run(float* y, unsigned n);` is not a C function declaration: it has a `;`"),
        ("int listed_run(float* y,\\n unsigned n)", "is not a C function declaration: it has a control character"),
        ("int (float* y)", "is not a C function declaration: it has no name"),
        ("int scale_run(float* y, int n)", "`scale_run` is listed in package.metadata.mcpp.island.entries[0] with another declaration than it has elsewhere"),
    ] {
        let (tmp, pkg) = fixture("cuda-island");
        listed_island(&pkg, &format!("entries = [\"{listed}\"]\n"));
        let e = build(tmp.path(), &pkg).no_accel().try_compile().unwrap_err();
        let t = format!("{e:?}");
        assert!(e.message.contains(message), "{listed}: {t}");
        assert_eq!(e.key.as_deref(), Some("package.metadata.mcpp.island.entries[0]"), "{t}");
        assert_eq!(e.file.as_deref(), Some(pkg.join("Cargo.toml").as_path()), "{t}");
        assert!(!e.help.is_empty(), "{t}");
    }
}
