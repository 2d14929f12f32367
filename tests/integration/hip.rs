//! The HIP lane through the library API (`cargo_mcpp::Build`) on temp copies of
//! `tests/fixtures/hip-island`: real compiles for AMD gfx90a with Debian's HIP 5.2 (hipcc, and
//! clang++-19 `-x hip`; header edit changes the object bytes, a no-op starts no compiler), the
//! AMD and NVIDIA argv through the recording shim (HIP on NVIDIA is argv-verified only: Debian's
//! HIP 5.2 NVIDIA headers do not compile against a CUDA 12 toolkit), the island's `--no-accel`
//! fallback, constrained globs with a hip entry, and `why tool hipcc`'s record.
#![allow(clippy::disallowed_methods)] // tests write fixtures, start processes and read the environment freely

use crate::harness;

use harness::*;
use std::path::{Path, PathBuf};

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The one object of `kernels/scale.hip` in the variant.
fn object_of(variant: &Path) -> Vec<u8> {
    let found: Vec<PathBuf> = walk(variant)
        .into_iter()
        .filter(|e| {
            e.to_string_lossy().contains("/hip/obj/kernels_scale.hip")
                && e.extension().is_some_and(|x| x == "o")
        })
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    std::fs::read(&found[0]).unwrap()
}

fn has(bytes: &[u8], what: &str) -> bool {
    bytes.windows(what.len()).any(|w| w == what.as_bytes())
}

#[test]
fn real_hipcc_gfx90a_header_edit_changes_bytes_and_noop_starts_no_compiler() {
    let (tmp, pkg) = fixture("hip-island");
    let rocm = real_rocm();
    let hipcc = Shim::wrap(tmp.path(), "hipcc", &rocm.join("bin/hipcc"));
    let run = || {
        hip_build(tmp.path(), &pkg, &rocm)
            .tool("hipcc", hipcc.path())
            .try_compile()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let first = run();
    assert!(
        first
            .report
            .ran
            .contains(&"hip:kernels/scale.hip".to_string()),
        "{:?}",
        first.report.ran
    );
    let bytes1 = object_of(&first.variant_dir);
    assert!(
        bytes1.starts_with(b"\x7fELF") && has(&bytes1, "gfx90a"),
        "an ELF object carrying the gfx90a code object"
    );
    let lines = first.cargo.lines();
    assert!(
        lines.contains(&"cargo::rustc-link-lib=static=mcpp_hip_fix_hip".to_string()),
        "{lines:#?}"
    );
    assert!(
        lines.contains(&"cargo::rustc-link-lib=dylib=amdhip64".to_string()),
        "{lines:#?}"
    );
    let starts = hipcc.starts();

    // No change: every action fresh, no hipcc process at all (not even --version).
    let again = run();
    assert!(again.report.ran.is_empty(), "{:?}", again.report.ran);
    assert_eq!(hipcc.starts(), starts);

    // Editing only the header the kernel includes rebuilds it, with different bytes.
    edit(&pkg.join("kernels/params.h"), "3.0f", "5.0f");
    let edited = run();
    assert!(
        edited
            .report
            .ran
            .contains(&"hip:kernels/scale.hip".to_string()),
        "{:?}",
        edited.report.ran
    );
    assert_ne!(
        object_of(&edited.variant_dir),
        bytes1,
        "the object must change when the header does"
    );
    assert_eq!(hipcc.starts(), starts + 1);

    // The decision for `cargo mcpp why tool hipcc`: the named hipcc, the ROCm from ROCM_PATH.
    let all: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("work/tool-decisions.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(all["hipcc"]["answer"], s(hipcc.path()), "{all}");
    // hipcc ran with HIP_PLATFORM=amd (an nvcc on PATH would otherwise make it the NVIDIA driver).
    let call = hipcc
        .calls()
        .into_iter()
        .find(|c| c.names("kernels/scale.hip"))
        .unwrap();
    assert!(
        call.has("--offload-arch=gfx90a") && call.has("-fPIC") && call.has("-MD"),
        "{}",
        call.line()
    );
}

#[test]
fn real_clang19_compiles_one_object_for_two_gfx_architectures() {
    let (tmp, pkg) = fixture("hip-island");
    let rocm = real_rocm();
    edit(
        &pkg.join("Cargo.toml"),
        "[package.metadata.mcpp.hip]\n",
        "[package.metadata.mcpp.hip]\ncompiler = \"clang\"\n",
    );
    let out = hip_build(tmp.path(), &pkg, &rocm)
        .tool("clang++", "/usr/bin/clang++-19")
        .accel("hip5.2+{gfx90a,gfx1030}")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let bytes = object_of(&out.variant_dir);
    assert!(
        bytes.starts_with(b"\x7fELF") && has(&bytes, "gfx90a") && has(&bytes, "gfx1030"),
        "one object with both code objects"
    );
}

#[test]
fn amd_argv_is_exact_through_the_shim() {
    let (tmp, pkg) = fixture("hip-island");
    let (root, hipcc) = fake_rocm(tmp.path());
    let out = hip_build(tmp.path(), &pkg, &root)
        .accel("hip5.2+{gfx90a,gfx908}")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let call = hipcc
        .calls()
        .into_iter()
        .find(|c| c.names("kernels/scale.hip"))
        .expect("scale.hip compiled");
    let (obj, dep) = (
        call.after("-o").unwrap().to_string(),
        call.after("-MF").unwrap().to_string(),
    );
    let header = tmp.path().join("work/island/fix_hip.kernels.h");
    let expected = [
        "--offload-arch=gfx90a".to_string(),
        "--offload-arch=gfx908".into(),
        "-fPIC".into(),
        "-O0".into(),
        "-include".into(),
        s(&header),
        format!("-I{}", s(&pkg.join("include"))),
        "-DWIDTH=4".into(),
        "-MD".into(),
        "-MF".into(),
        dep,
        "-c".into(),
        s(&pkg.join("kernels/scale.hip")),
        "-o".into(),
        obj,
    ];
    assert_eq!(call.args, expected);
    assert_eq!(
        call.env.get("HIP_PLATFORM").map(String::as_str),
        Some("amd"),
        "{:?}",
        call.env
    );
    let lines = out.cargo.lines();
    // A ROCm outside the system directories: its library directory and an rpath.
    assert!(
        lines.contains(&format!(
            "cargo::rustc-link-search=native={}",
            s(&root.join("lib"))
        )),
        "{lines:#?}"
    );
    assert!(
        lines.contains(&format!(
            "cargo::rustc-link-arg=-Wl,-rpath,{}",
            s(&root.join("lib"))
        )),
        "{lines:#?}"
    );
    assert!(
        lines.contains(&"cargo::rustc-link-lib=dylib=amdhip64".to_string()),
        "{lines:#?}"
    );
}

#[test]
fn hip_on_nvidia_argv_verified_clang_x_cuda_with_the_hip_headers_first() {
    let (tmp, pkg) = fixture("hip-island");
    let (rocm, hipcc) = fake_rocm(tmp.path());
    let (cuda, nvcc) = fake_toolkit(tmp.path());
    let clang = Shim::install(tmp.path(), "clang++");
    let out = hip_build(tmp.path(), &pkg, &rocm)
        .env("CUDA_PATH", &cuda)
        .tool("clang++", clang.path())
        .accel("hip, cuda13.0+{sm_90}")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let call = clang
        .calls()
        .into_iter()
        .find(|c| c.names("kernels/scale.hip"))
        .expect("scale.hip compiled by clang");
    let (obj, dep) = (
        call.after("-o").unwrap().to_string(),
        call.after("-MF").unwrap().to_string(),
    );
    let header = tmp.path().join("work/island/fix_hip.kernels.h");
    let expected = [
        "-x".to_string(),
        "cuda".into(),
        "-D__HIP_PLATFORM_NVIDIA__".into(),
        "-Wno-unknown-cuda-version".into(),
        format!("--cuda-path={}", s(&cuda)),
        "--cuda-gpu-arch=sm_90".into(),
        format!("-I{}", s(&rocm.join("include"))),
        "-fPIC".into(),
        "-O0".into(),
        "-include".into(),
        s(&header),
        format!("-I{}", s(&pkg.join("include"))),
        "-DWIDTH=4".into(),
        "-MD".into(),
        "-MF".into(),
        dep,
        "-c".into(),
        s(&pkg.join("kernels/scale.hip")),
        "-o".into(),
        obj,
    ];
    assert_eq!(call.args, expected);
    assert!(
        hipcc.calls().is_empty() && nvcc.calls().is_empty(),
        "neither hipcc nor nvcc compiles HIP on NVIDIA"
    );
    let lines = out.cargo.lines();
    assert!(
        lines.contains(&"cargo::rustc-link-lib=static=cudart_static".to_string())
            && !lines.iter().any(|l| l.contains("amdhip64")),
        "{lines:#?}"
    );
    // The cuda entry is HIP's here: no "nothing was compiled for it" warning.
    assert!(
        !lines.iter().any(|l| l.contains("names cuda but no source")),
        "{lines:#?}"
    );
}

#[test]
fn no_accel_compiles_the_island_fallback_and_the_same_boundary() {
    let (tmp, pkg) = fixture("hip-island");
    let (root, _) = fake_rocm(tmp.path());
    hip_build(tmp.path(), &pkg, &root)
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let header = std::fs::read(tmp.path().join("out/mcpp/fix_hip.kernels.h")).unwrap();
    let out = hip_build(tmp.path(), &pkg, &root)
        .no_accel()
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.report.ran.iter().any(|id| id == "cxx:host/scale.cpp"),
        "{:?}",
        out.report.ran
    );
    assert!(!out.report.ran.iter().any(|id| id.starts_with("hip:")));
    assert_eq!(
        std::fs::read(tmp.path().join("out/mcpp/fix_hip.kernels.h")).unwrap(),
        header
    );
    assert!(!out.cargo.lines().iter().any(|l| l.contains("amdhip64")));
}

#[test]
fn a_constrained_glob_with_a_hip_entry_is_included_excluded_or_refused() {
    let (tmp, pkg) = fixture("hip-island");
    let (root, hipcc) = fake_rocm(tmp.path());
    edit(
        &pkg.join("Cargo.toml"),
        "sources = [\"kernels/*.hip\"]",
        "sources = [{ glob = \"kernels/*.hip\", accel = \"hip5.2+{gfx90a}\" }]",
    );
    // Covered: compiled for the build's architectures.
    hip_build(tmp.path(), &pkg, &root)
        .accel("hip5.2+{gfx90a,gfx1030}")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    let call = hipcc
        .calls()
        .into_iter()
        .find(|c| c.names("kernels/scale.hip"))
        .expect("compiled");
    assert!(
        call.has("--offload-arch=gfx90a") && call.has("--offload-arch=gfx1030"),
        "{}",
        call.line()
    );
    // Another backend only: left out, the fallback compiled.
    let out = hip_build(tmp.path(), &pkg, &root)
        .accel("vulkan1.2")
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.report.ran.iter().any(|id| id == "cxx:host/scale.cpp")
            && !out.report.ran.iter().any(|id| id.starts_with("hip:")),
        "{:?}",
        out.report.ran
    );
    // The backend named, the architecture not covered: refused.
    let e = hip_build(tmp.path(), &pkg, &root)
        .accel("hip5.2+{gfx1030}")
        .try_compile()
        .unwrap_err()
        .to_string();
    assert!(e.contains("gfx90a"), "{e}");
}

#[test]
fn a_marked_hip_source_outside_the_island_is_refused_before_compiling() {
    let (tmp, pkg) = fixture("hip-island");
    let (root, hipcc) = fake_rocm(tmp.path());
    std::fs::write(
        pkg.join("kernels/extra.hip"),
        "#include <hip/hip_runtime.h>\nMCPP_EXPORT_C int extra_run(float* y) { return 0; }\n",
    )
    .unwrap();
    let e = hip_build(tmp.path(), &pkg, &root)
        .try_compile()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`kernels/extra.hip` marks `extra_run`")
            && e.contains(
                "sources = [\"kernels/scale.hip\", \"host/scale.cpp\", \"kernels/extra.hip\"]"
            ),
        "{e}"
    );
    assert!(
        !hipcc.calls().iter().any(|c| c.has("-c")),
        "nothing compiled"
    );
}

#[test]
fn why_tool_into_a_closed_pipe_exits_quietly() {
    // `cargo mcpp why tool hipcc | head -1`: the reader closes the
    // pipe after one line; the rest of the answer must end the command quietly, not panic.
    // The record is long (well over a pipe's 64 KiB buffer), so the write after the close is sure.
    use std::io::{BufRead, BufReader};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    let target = tmp.path().join("target");
    let cache = target.join("debug/mcpp/p");
    std::fs::create_dir_all(&cache).unwrap();
    let considered: Vec<String> = (0..3000).map(|i| format!("/nowhere/rocm-{i:05}/bin/hipcc: not found (a long line to fill the pipe's buffer quickly)")).collect();
    let record = serde_json::json!({"hipcc": {"tool": "hipcc", "answer": "/opt/rocm/bin/hipcc", "version": "5.2", "source": "path", "origin": "PATH", "considered": considered, "warning": null, "refusal": null}});
    std::fs::write(cache.join("tool-decisions.json"), record.to_string()).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cargo-mcpp"))
        .args(["mcpp", "why", "tool", "hipcc", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("hipcc for package p"), "{first}");
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !err.contains("panicked"),
        "{:?}: {err}",
        out.status
    );
}

#[test]
fn a_hip_runtime_older_than_the_entry_is_refused_through_the_fact_channel() {
    let (tmp, pkg) = fixture("hip-island");
    let rocm = real_rocm();
    // The machine the program runs on, stated by hand: HIP 5.1 under a hip5.2 entry.
    let e = hip_build(tmp.path(), &pkg, &rocm)
        .env("MCPP_FACT_HIP_RUNTIME", "5.1")
        .try_compile()
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the HIP runtime (libamdhip64) is 5.1 (stated by MCPP_FACT_HIP_RUNTIME), and the accelerator entry `hip5.2+{gfx90a}` needs at least 5.2"),
        "{e}"
    );
    assert!(
        e.contains("package.metadata.mcpp.accel") && e.contains("install a newer HIP runtime"),
        "{e}"
    );
    // Read from the installed runtime (5.2 here), the same entry builds.
    hip_build(tmp.path(), &pkg, &rocm)
        .try_compile()
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
#[allow(clippy::result_large_err)] // the engine's error carries the whole refusal text
fn real_hipcc_runs_in_the_environment_of_the_hip_env_script_and_its_edit_rebuilds() {
    let (tmp, pkg) = fixture("hip-island");
    let rocm = real_rocm();
    // hipcc appends HIPCC_COMPILE_FLAGS_APPEND to every compile: the kernel builds only when the
    // script's variable reaches hipcc.
    let kernel = std::fs::read_to_string(pkg.join("kernels/scale.hip")).unwrap();
    let kernel = kernel.replace(
        "y[i] *= SCALE_FACTOR;",
        "y[i] *= SCALE_FACTOR * FROM_SCRIPT;",
    );
    std::fs::write(pkg.join("kernels/scale.hip"), format!("#ifndef FROM_SCRIPT\n#error \"the env-script's variables did not reach hipcc\"\n#endif\n{kernel}")).unwrap();
    std::fs::write(
        pkg.join("rocm-env.sh"),
        "export HIPCC_COMPILE_FLAGS_APPEND=-DFROM_SCRIPT=1\n",
    )
    .unwrap();
    edit(
        &pkg.join("Cargo.toml"),
        "[package.metadata.mcpp.hip]\n",
        "[package.metadata.mcpp.hip]\nenv-script = \"rocm-env.sh\"\n",
    );
    let run = || {
        hip_build(tmp.path(), &pkg, &rocm)
            .env_remove("HIPCC_COMPILE_FLAGS_APPEND")
            .try_compile()
    };
    let first = run().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        first
            .report
            .ran
            .contains(&"hip:kernels/scale.hip".to_string()),
        "{:?}",
        first.report.ran
    );
    let bytes = object_of(&first.variant_dir);
    assert!(
        run()
            .unwrap_or_else(|e| panic!("{e}"))
            .report
            .ran
            .is_empty(),
        "a no-op runs nothing"
    );

    // The script changes a value the kernel compiles in: it is compiled again, to other bytes.
    std::fs::write(
        pkg.join("rocm-env.sh"),
        "export HIPCC_COMPILE_FLAGS_APPEND=-DFROM_SCRIPT=2\n",
    )
    .unwrap();
    let with_two = run().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        with_two
            .report
            .ran
            .contains(&"hip:kernels/scale.hip".to_string()),
        "the script's edit reruns the compile: {:?}",
        with_two.report.ran
    );
    assert_ne!(
        object_of(&with_two.variant_dir),
        bytes,
        "stale object after the script's edit"
    );

    // Without the key the kernel does not compile: the variable came from the script alone.
    edit(
        &pkg.join("Cargo.toml"),
        "env-script = \"rocm-env.sh\"\n",
        "",
    );
    let e = run().expect_err("no script, no FROM_SCRIPT").to_string();
    assert!(e.contains("did not reach hipcc"), "{e}");
}
